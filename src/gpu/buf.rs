//! DOCA 2.x's GPU buffers (`struct doca_gpu_buf`, `struct doca_gpu_buf_arr`): what the 2.x
//! device API hands kernels for packets to send (`doca_gpu_dev_buf_get_buf` on an array the
//! host made) and for packets received (`doca_gpu_dev_eth_rxq_get_buf`, one buffer per stride
//! of an exported RQ, [`super::EthRxq`]). The layouts are this project's; kernels reach them
//! only through the header's accessors (`doca_gpunetio_dev_buf.cuh`).

use std::sync::Arc;

use crate::mem::{DmaBuf, MemoryRegion, Rkey};

use super::rxq::GPU_BUF_SIZE;
use super::GpuError;

/// `struct doca_gpu_buf` as kernels read it (32 bytes): a buffer's address and key, and, for a
/// received packet, its length and timestamp as the receive recorded them.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GpuBuf {
    pub addr: u64,
    /// The key, big-endian (as WQEs carry it).
    pub mkey: u32,
    pub bytes: u32,
    pub timestamp: u64,
    pub reserved: u64,
}

const _: () = assert!(std::mem::size_of::<GpuBuf>() == GPU_BUF_SIZE);

impl GpuBuf {
    /// A buffer at `addr` with key `mkey_be` (big-endian).
    pub fn new(addr: u64, mkey_be: u32) -> GpuBuf {
        GpuBuf {
            addr,
            mkey: mkey_be,
            ..GpuBuf::default()
        }
    }

    /// The bytes the header reads (little-endian fields).
    pub fn to_bytes(&self) -> [u8; 32] {
        let mut b = [0u8; 32];
        b[0..8].copy_from_slice(&self.addr.to_le_bytes());
        b[8..12].copy_from_slice(&self.mkey.to_le_bytes());
        b[12..16].copy_from_slice(&self.bytes.to_le_bytes());
        b[16..24].copy_from_slice(&self.timestamp.to_le_bytes());
        b[24..32].copy_from_slice(&self.reserved.to_le_bytes());
        b
    }

    /// The buffer from the bytes of a table entry.
    pub fn from_bytes(b: &[u8; 32]) -> GpuBuf {
        let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap_or_default());
        let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap_or_default());
        GpuBuf {
            addr: u64_at(0),
            mkey: u32_at(8),
            bytes: u32_at(12),
            timestamp: u64_at(16),
            reserved: u64_at(24),
        }
    }
}

/// Where the buffers start in a [`BufArr`]'s pages (after the 16-byte handle).
const BUFS_AT: usize = 64;

/// A GPU buffer array (DOCA 2.x `doca_buf_arr` with its GPU handle, `struct doca_gpu_buf_arr`):
/// a memory region cut into `num` buffers of `size` bytes, which kernels take by index
/// (`doca_gpu_dev_buf_get_buf`) to fill and send. The array keeps the region.
pub struct BufArr {
    // Field order is drop order: the handle's pages, then the region.
    page: Arc<DmaBuf>,
    /// The local region, or none for a peer's memory ([`BufArr::remote`]).
    region: Option<MemoryRegion>,
    num: usize,
    size: usize,
}

impl std::fmt::Debug for BufArr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BufArr")
            .field("num", &self.num)
            .field("size", &self.size)
            .finish_non_exhaustive()
    }
}

impl BufArr {
    /// Cuts `region` into `num` buffers of `size` bytes (buffer `i` at `i * size`).
    ///
    /// # Errors
    /// [`GpuError::Unsuitable`] when `num` or `size` is 0 or the buffers overrun the region;
    /// memory for the handle.
    pub fn new(region: MemoryRegion, num: usize, size: usize) -> Result<BufArr, GpuError> {
        Self::check_shape(num, size, region.len())?;
        let key = region.lkey().0.to_be();
        let mut addrs = Vec::with_capacity(num);
        for i in 0..num {
            addrs.push(region.sge(i * size, size)?.addr);
        }
        let page = Self::table(&addrs, key)?;
        Ok(BufArr {
            page,
            region: Some(region),
            num,
            size,
        })
    }

