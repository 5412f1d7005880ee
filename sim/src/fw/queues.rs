//! CQ, SQ, RQ, RMP and QP commands.

use mlx5_dpa::mlx5::layout::{Field, View};
use mlx5_dpa::mlx5::layouts::{self as l, dpa::apu_element_type};
use mlx5_dpa::mlx5::Opcode;

use super::check::{self, Check};
use super::objects::*;
use super::{inbox, outbox, owned, size, Firmware, EQN_BASE};

/// Bytes of one send WQE basic block.
pub(crate) const WQEBB: usize = 64;

impl Firmware {
    pub(super) fn create_cq(
        &mut self,
        uid: u16,
        inb: &[u8],
        out: &mut [u8],
    ) -> Result<ObjRef, Check> {
        use l::cqc;
        use l::create_cq_in as m;
        let v = inbox::<m::Layout>(inb)?;
        let mut o = outbox::<l::create_cq_out::Layout>(out)?;
        let c = m::cq_context;
        let g = |f: Field<cqc::Layout>| v.get(c.at(f));
        if v.get(m::op_mod) != 0 {
            return Err(check::BAD_OP_MOD);
        }
        let cqe_bytes = match g(cqc::cqe_sz) {
            0 => 64,
            1 => 128,
            _ => return Err(check::BAD_CQE_SIZE),
        };
        let log_size = g(cqc::log_cq_size) as u8;
        if u64::from(log_size) > self.profile.cap(l::cmd_hca_cap::log_max_cq_sz) {
            return Err(check::BAD_LOG_SIZE);
        }
        if g(cqc::cc) != 0 || g(cqc::cqe_comp_en) != 0 {
            return Err(check::NOT_SUPPORTED);
        }
        if g(cqc::oi) != 0 && self.profile.cap(l::cmd_hca_cap::cq_oi) == 0 {
            return Err(check::NOT_SUPPORTED);
        }
        if g(cqc::page_offset) != 0 {
            return Err(check::BAD_ALIGNMENT);
        }
        if v.get(m::cq_umem_valid) != 1 || g(cqc::dbr_umem_valid) != 1 {
            return Err(check::UMEM_NOT_VALID);
        }
        let uar_page = g(cqc::uar_page) as u32;
        self.check_uar(uid, uar_page)?;
        let element = g(cqc::c_eqn_or_apu_element) as u32;
        let target = if g(cqc::apu_cq) == 1 {
            if self.profile.dpa.is_none() {
                return Err(check::NOT_SUPPORTED);
            }
            if cqe_bytes != 64 {
                return Err(check::CQE_SIZE_UNSUPPORTED);
            }
            let (want, t) = match g(cqc::apu_element_type) as u8 {
                apu_element_type::THREAD => {
                    (l::dpa::obj_type::DPA_THREAD, CqTarget::DpaThread(element))
                }
                apu_element_type::EQ => (l::dpa::obj_type::DPA_EQ, CqTarget::DpaEq(element)),
                _ => return Err(check::BAD_CQ_TARGET),
            };
            let obj = self.gen.get(element).ok_or(match t {
                CqTarget::DpaThread(_) => check::NO_SUCH_DPA_THREAD,
                _ => check::NO_SUCH_DPA_EQ,
            })?;
            if obj.obj_type != want {
                return Err(check::WRONG_OBJ_TYPE);
            }
            owned(&obj.meta, uid)?;
            t
        } else {
            if g(cqc::apu_element_type) != 0 {
                return Err(check::BAD_CQ_TARGET);
            }
            if element < EQN_BASE || element >= EQN_BASE + self.profile.comp_vectors {
                return Err(check::NO_SUCH_EQ);
            }
            CqTarget::Eq(element)
        };
        let ring_umem = v.get(m::cq_umem_id) as u32;
        let ring_off = v.get(m::cq_umem_offset);
        let ring_len = (cqe_bytes as u64) << log_size;
        let dbr_umem = g(cqc::dbr_umem_id) as u32;
        let dbr_off = g(cqc::dbr_addr);
        if dbr_off % 8 != 0 || ring_off % 64 != 0 {
            return Err(check::BAD_ALIGNMENT);
        }
        let ring = self.mem.range(uid, ring_umem, ring_off, ring_len)?;
        let dbr = self.mem.range(uid, dbr_umem, dbr_off, 8)?;
        let raw: Box<[u8]> = v.bytes()[size::<l::mbox_in::Layout>()..size::<m::Layout>()].into();
        let cqn = self
            .cqs
            .insert(Cq {
                meta: Meta::new(uid),
                log_size,
                cqe_bytes,
                ring,
                ring_umem,
                dbr,
                dbr_umem,
                uar_page,
                target,
                oi: g(cqc::oi) == 1,
                period: g(cqc::cq_period) as u16,
                max_count: g(cqc::cq_max_count) as u16,
                status: CqStatus::Ok,
                pi: 0,
                armed: None,
                pending_since_arm: 0,
                first_pending: None,
                raw,
                events: 0,
            })
            .ok_or(check::TOO_MANY_OBJECTS)?;
        self.mem.pin(uid, ring_umem, ring_off, ring_len)?;
        self.mem.pin(uid, dbr_umem, dbr_off, 8)?;
        if let Some(u) = self.uars.get_mut(uar_page) {
            u.refs += 1;
        }
        match target {
            CqTarget::Eq(_) => {}
            CqTarget::DpaThread(t) | CqTarget::DpaEq(t) => {
                if let Some(g) = self.gen.get_mut(t) {
                    g.meta.refs += 1;
                }
            }
        }
        o.set(l::create_cq_out::cqn, u64::from(cqn));
        Ok(ObjRef::Cq(cqn))
    }

