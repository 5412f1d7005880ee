//! Port addressing commands: QUERY_NIC_VPORT_CONTEXT and QUERY_ROCE_ADDRESS.
//!
//! The model has one port with one address (the profile's MAC and IPv4 address); its GID
//! table has two entries, both RoCE v2: index 0 the link-local `fe80::` GID of the MAC's EUI-64
//! (IPv6), index 1 the IPv4-mapped address `::ffff:a.b.c.d` ([`IPV4_GID_INDEX`]). RC traffic runs
//! from index 1: the model carries RoCE v2 over IPv4 only. (A BlueField-3 lists each address
//! for RoCE v1 too; the model has no RoCE v1 datapath, so it lists none.)

use mlx5_dpa::mlx5::layouts as l;

use super::{inbox, outbox, Firmware};
use crate::check::{self, Check};
pub(crate) use crate::port::roce::{gid_ipv4, ipv4_gid};

/// Entries of the GID table.
pub const GID_TABLE_SIZE: u64 = 2;
/// The entry holding the port's IPv4 address (`::ffff:a.b.c.d`), the one RC and UD QPs send
/// from (declared with the wire format, which the datapath reads too).
pub use crate::port::roce::IPV4_GID_INDEX;

/// The port's GID table for its IPv4 address and MAC: index 0 the link-local `fe80::` GID of
/// the MAC's EUI-64, index [`IPV4_GID_INDEX`] the IPv4-mapped address. The uverbs server shows
/// the same table in sysfs and answers QUERY_GID from it.
pub fn gid_table(ipv4: [u8; 4], mac: [u8; 6]) -> [[u8; 16]; GID_TABLE_SIZE as usize] {
    let mut ll = [0u8; 16];
    ll[0] = 0xfe;
    ll[1] = 0x80;
    ll[8..].copy_from_slice(&eui64(mac));
    [ll, ipv4_gid(ipv4)]
}

/// The port MTU the vport context reports (Ethernet payload bytes).
pub(crate) const PORT_MTU: u64 = 1500;

/// The EUI-64 of a MAC (Linux `addrconf_addr_eui48`): the universal/local bit flipped,
/// `ff:fe` in the middle. The model's node and port GUID, and the link-local GID's low half.
pub fn eui64(mac: [u8; 6]) -> [u8; 8] {
    [
        mac[0] ^ 2,
        mac[1],
        mac[2],
        0xff,
        0xfe,
        mac[3],
        mac[4],
        mac[5],
    ]
}

impl Firmware {
    pub(super) fn query_nic_vport_context(&self, inb: &[u8], out: &mut [u8]) -> Result<(), Check> {
        use l::nic_vport_context as n;
        use l::query_nic_vport_context_in as m;
        let v = inbox::<m::Layout>(inb)?;
        if v.get(m::op_mod) != 0 {
            return Err(check::BAD_OP_MOD);
        }
        if v.get(m::other_vport) != 0 {
            return Err(check::OTHER_VPORT);
        }
        let mut o = outbox::<l::query_nic_vport_context_out::Layout>(out)?;
        let c = l::query_nic_vport_context_out::nic_vport_context;
        let mac = self.profile.mac;
        o.set(c.at(n::roce_en), 1);
        o.set(c.at(n::mtu), PORT_MTU);
        let guid = u64::from_be_bytes(eui64(mac));
        o.set(c.at(n::system_image_guid), guid);
        o.set(c.at(n::port_guid), guid);
        o.set(c.at(n::node_guid), guid);
        o.set(
            c.at(n::permanent_address_mac_addr_47_32),
            u64::from(u16::from_be_bytes([mac[0], mac[1]])),
        );
        o.set(
            c.at(n::permanent_address_mac_addr_31_0),
            u64::from(u32::from_be_bytes([mac[2], mac[3], mac[4], mac[5]])),
        );
        Ok(())
    }

    pub(super) fn query_roce_address(&self, inb: &[u8], out: &mut [u8]) -> Result<(), Check> {
        use l::query_roce_address_in as m;
        use l::roce_addr_layout as r;
        let v = inbox::<m::Layout>(inb)?;
        if v.get(m::op_mod) != 0 {
            return Err(check::BAD_OP_MOD);
        }
        let index = v.get(m::roce_address_index);
        if index >= GID_TABLE_SIZE {
            return Err(check::BAD_GID_INDEX);
        }
        let mut o = outbox::<l::query_roce_address_out::Layout>(out)?;
        let a = l::query_roce_address_out::roce_address;
        let ipv4 = index == u64::from(IPV4_GID_INDEX);
        let gid = gid_table(self.profile.ipv4, self.profile.mac)[index as usize];
        for (i, b) in gid.iter().enumerate() {
            if let Some(f) = r::source_l3_address.at(i as u32) {
                o.set(a.at(f), u64::from(*b));
            }
        }
        let mac = self.profile.mac;
        o.set(
            a.at(r::source_mac_47_32),
            u64::from(u16::from_be_bytes([mac[0], mac[1]])),
        );
        o.set(
            a.at(r::source_mac_31_0),
            u64::from(u32::from_be_bytes([mac[2], mac[3], mac[4], mac[5]])),
        );
        o.set(a.at(r::roce_version), l::roce_version::V2);
        o.set(
            a.at(r::roce_l3_type),
            if ipv4 {
                l::roce_l3_type::IPV4
            } else {
                l::roce_l3_type::IPV6
            },
        );
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gids_map_ipv4() {
        let g = ipv4_gid([10, 1, 2, 3]);
        assert_eq!(&g[..12], &[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff]);
        assert_eq!(gid_ipv4(&g), Some([10, 1, 2, 3]));
        assert_eq!(gid_ipv4(&[0; 16]), None);
        assert_eq!(
            u64::from_be_bytes(eui64([0x02, 0, 0x5e, 0, 0, 1])),
            0x0000_5eff_fe00_0001
        );
    }
}
