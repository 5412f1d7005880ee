//! Queues whose rings and doorbell records live in DPA memory (FlexIO's `flexio_qmem`, with
//! `flexio_cq_create` / `flexio_sq_create` / `flexio_rq_create` / `flexio_qp_create`).
//!
//! The host creates these queues and hands them to a DPA program; the DPA posts, rings (through
//! an [`Outbox`](super::outbox::Outbox)) and polls. The host never touches the rings after
//! creation: it cannot load or store DPA memory, so set-up writes (CQEs initialised
//! hardware-owned, receive WQEs, zeroed records) go through the process's copier
//! ([`Process::copy_to_dev`]), as FlexIO's host library does.
//!
//! - [`DpaQueueMem`]: a ring and its doorbell record in one DPA buffer, usable wherever the
//!   driver takes a [`QueueMemory`] (`umem_id` = the process's DUMEM, offsets relative to its
//!   base, no host pointer).
//! - [`DpaCq`]: a CQ in DPA memory; bound to a DPA thread (`apu_cq`, [`CqEvents::DpaThread`]),
//!   to a DPA EQ, or to a host EQ.
//! - [`DpaEthSq`], [`DpaRq`], [`DpaRcQp`]: send, receive and RC queues in DPA memory; an RC QP
//!   may receive from a [`DpaSrq`], a shared receive queue (RMP) in DPA memory. Their CQ
//!   may be a [`DpaCq`] or a host [`crate::queues::Cq`] (completions of DPA-posted work polled by
//!   the host): anything implementing [`CqTarget`].
//! - [`DpaMkey`]: a memory key over a range of DPA memory (buffers named by WQEs, message
//!   stream slots), stable for its lifetime.
//!
//! Each queue exports its [`CqDescriptor`] / [`WqDescriptor`] with DPA addresses, which is
//! what the device programs in `fw-blobs` take. Every queue holds what it points at (its CQ,
//! memory, UAR, the process) and is destroyed before them.

use std::sync::Arc;

use crate::devx::{self, DevxObj};
use crate::mem::{Access, Lkey};
use crate::mlx5::cmd::{
    CqEventTarget, CreateCq, CreateMkey, CreateQp, CreateRmp, CreateRq, CreateSq, RingMem, WqAttr,
};
use crate::mlx5::wire::cqe::{self, cqe64_offset};
use crate::mlx5::wire::wqe::{data_seg, end_of_scatter_seg, SEG};
use crate::queues::descriptor::wq_kind;
use crate::queues::ring::CQE_INIT_OP_OWN;
use crate::queues::steering::Tis;
use crate::queues::wq::{create_rdy_rq, create_rdy_sq};
use crate::queues::{
    CqConfig, CqDescriptor, CqEvents, CqTarget, Cqn, MemPlace, QpConfig, Qpn, QueueMemory,
    RcConnect, RqConfig, RqTarget, Rqn, Sqn, WqDescriptor,
};
use crate::uar::UarPage;

use super::process::ProcessInner;
use super::{DpaBuf, DpaError, Process};

/// Alignment of rings in DPA memory (a WQEBB / CQE).
pub const DPA_RING_ALIGN: u64 = 64;
/// Bytes given to a doorbell record (a cache line of its own).
pub const DPA_DBR_SIZE: u64 = 64;

/// A ring and its doorbell record in one buffer of DPA memory.
#[derive(Debug)]
pub struct DpaQueueMem {
    buf: DpaBuf,
    ring_len: usize,
    dumem_id: u32,
    dumem_base: u64,
}

impl DpaQueueMem {
    /// Allocates DPA memory for a ring of `ring_len` bytes followed by its doorbell record.
    ///
    /// # Errors
    /// A zero length, or the process's DPA memory is exhausted.
    pub fn alloc(process: &Process, ring_len: usize) -> Result<DpaQueueMem, DpaError> {
        if ring_len == 0 {
            return Err(DpaError::BadArgs("a ring of 0 bytes".into()));
        }
        let ring = (ring_len as u64).next_multiple_of(DPA_RING_ALIGN);
        let buf = process.alloc(ring + DPA_DBR_SIZE)?;
        let (dumem_id, dumem_base) = process.dumem();
        if !buf.daddr().is_multiple_of(DPA_RING_ALIGN) {
            return Err(DpaError::Device(format!(
                "DPA buffer at {:#x} is not {DPA_RING_ALIGN}-byte aligned",
                buf.daddr()
            )));
        }
        Ok(DpaQueueMem {
            buf,
            ring_len: ring as usize,
            dumem_id,
            dumem_base,
        })
    }

