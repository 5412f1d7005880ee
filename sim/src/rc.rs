//! The RC transport: requester and responder of reliable-connected QPs, over RoCE v2.
//!
//! Work formats (PRM; rdma-core `mlx5dv.h`): the QP ring holds the RQ first (receive WQEs
//! of `16 << log_rq_stride` bytes: data segments, ended early by lkey `0x100`), then the SQ
//! (64-byte WQEBBs). The doorbell record holds the receive counter (WQEs) at 0 and the send
//! counter (WQEBBs) at 4, both 16-bit counts in big-endian words. A send WQE is a control
//! segment (`opmod | wqe_index | opcode`, `qpn | ds`, `fm_ce_se`, immediate), then a remote
//! address segment for RDMA and atomics, an atomic segment for atomics, then data or inline
//! segments.
//!
//! Protocol (InfiniBand Architecture Specification vol. 1, ch. 9 "transport layer"):
//!
//! - Requester: fetches WQEs in order, gives each message its PSNs (one per packet of at
//!   most the path MTU; a READ takes one PSN per response packet), sends them with the
//!   AckReq bit on the last packet and every [`ACK_EVERY`] packets, keeps at most [`WINDOW`]
//!   packets unacknowledged, and at most `2^log_sra_max` READs / atomics outstanding
//!   (initiator depth). ACKs are cumulative; READ responses and atomic ACKs acknowledge the
//!   requests before them. Completions are written in WQE order: a SEND / WRITE completes on
//!   its ACK, a READ when its data has landed, an atomic when its ACK arrived and the original
//!   value was written.
//! - Retries: the ACK timer (4.096 µs x 2^ack_timeout; 0 = none) and PSN-sequence NAKs go
//!   back to the oldest unacknowledged PSN, at most `retry_count` times, then
//!   TRANSPORT_RETRY_EXC_ERR. An RNR NAK waits the timer it names (IBA RNR timer table) and
//!   resends from the NAK'd PSN, at most `rnr_retry` times (7 = forever), then
//!   RNR_RETRY_EXC_ERR; the packets that were in flight behind it are not retry events of
//!   their own (the responder drops them without a NAK, and a sequence NAK arriving during
//!   the RNR wait is ignored). A waiting timer is not work for `Device::step`.
//! - Requester errors (local protection, malformed WQE, remote NAKs, retries exceeded) give
//!   the failing WQE its error CQE once the WQEs before it have completed, then move the QP to
//!   ERR (IBA: RC requester errors go to the Error state, not SQE).
//! - Responder: accepts the expected PSN only. A request ahead of it is a PSN sequence error
//!   (one NAK until the expected PSN arrives); a request behind it is a duplicate: SEND /
//!   WRITE are acknowledged again, READ is executed again, an atomic's saved result is sent
//!   again (the last four are kept). Responder errors (IBA vol. 1 §9.9.3, "responder error
//!   behavior"): PSN sequence errors and "receiver not ready" (no receive WQE for a SEND or a
//!   WRITE with immediate) leave the QP as it is; invalid requests (bad opcode sequence, bad
//!   length, misaligned atomic, no receive queue, too many READs outstanding) are NAKed with
//!   "invalid request", access violations (R_Key, PD, rights, bounds, QP access enables) with
//!   "remote access error", a failing local scatter with "remote operational error"; each of
//!   these moves the responder QP to ERR. A receive WQE that was being filled completes with
//!   LOCAL_LENGTH_ERR (message longer than the WQE) or LOCAL_PROT_ERR (bad receive lkey).
//! - ERR: every WQE outstanding or posted (send and receive) completes with WR_FLUSH_ERR, also
//!   those posted later; incoming packets are dropped. RST forgets everything (no CQEs).
//!
//! Atomics work on 8-byte aligned values in host byte order (little-endian), the mode
//! mlx5_core configures (`atomic_req_8B_endianness_mode`); the operands in the WQE and on the
//! wire are big-endian. They are atomic with respect to everything the model does (one
//! lock), not to host CPU accesses.
//!
//! The wire (`port::roce`): between linked devices RoCE v2 frames; with `ads.fl` (force
//! loopback) the same frames are delivered inside the device (and captured).

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use mlx5_dpa::mlx5::wire::cqe::opcode as cqe_op;
use mlx5_dpa::mlx5::wire::wqe::{
    AtomicSeg, CtrlSeg, CtrlSegRepr, DataSeg, RaddrSeg, CTRL_CQ_UPDATE, CTRL_SOLICITED, INLINE_SEG,
    INVALID_LKEY, SEG, WQEBB,
};
use mlx5_dpa::mlx5::wire::{Completion, CompletionError, CompletionKind, Cqe64, Syndrome};
use mlx5_dpa::queues::ring::wqebbs;

use crate::engine::{self, syndrome, Datapath};
use crate::fw::objects::{qp_st, qp_state, Qp, QpCtx, QpSq};
use crate::fw::Firmware;
use crate::port::roce::{self, aeth, opcode as bth, Bth, Packet, Path};

const PSN_MASK: u32 = 0xff_ffff;
/// Packets the requester keeps unacknowledged before it waits for ACKs (the model's window).
pub(crate) const WINDOW: u32 = 1024;
/// The requester asks for an ACK every this many packets of a long message.
pub(crate) const ACK_EVERY: u32 = 64;
/// Packets one QP sends per engine pass (fairness between QPs).
const PKT_BUDGET: usize = 256;
/// WQEBBs one QP fetches (or flushes) per engine pass.
const WQEBB_BUDGET: u32 = 1024;
/// At most this many PSNs are given out ahead of the oldest unacknowledged one (half the
/// PSN space is the limit for comparisons).
const MAX_PSN_SPAN: u32 = 1 << 22;
/// Largest send WQE (16 WQEBBs; `max_wqe_sz_sq`).
const MAX_WQE: usize = 1024;
/// Frames waiting for delivery inside the device (force loopback, port loopback).
const LOCAL_QUEUE: usize = 8192;
/// Frame buffers kept for reuse by internal delivery.
const POOL_KEEP: usize = 1024;
/// Atomic results kept for duplicate atomics.
const ATOMIC_REPLAY: usize = 4;

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
enum ReqState {
    Pending,
    Done,
    Failed(u8),
}

/// One fetched send WQE.
#[derive(Debug, Clone, Copy)]
struct Req {
    wqe_index: u16,
    /// WQEBB counter of its first block.
    pos: u16,
    opcode: u8,
    signaled: bool,
    se: bool,
    len: u32,
    first_psn: u32,
    /// PSNs it occupies (0 for NOP and WQEs that failed before sending).
    npsn: u32,
    /// Packets sent (SEND / WRITE), or 1 once the READ / atomic request went out.
    sent: u32,
    /// READ response packets landed.
    landed: u32,
    state: ReqState,
    raddr: u64,
    rkey: u32,
    imm: [u8; 4],
    swap_add: u64,
    compare: u64,
}

impl Req {
    fn read_like(&self) -> bool {
        matches!(
            self.opcode,
            wqe_op::RDMA_READ | wqe_op::ATOMIC_CS | wqe_op::ATOMIC_FA
        )
    }
    /// Packets the requester sends for it.
    fn packets(&self) -> u32 {
        match self.opcode {
            wqe_op::NOP => 0,
            _ if self.read_like() => 1,
            _ => self.npsn,
        }
    }
    fn last_psn(&self) -> u32 {
        psn_add(self.first_psn, self.npsn.saturating_sub(1))
    }
    fn contains(&self, psn: u32) -> bool {
        self.npsn > 0 && psn_diff(psn, self.first_psn) < self.npsn
    }
}

