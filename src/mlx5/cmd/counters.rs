//! Counters: Q counters (what receive queues could not take) and flow counters (what flow
//! entries with the COUNT action matched).

use super::*;

/// ALLOC_Q_COUNTER: yields the `counter_set_id` a receive queue names (`rqc.counter_set_id`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AllocQCounter;

command! {
    AllocQCounter: ALLOC_Q_COUNTER, alloc_q_counter_in -> alloc_q_counter_out => u32;
    fn encode(&self, _: &mut ViewMut<'_, Self::In>) -> Result<(), CmdError> {
        Ok(())
    }
    fn decode(&self, v: View<'_, Self::Out>) -> Result<u32, CmdError> {
        Ok(u32::from(v.value(alloc_q_counter_out::counter_set_id)))
    }
}

/// QUERY_Q_COUNTER of one counter set, cleared after reading when `clear`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueryQCounter {
    pub counter_set_id: u32,
    pub clear: bool,
}

/// What [`QueryQCounter`] reports (the receive-side counters; the others are the RC
/// transport's).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QCounterStats {
    /// Frames dropped for want of a posted receive WQE.
    pub out_of_buffer: u32,
    pub out_of_sequence: u32,
    pub resp_local_length_error: u32,
    pub cq_overflow: u32,
}

command! {
    QueryQCounter: QUERY_Q_COUNTER, query_q_counter_in -> query_q_counter_out => QCounterStats;
    fn encode(&self, v: &mut ViewMut<'_, Self::In>) -> Result<(), CmdError> {
        put(
            v,
            Self::OPCODE,
            query_q_counter_in::counter_set_id,
            u64::from(self.counter_set_id),
            "counter_set_id",
        )?;
        v.set(query_q_counter_in::clear, u64::from(self.clear));
        Ok(())
    }
    fn decode(&self, v: View<'_, Self::Out>) -> Result<QCounterStats, CmdError> {
        use query_q_counter_out as o;
        Ok(QCounterStats {
            out_of_buffer: v.get(o::out_of_buffer) as u32,
            out_of_sequence: v.get(o::out_of_sequence) as u32,
            resp_local_length_error: v.get(o::resp_local_length_error) as u32,
            cq_overflow: v.get(o::cq_overflow) as u32,
        })
    }
}

id_command!(/// DEALLOC_Q_COUNTER.
    DeallocQCounter(u32), DEALLOC_Q_COUNTER, dealloc_q_counter_in, counter_set_id);

/// ALLOC_FLOW_COUNTER of one counter: yields its `flow_counter_id`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AllocFlowCounter;

command! {
    AllocFlowCounter: ALLOC_FLOW_COUNTER, alloc_flow_counter_in -> alloc_flow_counter_out => u32;
    fn encode(&self, _: &mut ViewMut<'_, Self::In>) -> Result<(), CmdError> {
        Ok(())
    }
    fn decode(&self, v: View<'_, Self::Out>) -> Result<u32, CmdError> {
        Ok(v.value(alloc_flow_counter_out::flow_counter_id))
    }
}

/// QUERY_FLOW_COUNTER of one counter, cleared after reading when `clear`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueryFlowCounter {
    pub flow_counter_id: u32,
    pub clear: bool,
}

/// A flow counter's `traffic_counter`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TrafficCounter {
    pub packets: u64,
    pub octets: u64,
}

command! {
    QueryFlowCounter: QUERY_FLOW_COUNTER, query_flow_counter_in -> query_flow_counter_out => TrafficCounter;
    fn outbox_extra(&self) -> usize {
        traffic_counter::Layout::SIZE_BYTES
    }
    fn encode(&self, v: &mut ViewMut<'_, Self::In>) -> Result<(), CmdError> {
        v.set(
            query_flow_counter_in::flow_counter_id,
            u64::from(self.flow_counter_id),
        );
        v.set(query_flow_counter_in::clear, u64::from(self.clear));
        Ok(())
    }
    fn decode(&self, v: View<'_, Self::Out>) -> Result<TrafficCounter, CmdError> {
        let stats = flex_bytes(&v);
        let t = View::<traffic_counter::Layout>::new(&stats).map_err(|source| CmdError::Layout {
            opcode: Self::OPCODE,
            source,
        })?;
        Ok(TrafficCounter {
            packets: t.get(traffic_counter::packets),
            octets: t.get(traffic_counter::octets),
        })
    }
}

id_command!(/// DEALLOC_FLOW_COUNTER.
    DeallocFlowCounter(u32), DEALLOC_FLOW_COUNTER, dealloc_flow_counter_in, flow_counter_id);
