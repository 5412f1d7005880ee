//! The firmware command processor.
//!
//! `Firmware::execute` takes a command mailbox as firmware receives it (after the kernel's
//! DevX layer has overwritten `uid` and forced the `*_umem_valid` bits), validates it like
//! firmware, applies it to the object tables and answers with a PRM status and a syndrome.
//! Every check is a named [`check::Check`] with its own syndrome. The datapath engine
//! (`crate::engine`) works on the same tables.

/// The checks firmware applies (re-exported: they live below the firmware, with the memory
/// model that applies some of them).
pub use crate::check;
mod counters;
mod destroy;
mod eu;
mod general;
mod queues;
pub(crate) mod steering;
pub(crate) mod vport;

use mlx5_dpa::mlx5::layout::{Layout, View, ViewMut};
use mlx5_dpa::mlx5::layouts::{self as l};
use mlx5_dpa::mlx5::{Opcode, Status};

use crate::mem::UarPage;
use crate::slab::Slab;
use crate::state::objects::{self, *};
use check::Check;

pub(crate) use crate::state::{limit, Firmware, EQN_BASE};
pub use crate::state::{FaultPlan, FwStats};
pub use destroy::{destroy_inbox, object_of_inbox};
pub use objects::ObjRef;

/// Byte size of a layout.
pub(crate) const fn size<L: Layout>() -> usize {
    L::SIZE_BYTES
}

/// A typed view of an inbox, or BAD_INP_LEN.
pub(crate) fn inbox<L: Layout>(buf: &[u8]) -> Result<View<'_, L>, Check> {
    View::new(buf).map_err(|_| check::INBOX_TOO_SHORT)
}

/// A typed view of an outbox, or BAD_OUTP_LEN.
pub(crate) fn outbox<L: Layout>(buf: &mut [u8]) -> Result<ViewMut<'_, L>, Check> {
    ViewMut::new(buf).map_err(|_| check::OUTBOX_TOO_SHORT)
}

impl Firmware {
    /// Runs one command for context `uid`. Writes status and syndrome into the outbox (as far
    /// as it is long enough) and returns what was created, if anything.
    pub fn execute(
        &mut self,
        uid: u16,
        inbox: &[u8],
        outbox: &mut [u8],
    ) -> Result<Option<ObjRef>, Check> {
        let start = std::time::Instant::now();
        self.stats.commands += 1;
        let seq = self.stats.commands;
        let opcode = if inbox.len() >= 2 {
            Opcode(u16::from_be_bytes([inbox[0], inbox[1]]))
        } else {
            Opcode(0xffff)
        };
        outbox.iter_mut().for_each(|b| *b = 0);
        let op_mod = inbox
            .get(6..8)
            .map_or(0, |b| u16::from_be_bytes([b[0], b[1]]));
        let res = self
            .fault(seq, opcode, op_mod)
            .and_then(|()| self.dispatch(uid, opcode, inbox, outbox));
        let (status, syndrome) = match &res {
            Ok(_) => (Status::OK, 0),
            Err(c) => {
                self.stats.failed += 1;
                (c.status, c.syndrome)
            }
        };
        if outbox.len() >= 8 {
            outbox[0] = status.0;
            outbox[1..4].fill(0);
            outbox[4..8].copy_from_slice(&syndrome.to_be_bytes());
        }
        tracing::debug!(
            target: "mlx5_sim::fw",
            opcode = %opcode,
            uid,
            status = %status,
            syndrome = format_args!("{syndrome:#x}"),
            duration_ns = start.elapsed().as_nanos() as u64,
            "command"
        );
        res
    }

