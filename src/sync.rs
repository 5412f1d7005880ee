//! The lock helper of the workspace, and the traced wait.
//!
//! Locks here guard plain data (tables, queues, handles). A thread that panicked while
//! holding one leaves that data as it was at the panic, which every user can still read and
//! release objects from, so a poisoned lock is taken as it is rather than propagated: the
//! panic itself is reported where it happened.

use std::sync::{Mutex, MutexGuard, PoisonError};

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
