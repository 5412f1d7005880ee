//! The mlx5 driver's data in uverbs commands (`UVERBS_ATTR_UHW_IN` / `_OUT`, or the bytes after
//! a write command's core request and response), and the mmap offsets of the uverbs fd.
//!
//! Source: rdma-core `kernel-headers/rdma/mlx5-abi.h` and `mlx5_user_ioctl_verbs.h`, whose
//! structures are declared here field for field (a few nested structures flattened, their
//! fields prefixed with the member's name); sizes are asserted at compile time. What each
//! field means to the kernel is in Linux `drivers/infiniband/hw/mlx5/{main,cq,qp,srq}.c`.

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// `MLX5_IB_ALLOC_UCTX_DEVX`: the context may use DevX.
pub const MLX5_IB_ALLOC_UCTX_DEVX: u32 = 1;
/// `MLX5_LIB_CAP_4K_UAR`.
pub const MLX5_LIB_CAP_4K_UAR: u64 = 1;
/// `MLX5_LIB_CAP_DYN_UAR`.
pub const MLX5_LIB_CAP_DYN_UAR: u64 = 2;
/// `MLX5_IB_CREATE_CQ_FLAGS_CQE_128B_PAD`.
pub const MLX5_IB_CREATE_CQ_FLAGS_CQE_128B_PAD: u16 = 1;
/// `MLX5_IB_CREATE_CQ_FLAGS_UAR_PAGE_INDEX`: `uar_page_index` names a dynamic UAR's page.
pub const MLX5_IB_CREATE_CQ_FLAGS_UAR_PAGE_INDEX: u16 = 2;
/// `MLX5_IB_CREATE_CQ_FLAGS_REAL_TIME_TS`.
pub const MLX5_IB_CREATE_CQ_FLAGS_REAL_TIME_TS: u16 = 4;
/// `MLX5_QP_FLAG_UAR_PAGE_INDEX` (`mlx5_ib_create_qp.flags`): `bfreg_index` is a dynamic
/// UAR's page id.
pub const MLX5_QP_FLAG_UAR_PAGE_INDEX: u32 = 1 << 10;
/// `MLX5_QP_FLAG_BFREG_INDEX`: `bfreg_index` is a bfreg of the context.
pub const MLX5_QP_FLAG_BFREG_INDEX: u32 = 1 << 3;
/// `MLX5_QP_FLAG_SIGNATURE`, `_SCATTER_CQE`, `_TUNNEL_OFFLOADS`, `_BFREG_INDEX`, `_TYPE_DCT`,
/// `_TYPE_DCI`, `_TIR_ALLOW_SELF_LB_UC`, `_TIR_ALLOW_SELF_LB_MC`, `_ALLOW_SCATTER_CQE`,
/// `_PACKET_BASED_CREDIT_MODE`, `_UAR_PAGE_INDEX`, `_DCI_STREAM`: every flag the kernel knows.
pub const MLX5_QP_FLAGS_KNOWN: u32 = 0xfff;
/// The `enum mlx5_ib_mmap_cmd` commands encoded in an mmap offset of the uverbs fd: the page
/// offset is `cmd << 8 | index` (`MLX5_IB_MMAP_CMD_SHIFT` 8), in pages.
pub mod mmap_cmd {
    pub const REGULAR_PAGE: u64 = 0;
    pub const WC_PAGE: u64 = 2;
    pub const NC_PAGE: u64 = 3;
    pub const CORE_CLOCK: u64 = 5;
    pub const ALLOC_WC: u64 = 6;
    pub const CLOCK_INFO: u64 = 7;
    pub const DEVICE_MEM: u64 = 8;
}
/// `MLX5_IB_MMAP_CMD_SHIFT`.
pub const MLX5_IB_MMAP_CMD_SHIFT: u32 = 8;

/// `struct mlx5_ib_alloc_ucontext_req_v2` (32 bytes).
#[allow(non_camel_case_types)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct mlx5_ib_alloc_ucontext_req_v2 {
    pub total_num_bfregs: u32,
    pub num_low_latency_bfregs: u32,
    pub flags: u32,
    pub comp_mask: u32,
    pub max_cqe_version: u8,
    pub reserved0: u8,
    pub reserved1: u16,
    pub reserved2: u32,
    pub lib_caps: u64,
}
const _: () = assert!(core::mem::size_of::<mlx5_ib_alloc_ucontext_req_v2>() == 32);

