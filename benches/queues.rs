//! The driver's data plane on the device model, each beside a floor measured in the same run.
//!
//! `cargo bench --bench queues`. Three groups, then a summary:
//!
//! - `post`: `EthSq::post_send` (18 inline header bytes + one data segment, a 64-byte frame;
//!   one WQEBB each) in batches of 32 with one `ring_doorbell` per batch, over a ring of 1024
//!   WQEBBs (every 32nd WQE signalled). The model is not stepped while the clock runs: each
//!   timed block fills the ring, then (untimed) the model completes it and the CQ is reaped.
//!   Floor (`post/floor_stores`): the same 64 bytes per WQE (the driver's own WQE image, with
//!   its `wqe_index` and CQE-request byte set per WQE as the driver sets them; checked equal
//!   to the driver's ring) copied into a 64-byte-aligned ring of the same size, with the same
//!   doorbell-record store and 8-byte doorbell store per batch of 32. `post/driver_eth_burst`
//!   posts the same WQEs through `EthSq::burst` (one burst, hence one doorbell, per batch;
//!   checked to leave the same ring bytes).
//! - `poll`: `Cq::poll` and `Cq::poll_batch` (32 at a time) per CQE over a CQ of 1024 the model
//!   filled before the clock started. Floor (`poll/floor_loads`): for the same CQEs in the same
//!   ring, a volatile load of `op_own`, the ownership test, then a plain load of the 64 bytes.
//! - `loopback`: 64-byte frames through `EthSq`, the model's loopback port and steering,
//!   into an `Rq`; 64 posted per doorbell, `run_until_idle`, both CQs reaped, receives
//!   re-posted. Everything timed; criterion reports elements/s = packets/s.
//!
//! Criterion prints time per iteration: a post iteration is one batch of 32 WQEs, a poll
//! iteration is 1024 CQEs, a loopback iteration 64 frames; with `Throughput::Elements` it also
//! prints elements/s. The summary at the end runs its own interleaved rounds (driver block,
//! floor block, alternating) and prints the median ns per WQE / CQE of each and their ratio.
//! The consumer in the timed poll loops reads a completion's kind, counter and length, as a
//! real consumer would; the floor copies the 64 bytes out and hands the copy to `black_box`.
//!
//! On the model the UAR page is ordinary memory, so the doorbell is a plain store in both the
//! driver and the floor; on hardware it is an MMIO write (the same one in both).

#[path = "common/summary.rs"]
#[macro_use]
mod summary;

