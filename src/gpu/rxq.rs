//! An Ethernet receive queue driven from a GPU ([`EthRxq`]) and its handle ([`GpuEthRxq`]).

use std::sync::Arc;

use super::GpuError;
use crate::mem::{DmaBuf, MemoryRegion};
use crate::queues::{Cq, Rq};

/// `struct doca_gpu_eth_rxq` of `doca_gpunetio_eth_def.h`. 80 bytes; the header's offsets
/// (checked by the tests, which compile it).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct GpuEthRxq {
    pub pkt_addr: u64,
    pub pkt_num: u64,
    pub max_pkt_sz: u64,
    pub wqe_db_rec: u64,
    pub wqe_pi: u64,
    pub cqe_addr: u64,
    pub cq_db_rec: u64,
    pub cqe_ci: u64,
    pub cqe_num: u32,
    pub cqe_mask: u32,
    pub pkt_mkey: u32,
    pub reserved: u32,
    /// The DOCA 2.x buffer of each stride (`struct doca_gpu_buf`, [`GPU_BUF_SIZE`] bytes each,
    /// [`super::GpuBuf`]): what `doca_gpu_dev_eth_rxq_get_buf` hands out, and where a receive
    /// records each packet's length and timestamp.
    pub bufs: u64,
}

const _: () = assert!(std::mem::size_of::<GpuEthRxq>() == 88);

/// Where the stride buffers start in the handle's pages.
const BUFS_AT: usize = 128;

/// Bytes of a `struct doca_gpu_buf`.
pub const GPU_BUF_SIZE: usize = 32;

impl GpuEthRxq {
    /// The handle as the bytes the header reads (little-endian).
    pub fn to_bytes(&self) -> [u8; 88] {
        let mut b = [0u8; 88];
        let w64 = [
            self.pkt_addr,
            self.pkt_num,
            self.max_pkt_sz,
            self.wqe_db_rec,
            self.wqe_pi,
            self.cqe_addr,
            self.cq_db_rec,
            self.cqe_ci,
        ];
        for (i, w) in w64.iter().enumerate() {
            b[8 * i..8 * i + 8].copy_from_slice(&w.to_le_bytes());
        }
        for (i, w) in [self.cqe_num, self.cqe_mask, self.pkt_mkey, self.reserved]
            .iter()
            .enumerate()
        {
            b[64 + 4 * i..68 + 4 * i].copy_from_slice(&w.to_le_bytes());
        }
        b[80..88].copy_from_slice(&self.bufs.to_le_bytes());
        b
    }
}

/// An RQ and its CQ handed over to a GPU, over a packet buffer cut into strides: one receive
/// WQE per stride, posted here once; the kernel's receive consumes completions in order and
/// posts the same WQEs again by moving the receive counter. Packet `k` is in stride
/// `k % strides`.
pub struct EthRxq {
    // Field order is drop order: the RQ before its CQ, the buffer and page last.
    rq: Rq,
    cq: Cq,
    pkts: MemoryRegion,
    page: Arc<DmaBuf>,
    strides: usize,
    stride: usize,
}

impl std::fmt::Debug for EthRxq {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EthRxq")
            .field("strides", &self.strides)
            .field("stride", &self.stride)
            .finish_non_exhaustive()
    }
}

/// A refused [`EthRxq::export`]: why, and what was handed in, unchanged.
#[derive(Debug)]
pub struct RxExportError {
    pub error: GpuError,
    pub rq: Rq,
    pub cq: Cq,
    pub pkts: MemoryRegion,
}

impl std::fmt::Display for RxExportError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "GPU export of an RQ: {}", self.error)
    }
}

impl std::error::Error for RxExportError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

