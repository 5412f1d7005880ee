//! The model's DPA, its state: processes and their memory, threads, EUs, the counters, and the
//! constants of the machine a device program sees (address map, outbox registers, FlexIO-OS
//! call numbers, error codes). The runtime that acts on it is `crate::dpa` (docs/model-dpa.md).
//!
//! # Address map of a process
//!
//! | DPA address                        | what                                   | access |
//! |------------------------------------|----------------------------------------|--------|
//! | `0x4000_0000 ..` (text span)       | text segments at their link addresses  | r-x    |
//! | `0x8000_0000 ..` (DUMEM limit)     | data segments, heap, DPA_MEM blocks    | rw-    |
//! | `0x1_0000_0000 + 128 KiB * slot`   | thread context page (48-byte context)  | rw-    |
//! | `.. + 0x1000 .. + 0x1_0008`        | guard (unmapped; a fault here with `sp` below the stack is a stack overflow) | |
//! | `.. + 0x1_0008 .. + 0x1_2000`      | thread stack (8184 bytes, `sp` at the top) | rw- |
//! | `.. + 0x1_2000 .. + 0x2_0000`      | unmapped                               |        |
//! | `0x2_0000_0000 + 4 KiB * outbox`   | outbox page of DPA_OUTBOX `outbox`     | -w- (MMIO, 64-bit stores) |
//! | `0x3_0000_0000 + 8 * window`       | mkey register of DPA_WINDOW `window`   | rw- (MMIO, 64-bit) |
//! | `0x1_0000_0000_0000 + H`           | window aperture: host address `H`      | rw- (DMA through the mkey) |
//!
//! Everything else is unmapped and faults. Only the process's own objects appear: another
//! process's memory, outboxes and windows are never mapped. The outbox pages and window
//! registers of the process are those of the objects it owns; the aperture and the mkey
//! register work for the window the thread has configured (WINDOW_SET_CFG or its default).
//!
//! DUMEM (data, heap, DPA_MEM) is also a UMEM for the datapath: id `DUMEM_ID_BASE + process`,
//! offset = DPA address - `0x8000_0000` (docs/sources.md §3), so rings and doorbell records of queues
//! may live in DPA memory.

pub mod debug;
pub(crate) mod lifecycle;
pub mod map;
pub(crate) mod memory;

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use crate::riscv::{CodeCache, Hart};
use memory::ProcessMem;

/// Outbox page registers (docs/sources.md §5), 64-bit stores.
pub mod outbox_reg {
    pub const CQ_DB: u64 = 0x100;
    pub const EQ_DB_REARM: u64 = 0x140;
    pub const EQ_DB_NO_REARM: u64 = 0x180;
    pub const SXD_DB: u64 = 0x1c0;
}

/// FlexIO-OS call numbers (`a7`, docs/sources.md §5).
pub mod rtos_call {
    pub const DUAR_HANDLER_RETURN: u64 = 0;
    pub const GET_DUAR: u64 = 1;
    pub const OUTBOX_SET_CFG: u64 = 2;
    pub const WINDOW_SET_CFG: u64 = 3;
    pub const EXIT_PROCESS: u64 = 4;
    pub const OUTBOX_SET_GVMI: u64 = 5;
    /// `flexio_dev_nic_counters_config`: a0 = values, a1 = counter ids, a2 = how many.
    /// Provisional (the model's number; FlexIO-OS's is not public).
    pub const NIC_COUNTERS_CONFIG: u64 = 6;
    /// `flexio_dev_nic_counters_sample`. Provisional.
    pub const NIC_COUNTERS_SAMPLE: u64 = 7;
    /// `flexio_dev_get_pcc_table_base`: a0 = GVMI. Provisional.
    pub const GET_PCC_TABLE_BASE: u64 = 8;
}

