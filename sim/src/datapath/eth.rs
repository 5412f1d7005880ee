//! Ethernet send queues: executing send WQEs (NOP and SEND with inline headers and gather
//! lists) and their completions.

use mlx5_dpa::mlx5::wire::wqe::wqebbs;
use mlx5_dpa::mlx5::wire::wqe::{
    self as wqe_fmt, opcode, CtrlSeg, CtrlSegRepr, DataSeg, EthSeg, InlineSeg, SEG, WQEBB,
};
use mlx5_dpa::mlx5::wire::CompletionKind;

use crate::datapath::cq::post_cqe;
use crate::datapath::keys::translate;
use crate::datapath::port::transmit;
use crate::datapath::rq::{eth_cqe, eth_err_cqe};
use crate::state::datapath::*;
use crate::state::objects::*;
use crate::state::Firmware;
use mlx5_dpa::mlx5::wire::cqe::syndrome;

/// WQE basic blocks one SQ may consume per engine pass (fairness between queues).
const SQ_BUDGET: u16 = 1024;

/// Runs one SQ up to its doorbell record. Returns WQEs executed.
pub(crate) fn run_sq(fw: &mut Firmware, dp: &mut Datapath, sqn: u32) -> usize {
    let Some(sq) = fw.sqs.get_mut(sqn) else {
        return 0;
    };
    if sq.state != WqState::Rdy {
        return 0;
    }
    // Send doorbell record: dbrec[1] (MLX5_SND_DBR), 16-bit WQEBB counter.
    let Some(dbr_pi) = sq.wq.dbr.read_be32(4).map(|v| v as u16) else {
        return 0;
    };
    // WQEs are the device's once a doorbell announced them (hardware reads the record when
    // rung); posted without one they wait.
    if sq.doorbelled {
        sq.rung_pi = dbr_pi;
    } else if dbr_pi != sq.seen_pi {
        dp.port.stats.dbr_without_doorbell += 1;
    }
    sq.seen_pi = dbr_pi;
    sq.doorbelled = false;
    let pi = sq.rung_pi;
    if pi == sq.ci {
        return 0;
    }
    // What the loop needs of the SQ, read once: only this loop changes it (its consumer
    // counter, and its state on an error, both written back below), and nothing a frame
    // sets off (steering, delivery, completions, events) touches a send queue.
    let (wq, cqn, mut ci) = (sq.wq, sq.cqn, sq.ci);
    let td = fw.tises.get(sq.tis).map(|t| t.td);
    let mask = (1u32 << wq.log_size) - 1;
    let mut done = 0;
    let mut budget = SQ_BUDGET;
    let mut failed = false;
    let mut frame = std::mem::take(&mut dp.frame);
    frame.resize(MAX_FRAME, 0);
    // One WQE at a time: its WQEBBs are read into the front, and only they are used (not
    // zeroed again per WQE: 1 KiB of memset per small frame showed in the profiles).
    let mut wqe = [0u8; 16 * WQEBB];
    while budget > 0 && ci != pi {
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
                opcode::WAIT => match wait_on_time(&ctrl, &wqe[..ds * SEG]) {
                    // Not yet: the queue stops here and reads the WQE again next pass.
                    Ok(false) => break,
                    Ok(true) => Ok(0),
                    Err(syn) => Err(syn),
                },
                _ => Err(syndrome::LOCAL_QP_OP_ERR),
            }
        };
        ci = ci.wrapping_add(nbb);
        budget = budget.saturating_sub(nbb);
        done += 1;
        match result {
            Ok(len) => {
                if ctrl.opcode == opcode::SEND {
                    transmit(fw, dp, &frame[..len], td);
                }
                // A CQE when fm_ce_se asks for one on every WQE (not "first error" only).
                if ctrl.cq_update() {
                    let req = CompletionKind::Send { wqe_opcode: 0 };
                    post_cqe(fw, dp, cqn, &eth_cqe(req, 0, sqn, wqe_index));
                }
            }
            Err(syn) => {
                dp.port.stats.wqe_errors += 1;
                // The consumer counter first: the error CQE may be read at once.
                if let Some(sq) = fw.sqs.get_mut(sqn) {
                    sq.ci = ci;
                    sq.state = WqState::Err;
                }
                failed = true;
                post_cqe(fw, dp, cqn, &eth_err_cqe(true, syn, sqn, wqe_index));
                tracing::debug!(target: "mlx5_sim::engine", sqn, wqe_index, syndrome = syn, "send WQE error");
                break;
            }
        }
    }
    if !failed {
        if let Some(sq) = fw.sqs.get_mut(sqn) {
            sq.ci = ci;
        }
    }
    dp.frame = frame;
    done
}