/// The message the responder is in the middle of.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum InMsg {
    #[default]
    Idle,
    Send {
        offset: u64,
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
enum RespJob {
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
    seen_pi: u16,
    // Requester.
    sq_ci: u16,
    next_psn: u32,
    una: u32,
    sent_hi: u32,
    reqs: VecDeque<Req>,
    tx: usize,
    reads: u32,
    retry_left: u8,
    rnr_left: u8,
    deadline: Option<Instant>,
    rnr_until: Option<Instant>,
    // Responder.
    epsn: u32,
    msn: u32,
    rq_ci: u16,
    in_msg: InMsg,
    nak_sent: bool,
    atomics: [Option<(u32, u64)>; ATOMIC_REPLAY],
    atomic_next: usize,
    jobs: VecDeque<RespJob>,
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

    pub(crate) fn live(&self, state: u8) -> Live {
        use qp_state::*;
        Live {
            next_send_psn: matches!(state, RTS | SQER).then_some(self.next_psn),
            next_rcv_psn: matches!(state, RTR | RTS | SQER).then_some(self.epsn),
            sq_wqebbs: self.sq_ci,
            rq_wqes: self.rq_ci,
        }
    }
}

fn psn_add(a: u32, n: u32) -> u32 {
    a.wrapping_add(n) & PSN_MASK
}

/// `a - b` in PSN space.
fn psn_diff(a: u32, b: u32) -> u32 {
    a.wrapping_sub(b) & PSN_MASK
}

/// Path MTU in bytes from the PRM encoding (1 = 256 .. 5 = 4096).
fn mtu_bytes(mtu: u8) -> u32 {
    128 << mtu.clamp(1, 5)
}

/// The largest message the QP takes (`2^log_msg_max`, at most 2^31 bytes).
fn max_msg(ctx: &QpCtx) -> u64 {
    1u64 << ctx.log_msg_max.min(31)
}

/// The ACK timeout (IBA: 4.096 µs x 2^ack_timeout); `None` for 0, which waits forever.
fn ack_timeout(ctx: &QpCtx) -> Option<Duration> {
    (ctx.ack_timeout != 0).then(|| Duration::from_nanos(4096u64 << ctx.ack_timeout.min(31)))
}

/// The RNR NAK timer (IBA table "RNR NAK timer field encodings"; code 0 is the longest).
fn rnr_delay(code: u8) -> Duration {
    const US: [u32; 32] = [
        655_360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960, 1280, 1920, 2560, 3840,
        5120, 7680, 10_240, 15_360, 20_480, 30_720, 40_960, 61_440, 81_920, 122_880, 163_840,
        245_760, 327_680, 491_520,
    ];
    Duration::from_micros(u64::from(US[usize::from(code & 0x1f)]))
}

// ---------------------------------------------------------------------------------------------
// CQEs.

/// A requester completion (the WQE opcode goes to `sop_drop_qpn[31:24]`).
fn req_cqe(wqe_opcode: u8, qpn: u32, wqe_counter: u16, byte_cnt: u32) -> [u8; 64] {
    Completion {
        kind: CompletionKind::Send { wqe_opcode },
        qpn,
        wqe_counter,
        byte_len: byte_cnt,
        imm: None,
    }
    .to_cqe()
}

/// A responder completion (the immediate as it came on the wire).
fn resp_cqe(
    kind: CompletionKind,
    byte_cnt: u32,
    imm: Option<[u8; 4]>,
    qpn: u32,
    wqe_counter: u16,
) -> [u8; 64] {
    Completion {
        kind,
        qpn,
        wqe_counter,
        byte_len: byte_cnt,
        imm: imm.map(u32::from_be_bytes),
    }
    .to_cqe()
}

/// An error completion.
fn err_cqe(requester: bool, syn: u8, wqe_opcode: u8, qpn: u32, wqe_counter: u16) -> [u8; 64] {
    CompletionError::Work {
        requester,
        syndrome: Syndrome::from_raw(syn),
        vendor_syndrome: 0,
        qpn,
        wqe_counter,
        wqe_opcode,
    }
    .to_cqe()
}

fn post(fw: &mut Firmware, dp: &mut Datapath, cqn: Option<u32>, cqe: [u8; 64]) {
    if Cqe64::new_unchecked(&cqe[..]).opcode() >= cqe_op::REQ_ERR {
        dp.rc_stats.error_completions += 1;
    }
    if let Some(cqn) = cqn {
        engine::post_cqe(fw, dp, cqn, cqe);
    }
}

// ---------------------------------------------------------------------------------------------
// Send WQEs.

/// One gather / scatter element of a send WQE.
#[derive(Debug, Clone, Copy)]
enum Seg {
    Data {
        len: u32,
        lkey: u32,
        addr: u64,
    },
    /// Inline bytes at `at..at + len` of the WQE image.
    Inline {
        at: usize,
        len: u32,
    },
}

/// A send WQE read from the ring.
struct SendWqe {
    buf: [u8; MAX_WQE],
    opcode: u8,
    opmod: u8,
    wqe_index: u16,
    qpn: u32,
    ds: usize,
    nbb: u16,
    fm_ce_se: u8,
    imm: [u8; 4],
    raddr: u64,
    rkey: u32,
    swap_add: u64,
    compare: u64,
    /// Byte offset of the first data or inline segment.
    segs_at: usize,
}

impl SendWqe {
    /// Reads the WQE whose first WQEBB is at counter `pos`, following the ring's wrap.
    fn read(qp: &Qp, sq: QpSq, pos: u16) -> SendWqe {
        let mut w = SendWqe {
            buf: [0; MAX_WQE],
            opcode: 0,
            opmod: 0,
            wqe_index: 0,
            qpn: 0,
            ds: 0,
            nbb: 1,
            fm_ce_se: 0,
            imm: [0; 4],
            raddr: 0,
            rkey: 0,
            swap_add: 0,
            compare: 0,
            segs_at: 16,
        };
        let mask = (1u32 << sq.log_size) - 1;
        let at = |i: u16| sq.offset + ((u32::from(pos.wrapping_add(i)) & mask) as usize) * WQEBB;
        qp.ring.read(at(0), &mut w.buf[..WQEBB]);
        let c = CtrlSegRepr::parse(&CtrlSeg::new_unchecked(&w.buf[..SEG]));
        w.opmod = c.opmod;
        w.wqe_index = c.wqe_index;
        w.opcode = c.opcode;
        w.qpn = c.qpn;
        w.ds = usize::from(c.ds);
        w.fm_ce_se = c.fm_ce_se;
        w.imm = c.imm.to_be_bytes();
        w.nbb = wqebbs(w.ds);
        for i in 1..w.nbb {
            let o = usize::from(i) * WQEBB;
            qp.ring.read(at(i), &mut w.buf[o..o + WQEBB]);
        }
        let seg = |i: usize| &w.buf[i * SEG..(i + 1) * SEG];
        let (mut raddr, mut rkey, mut swap_add, mut compare) = (0, 0, 0, 0);
        let segs_at = match w.opcode {
            wqe_op::RDMA_WRITE | wqe_op::RDMA_WRITE_IMM | wqe_op::RDMA_READ => {
                let r = RaddrSeg::new_unchecked(seg(1));
                (raddr, rkey) = (r.raddr(), r.rkey());
                2 * SEG
            }
            wqe_op::ATOMIC_CS | wqe_op::ATOMIC_FA => {
                let r = RaddrSeg::new_unchecked(seg(1));
                (raddr, rkey) = (r.raddr(), r.rkey());
                let a = AtomicSeg::new_unchecked(seg(2));
                (swap_add, compare) = (a.swap_add(), a.compare());
                3 * SEG
            }
            _ => SEG,
        };
        (w.raddr, w.rkey, w.swap_add, w.compare, w.segs_at) =
            (raddr, rkey, swap_add, compare, segs_at);
        w
    }

    fn signaled(&self) -> bool {
        // fm_ce_se bits 3:2: 0b10 "CQE always" (0b11 also asks for an EQE).
        self.fm_ce_se & CTRL_CQ_UPDATE != 0
    }

    fn fenced(&self) -> bool {
        self.fm_ce_se >> 5 != 0
    }

    /// Calls `f` for every data or inline segment; stops at the first error.
    fn segments(&self, mut f: impl FnMut(Seg) -> Result<(), u8>) -> Result<(), u8> {
        let end = self.ds * SEG;
        let mut at = self.segs_at;
        while at + SEG <= end {
            let s = DataSeg::new_unchecked(&self.buf[at..at + SEG]);
            let bc = s.byte_count();
            if bc & INLINE_SEG != 0 {
                // An inline segment: the byte count, then the bytes.
                let len = bc & !INLINE_SEG;
                let stop = (at + 4)
                    .checked_add(len as usize)
                    .filter(|e| *e <= end)
                    .ok_or(syndrome::LOCAL_QP_OP_ERR)?;
                f(Seg::Inline { at: at + 4, len })?;
                at = (stop).div_ceil(SEG) * SEG;
                continue;
            }
            f(Seg::Data {
                len: bc,
                lkey: s.lkey(),
                addr: s.addr(),
            })?;
            at += SEG;
        }
        Ok(())
    }
}

/// Checks a fetched WQE; returns the message length.
fn check_wqe(fw: &Firmware, qp: &Qp, qpn: u32, w: &SendWqe) -> Result<u32, u8> {
    use wqe_op::*;
    if w.ds == 0 || w.qpn != qpn {
        return Err(syndrome::LOCAL_QP_OP_ERR);
    }
    let min_ds = match w.opcode {
        NOP => return Ok(0),
        SEND | SEND_IMM => 1,
        RDMA_WRITE | RDMA_WRITE_IMM | RDMA_READ => 2,
        ATOMIC_CS | ATOMIC_FA => 4,
        _ => return Err(syndrome::LOCAL_QP_OP_ERR),
    };
    if w.ds < min_ds || w.opmod != 0 {
        return Err(syndrome::LOCAL_QP_OP_ERR);
    }
    let write = matches!(w.opcode, RDMA_READ | ATOMIC_CS | ATOMIC_FA);
    let mut total: u64 = 0;
    w.segments(|s| {
        match s {
            Seg::Inline { len, .. } => {
                if write {
                    return Err(syndrome::LOCAL_QP_OP_ERR);
                }
                total += u64::from(len);
            }
            Seg::Data { len, lkey, addr } => {
                if len == 0 {
                    return Ok(());
                }
                engine::translate(fw, qp.pd, lkey, addr, len as usize, write)?;
                total += u64::from(len);
            }
        }
        Ok(())
    })?;
    if matches!(w.opcode, ATOMIC_CS | ATOMIC_FA) && total != 8 {
        return Err(syndrome::LOCAL_LENGTH_ERR);
    }
    if total > max_msg(&qp.ctx) {
        return Err(syndrome::LOCAL_LENGTH_ERR);
    }
    Ok(total as u32)
}

/// Copies `n` bytes of the message from offset `off` (gather list of the WQE) onto `frame`.
fn gather(
    fw: &Firmware,
    qp: &Qp,
    r: &Req,
    off: u64,
    n: usize,
    frame: &mut Vec<u8>,
) -> Result<(), u8> {
    if n == 0 {
        return Ok(());
    }
    let sq = qp.sq.ok_or(syndrome::LOCAL_QP_OP_ERR)?;
    let w = SendWqe::read(qp, sq, r.pos);
    if w.opcode != r.opcode || w.wqe_index != r.wqe_index {
        // The driver rewrote a WQE the device still owns.
        return Err(syndrome::LOCAL_QP_OP_ERR);
    }
    let mut pos = 0u64;
    let mut left = n;
    let mut want = off;
    w.segments(|s| {
        if left == 0 {
            return Ok(());
        }
        let len = match s {
            Seg::Data { len, .. } | Seg::Inline { len, .. } => u64::from(len),
        };
        if want >= pos + len {
            pos += len;
            return Ok(());
        }
        let skip = want - pos;
        let take = ((len - skip) as usize).min(left);
        match s {
            Seg::Inline { at, .. } => {
                let from = at + skip as usize;
                frame.extend_from_slice(&w.buf[from..from + take]);
            }
            Seg::Data { lkey, addr, .. } => {
                let dma = engine::translate(fw, qp.pd, lkey, addr.wrapping_add(skip), take, false)?;
                let start = frame.len();
                frame.resize(start + take, 0);
                if !dma.read(0, &mut frame[start..]) {
                    return Err(syndrome::LOCAL_PROT_ERR);
                }
            }
        }
        left -= take;
        want += take as u64;
        pos += len;
        Ok(())
    })?;
    if left != 0 {
        return Err(syndrome::LOCAL_QP_OP_ERR);
    }
    Ok(())
}

/// Writes `data` at message offset `off` into the scatter list of a READ / atomic WQE.
fn scatter_local(fw: &Firmware, qp: &Qp, r: &Req, off: u64, data: &[u8]) -> Result<(), u8> {
    if data.is_empty() {
        return Ok(());
    }
    let sq = qp.sq.ok_or(syndrome::LOCAL_QP_OP_ERR)?;
    let w = SendWqe::read(qp, sq, r.pos);
    if w.opcode != r.opcode || w.wqe_index != r.wqe_index {
        return Err(syndrome::LOCAL_QP_OP_ERR);
    }
    let mut pos = 0u64;
    let mut rest = data;
    let mut want = off;
    w.segments(|s| {
        let Seg::Data { len, lkey, addr } = s else {
            return Err(syndrome::LOCAL_QP_OP_ERR);
        };
        let len = u64::from(len);
        if rest.is_empty() || want >= pos + len {
            pos += len;
            return Ok(());
        }
        let skip = want - pos;
        let take = ((len - skip) as usize).min(rest.len());
        let dma = engine::translate(fw, qp.pd, lkey, addr.wrapping_add(skip), take, true)?;
        if !dma.write(0, &rest[..take]) {
            return Err(syndrome::LOCAL_PROT_ERR);
        }
        rest = &rest[take..];
        want += take as u64;
        pos += len;
        Ok(())
    })?;
    if !rest.is_empty() {
        return Err(syndrome::LOCAL_LENGTH_ERR);
    }
    Ok(())
}

/// Writes `data` at message offset `off` into receive WQE `index`.
fn scatter_rq(fw: &Firmware, qp: &Qp, index: u16, off: u64, data: &[u8]) -> Result<(), u8> {
    if data.is_empty() {
        return Ok(());
    }
    let rq = qp.rq.ok_or(syndrome::LOCAL_QP_OP_ERR)?;
    let stride = 1usize << rq.log_stride;
    let slot = (u32::from(index) & ((1u32 << rq.log_size) - 1)) as usize * stride;
    let mut pos = 0u64;
    let mut rest = data;
    let mut want = off;
    let mut seg = [0u8; SEG];
    for s in 0..stride / SEG {
        if rest.is_empty() {
            break;
        }
        if !qp.ring.read(slot + s * SEG, &mut seg) {
            return Err(syndrome::LOCAL_QP_OP_ERR);
        }
        let d = DataSeg::new_unchecked(&seg[..]);
        let len = u64::from(d.byte_count() & !INLINE_SEG);
        let lkey = d.lkey();
        if lkey == INVALID_LKEY {
            break;
        }
        if len == 0 || want >= pos + len {
            pos += len;
            continue;
        }
        let skip = want - pos;
        let take = ((len - skip) as usize).min(rest.len());
        let dma = engine::translate(fw, qp.pd, lkey, d.addr().wrapping_add(skip), take, true)?;
        if !dma.write(0, &rest[..take]) {
            return Err(syndrome::LOCAL_PROT_ERR);
        }
        rest = &rest[take..];
        want += take as u64;
        pos += len;
    }
    if !rest.is_empty() {
        return Err(syndrome::LOCAL_LENGTH_ERR);
    }
    Ok(())
}

/// Remote access rights.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Right {
    Read,
    Write,
    Atomic,
}

