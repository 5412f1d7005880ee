//! Send and receive WQEs of an RC QP as the transport reads them: the control, remote
//! address and atomic segments, the gather list (data and inline segments), and the scatter
//! of incoming data into a receive WQE or a READ / atomic's local buffers.

use mlx5_dpa::mlx5::wire::wqe::wqebbs;
use mlx5_dpa::mlx5::wire::wqe::{
    wait_cond, wait_opmod, AtomicSeg, CtrlSeg, CtrlSegRepr, DataSeg, RaddrSeg, WaitSeg,
    CTRL_CQ_UPDATE, INLINE_SEG, INVALID_LKEY, SEG, WQEBB,
};

use crate::state::datapath::Datapath;
use crate::state::objects::{Qp, QpSq};
use crate::state::rc::*;
use crate::state::Firmware;
use mlx5_dpa::mlx5::wire::cqe::syndrome;

// ---------------------------------------------------------------------------------------------
// Send WQEs.

/// One gather / scatter element of a send WQE.
#[derive(Debug, Clone, Copy)]
pub(super) enum Seg {
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
pub(super) struct SendWqe {
    pub(super) buf: [u8; MAX_WQE],
    pub(super) opcode: u8,
    pub(super) opmod: u8,
    pub(super) wqe_index: u16,
    pub(super) qpn: u32,
    pub(super) ds: usize,
    pub(super) nbb: u16,
    pub(super) fm_ce_se: u8,
    pub(super) imm: [u8; 4],
    pub(super) raddr: u64,
    pub(super) rkey: u32,
    pub(super) swap_add: u64,
    pub(super) compare: u64,
    /// A WAIT's condition.
    pub(super) wait: Option<Wait>,
    /// Byte offset of the first data or inline segment.
    pub(super) segs_at: usize,
}

/// What a WAIT WQE waits for (its wait segment): a word of memory, or (`time`) the
/// real-time clock.
#[derive(Debug, Clone, Copy)]
pub(super) struct Wait {
    pub(super) time: bool,
    pub(super) operation: u32,
    pub(super) lkey: u32,
    pub(super) va: u64,
    pub(super) value: u64,
    pub(super) mask: u64,
}

impl Wait {
    /// Whether the condition holds now: `Ok(true)` / `Ok(false)`, or the syndrome of a word
    /// that cannot be read (a bad key or range) or an unknown operation.
    pub(super) fn holds(&self, fw: &Firmware, pd: u32) -> Result<bool, u8> {
        if self.time {
            // As on an Ethernet SQ (datapath/eth.rs `wait_on_time`, provisional): the value
            // against the clock.
            let now = crate::datapath::eth::real_time_now();
            return wait_cond::holds(self.operation, self.value, now, self.mask)
                .ok_or(syndrome::LOCAL_QP_OP_ERR);
        }
        let dma = crate::datapath::keys::translate(fw, pd, self.lkey, self.va, 8, false)?;
        let mut word = [0u8; 8];
        if !dma.read(0, &mut word) {
            return Err(syndrome::LOCAL_PROT_ERR);
        }
        // The word in host byte order, as the model's atomics treat memory (provisional).
        wait_cond::holds(
            self.operation,
            u64::from_le_bytes(word),
            self.value,
            self.mask,
        )
        .ok_or(syndrome::LOCAL_QP_OP_ERR)
    }
}

impl SendWqe {
    /// Reads the WQE whose first WQEBB is at counter `pos`, following the ring's wrap.
    pub(super) fn read(qp: &Qp, sq: QpSq, pos: u16) -> SendWqe {
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
            wait: None,
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
            wqe_op::WAIT if w.ds >= 3 => {
                let ws = WaitSeg::new_unchecked(&w.buf[SEG..3 * SEG]);
                w.wait = Some(Wait {
                    time: w.opmod == wait_opmod::TIME,
                    operation: ws.operation(),
                    lkey: ws.lkey(),
                    va: (u64::from(ws.va_high()) << 32) | u64::from(ws.va_low()),
                    value: ws.value(),
                    mask: ws.mask(),
                });
                3 * SEG
            }
            _ => SEG,
        };
        (w.raddr, w.rkey, w.swap_add, w.compare, w.segs_at) =
            (raddr, rkey, swap_add, compare, segs_at);
        w
    }

