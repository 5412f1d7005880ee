//! The TAP port against the real kernel, inside a private network namespace.
//!
//! Each test runs on a dedicated thread that first moves itself into a fresh network namespace
//! (`unshare(CLONE_NEWNET)` affects only the calling thread, and the `ip` processes it spawns
//! inherit it), so nothing here touches the host's interfaces, addresses or routes. The
//! namespace disappears when that thread exits and the TAP descriptor is closed.
//!
//! Where the environment cannot host them (no permission to unshare, no `/dev/net/tun`, no
//! `ip` binary), the tests are reported ignored, with the reason, by this file's own harness.

use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use libtest_mimic::{Arguments, Trial};

use mlx5_sim::port::tap::Tap;
use nix::errno::Errno;
use nix::sched::{unshare, CloneFlags};

const IFNAME: &str = "mlx5sim0";
const TAP_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x01];
const TAP_IP: Ipv4Addr = Ipv4Addr::new(10, 99, 0, 1);
const PEER_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x02];
const PEER_IP: Ipv4Addr = Ipv4Addr::new(10, 99, 0, 2);
const ETHERTYPE_IPV4: u16 = 0x0800;
const IPPROTO_UDP: u8 = 17;
const WAIT: Duration = Duration::from_secs(5);

/// Where `ip` lives, if anywhere.
fn ip_binary() -> Option<&'static str> {
    ["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"]
        .into_iter()
        .find(|p| Path::new(p).is_file())
}

