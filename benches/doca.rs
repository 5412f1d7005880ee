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
//!   <-> device exchange through the driver). A kernel answers at most 5,000 pings (a kernel
//!   must end within the watchdog's budget, which its pauses count toward), so a long run
//!   launches several.
//! - `notification`: DPA -> DPA notification hops: two DPA threads notify each other through
//!   notification completions (a NOP with a CQE on an SQ in DPA memory, whose CQ activates the
//!   other thread), both adding to one DPA->CPU event; an iteration is 256 hops, started by a
//!   kernel notifying the first thread.
//!
//! - `rdma_write`: RDMA WRITEs posted by DPA code (`doca_dpa_dev_rdma_post_write` between two
//!   contexts' DPA RDMAs, batches of 32 with the last one reporting a completion the kernel
//!   waits for), 1,024 writes per iteration, of 64 bytes and of 4 KiB; beside them the same
//!   writes posted by the host through the driver (`RcQp::post_send` between two host QPs in
//!   loopback, batches of 32, the last signalled and polled).
//!
//! A summary at the end prints medians of 7 rounds.

#[path = "common/summary.rs"]
#[macro_use]
mod summary;

mod common;

use common::{activate, model, T};
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use mlx5_dpa::doca::{
    Dpa, DpaAttr, DpaThread, KernelArg, NotificationCompletion, SyncEvent, SyncEventAttr,
};
use mlx5_dpa::dpa::app::App;
use mlx5_dpa::dpa::thread::EventHandlerAttr;
use mlx5_dpa::dpa::Process;

const KERNELS: &[u8] = include_bytes!("../fw-blobs/bin/doca_kernels.elf");
const ALL: u64 = u64::MAX;

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

/// Two DPA threads that notify each other, counting hops on one event; each stops relaying
/// once the count reaches the limit in its local storage (word 2).
struct Relay {
    // Drop order: notification completions before their threads.
    nc: (NotificationCompletion, NotificationCompletion),
    _threads: (DpaThread, DpaThread),
    tls: (mlx5_dpa::dpa::DpaBuf, mlx5_dpa::dpa::DpaBuf),
    hops: SyncEvent,
}

/// Hops per relay iteration (one kernel launch starts them).
const HOPS: u64 = 256;

impl Relay {
    fn new(dpa: &Dpa) -> Relay {
        let hops = dpa.sync_event(SyncEventAttr::dpa_to_cpu()).expect("event");
        let thread = |tls: &mlx5_dpa::dpa::DpaBuf| {
            let mut t = dpa.thread_create();
            t.set_func_arg("relay_thread", 0).expect("func");
            t.set_local_storage(tls.daddr()).expect("tls");
            t.start().expect("start");
            t
        };
        let tls = (
            dpa.mem_alloc(24).expect("tls"),
            dpa.mem_alloc(24).expect("tls"),
        );
        let mut a = thread(&tls.0);
        let mut b = thread(&tls.1);
        let na = dpa.notification_completion_create(&mut a).expect("nc");
        let nb = dpa.notification_completion_create(&mut b).expect("nc");
        let h = hops.dpa_handle().expect("handle");
        let words =
            |x: u64, y: u64| [x.to_le_bytes(), y.to_le_bytes(), 0u64.to_le_bytes()].concat();
        dpa.h2d_memcpy(tls.0.daddr(), &words(h, nb.dpa_handle()))
            .expect("tls");
        dpa.h2d_memcpy(tls.1.daddr(), &words(h, na.dpa_handle()))
            .expect("tls");
        a.run().expect("run");
        b.run().expect("run");
        Relay {
            nc: (na, nb),
            _threads: (a, b),
            tls,
            hops,
        }
    }

    /// HOPS notifications back and forth, started by a kernel notifying the first thread.
    fn run(&mut self, dpa: &Dpa) {
        let target = self.hops.get() + HOPS;
        for t in [&self.tls.0, &self.tls.1] {
            dpa.h2d_memcpy(t.daddr() + 16, &target.to_le_bytes())
                .expect("limit");
        }
        dpa.kernel_launch_update_set(
            None,
            None,
            1,
            "notify_kernel",
            &[KernelArg::U64(self.nc.0.dpa_handle()), KernelArg::U64(1)],
        )
        .expect("launch");
        self.hops.wait_gt(target - 1, ALL, T).expect("hops");
    }
}

/// Batches of 32 RDMA WRITEs per iteration.
const WRITE_BATCHES: u64 = 32;
const WRITES: u64 = WRITE_BATCHES * 32;

/// Two contexts' DPA RDMAs, connected; A writes into B's buffer.
struct DpaWrites {
    a: Dpa,
    _b: Dpa,
    comp: mlx5_dpa::doca::CompletionContext,
    rdma: mlx5_dpa::doca::DpaRdma,
    _peer: (mlx5_dpa::doca::DpaRdma, mlx5_dpa::doca::CompletionContext),
    src: (mlx5_dpa::doca::DpaMmap, mlx5_dpa::dpa::DpaBuf),
    dst: (mlx5_dpa::doca::DpaMmap, mlx5_dpa::dpa::DpaBuf),
    done: SyncEvent,
    n: u64,
}