use std::hint::black_box;
use std::ptr::NonNull;
use std::sync::atomic::{compiler_fence, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use mlx5_dpa::devx::{Devx, UarKind};
use mlx5_dpa::mem::{Access, DmaBuf, MemoryRegion, Pd, Sge, Umem};
use mlx5_dpa::mlx5::cmd::OuterMatch;
use mlx5_dpa::mlx5::wire::cqe::{at as cqe_at, CQE_SIZE};
use mlx5_dpa::mlx5::wire::wqe::{at as wqe_at, opcode as wqe_opcode};
use mlx5_dpa::queues::ring::{self, WQEBB};
use mlx5_dpa::queues::steering::{RxFlow, Tis, TransportDomain};
use mlx5_dpa::queues::wq::{CTRL_CQ_UPDATE, ETH_MIN_INLINE};
use mlx5_dpa::queues::{
    Completion, CompletionError, CompletionKind, Cq, CqConfig, EthSq, EthSqConfig, HostQueueMem,
    QueueError, Rq, RqConfig,
};
use mlx5_dpa::uar::UarPage;

/// WQEs per doorbell in the post benchmark.
const BATCH: usize = 32;
/// log2 of the post benchmark's SQ (WQEBBs) and of the poll benchmark's CQ.
const LOG_RING: u8 = 10;
const RING: usize = 1 << LOG_RING;
const FRAME: usize = 64;

fn frame64(mac: [u8; 6], seed: u8) -> [u8; FRAME] {
    let mut f = [seed; FRAME];
    f[0..6].copy_from_slice(&mac);
    f[6..12].copy_from_slice(&[0x02, 0, 0, 0, 0, 0x77]);
    f[12..14].copy_from_slice(&0x88b5u16.to_be_bytes());
    f
}

/// Host memory for a queue whose ring the benchmark can also see: a buffer registered as one
/// UMEM, the ring at 0 and the record right after it.
struct Visible {
    buf: Arc<DmaBuf>,
    mem: HostQueueMem,
    ring_len: usize,
}

fn visible(ctx: &Arc<dyn Devx>, ring_len: usize) -> Visible {
    let buf = DmaBuf::new(ring_len + 4096).expect("map");
    let umem = Umem::register(ctx, &buf, Access::LOCAL_WRITE).expect("register");
    // SAFETY: the buffer is fresh and only this queue uses the ring and record ranges; the
    // benchmark reads the ring only between driver calls, with copies or volatile loads.
    let mem = unsafe { HostQueueMem::carve(umem, 0, ring_len, ring_len) }.expect("carve");
    Visible { buf, mem, ring_len }
}

struct Rig {
    dev: mlx5_sim::Device,
    ctx: Arc<dyn Devx>,
    pd: Arc<Pd>,
    uar: Arc<UarPage>,
    td: Arc<TransportDomain>,
    tis: Arc<Tis>,
    mac: [u8; 6],
}

fn rig() -> Rig {
    let dev = mlx5_sim::Device::with_profile("bf3").expect("bf3 profile");
    let ctx: Arc<dyn Devx> = dev.open_devx();
    let mac = dev.with_profile_mut(|p| p.mac);
    let pd = Pd::alloc(&ctx).expect("pd");
    let uar = UarPage::alloc(&ctx, UarKind::NonCached).expect("uar");
    let td = TransportDomain::alloc(&ctx).expect("td");
    let tis = Tis::create(&ctx, &td, &pd).expect("tis");
    Rig {
        dev,
        ctx,
        pd,
        uar,
        td,
        tis,
        mac,
    }
}

fn cq(r: &Rig, log: u8) -> Cq {
    let cfg = CqConfig::new(log);
    let mem = HostQueueMem::alloc(&r.ctx, cfg.ring_bytes()).expect("cq memory");
    Cq::create(&r.ctx, &r.uar, mem, &cfg).expect("cq")
}

// ---------------------------------------------------------------------------------------
// post

struct PostBench {
    rig: Rig,
    sq: EthSq,
    cq: Cq,
    sq_buf: Arc<DmaBuf>,
    _tx: MemoryRegion,
    hdr: [u8; ETH_MIN_INLINE],
    sge: Sge,
    floor: FloorSq,
    wr_id: u64,
}

/// The floor's ring, doorbell record and doorbell word, in mapped memory like the driver's.
struct FloorSq {
    _buf: Arc<DmaBuf>,
    ring: NonNull<u8>,
    dbr: NonNull<u32>,
    db: NonNull<u64>,
    pi: u16,
    signalled: u32,
    tmpl: [u8; WQEBB],
}

impl FloorSq {
    fn new(tmpl: [u8; WQEBB]) -> FloorSq {
        let buf = DmaBuf::new(RING * WQEBB + 4096).expect("map");
        let ring = buf.ptr(0, RING * WQEBB).expect("ring");
        let dbr = buf.ptr(RING * WQEBB, 8).expect("record").cast();
        let db = buf.ptr(RING * WQEBB + 2048, 8).expect("doorbell").cast();
        FloorSq {
            _buf: buf,
            ring,
            dbr,
            db,
            pi: 0,
            signalled: 0,
            tmpl,
        }
    }

    /// `BATCH` WQEs and their doorbell, as plain stores.
    #[inline(never)]
    fn batch(&mut self) {
        let mut last = [0u8; 8];
        for _ in 0..BATCH {
            let mut w = self.tmpl;
            let w0 = (u32::from(self.pi) << 8) | u32::from(wqe_opcode::SEND);
            w[wqe_at::OPMOD_IDX_OPCODE..wqe_at::OPMOD_IDX_OPCODE + 4]
                .copy_from_slice(&w0.to_be_bytes());
            self.signalled += 1;
            w[wqe_at::FM_CE_SE] = if self.signalled == BATCH as u32 {
                self.signalled = 0;
                CTRL_CQ_UPDATE
            } else {
                0
            };
            let slot = usize::from(self.pi) & (RING - 1);
            // SAFETY: `slot < RING` and the ring holds RING WQEBBs of the mapping.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    w.as_ptr(),
                    self.ring.as_ptr().add(slot * WQEBB),
                    WQEBB,
                )
            };
            last.copy_from_slice(&w[..8]);
            self.pi = self.pi.wrapping_add(1);
        }
        compiler_fence(Ordering::SeqCst);
        // SAFETY: 8 aligned bytes of the mapping reserved for the record.
        unsafe { std::ptr::write_volatile(self.dbr.as_ptr().add(1), u32::from(self.pi).to_be()) };
        compiler_fence(Ordering::SeqCst);
        // SAFETY: 8 aligned bytes of the mapping reserved for the doorbell.
        unsafe { std::ptr::write_volatile(self.db.as_ptr(), u64::from_ne_bytes(last)) };
    }

    fn ring_bytes(&self) -> Vec<u8> {
        let mut v = vec![0u8; RING * WQEBB];
        // SAFETY: the ring range of the mapping; no driver touches the floor's ring.
        unsafe { std::ptr::copy_nonoverlapping(self.ring.as_ptr(), v.as_mut_ptr(), v.len()) };
        v
    }
}

