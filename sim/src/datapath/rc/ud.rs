//! The UD transport over RoCE v2 (InfiniBand Architecture Specification vol. 1, ch. 9,
//! "unreliable datagram"; Annex A17 for RoCE v2): one message is one packet, with no
//! acknowledgement, no retry and no connection.
//!
//! - Send: a WQE is a control segment, a datagram segment (the 48-byte address vector as
//!   libmlx5 lays it out in `struct mlx5_wqe_av`: Q_Key, destination QP, the UDP source port in
//!   `rlid`, the destination MAC, hop limit, the source GID index in `grh_gid_fl[27:20]`, the
//!   destination GID) and the gather list. The packet is BTH (`UD SEND only`, with or without
//!   immediate), DETH (Q_Key, this QP), the immediate, the payload. A Q_Key with its top bit set
//!   means the QP's own (IBA 10.2.4). The WQE completes as soon as the packet is sent. A WQE the
//!   QP cannot send (bad segments, a message above the path MTU, an address the model cannot
//!   reach) completes in error and moves the QP to SQE, as IBA 10.8 has UD send errors.
//! - Receive: the DETH's Q_Key must be the QP's (else the packet is dropped, IBA 10.2.4); with
//!   no receive WQE posted the packet is dropped (no RNR for UD). The receive buffer gets the
//!   40-byte GRH area first (for RoCE v2 over IPv4 its last 20 bytes hold the IPv4 header), then
//!   the payload; the byte count includes the 40. The CQE's `flags_rqpn` carries the source QP,
//!   the GRH-present bit (28) and the RoCE L3 type IPv4 (2 at bits 25:24), as Linux's
//!   `mlx5_ib` `handle_responder` reads them (`MLX5_CQE_ROCE_L3_HEADER_TYPE_IPV4`).

use mlx5_dpa::mlx5::wire::cqe::syndrome;
use mlx5_dpa::mlx5::wire::wqe::SEG;
use mlx5_dpa::mlx5::wire::{CompletionKind, Cqe64};

use crate::port::roce::{self, opcode as bth, Bth, Packet, Path};
use crate::state::datapath::Datapath;
use crate::state::objects::{Qp, QpState};
use crate::state::rc::*;
use crate::state::Firmware;

use super::emit::*;
use super::wqe::*;

/// The GRH area at the start of every UD receive buffer.
pub(crate) const GRH: usize = 40;
/// Where the IPv4 header goes in it (RoCE v2 over IPv4).
const GRH_IPV4_AT: usize = 20;
/// The datagram segment: the address vector, 48 bytes after the control segment.
const AV: usize = 48;
/// `flags_rqpn` of a UD receive over RoCE v2 IPv4: GRH present, L3 type IPv4.
const FLAGS_GRH_IPV4: u32 = (1 << 28) | (2 << 24);

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

/// Sends the new WQEs of UD QP `qpn` (in RTS), one datagram each.
pub(super) fn send(fw: &mut Firmware, dp: &mut Datapath, qpn: u32) -> usize {
    let Some(qp) = fw.qps.get_mut(qpn) else {
        return 0;
    };
    let Some(sq) = qp.sq else { return 0 };
    // The send doorbell record as the RC requester reads it: taken when rung.
    let Some(pi) = rung_pi(qp, dp) else {
        return 0;
    };
    let mut frame = std::mem::take(&mut dp.rc_frame);
    let mut work = 0;
    let mut bbs = 0u32;
    while bbs < WQEBB_BUDGET {
        let Some(qp) = fw.qps.get(qpn) else { break };
        if qp.state != QpState::Rts || qp.rc.sq_ci == pi {
            break;
        }
        let mut w = SendWqe::read(qp, sq, qp.rc.sq_ci);
        let posted = pi.wrapping_sub(qp.rc.sq_ci);
        let nbb = w.nbb.min(posted);
        let built = if w.nbb > posted {
            Err(syndrome::LOCAL_QP_OP_ERR)
        } else {
            datagram(fw, qp, qpn, &mut w, &mut frame)
        };
        let Some(qp) = fw.qps.get_mut(qpn) else { break };
        qp.rc.sq_ci = qp.rc.sq_ci.wrapping_add(nbb);
        bbs += u32::from(nbb);
        work += 1;
        let cqn = qp.cqn_snd;
        match built {
            Ok(len) => {
                qp.rc.next_psn = psn_add(qp.rc.next_psn, 1);
                let signaled = w.signaled();
                send_frame(fw, dp, false, &frame);
                if signaled {
                    post(fw, dp, cqn, req_cqe(w.opcode, qpn, w.wqe_index, len));
                }
            }
            Err(syn) => {
                tracing::debug!(target: "mlx5_sim::ud", qpn, wqe_index = w.wqe_index, syndrome = syn, "UD send WQE refused");
                qp.state = QpState::SqEr;
                post(fw, dp, cqn, err_cqe(true, syn, w.opcode, qpn, w.wqe_index));
                break;
            }
        }
    }
    dp.rc_frame = frame;
    work
}

