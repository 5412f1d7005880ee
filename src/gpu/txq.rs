//! An Ethernet send queue driven from a GPU ([`EthTxq`]) and its handle ([`GpuEthTxq`]).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::GpuError;
use crate::mem::DmaBuf;
use crate::queues::{Cq, EthSq};

/// Who rings the SQ's doorbell (`enum doca_gpu_dev_eth_nic_handler`; AUTO is the kernel's
/// template default, resolved to what the queue was exported with).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum NicHandler {
    /// The kernel writes its producer index to host memory; a CPU thread rings
    /// ([`EthTxq::cpu_proxy_progress`]). Works wherever the GPU reaches host memory.
    CpuProxy = 1,
    /// The kernel writes the UAR doorbell register itself (it must be mapped for the GPU).
    GpuSmDb = 2,
}

/// `struct doca_gpu_eth_txq` of `doca_gpunetio_eth_def.h`: the handle a kernel drives the
/// queue with. 120 bytes; the offsets are the header's (checked by the tests, which compile it).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct GpuEthTxq {
    pub wqe_addr: u64,
    pub wqe_db_rec: u64,
    pub wqe_db: u64,
    pub cpu_proxy_db: u64,
    pub cqe_addr: u64,
    pub cq_db_rec: u64,
    pub sq_rsvd_index: u64,
    pub sq_ready_index: u64,
    pub wqe_pi: u64,
    pub cqe_ci: u64,
    pub cq_rsvd_index: u64,
    pub sq_num_shift8: u32,
    pub wqe_mask: u32,
    pub cqe_num: u32,
    pub cqe_mask: u32,
    pub nic_handler: u32,
    pub lock: i32,
    pub cq_lock: i32,
    pub reserved: u32,
}

const _: () = assert!(std::mem::size_of::<GpuEthTxq>() == 120);

impl GpuEthTxq {
    /// The handle as the bytes the header reads (little-endian, as the GPU is).
    pub fn to_bytes(&self) -> [u8; 120] {
        let mut b = [0u8; 120];
        let words64 = [
            self.wqe_addr,
            self.wqe_db_rec,
            self.wqe_db,
            self.cpu_proxy_db,
            self.cqe_addr,
            self.cq_db_rec,
            self.sq_rsvd_index,
            self.sq_ready_index,
            self.wqe_pi,
            self.cqe_ci,
            self.cq_rsvd_index,
        ];
        for (i, w) in words64.iter().enumerate() {
            b[8 * i..8 * i + 8].copy_from_slice(&w.to_le_bytes());
        }
        let words32 = [
            self.sq_num_shift8,
            self.wqe_mask,
            self.cqe_num,
            self.cqe_mask,
            self.nic_handler,
            self.lock as u32,
            self.cq_lock as u32,
            self.reserved,
        ];
        for (i, w) in words32.iter().enumerate() {
            b[88 + 4 * i..92 + 4 * i].copy_from_slice(&w.to_le_bytes());
        }
        b
    }
}

/// A refused [`EthTxq::export`]: why, and the queues, unchanged.
#[derive(Debug)]
pub struct ExportError {
    pub error: GpuError,
    pub sq: EthSq,
    pub cq: Cq,
}

impl std::fmt::Display for ExportError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "GPU export of SQ {:#x}: {}", self.sq.sqn().0, self.error)
    }
}

impl std::error::Error for ExportError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

/// Where the handle and the proxy's slot sit in the export's page.
const HANDLE_AT: usize = 0;
const PROXY_AT: usize = 128;
/// Where the GPU's producer index sits in the handle (`wqe_pi`).
const WQE_PI_AT: usize = 64;

/// An Ethernet SQ and its CQ handed over to a GPU: the host no longer posts or polls them;
/// a kernel does, through the handle at [`EthTxq::handle_addr`]. Dropping it destroys the
/// queues (after the GPU is done with them: the caller's to ensure).
pub struct EthTxq {
    // Field order is drop order: the SQ before its CQ, the page last.
    sq: EthSq,
    cq: Cq,
    page: Arc<DmaBuf>,
    handler: NicHandler,
    /// The producer index the proxy last rang for.
    rung: u64,
}

impl std::fmt::Debug for EthTxq {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EthTxq")
            .field("sqn", &self.sq.sqn())
            .field("handler", &self.handler)
            .field("rung", &self.rung)
            .finish_non_exhaustive()
    }
}

impl EthTxq {
    /// Hands `sq` (whose completions go to `cq`) over to a GPU, with `handler` ringing its
    /// doorbell. Both must be idle (nothing posted and not yet completed); the queue's
    /// counters carry over.
    ///
    /// # Errors
    /// [`GpuError::Unsuitable`] for CQEs other than 64 bytes, a CQ not the SQ's, or work
    /// outstanding; [`GpuError::NoDoorbell`] for `GpuSmDb` without a mapped UAR page; memory
    /// for the handle. The error gives the queues back.
    pub fn export(sq: EthSq, cq: Cq, handler: NicHandler) -> Result<EthTxq, Box<ExportError>> {
        match Self::handle_for(&sq, &cq, handler) {
            Ok((page, pi)) => Ok(EthTxq {
                sq,
                cq,
                page,
                handler,
                rung: pi,
            }),
            Err(error) => Err(Box::new(ExportError { error, sq, cq })),
        }
    }

