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

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use mlx5_dpa::mlx5::layout::{write_bits, View};
use mlx5_dpa::mlx5::layouts as l;
use mlx5_dpa::mlx5::wire::cqe::cqe64_offset;
use mlx5_dpa::mlx5::wire::wqe::{
    self as wqe_fmt, opcode, CtrlSeg, CtrlSegRepr, DataSeg, EthSeg, InlineSeg, SEG, WQEBB,
};
use mlx5_dpa::mlx5::wire::{Completion, CompletionError, CompletionKind, Cqe64, Event, Syndrome};
use mlx5_dpa::queues::ring::wqebbs;

use crate::events::{self, event_type, Subscription};
use crate::fw::{Firmware, ObjRef};
use crate::port::pcap::PcapWriter;
use crate::port::tap::Tap;
use crate::state::objects::*;
use crate::State;

/// Largest frame the port carries.
pub(crate) const MAX_FRAME: usize = 10240;
/// Frames waiting on a link before the far end drops them.
const LINK_QUEUE: usize = 8192;
/// WQE basic blocks one SQ may consume per engine pass (fairness between queues).
const SQ_BUDGET: u16 = 1024;

/// UAR register offsets (kernel `MLX5_CQ_DOORBELL`, `MLX5_BF_OFFSET` and its alternates).
const CQ_DOORBELL: usize = 0x20;
const SEND_DOORBELLS: [usize; 4] = [0x800, 0x900, 0xa00, 0xb00];

/// Error CQE syndromes (`MLX5_CQE_SYNDROME_*`), declared with the CQE format.
pub use mlx5_dpa::mlx5::wire::cqe::syndrome;

/// One end of a cable between two model devices.
#[derive(Debug, Clone)]
pub struct LinkEnd {
    tx: Arc<Mutex<VecDeque<Vec<u8>>>>,
    rx: Arc<Mutex<VecDeque<Vec<u8>>>>,
}

impl LinkEnd {
    pub(crate) fn pair() -> (LinkEnd, LinkEnd) {
        let a = Arc::new(Mutex::new(VecDeque::new()));
        let b = Arc::new(Mutex::new(VecDeque::new()));
        (
            LinkEnd {
                tx: Arc::clone(&b),
                rx: Arc::clone(&a),
            },
            LinkEnd { tx: a, rx: b },
        )
    }
}

/// What the port is connected to.
#[derive(Debug)]
pub enum PortMode {
    /// Frames sent come straight back in (the default).
    Loopback,
    /// A cable to another model device.
    Link(LinkEnd),
    /// A Linux TAP interface.
    Tap(Tap),
    /// Nothing: frames sent are dropped and counted.
    Down,
}

/// Port counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PortStats {
    /// Frames sent by SQs.
    pub tx_frames: u64,
    /// Bytes sent by SQs.
    pub tx_bytes: u64,
    /// Frames that entered receive steering.
    pub rx_frames: u64,
    /// Frames delivered into an RQ.
    pub rx_delivered: u64,
    /// Frames dropped by steering (no rule matched, or a drop rule).
    pub rx_steering_drops: u64,
    /// Frames dropped because the RQ had no posted WQE or was not ready.
    pub rx_no_buffer: u64,
    /// Frames dropped because the port was down or a link queue was full.
    pub tx_dropped: u64,
    /// Frames a TIR refused by its self-loopback block.
    pub rx_self_lb_blocked: u64,
    /// Send WQEs completed with an error CQE.
    pub wqe_errors: u64,
    /// Receive completions with an error CQE.
    pub rx_errors: u64,
    /// CQEs lost to a CQ overrun.
    pub cq_overruns: u64,
    /// SQs that ran because their doorbell record moved with no UAR doorbell seen.
    pub dbr_without_doorbell: u64,
    /// Completion events raised.
    pub events: u64,
}

pub(crate) struct Port {
    pub(crate) mode: PortMode,
    pub(crate) captures: Vec<PcapWriter<Box<dyn std::io::Write + Send>>>,
    pub(crate) stats: PortStats,
}

pub(crate) struct Datapath {
    pub(crate) port: Port,
    pub(crate) subs: Vec<Subscription>,
    ids: Vec<u32>,
    roots: Vec<u32>,
    frame: Vec<u8>,
    /// Scratch of one pass (kept to avoid allocating on the datapath).
    doorbells: Vec<(u32, u32, [u8; 8])>,
    incoming: VecDeque<Vec<u8>>,
    rx_buf: Vec<u8>,
    /// RC transport (`crate::rc`): its frame scratch, QP list scratch, frames delivered
    /// inside the device and their recycled buffers, counters.
    pub(crate) rc_frame: Vec<u8>,
    pub(crate) qp_ids: Vec<u32>,
    pub(crate) rc_local: VecDeque<Vec<u8>>,
    pub(crate) rc_pool: Vec<Vec<u8>>,
    pub(crate) rc_stats: crate::state::rc::RcStats,
}

