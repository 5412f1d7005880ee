//! The uverbs write commands: command numbers, the framing of a `write()` on the uverbs fd,
//! and every core request / response structure the server and its clients exchange.
//!
//! Source: rdma-core `kernel-headers/rdma/ib_user_verbs.h` (the structures, named as there,
//! field for field) and `libibverbs/cmd_fallback.c` (how libibverbs frames them: a legacy
//! command is `ib_uverbs_cmd_hdr` + core request + driver data, with the response pointer as the
//! request's first `u64`; an extended one adds `ib_uverbs_ex_cmd_hdr`, which carries the response
//! pointer and the driver data's sizes in 8-byte words). Through `UVERBS_METHOD_INVOKE_WRITE` the
//! same core request arrives as the `CORE_IN` attribute and the response buffer as `CORE_OUT`.
//!
//! Every structure is `#[repr(C)]` with its size asserted at compile time against the header's,
//! and read and written through `zerocopy` (no padding, any bytes valid).

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// `IB_USER_VERBS_CMD_FLAG_EXTENDED`: the command is an extended one (`ib_uverbs_ex_cmd_hdr`).
pub const IB_USER_VERBS_CMD_FLAG_EXTENDED: u32 = 0x8000_0000;
/// `IB_USER_VERBS_CMD_COMMAND_MASK`.
pub const IB_USER_VERBS_CMD_COMMAND_MASK: u32 = 0xff;

/// Write command numbers (`enum ib_uverbs_write_cmds`; the extended ones share numbers).
pub mod cmd {
    pub const GET_CONTEXT: u32 = 0;
    pub const QUERY_DEVICE: u32 = 1;
    pub const QUERY_PORT: u32 = 2;
    pub const ALLOC_PD: u32 = 3;
    pub const DEALLOC_PD: u32 = 4;
    pub const CREATE_AH: u32 = 5;
    pub const MODIFY_AH: u32 = 6;
    pub const QUERY_AH: u32 = 7;
    pub const DESTROY_AH: u32 = 8;
    pub const REG_MR: u32 = 9;
    pub const REG_SMR: u32 = 10;
    pub const REREG_MR: u32 = 11;
    pub const QUERY_MR: u32 = 12;
    pub const DEREG_MR: u32 = 13;
    pub const ALLOC_MW: u32 = 14;
    pub const BIND_MW: u32 = 15;
    pub const DEALLOC_MW: u32 = 16;
    pub const CREATE_COMP_CHANNEL: u32 = 17;
    pub const CREATE_CQ: u32 = 18;
    pub const RESIZE_CQ: u32 = 19;
    pub const DESTROY_CQ: u32 = 20;
    pub const POLL_CQ: u32 = 21;
    pub const PEEK_CQ: u32 = 22;
    pub const REQ_NOTIFY_CQ: u32 = 23;
    pub const CREATE_QP: u32 = 24;
    pub const QUERY_QP: u32 = 25;
    pub const MODIFY_QP: u32 = 26;
    pub const DESTROY_QP: u32 = 27;
    pub const POST_SEND: u32 = 28;
    pub const POST_RECV: u32 = 29;
    pub const ATTACH_MCAST: u32 = 30;
    pub const DETACH_MCAST: u32 = 31;
    pub const CREATE_SRQ: u32 = 32;
    pub const MODIFY_SRQ: u32 = 33;
    pub const QUERY_SRQ: u32 = 34;
    pub const DESTROY_SRQ: u32 = 35;
    pub const POST_SRQ_RECV: u32 = 36;
    pub const OPEN_XRCD: u32 = 37;
    pub const CLOSE_XRCD: u32 = 38;
    pub const CREATE_XSRQ: u32 = 39;
    pub const OPEN_QP: u32 = 40;
    // Extended only (`enum ib_uverbs_ex_write_cmds` past `IB_USER_VERBS_CMD_THRESHOLD`).
    pub const EX_CREATE_FLOW: u32 = 50;
    pub const EX_DESTROY_FLOW: u32 = 51;
    pub const EX_CREATE_WQ: u32 = 52;
    pub const EX_MODIFY_WQ: u32 = 53;
    pub const EX_DESTROY_WQ: u32 = 54;
    pub const EX_CREATE_RWQ_IND_TBL: u32 = 55;
    pub const EX_DESTROY_RWQ_IND_TBL: u32 = 56;
    pub const EX_MODIFY_CQ: u32 = 57;
}

/// `enum ib_uverbs_qp_attr_mask` bits of `modify_qp.attr_mask` / `query_qp.attr_mask`.
pub mod qp_attr_mask {
    pub const STATE: u32 = 1 << 0;
    pub const CUR_STATE: u32 = 1 << 1;
    pub const EN_SQD_ASYNC_NOTIFY: u32 = 1 << 2;
    pub const ACCESS_FLAGS: u32 = 1 << 3;
    pub const PKEY_INDEX: u32 = 1 << 4;
    pub const PORT: u32 = 1 << 5;
    pub const QKEY: u32 = 1 << 6;
    pub const AV: u32 = 1 << 7;
    pub const PATH_MTU: u32 = 1 << 8;
    pub const TIMEOUT: u32 = 1 << 9;
    pub const RETRY_CNT: u32 = 1 << 10;
    pub const RNR_RETRY: u32 = 1 << 11;
    pub const RQ_PSN: u32 = 1 << 12;
    pub const MAX_QP_RD_ATOMIC: u32 = 1 << 13;
    pub const ALT_PATH: u32 = 1 << 14;
    pub const MIN_RNR_TIMER: u32 = 1 << 15;
    pub const SQ_PSN: u32 = 1 << 16;
    pub const MAX_DEST_RD_ATOMIC: u32 = 1 << 17;
    pub const PATH_MIG_STATE: u32 = 1 << 18;
    pub const CAP: u32 = 1 << 19;
    pub const DEST_QPN: u32 = 1 << 20;
    pub const RATE_LIMIT: u32 = 1 << 25;
}

