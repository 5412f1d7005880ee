//! The model's view of memory: UMEM registrations, checked DMA, and UAR pages.
//!
//! Every byte the model reads from or writes to driver memory goes through [`Dma`], which
//! holds a range that was checked against a live UMEM registration. The registration cannot
//! go away while an object refers to it (deregistration of a referenced UMEM is refused), and
//! the driver promised, in the `unsafe` contract of `Devx::umem_reg`, that the memory stays
//! mapped until it is deregistered. That promise is what the `unsafe` blocks here rest on:
//! they are the model's equivalent of a device's DMA engine.

use std::collections::HashMap;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;

use mlx5_dpa::devx::UmemAccess;

use crate::check::{self, Check};
use crate::slab::Slab;

/// A registered UMEM.
#[derive(Debug)]
pub(crate) struct Umem {
    pub(crate) uid: u16,
    addr: usize,
    pub(crate) len: usize,
    pub(crate) access: UmemAccess,
    pub(crate) refs: u32,
}

/// Host writes of at most this many bytes store each byte exactly once (see [`Dma::write`]).
const SCALAR_MAX: usize = 16;

/// A checked, DMA-able host range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Dma {
    addr: usize,
    len: usize,
    /// The range is DPA process memory (a DUMEM), which DPA harts access with atomic
    /// operations from other threads: copies go byte by byte with relaxed atomics, so that
    /// every access to that memory is atomic (the contract of `riscv::RamRegion::new`).
    atomic: bool,
}

impl Dma {
    /// A sub-range, or `None` when it does not fit.
    pub(crate) fn sub(&self, offset: usize, len: usize) -> Option<Dma> {
        let end = offset.checked_add(len)?;
        (end <= self.len).then(|| Dma {
            addr: self.addr + offset,
            len,
            atomic: self.atomic,
        })
    }