/// Resolves an R_Key for `len` bytes at `va` on behalf of a responder QP in `pd`.
fn rtranslate(
    fw: &Firmware,
    pd: u32,
    rkey: u32,
    va: u64,
    len: usize,
    right: Right,
) -> Option<crate::mem::Dma> {
    let m = fw.mkeys.get(rkey >> 8).filter(|m| m.key == rkey)?;
    let granted = match right {
        Right::Read => m.rr,
        Right::Write => m.rw,
        Right::Atomic => m.a,
    };
    if m.pd != pd || !granted {
        return None;
    }
    let off = va.checked_sub(m.start)?;
    if off.checked_add(len as u64).is_none_or(|end| end > m.len) {
        return None;
    }
    m.dma.sub(off as usize, len)
}

// ---------------------------------------------------------------------------------------------
// The wire.

fn path(fw: &Firmware, qp: &Qp, qpn: u32) -> Path {
    let own_mac = fw.profile.mac;
    let own_ip = fw.profile.ipv4;
    let c = &qp.ctx;
    let (dmac, dip, ttl) = if c.fl {
        (own_mac, own_ip, 64)
    } else {
        (
            c.rmac,
            crate::fw::vport::gid_ipv4(&c.rgid).unwrap_or([0; 4]),
            if c.hop_limit == 0 { 64 } else { c.hop_limit },
        )
    };
    // RoCE v2 source ports come from 0xc000..=0xffff for entropy; the model derives one from
    // the two QP numbers unless the path names one.
    let sport = if c.udp_sport != 0 {
        c.udp_sport
    } else {
        0xc000 | ((qpn ^ c.remote_qpn) & 0x3fff) as u16
    };
    Path {
        smac: own_mac,
        dmac,
        sip: own_ip,
        dip,
        ttl,
        sport,
        mig: c.pm_state == 3,
    }
}

/// Sends a finished RC frame: inside the device for force loopback, else out of the port.
fn send_frame(fw: &mut Firmware, dp: &mut Datapath, fl: bool, frame: &[u8]) {
    dp.rc_stats.tx_packets += 1;
    if fl {
        engine::capture(dp, frame);
        enqueue_local(dp, frame);
    } else {
        engine::transmit(fw, dp, frame, None);
    }
}

/// Queues a frame for delivery inside the device (processed by [`drain_local`]).
pub(crate) fn enqueue_local(dp: &mut Datapath, frame: &[u8]) {
    if dp.rc_local.len() >= LOCAL_QUEUE {
        dp.rc_stats.local_dropped += 1;
        return;
    }
    let mut buf = dp.rc_pool.pop().unwrap_or_default();
    buf.clear();
    buf.extend_from_slice(frame);
    dp.rc_local.push_back(buf);
}

/// Delivers the frames queued inside the device when the pass started.
pub(crate) fn drain_local(fw: &mut Firmware, dp: &mut Datapath) -> usize {
    let n = dp.rc_local.len();
    for _ in 0..n {
        let Some(buf) = dp.rc_local.pop_front() else {
            break;
        };
        receive(fw, dp, &buf);
        if dp.rc_pool.len() < POOL_KEEP {
            dp.rc_pool.push(buf);
        }
    }
    n
}

/// Whether a frame arriving at the port belongs to the RC transport.
pub(crate) fn is_for_us(fw: &Firmware, frame: &[u8]) -> bool {
    roce::is_for(frame, &fw.profile.mac, &fw.profile.ipv4)
}

/// An RC frame arrived (from the port or from inside the device).
pub(crate) fn receive(fw: &mut Firmware, dp: &mut Datapath, frame: &[u8]) {
    let p = match roce::parse(frame) {
        Ok(p) => p,
        Err(roce::Reject::BadIcrc) => {
            dp.rc_stats.icrc_errors += 1;
            return;
        }
        Err(_) => {
            dp.rc_stats.malformed += 1;
            return;
        }
    };
    dp.rc_stats.rx_packets += 1;
    let qpn = p.dqpn;
    match fw.qps.get(qpn) {
        Some(q) if q.st == qp_st::RC => {}
        _ => {
            dp.rc_stats.dropped += 1;
            return;
        }
    }
    if roce::is_response(p.opcode) {
        requester_rx(fw, dp, qpn, &p);
    } else {
        responder_rx(fw, dp, qpn, &p);
    }
}

// ---------------------------------------------------------------------------------------------
// The engine pass.

/// Runs every RC QP: responses waiting, timers, new WQEs, packets, completions, flushes.
pub(crate) fn run(fw: &mut Firmware, dp: &mut Datapath, now: Instant) -> usize {
    use qp_state::*;
    let mut ids = std::mem::take(&mut dp.qp_ids);
    ids.clear();
    ids.extend(
        fw.qps
            .iter()
            .filter(|(_, q)| q.st == qp_st::RC && matches!(q.state, RTR | RTS | SQER | ERR))
            .map(|(id, _)| id),
    );
    let mut work = 0;
    for &qpn in &ids {
        let Some(state) = fw.qps.get(qpn).map(|q| q.state) else {
            continue;
        };
        work += match state {
            ERR => flush(fw, dp, qpn),
            RTS => {
                run_jobs(fw, dp, qpn, PKT_BUDGET)
                    + timers(fw, dp, qpn, now)
                    + fetch(fw, dp, qpn)
                    + send_requests(fw, dp, qpn, now)
                    + complete(fw, dp, qpn, now)
            }
            _ => run_jobs(fw, dp, qpn, PKT_BUDGET),
        };
    }
    dp.qp_ids = ids;
    work
}

