//! Work queues: SQs, RQs and RMPs, their contexts and state changes.

use super::*;

// ---------------------------------------------------------------------------------------------
// Work queues.

pub use crate::mlx5::enums::{WqState, WqType};

/// The `wq` part of an SQ / RQ / RMP: cyclic ring in a UMEM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WqAttr {
    pub pd: Pdn,
    pub uar_page: u32,
    /// log2 of the WQE stride in bytes (`log_wq_stride`; 6 = 64 B for SQs).
    pub log_wq_stride: u8,
    /// log2 of the number of WQEs.
    pub log_wq_sz: u8,
    pub mem: RingMem,
}

fn encode_wq<L: Layout>(
    v: &mut ViewMut<'_, L>,
    op: Opcode,
    w: crate::mlx5::layout::Nested<L, wq::Layout>,
    a: &WqAttr,
) -> Result<(), CmdError> {
    encode_wq_typed(v, op, w, a, WqType::Cyclic)
}

fn encode_wq_typed<L: Layout>(
    v: &mut ViewMut<'_, L>,
    op: Opcode,
    w: crate::mlx5::layout::Nested<L, wq::Layout>,
    a: &WqAttr,
    wq_type: WqType,
) -> Result<(), CmdError> {
    v.set_value(w.at(wq::wq_type), wq_type);
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
    pub cqn: Cqn,
    pub tisn: u32,
    pub wq: WqAttr,
    pub flush_in_error_en: bool,
}

command! {
    CreateSq: CREATE_SQ, create_sq_in -> create_sq_out => Sqn;
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
    fn decode(&self, v: View<'_, Self::Out>) -> Result<Sqn, CmdError> {
        Ok(Sqn(v.value(create_sq_out::sqn)))
    }
}

/// MODIFY_SQ: a state transition (`sq_state` is the current state, `sqc.state` the next).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModifySq {
    pub sqn: Sqn,
    pub from: WqState,
    pub to: WqState,
}

command! {
    ModifySq: MODIFY_SQ, modify_sq_in -> mbox_out;
    fn encode(&self, v: &mut ViewMut<'_, Self::In>) -> Result<(), CmdError> {
        put(
            v,
            Self::OPCODE,
            modify_sq_in::sqn,
            u64::from(self.sqn),
            "sqn",
        )?;
        v.set_value(modify_sq_in::sq_state, self.from);
        v.set_value(modify_sq_in::sq_context.at(sqc::state), self.to);
        Ok(())
    }
}

/// CREATE_RQ (cyclic receive queue).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CreateRq {
    pub cqn: Cqn,
    pub wq: WqAttr,
    pub flush_in_error_en: bool,
    /// The Q counter its drops count to ([`AllocQCounter`]; 0: none).
    pub counter_set_id: u32,
}

command! {
    CreateRq: CREATE_RQ, create_rq_in -> create_rq_out => Rqn;
    fn encode(&self, v: &mut ViewMut<'_, Self::In>) -> Result<(), CmdError> {
        let op = Self::OPCODE;
        let c = create_rq_in::ctx;
        put(v, op, c.at(rqc::cqn), u64::from(self.cqn), "cqn")?;
        // VLAN strip disable: frames arrive as they were sent, tags included (Linux's mlx5e
        // and DPDK set it too unless they ask the NIC to strip, which needs `vlan_cap`).
        v.set(c.at(rqc::vsd), 1);
        v.set(
            c.at(rqc::flush_in_error_en),
            u64::from(self.flush_in_error_en),
        );
        put(
            v,
            op,
            c.at(rqc::counter_set_id),
            u64::from(self.counter_set_id),
            "counter_set_id",
        )?;
        encode_wq(v, op, c.nested(rqc::wq), &self.wq)
    }
    fn decode(&self, v: View<'_, Self::Out>) -> Result<Rqn, CmdError> {
        Ok(Rqn(v.value(create_rq_out::rqn)))
    }
}

/// MODIFY_RQ: a state transition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModifyRq {
    pub rqn: Rqn,
    pub from: WqState,
    pub to: WqState,
}

command! {
    ModifyRq: MODIFY_RQ, modify_rq_in -> mbox_out;
    fn encode(&self, v: &mut ViewMut<'_, Self::In>) -> Result<(), CmdError> {
        put(
            v,
            Self::OPCODE,
            modify_rq_in::rqn,
            u64::from(self.rqn),
            "rqn",
        )?;
        v.set_value(modify_rq_in::rq_state, self.from);
        v.set_value(modify_rq_in::ctx.at(rqc::state), self.to);
        Ok(())
    }
}

/// CREATE_RMP (shared receive pool).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CreateRmp {
    pub wq: WqAttr,
    /// Linked-list WQEs (a verbs SRQ's layout) instead of a cyclic ring.
    pub linked_list: bool,
}

command! {
    CreateRmp: CREATE_RMP, create_rmp_in -> create_rmp_out => u32;
    fn encode(&self, v: &mut ViewMut<'_, Self::In>) -> Result<(), CmdError> {
        v.set_value(create_rmp_in::ctx.at(rmpc::state), WqState::Rdy);
        encode_wq_typed(
            v,
            Self::OPCODE,
            create_rmp_in::ctx.nested(rmpc::wq),
            &self.wq,
            // Linked-list WQEs begin with a 16-byte next segment naming their successor
            // (`mlx5_wqe_srq_next_seg`), as verbs SRQs are laid out.
            if self.linked_list {
                WqType::LinkedList
            } else {
                WqType::Cyclic
            },
        )
    }
    fn decode(&self, v: View<'_, Self::Out>) -> Result<u32, CmdError> {
        Ok(v.value(create_rmp_out::rmpn))
    }
}

query_command!(
    /// QUERY_SQ: yields the SQ context bytes (`sqc`).
    QuerySq(Sqn), QUERY_SQ, query_sq_in.sqn, query_sq_out.sq_context: sqc
);
query_command!(
    /// QUERY_RQ: yields the RQ context bytes (`rqc`).
    QueryRq(Rqn), QUERY_RQ, query_rq_in.rqn, query_rq_out.rq_context: rqc
);
