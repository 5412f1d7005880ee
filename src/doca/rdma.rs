//! RDMA with its datapath on the DPA (DOCA RDMA with `doca_ctx_set_datapath_on_dpa`): RC QPs
//! in DPA memory, one per connection, completing into a completion context; the connections
//! receive from one shared receive queue (an RMP in DPA memory), the RDMA's own or a
//! [`DpaRdmaSrq`] several RDMAs share (DOCA 2.6's `doca_rdma_srq`).
//!
//! The device side is `doca_dpa_dev_rdma.h`: read, write (with immediate), send (with
//! immediate), atomic fetch-and-add and the signalling of a peer's sync event on a connection
//! id, between memory maps ([`DpaMmap`](super::DpaMmap) keys); receives (with no connection,
//! as DOCA 2.9 has them) and their acknowledgement on the RDMA's receive queue. In DPA memory:
//!
//! - the RDMA block (`struct doca_dpa_rdma_block`, mlx5_dpa_doca.h): the completion context's
//!   handle, the receive queue block's address, the number of connections, then one
//!   `struct doca_dpa_rdma_conn` per connection (its QP's descriptor, send counter, lock, and a
//!   ring of 8-byte scratch words, one per send slot, for fetched atomics and the values
//!   `doca_dpa_dev_rdma_signal_set` writes);
//! - the receive queue block (`struct doca_dpa_rdma_srq`): the RMP's ring, doorbell record,
//!   size, the receives posted and acknowledged, a lock.
//!
//! Completions report their connection id as user data, through the runtime's
//! `__doca_dpa_udata` (by QPN, as async ops do); a receive completion's WR index is the
//! shared receive queue's WQE.

use std::sync::Arc;

use crate::dpa::queues::{DpaMkey, DpaQueueMem, DpaRcQp, DpaSrq};
use crate::dpa::{DpaBuf, Process, StepExt};
use crate::mem::Access;
use crate::queues::{QpConfig, RcConnect, RcPeer, RcQp, RqConfig};

use super::async_ops::{AttachedCq, CompletionContext};
use super::shared::Shared;
use super::DocaError;

/// `struct doca_dpa_rdma_block` before its connections.
const RDMA_HEAD: usize = 0x20;
/// `struct doca_dpa_rdma_conn`.
const RDMA_CONN: usize = 0x80;
/// `struct doca_dpa_rdma_srq`.
const SRQ_BLOCK: usize = 0x40;

/// Connections one DPA RDMA may have (`doca_rdma_set_max_num_connections`).
pub const MAX_RDMA_CONNECTIONS: u32 = 16;

/// A receive queue in DPA memory as the device side names it: the RMP and its block.
#[derive(Debug)]
struct RecvQueue {
    // Drop order: the RMP (once no QP names it), then the block.
    srq: DpaSrq,
    block: DpaBuf,
    shared: Arc<Shared>,
}

impl RecvQueue {
    fn create(process: &Process, shared: &Arc<Shared>, size: u32) -> Result<RecvQueue, DocaError> {
        let log = super::async_ops::log2_queue(size, "receive")?;
        const S: &str = "creating the shared receive queue";
        let cfg = RqConfig {
            log_size: log,
            max_sge: 1,
        };
        let mem = DpaQueueMem::alloc(process, cfg.ring_bytes()).step(S)?;
        let srq = DpaSrq::create(process, process.uar(), mem, &cfg).step(S)?;
        let block = process
            .alloc(SRQ_BLOCK as u64)
            .step("allocating the receive queue block")?;
        let mut b = [0u8; SRQ_BLOCK];
        b[..8].copy_from_slice(&srq.ring_daddr().to_le_bytes());
        b[8..16].copy_from_slice(&srq.dbr_daddr().to_le_bytes());
        b[0x10..0x14].copy_from_slice(&u32::from(srq.log_size()).to_le_bytes());
        b[0x14..0x18].copy_from_slice(&(srq.stride() as u32).to_le_bytes());
        b[0x24..0x28].copy_from_slice(&srq.srqn().to_le_bytes());
        process
            .copy_to_dev(block.daddr(), &b)
            .step("writing the receive queue block")?;
        Ok(RecvQueue {
            srq,
            block,
            shared: Arc::clone(shared),
        })
    }
}

