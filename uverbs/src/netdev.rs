//! The port's Linux network interface: what `mlx5_core` registers beside the RDMA device on a
//! real NIC (`/sys/class/infiniband/mlx5_0/device/net/<ifname>`).
//!
//! Programs that drive the NIC themselves still look the interface up: DPDK's mlx5 driver
//! finds it by that sysfs directory (`mlx5_get_ifname_sysfs`), takes its index
//! (`if_nametoindex`) and reads the MAC, MTU and link state from it with ioctls and
//! `NETLINK_ROUTE`. The runner gives the model's port one: a TAP interface with the port's MAC
//! and IPv4 address (a /32), up, held open for the program's life (a TAP has carrier only while
//! a descriptor is attached) and gone with the runner. rdma-core's tests read the port's MAC and
//! address from it (`ip addr` of `device/net/*`). Like the netdev of a real NIC, it carries none
//! of the frames the program sends on its own queues: those stay on the model's port (loopback
//! or `--link`).
//!
//! The interface lives in the runner's network namespace, so that two runners linked over
//! `127.0.0.1` still reach each other; IPv6 is disabled on it, so the kernel sends nothing from
//! it.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use mlx5_sim::port::tap::{Tap, TapError};

/// The name template: the kernel replaces `%d` with the first free number.
pub const NAME_TEMPLATE: &str = "mlx5sim%d";

/// Why the interface could not be made.
#[derive(Debug, thiserror::Error)]
pub enum NetdevError {
    #[error("TAP interface: {0}")]
    Tap(#[from] TapError),
    #[error("{what} on {ifname}: {err}")]
    Ioctl {
        what: &'static str,
        ifname: String,
        err: io::Error,
    },
}

/// The port's interface; removed when dropped.
#[derive(Debug)]
pub struct Netdev {
    tap: Tap,
}

impl Netdev {
    /// Creates the interface with the port's MAC and IPv4 address (a /32: the address RoCE v2
    /// GID 1 is made from, as a kernel makes a port's GIDs from its netdev's addresses) and
    /// brings it up.
    ///
    /// # Errors
    /// [`NetdevError::Tap`] without `/dev/net/tun` or `CAP_NET_ADMIN`; [`NetdevError::Ioctl`]
    /// when the MAC, the address or the flags could not be set.
    pub fn create(mac: [u8; 6], ip: std::net::Ipv4Addr) -> Result<Netdev, NetdevError> {
        let tap = Tap::open(NAME_TEMPLATE)?;
        let dev = Netdev { tap };
        let name = dev.name().to_owned();
        // Best effort: without IPv6 the kernel sends no router or neighbour solicitations from
        // the interface. A kernel without IPv6 has no such file.
        let _ = std::fs::write(
            format!("/proc/sys/net/ipv6/conf/{name}/disable_ipv6"),
            "1\n",
        );
        let sock = inet_socket().map_err(|err| NetdevError::Ioctl {
            what: "socket(AF_INET)",
            ifname: name.clone(),
            err,
        })?;
        let mut req = ifreq(&name);
        // SAFETY: writing the `ifru_hwaddr` member of a zeroed ifreq; the union is plain data.
        unsafe {
            req.ifr_ifru.ifru_hwaddr.sa_family = libc::ARPHRD_ETHER;
            for (d, s) in req.ifr_ifru.ifru_hwaddr.sa_data.iter_mut().zip(mac) {
                *d = s as libc::c_char;
            }
        }
        ioctl(&sock, libc::SIOCSIFHWADDR, &mut req, "SIOCSIFHWADDR", &name)?;
        for (request, what, addr) in [
            (libc::SIOCSIFADDR, "SIOCSIFADDR", ip),
            (
                libc::SIOCSIFNETMASK,
                "SIOCSIFNETMASK",
                std::net::Ipv4Addr::BROADCAST,
            ),
        ] {
            let mut req = ifreq(&name);
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: 0,
                sin_addr: libc::in_addr {
                    s_addr: u32::from_ne_bytes(addr.octets()),
                },
                sin_zero: [0; 8],
            };
            // SAFETY: `sockaddr_in` fits the `ifru_addr` member (a `sockaddr`, 16 bytes) and is
            // plain data; the union member is written whole.
            unsafe {
                std::ptr::write_unaligned(
                    (&raw mut req.ifr_ifru.ifru_addr).cast::<libc::sockaddr_in>(),
                    sin,
                );
            }
            ioctl(&sock, request, &mut req, what, &name)?;
        }
        let mut req = ifreq(&name);
        ioctl(&sock, libc::SIOCGIFFLAGS, &mut req, "SIOCGIFFLAGS", &name)?;
        // SAFETY: SIOCGIFFLAGS filled the `ifru_flags` member.
        unsafe { req.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short };
        ioctl(&sock, libc::SIOCSIFFLAGS, &mut req, "SIOCSIFFLAGS", &name)?;
        // Best effort: the port's rate (a TAP reports 10 Mb/s until told otherwise; kernels
        // whose TAP has no settable link settings keep that).
        let _ = set_speed(&sock, &name, SPEED_MBPS);
        Ok(dev)
    }

