//! Plain guest RAM the engine may touch directly, without a [`Bus`](super::Bus) call per access.
//!
//! A [`RamRegion`] is a promise by a bus: "these guest addresses are ordinary memory at this host
//! address, with these permissions". The engine then reads and writes it with relaxed atomic
//! operations of the access size, so several harts on several threads may share the memory
//! without a data race in Rust's sense; AMOs are real atomic read-modify-writes.
//!
//! [`GuestRam`] is an owned, zeroed, 8-byte aligned block that hands out such regions; the bare
//! machine uses it and the DPA model may.

use std::ptr::NonNull;
use std::sync::atomic::{
    AtomicI32, AtomicI64, AtomicU16, AtomicU32, AtomicU64, AtomicU8, Ordering,
};

/// What the guest may do with a region.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Perms {
    pub read: bool,
    pub write: bool,
    pub exec: bool,
}

impl Perms {
    pub const NONE: Perms = Perms::new(false, false, false);
    pub const R: Perms = Perms::new(true, false, false);
    pub const RW: Perms = Perms::new(true, true, false);
    pub const RX: Perms = Perms::new(true, false, true);
    pub const RWX: Perms = Perms::new(true, true, true);

    pub const fn new(read: bool, write: bool, exec: bool) -> Perms {
        Perms { read, write, exec }
    }

    /// `r`, `w`, `x` or `-` for each, as in an ELF program header listing.
    pub fn describe(&self) -> String {
        let c = |b, ch| if b { ch } else { '-' };
        [c(self.read, 'r'), c(self.write, 'w'), c(self.exec, 'x')]
            .iter()
            .collect()
    }
}

/// Why a [`RamRegion`] could not be made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RegionError {
    #[error("region base {base:#x}, length {len:#x} or host pointer not 8-byte aligned")]
    Misaligned { base: u64, len: u64 },
    #[error("region at {base:#x} with length {len:#x} wraps the address space")]
    Wraps { base: u64, len: u64 },
}

/// `len` bytes of guest RAM at guest address `base`, backed by host memory at `ptr`.
///
/// Invariants (checked by [`RamRegion::new`]): `base`, `len` and `ptr` are multiples of 8 and
/// `base + len` does not wrap. Hence every naturally aligned access of 1, 2, 4 or 8 bytes at an
/// offset below `len` lies inside the region.
#[derive(Debug, Clone, Copy)]
pub struct RamRegion {
    base: u64,
    len: u64,
    ptr: NonNull<u8>,
    perms: Perms,
}

impl RamRegion {
    /// A region containing nothing (every lookup misses).
    pub(crate) const EMPTY: RamRegion = RamRegion {
        base: 0,
        len: 0,
        ptr: NonNull::dangling(),
        perms: Perms::NONE,
    };

    /// Describes host memory as guest RAM.
    ///
    /// # Safety
    ///
    /// For as long as the engine may use the region (until the end of the
    /// [`run`](super::run) call in which [`Bus::ram_region`](super::Bus::ram_region) returned it):
    /// - `ptr .. ptr + len` is allocated host memory, valid for reads and writes (whatever
    ///   `perms` says: permissions are the guest's, the engine uses atomic operations that
    ///   need writable memory), and is not freed, moved or unmapped, including by the bus's own
    ///   `load` / `store` / `fetch` methods;
    /// - no Rust reference to that memory is alive, and every other access to it, from any
    ///   thread, is an atomic operation (or happens-before / after the `run` call). Concurrent
    ///   atomic accesses of different sizes to the same bytes are what Rust's memory model calls
    ///   mixed-size races: keep harts that share memory on one thread, or accept that the
    ///   guarantee is the hardware's, not the language's.
    pub unsafe fn new(
        base: u64,
        len: u64,
        ptr: NonNull<u8>,
        perms: Perms,
    ) -> Result<RamRegion, RegionError> {
        if !base.is_multiple_of(8)
            || !len.is_multiple_of(8)
            || !(ptr.as_ptr() as usize).is_multiple_of(8)
        {
            return Err(RegionError::Misaligned { base, len });
        }
        if base.checked_add(len).is_none() {
            return Err(RegionError::Wraps { base, len });
        }
        Ok(RamRegion {
            base,
            len,
            ptr,
            perms,
        })
    }

    /// First guest address.
    pub fn base(&self) -> u64 {
        self.base
    }

    /// Length in bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the region is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Guest permissions.
    /// Guest base, length and host address, for compiled code's inline loads (`jit`).
    #[cfg(feature = "jit")]
    pub(crate) fn raw(&self) -> [u64; 3] {
        [self.base, self.len, self.ptr.as_ptr() as u64]
    }

    pub fn perms(&self) -> Perms {
        self.perms
    }

