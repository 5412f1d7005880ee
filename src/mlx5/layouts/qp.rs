//! Queue pairs and their state transitions.
//!
//! Declarations generated once from the named public header by `tools/ifc-check/gen_layout.py`,
//! then reviewed; `tests/driver/ifc_reference.rs` checks every field against the public headers.

use crate::layout;
use crate::mlx5::enums::{QpServiceType, QpState};

layout! {
    /// `ads`; offsets and widths as in rdma-core `providers/mlx5/mlx5_ifc.h`.
    pub ads: 0x160 {
        fl @ 0x0 : 0x1,
        free_ar @ 0x1 : 0x1,
        pkey_index @ 0x10 : 0x10,
        grh @ 0x28 : 0x1,
        mlid @ 0x29 : 0x7,
        rlid @ 0x30 : 0x10,
        ack_timeout @ 0x40 : 0x5,
        src_addr_index @ 0x48 : 0x8,
        stat_rate @ 0x54 : 0x4,
        hop_limit @ 0x58 : 0x8,
        tclass @ 0x64 : 0x8,
        flow_label @ 0x6c : 0x14,
        rgid_rip @ 0x80 : [0x8; 16],
        f_dscp @ 0x104 : 0x1,
        f_ecn @ 0x105 : 0x1,
        f_eth_prio @ 0x107 : 0x1,
        ecn @ 0x108 : 0x2,
        dscp @ 0x10a : 0x6,
        udp_sport @ 0x110 : 0x10,
        dei_cfi @ 0x120 : 0x1,
        eth_prio @ 0x121 : 0x3,
        sl @ 0x124 : 0x4,
        vhca_port_num @ 0x128 : 0x8,
        rmac_47_32 @ 0x130 : 0x10,
        rmac_31_0 @ 0x140 : 0x20,
    }
}

layout! {
    /// `qpc`; offsets and widths as in rdma-core `providers/mlx5/mlx5_ifc.h`.
    pub qpc: 0x740 {
        state @ 0x0 : 0x4 as QpState,
        lag_tx_port_affinity @ 0x4 : 0x4,
        st @ 0x8 : 0x8 as QpServiceType,
        isolate_vl_tc @ 0x12 : 0x1,
        pm_state @ 0x13 : 0x2,
        req_e2e_credit_mode @ 0x16 : 0x2,
        offload_type @ 0x18 : 0x4,
        end_padding_mode @ 0x1c : 0x2,
        wq_signature @ 0x20 : 0x1,
        block_lb_mc @ 0x21 : 0x1,
        atomic_like_write_en @ 0x22 : 0x1,
        latency_sensitive @ 0x23 : 0x1,
        drain_sigerr @ 0x25 : 0x1,
        pd @ 0x28 : 0x18,
        mtu @ 0x40 : 0x3,
        log_msg_max @ 0x43 : 0x5,
        log_rq_size @ 0x49 : 0x4,
        log_rq_stride @ 0x4d : 0x3,
        no_sq @ 0x50 : 0x1,
        log_sq_size @ 0x51 : 0x4,
        ts_format @ 0x58 : 0x2,
        data_in_order @ 0x5a : 0x1,
        rlky @ 0x5b : 0x1,
        ulp_stateless_offload_mode @ 0x5c : 0x4,
        counter_set_id @ 0x60 : 0x8,
        uar_page @ 0x68 : 0x18,
        user_index @ 0x88 : 0x18,
        log_page_size @ 0xa3 : 0x5,
        remote_qpn @ 0xa8 : 0x18,
        primary_address_path @ 0xc0 : ads,
        secondary_address_path @ 0x220 : ads,
        log_ack_req_freq @ 0x380 : 0x4,
        log_sra_max @ 0x388 : 0x3,
        retry_count @ 0x38d : 0x3,
        rnr_retry @ 0x390 : 0x3,
        fre @ 0x394 : 0x1,
        cur_rnr_retry @ 0x395 : 0x3,
        cur_retry_count @ 0x398 : 0x3,
        next_send_psn @ 0x3c8 : 0x18,
        cqn_snd @ 0x3e8 : 0x18,
        deth_sqpn @ 0x408 : 0x18,
        last_acked_psn @ 0x448 : 0x18,
        ssn @ 0x468 : 0x18,
        log_rra_max @ 0x488 : 0x3,
        atomic_mode @ 0x48c : 0x4,
        rre @ 0x490 : 0x1,
        rwe @ 0x491 : 0x1,
        rae @ 0x492 : 0x1,
        page_offset @ 0x494 : 0x6,
        cd_slave_receive @ 0x49d : 0x1,
        cd_slave_send @ 0x49e : 0x1,
        cd_master @ 0x49f : 0x1,
        min_rnr_nak @ 0x4a3 : 0x5,
        next_rcv_psn @ 0x4a8 : 0x18,
        xrcd @ 0x4c8 : 0x18,
        cqn_rcv @ 0x4e8 : 0x18,
        dbr_addr @ 0x500 : 0x40,
        q_key @ 0x540 : 0x20,
        rq_type @ 0x565 : 0x3,
        srqn_rmpn_xrqn @ 0x568 : 0x18,
        rmsn @ 0x588 : 0x18,
        hw_sq_wqebb_counter @ 0x5a0 : 0x10,
        sw_sq_wqebb_counter @ 0x5b0 : 0x10,
        hw_rq_counter @ 0x5c0 : 0x20,
        sw_rq_counter @ 0x5e0 : 0x20,
        cgs @ 0x62f : 0x1,
        cs_req @ 0x630 : 0x8,
        cs_res @ 0x638 : 0x8,
        dc_access_key @ 0x640 : 0x40,
        dbr_umem_valid @ 0x683 : 0x1,
        dbr_umem_id @ 0x720 : 0x20,
    }
}