    fn fault(&mut self, seq: u64, opcode: Opcode, op_mod: u16) -> Result<(), Check> {
        if let Some(t) = &mut self.faults.trace {
            t.push((opcode, op_mod));
        }
        if self.faults.at.is_empty()
            && self.faults.by_opcode.is_empty()
            && self.faults.nth_of.is_empty()
        {
            return Ok(());
        }
        let mut by_count = None;
        for (op, m, left, status) in &mut self.faults.nth_of {
            if *op == opcode && m.is_none_or(|m| m == op_mod) && *left > 0 {
                *left -= 1;
                if *left == 0 {
                    by_count = by_count.or(Some(*status));
                }
            }
        }
        self.faults.nth_of.retain(|f| f.2 > 0);
        let status = if let Some(i) = self.faults.at.iter().position(|(n, _)| *n == seq) {
            Some(self.faults.at.swap_remove(i).1)
        } else {
            by_count.or_else(|| self.faults.by_opcode.get(&opcode.0).copied())
        };
        match status {
            Some(status) => {
                self.faults.hit.push((seq, opcode, op_mod));
                Err(Check {
                    status,
                    ..check::FAULT_INJECTED
                })
            }
            None => Ok(()),
        }
    }

    fn dispatch(
        &mut self,
        uid: u16,
        op: Opcode,
        inb: &[u8],
        out: &mut [u8],
    ) -> Result<Option<ObjRef>, Check> {
        // The smallest mailbox header: opcode, uid, op_mod.
        if inb.len() < size::<l::mbox_in::Layout>() {
            return Err(check::INBOX_TOO_SHORT);
        }
        if out.len() < size::<l::mbox_out::Layout>() {
            return Err(check::OUTBOX_TOO_SHORT);
        }
        // Every destroy (and dealloc, delete) names its object the same way.
        if let Some(obj) = destroy::destroyed_object(op, inb) {
            return self.destroy(uid, obj?).map(|()| None);
        }
        let op_mod = u16::from_be_bytes([inb[6], inb[7]]);
        match op {
            Opcode::QUERY_HCA_CAP => self.query_hca_cap(uid, inb, out).map(|()| None),
            Opcode::QUERY_ISSI => {
                // query_issi_out: current_issi at bit 0x50 (16 bits), supported_issi bitmap
                // at 0xc0 (kernel mlx5_ifc.h). The model speaks ISSI 1.
                if out.len() < 0x70 {
                    return Err(check::OUTBOX_TOO_SHORT);
                }
                out[10..12].copy_from_slice(&1u16.to_be_bytes());
                out[0x6c..0x70].copy_from_slice(&0b11u32.to_be_bytes());
                Ok(None)
            }
            Opcode::NOP => {
                if op_mod != 0 {
                    return Err(check::BAD_OP_MOD);
                }
                Ok(None)
            }
            Opcode::ALLOC_PD => {
                let mut o = outbox::<l::alloc_pd_out::Layout>(out)?;
                let id = self
                    .pds
                    .insert(Pd {
                        meta: Meta::new(uid),
                    })
                    .ok_or(check::TOO_MANY_OBJECTS)?;
                o.set(l::alloc_pd_out::pd, u64::from(id));
                Ok(Some(ObjRef::Pd(id)))
            }
            Opcode::ALLOC_TRANSPORT_DOMAIN => {
                let mut o = outbox::<l::alloc_transport_domain_out::Layout>(out)?;
                let id = self
                    .tds
                    .insert(Td {
                        meta: Meta::new(uid),
                    })
                    .ok_or(check::TOO_MANY_OBJECTS)?;
                o.set(
                    l::alloc_transport_domain_out::transport_domain,
                    u64::from(id),
                );
                Ok(Some(ObjRef::Td(id)))
            }
            Opcode::CREATE_MKEY => self.create_mkey(uid, inb, out).map(Some),
            Opcode::CREATE_CQ => self.create_cq(uid, inb, out).map(Some),
            Opcode::MODIFY_CQ => self.modify_cq(uid, inb).map(|()| None),
            Opcode::QUERY_CQ => self.query_cq(uid, inb, out).map(|()| None),
            Opcode::CREATE_SQ => self.create_sq(uid, inb, out).map(Some),
            Opcode::MODIFY_SQ => self.modify_sq(uid, inb).map(|()| None),
            Opcode::QUERY_SQ => self.query_sq(uid, inb, out).map(|()| None),
            Opcode::CREATE_RQ => self.create_rq(uid, inb, out).map(Some),
            Opcode::MODIFY_RQ => self.modify_rq(uid, inb).map(|()| None),
            Opcode::QUERY_RQ => self.query_rq(uid, inb, out).map(|()| None),
            Opcode::CREATE_RMP => self.create_rmp(uid, inb, out).map(Some),
            Opcode::CREATE_TIS => self.create_tis(uid, inb, out).map(Some),
            Opcode::CREATE_TIR => self.create_tir(uid, inb, out).map(Some),
            Opcode::CREATE_RQT => self.create_rqt(uid, inb, out).map(Some),
            Opcode::ALLOC_Q_COUNTER => self.alloc_q_counter(uid, inb, out).map(Some),
            Opcode::QUERY_Q_COUNTER => self.query_q_counter(uid, inb, out).map(|()| None),
            Opcode::ALLOC_FLOW_COUNTER => self.alloc_flow_counter(uid, inb, out).map(Some),
            Opcode::QUERY_FLOW_COUNTER => self.query_flow_counter(uid, inb, out).map(|()| None),
            Opcode::CREATE_FLOW_TABLE => self.create_flow_table(uid, inb, out).map(Some),
            Opcode::CREATE_FLOW_GROUP => self.create_flow_group(uid, inb, out).map(Some),
            Opcode::SET_FLOW_TABLE_ENTRY => self.set_fte(uid, inb, out).map(Some),
            Opcode::SET_FLOW_TABLE_ROOT => self.set_flow_table_root(uid, inb).map(|()| None),
            Opcode::CREATE_QP => self.create_qp(uid, inb, out).map(Some),
            op if op.is_qp_transition() => self.modify_qp(uid, op, inb).map(|()| None),
            Opcode::QUERY_QP => self.query_qp(uid, inb, out).map(|()| None),
            Opcode::CREATE_GENERAL_OBJECT => self.create_general(uid, inb, out).map(Some),
            Opcode::MODIFY_GENERAL_OBJECT => self.modify_general(uid, inb).map(|()| None),
            Opcode::QUERY_GENERAL_OBJECT => self.query_general(uid, inb, out).map(|()| None),
            Opcode::QUERY_NIC_VPORT_CONTEXT => {
                self.query_nic_vport_context(inb, out).map(|()| None)
            }
            Opcode::QUERY_ROCE_ADDRESS => self.query_roce_address(inb, out).map(|()| None),
            Opcode::ACCESS_REGISTER_USER => self.access_register(uid, inb, out).map(|()| None),
            Opcode::DPA_PROCESS_COREDUMP if self.profile.dpa.is_some() => {
                self.dpa_process_coredump(uid, inb, out).map(|()| None)
            }
            Opcode::ALLOW_OTHER_VHCA_ACCESS => {
                self.allow_other_vhca_access(uid, inb).map(|()| None)
            }
            _ => Err(check::UNKNOWN_OPCODE),
        }
    }

