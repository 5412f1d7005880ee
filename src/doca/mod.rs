//! DOCA DPA on this project's FlexIO layer: a context over a DPA process, sync events, kernel
//! launch, RPC and DPA memory, with the device side in `fw-blobs` (`doca_dpa_dev.h`,
//! `doca_dpa_dev_sync_event.h`, `runtime/doca_dpa.c`).
//!
//! DOCA DPA (the seed `doca-dpa.txt`; DOCA 2.6's `doca_dpa.h` for the names its samples use)
//! is NVIDIA's higher programming model for the DPA, built on FlexIO. Here it is built on
//! [`crate::dpa`] the same way:
//!
//! | DOCA                                                   | here                                   |
//! |--------------------------------------------------------|----------------------------------------|
//! | `doca_dpa_create` / `set_app` / `start`                | [`Dpa::start`]                         |
//! | `doca_dpa_stop` / `destroy`                            | [`Dpa::stop`], drop                    |
//! | `doca_dpa_get_core_num`, `_num_eus_per_core`, ...      | [`Dpa::core_num`], ...                 |
//! | `doca_dpa_set_log_level` / `get_log_level`             | [`DpaAttr::log_level`], [`Dpa::set_log_level`], [`Dpa::log_level`] |
//! | `doca_dpa_peek_at_last_error`                          | [`Dpa::peek_at_last_error`]            |
//! | `doca_dpa_log_file_set_path`, `doca_dpa_trace_file_set_path` | [`DpaAttr::log_output`], [`DpaAttr::trace_file`] |
//! | the `doca_dpa_fatal.PID.core` / `.crash` files         | [`DpaAttr::fatal_file_prefix`], [`Dpa::fatal_files`] |
//! | `doca_dpa_mem_alloc` / `free`, `h2d` / `d2h_memcpy`, `memset` | [`Dpa::mem_alloc`] (freed on drop), [`Dpa::h2d_memcpy`], ... |
//! | `doca_dpa_rpc`                                         | [`Dpa::rpc`]                           |
//! | `doca_sync_event_create` + locations + `start`         | [`Dpa::sync_event`] with [`SyncEventAttr`] |
//! | `doca_sync_event_get` / `update_set` / `update_add` / `wait_gt` | [`SyncEvent::get`], ...       |
//! | `doca_sync_event_export_to_dpa` / `get_dpa_handle`     | [`SyncEvent::dpa_handle`]              |
//! | `doca_sync_event_export_to_remote_net`, `doca_sync_event_remote_net_create_from_export` / `_export_to_dpa` | [`SyncEvent::export_remote`], [`Dpa::remote_event`] |
//! | `doca_dpa_kernel_launch_update_set` / `_add`           | [`Dpa::kernel_launch_update_set`] / [`Dpa::kernel_launch_update_add`] |
//! | `doca_dpa_thread_create` / `set_func_arg` / `set_local_storage` / `set_affinity` / `start` / `run` / `stop` | [`Dpa::thread_create`], [`DpaThread`] |
//! | `doca_dpa_thread_group_create` / `set_thread` / `start` | [`Dpa::thread_group_create`], [`DpaThreadGroup`] |
//! | `doca_dpa_notification_completion_create` / `start` / `get_dpa_handle` | [`Dpa::notification_completion_create`], [`NotificationCompletion::dpa_handle`] |
//! | `doca_dpa_completion_create` / `set_thread` / `start` / `get_dpa_handle` | [`Dpa::completion_create`], [`CompletionContext`] |
//! | `doca_dpa_async_ops_create` / `attach` / `start` / `get_dpa_handle` | [`Dpa::async_ops_create`], [`AsyncOps`] |
//! | `doca_mmap` with a DPA handle                          | [`Dpa::mmap_dpa`], [`Dpa::mmap_host`], [`DpaMmap::dpa_handle`] |
//! | `doca_buf_arr_create` / `set_params` / `set_target_dpa` / `start` / `get_dpa_handle` | [`Dpa::buf_arr_create`], [`DpaBufArray`] |
//! | `doca_rdma` on the DPA datapath: `doca_ctx_set_datapath_on_dpa`, `doca_rdma_dpa_completion_attach`, `doca_rdma_get_dpa_handle`, `doca_rdma_connection_get_id` | [`Dpa::rdma_create`], [`DpaRdma`] |
//! | `doca_rdma_export` / `doca_rdma_connect`               | [`DpaRdma::export`] ([`RdmaConnection`], [`RdmaConnDetails`]), [`DpaRdma::connect_to`] |
//! | `doca_rdma_set_max_num_connections`, `doca_rdma_connection_get_id` | [`DpaRdma::set_max_connections`], [`RdmaConnection::id`] |
//! | `doca_rdma_srq_create` (DPA datapath), `doca_rdma_create_with_srq` | [`Dpa::rdma_srq_create`], [`Dpa::rdma_create_with_srq`], [`DpaRdmaSrq`] |
//! | `doca_dpa_device_extend`, `doca_dpa_get_dpa_handle`   | [`Dpa::device_extend`], [`Dpa::dpa_handle`] |
//! | `doca_dpa_eu_affinity_*`                              | [`crate::dpa::thread::Affinity`] on [`DpaThread::set_affinity`] |
//! | `doca_dpa_hash_table_create` / `get_dpa_handle`        | [`Dpa::hash_table_create`], [`DpaHashTable::dpa_handle`] |
//!
//! # How it works
//! - **The context** is a [`crate::dpa::Process`] of the application, a window and a key over
//!   a page of host memory holding the context's sync-event counters and launch-done words, an
//!   outbox for the threads that log, and the default message stream that carries
//!   `doca_dpa_dev_log` to the host. The runtime learns the window and key from its global
//!   `__doca_dpa_rt`, written at start (`mlx5_dpa_doca.h`, this project's layout).
//! - **A sync event** is a 64-bit counter in that page. The host reads and updates it with
//!   atomics; DPA code reaches it through the window, with the write-back and read-invalidate
//!   fences of the DPA memory model, and adds from DPA threads take an AMO lock. Its DPA
//!   handle is the counter's host address. An event with both CPU and DPA publishers is
//!   refused: a CPU add and a DPA add to the same counter could lose one.
//! - **A kernel launch** writes a launch block (kernel address, argument registers, thread
//!   count, completion event) to DPA memory and runs that many pooled DPA threads on the
//!   runtime's `__doca_dpa_kernel_entry`, which takes a rank, calls the kernel with the
//!   arguments in `a0..a7` (the RISC-V calling convention, [`KernelArg`]) and, in the last
//!   thread to finish, updates the completion event and marks the launch done for the host.
//!   A launcher thread of the context starts launches in the order they were made; a launch
//!   with a wait event starts once the event's counter exceeds the threshold, and the launches
//!   made after it start after it (DOCA requires that a kernel depend only on kernels launched
//!   before it). It reclaims threads and launch blocks as launches finish.
//! - **DPA threads** are FlexIO threads on the runtime's `__doca_dpa_thread_entry` with a
//!   block naming the user's kernel and argument; **notification completions** are a DPA CQ
//!   bound to the thread and a DPA SQ completing into it: `doca_dpa_dev_thread_notify` posts
//!   a NOP asking for a CQE, which activates the thread (module `thread`).
//!
//! - **Errors and traces.** When a waiting call sees the process fail (`SyncEvent::wait_gt`
//!   reads its status every 20 ms, `Dpa::peek_at_last_error` at each call), the context enters
//!   the error state naming the thread, pc and cause, and DOCA's fatal-error files are written: the coredump image as
//!   `<prefix>.<pid>.core` and a decoded report as `<prefix>.<pid>.crash`. `doca_dpa_dev_trace`
//!   records travel on a tracer message stream (stream 1) to the trace file, a line each.
//!
//! - **Completion contexts and async ops** (module `async_ops`): a completion context is a CQ
//!   in DPA memory (bound to a DPA thread, or polled); an element is a CQE. Async ops are an RC
//!   QP in DPA memory connected in loopback to a host QP and completing into a context;
//!   `doca_dpa_dev_post_memcpy` is an RDMA WRITE from one memory map (a key over DPA or host
//!   memory) to another. Their user data is kept by QPN in the runtime's `__doca_dpa_udata`.
//!
//! - **Hash tables** (module `hash_table`): open addressing in DPA memory under an AMO lock.
//! - **RDMA from the DPA** (module `rdma`): an RC QP in DPA memory with a receive queue,
//!   attached to a completion context, connected to another DPA RDMA or a host QP; DPA code
//!   posts reads, writes (with immediate), sends (with immediate), receives and atomic adds,
//!   and signals peers' exported sync events (set: an RDMA WRITE; add: an atomic add).
//!
//! - **Buffers** (module `buf_arr`): arrays of {address, length, map} in DPA memory that DPA
//!   code reads and sets (`doca_dpa_dev_buf.h`); a host map's handle carries
//!   [`MLX5_DPA_DOCA_MMAP_HOST`], and DPA code reaches its memory through the context's window.
//!   `doca_dpa_dev_sync_event_post_wait_gt` / `_ne` post the NIC's WAIT-on-data work request on
//!   async ops. The device headers declare DOCA 2.6's or 2.7's buffer and RDMA calls instead
//!   of 2.9's when the build states that DOCA version (`-D DOCA_VERSION_MINOR=6`; see
//!   `fw-blobs/include/doca_version.h`).
//!
//! Extended contexts ([`Dpa::device_extend`]) put a context's RDMAs, completion contexts,
//! async ops and memory maps on another function of the device (an SF), through the aliases
//! of `dpa::Process::extend`; DPA code selects one with `doca_dpa_dev_device_set`.