/// A shared receive queue on the DPA datapath (DOCA 2.6's `doca_rdma_srq` with
/// `doca_ctx_set_datapath_on_dpa`): RDMAs created on it with
/// [`Dpa::rdma_create_with_srq`](super::Dpa::rdma_create_with_srq) receive from it; DPA code
/// posts its receives with `doca_dpa_dev_rdma_srq_post_receive` on
/// [`DpaRdmaSrq::dpa_handle`], or `doca_dpa_dev_rdma_post_receive` on any of its RDMAs.
#[derive(Debug, Clone)]
pub struct DpaRdmaSrq {
    inner: Arc<RecvQueue>,
}

impl DpaRdmaSrq {
    pub(crate) fn new(
        process: &Process,
        shared: &Arc<Shared>,
        size: u32,
    ) -> Result<DpaRdmaSrq, DocaError> {
        Ok(DpaRdmaSrq {
            inner: Arc::new(RecvQueue::create(process, shared, size)?),
        })
    }

    /// `doca_rdma_srq_get_dpa_handle`.
    pub fn dpa_handle(&self) -> u64 {
        self.inner.block.daddr()
    }

    /// Receive WQEs of the queue (its size rounded up to a power of two).
    pub fn size(&self) -> u32 {
        1 << self.inner.srq.log_size()
    }
}

/// How far a connection is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Link {
    Free,
    Exported,
    Connected,
}

/// An entry of the runtime's `__doca_dpa_udata` naming a connection's QP, released on drop.
#[derive(Debug)]
struct UdataSlot {
    slot: usize,
    shared: Arc<Shared>,
    process: Process,
}

impl Drop for UdataSlot {
    fn drop(&mut self) {
        let _ = self
            .process
            .copy_to_dev(self.shared.udata_daddr(self.slot), &[0u8; 8]);
        self.shared.give_udata_slot(self.slot);
    }
}

/// One connection: its QP and the user-data entry naming it.
#[derive(Debug)]
struct Conn {
    // Drop order: the QP, then its entry.
    qp: DpaRcQp,
    _udata: UdataSlot,
    link: Link,
}

/// One end of a connection as [`DpaRdma::export`] creates it (`struct doca_rdma_connection`):
/// its id and the details to send the peer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RdmaConnection {
    id: u32,
    details: RdmaConnDetails,
}

impl RdmaConnection {
    /// `doca_rdma_connection_get_id`: the id DPA code passes as `connection_id`, and the user
    /// data of the connection's completions.
    pub fn id(&self) -> u32 {
        self.id
    }

    /// What the peer needs to connect to this end.
    pub fn details(&self) -> RdmaConnDetails {
        self.details
    }
}

/// A DPA RDMA (`doca_rdma` on the DPA datapath): create, optionally
/// [`set_max_connections`], [`attach`], [`start`], then connect each connection
/// ([`connect`], [`connect_host`], or [`export`] and [`connect_to`]); DPA code uses
/// [`DpaRdma::dpa_handle`] with the connection ids. Drop it before its completion context.
///
/// [`set_max_connections`]: DpaRdma::set_max_connections
/// [`attach`]: DpaRdma::attach
/// [`start`]: DpaRdma::start
/// [`connect`]: DpaRdma::connect
/// [`connect_host`]: DpaRdma::connect_host
/// [`export`]: DpaRdma::export
/// [`connect_to`]: DpaRdma::connect_to
pub struct DpaRdma {
    process: Process,
    shared: Arc<Shared>,
    queue_size: u32,
    max_connections: u32,
    attached: Option<AttachedCq>,
    /// The shared receive queue it was created on, if any.
    srq: Option<DpaRdmaSrq>,
    // Drop order: the QPs, then the receive queue, the scratch key and buffer, the block.
    conns: Vec<Conn>,
    own_recv: Option<Arc<RecvQueue>>,
    scratch: Option<(DpaMkey, DpaBuf)>,
    block: Option<DpaBuf>,
}

impl std::fmt::Debug for DpaRdma {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DpaRdma")
            .field("queue_size", &self.queue_size)
            .field("max_connections", &self.max_connections)
            .field(
                "qpns",
                &self.conns.iter().map(|c| c.qp.qpn()).collect::<Vec<_>>(),
            )
            .field("shared_srq", &self.srq.is_some())
            .finish_non_exhaustive()
    }
}