    fn query_hca_cap(&mut self, uid: u16, inb: &[u8], out: &mut [u8]) -> Result<(), Check> {
        let v = inbox::<l::query_hca_cap_in::Layout>(inb)?;
        let op_mod = v.get(l::query_hca_cap_in::op_mod);
        if v.get(l::query_hca_cap_in::other_function) != 0 {
            return Err(check::NOT_SUPPORTED);
        }
        // The page is the 4 KiB capability union; the outbox must hold the header and the
        // capability's own layout, and what lies past it is cut to the outbox. rdma-core's
        // test suite (`tests/mlx5_prm_structs.py`, `QueryCmdHcaCapOut`) asks for the general
        // capabilities with 0x800 bytes of room, and real firmware answers it.
        let (page, layout) = match op_mod >> 1 {
            0x0 => (&self.profile.general, size::<l::cmd_hca_cap::Layout>()),
            0x1 => (
                &self.profile.eth_offloads,
                size::<l::per_protocol_networking_offload_caps::Layout>(),
            ),
            0x3 => (&self.profile.atomic, size::<l::atomic_caps::Layout>()),
            0x4 => (&self.profile.roce, size::<l::roce_caps::Layout>()),
            0xf => (
                &self.profile.device_mem,
                size::<l::device_mem_cap::Layout>(),
            ),
            0x7 => (
                &self.profile.flow_table_nic,
                size::<l::flow_table_nic_cap::Layout>(),
            ),
            0x20 => (&self.profile.general_2, size::<l::cmd_hca_cap_2::Layout>()),
            t if t == u64::from(l::dpa::DPA_CAP_TYPE) => (
                self.profile.dpa.as_ref().ok_or(check::UNKNOWN_CAP_TYPE)?,
                size::<l::dpa::dpa_cap::Layout>(),
            ),
            _ => return Err(check::UNKNOWN_CAP_TYPE),
        };
        let at = l::query_hca_cap_out::capability
            .at(0)
            .map_or(0x10, |f| (f.offset() / 8) as usize);
        if out.len() < at + layout.min(page.len()) {
            return Err(check::OUTBOX_TOO_SHORT);
        }
        let n = page.len().min(out.len() - at);
        out[at..at + n].copy_from_slice(&page[..n]);
        let dst = &mut out[at..at + n];
        // A sub-function reports its own vhca_id.
        let vhca = self.vhca_of(uid);
        if op_mod >> 1 == 0 && vhca != self.profile.vhca_id {
            let mut v = mlx5_dpa::mlx5::ViewMut::<l::cmd_hca_cap::Layout>::new(dst)
                .map_err(|_| check::OUTBOX_TOO_SHORT)?;
            v.set(l::cmd_hca_cap::vhca_id, u64::from(vhca));
        }
        Ok(())
    }

