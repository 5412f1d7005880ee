//! How cost grows on the device model: four curves, each point the median of `ROUNDS` timed
//! rounds, written as CSV under `target/scaling/` (`tools/plot_scaling.py` draws them as the PNG
//! charts docs/performance.md links) and printed as `summary scaling:` rows.
//!
//! `cargo bench --bench scaling` (a bench binary).
//!
//! - `queues`: ns per 64-byte frame through one loopback pair (host SQ -> port -> steering ->
//!   RQ, the model stepped by hand) while 1 .. 1024 send queues exist (the others idle, each
//!   with its ring and doorbell record). Expected flat: the model visits only queues whose
//!   doorbell moved.
//! - `objects`: ns per firmware command with 1 .. 100 000 live objects (protection domains):
//!   a NOP, and an ALLOC_PD + DEALLOC_PD pair (object-table insert and remove). Expected flat:
//!   objects are found by number, not searched.
//! - `threads`: µs per activation round trip of one DPA thread while 1 .. 256 threads of the
//!   process are created and armed (idle, waiting for events), engine running. Expected flat:
//!   the dispatcher looks only at queued threads.
//! - `workers`: frames/s through the packet processor (4 DPA threads, 256 frames in flight)
//!   against the model's host threads that run activations (1, 2, 4 beside the engine
//!   thread). Expected to grow up to the host's cores (this machine has 2) and then level.

#[path = "common/summary.rs"]
#[macro_use]
mod summary;

#[path = "../examples/flexio_packet_processor.rs"]
#[allow(dead_code)]
mod pp;

mod common;

use std::io::Write;
use std::sync::Arc;
use std::time::Instant;

use common::host::Host;
use common::{activate, median, T};
use mlx5_dpa::devx::{self, Devx, UarKind};
use mlx5_dpa::dpa::thread::EventHandlerAttr;
use mlx5_dpa::dpa::{Process, ProcessAttr};
use mlx5_dpa::mem::{Access, MemoryRegion, Pd};
use mlx5_dpa::mlx5::cmd::{Nop, OuterMatch};
use mlx5_dpa::queues::steering::{RxFlow, Tis, TransportDomain};
use mlx5_dpa::queues::wq::ETH_MIN_INLINE;
use mlx5_dpa::queues::{Cq, CqConfig, EthSq, EthSqConfig, HostQueueMem, Rq, RqConfig};
use mlx5_dpa::uar::UarPage;

const ROUNDS: usize = 9;
const RPC_CALC: &[u8] = include_bytes!("../fw-blobs/bin/rpc_calc.elf");

/// Writes `target/scaling/NAME.csv` (x, y per line after a header).
fn csv(name: &str, header: &str, rows: &[(f64, f64)]) {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/scaling");
    let _ = std::fs::create_dir_all(&dir);
    if let Ok(mut f) = std::fs::File::create(dir.join(format!("{name}.csv"))) {
        let _ = writeln!(f, "{header}");
        for (x, y) in rows {
            let _ = writeln!(f, "{x},{y}");
        }
    }
}

fn cq(ctx: &Arc<dyn Devx>, uar: &Arc<UarPage>, log: u8) -> Cq {
    let c = CqConfig::new(log);
    Cq::create(
        ctx,
        uar,
        HostQueueMem::alloc(ctx, c.ring_bytes()).expect("cq memory"),
        &c,
    )
    .expect("cq")
}

