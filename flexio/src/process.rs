//! Processes: creation on the caller's device, calls, DPA memory, the error state and core
//! dumps.

use std::collections::HashMap;
use std::ffi::{c_char, c_void};
use std::sync::{Arc, Mutex, PoisonError};

use mlx5_dpa::devx::rdma_core::{IbvPd, RdmaCoreDevx, VerbsPd};
use mlx5_dpa::devx::Devx;
use mlx5_dpa::devx::UarKind;
use mlx5_dpa::dpa::outbox::Outbox;
use mlx5_dpa::dpa::{DpaBuf, Process, ProcessAttr, ProcessStatus};

use crate::app::{self, App, FlexioApp, MAX_ARGBUF_SIZE};
use crate::handle::Table;
use crate::{entry, getter, put, Failure, FlexioStatus, Result};

/// `struct flexio_process_attr`.
#[repr(C)]
pub struct FlexioProcessAttr {
    pub pd: *mut IbvPd,
    pub en_pcc: i32,
}

/// `struct flexio_process` (opaque to C).
pub struct FlexioProcess {
    _private: [u8; 0],
}

/// `struct flexio_uar` (opaque to C).
pub struct FlexioUar {
    _private: [u8; 0],
}

/// `struct flexio_heap_mem_info`.
#[repr(C)]
pub struct FlexioHeapMemInfo {
    pub base_addr: u64,
    pub size: usize,
    pub requested: usize,
    pub allocated: usize,
}

/// `enum flexio_err_status`.
pub type FlexioErrStatus = u32;
pub const FLEXIO_DEV_NO_ERROR: FlexioErrStatus = 0;
pub const FLEXIO_DEV_FATAL_ERROR: FlexioErrStatus = 1;
pub const FLEXIO_DEV_USER_ERROR: FlexioErrStatus = 2;

/// A process and what the C API keeps with it. Fields drop in declaration order: the
/// process goes before its PD.
pub(crate) struct Proc {
    /// The outbox every event handler's thread starts with (FlexIO's default outbox, over
    /// the process's UAR): what `flexio_dev_cq_arm` and the doorbells of a thread ring through.
    pub(crate) default_outbox: Outbox,
    pub(crate) process: Process,
    /// The process's PD as a verbs object (`flexio_process_get_pd`): the library's own, or
    /// the caller's (`struct flexio_process_attr`'s `pd`, which the caller keeps).
    pd: ProcPd,
    pub(crate) app: Arc<App>,
    /// The library's DevX context on the device (its objects' rdma-core pointers).
    pub(crate) rdma: Arc<RdmaCoreDevx>,
    /// The transport domain and TIS of the process's queues, made on first use.
    pub(crate) transport: crate::queue::Transport,
    /// Buffers `flexio_buf_dev_alloc` handed out, by DPA address, until freed, with the
    /// size asked for.
    bufs: Mutex<HashMap<u64, (DpaBuf, usize)>>,
    /// The handle of the process's UAR, made on first `flexio_process_get_uar`.
    uar: Mutex<Option<usize>>,
    /// The read end `flexio_err_handler_fd` gives, made on its first call; closed with the
    /// process.
    err_fd: std::sync::OnceLock<std::io::PipeReader>,
}

enum ProcPd {
    Own(VerbsPd),
    Callers(usize),
}

impl Proc {
    /// The `struct ibv_pd *` of the process's PD.
    pub(crate) fn ibv_pd(&self) -> *mut IbvPd {
        match &self.pd {
            ProcPd::Own(p) => p.as_ptr(),
            ProcPd::Callers(p) => *p as *mut IbvPd,
        }
    }
}

pub(crate) static PROCESSES: Table<Proc> = Table::new("flexio_process");

/// The UARs handed out: each a process's own page.
pub(crate) static UARS: Table<Arc<mlx5_dpa::uar::UarPage>> = Table::new("flexio_uar");