    /// Changes an mkey's PD and rights in place, its key kept: what the kernel does with a
    /// UMR work request on its own QP when a verbs MR is re-registered with a new PD or access
    /// (Linux mlx5_ib `umr_rereg_pd_access`). The model has no UMR datapath; this is its stand-in
    /// for that privileged path. The new rights must be within what the MR's UMEM was registered
    /// with (else the kernel re-registers the MR: a new key).
    pub(crate) fn umr_rereg_mkey(
        &mut self,
        uid: u16,
        key: u32,
        pd: u32,
        rights: mlx5_dpa::mlx5::cmd::MkeyAccess,
    ) -> Result<(), Check> {
        use mlx5_dpa::devx::UmemAccess as A;
        let m = self
            .mkeys
            .get(key >> 8)
            .filter(|m| m.key == key)
            .ok_or(check::NO_SUCH_MKEY)?;
        owned(&m.meta, uid)?;
        self.check_owned_pd(uid, pd)?;
        let granted = self.mem.access(m.umem).ok_or(check::NO_SUCH_UMEM)?;
        if (rights.local_write && !granted.contains(A::LOCAL_WRITE))
            || (rights.remote_write && !granted.contains(A::REMOTE_WRITE))
            || (rights.remote_read && !granted.contains(A::REMOTE_READ))
            || (rights.atomic && !granted.contains(A::REMOTE_ATOMIC))
        {
            return Err(check::ACCESS_NOT_GRANTED);
        }
        let old_pd = m.pd;
        if let Some(p) = self.pds.get_mut(old_pd) {
            p.meta.refs = p.meta.refs.saturating_sub(1);
        }
        if let Some(p) = self.pds.get_mut(pd) {
            p.meta.refs += 1;
        }
        if let Some(m) = self.mkeys.get_mut(key >> 8) {
            m.pd = pd;
            m.lr = rights.local_read;
            m.lw = rights.local_write;
            m.rr = rights.remote_read;
            m.rw = rights.remote_write;
            m.a = rights.atomic;
        }
        Ok(())
    }

