//! The DOCA DPA context (`doca_dpa`): a DPA process of an application, the host page its sync
//! events and launch-done words live in, and the launcher.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::devx::Devx;
use crate::dpa::app::App;
use crate::dpa::msg_stream::{MsgLevel, MsgOutput, MsgStream, MsgStreamAttr};
use crate::dpa::outbox::Outbox;
use crate::dpa::window::Window;
use crate::dpa::{DpaBuf, Process, ProcessAttr, StepExt};
use crate::mem::{Access, MemoryRegion};
use crate::sync::lock;

use super::async_ops::{AsyncOps, CompletionContext, DpaMmap};
use super::buf_arr::DpaBufArray;
use super::hash_table::DpaHashTable;
use super::launch::{self, CompOp, KernelArg, LaunchCtx, Launcher, Pending};
use super::rdma::{DpaRdma, DpaRdmaSrq};
use super::shared::Shared;
use super::sync_event::{RemoteEventExport, RemoteSyncEvent, SyncEvent, SyncEventAttr};
use super::thread::{DpaThread, DpaThreadGroup, NotificationCompletion, ThreadCtx};
use super::{DocaError, MAX_WAIT_THRESHOLD};

use super::shared::PAGE_LEN;
/// Most threads one launch may ask for: half the 256 DPA threads of a BlueField-3 (the seed),
/// so that the context's own threads and a second launch still fit.
pub const MAX_THREADS_PER_KERNEL: u32 = 128;

/// How long a kernel may run before the DPA's watchdog stops it
/// ([`crate::mlx5::caps::DPA_KERNEL_MAX_RUN_TIME`], provisional).
pub const KERNEL_MAX_RUN_TIME: Duration = crate::mlx5::caps::DPA_KERNEL_MAX_RUN_TIME;

/// The trace records' stream (`MLX5_DPA_DOCA_TRACE_STREAM`, mlx5_dpa_doca.h).
const TRACE_STREAM: u32 = 1;
/// `__doca_dpa_rt.magic` (mlx5_dpa_doca.h).
const RT_MAGIC: u32 = 0x444f_4341;
/// The runtime's global block.
const RT_SYMBOL: &str = "__doca_dpa_rt";
/// The runtime's table of async ops' user data.
const UDATA_SYMBOL: &str = "__doca_dpa_udata";

/// Device log levels (`doca_dpa_dev_log_level_t`): a message passes when its level is at most
/// the context's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum LogLevel {
    Disable = 10,
    Crit = 20,
    Error = 30,
    Warning = 40,
    #[default]
    Info = 50,
    Debug = 60,
}

/// How to start a context.
#[derive(Debug, Clone, Default)]
pub struct DpaAttr {
    /// `doca_dpa_set_log_level`: the most verbose device log level delivered.
    pub log_level: LogLevel,
    /// Where device log lines go (DOCA writes them to the application's output;
    /// `doca_dpa_log_file_set_path` is `MsgOutput::File`).
    pub log_output: MsgOutput,
    /// `doca_dpa_trace_file_set_path`: where `doca_dpa_dev_trace` records go, one line each
    /// (the five values in hex; this project's format: DOCA's trace file format is not
    /// public). `None`: records are dropped on the device.
    pub trace_file: Option<std::path::PathBuf>,
    /// Where the fatal-error files go, as `<prefix>.<pid>.core` (the coredump image) and
    /// `<prefix>.<pid>.crash` (what failed, decoded): DOCA's `/tmp/doca_dpa_fatal`, or the log
    /// file's path when the log goes to a file. `Some` overrides both.
    pub fatal_file_prefix: Option<std::path::PathBuf>,
}

/// DOCA's default prefix of the fatal-error files.
pub const FATAL_FILE_PREFIX: &str = "/tmp/doca_dpa_fatal";

/// The trace file's one record format (`doca_dpa_dev_trace`'s five values).
const TRACE_FORMAT: &str = "%#lx %#lx %#lx %#lx %#lx\n";