/// Takes new WQEs from the send queue.
fn fetch(fw: &mut Firmware, dp: &mut Datapath, qpn: u32) -> usize {
    let Some(qp) = fw.qps.get_mut(qpn) else {
        return 0;
    };
    let Some(sq) = qp.sq else { return 0 };
    // Send doorbell record: dbrec[1], 16-bit WQEBB counter.
    let Some(pi) = qp.dbr.read_be32(4).map(|v| v as u16) else {
        return 0;
    };
    if pi != qp.rc.seen_pi {
        if !qp.rc.doorbelled {
            dp.port.stats.dbr_without_doorbell += 1;
        }
        qp.rc.seen_pi = pi;
    }
    qp.rc.doorbelled = false;
    let mut work = 0;
    let mut bbs = 0u32;
    while bbs < WQEBB_BUDGET {
        let Some(qp) = fw.qps.get(qpn) else { break };
        let rc = &qp.rc;
        if rc.sq_ci == pi
            || matches!(rc.reqs.back(), Some(r) if matches!(r.state, ReqState::Failed(_)))
        {
            break;
        }
        let w = SendWqe::read(qp, sq, rc.sq_ci);
        let posted = pi.wrapping_sub(rc.sq_ci);
        // A WQE reaching past the producer counter is not (completely) posted.
        let checked = if w.nbb > posted {
            Err(syndrome::LOCAL_QP_OP_ERR)
        } else {
            check_wqe(fw, qp, qpn, &w)
        };
        let nbb = w.nbb.min(posted);
        let ctx = qp.ctx;
        let read_like = matches!(
            w.opcode,
            wqe_op::RDMA_READ | wqe_op::ATOMIC_CS | wqe_op::ATOMIC_FA
        );
        let mut npsn = 0;
        if let Ok(len) = checked {
            if read_like {
                // Initiator depth, and the fence: wait for READs / atomics before it.
                if rc.reads >= 1u32 << ctx.log_sra_max.min(16) || (w.fenced() && rc.reads > 0) {
                    break;
                }
            } else if w.fenced() && rc.reads > 0 {
                break;
            }
            npsn = match w.opcode {
                wqe_op::NOP => 0,
                wqe_op::ATOMIC_CS | wqe_op::ATOMIC_FA => 1,
                _ => len.div_ceil(mtu_bytes(ctx.mtu)).max(1),
            };
            if !rc.reqs.is_empty() && psn_diff(rc.next_psn, rc.una) + npsn > MAX_PSN_SPAN {
                break;
            }
        }
        let Some(qp) = fw.qps.get_mut(qpn) else { break };
        let rc = &mut qp.rc;
        let (len, state) = match checked {
            Ok(len) if w.opcode == wqe_op::NOP => (len, ReqState::Done),
            Ok(len) => (len, ReqState::Pending),
            Err(syn) => {
                tracing::debug!(target: "mlx5_sim::rc", qpn, wqe_index = w.wqe_index, syndrome = syn, "send WQE refused");
                (0, ReqState::Failed(syn))
            }
        };
        let req = Req {
            wqe_index: w.wqe_index,
            pos: rc.sq_ci,
            opcode: w.opcode,
            signaled: w.signaled(),
            se: w.fm_ce_se & CTRL_SOLICITED != 0,
            len,
            first_psn: rc.next_psn,
            npsn,
            sent: 0,
            landed: 0,
            state,
            raddr: w.raddr,
            rkey: w.rkey,
            imm: w.imm,
            swap_add: w.swap_add,
            compare: w.compare,
        };
        if state == ReqState::Pending && req.read_like() {
            rc.reads += 1;
        }
        rc.next_psn = psn_add(rc.next_psn, npsn);
        rc.reqs.push_back(req);
        rc.sq_ci = rc.sq_ci.wrapping_add(nbb);
        bbs += u32::from(nbb);
        work += 1;
    }
    work
}

/// Builds packet `r.sent` of request `r` into `frame`.
fn build_request(
    fw: &Firmware,
    qp: &Qp,
    qpn: u32,
    r: &Req,
    frame: &mut Vec<u8>,
) -> Result<u32, u8> {
    use wqe_op::*;
    let c = &qp.ctx;
    let p = path(fw, qp, qpn);
    let mtu = mtu_bytes(c.mtu);
    let hdr = |opcode, se, ack_req, psn| Bth {
        opcode,
        se,
        dqpn: c.remote_qpn,
        ack_req,
        psn,
    };
    match r.opcode {
        SEND | SEND_IMM | RDMA_WRITE | RDMA_WRITE_IMM => {
            let k = r.sent;
            let (first, last) = (k == 0, k + 1 == r.npsn);
            let off = u64::from(k) * u64::from(mtu);
            let n = (u64::from(r.len) - off.min(u64::from(r.len))).min(u64::from(mtu)) as usize;
            let send = matches!(r.opcode, SEND | SEND_IMM);
            let imm = matches!(r.opcode, SEND_IMM | RDMA_WRITE_IMM);
            let op = match (send, first, last, imm) {
                (true, true, true, false) => bth::SEND_ONLY,
                (true, true, true, true) => bth::SEND_ONLY_IMM,
                (true, true, false, _) => bth::SEND_FIRST,
                (true, false, false, _) => bth::SEND_MIDDLE,
                (true, false, true, false) => bth::SEND_LAST,
                (true, false, true, true) => bth::SEND_LAST_IMM,
                (false, true, true, false) => bth::RDMA_WRITE_ONLY,
                (false, true, true, true) => bth::RDMA_WRITE_ONLY_IMM,
                (false, true, false, _) => bth::RDMA_WRITE_FIRST,
                (false, false, false, _) => bth::RDMA_WRITE_MIDDLE,
                (false, false, true, false) => bth::RDMA_WRITE_LAST,
                (false, false, true, true) => bth::RDMA_WRITE_LAST_IMM,
            };
            let psn = psn_add(r.first_psn, k);
            // Solicited event: on the last packet of a SEND or WRITE with immediate.
            let se = last && r.se && (send || imm);
            let ack_req = last || (k + 1).is_multiple_of(ACK_EVERY);
            roce::start(frame, &p, &hdr(op, se, ack_req, psn));
            if !send && first {
                roce::put_reth(frame, r.raddr, r.rkey, r.len);
            }
            if last && imm {
                frame.extend_from_slice(&r.imm);
            }
            gather(fw, qp, r, off, n, frame)?;
            roce::finish(frame);
            Ok(psn)
        }
        RDMA_READ => {
            // A READ asks for what has not landed yet (all of it, unless retried).
            let done = u64::from(r.landed) * u64::from(mtu);
            let psn = psn_add(r.first_psn, r.landed);
            roce::start(frame, &p, &hdr(bth::RDMA_READ_REQUEST, false, true, psn));
            roce::put_reth(
                frame,
                r.raddr.wrapping_add(done),
                r.rkey,
                r.len.saturating_sub(done as u32),
            );
            roce::finish(frame);
            Ok(r.last_psn())
        }
        ATOMIC_CS | ATOMIC_FA => {
            let op = if r.opcode == ATOMIC_CS {
                bth::COMPARE_SWAP
            } else {
                bth::FETCH_ADD
            };
            roce::start(frame, &p, &hdr(op, false, true, r.first_psn));
            let cmp = if r.opcode == ATOMIC_CS { r.compare } else { 0 };
            roce::put_atomic_eth(frame, r.raddr, r.rkey, r.swap_add, cmp);
            roce::finish(frame);
            Ok(r.first_psn)
        }
        _ => Err(syndrome::LOCAL_QP_OP_ERR),
    }
}

/// Sends the packets of fetched requests, within the window.
fn send_requests(fw: &mut Firmware, dp: &mut Datapath, qpn: u32, now: Instant) -> usize {
    {
        let Some(qp) = fw.qps.get_mut(qpn) else {
            return 0;
        };
        if let Some(t) = qp.rc.rnr_until {
            if now < t {
                return 0;
            }
            qp.rc.rnr_until = None;
        }
    }
    let mut frame = std::mem::take(&mut dp.rc_frame);
    let mut sent = 0;
    while sent < PKT_BUDGET {
        let Some(qp) = fw.qps.get(qpn) else { break };
        let rc = &qp.rc;
        let Some(r) = rc.reqs.get(rc.tx).copied() else {
            break;
        };
        match r.state {
            ReqState::Failed(_) => break,
            ReqState::Done => {
                if let Some(qp) = fw.qps.get_mut(qpn) {
                    qp.rc.tx += 1;
                }
                continue;
            }
            ReqState::Pending => {}
        }
        if r.sent >= r.packets() {
            if let Some(qp) = fw.qps.get_mut(qpn) {
                qp.rc.tx += 1;
            }
            continue;
        }
        let psn = if r.read_like() {
            psn_add(r.first_psn, r.landed)
        } else {
            psn_add(r.first_psn, r.sent)
        };
        // The window; a packet behind `una` (acknowledged while a retry went back) is sent
        // again and answered as a duplicate.
        let ahead = psn_diff(psn, rc.una);
        if (WINDOW..0x80_0000).contains(&ahead) {
            break;
        }
        let fl = qp.ctx.fl;
        let timeout = ack_timeout(&qp.ctx);
        let built = build_request(fw, qp, qpn, &r, &mut frame);
        let Some(qp) = fw.qps.get_mut(qpn) else { break };
        let rc = &mut qp.rc;
        let tx = rc.tx;
        match built {
            Err(syn) => {
                if let Some(e) = rc.reqs.get_mut(tx) {
                    e.state = ReqState::Failed(syn);
                }
                break;
            }
            Ok(hi) => {
                if let Some(e) = rc.reqs.get_mut(tx) {
                    e.sent += 1;
                }
                let next = psn_add(hi, 1);
                if psn_diff(next, rc.una) > psn_diff(rc.sent_hi, rc.una) {
                    rc.sent_hi = next;
                }
                if rc.deadline.is_none() {
                    rc.deadline = timeout.map(|t| now + t);
                }
            }
        }
        send_frame(fw, dp, fl, &frame);
        sent += 1;
    }
    dp.rc_frame = frame;
    sent
}

