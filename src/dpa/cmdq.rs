//! The command queue (FlexIO `flexio_cmdq`): tasks, each a device function and one `u64`
//! argument, run by a set of DPA worker threads.
//!
//! | FlexIO (C)                                   | here                                   |
//! |----------------------------------------------|----------------------------------------|
//! | `flexio_cmdq_create(p, &attr, &q)`           | [`CmdQueue::create`] / `process.cmdq(&attr)` |
//! | `struct flexio_cmdq_attr { workers, batch_size, state }` | [`CmdqAttr`] (+ `log_depth`) |
//! | `flexio_cmdq_task_add(q, func, arg)`         | [`CmdQueue::task_add`]`("func", arg)`  |
//! | `flexio_cmdq_state_running(q)`               | [`CmdQueue::state_running`]            |
//! | `flexio_cmdq_is_empty(q)`                    | [`CmdQueue::is_empty`]                 |
//! | (poll `is_empty` until true)                 | [`CmdQueue::wait_empty`]               |
//! | `flexio_cmdq_destroy(q)`                     | dropping the [`CmdQueue`]              |
//!
//! # Who owns which memory when
//!
//! The contract with the device is `fw-blobs/include/mlx5_dpa_cmdq.h`; every program built
//! by `fw-blobs/build.sh` links its worker, `flexio_cmdq_dev_worker`. One DPA buffer holds a
//! 64-byte context block ([`ctx`] offsets) followed by a ring of `1 << log_depth` 16-byte
//! slots `{entry, arg}`. The host writes the context's first three words once, ring slots, and
//! the `producer` counter; the workers own `claimed`, `completed`, `errors`,
//! `last_bad_entry` and `activations`. The host reaches DPA memory only through the process's
//! copier (RDMA), so every write below is one [`Process::copy_to_dev`], which returns once
//! the data is in DPA memory.
//!
//! # Submission
//!
//! [`CmdQueue::task_add`] stages a task on the host. When `batch_size` tasks are staged, they
//! are written to their ring slots in one copy (two when the batch wraps the ring's end). In
//! state [`CmdqState::Running`], the new `producer` value follows in a copy of its own (so a
//! worker that sees it also sees the slots) and idle or finished workers are run, at most one
//! per unclaimed task. In state [`CmdqState::Pending`] nothing is published: the tasks wait
//! until [`CmdQueue::state_running`]. A partial batch is written and published by
//! [`CmdQueue::flush`], [`CmdQueue::state_running`], [`CmdQueue::is_empty`] and
//! [`CmdQueue::wait_empty`].
//!
//! The ring holds at most `depth` tasks that have not retired (`completed + errors`): adding
//! one more is [`DpaError::BadArgs`] ("command queue full"), after one refresh of the device's
//! counters. [`CmdQueue::free_slots`] says how many more fit.
//!
//! # Workers
//!
//! Each worker is an [`EventHandler`] on `flexio_cmdq_dev_worker` with the context's address
//! as argument. An activation claims tasks (under an AMO spinlock: compare `claimed` with
//! `producer`, read the slot, advance `claimed`) until none is left and returns. A worker already running when new tasks are
//! published may miss them, so [`CmdQueue::is_empty`] (and [`CmdQueue::wait_empty`], which
//! polls it) runs idle and finished workers again while tasks are unclaimed. A worker in
//! ERROR (a task faulted) or a failed process is [`DpaError::ProcessFault`].
//!
//! # Teardown
//!
//! Dropping the queue withdraws queued worker runs, waits up to [`DRAIN_TIMEOUT`] for running
//! ones to end, destroys the workers and then frees the context and ring; the process (a
//! handle the queue holds) outlives both.

use std::time::{Duration, Instant};

use super::process::StepExt;
use super::process::{DpaBuf, DpaError, Process, ProcessStatus};
use super::thread::{EventHandler, EventHandlerAttr, ThreadState};