impl DpaRdma {
    pub(crate) fn new(
        process: Process,
        shared: Arc<Shared>,
        queue_size: u32,
        srq: Option<DpaRdmaSrq>,
    ) -> Result<DpaRdma, DocaError> {
        super::async_ops::log2_queue(queue_size, "RDMA")?;
        if let Some(s) = &srq {
            if !Arc::ptr_eq(&s.inner.shared, &shared) {
                return Err(DocaError::NotPermitted(
                    "the shared receive queue belongs to another DPA context".into(),
                ));
            }
        }
        Ok(DpaRdma {
            process,
            shared,
            queue_size,
            max_connections: 1,
            attached: None,
            srq,
            conns: Vec::new(),
            own_recv: None,
            scratch: None,
            block: None,
        })
    }

    /// `doca_rdma_set_max_num_connections`: how many connections it will have (1 by default,
    /// at most [`MAX_RDMA_CONNECTIONS`]); their receives share its receive queue.
    ///
    /// # Errors
    /// [`DocaError::NotPermitted`] once started; [`DocaError::InvalidValue`] out of range.
    pub fn set_max_connections(&mut self, n: u32) -> Result<(), DocaError> {
        if self.block.is_some() {
            return Err(DocaError::NotPermitted(
                "max connections of a started RDMA".into(),
            ));
        }
        if n == 0 || n > MAX_RDMA_CONNECTIONS {
            return Err(DocaError::InvalidValue(format!(
                "{n} RDMA connections (1 ..= {MAX_RDMA_CONNECTIONS})"
            )));
        }
        self.max_connections = n;
        Ok(())
    }

    /// The connections it has (or will have once started).
    pub fn max_connections(&self) -> u32 {
        self.max_connections
    }

    /// `doca_rdma_dpa_completion_attach`: its send and receive completions go to `comp`
    /// (started, of this context).
    ///
    /// # Errors
    /// [`DocaError::NotPermitted`] once started, or for a completion context that is not
    /// started or is another context's.
    pub fn attach(&mut self, comp: &CompletionContext) -> Result<(), DocaError> {
        if self.block.is_some() {
            return Err(DocaError::NotPermitted("attach of a started RDMA".into()));
        }
        self.attached = Some(comp.attach_target(&self.shared)?);
        Ok(())
    }

    /// Starts it (`doca_ctx_start`): its receive queue of `queue_size` entries (unless it was
    /// created on a shared one), one QP per connection with `queue_size` send slots and their
    /// scratch words, and its block.
    ///
    /// # Errors
    /// [`DocaError::NotPermitted`] when not attached or already started;
    /// [`DocaError::NoMemory`] past [`MAX_ASYNC_OPS`](super::MAX_ASYNC_OPS) users of the
    /// completion user-data table; firmware refusals, naming the step.
    pub fn start(&mut self) -> Result<(), DocaError> {
        if self.block.is_some() {
            return Err(DocaError::NotPermitted("start of a started RDMA".into()));
        }
        let Some(target) = &self.attached else {
            return Err(DocaError::NotPermitted(
                "an RDMA needs a completion context (attach) before start".into(),
            ));
        };
        let p = &self.process;
        let log = super::async_ops::log2_queue(self.queue_size, "RDMA")?;
        let own_recv = match &self.srq {
            Some(_) => None,
            None => Some(Arc::new(RecvQueue::create(
                p,
                &self.shared,
                self.queue_size,
            )?)),
        };
        let recv = match (&self.srq, &own_recv) {
            (Some(s), _) => Arc::clone(&s.inner),
            (None, Some(r)) => Arc::clone(r),
            (None, None) => unreachable!("an RDMA has its own receive queue or a shared one"),
        };
        let n = self.max_connections as usize;
        // One scratch word per send slot of each connection.
        let words = 1u64 << log;
        const W: &str = "allocating the RDMA's scratch words";
        let sbuf = p.alloc(8 * words * n as u64).step(W)?;
        let skey = DpaMkey::over(p, &sbuf, Access::LOCAL_WRITE).step(W)?;
        let block = p
            .alloc((RDMA_HEAD + RDMA_CONN * n) as u64)
            .step("allocating the RDMA block")?;
        let mut b = vec![0u8; RDMA_HEAD + RDMA_CONN * n];
        b[..8].copy_from_slice(&target.handle.to_le_bytes());
        b[8..16].copy_from_slice(&recv.block.daddr().to_le_bytes());
        b[0x10..0x14].copy_from_slice(&(n as u32).to_le_bytes());
        let qpc = QpConfig {
            log_sq_size: log,
            log_rq_size: None,
            max_recv_sge: 1,
            signal_every: 1,
        };
        let mut conns = Vec::with_capacity(n);
        for (i, c) in b[RDMA_HEAD..].chunks_exact_mut(RDMA_CONN).enumerate() {
            const Q: &str = "creating the RDMA's QP";
            let mem = DpaQueueMem::alloc(p, qpc.ring_bytes()).step(Q)?;
            let qp = DpaRcQp::create_with_srq(p, p.uar(), target, target, &recv.srq, mem, &qpc)
                .step(Q)?;
            // Completions of this QP report the connection id as their user data.
            let slot = self.shared.take_udata_slot()?;
            let udata = UdataSlot {
                slot,
                shared: Arc::clone(&self.shared),
                process: p.clone(),
            };
            let mut entry = [0u8; 8];
            entry[..4].copy_from_slice(&qp.qpn().0.to_le_bytes());
            entry[4..].copy_from_slice(&(i as u32).to_le_bytes());
            p.copy_to_dev(self.shared.udata_daddr(slot), &entry)
                .step("registering the RDMA's connection id")?;
            c[..88].copy_from_slice(&qp.descriptor().to_bytes());
            let scratch = sbuf.daddr() + 8 * words * i as u64;
            c[0x60..0x68].copy_from_slice(&scratch.to_le_bytes());
            c[0x68..0x6c].copy_from_slice(&skey.lkey().0.to_le_bytes());
            c[0x6c..0x70].copy_from_slice(&((words - 1) as u32).to_le_bytes());
            c[0x74..0x78].copy_from_slice(&u32::from(p.vhca_id()).to_le_bytes());
            conns.push(Conn {
                qp,
                _udata: udata,
                link: Link::Free,
            });
        }
        p.copy_to_dev(block.daddr(), &b)
            .step("writing the RDMA block")?;
        self.conns = conns;
        self.own_recv = own_recv;
        self.scratch = Some((skey, sbuf));
        self.block = Some(block);
        Ok(())
    }

