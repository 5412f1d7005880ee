//! Ethernet receive queues: a frame steering chose an RQ for is scattered into its next WQE
//! and completed; and the CQEs of Ethernet queues (send and receive).

use mlx5_dpa::mlx5::wire::cqe::{self as cqe_fmt, syndrome, CqeWords};
use mlx5_dpa::mlx5::wire::wqe::{self as wqe_fmt, DataSeg, SEG};
use mlx5_dpa::mlx5::wire::{Completion, CompletionError, CompletionKind, Syndrome};

use crate::datapath::cq::{post_cqe, post_rx_cqe};
use crate::datapath::keys::translate;
use crate::state::datapath::*;
use crate::state::objects::*;
use crate::state::Firmware;

/// A successful Ethernet completion: REQ on an SQ (no WQE opcode written; the model does
/// not report it for Ethernet SQs), RESP_SEND on an RQ.
#[inline]
pub(crate) fn eth_cqe(kind: CompletionKind, byte_len: u32, qpn: u32, wqe_counter: u16) -> CqeWords {
    Completion {
        kind,
        qpn,
        wqe_counter,
        byte_len,
        imm: None,
    }
    .to_words()
}

/// An Ethernet error completion (no vendor syndrome, no WQE opcode).
pub(crate) fn eth_err_cqe(requester: bool, syndrome: u8, qpn: u32, wqe_counter: u16) -> CqeWords {
    CqeWords::from_bytes(
        &CompletionError::Work {
            requester,
            syndrome: Syndrome::from_raw(syndrome),
            vendor_syndrome: 0,
            qpn,
            wqe_counter,
            wqe_opcode: 0,
        }
        .to_cqe(),
    )
}

pub(crate) fn deliver_rq(
    fw: &mut Firmware,
    dp: &mut Datapath,
    rqn: u32,
    frame: &[u8],
    flow_tag: u32,
    rss_hash: u32,
) {
    let Some(rq) = fw.rqs.get_mut(rqn) else {
        dp.port.stats.rx_no_buffer += 1;
        return;
    };
    if rq.state != WqState::Rdy {
        dp.port.stats.rx_no_buffer += 1;
        return;
    }
    // Receive doorbell record: dbrec[0] (MLX5_RCV_DBR), 16-bit WQE counter; read again only
    // when the WQEs it announced last are used up.
    let ci = rq.ci;
    if rq.posted == ci {
        rq.posted = rq.wq.dbr.read_be32(0).map(|v| v as u16).unwrap_or(ci);
    }
    if rq.posted == ci {
        rq.dropped += 1;
        let q_counter = rq.q_counter;
        if let Some(q) = fw.q_counters.get_mut(q_counter) {
            q.out_of_buffer = q.out_of_buffer.wrapping_add(1);
        }
        dp.port.stats.rx_no_buffer += 1;
        return;
    }
    // The WQE is consumed whatever becomes of the frame.
    rq.ci = ci.wrapping_add(1);
    let (wq, cqn) = (rq.wq, rq.cqn);
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
    match result {
        Ok(()) => {
            dp.port.stats.rx_delivered += 1;
            // Flow tag in sop_drop_qpn, as DPDK reads marks from Ethernet RQ CQEs.
            let mut cqe = eth_cqe(CompletionKind::Recv, frame.len() as u32, flow_tag, ci);
            // The RSS hash an indirect TIR chose the queue by (`rx_hash_res`, DPDK
            // `struct mlx5_cqe`; a mini CQE carries it too), which DPDK hands to the
            // application as the mbuf's RSS hash.
            cqe.or_be32(cqe_fmt::at::RX_HASH_RES, rss_hash);
            post_rx_cqe(fw, dp, cqn, &cqe);
        }
        Err(syn) => {
            dp.port.stats.rx_errors += 1;
            post_cqe(fw, dp, cqn, &eth_err_cqe(false, syn, rqn, ci));
        }
    }
}