/// The worker entry every fw-blobs program links (`runtime/cmdq.c`).
pub const WORKER_ENTRY: &str = "flexio_cmdq_dev_worker";
/// `magic` of the context block: the bytes "CMDQ" (`FLEXIO_CMDQ_DEV_MAGIC`).
pub const CMDQ_MAGIC: u32 = 0x5144_4d43;
/// Largest `log_depth` (`FLEXIO_CMDQ_DEV_MAX_LOG_DEPTH`): 65536 slots.
pub const MAX_LOG_DEPTH: u32 = 16;
/// Ring depth of [`CmdqAttr::default`]: 64 slots.
pub const DEFAULT_LOG_DEPTH: u32 = 6;
/// Bytes of one ring slot (`struct flexio_cmdq_task`).
pub const TASK_BYTES: u64 = 16;
/// Longest wait, when the queue is dropped, for running workers to end.
pub const DRAIN_TIMEOUT: Duration = Duration::from_secs(5);

/// Offsets in the context block (`struct flexio_cmdq_dev_ctx`, 64 bytes).
pub mod ctx {
    /// `magic` u32 (host).
    pub const MAGIC: u64 = 0;
    /// `log_depth` u32 (host).
    pub const LOG_DEPTH: u64 = 4;
    /// `ring_daddr` u64 (host).
    pub const RING_DADDR: u64 = 8;
    /// `producer` u64 (host): tasks published.
    pub const PRODUCER: u64 = 16;
    /// `claimed` u64 (device, CAS).
    pub const CLAIMED: u64 = 24;
    /// `completed` u64 (device, AMO add): tasks whose function returned.
    pub const COMPLETED: u64 = 32;
    /// `errors` u64 (device, AMO add): tasks refused for a bad entry.
    pub const ERRORS: u64 = 40;
    /// `last_bad_entry` u64 (device).
    pub const LAST_BAD_ENTRY: u64 = 48;
    /// `activations` u32 (device, AMO add; wraps).
    pub const ACTIVATIONS: u64 = 56;
    /// `claim_lock` u32 (device spinlock; 0 at creation).
    pub const CLAIM_LOCK: u64 = 60;
    /// Size of the block; the ring follows it.
    pub const SIZE: u64 = 64;
}

/// FlexIO `enum flexio_cmdq_state`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CmdqState {
    /// Tasks accumulate; nothing runs until [`CmdQueue::state_running`]
    /// (`FLEXIO_CMDQ_STATE_PENDING`).
    Pending,
    /// Tasks run as their batches are published (`FLEXIO_CMDQ_STATE_RUNNING`).
    #[default]
    Running,
}

/// FlexIO `struct flexio_cmdq_attr`, plus the ring depth.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CmdqAttr {
    /// Worker threads, 1 ..= the process's thread limit.
    pub workers: u32,
    /// Tasks written to the ring per copy, 1 ..= depth.
    pub batch_size: u32,
    /// The initial state.
    pub state: CmdqState,
    /// Ring of `1 << log_depth` slots, 0 ..= [`MAX_LOG_DEPTH`].
    pub log_depth: u32,
}

impl Default for CmdqAttr {
    /// One worker, batches of one, running, [`DEFAULT_LOG_DEPTH`].
    fn default() -> Self {
        CmdqAttr {
            workers: 1,
            batch_size: 1,
            state: CmdqState::Running,
            log_depth: DEFAULT_LOG_DEPTH,
        }
    }
}

impl CmdqAttr {
    /// `workers` workers, batches of `batch_size`, in `state`, default depth.
    pub fn new(workers: u32, batch_size: u32, state: CmdqState) -> CmdqAttr {
        CmdqAttr {
            workers,
            batch_size,
            state,
            ..CmdqAttr::default()
        }
    }
}

