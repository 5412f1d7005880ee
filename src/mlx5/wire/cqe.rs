//! Completion queue entries: `struct mlx5_cqe64` and `struct mlx5_err_cqe` (rdma-core
//! `providers/mlx5/mlx5dv.h`; DPDK `struct mlx5_cqe` / `mlx5_error_cqe` in
//! `drivers/common/mlx5/mlx5_prm.h`), their opcodes and error syndromes.
//!
//! A 128-byte CQE (`cqc.cqe_sz` = 1) carries the 64-byte CQE in its second half ([`Cqe128`]).
//! [`Completion::parse`] / [`Completion::emit`] turn a CQE into what it reports and back; the
//! driver's poll path uses [`decode_words`], the same decode over 8-byte words it loads itself,
//! at the offsets declared here. [`Completion::to_words`] builds a CQE in registers as
//! [`CqeWords`], for code that hands it on to be stored (the device model).

use super::{byte_at, wire_view, ShortBuffer};
use crate::layout;

layout! {
    /// `mlx5_cqe64`; offsets and widths as in rdma-core `providers/mlx5/mlx5dv.h` (the
    /// leading union's first member; the tag-matching members are not declared).
    pub mlx5_cqe64: 0x200 {
        wqe_id @ 0x10 : 0x10,
        ml_path @ 0x88 : 0x8,
        slid @ 0xb0 : 0x10,
        flags_rqpn @ 0xc0 : 0x20,
        hds_ip_ext @ 0xe0 : 0x8,
        l4_hdr_type_etc @ 0xe8 : 0x8,
        vlan_info @ 0xf0 : 0x10,
        srqn_uidx @ 0x100 : 0x20,
        imm_inval_pkey @ 0x120 : 0x20,
        app @ 0x140 : 0x8,
        app_op @ 0x148 : 0x8,
        app_info @ 0x150 : 0x10,
        byte_cnt @ 0x160 : 0x20,
        timestamp @ 0x180 : 0x40,
        sop_drop_qpn @ 0x1c0 : 0x20,
        wqe_counter @ 0x1e0 : 0x10,
        signature @ 0x1f0 : 0x8,
        op_own @ 0x1f8 : 0x8,
    }
}

layout! {
    /// `mlx5_err_cqe`; offsets and widths as in rdma-core `providers/mlx5/mlx5dv.h`, with
    /// `hw_err_synd` / `hw_synd_type` from DPDK `struct mlx5_error_cqe`.
    pub mlx5_err_cqe: 0x200 {
        srqn @ 0x100 : 0x20,
        hw_err_synd @ 0x1a0 : 0x8,
        hw_synd_type @ 0x1a8 : 0x8,
        vendor_err_synd @ 0x1b0 : 0x8,
        syndrome @ 0x1b8 : 0x8,
        s_wqe_opcode_qpn @ 0x1c0 : 0x20,
        wqe_counter @ 0x1e0 : 0x10,
        signature @ 0x1f0 : 0x8,
        op_own @ 0x1f8 : 0x8,
    }
}

/// Size of a 64-byte CQE.
pub const CQE_SIZE: usize = 64;
/// Size of a 128-byte CQE.
pub const CQE128_SIZE: usize = 128;

/// Byte offsets the poll path loads by hand, from the declarations above.
pub mod at {
    use super::{byte_at, mlx5_cqe64, mlx5_err_cqe};
    pub const IMM_INVAL_PKEY: usize = byte_at(mlx5_cqe64::imm_inval_pkey);
    pub const BYTE_CNT: usize = byte_at(mlx5_cqe64::byte_cnt);
    pub const SOP_DROP_QPN: usize = byte_at(mlx5_cqe64::sop_drop_qpn);
    pub const WQE_COUNTER: usize = byte_at(mlx5_cqe64::wqe_counter);
    pub const OP_OWN: usize = byte_at(mlx5_cqe64::op_own);
    pub const VENDOR_ERR_SYND: usize = byte_at(mlx5_err_cqe::vendor_err_synd);
    /// `rx_hash_res` (4 bytes, big-endian): the RSS hash of a receive CQE, as DPDK's
    /// `struct mlx5_cqe` names it (rdma-core's `mlx5_cqe64` keeps these bytes in `rsvd4`).
    pub const RX_HASH_RES: usize = 12;
    pub const SYNDROME: usize = byte_at(mlx5_err_cqe::syndrome);
}

/// The 8-byte words of a CQE the poll path loads by index (each field lies inside one word:
/// checked below).
pub mod word {
    use super::at;
    /// `sop_drop_qpn`, `wqe_counter`, `signature`, `op_own`.
    pub const QPN: usize = at::SOP_DROP_QPN / 8;
    /// `byte_cnt` (with `app*`).
    pub const BYTE_CNT: usize = at::BYTE_CNT / 8;
    /// `imm_inval_pkey` (with `srqn_uidx`).
    pub const IMM: usize = at::IMM_INVAL_PKEY / 8;
    /// The error syndromes.
    pub const SYNDROME: usize = at::SYNDROME / 8;
}

/// The big-endian u32 at byte `at` of a CQE, from the word that holds it.
#[inline(always)]
fn w32(w: [u8; 8], at: usize) -> u32 {
    let i = at % 8;
    u32::from_be_bytes([w[i], w[i + 1], w[i + 2], w[i + 3]])
}

/// The big-endian u16 at byte `at` of a CQE, from the word that holds it.
#[inline(always)]
fn w16(w: [u8; 8], at: usize) -> u16 {
    let i = at % 8;
    u16::from_be_bytes([w[i], w[i + 1]])
}

/// `sop_drop_qpn[23:0]`: the QP / WQ number.
pub const QPN_MASK: u32 = 0xff_ffff;

/// CQE opcodes (`op_own[7:4]`; PRM, rdma-core `MLX5_CQE_*`).
pub mod opcode {
    pub const REQ: u8 = 0x0;
    pub const RESP_WR_IMM: u8 = 0x1;
    pub const RESP_SEND: u8 = 0x2;
    pub const RESP_SEND_IMM: u8 = 0x3;
    pub const RESP_SEND_INV: u8 = 0x4;
    pub const RESIZE_CQ: u8 = 0x5;
    pub const REQ_ERR: u8 = 0xd;
    pub const RESP_ERR: u8 = 0xe;
    pub const INVALID: u8 = 0xf;
}

