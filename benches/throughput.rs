//! Throughput through the DPA on the device model: the packet-processor sample with many frames
//! in flight, for 1, 2, 4 and 16 DPA threads (each its own process, handler, queues and flow: UDP
//! destination port 5001 + k).
//!
//! `cargo bench --bench throughput` (a bench binary). The host keeps `WINDOW` frames in flight,
//! each thread at most its share of them; every thread's rings are twice its share deep (at
//! least 64; `common::host::ring_log_depth`), so the DPA memory the frames cycle through stays
//! about the same from 1 thread to 16 (with 512-deep rings for every count, 16 threads cycled
//! through 16 times the buffers of one; docs/performance.md, 2026-12-08, later, has what that
//! changed). It posts 65-byte UDP frames on one SQ (one doorbell per burst), the port loops
//! them back,
//! steering sends each to its thread's DPA RQ, the handler answers every frame of its batch
//! from its DPA SQ, and the answers reach one host RQ. Timed: `FRAMES` answers received (every
//! answer checked for length and flow), after a warm-up. Each configuration runs `ROUNDS`
//! times; the median is reported beside the one-in-flight rate of the same rig (the baseline:
//! one frame, wait for its answer, next frame), measured in the same run.
//!
//! The last lines are the `summary throughput:` rows docs/performance.md quotes.

#[path = "common/summary.rs"]
#[macro_use]
mod summary;

#[path = "../examples/flexio_packet_processor.rs"]
#[allow(dead_code)]
mod pp;

mod common;

use common::host::Host;
use common::{median, model, T};

/// Frames in flight (posted, answer not yet received).
const WINDOW: usize = 256;
/// Answers per timed round.
const FRAMES: usize = 100_000;
const ROUNDS: usize = 3;
/// UDP destination port of thread 0.
const PORT0: u16 = 5001;

fn main() {
    if !common::selected("throughput") {
        return;
    }
    let (d, ctx) = model();
    let mut rows = Vec::new();
    for threads in [1usize, 2, 4, 16] {
        let rigs: Vec<pp::PacketProcessor> = (0..threads)
            .map(|k| {
                let log_depth = common::host::ring_log_depth(WINDOW, threads);
                let opts = pp::Options::udp_flow(d.port_address().mac, PORT0 + k as u16, log_depth);
                let p = pp::PacketProcessor::setup(&ctx, &opts).expect("set-up");
                p.wait_ready(T).expect("ready");
                p
            })
            .collect();
        let frames = (0..threads)
            .map(|k| pp::flow_frame(rigs[0].port_mac, PORT0 + k as u16))
            .collect();
        let mut host = Host::new(&ctx, frames, pp::PEER_MAC);
        let activations_so_far = || -> u64 {
            rigs.iter()
                .map(|r| r.stats().expect("stats").activations)
                .sum()
        };
        let before = activations_so_far();
        let instr_before = d.dpa_stats().instructions;
        // Warm-ups of both paths (with the JIT, what they run gets compiled here).
        host.run(FRAMES / 10, WINDOW);
        host.run(2_000, 1);
        let one = host.run(5_000, 1);
        let acts_before = activations_so_far();
        let timed = std::time::Instant::now();
        let many = median((0..ROUNDS).map(|_| host.run(FRAMES, WINDOW)).collect());
        let secs = timed.elapsed().as_secs_f64();
        let stats: Vec<pp::Stats> = rigs.iter().map(|r| r.stats().expect("stats")).collect();
        let acts_timed = stats.iter().map(|s| s.activations).sum::<u64>() - acts_before;
        let frames_seen: u64 = stats.iter().map(|s| s.rx_packets).sum();
        let instructions = d.dpa_stats().instructions - instr_before;
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
            instructions as f64 / frames_seen.max(1) as f64,
            acts_timed as f64 / secs,
        ));
        drop(host);
        drop(rigs);
    }
    summary!(
        "summary throughput: device model, {}, {}",
        ctx.describe(),
        common::busy::mode()
    );
    for (threads, one, many, per_act, per_frame, acts) in rows {
        summary!(
            "summary throughput: {threads} DPA thread(s): {many:>10.0} frames/s with {WINDOW} in \
             flight, {one:>8.0} with one (x{:.1}); {acts:.0} activations/s across the threads' \
             EUs; {per_act:.1} frames per activation, {per_frame:.0} DPA instructions per frame",
            many / one
        );
    }
    drop(ctx);
    d.stop_engine();
}