/// The queue's counters: the host's own and the device's as last read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CmdqCounters {
    /// Tasks accepted by [`CmdQueue::task_add`] (staged, written or published).
    pub submitted: u64,
    /// Tasks written to the ring.
    pub written: u64,
    /// The `producer` value the device has.
    pub published: u64,
    /// Tasks claimed by workers.
    pub claimed: u64,
    /// Tasks whose function returned.
    pub completed: u64,
    /// Tasks refused for a bad entry address (0, odd, outside the program's text).
    pub errors: u64,
    /// Entry address of the last refused task.
    pub last_bad_entry: u64,
    /// Worker activations so far (the device's u32 counter, wrapping).
    pub activations: u64,
}

impl CmdqCounters {
    /// Tasks that will not run again: `completed + errors`.
    pub fn retired(&self) -> u64 {
        self.completed.wrapping_add(self.errors)
    }
}

/// A command queue (FlexIO `flexio_cmdq`). Fields drop in declaration order: the workers,
/// then the context and ring, then the process handle.
#[derive(Debug)]
pub struct CmdQueue {
    workers: Vec<EventHandler>,
    buf: DpaBuf,
    process: Process,
    state: CmdqState,
    log_depth: u32,
    batch_size: usize,
    /// Tasks added but not yet written: `(entry, arg)`.
    staged: Vec<(u64, u64)>,
    /// Tasks written to the ring (the next slot's counter).
    written: u64,
    /// The `producer` value the device has.
    published: u64,
    /// The device counters as last read.
    device: CmdqCounters,
}

fn le_u64(b: &[u8], off: u64) -> u64 {
    let o = off as usize;
    b.get(o..o + 8)
        .and_then(|s| s.try_into().ok())
        .map_or(0, u64::from_le_bytes)
}

fn le_u32(b: &[u8], off: u64) -> u32 {
    let o = off as usize;
    b.get(o..o + 4)
        .and_then(|s| s.try_into().ok())
        .map_or(0, u32::from_le_bytes)
}

impl CmdQueue {
    /// Creates a command queue on `process` (FlexIO `flexio_cmdq_create`): the context and
    /// ring in DPA memory and `attr.workers` worker threads, all idle.
    ///
    /// # Errors
    /// [`DpaError::BadArgs`] for zero workers or more than the process may have, a batch of 0
    /// or larger than the ring, `log_depth` above [`MAX_LOG_DEPTH`];
    /// [`DpaError::UnknownSymbol`] when the program lacks [`WORKER_ENTRY`]; DPA memory,
    /// copy or thread creation failures (what was made is released).
    pub fn create(process: &Process, attr: &CmdqAttr) -> Result<CmdQueue, DpaError> {
        // The queue's own handle to the process.
        let process = process.clone();
        let max_workers = process.caps().max_threads_per_process.max(1);
        if attr.workers == 0 || u64::from(attr.workers) > max_workers {
            return Err(DpaError::BadArgs(format!(
                "{} command queue workers (1 ..= {max_workers})",
                attr.workers
            )));
        }
        if attr.log_depth > MAX_LOG_DEPTH {
            return Err(DpaError::BadArgs(format!(
                "command queue log_depth {} (at most {MAX_LOG_DEPTH})",
                attr.log_depth
            )));
        }
        let depth = 1u64 << attr.log_depth;
        if attr.batch_size == 0 || u64::from(attr.batch_size) > depth {
            return Err(DpaError::BadArgs(format!(
                "command queue batch_size {} (1 ..= depth {depth})",
                attr.batch_size
            )));
        }
        process.symbol(WORKER_ENTRY)?;
        let buf = process
            .alloc(ctx::SIZE + depth * TASK_BYTES)
            .step("allocating the queue in DPA memory")?;
        let daddr = buf.daddr();
        let mut head = [0u8; ctx::SIZE as usize];
        head[0..4].copy_from_slice(&CMDQ_MAGIC.to_le_bytes());
        head[4..8].copy_from_slice(&attr.log_depth.to_le_bytes());
        head[8..16].copy_from_slice(&(daddr + ctx::SIZE).to_le_bytes());
        process
            .copy_to_dev(daddr, &head)
            .step("writing the queue's context")?;
        let mut workers = Vec::with_capacity(attr.workers as usize);
        for _ in 0..attr.workers {
            workers.push(
                process
                    .event_handler(&EventHandlerAttr::new(WORKER_ENTRY, daddr))
                    .step("creating the worker threads")?,
            );
        }
        Ok(CmdQueue {
            workers,
            buf,
            process,
            state: attr.state,
            log_depth: attr.log_depth,
            batch_size: attr.batch_size as usize,
            staged: Vec::with_capacity(attr.batch_size as usize),
            written: 0,
            published: 0,
            device: CmdqCounters::default(),
        })
    }

