//! Typed firmware commands.
//!
//! Every command is a type implementing [`Command`]: its opcode, its op_mod, a plain attribute
//! struct as input, an encoder into the inbox and a decoder of the outbox into a typed result.
//! [`encode_inbox`] and [`decode_outbox`] are the single place that writes the common header
//! and checks `status` / `syndrome` for every command; a transport (`crate::devx`) only moves
//! the bytes.
//!
//! Attribute structs are not wire layouts (STYLE.md §3): they hold what a caller means, and
//! the encoder maps them onto the mlx5_ifc fields, refusing values that do not fit with
//! [`CmdError::InvalidAttr`] instead of truncating them.

use super::layout::{read_bits, FlexArray, Layout, LayoutError, View, ViewMut};
use super::layouts::*;
use super::opcode::Opcode;
use super::status::Status;

/// Errors of building, checking or decoding a command.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CmdError {
    /// Firmware executed the command and refused it.
    #[error("{opcode} (op_mod {op_mod:#x}) failed: status {status}, syndrome {syndrome:#010x}")]
    Firmware {
        opcode: Opcode,
        op_mod: u16,
        status: Status,
        syndrome: u32,
    },
    /// An attribute value cannot be encoded (out of range for its field, inconsistent).
    #[error("{opcode}: invalid attribute: {what}")]
    InvalidAttr { opcode: Opcode, what: String },
    /// A mailbox does not match the command's layout.
    #[error("{opcode}: {source}")]
    Layout {
        opcode: Opcode,
        #[source]
        source: LayoutError,
    },
    /// The output mailbox is shorter than the 8-byte status header.
    #[error("{opcode}: output mailbox of {len} bytes has no status header")]
    NoStatus { opcode: Opcode, len: usize },
}

impl CmdError {
    /// The firmware status, if firmware answered with an error.
    pub fn status(&self) -> Option<Status> {
        match self {
            CmdError::Firmware { status, .. } => Some(*status),
            _ => None,
        }
    }
}

/// One firmware command.
pub trait Command {
    /// The command's opcode.
    const OPCODE: Opcode;
    /// Layout of the fixed part of the input mailbox.
    type In: Layout;
    /// Layout of the fixed part of the output mailbox.
    type Out: Layout;
    /// What a successful command yields.
    type Output;

    /// `op_mod` of this instance.
    fn op_mod(&self) -> u16 {
        0
    }
    /// Input bytes after the fixed part (a flexible array, a general object context).
    fn inbox_extra(&self) -> usize {
        0
    }
    /// Output bytes after the fixed part.
    fn outbox_extra(&self) -> usize {
        0
    }
    /// Writes the command's fields. `opcode` and `op_mod` are already set; `inbox` is zeroed and
    /// `Self::In::SIZE_BYTES + self.inbox_extra()` long.
    ///
    /// # Errors
    /// [`CmdError::InvalidAttr`] or [`CmdError::Layout`] for attributes that do not fit.
    fn encode(&self, inbox: &mut ViewMut<'_, Self::In>) -> Result<(), CmdError>;
    /// Decodes a successful output mailbox (status already checked, length at least the fixed
    /// part).
    ///
    /// # Errors
    /// [`CmdError::Layout`] when the output is malformed.
    fn decode(&self, outbox: View<'_, Self::Out>) -> Result<Self::Output, CmdError>;
}

/// Builds the complete input mailbox of `cmd`.
///
/// # Errors
/// The command's own encoding errors.
pub fn encode_inbox<C: Command>(cmd: &C) -> Result<Vec<u8>, CmdError> {
    let mut buf = vec![0u8; C::In::SIZE_BYTES + cmd.inbox_extra()];
    let lay = |source| CmdError::Layout {
        opcode: C::OPCODE,
        source,
    };
    {
        let mut hdr = ViewMut::<mbox_in::Layout>::new(&mut buf).map_err(lay)?;
        hdr.set(mbox_in::opcode, u64::from(C::OPCODE.0));
        hdr.set(mbox_in::op_mod, u64::from(cmd.op_mod()));
    }
    let mut v = ViewMut::<C::In>::new(&mut buf).map_err(lay)?;
    cmd.encode(&mut v)?;
    Ok(buf)
}

/// Length of the output mailbox to provide for `cmd`.
pub fn outbox_len<C: Command>(cmd: &C) -> usize {
    C::Out::SIZE_BYTES + cmd.outbox_extra()
}

/// Checks the `status` / `syndrome` header of any output mailbox.
///
/// # Errors
/// [`CmdError::Firmware`] for a non-zero status; [`CmdError::NoStatus`] when `outbox` is
/// shorter than the header.
pub fn check_status(opcode: Opcode, op_mod: u16, outbox: &[u8]) -> Result<(), CmdError> {
    // `status` and `syndrome` are the first two dwords of every output (`mbox_out`); the rest of
    // `mbox_out` is reserved, so 8 bytes are enough to judge any answer.
    let Some(hdr) = outbox.get(..8) else {
        return Err(CmdError::NoStatus {
            opcode,
            len: outbox.len(),
        });
    };
    let status = read_bits(hdr, mbox_out::status.offset(), mbox_out::status.width()) as u8;
    let syndrome = read_bits(hdr, mbox_out::syndrome.offset(), mbox_out::syndrome.width()) as u32;
    if status != 0 {
        return Err(CmdError::Firmware {
            opcode,
            op_mod,
            status: Status(status),
            syndrome,
        });
    }
    Ok(())
}

/// Checks the status of `outbox` and decodes it as `cmd`'s output.
///
/// # Errors
/// [`check_status`] errors, a too-short outbox, or the command's decoding errors.
pub fn decode_outbox<C: Command>(cmd: &C, outbox: &[u8]) -> Result<C::Output, CmdError> {
    check_status(C::OPCODE, cmd.op_mod(), outbox)?;
    let v = View::<C::Out>::new(outbox).map_err(|source| CmdError::Layout {
        opcode: C::OPCODE,
        source,
    })?;
    cmd.decode(v)
}

/// Writes a user-supplied value, refusing one that does not fit its field.
fn put<L: Layout>(
    v: &mut ViewMut<'_, L>,
    opcode: Opcode,
    f: super::Field<L>,
    value: u64,
    what: &str,
) -> Result<(), CmdError> {
    v.try_set(f, value).map_err(|_| CmdError::InvalidAttr {
        opcode,
        what: format!("{what} = {value:#x} does not fit in {} bits", f.width()),
    })
}

fn put_flex<L: Layout>(
    v: &mut ViewMut<'_, L>,
    opcode: Opcode,
    a: FlexArray<L>,
    items: &[u64],
) -> Result<(), CmdError> {
    for (i, &x) in items.iter().enumerate() {
        v.flex_set(a, i, x)
            .map_err(|source| CmdError::Layout { opcode, source })?;
    }
    Ok(())
}

fn flex_bytes<L: Layout>(v: &View<'_, L>) -> Vec<u8> {
    v.bytes().get(L::SIZE_BYTES..).unwrap_or_default().to_vec()
}

// ---------------------------------------------------------------------------------------------
// Commands whose input is one object number and whose output is only the status.

macro_rules! id_command {
    ($(#[$m:meta])* $ty:ident, $op:ident, $lay:ident, $field:ident) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub struct $ty(pub u32);
        impl Command for $ty {
            const OPCODE: Opcode = Opcode::$op;
            type In = $lay::Layout;
            type Out = mbox_out::Layout;
            type Output = ();
            fn encode(&self, v: &mut ViewMut<'_, Self::In>) -> Result<(), CmdError> {
                put(v, Self::OPCODE, $lay::$field, u64::from(self.0), stringify!($field))
            }
            fn decode(&self, _: View<'_, Self::Out>) -> Result<(), CmdError> {
                Ok(())
            }
        }
    };
}

id_command!(/// DEALLOC_PD.
    DeallocPd, DEALLOC_PD, dealloc_pd_in, pd);
id_command!(/// DESTROY_CQ.
    DestroyCq, DESTROY_CQ, destroy_cq_in, cqn);
id_command!(/// DESTROY_SQ.
    DestroySq, DESTROY_SQ, destroy_sq_in, sqn);
id_command!(/// DESTROY_RQ.
    DestroyRq, DESTROY_RQ, destroy_rq_in, rqn);
id_command!(/// DESTROY_QP.
    DestroyQp, DESTROY_QP, destroy_qp_in, qpn);

// ---------------------------------------------------------------------------------------------
// Device queries.

/// QUERY_HCA_CAP: one capability page (`cap_type`, e.g. 0 general, 0x20 general 2, 0x24 DPA).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueryHcaCap {
    pub cap_type: u16,
    /// Current values (`true`) or maximum supported (`false`).
    pub current: bool,
}

impl QueryHcaCap {
    pub const GENERAL: u16 = 0x0;
    pub const GENERAL_2: u16 = 0x20;
    pub const DPA: u16 = super::layouts::DPA_CAP_TYPE;
}

impl Command for QueryHcaCap {
    const OPCODE: Opcode = Opcode::QUERY_HCA_CAP;
    type In = query_hca_cap_in::Layout;
    type Out = query_hca_cap_out::Layout;
    /// The capability page, 4096 bytes.
    type Output = Vec<u8>;
    fn op_mod(&self) -> u16 {
        (self.cap_type << 1) | u16::from(self.current)
    }
    fn encode(&self, _: &mut ViewMut<'_, Self::In>) -> Result<(), CmdError> {
        if self.cap_type > 0x7fff {
            return Err(CmdError::InvalidAttr {
                opcode: Self::OPCODE,
                what: format!("cap_type {:#x} > 0x7fff", self.cap_type),
            });
        }
        Ok(())
    }
    fn decode(&self, v: View<'_, Self::Out>) -> Result<Vec<u8>, CmdError> {
        let off = (query_hca_cap_out::capability
            .at(0)
            .map_or(0x80, |f| f.offset())
            / 8) as usize;
        Ok(v.bytes()
            .get(off..Self::Out::SIZE_BYTES)
            .unwrap_or_default()
            .to_vec())
    }
}

/// NOP: the cheapest round trip to firmware.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Nop;

impl Command for Nop {
    const OPCODE: Opcode = Opcode::NOP;
    type In = nop_in::Layout;
    type Out = mbox_out::Layout;
    type Output = ();
    fn encode(&self, _: &mut ViewMut<'_, Self::In>) -> Result<(), CmdError> {
        Ok(())
    }
    fn decode(&self, _: View<'_, Self::Out>) -> Result<(), CmdError> {
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// PD, transport domain, mkey.

/// ALLOC_PD: yields the PD number.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AllocPd;

impl Command for AllocPd {
    const OPCODE: Opcode = Opcode::ALLOC_PD;
    type In = alloc_pd_in::Layout;
    type Out = alloc_pd_out::Layout;
    type Output = u32;
    fn encode(&self, _: &mut ViewMut<'_, Self::In>) -> Result<(), CmdError> {
        Ok(())
    }
    fn decode(&self, v: View<'_, Self::Out>) -> Result<u32, CmdError> {
        Ok(v.get(alloc_pd_out::pd) as u32)
    }
}

/// ALLOC_TRANSPORT_DOMAIN: yields the transport domain number.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AllocTransportDomain;

impl Command for AllocTransportDomain {
    const OPCODE: Opcode = Opcode::ALLOC_TRANSPORT_DOMAIN;
    type In = alloc_transport_domain_in::Layout;
    type Out = alloc_transport_domain_out::Layout;
    type Output = u32;
    fn encode(&self, _: &mut ViewMut<'_, Self::In>) -> Result<(), CmdError> {
        Ok(())
    }
    fn decode(&self, v: View<'_, Self::Out>) -> Result<u32, CmdError> {
        Ok(v.get(alloc_transport_domain_out::transport_domain) as u32)
    }
}

/// Access rights of a memory key (the `mkc` bits `lr`, `lw`, `rr`, `rw`, `a`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MkeyAccess {
    pub local_read: bool,
    pub local_write: bool,
    pub remote_read: bool,
    pub remote_write: bool,
    pub atomic: bool,
}

/// CREATE_MKEY over a UMEM (`mkey_umem_valid`, access mode MTT).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CreateMkey {
    pub pd: u32,
    /// Virtual address the key starts at.
    pub start_addr: u64,
    pub len: u64,
    pub access: MkeyAccess,
    pub umem_id: u32,
    pub umem_offset: u64,
    /// Low 8 bits of the key, chosen by software.
    pub key: u8,
    /// log2 of the translation page size.
    pub log_page_size: u8,
}

impl CreateMkey {
    /// `mkc.access_mode_1_0` for MTT translation (PRM; `MLX5_MKC_ACCESS_MODE_MTT`).
    pub const ACCESS_MODE_MTT: u64 = 0x1;
}

impl Command for CreateMkey {
    const OPCODE: Opcode = Opcode::CREATE_MKEY;
    type In = create_mkey_in::Layout;
    type Out = create_mkey_out::Layout;
    /// The key: `mkey_index << 8 | key`.
    type Output = u32;
    fn encode(&self, v: &mut ViewMut<'_, Self::In>) -> Result<(), CmdError> {
        let op = Self::OPCODE;
        let m = create_mkey_in::memory_key_mkey_entry;
        v.set(create_mkey_in::mkey_umem_valid, 1);
        put(
            v,
            op,
            create_mkey_in::mkey_umem_id,
            u64::from(self.umem_id),
            "umem_id",
        )?;
        v.set(create_mkey_in::mkey_umem_offset, self.umem_offset);
        v.set(m.at(mkc::access_mode_1_0), Self::ACCESS_MODE_MTT);
        v.set(m.at(mkc::lr), u64::from(self.access.local_read));
        v.set(m.at(mkc::lw), u64::from(self.access.local_write));
        v.set(m.at(mkc::rr), u64::from(self.access.remote_read));
        v.set(m.at(mkc::rw), u64::from(self.access.remote_write));
        v.set(m.at(mkc::a), u64::from(self.access.atomic));
        v.set(m.at(mkc::qpn), 0xff_ffff);
        v.set(m.at(mkc::mkey_7_0), u64::from(self.key));
        put(v, op, m.at(mkc::pd), u64::from(self.pd), "pd")?;
        v.set(m.at(mkc::start_addr), self.start_addr);
        v.set(m.at(mkc::len), self.len);
        put(
            v,
            op,
            m.at(mkc::log_page_size),
            u64::from(self.log_page_size),
            "log_page_size",
        )?;
        Ok(())
    }
    fn decode(&self, v: View<'_, Self::Out>) -> Result<u32, CmdError> {
        Ok(((v.get(create_mkey_out::mkey_index) as u32) << 8) | u32::from(self.key))
    }
}

// ---------------------------------------------------------------------------------------------
// Completion queues.

/// What raises a CQ's completion events: an EQ, a DPA thread or a DPA EQ (`apu_cq`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CqEventTarget {
    /// An ordinary EQ (`c_eqn_or_apu_element` = EQN), e.g. from QUERY_EQN.
    Eq(u32),
    /// A DPA_THREAD object (`apu_cq` = 1, `apu_element_type` THREAD).
    DpaThread(u32),
    /// A DPA_EQ object (`apu_cq` = 1, `apu_element_type` EQ).
    DpaEq(u32),
}

/// Where a queue's ring and doorbell record are (both UMEMs, as DevX requires).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RingMem {
    pub umem_id: u32,
    pub umem_offset: u64,
    pub dbr_umem_id: u32,
    pub dbr_offset: u64,
}