/// `enum ib_qp_state` as the uverbs ABI carries it.
pub mod qp_state {
    pub const RESET: u8 = 0;
    pub const INIT: u8 = 1;
    pub const RTR: u8 = 2;
    pub const RTS: u8 = 3;
    pub const SQD: u8 = 4;
    pub const SQE: u8 = 5;
    pub const ERR: u8 = 6;
}

/// `enum ib_uverbs_qp_type` (`qp_type` of CREATE_QP).
pub mod qp_type {
    pub const RC: u8 = 2;
    pub const UC: u8 = 3;
    pub const UD: u8 = 4;
    pub const RAW_PACKET: u8 = 8;
    pub const XRC_INI: u8 = 9;
    pub const XRC_TGT: u8 = 10;
    pub const DRIVER: u8 = 0xff;
}

/// `enum ib_uverbs_access_flags` (MR and QP access).
pub mod access {
    pub const LOCAL_WRITE: u32 = 1 << 0;
    pub const REMOTE_WRITE: u32 = 1 << 1;
    pub const REMOTE_READ: u32 = 1 << 2;
    pub const REMOTE_ATOMIC: u32 = 1 << 3;
    pub const MW_BIND: u32 = 1 << 4;
    pub const ZERO_BASED: u32 = 1 << 5;
    pub const ON_DEMAND: u32 = 1 << 6;
    pub const HUGETLB: u32 = 1 << 7;
    pub const RELAXED_ORDERING: u32 = 1 << 20;
    /// Every flag a BlueField-3's `mlx5_ib` accepts on REG_MR (`ib_check_mr_access`,
    /// `mlx5_ib_reg_user_mr`); others are refused with `EINVAL` / `EOPNOTSUPP`.
    pub const SUPPORTED: u32 = LOCAL_WRITE
        | REMOTE_WRITE
        | REMOTE_READ
        | REMOTE_ATOMIC
        | MW_BIND
        | ZERO_BASED
        | ON_DEMAND
        | HUGETLB
        | RELAXED_ORDERING
        | (1 << 21)
        | (1 << 22);
}

/// `enum ib_event_type` values the model reports on the async event fd.
pub mod event_type {
    pub const CQ_ERR: u32 = 0;
    pub const QP_FATAL: u32 = 1;
    pub const QP_REQ_ERR: u32 = 2;
    pub const QP_ACCESS_ERR: u32 = 3;
    pub const COMM_EST: u32 = 4;
    pub const SQ_DRAINED: u32 = 5;
    pub const PATH_MIG: u32 = 6;
    pub const PATH_MIG_ERR: u32 = 7;
    pub const DEVICE_FATAL: u32 = 8;
    pub const PORT_ACTIVE: u32 = 9;
    pub const PORT_ERR: u32 = 10;
    pub const QP_LAST_WQE_REACHED: u32 = 16;
}

/// One `write()` on the uverbs fd, taken apart (`ib_uverbs_write` in the kernel's
/// `uverbs_main.c`): the command, the core request, the driver data and where the answers go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteFrame {
    /// The command number without the extended flag.
    pub command: u32,
    /// The extended framing (`IB_USER_VERBS_CMD_FLAG_EXTENDED`).
    pub extended: bool,
    /// Bytes of the core request: for legacy commands the whole rest up to `in_words`
    /// (including the leading response pointer, the driver data not yet split off).
    pub core_in: Vec<u8>,
    /// Driver data of an extended command (`provider_in_words` * 8 bytes).
    pub uhw_in: Vec<u8>,
    /// Where the response goes (legacy: the request's first `u64`; extended: `ex_hdr.response`).
    pub response: u64,
    /// Response bytes: legacy `out_words` * 4 (core and driver together); extended the core
    /// part (`out_words` * 8).
    pub out_len: usize,
    /// Extended: driver response bytes (`provider_out_words` * 8), after the core response.
    pub uhw_out_len: usize,
}

/// Why a write buffer was refused (the kernel answers `EINVAL` to each).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameError {
    /// Shorter than its headers.
    Short,
    /// `in_words` (and for extended commands the provider words) disagree with the length.
    Length,
    /// A reserved field is not zero.
    Reserved,
}

