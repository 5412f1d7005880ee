//! Flow steering: tables, groups, entries and the match parameters.
//!
//! Declarations generated once from the named public header by `tools/ifc-check/gen_layout.py`,
//! then reviewed; `tests/driver/ifc_reference.rs` checks every field against the public headers.

use crate::layout;

layout! {
    /// `flow_table_context`; offsets and widths as in rdma-core `providers/mlx5/mlx5_ifc.h`.
    pub flow_table_context: 0x140 {
        reformat_en @ 0x0 : 0x1,
        decap_en @ 0x1 : 0x1,
        sw_owner @ 0x2 : 0x1,
        termination_table @ 0x3 : 0x1,
        table_miss_action @ 0x4 : 0x4,
        level @ 0x8 : 0x8,
        log_size @ 0x18 : 0x8,
        table_miss_id @ 0x28 : 0x18,
        lag_master_next_table_id @ 0x48 : 0x18,
        sw_owner_icm_root_1 @ 0xc0 : 0x40,
        sw_owner_icm_root_0 @ 0x100 : 0x40,
    }
}

layout! {
    /// `create_flow_table_in`; offsets and widths as in rdma-core `providers/mlx5/mlx5_ifc.h`.
    pub create_flow_table_in: 0x200 {
        opcode @ 0x0 : 0x10,
        uid @ 0x10 : 0x10,
        op_mod @ 0x30 : 0x10,
        other_vport @ 0x40 : 0x1,
        vport_number @ 0x50 : 0x10,
        table_type @ 0x80 : 0x8,
        flow_table_context @ 0xc0 : flow_table_context,
    }
}

layout! {
    /// `create_flow_table_out`; offsets and widths as in rdma-core `providers/mlx5/mlx5_ifc.h`.
    pub create_flow_table_out: 0x80 {
        status @ 0x0 : 0x8,
        icm_address_63_40 @ 0x8 : 0x18,
        syndrome @ 0x20 : 0x20,
        icm_address_39_32 @ 0x40 : 0x8,
        table_id @ 0x48 : 0x18,
        icm_address_31_0 @ 0x60 : 0x20,
    }
}

layout! {
    /// `fte_match_set_lyr_2_4`; offsets and widths as in DPDK `drivers/common/mlx5/mlx5_prm.h`.
    pub fte_match_set_lyr_2_4: 0x200 {
        smac_47_16 @ 0x0 : 0x20,
        smac_15_0 @ 0x20 : 0x10,
        ethertype @ 0x30 : 0x10,
        dmac_47_16 @ 0x40 : 0x20,
        dmac_15_0 @ 0x60 : 0x10,
        first_prio @ 0x70 : 0x3,
        first_cfi @ 0x73 : 0x1,
        first_vid @ 0x74 : 0xc,
        ip_protocol @ 0x80 : 0x8,
        ip_dscp @ 0x88 : 0x6,
        ip_ecn @ 0x8e : 0x2,
        cvlan_tag @ 0x90 : 0x1,
        svlan_tag @ 0x91 : 0x1,
        frag @ 0x92 : 0x1,
        ip_version @ 0x93 : 0x4,
        tcp_flags @ 0x97 : 0x9,
        tcp_sport @ 0xa0 : 0x10,
        tcp_dport @ 0xb0 : 0x10,
        ipv4_ihl @ 0xd0 : 0x4,
        l3_ok @ 0xd4 : 0x1,
        l4_ok @ 0xd5 : 0x1,
        ipv4_checksum_ok @ 0xd6 : 0x1,
        l4_checksum_ok @ 0xd7 : 0x1,
        ip_ttl_hoplimit @ 0xd8 : 0x8,
        udp_sport @ 0xe0 : 0x10,
        udp_dport @ 0xf0 : 0x10,
        src_ipv4_src_ipv6 @ 0x100 : [0x8; 0x10],
        dst_ipv4_dst_ipv6 @ 0x180 : [0x8; 0x10],
    }
}

layout! {
    /// `fte_match_set_misc`; offsets and widths as in DPDK `drivers/common/mlx5/mlx5_prm.h`.
    pub fte_match_set_misc: 0x200 {
        gre_c_present @ 0x0 : 0x1,
        gre_k_present @ 0x2 : 0x1,
        gre_s_present @ 0x3 : 0x1,
        source_vhci_port @ 0x4 : 0x4,
        source_sqn @ 0x8 : 0x18,
        source_port @ 0x30 : 0x10,
        outer_second_prio @ 0x40 : 0x3,
        outer_second_cfi @ 0x43 : 0x1,
        outer_second_vid @ 0x44 : 0xc,
        inner_second_prio @ 0x50 : 0x3,
        inner_second_cfi @ 0x53 : 0x1,
        inner_second_vid @ 0x54 : 0xc,
        outer_second_cvlan_tag @ 0x60 : 0x1,
        inner_second_cvlan_tag @ 0x61 : 0x1,
        outer_second_svlan_tag @ 0x62 : 0x1,
        inner_second_svlan_tag @ 0x63 : 0x1,
        gre_protocol @ 0x70 : 0x10,
        gre_key_h @ 0x80 : 0x18,
        gre_key_l @ 0x98 : 0x8,
        vxlan_vni @ 0xa0 : 0x18,
        bth_opcode @ 0xb8 : 0x8,
        geneve_vni @ 0xc0 : 0x18,
        lag_rx_port_affinity @ 0xd8 : 0x4,
        geneve_tlv_option_0_exist @ 0xde : 0x1,
        geneve_oam @ 0xdf : 0x1,
        outer_ipv6_flow_label @ 0xec : 0x14,
        inner_ipv6_flow_label @ 0x10c : 0x14,
        geneve_opt_len @ 0x12a : 0x6,
        geneve_protocol_type @ 0x130 : 0x10,
        bth_dst_qp @ 0x148 : 0x18,
        inner_esp_spi @ 0x160 : 0x20,
        outer_esp_spi @ 0x180 : 0x20,
    }
}