impl PostBench {
    fn new() -> PostBench {
        let rig = rig();
        // One CQE per batch: RING / BATCH per block.
        let cq = cq(&rig, 6);
        let cfg = EthSqConfig {
            log_size: LOG_RING,
            signal_every: BATCH as u16,
        };
        let Visible {
            buf: sq_buf, mem, ..
        } = visible(&rig.ctx, cfg.ring_bytes());
        let sq = EthSq::create(&rig.ctx, &rig.pd, &rig.uar, &rig.tis, &cq, mem, &cfg).expect("sq");
        let tx = MemoryRegion::alloc(&rig.ctx, &rig.pd, 4096, Access::LOCAL_WRITE).expect("mr");
        let f = frame64(rig.mac, 1);
        tx.write(0, &f).expect("write");
        let sge = tx.sge(ETH_MIN_INLINE, FRAME - ETH_MIN_INLINE).expect("sge");
        let mut hdr = [0u8; ETH_MIN_INLINE];
        hdr.copy_from_slice(&f[..ETH_MIN_INLINE]);
        let mut b = PostBench {
            rig,
            sq,
            cq,
            sq_buf,
            _tx: tx,
            hdr,
            sge,
            floor: FloorSq::new([0; WQEBB]),
            wr_id: 0,
        };
        // One driver block from pi 0; its first WQE is the floor's template, and the floor's
        // first block must leave the same bytes in its ring.
        b.block::<false>(RING / BATCH);
        let driver_ring = b.sq_buf.to_vec(0, RING * WQEBB).expect("read ring");
        let mut tmpl = [0u8; WQEBB];
        tmpl.copy_from_slice(&driver_ring[..WQEBB]);
        b.floor = FloorSq::new(tmpl);
        for _ in 0..RING / BATCH {
            b.floor.batch();
        }
        assert!(
            b.floor.ring_bytes() == driver_ring,
            "the floor writes the driver's bytes"
        );
        b.reset();
        // The floor's blocks left the SQ alone: its next block starts at pi = RING, and a
        // burst block must write what post_send wrote, but for the WQE index.
        b.block::<true>(RING / BATCH);
        let burst_ring = b.sq_buf.to_vec(0, RING * WQEBB).expect("read ring");
        for (i, (bw, dw)) in burst_ring
            .chunks(WQEBB)
            .zip(driver_ring.chunks(WQEBB))
            .enumerate()
        {
            let w0 = (((RING + i) as u32 & 0xffff) << 8) | u32::from(wqe_opcode::SEND);
            assert_eq!(bw[..4], w0.to_be_bytes(), "burst WQE {i} index");
            assert_eq!(
                bw[4..],
                dw[4..],
                "burst WQE {i} writes what post_send wrote"
            );
        }
        b.reset();
        b
    }

    /// `batches` batches of BATCH sends + doorbell; returns the time they took. `BURST`:
    /// through `EthSq::burst` (one burst, hence one doorbell, per batch), else `post_send` +
    /// `ring_doorbell`. Never inlined (nor are the other timed loops), so criterion and the
    /// summary time the same machine code: inlined per call site, the same loop measured up to
    /// 25% apart with its placement.
    #[inline(never)]
    fn block<const BURST: bool>(&mut self, batches: usize) -> Duration {
        let t = Instant::now();
        let posted = self.posts::<BURST>(batches);
        let t = t.elapsed();
        if let Err(e) = posted {
            panic!("post refused: {e}");
        }
        t
    }

