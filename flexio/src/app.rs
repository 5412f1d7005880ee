//! Applications and their functions: what DPACC's generated host code registers when the
//! program starts (`flexio_app_create`, then `flexio_func_pup_register` per RPC function and
//! event handler), and what a process is made from.

use std::ffi::{c_char, c_void, CString};
use std::sync::{Arc, Mutex, PoisonError};

use mlx5_dpa::dpa::app::App as DeviceApp;

use crate::handle::Table;
use crate::{entry, getter, name_arg, put, Failure, FlexioStatus, Result, FLEXIO_MAX_NAME_LEN};

/// The largest argument buffer a function may register: what one RPC call carries.
pub const MAX_ARGBUF_SIZE: usize = mlx5_dpa::dpa::process::MAX_RPC_ARG_BUF;

/// `struct flexio_app_attr`.
#[repr(C)]
pub struct FlexioAppAttr {
    pub app_name: *const c_char,
    pub app_ptr: *mut c_void,
    pub app_bsize: usize,
    pub app_sig_sec_name: *mut c_char,
}

/// `struct flexio_app` (opaque to C).
pub struct FlexioApp {
    _private: [u8; 0],
}

/// A registered device function.
#[derive(Debug, Clone)]
pub(crate) struct Func {
    /// The host stub's address: the handle C programs name the function by.
    pub(crate) stub: usize,
    pub(crate) name: String,
    /// With a pack function (`flexio_func_pup_register`): the device's unpack function, the
    /// argument buffer's size and the host's pack function.
    pub(crate) pup: Option<Pup>,
}

#[derive(Debug, Clone)]
pub(crate) struct Pup {
    pub(crate) unpack: String,
    pub(crate) argbuf_size: usize,
    pub(crate) pack: *const c_void,
}

// SAFETY: `pack` is the address of a C function, called only from the C part of
// `flexio_process_call`; the address itself is plain data.
unsafe impl Send for Pup {}
// SAFETY: as above.
unsafe impl Sync for Pup {}

/// An application: its name, its device ELF (checked), and its functions.
pub(crate) struct App {
    pub(crate) name: CString,
    pub(crate) device: DeviceApp,
    funcs: Mutex<Vec<Func>>,
    /// The stubs `flexio_func_register` made (their addresses are the handles).
    #[allow(clippy::vec_box)] // each handle is a box's address, which must not move
    own_stubs: Mutex<Vec<Box<u8>>>,
}

impl App {
    /// The function whose host stub is at `stub`.
    pub(crate) fn func(&self, stub: *const c_void) -> Result<Func> {
        self.funcs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .find(|f| f.stub == stub as usize)
            .cloned()
            .ok_or_else(|| {
                Failure::new(format!(
                    "{stub:p} is no function registered with application {:?}",
                    self.name
                ))
            })
    }

    fn register(&self, f: Func) -> Result<()> {
        if self.device.symbol(&f.name).is_none() {
            return Err(Failure::new(format!(
                "application {:?} has no device function {:?}",
                self.name, f.name
            )));
        }
        if let Some(p) = &f.pup {
            if self.device.symbol(&p.unpack).is_none() {
                return Err(Failure::new(format!(
                    "application {:?} has no unpack function {:?}",
                    self.name, p.unpack
                )));
            }
        }
        let mut funcs = self.funcs.lock().unwrap_or_else(PoisonError::into_inner);
        if funcs.iter().any(|g| g.stub == f.stub) {
            return Err(Failure::new(format!(
                "host stub {:#x} is already registered",
                f.stub
            )));
        }
        funcs.push(f);
        Ok(())
    }
}

pub(crate) static APPS: Table<App> = Table::new("flexio_app");

/// Lists handed out by `flexio_app_get_list`, until `flexio_app_list_free`: arrays of
/// application handles (pointer-sized addresses, as C reads them).
static LISTS: Table<Vec<usize>> = Table::new("flexio_app list");

/// Creates an application from its device ELF, copied (FlexIO `flexio_app_create`).
///
/// # Safety
/// `fattr` is NULL or a valid attribute structure whose `app_ptr` covers `app_bsize` bytes;
/// `app` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flexio_app_create(
    fattr: *mut FlexioAppAttr,
    app: *mut *mut FlexioApp,
) -> FlexioStatus {
    entry("flexio_app_create", || {
        // SAFETY: NULL or valid (the caller's contract).
        let a = unsafe { fattr.as_ref() }.ok_or_else(|| Failure::new("fattr is NULL"))?;
        // SAFETY: NULL or NUL-terminated.
        let name = unsafe { name_arg(a.app_name, "app_name") }?;
        if a.app_ptr.is_null() || a.app_bsize == 0 {
            return Err(Failure::new(format!("application {name:?} has no ELF")));
        }
        // SAFETY: `app_ptr` covers `app_bsize` bytes (the caller's contract).
        let elf = unsafe { std::slice::from_raw_parts(a.app_ptr.cast::<u8>(), a.app_bsize) };
        let device = DeviceApp::from_device_elf(&name, elf)
            .map_err(|e| Failure::new(format!("application {name:?}: {e}")))?;
        let h = APPS.insert(App {
            name: CString::new(name).map_err(|_| Failure::new("app_name holds a NUL"))?,
            device,
            funcs: Mutex::new(Vec::new()),
            own_stubs: Mutex::new(Vec::new()),
        });
        // SAFETY: NULL or writable.
        unsafe { put(app, h, "app") }
    })
}

