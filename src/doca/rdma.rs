//! RDMA with its datapath on the DPA (DOCA RDMA with `doca_ctx_set_datapath_on_dpa`): an RC QP
//! in DPA memory, completing into a completion context, connected to one peer: another DPA
//! RDMA (of this context or another on the device) or a host QP.
//!
//! The device side is `doca_dpa_dev_rdma.h`: read, write (with immediate), send (with
//! immediate), receive and its acknowledgement, atomic fetch-and-add, between memory maps
//! ([`DpaMmap`](super::DpaMmap) keys), on connection 0. The block
//! (`struct doca_dpa_rdma_block`, mlx5_dpa_doca.h) holds the QP's descriptor, the send and
//! receive counters, a lock, and a ring of 8-byte scratch words (one per send slot) with its
//! key, for fetched atomics and the values `doca_dpa_dev_rdma_signal_set` writes. Peers'
//! exported sync events ([`RemoteSyncEvent`](super::RemoteSyncEvent)) are signalled with
//! an RDMA WRITE (set) or an atomic fetch-and-add (add) on the connection.
//! Completions report the connection id (0) as user data, through the runtime's
//! `__doca_dpa_udata` as async ops do.

use std::sync::Arc;

use crate::dpa::queues::{DpaMkey, DpaQueueMem, DpaRcQp};
use crate::dpa::{DpaBuf, Process, StepExt};
use crate::mem::Access;
use crate::queues::{QpConfig, RcConnect, RcPeer, RcQp};

use super::async_ops::{AttachedCq, CompletionContext};
use super::shared::Shared;
use super::DocaError;

/// `struct doca_dpa_rdma_block`.
const RDMA_BLOCK: usize = 0x80;

/// A DPA RDMA (`doca_rdma` on the DPA datapath): create, [`attach`], [`start`], [`connect`];
/// DPA code uses [`DpaRdma::dpa_handle`] with connection id 0. Drop it before its completion
/// context.
///
/// [`attach`]: DpaRdma::attach
/// [`start`]: DpaRdma::start
/// [`connect`]: DpaRdma::connect
pub struct DpaRdma {
    process: Process,
    shared: Arc<Shared>,
    queue_size: u32,
    attached: Option<AttachedCq>,
    udata_slot: Option<usize>,
    connected: bool,
    // Drop order: the QP, the scratch key and buffer, the block.
    qp: Option<DpaRcQp>,
    scratch: Option<(DpaMkey, DpaBuf)>,
    block: Option<DpaBuf>,
}

impl std::fmt::Debug for DpaRdma {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DpaRdma")
            .field("queue_size", &self.queue_size)
            .field("qpn", &self.qp.as_ref().map(DpaRcQp::qpn))
            .field("connected", &self.connected)
            .finish_non_exhaustive()
    }
}

impl DpaRdma {
    pub(crate) fn new(
        process: Process,
        shared: Arc<Shared>,
        queue_size: u32,
    ) -> Result<DpaRdma, DocaError> {
        super::async_ops::log2_queue(queue_size, "RDMA")?;
        Ok(DpaRdma {
            process,
            shared,
            queue_size,
            attached: None,
            udata_slot: None,
            connected: false,
            qp: None,
            scratch: None,
            block: None,
        })
    }

    /// `doca_rdma_dpa_completion_attach`: its send and receive completions go to `comp`
    /// (started, of this context).
    ///
    /// # Errors
    /// [`DocaError::NotPermitted`] once started, or for a completion context that is not
    /// started or is another context's.
    pub fn attach(&mut self, comp: &CompletionContext) -> Result<(), DocaError> {
        if self.qp.is_some() {
            return Err(DocaError::NotPermitted("attach of a started RDMA".into()));
        }
        self.attached = Some(comp.attach_target(&self.shared)?);
        Ok(())
    }

