//! FlexIO's packet-processor sample, in Rust, in two forms.
//!
//! - [`Sample`] / [`run_sample`]: the sample as NVIDIA ships it, in its own host-device
//!   protocol (`struct host2dev_packet_processor_data`): frames from [`PEER_MAC`] reach an RQ
//!   in DPA memory; the handler prints "Process packet: <i>" on a message stream, swaps the
//!   MACs, writes "<n> Event demo***" into 65-byte frames and sends them back on an SQ in DPA
//!   memory. Any device build of the sample works: fw-blobs' `pp_sample.elf`, or NVIDIA's
//!   public `flexio_packet_processor_dev.c` built with `mlx5-dpa cc`. `mlx5-dpa demo
//!   packet-processor [--app-elf FILE]` runs [`run_sample`]; its output is the seed's.
//! - [`PacketProcessor`] / [`run`]: this project's richer variant (`fw-blobs/src/
//!   packet_processor.c`, context block `struct pp_dev_ctx`): any flow, any depth, counters,
//!   every UDP frame's digits turned into letters; what `mlx5-dpa sim --app packet-processor`,
//!   the benches and the TAP test use.
//!
//! ```text
//! cargo run --example flexio_packet_processor                     # on the device model
//! cargo run --example flexio_packet_processor -- --pcap pp.pcap   # record the model's port
//! cargo run --example flexio_packet_processor -- --device mlx5_0  # on a BlueField-3
//! ```
//!
//! The example's `main` runs [`run_sample`].
//!
//! | FlexIO (C)                                    | here                                        |
//! |-----------------------------------------------|---------------------------------------------|
//! | `flexio_process_create`                       | `Process::create`                           |
//! | `flexio_buf_dev_alloc` + `ibv_reg_mr`-like key | `process.alloc`, `DpaMkey::over`           |
//! | `flexio_outbox_create(process, uar)`          | `process.outbox(process.uar())`             |
//! | `flexio_event_handler_create`                 | `process.event_handler(&attr)`              |
//! | `flexio_cq_create` (ring in DPA memory, thread) | `DpaCq::create(.., CqEvents::DpaThread(h))` |
//! | `flexio_rq_create` / `flexio_sq_create`       | `DpaRq::create` / `DpaEthSq::create`        |
//! | `mlx5dv_dr` rule: dmac -> RQ                  | `RxFlow::to_rq(.., &rq, match, level)`      |
//! | `flexio_host2dev_memcpy(ctx)`                 | `process.copy_to_dev(ctx, bytes)`           |
//! | `flexio_event_handler_run`                    | `handler.run(ctx)`                          |
//! | destroy calls, in reverse                     | dropping [`PacketProcessor`]                |
//!
//! [`PacketProcessor::setup`] names each step in its error ([`DpaError::Step`]), and what the
//! earlier steps made is released when a later one fails: `tests/dpa/dpa_packet_processor.rs`
//! fails every firmware command of the set-up in turn and checks both.
//!
//! The demo ([`run`]) injects one 65-byte UDP frame from a host SQ. On the model's loopback
//! port it enters the NIC again, is steered (destination MAC = the port's) to the DPA RQ, and
//! the handler's answer (destination MAC = the sample's 02:42:7e:7f:eb:02) is steered to a host
//! RQ and printed. On hardware the answer only comes back through a loopback plug or a peer
//! that reflects it; otherwise the demo times out with that explanation.
//!
//! `mlx5-dpa demo packet-processor [--pcap FILE] [--app-elf FILE]` runs this file's [`run_sample`]; [`run`] is the same
//! round trip with [`PacketProcessor`].

use std::error::Error;
use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mlx5_dpa::devx::{self, Devx, UarKind};
use mlx5_dpa::dpa::msg_stream::{
    MsgLevel, MsgOutput, MsgStream, MsgStreamAttr, SyncMode, DEFAULT_STREAM_ID,
};
use mlx5_dpa::dpa::outbox::Outbox;
use mlx5_dpa::dpa::queues::{DpaCq, DpaEthSq, DpaMkey, DpaQueueMem, DpaRq};
use mlx5_dpa::dpa::thread::{EventHandler, EventHandlerAttr};
use mlx5_dpa::dpa::{DpaBuf, DpaError, Process, ProcessAttr, StepExt};
use mlx5_dpa::mem::{Access, MemoryRegion, Pd};
use mlx5_dpa::mlx5::cmd::{OuterMatch, QueryNicVportContext};
use mlx5_dpa::queues::steering::{RxFlow, Tis, TransportDomain};
use mlx5_dpa::queues::wq::ETH_MIN_INLINE;
use mlx5_dpa::queues::{Cq, CqConfig, CqEvents, EthSq, EthSqConfig, HostQueueMem, Rq, RqConfig};
use mlx5_dpa::uar::UarPage;

/// The device program (built by `fw-blobs/build.sh`).
pub const PACKET_PROCESSOR_ELF: &[u8] = include_bytes!("../fw-blobs/bin/packet_processor.elf");

/// The MAC address of the sample's peer: the injected frame's source, the answer's destination.
pub const PEER_MAC: [u8; 6] = [0x02, 0x42, 0x7e, 0x7f, 0xeb, 0x02];

/// `pp_dev_ctx` (fw-blobs/src/packet_processor.h): 392 bytes, host part 0..312.
const CTX_BYTES: usize = 392;
const CTX_STATE: usize = 312;
/// `PP_STATE_READY` / `PP_STATE_BAD` ("DRPP" / "ABPP" little-endian).
const PP_STATE_READY: u32 = 0x5050_5244;
const PP_STATE_BAD: u32 = 0x5050_4241;
/// `PP_FLAG_PRINT`.
pub const PP_FLAG_PRINT: u32 = 0x1;

