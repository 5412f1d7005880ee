//! Throughput through the DPA on the device model: the packet-processor sample with many frames
//! in flight, for 1, 2 and 4 DPA threads (each its own process, handler, queues and flow: UDP
//! destination port 5001 + k).
//!
//! `cargo bench --bench throughput` (a bench binary). The host keeps `WINDOW` frames in flight:
//! it posts 65-byte UDP frames on one SQ (one doorbell per burst), the port loops them back,
//! steering sends each to its thread's DPA RQ, the handler answers every frame of its batch
//! from its DPA SQ, and the answers reach one host RQ. Timed: `FRAMES` answers received (every
//! answer checked for length and flow), after a warm-up. Each configuration runs `ROUNDS`
//! times; the median is reported beside the one-in-flight rate of the same rig (the baseline:
//! one frame, wait for its answer, next frame), measured in the same run.
//!
//! The last lines are the `summary throughput:` rows the README quotes.

#[path = "../examples/flexio_packet_processor.rs"]
#[allow(dead_code)]
mod pp;

mod common;

use common::{model, T};
use std::sync::Arc;
use std::time::Instant;

use mlx5_dpa::devx::{Devx, UarKind};
use mlx5_dpa::mem::{Access, MemoryRegion, Pd};
use mlx5_dpa::mlx5::cmd::OuterMatch;
use mlx5_dpa::queues::steering::{RxFlow, Tis, TransportDomain};
use mlx5_dpa::queues::wq::ETH_MIN_INLINE;
use mlx5_dpa::queues::{Cq, CqConfig, EthSq, EthSqConfig, HostQueueMem, Rq, RqConfig};
use mlx5_dpa::uar::UarPage;

/// Frames in flight (posted, answer not yet received).
const WINDOW: usize = 256;
/// Answers per timed round.
const FRAMES: usize = 100_000;
const ROUNDS: usize = 3;
/// Receive slot size (frames are 65 bytes).
const SLOT: usize = 256;
const LOG_RX: u8 = 10;
/// UDP destination port of thread 0.
const PORT0: u16 = 5001;

/// The host's end: one SQ sending every thread's frames, one RQ taking every answer.
struct Host {
    _rule: RxFlow,
    tx_buf: MemoryRegion,
    rx_buf: MemoryRegion,
    rq: Rq,
    sq: EthSq,
    rx_cq: Cq,
    tx_cq: Cq,
    _tis: Arc<Tis>,
    _td: Arc<TransportDomain>,
    _uar: Arc<UarPage>,
    _pd: Arc<Pd>,
    frames: Vec<Vec<u8>>,
}

impl Host {
    fn new(ctx: &Arc<dyn Devx>, frames: Vec<Vec<u8>>) -> Host {
        let pd = Pd::alloc(ctx).expect("pd");
        let uar = UarPage::alloc(ctx, UarKind::NonCached).expect("uar");
        let td = TransportDomain::alloc(ctx).expect("td");
        let tis = Tis::create(ctx, &td, &pd).expect("tis");
        let cq = |log| {
            let c = CqConfig::new(log);
            Cq::create(
                ctx,
                &uar,
                HostQueueMem::alloc(ctx, c.ring_bytes()).expect("cq memory"),
                &c,
            )
            .expect("cq")
        };
        let tx_cq = cq(10);
        let rx_cq = cq(LOG_RX + 1);
        let sqc = EthSqConfig {
            log_size: 10,
            signal_every: 32,
        };
        let sq = EthSq::create(
            ctx,
            &pd,
            &uar,
            &tis,
            &tx_cq,
            HostQueueMem::alloc(ctx, sqc.ring_bytes()).expect("sq memory"),
            &sqc,
        )
        .expect("sq");
        let rqc = RqConfig {
            log_size: LOG_RX,
            max_sge: 1,
        };
        let mut rq = Rq::create(
            ctx,
            &pd,
            &uar,
            &rx_cq,
            HostQueueMem::alloc(ctx, rqc.ring_bytes()).expect("rq memory"),
            &rqc,
        )
        .expect("rq");
        let slots = 1usize << LOG_RX;
        let rx_buf =
            MemoryRegion::alloc(ctx, &pd, slots * SLOT, Access::LOCAL_WRITE).expect("rx buffers");
        for s in 0..slots {
            rq.post_recv(&[rx_buf.sge(s * SLOT, SLOT).expect("sge")], s as u64)
                .expect("post recv");
        }
        rq.ring_doorbell();
        let tx_buf = MemoryRegion::alloc(ctx, &pd, frames.len() * SLOT, Access::LOCAL_WRITE)
            .expect("tx buffers");
        for (k, f) in frames.iter().enumerate() {
            tx_buf.write(k * SLOT, f).expect("frame");
        }
        let rule = RxFlow::to_rq(
            ctx,
            &td,
            &rq,
            OuterMatch {
                dmac: Some(pp::PEER_MAC),
                ..OuterMatch::default()
            },
            0,
        )
        .expect("answer rule");
        Host {
            _rule: rule,
            tx_buf,
            rx_buf,
            rq,
            sq,
            rx_cq,
            tx_cq,
            _tis: tis,
            _td: td,
            _uar: uar,
            _pd: pd,
            frames,
        }
    }

