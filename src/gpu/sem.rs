//! GPUNetIO semaphores ([`Semaphore`]): a ring of items in host memory the GPU reaches
//! (DOCA's `DOCA_GPU_MEM_TYPE_CPU_GPU`), each a status, packet info and an optional block of
//! application-defined "custom info". A kernel fills an item and sets it READY
//! (`doca_gpunetio_dev_sem.cuh`); a CPU thread waits for READY, reads, and sets it DONE or
//! FREE (DOCA's `doca_gpu_semaphore_get_status` / `_get_custom_info_addr` and friends).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::GpuError;
use crate::mem::DmaBuf;

/// `enum doca_gpu_semaphore_status` (DOCA's values).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum SemaphoreStatus {
    Free = 0,
    Ready = 1,
    Done = 2,
    Hold = 3,
    Error = 4,
    Exit = 5,
}

impl SemaphoreStatus {
    fn from_u32(v: u32) -> Option<SemaphoreStatus> {
        Some(match v {
            0 => SemaphoreStatus::Free,
            1 => SemaphoreStatus::Ready,
            2 => SemaphoreStatus::Done,
            3 => SemaphoreStatus::Hold,
            4 => SemaphoreStatus::Error,
            5 => SemaphoreStatus::Exit,
            _ => return None,
        })
    }
}

/// `struct doca_gpu_semaphore_gpu`: the semaphore as kernels see it. 24 bytes.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct GpuSemaphore {
    pub items: u64,
    pub custom_info: u64,
    pub num_items: u32,
    pub custom_info_size: u32,
}

const _: () = assert!(std::mem::size_of::<GpuSemaphore>() == 24);

/// Bytes of one item (`struct doca_gpu_semaphore_item`).
const ITEM: usize = 16;
/// Where the items start in the buffer (after the 24-byte handle, aligned).
const ITEMS_AT: usize = 64;

/// A semaphore of `items` items in one host buffer: the kernel's handle, the items, and the
/// custom info blocks.
#[derive(Debug)]
pub struct Semaphore {
    buf: Arc<DmaBuf>,
    items: u32,
    info_at: usize,
    info_size: usize,
}

impl Semaphore {
    /// `items` items (at least 1, at most 2^20), each with `custom_info_size` bytes of custom
    /// info (0: none; at most 64 KiB), all FREE.
    ///
    /// # Errors
    /// Sizes out of range, or no memory.
    pub fn new(items: u32, custom_info_size: usize) -> Result<Semaphore, GpuError> {
        if !(1..=1 << 20).contains(&items) || custom_info_size > 1 << 16 {
            return Err(GpuError::Unsuitable(format!(
                "a semaphore of {items} items of {custom_info_size} bytes (1..=2^20 items, at most 64 KiB each)"
            )));
        }
        let n = items as usize;
        // Custom info 16-byte aligned, as a struct of the kernel's might need.
        let info_at = (ITEMS_AT + n * ITEM).next_multiple_of(64);
        let info_size = custom_info_size.next_multiple_of(16);
        let buf = DmaBuf::new(info_at + n * info_size)?;
        let handle = GpuSemaphore {
            items: buf.addr() + ITEMS_AT as u64,
            custom_info: if custom_info_size > 0 {
                buf.addr() + info_at as u64
            } else {
                0
            },
            num_items: items,
            custom_info_size: info_size as u32,
        };
        let mut b = [0u8; 24];
        b[..8].copy_from_slice(&handle.items.to_le_bytes());
        b[8..16].copy_from_slice(&handle.custom_info.to_le_bytes());
        b[16..20].copy_from_slice(&handle.num_items.to_le_bytes());
        b[20..24].copy_from_slice(&handle.custom_info_size.to_le_bytes());
        buf.write(0, &b)?;
        Ok(Semaphore {
            buf,
            items,
            info_at,
            info_size: if custom_info_size > 0 { info_size } else { 0 },
        })
    }

    /// The handle's address (`struct doca_gpu_semaphore_gpu *` for the kernel).
    pub fn handle_addr(&self) -> u64 {
        self.buf.addr()
    }

    /// The buffer (handle, items, custom info), to register with CUDA.
    pub fn buf(&self) -> &Arc<DmaBuf> {
        &self.buf
    }

    /// Items in the ring.
    pub fn len(&self) -> u32 {
        self.items
    }

