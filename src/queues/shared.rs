//! The memory a queue shares with the device, and the one place the queues reach it through
//! raw pointers.
//!
//! [`HostRegion`] is a queue's host memory checked once against its `QueueMemory` (length,
//! alignment) and zeroed at creation ([`host_queue`]); [`HostRing`] a power-of-two ring in it;
//! [`CqRing`] reads CQEs out of one, each [`CqeRef`] a 64-byte CQE whose loads are volatile (the
//! device writes it). Every access here stays inside the memory by construction (indices are
//! masked or checked), so the methods are safe; the `unsafe` blocks rest on the
//! `QueueMemory` contract alone. (The send and receive rings keep their base pointer in their
//! hot cursor and mask their own offsets: `wq::SendCursor`, `wq::RecvRing`.)

use std::ptr::NonNull;

use crate::mlx5::wire::cqe::{at, cqe64_offset, CQE_SIZE};

use super::ring;
use super::{MemPlace, QueueError, QueueMemory, RING_ALIGN};
use crate::uar::DoorbellRecord;

/// A queue's memory, checked and zeroed: the ring region and the doorbell record.
#[derive(Debug)]
pub(crate) struct HostQueue {
    pub(crate) ring_place: MemPlace,
    pub(crate) ring: HostRegion,
    pub(crate) dbr_place: MemPlace,
    pub(crate) dbr: DoorbellRecord,
}

/// Checks a queue memory against what the queue needs (host memory, `ring_bytes` of ring,
/// 8 of record, the alignments), zeroes both, and hands them out.
pub(crate) fn host_queue(
    mem: &dyn QueueMemory,
    what: &'static str,
    ring_bytes: usize,
) -> Result<HostQueue, QueueError> {
    let ring = mem.ring();
    let dbr = mem.doorbell_record();
    let bad = |detail: String| QueueError::Memory { what, detail };
    if ring.len < ring_bytes {
        return Err(bad(format!(
            "the ring needs {ring_bytes} bytes, the memory has {}",
            ring.len
        )));
    }
    if dbr.len < 8 {
        return Err(bad("the doorbell record needs 8 bytes".into()));
    }
    let (Some(r), Some(d)) = (ring.host, dbr.host) else {
        return Err(bad(
            "the host driver polls and posts this queue, so its ring must be host memory".into(),
        ));
    };
    if !(r.as_ptr() as usize).is_multiple_of(RING_ALIGN) || !(d.as_ptr() as usize).is_multiple_of(8)
    {
        return Err(bad("ring must be 64-byte and record 8-byte aligned".into()));
    }
    // SAFETY: `QueueMemory` promises these host ranges (checked long enough and aligned above)
    // to the one queue this memory is given to, for as long as it lives; the queue keeps it.
    let (region, record) = unsafe { (HostRegion::new(r, ring_bytes), DoorbellRecord::new(d)) };
    region.fill(0);
    record.store(0, 0);
    record.store(1, 0);
    Ok(HostQueue {
        ring_place: ring,
        ring: region,
        dbr_place: dbr,
        dbr: record,
    })
}

/// Host memory of a queue: `len` bytes at `base`, 64-byte aligned, valid for volatile reads and
/// writes while the queue holds its `QueueMemory`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct HostRegion {
    base: NonNull<u8>,
    len: usize,
}

// SAFETY: a pointer into memory the owning queue holds; only that queue uses it.
unsafe impl Send for HostRegion {}

impl HostRegion {
    /// # Safety
    /// `base..base + len` is host memory valid for volatile reads and writes, 64-byte aligned,
    /// used by nothing but one queue (and the device) while this value and its copies are.
    unsafe fn new(base: NonNull<u8>, len: usize) -> HostRegion {
        HostRegion { base, len }
    }

    /// The first byte.
    pub(crate) fn base(&self) -> NonNull<u8> {
        self.base
    }

