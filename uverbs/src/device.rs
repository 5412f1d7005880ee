//! What the device says of itself: QUERY_DEVICE, QUERY_PORT, the GID table, and how a
//! destination GID becomes a MAC. Values come from the model's capability pages (QUERY_HCA_CAP
//! through the context), computed as Linux `mlx5_ib_query_device` / `mlx5_query_port_roce`
//! compute them from a NIC's.
//!
//! The GID table is that of a port with one IPv4 address and RoCE v2 only: index 0 the
//! link-local `fe80::` GID of the port's MAC (EUI-64), index 1 `::ffff:a.b.c.d`. A real
//! BlueField-3 lists each address twice (RoCE v1 and v2, four entries); the model has no RoCE v1
//! datapath, so it lists none.

use std::net::Ipv4Addr;

use mlx5_dpa::devx::kernel::abi::write as w;
use mlx5_dpa::mlx5::layouts::cmd_hca_cap as c;
use mlx5_dpa::mlx5::View;
use nix::errno::Errno;

use crate::context::Ucontext;

/// GIDs in the table.
pub const GID_TABLE_LEN: u32 = 2;
/// `IB_UVERBS_GID_TYPE_ROCE_V2` (`ib_user_ioctl_verbs.h`).
pub const GID_TYPE_ROCE_V2: u32 = 2;
/// P_Keys in the table (RoCE ports have the default one only).
pub const PKEY_TABLE_LEN: u16 = 1;
/// Largest send / receive WQE the device takes (`max_wqe_sz_sq` / `_rq`).
pub const MAX_WQE_SZ: u32 = 1024;
/// log2 of the largest SRQ.
pub const LOG_MAX_SRQ_SZ: u32 = 15;
/// `IB_PORT_CM_SUP` | `IB_PORT_IP_BASED_GIDS`: what `mlx5_query_port_roce` reports.
pub const PORT_CAP_FLAGS: u32 = (1 << 16) | (1 << 26);
/// The firmware version the model reports (a BlueField-3 release train: 32.x).
pub const FW_VER: (u64, u64, u64) = (32, 41, 1000);
/// `PCI_VENDOR_ID_MELLANOX` as verbs report it (`vendor_id`), and the BlueField-3's part.
pub const VENDOR_ID: u32 = 0x02c9;
pub const VENDOR_PART_ID: u32 = 0xa2dc;

/// The general capability page, read through the context.
pub struct Caps {
    page: Vec<u8>,
}

impl Caps {
    /// The context's general capability page (read once, when it was made).
    ///
    /// # Errors
    /// `EINVAL` before GET_CONTEXT.
    pub fn of(ctx: &Ucontext) -> Result<Caps, Errno> {
        Ok(Caps {
            page: ctx.caps()?.raw_general.clone(),
        })
    }

    /// A field of `cmd_hca_cap`.
    pub fn get<T>(&self, f: mlx5_dpa::mlx5::Field<c::Layout, T>) -> u64 {
        View::<c::Layout>::new(&self.page).map_or(0, |v| v.get(f))
    }

    fn pow<T>(&self, f: mlx5_dpa::mlx5::Field<c::Layout, T>) -> u32 {
        1u32.checked_shl(self.get(f) as u32).unwrap_or(u32::MAX)
    }
}

/// The EUI-64 of a MAC (the model's, [`mlx5_sim::eui64`]).
pub use mlx5_sim::eui64;

/// The port's GIDs: the model's own table ([`mlx5_sim::gid_table`]).
pub fn gids(ip: Ipv4Addr, mac: [u8; 6]) -> [[u8; 16]; 2] {
    mlx5_sim::gid_table(ip.octets(), mac)
}

/// The port's address (from the model).
pub fn port_address(ctx: &Ucontext) -> (Ipv4Addr, [u8; 6]) {
    let a = ctx.dev.port_address();
    (Ipv4Addr::from(a.ipv4), a.mac)
}

