//! The data-plane hot paths allocate nothing: a counting global allocator (a wrapper over
//! `System`) counts `alloc`, `alloc_zeroed`, `realloc` and `dealloc` calls made by the current
//! thread while a counted section runs. Queues are created, buffers registered and frames
//! written before counting starts; the device model (`run_until_idle`) runs outside the
//! driver's counted sections, since it is not the driver; the CQEs it wrote are polled inside
//! them. One test counts the model's own passes instead (its Ethernet datapath).
//!
//! This file is its own test binary, so the allocator sees only these tests. Counting is per
//! thread, so tests running in parallel do not see each other's allocations.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::hint::black_box;
use std::sync::Arc;

use mlx5_dpa::devx::{Devx, UarKind};
use mlx5_dpa::mem::{Access, MemoryRegion, Pd, Sge};
use mlx5_dpa::queues::ring::wqebbs;
use mlx5_dpa::queues::wq::ETH_MIN_INLINE;
use mlx5_dpa::queues::{
    Arm, Completion, CompletionError, CompletionKind, Cq, CqConfig, HostQueueMem, QpConfig,
    QueueError, RcConnect, RcPeer, RcQp, RemoteAddr, SendOp, SendWr,
};
use mlx5_dpa::uar::UarPage;

// ---------------------------------------------------------------------------------------
// The counting allocator.

struct Counting;

thread_local! {
    // Const-initialised `Cell`s of plain integers: no lazy initialisation and no destructor,
    // so touching them from inside the allocator never allocates or recurses.
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    static ALLOCS: Cell<u64> = const { Cell::new(0) };
    static FREES: Cell<u64> = const { Cell::new(0) };
}

fn note(which: &'static std::thread::LocalKey<Cell<u64>>) {
    // `try_with`: during thread teardown the slots may be gone; nothing is counted then.
    let on = COUNTING.try_with(Cell::get).unwrap_or(false);
    if on {
        let _ = which.try_with(|c| c.set(c.get() + 1));
    }
}

// SAFETY: every method forwards to `System` with the caller's arguments unchanged, so the
// `GlobalAlloc` contract holds exactly as it does for `System`; the counting touches only
// thread-local integers.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(&ALLOCS);
        // SAFETY: forwarded unchanged; the caller upholds `alloc`'s contract.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note(&ALLOCS);
        // SAFETY: forwarded unchanged.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note(&ALLOCS);
        // SAFETY: forwarded unchanged; `ptr` came from this allocator, i.e. from `System`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        note(&FREES);
        // SAFETY: forwarded unchanged; `ptr` came from `System` through this allocator.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Heap calls made by this thread while `f` ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Heap {
    allocs: u64,
    frees: u64,
}

const NONE: Heap = Heap {
    allocs: 0,
    frees: 0,
};

/// Runs `f` with counting on; returns its result and the calls it made. Nothing in here but
/// `f` may allocate: the counters are reset and read without allocating.
fn counted<R>(f: impl FnOnce() -> R) -> (R, Heap) {
    ALLOCS.with(|c| c.set(0));
    FREES.with(|c| c.set(0));
    COUNTING.with(|c| c.set(true));
    let r = f();
    COUNTING.with(|c| c.set(false));
    let heap = Heap {
        allocs: ALLOCS.with(Cell::get),
        frees: FREES.with(Cell::get),
    };
    (r, heap)
}

/// Accumulates sections and names the first one that touched the heap.
#[derive(Default)]
struct Ledger {
    sections: u64,
    bad: Vec<(String, Heap)>,
}

impl Ledger {
    fn run<R>(&mut self, what: &str, f: impl FnOnce() -> R) -> R {
        let (r, heap) = counted(f);
        self.sections += 1;
        if heap != NONE {
            self.bad.push((what.to_string(), heap));
        }
        r
    }
    fn assert_clean(&self, min_sections: u64) {
        assert!(self.bad.is_empty(), "heap used in: {:?}", self.bad);
        assert!(
            self.sections >= min_sections,
            "only {} counted sections ran",
            self.sections
        );
    }
}

// ---------------------------------------------------------------------------------------
// The counter itself works.