impl WriteFrame {
    /// Takes a `write()` buffer apart, checking its lengths as the kernel does.
    ///
    /// # Errors
    /// [`FrameError`] for a buffer the kernel refuses before looking at the command.
    pub fn parse(buf: &[u8]) -> Result<WriteFrame, FrameError> {
        let (hdr, rest) =
            ib_uverbs_cmd_hdr::read_from_prefix(buf).map_err(|_| FrameError::Short)?;
        let extended = hdr.command & IB_USER_VERBS_CMD_FLAG_EXTENDED != 0;
        let command = hdr.command & IB_USER_VERBS_CMD_COMMAND_MASK;
        if hdr.command & !(IB_USER_VERBS_CMD_FLAG_EXTENDED | IB_USER_VERBS_CMD_COMMAND_MASK) != 0 {
            return Err(FrameError::Reserved);
        }
        if !extended {
            // The legacy framing counts the header too.
            if usize::from(hdr.in_words) * 4 != buf.len() {
                return Err(FrameError::Length);
            }
            let response = u64::read_from_prefix(rest).map(|(r, _)| r).unwrap_or(0);
            return Ok(WriteFrame {
                command,
                extended,
                core_in: rest.to_vec(),
                uhw_in: Vec::new(),
                response,
                out_len: usize::from(hdr.out_words) * 4,
                uhw_out_len: 0,
            });
        }
        let (ex, rest) =
            ib_uverbs_ex_cmd_hdr::read_from_prefix(rest).map_err(|_| FrameError::Short)?;
        if ex.cmd_hdr_reserved != 0 {
            return Err(FrameError::Reserved);
        }
        let core = usize::from(hdr.in_words) * 8;
        let uhw = usize::from(ex.provider_in_words) * 8;
        if 8 + 16 + core + uhw != buf.len() {
            return Err(FrameError::Length);
        }
        Ok(WriteFrame {
            command,
            extended,
            core_in: rest[..core].to_vec(),
            uhw_in: rest[core..].to_vec(),
            response: ex.response,
            out_len: usize::from(hdr.out_words) * 8,
            uhw_out_len: usize::from(ex.provider_out_words) * 8,
        })
    }

    /// The bytes libibverbs writes for this frame (`_execute_cmd_write` / `_ex`): the inverse
    /// of [`WriteFrame::parse`], for tests and for clients written in Rust.
    pub fn emit(&self) -> Vec<u8> {
        let mut out = Vec::new();
        if !self.extended {
            let hdr = ib_uverbs_cmd_hdr {
                command: self.command,
                in_words: ((8 + self.core_in.len()) / 4) as u16,
                out_words: (self.out_len / 4) as u16,
            };
            out.extend_from_slice(hdr.as_bytes());
            out.extend_from_slice(&self.core_in);
            return out;
        }
        let hdr = ib_uverbs_cmd_hdr {
            command: self.command | IB_USER_VERBS_CMD_FLAG_EXTENDED,
            in_words: (self.core_in.len() / 8) as u16,
            out_words: (self.out_len / 8) as u16,
        };
        let ex = ib_uverbs_ex_cmd_hdr {
            response: self.response,
            provider_in_words: (self.uhw_in.len() / 8) as u16,
            provider_out_words: (self.uhw_out_len / 8) as u16,
            cmd_hdr_reserved: 0,
        };
        out.extend_from_slice(hdr.as_bytes());
        out.extend_from_slice(ex.as_bytes());
        out.extend_from_slice(&self.core_in);
        out.extend_from_slice(&self.uhw_in);
        out
    }
}

/// `struct ib_uverbs_cmd_hdr` (8 bytes).
#[allow(non_camel_case_types)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct ib_uverbs_cmd_hdr {
    pub command: u32,
    pub in_words: u16,
    pub out_words: u16,
}
const _: () = assert!(core::mem::size_of::<ib_uverbs_cmd_hdr>() == 8);

/// `struct ib_uverbs_ex_cmd_hdr` (16 bytes).
#[allow(non_camel_case_types)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct ib_uverbs_ex_cmd_hdr {
    pub response: u64,
    pub provider_in_words: u16,
    pub provider_out_words: u16,
    pub cmd_hdr_reserved: u32,
}
const _: () = assert!(core::mem::size_of::<ib_uverbs_ex_cmd_hdr>() == 16);

/// `struct ib_uverbs_get_context` (8 bytes).
#[allow(non_camel_case_types)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct ib_uverbs_get_context {
    pub response: u64,
}
const _: () = assert!(core::mem::size_of::<ib_uverbs_get_context>() == 8);

/// `struct ib_uverbs_get_context_resp` (8 bytes).
#[allow(non_camel_case_types)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct ib_uverbs_get_context_resp {
    pub async_fd: u32,
    pub num_comp_vectors: u32,
}
const _: () = assert!(core::mem::size_of::<ib_uverbs_get_context_resp>() == 8);

/// `struct ib_uverbs_query_device` (8 bytes).
#[allow(non_camel_case_types)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct ib_uverbs_query_device {
    pub response: u64,
}
const _: () = assert!(core::mem::size_of::<ib_uverbs_query_device>() == 8);

/// `struct ib_uverbs_query_device_resp` (176 bytes).
#[allow(non_camel_case_types)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct ib_uverbs_query_device_resp {
    pub fw_ver: u64,
    pub node_guid: u64,
    pub sys_image_guid: u64,
    pub max_mr_size: u64,
    pub page_size_cap: u64,
    pub vendor_id: u32,
    pub vendor_part_id: u32,
    pub hw_ver: u32,
    pub max_qp: u32,
    pub max_qp_wr: u32,
    pub device_cap_flags: u32,
    pub max_sge: u32,
    pub max_sge_rd: u32,
    pub max_cq: u32,
    pub max_cqe: u32,
    pub max_mr: u32,
    pub max_pd: u32,
    pub max_qp_rd_atom: u32,
    pub max_ee_rd_atom: u32,
    pub max_res_rd_atom: u32,
    pub max_qp_init_rd_atom: u32,
    pub max_ee_init_rd_atom: u32,
    pub atomic_cap: u32,
    pub max_ee: u32,
    pub max_rdd: u32,
    pub max_mw: u32,
    pub max_raw_ipv6_qp: u32,
    pub max_raw_ethy_qp: u32,
    pub max_mcast_grp: u32,
    pub max_mcast_qp_attach: u32,
    pub max_total_mcast_qp_attach: u32,
    pub max_ah: u32,
    pub max_fmr: u32,
    pub max_map_per_fmr: u32,
    pub max_srq: u32,
    pub max_srq_wr: u32,
    pub max_srq_sge: u32,
    pub max_pkeys: u16,
    pub local_ca_ack_delay: u8,
    pub phys_port_cnt: u8,
    pub reserved: [u8; 4],
}
const _: () = assert!(core::mem::size_of::<ib_uverbs_query_device_resp>() == 176);

