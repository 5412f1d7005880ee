//! Message streams (FlexIO `flexio_msg_stream_create` / `flexio_msg_stream_destroy`): text a
//! DPA program prints (`flexio_dev_print`, `flexio_dev_msg`, `flexio_dev_puts`) delivered to
//! the host.
//!
//! # What [`MsgStream::create`] builds, in order
//!
//! The device side of the protocol is `fw-blobs/include/mlx5_dpa_msg_stream.h` (and
//! `fw-blobs/runtime/msg_stream.c`): a stream is an RC QP whose send ring and CQ live in DPA
//! memory, connected force-loopback to a host QP that only receives; every message is one
//! SEND of its text (no NUL) from a slot of a message buffer in DPA memory.
//!
//! 1. The stream id is claimed for this process (two live streams never share an id: the
//!    device would silently replace the first, and dropping it would remove the second).
//! 2. DPA side: the send CQ ([`DpaCq`], `2^log_depth` CQEs, polled by the device, never armed;
//!    events to host vector 0), the message buffer (`slot_size << log_depth` bytes) and a
//!    [`DpaMkey`] over it, the RC QP ([`DpaRcQp`]) on the stream's UAR, which the printing
//!    threads' outboxes must ring. The QP only sends (a zero-length RQ).
//! 3. Host side: a [`Cq`], a [`MemoryRegion`] of `2 << log_depth` receive slots of
//!    `slot_size` bytes, and an [`RcQp`] with `2 << log_depth` receives (twice the device's
//!    messages in flight, so a slow reader rarely makes the device wait on RNR NAKs), all
//!    receives posted.
//! 4. Both QPs connected to each other (RST -> INIT -> RTR -> RTS, force-loopback).
//! 5. The 208-byte `struct flexio_msg_stream_dev_ctx` written into DPA memory
//!    ([`Process::copy_to_dev`]; device-owned part zero), then the RPC
//!    `flexio_msg_stream_dev_init(ctx_daddr)`; its negative results become typed errors.
//! 6. In [`SyncMode::Sync`], a reader thread that delivers every message as it arrives.
//!
//! Every step is named in its error ([`DpaError::Step`]) and what the earlier steps made is
//! released, newest first.
//!
//! # Who owns what
//!
//! - The DPA program owns the send queue, its CQ, the message buffer and the device part of
//!   the context from `flexio_msg_stream_dev_init` until `flexio_msg_stream_dev_fini`; the
//!   host never touches them in between (it only reads the counters, [`MsgStream::device_stats`]).
//! - The receive side (host QP, CQ, receive buffers, the output) is one value behind a
//!   [`Mutex`], shared by the stream and its reader thread; whoever holds the lock polls.
//!
//! # Destroy
//!
//! Dropping the stream (or [`MsgStream::close`], which reports errors) calls
//! `flexio_msg_stream_dev_fini(stream_id)` (later prints to the id fail with
//! `MLX5_DPA_MSG_ERR_NO_STREAM`; the RPC waits for a post in flight), stops and joins the
//! reader thread (bounded), delivers what is still arriving, then releases the host QP, its
//! buffers and CQ, the context, the DPA QP, the key, the buffer and the DPA CQ. The process
//! outlives all of it: every handle keeps it alive.

use std::fs::File;
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::devx::Devx;
use crate::mem::{Access, MemoryRegion};
use crate::queues::{Cq, CqConfig, CqEvents, HostQueueMem, QpConfig, Qpn, RcConnect, RcPeer, RcQp};
use crate::sync::lock;
use crate::uar::UarPage;

use super::queues::{DpaCq, DpaMkey, DpaQueueMem, DpaRcQp};
use super::{DpaBuf, DpaError, Process, StepExt};

/// Streams a process may have at once (`FLEXIO_MSG_DEV_MAX_STREAMS_AMOUNT`, 255 as in FlexIO);
/// ids are `0 .. MAX_STREAMS` (255 is the broadcast id).
pub const MAX_STREAMS: u32 = 255;
/// The stream `flexio_dev_print` and `flexio_dev_puts` write to
/// (`FLEXIO_MSG_DEV_DEFAULT_STREAM_ID`).
pub const DEFAULT_STREAM_ID: u32 = 0;
/// The stream id a device program names to post to every stream
/// (`FLEXIO_MSG_DEV_BROADCAST_STREAM`); not a stream the host creates.
pub const BROADCAST_STREAM: u32 = 0xff;
/// Longest formatted message including its NUL (`MLX5_DPA_MSG_MAX_LEN`): texts are at most
/// `MAX_MSG_LEN - 1` bytes.
pub const MAX_MSG_LEN: usize = 256;
/// Bytes of `struct flexio_msg_stream_dev_ctx`.
pub const CTX_SIZE: usize = 208;
/// Smallest slot (the device refuses `buf_size >> log_depth` below 16).
pub const MIN_SLOT_SIZE: u32 = 16;
/// Largest slot this driver accepts (a message is never longer than [`MAX_MSG_LEN`] anyway).
pub const MAX_SLOT_SIZE: u32 = 64 * 1024;
/// Largest `log_depth` (the device accepts up to 15; this keeps the buffers reasonable).
pub const MAX_LOG_DEPTH: u8 = 12;
/// How long [`MsgStream::flush`] waits without a new message before it calls the stream quiet.
pub const FLUSH_QUIET: Duration = Duration::from_millis(20);
/// Longest wait for `flexio_msg_stream_dev_fini` when the stream is destroyed.
pub const FINI_TIMEOUT: Duration = Duration::from_secs(5);
/// Longest wait for the reader thread to stop when the stream is destroyed.
pub const READER_JOIN_TIMEOUT: Duration = Duration::from_secs(2);
/// Longest wait for messages still arriving when the stream is destroyed.
pub const DESTROY_FLUSH_TIMEOUT: Duration = Duration::from_secs(1);
/// The reader thread's pause when nothing arrived, where the device gives no notice of
/// activity (a NIC).
const READER_IDLE_SLEEP: Duration = Duration::from_micros(200);
/// Its longest wait for the device's activity (the model): how late it sees a stop.
const READER_IDLE_WAIT: Duration = Duration::from_millis(2);
/// Completions one poll handles at most (a poll always ends, even under a flood).
const POLL_BUDGET_PER_SLOT: usize = 4;