/// The ACK timer.
fn timers(fw: &mut Firmware, dp: &mut Datapath, qpn: u32, now: Instant) -> usize {
    let Some(qp) = fw.qps.get_mut(qpn) else {
        return 0;
    };
    let rc = &mut qp.rc;
    let Some(d) = rc.deadline else { return 0 };
    if rc.rnr_until.is_some() || now < d {
        return 0;
    }
    rc.deadline = None;
    if psn_diff(rc.sent_hi, rc.una) == 0 {
        return 0;
    }
    dp.rc_stats.timeouts += 1;
    let una = rc.una;
    let Some(i) = rc
        .reqs
        .iter()
        .position(|r| r.state == ReqState::Pending && (r.contains(una) || r.npsn > 0))
    else {
        return 0;
    };
    if rc.retry_left == 0 {
        tracing::debug!(target: "mlx5_sim::rc", qpn, psn = una, "transport retries exceeded");
        rc.reqs[i].state = ReqState::Failed(syndrome::TRANSPORT_RETRY_EXC_ERR);
    } else {
        rc.retry_left -= 1;
        let psn = if rc.reqs[i].contains(una) {
            una
        } else {
            rc.reqs[i].first_psn
        };
        rewind(rc, i, psn);
        dp.rc_stats.retransmits += 1;
    }
    1
}

/// Go back N: resend from `psn`, which lies in request `i`.
fn rewind(rc: &mut RcState, i: usize, psn: u32) {
    for (j, r) in rc.reqs.iter_mut().enumerate().skip(i) {
        if r.state != ReqState::Pending {
            continue;
        }
        r.sent = if j == i && !r.read_like() {
            psn_diff(psn, r.first_psn).min(r.npsn)
        } else {
            0
        };
    }
    rc.tx = i;
}

/// Writes completions of finished requests, in order; a failed one moves the QP to ERR.
fn complete(fw: &mut Firmware, dp: &mut Datapath, qpn: u32, now: Instant) -> usize {
    let mut work = 0;
    while let Some(qp) = fw.qps.get_mut(qpn) {
        let cqn = qp.cqn_snd;
        let rc = &mut qp.rc;
        let Some(r) = rc.reqs.front().copied() else {
            break;
        };
        if r.state == ReqState::Pending {
            break;
        }
        rc.reqs.pop_front();
        rc.tx = rc.tx.saturating_sub(1);
        // READs and atomics that were given PSNs count against the initiator depth.
        if r.read_like() && r.npsn > 0 && rc.reads > 0 {
            rc.reads -= 1;
        }
        work += 1;
        match r.state {
            ReqState::Failed(syn) => {
                tracing::debug!(target: "mlx5_sim::rc", qpn, wqe_index = r.wqe_index, syndrome = syn, "requester error; QP to ERR");
                qp.state = qp_state::ERR;
                post(fw, dp, cqn, err_cqe(true, syn, r.opcode, qpn, r.wqe_index));
                break;
            }
            _ => {
                if r.signaled {
                    let bytes = match r.opcode {
                        wqe_op::RDMA_READ => r.len,
                        wqe_op::ATOMIC_CS | wqe_op::ATOMIC_FA => 8,
                        _ => 0,
                    };
                    post(fw, dp, cqn, req_cqe(r.opcode, qpn, r.wqe_index, bytes));
                }
            }
        }
    }
    if work > 0 {
        if let Some(qp) = fw.qps.get_mut(qpn) {
            let timeout = ack_timeout(&qp.ctx);
            let rc = &mut qp.rc;
            if rc.reqs.is_empty() {
                rc.una = rc.next_psn;
                rc.sent_hi = rc.next_psn;
                rc.deadline = None;
            } else if psn_diff(rc.sent_hi, rc.una) != 0 && rc.deadline.is_none() {
                rc.deadline = timeout.map(|t| now + t);
            }
        }
    }
    work
}

/// ERR: every outstanding and posted WQE completes with WR_FLUSH_ERR.
fn flush(fw: &mut Firmware, dp: &mut Datapath, qpn: u32) -> usize {
    let mut work = 0;
    // Outstanding requests (one that failed keeps its own syndrome).
    loop {
        let Some(qp) = fw.qps.get_mut(qpn) else {
            return work;
        };
        let cqn = qp.cqn_snd;
        let Some(r) = qp.rc.reqs.pop_front() else {
            break;
        };
        let syn = match r.state {
            ReqState::Failed(s) => s,
            _ => syndrome::WR_FLUSH_ERR,
        };
        post(fw, dp, cqn, err_cqe(true, syn, r.opcode, qpn, r.wqe_index));
        work += 1;
    }
    let Some(qp) = fw.qps.get_mut(qpn) else {
        return work;
    };
    let rc = &mut qp.rc;
    rc.tx = 0;
    rc.reads = 0;
    rc.deadline = None;
    rc.rnr_until = None;
    rc.jobs.clear();
    rc.in_msg = InMsg::Idle;
    rc.una = rc.next_psn;
    rc.sent_hi = rc.next_psn;
    rc.doorbelled = false;
    // The send queue up to the doorbell record.
    if let (Some(sq), Some(pi)) = (qp.sq, qp.dbr.read_be32(4).map(|v| v as u16)) {
        qp.rc.seen_pi = pi;
        let mut bbs = 0u32;
        while bbs < WQEBB_BUDGET {
            let Some(qp) = fw.qps.get_mut(qpn) else { break };
            if qp.rc.sq_ci == pi {
                break;
            }
            let w = SendWqe::read(qp, sq, qp.rc.sq_ci);
            let nbb = w.nbb.min(pi.wrapping_sub(qp.rc.sq_ci));
            qp.rc.sq_ci = qp.rc.sq_ci.wrapping_add(nbb);
            let cqn = qp.cqn_snd;
            bbs += u32::from(nbb);
            post(
                fw,
                dp,
                cqn,
                err_cqe(true, syndrome::WR_FLUSH_ERR, w.opcode, qpn, w.wqe_index),
            );
            work += 1;
        }
    }
    // The receive queue up to the doorbell record.
    let Some(qp) = fw.qps.get(qpn) else {
        return work;
    };
    if let (Some(_), Some(rpi)) = (qp.rq, qp.dbr.read_be32(0).map(|v| v as u16)) {
        let mut n = 0;
        while n < WQEBB_BUDGET {
            let Some(qp) = fw.qps.get_mut(qpn) else { break };
            let ci = qp.rc.rq_ci;
            if ci == rpi {
                break;
            }
            qp.rc.rq_ci = ci.wrapping_add(1);
            let cqn = qp.cqn_rcv;
            post(
                fw,
                dp,
                cqn,
                err_cqe(false, syndrome::WR_FLUSH_ERR, 0, qpn, ci),
            );
            n += 1;
            work += 1;
        }
    }
    work
}

// ---------------------------------------------------------------------------------------------
// Requester: responses.