/// The process of handle `p`.
pub(crate) fn proc(p: *const FlexioProcess) -> Result<Arc<Proc>> {
    PROCESSES.get(p)
}

/// Creates a process running `app` on the device of `ibv_ctx` (FlexIO
/// `flexio_process_create`). The library opens a DevX context of its own on that device.
/// The process's PD is the attributes' `pd`, or one the library makes on its context; PCC is
/// not supported.
///
/// # Safety
/// `ibv_ctx` is NULL or a live `struct ibv_context *`; `process_attr` is NULL or valid;
/// `process_ptr` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flexio_process_create(
    ibv_ctx: *mut c_void,
    app: *mut FlexioApp,
    process_attr: *const FlexioProcessAttr,
    process_ptr: *mut *mut FlexioProcess,
) -> FlexioStatus {
    entry("flexio_process_create", || {
        if ibv_ctx.is_null() {
            return Err(Failure::new("ibv_ctx is NULL"));
        }
        if process_ptr.is_null() {
            return Err(Failure::new("process_ptr is NULL"));
        }
        let app = app::app(app)?;
        // SAFETY: NULL or valid (the caller's contract).
        let attr = unsafe { process_attr.as_ref() };
        if attr.is_some_and(|a| a.en_pcc != 0) {
            return Err(Failure::new("PCC processes (en_pcc) are not supported"));
        }
        // SAFETY: a live context (the caller's contract).
        let rdma = unsafe { RdmaCoreDevx::open_on(ibv_ctx) }
            .map_err(|e| Failure::new(format!("opening DevX on the device: {e}")))?;
        let pd = match attr.map(|a| a.pd).filter(|p| !p.is_null()) {
            Some(p) => ProcPd::Callers(p as usize),
            None => ProcPd::Own(
                rdma.alloc_verbs_pd()
                    .map_err(|e| Failure::new(format!("allocating the process's PD: {e}")))?,
            ),
        };
        let pdn = match &pd {
            ProcPd::Own(p) => p.pdn(),
            // SAFETY: the attributes' PD is live (the caller's contract).
            ProcPd::Callers(p) => unsafe { RdmaCoreDevx::pdn(*p as *mut IbvPd) }
                .map_err(|e| Failure::new(format!("the attributes' pd: {e}")))?,
        };
        let dev: Arc<dyn Devx> = Arc::clone(&rdma) as Arc<dyn Devx>;
        let process = Process::from_app(
            &dev,
            &app.device,
            &ProcessAttr {
                pd: Some(mlx5_dpa::mlx5::Pdn(pdn)),
                ..ProcessAttr::default()
            },
        )?;
        let default_outbox = process.outbox(process.uar())?;
        let h = PROCESSES.insert(Proc {
            default_outbox,
            process,
            pd,
            app,
            rdma,
            transport: crate::queue::Transport::new(),
            bufs: Mutex::new(HashMap::new()),
            uar: Mutex::new(None),
            err_fd: std::sync::OnceLock::new(),
        });
        // SAFETY: checked non-NULL; writable (the caller's contract).
        unsafe { process_ptr.write(h) };
        Ok(())
    })
}

/// Destroys a process; NULL is accepted (FlexIO `flexio_process_destroy`). What was made on
/// it and is still referenced goes with its last user.
///
/// # Safety
/// `process` is any pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flexio_process_destroy(process: *mut FlexioProcess) -> FlexioStatus {
    entry("flexio_process_destroy", || {
        if process.is_null() {
            return Ok(());
        }
        let p = PROCESSES.remove(process)?;
        if let Some(u) = p.uar.lock().unwrap_or_else(PoisonError::into_inner).take() {
            let _ = UARS.remove(u as *const FlexioUar);
        }
        Ok(())
    })
}

