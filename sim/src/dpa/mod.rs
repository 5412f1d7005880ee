//! The model's DPA at work: loading a process's ELF, running activations on the EUs (the hart's
//! initial state, the bus it sees, the FlexIO-OS calls), applying their effects, the watchdog
//! and coredumps. The state it works on (processes, threads, EUs, process memory, the address
//! map) is `crate::state::dpa`.

pub(crate) mod coredump;
/// A debugger attached to a DPA process (its state lives with the process's, in the state layer).
pub use crate::state::dpa::debug;
pub(crate) mod exec;
pub(crate) mod loader;
pub(crate) mod pool;
pub(crate) mod runtime;

pub(crate) use pool::Exec;

pub use crate::state::dpa::{
    device_code, error_syndrome, map, outbox_reg, rtos_call, rtos_errno, DpaAccessError, DpaStats,
};
