//! Test support, not part of the product (feature `test-utils`; always built for the crate's
//! own unit tests).
//!
//! - [`rig`], [`rc_rig`], [`dpa_rig`]: queue sets and DPA processes built from raw firmware
//!   commands and hand-built WQEs, so the model's tests do not depend on the driver's queue
//!   code they are meant to check it against.
//! - [`fuzzing`]: the fuzz driver of the firmware model (arbitrary mailboxes through one DevX
//!   context), shared by the fuzz targets and the property tests that replay them on stable.
//! - [`fault_sweep`]: fault injection over a whole driver flow.
//!
//! Host memory for rings and buffers is the driver's [`DmaBuf`] (one helper for the whole
//! workspace); [`RigMem`] adds the infallible accessors a rig wants, since an access outside
//! the buffer is a bug of the rig itself.

pub mod dpa_rig;
pub mod fault_sweep;
pub mod fuzzing;
pub mod rc_rig;
pub mod rig;

use mlx5_dpa::mem::DmaBuf;
use mlx5_dpa::mlx5::cmd::{CqEventTarget, CreateCq, RingMem};

/// A ring at `offset` of a rig's one UMEM, its doorbell record at `dbr_offset` of the same.
pub(crate) fn ring_mem(umem_id: u32, offset: usize, dbr_offset: usize) -> RingMem {
    RingMem {
        umem_id,
        umem_offset: offset as u64,
        dbr_umem_id: umem_id,
        dbr_offset: dbr_offset as u64,
    }
}

/// A rig's CQ: `2^log_size` 64-byte CQEs in `mem`, reporting to EQ `eqn`, no moderation.
pub(crate) fn rig_cq(log_size: u8, uar_page: u32, eqn: u32, mem: RingMem) -> CreateCq {
    CreateCq {
        log_cq_size: log_size,
        cqe_sz: 0,
        uar_page,
        target: CqEventTarget::Eq(eqn),
        mem,
        cq_period: 0,
        cq_max_count: 0,
        oi: false,
        cc: false,
        cqe_comp: false,
    }
}

/// Accessors of a rig's ring memory: an access outside the buffer is a bug of the rig, and
/// panics with the offset.
pub(crate) trait RigMem {
    /// The address of byte `off` (what mkeys and WQEs name).
    fn va(&self, off: usize) -> u64;
    /// Copies `data` in at `off`.
    fn put(&self, off: usize, data: &[u8]);
    /// Copies `buf.len()` bytes out from `off`.
    fn get(&self, off: usize, buf: &mut [u8]);
    /// One volatile big-endian 32-bit store (a doorbell record).
    fn put_be32(&self, off: usize, v: u32);
    /// One volatile byte load (an ownership byte).
    fn get_u8(&self, off: usize) -> u8;
}

impl RigMem for DmaBuf {
    #[inline]
    fn va(&self, off: usize) -> u64 {
        assert!(
            off < self.len(),
            "rig memory: offset {off:#x} past {:#x}",
            self.len()
        );
        self.addr() + off as u64
    }
    #[inline]
    fn put(&self, off: usize, data: &[u8]) {
        self.write(off, data)
            .unwrap_or_else(|e| panic!("rig memory: {e}"))
    }
    #[inline]
    fn get(&self, off: usize, buf: &mut [u8]) {
        self.read(off, buf)
            .unwrap_or_else(|e| panic!("rig memory: {e}"))
    }
    #[inline]
    fn put_be32(&self, off: usize, v: u32) {
        self.store_be32(off, v)
            .unwrap_or_else(|e| panic!("rig memory: {e}"))
    }
    #[inline]
    fn get_u8(&self, off: usize) -> u8 {
        self.load_u8(off)
            .unwrap_or_else(|e| panic!("rig memory: {e}"))
    }
}