/// CREATE_CQ with the ring and doorbell record in UMEMs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CreateCq {
    pub log_cq_size: u8,
    /// 0 = 64-byte CQEs, 1 = 128-byte CQEs (`cqe_sz`).
    pub cqe_sz: u8,
    pub uar_page: u32,
    pub target: CqEventTarget,
    pub mem: RingMem,
    /// Moderation: `cq_period` (usec) and `cq_max_count`.
    pub cq_period: u16,
    pub cq_max_count: u16,
    /// Allow overrun (`oi`).
    pub oi: bool,
}

impl Command for CreateCq {
    const OPCODE: Opcode = Opcode::CREATE_CQ;
    type In = create_cq_in::Layout;
    type Out = create_cq_out::Layout;
    type Output = u32;
    fn encode(&self, v: &mut ViewMut<'_, Self::In>) -> Result<(), CmdError> {
        let op = Self::OPCODE;
        let c = create_cq_in::cq_context;
        if self.cqe_sz > 1 {
            return Err(CmdError::InvalidAttr {
                opcode: op,
                what: format!("cqe_sz {} (0 = 64 B, 1 = 128 B)", self.cqe_sz),
            });
        }
        put(
            v,
            op,
            c.at(cqc::log_cq_size),
            u64::from(self.log_cq_size),
            "log_cq_size",
        )?;
        v.set(c.at(cqc::cqe_sz), u64::from(self.cqe_sz));
        put(
            v,
            op,
            c.at(cqc::uar_page),
            u64::from(self.uar_page),
            "uar_page",
        )?;
        v.set(c.at(cqc::oi), u64::from(self.oi));
        put(
            v,
            op,
            c.at(cqc::cq_period),
            u64::from(self.cq_period),
            "cq_period",
        )?;
        v.set(c.at(cqc::cq_max_count), u64::from(self.cq_max_count));
        let (apu, ty, id) = match self.target {
            CqEventTarget::Eq(n) => (0, 0, n),
            CqEventTarget::DpaThread(n) => (1, apu_element_type::THREAD, n),
            CqEventTarget::DpaEq(n) => (1, apu_element_type::EQ, n),
        };
        v.set(c.at(cqc::apu_cq), apu);
        v.set(c.at(cqc::apu_element_type), u64::from(ty));
        v.set(c.at(cqc::c_eqn_or_apu_element), u64::from(id));
        v.set(c.at(cqc::dbr_umem_valid), 1);
        v.set(c.at(cqc::dbr_umem_id), u64::from(self.mem.dbr_umem_id));
        v.set(c.at(cqc::dbr_addr), self.mem.dbr_offset);
        v.set(create_cq_in::cq_umem_valid, 1);
        v.set(create_cq_in::cq_umem_id, u64::from(self.mem.umem_id));
        v.set(create_cq_in::cq_umem_offset, self.mem.umem_offset);
        Ok(())
    }
    fn decode(&self, v: View<'_, Self::Out>) -> Result<u32, CmdError> {
        Ok(v.get(create_cq_out::cqn) as u32)
    }
}

/// MODIFY_CQ: change moderation (`modify_field_select` bits period 0x1, max_count 0x2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModifyCqModeration {
    pub cqn: u32,
    pub cq_period: u16,
    pub cq_max_count: u16,
}

