//! The lock helper of the workspace, the traced wait, and [`Activity`], the counter the
//! model's waits sleep on.
//!
//! Locks here guard plain data (tables, queues, handles). A thread that panicked while
//! holding one leaves that data as it was at the panic, which every user can still read and
//! release objects from, so a poisoned lock is taken as it is rather than propagated: the
//! panic itself is reported where it happened.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// Locks `m`, taking a poisoned lock as it is.
#[inline]
pub fn lock<T: ?Sized>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Runs the bounded wait `f` and reports its end to `tracing` (target `mlx5_dpa::wait`, level
/// debug): what was waited for, how many microseconds it took, and the error when it did not
/// end well (a timeout, a fault). Every host-side wait of the driver goes through here, so
/// `--trace` shows where a program spent its time waiting on the device.
pub fn traced_wait<T, E: std::fmt::Display>(
    what: &'static str,
    f: impl FnOnce() -> Result<T, E>,
) -> Result<T, E> {
    let start = std::time::Instant::now();
    let r = f();
    let us = u64::try_from(start.elapsed().as_micros()).unwrap_or(u64::MAX);
    match &r {
        Ok(_) => tracing::debug!(target: "mlx5_dpa::wait", what, us, "wait ended"),
        Err(e) => tracing::debug!(target: "mlx5_dpa::wait", what, us, error = %e, "wait failed"),
    }
    r
}

/// How long [`Activity::wait`] looks at the counter, spinning, before it sleeps: a few of the
/// model's passes on a quiet machine, short enough that a waiter on a busy one gives its core
/// away almost at once.
pub const WAIT_SPIN: Duration = Duration::from_micros(5);

/// A counter that rises each time something happened, with sleepers that wake when it does:
/// the device model's stand-in for what a waiting CPU has on hardware (a NIC's DMA write ends
/// a `UMWAIT` on the monitored line; an interrupt ends a blocking read). The model bumps it
/// after every pass that did work (a CQE, a DMA write, an activation's end); the driver's
/// host-side waits sleep on it ([`crate::devx::Devx::wait_activity`]) instead of spinning, so
/// on a machine whose cores are all taken they are woken by the work that ends them rather
/// than by the scheduler's next turn.
#[derive(Debug, Default)]
pub struct Activity {
    epoch: AtomicU64,
    sleepers: AtomicUsize,
    lock: Mutex<()>,
    woken: Condvar,
}

impl Activity {
    /// The counter now.
    #[inline]
    pub fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::SeqCst)
    }

    /// Something happened: raises the counter and wakes every sleeper. Costs one atomic add
    /// when nobody sleeps.
    #[inline]
    pub fn bump(&self) {
        // ORDERING: SeqCst on both sides (here the add then the load of `sleepers`; in `wait`
        // the add to `sleepers` then the load of `epoch`): either this load sees the sleeper,
        // or the sleeper's load sees the new count. No wake-up is lost.
        self.epoch.fetch_add(1, Ordering::SeqCst);
        if self.sleepers.load(Ordering::SeqCst) > 0 {
            // Taking the lock waits until a sleeper that checked the counter is inside
            // `wait_timeout` (which releases it): the notification cannot fall in between.
            drop(lock(&self.lock));
            self.woken.notify_all();
        }
    }

    /// Waits at most `timeout` until the counter is no longer `seen`: spins for
    /// [`WAIT_SPIN`], then sleeps until [`Activity::bump`]. Returns whether it changed.
    pub fn wait(&self, seen: u64, timeout: Duration) -> bool {
        let start = Instant::now();
        let spin = WAIT_SPIN.min(timeout);
        while start.elapsed() < spin {
            if self.epoch() != seen {
                return true;
            }
            for _ in 0..32 {
                std::hint::spin_loop();
            }
        }
        let Some(deadline) = start.checked_add(timeout) else {
            return self.epoch() != seen;
        };
        self.sleepers.fetch_add(1, Ordering::SeqCst);
        let mut g = lock(&self.lock);
        let changed = loop {
            if self.epoch() != seen {
                break true;
            }
            let now = Instant::now();
            if now >= deadline {
                break false;
            }
            g = self
                .woken
                .wait_timeout(g, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        };
        drop(g);
        self.sleepers.fetch_sub(1, Ordering::SeqCst);
        changed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn a_wait_ends_at_once_when_the_count_moved_before_it() {
        let a = Activity::default();
        let seen = a.epoch();
        a.bump();
        let t = Instant::now();
        assert!(a.wait(seen, Duration::from_secs(30)));
        assert!(t.elapsed() < Duration::from_secs(15));
    }

    #[test]
    fn a_wait_without_a_bump_ends_by_its_timeout() {
        let a = Activity::default();
        let t = Instant::now();
        assert!(!a.wait(a.epoch(), Duration::from_millis(30)));
        assert!(t.elapsed() >= Duration::from_millis(30));
    }

    #[test]
    fn a_bump_wakes_every_sleeper() {
        let a = Arc::new(Activity::default());
        let seen = a.epoch();
        let sleepers: Vec<_> = (0..3)
            .map(|_| {
                let a = Arc::clone(&a);
                std::thread::spawn(move || {
                    let t = Instant::now();
                    (a.wait(seen, Duration::from_secs(30)), t.elapsed())
                })
            })
            .collect();
        // Long enough for them to be past their spin, asleep.
        std::thread::sleep(Duration::from_millis(50));
        a.bump();
        for s in sleepers {
            let (moved, took) = s.join().expect("sleeper");
            assert!(moved);
            assert!(took < Duration::from_secs(15), "{took:?}");
        }
    }
}