impl Datapath {
    pub(crate) fn new() -> Self {
        Datapath {
            port: Port {
                mode: PortMode::Loopback,
                captures: Vec::new(),
                stats: PortStats::default(),
            },
            subs: Vec::new(),
            ids: Vec::new(),
            roots: Vec::new(),
            frame: Vec::with_capacity(MAX_FRAME),
            doorbells: Vec::new(),
            incoming: VecDeque::new(),
            rx_buf: Vec::new(),
            rc_frame: Vec::with_capacity(MAX_FRAME),
            qp_ids: Vec::new(),
            rc_local: VecDeque::new(),
            rc_pool: Vec::new(),
            rc_stats: crate::state::rc::RcStats::default(),
        }
    }
}

/// One engine pass.
pub(crate) fn step(st: &mut State) -> usize {
    let mut work = 0;
    let State { fw, dp } = st;
    // 1. UAR doorbells.
    let mut arms = std::mem::take(&mut dp.doorbells);
    arms.clear();
    for (page_id, page) in fw.uars.iter() {
        if let Some(v) = page.take(CQ_DOORBELL) {
            arms.push((page_id, 0, v));
        }
        for off in SEND_DOORBELLS {
            if let Some(v) = page.take(off) {
                arms.push((page_id, 1, v));
            }
        }
    }
    for &(page, kind, v) in &arms {
        work += 1;
        let hi = u32::from_be_bytes([v[0], v[1], v[2], v[3]]);
        let lo = u32::from_be_bytes([v[4], v[5], v[6], v[7]]);
        if kind == 0 {
            arm_cq(fw, dp, page, lo & 0xff_ffff, hi & 0xff_ffff);
        } else {
            // qpn_ds / sqn_ds: the number names an SQ or a QP of this page (their number
            // spaces start at 0x1000 and 0x4000).
            let n = lo >> 8;
            if let Some(sq) = fw.sqs.get_mut(n) {
                if sq.wq.uar_page == page {
                    sq.doorbelled = true;
                }
            }
            if let Some(qp) = fw.qps.get_mut(n) {
                if qp.uar_page == page {
                    qp.rc.doorbelled = true;
                }
            }
        }
    }
    dp.doorbells = arms;
    // 2. Steering roots for this pass (tables cannot change while the lock is held).
    compute_roots(fw, &mut dp.roots);
    // 3. Send queues.
    dp.ids.clear();
    dp.ids.extend(fw.sqs.iter().map(|(id, _)| id));
    let ids = std::mem::take(&mut dp.ids);
    for &sqn in &ids {
        work += run_sq(fw, dp, sqn);
    }
    dp.ids = ids;
    // 4. RC queue pairs: responses, timers, send WQEs, completions, flushes.
    let now = Instant::now();
    work += crate::datapath::rc::run(fw, dp, now);
    // 5. Frames arriving from outside, then RC frames delivered inside the device.
    work += poll_port(fw, dp);
    work += crate::datapath::rc::drain_local(fw, dp);
    // 6. Moderation timers.
    dp.ids.clear();
    dp.ids.extend(fw.cqs.iter().filter_map(|(id, c)| {
        let due = c.armed.is_some()
            && c.period > 0
            && c.first_pending.is_some_and(|t| {
                now.duration_since(t) >= Duration::from_micros(u64::from(c.period))
            });
        due.then_some(id)
    }));
    let ids = std::mem::take(&mut dp.ids);
    for &cqn in &ids {
        fire(fw, dp, cqn);
        work += 1;
    }
    dp.ids = ids;
    work
}