    /// DPA address of the ring.
    pub fn ring_daddr(&self) -> u64 {
        self.buf.daddr()
    }

    /// Bytes of the ring.
    pub fn ring_len(&self) -> usize {
        self.ring_len
    }

    /// DPA address of the doorbell record.
    pub fn dbr_daddr(&self) -> u64 {
        self.buf.daddr() + self.ring_len as u64
    }

    fn place(&self, daddr: u64, len: usize) -> MemPlace {
        MemPlace {
            umem_id: self.dumem_id,
            umem_offset: daddr - self.dumem_base,
            len,
            host: None,
            device_addr: daddr,
        }
    }
}

// SAFETY: the places are fixed at allocation, inside one DPA buffer this value owns, the ring
// 64-byte aligned (checked) and the record 64-byte aligned after it; `host` is `None`, so the
// contract on host pointers holds vacuously. The DUMEM id and offsets name that same memory.
unsafe impl QueueMemory for DpaQueueMem {
    fn ring(&self) -> MemPlace {
        self.place(self.ring_daddr(), self.ring_len)
    }
    fn doorbell_record(&self) -> MemPlace {
        self.place(self.dbr_daddr(), 8)
    }
}

fn ring_mem(mem: &DpaQueueMem) -> RingMem {
    let (r, d) = (mem.ring(), mem.doorbell_record());
    RingMem {
        umem_id: r.umem_id,
        umem_offset: r.umem_offset,
        dbr_umem_id: d.umem_id,
        dbr_offset: d.umem_offset,
    }
}

fn check_len(mem: &DpaQueueMem, what: &'static str, need: usize) -> Result<(), DpaError> {
    if mem.ring_len < need {
        return Err(DpaError::BadArgs(format!(
            "{what} needs {need} ring bytes, the DPA queue memory has {}",
            mem.ring_len
        )));
    }
    Ok(())
}

/// Checks a receive queue's sizes against its memory, and zeroes its ring and record.
fn prepare_rq(
    process: &Process,
    mem: &DpaQueueMem,
    cfg: &RqConfig,
    what: &'static str,
) -> Result<(), DpaError> {
    cfg.check(what).map_err(DpaError::BadArgs)?;
    check_len(mem, what, cfg.ring_bytes())?;
    process.memset(mem.ring_daddr(), 0, cfg.ring_bytes())?;
    process.copy_to_dev(mem.dbr_daddr(), &[0u8; 8])?;
    Ok(())
}

/// The parts of a queue in DPA memory that must outlive the firmware object pointing at them.
#[derive(Debug)]
struct Held {
    _mem: DpaQueueMem,
    _uar: Arc<UarPage>,
    /// The extension the queue was made through ([`Process::extend`]), if any.
    _ext: Option<Arc<dyn std::any::Any + Send + Sync>>,
    _process: Arc<ProcessInner>,
}

/// A CQ firmware object with everything it points at (held by queues reporting to it).
#[derive(Debug)]
struct DpaCqObj {
    obj: DevxObj,
    _held: Held,
}

/// A CQ whose ring and doorbell record are in DPA memory (FlexIO `flexio_cq_create` with
/// `cq_ring_qmem` / `cq_dbr_daddr` in DPA memory).
#[derive(Debug)]
pub struct DpaCq {
    shared: Arc<DpaCqObj>,
    cqn: Cqn,
    log_size: u8,
    cqe_bytes: u32,
    ring_daddr: u64,
    dbr_daddr: u64,
    uar_page: u32,
}