/// Loopback frames through one SQ / RQ pair with `idle` more SQs in the model.
fn queues_point(idle: usize) -> f64 {
    const BATCH: usize = 64;
    let dev = mlx5_sim::Device::with_profile("bf3").expect("bf3");
    let ctx = dev.open_devx();
    let mac = dev.port_address().mac;
    let pd = Pd::alloc(&ctx).expect("pd");
    let uar = UarPage::alloc(&ctx, UarKind::NonCached).expect("uar");
    let td = TransportDomain::alloc(&ctx).expect("td");
    let tis = Tis::create(&ctx, &td, &pd).expect("tis");
    let idle_cq = cq(&ctx, &uar, 4);
    let small = EthSqConfig {
        log_size: 2,
        signal_every: 1,
    };
    let _idle: Vec<EthSq> = (0..idle)
        .map(|_| {
            let m = HostQueueMem::alloc(&ctx, small.ring_bytes()).expect("sq memory");
            EthSq::create(&ctx, &pd, &uar, &tis, &idle_cq, m, &small).expect("idle sq")
        })
        .collect();
    let tx_cq = cq(&ctx, &uar, 10);
    let mut rx_cq = cq(&ctx, &uar, 10);
    let scfg = EthSqConfig {
        log_size: 10,
        signal_every: 16,
    };
    let mut sq = EthSq::create(
        &ctx,
        &pd,
        &uar,
        &tis,
        &tx_cq,
        HostQueueMem::alloc(&ctx, scfg.ring_bytes()).expect("sq memory"),
        &scfg,
    )
    .expect("sq");
    let rcfg = RqConfig {
        log_size: 10,
        max_sge: 1,
    };
    let mut rq = Rq::create(
        &ctx,
        &pd,
        &uar,
        &rx_cq,
        HostQueueMem::alloc(&ctx, rcfg.ring_bytes()).expect("rq memory"),
        &rcfg,
    )
    .expect("rq");
    let _flow = RxFlow::to_rq(
        &ctx,
        &td,
        &rq,
        OuterMatch {
            dmac: Some(mac),
            ..OuterMatch::default()
        },
        0,
    )
    .expect("flow");
    let tx = MemoryRegion::alloc(&ctx, &pd, 128, Access::LOCAL_WRITE).expect("tx");
    let rx = MemoryRegion::alloc(&ctx, &pd, 1024 * 128, Access::LOCAL_WRITE).expect("rx");
    let mut frame = [0x5au8; 64];
    frame[0..6].copy_from_slice(&mac);
    frame[12..14].copy_from_slice(&0x88b5u16.to_be_bytes());
    tx.write(0, &frame).expect("frame");
    for s in 0..1024 {
        rq.post_recv(&[rx.sge(s * 128, 128).expect("sge")], s as u64)
            .expect("post");
    }
    rq.ring_doorbell();
    let mut tx_cq = tx_cq;
    let mut round = || {
        for i in 0..BATCH {
            sq.post_send(
                &frame[..ETH_MIN_INLINE],
                &[tx.sge(ETH_MIN_INLINE, 64 - ETH_MIN_INLINE).expect("sge")],
                i as u64,
            )
            .expect("post");
        }
        sq.ring_doorbell();
        dev.run_until_idle();
        tx_cq.poll_batch(BATCH, |c| {
            sq.complete(&c.expect("send")).expect("retire");
        });
        let mut got = 0;
        rx_cq.poll_batch(BATCH, |c| {
            let c = c.expect("receive");
            let slot = rq.complete(c.wqe_counter).expect("slot") as usize;
            rq.post_recv(&[rx.sge(slot * 128, 128).expect("sge")], slot as u64)
                .expect("repost");
            got += 1;
        });
        rq.ring_doorbell();
        assert_eq!(got, BATCH, "every frame arrives");
    };
    for _ in 0..20 {
        round();
    }
    median(
        (0..ROUNDS)
            .map(|_| {
                let t = Instant::now();
                for _ in 0..20 {
                    round();
                }
                t.elapsed().as_nanos() as f64 / (20 * BATCH) as f64
            })
            .collect(),
    )
}

/// ns per NOP and per ALLOC_PD + DEALLOC_PD pair with `live` protection domains.
fn objects_point(ctx: &Arc<dyn Devx>, held: &mut Vec<Arc<Pd>>, live: usize) -> (f64, f64) {
    while held.len() < live {
        held.push(Pd::alloc(ctx).expect("pd"));
    }
    let nop = median(
        (0..ROUNDS)
            .map(|_| {
                let t = Instant::now();
                for _ in 0..2000 {
                    devx::exec(ctx.as_ref(), &Nop).expect("nop");
                }
                t.elapsed().as_nanos() as f64 / 2000.0
            })
            .collect(),
    );
    let pair = median(
        (0..ROUNDS)
            .map(|_| {
                let t = Instant::now();
                for _ in 0..500 {
                    drop(Pd::alloc(ctx).expect("pd"));
                }
                t.elapsed().as_nanos() as f64 / 500.0
            })
            .collect(),
    );
    (nop, pair)
}

