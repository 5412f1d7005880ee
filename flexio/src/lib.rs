//! libflexio's host API for C programs, over [`mlx5_dpa::dpa`]: `libflexio.so` /
//! `libflexio.a` and `include/libflexio/flexio.h`, so that a FlexIO host program written for
//! NVIDIA's libflexio compiles and links `-lflexio` unchanged and runs without DOCA.
//!
//! A process is created on the caller's `struct ibv_context *`: the library opens a DevX
//! context of its own on that context's device through rdma-core (the `rdma-core` backend of
//! `mlx5_dpa::devx`); on a BlueField-3 that is the real device, on the model the device
//! `mlx5-dpa run` serves. docs/flexio-c.md lists what is implemented.
//!
//! Every entry point checks its arguments (NULL, sizes, handles that are not live handles of
//! their kind) and returns `FLEXIO_STATUS_FAILED`, with a message on standard error at
//! `FLEXIO_LOG_LVL_ERR`; none aborts, and a Rust panic is caught before the C boundary.
//!
//! ```no_run
//! // The C API is reached from C; from Rust the same calls are plain functions.
//! use flexio::{flexio_log_lvl_set, FLEXIO_LOG_LVL_DBG};
//! let previous = flexio_log_lvl_set(FLEXIO_LOG_LVL_DBG);
//! # let _ = previous;
//! ```

mod app;
mod cmdq;
mod handle;
mod handler;
mod mkey;
mod process;
mod qp;
mod queue;
mod stream;
mod window;

pub use app::*;
pub use cmdq::*;
pub use handler::*;
pub use mkey::*;
pub use process::*;
pub use qp::*;
pub use queue::*;
pub use stream::*;
pub use window::*;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU32, Ordering};

/// `flexio_status`.
pub type FlexioStatus = i32;
/// The call did what it was asked.
pub const FLEXIO_STATUS_SUCCESS: FlexioStatus = 0;
/// It did not (the reason is on standard error).
pub const FLEXIO_STATUS_FAILED: FlexioStatus = 1;
/// A wait ran out.
pub const FLEXIO_STATUS_TIMEOUT: FlexioStatus = 2;
/// The process failed on the device.
pub const FLEXIO_STATUS_FATAL_ERR: FlexioStatus = 3;

/// `enum flexio_log_lvl`.
pub type FlexioLogLvl = u32;
pub const FLEXIO_LOG_LVL_ERR: FlexioLogLvl = 0;
pub const FLEXIO_LOG_LVL_WARN: FlexioLogLvl = 1;
pub const FLEXIO_LOG_LVL_INFO: FlexioLogLvl = 2;
pub const FLEXIO_LOG_LVL_DBG: FlexioLogLvl = 3;

/// Messages up to this level are written; errors by default.
static LOG_LEVEL: AtomicU32 = AtomicU32::new(FLEXIO_LOG_LVL_ERR);

/// Sets the level up to which the library writes its messages, and returns the one before
/// (FlexIO `flexio_log_lvl_set`). A level above DBG is taken as DBG.
#[unsafe(no_mangle)]
pub extern "C" fn flexio_log_lvl_set(lvl: FlexioLogLvl) -> FlexioLogLvl {
    LOG_LEVEL.swap(lvl.min(FLEXIO_LOG_LVL_DBG), Ordering::Relaxed)
}

/// FlexIO's `flexio_version_set`: the API version this program works with, stated once
/// (`mlx5_dpa::dpa::version::version_set`, which says what it refuses).
#[unsafe(no_mangle)]
pub extern "C" fn flexio_version_set(version: u64) -> FlexioStatus {
    entry("flexio_version_set", || {
        mlx5_dpa::dpa::version::version_set(version).map_err(|e| Failure::new(e.to_string()))
    })
}

/// Writes `msg` on standard error when `lvl` is within the level set.
pub(crate) fn log(lvl: FlexioLogLvl, msg: std::fmt::Arguments<'_>) {
    if lvl <= LOG_LEVEL.load(Ordering::Relaxed) {
        let name = ["ERR", "WARN", "INFO", "DBG"][lvl.min(3) as usize];
        eprintln!("flexio {name}: {msg}");
    }
}