    /// Starts it (`doca_ctx_start`): the QP in DPA memory with a receive queue of
    /// `queue_size` entries, its scratch words and its block.
    ///
    /// # Errors
    /// [`DocaError::NotPermitted`] when not attached or already started;
    /// [`DocaError::NoMemory`] past [`MAX_ASYNC_OPS`](super::MAX_ASYNC_OPS) users of the
    /// completion user-data table; firmware refusals, naming the step.
    pub fn start(&mut self) -> Result<(), DocaError> {
        if self.qp.is_some() {
            return Err(DocaError::NotPermitted("start of a started RDMA".into()));
        }
        let Some(target) = &self.attached else {
            return Err(DocaError::NotPermitted(
                "an RDMA needs a completion context (attach) before start".into(),
            ));
        };
        let p = &self.process;
        let log = super::async_ops::log2_queue(self.queue_size, "RDMA")?;
        const Q: &str = "creating the RDMA's QP";
        let qpc = QpConfig {
            log_sq_size: log,
            log_rq_size: Some(log),
            max_recv_sge: 1,
            signal_every: 1,
        };
        let mem = DpaQueueMem::alloc(p, qpc.ring_bytes()).step(Q)?;
        let qp = DpaRcQp::create(p, p.uar(), target, target, mem, &qpc).step(Q)?;
        // One scratch word per send slot.
        let words = 1u64 << log;
        let sbuf = p
            .alloc(8 * words)
            .step("allocating the RDMA's scratch words")?;
        let skey = DpaMkey::over(p, &sbuf, Access::LOCAL_WRITE)
            .step("allocating the RDMA's scratch words")?;
        let block = p
            .alloc(RDMA_BLOCK as u64)
            .step("allocating the RDMA block")?;
        let mut b = vec![0u8; RDMA_BLOCK];
        b[..88].copy_from_slice(&qp.descriptor().to_bytes());
        b[0x68..0x70].copy_from_slice(&sbuf.daddr().to_le_bytes());
        b[0x70..0x74].copy_from_slice(&skey.lkey().0.to_le_bytes());
        b[0x74..0x78].copy_from_slice(&((words - 1) as u32).to_le_bytes());
        b[0x78..0x80].copy_from_slice(&target.handle.to_le_bytes());
        p.copy_to_dev(block.daddr(), &b)
            .step("writing the RDMA block")?;
        // Completions report connection 0 as their user data.
        let slot = self.shared.take_udata_slot()?;
        let mut entry = [0u8; 8];
        entry[..4].copy_from_slice(&qp.qpn().0.to_le_bytes());
        if let Err(e) = p
            .copy_to_dev(self.shared.udata_daddr(slot), &entry)
            .step("registering the RDMA's connection id")
        {
            self.shared.give_udata_slot(slot);
            return Err(e.into());
        }
        self.udata_slot = Some(slot);
        self.qp = Some(qp);
        self.scratch = Some((skey, sbuf));
        self.block = Some(block);
        Ok(())
    }

    fn started_qp(&mut self) -> Result<&mut DpaRcQp, DocaError> {
        if self.connected {
            return Err(DocaError::NotPermitted(
                "the RDMA is already connected".into(),
            ));
        }
        self.qp
            .as_mut()
            .ok_or_else(|| DocaError::NotPermitted("the RDMA is not started".into()))
    }

    /// Connects it with `peer`, another started DPA RDMA on the same device (of this context
    /// or another), both ways; connection id 0 on each side.
    ///
    /// # Errors
    /// [`DocaError::NotPermitted`] for an unstarted or already connected side; firmware
    /// refusals, naming the step.
    pub fn connect(&mut self, peer: &mut DpaRdma) -> Result<(), DocaError> {
        let mine = self.started_qp()?.qpn();
        let theirs = peer.started_qp()?.qpn();
        const C: &str = "connecting the RDMA QPs";
        self.started_qp()?
            .connect(&RcConnect::new(RcPeer::Loopback { remote_qpn: theirs }))
            .step(C)?;
        peer.started_qp()?
            .connect(&RcConnect::new(RcPeer::Loopback { remote_qpn: mine }))
            .step(C)?;
        self.connected = true;
        peer.connected = true;
        Ok(())
    }

    /// `doca_rdma_export`: what a peer needs to connect to it ([`DpaRdma::connect_to`]), on
    /// this device or on another reached over the port (RoCE v2): its QP number and this
    /// device's GID (entry 0) and MAC. [`RdmaConnDetails::to_bytes`] is the form to exchange
    /// out of band.
    ///
    /// # Errors
    /// [`DocaError::NotPermitted`] before start; a refused address query, naming the step.
    pub fn export(&self) -> Result<RdmaConnDetails, DocaError> {
        let qpn = self
            .qp
            .as_ref()
            .ok_or_else(|| DocaError::NotPermitted("export of an unstarted RDMA".into()))?
            .qpn();
        let (gid, mac) = local_address(&self.process)?;
        Ok(RdmaConnDetails {
            qpn: qpn.0,
            gid,
            mac,
        })
    }

    /// `doca_rdma_connect`: connects this side to a peer's exported details. A peer with this
    /// device's address is reached inside the device (`ads.fl`), any other over the port by
    /// RoCE v2 (the peer connects to this side's export the same way).
    ///
    /// # Errors
    /// [`DocaError::NotPermitted`] for an unstarted or already connected RDMA; refusals,
    /// naming the step.
    pub fn connect_to(&mut self, peer: &RdmaConnDetails) -> Result<(), DocaError> {
        let (gid, mac) = local_address(&self.process)?;
        let remote_qpn = crate::queues::Qpn(peer.qpn);
        let to = if (peer.gid, peer.mac) == (gid, mac) {
            RcPeer::Loopback { remote_qpn }
        } else {
            RcPeer::Remote {
                remote_qpn,
                mac: peer.mac,
                gid: peer.gid,
                gid_index: 0,
                hop_limit: 64,
            }
        };
        self.started_qp()?
            .connect(&RcConnect::new(to))
            .step("connecting the RDMA to the exported peer")?;
        self.connected = true;
        Ok(())
    }