    /// Whether `addr` is inside.
    pub fn contains(&self, addr: u64) -> bool {
        addr.wrapping_sub(self.base) < self.len
    }

    /// The host pointer of a naturally aligned access of `size` bytes at `addr`, if inside.
    #[inline(always)]
    fn at(&self, addr: u64, size: u64) -> Option<*mut u8> {
        let off = addr.wrapping_sub(self.base);
        if off >= self.len || off & (size - 1) != 0 {
            return None;
        }
        // The offset is below `len`, which fits the host allocation (constructor contract), so
        // it fits a usize and the pointer stays inside the allocation.
        Some(self.ptr.as_ptr().wrapping_add(off as usize))
    }

    /// Atomic load of `size` (1, 2, 4, 8) bytes at `addr`, zero-extended; `None` when the
    /// access is outside the region or not naturally aligned.
    #[inline(always)]
    pub fn load(&self, addr: u64, size: u8) -> Option<u64> {
        let p = self.at(addr, u64::from(size))?;
        // SAFETY: `at` returned a pointer inside the region, aligned to the access size (region
        // pointer 8-aligned, offset a multiple of the size), and the access ends inside the
        // region (len is a multiple of 8). `RamRegion::new`'s contract makes the memory valid
        // for atomic reads and writes for the duration of the run, with no conflicting
        // non-atomic access.
        let v = unsafe {
            match size {
                1 => u64::from(AtomicU8::from_ptr(p).load(Ordering::Relaxed)),
                2 => u64::from(AtomicU16::from_ptr(p.cast()).load(Ordering::Relaxed)),
                4 => u64::from(AtomicU32::from_ptr(p.cast()).load(Ordering::Relaxed)),
                _ => AtomicU64::from_ptr(p.cast()).load(Ordering::Relaxed),
            }
        };
        Some(v)
    }

    /// Atomic store of the low `size` bytes of `value`; `false` when outside or misaligned.
    #[inline(always)]
    pub fn store(&self, addr: u64, size: u8, value: u64) -> bool {
        let Some(p) = self.at(addr, u64::from(size)) else {
            return false;
        };
        // SAFETY: as in `load`: in bounds, aligned, valid for atomic writes per the contract.
        unsafe {
            match size {
                1 => AtomicU8::from_ptr(p).store(value as u8, Ordering::Relaxed),
                2 => AtomicU16::from_ptr(p.cast()).store(value as u16, Ordering::Relaxed),
                4 => AtomicU32::from_ptr(p.cast()).store(value as u32, Ordering::Relaxed),
                _ => AtomicU64::from_ptr(p.cast()).store(value, Ordering::Relaxed),
            }
        }
        true
    }

    /// Atomic read-modify-write of a word (`size` 4) or doubleword (8); returns the old value
    /// zero-extended, or `None` when outside or misaligned.
    #[inline]
    pub(crate) fn amo(&self, addr: u64, size: u8, op: AmoOp, value: u64) -> Option<u64> {
        if size == 4 {
            let p = self.at(addr, 4)?.cast::<u32>();
            // SAFETY: in bounds and 4-aligned (checked by `at`), valid for atomic access per the
            // constructor contract; AtomicI32 and AtomicU32 have the same size and alignment.
            let (u, s) = unsafe { (AtomicU32::from_ptr(p), AtomicI32::from_ptr(p.cast())) };
            let v = value as u32;
            let o = Ordering::SeqCst;
            Some(u64::from(match op {
                AmoOp::Swap => u.swap(v, o),
                AmoOp::Add => u.fetch_add(v, o),
                AmoOp::Xor => u.fetch_xor(v, o),
                AmoOp::And => u.fetch_and(v, o),
                AmoOp::Or => u.fetch_or(v, o),
                AmoOp::Min => s.fetch_min(v as i32, o) as u32,
                AmoOp::Max => s.fetch_max(v as i32, o) as u32,
                AmoOp::Minu => u.fetch_min(v, o),
                AmoOp::Maxu => u.fetch_max(v, o),
                AmoOp::Cas(e) => match u.compare_exchange(e as u32, v, o, o) {
                    Ok(x) | Err(x) => x,
                },
            }))
        } else {
            let p = self.at(addr, 8)?.cast::<u64>();
            // SAFETY: as above, 8-aligned; AtomicI64 and AtomicU64 share size and alignment.
            let (u, s) = unsafe { (AtomicU64::from_ptr(p), AtomicI64::from_ptr(p.cast())) };
            let o = Ordering::SeqCst;
            Some(match op {
                AmoOp::Swap => u.swap(value, o),
                AmoOp::Add => u.fetch_add(value, o),
                AmoOp::Xor => u.fetch_xor(value, o),
                AmoOp::And => u.fetch_and(value, o),
                AmoOp::Or => u.fetch_or(value, o),
                AmoOp::Min => s.fetch_min(value as i64, o) as u64,
                AmoOp::Max => s.fetch_max(value as i64, o) as u64,
                AmoOp::Minu => u.fetch_min(value, o),
                AmoOp::Maxu => u.fetch_max(value, o),
                AmoOp::Cas(e) => match u.compare_exchange(e, value, o, o) {
                    Ok(x) | Err(x) => x,
                },
            })
        }
    }
}

