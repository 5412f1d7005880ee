//! DevX capture: every mailbox a program sends to an mlx5 device through rdma-core's
//! `mlx5dv_devx_*` calls, and what came back, with timing.
//!
//! **The library** (`libmlx5_dpa_capture.so`, this crate's `cdylib`) is loaded before
//! rdma-core with `LD_PRELOAD` and defines the DevX entry points of `mlx5dv.h`:
//! `mlx5dv_devx_general_cmd`, `mlx5dv_devx_obj_create` / `_query` / `_modify` / `_destroy`,
//! `mlx5dv_devx_umem_reg` / `_dereg`. Each passes the call to rdma-core's own function (found
//! with `dlsym(RTLD_NEXT)`) and records it; without rdma-core the call fails with `ENOSYS`
//! and is recorded so. So running NVIDIA's FlexIO samples on a BlueField-3 as
//!
//! ```text
//! MLX5_DPA_CAPTURE=flexio_rpc.jsonl LD_PRELOAD=target/release/libmlx5_dpa_capture.so \
//!     ./flexio_rpc mlx5_0
//! mlx5-dpa capture show flexio_rpc.jsonl
//! mlx5-dpa --capture ours.jsonl --device mlx5_0 demo rpc 1 2     # the project's own
//! mlx5-dpa capture diff flexio_rpc.jsonl ours.jsonl
//! ```
//!
//! gives a capture of what FlexIO sends, to decode with this project's layouts and to compare
//! with what the project sends for the same sample. `MLX5_DPA_CAPTURE` names the file
//! (default `mlx5-dpa-capture.<pid>.jsonl` in the working directory).
//!
//! **The format** (this module's [`Record`], [`Recorder`]): JSON lines, one object per call,
//! written (and flushed) as the call returns:
//!
//! ```text
//! {"seq":3,"call":"obj_create","t_ns":81234,"dur_ns":5120,"in":"0400...","out":"0000...","ret":0,"errno":0,"obj":3}
//! ```
//!
//! `seq` counts calls from 1; `t_ns` is when the call began, from the first record; `in` and
//! `out` are the inbox and the outbox after the call, as hex (empty for calls without
//! mailboxes); `ret` is the call's result (0 or rdma-core's error code; for `obj_create` and
//! `umem_reg` 0 when a handle came back, -1 otherwise) and `errno` the thread's errno after a
//! failure; `obj` names the object an `obj_*` call acts on by the `seq` of the call that
//! created it (for a create: its own `seq`, if it succeeded); `umem_reg` records `size` and
//! `access`.

use std::collections::HashMap;
use std::ffi::{c_int, c_void};
use std::fs::File;
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Instant;

/// The environment variable naming the capture file.
pub const ENV_FILE: &str = "MLX5_DPA_CAPTURE";

/// The DevX calls a capture records.
pub const CALLS: [&str; 7] = [
    "general_cmd",
    "obj_create",
    "obj_query",
    "obj_modify",
    "obj_destroy",
    "umem_reg",
    "umem_dereg",
];

/// One recorded call.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Record {
    pub seq: u64,
    /// One of [`CALLS`].
    pub call: String,
    pub t_ns: u64,
    pub dur_ns: u64,
    pub inbox: Vec<u8>,
    pub outbox: Vec<u8>,
    pub ret: i64,
    pub errno: i32,
    /// The object acted on, by the `seq` of its create.
    pub obj: Option<u64>,
    /// `umem_reg`: bytes and access flags.
    pub size: Option<u64>,
    pub access: Option<u32>,
}

/// Why a capture line could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// 1-based line number.
    pub line: usize,
    pub reason: String,
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}: {}", self.line, self.reason)
    }
}

impl std::error::Error for ParseError {}

/// `b` as lower-case hex digits, two a byte (the records' byte format).
pub fn hex(b: &[u8]) -> String {
    let mut s = String::with_capacity(b.len() * 2);
    for x in b {
        s.push_str(&format!("{x:02x}"));
    }
    s
}

/// The bytes of hex digits `s` (two a byte); `None` if `s` is not that.
pub fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

