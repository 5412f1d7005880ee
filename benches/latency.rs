//! Latency through the DPA on the device model, one exchange in flight, and what the model's
//! engine costs when nothing happens.
//!
//! `cargo bench --bench latency` (a bench binary, not criterion: it reports distributions of
//! single round trips, which criterion's means hide). Each figure is the median (and p99) of
//! `ROUNDS` timed round trips after a warm-up:
//!
//! - `doorbell -> DPA -> CQE`: the packet-processor sample with one frame in flight: the host
//!   posts a frame and rings its SQ doorbell; the frame loops through the port to the DPA RQ,
//!   its CQE activates the handler, which sends the answer from its DPA SQ; the time ends when
//!   the answer's CQE is polled on the host RQ's CQ.
//! - `activation of a thread`: `EventHandler::run` then `EventHandler::wait_done` (looks of
//!   two firmware commands each, sleeping on the device's activity in between) until it is no
//!   longer running.
//! - `process.call`: `flexio_process_call`'s round trip (arguments into DPA memory, a thread
//!   created, run, waited for, destroyed).
//! - baseline, measured in the same run: one firmware command (QUERY of the process), the floor
//!   of any exchange with the model.
//!
//! Then the engine's idle cost: the model's engine thread's CPU time (from
//! `/proc/self/task/<tid>/schedstat`) over one second, after one second with nothing to do.
//!
//! The last lines are the `summary latency:` rows docs/performance.md quotes. With
//! `MLX5_BENCH_BUSY=2` the same figures are measured beside two CPU-bound competitor threads
//! (`common/busy.rs`).

#[path = "common/summary.rs"]
#[macro_use]
mod summary;

#[path = "../examples/flexio_packet_processor.rs"]
#[allow(dead_code)]
mod pp;

mod common;

use common::{activate, model, T};
use std::time::{Duration, Instant};

use mlx5_dpa::dpa::thread::EventHandlerAttr;
use mlx5_dpa::dpa::{Process, ProcessAttr};

const RPC_CALC: &[u8] = include_bytes!("../fw-blobs/bin/rpc_calc.elf");
const ROUNDS: usize = 2000;
const WARM: usize = 200;

/// Median and 99th percentile of `ROUNDS` timed calls of `f`, in microseconds.
fn dist(mut f: impl FnMut()) -> (f64, f64) {
    for _ in 0..WARM {
        f();
    }
    let mut v: Vec<f64> = (0..ROUNDS)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64() * 1e6
        })
        .collect();
    v.sort_by(f64::total_cmp);
    (v[v.len() / 2], v[v.len() * 99 / 100])
}

fn row(name: &str, (med, p99): (f64, f64)) {
    summary!(
        "summary latency: {name:<34} median {med:>8.2} us  p99 {p99:>8.2} us  ({:>9.0} /s)",
        1e6 / med
    );
}

fn main() {
    if !common::selected("latency") {
        return;
    }
    let (d, ctx) = model();

    let rig_setup = pp::PacketProcessor::setup(&ctx, &pp::Options::default()).expect("set-up");
    rig_setup.wait_ready(T).expect("ready");
    let mut host = pp::HostPort::new(&ctx, pp::PEER_MAC).expect("host port");
    let frame = pp::sample_frame(rig_setup.port_mac);
    let frame_rt = dist(|| {
        host.send(&frame).expect("send");
        let got = host.recv(T).expect("answer");
        assert_eq!(got.len(), frame.len());
    });
    drop(host);
    drop(rig_setup);

    let process = Process::create(&ctx, RPC_CALC, &ProcessAttr::default()).expect("process");
    let handler = process
        .event_handler(&EventHandlerAttr::new("rpc_echo", 7))
        .expect("handler");
    let act = dist(|| activate(&handler, 7));
    let mut i = 0u64;
    let call = dist(|| {
        i += 1;
        assert_eq!(process.call("rpc_calculate", &[i, 1]).expect("rpc"), i + 1);
    });
    let cmd = dist(|| {
        process.err_status().expect("query");
    });

    let idle = engine_idle_cpu();

    summary!(
        "summary latency: device model, {}, {}",
        ctx.describe(),
        common::busy::mode()
    );
    row("doorbell -> DPA handler -> CQE", frame_rt);
    row("activation of a thread", act);
    row("process.call", call);
    row("baseline: one firmware command", cmd);
    match idle {
        Some(f) => summary!(
            "summary latency: engine thread idle: {:.2}% of a core (1 s measured after 1 s idle)",
            f * 100.0
        ),
        None => summary!("summary latency: engine thread idle: /proc not readable"),
    }
    drop(handler);
    drop(process);
    drop(ctx);
    d.stop_engine();
}

/// The share of a core the model's engine thread used over one second, after one second of
/// nothing to do.
fn engine_idle_cpu() -> Option<f64> {
    std::thread::sleep(Duration::from_secs(1));
    let a = engine_cpu_ns()?;
    let t = Instant::now();
    std::thread::sleep(Duration::from_secs(1));
    let b = engine_cpu_ns()?;
    Some(b.saturating_sub(a) as f64 / 1e9 / t.elapsed().as_secs_f64())
}

/// Time on a CPU (ns, the first field of `schedstat`) of this process's threads named
/// `mlx5-sim-engine`.
fn engine_cpu_ns() -> Option<u64> {
    let mut total = None;
    for e in std::fs::read_dir("/proc/self/task").ok()? {
        let dir = e.ok()?.path();
        let comm = std::fs::read_to_string(dir.join("comm")).ok()?;
        if comm.trim() != "mlx5-sim-engine" {
            continue;
        }
        let stat = std::fs::read_to_string(dir.join("schedstat")).ok()?;
        let ns: u64 = stat.split_whitespace().next()?.parse().ok()?;
        total = Some(total.unwrap_or(0) + ns);
    }
    total
}