layout! {
    /// `fte_match_param`; offsets and widths as in DPDK `drivers/common/mlx5/mlx5_prm.h`.
    pub fte_match_param: 0x1000 {
        outer_headers @ 0x0 : fte_match_set_lyr_2_4,
        misc_parameters @ 0x200 : fte_match_set_misc,
        inner_headers @ 0x400 : fte_match_set_lyr_2_4,
        misc_parameters_2 @ 0x600 : [0x20; 0x10],
        misc_parameters_3 @ 0x800 : [0x20; 0x10],
        misc_parameters_4 @ 0xa00 : [0x20; 0x10],
        misc_parameters_5 @ 0xc00 : [0x20; 0x10],
    }
}

layout! {
    /// `create_flow_group_in`; offsets and widths as in snap-rdma `src/mlx5_ifc.h`.
    pub create_flow_group_in: 0x2000 {
        opcode @ 0x0 : 0x10,
        uid @ 0x10 : 0x10,
        op_mod @ 0x30 : 0x10,
        other_vport @ 0x40 : 0x1,
        vport_number @ 0x50 : 0x10,
        table_type @ 0x80 : 0x8,
        table_id @ 0xa8 : 0x18,
        source_eswitch_owner_vhca_id_valid @ 0xc0 : 0x1,
        start_flow_index @ 0xe0 : 0x20,
        end_flow_index @ 0x120 : 0x20,
        match_criteria_enable @ 0x1f8 : 0x8,
        match_criteria @ 0x200 : fte_match_param,
    }
}

layout! {
    /// `create_flow_group_out`; offsets and widths as in rdma-core `providers/mlx5/mlx5_ifc.h`.
    pub create_flow_group_out: 0x80 {
        status @ 0x0 : 0x8,
        syndrome @ 0x20 : 0x20,
        group_id @ 0x48 : 0x18,
    }
}

layout! {
    /// `dest_format_struct`; offsets and widths as in DPDK `drivers/common/mlx5/mlx5_prm.h`.
    pub dest_format_struct: 0x40 {
        destination_type @ 0x0 : 0x8,
        destination_id @ 0x8 : 0x18,
    }
}

layout! {
    /// `flow_context`; offsets and widths as in snap-rdma `src/mlx5_ifc.h`.
    pub flow_context: 0x1800 {
        push_vlan @ 0x0 : 0x20,
        group_id @ 0x20 : 0x20,
        flow_tag @ 0x48 : 0x18,
        action @ 0x70 : 0x10,
        extended_destination @ 0x80 : 0x1,
        flow_source @ 0x82 : 0x2,
        destination_list_size @ 0x88 : 0x18,
        flow_counter_list_size @ 0xa8 : 0x18,
        packet_reformat_id @ 0xc0 : 0x20,
        modify_header_id @ 0xe0 : 0x20,
        push_vlan_2 @ 0x100 : 0x20,
        match_value @ 0x200 : fte_match_param,
    }
}

layout! {
    /// `set_fte_in`; offsets and widths as in DPDK `drivers/common/mlx5/mlx5_prm.h`.
    pub set_fte_in: 0x1a00 {
        opcode @ 0x0 : 0x10,
        uid @ 0x10 : 0x10,
        op_mod @ 0x30 : 0x10,
        other_vport @ 0x40 : 0x1,
        vport_number @ 0x50 : 0x10,
        table_type @ 0x80 : 0x8,
        table_id @ 0xa8 : 0x18,
        ignore_flow_level @ 0xc0 : 0x1,
        modify_enable_mask @ 0xd8 : 0x8,
        flow_index @ 0x100 : 0x20,
        flow_context @ 0x200 : flow_context,
        /// `flow_context.destination[]`: `dest_format_struct` entries after the fixed part.
        destination @ 0x1a00 : [0x40; flex],
    }
}

layout! {
    /// `set_fte_out`; offsets and widths as in rdma-core `providers/mlx5/mlx5_ifc.h`.
    pub set_fte_out: 0x80 {
        status @ 0x0 : 0x8,
        syndrome @ 0x20 : 0x20,
    }
}

layout! {
    /// `set_flow_table_root_in`; offsets and widths as in snap-rdma `src/mlx5_ifc.h`.
    pub set_flow_table_root_in: 0x200 {
        opcode @ 0x0 : 0x10,
        uid @ 0x10 : 0x10,
        op_mod @ 0x30 : 0x10,
        other_vport @ 0x40 : 0x1,
        vport_number @ 0x50 : 0x10,
        table_type @ 0x80 : 0x8,
        table_id @ 0xa8 : 0x18,
        underlay_qpn @ 0xc8 : 0x18,
    }
}
