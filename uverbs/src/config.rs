//! What the runner tells the served device, through the environment the program inherits
//! (children too): the profile, the port's address, a link to another runner, a capture.
//!
//! The runner (`mlx5-dpa run`) writes these variables; the server reads them when the device is
//! first opened. Both sides use [`Config`], so a name or format is spelled once.

use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::PathBuf;

/// The device model's profile (`bf3`, `cx7`).
pub const ENV_PROFILE: &str = "MLX5_SIM_PROFILE";
/// The port's IPv4 address; the MAC is derived from it ([`mac_of`]).
pub const ENV_IP: &str = "MLX5_SIM_IP";
/// `udp:LOCAL,PEER`: the port's frames as UDP datagrams from LOCAL to PEER (`IP:PORT` each).
pub const ENV_LINK: &str = "MLX5_SIM_LINK";
/// A pcap file of every frame the port sends and receives.
pub const ENV_PCAP: &str = "MLX5_SIM_PCAP";
/// A DevX capture (`mlx5-dpa capture show / diff`) of every PRM mailbox the server sends to
/// the model on the program's behalf: what a kernel would send to firmware for its verbs.
pub const ENV_CAPTURE: &str = "MLX5_SIM_CAPTURE";
/// The name of the port's network interface (`device/net/<name>`; [`crate::netdev`]), when
/// the runner could make one.
pub const ENV_NETDEV: &str = "MLX5_SIM_NETDEV";
/// A file the served device writes its port counters to when the program exits (one `name
/// value` line each: `tx_frames`, `rx_delivered`, ...), to hold a program's own counts against
/// the model's.
pub const ENV_STATS: &str = "MLX5_SIM_STATS";
/// Non-empty: print each uverbs call the server refuses (unknown method, bad argument) to
/// standard error, for finding what a client needs.
pub const ENV_TRACE: &str = "MLX5_SIM_TRACE";

/// Prints a refusal when [`ENV_TRACE`] is set (read once).
pub(crate) fn trace(what: std::fmt::Arguments<'_>) {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    if *ON.get_or_init(|| std::env::var_os(ENV_TRACE).is_some_and(|v| !v.is_empty())) {
        eprintln!("mlx5-sim uverbs: {what}");
    }
}

/// The RDMA device name the served device has (`/sys/class/infiniband/mlx5_0`).
pub const DEVICE_NAME: &str = "mlx5_0";
/// The uverbs character device (`/dev/infiniband/uverbs0`).
pub const UVERBS_PATH: &str = "/dev/infiniband/uverbs0";
/// Its number: major 231 (`IB_UVERBS_MAJOR`), minor 192 (`IB_UVERBS_BASE_MINOR`), as Linux
/// `drivers/infiniband/core/uverbs_main.c` gives the first uverbs device.
pub const UVERBS_MAJOR: u32 = 231;
pub const UVERBS_MINOR: u32 = 192;

/// The default port address: TEST-NET-1 (RFC 5737), a network that exists nowhere.
pub const DEFAULT_IP: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 1);

/// A port linked to another runner's by UDP on the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UdpLink {
    pub local: SocketAddrV4,
    pub peer: SocketAddrV4,
}

/// The served device's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    pub profile: String,
    pub ip: Ipv4Addr,
    pub link: Option<UdpLink>,
    pub pcap: Option<PathBuf>,
    pub capture: Option<PathBuf>,
    /// The port's network interface ([`crate::netdev`]).
    pub netdev: Option<String>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            profile: "bf3".into(),
            ip: DEFAULT_IP,
            link: None,
            pcap: None,
            capture: None,
            netdev: None,
        }
    }
}

/// The port's MAC for an IPv4 address: locally administered, `02:00` then the four address
/// bytes. Every runner derives its peers' MACs the same way, so no ARP is needed to resolve a
/// destination GID (what the kernel's `ib_resolve_eth_dmac` does with the neighbour table).
pub fn mac_of(ip: Ipv4Addr) -> [u8; 6] {
    let o = ip.octets();
    [0x02, 0x00, o[0], o[1], o[2], o[3]]
}

impl Config {
    /// Parses `udp:LOCAL,PEER`.
    ///
    /// # Errors
    /// A message naming what is wrong.
    pub fn parse_link(s: &str) -> Result<UdpLink, String> {
        let rest = s
            .strip_prefix("udp:")
            .ok_or_else(|| format!("link {s:?}: expected udp:LOCAL_IP:PORT,PEER_IP:PORT"))?;
        let (l, p) = rest
            .split_once(',')
            .ok_or_else(|| format!("link {s:?}: expected two addresses separated by a comma"))?;
        let parse = |a: &str| {
            a.parse::<SocketAddrV4>()
                .map_err(|e| format!("link address {a:?}: {e} (expected IP:PORT)"))
        };
        Ok(UdpLink {
            local: parse(l)?,
            peer: parse(p)?,
        })
    }

    /// The settings in the environment (unset variables keep their defaults).
    ///
    /// # Errors
    /// A variable that is set but malformed.
    pub fn from_env() -> Result<Config, String> {
        Self::from_lookup(|k| std::env::var(k).ok())
    }

