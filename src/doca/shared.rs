//! What a context's sync events, launches and launcher share: the host page of event
//! counters and launch-done words, its slot pools, and the error state.

use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::Mutex;

use crate::dpa::{Process, ProcessStatus, StepExt};
use crate::mem::MemoryRegion;
use crate::sync::lock;

use super::DocaError;

/// Sync events one context holds at once.
pub const MAX_SYNC_EVENTS: usize = 1024;
/// Launches one context has in flight at once (more wait in order).
pub const MAX_LAUNCHES_IN_FLIGHT: usize = 1024;
/// Async ops one context holds at once (entries of the runtime's `__doca_dpa_udata`,
/// `MLX5_DPA_DOCA_UDATA_SLOTS`).
pub const MAX_ASYNC_OPS: usize = 64;
/// The host page: event counters, then launch-done words, 8 bytes each.
pub(crate) const PAGE_LEN: usize = 8 * (MAX_SYNC_EVENTS + MAX_LAUNCHES_IN_FLIGHT);

/// What the context's events, launches and launcher share.
#[derive(Debug)]
pub(crate) struct Shared {
    page: MemoryRegion,
    /// The context's process, for its status.
    process: Process,
    /// `<prefix>.<pid>.core` / `.crash` are written when the process fails.
    fatal_prefix: PathBuf,
    /// Host address of the page's first byte in its key's address space.
    haddr: u64,
    free_events: Mutex<Vec<usize>>,
    free_dones: Mutex<Vec<usize>>,
    failure: Mutex<Option<String>>,
    fatal_files: Mutex<Option<(PathBuf, PathBuf)>>,
    /// The runtime's `__doca_dpa_udata` table and its free entries.
    udata_daddr: u64,
    free_udata: Mutex<Vec<usize>>,
}

impl Shared {
    /// The device the context runs on.
    pub(crate) fn dev(&self) -> &std::sync::Arc<dyn crate::devx::Devx> {
        self.process.dev()
    }

    /// Over `page` (at least [`PAGE_LEN`] bytes), whose first byte is host address `haddr` in
    /// its key's address space.
    pub(crate) fn new(
        page: MemoryRegion,
        haddr: u64,
        process: Process,
        fatal_prefix: PathBuf,
        udata_daddr: u64,
    ) -> Shared {
        Shared {
            udata_daddr,
            free_udata: Mutex::new((0..MAX_ASYNC_OPS).rev().collect()),
            page,
            process,
            fatal_prefix,
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

    /// The key of the event page, which peers use to signal exported events.
    pub(crate) fn page_rkey(&self) -> u32 {
        self.page.rkey().0
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

    pub(crate) fn take_udata_slot(&self) -> Result<usize, DocaError> {
        lock(&self.free_udata)
            .pop()
            .ok_or(DocaError::NoMemory("async ops"))
    }

    pub(crate) fn give_udata_slot(&self, slot: usize) {
        lock(&self.free_udata).push(slot);
    }

    /// DPA address of entry `slot` of `__doca_dpa_udata` (8 bytes: QPN, user data).
    pub(crate) fn udata_daddr(&self, slot: usize) -> u64 {
        self.udata_daddr + 8 * slot as u64
    }

    pub(crate) fn set_fatal_files(&self, core: PathBuf, crash: PathBuf) {
        *lock(&self.fatal_files) = Some((core, crash));
    }

    pub(crate) fn fatal_files(&self) -> Option<(PathBuf, PathBuf)> {
        lock(&self.fatal_files).clone()
    }
}

impl Shared {
    /// Reads the process's status (one firmware query, `flexio_err_status_get`); a failed
    /// process puts the context in the error state, naming the thread, pc and cause, and
    /// DOCA's fatal-error files are written. Returns the error state.
    ///
    /// # Errors
    /// The query's own failure, naming the step; [`DocaError::Fatal`] in the error state.
    pub(crate) fn check(&self) -> Result<(), DocaError> {
        if let Some(why) = self.failure() {
            return Err(DocaError::Fatal(why));
        }
        let st = self
            .process
            .err_status()
            .step("reading the DPA process's status")?;
        if st.status == ProcessStatus::Ok {
            return Ok(());
        }
        self.fail(self.describe_failure(st));
        Err(DocaError::Fatal(self.failure().unwrap_or_default()))
    }

    fn describe_failure(&self, st: crate::dpa::ErrStatus) -> String {
        let raw = self.process.coredump_raw().ok();
        let dump = raw
            .as_deref()
            .and_then(|r| crate::dpa::coredump::Coredump::parse(r).ok());
        let mut why = match &dump {
            Some(d) => format!(
                "DPA thread {:#x} stopped at pc {:#x}: {} (process status {:?}, syndrome {:#x})",
                d.dpa_thread_id, d.pc, d.cause, st.status, st.error_syndrome
            ),
            None => format!(
                "DPA process status {:?}, syndrome {:#x}",
                st.status, st.error_syndrome
            ),
        };
        if let (Some(raw), Some(d)) = (&raw, &dump) {
            match write_fatal_files(&self.fatal_prefix, raw, d, &why) {
                Ok((core, crash)) => {
                    why.push_str(&format!(
                        "; core dump {}, crash report {}",
                        core.display(),
                        crash.display()
                    ));
                    self.set_fatal_files(core, crash);
                }
                Err(e) => why.push_str(&format!("; writing the fatal-error files failed: {e}")),
            }
        }
        why
    }
}

/// DOCA's fatal-error files: `<prefix>.<pid>.core` holds the coredump image as the device
/// gave it, `<prefix>.<pid>.crash` what failed, decoded.
fn write_fatal_files(
    prefix: &std::path::Path,
    raw: &[u8],
    d: &crate::dpa::coredump::Coredump,
    why: &str,
) -> std::io::Result<(std::path::PathBuf, std::path::PathBuf)> {
    use std::fmt::Write as _;
    let name = |suffix: &str| {
        let mut p = prefix.as_os_str().to_owned();
        p.push(format!(".{}.{suffix}", std::process::id()));
        std::path::PathBuf::from(p)
    };
    let (core, crash) = (name("core"), name("crash"));
    std::fs::write(&core, raw)?;
    let mut text = String::new();
    let _ = writeln!(text, "DOCA DPA fatal error: {why}");
    let _ = writeln!(
        text,
        "process {:#x} thread {:#x} eu {} activation {}",
        d.dpa_process_id, d.dpa_thread_id, d.eu, d.activation
    );
    let _ = writeln!(
        text,
        "cause {:?} pc {:#x} fault address {:#x} instruction {:#010x} device code {:#x} instructions retired {}",
        d.cause, d.pc, d.fault_addr, d.insn, d.device_code, d.instret
    );
    for (i, r) in d.gpr.iter().enumerate() {
        let _ = write!(
            text,
            "x{i:<2} {r:#018x}{}",
            if i % 4 == 3 { "\n" } else { "  " }
        );
    }
    std::fs::write(&crash, text)?;
    Ok((core, crash))
}
