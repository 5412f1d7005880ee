//! Completion contexts (`doca_dpa_completion`), asynchronous operations (`doca_dpa_async_ops`)
//! and memory maps DPA code names (`doca_mmap` with a DPA handle).
//!
//! - A completion context is a CQ in DPA memory, optionally bound to a DPA thread (whose run
//!   arms it; the thread's kernel re-arms it with `doca_dpa_dev_completion_request_notification`),
//!   and a block (`struct doca_dpa_completion_block`, mlx5_dpa_doca.h) with its descriptor and
//!   the read and acknowledged counts. An element is a CQE; its type is the CQE's opcode.
//! - Async ops are an RC QP in DPA memory connected in loopback to a host QP, completing into a
//!   completion context: `doca_dpa_dev_post_memcpy` posts an RDMA WRITE from the source map to
//!   the destination map. The async ops' user data is what their completions report
//!   (`doca_dpa_dev_get_completion_user_data`), kept by QPN in the runtime's `__doca_dpa_udata`.
//! - A memory map is a key: over DPA memory ([`Dpa::mmap_dpa`](super::Dpa::mmap_dpa)) or over
//!   host memory ([`Dpa::mmap_host`](super::Dpa::mmap_host)); its handle is the key.

use std::sync::Arc;

use crate::devx::Devx;
use crate::dpa::queues::{DpaCq, DpaMkey, DpaQueueMem, DpaRcQp};
use crate::dpa::{DpaBuf, Process, StepExt};
use crate::mem::{Access, MemoryRegion};
use crate::queues::{
    Cq, CqConfig, CqEvents, CqTarget, HostQueueMem, QpConfig, RcConnect, RcPeer, RcQp,
};

use super::shared::Shared;
use super::thread::DpaThread;
use super::DocaError;

/// `struct doca_dpa_completion_block`.
const COMPLETION_BLOCK: usize = 0x48;
/// `struct doca_dpa_async_ops_block`.
const ASYNC_OPS_BLOCK: usize = 0x68;
/// The thread block's `comp` field.
const THREAD_BLOCK_COMP: u64 = 0x20;
pub use super::shared::MAX_ASYNC_OPS;
/// Largest queue of a completion context or async ops (2^15).
pub const MAX_QUEUE_SIZE: u32 = 1 << 15;
/// `DOCA_DPA_COMPLETION_LOG_MAX_USER_DATA` (the seed): user data is below 2^24.
pub const COMPLETION_LOG_MAX_USER_DATA: u32 = 24;

/// The DPA address of a started object's block (its device handle).
pub(crate) fn started_handle(block: &Option<DpaBuf>, what: &str) -> Result<u64, DocaError> {
    block
        .as_ref()
        .map(DpaBuf::daddr)
        .ok_or_else(|| DocaError::NotPermitted(format!("{what}: not started")))
}

pub(crate) fn log2_queue(size: u32, what: &str) -> Result<u8, DocaError> {
    if size == 0 || size > MAX_QUEUE_SIZE {
        return Err(DocaError::InvalidValue(format!(
            "{what} queue size {size} (1 ..= {MAX_QUEUE_SIZE})"
        )));
    }
    Ok(size.next_power_of_two().trailing_zeros().max(1) as u8)
}

/// A completion context (`doca_dpa_completion`): create, optionally [`set_thread`], then
/// [`start`]. Drop it before its thread and after the async ops attached to it.
///
/// [`set_thread`]: CompletionContext::set_thread
/// [`start`]: CompletionContext::start
#[derive(Debug)]
pub struct CompletionContext {
    shared: Arc<Shared>,
    process: Process,
    queue_size: u32,
    thread: Option<(u32, u64)>,
    // Drop order: the CQ, then the block.
    cq: Option<DpaCq>,
    block: Option<DpaBuf>,
}

impl CompletionContext {
    pub(crate) fn new(
        shared: Arc<Shared>,
        process: Process,
        queue_size: u32,
    ) -> Result<CompletionContext, DocaError> {
        log2_queue(queue_size, "completion context")?;
        Ok(CompletionContext {
            shared,
            process,
            queue_size,
            thread: None,
            cq: None,
            block: None,
        })
    }

    /// `doca_dpa_completion_get_queue_size`.
    pub fn queue_size(&self) -> u32 {
        self.queue_size
    }