#[test]
fn the_counter_sees_allocation_reallocation_and_free() {
    let ((), empty) = counted(|| {
        black_box(1 + 1);
    });
    assert_eq!(empty, NONE);

    let (v, heap) = counted(|| {
        let mut v: Vec<u64> = Vec::with_capacity(4);
        v.extend_from_slice(&[1, 2, 3, 4]);
        black_box(&mut v).push(5); // beyond the capacity: a realloc
        v
    });
    assert_eq!(v.len(), 5);
    assert_eq!(heap.allocs, 2, "one alloc and one realloc: {heap:?}");
    assert_eq!(heap.frees, 0);

    let ((), heap) = counted(move || drop(black_box(v)));
    assert_eq!(
        heap,
        Heap {
            allocs: 0,
            frees: 1
        }
    );

    // Another thread's allocations are not this thread's.
    let ((), heap) = counted(|| {
        std::thread::scope(|s| {
            s.spawn(|| black_box(vec![0u8; 100]));
        })
    });
    assert!(heap.allocs >= 1, "spawning a thread allocates: {heap:?}");
}

// ---------------------------------------------------------------------------------------
// Ethernet: SQ, RQ, CQ.

const BUF: usize = 2048;
const FRAME: usize = 128;

mod common;
use common::Eth;

/// SQ of 2^(log+1) WQEBBs signalling every `signal_every`th WQE, RQ of 2^log, CQs of 2^log.
fn eth(log: u8, signal_every: u16) -> Result<(Eth, [u8; 6]), QueueError> {
    let e = common::eth(log, log + 1, log, signal_every, BUF)?;
    let mac = e.mac;
    Ok((e, mac))
}

fn frame(mac: [u8; 6], i: usize) -> [u8; FRAME] {
    let mut f = [0u8; FRAME];
    f[..6].copy_from_slice(&mac);
    f[6..12].copy_from_slice(&[0x02, 0, 0, 0, 0, 0x77]);
    f[12..14].copy_from_slice(&0x88b5u16.to_be_bytes());
    for (j, b) in f.iter_mut().enumerate().skip(14) {
        *b = (j * 7 + i * 13) as u8;
    }
    f
}

/// What a counted reap section saw, checked after counting stopped.
#[derive(Clone, Copy)]
struct Reaped {
    cqes: usize,
    retired: usize,
    errors: usize,
    stray: usize,
}

