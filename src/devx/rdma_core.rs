//! The rdma-core DevX backend: rdma-core's `libibverbs.so.1` and `libmlx5.so.1`, loaded with
//! `dlopen` at run time.
//!
//! Nothing of rdma-core is needed to build this module: the few C structures it touches are
//! declared here from rdma-core's public headers (`infiniband/verbs.h`,
//! `infiniband/mlx5dv.h`), and every function is looked up with `dlsym` when the libraries are
//! first loaded. A missing library or symbol is a [`DevxError::Unsupported`] naming it, never a
//! link error.
//!
//! # Ownership
//!
//! No C pointer leaves this module. Objects, UMEMs and UARs are kept in tables keyed by a
//! counter, and the [`ObjHandle`] / [`UmemHandle`] / [`Uar::handle`] numbers index those
//! tables. Everything still registered when the last user of the device context goes away is
//! released in reverse order of dependency: objects (newest first), UMEMs, UARs, then the
//! `ibv_context`. An event channel holds a reference to the device context, so channels are
//! always closed before the context is.
//!
//! # UAR addresses
//!
//! `mlx5dv_devx_alloc_uar` returns `reg_addr` (the doorbell / BlueFlame register handed to
//! this caller) and `base_addr` (the start of libmlx5's mapping). The mapping may span several
//! 4 KiB UARs on systems with larger pages, and `reg_addr` may be any of the BlueFlame
//! registers of its UAR (offset 0x800, 0x900, 0xa00, ...). [`Uar::base`] is therefore
//! `reg_addr` rounded down to 4 KiB: the UAR page that `page_id` names, whose doorbell register
//! is at [`UAR_DOORBELL_OFFSET`](super::UAR_DOORBELL_OFFSET). [`Uar::len`] is 4096.
//! libmlx5 may hand the same UAR page (the non-cached one in particular) to several
//! allocations; each gets its own handle, and libmlx5 counts the users.

use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_void, CStr};
use std::marker::{PhantomData, PhantomPinned};
use std::os::fd::{BorrowedFd, RawFd};
use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, RwLock};
use std::time::{Duration, Instant};

use libloading::Library;

use crate::sync::lock;
use nix::errno::Errno;

use super::{
    Devx, DevxError, DevxEvent, EventChannel, ObjHandle, Uar, UarKind, Umem, UmemAccess, UmemHandle,
};

/// The libibverbs soname loaded.
pub const LIBIBVERBS: &str = "libibverbs.so.1";
/// The libmlx5 soname loaded.
pub const LIBMLX5: &str = "libmlx5.so.1";

/// Every symbol resolved from [`LIBIBVERBS`] when the libraries load.
pub const IBVERBS_SYMBOLS: &[&str] = &[
    "ibv_get_device_list",
    "ibv_free_device_list",
    "ibv_get_device_name",
    "ibv_close_device",
    "ibv_alloc_pd",
    "ibv_dealloc_pd",
];

/// Every symbol required from [`LIBMLX5`] when the libraries load.
pub const MLX5_SYMBOLS: &[&str] = &[
    "mlx5dv_is_supported",
    "mlx5dv_open_device",
    "mlx5dv_devx_general_cmd",
    "mlx5dv_devx_obj_create",
    "mlx5dv_devx_obj_modify",
    "mlx5dv_devx_obj_query",
    "mlx5dv_devx_obj_destroy",
    "mlx5dv_devx_umem_reg",
    "mlx5dv_devx_umem_dereg",
    "mlx5dv_devx_alloc_uar",
    "mlx5dv_devx_free_uar",
    "mlx5dv_devx_query_eqn",
    "mlx5dv_devx_create_event_channel",
    "mlx5dv_devx_destroy_event_channel",
    "mlx5dv_devx_subscribe_devx_event",
    "mlx5dv_devx_get_event",
    "mlx5dv_init_obj",
];

/// Symbols of [`LIBMLX5`] used when present (newer rdma-core); their absence only disables the
/// feature that needs them.
pub const MLX5_OPTIONAL_SYMBOLS: &[&str] = &["mlx5dv_devx_umem_reg_ex"];

// ---------------------------------------------------------------------------------------------
// C declarations (layouts from rdma-core's public headers).

/// Declares an opaque C type that is only ever handled by pointer.
macro_rules! opaque {
    ($($name:ident),* $(,)?) => {$(
        #[repr(C)]
        struct $name {
            _data: [u8; 0],
            _marker: PhantomData<(*mut u8, PhantomPinned)>,
        }
    )*};
}

opaque!(IbvDevice, IbvContext, Mlx5dvDevxObj);

/// `enum mlx5dv_context_attr_flags`: `MLX5DV_CONTEXT_FLAGS_DEVX`.
const MLX5DV_CONTEXT_FLAGS_DEVX: u32 = 1 << 0;

/// The 4 KiB UAR page of the PRM (`MLX5_ADAPTER_PAGE_SIZE`).
const UAR_PAGE_SIZE: usize = 4096;

/// The page-size bitmap libmlx5's `mlx5dv_devx_umem_reg` passes: every page size from 4 KiB.
const DEFAULT_PGSZ_BITMAP: u64 = !(UAR_PAGE_SIZE as u64 - 1);

/// `struct mlx5dv_context_attr`. `fds` was added in later rdma-core; it is read only when
/// `comp_mask` has `MLX5DV_CONTEXT_ATTR_MASK_FD_ARRAY`, so the longer layout suits every
/// version.
#[repr(C)]
struct Mlx5dvContextAttr {
    flags: u32,
    comp_mask: u64,
    fds: *mut c_void,
}

/// `struct mlx5dv_devx_umem` (public part: libmlx5's own structure starts with it).
#[repr(C)]
struct Mlx5dvDevxUmem {
    umem_id: u32,
}

/// `struct mlx5dv_devx_umem_in`.
#[repr(C)]
struct Mlx5dvDevxUmemIn {
    addr: *mut c_void,
    size: usize,
    access: u32,
    pgsz_bitmap: u64,
    comp_mask: u64,
    dmabuf_fd: c_int,
}

/// `struct mlx5dv_devx_uar`.
#[repr(C)]
struct Mlx5dvDevxUar {
    reg_addr: *mut c_void,
    base_addr: *mut c_void,
    page_id: u32,
    mmap_off: nix::libc::off_t,
    comp_mask: u64,
}

/// `struct mlx5dv_devx_event_channel` (public part).
#[repr(C)]
struct Mlx5dvDevxEventChannel {
    fd: c_int,
}