    fn create_mkey(&mut self, uid: u16, inb: &[u8], out: &mut [u8]) -> Result<ObjRef, Check> {
        use l::create_mkey_in as m;
        use l::mkc;
        let v = inbox::<m::Layout>(inb)?;
        let mut o = outbox::<l::create_mkey_out::Layout>(out)?;
        let c = m::memory_key_mkey_entry;
        let access_mode =
            (v.get(c.at(mkc::access_mode_4_2)) << 2) | v.get(c.at(mkc::access_mode_1_0));
        // MTT (1) is the only mode for umem-backed keys (PRM access_mode; KLM/KSM need lists).
        if access_mode != 1 {
            return Err(check::BAD_ACCESS_MODE);
        }
        if v.get(m::mkey_umem_valid) != 1 {
            return Err(check::UMEM_NOT_VALID);
        }
        let pd = v.value(c.at(mkc::pd));
        self.check_owned_pd(uid, pd)?;
        if v.get(c.at(mkc::length64)) != 0 {
            return Err(check::BAD_LENGTH);
        }
        let len = v.get(c.at(mkc::len));
        if len == 0 || len > 1u64 << self.profile.cap(l::cmd_hca_cap::log_max_mrw_sz).min(63) {
            return Err(check::BAD_LENGTH);
        }
        let start = v.get(c.at(mkc::start_addr));
        start.checked_add(len).ok_or(check::BAD_LENGTH)?;
        let umem = self.mem.resolve(uid, v.value(m::mkey_umem_id));
        let offset = v.get(m::mkey_umem_offset);
        let bit = |f| v.get(c.at(f)) == 1;
        let rights = mlx5_dpa::mlx5::cmd::MkeyAccess {
            local_read: bit(mkc::lr),
            local_write: bit(mkc::lw),
            remote_read: bit(mkc::rr),
            remote_write: bit(mkc::rw),
            atomic: bit(mkc::a),
        };
        // Rights are checked against the registration here; the datapath checks them again
        // on every access (local write for receives and READ / atomic results, remote rights
        // at the RC responder).
        use mlx5_dpa::devx::UmemAccess as A;
        let granted = self.mem.access(umem).ok_or(check::NO_SUCH_UMEM)?;
        if (rights.local_write && !granted.contains(A::LOCAL_WRITE))
            || (rights.remote_write && !granted.contains(A::REMOTE_WRITE))
            || (rights.remote_read && !granted.contains(A::REMOTE_READ))
            || (rights.atomic && !granted.contains(A::REMOTE_ATOMIC))
        {
            return Err(check::ACCESS_NOT_GRANTED);
        }
        let dma = self.mem.range(uid, umem, offset, len)?;
        let tag = u32::from(v.value(c.at(mkc::mkey_7_0)));
        let idx = self
            .mkeys
            .insert_with(|idx| Mkey {
                meta: Meta::new(uid),
                key: (idx << 8) | tag,
                pd,
                umem,
                start,
                len,
                dma,
                lr: rights.local_read,
                lw: rights.local_write,
                rr: rights.remote_read,
                rw: rights.remote_write,
                a: rights.atomic,
            })
            .ok_or(check::TOO_MANY_OBJECTS)?;
        self.mem.pin(uid, umem, offset, len)?;
        if let Some(p) = self.pds.get_mut(pd) {
            p.meta.refs += 1;
        }
        o.set(l::create_mkey_out::mkey_index, u64::from(idx));
        Ok(ObjRef::Mkey(idx))
    }

    pub(crate) fn check_owned_pd(&self, uid: u16, pd: u32) -> Result<(), Check> {
        let p = self.pds.get(pd).ok_or(check::NO_SUCH_PD)?;
        owned(&p.meta, uid)
    }

    pub(crate) fn check_uar(&self, uid: u16, page: u32) -> Result<(), Check> {
        let u = self.uars.get(page).ok_or(check::NO_SUCH_UAR)?;
        if u.uid != uid {
            return Err(check::WRONG_UID);
        }
        Ok(())
    }