/// How to build the packet processor.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// Frames the DPA takes: by default, IPv4 / UDP to the port's MAC.
    pub flow: Option<OuterMatch>,
    /// log2 of the RQ and SQ depths (the CQs get one more).
    pub log_depth: u8,
    /// log2 of each receive and send buffer's size (6..=16).
    pub log_buf_size: u8,
    /// `pp_dev_ctx.flags`.
    pub flags: u32,
    /// Flow table level of the DPA's rule.
    pub level: u8,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            flow: None,
            log_depth: 6,
            log_buf_size: 11,
            flags: 0,
            level: 0,
        }
    }
}

impl Options {
    /// One of several packet processors on a port, each with a flow of its own: IPv4 / UDP
    /// frames to `port_mac` with destination port `udp_dport` ([`flow_frame`]), queues
    /// `2^log_depth` deep.
    pub fn udp_flow(port_mac: [u8; 6], udp_dport: u16, log_depth: u8) -> Options {
        Options {
            flow: Some(OuterMatch {
                dmac: Some(port_mac),
                ethertype: Some(0x0800),
                ip_protocol: Some(17),
                udp_dport: Some(udp_dport),
                ..OuterMatch::default()
            }),
            log_depth,
            ..Options::default()
        }
    }
}

/// The device-owned counters of `pp_dev_ctx` (offsets 312..392).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    pub ready: bool,
    pub rx_packets: u64,
    pub tx_packets: u64,
    pub rx_dropped: u64,
    pub tx_dropped: u64,
    pub activations: u64,
    pub rewritten: u64,
    pub last_err_synd: u32,
    pub sq_dead: bool,
}

/// Everything the sample creates. Fields drop in declaration order, which is the reverse of
/// creation: the rule before the RQ, the queues before their CQs, the CQ bound to the handler
/// before the handler, the handler before its outbox, the key and the buffers, the process
/// last (each handle also keeps the process alive).
#[derive(Debug)]
pub struct PacketProcessor {
    flow: RxFlow,
    sq: DpaEthSq,
    _tis: Arc<Tis>,
    _td: Arc<TransportDomain>,
    sq_cq: DpaCq,
    rq: DpaRq,
    rq_cq: DpaCq,
    handler: EventHandler,
    outbox: Outbox,
    _mkey: DpaMkey,
    bufs: DpaBuf,
    ctx: DpaBuf,
    process: Process,
    /// The port's MAC address.
    pub port_mac: [u8; 6],
}

fn bad_options(what: String) -> DpaError {
    DpaError::Step {
        step: "checking options",
        source: Box::new(DpaError::BadArgs(what)),
    }
}

impl PacketProcessor {
    /// Builds the sample on `dev` and runs the handler once (it validates its context and arms
    /// the RQ's CQ), as FlexIO's host program does.
    ///
    /// # Errors
    /// [`DpaError::Step`] naming the step that failed; everything made before it is released.
    pub fn setup(dev: &Arc<dyn Devx>, opts: &Options) -> Result<PacketProcessor, DpaError> {
        if !(6..=16).contains(&opts.log_buf_size) || !(1..=12).contains(&opts.log_depth) {
            return Err(bad_options(format!(
                "log_depth {} (1..=12), log_buf_size {} (6..=16)",
                opts.log_depth, opts.log_buf_size
            )));
        }
        let port_mac = devx::exec(dev.as_ref(), &QueryNicVportContext)
            .step("querying the port's MAC address")?
            .mac;
        let process = Process::create(dev, PACKET_PROCESSOR_ELF, &ProcessAttr::default())
            .step("creating the DPA process")?;

        // DPA memory: the context block, then receive buffers and send buffers, one key over
        // both buffer areas.
        let depth = 1usize << opts.log_depth;
        let buf_size = 1usize << opts.log_buf_size;
        let ctx = process
            .alloc(CTX_BYTES as u64)
            .step("allocating the context block in DPA memory")?;
        let bufs = process
            .alloc((2 * depth * buf_size) as u64)
            .step("allocating packet buffers in DPA memory")?;
        let mkey = DpaMkey::over(&process, &bufs, Access::LOCAL_WRITE)
            .step("creating the key over the packet buffers")?;
        let rx_base = bufs.daddr();
        let tx_base = bufs.daddr() + (depth * buf_size) as u64;

        let outbox = process.outbox(process.uar()).step("creating the outbox")?;
        let handler = process
            .event_handler(&EventHandlerAttr {
                default_outbox_id: outbox.id(),
                ..EventHandlerAttr::new("flexio_pp_dev", ctx.daddr())
            })
            .step("creating the event handler")?;

        // The RQ's CQ activates the handler; the SQ's CQ is polled by the handler, never armed.
        let uar = process.uar();
        let cqc = CqConfig {
            events: CqEvents::DpaThread(handler.id()),
            ..CqConfig::new(opts.log_depth + 1)
        };
        let rq_cq = DpaQueueMem::alloc(&process, cqc.ring_bytes())
            .and_then(|m| DpaCq::create(&process, uar, m, &cqc))
            .step("creating the RQ's CQ in DPA memory")?;
        let rqc = RqConfig {
            log_size: opts.log_depth,
            max_sge: 1,
        };
        let mut rq = DpaQueueMem::alloc(&process, rqc.ring_bytes())
            .and_then(|m| DpaRq::create(&process, uar, &rq_cq, m, &rqc))
            .step("creating the RQ in DPA memory")?;
        let rx: Vec<(u64, u32)> = (0..depth)
            .map(|i| (rx_base + (i * buf_size) as u64, buf_size as u32))
            .collect();
        rq.fill(&process, &rx, mkey.lkey())
            .step("posting the receive buffers")?;
        let sq_cqc = CqConfig::new(opts.log_depth + 1);
        let sq_cq = DpaQueueMem::alloc(&process, sq_cqc.ring_bytes())
            .and_then(|m| DpaCq::create(&process, uar, m, &sq_cqc))
            .step("creating the SQ's CQ in DPA memory")?;
        let td = TransportDomain::alloc(dev).step("allocating the transport domain")?;
        let tis = Tis::create(dev, &td, process.pd()).step("creating the TIS")?;
        let sq = DpaQueueMem::alloc(&process, 64 << opts.log_depth)
            .and_then(|m| DpaEthSq::create(&process, uar, &tis, &sq_cq, m, opts.log_depth))
            .step("creating the SQ in DPA memory")?;

        // The context block (pp_dev_ctx): descriptors, send buffers, flags; device part zero.
        let mut c = vec![0u8; CTX_BYTES];
        c[0..56].copy_from_slice(&rq_cq.descriptor().to_bytes());
        c[56..144].copy_from_slice(&rq.descriptor().to_bytes());
        c[144..200].copy_from_slice(&sq_cq.descriptor().to_bytes());
        c[200..288].copy_from_slice(&sq.descriptor().to_bytes());
        c[288..296].copy_from_slice(&tx_base.to_le_bytes());
        c[296..300].copy_from_slice(&mkey.lkey().0.to_le_bytes());
        c[300..304].copy_from_slice(&u32::from(opts.log_buf_size).to_le_bytes());
        c[304..308].copy_from_slice(&opts.flags.to_le_bytes());
        process
            .copy_to_dev(ctx.daddr(), &c)
            .step("writing the context block")?;

        let flow = opts.flow.unwrap_or(OuterMatch {
            dmac: Some(port_mac),
            ethertype: Some(0x0800),
            ip_protocol: Some(17),
            ..OuterMatch::default()
        });
        let flow =
            RxFlow::to_rq(dev, &td, &rq, flow, opts.level).step("steering the flow to the RQ")?;
        handler.run(ctx.daddr()).step("running the event handler")?;
        Ok(PacketProcessor {
            flow,
            sq,
            _tis: tis,
            _td: td,
            sq_cq,
            rq,
            rq_cq,
            handler,
            outbox,
            _mkey: mkey,
            bufs,
            ctx,
            process,
            port_mac,
        })
    }

