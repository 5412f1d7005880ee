//! DOCA 2.x's GPU RDMA queue (`struct doca_gpu_dev_rdma`, `doca_gpunetio_dev_rdma.cuh`):
//! kernels enqueue RDMA writes, reads and sends (strong or weak, inline or from buffers) on a
//! connection, commit them, wait for them, and post and wait for receives with their
//! immediates.
//!
//! Each connection is a connected RC QP exported for the GPU ([`VerbsQp`]); the handle lists
//! them (up to [`MAX_CONNECTIONS`]). The receive side is the QP of a handle of one connection;
//! receiving on a handle of several would need a receive queue the connections share, which
//! the export does not make, so the kernel's `doca_gpu_dev_rdma_get_recv` says
//! `DOCA_ERROR_NOT_SUPPORTED` there.

use std::sync::Arc;

use crate::mem::DmaBuf;

use super::{GpuError, VerbsQp};

/// The most connections a handle holds (`MLX5_DPA_GPU_RDMA_MAX_CONNECTIONS`).
pub const MAX_CONNECTIONS: usize = 8;

/// `struct doca_gpu_dev_rdma` as the header lays it out (104 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GpuRdma {
    pub commits: u64,
    pub commits_waited: u64,
    pub num_connections: u32,
    pub reserved: u32,
    /// `struct doca_gpu_dev_rdma_r`: the receiving QP's handle, 0 when none.
    pub recv_qp: u64,
    pub recv_reserved: u64,
    pub conn: [u64; MAX_CONNECTIONS],
}

const _: () = assert!(std::mem::size_of::<GpuRdma>() == 104);

impl GpuRdma {
    /// The bytes the header reads (little-endian fields).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(104);
        b.extend_from_slice(&self.commits.to_le_bytes());
        b.extend_from_slice(&self.commits_waited.to_le_bytes());
        b.extend_from_slice(&self.num_connections.to_le_bytes());
        b.extend_from_slice(&self.reserved.to_le_bytes());
        b.extend_from_slice(&self.recv_qp.to_le_bytes());
        b.extend_from_slice(&self.recv_reserved.to_le_bytes());
        for c in self.conn {
            b.extend_from_slice(&c.to_le_bytes());
        }
        b
    }
}

/// A GPU RDMA queue over one or more connections; dropped (with its QPs and CQs) after the
/// kernels using it have ended.
#[derive(Debug)]
pub struct Rdma {
    // Field order is drop order: the handle, then the connections it points at.
    page: Arc<DmaBuf>,
    conns: Vec<VerbsQp>,
}

impl Rdma {
    /// A handle over `conns` (connection `i` is `connection_index` `i` of the kernels' calls).
    ///
    /// # Errors
    /// [`GpuError::Unsuitable`] for none or more than [`MAX_CONNECTIONS`]; memory for the
    /// handle.
    pub fn new(conns: Vec<VerbsQp>) -> Result<Rdma, GpuError> {
        if conns.is_empty() || conns.len() > MAX_CONNECTIONS {
            return Err(GpuError::Unsuitable(format!(
                "{} connections: 1 to {MAX_CONNECTIONS} are supported",
                conns.len()
            )));
        }
        let mut handle = GpuRdma {
            num_connections: conns.len() as u32,
            recv_qp: if conns.len() == 1 {
                conns[0].handle_addr()
            } else {
                0
            },
            ..GpuRdma::default()
        };
        for (slot, c) in handle.conn.iter_mut().zip(&conns) {
            *slot = c.handle_addr();
        }
        let page = DmaBuf::new(4096)?;
        page.write(0, &handle.to_bytes())?;
        Ok(Rdma { page, conns })
    }

    /// The handle's address (`struct doca_gpu_dev_rdma *` for the kernel), host memory.
    pub fn handle_addr(&self) -> u64 {
        self.page.addr()
    }

    /// The handle's page, to register with CUDA (each connection's page too:
    /// [`Rdma::connections`]).
    pub fn page(&self) -> &Arc<DmaBuf> {
        &self.page
    }

    /// The connections, in `connection_index` order.
    pub fn connections(&self) -> &[VerbsQp] {
        &self.conns
    }

    /// The commits the kernels made (every connection's).
    pub fn commits(&self) -> u64 {
        self.page
            .atomic_u64(0)
            .map_or(0, |a| a.load(std::sync::atomic::Ordering::Acquire))
    }

    /// The CPU proxy's step on every connection exported with [`super::NicHandler::CpuProxy`];
    /// whether any doorbell rang.
    pub fn cpu_proxy_progress(&mut self) -> bool {
        let mut rang = false;
        for c in &mut self.conns {
            rang |= c.cpu_proxy_progress();
        }
        rang
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handle_bytes_follow_the_repr_c_offsets() {
        let h = GpuRdma {
            num_connections: 3,
            recv_qp: 0x1122,
            conn: [0, 0, 0x3344, 0, 0, 0, 0, 0x5566],
            ..GpuRdma::default()
        };
        let b = h.to_bytes();
        assert_eq!(b.len(), std::mem::size_of::<GpuRdma>());
        assert_eq!(std::mem::offset_of!(GpuRdma, num_connections), 16);
        assert_eq!(b[16], 3);
        assert_eq!(std::mem::offset_of!(GpuRdma, recv_qp), 24);
        assert_eq!(&b[24..32], &0x1122u64.to_le_bytes());
        assert_eq!(std::mem::offset_of!(GpuRdma, conn), 40);
        assert_eq!(&b[56..64], &0x3344u64.to_le_bytes());
        assert_eq!(&b[96..104], &0x5566u64.to_le_bytes());
    }
}