    pub(crate) fn release_wq(&mut self, wq: &WqRing) {
        self.mem.unpin(wq.ring_umem);
        self.mem.unpin(wq.dbr_umem);
        unref(self.pds.get_mut(wq.pd).map(|p| &mut p.meta));
        if let Some(u) = wq.uar_page {
            uar_unref(&mut self.uars, u);
        }
    }

    /// Every live object, for leak checks.
    pub fn inventory(&self) -> Inventory {
        let mut by_kind = std::collections::BTreeMap::new();
        let mut add = |k: &'static str, n: usize| {
            if n > 0 {
                *by_kind.entry(k).or_insert(0) += n;
            }
        };
        add("PD", self.pds.len());
        add("TD", self.tds.len());
        add("MKEY", self.mkeys.len());
        add("CQ", self.cqs.len());
        add("SQ", self.sqs.len());
        add("RQ", self.rqs.len());
        add("RMP", self.rmps.len());
        add("TIS", self.tises.len());
        add("TIR", self.tirs.len());
        add("RQT", self.rqts.len());
        add("Q_COUNTER", self.q_counters.len());
        add("FLOW_COUNTER", self.flow_counters.len());
        add("FLOW_TABLE", self.tables.len());
        add("FLOW_GROUP", self.groups.len());
        add(
            "FTE",
            self.tables.iter().map(|(_, t)| t.entries.len()).sum(),
        );
        add("QP", self.qps.len());
        for (_, g) in self.gen.iter() {
            let name = match g.obj_type {
                _ if matches!(g.kind, crate::state::objects::GenKind::Alias { .. }) => "ALIAS",
                l::dpa::obj_type::DPA_MEM => "DPA_MEM",
                l::dpa::obj_type::DPA_PROCESS => "DPA_PROCESS",
                l::dpa::obj_type::DPA_THREAD => "DPA_THREAD",
                l::dpa::obj_type::DPA_OUTBOX => "DPA_OUTBOX",
                l::dpa::obj_type::DB_CQ_MAPPING => "DB_CQ_MAPPING",
                l::dpa::obj_type::DPA_EQ => "DPA_EQ",
                l::dpa::obj_type::DPA_WINDOW => "DPA_WINDOW",
                l::dpa::obj_type::DPA_UAR => "DPA_UAR",
                _ => "ALIAS",
            };
            add(name, 1);
        }
        add("UMEM", self.mem.live());
        add("UAR", self.uars.len());
        add("EUG", self.eugs.len());
        add("EU_PARTITION", self.partitions.len());
        Inventory { by_kind }
    }
}

/// Live objects per kind (kinds with none are left out).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Inventory {
    /// Count per kind name (`CQ`, `SQ`, `DPA_THREAD`, `UMEM`, ...).
    pub by_kind: std::collections::BTreeMap<&'static str, usize>,
}

impl Inventory {
    /// Whether nothing is live.
    pub fn is_empty(&self) -> bool {
        self.by_kind.is_empty()
    }
    /// Live objects of one kind.
    pub fn count(&self, kind: &str) -> usize {
        self.by_kind.get(kind).copied().unwrap_or(0)
    }
}

impl std::fmt::Display for Inventory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.by_kind.is_empty() {
            return write!(f, "(nothing live)");
        }
        let parts: Vec<String> = self
            .by_kind
            .iter()
            .map(|(k, n)| format!("{k}={n}"))
            .collect();
        write!(f, "{}", parts.join(" "))
    }
}

pub(crate) fn owned(m: &Meta, uid: u16) -> Result<(), Check> {
    // uid 0 is the kernel's own context: it may touch everything, as on hardware.
    if m.uid != uid && uid != 0 {
        return Err(check::WRONG_UID);
    }
    Ok(())
}

pub(crate) fn uar_unref(uars: &mut Slab<UarPage>, page: u32) {
    if let Some(u) = uars.get_mut(page) {
        u.refs = u.refs.saturating_sub(1);
    }
}

pub(crate) fn unref(m: Option<&mut Meta>) {
    if let Some(m) = m {
        m.refs = m.refs.saturating_sub(1);
    }
}
