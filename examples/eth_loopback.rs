//! Ethernet loopback through the driver's queues.
//!
//! Frames of varied sizes leave an SQ, come back to the port's own MAC, are steered by a flow
//! rule into an RQ, and are compared byte for byte with what was sent.
//!
//! ```text
//! cargo run --example eth_loopback                      # on the device model
//! cargo run --example eth_loopback -- --packets 1000 --pcap /tmp/eth.pcap
//! cargo run --example eth_loopback -- --device mlx5_0   # on hardware
//! ```
//!
//! The same code runs on both: only `main` differs in how it opens the device (and, on the
//! model, starts the model's engine thread so completions arrive as they would from hardware).
//! `mlx5-dpa demo eth-loopback` runs this file's [`run`].

use std::error::Error;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mlx5_dpa::devx::{self, Devx, UarKind};
use mlx5_dpa::mem::{Access, MemoryRegion, Pd};
use mlx5_dpa::mlx5::cmd::{OuterMatch, QueryNicVportContext};
use mlx5_dpa::queues::steering::{RxFlow, Tis, TransportDomain};
use mlx5_dpa::queues::wq::ETH_MIN_INLINE;
use mlx5_dpa::queues::{Cq, CqConfig, EthSq, EthSqConfig, HostQueueMem, Rq, RqConfig};
use mlx5_dpa::uar::UarPage;

/// What to send.
#[derive(Debug, Clone)]
pub struct Options {
    /// Frames to send.
    pub packets: usize,
    /// EtherType of the test frames (an IEEE local experimental value by default).
    pub ethertype: u16,
    /// Print a progress line (frames so far and the rate) at most this often; `None`: no
    /// progress lines.
    pub progress: Option<Duration>,
    /// When this becomes true, stop sending, collect what is in flight and report (Ctrl-C).
    pub stop: Option<&'static AtomicBool>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            packets: 16,
            ethertype: 0x88b5,
            progress: None,
            stop: None,
        }
    }
}

/// What happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Report {
    pub sent: usize,
    pub received: usize,
    pub verified: usize,
    pub bytes: usize,
    /// `Options::stop` ended the run before all frames were sent.
    pub stopped: bool,
}

/// Each frame is at most this long; each buffer slot this big.
const SLOT: usize = 2048;
/// How long to wait for one completion.
const TIMEOUT: Duration = Duration::from_secs(5);

/// The size of frame `i`: 60..=1514 bytes, spread over the range.
pub fn frame_len(i: usize) -> usize {
    60 + (i * 367) % 1455
}

fn frame(dst: [u8; 6], ethertype: u16, i: usize) -> Vec<u8> {
    let len = frame_len(i);
    let mut f = Vec::with_capacity(len);
    f.extend_from_slice(&dst);
    f.extend_from_slice(&[0x02, 0x00, 0x00, 0x00, 0x00, 0x01]);
    f.extend_from_slice(&ethertype.to_be_bytes());
    f.extend_from_slice(&(i as u32).to_be_bytes());
    while f.len() < len {
        f.push((f.len() as u8).wrapping_mul(31) ^ i as u8);
    }
    f
}