    /// Fills the region with `byte` (volatile stores: the device may look).
    pub(crate) fn fill(&self, byte: u8) {
        for i in 0..self.len {
            // SAFETY: `i < len`, inside the region.
            unsafe { std::ptr::write_volatile(self.base.as_ptr().add(i), byte) };
        }
    }

    /// The first byte of the part at `offset` of `len` bytes; `None` past the region.
    pub(crate) fn part(&self, offset: usize, len: usize) -> Option<NonNull<u8>> {
        let end = offset.checked_add(len)?;
        // SAFETY: `offset <= end <= self.len`: inside the region or one past it.
        (end <= self.len).then(|| unsafe { NonNull::new_unchecked(self.base.as_ptr().add(offset)) })
    }

    /// The ring of `len` bytes (a power of two, at least 64) at `offset`; `None` if it does
    /// not fit the region or is not such a size.
    pub(crate) fn ring(&self, offset: usize, len: usize) -> Option<HostRing> {
        if !len.is_power_of_two() || len < 64 || !offset.is_multiple_of(64) {
            return None;
        }
        let base = self.part(offset, len)?;
        // SAFETY: inside this region (checked by `part`), 64-byte aligned.
        Some(unsafe { HostRing::new(base, len) })
    }
}

/// A ring of host memory shared with the device: `len` bytes (a power of two, at least 64) at
/// a 64-byte aligned `base`, valid for volatile reads and writes while the queue that made it
/// holds its `QueueMemory`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct HostRing {
    base: NonNull<u8>,
    /// `len - 1`: every offset is masked with it.
    mask: usize,
}

// SAFETY: a `HostRing` is a pointer into memory its queue holds; the queue's `&mut self`
// methods are its only users, so moving it with the queue moves the only accessor.
unsafe impl Send for HostRing {}

impl HostRing {
    /// The ring of `len` bytes at `base` (see [`HostRegion::ring`]).
    ///
    /// # Safety
    /// `base..base + len` is host memory valid for volatile reads and writes, 64-byte aligned,
    /// used by nothing but one queue (and the device) for as long as this value and its
    /// copies are used; `len` is a power of two of at least 64 bytes.
    unsafe fn new(base: NonNull<u8>, len: usize) -> HostRing {
        debug_assert!(len.is_power_of_two() && len >= 64);
        HostRing {
            base,
            mask: len - 1,
        }
    }

    /// Length in bytes.
    pub(crate) fn len(&self) -> usize {
        self.mask + 1
    }

    /// The first byte (for descriptors and the device's view).
    pub(crate) fn base(&self) -> NonNull<u8> {
        self.base
    }

    /// Fills the ring with `byte` (volatile stores: the device may look).
    pub(crate) fn fill(&self, byte: u8) {
        for i in 0..self.len() {
            self.store_u8(i, byte);
        }
    }

    /// Stores one byte at `offset` (masked into the ring).
    #[inline(always)]
    pub(crate) fn store_u8(&self, offset: usize, v: u8) {
        // SAFETY: the masked offset is inside the ring (`new`'s contract).
        unsafe { std::ptr::write_volatile(self.base.as_ptr().add(offset & self.mask), v) }
    }
}

/// One 64-byte CQE of a [`CqRing`]: its loads are volatile, since the device writes it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CqeRef(NonNull<u64>);

impl CqeRef {
    /// `op_own`, loaded alone.
    #[inline(always)]
    pub(crate) fn op_own(self) -> u8 {
        // SAFETY: the last byte of a 64-byte CQE inside its ring (how `CqRing` makes these).
        unsafe { std::ptr::read_volatile(self.0.as_ptr().cast::<u8>().add(at::OP_OWN)) }
    }

    /// The big-endian 32-bit field at byte `at` (a multiple of 4 below 64).
    #[inline(always)]
    pub(crate) fn be32(self, at: usize) -> u32 {
        debug_assert!(at.is_multiple_of(4) && at < CQE_SIZE);
        // SAFETY: 4 bytes inside the 64-byte, 8-byte aligned CQE, 4-byte aligned.
        u32::from_be(unsafe {
            std::ptr::read_volatile(self.0.as_ptr().cast::<u8>().add(at & 60).cast::<u32>())
        })
    }