impl DpaCq {
    /// Creates the CQ over `mem`: every CQE initialised hardware-owned and the record zeroed
    /// (through copies), then CREATE_CQ naming the process's DUMEM. Events go where
    /// `cfg.events` says: [`CqEvents::DpaThread`] for a CQ that activates an event handler.
    ///
    /// # Errors
    /// A configuration out of range, memory too small, a copy failure or firmware's refusal.
    pub fn create(
        process: &Process,
        uar: &Arc<UarPage>,
        mem: DpaQueueMem,
        cfg: &CqConfig,
    ) -> Result<DpaCq, DpaError> {
        if cfg.log_size > 22 {
            return Err(DpaError::BadArgs(format!(
                "CQ log_size {} (at most 22)",
                cfg.log_size
            )));
        }
        let bytes = cfg.ring_bytes();
        check_len(&mem, "the CQ", bytes)?;
        let cqe_bytes = cfg.cqe_size.bytes();
        let mut image = vec![0u8; bytes];
        for e in image.chunks_exact_mut(cqe_bytes) {
            e[cqe64_offset(0, cqe_bytes) + cqe::at::OP_OWN] = CQE_INIT_OP_OWN;
        }
        process.copy_to_dev(mem.ring_daddr(), &image)?;
        process.copy_to_dev(mem.dbr_daddr(), &[0u8; 8])?;
        let target = match cfg.events {
            CqEvents::Vector(n) => CqEventTarget::Eq(process.dev().query_eqn(n)?),
            CqEvents::Eq(n) => CqEventTarget::Eq(n),
            CqEvents::DpaThread(n) => CqEventTarget::DpaThread(process.thread_here(n)?),
            CqEvents::DpaEq(n) => CqEventTarget::DpaEq(n),
        };
        let (obj, cqn) = devx::create(
            process.dev(),
            &CreateCq {
                log_cq_size: cfg.log_size,
                cqe_sz: u8::from(cqe_bytes == 128),
                uar_page: uar.page_id(),
                target,
                mem: ring_mem(&mem),
                cq_period: cfg.moderation_period_us,
                cq_max_count: cfg.moderation_count,
                oi: cfg.overrun_ignore,
                cc: false,
                cqe_comp: false,
            },
        )?;
        Ok(DpaCq {
            cqn,
            log_size: cfg.log_size,
            cqe_bytes: cqe_bytes as u32,
            ring_daddr: mem.ring_daddr(),
            dbr_daddr: mem.dbr_daddr(),
            uar_page: uar.page_id(),
            shared: Arc::new(DpaCqObj {
                obj,
                _held: Held {
                    _mem: mem,
                    _uar: Arc::clone(uar),
                    _ext: process.extension(),
                    _process: Arc::clone(process.inner()),
                },
            }),
        })
    }

    /// The CQ number.
    pub fn cqn(&self) -> Cqn {
        self.cqn
    }

    /// The DevX handle (queries).
    pub fn obj(&self) -> &DevxObj {
        &self.shared.obj
    }

    /// DPA address of the ring.
    pub fn ring_daddr(&self) -> u64 {
        self.ring_daddr
    }

    /// DPA address of the doorbell record.
    pub fn dbr_daddr(&self) -> u64 {
        self.dbr_daddr
    }

    /// The descriptor a DPA program polls and arms this CQ with (consumer index 0; arming goes
    /// through the program's outbox, so `uar_arm_addr` is 0).
    pub fn descriptor(&self) -> CqDescriptor {
        CqDescriptor {
            cqn: self.cqn.0,
            log_cqe_cnt: u32::from(self.log_size),
            cqe_size: self.cqe_bytes,
            consumer_index: 0,
            cq_ring_addr: self.ring_daddr,
            cq_dbr_addr: self.dbr_daddr,
            uar_page_id: self.uar_page,
            _reserved: 0,
            uar_arm_addr: 0,
            arm_sn: 0,
            flags: 0,
        }
    }
}

impl CqTarget for DpaCq {
    fn target_cqn(&self) -> Cqn {
        self.cqn
    }
    fn keep_alive(&self) -> Arc<dyn std::any::Any + Send + Sync> {
        Arc::clone(&self.shared) as Arc<dyn std::any::Any + Send + Sync>
    }
}

