//! Shared receive queues: one cyclic ring of receive WQEs that several RC QPs take from.
//!
//! PRM: the pool is an RMP (CREATE_RMP, a `wq` of type cyclic) and each QP names it with
//! `qpc.rq_type` SRQ and `qpc.srqn_rmpn_xrqn` (the kernel's `MLX5_SRQ_RQ`). A QP with an SRQ
//! has no receive ring of its own: its QP memory holds the send ring only, and its receive
//! completions go to its own receive CQ, naming the QP (`sop_drop_qpn`) and the SRQ WQE they
//! filled (`wqe_counter`).
//!
//! The cyclic pool hands its WQEs out in ring order, but a message that spans several packets
//! holds its WQE until its last packet while a shorter message on another QP completes first,
//! so completions may retire WQEs out of order: [`Srq::complete`] takes them in any order and
//! frees a slot once every WQE before it is done too.

use std::sync::Arc;

use super::ring::{self, SEG};
use super::shared::{host_queue, HostQueue};
use super::wq::{ring_mem, RecvRing};
use super::{QueueError, QueueMemory, RqConfig};
use crate::devx::{self, Devx, DevxObj};
use crate::mem::{Pd, Sge};
use crate::mlx5::cmd::CreateRmp;
use crate::uar::{DoorbellRecord, UarPage};

/// The firmware object of an SRQ, held by every QP that receives from it.
pub(crate) struct SrqObj {
    pub(crate) obj: DevxObj,
    pub(crate) srqn: u32,
    pub(crate) pd: Arc<Pd>,
    _mem: Box<dyn QueueMemory>,
}

/// A shared receive queue (host rings).
pub struct Srq {
    pub(crate) shared: Arc<SrqObj>,
    ring: RecvRing,
    dbr: DoorbellRecord,
    /// Per slot: completed while an earlier WQE is still outstanding.
    done: Box<[bool]>,
}

impl std::fmt::Debug for Srq {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Srq")
            .field("srqn", &self.shared.srqn)
            .field("pi", &self.ring.pi)
            .field("ci", &self.ring.ci)
            .finish()
    }
}

impl Srq {
    /// CREATE_RMP over `mem` (ready at once); QPs join it with
    /// [`RcQp::create_with_srq`](super::RcQp::create_with_srq).
    ///
    /// # Errors
    /// Configuration, memory, or firmware errors.
    pub fn create(
        dev: &Arc<dyn Devx>,
        pd: &Arc<Pd>,
        uar: &Arc<UarPage>,
        mem: impl QueueMemory,
        cfg: &RqConfig,
    ) -> Result<Srq, QueueError> {
        cfg.check("SRQ").map_err(QueueError::Config)?;
        let HostQueue {
            ring_place,
            ring,
            dbr_place,
            dbr,
        } = host_queue(&mem, "SRQ memory", cfg.ring_bytes())?;
        let stride = cfg.stride();
        let (obj, srqn) = devx::create(
            dev,
            &CreateRmp {
                wq: cfg.wq_attr(pd.pdn(), uar.page_id(), ring_mem(&ring_place, &dbr_place)),
                linked_list: false,
            },
        )?;
        Ok(Srq {
            ring: RecvRing::new(ring.base(), cfg.log_size, stride, srqn),
            dbr,
            done: vec![false; 1 << cfg.log_size].into_boxed_slice(),
            shared: Arc::new(SrqObj {
                obj,
                srqn,
                pd: Arc::clone(pd),
                _mem: Box::new(mem),
            }),
        })
    }

    /// The SRQ (RMP) number.
    pub fn srqn(&self) -> u32 {
        self.shared.srqn
    }

    /// Free receive slots.
    pub fn free(&self) -> u16 {
        ring::free16(self.ring.pi, self.ring.ci, self.ring.log_size())
    }

    /// Scatter entries per receive.
    pub fn max_sge(&self) -> usize {
        self.ring.stride() / SEG
    }

    /// Posts one receive buffer. Not visible until [`Srq::ring_doorbell`].
    ///
    /// # Errors
    /// Too many entries or no room.
    pub fn post_recv(&mut self, sges: &[Sge], wr_id: u64) -> Result<(), QueueError> {
        self.ring.post("SRQ", sges, wr_id)
    }

    /// Publishes posted receives (the receive counter in the doorbell record).
    pub fn ring_doorbell(&mut self) {
        self.ring.doorbell(&self.dbr);
    }

    /// Retires the WQE a receive completion names (its `wqe_counter`), in any order; returns
    /// its `wr_id`.
    ///
    /// # Errors
    /// The completion names no outstanding WQE, or one already retired.
    pub fn complete(&mut self, wqe_counter: u16) -> Result<u64, QueueError> {
        let stray = QueueError::StrayCompletion {
            queue: "SRQ",
            num: self.shared.srqn,
            wqe_counter,
        };
        if !ring::in_window16(wqe_counter, self.ring.ci, self.ring.pi) {
            return Err(stray);
        }
        let log = self.ring.log_size();
        let s = ring::slot(u32::from(wqe_counter), log);
        if self.done[s] {
            return Err(stray);
        }
        let wr_id = self.ring.wr_id_at(s);
        self.done[s] = true;
        // Free the slots up to the first WQE still outstanding.
        while self.ring.ci != self.ring.pi {
            let c = ring::slot(u32::from(self.ring.ci), log);
            if !self.done[c] {
                break;
            }
            self.done[c] = false;
            self.ring.ci = self.ring.ci.wrapping_add(1);
        }
        Ok(wr_id)
    }

    /// The DevX handle.
    pub fn obj(&self) -> &DevxObj {
        &self.shared.obj
    }
}
