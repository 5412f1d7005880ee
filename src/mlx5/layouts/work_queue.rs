//! Work queues: the common `wq` layout, SQ, RQ and RMP.
//!
//! Declarations generated once from the named public header by `tools/ifc-check/gen_layout.py`,
//! then reviewed; `tests/driver/ifc_reference.rs` checks every field against the public headers.

use crate::layout;
use crate::mlx5::enums::{WqState, WqType};

layout! {
    /// `wq`; offsets and widths as in DPDK `drivers/common/mlx5/mlx5_prm.h`.
    pub wq: 0x600 {
        wq_type @ 0x0 : 0x4 as WqType,
        wq_signature @ 0x4 : 0x1,
        end_padding_mode @ 0x5 : 0x2,
        cd_slave @ 0x7 : 0x1,
        hds_skip_first_sge @ 0x20 : 0x1,
        log2_hds_buf_size @ 0x21 : 0x3,
        page_offset @ 0x2b : 0x5,
        lwm @ 0x30 : 0x10,
        pd @ 0x48 : 0x18,
        uar_page @ 0x68 : 0x18,
        dbr_addr @ 0x80 : 0x40,
        hw_counter @ 0xc0 : 0x20,
        sw_counter @ 0xe0 : 0x20,
        log_wq_stride @ 0x10c : 0x4,
        log_wq_pg_sz @ 0x113 : 0x5,
        log_wq_sz @ 0x11b : 0x5,
        dbr_umem_valid @ 0x120 : 0x1,
        wq_umem_valid @ 0x121 : 0x1,
        log_hairpin_num_packets @ 0x123 : 0x5,
        log_hairpin_data_sz @ 0x12b : 0x5,
        single_wqe_log_num_of_strides @ 0x134 : 0x4,
        two_byte_shift_en @ 0x138 : 0x1,
        single_stride_log_num_of_bytes @ 0x13d : 0x3,
        dbr_umem_id @ 0x140 : 0x20,
        wq_umem_id @ 0x160 : 0x20,
        wq_umem_offset @ 0x180 : 0x40,
    }
}

layout! {
    /// `sqc`; offsets and widths as in DPDK `drivers/common/mlx5/mlx5_prm.h`.
    pub sqc: 0x780 {
        rlky @ 0x0 : 0x1,
        cd_master @ 0x1 : 0x1,
        fre @ 0x2 : 0x1,
        flush_in_error_en @ 0x3 : 0x1,
        allow_multi_pkt_send_wqe @ 0x4 : 0x1,
        min_wqe_inline_mode @ 0x5 : 0x3,
        state @ 0x8 : 0x4 as WqState,
        reg_umr @ 0xc : 0x1,
        allow_swp @ 0xd : 0x1,
        hairpin @ 0xe : 0x1,
        non_wire @ 0xf : 0x1,
        static_sq_wq @ 0x10 : 0x1,
        hairpin_wq_buffer_type @ 0x15 : 0x3,
        ts_format @ 0x1a : 0x2,
        user_index @ 0x28 : 0x18,
        cqn @ 0x48 : 0x18,
        hairpin_peer_rq @ 0x68 : 0x18,
        hairpin_peer_vhca @ 0x90 : 0x10,
        packet_pacing_rate_limit_index @ 0xf0 : 0x10,
        tis_lst_sz @ 0x100 : 0x10,
        tis_num_0 @ 0x168 : 0x18,
        wq @ 0x180 : wq,
    }
}

layout! {
    /// `create_sq_in`; offsets and widths as in DPDK `drivers/common/mlx5/mlx5_prm.h`.
    pub create_sq_in: 0x880 {
        opcode @ 0x0 : 0x10,
        uid @ 0x10 : 0x10,
        op_mod @ 0x30 : 0x10,
        ctx @ 0x100 : sqc,
    }
}

layout! {
    /// `create_sq_out`; offsets and widths as in DPDK `drivers/common/mlx5/mlx5_prm.h`.
    pub create_sq_out: 0x80 {
        status @ 0x0 : 0x8,
        syndrome @ 0x20 : 0x20,
        sqn @ 0x48 : 0x18,
    }
}

layout! {
    /// `modify_sq_in`; offsets and widths as in rdma-core `providers/mlx5/mlx5_ifc.h`.
    pub modify_sq_in: 0x880 {
        opcode @ 0x0 : 0x10,
        uid @ 0x10 : 0x10,
        op_mod @ 0x30 : 0x10,
        sq_state @ 0x40 : 0x4 as WqState,
        sqn @ 0x48 : 0x18,
        modify_bitmask @ 0x80 : 0x40,
        sq_context @ 0x100 : sqc,
    }
}

layout! {
    /// `query_sq_in`; offsets and widths as in DPDK `drivers/common/mlx5/mlx5_prm.h`.
    pub query_sq_in: 0x80 {
        opcode @ 0x0 : 0x10,
        uid @ 0x10 : 0x10,
        op_mod @ 0x30 : 0x10,
        sqn @ 0x48 : 0x18,
    }
}