/// `struct ib_uverbs_ex_query_device` (8 bytes).
#[allow(non_camel_case_types)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct ib_uverbs_ex_query_device {
    pub comp_mask: u32,
    pub reserved: u32,
}
const _: () = assert!(core::mem::size_of::<ib_uverbs_ex_query_device>() == 8);

/// `struct ib_uverbs_ex_query_device_resp` (304 bytes).
#[allow(non_camel_case_types)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct ib_uverbs_ex_query_device_resp {
    pub base: ib_uverbs_query_device_resp,
    pub comp_mask: u32,
    pub response_length: u32,
    pub odp_general_caps: u64,
    pub odp_rc_odp_caps: u32,
    pub odp_uc_odp_caps: u32,
    pub odp_ud_odp_caps: u32,
    pub odp_reserved: u32,
    pub timestamp_mask: u64,
    pub hca_core_clock: u64,
    pub device_cap_flags_ex: u64,
    pub rss_supported_qpts: u32,
    pub rss_max_rwq_indirection_tables: u32,
    pub rss_max_rwq_indirection_table_size: u32,
    pub rss_reserved: u32,
    pub max_wq_type_rq: u32,
    pub raw_packet_caps: u32,
    pub tm_max_rndv_hdr_size: u32,
    pub tm_max_num_tags: u32,
    pub tm_flags: u32,
    pub tm_max_ops: u32,
    pub tm_max_sge: u32,
    pub tm_reserved: u32,
    pub max_cq_moderation_count: u16,
    pub max_cq_moderation_period: u16,
    pub cq_moderation_reserved: u32,
    pub max_dm_size: u64,
    pub xrc_odp_caps: u32,
    pub reserved: u32,
}
const _: () = assert!(core::mem::size_of::<ib_uverbs_ex_query_device_resp>() == 304);

/// `struct ib_uverbs_query_port` (16 bytes).
#[allow(non_camel_case_types)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct ib_uverbs_query_port {
    pub response: u64,
    pub port_num: u8,
    pub reserved: [u8; 7],
}
const _: () = assert!(core::mem::size_of::<ib_uverbs_query_port>() == 16);

/// `struct ib_uverbs_query_port_resp` (40 bytes).
#[allow(non_camel_case_types)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct ib_uverbs_query_port_resp {
    pub port_cap_flags: u32,
    pub max_msg_sz: u32,
    pub bad_pkey_cntr: u32,
    pub qkey_viol_cntr: u32,
    pub gid_tbl_len: u32,
    pub pkey_tbl_len: u16,
    pub lid: u16,
    pub sm_lid: u16,
    pub state: u8,
    pub max_mtu: u8,
    pub active_mtu: u8,
    pub lmc: u8,
    pub max_vl_num: u8,
    pub sm_sl: u8,
    pub subnet_timeout: u8,
    pub init_type_reply: u8,
    pub active_width: u8,
    pub active_speed: u8,
    pub phys_state: u8,
    pub link_layer: u8,
    pub flags: u8,
    pub reserved: u8,
}
const _: () = assert!(core::mem::size_of::<ib_uverbs_query_port_resp>() == 40);

/// `struct ib_uverbs_query_port_resp_ex` (48 bytes).
#[allow(non_camel_case_types)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct ib_uverbs_query_port_resp_ex {
    pub legacy_resp: ib_uverbs_query_port_resp,
    pub port_cap_flags2: u32,
    pub reserved: [u8; 4],
}
const _: () = assert!(core::mem::size_of::<ib_uverbs_query_port_resp_ex>() == 48);

/// `struct ib_uverbs_alloc_pd` (8 bytes).
#[allow(non_camel_case_types)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct ib_uverbs_alloc_pd {
    pub response: u64,
}
const _: () = assert!(core::mem::size_of::<ib_uverbs_alloc_pd>() == 8);

/// `struct ib_uverbs_alloc_pd_resp` (4 bytes).
#[allow(non_camel_case_types)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct ib_uverbs_alloc_pd_resp {
    pub pd_handle: u32,
}
const _: () = assert!(core::mem::size_of::<ib_uverbs_alloc_pd_resp>() == 4);

/// `struct ib_uverbs_dealloc_pd` (4 bytes).
#[allow(non_camel_case_types)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct ib_uverbs_dealloc_pd {
    pub pd_handle: u32,
}
const _: () = assert!(core::mem::size_of::<ib_uverbs_dealloc_pd>() == 4);

/// `struct ib_uverbs_reg_mr` (40 bytes).
#[allow(non_camel_case_types)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct ib_uverbs_reg_mr {
    pub response: u64,
    pub start: u64,
    pub length: u64,
    pub hca_va: u64,
    pub pd_handle: u32,
    pub access_flags: u32,
}
const _: () = assert!(core::mem::size_of::<ib_uverbs_reg_mr>() == 40);