    /// The process.
    pub fn process(&self) -> &Process {
        &self.process
    }

    /// The event handler.
    pub fn handler(&self) -> &EventHandler {
        &self.handler
    }

    /// The flow rule's TIR number.
    pub fn tirn(&self) -> u32 {
        self.flow.tir().tirn()
    }

    /// Queue numbers: (RQ, RQ CQ, SQ, SQ CQ).
    pub fn queues(&self) -> (u32, u32, u32, u32) {
        (
            self.rq.rqn().0,
            self.rq_cq.cqn().0,
            self.sq.sqn().0,
            self.sq_cq.cqn().0,
        )
    }

    /// The outbox id and the DPA addresses of the context block and packet buffers.
    pub fn layout(&self) -> (u32, u64, u64) {
        (self.outbox.id(), self.ctx.daddr(), self.bufs.daddr())
    }

    /// Reads the device-owned counters of the context block.
    ///
    /// # Errors
    /// A copy failure.
    pub fn stats(&self) -> Result<Stats, DpaError> {
        let mut b = [0u8; CTX_BYTES - CTX_STATE];
        self.process
            .copy_from_dev(self.ctx.daddr() + CTX_STATE as u64, &mut b)?;
        let u32_at = |o: usize| {
            u32::from_le_bytes(
                b[o - CTX_STATE..o - CTX_STATE + 4]
                    .try_into()
                    .unwrap_or_default(),
            )
        };
        let u64_at = |o: usize| {
            u64::from_le_bytes(
                b[o - CTX_STATE..o - CTX_STATE + 8]
                    .try_into()
                    .unwrap_or_default(),
            )
        };
        Ok(Stats {
            ready: u32_at(312) == PP_STATE_READY,
            rx_packets: u64_at(336),
            tx_packets: u64_at(344),
            rx_dropped: u64_at(352),
            tx_dropped: u64_at(360),
            activations: u64_at(368),
            last_err_synd: u32_at(376),
            sq_dead: u32_at(380) != 0,
            rewritten: u64_at(384),
        })
    }