/// The RPC entries of the device runtime (`__dpa_rpc__`, called directly).
const INIT_ENTRY: &str = "flexio_msg_stream_dev_init";
const FINI_ENTRY: &str = "flexio_msg_stream_dev_fini";

/// Offsets in `struct flexio_msg_stream_dev_ctx` (mlx5_dpa_msg_stream.h).
mod ctx {
    pub const QP: usize = 0;
    pub const CQ: usize = 88;
    pub const BUF_DADDR: usize = 144;
    pub const BUF_SIZE: usize = 152;
    pub const BUF_LKEY: usize = 156;
    pub const STREAM_ID: usize = 160;
    pub const LEVEL: usize = 164;
    /// First device-owned byte.
    pub const DEVICE: usize = 168;
    pub const SQ_PI: usize = 172;
    pub const SQ_DONE: usize = 176;
    pub const MSGS_POSTED: usize = 184;
    pub const MSGS_DROPPED: usize = 192;
    pub const LAST_ERR_SYND: usize = 200;
    pub const DEAD: usize = 204;
}

/// Message levels (FlexIO `flexio_msg_dev_level`, numbers of `flexio_dev.h`). A stream
/// delivers messages whose level is at least [`MsgLevel::AlwaysPrint`] and at most its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum MsgLevel {
    /// `FLEXIO_MSG_DEV_NO_PRINT`: as a message level, never delivered; as a stream level,
    /// the stream delivers nothing.
    NoPrint = 0,
    /// `FLEXIO_MSG_DEV_ALWAYS_PRINT`.
    AlwaysPrint = 1,
    /// `FLEXIO_MSG_DEV_ERROR`.
    Error = 2,
    /// `FLEXIO_MSG_DEV_WARN`.
    Warn = 3,
    /// `FLEXIO_MSG_DEV_INFO` (the level of `flexio_dev_print`).
    Info = 4,
    /// `FLEXIO_MSG_DEV_DEBUG`.
    Debug = 5,
}

impl MsgLevel {
    /// The device's number for the level.
    pub fn as_raw(self) -> u8 {
        self as u8
    }

    /// The level with the device's number `raw`, if there is one.
    pub fn from_raw(raw: u8) -> Option<MsgLevel> {
        Some(match raw {
            0 => MsgLevel::NoPrint,
            1 => MsgLevel::AlwaysPrint,
            2 => MsgLevel::Error,
            3 => MsgLevel::Warn,
            4 => MsgLevel::Info,
            5 => MsgLevel::Debug,
            _ => return None,
        })
    }
}

/// When messages reach the output (FlexIO `flexio_log_dev_sync_mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SyncMode {
    /// A reader thread owned by the stream delivers every message as it arrives
    /// (`FLEXIO_LOG_DEV_SYNC_MODE_SYNC`).
    #[default]
    Sync,
    /// Messages wait in the receive ring until [`MsgStream::poll`] or [`MsgStream::flush`]
    /// (`FLEXIO_LOG_DEV_SYNC_MODE_BATCH`). A ring nobody polls fills up: the device then
    /// waits for receives (RNR) and, once its own slots are all in flight, drops messages
    /// (`MLX5_DPA_MSG_ERR_FULL`, counted in [`MsgStreamStats::msgs_dropped`]).
    Batch,
}

/// A writer shared with the stream (the caller may keep a handle to read what was written).
pub type SharedWriter = Arc<Mutex<dyn Write + Send>>;

/// Where delivered messages go. Each message is written as one `write_all` of its text,
/// exactly as the device formatted it (FlexIO writes it to a `FILE *`).
#[derive(Clone, Default)]
pub enum MsgOutput {
    /// The process's standard output.
    #[default]
    Stdout,
    /// A file, created (or truncated) when the stream is created.
    File(PathBuf),
    /// Any writer. Shared rather than owned, so that one [`MsgStreamAttr`] can be reused
    /// and the caller can keep a handle; [`MsgOutput::writer`] wraps an owned writer.
    Writer(SharedWriter),
    /// Kept in memory as strings (invalid UTF-8 replaced); see [`MsgStream::take_messages`].
    Collect,
}

impl MsgOutput {
    /// Output to `w`, which the stream (and only it) then writes to.
    pub fn writer(w: impl Write + Send + 'static) -> MsgOutput {
        MsgOutput::Writer(Arc::new(Mutex::new(w)))
    }
}

impl std::fmt::Debug for MsgOutput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MsgOutput::Stdout => f.write_str("Stdout"),
            MsgOutput::File(p) => f.debug_tuple("File").field(p).finish(),
            MsgOutput::Writer(_) => f.write_str("Writer(..)"),
            MsgOutput::Collect => f.write_str("Collect"),
        }
    }
}

