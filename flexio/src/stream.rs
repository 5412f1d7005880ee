//! Message streams: what the device prints (`flexio_dev_print`, `flexio_dev_msg`), delivered
//! to a `FILE *` of the host program.

use std::ffi::{c_char, c_void, CStr};
use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use mlx5_dpa::dpa::msg_stream::{
    MsgLevel, MsgOutput, MsgStream, MsgStreamAttr, SyncMode, MAX_LOG_DEPTH, MAX_MSG_LEN,
};

use crate::handle::{Slot, Table};
use crate::process::{proc, FlexioProcess, Proc};
use crate::{entry, getter, put, Failure, FlexioStatus, Result};

/// `struct flexio_affinity`, as the stream attributes carry it.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct FlexioStreamAffinity {
    pub type_: u32,
    pub id: u32,
}

/// `flexio_msg_stream_attr_t`.
#[repr(C)]
pub struct FlexioMsgStreamAttr {
    pub uar: *mut c_void,
    pub data_bsize: usize,
    pub sync_mode: u32,
    pub stream_name: *mut c_char,
    pub level: u8,
    pub mgmt_affinity: FlexioStreamAffinity,
    pub tracer_mode: u32,
    pub tracer_msg_formats: *mut *mut c_char,
}

pub const FLEXIO_LOG_DEV_SYNC_MODE_SYNC: u32 = 0;
pub const FLEXIO_LOG_DEV_SYNC_MODE_ASYNC: u32 = 1;
pub const FLEXIO_LOG_DEV_SYNC_MODE_BATCH: u32 = 2;
pub const FLEXIO_LOG_DEV_SYNC_MODE_TRACER: u32 = 3;

/// The smallest `data_bsize` FlexIO accepts (2 KiB).
pub const MIN_DATA_BSIZE: usize = 2048;

/// How long a flush waits for the stream to go quiet.
pub const FLUSH_TIMEOUT: Duration = Duration::from_secs(1);

/// Most tracer formats one stream takes.
const MAX_TRACER_FORMATS: usize = 4096;

/// `struct flexio_msg_stream` (opaque to C).
pub struct FlexioMsgStream {
    _private: [u8; 0],
}

struct Stream {
    stream: Slot<MsgStream>,
    id: u32,
    process: Arc<Proc>,
}

static STREAMS: Table<Stream> = Table::new("flexio_msg_stream");

/// A C `FILE *` the stream writes each message to (and flushes), as FlexIO does.
struct CFile(*mut c_void);

// SAFETY: stdio streams lock themselves; the FILE stays open while the stream lives (the
// caller's contract of flexio_msg_stream_create).
unsafe impl Send for CFile {}

unsafe extern "C" {
    fn fwrite(ptr: *const c_void, size: usize, n: usize, stream: *mut c_void) -> usize;
    fn fflush(stream: *mut c_void) -> i32;
}

impl Write for CFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        // SAFETY: `buf` is readable for its length; the FILE is open (see above).
        let n = unsafe { fwrite(buf.as_ptr().cast(), 1, buf.len(), self.0) };
        if n == 0 && !buf.is_empty() {
            return Err(std::io::Error::other("fwrite wrote nothing"));
        }
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        // SAFETY: as above.
        if unsafe { fflush(self.0) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    }
}

/// A writer that flushes after every message, as a console reader expects.
struct Flushing(CFile);