    /// Waits (bounded) until the handler's first activation validated the context.
    ///
    /// # Errors
    /// The handler rejected the context, the process failed, or `timeout` passed.
    pub fn wait_ready(&self, timeout: Duration) -> Result<(), DpaError> {
        let start = Instant::now();
        loop {
            let mut s = [0u8; 4];
            self.process
                .copy_from_dev(self.ctx.daddr() + CTX_STATE as u64, &mut s)?;
            match u32::from_le_bytes(s) {
                PP_STATE_READY => return Ok(()),
                PP_STATE_BAD => {
                    return Err(DpaError::Device(
                        "the packet processor rejected its context block".into(),
                    ))
                }
                _ => {}
            }
            let st = self.process.err_status()?;
            if st.status != mlx5_dpa::dpa::ProcessStatus::Ok {
                return Err(DpaError::ProcessFault {
                    status: st.status,
                    syndrome: st.error_syndrome,
                });
            }
            if start.elapsed() >= timeout {
                return Err(DpaError::Timeout {
                    what: "the packet processor's first activation",
                    after: timeout,
                });
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

/// [`sample_frame`] to UDP destination port `udp_dport` (the flow of
/// [`Options::udp_flow`]), with UDP checksum 0 (none, as IPv4 allows).
pub fn flow_frame(dst: [u8; 6], udp_dport: u16) -> Vec<u8> {
    let mut f = sample_frame(dst);
    f[36..38].copy_from_slice(&udp_dport.to_be_bytes());
    f[40..42].copy_from_slice(&[0, 0]);
    f
}

/// The sample's frame: 65 bytes of IPv4 / UDP from [`PEER_MAC`] to `dst`, payload
/// `"===============12345678"`, with valid IP and UDP checksums.
pub fn sample_frame(dst: [u8; 6]) -> Vec<u8> {
    let payload = b"===============12345678";
    let src_ip = [192, 168, 100, 2];
    let dst_ip = [192, 168, 100, 1];
    let (sport, dport) = (5000u16, 5001u16);
    let udp_len = (8 + payload.len()) as u16;
    let ip_len = 20 + udp_len;
    let mut f = Vec::with_capacity(14 + usize::from(ip_len));
    f.extend_from_slice(&dst);
    f.extend_from_slice(&PEER_MAC);
    f.extend_from_slice(&0x0800u16.to_be_bytes());
    let ip_start = f.len();
    f.extend_from_slice(&[0x45, 0x00]);
    f.extend_from_slice(&ip_len.to_be_bytes());
    f.extend_from_slice(&[0x00, 0x01, 0x40, 0x00, 64, 17, 0, 0]);
    f.extend_from_slice(&src_ip);
    f.extend_from_slice(&dst_ip);
    let ip_sum = checksum(&[&f[ip_start..ip_start + 20]]);
    f[ip_start + 10..ip_start + 12].copy_from_slice(&ip_sum.to_be_bytes());
    f.extend_from_slice(&sport.to_be_bytes());
    f.extend_from_slice(&dport.to_be_bytes());
    f.extend_from_slice(&udp_len.to_be_bytes());
    f.extend_from_slice(&[0, 0]);
    f.extend_from_slice(payload);
    let mut pseudo = Vec::with_capacity(12);
    pseudo.extend_from_slice(&src_ip);
    pseudo.extend_from_slice(&dst_ip);
    pseudo.extend_from_slice(&[0, 17]);
    pseudo.extend_from_slice(&udp_len.to_be_bytes());
    let udp_sum = match checksum(&[&pseudo, &f[ip_start + 20..]]) {
        0 => 0xffff,
        s => s,
    };
    f[ip_start + 26..ip_start + 28].copy_from_slice(&udp_sum.to_be_bytes());
    f
}

/// The Internet checksum of the concatenated parts.
fn checksum(parts: &[&[u8]]) -> u16 {
    let bytes: Vec<u8> = parts.iter().flat_map(|p| p.iter().copied()).collect();
    let mut sum: u32 = bytes
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// What the sample's rule makes of `frame`, computed on the host (the device must agree):
/// MACs swapped; for IPv4 / UDP, payload digits become letters and the UDP checksum 0.
pub fn expected_answer(frame: &[u8]) -> Vec<u8> {
    let mut f = frame.to_vec();
    if f.len() < 14 {
        return f;
    }
    let (dst, src) = (f[0..6].to_vec(), f[6..12].to_vec());
    f[0..6].copy_from_slice(&src);
    f[6..12].copy_from_slice(&dst);
    if f.len() >= 42 && f[12..14] == [0x08, 0x00] && f[14] == 0x45 && f[23] == 17 {
        for b in &mut f[42..] {
            if b.is_ascii_digit() {
                *b = *b - b'0' + b'a';
            }
        }
        f[40] = 0;
        f[41] = 0;
    }
    f
}

/// A hex dump, 16 bytes a line, with offsets and ASCII.
pub fn hex_dump(bytes: &[u8]) -> String {
    let mut s = String::new();
    for (i, line) in bytes.chunks(16).enumerate() {
        let hex: Vec<String> = line.iter().map(|b| format!("{b:02x}")).collect();
        let ascii: String = line
            .iter()
            .map(|&b| {
                if b.is_ascii_graphic() || b == b' ' {
                    b as char
                } else {
                    '.'
                }
            })
            .collect();
        s += &format!("  {:04x}  {:<47}  {ascii}\n", i * 16, hex.join(" "));
    }
    s
}

/// How long the demo waits for the answer.
pub const ANSWER_TIMEOUT: Duration = Duration::from_secs(5);

/// What the demo saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    pub sent: Vec<u8>,
    pub received: Vec<u8>,
    pub stats: Stats,
    /// Set-up time of [`PacketProcessor::setup`].
    pub setup: Duration,
}

/// Builds the packet processor on `dev`, injects the sample frame from a host SQ, waits for
/// the answer on a host RQ, prints both frames and checks the answer against
/// [`expected_answer`].
///
/// # Errors
/// Set-up failures (naming their step), no answer within [`ANSWER_TIMEOUT`], or an answer that
/// differs from what the rule gives.
pub fn run(dev: &Arc<dyn Devx>, out: &mut dyn Write) -> Result<Report, Box<dyn Error>> {
    writeln!(out, "device: {}", dev.describe())?;
    let t0 = Instant::now();
    let pp = PacketProcessor::setup(dev, &Options::default())?;
    pp.wait_ready(ANSWER_TIMEOUT)?;
    let setup = t0.elapsed();
    let (rqn, rq_cqn, sqn, sq_cqn) = pp.queues();
    writeln!(
        out,
        "DPA process {:#x}: handler thread {:#x} on RQ {rqn:#x} (CQ {rq_cqn:#x}), SQ {sqn:#x} (CQ {sq_cqn:#x}), set up in {:.1} ms",
        pp.process().id(),
        pp.handler().id(),
        setup.as_secs_f64() * 1e3
    )?;

    let mut host = HostPort::new(dev, PEER_MAC)?;
    let frame = sample_frame(pp.port_mac);
    writeln!(out, "sent {} bytes to the DPA:", frame.len())?;
    write!(out, "{}", hex_dump(&frame))?;
    host.send(&frame)?;
    let got = host.recv(ANSWER_TIMEOUT)?;
    writeln!(out, "received {} bytes from the DPA:", got.len())?;
    write!(out, "{}", hex_dump(&got))?;
    let want = expected_answer(&frame);
    if got != want {
        return Err(format!(
            "the answer differs from the rewrite rule's; expected:\n{}",
            hex_dump(&want)
        )
        .into());
    }
    let stats = pp.stats()?;
    writeln!(
        out,
        "verified: MACs swapped, payload {:?} -> {:?}; DPA counters: rx {} tx {} rewritten {} dropped {} activations {}",
        String::from_utf8_lossy(&frame[42..]),
        String::from_utf8_lossy(&got[42..]),
        stats.rx_packets,
        stats.tx_packets,
        stats.rewritten,
        stats.rx_dropped + stats.tx_dropped,
        stats.activations
    )?;
    Ok(Report {
        sent: frame,
        received: got,
        stats,
        setup,
    })
}

/// The host's end of the demo: an SQ to inject frames with, and an RQ that receives frames
/// sent to one MAC address (the answers). Fields drop in reverse creation order.
#[derive(Debug)]
pub struct HostPort {
    _rule: RxFlow,
    bufs: MemoryRegion,
    rq: Rq,
    sq: EthSq,
    rx_cq: Cq,
    tx_cq: Cq,
    _tis: Arc<Tis>,
    _td: Arc<TransportDomain>,
    _uar: Arc<UarPage>,
    _pd: Arc<Pd>,
    mac: [u8; 6],
}

/// Receive slots of a [`HostPort`], 4 KiB each.
const HOST_SLOTS: usize = 8;
const HOST_SLOT: usize = 4096;

impl HostPort {
    /// Queues on the host, with frames to `mac` steered to the RQ.
    ///
    /// # Errors
    /// Firmware's refusal.
    pub fn new(dev: &Arc<dyn Devx>, mac: [u8; 6]) -> Result<HostPort, Box<dyn Error>> {
        let pd = Pd::alloc(dev)?;
        let uar = UarPage::alloc(dev, UarKind::NonCached)?;
        let td = TransportDomain::alloc(dev)?;
        let tis = Tis::create(dev, &td, &pd)?;
        let cqc = CqConfig::new(4);
        let tx_cq = Cq::create(dev, &uar, HostQueueMem::alloc(dev, cqc.ring_bytes())?, &cqc)?;
        let rx_cq = Cq::create(dev, &uar, HostQueueMem::alloc(dev, cqc.ring_bytes())?, &cqc)?;
        let sqc = EthSqConfig {
            log_size: 3,
            signal_every: 1,
        };
        let sq = EthSq::create(
            dev,
            &pd,
            &uar,
            &tis,
            &tx_cq,
            HostQueueMem::alloc(dev, sqc.ring_bytes())?,
            &sqc,
        )?;
        let rqc = RqConfig {
            log_size: 3,
            max_sge: 1,
        };
        let mut rq = Rq::create(
            dev,
            &pd,
            &uar,
            &rx_cq,
            HostQueueMem::alloc(dev, rqc.ring_bytes())?,
            &rqc,
        )?;
        let bufs =
            MemoryRegion::alloc(dev, &pd, (HOST_SLOTS + 1) * HOST_SLOT, Access::LOCAL_WRITE)?;
        for s in 0..HOST_SLOTS {
            rq.post_recv(&[bufs.sge((s + 1) * HOST_SLOT, HOST_SLOT)?], s as u64)?;
        }
        rq.ring_doorbell();
        let answers = OuterMatch {
            dmac: Some(mac),
            ..OuterMatch::default()
        };
        let rule = RxFlow::to_rq(dev, &td, &rq, answers, 0)?;
        Ok(HostPort {
            _rule: rule,
            bufs,
            rq,
            sq,
            rx_cq,
            tx_cq,
            _tis: tis,
            _td: td,
            _uar: uar,
            _pd: pd,
            mac,
        })
    }

    /// Sends one frame (at least 18 and at most 4096 bytes) and waits for its completion.
    ///
    /// # Errors
    /// A frame of bad length, a send error or a timeout.
    pub fn send(&mut self, frame: &[u8]) -> Result<(), Box<dyn Error>> {
        if frame.len() < ETH_MIN_INLINE || frame.len() > HOST_SLOT {
            return Err(format!("a frame of {} bytes", frame.len()).into());
        }
        self.bufs.write(0, frame)?;
        let rest: &[_] = if frame.len() > ETH_MIN_INLINE {
            &[self
                .bufs
                .sge(ETH_MIN_INLINE, frame.len() - ETH_MIN_INLINE)?]
        } else {
            &[]
        };
        self.sq.post_send(&frame[..ETH_MIN_INLINE], rest, 0)?;
        self.sq.ring_doorbell();
        let c = self.tx_cq.poll_timeout(ANSWER_TIMEOUT)??;
        self.sq.complete(&c)?;
        Ok(())
    }

    /// Waits (bounded) for the next frame to the port's MAC and returns it.
    ///
    /// # Errors
    /// Nothing arrived within `timeout`, or a receive error.
    pub fn recv(&mut self, timeout: Duration) -> Result<Vec<u8>, Box<dyn Error>> {
        let c = self.rx_cq.poll_timeout(timeout).map_err(|_| {
            format!(
                "no frame to {} within {timeout:?} (on hardware the answer leaves the port: \
                 it needs a loopback plug or a peer that reflects it)",
                fmt_mac(&self.mac)
            )
        })??;
        let slot = self.rq.complete(c.wqe_counter)? as usize;
        let mut got = vec![0u8; c.byte_len as usize];
        self.bufs.read((slot + 1) * HOST_SLOT, &mut got)?;
        self.rq.post_recv(
            &[self.bufs.sge((slot + 1) * HOST_SLOT, HOST_SLOT)?],
            slot as u64,
        )?;
        self.rq.ring_doorbell();
        Ok(got)
    }
}

fn fmt_mac(m: &[u8; 6]) -> String {
    m.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

// ---------------------------------------------------------------------------------------------
// FlexIO's own sample protocol (`host2dev_packet_processor_data`), what `mlx5-dpa demo
// packet-processor` runs: any device build of the sample works with it, NVIDIA's public
// `flexio_packet_processor_dev.c` built with `mlx5-dpa cc` included.

/// fw-blobs' device build of the sample's protocol (`fw-blobs/src/pp_sample.c`).
pub const PP_SAMPLE_ELF: &[u8] = include_bytes!("../fw-blobs/bin/pp_sample.elf");
/// log2 of the sample's queue depths (`LOG_CQ_DEPTH`, `LOG_RQ_DEPTH`, `LOG_SQ_DEPTH`).
pub const SAMPLE_LOG_DEPTH: u8 = 7;
/// log2 of each receive and send buffer (`LOG_WQD_CHUNK_BSIZE`).
pub const SAMPLE_LOG_CHUNK: u8 = 11;
/// `struct host2dev_packet_processor_data`: four queue descriptions and `not_first_run`, packed
/// (24 + 32 + 24 + 32 + 1 bytes), 8-byte aligned.
pub const H2D_BYTES: usize = 120;
/// The text the sample writes into a 65-byte frame from byte 0x2a.
pub const EVENT_DEMO: &[u8; 27] = b"  Event demo***************";

/// `struct app_transfer_cq` bytes.
fn transfer_cq(cq: &DpaCq) -> [u8; 24] {
    let mut b = [0u8; 24];
    b[0..4].copy_from_slice(&cq.cqn().0.to_le_bytes());
    b[4..8].copy_from_slice(&u32::from(SAMPLE_LOG_DEPTH).to_le_bytes());
    b[8..16].copy_from_slice(&cq.ring_daddr().to_le_bytes());
    b[16..24].copy_from_slice(&cq.dbr_daddr().to_le_bytes());
    b
}

/// `struct app_transfer_wq` bytes.
fn transfer_wq(num: u32, lkey: u32, ring: u64, dbr: u64, data: u64) -> [u8; 32] {
    let mut b = [0u8; 32];
    b[0..4].copy_from_slice(&num.to_le_bytes());
    b[4..8].copy_from_slice(&lkey.to_le_bytes());
    b[8..16].copy_from_slice(&ring.to_le_bytes());
    b[16..24].copy_from_slice(&dbr.to_le_bytes());
    b[24..32].copy_from_slice(&data.to_le_bytes());
    b
}

/// Everything the sample's host side creates, released in reverse order (fields drop in
/// declaration order).
#[derive(Debug)]
pub struct Sample {
    flow: RxFlow,
    sq: DpaEthSq,
    _tis: Arc<Tis>,
    _td: Arc<TransportDomain>,
    sq_cq: DpaCq,
    rq: DpaRq,
    rq_cq: DpaCq,
    handler: EventHandler,
    stream: MsgStream,
    outbox: Outbox,
    _mkey: DpaMkey,
    bufs: DpaBuf,
    h2d: DpaBuf,
    process: Process,
}

impl Sample {
    /// Builds the sample as FlexIO's host program does, for the device build `app`: a process,
    /// a message stream (its messages collected, see [`Sample::messages`]), the event handler
    /// `flexio_pp_dev`, an RQ (its CQ bound to the handler) and an SQ with their CQs and
    /// buffers in DPA memory, one key over the buffers, `host2dev_packet_processor_data`
    /// written to DPA memory, the rule steering frames from [`PEER_MAC`] to the RQ; then the
    /// handler is run once with the data's address.
    ///
    /// # Errors
    /// [`DpaError::Step`] naming the step that failed; everything made before it is released.
    pub fn setup(dev: &Arc<dyn Devx>, app: &[u8]) -> Result<Sample, DpaError> {
        Sample::setup_with(dev, app, &ProcessAttr::default())
    }

    /// As [`Sample::setup`], the process made with `attr` (a signature, say).
    ///
    /// # Errors
    /// As [`Sample::setup`].
    pub fn setup_with(
        dev: &Arc<dyn Devx>,
        app: &[u8],
        attr: &ProcessAttr,
    ) -> Result<Sample, DpaError> {
        let process = Process::create(dev, app, attr).step("creating the DPA process")?;
        let stream = MsgStream::create(
            &process,
            &MsgStreamAttr {
                sync_mode: SyncMode::Batch,
                ..MsgStreamAttr::new(DEFAULT_STREAM_ID, MsgLevel::Info, MsgOutput::Collect)
            },
        )
        .step("creating the message stream")?;
        let depth = 1usize << SAMPLE_LOG_DEPTH;
        let chunk = 1usize << SAMPLE_LOG_CHUNK;
        let h2d = process
            .alloc(H2D_BYTES as u64)
            .step("allocating host2dev_packet_processor_data")?;
        let bufs = process
            .alloc((2 * depth * chunk) as u64)
            .step("allocating the RQ and SQ data buffers")?;
        let mkey = DpaMkey::over(&process, &bufs, Access::LOCAL_WRITE)
            .step("creating the key over the data buffers")?;
        let (rx_data, tx_data) = (bufs.daddr(), bufs.daddr() + (depth * chunk) as u64);
        let outbox = process.outbox(process.uar()).step("creating the outbox")?;
        let handler = process
            .event_handler(&EventHandlerAttr {
                default_outbox_id: outbox.id(),
                ..EventHandlerAttr::new("flexio_pp_dev", h2d.daddr())
            })
            .step("creating the event handler")?;
        let uar = process.uar();
        let cqc = CqConfig {
            events: CqEvents::DpaThread(handler.id()),
            ..CqConfig::new(SAMPLE_LOG_DEPTH)
        };
        let rq_cq = DpaQueueMem::alloc(&process, cqc.ring_bytes())
            .and_then(|m| DpaCq::create(&process, uar, m, &cqc))
            .step("creating the RQ's CQ in DPA memory")?;
        let rqc = RqConfig {
            log_size: SAMPLE_LOG_DEPTH,
            max_sge: 1,
        };
        let mut rq = DpaQueueMem::alloc(&process, rqc.ring_bytes())
            .and_then(|m| DpaRq::create(&process, uar, &rq_cq, m, &rqc))
            .step("creating the RQ in DPA memory")?;
        let rx: Vec<(u64, u32)> = (0..depth)
            .map(|i| (rx_data + (i * chunk) as u64, chunk as u32))
            .collect();
        rq.fill(&process, &rx, mkey.lkey())
            .step("posting the receive buffers")?;
        let sq_cqc = CqConfig::new(SAMPLE_LOG_DEPTH);
        let sq_cq = DpaQueueMem::alloc(&process, sq_cqc.ring_bytes())
            .and_then(|m| DpaCq::create(&process, uar, m, &sq_cqc))
            .step("creating the SQ's CQ in DPA memory")?;
        let td = TransportDomain::alloc(dev).step("allocating the transport domain")?;
        let tis = Tis::create(dev, &td, process.pd()).step("creating the TIS")?;
        let sq = DpaQueueMem::alloc(&process, 64 << SAMPLE_LOG_DEPTH)
            .and_then(|m| DpaEthSq::create(&process, uar, &tis, &sq_cq, m, SAMPLE_LOG_DEPTH))
            .step("creating the SQ in DPA memory")?;

        let lkey = mkey.lkey().0;
        let mut d = Vec::with_capacity(H2D_BYTES);
        d.extend_from_slice(&transfer_cq(&rq_cq));
        d.extend_from_slice(&transfer_wq(
            rq.rqn().0,
            lkey,
            rq.ring_daddr(),
            rq.dbr_daddr(),
            rx_data,
        ));
        d.extend_from_slice(&transfer_cq(&sq_cq));
        d.extend_from_slice(&transfer_wq(
            sq.sqn().0,
            lkey,
            sq.ring_daddr(),
            sq.dbr_daddr(),
            tx_data,
        ));
        d.resize(H2D_BYTES, 0); // not_first_run = 0, padding
        process
            .copy_to_dev(h2d.daddr(), &d)
            .step("writing host2dev_packet_processor_data")?;
        let flow = RxFlow::to_rq(
            dev,
            &td,
            &rq,
            OuterMatch {
                smac: Some(PEER_MAC),
                ..OuterMatch::default()
            },
            0,
        )
        .step("steering frames from the sample's source MAC to the RQ")?;
        handler.run(h2d.daddr()).step("running the event handler")?;
        Ok(Sample {
            flow,
            sq,
            _tis: tis,
            _td: td,
            sq_cq,
            rq,
            rq_cq,
            handler,
            stream,
            outbox,
            _mkey: mkey,
            bufs,
            h2d,
            process,
        })
    }

    /// The process.
    pub fn process(&self) -> &Process {
        &self.process
    }

    /// The event handler.
    pub fn handler(&self) -> &EventHandler {
        &self.handler
    }

    /// Queue numbers: (RQ, RQ CQ, SQ, SQ CQ), and the rule's TIR.
    pub fn queues(&self) -> (u32, u32, u32, u32, u32) {
        (
            self.rq.rqn().0,
            self.rq_cq.cqn().0,
            self.sq.sqn().0,
            self.sq_cq.cqn().0,
            self.flow.tir().tirn(),
        )
    }

    /// The DPA addresses of the host2dev data and the data buffers, and the outbox id.
    pub fn layout(&self) -> (u64, u64, u32) {
        (self.h2d.daddr(), self.bufs.daddr(), self.outbox.id())
    }

    /// The device's messages so far (waiting at most `timeout` for the ones in flight).
    ///
    /// # Errors
    /// The stream failed.
    pub fn messages(&mut self, timeout: Duration) -> Result<Vec<String>, DpaError> {
        self.stream.flush(timeout)?;
        Ok(self.stream.take_messages())
    }
}

/// What the sample does to `frame`, the `index`-th it sends (1 for the first): MACs swapped;
/// a 65-byte frame also gets [`EVENT_DEMO`] from byte 0x2a with the low hex digit of `index`
/// at 0x2a. Nothing else changes (checksums included; no headers inlined).
pub fn sample_answer(frame: &[u8], index: u64) -> Vec<u8> {
    let mut f = frame.to_vec();
    if f.len() >= 12 {
        let (dst, src) = (f[0..6].to_vec(), f[6..12].to_vec());
        f[0..6].copy_from_slice(&src);
        f[6..12].copy_from_slice(&dst);
    }
    if f.len() == 65 {
        f[0x2a..].copy_from_slice(&EVENT_DEMO[..65 - 0x2a]);
        f[0x2a] = b"0123456789abcdef"[(index & 0xf) as usize];
    }
    f
}

/// What [`run_sample`] saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SampleReport {
    pub sent: Vec<u8>,
    pub received: Vec<u8>,
    pub messages: Vec<String>,
}

/// FlexIO's packet-processor sample as the seed runs it (`dpa-development-flexio-sdk.txt`,
/// "flexio_packet_process"): builds [`Sample`] for the device build `app` on `dev` (named
/// `device_name`), injects the sample's 65-byte UDP frame from [`PEER_MAC`] through a host SQ,
/// prints the device's "Process packet" line and both frames, and checks the answer against
/// [`sample_answer`].
///
/// # Errors
/// Set-up failures (naming their step), no answer within [`ANSWER_TIMEOUT`], or an answer that
/// differs from the sample's rewrite.
pub fn run_sample(
    dev: &Arc<dyn Devx>,
    device_name: &str,
    app: &[u8],
    out: &mut dyn Write,
) -> Result<SampleReport, Box<dyn Error>> {
    run_sample_with(
        dev,
        device_name,
        app,
        &ProcessAttr::default(),
        out,
        &mut |_, _| Ok(()),
    )
}

/// As [`run_sample`], calling `on_process` with the sample's process (and `out`) once it is
/// set up, before the frame is sent (`mlx5-dpa demo packet-processor --gdb` attaches a
/// debugger there).
///
/// # Errors
/// As [`run_sample`], and what `on_process` returns.
#[allow(clippy::type_complexity)]
pub fn run_sample_with(
    dev: &Arc<dyn Devx>,
    device_name: &str,
    app: &[u8],
    attr: &ProcessAttr,
    out: &mut dyn Write,
    on_process: &mut dyn FnMut(&Process, &mut dyn Write) -> Result<(), Box<dyn Error>>,
) -> Result<SampleReport, Box<dyn Error>> {
    writeln!(
        out,
        "Welcome to 'Flex IO SDK packet processing' sample app."
    )?;
    writeln!(out, "Registered on device {device_name}")?;
    let port_mac = devx::exec(dev.as_ref(), &QueryNicVportContext)?.mac;
    let mut sample = Sample::setup_with(dev, app, attr)?;
    on_process(sample.process(), out)?;
    let mut host = HostPort::new(dev, PEER_MAC)?;
    let frame = sample_frame(port_mac);
    host.send(&frame)?;
    let got = host.recv(ANSWER_TIMEOUT)?;
    let messages = sample.messages(ANSWER_TIMEOUT)?;
    for m in &messages {
        write!(out, "{m}")?;
    }
    writeln!(
        out,
        "sent {} bytes from {}:",
        frame.len(),
        fmt_mac(&PEER_MAC)
    )?;
    write!(out, "{}", hex_dump(&frame))?;
    writeln!(out, "received {} bytes back:", got.len())?;
    write!(out, "{}", hex_dump(&got))?;
    let want = sample_answer(&frame, 1);
    if got != want {
        return Err(format!(
            "the answer differs from the sample's rewrite; expected:\n{}",
            hex_dump(&want)
        )
        .into());
    }
    writeln!(
        out,
        "verified: MACs swapped, payload {:?}",
        String::from_utf8_lossy(&got[0x2a..])
    )?;
    writeln!(out, "Flex IO SDK packet processing sample app is done")?;
    Ok(SampleReport {
        sent: frame,
        received: got,
        messages,
    })
}

/// FlexIO's packet-processor sample: a DPA event handler swaps the MACs of a UDP frame.
#[derive(clap::Parser)]
struct Args {
    /// An RDMA device (e.g. mlx5_0); without it, the device model
    #[arg(long, value_name = "NAME")]
    device: Option<String>,
    /// Record the model's port to a pcap file
    #[arg(long, value_name = "FILE")]
    pcap: Option<String>,
}

#[allow(dead_code)] // `mlx5-dpa demo packet-processor` includes this file for `run` only.
fn main() -> Result<(), Box<dyn Error>> {
    let Args { device, pcap } = clap::Parser::parse();
    let mut model = None;
    let dev: Arc<dyn Devx> = match device {
        Some(ref name) => {
            if pcap.is_some() {
                return Err(
                    "--pcap records the device model's port; on hardware use tcpdump".into(),
                );
            }
            devx::kernel::KernelDevx::open(Some(name))?
        }
        None => {
            let m = mlx5_sim::Device::with_profile("bf3").ok_or("no bf3 profile")?;
            if let Some(p) = &pcap {
                let f = std::fs::File::create(p).map_err(|e| format!("pcap {p}: {e}"))?;
                m.capture(f).map_err(|e| format!("pcap {p}: {e}"))?;
            }
            // The model's engine runs the datapath and the DPA threads.
            m.start_engine();
            let dev = m.open_devx();
            model = Some(m);
            dev
        }
    };
    let name = device.clone().unwrap_or_else(|| "mlx5-sim (bf3)".into());
    let res = run_sample(&dev, &name, PP_SAMPLE_ELF, &mut std::io::stdout());
    drop(dev);
    if let Some(m) = model {
        m.stop_engine();
        m.stop_captures()?;
        if let Some(p) = pcap {
            println!("pcap written to {p}");
        }
    }
    res.map(|_| ())
}
