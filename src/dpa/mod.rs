//! FlexIO semantics for the BlueField-3 DPA: processes, threads and event handlers, RPC,
//! windows, outboxes, DPA memory and DPA-resident queues.
//!
//! Today: [`elf`] (device ELFs: segments, symbols, sections, typed errors) and [`coredump`]
//! (the provisional DPA_PROCESS_COREDUMP image, decoded). The FlexIO host API over them is the
//! next layer of work. The DPA general objects (provisional layouts) and the DPA capability page
//! are in [`crate::mlx5`].

pub mod coredump;
pub mod elf;