/// `struct mlx5_ib_alloc_ucontext_resp` (72 bytes).
#[allow(non_camel_case_types)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct mlx5_ib_alloc_ucontext_resp {
    pub qp_tab_size: u32,
    pub bf_reg_size: u32,
    pub tot_bfregs: u32,
    pub cache_line_size: u32,
    pub max_sq_desc_sz: u16,
    pub max_rq_desc_sz: u16,
    pub max_send_wqebb: u32,
    pub max_recv_wr: u32,
    pub max_srq_recv_wr: u32,
    pub num_ports: u16,
    pub flow_action_flags: u16,
    pub comp_mask: u32,
    pub response_length: u32,
    pub cqe_version: u8,
    pub cmds_supp_uhw: u8,
    pub eth_min_inline: u8,
    pub clock_info_versions: u8,
    pub hca_core_clock_offset: u64,
    pub log_uar_size: u32,
    pub num_uars_per_page: u32,
    pub num_dyn_bfregs: u32,
    pub dump_fill_mkey: u32,
}
const _: () = assert!(core::mem::size_of::<mlx5_ib_alloc_ucontext_resp>() == 72);

/// `struct mlx5_ib_alloc_pd_resp` (4 bytes).
#[allow(non_camel_case_types)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct mlx5_ib_alloc_pd_resp {
    pub pdn: u32,
}
const _: () = assert!(core::mem::size_of::<mlx5_ib_alloc_pd_resp>() == 4);

/// `struct mlx5_ib_query_device_resp` (104 bytes).
#[allow(non_camel_case_types)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct mlx5_ib_query_device_resp {
    pub comp_mask: u32,
    pub response_length: u32,
    pub tso_max_tso: u32,
    pub tso_supported_qpts: u32,
    pub rss_rx_hash_fields_mask: u64,
    pub rss_rx_hash_function: u8,
    pub rss_reserved: [u8; 7],
    pub cqe_comp_max_num: u32,
    pub cqe_comp_supported_format: u32,
    pub pp_qp_rate_limit_min: u32,
    pub pp_qp_rate_limit_max: u32,
    pub pp_supported_qpts: u32,
    pub pp_cap_flags: u8,
    pub pp_reserved: [u8; 3],
    pub mlx5_ib_support_multi_pkt_send_wqes: u32,
    pub flags: u32,
    pub sw_parsing_offloads: u32,
    pub sw_parsing_supported_qpts: u32,
    pub min_single_stride_log_num_of_bytes: u32,
    pub max_single_stride_log_num_of_bytes: u32,
    pub min_single_wqe_log_num_of_strides: u32,
    pub max_single_wqe_log_num_of_strides: u32,
    pub striding_rq_supported_qpts: u32,
    pub striding_rq_reserved: u32,
    pub tunnel_offloads_caps: u32,
    pub dci_max_log_num_concurent: u8,
    pub dci_max_log_num_errored: u8,
    pub reserved: u16,
}
const _: () = assert!(core::mem::size_of::<mlx5_ib_query_device_resp>() == 104);

/// `struct mlx5_ib_create_cq` (32 bytes).
#[allow(non_camel_case_types)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct mlx5_ib_create_cq {
    pub buf_addr: u64,
    pub db_addr: u64,
    pub cqe_size: u32,
    pub cqe_comp_en: u8,
    pub cqe_comp_res_format: u8,
    pub flags: u16,
    pub uar_page_index: u16,
    pub reserved0: u16,
    pub reserved1: u32,
}
const _: () = assert!(core::mem::size_of::<mlx5_ib_create_cq>() == 32);

/// `struct mlx5_ib_create_cq_resp` (8 bytes).
#[allow(non_camel_case_types)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct mlx5_ib_create_cq_resp {
    pub cqn: u32,
    pub reserved: u32,
}
const _: () = assert!(core::mem::size_of::<mlx5_ib_create_cq_resp>() == 8);

/// `struct mlx5_ib_resize_cq` (16 bytes).
#[allow(non_camel_case_types)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct mlx5_ib_resize_cq {
    pub buf_addr: u64,
    pub cqe_size: u16,
    pub reserved0: u16,
    pub reserved1: u32,
}
const _: () = assert!(core::mem::size_of::<mlx5_ib_resize_cq>() == 16);

/// `struct mlx5_ib_create_srq` (32 bytes).
#[allow(non_camel_case_types)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct mlx5_ib_create_srq {
    pub buf_addr: u64,
    pub db_addr: u64,
    pub flags: u32,
    pub reserved0: u32,
    pub uidx: u32,
    pub reserved1: u32,
}
const _: () = assert!(core::mem::size_of::<mlx5_ib_create_srq>() == 32);