    /// The big-endian 16-bit field at byte `at` (a multiple of 2 below 64).
    #[inline(always)]
    pub(crate) fn be16(self, at: usize) -> u16 {
        debug_assert!(at.is_multiple_of(2) && at < CQE_SIZE);
        // SAFETY: 2 bytes inside the 64-byte, 8-byte aligned CQE, 2-byte aligned.
        u16::from_be(unsafe {
            std::ptr::read_volatile(self.0.as_ptr().cast::<u8>().add(at & 62).cast::<u16>())
        })
    }

    /// 8-byte word `i` (0..8) of the CQE, as bytes in memory order.
    #[inline(always)]
    pub(crate) fn word(self, i: usize) -> [u8; 8] {
        // SAFETY: word `i & 7` of a 64-byte, 8-byte aligned CQE inside its ring.
        unsafe { std::ptr::read_volatile(self.0.as_ptr().add(i & 7)) }.to_ne_bytes()
    }
}

/// The ring of a CQ: `2^log_size` entries of 64 or 128 bytes; the 64-byte CQE of an entry is
/// its last 64 bytes. It keeps the consumer's cursor: the entry of the consumer index and the
/// owner bit of its pass, so that reading the next CQE costs no index arithmetic.
#[derive(Debug)]
pub(crate) struct CqRing {
    ring: HostRing,
    log_size: u8,
    /// log2 of the entry size (6 or 7).
    entry_shift: u32,
    /// The 64-byte CQE of entry 0 (the entry's last 64 bytes).
    first_cqe: NonNull<u8>,
    /// The entry size in bytes.
    stride: usize,
    /// `(entry size << log_size) - 1`: the cursor's wrap mask.
    bytes_mask: usize,
    /// Byte offset of the cursor's entry: a multiple of the entry size, below `bytes_mask`.
    cursor: usize,
    /// The owner bit the device writes in the cursor's pass.
    parity: u8,
}

// SAFETY: `first_cqe` points into the ring's `HostRing`, which is `Send` for the reason given
// there: the owning queue's `&mut self` methods are its only users.
unsafe impl Send for CqRing {}

impl CqRing {
    /// The CQ ring over `ring`, which must hold `2^log_size` entries of `cqe_bytes` (64 or
    /// 128); `None` otherwise. The cursor is at consumer index 0.
    pub(crate) fn new(ring: HostRing, log_size: u8, cqe_bytes: usize) -> Option<CqRing> {
        if !(cqe_bytes == 64 || cqe_bytes == 128) || log_size > 24 {
            return None;
        }
        let bytes = cqe_bytes << log_size;
        if ring.len() < bytes {
            return None;
        }
        // SAFETY: `cqe_bytes - 64 < bytes <= ring.len()`: inside the ring.
        let first_cqe =
            unsafe { NonNull::new_unchecked(ring.base().as_ptr().add(cqe_bytes - CQE_SIZE)) };
        Some(CqRing {
            ring,
            log_size,
            entry_shift: cqe_bytes.trailing_zeros(),
            first_cqe,
            stride: cqe_bytes,
            bytes_mask: bytes - 1,
            cursor: 0,
            parity: 0,
        })
    }

    /// Moves the cursor to consumer index `ci`.
    pub(crate) fn seek(&mut self, ci: u32) {
        self.cursor = ring::slot(ci, self.log_size) << self.entry_shift;
        self.parity = ring::owner_parity(ci, self.log_size);
    }

    /// The CQE at the cursor, and the owner bit of its pass.
    #[inline(always)]
    pub(crate) fn at_cursor(&self) -> (CqeRef, u8) {
        // SAFETY: `cursor` is the offset of one of the `2^log_size` entries (`seek` and
        // `advance` keep it so), so its CQE (`first_cqe + cursor`, 64 bytes, the entry's last)
        // is inside the ring; 64-byte aligned like the ring and the entry size.
        let cqe = unsafe { NonNull::new_unchecked(self.first_cqe.as_ptr().add(self.cursor)) };
        (CqeRef(cqe.cast::<u64>()), self.parity)
    }

