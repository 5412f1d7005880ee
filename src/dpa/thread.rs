//! DPA threads as FlexIO event handlers (`flexio_event_handler_create` / `_run` / `_destroy`).
//!
//! An [`EventHandler`] is one DPA_THREAD object (provisional context, `layouts::dpa`). It
//! starts IDLE: a completion on an armed CQ created with
//! [`CqEvents::DpaThread`](crate::queues::CqEvents::DpaThread)`(handler.id())` runs it once;
//! [`EventHandler::run`] (MODIFY `state` = RUNNING, with a new `user_arg`) runs it from the
//! host. The entry gets `arg` in `a0` (docs/sources.md §5).

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::devx::{self, DevxObj};
use crate::mlx5::cmd::{
    CreateGeneralObject, DpaAffinity, DpaThreadAttr, DpaThreadModify, ModifyGeneralObject,
    QueryGeneralObject,
};
use crate::mlx5::layout::{Layout, View};
use crate::mlx5::layouts::{dpa::obj_type, dpa_thread, dpa_thread_state};

use super::process::ProcessInner;
use super::DpaError;

/// Where a thread may run (FlexIO `enum flexio_affinity_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Affinity {
    /// Any EU (`FLEXIO_AFFINITY_NONE`).
    #[default]
    None,
    /// This EU only (`FLEXIO_AFFINITY_STRICT`).
    Strict(u16),
    /// A member of this EU group (`FLEXIO_AFFINITY_GROUP`).
    Group(u16),
}

/// FlexIO `struct flexio_event_handler_attr`, with the entry named by symbol.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct EventHandlerAttr {
    /// The entry function's symbol in the process's ELF (FlexIO `host_stub_func`).
    pub entry: String,
    /// `a0` of each activation until [`EventHandler::run`] changes it.
    pub arg: u64,
    /// DPA address the thread context's `metadata_parameter` carries (0: none).
    pub thread_local_storage_daddr: u64,
    /// Default outbox / window object ids configured at each activation (0: none).
    pub default_outbox_id: u32,
    pub default_window_id: u32,
    pub affinity: Affinity,
    /// FlexIO's `continuable` (accepted; the model runs each activation to its end).
    pub continuable: bool,
}

impl EventHandlerAttr {
    /// A handler running `entry` with `arg`, no TLS, outbox or window, any EU.
    pub fn new(entry: &str, arg: u64) -> EventHandlerAttr {
        EventHandlerAttr {
            entry: entry.to_string(),
            arg,
            ..EventHandlerAttr::default()
        }
    }
}

/// A thread's state (provisional `dpa_thread.state` values).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThreadState {
    /// Waiting for an event.
    Idle,
    /// Queued or running.
    Running,
    /// Returned or finished; events are ignored until the host runs it again.
    Finished,
    /// Faulted or stopped by the watchdog (see [`super::Process::err_status`]).
    Error,
    /// A value this driver does not know.
    Unknown(u8),
}

impl ThreadState {
    fn from_raw(v: u8) -> ThreadState {
        match v {
            dpa_thread_state::IDLE => ThreadState::Idle,
            dpa_thread_state::RUNNING => ThreadState::Running,
            dpa_thread_state::FINISHED => ThreadState::Finished,
            dpa_thread_state::ERROR => ThreadState::Error,
            x => ThreadState::Unknown(x),
        }
    }
}

/// What QUERY of a DPA_THREAD says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThreadInfo {
    pub state: ThreadState,
    pub activations: u64,
    /// `a0` when the entry last returned (provisional output).
    pub return_value: u64,
    /// The EU of the last activation (provisional output).
    pub last_eu: u16,
    pub user_arg: u64,
}

/// A DPA thread; destroyed when dropped (before the process, which it keeps alive).
#[derive(Debug)]
pub struct EventHandler {
    obj: DevxObj,
    id: u32,
    entry: u64,
    process: Arc<ProcessInner>,
}

/// Longest the destroy of a thread waits for a running activation of it to end (it returns,
/// or the watchdog stops it) before it gives up ([`EventHandler::destroy`], and drop).
pub const DESTROY_DRAIN_TIMEOUT: Duration = Duration::from_secs(30);