    /// Copies `buf.len()` bytes from `offset`; `false` (and nothing read) when out of range.
    #[inline]
    pub(crate) fn read(&self, offset: usize, buf: &mut [u8]) -> bool {
        match offset.checked_add(buf.len()) {
            Some(end) if end <= self.len && self.atomic => {
                // SAFETY: inside the checked range of DPA memory (kept mapped by its DUMEM
                // registration, see `from_raw`).
                unsafe { atomic_read(self.addr + offset, buf) };
                true
            }
            Some(end) if end <= self.len => {
                // SAFETY: `addr..addr+len` lies inside a live UMEM registration (checked when
                // the Dma was made; the registration is pinned by the object holding it), and
                // the bounds were checked just above. The driver may write the same memory
                // concurrently, as it may while a real device DMAs; the bytes are copied, never
                // referenced.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        (self.addr + offset) as *const u8,
                        buf.as_mut_ptr(),
                        buf.len(),
                    );
                }
                true
            }
            _ => false,
        }
    }

    /// Copies `data` to `offset`; `false` (and nothing written) when out of range.
    #[inline]
    pub(crate) fn write(&self, offset: usize, data: &[u8]) -> bool {
        match offset.checked_add(data.len()) {
            Some(end) if end <= self.len && self.atomic => {
                // SAFETY: as in `read`.
                unsafe { atomic_write(self.addr + offset, data) };
                true
            }
            Some(end) if end <= self.len && data.len() <= SCALAR_MAX => {
                // Small writes (counters, records, event values the host also writes) store
                // every byte exactly once, as one DMA write does. `copy_nonoverlapping` does
                // not: the C library copies 8 to 15 bytes with two overlapping 8-byte stores
                // (both at the same address for 8), and a thread preempted between them stores
                // the value again later, over whatever the host wrote meanwhile. A DPA kernel
                // setting a sync event did that to the next event given the same slot
                // (`tests/dpa/doca_dpa_v26.rs::external_pointers_take_an_offset`, about once in
                // ten thousand runs under load).
                let p = self.addr + offset;
                // SAFETY: as in `read`: a checked range of a live registration that the driver
                // handed to the device for DMA; each pointer below is inside it and, for the
                // wider stores, aligned to its size (checked).
                unsafe {
                    match (data.len(), p % data.len().max(1)) {
                        (8, 0) => std::ptr::write_volatile(
                            p as *mut u64,
                            u64::from_ne_bytes(data.try_into().unwrap_or_default()),
                        ),
                        (4, 0) => std::ptr::write_volatile(
                            p as *mut u32,
                            u32::from_ne_bytes(data.try_into().unwrap_or_default()),
                        ),
                        (2, 0) => std::ptr::write_volatile(
                            p as *mut u16,
                            u16::from_ne_bytes(data.try_into().unwrap_or_default()),
                        ),
                        _ => {
                            for (i, b) in data.iter().enumerate() {
                                std::ptr::write_volatile((p + i) as *mut u8, *b);
                            }
                        }
                    }
                }
                true
            }
            Some(end) if end <= self.len => {
                // SAFETY: as in `read`: a checked range of a live registration that the driver
                // handed to the device for DMA. Bulk data: a byte the copy stores twice (with
                // the same value) is one the host does not write while the device owns it.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        data.as_ptr(),
                        (self.addr + offset) as *mut u8,
                        data.len(),
                    );
                }
                true
            }
            _ => false,
        }
    }

    /// Hands over a 64-byte entry whose last byte says who owns it (a CQE's `op_own`): stores
    /// `words` (native-endian, memory order) from `offset`, the last byte after the others
    /// behind a release fence, so that a reader that sees the new last byte sees the rest.
    /// Each word is read and stored whole, never through wider loads (see
    /// `mlx5_dpa::mlx5::wire::cqe::CqeWords`); the last word's other bytes as a 4-, a 2- and a
    /// 1-byte store. One range check for all of it; `false` (and nothing written) when out of
    /// range.
    #[inline]
    pub(crate) fn publish64(&self, offset: usize, words: &[u64; 8]) -> bool {
        match offset.checked_add(64) {
            Some(end) if end <= self.len => {}
            _ => return false,
        }
        let p = self.addr + offset;
        let last = words[7].to_ne_bytes();
        if self.atomic || !p.is_multiple_of(8) {
            let mut body = [0u8; 63];
            for (c, w) in body.chunks_mut(8).zip(words) {
                c.copy_from_slice(&w.to_ne_bytes()[..c.len()]);
            }
            // SAFETY: inside the checked range of DPA memory or of a live registration;
            // `atomic_write` stores bytes and aligned words atomically, in address order.
            unsafe { atomic_write(p, &body) };
            std::sync::atomic::fence(Ordering::Release);
            // SAFETY: as above.
            unsafe { atomic_write(p + 63, &last[7..]) };
            return true;
        }
        // SAFETY: inside the checked range of a live registration (as in `read`), and 8-byte
        // aligned (checked), so each pointer below is aligned to its store's size. Volatile, so
        // that each store stays one of its own and the last byte is stored after the others.
        unsafe {
            for (k, w) in words[..7].iter().enumerate() {
                std::ptr::write_volatile((p + 8 * k) as *mut u64, *w);
            }
            let tail = p + 56;
            std::ptr::write_volatile(
                tail as *mut u32,
                u32::from_ne_bytes([last[0], last[1], last[2], last[3]]),
            );
            std::ptr::write_volatile(
                (tail + 4) as *mut u16,
                u16::from_ne_bytes([last[4], last[5]]),
            );
            std::ptr::write_volatile((tail + 6) as *mut u8, last[6]);
            std::sync::atomic::fence(Ordering::Release);
            std::ptr::write_volatile((tail + 7) as *mut u8, last[7]);
        }
        true
    }

    /// Reads a big-endian u32 (a doorbell record) with one volatile load; 0 when out of range.
    pub(crate) fn read_be32(&self, offset: usize) -> Option<u32> {
        if offset.checked_add(4)? > self.len || !(self.addr + offset).is_multiple_of(4) {
            return None;
        }
        let v = if self.atomic {
            // SAFETY: in range and 4-byte aligned (checked above); DPA memory is accessed
            // atomically by everyone.
            unsafe { AtomicU32::from_ptr((self.addr + offset) as *mut u32) }.load(Ordering::Acquire)
        } else {
            // SAFETY: in range of a live registration (checked above) and 4-byte aligned; a
            // volatile load, since the driver updates doorbell records concurrently.
            unsafe { std::ptr::read_volatile((self.addr + offset) as *const u32) }
        };
        Some(u32::from_be(v))
    }
}

