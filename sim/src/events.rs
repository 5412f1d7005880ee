//! The DevX event channel of the model, the front door's side: subscribing and bounded reads
//! of what the datapath delivered (`state::events`). What an async event fd delivers on the
//! kernel path.

use std::sync::Arc;
use std::time::{Duration, Instant};

use mlx5_dpa::devx::{DevxError, DevxEvent, EventChannel, ObjHandle};
use mlx5_dpa::sync::lock;

use crate::state::events::{ChannelQueue, Subscription};
use crate::state::objects::ObjRef;
use crate::Device;

/// The model's event channel.
/// The object an object handle of the channel's context names, if it is one.
pub(crate) type ResolveHandle = Box<dyn Fn(ObjHandle) -> Option<ObjRef> + Send + Sync>;

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
        let mut q = lock(&self.queue.events);
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
