//! Counters: Q counters (`ALLOC_Q_COUNTER`, `QUERY_Q_COUNTER`) that receive queues count their
//! drops to, and flow counters (`ALLOC_FLOW_COUNTER`, `QUERY_FLOW_COUNTER`) that flow entries
//! with the COUNT action add their frames to. Deallocation goes through the destroy path
//! (`fw/destroy.rs`), refused while a queue or an entry names the counter.

use mlx5_dpa::mlx5::layout::{Layout, ViewMut};
use mlx5_dpa::mlx5::layouts as l;

use super::{inbox, outbox, owned, Firmware};
use crate::check::{self, Check};
use crate::state::objects::*;

impl Firmware {
    pub(super) fn alloc_q_counter(
        &mut self,
        uid: u16,
        inb: &[u8],
        out: &mut [u8],
    ) -> Result<ObjRef, Check> {
        inbox::<l::alloc_q_counter_in::Layout>(inb)?;
        let mut o = outbox::<l::alloc_q_counter_out::Layout>(out)?;
        let id = self
            .q_counters
            .insert(QCounter {
                meta: Meta::new(uid),
                out_of_buffer: 0,
            })
            .ok_or(check::TOO_MANY_OBJECTS)?;
        o.set(l::alloc_q_counter_out::counter_set_id, u64::from(id));
        Ok(ObjRef::QCounter(id))
    }

    pub(super) fn query_q_counter(
        &mut self,
        uid: u16,
        inb: &[u8],
        out: &mut [u8],
    ) -> Result<(), Check> {
        use l::query_q_counter_in as m;
        let v = inbox::<m::Layout>(inb)?;
        let id = u32::from(v.value(m::counter_set_id));
        let clear = v.get(m::clear) == 1;
        let mut o = outbox::<l::query_q_counter_out::Layout>(out)?;
        let q = self
            .q_counters
            .get_mut(id)
            .ok_or(check::NO_SUCH_Q_COUNTER)?;
        owned(&q.meta, uid)?;
        o.set(
            l::query_q_counter_out::out_of_buffer,
            u64::from(q.out_of_buffer),
        );
        if clear {
            q.out_of_buffer = 0;
        }
        Ok(())
    }

    pub(super) fn alloc_flow_counter(
        &mut self,
        uid: u16,
        inb: &[u8],
        out: &mut [u8],
    ) -> Result<ObjRef, Check> {
        use l::alloc_flow_counter_in as m;
        let v = inbox::<m::Layout>(inb)?;
        // One counter per command: bulk allocation is not offered (`flow_counter_bulk_alloc`
        // clear in the general capabilities).
        if v.get(m::flow_counter_bulk) != 0 || v.get(m::flow_counter_bulk_log_size) != 0 {
            return Err(check::NOT_SUPPORTED);
        }
        let mut o = outbox::<l::alloc_flow_counter_out::Layout>(out)?;
        let id = self
            .flow_counters
            .insert(FlowCounter {
                meta: Meta::new(uid),
                packets: 0,
                octets: 0,
            })
            .ok_or(check::TOO_MANY_OBJECTS)?;
        o.set(l::alloc_flow_counter_out::flow_counter_id, u64::from(id));
        Ok(ObjRef::FlowCounter(id))
    }

    pub(super) fn query_flow_counter(
        &mut self,
        uid: u16,
        inb: &[u8],
        out: &mut [u8],
    ) -> Result<(), Check> {
        use l::query_flow_counter_in as m;
        let v = inbox::<m::Layout>(inb)?;
        // One counter, answered in the outbox (no dump to memory, no ranges).
        if v.get(m::dump_to_memory) != 0 || v.get(m::num_of_counters) > 1 {
            return Err(check::NOT_SUPPORTED);
        }
        let id = v.value(m::flow_counter_id);
        let clear = v.get(m::clear) == 1;
        outbox::<l::query_flow_counter_out::Layout>(out)?;
        // The statistics follow the header (`flow_statistics`, a flexible array).
        let at = l::query_flow_counter_out::Layout::SIZE_BYTES;
        let stats = out
            .get_mut(at..at + l::traffic_counter::Layout::SIZE_BYTES)
            .ok_or(check::OUTBOX_TOO_SHORT)?;
        let c = self
            .flow_counters
            .get_mut(id)
            .ok_or(check::NO_SUCH_FLOW_COUNTER)?;
        owned(&c.meta, uid)?;
        let mut t = ViewMut::<l::traffic_counter::Layout>::new(stats)
            .map_err(|_| check::OUTBOX_TOO_SHORT)?;
        t.set(l::traffic_counter::packets, c.packets);
        t.set(l::traffic_counter::octets, c.octets);
        if clear {
            c.packets = 0;
            c.octets = 0;
        }
        Ok(())
    }
}