/// How to create a stream (FlexIO `flexio_msg_stream_attr_t`).
#[derive(Debug, Clone)]
pub struct MsgStreamAttr {
    /// `0 .. MAX_STREAMS`; [`DEFAULT_STREAM_ID`] is the one `flexio_dev_print` writes to.
    pub stream_id: u32,
    /// Messages with a level from [`MsgLevel::AlwaysPrint`] up to this one are delivered;
    /// the device filters (a filtered message is never sent).
    pub level: MsgLevel,
    /// log2 of the messages in flight: the device's send ring and buffer slots
    /// (`1 ..= MAX_LOG_DEPTH`).
    pub log_depth: u8,
    /// Bytes per message slot, device and host (`MIN_SLOT_SIZE ..= MAX_SLOT_SIZE`); longer
    /// texts are cut to it. The message buffer in DPA memory is `slot_size << log_depth`
    /// bytes (FlexIO `data_bsize`).
    pub slot_size: u32,
    /// When messages are delivered.
    pub sync_mode: SyncMode,
    /// Where they go.
    pub output: MsgOutput,
    /// The UAR of the stream's QP (FlexIO `uar`); `None`: [`Process::uar`]. The threads
    /// that print need an outbox over this UAR to ring the stream's send queue.
    pub uar: Option<Arc<UarPage>>,
    /// A tracer stream (FlexIO's `FLEXIO_LOG_DEV_SYNC_MODE_TRACER` with
    /// `tracer_msg_formats`): the device posts binary records (`flexio_dev_trace_*`: a
    /// format number and six u64 arguments, 64 bytes), delivered as their format with the
    /// arguments put in ([`format_trace`]). `None`: a text stream.
    pub tracer_formats: Option<Arc<[String]>>,
}

impl Default for MsgStreamAttr {
    /// The default stream (id 0) at level INFO, 64 messages in flight of up to
    /// [`MAX_MSG_LEN`] bytes, delivered as they arrive to standard output.
    fn default() -> Self {
        MsgStreamAttr {
            stream_id: DEFAULT_STREAM_ID,
            level: MsgLevel::Info,
            log_depth: 6,
            slot_size: MAX_MSG_LEN as u32,
            sync_mode: SyncMode::Sync,
            output: MsgOutput::Stdout,
            uar: None,
            tracer_formats: None,
        }
    }
}

impl MsgStreamAttr {
    /// The defaults with another id, level and output.
    pub fn new(stream_id: u32, level: MsgLevel, output: MsgOutput) -> MsgStreamAttr {
        MsgStreamAttr {
            stream_id,
            level,
            output,
            ..MsgStreamAttr::default()
        }
    }
}

/// The device-owned counters of a stream's context.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MsgStreamStats {
    /// Messages posted (sent) since `flexio_msg_stream_dev_init`.
    pub msgs_posted: u64,
    /// Messages dropped: lock busy, ring full, or the queue in error.
    pub msgs_dropped: u64,
    /// The send counter: next WQEBB, and up to which SENDs completed.
    pub sq_pi: u32,
    pub sq_done: u32,
    /// The error word of the last error CQE (0: none).
    pub last_err_synd: u32,
    /// The device saw an error CQE: every later message fails.
    pub dead: bool,
}

/// Results of `flexio_msg_stream_dev_init` / `_fini` (`flexio_msg_stream_dev_init_status`),
/// as the typed error they become.
fn dev_status(call: &'static str, raw: u64, stream_id: u32) -> Result<(), DpaError> {
    let what = match raw as i64 {
        0 => return Ok(()),
        -1 => {
            return Err(DpaError::BadArgs(format!(
                "{call}: the device refuses stream id {stream_id} (FLEXIO_MSG_STREAM_DEV_ERR_ID)"
            )))
        }
        -2 => "the QP descriptor (FLEXIO_MSG_STREAM_DEV_ERR_QP)",
        -3 => "the CQ descriptor (FLEXIO_MSG_STREAM_DEV_ERR_CQ)",
        -4 => "the message buffer (FLEXIO_MSG_STREAM_DEV_ERR_BUF)",
        -5 => "the context address (FLEXIO_MSG_STREAM_DEV_ERR_CTX)",
        other => {
            return Err(DpaError::Device(format!(
                "{call} of stream {stream_id} returned {other}, not a known status"
            )))
        }
    };
    Err(DpaError::Device(format!(
        "{call} of stream {stream_id} refused {what}"
    )))
}

/// One stream id of one process, released when dropped.
#[derive(Debug)]
struct IdClaim {
    process: Process,
    id: u32,
}

impl IdClaim {
    fn take(process: &Process, id: u32) -> Result<IdClaim, DpaError> {
        if !process.inner().claim_stream_id(id) {
            return Err(DpaError::BadArgs(format!(
                "message stream {id} already exists on DPA process {:#x}",
                process.id()
            )));
        }
        Ok(IdClaim {
            process: process.clone(),
            id,
        })
    }
}

impl Drop for IdClaim {
    fn drop(&mut self) {
        self.process.inner().release_stream_id(self.id);
    }
}

/// Where messages go, opened.
enum Sink {
    Stdout,
    File(File),
    Writer(SharedWriter),
    Collect(Vec<String>),
}

impl Sink {
    fn open(output: &MsgOutput) -> Result<Sink, DpaError> {
        Ok(match output {
            MsgOutput::Stdout => Sink::Stdout,
            MsgOutput::File(path) => Sink::File(File::create(path).map_err(|e| {
                DpaError::BadArgs(format!("message stream output {}: {e}", path.display()))
            })?),
            MsgOutput::Writer(w) => Sink::Writer(Arc::clone(w)),
            MsgOutput::Collect => Sink::Collect(Vec::new()),
        })
    }

