//! CQE and EQE views: typed completions and error completions from the bytes the device wrote.
//!
//! Contract (STYLE §6): [`Cqe::new`] and [`Eqe::new`] check the length; after that no accessor
//! panics, whatever the bytes. Offsets are those of `struct mlx5_cqe64`, `struct mlx5_err_cqe`
//! and `struct mlx5_eqe` (rdma-core `mlx5dv.h`, kernel `include/linux/mlx5/device.h`; FACTS.md
//! §6). A 128-byte CQE carries the 64-byte CQE in its second half; [`Cqe::new`] takes the
//! 64 bytes.

use super::ring::CQE_OPCODE_INVALID;

/// Size of the CQE image parsed here.
pub const CQE_SIZE: usize = 64;
/// Size of an EQE.
pub const EQE_SIZE: usize = 64;

/// CQE opcodes (`op_own[7:4]`; PRM, rdma-core `MLX5_CQE_*`).
pub mod cqe_opcode {
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

/// Send WQE opcodes (ctrl segment byte 3; rdma-core `MLX5_OPCODE_*`).
pub mod wqe_opcode {
    pub const NOP: u8 = 0x00;
    pub const SEND_INVAL: u8 = 0x01;
    pub const RDMA_WRITE: u8 = 0x08;
    pub const RDMA_WRITE_IMM: u8 = 0x09;
    pub const SEND: u8 = 0x0a;
    pub const SEND_IMM: u8 = 0x0b;
    pub const RDMA_READ: u8 = 0x10;
    pub const ATOMIC_CS: u8 = 0x11;
    pub const ATOMIC_FA: u8 = 0x12;
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

/// A successful completion.
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
            0x01 => Syndrome::LocalLength,
            0x02 => Syndrome::LocalQpOp,
            0x04 => Syndrome::LocalProt,
            0x05 => Syndrome::WrFlush,
            0x06 => Syndrome::MwBind,
            0x10 => Syndrome::BadResp,
            0x11 => Syndrome::LocalAccess,
            0x12 => Syndrome::RemoteInvalRequest,
            0x13 => Syndrome::RemoteAccess,
            0x14 => Syndrome::RemoteOp,
            0x15 => Syndrome::TransportRetryExceeded,
            0x16 => Syndrome::RnrRetryExceeded,
            0x22 => Syndrome::RemoteAborted,
            v => Syndrome::Other(v),
        }
    }
    /// The PRM value.
    #[inline]
    pub fn raw(self) -> u8 {
        match self {
            Syndrome::LocalLength => 0x01,
            Syndrome::LocalQpOp => 0x02,
            Syndrome::LocalProt => 0x04,
            Syndrome::WrFlush => 0x05,
            Syndrome::MwBind => 0x06,
            Syndrome::BadResp => 0x10,
            Syndrome::LocalAccess => 0x11,
            Syndrome::RemoteInvalRequest => 0x12,
            Syndrome::RemoteAccess => 0x13,
            Syndrome::RemoteOp => 0x14,
            Syndrome::TransportRetryExceeded => 0x15,
            Syndrome::RnrRetryExceeded => 0x16,
            Syndrome::RemoteAborted => 0x22,
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

/// A length error building a view.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{what} needs {need} bytes, got {got}")]
pub struct ShortBuffer {
    pub what: &'static str,
    pub need: usize,
    pub got: usize,
}

#[inline]
fn be32(b: &[u8; 64], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// Decodes a CQE from its 8-byte words: `w7` (bytes 0x38..0x40: `sop_drop_qpn`,
/// `wqe_counter`, `signature`, `op_own`) is given, and `word(i)` is asked for the others only
/// when the opcode needs them: word 5 for `byte_cnt`, word 4 for the immediate, word 6 for the
/// error syndromes. The poll path passes volatile loads, so a send completion costs two loads.
#[inline(always)]
pub(crate) fn decode_words(
    w7: [u8; 8],
    mut word: impl FnMut(usize) -> [u8; 8],
) -> Result<Completion, CompletionError> {
    let sop_drop_qpn = u32::from_be_bytes([w7[0], w7[1], w7[2], w7[3]]);
    let qpn = sop_drop_qpn & 0xff_ffff;
    let top = (sop_drop_qpn >> 24) as u8;
    let wqe_counter = u16::from_be_bytes([w7[4], w7[5]]);
    let opcode = w7[7] >> 4;
    // The common cases inline, as compares; the rest out of line, so the hot path has no
    // jump table (an indirect branch per CQE) and builds nothing in memory.
    if opcode == cqe_opcode::REQ || opcode == cqe_opcode::RESP_SEND {
        return Ok(decode_send_recv(w7, word(5)));
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
/// caller then tests in full ([`super::ring::cqe_is_sw_owned`]).
pub(crate) const OP_OWN_HOT_MASK: u8 = 0xd1;

const _: () = {
    // The mask test accepts exactly REQ and RESP_SEND with the expected owner bit.
    let mut op = 0u8;
    while op < 16 {
        let hot = (op << 4) & OP_OWN_HOT_MASK == 0;
        assert!(hot == (op == cqe_opcode::REQ || op == cqe_opcode::RESP_SEND));
        assert!(!hot || op != CQE_OPCODE_INVALID);
        op += 1;
    }
    assert!(OP_OWN_HOT_MASK & 1 == 1);
};

/// Decodes a REQ or RESP_SEND CQE (the opcode in `w7` must be one of them) from word 7 and
/// word 5 (`byte_cnt` in its second half).
#[inline(always)]
pub(crate) fn decode_send_recv(w7: [u8; 8], w5: [u8; 8]) -> Completion {
    let sop_drop_qpn = u32::from_be_bytes([w7[0], w7[1], w7[2], w7[3]]);
    let kind = if w7[7] >> 4 == cqe_opcode::REQ {
        CompletionKind::Send {
            wqe_opcode: (sop_drop_qpn >> 24) as u8,
        }
    } else {
        CompletionKind::Recv
    };
    Completion {
        kind,
        qpn: sop_drop_qpn & 0xff_ffff,
        wqe_counter: u16::from_be_bytes([w7[4], w7[5]]),
        byte_len: u32::from_be_bytes([w5[4], w5[5], w5[6], w5[7]]),
        imm: None,
    }
}

/// `c` with `byte_cnt` (word 5).
#[inline(always)]
fn with_len(c: Completion, word: &mut impl FnMut(usize) -> [u8; 8]) -> Completion {
    let w5 = word(5);
    Completion {
        byte_len: u32::from_be_bytes([w5[4], w5[5], w5[6], w5[7]]),
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
        let w4 = word(4);
        Completion {
            kind,
            imm: Some(u32::from_be_bytes([w4[4], w4[5], w4[6], w4[7]])),
            ..with_len(c, word)
        }
    };
    match opcode {
        cqe_opcode::REQ => Ok(with_len(
            Completion {
                kind: CompletionKind::Send { wqe_opcode: top },
                ..c
            },
            word,
        )),
        cqe_opcode::RESP_SEND => Ok(with_len(c, word)),
        cqe_opcode::RESP_SEND_IMM => Ok(with_imm(CompletionKind::RecvImm)),
        cqe_opcode::RESP_WR_IMM => Ok(with_imm(CompletionKind::RecvRdmaWriteImm)),
        cqe_opcode::RESP_SEND_INV => Ok(with_imm(CompletionKind::RecvInv)),
        op @ (cqe_opcode::REQ_ERR | cqe_opcode::RESP_ERR) => {
            let w6 = word(6);
            Err(CompletionError::Work {
                requester: op == cqe_opcode::REQ_ERR,
                syndrome: Syndrome::from_raw(w6[7]),
                vendor_syndrome: w6[6],
                qpn: c.qpn,
                wqe_counter: c.wqe_counter,
                wqe_opcode: top,
            })
        }
        opcode => Err(CompletionError::Malformed { opcode }),
    }
}

/// A 64-byte CQE.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cqe {
    bytes: [u8; CQE_SIZE],
}

impl Cqe {
    /// The first 64 bytes of `b`.
    ///
    /// # Errors
    /// `b` is shorter than 64 bytes.
    #[inline]
    pub fn new(b: &[u8]) -> Result<Cqe, ShortBuffer> {
        let bytes: [u8; CQE_SIZE] =
            b.get(..CQE_SIZE)
                .and_then(|s| s.try_into().ok())
                .ok_or(ShortBuffer {
                    what: "CQE",
                    need: CQE_SIZE,
                    got: b.len(),
                })?;
        Ok(Cqe { bytes })
    }

    /// From a copied image.
    #[inline]
    pub fn from_array(bytes: [u8; CQE_SIZE]) -> Cqe {
        Cqe { bytes }
    }

    /// The raw bytes.
    #[inline]
    pub fn bytes(&self) -> &[u8; CQE_SIZE] {
        &self.bytes
    }

    /// `op_own[7:4]`.
    #[inline]
    pub fn opcode(&self) -> u8 {
        self.bytes[63] >> 4
    }
    /// `op_own[0]`.
    #[inline]
    pub fn owner(&self) -> u8 {
        self.bytes[63] & 1
    }
    /// `byte_cnt` (0x2c).
    #[inline]
    pub fn byte_cnt(&self) -> u32 {
        be32(&self.bytes, 0x2c)
    }
    /// `imm_inval_pkey` (0x24).
    #[inline]
    pub fn imm_inval_pkey(&self) -> u32 {
        be32(&self.bytes, 0x24)
    }
    /// `sop_drop_qpn` (0x38).
    #[inline]
    pub fn sop_drop_qpn(&self) -> u32 {
        be32(&self.bytes, 0x38)
    }
    /// `wqe_counter` (0x3c).
    #[inline]
    pub fn wqe_counter(&self) -> u16 {
        u16::from_be_bytes([self.bytes[0x3c], self.bytes[0x3d]])
    }
    /// `syndrome` of an error CQE (0x37).
    #[inline]
    pub fn syndrome(&self) -> u8 {
        self.bytes[0x37]
    }
    /// `vendor_err_synd` of an error CQE (0x36).
    #[inline]
    pub fn vendor_err_synd(&self) -> u8 {
        self.bytes[0x36]
    }

    /// Decodes into a completion or an error.
    ///
    /// # Errors
    /// An error CQE, or an opcode a CQ does not hold (including INVALID and RESIZE).
    #[inline]
    pub fn decode(&self) -> Result<Completion, CompletionError> {
        let word = |i: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&self.bytes[i * 8..i * 8 + 8]);
            w
        };
        decode_words(word(7), word)
    }

    /// Whether the opcode is the "nobody wrote this" one.
    #[inline]
    pub fn is_invalid(&self) -> bool {
        self.opcode() == CQE_OPCODE_INVALID
    }
}

/// EQ event types (PRM; kernel `enum mlx5_event`).
pub mod event_type {
    pub const COMP: u8 = 0x00;
    pub const PATH_MIG: u8 = 0x01;
    pub const COMM_EST: u8 = 0x02;
    pub const SQ_DRAINED: u8 = 0x03;
    pub const CQ_ERROR: u8 = 0x04;
    pub const WQ_CATAS_ERROR: u8 = 0x05;
    pub const PATH_MIG_FAILED: u8 = 0x07;
    pub const INTERNAL_ERROR: u8 = 0x08;
    pub const PORT_CHANGE: u8 = 0x09;
    pub const WQ_INVAL_REQ_ERROR: u8 = 0x10;
    pub const WQ_ACCESS_ERROR: u8 = 0x11;
    pub const SRQ_CATAS_ERROR: u8 = 0x12;
    pub const SRQ_LAST_WQE: u8 = 0x13;
    pub const SRQ_RQ_LIMIT: u8 = 0x14;
}

/// A decoded event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// A CQ has a new completion (`mlx5_eqe_comp.cqn`).
    Completion { cqn: u32 },
    /// A CQ failed (overrun, access error): `mlx5_eqe_cq_err`.
    CqError { cqn: u32, syndrome: u8 },
    /// A QP / SRQ affiliated event (`mlx5_eqe_qp_srq`): path migration, last WQE, errors.
    QpSrq {
        event_type: u8,
        /// `type`: 0 = QP, 1 = SRQ.
        resource_type: u8,
        qp_srq_n: u32,
    },
    /// Port state change (`mlx5_eqe_port_state.port`, bits 7:4).
    PortChange { sub_type: u8, port: u8 },
    /// Anything else, undecoded.
    Other { event_type: u8, sub_type: u8 },
}

/// A 64-byte EQE.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Eqe {
    bytes: [u8; EQE_SIZE],
}

