//! GPU-driven queues, as DOCA GPUNetIO has them: a CUDA kernel builds send WQEs, updates the
//! doorbell record, rings the doorbell (or has a CPU thread ring it) and polls completions
//! itself, with the driver's queues and the device-side headers in [`HEADERS`].
//!
//! What is here without any CUDA (always built):
//! - [`EthTxq`]: an Ethernet SQ and its CQ handed over to a GPU. It fills in the queue handle
//!   the kernel gets (`struct doca_gpu_eth_txq`, mirrored by [`GpuEthTxq`]) and runs the CPU
//!   proxy ([`EthTxq::cpu_proxy_progress`], DOCA's `doca_eth_txq_gpu_cpu_proxy_progress`) that
//!   rings doorbells for kernels that hand their producer index to the CPU.
//! - [`EthRxq`]: an RQ and its CQ over a packet buffer cut into strides, received into by a
//!   kernel (`doca_gpu_dev_eth_rxq_recv`).
//! - [`VerbsQp`]: a connected RC QP and its CQs, driven by a kernel through the Verbs headers
//!   (put, put with signal, get, send, receive, completion waits), doorbells rung by the
//!   kernel or the CPU proxy.
//! - [`Semaphore`]: GPUNetIO semaphores (items with a status, packet info and custom info) in
//!   host memory, through which a kernel tells a CPU thread what it received.
//! - [`HEADERS`]: `doca_gpunetio_eth_def.h`, `doca_gpunetio_dev_eth_common.cuh`,
//!   `doca_gpunetio_dev_eth_txq.cuh`, `doca_gpunetio_dev_eth_rxq.cuh` and
//!   `doca_gpunetio_dev_sem.cuh`, written from NVIDIA's public API reference. They build
//!   with nvcc, with NVRTC (no system headers) and as host C++: the project's tests compile
//!   them with g++ and run the send path on CPU threads against the device model, the WQEs
//!   checked byte for byte against `EthSq::post_send`'s.
//!
//! With feature `gpu` (`cuda`): CUDA through cudarc, loaded at run time: a probe that says
//! why there is no GPU (never a panic), queue memory registered with CUDA, NVRTC compilation
//! with these headers, and kernel launches.
//!
//! Addresses in a handle are the ones the GPU uses. For queue memory in host memory
//! registered with `cuMemHostRegister` (unified addressing), that is the host address.

pub mod buf;
pub mod dma;
pub mod rdma;
pub mod rxq;
pub mod sem;
pub mod txq;
pub mod verbs;

#[cfg(feature = "gpu")]
pub mod cuda;

pub use buf::{BufArr, GpuBuf};
pub use dma::Dma;
pub use rdma::{GpuRdma, Rdma};
pub use rxq::{EthRxq, GpuEthRxq, RxExportError};
pub use sem::{GpuSemaphore, Semaphore, SemaphoreStatus};
pub use txq::{EthTxq, ExportError, GpuEthTxq, NicHandler};
pub use verbs::{GpuVerbsCq, GpuVerbsQp, VerbsExportError, VerbsQp};

/// The CPU proxy's step shared by [`EthTxq`] and [`VerbsQp`] (DOCA's
/// `doca_eth_txq_gpu_cpu_proxy_progress` / `doca_gpu_verbs_cpu_proxy_progress`): when the
/// producer index a kernel handed over in the word at `at` of `page` is past `rung`, rings
/// send queue `qn`'s doorbell for it through `uar` (the kernel wrote the doorbell record
/// already). Returns whether it rang.
pub(crate) fn proxy_progress(
    rung: &mut u64,
    page: &crate::mem::DmaBuf,
    at: usize,
    qn: u32,
    uar: &crate::uar::UarPage,
) -> bool {
    let Ok(slot) = page.atomic_u64(at) else {
        return false;
    };
    // ORDERING: acquire: the kernel wrote the doorbell record, then (after a system fence)
    // this slot; the doorbell below must follow the record.
    let pi = slot.load(std::sync::atomic::Ordering::Acquire);
    if pi <= *rung {
        return false;
    }
    *rung = pi;
    crate::uar::barrier::dma_wmb();
    uar.doorbell(doorbell_value(qn, pi));
    true
}