type GetDeviceListFn = unsafe extern "C" fn(num_devices: *mut c_int) -> *mut *mut IbvDevice;
type FreeDeviceListFn = unsafe extern "C" fn(list: *mut *mut IbvDevice);
type GetDeviceNameFn = unsafe extern "C" fn(device: *mut IbvDevice) -> *const c_char;
type CloseDeviceFn = unsafe extern "C" fn(context: *mut IbvContext) -> c_int;
type IsSupportedFn = unsafe extern "C" fn(device: *mut IbvDevice) -> bool;
type OpenDeviceFn =
    unsafe extern "C" fn(device: *mut IbvDevice, attr: *mut Mlx5dvContextAttr) -> *mut IbvContext;
type GeneralCmdFn = unsafe extern "C" fn(
    context: *mut IbvContext,
    inbox: *const c_void,
    inlen: usize,
    outbox: *mut c_void,
    outlen: usize,
) -> c_int;
type ObjCreateFn = unsafe extern "C" fn(
    context: *mut IbvContext,
    inbox: *const c_void,
    inlen: usize,
    outbox: *mut c_void,
    outlen: usize,
) -> *mut Mlx5dvDevxObj;
type ObjCmdFn = unsafe extern "C" fn(
    obj: *mut Mlx5dvDevxObj,
    inbox: *const c_void,
    inlen: usize,
    outbox: *mut c_void,
    outlen: usize,
) -> c_int;
type ObjDestroyFn = unsafe extern "C" fn(obj: *mut Mlx5dvDevxObj) -> c_int;
type UmemRegFn = unsafe extern "C" fn(
    context: *mut IbvContext,
    addr: *mut c_void,
    size: usize,
    access: u32,
) -> *mut Mlx5dvDevxUmem;
type UmemRegExFn = unsafe extern "C" fn(
    context: *mut IbvContext,
    umem_in: *mut Mlx5dvDevxUmemIn,
) -> *mut Mlx5dvDevxUmem;
type UmemDeregFn = unsafe extern "C" fn(umem: *mut Mlx5dvDevxUmem) -> c_int;
type AllocUarFn = unsafe extern "C" fn(context: *mut IbvContext, flags: u32) -> *mut Mlx5dvDevxUar;
type FreeUarFn = unsafe extern "C" fn(uar: *mut Mlx5dvDevxUar);
type QueryEqnFn =
    unsafe extern "C" fn(context: *mut IbvContext, vector: u32, eqn: *mut u32) -> c_int;
type CreateEventChannelFn =
    unsafe extern "C" fn(context: *mut IbvContext, flags: c_int) -> *mut Mlx5dvDevxEventChannel;
type DestroyEventChannelFn = unsafe extern "C" fn(channel: *mut Mlx5dvDevxEventChannel);
type SubscribeEventFn = unsafe extern "C" fn(
    channel: *mut Mlx5dvDevxEventChannel,
    obj: *mut Mlx5dvDevxObj,
    events_sz: u16,
    events_num: *mut u16,
    cookie: u64,
) -> c_int;
/// The second argument is `struct mlx5dv_devx_async_event_hdr *` (`{ u64 cookie; u8 out_data[]; }`).
type GetEventFn = unsafe extern "C" fn(
    channel: *mut Mlx5dvDevxEventChannel,
    event: *mut c_void,
    len: usize,
) -> isize;

type AllocPdFn = unsafe extern "C" fn(context: *mut IbvContext) -> *mut IbvPd;
type DeallocPdFn = unsafe extern "C" fn(pd: *mut IbvPd) -> c_int;
type InitObjFn = unsafe extern "C" fn(obj: *mut Mlx5dvObj, obj_type: u64) -> c_int;

/// `struct ibv_pd` (opaque here).
#[repr(C)]
pub struct IbvPd {
    _private: [u8; 0],
}

/// `struct mlx5dv_obj`: seven `{ in, out }` pointer pairs (qp, cq, srq, rwq, dm, ah, pd).
#[repr(C)]
struct Mlx5dvObj {
    pairs: [[*mut c_void; 2]; 7],
}

/// `struct mlx5dv_pd`.
#[repr(C)]
struct Mlx5dvPd {
    pdn: u32,
    comp_mask: u64,
}

/// `MLX5DV_OBJ_PD`, and its pair's index in `struct mlx5dv_obj`.
const MLX5DV_OBJ_PD: u64 = 1 << 6;
const OBJ_PD_PAIR: usize = 6;

/// The loaded libraries and the functions resolved from them.
struct Lib {
    get_device_list: GetDeviceListFn,
    free_device_list: FreeDeviceListFn,
    get_device_name: GetDeviceNameFn,
    close_device: CloseDeviceFn,
    is_supported: IsSupportedFn,
    open_device: OpenDeviceFn,
    general_cmd: GeneralCmdFn,
    obj_create: ObjCreateFn,
    obj_modify: ObjCmdFn,
    obj_query: ObjCmdFn,
    obj_destroy: ObjDestroyFn,
    umem_reg: UmemRegFn,
    umem_reg_ex: Option<UmemRegExFn>,
    umem_dereg: UmemDeregFn,
    alloc_uar: AllocUarFn,
    free_uar: FreeUarFn,
    query_eqn: QueryEqnFn,
    create_event_channel: CreateEventChannelFn,
    destroy_event_channel: DestroyEventChannelFn,
    subscribe_event: SubscribeEventFn,
    get_event: GetEventFn,
    alloc_pd: AllocPdFn,
    dealloc_pd: DeallocPdFn,
    init_obj: InitObjFn,
    // The function pointers above stay valid while these are loaded; `Lib` lives in a static
    // and is never dropped, so the libraries are never unloaded.
    _ibverbs: Library,
    _mlx5: Library,
}

/// `dlerror`'s text for a libloading error (libloading's own `Display` omits it), naming
/// `soname` when `dlerror` does not.
fn dl_message(e: &libloading::Error, soname: &str) -> String {
    use std::error::Error as _;
    let text = e.source().map_or_else(|| e.to_string(), |s| s.to_string());
    if text.contains(soname) {
        text
    } else {
        format!("{soname}: {text}")
    }
}

/// Resolves `name` in `lib` as a value of type `T`.
///
/// # Safety
/// `T` must be the C type of the symbol (a function pointer of the right signature).
unsafe fn resolve<T: Copy>(lib: &Library, soname: &str, name: &str) -> Result<T, String> {
    // SAFETY: the caller guarantees that `T` is the symbol's type.
    let sym = unsafe { lib.get::<T>(name) }.map_err(|e| {
        format!(
            "rdma-core library {soname} lacks symbol {name}: {}",
            dl_message(&e, soname)
        )
    })?;
    Ok(*sym)
}

