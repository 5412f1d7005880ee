//! Completion queues: create, moderate, query, destroy.

use super::*;

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
    /// Collapsed (`cc`): every CQE is written to entry 0, which is rewritten each time (a
    /// collapsed CQ never overruns). GPUNetIO's latency examples poll their send CQ so.
    pub cc: bool,
    /// CQE compression (`cqe_comp_en`, mini CQEs of the hash format): the device may write
    /// alike receive CQEs as one compression session, which the poller must expand (the
    /// layout: `mlx5_dpa::mlx5::wire::cqe::session`). Needs `cmd_hca_cap.cqe_compression`;
    /// this crate's own CQ pollers read plain CQEs and leave it off.
    pub cqe_comp: bool,
}

command! {
    CreateCq: CREATE_CQ, create_cq_in -> create_cq_out => Cqn;
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
        v.set(c.at(cqc::cc), u64::from(self.cc));
        v.set(c.at(cqc::cqe_comp_en), u64::from(self.cqe_comp));
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
    fn decode(&self, v: View<'_, Self::Out>) -> Result<Cqn, CmdError> {
        Ok(Cqn(v.value(create_cq_out::cqn)))
    }
}

/// MODIFY_CQ: change moderation (`modify_field_select` bits period 0x1, max_count 0x2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModifyCqModeration {
    pub cqn: Cqn,
    pub cq_period: u16,
    pub cq_max_count: u16,
}

command! {
    ModifyCqModeration: MODIFY_CQ, modify_cq_in -> mbox_out;
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
}

query_command!(
    /// QUERY_CQ: yields the CQ context bytes (`cqc`).
    QueryCq(Cqn), QUERY_CQ, query_cq_in.cqn, query_cq_out.cq_context: cqc
);