/// An Ethernet SQ whose ring is in DPA memory (FlexIO `flexio_sq_create`), over a TIS, moved
/// to RDY. The DPA program posts and rings it through an outbox of the same UAR.
#[derive(Debug)]
pub struct DpaEthSq {
    obj: DevxObj,
    sqn: Sqn,
    log_size: u8,
    ring_daddr: u64,
    dbr_daddr: u64,
    umem_offset: u64,
    dumem_id: u32,
    uar_page: u32,
    cqn: Cqn,
    _cq: Arc<dyn std::any::Any + Send + Sync>,
    _tis: Arc<Tis>,
    _held: Held,
}

impl DpaEthSq {
    /// Creates the SQ (`2^log_size` WQEBBs, completions to `cq`) in the process's PD and moves
    /// it RST -> RDY.
    ///
    /// # Errors
    /// A size out of range, memory too small, a copy failure or firmware's refusal (the SQ is
    /// destroyed again).
    pub fn create(
        process: &Process,
        uar: &Arc<UarPage>,
        tis: &Arc<Tis>,
        cq: &dyn CqTarget,
        mem: DpaQueueMem,
        log_size: u8,
    ) -> Result<DpaEthSq, DpaError> {
        if log_size == 0 || log_size > 15 {
            return Err(DpaError::BadArgs(format!(
                "SQ log_size {log_size} (1..=15)"
            )));
        }
        check_len(&mem, "the SQ", 64usize << log_size)?;
        process.memset(mem.ring_daddr(), 0, 64usize << log_size)?;
        process.copy_to_dev(mem.dbr_daddr(), &[0u8; 8])?;
        let rm = ring_mem(&mem);
        let (obj, sqn) = create_rdy_sq(
            process.dev(),
            &CreateSq {
                cqn: cq.target_cqn(),
                tisn: tis.tisn(),
                wq: WqAttr {
                    pd: process.pd().pdn(),
                    uar_page: uar.page_id(),
                    log_wq_stride: 6,
                    log_wq_sz: log_size,
                    mem: rm,
                },
                flush_in_error_en: true,
            },
        )?;
        Ok(DpaEthSq {
            obj,
            sqn,
            log_size,
            ring_daddr: mem.ring_daddr(),
            dbr_daddr: mem.dbr_daddr(),
            umem_offset: rm.umem_offset,
            dumem_id: rm.umem_id,
            uar_page: uar.page_id(),
            cqn: cq.target_cqn(),
            _cq: cq.keep_alive(),
            _tis: Arc::clone(tis),
            _held: Held {
                _mem: mem,
                _uar: Arc::clone(uar),
                _ext: process.extension(),
                _process: Arc::clone(process.inner()),
            },
        })
    }

    /// The SQ number.
    pub fn sqn(&self) -> Sqn {
        self.sqn
    }

    /// The DevX handle.
    pub fn obj(&self) -> &DevxObj {
        &self.obj
    }

    /// DPA address of the ring.
    pub fn ring_daddr(&self) -> u64 {
        self.ring_daddr
    }

    /// DPA address of the doorbell record (send counter at +4).
    pub fn dbr_daddr(&self) -> u64 {
        self.dbr_daddr
    }

    /// The descriptor (kind ETH_SQ, producer index 0) a DPA program posts with.
    pub fn descriptor(&self) -> WqDescriptor {
        WqDescriptor {
            kind: wq_kind::ETH_SQ,
            num: self.sqn.0,
            sq_ring_addr: self.ring_daddr,
            log_sq_wqebb_cnt: u32::from(self.log_size),
            uar_page_id: self.uar_page,
            dbr_addr: self.dbr_daddr,
            send_cq: self.cqn.0,
            ring_umem_id: self.dumem_id,
            ring_umem_offset: self.umem_offset,
            ..WqDescriptor::default()
        }
    }
}

/// The firmware object of a DPA RQ, held by TIRs that dispatch to it.
#[derive(Debug)]
struct DpaRqObj {
    obj: DevxObj,
    _cq: Arc<dyn std::any::Any + Send + Sync>,
    _held: Held,
}

/// A cyclic RQ whose ring is in DPA memory (FlexIO `flexio_rq_create`), moved to RDY. The host
/// fills it once ([`DpaRq::fill`]); the DPA program hands WQEs back by moving the record.
#[derive(Debug)]
pub struct DpaRq {
    shared: Arc<DpaRqObj>,
    rqn: Rqn,
    log_size: u8,
    stride: usize,
    ring_daddr: u64,
    dbr_daddr: u64,
    umem_offset: u64,
    dumem_id: u32,
    uar_page: u32,
    cqn: Cqn,
    posted: u32,
}

