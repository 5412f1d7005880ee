//! The NIC datapath: doorbells, send WQEs, the port, receive steering, CQEs and events.
//!
//! Formats: WQE segments, CQEs and EQEs are read and written through the driver's
//! `mlx5::wire` views (rdma-core `mlx5dv.h`, DPDK `mlx5_prm.h`), so the model and the driver
//! share one declaration of every offset.
//!
//! RC queue pairs run in `crate::rc` within the same pass: their send doorbells arrive on the
//! same UAR registers (`qpn_ds` names a QP), and RoCE v2 frames addressed to the port's MAC
//! and IPv4 address go to the RC transport instead of receive steering.
//!
//! Doorbells: the model cannot trap stores, so it samples. UAR registers are taken with an
//! atomic swap (a write is seen once); an SQ is processed when its doorbell register was
//! written or its doorbell record moved. The second case is counted as
//! `dbr_without_doorbell`: on hardware such a queue would not run.

pub(crate) mod cq;
pub(crate) mod eth;
pub(crate) mod keys;
pub(crate) mod port;
pub(crate) mod rc;
pub(crate) mod rq;
pub(crate) mod steering;

use std::time::{Duration, Instant};

use crate::datapath::cq::{arm_cq, fire};
use crate::datapath::eth::run_sq;
use crate::datapath::port::capture;
use crate::datapath::steering::compute_roots;
use crate::port::roce;
use crate::state::datapath::Doorbell;
use crate::state::datapath::{Datapath, PortMode, MAX_FRAME};
use crate::state::objects::WqState::Rdy;
use crate::state::Firmware;
use crate::state::State;
use mlx5_dpa::sync::lock;

/// Error CQE syndromes (`MLX5_CQE_SYNDROME_*`), declared with the CQE format.
pub use mlx5_dpa::mlx5::wire::cqe::syndrome;

/// UAR register offsets (kernel `MLX5_CQ_DOORBELL`, `MLX5_BF_OFFSET` and its alternates).
const CQ_DOORBELL: usize = 0x20;
const SEND_DOORBELLS: [usize; 4] = [0x800, 0x900, 0xa00, 0xb00];

/// One engine pass.
pub(crate) fn step(st: &mut State) -> usize {
    let mut work = 0;
    let State { fw, dp } = st;
    // 1. UAR doorbells.
    let mut rung = std::mem::take(&mut dp.doorbells);
    rung.clear();
    for (page, uar) in fw.uars.iter() {
        if let Some(word) = uar.take(CQ_DOORBELL) {
            rung.push(Doorbell::CqArm { page, word });
        }
        for off in SEND_DOORBELLS {
            if let Some(word) = uar.take(off) {
                rung.push(Doorbell::Send { page, word });
            }
        }
    }
    for &d in &rung {
        work += 1;
        let (Doorbell::CqArm { page, word: v } | Doorbell::Send { page, word: v }) = d;
        let hi = u32::from_be_bytes([v[0], v[1], v[2], v[3]]);
        let lo = u32::from_be_bytes([v[4], v[5], v[6], v[7]]);
        if let Doorbell::CqArm { .. } = d {
            arm_cq(fw, dp, page, lo & 0xff_ffff, hi);
            dp.arm_pages.push(page);
        } else {
            // qpn_ds / sqn_ds: the number names an SQ or a QP of this page (their number
            // spaces start at 0x1000 and 0x4000).
            let n = lo >> 8;
            if let Some(sq) = fw.sqs.get_mut(n) {
                if sq.wq.uar_page == Some(page) {
                    sq.doorbelled = true;
                    dp.active_sqs.push(n);
                }
            }
            dp.send_pages.push(page);
            if let Some(qp) = fw.qps.get_mut(n) {
                if qp.uar_page == page {
                    qp.rc.doorbelled = true;
                }
            }
        }
    }
    dp.doorbells = rung;
    announce_hidden_doorbells(fw, dp);
    // 2. Steering roots for this pass (tables cannot change while the lock is held), computed
    //    again only when a command changed the tables: with a table for each of many DPA
    //    processes, sorting them every pass showed in the packet processor's profile.
    if dp.roots_gen != Some(fw.steering_gen) {
        compute_roots(fw, &mut dp.roots);
        dp.roots_gen = Some(fw.steering_gen);
    }
    // 3. Send queues: the rung ones and those with work left; every one when there are none.
    let mut ids = std::mem::take(&mut dp.ids);
    ids.clear();
    if dp.active_sqs.is_empty() {
        ids.extend(fw.sqs.iter().map(|(id, _)| id));
    } else {
        ids.append(&mut dp.active_sqs);
        ids.sort_unstable();
        ids.dedup();
    }
    for &sqn in &ids {
        work += run_sq(fw, dp, sqn);
        if let Some(sq) = fw.sqs.get(sqn) {
            if sq.state == crate::state::objects::WqState::Rdy
                && (sq.doorbelled || sq.rung_pi != sq.ci)
            {
                dp.active_sqs.push(sqn);
            }
        }
    }
    dp.ids = ids;
    // 4. RC queue pairs: responses, timers, send WQEs, completions, flushes.
    let now = Instant::now();
    work += crate::datapath::rc::run(fw, dp, now);
    // 5. Frames arriving from outside, then RC frames delivered inside the device.
    work += poll_port(fw, dp);
    work += crate::datapath::rc::drain_local(fw, dp);
    // 6. Receive CQEs held for compression sessions (a session closes with its pass).
    crate::datapath::cq::flush_all_held(fw, dp);
    // 7. Moderation timers: of the CQs whose timer runs (`Firmware::timed_cqs`), those whose
    //    period has passed raise their event.
    if !fw.timed_cqs.is_empty() {
        let mut timed = std::mem::take(&mut fw.timed_cqs);
        timed.sort_unstable();
        timed.dedup();
        dp.ids.clear();
        // Kept while armed with a period and a CQE waiting; due once the period has passed.
        timed.retain(|&id| match fw.cqs.get(id) {
            Some(c) if c.armed.is_some() && c.period > 0 => match c.first_pending {
                Some(t) => {
                    if now.duration_since(t) >= Duration::from_micros(u64::from(c.period)) {
                        dp.ids.push(id);
                    }
                    true
                }
                None => false,
            },
            _ => false,
        });
        fw.timed_cqs = timed;
        let ids = std::mem::take(&mut dp.ids);
        for &cqn in &ids {
            fire(fw, dp, cqn);
            work += 1;
        }
        dp.ids = ids;
    }
    work
}