/// ACK, NAK, READ response or atomic ACK for QP `qpn`.
fn requester_rx(fw: &mut Firmware, dp: &mut Datapath, qpn: u32, p: &Packet<'_>) {
    let now = Instant::now();
    let Some(qp) = fw.qps.get(qpn) else { return };
    if !matches!(qp.state, qp_state::RTS | qp_state::SQER) {
        dp.rc_stats.dropped += 1;
        return;
    }
    let psn = p.psn;
    let Some(i) = qp
        .rc
        .reqs
        .iter()
        .position(|r| r.state == ReqState::Pending && r.contains(psn))
    else {
        dp.rc_stats.duplicates += 1;
        return;
    };
    let r = qp.rc.reqs[i];
    let mtu = mtu_bytes(qp.ctx.mtu);
    let ctx = qp.ctx;
    match p.opcode {
        bth::ACKNOWLEDGE => {
            let Some((syn, _msn)) = p.aeth else { return };
            let Some(qp) = fw.qps.get_mut(qpn) else {
                return;
            };
            let rc = &mut qp.rc;
            match syn >> 5 {
                0b000 => {
                    ack_before(rc, i);
                    // A coalesced ACK inside a READ or an atomic means its response was lost:
                    // the timer resends it.
                    if !r.read_like() {
                        if psn == r.last_psn() {
                            rc.reqs[i].state = ReqState::Done;
                        }
                        advance(rc, psn_add(psn, 1), &ctx, now);
                    } else {
                        advance(rc, r.first_psn, &ctx, now);
                    }
                }
                0b001 => {
                    ack_before(rc, i);
                    advance(rc, psn, &ctx, now);
                    if rc.rnr_left == 0 {
                        rc.reqs[i].state = ReqState::Failed(syndrome::RNR_RETRY_EXC_ERR);
                    } else {
                        // rnr_retry 7 retries forever (IBA).
                        if ctx.rnr_retry != 7 {
                            rc.rnr_left -= 1;
                        }
                        rewind(rc, i, psn);
                        rc.rnr_until = Some(now + rnr_delay(syn & 0x1f));
                        rc.deadline = None;
                        dp.rc_stats.retransmits += 1;
                    }
                }
                // A sequence NAK while an RNR timer runs answers packets sent before the RNR
                // NAK; the resend from the RNR NAK's PSN replaces them: not a retry event.
                0b011 if syn & 0x1f == 0 && rc.rnr_until.is_some() => {
                    ack_before(rc, i);
                    advance(rc, psn, &ctx, now);
                }
                0b011 => {
                    ack_before(rc, i);
                    advance(rc, psn, &ctx, now);
                    let fail = match syn & 0x1f {
                        0 => {
                            if rc.retry_left == 0 {
                                Some(syndrome::TRANSPORT_RETRY_EXC_ERR)
                            } else {
                                rc.retry_left -= 1;
                                rewind(rc, i, psn);
                                dp.rc_stats.retransmits += 1;
                                None
                            }
                        }
                        1 => Some(syndrome::REMOTE_INVAL_REQ_ERR),
                        2 => Some(syndrome::REMOTE_ACCESS_ERR),
                        3 => Some(syndrome::REMOTE_OP_ERR),
                        _ => Some(syndrome::BAD_RESP_ERR),
                    };
                    if let Some(s) = fail {
                        tracing::debug!(target: "mlx5_sim::rc", qpn, psn, aeth = syn, "NAK");
                        rc.reqs[i].state = ReqState::Failed(s);
                    }
                }
                _ => {
                    rc.reqs[i].state = ReqState::Failed(syndrome::BAD_RESP_ERR);
                }
            }
        }
        bth::RDMA_READ_RESPONSE_FIRST
        | bth::RDMA_READ_RESPONSE_MIDDLE
        | bth::RDMA_READ_RESPONSE_LAST
        | bth::RDMA_READ_RESPONSE_ONLY => {
            if r.opcode != wqe_op::RDMA_READ || earlier_read_pending(&qp.rc, i) {
                dp.rc_stats.duplicates += 1;
                return;
            }
            let k = psn_diff(psn, r.first_psn);
            if k != r.landed {
                // Behind: a duplicate; ahead: a response was lost, the timer resends.
                dp.rc_stats.duplicates += 1;
                return;
            }
            let want = if r.npsn == 1 {
                bth::RDMA_READ_RESPONSE_ONLY
            } else if k == 0 {
                bth::RDMA_READ_RESPONSE_FIRST
            } else if k + 1 == r.npsn {
                bth::RDMA_READ_RESPONSE_LAST
            } else {
                bth::RDMA_READ_RESPONSE_MIDDLE
            };
            let off = u64::from(k) * u64::from(mtu);
            let n = (u64::from(r.len) - off.min(u64::from(r.len))).min(u64::from(mtu));
            let res = if p.opcode != want || p.payload.len() as u64 != n {
                Err(syndrome::BAD_RESP_ERR)
            } else {
                scatter_local(fw, qp, &r, off, p.payload)
            };
            let Some(qp) = fw.qps.get_mut(qpn) else {
                return;
            };
            let rc = &mut qp.rc;
            ack_before(rc, i);
            match res {
                Ok(()) => {
                    rc.reqs[i].landed += 1;
                    if rc.reqs[i].landed == r.npsn {
                        rc.reqs[i].state = ReqState::Done;
                    }
                    advance(rc, psn_add(psn, 1), &ctx, now);
                }
                Err(s) => rc.reqs[i].state = ReqState::Failed(s),
            }
        }
        bth::ATOMIC_ACKNOWLEDGE => {
            if !matches!(r.opcode, wqe_op::ATOMIC_CS | wqe_op::ATOMIC_FA)
                || earlier_read_pending(&qp.rc, i)
            {
                dp.rc_stats.duplicates += 1;
                return;
            }
            let Some(orig) = p.atomic_ack else { return };
            // The original value lands in host byte order, as the remote one is kept.
            let res = scatter_local(fw, qp, &r, 0, &orig.to_le_bytes());
            let Some(qp) = fw.qps.get_mut(qpn) else {
                return;
            };
            let rc = &mut qp.rc;
            ack_before(rc, i);
            match res {
                Ok(()) => {
                    rc.reqs[i].state = ReqState::Done;
                    advance(rc, psn_add(psn, 1), &ctx, now);
                }
                Err(s) => rc.reqs[i].state = ReqState::Failed(s),
            }
        }
        _ => {}
    }
    complete(fw, dp, qpn, now);
}

fn earlier_read_pending(rc: &RcState, i: usize) -> bool {
    rc.reqs
        .iter()
        .take(i)
        .any(|r| r.state == ReqState::Pending && r.read_like())
}

/// A response for request `i` acknowledges the SENDs and WRITEs before it.
fn ack_before(rc: &mut RcState, i: usize) {
    for r in rc.reqs.iter_mut().take(i) {
        if r.state == ReqState::Pending && !r.read_like() {
            r.state = ReqState::Done;
        }
    }
}

/// The oldest unacknowledged PSN moved to `una` (if it is ahead): retry counters restart.
fn advance(rc: &mut RcState, una: u32, ctx: &QpCtx, now: Instant) {
    let d = psn_diff(una, rc.una);
    if d == 0 || d > psn_diff(rc.sent_hi, rc.una) {
        return;
    }
    rc.una = una;
    rc.retry_left = ctx.retry_count;
    rc.rnr_left = ctx.rnr_retry;
    rc.deadline = if psn_diff(rc.sent_hi, rc.una) != 0 {
        ack_timeout(ctx).map(|t| now + t)
    } else {
        None
    };
}

// ---------------------------------------------------------------------------------------------
// Responder.

fn queue_response(fw: &mut Firmware, dp: &mut Datapath, qpn: u32, job: RespJob) {
    let Some(qp) = fw.qps.get_mut(qpn) else {
        return;
    };
    let jobs = &mut qp.rc.jobs;
    // Plain ACKs coalesce: the later one acknowledges everything the earlier one did.
    if let (
        RespJob::Ack {
            syndrome: aeth::ACK,
            ..
        },
        Some(RespJob::Ack {
            syndrome: aeth::ACK,
            ..
        }),
    ) = (job, jobs.back())
    {
        jobs.pop_back();
    }
    match job {
        RespJob::Ack { syndrome, .. } if syndrome & 0xe0 == aeth::RNR => {
            dp.rc_stats.rnr_naks_sent += 1
        }
        RespJob::Ack { syndrome, .. } if syndrome & 0xe0 == 0x60 => dp.rc_stats.naks_sent += 1,
        _ => {}
    }
    jobs.push_back(job);
    run_jobs(fw, dp, qpn, PKT_BUDGET);
}

/// Sends queued responses (READ responses paced by `budget` packets).
fn run_jobs(fw: &mut Firmware, dp: &mut Datapath, qpn: u32, budget: usize) -> usize {
    let mut frame = std::mem::take(&mut dp.rc_frame);
    let mut sent = 0;
    while sent < budget {
        let Some(qp) = fw.qps.get(qpn) else { break };
        let Some(job) = qp.rc.jobs.front().copied() else {
            break;
        };
        let p = path(fw, qp, qpn);
        let fl = qp.ctx.fl;
        let dqpn = qp.ctx.remote_qpn;
        let mtu = mtu_bytes(qp.ctx.mtu);
        let hdr = |opcode, psn| Bth {
            opcode,
            se: false,
            dqpn,
            ack_req: false,
            psn,
        };
        let mut next = None;
        match job {
            RespJob::Ack { psn, syndrome, msn } => {
                roce::start(&mut frame, &p, &hdr(bth::ACKNOWLEDGE, psn));
                roce::put_aeth(&mut frame, syndrome, msn);
            }
            RespJob::AtomicAck { psn, orig, msn } => {
                roce::start(&mut frame, &p, &hdr(bth::ATOMIC_ACKNOWLEDGE, psn));
                roce::put_aeth(&mut frame, aeth::ACK, msn);
                frame.extend_from_slice(&orig.to_be_bytes());
            }
            RespJob::Read {
                va,
                rkey,
                left,
                psn,
                first,
                msn,
            } => {
                let n = left.min(mtu);
                let last = n == left;
                let op = match (first, last) {
                    (true, true) => bth::RDMA_READ_RESPONSE_ONLY,
                    (true, false) => bth::RDMA_READ_RESPONSE_FIRST,
                    (false, true) => bth::RDMA_READ_RESPONSE_LAST,
                    (false, false) => bth::RDMA_READ_RESPONSE_MIDDLE,
                };
                roce::start(&mut frame, &p, &hdr(op, psn));
                if op != bth::RDMA_READ_RESPONSE_MIDDLE {
                    roce::put_aeth(&mut frame, aeth::ACK, msn);
                }
                if n > 0 {
                    // Checked when the request came; checked again in case the key went.
                    let Some(dma) = rtranslate(fw, qp.pd, rkey, va, n as usize, Right::Read) else {
                        dp.rc_stats.dropped += 1;
                        if let Some(qp) = fw.qps.get_mut(qpn) {
                            qp.rc.jobs.pop_front();
                        }
                        continue;
                    };
                    let start = frame.len();
                    frame.resize(start + n as usize, 0);
                    dma.read(0, &mut frame[start..]);
                }
                if !last {
                    next = Some(RespJob::Read {
                        va: va.wrapping_add(u64::from(n)),
                        rkey,
                        left: left - n,
                        psn: psn_add(psn, 1),
                        first: false,
                        msn,
                    });
                }
            }
        }
        roce::finish(&mut frame);
        if let Some(qp) = fw.qps.get_mut(qpn) {
            match next {
                Some(j) => {
                    if let Some(f) = qp.rc.jobs.front_mut() {
                        *f = j;
                    }
                }
                None => {
                    qp.rc.jobs.pop_front();
                }
            }
        }
        send_frame(fw, dp, fl, &frame);
        sent += 1;
    }
    dp.rc_frame = frame;
    sent
}

