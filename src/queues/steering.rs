//! Transport objects and receive steering: transport domain, TIS (what Ethernet SQs send
//! through), TIR (where received packets are dispatched), and the NIC RX flow table / group /
//! entry that makes a given MAC / IP / UDP flow land in an RQ.
//!
//! Each object holds what it references in an `Arc`, so destruction runs in reverse order of
//! creation whatever order the user drops handles in: rule, group, table, TIR, RQ, CQ.

use std::sync::Arc;

pub use super::transport::{Tis, TransportDomain};
use super::wq::{Rq, Rqn};
use super::QueueError;
use crate::devx::{self, Devx, DevxObj};
use crate::mlx5::cmd::{CreateFlowGroup, CreateFlowTable, CreateTir, OuterMatch, SetFte};

/// A receive queue that a TIR can dispatch to: a host [`Rq`], or an RQ whose ring lives in
/// DPA memory (`crate::dpa::queues::DpaRq`).
pub trait RqTarget {
    /// The RQ number.
    fn target_rqn(&self) -> Rqn;
    /// The firmware object, held by whatever points at the RQ so that it is destroyed last.
    fn keep_alive(&self) -> Arc<dyn std::any::Any + Send + Sync>;
}

impl RqTarget for Rq {
    fn target_rqn(&self) -> Rqn {
        self.rqn()
    }
    fn keep_alive(&self) -> Arc<dyn std::any::Any + Send + Sync> {
        Arc::clone(&self.shared) as Arc<dyn std::any::Any + Send + Sync>
    }
}

/// A transport interface receive object dispatching directly to one RQ.
pub struct Tir {
    _obj: DevxObj,
    tirn: u32,
    _rq: Arc<dyn std::any::Any + Send + Sync>,
    _td: Arc<TransportDomain>,
}

impl std::fmt::Debug for Tir {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tir").field("tirn", &self.tirn).finish()
    }
}

impl Tir {
    /// CREATE_TIR, direct dispatch to `rq` (a host [`Rq`] or an RQ in DPA memory).
    ///
    /// # Errors
    /// Firmware refused.
    pub fn direct(
        dev: &Arc<dyn Devx>,
        td: &Arc<TransportDomain>,
        rq: &dyn RqTarget,
    ) -> Result<Arc<Tir>, QueueError> {
        let (obj, tirn) = devx::create(
            dev,
            &CreateTir {
                transport_domain: td.tdn(),
                inline_rqn: rq.target_rqn(),
            },
        )?;
        Ok(Arc::new(Tir {
            _obj: obj,
            tirn,
            _rq: rq.keep_alive(),
            _td: Arc::clone(td),
        }))
    }
    /// The TIR number.
    pub fn tirn(&self) -> u32 {
        self.tirn
    }
}

/// A NIC RX flow table.
#[derive(Debug)]
pub struct FlowTable {
    _obj: DevxObj,
    table_id: u32,
}

impl FlowTable {
    /// CREATE_FLOW_TABLE (NIC RX) at `level` with `2^log_size` entries.
    ///
    /// # Errors
    /// Firmware refused.
    pub fn create(
        dev: &Arc<dyn Devx>,
        level: u8,
        log_size: u8,
    ) -> Result<Arc<FlowTable>, QueueError> {
        let (obj, table_id) = devx::create(dev, &CreateFlowTable { level, log_size })?;
        Ok(Arc::new(FlowTable {
            _obj: obj,
            table_id,
        }))
    }
    /// The table id.
    pub fn table_id(&self) -> u32 {
        self.table_id
    }
}

/// A flow group: a range of entries sharing one match mask.
#[derive(Debug)]
pub struct FlowGroup {
    _obj: DevxObj,
    group_id: u32,
    table: Arc<FlowTable>,
    start: u32,
    end: u32,
}

impl FlowGroup {
    /// CREATE_FLOW_GROUP over entries `start..=end` of `table`, matching the fields `criteria`
    /// names (their values are ignored: the mask covers each named field whole).
    ///
    /// # Errors
    /// Firmware refused.
    pub fn create(
        dev: &Arc<dyn Devx>,
        table: &Arc<FlowTable>,
        start: u32,
        end: u32,
        criteria: OuterMatch,
    ) -> Result<Arc<FlowGroup>, QueueError> {
        let (obj, group_id) = devx::create(
            dev,
            &CreateFlowGroup {
                table_id: table.table_id(),
                start_flow_index: start,
                end_flow_index: end,
                criteria,
            },
        )?;
        Ok(Arc::new(FlowGroup {
            _obj: obj,
            group_id,
            table: Arc::clone(table),
            start,
            end,
        }))
    }
    /// The group id.
    pub fn group_id(&self) -> u32 {
        self.group_id
    }
}

/// One flow table entry forwarding matching packets to a TIR.
#[derive(Debug)]
pub struct FlowRule {
    _obj: DevxObj,
    _group: Arc<FlowGroup>,
    _tir: Arc<Tir>,
}

impl FlowRule {
    /// SET_FLOW_TABLE_ENTRY at `index` (inside the group's range) matching `value`.
    ///
    /// # Errors
    /// An index outside the group, or firmware refused.
    pub fn create(
        dev: &Arc<dyn Devx>,
        group: &Arc<FlowGroup>,
        index: u32,
        value: OuterMatch,
        tir: &Arc<Tir>,
    ) -> Result<FlowRule, QueueError> {
        if index < group.start || index > group.end {
            return Err(QueueError::Config(format!(
                "flow index {index} outside the group's {}..={}",
                group.start, group.end
            )));
        }
        let (obj, ()) = devx::create(
            dev,
            &SetFte {
                table_id: group.table.table_id(),
                flow_index: index,
                group_id: group.group_id(),
                value,
                tirn: tir.tirn(),
                flow_counter: None,
            },
        )?;
        Ok(FlowRule {
            _obj: obj,
            _group: Arc::clone(group),
            _tir: Arc::clone(tir),
        })
    }
}

/// The whole receive path for one flow: table -> group -> entry -> TIR -> RQ. Dropping it
/// removes the entry, then the group, table and TIR.
#[derive(Debug)]
pub struct RxFlow {
    rule: FlowRule,
    tir: Arc<Tir>,
}

impl RxFlow {
    /// Steers packets matching `flow` (e.g. a destination MAC and UDP port) into `rq`, with a
    /// new flow table at `level`.
    ///
    /// # Errors
    /// Firmware refused a step; what was made is released in reverse order.
    pub fn to_rq(
        dev: &Arc<dyn Devx>,
        td: &Arc<TransportDomain>,
        rq: &dyn RqTarget,
        flow: OuterMatch,
        level: u8,
    ) -> Result<RxFlow, QueueError> {
        let tir = Tir::direct(dev, td, rq)?;
        let table = FlowTable::create(dev, level, 1)?;
        let group = FlowGroup::create(dev, &table, 0, 0, flow)?;
        let rule = FlowRule::create(dev, &group, 0, flow, &tir)?;
        Ok(RxFlow { rule, tir })
    }

    /// The TIR.
    pub fn tir(&self) -> &Arc<Tir> {
        &self.tir
    }

    /// The rule.
    pub fn rule(&self) -> &FlowRule {
        &self.rule
    }
}