fn main() {
    if !common::selected("scaling") {
        return;
    }

    let mut q = Vec::new();
    for n in [1usize, 4, 16, 64, 256, 1024] {
        q.push((n as f64, queues_point(n - 1)));
    }
    csv("queues", "send queues,ns per frame", &q);

    let dev = mlx5_sim::Device::with_profile("bf3").expect("bf3");
    let ctx = dev.open_devx();
    let mut held = Vec::new();
    let (mut nops, mut pairs) = (Vec::new(), Vec::new());
    for n in [1usize, 10, 100, 1_000, 10_000, 100_000] {
        let (nop, pair) = objects_point(&ctx, &mut held, n);
        nops.push((n as f64, nop));
        pairs.push((n as f64, pair));
    }
    csv("objects_nop", "live objects,ns per NOP", &nops);
    csv(
        "objects_alloc",
        "live objects,ns per ALLOC_PD+DEALLOC_PD",
        &pairs,
    );
    drop(held);
    drop(ctx);
    drop(dev);

    let (dev, ctx) = common::model();
    let process = Process::create(&ctx, RPC_CALC, &ProcessAttr::default()).expect("process");
    let probe = process
        .event_handler(&EventHandlerAttr::new("rpc_echo", 7))
        .expect("handler");
    let mut armed = Vec::new();
    let mut th = Vec::new();
    for n in [1usize, 4, 16, 64, 256] {
        while armed.len() + 1 < n {
            armed.push(
                process
                    .event_handler(&EventHandlerAttr::new("rpc_echo", 1))
                    .expect("another thread"),
            );
        }
        for _ in 0..200 {
            activate(&probe, 7);
        }
        let us = median(
            (0..ROUNDS)
                .map(|_| {
                    let t = Instant::now();
                    for _ in 0..500 {
                        activate(&probe, 7);
                    }
                    t.elapsed().as_secs_f64() * 1e6 / 500.0
                })
                .collect(),
        );
        th.push((n as f64, us));
    }
    csv("threads", "DPA threads,us per activation", &th);
    drop(armed);
    drop(probe);
    drop(process);
    drop(ctx);
    dev.stop_engine();
    drop(dev);

    let mut wk = Vec::new();
    for workers in [1usize, 2, 4] {
        wk.push((workers as f64, pp_rate(workers)));
    }
    csv("workers", "model worker threads,frames per second", &wk);

    let row = |name: &str, unit: &str, v: &[(f64, f64)]| {
        let pts: Vec<String> = v.iter().map(|(x, y)| format!("{x}: {y:.1}")).collect();
        let ratio = v.last().map_or(0.0, |l| l.1) / v.first().map_or(1.0, |f| f.1);
        summary!(
            "summary scaling: {name:<24} {unit:<22} {} (last / first = {ratio:.2})",
            pts.join(", ")
        );
    };
    row("queues", "ns/frame", &q);
    row("objects (NOP)", "ns/command", &nops);
    row("objects (ALLOC+DEALLOC)", "ns/pair", &pairs);
    row("armed threads", "us/activation", &th);
    row("model workers", "frames/s", &wk);
    summary!(
        "summary scaling: CSV in {}/target/scaling (python3 tools/plot_scaling.py draws them)",
        env!("CARGO_MANIFEST_DIR")
    );
}

/// Packet-processor frames/s with 4 DPA threads, 256 in flight, `workers` model threads.
fn pp_rate(workers: usize) -> f64 {
    let dev = mlx5_sim::Device::with_profile("bf3").expect("bf3");
    dev.set_dpa_workers(workers);
    dev.start_engine();
    let ctx = dev.open_devx();
    let mac = dev.port_address().mac;
    let rigs: Vec<pp::PacketProcessor> = (0..4u16)
        .map(|k| {
            let depth = common::host::ring_log_depth(256, 4);
            let p = pp::PacketProcessor::setup(&ctx, &pp::Options::udp_flow(mac, 5001 + k, depth))
                .expect("set-up");
            p.wait_ready(T).expect("ready");
            p
        })
        .collect();
    let frames: Vec<Vec<u8>> = (0..4u16).map(|k| pp::flow_frame(mac, 5001 + k)).collect();
    let mut host = Host::new(&ctx, frames, pp::PEER_MAC);
    host.run(10_000, 256);
    let rate = median((0..3).map(|_| host.run(50_000, 256)).collect());
    drop(host);
    drop(rigs);
    drop(ctx);
    dev.stop_engine();
    rate
}
