//! # mlx5-sim-preload
//!
//! Loaded into a program with `LD_PRELOAD` (by `mlx5-dpa run`), this library makes
//! `/dev/infiniband/uverbsN` a device served by the model in the program's own process
//! ([`mlx5_sim_uverbs::server`]). It defines the libc functions a uverbs client calls — `open`
//! (and its `64`, `at` and fortified forms), `close`, `ioctl`, `read`, `write`, `mmap`,
//! `munmap` — and hands each to the server when it concerns a descriptor the server gave out (a
//! one-load check), or to the next definition (libc's, found with `dlsym(RTLD_NEXT)`) otherwise.
//! Until a uverbs device is opened it does nothing else: no thread, no allocation.
//!
//! Every entry point catches panics: a Rust panic never unwinds into the C caller; the call
//! fails with `EIO` instead.
//!
//! Variadic prototypes (`open`'s mode, `ioctl`'s argument) are defined with the optional
//! argument as a named one: on the Linux ABIs this library builds for (x86_64 System V,
//! AArch64 AAPCS64) a variadic integer or pointer argument travels in the same register as a
//! named one would.

use std::ffi::{c_char, c_int, c_long, c_uint, c_ulong, c_void, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};

use mlx5_sim_uverbs::{is_ours, server, uverbs_index};

fn set_errno(e: c_int) {
    // SAFETY: errno is this thread's own variable.
    unsafe { *libc::__errno_location() = e };
}

/// The next definition of a libc function, looked up once.
struct Next {
    name: &'static CStr,
    addr: AtomicUsize,
}

impl Next {
    const fn new(name: &'static CStr) -> Next {
        Next {
            name,
            addr: AtomicUsize::new(0),
        }
    }

    fn get(&self) -> usize {
        let a = self.addr.load(Ordering::Acquire);
        if a != 0 {
            return a;
        }
        // SAFETY: dlsym with RTLD_NEXT and a NUL-terminated name has no other precondition.
        let p = unsafe { libc::dlsym(libc::RTLD_NEXT, self.name.as_ptr()) } as usize;
        self.addr.store(p, Ordering::Release);
        p
    }
}

static OPEN: Next = Next::new(c"open");
static OPEN64: Next = Next::new(c"open64");
static OPENAT: Next = Next::new(c"openat");
static OPENAT64: Next = Next::new(c"openat64");
static OPEN_2: Next = Next::new(c"__open_2");
static OPEN64_2: Next = Next::new(c"__open64_2");
static OPENAT_2: Next = Next::new(c"__openat_2");
static OPENAT64_2: Next = Next::new(c"__openat64_2");
static CLOSE: Next = Next::new(c"close");
static IOCTL: Next = Next::new(c"ioctl");
static READ: Next = Next::new(c"read");
static WRITE: Next = Next::new(c"write");
static MMAP: Next = Next::new(c"mmap");
static MMAP64: Next = Next::new(c"mmap64");
static MUNMAP: Next = Next::new(c"munmap");

type OpenFn = unsafe extern "C" fn(*const c_char, c_int, c_uint) -> c_int;
type OpenatFn = unsafe extern "C" fn(c_int, *const c_char, c_int, c_uint) -> c_int;
type Open2Fn = unsafe extern "C" fn(*const c_char, c_int) -> c_int;
type Openat2Fn = unsafe extern "C" fn(c_int, *const c_char, c_int) -> c_int;

/// A uverbs path: the device index.
fn target(path: *const c_char) -> Option<u32> {
    if path.is_null() {
        return None;
    }
    // SAFETY: the caller passed a C string (as open(2) requires); reading it up to its NUL.
    let p = unsafe { CStr::from_ptr(path) };
    uverbs_index(p.to_bytes())
}

