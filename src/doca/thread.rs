//! DOCA DPA threads (`doca_dpa_thread`) and notification completions
//! (`doca_dpa_notification_completion`).
//!
//! A thread is a FlexIO event handler on the runtime's `__doca_dpa_thread_entry`, whose
//! argument is a small block in DPA memory (`struct doca_dpa_thread_block`, mlx5_dpa_doca.h):
//! the user's kernel, its argument, and the notification block of an attached notification
//! completion. Its local storage is FlexIO's thread-local storage.
//!
//! A notification completion is a CQ in DPA memory bound to the thread plus an SQ in DPA memory
//! completing into that CQ: `doca_dpa_dev_thread_notify` posts a NOP asking for a CQE, the CQE
//! activates the thread (its CQ armed), and the thread consumes one CQE per run
//! (`struct doca_dpa_notify_block`). This is the NIC's own way of activating a DPA thread, so
//! the same path runs on a BlueField-3. The thread arms its CQ itself, through its outbox: once
//! when the host runs it (`doca_dpa_thread_run`), then each time it reschedules.

use std::sync::Arc;

use crate::devx::Devx;
use crate::dpa::queues::{DpaCq, DpaEthSq, DpaQueueMem};
use crate::dpa::thread::{Affinity, EventHandler, EventHandlerAttr};
use crate::dpa::{DpaBuf, Process, StepExt};
use crate::queues::steering::{Tis, TransportDomain};
use crate::queues::{CqConfig, CqEvents};

use super::DocaError;

/// The runtime's entry of every DOCA DPA thread.
const THREAD_ENTRY: &str = "__doca_dpa_thread_entry";
/// `struct doca_dpa_thread_block`: func, arg, notify, arm, comp, rank, num_threads.
const THREAD_BLOCK: usize = 48;
const BLOCK_RANK: u64 = 0x28;
const BLOCK_NOTIFY: u64 = 0x10;
const BLOCK_ARM: u64 = 0x18;
/// `struct doca_dpa_notify_block`.
const NOTIFY_BLOCK: usize = 0xa0;
const NOTIFY_SQ: usize = 0x40;
/// Notifications one completion holds before its thread consumes them (the CQ's entries).
pub const NOTIFY_QUEUE_LOG: u8 = 10;
/// NOPs in flight on the notifiers' SQ.
const NOTIFY_SQ_LOG: u8 = 6;

/// What a thread needs of its context.
#[derive(Clone)]
pub(crate) struct ThreadCtx {
    /// The context's shared state: its identity for "same context" checks.
    pub(crate) shared: Arc<super::shared::Shared>,
    pub(crate) dev: Arc<dyn Devx>,
    pub(crate) process: Process,
    pub(crate) outbox_id: u32,
    pub(crate) window_id: u32,
}

/// A DOCA DPA thread (`doca_dpa_thread`): set its kernel, argument, local storage and affinity,
/// then [`DpaThread::start`] and [`DpaThread::run`]. Dropped (or [`DpaThread::stop`]ped), its
/// FlexIO thread is destroyed.
#[derive(Debug)]
pub struct DpaThread {
    ctx: ThreadCtx,
    func: Option<(String, u64)>,
    local_storage: u64,
    affinity: Affinity,
    // Drop order: the handler, then its block.
    handler: Option<EventHandler>,
    block: Option<DpaBuf>,
    notify_attached: bool,
    completion_attached: bool,
}

impl std::fmt::Debug for ThreadCtx {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ThreadCtx")
            .field("process", &self.process.id())
            .field("outbox_id", &self.outbox_id)
            .field("window_id", &self.window_id)
            .finish()
    }
}

impl DpaThread {
    pub(crate) fn new(ctx: ThreadCtx) -> DpaThread {
        DpaThread {
            ctx,
            func: None,
            local_storage: 0,
            affinity: Affinity::None,
            handler: None,
            block: None,
            notify_attached: false,
            completion_attached: false,
        }
    }

    fn unstarted(&self, what: &str) -> Result<(), DocaError> {
        if self.handler.is_some() {
            return Err(DocaError::NotPermitted(format!(
                "{what} of a started DPA thread"
            )));
        }
        Ok(())
    }