    /// `doca_dpa_completion_set_thread`: completions trigger `thread` (started, of this
    /// context) once the thread runs and while the kernel asks for notifications.
    ///
    /// # Errors
    /// [`DocaError::NotPermitted`] once started, for an unstarted thread or one of another
    /// context, or a thread that already has a completion context.
    pub fn set_thread(&mut self, thread: &mut DpaThread) -> Result<(), DocaError> {
        if self.cq.is_some() {
            return Err(DocaError::NotPermitted(
                "set_thread of a started completion context".into(),
            ));
        }
        if !thread.in_context(&self.shared) {
            return Err(DocaError::NotPermitted(
                "the DPA thread belongs to another DPA context".into(),
            ));
        }
        let (Some(id), Some(block)) = (thread.handler().map(|h| h.id()), thread.block_daddr())
        else {
            return Err(DocaError::NotPermitted(
                "a completion context needs a started DPA thread".into(),
            ));
        };
        thread.attach_completion()?;
        self.thread = Some((id, block));
        Ok(())
    }

    /// `doca_dpa_completion_start`: creates the CQ (bound to the thread, if set).
    ///
    /// # Errors
    /// [`DocaError::NotPermitted`] when already started; firmware refusals, naming the step.
    pub fn start(&mut self) -> Result<(), DocaError> {
        if self.cq.is_some() {
            return Err(DocaError::NotPermitted(
                "start of a started completion context".into(),
            ));
        }
        let p = &self.process;
        let log = log2_queue(self.queue_size, "completion context")?;
        let cqc = CqConfig {
            events: match self.thread {
                Some((id, _)) => CqEvents::DpaThread(id),
                None => CqEvents::Vector(0),
            },
            ..CqConfig::new(log)
        };
        const Q: &str = "creating the completion context's CQ";
        let mem = DpaQueueMem::alloc(p, cqc.ring_bytes()).step(Q)?;
        let cq = DpaCq::create(p, p.uar(), mem, &cqc).step(Q)?;
        let block = p
            .alloc(COMPLETION_BLOCK as u64)
            .step("allocating the completion block")?;
        let mut b = vec![0u8; COMPLETION_BLOCK];
        b[..56].copy_from_slice(&cq.descriptor().to_bytes());
        b[0x40..0x44].copy_from_slice(&u32::from(p.vhca_id()).to_le_bytes());
        p.copy_to_dev(block.daddr(), &b)
            .step("writing the completion block")?;
        if let Some((_, tblock)) = self.thread {
            p.copy_to_dev(tblock + THREAD_BLOCK_COMP, &block.daddr().to_le_bytes())
                .step("attaching the completion context to the thread")?;
        }
        self.cq = Some(cq);
        self.block = Some(block);
        Ok(())
    }

    /// `doca_dpa_completion_get_dpa_handle`.
    ///
    /// # Errors
    /// [`DocaError::NotPermitted`] before [`CompletionContext::start`].
    pub fn dpa_handle(&self) -> Result<u64, DocaError> {
        started_handle(&self.block, "the completion context")
    }

    fn cq(&self) -> Option<&DpaCq> {
        self.cq.as_ref()
    }

    /// What a queue of context `shared` attaching to it needs.
    pub(crate) fn attach_target(&self, shared: &Arc<Shared>) -> Result<AttachedCq, DocaError> {
        if !Arc::ptr_eq(&self.shared, shared) {
            return Err(DocaError::NotPermitted(
                "the completion context belongs to another DPA context".into(),
            ));
        }
        let Some(cq) = self.cq() else {
            return Err(DocaError::NotPermitted(
                "attach to a started completion context".into(),
            ));
        };
        Ok(AttachedCq {
            cqn: cq.target_cqn(),
            handle: self.dpa_handle()?,
            keep: cq.keep_alive(),
        })
    }
}

/// A completion context's CQ as async ops and RDMAs name it: its number, the context's DPA
/// handle, and what keeps it alive.
pub(crate) struct AttachedCq {
    cqn: crate::queues::Cqn,
    pub(crate) handle: u64,
    keep: Arc<dyn std::any::Any + Send + Sync>,
}

impl CqTarget for AttachedCq {
    fn target_cqn(&self) -> crate::queues::Cqn {
        self.cqn
    }
    fn keep_alive(&self) -> Arc<dyn std::any::Any + Send + Sync> {
        Arc::clone(&self.keep)
    }
}

/// Async ops (`doca_dpa_async_ops`): create, [`attach`], [`start`]; DPA code posts with
/// [`AsyncOps::dpa_handle`]. Drop them before their completion context's thread.
///
/// [`attach`]: AsyncOps::attach
/// [`start`]: AsyncOps::start
pub struct AsyncOps {
    dev: Arc<dyn Devx>,
    process: Process,
    shared: Arc<Shared>,
    queue_size: u32,
    user_data: u64,
    attached: Option<AttachedCq>,
    udata_slot: Option<usize>,
    // Drop order: the QPs (the DPA one names the attached CQ), the responder's CQ, the block.
    qp: Option<DpaRcQp>,
    responder: Option<RcQp>,
    responder_cq: Option<Cq>,
    block: Option<DpaBuf>,
}

