//! CQ, SQ, RQ and RC QP rings owned by the user: WQE builders, CQE parsing, arming.
//!
//! # Who owns which memory, when
//!
//! - The **ring and its doorbell record** come from the user, through [`QueueMemory`]: a queue
//!   never allocates ring memory behind the user's back. [`HostQueueMem`] is the host-memory
//!   implementation (a buffer registered as a UMEM); rings in DPA memory implement the same
//!   trait. A queue holds its `QueueMemory` until it is destroyed, so the memory outlives the
//!   firmware object that points at it.
//! - **Send WQE slots** between the consumer and producer counters belong to the driver until
//!   the doorbell record moves past them, then to the device until their completion is polled.
//! - **CQEs** belong to the device until the owner bit says otherwise; the driver reads them
//!   with volatile loads and a read barrier ([`crate::uar::barrier::dma_rmb`]) and never keeps a
//!   reference into the ring.
//! - **Payload buffers** named by SGEs are the user's; the device reads (send) or writes
//!   (receive, RDMA READ, atomics) them between the doorbell and the completion.
//!
//! The hot paths (post, doorbell, poll) allocate nothing: shadow arrays (`wr_id` per slot) are
//! sized at creation.
//!
//! The queue kinds: [`Cq`], the Ethernet [`EthSq`] and [`Rq`] (with [`steering`] to route a flow
//! into an RQ), the RC [`RcQp`] and the [`Srq`] several QPs receive from. [`descriptor`] exports plain descriptors for engines
//! that drive a queue themselves (GPU, DPA).

pub mod cq;
pub mod descriptor;
#[doc(hidden)]
pub mod fuzzing;
pub mod qp;
pub mod ring;
mod shared;
pub mod srq;
pub mod steering;
pub mod transport;
pub mod wq;

use std::ptr::NonNull;
use std::sync::Arc;

use crate::devx::{Devx, DevxError};
use crate::mem::{Access, DmaBuf, MemError, Umem};
use crate::mlx5::cmd::CmdError;

pub use crate::mlx5::wire::{
    Completion, CompletionError, CompletionKind, Cqe, Eqe, Event, Syndrome,
};
pub use cq::{Arm, Cq, CqConfig, CqEvents, CqTarget, Cqn};
pub use descriptor::{CqDescriptor, WqDescriptor};
pub use qp::{QpConfig, Qpn, RcConnect, RcPeer, RcQp, RemoteAddr, SendOp, SendWr};
pub use srq::Srq;
pub use steering::RqTarget;
pub use wq::{EthBurst, EthSq, EthSqConfig, Rq, RqConfig, Rqn, Sqn};

/// Errors of the queue layer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum QueueError {
    /// The device refused a command or the transport failed.
    #[error(transparent)]
    Devx(#[from] DevxError),
    /// Memory could not be mapped, registered or keyed.
    #[error(transparent)]
    Mem(#[from] MemError),
    /// A queue parameter is out of range or inconsistent.
    #[error("invalid queue configuration: {0}")]
    Config(String),
    /// The ring memory handed in does not fit the queue.
    #[error("{what}: {detail}")]
    Memory { what: &'static str, detail: String },
    /// No room in the ring for this WQE.
    #[error("{queue} is full: {needed} WQEBBs needed, {free} free")]
    Full {
        queue: &'static str,
        needed: u16,
        free: u16,
    },
    /// A work request cannot be encoded (too many segments, inline data too long).
    #[error("bad work request: {0}")]
    BadRequest(String),
    /// The queue is not in a state that allows this.
    #[error("{queue} {num:#x} is in state {state}, {what} needs {needed}")]
    State {
        queue: &'static str,
        num: u32,
        state: String,
        what: &'static str,
        needed: &'static str,
    },
    /// A completion named a WQE the queue does not have outstanding.
    #[error("completion for {queue} {num:#x} names WQE {wqe_counter}, which is not outstanding")]
    StrayCompletion {
        queue: &'static str,
        num: u32,
        wqe_counter: u16,
    },
}

impl From<CmdError> for QueueError {
    fn from(e: CmdError) -> Self {
        QueueError::Devx(e.into())
    }
}

/// One place in memory, as the device and (when reachable) the host see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemPlace {
    /// The UMEM the device reaches it through.
    pub umem_id: u32,
    /// Offset inside that UMEM.
    pub umem_offset: u64,
    /// Length in bytes.
    pub len: usize,
    /// The host address, when the host can read and write it (host memory); `None` for memory
    /// only the device side can touch (DPA memory).
    pub host: Option<NonNull<u8>>,
    /// The address an engine on the device side uses (the host virtual address for host
    /// memory, the DPA address for DPA memory).
    pub device_addr: u64,
}

// SAFETY: a `MemPlace` is a description (ids, offsets, addresses); it gives no access by itself.
// Every dereference of `host` is `unsafe` code resting on the `QueueMemory` contract of the
// memory it came from, wherever the description travels.
unsafe impl Send for MemPlace {}
// SAFETY: as above; shared references only read the description.
unsafe impl Sync for MemPlace {}

/// Where a queue's ring and doorbell record live.
///
/// # Safety
/// An implementation promises that for as long as it lives:
/// - `ring()` and `doorbell_record()` always return the same places;
/// - their `host` pointers, when present, are valid for volatile reads and writes of `len`
///   bytes, the ring 64-byte aligned and the record 8-byte aligned, and nothing but the queue
///   given this value (and the device) accesses them;
/// - the UMEM ids and offsets name that same memory to the device.
pub unsafe trait QueueMemory: Send + Sync + 'static {
    /// The ring.
    fn ring(&self) -> MemPlace;
    /// The doorbell record (at least 8 bytes).
    fn doorbell_record(&self) -> MemPlace;
}