    pub(super) fn modify_cq(&mut self, uid: u16, inb: &[u8]) -> Result<(), Check> {
        use l::cqc;
        use l::modify_cq_in as m;
        let v = inbox::<m::Layout>(inb)?;
        match v.get(m::op_mod) {
            0 => {}
            // Resize needs the cq_resize capability, which the model does not offer.
            1 => return Err(check::NOT_SUPPORTED),
            _ => return Err(check::BAD_OP_MOD),
        }
        let cqn = v.get(m::cqn) as u32;
        let cq = self.cqs.get_mut(cqn).ok_or(check::NO_SUCH_CQ)?;
        owned(&cq.meta, uid)?;
        // modify_field_select: bit 0 cq_period, bit 1 cq_max_count (kernel MLX5_CQ_MODIFY_*).
        let select = v.get(m::modify_field_select);
        if select & !0b11 != 0 {
            return Err(check::BAD_MODIFY_SELECT);
        }
        if self.profile.cap(l::cmd_hca_cap::cq_moderation) == 0 {
            return Err(check::NOT_SUPPORTED);
        }
        let c = m::cq_context;
        if select & 1 != 0 {
            cq.period = v.get(c.at(cqc::cq_period)) as u16;
        }
        if select & 2 != 0 {
            cq.max_count = v.get(c.at(cqc::cq_max_count)) as u16;
        }
        Ok(())
    }

    pub(super) fn query_cq(&mut self, uid: u16, inb: &[u8], out: &mut [u8]) -> Result<(), Check> {
        use l::cqc;
        let v = inbox::<l::query_cq_in::Layout>(inb)?;
        let cq = self
            .cqs
            .get(v.get(l::query_cq_in::cqn) as u32)
            .ok_or(check::NO_SUCH_CQ)?;
        owned(&cq.meta, uid)?;
        let mut o = outbox::<l::query_cq_out::Layout>(out)?;
        let base = size::<l::mbox_in::Layout>();
        o.bytes_mut()[base..base + cq.raw.len()].copy_from_slice(&cq.raw);
        let c = l::query_cq_out::cq_context;
        o.set(
            c.at(cqc::status),
            if cq.status == CqStatus::Overflow {
                9
            } else {
                0
            },
        );
        o.set(c.at(cqc::producer_counter), u64::from(cq.pi & 0xff_ffff));
        o.set(c.at(cqc::cq_period), u64::from(cq.period));
        o.set(c.at(cqc::cq_max_count), u64::from(cq.max_count));
        let ci = cq.dbr.read_be32(0).unwrap_or(0) & 0xff_ffff;
        o.set(c.at(cqc::consumer_counter), u64::from(ci));
        Ok(())
    }