/// Destroys an application and its registrations (FlexIO `flexio_app_destroy`). Processes
/// made from it keep what they need.
///
/// # Safety
/// `app` is any pointer; only a live application is acted on.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flexio_app_destroy(app: *mut FlexioApp) -> FlexioStatus {
    entry("flexio_app_destroy", || APPS.remove(app).map(drop))
}

/// The live applications, as an array the caller frees with `flexio_app_list_free`
/// (FlexIO `flexio_app_get_list`).
///
/// # Safety
/// `app_list` and `num_apps` are NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flexio_app_get_list(
    app_list: *mut *mut *mut FlexioApp,
    num_apps: *mut u32,
) -> FlexioStatus {
    entry("flexio_app_get_list", || {
        if app_list.is_null() || num_apps.is_null() {
            return Err(Failure::new("app_list or num_apps is NULL"));
        }
        let mut all: Vec<usize> = APPS.all().into_iter().map(|(k, _)| k).collect();
        all.sort_unstable();
        let n = u32::try_from(all.len()).map_err(|_| Failure::new("too many applications"))?;
        // C sees the array itself; the table keeps it (its heap block does not move).
        let first = all.as_ptr().cast::<*mut FlexioApp>().cast_mut();
        let _: *mut c_void = LISTS.insert(all);
        // SAFETY: both checked non-NULL above; writable (the caller's contract).
        unsafe {
            app_list.write(first);
            num_apps.write(n);
        }
        Ok(())
    })
}

/// Frees a list from `flexio_app_get_list` (FlexIO `flexio_app_list_free`).
///
/// # Safety
/// `apps_list` is any pointer; only a list this library handed out is freed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flexio_app_list_free(apps_list: *mut *mut FlexioApp) -> FlexioStatus {
    entry("flexio_app_list_free", || {
        let key = LISTS
            .all()
            .into_iter()
            .find(|(_, l)| l.as_ptr().cast::<*mut FlexioApp>() == apps_list.cast_const())
            .map(|(k, _)| k)
            .ok_or_else(|| Failure::new(format!("{apps_list:p} is no application list")))?;
        LISTS.remove(key as *const c_void).map(drop)
    })
}

/// The application's name, NULL for a bad handle (FlexIO `flexio_app_get_name`).
///
/// # Safety
/// `app` is any pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flexio_app_get_name(app: *mut FlexioApp) -> *const c_char {
    getter("flexio_app_get_name", std::ptr::null(), || {
        // The string lives as long as the application.
        Ok(APPS.get(app)?.name.as_ptr())
    })
}

/// The size of the application's ELF, 0 for a bad handle (FlexIO `flexio_app_get_elf_size`).
///
/// # Safety
/// `app` is any pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flexio_app_get_elf_size(app: *mut FlexioApp) -> usize {
    getter("flexio_app_get_elf_size", 0, || {
        Ok(APPS.get(app)?.device.image().len())
    })
}

/// Copies the application's ELF into `bin_buff` of `bin_size` bytes, which must hold it
/// (FlexIO `flexio_app_get_elf`).
///
/// # Safety
/// `bin_buff` is NULL or writable for `bin_size` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flexio_app_get_elf(
    app: *mut FlexioApp,
    bin_buff: *mut u64,
    bin_size: usize,
) -> FlexioStatus {
    entry("flexio_app_get_elf", || {
        let a = APPS.get(app)?;
        let elf = a.device.image();
        if bin_buff.is_null() || bin_size < elf.len() {
            return Err(Failure::new(format!(
                "the buffer ({bin_size} bytes) cannot hold the ELF ({} bytes)",
                elf.len()
            )));
        }
        // SAFETY: writable for `bin_size >= elf.len()` bytes (the caller's contract); the
        // source is our own copy, so the two do not overlap.
        unsafe { std::ptr::copy_nonoverlapping(elf.as_ptr(), bin_buff.cast::<u8>(), elf.len()) };
        Ok(())
    })
}