/// For the C part of `flexio_process_call`: whether `func` takes a packed argument buffer,
/// its size and the pack function.
///
/// # Safety
/// The out-pointers are valid (the C part passes its locals).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mlx5_flexio_call_info(
    process: *mut FlexioProcess,
    func: *const c_void,
    pup: *mut i32,
    argbuf_size: *mut usize,
    pack: *mut *const c_void,
) -> FlexioStatus {
    entry("flexio_process_call", || {
        let p = proc(process)?;
        let f = p.app.func(func)?;
        let (is_pup, size, pack_fn) = match &f.pup {
            Some(x) if x.argbuf_size <= MAX_ARGBUF_SIZE => (1, x.argbuf_size, x.pack),
            Some(x) => {
                return Err(Failure::new(format!(
                    "an argument buffer of {} bytes",
                    x.argbuf_size
                )))
            }
            None => (0, 0, std::ptr::null()),
        };
        // SAFETY: the C part's locals.
        unsafe {
            put(pup, is_pup, "pup")?;
            put(argbuf_size, size, "argbuf_size")?;
            put(pack, pack_fn, "pack")?;
        }
        Ok(())
    })
}

/// For the C part of `flexio_process_call`: a call with the packed argument buffer.
///
/// # Safety
/// `argbuf` covers `len` bytes; `ret` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mlx5_flexio_call_packed(
    process: *mut FlexioProcess,
    func: *const c_void,
    argbuf: *const u8,
    len: usize,
    ret: *mut u64,
) -> FlexioStatus {
    entry("flexio_process_call", || {
        let p = proc(process)?;
        let f = p.app.func(func)?;
        let unpack = f
            .pup
            .as_ref()
            .map(|x| x.unpack.clone())
            .ok_or_else(|| Failure::new("the function takes no packed arguments"))?;
        if argbuf.is_null() {
            return Err(Failure::new("no argument buffer"));
        }
        // SAFETY: `argbuf` covers `len` bytes (the C part allocated them).
        let buf = unsafe { std::slice::from_raw_parts(argbuf, len) };
        let r = p.process.call_packed(&f.name, &unpack, buf)?;
        set_ret(ret, r);
        Ok(())
    })
}

/// For the C part of `flexio_process_call`: a call with one 64-bit argument.
///
/// # Safety
/// `ret` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mlx5_flexio_call_raw(
    process: *mut FlexioProcess,
    func: *const c_void,
    arg: u64,
    ret: *mut u64,
) -> FlexioStatus {
    entry("flexio_process_call", || {
        let p = proc(process)?;
        let f = p.app.func(func)?;
        let r = p.process.call_raw(&f.name, arg)?;
        set_ret(ret, r);
        Ok(())
    })
}

fn set_ret(ret: *mut u64, r: u64) {
    if !ret.is_null() {
        // SAFETY: non-NULL and writable (the C caller's `func_ret`).
        unsafe { ret.write(r) };
    }
}

/// `flexio_process_call(process, host_func, func_ret, ...)`: the variadic entry is the C
/// part's `mlx5_flexio_process_call` (src/call.c), reached by a jump that leaves the caller's
/// registers and stack as they were, which a C-variadic function needs and a stable-Rust
/// function cannot be.
///
/// # Safety
/// As `flexio_process_call`'s C declaration: `process` and `host_func` are any pointers
/// (checked), `func_ret` NULL or writable, and the arguments those the function was
/// registered with.
#[unsafe(naked)]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flexio_process_call() {
    #[cfg(target_arch = "x86_64")]
    core::arch::naked_asm!("jmp {f}", f = sym mlx5_flexio_process_call);
    #[cfg(target_arch = "aarch64")]
    core::arch::naked_asm!("b {f}", f = sym mlx5_flexio_process_call);
}

unsafe extern "C" {
    /// src/call.c.
    fn mlx5_flexio_process_call();
}

