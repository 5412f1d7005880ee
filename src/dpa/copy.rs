//! Host <-> DPA memory copies (FlexIO `flexio_host2dev_memcpy`, `flexio_buf_dev_memset`, and
//! reading back, which FlexIO leaves to the application).
//!
//! The host cannot load or store DPA memory; it can only DMA into it. As FlexIO and snap do
//! (docs/sources.md §4), the copier owns two RC QPs of the process's PD connected to each other in
//! force-loopback, a host staging [`MemoryRegion`], and an mkey over the process memory
//! (DUMEM, starting at `dumem_base`, so a DPA address is its own remote address). A copy to the
//! device is RDMA WRITEs from the staging buffer; a copy from the device is RDMA READs into it;
//! each chunk waits for its completion, bounded by [`COPY_TIMEOUT`].
//!
//! The DUMEM key can only cover memory the process has allocated (data, heap, DPA_MEM blocks),
//! so the copier re-creates it, larger, when a copy reaches past what it covers.

use std::sync::Arc;
use std::time::Duration;

use crate::devx::{self, Devx, DevxObj};
use crate::mem::{Access, MemoryRegion, Pd, Rkey};
use crate::mlx5::cmd::CreateMkey;
use crate::queues::{
    Cq, CqConfig, HostQueueMem, QpConfig, RcConnect, RcPeer, RcQp, RemoteAddr, SendOp, SendWr,
};
use crate::uar::UarPage;

use super::DpaError;

/// Longest wait for one chunk's completion.
pub const COPY_TIMEOUT: Duration = Duration::from_secs(10);
/// Bytes of the host staging buffer (one RDMA operation at most).
pub const STAGING_BYTES: usize = 64 * 1024;

/// The key over the process memory.
#[derive(Debug)]
struct DumemKey {
    obj: DevxObj,
    rkey: Rkey,
    /// DPA addresses `base..end` are covered.
    end: u64,
}

/// The copy engine of one process. Fields are in drop order: QPs, then their CQs, the
/// staging region and the key, the UAR last.
pub(crate) struct Copier {
    requester: RcQp,
    responder: RcQp,
    cq: Cq,
    responder_cq: Cq,
    staging: MemoryRegion,
    key: Option<DumemKey>,
    /// Earlier keys whose destroy firmware refused: kept (and tried again) until the copier
    /// goes, never forgotten.
    retired: Vec<DumemKey>,
    _uar: Arc<UarPage>,
    dev: Arc<dyn Devx>,
    pd: Arc<Pd>,
    dumem_id: u32,
    dumem_base: u64,
    next_wr: u64,
}

impl std::fmt::Debug for Copier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Copier")
            .field("requester", &self.requester.qpn())
            .field("dumem_id", &self.dumem_id)
            .finish_non_exhaustive()
    }
}

impl Copier {
    pub(crate) fn new(
        dev: &Arc<dyn Devx>,
        pd: &Arc<Pd>,
        uar: &Arc<UarPage>,
        dumem_id: u32,
        dumem_base: u64,
    ) -> Result<Copier, DpaError> {
        let cqc = CqConfig::new(4);
        let cq = Cq::create(dev, uar, HostQueueMem::alloc(dev, cqc.ring_bytes())?, &cqc)?;
        let responder_cq = Cq::create(dev, uar, HostQueueMem::alloc(dev, cqc.ring_bytes())?, &cqc)?;
        let qpc = QpConfig::new(4, 1);
        let mut requester = RcQp::create(
            dev,
            pd,
            uar,
            &cq,
            &cq,
            HostQueueMem::alloc(dev, qpc.ring_bytes())?,
            &qpc,
        )?;
        let mut responder = RcQp::create(
            dev,
            pd,
            uar,
            &responder_cq,
            &responder_cq,
            HostQueueMem::alloc(dev, qpc.ring_bytes())?,
            &qpc,
        )?;
        requester.connect(&RcConnect::new(RcPeer::Loopback {
            remote_qpn: responder.qpn(),
        }))?;
        responder.connect(&RcConnect::new(RcPeer::Loopback {
            remote_qpn: requester.qpn(),
        }))?;
        let staging = MemoryRegion::alloc(dev, pd, STAGING_BYTES, Access::LOCAL_WRITE)?;
        Ok(Copier {
            requester,
            responder,
            cq,
            responder_cq,
            staging,
            key: None,
            retired: Vec::new(),
            _uar: Arc::clone(uar),
            dev: Arc::clone(dev),
            pd: Arc::clone(pd),
            dumem_id,
            dumem_base,
            next_wr: 0,
        })
    }