    /// Validates and pins a work queue (`wq`) inside an SQ, RQ or RMP context.
    fn take_wq(
        &mut self,
        uid: u16,
        v: View<'_, l::wq::Layout>,
        min_log_stride: u64,
        max_log_stride: u64,
    ) -> Result<WqRing, Check> {
        use l::wq;
        // wq_type: 1 = cyclic (PRM); the only type the model implements.
        if v.get(wq::wq_type) != 1 {
            return Err(check::BAD_WQ_TYPE);
        }
        let log_stride = v.get(wq::log_wq_stride);
        if log_stride < min_log_stride || log_stride > max_log_stride {
            return Err(check::BAD_STRIDE);
        }
        let log_size = v.get(wq::log_wq_sz);
        if log_size > self.profile.cap(l::cmd_hca_cap::log_max_wq_sz) {
            return Err(check::BAD_LOG_SIZE);
        }
        if v.get(wq::wq_umem_valid) != 1 || v.get(wq::dbr_umem_valid) != 1 {
            return Err(check::UMEM_NOT_VALID);
        }
        if v.get(wq::page_offset) != 0 {
            return Err(check::BAD_ALIGNMENT);
        }
        let pd = v.get(wq::pd) as u32;
        self.check_owned_pd(uid, pd)?;
        let uar_page = v.get(wq::uar_page) as u32;
        self.check_uar(uid, uar_page)?;
        let ring_umem = v.get(wq::wq_umem_id) as u32;
        let ring_off = v.get(wq::wq_umem_offset);
        let ring_len = 1u64 << (log_stride + log_size);
        let dbr_umem = v.get(wq::dbr_umem_id) as u32;
        let dbr_off = v.get(wq::dbr_addr);
        if !dbr_off.is_multiple_of(8) || !ring_off.is_multiple_of(64) {
            return Err(check::BAD_ALIGNMENT);
        }
        let ring = self.mem.range(uid, ring_umem, ring_off, ring_len)?;
        let dbr = self.mem.range(uid, dbr_umem, dbr_off, 8)?;
        self.mem.pin(uid, ring_umem, ring_off, ring_len)?;
        self.mem.pin(uid, dbr_umem, dbr_off, 8)?;
        if let Some(p) = self.pds.get_mut(pd) {
            p.meta.refs += 1;
        }
        if let Some(u) = self.uars.get_mut(uar_page) {
            u.refs += 1;
        }
        Ok(WqRing {
            ring,
            ring_umem,
            dbr,
            dbr_umem,
            log_stride: log_stride as u8,
            log_size: log_size as u8,
            pd,
            uar_page,
        })
    }

    fn check_cq_ref(&self, uid: u16, cqn: u32) -> Result<(), Check> {
        let cq = self.cqs.get(cqn).ok_or(check::NO_SUCH_CQ)?;
        owned(&cq.meta, uid)
    }

    pub(super) fn create_sq(
        &mut self,
        uid: u16,
        inb: &[u8],
        out: &mut [u8],
    ) -> Result<ObjRef, Check> {
        use l::create_sq_in as m;
        use l::sqc;
        let v = inbox::<m::Layout>(inb)?;
        let mut o = outbox::<l::create_sq_out::Layout>(out)?;
        let c = m::ctx;
        let g = |f: Field<sqc::Layout>| v.get(c.at(f));
        if u64::from(self.sqs.len() as u32)
            >= u64::from(super::limit(self.profile.cap(l::cmd_hca_cap::log_max_sq)))
        {
            return Err(check::TOO_MANY_OBJECTS);
        }
        if g(sqc::state) != u64::from(wq_state::RST) {
            return Err(check::BAD_STATE_FIELD);
        }
        if g(sqc::hairpin) != 0 || g(sqc::non_wire) != 0 {
            return Err(check::NOT_SUPPORTED);
        }
        let cqn = g(sqc::cqn) as u32;
        self.check_cq_ref(uid, cqn)?;
        // tis_lst_sz: exactly one TIS (log_max_tis_per_sq 0).
        if g(sqc::tis_lst_sz) != 1 {
            return Err(check::ABOVE_CAP);
        }
        let tis = g(sqc::tis_num_0) as u32;
        let t = self.tises.get(tis).ok_or(check::NO_SUCH_TIS)?;
        owned(&t.meta, uid)?;
        let wqv = v.nested(c.nested(sqc::wq));
        // Send WQEs are 64-byte basic blocks.
        let wq = self.take_wq(uid, wqv, 6, 6)?;
        let raw: Box<[u8]> = v.bytes()[size::<l::mbox_in::Layout>()..size::<m::Layout>()].into();
        let Some(sqn) = self.sqs.insert(Sq {
            meta: Meta::new(uid),
            state: wq_state::RST,
            cqn,
            tis,
            wq,
            ci: 0,
            doorbelled: false,
            raw,
        }) else {
            self.release_wq(&wq);
            return Err(check::TOO_MANY_OBJECTS);
        };
        if let Some(c) = self.cqs.get_mut(cqn) {
            c.meta.refs += 1;
        }
        if let Some(t) = self.tises.get_mut(tis) {
            t.meta.refs += 1;
        }
        o.set(l::create_sq_out::sqn, u64::from(sqn));
        Ok(ObjRef::Sq(sqn))
    }