/// The process's error state (FlexIO `flexio_err_status_get`): a fault, a watchdog or an
/// unknown OS call is fatal, an exit the process asked for a user error. NULL, or a process
/// whose state cannot be read, reads as fatal.
///
/// # Safety
/// `process` is any pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flexio_err_status_get(process: *mut FlexioProcess) -> FlexioErrStatus {
    if process.is_null() {
        return FLEXIO_DEV_NO_ERROR;
    }
    getter("flexio_err_status_get", FLEXIO_DEV_FATAL_ERROR, || {
        let st = proc(process)?.process.err_status()?;
        Ok(match st.status {
            ProcessStatus::Ok => FLEXIO_DEV_NO_ERROR,
            ProcessStatus::Exited(_) => FLEXIO_DEV_USER_ERROR,
            _ => FLEXIO_DEV_FATAL_ERROR,
        })
    })
}

/// How often the watcher behind `flexio_err_handler_fd` reads the process's status.
const ERR_POLL: std::time::Duration = std::time::Duration::from_millis(10);

/// A file descriptor that becomes readable once the process has failed (FlexIO
/// `flexio_err_handler_fd`), for select / poll / epoll beside the program's own; -1 for a bad
/// handle. Valid until the process is destroyed. A thread of the library reads the process's
/// status every 10 ms until then and writes one byte when it is no longer running.
///
/// # Safety
/// `process` is any pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flexio_err_handler_fd(process: *mut FlexioProcess) -> i32 {
    use std::io::Write;
    use std::os::fd::AsRawFd;

    getter("flexio_err_handler_fd", -1, || {
        let p = proc(process)?;
        if let Some(r) = p.err_fd.get() {
            return Ok(r.as_raw_fd());
        }
        let (r, mut w) =
            std::io::pipe().map_err(|e| Failure::new(format!("making the pipe: {e}")))?;
        let fd = r.as_raw_fd();
        if p.err_fd.set(r).is_err() {
            // Another call made it first.
            return Ok(p.err_fd.get().map_or(-1, AsRawFd::as_raw_fd));
        }
        let weak = Arc::downgrade(&p);
        drop(p);
        std::thread::Builder::new()
            .name("flexio-err-watch".into())
            .spawn(move || loop {
                std::thread::sleep(ERR_POLL);
                // The process is gone: nothing to watch.
                let Some(p) = weak.upgrade() else { break };
                let failed = p
                    .process
                    .err_status()
                    .map_or(true, |s| s.status != ProcessStatus::Ok);
                drop(p);
                if failed {
                    let _ = w.write_all(&[1]);
                    break;
                }
            })
            .map_err(|e| Failure::new(format!("starting the watcher: {e}")))?;
        Ok(fd)
    })
}

/// Prints what is known of a failed process's crash, in text, and writes the same to
/// `flexio_dev.<id>.crash` or `<outfile>.<id>.crash`, a relative name in the current directory
/// or, failing that, in /tmp (FlexIO `flexio_crash_data`): the
/// process, its status and syndrome, then its core dump decoded (threads, causes, registers,
/// regions). FAILED while the process has not failed (firmware gives no core dump then).
///
/// # Safety
/// `outfile` is NULL or NUL-terminated.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flexio_crash_data(
    process: *mut FlexioProcess,
    outfile: *const c_char,
) -> FlexioStatus {
    entry("flexio_crash_data", || {
        let p = proc(process)?;
        let base = if outfile.is_null() {
            "flexio_dev".to_string()
        } else {
            // SAFETY: non-NULL and NUL-terminated (the caller's contract).
            unsafe { std::ffi::CStr::from_ptr(outfile) }
                .to_string_lossy()
                .into_owned()
        };
        let st = p.process.err_status()?;
        let core = p.process.coredump()?;
        let text = format!(
            "DPA process {:#x}: {:?}, error syndrome {:#x}\n{core}",
            p.process.id(),
            st.status,
            st.error_syndrome
        );
        print!("{text}");
        // As FlexIO: a relative name in the current directory, else in /tmp.
        let path = format!("{base}.{}.crash", p.process.id());
        std::fs::write(&path, &text).or_else(|e| {
            if path.starts_with('/') {
                return Err(Failure::new(format!("writing {path}: {e}")));
            }
            let tmp = format!("/tmp/{path}");
            std::fs::write(&tmp, &text).map_err(|e| Failure::new(format!("writing {tmp}: {e}")))
        })
    })
}