/// Frames and NOPs go out, loop back into the RQ, and every completion is reaped and
/// retired, over enough rounds that every ring and CQ wraps several times. Every driver call
/// on the way runs inside a counted section.
#[test]
fn ethernet_hot_paths_allocate_nothing() -> Result<(), QueueError> {
    const LOG: u8 = 6; // RQ, CQs: 64 entries; SQ: 128 WQEBBs
    const FRAMES: usize = 44; // per round, plus NOPS NOPs: 48 WQEs, 12 signalled
    const NOPS: usize = 4;
    const SIGNAL: u16 = 4;
    const ROUNDS: usize = 12;
    let (mut e, mac) = eth(LOG, SIGNAL)?;
    let n = 1usize << LOG;

    // Set up, uncounted: the frames in the send buffer, one SGE per frame and per receive.
    let mut tx_sges = Vec::with_capacity(n);
    let mut rx_sges = Vec::with_capacity(n);
    let mut frames = Vec::with_capacity(n);
    for i in 0..n {
        let f = frame(mac, i);
        e.tx.write(i * BUF, &f)?;
        frames.push(f);
        tx_sges.push(e.tx.sge(i * BUF + ETH_MIN_INLINE, FRAME - ETH_MIN_INLINE)?);
        rx_sges.push(e.rx.sge(i * BUF, BUF)?);
    }
    // Receive completions recorded here in the counted sections (stack storage).
    let mut rx_seen = [(0u64, 0u32); 64];

    let mut ledger = Ledger::default();
    let mut posted_rx = ledger.run("Rq::post_recv (fill) + Rq::ring_doorbell", || {
        let mut ok = 0;
        for (i, sge) in rx_sges.iter().enumerate() {
            ok += usize::from(e.rq.post_recv(&[*sge], i as u64).is_ok());
        }
        e.rq.ring_doorbell();
        ok
    });
    assert_eq!(posted_rx, n);

    let (mut tx_cqes_total, mut tx_retired_total, mut rx_total) = (0, 0, 0);
    for round in 0..ROUNDS {
        let posted = if round % 2 == 0 {
            ledger.run("EthSq::post_send + post_nop + ring_doorbell", || {
                let mut ok = 0;
                for i in 0..FRAMES {
                    let f = &frames[i];
                    let r =
                        e.sq.post_send(&f[..ETH_MIN_INLINE], &[tx_sges[i]], i as u64);
                    ok += usize::from(r.is_ok());
                }
                for j in 0..NOPS {
                    ok += usize::from(e.sq.post_nop((FRAMES + j) as u64, false).is_ok());
                }
                e.sq.ring_doorbell();
                ok
            })
        } else {
            ledger.run("EthSq::burst: post_send + post_nop + finish", || {
                let mut ok = 0;
                let mut burst = e.sq.burst();
                for i in 0..FRAMES {
                    let f = &frames[i];
                    let r = burst.post_send(&f[..ETH_MIN_INLINE], &[tx_sges[i]], i as u64);
                    ok += usize::from(r.is_ok());
                }
                for j in 0..NOPS {
                    ok += usize::from(burst.post_nop((FRAMES + j) as u64, false).is_ok());
                }
                burst.finish();
                ok
            })
        };
        assert_eq!(posted, FRAMES + NOPS, "round {round}");

        e.dev.run_until_idle();

        // Send completions: alternate between `poll` and `poll_batch`.
        let tx = ledger.run("Cq::poll/poll_batch + EthSq::complete (send)", || {
            let mut r = Reaped {
                cqes: 0,
                retired: 0,
                errors: 0,
                stray: 0,
            };
            let mut one = |c: Option<Result<Completion, CompletionError>>, r: &mut Reaped| {
                match c {
                    Some(Ok(c)) => match e.sq.complete(&c) {
                        Ok((_, k)) => r.retired += usize::from(k),
                        Err(_) => r.stray += 1,
                    },
                    Some(Err(_)) => r.errors += 1,
                    None => {}
                }
                r.cqes += 1;
            };
            if round % 2 == 0 {
                while let Some(c) = e.tx_cq.poll() {
                    one(Some(c), &mut r);
                }
            } else {
                while e.tx_cq.poll_batch(5, |c| one(Some(c), &mut r)) > 0 {}
            }
            e.tx_cq.arm(Arm::Next);
            r
        });
        assert_eq!((tx.errors, tx.stray), (0, 0), "round {round}");
        assert_eq!(
            tx.cqes,
            (FRAMES + NOPS) / usize::from(SIGNAL),
            "round {round}"
        );
        assert_eq!(tx.retired, FRAMES + NOPS, "round {round}");
        tx_cqes_total += tx.cqes;
        tx_retired_total += tx.retired;

        // Receive completions: retire, note (wr_id, length), and re-post the same buffer.
        let rx = ledger.run(
            "Cq::poll/poll_batch + Rq::complete + Rq::post_recv + ring_doorbell",
            || {
                let mut r = Reaped {
                    cqes: 0,
                    retired: 0,
                    errors: 0,
                    stray: 0,
                };
                let mut reposted = 0;
                let mut one = |c: Result<Completion, CompletionError>, r: &mut Reaped| {
                    match c {
                        Ok(c) if c.kind == CompletionKind::Recv => {
                            match e.rq.complete(c.wqe_counter) {
                                Ok(id) => {
                                    if let Some(s) = rx_seen.get_mut(r.cqes) {
                                        *s = (id, c.byte_len);
                                    }
                                    r.retired += 1;
                                    let sge = rx_sges[id as usize % n];
                                    reposted += usize::from(e.rq.post_recv(&[sge], id).is_ok());
                                }
                                Err(_) => r.stray += 1,
                            }
                        }
                        _ => r.errors += 1,
                    }
                    r.cqes += 1;
                };
                if round % 2 == 1 {
                    while let Some(c) = e.rx_cq.poll() {
                        one(c, &mut r);
                    }
                } else {
                    e.rx_cq.poll_batch(usize::MAX, |c| one(c, &mut r));
                }
                e.rq.ring_doorbell();
                e.rx_cq.arm(Arm::Solicited);
                (r, reposted)
            },
        );
        let (rx, reposted) = rx;
        assert_eq!((rx.errors, rx.stray), (0, 0), "round {round}");
        assert_eq!(rx.cqes, FRAMES, "round {round}");
        assert_eq!(reposted, FRAMES, "round {round}");
        posted_rx += reposted;
        for (k, &(id, len)) in rx_seen[..FRAMES].iter().enumerate() {
            assert_eq!(len as usize, FRAME, "round {round} receive {k}");
            let mut got = [0u8; FRAME];
            e.rx.read(id as usize * BUF, &mut got)?;
            assert!(
                frames[..FRAMES].contains(&got),
                "round {round}: receive {id} holds no frame sent"
            );
        }
        rx_total += rx.cqes;
    }

    // A full ring is refused without touching the heap either (`QueueError::Full` carries no
    // string), and so is a completion that names nothing outstanding.
    let refusals = ledger.run(
        "EthSq::post_nop/post_send on a full ring, stray complete",
        || {
            let mut posted = 0;
            while e.sq.post_nop(0, false).is_ok() {
                posted += 1;
            }
            let full_nop = matches!(e.sq.post_nop(0, false), Err(QueueError::Full { .. }));
            let full_send = matches!(
                e.sq.post_send(&frames[0][..ETH_MIN_INLINE], &[tx_sges[0]], 0),
                Err(QueueError::Full { .. })
            );
            let stray = Completion {
                kind: CompletionKind::Recv,
                qpn: 0,
                wqe_counter: 0x7fff,
                byte_len: 0,
                imm: None,
            };
            let stray_rq = matches!(
                e.rq.complete(0x7fff),
                Err(QueueError::StrayCompletion { .. })
            );
            let stray_sq = matches!(
                e.sq.complete(&stray),
                Err(QueueError::StrayCompletion { .. })
            );
            (posted, full_nop, full_send, stray_rq, stray_sq)
        },
    );
    assert!(refusals.0 > 0);

    // The counter sees the driver's own allocations: a refused request whose error carries a
    // message (`QueueError::BadRequest(String)`) allocates it.
    let (bad, heap) = counted(|| {
        matches!(
            e.sq.post_send(&frames[0][..10], &[], 0),
            Err(QueueError::BadRequest(_))
        )
    });
    assert!(bad);
    assert!(heap.allocs >= 1 && heap.frees >= 1, "{heap:?}");
    assert!(
        refusals.1 && refusals.2 && refusals.3 && refusals.4,
        "{refusals:?}"
    );

    // Every ring and CQ wrapped: the SQ (128 WQEBBs) at least 4 times, the CQs and the RQ
    // (64 entries) at least twice.
    assert!(tx_retired_total >= 4 * 2 * n);
    assert!(tx_cqes_total >= 2 * n);
    assert!(rx_total >= 8 * n);
    assert!(posted_rx >= 8 * n);
    ledger.assert_clean(1 + 3 * ROUNDS as u64 + 1);
    Ok(())
}