impl DpaRq {
    /// Creates the RQ (completions to `cq`) in the process's PD and moves it RST -> RDY.
    ///
    /// # Errors
    /// A configuration out of range, memory too small, a copy failure or firmware's refusal.
    pub fn create(
        process: &Process,
        uar: &Arc<UarPage>,
        cq: &dyn CqTarget,
        mem: DpaQueueMem,
        cfg: &RqConfig,
    ) -> Result<DpaRq, DpaError> {
        prepare_rq(process, &mem, cfg, "RQ")?;
        let stride = cfg.stride();
        let rm = ring_mem(&mem);
        let (obj, rqn) = create_rdy_rq(
            process.dev(),
            &CreateRq {
                cqn: cq.target_cqn(),
                wq: cfg.wq_attr(process.pd().pdn(), uar.page_id(), rm),
                flush_in_error_en: true,
                counter_set_id: 0,
            },
        )?;
        Ok(DpaRq {
            rqn,
            log_size: cfg.log_size,
            stride,
            ring_daddr: mem.ring_daddr(),
            dbr_daddr: mem.dbr_daddr(),
            umem_offset: rm.umem_offset,
            dumem_id: rm.umem_id,
            uar_page: uar.page_id(),
            cqn: cq.target_cqn(),
            posted: 0,
            shared: Arc::new(DpaRqObj {
                obj,
                _cq: cq.keep_alive(),
                _held: Held {
                    _mem: mem,
                    _uar: Arc::clone(uar),
                    _ext: process.extension(),
                    _process: Arc::clone(process.inner()),
                },
            }),
        })
    }

    /// Writes one receive WQE per buffer (`(daddr, len)` under `lkey`, in ring order from slot
    /// 0), then moves the receive counter of the record to the number of buffers: the device
    /// may fill them from then on. Done once, before the DPA program takes the RQ over.
    ///
    /// # Errors
    /// More buffers than slots, a second fill, or a copy failure.
    pub fn fill(
        &mut self,
        process: &Process,
        bufs: &[(u64, u32)],
        lkey: Lkey,
    ) -> Result<(), DpaError> {
        let slots = 1usize << self.log_size;
        if bufs.is_empty() || bufs.len() > slots {
            return Err(DpaError::BadArgs(format!(
                "{} receive buffers for an RQ of {slots} WQEs",
                bufs.len()
            )));
        }
        if self.posted != 0 {
            return Err(DpaError::BadArgs("the RQ was filled already".into()));
        }
        let mut image = vec![0u8; bufs.len() * self.stride];
        for (wqe, &(daddr, len)) in image.chunks_exact_mut(self.stride).zip(bufs) {
            wqe[..SEG].copy_from_slice(&data_seg(len, lkey.0, daddr));
            // The rest of the scatter list ends at the first segment with MLX5_INVALID_LKEY.
            if self.stride > SEG {
                wqe[SEG..2 * SEG].copy_from_slice(&end_of_scatter_seg());
            }
        }
        process.copy_to_dev(self.ring_daddr, &image)?;
        let n = bufs.len() as u32;
        process.copy_to_dev(self.dbr_daddr, &(n & 0xffff).to_be_bytes())?;
        self.posted = n;
        Ok(())
    }

    /// The RQ number.
    pub fn rqn(&self) -> Rqn {
        self.rqn
    }

    /// The DevX handle.
    pub fn obj(&self) -> &DevxObj {
        &self.shared.obj
    }

    /// Bytes per receive WQE.
    pub fn stride(&self) -> usize {
        self.stride
    }

    /// DPA address of the ring.
    pub fn ring_daddr(&self) -> u64 {
        self.ring_daddr
    }

    /// DPA address of the doorbell record (receive counter at +0).
    pub fn dbr_daddr(&self) -> u64 {
        self.dbr_daddr
    }