/// A DOCA DPA context. Dropping it stops it: the launcher first (launches not yet started are
/// dropped), then the log and trace streams, the outbox and the window; the process and the
/// host page go once no sync event of the context is left either (an event reads the
/// process's status while it waits).
#[derive(Debug)]
pub struct Dpa {
    // Fields drop in declaration order.
    base: Arc<DpaBase>,
    threads: ThreadCtx,
    /// The process; for an extended context ([`Dpa::device_extend`]) a handle whose queues,
    /// keys and UAR are on the other function.
    process: Process,
    shared: Arc<Shared>,
    /// `doca_dpa_get_dpa_handle`: `struct doca_dpa_device` in DPA memory.
    handle: DpaBuf,
    extended: bool,
}

/// What a base context and its extended contexts share: the launcher, the log and trace
/// streams, the runtime's outbox and window. The last context to go stops the launcher.
#[derive(Debug)]
struct DpaBase {
    // Fields drop in declaration order.
    launcher: Mutex<Option<LauncherHandle>>,
    rt_daddr: u64,
    log_level: std::sync::atomic::AtomicU32,
    stream: Mutex<Option<MsgStream>>,
    trace: Mutex<Option<MsgStream>>,
    _outbox: Outbox,
    _window: Window,
    name: String,
}

impl Drop for DpaBase {
    fn drop(&mut self) {
        if let Some(mut l) = lock(&self.launcher).take() {
            l.0.stop();
        }
    }
}

/// `struct doca_dpa_device` (mlx5_dpa_doca.h): magic, then the function's vhca_id.
const DEVICE_MAGIC: u32 = 0x4450_4144;

/// Writes a context's device handle block.
fn device_block(process: &Process) -> Result<DpaBuf, DocaError> {
    const H: &str = "writing the context's device handle";
    let buf = process.alloc(8).step(H)?;
    let mut b = [0u8; 8];
    b[..4].copy_from_slice(&DEVICE_MAGIC.to_le_bytes());
    b[4..].copy_from_slice(&u32::from(process.vhca_id()).to_le_bytes());
    process.copy_to_dev(buf.daddr(), &b).step(H)?;
    Ok(buf)
}

/// The launcher, named for Debug.
struct LauncherHandle(Launcher);

impl std::fmt::Debug for LauncherHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Launcher")
    }
}