impl Eqe {
    /// The first 64 bytes of `b`.
    ///
    /// # Errors
    /// `b` is shorter than 64 bytes.
    #[inline]
    pub fn new(b: &[u8]) -> Result<Eqe, ShortBuffer> {
        let bytes: [u8; EQE_SIZE] =
            b.get(..EQE_SIZE)
                .and_then(|s| s.try_into().ok())
                .ok_or(ShortBuffer {
                    what: "EQE",
                    need: EQE_SIZE,
                    got: b.len(),
                })?;
        Ok(Eqe { bytes })
    }
    /// `event_type` (byte 1).
    #[inline]
    pub fn event_type(&self) -> u8 {
        self.bytes[1]
    }
    /// `sub_type` (byte 3).
    #[inline]
    pub fn sub_type(&self) -> u8 {
        self.bytes[3]
    }
    /// `owner` (byte 0x3f, bit 0).
    #[inline]
    pub fn owner(&self) -> u8 {
        self.bytes[0x3f] & 1
    }
    /// Decodes the event data by type.
    #[inline]
    pub fn decode(&self) -> Event {
        let d = 0x20;
        match self.event_type() {
            event_type::COMP => Event::Completion {
                cqn: be32(&self.bytes, d + 0x18) & 0xff_ffff,
            },
            event_type::CQ_ERROR => Event::CqError {
                cqn: be32(&self.bytes, d) & 0xff_ffff,
                syndrome: self.bytes[d + 0xb],
            },
            t @ (event_type::PATH_MIG
            | event_type::COMM_EST
            | event_type::SQ_DRAINED
            | event_type::WQ_CATAS_ERROR
            | event_type::PATH_MIG_FAILED
            | event_type::WQ_INVAL_REQ_ERROR
            | event_type::WQ_ACCESS_ERROR
            | event_type::SRQ_CATAS_ERROR
            | event_type::SRQ_LAST_WQE
            | event_type::SRQ_RQ_LIMIT) => Event::QpSrq {
                event_type: t,
                resource_type: self.bytes[d + 0x14],
                qp_srq_n: be32(&self.bytes, d + 0x18) & 0xff_ffff,
            },
            event_type::PORT_CHANGE => Event::PortChange {
                sub_type: self.sub_type(),
                port: self.bytes[d + 8] >> 4,
            },
            event_type => Event::Other {
                event_type,
                sub_type: self.sub_type(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn poisoned() -> [u8; 64] {
        [0xa5; 64]
    }

    #[test]
    fn requester_cqe_fields() {
        let mut b = poisoned();
        b[0x2c..0x30].copy_from_slice(&64u32.to_be_bytes());
        b[0x38..0x3c].copy_from_slice(&(0x1000_4001u32 | 0x1000_0000).to_be_bytes());
        b[0x3c..0x3e].copy_from_slice(&7u16.to_be_bytes());
        b[0x3f] = (cqe_opcode::REQ << 4) | 1;
        let c = Cqe::new(&b).unwrap().decode().unwrap();
        assert_eq!(c.kind, CompletionKind::Send { wqe_opcode: 0x10 });
        assert_eq!(
            (c.qpn, c.wqe_counter, c.byte_len, c.imm),
            (0x4001, 7, 64, None)
        );
    }

    #[test]
    fn error_cqe_decodes_syndrome() {
        let mut b = poisoned();
        b[0x36] = 0x42;
        b[0x37] = 0x13;
        b[0x38..0x3c].copy_from_slice(&0x0900_4002u32.to_be_bytes());
        b[0x3c..0x3e].copy_from_slice(&3u16.to_be_bytes());
        b[0x3f] = cqe_opcode::REQ_ERR << 4;
        let e = Cqe::new(&b).unwrap().decode().unwrap_err();
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
        assert!(Cqe::new(&[0u8; 63]).is_err());
        assert!(Eqe::new(&[]).is_err());
        let mut b = poisoned();
        b[63] = 0xf0;
        assert_eq!(
            Cqe::new(&b).unwrap().decode(),
            Err(CompletionError::Malformed { opcode: 0xf })
        );
    }

    #[test]
    fn syndromes_round_trip() {
        for v in 0..=255u8 {
            assert_eq!(Syndrome::from_raw(v).raw(), v);
        }
    }

    #[test]
    fn completion_eqe_names_the_cq() {
        let mut b = [0u8; 64];
        b[1] = event_type::COMP;
        b[0x38..0x3c].copy_from_slice(&0x0000_0401u32.to_be_bytes());
        assert_eq!(
            Eqe::new(&b).unwrap().decode(),
            Event::Completion { cqn: 0x401 }
        );
    }
}