impl Lib {
    /// The process-wide libraries, loaded on first use.
    fn get() -> Result<&'static Lib, String> {
        static LIB: OnceLock<Result<Lib, String>> = OnceLock::new();
        LIB.get_or_init(Lib::load).as_ref().map_err(Clone::clone)
    }

    fn load() -> Result<Lib, String> {
        // SAFETY: loading rdma-core runs its initialisers (provider registration), which have no
        // preconditions on the caller.
        let ibverbs = unsafe { Library::new(LIBIBVERBS) }.map_err(|e| {
            format!(
                "rdma-core libraries not found: {}",
                dl_message(&e, LIBIBVERBS)
            )
        })?;
        // SAFETY: as above.
        let mlx5 = unsafe { Library::new(LIBMLX5) }
            .map_err(|e| format!("rdma-core libraries not found: {}", dl_message(&e, LIBMLX5)))?;
        macro_rules! sym {
            ($lib:expr, $soname:expr, $name:literal) => {
                // SAFETY: the field's function pointer type is declared above from the
                // prototype in rdma-core's public headers.
                unsafe { resolve(&$lib, $soname, $name) }?
            };
        }
        // SAFETY: `UmemRegExFn` is the prototype of `mlx5dv_devx_umem_reg_ex` in mlx5dv.h.
        let umem_reg_ex =
            unsafe { resolve::<UmemRegExFn>(&mlx5, LIBMLX5, "mlx5dv_devx_umem_reg_ex") }.ok();
        Ok(Lib {
            get_device_list: sym!(ibverbs, LIBIBVERBS, "ibv_get_device_list"),
            free_device_list: sym!(ibverbs, LIBIBVERBS, "ibv_free_device_list"),
            get_device_name: sym!(ibverbs, LIBIBVERBS, "ibv_get_device_name"),
            close_device: sym!(ibverbs, LIBIBVERBS, "ibv_close_device"),
            is_supported: sym!(mlx5, LIBMLX5, "mlx5dv_is_supported"),
            open_device: sym!(mlx5, LIBMLX5, "mlx5dv_open_device"),
            general_cmd: sym!(mlx5, LIBMLX5, "mlx5dv_devx_general_cmd"),
            obj_create: sym!(mlx5, LIBMLX5, "mlx5dv_devx_obj_create"),
            obj_modify: sym!(mlx5, LIBMLX5, "mlx5dv_devx_obj_modify"),
            obj_query: sym!(mlx5, LIBMLX5, "mlx5dv_devx_obj_query"),
            obj_destroy: sym!(mlx5, LIBMLX5, "mlx5dv_devx_obj_destroy"),
            umem_reg: sym!(mlx5, LIBMLX5, "mlx5dv_devx_umem_reg"),
            umem_reg_ex,
            umem_dereg: sym!(mlx5, LIBMLX5, "mlx5dv_devx_umem_dereg"),
            alloc_uar: sym!(mlx5, LIBMLX5, "mlx5dv_devx_alloc_uar"),
            free_uar: sym!(mlx5, LIBMLX5, "mlx5dv_devx_free_uar"),
            query_eqn: sym!(mlx5, LIBMLX5, "mlx5dv_devx_query_eqn"),
            create_event_channel: sym!(mlx5, LIBMLX5, "mlx5dv_devx_create_event_channel"),
            destroy_event_channel: sym!(mlx5, LIBMLX5, "mlx5dv_devx_destroy_event_channel"),
            subscribe_event: sym!(mlx5, LIBMLX5, "mlx5dv_devx_subscribe_devx_event"),
            get_event: sym!(mlx5, LIBMLX5, "mlx5dv_devx_get_event"),
            alloc_pd: sym!(ibverbs, LIBIBVERBS, "ibv_alloc_pd"),
            dealloc_pd: sym!(ibverbs, LIBIBVERBS, "ibv_dealloc_pd"),
            init_obj: sym!(mlx5, LIBMLX5, "mlx5dv_init_obj"),
            _ibverbs: ibverbs,
            _mlx5: mlx5,
        })
    }
}

/// Whether rdma-core's libraries load and export every function this backend uses.
///
/// # Errors
/// A message naming the library that failed to load (with `dlerror`'s text) or the missing
/// symbol.
pub fn available() -> Result<(), String> {
    Lib::get().map(|_| ())
}

// ---------------------------------------------------------------------------------------------
// Device context.

/// A pointer to an rdma-core object that this module owns.
struct CPtr<T>(NonNull<T>);

impl<T> Clone for CPtr<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for CPtr<T> {}

impl<T> CPtr<T> {
    fn new(p: *mut T) -> Option<Self> {
        NonNull::new(p).map(CPtr)
    }
    fn get(self) -> *mut T {
        self.0.as_ptr()
    }
}

// SAFETY: a `CPtr` is a private handle to an rdma-core object (device context, DevX object,
// UMEM, UAR, event channel). rdma-core's DevX calls on them are system calls on the context's
// command fd and carry no thread affinity; the only fields Rust reads (`umem_id`, the UAR
// addresses, the channel fd) are written once before the pointer is handed out. Moving the
// pointer to another thread is therefore sound.
unsafe impl<T> Send for CPtr<T> {}
// SAFETY: as above; sharing only copies the address. Freeing is serialised by the tables
// (mutex, per-object `RwLock`) in `Ctx`, so no object is used while it is being freed.
unsafe impl<T> Sync for CPtr<T> {}

/// An object slot: `None` once destroyed. Commands on the object hold the read lock, destroy
/// holds the write lock, so an object is never destroyed under a running command.
type ObjSlot = Arc<RwLock<Option<CPtr<Mlx5dvDevxObj>>>>;

/// The open device context and everything registered on it.
struct Ctx {
    lib: &'static Lib,
    ctx: CPtr<IbvContext>,
    name: String,
    next_handle: AtomicU64,
    objs: Mutex<HashMap<u64, ObjSlot>>,
    umems: Mutex<HashMap<u64, CPtr<Mlx5dvDevxUmem>>>,
    uars: Mutex<HashMap<u64, CPtr<Mlx5dvDevxUar>>>,
    /// The context is this backend's to close (else the caller's: [`RdmaCoreDevx::open_on`]).
    owned: bool,
}

/// The errno of an rdma-core call returning an `int`: the value itself when positive (libmlx5
/// returns errno values), `errno` otherwise.
fn rc_errno(rc: c_int) -> Errno {
    if rc > 0 {
        Errno::from_raw(rc)
    } else {
        Errno::last()
    }
}

impl Ctx {
    fn handle(&self) -> u64 {
        self.next_handle.fetch_add(1, Ordering::Relaxed)
    }

    fn obj_slot(&self, obj: ObjHandle, op: &'static str) -> Result<ObjSlot, DevxError> {
        lock(&self.objs).get(&obj.0).cloned().ok_or(DevxError::Os {
            op,
            errno: Errno::ENOENT,
        })
    }

    /// Runs `f` on the live object `obj`, holding its read lock.
    fn with_obj<R>(
        &self,
        obj: ObjHandle,
        op: &'static str,
        f: impl FnOnce(*mut Mlx5dvDevxObj) -> Result<R, DevxError>,
    ) -> Result<R, DevxError> {
        let slot = self.obj_slot(obj, op)?;
        let guard = slot.read().unwrap_or_else(PoisonError::into_inner);
        match *guard {
            Some(p) => f(p.get()),
            None => Err(DevxError::Os {
                op,
                errno: Errno::ENOENT,
            }),
        }
    }