impl Record {
    /// The record as its JSON line (without the newline).
    pub fn to_line(&self) -> String {
        let mut v = serde_json::json!({
            "seq": self.seq,
            "call": self.call,
            "t_ns": self.t_ns,
            "dur_ns": self.dur_ns,
            "in": hex(&self.inbox),
            "out": hex(&self.outbox),
            "ret": self.ret,
            "errno": self.errno,
            "obj": self.obj,
        });
        if let Some(s) = self.size {
            v["size"] = s.into();
        }
        if let Some(a) = self.access {
            v["access"] = a.into();
        }
        v.to_string()
    }

    /// Reads one JSON line.
    ///
    /// # Errors
    /// A [`ParseError`] naming the field that is missing or malformed.
    pub fn parse(line_no: usize, line: &str) -> Result<Record, ParseError> {
        let err = |reason: String| ParseError {
            line: line_no,
            reason,
        };
        let v: serde_json::Value =
            serde_json::from_str(line).map_err(|e| err(format!("not JSON: {e}")))?;
        let num = |k: &str| {
            v.get(k)
                .and_then(serde_json::Value::as_u64)
                .ok_or_else(|| err(format!("no number {k:?}")))
        };
        let bytes = |k: &str| {
            v.get(k)
                .and_then(serde_json::Value::as_str)
                .and_then(unhex)
                .ok_or_else(|| err(format!("{k:?} is not a hex string")))
        };
        let call = v
            .get("call")
            .and_then(serde_json::Value::as_str)
            .filter(|c| CALLS.contains(c))
            .ok_or_else(|| err("no known \"call\"".into()))?
            .to_string();
        Ok(Record {
            seq: num("seq")?,
            call,
            t_ns: num("t_ns")?,
            dur_ns: num("dur_ns")?,
            inbox: bytes("in")?,
            outbox: bytes("out")?,
            ret: v
                .get("ret")
                .and_then(serde_json::Value::as_i64)
                .ok_or_else(|| err("no number \"ret\"".into()))?,
            errno: v
                .get("errno")
                .and_then(serde_json::Value::as_i64)
                .and_then(|e| i32::try_from(e).ok())
                .ok_or_else(|| err("no number \"errno\"".into()))?,
            obj: v.get("obj").and_then(serde_json::Value::as_u64),
            size: v.get("size").and_then(serde_json::Value::as_u64),
            access: v
                .get("access")
                .and_then(serde_json::Value::as_u64)
                .and_then(|a| u32::try_from(a).ok()),
        })
    }
}

/// Reads a whole capture (blank lines skipped).
///
/// # Errors
/// The first line that is not a record.
pub fn parse(text: &str) -> Result<Vec<Record>, ParseError> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| Record::parse(i + 1, l))
        .collect()
}

/// Writes records to a capture file: numbered, timed from the first, one flushed line each.
/// Shared by threads.
#[derive(Debug)]
pub struct Recorder {
    file: Mutex<File>,
    seq: AtomicU64,
    start: Instant,
}

/// A call being recorded: from [`Recorder::begin`] to [`Recorder::end`].
#[derive(Debug)]
pub struct Pending {
    seq: u64,
    t_ns: u64,
    began: Instant,
}

impl Recorder {
    /// A recorder writing to `file` (created, or truncated).
    ///
    /// # Errors
    /// The file cannot be created.
    pub fn create(path: &std::path::Path) -> std::io::Result<Recorder> {
        Ok(Recorder {
            file: Mutex::new(File::create(path)?),
            seq: AtomicU64::new(0),
            start: Instant::now(),
        })
    }

    /// Numbers a call and notes when it began.
    pub fn begin(&self) -> Pending {
        let began = Instant::now();
        Pending {
            seq: self.seq.fetch_add(1, Ordering::Relaxed) + 1,
            t_ns: u64::try_from(began.duration_since(self.start).as_nanos()).unwrap_or(u64::MAX),
            began,
        }
    }

    /// Writes the record of a call that began with `p`; `rec`'s `seq`, `t_ns` and `dur_ns` are
    /// set here. Returns the `seq`. A write error is dropped: capturing never fails the call.
    pub fn end(&self, p: Pending, mut rec: Record) -> u64 {
        rec.seq = p.seq;
        rec.t_ns = p.t_ns;
        rec.dur_ns = u64::try_from(p.began.elapsed().as_nanos()).unwrap_or(u64::MAX);
        let mut line = rec.to_line();
        line.push('\n');
        let mut f = self.file.lock().unwrap_or_else(|e| e.into_inner());
        let _ = f.write_all(line.as_bytes());
        let _ = f.flush();
        p.seq
    }
}