fn serve_open(index: u32, path: *const c_char, flags: c_int) -> c_int {
    let r = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: `target` checked the path is a valid C string.
        let p = unsafe { CStr::from_ptr(path) };
        server().open(index, p, flags)
    }));
    match r {
        Ok(Ok(fd)) => fd,
        Ok(Err(e)) => {
            set_errno(e as c_int);
            -1
        }
        Err(_) => {
            set_errno(libc::EIO);
            -1
        }
    }
}

fn errno_result<T>(r: std::thread::Result<Result<T, nix::errno::Errno>>, fail: T) -> T {
    match r {
        Ok(Ok(v)) => v,
        Ok(Err(e)) => {
            set_errno(e as c_int);
            fail
        }
        Err(_) => {
            set_errno(libc::EIO);
            fail
        }
    }
}

fn call_open(next: &Next, path: *const c_char, flags: c_int, mode: c_uint) -> c_int {
    if let Some(i) = target(path) {
        return serve_open(i, path, flags);
    }
    let f = next.get();
    if f == 0 {
        // SAFETY: raw openat with the caller's arguments.
        return unsafe {
            libc::syscall(libc::SYS_openat, libc::AT_FDCWD, path, flags, mode) as c_int
        };
    }
    // SAFETY: `f` is libc's function of this prototype.
    unsafe { std::mem::transmute::<usize, OpenFn>(f)(path, flags, mode) }
}

fn call_openat(
    next: &Next,
    dirfd: c_int,
    path: *const c_char,
    flags: c_int,
    mode: c_uint,
) -> c_int {
    if let Some(i) = target(path) {
        return serve_open(i, path, flags);
    }
    let f = next.get();
    if f == 0 {
        // SAFETY: raw openat with the caller's arguments.
        return unsafe { libc::syscall(libc::SYS_openat, dirfd, path, flags, mode) as c_int };
    }
    // SAFETY: `f` is libc's function of this prototype.
    unsafe { std::mem::transmute::<usize, OpenatFn>(f)(dirfd, path, flags, mode) }
}

/// `open(2)`.
///
/// # Safety
/// As libc's.
#[no_mangle]
pub unsafe extern "C" fn open(path: *const c_char, flags: c_int, mode: c_uint) -> c_int {
    call_open(&OPEN, path, flags, mode)
}

/// `open64`.
///
/// # Safety
/// As libc's.
#[no_mangle]
pub unsafe extern "C" fn open64(path: *const c_char, flags: c_int, mode: c_uint) -> c_int {
    call_open(&OPEN64, path, flags, mode)
}

/// `openat(2)`.
///
/// # Safety
/// As libc's.
#[no_mangle]
pub unsafe extern "C" fn openat(
    dirfd: c_int,
    path: *const c_char,
    flags: c_int,
    mode: c_uint,
) -> c_int {
    call_openat(&OPENAT, dirfd, path, flags, mode)
}

/// `openat64`.
///
/// # Safety
/// As libc's.
#[no_mangle]
pub unsafe extern "C" fn openat64(
    dirfd: c_int,
    path: *const c_char,
    flags: c_int,
    mode: c_uint,
) -> c_int {
    call_openat(&OPENAT64, dirfd, path, flags, mode)
}

fn call_open2(next: &Next, path: *const c_char, flags: c_int) -> c_int {
    if let Some(i) = target(path) {
        return serve_open(i, path, flags);
    }
    let f = next.get();
    if f == 0 {
        // SAFETY: raw openat with the caller's arguments.
        return unsafe { libc::syscall(libc::SYS_openat, libc::AT_FDCWD, path, flags, 0) as c_int };
    }
    // SAFETY: `f` is libc's function of this prototype.
    unsafe { std::mem::transmute::<usize, Open2Fn>(f)(path, flags) }
}

