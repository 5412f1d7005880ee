//! Port addressing: the NIC vport context and the RoCE address table.

use super::*;

// ---------------------------------------------------------------------------------------------
// Port addressing.

/// What QUERY_NIC_VPORT_CONTEXT tells about the function's own port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NicVport {
    /// `permanent_address`: the function's MAC.
    pub mac: [u8; 6],
    /// `mtu`: the port MTU in bytes (Ethernet payload).
    pub mtu: u16,
    /// `roce_en`.
    pub roce_en: bool,
}

/// QUERY_NIC_VPORT_CONTEXT of the caller's own vport.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueryNicVportContext;

command! {
    QueryNicVportContext: QUERY_NIC_VPORT_CONTEXT, query_nic_vport_context_in -> query_nic_vport_context_out => NicVport;
    fn encode(&self, _: &mut ViewMut<'_, Self::In>) -> Result<(), CmdError> {
        Ok(())
    }
    fn decode(&self, v: View<'_, Self::Out>) -> Result<NicVport, CmdError> {
        let c = query_nic_vport_context_out::nic_vport_context;
        let hi = v.value(c.at(nic_vport_context::permanent_address_mac_addr_47_32));
        let lo = v.value(c.at(nic_vport_context::permanent_address_mac_addr_31_0));
        let mut mac = [0u8; 6];
        mac[..2].copy_from_slice(&hi.to_be_bytes());
        mac[2..].copy_from_slice(&lo.to_be_bytes());
        Ok(NicVport {
            mac,
            mtu: v.value(c.at(nic_vport_context::mtu)),
            roce_en: v.get(c.at(nic_vport_context::roce_en)) == 1,
        })
    }
}

/// One entry of the RoCE address (GID) table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RoceAddress {
    /// `source_l3_address`: the GID (an IPv4 address is mapped as `::ffff:a.b.c.d`).
    pub gid: [u8; 16],
    pub mac: [u8; 6],
    /// `roce_version`: 0 = RoCE v1, 2 = RoCE v2.
    pub roce_version: u8,
    /// `roce_l3_type`: 0 = IPv4, 1 = IPv6.
    pub roce_l3_type: u8,
    /// `vlan_valid` and `vlan_id`.
    pub vlan: Option<u16>,
}

/// QUERY_ROCE_ADDRESS: reads GID table entry `index`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueryRoceAddress(pub u16);

command! {
    QueryRoceAddress: QUERY_ROCE_ADDRESS, query_roce_address_in -> query_roce_address_out => RoceAddress;
    fn encode(&self, v: &mut ViewMut<'_, Self::In>) -> Result<(), CmdError> {
        v.set(query_roce_address_in::roce_address_index, u64::from(self.0));
        Ok(())
    }
    fn decode(&self, v: View<'_, Self::Out>) -> Result<RoceAddress, CmdError> {
        let a = query_roce_address_out::roce_address;
        let mut gid = [0u8; 16];
        for (i, b) in gid.iter_mut().enumerate() {
            if let Some(f) = roce_addr_layout::source_l3_address.at(i as u32) {
                *b = v.get(a.at(f)) as u8;
            }
        }
        let hi = v.value(a.at(roce_addr_layout::source_mac_47_32));
        let lo = v.value(a.at(roce_addr_layout::source_mac_31_0));
        let mut mac = [0u8; 6];
        mac[..2].copy_from_slice(&hi.to_be_bytes());
        mac[2..].copy_from_slice(&lo.to_be_bytes());
        Ok(RoceAddress {
            gid,
            mac,
            roce_version: v.value(a.at(roce_addr_layout::roce_version)),
            roce_l3_type: v.value(a.at(roce_addr_layout::roce_l3_type)),
            vlan: (v.get(a.at(roce_addr_layout::vlan_valid)) == 1)
                .then(|| v.value(a.at(roce_addr_layout::vlan_id))),
        })
    }
}
