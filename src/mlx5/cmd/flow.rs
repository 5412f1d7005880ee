//! NIC receive flow steering: tables, groups, entries, the root.

use super::*;

// ---------------------------------------------------------------------------------------------
// Flow steering.

/// `table_type` NIC receive (PRM `FS_FT_NIC_RX`).
pub const FT_NIC_RX: u64 = 0x0;

/// CREATE_FLOW_TABLE (NIC RX).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CreateFlowTable {
    pub level: u8,
    pub log_size: u8,
}

command! {
    CreateFlowTable: CREATE_FLOW_TABLE, create_flow_table_in -> create_flow_table_out => u32;
    fn encode(&self, v: &mut ViewMut<'_, Self::In>) -> Result<(), CmdError> {
        let c = create_flow_table_in::flow_table_context;
        v.set(create_flow_table_in::table_type, FT_NIC_RX);
        v.set(c.at(flow_table_context::level), u64::from(self.level));
        v.set(c.at(flow_table_context::log_size), u64::from(self.log_size));
        Ok(())
    }
    fn decode(&self, v: View<'_, Self::Out>) -> Result<u32, CmdError> {
        Ok(v.value(create_flow_table_out::table_id))
    }
}

/// Outer-header match on the fields a simple receive steering needs. `None` = wildcard.
/// Used both as a group's criteria (which fields are matched) and as an entry's values.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OuterMatch {
    pub dmac: Option<[u8; 6]>,
    pub smac: Option<[u8; 6]>,
    pub ethertype: Option<u16>,
    pub ip_protocol: Option<u8>,
    pub dst_ipv4: Option<[u8; 4]>,
    pub udp_dport: Option<u16>,
}

/// `match_criteria_enable` bit for outer headers (PRM `MLX5_MATCH_OUTER_HEADERS`).
pub const MATCH_OUTER_HEADERS: u64 = 0x1;

fn encode_outer<L: Layout>(
    v: &mut ViewMut<'_, L>,
    p: crate::mlx5::layout::Nested<L, fte_match_param::Layout>,
    m: &OuterMatch,
    mask: bool,
) -> Result<(), CmdError> {
    let o = p.nested(fte_match_param::outer_headers);
    let val = |x: u64, all: u64| if mask { all } else { x };
    // A MAC address is split over a 32-bit (bits 47:16) and a 16-bit (15:0) field.
    let macs = [
        (
            m.dmac,
            fte_match_set_lyr_2_4::dmac_47_16,
            fte_match_set_lyr_2_4::dmac_15_0,
        ),
        (
            m.smac,
            fte_match_set_lyr_2_4::smac_47_16,
            fte_match_set_lyr_2_4::smac_15_0,
        ),
    ];
    for (mac, high, low) in macs {
        if let Some(a) = mac {
            let hi = u64::from(u16::from_be_bytes([a[0], a[1]]));
            let lo = u64::from(u32::from_be_bytes([a[2], a[3], a[4], a[5]]));
            v.set(o.at(high), val(hi << 16 | lo >> 16, 0xffff_ffff));
            v.set(o.at(low), val(lo & 0xffff, 0xffff));
        }
    }
    if let Some(e) = m.ethertype {
        v.set(
            o.at(fte_match_set_lyr_2_4::ethertype),
            val(u64::from(e), 0xffff),
        );
    }
    if let Some(p) = m.ip_protocol {
        v.set(
            o.at(fte_match_set_lyr_2_4::ip_protocol),
            val(u64::from(p), 0xff),
        );
    }
    if let Some(ip) = m.dst_ipv4 {
        // The IPv4 address is the last dword of the 128-bit dst_ipv4_dst_ipv6 field.
        let f = fte_match_set_lyr_2_4::dst_ipv4_dst_ipv6;
        for (i, b) in ip.iter().enumerate() {
            if let Some(e) = f.at(12 + i as u32) {
                v.set(o.at(e), val(u64::from(*b), 0xff));
            }
        }
    }
    if let Some(port) = m.udp_dport {
        v.set(
            o.at(fte_match_set_lyr_2_4::udp_dport),
            val(u64::from(port), 0xffff),
        );
    }
    Ok(())
}

/// CREATE_FLOW_GROUP of entries `start..=end` matching the fields set in `criteria`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CreateFlowGroup {
    pub table_id: u32,
    pub start_flow_index: u32,
    pub end_flow_index: u32,
    pub criteria: OuterMatch,
}