    fn obj_cmd(
        &self,
        f: ObjCmdFn,
        op: &'static str,
        obj: ObjHandle,
        inbox: &[u8],
        outbox: &mut [u8],
    ) -> Result<(), DevxError> {
        self.with_obj(obj, op, |p| {
            // SAFETY: `p` is a live object of this context (read lock held); the mailboxes are
            // valid for their lengths, and the outbox is written by the kernel in place.
            let rc = unsafe {
                f(
                    p,
                    inbox.as_ptr().cast(),
                    inbox.len(),
                    outbox.as_mut_ptr().cast(),
                    outbox.len(),
                )
            };
            if rc == 0 {
                Ok(())
            } else {
                Err(DevxError::Os {
                    op,
                    errno: rc_errno(rc),
                })
            }
        })
    }
}

impl Drop for Ctx {
    fn drop(&mut self) {
        let lib = self.lib;
        // Objects, newest first: later objects may reference earlier ones.
        let objs = std::mem::take(self.objs.get_mut().unwrap_or_else(PoisonError::into_inner));
        let mut objs: Vec<_> = objs.into_iter().collect();
        objs.sort_unstable_by_key(|(k, _)| std::cmp::Reverse(*k));
        for (_, slot) in objs {
            let mut guard = slot.write().unwrap_or_else(PoisonError::into_inner);
            if let Some(p) = guard.take() {
                // SAFETY: `p` is a live object of this context, and no other user remains (we are
                // dropping the last reference to the context). A failure leaves the kernel
                // object to `ibv_close_device`, which releases everything of the context.
                let _ = unsafe { (lib.obj_destroy)(p.get()) };
            }
        }
        let umems = std::mem::take(self.umems.get_mut().unwrap_or_else(PoisonError::into_inner));
        let mut umems: Vec<_> = umems.into_iter().collect();
        umems.sort_unstable_by_key(|(k, _)| std::cmp::Reverse(*k));
        for (_, p) in umems {
            // SAFETY: `p` is a live UMEM of this context with no other user left.
            let _ = unsafe { (lib.umem_dereg)(p.get()) };
        }
        let uars = std::mem::take(self.uars.get_mut().unwrap_or_else(PoisonError::into_inner));
        let mut uars: Vec<_> = uars.into_iter().collect();
        uars.sort_unstable_by_key(|(k, _)| std::cmp::Reverse(*k));
        for (_, p) in uars {
            // SAFETY: `p` is a live UAR of this context with no other user left.
            unsafe { (lib.free_uar)(p.get()) };
        }
        // Event channels hold an `Arc<Ctx>`, so none is open any more.
        if self.owned {
            // SAFETY: `ctx` was opened by `mlx5dv_open_device` and everything created on it is
            // released above.
            let _ = unsafe { (lib.close_device)(self.ctx.get()) };
        }
    }
}

/// `mlx5dv_init_obj` on a PD: its number.
///
/// # Safety
/// `pd` is a live `struct ibv_pd *` of `lib`.
unsafe fn pdn_of(lib: &Lib, pd: *mut IbvPd) -> Result<u32, DevxError> {
    let mut out = Mlx5dvPd {
        pdn: 0,
        comp_mask: 0,
    };
    let mut obj = Mlx5dvObj {
        pairs: [[ptr::null_mut(); 2]; 7],
    };
    obj.pairs[OBJ_PD_PAIR] = [pd.cast(), (&raw mut out).cast()];
    // SAFETY: `obj` names a live PD and a writable `struct mlx5dv_pd`, as the call expects.
    let rc = unsafe { (lib.init_obj)(&mut obj, MLX5DV_OBJ_PD) };
    if rc != 0 {
        return Err(DevxError::Os {
            op: "mlx5dv_init_obj(PD)",
            errno: rc_errno(rc),
        });
    }
    Ok(out.pdn)
}

/// A verbs PD on an rdma-core context ([`RdmaCoreDevx::alloc_verbs_pd`]); deallocated on drop,
/// before the context, which it keeps open.
pub struct VerbsPd {
    pd: CPtr<IbvPd>,
    pdn: u32,
    ctx: Arc<Ctx>,
}

impl std::fmt::Debug for VerbsPd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VerbsPd").field("pdn", &self.pdn).finish()
    }
}

impl VerbsPd {
    /// The `struct ibv_pd *`, valid while this value lives.
    pub fn as_ptr(&self) -> *mut IbvPd {
        self.pd.get()
    }

    /// The PD number.
    pub fn pdn(&self) -> u32 {
        self.pdn
    }
}

impl Drop for VerbsPd {
    fn drop(&mut self) {
        // SAFETY: the PD is live and of this context, which `ctx` keeps open; nothing made on
        // it outlives its owner's use of this value (the owner's contract). A refusal leaves it
        // to the context's close.
        let _ = unsafe { (self.ctx.lib.dealloc_pd)(self.pd.get()) };
    }
}

/// `ibv_free_device_list` on drop.
struct DeviceList {
    lib: &'static Lib,
    list: *mut *mut IbvDevice,
}

impl Drop for DeviceList {
    fn drop(&mut self) {
        // SAFETY: `list` came from `ibv_get_device_list` and is freed once.
        unsafe { (self.lib.free_device_list)(self.list) };
    }
}

// ---------------------------------------------------------------------------------------------
// The backend.

/// DevX through rdma-core's libmlx5 (loaded at run time).
pub struct RdmaCoreDevx {
    ctx: Arc<Ctx>,
}

impl std::fmt::Debug for RdmaCoreDevx {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RdmaCoreDevx")
            .field("device", &self.ctx.name)
            .finish_non_exhaustive()
    }
}

const _: () = {
    const fn send_sync<T: Send + Sync>() {}
    send_sync::<RdmaCoreDevx>();
};