    /// The next connection neither exported nor connected.
    fn next_free(&self) -> Result<usize, DocaError> {
        if self.block.is_none() {
            return Err(DocaError::NotPermitted("the RDMA is not started".into()));
        }
        self.conns
            .iter()
            .position(|c| c.link == Link::Free)
            .ok_or_else(|| {
                DocaError::NotPermitted(format!(
                    "all {} connections of the RDMA are in use (set_max_connections)",
                    self.conns.len()
                ))
            })
    }

    /// Moves connection `i`'s QP to RTS towards `to`; the device side sees it connected.
    fn link(&mut self, i: usize, to: RcPeer, what: &'static str) -> Result<(), DocaError> {
        self.conns[i].qp.connect(&RcConnect::new(to)).step(what)?;
        self.conns[i].link = Link::Connected;
        let at = self.block.as_ref().map_or(0, DpaBuf::daddr) + (RDMA_HEAD + RDMA_CONN * i) as u64;
        self.process
            .copy_to_dev(at + 0x70, &1u32.to_le_bytes())
            .step(what)?;
        Ok(())
    }

    /// Connects its next free connection with `peer`'s next free connection (another started
    /// DPA RDMA on the same device, of this context or another), both ways. Returns the two
    /// connection ids (this side's, the peer's).
    ///
    /// # Errors
    /// [`DocaError::NotPermitted`] for an unstarted side or one without a free connection;
    /// firmware refusals, naming the step.
    pub fn connect(&mut self, peer: &mut DpaRdma) -> Result<(u32, u32), DocaError> {
        let (i, j) = (self.next_free()?, peer.next_free()?);
        let (mine, theirs) = (self.conns[i].qp.qpn(), peer.conns[j].qp.qpn());
        const C: &str = "connecting the RDMA QPs";
        self.link(i, RcPeer::Loopback { remote_qpn: theirs }, C)?;
        peer.link(j, RcPeer::Loopback { remote_qpn: mine }, C)?;
        Ok((i as u32, j as u32))
    }