impl Dpa {
    /// Creates and starts a context running `app` on `dev` (`doca_dpa_create`,
    /// `doca_dpa_set_app`, `doca_dpa_start`).
    ///
    /// # Errors
    /// [`DocaError::Dpa`] naming the failing step (no DPA, a firmware refusal);
    /// [`DocaError::InvalidValue`] for an application built without the DOCA DPA runtime.
    /// What was made is released.
    pub fn start(dev: &Arc<dyn Devx>, app: &App, attr: &DpaAttr) -> Result<Dpa, DocaError> {
        let process = Process::from_app(dev, app, &ProcessAttr::default())
            .step("creating the DPA process")?;
        let rt = process.symbol(RT_SYMBOL).map_err(|_| {
            DocaError::InvalidValue(format!(
                "application {:?} has no {RT_SYMBOL}: it was not built with the DOCA DPA runtime",
                app.name()
            ))
        })?;
        const PAGE: &str = "registering the context's host page";
        // Remote rights: peers of the context's RDMAs signal exported events in it.
        let page = MemoryRegion::alloc(
            dev,
            process.pd(),
            PAGE_LEN,
            Access::LOCAL_WRITE | Access::REMOTE_WRITE | Access::REMOTE_ATOMIC,
        )
        .map_err(crate::dpa::DpaError::from)
        .step(PAGE)?;
        const WINDOW: &str = "creating the context's window";
        let window = process.window(process.pd()).step(WINDOW)?;
        let wb = window.host_buf(page.mkey(), 0, PAGE_LEN).step(WINDOW)?;
        let outbox = process
            .outbox(process.uar())
            .step("creating the context's outbox")?;
        let stream = MsgStream::create(
            &process,
            &MsgStreamAttr {
                output: attr.log_output.clone(),
                ..MsgStreamAttr::default()
            },
        )
        .step("creating the device log stream")?;
        let trace = match &attr.trace_file {
            None => None,
            Some(path) => Some(
                MsgStream::create(
                    &process,
                    &MsgStreamAttr {
                        stream_id: TRACE_STREAM,
                        level: MsgLevel::Debug,
                        output: MsgOutput::File(path.clone()),
                        tracer_formats: Some(Arc::from(vec![TRACE_FORMAT.to_string()])),
                        ..MsgStreamAttr::default()
                    },
                )
                .step("creating the trace stream")?,
            ),
        };
        let fatal_prefix =
            attr.fatal_file_prefix
                .clone()
                .unwrap_or_else(|| match &attr.log_output {
                    MsgOutput::File(p) => p.clone(),
                    _ => std::path::PathBuf::from(FATAL_FILE_PREFIX),
                });
        let mut block = [0u8; 24];
        block[0..4].copy_from_slice(&RT_MAGIC.to_le_bytes());
        block[4..8].copy_from_slice(&wb.window_id.to_le_bytes());
        block[8..12].copy_from_slice(&wb.mkey.0.to_le_bytes());
        block[12..16].copy_from_slice(&(attr.log_level as u32).to_le_bytes());
        block[16..20].copy_from_slice(&u32::from(process.vhca_id()).to_le_bytes());
        process
            .copy_to_dev(rt, &block)
            .step("writing the runtime's context block")?;
        let udata = process.symbol(UDATA_SYMBOL)?;
        let shared = Arc::new(Shared::new(
            page,
            wb.haddr,
            process.clone(),
            fatal_prefix,
            udata,
        ));
        let launcher = Launcher::start(LaunchCtx {
            process: process.clone(),
            shared: Arc::clone(&shared),
            outbox_id: outbox.id(),
            window_id: wb.window_id,
        })?;
        let threads = ThreadCtx {
            shared: Arc::clone(&shared),
            dev: Arc::clone(dev),
            process: process.clone(),
            outbox_id: outbox.id(),
            window_id: wb.window_id,
        };
        let handle = device_block(&process)?;
        Ok(Dpa {
            base: Arc::new(DpaBase {
                launcher: Mutex::new(Some(LauncherHandle(launcher))),
                rt_daddr: rt,
                log_level: std::sync::atomic::AtomicU32::new(attr.log_level as u32),
                stream: Mutex::new(Some(stream)),
                trace: Mutex::new(trace),
                _outbox: outbox,
                _window: window,
                name: app.name().to_string(),
            }),
            threads,
            process,
            shared,
            handle,
            extended: false,
        })
    }

    /// `doca_dpa_device_extend`: a context on `other`, another function of this context's
    /// device (a BlueField's SF), sharing this one's process, memory, threads, sync events and
    /// launches. Completion contexts, async ops, RDMAs and memory maps made on it are that
    /// function's (their queues in the process's memory, through the aliases of
    /// `dpa::Process::extend`); DPA code selects the extended context with
    /// `doca_dpa_dev_device_set(handle)` ([`Dpa::dpa_handle`]) before using them. It is
    /// started already, and keeps the base context's launcher and streams while it exists.
    ///
    /// # Errors
    /// [`DocaError::NotPermitted`] on an extended context or for `other` being this context's
    /// own function; refusals of the grants, aliases or the UAR extension, naming the step.
    pub fn device_extend(&self, other: &Arc<dyn Devx>) -> Result<Dpa, DocaError> {
        if self.extended {
            return Err(DocaError::NotPermitted(
                "extending an extended context (extend the base context)".into(),
            ));
        }
        let process = self.process.extend(other).map_err(|e| match e {
            crate::dpa::DpaError::BadArgs(why) => DocaError::NotPermitted(why),
            e => DocaError::from(e),
        })?;
        let handle = device_block(&process)?;
        Ok(Dpa {
            base: Arc::clone(&self.base),
            threads: self.threads.clone(),
            process,
            shared: Arc::clone(&self.shared),
            handle,
            extended: true,
        })
    }

    /// `doca_dpa_get_dpa_handle`: the context as DPA code names it (`doca_dpa_dev_t`), for
    /// `doca_dpa_dev_device_set`.
    pub fn dpa_handle(&self) -> u64 {
        self.handle.daddr()
    }