impl RdmaCoreDevx {
    /// Opens a DevX context on the rdma-core device `name`, or on the first mlx5 device that
    /// accepts DevX when `name` is `None`.
    ///
    /// # Errors
    /// [`DevxError::Unsupported`] when the libraries (or a symbol) are missing or the named
    /// device is not an mlx5 device; [`DevxError::NoDevice`] when rdma-core lists no mlx5
    /// device; [`DevxError::UnknownDevice`] when `name` is not listed; [`DevxError::Os`] when
    /// `mlx5dv_open_device` fails.
    pub fn open(name: Option<&str>) -> Result<Arc<RdmaCoreDevx>, DevxError> {
        let lib = Lib::get().map_err(DevxError::Unsupported)?;
        let mut num: c_int = 0;
        // SAFETY: `num` is a valid out-pointer.
        let list = unsafe { (lib.get_device_list)(&mut num) };
        if list.is_null() {
            let errno = Errno::last();
            return Err(DevxError::NoDevice {
                searched: format!("rdma-core ibv_get_device_list ({errno})"),
            });
        }
        let list = DeviceList { lib, list };
        let count = usize::try_from(num).unwrap_or(0);
        let mut devices = Vec::with_capacity(count);
        for i in 0..count {
            // SAFETY: the list holds `num` device pointers followed by NULL.
            let dev = unsafe { *list.list.add(i) };
            if dev.is_null() {
                break;
            }
            // SAFETY: `dev` is a listed device; the name is a NUL-terminated string it owns.
            let cname = unsafe { (lib.get_device_name)(dev) };
            let dev_name = if cname.is_null() {
                String::new()
            } else {
                // SAFETY: non-NULL name of a listed device, NUL-terminated, alive with the list.
                unsafe { CStr::from_ptr(cname) }
                    .to_string_lossy()
                    .into_owned()
            };
            devices.push((dev, dev_name));
        }
        if devices.is_empty() {
            return Err(DevxError::NoDevice {
                searched: "rdma-core ibv_get_device_list".into(),
            });
        }

        let mut last_err = None;
        for (dev, dev_name) in &devices {
            if name.is_some_and(|n| n != dev_name) {
                continue;
            }
            // SAFETY: `dev` is a listed device and the list is alive.
            if !unsafe { (lib.is_supported)(*dev) } {
                if name.is_some() {
                    return Err(DevxError::Unsupported(format!(
                        "rdma-core device {dev_name} is not an mlx5 device"
                    )));
                }
                continue;
            }
            // SAFETY: `dev` is a listed mlx5 device; the context keeps its own reference to
            // the device, so the list may be freed after.
            match unsafe { Self::open_devx(lib, *dev, dev_name) } {
                Ok(d) => return Ok(d),
                Err(err) => {
                    if name.is_some() {
                        return Err(err);
                    }
                    last_err = Some(err);
                }
            }
        }
        drop(list);
        match (name, last_err) {
            (Some(name), _) => Err(DevxError::UnknownDevice {
                name: name.to_owned(),
                found: devices
                    .iter()
                    .map(|(_, n)| n.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            }),
            (None, Some(err)) => Err(err),
            (None, None) => Err(DevxError::NoDevice {
                searched: "rdma-core ibv_get_device_list".into(),
            }),
        }
    }

    /// DevX on a context the caller opened (FlexIO's `flexio_process_create` takes one from
    /// `ibv_open_device`, which rdma-core's libmlx5 opens with DevX when the kernel allows),
    /// so that the objects made here are the caller's context's, usable in its own DevX and
    /// verbs calls (a TIR as a steering rule's destination). The context stays the caller's:
    /// it is not closed here, and must outlive this backend and everything made through it.
    ///
    /// # Errors
    /// [`DevxError::Unsupported`] when the libraries are missing or the device is not an
    /// mlx5 device.
    ///
    /// # Safety
    /// `ibv_ctx` is a live `struct ibv_context *` of the libibverbs this process has loaded,
    /// open until the returned value and what is made through it are gone.
    pub unsafe fn open_on(ibv_ctx: *mut c_void) -> Result<Arc<RdmaCoreDevx>, DevxError> {
        let lib = Lib::get().map_err(DevxError::Unsupported)?;
        if ibv_ctx.is_null() {
            return Err(DevxError::Unsupported("no ibv_context".into()));
        }
        // SAFETY: `struct ibv_context` begins with `struct ibv_device *device` (verbs.h, a
        // stable ABI); the caller vouches for the context.
        let dev = unsafe { *ibv_ctx.cast::<*mut IbvDevice>() };
        if dev.is_null() {
            return Err(DevxError::Unsupported(
                "ibv_context without a device".into(),
            ));
        }
        // SAFETY: `dev` is the live device of a live context.
        if !unsafe { (lib.is_supported)(dev) } {
            return Err(DevxError::Unsupported(
                "the ibv_context is not on an mlx5 device".into(),
            ));
        }
        // SAFETY: as above; the name is a NUL-terminated string the device owns.
        let cname = unsafe { (lib.get_device_name)(dev) };
        let name = if cname.is_null() {
            String::new()
        } else {
            // SAFETY: non-NULL name of a live device, NUL-terminated.
            unsafe { CStr::from_ptr(cname) }
                .to_string_lossy()
                .into_owned()
        };
        let ctx = CPtr::new(ibv_ctx.cast::<IbvContext>())
            .ok_or_else(|| DevxError::Unsupported("no ibv_context".into()))?;
        Ok(Arc::new(RdmaCoreDevx {
            ctx: Arc::new(Ctx {
                lib,
                ctx,
                name,
                next_handle: AtomicU64::new(1),
                objs: Mutex::new(HashMap::new()),
                umems: Mutex::new(HashMap::new()),
                uars: Mutex::new(HashMap::new()),
                owned: false,
            }),
        }))
    }

    /// `mlx5dv_open_device` with DevX on `dev`.
    ///
    /// # Safety
    /// `dev` is a live `struct ibv_device *` of `lib`.
    unsafe fn open_devx(
        lib: &'static Lib,
        dev: *mut IbvDevice,
        name: &str,
    ) -> Result<Arc<RdmaCoreDevx>, DevxError> {
        let mut attr = Mlx5dvContextAttr {
            flags: MLX5DV_CONTEXT_FLAGS_DEVX,
            comp_mask: 0,
            fds: ptr::null_mut(),
        };
        // SAFETY: `dev` is live (the caller's contract) and `attr` a valid attribute structure.
        let ctx = unsafe { (lib.open_device)(dev, &mut attr) };
        let ctx = CPtr::new(ctx).ok_or_else(|| DevxError::Os {
            op: "mlx5dv_open_device",
            errno: Errno::last(),
        })?;
        Ok(Arc::new(RdmaCoreDevx {
            ctx: Arc::new(Ctx {
                lib,
                ctx,
                name: name.to_owned(),
                next_handle: AtomicU64::new(1),
                objs: Mutex::new(HashMap::new()),
                umems: Mutex::new(HashMap::new()),
                uars: Mutex::new(HashMap::new()),
                owned: true,
            }),
        }))
    }

    /// A verbs PD (`ibv_alloc_pd`) on this context, for programs that hand out a
    /// `struct ibv_pd *` of their DevX objects (FlexIO's `flexio_process_get_pd`).
    ///
    /// # Errors
    /// [`DevxError::Os`] when rdma-core refuses.
    pub fn alloc_verbs_pd(&self) -> Result<VerbsPd, DevxError> {
        let lib = self.ctx.lib;
        // SAFETY: the context is live while `self` is.
        let pd = unsafe { (lib.alloc_pd)(self.ctx.ctx.get()) };
        let pd = CPtr::new(pd).ok_or_else(|| DevxError::Os {
            op: "ibv_alloc_pd",
            errno: Errno::last(),
        })?;
        // SAFETY: `pd` is a live PD of this library.
        match unsafe { pdn_of(lib, pd.get()) } {
            Ok(pdn) => Ok(VerbsPd {
                pd,
                pdn,
                ctx: Arc::clone(&self.ctx),
            }),
            Err(e) => {
                // SAFETY: the PD was just made and nothing uses it.
                unsafe { (lib.dealloc_pd)(pd.get()) };
                Err(e)
            }
        }
    }

    /// The number of a verbs PD (`mlx5dv_init_obj`), of this context or another of this
    /// device.
    ///
    /// # Errors
    /// [`DevxError::Unsupported`] for NULL; [`DevxError::Os`] when rdma-core refuses.
    ///
    /// # Safety
    /// `pd` is NULL or a live `struct ibv_pd *` of the libibverbs this process has loaded.
    pub unsafe fn pdn(pd: *mut IbvPd) -> Result<u32, DevxError> {
        let lib = Lib::get().map_err(DevxError::Unsupported)?;
        if pd.is_null() {
            return Err(DevxError::Unsupported("no ibv_pd".into()));
        }
        // SAFETY: as the caller's contract.
        unsafe { pdn_of(lib, pd) }
    }

    /// The rdma-core `struct mlx5dv_devx_obj *` of object `obj` of this context, for programs
    /// that hand one out (FlexIO's `flexio_rq_get_tir`); valid until the object is destroyed.
    ///
    /// # Errors
    /// [`DevxError::Os`] (`ENOENT`) when `obj` is no live object of this context.
    pub fn devx_obj_ptr(&self, obj: ObjHandle) -> Result<*mut c_void, DevxError> {
        self.ctx
            .with_obj(obj, "mlx5dv_devx_obj pointer", |p| Ok(p.cast()))
    }

    /// The rdma-core device name (e.g. `mlx5_0`).
    pub fn device_name(&self) -> &str {
        &self.ctx.name
    }
}

impl Devx for RdmaCoreDevx {
    fn describe(&self) -> String {
        format!("rdma-core libmlx5 DevX on {}", self.ctx.name)
    }