/// NIC counter ids a DPA process may sample (`enum flexio_dev_nic_counter_ids` of the public
/// FlexIO 24.01 `flexio_dev.h`, the same values as DOCA PCC's `doca_pcc_dev_nic_counter_ids_t`):
/// bytes received and sent by ports 0..3, read as 32-bit values that wrap.
pub mod nic_counter {
    pub const PORT0_RX_BYTES: u32 = 0x10;
    pub const PORT3_RX_BYTES: u32 = 0x13;
    pub const PORT0_TX_BYTES: u32 = 0x20;
    pub const PORT3_TX_BYTES: u32 = 0x23;
    /// Counters one configuration may name. Provisional: FlexIO documents a limit ("counter
    /// ids too large" crashes the process) but not its value; the model allows eight, one of
    /// each id.
    pub const MAX_CONFIG: u32 = 8;

    /// Whether `id` is a counter FlexIO names.
    pub fn known(id: u32) -> bool {
        (PORT0_RX_BYTES..=PORT3_RX_BYTES).contains(&id)
            || (PORT0_TX_BYTES..=PORT3_TX_BYTES).contains(&id)
    }
}

/// A process's NIC counter configuration (`flexio_dev_nic_counters_config`): one per process,
/// the last successful call's, kept by the OS ("in kernel memory").
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NicCounterConfig {
    /// Where `flexio_dev_nic_counters_sample` stores the values (32 bits each).
    pub(crate) values: u64,
    pub(crate) ids: Vec<u32>,
}

/// `MemError::Device` codes of the DPA's device registers (in coredumps: `device_code`).
pub mod device_code {
    /// The activation's return address was fetched (the entry function returned); internal,
    /// never reported as a fault.
    pub const RETURNED: u32 = 0x0d9a_0000;
    /// An outbox register accessed with a size other than 8 bytes.
    pub const OUTBOX_SIZE: u32 = 0x0d9a_0001;
    /// A store to an outbox register the model does not implement (EMU_CAP, RXT_DB, CC_DB..).
    pub const OUTBOX_REGISTER: u32 = 0x0d9a_0002;
    /// A window register accessed with a size other than 8 bytes.
    pub const WINDOW_REG_SIZE: u32 = 0x0d9a_0010;
    /// An aperture access with no window configured for the thread.
    pub const WINDOW_NOT_CONFIGURED: u32 = 0x0d9a_0011;
    /// An aperture access before an mkey was written to the window's register.
    pub const WINDOW_NO_MKEY: u32 = 0x0d9a_0012;
    /// The window's mkey does not exist, or belongs to another user context.
    pub const WINDOW_BAD_MKEY: u32 = 0x0d9a_0013;
    /// The window's mkey is in another PD than the window.
    pub const WINDOW_PD_MISMATCH: u32 = 0x0d9a_0014;
    /// The access falls outside the mkey's range.
    pub const WINDOW_BOUNDS: u32 = 0x0d9a_0015;
    /// The mkey lacks the right (local read for loads, local write for stores).
    pub const WINDOW_ACCESS: u32 = 0x0d9a_0016;
    /// `flexio_dev_nic_counters_config` named a counter id FlexIO does not define.
    pub const NIC_COUNTERS_UNKNOWN_ID: u32 = 0x0d9a_0020;
    /// `flexio_dev_nic_counters_config` named no counter, or more than
    /// `nic_counter::MAX_CONFIG`.
    pub const NIC_COUNTERS_TOO_MANY: u32 = 0x0d9a_0021;
    /// A counter array outside the process's global or heap memory (FlexIO: "arrays memory
    /// must be defined in global or heap memory only"; a stack address is refused too).
    pub const NIC_COUNTERS_BAD_POINTER: u32 = 0x0d9a_0022;
    /// `flexio_dev_nic_counters_sample` before any successful configuration.
    pub const NIC_COUNTERS_NOT_CONFIGURED: u32 = 0x0d9a_0023;
}