/// The UAR is memory the engine reads once a pass: when several queues ring through one page
/// (DPDK's mlx5 driver rings all its TX queues through one, rdma-core's CQs share their
/// context's pages), a later write to a register hides an earlier one. So a send doorbell on a
/// page announces every SQ of the page whose doorbell record moved, and a CQ arm doorbell arms
/// every CQ of the page whose record holds an arm word not yet acted on (written before its
/// doorbell rang). Without this a hidden SQ waited for good while another queue kept the
/// engine busy, and a hidden arm's event never came. One scan of the queues a pass, for the
/// pages rung in it.
fn announce_hidden_doorbells(fw: &mut Firmware, dp: &mut Datapath) {
    if !dp.send_pages.is_empty() && fw.sqs.len() > 1 {
        for (id, sq) in fw.sqs.iter_mut() {
            let Some(page) = sq.wq.uar_page else { continue };
            if sq.state != Rdy || sq.doorbelled || !dp.send_pages.contains(&page) {
                continue;
            }
            if sq.wq.dbr.read_be32(4).map(|v| v as u16) != Some(sq.rung_pi) {
                sq.doorbelled = true;
                dp.active_sqs.push(id);
            }
        }
    }
    dp.send_pages.clear();
    if !dp.arm_pages.is_empty() && fw.cqs.len() > 1 {
        dp.ids.clear();
        dp.ids.extend(fw.cqs.iter().filter_map(|(id, c)| {
            let word = c.dbr.read_be32(4)?;
            (dp.arm_pages.contains(&c.uar_page) && word != 0 && word != c.arm_seen).then_some(id)
        }));
        let ids = std::mem::take(&mut dp.ids);
        for &id in &ids {
            if let Some((page, word)) = fw
                .cqs
                .get(id)
                .and_then(|c| Some((c.uar_page, c.dbr.read_be32(4)?)))
            {
                arm_cq(fw, dp, page, id, word);
            }
        }
        dp.ids = ids;
    }
    dp.arm_pages.clear();
}

/// A frame arrived at the port (from a link or a TAP): RoCE v2 for this port's address goes
/// to the RC transport, anything else to receive steering.
pub(crate) fn receive(fw: &mut Firmware, dp: &mut Datapath, frame: &[u8], from_td: Option<u32>) {
    if roce::is_for(frame, &fw.profile.mac, &fw.profile.ipv4) {
        rc::receive(fw, dp, frame);
    } else {
        steering::receive(fw, dp, frame, from_td);
    }
}

/// Frames arriving from a link or a TAP.
pub(crate) fn poll_port(fw: &mut Firmware, dp: &mut Datapath) -> usize {
    let mut n = 0;
    if let PortMode::Link(end) = &dp.port.mode {
        let mut q = lock(&end.rx);
        std::mem::swap(&mut *q, &mut dp.incoming);
    }
    let mut incoming = std::mem::take(&mut dp.incoming);
    for f in incoming.drain(..) {
        capture(dp, &f);
        receive(fw, dp, &f, None);
        n += 1;
    }
    dp.incoming = incoming;
    if matches!(dp.port.mode, PortMode::Tap(_) | PortMode::Udp(_)) {
        let mut buf = std::mem::take(&mut dp.rx_buf);
        buf.resize(MAX_FRAME + 64, 0);
        for _ in 0..256 {
            let got = match &dp.port.mode {
                PortMode::Tap(tap) => tap.try_recv(&mut buf).ok().flatten(),
                PortMode::Udp(port) => port.try_recv(&mut buf).ok().flatten(),
                _ => None,
            };
            let Some(len) = got else {
                break;
            };
            capture(dp, &buf[..len]);
            receive(fw, dp, &buf[..len], None);
            n += 1;
        }
        dp.rx_buf = buf;
    }
    n
}