/// What a successful CQE reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompletionKind {
    /// A send WQE completed (requester). `wqe_opcode` says which.
    Send { wqe_opcode: u8 },
    /// A receive consumed by a SEND.
    Recv,
    /// A receive consumed by a SEND with immediate.
    RecvImm,
    /// A receive consumed by an RDMA WRITE with immediate.
    RecvRdmaWriteImm,
    /// A receive consumed by a SEND with invalidate.
    RecvInv,
}

impl CompletionKind {
    /// The CQE opcode of this kind, and the WQE opcode `sop_drop_qpn[31:24]` carries.
    #[inline]
    fn opcodes(self) -> (u8, u8) {
        match self {
            CompletionKind::Send { wqe_opcode } => (opcode::REQ, wqe_opcode),
            CompletionKind::Recv => (opcode::RESP_SEND, 0),
            CompletionKind::RecvImm => (opcode::RESP_SEND_IMM, 0),
            CompletionKind::RecvRdmaWriteImm => (opcode::RESP_WR_IMM, 0),
            CompletionKind::RecvInv => (opcode::RESP_SEND_INV, 0),
        }
    }
}

/// A successful completion: what [`Completion::parse`] reads from a CQE and
/// [`Completion::emit`] writes into one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Completion {
    pub kind: CompletionKind,
    /// `sop_drop_qpn[23:0]`: the QP / SQ / RQ number, except on Ethernet receive queues behind
    /// a flow rule, where it carries the flow tag (DPDK's reading); see [`Completion::flow_tag`].
    pub qpn: u32,
    /// `wqe_counter`: the WQE (send: its first WQEBB's counter; receive: its index).
    pub wqe_counter: u16,
    /// `byte_cnt`: bytes received, or bytes read for RDMA READ / atomics on the requester.
    pub byte_len: u32,
    /// The immediate (`imm_inval_pkey`, as on the wire) for the `*Imm` kinds.
    pub imm: Option<u32>,
}

impl Completion {
    /// The flow tag of an Ethernet receive completion.
    #[inline]
    pub fn flow_tag(&self) -> u32 {
        self.qpn
    }
    /// Whether this completes a send WQE.
    #[inline]
    pub fn is_send(&self) -> bool {
        matches!(self.kind, CompletionKind::Send { .. })
    }
}

/// Error CQE syndromes as bytes (`mlx5_err_cqe.syndrome`; rdma-core `MLX5_CQE_SYNDROME_*`).
pub mod syndrome {
    /// Local length error.
    pub const LOCAL_LENGTH_ERR: u8 = 0x01;
    /// Local QP operation error (a malformed WQE).
    pub const LOCAL_QP_OP_ERR: u8 = 0x02;
    /// Local protection error (bad key, PD or range).
    pub const LOCAL_PROT_ERR: u8 = 0x04;
    /// Work request flushed (the queue is in error).
    pub const WR_FLUSH_ERR: u8 = 0x05;
    /// Memory window bind error.
    pub const MW_BIND_ERR: u8 = 0x06;
    /// Bad response (unexpected opcode or length from the responder).
    pub const BAD_RESP_ERR: u8 = 0x10;
    /// Local access error.
    pub const LOCAL_ACCESS_ERR: u8 = 0x11;
    /// The responder found the request invalid (NAK invalid request).
    pub const REMOTE_INVAL_REQ_ERR: u8 = 0x12;
    /// The responder refused access (NAK remote access error).
    pub const REMOTE_ACCESS_ERR: u8 = 0x13;
    /// The responder failed the operation (NAK remote operational error).
    pub const REMOTE_OP_ERR: u8 = 0x14;
    /// Transport retries exhausted.
    pub const TRANSPORT_RETRY_EXC_ERR: u8 = 0x15;
    /// RNR retries exhausted.
    pub const RNR_RETRY_EXC_ERR: u8 = 0x16;
    /// The remote aborted the operation.
    pub const REMOTE_ABORTED_ERR: u8 = 0x22;
}

/// Completion error syndromes (`mlx5_err_cqe.syndrome`; rdma-core `MLX5_CQE_SYNDROME_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Syndrome {
    LocalLength,
    LocalQpOp,
    LocalProt,
    WrFlush,
    MwBind,
    BadResp,
    LocalAccess,
    RemoteInvalRequest,
    RemoteAccess,
    RemoteOp,
    TransportRetryExceeded,
    RnrRetryExceeded,
    RemoteAborted,
    /// A value this driver does not name.
    Other(u8),
}

impl Syndrome {
    /// Decodes the syndrome byte.
    #[inline]
    pub fn from_raw(v: u8) -> Syndrome {
        match v {
            syndrome::LOCAL_LENGTH_ERR => Syndrome::LocalLength,
            syndrome::LOCAL_QP_OP_ERR => Syndrome::LocalQpOp,
            syndrome::LOCAL_PROT_ERR => Syndrome::LocalProt,
            syndrome::WR_FLUSH_ERR => Syndrome::WrFlush,
            syndrome::MW_BIND_ERR => Syndrome::MwBind,
            syndrome::BAD_RESP_ERR => Syndrome::BadResp,
            syndrome::LOCAL_ACCESS_ERR => Syndrome::LocalAccess,
            syndrome::REMOTE_INVAL_REQ_ERR => Syndrome::RemoteInvalRequest,
            syndrome::REMOTE_ACCESS_ERR => Syndrome::RemoteAccess,
            syndrome::REMOTE_OP_ERR => Syndrome::RemoteOp,
            syndrome::TRANSPORT_RETRY_EXC_ERR => Syndrome::TransportRetryExceeded,
            syndrome::RNR_RETRY_EXC_ERR => Syndrome::RnrRetryExceeded,
            syndrome::REMOTE_ABORTED_ERR => Syndrome::RemoteAborted,
            v => Syndrome::Other(v),
        }
    }
    /// The PRM value.
    #[inline]
    pub fn raw(self) -> u8 {
        match self {
            Syndrome::LocalLength => syndrome::LOCAL_LENGTH_ERR,
            Syndrome::LocalQpOp => syndrome::LOCAL_QP_OP_ERR,
            Syndrome::LocalProt => syndrome::LOCAL_PROT_ERR,
            Syndrome::WrFlush => syndrome::WR_FLUSH_ERR,
            Syndrome::MwBind => syndrome::MW_BIND_ERR,
            Syndrome::BadResp => syndrome::BAD_RESP_ERR,
            Syndrome::LocalAccess => syndrome::LOCAL_ACCESS_ERR,
            Syndrome::RemoteInvalRequest => syndrome::REMOTE_INVAL_REQ_ERR,
            Syndrome::RemoteAccess => syndrome::REMOTE_ACCESS_ERR,
            Syndrome::RemoteOp => syndrome::REMOTE_OP_ERR,
            Syndrome::TransportRetryExceeded => syndrome::TRANSPORT_RETRY_EXC_ERR,
            Syndrome::RnrRetryExceeded => syndrome::RNR_RETRY_EXC_ERR,
            Syndrome::RemoteAborted => syndrome::REMOTE_ABORTED_ERR,
            Syndrome::Other(v) => v,
        }
    }
}