/// A responder error of class B, C or D (IBA vol. 1 §9.9.3): the receive WQE being filled
/// (if any) completes in error, the request is NAKed, and the QP enters ERR (which flushes
/// the rest).
fn responder_fail(
    fw: &mut Firmware,
    dp: &mut Datapath,
    qpn: u32,
    psn: u32,
    nak: u8,
    rq_err: Option<u8>,
) {
    let Some(qp) = fw.qps.get_mut(qpn) else {
        return;
    };
    let msn = qp.rc.msn;
    let cqn = qp.cqn_rcv;
    let ci = qp.rc.rq_ci;
    if rq_err.is_some() {
        qp.rc.rq_ci = ci.wrapping_add(1);
    }
    qp.rc.jobs.clear();
    tracing::debug!(target: "mlx5_sim::rc", qpn, psn, aeth = nak, "responder error; QP to ERR");
    if let Some(syn) = rq_err {
        post(fw, dp, cqn, err_cqe(false, syn, 0, qpn, ci));
    }
    queue_response(
        fw,
        dp,
        qpn,
        RespJob::Ack {
            psn,
            syndrome: nak,
            msn,
        },
    );
    if let Some(qp) = fw.qps.get_mut(qpn) {
        qp.state = qp_state::ERR;
        qp.rc.in_msg = InMsg::Idle;
    }
}

/// Position of a SEND / WRITE packet in its message: (first, last).
fn position(op: u8) -> (bool, bool) {
    use bth::*;
    match op {
        SEND_FIRST | RDMA_WRITE_FIRST => (true, false),
        SEND_MIDDLE | RDMA_WRITE_MIDDLE => (false, false),
        SEND_LAST | SEND_LAST_IMM | RDMA_WRITE_LAST | RDMA_WRITE_LAST_IMM => (false, true),
        _ => (true, true),
    }
}

/// Receive WQEs posted and not consumed, from the doorbell record.
fn rq_posted(qp: &Qp) -> bool {
    qp.rq.is_some()
        && qp
            .dbr
            .read_be32(0)
            .is_some_and(|pi| pi as u16 != qp.rc.rq_ci)
}

fn responder_rx(fw: &mut Firmware, dp: &mut Datapath, qpn: u32, p: &Packet<'_>) {
    use bth::*;
    let Some(qp) = fw.qps.get_mut(qpn) else {
        return;
    };
    // RST, INIT and ERR drop requests silently (IBA).
    if !matches!(qp.state, qp_state::RTR | qp_state::RTS | qp_state::SQER) {
        dp.rc_stats.dropped += 1;
        return;
    }
    let psn = p.psn;
    let rc = &mut qp.rc;
    let d = psn_diff(psn, rc.epsn);
    if d != 0 {
        if d < 0x80_0000 {
            // PSN sequence error (class A): one NAK naming the expected PSN until it arrives
            // (none after an RNR NAK: that one names the PSN to resend from).
            if !rc.nak_sent {
                rc.nak_sent = true;
                let (epsn, msn) = (rc.epsn, rc.msn);
                queue_response(
                    fw,
                    dp,
                    qpn,
                    RespJob::Ack {
                        psn: epsn,
                        syndrome: aeth::NAK_SEQ,
                        msn,
                    },
                );
            }
        } else {
            duplicate(fw, dp, qpn, p);
        }
        return;
    }
    rc.nak_sent = false;
    let ctx = qp.ctx;
    let mtu = mtu_bytes(ctx.mtu) as usize;
    let in_msg = rc.in_msg;
    let op = p.opcode;
    let (first, last) = position(op);
    let is_send = op <= SEND_ONLY_IMM;
    let is_write = (RDMA_WRITE_FIRST..=RDMA_WRITE_ONLY_IMM).contains(&op);
    // Opcode sequence (IBA 9.7.5.1.x): FIRST / ONLY only between messages, MIDDLE / LAST only
    // inside a message of the same kind; payload sizes by position.
    let in_order = match in_msg {
        InMsg::Idle => first,
        InMsg::Send { .. } => is_send && !first,
        InMsg::Write { .. } => is_write && !first,
    };
    let size_ok = if !(is_send || is_write) {
        p.payload.is_empty()
    } else if last {
        p.payload.len() <= mtu
    } else {
        p.payload.len() == mtu
    };
    if !in_order || !size_ok {
        responder_fail(fw, dp, qpn, psn, aeth::NAK_INVALID, None);
        return;
    }
    if is_send {
        rx_send(fw, dp, qpn, p, first, last);
    } else if is_write {
        rx_write(fw, dp, qpn, p, first, last);
    } else if op == RDMA_READ_REQUEST {
        rx_read(fw, dp, qpn, p);
    } else if op == COMPARE_SWAP || op == FETCH_ADD {
        rx_atomic(fw, dp, qpn, p);
    }
}

/// "Receiver not ready" for the request at `psn` (the expected one). Like a sequence NAK it
/// is sent once: requests behind it, already in flight, are dropped silently until the
/// requester resends from `psn` after the RNR timer (IBA vol. 1 ch. 9, responder NAK rules).
/// NAKing them as sequence errors would charge the requester's `retry_count` for an RNR wait.
fn rnr_nak(fw: &mut Firmware, dp: &mut Datapath, qpn: u32, psn: u32) {
    let Some(qp) = fw.qps.get_mut(qpn) else {
        return;
    };
    qp.rc.nak_sent = true;
    let (timer, msn) = (qp.ctx.min_rnr_nak & 0x1f, qp.rc.msn);
    queue_response(
        fw,
        dp,
        qpn,
        RespJob::Ack {
            psn,
            syndrome: aeth::RNR | timer,
            msn,
        },
    );
}

fn ack(fw: &mut Firmware, dp: &mut Datapath, qpn: u32, psn: u32) {
    let Some(qp) = fw.qps.get(qpn) else { return };
    let msn = qp.rc.msn;
    queue_response(
        fw,
        dp,
        qpn,
        RespJob::Ack {
            psn,
            syndrome: aeth::ACK,
            msn,
        },
    );
}

fn rx_send(
    fw: &mut Firmware,
    dp: &mut Datapath,
    qpn: u32,
    p: &Packet<'_>,
    first: bool,
    last: bool,
) {
    let Some(qp) = fw.qps.get(qpn) else { return };
    if first {
        if qp.rq.is_none() {
            responder_fail(fw, dp, qpn, p.psn, aeth::NAK_INVALID, None);
            return;
        }
        if !rq_posted(qp) {
            rnr_nak(fw, dp, qpn, p.psn);
            return;
        }
    }
    let offset = match qp.rc.in_msg {
        InMsg::Send { offset } => offset,
        _ => 0,
    };
    let index = qp.rc.rq_ci;
    let total = offset + p.payload.len() as u64;
    let res = if total > max_msg(&qp.ctx) {
        Err(syndrome::LOCAL_LENGTH_ERR)
    } else {
        scatter_rq(fw, qp, index, offset, p.payload)
    };
    match res {
        Ok(()) => {}
        Err(syndrome::LOCAL_LENGTH_ERR) => {
            responder_fail(
                fw,
                dp,
                qpn,
                p.psn,
                aeth::NAK_INVALID,
                Some(syndrome::LOCAL_LENGTH_ERR),
            );
            return;
        }
        Err(syn) => {
            responder_fail(fw, dp, qpn, p.psn, aeth::NAK_OPERATIONAL, Some(syn));
            return;
        }
    }
    let Some(qp) = fw.qps.get_mut(qpn) else {
        return;
    };
    let cqn = qp.cqn_rcv;
    let rc = &mut qp.rc;
    rc.epsn = psn_add(rc.epsn, 1);
    if last {
        rc.in_msg = InMsg::Idle;
        rc.rq_ci = index.wrapping_add(1);
        rc.msn = psn_add(rc.msn, 1);
        let op = if p.imm.is_some() {
            CompletionKind::RecvImm
        } else {
            CompletionKind::Recv
        };
        post(fw, dp, cqn, resp_cqe(op, total as u32, p.imm, qpn, index));
        ack(fw, dp, qpn, p.psn);
    } else {
        rc.in_msg = InMsg::Send { offset: total };
        if p.ack_req {
            ack(fw, dp, qpn, p.psn);
        }
    }
}

