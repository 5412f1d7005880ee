//! The threads that carry the model's events to the client's event files: one per context for
//! completion events (routed to each CQ's completion channel as `ib_uverbs_comp_event_desc`),
//! one per DevX event channel (`mlx5_ib_uapi_devx_async_event_hdr` records: the cookie, then
//! the EQE unless the channel omits data). Each waits on the model's channel with a bounded
//! timeout and ends when its owner is gone.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use nix::errno::Errno;

use crate::context::{CompRouter, DevxChannel};

/// How long a pump waits for an event before it looks whether it should stop.
const WAIT: Duration = Duration::from_millis(50);

fn spawn(name: &str, f: impl FnOnce() + Send + 'static) -> Result<(), Errno> {
    std::thread::Builder::new()
        .name(name.into())
        .spawn(f)
        .map(drop)
        .map_err(|_| Errno::EAGAIN)
}

/// Starts the completion-event pump of a context.
pub(crate) fn start_comp(r: Arc<CompRouter>) -> Result<(), Errno> {
    let weak = Arc::downgrade(&r);
    let stop = Arc::clone(&r.stop);
    let chan = Arc::clone(&r.chan);
    drop(r);
    spawn("mlx5-sim-comp", move || {
        while !stop.load(Ordering::Acquire) {
            let ev = match chan.read_event(WAIT) {
                Ok(Some(ev)) => ev,
                Ok(None) => {
                    if weak.strong_count() == 0 {
                        return;
                    }
                    continue;
                }
                Err(_) => return,
            };
            let Some(r) = weak.upgrade() else { return };
            let route = mlx5_dpa::sync::lock(&r.routes).get(&ev.cookie).cloned();
            if let Some((file, user_handle, counter)) = route {
                file.push(user_handle.to_ne_bytes().to_vec(), ev.cookie, Some(counter));
            }
        }
    })
}

/// Starts the pump of a DevX event channel.
pub(crate) fn start_devx(c: &Arc<DevxChannel>) -> Result<(), Errno> {
    let weak = Arc::downgrade(c);
    let stop = Arc::clone(&c.stop);
    let chan = Arc::clone(&c.chan);
    let file = Arc::clone(&c.file);
    let omit = c.omit_data;
    spawn("mlx5-sim-devx-ev", move || {
        while !stop.load(Ordering::Acquire) {
            match chan.read_event(WAIT) {
                Ok(Some(ev)) => {
                    let mut rec = ev.cookie.to_ne_bytes().to_vec();
                    if !omit {
                        rec.extend_from_slice(&ev.data);
                    }
                    file.push(rec, 0, None);
                }
                Ok(None) => {
                    if weak.strong_count() == 0 {
                        return;
                    }
                }
                Err(_) => return,
            }
        }
    })
}
