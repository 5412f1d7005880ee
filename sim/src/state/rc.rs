//! The RC transport's state of one QP: the requester's outstanding requests and PSNs, the
//! responder's expected PSN and the message it is receiving, the responses it owes, and the
//! transport counters. The transport itself (`crate::datapath::rc`) works on it.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crate::state::qp::QpCtx;
use mlx5_dpa::mlx5::enums::QpState;

pub(crate) const PSN_MASK: u32 = 0xff_ffff;
/// Packets the requester keeps unacknowledged before it waits for ACKs (the model's window).
pub(crate) const WINDOW: u32 = 1024;
/// The requester asks for an ACK every this many packets of a long message.
pub(crate) const ACK_EVERY: u32 = 64;
/// Packets one QP sends per engine pass (fairness between QPs).
pub(crate) const PKT_BUDGET: usize = 256;
/// WQEBBs one QP fetches (or flushes) per engine pass.
pub(crate) const WQEBB_BUDGET: u32 = 1024;
/// At most this many PSNs are given out ahead of the oldest unacknowledged one (half the
/// PSN space is the limit for comparisons).
pub(crate) const MAX_PSN_SPAN: u32 = 1 << 22;
/// Largest send WQE (16 WQEBBs; `max_wqe_sz_sq`).
pub(crate) const MAX_WQE: usize = 1024;
/// Frames waiting for delivery inside the device (force loopback, port loopback).
pub(crate) const LOCAL_QUEUE: usize = 8192;
/// Frame buffers kept for reuse by internal delivery.
pub(crate) const POOL_KEEP: usize = 1024;
/// Atomic results kept for duplicate atomics.
pub(crate) const ATOMIC_REPLAY: usize = 4;

/// Send WQE opcodes (`MLX5_OPCODE_*`), declared with the WQE format.
pub(crate) use mlx5_dpa::mlx5::wire::wqe::opcode as wqe_op;

/// Counters of the RC transport.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RcStats {
    /// RC packets sent (requests and responses; force-loopback ones included).
    pub tx_packets: u64,
    /// RC packets accepted by the transport (before the QP's own checks).
    pub rx_packets: u64,
    /// Frames dropped because their ICRC did not match.
    pub icrc_errors: u64,
    /// Frames to the RoCE port that were truncated, inconsistent, of an opcode the model does
    /// not carry, or with a BTH version or P_Key the port does not accept.
    pub malformed: u64,
    /// Packets for a QP that does not exist, is not RC or is not in a state that takes them.
    pub dropped: u64,
    /// Duplicate requests (answered again) and stale responses (ignored).
    pub duplicates: u64,
    /// Go-back-N retransmissions started (ACK timeout, sequence NAK, RNR NAK).
    pub retransmits: u64,
    /// ACK timer expiries.
    pub timeouts: u64,
    /// RNR NAKs sent.
    pub rnr_naks_sent: u64,
    /// Other NAKs sent (sequence error, invalid request, remote access, remote operational).
    pub naks_sent: u64,
    /// Error CQEs written (requester and responder; flushes included).
    pub error_completions: u64,
    /// Frames for internal delivery dropped because the internal queue was full.
    pub local_dropped: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReqState {
    Pending,
    Done,
    Failed(u8),
}

/// One fetched send WQE.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Req {
    pub(crate) wqe_index: u16,
    /// WQEBB counter of its first block.
    pub(crate) pos: u16,
    pub(crate) opcode: u8,
    pub(crate) signaled: bool,
    pub(crate) se: bool,
    pub(crate) len: u32,
    pub(crate) first_psn: u32,
    /// PSNs it occupies (0 for NOP and WQEs that failed before sending).
    pub(crate) npsn: u32,
    /// Packets sent (SEND / WRITE), or 1 once the READ / atomic request went out.
    pub(crate) sent: u32,
    /// READ response packets landed.
    pub(crate) landed: u32,
    pub(crate) state: ReqState,
    pub(crate) raddr: u64,
    pub(crate) rkey: u32,
    pub(crate) imm: [u8; 4],
    pub(crate) swap_add: u64,
    pub(crate) compare: u64,
}

impl Req {
    pub(crate) fn read_like(&self) -> bool {
        matches!(
            self.opcode,
            wqe_op::RDMA_READ | wqe_op::ATOMIC_CS | wqe_op::ATOMIC_FA
        )
    }
    /// Packets the requester sends for it.
    pub(crate) fn packets(&self) -> u32 {
        match self.opcode {
            wqe_op::NOP => 0,
            _ if self.read_like() => 1,
            _ => self.npsn,
        }
    }
    pub(crate) fn last_psn(&self) -> u32 {
        psn_add(self.first_psn, self.npsn.saturating_sub(1))
    }
    pub(crate) fn contains(&self, psn: u32) -> bool {
        self.npsn > 0 && psn_diff(psn, self.first_psn) < self.npsn
    }
}

/// The message the responder is in the middle of.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum InMsg {
    #[default]
    Idle,
    Send {
        offset: u64,
        /// The receive WQE it fills.
        index: u16,
    },
    Write {
        va: u64,
        rkey: u32,
        left: u32,
        total: u32,
    },
}