    /// Whether this is an extended context ([`Dpa::device_extend`]).
    pub fn is_extended(&self) -> bool {
        self.extended
    }

    /// Stops the context (`doca_dpa_stop` + `doca_dpa_destroy`); the same as dropping it, after
    /// which the error state, if any, is returned.
    ///
    /// # Errors
    /// [`DocaError::Fatal`] when the context was in the error state.
    pub fn stop(self) -> Result<(), DocaError> {
        if !self.extended {
            if let Some(mut l) = lock(&self.base.launcher).take() {
                l.0.stop();
            }
            lock(&self.base.stream).take();
            lock(&self.base.trace).take();
        }
        match self.shared.failure() {
            Some(why) => Err(DocaError::Fatal(why)),
            None => Ok(()),
        }
    }

    /// Delivers the device log lines that have arrived, waiting until none has come for a
    /// moment or `timeout` passed (the log travels as message-stream SENDs, so a line a kernel
    /// logged before setting its completion event may still be on its way when the host sees
    /// the event). Returns how many lines were delivered meanwhile.
    ///
    /// # Errors
    /// The stream's receive queue failed, or writing to the output did.
    pub fn flush_log(&self, timeout: Duration) -> Result<u64, DocaError> {
        let mut n = 0;
        for s in [&self.base.stream, &self.base.trace] {
            if let Some(s) = lock(s).as_mut() {
                n += s.flush(timeout)?;
            }
        }
        Ok(n)
    }

    /// The fatal-error files written when the context entered the error state with a
    /// coredump (`<prefix>.<pid>.core`, `<prefix>.<pid>.crash`), if any.
    pub fn fatal_files(&self) -> Option<(std::path::PathBuf, std::path::PathBuf)> {
        self.shared.fatal_files()
    }

    /// `doca_dpa_set_log_level`: the most verbose device log level delivered from now on.
    ///
    /// # Errors
    /// The copy into the runtime's block failed.
    pub fn set_log_level(&self, level: LogLevel) -> Result<(), DocaError> {
        self.process
            .copy_to_dev(self.base.rt_daddr + 12, &(level as u32).to_le_bytes())
            .step("writing the device log level")?;
        self.base
            .log_level
            .store(level as u32, std::sync::atomic::Ordering::Relaxed);
        Ok(())
    }

    /// `doca_dpa_get_log_level`.
    pub fn log_level(&self) -> LogLevel {
        match self
            .base
            .log_level
            .load(std::sync::atomic::Ordering::Relaxed)
        {
            10 => LogLevel::Disable,
            20 => LogLevel::Crit,
            30 => LogLevel::Error,
            40 => LogLevel::Warning,
            60 => LogLevel::Debug,
            _ => LogLevel::Info,
        }
    }

    /// The application's name.
    pub fn app_name(&self) -> &str {
        &self.base.name
    }

    /// The process underneath (FlexIO), for what DOCA does not cover.
    pub fn process(&self) -> &Process {
        &self.process
    }

    /// `doca_dpa_peek_at_last_error`: reads the process's status from the device; `Ok` while
    /// the context is healthy. Once a DPA thread has faulted (or a launch could not be
    /// started) the context is in the error state, which stays until it is destroyed, and
    /// DOCA's fatal-error files have been written ([`Dpa::fatal_files`]).
    ///
    /// # Errors
    /// [`DocaError::Fatal`] naming the thread and the cause; the status query's own failure.
    pub fn peek_at_last_error(&self) -> Result<(), DocaError> {
        self.shared.check()
    }

    /// `doca_dpa_get_core_num`.
    pub fn core_num(&self) -> u32 {
        self.process.caps().topology.cores
    }

    /// `doca_dpa_get_num_eus_per_core`.
    pub fn num_eus_per_core(&self) -> u32 {
        self.process.caps().topology.eus_per_core
    }

    /// `doca_dpa_get_total_num_eus_available`: the EUs user threads may run on.
    pub fn total_num_eus_available(&self) -> u32 {
        self.process.caps().topology.usable_eus()
    }