    /// The descriptor (kind RQ, producer index = WQEs filled) a DPA program receives with.
    pub fn descriptor(&self) -> WqDescriptor {
        WqDescriptor {
            kind: wq_kind::RQ,
            num: self.rqn.0,
            rq_ring_addr: self.ring_daddr,
            log_rq_wqe_cnt: u32::from(self.log_size),
            rq_wqe_stride: self.stride as u32,
            rq_producer_index: self.posted,
            uar_page_id: self.uar_page,
            dbr_addr: self.dbr_daddr,
            recv_cq: self.cqn.0,
            ring_umem_id: self.dumem_id,
            ring_umem_offset: self.umem_offset,
            ..WqDescriptor::default()
        }
    }
}

impl RqTarget for DpaRq {
    fn target_rqn(&self) -> Rqn {
        self.rqn
    }
    fn keep_alive(&self) -> Arc<dyn std::any::Any + Send + Sync> {
        Arc::clone(&self.shared) as Arc<dyn std::any::Any + Send + Sync>
    }
}

/// The firmware object of a DPA SRQ, held by the QPs that receive from it.
#[derive(Debug)]
struct DpaSrqObj {
    obj: DevxObj,
    _held: Held,
}

/// A shared receive queue whose cyclic ring is in DPA memory (an RMP; PRM `rq_type` SRQ for
/// the QPs on it): the DPA program posts receive WQEs and moves the record's receive counter;
/// every QP created on it with [`DpaRcQp::create_with_srq`] takes the next WQE.
#[derive(Debug)]
pub struct DpaSrq {
    shared: Arc<DpaSrqObj>,
    srqn: u32,
    log_size: u8,
    stride: usize,
    ring_daddr: u64,
    dbr_daddr: u64,
    pdn: crate::mem::Pdn,
}

impl DpaSrq {
    /// Creates the SRQ (ready at once) in the process's PD.
    ///
    /// # Errors
    /// A configuration out of range, memory too small, a copy failure or firmware's refusal.
    pub fn create(
        process: &Process,
        uar: &Arc<UarPage>,
        mem: DpaQueueMem,
        cfg: &RqConfig,
    ) -> Result<DpaSrq, DpaError> {
        prepare_rq(process, &mem, cfg, "SRQ")?;
        let stride = cfg.stride();
        let pdn = process.pd().pdn();
        let (obj, srqn) = devx::create(
            process.dev(),
            &CreateRmp {
                wq: cfg.wq_attr(pdn, uar.page_id(), ring_mem(&mem)),
                linked_list: false,
            },
        )?;
        Ok(DpaSrq {
            srqn,
            log_size: cfg.log_size,
            stride,
            ring_daddr: mem.ring_daddr(),
            dbr_daddr: mem.dbr_daddr(),
            pdn,
            shared: Arc::new(DpaSrqObj {
                obj,
                _held: Held {
                    _mem: mem,
                    _uar: Arc::clone(uar),
                    _ext: process.extension(),
                    _process: Arc::clone(process.inner()),
                },
            }),
        })
    }

    /// The SRQ (RMP) number.
    pub fn srqn(&self) -> u32 {
        self.srqn
    }

    /// The DevX handle.
    pub fn obj(&self) -> &DevxObj {
        &self.shared.obj
    }

    /// log2 of its receive WQEs.
    pub fn log_size(&self) -> u8 {
        self.log_size
    }

    /// Bytes per receive WQE.
    pub fn stride(&self) -> usize {
        self.stride
    }

    /// DPA address of the ring.
    pub fn ring_daddr(&self) -> u64 {
        self.ring_daddr
    }

    /// DPA address of the doorbell record (receive counter at +0, big-endian).
    pub fn dbr_daddr(&self) -> u64 {
        self.dbr_daddr
    }
}

/// An RC QP whose rings are in DPA memory (FlexIO `flexio_qp_create` with `qp_wq_buff_qmem`
/// in DPA memory): the receive ring (if any) first, then the send ring, as for host QPs.
#[derive(Debug)]
pub struct DpaRcQp {
    obj: DevxObj,
    qpn: Qpn,
    cfg: QpConfig,
    ring_daddr: u64,
    dbr_daddr: u64,
    umem_offset: u64,
    dumem_id: u32,
    uar_page: u32,
    send_cqn: Cqn,
    recv_cqn: Cqn,
    _send_cq: Arc<dyn std::any::Any + Send + Sync>,
    _recv_cq: Arc<dyn std::any::Any + Send + Sync>,
    _srq: Option<Arc<DpaSrqObj>>,
    _held: Held,
}