/// The doorbell for producer index `pi` of send queue `qn`: a control segment's first 8 bytes
/// with the index (`doca_gpu_dev_eth_txq_prepare_db` of the header).
fn doorbell_value(qn: u32, pi: u64) -> [u8; 8] {
    let mut b = [0u8; 8];
    b[..4].copy_from_slice(&(((pi & 0xffff) as u32) << 8).to_be_bytes());
    b[4..].copy_from_slice(&(qn << 8).to_be_bytes());
    b
}

/// The device-side headers: (file name, contents). Kernels include
/// `doca_gpunetio_dev_eth_txq.cuh`, `doca_gpunetio_dev_eth_rxq.cuh`, `doca_gpunetio_dev_sem.cuh`,
/// `doca_gpunetio_dev_verbs_onesided.cuh` or `doca_gpunetio_dev_verbs_twosided.cuh`.
pub const HEADERS: [(&str, &str); 14] = [
    ("doca_error.h", include_str!("include/doca_error.h")),
    (
        "doca_gpunetio_eth_def.h",
        include_str!("include/doca_gpunetio_eth_def.h"),
    ),
    (
        "doca_gpunetio_dev_eth_common.cuh",
        include_str!("include/doca_gpunetio_dev_eth_common.cuh"),
    ),
    (
        "doca_gpunetio_dev_buf.cuh",
        include_str!("include/doca_gpunetio_dev_buf.cuh"),
    ),
    (
        "doca_gpunetio_dev_eth_txq.cuh",
        include_str!("include/doca_gpunetio_dev_eth_txq.cuh"),
    ),
    (
        "doca_gpunetio_dev_eth_rxq.cuh",
        include_str!("include/doca_gpunetio_dev_eth_rxq.cuh"),
    ),
    (
        "doca_gpunetio_dev_sem.cuh",
        include_str!("include/doca_gpunetio_dev_sem.cuh"),
    ),
    (
        "doca_gpunetio_verbs_def.h",
        include_str!("include/doca_gpunetio_verbs_def.h"),
    ),
    (
        "doca_gpunetio_dev_verbs_qp.cuh",
        include_str!("include/doca_gpunetio_dev_verbs_qp.cuh"),
    ),
    (
        "doca_gpunetio_dev_dma.cuh",
        include_str!("include/doca_gpunetio_dev_dma.cuh"),
    ),
    (
        "doca_gpunetio_dev_verbs_cq.cuh",
        include_str!("include/doca_gpunetio_dev_verbs_cq.cuh"),
    ),
    (
        "doca_gpunetio_dev_verbs_onesided.cuh",
        include_str!("include/doca_gpunetio_dev_verbs_onesided.cuh"),
    ),
    (
        "doca_gpunetio_dev_verbs_twosided.cuh",
        include_str!("include/doca_gpunetio_dev_verbs_twosided.cuh"),
    ),
    (
        "doca_gpunetio_dev_rdma.cuh",
        include_str!("include/doca_gpunetio_dev_rdma.cuh"),
    ),
];

/// Writes [`HEADERS`] into `dir` (for nvcc or a host compiler).
///
/// # Errors
/// The directory cannot be created or written.
pub fn write_headers(dir: &std::path::Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    for (name, text) in HEADERS {
        std::fs::write(dir.join(name), text)?;
    }
    Ok(())
}

/// Why a GPU queue could not be made or used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GpuError {
    /// The queue does not suit a GPU (its CQE size, say).
    #[error("{0}")]
    Unsuitable(String),
    /// The doorbell register is not mapped, so the GPU cannot ring it.
    #[error("the SQ's UAR page is not mapped: use the CPU proxy")]
    NoDoorbell,
    /// Host memory for the handle.
    #[error(transparent)]
    Mem(#[from] crate::mem::MemError),
    /// No CUDA driver library, or it cannot be used.
    #[error("no CUDA driver: {0}")]
    NoDriver(String),
    /// The driver is there but no GPU is.
    #[error("no CUDA device: {0}")]
    NoDevice(String),
    /// A CUDA or NVRTC call failed.
    #[error("CUDA: {0}")]
    Cuda(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_doorbell_carries_the_index_and_the_sq() {
        assert_eq!(
            doorbell_value(0x1234, 0x1_0005),
            [0x00, 0x00, 0x05, 0x00, 0x00, 0x12, 0x34, 0x00]
        );
    }
}
