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
//!
//! Latency: while the device's engine thread runs, it runs activations itself
//! ([`Exec::run_one_here`]): the thread that saw the doorbell and dispatched the activation
//! runs it at once, and its next pass applies the result, with no thread wake-up on the way.
//! Workers then take only what the engine leaves queued (many activations in flight). An
//! activation that runs longer than [`exec::STAND_IN_AFTER`] instructions calls a worker to
//! stand in for the engine meanwhile (the pool's stand-in hook, [`Exec::set_stand_in_hook`]:
//! a pass, and a sleep until the next doorbell when the pass found nothing), so the NIC goes
//! on while a DPA thread spins waiting for it, as on hardware (`tests/dpa/dpa_window.rs`
//! `window_stores_are_visible_once_written_back` waits for a host write that needs the NIC).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use super::exec::{self, Done, Job};
use mlx5_dpa::sync::lock;

/// Most worker threads of one device.
pub(crate) const MAX_WORKERS: usize = 4;
/// How long an idle worker sleeps before it looks at the stop flag again.
const WORKER_IDLE_WAIT: Duration = Duration::from_millis(100);
/// The device's pass (see [`Exec::set_pass_hook`]).
type Hook = Box<dyn Fn() + Send + Sync>;
/// The device's pass, as a worker makes it: whether it was made (the device was free).
type PassHook = Box<dyn Fn() -> bool + Send + Sync>;

#[derive(Default)]
struct Queue {
    jobs: VecDeque<Job>,
    done: Vec<Done>,
    /// Submitted and not yet done.
    running: usize,
    workers: usize,
    /// Workers asleep on `Inner::work`, and threads asleep on `Inner::done`: a notify
    /// that nobody would take is skipped (on Linux each one is a `futex` system call,
    /// waiters or not). Both change only under this lock, where the sleeper checked what
    /// it waits for, so a notifier that reads 0 has no wake-up to give.
    idle_workers: usize,
    done_waiters: usize,
    stop: bool,
}