layout! {
    /// `query_sq_out`; offsets and widths as in DPDK `drivers/common/mlx5/mlx5_prm.h`.
    pub query_sq_out: 0x880 {
        status @ 0x0 : 0x8,
        syndrome @ 0x20 : 0x20,
        sq_context @ 0x100 : sqc,
    }
}

layout! {
    /// `destroy_sq_in`; offsets and widths as in rdma-core `providers/mlx5/mlx5_ifc.h`.
    pub destroy_sq_in: 0x80 {
        opcode @ 0x0 : 0x10,
        uid @ 0x10 : 0x10,
        sqn @ 0x48 : 0x18,
    }
}

layout! {
    /// `rqc`; offsets and widths as in DPDK `drivers/common/mlx5/mlx5_prm.h`.
    pub rqc: 0x780 {
        rlky @ 0x0 : 0x1,
        delay_drop_en @ 0x1 : 0x1,
        scatter_fcs @ 0x2 : 0x1,
        vsd @ 0x3 : 0x1,
        mem_rq_type @ 0x4 : 0x4,
        state @ 0x8 : 0x4 as WqState,
        flush_in_error_en @ 0xd : 0x1,
        hairpin @ 0xe : 0x1,
        hairpin_data_buffer_type @ 0x15 : 0x3,
        ts_format @ 0x1a : 0x2,
        user_index @ 0x28 : 0x18,
        cqn @ 0x48 : 0x18,
        counter_set_id @ 0x60 : 0x8,
        rmpn @ 0x88 : 0x18,
        hairpin_peer_sq @ 0xa8 : 0x18,
        hairpin_peer_vhca @ 0xd0 : 0x10,
        wq @ 0x180 : wq,
    }
}

layout! {
    /// `create_rq_in`; offsets and widths as in DPDK `drivers/common/mlx5/mlx5_prm.h`.
    pub create_rq_in: 0x880 {
        opcode @ 0x0 : 0x10,
        uid @ 0x10 : 0x10,
        op_mod @ 0x30 : 0x10,
        ctx @ 0x100 : rqc,
    }
}

layout! {
    /// `create_rq_out`; offsets and widths as in DPDK `drivers/common/mlx5/mlx5_prm.h`.
    pub create_rq_out: 0x80 {
        status @ 0x0 : 0x8,
        syndrome @ 0x20 : 0x20,
        rqn @ 0x48 : 0x18,
    }
}

layout! {
    /// `modify_rq_in`; offsets and widths as in DPDK `drivers/common/mlx5/mlx5_prm.h`.
    pub modify_rq_in: 0x880 {
        opcode @ 0x0 : 0x10,
        uid @ 0x10 : 0x10,
        op_mod @ 0x30 : 0x10,
        rq_state @ 0x40 : 0x4 as WqState,
        rqn @ 0x48 : 0x18,
        modify_bitmask @ 0x80 : 0x40,
        ctx @ 0x100 : rqc,
    }
}

layout! {
    /// `query_rq_in`; offsets and widths as in DPDK `drivers/common/mlx5/mlx5_prm.h`.
    pub query_rq_in: 0x80 {
        opcode @ 0x0 : 0x10,
        uid @ 0x10 : 0x10,
        op_mod @ 0x30 : 0x10,
        rqn @ 0x48 : 0x18,
    }
}

layout! {
    /// `query_rq_out`; offsets and widths as in DPDK `drivers/common/mlx5/mlx5_prm.h`.
    pub query_rq_out: 0x880 {
        status @ 0x0 : 0x8,
        syndrome @ 0x20 : 0x20,
        rq_context @ 0x100 : rqc,
    }
}

layout! {
    /// `destroy_rq_in`; offsets and widths as in rdma-core `providers/mlx5/mlx5_ifc.h`.
    pub destroy_rq_in: 0x80 {
        opcode @ 0x0 : 0x10,
        uid @ 0x10 : 0x10,
        rqn @ 0x48 : 0x18,
    }
}

layout! {
    /// `rmpc`; offsets and widths as in DPDK `drivers/common/mlx5/mlx5_prm.h`.
    pub rmpc: 0x780 {
        state @ 0x8 : 0x4 as WqState,
        basic_cyclic_rcv_wqe @ 0x20 : 0x1,
        wq @ 0x180 : wq,
    }
}

layout! {
    /// `create_rmp_in`; offsets and widths as in DPDK `drivers/common/mlx5/mlx5_prm.h`.
    pub create_rmp_in: 0x880 {
        opcode @ 0x0 : 0x10,
        uid @ 0x10 : 0x10,
        op_mod @ 0x30 : 0x10,
        ctx @ 0x100 : rmpc,
    }
}

layout! {
    /// `create_rmp_out`; offsets and widths as in DPDK `drivers/common/mlx5/mlx5_prm.h`.
    pub create_rmp_out: 0x80 {
        status @ 0x0 : 0x8,
        syndrome @ 0x20 : 0x20,
        rmpn @ 0x48 : 0x18,
    }
}