    /// Connects it with a host QP on the same device, both ways.
    ///
    /// # Errors
    /// As [`DpaRdma::connect`].
    pub fn connect_host(&mut self, host: &mut RcQp) -> Result<(), DocaError> {
        let mine = self.started_qp()?.qpn();
        const C: &str = "connecting the RDMA QP with the host QP";
        self.started_qp()?
            .connect(&RcConnect::new(RcPeer::Loopback {
                remote_qpn: host.qpn(),
            }))
            .step(C)?;
        host.connect(&RcConnect::new(RcPeer::Loopback { remote_qpn: mine }))
            .map_err(crate::dpa::DpaError::from)
            .step(C)?;
        self.connected = true;
        Ok(())
    }

    /// `doca_rdma_get_dpa_handle`.
    ///
    /// # Errors
    /// [`DocaError::NotPermitted`] before [`DpaRdma::start`].
    pub fn dpa_handle(&self) -> Result<u64, DocaError> {
        super::async_ops::started_handle(&self.block, "the RDMA")
    }

    /// `doca_rdma_connection_get_id` of its one connection.
    pub fn connection_id(&self) -> u32 {
        0
    }

    /// The QP number (for a host peer to connect to).
    pub fn qpn(&self) -> Option<crate::queues::Qpn> {
        self.qp.as_ref().map(DpaRcQp::qpn)
    }
}

/// What `doca_rdma_export` gives a peer: the QP number, the device's GID and MAC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RdmaConnDetails {
    pub qpn: u32,
    pub gid: [u8; 16],
    pub mac: [u8; 6],
}

/// Bytes of [`RdmaConnDetails::to_bytes`].
pub const RDMA_CONN_DETAILS_LEN: usize = 28;

impl RdmaConnDetails {
    /// The details as bytes to exchange (this project's format: QPN little-endian, GID, MAC,
    /// two zero bytes).
    pub fn to_bytes(&self) -> [u8; RDMA_CONN_DETAILS_LEN] {
        let mut b = [0u8; RDMA_CONN_DETAILS_LEN];
        b[..4].copy_from_slice(&self.qpn.to_le_bytes());
        b[4..20].copy_from_slice(&self.gid);
        b[20..26].copy_from_slice(&self.mac);
        b
    }

    /// Reads [`RdmaConnDetails::to_bytes`]'s form.
    ///
    /// # Errors
    /// [`DocaError::InvalidValue`] for another length, a QPN over 24 bits or non-zero padding.
    pub fn from_bytes(b: &[u8]) -> Result<RdmaConnDetails, DocaError> {
        let bad = |why: &str| DocaError::InvalidValue(format!("RDMA connection details: {why}"));
        if b.len() != RDMA_CONN_DETAILS_LEN {
            return Err(bad(&format!(
                "{} bytes, not {RDMA_CONN_DETAILS_LEN}",
                b.len()
            )));
        }
        if b[26..] != [0, 0] {
            return Err(bad("non-zero padding"));
        }
        let mut q = [0u8; 4];
        q.copy_from_slice(&b[..4]);
        let qpn = u32::from_le_bytes(q);
        if qpn >> 24 != 0 {
            return Err(bad(&format!("QPN {qpn:#x} is over 24 bits")));
        }
        let mut gid = [0u8; 16];
        gid.copy_from_slice(&b[4..20]);
        let mut mac = [0u8; 6];
        mac.copy_from_slice(&b[20..26]);
        Ok(RdmaConnDetails { qpn, gid, mac })
    }
}

/// This device's GID table entry 0 and MAC.
fn local_address(process: &Process) -> Result<([u8; 16], [u8; 6]), DocaError> {
    use crate::mlx5::cmd::{QueryNicVportContext, QueryRoceAddress};
    const A: &str = "querying the device's address";
    let dev = process.inner().dev.as_ref();
    let gid = crate::devx::exec(dev, &QueryRoceAddress(0))
        .map_err(crate::dpa::DpaError::from)
        .step(A)?
        .gid;
    let mac = crate::devx::exec(dev, &QueryNicVportContext)
        .map_err(crate::dpa::DpaError::from)
        .step(A)?
        .mac;
    Ok((gid, mac))
}

impl Drop for DpaRdma {
    fn drop(&mut self) {
        if let Some(slot) = self.udata_slot.take() {
            let _ = self
                .process
                .copy_to_dev(self.shared.udata_daddr(slot), &[0u8; 8]);
            self.shared.give_udata_slot(slot);
        }
    }
}