    fn general_cmd(&self, inbox: &[u8], outbox: &mut [u8]) -> Result<(), DevxError> {
        let c = &self.ctx;
        // SAFETY: the context is open; the mailboxes are valid for their lengths and the
        // outbox is written in place (also when firmware fails the command).
        let rc = unsafe {
            (c.lib.general_cmd)(
                c.ctx.get(),
                inbox.as_ptr().cast(),
                inbox.len(),
                outbox.as_mut_ptr().cast(),
                outbox.len(),
            )
        };
        if rc == 0 {
            Ok(())
        } else {
            Err(DevxError::Os {
                op: "mlx5dv_devx_general_cmd",
                errno: rc_errno(rc),
            })
        }
    }

    fn obj_create(&self, inbox: &[u8], outbox: &mut [u8]) -> Result<ObjHandle, DevxError> {
        let c = &self.ctx;
        // SAFETY: as in `general_cmd`.
        let p = unsafe {
            (c.lib.obj_create)(
                c.ctx.get(),
                inbox.as_ptr().cast(),
                inbox.len(),
                outbox.as_mut_ptr().cast(),
                outbox.len(),
            )
        };
        let Some(p) = CPtr::new(p) else {
            return Err(DevxError::Os {
                op: "mlx5dv_devx_obj_create",
                errno: Errno::last(),
            });
        };
        let h = c.handle();
        lock(&c.objs).insert(h, Arc::new(RwLock::new(Some(p))));
        Ok(ObjHandle(h))
    }

    fn obj_modify(&self, obj: ObjHandle, inbox: &[u8], outbox: &mut [u8]) -> Result<(), DevxError> {
        self.ctx.obj_cmd(
            self.ctx.lib.obj_modify,
            "mlx5dv_devx_obj_modify",
            obj,
            inbox,
            outbox,
        )
    }

    fn obj_query(&self, obj: ObjHandle, inbox: &[u8], outbox: &mut [u8]) -> Result<(), DevxError> {
        self.ctx.obj_cmd(
            self.ctx.lib.obj_query,
            "mlx5dv_devx_obj_query",
            obj,
            inbox,
            outbox,
        )
    }

    fn obj_destroy(&self, obj: ObjHandle) -> Result<(), DevxError> {
        const OP: &str = "mlx5dv_devx_obj_destroy";
        let c = &self.ctx;
        let slot = c.obj_slot(obj, OP)?;
        {
            let mut guard = slot.write().unwrap_or_else(PoisonError::into_inner);
            let Some(p) = *guard else {
                return Err(DevxError::Os {
                    op: OP,
                    errno: Errno::ENOENT,
                });
            };
            // SAFETY: `p` is a live object of this context; the write lock excludes every other
            // user of it.
            let rc = unsafe { (c.lib.obj_destroy)(p.get()) };
            if rc != 0 {
                // The object stays registered: it may be destroyed again, or with the context.
                return Err(DevxError::Os {
                    op: OP,
                    errno: rc_errno(rc),
                });
            }
            *guard = None;
        }
        let mut objs = lock(&c.objs);
        if objs.get(&obj.0).is_some_and(|s| Arc::ptr_eq(s, &slot)) {
            objs.remove(&obj.0);
        }
        Ok(())
    }

    unsafe fn umem_reg(
        &self,
        addr: *mut u8,
        len: usize,
        access: UmemAccess,
        pgsz_bitmap: u64,
    ) -> Result<Umem, DevxError> {
        let c = &self.ctx;
        let (p, op) = if pgsz_bitmap == 0 || pgsz_bitmap == DEFAULT_PGSZ_BITMAP {
            // SAFETY: the context is open; the caller guarantees `addr..addr+len` stays
            // allocated until `umem_dereg`.
            let p = unsafe { (c.lib.umem_reg)(c.ctx.get(), addr.cast(), len, access.bits()) };
            (p, "mlx5dv_devx_umem_reg")
        } else {
            let Some(reg_ex) = c.lib.umem_reg_ex else {
                return Err(DevxError::Unsupported(format!(
                    "page-size bitmap {pgsz_bitmap:#x} needs mlx5dv_devx_umem_reg_ex, which this {LIBMLX5} lacks"
                )));
            };
            let mut umem_in = Mlx5dvDevxUmemIn {
                addr: addr.cast(),
                size: len,
                access: access.bits(),
                pgsz_bitmap,
                comp_mask: 0,
                dmabuf_fd: -1,
            };
            // SAFETY: as above; `umem_in` is a valid input structure read during the call.
            let p = unsafe { reg_ex(c.ctx.get(), &mut umem_in) };
            (p, "mlx5dv_devx_umem_reg_ex")
        };
        let Some(p) = CPtr::new(p) else {
            return Err(DevxError::Os {
                op,
                errno: Errno::last(),
            });
        };
        // SAFETY: a UMEM returned by libmlx5 starts with the public `umem_id` field.
        let umem_id = unsafe { (*p.get()).umem_id };
        let h = c.handle();
        lock(&c.umems).insert(h, p);
        Ok(Umem {
            handle: UmemHandle(h),
            umem_id,
        })
    }