// ---------------------------------------------------------------------------------------------
// The preload library

/// The recorder of this process (when the file could be created).
fn recorder() -> Option<&'static Recorder> {
    static REC: OnceLock<Option<Recorder>> = OnceLock::new();
    REC.get_or_init(|| {
        let path = std::env::var_os(ENV_FILE).map_or_else(
            || std::path::PathBuf::from(format!("mlx5-dpa-capture.{}.jsonl", std::process::id())),
            std::path::PathBuf::from,
        );
        Recorder::create(&path).ok()
    })
    .as_ref()
}

/// Capture object ids by rdma-core handle (the `seq` of the create).
fn objects() -> &'static Mutex<HashMap<usize, u64>> {
    static OBJ: OnceLock<Mutex<HashMap<usize, u64>>> = OnceLock::new();
    OBJ.get_or_init(|| Mutex::new(HashMap::new()))
}

fn object_of(handle: *mut c_void) -> Option<u64> {
    objects()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(&(handle as usize))
        .copied()
}

/// rdma-core's own `name` (the next definition after this library's).
fn real(name: &'static [u8]) -> Option<usize> {
    debug_assert_eq!(name.last(), Some(&0));
    // SAFETY: `name` is a NUL-terminated literal (every caller passes one, checked above);
    // RTLD_NEXT asks the dynamic linker for the next object's definition, never ours.
    let p = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr().cast()) };
    (!p.is_null()).then_some(p as usize)
}

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

fn set_errno(e: i32) {
    // SAFETY: `__errno_location` returns this thread's errno slot (glibc, musl).
    unsafe { *libc::__errno_location() = e };
}

/// `len` bytes at `p` (empty for a null pointer or no length).
///
/// # Safety
/// `p` must be valid for reads of `len` bytes (the caller's contract with rdma-core).
unsafe fn bytes(p: *const c_void, len: usize) -> Vec<u8> {
    if p.is_null() || len == 0 {
        return Vec::new();
    }
    // SAFETY: as the function's contract says.
    unsafe { std::slice::from_raw_parts(p.cast::<u8>(), len) }.to_vec()
}

type CmdFn = unsafe extern "C" fn(*mut c_void, *const c_void, usize, *mut c_void, usize) -> c_int;
type CreateFn =
    unsafe extern "C" fn(*mut c_void, *const c_void, usize, *mut c_void, usize) -> *mut c_void;
type DestroyFn = unsafe extern "C" fn(*mut c_void) -> c_int;
type UmemRegFn = unsafe extern "C" fn(*mut c_void, *mut c_void, usize, u32) -> *mut c_void;

/// Calls a mailbox command (`general_cmd`, `obj_query`, `obj_modify`) and records it.
///
/// # Safety
/// As rdma-core's function: `inbox` readable for `inlen` bytes, `outbox` writable for
/// `outlen`.
#[allow(clippy::too_many_arguments)] // the C call's five, and what names it
unsafe fn command(
    name: &'static [u8],
    call: &str,
    handle: *mut c_void,
    obj: Option<u64>,
    inbox: *const c_void,
    inlen: usize,
    outbox: *mut c_void,
    outlen: usize,
) -> c_int {
    let rec = recorder();
    let pending = rec.map(Recorder::begin);
    let (ret, err) = match real(name) {
        Some(f) => {
            // SAFETY: `f` is rdma-core's function of this name, whose C type is `CmdFn`; the
            // arguments are the caller's, passed on unchanged.
            let ret = unsafe {
                let f: CmdFn = std::mem::transmute::<usize, CmdFn>(f);
                f(handle, inbox, inlen, outbox, outlen)
            };
            (ret, if ret != 0 { errno() } else { 0 })
        }
        None => (libc::ENOSYS, libc::ENOSYS),
    };
    if let (Some(rec), Some(p)) = (rec, pending) {
        rec.end(
            p,
            Record {
                call: call.into(),
                // SAFETY: the caller's buffers, as this function's contract says.
                inbox: unsafe { bytes(inbox, inlen) },
                // SAFETY: as above.
                outbox: unsafe { bytes(outbox, outlen) },
                ret: i64::from(ret),
                errno: err,
                obj,
                ..Default::default()
            },
        );
    }
    if ret != 0 {
        set_errno(err);
    }
    ret
}