    pub(super) fn modify_sq(&mut self, uid: u16, inb: &[u8]) -> Result<(), Check> {
        use l::modify_sq_in as m;
        let v = inbox::<m::Layout>(inb)?;
        let sq = self
            .sqs
            .get_mut(v.get(m::sqn) as u32)
            .ok_or(check::NO_SUCH_SQ)?;
        owned(&sq.meta, uid)?;
        let cur = v.get(m::sq_state) as u8;
        let next = v.get(m::sq_context.at(l::sqc::state)) as u8;
        transition(sq.state, cur, next, check::BAD_SQ_TRANSITION)?;
        if next == wq_state::RST {
            sq.ci = 0;
            sq.doorbelled = false;
        }
        sq.state = next;
        Ok(())
    }

    pub(super) fn query_sq(&mut self, uid: u16, inb: &[u8], out: &mut [u8]) -> Result<(), Check> {
        let v = inbox::<l::query_sq_in::Layout>(inb)?;
        let sq = self
            .sqs
            .get(v.get(l::query_sq_in::sqn) as u32)
            .ok_or(check::NO_SUCH_SQ)?;
        owned(&sq.meta, uid)?;
        let mut o = outbox::<l::query_sq_out::Layout>(out)?;
        let base = size::<l::mbox_in::Layout>();
        o.bytes_mut()[base..base + sq.raw.len()].copy_from_slice(&sq.raw);
        let c = l::query_sq_out::sq_context;
        o.set(c.at(l::sqc::state), u64::from(sq.state));
        o.set(c.nested(l::sqc::wq).at(l::wq::hw_counter), u64::from(sq.ci));
        Ok(())
    }

    pub(super) fn create_rq(
        &mut self,
        uid: u16,
        inb: &[u8],
        out: &mut [u8],
    ) -> Result<ObjRef, Check> {
        use l::create_rq_in as m;
        use l::rqc;
        let v = inbox::<m::Layout>(inb)?;
        let mut o = outbox::<l::create_rq_out::Layout>(out)?;
        let c = m::ctx;
        let g = |f: Field<rqc::Layout>| v.get(c.at(f));
        if g(rqc::state) != u64::from(wq_state::RST) {
            return Err(check::BAD_STATE_FIELD);
        }
        // mem_rq_type 0: inline (the RQ has its own ring); 1 = RMP, not implemented.
        if g(rqc::mem_rq_type) != 0 {
            return Err(check::NOT_SUPPORTED);
        }
        if g(rqc::hairpin) != 0 {
            return Err(check::NOT_SUPPORTED);
        }
        let cqn = g(rqc::cqn) as u32;
        self.check_cq_ref(uid, cqn)?;
        let wqv = v.nested(c.nested(rqc::wq));
        let lo = self.profile.cap(l::cmd_hca_cap::log_min_stride_sz_rq);
        let hi = self.profile.cap(l::cmd_hca_cap::log_max_stride_sz_rq);
        let wq = self.take_wq(uid, wqv, lo, hi)?;
        let raw: Box<[u8]> = v.bytes()[size::<l::mbox_in::Layout>()..size::<m::Layout>()].into();
        let Some(rqn) = self.rqs.insert(Rq {
            meta: Meta::new(uid),
            state: wq_state::RST,
            cqn,
            wq,
            ci: 0,
            raw,
            dropped: 0,
        }) else {
            self.release_wq(&wq);
            return Err(check::TOO_MANY_OBJECTS);
        };
        if let Some(c) = self.cqs.get_mut(cqn) {
            c.meta.refs += 1;
        }
        o.set(l::create_rq_out::rqn, u64::from(rqn));
        Ok(ObjRef::Rq(rqn))
    }

