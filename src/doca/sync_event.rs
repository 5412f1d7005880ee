//! DOCA sync events of a DPA context: 64-bit counters in the context's host page.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::shared::Shared;
use super::DocaError;

/// Who updates and who waits on an event (DOCA's `add_publisher_location_*` /
/// `add_subscriber_location_*`); at least one of each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SyncEventAttr {
    pub publisher_cpu: bool,
    pub publisher_dpa: bool,
    /// A remote peer publishes it over RDMA (`doca_sync_event_add_publisher_location_remote_net`):
    /// it can be exported ([`SyncEvent::export_remote`]) to DPA code signalling it with
    /// `doca_dpa_dev_rdma_signal_set` / `_add` on an RDMA connected to this context.
    pub publisher_remote: bool,
    pub subscriber_cpu: bool,
    pub subscriber_dpa: bool,
}

impl SyncEventAttr {
    /// Set by the host, waited on by DPA code (a launch's wait event).
    pub fn cpu_to_dpa() -> SyncEventAttr {
        SyncEventAttr {
            publisher_cpu: true,
            subscriber_dpa: true,
            ..SyncEventAttr::default()
        }
    }

    /// Set by DPA code, waited on by the host (a launch's completion event).
    pub fn dpa_to_cpu() -> SyncEventAttr {
        SyncEventAttr {
            publisher_dpa: true,
            subscriber_cpu: true,
            ..SyncEventAttr::default()
        }
    }

    /// Set and waited on by DPA code (kernels ordered among themselves).
    pub fn dpa_to_dpa() -> SyncEventAttr {
        SyncEventAttr {
            publisher_dpa: true,
            subscriber_dpa: true,
            ..SyncEventAttr::default()
        }
    }

    pub(crate) fn check(&self) -> Result<(), DocaError> {
        if !(self.publisher_cpu || self.publisher_dpa || self.publisher_remote) {
            return Err(DocaError::InvalidValue(
                "a sync event needs a publisher location".into(),
            ));
        }
        if !(self.subscriber_cpu || self.subscriber_dpa) {
            return Err(DocaError::InvalidValue(
                "a sync event needs a subscriber location".into(),
            ));
        }
        if [
            self.publisher_cpu,
            self.publisher_dpa,
            self.publisher_remote,
        ]
        .iter()
        .filter(|p| **p)
        .count()
            > 1
        {
            return Err(DocaError::NotPermitted(
                "a sync event with publishers in more than one location (CPU, DPA, remote): \
                 their adds to one counter could lose each other's"
                    .into(),
            ));
        }
        Ok(())
    }

    fn dpa(&self) -> bool {
        self.publisher_dpa || self.subscriber_dpa
    }
}

/// A sync event exported to a remote peer (`doca_sync_event_export_to_remote_net`): the
/// counter's address and key. The key covers the context's whole event page, as a key covers
/// its registration; only QPs in the context's PD (its own RDMAs' peers connect to those)
/// can use it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RemoteEventExport {
    pub addr: u64,
    pub rkey: u32,
}

/// A counter slot of the context's page, given back when the last holder goes: the event, and
/// the launches that wait on it or complete into it (so a dropped event's slot is not reused
/// while a launch still names it).
#[derive(Debug)]
pub(crate) struct EventSlot {
    pub(crate) shared: Arc<Shared>,
    pub(crate) slot: usize,
}

impl EventSlot {
    pub(crate) fn counter(&self) -> &AtomicU64 {
        self.shared.counter(self.slot)
    }

    pub(crate) fn haddr(&self) -> u64 {
        self.shared.counter_haddr(self.slot)
    }
}

impl Drop for EventSlot {
    fn drop(&mut self) {
        self.shared.give_event_slot(self.slot);
    }
}

/// A sync event (DOCA `doca_sync_event`); its counter slot returns to the context when it and
/// every launch naming it are gone.
#[derive(Debug)]
pub struct SyncEvent {
    slot: Arc<EventSlot>,
    attr: SyncEventAttr,
}

/// How often [`SyncEvent::wait_gt`] reads the process's status while it waits.
const HEALTH_EVERY: Duration = Duration::from_millis(20);

/// How long [`SyncEvent::wait_gt`] sleeps between looks once the counter has not moved for a
/// while (it spins and yields first).
const WAIT_SLEEP: Duration = Duration::from_micros(50);

impl SyncEvent {
    pub(crate) fn new(shared: &Arc<Shared>, attr: SyncEventAttr) -> Result<SyncEvent, DocaError> {
        attr.check()?;
        let slot = shared.take_event_slot()?;
        shared.counter(slot).store(0, Ordering::Release);
        Ok(SyncEvent {
            slot: Arc::new(EventSlot {
                shared: Arc::clone(shared),
                slot,
            }),
            attr,
        })
    }

    fn counter(&self) -> &AtomicU64 {
        self.slot.counter()
    }

    /// The locations it was created with.
    pub fn attr(&self) -> SyncEventAttr {
        self.attr
    }

    /// The counter now (`doca_sync_event_get`).
    pub fn get(&self) -> u64 {
        self.counter().load(Ordering::Acquire)
    }

    fn cpu_publisher(&self, what: &str) -> Result<(), DocaError> {
        if self.attr.publisher_cpu {
            Ok(())
        } else {
            Err(DocaError::NotPermitted(format!(
                "{what} from the CPU: the event has no CPU publisher"
            )))
        }
    }

    /// Sets the counter (`doca_sync_event_update_set`).
    ///
    /// # Errors
    /// [`DocaError::NotPermitted`] without a CPU publisher.
    pub fn update_set(&self, value: u64) -> Result<(), DocaError> {
        self.cpu_publisher("update_set")?;
        self.counter().store(value, Ordering::Release);
        Ok(())
    }