fn call_openat2(next: &Next, dirfd: c_int, path: *const c_char, flags: c_int) -> c_int {
    if let Some(i) = target(path) {
        return serve_open(i, path, flags);
    }
    let f = next.get();
    if f == 0 {
        // SAFETY: raw openat with the caller's arguments.
        return unsafe { libc::syscall(libc::SYS_openat, dirfd, path, flags, 0) as c_int };
    }
    // SAFETY: `f` is libc's function of this prototype.
    unsafe { std::mem::transmute::<usize, Openat2Fn>(f)(dirfd, path, flags) }
}

/// `__open_2` (fortified `open` without a mode).
///
/// # Safety
/// As libc's.
#[no_mangle]
pub unsafe extern "C" fn __open_2(path: *const c_char, flags: c_int) -> c_int {
    call_open2(&OPEN_2, path, flags)
}

/// `__open64_2`.
///
/// # Safety
/// As libc's.
#[no_mangle]
pub unsafe extern "C" fn __open64_2(path: *const c_char, flags: c_int) -> c_int {
    call_open2(&OPEN64_2, path, flags)
}

/// `__openat_2`.
///
/// # Safety
/// As libc's.
#[no_mangle]
pub unsafe extern "C" fn __openat_2(dirfd: c_int, path: *const c_char, flags: c_int) -> c_int {
    call_openat2(&OPENAT_2, dirfd, path, flags)
}

/// `__openat64_2`.
///
/// # Safety
/// As libc's.
#[no_mangle]
pub unsafe extern "C" fn __openat64_2(dirfd: c_int, path: *const c_char, flags: c_int) -> c_int {
    call_openat2(&OPENAT64_2, dirfd, path, flags)
}

/// `close(2)`: a served descriptor is forgotten by the server first.
///
/// # Safety
/// As libc's.
#[no_mangle]
pub unsafe extern "C" fn close(fd: c_int) -> c_int {
    if is_ours(fd) {
        let _ = catch_unwind(|| server().close(fd));
    }
    let f = CLOSE.get();
    if f == 0 {
        // SAFETY: raw close of the caller's descriptor.
        return unsafe { libc::syscall(libc::SYS_close, fd) as c_int };
    }
    // SAFETY: `f` is libc's close.
    unsafe { std::mem::transmute::<usize, unsafe extern "C" fn(c_int) -> c_int>(f)(fd) }
}

/// `ioctl(2)`.
///
/// # Safety
/// As libc's.
#[no_mangle]
pub unsafe extern "C" fn ioctl(fd: c_int, request: c_ulong, arg: *mut c_void) -> c_int {
    if is_ours(fd) {
        // `unsigned long` is 64 bits on the LP64 targets this library builds for.
        #[allow(clippy::useless_conversion)]
        let request = u64::from(request);
        let r = catch_unwind(|| server().ioctl(fd, request, arg as u64));
        return errno_result(r, -1);
    }
    let f = IOCTL.get();
    if f == 0 {
        // SAFETY: raw ioctl with the caller's arguments.
        return unsafe { libc::syscall(libc::SYS_ioctl, fd, request, arg) as c_int };
    }
    // SAFETY: `f` is libc's ioctl; its third argument travels as a named one (module docs).
    unsafe {
        std::mem::transmute::<usize, unsafe extern "C" fn(c_int, c_ulong, *mut c_void) -> c_int>(f)(
            fd, request, arg,
        )
    }
}

/// `read(2)`.
///
/// # Safety
/// As libc's.
#[no_mangle]
pub unsafe extern "C" fn read(fd: c_int, buf: *mut c_void, count: usize) -> isize {
    if is_ours(fd) {
        let r = catch_unwind(|| server().read(fd, buf as u64, count).map(|n| n as isize));
        return errno_result(r, -1);
    }
    let f = READ.get();
    if f == 0 {
        // SAFETY: raw read with the caller's arguments.
        return unsafe { libc::syscall(libc::SYS_read, fd, buf, count) as isize };
    }
    // SAFETY: `f` is libc's read.
    unsafe {
        std::mem::transmute::<usize, unsafe extern "C" fn(c_int, *mut c_void, usize) -> isize>(f)(
            fd, buf, count,
        )
    }
}