/// The MAC a destination GID is reached at (`ib_resolve_eth_dmac`): the port's own for its own
/// GIDs; for an IPv4-mapped GID the MAC every runner derives from an address
/// ([`crate::config::mac_of`]); for a link-local GID the MAC in its EUI-64. `None`: unreachable.
pub fn resolve_dmac(ctx: &Ucontext, dgid: &[u8; 16]) -> Option<[u8; 6]> {
    let (ip, mac) = port_address(ctx);
    if gids(ip, mac).contains(dgid) {
        return Some(mac);
    }
    if dgid[..10].iter().all(|&b| b == 0) && dgid[10] == 0xff && dgid[11] == 0xff {
        let peer = Ipv4Addr::new(dgid[12], dgid[13], dgid[14], dgid[15]);
        return Some(crate::config::mac_of(peer));
    }
    if dgid[0] == 0xfe && dgid[1] & 0xc0 == 0x80 && dgid[11] == 0xff && dgid[12] == 0xfe {
        return Some([dgid[8] ^ 2, dgid[9], dgid[10], dgid[13], dgid[14], dgid[15]]);
    }
    None
}

/// `ib_uverbs_query_device_resp` of the device (`mlx5_ib_query_device`).
pub fn device_attr(ctx: &Ucontext) -> Result<w::ib_uverbs_query_device_resp, Errno> {
    let k = Caps::of(ctx)?;
    let (_, mac) = port_address(ctx);
    let guid = u64::from_be_bytes(eui64(mac));
    let max_rq_sg = MAX_WQE_SZ / 16;
    // A send WQE: control and remote-address segments, then data segments (`mlx5_ib`'s
    // `max_sq_sg` from a 512-byte descriptor).
    let max_sq_sg = (512 - 16 - 16) / 16;
    let max_qp = k.pow(c::log_max_qp);
    let rd_res = k.pow(c::log_max_ra_res_qp);
    let (maj, min, sub) = FW_VER;
    Ok(w::ib_uverbs_query_device_resp {
        fw_ver: (maj << 32) | (min << 16) | sub,
        node_guid: guid.to_be(),
        sys_image_guid: guid.to_be(),
        max_mr_size: u64::MAX,
        page_size_cap: !0xfffu64,
        vendor_id: VENDOR_ID,
        vendor_part_id: VENDOR_PART_ID,
        hw_ver: 0,
        max_qp,
        max_qp_wr: k.pow(c::log_max_qp_sz),
        // IB_DEVICE_BAD_PKEY_CNTR | BAD_QKEY_CNTR | CHANGE_PHY_PORT | PORT_ACTIVE_EVENT |
        // SYS_IMAGE_GUID | RC_RNR_NAK_GEN (`enum ib_device_cap_flags`).
        device_cap_flags: (1 << 1) | (1 << 2) | (1 << 5) | (1 << 10) | (1 << 11) | (1 << 12),
        max_sge: max_rq_sg.min(max_sq_sg),
        max_sge_rd: max_sq_sg,
        max_cq: k.pow(c::log_max_cq),
        max_cqe: k.pow(c::log_max_cq_sz) - 1,
        max_mr: k.pow(c::log_max_mkey),
        max_pd: k.pow(c::log_max_pd),
        max_qp_rd_atom: rd_res,
        max_ee_rd_atom: 0,
        max_res_rd_atom: rd_res.saturating_mul(max_qp),
        max_qp_init_rd_atom: k.pow(c::log_max_ra_req_qp),
        max_ee_init_rd_atom: 0,
        atomic_cap: 1, // IB_ATOMIC_HCA
        max_ee: 0,
        max_rdd: 0,
        max_mw: 0,
        max_raw_ipv6_qp: 0,
        max_raw_ethy_qp: 0,
        max_mcast_grp: 0,
        max_mcast_qp_attach: 0,
        max_total_mcast_qp_attach: 0,
        max_ah: i32::MAX as u32,
        max_fmr: 0,
        max_map_per_fmr: 0,
        max_srq: k.pow(c::log_max_srq),
        max_srq_wr: (1 << LOG_MAX_SRQ_SZ) - 1,
        max_srq_sge: max_rq_sg - 1,
        max_pkeys: PKEY_TABLE_LEN,
        local_ca_ack_delay: 16,
        phys_port_cnt: 1,
        reserved: [0; 4],
    })
}