/// Copies `buf.len()` bytes from host address `addr` with relaxed atomic loads: single bytes
/// up to an 8-byte boundary, then aligned 8-byte words, then single bytes (a WQE or a frame
/// is eight loads, not 64).
///
/// # Safety
/// `addr .. addr + buf.len()` is memory valid for atomic access for the whole call (DPA
/// process memory, which every thread accesses atomically).
#[inline(never)]
unsafe fn atomic_read(addr: usize, buf: &mut [u8]) {
    let lead = addr.next_multiple_of(8).saturating_sub(addr).min(buf.len());
    let (head, rest) = buf.split_at_mut(lead);
    let words = rest.len() / 8 * 8;
    let (body, tail) = rest.split_at_mut(words);
    for (i, b) in head.iter_mut().enumerate() {
        // SAFETY: inside the range (caller); byte atomics need no alignment.
        *b = unsafe { AtomicU8::from_ptr((addr + i) as *mut u8) }.load(Ordering::Relaxed);
    }
    for (k, w) in body.chunks_exact_mut(8).enumerate() {
        // SAFETY: inside the range (caller), and 8-aligned: `addr + lead` is.
        let v = unsafe { AtomicU64::from_ptr((addr + lead + 8 * k) as *mut u64) }
            .load(Ordering::Relaxed);
        w.copy_from_slice(&v.to_ne_bytes());
    }
    for (i, b) in tail.iter_mut().enumerate() {
        // SAFETY: inside the range (caller).
        *b = unsafe { AtomicU8::from_ptr((addr + lead + words + i) as *mut u8) }
            .load(Ordering::Relaxed);
    }
}

/// Copies `data` to host address `addr` with relaxed atomic stores, as [`atomic_read`] reads
/// (each byte stored once, in address order of bytes and words).
///
/// # Safety
/// As for [`atomic_read`].
#[inline(never)]
unsafe fn atomic_write(addr: usize, data: &[u8]) {
    let lead = addr
        .next_multiple_of(8)
        .saturating_sub(addr)
        .min(data.len());
    let (head, rest) = data.split_at(lead);
    let words = rest.len() / 8 * 8;
    let (body, tail) = rest.split_at(words);
    for (i, b) in head.iter().enumerate() {
        // SAFETY: inside the range (caller); byte atomics need no alignment.
        unsafe { AtomicU8::from_ptr((addr + i) as *mut u8) }.store(*b, Ordering::Relaxed);
    }
    for (k, w) in body.chunks_exact(8).enumerate() {
        let v = u64::from_ne_bytes(w.try_into().unwrap_or_default());
        // SAFETY: inside the range (caller), and 8-aligned: `addr + lead` is.
        unsafe { AtomicU64::from_ptr((addr + lead + 8 * k) as *mut u64) }
            .store(v, Ordering::Relaxed);
    }
    for (i, b) in tail.iter().enumerate() {
        // SAFETY: inside the range (caller).
        unsafe { AtomicU8::from_ptr((addr + lead + words + i) as *mut u8) }
            .store(*b, Ordering::Relaxed);
    }
}

/// What keeps a DUMEM's memory mapped, and how much of it is allocated.
pub(crate) trait DumemBacking: Send + Sync {
    /// Bytes from the start that the process has allocated (data, heap, DPA_MEM blocks):
    /// ranges past it are refused.
    fn allocated(&self) -> u64;
}

/// The memory of a DPA process, reachable by queues as a DUMEM (docs/sources.md §3: `cq_umem_id` =
/// the process's DUMEM id). Registered by firmware when the process is created.
pub(crate) struct Dumem {
    uid: u16,
    /// Contexts of other functions reaching it through a DUMEM alias they hold (one entry
    /// per alias).
    sharers: Vec<u16>,
    addr: usize,
    len: usize,
    refs: u32,
    /// Keeps the memory mapped while the registration exists.
    backing: Arc<dyn DumemBacking>,
}

impl std::fmt::Debug for Dumem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dumem")
            .field("uid", &self.uid)
            .field("len", &self.len)
            .field("refs", &self.refs)
            .finish_non_exhaustive()
    }
}

/// UMEM registrations (and the DUMEMs of DPA processes, by their own id space, and the
/// aliases other functions name a DUMEM by).
#[derive(Debug)]
pub(crate) struct MemModel {
    umems: Slab<Umem>,
    dumems: HashMap<u32, Dumem>,
    /// DUMEM alias object id -> (the alias holder's uid, the DUMEM).
    dumem_aliases: HashMap<u32, (u16, u32)>,
}