/// `struct ib_uverbs_reg_mr_resp` (12 bytes).
#[allow(non_camel_case_types)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct ib_uverbs_reg_mr_resp {
    pub mr_handle: u32,
    pub lkey: u32,
    pub rkey: u32,
}
const _: () = assert!(core::mem::size_of::<ib_uverbs_reg_mr_resp>() == 12);

/// `struct ib_uverbs_rereg_mr` (48 bytes).
#[allow(non_camel_case_types)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct ib_uverbs_rereg_mr {
    pub response: u64,
    pub mr_handle: u32,
    pub flags: u32,
    pub start: u64,
    pub length: u64,
    pub hca_va: u64,
    pub pd_handle: u32,
    pub access_flags: u32,
}
const _: () = assert!(core::mem::size_of::<ib_uverbs_rereg_mr>() == 48);

/// `struct ib_uverbs_rereg_mr_resp` (8 bytes).
#[allow(non_camel_case_types)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct ib_uverbs_rereg_mr_resp {
    pub lkey: u32,
    pub rkey: u32,
}
const _: () = assert!(core::mem::size_of::<ib_uverbs_rereg_mr_resp>() == 8);

/// `struct ib_uverbs_dereg_mr` (4 bytes).
#[allow(non_camel_case_types)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct ib_uverbs_dereg_mr {
    pub mr_handle: u32,
}
const _: () = assert!(core::mem::size_of::<ib_uverbs_dereg_mr>() == 4);

/// `struct ib_uverbs_create_comp_channel` (8 bytes).
#[allow(non_camel_case_types)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct ib_uverbs_create_comp_channel {
    pub response: u64,
}
const _: () = assert!(core::mem::size_of::<ib_uverbs_create_comp_channel>() == 8);

/// `struct ib_uverbs_create_comp_channel_resp` (4 bytes).
#[allow(non_camel_case_types)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct ib_uverbs_create_comp_channel_resp {
    pub fd: u32,
}
const _: () = assert!(core::mem::size_of::<ib_uverbs_create_comp_channel_resp>() == 4);

/// `struct ib_uverbs_create_cq` (32 bytes).
#[allow(non_camel_case_types)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct ib_uverbs_create_cq {
    pub response: u64,
    pub user_handle: u64,
    pub cqe: u32,
    pub comp_vector: u32,
    pub comp_channel: i32,
    pub reserved: u32,
}
const _: () = assert!(core::mem::size_of::<ib_uverbs_create_cq>() == 32);

/// `struct ib_uverbs_ex_create_cq` (32 bytes).
#[allow(non_camel_case_types)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct ib_uverbs_ex_create_cq {
    pub user_handle: u64,
    pub cqe: u32,
    pub comp_vector: u32,
    pub comp_channel: i32,
    pub comp_mask: u32,
    pub flags: u32,
    pub reserved: u32,
}
const _: () = assert!(core::mem::size_of::<ib_uverbs_ex_create_cq>() == 32);

/// `struct ib_uverbs_create_cq_resp` (8 bytes).
#[allow(non_camel_case_types)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct ib_uverbs_create_cq_resp {
    pub cq_handle: u32,
    pub cqe: u32,
}
const _: () = assert!(core::mem::size_of::<ib_uverbs_create_cq_resp>() == 8);

/// `struct ib_uverbs_ex_create_cq_resp` (16 bytes).
#[allow(non_camel_case_types)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct ib_uverbs_ex_create_cq_resp {
    pub base: ib_uverbs_create_cq_resp,
    pub comp_mask: u32,
    pub response_length: u32,
}
const _: () = assert!(core::mem::size_of::<ib_uverbs_ex_create_cq_resp>() == 16);

/// `struct ib_uverbs_resize_cq` (16 bytes).
#[allow(non_camel_case_types)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct ib_uverbs_resize_cq {
    pub response: u64,
    pub cq_handle: u32,
    pub cqe: u32,
}
const _: () = assert!(core::mem::size_of::<ib_uverbs_resize_cq>() == 16);

/// `struct ib_uverbs_resize_cq_resp` (8 bytes).
#[allow(non_camel_case_types)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct ib_uverbs_resize_cq_resp {
    pub cqe: u32,
    pub reserved: u32,
}
const _: () = assert!(core::mem::size_of::<ib_uverbs_resize_cq_resp>() == 8);

/// `struct ib_uverbs_destroy_cq` (16 bytes).
#[allow(non_camel_case_types)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct ib_uverbs_destroy_cq {
    pub response: u64,
    pub cq_handle: u32,
    pub reserved: u32,
}
const _: () = assert!(core::mem::size_of::<ib_uverbs_destroy_cq>() == 16);

/// `struct ib_uverbs_destroy_cq_resp` (8 bytes).
#[allow(non_camel_case_types)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct ib_uverbs_destroy_cq_resp {
    pub comp_events_reported: u32,
    pub async_events_reported: u32,
}
const _: () = assert!(core::mem::size_of::<ib_uverbs_destroy_cq_resp>() == 8);

/// `struct ib_uverbs_global_route` (24 bytes).
#[allow(non_camel_case_types)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct ib_uverbs_global_route {
    pub dgid: [u8; 16],
    pub flow_label: u32,
    pub sgid_index: u8,
    pub hop_limit: u8,
    pub traffic_class: u8,
    pub reserved: u8,
}
const _: () = assert!(core::mem::size_of::<ib_uverbs_global_route>() == 24);