    /// `doca_dpa_thread_set_func_arg`: the kernel `void func(uint64_t arg)` it runs.
    ///
    /// # Errors
    /// [`DocaError::NotPermitted`] once started; [`DocaError::InvalidValue`] for a function
    /// the application lacks.
    pub fn set_func_arg(&mut self, func: &str, arg: u64) -> Result<(), DocaError> {
        self.unstarted("set_func_arg")?;
        self.ctx.process.symbol(func).map_err(|_| {
            DocaError::InvalidValue(format!("the application has no function {func:?}"))
        })?;
        self.func = Some((func.to_string(), arg));
        Ok(())
    }

    /// `doca_dpa_thread_get_func_arg`.
    pub fn func_arg(&self) -> Option<(&str, u64)> {
        self.func.as_ref().map(|(f, a)| (f.as_str(), *a))
    }

    /// `doca_dpa_thread_set_local_storage`: DPA memory `doca_dpa_dev_thread_get_local_storage`
    /// returns.
    ///
    /// # Errors
    /// [`DocaError::NotPermitted`] once started.
    pub fn set_local_storage(&mut self, daddr: u64) -> Result<(), DocaError> {
        self.unstarted("set_local_storage")?;
        self.local_storage = daddr;
        Ok(())
    }

    /// `doca_dpa_thread_get_local_storage`.
    pub fn local_storage(&self) -> u64 {
        self.local_storage
    }

    /// `doca_dpa_thread_set_affinity`: the EU (or EU group) it runs on.
    ///
    /// # Errors
    /// [`DocaError::NotPermitted`] once started.
    pub fn set_affinity(&mut self, affinity: Affinity) -> Result<(), DocaError> {
        self.unstarted("set_affinity")?;
        self.affinity = affinity;
        Ok(())
    }

    /// `doca_dpa_thread_get_affinity`.
    pub fn affinity(&self) -> Affinity {
        self.affinity
    }

    /// `doca_dpa_thread_start`: creates the FlexIO thread (it waits for its first trigger).
    ///
    /// # Errors
    /// [`DocaError::InvalidValue`] without a kernel; [`DocaError::NotPermitted`] when already
    /// started; firmware refusals, naming the step.
    pub fn start(&mut self) -> Result<(), DocaError> {
        self.unstarted("start")?;
        let Some((func, arg)) = &self.func else {
            return Err(DocaError::InvalidValue(
                "a DPA thread needs set_func_arg before start".into(),
            ));
        };
        let p = &self.ctx.process;
        let func_addr = p.symbol(func)?;
        let block = p
            .alloc(THREAD_BLOCK as u64)
            .step("allocating the DPA thread's block")?;
        let mut b = [0u8; THREAD_BLOCK];
        b[0..8].copy_from_slice(&func_addr.to_le_bytes());
        b[8..16].copy_from_slice(&arg.to_le_bytes());
        p.copy_to_dev(block.daddr(), &b)
            .step("writing the DPA thread's block")?;
        let handler = p
            .event_handler(&EventHandlerAttr {
                thread_local_storage_daddr: self.local_storage,
                default_outbox_id: self.ctx.outbox_id,
                default_window_id: self.ctx.window_id,
                affinity: self.affinity,
                ..EventHandlerAttr::new(THREAD_ENTRY, block.daddr())
            })
            .step("creating the DPA thread")?;
        self.block = Some(block);
        self.handler = Some(handler);
        Ok(())
    }

    /// `doca_dpa_thread_run`: from now on the thread runs when triggered. With a notification
    /// completion or a completion context attached, the thread is run once to arm their CQs (through its outbox, as it
    /// re-arms it after every run): the runtime sees the block's `arm` request, arms and
    /// reschedules without calling the kernel.
    ///
    /// # Errors
    /// [`DocaError::NotPermitted`] before [`DpaThread::start`]; firmware refusals.
    pub fn run(&self) -> Result<(), DocaError> {
        let (Some(h), Some(block)) = (&self.handler, &self.block) else {
            return Err(DocaError::NotPermitted(
                "run of a DPA thread that was not started".into(),
            ));
        };
        if self.notify_attached || self.completion_attached {
            self.ctx
                .process
                .copy_to_dev(block.daddr() + BLOCK_ARM, &1u64.to_le_bytes())
                .step("requesting the arm of the notification CQ")?;
            h.run(block.daddr())
                .step("running the DPA thread to arm its CQ")?;
        }
        Ok(())
    }