impl Command for ModifyCqModeration {
    const OPCODE: Opcode = Opcode::MODIFY_CQ;
    type In = modify_cq_in::Layout;
    type Out = mbox_out::Layout;
    type Output = ();
    fn encode(&self, v: &mut ViewMut<'_, Self::In>) -> Result<(), CmdError> {
        let op = Self::OPCODE;
        put(v, op, modify_cq_in::cqn, u64::from(self.cqn), "cqn")?;
        // MLX5_CQ_MODIFY_PERIOD | MLX5_CQ_MODIFY_COUNT (kernel include/linux/mlx5/cq.h).
        v.set(modify_cq_in::modify_field_select, 0x3);
        let c = modify_cq_in::cq_context;
        put(
            v,
            op,
            c.at(cqc::cq_period),
            u64::from(self.cq_period),
            "cq_period",
        )?;
        v.set(c.at(cqc::cq_max_count), u64::from(self.cq_max_count));
        Ok(())
    }
    fn decode(&self, _: View<'_, Self::Out>) -> Result<(), CmdError> {
        Ok(())
    }
}

/// QUERY_CQ: yields the CQ context bytes (`cqc`), readable with a `View<cqc::Layout>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueryCq(pub u32);

impl Command for QueryCq {
    const OPCODE: Opcode = Opcode::QUERY_CQ;
    type In = query_cq_in::Layout;
    type Out = query_cq_out::Layout;
    type Output = Vec<u8>;
    fn encode(&self, v: &mut ViewMut<'_, Self::In>) -> Result<(), CmdError> {
        put(v, Self::OPCODE, query_cq_in::cqn, u64::from(self.0), "cqn")
    }
    fn decode(&self, v: View<'_, Self::Out>) -> Result<Vec<u8>, CmdError> {
        Ok(v.nested(query_cq_out::cq_context).bytes()[..cqc::Layout::SIZE_BYTES].to_vec())
    }
}

// ---------------------------------------------------------------------------------------------
// Work queues.

/// Queue states of SQ / RQ / RMP (PRM; `MLX5_SQC_STATE_*`, `MLX5_RQC_STATE_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum WqState {
    Rst = 0x0,
    Rdy = 0x1,
    Err = 0x3,
}

impl WqState {
    /// Decodes a `state` field.
    pub fn from_raw(v: u64) -> Option<WqState> {
        match v {
            0 => Some(WqState::Rst),
            1 => Some(WqState::Rdy),
            3 => Some(WqState::Err),
            _ => None,
        }
    }
}

/// The `wq` part of an SQ / RQ / RMP: cyclic ring in a UMEM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WqAttr {
    pub pd: u32,
    pub uar_page: u32,
    /// log2 of the WQE stride in bytes (`log_wq_stride`; 6 = 64 B for SQs).
    pub log_wq_stride: u8,
    /// log2 of the number of WQEs.
    pub log_wq_sz: u8,
    pub mem: RingMem,
}

/// `wq_type` cyclic (PRM `MLX5_WQ_TYPE_CYCLIC`).
pub const WQ_TYPE_CYCLIC: u64 = 0x1;

fn encode_wq<L: Layout>(
    v: &mut ViewMut<'_, L>,
    op: Opcode,
    w: super::layout::Nested<L, wq::Layout>,
    a: &WqAttr,
) -> Result<(), CmdError> {
    v.set(w.at(wq::wq_type), WQ_TYPE_CYCLIC);
    put(v, op, w.at(wq::pd), u64::from(a.pd), "pd")?;
    put(v, op, w.at(wq::uar_page), u64::from(a.uar_page), "uar_page")?;
    put(
        v,
        op,
        w.at(wq::log_wq_stride),
        u64::from(a.log_wq_stride),
        "log_wq_stride",
    )?;
    put(
        v,
        op,
        w.at(wq::log_wq_sz),
        u64::from(a.log_wq_sz),
        "log_wq_sz",
    )?;
    v.set(w.at(wq::wq_umem_valid), 1);
    v.set(w.at(wq::wq_umem_id), u64::from(a.mem.umem_id));
    v.set(w.at(wq::wq_umem_offset), a.mem.umem_offset);
    v.set(w.at(wq::dbr_umem_valid), 1);
    v.set(w.at(wq::dbr_umem_id), u64::from(a.mem.dbr_umem_id));
    v.set(w.at(wq::dbr_addr), a.mem.dbr_offset);
    Ok(())
}

/// CREATE_SQ (Ethernet send queue over one TIS).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CreateSq {
    pub cqn: u32,
    pub tisn: u32,
    pub wq: WqAttr,
    pub flush_in_error_en: bool,
}

impl Command for CreateSq {
    const OPCODE: Opcode = Opcode::CREATE_SQ;
    type In = create_sq_in::Layout;
    type Out = create_sq_out::Layout;
    type Output = u32;
    fn encode(&self, v: &mut ViewMut<'_, Self::In>) -> Result<(), CmdError> {
        let op = Self::OPCODE;
        let c = create_sq_in::ctx;
        put(v, op, c.at(sqc::cqn), u64::from(self.cqn), "cqn")?;
        v.set(c.at(sqc::tis_lst_sz), 1);
        put(v, op, c.at(sqc::tis_num_0), u64::from(self.tisn), "tisn")?;
        v.set(
            c.at(sqc::flush_in_error_en),
            u64::from(self.flush_in_error_en),
        );
        encode_wq(v, op, c.nested(sqc::wq), &self.wq)
    }
    fn decode(&self, v: View<'_, Self::Out>) -> Result<u32, CmdError> {
        Ok(v.get(create_sq_out::sqn) as u32)
    }
}

/// MODIFY_SQ: a state transition (`sq_state` is the current state, `sqc.state` the next).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModifySq {
    pub sqn: u32,
    pub from: WqState,
    pub to: WqState,
}

impl Command for ModifySq {
    const OPCODE: Opcode = Opcode::MODIFY_SQ;
    type In = modify_sq_in::Layout;
    type Out = mbox_out::Layout;
    type Output = ();
    fn encode(&self, v: &mut ViewMut<'_, Self::In>) -> Result<(), CmdError> {
        put(
            v,
            Self::OPCODE,
            modify_sq_in::sqn,
            u64::from(self.sqn),
            "sqn",
        )?;
        v.set(modify_sq_in::sq_state, self.from as u64);
        v.set(modify_sq_in::sq_context.at(sqc::state), self.to as u64);
        Ok(())
    }
    fn decode(&self, _: View<'_, Self::Out>) -> Result<(), CmdError> {
        Ok(())
    }
}

/// CREATE_RQ (cyclic receive queue).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CreateRq {
    pub cqn: u32,
    pub wq: WqAttr,
    pub flush_in_error_en: bool,
}

impl Command for CreateRq {
    const OPCODE: Opcode = Opcode::CREATE_RQ;
    type In = create_rq_in::Layout;
    type Out = create_rq_out::Layout;
    type Output = u32;
    fn encode(&self, v: &mut ViewMut<'_, Self::In>) -> Result<(), CmdError> {
        let op = Self::OPCODE;
        let c = create_rq_in::ctx;
        put(v, op, c.at(rqc::cqn), u64::from(self.cqn), "cqn")?;
        v.set(
            c.at(rqc::flush_in_error_en),
            u64::from(self.flush_in_error_en),
        );
        encode_wq(v, op, c.nested(rqc::wq), &self.wq)
    }
    fn decode(&self, v: View<'_, Self::Out>) -> Result<u32, CmdError> {
        Ok(v.get(create_rq_out::rqn) as u32)
    }
}

/// MODIFY_RQ: a state transition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModifyRq {
    pub rqn: u32,
    pub from: WqState,
    pub to: WqState,
}

impl Command for ModifyRq {
    const OPCODE: Opcode = Opcode::MODIFY_RQ;
    type In = modify_rq_in::Layout;
    type Out = mbox_out::Layout;
    type Output = ();
    fn encode(&self, v: &mut ViewMut<'_, Self::In>) -> Result<(), CmdError> {
        put(
            v,
            Self::OPCODE,
            modify_rq_in::rqn,
            u64::from(self.rqn),
            "rqn",
        )?;
        v.set(modify_rq_in::rq_state, self.from as u64);
        v.set(modify_rq_in::ctx.at(rqc::state), self.to as u64);
        Ok(())
    }
    fn decode(&self, _: View<'_, Self::Out>) -> Result<(), CmdError> {
        Ok(())
    }
}

/// CREATE_RMP (shared receive pool).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CreateRmp {
    pub wq: WqAttr,
}

impl Command for CreateRmp {
    const OPCODE: Opcode = Opcode::CREATE_RMP;
    type In = create_rmp_in::Layout;
    type Out = create_rmp_out::Layout;
    type Output = u32;
    fn encode(&self, v: &mut ViewMut<'_, Self::In>) -> Result<(), CmdError> {
        v.set(create_rmp_in::ctx.at(rmpc::state), WqState::Rdy as u64);
        encode_wq(
            v,
            Self::OPCODE,
            create_rmp_in::ctx.nested(rmpc::wq),
            &self.wq,
        )
    }
    fn decode(&self, v: View<'_, Self::Out>) -> Result<u32, CmdError> {
        Ok(v.get(create_rmp_out::rmpn) as u32)
    }
}

// ---------------------------------------------------------------------------------------------
// TIS, TIR, RQT.

/// CREATE_TIS.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CreateTis {
    pub transport_domain: u32,
    pub pd: u32,
}

impl Command for CreateTis {
    const OPCODE: Opcode = Opcode::CREATE_TIS;
    type In = create_tis_in::Layout;
    type Out = create_tis_out::Layout;
    type Output = u32;
    fn encode(&self, v: &mut ViewMut<'_, Self::In>) -> Result<(), CmdError> {
        let op = Self::OPCODE;
        put(
            v,
            op,
            create_tis_in::ctx.at(tisc::transport_domain),
            u64::from(self.transport_domain),
            "transport_domain",
        )?;
        put(
            v,
            op,
            create_tis_in::ctx.at(tisc::pd),
            u64::from(self.pd),
            "pd",
        )
    }
    fn decode(&self, v: View<'_, Self::Out>) -> Result<u32, CmdError> {
        Ok(v.get(create_tis_out::tisn) as u32)
    }
}

