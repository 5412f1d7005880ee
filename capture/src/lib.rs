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
//! **The format** is the driver's (`mlx5_dpa::devx::capture`, re-exported here): JSON lines,
//! one object per call, the same that `mlx5-dpa --capture FILE` writes for the tool's own
//! commands and for the mailboxes the model's uverbs server sends on a program's behalf.

use std::collections::HashMap;
use std::ffi::{c_int, c_void};
use std::sync::{Mutex, OnceLock};

/// The environment variable naming the capture file.
pub const ENV_FILE: &str = "MLX5_DPA_CAPTURE";

pub use mlx5_dpa::devx::capture::{
    hex, parse, unhex, ParseError, Pending, Record, Recorder, CALLS,
};

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