/// Writes an ELF core file of the process (FlexIO `flexio_coredump_create`): to
/// `flexio_dev.<id>.core`, or `<outfile>.<id>.core`, where `<id>` is the process's id.
///
/// # Safety
/// `outfile` is NULL or NUL-terminated.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flexio_coredump_create(
    process: *mut FlexioProcess,
    outfile: *const c_char,
) -> FlexioStatus {
    entry("flexio_coredump_create", || {
        let p = proc(process)?;
        let base = if outfile.is_null() {
            "flexio_dev".to_string()
        } else {
            // SAFETY: non-NULL and NUL-terminated (the caller's contract).
            unsafe { std::ffi::CStr::from_ptr(outfile) }
                .to_string_lossy()
                .into_owned()
        };
        let path = format!("{base}.{}.core", p.process.id());
        let core = p.process.coredump()?.to_elf_core();
        std::fs::write(&path, core).map_err(|e| Failure::new(format!("writing {path}: {e}")))
    })
}

/// The id of the process's DPA memory (DUMEM), `u32::MAX` for a bad handle (FlexIO
/// `flexio_process_get_dumem_id`).
///
/// # Safety
/// `process` is any pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flexio_process_get_dumem_id(process: *mut FlexioProcess) -> u32 {
    getter("flexio_process_get_dumem_id", u32::MAX, || {
        Ok(proc(process)?.process.dumem().0)
    })
}

/// The token a debugger attaches to the process with (FlexIO
/// `flexio_process_udbg_token_get`): 0, which FlexIO documents as "user debug access not
/// allowed", as no debugger reaches a process of this library yet (the tool's GDB server
/// serves the processes of its own model: docs/tool.md).
///
/// # Safety
/// `process` is any pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flexio_process_udbg_token_get(process: *mut FlexioProcess) -> u64 {
    getter("flexio_process_udbg_token_get", 0, || {
        proc(process)?;
        Ok(0)
    })
}

/// The process's PD, NULL for a bad handle (FlexIO `flexio_process_get_pd`): what its queues
/// and keys are made in.
///
/// # Safety
/// `process` is any pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flexio_process_get_pd(process: *mut FlexioProcess) -> *mut IbvPd {
    getter("flexio_process_get_pd", std::ptr::null_mut(), || {
        Ok(proc(process)?.ibv_pd())
    })
}

/// The process's UAR, NULL for a bad handle (FlexIO `flexio_process_get_uar`).
///
/// # Safety
/// `process` is any pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flexio_process_get_uar(process: *mut FlexioProcess) -> *mut FlexioUar {
    getter("flexio_process_get_uar", std::ptr::null_mut(), || {
        let p = proc(process)?;
        Ok(process_uar(&p))
    })
}

/// The handle of the process's UAR, made on first use.
pub(crate) fn process_uar(p: &Proc) -> *mut FlexioUar {
    let mut slot = p.uar.lock().unwrap_or_else(PoisonError::into_inner);
    let h =
        *slot.get_or_insert_with(|| UARS.insert::<FlexioUar>(Arc::clone(p.process.uar())) as usize);
    h as *mut FlexioUar
}

/// UARs `flexio_uar_create` made (which `flexio_uar_destroy` may destroy; the process's own
/// goes with the process).
static CREATED_UARS: Mutex<Vec<usize>> = Mutex::new(Vec::new());

