//! The model's view of memory: UMEM registrations, checked DMA, and UAR pages.
//!
//! Every byte the model reads from or writes to driver memory goes through [`Dma`], which
//! holds a range that was checked against a live UMEM registration. The registration cannot
//! go away while an object refers to it (deregistration of a referenced UMEM is refused), and
//! the driver promised, in the `unsafe` contract of `Devx::umem_reg`, that the memory stays
//! mapped until it is deregistered. That promise is what the `unsafe` blocks here rest on:
//! they are the model's equivalent of a device's DMA engine.

use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};

use mlx5_dpa::devx::UmemAccess;

use crate::fw::check::{self, Check};
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

/// A checked, DMA-able host range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Dma {
    addr: usize,
    len: usize,
}

impl Dma {
    /// A sub-range, or `None` when it does not fit.
    pub(crate) fn sub(&self, offset: usize, len: usize) -> Option<Dma> {
        let end = offset.checked_add(len)?;
        (end <= self.len).then(|| Dma {
            addr: self.addr + offset,
            len,
        })
    }

    /// Copies `buf.len()` bytes from `offset`; `false` (and nothing read) when out of range.
    pub(crate) fn read(&self, offset: usize, buf: &mut [u8]) -> bool {
        match offset.checked_add(buf.len()) {
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
    pub(crate) fn write(&self, offset: usize, data: &[u8]) -> bool {
        match offset.checked_add(data.len()) {
            Some(end) if end <= self.len => {
                // SAFETY: as in `read`: a checked range of a live registration that the driver
                // handed to the device for DMA.
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

    /// Reads a big-endian u32 (a doorbell record) with one volatile load; 0 when out of range.
    pub(crate) fn read_be32(&self, offset: usize) -> Option<u32> {
        if offset.checked_add(4)? > self.len || !(self.addr + offset).is_multiple_of(4) {
            return None;
        }
        // SAFETY: in range of a live registration (checked above) and 4-byte aligned; a
        // volatile load, since the driver updates doorbell records concurrently.
        let v = unsafe { std::ptr::read_volatile((self.addr + offset) as *const u32) };
        Some(u32::from_be(v))
    }
}

/// UMEM registrations.
#[derive(Debug)]
pub(crate) struct MemModel {
    umems: Slab<Umem>,
}

impl MemModel {
    pub(crate) fn new() -> Self {
        MemModel {
            umems: Slab::new(0x100, 1 << 20),
        }
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
        if let Some(u) = self.umems.get_mut(id) {
            u.refs += 1;
        }
        Ok(dma)
    }

    /// As [`MemModel::pin`] without taking a reference.
    pub(crate) fn range(&self, uid: u16, id: u32, offset: u64, len: u64) -> Result<Dma, Check> {
        let u = self.umems.get(id).ok_or(check::NO_SUCH_UMEM)?;
        if u.uid != uid {
            return Err(check::WRONG_UID);
        }
        let end = offset.checked_add(len).ok_or(check::BAD_UMEM_RANGE)?;
        if len == 0 || end > u.len as u64 {
            return Err(check::BAD_UMEM_RANGE);
        }
        Ok(Dma {
            addr: u.addr + offset as usize,
            len: len as usize,
        })
    }

    pub(crate) fn access(&self, id: u32) -> Option<UmemAccess> {
        self.umems.get(id).map(|u| u.access)
    }

    /// Takes a reference on the whole registration (ranges were checked by the caller).
    pub(crate) fn pin_whole(&mut self, id: u32) {
        if let Some(u) = self.umems.get_mut(id) {
            u.refs += 1;
        }
    }

    /// Drops a reference taken by [`MemModel::pin`].
    pub(crate) fn unpin(&mut self, id: u32) {
        if let Some(u) = self.umems.get_mut(id) {
            u.refs = u.refs.saturating_sub(1);
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