    pub(super) fn modify_rq(&mut self, uid: u16, inb: &[u8]) -> Result<(), Check> {
        use l::modify_rq_in as m;
        let v = inbox::<m::Layout>(inb)?;
        let rq = self
            .rqs
            .get_mut(v.get(m::rqn) as u32)
            .ok_or(check::NO_SUCH_RQ)?;
        owned(&rq.meta, uid)?;
        let cur = v.get(m::rq_state) as u8;
        let next = v.get(m::ctx.at(l::rqc::state)) as u8;
        transition(rq.state, cur, next, check::BAD_RQ_TRANSITION)?;
        if next == wq_state::RST {
            rq.ci = 0;
        }
        rq.state = next;
        Ok(())
    }

    pub(super) fn query_rq(&mut self, uid: u16, inb: &[u8], out: &mut [u8]) -> Result<(), Check> {
        let v = inbox::<l::query_rq_in::Layout>(inb)?;
        let rq = self
            .rqs
            .get(v.get(l::query_rq_in::rqn) as u32)
            .ok_or(check::NO_SUCH_RQ)?;
        owned(&rq.meta, uid)?;
        let mut o = outbox::<l::query_rq_out::Layout>(out)?;
        let base = size::<l::mbox_in::Layout>();
        o.bytes_mut()[base..base + rq.raw.len()].copy_from_slice(&rq.raw);
        let c = l::query_rq_out::rq_context;
        o.set(c.at(l::rqc::state), u64::from(rq.state));
        o.set(c.nested(l::rqc::wq).at(l::wq::hw_counter), u64::from(rq.ci));
        Ok(())
    }

    pub(super) fn create_rmp(
        &mut self,
        uid: u16,
        inb: &[u8],
        out: &mut [u8],
    ) -> Result<ObjRef, Check> {
        use l::create_rmp_in as m;
        let v = inbox::<m::Layout>(inb)?;
        let mut o = outbox::<l::create_rmp_out::Layout>(out)?;
        if v.get(m::ctx.at(l::rmpc::state)) != u64::from(wq_state::RST)
            && v.get(m::ctx.at(l::rmpc::state)) != u64::from(wq_state::RDY)
        {
            return Err(check::BAD_STATE_FIELD);
        }
        let wqv = v.nested(m::ctx.nested(l::rmpc::wq));
        let lo = self.profile.cap(l::cmd_hca_cap::log_min_stride_sz_rq);
        let hi = self.profile.cap(l::cmd_hca_cap::log_max_stride_sz_rq);
        let wq = self.take_wq(uid, wqv, lo, hi)?;
        let Some(rmpn) = self.rmps.insert(Rmp {
            meta: Meta::new(uid),
            wq,
        }) else {
            self.release_wq(&wq);
            return Err(check::TOO_MANY_OBJECTS);
        };
        o.set(l::create_rmp_out::rmpn, u64::from(rmpn));
        Ok(ObjRef::Rmp(rmpn))
    }

