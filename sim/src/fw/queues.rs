//! CQ, SQ, RQ, RMP and QP commands.

use mlx5_dpa::mlx5::layout::{View, ViewMut};
use mlx5_dpa::mlx5::layouts::{self as l, dpa::apu_element_type};
use mlx5_dpa::mlx5::Opcode;

use super::{inbox, outbox, owned, size, Firmware, EQN_BASE};
use crate::check::{self, Check};
use crate::state::objects::*;

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
        // The context, as its own view.
        let g = v.nested(c);
        if v.get(m::op_mod) != 0 {
            return Err(check::BAD_OP_MOD);
        }
        let cqe_bytes = match g.get(cqc::cqe_sz) {
            0 => 64,
            1 => 128,
            _ => return Err(check::BAD_CQE_SIZE),
        };
        let log_size = g.value(cqc::log_cq_size);
        if u64::from(log_size) > self.profile.cap(l::cmd_hca_cap::log_max_cq_sz) {
            return Err(check::BAD_LOG_SIZE);
        }
        // CQE compression: 64-byte CQEs, mini CQEs of the hash format (0: RSS hash result
        // and byte count), as `cmd_hca_cap` states it (no 128-byte compression, no flow-tag or
        // stride-index mini CQEs).
        let comp = if g.get(cqc::cqe_comp_en) != 0 {
            if self.profile.cap(l::cmd_hca_cap::cqe_compression) == 0
                || cqe_bytes != 64
                || g.get(cqc::cc) != 0
            {
                return Err(check::NOT_SUPPORTED);
            }
            if g.get(cqc::mini_cqe_res_format) != 0 || g.get(cqc::mini_cqe_res_format_3_2) != 0 {
                return Err(check::NOT_SUPPORTED);
            }
            let max = self.profile.cap(l::cmd_hca_cap::cqe_compression_max_num) as usize;
            Some(CqeCompression {
                held: Vec::with_capacity(max),
                max: max.max(2),
            })
        } else {
            None
        };
        if g.get(cqc::oi) != 0 && self.profile.cap(l::cmd_hca_cap::cq_oi) == 0 {
            return Err(check::NOT_SUPPORTED);
        }
        if g.get(cqc::page_offset) != 0 {
            return Err(check::BAD_ALIGNMENT);
        }
        if v.get(m::cq_umem_valid) != 1 || g.get(cqc::dbr_umem_valid) != 1 {
            return Err(check::UMEM_NOT_VALID);
        }
        let uar_page = g.value(cqc::uar_page);
        self.check_uar(uid, uar_page)?;
        let element = g.value(cqc::c_eqn_or_apu_element);
        let target = if g.get(cqc::apu_cq) == 1 {
            if self.profile.dpa.is_none() {
                return Err(check::NOT_SUPPORTED);
            }
            if cqe_bytes != 64 {
                return Err(check::CQE_SIZE_UNSUPPORTED);
            }
            // Another function's DPA thread is named by an alias of it this context holds.
            let thread = self.through_alias(uid, element, l::dpa::obj_type::DPA_THREAD);
            let (want, t) = match g.value(cqc::apu_element_type) {
                apu_element_type::THREAD => {
                    (l::dpa::obj_type::DPA_THREAD, CqTarget::DpaThread(thread))
                }
                apu_element_type::EQ => (l::dpa::obj_type::DPA_EQ, CqTarget::DpaEq(element)),
                _ => return Err(check::BAD_CQ_TARGET),
            };
            let (CqTarget::DpaThread(id) | CqTarget::DpaEq(id) | CqTarget::Eq(id)) = t;
            let obj = self.gen.get(id).ok_or(match t {
                CqTarget::DpaThread(_) => check::NO_SUCH_DPA_THREAD,
                _ => check::NO_SUCH_DPA_EQ,
            })?;
            if obj.obj_type != want {
                return Err(check::WRONG_OBJ_TYPE);
            }
            if id == element {
                owned(&obj.meta, uid)?;
            }
            t
        } else {
            if g.get(cqc::apu_element_type) != 0 {
                return Err(check::BAD_CQ_TARGET);
            }
            if element < EQN_BASE || element >= EQN_BASE + self.profile.comp_vectors {
                return Err(check::NO_SUCH_EQ);
            }
            CqTarget::Eq(element)
        };
        let ring_umem = self.mem.resolve(uid, v.value(m::cq_umem_id));
        let ring_off = v.get(m::cq_umem_offset);
        let ring_len = (cqe_bytes as u64) << log_size;
        let dbr_umem = self.mem.resolve(uid, g.value(cqc::dbr_umem_id));
        let dbr_off = g.get(cqc::dbr_addr);
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
                oi: g.get(cqc::oi) == 1,
                cc: g.get(cqc::cc) == 1,
                period: g.value(cqc::cq_period),
                max_count: g.value(cqc::cq_max_count),
                status: CqStatus::Ok,
                pi: 0,
                ci_seen: 0,
                armed: None,
                arm_seen: 0,
                pending_since_arm: 0,
                first_pending: None,
                raw,
                events: 0,
                comp,
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
        let cqn = v.value(m::cqn);
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
            cq.period = v.value(c.at(cqc::cq_period));
        }
        if select & 2 != 0 {
            cq.max_count = v.value(c.at(cqc::cq_max_count));
        }
        // A period set while a CQE waits for the event: its timer runs from now on.
        if cq.period > 0 && cq.armed.is_some() && cq.first_pending.is_some() {
            self.timed_cqs.push(cqn);
        }
        Ok(())
    }

    pub(super) fn query_cq(&mut self, uid: u16, inb: &[u8], out: &mut [u8]) -> Result<(), Check> {
        use l::cqc;
        let v = inbox::<l::query_cq_in::Layout>(inb)?;
        let cq = self
            .cqs
            .get(v.value(l::query_cq_in::cqn))
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
        linked_ok: bool,
        send: bool,
    ) -> Result<WqRing, Check> {
        use l::wq;
        // A linked list only for a shared receive queue (an RMP, as a verbs SRQ); the model
        // has no striding RQs.
        let linked = match v.value(wq::wq_type) {
            Ok(WqType::Cyclic) => false,
            Ok(WqType::LinkedList) if linked_ok => true,
            _ => return Err(check::BAD_WQ_TYPE),
        };
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
        let pd = v.value(wq::pd);
        self.check_owned_pd(uid, pd)?;
        // Receive queues are rung through their doorbell record only (DPDK's mlx5 driver and
        // Linux's mlx5e leave their uar_page 0).
        let uar_page = send.then(|| v.value(wq::uar_page));
        if let Some(u) = uar_page {
            self.check_uar(uid, u)?;
        }
        let ring_umem = self.mem.resolve(uid, v.value(wq::wq_umem_id));
        let ring_off = v.get(wq::wq_umem_offset);
        let ring_len = 1u64 << (log_stride + log_size);
        let dbr_umem = self.mem.resolve(uid, v.value(wq::dbr_umem_id));
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
        if let Some(u) = uar_page.and_then(|u| self.uars.get_mut(u)) {
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
            linked,
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
        // The context, as its own view.
        let g = v.nested(c);
        if u64::from(self.sqs.len() as u32)
            >= u64::from(super::limit(self.profile.cap(l::cmd_hca_cap::log_max_sq)))
        {
            return Err(check::TOO_MANY_OBJECTS);
        }
        if g.value(sqc::state) != Ok(WqState::Rst) {
            return Err(check::BAD_STATE_FIELD);
        }
        if g.get(sqc::hairpin) != 0 || g.get(sqc::non_wire) != 0 {
            return Err(check::NOT_SUPPORTED);
        }
        let cqn = g.value(sqc::cqn);
        self.check_cq_ref(uid, cqn)?;
        // tis_lst_sz: exactly one TIS (log_max_tis_per_sq 0).
        if g.get(sqc::tis_lst_sz) != 1 {
            return Err(check::ABOVE_CAP);
        }
        let tis = g.value(sqc::tis_num_0);
        let t = self.tises.get(tis).ok_or(check::NO_SUCH_TIS)?;
        owned(&t.meta, uid)?;
        let wqv = v.nested(c.nested(sqc::wq));
        // Send WQEs are 64-byte basic blocks.
        let wq = self.take_wq(uid, wqv, 6, 6, false, true)?;
        let raw: Box<[u8]> = v.bytes()[size::<l::mbox_in::Layout>()..size::<m::Layout>()].into();
        let Some(sqn) = self.sqs.insert(Sq {
            meta: Meta::new(uid),
            state: WqState::Rst,
            cqn,
            tis,
            wq,
            ci: 0,
            doorbelled: false,
            rung_pi: 0,
            seen_pi: 0,
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
        let sq = self.sqs.get_mut(v.value(m::sqn)).ok_or(check::NO_SUCH_SQ)?;
        owned(&sq.meta, uid)?;
        let cur = v.value(m::sq_state);
        let next = v.value(m::sq_context.at(l::sqc::state));
        let next = transition(sq.state, cur, next, check::BAD_SQ_TRANSITION)?;
        if next == WqState::Rst {
            sq.ci = 0;
            sq.doorbelled = false;
            sq.rung_pi = 0;
            sq.seen_pi = 0;
        }
        sq.state = next;
        Ok(())
    }

    pub(super) fn query_sq(&mut self, uid: u16, inb: &[u8], out: &mut [u8]) -> Result<(), Check> {
        let v = inbox::<l::query_sq_in::Layout>(inb)?;
        let sq = self
            .sqs
            .get(v.value(l::query_sq_in::sqn))
            .ok_or(check::NO_SUCH_SQ)?;
        owned(&sq.meta, uid)?;
        let mut o = outbox::<l::query_sq_out::Layout>(out)?;
        let base = size::<l::mbox_in::Layout>();
        o.bytes_mut()[base..base + sq.raw.len()].copy_from_slice(&sq.raw);
        let c = l::query_sq_out::sq_context;
        o.set_value(c.at(l::sqc::state), sq.state);
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
        // The context, as its own view.
        let g = v.nested(c);
        if g.value(rqc::state) != Ok(WqState::Rst) {
            return Err(check::BAD_STATE_FIELD);
        }
        // mem_rq_type 0: inline (the RQ has its own ring); 1 = RMP, not implemented.
        if g.get(rqc::mem_rq_type) != 0 {
            return Err(check::NOT_SUPPORTED);
        }
        if g.get(rqc::hairpin) != 0 {
            return Err(check::NOT_SUPPORTED);
        }
        let cqn = g.value(rqc::cqn);
        self.check_cq_ref(uid, cqn)?;
        // The Q counter its drops count to (0: none).
        let q_counter = u32::from(g.value(rqc::counter_set_id));
        if q_counter != 0 {
            let q = self
                .q_counters
                .get(q_counter)
                .ok_or(check::NO_SUCH_Q_COUNTER)?;
            owned(&q.meta, uid)?;
        }
        let wqv = v.nested(c.nested(rqc::wq));
        let lo = self.profile.cap(l::cmd_hca_cap::log_min_stride_sz_rq);
        let hi = self.profile.cap(l::cmd_hca_cap::log_max_stride_sz_rq);
        let wq = self.take_wq(uid, wqv, lo, hi, false, false)?;
        let raw: Box<[u8]> = v.bytes()[size::<l::mbox_in::Layout>()..size::<m::Layout>()].into();
        let Some(rqn) = self.rqs.insert(Rq {
            meta: Meta::new(uid),
            state: WqState::Rst,
            cqn,
            wq,
            ci: 0,
            posted: 0,
            raw,
            dropped: 0,
            q_counter,
        }) else {
            self.release_wq(&wq);
            return Err(check::TOO_MANY_OBJECTS);
        };
        if let Some(c) = self.cqs.get_mut(cqn) {
            c.meta.refs += 1;
        }
        if let Some(q) = self.q_counters.get_mut(q_counter) {
            q.meta.refs += 1;
        }
        o.set(l::create_rq_out::rqn, u64::from(rqn));
        Ok(ObjRef::Rq(rqn))
    }

    pub(super) fn modify_rq(&mut self, uid: u16, inb: &[u8]) -> Result<(), Check> {
        use l::modify_rq_in as m;
        let v = inbox::<m::Layout>(inb)?;
        let rq = self.rqs.get_mut(v.value(m::rqn)).ok_or(check::NO_SUCH_RQ)?;
        owned(&rq.meta, uid)?;
        let cur = v.value(m::rq_state);
        let next = v.value(m::ctx.at(l::rqc::state));
        let next = transition(rq.state, cur, next, check::BAD_RQ_TRANSITION)?;
        if next == WqState::Rst {
            rq.ci = 0;
            rq.posted = 0;
        }
        rq.state = next;
        Ok(())
    }

    pub(super) fn query_rq(&mut self, uid: u16, inb: &[u8], out: &mut [u8]) -> Result<(), Check> {
        let v = inbox::<l::query_rq_in::Layout>(inb)?;
        let rq = self
            .rqs
            .get(v.value(l::query_rq_in::rqn))
            .ok_or(check::NO_SUCH_RQ)?;
        owned(&rq.meta, uid)?;
        let mut o = outbox::<l::query_rq_out::Layout>(out)?;
        let base = size::<l::mbox_in::Layout>();
        o.bytes_mut()[base..base + rq.raw.len()].copy_from_slice(&rq.raw);
        let c = l::query_rq_out::rq_context;
        o.set_value(c.at(l::rqc::state), rq.state);
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
        if !matches!(
            v.value(m::ctx.at(l::rmpc::state)),
            Ok(WqState::Rst | WqState::Rdy)
        ) {
            return Err(check::BAD_STATE_FIELD);
        }
        let wqv = v.nested(m::ctx.nested(l::rmpc::wq));
        let lo = self.profile.cap(l::cmd_hca_cap::log_min_stride_sz_rq);
        let hi = self.profile.cap(l::cmd_hca_cap::log_max_stride_sz_rq);
        let wq = self.take_wq(uid, wqv, lo, hi, true, false)?;
        let Some(rmpn) = self.rmps.insert(Rmp {
            meta: Meta::new(uid),
            wq,
            ci: 0,
            head: 0,
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
        // The context, as its own view.
        let g = v.nested(c);
        if v.get(m::input_qpn) != 0 {
            return Err(check::NOT_SUPPORTED);
        }
        if g.value(qpc::state) != Ok(QpState::Rst) {
            return Err(check::BAD_STATE_FIELD);
        }
        // The model carries RC (and UD objects).
        let st = match g.value(qpc::st) {
            Ok(st @ (QpServiceType::Rc | QpServiceType::Ud)) => st,
            _ => return Err(check::BAD_QP_TYPE),
        };
        let pd = g.value(qpc::pd);
        self.check_owned_pd(uid, pd)?;
        let max = self.profile.cap(l::cmd_hca_cap::log_max_qp_sz);
        let no_sq = g.get(qpc::no_sq) == 1;
        let log_sq = g.get(qpc::log_sq_size);
        let log_rq = g.get(qpc::log_rq_size);
        // rq_type (PRM): 0 = regular RQ in the QP's ring, 1 = a shared receive queue (an
        // RMP of the same user, named by srqn_rmpn_xrqn), 3 = no RQ (zero-length).
        let rq_type = g.get(qpc::rq_type);
        if rq_type != 0 && rq_type != 1 && rq_type != 3 {
            return Err(check::NOT_SUPPORTED);
        }
        let srq = if rq_type == 1 {
            let rmpn = g.value(qpc::srqn_rmpn_xrqn);
            let rmp = self.rmps.get(rmpn).ok_or(check::NO_SUCH_RMP)?;
            owned(&rmp.meta, uid)?;
            if rmp.wq.pd != pd {
                return Err(check::PD_MISMATCH);
            }
            Some(rmpn)
        } else {
            None
        };
        if log_sq > max || (rq_type == 0 && log_rq > max) {
            return Err(check::BAD_LOG_SIZE);
        }
        let log_rq_stride = g.get(qpc::log_rq_stride) + 4;
        let rq_bytes = if rq_type == 0 {
            1u64 << (log_rq + log_rq_stride)
        } else {
            0
        };
        let sq_bytes = if no_sq { 0 } else { (WQEBB as u64) << log_sq };
        let cqn_snd = (!no_sq).then(|| g.value(qpc::cqn_snd));
        let cqn_rcv = (rq_type != 3).then(|| g.value(qpc::cqn_rcv));
        for cq in [cqn_snd, cqn_rcv].into_iter().flatten() {
            self.check_cq_ref(uid, cq)?;
        }
        if v.get(m::wq_umem_valid) != 1 || g.get(qpc::dbr_umem_valid) != 1 {
            return Err(check::UMEM_NOT_VALID);
        }
        let uar_page = g.value(qpc::uar_page);
        self.check_uar(uid, uar_page)?;
        let ring_umem = self.mem.resolve(uid, v.value(m::wq_umem_id));
        let ring_off = v.get(m::wq_umem_offset);
        let dbr_umem = self.mem.resolve(uid, g.value(qpc::dbr_umem_id));
        let dbr_off = g.get(qpc::dbr_addr);
        if dbr_off % 8 != 0 || ring_off % 64 != 0 {
            return Err(check::BAD_ALIGNMENT);
        }
        let ring_len = (rq_bytes + sq_bytes).max(WQEBB as u64);
        let ring = self.mem.range(uid, ring_umem, ring_off, ring_len)?;
        let dbr = self.mem.range(uid, dbr_umem, dbr_off, 8)?;
        let qpc_raw: Box<[u8]> = v.nested(c).bytes()[..size::<qpc::Layout>()].into();
        let mut ctx = QpCtx::default();
        if let Ok(q) = View::<qpc::Layout>::new(&qpc_raw) {
            for part in [Part::Init, Part::Rtr, Part::Rts] {
                read_ctx(&mut ctx, q, part, Opt::ALL);
            }
        }
        let qpn = self
            .qps
            .insert(Qp {
                meta: Meta::new(uid),
                state: QpState::Rst,
                st,
                user_index: g.value(qpc::user_index),
                pd,
                cqn_snd,
                cqn_rcv,
                ring_umem,
                dbr_umem,
                uar_page,
                ring,
                dbr,
                rq: (rq_type == 0).then_some(QpRq {
                    log_size: log_rq as u8,
                    log_stride: log_rq_stride as u8,
                }),
                srq,
                sq: (!no_sq).then_some(QpSq {
                    offset: rq_bytes as usize,
                    log_size: log_sq as u8,
                }),
                ctx,
                rc: crate::state::rc::RcState::default(),
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
        if let Some(r) = srq.and_then(|n| self.rmps.get_mut(n)) {
            r.meta.refs += 1;
        }
        o.set(l::create_qp_out::qpn, u64::from(qpn));
        Ok(ObjRef::Qp(qpn))
    }

    pub(super) fn modify_qp(&mut self, uid: u16, op: Opcode, inb: &[u8]) -> Result<(), Check> {
        // The states the model's QPs take (never SQD or SUSPENDED).
        const ANY_STATE: &[QpState] = &[
            QpState::Rst,
            QpState::Init,
            QpState::Rtr,
            QpState::Rts,
            QpState::SqEr,
            QpState::Err,
        ];
        // Every QP modify command has qpn at 0x48 (24 bits).
        let v = inbox::<l::qp_2err_in::Layout>(inb)?;
        let qpn = v.value(l::qp_2err_in::qpn);
        // Which context fields each transition reads (PRM; IBA 11.2.4.2 for the attributes a
        // transition may set). INIT2INIT takes what RST2INIT takes. RTS2RTS takes the RTR2RTS
        // fields except next_send_psn: the send PSN cannot change in RTS (IBA), and a PSN
        // moved under outstanding requests would break the connection.
        let (from, to, part): (&[QpState], QpState, Option<Part>) = match op {
            Opcode::RST2INIT_QP => (&[QpState::Rst], QpState::Init, Some(Part::Init)),
            Opcode::INIT2INIT_QP => (&[QpState::Init], QpState::Init, Some(Part::Init)),
            Opcode::INIT2RTR_QP => (&[QpState::Init], QpState::Rtr, Some(Part::Rtr)),
            Opcode::RTR2RTS_QP => (&[QpState::Rtr], QpState::Rts, Some(Part::Rts)),
            Opcode::RTS2RTS_QP => (&[QpState::Rts], QpState::Rts, Some(Part::RtsChange)),
            Opcode::SQERR2RTS_QP => (&[QpState::SqEr], QpState::Rts, Some(Part::None)),
            Opcode::QP_2ERR => (ANY_STATE, QpState::Err, None),
            Opcode::QP_2RST => (ANY_STATE, QpState::Rst, None),
            _ => return Err(check::UNKNOWN_OPCODE),
        };
        // Transitions that carry a QP context need the full mailbox.
        let cv = match part {
            Some(_) => {
                let need = if op == Opcode::RTS2RTS_QP {
                    size::<l::rtr2rts_qp_in::Layout>()
                } else {
                    size::<l::rst2init_qp_in::Layout>()
                };
                if inb.len() < need {
                    return Err(check::INBOX_TOO_SHORT);
                }
                // Every transition's inbox has the qpc at 0xc0, like rst2init_qp_in.
                let at = (l::rst2init_qp_in::qpc.offset() / 8) as usize;
                inb.get(at..at + size::<l::qpc::Layout>())
                    .and_then(|b| View::<l::qpc::Layout>::new(b).ok())
            }
            None => None,
        };
        let num_ports = self.profile.cap(l::cmd_hca_cap::num_ports);
        let log_max_msg = self.profile.cap(l::cmd_hca_cap::log_max_msg);
        let qp = self.qps.get_mut(qpn).ok_or(check::NO_SUCH_QP)?;
        owned(&qp.meta, uid)?;
        if !from.contains(&qp.state) {
            return Err(check::BAD_QP_TRANSITION);
        }
        // opt_param_mask (at 0x80 in every transition that carries a context); RTS2RTS's
        // extended mask, where the mailbox is long enough to hold it.
        let opt = Opt {
            mask: inbox::<l::rst2init_qp_in::Layout>(inb)
                .map_or(0, |v| v.value(l::rst2init_qp_in::opt_param_mask)),
            mask_95_32: if op == Opcode::RTS2RTS_QP {
                inbox::<l::rts2rts_qp_in::Layout>(inb)
                    .map_or(0, |v| v.get(l::rts2rts_qp_in::opt_param_mask_95_32))
            } else {
                0
            },
        };
        if let (Some(part), Some(cv)) = (part, cv) {
            let mut ctx = qp.ctx;
            read_ctx(&mut ctx, cv, part, opt);
            match part {
                Part::Init => {
                    if u64::from(ctx.port) > num_ports {
                        return Err(check::BAD_PORT);
                    }
                }
                Part::Rtr => {
                    // mtu: 1..=5 (256..4096 bytes), PRM.
                    if !(1..=5).contains(&ctx.mtu) {
                        return Err(check::BAD_MTU);
                    }
                    if u64::from(ctx.log_msg_max) > log_max_msg {
                        return Err(check::ABOVE_CAP);
                    }
                    if u64::from(ctx.port) > num_ports {
                        return Err(check::BAD_PORT);
                    }
                    // A UD QP has no path of its own: each send WQE carries its address.
                    if !ctx.fl && qp.st == QpServiceType::Rc {
                        if u64::from(ctx.src_addr_index) >= super::vport::GID_TABLE_SIZE {
                            return Err(check::BAD_GID_INDEX);
                        }
                        // The link-local (IPv6) entry: the model carries RoCE v2 over IPv4 only.
                        if ctx.src_addr_index != super::vport::IPV4_GID_INDEX {
                            return Err(check::GID_NOT_IPV4);
                        }
                        if super::vport::gid_ipv4(&ctx.rgid).is_none() {
                            return Err(check::GID_NOT_IPV4);
                        }
                    }
                }
                Part::Rts | Part::RtsChange | Part::None => {}
            }
            qp.ctx = ctx;
            if let Ok(mut q) = ViewMut::<l::qpc::Layout>::new(&mut qp.qpc) {
                write_ctx(&qp.ctx, &mut q);
            }
        }
        qp.state = to;
        // The transport follows the state (crate::rc): QpState::Rst forgets everything, QpState::Rtr starts the
        // responder at next_rcv_psn, QpState::Rts the requester at next_send_psn; QpState::Err flushes.
        match op {
            Opcode::QP_2RST => qp.rc.reset(),
            Opcode::INIT2RTR_QP => qp.rc.start_responder(&qp.ctx),
            Opcode::RTR2RTS_QP => qp.rc.start_requester(&qp.ctx),
            Opcode::RTS2RTS_QP | Opcode::SQERR2RTS_QP => qp.rc.update_requester(&qp.ctx),
            _ => {}
        }
        Ok(())
    }

    pub(super) fn query_qp(&mut self, uid: u16, inb: &[u8], out: &mut [u8]) -> Result<(), Check> {
        let v = inbox::<l::query_qp_in::Layout>(inb)?;
        let qp = self
            .qps
            .get(v.value(l::query_qp_in::qpn))
            .ok_or(check::NO_SUCH_QP)?;
        owned(&qp.meta, uid)?;
        let mut o = outbox::<l::query_qp_out::Layout>(out)?;
        let at = (l::query_qp_out::qpc.offset() / 8) as usize;
        o.bytes_mut()[at..at + qp.qpc.len()].copy_from_slice(&qp.qpc);
        let c = l::query_qp_out::qpc;
        o.set_value(c.at(l::qpc::state), qp.state);
        // Live transport values, as firmware reports them: the PSNs the QP is at and the
        // ring counters it consumed.
        let live = qp.rc.live(qp.state);
        if let Some(psn) = live.next_send_psn {
            o.set(c.at(l::qpc::next_send_psn), u64::from(psn));
        }
        if let Some(psn) = live.next_rcv_psn {
            o.set(c.at(l::qpc::next_rcv_psn), u64::from(psn));
        }
        o.set(c.at(l::qpc::hw_sq_wqebb_counter), u64::from(live.sq_wqebbs));
        o.set(c.at(l::qpc::hw_rq_counter), u64::from(live.rq_wqes));
        Ok(())
    }
}

/// SQ/RQ state machine (PRM): RST->RDY, RDY->RDY, RDY->ERR, RDY->RST, ERR->RST. The inbox's
/// current state must be the object's. Gives the state to move to.
fn transition(
    state: WqState,
    cur: Result<WqState, UnknownValue>,
    next: Result<WqState, UnknownValue>,
    bad: Check,
) -> Result<WqState, Check> {
    use WqState::{Rdy, Rst};
    let next = next.map_err(|_| check::BAD_STATE_FIELD)?;
    if cur != Ok(state) {
        return Err(check::CURRENT_STATE_MISMATCH);
    }
    let ok = matches!(
        (state, next),
        (Rst, Rdy) | (Rdy, Rdy) | (Rdy, WqState::Err) | (Rdy, Rst) | (WqState::Err, Rst)
    );
    if ok {
        Ok(next)
    } else {
        Err(bad)
    }
}

/// Groups of QP context fields, by the transition that sets them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    /// RST2INIT / INIT2INIT: remote access enables, path migration state, port, P_Key index.
    Init,
    /// INIT2RTR: path MTU, message size, remote QP, receive PSN, responder resources, RNR
    /// timer and the primary address path.
    Rtr,
    /// RTR2RTS: send PSN, initiator depth, retry counts, ACK timeout.
    Rts,
    /// RTS2RTS: as RTR2RTS without the send PSN.
    RtsChange,
    /// No context field.
    None,
}

/// The optional-attribute masks of a transition (PRM `opt_param_mask`, `opt_param_mask_95_32`;
/// bit values `mlx5_dpa::mlx5::cmd::opt_param`).
#[derive(Debug, Clone, Copy)]
struct Opt {
    mask: u32,
    mask_95_32: u64,
}

impl Opt {
    /// Every attribute (creating a QP reads its whole context).
    const ALL: Opt = Opt {
        mask: u32::MAX,
        mask_95_32: u64::MAX,
    };

    fn has(&self, bits: u32) -> bool {
        self.mask & bits != 0
    }
}

fn read_ctx(ctx: &mut QpCtx, q: View<'_, l::qpc::Layout>, part: Part, opt: Opt) {
    use l::{ads, qpc};
    use mlx5_dpa::mlx5::cmd::opt_param as o;
    let p = qpc::primary_address_path;
    // The context, as its own view.
    let gp = q.nested(p);
    // A UD QP's Q_Key, named as an optional parameter of the transitions after RST2INIT.
    if matches!(part, Part::Rtr | Part::Rts | Part::RtsChange) && opt.has(o::Q_KEY) {
        ctx.q_key = q.value(qpc::q_key);
    }
    match part {
        Part::Init => {
            ctx.rre = q.get(qpc::rre) == 1;
            ctx.rwe = q.get(qpc::rwe) == 1;
            ctx.rae = q.get(qpc::rae) == 1;
            ctx.pm_state = q.value(qpc::pm_state);
            ctx.port = gp.value(ads::vhca_port_num);
            ctx.pkey_index = gp.value(ads::pkey_index);
            ctx.q_key = q.value(qpc::q_key);
        }
        Part::Rtr => {
            ctx.mtu = q.value(qpc::mtu);
            ctx.log_msg_max = q.value(qpc::log_msg_max);
            ctx.remote_qpn = q.value(qpc::remote_qpn);
            ctx.next_rcv_psn = q.value(qpc::next_rcv_psn);
            ctx.log_rra_max = q.value(qpc::log_rra_max);
            ctx.min_rnr_nak = q.value(qpc::min_rnr_nak);
            ctx.fl = gp.get(ads::fl) == 1;
            let hi = (gp.value(ads::rmac_47_32)).to_be_bytes();
            let lo = (gp.value(ads::rmac_31_0)).to_be_bytes();
            ctx.rmac = [hi[0], hi[1], lo[0], lo[1], lo[2], lo[3]];
            for (i, b) in ctx.rgid.iter_mut().enumerate() {
                *b = ads::rgid_rip.at(i as u32).map_or(0, |f| gp.get(f) as u8);
            }
            ctx.src_addr_index = gp.value(ads::src_addr_index);
            ctx.hop_limit = gp.value(ads::hop_limit);
            ctx.udp_sport = gp.value(ads::udp_sport);
            // The driver names the port again on INIT2RTR; a zero leaves RST2INIT's.
            let port = gp.value(ads::vhca_port_num);
            if port != 0 {
                ctx.port = port;
            }
        }
        Part::Rts => {
            ctx.next_send_psn = q.value(qpc::next_send_psn);
            ctx.log_sra_max = q.value(qpc::log_sra_max);
            ctx.retry_count = q.value(qpc::retry_count);
            ctx.rnr_retry = q.value(qpc::rnr_retry);
            ctx.ack_timeout = gp.value(ads::ack_timeout);
        }
        // RTS2RTS changes only what its masks name (PRM; Linux mlx5_ib builds the mask from
        // the verbs attributes in `ib_mask_to_mlx5_opt`). The send PSN never changes in RTS.
        Part::RtsChange => {
            if opt.has(o::RRE) {
                ctx.rre = q.get(qpc::rre) == 1;
            }
            if opt.has(o::RWE) {
                ctx.rwe = q.get(qpc::rwe) == 1;
            }
            if opt.has(o::RAE) {
                ctx.rae = q.get(qpc::rae) == 1;
            }
            if opt.has(o::RNR_TIMEOUT) {
                ctx.min_rnr_nak = q.value(qpc::min_rnr_nak);
            }
            if opt.has(o::PM_STATE) {
                ctx.pm_state = q.value(qpc::pm_state);
            }
            if opt.has(o::SRA_MAX) {
                ctx.log_sra_max = q.value(qpc::log_sra_max);
            }
            if opt.has(o::RRA_MAX) {
                ctx.log_rra_max = q.value(qpc::log_rra_max);
            }
            if opt.has(o::RETRY_COUNT) {
                ctx.retry_count = q.value(qpc::retry_count);
            }
            if opt.has(o::RNR_RETRY) {
                ctx.rnr_retry = q.value(qpc::rnr_retry);
            }
            if opt.has(o::ACK_TIMEOUT) {
                ctx.ack_timeout = gp.value(ads::ack_timeout);
            }
            if opt.mask_95_32 & o::OPT_MASK_32_UDP_SPORT != 0 {
                ctx.udp_sport = gp.value(ads::udp_sport);
            }
        }
        Part::None => {}
    }
}

fn write_ctx(ctx: &QpCtx, q: &mut ViewMut<'_, l::qpc::Layout>) {
    use l::{ads, qpc};
    let p = qpc::primary_address_path;
    q.set(qpc::rre, u64::from(ctx.rre));
    q.set(qpc::rwe, u64::from(ctx.rwe));
    q.set(qpc::rae, u64::from(ctx.rae));
    q.set(qpc::pm_state, u64::from(ctx.pm_state));
    q.set(p.at(ads::vhca_port_num), u64::from(ctx.port));
    q.set(p.at(ads::pkey_index), u64::from(ctx.pkey_index));
    q.set(qpc::q_key, u64::from(ctx.q_key));
    q.set(qpc::mtu, u64::from(ctx.mtu));
    q.set(qpc::log_msg_max, u64::from(ctx.log_msg_max));
    q.set(qpc::remote_qpn, u64::from(ctx.remote_qpn));
    q.set(qpc::next_rcv_psn, u64::from(ctx.next_rcv_psn));
    q.set(qpc::log_rra_max, u64::from(ctx.log_rra_max));
    q.set(qpc::min_rnr_nak, u64::from(ctx.min_rnr_nak));
    q.set(p.at(ads::fl), u64::from(ctx.fl));
    q.set(
        p.at(ads::rmac_47_32),
        u64::from(u16::from_be_bytes([ctx.rmac[0], ctx.rmac[1]])),
    );
    q.set(
        p.at(ads::rmac_31_0),
        u64::from(u32::from_be_bytes([
            ctx.rmac[2],
            ctx.rmac[3],
            ctx.rmac[4],
            ctx.rmac[5],
        ])),
    );
    for (i, b) in ctx.rgid.iter().enumerate() {
        if let Some(f) = ads::rgid_rip.at(i as u32) {
            q.set(p.at(f), u64::from(*b));
        }
    }
    q.set(p.at(ads::src_addr_index), u64::from(ctx.src_addr_index));
    q.set(p.at(ads::hop_limit), u64::from(ctx.hop_limit));
    q.set(p.at(ads::udp_sport), u64::from(ctx.udp_sport));
    q.set(qpc::next_send_psn, u64::from(ctx.next_send_psn));
    q.set(qpc::log_sra_max, u64::from(ctx.log_sra_max));
    q.set(qpc::retry_count, u64::from(ctx.retry_count));
    q.set(qpc::rnr_retry, u64::from(ctx.rnr_retry));
    q.set(p.at(ads::ack_timeout), u64::from(ctx.ack_timeout));
}