    fn deliver(&mut self, text: &[u8]) -> std::io::Result<()> {
        match self {
            Sink::Stdout => {
                let mut out = std::io::stdout().lock();
                out.write_all(text)?;
                out.flush()
            }
            Sink::File(f) => f.write_all(text),
            Sink::Writer(w) => {
                let mut w = lock(w);
                w.write_all(text)?;
                w.flush()
            }
            Sink::Collect(v) => {
                v.push(String::from_utf8_lossy(text).into_owned());
                Ok(())
            }
        }
    }
}

/// The host's receiving end. Fields drop in declaration order: the QP before the buffers its
/// receives name, and before its CQ (which the QP also holds).
struct Receiver {
    qp: RcQp,
    bufs: MemoryRegion,
    cq: Cq,
    sink: Sink,
    stream_id: u32,
    slot_size: usize,
    slots: usize,
    /// Messages delivered to the sink.
    delivered: u64,
    /// The QP reported an error: receives are no longer reposted.
    broken: bool,
    text: Vec<u8>,
    /// A tracer stream's formats.
    tracer: Option<Arc<[String]>>,
}

impl Receiver {
    fn post(&mut self, slot: usize) -> Result<(), DpaError> {
        let sge = self.bufs.sge(slot * self.slot_size, self.slot_size)?;
        self.qp.post_recv(&[sge], slot as u64)?;
        Ok(())
    }

    /// Delivers the messages that arrived (at most a few rings' worth) and reposts their
    /// receives; returns how many were delivered.
    fn drain(&mut self) -> Result<usize, DpaError> {
        let budget = POLL_BUDGET_PER_SLOT * self.slots;
        let mut delivered = 0;
        let mut reposted = 0;
        let mut first_err = None;
        for _ in 0..budget {
            let Some(c) = self.cq.poll() else {
                break;
            };
            match c {
                Ok(c) => {
                    if c.is_send() {
                        first_err.get_or_insert(DpaError::Device(format!(
                            "message stream {}: a send completion on the receive-only host QP",
                            self.stream_id
                        )));
                        continue;
                    }
                    let slot = match self.qp.complete_recv(c.wqe_counter) {
                        Ok(s) => s as usize,
                        Err(e) => {
                            first_err.get_or_insert(e.into());
                            continue;
                        }
                    };
                    let len = (c.byte_len as usize).min(self.slot_size);
                    self.text.resize(len, 0);
                    let read = self.bufs.read(slot * self.slot_size, &mut self.text);
                    if let Err(e) = self.post(slot) {
                        first_err.get_or_insert(e);
                    } else {
                        reposted += 1;
                    }
                    if let Err(e) = read {
                        first_err.get_or_insert(e.into());
                        continue;
                    }
                    if let Some(formats) = &self.tracer {
                        self.text = trace_text(formats, &self.text).into_bytes();
                    }
                    if let Err(e) = self.sink.deliver(&self.text) {
                        first_err.get_or_insert(DpaError::Device(format!(
                            "message stream {}: writing to the output: {e}",
                            self.stream_id
                        )));
                    }
                    self.delivered += 1;
                    delivered += 1;
                }
                Err(e) => {
                    // The QP is in error: retire the receive, never repost (it would flush
                    // at once).
                    if let Some(w) = e.wqe_counter() {
                        let _ = self.qp.complete_recv(w);
                    }
                    if !self.broken {
                        self.broken = true;
                        first_err.get_or_insert(DpaError::Device(format!(
                            "message stream {}: receive completion error: {e}",
                            self.stream_id
                        )));
                    }
                }
            }
        }
        if reposted > 0 {
            self.qp.ring_recv_doorbell();
        }
        match first_err {
            Some(e) => Err(e),
            None => Ok(delivered),
        }
    }
}

/// What the stream and its reader thread share.
struct Shared {
    rx: Mutex<Receiver>,
    stop: AtomicBool,
    /// The first error the reader thread met (reported by [`MsgStream::close`]).
    reader_error: Mutex<Option<DpaError>>,
}

/// The reader thread: drains the receive side; when nothing arrived, waits for the device's
/// next activity (the model: a pass that did work; [`READER_IDLE_WAIT`] at most, so that a
/// stop is seen) or, where the device gives no notice, sleeps [`READER_IDLE_SLEEP`].
fn reader_loop(shared: &Shared, dev: &dyn Devx) {
    while !shared.stop.load(Ordering::Acquire) {
        let seen = dev.activity();
        let r = lock(&shared.rx).drain();
        match r {
            Ok(0) => {
                if !dev.wait_activity(seen, READER_IDLE_WAIT) {
                    std::thread::sleep(READER_IDLE_SLEEP);
                }
            }
            Ok(_) => {}
            Err(e) => {
                lock(&shared.reader_error).get_or_insert(e);
                std::thread::sleep(READER_IDLE_SLEEP);
            }
        }
    }
}

/// Runs `flexio_msg_stream_dev_fini(stream_id)` on a thread of its own, waiting at most
/// `timeout` (the process's RPC path, with a bound suited to a destructor).
fn dev_fini(process: &Process, stream_id: u32, timeout: Duration) -> Result<(), DpaError> {
    let r = process.run_once_within(FINI_ENTRY, u64::from(stream_id), timeout)?;
    dev_status(FINI_ENTRY, r, stream_id)
}