    /// An array over a peer's memory (DOCA 2.x: a `doca_buf_arr` over the memory map the peer
    /// exported): `num` buffers of `size` bytes from `addr`, with the peer's key `rkey`. The
    /// kernels use its buffers as the remote side of RDMA writes and reads
    /// (`doca_gpunetio_dev_rdma.cuh`); the peer's NIC checks the range and the key.
    ///
    /// # Errors
    /// [`GpuError::Unsuitable`] when `num` or `size` is 0 or the range wraps; memory for the
    /// handle.
    pub fn remote(addr: u64, rkey: Rkey, num: usize, size: usize) -> Result<BufArr, GpuError> {
        let len = num
            .checked_mul(size)
            .filter(|&n| addr.checked_add(n as u64).is_some())
            .ok_or_else(|| {
                GpuError::Unsuitable(format!("{num} buffers of {size} bytes from {addr:#x} wrap"))
            })?;
        Self::check_shape(num, size, len)?;
        let addrs: Vec<u64> = (0..num).map(|i| addr + (i * size) as u64).collect();
        let page = Self::table(&addrs, rkey.0.to_be())?;
        Ok(BufArr {
            page,
            region: None,
            num,
            size,
        })
    }

    fn check_shape(num: usize, size: usize, len: usize) -> Result<(), GpuError> {
        if num == 0 || size == 0 {
            return Err(GpuError::Unsuitable(
                "a buffer array needs buffers of some size".into(),
            ));
        }
        if num.checked_mul(size).is_none_or(|n| n > len) {
            return Err(GpuError::Unsuitable(format!(
                "{num} buffers of {size} bytes overrun the region of {len}"
            )));
        }
        Ok(())
    }

    /// The handle and its buffer table, one buffer per address, all with key `key_be`.
    fn table(addrs: &[u64], key_be: u32) -> Result<Arc<DmaBuf>, GpuError> {
        let page = DmaBuf::new((BUFS_AT + addrs.len() * GPU_BUF_SIZE).next_multiple_of(4096))?;
        let mut table = Vec::with_capacity(addrs.len() * GPU_BUF_SIZE);
        for &addr in addrs {
            table.extend_from_slice(&GpuBuf::new(addr, key_be).to_bytes());
        }
        page.write(BUFS_AT, &table)?;
        let mut handle = [0u8; 16];
        handle[0..8].copy_from_slice(&(page.addr() + BUFS_AT as u64).to_le_bytes());
        handle[8..16].copy_from_slice(&(addrs.len() as u64).to_le_bytes());
        page.write(0, &handle)?;
        Ok(page)
    }

    /// The handle's address (`struct doca_gpu_buf_arr *` for the kernel), host memory.
    pub fn handle_addr(&self) -> u64 {
        self.page.addr()
    }

    /// The handle's pages, to register with CUDA.
    pub fn page(&self) -> &Arc<DmaBuf> {
        &self.page
    }

    /// The local region the buffers are cut from (none for a peer's memory).
    pub fn region(&self) -> Option<&MemoryRegion> {
        self.region.as_ref()
    }

    /// Buffers and their size in bytes.
    pub fn shape(&self) -> (usize, usize) {
        (self.num, self.size)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_buffer_is_its_bytes_and_back() {
        let b = GpuBuf {
            addr: 0x1122_3344_5566_7788,
            mkey: 0xaabb_ccdd,
            bytes: 1514,
            timestamp: 0x0102_0304_0506_0708,
            reserved: 0,
        };
        let raw = b.to_bytes();
        assert_eq!(&raw[0..8], &0x1122_3344_5566_7788u64.to_le_bytes());
        assert_eq!(&raw[8..12], &0xaabb_ccddu32.to_le_bytes());
        assert_eq!(&raw[12..16], &1514u32.to_le_bytes());
        assert_eq!(GpuBuf::from_bytes(&raw), b);
        assert_eq!(std::mem::offset_of!(GpuBuf, timestamp), 16);
    }
}
