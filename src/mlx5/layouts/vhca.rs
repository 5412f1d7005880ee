//! Cross-function access: ALLOW_OTHER_VHCA_ACCESS and alias objects.
//!
//! Declarations generated once from the named public header by `tools/ifc-check/gen_layout.py`,
//! then reviewed; `tests/driver/ifc_reference.rs` checks every field against the public headers.

use super::cmd::general_obj_in_cmd_hdr;
use crate::layout;

/// General-object types of aliases (`obj_type` of CREATE_GENERAL_OBJECT with `alias_object` = 1):
/// the class of the other function's object an alias stands for (docs/sources.md sections 2 and 3;
/// DPDK `mlx5_prm.h`, snap-rdma `mlx5_ifc.h`).
pub mod alias_type {
    pub const MKEY: u16 = 0xff01;
    pub const QP: u16 = 0xff02;
    pub const RQ: u16 = 0xff06;
    pub const SQ: u16 = 0xff07;
    pub const TIR: u16 = 0xff08;
    pub const TIS: u16 = 0xff09;
    pub const CQ: u16 = 0xff10;
    pub const UAR: u16 = 0xff11;
    pub const PD: u16 = 0xff12;
    /// A DPA process's memory (its DUMEM).
    pub const DPA_DUMEM: u16 = 0xff13;
    pub const EQ: u16 = 0xff14;
}

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