impl Drop for EventHandler {
    /// Destroys the thread, waiting (at most [`DESTROY_DRAIN_TIMEOUT`]) while an activation of
    /// it runs: firmware refuses to destroy a thread that is on an EU. A destroy still refused
    /// after that (a CQ still names the thread) is left to the process, which tries it again
    /// when another thread goes and when it is released itself. Then the destroys of outboxes
    /// and windows the process kept because this thread (or another, now gone) named them are
    /// tried again.
    fn drop(&mut self) {
        if self.destroy_when_idle(DESTROY_DRAIN_TIMEOUT).is_err() {
            let obj = std::mem::replace(&mut self.obj, DevxObj::gone(&self.process.dev));
            self.process.defer(obj, Box::new(()));
        }
        self.process.retry_deferred();
    }
}

impl EventHandler {
    pub(crate) fn create(
        process: &Arc<ProcessInner>,
        attr: &EventHandlerAttr,
    ) -> Result<EventHandler, DpaError> {
        let entry = process.symbol(&attr.entry)?;
        let affinity = match attr.affinity {
            Affinity::None => DpaAffinity::None,
            Affinity::Strict(eu) => DpaAffinity::Strict(eu),
            Affinity::Group(g) => DpaAffinity::Group(g),
        };
        let (obj, id) = devx::create(
            &process.dev,
            &CreateGeneralObject(DpaThreadAttr {
                dpa_process_id: process.id,
                entry_point: entry,
                user_arg: attr.arg,
                thread_local_storage_daddr: attr.thread_local_storage_daddr,
                affinity,
                default_outbox_id: attr.default_outbox_id,
                default_window_id: attr.default_window_id,
                continuable: attr.continuable,
            }),
        )?;
        Ok(EventHandler {
            obj,
            id,
            entry,
            process: Arc::clone(process),
        })
    }

    /// The DPA_THREAD object id (what a CQ names with `CqEvents::DpaThread`).
    pub fn id(&self) -> u32 {
        self.id
    }

    /// The entry's DPA address.
    pub fn entry(&self) -> u64 {
        self.entry
    }

    fn modify(&self, m: DpaThreadModify) -> Result<(), DpaError> {
        devx::modify(
            &self.obj,
            &ModifyGeneralObject {
                obj_id: self.id,
                obj: m,
            },
        )?;
        Ok(())
    }

    /// Runs the handler once with `user_arg` in `a0` (FlexIO `flexio_event_handler_run`).
    ///
    /// # Errors
    /// Firmware's refusal (the process failed, the thread is in ERROR).
    pub fn run(&self, user_arg: u64) -> Result<(), DpaError> {
        self.modify(DpaThreadModify {
            user_arg: Some(user_arg),
            state: Some(dpa_thread_state::RUNNING),
        })
    }

    /// Makes the thread wait for events again (withdraws a queued run).
    ///
    /// # Errors
    /// Firmware's refusal.
    pub fn idle(&self) -> Result<(), DpaError> {
        self.modify(DpaThreadModify {
            user_arg: None,
            state: Some(dpa_thread_state::IDLE),
        })
    }

    /// Makes the thread ignore events (FINISHED).
    ///
    /// # Errors
    /// Firmware's refusal.
    pub fn finish(&self) -> Result<(), DpaError> {
        self.modify(DpaThreadModify {
            user_arg: None,
            state: Some(dpa_thread_state::FINISHED),
        })
    }

    /// QUERY of the thread.
    ///
    /// # Errors
    /// Firmware's refusal or a short answer.
    pub fn info(&self) -> Result<ThreadInfo, DpaError> {
        let q = devx::query(
            &self.obj,
            &QueryGeneralObject {
                obj_type: obj_type::DPA_THREAD,
                obj_id: self.id,
                ctx_len: dpa_thread::Layout::SIZE_BYTES,
            },
        )?;
        let v = View::<dpa_thread::Layout>::new(&q)
            .map_err(|e| DpaError::Device(format!("DPA_THREAD {:#x} query: {e}", self.id)))?;
        Ok(ThreadInfo {
            state: ThreadState::from_raw(v.get(dpa_thread::state) as u8),
            activations: v.get(dpa_thread::activation_count),
            return_value: v.get(dpa_thread::return_value),
            last_eu: v.get(dpa_thread::last_eu) as u16,
            user_arg: v.get(dpa_thread::user_arg),
        })
    }