    /// `doca_dpa_thread_stop` (and destroy): destroys the FlexIO thread, waiting (bounded) for
    /// a run in progress to end.
    pub fn stop(mut self) {
        self.handler.take();
    }

    pub(crate) fn block_daddr(&self) -> Option<u64> {
        self.block.as_ref().map(DpaBuf::daddr)
    }

    /// Marks a completion context attached (one per thread).
    pub(crate) fn attach_completion(&mut self) -> Result<(), DocaError> {
        if self.completion_attached {
            return Err(DocaError::NotPermitted(
                "the DPA thread already has a completion context".into(),
            ));
        }
        self.completion_attached = true;
        Ok(())
    }

    /// Whether the thread belongs to the context whose shared state is `shared`.
    pub(crate) fn in_context(&self, shared: &Arc<super::shared::Shared>) -> bool {
        Arc::ptr_eq(&self.ctx.shared, shared)
    }

    /// The FlexIO thread underneath, once started.
    pub fn handler(&self) -> Option<&EventHandler> {
        self.handler.as_ref()
    }
}

/// A notification completion (`doca_dpa_notification_completion`): DPA code notifies its thread
/// with [`NotificationCompletion::dpa_handle`]. Drop it before its thread.
#[derive(Debug)]
pub struct NotificationCompletion {
    // Drop order: the SQ (it names the CQ), the CQ, the block, the TIS and its domain.
    _sq: DpaEthSq,
    _cq: DpaCq,
    block: DpaBuf,
    _tis: Arc<Tis>,
    _td: Arc<TransportDomain>,
}

impl NotificationCompletion {
    /// Creates it attached to `thread`, which must be started
    /// (`doca_dpa_notification_completion_create` + `start`).
    pub(crate) fn create(
        ctx: &ThreadCtx,
        thread: &mut DpaThread,
    ) -> Result<NotificationCompletion, DocaError> {
        let (Some(h), Some(tblock)) = (&thread.handler, &thread.block) else {
            return Err(DocaError::NotPermitted(
                "a notification completion needs a started DPA thread".into(),
            ));
        };
        if thread.notify_attached {
            return Err(DocaError::NotPermitted(
                "the DPA thread already has a notification completion".into(),
            ));
        }
        let p = &ctx.process;
        let dev = &ctx.dev;
        const Q: &str = "creating the notification queues";
        let cqc = CqConfig {
            events: CqEvents::DpaThread(h.id()),
            ..CqConfig::new(NOTIFY_QUEUE_LOG)
        };
        let cq_mem = DpaQueueMem::alloc(p, cqc.ring_bytes()).step(Q)?;
        let cq = DpaCq::create(p, p.uar(), cq_mem, &cqc).step(Q)?;
        let td = TransportDomain::alloc(dev)
            .map_err(crate::dpa::DpaError::from)
            .step(Q)?;
        let tis = Tis::create(dev, &td, p.pd())
            .map_err(crate::dpa::DpaError::from)
            .step(Q)?;
        let sq_mem = DpaQueueMem::alloc(p, 64usize << NOTIFY_SQ_LOG).step(Q)?;
        let sq = DpaEthSq::create(p, p.uar(), &tis, &cq, sq_mem, NOTIFY_SQ_LOG).step(Q)?;
        let block = p
            .alloc(NOTIFY_BLOCK as u64)
            .step("allocating the notification block")?;
        let mut b = vec![0u8; NOTIFY_BLOCK];
        b[..56].copy_from_slice(&cq.descriptor().to_bytes());
        b[NOTIFY_SQ..NOTIFY_SQ + 88].copy_from_slice(&sq.descriptor().to_bytes());
        p.copy_to_dev(block.daddr(), &b)
            .step("writing the notification block")?;
        // The thread's block names it from now on.
        p.copy_to_dev(tblock.daddr() + BLOCK_NOTIFY, &block.daddr().to_le_bytes())
            .step("attaching the notification block to the thread")?;
        thread.notify_attached = true;
        Ok(NotificationCompletion {
            _sq: sq,
            _cq: cq,
            block,
            _tis: tis,
            _td: td,
        })
    }