mod async_ops;
mod buf_arr;
mod context;
mod hash_table;
mod launch;
mod rdma;
mod shared;
mod sync_event;
mod thread;

use std::time::Duration;

use crate::dpa::DpaError;
use crate::mem::MemError;

pub use async_ops::{
    AsyncOps, CompletionContext, DpaMmap, COMPLETION_LOG_MAX_USER_DATA, MAX_ASYNC_OPS,
};
pub use buf_arr::{
    DpaBufArray, DpaBufDesc, DPA_BUF_SIZE, MAX_BUF_ARR_ELEMENTS, MLX5_DPA_DOCA_MMAP_HOST,
};
pub use context::{Dpa, DpaAttr, LogLevel, KERNEL_MAX_RUN_TIME, MAX_THREADS_PER_KERNEL};
pub use hash_table::{DpaHashTable, MAX_HASH_TABLE_ENTRIES};
pub use launch::KernelArg;
pub use rdma::{
    DpaRdma, DpaRdmaSrq, RdmaConnDetails, RdmaConnection, MAX_RDMA_CONNECTIONS,
    RDMA_CONN_DETAILS_LEN,
};
pub use shared::{MAX_LAUNCHES_IN_FLIGHT, MAX_SYNC_EVENTS};
pub use sync_event::{RemoteEventExport, RemoteSyncEvent, SyncEvent, SyncEventAttr};
pub use thread::{DpaThread, DpaThreadGroup, NotificationCompletion, NOTIFY_QUEUE_LOG};

