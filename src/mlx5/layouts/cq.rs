//! Completion queues.
//!
//! Declarations generated once from the named public header by `tools/ifc-check/gen_layout.py`,
//! then reviewed; `tests/driver/ifc_reference.rs` checks every field against the public headers.

use crate::layout;

layout! {
    /// `cqc`; offsets and widths as in snap-rdma `src/mlx5_ifc.h`.
    pub cqc: 0x200 {
        status @ 0x0 : 0x4,
        as_notify @ 0x4 : 0x1,
        initiator_src_dct @ 0x5 : 0x1,
        dbr_umem_valid @ 0x6 : 0x1,
        apu_cq @ 0x7 : 0x1,
        cqe_sz @ 0x8 : 0x3,
        cc @ 0xb : 0x1,
        scqe_break_moderation_en @ 0xd : 0x1,
        oi @ 0xe : 0x1,
        cq_period_mode @ 0xf : 0x2,
        cqe_comp_en @ 0x11 : 0x1,
        mini_cqe_res_format @ 0x12 : 0x2,
        st @ 0x14 : 0x4,
        apu_element_type @ 0x19 : 0x3,
        cqe_compression_layout @ 0x1e : 0x2,
        dbr_umem_id @ 0x20 : 0x20,
        page_offset @ 0x54 : 0x6,
        mini_cqe_res_format_3_2 @ 0x5c : 0x2,
        cq_time_stamp_format @ 0x5e : 0x2,
        log_cq_size @ 0x63 : 0x5,
        uar_page @ 0x68 : 0x18,
        cq_period @ 0x84 : 0xc,
        cq_max_count @ 0x90 : 0x10,
        c_eqn_or_apu_element @ 0xa0 : 0x20,
        log_page_size @ 0xc3 : 0x5,
        last_notified_index @ 0x108 : 0x18,
        last_solicit_index @ 0x128 : 0x18,
        consumer_counter @ 0x148 : 0x18,
        producer_counter @ 0x168 : 0x18,
        apu_user_arg @ 0x180 : 0x40,
        dbr_addr @ 0x1c0 : 0x40,
    }
}

layout! {
    /// `create_cq_in`; offsets and widths as in snap-rdma `src/mlx5_ifc.h`.
    pub create_cq_in: 0x880 {
        opcode @ 0x0 : 0x10,
        uid @ 0x10 : 0x10,
        op_mod @ 0x30 : 0x10,
        cq_context @ 0x80 : cqc,
        cq_umem_offset @ 0x280 : 0x40,
        cq_umem_id @ 0x2c0 : 0x20,
        cq_umem_valid @ 0x2e0 : 0x1,
        pas @ 0x880 : [0x40; flex],
    }
}

layout! {
    /// `create_cq_out`; offsets and widths as in DPDK `drivers/common/mlx5/mlx5_prm.h`.
    pub create_cq_out: 0x80 {
        status @ 0x0 : 0x8,
        syndrome @ 0x20 : 0x20,
        cqn @ 0x48 : 0x18,
    }
}

layout! {
    /// `modify_cq_in`; offsets and widths as in Linux `include/linux/mlx5/mlx5_ifc.h` (2017 copy in mlnx-ofa_kernel).
    pub modify_cq_in: 0x880 {
        opcode @ 0x0 : 0x10,
        uid @ 0x10 : 0x10,
        op_mod @ 0x30 : 0x10,
        cqn @ 0x48 : 0x18,
        modify_field_select @ 0x60 : 0x20,
        cq_context @ 0x80 : cqc,
        pas @ 0x880 : [0x40; flex],
    }
}

layout! {
    /// `query_cq_in`; offsets and widths as in DPDK `drivers/common/mlx5/mlx5_prm.h`.
    pub query_cq_in: 0x80 {
        opcode @ 0x0 : 0x10,
        uid @ 0x10 : 0x10,
        op_mod @ 0x30 : 0x10,
        cqn @ 0x48 : 0x18,
    }
}

layout! {
    /// `query_cq_out`; offsets and widths as in DPDK `drivers/common/mlx5/mlx5_prm.h`.
    pub query_cq_out: 0x880 {
        status @ 0x0 : 0x8,
        syndrome @ 0x20 : 0x20,
        cq_context @ 0x80 : cqc,
        pas @ 0x880 : [0x40; flex],
    }
}

layout! {
    /// `destroy_cq_in`; offsets and widths as in rdma-core `providers/mlx5/mlx5_ifc.h`.
    pub destroy_cq_in: 0x80 {
        opcode @ 0x0 : 0x10,
        uid @ 0x10 : 0x10,
        cqn @ 0x48 : 0x18,
    }
}
