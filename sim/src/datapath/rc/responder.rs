//! The responder: incoming SEND, RDMA WRITE, READ and atomic requests, their checks and NAKs,
//! duplicates, the responses it queues, and the receive completions.

use mlx5_dpa::mlx5::wire::CompletionKind;

use crate::port::roce::{self, aeth, opcode as bth, Bth, Packet};
use crate::state::datapath::Datapath;
use crate::state::objects::QpState;
use crate::state::rc::*;
use crate::state::Firmware;
use mlx5_dpa::mlx5::wire::cqe::syndrome;

use super::emit::*;

use super::wqe::*;

// ---------------------------------------------------------------------------------------------
// Responder.

pub(super) fn queue_response(fw: &mut Firmware, dp: &mut Datapath, qpn: u32, job: RespJob) {
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
pub(super) fn run_jobs(fw: &mut Firmware, dp: &mut Datapath, qpn: u32, budget: usize) -> usize {
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
pub(super) fn responder_fail(
    fw: &mut Firmware,
    dp: &mut Datapath,
    qpn: u32,
    psn: u32,
    nak: u8,
    rq_err: Option<(u8, u16)>,
) {
    let Some(qp) = fw.qps.get_mut(qpn) else {
        return;
    };
    let msn = qp.rc.msn;
    let cqn = qp.cqn_rcv;
    if let Some((_, index)) = rq_err {
        recv_consumed(qp, index);
    }
    qp.rc.jobs.clear();
    tracing::debug!(target: "mlx5_sim::rc", qpn, psn, aeth = nak, "responder error; QP to ERR");
    if let Some((syn, index)) = rq_err {
        post(fw, dp, cqn, err_cqe(false, syn, 0, qpn, index));
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
        qp.state = QpState::Err;
        qp.rc.in_msg = InMsg::Idle;
    }
}

/// Position of a SEND / WRITE packet in its message: (first, last).
pub(super) fn position(op: u8) -> (bool, bool) {
    use bth::*;
    match op {
        SEND_FIRST | RDMA_WRITE_FIRST => (true, false),
        SEND_MIDDLE | RDMA_WRITE_MIDDLE => (false, false),
        SEND_LAST | SEND_LAST_IMM | RDMA_WRITE_LAST | RDMA_WRITE_LAST_IMM => (false, true),
        _ => (true, true),
    }
}

pub(super) fn responder_rx(fw: &mut Firmware, dp: &mut Datapath, qpn: u32, p: &Packet<'_>) {
    use bth::*;
    let Some(qp) = fw.qps.get_mut(qpn) else {
        return;
    };
    // RST, INIT and ERR drop requests silently (IBA).
    if !matches!(qp.state, QpState::Rtr | QpState::Rts | QpState::SqEr) {
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
pub(super) fn rnr_nak(fw: &mut Firmware, dp: &mut Datapath, qpn: u32, psn: u32) {
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

pub(super) fn ack(fw: &mut Firmware, dp: &mut Datapath, qpn: u32, psn: u32) {
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

pub(super) fn rx_send(
    fw: &mut Firmware,
    dp: &mut Datapath,
    qpn: u32,
    p: &Packet<'_>,
    first: bool,
    last: bool,
) {
    let Some(qp) = fw.qps.get(qpn) else { return };
    if first {
        if !has_recv(qp) {
            responder_fail(fw, dp, qpn, p.psn, aeth::NAK_INVALID, None);
            return;
        }
        if !recv_posted(fw, qp) {
            rnr_nak(fw, dp, qpn, p.psn);
            return;
        }
    }
    let (offset, index) = match qp.rc.in_msg {
        InMsg::Send { offset, index } => (offset, index),
        _ => (0, recv_claim(fw, qpn)),
    };
    let Some(qp) = fw.qps.get(qpn) else { return };
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
                Some((syndrome::LOCAL_LENGTH_ERR, index)),
            );
            return;
        }
        Err(syn) => {
            responder_fail(
                fw,
                dp,
                qpn,
                p.psn,
                aeth::NAK_OPERATIONAL,
                Some((syn, index)),
            );
            return;
        }
    }
    let Some(qp) = fw.qps.get_mut(qpn) else {
        return;
    };
    let cqn = qp.cqn_rcv;
    if last {
        recv_consumed(qp, index);
    }
    let rc = &mut qp.rc;
    rc.epsn = psn_add(rc.epsn, 1);
    if last {
        rc.in_msg = InMsg::Idle;
        rc.msn = psn_add(rc.msn, 1);
        let op = if p.imm.is_some() {
            CompletionKind::RecvImm
        } else {
            CompletionKind::Recv
        };
        post(fw, dp, cqn, resp_cqe(op, total as u32, p.imm, qpn, index));
        ack(fw, dp, qpn, p.psn);
    } else {
        rc.in_msg = InMsg::Send {
            offset: total,
            index,
        };
        if p.ack_req {
            ack(fw, dp, qpn, p.psn);
        }
    }
}

pub(super) fn rx_write(
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
        if !has_recv(qp) {
            responder_fail(fw, dp, qpn, p.psn, aeth::NAK_INVALID, None);
            return;
        }
        // The immediate needs a receive WQE; without one nothing of this packet is taken.
        if !recv_posted(fw, qp) {
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
    let index = (last && imm).then(|| recv_claim(fw, qpn));
    let Some(qp) = fw.qps.get_mut(qpn) else {
        return;
    };
    let cqn = qp.cqn_rcv;
    if let Some(index) = index {
        recv_consumed(qp, index);
    }
    let rc = &mut qp.rc;
    rc.epsn = psn_add(rc.epsn, 1);
    if last {
        rc.in_msg = InMsg::Idle;
        rc.msn = psn_add(rc.msn, 1);
        if let Some(index) = index {
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

pub(super) fn rx_read(fw: &mut Firmware, dp: &mut Datapath, qpn: u32, p: &Packet<'_>) {
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

pub(super) fn rx_atomic(fw: &mut Firmware, dp: &mut Datapath, qpn: u32, p: &Packet<'_>) {
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
pub(super) fn duplicate(fw: &mut Firmware, dp: &mut Datapath, qpn: u32, p: &Packet<'_>) {
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
