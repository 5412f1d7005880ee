//! Port addressing: the NIC vport context (permanent MAC, MTU) and the RoCE address (GID) table.
//!
//! Offsets as in the kernel's `include/linux/mlx5/mlx5_ifc.h` (and rdma-core's copy);
//! `tests/driver/ifc_reference.rs` checks every field the public headers define.

use crate::layout;

layout! {
    /// `nic_vport_context`; offsets and widths as in the kernel's `include/linux/mlx5/mlx5_ifc.h`.
    pub nic_vport_context: 0x800 {
        min_wqe_inline_mode @ 0x5 : 0x3,
        disable_mc_local_lb @ 0x1d : 0x1,
        disable_uc_local_lb @ 0x1e : 0x1,
        roce_en @ 0x1f : 0x1,
        mtu @ 0x130 : 0x10,
        system_image_guid @ 0x140 : 0x40,
        port_guid @ 0x180 : 0x40,
        node_guid @ 0x1c0 : 0x40,
        promisc_uc @ 0x780 : 0x1,
        promisc_mc @ 0x781 : 0x1,
        promisc_all @ 0x782 : 0x1,
        allowed_list_type @ 0x785 : 0x3,
        allowed_list_size @ 0x794 : 0xc,
        permanent_address_mac_addr_47_32 @ 0x7b0 : 0x10,
        permanent_address_mac_addr_31_0 @ 0x7c0 : 0x20,
    }
}

layout! {
    /// `query_nic_vport_context_in`; offsets and widths as in the kernel's `include/linux/mlx5/mlx5_ifc.h`.
    pub query_nic_vport_context_in: 0x80 {
        opcode @ 0x0 : 0x10,
        uid @ 0x10 : 0x10,
        op_mod @ 0x30 : 0x10,
        other_vport @ 0x40 : 0x1,
        vport_number @ 0x50 : 0x10,
        allowed_list_type @ 0x65 : 0x3,
    }
}

layout! {
    /// `query_nic_vport_context_out`; offsets and widths as in the kernel's `include/linux/mlx5/mlx5_ifc.h`.
    pub query_nic_vport_context_out: 0x880 {
        status @ 0x0 : 0x8,
        syndrome @ 0x20 : 0x20,
        nic_vport_context @ 0x80 : nic_vport_context,
    }
}

layout! {
    /// `roce_addr_layout`; offsets and widths as in the kernel's `include/linux/mlx5/mlx5_ifc.h`.
    pub roce_addr_layout: 0x100 {
        source_l3_address @ 0x0 : [0x8; 16],
        vlan_valid @ 0x83 : 0x1,
        vlan_id @ 0x84 : 0xc,
        source_mac_47_32 @ 0x90 : 0x10,
        source_mac_31_0 @ 0xa0 : 0x20,
        roce_l3_type @ 0xd4 : 0x4,
        roce_version @ 0xd8 : 0x8,
    }
}

layout! {
    /// `query_roce_address_in`; offsets and widths as in the kernel's `include/linux/mlx5/mlx5_ifc.h`.
    pub query_roce_address_in: 0x80 {
        opcode @ 0x0 : 0x10,
        uid @ 0x10 : 0x10,
        op_mod @ 0x30 : 0x10,
        roce_address_index @ 0x40 : 0x10,
    }
}

layout! {
    /// `query_roce_address_out`; offsets and widths as in the kernel's `include/linux/mlx5/mlx5_ifc.h`.
    pub query_roce_address_out: 0x180 {
        status @ 0x0 : 0x8,
        syndrome @ 0x20 : 0x20,
        roce_address @ 0x80 : roce_addr_layout,
    }
}

/// `roce_version` values (PRM; kernel `MLX5_ROCE_VERSION_*`).
pub mod roce_version {
    pub const V1: u64 = 0x0;
    pub const V2: u64 = 0x2;
}

/// `roce_l3_type` values (PRM; kernel `MLX5_ROCE_L3_TYPE_*`).
pub mod roce_l3_type {
    pub const IPV4: u64 = 0x0;
    pub const IPV6: u64 = 0x1;
}
