//! Completion queues as the datapath drives them: writing a CQE (owner bit, overrun, a 128-byte
//! CQE's second half), arming (the CQ doorbell), moderation, and raising the completion event:
//! an EQE to the DevX subscriptions, or the activation of a DPA thread.

use std::time::Instant;

use mlx5_dpa::mlx5::wire::cqe::{at, cqe64_offset, session, CqeWords};
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
    cq.arm_seen = word;
    cq.armed = Some(ci);
    cq.pending_since_arm = 0;
    cq.first_pending = None;
    // CQEs already past the armed index raise the event at once.
    if pending(cq.pi, ci, cq.log_size) != 0 {
        fire(fw, dp, cqn);
    }
}

/// CQEs written and not yet consumed: the producer and consumer counters compared modulo
/// twice the ring (the owner bit is the counters' bit `log_size`), as the NIC compares them.
/// Consumers keep counters of their own width in the doorbell record's 24 bits: DPDK's send
/// queues keep a 16-bit one, which a 24-bit comparison would take for 65,536 CQEs unread at its
/// first wrap (the model stopped their CQs there as overrun).
fn pending(pi: u32, ci: u32, log_size: u8) -> u32 {
    pi.wrapping_sub(ci) & ((2u32 << log_size) - 1)
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

/// Writes one CQE (the 64-byte image, `op_own` last) and runs the event logic. Receive CQEs a
/// compressing CQ holds are written first, so CQEs stay in order.
pub(crate) fn post_cqe(fw: &mut Firmware, dp: &mut Datapath, cqn: u32, cqe: &CqeWords) -> bool {
    flush_held(fw, dp, cqn);
    write_one(fw, dp, cqn, cqe)
}

/// Posts the CQE of a frame an Ethernet RQ received. On a CQ with CQE compression it is held:
/// alike receive CQEs of one engine pass go out together as one compression session
/// ([`flush_held`]), as a NIC merges the completions of a burst.
#[inline]
pub(crate) fn post_rx_cqe(fw: &mut Firmware, dp: &mut Datapath, cqn: u32, cqe: &CqeWords) {
    let Some(comp) = fw.cqs.get_mut(cqn).and_then(|c| c.comp.as_mut()) else {
        write_one(fw, dp, cqn, cqe);
        return;
    };
    let cqe = cqe.to_bytes();
    let joins = comp
        .held
        .last()
        .is_none_or(|last| alike(&comp.held[0], last, &cqe));
    if !joins {
        flush_held(fw, dp, cqn);
    }
    let Some(comp) = fw.cqs.get_mut(cqn).and_then(|c| c.comp.as_mut()) else {
        return;
    };
    if comp.held.is_empty() {
        dp.held_cqs.push(cqn);
    }
    comp.held.push(cqe);
    if comp.held.len() >= comp.max {
        flush_held(fw, dp, cqn);
    }
}

/// Byte ranges of a receive CQE that differ between the completions of one compression
/// session (each carried by its mini CQE, or implied by its place): the RSS hash result, the
/// byte count and the WQE counter; and `op_own` (its owner bit).
const RX_HASH_RES: std::ops::Range<usize> = at::RX_HASH_RES..at::RX_HASH_RES + 4;
const BYTE_CNT: std::ops::Range<usize> = at::BYTE_CNT..at::BYTE_CNT + 4;
const WQE_COUNTER: std::ops::Range<usize> = at::WQE_COUNTER..at::WQE_COUNTER + 2;

/// Whether `next` may join a session whose title is `title` and whose last CQE is `last`: the
/// same image but for what a mini CQE carries, and the next WQE.
fn alike(title: &[u8; 64], last: &[u8; 64], next: &[u8; 64]) -> bool {
    let wqe = |c: &[u8; 64]| u16::from_be_bytes([c[WQE_COUNTER.start], c[WQE_COUNTER.start + 1]]);
    let same = |a: std::ops::Range<usize>| title[a.clone()] == next[a];
    wqe(next) == wqe(last).wrapping_add(1)
        && same(0..RX_HASH_RES.start)
        && same(RX_HASH_RES.end..BYTE_CNT.start)
        && same(BYTE_CNT.end..WQE_COUNTER.start)
        && same(WQE_COUNTER.end..at::OP_OWN)
        && title[at::OP_OWN] >> 4 == next[at::OP_OWN] >> 4
}

/// Writes what the CQs hold at the end of an engine pass.
pub(crate) fn flush_all_held(fw: &mut Firmware, dp: &mut Datapath) {
    let mut cqs = std::mem::take(&mut dp.held_cqs);
    for &cqn in &cqs {
        flush_held(fw, dp, cqn);
    }
    cqs.clear();
    dp.held_cqs = cqs;
}

/// Writes the CQEs `cqn` holds: runs of two or more as compression sessions, a session never
/// crossing the ring's end (DPDK's vectorized receive reads a session's CQEs as one array),
/// a lone CQE as itself. CQEs that would overrun the CQ are written one by one, so the overrun
/// is what it would be without compression.
pub(crate) fn flush_held(fw: &mut Firmware, dp: &mut Datapath, cqn: u32) {
    let Some(held) = fw
        .cqs
        .get_mut(cqn)
        .and_then(|c| c.comp.as_mut())
        .filter(|c| !c.held.is_empty())
        .map(|c| std::mem::take(&mut c.held))
    else {
        return;
    };
    let mut rest = &held[..];
    while !rest.is_empty() {
        let Some(cq) = fw.cqs.get_mut(cqn) else {
            break;
        };
        let size = 1u32 << cq.log_size;
        let to_end = (size - (cq.pi & (size - 1))) as usize;
        let ci = cq.dbr.read_be32(0).unwrap_or(0);
        cq.ci_seen = ci;
        let free = size.saturating_sub(pending(cq.pi, ci, cq.log_size)) as usize;
        let n = rest.len().min(to_end);
        if n >= 2 && n <= free && cq.status != CqStatus::Overflow {
            write_session(fw, dp, cqn, &rest[..n]);
            rest = &rest[n..];
        } else {
            write_one(fw, dp, cqn, &CqeWords::from_bytes(&rest[0]));
            rest = &rest[1..];
        }
    }
    // The vector goes back for the next pass (its capacity kept).
    let mut held = held;
    held.clear();
    if let Some(c) = fw.cqs.get_mut(cqn).and_then(|c| c.comp.as_mut()) {
        if c.held.is_empty() {
            c.held = held;
        }
    }
}

/// Writes `cqes` (two or more, room checked, not crossing the ring's end) as one compression
/// session, in the layout `mlx5_dpa::mlx5::wire::cqe::session` describes: the first CQE as
/// the title (the session's length in `byte_cnt`, the compressed format in `op_own`, written
/// last), and each CQE's RSS hash result and byte count as a hash-format mini CQE.
fn write_session(fw: &mut Firmware, dp: &mut Datapath, cqn: u32, cqes: &[[u8; 64]]) {
    let Some(cq) = fw.cqs.get_mut(cqn) else {
        return;
    };
    let n = cqes.len();
    let size = 1u32 << cq.log_size;
    let first = (cq.pi & (size - 1)) as usize;
    let be32 = |c: &[u8; 64], r: std::ops::Range<usize>| {
        u32::from_be_bytes([c[r.start], c[r.start + 1], c[r.start + 2], c[r.start + 3]])
    };
    for (j, chunk) in cqes.chunks(session::MINIS_PER_ARRAY).enumerate() {
        let mut slot = [0u8; 64];
        for (k, c) in chunk.iter().enumerate() {
            session::MiniCqe {
                rx_hash_result: be32(c, RX_HASH_RES),
                byte_cnt: be32(c, BYTE_CNT),
            }
            .write(&mut slot, k);
        }
        let at = first + session::array_slot(j);
        cq.ring.write(cqe64_offset(at, cq.cqe_bytes), &slot);
    }
    let mut title = cqes[0];
    title[BYTE_CNT].copy_from_slice(&(n as u32).to_be_bytes());
    let owner = ((cq.pi >> cq.log_size) & 1) as u8;
    let mut view = Cqe64::new_unchecked(&mut title[..]);
    view.set_owner(owner);
    title[at::OP_OWN] = (title[at::OP_OWN] & !(3 << 2)) | (session::FORMAT_COMPRESSED << 2);
    cq.ring.publish64(
        cqe64_offset(first, cq.cqe_bytes),
        &CqeWords::from_bytes(&title).0,
    );
    cq.pi = cq.pi.wrapping_add(n as u32);
    dp.port.stats.cqe_sessions += 1;
    for _ in 0..n {
        after_write(fw, dp, cqn);
    }
}

/// Writes one CQE now (the 64-byte image, `op_own` last) and runs the event logic.
fn write_one(fw: &mut Firmware, dp: &mut Datapath, cqn: u32, cqe: &CqeWords) -> bool {
    let Some(cq) = fw.cqs.get_mut(cqn) else {
        return false;
    };
    if cq.status == CqStatus::Overflow {
        dp.port.stats.cq_overruns += 1;
        return false;
    }
    let size = 1u32 << cq.log_size;
    // The consumer counter as last read leaves at least as few free entries as the record's
    // now (the driver only moves it forward): the record is read only when that looks full.
    let mut used = pending(cq.pi, cq.ci_seen, cq.log_size);
    if used >= size {
        cq.ci_seen = cq.dbr.read_be32(0).unwrap_or(0);
        used = pending(cq.pi, cq.ci_seen, cq.log_size);
    }
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
    // A 128-byte CQE carries the 64-byte CQE in its second half; `op_own` (the last byte),
    // with this lap's owner bit, is stored after the rest.
    const _: () = assert!(at::OP_OWN == 63);
    let mut cqe = *cqe;
    cqe.set_owner(owner);
    cq.ring.publish64(cqe64_offset(idx, cq.cqe_bytes), &cqe.0);
    cq.pi = cq.pi.wrapping_add(1);
    if cq.armed.is_some() {
        after_write(fw, dp, cqn);
    }
    true
}

/// The event logic after one CQE: moderation counts, and the event when they are met.
fn after_write(fw: &mut Firmware, dp: &mut Datapath, cqn: u32) {
    let Some(cq) = fw.cqs.get_mut(cqn) else {
        return;
    };
    if cq.armed.is_some() {
        cq.pending_since_arm += 1;
        if cq.first_pending.is_none() {
            cq.first_pending = Some(Instant::now());
            if cq.period > 0 {
                fw.timed_cqs.push(cqn);
            }
        }
        let by_count = cq.max_count == 0 || cq.pending_since_arm >= u32::from(cq.max_count);
        let by_time_only = cq.max_count == 0 && cq.period > 0;
        if by_count && !by_time_only {
            fire(fw, dp, cqn);
        }
    }
}