/// Creates a UAR page on the process's device for its queues (FlexIO `flexio_uar_create`):
/// a CQ, SQ, RQ or QP names it by `flexio_uar_get_id`.
///
/// # Safety
/// `flexio_uar` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flexio_uar_create(
    process: *mut FlexioProcess,
    flexio_uar: *mut *mut FlexioUar,
) -> FlexioStatus {
    entry("flexio_uar_create", || {
        let p = proc(process)?;
        if flexio_uar.is_null() {
            return Err(Failure::new("flexio_uar is NULL"));
        }
        let page = mlx5_dpa::uar::UarPage::alloc(p.process.dev(), UarKind::NonCached)
            .map_err(|e| Failure::new(format!("allocating a UAR: {e}")))?;
        let h = UARS.insert::<FlexioUar>(page);
        CREATED_UARS
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(h as usize);
        // SAFETY: checked non-NULL; writable.
        unsafe { put(flexio_uar, h, "flexio_uar") }
    })
}

/// Destroys a UAR `flexio_uar_create` made (FlexIO `flexio_uar_destroy`); the queues using it
/// keep the page until they are gone. The process's own UAR is refused: it goes with the
/// process.
///
/// # Safety
/// `uar` is any pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flexio_uar_destroy(uar: *mut FlexioUar) -> FlexioStatus {
    entry("flexio_uar_destroy", || {
        let mut created = CREATED_UARS.lock().unwrap_or_else(PoisonError::into_inner);
        let i = created
            .iter()
            .position(|&h| h == uar as usize)
            .ok_or_else(|| {
                Failure::new(format!(
                    "{uar:p} is no UAR flexio_uar_create made (a process's own goes with it)"
                ))
            })?;
        UARS.remove(uar)?;
        created.swap_remove(i);
        Ok(())
    })
}

/// The UAR's page id, `u32::MAX` for a bad handle (FlexIO `flexio_uar_get_id`).
///
/// # Safety
/// `uar` is any pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flexio_uar_get_id(uar: *mut FlexioUar) -> u32 {
    getter("flexio_uar_get_id", u32::MAX, || {
        Ok(UARS.get(uar)?.page_id())
    })
}

/// Allocates `buff_bsize` bytes of the process's DPA memory (FlexIO `flexio_buf_dev_alloc`);
/// `*dest_daddr_p` is 0 on failure.
///
/// # Safety
/// `dest_daddr_p` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flexio_buf_dev_alloc(
    process: *mut FlexioProcess,
    buff_bsize: usize,
    dest_daddr_p: *mut u64,
) -> FlexioStatus {
    if !dest_daddr_p.is_null() {
        // SAFETY: non-NULL and writable (the caller's contract).
        unsafe { dest_daddr_p.write(0) };
    }
    entry("flexio_buf_dev_alloc", || {
        let p = proc(process)?;
        if dest_daddr_p.is_null() {
            return Err(Failure::new("dest_daddr_p is NULL"));
        }
        let daddr = alloc(&p, buff_bsize)?;
        // SAFETY: checked non-NULL; writable.
        unsafe { dest_daddr_p.write(daddr) };
        Ok(())
    })
}

fn alloc(p: &Proc, size: usize) -> Result<u64> {
    if size == 0 {
        return Err(Failure::new("a buffer of 0 bytes"));
    }
    let buf = p.process.alloc(size as u64)?;
    let daddr = buf.daddr();
    p.bufs
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(daddr, (buf, size));
    Ok(daddr)
}

/// Frees a buffer of `flexio_buf_dev_alloc`; 0 is accepted (FlexIO `flexio_buf_dev_free`).
///
/// # Safety
/// `process` is any pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flexio_buf_dev_free(
    process: *mut FlexioProcess,
    daddr: u64,
) -> FlexioStatus {
    entry("flexio_buf_dev_free", || {
        let p = proc(process)?;
        if daddr == 0 {
            return Ok(());
        }
        let freed = p
            .bufs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&daddr);
        freed
            .map(drop)
            .ok_or_else(|| Failure::new(format!("{daddr:#x} is no buffer of this process")))
    })
}

