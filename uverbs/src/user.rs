//! The client's memory as the kernel sees it: addresses that may be anything.
//!
//! The kernel reads and writes user memory with `copy_from_user` / `copy_to_user`, which fail
//! with `EFAULT` on an address that is not mapped instead of crashing. The server lives in the
//! client's own process, so a plain load from a bad address would crash the client: it copies
//! with `process_vm_readv` / `process_vm_writev` on its own process, which the kernel checks the
//! same way (`EFAULT`). Memory the device is given (rings, MRs, doorbell records) is checked to be
//! mapped with `mincore` before it is registered, as the kernel's `ib_umem_get` pins it (a range
//! with a hole fails with `EFAULT`).

use std::collections::BTreeMap;
use std::sync::Mutex;

use mlx5_dpa::sync::lock;
use nix::errno::Errno;

/// Largest single copy the server makes on a client's behalf (an ioctl attribute is at most
/// 64 KiB; a write command at most 256 KiB): anything larger is refused before memory is taken.
pub const MAX_COPY: usize = 1 << 20;

/// The only client memory the server may touch, when set (`test-utils`: the fuzz harness runs
/// the server in its own process, where a random pointer could name live memory of the
/// harness; confined, such a pointer is `EFAULT` like an unmapped one).
#[cfg(feature = "test-utils")]
static CONFINED: Mutex<Option<(usize, usize)>> = Mutex::new(None);

/// Confines the server's access to client memory to `start .. start + len` (`test-utils`).
#[cfg(feature = "test-utils")]
pub fn confine(start: usize, len: usize) {
    *lock(&CONFINED) = Some((start, len));
}

/// `EFAULT` for a range outside the confinement, if any.
#[cfg(feature = "test-utils")]
fn within(addr: usize, len: usize) -> Result<(), Errno> {
    match *lock(&CONFINED) {
        Some((s, l)) if addr < s || addr.saturating_add(len) > s + l => Err(Errno::EFAULT),
        _ => Ok(()),
    }
}

#[cfg(not(feature = "test-utils"))]
fn within(_addr: usize, _len: usize) -> Result<(), Errno> {
    Ok(())
}

fn iov(addr: u64, len: usize) -> Result<libc::iovec, Errno> {
    let base = usize::try_from(addr).map_err(|_| Errno::EFAULT)?;
    base.checked_add(len).ok_or(Errno::EFAULT)?;
    within(base, len)?;
    Ok(libc::iovec {
        iov_base: base as *mut libc::c_void,
        iov_len: len,
    })
}

/// Copies `len` bytes from the client's address `addr`.
///
/// # Errors
/// `EFAULT` when any byte is not readable; `E2BIG` past [`MAX_COPY`].
pub fn read(addr: u64, len: usize) -> Result<Vec<u8>, Errno> {
    if len == 0 {
        return Ok(Vec::new());
    }
    if len > MAX_COPY {
        return Err(Errno::E2BIG);
    }
    let mut buf = vec![0u8; len];
    let remote = iov(addr, len)?;
    let local = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: len,
    };
    // SAFETY: `local` is this function's own buffer of `len` bytes; `remote` is only read by the
    // kernel, which checks it against this process's mappings (a bad address is EFAULT).
    let n = unsafe { libc::process_vm_readv(libc::getpid(), &local, 1, &remote, 1, 0) };
    if n < 0 {
        return Err(Errno::last());
    }
    if n as usize != len {
        return Err(Errno::EFAULT);
    }
    Ok(buf)
}

