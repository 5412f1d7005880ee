//! An RC QP driven from a GPU ([`VerbsQp`]) and its handle ([`GpuVerbsQp`]), for the GPUNetIO
//! Verbs headers (`doca_gpunetio_dev_verbs_*.cuh`): put, put with signal, get, send, receive.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::{GpuError, NicHandler};
use crate::mem::DmaBuf;
use crate::queues::{Cq, RcQp};

/// `struct doca_gpu_dev_verbs_cq` of `doca_gpunetio_verbs_def.h`. 48 bytes.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct GpuVerbsCq {
    pub cqe_daddr: u64,
    pub dbrec: u64,
    pub cqe_ci: u64,
    pub cqe_rsvd: u64,
    pub cq_num: u32,
    /// CQEs in the ring; 0 for a collapsed CQ (entry 0 holds the latest CQE).
    pub cqe_num: u32,
    pub cqe_mask: u32,
    pub lock: i32,
}

/// `struct doca_gpu_dev_verbs_qp` of `doca_gpunetio_verbs_def.h`. 216 bytes; the header's
/// offsets (checked by the tests, which compile it).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct GpuVerbsQp {
    pub sq_rsvd_index: u64,
    pub sq_ready_index: u64,
    pub sq_wqe_pi: u64,
    pub sq_wqe_daddr: u64,
    pub sq_dbrec: u64,
    pub sq_db: u64,
    pub cpu_proxy_db: u64,
    pub rq_rsvd_index: u64,
    pub rq_wqe_pi: u64,
    pub rq_wqe_daddr: u64,
    pub rq_dbrec: u64,
    pub sq_num: u32,
    pub sq_num_shift8: u32,
    pub sq_wqe_mask: u32,
    pub rq_wqe_mask: u32,
    pub rcv_wqe_size: u32,
    pub nic_handler: u32,
    pub sq_lock: i32,
    pub rq_lock: i32,
    pub cq_sq: GpuVerbsCq,
    pub cq_rq: GpuVerbsCq,
}

const _: () = assert!(std::mem::size_of::<GpuVerbsCq>() == 48);
const _: () = assert!(std::mem::size_of::<GpuVerbsQp>() == 216);

impl GpuVerbsCq {
    fn write(&self, b: &mut Vec<u8>) {
        for w in [self.cqe_daddr, self.dbrec, self.cqe_ci, self.cqe_rsvd] {
            b.extend_from_slice(&w.to_le_bytes());
        }
        for w in [self.cq_num, self.cqe_num, self.cqe_mask, self.lock as u32] {
            b.extend_from_slice(&w.to_le_bytes());
        }
    }
}

impl GpuVerbsQp {
    /// The handle as the bytes the header reads (little-endian).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(216);
        for w in [
            self.sq_rsvd_index,
            self.sq_ready_index,
            self.sq_wqe_pi,
            self.sq_wqe_daddr,
            self.sq_dbrec,
            self.sq_db,
            self.cpu_proxy_db,
            self.rq_rsvd_index,
            self.rq_wqe_pi,
            self.rq_wqe_daddr,
            self.rq_dbrec,
        ] {
            b.extend_from_slice(&w.to_le_bytes());
        }
        for w in [
            self.sq_num,
            self.sq_num_shift8,
            self.sq_wqe_mask,
            self.rq_wqe_mask,
            self.rcv_wqe_size,
            self.nic_handler,
            self.sq_lock as u32,
            self.rq_lock as u32,
        ] {
            b.extend_from_slice(&w.to_le_bytes());
        }
        self.cq_sq.write(&mut b);
        self.cq_rq.write(&mut b);
        b
    }
}

/// Where the proxy's slot sits in the handle's page, and the GPU's send producer index in the
/// handle.
const PROXY_AT: usize = 256;
const SQ_PI_AT: usize = 16;

/// A connected RC QP and its two CQs handed over to a GPU: kernels post, ring and poll through
/// the handle at [`VerbsQp::handle_addr`]; the host no longer touches them. Dropping it
/// destroys them (after the GPU is done: the caller's to ensure).
pub struct VerbsQp {
    // Field order is drop order: the QP before its CQs, the page last.
    qp: RcQp,
    send_cq: Cq,
    recv_cq: Cq,
    page: Arc<DmaBuf>,
    handler: NicHandler,
    rung: u64,
}

