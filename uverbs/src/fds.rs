//! The descriptors the server gave out: uverbs contexts and event files, found by number.
//!
//! [`is_ours`] answers from a lock-free bitmap, so the interposed calls cost one load for the
//! program's own files. A `fork()` child gets a copy of the parent's memory but not its threads,
//! and the kernel's uverbs contexts could not be shared with it anyway: in the child, the
//! descriptors inherited from the parent answer `EIO` (as a device the kernel disassociated
//! does). The parent's copies are leaked in the child, never dropped: a lock a parent thread
//! held at the fork would never be released.

use std::collections::HashMap;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use nix::errno::Errno;

use crate::context::Ucontext;
use crate::event::EventFile;

const FD_WORDS: usize = 1024;
/// Descriptors up to this number can be served (the bitmap's size); a uverbs open that would
/// get a larger one fails with `EMFILE`.
pub const MAX_FD: usize = FD_WORDS * 64;

static OURS: [AtomicU64; FD_WORDS] = [const { AtomicU64::new(0) }; FD_WORDS];

/// Whether `fd` is one the server serves (one atomic load; false for anything out of range).
pub fn is_ours(fd: RawFd) -> bool {
    let Ok(i) = usize::try_from(fd) else {
        return false;
    };
    i < MAX_FD && OURS[i / 64].load(Ordering::Acquire) & (1 << (i % 64)) != 0
}

fn mark(fd: RawFd, on: bool) {
    if let Ok(i) = usize::try_from(fd) {
        if i < MAX_FD {
            let bit = 1u64 << (i % 64);
            if on {
                OURS[i / 64].fetch_or(bit, Ordering::AcqRel);
            } else {
                OURS[i / 64].fetch_and(!bit, Ordering::AcqRel);
            }
        }
    }
}

/// A descriptor the server serves.
#[derive(Clone)]
pub(crate) enum Served {
    /// `/dev/infiniband/uverbsN`.
    Uverbs(Arc<Ucontext>),
    /// A completion channel, async event fd, DevX event channel or async command fd.
    Event(Arc<EventFile>),
    /// Inherited from the parent across `fork()`: every call answers `EIO`.
    Stale,
}

struct Table {
    pid: u32,
    fds: Option<HashMap<RawFd, Served>>,
}

static TABLE: Mutex<Table> = Mutex::new(Table { pid: 0, fds: None });

/// The table, after noticing a fork (the inherited entries become stale).
fn table() -> MutexGuard<'static, Table> {
    let mut g = TABLE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let pid = std::process::id();
    if g.pid != pid {
        if g.pid != 0 {
            if let Some(fds) = g.fds.as_mut() {
                for v in fds.values_mut() {
                    std::mem::forget(std::mem::replace(v, Served::Stale));
                }
            }
        }
        g.pid = pid;
    }
    g
}

/// Records a served descriptor.
///
/// # Errors
/// `EMFILE` past [`MAX_FD`].
pub(crate) fn add(fd: RawFd, s: Served) -> Result<(), Errno> {
    if usize::try_from(fd).map_or(true, |i| i >= MAX_FD) {
        return Err(Errno::EMFILE);
    }
    table().fds.get_or_insert_with(HashMap::new).insert(fd, s);
    mark(fd, true);
    Ok(())
}

/// Records an event file under its descriptor.
///
/// # Errors
/// As [`add`].
pub(crate) fn add_event(f: &Arc<EventFile>) -> Result<(), Errno> {
    add(f.fd(), Served::Event(Arc::clone(f)))
}

/// What `fd` is.
pub(crate) fn lookup(fd: RawFd) -> Option<Served> {
    table().fds.as_ref()?.get(&fd).cloned()
}

/// Forgets `fd`; what it was.
pub(crate) fn remove(fd: RawFd) -> Option<Served> {
    let v = table().fds.as_mut()?.remove(&fd);
    if v.is_some() {
        mark(fd, false);
    }
    v
}

/// Every open context.
pub(crate) fn contexts() -> Vec<Arc<Ucontext>> {
    table()
        .fds
        .as_ref()
        .map(|m| {
            m.values()
                .filter_map(|s| match s {
                    Served::Uverbs(c) => Some(Arc::clone(c)),
                    _ => None,
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Every served descriptor (the fuzz harness closes what a context handed out).
#[cfg(feature = "test-utils")]
pub(crate) fn all() -> Vec<RawFd> {
    table()
        .fds
        .as_ref()
        .map(|m| m.keys().copied().collect())
        .unwrap_or_default()
}