/// `struct ib_uverbs_ah_attr` (32 bytes).
#[allow(non_camel_case_types)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct ib_uverbs_ah_attr {
    pub grh: ib_uverbs_global_route,
    pub dlid: u16,
    pub sl: u8,
    pub src_path_bits: u8,
    pub static_rate: u8,
    pub is_global: u8,
    pub port_num: u8,
    pub reserved: u8,
}
const _: () = assert!(core::mem::size_of::<ib_uverbs_ah_attr>() == 32);

/// `struct ib_uverbs_qp_dest` (32 bytes).
#[allow(non_camel_case_types)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct ib_uverbs_qp_dest {
    pub dgid: [u8; 16],
    pub flow_label: u32,
    pub dlid: u16,
    pub reserved: u16,
    pub sgid_index: u8,
    pub hop_limit: u8,
    pub traffic_class: u8,
    pub sl: u8,
    pub src_path_bits: u8,
    pub static_rate: u8,
    pub is_global: u8,
    pub port_num: u8,
}
const _: () = assert!(core::mem::size_of::<ib_uverbs_qp_dest>() == 32);

/// `struct ib_uverbs_create_qp` (56 bytes).
#[allow(non_camel_case_types)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct ib_uverbs_create_qp {
    pub response: u64,
    pub user_handle: u64,
    pub pd_handle: u32,
    pub send_cq_handle: u32,
    pub recv_cq_handle: u32,
    pub srq_handle: u32,
    pub max_send_wr: u32,
    pub max_recv_wr: u32,
    pub max_send_sge: u32,
    pub max_recv_sge: u32,
    pub max_inline_data: u32,
    pub sq_sig_all: u8,
    pub qp_type: u8,
    pub is_srq: u8,
    pub reserved: u8,
}
const _: () = assert!(core::mem::size_of::<ib_uverbs_create_qp>() == 56);

/// `struct ib_uverbs_ex_create_qp` (64 bytes).
#[allow(non_camel_case_types)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct ib_uverbs_ex_create_qp {
    pub user_handle: u64,
    pub pd_handle: u32,
    pub send_cq_handle: u32,
    pub recv_cq_handle: u32,
    pub srq_handle: u32,
    pub max_send_wr: u32,
    pub max_recv_wr: u32,
    pub max_send_sge: u32,
    pub max_recv_sge: u32,
    pub max_inline_data: u32,
    pub sq_sig_all: u8,
    pub qp_type: u8,
    pub is_srq: u8,
    pub reserved: u8,
    pub comp_mask: u32,
    pub create_flags: u32,
    pub rwq_ind_tbl_handle: u32,
    pub source_qpn: u32,
}
const _: () = assert!(core::mem::size_of::<ib_uverbs_ex_create_qp>() == 64);

/// `struct ib_uverbs_create_qp_resp` (32 bytes).
#[allow(non_camel_case_types)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct ib_uverbs_create_qp_resp {
    pub qp_handle: u32,
    pub qpn: u32,
    pub max_send_wr: u32,
    pub max_recv_wr: u32,
    pub max_send_sge: u32,
    pub max_recv_sge: u32,
    pub max_inline_data: u32,
    pub reserved: u32,
}
const _: () = assert!(core::mem::size_of::<ib_uverbs_create_qp_resp>() == 32);

/// `struct ib_uverbs_ex_create_qp_resp` (40 bytes).
#[allow(non_camel_case_types)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct ib_uverbs_ex_create_qp_resp {
    pub base: ib_uverbs_create_qp_resp,
    pub comp_mask: u32,
    pub response_length: u32,
}
const _: () = assert!(core::mem::size_of::<ib_uverbs_ex_create_qp_resp>() == 40);

/// `struct ib_uverbs_query_qp` (16 bytes).
#[allow(non_camel_case_types)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct ib_uverbs_query_qp {
    pub response: u64,
    pub qp_handle: u32,
    pub attr_mask: u32,
}
const _: () = assert!(core::mem::size_of::<ib_uverbs_query_qp>() == 16);

/// `struct ib_uverbs_query_qp_resp` (128 bytes).
#[allow(non_camel_case_types)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct ib_uverbs_query_qp_resp {
    pub dest: ib_uverbs_qp_dest,
    pub alt_dest: ib_uverbs_qp_dest,
    pub max_send_wr: u32,
    pub max_recv_wr: u32,
    pub max_send_sge: u32,
    pub max_recv_sge: u32,
    pub max_inline_data: u32,
    pub qkey: u32,
    pub rq_psn: u32,
    pub sq_psn: u32,
    pub dest_qp_num: u32,
    pub qp_access_flags: u32,
    pub pkey_index: u16,
    pub alt_pkey_index: u16,
    pub qp_state: u8,
    pub cur_qp_state: u8,
    pub path_mtu: u8,
    pub path_mig_state: u8,
    pub sq_draining: u8,
    pub max_rd_atomic: u8,
    pub max_dest_rd_atomic: u8,
    pub min_rnr_timer: u8,
    pub port_num: u8,
    pub timeout: u8,
    pub retry_cnt: u8,
    pub rnr_retry: u8,
    pub alt_port_num: u8,
    pub alt_timeout: u8,
    pub sq_sig_all: u8,
    pub reserved: [u8; 5],
}
const _: () = assert!(core::mem::size_of::<ib_uverbs_query_qp_resp>() == 128);