layout! {
    /// `create_qp_in`; offsets and widths as in snap-rdma `src/mlx5_ifc.h`.
    pub create_qp_in: 0x880 {
        opcode @ 0x0 : 0x10,
        uid @ 0x10 : 0x10,
        op_mod @ 0x30 : 0x10,
        input_qpn @ 0x48 : 0x18,
        opt_param_mask @ 0x80 : 0x20,
        qpc @ 0xc0 : qpc,
        wq_umem_offset @ 0x800 : 0x40,
        wq_umem_id @ 0x840 : 0x20,
        wq_umem_valid @ 0x860 : 0x1,
        pas @ 0x880 : [0x40; flex],
    }
}

layout! {
    /// `create_qp_out`; offsets and widths as in rdma-core `providers/mlx5/mlx5_ifc.h`.
    pub create_qp_out: 0x80 {
        status @ 0x0 : 0x8,
        syndrome @ 0x20 : 0x20,
        qpn @ 0x48 : 0x18,
    }
}

layout! {
    /// `rst2init_qp_in`; offsets and widths as in rdma-core `providers/mlx5/mlx5_ifc.h`.
    pub rst2init_qp_in: 0x880 {
        opcode @ 0x0 : 0x10,
        uid @ 0x10 : 0x10,
        op_mod @ 0x30 : 0x10,
        qpn @ 0x48 : 0x18,
        opt_param_mask @ 0x80 : 0x20,
        qpc @ 0xc0 : qpc,
    }
}

layout! {
    /// `init2rtr_qp_in`; offsets and widths as in rdma-core `providers/mlx5/mlx5_ifc.h`.
    pub init2rtr_qp_in: 0x880 {
        opcode @ 0x0 : 0x10,
        uid @ 0x10 : 0x10,
        op_mod @ 0x30 : 0x10,
        qpn @ 0x48 : 0x18,
        opt_param_mask @ 0x80 : 0x20,
        qpc @ 0xc0 : qpc,
    }
}

layout! {
    /// `rtr2rts_qp_in`; offsets and widths as in rdma-core `providers/mlx5/mlx5_ifc.h`.
    pub rtr2rts_qp_in: 0x880 {
        opcode @ 0x0 : 0x10,
        uid @ 0x10 : 0x10,
        op_mod @ 0x30 : 0x10,
        qpn @ 0x48 : 0x18,
        opt_param_mask @ 0x80 : 0x20,
        qpc @ 0xc0 : qpc,
    }
}

layout! {
    /// `rts2rts_qp_in`; offsets and widths as in rdma-core `providers/mlx5/mlx5_ifc.h`.
    pub rts2rts_qp_in: 0xe80 {
        opcode @ 0x0 : 0x10,
        uid @ 0x10 : 0x10,
        op_mod @ 0x30 : 0x10,
        qpc_ext @ 0x40 : 0x1,
        qpn @ 0x48 : 0x18,
        opt_param_mask @ 0x80 : 0x20,
        qpc @ 0xc0 : qpc,
        opt_param_mask_95_32 @ 0x840 : 0x40,
    }
}

layout! {
    /// `qp_2err_in`; offsets and widths as in Linux `include/linux/mlx5/mlx5_ifc.h` (2017 copy in mlnx-ofa_kernel).
    pub qp_2err_in: 0x80 {
        opcode @ 0x0 : 0x10,
        uid @ 0x10 : 0x10,
        op_mod @ 0x30 : 0x10,
        qpn @ 0x48 : 0x18,
    }
}

layout! {
    /// `qp_2rst_in`; offsets and widths as in Linux `include/linux/mlx5/mlx5_ifc.h` (2017 copy in mlnx-ofa_kernel).
    pub qp_2rst_in: 0x80 {
        opcode @ 0x0 : 0x10,
        uid @ 0x10 : 0x10,
        op_mod @ 0x30 : 0x10,
        qpn @ 0x48 : 0x18,
    }
}

layout! {
    /// `query_qp_in`; offsets and widths as in rdma-core `providers/mlx5/mlx5_ifc.h`.
    pub query_qp_in: 0x80 {
        opcode @ 0x0 : 0x10,
        uid @ 0x10 : 0x10,
        op_mod @ 0x30 : 0x10,
        qpn @ 0x48 : 0x18,
    }
}

layout! {
    /// `query_qp_out`; offsets and widths as in rdma-core `providers/mlx5/mlx5_ifc.h`.
    pub query_qp_out: 0x880 {
        status @ 0x0 : 0x8,
        syndrome @ 0x20 : 0x20,
        opt_param_mask @ 0x80 : 0x20,
        qpc @ 0xc0 : qpc,
        pas @ 0x880 : [0x40; flex],
    }
}

layout! {
    /// `destroy_qp_in`; offsets and widths as in snap-rdma `src/mlx5_ifc.h`.
    pub destroy_qp_in: 0x80 {
        opcode @ 0x0 : 0x10,
        uid @ 0x10 : 0x10,
        op_mod @ 0x30 : 0x10,
        qpn @ 0x48 : 0x18,
    }
}