    /// Sends frames (round robin over the flows) keeping at most `window` without an answer,
    /// until `total` answers came; returns frames per second.
    fn run(&mut self, total: usize, window: usize) -> f64 {
        let flows = self.frames.len();
        let len = self.frames[0].len();
        let mut sent = 0usize;
        let mut got = 0usize;
        let start = Instant::now();
        let mut last_progress = Instant::now();
        while got < total {
            // Post what the window and the ring allow, one doorbell for the lot.
            let mut posted = 0;
            while sent < total && sent - got < window && self.sq.free() > 0 {
                let k = sent % flows;
                let f = &self.frames[k];
                let rest = self
                    .tx_buf
                    .sge(k * SLOT + ETH_MIN_INLINE, len - ETH_MIN_INLINE);
                self.sq
                    .post_send(&f[..ETH_MIN_INLINE], &[rest.expect("sge")], k as u64)
                    .expect("post");
                sent += 1;
                posted += 1;
            }
            if posted > 0 {
                self.sq.ring_doorbell();
            }
            let sq = &mut self.sq;
            self.tx_cq.poll_batch(64, |c| {
                let c = c.expect("send completion");
                sq.complete(&c).expect("retire");
            });
            let mut answers = 0;
            let (rq, rx_buf) = (&mut self.rq, &self.rx_buf);
            self.rx_cq.poll_batch(64, |c| {
                let c = c.expect("receive completion");
                assert_eq!(c.byte_len as usize, len, "answer length");
                let slot = rq.complete(c.wqe_counter).expect("rq slot") as usize;
                rq.post_recv(&[rx_buf.sge(slot * SLOT, SLOT).expect("sge")], slot as u64)
                    .expect("repost");
                answers += 1;
            });
            if answers > 0 {
                self.rq.ring_doorbell();
                got += answers;
                last_progress = Instant::now();
            } else {
                assert!(
                    last_progress.elapsed() < T,
                    "no answer for {T:?} ({got} of {total}, {sent} sent)"
                );
                std::thread::yield_now();
            }
        }
        total as f64 / start.elapsed().as_secs_f64()
    }
}

/// Frame of flow `k`: the sample's UDP frame with destination port `PORT0 + k`, UDP checksum 0
/// (none, as IPv4 allows).
fn frame(port_mac: [u8; 6], k: usize) -> Vec<u8> {
    let mut f = pp::sample_frame(port_mac);
    f[36..38].copy_from_slice(&(PORT0 + k as u16).to_be_bytes());
    f[40..42].copy_from_slice(&[0, 0]);
    f
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    if !args.is_empty() && !args.iter().any(|a| "throughput".contains(a.as_str())) {
        return;
    }
    let (d, ctx) = model();
    let mut rows = Vec::new();
    for threads in [1usize, 2, 4] {
        let rigs: Vec<pp::PacketProcessor> = (0..threads)
            .map(|k| {
                let mac = d.port_address().mac;
                let opts = pp::Options {
                    flow: Some(OuterMatch {
                        dmac: Some(mac),
                        ethertype: Some(0x0800),
                        ip_protocol: Some(17),
                        udp_dport: Some(PORT0 + k as u16),
                        ..OuterMatch::default()
                    }),
                    log_depth: 9,
                    ..pp::Options::default()
                };
                let p = pp::PacketProcessor::setup(&ctx, &opts).expect("set-up");
                p.wait_ready(T).expect("ready");
                p
            })
            .collect();
        let frames = (0..threads).map(|k| frame(rigs[0].port_mac, k)).collect();
        let mut host = Host::new(&ctx, frames);
        let before: u64 = rigs
            .iter()
            .map(|r| r.stats().expect("stats").activations)
            .sum();
        // Warm-ups of both paths (with the JIT, what they run gets compiled here).
        host.run(FRAMES / 10, WINDOW);
        host.run(2_000, 1);
        let one = host.run(5_000, 1);
        let many = median((0..ROUNDS).map(|_| host.run(FRAMES, WINDOW)).collect());
        let stats: Vec<pp::Stats> = rigs.iter().map(|r| r.stats().expect("stats")).collect();
        let frames_seen: u64 = stats.iter().map(|s| s.rx_packets).sum();
        let activations: u64 = stats.iter().map(|s| s.activations).sum::<u64>() - before;
        for (k, s) in stats.iter().enumerate() {
            assert!(s.rx_packets > 0, "thread {k} took no frame");
            assert_eq!(s.rx_dropped + s.tx_dropped, 0, "thread {k} dropped frames");
        }
        rows.push((
            threads,
            one,
            many,
            frames_seen as f64 / activations.max(1) as f64,
        ));
        drop(host);
        drop(rigs);
    }
    println!("summary throughput: device model, {}", ctx.describe());
    for (threads, one, many, per_act) in rows {
        println!(
            "summary throughput: {threads} DPA thread(s): {many:>10.0} frames/s with {WINDOW} in \
             flight, {one:>8.0} with one (x{:.1}); {per_act:.1} frames per activation",
            many / one
        );
    }
    drop(ctx);
    d.stop_engine();
}