/// Responses waiting to be sent, in PSN order.
#[derive(Debug, Clone, Copy)]
pub(crate) enum RespJob {
    Ack {
        psn: u32,
        syndrome: u8,
        msn: u32,
    },
    AtomicAck {
        psn: u32,
        orig: u64,
        msn: u32,
    },
    Read {
        va: u64,
        rkey: u32,
        left: u32,
        psn: u32,
        first: bool,
        msn: u32,
    },
}

/// The transport state of one QP.
#[derive(Debug, Default)]
pub(crate) struct RcState {
    /// A send doorbell for this QP was seen on its UAR page.
    pub(crate) doorbelled: bool,
    pub(crate) seen_pi: u16,
    /// The send counter the last doorbell announced: WQEs past it wait for one, as hardware
    /// reads the doorbell record only when rung.
    pub(crate) rung_pi: u16,
    // Requester.
    pub(crate) sq_ci: u16,
    pub(crate) next_psn: u32,
    pub(crate) una: u32,
    pub(crate) sent_hi: u32,
    pub(crate) reqs: VecDeque<Req>,
    pub(crate) tx: usize,
    pub(crate) reads: u32,
    pub(crate) retry_left: u8,
    pub(crate) rnr_left: u8,
    pub(crate) deadline: Option<Instant>,
    pub(crate) rnr_until: Option<Instant>,
    // Responder.
    pub(crate) epsn: u32,
    pub(crate) msn: u32,
    pub(crate) rq_ci: u16,
    pub(crate) in_msg: InMsg,
    pub(crate) nak_sent: bool,
    pub(crate) atomics: [Option<(u32, u64)>; ATOMIC_REPLAY],
    pub(crate) atomic_next: usize,
    pub(crate) jobs: VecDeque<RespJob>,
}

/// Live values QUERY_QP reports.
pub(crate) struct Live {
    pub(crate) next_send_psn: Option<u32>,
    pub(crate) next_rcv_psn: Option<u32>,
    pub(crate) sq_wqebbs: u16,
    pub(crate) rq_wqes: u16,
}

impl RcState {
    /// 2RST: consumer indices, PSNs, outstanding requests and responder state are gone.
    pub(crate) fn reset(&mut self) {
        *self = RcState::default();
    }

    /// INIT2RTR: the responder expects `next_rcv_psn`.
    pub(crate) fn start_responder(&mut self, ctx: &QpCtx) {
        self.epsn = ctx.next_rcv_psn & PSN_MASK;
        self.msn = 0;
        self.in_msg = InMsg::Idle;
        self.nak_sent = false;
    }

    /// RTR2RTS: the requester starts at `next_send_psn`.
    pub(crate) fn start_requester(&mut self, ctx: &QpCtx) {
        let psn = ctx.next_send_psn & PSN_MASK;
        self.next_psn = psn;
        self.una = psn;
        self.sent_hi = psn;
        self.update_requester(ctx);
    }

    /// RTS2RTS: new retry counts.
    pub(crate) fn update_requester(&mut self, ctx: &QpCtx) {
        self.retry_left = ctx.retry_count;
        self.rnr_left = ctx.rnr_retry;
    }

    pub(crate) fn live(&self, state: QpState) -> Live {
        Live {
            next_send_psn: matches!(state, QpState::Rts | QpState::SqEr).then_some(self.next_psn),
            next_rcv_psn: matches!(state, QpState::Rtr | QpState::Rts | QpState::SqEr)
                .then_some(self.epsn),
            sq_wqebbs: self.sq_ci,
            rq_wqes: self.rq_ci,
        }
    }
}

pub(crate) fn psn_add(a: u32, n: u32) -> u32 {
    a.wrapping_add(n) & PSN_MASK
}

/// `a - b` in PSN space.
pub(crate) fn psn_diff(a: u32, b: u32) -> u32 {
    a.wrapping_sub(b) & PSN_MASK
}

/// Path MTU in bytes from the PRM encoding (1 = 256 .. 5 = 4096).
pub(crate) fn mtu_bytes(mtu: u8) -> u32 {
    128 << mtu.clamp(1, 5)
}

/// The largest message the QP takes (`2^log_msg_max`, at most 2^31 bytes).
pub(crate) fn max_msg(ctx: &QpCtx) -> u64 {
    1u64 << ctx.log_msg_max.min(31)
}

/// The ACK timeout (IBA: 4.096 µs x 2^ack_timeout); `None` for 0, which waits forever.
pub(crate) fn ack_timeout(ctx: &QpCtx) -> Option<Duration> {
    (ctx.ack_timeout != 0).then(|| Duration::from_nanos(4096u64 << ctx.ack_timeout.min(31)))
}

/// The RNR NAK timer (IBA table "RNR NAK timer field encodings"; code 0 is the longest).
pub(crate) fn rnr_delay(code: u8) -> Duration {
    const US: [u32; 32] = [
        655_360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960, 1280, 1920, 2560, 3840,
        5120, 7680, 10_240, 15_360, 20_480, 30_720, 40_960, 61_440, 81_920, 122_880, 163_840,
        245_760, 327_680, 491_520,
    ];
    Duration::from_micros(u64::from(US[usize::from(code & 0x1f)]))
}