/// First UMEM id: above every general object id (the general-object table holds at most
/// 2^20), so an alias object's id, used as a UMEM id, never names a registration.
const UMEM_ID_BASE: u32 = 0x40_0000;

impl MemModel {
    pub(crate) fn new() -> Self {
        MemModel {
            umems: Slab::new(UMEM_ID_BASE, 1 << 20),
            dumems: HashMap::new(),
            dumem_aliases: HashMap::new(),
        }
    }

    /// Records DUMEM alias `alias` (a general object of context `uid`) for DUMEM `target`:
    /// `uid` may then name the DUMEM by the alias's id.
    pub(crate) fn add_dumem_alias(
        &mut self,
        alias: u32,
        uid: u16,
        target: u32,
    ) -> Result<(), Check> {
        let d = self.dumems.get_mut(&target).ok_or(check::NO_SUCH_UMEM)?;
        d.sharers.push(uid);
        self.dumem_aliases.insert(alias, (uid, target));
        Ok(())
    }

    /// Forgets DUMEM alias `alias`.
    pub(crate) fn remove_dumem_alias(&mut self, alias: u32) {
        if let Some((uid, target)) = self.dumem_aliases.remove(&alias) {
            if let Some(d) = self.dumems.get_mut(&target) {
                if let Some(i) = d.sharers.iter().position(|u| *u == uid) {
                    d.sharers.swap_remove(i);
                }
            }
        }
    }

    /// The registration `id` names for context `uid`: a DUMEM alias of `uid` names its DUMEM;
    /// anything else names itself. Objects keep the resolved id, so their references outlive
    /// the alias.
    pub(crate) fn resolve(&self, uid: u16, id: u32) -> u32 {
        match self.dumem_aliases.get(&id) {
            Some(&(holder, target)) if holder == uid => target,
            _ => id,
        }
    }

    /// Registers a DPA process's memory as DUMEM `id`.
    ///
    /// # Safety
    /// `addr .. addr + len` must be memory that `backing` keeps allocated, and every access to
    /// it other than through the returned ranges must be atomic (DPA harts use atomics).
    pub(crate) unsafe fn register_dumem(
        &mut self,
        id: u32,
        uid: u16,
        addr: usize,
        len: usize,
        backing: Arc<dyn DumemBacking>,
    ) {
        self.dumems.insert(
            id,
            Dumem {
                uid,
                sharers: Vec::new(),
                addr,
                len,
                refs: 0,
                backing,
            },
        );
    }

    /// References objects hold on DUMEM `id` (rings and doorbell records in DPA memory,
    /// mkeys over it).
    pub(crate) fn dumem_refs(&self, id: u32) -> u32 {
        self.dumems.get(&id).map_or(0, |d| d.refs)
    }

    /// References on DUMEM `id`, or `None` when there is no such DUMEM.
    pub(crate) fn dumem_refs_of(&self, id: u32) -> Option<u32> {
        self.dumems.get(&id).map(|d| d.refs)
    }

    /// Removes DUMEM `id`; refused while an object refers to it.
    pub(crate) fn unregister_dumem(&mut self, id: u32) -> Result<(), Check> {
        if self.dumem_refs(id) != 0 {
            return Err(check::OBJECT_IN_USE);
        }
        self.dumems.remove(&id);
        Ok(())
    }

    /// Registers host memory. The caller (the DevX layer) carries the driver's promise.
    pub(crate) fn register(
        &mut self,
        uid: u16,
        addr: usize,
        len: usize,
        access: UmemAccess,
    ) -> Option<u32> {
        self.umems.insert(Umem {
            uid,
            addr,
            len,
            access,
            refs: 0,
        })
    }

    /// Whether context `uid` still has a UMEM registered.
    pub(crate) fn has_umems_of(&self, uid: u16) -> bool {
        self.umems.iter().any(|(_, u)| u.uid == uid)
    }

    /// Deregisters; refused while an object refers to the UMEM.
    pub(crate) fn deregister(&mut self, uid: u16, id: u32) -> Result<(), Check> {
        let u = self.umems.get(id).ok_or(check::NO_SUCH_UMEM)?;
        if u.uid != uid {
            return Err(check::WRONG_UID);
        }
        if u.refs != 0 {
            return Err(check::OBJECT_IN_USE);
        }
        self.umems.remove(id);
        Ok(())
    }