impl std::fmt::Display for Syndrome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = match self {
            Syndrome::LocalLength => "LOCAL_LENGTH_ERR",
            Syndrome::LocalQpOp => "LOCAL_QP_OP_ERR",
            Syndrome::LocalProt => "LOCAL_PROT_ERR",
            Syndrome::WrFlush => "WR_FLUSH_ERR",
            Syndrome::MwBind => "MW_BIND_ERR",
            Syndrome::BadResp => "BAD_RESP_ERR",
            Syndrome::LocalAccess => "LOCAL_ACCESS_ERR",
            Syndrome::RemoteInvalRequest => "REMOTE_INVAL_REQ_ERR",
            Syndrome::RemoteAccess => "REMOTE_ACCESS_ERR",
            Syndrome::RemoteOp => "REMOTE_OP_ERR",
            Syndrome::TransportRetryExceeded => "TRANSPORT_RETRY_EXC_ERR",
            Syndrome::RnrRetryExceeded => "RNR_RETRY_EXC_ERR",
            Syndrome::RemoteAborted => "REMOTE_ABORTED_ERR",
            Syndrome::Other(v) => return write!(f, "syndrome {v:#04x}"),
        };
        f.write_str(name)
    }
}

/// A completion that reports failure, or a CQE that cannot be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum CompletionError {
    /// An error CQE (REQ_ERR / RESP_ERR).
    #[error("{} error on QP {qpn:#x}, WQE {wqe_counter}: {syndrome} (vendor {vendor_syndrome:#04x})",
        if *requester { "requester" } else { "responder" })]
    Work {
        requester: bool,
        syndrome: Syndrome,
        vendor_syndrome: u8,
        qpn: u32,
        wqe_counter: u16,
        /// For requester errors, the failed WQE's opcode.
        wqe_opcode: u8,
    },
    /// A CQE whose opcode is not one a CQ may hold.
    #[error("malformed CQE: opcode {opcode:#x}")]
    Malformed { opcode: u8 },
}

impl CompletionError {
    /// The syndrome, for work errors.
    #[inline]
    pub fn syndrome(&self) -> Option<Syndrome> {
        match self {
            CompletionError::Work { syndrome, .. } => Some(*syndrome),
            CompletionError::Malformed { .. } => None,
        }
    }
    /// The QP / WQ number, for work errors.
    #[inline]
    pub fn qpn(&self) -> Option<u32> {
        match self {
            CompletionError::Work { qpn, .. } => Some(*qpn),
            CompletionError::Malformed { .. } => None,
        }
    }
    /// The WQE counter, for work errors.
    #[inline]
    pub fn wqe_counter(&self) -> Option<u16> {
        match self {
            CompletionError::Work { wqe_counter, .. } => Some(*wqe_counter),
            CompletionError::Malformed { .. } => None,
        }
    }
}

/// Decodes a CQE from its 8-byte words: `w7` (bytes 0x38..0x40: `sop_drop_qpn`,
/// `wqe_counter`, `signature`, `op_own`) is given, and `word(i)` is asked for the others only
/// when the opcode needs them: word 5 for `byte_cnt`, word 4 for the immediate, word 6 for the
/// error syndromes. The poll path passes volatile loads, so a send completion costs two loads.
#[inline(always)]
pub fn decode_words(
    w7: [u8; 8],
    mut word: impl FnMut(usize) -> [u8; 8],
) -> Result<Completion, CompletionError> {
    let sop_drop_qpn = w32(w7, at::SOP_DROP_QPN);
    let qpn = sop_drop_qpn & 0xff_ffff;
    let top = (sop_drop_qpn >> 24) as u8;
    let wqe_counter = w16(w7, at::WQE_COUNTER);
    let opcode = w7[at::OP_OWN % 8] >> 4;
    // The common cases inline, as compares; the rest out of line, so the hot path has no
    // jump table (an indirect branch per CQE) and builds nothing in memory.
    if opcode == opcode::REQ || opcode == opcode::RESP_SEND {
        return Ok(decode_send_recv(w7, word(word::BYTE_CNT)));
    }
    let c = Completion {
        kind: CompletionKind::Recv,
        qpn,
        wqe_counter,
        byte_len: 0,
        imm: None,
    };
    // `word` moves (a closure passed by reference would keep its captures on the stack).
    decode_other(opcode, top, c, word)
}

/// `op_own` bits that, XORed with the expected owner bit, are all zero exactly when the CQE is
/// software's (owner bit equal to the pass parity) and its opcode is REQ (0x0) or RESP_SEND
/// (0x2): the owner bit and opcode bits 3, 2 and 0. Neither opcode is INVALID (0xf), so a CQE
/// passing this test is software's; one failing it may still be (another opcode), which the
/// caller then tests in full ((`queues::ring::cqe_is_sw_owned`)).
pub const OP_OWN_HOT_MASK: u8 = 0xd1;