impl DpaRcQp {
    /// Creates the QP receiving from `srq` (its memory holds the send ring only;
    /// `cfg.log_rq_size` must be `None`); receive completions go to `recv_cq`.
    ///
    /// # Errors
    /// As [`DpaRcQp::create`]; an SRQ of another process's PD, or a receive ring asked for.
    pub fn create_with_srq(
        process: &Process,
        uar: &Arc<UarPage>,
        send_cq: &dyn CqTarget,
        recv_cq: &dyn CqTarget,
        srq: &DpaSrq,
        mem: DpaQueueMem,
        cfg: &QpConfig,
    ) -> Result<DpaRcQp, DpaError> {
        if cfg.log_rq_size.is_some() {
            return Err(DpaError::BadArgs(
                "a QP with a shared receive queue has no receive ring (log_rq_size: None)".into(),
            ));
        }
        if srq.pdn != process.pd().pdn() {
            return Err(DpaError::BadArgs(
                "the SRQ belongs to another process's protection domain".into(),
            ));
        }
        Self::create_inner(process, uar, send_cq, recv_cq, Some(srq), mem, cfg)
    }

    /// Creates the QP in the process's PD (state RST); [`DpaRcQp::connect`] moves it to RTS.
    ///
    /// # Errors
    /// A configuration out of range, memory too small, a copy failure or firmware's refusal.
    pub fn create(
        process: &Process,
        uar: &Arc<UarPage>,
        send_cq: &dyn CqTarget,
        recv_cq: &dyn CqTarget,
        mem: DpaQueueMem,
        cfg: &QpConfig,
    ) -> Result<DpaRcQp, DpaError> {
        Self::create_inner(process, uar, send_cq, recv_cq, None, mem, cfg)
    }

    fn create_inner(
        process: &Process,
        uar: &Arc<UarPage>,
        send_cq: &dyn CqTarget,
        recv_cq: &dyn CqTarget,
        srq: Option<&DpaSrq>,
        mem: DpaQueueMem,
        cfg: &QpConfig,
    ) -> Result<DpaRcQp, DpaError> {
        if cfg.log_sq_size > 15 || cfg.log_rq_size.is_some_and(|l| l > 15) {
            return Err(DpaError::BadArgs(format!(
                "QP log sizes {} / {:?} (at most 15)",
                cfg.log_sq_size, cfg.log_rq_size
            )));
        }
        if cfg.rq_stride() > 512 {
            return Err(DpaError::BadArgs(format!(
                "max_recv_sge {} (at most 32)",
                cfg.max_recv_sge
            )));
        }
        let bytes = cfg.ring_bytes();
        check_len(&mem, "the QP", bytes)?;
        process.memset(mem.ring_daddr(), 0, bytes)?;
        process.copy_to_dev(mem.dbr_daddr(), &[0u8; 8])?;
        let rm = ring_mem(&mem);
        let (obj, qpn) = devx::create(
            process.dev(),
            &CreateQp {
                pd: process.pd().pdn(),
                uar_page: uar.page_id(),
                cqn_snd: send_cq.target_cqn(),
                cqn_rcv: recv_cq.target_cqn(),
                log_sq_size: cfg.log_sq_size,
                log_rq_size: cfg.log_rq_size,
                log_rq_stride: (cfg.rq_stride().trailing_zeros() - 4) as u8,
                srqn: srq.map(DpaSrq::srqn),
                mem: rm,
                user_index: 0,
            },
        )?;
        Ok(DpaRcQp {
            obj,
            qpn,
            cfg: *cfg,
            ring_daddr: mem.ring_daddr(),
            dbr_daddr: mem.dbr_daddr(),
            umem_offset: rm.umem_offset,
            dumem_id: rm.umem_id,
            uar_page: uar.page_id(),
            send_cqn: send_cq.target_cqn(),
            recv_cqn: recv_cq.target_cqn(),
            _send_cq: send_cq.keep_alive(),
            _recv_cq: recv_cq.keep_alive(),
            _srq: srq.map(|s| Arc::clone(&s.shared)),
            _held: Held {
                _mem: mem,
                _uar: Arc::clone(uar),
                _ext: process.extension(),
                _process: Arc::clone(process.inner()),
            },
        })
    }