    /// Checks `offset..offset+len` of UMEM `id` for context `uid`, takes a reference, and
    /// returns the range.
    pub(crate) fn pin(&mut self, uid: u16, id: u32, offset: u64, len: u64) -> Result<Dma, Check> {
        let dma = self.range(uid, id, offset, len)?;
        self.pin_whole(id);
        Ok(dma)
    }

    /// As [`MemModel::pin`] without taking a reference.
    pub(crate) fn range(&self, uid: u16, id: u32, offset: u64, len: u64) -> Result<Dma, Check> {
        let (allowed, addr, size, atomic) = match (self.umems.get(id), self.dumems.get(&id)) {
            (Some(u), _) => (u.uid == uid, u.addr, u.len, false),
            (None, Some(d)) => (
                d.uid == uid || d.sharers.contains(&uid),
                d.addr,
                d.len
                    .min(usize::try_from(d.backing.allocated()).unwrap_or(usize::MAX)),
                true,
            ),
            (None, None) => return Err(check::NO_SUCH_UMEM),
        };
        if !allowed {
            return Err(check::WRONG_UID);
        }
        let end = offset.checked_add(len).ok_or(check::BAD_UMEM_RANGE)?;
        if len == 0 || end > size as u64 {
            return Err(check::BAD_UMEM_RANGE);
        }
        Ok(Dma {
            addr: addr + offset as usize,
            len: len as usize,
            atomic,
        })
    }

    /// The rights a UMEM was registered with; a DUMEM grants everything (FlexIO keys the
    /// whole process memory for RDMA, docs/sources.md §4).
    pub(crate) fn access(&self, id: u32) -> Option<UmemAccess> {
        match self.umems.get(id) {
            Some(u) => Some(u.access),
            None => self.dumems.get(&id).map(|_| UmemAccess::all()),
        }
    }

    /// Takes a reference on the whole registration (ranges were checked by the caller).
    pub(crate) fn pin_whole(&mut self, id: u32) {
        if let Some(u) = self.umems.get_mut(id) {
            u.refs += 1;
        } else if let Some(d) = self.dumems.get_mut(&id) {
            d.refs += 1;
        }
    }

    /// Drops a reference taken by [`MemModel::pin`].
    pub(crate) fn unpin(&mut self, id: u32) {
        if let Some(u) = self.umems.get_mut(id) {
            u.refs = u.refs.saturating_sub(1);
        } else if let Some(d) = self.dumems.get_mut(&id) {
            d.refs = d.refs.saturating_sub(1);
        }
    }

    pub(crate) fn live(&self) -> usize {
        self.umems.len()
    }
}

/// Size of a UAR page.
pub(crate) const UAR_PAGE_SIZE: usize = 4096;

/// A UAR page: real memory the driver maps and writes doorbells into, watched by the engine.
#[derive(Debug)]
pub(crate) struct UarPage {
    pub(crate) uid: u16,
    base: NonNull<u8>,
    pub(crate) refs: u32,
}

// SAFETY: the page is owned by this struct (mapped in `new`, unmapped in `drop`); the engine
// only touches it with atomic operations, and the raw pointer has no thread affinity.
unsafe impl Send for UarPage {}

impl UarPage {
    pub(crate) fn new(uid: u16) -> Result<Self, nix::errno::Errno> {
        let len = std::num::NonZeroUsize::new(UAR_PAGE_SIZE).ok_or(nix::errno::Errno::EINVAL)?;
        // SAFETY: an anonymous private mapping creates fresh memory and aliases nothing.
        let ptr = unsafe {
            nix::sys::mman::mmap_anonymous(
                None,
                len,
                nix::sys::mman::ProtFlags::PROT_READ | nix::sys::mman::ProtFlags::PROT_WRITE,
                nix::sys::mman::MapFlags::MAP_PRIVATE,
            )?
        };
        Ok(UarPage {
            uid,
            base: ptr.cast(),
            refs: 0,
        })
    }

    pub(crate) fn base(&self) -> NonNull<u8> {
        self.base
    }