const _: () = {
    // The mask test accepts exactly REQ and RESP_SEND with the expected owner bit.
    let mut op = 0u8;
    while op < 16 {
        let hot = (op << 4) & OP_OWN_HOT_MASK == 0;
        assert!(hot == (op == opcode::REQ || op == opcode::RESP_SEND));
        assert!(!hot || op != opcode::INVALID);
        op += 1;
    }
    assert!(OP_OWN_HOT_MASK & 1 == 1);
};

/// Decodes a REQ or RESP_SEND CQE (the opcode in `w7` must be one of them) from word 7 and
/// word 5 (`byte_cnt` in its second half).
#[inline(always)]
pub fn decode_send_recv(w7: [u8; 8], w5: [u8; 8]) -> Completion {
    send_recv(
        w7[at::OP_OWN % 8],
        w32(w7, at::SOP_DROP_QPN),
        w16(w7, at::WQE_COUNTER),
        w32(w5, at::BYTE_CNT),
    )
}

/// A REQ or RESP_SEND completion (the opcode in `op_own` must be one of them) from its fields,
/// already in host order.
#[inline(always)]
pub fn send_recv(op_own: u8, sop_drop_qpn: u32, wqe_counter: u16, byte_cnt: u32) -> Completion {
    let kind = if op_own >> 4 == opcode::REQ {
        CompletionKind::Send {
            wqe_opcode: (sop_drop_qpn >> 24) as u8,
        }
    } else {
        CompletionKind::Recv
    };
    Completion {
        kind,
        qpn: sop_drop_qpn & 0xff_ffff,
        wqe_counter,
        byte_len: byte_cnt,
        imm: None,
    }
}

/// `c` with `byte_cnt` (word 5).
#[inline(always)]
fn with_len(c: Completion, word: &mut impl FnMut(usize) -> [u8; 8]) -> Completion {
    let w5 = word(word::BYTE_CNT);
    Completion {
        byte_len: w32(w5, at::BYTE_CNT),
        ..c
    }
}

#[cold]
#[inline(never)]
fn decode_other(
    opcode: u8,
    top: u8,
    c: Completion,
    mut word: impl FnMut(usize) -> [u8; 8],
) -> Result<Completion, CompletionError> {
    let word = &mut word;
    let mut with_imm = |kind| {
        let w4 = word(word::IMM);
        Completion {
            kind,
            imm: Some(w32(w4, at::IMM_INVAL_PKEY)),
            ..with_len(c, word)
        }
    };
    match opcode {
        opcode::REQ => Ok(with_len(
            Completion {
                kind: CompletionKind::Send { wqe_opcode: top },
                ..c
            },
            word,
        )),
        opcode::RESP_SEND => Ok(with_len(c, word)),
        opcode::RESP_SEND_IMM => Ok(with_imm(CompletionKind::RecvImm)),
        opcode::RESP_WR_IMM => Ok(with_imm(CompletionKind::RecvRdmaWriteImm)),
        opcode::RESP_SEND_INV => Ok(with_imm(CompletionKind::RecvInv)),
        op @ (opcode::REQ_ERR | opcode::RESP_ERR) => {
            let w6 = word(word::SYNDROME);
            Err(CompletionError::Work {
                requester: op == opcode::REQ_ERR,
                syndrome: Syndrome::from_raw(w6[at::SYNDROME % 8]),
                vendor_syndrome: w6[at::VENDOR_ERR_SYND % 8],
                qpn: c.qpn,
                wqe_counter: c.wqe_counter,
                wqe_opcode: top,
            })
        }
        opcode => Err(CompletionError::Malformed { opcode }),
    }
}

wire_view! {
    /// A 64-byte CQE (`struct mlx5_cqe64`) over any byte buffer.
    Cqe64 over mlx5_cqe64, "CQE", CQE_SIZE;
    /// `wqe_id` (striding RQ: the WQE a packet landed in).
    wqe_id / set_wqe_id: u16,
    /// `flags_rqpn`.
    flags_rqpn / set_flags_rqpn: u32,
    /// `vlan_info`.
    vlan_info / set_vlan_info: u16,
    /// `srqn_uidx`.
    srqn_uidx / set_srqn_uidx: u32,
    /// `imm_inval_pkey`: the immediate (as on the wire), the invalidated rkey or the P_Key.
    imm_inval_pkey / set_imm_inval_pkey: u32,
    /// `byte_cnt`: bytes received, or bytes read by an RDMA READ / atomic on the requester.
    byte_cnt / set_byte_cnt: u32,
    /// `timestamp`.
    timestamp / set_timestamp: u64,
    /// `sop_drop_qpn`: the QP / WQ number in bits 23:0; on a requester CQE the WQE opcode in
    /// bits 31:24.
    sop_drop_qpn / set_sop_drop_qpn: u32,
    /// `wqe_counter`: the WQE (send: its first WQEBB's counter; receive: its index).
    wqe_counter / set_wqe_counter: u16,
    /// `signature`.
    signature / set_signature: u8,
    /// `op_own`: opcode in bits 7:4, format 3:2, solicited event 1, owner 0.
    op_own / set_op_own: u8,
}

wire_view! {
    /// The error view of a 64-byte CQE (`struct mlx5_err_cqe`), for opcodes REQ_ERR and
    /// RESP_ERR.
    ErrCqe over mlx5_err_cqe, "error CQE", CQE_SIZE;
    /// `srqn`.
    srqn / set_srqn: u32,
    /// `hw_err_synd`.
    hw_err_synd / set_hw_err_synd: u8,
    /// `hw_synd_type`.
    hw_synd_type / set_hw_synd_type: u8,
    /// `vendor_err_synd`.
    vendor_err_synd / set_vendor_err_synd: u8,
    /// `syndrome`: see [`Syndrome`].
    syndrome / set_syndrome: u8,
    /// `s_wqe_opcode_qpn`: the failed WQE's opcode in bits 31:24, the QP in 23:0.
    s_wqe_opcode_qpn / set_s_wqe_opcode_qpn: u32,
    /// `wqe_counter`.
    wqe_counter / set_wqe_counter: u16,
    /// `op_own`.
    op_own / set_op_own: u8,
}