    /// `doca_dpa_get_kernel_max_run_time`: how long a kernel may stay on its EU before the
    /// watchdog stops it and the context fails ([`KERNEL_MAX_RUN_TIME`], provisional: no
    /// public source gives BlueField-3's; the model's watchdog budget matches it).
    pub fn kernel_max_run_time(&self) -> Duration {
        KERNEL_MAX_RUN_TIME
    }

    /// `doca_dpa_get_max_threads_per_kernel`.
    pub fn max_threads_per_kernel(&self) -> u32 {
        let device = u32::try_from(self.process.caps().max_threads_per_process).unwrap_or(u32::MAX);
        MAX_THREADS_PER_KERNEL.min(device)
    }

    /// A sync event of this context (`doca_sync_event_create`, its locations, `start`).
    ///
    /// # Errors
    /// [`DocaError::InvalidValue`] / [`DocaError::NotPermitted`] for locations DOCA refuses or
    /// this implementation cannot keep atomic; [`DocaError::NoMemory`] past
    /// [`super::MAX_SYNC_EVENTS`].
    pub fn sync_event(&self, attr: SyncEventAttr) -> Result<SyncEvent, DocaError> {
        SyncEvent::new(&self.shared, attr)
    }

    /// `doca_dpa_thread_create`: a DPA thread of this context, to be set up and started.
    pub fn thread_create(&self) -> DpaThread {
        DpaThread::new(self.threads.clone())
    }

    /// `doca_dpa_thread_group_create`: a group of `num_threads` DPA threads, set by rank.
    ///
    /// # Errors
    /// [`DocaError::InvalidValue`] for 0 or more than 256 threads.
    pub fn thread_group_create(&self, num_threads: u32) -> Result<DpaThreadGroup, DocaError> {
        DpaThreadGroup::new(Arc::clone(&self.shared), self.process.clone(), num_threads)
    }

    /// `doca_dpa_notification_completion_create` + `start`: DPA code of this context may now
    /// trigger `thread` with the completion's handle (`doca_dpa_dev_thread_notify`). The thread
    /// must be started and belong to this context; run it afterwards.
    ///
    /// # Errors
    /// [`DocaError::NotPermitted`] for an unstarted thread, a thread of another context or one
    /// that already has a notification completion; firmware refusals, naming the step.
    pub fn notification_completion_create(
        &self,
        thread: &mut DpaThread,
    ) -> Result<NotificationCompletion, DocaError> {
        if !thread.in_context(&self.shared) {
            return Err(DocaError::NotPermitted(
                "the DPA thread belongs to another DPA context".into(),
            ));
        }
        NotificationCompletion::create(&self.threads, thread)
    }

    /// `doca_dpa_completion_create`: a completion context of `queue_size` elements (rounded
    /// up to a power of two), to be given a thread and started.
    ///
    /// # Errors
    /// [`DocaError::InvalidValue`] for a size of 0 or above 2^15.
    pub fn completion_create(&self, queue_size: u32) -> Result<CompletionContext, DocaError> {
        CompletionContext::new(Arc::clone(&self.shared), self.process.clone(), queue_size)
    }

    /// `doca_dpa_async_ops_create`: async ops with room for `queue_size` outstanding
    /// operations, whose completions report `user_data` (below 2^24), to be attached and
    /// started.
    ///
    /// # Errors
    /// [`DocaError::InvalidValue`] for a size of 0 or above 2^15, or user data of 2^24 or more.
    pub fn async_ops_create(&self, queue_size: u32, user_data: u64) -> Result<AsyncOps, DocaError> {
        AsyncOps::new(
            Arc::clone(self.process.dev()),
            self.process.clone(),
            Arc::clone(&self.shared),
            queue_size,
            user_data,
        )
    }

    /// A memory map over DPA buffer `buf` that DPA code names by [`DpaMmap::dpa_handle`]
    /// (`doca_mmap_set_dpa_memrange` + `doca_mmap_dev_get_dpa_handle`).
    ///
    /// # Errors
    /// Firmware refusals, naming the step.
    pub fn mmap_dpa(&self, buf: &DpaBuf) -> Result<DpaMmap, DocaError> {
        DpaMmap::over_dpa(&self.process, buf)
    }

