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

/// `read(fd, buf, len)`.
///
/// # Safety
/// `buf` must be writable for `len` bytes.
pub unsafe fn read(fd: i32, buf: *mut libc::c_void, len: usize) -> isize {
    // SAFETY: per this function's contract.
    unsafe { libc::syscall(libc::SYS_read, fd, buf, len) as isize }
}

/// `write(fd, buf, len)`.
///
/// # Safety
/// `buf` must be readable for `len` bytes.
pub unsafe fn write(fd: i32, buf: *const libc::c_void, len: usize) -> isize {
    // SAFETY: per this function's contract.
    unsafe { libc::syscall(libc::SYS_write, fd, buf, len) as isize }
}

/// `fcntl(fd, cmd, arg)` for the integer commands (`F_GETFL`, `F_SETFL`).
pub fn fcntl(fd: i32, cmd: i32, arg: i64) -> i32 {
    // SAFETY: F_GETFL / F_SETFL take an integer argument and touch no memory.
    unsafe { libc::syscall(libc::SYS_fcntl, fd, cmd, arg) as i32 }
}