impl<T: AsRef<[u8]>> Cqe64<T> {
    /// `op_own[7:4]`.
    #[inline]
    pub fn opcode(&self) -> u8 {
        self.op_own() >> 4
    }
    /// `op_own[0]`.
    #[inline]
    pub fn owner(&self) -> u8 {
        self.op_own() & 1
    }
    /// `sop_drop_qpn[23:0]`.
    #[inline]
    pub fn qpn(&self) -> u32 {
        self.sop_drop_qpn() & QPN_MASK
    }
    /// Whether the opcode is the "nobody wrote this" one.
    #[inline]
    pub fn is_invalid(&self) -> bool {
        self.opcode() == opcode::INVALID
    }
    /// The same bytes read as an error CQE.
    #[inline]
    pub fn err(&self) -> ErrCqe<&[u8]> {
        ErrCqe::new_unchecked(self.as_bytes())
    }
    /// `syndrome` of an error CQE.
    #[inline]
    pub fn syndrome(&self) -> u8 {
        self.err().syndrome()
    }
    /// `vendor_err_synd` of an error CQE.
    #[inline]
    pub fn vendor_err_synd(&self) -> u8 {
        self.err().vendor_err_synd()
    }
    /// Decodes into a completion or an error ([`Completion::parse`]).
    ///
    /// # Errors
    /// An error CQE, or an opcode a CQ does not hold (including INVALID and RESIZE).
    #[inline]
    pub fn decode(&self) -> Result<Completion, CompletionError> {
        Completion::parse(self)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Cqe64<T> {
    /// Sets `op_own[7:4]`, keeping the other bits.
    #[inline]
    pub fn set_opcode(&mut self, op: u8) {
        let v = (self.op_own() & 0x0f) | (op << 4);
        self.set_op_own(v);
    }
    /// Sets `op_own[0]`, keeping the other bits.
    #[inline]
    pub fn set_owner(&mut self, owner: u8) {
        let v = (self.op_own() & 0xfe) | (owner & 1);
        self.set_op_own(v);
    }
    /// The same bytes as an error CQE, writable.
    #[inline]
    pub fn err_mut(&mut self) -> ErrCqe<&mut [u8]> {
        ErrCqe::new_unchecked(self.as_bytes_mut())
    }
}

/// A 64-byte CQE copied out of a ring: what `Cq::poll_raw` returns.
pub type Cqe = Cqe64<[u8; CQE_SIZE]>;

impl Cqe64<[u8; CQE_SIZE]> {
    /// A copy of the first 64 bytes of `b`.
    ///
    /// # Errors
    /// `b` is shorter than 64 bytes.
    #[inline]
    pub fn copy_from(b: &[u8]) -> Result<Cqe, ShortBuffer> {
        let bytes: [u8; CQE_SIZE] =
            b.get(..CQE_SIZE)
                .and_then(|s| s.try_into().ok())
                .ok_or(ShortBuffer {
                    what: "CQE",
                    need: CQE_SIZE,
                    got: b.len(),
                })?;
        Ok(Cqe64::new_unchecked(bytes))
    }
    /// From a copied image.
    #[inline]
    pub fn from_array(bytes: [u8; CQE_SIZE]) -> Cqe {
        Cqe64::new_unchecked(bytes)
    }
    /// The raw bytes.
    #[inline]
    pub fn bytes(&self) -> &[u8; CQE_SIZE] {
        &self.buffer
    }
}

/// A 128-byte CQE: the 64-byte CQE in its second half (the first half holds inline scatter
/// data, which this crate does not enable).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cqe128<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Cqe128<T> {
    /// A view over `buffer`, which must hold at least 128 bytes.
    ///
    /// # Errors
    /// The buffer is shorter.
    #[inline]
    pub fn new_checked(buffer: T) -> Result<Self, ShortBuffer> {
        super::check_len("128-byte CQE", buffer.as_ref(), CQE128_SIZE)?;
        Ok(Cqe128 { buffer })
    }
    /// The 64-byte CQE inside.
    #[inline]
    pub fn cqe64(&self) -> Cqe64<&[u8]> {
        Cqe64::new_unchecked(&self.buffer.as_ref()[CQE128_SIZE - CQE_SIZE..CQE128_SIZE])
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Cqe128<T> {
    /// The 64-byte CQE inside, writable.
    #[inline]
    pub fn cqe64_mut(&mut self) -> Cqe64<&mut [u8]> {
        Cqe64::new_unchecked(&mut self.buffer.as_mut()[CQE128_SIZE - CQE_SIZE..CQE128_SIZE])
    }
}

/// CQE compression sessions (`cqc.cqe_comp_en`; PRM "CQE compression"). Facts from DPDK 22.11's
/// mlx5 receive path (`drivers/net/mlx5/mlx5_rx.c` `mlx5_rx_poll_len`, `mlx5_rxtx_vec_sse.h`
/// `rxq_cq_decompress_v`), which reads what a NIC writes:
///
/// - A session of `n` (two or more) completions takes `n` consecutive CQE slots and never
///   crosses the ring's end (the vectorized reader takes them as one array).
/// - Its first slot is the *title*: a whole CQE whose `op_own` format bits (`[3:2]`) say
///   compressed ([`FORMAT_COMPRESSED`]), whose `byte_cnt` holds `n`, and whose `wqe_counter`
///   is the first completion's; its other fields hold for every completion of the session.
///   Only the title's owner bit is meaningful.
/// - Completion `i`'s own fields are an 8-byte *mini CQE* in an array of eight that fills a
///   slot: array `j` lies [`array_slot`]`(j)` slots after the title (1, then 8, 16, ...).
///   Completion `i` consumed WQE `wqe_counter + i`.
/// - The other slots of the session are left unwritten; a reader marks all `n` slots invalid
///   once done, so a later lap never mistakes a stale one for a new CQE.
pub mod session {
    /// `op_own[3:2]` of a session's title.
    pub const FORMAT_COMPRESSED: u8 = 3;
    /// Mini CQEs per array (one 64-byte slot of 8-byte entries).
    pub const MINIS_PER_ARRAY: usize = 8;

    /// The format bits of an `op_own` byte (0 for a plain CQE).
    #[inline]
    pub fn format(op_own: u8) -> u8 {
        (op_own >> 2) & 3
    }

    /// Slots from the title to mini-CQE array `j`.
    #[inline]
    pub fn array_slot(j: usize) -> usize {
        if j == 0 {
            1
        } else {
            MINIS_PER_ARRAY * j
        }
    }

    /// One mini CQE of the hash format (`mini_cqe_res_format` 0, DPDK `struct mlx5_mini_cqe8`).
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct MiniCqe {
        /// The RSS hash result.
        pub rx_hash_result: u32,
        /// Bytes received.
        pub byte_cnt: u32,
    }

    impl MiniCqe {
        /// Entry `k` (0..8) of a mini-CQE array slot.
        #[inline]
        pub fn read(array: &[u8; 64], k: usize) -> MiniCqe {
            let w = |at: usize| {
                u32::from_be_bytes([array[at], array[at + 1], array[at + 2], array[at + 3]])
            };
            let at = (k % MINIS_PER_ARRAY) * 8;
            MiniCqe {
                rx_hash_result: w(at),
                byte_cnt: w(at + 4),
            }
        }

        /// Writes this as entry `k` (0..8) of a mini-CQE array slot.
        #[inline]
        pub fn write(&self, array: &mut [u8; 64], k: usize) {
            let at = (k % MINIS_PER_ARRAY) * 8;
            array[at..at + 4].copy_from_slice(&self.rx_hash_result.to_be_bytes());
            array[at + 4..at + 8].copy_from_slice(&self.byte_cnt.to_be_bytes());
        }
    }
}

/// Where the 64-byte CQE of slot `i` starts in a ring of `cqe_bytes`-byte entries (64 or 128).
#[inline]
pub fn cqe64_offset(i: usize, cqe_bytes: usize) -> usize {
    i * cqe_bytes + (cqe_bytes - CQE_SIZE)
}

impl Completion {
    /// Reads what a CQE reports.
    ///
    /// # Errors
    /// An error CQE (REQ_ERR / RESP_ERR), or an opcode a CQ does not hold.
    #[inline]
    pub fn parse<T: AsRef<[u8]>>(cqe: &Cqe64<T>) -> Result<Completion, CompletionError> {
        let b = cqe.as_bytes();
        let word = |i: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&b[i * 8..i * 8 + 8]);
            w
        };
        decode_words(word(word::QPN), word)
    }

    /// Writes this completion into `cqe`: the fields [`Completion::parse`] reads for its
    /// kind, and the opcode (the owner bit and every other byte are left as they are).
    #[inline]
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, cqe: &mut Cqe64<T>) {
        let (op, top) = self.kind.opcodes();
        if let Some(imm) = self.imm {
            cqe.set_imm_inval_pkey(imm);
        }
        cqe.set_byte_cnt(self.byte_len);
        cqe.set_sop_drop_qpn((u32::from(top) << 24) | (self.qpn & QPN_MASK));
        cqe.set_wqe_counter(self.wqe_counter);
        cqe.set_opcode(op);
    }
}