/// A message stream (FlexIO `struct flexio_msg_stream`). Fields drop in declaration order,
/// the reverse of creation; [`Drop`] first removes the stream from the device and stops the
/// reader.
pub struct MsgStream {
    reader: Option<JoinHandle<()>>,
    shared: Arc<Shared>,
    ctx: DpaBuf,
    qp: DpaRcQp,
    _mkey: DpaMkey,
    _buf: DpaBuf,
    cq: DpaCq,
    claim: IdClaim,
    process: Process,
    level: MsgLevel,
    sync_mode: SyncMode,
    host_qpn: Qpn,
    /// The device no longer knows the stream (fini ran, or was tried).
    closed: bool,
}

impl std::fmt::Debug for MsgStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MsgStream")
            .field("stream_id", &self.claim.id)
            .field("level", &self.level)
            .field("sync_mode", &self.sync_mode)
            .field("dpa_qpn", &self.qp.qpn())
            .field("host_qpn", &self.host_qpn)
            .field("ctx_daddr", &self.ctx.daddr())
            .finish_non_exhaustive()
    }
}

fn check_attr(attr: &MsgStreamAttr) -> Result<(), DpaError> {
    if attr.stream_id >= MAX_STREAMS {
        return Err(DpaError::BadArgs(format!(
            "message stream id {} (0 ..= {})",
            attr.stream_id,
            MAX_STREAMS - 1
        )));
    }
    if attr.log_depth == 0 || attr.log_depth > MAX_LOG_DEPTH {
        return Err(DpaError::BadArgs(format!(
            "message stream log_depth {} (1 ..= {MAX_LOG_DEPTH})",
            attr.log_depth
        )));
    }
    if !(MIN_SLOT_SIZE..=MAX_SLOT_SIZE).contains(&attr.slot_size) {
        return Err(DpaError::BadArgs(format!(
            "message stream slot_size {} ({MIN_SLOT_SIZE} ..= {MAX_SLOT_SIZE})",
            attr.slot_size
        )));
    }
    Ok(())
}

impl MsgStream {
    /// Creates a stream of `process` and makes the device use it (FlexIO
    /// `flexio_msg_stream_create`); see the module documentation for what is built.
    ///
    /// # Errors
    /// [`DpaError::BadArgs`] for an attribute out of range, a stream id already in use on
    /// this process, or an output file that cannot be created; otherwise
    /// [`DpaError::Step`] naming the step that failed (a device refusal of the context is a
    /// [`DpaError::Device`] under "initialising the stream on the device", a missing runtime
    /// entry an [`DpaError::UnknownSymbol`]). What was made is released.
    pub fn create(process: &Process, attr: &MsgStreamAttr) -> Result<MsgStream, DpaError> {
        check_attr(attr)?;
        process.symbol(INIT_ENTRY)?;
        process.symbol(FINI_ENTRY)?;
        let claim = IdClaim::take(process, attr.stream_id)?;
        let sink = Sink::open(&attr.output)?;
        let id = attr.stream_id;
        let depth = 1usize << attr.log_depth;
        let slot_size = attr.slot_size as usize;
        let uar = attr.uar.as_ref().unwrap_or(process.uar());
        let dev = &process.inner().dev;

        // The DPA side.
        let cq_cfg = CqConfig {
            events: CqEvents::Vector(0),
            ..CqConfig::new(attr.log_depth)
        };
        let cq = DpaQueueMem::alloc(process, cq_cfg.ring_bytes())
            .and_then(|m| DpaCq::create(process, uar, m, &cq_cfg))
            .step("creating the stream's send CQ in DPA memory")?;
        let buf = process
            .alloc((slot_size * depth) as u64)
            .step("allocating the message buffer in DPA memory")?;
        let mkey = DpaMkey::over(process, &buf, Access::empty())
            .step("creating the key over the message buffer")?;
        // The stream's QP only sends: no receive ring (a zero-length RQ).
        let qp_cfg = QpConfig {
            log_rq_size: None,
            ..QpConfig::new(attr.log_depth, 0)
        };
        let mut qp = DpaQueueMem::alloc(process, qp_cfg.ring_bytes())
            .and_then(|m| DpaRcQp::create(process, uar, &cq, &cq, m, &qp_cfg))
            .step("creating the stream's QP in DPA memory")?;

        // The host side.
        let log_rx = attr.log_depth + 1;
        let slots = 1usize << log_rx;
        let host_cq_cfg = CqConfig::new(log_rx);
        let host_cq = HostQueueMem::alloc(dev, host_cq_cfg.ring_bytes())
            .and_then(|m| Cq::create(dev, uar, m, &host_cq_cfg))
            .step("creating the host CQ")?;
        let bufs = MemoryRegion::alloc(dev, process.pd(), slots * slot_size, Access::LOCAL_WRITE)
            .step("registering the host receive buffers")?;
        let host_cfg = QpConfig::new(1, log_rx);
        let host_qp = HostQueueMem::alloc(dev, host_cfg.ring_bytes())
            .and_then(|m| RcQp::create(dev, process.pd(), uar, &host_cq, &host_cq, m, &host_cfg))
            .step("creating the host QP")?;
        let host_qpn = host_qp.qpn();
        let mut rx = Receiver {
            qp: host_qp,
            bufs,
            cq: host_cq,
            sink,
            stream_id: id,
            slot_size,
            slots,
            delivered: 0,
            broken: false,
            text: Vec::with_capacity(slot_size),
            tracer: attr.tracer_formats.clone(),
        };
        (0..slots)
            .try_for_each(|s| rx.post(s))
            .step("posting the host receives")?;
        rx.qp.ring_recv_doorbell();

        // Connect, then hand the stream to the device.
        rx.qp
            .connect(&RcConnect::new(RcPeer::Loopback {
                remote_qpn: qp.qpn(),
            }))
            .step("connecting the host QP")?;
        qp.connect(&RcConnect::new(RcPeer::Loopback {
            remote_qpn: host_qpn,
        }))
        .step("connecting the stream's QP")?;

        let ctx_buf = process
            .alloc(CTX_SIZE as u64)
            .step("allocating the stream context in DPA memory")?;
        let mut c = [0u8; CTX_SIZE];
        c[ctx::QP..ctx::CQ].copy_from_slice(&qp.descriptor().to_bytes());
        c[ctx::CQ..ctx::BUF_DADDR].copy_from_slice(&cq.descriptor().to_bytes());
        c[ctx::BUF_DADDR..ctx::BUF_SIZE].copy_from_slice(&buf.daddr().to_le_bytes());
        c[ctx::BUF_SIZE..ctx::BUF_LKEY]
            .copy_from_slice(&((slot_size * depth) as u32).to_le_bytes());
        c[ctx::BUF_LKEY..ctx::STREAM_ID].copy_from_slice(&mkey.lkey().0.to_le_bytes());
        c[ctx::STREAM_ID..ctx::LEVEL].copy_from_slice(&id.to_le_bytes());
        c[ctx::LEVEL..ctx::DEVICE].copy_from_slice(&u32::from(attr.level.as_raw()).to_le_bytes());
        process
            .copy_to_dev(ctx_buf.daddr(), &c)
            .step("writing the stream context")?;
        process
            .call_raw(INIT_ENTRY, ctx_buf.daddr())
            .and_then(|r| dev_status(INIT_ENTRY, r, id))
            .step("initialising the stream on the device")?;

        let mut stream = MsgStream {
            reader: None,
            shared: Arc::new(Shared {
                rx: Mutex::new(rx),
                stop: AtomicBool::new(false),
                reader_error: Mutex::new(None),
            }),
            ctx: ctx_buf,
            qp,
            _mkey: mkey,
            _buf: buf,
            cq,
            claim,
            process: process.clone(),
            level: attr.level,
            sync_mode: attr.sync_mode,
            host_qpn,
            closed: false,
        };
        if attr.sync_mode == SyncMode::Sync {
            let shared = Arc::clone(&stream.shared);
            let dev = Arc::clone(process.dev());
            // A failure here drops `stream`, which removes it from the device again.
            let handle = std::thread::Builder::new()
                .name(format!("dpa-msg-stream-{id}"))
                .spawn(move || reader_loop(&shared, dev.as_ref()))
                .map_err(|e| DpaError::Device(format!("spawning the reader thread: {e}")))
                .step("starting the reader thread")?;
            stream.reader = Some(handle);
        }
        Ok(stream)
    }

