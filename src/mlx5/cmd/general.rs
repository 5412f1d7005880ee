//! Device queries: capabilities and NOP.

use super::*;

// ---------------------------------------------------------------------------------------------
// Device queries.

/// QUERY_HCA_CAP: one capability page (`cap_type`, e.g. 0 general, 0x20 general 2, 0x24 DPA).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueryHcaCap {
    pub cap_type: u16,
    /// Current values (`true`) or maximum supported (`false`).
    pub current: bool,
}

impl QueryHcaCap {
    pub const GENERAL: u16 = 0x0;
    /// Ethernet offloads (`per_protocol_networking_offload_caps`).
    pub const ETHERNET_OFFLOADS: u16 = 0x1;
    /// Atomic operations (`atomic_caps`).
    pub const ATOMIC: u16 = 0x3;
    /// RoCE (`roce_caps`).
    pub const ROCE: u16 = 0x4;
    /// NIC flow tables (`flow_table_nic_cap`).
    pub const NIC_FLOW_TABLE: u16 = 0x7;
    /// Device memory (`device_mem_cap`).
    pub const DEVICE_MEMORY: u16 = 0xf;
    pub const GENERAL_2: u16 = 0x20;
    pub const DPA: u16 = crate::mlx5::layouts::DPA_CAP_TYPE;
}

impl Command for QueryHcaCap {
    const OPCODE: Opcode = Opcode::QUERY_HCA_CAP;
    type In = query_hca_cap_in::Layout;
    type Out = query_hca_cap_out::Layout;
    /// The capability page, 4096 bytes.
    type Output = Vec<u8>;
    fn op_mod(&self) -> u16 {
        (self.cap_type << 1) | u16::from(self.current)
    }
    fn encode(&self, _: &mut ViewMut<'_, Self::In>) -> Result<(), CmdError> {
        if self.cap_type > 0x7fff {
            return Err(CmdError::InvalidAttr {
                opcode: Self::OPCODE,
                what: format!("cap_type {:#x} > 0x7fff", self.cap_type),
            });
        }
        Ok(())
    }
    fn decode(&self, v: View<'_, Self::Out>) -> Result<Vec<u8>, CmdError> {
        let off = (query_hca_cap_out::capability
            .at(0)
            .map_or(0x80, |f| f.offset())
            / 8) as usize;
        Ok(v.bytes()
            .get(off..Self::Out::SIZE_BYTES)
            .unwrap_or_default()
            .to_vec())
    }
}

/// NOP: the cheapest round trip to firmware.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Nop;

command! {
    Nop: NOP, nop_in -> mbox_out;
    fn encode(&self, _: &mut ViewMut<'_, Self::In>) -> Result<(), CmdError> {
        Ok(())
    }
}