impl Completion {
    /// A fresh 64-byte CQE holding this completion (zeros elsewhere, owner 0).
    #[inline]
    pub fn to_cqe(&self) -> [u8; CQE_SIZE] {
        let mut c = Cqe64::new_unchecked([0u8; CQE_SIZE]);
        self.emit(&mut c);
        c.into_inner()
    }
}

/// A 64-byte CQE as eight native-endian words in memory order (word `k` holds bytes
/// `8k..8k + 8`), for code that builds a CQE and hands it on to be stored: the fields are put
/// together in registers and the image is read back only word by word. A byte image built
/// with field-sized stores and then copied with wider loads stalls every such load until the
/// stores reach the cache (store forwarding fails), which the model's profile showed on each
/// CQE it wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CqeWords(pub [u64; 8]);

impl CqeWords {
    /// The word whose byte `k` (0..8, memory order) is `b`.
    #[inline(always)]
    const fn byte_in_word(b: u8, k: usize) -> u64 {
        let shift = if cfg!(target_endian = "little") {
            8 * k
        } else {
            56 - 8 * k
        };
        (b as u64) << shift
    }

    /// ORs the big-endian bytes of `v` in at byte `at` (a field that was zero).
    #[inline(always)]
    fn or_be(&mut self, at: usize, bytes: &[u8]) {
        for (i, b) in bytes.iter().enumerate() {
            let p = at + i;
            self.0[p / 8] |= Self::byte_in_word(*b, p % 8);
        }
    }

    /// Sets the big-endian u32 at byte `at` (a field that was zero).
    #[inline(always)]
    pub fn or_be32(&mut self, at: usize, v: u32) {
        self.or_be(at, &v.to_be_bytes());
    }

    /// Sets `op_own[0]`, the owner bit, keeping the other bits (as [`Cqe64::set_owner`]).
    #[inline(always)]
    pub fn set_owner(&mut self, owner: u8) {
        let v = (self.byte(at::OP_OWN) & 0xfe) | (owner & 1);
        let (w, k) = (at::OP_OWN / 8, at::OP_OWN % 8);
        self.0[w] = (self.0[w] & !Self::byte_in_word(0xff, k)) | Self::byte_in_word(v, k);
    }

    /// The byte at `at`.
    #[inline(always)]
    pub fn byte(&self, at: usize) -> u8 {
        self.0[at / 8].to_ne_bytes()[at % 8]
    }

    /// The image as bytes.
    #[inline]
    pub fn to_bytes(&self) -> [u8; CQE_SIZE] {
        let mut b = [0u8; CQE_SIZE];
        for (c, w) in b.chunks_exact_mut(8).zip(&self.0) {
            c.copy_from_slice(&w.to_ne_bytes());
        }
        b
    }

    /// The words of a byte image.
    #[inline]
    pub fn from_bytes(b: &[u8; CQE_SIZE]) -> CqeWords {
        CqeWords(std::array::from_fn(|k| {
            u64::from_ne_bytes(b[8 * k..8 * k + 8].try_into().unwrap_or([0; 8]))
        }))
    }
}