impl Write for Flushing {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.0.write(buf)?;
        self.0.flush()?;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

/// The tracer formats, up to the NULL that ends the array.
///
/// # Safety
/// `p` is NULL or a NULL-terminated array of NUL-terminated strings.
unsafe fn tracer_formats(p: *mut *mut c_char) -> Result<Arc<[String]>> {
    if p.is_null() {
        return Err(Failure::new("a tracer stream without tracer_msg_formats"));
    }
    let mut v = Vec::new();
    for i in 0..MAX_TRACER_FORMATS {
        // SAFETY: the array runs up to its NULL (the caller's contract).
        let s = unsafe { *p.add(i) };
        if s.is_null() {
            return Ok(v.into());
        }
        // SAFETY: NUL-terminated.
        v.push(unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned());
    }
    Err(Failure::new(format!(
        "tracer_msg_formats has no NULL within {MAX_TRACER_FORMATS} entries"
    )))
}

/// log2 of the messages in flight for a message buffer of `data_bsize` bytes, each message
/// slot holding the longest message.
fn log_depth(data_bsize: usize) -> Result<u8> {
    if data_bsize < MIN_DATA_BSIZE || !data_bsize.is_power_of_two() {
        return Err(Failure::new(format!(
            "data_bsize {data_bsize} is not a power of two of at least {MIN_DATA_BSIZE}"
        )));
    }
    let slots = data_bsize / MAX_MSG_LEN;
    Ok((slots.trailing_zeros() as u8).min(MAX_LOG_DEPTH))
}

/// Creates a message stream of the process writing to `out` (FlexIO
/// `flexio_msg_stream_create`). The process's first stream is the default one (id 0, where
/// `flexio_dev_print` writes), later ones take the next ids. SYNC delivers from a thread of
/// the library as messages arrive; ASYNC and BATCH keep them until `flexio_msg_stream_flush`
/// (or the destroy); TRACER delivers binary records formatted with `tracer_msg_formats`.
/// `ppthread` is set to 0: the delivering thread is the library's.
///
/// # Safety
/// `stream_fattr` is NULL or valid; `out` is NULL or an open `FILE *` that outlives the
/// stream; `ppthread` and `stream` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flexio_msg_stream_create(
    process: *mut FlexioProcess,
    stream_fattr: *mut FlexioMsgStreamAttr,
    out: *mut c_void,
    ppthread: *mut u64,
    stream: *mut *mut FlexioMsgStream,
) -> FlexioStatus {
    entry("flexio_msg_stream_create", || {
        let p = proc(process)?;
        // SAFETY: NULL or valid (the caller's contract).
        let a =
            unsafe { stream_fattr.as_ref() }.ok_or_else(|| Failure::new("stream_fattr is NULL"))?;
        if out.is_null() || stream.is_null() {
            return Err(Failure::new("out or stream is NULL"));
        }
        let level = MsgLevel::from_raw(a.level)
            .filter(|l| *l != MsgLevel::AlwaysPrint)
            .ok_or_else(|| Failure::new(format!("level {} is no stream level", a.level)))?;
        let (sync_mode, tracer) = match a.sync_mode {
            FLEXIO_LOG_DEV_SYNC_MODE_SYNC => (SyncMode::Sync, None),
            FLEXIO_LOG_DEV_SYNC_MODE_ASYNC | FLEXIO_LOG_DEV_SYNC_MODE_BATCH => {
                (SyncMode::Batch, None)
            }
            FLEXIO_LOG_DEV_SYNC_MODE_TRACER => {
                // SAFETY: as the caller's contract.
                (
                    SyncMode::Sync,
                    Some(unsafe { tracer_formats(a.tracer_msg_formats) }?),
                )
            }
            m => return Err(Failure::new(format!("sync_mode {m} is unknown"))),
        };
        let id = next_stream_id(&p)?;
        let attr = MsgStreamAttr {
            stream_id: id,
            level,
            log_depth: log_depth(a.data_bsize)?,
            slot_size: MAX_MSG_LEN as u32,
            sync_mode,
            output: MsgOutput::writer(Flushing(CFile(out))),
            uar: None,
            tracer_formats: tracer,
        };
        let s = MsgStream::create(&p.process, &attr)?;
        let h = STREAMS.insert(Stream {
            stream: Slot::new("message stream", s),
            id,
            process: p,
        });
        if !ppthread.is_null() {
            // SAFETY: non-NULL and writable (the caller's contract).
            unsafe { ppthread.write(0) };
        }
        // SAFETY: checked non-NULL; writable.
        unsafe { put(stream, h, "stream") }
    })
}

/// The lowest stream id no live stream of the process has.
fn next_stream_id(p: &Arc<Proc>) -> Result<u32> {
    let used: Vec<u32> = STREAMS
        .all()
        .into_iter()
        .filter(|(_, s)| Arc::ptr_eq(&s.process, p))
        .map(|(_, s)| s.id)
        .collect();
    (0..mlx5_dpa::dpa::msg_stream::MAX_STREAMS)
        .find(|i| !used.contains(i))
        .ok_or_else(|| Failure::new("the process has the most streams it may"))
}

/// Destroys a stream after delivering what it holds (FlexIO `flexio_msg_stream_destroy`).
///
/// # Safety
/// `stream` is any pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flexio_msg_stream_destroy(stream: *mut FlexioMsgStream) -> FlexioStatus {
    entry("flexio_msg_stream_destroy", || {
        match STREAMS.remove(stream)?.stream.take() {
            Some(mut m) => {
                let _ = m.flush(FLUSH_TIMEOUT);
                Ok(m.close()?)
            }
            None => Ok(()),
        }
    })
}