/// The read-modify-write of an AMO.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AmoOp {
    Swap,
    Add,
    Xor,
    And,
    Or,
    Min,
    Max,
    Minu,
    Maxu,
    /// Compare-and-swap against this value (the store of SC, which has no AMO encoding of its
    /// own); the old value tells whether it stored.
    Cas(u64),
}

impl AmoOp {
    /// The new memory value from the old one and the register operand (same width).
    pub(crate) fn apply(self, old: u64, v: u64, size: u8) -> u64 {
        if size == 4 {
            let (a, b) = (old as u32, v as u32);
            u64::from(match self {
                AmoOp::Swap => b,
                AmoOp::Add => a.wrapping_add(b),
                AmoOp::Xor => a ^ b,
                AmoOp::And => a & b,
                AmoOp::Or => a | b,
                AmoOp::Min => (a as i32).min(b as i32) as u32,
                AmoOp::Max => (a as i32).max(b as i32) as u32,
                AmoOp::Minu => a.min(b),
                AmoOp::Maxu => a.max(b),
                AmoOp::Cas(e) => {
                    if a == e as u32 {
                        b
                    } else {
                        a
                    }
                }
            })
        } else {
            match self {
                AmoOp::Swap => v,
                AmoOp::Add => old.wrapping_add(v),
                AmoOp::Xor => old ^ v,
                AmoOp::And => old & v,
                AmoOp::Or => old | v,
                AmoOp::Min => (old as i64).min(v as i64) as u64,
                AmoOp::Max => (old as i64).max(v as i64) as u64,
                AmoOp::Minu => old.min(v),
                AmoOp::Maxu => old.max(v),
                AmoOp::Cas(e) => {
                    if old == e {
                        v
                    } else {
                        old
                    }
                }
            }
        }
    }
}

/// An owned block of zeroed guest memory, 8-byte aligned, accessed only atomically (so a
/// [`RamRegion`] over it may be handed to the engine while the owner keeps using it).
#[derive(Debug)]
pub struct GuestRam {
    words: Box<[AtomicU64]>,
    len: u64,
}

impl GuestRam {
    /// `len` zeroed bytes (rounded up to a multiple of 8).
    ///
    /// The memory comes zeroed from the allocator (`alloc_zeroed`: fresh pages for large
    /// blocks, touched only when used) instead of being written word by word, so a large
    /// block that a program barely uses (a 1 MiB stack) costs almost nothing to make.
    pub fn new(len: u64) -> GuestRam {
        let words = usize::try_from(len.div_ceil(8)).expect("guest RAM fits the address space");
        let zeroed = Box::<[AtomicU64]>::new_zeroed_slice(words);
        // SAFETY: `AtomicU64` has the size and bit validity of `u64` (its documentation), so
        // all-zero bytes are a valid `AtomicU64` (0).
        let words = unsafe { zeroed.assume_init() };
        GuestRam {
            len: words.len() as u64 * 8,
            words,
        }
    }

    /// Length in bytes (a multiple of 8).
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the block is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The whole block as a region at guest address `base`.
    ///
    /// # Safety
    ///
    /// `self` must stay alive (not dropped; the memory does not move with it) for as long as
    /// the engine may use the region: the `run` call in which the bus returned it.
    pub unsafe fn region(&self, base: u64, perms: Perms) -> Result<RamRegion, RegionError> {
        // SAFETY: the caller's promise is the one `sub_region` asks for.
        unsafe { self.sub_region(base, 0, self.len, perms) }
    }

    /// `len` bytes from offset `offset` of the block, as a region at guest address `base`.
    /// Offsets and lengths outside the block are clipped to it.
    ///
    /// # Safety
    ///
    /// As for [`GuestRam::region`].
    pub unsafe fn sub_region(
        &self,
        base: u64,
        offset: u64,
        len: u64,
        perms: Perms,
    ) -> Result<RamRegion, RegionError> {
        let offset = offset.min(self.len);
        let len = len.min(self.len - offset);
        let ptr = NonNull::from(&*self.words).cast::<u8>();
        // `offset <= self.len`, the allocation's size, so the add stays in (or one past) it.
        let ptr = ptr.as_ptr().wrapping_add(offset as usize);
        let ptr = NonNull::new(ptr).unwrap_or(NonNull::dangling());
        // SAFETY: the memory is this block's atomics (interior mutability: writes through a
        // pointer derived from a shared reference are allowed), only ever accessed atomically
        // by `GuestRam`'s own methods; its lifetime is the caller's promise above. When
        // `len` is 0 the pointer is never dereferenced.
        unsafe { RamRegion::new(base, len, ptr, perms) }
    }

