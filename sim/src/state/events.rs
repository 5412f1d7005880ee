//! Event delivery's state: the queue behind each DevX event channel and the subscriptions the
//! datapath delivers to (the front door's `SimEventChannel` reads the queues).

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex, Weak};

use mlx5_dpa::devx::DevxEvent;
use mlx5_dpa::sync::lock;

use crate::state::objects::ObjRef;

/// Event types as a DevX subscription names them (`u16`; PRM `event_type`, declared with the
/// EQE format).
pub mod event_type {
    use mlx5_dpa::mlx5::wire::eqe::event_type as wire;
    /// Completion event.
    pub const COMP: u16 = wire::COMP as u16;
    /// CQ error (overrun, access violation).
    pub const CQ_ERROR: u16 = wire::CQ_ERROR as u16;
}

/// Pending events of one channel are bounded, like the kernel's event fd queue; past this the
/// oldest are dropped and counted.
const MAX_QUEUED: usize = 4096;

#[derive(Debug, Default)]
pub(crate) struct ChannelQueue {
    pub(crate) events: Mutex<(VecDeque<DevxEvent>, u64)>,
    pub(crate) ready: Condvar,
}

impl ChannelQueue {
    fn push(&self, ev: DevxEvent) {
        let mut q = lock(&self.events);
        if q.0.len() >= MAX_QUEUED {
            q.0.pop_front();
            q.1 += 1;
        }
        q.0.push_back(ev);
        self.ready.notify_all();
    }
}

/// One subscription: events of `types` on `obj` go to `queue` tagged with `cookie`.
#[derive(Debug)]
pub(crate) struct Subscription {
    pub(crate) queue: Weak<ChannelQueue>,
    pub(crate) obj: Option<ObjRef>,
    pub(crate) types: Vec<u16>,
    pub(crate) cookie: u64,
}

/// Delivers an event to every live subscription that wants it; drops dead subscriptions.
pub(crate) fn deliver(subs: &mut Vec<Subscription>, obj: ObjRef, ty: u16, eqe: &[u8; 64]) -> usize {
    let mut n = 0;
    subs.retain(|s| {
        let Some(q) = s.queue.upgrade() else {
            return false;
        };
        if s.obj == Some(obj) && s.types.contains(&ty) {
            q.push(DevxEvent {
                cookie: s.cookie,
                data: eqe.to_vec(),
            });
            n += 1;
        }
        true
    });
    n
}