    /// A memory map over `len` bytes of new host memory, registered for the DPA's RDMA.
    ///
    /// # Errors
    /// Mapping or registration failed.
    pub fn mmap_host(&self, len: usize) -> Result<DpaMmap, DocaError> {
        DpaMmap::host(self.process.dev(), &self.process, len)
    }

    /// `doca_buf_arr_create` + `doca_buf_arr_set_target_dpa`: an array of `num_elements`
    /// buffers for DPA code, to be configured ([`DpaBufArray::set_params`]) and started.
    ///
    /// # Errors
    /// [`DocaError::InvalidValue`] for 0 or more than
    /// [`MAX_BUF_ARR_ELEMENTS`](super::MAX_BUF_ARR_ELEMENTS) buffers.
    pub fn buf_arr_create(&self, num_elements: u32) -> Result<DpaBufArray, DocaError> {
        DpaBufArray::create(self.process.clone(), num_elements)
    }

    /// A DPA RDMA (`doca_rdma_create` + `doca_ctx_set_datapath_on_dpa`) with room for
    /// `queue_size` outstanding sends and receives, to be attached, started and connected.
    ///
    /// # Errors
    /// [`DocaError::InvalidValue`] for a size of 0 or above 2^15.
    pub fn rdma_create(&self, queue_size: u32) -> Result<DpaRdma, DocaError> {
        DpaRdma::new(
            self.process.clone(),
            Arc::clone(&self.shared),
            queue_size,
            None,
        )
    }

    /// `doca_rdma_srq_create` + `doca_rdma_srq_set_shared_recv_queue_size` +
    /// `doca_ctx_set_datapath_on_dpa` + `doca_ctx_start`: a shared receive queue in DPA memory
    /// of `size` receives (rounded up to a power of two), for RDMAs created on it.
    ///
    /// # Errors
    /// [`DocaError::InvalidValue`] for a size of 0 or above 2^15; firmware refusals, naming
    /// the step.
    pub fn rdma_srq_create(&self, size: u32) -> Result<DpaRdmaSrq, DocaError> {
        DpaRdmaSrq::new(&self.process, &self.shared, size)
    }

    /// `doca_rdma_create_with_srq` + `doca_ctx_set_datapath_on_dpa`: a DPA RDMA whose
    /// connections receive from `srq` (of this context) instead of a queue of its own;
    /// `queue_size` sizes its send queues.
    ///
    /// # Errors
    /// As [`Dpa::rdma_create`]; [`DocaError::NotPermitted`] for another context's queue.
    pub fn rdma_create_with_srq(
        &self,
        srq: &DpaRdmaSrq,
        queue_size: u32,
    ) -> Result<DpaRdma, DocaError> {
        DpaRdma::new(
            self.process.clone(),
            Arc::clone(&self.shared),
            queue_size,
            Some(srq.clone()),
        )
    }

    /// `doca_sync_event_remote_net_create_from_export` + `_export_to_dpa`: a peer's exported
    /// event as DPA code of this context names it (`doca_dpa_dev_sync_event_remote_net_t`),
    /// for `doca_dpa_dev_rdma_signal_set` / `_add` on an RDMA connected to that peer.
    ///
    /// # Errors
    /// Allocation or copy failures, naming the step.
    pub fn remote_event(&self, export: RemoteEventExport) -> Result<RemoteSyncEvent, DocaError> {
        RemoteSyncEvent::new(&self.process, export)
    }

    /// `doca_dpa_hash_table_create`: a hash table for `num_entries` keys in DPA memory.
    ///
    /// # Errors
    /// [`DocaError::InvalidValue`] for 0 or more than
    /// [`MAX_HASH_TABLE_ENTRIES`](super::MAX_HASH_TABLE_ENTRIES) entries; allocation or copy
    /// failures, naming the step.
    pub fn hash_table_create(&self, num_entries: u32) -> Result<DpaHashTable, DocaError> {
        DpaHashTable::create(&self.process, num_entries)
    }

