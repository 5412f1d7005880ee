//! FlexIO semantics on the device model: RPC round trips, event-handler activations and the
//! packet-processor sample's set-up.
//!
//! `cargo bench --bench dpa`. Groups:
//!
//! - `rpc`: `Process::call("rpc_calculate", [a, b])` (argument block copied into DPA memory,
//!   a DPA thread created, run, waited for and destroyed, as `flexio_process_call` does),
//!   beside two baselines measured in the same run: one firmware command round trip
//!   (QUERY_GENERAL_OBJECT of the process: the floor of any host <-> device exchange) and
//!   the activation round trip of an existing thread (`run` + polling its state).
//! - `activation`: completion-driven activations: one frame at a time through the
//!   packet-processor sample (host SQ -> port -> steering -> DPA RQ -> CQ event -> handler ->
//!   DPA SQ -> port -> host RQ); each iteration is one frame and one activation.
//! - `setup`: `PacketProcessor::setup` until the handler has validated its context, and the
//!   teardown (drop) that follows.
//!
//! A summary at the end prints rates per second from its own rounds (medians of 7).
//!
//! On the model, a round trip through the DPA includes the engine thread's polling and the
//! RISC-V engine (`sim/src/lib.rs`, `engine_loop`; `benches/latency.rs` gives the
//! distributions); the firmware-command baseline shows what the driver's own share costs.

#[path = "common/summary.rs"]
#[macro_use]
mod summary;

#[path = "../examples/flexio_packet_processor.rs"]
#[allow(dead_code)]
mod pp;

mod common;

use common::{activate, model, T};
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use mlx5_dpa::devx::Devx;
use mlx5_dpa::dpa::thread::EventHandlerAttr;
use mlx5_dpa::dpa::{Process, ProcessAttr};

const RPC_CALC: &[u8] = include_bytes!("../fw-blobs/bin/rpc_calc.elf");

/// One firmware command: QUERY of the DPA_PROCESS (what `err_status` sends).
fn query(p: &Process) {
    p.err_status().expect("query");
}

struct Pp {
    p: pp::PacketProcessor,
    host: pp::HostPort,
    frame: Vec<u8>,
}

impl Pp {
    fn new(ctx: &Arc<dyn Devx>) -> Pp {
        let p = pp::PacketProcessor::setup(ctx, &pp::Options::default()).expect("set-up");
        p.wait_ready(T).expect("ready");
        let host = pp::HostPort::new(ctx, pp::PEER_MAC).expect("host port");
        let frame = pp::sample_frame(p.port_mac);
        Pp { p, host, frame }
    }

    /// One frame through the DPA and back.
    fn round(&mut self) {
        self.host.send(&self.frame).expect("send");
        let got = self.host.recv(T).expect("answer");
        assert_eq!(got.len(), self.frame.len());
    }
}

fn setup_and_teardown(ctx: &Arc<dyn Devx>) -> (Duration, Duration) {
    let t = Instant::now();
    let p = pp::PacketProcessor::setup(ctx, &pp::Options::default()).expect("set-up");
    p.wait_ready(T).expect("ready");
    let up = t.elapsed();
    let t = Instant::now();
    drop(p);
    (up, t.elapsed())
}

fn benches(c: &mut Criterion) {
    let (d, ctx) = model();
    let process = Process::create(&ctx, RPC_CALC, &ProcessAttr::default()).expect("process");
    let handler = process
        .event_handler(&EventHandlerAttr::new("rpc_echo", 7))
        .expect("handler");

    let mut g = c.benchmark_group("rpc");
    g.throughput(Throughput::Elements(1));
    g.bench_function("process_call_rpc_calculate", |b| {
        let mut i = 0u64;
        b.iter(|| {
            i += 1;
            let r = process.call("rpc_calculate", &[i, 1]).expect("rpc");
            assert_eq!(r, i + 1);
        })
    });
    g.bench_function("baseline_activation_of_existing_thread", |b| {
        b.iter(|| activate(&handler, 7))
    });
    g.bench_function("baseline_one_firmware_command", |b| {
        b.iter(|| query(&process))
    });
    g.finish();

    let mut g = c.benchmark_group("activation");
    g.throughput(Throughput::Elements(1));
    let mut rig = Pp::new(&ctx);
    g.bench_function("packet_processor_frame_round_trip", |b| {
        b.iter(|| rig.round())
    });
    g.finish();

    let mut g = c.benchmark_group("setup");
    g.sample_size(20);
    g.bench_function("packet_processor_setup", |b| {
        b.iter_custom(|iters| (0..iters).map(|_| setup_and_teardown(&ctx).0).sum())
    });
    g.finish();

    // Summary: medians of 7 rounds each.
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let rate = |n: u32, f: &mut dyn FnMut()| {
        let t = Instant::now();
        for _ in 0..n {
            f();
        }
        f64::from(n) / t.elapsed().as_secs_f64()
    };
    let mut i = 0u64;
    let rpc = median(
        (0..7)
            .map(|_| {
                rate(200, &mut || {
                    i += 1;
                    process.call("rpc_calculate", &[i, 1]).expect("rpc");
                })
            })
            .collect(),
    );
    let act = median(
        (0..7)
            .map(|_| rate(200, &mut || activate(&handler, 7)))
            .collect(),
    );
    let cmd = median(
        (0..7)
            .map(|_| rate(2000, &mut || query(&process)))
            .collect(),
    );
    let before = rig.p.stats().expect("stats").activations;
    let t = Instant::now();
    let frames = median((0..7).map(|_| rate(500, &mut || rig.round())).collect());
    let acts = rig.p.stats().expect("stats").activations - before;
    let act_rate = acts as f64 / t.elapsed().as_secs_f64();
    drop(rig);
    let mut ups = Vec::new();
    let mut downs = Vec::new();
    for _ in 0..7 {
        let (u, dn) = setup_and_teardown(&ctx);
        ups.push(u.as_secs_f64() * 1e3);
        downs.push(dn.as_secs_f64() * 1e3);
    }
    summary!(
        "summary (medians of 7 rounds, device model, {}):",
        ctx.describe()
    );
    summary!("  rpc: process.call          {rpc:>10.0} round trips/s");
    summary!(
        "  rpc: activation of a thread {act:>9.0} /s   (call / activation = {:.2})",
        act / rpc
    );
    summary!(
        "  rpc: one firmware command  {cmd:>10.0} /s   (call = {:.1} commands)",
        cmd / rpc
    );
    summary!("  activation: packet processor {frames:>8.0} frames/s, {act_rate:.0} activations/s (one frame in flight)");
    summary!(
        "  setup: packet processor     {:>8.2} ms set-up, {:.2} ms teardown",
        median(ups),
        median(downs)
    );
    drop(handler);
    drop(process);
    drop(ctx);
    d.stop_engine();
}

criterion_group! {
    name = dpa;
    config = Criterion::default().measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_millis(500));
    targets = benches
}
criterion_main!(dpa);
