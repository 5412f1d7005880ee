//! The model's state, below everything that acts on it: firmware's object tables, the RC
//! transport's per-QP state, the DPA's processes and threads, the datapath's port. Types and
//! the transitions that keep them consistent; no command decoding, no packet processing.

pub(crate) mod objects;
pub(crate) mod rc;