fn compute_roots(fw: &Firmware, roots: &mut Vec<u32>) {
    roots.clear();
    if let Some(r) = fw.root_table {
        roots.push(r);
        return;
    }
    // Without a root set by the kernel, every NIC RX table that is not itself a forward
    // target is a root, by level then age: what the kernel's bypass namespace does for DevX
    // tables hooked with a flow rule.
    roots.extend(
        fw.tables
            .iter()
            .filter(|(_, t)| {
                t.meta.refs == 0 && t.table_type == crate::fw::steering::TABLE_TYPE_NIC_RX
            })
            .map(|(id, _)| id),
    );
    roots.sort_unstable_by_key(|id| fw.tables.get(*id).map(|t| (t.level, t.created)));
}

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
fn fire(fw: &mut Firmware, dp: &mut Datapath, cqn: u32) {
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
            events::deliver(
                &mut dp.subs,
                ObjRef::Cq(cqn),
                event_type::COMP,
                &Event::Completion { cqn }.to_eqe(),
            );
        }
        CqTarget::DpaThread(t) => {
            tracing::trace!(target: "mlx5_sim::engine", cqn, dpa_thread = t, "DPA completion event");
            fw.dpa_event(t);
        }
        CqTarget::DpaEq(t) => {
            // EQEs into a DPA EQ are not modelled (DESIGN.md, "The model's DPA"): the event
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
    if used >= size && !cq.oi {
        cq.status = CqStatus::Overflow;
        dp.port.stats.cq_overruns += 1;
        events::deliver(
            &mut dp.subs,
            ObjRef::Cq(cqn),
            event_type::CQ_ERROR,
            &Event::CqError { cqn, syndrome: 1 }.to_eqe(),
        );
        return false;
    }
    let idx = (cq.pi & (size - 1)) as usize;
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

/// A successful Ethernet completion: REQ on an SQ (no WQE opcode written; the model does
/// not report it for Ethernet SQs), RESP_SEND on an RQ.
fn eth_cqe(kind: CompletionKind, byte_len: u32, qpn: u32, wqe_counter: u16) -> [u8; 64] {
    Completion {
        kind,
        qpn,
        wqe_counter,
        byte_len,
        imm: None,
    }
    .to_cqe()
}

/// An Ethernet error completion (no vendor syndrome, no WQE opcode).
fn eth_err_cqe(requester: bool, syndrome: u8, qpn: u32, wqe_counter: u16) -> [u8; 64] {
    CompletionError::Work {
        requester,
        syndrome: Syndrome::from_raw(syndrome),
        vendor_syndrome: 0,
        qpn,
        wqe_counter,
        wqe_opcode: 0,
    }
    .to_cqe()
}

/// Resolves `lkey` for `len` bytes at `addr` on behalf of a queue in `pd`.
pub(crate) fn translate(
    fw: &Firmware,
    pd: u32,
    lkey: u32,
    addr: u64,
    len: usize,
    write: bool,
) -> Result<crate::mem::Dma, u8> {
    let m = fw
        .mkeys
        .get(lkey >> 8)
        .filter(|m| m.key == lkey)
        .ok_or(syndrome::LOCAL_PROT_ERR)?;
    // Gathers need local read (`lr`), scatters local write (`lw`).
    if m.pd != pd || (write && !m.lw) || (!write && !m.lr) {
        return Err(syndrome::LOCAL_PROT_ERR);
    }
    let off = addr.checked_sub(m.start).ok_or(syndrome::LOCAL_PROT_ERR)?;
    if off.checked_add(len as u64).is_none_or(|end| end > m.len) {
        return Err(syndrome::LOCAL_PROT_ERR);
    }
    m.dma.sub(off as usize, len).ok_or(syndrome::LOCAL_PROT_ERR)
}

/// Runs one SQ up to its doorbell record. Returns WQEs executed.
fn run_sq(fw: &mut Firmware, dp: &mut Datapath, sqn: u32) -> usize {
    let Some(sq) = fw.sqs.get_mut(sqn) else {
        return 0;
    };
    if sq.state != wq_state::RDY {
        return 0;
    }
    // Send doorbell record: dbrec[1] (MLX5_SND_DBR), 16-bit WQEBB counter.
    let Some(pi) = sq.wq.dbr.read_be32(4).map(|v| v as u16) else {
        return 0;
    };
    if pi == sq.ci {
        sq.doorbelled = false;
        return 0;
    }
    if !sq.doorbelled {
        dp.port.stats.dbr_without_doorbell += 1;
    }
    sq.doorbelled = false;
    let mut done = 0;
    let mut budget = SQ_BUDGET;
    let mut frame = std::mem::take(&mut dp.frame);
    while budget > 0 {
        let Some(sq) = fw.sqs.get(sqn) else { break };
        if sq.ci == pi || sq.state != wq_state::RDY {
            break;
        }
        let wq = sq.wq;
        let (ci, cqn, tis) = (sq.ci, sq.cqn, sq.tis);
        let mask = (1u32 << wq.log_size) - 1;
        let mut wqe = [0u8; 16 * WQEBB];
        let bb = |i: u16| ((u32::from(ci.wrapping_add(i)) & mask) as usize) * WQEBB;
        wq.ring.read(bb(0), &mut wqe[..WQEBB]);
        let ctrl = CtrlSegRepr::parse(&CtrlSeg::new_unchecked(&wqe[..SEG]));
        let (wqe_index, qpn, ds) = (ctrl.wqe_index, ctrl.qpn, usize::from(ctrl.ds));
        let nbb = wqebbs(ds);
        for i in 1..nbb.min(16) {
            let at = usize::from(i) * WQEBB;
            wq.ring.read(bb(i), &mut wqe[at..at + WQEBB]);
        }
        let result: Result<usize, u8> = if ds == 0 || qpn != sqn || nbb > 16 {
            Err(syndrome::LOCAL_QP_OP_ERR)
        } else {
            match ctrl.opcode {
                opcode::NOP => Ok(0),
                opcode::SEND => build_frame(fw, wq.pd, &wqe[..ds * SEG], &mut frame),
                _ => Err(syndrome::LOCAL_QP_OP_ERR),
            }
        };
        if let Some(sq) = fw.sqs.get_mut(sqn) {
            sq.ci = ci.wrapping_add(nbb);
        }
        budget = budget.saturating_sub(nbb);
        done += 1;
        match result {
            Ok(len) => {
                if ctrl.opcode == opcode::SEND {
                    let td = fw.tises.get(tis).map(|t| t.td);
                    transmit(fw, dp, &frame[..len], td);
                }
                // A CQE when fm_ce_se asks for one on every WQE (not "first error" only).
                if ctrl.cq_update() {
                    let req = CompletionKind::Send { wqe_opcode: 0 };
                    post_cqe(fw, dp, cqn, eth_cqe(req, 0, sqn, wqe_index));
                }
            }
            Err(syn) => {
                dp.port.stats.wqe_errors += 1;
                post_cqe(fw, dp, cqn, eth_err_cqe(true, syn, sqn, wqe_index));
                if let Some(sq) = fw.sqs.get_mut(sqn) {
                    sq.state = wq_state::ERR;
                }
                tracing::debug!(target: "mlx5_sim::engine", sqn, wqe_index, syndrome = syn, "send WQE error");
                break;
            }
        }
    }
    dp.frame = frame;
    done
}

/// Builds the frame of an Ethernet SEND WQE: inline headers then gathered data.
fn build_frame(fw: &Firmware, pd: u32, wqe: &[u8], frame: &mut Vec<u8>) -> Result<usize, u8> {
    frame.clear();
    // The Ethernet segment follows the control segment; its inline headers start in its last
    // two bytes and run on into the segments after it.
    let eth = wqe.get(SEG..2 * SEG).ok_or(syndrome::LOCAL_QP_OP_ERR)?;
    let inline = usize::from(EthSeg::new_unchecked(eth).inline_hdr_sz());
    let hdr_start = SEG + wqe_fmt::ETH_INLINE_START;
    let hdr_end = hdr_start + inline;
    if hdr_end > wqe.len() {
        return Err(syndrome::LOCAL_LENGTH_ERR);
    }
    frame.extend_from_slice(&wqe[hdr_start..hdr_end]);
    // Data segments start at the next 16-byte boundary.
    let mut at = 2 * SEG
        + inline
            .saturating_sub(SEG - wqe_fmt::ETH_INLINE_START)
            .div_ceil(SEG)
            * SEG;
    while at + SEG <= wqe.len() {
        let seg = DataSeg::new_unchecked(&wqe[at..at + SEG]);
        let bc = seg.byte_count();
        if bc & wqe_fmt::INLINE_SEG != 0 {
            // Inline data segment: the data follows the 4-byte byte count.
            let n = (bc & wqe_fmt::INLINE_BYTE_COUNT_MASK) as usize;
            let head = InlineSeg::<&[u8]>::SIZE;
            let data = wqe
                .get(at + head..at + head + n)
                .ok_or(syndrome::LOCAL_LENGTH_ERR)?;
            if frame.len() + n > MAX_FRAME {
                return Err(syndrome::LOCAL_LENGTH_ERR);
            }
            frame.extend_from_slice(data);
            at += (head + n).div_ceil(SEG) * SEG;
            continue;
        }
        let len = bc as usize;
        let (lkey, addr) = (seg.lkey(), seg.addr());
        at += SEG;
        if len == 0 {
            continue;
        }
        if frame.len() + len > MAX_FRAME {
            return Err(syndrome::LOCAL_LENGTH_ERR);
        }
        let dma = translate(fw, pd, lkey, addr, len, false)?;
        let start = frame.len();
        frame.resize(start + len, 0);
        if !dma.read(0, &mut frame[start..]) {
            return Err(syndrome::LOCAL_PROT_ERR);
        }
    }
    if frame.len() < 14 {
        return Err(syndrome::LOCAL_LENGTH_ERR);
    }
    Ok(frame.len())
}

pub(crate) fn capture(dp: &mut Datapath, frame: &[u8]) {
    if dp.port.captures.is_empty() {
        return;
    }
    let ts = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default();
    dp.port
        .captures
        .retain_mut(|c| match c.write_frame(ts, frame) {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!(target: "mlx5_sim::engine", "pcap capture dropped: {e}");
                false
            }
        });
}