    /// Adds to the counter and returns its value before (`doca_sync_event_update_add`).
    ///
    /// # Errors
    /// [`DocaError::NotPermitted`] without a CPU publisher.
    pub fn update_add(&self, value: u64) -> Result<u64, DocaError> {
        self.cpu_publisher("update_add")?;
        Ok(self.counter().fetch_add(value, Ordering::AcqRel))
    }

    /// Waits until `(counter & mask) > value` and returns the counter
    /// (`doca_sync_event_wait_gt`), at most `timeout`.
    ///
    /// # Errors
    /// [`DocaError::NotPermitted`] without a CPU subscriber; [`DocaError::Timeout`];
    /// [`DocaError::Fatal`] as soon as the context fails (what would have set it is gone: the
    /// wait reads the process's status every 20 ms); the status query's own failure.
    pub fn wait_gt(&self, value: u64, mask: u64, timeout: Duration) -> Result<u64, DocaError> {
        self.wait_until(|v| v & mask > value, "wait_gt", timeout)
    }

    /// Waits until `(counter & mask) != value` and returns the counter
    /// (`doca_sync_event_wait_neq`), at most `timeout`.
    ///
    /// # Errors
    /// As [`SyncEvent::wait_gt`].
    pub fn wait_ne(&self, value: u64, mask: u64, timeout: Duration) -> Result<u64, DocaError> {
        self.wait_until(|v| v & mask != value, "wait_ne", timeout)
    }

    fn wait_until(
        &self,
        done: impl Fn(u64) -> bool,
        what: &str,
        timeout: Duration,
    ) -> Result<u64, DocaError> {
        crate::sync::traced_wait("a sync event", || {
            if !self.attr.subscriber_cpu {
                return Err(DocaError::NotPermitted(format!(
                    "{what} on the CPU: the event has no CPU subscriber"
                )));
            }
            let start = Instant::now();
            let mut looks = 0u32;
            let mut last_check = start;
            let dev = self.slot.shared.dev();
            loop {
                let seen = dev.activity();
                let v = self.get();
                if done(v) {
                    return Ok(v);
                }
                // What would set it may have failed: the process's status, now and then.
                if last_check.elapsed() >= HEALTH_EVERY {
                    last_check = Instant::now();
                    self.slot.shared.check()?;
                } else if let Some(why) = self.slot.shared.failure() {
                    return Err(DocaError::Fatal(why));
                }
                if start.elapsed() >= timeout {
                    return Err(DocaError::Timeout {
                        what: "a sync event to pass its threshold",
                        after: timeout,
                    });
                }
                // A DPA thread's write wakes the wait on the model; a host thread's `update`
                // is seen within `WAIT_SLEEP`.
                if dev.wait_activity(seen, WAIT_SLEEP) {
                    continue;
                }
                looks = looks.saturating_add(1);
                if looks < 64 {
                    std::hint::spin_loop();
                } else if looks < 256 {
                    std::thread::yield_now();
                } else {
                    std::thread::sleep(WAIT_SLEEP);
                }
            }
        })
    }

    /// The handle DPA code names the event by (`doca_sync_event_export_to_dpa` /
    /// `doca_sync_event_get_dpa_handle`; `doca_dpa_dev_sync_event_t`).
    ///
    /// # Errors
    /// [`DocaError::NotPermitted`] for an event with no DPA location.
    pub fn dpa_handle(&self) -> Result<u64, DocaError> {
        if !self.attr.dpa() {
            return Err(DocaError::NotPermitted(
                "export to the DPA: the event has no DPA publisher or subscriber".into(),
            ));
        }
        Ok(self.slot.haddr())
    }

    /// `doca_sync_event_export_to_remote_net`: what a peer needs to signal the event over
    /// RDMA (the counter's address and the key of the context's event page).
    ///
    /// # Errors
    /// [`DocaError::NotPermitted`] without a remote publisher.
    pub fn export_remote(&self) -> Result<RemoteEventExport, DocaError> {
        if !self.attr.publisher_remote {
            return Err(DocaError::NotPermitted(
                "export to a remote peer: the event has no remote publisher".into(),
            ));
        }
        Ok(RemoteEventExport {
            addr: self.slot.haddr(),
            rkey: self.slot.shared.page_rkey(),
        })
    }

    pub(crate) fn slot(&self) -> &Arc<EventSlot> {
        &self.slot
    }
}

/// A remote peer's sync event as DPA code names it (`doca_dpa_dev_sync_event_remote_net_t`):
/// its address and key in DPA memory (8 + 4 bytes). Freed when dropped.
#[derive(Debug)]
pub struct RemoteSyncEvent {
    block: crate::dpa::DpaBuf,
    export: RemoteEventExport,
}

impl RemoteSyncEvent {
    pub(crate) fn new(
        process: &crate::dpa::Process,
        export: RemoteEventExport,
    ) -> Result<RemoteSyncEvent, DocaError> {
        use crate::dpa::StepExt;
        let block = process
            .alloc(16)
            .step("allocating the remote event's block")?;
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&export.addr.to_le_bytes());
        b[8..12].copy_from_slice(&export.rkey.to_le_bytes());
        process
            .copy_to_dev(block.daddr(), &b)
            .step("writing the remote event's block")?;
        Ok(RemoteSyncEvent { block, export })
    }

    /// The handle DPA code signals it by.
    pub fn dpa_handle(&self) -> u64 {
        self.block.daddr()
    }

    /// What it was made from.
    pub fn export(&self) -> RemoteEventExport {
        self.export
    }
}