    /// The thread's state.
    ///
    /// # Errors
    /// As [`EventHandler::info`].
    pub fn state(&self) -> Result<ThreadState, DpaError> {
        Ok(self.info()?.state)
    }

    /// Activations so far.
    ///
    /// # Errors
    /// As [`EventHandler::info`].
    pub fn activations(&self) -> Result<u64, DpaError> {
        Ok(self.info()?.activations)
    }

    /// Destroys the thread now, reporting a refusal. While an activation of the thread runs,
    /// firmware refuses; this waits for the activation to end (at most
    /// [`DESTROY_DRAIN_TIMEOUT`]), as dropping the handler does. After an error the thread
    /// is left to the process (as on drop).
    ///
    /// # Errors
    /// Firmware's refusal for another reason (a CQ still names the thread), or
    /// [`DpaError::Timeout`] when the activation outlived the wait.
    pub fn destroy(mut self) -> Result<(), DpaError> {
        self.destroy_when_idle(DESTROY_DRAIN_TIMEOUT)
    }

    /// Destroys the thread; while firmware refuses because an activation of the thread is
    /// running, waits for it to end and tries again, for at most `timeout`. Other refusals
    /// are returned at once: only this one goes away by itself.
    fn destroy_when_idle(&mut self, timeout: Duration) -> Result<(), DpaError> {
        crate::sync::traced_wait("a DPA activation to end", || {
            let start = Instant::now();
            let mut backoff = crate::devx::Backoff::default();
            let dev = Arc::clone(self.obj.device());
            loop {
                let seen = dev.activity();
                let refused = match self.obj.try_destroy() {
                    Ok(()) => return Ok(()),
                    Err(e) => e,
                };
                let running = matches!(self.state(), Ok(ThreadState::Running));
                if !running {
                    return Err(refused.into());
                }
                if start.elapsed() >= timeout {
                    return Err(DpaError::Timeout {
                        what: "a running DPA activation to end before its thread is destroyed",
                        after: timeout,
                    });
                }
                backoff.pause(dev.as_ref(), seen);
            }
        })
    }

    /// Waits, bounded, until the thread leaves RUNNING; FINISHED gives its info, ERROR (or a
    /// failed process) gives [`DpaError::ProcessFault`].
    ///
    /// # Errors
    /// [`DpaError::Timeout`] after `timeout`, [`DpaError::ProcessFault`], or a failed query.
    pub fn wait_done(&self, timeout: std::time::Duration) -> Result<ThreadInfo, DpaError> {
        crate::sync::traced_wait("a DPA thread to finish", || {
            let start = std::time::Instant::now();
            let mut backoff = crate::devx::Backoff::default();
            let dev = self.obj.device();
            loop {
                let seen = dev.activity();
                let info = self.info()?;
                match info.state {
                    ThreadState::Finished | ThreadState::Idle => return Ok(info),
                    ThreadState::Error => return Err(self.process.fault()?),
                    ThreadState::Running | ThreadState::Unknown(_) => {}
                }
                let st = self.process.err_status()?;
                if st.status != super::ProcessStatus::Ok {
                    return Err(DpaError::ProcessFault {
                        status: st.status,
                        syndrome: st.error_syndrome,
                    });
                }
                if start.elapsed() >= timeout {
                    return Err(DpaError::Timeout {
                        what: "a DPA thread to finish",
                        after: timeout,
                    });
                }
                // Each look is two firmware commands.
                backoff.pause(dev.as_ref(), seen);
            }
        })
    }
}

/// Event handlers of a process.
impl super::Process {
    /// Creates an event handler (FlexIO `flexio_event_handler_create`).
    ///
    /// # Errors
    /// An unknown entry symbol, firmware's refusal (thread limit, bad outbox / window).
    pub fn event_handler(&self, attr: &EventHandlerAttr) -> Result<EventHandler, DpaError> {
        EventHandler::create(self.inner(), attr)
    }
}