/// `struct mlx5_ib_create_srq_resp` (8 bytes).
#[allow(non_camel_case_types)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct mlx5_ib_create_srq_resp {
    pub srqn: u32,
    pub reserved: u32,
}
const _: () = assert!(core::mem::size_of::<mlx5_ib_create_srq_resp>() == 8);

/// `struct mlx5_ib_create_qp` (56 bytes).
#[allow(non_camel_case_types)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct mlx5_ib_create_qp {
    pub buf_addr: u64,
    pub db_addr: u64,
    pub sq_wqe_count: u32,
    pub rq_wqe_count: u32,
    pub rq_wqe_shift: u32,
    pub flags: u32,
    pub uidx: u32,
    pub bfreg_index: u32,
    pub sq_buf_addr: u64,
    pub ece_options: u32,
    pub dci_log_num_concurent: u8,
    pub dci_log_num_errored: u8,
    pub reserved: u16,
}
const _: () = assert!(core::mem::size_of::<mlx5_ib_create_qp>() == 56);

/// `struct mlx5_ib_create_qp_resp` (40 bytes).
#[allow(non_camel_case_types)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct mlx5_ib_create_qp_resp {
    pub bfreg_index: u32,
    pub ece_options: u32,
    pub comp_mask: u32,
    pub tirn: u32,
    pub tisn: u32,
    pub rqn: u32,
    pub sqn: u32,
    pub reserved1: u32,
    pub tir_icm_addr: u64,
}
const _: () = assert!(core::mem::size_of::<mlx5_ib_create_qp_resp>() == 40);

/// `struct mlx5_ib_create_ah_resp` (16 bytes).
#[allow(non_camel_case_types)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct mlx5_ib_create_ah_resp {
    pub response_length: u32,
    pub dmac: [u8; 6],
    pub reserved: [u8; 6],
}
const _: () = assert!(core::mem::size_of::<mlx5_ib_create_ah_resp>() == 16);

/// `struct mlx5_ib_modify_qp` (16 bytes).
#[allow(non_camel_case_types)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct mlx5_ib_modify_qp {
    pub comp_mask: u32,
    pub max_burst_sz: u32,
    pub typical_pkt_sz: u16,
    pub reserved: u16,
    pub ece_options: u32,
}
const _: () = assert!(core::mem::size_of::<mlx5_ib_modify_qp>() == 16);

/// `struct mlx5_ib_modify_qp_resp` (16 bytes).
#[allow(non_camel_case_types)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct mlx5_ib_modify_qp_resp {
    pub response_length: u32,
    pub dctn: u32,
    pub ece_options: u32,
    pub reserved: u32,
}
const _: () = assert!(core::mem::size_of::<mlx5_ib_modify_qp_resp>() == 16);

/// `struct mlx5_ib_uapi_query_port` (40 bytes).
#[allow(non_camel_case_types)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct mlx5_ib_uapi_query_port {
    pub flags: u64,
    pub vport: u16,
    pub vport_vhca_id: u16,
    pub esw_owner_vhca_id: u16,
    pub rsvd0: u16,
    pub vport_steering_icm_rx: u64,
    pub vport_steering_icm_tx: u64,
    pub reg_c0_value: u32,
    pub reg_c0_mask: u32,
}
const _: () = assert!(core::mem::size_of::<mlx5_ib_uapi_query_port>() == 40);

/// `struct mlx5_ib_alloc_ucontext_req_v2` as rdma-core sends it for DevX: 16 bfregs, 4
/// low-latency, CQE version 1, `MLX5_IB_ALLOC_UCTX_DEVX`, 4K and dynamic UARs (docs/sources.md §1,
/// rdma-core `providers/mlx5/mlx5.c` `mlx5_alloc_context`).
pub fn devx_ucontext_req() -> mlx5_ib_alloc_ucontext_req_v2 {
    mlx5_ib_alloc_ucontext_req_v2 {
        total_num_bfregs: 16,
        num_low_latency_bfregs: 4,
        flags: MLX5_IB_ALLOC_UCTX_DEVX,
        max_cqe_version: 1,
        lib_caps: MLX5_LIB_CAP_4K_UAR | MLX5_LIB_CAP_DYN_UAR,
        ..Default::default()
    }
}