    /// The key, covering at least `..end`.
    fn key_for(&mut self, end: u64) -> Result<Rkey, DpaError> {
        if let Some(k) = &self.key {
            if k.end >= end {
                return Ok(k.rkey);
            }
        }
        let len = end - self.dumem_base;
        let cmd = CreateMkey {
            pd: self.pd.pdn(),
            start_addr: self.dumem_base,
            len,
            access: crate::mem::mkey_access(
                Access::LOCAL_WRITE | Access::REMOTE_READ | Access::REMOTE_WRITE,
            ),
            umem_id: self.dumem_id,
            umem_offset: 0,
            key: 0,
            log_page_size: 12,
        };
        let (obj, key) = devx::create(&self.dev, &cmd)?;
        let fresh = DumemKey {
            obj,
            rkey: Rkey(key),
            end,
        };
        // The old key (if any) goes now that the new one exists. A refusal is reported (the
        // copy fails); the new key stays in use and the old one is kept for a later try.
        if let Some(mut old) = self.key.replace(fresh) {
            if let Err(e) = old.obj.try_destroy() {
                self.retired.push(old);
                return Err(e.into());
            }
        }
        Ok(Rkey(key))
    }

    fn check_range(&self, daddr: u64, len: usize) -> Result<u64, DpaError> {
        let end = daddr.checked_add(len as u64);
        match end {
            Some(e) if daddr >= self.dumem_base => Ok(e),
            _ => Err(DpaError::BadArgs(format!(
                "DPA range {daddr:#x}+{len:#x} is not in the process memory (from {:#x})",
                self.dumem_base
            ))),
        }
    }

    /// One RDMA operation on `len` staging bytes, waited for.
    fn transfer(
        &mut self,
        write: bool,
        daddr: u64,
        len: usize,
        rkey: Rkey,
    ) -> Result<(), DpaError> {
        let sges = [self.staging.sge(0, len)?];
        let remote = RemoteAddr { addr: daddr, rkey };
        let op = if write {
            SendOp::Write {
                sges: &sges,
                remote,
                imm: None,
            }
        } else {
            SendOp::Read {
                sges: &sges,
                remote,
            }
        };
        self.next_wr += 1;
        self.requester.post_send(&SendWr::new(self.next_wr, op))?;
        self.requester.ring_send_doorbell();
        let what = if write { "RDMA WRITE" } else { "RDMA READ" };
        let c = match self.cq.poll_timeout(COPY_TIMEOUT) {
            Ok(c) => c,
            Err(_) => {
                return Err(DpaError::Timeout {
                    what: "a host<->DPA copy completion",
                    after: COPY_TIMEOUT,
                })
            }
        };
        match c {
            Ok(c) => {
                self.requester.complete_send(c.wqe_counter)?;
                Ok(())
            }
            Err(e) => {
                // The QP is in error now; bring both ends back for the next copy.
                if let Some(w) = e.wqe_counter() {
                    let _ = self.requester.complete_send(w);
                }
                let detail = e.to_string();
                self.recover()?;
                Err(DpaError::Copy {
                    op: what,
                    daddr,
                    len,
                    detail,
                })
            }
        }
    }

    fn recover(&mut self) -> Result<(), DpaError> {
        self.requester.reset()?;
        self.responder.reset()?;
        while self.cq.poll().is_some() {}
        while self.responder_cq.poll().is_some() {}
        self.requester.connect(&RcConnect::new(RcPeer::Loopback {
            remote_qpn: self.responder.qpn(),
        }))?;
        self.responder.connect(&RcConnect::new(RcPeer::Loopback {
            remote_qpn: self.requester.qpn(),
        }))?;
        Ok(())
    }

    /// Copies `data` to DPA address `daddr`; `cover` is the least end the key must reach.
    pub(crate) fn write(&mut self, daddr: u64, data: &[u8], cover: u64) -> Result<(), DpaError> {
        let end = self.check_range(daddr, data.len())?;
        if data.is_empty() {
            return Ok(());
        }
        let rkey = self.key_for(end.max(cover))?;
        for (i, chunk) in data.chunks(STAGING_BYTES).enumerate() {
            self.staging.write(0, chunk)?;
            self.transfer(true, daddr + (i * STAGING_BYTES) as u64, chunk.len(), rkey)?;
        }
        Ok(())
    }

    /// Fills `len` bytes at `daddr` with `byte`.
    pub(crate) fn fill(
        &mut self,
        daddr: u64,
        len: usize,
        byte: u8,
        cover: u64,
    ) -> Result<(), DpaError> {
        let end = self.check_range(daddr, len)?;
        if len == 0 {
            return Ok(());
        }
        let rkey = self.key_for(end.max(cover))?;
        self.staging.buf().fill(0, len.min(STAGING_BYTES), byte)?;
        let mut done = 0;
        while done < len {
            let n = (len - done).min(STAGING_BYTES);
            self.transfer(true, daddr + done as u64, n, rkey)?;
            done += n;
        }
        Ok(())
    }

    /// Copies `out.len()` bytes from DPA address `daddr`.
    pub(crate) fn read(&mut self, daddr: u64, out: &mut [u8], cover: u64) -> Result<(), DpaError> {
        let end = self.check_range(daddr, out.len())?;
        if out.is_empty() {
            return Ok(());
        }
        let rkey = self.key_for(end.max(cover))?;
        for (i, chunk) in out.chunks_mut(STAGING_BYTES).enumerate() {
            self.transfer(false, daddr + (i * STAGING_BYTES) as u64, chunk.len(), rkey)?;
            self.staging.read(0, chunk)?;
        }
        Ok(())
    }
}
