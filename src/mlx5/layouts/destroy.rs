//! Destroy commands that the kernel builds when a DevX object handle is destroyed.
//!
//! User space never sends these through DevX (`MLX5_IB_METHOD_DEVX_OBJ_DESTROY` makes the
//! kernel send them); they are declared so that the device model can parse them and tools can
//! decode them. Offsets as in rdma-core `providers/mlx5/mlx5_ifc.h`; `uid` / `op_mod` where the
//! kernel's `mlx5_ifc.h` has them.

use crate::layout;

layout! {
    /// `dealloc_transport_domain_in`.
    pub dealloc_transport_domain_in: 0x80 {
        opcode @ 0x0 : 0x10,
        uid @ 0x10 : 0x10,
        op_mod @ 0x30 : 0x10,
        transport_domain @ 0x48 : 0x18,
    }
}

layout! {
    /// `destroy_mkey_in`.
    pub destroy_mkey_in: 0x80 {
        opcode @ 0x0 : 0x10,
        uid @ 0x10 : 0x10,
        op_mod @ 0x30 : 0x10,
        mkey_index @ 0x48 : 0x18,
    }
}

layout! {
    /// `destroy_tis_in`.
    pub destroy_tis_in: 0x80 {
        opcode @ 0x0 : 0x10,
        uid @ 0x10 : 0x10,
        op_mod @ 0x30 : 0x10,
        tisn @ 0x48 : 0x18,
    }
}

layout! {
    /// `destroy_tir_in`.
    pub destroy_tir_in: 0x80 {
        opcode @ 0x0 : 0x10,
        uid @ 0x10 : 0x10,
        op_mod @ 0x30 : 0x10,
        tirn @ 0x48 : 0x18,
    }
}

layout! {
    /// `destroy_rqt_in`.
    pub destroy_rqt_in: 0x80 {
        opcode @ 0x0 : 0x10,
        uid @ 0x10 : 0x10,
        op_mod @ 0x30 : 0x10,
        rqtn @ 0x48 : 0x18,
    }
}

layout! {
    /// `destroy_rmp_in`.
    pub destroy_rmp_in: 0x80 {
        opcode @ 0x0 : 0x10,
        uid @ 0x10 : 0x10,
        op_mod @ 0x30 : 0x10,
        rmpn @ 0x48 : 0x18,
    }
}

layout! {
    /// `destroy_flow_table_in`.
    pub destroy_flow_table_in: 0x200 {
        opcode @ 0x0 : 0x10,
        uid @ 0x10 : 0x10,
        op_mod @ 0x30 : 0x10,
        other_vport @ 0x40 : 0x1,
        vport_number @ 0x50 : 0x10,
        table_type @ 0x80 : 0x8,
        table_id @ 0xa8 : 0x18,
    }
}

layout! {
    /// `destroy_flow_group_in`.
    pub destroy_flow_group_in: 0x200 {
        opcode @ 0x0 : 0x10,
        uid @ 0x10 : 0x10,
        op_mod @ 0x30 : 0x10,
        other_vport @ 0x40 : 0x1,
        vport_number @ 0x50 : 0x10,
        table_type @ 0x80 : 0x8,
        table_id @ 0xa8 : 0x18,
        group_id @ 0xc0 : 0x20,
    }
}

layout! {
    /// `delete_fte_in`.
    pub delete_fte_in: 0x200 {
        opcode @ 0x0 : 0x10,
        uid @ 0x10 : 0x10,
        op_mod @ 0x30 : 0x10,
        other_vport @ 0x40 : 0x1,
        vport_number @ 0x50 : 0x10,
        table_type @ 0x80 : 0x8,
        table_id @ 0xa8 : 0x18,
        flow_index @ 0x100 : 0x20,
    }
}
