//! FlexIO semantics for the BlueField-3 DPA: processes, threads and event handlers, RPC,
//! windows, outboxes, DPA memory and DPA-resident queues.
//!
//! What is here (FlexIO name in brackets):
//!
//! - [`caps`]: DPA presence, EU topology and limits from the capability pages
//!   (`NotSupported` on a device without a DPA).
//! - [`app`]: device ELFs from files or bytes, or embedded in a host ELF as `.dpa_bin_<name>`
//!   sections, with their entries and signature presence (`flexio_app`).
//! - [`process`]: [`Process`] (`flexio_process_create` / `destroy`, `flexio_err_status_get`,
//!   coredump), DPA memory in size classes (`flexio_buf_dev_alloc` / `free`, [`heap`]), copies
//!   and memset through a force-loopback RC QP pair and an mkey over process memory
//!   (`flexio_host2dev_memcpy`, [`copy`]), and RPC (`flexio_process_call`) through argument
//!   stubs.
//! - [`thread`]: event handlers (`flexio_event_handler_create` / `run` / `destroy`) with
//!   affinity, TLS and default window / outbox; a CQ attaches with `CqEvents::DpaThread`.
//! - [`window`]: windows over host memory (`flexio_window_create` / `destroy`), with the
//!   checked (window id, key, host address) a device program needs.
//! - [`outbox`]: outboxes (`flexio_outbox_create` / `destroy`), ringing queues of one UAR.
//! - [`eu`]: EU groups and EU partitions through ACCESS_REGISTER (`NIC_DPA_EUG_REG`,
//!   `NIC_DPA_EU_PARTITION_REG`), for `Affinity::Group`.
//! - [`elf`] (device ELF parsing) and [`coredump`] (the provisional coredump image).
//!
//! Not yet: queues in DPA memory, message streams and the command queue. The DPA general
//! objects (provisional layouts) and the DPA capability page are in [`crate::mlx5`].

pub mod app;
pub mod caps;
pub mod cmdq;
pub mod copy;
pub mod coredump;
pub mod elf;
pub mod eu;
pub mod heap;
pub mod msg_stream;
pub mod outbox;
pub mod process;
pub mod queues;
pub mod thread;
pub mod window;
pub use process::{DpaBuf, DpaError, ErrStatus, Process, ProcessAttr, ProcessStatus, StepExt};