    fn umem_dereg(&self, umem: UmemHandle) -> Result<(), DevxError> {
        const OP: &str = "mlx5dv_devx_umem_dereg";
        let c = &self.ctx;
        let p = lock(&c.umems).remove(&umem.0).ok_or(DevxError::Os {
            op: OP,
            errno: Errno::ENOENT,
        })?;
        // SAFETY: `p` is a live UMEM of this context, removed from the table so no one else
        // can reach it.
        let rc = unsafe { (c.lib.umem_dereg)(p.get()) };
        if rc != 0 {
            // Still registered (e.g. referenced by an object): keep it for a later attempt.
            lock(&c.umems).insert(umem.0, p);
            return Err(DevxError::Os {
                op: OP,
                errno: rc_errno(rc),
            });
        }
        Ok(())
    }

    fn uar_alloc(&self, kind: UarKind) -> Result<Uar, DevxError> {
        const OP: &str = "mlx5dv_devx_alloc_uar";
        let c = &self.ctx;
        // SAFETY: the context is open; `kind` is MLX5DV_UAR_ALLOC_TYPE_BF (0) or _NC (1).
        let p = unsafe { (c.lib.alloc_uar)(c.ctx.get(), kind as u32) };
        let Some(p) = CPtr::new(p) else {
            return Err(DevxError::Os {
                op: OP,
                errno: Errno::last(),
            });
        };
        // SAFETY: `p` is the `struct mlx5dv_devx_uar` libmlx5 filled in before returning it.
        let (reg_addr, page_id) = unsafe { ((*p.get()).reg_addr, (*p.get()).page_id) };
        let base = reg_addr.cast::<u8>().map_addr(|a| a & !(UAR_PAGE_SIZE - 1));
        let Some(base) = NonNull::new(base) else {
            // SAFETY: `p` was just allocated and is not shared.
            unsafe { (c.lib.free_uar)(p.get()) };
            return Err(DevxError::Os {
                op: OP,
                errno: Errno::EFAULT,
            });
        };
        let h = c.handle();
        lock(&c.uars).insert(h, p);
        Ok(Uar {
            handle: h,
            page_id,
            base,
            len: UAR_PAGE_SIZE,
        })
    }

    fn uar_free(&self, uar: Uar) -> Result<(), DevxError> {
        let c = &self.ctx;
        let p = lock(&c.uars).remove(&uar.handle).ok_or(DevxError::Os {
            op: "mlx5dv_devx_free_uar",
            errno: Errno::ENOENT,
        })?;
        // SAFETY: `p` is a live UAR of this context, removed from the table; the caller gave up
        // its mapping by passing `uar` by value.
        unsafe { (c.lib.free_uar)(p.get()) };
        Ok(())
    }

    fn query_eqn(&self, vector: u32) -> Result<u32, DevxError> {
        let c = &self.ctx;
        let mut eqn = 0u32;
        // SAFETY: the context is open and `eqn` is a valid out-pointer.
        let rc = unsafe { (c.lib.query_eqn)(c.ctx.get(), vector, &mut eqn) };
        if rc == 0 {
            Ok(eqn)
        } else {
            Err(DevxError::Os {
                op: "mlx5dv_devx_query_eqn",
                errno: rc_errno(rc),
            })
        }
    }

    fn event_channel(&self) -> Result<Box<dyn EventChannel>, DevxError> {
        const OP: &str = "mlx5dv_devx_create_event_channel";
        let c = &self.ctx;
        // SAFETY: the context is open; flags 0 = events carry their EQE.
        let p = unsafe { (c.lib.create_event_channel)(c.ctx.get(), 0) };
        let Some(p) = CPtr::new(p) else {
            return Err(DevxError::Os {
                op: OP,
                errno: Errno::last(),
            });
        };
        // SAFETY: `p` is the channel libmlx5 filled in before returning it.
        let fd = unsafe { (*p.get()).fd };
        let chan = RdmaCoreEventChannel {
            ctx: Arc::clone(c),
            chan: p,
            fd,
        };
        // Non-blocking, so that a read after `poll` can never block past the timeout.
        chan.set_nonblocking().map_err(|errno| DevxError::Os {
            op: "fcntl(O_NONBLOCK)",
            errno,
        })?;
        Ok(Box::new(chan))
    }
}

// ---------------------------------------------------------------------------------------------
// Event channel.

/// Room for `struct mlx5dv_devx_async_event_hdr` (8-byte cookie) and an EQE (64 bytes), with
/// margin; 8-byte aligned.
const EVENT_BUF_WORDS: usize = 1 + 32;

/// Longest single `poll` (ms); longer waits loop.
const MAX_POLL_MS: u16 = 60_000;

/// An rdma-core DevX event channel. Keeps the device context open while it lives.
struct RdmaCoreEventChannel {
    ctx: Arc<Ctx>,
    chan: CPtr<Mlx5dvDevxEventChannel>,
    fd: RawFd,
}

impl RdmaCoreEventChannel {
    fn borrow_fd(&self) -> BorrowedFd<'_> {
        // SAFETY: `fd` belongs to the channel and stays open until the channel is destroyed in
        // `drop`, which needs `&mut self`.
        unsafe { BorrowedFd::borrow_raw(self.fd) }
    }

    fn set_nonblocking(&self) -> Result<(), Errno> {
        use nix::fcntl::{fcntl, FcntlArg, OFlag};
        let flags = fcntl(self.borrow_fd(), FcntlArg::F_GETFL)?;
        let flags = OFlag::from_bits_retain(flags) | OFlag::O_NONBLOCK;
        fcntl(self.borrow_fd(), FcntlArg::F_SETFL(flags)).map(drop)
    }

    /// One non-blocking read; `Ok(None)` when no event is queued.
    fn try_read(&self) -> Result<Option<DevxEvent>, DevxError> {
        const OP: &str = "mlx5dv_devx_get_event";
        let mut buf = [0u64; EVENT_BUF_WORDS];
        loop {
            // SAFETY: the channel is alive and `buf` is writable for its whole size, aligned for
            // the header's u64 cookie.
            let n = unsafe {
                (self.ctx.lib.get_event)(
                    self.chan.get(),
                    buf.as_mut_ptr().cast(),
                    std::mem::size_of_val(&buf),
                )
            };
            if n < 0 {
                return match Errno::last() {
                    Errno::EINTR => continue,
                    Errno::EAGAIN => Ok(None),
                    errno => Err(DevxError::Os { op: OP, errno }),
                };
            }
            let n = n.unsigned_abs();
            if n < 8 || n > std::mem::size_of_val(&buf) {
                return Err(DevxError::BadMailbox(format!("event record of {n} bytes")));
            }
            let bytes: Vec<u8> = buf.iter().flat_map(|w| w.to_ne_bytes()).collect();
            return Ok(Some(DevxEvent {
                cookie: buf[0],
                data: bytes[8..n].to_vec(),
            }));
        }
    }
}