    /// The timed posts: a refused post ends the block with its error, as `?` does in a
    /// client. (Counting refusals instead kept a compare and an add on every post that the
    /// floor does not have.)
    #[inline(always)]
    fn posts<const BURST: bool>(&mut self, batches: usize) -> Result<(), QueueError> {
        let hdr = black_box(self.hdr);
        let sge = black_box(self.sge);
        let mut wr_id = self.wr_id;
        for _ in 0..batches {
            if BURST {
                let mut burst = self.sq.burst();
                for _ in 0..BATCH {
                    burst.post_send(&hdr, &[sge], wr_id)?;
                    wr_id += 1;
                }
                burst.finish();
            } else {
                for _ in 0..BATCH {
                    self.sq.post_send(&hdr, &[sge], wr_id)?;
                    wr_id += 1;
                }
                self.sq.ring_doorbell();
            }
        }
        self.wr_id = wr_id;
        Ok(())
    }

    #[inline(never)]
    fn floor_block(&mut self, batches: usize) -> Duration {
        let t = Instant::now();
        for _ in 0..batches {
            self.floor.batch();
        }
        t.elapsed()
    }

    /// Untimed: the model sends everything posted; the CQ is reaped and the SQ emptied.
    fn reset(&mut self) {
        self.rig.dev.run_until_idle();
        let sq = &mut self.sq;
        let mut bad = 0;
        while self.cq.poll_batch(64, |c| match c {
            Ok(c) => bad += usize::from(sq.complete(&c).is_err()),
            Err(_) => bad += 1,
        }) > 0
        {}
        assert_eq!(bad, 0);
        assert_eq!(self.sq.free(), RING as u16, "the SQ drained");
    }

    /// `iters` batches, in blocks of at most one ring, resetting between blocks.
    fn driver(&mut self, iters: u64) -> Duration {
        let mut left = iters as usize;
        let mut total = Duration::ZERO;
        while left > 0 {
            let n = left.min(RING / BATCH);
            total += self.block::<false>(n);
            self.reset();
            left -= n;
        }
        total
    }

    /// As `driver`, posting through bursts.
    fn burst(&mut self, iters: u64) -> Duration {
        let mut left = iters as usize;
        let mut total = Duration::ZERO;
        while left > 0 {
            let n = left.min(RING / BATCH);
            total += self.block::<true>(n);
            self.reset();
            left -= n;
        }
        total
    }

    fn floor(&mut self, iters: u64) -> Duration {
        let mut left = iters as usize;
        let mut total = Duration::ZERO;
        while left > 0 {
            let n = left.min(RING / BATCH);
            total += self.floor_block(n);
            left -= n;
        }
        total
    }
}

fn post(c: &mut Criterion, b: &mut PostBench) {
    let mut g = c.benchmark_group("post");
    g.throughput(Throughput::Elements(BATCH as u64));
    g.bench_function("driver_eth_send_32_plus_doorbell", |bn| {
        bn.iter_custom(|iters| b.driver(iters))
    });
    g.bench_function("driver_eth_burst_32", |bn| {
        bn.iter_custom(|iters| b.burst(iters))
    });
    g.bench_function("floor_stores_32_plus_doorbell", |bn| {
        bn.iter_custom(|iters| b.floor(iters))
    });
    g.finish();
}

// ---------------------------------------------------------------------------------------
// poll

/// What a timed poll loop does with each completion: reads its kind, counter and length
/// (the fields a consumer acts on), keeping the last counter for retiring the SQ afterwards.
#[derive(Default)]
struct Seen {
    cqes: usize,
    nops: usize,
    errors: usize,
    bytes: u32,
    last_wqe: u16,
}

impl Seen {
    #[inline(always)]
    fn note(&mut self, c: Result<Completion, CompletionError>) {
        match c {
            Ok(c) => {
                let nop = CompletionKind::Send {
                    wqe_opcode: wqe_opcode::NOP,
                };
                self.nops += usize::from(c.kind == nop);
                self.bytes = self.bytes.wrapping_add(c.byte_len);
                self.last_wqe = c.wqe_counter;
            }
            Err(_) => self.errors += 1,
        }
        self.cqes += 1;
    }
}

struct PollBench {
    rig: Rig,
    sq: EthSq,
    cq: Cq,
    cq_ring: NonNull<u8>,
    _cq_buf: Arc<DmaBuf>,
    ci: u32,
}

