//! FlexIO semantics for the BlueField-3 DPA: processes, threads and event handlers, RPC,
//! windows, outboxes, DPA memory and DPA-resident queues.
//!
//! What is here (FlexIO name in brackets):
//!
//! - [`caps`]: DPA presence, EU topology and limits from the capability pages
//!   (`NotSupported` on a device without a DPA).
//! - [`app`]: device ELFs from files or bytes, or embedded in a host ELF as `.dpa_bin_<name>`
//!   sections, with their entries and signature presence (`flexio_app`).
//! - [`hw_model`]: DPA hardware models; [`app_select`]: the selection among per-model copies
//!   of an application (`flexio_app_get`, `FLEXIO_HW_MODEL_DEF`).
//! - [`process`]: [`Process`] (`flexio_process_create` / `destroy`, `flexio_err_status_get`,
//!   coredump), DPA memory in size classes (`flexio_buf_dev_alloc` / `free`, [`heap`]), copies
//!   and memset through a force-loopback RC QP pair and an mkey over process memory
//!   (`flexio_host2dev_memcpy`, [`copy`]), and RPC (`flexio_process_call`) as FlexIO's pack /
//!   unpack, with the runtime's generic unpack for up to eight u64 arguments.
//! - [`thread`]: event handlers (`flexio_event_handler_create` / `run` / `destroy`) with
//!   affinity, TLS and default window / outbox; a CQ attaches with `CqEvents::DpaThread`.
//! - [`window`]: windows over host memory (`flexio_window_create` / `destroy`), with the
//!   checked (window id, key, host address) a device program needs.
//! - [`outbox`]: outboxes (`flexio_outbox_create` / `destroy`), ringing queues of one UAR.
//! - [`eu`]: EU groups and EU partitions through ACCESS_REGISTER (`NIC_DPA_EUG_REG`,
//!   `NIC_DPA_EU_PARTITION_REG`), for `Affinity::Group`.
//! - [`queues`]: CQ / Ethernet SQ / RQ / RC QP whose rings and doorbell records live in DPA
//!   memory (`flexio_qmem`, `flexio_cq_create` / `sq` / `rq` / `qp`), CQs bound to a thread
//!   (`apu_cq`), and keys over DPA memory; their descriptors are what device programs take.
//! - [`msg_stream`]: device print to the host (`flexio_msg_stream_create`), several streams
//!   with levels, to stdout, a file, a writer or memory.
//! - [`cmdq`]: the command queue (`flexio_cmdq_create` / `task_add` / `state_running`):
//!   tasks (function, argument) in batches to worker threads.
//! - [`elf`] (device ELF parsing) and [`coredump`] (the provisional coredump image).
//!
//! Multi-step set-ups name the failing step ([`DpaError::Step`], [`StepExt`]). The DPA general
//! objects (provisional layouts) and the DPA capability page are in [`crate::mlx5`]; the
//! FlexIO samples are in `examples/` (`flexio_rpc`, `flexio_window`, `flexio_multithread`,
//! `flexio_packet_processor`).

pub mod app;
pub mod app_select;
/// The signature format ([`crate::image::auth`], re-exported where FlexIO users look).
pub use crate::image::auth;
pub mod caps;
pub mod cmdq;
pub mod copy;
pub mod coredump;
/// The device ELF format ([`crate::image::elf`]).
pub use crate::image::elf;
pub mod embed;
pub mod eu;
mod extend;
#[doc(hidden)]
pub mod fuzzing;
pub mod heap;
pub mod hw_model;
pub mod msg_stream;
pub mod outbox;
pub mod process;
pub mod queues;
mod rpc;
pub mod thread;
pub mod version;
pub mod window;
pub use app_select::{app_get, AppSelectAttr, HwModelSel};
pub use hw_model::HwModel;
pub use process::{DpaBuf, DpaError, ErrStatus, Process, ProcessAttr, ProcessStatus, StepExt};