/// `mlx5dv_devx_general_cmd` (rdma-core `mlx5dv.h`), recorded.
///
/// # Safety
/// As rdma-core's: `in_` readable for `inlen` bytes, `out` writable for `outlen`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mlx5dv_devx_general_cmd(
    context: *mut c_void,
    in_: *const c_void,
    inlen: usize,
    out: *mut c_void,
    outlen: usize,
) -> c_int {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        command(
            b"mlx5dv_devx_general_cmd\0",
            "general_cmd",
            context,
            None,
            in_,
            inlen,
            out,
            outlen,
        )
    }
}

/// `mlx5dv_devx_obj_query`, recorded.
///
/// # Safety
/// As rdma-core's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mlx5dv_devx_obj_query(
    obj: *mut c_void,
    in_: *const c_void,
    inlen: usize,
    out: *mut c_void,
    outlen: usize,
) -> c_int {
    let id = object_of(obj);
    // SAFETY: the caller's contract, passed on.
    unsafe {
        command(
            b"mlx5dv_devx_obj_query\0",
            "obj_query",
            obj,
            id,
            in_,
            inlen,
            out,
            outlen,
        )
    }
}

/// `mlx5dv_devx_obj_modify`, recorded.
///
/// # Safety
/// As rdma-core's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mlx5dv_devx_obj_modify(
    obj: *mut c_void,
    in_: *const c_void,
    inlen: usize,
    out: *mut c_void,
    outlen: usize,
) -> c_int {
    let id = object_of(obj);
    // SAFETY: the caller's contract, passed on.
    unsafe {
        command(
            b"mlx5dv_devx_obj_modify\0",
            "obj_modify",
            obj,
            id,
            in_,
            inlen,
            out,
            outlen,
        )
    }
}

/// `mlx5dv_devx_obj_create`, recorded; the object is known by this record's `seq` after.
///
/// # Safety
/// As rdma-core's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mlx5dv_devx_obj_create(
    context: *mut c_void,
    in_: *const c_void,
    inlen: usize,
    out: *mut c_void,
    outlen: usize,
) -> *mut c_void {
    let rec = recorder();
    let pending = rec.map(Recorder::begin);
    let seq = pending.as_ref().map(|p| p.seq);
    let (obj, err) = match real(b"mlx5dv_devx_obj_create\0") {
        Some(f) => {
            // SAFETY: rdma-core's function of this name, C type `CreateFn`; arguments passed
            // on unchanged.
            let obj = unsafe {
                let f: CreateFn = std::mem::transmute::<usize, CreateFn>(f);
                f(context, in_, inlen, out, outlen)
            };
            (obj, if obj.is_null() { errno() } else { 0 })
        }
        None => (std::ptr::null_mut(), libc::ENOSYS),
    };
    if let (false, Some(s)) = (obj.is_null(), seq) {
        objects()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(obj as usize, s);
    }
    if let (Some(rec), Some(p)) = (rec, pending) {
        rec.end(
            p,
            Record {
                call: "obj_create".into(),
                // SAFETY: the caller's buffers (rdma-core's contract).
                inbox: unsafe { bytes(in_, inlen) },
                // SAFETY: as above.
                outbox: unsafe { bytes(out, outlen) },
                ret: if obj.is_null() { -1 } else { 0 },
                errno: err,
                obj: if obj.is_null() { None } else { seq },
                ..Default::default()
            },
        );
    }
    if obj.is_null() {
        set_errno(err);
    }
    obj
}