impl std::fmt::Debug for VerbsQp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VerbsQp")
            .field("qpn", &self.qp.qpn())
            .field("handler", &self.handler)
            .finish_non_exhaustive()
    }
}

/// A refused [`VerbsQp::export`]: why, and the queues, unchanged.
#[derive(Debug)]
pub struct VerbsExportError {
    pub error: GpuError,
    pub qp: RcQp,
    pub send_cq: Cq,
    pub recv_cq: Cq,
}

impl std::fmt::Display for VerbsExportError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "GPU export of QP {:#x}: {}", self.qp.qpn().0, self.error)
    }
}

impl std::error::Error for VerbsExportError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

impl VerbsQp {
    /// Hands `qp` (connected, idle, with a receive queue) and its send and receive CQs (64-byte
    /// CQEs, distinct, each at least as deep as its ring, their consumer indexes where the
    /// rings' producer indexes are: one CQE per WQE) over to a GPU, `handler` ringing its send
    /// doorbell.
    ///
    /// # Errors
    /// [`GpuError::Unsuitable`] naming the condition not met, [`GpuError::NoDoorbell`], memory
    /// for the handle. The error gives the queues back.
    pub fn export(
        qp: RcQp,
        send_cq: Cq,
        recv_cq: Cq,
        handler: NicHandler,
    ) -> Result<VerbsQp, Box<VerbsExportError>> {
        match Self::handle_for(&qp, &send_cq, &recv_cq, handler) {
            Ok((page, pi)) => Ok(VerbsQp {
                qp,
                send_cq,
                recv_cq,
                page,
                handler,
                rung: pi,
            }),
            Err(error) => Err(Box::new(VerbsExportError {
                error,
                qp,
                send_cq,
                recv_cq,
            })),
        }
    }

    fn handle_for(
        qp: &RcQp,
        send_cq: &Cq,
        recv_cq: &Cq,
        handler: NicHandler,
    ) -> Result<(Arc<DmaBuf>, u64), GpuError> {
        let wq = qp.descriptor();
        let (s, r) = (send_cq.descriptor(), recv_cq.descriptor());
        let unsuitable = |m: String| Err(GpuError::Unsuitable(m));
        if wq.send_cq != s.cqn || wq.recv_cq != r.cqn || s.cqn == r.cqn {
            return unsuitable(format!(
                "CQs {:#x} / {:#x}: the QP's own send and receive CQs, distinct, are needed",
                s.cqn, r.cqn
            ));
        }
        if s.cqe_size != 64 || r.cqe_size != 64 {
            return unsuitable("the GPU headers poll 64-byte CQEs".into());
        }
        if wq.rq_ring_addr == 0 {
            return unsuitable("the QP has no receive queue of its own".into());
        }
        if qp.send_outstanding() != 0 {
            return unsuitable(format!(
                "{} send WQEBBs still outstanding",
                qp.send_outstanding()
            ));
        }
        if (wq.sq_producer_index ^ s.consumer_index) & 0xffff != 0
            || (wq.rq_producer_index ^ r.consumer_index) & 0xffff != 0
        {
            return unsuitable(
                "ring producer indexes and CQ consumer indexes differ: the GPU counts one CQE per WQE"
                    .into(),
            );
        }
        let collapsed = |d: &crate::queues::CqDescriptor| {
            d.flags & crate::queues::descriptor::CQ_FLAG_COLLAPSED != 0
        };
        if collapsed(&r) {
            return unsuitable(
                "a receive CQ must not be collapsed: receives need their own CQEs".into(),
            );
        }
        // A collapsed send CQ never overruns: its one entry holds the latest completion.
        if (!collapsed(&s) && s.log_cqe_cnt < wq.log_sq_wqebb_cnt)
            || r.log_cqe_cnt < wq.log_rq_wqe_cnt
        {
            return unsuitable("a CQ smaller than its ring could overrun".into());
        }
        if handler == NicHandler::GpuSmDb && qp.uar().base().is_null() {
            return Err(GpuError::NoDoorbell);
        }
        let page = DmaBuf::new(4096)?;
        let sq_pi = u64::from(wq.sq_producer_index);
        let rq_pi = u64::from(wq.rq_producer_index);
        let cq = |d: &crate::queues::CqDescriptor| GpuVerbsCq {
            cqe_daddr: d.cq_ring_addr,
            dbrec: d.cq_dbr_addr,
            cqe_ci: u64::from(d.consumer_index),
            cqe_rsvd: u64::from(d.consumer_index),
            cq_num: d.cqn,
            cqe_num: if collapsed(d) { 0 } else { 1 << d.log_cqe_cnt },
            cqe_mask: if collapsed(d) {
                0
            } else {
                (1 << d.log_cqe_cnt) - 1
            },
            lock: 0,
        };
        let handle = GpuVerbsQp {
            sq_rsvd_index: sq_pi,
            sq_ready_index: sq_pi,
            sq_wqe_pi: sq_pi,
            sq_wqe_daddr: wq.sq_ring_addr,
            // Send counter at +4, receive counter at +0.
            sq_dbrec: wq.dbr_addr + 4,
            sq_db: match handler {
                NicHandler::GpuSmDb => wq.uar_doorbell_addr,
                NicHandler::CpuProxy => 0,
            },
            cpu_proxy_db: match handler {
                NicHandler::CpuProxy => page.addr() + PROXY_AT as u64,
                NicHandler::GpuSmDb => 0,
            },
            rq_rsvd_index: rq_pi,
            rq_wqe_pi: rq_pi,
            rq_wqe_daddr: wq.rq_ring_addr,
            rq_dbrec: wq.dbr_addr,
            sq_num: wq.num,
            sq_num_shift8: wq.num << 8,
            sq_wqe_mask: (1 << wq.log_sq_wqebb_cnt) - 1,
            rq_wqe_mask: (1 << wq.log_rq_wqe_cnt) - 1,
            rcv_wqe_size: wq.rq_wqe_stride,
            nic_handler: handler as u32,
            sq_lock: 0,
            rq_lock: 0,
            cq_sq: cq(&s),
            cq_rq: cq(&r),
        };
        page.write(0, &handle.to_bytes())?;
        page.write(PROXY_AT, &sq_pi.to_le_bytes())?;
        Ok((page, sq_pi))
    }