/// CREATE_TIR delivering to one RQ (`disp_type` direct).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CreateTir {
    pub transport_domain: u32,
    pub inline_rqn: u32,
}

impl Command for CreateTir {
    const OPCODE: Opcode = Opcode::CREATE_TIR;
    type In = create_tir_in::Layout;
    type Out = create_tir_out::Layout;
    type Output = u32;
    fn encode(&self, v: &mut ViewMut<'_, Self::In>) -> Result<(), CmdError> {
        let op = Self::OPCODE;
        let c = create_tir_in::ctx;
        // disp_type DIRECT = 0 (PRM `MLX5_TIRC_DISP_TYPE_DIRECT`): the zeroed default.
        put(
            v,
            op,
            c.at(tirc::inline_rqn),
            u64::from(self.inline_rqn),
            "inline_rqn",
        )?;
        put(
            v,
            op,
            c.at(tirc::transport_domain),
            u64::from(self.transport_domain),
            "transport_domain",
        )
    }
    fn decode(&self, v: View<'_, Self::Out>) -> Result<u32, CmdError> {
        Ok(v.get(create_tir_out::tirn) as u32)
    }
}

/// CREATE_RQT over a list of RQs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreateRqt {
    pub rqns: Vec<u32>,
}

impl Command for CreateRqt {
    const OPCODE: Opcode = Opcode::CREATE_RQT;
    type In = create_rqt_in::Layout;
    type Out = create_rqt_out::Layout;
    type Output = u32;
    fn inbox_extra(&self) -> usize {
        4 * self.rqns.len()
    }
    fn encode(&self, v: &mut ViewMut<'_, Self::In>) -> Result<(), CmdError> {
        let op = Self::OPCODE;
        let n = self.rqns.len() as u64;
        if n == 0 {
            return Err(CmdError::InvalidAttr {
                opcode: op,
                what: "an RQT needs at least one RQ".into(),
            });
        }
        let c = create_rqt_in::rqt_context;
        put(v, op, c.at(rqtc::rqt_max_size), n, "rqt_max_size")?;
        put(v, op, c.at(rqtc::rqt_actual_size), n, "rqt_actual_size")?;
        let list: Vec<u64> = self
            .rqns
            .iter()
            .map(|&r| u64::from(r & 0xff_ffff))
            .collect();
        put_flex(v, op, create_rqt_in::rq_num, &list)
    }
    fn decode(&self, v: View<'_, Self::Out>) -> Result<u32, CmdError> {
        Ok(v.get(create_rqt_out::rqtn) as u32)
    }
}

// ---------------------------------------------------------------------------------------------
// Flow steering.

/// `table_type` NIC receive (PRM `FS_FT_NIC_RX`).
pub const FT_NIC_RX: u64 = 0x0;

/// CREATE_FLOW_TABLE (NIC RX).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CreateFlowTable {
    pub level: u8,
    pub log_size: u8,
}

impl Command for CreateFlowTable {
    const OPCODE: Opcode = Opcode::CREATE_FLOW_TABLE;
    type In = create_flow_table_in::Layout;
    type Out = create_flow_table_out::Layout;
    type Output = u32;
    fn encode(&self, v: &mut ViewMut<'_, Self::In>) -> Result<(), CmdError> {
        let c = create_flow_table_in::flow_table_context;
        v.set(create_flow_table_in::table_type, FT_NIC_RX);
        v.set(c.at(flow_table_context::level), u64::from(self.level));
        v.set(c.at(flow_table_context::log_size), u64::from(self.log_size));
        Ok(())
    }
    fn decode(&self, v: View<'_, Self::Out>) -> Result<u32, CmdError> {
        Ok(v.get(create_flow_table_out::table_id) as u32)
    }
}

/// Outer-header match on the fields a simple receive steering needs. `None` = wildcard.
/// Used both as a group's criteria (which fields are matched) and as an entry's values.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OuterMatch {
    pub dmac: Option<[u8; 6]>,
    pub ethertype: Option<u16>,
    pub ip_protocol: Option<u8>,
    pub dst_ipv4: Option<[u8; 4]>,
    pub udp_dport: Option<u16>,
}

/// `match_criteria_enable` bit for outer headers (PRM `MLX5_MATCH_OUTER_HEADERS`).
pub const MATCH_OUTER_HEADERS: u64 = 0x1;

fn encode_outer<L: Layout>(
    v: &mut ViewMut<'_, L>,
    p: super::layout::Nested<L, fte_match_param::Layout>,
    m: &OuterMatch,
    mask: bool,
) -> Result<(), CmdError> {
    let o = p.nested(fte_match_param::outer_headers);
    let val = |x: u64, all: u64| if mask { all } else { x };
    if let Some(d) = m.dmac {
        let hi = u64::from(u16::from_be_bytes([d[0], d[1]]));
        let lo = u64::from(u32::from_be_bytes([d[2], d[3], d[4], d[5]]));
        v.set(
            o.at(fte_match_set_lyr_2_4::dmac_47_16),
            val(hi << 16 | lo >> 16, 0xffff_ffff),
        );
        v.set(
            o.at(fte_match_set_lyr_2_4::dmac_15_0),
            val(lo & 0xffff, 0xffff),
        );
    }
    if let Some(e) = m.ethertype {
        v.set(
            o.at(fte_match_set_lyr_2_4::ethertype),
            val(u64::from(e), 0xffff),
        );
    }
    if let Some(p) = m.ip_protocol {
        v.set(
            o.at(fte_match_set_lyr_2_4::ip_protocol),
            val(u64::from(p), 0xff),
        );
    }
    if let Some(ip) = m.dst_ipv4 {
        // The IPv4 address is the last dword of the 128-bit dst_ipv4_dst_ipv6 field.
        let f = fte_match_set_lyr_2_4::dst_ipv4_dst_ipv6;
        for (i, b) in ip.iter().enumerate() {
            if let Some(e) = f.at(12 + i as u32) {
                v.set(o.at(e), val(u64::from(*b), 0xff));
            }
        }
    }
    if let Some(port) = m.udp_dport {
        v.set(
            o.at(fte_match_set_lyr_2_4::udp_dport),
            val(u64::from(port), 0xffff),
        );
    }
    Ok(())
}

/// CREATE_FLOW_GROUP of entries `start..=end` matching the fields set in `criteria`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CreateFlowGroup {
    pub table_id: u32,
    pub start_flow_index: u32,
    pub end_flow_index: u32,
    pub criteria: OuterMatch,
}

impl Command for CreateFlowGroup {
    const OPCODE: Opcode = Opcode::CREATE_FLOW_GROUP;
    type In = create_flow_group_in::Layout;
    type Out = create_flow_group_out::Layout;
    type Output = u32;
    fn encode(&self, v: &mut ViewMut<'_, Self::In>) -> Result<(), CmdError> {
        let op = Self::OPCODE;
        if self.end_flow_index < self.start_flow_index {
            return Err(CmdError::InvalidAttr {
                opcode: op,
                what: "end_flow_index < start_flow_index".into(),
            });
        }
        v.set(create_flow_group_in::table_type, FT_NIC_RX);
        put(
            v,
            op,
            create_flow_group_in::table_id,
            u64::from(self.table_id),
            "table_id",
        )?;
        v.set(
            create_flow_group_in::start_flow_index,
            u64::from(self.start_flow_index),
        );
        v.set(
            create_flow_group_in::end_flow_index,
            u64::from(self.end_flow_index),
        );
        if self.criteria != OuterMatch::default() {
            v.set(
                create_flow_group_in::match_criteria_enable,
                MATCH_OUTER_HEADERS,
            );
        }
        encode_outer(
            v,
            create_flow_group_in::match_criteria,
            &self.criteria,
            true,
        )
    }
    fn decode(&self, v: View<'_, Self::Out>) -> Result<u32, CmdError> {
        Ok(v.get(create_flow_group_out::group_id) as u32)
    }
}

/// `flow_context.action` forward to destinations (PRM `MLX5_FLOW_CONTEXT_ACTION_FWD_DEST`).
pub const FLOW_ACTION_FWD_DEST: u64 = 0x4;
/// `destination_type` TIR (PRM `MLX5_FLOW_DESTINATION_TYPE_TIR`).
pub const FLOW_DEST_TIR: u64 = 0x2;

/// SET_FLOW_TABLE_ENTRY forwarding matching packets to one TIR.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SetFte {
    pub table_id: u32,
    pub flow_index: u32,
    pub group_id: u32,
    pub value: OuterMatch,
    pub tirn: u32,
}

