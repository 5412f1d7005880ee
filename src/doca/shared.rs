//! What a context's sync events, launches and launcher share: the host page of event
//! counters and launch-done words, its slot pools, and the error state.

use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::Mutex;

use crate::mem::MemoryRegion;
use crate::sync::lock;

use super::DocaError;

/// Sync events one context holds at once.
pub const MAX_SYNC_EVENTS: usize = 1024;
/// Launches one context has in flight at once (more wait in order).
pub const MAX_LAUNCHES_IN_FLIGHT: usize = 1024;
/// The host page: event counters, then launch-done words, 8 bytes each.
pub(crate) const PAGE_LEN: usize = 8 * (MAX_SYNC_EVENTS + MAX_LAUNCHES_IN_FLIGHT);

/// What the context's events, launches and launcher share.
#[derive(Debug)]
pub(crate) struct Shared {
    page: MemoryRegion,
    /// Host address of the page's first byte in its key's address space.
    haddr: u64,
    free_events: Mutex<Vec<usize>>,
    free_dones: Mutex<Vec<usize>>,
    failure: Mutex<Option<String>>,
    fatal_files: Mutex<Option<(PathBuf, PathBuf)>>,
}

impl Shared {
    /// Over `page` (at least [`PAGE_LEN`] bytes), whose first byte is host address `haddr` in
    /// its key's address space.
    pub(crate) fn new(page: MemoryRegion, haddr: u64) -> Shared {
        Shared {
            page,
            haddr,
            free_events: Mutex::new((0..MAX_SYNC_EVENTS).rev().collect()),
            free_dones: Mutex::new((0..MAX_LAUNCHES_IN_FLIGHT).rev().collect()),
            failure: Mutex::new(None),
            fatal_files: Mutex::new(None),
        }
    }

    /// PANIC-free by construction: every slot index handed out is below the page's count.
    pub(crate) fn counter(&self, slot: usize) -> &AtomicU64 {
        // PANIC: `slot < MAX_SYNC_EVENTS` (slots come from `free_events` only), so the word
        // lies inside the PAGE_LEN-byte page and is 8-aligned.
        self.page
            .buf()
            .atomic_u64(8 * slot)
            .expect("event slot inside the context page")
    }

    pub(crate) fn counter_haddr(&self, slot: usize) -> u64 {
        self.haddr + 8 * slot as u64
    }

    pub(crate) fn done_word(&self, slot: usize) -> &AtomicU64 {
        // PANIC: `slot < MAX_LAUNCHES_IN_FLIGHT` (slots come from `free_dones` only).
        self.page
            .buf()
            .atomic_u64(8 * (MAX_SYNC_EVENTS + slot))
            .expect("done slot inside the context page")
    }

    pub(crate) fn done_haddr(&self, slot: usize) -> u64 {
        self.haddr + 8 * (MAX_SYNC_EVENTS + slot) as u64
    }

    pub(crate) fn take_event_slot(&self) -> Result<usize, DocaError> {
        lock(&self.free_events)
            .pop()
            .ok_or(DocaError::NoMemory("sync events"))
    }

    pub(crate) fn give_event_slot(&self, slot: usize) {
        lock(&self.free_events).push(slot);
    }

    pub(crate) fn take_done_slot(&self) -> Result<usize, DocaError> {
        lock(&self.free_dones)
            .pop()
            .ok_or(DocaError::NoMemory("launches in flight"))
    }

    pub(crate) fn give_done_slot(&self, slot: usize) {
        lock(&self.free_dones).push(slot);
    }

    /// Puts the context in the error state (the first reason stays).
    pub(crate) fn fail(&self, why: String) {
        let mut f = lock(&self.failure);
        if f.is_none() {
            *f = Some(why);
        }
    }

    pub(crate) fn failure(&self) -> Option<String> {
        lock(&self.failure).clone()
    }

    pub(crate) fn set_fatal_files(&self, core: PathBuf, crash: PathBuf) {
        *lock(&self.fatal_files) = Some((core, crash));
    }

    pub(crate) fn fatal_files(&self) -> Option<(PathBuf, PathBuf)> {
        lock(&self.fatal_files).clone()
    }
}