// ---------------------------------------------------------------------------------------
// RC QP: posting every send opcode, receives, doorbells and retirement.

/// The device model's side of the same loopback: after a warm-up round (which builds the
/// steering lookup and sizes the frame buffer), the passes that take each round's frames
/// from the SQ through the port and steering into the RQ and both CQs allocate nothing
/// (issue 34: no allocation per frame in the datapath).
#[test]
fn the_models_ethernet_datapath_allocates_nothing_per_frame() -> Result<(), QueueError> {
    const LOG: u8 = 6;
    const FRAMES: usize = 48;
    const ROUNDS: usize = 8;
    let (mut e, mac) = eth(LOG, 4)?;
    let n = 1usize << LOG;
    let mut tx_sges = Vec::with_capacity(n);
    let mut rx_sges = Vec::with_capacity(n);
    for i in 0..n {
        e.tx.write(i * BUF, &frame(mac, i))?;
        tx_sges.push(e.tx.sge(i * BUF + ETH_MIN_INLINE, FRAME - ETH_MIN_INLINE)?);
        rx_sges.push(e.rx.sge(i * BUF, BUF)?);
    }
    let mut ledger = Ledger::default();
    let mut received = 0;
    for round in 0..ROUNDS {
        for (i, sge) in rx_sges.iter().enumerate().take(FRAMES) {
            e.rq.post_recv(&[*sge], i as u64)?;
        }
        e.rq.ring_doorbell();
        for (i, sge) in tx_sges.iter().enumerate().take(FRAMES) {
            let f = frame(mac, i);
            e.sq.post_send(&f[..ETH_MIN_INLINE], &[*sge], i as u64)?;
        }
        e.sq.ring_doorbell();
        let work = if round == 0 {
            e.dev.run_until_idle()
        } else {
            ledger.run("the model's passes (run_until_idle)", || {
                e.dev.run_until_idle()
            })
        };
        assert!(work >= FRAMES, "round {round}: {work} units of work");
        while let Some(c) = e.tx_cq.poll() {
            let c = c.expect("a good send completion");
            e.sq.complete(&c)?;
        }
        while let Some(c) = e.rx_cq.poll() {
            let c = c.expect("a good receive completion");
            assert_eq!(c.byte_len as usize, FRAME);
            e.rq.complete(c.wqe_counter)?;
            received += 1;
        }
    }
    assert_eq!(received, FRAMES * ROUNDS);
    ledger.assert_clean((ROUNDS - 1) as u64);
    Ok(())
}