/// `struct ib_uverbs_modify_qp` (112 bytes).
#[allow(non_camel_case_types)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct ib_uverbs_modify_qp {
    pub dest: ib_uverbs_qp_dest,
    pub alt_dest: ib_uverbs_qp_dest,
    pub qp_handle: u32,
    pub attr_mask: u32,
    pub qkey: u32,
    pub rq_psn: u32,
    pub sq_psn: u32,
    pub dest_qp_num: u32,
    pub qp_access_flags: u32,
    pub pkey_index: u16,
    pub alt_pkey_index: u16,
    pub qp_state: u8,
    pub cur_qp_state: u8,
    pub path_mtu: u8,
    pub path_mig_state: u8,
    pub en_sqd_async_notify: u8,
    pub max_rd_atomic: u8,
    pub max_dest_rd_atomic: u8,
    pub min_rnr_timer: u8,
    pub port_num: u8,
    pub timeout: u8,
    pub retry_cnt: u8,
    pub rnr_retry: u8,
    pub alt_port_num: u8,
    pub alt_timeout: u8,
    pub reserved: [u8; 2],
}
const _: () = assert!(core::mem::size_of::<ib_uverbs_modify_qp>() == 112);

/// `struct ib_uverbs_ex_modify_qp` (120 bytes).
#[allow(non_camel_case_types)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct ib_uverbs_ex_modify_qp {
    pub base: ib_uverbs_modify_qp,
    pub rate_limit: u32,
    pub reserved: u32,
}
const _: () = assert!(core::mem::size_of::<ib_uverbs_ex_modify_qp>() == 120);

/// `struct ib_uverbs_ex_modify_qp_resp` (8 bytes).
#[allow(non_camel_case_types)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct ib_uverbs_ex_modify_qp_resp {
    pub comp_mask: u32,
    pub response_length: u32,
}
const _: () = assert!(core::mem::size_of::<ib_uverbs_ex_modify_qp_resp>() == 8);

/// `struct ib_uverbs_destroy_qp` (16 bytes).
#[allow(non_camel_case_types)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct ib_uverbs_destroy_qp {
    pub response: u64,
    pub qp_handle: u32,
    pub reserved: u32,
}
const _: () = assert!(core::mem::size_of::<ib_uverbs_destroy_qp>() == 16);

/// `struct ib_uverbs_destroy_qp_resp` (4 bytes).
#[allow(non_camel_case_types)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct ib_uverbs_destroy_qp_resp {
    pub events_reported: u32,
}
const _: () = assert!(core::mem::size_of::<ib_uverbs_destroy_qp_resp>() == 4);

/// `struct ib_uverbs_create_srq` (32 bytes).
#[allow(non_camel_case_types)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct ib_uverbs_create_srq {
    pub response: u64,
    pub user_handle: u64,
    pub pd_handle: u32,
    pub max_wr: u32,
    pub max_sge: u32,
    pub srq_limit: u32,
}
const _: () = assert!(core::mem::size_of::<ib_uverbs_create_srq>() == 32);

/// `struct ib_uverbs_create_xsrq` (48 bytes).
#[allow(non_camel_case_types)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct ib_uverbs_create_xsrq {
    pub response: u64,
    pub user_handle: u64,
    pub srq_type: u32,
    pub pd_handle: u32,
    pub max_wr: u32,
    pub max_sge: u32,
    pub srq_limit: u32,
    pub max_num_tags: u32,
    pub xrcd_handle: u32,
    pub cq_handle: u32,
}
const _: () = assert!(core::mem::size_of::<ib_uverbs_create_xsrq>() == 48);

/// `struct ib_uverbs_create_srq_resp` (16 bytes).
#[allow(non_camel_case_types)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct ib_uverbs_create_srq_resp {
    pub srq_handle: u32,
    pub max_wr: u32,
    pub max_sge: u32,
    pub srqn: u32,
}
const _: () = assert!(core::mem::size_of::<ib_uverbs_create_srq_resp>() == 16);

/// `struct ib_uverbs_modify_srq` (16 bytes).
#[allow(non_camel_case_types)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct ib_uverbs_modify_srq {
    pub srq_handle: u32,
    pub attr_mask: u32,
    pub max_wr: u32,
    pub srq_limit: u32,
}
const _: () = assert!(core::mem::size_of::<ib_uverbs_modify_srq>() == 16);

/// `struct ib_uverbs_query_srq` (16 bytes).
#[allow(non_camel_case_types)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct ib_uverbs_query_srq {
    pub response: u64,
    pub srq_handle: u32,
    pub reserved: u32,
}
const _: () = assert!(core::mem::size_of::<ib_uverbs_query_srq>() == 16);

/// `struct ib_uverbs_query_srq_resp` (16 bytes).
#[allow(non_camel_case_types)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct ib_uverbs_query_srq_resp {
    pub max_wr: u32,
    pub max_sge: u32,
    pub srq_limit: u32,
    pub reserved: u32,
}
const _: () = assert!(core::mem::size_of::<ib_uverbs_query_srq_resp>() == 16);

/// `struct ib_uverbs_destroy_srq` (16 bytes).
#[allow(non_camel_case_types)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct ib_uverbs_destroy_srq {
    pub response: u64,
    pub srq_handle: u32,
    pub reserved: u32,
}
const _: () = assert!(core::mem::size_of::<ib_uverbs_destroy_srq>() == 16);