/// Runs `ip <args>` (in the calling thread's namespace) and fails loudly if it does.
fn ip(bin: &str, args: &[&str]) -> String {
    let out = Command::new(bin)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("running {bin} {args:?}: {e}"));
    assert!(
        out.status.success(),
        "{bin} {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Why this machine cannot host the tests (`None`: it can): an `ip` binary, `/dev/net/tun`, a
/// network namespace and a TAP interface in it, tried once on a thread of its own.
fn why_not() -> Option<String> {
    if ip_binary().is_none() {
        return Some("no `ip` binary (iproute2) found".into());
    }
    if !Path::new("/dev/net/tun").exists() {
        return Some("/dev/net/tun does not exist".into());
    }
    std::thread::spawn(|| {
        if let Err(e) = unshare(CloneFlags::CLONE_NEWNET) {
            return Some(format!("cannot create a network namespace (unshare: {e})"));
        }
        Tap::open(IFNAME).err().map(|e| e.to_string())
    })
    .join()
    .unwrap_or_else(|_| Some("the probe panicked".into()))
}

/// Runs `body` on a fresh thread in a fresh network namespace holding an up TAP interface
/// `mlx5sim0` with MAC `TAP_MAC` and address 10.99.0.1/24 (the harness ran [`why_not`] first).
fn in_private_netns(test: &str, body: impl FnOnce(Tap, &str) + Send + 'static) {
    let ip_bin = ip_binary().expect("the probe found `ip`");
    let test = test.to_owned();
    let joined = std::thread::spawn(move || {
        if let Err(e) = unshare(CloneFlags::CLONE_NEWNET) {
            panic!("{test}: unshare(CLONE_NEWNET): {e}");
        }
        let tap = Tap::open(IFNAME).unwrap_or_else(|e| panic!("{test}: Tap::open({IFNAME}): {e}"));
        assert_eq!(tap.name(), IFNAME);

        // The new namespace holds nothing but a down loopback and our interface.
        let links = ip(ip_bin, &["-o", "link", "show"]);
        assert_eq!(links.lines().count(), 2, "unexpected links:\n{links}");

        let mac = fmt_mac(&TAP_MAC);
        ip(ip_bin, &["link", "set", "lo", "up"]);
        ip(ip_bin, &["link", "set", IFNAME, "address", &mac]);
        ip(ip_bin, &["link", "set", IFNAME, "up"]);
        ip(ip_bin, &["addr", "add", "10.99.0.1/24", "dev", IFNAME]);
        let shown = ip(ip_bin, &["-o", "link", "show", IFNAME]);
        assert!(
            shown.contains(&format!("link/ether {mac}")),
            "MAC not applied: {shown}"
        );
        body(tap, ip_bin);
    })
    .join();
    if let Err(panic) = joined {
        std::panic::resume_unwind(panic);
    }
}

fn fmt_mac(mac: &[u8; 6]) -> String {
    mac.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// The ones' complement of the ones' complement sum of `data` as big-endian 16-bit words
/// (RFC 1071), after `initial` (a partial sum, for pseudo-headers).
fn inet_checksum(initial: u32, data: &[u8]) -> u16 {
    let mut sum = initial;
    let mut chunks = data.chunks_exact(2);
    for w in &mut chunks {
        sum += u32::from(u16::from_be_bytes([w[0], w[1]]));
    }
    if let [last] = chunks.remainder() {
        sum += u32::from(*last) << 8;
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// The partial sum of the UDP/IPv4 pseudo-header.
fn udp_pseudo_sum(src: Ipv4Addr, dst: Ipv4Addr, udp_len: u16) -> u32 {
    let s = src.octets();
    let d = dst.octets();
    [
        u16::from_be_bytes([s[0], s[1]]),
        u16::from_be_bytes([s[2], s[3]]),
        u16::from_be_bytes([d[0], d[1]]),
        u16::from_be_bytes([d[2], d[3]]),
        u16::from(IPPROTO_UDP),
        udp_len,
    ]
    .iter()
    .map(|&w| u32::from(w))
    .sum()
}

/// An Ethernet II + IPv4 (no options) + UDP frame, with both checksums filled in.
fn udp_frame(
    dst_mac: [u8; 6],
    src_mac: [u8; 6],
    src: SocketAddrV4,
    dst: SocketAddrV4,
    payload: &[u8],
) -> Vec<u8> {
    let udp_len = u16::try_from(8 + payload.len()).unwrap();
    let ip_len = 20 + udp_len;

    let mut f = Vec::with_capacity(14 + usize::from(ip_len));
    f.extend_from_slice(&dst_mac);
    f.extend_from_slice(&src_mac);
    f.extend_from_slice(&ETHERTYPE_IPV4.to_be_bytes());

    let ip_start = f.len();
    f.push(0x45); // version 4, 5 words of header
    f.push(0); // DSCP / ECN
    f.extend_from_slice(&ip_len.to_be_bytes());
    f.extend_from_slice(&0x1234u16.to_be_bytes()); // identification
    f.extend_from_slice(&0x4000u16.to_be_bytes()); // don't fragment, offset 0
    f.push(64); // TTL
    f.push(IPPROTO_UDP);
    f.extend_from_slice(&[0, 0]); // header checksum, below
    f.extend_from_slice(&src.ip().octets());
    f.extend_from_slice(&dst.ip().octets());
    let csum = inet_checksum(0, &f[ip_start..]);
    f[ip_start + 10..ip_start + 12].copy_from_slice(&csum.to_be_bytes());

    let udp_start = f.len();
    f.extend_from_slice(&src.port().to_be_bytes());
    f.extend_from_slice(&dst.port().to_be_bytes());
    f.extend_from_slice(&udp_len.to_be_bytes());
    f.extend_from_slice(&[0, 0]); // checksum, below
    f.extend_from_slice(payload);
    let csum = inet_checksum(
        udp_pseudo_sum(*src.ip(), *dst.ip(), udp_len),
        &f[udp_start..],
    );
    // A computed 0 is sent as 0xffff; 0 means "no checksum".
    let csum = if csum == 0 { 0xffff } else { csum };
    f[udp_start + 6..udp_start + 8].copy_from_slice(&csum.to_be_bytes());
    f
}

/// The fields of an Ethernet/IPv4/UDP frame that the tests check.
#[derive(Debug)]
struct UdpView<'a> {
    dst_mac: [u8; 6],
    src_mac: [u8; 6],
    ethertype: u16,
    ip_header: &'a [u8],
    src: SocketAddrV4,
    dst: SocketAddrV4,
    udp: &'a [u8],
    payload: &'a [u8],
}

/// Parses `frame` as Ethernet/IPv4/UDP; `None` for anything else (ARP, IPv6, truncated...).
fn parse_udp(frame: &[u8]) -> Option<UdpView<'_>> {
    let dst_mac: [u8; 6] = frame.get(0..6)?.try_into().ok()?;
    let src_mac: [u8; 6] = frame.get(6..12)?.try_into().ok()?;
    let ethertype = u16::from_be_bytes(frame.get(12..14)?.try_into().ok()?);
    if ethertype != ETHERTYPE_IPV4 {
        return None;
    }
    let ip = frame.get(14..)?;
    let ihl = usize::from(*ip.first()? & 0x0f) * 4;
    if *ip.first()? >> 4 != 4 || ihl < 20 || *ip.get(9)? != IPPROTO_UDP {
        return None;
    }
    let total = usize::from(u16::from_be_bytes(ip.get(2..4)?.try_into().ok()?));
    let ip_header = ip.get(..ihl)?;
    let addr = |at: usize| -> Option<Ipv4Addr> {
        let o: [u8; 4] = ip.get(at..at + 4)?.try_into().ok()?;
        Some(Ipv4Addr::from(o))
    };
    let (src_ip, dst_ip) = (addr(12)?, addr(16)?);
    let udp = ip.get(ihl..total)?;
    let port = |at: usize| -> Option<u16> {
        Some(u16::from_be_bytes(udp.get(at..at + 2)?.try_into().ok()?))
    };
    let udp_len = usize::from(port(4)?);
    Some(UdpView {
        dst_mac,
        src_mac,
        ethertype,
        ip_header,
        src: SocketAddrV4::new(src_ip, port(0)?),
        dst: SocketAddrV4::new(dst_ip, port(2)?),
        payload: udp.get(8..udp_len)?,
        udp: udp.get(..udp_len)?,
    })
}

/// (a) A datagram the kernel routes out of the interface arrives on the TAP descriptor.
fn kernel_to_tap_udp() {
    in_private_netns("kernel_to_tap_udp", |tap, ip_bin| {
        // A permanent neighbour entry, so the kernel sends the datagram instead of an ARP
        // request.
        ip(
            ip_bin,
            &[
                "neigh",
                "add",
                "10.99.0.2",
                "lladdr",
                &fmt_mac(&PEER_MAC),
                "dev",
                IFNAME,
            ],
        );
        let payload = b"mlx5-sim: kernel -> tap";
        let peer = SocketAddrV4::new(PEER_IP, 9999);
        let sock = UdpSocket::bind(SocketAddrV4::new(TAP_IP, 0)).unwrap();
        let local = match sock.local_addr().unwrap() {
            std::net::SocketAddr::V4(a) => a,
            other => panic!("IPv4 socket bound to {other}"),
        };
        sock.send_to(payload, peer).unwrap();

        // Read until our datagram shows up; the kernel also sends IPv6 router and neighbour
        // solicitations, MLD reports and the like on a freshly up interface.
        let mut buf = vec![0u8; 65_536];
        let mut noise = Vec::new();
        let deadline = Instant::now() + WAIT;
        let frame = loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let Some(n) = tap.recv(&mut buf, left).unwrap() else {
                panic!(
                    "no UDP frame to {peer} within {WAIT:?}; other frames seen \
                     (ethertype, length): {noise:04x?}"
                );
            };
            let frame = &buf[..n];
            match parse_udp(frame) {
                Some(v) if v.dst == peer => break frame.to_vec(),
                _ => noise.push((
                    frame.get(12..14).map(|e| u16::from_be_bytes([e[0], e[1]])),
                    n,
                )),
            }
        };

        let v = parse_udp(&frame).unwrap();
        assert_eq!(
            v.dst_mac, PEER_MAC,
            "destination MAC from the neighbour entry"
        );
        assert_eq!(v.src_mac, TAP_MAC, "source MAC is the interface's");
        assert_eq!(v.ethertype, ETHERTYPE_IPV4);
        assert_eq!(v.src, local);
        assert_eq!(v.dst, peer);
        assert_eq!(v.payload, payload);
        assert_eq!(
            inet_checksum(0, v.ip_header),
            0,
            "IPv4 header checksum verifies"
        );
        let udp_len = u16::try_from(v.udp.len()).unwrap();
        assert_eq!(
            inet_checksum(udp_pseudo_sum(*v.src.ip(), *v.dst.ip(), udp_len), v.udp),
            0,
            "UDP checksum verifies"
        );
    });
}

/// (b) A frame written to the TAP descriptor is delivered by the kernel to a UDP socket.
fn tap_to_kernel_udp() {
    in_private_netns("tap_to_kernel_udp", |tap, _ip_bin| {
        let local = SocketAddrV4::new(TAP_IP, 7777);
        let peer = SocketAddrV4::new(PEER_IP, 9999);
        let sock = UdpSocket::bind(local).unwrap();
        sock.set_read_timeout(Some(WAIT)).unwrap();

        let payload = b"mlx5-sim: tap -> kernel";
        let frame = udp_frame(TAP_MAC, PEER_MAC, peer, local, payload);
        // Our own parser agrees with what we built, checksums included.
        let v = parse_udp(&frame).unwrap();
        assert_eq!((v.src, v.dst, v.payload), (peer, local, &payload[..]));
        assert_eq!(inet_checksum(0, v.ip_header), 0);

        tap.send(&frame).unwrap();

        let mut buf = [0u8; 2048];
        let (n, from) = sock.recv_from(&mut buf).unwrap_or_else(|e| {
            panic!("the kernel did not deliver the injected datagram within {WAIT:?}: {e}")
        });
        assert_eq!(&buf[..n], payload);
        assert_eq!(from, std::net::SocketAddr::V4(peer));
    });
}

/// Frames the kernel cannot take are reported as errors, not panics or silent drops.
fn send_rejects_runt_frames() {
    in_private_netns("send_rejects_runt_frames", |tap, _ip_bin| {
        // Shorter than an Ethernet header.
        let err = tap.send(&[0u8; 4]).unwrap_err();
        assert_eq!(err.errno(), Some(Errno::EINVAL), "{err}");
        // Nothing waiting: try_recv returns at once.
        let mut buf = [0u8; 2048];
        let start = Instant::now();
        while let Some(_noise) = tap.try_recv(&mut buf).unwrap() {}
        assert!(start.elapsed() < Duration::from_secs(1));
        // And recv honours a short bound when the kernel has nothing to say... unless it does
        // (IPv6 noise); either way it returns promptly.
        let start = Instant::now();
        let _ = tap.recv(&mut buf, Duration::from_millis(50)).unwrap();
        assert!(start.elapsed() < Duration::from_secs(1));
    });
}

/// The model's port on a TAP: a datagram the kernel sends arrives in an RQ, and a frame sent
/// from an SQ reaches a kernel socket.
fn model_port_on_a_tap_exchanges_frames_with_the_kernel() {
    use mlx5_dpa::mlx5::cmd::OuterMatch;
    use mlx5_sim::testing::rig::{EthRig, RigConfig};
    use mlx5_sim::{Device, PortMode};
    in_private_netns("model_port_on_a_tap", |tap, ip_bin| {
        ip(
            ip_bin,
            &[
                "neigh",
                "add",
                "10.99.0.2",
                "lladdr",
                &fmt_mac(&PEER_MAC),
                "dev",
                IFNAME,
            ],
        );
        let dev = Device::new(mlx5_sim::profile::Profile::bf3());
        dev.set_port(PortMode::Tap(tap));
        let cfg = RigConfig {
            // Only our datagram: the kernel also sends IPv6 noise on a fresh interface.
            rule: OuterMatch {
                ethertype: Some(ETHERTYPE_IPV4),
                udp_dport: Some(9999),
                ..Default::default()
            },
            ..Default::default()
        };
        let mut rig = EthRig::new(dev.open_devx(), cfg).unwrap();
        rig.fill_rq();

        // Kernel -> RQ.
        let payload = b"mlx5-sim: kernel -> RQ";
        let peer = SocketAddrV4::new(PEER_IP, 9999);
        let sock = UdpSocket::bind(SocketAddrV4::new(TAP_IP, 0)).unwrap();
        sock.send_to(payload, peer).unwrap();
        let deadline = Instant::now() + WAIT;
        let mut got = Vec::new();
        while got.is_empty() && Instant::now() < deadline {
            dev.step();
            rig.poll_rx(16, |r| got.push(r.expect("receive completion").to_vec()));
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(got.len(), 1, "one datagram steered into the RQ");
        let v = parse_udp(&got[0]).expect("a UDP frame");
        assert_eq!(v.dst, peer);
        assert_eq!(v.dst_mac, PEER_MAC);
        assert_eq!(v.payload, payload);

        // SQ -> kernel.
        let local = SocketAddrV4::new(TAP_IP, 7777);
        let rx = UdpSocket::bind(local).unwrap();
        rx.set_read_timeout(Some(WAIT)).unwrap();
        let payload = b"mlx5-sim: SQ -> kernel";
        rig.post_send(&udp_frame(TAP_MAC, PEER_MAC, peer, local, payload))
            .unwrap();
        rig.ring_sq();
        dev.run_until_idle();
        let mut buf = [0u8; 2048];
        let (n, from) = rx
            .recv_from(&mut buf)
            .expect("the kernel delivers the SQ's datagram");
        assert_eq!(&buf[..n], payload);
        assert_eq!(from, std::net::SocketAddr::V4(peer));
        assert_eq!(rig.poll_tx(16).len(), 1);
    });
}

/// The responder behind a TAP answers the kernel's ARP request, so the kernel resolves the
/// model's address by itself and then sends it the datagram.
fn responder_answers_the_kernels_arp_through_the_model() {
    use mlx5_sim::responder::Responder;
    use mlx5_sim::{Device, PortMode};
    in_private_netns("responder_answers_arp", |tap, ip_bin| {
        let dev = Device::new(mlx5_sim::profile::Profile::bf3());
        dev.set_port(PortMode::Tap(tap));
        let model_mac = [0x02, 0x00, 0x5e, 0x00, 0x00, 0x01];
        let mut r = Responder::new(&dev, PEER_IP, model_mac).unwrap();
        let payload = b"mlx5-sim: after ARP";
        let sock = UdpSocket::bind(SocketAddrV4::new(TAP_IP, 0)).unwrap();
        sock.send_to(payload, SocketAddrV4::new(PEER_IP, 5555))
            .unwrap();
        let deadline = Instant::now() + WAIT;
        let found = loop {
            r.poll();
            if let Some(f) = r
                .unanswered
                .iter()
                .find(|f| parse_udp(f).is_some_and(|v| v.payload == payload))
            {
                break Some(f.clone());
            }
            if Instant::now() > deadline {
                break None;
            }
            std::thread::sleep(Duration::from_millis(1));
        };
        let f = found.expect("the datagram follows the ARP exchange");
        assert!(r.stats.arp_replies >= 1, "{:?}", r.stats);
        assert_eq!(
            &f[0..6],
            &model_mac,
            "the kernel learned the model's MAC from the reply"
        );
        let neigh = ip(ip_bin, &["neigh", "show", "10.99.0.2"]);
        assert!(
            neigh.contains(&fmt_mac(&model_mac)),
            "neighbour table: {neigh}"
        );
    });
}

#[path = "../../examples/flexio_packet_processor.rs"]
#[allow(dead_code)]
mod pp;

/// A pcap sink the test can read back.
#[derive(Clone, Default)]
struct SharedBuf(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for SharedBuf {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// `mlx5-dpa sim --tap NAME --app packet-processor`: a datagram the kernel sends to the model is
/// taken by the DPA event handler, rewritten (MACs swapped, digits to letters, UDP checksum 0)
/// and sent back out of the TAP, as the sample does for injected frames.
fn the_packet_processor_rewrites_the_kernels_datagrams() {
    use mlx5_sim::{Device, PortMode};
    in_private_netns("packet_processor_on_a_tap", |tap, ip_bin| {
        let dev = Device::new(mlx5_sim::profile::Profile::bf3());
        dev.set_port(PortMode::Tap(tap));
        let cap = SharedBuf::default();
        dev.capture(cap.clone()).unwrap();
        dev.start_engine();
        let ctx = dev.open_devx();
        let p = pp::PacketProcessor::setup(&ctx, &pp::Options::default()).unwrap();
        p.wait_ready(WAIT).unwrap();
        let model_mac = p.port_mac;
        ip(
            ip_bin,
            &[
                "neigh",
                "add",
                "10.99.0.2",
                "lladdr",
                &fmt_mac(&model_mac),
                "dev",
                IFNAME,
            ],
        );
        let payload = b"kernel says 0123456789!";
        let sock = UdpSocket::bind(SocketAddrV4::new(TAP_IP, 0)).unwrap();
        sock.send_to(payload, SocketAddrV4::new(PEER_IP, 5001))
            .unwrap();
        let deadline = Instant::now() + WAIT;
        while p.stats().unwrap().tx_packets == 0 {
            assert!(Instant::now() < deadline, "the DPA sent nothing back");
            std::thread::sleep(Duration::from_millis(2));
        }
        let stats = p.stats().unwrap();
        drop(p);
        drop(ctx);
        dev.stop_engine();
        dev.stop_captures().unwrap();
        let frames = mlx5_sim::port::pcap::read_pcap(&cap.0.lock().unwrap()).unwrap();
        let sent = frames
            .iter()
            .map(|(_, f)| f)
            .find(|f| parse_udp(f).is_some_and(|v| v.payload == payload))
            .expect("the kernel's datagram on the port");
        let back = frames
            .iter()
            .map(|(_, f)| f)
            .find(|f| f[0..6] == TAP_MAC && f[6..12] == model_mac)
            .expect("an answer from the model to the kernel's MAC");
        assert_eq!(*back, pp::expected_answer(sent));
        assert_eq!(&back[42..], b"kernel says abcdefghij!");
        assert_eq!((stats.rx_packets, stats.rewritten), (1, 1), "{stats:?}");
    });
}

fn main() {
    let args = Arguments::from_args();
    let why = why_not();
    let tests: [(&str, fn()); 6] = [
        ("kernel_to_tap_udp", kernel_to_tap_udp),
        ("tap_to_kernel_udp", tap_to_kernel_udp),
        ("send_rejects_runt_frames", send_rejects_runt_frames),
        (
            "model_port_on_a_tap_exchanges_frames_with_the_kernel",
            model_port_on_a_tap_exchanges_frames_with_the_kernel,
        ),
        (
            "responder_answers_the_kernels_arp_through_the_model",
            responder_answers_the_kernels_arp_through_the_model,
        ),
        (
            "the_packet_processor_rewrites_the_kernels_datagrams",
            the_packet_processor_rewrites_the_kernels_datagrams,
        ),
    ];
    let trials = tests
        .into_iter()
        .map(|(name, f)| {
            Trial::test(name, move || {
                f();
                Ok(())
            })
            .with_ignored_flag(why.is_some())
        })
        .collect();
    if let Some(w) = &why {
        eprintln!("tap: 6 test(s) skipped: {w}");
    }
    libtest_mimic::run(&args, trials).exit();
}