    /// The context block's DPA address (the workers' argument).
    pub fn ctx_daddr(&self) -> u64 {
        self.buf.daddr()
    }

    /// Ring slots.
    pub fn depth(&self) -> u64 {
        1u64 << self.log_depth
    }

    /// The current state.
    pub fn state(&self) -> CmdqState {
        self.state
    }

    /// Worker threads.
    pub fn workers(&self) -> usize {
        self.workers.len()
    }

    fn submitted(&self) -> u64 {
        self.written + self.staged.len() as u64
    }

    /// Tasks that can still be added before the ring is full, by the counters last read.
    pub fn free_slots(&self) -> u64 {
        let in_flight = self.submitted().wrapping_sub(self.device.retired());
        self.depth().saturating_sub(in_flight)
    }

    /// Adds a task running `entry_symbol(arg)` on a worker (FlexIO `flexio_cmdq_task_add`).
    /// The function has the form `uint64_t f(uint64_t arg)` (or `void`); its result is not
    /// kept.
    ///
    /// `Ok` means the task is in the queue. A fault found while starting workers for it
    /// (its own, when a worker ran it at once, or an earlier task's) does not refuse the task:
    /// the process stays failed, and [`CmdQueue::is_empty`] / [`CmdQueue::wait_empty`] report
    /// it, whatever the timing.
    ///
    /// # Errors
    /// [`DpaError::UnknownSymbol`]; [`DpaError::BadArgs`] when the ring is full; the copy
    /// or thread errors of a batch write (see [`CmdQueue::flush`]) other than a process fault.
    pub fn task_add(&mut self, entry_symbol: &str, arg: u64) -> Result<(), DpaError> {
        let entry = self.process.symbol(entry_symbol)?;
        self.task_add_daddr(entry, arg)
    }

    /// Adds a task by the entry's DPA address, as a FlexIO program passes a function
    /// pointer. The address is not checked here: the worker refuses 0, odd addresses and
    /// addresses outside the program's text and counts them in
    /// [`CmdqCounters::errors`].
    ///
    /// # Errors
    /// As [`CmdQueue::task_add`].
    pub fn task_add_daddr(&mut self, entry: u64, arg: u64) -> Result<(), DpaError> {
        if self.free_slots() == 0 {
            self.refresh()?;
            if self.free_slots() == 0 {
                return Err(DpaError::BadArgs(format!(
                    "command queue full: {} tasks not retired, depth {}",
                    self.submitted().wrapping_sub(self.device.retired()),
                    self.depth()
                )));
            }
        }
        self.staged.push((entry, arg));
        if self.staged.len() >= self.batch_size {
            self.write_staged()?;
            if self.state == CmdqState::Running {
                self.publish()?;
                match self.kick() {
                    // The task is published; the fault is the queue's state now, reported by
                    // is_empty / wait_empty (which find it again: a failed process stays so).
                    Ok(()) | Err(DpaError::ProcessFault { .. }) => {}
                    Err(e) => return Err(e),
                }
            }
        }
        Ok(())
    }