/// The failure of an entry point: its message, logged at ERR, and the status it returns.
#[derive(Debug)]
pub(crate) struct Failure {
    status: FlexioStatus,
    msg: String,
}

impl Failure {
    pub(crate) fn new(msg: impl Into<String>) -> Failure {
        Failure {
            status: FLEXIO_STATUS_FAILED,
            msg: msg.into(),
        }
    }
}

/// A DPA error as the status FlexIO gives it: a fault of the process is fatal, a wait that
/// ran out a timeout, anything else a failure.
impl From<mlx5_dpa::dpa::DpaError> for Failure {
    fn from(e: mlx5_dpa::dpa::DpaError) -> Failure {
        use mlx5_dpa::dpa::DpaError;
        let status = match e.root() {
            DpaError::ProcessFault { .. } => FLEXIO_STATUS_FATAL_ERR,
            DpaError::Timeout { .. } => FLEXIO_STATUS_TIMEOUT,
            _ => FLEXIO_STATUS_FAILED,
        };
        Failure {
            status,
            msg: e.to_string(),
        }
    }
}

pub(crate) type Result<T> = std::result::Result<T, Failure>;

/// Runs the body of entry point `name`: its failure is logged and turned into its status,
/// and a panic becomes `FLEXIO_STATUS_FAILED` instead of crossing into C.
pub(crate) fn entry(name: &str, body: impl FnOnce() -> Result<()>) -> FlexioStatus {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => FLEXIO_STATUS_SUCCESS,
        Ok(Err(f)) => {
            log(FLEXIO_LOG_LVL_ERR, format_args!("{name}: {}", f.msg));
            f.status
        }
        Err(_) => {
            log(
                FLEXIO_LOG_LVL_ERR,
                format_args!("{name}: internal error (panic)"),
            );
            FLEXIO_STATUS_FAILED
        }
    }
}

/// As [`entry`] for a getter: its value, or `fallback` (FlexIO's error value) on failure.
pub(crate) fn getter<T>(name: &str, fallback: T, body: impl FnOnce() -> Result<T>) -> T {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(v)) => v,
        Ok(Err(f)) => {
            log(FLEXIO_LOG_LVL_ERR, format_args!("{name}: {}", f.msg));
            fallback
        }
        Err(_) => {
            log(
                FLEXIO_LOG_LVL_ERR,
                format_args!("{name}: internal error (panic)"),
            );
            fallback
        }
    }
}

/// Writes `v` through the out-pointer `p`, which must not be NULL.
///
/// # Safety
/// `p` is NULL or valid for a write of `T`.
pub(crate) unsafe fn put<T>(p: *mut T, v: T, what: &str) -> Result<()> {
    if p.is_null() {
        return Err(Failure::new(format!("{what} is NULL")));
    }
    // SAFETY: non-NULL, and the caller vouches for it.
    unsafe { p.write(v) };
    Ok(())
}

/// A C string argument, which must be non-NULL, UTF-8 and at most `FLEXIO_MAX_NAME_LEN`
/// bytes.
///
/// # Safety
/// `p` is NULL or a NUL-terminated string.
pub(crate) unsafe fn name_arg(p: *const std::ffi::c_char, what: &str) -> Result<String> {
    if p.is_null() {
        return Err(Failure::new(format!("{what} is NULL")));
    }
    // SAFETY: non-NULL and NUL-terminated (the caller's contract).
    let s = unsafe { std::ffi::CStr::from_ptr(p) };
    if s.to_bytes().len() > FLEXIO_MAX_NAME_LEN {
        return Err(Failure::new(format!(
            "{what} is longer than {FLEXIO_MAX_NAME_LEN} bytes"
        )));
    }
    s.to_str()
        .map(str::to_owned)
        .map_err(|_| Failure::new(format!("{what} is not UTF-8")))
}

/// Longest application or device function name (`FLEXIO_MAX_NAME_LEN`).
pub const FLEXIO_MAX_NAME_LEN: usize = 256;

#[cfg(test)]
mod tests;