/// Copies `data` to the client's address `addr`.
///
/// # Errors
/// `EFAULT` when any byte is not writable.
pub fn write(addr: u64, data: &[u8]) -> Result<(), Errno> {
    if data.is_empty() {
        return Ok(());
    }
    if data.len() > MAX_COPY {
        return Err(Errno::E2BIG);
    }
    let remote = iov(addr, data.len())?;
    let local = libc::iovec {
        iov_base: data.as_ptr() as *mut libc::c_void,
        iov_len: data.len(),
    };
    // SAFETY: the kernel only reads `local` (this function's slice) and writes `remote` after
    // checking it against this process's writable mappings (a bad address is EFAULT).
    let n = unsafe { libc::process_vm_writev(libc::getpid(), &local, 1, &remote, 1, 0) };
    if n < 0 {
        return Err(Errno::last());
    }
    if n as usize != data.len() {
        return Err(Errno::EFAULT);
    }
    Ok(())
}

/// Reads a `T` at `addr` (a struct of the ABI).
///
/// # Errors
/// As [`read`].
pub fn read_struct<T: zerocopy::FromBytes>(addr: u64) -> Result<T, Errno> {
    let b = read(addr, core::mem::size_of::<T>())?;
    T::read_from_bytes(&b).map_err(|_| Errno::EFAULT)
}

/// The page size of this machine.
pub fn page_size() -> usize {
    // SAFETY: sysconf has no memory-safety preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(p).ok().filter(|&p| p > 0).unwrap_or(4096)
}

/// Checks that every page of `addr .. addr + len` is mapped in this process (what pinning it
/// would need). Returns the page-aligned range `(start, len)` covering it.
///
/// # Errors
/// `EINVAL` for an empty or wrapping range, `EFAULT` for a hole.
pub fn mapped_range(addr: u64, len: u64) -> Result<(usize, usize), Errno> {
    let page = page_size() as u64;
    if len == 0 {
        return Err(Errno::EINVAL);
    }
    let end = addr.checked_add(len).ok_or(Errno::EINVAL)?;
    let start = addr & !(page - 1);
    let end = end.checked_add(page - 1).ok_or(Errno::EINVAL)? & !(page - 1);
    let start_u = usize::try_from(start).map_err(|_| Errno::EFAULT)?;
    let len_u = usize::try_from(end - start).map_err(|_| Errno::EFAULT)?;
    within(start_u, len_u)?;
    // One byte a page for mincore's answer; bounded because the range must be mapped memory of
    // this process (mincore fails first on anything larger than the address space in use).
    let pages = len_u / page as usize;
    if pages > (1 << 28) {
        return Err(Errno::ENOMEM);
    }
    let mut vec = vec![0u8; pages.min(1 << 16)];
    // mincore in chunks of at most 64 Ki pages, so the answer buffer stays small.
    let mut at = 0usize;
    while at < pages {
        let n = (pages - at).min(1 << 16);
        // SAFETY: mincore only reads the page tables for the given range and writes `n` bytes
        // into `vec`, which has at least that many; ENOMEM reports unmapped pages.
        let rc = unsafe {
            libc::mincore(
                (start_u + at * page as usize) as *mut libc::c_void,
                n * page as usize,
                vec.as_mut_ptr(),
            )
        };
        if rc != 0 {
            return Err(match Errno::last() {
                Errno::ENOMEM => Errno::EFAULT,
                e => e,
            });
        }
        at += n;
    }
    Ok((start_u, len_u))
}

/// Ranges of client memory the device was given (UMEMs): `munmap` of them is deferred until
/// the last registration over them goes, as pinned pages outlive their mapping on Linux.
#[derive(Debug, Default)]
struct Pins {
    /// start -> (len, registrations)
    ranges: BTreeMap<usize, (usize, u32)>,
    /// Unmaps asked for while pinned: done when nothing pins them any more.
    deferred: Vec<(usize, usize)>,
}

static PINS: Mutex<Pins> = Mutex::new(Pins {
    ranges: BTreeMap::new(),
    deferred: Vec::new(),
});

/// Registers client memory with the device: while registered, `munmap` of it is deferred.
pub(crate) fn pin(start: usize, len: usize) {
    let mut p = lock(&PINS);
    let e = p.ranges.entry(start).or_insert((len, 0));
    e.0 = e.0.max(len);
    e.1 += 1;
}