/// The greatest wait threshold (and event value a launch may wait for) DOCA documents as valid.
pub const MAX_WAIT_THRESHOLD: u64 = 254;

/// Why a DOCA DPA call failed (DOCA's `doca_error_t`, with the reason).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DocaError {
    /// The FlexIO layer below failed (firmware refusal, fault, transport).
    #[error(transparent)]
    Dpa(#[from] DpaError),
    #[error(transparent)]
    Mem(#[from] MemError),
    /// An argument out of range (`DOCA_ERROR_INVALID_VALUE`).
    #[error("invalid value: {0}")]
    InvalidValue(String),
    /// The object does not allow this (`DOCA_ERROR_NOT_PERMITTED`): an event used where its
    /// locations do not allow it, or an object of another context.
    #[error("not permitted: {0}")]
    NotPermitted(String),
    /// A fixed pool of the context is used up (`DOCA_ERROR_NO_MEMORY`).
    #[error("no more {0} in this context")]
    NoMemory(&'static str),
    /// A bounded wait ended.
    #[error("timed out after {after:?} waiting for {what}")]
    Timeout { what: &'static str, after: Duration },
    /// The context is in the error state (`DOCA_ERROR_BAD_STATE` after a fatal device error):
    /// it must be destroyed.
    #[error("the DPA context failed: {0}")]
    Fatal(String),
}