impl Completion {
    /// This completion's CQE (zeros elsewhere, owner 0) as words built in registers: the same
    /// bytes as [`Completion::to_cqe`].
    #[inline]
    pub fn to_words(&self) -> CqeWords {
        let (op, top) = self.kind.opcodes();
        let mut w = CqeWords::default();
        if let Some(imm) = self.imm {
            w.or_be32(at::IMM_INVAL_PKEY, imm);
        }
        w.or_be32(at::BYTE_CNT, self.byte_len);
        w.or_be32(
            at::SOP_DROP_QPN,
            (u32::from(top) << 24) | (self.qpn & QPN_MASK),
        );
        w.or_be(at::WQE_COUNTER, &self.wqe_counter.to_be_bytes());
        w.or_be(at::OP_OWN, &[op << 4]);
        w
    }
}

impl CompletionError {
    /// A fresh 64-byte error CQE holding this error (zeros elsewhere, owner 0).
    #[inline]
    pub fn to_cqe(&self) -> [u8; CQE_SIZE] {
        let mut c = Cqe64::new_unchecked([0u8; CQE_SIZE]);
        self.emit(&mut c);
        c.into_inner()
    }

    /// Writes this error into `cqe` as an error CQE (a `Malformed` error writes its opcode
    /// only); the owner bit is left as it is.
    #[inline]
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, cqe: &mut Cqe64<T>) {
        match *self {
            CompletionError::Work {
                requester,
                syndrome,
                vendor_syndrome,
                qpn,
                wqe_counter,
                wqe_opcode,
            } => {
                let mut e = cqe.err_mut();
                e.set_vendor_err_synd(vendor_syndrome);
                e.set_syndrome(syndrome.raw());
                e.set_s_wqe_opcode_qpn((u32::from(wqe_opcode) << 24) | (qpn & QPN_MASK));
                e.set_wqe_counter(wqe_counter);
                cqe.set_opcode(if requester {
                    opcode::REQ_ERR
                } else {
                    opcode::RESP_ERR
                });
            }
            CompletionError::Malformed { opcode } => cqe.set_opcode(opcode),
        }
    }
}

/// Whether `n` bytes at byte `at` of a CQE lie inside the 8-byte word `word`.
const fn in_word(at: usize, n: usize, word: usize) -> bool {
    at / 8 == word && at % 8 + n <= 8
}

// The hand-loaded words of `decode_words` hold the fields where the declarations put them.
const _: () = {
    assert!(in_word(at::SOP_DROP_QPN, 4, word::QPN));
    assert!(in_word(at::WQE_COUNTER, 2, word::QPN));
    assert!(in_word(at::OP_OWN, 1, word::QPN));
    assert!(in_word(at::BYTE_CNT, 4, word::BYTE_CNT));
    assert!(in_word(at::IMM_INVAL_PKEY, 4, word::IMM));
    assert!(in_word(at::SYNDROME, 1, word::SYNDROME));
    assert!(in_word(at::VENDOR_ERR_SYND, 1, word::SYNDROME));
    // The poll path's hot loads: word 7 and, for a send / receive, word 5.
    assert!(word::QPN == 7 && word::BYTE_CNT == 5);
};

#[cfg(test)]
mod tests {
    use super::super::test_util::poisoned;
    use super::*;

    #[test]
    fn words_are_the_bytes_emit_writes() {
        let kinds = [
            CompletionKind::Send { wqe_opcode: 0x0a },
            CompletionKind::Recv,
            CompletionKind::RecvImm,
            CompletionKind::RecvRdmaWriteImm,
            CompletionKind::RecvInv,
        ];
        for (k, kind) in kinds.into_iter().enumerate() {
            let c = Completion {
                kind,
                qpn: 0x00ab_cdef ^ k as u32,
                wqe_counter: 0xfe01 ^ k as u16,
                byte_len: 0x1234_5678 ^ k as u32,
                imm: (k % 2 == 0).then_some(0x8765_4321),
            };
            let w = c.to_words();
            assert_eq!(w.to_bytes(), c.to_cqe(), "{kind:?}");
            assert_eq!(CqeWords::from_bytes(&w.to_bytes()), w);
            assert_eq!(w.byte(at::OP_OWN), c.to_cqe()[at::OP_OWN]);
        }
        let mut w = CqeWords::default();
        w.or_be32(at::RX_HASH_RES, 0x0102_0304);
        assert_eq!(
            w.to_bytes()[at::RX_HASH_RES..at::RX_HASH_RES + 4],
            [1, 2, 3, 4]
        );
        // The owner bit as `Cqe64::set_owner` sets it, every other bit kept.
        for (k, owner) in [1u8, 0, 1].into_iter().enumerate() {
            let c = Completion {
                kind: CompletionKind::Recv,
                qpn: 7 + k as u32,
                wqe_counter: 9,
                byte_len: 64,
                imm: None,
            };
            // Start from the other owner, so that the bit must change.
            let mut b = c.to_cqe();
            b[at::OP_OWN] |= 1 - owner;
            let mut w = CqeWords::from_bytes(&b);
            w.set_owner(owner);
            Cqe64::new_unchecked(&mut b[..]).set_owner(owner);
            assert_eq!(w.to_bytes(), b, "owner {owner}");
            assert_eq!(w.byte(at::OP_OWN) & 1, owner);
        }
    }

    #[test]
    fn requester_cqe_fields() {
        let mut b = poisoned::<64>();
        b[0x2c..0x30].copy_from_slice(&64u32.to_be_bytes());
        b[0x38..0x3c].copy_from_slice(&(0x1000_4001u32 | 0x1000_0000).to_be_bytes());
        b[0x3c..0x3e].copy_from_slice(&7u16.to_be_bytes());
        b[0x3f] = (opcode::REQ << 4) | 1;
        let c = Cqe::copy_from(&b).unwrap().decode().unwrap();
        assert_eq!(c.kind, CompletionKind::Send { wqe_opcode: 0x10 });
        assert_eq!(
            (c.qpn, c.wqe_counter, c.byte_len, c.imm),
            (0x4001, 7, 64, None)
        );
    }