    /// Checks the queues and writes their handle into a fresh page; returns the page and the
    /// producer index the GPU starts at.
    fn handle_for(
        sq: &EthSq,
        cq: &Cq,
        handler: NicHandler,
    ) -> Result<(Arc<DmaBuf>, u64), GpuError> {
        let wq = sq.descriptor();
        let cqd = cq.descriptor();
        if cqd.cqe_size != 64 {
            return Err(GpuError::Unsuitable(format!(
                "CQEs of {} bytes; the GPU headers poll 64-byte CQEs",
                cqd.cqe_size
            )));
        }
        if wq.send_cq != cqd.cqn {
            return Err(GpuError::Unsuitable(format!(
                "CQ {:#x} is not the SQ's (its completions go to CQ {:#x})",
                cqd.cqn, wq.send_cq
            )));
        }
        let free = sq.free();
        let size = 1u32 << wq.log_sq_wqebb_cnt;
        if u32::from(free) != size {
            return Err(GpuError::Unsuitable(format!(
                "{} WQEBBs still outstanding on the SQ; complete them first",
                size - u32::from(free)
            )));
        }
        if handler == NicHandler::GpuSmDb && sq.uar().base().is_null() {
            return Err(GpuError::NoDoorbell);
        }
        let page = DmaBuf::new(4096)?;
        let pi = u64::from(wq.sq_producer_index);
        let ci = u64::from(cqd.consumer_index);
        let handle = GpuEthTxq {
            wqe_addr: wq.sq_ring_addr,
            // The send counter is the record's second word.
            wqe_db_rec: wq.dbr_addr + 4,
            wqe_db: match handler {
                NicHandler::GpuSmDb => wq.uar_doorbell_addr,
                NicHandler::CpuProxy => 0,
            },
            cpu_proxy_db: match handler {
                NicHandler::CpuProxy => page.addr() + PROXY_AT as u64,
                NicHandler::GpuSmDb => 0,
            },
            cqe_addr: cqd.cq_ring_addr,
            cq_db_rec: cqd.cq_dbr_addr,
            sq_rsvd_index: pi,
            sq_ready_index: pi,
            wqe_pi: pi,
            cqe_ci: ci,
            cq_rsvd_index: ci,
            sq_num_shift8: wq.num << 8,
            wqe_mask: size - 1,
            cqe_num: 1 << cqd.log_cqe_cnt,
            cqe_mask: (1 << cqd.log_cqe_cnt) - 1,
            nic_handler: handler as u32,
            lock: 0,
            cq_lock: 0,
            reserved: 0,
        };
        page.write(HANDLE_AT, &handle.to_bytes())?;
        page.write(PROXY_AT, &pi.to_le_bytes())?;
        Ok((page, pi))
    }

    /// The handle's address (`struct doca_gpu_eth_txq *` for the kernel): host memory, which
    /// the GPU reaches once the page is registered ([`EthTxq::page`]).
    pub fn handle_addr(&self) -> u64 {
        self.page.addr() + HANDLE_AT as u64
    }

    /// Who rings the doorbell.
    pub fn handler(&self) -> NicHandler {
        self.handler
    }

    /// The handle's page (handle and proxy slot), to register with CUDA.
    pub fn page(&self) -> &Arc<DmaBuf> {
        &self.page
    }

    /// The SQ (its number, its UAR; never post on it while the GPU drives it).
    pub fn sq(&self) -> &EthSq {
        &self.sq
    }

    /// The CQ (never poll it while the GPU does).
    pub fn cq(&self) -> &Cq {
        &self.cq
    }

    /// The producer index the GPU submitted last (`wqe_pi` of the handle).
    pub fn producer_index(&self) -> u64 {
        self.page
            .atomic_u64(HANDLE_AT + WQE_PI_AT)
            .map_or(0, |a| a.load(Ordering::Acquire))
    }

    /// The CPU proxy's step (DOCA's `doca_eth_txq_gpu_cpu_proxy_progress`): when the kernel
    /// handed over a producer index past the one rung last, rings the SQ's doorbell for it
    /// (the kernel wrote the doorbell record already). Returns whether it rang. Call it in a
    /// loop on a CPU thread while the kernel runs; cheap when there is nothing new.
    pub fn cpu_proxy_progress(&mut self) -> bool {
        super::proxy_progress(
            &mut self.rung,
            &self.page,
            PROXY_AT,
            self.sq.sqn().0,
            self.sq.uar(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handle_bytes_follow_the_repr_c_offsets() {
        let h = GpuEthTxq {
            wqe_pi: 0x1122_3344_5566_7788,
            sq_num_shift8: 0x0010_0100,
            nic_handler: 2,
            cq_lock: -1,
            ..Default::default()
        };
        let b = h.to_bytes();
        assert_eq!(std::mem::offset_of!(GpuEthTxq, wqe_pi), WQE_PI_AT);
        assert_eq!(&b[64..72], &0x1122_3344_5566_7788u64.to_le_bytes());
        assert_eq!(std::mem::offset_of!(GpuEthTxq, sq_num_shift8), 88);
        assert_eq!(&b[88..92], &0x0010_0100u32.to_le_bytes());
        assert_eq!(std::mem::offset_of!(GpuEthTxq, nic_handler), 104);
        assert_eq!(b[104], 2);
        assert_eq!(std::mem::offset_of!(GpuEthTxq, cq_lock), 112);
        assert_eq!(&b[112..116], &[0xff; 4]);
    }
}