/// Sends `opts.packets` frames to the port's own MAC and checks what comes back.
///
/// # Errors
/// Any driver or device error, a timeout, or a frame that came back different.
pub fn run(
    ctx: &Arc<dyn Devx>,
    out: &mut dyn Write,
    opts: &Options,
) -> Result<Report, Box<dyn Error>> {
    // The port's own MAC: frames to it loop back inside the NIC.
    let mac = devx::exec(ctx.as_ref(), &QueryNicVportContext)?.mac;
    writeln!(out, "device: {}", ctx.describe())?;
    writeln!(out, "port MAC {}", fmt_mac(&mac))?;

    // Objects, in dependency order; each handle keeps what it needs alive, and dropping them
    // destroys everything in reverse.
    let pd = Pd::alloc(ctx)?;
    let uar = UarPage::alloc(ctx, UarKind::NonCached)?;
    let td = TransportDomain::alloc(ctx)?;
    let tis = Tis::create(ctx, &td, &pd)?;
    let ring = 256usize; // receives in flight at most
    let log = ring.trailing_zeros() as u8;
    let cqc = CqConfig::new(log + 1);
    let mut tx_cq = Cq::create(ctx, &uar, HostQueueMem::alloc(ctx, cqc.ring_bytes())?, &cqc)?;
    let mut rx_cq = Cq::create(ctx, &uar, HostQueueMem::alloc(ctx, cqc.ring_bytes())?, &cqc)?;
    let sqc = EthSqConfig {
        log_size: log + 1,
        signal_every: 1,
    };
    let mut sq = EthSq::create(
        ctx,
        &pd,
        &uar,
        &tis,
        &tx_cq,
        HostQueueMem::alloc(ctx, sqc.ring_bytes())?,
        &sqc,
    )?;
    let rqc = RqConfig {
        log_size: log,
        max_sge: 1,
    };
    let mut rq = Rq::create(
        ctx,
        &pd,
        &uar,
        &rx_cq,
        HostQueueMem::alloc(ctx, rqc.ring_bytes())?,
        &rqc,
    )?;
    let flow = OuterMatch {
        dmac: Some(mac),
        ethertype: Some(opts.ethertype),
        ..Default::default()
    };
    let _rule = RxFlow::to_rq(ctx, &td, &rq, flow, 0)?;
    writeln!(
        out,
        "SQ {:#x} (CQ {:#x}), RQ {:#x} (CQ {:#x}), flow: dmac {} ethertype {:#06x}",
        sq.sqn().0,
        tx_cq.cqn().0,
        rq.rqn().0,
        rx_cq.cqn().0,
        fmt_mac(&mac),
        opts.ethertype
    )?;

    let tx = MemoryRegion::alloc(ctx, &pd, ring * SLOT, Access::LOCAL_WRITE)?;
    let rx = MemoryRegion::alloc(ctx, &pd, ring * SLOT, Access::LOCAL_WRITE)?;
    for s in 0..ring {
        rq.post_recv(&[rx.sge(s * SLOT, SLOT)?], s as u64)?;
    }
    rq.ring_doorbell();

    let verbose = opts.packets <= 16;
    let mut report = Report {
        sent: 0,
        received: 0,
        verified: 0,
        bytes: 0,
        stopped: false,
    };
    let start = Instant::now();
    let mut last_progress = start;
    let mut expected = std::collections::VecDeque::new();
    let mut target = opts.packets;
    while report.received < target {
        if !report.stopped && opts.stop.is_some_and(|s| s.load(Ordering::Relaxed)) {
            // Send no more; what is in flight still comes back and is checked.
            report.stopped = true;
            target = report.sent;
            continue;
        }
        if let Some(every) = opts.progress {
            if last_progress.elapsed() >= every {
                last_progress = Instant::now();
                let secs = start.elapsed().as_secs_f64();
                writeln!(
                    out,
                    "... {} of {} frames verified, {:.3} Mpps",
                    report.verified,
                    opts.packets,
                    report.verified as f64 / secs / 1e6
                )?;
            }
        }
        // Send as many as there are receives free for, one doorbell per batch.
        let mut batch = 0;
        while report.sent < target && expected.len() < ring && sq.free() > 8 {
            let i = report.sent;
            let f = frame(mac, opts.ethertype, i);
            let slot = i % ring;
            tx.write(slot * SLOT, &f)?;
            let rest = tx.sge(slot * SLOT + ETH_MIN_INLINE, f.len() - ETH_MIN_INLINE)?;
            sq.post_send(&f[..ETH_MIN_INLINE], &[rest], i as u64)?;
            if verbose {
                writeln!(
                    out,
                    "sent     #{i:<4} {:>4} bytes  {}",
                    f.len(),
                    hex_head(&f)
                )?;
            }
            expected.push_back(f);
            report.sent += 1;
            batch += 1;
        }
        if batch > 0 {
            sq.ring_doorbell();
        }
        // Reap send completions.
        while let Some(c) = tx_cq.poll() {
            sq.complete(&c?)?;
        }
        // One receive (bounded wait), then put its buffer back.
        let c = rx_cq.poll_timeout(TIMEOUT)??;
        let slot = rq.complete(c.wqe_counter)? as usize;
        let want = expected
            .pop_front()
            .ok_or("a frame arrived that was never sent")?;
        let mut got = vec![0u8; c.byte_len as usize];
        rx.read(slot * SLOT, &mut got)?;
        report.received += 1;
        report.bytes += got.len();
        if got != want {
            return Err(format!(
                "frame #{} came back different: sent {} bytes, received {} bytes",
                report.received - 1,
                want.len(),
                got.len()
            )
            .into());
        }
        report.verified += 1;
        if verbose {
            writeln!(
                out,
                "received #{:<4} {:>4} bytes  {}  verified",
                report.received - 1,
                got.len(),
                hex_head(&got)
            )?;
        }
        rq.post_recv(&[rx.sge(slot * SLOT, SLOT)?], slot as u64)?;
        rq.ring_doorbell();
    }
    while let Some(c) = tx_cq.poll() {
        sq.complete(&c?)?;
    }
    let secs = start.elapsed().as_secs_f64();
    writeln!(
        out,
        "sent {}, received {}, verified {} frames ({} bytes) byte for byte{}",
        report.sent,
        report.received,
        report.verified,
        report.bytes,
        if report.stopped {
            format!(" (interrupted after {} of {})", report.sent, opts.packets)
        } else {
            String::new()
        }
    )?;
    if opts.progress.is_some() {
        writeln!(
            out,
            "{:.3} s, {:.3} Mpps, {:.1} Mbit/s",
            secs,
            report.verified as f64 / secs / 1e6,
            report.bytes as f64 * 8.0 / secs / 1e6
        )?;
    }
    Ok(report)
}