    /// Never: a semaphore has at least one item.
    pub fn is_empty(&self) -> bool {
        self.items == 0
    }

    fn item(&self, idx: u32) -> Result<usize, GpuError> {
        if idx >= self.items {
            return Err(GpuError::Unsuitable(format!(
                "semaphore item {idx} of {}",
                self.items
            )));
        }
        Ok(ITEMS_AT + idx as usize * ITEM)
    }

    /// Item `idx`'s status (`doca_gpu_semaphore_get_status`); an acquire, so what the kernel
    /// wrote before setting it is visible after.
    ///
    /// # Errors
    /// No such item, or a status value DOCA does not define.
    pub fn status(&self, idx: u32) -> Result<SemaphoreStatus, GpuError> {
        let at = self.item(idx)?;
        // The status is the low half of the item's first 8 bytes (little-endian).
        let w = self.buf.atomic_u64(at)?.load(Ordering::Acquire);
        let v = w as u32;
        SemaphoreStatus::from_u32(v)
            .ok_or_else(|| GpuError::Unsuitable(format!("semaphore item {idx}: status {v}")))
    }

    /// Sets item `idx`'s status (`doca_gpu_semaphore_set_status`), after everything written
    /// before; the packet info is kept.
    ///
    /// # Errors
    /// No such item.
    pub fn set_status(&self, idx: u32, status: SemaphoreStatus) -> Result<(), GpuError> {
        let at = self.item(idx)?;
        let a = self.buf.atomic_u64(at)?;
        let mut cur = a.load(Ordering::Relaxed);
        loop {
            let new = (cur & !0xffff_ffff) | status as u64;
            match a.compare_exchange_weak(cur, new, Ordering::Release, Ordering::Relaxed) {
                Ok(_) => return Ok(()),
                Err(now) => cur = now,
            }
        }
    }

    /// Item `idx`'s packet info: (number of packets, buffer index).
    ///
    /// # Errors
    /// No such item.
    pub fn packet_info(&self, idx: u32) -> Result<(u32, u64), GpuError> {
        let at = self.item(idx)?;
        let w0 = self.buf.atomic_u64(at)?.load(Ordering::Acquire);
        let w1 = self.buf.atomic_u64(at + 8)?.load(Ordering::Acquire);
        Ok(((w0 >> 32) as u32, w1))
    }

    /// Item `idx`'s custom info, copied out (`doca_gpu_semaphore_get_custom_info_addr`, read).
    ///
    /// # Errors
    /// No such item, or the semaphore has no custom info.
    pub fn custom_info(&self, idx: u32) -> Result<Vec<u8>, GpuError> {
        self.item(idx)?;
        if self.info_size == 0 {
            return Err(GpuError::Unsuitable(
                "the semaphore has no custom info".into(),
            ));
        }
        Ok(self
            .buf
            .to_vec(self.info_at + idx as usize * self.info_size, self.info_size)?)
    }

    /// Writes item `idx`'s custom info (from its start).
    ///
    /// # Errors
    /// No such item, no custom info, or `bytes` longer than it.
    pub fn set_custom_info(&self, idx: u32, bytes: &[u8]) -> Result<(), GpuError> {
        self.item(idx)?;
        if bytes.len() > self.info_size {
            return Err(GpuError::Unsuitable(format!(
                "{} bytes of custom info; items hold {}",
                bytes.len(),
                self.info_size
            )));
        }
        Ok(self
            .buf
            .write(self.info_at + idx as usize * self.info_size, bytes)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_start_free_and_keep_their_info_across_status_changes() {
        let s = Semaphore::new(4, 20).unwrap();
        assert_eq!(s.status(3).unwrap(), SemaphoreStatus::Free);
        s.set_status(2, SemaphoreStatus::Ready).unwrap();
        assert_eq!(s.status(2).unwrap(), SemaphoreStatus::Ready);
        assert_eq!(s.packet_info(2).unwrap(), (0, 0));
        s.set_custom_info(1, b"hello").unwrap();
        assert_eq!(&s.custom_info(1).unwrap()[..5], b"hello");
        assert_eq!(s.custom_info(1).unwrap().len(), 32, "rounded up to 16");
        assert!(s.status(4).is_err());
        assert!(s.set_custom_info(0, &[0; 33]).is_err());
        assert!(Semaphore::new(0, 0).is_err());
        assert!(Semaphore::new(1, 0).unwrap().custom_info(0).is_err());
    }
}