    pub(super) fn create_qp(
        &mut self,
        uid: u16,
        inb: &[u8],
        out: &mut [u8],
    ) -> Result<ObjRef, Check> {
        use l::create_qp_in as m;
        use l::qpc;
        let v = inbox::<m::Layout>(inb)?;
        let mut o = outbox::<l::create_qp_out::Layout>(out)?;
        let c = m::qpc;
        let g = |f: Field<qpc::Layout>| v.get(c.at(f));
        if v.get(m::input_qpn) != 0 {
            return Err(check::NOT_SUPPORTED);
        }
        if g(qpc::state) != 0 {
            return Err(check::BAD_STATE_FIELD);
        }
        // st: RC 0x0, UD 0x2 (PRM qpc.st); the model carries RC (and UD objects).
        let st = g(qpc::st) as u8;
        if st != 0x0 && st != 0x2 {
            return Err(check::BAD_QP_TYPE);
        }
        let pd = g(qpc::pd) as u32;
        self.check_owned_pd(uid, pd)?;
        let max = self.profile.cap(l::cmd_hca_cap::log_max_qp_sz);
        let no_sq = g(qpc::no_sq) == 1;
        let log_sq = g(qpc::log_sq_size);
        let log_rq = g(qpc::log_rq_size);
        // rq_type 0 = regular RQ, 3 = no RQ (zero-length); others (SRQ/RMP) not implemented.
        let rq_type = g(qpc::rq_type);
        if rq_type != 0 && rq_type != 3 {
            return Err(check::NOT_SUPPORTED);
        }
        if log_sq > max || log_rq > max {
            return Err(check::BAD_LOG_SIZE);
        }
        let log_rq_stride = g(qpc::log_rq_stride) + 4;
        let rq_bytes = if rq_type == 3 {
            0
        } else {
            1u64 << (log_rq + log_rq_stride)
        };
        let sq_bytes = if no_sq { 0 } else { (WQEBB as u64) << log_sq };
        let cqn_snd = (!no_sq).then(|| g(qpc::cqn_snd) as u32);
        let cqn_rcv = (rq_type != 3).then(|| g(qpc::cqn_rcv) as u32);
        for cq in [cqn_snd, cqn_rcv].into_iter().flatten() {
            self.check_cq_ref(uid, cq)?;
        }
        if v.get(m::wq_umem_valid) != 1 || g(qpc::dbr_umem_valid) != 1 {
            return Err(check::UMEM_NOT_VALID);
        }
        let uar_page = g(qpc::uar_page) as u32;
        self.check_uar(uid, uar_page)?;
        let ring_umem = v.get(m::wq_umem_id) as u32;
        let ring_off = v.get(m::wq_umem_offset);
        let dbr_umem = g(qpc::dbr_umem_id) as u32;
        let dbr_off = g(qpc::dbr_addr);
        if dbr_off % 8 != 0 || ring_off % 64 != 0 {
            return Err(check::BAD_ALIGNMENT);
        }
        let ring_len = (rq_bytes + sq_bytes).max(WQEBB as u64);
        self.mem.range(uid, ring_umem, ring_off, ring_len)?;
        self.mem.range(uid, dbr_umem, dbr_off, 8)?;
        let qpc_raw: Box<[u8]> = v.nested(c).bytes()[..size::<qpc::Layout>()].into();
        let qpn = self
            .qps
            .insert(Qp {
                meta: Meta::new(uid),
                state: qp_state::RST,
                pd,
                cqn_snd,
                cqn_rcv,
                ring_umem,
                dbr_umem,
                uar_page,
                qpc: qpc_raw,
            })
            .ok_or(check::TOO_MANY_OBJECTS)?;
        self.mem.pin(uid, ring_umem, ring_off, ring_len)?;
        self.mem.pin(uid, dbr_umem, dbr_off, 8)?;
        if let Some(u) = self.uars.get_mut(uar_page) {
            u.refs += 1;
        }
        if let Some(p) = self.pds.get_mut(pd) {
            p.meta.refs += 1;
        }
        for cq in [cqn_snd, cqn_rcv].into_iter().flatten() {
            if let Some(c) = self.cqs.get_mut(cq) {
                c.meta.refs += 1;
            }
        }
        o.set(l::create_qp_out::qpn, u64::from(qpn));
        Ok(ObjRef::Qp(qpn))
    }

