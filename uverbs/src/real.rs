//! The server's own system calls, made as raw syscalls so they never pass through the
//! interposed libc functions (which would hand a uverbs path straight back to the server).

use std::ffi::c_char;

/// `openat(AT_FDCWD, path, flags, mode)`.
///
/// # Safety
/// `path` must be a valid C string.
pub unsafe fn open(path: *const c_char, flags: i32, mode: u32) -> i32 {
    // SAFETY: per this function's contract; the kernel validates the rest.
    unsafe { libc::syscall(libc::SYS_openat, libc::AT_FDCWD, path, flags, mode) as i32 }
}

/// `close(fd)`.
///
/// # Safety
/// `fd` must be a descriptor the caller owns.
pub unsafe fn close(fd: i32) -> i32 {
    // SAFETY: per this function's contract.
    unsafe { libc::syscall(libc::SYS_close, fd) as i32 }
}

/// `munmap(addr, len)`.
///
/// # Safety
/// Nothing may use the range afterwards.
pub unsafe fn munmap(addr: *mut libc::c_void, len: usize) -> i32 {
    // SAFETY: per this function's contract.
    unsafe { libc::syscall(libc::SYS_munmap, addr, len) as i32 }
}
