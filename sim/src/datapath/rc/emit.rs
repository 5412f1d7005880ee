//! What the transport emits: completions into the QP's CQs, and frames to the peer (the
//! path from the QP's address vector; inside the device for force loopback, else the port).

use mlx5_dpa::mlx5::wire::cqe::opcode as cqe_op;
use mlx5_dpa::mlx5::wire::cqe::CqeWords;
use mlx5_dpa::mlx5::wire::{Completion, CompletionError, CompletionKind, Cqe64, Syndrome};

use crate::datapath::port;
use crate::port::roce::{self, Path};
use crate::state::datapath::Datapath;
use crate::state::objects::Qp;
use crate::state::Firmware;

// ---------------------------------------------------------------------------------------------
// CQEs.

/// A requester completion (the WQE opcode goes to `sop_drop_qpn[31:24]`).
pub(crate) fn req_cqe(wqe_opcode: u8, qpn: u32, wqe_counter: u16, byte_cnt: u32) -> [u8; 64] {
    Completion {
        kind: CompletionKind::Send { wqe_opcode },
        qpn,
        wqe_counter,
        byte_len: byte_cnt,
        imm: None,
    }
    .to_cqe()
}

/// A responder completion (the immediate as it came on the wire).
pub(crate) fn resp_cqe(
    kind: CompletionKind,
    byte_cnt: u32,
    imm: Option<[u8; 4]>,
    qpn: u32,
    wqe_counter: u16,
) -> [u8; 64] {
    Completion {
        kind,
        qpn,
        wqe_counter,
        byte_len: byte_cnt,
        imm: imm.map(u32::from_be_bytes),
    }
    .to_cqe()
}

/// An error completion.
pub(crate) fn err_cqe(
    requester: bool,
    syn: u8,
    wqe_opcode: u8,
    qpn: u32,
    wqe_counter: u16,
) -> [u8; 64] {
    CompletionError::Work {
        requester,
        syndrome: Syndrome::from_raw(syn),
        vendor_syndrome: 0,
        qpn,
        wqe_counter,
        wqe_opcode,
    }
    .to_cqe()
}

/// Posts a CQE of a QP (named in its `sop_drop_qpn`), stamped with the QP's `user_index` in
/// `srqn_uidx`, as CQE version 1 has it: software finds the QP (and, for a shared receive
/// queue, the WQE's owner) by that index (rdma-core's `mlx5_parse_cqe`).
pub(crate) fn post(fw: &mut Firmware, dp: &mut Datapath, cqn: Option<u32>, mut cqe: [u8; 64]) {
    let mut v = Cqe64::new_unchecked(&mut cqe[..]);
    if v.opcode() >= cqe_op::REQ_ERR {
        dp.rc_stats.error_completions += 1;
    }
    if let Some(qp) = fw.qps.get(v.qpn()) {
        v.set_srqn_uidx(qp.user_index);
    }
    if let Some(cqn) = cqn {
        crate::datapath::cq::post_cqe(fw, dp, cqn, &CqeWords::from_bytes(&cqe));
    }
}

// ---------------------------------------------------------------------------------------------
// The wire.

pub(crate) fn path(fw: &Firmware, qp: &Qp, qpn: u32) -> Path {
    let own_mac = fw.profile.mac;
    let own_ip = fw.profile.ipv4;
    let c = &qp.ctx;
    let (dmac, dip, ttl) = if c.fl {
        (own_mac, own_ip, 64)
    } else {
        (
            c.rmac,
            roce::gid_ipv4(&c.rgid).unwrap_or([0; 4]),
            if c.hop_limit == 0 { 64 } else { c.hop_limit },
        )
    };
    // RoCE v2 source ports come from 0xc000..=0xffff for entropy; the model derives one from
    // the two QP numbers unless the path names one.
    let sport = if c.udp_sport != 0 {
        c.udp_sport
    } else {
        0xc000 | ((qpn ^ c.remote_qpn) & 0x3fff) as u16
    };
    Path {
        smac: own_mac,
        dmac,
        sip: own_ip,
        dip,
        ttl,
        sport,
        mig: c.pm_state == 3,
    }
}

/// Sends a finished RC frame: inside the device for force loopback, else out of the port.
pub(crate) fn send_frame(fw: &mut Firmware, dp: &mut Datapath, fl: bool, frame: &[u8]) {
    dp.rc_stats.tx_packets += 1;
    if fl {
        port::capture(dp, frame);
        dp.enqueue_local(frame);
    } else {
        port::transmit(fw, dp, frame, None);
    }
}