/// `dpa_process.error_syndrome` values the model reports (its own, like the firmware checks'
/// syndromes; `0x5131_06xx`).
pub mod error_syndrome {
    /// The instruction budget of an activation ran out.
    pub const WATCHDOG: u32 = 0x5131_0601;
    /// An instruction fetch failed.
    pub const FETCH_FAULT: u32 = 0x5131_0602;
    /// A load failed.
    pub const LOAD_FAULT: u32 = 0x5131_0603;
    /// A store failed.
    pub const STORE_FAULT: u32 = 0x5131_0604;
    /// An illegal instruction.
    pub const ILLEGAL_INSTRUCTION: u32 = 0x5131_0605;
    /// A jump or branch to an odd address.
    pub const MISALIGNED_TARGET: u32 = 0x5131_0606;
    /// An `ebreak`.
    pub const EBREAK: u32 = 0x5131_0607;
    /// An `ecall` with an unknown number or argument.
    pub const BAD_RTOS_CALL: u32 = 0x5131_0608;
    /// A known FlexIO-OS call whose arguments the OS refuses; the coredump's `device_code`
    /// says why (`device_code::NIC_COUNTERS_*`).
    pub const RTOS_CALL_REFUSED: u32 = 0x5131_0609;
    /// The model itself failed while running the activation (a bug: please report).
    pub const INTERNAL: u32 = 0x5131_06ff;

    /// What a syndrome means.
    pub fn describe(s: u32) -> Option<&'static str> {
        Some(match s {
            WATCHDOG => "activation exceeded its instruction budget (watchdog)",
            FETCH_FAULT => "instruction fetch fault",
            LOAD_FAULT => "load fault",
            STORE_FAULT => "store fault",
            ILLEGAL_INSTRUCTION => "illegal instruction",
            MISALIGNED_TARGET => "jump or branch to a misaligned address",
            EBREAK => "ebreak",
            BAD_RTOS_CALL => "unknown FlexIO-OS call",
            RTOS_CALL_REFUSED => "FlexIO-OS call refused its arguments",
            INTERNAL => "internal error of the model",
            _ => return None,
        })
    }
}

/// `errno` values the OS writes into the thread context when an RTOS call fails (the call
/// also returns `-1` in `a0`). The model's.
pub mod rtos_errno {
    /// The object does not exist or is not of the expected type.
    pub const NO_SUCH_OBJECT: u32 = 1;
    /// The object belongs to another process.
    pub const OTHER_PROCESS: u32 = 2;
    /// The GVMI is not this function's.
    pub const BAD_GVMI: u32 = 3;
}

/// DPA counters of a device.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DpaStats {
    /// Activations run to their end (any outcome).
    pub activations: u64,
    /// Instructions retired by all activations.
    pub instructions: u64,
    /// Activations that ended in a fault (memory, illegal instruction, misaligned target,
    /// ebreak, unknown RTOS call).
    pub faults: u64,
    /// Activations stopped by the watchdog.
    pub watchdogs: u64,
    /// Outbox doorbells dropped because they named a queue the outbox may not reach.
    pub violations: u64,
    /// Outbox doorbells honoured.
    pub doorbells: u64,
    /// RTOS calls made.
    pub rtos_calls: u64,
    /// Events (CQ completions, runs) not turned into an activation: thread finished or in
    /// error, process failed or exited, no EU for the thread's affinity.
    pub dropped_events: u64,
    /// Activations that found no code cache of their program on their EU, and so decoded
    /// (and, with the `jit` feature, warmed up) its code again.
    pub code_caches_made: u64,
}

/// One DPA process as [`crate::Device::dpa_processes`] lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DpaProcessInfo {
    /// The DPA_PROCESS object id.
    pub id: u32,
    /// The function (vHCA) it was created on.
    pub vhca: u16,
    /// `ok`, `failed (status S, syndrome X)` or `exited (N)`.
    pub status: String,
    /// Bytes of DPA memory taken by its data and heap.
    pub memory: u64,
    /// Its threads, by id.
    pub threads: Vec<DpaThreadInfo>,
}