    /// The handle's address (`struct doca_gpu_dev_verbs_qp *` for the kernel).
    pub fn handle_addr(&self) -> u64 {
        self.page.addr()
    }

    /// The handle's page, to register with CUDA.
    pub fn page(&self) -> &Arc<DmaBuf> {
        &self.page
    }

    /// The QP (its number, for the peer; never post on it while the GPU drives it).
    pub fn qp(&self) -> &RcQp {
        &self.qp
    }

    /// The send and receive CQs (never poll them while the GPU does).
    pub fn cqs(&self) -> (&Cq, &Cq) {
        (&self.send_cq, &self.recv_cq)
    }

    /// The send CQ, for a host that consumes its completions while kernels never poll it (the
    /// DOCA 2.x DMA queue, [`super::Dma`]).
    pub(crate) fn send_cq_mut(&mut self) -> &mut Cq {
        &mut self.send_cq
    }

    /// The send producer index the GPU submitted last.
    pub fn producer_index(&self) -> u64 {
        self.page
            .atomic_u64(SQ_PI_AT)
            .map_or(0, |a| a.load(Ordering::Acquire))
    }

    /// The CPU proxy's step (DOCA's `doca_gpu_verbs_cpu_proxy_progress`): rings the send
    /// doorbell when the kernel handed over a producer index past the last one rung. Returns
    /// whether it rang.
    pub fn cpu_proxy_progress(&mut self) -> bool {
        super::proxy_progress(
            &mut self.rung,
            &self.page,
            PROXY_AT,
            self.qp.qpn().0,
            self.qp.uar(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handle_bytes_follow_the_repr_c_offsets() {
        let h = GpuVerbsQp {
            rq_dbrec: 0x1122,
            nic_handler: 2,
            cq_rq: GpuVerbsCq {
                cqe_mask: 0x3f,
                ..Default::default()
            },
            ..Default::default()
        };
        let b = h.to_bytes();
        assert_eq!(b.len(), 216);
        assert_eq!(std::mem::offset_of!(GpuVerbsQp, rq_dbrec), 80);
        assert_eq!(&b[80..88], &0x1122u64.to_le_bytes());
        assert_eq!(std::mem::offset_of!(GpuVerbsQp, nic_handler), 108);
        assert_eq!(b[108], 2);
        let mask_at =
            std::mem::offset_of!(GpuVerbsQp, cq_rq) + std::mem::offset_of!(GpuVerbsCq, cqe_mask);
        assert_eq!(mask_at, 208);
        assert_eq!(b[208], 0x3f);
    }
}