impl PollBench {
    fn new() -> PollBench {
        let rig = rig();
        let ccfg = CqConfig::new(LOG_RING);
        let v = visible(&rig.ctx, ccfg.ring_bytes());
        let cq_ring = v.buf.ptr(0, v.ring_len).expect("ring");
        let cq = Cq::create(&rig.ctx, &rig.uar, v.mem, &ccfg).expect("cq");
        let cfg = EthSqConfig {
            log_size: LOG_RING,
            signal_every: 1,
        };
        let mem = HostQueueMem::alloc(&rig.ctx, cfg.ring_bytes()).expect("sq memory");
        let sq = EthSq::create(&rig.ctx, &rig.pd, &rig.uar, &rig.tis, &cq, mem, &cfg).expect("sq");
        PollBench {
            rig,
            sq,
            cq,
            cq_ring,
            _cq_buf: v.buf,
            ci: 0,
        }
    }

    /// Untimed: RING signalled NOPs, completed by the model: RING CQEs waiting.
    fn fill(&mut self) {
        for i in 0..RING {
            self.sq.post_nop(i as u64, true).expect("nop");
        }
        self.sq.ring_doorbell();
        self.rig.dev.run_until_idle();
    }

    /// Untimed: checks what the timed loop saw and retires the SQ up to the last CQE.
    fn retire(&mut self, seen: Seen) {
        assert_eq!(
            (seen.cqes, seen.nops, seen.errors),
            (RING, RING, 0),
            "every CQE polled, each a NOP's"
        );
        black_box(seen.bytes);
        let last = Completion {
            kind: CompletionKind::Send {
                wqe_opcode: wqe_opcode::NOP,
            },
            qpn: self.sq.sqn().0,
            wqe_counter: seen.last_wqe,
            byte_len: 0,
            imm: None,
        };
        let (_, n) = self.sq.complete(&last).expect("outstanding");
        assert_eq!(usize::from(n), RING);
        self.ci = self.ci.wrapping_add(RING as u32);
        assert_eq!(self.cq.consumer_index(), self.ci & ring::CQ_CI_MASK);
    }

    #[inline(never)]
    fn poll_one(&mut self, iters: u64) -> Duration {
        let mut total = Duration::ZERO;
        for _ in 0..iters {
            self.fill();
            let mut seen = Seen::default();
            let t = Instant::now();
            while let Some(c) = self.cq.poll() {
                seen.note(c);
            }
            total += t.elapsed();
            self.retire(seen);
        }
        total
    }

    #[inline(never)]
    fn poll_batch(&mut self, iters: u64) -> Duration {
        let mut total = Duration::ZERO;
        for _ in 0..iters {
            self.fill();
            let mut seen = Seen::default();
            let t = Instant::now();
            while self.cq.poll_batch(BATCH, |c| seen.note(c)) > 0 {}
            total += t.elapsed();
            self.retire(seen);
        }
        total
    }

    /// The floor: the same CQEs, loaded; then (untimed) the driver consumes them.
    #[inline(never)]
    fn floor_loads(&mut self) -> (Duration, usize) {
        let base = self.cq_ring.as_ptr();
        let mut ci = self.ci;
        let mut seen = 0usize;
        let t = Instant::now();
        for _ in 0..RING {
            let e = ring::slot(ci, LOG_RING) * CQE_SIZE;
            // SAFETY: `e + 64 <= RING * 64`, the CQ ring of the mapping this bench holds; the
            // driver is not polling while this runs.
            let op_own = unsafe { std::ptr::read_volatile(base.add(e + cqe_at::OP_OWN)) };
            if !ring::cqe_is_sw_owned(op_own, ci, LOG_RING) {
                break;
            }
            compiler_fence(Ordering::Acquire);
            let mut cqe = [0u8; 64];
            // SAFETY: as above.
            unsafe { std::ptr::copy_nonoverlapping(base.add(e), cqe.as_mut_ptr(), 64) };
            black_box(&cqe);
            ci = ci.wrapping_add(1);
            seen += 1;
        }
        (t.elapsed(), seen)
    }

    fn floor(&mut self, iters: u64) -> Duration {
        let mut total = Duration::ZERO;
        for _ in 0..iters {
            self.fill();
            let (t, seen) = self.floor_loads();
            assert_eq!(seen, RING, "the floor saw every CQE");
            total += t;
            let mut seen = Seen::default();
            while let Some(c) = self.cq.poll() {
                seen.note(c);
            }
            self.retire(seen);
        }
        total
    }
}