    /// `doca_dpa_mem_alloc`: DPA memory, freed when the buffer is dropped (`doca_dpa_mem_free`).
    ///
    /// # Errors
    /// A zero or too large size; firmware refusal.
    pub fn mem_alloc(&self, size: u64) -> Result<DpaBuf, DocaError> {
        Ok(self.process.alloc(size)?)
    }

    /// `doca_dpa_h2d_memcpy`: host bytes to DPA memory.
    ///
    /// # Errors
    /// A range outside DPA memory; the copy failed.
    pub fn h2d_memcpy(&self, dst: u64, src: &[u8]) -> Result<(), DocaError> {
        Ok(self.process.copy_to_dev(dst, src)?)
    }

    /// `doca_dpa_d2h_memcpy`: DPA memory to host bytes.
    ///
    /// # Errors
    /// As [`Dpa::h2d_memcpy`].
    pub fn d2h_memcpy(&self, dst: &mut [u8], src: u64) -> Result<(), DocaError> {
        Ok(self.process.copy_from_dev(src, dst)?)
    }

    /// `doca_dpa_h2d_buf_memcpy`: `len` bytes at `offset` of a host memory map (a DOCA buffer
    /// over it) to DPA memory at `dst`.
    ///
    /// # Errors
    /// [`DocaError::InvalidValue`] for a map over DPA memory or a range outside the map; as
    /// [`Dpa::h2d_memcpy`].
    pub fn h2d_buf_memcpy(
        &self,
        dst: u64,
        map: &DpaMmap,
        offset: usize,
        len: usize,
    ) -> Result<(), DocaError> {
        let mem = host_buf(map, offset, len)?;
        let mut bytes = vec![0u8; len];
        mem.read(offset, &mut bytes)
            .map_err(|e| DocaError::InvalidValue(format!("host buffer: {e}")))?;
        self.h2d_memcpy(dst, &bytes)
    }

    /// `doca_dpa_d2h_buf_memcpy`: `len` bytes of DPA memory at `src` to `offset` of a host
    /// memory map.
    ///
    /// # Errors
    /// As [`Dpa::h2d_buf_memcpy`].
    pub fn d2h_buf_memcpy(
        &self,
        map: &DpaMmap,
        offset: usize,
        src: u64,
        len: usize,
    ) -> Result<(), DocaError> {
        let mem = host_buf(map, offset, len)?;
        let mut bytes = vec![0u8; len];
        self.d2h_memcpy(&mut bytes, src)?;
        mem.write(offset, &bytes)
            .map_err(|e| DocaError::InvalidValue(format!("host buffer: {e}")))
    }

    /// `doca_dpa_memset`.
    ///
    /// # Errors
    /// As [`Dpa::h2d_memcpy`].
    pub fn memset(&self, dst: u64, value: u8, len: usize) -> Result<(), DocaError> {
        Ok(self.process.memset(dst, value, len)?)
    }

    /// `doca_dpa_rpc`: runs `func` once on the DPA with up to eight u64 arguments and returns
    /// its result (blocking, bounded by the RPC timeout).
    ///
    /// # Errors
    /// An unknown function, a fault or a timeout.
    pub fn rpc(&self, func: &str, args: &[u64]) -> Result<u64, DocaError> {
        Ok(self.process.call(func, args)?)
    }

    /// `doca_dpa_kernel_launch_update_set`: runs `func` on `num_threads` DPA threads with
    /// `args`, once `wait`'s counter exceeds its threshold (if given); when the last thread
    /// returns, `comp`'s counter is set to its count. Returns once the launch is queued.
    ///
    /// # Errors
    /// [`DocaError::InvalidValue`]: a thread count of 0 or above
    /// [`Dpa::max_threads_per_kernel`], a threshold above [`MAX_WAIT_THRESHOLD`], arguments
    /// that do not fit, an unknown function. [`DocaError::NotPermitted`]: an event of another
    /// context, a wait event without a DPA subscriber, a completion event without a DPA
    /// publisher. [`DocaError::Fatal`] once the context is in the error state.
    pub fn kernel_launch_update_set(
        &self,
        wait: Option<(&SyncEvent, u64)>,
        comp: Option<(&SyncEvent, u64)>,
        num_threads: u32,
        func: &str,
        args: &[KernelArg],
    ) -> Result<(), DocaError> {
        self.launch(
            wait,
            comp.map(|(e, c)| (CompOp::Set, e, c)),
            num_threads,
            func,
            args,
        )
    }