impl std::fmt::Debug for AsyncOps {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AsyncOps")
            .field("queue_size", &self.queue_size)
            .field("user_data", &self.user_data)
            .field("qpn", &self.qp.as_ref().map(DpaRcQp::qpn))
            .finish_non_exhaustive()
    }
}

impl AsyncOps {
    pub(crate) fn new(
        dev: Arc<dyn Devx>,
        process: Process,
        shared: Arc<Shared>,
        queue_size: u32,
        user_data: u64,
    ) -> Result<AsyncOps, DocaError> {
        log2_queue(queue_size, "async ops")?;
        if user_data >> COMPLETION_LOG_MAX_USER_DATA != 0 {
            return Err(DocaError::InvalidValue(format!(
                "user data {user_data:#x} (below 2^{COMPLETION_LOG_MAX_USER_DATA})"
            )));
        }
        Ok(AsyncOps {
            dev,
            process,
            shared,
            queue_size,
            user_data,
            attached: None,
            udata_slot: None,
            qp: None,
            responder: None,
            responder_cq: None,
            block: None,
        })
    }

    /// `doca_dpa_async_ops_get_queue_size`.
    pub fn queue_size(&self) -> u32 {
        self.queue_size
    }

    /// `doca_dpa_async_ops_get_user_data`.
    pub fn user_data(&self) -> u64 {
        self.user_data
    }

    /// `doca_dpa_async_ops_attach`: completions go to `comp`, which must be started and of
    /// this context.
    ///
    /// # Errors
    /// [`DocaError::NotPermitted`] once started, or for a completion context that is not
    /// started or is another context's.
    pub fn attach(&mut self, comp: &CompletionContext) -> Result<(), DocaError> {
        if self.qp.is_some() {
            return Err(DocaError::NotPermitted(
                "attach of started async ops".into(),
            ));
        }
        self.attached = Some(comp.attach_target(&self.shared)?);
        Ok(())
    }

    /// `doca_dpa_async_ops_start`: the QP in DPA memory (completing into the attached
    /// context), its loopback peer on the host, and the block.
    ///
    /// # Errors
    /// [`DocaError::NotPermitted`] when not attached or already started;
    /// [`DocaError::NoMemory`] past [`MAX_ASYNC_OPS`]; firmware refusals, naming the step.
    pub fn start(&mut self) -> Result<(), DocaError> {
        if self.qp.is_some() {
            return Err(DocaError::NotPermitted("start of started async ops".into()));
        }
        let Some(target) = &self.attached else {
            return Err(DocaError::NotPermitted(
                "async ops need a completion context (attach) before start".into(),
            ));
        };
        let p = &self.process;
        let dev = &self.dev;
        let log = log2_queue(self.queue_size, "async ops")?;
        const Q: &str = "creating the async ops' queues";
        let qpc = QpConfig {
            log_sq_size: log,
            log_rq_size: None,
            max_recv_sge: 1,
            signal_every: 1,
        };
        let mem = DpaQueueMem::alloc(p, qpc.ring_bytes()).step(Q)?;
        let mut qp = DpaRcQp::create(p, p.uar(), target, target, mem, &qpc).step(Q)?;
        let rcqc = CqConfig::new(2);
        let rmem = HostQueueMem::alloc(dev, rcqc.ring_bytes())
            .map_err(crate::dpa::DpaError::from)
            .step(Q)?;
        let responder_cq = Cq::create(dev, p.uar(), rmem, &rcqc)
            .map_err(crate::dpa::DpaError::from)
            .step(Q)?;
        let rqpc = QpConfig::new(1, 1);
        let rqmem = HostQueueMem::alloc(dev, rqpc.ring_bytes())
            .map_err(crate::dpa::DpaError::from)
            .step(Q)?;
        let mut responder = RcQp::create(
            dev,
            p.pd(),
            p.uar(),
            &responder_cq,
            &responder_cq,
            rqmem,
            &rqpc,
        )
        .map_err(crate::dpa::DpaError::from)
        .step(Q)?;
        const C: &str = "connecting the async ops' QPs";
        qp.connect(&RcConnect::new(RcPeer::Loopback {
            remote_qpn: responder.qpn(),
        }))
        .step(C)?;
        responder
            .connect(&RcConnect::new(RcPeer::Loopback {
                remote_qpn: qp.qpn(),
            }))
            .map_err(crate::dpa::DpaError::from)
            .step(C)?;
        let block = p
            .alloc(ASYNC_OPS_BLOCK as u64)
            .step("allocating the async ops block")?;
        let mut b = vec![0u8; ASYNC_OPS_BLOCK];
        b[..88].copy_from_slice(&qp.descriptor().to_bytes());
        b[0x60..0x64].copy_from_slice(&u32::from(p.vhca_id()).to_le_bytes());
        p.copy_to_dev(block.daddr(), &b)
            .step("writing the async ops block")?;
        let slot = self.shared.take_udata_slot()?;
        let mut entry = [0u8; 8];
        entry[..4].copy_from_slice(&qp.qpn().0.to_le_bytes());
        entry[4..].copy_from_slice(&(self.user_data as u32).to_le_bytes());
        if let Err(e) = p
            .copy_to_dev(self.shared.udata_daddr(slot), &entry)
            .step("registering the async ops' user data")
        {
            self.shared.give_udata_slot(slot);
            return Err(e.into());
        }
        self.udata_slot = Some(slot);
        self.qp = Some(qp);
        self.responder = Some(responder);
        self.responder_cq = Some(responder_cq);
        self.block = Some(block);
        Ok(())
    }