impl Command for SetFte {
    const OPCODE: Opcode = Opcode::SET_FLOW_TABLE_ENTRY;
    type In = set_fte_in::Layout;
    type Out = set_fte_out::Layout;
    type Output = ();
    fn inbox_extra(&self) -> usize {
        8
    }
    fn encode(&self, v: &mut ViewMut<'_, Self::In>) -> Result<(), CmdError> {
        let op = Self::OPCODE;
        let c = set_fte_in::flow_context;
        v.set(set_fte_in::table_type, FT_NIC_RX);
        put(
            v,
            op,
            set_fte_in::table_id,
            u64::from(self.table_id),
            "table_id",
        )?;
        v.set(set_fte_in::flow_index, u64::from(self.flow_index));
        v.set(c.at(flow_context::group_id), u64::from(self.group_id));
        v.set(c.at(flow_context::action), FLOW_ACTION_FWD_DEST);
        v.set(c.at(flow_context::destination_list_size), 1);
        encode_outer(v, c.nested(flow_context::match_value), &self.value, false)?;
        if self.tirn > 0xff_ffff {
            return Err(CmdError::InvalidAttr {
                opcode: op,
                what: format!("tirn {:#x} exceeds 24 bits", self.tirn),
            });
        }
        // dest_format_struct: destination_type[8] | destination_id[24], then 32 reserved bits.
        put_flex(
            v,
            op,
            set_fte_in::destination,
            &[(FLOW_DEST_TIR << 56) | (u64::from(self.tirn) << 32)],
        )
    }
    fn decode(&self, _: View<'_, Self::Out>) -> Result<(), CmdError> {
        Ok(())
    }
}

/// SET_FLOW_TABLE_ROOT (NIC RX).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SetFlowTableRoot {
    pub table_id: u32,
}

impl Command for SetFlowTableRoot {
    const OPCODE: Opcode = Opcode::SET_FLOW_TABLE_ROOT;
    type In = set_flow_table_root_in::Layout;
    type Out = mbox_out::Layout;
    type Output = ();
    fn encode(&self, v: &mut ViewMut<'_, Self::In>) -> Result<(), CmdError> {
        v.set(set_flow_table_root_in::table_type, FT_NIC_RX);
        put(
            v,
            Self::OPCODE,
            set_flow_table_root_in::table_id,
            u64::from(self.table_id),
            "table_id",
        )
    }
    fn decode(&self, _: View<'_, Self::Out>) -> Result<(), CmdError> {
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// Queue pairs.

/// QP states (PRM `MLX5_QPC_STATE_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum QpState {
    Rst = 0x0,
    Init = 0x1,
    Rtr = 0x2,
    Rts = 0x3,
    SqEr = 0x4,
    Err = 0x6,
}

impl QpState {
    pub fn from_raw(v: u64) -> Option<QpState> {
        Some(match v {
            0 => QpState::Rst,
            1 => QpState::Init,
            2 => QpState::Rtr,
            3 => QpState::Rts,
            4 => QpState::SqEr,
            6 => QpState::Err,
            _ => return None,
        })
    }
}

/// `qpc.st` RC (PRM `MLX5_QPC_ST_RC`).
pub const QPC_ST_RC: u64 = 0x0;
/// `qpc.rq_type` for a QP without receive queue (PRM / rdma-core `MLX5_ZERO_LEN_RQ`).
pub const QPC_RQ_TYPE_ZERO_LEN_RQ: u64 = 0x3;
/// `qpc.pm_state` migrated (PRM `MLX5_QPC_PM_STATE_MIGRATED`).
pub const QPC_PM_STATE_MIGRATED: u64 = 0x3;

/// CREATE_QP (RC) with user-owned rings: one UMEM holds the RQ then the SQ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CreateQp {
    pub pd: u32,
    pub uar_page: u32,
    pub cqn_snd: u32,
    pub cqn_rcv: u32,
    pub log_sq_size: u8,
    /// log2 of RQ entries; `None` for a QP without receive queue.
    pub log_rq_size: Option<u8>,
    /// RQ stride: 16 << `log_rq_stride` bytes.
    pub log_rq_stride: u8,
    pub mem: RingMem,
}

impl Command for CreateQp {
    const OPCODE: Opcode = Opcode::CREATE_QP;
    type In = create_qp_in::Layout;
    type Out = create_qp_out::Layout;
    type Output = u32;
    fn encode(&self, v: &mut ViewMut<'_, Self::In>) -> Result<(), CmdError> {
        let op = Self::OPCODE;
        let q = create_qp_in::qpc;
        v.set(q.at(qpc::st), QPC_ST_RC);
        v.set(q.at(qpc::pm_state), QPC_PM_STATE_MIGRATED);
        put(v, op, q.at(qpc::pd), u64::from(self.pd), "pd")?;
        put(
            v,
            op,
            q.at(qpc::uar_page),
            u64::from(self.uar_page),
            "uar_page",
        )?;
        put(
            v,
            op,
            q.at(qpc::cqn_snd),
            u64::from(self.cqn_snd),
            "cqn_snd",
        )?;
        put(
            v,
            op,
            q.at(qpc::cqn_rcv),
            u64::from(self.cqn_rcv),
            "cqn_rcv",
        )?;
        put(
            v,
            op,
            q.at(qpc::log_sq_size),
            u64::from(self.log_sq_size),
            "log_sq_size",
        )?;
        // Without a receive queue: `rq_type` zero-length RQ (PRM `MLX5_ZERO_LEN_RQ`), so the
        // send ring starts at the ring's beginning, where the driver puts it.
        if self.log_rq_size.is_none() {
            v.set(q.at(qpc::rq_type), QPC_RQ_TYPE_ZERO_LEN_RQ);
        }
        if let Some(n) = self.log_rq_size {
            put(v, op, q.at(qpc::log_rq_size), u64::from(n), "log_rq_size")?;
            put(
                v,
                op,
                q.at(qpc::log_rq_stride),
                u64::from(self.log_rq_stride),
                "log_rq_stride",
            )?;
        }
        v.set(q.at(qpc::dbr_umem_valid), 1);
        v.set(q.at(qpc::dbr_umem_id), u64::from(self.mem.dbr_umem_id));
        v.set(q.at(qpc::dbr_addr), self.mem.dbr_offset);
        v.set(create_qp_in::wq_umem_valid, 1);
        v.set(create_qp_in::wq_umem_id, u64::from(self.mem.umem_id));
        v.set(create_qp_in::wq_umem_offset, self.mem.umem_offset);
        Ok(())
    }
    fn decode(&self, v: View<'_, Self::Out>) -> Result<u32, CmdError> {
        Ok(v.get(create_qp_out::qpn) as u32)
    }
}

/// Address and transport attributes applied by the QP state transitions. Zero fields are left
/// at zero; each transition writes the ones the PRM reads for it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QpAttr {
    /// RST2INIT: remote access rights.
    pub rre: bool,
    pub rwe: bool,
    pub rae: bool,
    /// RST2INIT: physical port (1-based).
    pub vhca_port_num: u8,
    /// INIT2RTR: path MTU (PRM encoding: 1 = 256 B .. 5 = 4096 B).
    pub mtu: u8,
    pub remote_qpn: u32,
    pub next_rcv_psn: u32,
    pub log_rra_max: u8,
    pub min_rnr_nak: u8,
    /// Force loopback (`ads.fl`): the peer is on the same device.
    pub fl: bool,
    pub rmac: [u8; 6],
    pub rgid: [u8; 16],
    pub src_addr_index: u8,
    pub hop_limit: u8,
    /// RTR2RTS.
    pub next_send_psn: u32,
    pub log_sra_max: u8,
    pub retry_count: u8,
    pub rnr_retry: u8,
    pub ack_timeout: u8,
}

/// One QP state transition command (`rst2init_qp_in`, ... share the same fields).
pub trait QpTransition {
    const OPCODE: Opcode;
    type In: Layout;
    fn qpn() -> super::Field<Self::In>;
    fn qpc() -> Option<super::layout::Nested<Self::In, qpc::Layout>>;
}

macro_rules! qp_transition {
    ($(#[$m:meta])* $ty:ident, $op:ident, $lay:ident, $ctx:expr) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub struct $ty;
        impl QpTransition for $ty {
            const OPCODE: Opcode = Opcode::$op;
            type In = $lay::Layout;
            fn qpn() -> super::Field<Self::In> {
                $lay::qpn
            }
            fn qpc() -> Option<super::layout::Nested<Self::In, qpc::Layout>> {
                $ctx
            }
        }
    };
}

qp_transition!(/// RST -> INIT.
    Rst2Init, RST2INIT_QP, rst2init_qp_in, Some(rst2init_qp_in::qpc));
qp_transition!(/// INIT -> RTR.
    Init2Rtr, INIT2RTR_QP, init2rtr_qp_in, Some(init2rtr_qp_in::qpc));
qp_transition!(/// RTR -> RTS.
    Rtr2Rts, RTR2RTS_QP, rtr2rts_qp_in, Some(rtr2rts_qp_in::qpc));
qp_transition!(/// RTS -> RTS (change attributes).
    Rts2Rts, RTS2RTS_QP, rts2rts_qp_in, Some(rts2rts_qp_in::qpc));
qp_transition!(/// Any state -> ERR.
    Qp2Err, QP_2ERR, qp_2err_in, None);
qp_transition!(/// Any state -> RST.
    Qp2Rst, QP_2RST, qp_2rst_in, None);

/// A QP state transition `T` with attributes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModifyQp<T> {
    pub qpn: u32,
    pub attr: QpAttr,
    pub transition: T,
}