    /// Moves the cursor one entry on, into the next pass after the last entry.
    #[inline(always)]
    pub(crate) fn advance(&mut self) {
        self.cursor = (self.cursor + self.stride) & self.bytes_mask;
        if self.cursor == 0 {
            self.parity ^= 1;
        }
    }

    /// Zeroes the ring and marks every CQE hardware-owned (`op_own`).
    pub(crate) fn init(&self, op_own: u8) {
        self.ring.fill(0);
        for i in 0..(1usize << self.log_size) {
            self.ring
                .store_u8(cqe64_offset(i, 1 << self.entry_shift) + at::OP_OWN, op_own);
        }
    }

    /// The entries from consumer index `ci` up to the end of the ring (the wrap), at most
    /// `max` of them, in order.
    #[inline(always)]
    pub(crate) fn run(&self, ci: u32, max: usize) -> CqRun {
        let stride = 1usize << self.entry_shift;
        let size = 1usize << self.log_size;
        let idx = ring::slot(ci, self.log_size);
        let n = (size - idx).min(max);
        let base = self.ring.base().as_ptr();
        // SAFETY: `idx + n <= size`: the run's first entry is inside the ring and the end of
        // its last entry inside it or one past its end.
        let (first, end) = unsafe {
            (
                base.add(idx << self.entry_shift),
                base.add((idx + n) << self.entry_shift),
            )
        };
        CqRun {
            next: first,
            end,
            stride,
            half: stride - CQE_SIZE,
            start: first,
            shift: self.entry_shift,
        }
    }
}

/// A run of consecutive CQEs of a [`CqRing`] (no wrap inside): an iterator whose only state
/// per CQE is a pointer stepped by the entry size.
#[derive(Debug)]
pub(crate) struct CqRun {
    /// The next entry's first byte.
    next: *mut u8,
    /// One past the last entry of the run.
    end: *mut u8,
    stride: usize,
    /// Where the 64-byte CQE sits in an entry (`stride - 64`).
    half: usize,
    start: *mut u8,
    shift: u32,
}

impl CqRun {
    /// How many CQEs the iterator has handed out.
    #[inline(always)]
    pub(crate) fn taken(&self) -> usize {
        (self.next as usize - self.start as usize) >> self.shift
    }
}

impl Iterator for CqRun {
    type Item = CqeRef;
    #[inline(always)]
    fn next(&mut self) -> Option<CqeRef> {
        if self.next == self.end {
            return None;
        }
        let e = self.next;
        // SAFETY: `e` is an entry before `end`, so `e + stride` is inside the run or its end,
        // and its CQE (`e + half`, 64 bytes) inside the entry.
        let (next, cqe) = unsafe { (e.add(self.stride), e.add(self.half)) };
        self.next = next;
        // SAFETY: a CQE of the run, 64-byte aligned (`CqRing::run` made `next` and `end` from
        // ring entries).
        Some(CqeRef(unsafe { NonNull::new_unchecked(cqe.cast::<u64>()) }))
    }
}

#[cfg(test)]
pub(crate) mod test_ring {
    use super::*;

    /// Heap memory for a test ring: 64-byte aligned words.
    #[repr(C, align(64))]
    pub(crate) struct Line(pub(crate) [u64; 8]);

    /// A [`HostRing`] over `lines` (a power of two of them), used only while `lines` lives.
    pub(crate) fn over(lines: &mut [Line]) -> HostRing {
        assert!(lines.len().is_power_of_two());
        let base = NonNull::new(lines.as_mut_ptr().cast::<u8>()).expect("non-null");
        // SAFETY: `lines` is 64-byte aligned memory of `64 * len` bytes, a power of two; the
        // tests use the ring only while they hold `lines` mutably borrowed through it.
        unsafe { HostRing::new(base, lines.len() * 64) }
    }
}