    /// `doca_dpa_notification_completion_get_dpa_handle`: what `doca_dpa_dev_thread_notify`
    /// takes.
    pub fn dpa_handle(&self) -> u64 {
        self.block.daddr()
    }
}

/// A thread group (`doca_dpa_tg`): DPA threads at ranks `0 .. num_threads`; once started, each
/// member's `doca_dpa_dev_thread_rank` / `doca_dpa_dev_num_threads` give its rank and the
/// group's size (this project's reading of the group: DOCA documents only the host calls).
#[derive(Debug)]
pub struct DpaThreadGroup {
    shared: Arc<super::shared::Shared>,
    process: Process,
    members: Vec<Option<u64>>,
    started: bool,
}

impl DpaThreadGroup {
    pub(crate) fn new(
        shared: Arc<super::shared::Shared>,
        process: Process,
        num_threads: u32,
    ) -> Result<DpaThreadGroup, DocaError> {
        if num_threads == 0 || num_threads > 256 {
            return Err(DocaError::InvalidValue(format!(
                "a thread group of {num_threads} threads (1 ..= 256)"
            )));
        }
        Ok(DpaThreadGroup {
            shared,
            process,
            members: vec![None; num_threads as usize],
            started: false,
        })
    }

    /// `doca_dpa_thread_group_get_num_threads`.
    pub fn num_threads(&self) -> u32 {
        self.members.len() as u32
    }

    /// `doca_dpa_thread_group_set_thread`: `thread` (started, of this context) at `rank`.
    ///
    /// # Errors
    /// [`DocaError::InvalidValue`] for a rank out of range; [`DocaError::NotPermitted`] once
    /// started, for a rank already set, or an unstarted thread or one of another context.
    pub fn set_thread(&mut self, thread: &DpaThread, rank: u32) -> Result<(), DocaError> {
        if self.started {
            return Err(DocaError::NotPermitted(
                "set_thread of a started thread group".into(),
            ));
        }
        let n = self.members.len();
        let Some(slot) = self.members.get_mut(rank as usize) else {
            return Err(DocaError::InvalidValue(format!(
                "rank {rank} in a group of {n} threads"
            )));
        };
        if slot.is_some() {
            return Err(DocaError::NotPermitted(format!(
                "rank {rank} is already set"
            )));
        }
        if !thread.in_context(&self.shared) {
            return Err(DocaError::NotPermitted(
                "the DPA thread belongs to another DPA context".into(),
            ));
        }
        let Some(block) = thread.block_daddr() else {
            return Err(DocaError::NotPermitted(
                "a thread group takes started DPA threads".into(),
            ));
        };
        *slot = Some(block);
        Ok(())
    }

    /// `doca_dpa_thread_group_start`: every rank set, each member learns its rank.
    ///
    /// # Errors
    /// [`DocaError::NotPermitted`] with a rank unset or when already started; copy failures.
    pub fn start(&mut self) -> Result<(), DocaError> {
        if self.started {
            return Err(DocaError::NotPermitted(
                "start of a started thread group".into(),
            ));
        }
        if let Some(r) = self.members.iter().position(Option::is_none) {
            return Err(DocaError::NotPermitted(format!(
                "thread group rank {r} has no thread"
            )));
        }
        let n = self.num_threads();
        for (rank, block) in self.members.iter().enumerate() {
            let Some(block) = block else { continue };
            let mut b = [0u8; 8];
            b[..4].copy_from_slice(&(rank as u32).to_le_bytes());
            b[4..].copy_from_slice(&n.to_le_bytes());
            self.process
                .copy_to_dev(block + BLOCK_RANK, &b)
                .step("writing a thread group member's rank")?;
        }
        self.started = true;
        Ok(())
    }
}