    /// `doca_dpa_async_ops_get_dpa_handle`.
    ///
    /// # Errors
    /// [`DocaError::NotPermitted`] before [`AsyncOps::start`].
    pub fn dpa_handle(&self) -> Result<u64, DocaError> {
        started_handle(&self.block, "the async ops")
    }
}

impl Drop for AsyncOps {
    fn drop(&mut self) {
        // The QPs go first (field order does that after this), the entry is cleared now: a
        // later QP of the same number must not report this user data.
        if let Some(slot) = self.udata_slot.take() {
            let _ = self
                .process
                .copy_to_dev(self.shared.udata_daddr(slot), &[0u8; 8]);
            self.shared.give_udata_slot(slot);
        }
    }
}

/// A memory map DPA code names (`doca_mmap` with a DPA handle): a key over DPA memory or over
/// host memory, with local write and remote read, write and atomic rights.
#[derive(Debug)]
pub enum DpaMmap {
    /// Over a DPA buffer: addresses are DPA addresses.
    Dpa(DpaMkey),
    /// Over host memory: addresses are host addresses ([`MemoryRegion::addr`]).
    Host(MemoryRegion),
}

impl DpaMmap {
    pub(crate) fn over_dpa(process: &Process, buf: &DpaBuf) -> Result<DpaMmap, DocaError> {
        Ok(DpaMmap::Dpa(
            DpaMkey::over(process, buf, map_access()).step("creating the map's key")?,
        ))
    }

    pub(crate) fn host(
        dev: &Arc<dyn Devx>,
        process: &Process,
        len: usize,
    ) -> Result<DpaMmap, DocaError> {
        Ok(DpaMmap::Host(
            MemoryRegion::alloc(dev, process.pd(), len, map_access())
                .map_err(crate::dpa::DpaError::from)
                .step("registering the map's host memory")?,
        ))
    }

    /// `doca_mmap_dev_get_dpa_handle`: the map as DPA code names it (`doca_dpa_dev_mmap_t`):
    /// its key, with [`MLX5_DPA_DOCA_MMAP_HOST`](super::MLX5_DPA_DOCA_MMAP_HOST) (bit 32) for a
    /// map over host memory, which `doca_dpa_dev_mmap_get_external_ptr` reaches through the
    /// context's window. Work requests take the key, the low 32 bits.
    pub fn dpa_handle(&self) -> u64 {
        match self {
            DpaMmap::Dpa(k) => u64::from(k.lkey().0),
            DpaMmap::Host(m) => u64::from(m.lkey().0) | super::MLX5_DPA_DOCA_MMAP_HOST,
        }
    }

    /// Its range: `(DPA address, length)` for a DPA map, `(host address, length)` for a host
    /// map.
    pub fn range(&self) -> (u64, u64) {
        match self {
            DpaMmap::Dpa(k) => k.range(),
            DpaMmap::Host(m) => (m.addr(), m.len() as u64),
        }
    }

    /// The host memory of a host map.
    pub fn host_memory(&self) -> Option<&MemoryRegion> {
        match self {
            DpaMmap::Host(m) => Some(m),
            DpaMmap::Dpa(_) => None,
        }
    }
}

fn map_access() -> Access {
    Access::LOCAL_WRITE | Access::REMOTE_WRITE | Access::REMOTE_READ | Access::REMOTE_ATOMIC
}