    /// The interface's name (`mlx5sim0`, ...).
    pub fn name(&self) -> &str {
        self.tap.name()
    }
}

/// The port's rate as the netdev reports it: 200 Gb/s, as the RDMA port's `rate` says
/// (`crate::sysfs`).
pub const SPEED_MBPS: u32 = 200_000;

/// `struct ethtool_cmd` (Linux `include/uapi/linux/ethtool.h`), the legacy settings ioctl's
/// argument: 44 bytes.
#[repr(C)]
#[derive(Default)]
struct EthtoolCmd {
    cmd: u32,
    supported: u32,
    advertising: u32,
    speed: u16,
    duplex: u8,
    port: u8,
    phy_address: u8,
    transceiver: u8,
    autoneg: u8,
    mdio_support: u8,
    maxtxpkt: u32,
    maxrxpkt: u32,
    speed_hi: u16,
    eth_tp_mdix: u8,
    eth_tp_mdix_ctrl: u8,
    lp_advertising: u32,
    reserved: [u32; 2],
}
const _: () = assert!(std::mem::size_of::<EthtoolCmd>() == 44);

const ETHTOOL_GSET: u32 = 0x1;
const ETHTOOL_SSET: u32 = 0x2;

/// Reads the interface's settings, sets `mbps` full duplex, writes them back (`SIOCETHTOOL`).
fn set_speed(sock: &OwnedFd, ifname: &str, mbps: u32) -> Result<(), NetdevError> {
    let mut cmd = EthtoolCmd {
        cmd: ETHTOOL_GSET,
        ..Default::default()
    };
    let mut req = ifreq(ifname);
    req.ifr_ifru.ifru_data = (&raw mut cmd).cast();
    ioctl(sock, libc::SIOCETHTOOL, &mut req, "ETHTOOL_GSET", ifname)?;
    cmd.cmd = ETHTOOL_SSET;
    cmd.speed = mbps as u16;
    cmd.speed_hi = (mbps >> 16) as u16;
    cmd.duplex = 1; // DUPLEX_FULL
    let mut req = ifreq(ifname);
    req.ifr_ifru.ifru_data = (&raw mut cmd).cast();
    ioctl(sock, libc::SIOCETHTOOL, &mut req, "ETHTOOL_SSET", ifname)
}

fn inet_socket() -> io::Result<OwnedFd> {
    // SAFETY: socket(2) with constant arguments; the result is checked.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` is a new descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn ifreq(name: &str) -> libc::ifreq {
    // SAFETY: `ifreq` is plain data (a name and a union of plain members); all-zero is valid.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (d, s) in req
        .ifr_name
        .iter_mut()
        .zip(name.bytes().take(libc::IFNAMSIZ - 1))
    {
        *d = s as libc::c_char;
    }
    req
}

fn ioctl(
    sock: &OwnedFd,
    request: libc::Ioctl,
    req: &mut libc::ifreq,
    what: &'static str,
    ifname: &str,
) -> Result<(), NetdevError> {
    // SAFETY: `req` is a live `struct ifreq` with a NUL-terminated name; the interface ioctls
    // named here read and write only that struct, and for SIOCETHTOOL the live `EthtoolCmd`
    // its data pointer names (the caller's, for the duration of this call).
    let rc = unsafe { libc::ioctl(sock.as_raw_fd(), request, req as *mut libc::ifreq) };
    if rc < 0 {
        return Err(NetdevError::Ioctl {
            what,
            ifname: ifname.to_owned(),
            err: io::Error::last_os_error(),
        });
    }
    Ok(())
}