/// A ring and doorbell record in host memory registered as a UMEM.
#[derive(Debug)]
pub struct HostQueueMem {
    umem: Arc<Umem>,
    ring_off: usize,
    ring_len: usize,
    dbr_off: usize,
}

/// Alignment of rings in host memory (one WQEBB / CQE; rdma-core aligns to pages).
pub const RING_ALIGN: usize = 64;
/// Space given to a doorbell record (a cache line, so records of different queues never share one).
pub const DBR_SIZE: usize = 64;

impl HostQueueMem {
    /// Maps a fresh buffer for a ring of `ring_len` bytes followed by its doorbell record and
    /// registers it (local write).
    ///
    /// # Errors
    /// Mapping or registration failed.
    pub fn alloc(dev: &Arc<dyn Devx>, ring_len: usize) -> Result<HostQueueMem, QueueError> {
        let ring_len = ring_len.max(RING_ALIGN);
        let dbr_off = ring_len.next_multiple_of(DBR_SIZE);
        let buf = DmaBuf::new(dbr_off + DBR_SIZE)?;
        let umem = Umem::register(dev, &buf, Access::LOCAL_WRITE)?;
        Ok(HostQueueMem {
            umem,
            ring_off: 0,
            ring_len,
            dbr_off,
        })
    }

    /// A ring and record carved out of an existing registration (to pack many queues into one
    /// buffer).
    ///
    /// # Safety
    /// No other queue (or anything else) may use `ring_off..ring_off+ring_len` or the 8 bytes
    /// at `dbr_off` of this UMEM while the returned value lives.
    ///
    /// # Errors
    /// The ranges leave the registration, overlap, or are misaligned.
    pub unsafe fn carve(
        umem: Arc<Umem>,
        ring_off: usize,
        ring_len: usize,
        dbr_off: usize,
    ) -> Result<HostQueueMem, QueueError> {
        let bad = |detail: String| QueueError::Memory {
            what: "carving queue memory",
            detail,
        };
        let in_range =
            |off: usize, len: usize| off.checked_add(len).is_some_and(|e| e <= umem.len());
        if !in_range(ring_off, ring_len) || !in_range(dbr_off, 8) {
            return Err(bad(format!(
                "ring {ring_off:#x}+{ring_len:#x} or record {dbr_off:#x}+8 outside {:#x} bytes",
                umem.len()
            )));
        }
        let addr = umem.addr() as usize;
        if !(addr + ring_off).is_multiple_of(RING_ALIGN) || !(addr + dbr_off).is_multiple_of(8) {
            return Err(bad("ring must be 64-byte and record 8-byte aligned".into()));
        }
        if dbr_off + 8 > ring_off && dbr_off < ring_off + ring_len {
            return Err(bad("the doorbell record overlaps the ring".into()));
        }
        if !umem.access().contains(Access::LOCAL_WRITE) {
            return Err(bad("the UMEM must allow local write".into()));
        }
        Ok(HostQueueMem {
            umem,
            ring_off,
            ring_len,
            dbr_off,
        })
    }

    /// The registration.
    pub fn umem(&self) -> &Arc<Umem> {
        &self.umem
    }

    fn place(&self, off: usize, len: usize) -> MemPlace {
        let host = self.umem.buf().ptr(self.umem.offset() + off, len).ok();
        MemPlace {
            umem_id: self.umem.id().0,
            umem_offset: off as u64,
            len,
            host,
            device_addr: self.umem.addr() + off as u64,
        }
    }
}

// SAFETY: the places are fixed at construction, inside the registration (checked by `alloc` /
// `carve`), aligned (alloc: page-aligned buffer, 64-byte record offset; carve: checked), and
// exclusive (alloc: a fresh buffer; carve: the caller's promise). The `Arc<Umem>` keeps the
// registration and its buffer alive.
unsafe impl QueueMemory for HostQueueMem {
    fn ring(&self) -> MemPlace {
        self.place(self.ring_off, self.ring_len)
    }
    fn doorbell_record(&self) -> MemPlace {
        self.place(self.dbr_off, 8)
    }
}
