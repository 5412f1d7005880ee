//! The GPUNetIO headers' data paths on the device model, run by CPU threads (the headers built
//! as host C++ with g++, as `tests/driver/gpu_headers.rs` and `tests/driver/gpu_verbs.rs` do): what the
//! driver side and the model cost per operation before any GPU is involved. On a GPU the
//! kernel's side differs (PCIe reads and writes to host memory); these figures are the
//! model's and the headers' own.
//!
//! `cargo bench --bench gpu_host` (a bench binary): each figure a median over rounds.
//! - Ethernet send: frames per second from 1 and 4 "kernel" threads sharing one SQ
//!   (`doca_gpu_dev_eth_txq_send`, a completion per frame, waited for), with the CPU proxy
//!   ringing, against the kernel ringing the doorbell itself;
//! - doorbell -> CQE: one frame posted, submitted and its completion polled, proxy against
//!   kernel-rung;
//! - Verbs: put bandwidth (4 KiB RDMA WRITEs to a force-loopback peer, a wait every 16) and
//!   latency (one 8-byte put and its completion).
//!
//! Baseline, measured in the same run: the driver's own `EthSq::post_send` + doorbell + CQE
//! poll of one frame, the floor of the doorbell -> CQE figure.
//!
//! Without g++ the bench says so and reports nothing.

#[path = "common/summary.rs"]
#[macro_use]
mod summary;

#[path = "common/args.rs"]
mod args;

#[path = "../tests/gpu/mod.rs"]
mod gpu;

#[path = "../tests/common/mod.rs"]
mod eth;

#[path = "../examples/rdma_rc.rs"]
#[allow(dead_code)]
mod rdma_rc;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mlx5_dpa::gpu::{EthTxq, NicHandler, VerbsQp};
use mlx5_dpa::queues::wq::ETH_MIN_INLINE;

type SendFn = unsafe extern "C" fn(u64, u64, u32, u32, *const u32, u32, u32, u32) -> i32;
type PutManyFn = unsafe extern "C" fn(u64, u64, u32, u64, u32, u32, u32, u32) -> i32;

const SLOT: usize = 2048;
const FRAMES: usize = 4096;
const ROUNDS: usize = 9;
const LAT_ROUNDS: usize = 2000;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// A CPU proxy on a thread of its own while `f` runs, when `handler` needs one. It yields its
/// core when it has nothing to ring: this machine has two cores for the model's engine, the
/// "kernel" threads and the proxy (a real proxy has a core to itself).
fn with_proxy<T: Send + 'static, R>(
    q: T,
    proxy: fn(&mut T) -> bool,
    handler: NicHandler,
    f: impl FnOnce() -> R,
) -> (T, R) {
    if handler != NicHandler::CpuProxy {
        return (q, f());
    }
    let stop = Arc::new(AtomicBool::new(false));
    let t = {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            let mut q = q;
            while !stop.load(Ordering::Acquire) {
                if !proxy(&mut q) {
                    std::thread::yield_now();
                }
            }
            q
        })
    };
    let r = f();
    stop.store(true, Ordering::Release);
    (t.join().expect("proxy"), r)
}

fn eth_send(lib: &libloading::Library, handler: NicHandler, threads: u32, n: usize) -> f64 {
    let send: SendFn = gpu::sym(lib, b"harness_send");
    let e = eth::eth(12, 12, 4, 1, SLOT).expect("queues");
    e.dev.start_engine();
    // Frames to another MAC: sent and dropped by steering, never queued for a receive.
    let frame: Vec<u8> = {
        let mut f = vec![0x02, 0, 0, 0, 0, 0x99, 0x02, 0, 0, 0, 0, 0x66, 0x88, 0xb5];
        f.resize(64, 0x5a);
        f
    };
    for i in 0..16 {
        e.tx.write(i * SLOT, &frame).expect("frame");
    }
    let lens: Arc<Vec<u32>> = Arc::new(vec![64; n]);
    let base = e.tx.sge(0, SLOT).expect("sge").addr;
    let mkey = e.tx.lkey().0.to_be();
    let eth::Eth { sq, tx_cq, dev, .. } = e;
    let txq = EthTxq::export(sq, tx_cq, handler).expect("export");
    let handle = txq.handle_addr();
    let (txq, secs) = with_proxy(txq, EthTxq::cpu_proxy_progress, handler, || {
        let t = Instant::now();
        let workers: Vec<_> = (0..threads)
            .map(|k| {
                let lens = Arc::clone(&lens);
                std::thread::spawn(move || {
                    // SAFETY: the handle and frames outlive the threads (joined here); every
                    // frame slot (`base + (i % 16) * SLOT`) holds a 64-byte frame.
                    unsafe { send(handle, base, mkey, 0, lens.as_ptr(), k, threads, n as u32) }
                })
            })
            .collect();
        for w in workers {
            assert_eq!(w.join().expect("sender"), 0);
        }
        t.elapsed().as_secs_f64()
    });
    drop(txq);
    drop(dev);
    n as f64 / secs
}

