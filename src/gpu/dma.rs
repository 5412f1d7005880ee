//! DOCA 2.x's GPU DMA queue (`struct doca_gpu_dma`, `doca_gpunetio_dev_dma.cuh`): kernels copy
//! between GPU buffers (`doca_gpu_dev_dma_memcpy`, then `doca_gpu_dev_dma_commit`), and the CPU
//! sees the copies complete (DOCA's progress engine; here [`Dma::progress`]).
//!
//! On mlx5 a copy is an RDMA WRITE of a QP connected to itself: the model's DMA queue is an RC
//! QP in force loopback whose peer is the QP itself, exported as the Verbs handle
//! ([`super::VerbsQp`]); `struct doca_gpu_dma` is that handle. The buffers' keys must allow
//! remote writes (the destination's is the WRITE's rkey).

use std::sync::Arc;

use crate::devx::Devx;
use crate::mem::{DmaBuf, Pd};
use crate::queues::qp::{QpConfig, RcConnect, RcPeer};
use crate::queues::{Cq, CqConfig, HostQueueMem, RcQp};
use crate::uar::UarPage;

use super::{GpuError, NicHandler, VerbsQp};

/// A DMA queue a kernel copies through; destroyed with its QP and CQs when dropped (after the
/// kernels using it have ended).
#[derive(Debug)]
pub struct Dma {
    qp: VerbsQp,
    done: u64,
}

impl Dma {
    /// A DMA queue of `2^log_depth` copies in flight, on `pd`, its doorbell rung as `handler`
    /// says (the CPU proxy: [`Dma::cpu_proxy_progress`]).
    ///
    /// # Errors
    /// Queue creation, the connection, or the export.
    pub fn new(
        ctx: &Arc<dyn Devx>,
        pd: &Arc<Pd>,
        uar: &Arc<UarPage>,
        log_depth: u8,
        handler: NicHandler,
    ) -> Result<Dma, GpuError> {
        let unsuitable = |e: crate::queues::QueueError| GpuError::Unsuitable(e.to_string());
        let cqc = CqConfig::new(log_depth);
        let cq = || -> Result<Cq, GpuError> {
            Cq::create(
                ctx,
                uar,
                HostQueueMem::alloc(ctx, cqc.ring_bytes()).map_err(unsuitable)?,
                &cqc,
            )
            .map_err(unsuitable)
        };
        let (send_cq, recv_cq) = (cq()?, cq()?);
        let qpc = QpConfig::new(log_depth, 0);
        let mut qp = RcQp::create(
            ctx,
            pd,
            uar,
            &send_cq,
            &recv_cq,
            HostQueueMem::alloc(ctx, qpc.ring_bytes()).map_err(unsuitable)?,
            &qpc,
        )
        .map_err(unsuitable)?;
        let own = qp.qpn();
        qp.connect(&RcConnect::new(RcPeer::Loopback { remote_qpn: own }))
            .map_err(unsuitable)?;
        let qp = VerbsQp::export(qp, send_cq, recv_cq, handler).map_err(|e| e.error)?;
        Ok(Dma { qp, done: 0 })
    }

    /// The handle's address (`struct doca_gpu_dma *` for the kernel), host memory.
    pub fn handle_addr(&self) -> u64 {
        self.qp.handle_addr()
    }

    /// The handle's page, to register with CUDA.
    pub fn page(&self) -> &Arc<DmaBuf> {
        self.qp.page()
    }

    /// The copies the kernels committed (the producer index).
    pub fn committed(&self) -> u64 {
        self.qp.producer_index()
    }

    /// The CPU proxy's step, for a queue exported with [`NicHandler::CpuProxy`].
    pub fn cpu_proxy_progress(&mut self) -> bool {
        self.qp.cpu_proxy_progress()
    }

    /// Consumes the completions that arrived (DOCA's progress engine on the DMA context) and
    /// returns how many copies are done in all.
    ///
    /// # Errors
    /// [`GpuError::Unsuitable`] with the completion's error when a copy failed (a key that
    /// does not allow the write, a range outside its region).
    pub fn progress(&mut self) -> Result<u64, GpuError> {
        while let Some(c) = self.qp.send_cq_mut().poll() {
            c.map_err(|e| GpuError::Unsuitable(format!("a copy failed: {e}")))?;
            self.done += 1;
        }
        Ok(self.done)
    }
}