/// Registers a device function called through its unpack function with an argument buffer
/// the host's pack function fills (FlexIO `flexio_func_pup_register`, what DPACC generates).
///
/// # Safety
/// The names are NULL or NUL-terminated; `host_pack_func` is NULL or a function of
/// `flexio_func_arg_pack_fn_t`'s type.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flexio_func_pup_register(
    app: *mut FlexioApp,
    dev_func_name: *const c_char,
    dev_unpack_func_name: *const c_char,
    host_stub_func_addr: *const c_void,
    argbuf_size: usize,
    host_pack_func: *const c_void,
) -> FlexioStatus {
    entry("flexio_func_pup_register", || {
        let a = APPS.get(app)?;
        // SAFETY: NULL or NUL-terminated.
        let name = unsafe { name_arg(dev_func_name, "dev_func_name") }?;
        // SAFETY: as above.
        let unpack = unsafe { name_arg(dev_unpack_func_name, "dev_unpack_func_name") }?;
        if host_stub_func_addr.is_null() || host_pack_func.is_null() {
            return Err(Failure::new(
                "host_stub_func_addr or host_pack_func is NULL",
            ));
        }
        if argbuf_size > MAX_ARGBUF_SIZE {
            return Err(Failure::new(format!(
                "an argument buffer of {argbuf_size} bytes (at most {MAX_ARGBUF_SIZE})"
            )));
        }
        a.register(Func {
            stub: host_stub_func_addr as usize,
            name,
            pup: Some(Pup {
                unpack,
                argbuf_size,
                pack: host_pack_func,
            }),
        })
    })
}

/// Registers a device function taking one 64-bit argument, and gives the handle to call or
/// start it by (FlexIO `flexio_func_register`).
///
/// # Safety
/// `dev_func_name` is NULL or NUL-terminated; `out_func` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flexio_func_register(
    app: *mut FlexioApp,
    dev_func_name: *const c_char,
    out_func: *mut *const c_void,
) -> FlexioStatus {
    entry("flexio_func_register", || {
        let a = APPS.get(app)?;
        // SAFETY: NULL or NUL-terminated.
        let name = unsafe { name_arg(dev_func_name, "dev_func_name") }?;
        if out_func.is_null() {
            return Err(Failure::new("out_func is NULL"));
        }
        // A handle of its own: the address of a byte the application keeps.
        let stub = Box::new(0u8);
        let addr = &*stub as *const u8 as usize;
        a.register(Func {
            stub: addr,
            name,
            pup: None,
        })?;
        a.own_stubs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(stub);
        // SAFETY: checked non-NULL; writable (the caller's contract).
        unsafe { out_func.write(addr as *const c_void) };
        Ok(())
    })
}

/// What was registered for a host stub (FlexIO `flexio_func_get_register_info`). The name
/// buffers hold `func_name_size` bytes; every out-pointer may be NULL.
///
/// # Safety
/// Each out-pointer is NULL or writable (the names for `func_name_size` bytes).
#[allow(clippy::too_many_arguments)]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flexio_func_get_register_info(
    app: *mut FlexioApp,
    host_stub_func_addr: *const c_void,
    pup: *mut u32,
    dev_func_name: *mut c_char,
    dev_unpack_func_name: *mut c_char,
    func_name_size: usize,
    argbuf_size: *mut usize,
    host_pack_func: *mut *const c_void,
    dev_func_addr: *mut u64,
    dev_unpack_func_addr: *mut u64,
) -> FlexioStatus {
    entry("flexio_func_get_register_info", || {
        let a = APPS.get(app)?;
        let f = a.func(host_stub_func_addr)?;
        let addr = |n: &str| a.device.symbol(n).unwrap_or(0);
        let unpack = f.pup.as_ref().map_or("", |p| p.unpack.as_str());
        // SAFETY: each is NULL or writable (the caller's contract); NULL ones are skipped.
        unsafe {
            copy_name(dev_func_name, func_name_size, &f.name)?;
            copy_name(dev_unpack_func_name, func_name_size, unpack)?;
            opt_put(pup, u32::from(f.pup.is_some()));
            opt_put(argbuf_size, f.pup.as_ref().map_or(0, |p| p.argbuf_size));
            opt_put(
                host_pack_func,
                f.pup.as_ref().map_or(std::ptr::null(), |p| p.pack),
            );
            opt_put(dev_func_addr, addr(&f.name));
            opt_put(
                dev_unpack_func_addr,
                f.pup.as_ref().map_or(0, |p| addr(&p.unpack)),
            );
        }
        Ok(())
    })
}

/// Writes `v` through `p` unless it is NULL.
///
/// # Safety
/// `p` is NULL or writable.
unsafe fn opt_put<T>(p: *mut T, v: T) {
    if !p.is_null() {
        // SAFETY: non-NULL and writable (the caller's contract).
        unsafe { p.write(v) };
    }
}

/// Copies `name` with its NUL into `dst` of `size` bytes (nothing for a NULL `dst`).
///
/// # Safety
/// `dst` is NULL or writable for `size` bytes.
unsafe fn copy_name(dst: *mut c_char, size: usize, name: &str) -> Result<()> {
    if dst.is_null() {
        return Ok(());
    }
    if name.len() + 1 > size.min(FLEXIO_MAX_NAME_LEN + 1) {
        return Err(Failure::new(format!(
            "a name buffer of {size} bytes cannot hold {name:?}"
        )));
    }
    // SAFETY: `name.len() + 1 <= size` bytes are writable (the caller's contract).
    unsafe {
        std::ptr::copy_nonoverlapping(name.as_ptr().cast::<c_char>(), dst, name.len());
        dst.add(name.len()).write(0);
    }
    Ok(())
}

/// The application of handle `app`, for the process module.
pub(crate) fn app(app: *const FlexioApp) -> Result<Arc<App>> {
    APPS.get(app)
}