/// Doorbell -> CQE of one frame at a time, in microseconds (median of `LAT_ROUNDS`).
fn eth_latency(lib: &libloading::Library, handler: NicHandler) -> f64 {
    let send: SendFn = gpu::sym(lib, b"harness_send");
    let e = eth::eth(8, 8, 4, 1, SLOT).expect("queues");
    e.dev.start_engine();
    let mut frame = vec![0x02, 0, 0, 0, 0, 0x99, 0x02, 0, 0, 0, 0, 0x66, 0x88, 0xb5];
    frame.resize(64, 0x5a);
    e.tx.write(0, &frame).expect("frame");
    let base = e.tx.sge(0, SLOT).expect("sge").addr;
    let mkey = e.tx.lkey().0.to_be();
    let eth::Eth { sq, tx_cq, dev, .. } = e;
    let txq = EthTxq::export(sq, tx_cq, handler).expect("export");
    let handle = txq.handle_addr();
    let len = [64u32];
    let (txq, v) = with_proxy(txq, EthTxq::cpu_proxy_progress, handler, || {
        (0..LAT_ROUNDS + LAT_ROUNDS / 10)
            .map(|_| {
                let t = Instant::now();
                // SAFETY: the handle and the frame outlive the call; one length given.
                let r = unsafe { send(handle, base, mkey, 0, len.as_ptr(), 0, 1, 1) };
                assert_eq!(r, 0);
                t.elapsed().as_secs_f64() * 1e6
            })
            .skip(LAT_ROUNDS / 10)
            .collect::<Vec<f64>>()
    });
    drop(txq);
    drop(dev);
    median(v)
}

/// The same exchange through the driver itself: `post_send`, doorbell, CQE polled.
fn driver_latency() -> f64 {
    let mut e = eth::eth(8, 8, 4, 1, SLOT).expect("queues");
    e.dev.start_engine();
    let mut frame = vec![0x02, 0, 0, 0, 0, 0x99, 0x02, 0, 0, 0, 0, 0x66, 0x88, 0xb5];
    frame.resize(64, 0x5a);
    e.tx.write(0, &frame).expect("frame");
    let rest = e.tx.sge(ETH_MIN_INLINE, 64 - ETH_MIN_INLINE).expect("sge");
    let v: Vec<f64> = (0..LAT_ROUNDS + LAT_ROUNDS / 10)
        .map(|i| {
            let t = Instant::now();
            e.sq.post_send(&frame[..ETH_MIN_INLINE], &[rest], i as u64)
                .expect("post");
            e.sq.ring_doorbell();
            let c = e
                .tx_cq
                .poll_timeout(Duration::from_secs(10))
                .expect("cqe")
                .expect("ok");
            e.sq.complete(&c).expect("complete");
            t.elapsed().as_secs_f64() * 1e6
        })
        .skip(LAT_ROUNDS / 10)
        .collect();
    median(v)
}

/// Verbs puts of `size` bytes from one thread: (MB/s for `count` puts, a wait every 16) or,
/// with `count` 1, the latency of one put in microseconds (median of `LAT_ROUNDS`).
fn verbs_put(lib: &libloading::Library, handler: NicHandler, size: u32, count: u32) -> f64 {
    let put: PutManyFn = gpu::sym(lib, b"harness_verbs_put_many");
    let dev = mlx5_sim::Device::with_profile("bf3").expect("bf3");
    dev.set_port_address([0x02, 0, 0x5e, 0, 0, 1], [10, 0, 0, 1]);
    dev.start_engine();
    let ctx = dev.open_devx();
    let mut a = rdma_rc::Side::new(&ctx).expect("side");
    let mut b = rdma_rc::Side::new(&ctx).expect("side");
    rdma_rc::connect(&mut a, &mut b, true).expect("connect");
    let (laddr, lkey) = (a.mr.sge(0, 8).expect("sge").addr, a.mr.lkey().0.to_be());
    let (raddr, rkey) = (b.mr.sge(0, 8).expect("sge").addr, b.mr.rkey().0.to_be());
    let rdma_rc::Side {
        qp,
        send_cq,
        recv_cq,
        mr,
        ..
    } = a;
    let v = VerbsQp::export(qp, send_cq, recv_cq, handler).expect("export");
    let handle = v.handle_addr();
    let (v, figure) = with_proxy(v, VerbsQp::cpu_proxy_progress, handler, || {
        if count == 1 {
            let lat: Vec<f64> = (0..LAT_ROUNDS + LAT_ROUNDS / 10)
                .map(|_| {
                    let t = Instant::now();
                    // SAFETY: the handle and both regions outlive the call.
                    let r = unsafe { put(handle, raddr, rkey, laddr, lkey, size, 1, 1) };
                    assert_eq!(r, 0);
                    t.elapsed().as_secs_f64() * 1e6
                })
                .skip(LAT_ROUNDS / 10)
                .collect();
            median(lat)
        } else {
            let t = Instant::now();
            // SAFETY: as above.
            let r = unsafe { put(handle, raddr, rkey, laddr, lkey, size, count, 16) };
            assert_eq!(r, 0);
            f64::from(size) * f64::from(count) / t.elapsed().as_secs_f64() / 1e6
        }
    });
    drop((v, mr, b));
    drop(dev);
    figure
}