/// `ib_uverbs_ex_query_device_resp` (the base, and what the device has of the extensions).
pub fn device_attr_ex(ctx: &Ucontext) -> Result<w::ib_uverbs_ex_query_device_resp, Errno> {
    let base = device_attr(ctx)?;
    let k = Caps::of(ctx)?;
    Ok(w::ib_uverbs_ex_query_device_resp {
        base,
        timestamp_mask: (1 << 63) - 1,
        hca_core_clock: k.get(c::device_frequency_mhz) * 1000,
        max_cq_moderation_count: u16::MAX,
        max_cq_moderation_period: 4095,
        // RSS through receive WQ indirection tables (RQTs), as `mlx5_ib_query_device` states
        // them from the general capabilities; DPDK sizes its RQTs by the table size.
        rss_supported_qpts: 1 << 8, // IB_QPT_RAW_PACKET
        rss_max_rwq_indirection_tables: k.pow(c::log_max_rqt),
        rss_max_rwq_indirection_table_size: k.pow(c::log_max_rqt_size),
        max_wq_type_rq: k.pow(c::log_max_rq),
        ..Default::default()
    })
}

/// What QUERY_PORT reports.
pub struct PortInfo {
    pub active: bool,
}

impl PortInfo {
    /// Port `n` (only 1 exists).
    ///
    /// # Errors
    /// `EINVAL` for another port number.
    pub fn of(_ctx: &Ucontext, n: u8) -> Result<PortInfo, Errno> {
        if n != 1 {
            return Err(Errno::EINVAL);
        }
        Ok(PortInfo { active: true })
    }

    /// `ib_uverbs_query_port_resp` (`mlx5_query_port_roce`).
    pub fn resp(&self) -> w::ib_uverbs_query_port_resp {
        w::ib_uverbs_query_port_resp {
            port_cap_flags: PORT_CAP_FLAGS,
            max_msg_sz: 1 << 30,
            bad_pkey_cntr: 0,
            qkey_viol_cntr: 0,
            gid_tbl_len: GID_TABLE_LEN,
            pkey_tbl_len: PKEY_TABLE_LEN,
            lid: 0,
            sm_lid: 0,
            // IB_PORT_ACTIVE / IB_PORT_DOWN
            state: if self.active { 4 } else { 1 },
            max_mtu: 5,    // IB_MTU_4096
            active_mtu: 3, // IB_MTU_1024: what an Ethernet MTU of 1500 leaves (iboe_get_mtu)
            lmc: 0,
            max_vl_num: 1,
            sm_sl: 0,
            subnet_timeout: 0,
            init_type_reply: 0,
            active_width: 2,  // IB_WIDTH_4X
            active_speed: 64, // IB_SPEED_HDR: 4X HDR, 200 Gb/s
            // IB_PORT_PHYS_STATE_LINK_UP / _DISABLED
            phys_state: if self.active { 5 } else { 3 },
            link_layer: 2, // IB_LINK_LAYER_ETHERNET
            flags: 1,      // IB_UVERBS_QPF_GRH_REQUIRED
            reserved: 0,
        }
    }
}

/// `ib_uverbs_gid_entry` for index `i` of port 1.
pub fn gid_entry(ctx: &Ucontext, i: u32) -> Option<w::ib_uverbs_gid_entry> {
    let (ip, mac) = port_address(ctx);
    let g = *gids(ip, mac).get(i as usize)?;
    let mut gid = [0u64; 2];
    gid[0] = u64::from_ne_bytes(g[..8].try_into().ok()?);
    gid[1] = u64::from_ne_bytes(g[8..].try_into().ok()?);
    Some(w::ib_uverbs_gid_entry {
        gid,
        gid_index: i,
        port_num: 1,
        gid_type: GID_TYPE_ROCE_V2,
        netdev_ifindex: 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gids_and_their_macs() {
        let ip = Ipv4Addr::new(10, 1, 2, 3);
        let mac = crate::config::mac_of(ip);
        let [ll, v4] = gids(ip, mac);
        assert_eq!(&ll[..2], &[0xfe, 0x80]);
        assert_eq!(&ll[8..], &[0x00, 0x00, 10, 0xff, 0xfe, 1, 2, 3]);
        assert_eq!(&v4[10..], &[0xff, 0xff, 10, 1, 2, 3]);
    }
}
