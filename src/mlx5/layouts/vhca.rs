//! Cross-function access: ALLOW_OTHER_VHCA_ACCESS and alias objects.
//!
//! Declarations generated once from the named public header by `tools/ifc-check/gen_layout.py`,
//! then reviewed; `tests/ifc_reference.rs` checks every field against the public headers.

use super::cmd::general_obj_in_cmd_hdr;
use crate::layout;

layout! {
    /// `allow_other_vhca_access_in`; offsets and widths as in snap-rdma `src/mlx5_ifc.h`.
    pub allow_other_vhca_access_in: 0x200 {
        opcode @ 0x0 : 0x10,
        uid @ 0x10 : 0x10,
        op_mod @ 0x30 : 0x10,
        object_type_to_be_accessed @ 0x90 : 0x10,
        object_id_to_be_accessed @ 0xa0 : 0x20,
        access_key @ 0x100 : 0x100,
    }
}

layout! {
    /// `alias_context`; offsets and widths as in DPDK `drivers/common/mlx5/mlx5_prm.h`.
    pub alias_context: 0x200 {
        vhca_id_to_be_accessed @ 0x0 : 0x10,
        status @ 0x1d : 0x3,
        object_id_to_be_accessed @ 0x20 : 0x20,
        /// Key set by ALLOW_OTHER_VHCA_ACCESS (kernel mlx5_ifc.h, snap-rdma).
        access_key @ 0x80 : 0x100,
        metadata @ 0x180 : 0x80,
    }
}

layout! {
    /// `create_alias_in`; offsets and widths as in snap-rdma `src/mlx5_ifc.h`.
    pub create_alias_in: 0x280 {
        hdr @ 0x0 : general_obj_in_cmd_hdr,
        alias_ctx @ 0x80 : alias_context,
    }
}