    /// `doca_rdma_export`: takes its next free connection and gives what a peer needs to
    /// connect to it, on this device or on another reached over the port (RoCE v2): the
    /// connection's QP number and this device's GID (entry 0) and MAC.
    /// [`RdmaConnDetails::to_bytes`] is the form to exchange out of band.
    ///
    /// # Errors
    /// [`DocaError::NotPermitted`] before start or with no free connection; a refused
    /// address query, naming the step.
    pub fn export(&mut self) -> Result<RdmaConnection, DocaError> {
        let i = self.next_free()?;
        let (gid, mac, _) = local_address(&self.process)?;
        self.conns[i].link = Link::Exported;
        Ok(RdmaConnection {
            id: i as u32,
            details: RdmaConnDetails {
                qpn: self.conns[i].qp.qpn().0,
                gid,
                mac,
            },
        })
    }

    /// `doca_rdma_connect`: connects an exported connection to a peer's exported details. A
    /// peer with this device's address is reached inside the device (`ads.fl`), any other over
    /// the port by RoCE v2 (the peer connects to this side's export the same way).
    ///
    /// # Errors
    /// [`DocaError::NotPermitted`] for a connection that is not this RDMA's or not exported
    /// (connected already, say); refusals, naming the step.
    pub fn connect_to(
        &mut self,
        conn: &RdmaConnection,
        peer: &RdmaConnDetails,
    ) -> Result<(), DocaError> {
        let i = conn.id as usize;
        let ours = self
            .conns
            .get(i)
            .is_some_and(|c| c.qp.qpn().0 == conn.details.qpn && c.link == Link::Exported);
        if !ours {
            return Err(DocaError::NotPermitted(format!(
                "connection {} is not an exported, unconnected connection of this RDMA",
                conn.id
            )));
        }
        let (gid, mac, gid_index) = local_address(&self.process)?;
        let remote_qpn = crate::queues::Qpn(peer.qpn);
        let to = if (peer.gid, peer.mac) == (gid, mac) {
            RcPeer::Loopback { remote_qpn }
        } else {
            RcPeer::Remote {
                remote_qpn,
                mac: peer.mac,
                gid: peer.gid,
                gid_index,
                hop_limit: 64,
            }
        };
        self.link(i, to, "connecting the RDMA to the exported peer")
    }

    /// Connects its next free connection with a host QP on the same device, both ways;
    /// returns the connection id.
    ///
    /// # Errors
    /// As [`DpaRdma::connect`].
    pub fn connect_host(&mut self, host: &mut RcQp) -> Result<u32, DocaError> {
        let i = self.next_free()?;
        let mine = self.conns[i].qp.qpn();
        const C: &str = "connecting the RDMA QP with the host QP";
        self.link(
            i,
            RcPeer::Loopback {
                remote_qpn: host.qpn(),
            },
            C,
        )?;
        host.connect(&RcConnect::new(RcPeer::Loopback { remote_qpn: mine }))
            .map_err(crate::dpa::DpaError::from)
            .step(C)?;
        Ok(i as u32)
    }

    /// `doca_rdma_get_dpa_handle`.
    ///
    /// # Errors
    /// [`DocaError::NotPermitted`] before [`DpaRdma::start`].
    pub fn dpa_handle(&self) -> Result<u64, DocaError> {
        super::async_ops::started_handle(&self.block, "the RDMA")
    }

    /// The QP number of connection `id` (for a host peer to connect to).
    pub fn qpn(&self, id: u32) -> Option<crate::queues::Qpn> {
        self.conns.get(id as usize).map(|c| c.qp.qpn())
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

/// This device's RoCE v2 IPv4 GID, its MAC and the GID's index.
fn local_address(process: &Process) -> Result<([u8; 16], [u8; 6], u8), DocaError> {
    use crate::mlx5::cmd::QueryNicVportContext;
    const A: &str = "querying the device's address";
    let dev = process.dev().as_ref();
    let (gid_index, entry) = crate::devx::roce_v2_ipv4_address(dev)
        .map_err(crate::dpa::DpaError::from)
        .step(A)?;
    let gid = entry.gid;
    let mac = crate::devx::exec(dev, &QueryNicVportContext)
        .map_err(crate::dpa::DpaError::from)
        .step(A)?
        .mac;
    Ok((gid, mac, gid_index))
}

impl Drop for DpaRdma {
    fn drop(&mut self) {
        // The QPs go before the receive queue they name (fields drop in declaration order:
        // conns, then own_recv); the shared queue's handle is dropped last.
        self.conns.clear();
        self.own_recv = None;
    }
}