/// Builds the datagram of send WQE `w` into `frame`; its payload length.
fn datagram(
    fw: &Firmware,
    qp: &Qp,
    qpn: u32,
    w: &mut SendWqe,
    frame: &mut Vec<u8>,
) -> Result<u32, u8> {
    use wqe_op::*;
    let imm = match w.opcode {
        SEND => false,
        SEND_IMM => true,
        _ => return Err(syndrome::LOCAL_QP_OP_ERR),
    };
    if w.qpn != qpn || w.ds * SEG < SEG + AV {
        return Err(syndrome::LOCAL_QP_OP_ERR);
    }
    w.segs_at = SEG + AV;
    let av = &w.buf[SEG..SEG + AV];
    let qkey = match be32(&av[0..4]) {
        k if k & 0x8000_0000 != 0 => qp.ctx.q_key,
        k => k,
    };
    let dqpn = be32(&av[8..12]) & 0xff_ffff;
    let sport = u16::from_be_bytes([av[14], av[15]]);
    let mut dmac = [0u8; 6];
    dmac.copy_from_slice(&av[20..26]);
    let hop_limit = av[27];
    let sgid_index = (be32(&av[28..32]) >> 20) & 0xff;
    let mut rgid = [0u8; 16];
    rgid.copy_from_slice(&av[32..48]);
    // The model carries RoCE v2 over IPv4: from the IPv4 GID, to an IPv4-mapped GID.
    let dip = roce::gid_ipv4(&rgid).ok_or(syndrome::LOCAL_QP_OP_ERR)?;
    if sgid_index != u32::from(roce::IPV4_GID_INDEX) {
        return Err(syndrome::LOCAL_QP_OP_ERR);
    }
    let mut len = 0u64;
    w.segments(|s| {
        len += u64::from(match s {
            Seg::Data { len, .. } | Seg::Inline { len, .. } => len,
        });
        Ok(())
    })?;
    if len > u64::from(mtu_bytes(qp.ctx.mtu)) {
        return Err(syndrome::LOCAL_LENGTH_ERR);
    }
    let path = Path {
        smac: fw.profile.mac,
        dmac,
        sip: fw.profile.ipv4,
        dip,
        ttl: if hop_limit == 0 { 64 } else { hop_limit },
        sport: if sport != 0 {
            sport
        } else {
            0xc000 | ((qpn ^ dqpn) & 0x3fff) as u16
        },
        mig: qp.ctx.pm_state == 3,
    };
    let op = if imm {
        bth::UD_SEND_ONLY_IMM
    } else {
        bth::UD_SEND_ONLY
    };
    let se = w.fm_ce_se & mlx5_dpa::mlx5::wire::wqe::CTRL_SOLICITED != 0;
    roce::start(
        frame,
        &path,
        &Bth {
            opcode: op,
            se,
            dqpn,
            ack_req: false,
            psn: qp.rc.next_psn,
        },
    );
    roce::put_deth(frame, qkey, qpn);
    if imm {
        frame.extend_from_slice(&w.imm);
    }
    let w = &*w;
    w.segments(|s| match s {
        Seg::Inline { at, len } => {
            frame.extend_from_slice(&w.buf[at..at + len as usize]);
            Ok(())
        }
        Seg::Data { len, lkey, addr } => {
            let n = len as usize;
            let dma = crate::datapath::keys::translate(fw, qp.pd, lkey, addr, n, false)?;
            let start = frame.len();
            frame.resize(start + n, 0);
            if dma.read(0, &mut frame[start..]) {
                Ok(())
            } else {
                Err(syndrome::LOCAL_PROT_ERR)
            }
        }
    })?;
    roce::finish(frame);
    Ok(len as u32)
}

/// Whether an opcode is the UD transport's.
pub(super) fn is_ud(op: u8) -> bool {
    matches!(op, bth::UD_SEND_ONLY | bth::UD_SEND_ONLY_IMM)
}

/// A datagram for UD QP `qpn`.
pub(super) fn receive(fw: &mut Firmware, dp: &mut Datapath, qpn: u32, p: &Packet<'_>) {
    let Some(qp) = fw.qps.get(qpn) else { return };
    let qkey_ok = p.deth.is_some_and(|d| d.qkey == qp.ctx.q_key);
    if !matches!(qp.state, QpState::Rtr | QpState::Rts | QpState::SqEr)
        || !qkey_ok
        || !has_recv(qp)
        || !recv_posted(fw, qp)
    {
        dp.rc_stats.dropped += 1;
        return;
    }
    let src_qp = p.deth.map_or(0, |d| d.src_qp);
    let index = recv_claim(fw, qpn);
    let Some(qp) = fw.qps.get(qpn) else { return };
    let mut grh = [0u8; GRH];
    let ip = p.ip_header.len().min(GRH - GRH_IPV4_AT);
    grh[GRH_IPV4_AT..GRH_IPV4_AT + ip].copy_from_slice(&p.ip_header[..ip]);
    let res = scatter_rq(fw, qp, index, 0, &grh)
        .and_then(|()| scatter_rq(fw, qp, index, GRH as u64, p.payload));
    let Some(qp) = fw.qps.get_mut(qpn) else {
        return;
    };
    recv_consumed(qp, index);
    let cqn = qp.cqn_rcv;
    let cqe = match res {
        Ok(()) => {
            let kind = if p.imm.is_some() {
                CompletionKind::RecvImm
            } else {
                CompletionKind::Recv
            };
            let mut cqe = resp_cqe(kind, (GRH + p.payload.len()) as u32, p.imm, qpn, index);
            Cqe64::new_unchecked(&mut cqe[..]).set_flags_rqpn(FLAGS_GRH_IPV4 | src_qp);
            cqe
        }
        Err(syn) => err_cqe(false, syn, 0, qpn, index),
    };
    post(fw, dp, cqn, cqe);
}