    pub(super) fn signaled(&self) -> bool {
        // fm_ce_se bits 3:2: 0b10 "CQE always" (0b11 also asks for an EQE).
        self.fm_ce_se & CTRL_CQ_UPDATE != 0
    }

    pub(super) fn fenced(&self) -> bool {
        self.fm_ce_se >> 5 != 0
    }

    /// Calls `f` for every data or inline segment; stops at the first error.
    pub(super) fn segments(&self, mut f: impl FnMut(Seg) -> Result<(), u8>) -> Result<(), u8> {
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

/// The send queue's producer counter the device may take WQEs up to: the doorbell record
/// (dbrec[1], a 16-bit WQEBB counter) as of the last doorbell; `None` when it cannot be read.
pub(super) fn rung_pi(qp: &mut Qp, dp: &mut Datapath) -> Option<u16> {
    let dbr_pi = qp.dbr.read_be32(4).map(|v| v as u16)?;
    if qp.rc.doorbelled {
        qp.rc.rung_pi = dbr_pi;
    } else if dbr_pi != qp.rc.seen_pi {
        // Posted without a doorbell (yet): not the device's to take.
        dp.port.stats.dbr_without_doorbell += 1;
    }
    qp.rc.seen_pi = dbr_pi;
    qp.rc.doorbelled = false;
    Some(qp.rc.rung_pi)
}

/// Checks a fetched WQE; returns the message length.
pub(super) fn check_wqe(fw: &Firmware, qp: &Qp, qpn: u32, w: &SendWqe) -> Result<u32, u8> {
    use wqe_op::*;
    if w.ds == 0 || w.qpn != qpn {
        return Err(syndrome::LOCAL_QP_OP_ERR);
    }
    let min_ds = match w.opcode {
        NOP => return Ok(0),
        // WAIT on data (its word must be readable through its key) or on time.
        WAIT => {
            let wait = w
                .wait
                .filter(|_| matches!(w.opmod, wait_opmod::DATA | wait_opmod::TIME));
            return match wait {
                Some(c) => c.holds(fw, qp.pd).map(|_| 0),
                None => Err(syndrome::LOCAL_QP_OP_ERR),
            };
        }
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
                crate::datapath::keys::translate(fw, qp.pd, lkey, addr, len as usize, write)?;
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
pub(super) fn gather(
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
                let dma = crate::datapath::keys::translate(
                    fw,
                    qp.pd,
                    lkey,
                    addr.wrapping_add(skip),
                    take,
                    false,
                )?;
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
pub(super) fn scatter_local(
    fw: &Firmware,
    qp: &Qp,
    r: &Req,
    off: u64,
    data: &[u8],
) -> Result<(), u8> {
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
        let dma =
            crate::datapath::keys::translate(fw, qp.pd, lkey, addr.wrapping_add(skip), take, true)?;
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

// ---------------------------------------------------------------------------------------------
// Receive WQEs: the QP's own RQ (at the start of its ring), or the shared receive queue (an
// RMP) it names, whose cyclic ring hands its WQEs to the pool's QPs one after the other.

/// The ring a QP's receive WQEs are read from.
#[derive(Debug, Clone, Copy)]
struct RecvRing {
    ring: crate::mem::Dma,
    log_size: u8,
    log_stride: u8,
    /// Linked-list WQEs: the data segments follow a 16-byte next segment.
    linked: bool,
}

fn recv_ring(fw: &Firmware, qp: &Qp) -> Option<RecvRing> {
    if let Some(rq) = qp.rq {
        return Some(RecvRing {
            ring: qp.ring,
            log_size: rq.log_size,
            log_stride: rq.log_stride,
            linked: false,
        });
    }
    let r = fw.rmps.get(qp.srq?)?;
    Some(RecvRing {
        ring: r.wq.ring,
        log_size: r.wq.log_size,
        log_stride: r.wq.log_stride,
        linked: r.wq.linked,
    })
}

/// The QP receives (an RQ of its own or a shared receive queue).
pub(super) fn has_recv(qp: &Qp) -> bool {
    qp.rq.is_some() || qp.srq.is_some()
}

/// Receive WQEs posted and not taken: the QP's doorbell record against its `rq_ci`, or the
/// pool's record against the pool's counter.
pub(super) fn recv_posted(fw: &Firmware, qp: &Qp) -> bool {
    if qp.rq.is_some() {
        return qp
            .dbr
            .read_be32(0)
            .is_some_and(|pi| pi as u16 != qp.rc.rq_ci);
    }
    qp.srq
        .and_then(|n| fw.rmps.get(n))
        .is_some_and(|r| r.wq.dbr.read_be32(0).is_some_and(|pi| pi as u16 != r.ci))
}

/// The receive WQE an incoming message fills. The QP's own RQ: its `rq_ci`, consumed when
/// the message completes ([`recv_consumed`]). A pool's: taken now, since another QP of the
/// pool may take the next WQE before this message ends.
pub(super) fn recv_claim(fw: &mut Firmware, qpn: u32) -> u16 {
    let Some(qp) = fw.qps.get(qpn) else { return 0 };
    if qp.rq.is_some() {
        return qp.rc.rq_ci;
    }
    match qp.srq.and_then(|n| fw.rmps.get_mut(n)) {
        Some(r) if r.wq.linked => {
            // The WQE at the head; its next segment (`next_wqe_index`, big-endian at byte 2)
            // names the new head.
            let index = r.head;
            let slot = (usize::from(index) & ((1usize << r.wq.log_size) - 1)) << r.wq.log_stride;
            let mut next = [0u8; 2];
            if r.wq.ring.read(slot + 2, &mut next) {
                r.head = u16::from_be_bytes(next);
            }
            r.ci = r.ci.wrapping_add(1);
            index
        }
        Some(r) => {
            let index = r.ci;
            r.ci = index.wrapping_add(1);
            index
        }
        None => 0,
    }
}

/// Receive WQE `index` of the QP's own RQ is done (a pool's was taken by [`recv_claim`]).
pub(super) fn recv_consumed(qp: &mut Qp, index: u16) {
    if qp.rq.is_some() {
        qp.rc.rq_ci = index.wrapping_add(1);
    }
}

/// Writes `data` at message offset `off` into receive WQE `index`.
pub(super) fn scatter_rq(
    fw: &Firmware,
    qp: &Qp,
    index: u16,
    off: u64,
    data: &[u8],
) -> Result<(), u8> {
    if data.is_empty() {
        return Ok(());
    }
    let rq = recv_ring(fw, qp).ok_or(syndrome::LOCAL_QP_OP_ERR)?;
    let stride = 1usize << rq.log_stride;
    let slot = (u32::from(index) & ((1u32 << rq.log_size) - 1)) as usize * stride;
    let mut pos = 0u64;
    let mut rest = data;
    let mut want = off;
    let mut seg = [0u8; SEG];
    let first = usize::from(rq.linked);
    for s in first..stride / SEG {
        if rest.is_empty() {
            break;
        }
        if !rq.ring.read(slot + s * SEG, &mut seg) {
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
        let dma = crate::datapath::keys::translate(
            fw,
            qp.pd,
            lkey,
            d.addr().wrapping_add(skip),
            take,
            true,
        )?;
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
pub(super) enum Right {
    Read,
    Write,
    Atomic,
}

/// Resolves an R_Key for `len` bytes at `va` on behalf of a responder QP in `pd`.
pub(super) fn rtranslate(
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