impl<T: QpTransition> Command for ModifyQp<T> {
    const OPCODE: Opcode = T::OPCODE;
    type In = T::In;
    type Out = mbox_out::Layout;
    type Output = ();
    fn encode(&self, v: &mut ViewMut<'_, Self::In>) -> Result<(), CmdError> {
        let op = Self::OPCODE;
        put(v, op, T::qpn(), u64::from(self.qpn), "qpn")?;
        let Some(q) = T::qpc() else { return Ok(()) };
        let a = &self.attr;
        let p = q.nested(qpc::primary_address_path);
        match op {
            Opcode::RST2INIT_QP => {
                v.set(q.at(qpc::rre), u64::from(a.rre));
                v.set(q.at(qpc::rwe), u64::from(a.rwe));
                v.set(q.at(qpc::rae), u64::from(a.rae));
                v.set(q.at(qpc::pm_state), QPC_PM_STATE_MIGRATED);
                v.set(p.at(ads::vhca_port_num), u64::from(a.vhca_port_num));
            }
            Opcode::INIT2RTR_QP => {
                put(v, op, q.at(qpc::mtu), u64::from(a.mtu), "mtu")?;
                v.set(q.at(qpc::log_msg_max), 30);
                put(
                    v,
                    op,
                    q.at(qpc::remote_qpn),
                    u64::from(a.remote_qpn),
                    "remote_qpn",
                )?;
                put(
                    v,
                    op,
                    q.at(qpc::next_rcv_psn),
                    u64::from(a.next_rcv_psn),
                    "next_rcv_psn",
                )?;
                put(
                    v,
                    op,
                    q.at(qpc::log_rra_max),
                    u64::from(a.log_rra_max),
                    "log_rra_max",
                )?;
                put(
                    v,
                    op,
                    q.at(qpc::min_rnr_nak),
                    u64::from(a.min_rnr_nak),
                    "min_rnr_nak",
                )?;
                v.set(p.at(ads::fl), u64::from(a.fl));
                v.set(p.at(ads::vhca_port_num), u64::from(a.vhca_port_num));
                if !a.fl {
                    v.set(
                        p.at(ads::rmac_47_32),
                        u64::from(u16::from_be_bytes([a.rmac[0], a.rmac[1]])),
                    );
                    v.set(
                        p.at(ads::rmac_31_0),
                        u64::from(u32::from_be_bytes([
                            a.rmac[2], a.rmac[3], a.rmac[4], a.rmac[5],
                        ])),
                    );
                    for (i, b) in a.rgid.iter().enumerate() {
                        if let Some(f) = ads::rgid_rip.at(i as u32) {
                            v.set(p.at(f), u64::from(*b));
                        }
                    }
                    v.set(p.at(ads::src_addr_index), u64::from(a.src_addr_index));
                    v.set(p.at(ads::hop_limit), u64::from(a.hop_limit));
                }
            }
            _ => {
                // RTR2RTS and RTS2RTS.
                put(
                    v,
                    op,
                    q.at(qpc::next_send_psn),
                    u64::from(a.next_send_psn),
                    "next_send_psn",
                )?;
                put(
                    v,
                    op,
                    q.at(qpc::log_sra_max),
                    u64::from(a.log_sra_max),
                    "log_sra_max",
                )?;
                put(
                    v,
                    op,
                    q.at(qpc::retry_count),
                    u64::from(a.retry_count),
                    "retry_count",
                )?;
                put(
                    v,
                    op,
                    q.at(qpc::rnr_retry),
                    u64::from(a.rnr_retry),
                    "rnr_retry",
                )?;
                put(
                    v,
                    op,
                    p.at(ads::ack_timeout),
                    u64::from(a.ack_timeout),
                    "ack_timeout",
                )?;
            }
        }
        Ok(())
    }
    fn decode(&self, _: View<'_, Self::Out>) -> Result<(), CmdError> {
        Ok(())
    }
}

/// QUERY_QP: yields the QP context bytes (`qpc`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueryQp(pub u32);

impl Command for QueryQp {
    const OPCODE: Opcode = Opcode::QUERY_QP;
    type In = query_qp_in::Layout;
    type Out = query_qp_out::Layout;
    type Output = Vec<u8>;
    fn encode(&self, v: &mut ViewMut<'_, Self::In>) -> Result<(), CmdError> {
        put(v, Self::OPCODE, query_qp_in::qpn, u64::from(self.0), "qpn")
    }
    fn decode(&self, v: View<'_, Self::Out>) -> Result<Vec<u8>, CmdError> {
        Ok(v.nested(query_qp_out::qpc).bytes()[..qpc::Layout::SIZE_BYTES].to_vec())
    }
}

// ---------------------------------------------------------------------------------------------
// Port addressing.

/// What QUERY_NIC_VPORT_CONTEXT tells about the function's own port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NicVport {
    /// `permanent_address`: the function's MAC.
    pub mac: [u8; 6],
    /// `mtu`: the port MTU in bytes (Ethernet payload).
    pub mtu: u16,
    /// `roce_en`.
    pub roce_en: bool,
}

/// QUERY_NIC_VPORT_CONTEXT of the caller's own vport.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueryNicVportContext;

impl Command for QueryNicVportContext {
    const OPCODE: Opcode = Opcode::QUERY_NIC_VPORT_CONTEXT;
    type In = query_nic_vport_context_in::Layout;
    type Out = query_nic_vport_context_out::Layout;
    type Output = NicVport;
    fn encode(&self, _: &mut ViewMut<'_, Self::In>) -> Result<(), CmdError> {
        Ok(())
    }
    fn decode(&self, v: View<'_, Self::Out>) -> Result<NicVport, CmdError> {
        let c = query_nic_vport_context_out::nic_vport_context;
        let hi = v.get(c.at(nic_vport_context::permanent_address_mac_addr_47_32)) as u16;
        let lo = v.get(c.at(nic_vport_context::permanent_address_mac_addr_31_0)) as u32;
        let mut mac = [0u8; 6];
        mac[..2].copy_from_slice(&hi.to_be_bytes());
        mac[2..].copy_from_slice(&lo.to_be_bytes());
        Ok(NicVport {
            mac,
            mtu: v.get(c.at(nic_vport_context::mtu)) as u16,
            roce_en: v.get(c.at(nic_vport_context::roce_en)) == 1,
        })
    }
}

/// One entry of the RoCE address (GID) table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RoceAddress {
    /// `source_l3_address`: the GID (an IPv4 address is mapped as `::ffff:a.b.c.d`).
    pub gid: [u8; 16],
    pub mac: [u8; 6],
    /// `roce_version`: 0 = RoCE v1, 2 = RoCE v2.
    pub roce_version: u8,
    /// `roce_l3_type`: 0 = IPv4, 1 = IPv6.
    pub roce_l3_type: u8,
    /// `vlan_valid` and `vlan_id`.
    pub vlan: Option<u16>,
}

/// QUERY_ROCE_ADDRESS: reads GID table entry `index`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueryRoceAddress(pub u16);

impl Command for QueryRoceAddress {
    const OPCODE: Opcode = Opcode::QUERY_ROCE_ADDRESS;
    type In = query_roce_address_in::Layout;
    type Out = query_roce_address_out::Layout;
    type Output = RoceAddress;
    fn encode(&self, v: &mut ViewMut<'_, Self::In>) -> Result<(), CmdError> {
        v.set(query_roce_address_in::roce_address_index, u64::from(self.0));
        Ok(())
    }
    fn decode(&self, v: View<'_, Self::Out>) -> Result<RoceAddress, CmdError> {
        let a = query_roce_address_out::roce_address;
        let mut gid = [0u8; 16];
        for (i, b) in gid.iter_mut().enumerate() {
            if let Some(f) = roce_addr_layout::source_l3_address.at(i as u32) {
                *b = v.get(a.at(f)) as u8;
            }
        }
        let hi = v.get(a.at(roce_addr_layout::source_mac_47_32)) as u16;
        let lo = v.get(a.at(roce_addr_layout::source_mac_31_0)) as u32;
        let mut mac = [0u8; 6];
        mac[..2].copy_from_slice(&hi.to_be_bytes());
        mac[2..].copy_from_slice(&lo.to_be_bytes());
        Ok(RoceAddress {
            gid,
            mac,
            roce_version: v.get(a.at(roce_addr_layout::roce_version)) as u8,
            roce_l3_type: v.get(a.at(roce_addr_layout::roce_l3_type)) as u8,
            vlan: (v.get(a.at(roce_addr_layout::vlan_valid)) == 1)
                .then(|| v.get(a.at(roce_addr_layout::vlan_id)) as u16),
        })
    }
}

// ---------------------------------------------------------------------------------------------
// Registers and cross-function access.

/// ACCESS_REGISTER_USER (0xb0c): read or write one register (e.g. the DPA EU partition and
/// EU group registers in [`super::layouts::dpa`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccessRegisterUser {
    pub register_id: u16,
    pub argument: u32,
    /// `true` = write (op_mod 0), `false` = read (op_mod 1).
    pub write: bool,
    /// Register contents to write; for a read, its length is the register's size.
    pub data: Vec<u8>,
}

impl Command for AccessRegisterUser {
    const OPCODE: Opcode = Opcode::ACCESS_REGISTER_USER;
    type In = access_register_in::Layout;
    type Out = access_register_out::Layout;
    /// The register contents firmware returns.
    type Output = Vec<u8>;
    fn op_mod(&self) -> u16 {
        if self.write {
            0
        } else {
            1
        }
    }
    fn inbox_extra(&self) -> usize {
        self.data.len()
    }
    fn outbox_extra(&self) -> usize {
        self.data.len()
    }
    fn encode(&self, v: &mut ViewMut<'_, Self::In>) -> Result<(), CmdError> {
        if !self.data.len().is_multiple_of(4) || self.data.is_empty() {
            return Err(CmdError::InvalidAttr {
                opcode: Self::OPCODE,
                what: format!(
                    "register data of {} bytes is not a non-empty whole number of dwords",
                    self.data.len()
                ),
            });
        }
        v.set(access_register_in::register_id, u64::from(self.register_id));
        v.set(access_register_in::argument, u64::from(self.argument));
        let words: Vec<u64> = self
            .data
            .chunks_exact(4)
            .map(|c| u64::from(u32::from_be_bytes([c[0], c[1], c[2], c[3]])))
            .collect();
        put_flex(v, Self::OPCODE, access_register_in::register_data, &words)
    }
    fn decode(&self, v: View<'_, Self::Out>) -> Result<Vec<u8>, CmdError> {
        Ok(flex_bytes(&v))
    }
}