    /// Writes the staged tasks to their ring slots: one copy, two when they wrap the end.
    fn write_staged(&mut self) -> Result<(), DpaError> {
        if self.staged.is_empty() {
            return Ok(());
        }
        let mask = self.depth() - 1;
        let ring = self.buf.daddr() + ctx::SIZE;
        let mut bytes = Vec::with_capacity(self.staged.len() * TASK_BYTES as usize);
        for &(entry, arg) in &self.staged {
            bytes.extend_from_slice(&entry.to_le_bytes());
            bytes.extend_from_slice(&arg.to_le_bytes());
        }
        let first = self.written & mask;
        let to_end = ((self.depth() - first) * TASK_BYTES) as usize;
        let (head, tail) = bytes.split_at(to_end.min(bytes.len()));
        self.process.copy_to_dev(ring + first * TASK_BYTES, head)?;
        if !tail.is_empty() {
            self.process.copy_to_dev(ring, tail)?;
        }
        self.written += self.staged.len() as u64;
        self.staged.clear();
        Ok(())
    }

    /// Publishes every written task: the `producer` store, after the slots' copies.
    fn publish(&mut self) -> Result<(), DpaError> {
        if self.published == self.written {
            return Ok(());
        }
        // ORDERING: the slots' copy completed (copy_to_dev waits for its completion) before
        // this one is posted, so a worker that reads the new producer reads the new slots.
        self.process.copy_to_dev(
            self.buf.daddr() + ctx::PRODUCER,
            &self.written.to_le_bytes(),
        )?;
        self.published = self.written;
        Ok(())
    }

    /// Reads the device's counters.
    fn refresh(&mut self) -> Result<(), DpaError> {
        let mut b = [0u8; ctx::SIZE as usize];
        self.process.copy_from_dev(self.buf.daddr(), &mut b)?;
        self.device = CmdqCounters {
            submitted: 0,
            written: 0,
            published: le_u64(&b, ctx::PRODUCER),
            claimed: le_u64(&b, ctx::CLAIMED),
            completed: le_u64(&b, ctx::COMPLETED),
            errors: le_u64(&b, ctx::ERRORS),
            last_bad_entry: le_u64(&b, ctx::LAST_BAD_ENTRY),
            activations: u64::from(le_u32(&b, ctx::ACTIVATIONS)),
        };
        Ok(())
    }

    fn fault(&self) -> Result<DpaError, DpaError> {
        let st = self.process.err_status()?;
        Ok(DpaError::ProcessFault {
            status: st.status,
            syndrome: st.error_syndrome,
        })
    }

    /// Reads the counters, reports a failed worker or process, and runs idle or finished
    /// workers, at most one per unclaimed task.
    fn kick(&mut self) -> Result<(), DpaError> {
        self.refresh()?;
        let mut unclaimed = self.published.saturating_sub(self.device.claimed);
        for w in &self.workers {
            match w.state()? {
                ThreadState::Error => return Err(self.fault()?),
                ThreadState::Idle | ThreadState::Finished if unclaimed > 0 => {
                    if let Err(e) = w.run(self.buf.daddr()) {
                        // Refused: the process failed (a fault, an exit), or the worker
                        // started running since its state was read.
                        if self.process.err_status()?.status != ProcessStatus::Ok {
                            return Err(self.fault()?);
                        }
                        match w.state()? {
                            ThreadState::Running => {}
                            ThreadState::Error => return Err(self.fault()?),
                            _ => return Err(e),
                        }
                    }
                    unclaimed -= 1;
                }
                _ => {}
            }
        }
        if self.process.err_status()?.status != ProcessStatus::Ok {
            return Err(self.fault()?);
        }
        Ok(())
    }

    /// Writes a partial batch and, when running, publishes it and starts workers.
    ///
    /// # Errors
    /// A copy error; [`DpaError::ProcessFault`] when a worker or the process failed; a
    /// thread refusing to run for another reason.
    pub fn flush(&mut self) -> Result<(), DpaError> {
        self.write_staged()?;
        if self.state == CmdqState::Running {
            self.publish()?;
            self.kick()?;
        }
        Ok(())
    }

