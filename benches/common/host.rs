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
/// Where a frame's UDP destination port is (Ethernet, IPv4 without options, UDP).
const UDP_DPORT: usize = 14 + 20 + 2;

/// log2 of the ring depth a DPA thread's queues need when the host keeps `window` frames in
/// flight over `flows` flows ([`Host::run`]): twice the flow's share (room for the receive
/// WQEs the handler has not posted again yet), at least 64 entries.
pub fn ring_log_depth(window: usize, flows: usize) -> u8 {
    let need = (2 * window.div_ceil(flows.max(1)))
        .max(64)
        .next_power_of_two();
    need.trailing_zeros() as u8
}

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
    /// Each flow's UDP destination port, as its answers carry it.
    ports: Vec<[u8; 2]>,
    /// Frames sent to each flow so far ([`Host::sent`]).
    sent: Vec<u64>,
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
            ports: frames
                .iter()
                .map(|f| [f[UDP_DPORT], f[UDP_DPORT + 1]])
                .collect(),
            sent: vec![0; frames.len()],
            frames,
        }
    }

    /// Frames sent to each flow so far, every one of them answered once `run` returned.
    pub fn sent(&self) -> &[u64] {
        &self.sent
    }

    /// Sends frames (round robin over the flows with room) keeping at most `window` without an
    /// answer, and each flow at most its share of it (`window` over the flows, rounded up),
    /// until `total` answers came; returns frames per second. Every answer is checked for its length and its flow
    /// (the UDP destination port of one of the frames sent).
    ///
    /// The share per flow bounds what each DPA thread has outstanding, so its receive ring
    /// needs room for only that many (see [`ring_log_depth`]); one global window let a slow
    /// thread collect up to the whole window.
    pub fn run(&mut self, total: usize, window: usize) -> f64 {
        let flows = self.frames.len();
        let len = self.frames[0].len();
        let share = window.div_ceil(flows).max(1);
        let mut outstanding = vec![0usize; flows];
        let mut next = 0usize;
        let mut sent = 0usize;
        let mut got = 0usize;
        let start = Instant::now();
        let mut last_progress = Instant::now();
        let dev = Arc::clone(self._uar.device());
        while got < total {
            let seen = dev.activity();
            // Post what the window, the flows' shares and the ring allow, one doorbell for
            // the lot: turns over the flows, each turn one frame for every flow with room.
            let mut posted = 0;
            loop {
                let mut this_turn = 0;
                for _ in 0..flows {
                    if sent >= total || sent - got >= window || self.sq.free() == 0 {
                        break;
                    }
                    let k = next;
                    next = (next + 1) % flows;
                    if outstanding[k] >= share {
                        continue;
                    }
                    let f = &self.frames[k];
                    let rest = self
                        .tx_buf
                        .sge(k * SLOT + ETH_MIN_INLINE, len - ETH_MIN_INLINE);
                    self.sq
                        .post_send(&f[..ETH_MIN_INLINE], &[rest.expect("sge")], k as u64)
                        .expect("post");
                    outstanding[k] += 1;
                    self.sent[k] += 1;
                    sent += 1;
                    this_turn += 1;
                }
                posted += this_turn;
                if this_turn == 0 {
                    break;
                }
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
            let (rq, rx_buf, ports) = (&mut self.rq, &self.rx_buf, &self.ports);
            self.rx_cq.poll_batch(64, |c| {
                let c = c.expect("receive completion");
                assert_eq!(c.byte_len as usize, len, "answer length");
                let slot = rq.complete(c.wqe_counter).expect("rq slot") as usize;
                let mut port = [0u8; 2];
                rx_buf
                    .read(slot * SLOT + UDP_DPORT, &mut port)
                    .expect("answer");
                let k = ports
                    .iter()
                    .position(|p| *p == port)
                    .unwrap_or_else(|| panic!("an answer of no flow sent (UDP port {port:?})"));
                outstanding[k] = outstanding[k].checked_sub(1).expect("one answer per frame");
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