command! {
    CreateFlowGroup: CREATE_FLOW_GROUP, create_flow_group_in -> create_flow_group_out => u32;
    fn encode(&self, v: &mut ViewMut<'_, Self::In>) -> Result<(), CmdError> {
        let op = Self::OPCODE;
        if self.end_flow_index < self.start_flow_index {
            return Err(CmdError::InvalidAttr {
                opcode: op,
                what: "end_flow_index < start_flow_index".into(),
            });
        }
        v.set(create_flow_group_in::table_type, FT_NIC_RX);
        put(
            v,
            op,
            create_flow_group_in::table_id,
            u64::from(self.table_id),
            "table_id",
        )?;
        v.set(
            create_flow_group_in::start_flow_index,
            u64::from(self.start_flow_index),
        );
        v.set(
            create_flow_group_in::end_flow_index,
            u64::from(self.end_flow_index),
        );
        if self.criteria != OuterMatch::default() {
            v.set(
                create_flow_group_in::match_criteria_enable,
                MATCH_OUTER_HEADERS,
            );
        }
        encode_outer(
            v,
            create_flow_group_in::match_criteria,
            &self.criteria,
            true,
        )
    }
    fn decode(&self, v: View<'_, Self::Out>) -> Result<u32, CmdError> {
        Ok(v.value(create_flow_group_out::group_id))
    }
}

/// `flow_context.action` forward to destinations (PRM `MLX5_FLOW_CONTEXT_ACTION_FWD_DEST`).
pub const FLOW_ACTION_FWD_DEST: u64 = 0x4;
/// `flow_context.action` DROP (PRM `MLX5_FLOW_CONTEXT_ACTION_DROP`).
pub const FLOW_ACTION_DROP: u64 = 0x2;
/// `flow_context.action` COUNT: add the entry's frames to its flow counters (PRM).
pub const FLOW_ACTION_COUNT: u64 = 0x8;
/// `destination_type` TIR (PRM `MLX5_FLOW_DESTINATION_TYPE_TIR`).
pub const FLOW_DEST_TIR: u64 = 0x2;

/// SET_FLOW_TABLE_ENTRY forwarding matching packets to one TIR.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SetFte {
    pub table_id: u32,
    pub flow_index: u32,
    pub group_id: u32,
    pub value: OuterMatch,
    pub tirn: u32,
    /// A flow counter ([`AllocFlowCounter`]) the entry's frames count to (the COUNT action).
    pub flow_counter: Option<u32>,
}

command! {
    SetFte: SET_FLOW_TABLE_ENTRY, set_fte_in -> set_fte_out;
    fn inbox_extra(&self) -> usize {
        8 * (1 + usize::from(self.flow_counter.is_some()))
    }
    fn encode(&self, v: &mut ViewMut<'_, Self::In>) -> Result<(), CmdError> {
        let op = Self::OPCODE;
        let c = set_fte_in::flow_context;
        v.set(set_fte_in::table_type, FT_NIC_RX);
        put(
            v,
            op,
            set_fte_in::table_id,
            u64::from(self.table_id),
            "table_id",
        )?;
        v.set(set_fte_in::flow_index, u64::from(self.flow_index));
        v.set(c.at(flow_context::group_id), u64::from(self.group_id));
        let count = if self.flow_counter.is_some() {
            FLOW_ACTION_COUNT
        } else {
            0
        };
        v.set(c.at(flow_context::action), FLOW_ACTION_FWD_DEST | count);
        v.set(c.at(flow_context::destination_list_size), 1);
        v.set(
            c.at(flow_context::flow_counter_list_size),
            u64::from(self.flow_counter.is_some()),
        );
        encode_outer(v, c.nested(flow_context::match_value), &self.value, false)?;
        if self.tirn > 0xff_ffff {
            return Err(CmdError::InvalidAttr {
                opcode: op,
                what: format!("tirn {:#x} exceeds 24 bits", self.tirn),
            });
        }
        // dest_format_struct: destination_type[8] | destination_id[24], then 32 reserved bits;
        // then the counter list (flow_counter_list: flow_counter_id[32], 32 reserved bits).
        let tir = (FLOW_DEST_TIR << 56) | (u64::from(self.tirn) << 32);
        match self.flow_counter {
            Some(id) => put_flex(
                v,
                op,
                set_fte_in::destination,
                &[tir, u64::from(id) << 32],
            ),
            None => put_flex(v, op, set_fte_in::destination, &[tir]),
        }
    }
}

/// SET_FLOW_TABLE_ROOT (NIC RX).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SetFlowTableRoot {
    pub table_id: u32,
}

command! {
    SetFlowTableRoot: SET_FLOW_TABLE_ROOT, set_flow_table_root_in -> mbox_out;
    fn encode(&self, v: &mut ViewMut<'_, Self::In>) -> Result<(), CmdError> {
        v.set(set_flow_table_root_in::table_type, FT_NIC_RX);
        put(
            v,
            Self::OPCODE,
            set_flow_table_root_in::table_id,
            u64::from(self.table_id),
            "table_id",
        )
    }
}