/// One DPA thread as [`crate::Device::dpa_processes`] lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DpaThreadInfo {
    /// The DPA_THREAD object id.
    pub id: u32,
    /// `idle`, `queued`, `running`, `finished` or `error`.
    pub state: &'static str,
    /// The EU it runs on now, or ran on last.
    pub eu: Option<u16>,
    /// `any`, `EU n` or `group n`.
    pub affinity: String,
    /// Its entry point.
    pub entry: u64,
    /// Activations so far.
    pub activations: u64,
}

/// Why a debug access to DPA memory failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DpaAccessError {
    /// No DPA process with this id.
    #[error("no DPA process {0:#x}")]
    NoProcess(u32),
    /// The range is not mapped in the process (first unmapped address).
    #[error("DPA address {0:#x} is not mapped in the process")]
    Unmapped(u64),
    /// A debugger is attached to the process already (one at a time, as on the device).
    #[error("DPA process {0:#x} has a debugger attached already")]
    Debugged(u32),
}

/// How a process stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ProcStatus {
    Ok,
    /// Failed: `dpa_process_status`, `error_syndrome`.
    Error {
        status: u8,
        syndrome: u32,
    },
    /// EXIT_PROCESS was called.
    Exited(u64),
}

/// The runtime of one DPA_PROCESS.
#[derive(Debug)]
pub(crate) struct ProcessRt {
    pub(crate) uid: u16,
    /// The function the process was created on (its owner's).
    pub(crate) vhca: u16,
    /// Functions the process is extended to (a DPA_UAR of theirs naming it): vhca_id ->
    /// (the DPA_UAR, its owner's uid, its UAR page). Its threads' outboxes act on them after
    /// OUTBOX_SET_GVMI.
    pub(crate) extensions: BTreeMap<u16, (u32, u16, u32)>,
    pub(crate) mem: Arc<ProcessMem>,
    pub(crate) status: ProcStatus,
    /// The kernel is closing the owner's context: nothing is dispatched any more.
    pub(crate) closing: bool,
    pub(crate) coredump: Option<Vec<u8>>,
    pub(crate) slots: Vec<bool>,
    /// DPA_OUTBOX id -> UAR page. Shared with the jobs dispatched (each activation holds
    /// the maps as they were at its dispatch); a change makes a new map.
    pub(crate) outboxes: std::sync::Arc<BTreeMap<u32, u32>>,
    /// DPA_WINDOW id -> PD, shared the same way.
    pub(crate) windows: std::sync::Arc<BTreeMap<u32, u32>>,
    /// DPA_UAR ids (the first is the DUAR GET_DUAR returns).
    pub(crate) dpa_uars: Vec<u32>,
    /// DPA_MEM id -> (address, size).
    pub(crate) dpa_mems: BTreeMap<u32, (u64, u64)>,
    /// Data span and heap (bytes from DUMEM base), for coredump regions.
    pub(crate) data_span: u64,
    pub(crate) heap: u64,
    /// Bytes of DUMEM taken by data and heap (DPA_MEM blocks come after).
    pub(crate) heap_end: u64,
    /// The NIC counters `flexio_dev_nic_counters_config` chose, if it was called.
    pub(crate) nic_counters: Option<NicCounterConfig>,
    /// An attached debugger ([`crate::Device::dpa_debug`]).
    pub(crate) debug: Option<Arc<debug::DebugState>>,
    /// The EU that last kept a code cache of the process's program: where its next
    /// activation finds its code decoded (and, with the `jit` feature, warm), when that EU
    /// is free and its affinity allows.
    pub(crate) warm_eu: Option<u16>,
}

/// Where a thread may run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Affinity {
    None,
    Eu(u16),
    Group(u16),
}

/// Thread states (`dpa_thread.state`, provisional: 0 idle, 1 running, 2 finished, 3 error).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ThreadState {
    Idle,
    Queued,
    Running { eu: u16 },
    Finished,
    Error,
}

impl ThreadState {
    pub(crate) fn code(self) -> u8 {
        use mlx5_dpa::mlx5::layouts::dpa_thread_state as s;
        match self {
            ThreadState::Idle => s::IDLE,
            ThreadState::Queued | ThreadState::Running { .. } => s::RUNNING,
            ThreadState::Finished => s::FINISHED,
            ThreadState::Error => s::ERROR,
        }
    }
}

