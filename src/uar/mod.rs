//! UAR pages, doorbell records, MMIO doorbell writes and the device barriers that order them.
//!
//! A doorbell is three stores in a fixed order (docs/sources.md §6; PRM "Doorbells", rdma-core
//! `mlx5_post_send`, DPDK `mlx5_doorbell_ring`):
//!
//! 1. the WQEs themselves, in host memory;
//! 2. the *doorbell record*: a big-endian counter in host memory that the device reads (send
//!    counter in `dbrec[1]`, receive counter in `dbrec[0]`, CQ consumer index in `dbrec[0]`);
//! 3. the *doorbell*: a 64-bit MMIO write of the first 8 bytes of the last WQE's control segment
//!    to UAR page + 0x800, which tells the device to look.
//!
//! [`barrier`] holds the per-architecture primitives that keep these stores in that order as the
//! device sees them; [`send_doorbell`] and [`UarPage::cq_doorbell`] are the only places that
//! combine them.
//!
//! Ownership: a [`UarPage`] owns the page (freed on drop); queues hold it in an `Arc` so the page
//! outlives every queue that rings it.

use std::ptr::NonNull;
use std::sync::Arc;

use crate::devx::{Devx, DevxError, Uar, UarKind, UAR_DOORBELL_OFFSET};

pub mod barrier;

/// Offset of the CQ arm doorbell in a UAR page (PRM; rdma-core `MLX5_CQ_DOORBELL`).
pub const CQ_DOORBELL_OFFSET: usize = 0x20;
/// Size of one BlueFlame buffer (PRM `log_bf_reg_size` is 9 on every device seen: 512 bytes,
/// two buffers of 256 that alternate; rdma-core `bf->buf_size`).
pub const BLUEFLAME_BUF_SIZE: usize = 0x100;

/// An allocated, mapped UAR page; freed when dropped.
pub struct UarPage {
    dev: Arc<dyn Devx>,
    uar: Option<Uar>,
    kind: UarKind,
}

impl std::fmt::Debug for UarPage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UarPage")
            .field("page_id", &self.page_id())
            .field("kind", &self.kind)
            .finish()
    }
}

impl UarPage {
    /// Allocates and maps a UAR page of `kind`.
    ///
    /// # Errors
    /// Backend errors (no UAR left, mapping failed).
    pub fn alloc(dev: &Arc<dyn Devx>, kind: UarKind) -> Result<Arc<UarPage>, DevxError> {
        let uar = dev.uar_alloc(kind)?;
        if uar.len < UAR_DOORBELL_OFFSET + 2 * BLUEFLAME_BUF_SIZE {
            let _ = dev.uar_free(uar);
            return Err(DevxError::BadMailbox(
                "UAR mapping is shorter than its doorbell registers".into(),
            ));
        }
        Ok(Arc::new(UarPage {
            dev: Arc::clone(dev),
            uar: Some(uar),
            kind,
        }))
    }

    /// The page index firmware knows (`uar_page` fields of cqc, wq, qpc).
    pub fn page_id(&self) -> u32 {
        self.uar.as_ref().map_or(0, |u| u.page_id)
    }

    /// The mapping kind.
    pub fn kind(&self) -> UarKind {
        self.kind
    }

    /// The address of the mapping (for queue descriptors handed to other engines).
    pub fn base(&self) -> *mut u8 {
        self.uar
            .as_ref()
            .map_or(std::ptr::null_mut(), |u| u.base.as_ptr())
    }

    fn reg(&self, offset: usize) -> Option<NonNull<u64>> {
        let uar = self.uar.as_ref()?;
        if !offset.is_multiple_of(8) || offset + 8 > uar.len {
            return None;
        }
        // SAFETY: `offset + 8 <= len` (checked above), so the result stays inside the mapping.
        let p = unsafe { uar.base.as_ptr().add(offset) };
        NonNull::new(p.cast::<u64>())
    }

    /// One 64-bit MMIO store of `bytes` (already in device byte order) at `offset`.
    fn write64(&self, offset: usize, bytes: [u8; 8]) {
        if let Some(reg) = self.reg(offset) {
            // SAFETY: `reg` is an 8-byte aligned register inside the live mapping (checked by
            // `reg`); a volatile store is emitted as exactly one 64-bit store, which is what
            // the device expects of a doorbell (never split into two 32-bit writes).
            unsafe { std::ptr::write_volatile(reg.as_ptr(), u64::from_ne_bytes(bytes)) }
        }
    }

    /// Rings the send doorbell: the first 8 bytes of the last posted WQE at UAR + 0x800.
    /// Callers normally use [`send_doorbell`], which writes the doorbell record first.
    pub fn doorbell(&self, ctrl: [u8; 8]) {
        // ORDERING: on a write-combining page the doorbell must not be combined with, or pass,
        // earlier stores; on an uncached page stores already leave in order.
        if self.kind == UarKind::BlueFlame {
            barrier::wc_start();
        }
        self.write64(UAR_DOORBELL_OFFSET, ctrl);
        if self.kind == UarKind::BlueFlame {
            // ORDERING: flush the write-combining buffer so the doorbell leaves the CPU now.
            barrier::wc_flush();
        }
        self.dev.doorbell_rung();
    }