    /// The settings from a lookup of variable names (the environment, or a test's map).
    ///
    /// # Errors
    /// A value that is set but malformed.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Config, String> {
        let mut c = Config::default();
        if let Some(p) = get(ENV_PROFILE).filter(|s| !s.is_empty()) {
            if mlx5_sim::profile::Profile::by_name(&p).is_none() {
                return Err(format!(
                    "{ENV_PROFILE}={p}: unknown profile (known: {})",
                    mlx5_sim::profile::Profile::NAMES.join(", ")
                ));
            }
            c.profile = p;
        }
        if let Some(ip) = get(ENV_IP).filter(|s| !s.is_empty()) {
            c.ip = ip
                .parse()
                .map_err(|e| format!("{ENV_IP}={ip}: {e} (expected an IPv4 address)"))?;
        }
        if let Some(l) = get(ENV_LINK).filter(|s| !s.is_empty()) {
            c.link = Some(Self::parse_link(&l)?);
        }
        if let Some(p) = get(ENV_PCAP).filter(|s| !s.is_empty()) {
            c.pcap = Some(PathBuf::from(p));
        }
        if let Some(p) = get(ENV_CAPTURE).filter(|s| !s.is_empty()) {
            c.capture = Some(PathBuf::from(p));
        }
        c.netdev = get(ENV_NETDEV).filter(|s| !s.is_empty());
        Ok(c)
    }

    /// The variables that give these settings to a child process.
    pub fn to_env(&self) -> Vec<(&'static str, String)> {
        let mut v = vec![
            (ENV_PROFILE, self.profile.clone()),
            (ENV_IP, self.ip.to_string()),
        ];
        if let Some(l) = self.link {
            v.push((ENV_LINK, format!("udp:{},{}", l.local, l.peer)));
        }
        if let Some(p) = &self.pcap {
            v.push((ENV_PCAP, p.display().to_string()));
        }
        if let Some(p) = &self.capture {
            v.push((ENV_CAPTURE, p.display().to_string()));
        }
        if let Some(n) = &self.netdev {
            v.push((ENV_NETDEV, n.clone()));
        }
        v
    }

    /// The port's MAC ([`mac_of`]).
    pub fn mac(&self) -> [u8; 6] {
        mac_of(self.ip)
    }
}

/// `devx` as a context uses it: recording every mailbox into the program's capture when one is
/// asked for ([`ENV_CAPTURE`]; one file for all the program's contexts, made on first use; a
/// file that cannot be made is reported once and nothing is recorded).
pub(crate) fn captured(
    devx: std::sync::Arc<dyn mlx5_dpa::devx::Devx>,
) -> std::sync::Arc<dyn mlx5_dpa::devx::Devx> {
    use mlx5_dpa::devx::capture::CaptureDevx;
    match recorder() {
        Some(r) => std::sync::Arc::new(CaptureDevx::with_recorder(devx, std::sync::Arc::clone(r))),
        None => devx,
    }
}

/// The program's capture ([`ENV_CAPTURE`]), made on first use.
fn recorder() -> Option<&'static std::sync::Arc<mlx5_dpa::devx::capture::Recorder>> {
    use mlx5_dpa::devx::capture::Recorder;
    use std::sync::{Arc, OnceLock};
    static REC: OnceLock<Option<Arc<Recorder>>> = OnceLock::new();
    REC.get_or_init(|| {
        let path = Config::from_env().ok()?.capture?;
        match Recorder::create(&path) {
            Ok(r) => Some(Arc::new(r)),
            Err(e) => {
                eprintln!("mlx5-sim uverbs: capture {}: {e}", path.display());
                None
            }
        }
    })
    .as_ref()
}

/// Records an object the server made with a command of the kernel's own (uid 0; the flow
/// tables behind the kernel's flow methods) into the program's capture, as an `obj_create`:
/// what a kernel sends to firmware for the program beside the program's DevX commands.
pub(crate) fn record_kernel_create(inbox: &[u8], outbox: &[u8], ok: bool) {
    use mlx5_dpa::devx::capture::Record;
    if let Some(r) = recorder() {
        let p = r.begin();
        r.end(
            p,
            Record {
                call: "obj_create".into(),
                inbox: inbox.to_vec(),
                outbox: outbox.to_vec(),
                ret: if ok { 0 } else { -1 },
                errno: if ok { 0 } else { libc::EIO },
                ..Default::default()
            },
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn settings_survive_the_environment() {
        let c = Config {
            profile: "cx7".into(),
            ip: Ipv4Addr::new(10, 9, 0, 2),
            link: Some(Config::parse_link("udp:127.0.0.1:5001,127.0.0.1:5002").unwrap()),
            pcap: Some(PathBuf::from("/tmp/x.pcap")),
            capture: Some(PathBuf::from("/tmp/x.jsonl")),
            netdev: Some("mlx5sim3".into()),
        };
        let env: HashMap<_, _> = c.to_env().into_iter().collect();
        let back = Config::from_lookup(|k| env.get(k).cloned()).unwrap();
        assert_eq!(back, c);
        assert_eq!(c.mac(), [2, 0, 10, 9, 0, 2]);
    }

    #[test]
    fn malformed_settings_are_named() {
        let bad = |k: &'static str, v: &'static str| {
            Config::from_lookup(|q| (q == k).then(|| v.to_string())).unwrap_err()
        };
        assert!(bad(ENV_IP, "10.0.0").contains(ENV_IP));
        assert!(bad(ENV_PROFILE, "cx9").contains("unknown profile"));
        assert!(bad(ENV_LINK, "tcp:1.2.3.4:5,1.2.3.4:6").contains("udp:"));
        assert!(bad(ENV_LINK, "udp:1.2.3.4:5").contains("comma"));
        assert!(bad(ENV_LINK, "udp:1.2.3.4,1.2.3.4:6").contains("IP:PORT"));
    }
}