fn poll(c: &mut Criterion, b: &mut PollBench) {
    let mut g = c.benchmark_group("poll");
    g.throughput(Throughput::Elements(RING as u64));
    g.bench_function("driver_cq_poll_1024", |bn| {
        bn.iter_custom(|iters| b.poll_one(iters))
    });
    g.bench_function("driver_cq_poll_batch32_1024", |bn| {
        bn.iter_custom(|iters| b.poll_batch(iters))
    });
    g.bench_function("floor_loads_1024", |bn| {
        bn.iter_custom(|iters| b.floor(iters))
    });
    g.finish();
}

// ---------------------------------------------------------------------------------------
// loopback

struct Loopback {
    rig: Rig,
    sq: EthSq,
    tx_cq: Cq,
    rq: Rq,
    rx_cq: Cq,
    _tx: MemoryRegion,
    _rx: MemoryRegion,
    _flow: RxFlow,
    hdrs: Vec<[u8; ETH_MIN_INLINE]>,
    tx_sges: Vec<Sge>,
    rx_sges: Vec<Sge>,
    received: u64,
}

const LB_BATCH: usize = 64;

impl Loopback {
    fn new(signal_every: u16) -> Loopback {
        let rig = rig();
        let tx_cq = cq(&rig, 10);
        let rx_cq = cq(&rig, 10);
        let scfg = EthSqConfig {
            log_size: 10,
            signal_every,
        };
        let smem = HostQueueMem::alloc(&rig.ctx, scfg.ring_bytes()).expect("sq memory");
        let sq =
            EthSq::create(&rig.ctx, &rig.pd, &rig.uar, &rig.tis, &tx_cq, smem, &scfg).expect("sq");
        let rcfg = RqConfig {
            log_size: 10,
            max_sge: 1,
        };
        let rmem = HostQueueMem::alloc(&rig.ctx, rcfg.ring_bytes()).expect("rq memory");
        let mut rq = Rq::create(&rig.ctx, &rig.pd, &rig.uar, &rx_cq, rmem, &rcfg).expect("rq");
        let flow = RxFlow::to_rq(
            &rig.ctx,
            &rig.td,
            &rq,
            OuterMatch {
                dmac: Some(rig.mac),
                ..Default::default()
            },
            0,
        )
        .expect("flow");
        let tx = MemoryRegion::alloc(&rig.ctx, &rig.pd, LB_BATCH * 128, Access::LOCAL_WRITE)
            .expect("tx");
        let rx =
            MemoryRegion::alloc(&rig.ctx, &rig.pd, 1024 * 128, Access::LOCAL_WRITE).expect("rx");
        let mut hdrs = Vec::new();
        let mut tx_sges = Vec::new();
        for i in 0..LB_BATCH {
            let f = frame64(rig.mac, i as u8);
            tx.write(i * 128, &f).expect("write");
            let mut h = [0u8; ETH_MIN_INLINE];
            h.copy_from_slice(&f[..ETH_MIN_INLINE]);
            hdrs.push(h);
            tx_sges.push(
                tx.sge(i * 128 + ETH_MIN_INLINE, FRAME - ETH_MIN_INLINE)
                    .expect("sge"),
            );
        }
        let rx_sges: Vec<Sge> = (0..1024)
            .map(|i| rx.sge(i * 128, 128).expect("sge"))
            .collect();
        for (i, s) in rx_sges.iter().enumerate() {
            rq.post_recv(&[*s], i as u64).expect("post recv");
        }
        rq.ring_doorbell();
        Loopback {
            rig,
            sq,
            tx_cq,
            rq,
            rx_cq,
            _tx: tx,
            _rx: rx,
            _flow: flow,
            hdrs,
            tx_sges,
            rx_sges,
            received: 0,
        }
    }

    /// One batch of 64 frames out and back in. Returns the frames received.
    fn round(&mut self) -> usize {
        for i in 0..LB_BATCH {
            self.sq
                .post_send(&self.hdrs[i], &[self.tx_sges[i]], i as u64)
                .expect("post");
        }
        self.sq.ring_doorbell();
        self.rig.dev.run_until_idle();
        let sq = &mut self.sq;
        while self.tx_cq.poll_batch(64, |c| {
            let c = c.expect("send completion");
            sq.complete(&c).expect("outstanding");
        }) > 0
        {}
        let (rq, sges) = (&mut self.rq, &self.rx_sges);
        let mut got = 0;
        while self.rx_cq.poll_batch(64, |c| {
            let c = c.expect("receive completion");
            let id = rq.complete(c.wqe_counter).expect("outstanding");
            rq.post_recv(&[sges[id as usize]], id).expect("repost");
            got += 1;
        }) > 0
        {}
        self.rq.ring_doorbell();
        self.received += got as u64;
        got
    }
}