    fn word(&self, off: u64) -> Option<&AtomicU64> {
        self.words.get(usize::try_from(off / 8).ok()?)
    }

    /// Reads `size` (1, 2, 4, 8) bytes at byte offset `off` (naturally aligned); `None` when
    /// out of range or misaligned.
    pub fn load(&self, off: u64, size: u8) -> Option<u64> {
        if !matches!(size, 1 | 2 | 4 | 8) || !off.is_multiple_of(u64::from(size)) {
            return None;
        }
        let w = self.word(off)?.load(Ordering::Relaxed);
        let shift = (off % 8) * 8;
        let mask = if size == 8 {
            u64::MAX
        } else {
            (1u64 << (u64::from(size) * 8)) - 1
        };
        Some((w >> shift) & mask)
    }

    /// Writes the low `size` bytes of `value` at `off` (naturally aligned); `false` when out of
    /// range or misaligned.
    pub fn store(&self, off: u64, size: u8, value: u64) -> bool {
        if !matches!(size, 1 | 2 | 4 | 8) || !off.is_multiple_of(u64::from(size)) {
            return false;
        }
        let Some(w) = self.word(off) else {
            return false;
        };
        let shift = (off % 8) * 8;
        let mask = if size == 8 {
            u64::MAX
        } else {
            ((1u64 << (u64::from(size) * 8)) - 1) << shift
        };
        let v = (value << shift) & mask;
        // One atomic RMW so a concurrent atomic store to the other bytes of the word is kept.
        let _ = w.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |old| {
            Some((old & !mask) | v)
        });
        true
    }

    /// Copies `bytes` in at offset `off`; `false` (nothing written) if it does not fit.
    /// Whole words are stored at once; the partial words at either end keep their other
    /// bytes.
    pub fn write_bytes(&self, off: u64, bytes: &[u8]) -> bool {
        let Some(end) = off.checked_add(bytes.len() as u64) else {
            return false;
        };
        if end > self.len {
            return false;
        }
        let mut at = off;
        let mut rest = bytes;
        while !rest.is_empty() {
            if at.is_multiple_of(8) && rest.len() >= 8 {
                let (w, r) = rest.split_at(8);
                let mut word = [0u8; 8];
                word.copy_from_slice(w);
                self.store(at, 8, u64::from_le_bytes(word));
                rest = r;
                at += 8;
            } else {
                self.store(at, 1, u64::from(rest[0]));
                rest = &rest[1..];
                at += 1;
            }
        }
        true
    }

    /// Copies `len` bytes out from offset `off`; `None` if they are not all inside. Whole
    /// words are loaded at once.
    pub fn read_bytes(&self, off: u64, len: u64) -> Option<Vec<u8>> {
        let end = off.checked_add(len)?;
        if end > self.len {
            return None;
        }
        let mut out = Vec::with_capacity(usize::try_from(len).ok()?);
        let mut at = off;
        while at < end {
            if at.is_multiple_of(8) && end - at >= 8 {
                out.extend_from_slice(&self.load(at, 8)?.to_le_bytes());
                at += 8;
            } else {
                out.push(self.load(at, 1)? as u8);
                at += 1;
            }
        }
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bulk copies by whole words agree with byte-by-byte access at every alignment, and leave
    /// the bytes around the range alone.
    #[test]
    fn bulk_copies_match_byte_access_at_every_alignment() {
        for off in 0..16u64 {
            for len in 0..40u64 {
                let ram = GuestRam::new(64);
                for a in 0..64 {
                    ram.store(a, 1, 0xee);
                }
                let data: Vec<u8> = (0..len)
                    .map(|i| (i as u8).wrapping_mul(37) ^ 0x5a)
                    .collect();
                assert!(ram.write_bytes(off, &data));
                for a in 0..64 {
                    let want = if (off..off + len).contains(&a) {
                        data[(a - off) as usize]
                    } else {
                        0xee
                    };
                    assert_eq!(
                        ram.load(a, 1),
                        Some(u64::from(want)),
                        "off {off} len {len} at {a}"
                    );
                }
                assert_eq!(ram.read_bytes(off, len), Some(data));
            }
        }
        let ram = GuestRam::new(16);
        assert!(!ram.write_bytes(10, &[0; 7]));
        assert_eq!(ram.read_bytes(10, 7), None);
        assert_eq!(ram.read_bytes(u64::MAX, 2), None);
    }
}