    pub(super) fn modify_qp(&mut self, uid: u16, op: Opcode, inb: &[u8]) -> Result<(), Check> {
        use qp_state::*;
        // Every QP modify command has qpn at 0x48 (24 bits).
        let v = inbox::<l::qp_2err_in::Layout>(inb)?;
        let qpn = v.get(l::qp_2err_in::qpn) as u32;
        let (from, to): (&[u8], u8) = match op {
            Opcode::RST2INIT_QP => (&[RST], INIT),
            Opcode::INIT2INIT_QP => (&[INIT], INIT),
            Opcode::INIT2RTR_QP => (&[INIT], RTR),
            Opcode::RTR2RTS_QP => (&[RTR], RTS),
            Opcode::RTS2RTS_QP => (&[RTS], RTS),
            Opcode::SQERR2RTS_QP => (&[SQER], RTS),
            Opcode::QP_2ERR => (&[RST, INIT, RTR, RTS, SQER, ERR], ERR),
            Opcode::QP_2RST => (&[RST, INIT, RTR, RTS, SQER, ERR], RST),
            _ => return Err(check::UNKNOWN_OPCODE),
        };
        // Transitions that carry a QP context need the full mailbox.
        let with_ctx = !matches!(op, Opcode::QP_2ERR | Opcode::QP_2RST);
        if with_ctx {
            let need = if op == Opcode::RTS2RTS_QP {
                size::<l::rtr2rts_qp_in::Layout>()
            } else {
                size::<l::rst2init_qp_in::Layout>()
            };
            if inb.len() < need {
                return Err(check::INBOX_TOO_SHORT);
            }
        }
        let mtu_ok = {
            let cv = inbox::<l::rst2init_qp_in::Layout>(inb).ok();
            match (op, cv) {
                (Opcode::INIT2RTR_QP, Some(cv)) => {
                    // mtu: 1..=5 (256..4096 bytes), PRM.
                    let mtu = cv.get(l::rst2init_qp_in::qpc.at(l::qpc::mtu));
                    (1..=5).contains(&mtu)
                }
                _ => true,
            }
        };
        let qp = self.qps.get_mut(qpn).ok_or(check::NO_SUCH_QP)?;
        owned(&qp.meta, uid)?;
        if !from.contains(&qp.state) {
            return Err(check::BAD_QP_TRANSITION);
        }
        if !mtu_ok {
            return Err(check::BAD_MTU);
        }
        if with_ctx {
            // Keep the fields the transition sets (a simplification: every field of the
            // given context replaces the stored one, except state and the ring fields).
            let at = (l::rst2init_qp_in::qpc.offset() / 8) as usize;
            let cv = &inb[at..at + size::<l::qpc::Layout>()];
            let keep_head = qp.qpc[..8].to_vec();
            let n = qp.qpc.len().min(cv.len());
            qp.qpc[..n].copy_from_slice(&cv[..n]);
            qp.qpc[..8].copy_from_slice(&keep_head);
        }
        qp.state = to;
        Ok(())
    }

    pub(super) fn query_qp(&mut self, uid: u16, inb: &[u8], out: &mut [u8]) -> Result<(), Check> {
        let v = inbox::<l::query_qp_in::Layout>(inb)?;
        let qp = self
            .qps
            .get(v.get(l::query_qp_in::qpn) as u32)
            .ok_or(check::NO_SUCH_QP)?;
        owned(&qp.meta, uid)?;
        let mut o = outbox::<l::query_qp_out::Layout>(out)?;
        let at = (l::query_qp_out::qpc.offset() / 8) as usize;
        o.bytes_mut()[at..at + qp.qpc.len()].copy_from_slice(&qp.qpc);
        o.set(l::query_qp_out::qpc.at(l::qpc::state), u64::from(qp.state));
        Ok(())
    }
}

/// SQ/RQ state machine (PRM): RST->RDY, RDY->RDY, RDY->ERR, RDY->RST, ERR->RST. The inbox's
/// current state must be the object's.
fn transition(state: u8, cur: u8, next: u8, bad: Check) -> Result<(), Check> {
    use wq_state::*;
    if ![RST, RDY, ERR].contains(&next) {
        return Err(check::BAD_STATE_FIELD);
    }
    if cur != state {
        return Err(check::CURRENT_STATE_MISMATCH);
    }
    let ok = matches!(
        (state, next),
        (RST, RDY) | (RDY, RDY) | (RDY, ERR) | (RDY, RST) | (ERR, RST)
    );
    if ok {
        Ok(())
    } else {
        Err(bad)
    }
}
