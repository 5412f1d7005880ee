//! Transport interface send/receive objects and RQ tables.
//!
//! Declarations generated once from the named public header by `tools/ifc-check/gen_layout.py`,
//! then reviewed; `tests/driver/ifc_reference.rs` checks every field against the public headers.

use crate::layout;

layout! {
    /// `tisc`; offsets and widths as in rdma-core `providers/mlx5/mlx5_ifc.h`.
    pub tisc: 0x500 {
        strict_lag_tx_port_affinity @ 0x0 : 0x1,
        tls_en @ 0x1 : 0x1,
        lag_tx_port_affinity @ 0x4 : 0x4,
        prio @ 0xc : 0x4,
        transport_domain @ 0x128 : 0x18,
        underlay_qpn @ 0x148 : 0x18,
        pd @ 0x168 : 0x18,
    }
}

layout! {
    /// `create_tis_in`; offsets and widths as in DPDK `drivers/common/mlx5/mlx5_prm.h`.
    pub create_tis_in: 0x600 {
        opcode @ 0x0 : 0x10,
        uid @ 0x10 : 0x10,
        op_mod @ 0x30 : 0x10,
        ctx @ 0x100 : tisc,
    }
}

layout! {
    /// `create_tis_out`; offsets and widths as in DPDK `drivers/common/mlx5/mlx5_prm.h`.
    pub create_tis_out: 0x80 {
        status @ 0x0 : 0x8,
        syndrome @ 0x20 : 0x20,
        tisn @ 0x48 : 0x18,
    }
}

layout! {
    /// `rx_hash_field_select`; offsets and widths as in DPDK `drivers/common/mlx5/mlx5_prm.h`.
    pub rx_hash_field_select: 0x20 {
        l3_prot_type @ 0x0 : 0x1,
        l4_prot_type @ 0x1 : 0x1,
        selected_fields @ 0x2 : 0x1e,
    }
}

layout! {
    /// `tirc`; offsets and widths as in DPDK `drivers/common/mlx5/mlx5_prm.h`.
    pub tirc: 0x780 {
        disp_type @ 0x20 : 0x4,
        lro_timeout_period_usecs @ 0x84 : 0x10,
        lro_enable_mask @ 0x94 : 0x4,
        lro_max_msg_sz @ 0x98 : 0x8,
        inline_rqn @ 0xe8 : 0x18,
        rx_hash_symmetric @ 0x100 : 0x1,
        tunneled_offload_en @ 0x102 : 0x1,
        indirect_table @ 0x108 : 0x18,
        rx_hash_fn @ 0x120 : 0x4,
        self_lb_block @ 0x126 : 0x2,
        transport_domain @ 0x128 : 0x18,
        rx_hash_toeplitz_key @ 0x140 : [0x20; 10],
        rx_hash_field_selector_outer @ 0x280 : rx_hash_field_select,
        rx_hash_field_selector_inner @ 0x2a0 : rx_hash_field_select,
    }
}

layout! {
    /// `create_tir_in`; offsets and widths as in DPDK `drivers/common/mlx5/mlx5_prm.h`.
    pub create_tir_in: 0x880 {
        opcode @ 0x0 : 0x10,
        uid @ 0x10 : 0x10,
        op_mod @ 0x30 : 0x10,
        ctx @ 0x100 : tirc,
    }
}

layout! {
    /// `create_tir_out`; offsets and widths as in rdma-core `providers/mlx5/mlx5_ifc.h`.
    pub create_tir_out: 0x80 {
        status @ 0x0 : 0x8,
        icm_address_63_40 @ 0x8 : 0x18,
        syndrome @ 0x20 : 0x20,
        icm_address_39_32 @ 0x40 : 0x8,
        tirn @ 0x48 : 0x18,
        icm_address_31_0 @ 0x60 : 0x20,
    }
}

layout! {
    /// `rqtc`; offsets and widths as in DPDK `drivers/common/mlx5/mlx5_prm.h`.
    pub rqtc: 0x780 {
        list_q_type @ 0xa5 : 0x3,
        rqt_max_size @ 0xb0 : 0x10,
        rqt_actual_size @ 0xd0 : 0x10,
    }
}

layout! {
    /// `create_rqt_in`; offsets and widths as in DPDK `drivers/common/mlx5/mlx5_prm.h`.
    pub create_rqt_in: 0x880 {
        opcode @ 0x0 : 0x10,
        uid @ 0x10 : 0x10,
        op_mod @ 0x30 : 0x10,
        rqt_context @ 0x100 : rqtc,
        /// `rqt_context.rq_num[]`: RQ numbers, 32 bits each, after the fixed part.
        rq_num @ 0x880 : [0x20; flex],
    }
}

layout! {
    /// `create_rqt_out`; offsets and widths as in DPDK `drivers/common/mlx5/mlx5_prm.h`.
    pub create_rqt_out: 0x80 {
        status @ 0x0 : 0x8,
        syndrome @ 0x20 : 0x20,
        rqtn @ 0x48 : 0x18,
    }
}
