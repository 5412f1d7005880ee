//! Completion queues as the datapath drives them: writing a CQE (owner bit, overrun, a 128-byte
//! CQE's second half), arming (the CQ doorbell), moderation, and raising the completion event:
//! an EQE to the DevX subscriptions, or the activation of a DPA thread.

use std::time::Instant;

use mlx5_dpa::mlx5::wire::cqe::cqe64_offset;
use mlx5_dpa::mlx5::wire::{Cqe64, Event};

use crate::state::datapath::*;
use crate::state::events::{self as ev_state};
use crate::state::objects::ObjRef;
use crate::state::objects::*;
use crate::state::Firmware;

pub(crate) fn arm_cq(fw: &mut Firmware, dp: &mut Datapath, page: u32, cqn: u32, word: u32) {
    let Some(cq) = fw.cqs.get_mut(cqn) else {
        return;
    };
    if cq.uar_page != page {
        return;
    }
    let ci = word & 0xff_ffff;
    cq.armed = Some(ci);
    cq.pending_since_arm = 0;
    cq.first_pending = None;
    // CQEs already past the armed index raise the event at once.
    if (cq.pi.wrapping_sub(ci) & 0xff_ffff) != 0 {
        fire(fw, dp, cqn);
    }
}

/// Raises the completion event of an armed CQ and disarms it.
pub(crate) fn fire(fw: &mut Firmware, dp: &mut Datapath, cqn: u32) {
    let Some(cq) = fw.cqs.get_mut(cqn) else {
        return;
    };
    if cq.armed.take().is_none() {
        return;
    }
    cq.pending_since_arm = 0;
    cq.first_pending = None;
    cq.events += 1;
    dp.port.stats.events += 1;
    match cq.target {
        CqTarget::Eq(_) => {
            ev_state::deliver(
                &mut dp.subs,
                ObjRef::Cq(cqn),
                ev_state::event_type::COMP,
                &Event::Completion { cqn }.to_eqe(),
            );
        }
        CqTarget::DpaThread(t) => {
            tracing::trace!(target: "mlx5_sim::engine", cqn, dpa_thread = t, "DPA completion event");
            fw.dpa_event(t);
        }
        CqTarget::DpaEq(t) => {
            // EQEs into a DPA EQ are not modelled (docs/model-dpa.md): the event
            // is counted only.
            tracing::trace!(target: "mlx5_sim::engine", cqn, dpa_eq = t, "DPA EQ completion event");
        }
    }
}

/// Writes one CQE (the 64-byte image, `op_own` last) and runs the event logic.
pub(crate) fn post_cqe(fw: &mut Firmware, dp: &mut Datapath, cqn: u32, mut cqe: [u8; 64]) -> bool {
    let Some(cq) = fw.cqs.get_mut(cqn) else {
        return false;
    };
    if cq.status == CqStatus::Overflow {
        dp.port.stats.cq_overruns += 1;
        return false;
    }
    let size = 1u32 << cq.log_size;
    let ci = cq.dbr.read_be32(0).unwrap_or(0) & 0xff_ffff;
    let used = cq.pi.wrapping_sub(ci) & 0xff_ffff;
    if used >= size && !cq.oi && !cq.cc {
        cq.status = CqStatus::Overflow;
        dp.port.stats.cq_overruns += 1;
        ev_state::deliver(
            &mut dp.subs,
            ObjRef::Cq(cqn),
            ev_state::event_type::CQ_ERROR,
            &Event::CqError { cqn, syndrome: 1 }.to_eqe(),
        );
        return false;
    }
    // A collapsed CQ (PRM `cc`) rewrites its entry 0 with every CQE.
    let idx = if cq.cc {
        0
    } else {
        (cq.pi & (size - 1)) as usize
    };
    let owner = ((cq.pi >> cq.log_size) & 1) as u8;
    let mut view = Cqe64::new_unchecked(&mut cqe[..]);
    view.set_owner(owner);
    // A 128-byte CQE carries the 64-byte CQE in its second half; `op_own` (the last byte) is
    // written after the rest.
    let at = cqe64_offset(idx, cq.cqe_bytes);
    let (body, op_own) = cqe.split_at(cqe.len() - 1);
    cq.ring.write(at, body);
    std::sync::atomic::fence(std::sync::atomic::Ordering::Release);
    cq.ring.write(at + body.len(), op_own);
    cq.pi = cq.pi.wrapping_add(1);
    if cq.armed.is_some() {
        cq.pending_since_arm += 1;
        if cq.first_pending.is_none() {
            cq.first_pending = Some(Instant::now());
        }
        let by_count = cq.max_count == 0 || cq.pending_since_arm >= u32::from(cq.max_count);
        let by_time_only = cq.max_count == 0 && cq.period > 0;
        if by_count && !by_time_only {
            fire(fw, dp, cqn);
        }
    }
    true
}