    /// Copies a whole WQE (`wqe.len()` a multiple of 8, at most 256 bytes) into BlueFlame
    /// buffer `buf` (0 or 1, alternating), in 64-bit stores. The first 8 bytes double as the
    /// doorbell; the device may then take the WQE from the buffer without fetching it.
    pub fn blue_flame(&self, buf: usize, wqe: &[u8]) {
        let base = UAR_DOORBELL_OFFSET + (buf & 1) * BLUEFLAME_BUF_SIZE;
        // ORDERING: as for `doorbell`.
        barrier::wc_start();
        for (i, chunk) in wqe.chunks_exact(8).take(BLUEFLAME_BUF_SIZE / 8).enumerate() {
            let mut b = [0u8; 8];
            b.copy_from_slice(chunk);
            self.write64(base + i * 8, b);
        }
        // ORDERING: the whole copy leaves the write-combining buffer as one burst, now.
        barrier::wc_flush();
        self.dev.doorbell_rung();
    }

    /// Writes the CQ arm doorbell: `sn << 28 | cmd | ci` then the CQN, big-endian, at
    /// UAR + 0x20 (PRM; rdma-core `mlx5_arm_cq`). The arm doorbell record must already hold
    /// the same first word.
    pub fn cq_doorbell(&self, word: u32, cqn: u32) {
        let mut b = [0u8; 8];
        b[..4].copy_from_slice(&word.to_be_bytes());
        b[4..].copy_from_slice(&cqn.to_be_bytes());
        // ORDERING: the arm record (host memory) before the MMIO write that makes the device
        // read it.
        barrier::dma_wmb();
        self.write64(CQ_DOORBELL_OFFSET, b);
        if self.kind == UarKind::BlueFlame {
            barrier::wc_flush();
        }
        self.dev.doorbell_rung();
    }

    /// The device the page belongs to (host-side waits sleep on its activity,
    /// [`Devx::wait_activity`]).
    pub fn device(&self) -> &Arc<dyn Devx> {
        &self.dev
    }
}

impl Drop for UarPage {
    fn drop(&mut self) {
        if let Some(uar) = self.uar.take() {
            // Nothing to report to on drop; the kernel frees the page with the context anyway.
            let _ = self.dev.uar_free(uar);
        }
    }
}

/// A doorbell record: two big-endian 32-bit counters in host memory that the device reads.
#[derive(Debug, Clone, Copy)]
pub struct DoorbellRecord {
    ptr: NonNull<u32>,
}

// SAFETY: the record is a pair of u32 in DMA memory accessed only with volatile stores and
// loads; the owner of the memory (a queue) keeps it alive.
unsafe impl Send for DoorbellRecord {}
// SAFETY: as above.
unsafe impl Sync for DoorbellRecord {}

impl DoorbellRecord {
    /// A record at `ptr` (two u32, 4-byte aligned).
    ///
    /// # Safety
    /// `ptr` must be valid for 8 bytes of volatile reads and writes, 4-byte aligned, for as long
    /// as the record (and its copies) are used.
    pub unsafe fn new(ptr: NonNull<u8>) -> DoorbellRecord {
        DoorbellRecord { ptr: ptr.cast() }
    }

    /// The address (for descriptors).
    pub fn addr(&self) -> *mut u8 {
        self.ptr.as_ptr().cast()
    }

    /// Stores `value` big-endian in word `idx` (0 or 1).
    pub fn store(&self, idx: usize, value: u32) {
        // SAFETY: `idx & 1` keeps the store inside the 8 bytes `new` was promised; aligned.
        unsafe { std::ptr::write_volatile(self.ptr.as_ptr().add(idx & 1), value.to_be()) }
    }

    /// Loads word `idx` (0 or 1).
    pub fn load(&self, idx: usize) -> u32 {
        // SAFETY: as for `store`.
        u32::from_be(unsafe { std::ptr::read_volatile(self.ptr.as_ptr().add(idx & 1)) })
    }
}

/// Index of the receive counter in a WQ doorbell record (rdma-core `MLX5_RCV_DBR`).
pub const RCV_DBR: usize = 0;
/// Index of the send counter (rdma-core `MLX5_SND_DBR`).
pub const SND_DBR: usize = 1;
/// Index of the CQ consumer index (rdma-core `MLX5_CQ_SET_CI`).
pub const CQ_SET_CI: usize = 0;
/// Index of the CQ arm word (rdma-core `MLX5_CQ_ARM_DB`).
pub const CQ_ARM_DB: usize = 1;

/// The send doorbell sequence: WQEs already written -> `dbr[SND_DBR] = pi` -> the first 8
/// bytes of the last WQE's control segment to UAR + 0x800 (or the whole WQE through
/// BlueFlame when `bf` is given).
pub fn send_doorbell(
    dbr: &DoorbellRecord,
    pi: u16,
    uar: &UarPage,
    ctrl: [u8; 8],
    bf: Option<(usize, &[u8])>,
) {
    // ORDERING: the WQE stores before the record: once the device sees the new counter it may
    // fetch the WQEs.
    barrier::dma_wmb();
    dbr.store(SND_DBR, u32::from(pi));
    // ORDERING: the record before the MMIO doorbell, which makes the device read it.
    barrier::dma_wmb();
    match bf {
        Some((buf, wqe)) if uar.kind() == UarKind::BlueFlame => uar.blue_flame(buf, wqe),
        _ => uar.doorbell(ctrl),
    }
}