impl DpaWrites {
    fn new(ctx: &std::sync::Arc<dyn mlx5_dpa::devx::Devx>, app: &App) -> DpaWrites {
        let a = Dpa::start(ctx, app, &DpaAttr::default()).expect("a");
        let b = Dpa::start(ctx, app, &DpaAttr::default()).expect("b");
        let side = |d: &Dpa| {
            let mut comp = d.completion_create(64).expect("comp");
            comp.start().expect("comp");
            let mut r = d.rdma_create(64).expect("rdma");
            r.attach(&comp).expect("attach");
            r.start().expect("start");
            (r, comp)
        };
        let (mut rdma, comp) = side(&a);
        let (mut peer, pcomp) = side(&b);
        rdma.connect(&mut peer).expect("connect");
        let sbuf = a.mem_alloc(4096).expect("src");
        let dbuf = b.mem_alloc(4096).expect("dst");
        let src = (a.mmap_dpa(&sbuf).expect("map"), sbuf);
        let dst = (b.mmap_dpa(&dbuf).expect("map"), dbuf);
        let done = a.sync_event(SyncEventAttr::dpa_to_cpu()).expect("event");
        DpaWrites {
            a,
            _b: b,
            comp,
            rdma,
            _peer: (peer, pcomp),
            src,
            dst,
            done,
            n: 0,
        }
    }

    /// WRITES writes of `len` bytes, posted and waited for by one kernel.
    fn run(&mut self, len: u64) {
        self.n += 1;
        let args = [
            self.rdma.dpa_handle().expect("h"),
            self.comp.dpa_handle().expect("h"),
            self.src.0.dpa_handle(),
            self.src.1.daddr(),
            self.dst.0.dpa_handle(),
            self.dst.1.daddr(),
            len,
            WRITE_BATCHES,
        ]
        .map(KernelArg::U64);
        self.a
            .kernel_launch_update_add(None, Some((&self.done, 1)), 1, "rdma_write_batches", &args)
            .expect("launch");
        self.done.wait_gt(self.n - 1, ALL, T).expect("writes");
    }
}

/// The baseline: two host QPs in loopback, the same writes posted through the driver.
struct HostWrites {
    qp: mlx5_dpa::queues::RcQp,
    _peer: mlx5_dpa::queues::RcQp,
    cq: mlx5_dpa::queues::Cq,
    _pcq: mlx5_dpa::queues::Cq,
    src: mlx5_dpa::mem::MemoryRegion,
    dst: mlx5_dpa::mem::MemoryRegion,
}

impl HostWrites {
    fn new(ctx: &std::sync::Arc<dyn mlx5_dpa::devx::Devx>) -> HostWrites {
        use mlx5_dpa::mem::{Access, MemoryRegion, Pd};
        use mlx5_dpa::queues::{Cq, CqConfig, HostQueueMem, QpConfig, RcConnect, RcPeer, RcQp};
        use mlx5_dpa::uar::UarPage;
        let pd = Pd::alloc(ctx).expect("pd");
        let uar = UarPage::alloc(ctx, mlx5_dpa::devx::UarKind::NonCached).expect("uar");
        let cqc = CqConfig::new(7);
        let cq = |_: ()| {
            Cq::create(
                ctx,
                &uar,
                HostQueueMem::alloc(ctx, cqc.ring_bytes()).expect("m"),
                &cqc,
            )
            .expect("cq")
        };
        let (c1, c2) = (cq(()), cq(()));
        // Every 32nd WQE asks for a CQE: the last of each batch, also posted as signaled.
        let qpc = QpConfig {
            signal_every: 32,
            ..QpConfig::new(6, 1)
        };
        let qp = |c: &Cq| {
            RcQp::create(
                ctx,
                &pd,
                &uar,
                c,
                c,
                HostQueueMem::alloc(ctx, qpc.ring_bytes()).expect("m"),
                &qpc,
            )
            .expect("qp")
        };
        let (mut q1, mut q2) = (qp(&c1), qp(&c2));
        q1.connect(&RcConnect::new(RcPeer::Loopback {
            remote_qpn: q2.qpn(),
        }))
        .expect("connect");
        q2.connect(&RcConnect::new(RcPeer::Loopback {
            remote_qpn: q1.qpn(),
        }))
        .expect("connect");
        let access = Access::LOCAL_WRITE | Access::REMOTE_WRITE;
        let src = MemoryRegion::alloc(ctx, &pd, 4096, access).expect("src");
        let dst = MemoryRegion::alloc(ctx, &pd, 4096, access).expect("dst");
        HostWrites {
            qp: q1,
            _peer: q2,
            cq: c1,
            _pcq: c2,
            src,
            dst,
        }
    }