fn loopback(c: &mut Criterion) {
    let mut g = c.benchmark_group("loopback_64B");
    g.throughput(Throughput::Elements(LB_BATCH as u64));
    for signal_every in [1u16, 16] {
        let mut lb = Loopback::new(signal_every);
        assert_eq!(lb.round(), LB_BATCH, "every frame arrives");
        g.bench_function(format!("driver_api_signal_every_{signal_every}"), |bn| {
            bn.iter(|| {
                let n = lb.round();
                assert_eq!(n, LB_BATCH);
            })
        });
    }
    g.finish();
}

// ---------------------------------------------------------------------------------------
// summary: interleaved rounds, medians, ratios

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn summary(b: &mut PostBench, p: &mut PollBench) {
    const ROUNDS: usize = 201;
    let (mut d, mut bu, mut f) = (Vec::new(), Vec::new(), Vec::new());
    let per = (RING / BATCH) as u64;
    for r in 0..ROUNDS {
        // Rotate which goes first, so none always follows the model's reset.
        let order: [u8; 3] = match r % 3 {
            0 => [0, 1, 2],
            1 => [1, 2, 0],
            _ => [2, 0, 1],
        };
        for k in order {
            match k {
                0 => d.push(b.driver(per).as_nanos() as f64 / RING as f64),
                1 => bu.push(b.burst(per).as_nanos() as f64 / RING as f64),
                _ => f.push(b.floor(per).as_nanos() as f64 / RING as f64),
            }
        }
    }
    let (dm, bm, fm) = (median(&mut d), median(&mut bu), median(&mut f));
    summary!(
"summary post: post_send+ring_doorbell {dm:.2} ns/WQE ({:.2}x), burst {bm:.2} ns/WQE ({:.2}x), floor {fm:.2} ns/WQE (median of {ROUNDS} blocks of {RING} WQEs, doorbell every {BATCH}; goal: burst <= 1.4x)",
        dm / fm,
        bm / fm
    );

    let (mut one, mut batch, mut fl) = (Vec::new(), Vec::new(), Vec::new());
    for r in 0..ROUNDS {
        let order: [u8; 3] = match r % 3 {
            0 => [0, 1, 2],
            1 => [1, 2, 0],
            _ => [2, 0, 1],
        };
        for k in order {
            match k {
                0 => one.push(p.poll_one(1).as_nanos() as f64 / RING as f64),
                1 => batch.push(p.poll_batch(1).as_nanos() as f64 / RING as f64),
                _ => fl.push(p.floor(1).as_nanos() as f64 / RING as f64),
            }
        }
    }
    let (om, bm, fm) = (median(&mut one), median(&mut batch), median(&mut fl));
    summary!(
"summary poll: Cq::poll {om:.2} ns/CQE ({:.2}x), Cq::poll_batch(32) {bm:.2} ns/CQE ({:.2}x), floor {fm:.2} ns/CQE (median of {ROUNDS} rounds of {RING} CQEs; goal: Cq::poll <= 1.4x)",
        om / fm,
        bm / fm
    );

    let mut lb = Loopback::new(16);
    let t = Instant::now();
    let mut frames = 0;
    while t.elapsed() < Duration::from_millis(500) {
        frames += lb.round();
    }
    let secs = t.elapsed().as_secs_f64();
    summary!(
"summary loopback: {:.2} Mpps (64-byte frames, batches of {LB_BATCH}, signal every 16, {frames} frames in {secs:.2} s)",
        frames as f64 / secs / 1e6
    );
}

/// The groups, then the summary over the same post and poll set-ups (the same memory, so the
/// same cache and aliasing layout as criterion measured).
fn queues(c: &mut Criterion) {
    let mut pb = PostBench::new();
    post(c, &mut pb);
    let mut pl = PollBench::new();
    poll(c, &mut pl);
    loopback(c);
    summary(&mut pb, &mut pl);
}

fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(20)
}

criterion_group! {
    name = benches;
    config = config();
    targets = queues
}
criterion_main!(benches);