    /// Takes the value of the 64-bit register at `offset` and clears it, as a device consumes
    /// a doorbell write. `None` when nothing was written since the last take.
    pub(crate) fn take(&self, offset: usize) -> Option<[u8; 8]> {
        debug_assert!(offset.is_multiple_of(8) && offset + 8 <= UAR_PAGE_SIZE);
        if !offset.is_multiple_of(8) || offset + 8 > UAR_PAGE_SIZE {
            return None;
        }
        // SAFETY: the register lies inside the page this struct owns and is 8-byte aligned;
        // the driver writes it with single 64-bit stores, so an atomic swap sees either the
        // old or the new value in whole.
        let reg = unsafe { AtomicU64::from_ptr(self.base.as_ptr().add(offset).cast::<u64>()) };
        // Most registers of most pages were not written since the last pass: a plain load
        // says so without the locked swap (which costs tens of cycles each, five registers
        // a page, every pass). A write landing between the load and the next pass is taken
        // then.
        if reg.load(Ordering::Relaxed) == 0 {
            return None;
        }
        let v = reg.swap(0, Ordering::AcqRel);
        (v != 0).then(|| v.to_ne_bytes())
    }
}

impl Drop for UarPage {
    fn drop(&mut self) {
        // SAFETY: the mapping was made in `new` with this length and is unmapped once; the
        // DevX layer revokes the driver's access (its `Uar`) before the page is freed.
        let _ = unsafe { nix::sys::mman::munmap(self.base.cast(), UAR_PAGE_SIZE) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every write path (exactly-once, bulk, DPA memory's atomic one) writes what it is
    /// given, at every size and alignment, and nothing around it; every read path reads
    /// exactly the bytes asked for.
    #[test]
    fn host_writes_store_their_bytes_and_only_those() {
        let mut buf = vec![0xeeu8; 64];
        for atomic in [false, true] {
            let over = |buf: &mut Vec<u8>| Dma {
                addr: buf.as_mut_ptr() as usize,
                len: buf.len(),
                atomic,
            };
            for len in [0usize, 1, 2, 3, 4, 7, 8, 9, 12, 16, 17, 23, 40] {
                for at in 0usize..=9 {
                    buf.fill(0xee);
                    let data: Vec<u8> = (0..len).map(|i| i as u8 + 1).collect();
                    assert!(over(&mut buf).write(at, &data));
                    let what = format!("len {len} at {at} atomic {atomic}");
                    assert_eq!(&buf[at..at + len], &data[..], "{what}");
                    assert!(buf[..at].iter().all(|&b| b == 0xee), "before: {what}");
                    assert!(buf[at + len..].iter().all(|&b| b == 0xee), "after: {what}");
                    for (i, b) in buf.iter_mut().enumerate() {
                        *b = (i as u8).wrapping_mul(7);
                    }
                    let mut got = vec![0u8; len];
                    assert!(over(&mut buf).read(at, &mut got));
                    assert_eq!(&got[..], &buf[at..at + len], "read: {what}");
                }
            }
        }
        let dma = Dma {
            addr: buf.as_mut_ptr() as usize,
            len: buf.len(),
            atomic: false,
        };
        buf.fill(0xee);
        assert!(!dma.write(60, &[0; 8]), "out of range");
        assert_eq!(buf[60..], [0xee; 4]);
    }

    /// A published entry is its words' bytes in memory order, on host and on DPA memory, at an
    /// 8-byte aligned and an unaligned address, and nothing around it; one that does not fit is
    /// not written at all.
    #[test]
    fn a_published_entry_is_its_words_bytes() {
        let words: [u64; 8] = std::array::from_fn(|k| 0x0102_0304_0506_0708u64 * (k as u64 + 1));
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_ne_bytes()).collect();
        let mut buf = vec![0xeeu8; 96];
        // The first 8-byte aligned offset of the buffer: `pad` is aligned, `pad + 3` is not.
        let pad = (buf.as_ptr() as usize).next_multiple_of(8) - buf.as_ptr() as usize;
        for atomic in [false, true] {
            for at in [pad, pad + 3, pad + 8] {
                buf.fill(0xee);
                let dma = Dma {
                    addr: buf.as_mut_ptr() as usize,
                    len: buf.len(),
                    atomic,
                };
                assert!(dma.publish64(at, &words));
                let what = format!("at {at} (aligned from {pad}) atomic {atomic}");
                assert_eq!(&buf[at..at + 64], &bytes[..], "{what}");
                assert!(buf[..at].iter().all(|&b| b == 0xee), "before: {what}");
                assert!(buf[at + 64..].iter().all(|&b| b == 0xee), "after: {what}");
                buf.fill(0xee);
                assert!(!dma.publish64(96 - 63, &words), "out of range: {what}");
                assert!(
                    buf.iter().all(|&b| b == 0xee),
                    "written out of range: {what}"
                );
            }
        }
    }
}