    /// FlexIO `flexio_cmdq_state_running`: publishes what accumulated while pending and runs
    /// the workers. Calling it on a running queue flushes.
    ///
    /// # Errors
    /// As [`CmdQueue::flush`].
    pub fn state_running(&mut self) -> Result<(), DpaError> {
        self.state = CmdqState::Running;
        self.flush()
    }

    /// FlexIO `flexio_cmdq_is_empty`: whether every added task retired (ran or was refused).
    /// One step of [`CmdQueue::wait_empty`]: a running queue flushes, and idle workers are run
    /// again while tasks are unclaimed. A pending queue with tasks is not empty.
    ///
    /// # Errors
    /// As [`CmdQueue::flush`].
    pub fn is_empty(&mut self) -> Result<bool, DpaError> {
        if self.state == CmdqState::Running {
            self.flush()?;
        } else {
            self.refresh()?;
        }
        Ok(self.device.retired() == self.submitted())
    }

    /// Waits, bounded by `timeout`, until every task retired; see [`CmdQueue::is_empty`].
    ///
    /// # Errors
    /// [`DpaError::BadArgs`] on a pending queue holding tasks (they cannot run),
    /// [`DpaError::ProcessFault`] when a task faulted (or the process failed otherwise),
    /// [`DpaError::Timeout`], copy errors.
    pub fn wait_empty(&mut self, timeout: Duration) -> Result<(), DpaError> {
        crate::sync::traced_wait("a command queue to empty", || {
            if self.state == CmdqState::Pending && self.submitted() != self.device.retired() {
                return Err(DpaError::BadArgs(
                    "waiting on a pending command queue with tasks (call state_running)".into(),
                ));
            }
            let start = Instant::now();
            let mut backoff = crate::devx::Backoff::default();
            let dev = std::sync::Arc::clone(self.process.dev());
            loop {
                let seen = dev.activity();
                if self.is_empty()? {
                    return Ok(());
                }
                if start.elapsed() >= timeout {
                    return Err(DpaError::Timeout {
                        what: "the command queue's tasks to retire",
                        after: timeout,
                    });
                }
                backoff.pause(dev.as_ref(), seen);
            }
        })
    }

    /// The counters, with the device's read now.
    ///
    /// # Errors
    /// A copy error.
    pub fn counters(&mut self) -> Result<CmdqCounters, DpaError> {
        self.refresh()?;
        Ok(CmdqCounters {
            submitted: self.submitted(),
            written: self.written,
            published: self.published,
            ..self.device
        })
    }

    /// Activations of each worker so far (how the tasks spread).
    ///
    /// # Errors
    /// A thread query error.
    pub fn worker_activations(&self) -> Result<Vec<u64>, DpaError> {
        self.workers.iter().map(EventHandler::activations).collect()
    }
}

impl Drop for CmdQueue {
    fn drop(&mut self) {
        // Withdraw queued runs (refused for a running worker or a failed process).
        for w in &self.workers {
            let _ = w.finish();
        }
        let start = Instant::now();
        let mut backoff = crate::devx::Backoff::default();
        let dev = std::sync::Arc::clone(self.process.dev());
        loop {
            let seen = dev.activity();
            if !self
                .workers
                .iter()
                .any(|w| matches!(w.state(), Ok(ThreadState::Running)))
                || start.elapsed() >= DRAIN_TIMEOUT
            {
                break;
            }
            // Each look is a query per worker: on the model, until its next pass that did work.
            backoff.pause(dev.as_ref(), seen);
        }
        // Workers first (a refused destroy is logged by the handle); then the ring.
        self.workers.clear();
    }
}

impl Process {
    /// Creates a command queue on this process (FlexIO `flexio_cmdq_create`); the queue holds
    /// a handle to the process, so the process outlives it.
    ///
    /// # Errors
    /// As [`CmdQueue::create`].
    pub fn cmdq(&self, attr: &CmdqAttr) -> Result<CmdQueue, DpaError> {
        CmdQueue::create(self, attr)
    }
}
