//! The requester: the engine pass over RC QPs (`run`), fetching send WQEs, building and
//! sending requests, the ACK and RNR timers, completions in WQE order, flushes, and the
//! responses (ACK, NAK, READ response, atomic ACK) coming back.

use std::time::Instant;

use mlx5_dpa::mlx5::wire::wqe::CTRL_SOLICITED;

use crate::port::roce::{self, opcode as bth, Bth, Packet};
use crate::state::datapath::Datapath;
use crate::state::objects::{Qp, QpCtx, QpServiceType, QpState};
use crate::state::rc::*;
use crate::state::Firmware;
use mlx5_dpa::mlx5::wire::cqe::syndrome;

use super::emit::*;

use super::responder::run_jobs;
use super::wqe::*;

// ---------------------------------------------------------------------------------------------
// The engine pass.

/// Runs every RC QP: responses waiting, timers, new WQEs, packets, completions, flushes; and
/// every UD QP: its new WQEs, or its flush.
pub(crate) fn run(fw: &mut Firmware, dp: &mut Datapath, now: Instant) -> usize {
    let mut ids = std::mem::take(&mut dp.qp_ids);
    ids.clear();
    // One look at each QP: the idle RTS ones (most of them, with a QP for every FlexIO
    // process) are left out here, not looked up again below.
    ids.extend(
        fw.qps
            .iter()
            .filter(|(_, q)| match q.st {
                QpServiceType::Rc => match q.state {
                    QpState::Rts => !idle(q),
                    QpState::Rtr | QpState::SqEr | QpState::Err => true,
                    _ => false,
                },
                QpServiceType::Ud => matches!(
                    q.state,
                    QpState::Rtr | QpState::Rts | QpState::SqEr | QpState::Err
                ),
                _ => false,
            })
            .map(|(id, _)| id),
    );
    let mut work = 0;
    for &qpn in &ids {
        let Some((state, st)) = fw.qps.get(qpn).map(|q| (q.state, q.st)) else {
            continue;
        };
        if st == QpServiceType::Ud {
            work += match state {
                QpState::Err => flush(fw, dp, qpn),
                QpState::Rts => super::ud::send(fw, dp, qpn),
                _ => 0,
            };
            continue;
        }
        work += match state {
            QpState::Err => flush(fw, dp, qpn),
            QpState::Rts => {
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

/// An RTS QP the pass's five steps would find nothing to do for: no responder job, no
/// request outstanding, no timer, no doorbell, every rung WQE taken, and its send doorbell
/// record where the last pass saw it (a record moved without a doorbell goes to `fetch`,
/// which counts it). With many idle QPs (every FlexIO process has its own), a pass no longer
/// makes eight table lookups for each.
fn idle(qp: &Qp) -> bool {
    let rc = &qp.rc;
    rc.jobs.is_empty()
        && rc.reqs.is_empty()
        && rc.deadline.is_none()
        && rc.rnr_until.is_none()
        && !rc.doorbelled
        && rc.sq_ci == rc.rung_pi
        && qp.dbr.read_be32(4).map(|v| v as u16) == Some(rc.seen_pi)
}

/// Takes new WQEs from the send queue.
pub(super) fn fetch(fw: &mut Firmware, dp: &mut Datapath, qpn: u32) -> usize {
    let Some(qp) = fw.qps.get_mut(qpn) else {
        return 0;
    };
    let Some(sq) = qp.sq else { return 0 };
    let Some(pi) = rung_pi(qp, dp) else { return 0 };
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
        // A WAIT holds the send queue until its condition does (it is read again each pass).
        if let (Ok(_), Some(wait)) = (checked, w.wait.filter(|_| w.opcode == wqe_op::WAIT)) {
            if wait.holds(fw, qp.pd) != Ok(true) {
                break;
            }
        }
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
                wqe_op::NOP | wqe_op::WAIT => 0,
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
            Ok(len) if matches!(w.opcode, wqe_op::NOP | wqe_op::WAIT) => (len, ReqState::Done),
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
pub(super) fn build_request(
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
pub(super) fn send_requests(fw: &mut Firmware, dp: &mut Datapath, qpn: u32, now: Instant) -> usize {
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
pub(super) fn timers(fw: &mut Firmware, dp: &mut Datapath, qpn: u32, now: Instant) -> usize {
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
pub(super) fn rewind(rc: &mut RcState, i: usize, psn: u32) {
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
pub(super) fn complete(fw: &mut Firmware, dp: &mut Datapath, qpn: u32, now: Instant) -> usize {
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
                qp.state = QpState::Err;
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
pub(super) fn flush(fw: &mut Firmware, dp: &mut Datapath, qpn: u32) -> usize {
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
pub(super) fn requester_rx(fw: &mut Firmware, dp: &mut Datapath, qpn: u32, p: &Packet<'_>) {
    let now = Instant::now();
    let Some(qp) = fw.qps.get(qpn) else { return };
    if !matches!(qp.state, QpState::Rts | QpState::SqEr) {
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
            on_ack(&mut qp.rc, dp, (qpn, i, r), psn, syn, &ctx, now);
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
            // A READ resent after a loss asks for the rest of the message from the first
            // packet that did not land, and the responder answers it as a new request: FIRST
            // (or ONLY) at that PSN (IBA 9.7.5.1.2). Packets of an earlier response may still
            // arrive with their stream's opcodes: inside the message MIDDLE and FIRST are both
            // in order, at its end LAST and ONLY.
            let (first, middle, last, only) = (
                p.opcode == bth::RDMA_READ_RESPONSE_FIRST,
                p.opcode == bth::RDMA_READ_RESPONSE_MIDDLE,
                p.opcode == bth::RDMA_READ_RESPONSE_LAST,
                p.opcode == bth::RDMA_READ_RESPONSE_ONLY,
            );
            let fits = match (r.npsn == 1, k == 0, k + 1 == r.npsn) {
                // One packet: ONLY.
                (true, ..) => only,
                // The first of several: FIRST.
                (false, true, _) => first,
                // The last: LAST of a stream, or ONLY of a request resent for it alone.
                (false, false, true) => last || only,
                // Inside: MIDDLE of a stream, or FIRST of a resent request.
                (false, false, false) => middle || first,
            };
            let off = u64::from(k) * u64::from(mtu);
            let n = (u64::from(r.len) - off.min(u64::from(r.len))).min(u64::from(mtu));
            let res = if !fits || p.payload.len() as u64 != n {
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

/// An ACK or NAK (AETH syndrome `syn`) at `psn` for request `i` (`r`) of QP `qpn`: advances,
/// rewinds for an RNR or sequence NAK (counting retries), or fails the request.
fn on_ack(
    rc: &mut RcState,
    dp: &mut Datapath,
    (qpn, i, r): (u32, usize, Req),
    psn: u32,
    syn: u8,
    ctx: &QpCtx,
    now: Instant,
) {
    match syn >> 5 {
        0b000 => {
            ack_before(rc, i);
            // A coalesced ACK inside a READ or an atomic means its response was lost:
            // the timer resends it.
            if !r.read_like() {
                if psn == r.last_psn() {
                    rc.reqs[i].state = ReqState::Done;
                }
                advance(rc, psn_add(psn, 1), ctx, now);
            } else {
                advance(rc, r.first_psn, ctx, now);
            }
        }
        0b001 => {
            ack_before(rc, i);
            advance(rc, psn, ctx, now);
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
            advance(rc, psn, ctx, now);
        }
        0b011 => {
            ack_before(rc, i);
            advance(rc, psn, ctx, now);
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

pub(super) fn earlier_read_pending(rc: &RcState, i: usize) -> bool {
    rc.reqs
        .iter()
        .take(i)
        .any(|r| r.state == ReqState::Pending && r.read_like())
}

/// A response for request `i` acknowledges the SENDs and WRITEs before it.
pub(super) fn ack_before(rc: &mut RcState, i: usize) {
    for r in rc.reqs.iter_mut().take(i) {
        if r.state == ReqState::Pending && !r.read_like() {
            r.state = ReqState::Done;
        }
    }
}

/// The oldest unacknowledged PSN moved to `una` (if it is ahead): retry counters restart.
pub(super) fn advance(rc: &mut RcState, una: u32, ctx: &QpCtx, now: Instant) {
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
