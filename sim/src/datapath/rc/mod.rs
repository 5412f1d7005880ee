//! The RC transport: requester and responder of reliable-connected QPs, over RoCE v2; and
//! beside it the UD transport (`ud`), which shares its WQE reading, completions and wire.
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

mod emit;
mod requester;
mod responder;
#[cfg(test)]
mod tests;
mod ud;
mod wqe;

pub(crate) use requester::run;

use crate::port::roce::{self};
use crate::state::datapath::Datapath;
use crate::state::objects::QpServiceType;
use crate::state::rc::*;
use crate::state::Firmware;

use requester::requester_rx;
use responder::responder_rx;

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
    match fw.qps.get(qpn).map(|q| q.st) {
        Some(QpServiceType::Rc) if !ud::is_ud(p.opcode) => {}
        Some(QpServiceType::Ud) if ud::is_ud(p.opcode) => {
            ud::receive(fw, dp, qpn, &p);
            return;
        }
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