/// `write(2)`.
///
/// # Safety
/// As libc's.
#[no_mangle]
pub unsafe extern "C" fn write(fd: c_int, buf: *const c_void, count: usize) -> isize {
    if is_ours(fd) {
        let r = catch_unwind(|| server().write(fd, buf as u64, count).map(|n| n as isize));
        return errno_result(r, -1);
    }
    let f = WRITE.get();
    if f == 0 {
        // SAFETY: raw write with the caller's arguments.
        return unsafe { libc::syscall(libc::SYS_write, fd, buf, count) as isize };
    }
    // SAFETY: `f` is libc's write.
    unsafe {
        std::mem::transmute::<usize, unsafe extern "C" fn(c_int, *const c_void, usize) -> isize>(f)(
            fd, buf, count,
        )
    }
}

type MmapFn = unsafe extern "C" fn(*mut c_void, usize, c_int, c_int, c_int, c_long) -> *mut c_void;

fn call_mmap(
    next: &Next,
    addr: *mut c_void,
    len: usize,
    prot: c_int,
    flags: c_int,
    fd: c_int,
    off: c_long,
) -> *mut c_void {
    if is_ours(fd) {
        let r = catch_unwind(|| {
            server()
                .mmap(fd, len, prot, flags, off)
                .map(|a| a as *mut c_void)
        });
        return errno_result(r, libc::MAP_FAILED);
    }
    let f = next.get();
    if f == 0 {
        // SAFETY: raw mmap with the caller's arguments.
        return unsafe {
            libc::syscall(libc::SYS_mmap, addr, len, prot, flags, fd, off) as *mut c_void
        };
    }
    // SAFETY: `f` is libc's mmap.
    unsafe { std::mem::transmute::<usize, MmapFn>(f)(addr, len, prot, flags, fd, off) }
}

/// `mmap(2)`: a served descriptor maps a UAR page of the model.
///
/// # Safety
/// As libc's.
#[no_mangle]
pub unsafe extern "C" fn mmap(
    addr: *mut c_void,
    len: usize,
    prot: c_int,
    flags: c_int,
    fd: c_int,
    off: c_long,
) -> *mut c_void {
    call_mmap(&MMAP, addr, len, prot, flags, fd, off)
}

/// `mmap64`.
///
/// # Safety
/// As libc's.
#[no_mangle]
pub unsafe extern "C" fn mmap64(
    addr: *mut c_void,
    len: usize,
    prot: c_int,
    flags: c_int,
    fd: c_int,
    off: c_long,
) -> *mut c_void {
    call_mmap(&MMAP64, addr, len, prot, flags, fd, off)
}

/// `munmap(2)`: served UAR pages are let go by the server; memory registered with the device
/// stays mapped until its registration goes (as pinned pages do).
///
/// # Safety
/// As libc's.
#[no_mangle]
pub unsafe extern "C" fn munmap(addr: *mut c_void, len: usize) -> c_int {
    if let Some(s) = mlx5_sim_uverbs::server::try_server() {
        let r = catch_unwind(AssertUnwindSafe(|| s.munmap(addr as usize, len)));
        match r {
            Ok(Some(Ok(()))) => return 0,
            Ok(Some(Err(e))) => {
                set_errno(e as c_int);
                return -1;
            }
            Ok(None) => {}
            Err(_) => {
                set_errno(libc::EIO);
                return -1;
            }
        }
    }
    let f = MUNMAP.get();
    if f == 0 {
        // SAFETY: raw munmap with the caller's arguments.
        return unsafe { libc::syscall(libc::SYS_munmap, addr, len) as c_int };
    }
    // SAFETY: `f` is libc's munmap.
    unsafe {
        std::mem::transmute::<usize, unsafe extern "C" fn(*mut c_void, usize) -> c_int>(f)(
            addr, len,
        )
    }
}
