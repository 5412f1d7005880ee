//! DOCA DPA on the device model: kernel launches and sync-event round trips, each beside its
//! FlexIO baseline measured in the same run.
//!
//! `cargo bench --bench doca`. Groups:
//!
//! - `kernel_launch`: `Dpa::kernel_launch_update_add` of a one-thread kernel (it adds 1 to a
//!   DPA->CPU event) until the host sees the completion event, with pooled threads; beside it
//!   the activation round trip of an existing FlexIO thread (`run` + polling its state), which
//!   a launch builds on, and `doca_dpa_rpc` (`Process::call`).
//! - `sync_event`: one host <-> DPA round trip through two sync events: the host sets `ping`
//!   to i, a running kernel (waiting in `doca_dpa_dev_sync_event_wait_gt`) sets `pong` to i,
//!   the host waits for it; beside it one firmware command round trip (the floor of any host
//!   <-> device exchange through the driver).
//!
//! A summary at the end prints medians of 7 rounds.

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use mlx5_dpa::devx::Devx;
use mlx5_dpa::doca::{Dpa, DpaAttr, KernelArg, SyncEvent, SyncEventAttr};
use mlx5_dpa::dpa::app::App;
use mlx5_dpa::dpa::thread::{EventHandler, EventHandlerAttr, ThreadState};
use mlx5_dpa::dpa::Process;

const KERNELS: &[u8] = include_bytes!("../fw-blobs/bin/doca_kernels.elf");
const T: Duration = Duration::from_secs(10);
const ALL: u64 = u64::MAX;

fn model() -> (mlx5_sim::Device, Arc<dyn Devx>) {
    let d = mlx5_sim::Device::with_profile("bf3").expect("bf3 profile");
    d.start_engine();
    let ctx = d.open_devx();
    (d, ctx)
}

/// Runs an existing thread once and polls until it is no longer running.
fn activate(h: &EventHandler, arg: u64) {
    h.run(arg).expect("run");
    let start = Instant::now();
    loop {
        match h.state().expect("state") {
            ThreadState::Running => {}
            ThreadState::Error => panic!("the thread failed"),
            _ => return,
        }
        assert!(start.elapsed() < T, "activation timed out");
        std::hint::spin_loop();
    }
}

/// Launches and completes kernels one at a time, counting on `comp`.
struct Launches<'a> {
    dpa: &'a Dpa,
    comp: SyncEvent,
    n: u64,
}

impl Launches<'_> {
    fn one(&mut self) {
        let h = self.comp.dpa_handle().expect("handle");
        self.dpa
            .kernel_launch_update_add(
                None,
                None,
                1,
                "linear_kernel",
                &[KernelArg::U64(0), KernelArg::U64(h)],
            )
            .expect("launch");
        self.n += 1;
        self.comp.wait_gt(self.n - 1, ALL, T).expect("completion");
    }
}

/// A running ping-pong kernel and its two events.
struct PingPong {
    ping: SyncEvent,
    pong: SyncEvent,
    i: u64,
}

impl PingPong {
    fn new(dpa: &Dpa, rounds: u64) -> PingPong {
        let ping = dpa.sync_event(SyncEventAttr::cpu_to_dpa()).expect("ping");
        let pong = dpa.sync_event(SyncEventAttr::dpa_to_cpu()).expect("pong");
        dpa.kernel_launch_update_set(
            None,
            None,
            1,
            "pingpong_kernel",
            &[
                KernelArg::U64(ping.dpa_handle().expect("h")),
                KernelArg::U64(pong.dpa_handle().expect("h")),
                KernelArg::U64(rounds),
            ],
        )
        .expect("launch");
        PingPong { ping, pong, i: 0 }
    }

    fn round(&mut self) {
        self.i += 1;
        self.ping.update_set(self.i).expect("ping");
        self.pong.wait_gt(self.i - 1, ALL, T).expect("pong");
    }
}

fn benches(c: &mut Criterion) {
    let (d, ctx) = model();
    let app = App::from_device_elf("doca_kernels", KERNELS).expect("app");
    let dpa = Dpa::start(&ctx, &app, &DpaAttr::default()).expect("context");
    let process: &Process = dpa.process();
    let handler = process
        .event_handler(&EventHandlerAttr::new("sum_rpc", 0))
        .expect("handler");
    let comp = dpa.sync_event(SyncEventAttr::dpa_to_cpu()).expect("comp");
    let mut launches = Launches {
        dpa: &dpa,
        comp,
        n: 0,
    };

    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let us = |n: u32, f: &mut dyn FnMut()| {
        let t = Instant::now();
        for _ in 0..n {
            f();
        }
        t.elapsed().as_secs_f64() * 1e6 / f64::from(n)
    };
    let mut g = c.benchmark_group("kernel_launch");
    g.throughput(Throughput::Elements(1));
    g.bench_function("launch_to_completion_event", |b| b.iter(|| launches.one()));
    g.bench_function("baseline_activation_of_existing_thread", |b| {
        b.iter(|| activate(&handler, 0))
    });
    g.bench_function("doca_dpa_rpc", |b| {
        b.iter(|| assert_eq!(dpa.rpc("sum_rpc", &[2, 3]).expect("rpc"), 5))
    });
    g.finish();
    // The summary's own rounds of this group, before the ping-pong kernel below spins.
    let launch = median((0..7).map(|_| us(200, &mut || launches.one())).collect());
    let act = median(
        (0..7)
            .map(|_| us(200, &mut || activate(&handler, 0)))
            .collect(),
    );
    let rpc = median(
        (0..7)
            .map(|_| {
                us(200, &mut || {
                    std::hint::black_box(dpa.rpc("sum_rpc", &[2, 3]).expect("rpc"));
                })
            })
            .collect(),
    );

    // A kernel that answers far more pings than any run asks for; dropped at the end (its
    // thread is stopped with the context).
    let mut pp = PingPong::new(&dpa, u64::from(u32::MAX));
    let mut g = c.benchmark_group("sync_event");
    g.throughput(Throughput::Elements(1));
    g.bench_function("host_dpa_round_trip", |b| b.iter(|| pp.round()));
    g.bench_function("baseline_one_firmware_command", |b| {
        b.iter(|| process.err_status().expect("query"))
    });
    g.finish();
    let rt = median((0..7).map(|_| us(500, &mut || pp.round())).collect());
    let cmd = median(
        (0..7)
            .map(|_| {
                us(2000, &mut || {
                    std::hint::black_box(process.err_status().expect("q"));
                })
            })
            .collect(),
    );

    println!(
        "summary (medians of 7 rounds, device model, {}):",
        ctx.describe()
    );
    println!(
        "  kernel launch -> completion event seen {launch:>9.1} us   (activation of a thread {act:.1} us: launch / activation = {:.2}; doca_dpa_rpc {rpc:.1} us)",
        launch / act
    );
    println!(
        "  sync event host -> DPA -> host        {rt:>9.1} us   (one firmware command {cmd:.1} us: round trip / command = {:.2})",
        rt / cmd
    );
    drop(pp);
    drop(launches);
    drop(handler);
    drop(dpa);
    drop(ctx);
    d.stop_engine();
}

criterion_group! {
    name = doca;
    config = Criterion::default().measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_millis(500));
    targets = benches
}
criterion_main!(doca);