/// Sends a frame out of the port. `td` is the sender's transport domain (self-loopback).
pub(crate) fn transmit(fw: &mut Firmware, dp: &mut Datapath, frame: &[u8], td: Option<u32>) {
    dp.port.stats.tx_frames += 1;
    dp.port.stats.tx_bytes += frame.len() as u64;
    capture(dp, frame);
    match &dp.port.mode {
        // RC frames coming back are queued, not handled here: the RC receiver answers, and
        // its answers must not recurse into the sender.
        PortMode::Loopback if crate::datapath::rc::is_for_us(fw, frame) => {
            crate::datapath::rc::enqueue_local(dp, frame)
        }
        PortMode::Loopback => receive(fw, dp, frame, td),
        PortMode::Link(end) => {
            let mut q = end.tx.lock().unwrap_or_else(|e| e.into_inner());
            if q.len() >= LINK_QUEUE {
                dp.port.stats.tx_dropped += 1;
            } else {
                q.push_back(frame.to_vec());
            }
        }
        PortMode::Tap(tap) => {
            if tap.send(frame).is_err() {
                dp.port.stats.tx_dropped += 1;
            }
        }
        PortMode::Down => dp.port.stats.tx_dropped += 1,
    }
}

/// Frames arriving from a link or a TAP.
fn poll_port(fw: &mut Firmware, dp: &mut Datapath) -> usize {
    let mut n = 0;
    if let PortMode::Link(end) = &dp.port.mode {
        let mut q = end.rx.lock().unwrap_or_else(|e| e.into_inner());
        std::mem::swap(&mut *q, &mut dp.incoming);
    }
    let mut incoming = std::mem::take(&mut dp.incoming);
    for f in incoming.drain(..) {
        capture(dp, &f);
        receive(fw, dp, &f, None);
        n += 1;
    }
    dp.incoming = incoming;
    if matches!(dp.port.mode, PortMode::Tap(_)) {
        let mut buf = std::mem::take(&mut dp.rx_buf);
        buf.resize(MAX_FRAME + 64, 0);
        for _ in 0..256 {
            let PortMode::Tap(tap) = &dp.port.mode else {
                break;
            };
            let Ok(Some(len)) = tap.try_recv(&mut buf) else {
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

/// The outer-header image of a frame, laid out as `fte_match_set_lyr_2_4`.
fn match_image(frame: &[u8]) -> [u8; 64] {
    let mut m = [0u8; 64];
    if frame.len() < 14 {
        return m;
    }
    m[8..14].copy_from_slice(&frame[0..6]); // dmac
    m[0..6].copy_from_slice(&frame[6..12]); // smac
    let mut ethertype = u16::from_be_bytes([frame[12], frame[13]]);
    let mut l3 = 14;
    if ethertype == 0x8100 && frame.len() >= 18 {
        write_bits(&mut m, 0x90, 1, 1); // cvlan_tag
        m[14..16].copy_from_slice(&frame[14..16]); // prio, cfi, vid
        ethertype = u16::from_be_bytes([frame[16], frame[17]]);
        l3 = 18;
    }
    m[6..8].copy_from_slice(&ethertype.to_be_bytes());
    let ip = &frame[l3..];
    let (proto, l4) = match ethertype {
        0x0800 if ip.len() >= 20 => {
            let ihl = (ip[0] & 0xf) as usize * 4;
            write_bits(&mut m, 0x93, 4, 4); // ip_version
            write_bits(&mut m, 0xd0, 4, u64::from(ip[0] & 0xf)); // ipv4_ihl
            m[17] = ip[1]; // dscp, ecn
            m[27] = ip[8]; // ttl
            m[16] = ip[9];
            m[44..48].copy_from_slice(&ip[12..16]);
            m[60..64].copy_from_slice(&ip[16..20]);
            let frag = u16::from_be_bytes([ip[6], ip[7]]) & 0x3fff != 0;
            if frag {
                write_bits(&mut m, 0x92, 1, 1);
            }
            (ip[9], if frag { None } else { ip.get(ihl..) })
        }
        0x86dd if ip.len() >= 40 => {
            write_bits(&mut m, 0x93, 4, 6);
            m[17] = ((u16::from_be_bytes([ip[0], ip[1]]) >> 4) & 0xff) as u8;
            m[27] = ip[7];
            m[16] = ip[6];
            m[32..48].copy_from_slice(&ip[8..24]);
            m[48..64].copy_from_slice(&ip[24..40]);
            (ip[6], ip.get(40..))
        }
        _ => (0, None),
    };
    if let Some(l4) = l4 {
        if l4.len() >= 4 {
            match proto {
                6 => {
                    m[20..24].copy_from_slice(&l4[0..4]);
                    if l4.len() >= 14 {
                        let flags = u16::from_be_bytes([l4[12], l4[13]]) & 0x1ff;
                        write_bits(&mut m, 0x97, 9, u64::from(flags));
                    }
                }
                17 => m[28..32].copy_from_slice(&l4[0..4]),
                _ => {}
            }
        }
    }
    m
}

fn matches(value: &[u8; 64], mask: &[u8; 64], image: &[u8; 64]) -> bool {
    value
        .iter()
        .zip(mask)
        .zip(image)
        .all(|((v, m), i)| i & m == *v)
}

/// What steering decided.
enum Verdict {
    Tir(u32, u32),
    Drop,
}

fn steer(fw: &mut Firmware, roots: &[u32], image: &[u8; 64]) -> Verdict {
    for &root in roots {
        let mut table = root;
        for _depth in 0..8 {
            let Some(t) = fw.tables.get(table) else { break };
            let mut hit = None;
            'groups: for g in &t.groups {
                let Some(grp) = fw.groups.get(*g) else {
                    continue;
                };
                for (idx, e) in t.entries.range(grp.start..=grp.end) {
                    if e.group == *g && matches(&e.value, &grp.mask, image) {
                        hit = Some(*idx);
                        break 'groups;
                    }
                }
            }
            let Some(idx) = hit else {
                if let Some(t) = fw.tables.get_mut(table) {
                    t.misses += 1;
                }
                break;
            };
            let Some(e) = fw
                .tables
                .get_mut(table)
                .and_then(|t| t.entries.get_mut(&idx))
            else {
                break;
            };
            e.hits += 1;
            if e.action & crate::fw::steering::action::DROP != 0 {
                return Verdict::Drop;
            }
            match e.dests.first().copied() {
                Some(Dest::Tir(tir)) => return Verdict::Tir(tir, e.flow_tag),
                Some(Dest::Table(next)) => table = next,
                None => return Verdict::Drop,
            }
        }
    }
    Verdict::Drop
}

/// Receive path: RoCE v2 to the port's addresses goes to the RC transport; everything else
/// to steering, TIR, RQ, CQE.
fn receive(fw: &mut Firmware, dp: &mut Datapath, frame: &[u8], from_td: Option<u32>) {
    if crate::datapath::rc::is_for_us(fw, frame) {
        crate::datapath::rc::receive(fw, dp, frame);
        return;
    }
    dp.port.stats.rx_frames += 1;
    let image = match_image(frame);
    let roots = std::mem::take(&mut dp.roots);
    let verdict = steer(fw, &roots, &image);
    dp.roots = roots;
    let (tirn, flow_tag) = match verdict {
        Verdict::Tir(t, tag) => (t, tag),
        Verdict::Drop => {
            dp.port.stats.rx_steering_drops += 1;
            return;
        }
    };
    let Some(tir) = fw.tirs.get(tirn) else {
        dp.port.stats.rx_steering_drops += 1;
        return;
    };
    if from_td == Some(tir.td) {
        // self_lb_block: bit 0 unicast, bit 1 multicast (dmac group bit).
        let multicast = frame[0] & 1 == 1;
        let block = if multicast {
            tir.self_lb_block & 2 != 0
        } else {
            tir.self_lb_block & 1 != 0
        };
        if block {
            dp.port.stats.rx_self_lb_blocked += 1;
            return;
        }
    }
    let rqn = match tir.dispatch {
        Dispatch::Direct(rq) => rq,
        Dispatch::Indirect(rqt) => {
            let Some(rqt) = fw.rqts.get(rqt) else { return };
            let h = rss_hash(&tir.raw, &image);
            rqt.rqs[(h as usize) % rqt.rqs.len().max(1)]
        }
    };
    deliver_rq(fw, dp, rqn, frame, flow_tag);
}

/// RSS: Toeplitz over the selected outer fields when `rx_hash_fn` is Toeplitz (2), else a fold.
fn rss_hash(tir_raw: &[u8], image: &[u8; 64]) -> u32 {
    // tir_raw holds create_tir_in from byte 0x10; tirc starts at byte 0x20 of the inbox.
    let Some(ctx) = tir_raw.get(0x10..) else {
        return 0;
    };
    let Ok(v) = View::<l::tirc::Layout>::new(ctx) else {
        return 0;
    };
    let sel =
        v.get(l::tirc::rx_hash_field_selector_outer.at(l::rx_hash_field_select::selected_fields));
    let mut input = HashInput::default();
    let v4 = image[18] >> 1 & 0xf == 4;
    let (src, dst) = if v4 {
        (&image[44..48], &image[60..64])
    } else {
        (&image[32..48], &image[48..64])
    };
    // selected_fields bits (MLX5_HASH_FIELD_SEL_*): 0 src ip, 1 dst ip, 2 l4 sport, 3 l4 dport.
    if sel & 1 != 0 {
        input.extend_from_slice(src);
    }
    if sel & 2 != 0 {
        input.extend_from_slice(dst);
    }
    let l4 = if image[16] == 6 {
        &image[20..24]
    } else {
        &image[28..32]
    };
    if sel & 4 != 0 {
        input.extend_from_slice(&l4[0..2]);
    }
    if sel & 8 != 0 {
        input.extend_from_slice(&l4[2..4]);
    }
    if v.get(l::tirc::rx_hash_fn) == 2 {
        let at = l::tirc::rx_hash_toeplitz_key
            .at(0)
            .map_or(0x28, |f| (f.offset() / 8) as usize);
        let key = ctx.get(at..at + 40).unwrap_or(&[0; 40]);
        toeplitz(key, input.bytes())
    } else {
        input
            .bytes()
            .iter()
            .fold(0u32, |a, b| a.rotate_left(5) ^ u32::from(*b))
    }
}

/// The bytes RSS hashes (at most two IPv6 addresses and two ports), without allocating.
struct HashInput {
    buf: [u8; 36],
    len: usize,
}

impl Default for HashInput {
    fn default() -> Self {
        HashInput {
            buf: [0; 36],
            len: 0,
        }
    }
}

impl HashInput {
    fn extend_from_slice(&mut self, b: &[u8]) {
        let end = (self.len + b.len()).min(self.buf.len());
        self.buf[self.len..end].copy_from_slice(&b[..end - self.len]);
        self.len = end;
    }
    fn bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

/// The Toeplitz hash (Microsoft RSS specification).
pub(crate) fn toeplitz(key: &[u8], input: &[u8]) -> u32 {
    let bit = |i: usize| {
        key.get(i / 8)
            .map_or(0u32, |b| u32::from(b >> (7 - i % 8) & 1))
    };
    let mut window: u32 = (0..32).fold(0, |w, i| (w << 1) | bit(i));
    let mut result = 0;
    for (n, byte) in input.iter().enumerate() {
        for b in 0..8 {
            if byte >> (7 - b) & 1 == 1 {
                result ^= window;
            }
            window = (window << 1) | bit(32 + n * 8 + b);
        }
    }
    result
}

fn deliver_rq(fw: &mut Firmware, dp: &mut Datapath, rqn: u32, frame: &[u8], flow_tag: u32) {
    let Some(rq) = fw.rqs.get(rqn) else {
        dp.port.stats.rx_no_buffer += 1;
        return;
    };
    if rq.state != wq_state::RDY {
        dp.port.stats.rx_no_buffer += 1;
        return;
    }
    // Receive doorbell record: dbrec[0] (MLX5_RCV_DBR), 16-bit WQE counter.
    let posted = rq.wq.dbr.read_be32(0).map(|v| v as u16).unwrap_or(rq.ci);
    if posted == rq.ci {
        if let Some(rq) = fw.rqs.get_mut(rqn) {
            rq.dropped += 1;
        }
        dp.port.stats.rx_no_buffer += 1;
        return;
    }
    let wq = rq.wq;
    let (ci, cqn) = (rq.ci, rq.cqn);
    let stride = 1usize << wq.log_stride;
    let slot = (u32::from(ci) & ((1u32 << wq.log_size) - 1)) as usize * stride;
    let mut result: Result<(), u8> = Ok(());
    let mut left = frame;
    let mut wqe = [0u8; SEG];
    for s in 0..stride / SEG {
        if left.is_empty() {
            break;
        }
        wq.ring.read(slot + s * SEG, &mut wqe);
        let seg = DataSeg::new_unchecked(&wqe[..]);
        let (bc, lkey, addr) = (seg.byte_count() as usize, seg.lkey(), seg.addr());
        // MLX5_INVALID_LKEY ends the scatter list.
        if lkey == wqe_fmt::INVALID_LKEY {
            break;
        }
        if bc == 0 {
            continue;
        }
        let n = bc.min(left.len());
        match translate(fw, wq.pd, lkey, addr, n, true) {
            Ok(dma) => {
                dma.write(0, &left[..n]);
                left = &left[n..];
            }
            Err(e) => {
                result = Err(e);
                break;
            }
        }
    }
    if result.is_ok() && !left.is_empty() {
        result = Err(syndrome::LOCAL_LENGTH_ERR);
    }
    if let Some(rq) = fw.rqs.get_mut(rqn) {
        rq.ci = ci.wrapping_add(1);
    }
    match result {
        Ok(()) => {
            dp.port.stats.rx_delivered += 1;
            // Flow tag in sop_drop_qpn, as DPDK reads marks from Ethernet RQ CQEs.
            post_cqe(
                fw,
                dp,
                cqn,
                eth_cqe(CompletionKind::Recv, frame.len() as u32, flow_tag, ci),
            );
        }
        Err(syn) => {
            dp.port.stats.rx_errors += 1;
            post_cqe(fw, dp, cqn, eth_err_cqe(false, syn, rqn, ci));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toeplitz_matches_the_rss_verification_suite() {
        // Microsoft RSS verification: the well-known key and the IPv4-only vector
        // 66.9.149.187 -> 161.142.100.80 gives 0x323e8fc2.
        let key: [u8; 40] = [
            0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3,
            0x8f, 0xb0, 0xd0, 0xca, 0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3,
            0x80, 0x30, 0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa,
        ];
        let input = [66, 9, 149, 187, 161, 142, 100, 80];
        assert_eq!(toeplitz(&key, &input), 0x323e_8fc2);
        let with_ports = [66, 9, 149, 187, 161, 142, 100, 80, 0x0a, 0xea, 0x06, 0xe6];
        assert_eq!(toeplitz(&key, &with_ports), 0x51cc_c178);
    }

    #[test]
    fn match_image_places_fields_like_the_layout() {
        use mlx5_dpa::mlx5::layouts::fte_match_set_lyr_2_4 as m;
        let mut f = vec![0u8; 42];
        f[0..6].copy_from_slice(&[2, 0, 0, 0, 0, 2]);
        f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
        f[12..14].copy_from_slice(&[0x08, 0x00]);
        f[14] = 0x45;
        f[22] = 64;
        f[23] = 17;
        f[26..30].copy_from_slice(&[10, 0, 0, 1]);
        f[30..34].copy_from_slice(&[10, 0, 0, 2]);
        f[34..36].copy_from_slice(&1234u16.to_be_bytes());
        f[36..38].copy_from_slice(&4791u16.to_be_bytes());
        let img = match_image(&f);
        let v = View::<m::Layout>::new(&img).unwrap();
        assert_eq!(v.get(m::dmac_47_16), 0x0200_0000);
        assert_eq!(v.get(m::dmac_15_0), 0x0002);
        assert_eq!(v.get(m::smac_15_0), 0x0001);
        assert_eq!(v.get(m::ethertype), 0x0800);
        assert_eq!(v.get(m::ip_version), 4);
        assert_eq!(v.get(m::ip_protocol), 17);
        assert_eq!(v.get(m::ip_ttl_hoplimit), 64);
        assert_eq!(v.get(m::udp_sport), 1234);
        assert_eq!(v.get(m::udp_dport), 4791);
        let dst: Vec<u64> = (12..16)
            .map(|i| v.get(m::dst_ipv4_dst_ipv6.at(i).unwrap()))
            .collect();
        assert_eq!(dst, [10, 0, 0, 2]);
    }
}