    #[test]
    fn error_cqe_decodes_syndrome() {
        let mut b = poisoned::<64>();
        b[0x36] = 0x42;
        b[0x37] = 0x13;
        b[0x38..0x3c].copy_from_slice(&0x0900_4002u32.to_be_bytes());
        b[0x3c..0x3e].copy_from_slice(&3u16.to_be_bytes());
        b[0x3f] = opcode::REQ_ERR << 4;
        let e = Cqe::copy_from(&b).unwrap().decode().unwrap_err();
        assert_eq!(
            e,
            CompletionError::Work {
                requester: true,
                syndrome: Syndrome::RemoteAccess,
                vendor_syndrome: 0x42,
                qpn: 0x4002,
                wqe_counter: 3,
                wqe_opcode: 0x09,
            }
        );
        assert_eq!(
            e.to_string(),
            "requester error on QP 0x4002, WQE 3: REMOTE_ACCESS_ERR (vendor 0x42)"
        );
    }

    #[test]
    fn short_and_invalid_inputs_are_errors() {
        assert!(Cqe::copy_from(&[0u8; 63]).is_err());
        assert!(Cqe64::new_checked(&[0u8; 63][..]).is_err());
        assert!(Cqe128::new_checked(&[0u8; 127][..]).is_err());
        let mut b = poisoned::<64>();
        b[63] = 0xf0;
        assert_eq!(
            Cqe::copy_from(&b).unwrap().decode(),
            Err(CompletionError::Malformed { opcode: 0xf })
        );
    }

    #[test]
    fn syndromes_round_trip() {
        for v in 0..=255u8 {
            assert_eq!(Syndrome::from_raw(v).raw(), v);
        }
    }

    fn every_completion() -> Vec<Completion> {
        let kinds = [
            CompletionKind::Send { wqe_opcode: 0x0a },
            CompletionKind::Send { wqe_opcode: 0x12 },
            CompletionKind::Recv,
            CompletionKind::RecvImm,
            CompletionKind::RecvRdmaWriteImm,
            CompletionKind::RecvInv,
        ];
        kinds
            .iter()
            .map(|&kind| {
                let imm = match kind {
                    CompletionKind::Send { .. } | CompletionKind::Recv => None,
                    _ => Some(0x1234_5678),
                };
                Completion {
                    kind,
                    qpn: 0x00ab_cdef,
                    wqe_counter: 0xfedc,
                    byte_len: 0x0102_0304,
                    imm,
                }
            })
            .collect()
    }

    #[test]
    fn completions_round_trip_through_a_poisoned_cqe() {
        for c in every_completion() {
            for owner in [0u8, 1] {
                let mut cqe = Cqe64::new_checked(poisoned::<64>()).unwrap();
                cqe.set_owner(owner);
                c.emit(&mut cqe);
                assert_eq!(Completion::parse(&cqe), Ok(c), "{c:?}");
                assert_eq!(cqe.owner(), owner, "emit keeps the owner bit");
                // The same bytes decoded by the poll path's word loads.
                let b = cqe.as_bytes();
                let w = |i: usize| -> [u8; 8] { b[i * 8..i * 8 + 8].try_into().unwrap() };
                assert_eq!(decode_words(w(7), w), Ok(c));
            }
        }
    }

    #[test]
    fn errors_round_trip_through_a_poisoned_cqe() {
        for requester in [true, false] {
            for syn in [
                Syndrome::LocalProt,
                Syndrome::WrFlush,
                Syndrome::Other(0x77),
            ] {
                let e = CompletionError::Work {
                    requester,
                    syndrome: syn,
                    vendor_syndrome: 0x5a,
                    qpn: 0x12_3456,
                    wqe_counter: 0x8001,
                    wqe_opcode: 0x10,
                };
                let mut cqe = Cqe64::new_checked(poisoned::<64>()).unwrap();
                e.emit(&mut cqe);
                assert_eq!(Completion::parse(&cqe), Err(e));
                assert_eq!(cqe.syndrome(), syn.raw());
            }
        }
        let m = CompletionError::Malformed { opcode: 0x7 };
        let mut cqe = Cqe64::new_checked(poisoned::<64>()).unwrap();
        m.emit(&mut cqe);
        assert_eq!(Completion::parse(&cqe), Err(m));
    }

    #[test]
    fn every_field_setter_round_trips_and_touches_only_its_bytes() {
        let mut cqe = Cqe64::new_checked(poisoned::<64>()).unwrap();
        cqe.set_byte_cnt(0x1122_3344);
        cqe.set_timestamp(0x0102_0304_0506_0708);
        cqe.set_wqe_id(0xbeef);
        assert_eq!(cqe.byte_cnt(), 0x1122_3344);
        assert_eq!(cqe.timestamp(), 0x0102_0304_0506_0708);
        assert_eq!(cqe.wqe_id(), 0xbeef);
        let b = cqe.into_inner();
        assert_eq!(&b[0x2c..0x30], &[0x11, 0x22, 0x33, 0x44]);
        assert_eq!(&b[0x30..0x38], &[1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(&b[2..4], &[0xbe, 0xef]);
        let untouched = b
            .iter()
            .enumerate()
            .filter(|(i, _)| !(0x2c..0x38).contains(i) && !(2..4).contains(i));
        assert!(untouched.clone().all(|(_, &v)| v == 0xa5));
    }

    #[test]
    fn a_128_byte_cqe_carries_the_64_byte_one_in_its_second_half() {
        let c = every_completion()[2];
        let mut big = Cqe128::new_checked([0xa5u8; 128]).unwrap();
        c.emit(&mut big.cqe64_mut());
        assert_eq!(big.cqe64().decode(), Ok(c));
        let raw = big.buffer;
        assert!(raw[..64].iter().all(|&v| v == 0xa5));
        assert_eq!(Cqe::copy_from(&raw[64..]).unwrap().decode(), Ok(c));
        assert_eq!(cqe64_offset(3, 128), 3 * 128 + 64);
        assert_eq!(cqe64_offset(3, 64), 3 * 64);
    }
}