#[derive(Default)]
struct Inner {
    q: Mutex<Queue>,
    work: Condvar,
    done: Condvar,
    /// The engine thread runs activations itself ([`Exec::set_engine_runs`]): a submitted job
    /// wakes no worker.
    engine_runs: AtomicBool,
    /// A worker is asked to make the engine's passes while the engine runs a long activation.
    stand_in: AtomicBool,
    /// One step of standing in (see [`Exec::set_stand_in_hook`]); without it, a pass and a
    /// yield.
    stand_in_step: OnceLock<Hook>,
    /// Most workers to start (0: the host's parallelism, at most [`MAX_WORKERS`]).
    max_workers: AtomicUsize,
    pass: OnceLock<PassHook>,
    /// Wakes the engine thread (see [`Exec::set_wake_hook`]).
    wake_engine: OnceLock<Hook>,
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        lock(&self.q)
    }

    /// Queues a finished activation's result.
    fn finish(&self, done: Done) {
        let mut q = self.lock();
        q.done.push(done);
        q.running = q.running.saturating_sub(1);
        let wake = q.done_waiters > 0;
        drop(q);
        if wake {
            self.done.notify_all();
        }
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

    /// Sets the device's pass, which a worker makes after the last queued activation it
    /// finished (so the results take effect at once) and while it stands in for the engine;
    /// called without any lock of the pool held. Once; later calls change nothing.
    pub(crate) fn set_pass_hook(&self, hook: PassHook) {
        let _ = self.inner.pass.set(hook);
    }

    /// Sets what a worker does, over and over, while it stands in for the engine (the engine
    /// runs a long activation): the device's pass, and a bounded wait for the next doorbell
    /// when it found nothing. Called without any lock of the pool held. Once; later calls
    /// change nothing.
    pub(crate) fn set_stand_in_hook(&self, hook: Hook) {
        let _ = self.inner.stand_in_step.set(hook);
    }

    /// Sets how the pool wakes the device's engine thread, which sleeps while activations run
    /// on workers: after a worker queued a result, and after a job was queued for the engine
    /// to run. Called without any lock of the pool held. Once; later calls change nothing.
    pub(crate) fn set_wake_hook(&self, hook: Hook) {
        let _ = self.inner.wake_engine.set(hook);
    }

    /// Limits the workers this pool starts (1 ..= [`MAX_WORKERS`]; 0: the host's
    /// parallelism). Workers already started stay.
    pub(crate) fn set_max_workers(&self, n: usize) {
        self.inner.max_workers.store(n, Ordering::Relaxed);
    }

    /// Whether the engine thread runs activations itself (its [`Exec::run_one_here`]);
    /// while it does, submitting a job wakes no worker.
    pub(crate) fn set_engine_runs(&self, on: bool) {
        self.inner.engine_runs.store(on, Ordering::Release);
        if !on {
            // What was queued for the engine goes to the workers.
            self.inner.work.notify_all();
        }
    }

    /// Runs the oldest queued activation on the calling thread (the engine's), waking a worker
    /// for the rest of the queue, and one to stand in for the caller's passes if the
    /// activation runs long. Returns whether there was one. Must not be called with the
    /// device lock held.
    pub(crate) fn run_one_here(&self) -> bool {
        let mut q = self.inner.lock();
        let Some(job) = q.jobs.pop_front() else {
            return false;
        };
        let wake = !q.jobs.is_empty() && q.idle_workers > 0;
        drop(q);
        if wake {
            self.inner.work.notify_one();
        }
        let inner = &self.inner;
        let stand_in = || {
            inner.stand_in.store(true, Ordering::Release);
            inner.work.notify_one();
        };
        let done = run_guarded(job, Some(&stand_in));
        self.inner.stand_in.store(false, Ordering::Release);
        self.inner.finish(done);
        true
    }

    /// Queues an activation; starts workers the first time. An activation of a process a
    /// debugger is attached to runs on a thread of its own instead (it may stop for a long
    /// while: it must hold neither the engine nor a worker).
    pub(crate) fn submit(&self, job: Job) {
        let job = match job.debug {
            Some(_) => match self.run_apart(job) {
                None => return,
                Some(job) => job,
            },
            None => job,
        };
        let mut q = self.inner.lock();
        q.running += 1;
        q.jobs.push_back(job);
        let want = match self.inner.max_workers.load(Ordering::Relaxed) {
            0 => wanted_workers(),
            n => n.min(MAX_WORKERS),
        };
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
        // Without any worker, the job waits for `help` (called without the device lock); the
        // engine takes its jobs itself; a worker that is awake takes it when it looks next.
        let engine_runs = self.inner.engine_runs.load(Ordering::Acquire);
        let wake = q.idle_workers > 0 && !engine_runs;
        drop(q);
        if wake {
            self.inner.work.notify_one();
        }
        if engine_runs {
            // A worker's pass may dispatch while the engine sleeps: the job is the engine's.
            wake_engine(&self.inner);
        }
    }

    /// Runs `job` on a new thread; gives it back if no thread could be started (it is then
    /// queued as any other).
    fn run_apart(&self, job: Job) -> Option<Job> {
        let (tx, rx) = std::sync::mpsc::channel::<Job>();
        let inner = Arc::clone(&self.inner);
        let spawned = std::thread::Builder::new()
            .name("mlx5-sim-dpa-debug".into())
            .spawn(move || {
                if let Ok(job) = rx.recv() {
                    inner.finish(run_guarded(job, None));
                    if !pass(&inner) {
                        wake_engine(&inner);
                    }
                }
            });
        if spawned.is_err() {
            return Some(job);
        }
        self.inner.lock().running += 1;
        match tx.send(job) {
            Ok(()) => None,
            // The thread is gone before it took the job: run it as any other.
            Err(std::sync::mpsc::SendError(job)) => {
                let mut q = self.inner.lock();
                q.running = q.running.saturating_sub(1);
                Some(job)
            }
        }
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
            let done = run_guarded(job, None);
            self.inner.finish(done);
        }
    }

    /// Activations submitted whose results were not taken yet (running, queued or done).
    pub(crate) fn in_flight(&self) -> usize {
        let q = self.inner.lock();
        q.running + q.done.len()
    }

    /// Whether a finished activation waits to be applied.
    pub(crate) fn done_ready(&self) -> bool {
        !self.inner.lock().done.is_empty()
    }

    /// Takes every finished activation, oldest dispatch first.
    pub(crate) fn take_done(&self) -> Vec<Done> {
        let mut q = self.inner.lock();
        if q.done.is_empty() {
            return Vec::new();
        }
        // The next results go into a vector as large as this one was: a `Done` is large,
        // and growing from empty moved the first ones several times.
        let room = q.done.capacity();
        let mut d = std::mem::replace(&mut q.done, Vec::with_capacity(room));
        drop(q);
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
            q.done_waiters += 1;
            q = self
                .inner
                .done
                .wait_timeout(q, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
            q.done_waiters -= 1;
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

/// Workers a pool starts: the host's parallelism, at most [`MAX_WORKERS`]. Asked once per
/// process: `available_parallelism` reads the cgroup's CPU quota files (tens of
/// microseconds), too slow for every activation.
fn wanted_workers() -> usize {
    static WANT: OnceLock<usize> = OnceLock::new();
    *WANT.get_or_init(|| {
        std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .clamp(1, MAX_WORKERS)
    })
}

fn run_guarded(job: Job, long: Option<&dyn Fn()>) -> Done {
    let head = job.head();
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| exec::run(job, long))).unwrap_or_else(
        |_| {
            tracing::error!(target: "mlx5_sim::dpa", thread = head.thread, "activation panicked");
            exec::internal_failure(&head)
        },
    )
}