    /// Moves the QP RST -> INIT -> RTR -> RTS towards `c.peer`, as
    /// [`crate::queues::RcQp::connect`] does.
    ///
    /// # Errors
    /// Firmware refused a transition; the QP is left where it stopped.
    pub fn connect(&mut self, c: &RcConnect) -> Result<(), DpaError> {
        Ok(crate::queues::qp::connect_rc(&self.obj, self.qpn, c)?)
    }

    /// The QP number.
    pub fn qpn(&self) -> Qpn {
        self.qpn
    }

    /// The DevX handle.
    pub fn obj(&self) -> &DevxObj {
        &self.obj
    }

    /// The descriptor (kind RC_QP, producer indexes 0) a DPA program posts with.
    pub fn descriptor(&self) -> WqDescriptor {
        let rq_bytes = self.cfg.rq_bytes() as u64;
        WqDescriptor {
            kind: wq_kind::RC_QP,
            num: self.qpn.0,
            sq_ring_addr: self.ring_daddr + rq_bytes,
            log_sq_wqebb_cnt: u32::from(self.cfg.log_sq_size),
            rq_ring_addr: if self.cfg.log_rq_size.is_some() {
                self.ring_daddr
            } else {
                0
            },
            log_rq_wqe_cnt: u32::from(self.cfg.log_rq_size.unwrap_or(0)),
            rq_wqe_stride: if self.cfg.log_rq_size.is_some() {
                self.cfg.rq_stride() as u32
            } else {
                0
            },
            uar_page_id: self.uar_page,
            dbr_addr: self.dbr_daddr,
            send_cq: self.send_cqn.0,
            recv_cq: self.recv_cqn.0,
            ring_umem_id: self.dumem_id,
            ring_umem_offset: self.umem_offset,
            ..WqDescriptor::default()
        }
    }
}

/// A memory key over a range of DPA memory (the lkey WQEs name for buffers in DPA memory),
/// valid until dropped. The copier keeps its own key; this one never changes.
#[derive(Debug)]
pub struct DpaMkey {
    _obj: DevxObj,
    key: u32,
    daddr: u64,
    len: u64,
    _ext: Option<Arc<dyn std::any::Any + Send + Sync>>,
    _process: Arc<ProcessInner>,
}

impl DpaMkey {
    /// CREATE_MKEY over `len` bytes of the process memory at `daddr`, in the process's PD.
    ///
    /// # Errors
    /// An empty range or one below the process memory; firmware's refusal (the range leaves
    /// what the process has allocated).
    pub fn create(
        process: &Process,
        daddr: u64,
        len: u64,
        access: Access,
    ) -> Result<DpaMkey, DpaError> {
        let (dumem_id, dumem_base) = process.dumem();
        if len == 0 || daddr < dumem_base || daddr.checked_add(len).is_none() {
            return Err(DpaError::BadArgs(format!(
                "mkey range {daddr:#x}+{len:#x} outside the process memory (from {dumem_base:#x})"
            )));
        }
        let (obj, key) = devx::create(
            process.dev(),
            &CreateMkey {
                pd: process.pd().pdn(),
                start_addr: daddr,
                len,
                access: crate::mem::mkey_access(access),
                umem_id: dumem_id,
                umem_offset: daddr - dumem_base,
                key: 0,
                log_page_size: 12,
            },
        )?;
        Ok(DpaMkey {
            _obj: obj,
            key,
            daddr,
            len,
            _ext: process.extension(),
            _process: Arc::clone(process.inner()),
        })
    }

    /// A key over the whole of `buf`.
    ///
    /// # Errors
    /// As [`DpaMkey::create`].
    pub fn over(process: &Process, buf: &DpaBuf, access: Access) -> Result<DpaMkey, DpaError> {
        DpaMkey::create(process, buf.daddr(), buf.len(), access)
    }

    /// The key as an lkey.
    pub fn lkey(&self) -> Lkey {
        Lkey(self.key)
    }

    /// The covered range: start DPA address and length.
    pub fn range(&self) -> (u64, u64) {
        (self.daddr, self.len)
    }
}