#[test]
fn rc_qp_hot_paths_allocate_nothing() -> Result<(), QueueError> {
    let dev = mlx5_sim::Device::with_profile("bf3").expect("bf3 profile");
    let ctx: Arc<dyn Devx> = dev.open_devx();
    let pd = Pd::alloc(&ctx)?;
    let uar = UarPage::alloc(&ctx, UarKind::NonCached)?;
    let cqc = CqConfig::new(8);
    let scq = Cq::create(
        &ctx,
        &uar,
        HostQueueMem::alloc(&ctx, cqc.ring_bytes())?,
        &cqc,
    )?;
    let rcq = Cq::create(
        &ctx,
        &uar,
        HostQueueMem::alloc(&ctx, cqc.ring_bytes())?,
        &cqc,
    )?;
    let qpc = QpConfig::new(7, 6); // 128 send WQEBBs, 64 receives
    let mut qp = RcQp::create(
        &ctx,
        &pd,
        &uar,
        &scq,
        &rcq,
        HostQueueMem::alloc(&ctx, qpc.ring_bytes())?,
        &qpc,
    )?;
    // Connected to itself through force-loopback. The model is never stepped here, so the
    // WQEs are only written and announced; the driver's bookkeeping retires them.
    qp.connect(&RcConnect::new(RcPeer::Loopback {
        remote_qpn: qp.qpn(),
    }))?;
    let mr = MemoryRegion::alloc(
        &ctx,
        &pd,
        1 << 16,
        Access::LOCAL_WRITE | Access::REMOTE_WRITE | Access::REMOTE_READ | Access::REMOTE_ATOMIC,
    )?;
    let sges: Vec<Sge> = (0..4)
        .map(|i| mr.sge(i * 4096, 4096))
        .collect::<Result<_, _>>()?;
    let atomic = mr.sge(0x8000, 8)?;
    let remote = RemoteAddr {
        addr: mr.addr() + 0xc000,
        rkey: mr.rkey(),
    };
    let small = [0x5au8; 40];
    let long = [0xa5u8; mlx5_dpa::queues::qp::MAX_INLINE];
    let ops: [SendOp<'_>; 12] = [
        SendOp::Send {
            sges: &sges[..1],
            imm: None,
        },
        SendOp::Send {
            sges: &sges[..4],
            imm: Some(0x1234_5678),
        },
        SendOp::SendInline {
            data: &small,
            imm: None,
        },
        SendOp::SendInline {
            data: &long,
            imm: Some(7),
        },
        SendOp::Write {
            sges: &sges[..2],
            remote,
            imm: None,
        },
        SendOp::Write {
            sges: &sges[..1],
            remote,
            imm: Some(9),
        },
        SendOp::Read {
            sges: &sges[..3],
            remote,
        },
        SendOp::CompareSwap {
            local: atomic,
            remote,
            compare: 1,
            swap: 2,
        },
        SendOp::FetchAdd {
            local: atomic,
            remote,
            add: 3,
        },
        SendOp::Nop,
        SendOp::SendInline {
            data: &[],
            imm: None,
        },
        SendOp::Read { sges: &[], remote },
    ];
    // WQEBBs each takes: ctrl + the segments its variant adds (see `RcQp::post_send`).
    let segs = |op: &SendOp<'_>| -> usize {
        match op {
            SendOp::Send { sges, .. } => 1 + sges.len(),
            SendOp::SendInline { data, .. } => 1 + (4 + data.len()).div_ceil(16),
            SendOp::Write { sges, .. } | SendOp::Read { sges, .. } => 2 + sges.len(),
            SendOp::CompareSwap { .. } | SendOp::FetchAdd { .. } => 4,
            SendOp::Nop => 1,
        }
    };
    let wrs: Vec<SendWr<'_>> = ops
        .iter()
        .enumerate()
        .map(|(i, op)| SendWr {
            fence: i % 3 == 0,
            solicited: i % 4 == 1,
            ..SendWr::new(100 + i as u64, *op)
        })
        .collect();
    let bbs: Vec<u16> = ops.iter().map(|op| wqebbs(segs(op))).collect();

    let mut ledger = Ledger::default();
    let mut pi: u16 = 0;
    let mut retired = 0u64;
    // Enough rounds for the 128-WQEBB send ring to wrap several times, with WQEs that
    // straddle its end.
    for round in 0..40u16 {
        let before = qp.descriptor().sq_producer_index as u16;
        assert_eq!(before, pi, "round {round}");
        let (ok, last_start) = ledger.run(
            "RcQp::post_send (every SendOp) + ring_send_doorbell",
            || {
                let mut ok = 0;
                let mut at = pi;
                let mut last = pi;
                for (wr, &n) in wrs.iter().zip(&bbs) {
                    if qp.post_send(wr).is_ok() {
                        ok += 1;
                        last = at;
                        at = at.wrapping_add(n);
                    }
                }
                qp.ring_send_doorbell();
                (ok, last)
            },
        );
        assert_eq!(ok, wrs.len(), "round {round}");
        let after = qp.descriptor().sq_producer_index as u16;
        let want: u16 = bbs.iter().sum();
        assert_eq!(after, pi.wrapping_add(want), "round {round}");
        pi = after;

        let done = ledger.run("RcQp::complete_send", || qp.complete_send(last_start));
        let (wr_id, count) = done?;
        assert_eq!(
            (wr_id, count),
            (100 + wrs.len() as u64 - 1, wrs.len() as u16)
        );
        retired += u64::from(count);
        assert_eq!(qp.send_outstanding(), 0);

        let posted = ledger.run("RcQp::post_recv + ring_recv_doorbell", || {
            let mut ok = 0;
            for (i, s) in sges.iter().enumerate() {
                ok += usize::from(qp.post_recv(&[*s], i as u64).is_ok());
            }
            let _ = qp.post_recv(&[], 99).is_ok();
            qp.ring_recv_doorbell();
            ok
        });
        assert_eq!(posted, sges.len());
        let rq_pi = qp.descriptor().rq_producer_index;
        assert_eq!(rq_pi, (u32::from(round) + 1) * 5, "round {round}");
        // Free the receive slots again (completions the transport would have produced).
        let freed = ledger.run("RcQp::complete_recv", || {
            qp.complete_recv((rq_pi as u16).wrapping_sub(1))
        });
        assert_eq!(freed?, 99);
    }
    assert!(u32::from(pi) >= 4 * 128, "the send ring wrapped: pi {pi}");
    assert_eq!(retired, 40 * wrs.len() as u64);
    ledger.assert_clean(4 * 40);
    Ok(())
}