/// The driver's own rate for the same frames: `post_send` of every frame, a doorbell every 32,
/// every CQE polled (frames per second).
fn driver_send_rate(n: usize) -> f64 {
    let mut e = eth::eth(12, 12, 4, 1, SLOT).expect("queues");
    e.dev.start_engine();
    let mut frame = vec![0x02, 0, 0, 0, 0, 0x99, 0x02, 0, 0, 0, 0, 0x66, 0x88, 0xb5];
    frame.resize(64, 0x5a);
    e.tx.write(0, &frame).expect("frame");
    let rest = e.tx.sge(ETH_MIN_INLINE, 64 - ETH_MIN_INLINE).expect("sge");
    let t = Instant::now();
    let mut done = 0;
    for i in 0..n {
        e.sq.post_send(&frame[..ETH_MIN_INLINE], &[rest], i as u64)
            .expect("post");
        if i % 32 == 31 || i + 1 == n {
            e.sq.ring_doorbell();
        }
    }
    while done < n {
        let c = e
            .tx_cq
            .poll_timeout(Duration::from_secs(10))
            .expect("cqe")
            .expect("ok");
        e.sq.complete(&c).expect("complete");
        done += 1;
    }
    n as f64 / t.elapsed().as_secs_f64()
}

/// The driver's own RDMA WRITEs of `size` bytes on the same kind of pair, a wait every 16
/// (MB/s).
fn driver_put_rate(size: usize, count: usize) -> f64 {
    use mlx5_dpa::queues::{RemoteAddr, SendOp, SendWr};
    let dev = mlx5_sim::Device::with_profile("bf3").expect("bf3");
    dev.set_port_address([0x02, 0, 0x5e, 0, 0, 1], [10, 0, 0, 1]);
    dev.start_engine();
    let ctx = dev.open_devx();
    let mut a = rdma_rc::Side::new(&ctx).expect("side");
    let mut b = rdma_rc::Side::new(&ctx).expect("side");
    rdma_rc::connect(&mut a, &mut b, true).expect("connect");
    let remote = RemoteAddr {
        addr: b.mr.sge(0, 8).expect("sge").addr,
        rkey: b.mr.rkey(),
    };
    let local = [a.mr.sge(0, size).expect("sge")];
    let t = Instant::now();
    let mut outstanding = 0;
    for i in 0..count {
        let op = SendOp::Write {
            sges: &local,
            remote,
            imm: None,
        };
        a.qp.post_send(&SendWr::new(i as u64, op)).expect("post");
        a.qp.ring_send_doorbell();
        outstanding += 1;
        if outstanding == 16 || i + 1 == count {
            while outstanding > 0 {
                let c = a
                    .send_cq
                    .poll_timeout(Duration::from_secs(10))
                    .expect("cqe")
                    .expect("ok");
                a.qp.complete_send(c.wqe_counter).expect("complete");
                outstanding -= 1;
            }
        }
    }
    (size * count) as f64 / t.elapsed().as_secs_f64() / 1e6
}

fn main() {
    if !args::selected("gpu_host") {
        return;
    }
    if cfg!(no_gxx) {
        println!("gpu_host: g++ not available, nothing measured");
        return;
    }
    let lib = gpu::harness();
    let handlers = [
        (NicHandler::CpuProxy, "CPU proxy"),
        (NicHandler::GpuSmDb, "kernel-rung"),
    ];
    let base_send = median((0..ROUNDS).map(|_| driver_send_rate(FRAMES)).collect());
    for (handler, name) in handlers {
        for threads in [1u32, 4] {
            let v: Vec<f64> = (0..ROUNDS)
                .map(|_| eth_send(lib, handler, threads, FRAMES))
                .collect();
            let rate = median(v);
            summary!(
                "summary gpu_host: Ethernet send, {threads} thread(s), {name}: {:.0} k frames/s ({:.2}x the driver's own {:.0} k/s; a CQE per frame)",
                rate / 1e3,
                rate / base_send,
                base_send / 1e3
            );
        }
    }
    let base = driver_latency();
    for (handler, name) in handlers {
        let us = eth_latency(lib, handler);
        summary!(
            "summary gpu_host: doorbell -> CQE, {name}: {us:.2} us ({:.2}x the driver's own {base:.2} us)",
            us / base
        );
    }
    let base_put = median((0..ROUNDS).map(|_| driver_put_rate(4096, 4096)).collect());
    for (handler, name) in handlers {
        let bw = median(
            (0..ROUNDS)
                .map(|_| verbs_put(lib, handler, 4096, 4096))
                .collect(),
        );
        let lat = verbs_put(lib, handler, 8, 1);
        summary!(
            "summary gpu_host: Verbs put, {name}: {bw:.0} MB/s ({:.2}x the driver's own {base_put:.0} MB/s; 4 KiB puts, a wait every 16), {lat:.2} us per 8-byte put and its CQE",
            bw / base_put
        );
    }
}