    /// The stream id.
    pub fn stream_id(&self) -> u32 {
        self.claim.id
    }

    /// The stream's level.
    pub fn level(&self) -> MsgLevel {
        self.level
    }

    /// Changes the stream's level (FlexIO `flexio_msg_stream_level_set`). The device reads the
    /// level from the stream's context at each message, so a message already filtered or sent
    /// stays so.
    ///
    /// # Errors
    /// [`DpaError::BadArgs`] for [`MsgLevel::AlwaysPrint`], which is a message's level, not a
    /// stream's (FlexIO refuses it too); a copy failure.
    pub fn set_level(&mut self, level: MsgLevel) -> Result<(), DpaError> {
        if level == MsgLevel::AlwaysPrint {
            return Err(DpaError::BadArgs(
                "ALWAYS_PRINT is a message level, not a stream level".into(),
            ));
        }
        let raw = u32::from(level.as_raw()).to_le_bytes();
        self.process
            .copy_to_dev(self.ctx.daddr() + ctx::LEVEL as u64, &raw)
            .step("writing the stream's level")?;
        self.level = level;
        Ok(())
    }

    /// The delivery mode.
    pub fn sync_mode(&self) -> SyncMode {
        self.sync_mode
    }

    /// The QP in DPA memory that sends, and the host QP that receives.
    pub fn qpns(&self) -> (Qpn, Qpn) {
        (self.qp.qpn(), self.host_qpn)
    }

    /// The send CQ in DPA memory.
    pub fn cq(&self) -> &DpaCq {
        &self.cq
    }

    /// DPA address of the stream's `struct flexio_msg_stream_dev_ctx`.
    pub fn ctx_daddr(&self) -> u64 {
        self.ctx.daddr()
    }

    /// Delivers every message that arrived (at most a few rings' worth per call) to the
    /// output and reposts their receive buffers; returns how many this call delivered. Any
    /// mode (in [`SyncMode::Sync`] the reader thread usually got there first).
    ///
    /// # Errors
    /// A receive completed with an error (the host QP is then broken: nothing more arrives),
    /// or writing to the output failed (the message is lost; later ones are still read).
    pub fn poll(&mut self) -> Result<usize, DpaError> {
        lock(&self.shared.rx).drain()
    }

    /// Polls until no message arrived for [`FLUSH_QUIET`] or `timeout` passed, whichever is
    /// first; returns how many messages were delivered meanwhile (by this call or, in
    /// [`SyncMode::Sync`], by the reader thread).
    ///
    /// # Errors
    /// As [`MsgStream::poll`].
    pub fn flush(&mut self, timeout: Duration) -> Result<u64, DpaError> {
        crate::sync::traced_wait("a message stream to go quiet", || {
            let start = Instant::now();
            let before = self.delivered();
            let mut seen = before;
            let mut last_arrival = start;
            let dev = Arc::clone(self.process.dev());
            loop {
                let activity = dev.activity();
                self.poll()?;
                let now_delivered = self.delivered();
                let now = Instant::now();
                if now_delivered != seen {
                    seen = now_delivered;
                    last_arrival = now;
                } else if now.duration_since(last_arrival) >= FLUSH_QUIET.min(timeout) {
                    break;
                }
                if now.duration_since(start) >= timeout {
                    break;
                }
                if !dev.wait_activity(activity, READER_IDLE_SLEEP) {
                    std::thread::sleep(READER_IDLE_SLEEP);
                }
            }
            Ok(seen - before)
        })
    }