/// ALLOW_OTHER_VHCA_ACCESS: lets another function alias one of our objects with `access_key`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AllowOtherVhcaAccess {
    pub object_type: u16,
    pub object_id: u32,
    pub access_key: [u8; 32],
}

impl Command for AllowOtherVhcaAccess {
    const OPCODE: Opcode = Opcode::ALLOW_OTHER_VHCA_ACCESS;
    type In = allow_other_vhca_access_in::Layout;
    type Out = mbox_out::Layout;
    type Output = ();
    fn encode(&self, v: &mut ViewMut<'_, Self::In>) -> Result<(), CmdError> {
        let op = Self::OPCODE;
        v.set(
            allow_other_vhca_access_in::object_type_to_be_accessed,
            u64::from(self.object_type),
        );
        v.set(
            allow_other_vhca_access_in::object_id_to_be_accessed,
            u64::from(self.object_id),
        );
        v.set_bytes(allow_other_vhca_access_in::access_key, &self.access_key)
            .map_err(|source| CmdError::Layout { opcode: op, source })
    }
    fn decode(&self, _: View<'_, Self::Out>) -> Result<(), CmdError> {
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// General objects.

/// A general object context: its type number and how its attributes encode.
pub trait GeneralObject {
    /// `obj_type` in `general_obj_in_cmd_hdr`.
    const OBJ_TYPE: u16;
    /// The object context layout that follows the header.
    type Ctx: Layout;
    /// Writes the context (zeroed, `Ctx::SIZE_BYTES` long).
    ///
    /// # Errors
    /// [`CmdError::InvalidAttr`] for attributes that do not fit.
    fn encode_ctx(&self, ctx: &mut ViewMut<'_, Self::Ctx>) -> Result<(), CmdError>;
}

/// CREATE_GENERAL_OBJECT of `O`: yields the object id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreateGeneralObject<O>(pub O);

impl<O: GeneralObject> Command for CreateGeneralObject<O> {
    const OPCODE: Opcode = Opcode::CREATE_GENERAL_OBJECT;
    type In = general_obj_in_cmd_hdr::Layout;
    type Out = general_obj_out_cmd_hdr::Layout;
    type Output = u32;
    fn inbox_extra(&self) -> usize {
        O::Ctx::SIZE_BYTES
    }
    fn encode(&self, v: &mut ViewMut<'_, Self::In>) -> Result<(), CmdError> {
        // In general_obj_in_cmd_hdr, op_mod's place holds obj_type (PRM).
        v.set(general_obj_in_cmd_hdr::obj_type, u64::from(O::OBJ_TYPE));
        encode_ctx_after_hdr(v, &self.0)
    }
    fn decode(&self, v: View<'_, Self::Out>) -> Result<u32, CmdError> {
        Ok(v.get(general_obj_out_cmd_hdr::obj_id) as u32)
    }
}

fn encode_ctx_after_hdr<O: GeneralObject>(
    v: &mut ViewMut<'_, general_obj_in_cmd_hdr::Layout>,
    obj: &O,
) -> Result<(), CmdError> {
    let op = Opcode::CREATE_GENERAL_OBJECT;
    let hdr_len = general_obj_in_cmd_hdr::Layout::SIZE_BYTES;
    // The view is over the whole inbox; re-borrow its tail for the context.
    let tail = v.bytes_mut().get_mut(hdr_len..).unwrap_or_default();
    let mut ctx =
        ViewMut::<O::Ctx>::new(tail).map_err(|source| CmdError::Layout { opcode: op, source })?;
    obj.encode_ctx(&mut ctx)
}

/// MODIFY_GENERAL_OBJECT of `O` (the context's `modify_field_select` says what changes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModifyGeneralObject<O> {
    pub obj_id: u32,
    pub obj: O,
}

impl<O: GeneralObject> Command for ModifyGeneralObject<O> {
    const OPCODE: Opcode = Opcode::MODIFY_GENERAL_OBJECT;
    type In = general_obj_in_cmd_hdr::Layout;
    type Out = general_obj_out_cmd_hdr::Layout;
    type Output = ();
    fn inbox_extra(&self) -> usize {
        O::Ctx::SIZE_BYTES
    }
    fn encode(&self, v: &mut ViewMut<'_, Self::In>) -> Result<(), CmdError> {
        v.set(general_obj_in_cmd_hdr::obj_type, u64::from(O::OBJ_TYPE));
        v.set(general_obj_in_cmd_hdr::obj_id, u64::from(self.obj_id));
        encode_ctx_after_hdr(v, &self.obj)
    }
    fn decode(&self, _: View<'_, Self::Out>) -> Result<(), CmdError> {
        Ok(())
    }
}

/// QUERY_GENERAL_OBJECT: yields the object context bytes (`ctx_len` bytes after the header).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueryGeneralObject {
    pub obj_type: u16,
    pub obj_id: u32,
    pub ctx_len: usize,
}

impl Command for QueryGeneralObject {
    const OPCODE: Opcode = Opcode::QUERY_GENERAL_OBJECT;
    type In = general_obj_in_cmd_hdr::Layout;
    type Out = general_obj_out_cmd_hdr::Layout;
    type Output = Vec<u8>;
    fn outbox_extra(&self) -> usize {
        self.ctx_len
    }
    fn encode(&self, v: &mut ViewMut<'_, Self::In>) -> Result<(), CmdError> {
        v.set(general_obj_in_cmd_hdr::obj_type, u64::from(self.obj_type));
        v.set(general_obj_in_cmd_hdr::obj_id, u64::from(self.obj_id));
        Ok(())
    }
    fn decode(&self, v: View<'_, Self::Out>) -> Result<Vec<u8>, CmdError> {
        Ok(flex_bytes(&v))
    }
}

/// DESTROY_GENERAL_OBJECT.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DestroyGeneralObject {
    pub obj_type: u16,
    pub obj_id: u32,
}

impl Command for DestroyGeneralObject {
    const OPCODE: Opcode = Opcode::DESTROY_GENERAL_OBJECT;
    type In = general_obj_in_cmd_hdr::Layout;
    type Out = general_obj_out_cmd_hdr::Layout;
    type Output = ();
    fn encode(&self, v: &mut ViewMut<'_, Self::In>) -> Result<(), CmdError> {
        v.set(general_obj_in_cmd_hdr::obj_type, u64::from(self.obj_type));
        v.set(general_obj_in_cmd_hdr::obj_id, u64::from(self.obj_id));
        Ok(())
    }
    fn decode(&self, _: View<'_, Self::Out>) -> Result<(), CmdError> {
        Ok(())
    }
}

/// An alias of another function's object (`alias_object` = 1, `alias_context`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CreateAlias {
    pub obj_type: u16,
    pub vhca_id: u16,
    pub object_id: u32,
    pub access_key: [u8; 32],
}

impl Command for CreateAlias {
    const OPCODE: Opcode = Opcode::CREATE_GENERAL_OBJECT;
    type In = create_alias_in::Layout;
    type Out = general_obj_out_cmd_hdr::Layout;
    type Output = u32;
    fn encode(&self, v: &mut ViewMut<'_, Self::In>) -> Result<(), CmdError> {
        let h = create_alias_in::hdr;
        let c = create_alias_in::alias_ctx;
        v.set(
            h.at(general_obj_in_cmd_hdr::obj_type),
            u64::from(self.obj_type),
        );
        v.set(h.at(general_obj_in_cmd_hdr::alias_object), 1);
        v.set(
            c.at(alias_context::vhca_id_to_be_accessed),
            u64::from(self.vhca_id),
        );
        v.set(
            c.at(alias_context::object_id_to_be_accessed),
            u64::from(self.object_id),
        );
        v.set_bytes(c.at(alias_context::access_key), &self.access_key)
            .map_err(|source| CmdError::Layout {
                opcode: Self::OPCODE,
                source,
            })
    }
    fn decode(&self, v: View<'_, Self::Out>) -> Result<u32, CmdError> {
        Ok(v.get(general_obj_out_cmd_hdr::obj_id) as u32)
    }
}

// DPA general objects (provisional contexts, see layouts::dpa).

/// DPA_MEM attributes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DpaMemAttr {
    pub dpa_process_id: u32,
    pub size: u64,
}

impl GeneralObject for DpaMemAttr {
    const OBJ_TYPE: u16 = obj_type::DPA_MEM;
    type Ctx = dpa_mem::Layout;
    fn encode_ctx(&self, c: &mut ViewMut<'_, Self::Ctx>) -> Result<(), CmdError> {
        c.set(dpa_mem::dpa_process_id, u64::from(self.dpa_process_id));
        c.set(dpa_mem::size, self.size);
        Ok(())
    }
}

/// DPA_PROCESS attributes: the ELF image in a UMEM, PD and heap size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DpaProcessAttr {
    pub pd: u32,
    pub elf_umem_id: u32,
    pub elf_umem_offset: u64,
    pub elf_size: u64,
    pub heap_size: u64,
}