/// The runtime of one DPA_THREAD.
#[derive(Debug)]
pub(crate) struct ThreadRt {
    pub(crate) process: u32,
    pub(crate) slot: u32,
    pub(crate) state: ThreadState,
    /// An event arrived while the thread was running: run again when it reschedules.
    pub(crate) pending_event: bool,
    pub(crate) affinity: Affinity,
    pub(crate) entry: u64,
    pub(crate) tls: u64,
    pub(crate) default_outbox: Option<u32>,
    pub(crate) default_window: Option<u32>,
    pub(crate) activations: u64,
    pub(crate) last_eu: Option<u16>,
    pub(crate) return_value: u64,
    /// Created continuable (FlexIO's event handler attribute `continuable`): a
    /// `flexio_dev_yield` keeps its registers for the next activation.
    pub(crate) continuable: bool,
    /// Where a continuable thread yielded: its next activation resumes here instead of
    /// starting at the entry.
    pub(crate) resume: Option<Hart>,
    /// An activation stopped at a `pause` hint and queued to go on (the thread is `Queued`
    /// meanwhile; a host state change other than RUNNING ends the activation there).
    pub(crate) paused: Option<Box<Paused>>,
}

/// Where an activation stopped at a `pause` hint, so that it goes on as if it had kept its EU:
/// the registers (and the instructions retired so far, which the watchdog counts), and the
/// outbox, window and window key it had selected.
///
/// The model runs many EUs' activations on a few host threads, each activation to its end; a
/// kernel spinning on a flag another activation will set would hold a host thread until the
/// watchdog. At a `pause` (Zihintpause, a hint that costs nothing on hardware) the host
/// thread goes to the next queued activation instead, as EUs run side by side on the DPA.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Paused {
    pub(crate) hart: Hart,
    pub(crate) outbox: Option<u32>,
    pub(crate) window: Option<u32>,
    pub(crate) mkey: Option<u32>,
    /// The function the outbox acts on (OUTBOX_SET_GVMI).
    pub(crate) gvmi: u16,
}

/// Code caches one EU keeps ([`Eu::caches`]).
pub(crate) const EU_CODE_CACHES: usize = 8;

/// One execution unit.
#[derive(Debug, Default)]
pub(crate) struct Eu {
    pub(crate) busy: bool,
    /// Register state of the last activation (kept for inspection; each activation starts
    /// from the ABI's initial state).
    pub(crate) hart: Option<Hart>,
    /// Decoded (and, with the `jit` feature, compiled) code of the last programs the EU ran,
    /// by text version (versions are never reused, so one names one program of one process),
    /// the most recent last; at most [`EU_CODE_CACHES`]. An EU alternating between processes
    /// keeps what it decoded for each.
    pub(crate) caches: Vec<(u64, Box<CodeCache>)>,
    pub(crate) activations: u64,
}

/// How the model's DPA makes its stores visible (DPA Subsystem guide, "Memory Model":
/// "DPA thread -> NIC engine: not coherent").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum DpaCoherency {
    /// Every DPA store is visible to the NIC and the host at once (a friendlier machine than
    /// the hardware; the default).
    #[default]
    Coherent,
    /// As the guide's coherency table says: a DPA thread's stores to DPA memory reach the NIC
    /// (and the host's copies) only when written back (`__dpa_thread_memory_writeback`, any
    /// fence with `w` in its predecessor set), else some time after the activation, after the
    /// NIC acted on its doorbells; stores through a window reach host memory at a window
    /// write-back (`o` in the predecessor set) or when the activation ends; window reads come
    /// from a per-activation cache of 64-byte lines until `__dpa_thread_window_read_inv`
    /// (`fence i, i`). Atomics act on memory. Programs that work here work on the hardware.
    Hardware,
}