    /// Messages delivered to the output so far.
    pub fn delivered(&self) -> u64 {
        lock(&self.shared.rx).delivered
    }

    /// With [`MsgOutput::Collect`], the messages delivered since the last call, oldest
    /// first; empty for other outputs.
    pub fn take_messages(&self) -> Vec<String> {
        match &mut lock(&self.shared.rx).sink {
            Sink::Collect(v) => std::mem::take(v),
            _ => Vec::new(),
        }
    }

    /// Reads the device-owned counters of the stream's context. `process` must be the
    /// process the stream was created on (the stream keeps it alive but cannot copy on its
    /// own).
    ///
    /// # Errors
    /// [`DpaError::BadArgs`] for another process; a copy failure.
    pub fn device_stats(&self, process: &Process) -> Result<MsgStreamStats, DpaError> {
        if !Arc::ptr_eq(process.inner(), self.process.inner()) {
            return Err(DpaError::BadArgs(format!(
                "message stream {} belongs to DPA process {:#x}, not {:#x}",
                self.claim.id,
                self.process.id(),
                process.id()
            )));
        }
        let mut b = [0u8; CTX_SIZE - ctx::DEVICE];
        process.copy_from_dev(self.ctx.daddr() + ctx::DEVICE as u64, &mut b)?;
        let u32_at = |o: usize| {
            b.get(o - ctx::DEVICE..o - ctx::DEVICE + 4)
                .and_then(|s| s.try_into().ok())
                .map_or(0, u32::from_le_bytes)
        };
        let u64_at = |o: usize| {
            b.get(o - ctx::DEVICE..o - ctx::DEVICE + 8)
                .and_then(|s| s.try_into().ok())
                .map_or(0, u64::from_le_bytes)
        };
        Ok(MsgStreamStats {
            msgs_posted: u64_at(ctx::MSGS_POSTED),
            msgs_dropped: u64_at(ctx::MSGS_DROPPED),
            sq_pi: u32_at(ctx::SQ_PI),
            sq_done: u32_at(ctx::SQ_DONE),
            last_err_synd: u32_at(ctx::LAST_ERR_SYND),
            dead: u32_at(ctx::DEAD) != 0,
        })
    }

    /// Destroys the stream (FlexIO `flexio_msg_stream_destroy`) and reports what went wrong:
    /// the device's fini, the reader thread's first error, or a failed final delivery. The
    /// resources are released either way.
    ///
    /// # Errors
    /// The first of those errors.
    pub fn close(mut self) -> Result<(), DpaError> {
        self.shutdown()
    }

    /// Fini on the device, reader stopped, final delivery; idempotent.
    fn shutdown(&mut self) -> Result<(), DpaError> {
        if self.closed {
            return Ok(());
        }
        self.closed = true;
        let fini = dev_fini(&self.process, self.claim.id, FINI_TIMEOUT)
            .step("removing the stream from the device");
        let join = self.stop_reader();
        let reader = lock(&self.shared.reader_error).take();
        let flush = self
            .flush(DESTROY_FLUSH_TIMEOUT)
            .step("delivering the last messages");
        fini?;
        join?;
        if let Some(e) = reader {
            return Err(DpaError::Step {
                step: "reading messages",
                source: Box::new(e),
            });
        }
        flush.map(|_| ())
    }