fn rx_write(
    fw: &mut Firmware,
    dp: &mut Datapath,
    qpn: u32,
    p: &Packet<'_>,
    first: bool,
    last: bool,
) {
    let Some(qp) = fw.qps.get(qpn) else { return };
    let n = p.payload.len();
    let imm = p.imm.is_some();
    let (va, rkey, left, total) = if first {
        let Some(reth) = p.reth else { return };
        if !qp.ctx.rwe {
            responder_fail(fw, dp, qpn, p.psn, aeth::NAK_ACCESS, None);
            return;
        }
        let len_ok = u64::from(reth.len) <= max_msg(&qp.ctx)
            && if last {
                reth.len as usize == n
            } else {
                reth.len as usize > n
            };
        if !len_ok {
            responder_fail(fw, dp, qpn, p.psn, aeth::NAK_INVALID, None);
            return;
        }
        // A zero-length WRITE names no memory and checks no key (IBA).
        if reth.len > 0
            && rtranslate(
                fw,
                qp.pd,
                reth.rkey,
                reth.va,
                reth.len as usize,
                Right::Write,
            )
            .is_none()
        {
            responder_fail(fw, dp, qpn, p.psn, aeth::NAK_ACCESS, None);
            return;
        }
        (reth.va, reth.rkey, reth.len, reth.len)
    } else {
        match qp.rc.in_msg {
            InMsg::Write {
                va,
                rkey,
                left,
                total,
            } => (va, rkey, left, total),
            _ => return,
        }
    };
    if n as u64 > u64::from(left) || (last && n as u32 != left) {
        responder_fail(fw, dp, qpn, p.psn, aeth::NAK_INVALID, None);
        return;
    }
    if last && imm {
        if qp.rq.is_none() {
            responder_fail(fw, dp, qpn, p.psn, aeth::NAK_INVALID, None);
            return;
        }
        // The immediate needs a receive WQE; without one nothing of this packet is taken.
        if !rq_posted(qp) {
            rnr_nak(fw, dp, qpn, p.psn);
            return;
        }
    }
    if n > 0 {
        match rtranslate(fw, qp.pd, rkey, va, n, Right::Write) {
            Some(dma) => {
                dma.write(0, p.payload);
            }
            None => {
                responder_fail(fw, dp, qpn, p.psn, aeth::NAK_ACCESS, None);
                return;
            }
        }
    }
    let Some(qp) = fw.qps.get_mut(qpn) else {
        return;
    };
    let cqn = qp.cqn_rcv;
    let rc = &mut qp.rc;
    rc.epsn = psn_add(rc.epsn, 1);
    if last {
        rc.in_msg = InMsg::Idle;
        rc.msn = psn_add(rc.msn, 1);
        if imm {
            let index = rc.rq_ci;
            rc.rq_ci = index.wrapping_add(1);
            post(
                fw,
                dp,
                cqn,
                resp_cqe(CompletionKind::RecvRdmaWriteImm, total, p.imm, qpn, index),
            );
        }
        ack(fw, dp, qpn, p.psn);
    } else {
        rc.in_msg = InMsg::Write {
            va: va.wrapping_add(n as u64),
            rkey,
            left: left - n as u32,
            total,
        };
        if p.ack_req {
            ack(fw, dp, qpn, p.psn);
        }
    }
}

fn rx_read(fw: &mut Firmware, dp: &mut Datapath, qpn: u32, p: &Packet<'_>) {
    let Some(qp) = fw.qps.get(qpn) else { return };
    let Some(reth) = p.reth else { return };
    if !qp.ctx.rre {
        responder_fail(fw, dp, qpn, p.psn, aeth::NAK_ACCESS, None);
        return;
    }
    let reads = qp
        .rc
        .jobs
        .iter()
        .filter(|j| matches!(j, RespJob::Read { .. }))
        .count();
    // Responder resources: 2^log_rra_max READs in progress.
    if u64::from(reth.len) > max_msg(&qp.ctx) || reads >= 1usize << qp.ctx.log_rra_max.min(16) {
        responder_fail(fw, dp, qpn, p.psn, aeth::NAK_INVALID, None);
        return;
    }
    if reth.len > 0
        && rtranslate(
            fw,
            qp.pd,
            reth.rkey,
            reth.va,
            reth.len as usize,
            Right::Read,
        )
        .is_none()
    {
        responder_fail(fw, dp, qpn, p.psn, aeth::NAK_ACCESS, None);
        return;
    }
    let npkts = reth.len.div_ceil(mtu_bytes(qp.ctx.mtu)).max(1);
    let Some(qp) = fw.qps.get_mut(qpn) else {
        return;
    };
    let rc = &mut qp.rc;
    rc.epsn = psn_add(rc.epsn, npkts);
    rc.msn = psn_add(rc.msn, 1);
    let msn = rc.msn;
    queue_response(
        fw,
        dp,
        qpn,
        RespJob::Read {
            va: reth.va,
            rkey: reth.rkey,
            left: reth.len,
            psn: p.psn,
            first: true,
            msn,
        },
    );
}

fn rx_atomic(fw: &mut Firmware, dp: &mut Datapath, qpn: u32, p: &Packet<'_>) {
    let Some(qp) = fw.qps.get(qpn) else { return };
    let Some(at) = p.atomic else { return };
    if !qp.ctx.rae {
        responder_fail(fw, dp, qpn, p.psn, aeth::NAK_ACCESS, None);
        return;
    }
    // Atomics need an 8-byte aligned address (IBA o9-...: misaligned is an invalid request).
    if at.va % 8 != 0 {
        responder_fail(fw, dp, qpn, p.psn, aeth::NAK_INVALID, None);
        return;
    }
    let Some(dma) = rtranslate(fw, qp.pd, at.rkey, at.va, 8, Right::Atomic) else {
        responder_fail(fw, dp, qpn, p.psn, aeth::NAK_ACCESS, None);
        return;
    };
    let mut cur = [0u8; 8];
    dma.read(0, &mut cur);
    let orig = u64::from_le_bytes(cur);
    let new = if p.opcode == bth::COMPARE_SWAP {
        if orig == at.compare {
            at.swap_add
        } else {
            orig
        }
    } else {
        orig.wrapping_add(at.swap_add)
    };
    if new != orig {
        dma.write(0, &new.to_le_bytes());
    }
    let Some(qp) = fw.qps.get_mut(qpn) else {
        return;
    };
    let rc = &mut qp.rc;
    rc.epsn = psn_add(rc.epsn, 1);
    rc.msn = psn_add(rc.msn, 1);
    let slot = rc.atomic_next % ATOMIC_REPLAY;
    rc.atomics[slot] = Some((p.psn, orig));
    rc.atomic_next = slot + 1;
    let msn = rc.msn;
    queue_response(
        fw,
        dp,
        qpn,
        RespJob::AtomicAck {
            psn: p.psn,
            orig,
            msn,
        },
    );
}

/// A request behind the expected PSN (IBA 9.9.2.2 "duplicate requests").
fn duplicate(fw: &mut Firmware, dp: &mut Datapath, qpn: u32, p: &Packet<'_>) {
    use bth::*;
    dp.rc_stats.duplicates += 1;
    let Some(qp) = fw.qps.get(qpn) else { return };
    let (epsn, msn) = (qp.rc.epsn, qp.rc.msn);
    match p.opcode {
        SEND_FIRST..=RDMA_WRITE_ONLY_IMM => {
            let (_, last) = position(p.opcode);
            if last || p.ack_req {
                // Acknowledge everything received so far again.
                queue_response(
                    fw,
                    dp,
                    qpn,
                    RespJob::Ack {
                        psn: psn_add(epsn, PSN_MASK),
                        syndrome: aeth::ACK,
                        msn,
                    },
                );
            }
        }
        RDMA_READ_REQUEST => {
            // Executed again from the (possibly shortened) request.
            let Some(reth) = p.reth else { return };
            let ok = qp.ctx.rre
                && (reth.len == 0
                    || rtranslate(
                        fw,
                        qp.pd,
                        reth.rkey,
                        reth.va,
                        reth.len as usize,
                        Right::Read,
                    )
                    .is_some());
            if ok {
                queue_response(
                    fw,
                    dp,
                    qpn,
                    RespJob::Read {
                        va: reth.va,
                        rkey: reth.rkey,
                        left: reth.len,
                        psn: p.psn,
                        first: true,
                        msn,
                    },
                );
            }
        }
        COMPARE_SWAP | FETCH_ADD => {
            // Never executed twice: the saved original value is sent again.
            let saved = qp
                .rc
                .atomics
                .iter()
                .flatten()
                .find(|(psn, _)| *psn == p.psn)
                .map(|(_, orig)| *orig);
            if let Some(orig) = saved {
                queue_response(
                    fw,
                    dp,
                    qpn,
                    RespJob::AtomicAck {
                        psn: p.psn,
                        orig,
                        msn,
                    },
                );
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn psn_arithmetic_wraps_at_24_bits() {
        assert_eq!(psn_add(0xff_ffff, 1), 0);
        assert_eq!(psn_diff(0, 0xff_ffff), 1);
        assert_eq!(psn_diff(5, 5), 0);
        assert_eq!(psn_add(0xff_fffe, PSN_MASK), 0xff_fffd);
    }

    #[test]
    fn timers_follow_the_iba_tables() {
        assert_eq!(rnr_delay(0), Duration::from_micros(655_360));
        assert_eq!(rnr_delay(1), Duration::from_micros(10));
        assert_eq!(rnr_delay(12), Duration::from_micros(640));
        assert_eq!(rnr_delay(31), Duration::from_micros(491_520));
        let ctx = QpCtx {
            ack_timeout: 14,
            ..QpCtx::default()
        };
        assert_eq!(ack_timeout(&ctx), Some(Duration::from_nanos(4096 << 14)));
        assert_eq!(ack_timeout(&QpCtx::default()), None);
        assert_eq!(mtu_bytes(1), 256);
        assert_eq!(mtu_bytes(5), 4096);
    }

    #[test]
    fn packet_positions() {
        assert_eq!(position(bth::SEND_ONLY_IMM), (true, true));
        assert_eq!(position(bth::RDMA_WRITE_FIRST), (true, false));
        assert_eq!(position(bth::SEND_MIDDLE), (false, false));
        assert_eq!(position(bth::RDMA_WRITE_LAST_IMM), (false, true));
    }
}