/// `mlx5dv_devx_obj_destroy`, recorded (rdma-core builds the destroy mailbox itself: the
/// record has none).
///
/// # Safety
/// As rdma-core's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mlx5dv_devx_obj_destroy(obj: *mut c_void) -> c_int {
    let id = object_of(obj);
    let rec = recorder();
    let pending = rec.map(Recorder::begin);
    let (ret, err) = match real(b"mlx5dv_devx_obj_destroy\0") {
        Some(f) => {
            // SAFETY: rdma-core's function of this name, C type `DestroyFn`.
            let ret = unsafe {
                let f: DestroyFn = std::mem::transmute::<usize, DestroyFn>(f);
                f(obj)
            };
            (ret, if ret != 0 { errno() } else { 0 })
        }
        None => (libc::ENOSYS, libc::ENOSYS),
    };
    if ret == 0 {
        objects()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&(obj as usize));
    }
    if let (Some(rec), Some(p)) = (rec, pending) {
        rec.end(
            p,
            Record {
                call: "obj_destroy".into(),
                ret: i64::from(ret),
                errno: err,
                obj: id,
                ..Default::default()
            },
        );
    }
    if ret != 0 {
        set_errno(err);
    }
    ret
}

/// `mlx5dv_devx_umem_reg`, recorded (size and access; the memory's bytes are not).
///
/// # Safety
/// As rdma-core's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mlx5dv_devx_umem_reg(
    context: *mut c_void,
    addr: *mut c_void,
    size: usize,
    access: u32,
) -> *mut c_void {
    let rec = recorder();
    let pending = rec.map(Recorder::begin);
    let seq = pending.as_ref().map(|p| p.seq);
    let (umem, err) = match real(b"mlx5dv_devx_umem_reg\0") {
        Some(f) => {
            // SAFETY: rdma-core's function of this name, C type `UmemRegFn`.
            let umem = unsafe {
                let f: UmemRegFn = std::mem::transmute::<usize, UmemRegFn>(f);
                f(context, addr, size, access)
            };
            (umem, if umem.is_null() { errno() } else { 0 })
        }
        None => (std::ptr::null_mut(), libc::ENOSYS),
    };
    if let (false, Some(s)) = (umem.is_null(), seq) {
        objects()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(umem as usize, s);
    }
    if let (Some(rec), Some(p)) = (rec, pending) {
        rec.end(
            p,
            Record {
                call: "umem_reg".into(),
                ret: if umem.is_null() { -1 } else { 0 },
                errno: err,
                obj: if umem.is_null() { None } else { seq },
                size: Some(size as u64),
                access: Some(access),
                ..Default::default()
            },
        );
    }
    if umem.is_null() {
        set_errno(err);
    }
    umem
}

/// `mlx5dv_devx_umem_dereg`, recorded.
///
/// # Safety
/// As rdma-core's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mlx5dv_devx_umem_dereg(umem: *mut c_void) -> c_int {
    let id = object_of(umem);
    let rec = recorder();
    let pending = rec.map(Recorder::begin);
    let (ret, err) = match real(b"mlx5dv_devx_umem_dereg\0") {
        Some(f) => {
            // SAFETY: rdma-core's function of this name, C type `DestroyFn` (one pointer in,
            // int out).
            let ret = unsafe {
                let f: DestroyFn = std::mem::transmute::<usize, DestroyFn>(f);
                f(umem)
            };
            (ret, if ret != 0 { errno() } else { 0 })
        }
        None => (libc::ENOSYS, libc::ENOSYS),
    };
    if let (Some(rec), Some(p)) = (rec, pending) {
        rec.end(
            p,
            Record {
                call: "umem_dereg".into(),
                ret: i64::from(ret),
                errno: err,
                obj: id,
                ..Default::default()
            },
        );
    }
    if ret != 0 {
        set_errno(err);
    }
    ret
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_through_their_lines() {
        let r = Record {
            seq: 7,
            call: "umem_reg".into(),
            t_ns: 1,
            dur_ns: 2,
            inbox: vec![0, 1, 0xfe],
            outbox: vec![],
            ret: -1,
            errno: 12,
            obj: Some(3),
            size: Some(4096),
            access: Some(1),
        };
        assert_eq!(Record::parse(1, &r.to_line()).unwrap(), r);
        assert!(Record::parse(2, "{}").is_err());
        assert!(Record::parse(3, "not json").is_err());
        let bad_hex = r.to_line().replace("\"0001fe\"", "\"0x1\"");
        assert!(Record::parse(4, &bad_hex)
            .unwrap_err()
            .reason
            .contains("hex"));
        let unknown = r.to_line().replace("umem_reg", "mystery");
        assert!(Record::parse(5, &unknown).is_err());
    }
}