impl EthRxq {
    /// Hands `rq` (completing into `cq`) over to a GPU with `pkts` cut into strides of
    /// `stride` bytes, one per receive WQE of the RQ (so `pkts` holds at least
    /// `rq size * stride` bytes). The RQ must be empty and take one scatter entry; the CQ must
    /// hold a completion for every stride. Posts the WQEs and publishes them.
    ///
    /// # Errors
    /// [`GpuError::Unsuitable`] (with the reason) for the conditions above; memory for the
    /// handle. The error gives everything back.
    pub fn export(
        mut rq: Rq,
        cq: Cq,
        pkts: MemoryRegion,
        stride: usize,
    ) -> Result<EthRxq, Box<RxExportError>> {
        let checked = Self::check(&rq, &cq, &pkts, stride);
        let strides = match checked {
            Ok(n) => n,
            Err(error) => {
                return Err(Box::new(RxExportError {
                    error,
                    rq,
                    cq,
                    pkts,
                }))
            }
        };
        let posted = (|| -> Result<Arc<DmaBuf>, GpuError> {
            for i in 0..strides {
                let sge = pkts.sge(i * stride, stride)?;
                rq.post_recv(&[sge], i as u64)
                    .map_err(|e| GpuError::Unsuitable(e.to_string()))?;
            }
            rq.ring_doorbell();
            let wq = rq.descriptor(&cq);
            let cqd = cq.descriptor();
            let handle = GpuEthRxq {
                pkt_addr: pkts.sge(0, stride)?.addr,
                pkt_num: strides as u64,
                max_pkt_sz: stride as u64,
                // The receive counter is the record's first word.
                wqe_db_rec: wq.dbr_addr,
                wqe_pi: u64::from(wq.rq_producer_index),
                cqe_addr: cqd.cq_ring_addr,
                cq_db_rec: cqd.cq_dbr_addr,
                cqe_ci: u64::from(cqd.consumer_index),
                cqe_num: 1 << cqd.log_cqe_cnt,
                cqe_mask: (1 << cqd.log_cqe_cnt) - 1,
                pkt_mkey: pkts.lkey().0.to_be(),
                reserved: 0,
                bufs: 0,
            };
            // The handle, then a DOCA 2.x buffer per stride, in one page run.
            let page = DmaBuf::new((BUFS_AT + strides * GPU_BUF_SIZE).next_multiple_of(4096))?;
            let mut table = Vec::with_capacity(strides * GPU_BUF_SIZE);
            for i in 0..strides {
                let addr = pkts.sge(i * stride, stride)?.addr;
                table.extend_from_slice(&super::GpuBuf::new(addr, handle.pkt_mkey).to_bytes());
            }
            page.write(BUFS_AT, &table)?;
            let handle = GpuEthRxq {
                bufs: page.addr() + BUFS_AT as u64,
                ..handle
            };
            page.write(0, &handle.to_bytes())?;
            Ok(page)
        })();
        match posted {
            Ok(page) => Ok(EthRxq {
                rq,
                cq,
                pkts,
                page,
                strides,
                stride,
            }),
            Err(error) => Err(Box::new(RxExportError {
                error,
                rq,
                cq,
                pkts,
            })),
        }
    }

    /// The number of strides the export can use, or why not.
    fn check(rq: &Rq, cq: &Cq, pkts: &MemoryRegion, stride: usize) -> Result<usize, GpuError> {
        let wq = rq.descriptor(cq);
        let cqd = cq.descriptor();
        let unsuitable = |m: String| Err(GpuError::Unsuitable(m));
        if rq.cqn().0 != cqd.cqn || cqd.cqe_size != 64 {
            return unsuitable(format!(
                "CQ {:#x} ({} byte CQEs): the GPU headers poll the RQ's own CQ of 64-byte CQEs",
                cqd.cqn, cqd.cqe_size
            ));
        }
        let strides = 1usize << wq.log_rq_wqe_cnt;
        if usize::from(rq.free()) != strides {
            return unsuitable(format!(
                "{} receives still posted on the RQ",
                strides - usize::from(rq.free())
            ));
        }
        if wq.rq_wqe_stride != 16 {
            return unsuitable(format!(
                "the RQ takes {} scatter entries; one per stride is needed",
                wq.rq_wqe_stride / 16
            ));
        }
        if (1usize << cqd.log_cqe_cnt) < strides {
            return unsuitable(format!(
                "a CQ of {} for {strides} strides would overrun",
                1usize << cqd.log_cqe_cnt
            ));
        }
        if stride == 0
            || stride
                .checked_mul(strides)
                .is_none_or(|b| b > pkts.buf().len())
        {
            return unsuitable(format!(
                "{strides} strides of {stride} bytes do not fit the {} byte buffer",
                pkts.buf().len()
            ));
        }
        Ok(strides)
    }

    /// The handle's address (`struct doca_gpu_eth_rxq *` for the kernel), host memory.
    pub fn handle_addr(&self) -> u64 {
        self.page.addr()
    }

    /// The handle's page, to register with CUDA.
    pub fn page(&self) -> &Arc<DmaBuf> {
        &self.page
    }

    /// The packet buffer (stride `k % strides` holds packet `k`).
    pub fn packets(&self) -> &MemoryRegion {
        &self.pkts
    }

    /// Strides (receive WQEs) and their size in bytes.
    pub fn strides(&self) -> (usize, usize) {
        (self.strides, self.stride)
    }

    /// The RQ (never post on it while the GPU drives it).
    pub fn rq(&self) -> &Rq {
        &self.rq
    }

    /// The CQ (never poll it while the GPU does).
    pub fn cq(&self) -> &Cq {
        &self.cq
    }

    /// Packets the GPU has received so far (`cqe_ci` of the handle).
    pub fn received(&self) -> u64 {
        self.page
            .atomic_u64(56)
            .map_or(0, |a| a.load(std::sync::atomic::Ordering::Acquire))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handle_bytes_follow_the_repr_c_offsets() {
        let h = GpuEthRxq {
            cqe_ci: 0x0102_0304_0506_0708,
            pkt_mkey: 0xaabb_ccdd,
            ..Default::default()
        };
        let b = h.to_bytes();
        assert_eq!(std::mem::offset_of!(GpuEthRxq, cqe_ci), 56);
        assert_eq!(&b[56..64], &0x0102_0304_0506_0708u64.to_le_bytes());
        assert_eq!(std::mem::offset_of!(GpuEthRxq, pkt_mkey), 72);
        assert_eq!(&b[72..76], &0xaabb_ccddu32.to_le_bytes());
    }
}