/// Drops one registration of `start`; performs the deferred unmaps nothing pins any more.
pub(crate) fn unpin(start: usize) {
    let due: Vec<(usize, usize)> = {
        let mut p = lock(&PINS);
        if let Some(e) = p.ranges.get_mut(&start) {
            e.1 -= 1;
            if e.1 == 0 {
                p.ranges.remove(&start);
            }
        }
        let Pins { ranges, deferred } = &mut *p;
        let mut due = Vec::new();
        deferred.retain(|&(a, l)| {
            let pinned = ranges.iter().any(|(&s, &(rl, _))| s < a + l && a < s + rl);
            if !pinned {
                due.push((a, l));
            }
            pinned
        });
        due
    };
    for (a, l) in due {
        // SAFETY: a range the client asked to unmap earlier, kept mapped only for the device;
        // no registration covers it any more.
        unsafe { crate::real::munmap(a as *mut libc::c_void, l) };
    }
}

/// `munmap(addr, len)` where pinned memory is concerned: the pinned parts stay mapped (until
/// their registration goes), the rest is unmapped now. `None` when nothing of the range is
/// pinned (the caller unmaps it as usual).
pub(crate) fn unmap_unpinned(addr: usize, len: usize) -> Option<Result<(), Errno>> {
    let end = addr.checked_add(len)?;
    let mut p = lock(&PINS);
    let overlaps: Vec<(usize, usize)> = p
        .ranges
        .iter()
        .filter(|(&s, &(l, _))| s < end && addr < s + l)
        .map(|(&s, &(l, _))| (s, l))
        .collect();
    if overlaps.is_empty() {
        return None;
    }
    let mut cuts: Vec<(usize, usize)> = vec![(addr, end)];
    for (s, l) in overlaps {
        let pe = s + l;
        cuts = cuts
            .into_iter()
            .flat_map(|(a, b)| {
                let mut out = Vec::new();
                if a < s.min(b) {
                    out.push((a, s.min(b)));
                }
                if pe.max(a) < b {
                    out.push((pe.max(a), b));
                }
                out
            })
            .collect();
        let (ks, ke) = (s.max(addr), pe.min(end));
        if ks < ke {
            p.deferred.push((ks, ke - ks));
        }
    }
    drop(p);
    for (a, b) in cuts {
        // SAFETY: part of a range the client asked to unmap that no registration covers.
        unsafe { crate::real::munmap(a as *mut libc::c_void, b - a) };
    }
    Some(Ok(()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_from_and_to_this_process() {
        let src = [1u8, 2, 3, 4, 5];
        assert_eq!(read(src.as_ptr() as u64, 5).unwrap(), src);
        let mut dst = [0u8; 3];
        write(dst.as_mut_ptr() as u64, &[9, 8, 7]).unwrap();
        assert_eq!(dst, [9, 8, 7]);
    }

    #[test]
    fn bad_addresses_are_efault_not_a_crash() {
        assert_eq!(read(8, 16), Err(Errno::EFAULT));
        assert_eq!(write(8, &[1]), Err(Errno::EFAULT));
        assert_eq!(read(u64::MAX - 3, 16), Err(Errno::EFAULT));
        // Read-only memory cannot be written.
        static RO: [u8; 4] = [0; 4];
        assert_eq!(write(RO.as_ptr() as u64, &[1]), Err(Errno::EFAULT));
        assert_eq!(read(0, MAX_COPY + 1), Err(Errno::E2BIG));
    }

    #[test]
    fn holes_are_found() {
        let v = vec![0u8; 3 * 4096];
        let (s, l) = mapped_range(v.as_ptr() as u64 + 10, 5000).unwrap();
        assert_eq!(s % page_size(), 0);
        assert!(l >= 5000);
        assert_eq!(mapped_range(4096, 4096), Err(Errno::EFAULT));
        assert_eq!(mapped_range(v.as_ptr() as u64, 0), Err(Errno::EINVAL));
        assert_eq!(mapped_range(u64::MAX - 10, 100), Err(Errno::EINVAL));
    }
}