    /// Stops the reader thread and waits (bounded) for it to end. A thread that does not end
    /// in time is left to end on its own (it holds the receive side until then).
    fn stop_reader(&mut self) -> Result<(), DpaError> {
        crate::sync::traced_wait("a message stream's reader to stop", || {
            let Some(handle) = self.reader.take() else {
                return Ok(());
            };
            self.shared.stop.store(true, Ordering::Release);
            let start = Instant::now();
            while !handle.is_finished() {
                if start.elapsed() >= READER_JOIN_TIMEOUT {
                    return Err(DpaError::Timeout {
                        what: "the message stream's reader thread to stop",
                        after: READER_JOIN_TIMEOUT,
                    });
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            handle
                .join()
                .map_err(|_| DpaError::Device("the message stream's reader thread panicked".into()))
        })
    }
}

impl Drop for MsgStream {
    fn drop(&mut self) {
        // Errors are for `close`; a destructor releases everything regardless.
        let _ = self.shutdown();
    }
}

/// Bytes of a tracer record (`struct flexio_tracer_msg`).
pub const TRACE_RECORD_LEN: usize = 64;

/// A tracer record as text: its format with the arguments; a record of another size or with
/// an unknown format number says so instead (the stream goes on).
fn trace_text(formats: &[String], rec: &[u8]) -> String {
    if rec.len() != TRACE_RECORD_LEN {
        return format!(
            "[trace record of {} bytes, not {TRACE_RECORD_LEN}]\n",
            rec.len()
        );
    }
    let id = u32::from_le_bytes([rec[0], rec[1], rec[2], rec[3]]);
    let mut args = [0u64; 6];
    for (i, a) in args.iter_mut().enumerate() {
        let at = 16 + 8 * i;
        *a = u64::from_le_bytes(rec[at..at + 8].try_into().unwrap_or_default());
    }
    match formats.get(id as usize) {
        Some(f) => format_trace(f, &args),
        None => format!("[trace format {id} unknown; args {args:#x?}]\n"),
    }
}

/// A printf-style format with integer arguments, as the tracer's host side fills templates:
/// `%d %i %u %x %X %o %c %p %%`, flags `-` `0` `+` space `#`, a field width, and the length
/// modifiers `hh h l ll z j t` (the value is taken at that width, signed for `d` / `i`).
/// Arguments past the sixth read as 0; anything else is copied as it is.
pub fn format_trace(fmt: &str, args: &[u64]) -> String {
    let mut out = String::new();
    let mut next = args.iter().copied();
    let b = fmt.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'%' {
            let start = i;
            while i < b.len() && b[i] != b'%' {
                i += 1;
            }
            out.push_str(&fmt[start..i]);
            continue;
        }
        let start = i;
        i += 1;
        let (mut left, mut zero, mut plus, mut space, mut alt) =
            (false, false, false, false, false);
        while i < b.len() {
            match b[i] {
                b'-' => left = true,
                b'0' => zero = true,
                b'+' => plus = true,
                b' ' => space = true,
                b'#' => alt = true,
                _ => break,
            }
            i += 1;
        }
        let mut width = 0usize;
        while i < b.len() && b[i].is_ascii_digit() {
            width = width
                .saturating_mul(10)
                .saturating_add(usize::from(b[i] - b'0'));
            i += 1;
        }
        let mut bits = 32u32;
        while i < b.len() {
            match b[i] {
                b'h' if bits == 16 => bits = 8,
                b'h' => bits = 16,
                b'l' | b'z' | b'j' | b't' => bits = 64,
                _ => break,
            }
            i += 1;
        }
        let Some(&conv) = b.get(i) else {
            out.push_str(&fmt[start..]);
            break;
        };
        i += 1;
        let mask = |v: u64| {
            if bits == 64 {
                v
            } else {
                v & ((1u64 << bits) - 1)
            }
        };
        let body = match conv {
            b'%' => {
                out.push('%');
                continue;
            }
            b'd' | b'i' => {
                let v = mask(next.next().unwrap_or(0));
                let s = if bits == 64 {
                    v as i64
                } else {
                    ((v << (64 - bits)) as i64) >> (64 - bits)
                };
                let sign = if s < 0 {
                    "-"
                } else if plus {
                    "+"
                } else if space {
                    " "
                } else {
                    ""
                };
                (sign.to_string(), s.unsigned_abs().to_string())
            }
            b'u' => (String::new(), mask(next.next().unwrap_or(0)).to_string()),
            b'x' => {
                let v = mask(next.next().unwrap_or(0));
                (
                    if alt && v != 0 { "0x" } else { "" }.to_string(),
                    format!("{v:x}"),
                )
            }
            b'X' => {
                let v = mask(next.next().unwrap_or(0));
                (
                    if alt && v != 0 { "0X" } else { "" }.to_string(),
                    format!("{v:X}"),
                )
            }
            b'o' => {
                let v = mask(next.next().unwrap_or(0));
                (if alt { "0" } else { "" }.to_string(), format!("{v:o}"))
            }
            b'p' => (
                "0x".to_string(),
                format!("{:016x}", next.next().unwrap_or(0)),
            ),
            b'c' => (
                String::new(),
                char::from(next.next().unwrap_or(0) as u8).to_string(),
            ),
            _ => {
                out.push_str(&fmt[start..i]);
                continue;
            }
        };
        let (prefix, digits) = body;
        let len = prefix.len() + digits.len();
        let pad = width.saturating_sub(len);
        if left {
            out.push_str(&prefix);
            out.push_str(&digits);
            out.extend(std::iter::repeat_n(' ', pad));
        } else if zero && conv != b'c' {
            out.push_str(&prefix);
            out.extend(std::iter::repeat_n('0', pad));
            out.push_str(&digits);
        } else {
            out.extend(std::iter::repeat_n(' ', pad));
            out.push_str(&prefix);
            out.push_str(&digits);
        }
    }
    out
}

#[cfg(test)]
mod trace_tests {
    use super::*;

    #[test]
    fn templates_take_their_arguments_as_printf_would() {
        let a = [42u64, u64::MAX, 0xab, 7, b'Z' as u64, 0x4000_0000];
        assert_eq!(
            format_trace("x=%d y=%ld z=%#x w=%05u c=%c p=%p", &a),
            "x=42 y=-1 z=0xab w=00007 c=Z p=0x0000000040000000"
        );
        assert_eq!(
            format_trace(
                "%d %hhu %lu|%-4d|%4x|",
                &[u64::from(u32::MAX), 0x1ff, 3, 5, 0xa]
            ),
            "-1 255 3|5   |   a|"
        );
        assert_eq!(format_trace("100%% %q %", &[]), "100% %q %");
        // Past the sixth argument, and with none given: 0.
        assert_eq!(format_trace("%d %d", &[]), "0 0");
    }

    #[test]
    fn records_of_the_wrong_size_or_format_say_so() {
        let f: Vec<String> = vec!["a %lu\n".into()];
        let mut rec = [0u8; 64];
        rec[16..24].copy_from_slice(&5u64.to_le_bytes());
        assert_eq!(trace_text(&f, &rec), "a 5\n");
        rec[0] = 3;
        assert!(trace_text(&f, &rec).starts_with("[trace format 3 unknown"));
        assert!(trace_text(&f, &rec[..10]).contains("10 bytes"));
    }
}
