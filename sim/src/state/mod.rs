//! The model's state, below everything that acts on it: firmware's object tables, the RC
//! transport's per-QP state, the DPA's processes and threads, the datapath's port. Types and
//! the transitions that keep them consistent; no command decoding, no packet processing.

use std::sync::{Mutex, Weak};

use mlx5_dpa::sync::lock;

pub(crate) mod datapath;
pub(crate) mod dpa;
pub(crate) mod eu;
pub(crate) mod events;
pub(crate) mod objects;
pub(crate) mod qp;
pub(crate) mod rc;
mod tables;

pub(crate) use tables::{limit, Firmware, EQN_BASE};
pub use tables::{FaultPlan, FwStats, MAX_SUB_FUNCTIONS};

/// Everything the model holds, behind one lock.
pub(crate) struct State {
    pub(crate) fw: Firmware,
    pub(crate) dp: datapath::Datapath,
}

/// Runs `f` on the state behind `weak`, if the device still exists (the DPA workers use this
/// for the few lookups an activation needs while it runs outside the lock).
pub(crate) fn with_state_of<R>(
    weak: &Weak<Mutex<State>>,
    f: impl FnOnce(&mut State) -> R,
) -> Option<R> {
    let state = weak.upgrade()?;
    let mut st = lock(&state);
    Some(f(&mut st))
}