/// Delivers what the stream holds (FlexIO `flexio_msg_stream_flush`): waits until no message
/// arrived for a moment, or a second passed.
///
/// # Safety
/// `stream` is any pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flexio_msg_stream_flush(stream: *mut FlexioMsgStream) -> FlexioStatus {
    entry("flexio_msg_stream_flush", || {
        STREAMS.get(stream)?.stream.with(|m| {
            m.flush(FLUSH_TIMEOUT)?;
            Ok(())
        })
    })
}

/// The stream's id, -1 for a bad handle (FlexIO `flexio_msg_stream_get_id`).
///
/// # Safety
/// `stream` is any pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flexio_msg_stream_get_id(stream: *mut FlexioMsgStream) -> i32 {
    getter("flexio_msg_stream_get_id", -1, || {
        i32::try_from(STREAMS.get(stream)?.id).map_err(|_| Failure::new("stream id"))
    })
}

/// Changes the stream's level; not the default stream's, and not to ALWAYS_PRINT (FlexIO
/// `flexio_msg_stream_level_set`).
///
/// # Safety
/// `stream` is any pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flexio_msg_stream_level_set(
    stream: *mut FlexioMsgStream,
    level: u8,
) -> FlexioStatus {
    entry("flexio_msg_stream_level_set", || {
        let s = STREAMS.get(stream)?;
        if s.id == mlx5_dpa::dpa::msg_stream::DEFAULT_STREAM_ID {
            return Err(Failure::new("the default stream's level cannot be changed"));
        }
        let level = MsgLevel::from_raw(level)
            .ok_or_else(|| Failure::new(format!("level {level} is unknown")))?;
        s.stream.with(|m| Ok(m.set_level(level)?))
    })
}

/// The streams `flexio_log_dev_init` made, by process handle (FlexIO's deprecated default-stream
/// calls keep it on the process).
static LOG_DEV: std::sync::Mutex<Vec<(usize, usize)>> = std::sync::Mutex::new(Vec::new());

fn log_dev_stream(process: *mut FlexioProcess, take: bool) -> Result<*mut FlexioMsgStream> {
    let mut g = LOG_DEV
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let i = g
        .iter()
        .position(|&(p, _)| p == process as usize)
        .ok_or_else(|| Failure::new("the process has no flexio_log_dev_init stream"))?;
    let s = g[i].1 as *mut FlexioMsgStream;
    if take {
        g.swap_remove(i);
    }
    Ok(s)
}

/// FlexIO's deprecated `flexio_log_dev_init`: a message stream to `out` (as
/// `flexio_msg_stream_create`), kept for the process's `flexio_log_dev_flush` /
/// `flexio_log_dev_destroy`. One per process.
///
/// # Safety
/// As `flexio_msg_stream_create`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flexio_log_dev_init(
    process: *mut FlexioProcess,
    stream_fattr: *mut FlexioMsgStreamAttr,
    out: *mut c_void,
    ppthread: *mut u64,
) -> FlexioStatus {
    if log_dev_stream(process, false).is_ok() {
        return entry("flexio_log_dev_init", || {
            Err(Failure::new(
                "the process has a flexio_log_dev_init stream already",
            ))
        });
    }
    let mut s = std::ptr::null_mut();
    // SAFETY: the caller's arguments, as flexio_msg_stream_create takes them; `s` is a local.
    let r = unsafe { flexio_msg_stream_create(process, stream_fattr, out, ppthread, &mut s) };
    if r == crate::FLEXIO_STATUS_SUCCESS {
        LOG_DEV
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push((process as usize, s as usize));
    }
    r
}

/// FlexIO's deprecated `flexio_log_dev_flush`: flushes the `flexio_log_dev_init` stream.
///
/// # Safety
/// `process` is any pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flexio_log_dev_flush(process: *mut FlexioProcess) -> FlexioStatus {
    match log_dev_stream(process, false) {
        // SAFETY: a handle the library made; the call checks it.
        Ok(s) => unsafe { flexio_msg_stream_flush(s) },
        Err(f) => entry("flexio_log_dev_flush", || Err(f)),
    }
}

/// FlexIO's deprecated `flexio_log_dev_destroy`: destroys the `flexio_log_dev_init` stream.
///
/// # Safety
/// `process` is any pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flexio_log_dev_destroy(process: *mut FlexioProcess) -> FlexioStatus {
    match log_dev_stream(process, true) {
        // SAFETY: a handle the library made; the call checks it.
        Ok(s) => unsafe { flexio_msg_stream_destroy(s) },
        Err(f) => entry("flexio_log_dev_destroy", || Err(f)),
    }
}
