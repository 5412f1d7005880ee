//! The model's state, below everything that acts on it: firmware's object tables, the RC
//! transport's per-QP state, the DPA's processes and threads, the datapath's port. Types and
//! the transitions that keep them consistent; no command decoding, no packet processing.

pub(crate) mod datapath;
pub(crate) mod dpa;
pub(crate) mod events;
pub(crate) mod objects;
pub(crate) mod qp;
pub(crate) mod rc;
mod tables;

pub(crate) use tables::{limit, Firmware, EQN_BASE};
pub use tables::{FaultPlan, FwStats};

/// Everything the model holds, behind one lock.
pub(crate) struct State {
    pub(crate) fw: Firmware,
    pub(crate) dp: datapath::Datapath,
}