/// The host bytes `src_haddr .. + buff_bsize` as a slice.
///
/// # Safety
/// `src` is NULL or readable for `len` bytes.
unsafe fn host_bytes<'a>(src: *const c_void, len: usize) -> Result<&'a [u8]> {
    if src.is_null() || len == 0 {
        return Err(Failure::new("src_haddr is NULL or buff_bsize 0"));
    }
    // SAFETY: readable for `len` bytes (the caller's contract).
    Ok(unsafe { std::slice::from_raw_parts(src.cast::<u8>(), len) })
}

/// Copies host memory to DPA memory (FlexIO `flexio_host2dev_memcpy`).
///
/// # Safety
/// `src_haddr` is NULL or readable for `buff_bsize` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flexio_host2dev_memcpy(
    process: *mut FlexioProcess,
    src_haddr: *mut c_void,
    buff_bsize: usize,
    dest_daddr: u64,
) -> FlexioStatus {
    entry("flexio_host2dev_memcpy", || {
        let p = proc(process)?;
        // SAFETY: as the caller's contract.
        let src = unsafe { host_bytes(src_haddr, buff_bsize) }?;
        Ok(p.process.copy_to_dev(dest_daddr, src)?)
    })
}

/// Sets DPA memory to the byte `value` (FlexIO `flexio_buf_dev_memset`).
///
/// # Safety
/// `process` is any pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flexio_buf_dev_memset(
    process: *mut FlexioProcess,
    value: i32,
    buff_bsize: usize,
    dest_daddr: u64,
) -> FlexioStatus {
    entry("flexio_buf_dev_memset", || {
        let p = proc(process)?;
        // As memset: the value converted to unsigned char.
        Ok(p.process.memset(dest_daddr, value as u8, buff_bsize)?)
    })
}

/// Allocates DPA memory and copies host memory into it (FlexIO `flexio_copy_from_host`); the
/// caller frees it with `flexio_buf_dev_free`.
///
/// # Safety
/// `src_haddr` is NULL or readable for `buff_bsize` bytes; `dest_daddr_p` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flexio_copy_from_host(
    process: *mut FlexioProcess,
    src_haddr: *mut c_void,
    buff_bsize: usize,
    dest_daddr_p: *mut u64,
) -> FlexioStatus {
    entry("flexio_copy_from_host", || {
        let p = proc(process)?;
        // SAFETY: as the caller's contract.
        let src = unsafe { host_bytes(src_haddr, buff_bsize) }?;
        if dest_daddr_p.is_null() {
            return Err(Failure::new("dest_daddr_p is NULL"));
        }
        let daddr = alloc(&p, buff_bsize)?;
        if let Err(e) = p.process.copy_to_dev(daddr, src) {
            let _ = p
                .bufs
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(&daddr);
            return Err(e.into());
        }
        // SAFETY: checked non-NULL; writable.
        unsafe { dest_daddr_p.write(daddr) };
        Ok(())
    })
}

/// The process's DPA memory: where it starts, how large it may grow, and what the program's
/// buffers asked for and hold (FlexIO `flexio_process_mem_info_get`).
///
/// # Safety
/// `info` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flexio_process_mem_info_get(
    process: *const FlexioProcess,
    info: *mut FlexioHeapMemInfo,
) -> FlexioStatus {
    entry("flexio_process_mem_info_get", || {
        let p = proc(process)?;
        // What the program asked for and what it holds after rounding, of its own buffers.
        let (requested, allocated) = p
            .bufs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .fold((0usize, 0usize), |(r, a), (b, size)| {
                (r + size, a + usize::try_from(b.len()).unwrap_or(usize::MAX))
            });
        let v = FlexioHeapMemInfo {
            base_addr: p.process.dumem().1,
            size: usize::try_from(p.process.caps().process_mem_bytes).unwrap_or(usize::MAX),
            requested,
            allocated,
        };
        // SAFETY: NULL or writable.
        unsafe { put(info, v, "info") }
    })
}