/// The device's engine woken, if a hook is set; a panic in it is logged, not spread.
fn wake_engine(inner: &Inner) {
    if let Some(hook) = inner.wake_engine.get() {
        if std::panic::catch_unwind(std::panic::AssertUnwindSafe(hook)).is_err() {
            tracing::error!(target: "mlx5_sim::dpa", "waking the device's engine panicked");
        }
    }
}

/// The device's pass, if set; a panic in it is logged, not spread (the worker goes on).
fn pass(inner: &Inner) -> bool {
    let Some(hook) = inner.pass.get() else {
        return false;
    };
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(hook)).unwrap_or_else(|_| {
        tracing::error!(target: "mlx5_sim::dpa", "the device pass panicked");
        false
    })
}

/// One step of standing in for the engine: the device's (which sleeps when there is nothing
/// to do), else a pass and a yield. A panic in it is logged, not spread.
fn stand_in_step(inner: &Inner) {
    match inner.stand_in_step.get() {
        Some(step) => {
            if std::panic::catch_unwind(std::panic::AssertUnwindSafe(step)).is_err() {
                tracing::error!(target: "mlx5_sim::dpa", "the device's stand-in step panicked");
            }
        }
        None => {
            pass(inner);
            std::thread::yield_now();
        }
    }
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
                if inner.stand_in.load(Ordering::Acquire) {
                    // The engine is inside a long activation: make its passes meanwhile.
                    drop(q);
                    stand_in_step(inner);
                    q = inner.lock();
                    continue;
                }
                q.idle_workers += 1;
                q = inner
                    .work
                    .wait_timeout(q, WORKER_IDLE_WAIT)
                    .unwrap_or_else(|e| e.into_inner())
                    .0;
                q.idle_workers -= 1;
            }
        };
        inner.finish(run_guarded(job, None));
        // With more activations queued, the next one first: their results wait for the pass
        // after them, or the engine's, woken for it. A pass after each took as long as an
        // activation of a dozen frames when sixteen DPA threads shared the workers, and the
        // 16-thread packet processor ran at 0.7x of 4 threads. The last one's pass applies
        // its result here; only when the device was taken is the engine woken for it.
        if !inner.lock().jobs.is_empty() || !pass(inner) {
            wake_engine(inner);
        }
    }
}