    fn run(&mut self, len: u64) {
        use mlx5_dpa::queues::{RemoteAddr, SendOp, SendWr};
        let sges = [self.src.sge(0, len as usize).expect("sge")];
        let remote = RemoteAddr {
            addr: self.dst.addr(),
            rkey: self.dst.rkey(),
        };
        for _ in 0..WRITE_BATCHES {
            for i in 0..32u64 {
                let wr = SendWr {
                    signaled: i == 31,
                    ..SendWr::new(
                        i,
                        SendOp::Write {
                            sges: &sges,
                            remote,
                            imm: None,
                        },
                    )
                };
                self.qp.post_send(&wr).expect("post");
            }
            self.qp.ring_send_doorbell();
            let c = self.cq.poll_timeout(T).expect("poll").expect("completion");
            self.qp.complete_send(c.wqe_counter).expect("retire");
        }
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

    let mut dw = DpaWrites::new(&ctx, &app);
    let mut hw = HostWrites::new(&ctx);
    let mut g = c.benchmark_group("rdma_write");
    g.sample_size(10);
    let mut write_rates = Vec::new();
    for len in [64u64, 4096] {
        g.throughput(Throughput::Bytes(WRITES * len));
        g.bench_function(format!("dpa_posted_{len}B_x{WRITES}"), |b| {
            b.iter(|| dw.run(len))
        });
        g.bench_function(format!("baseline_host_posted_{len}B_x{WRITES}"), |b| {
            b.iter(|| hw.run(len))
        });
        let dpa_t = median((0..7).map(|_| us(1, &mut || dw.run(len))).collect());
        let host_t = median((0..7).map(|_| us(1, &mut || hw.run(len))).collect());
        write_rates.push((len, dpa_t, host_t));
    }
    g.finish();
    drop(dw);
    drop(hw);

    let mut relay = Relay::new(&dpa);
    let mut g = c.benchmark_group("notification");
    g.throughput(Throughput::Elements(HOPS));
    g.sample_size(20);
    g.bench_function("dpa_to_dpa_hops", |b| b.iter(|| relay.run(&dpa)));
    g.finish();
    let hop = median((0..7).map(|_| us(5, &mut || relay.run(&dpa))).collect()) / HOPS as f64;
    drop(relay);

    // The waiting kernel answers a bounded number of pings (a kernel must end within the
    // watchdog's budget, which its pauses count toward): a new one per chunk of rounds.
    const CHUNK: u64 = 5_000;
    let rounds = |n: u64| {
        let mut left = n;
        let mut spent = Duration::ZERO;
        while left > 0 {
            let k = left.min(CHUNK);
            let mut pp = PingPong::new(&dpa, k);
            let t = Instant::now();
            for _ in 0..k {
                pp.round();
            }
            spent += t.elapsed();
            left -= k;
        }
        spent
    };
    let mut g = c.benchmark_group("sync_event");
    g.throughput(Throughput::Elements(1));
    g.bench_function("host_dpa_round_trip", |b| b.iter_custom(&rounds));
    g.bench_function("baseline_one_firmware_command", |b| {
        b.iter(|| process.err_status().expect("query"))
    });
    g.finish();
    let rt = median(
        (0..7)
            .map(|_| rounds(500).as_secs_f64() * 1e6 / 500.0)
            .collect(),
    );
    let cmd = median(
        (0..7)
            .map(|_| {
                us(2000, &mut || {
                    std::hint::black_box(process.err_status().expect("q"));
                })
            })
            .collect(),
    );

    summary!(
        "summary (medians of 7 rounds, device model, {}):",
        ctx.describe()
    );
    summary!(
        "  kernel launch -> completion event seen {launch:>9.1} us   (activation of a thread {act:.1} us: launch / activation = {:.2}; doca_dpa_rpc {rpc:.1} us)",
        launch / act
    );
    summary!(
        "  notification DPA -> DPA (one hop)     {hop:>9.1} us   ({HOPS} hops per kernel launch; launch / hop = {:.1})",
        launch / hop
    );
    for (len, dpa_t, host_t) in &write_rates {
        let ops = WRITES as f64 / (dpa_t * 1e-6);
        summary!(
            "  RDMA WRITE {len:>4} B posted by the DPA {:>8.0} ops/s {:>8.1} MB/s   (host-posted: {:.0} ops/s; DPA / host = {:.2})",
            ops,
            ops * *len as f64 / 1e6,
            WRITES as f64 / (host_t * 1e-6),
            host_t / dpa_t
        );
    }
    summary!(
        "  sync event host -> DPA -> host        {rt:>9.1} us   (one firmware command {cmd:.1} us: round trip / command = {:.2})",
        rt / cmd
    );
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