impl EventChannel for RdmaCoreEventChannel {
    fn subscribe(
        &self,
        obj: Option<ObjHandle>,
        event_types: &[u16],
        cookie: u64,
    ) -> Result<(), DevxError> {
        const OP: &str = "mlx5dv_devx_subscribe_devx_event";
        // libmlx5 takes a non-const array it only reads; give it a copy of its own.
        let mut events = event_types.to_vec();
        let size = u16::try_from(std::mem::size_of_val(events.as_slice())).map_err(|_| {
            DevxError::BadMailbox(format!("{} event types in one subscription", events.len()))
        })?;
        let events_ptr = events.as_mut_ptr();
        let subscribe = |obj: *mut Mlx5dvDevxObj| {
            // SAFETY: the channel is alive, `obj` is NULL or a live object of the same context
            // (read lock held by `with_obj`), and `events` holds `size` bytes.
            let rc = unsafe {
                (self.ctx.lib.subscribe_event)(self.chan.get(), obj, size, events_ptr, cookie)
            };
            if rc == 0 {
                Ok(())
            } else {
                Err(DevxError::Os {
                    op: OP,
                    errno: rc_errno(rc),
                })
            }
        };
        match obj {
            Some(obj) => self.ctx.with_obj(obj, OP, subscribe),
            None => subscribe(ptr::null_mut()),
        }
    }

    fn read_event(&self, timeout: Duration) -> Result<Option<DevxEvent>, DevxError> {
        crate::sync::traced_wait("a DevX event", || {
            use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
            let deadline = Instant::now().checked_add(timeout);
            loop {
                if let Some(ev) = self.try_read()? {
                    return Ok(Some(ev));
                }
                let remaining = match deadline {
                    Some(d) => d.saturating_duration_since(Instant::now()),
                    None => Duration::MAX,
                };
                if remaining.is_zero() {
                    return Ok(None);
                }
                // Round up, so that a sub-millisecond remainder still sleeps instead of spinning.
                let ms = remaining
                    .as_nanos()
                    .div_ceil(1_000_000)
                    .min(u128::from(MAX_POLL_MS));
                let ms = u16::try_from(ms).unwrap_or(MAX_POLL_MS);
                let mut fds = [PollFd::new(self.borrow_fd(), PollFlags::POLLIN)];
                match poll(&mut fds, PollTimeout::from(ms)) {
                    Ok(_) | Err(Errno::EINTR) => {}
                    Err(errno) => return Err(DevxError::Os { op: "poll", errno }),
                }
                let revents = fds[0].revents().unwrap_or(PollFlags::empty());
                if revents.contains(PollFlags::POLLNVAL) {
                    return Err(DevxError::Os {
                        op: "poll",
                        errno: Errno::EBADF,
                    });
                }
                if revents.intersects(PollFlags::POLLERR | PollFlags::POLLHUP)
                    && !revents.contains(PollFlags::POLLIN)
                {
                    return Err(DevxError::Os {
                        op: "poll",
                        errno: Errno::EIO,
                    });
                }
            }
        })
    }
}

impl Drop for RdmaCoreEventChannel {
    fn drop(&mut self) {
        // SAFETY: the channel is alive and destroyed once (this closes its fd); the context it
        // was created on is kept open by `self.ctx`.
        unsafe { (self.ctx.lib.destroy_event_channel)(self.chan.get()) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_match_the_headers() {
        use std::mem::{offset_of, size_of};
        assert_eq!(offset_of!(Mlx5dvContextAttr, comp_mask), 8);
        assert_eq!(offset_of!(Mlx5dvDevxUmemIn, access), 16);
        assert_eq!(offset_of!(Mlx5dvDevxUmemIn, pgsz_bitmap), 24);
        assert_eq!(offset_of!(Mlx5dvDevxUmemIn, dmabuf_fd), 40);
        if size_of::<usize>() == 8 {
            assert_eq!(offset_of!(Mlx5dvDevxUar, page_id), 16);
            assert_eq!(offset_of!(Mlx5dvDevxUar, mmap_off), 24);
            assert_eq!(size_of::<Mlx5dvDevxUar>(), 40);
        }
    }

    /// The published symbol lists are exactly what `Lib::load` resolves.
    #[test]
    fn symbol_lists_match_the_loader() {
        let src = include_str!("rdma_core.rs");
        let body = &src[src
            .find("fn load() -> Result<Lib, String>")
            .expect("loader")..];
        let body = &body[..body.find("\n    }\n}").expect("end of loader")];
        let mut loaded: Vec<&str> = body
            .split('"')
            .skip(1)
            .step_by(2)
            .filter(|s| s.starts_with("ibv_") || s.starts_with("mlx5dv_"))
            .collect();
        loaded.sort_unstable();
        let mut listed: Vec<&str> = IBVERBS_SYMBOLS
            .iter()
            .chain(MLX5_SYMBOLS)
            .chain(MLX5_OPTIONAL_SYMBOLS)
            .copied()
            .collect();
        listed.sort_unstable();
        assert_eq!(loaded, listed);
    }

    #[test]
    fn uar_kind_is_the_alloc_flag() {
        assert_eq!(UarKind::BlueFlame as u32, 0);
        assert_eq!(UarKind::NonCached as u32, 1);
    }

    #[test]
    fn open_fails_cleanly_without_hardware() {
        // Whatever this machine has, `open` returns (no hang, no panic); with rdma-core but no
        // device it is `NoDevice`, without rdma-core `Unsupported` naming the library.
        match (available(), RdmaCoreDevx::open(None)) {
            (Err(msg), Err(DevxError::Unsupported(m))) => {
                assert_eq!(msg, m);
                assert!(m.contains(LIBIBVERBS) || m.contains(LIBMLX5), "{m}");
            }
            (Ok(()), Err(DevxError::NoDevice { searched })) => {
                assert!(searched.contains("ibv_get_device_list"))
            }
            (Ok(()), Ok(dev)) => assert!(dev.describe().contains(dev.device_name())),
            (Ok(()), Err(e @ DevxError::Os { .. })) => {
                eprintln!("mlx5 device present but not usable: {e}")
            }
            (a, b) => panic!("unexpected combination: available() = {a:?}, open() = {b:?}"),
        }
    }
}