/// The device's real-time clock in the PRM's real-time format: seconds in the upper 32 bits,
/// nanoseconds in the lower (the host's UTC clock stands for a PTP-synchronised one).
pub(crate) fn real_time_now() -> u64 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::SystemTime::UNIX_EPOCH)
        .unwrap_or_default();
    (t.as_secs() << 32) | u64::from(t.subsec_nanos())
}

/// A WAIT WQE on an Ethernet SQ: only wait-on-time (`opmod` TIME, capability `wait_on_time`),
/// its wait segment after the control segment. Whether the send queue may go on: the time has
/// come once the segment's value, masked, is `operation` against the real-time clock, masked
/// (DPDK's send scheduling waits with CYCLIC_SMALLER: the value cyclically smaller than the
/// clock). Which side of the comparison the clock is on is not public: provisional. An
/// unknown operation, another opmod or a short WQE is a local QP operation error.
fn wait_on_time(ctrl: &CtrlSegRepr, wqe: &[u8]) -> Result<bool, u8> {
    if ctrl.opmod != wqe_fmt::wait_opmod::TIME || wqe.len() < 3 * SEG {
        return Err(syndrome::LOCAL_QP_OP_ERR);
    }
    let ws = wqe_fmt::WaitSeg::new_unchecked(&wqe[SEG..3 * SEG]);
    wqe_fmt::wait_cond::holds(ws.operation(), ws.value(), real_time_now(), ws.mask())
        .ok_or(syndrome::LOCAL_QP_OP_ERR)
}

/// Builds the frame of an Ethernet SEND WQE into `frame` (at least [`MAX_FRAME`] bytes long,
/// its bytes overwritten, never cleared: zeroing a frame buffer per WQE showed in profiles):
/// inline headers then gathered data. Returns the frame's length.
fn build_frame(fw: &Firmware, pd: u32, wqe: &[u8], frame: &mut [u8]) -> Result<usize, u8> {
    let frame = frame
        .get_mut(..MAX_FRAME)
        .ok_or(syndrome::LOCAL_LENGTH_ERR)?;
    // The Ethernet segment follows the control segment; its inline headers start in its last
    // two bytes and run on into the segments after it.
    let eth = wqe.get(SEG..2 * SEG).ok_or(syndrome::LOCAL_QP_OP_ERR)?;
    let inline = usize::from(EthSeg::new_unchecked(eth).inline_hdr_sz());
    let hdr_start = SEG + wqe_fmt::ETH_INLINE_START;
    let hdr_end = hdr_start + inline;
    if hdr_end > wqe.len() || inline > MAX_FRAME {
        return Err(syndrome::LOCAL_LENGTH_ERR);
    }
    frame[..inline].copy_from_slice(&wqe[hdr_start..hdr_end]);
    let mut len = inline;
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
            let to = frame
                .get_mut(len..len + n)
                .ok_or(syndrome::LOCAL_LENGTH_ERR)?;
            to.copy_from_slice(data);
            len += n;
            at += (head + n).div_ceil(SEG) * SEG;
            continue;
        }
        let n = bc as usize;
        let (lkey, addr) = (seg.lkey(), seg.addr());
        at += SEG;
        if n == 0 {
            continue;
        }
        let to = frame
            .get_mut(len..len + n)
            .ok_or(syndrome::LOCAL_LENGTH_ERR)?;
        let dma = translate(fw, pd, lkey, addr, n, false)?;
        if !dma.read(0, to) {
            return Err(syndrome::LOCAL_PROT_ERR);
        }
        len += n;
    }
    if len < 14 {
        return Err(syndrome::LOCAL_LENGTH_ERR);
    }
    Ok(len)
}
