//! Every PRM layout the crate declares, grouped by topic.
//!
//! Layouts that the public headers define are declared with their offsets and widths and
//! checked against those headers by `tests/driver/ifc_reference.rs`. The DPA objects whose contexts
//! are not public live in [`dpa`], each marked provisional.

pub mod caps;
pub mod cmd;
pub mod counters;
pub mod cq;
pub mod destroy;
pub mod dpa;
pub mod flow;
pub mod pd;
pub mod port;
pub mod qp;
pub mod reg;
pub mod tir;
pub mod vhca;
pub mod work_queue;

pub use caps::*;
pub use cmd::*;
pub use counters::*;
pub use cq::*;
pub use destroy::*;
pub use dpa::*;
pub use flow::*;
pub use pd::*;
pub use port::*;
pub use qp::*;
pub use reg::*;
pub use tir::*;
pub use vhca::*;
pub use work_queue::*;

// The datapath formats, declared with their views in `mlx5::wire`.
pub use crate::mlx5::wire::cqe::{mlx5_cqe64, mlx5_err_cqe};
pub use crate::mlx5::wire::eqe::{
    mlx5_eqe, mlx5_eqe_comp, mlx5_eqe_cq_err, mlx5_eqe_port_state, mlx5_eqe_qp_srq,
};
pub use crate::mlx5::wire::wqe::{
    mlx5_wqe_atomic_seg, mlx5_wqe_ctrl_seg, mlx5_wqe_data_seg, mlx5_wqe_eth_seg,
    mlx5_wqe_inl_data_seg, mlx5_wqe_raddr_seg,
};

use super::layout::{Layout, LayoutDesc};

macro_rules! registry {
    ($($name:ident),* $(,)?) => {
        /// Every declared layout, for tools (`mlx5-dpa prm layouts`, `prm decode`) and tests.
        pub static ALL: &[&LayoutDesc] = &[ $( &<$name::Layout as Layout>::DESC ),* ];
    };
}

registry![
    mbox_in,
    mbox_out,
    general_obj_in_cmd_hdr,
    general_obj_out_cmd_hdr,
    nop_in,
    query_hca_cap_in,
    query_hca_cap_out,
    cmd_hca_cap,
    cmd_hca_cap_2,
    per_protocol_networking_offload_caps,
    roce_caps,
    atomic_caps,
    device_mem_cap,
    flow_table_prop_layout,
    flow_table_nic_cap,
    dpa_cap,
    nic_vport_context,
    query_nic_vport_context_in,
    query_nic_vport_context_out,
    roce_addr_layout,
    query_roce_address_in,
    query_roce_address_out,
    alloc_pd_in,
    alloc_pd_out,
    dealloc_pd_in,
    alloc_transport_domain_in,
    alloc_transport_domain_out,
    mkc,
    create_mkey_in,
    create_mkey_out,
    cqc,
    create_cq_in,
    create_cq_out,
    modify_cq_in,
    query_cq_in,
    query_cq_out,
    destroy_cq_in,
    wq,
    sqc,
    create_sq_in,
    create_sq_out,
    modify_sq_in,
    query_sq_in,
    query_sq_out,
    destroy_sq_in,
    rqc,
    create_rq_in,
    create_rq_out,
    modify_rq_in,
    query_rq_in,
    query_rq_out,
    destroy_rq_in,
    rmpc,
    create_rmp_in,
    create_rmp_out,
    tisc,
    create_tis_in,
    create_tis_out,
    rx_hash_field_select,
    tirc,
    create_tir_in,
    create_tir_out,
    rqtc,
    create_rqt_in,
    create_rqt_out,
    flow_table_context,
    create_flow_table_in,
    create_flow_table_out,
    fte_match_set_lyr_2_4,
    fte_match_set_misc,
    fte_match_param,
    create_flow_group_in,
    create_flow_group_out,
    dest_format_struct,
    flow_context,
    set_fte_in,
    set_fte_out,
    set_flow_table_root_in,
    ads,
    qpc,
    create_qp_in,
    create_qp_out,
    rst2init_qp_in,
    init2rtr_qp_in,
    rtr2rts_qp_in,
    rts2rts_qp_in,
    qp_2err_in,
    qp_2rst_in,
    query_qp_in,
    query_qp_out,
    destroy_qp_in,
    access_register_in,
    access_register_out,
    nic_dpa_eu_partition_reg,
    nic_dpa_eug_reg,
    allow_other_vhca_access_in,
    alias_context,
    create_alias_in,
    dpa_db_cq_mapping,
    create_dpa_db_cq_mapping_in,
    dpa_mem,
    dpa_process,
    dpa_thread,
    dpa_outbox,
    dpa_window,
    dpa_eq,
    dpa_uar,
    dpa_process_coredump_in,
    dpa_process_coredump_out,
    dpa_coredump,
    dpa_coredump_region,
    dealloc_transport_domain_in,
    destroy_mkey_in,
    destroy_tis_in,
    destroy_tir_in,
    destroy_rqt_in,
    destroy_rmp_in,
    destroy_flow_table_in,
    destroy_flow_group_in,
    delete_fte_in,
    alloc_q_counter_in,
    alloc_q_counter_out,
    dealloc_q_counter_in,
    query_q_counter_in,
    query_q_counter_out,
    alloc_flow_counter_in,
    alloc_flow_counter_out,
    dealloc_flow_counter_in,
    query_flow_counter_in,
    traffic_counter,
    query_flow_counter_out,
    flow_counter_list,
    mlx5_cqe64,
    mlx5_err_cqe,
    mlx5_eqe,
    mlx5_eqe_comp,
    mlx5_eqe_cq_err,
    mlx5_eqe_qp_srq,
    mlx5_eqe_port_state,
    mlx5_wqe_ctrl_seg,
    mlx5_wqe_eth_seg,
    mlx5_wqe_inl_data_seg,
    mlx5_wqe_data_seg,
    mlx5_wqe_raddr_seg,
    mlx5_wqe_atomic_seg,
];

/// Looks a layout up by its mlx5_ifc name.
pub fn by_name(name: &str) -> Option<&'static LayoutDesc> {
    ALL.iter().copied().find(|d| d.name == name)
}
