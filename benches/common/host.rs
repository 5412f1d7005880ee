//! A pipelined host port for the DPA throughput benches: one SQ sending frames of several
//! flows, one RQ taking every answer (frames to `answer_mac`), a window of frames in flight.

use std::sync::Arc;
use std::time::Instant;

use super::T;
use mlx5_dpa::devx::{Devx, UarKind};
use mlx5_dpa::mem::{Access, MemoryRegion, Pd};
use mlx5_dpa::mlx5::cmd::OuterMatch;
use mlx5_dpa::queues::steering::{RxFlow, Tis, TransportDomain};
use mlx5_dpa::queues::wq::ETH_MIN_INLINE;
use mlx5_dpa::queues::{Cq, CqConfig, EthSq, EthSqConfig, HostQueueMem, Rq, RqConfig};
use mlx5_dpa::uar::UarPage;

/// Receive slot size (frames are 65 bytes).
const SLOT: usize = 256;
const LOG_RX: u8 = 10;

/// The host's end: one SQ sending every thread's frames, one RQ taking every answer.
pub struct Host {
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
    pub fn new(ctx: &Arc<dyn Devx>, frames: Vec<Vec<u8>>, answer_mac: [u8; 6]) -> Host {
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
                dmac: Some(answer_mac),
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
    pub fn run(&mut self, total: usize, window: usize) -> f64 {
        let flows = self.frames.len();
        let len = self.frames[0].len();
        let mut sent = 0usize;
        let mut got = 0usize;
        let start = Instant::now();
        let mut last_progress = Instant::now();
        let dev = Arc::clone(self._uar.device());
        while got < total {
            let seen = dev.activity();
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
                // Until the device did something (the model), or a yield (hardware).
                if !dev.wait_activity(seen, T) {
                    std::thread::yield_now();
                }
            }
        }
        total as f64 / start.elapsed().as_secs_f64()
    }
}