fn fmt_mac(m: &[u8; 6]) -> String {
    m.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

fn hex_head(f: &[u8]) -> String {
    f.iter()
        .take(20)
        .map(|b| format!("{b:02x}"))
        .collect::<String>()
        + "..."
}

/// Ethernet loopback through the driver's SQ, RQ and CQs.
#[derive(clap::Parser)]
struct Args {
    /// Frames to send
    #[arg(long, value_name = "N")]
    packets: Option<usize>,
    /// Record the model's port to a pcap file
    #[arg(long, value_name = "FILE")]
    pcap: Option<String>,
    /// An RDMA device (e.g. mlx5_0); without it, the device model
    #[arg(long, value_name = "NAME")]
    device: Option<String>,
}

#[allow(dead_code)] // `mlx5-dpa demo` includes this file for `run` only.
fn main() -> Result<(), Box<dyn Error>> {
    let Args {
        packets,
        pcap,
        device,
    } = clap::Parser::parse();
    let mut opts = Options::default();
    if let Some(n) = packets {
        opts.packets = n;
    }
    let (ctx, model) = match device {
        Some(name) => (
            devx::kernel::KernelDevx::open(Some(&name))? as Arc<dyn Devx>,
            None,
        ),
        None => {
            let dev = mlx5_sim::Device::with_profile("bf3").ok_or("no bf3 profile")?;
            (dev.open_devx(), Some(dev))
        }
    };
    if let Some(dev) = &model {
        if let Some(path) = &pcap {
            let f = std::fs::File::create(path).map_err(|e| format!("pcap {path}: {e}"))?;
            dev.capture(f).map_err(|e| format!("pcap {path}: {e}"))?;
        }
        dev.start_engine();
    } else if pcap.is_some() {
        return Err(
            "--pcap records the device model's port; on hardware use tcpdump or tshark".into(),
        );
    }
    let res = run(&ctx, &mut std::io::stdout(), &opts);
    if let Some(dev) = &model {
        dev.stop_engine();
        dev.stop_captures()?;
    }
    res.map(|_| ())
}