/// The DPA's runtime state, inside the firmware (under the device lock).
#[derive(Debug, Default)]
pub(crate) struct DpaState {
    /// How DPA stores reach the NIC and the host (see [`DpaCoherency`]).
    pub(crate) coherency: DpaCoherency,
    /// DPA-memory stores that activations left without a write-back: committed after the
    /// datapath's next pass (so the NIC, acting on the activation's doorbells, reads what was
    /// there before them), by process.
    pub(crate) late_writebacks: Vec<(u32, Vec<(u64, u8)>)>,
    pub(crate) processes: rustc_hash::FxHashMap<u32, ProcessRt>,
    pub(crate) threads: rustc_hash::FxHashMap<u32, ThreadRt>,
    /// Threads waiting for an EU, in arrival order.
    pub(crate) pending: VecDeque<u32>,
    pub(crate) eus: Vec<Eu>,
    pub(crate) seq: u64,
    pub(crate) stats: DpaStats,
    /// Compiled code by program (feature `jit`): processes loaded from the same ELF at the
    /// same address share it; the last [`JIT_PROGRAMS`] programs, most recent last.
    #[cfg(feature = "jit")]
    pub(crate) jit_programs: Vec<JitProgram>,
}

/// Programs whose compiled code [`DpaState::jit_programs`] keeps.
#[cfg(feature = "jit")]
pub(crate) const JIT_PROGRAMS: usize = 8;

/// One program's compiled code: its text (where it was loaded and every byte) and the share.
#[cfg(feature = "jit")]
#[derive(Debug)]
pub(crate) struct JitProgram {
    pub(crate) text_base: u64,
    pub(crate) text: Vec<u8>,
    pub(crate) share: crate::riscv::JitShare,
}

impl DpaState {
    /// Commits the stores activations left unwritten (their caches being written back in
    /// time). Returns the number of bytes.
    pub(crate) fn commit_late_writebacks(&mut self) -> usize {
        let mut n = 0;
        for (process, bytes) in std::mem::take(&mut self.late_writebacks) {
            if let Some(p) = self.processes.get(&process) {
                for (addr, b) in bytes {
                    // A block freed meanwhile: its bytes go nowhere, as a cache line of freed
                    // memory would.
                    let _ = p.mem.write(addr, &[b]);
                    n += 1;
                }
            }
        }
        n
    }

    /// Whether `process` has a free thread slot.
    pub(crate) fn has_slot(&self, process: u32) -> bool {
        self.processes
            .get(&process)
            .is_some_and(|p| p.slots.iter().any(|s| !s))
    }

    /// The DPA address of the first free range of `size` bytes in the process's DUMEM
    /// window after its heap (DPA_MEM blocks are placed first fit, so freed ones are reused).
    pub(crate) fn find_block(&self, process: u32, size: u64) -> Option<u64> {
        let p = self.processes.get(&process)?;
        let mut blocks: Vec<(u64, u64)> = p.dpa_mems.values().copied().collect();
        blocks.sort_unstable();
        let mut at = p.mem.dumem_base() + p.heap_end;
        for (addr, len) in blocks {
            if addr.saturating_sub(at) >= size {
                break;
            }
            at = at.max(addr + len);
        }
        let end = p.mem.dumem_base() + p.mem.dumem_len();
        (at.checked_add(size)? <= end).then_some(at)
    }

    /// The kernel closes context `uid`: its processes take no more activations.
    pub(crate) fn close_uid(&mut self, uid: u16) {
        let ids: Vec<u32> = self
            .processes
            .iter_mut()
            .filter(|(_, p)| p.uid == uid)
            .map(|(id, p)| {
                p.closing = true;
                *id
            })
            .collect();
        let threads = &self.threads;
        self.pending
            .retain(|t| threads.get(t).is_none_or(|t| !ids.contains(&t.process)));
    }

    /// Grows the EU table to at least `n` EUs.
    pub(crate) fn eu_count_at_least(&mut self, n: usize) {
        if self.eus.len() < n {
            self.eus.resize_with(n, Eu::default);
        }
    }
}