/// `struct ib_uverbs_destroy_srq_resp` (4 bytes).
#[allow(non_camel_case_types)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct ib_uverbs_destroy_srq_resp {
    pub events_reported: u32,
}
const _: () = assert!(core::mem::size_of::<ib_uverbs_destroy_srq_resp>() == 4);

/// `struct ib_uverbs_create_ah` (56 bytes).
#[allow(non_camel_case_types)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct ib_uverbs_create_ah {
    pub response: u64,
    pub user_handle: u64,
    pub pd_handle: u32,
    pub reserved: u32,
    pub attr: ib_uverbs_ah_attr,
}
const _: () = assert!(core::mem::size_of::<ib_uverbs_create_ah>() == 56);

/// `struct ib_uverbs_create_ah_resp` (4 bytes).
#[allow(non_camel_case_types)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct ib_uverbs_create_ah_resp {
    pub ah_handle: u32,
}
const _: () = assert!(core::mem::size_of::<ib_uverbs_create_ah_resp>() == 4);

/// `struct ib_uverbs_destroy_ah` (4 bytes).
#[allow(non_camel_case_types)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct ib_uverbs_destroy_ah {
    pub ah_handle: u32,
}
const _: () = assert!(core::mem::size_of::<ib_uverbs_destroy_ah>() == 4);

/// `struct ib_uverbs_async_event_desc` (16 bytes).
#[allow(non_camel_case_types)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct ib_uverbs_async_event_desc {
    pub element: u64,
    pub event_type: u32,
    pub reserved: u32,
}
const _: () = assert!(core::mem::size_of::<ib_uverbs_async_event_desc>() == 16);

/// `struct ib_uverbs_comp_event_desc` (8 bytes).
#[allow(non_camel_case_types)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct ib_uverbs_comp_event_desc {
    pub cq_handle: u64,
}
const _: () = assert!(core::mem::size_of::<ib_uverbs_comp_event_desc>() == 8);

/// `struct ib_uverbs_gid_entry` (32 bytes).
#[allow(non_camel_case_types)]
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct ib_uverbs_gid_entry {
    pub gid: [u64; 2],
    pub gid_index: u32,
    pub port_num: u32,
    pub gid_type: u32,
    pub netdev_ifindex: u32,
}
const _: () = assert!(core::mem::size_of::<ib_uverbs_gid_entry>() == 32);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn legacy_frames_round_trip_and_check_lengths() {
        let req = ib_uverbs_alloc_pd {
            response: 0x7f00_1234_5000,
        };
        let mut core = req.as_bytes().to_vec();
        core.extend_from_slice(&[0u8; 8]); // driver data
        let f = WriteFrame {
            command: cmd::ALLOC_PD,
            extended: false,
            core_in: core,
            uhw_in: Vec::new(),
            response: req.response,
            out_len: 8,
            uhw_out_len: 0,
        };
        let bytes = f.emit();
        assert_eq!(bytes.len(), 8 + 16);
        assert_eq!(WriteFrame::parse(&bytes), Ok(f.clone()));
        // One byte more or less than in_words says: refused.
        assert_eq!(WriteFrame::parse(&bytes[..23]), Err(FrameError::Length));
        let mut long = bytes.clone();
        long.push(0);
        assert_eq!(WriteFrame::parse(&long), Err(FrameError::Length));
        assert_eq!(WriteFrame::parse(&bytes[..7]), Err(FrameError::Short));
        // Unknown bits in the command word.
        let mut bad = bytes.clone();
        bad[1] = 1;
        assert_eq!(WriteFrame::parse(&bad), Err(FrameError::Reserved));
    }

    #[test]
    fn extended_frames_round_trip() {
        let f = WriteFrame {
            command: cmd::CREATE_CQ,
            extended: true,
            core_in: ib_uverbs_ex_create_cq {
                cqe: 63,
                comp_channel: -1,
                ..Default::default()
            }
            .as_bytes()
            .to_vec(),
            uhw_in: vec![0xa5; 32],
            response: 0x1000,
            out_len: 16,
            uhw_out_len: 8,
        };
        let bytes = f.emit();
        assert_eq!(bytes.len(), 8 + 16 + 32 + 32);
        assert_eq!(WriteFrame::parse(&bytes), Ok(f));
        let mut bad = bytes.clone();
        bad[20] = 1; // cmd_hdr_reserved
        assert_eq!(WriteFrame::parse(&bad), Err(FrameError::Reserved));
        assert_eq!(
            WriteFrame::parse(&bytes[..bytes.len() - 8]),
            Err(FrameError::Length)
        );
    }

    #[test]
    fn structures_read_back_what_was_written() {
        let mut m = ib_uverbs_modify_qp {
            qp_handle: 7,
            attr_mask: qp_attr_mask::STATE | qp_attr_mask::AV,
            qp_state: qp_state::RTR,
            ..Default::default()
        };
        m.dest.dgid[15] = 9;
        m.dest.sgid_index = 1;
        let b = m.as_bytes();
        // Field offsets as in ib_user_verbs.h: dest at 0, qp_handle after both dests.
        assert_eq!(b[15], 9);
        assert_eq!(b[24], 1);
        assert_eq!(u32::from_ne_bytes(b[64..68].try_into().unwrap()), 7);
        assert_eq!(b[96], qp_state::RTR);
        assert_eq!(ib_uverbs_modify_qp::read_from_bytes(b).unwrap(), m);
    }
}
