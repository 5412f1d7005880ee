//! ACCESS_REGISTER / ACCESS_REGISTER_USER (same layout, opcodes 0x805 / 0xb0c).
//!
//! Declarations generated once from the named public header by `tools/ifc-check/gen_layout.py`,
//! then reviewed; `tests/driver/ifc_reference.rs` checks every field against the public headers.

use crate::layout;

layout! {
    /// `access_register_in`; offsets and widths as in rdma-core `providers/mlx5/mlx5_ifc.h`.
    pub access_register_in: 0x80 {
        opcode @ 0x0 : 0x10,
        uid @ 0x10 : 0x10,
        op_mod @ 0x30 : 0x10,
        register_id @ 0x50 : 0x10,
        argument @ 0x60 : 0x20,
        register_data @ 0x80 : [0x20; flex],
    }
}

layout! {
    /// `access_register_out`; offsets and widths as in rdma-core `providers/mlx5/mlx5_ifc.h`.
    pub access_register_out: 0x80 {
        status @ 0x0 : 0x8,
        syndrome @ 0x20 : 0x20,
        register_data @ 0x80 : [0x20; flex],
    }
}
