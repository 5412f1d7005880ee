//! The host threads that run activations.
//!
//! Firmware dispatches activations ([`Job`]s) under the device lock; up to [`MAX_WORKERS`]
//! worker threads (started at the first dispatch, at most the host's parallelism) run them
//! without the lock and queue their [`Done`]s; firmware applies those under the lock. The
//! pool knows nothing of firmware: it moves jobs and results and counts what is in flight.
//!
//! Workers hold only the pool's queue, never the device: when the device goes, the pool's
//! drop tells them to stop and they end after their current activation (bounded by its
//! instruction budget). Every wait here has a timeout.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::exec::{self, Done, Job};
use mlx5_dpa::sync::lock;

/// Most worker threads of one device.
pub(crate) const MAX_WORKERS: usize = 4;
/// How long an idle worker sleeps before it looks at the stop flag again.
const WORKER_IDLE_WAIT: Duration = Duration::from_millis(100);

#[derive(Default)]
struct Queue {
    jobs: VecDeque<Job>,
    done: Vec<Done>,
    /// Submitted and not yet done.
    running: usize,
    workers: usize,
    stop: bool,
}

#[derive(Default)]
struct Inner {
    q: Mutex<Queue>,
    work: Condvar,
    done: Condvar,
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        lock(&self.q)
    }
}

/// The worker pool of one device.
pub(crate) struct Exec {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Exec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let q = self.inner.lock();
        f.debug_struct("Exec")
            .field("queued", &q.jobs.len())
            .field("running", &q.running)
            .field("workers", &q.workers)
            .finish()
    }
}

impl Exec {
    pub(crate) fn new() -> Exec {
        Exec {
            inner: Arc::default(),
        }
    }

    /// Queues an activation; starts workers the first time.
    pub(crate) fn submit(&self, job: Job) {
        let mut q = self.inner.lock();
        q.running += 1;
        q.jobs.push_back(job);
        let want = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .clamp(1, MAX_WORKERS);
        while q.workers < want {
            let inner = Arc::clone(&self.inner);
            let spawned = std::thread::Builder::new()
                .name(format!("mlx5-sim-dpa-{}", q.workers))
                .spawn(move || worker(&inner));
            match spawned {
                Ok(_) => q.workers += 1,
                Err(e) => {
                    tracing::warn!(target: "mlx5_sim::dpa", "cannot start a DPA worker: {e}");
                    break;
                }
            }
        }
        // Without any worker, the job waits for `help` (called without the device lock).
        self.inner.work.notify_one();
    }

    /// Runs queued activations on the calling thread when no worker could be started, so the
    /// device still works (slowly). Must not be called with the device lock held: an
    /// activation may take it.
    pub(crate) fn help(&self) {
        loop {
            let mut q = self.inner.lock();
            if q.workers > 0 {
                return;
            }
            let Some(job) = q.jobs.pop_front() else {
                return;
            };
            drop(q);
            let done = run_guarded(job);
            let mut q = self.inner.lock();
            q.done.push(done);
            q.running = q.running.saturating_sub(1);
            drop(q);
            self.inner.done.notify_all();
        }
    }

    /// Activations submitted whose results were not taken yet (running, queued or done).
    pub(crate) fn in_flight(&self) -> usize {
        let q = self.inner.lock();
        q.running + q.done.len()
    }

    /// Takes every finished activation, oldest dispatch first.
    pub(crate) fn take_done(&self) -> Vec<Done> {
        let mut d = std::mem::take(&mut self.inner.lock().done);
        d.sort_by_key(|d| d.seq);
        d
    }

    /// Waits until no activation is queued or running, at most `timeout`. Returns whether
    /// that was reached.
    pub(crate) fn wait_idle(&self, timeout: Duration) -> bool {
        self.help();
        let deadline = Instant::now() + timeout;
        let mut q = self.inner.lock();
        while q.running > 0 {
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            q = self
                .inner
                .done
                .wait_timeout(q, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        true
    }
}

impl Drop for Exec {
    fn drop(&mut self) {
        let mut q = self.inner.lock();
        q.stop = true;
        q.jobs.clear();
        drop(q);
        self.inner.work.notify_all();
    }
}

fn run_guarded(job: Job) -> Done {
    let head = job.head();
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| exec::run(job))).unwrap_or_else(|_| {
        tracing::error!(target: "mlx5_sim::dpa", thread = head.thread, "activation panicked");
        exec::internal_failure(&head)
    })
}

fn worker(inner: &Inner) {
    loop {
        let job = {
            let mut q = inner.lock();
            loop {
                if q.stop {
                    q.workers = q.workers.saturating_sub(1);
                    return;
                }
                if let Some(j) = q.jobs.pop_front() {
                    break j;
                }
                q = inner
                    .work
                    .wait_timeout(q, WORKER_IDLE_WAIT)
                    .unwrap_or_else(|e| e.into_inner())
                    .0;
            }
        };
        let done = run_guarded(job);
        let mut q = inner.lock();
        q.done.push(done);
        q.running = q.running.saturating_sub(1);
        drop(q);
        inner.done.notify_all();
    }
}
