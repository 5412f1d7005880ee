//! DevX event channels: what an async event fd delivers on the kernel path.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::time::{Duration, Instant};

use mlx5_dpa::devx::{DevxError, DevxEvent, EventChannel, ObjHandle};

use crate::fw::ObjRef;
use crate::Device;

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
    events: Mutex<(VecDeque<DevxEvent>, u64)>,
    ready: Condvar,
}

impl ChannelQueue {
    fn push(&self, ev: DevxEvent) {
        let mut q = self.events.lock().unwrap_or_else(|e| e.into_inner());
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

/// The model's event channel.
/// The object an object handle of the channel's context names, if it is one.
pub(crate) type ResolveHandle = Box<dyn Fn(ObjHandle) -> Option<ObjRef> + Send>;

pub(crate) struct SimEventChannel {
    pub(crate) dev: Device,
    /// The context's handle table, as a lookup (the DevX layer owns the table).
    pub(crate) resolve: ResolveHandle,
    pub(crate) queue: Arc<ChannelQueue>,
}

impl EventChannel for SimEventChannel {
    fn subscribe(
        &self,
        obj: Option<ObjHandle>,
        event_types: &[u16],
        cookie: u64,
    ) -> Result<(), DevxError> {
        let obj = match obj {
            Some(h) => Some((self.resolve)(h).ok_or(DevxError::Os {
                op: "DEVX_SUBSCRIBE_EVENT",
                errno: nix::errno::Errno::EINVAL,
            })?),
            None => None,
        };
        if event_types.is_empty() {
            return Err(DevxError::Os {
                op: "DEVX_SUBSCRIBE_EVENT",
                errno: nix::errno::Errno::EINVAL,
            });
        }
        self.dev.with_state(|st| {
            st.dp.subs.push(Subscription {
                queue: Arc::downgrade(&self.queue),
                obj,
                types: event_types.to_vec(),
                cookie,
            })
        });
        Ok(())
    }

    fn read_event(&self, timeout: Duration) -> Result<Option<DevxEvent>, DevxError> {
        let deadline = Instant::now() + timeout;
        let mut q = self.queue.events.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(ev) = q.0.pop_front() {
                return Ok(Some(ev));
            }
            let now = Instant::now();
            if now >= deadline {
                return Ok(None);
            }
            q = self
                .queue
                .ready
                .wait_timeout(q, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }
}
