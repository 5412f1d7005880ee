//! Device barriers: what keeps host-memory and MMIO stores in the order the device must see
//! them, per architecture.
//!
//! These are not `core::sync::atomic::fence`: that orders memory between CPUs (a locked
//! instruction on x86_64, `dmb ish` on aarch64) and says nothing about a device on the PCIe
//! side, which is in the *outer shareable* domain on aarch64 and sees write-combining buffers
//! on x86_64. The choices follow DPDK (`rte_io_wmb`, `rte_io_rmb`, `rte_wmb`) and rdma-core
//! (`udma_to_device_barrier`, `udma_from_device_barrier`, `mmio_flush_writes`) for the same
//! hardware; docs/sources.md §6.
//!
//! Every primitive is also a compiler barrier: `asm!` without `nomem` may read and write any
//! memory, so the compiler moves no load or store across it.
//!
//! Other architectures are refused at build time rather than given a guess.

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
compile_error!("mlx5-dpa's device barriers are written for x86_64 and aarch64 only");

/// Orders the CPU's earlier stores to DMA memory (WQEs, doorbell records, arm words) before
/// its later stores that the device may act on (another record, or an MMIO doorbell to an
/// uncached page).
///
/// - x86_64: stores to write-back memory and to uncached MMIO are not reordered with each
///   other (TSO), so only the compiler must be stopped.
/// - aarch64: `dmb oshst`: all earlier stores complete in the outer shareable domain before
///   later stores.
#[inline(always)]
pub fn dma_wmb() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: an empty asm block: no instruction, only a compiler barrier.
    unsafe {
        core::arch::asm!("", options(nostack, preserves_flags));
    }
    #[cfg(target_arch = "aarch64")]
    // SAFETY: `dmb oshst` only orders memory accesses; it has no other effect.
    unsafe {
        core::arch::asm!("dmb oshst", options(nostack, preserves_flags));
    }
}

/// Orders the CPU's load of a device-written flag (a CQE's owner bit, an EQE's owner bit)
/// before its later loads of the rest of that entry, so no stale bytes are read.
///
/// - x86_64: loads are not reordered with other loads: compiler barrier only.
/// - aarch64: `dmb oshld`.
#[inline(always)]
pub fn dma_rmb() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: an empty asm block: no instruction, only a compiler barrier.
    unsafe {
        core::arch::asm!("", options(nostack, preserves_flags));
    }
    #[cfg(target_arch = "aarch64")]
    // SAFETY: `dmb oshld` only orders memory accesses.
    unsafe {
        core::arch::asm!("dmb oshld", options(nostack, preserves_flags));
    }
}

/// Before the first store to a write-combining (BlueFlame) page: earlier stores to ordinary
/// memory must be globally visible first, since write-combining stores are weakly ordered.
///
/// - x86_64: `sfence`.
/// - aarch64: `dmb oshst` (Device-GRE stores are ordered after it).
#[inline(always)]
pub fn wc_start() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `sfence` only orders stores.
    unsafe {
        core::arch::asm!("sfence", options(nostack, preserves_flags));
    }
    #[cfg(target_arch = "aarch64")]
    // SAFETY: `dmb oshst` only orders memory accesses.
    unsafe {
        core::arch::asm!("dmb oshst", options(nostack, preserves_flags));
    }
}

/// After the last store to a write-combining page: drain the write-combining buffer so the
/// doorbell (or BlueFlame copy) reaches the device now and in one burst.
///
/// - x86_64: `sfence`.
/// - aarch64: `dsb st`.
#[inline(always)]
pub fn wc_flush() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `sfence` only orders stores.
    unsafe {
        core::arch::asm!("sfence", options(nostack, preserves_flags));
    }
    #[cfg(target_arch = "aarch64")]
    // SAFETY: `dsb st` waits for stores to complete; no other effect.
    unsafe {
        core::arch::asm!("dsb st", options(nostack, preserves_flags));
    }
}
