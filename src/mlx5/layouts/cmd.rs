//! Command mailbox headers and general-object command headers.
//!
//! Declarations generated once from the named public header by `tools/ifc-check/gen_layout.py`,
//! then reviewed; `tests/driver/ifc_reference.rs` checks every field against the public headers.

use crate::layout;

layout! {
    /// `general_obj_in_cmd_hdr`; offsets and widths as in rdma-core `providers/mlx5/mlx5_ifc.h`.
    pub general_obj_in_cmd_hdr: 0x80 {
        opcode @ 0x0 : 0x10,
        uid @ 0x10 : 0x10,
        obj_type @ 0x30 : 0x10,
        obj_id @ 0x40 : 0x20,
        /// Create an alias of another function's object (kernel mlx5_ifc.h, snap-rdma).
        alias_object @ 0x60 : 0x1,
        log_obj_range @ 0x63 : 0x5,
    }
}

layout! {
    /// `general_obj_out_cmd_hdr`; offsets and widths as in rdma-core `providers/mlx5/mlx5_ifc.h`.
    pub general_obj_out_cmd_hdr: 0x80 {
        status @ 0x0 : 0x8,
        syndrome @ 0x20 : 0x20,
        obj_id @ 0x40 : 0x20,
    }
}

layout! {
    /// `nop_in`; offsets and widths as in Linux `include/linux/mlx5/mlx5_ifc.h` (2017 copy in mlnx-ofa_kernel).
    pub nop_in: 0x80 {
        opcode @ 0x0 : 0x10,
        uid @ 0x10 : 0x10,
        op_mod @ 0x30 : 0x10,
    }
}

layout! {
    /// Header common to every command input mailbox (`mbox_in` in the kernel's mlx5_ifc.h).
    pub mbox_in: 0x80 {
        opcode @ 0x0 : 0x10,
        uid @ 0x10 : 0x10,
        op_mod @ 0x30 : 0x10,
    }
}

layout! {
    /// Header common to every command output mailbox (`mbox_out` in the kernel's mlx5_ifc.h).
    pub mbox_out: 0x80 {
        status @ 0x0 : 0x8,
        syndrome @ 0x20 : 0x20,
    }
}