impl GeneralObject for DpaProcessAttr {
    const OBJ_TYPE: u16 = obj_type::DPA_PROCESS;
    type Ctx = dpa_process::Layout;
    fn encode_ctx(&self, c: &mut ViewMut<'_, Self::Ctx>) -> Result<(), CmdError> {
        put(
            c,
            Opcode::CREATE_GENERAL_OBJECT,
            dpa_process::pd,
            u64::from(self.pd),
            "pd",
        )?;
        c.set(dpa_process::elf_umem_id, u64::from(self.elf_umem_id));
        c.set(dpa_process::elf_umem_offset, self.elf_umem_offset);
        c.set(dpa_process::elf_size, self.elf_size);
        c.set(dpa_process::heap_size, self.heap_size);
        Ok(())
    }
}

/// Where a DPA thread may run (FlexIO `flexio_affinity`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DpaAffinity {
    #[default]
    None,
    /// One EU.
    Strict(u16),
    /// An EU group.
    Group(u16),
}

/// DPA_THREAD attributes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DpaThreadAttr {
    pub dpa_process_id: u32,
    pub entry_point: u64,
    pub user_arg: u64,
    pub thread_local_storage_daddr: u64,
    pub affinity: DpaAffinity,
    pub default_outbox_id: u32,
    pub default_window_id: u32,
    pub continuable: bool,
}

impl GeneralObject for DpaThreadAttr {
    const OBJ_TYPE: u16 = obj_type::DPA_THREAD;
    type Ctx = dpa_thread::Layout;
    fn encode_ctx(&self, c: &mut ViewMut<'_, Self::Ctx>) -> Result<(), CmdError> {
        let (ty, id) = match self.affinity {
            DpaAffinity::None => (0, 0),
            DpaAffinity::Strict(eu) => (1, eu),
            DpaAffinity::Group(g) => (2, g),
        };
        c.set(dpa_thread::affinity_type, ty);
        c.set(dpa_thread::affinity_id, u64::from(id));
        c.set(dpa_thread::dpa_process_id, u64::from(self.dpa_process_id));
        c.set(dpa_thread::entry_point, self.entry_point);
        c.set(dpa_thread::user_arg, self.user_arg);
        c.set(
            dpa_thread::thread_local_storage_daddr,
            self.thread_local_storage_daddr,
        );
        c.set(
            dpa_thread::default_outbox_id,
            u64::from(self.default_outbox_id),
        );
        c.set(
            dpa_thread::default_window_id,
            u64::from(self.default_window_id),
        );
        c.set(dpa_thread::continuable, u64::from(self.continuable));
        Ok(())
    }
}

/// DPA_OUTBOX attributes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DpaOutboxAttr {
    pub dpa_process_id: u32,
    pub uar: u32,
}

impl GeneralObject for DpaOutboxAttr {
    const OBJ_TYPE: u16 = obj_type::DPA_OUTBOX;
    type Ctx = dpa_outbox::Layout;
    fn encode_ctx(&self, c: &mut ViewMut<'_, Self::Ctx>) -> Result<(), CmdError> {
        c.set(dpa_outbox::dpa_process_id, u64::from(self.dpa_process_id));
        put(
            c,
            Opcode::CREATE_GENERAL_OBJECT,
            dpa_outbox::uar,
            u64::from(self.uar),
            "uar",
        )
    }
}

/// DPA_WINDOW attributes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DpaWindowAttr {
    pub dpa_process_id: u32,
    pub pd: u32,
}

impl GeneralObject for DpaWindowAttr {
    const OBJ_TYPE: u16 = obj_type::DPA_WINDOW;
    type Ctx = dpa_window::Layout;
    fn encode_ctx(&self, c: &mut ViewMut<'_, Self::Ctx>) -> Result<(), CmdError> {
        c.set(dpa_window::dpa_process_id, u64::from(self.dpa_process_id));
        put(
            c,
            Opcode::CREATE_GENERAL_OBJECT,
            dpa_window::pd,
            u64::from(self.pd),
            "pd",
        )
    }
}

/// DPA_EQ attributes (public layout, see `layouts::dpa::dpa_eq`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DpaEqAttr {
    pub log_umem_size: u8,
    pub uar_page: u32,
    pub umem_id: u32,
    pub umem_offset: u64,
    pub oi: bool,
}

impl GeneralObject for DpaEqAttr {
    const OBJ_TYPE: u16 = obj_type::DPA_EQ;
    type Ctx = dpa_eq::Layout;
    fn encode_ctx(&self, c: &mut ViewMut<'_, Self::Ctx>) -> Result<(), CmdError> {
        let op = Opcode::CREATE_GENERAL_OBJECT;
        put(
            c,
            op,
            dpa_eq::log_umem_size,
            u64::from(self.log_umem_size),
            "log_umem_size",
        )?;
        put(
            c,
            op,
            dpa_eq::uar_page,
            u64::from(self.uar_page),
            "uar_page",
        )?;
        c.set(dpa_eq::oi, u64::from(self.oi));
        c.set(dpa_eq::umem_id, u64::from(self.umem_id));
        c.set(dpa_eq::umem_offset, self.umem_offset);
        Ok(())
    }
}

/// DB_CQ_MAPPING attributes (public layout).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DbCqMappingAttr {
    pub device_emulation_id: u32,
    pub queue_id: u32,
    pub cqn: u32,
    pub queue_type: u8,
    pub device_type: u8,
}

impl GeneralObject for DbCqMappingAttr {
    const OBJ_TYPE: u16 = obj_type::DB_CQ_MAPPING;
    type Ctx = dpa_db_cq_mapping::Layout;
    fn encode_ctx(&self, c: &mut ViewMut<'_, Self::Ctx>) -> Result<(), CmdError> {
        put(
            c,
            Opcode::CREATE_GENERAL_OBJECT,
            dpa_db_cq_mapping::queue_type,
            u64::from(self.queue_type),
            "queue_type",
        )?;
        c.set(dpa_db_cq_mapping::device_type, u64::from(self.device_type));
        c.set(
            dpa_db_cq_mapping::device_emulation_id,
            u64::from(self.device_emulation_id),
        );
        c.set(dpa_db_cq_mapping::queue_id, u64::from(self.queue_id));
        c.set(dpa_db_cq_mapping::cqn, u64::from(self.cqn));
        Ok(())
    }
}

/// MODIFY of a DPA_THREAD (provisional context, see `layouts::dpa::dpa_thread`): a new
/// `user_arg` and / or a new `state`. Writing `state` = RUNNING runs the thread once (FlexIO
/// `flexio_event_handler_run`, `flexio_process_call`); IDLE makes it wait for events again;
/// FINISHED makes it ignore events. Use with [`ModifyGeneralObject`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DpaThreadModify {
    pub user_arg: Option<u64>,
    pub state: Option<u8>,
}

impl GeneralObject for DpaThreadModify {
    const OBJ_TYPE: u16 = obj_type::DPA_THREAD;
    type Ctx = dpa_thread::Layout;
    fn encode_ctx(&self, c: &mut ViewMut<'_, Self::Ctx>) -> Result<(), CmdError> {
        let mut select = 0;
        if let Some(arg) = self.user_arg {
            select |= dpa_thread_modify::USER_ARG;
            c.set(dpa_thread::user_arg, arg);
        }
        if let Some(state) = self.state {
            select |= dpa_thread_modify::STATE;
            put(
                c,
                Opcode::MODIFY_GENERAL_OBJECT,
                dpa_thread::state,
                u64::from(state),
                "state",
            )?;
        }
        c.set(dpa_thread::modify_field_select, select);
        Ok(())
    }
}

/// DPA_PROCESS_COREDUMP (0xb2b, provisional layout `layouts::dpa::dpa_process_coredump_in`):
/// yields the coredump image of a failed process (decode it with `crate::dpa::coredump`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DpaProcessCoredump {
    pub dpa_process_id: u32,
}

impl Command for DpaProcessCoredump {
    const OPCODE: Opcode = Opcode::DPA_PROCESS_COREDUMP;
    type In = dpa_process_coredump_in::Layout;
    type Out = dpa_process_coredump_out::Layout;
    type Output = Vec<u8>;
    fn outbox_extra(&self) -> usize {
        DPA_COREDUMP_MAX_BYTES
    }
    fn encode(&self, v: &mut ViewMut<'_, Self::In>) -> Result<(), CmdError> {
        v.set(
            dpa_process_coredump_in::dpa_process_id,
            u64::from(self.dpa_process_id),
        );
        Ok(())
    }
    fn decode(&self, v: View<'_, Self::Out>) -> Result<Vec<u8>, CmdError> {
        let len = v.get(dpa_process_coredump_out::dump_size) as usize;
        let image = flex_bytes(&v);
        if len > image.len() {
            return Err(CmdError::Layout {
                opcode: Self::OPCODE,
                source: LayoutError::TooShort {
                    layout: "dpa_process_coredump_out",
                    need: dpa_process_coredump_out::Layout::SIZE_BYTES + len,
                    got: v.bytes().len(),
                },
            });
        }
        Ok(image[..len].to_vec())
    }
}

/// DPA_UAR attributes (provisional context `layouts::dpa::dpa_uar`): extends host UAR page
/// `uar_page` to a process (FlexIO `flexio_uar_extend`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DpaUarAttr {
    pub dpa_process_id: u32,
    pub uar_page: u32,
}

impl GeneralObject for DpaUarAttr {
    const OBJ_TYPE: u16 = obj_type::DPA_UAR;
    type Ctx = dpa_uar::Layout;
    fn encode_ctx(&self, c: &mut ViewMut<'_, Self::Ctx>) -> Result<(), CmdError> {
        c.set(dpa_uar::dpa_process_id, u64::from(self.dpa_process_id));
        put(
            c,
            Opcode::CREATE_GENERAL_OBJECT,
            dpa_uar::uar_page,
            u64::from(self.uar_page),
            "uar_page",
        )
    }
}