    /// `doca_dpa_kernel_launch_update_add`: as [`Dpa::kernel_launch_update_set`], but `comp`'s
    /// count is added to its counter.
    ///
    /// # Errors
    /// As [`Dpa::kernel_launch_update_set`].
    pub fn kernel_launch_update_add(
        &self,
        wait: Option<(&SyncEvent, u64)>,
        comp: Option<(&SyncEvent, u64)>,
        num_threads: u32,
        func: &str,
        args: &[KernelArg],
    ) -> Result<(), DocaError> {
        self.launch(
            wait,
            comp.map(|(e, c)| (CompOp::Add, e, c)),
            num_threads,
            func,
            args,
        )
    }

    fn own(&self, ev: &SyncEvent, role: &str) -> Result<(), DocaError> {
        if Arc::ptr_eq(&ev.slot().shared, &self.shared) {
            Ok(())
        } else {
            Err(DocaError::NotPermitted(format!(
                "the {role} event belongs to another DPA context"
            )))
        }
    }

    fn launch(
        &self,
        wait: Option<(&SyncEvent, u64)>,
        comp: Option<(CompOp, &SyncEvent, u64)>,
        num_threads: u32,
        func: &str,
        args: &[KernelArg],
    ) -> Result<(), DocaError> {
        if let Some(why) = self.shared.failure() {
            return Err(DocaError::Fatal(why));
        }
        let max = self.max_threads_per_kernel();
        if num_threads == 0 || num_threads > max {
            return Err(DocaError::InvalidValue(format!(
                "{num_threads} threads for one kernel (1 ..= {max})"
            )));
        }
        if let Some((ev, threshold)) = wait {
            self.own(ev, "wait")?;
            if !ev.attr().subscriber_dpa {
                return Err(DocaError::NotPermitted(
                    "the wait event has no DPA subscriber".into(),
                ));
            }
            if threshold > MAX_WAIT_THRESHOLD {
                return Err(DocaError::InvalidValue(format!(
                    "wait threshold {threshold} (0 ..= {MAX_WAIT_THRESHOLD})"
                )));
            }
        }
        if let Some((_, ev, _)) = comp {
            self.own(ev, "completion")?;
            if !ev.attr().publisher_dpa {
                return Err(DocaError::NotPermitted(
                    "the completion event has no DPA publisher".into(),
                ));
            }
        }
        let func_addr = self.process.symbol(func).map_err(|_| {
            DocaError::InvalidValue(format!("the application has no kernel {func:?}"))
        })?;
        let args = launch::encode(args)?;
        let launcher = lock(&self.base.launcher);
        let Some(l) = launcher.as_ref() else {
            return Err(DocaError::Fatal("the context is stopped".into()));
        };
        l.0.submit(Pending {
            func: func_addr,
            args,
            num_threads,
            wait: wait.map(|(e, t)| (Arc::clone(e.slot()), t)),
            comp: comp.map(|(op, e, c)| (op, Arc::clone(e.slot()), c)),
        });
        Ok(())
    }
}

impl Drop for Dpa {
    fn drop(&mut self) {
        // The base context stops the launcher at once (launches not started are dropped),
        // even while extended contexts still exist.
        if !self.extended {
            if let Some(mut l) = lock(&self.base.launcher).take() {
                l.0.stop();
            }
        }
    }
}

/// The host memory behind `len` bytes at `offset` of a host map.
fn host_buf(
    map: &DpaMmap,
    offset: usize,
    len: usize,
) -> Result<&crate::mem::MemoryRegion, DocaError> {
    let mem = map.host_memory().ok_or_else(|| {
        DocaError::InvalidValue("a buffer copy needs a map over host memory".into())
    })?;
    if offset.checked_add(len).is_none_or(|end| end > mem.len()) {
        return Err(DocaError::InvalidValue(format!(
            "{len} bytes at {offset} leave the map's {} bytes",
            mem.len()
        )));
    }
    Ok(mem)
}
