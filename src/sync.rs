//! The one lock helper of the workspace.
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
