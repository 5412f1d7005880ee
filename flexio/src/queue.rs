//! Queues a DPA program drives, made from FlexIO's attribute structures: CQs, Ethernet SQs and
//! RQs (with the TIR that steers to an RQ). Their rings are where the attributes say: DPA memory
//! of the process (`FLEXIO_MEMTYPE_DPA`, a DPA address) or a host UMEM (`FLEXIO_MEMTYPE_HOST`,
//! its id and an offset); doorbell records are in DPA memory. The library writes nothing into
//! the rings: the program prepares them (CQEs owned by hardware, RQ WQEs) as FlexIO's do.

use std::ffi::c_void;
use std::sync::{Arc, Mutex, PoisonError};

use mlx5_dpa::devx::{self, DevxObj};
use mlx5_dpa::dpa::DpaBuf;
use mlx5_dpa::mlx5::cmd::{
    CqEventTarget, CreateCq, CreateRmp, CreateRq, CreateSq, CreateTir, ModifyCqModeration,
    ModifyRq, ModifySq, QueryCq, RingMem, WqAttr, WqState,
};
use mlx5_dpa::mlx5::layouts::cqc;
use mlx5_dpa::mlx5::{Cqn, Pdn, Rqn, Sqn, View};
use mlx5_dpa::queues::transport::{Tis, TransportDomain};

use crate::handle::Table;
use crate::handler::handler_thread_id;
use crate::process::{proc, FlexioProcess, Proc};
use crate::{entry, getter, put, Failure, FlexioStatus, Result};

/// `struct flexio_qmem`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct FlexioQmem {
    pub memtype: u32,
    /// `daddr` (DPA memory) or `humem_offset` (a host UMEM).
    pub addr: u64,
    pub umem_id: u32,
}

pub const FLEXIO_MEMTYPE_DPA: u32 = 0;
pub const FLEXIO_MEMTYPE_HOST: u32 = 1;

/// The union of `struct flexio_cq_attr`: an emulated EQ number or a thread.
#[repr(C)]
#[derive(Clone, Copy)]
pub union FlexioCqElement {
    pub emulated_eqn: u32,
    pub thread: *mut c_void,
}

/// `struct flexio_cq_attr`.
#[repr(C)]
pub struct FlexioCqAttr {
    pub log_cq_depth: u8,
    pub element_type: u8,
    pub element: FlexioCqElement,
    pub uar_id: u32,
    pub uar_base_addr: *mut c_void,
    pub cqe_comp_type: u32,
    pub cq_period_mode: u32,
    pub cq_period: u16,
    pub cq_max_count: u16,
    pub no_arm: bool,
    pub cc: bool,
    pub overrun_ignore: u8,
    pub always_armed: u8,
    pub cq_ring_qmem: FlexioQmem,
    pub cq_dbr_daddr: u64,
}

/// `struct flexio_wq_attr` (its union, SQ or RMP attributes, as one word).
#[repr(C)]
pub struct FlexioWqAttr {
    pub log_wq_stride: u8,
    pub log_wq_depth: u8,
    pub uar_id: u32,
    pub user_index: u32,
    pub pd: *mut c_void,
    pub sq_or_rq: u32,
    pub wq_ring_qmem: FlexioQmem,
    pub wq_dbr_qmem: FlexioQmem,
}

// The layouts of flexio.h on LP64 (flexio/tests/c/api.c asserts the same numbers in C).
const _: () = {
    assert!(size_of::<FlexioQmem>() == 24);
    assert!(size_of::<FlexioCqAttr>() == 80);
    assert!(std::mem::offset_of!(FlexioCqAttr, uar_id) == 16);
    assert!(std::mem::offset_of!(FlexioCqAttr, cq_ring_qmem) == 48);
    assert!(std::mem::offset_of!(FlexioCqAttr, cq_dbr_daddr) == 72);
    assert!(size_of::<FlexioWqAttr>() == 80);
    assert!(std::mem::offset_of!(FlexioWqAttr, pd) == 16);
    assert!(std::mem::offset_of!(FlexioWqAttr, wq_ring_qmem) == 32);
    assert!(std::mem::offset_of!(FlexioWqAttr, wq_dbr_qmem) == 56);
};

pub const FLEXIO_CQ_ELEMENT_TYPE_DPA_THREAD: u8 = 0x0;
pub const FLEXIO_CQ_ELEMENT_TYPE_EXT_EQ: u8 = 0x2;
pub const FLEXIO_CQ_ELEMENT_TYPE_NON_DPA_CQ: u8 = 0x8;
pub const FLEXIO_CQ_ELEMENT_TYPE_DPA_MSIX_EMULATED_CQ: u8 = 0x9;

/// The RQ WQE stride FlexIO takes when the attributes give none: 16 bytes.
pub const DEFAULT_LOG_WQ_STRIDE: u8 = 4;

/// `enum flexio_cq_period_mode`: the moderation period starts at an event, or at each CQE.
pub const FLEXIO_CQ_PERIOD_MODE_EVENT: u32 = 0x0;
pub const FLEXIO_CQ_PERIOD_MODE_CQE: u32 = 0x1;

/// `struct flexio_cq`, `flexio_sq`, `flexio_rq` (opaque to C).
pub struct FlexioCq {
    _private: [u8; 0],
}
pub struct FlexioSq {
    _private: [u8; 0],
}
pub struct FlexioRq {
    _private: [u8; 0],
}
pub struct FlexioRmp {
    _private: [u8; 0],
}

/// `enum flexio_wq_type`, the first word of an RMP's attributes (`flexio_wq_rq_attr`).
pub const FLEXIO_WQ_TYPE_LINKED_LIST: u32 = 0x0;
pub const FLEXIO_WQ_TYPE_CYCLIC: u32 = 0x1;

/// A queue's firmware objects (dropped in order: a TIR before its RQ) and what they use.
struct Queue {
    /// The TIR of an RQ.
    tir: Option<DevxObj>,
    obj: DevxObj,
    num: u32,
    /// A doorbell record the library made (the attributes gave none).
    _dbr: Option<DpaBuf>,
    /// The transport an SQ sends in (its TIS) or an RQ's TIR is in.
    _tis: Option<Arc<Tis>>,
    _td: Option<Arc<TransportDomain>>,
    process: Arc<Proc>,
}

static CQS: Table<Queue> = Table::new("flexio_cq");
static SQS: Table<Queue> = Table::new("flexio_sq");
static RQS: Table<Queue> = Table::new("flexio_rq");
static RMPS: Table<Queue> = Table::new("flexio_rmp");

/// Whether `rmpn` is an RMP of process `p` (what a QP on an RMP may name).
pub(crate) fn is_rmp_of(p: &Arc<Proc>, rmpn: u32) -> bool {
    RMPS.all()
        .iter()
        .any(|(_, q)| q.num == rmpn && Arc::ptr_eq(&q.process, p))
}

/// The process's transport: one transport domain and TIS, made on first use.
pub(crate) struct Transport(Mutex<Option<(Arc<TransportDomain>, Arc<Tis>)>>);

impl Transport {
    pub(crate) const fn new() -> Transport {
        Transport(Mutex::new(None))
    }
}

fn transport(p: &Proc) -> Result<(Arc<TransportDomain>, Arc<Tis>)> {
    let mut g = p.transport.0.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(t) = &*g {
        return Ok(t.clone());
    }
    let dev = p.process.dev();
    let td = TransportDomain::alloc(dev)
        .map_err(|e| Failure::new(format!("the process's transport domain: {e}")))?;
    let tis = Tis::create(dev, &td, p.process.pd())
        .map_err(|e| Failure::new(format!("the process's TIS: {e}")))?;
    *g = Some((Arc::clone(&td), Arc::clone(&tis)));
    Ok((td, tis))
}

/// The UMEM and offset of DPA address `daddr` of the process (its DUMEM).
fn dpa_place(p: &Proc, daddr: u64, what: &str) -> Result<(u32, u64)> {
    let (id, base) = p.process.dumem();
    if daddr < base {
        return Err(Failure::new(format!(
            "{what} {daddr:#x} is below the process's memory ({base:#x})"
        )));
    }
    Ok((id, daddr - base))
}

pub(crate) fn place(p: &Proc, q: &FlexioQmem, what: &str) -> Result<(u32, u64)> {
    match q.memtype {
        FLEXIO_MEMTYPE_DPA => dpa_place(p, q.addr, what),
        FLEXIO_MEMTYPE_HOST => Ok((q.umem_id, q.addr)),
        t => Err(Failure::new(format!("{what}: memtype {t} is unknown"))),
    }
}

/// Refuses an `ibv_ctx` other than the process's own device context (NULL), which queues on
/// another function would need.
pub(crate) fn same_context(ibv_ctx: *mut c_void) -> Result<()> {
    if ibv_ctx.is_null() {
        Ok(())
    } else {
        Err(Failure::new(
            "queues on another context (a non-NULL ibv_ctx) are not supported yet; pass NULL",
        ))
    }
}

/// The process's PD, which the attributes' `pd` must be (or NULL).
pub(crate) fn pd_of(p: &Proc, pd: *mut c_void) -> Result<Pdn> {
    if pd.is_null() || pd == p.ibv_pd().cast() {
        Ok(p.process.pd().pdn())
    } else {
        Err(Failure::new("the attributes' pd is not the process's PD"))
    }
}

/// Keeps queue `q` and writes its handle to `out` (checked non-NULL before `q` was made).
fn insert<H>(table: &'static Table<Queue>, q: Queue, out: *mut *mut H, what: &str) -> Result<()> {
    let h = table.insert(q);
    // SAFETY: writable (the caller's contract).
    unsafe { put(out, h, what) }
}

/// Creates a CQ (FlexIO `flexio_cq_create`): attached to an event handler's thread
/// (`FLEXIO_CQ_ELEMENT_TYPE_DPA_THREAD`, whose activations it then triggers) or to no DPA
/// element (`_NON_DPA_CQ`: events to the host's EQ of vector 0). CQE compression, collapsed
/// CQs and always-armed CQs are refused as not supported, as are the other element types. The
/// CQ is not armed at creation (the device program arms it).
///
/// # Safety
/// `fattr` is NULL or valid; `cq` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flexio_cq_create(
    process: *mut FlexioProcess,
    ibv_ctx: *mut c_void,
    fattr: *const FlexioCqAttr,
    cq: *mut *mut FlexioCq,
) -> FlexioStatus {
    entry("flexio_cq_create", || {
        let p = proc(process)?;
        same_context(ibv_ctx)?;
        // SAFETY: NULL or valid (the caller's contract).
        let a = unsafe { fattr.as_ref() }.ok_or_else(|| Failure::new("fattr is NULL"))?;
        if cq.is_null() {
            return Err(Failure::new("cq is NULL"));
        }
        if a.cqe_comp_type != 0 || a.cc || a.always_armed != 0 {
            return Err(Failure::new(
                "CQE compression, collapsed and always-armed CQs are not supported",
            ));
        }
        if !a.uar_base_addr.is_null() {
            return Err(Failure::new(
                "uar_base_addr (a DevX UAR of the host) is not supported; give the process's UAR id",
            ));
        }
        if a.cq_period_mode != FLEXIO_CQ_PERIOD_MODE_EVENT {
            return Err(Failure::new(
                "cq_period_mode CQE (the period restarting on each CQE) is not supported",
            ));
        }
        let target = match a.element_type {
            FLEXIO_CQ_ELEMENT_TYPE_DPA_THREAD => {
                // SAFETY: the union holds the thread for this element type.
                let thread = unsafe { a.element.thread };
                let id = handler_thread_id(thread)?;
                CqEventTarget::DpaThread(p.process.thread_here(id)?)
            }
            FLEXIO_CQ_ELEMENT_TYPE_NON_DPA_CQ => {
                let eqn = p
                    .process
                    .dev()
                    .query_eqn(0)
                    .map_err(|e| Failure::new(format!("the host's EQ: {e}")))?;
                CqEventTarget::Eq(eqn)
            }
            t => {
                return Err(Failure::new(format!(
                    "CQ element type {t:#x} is not supported (DPA_THREAD and NON_DPA_CQ are)"
                )))
            }
        };
        let (umem_id, umem_offset) = place(&p, &a.cq_ring_qmem, "the CQ ring")?;
        let (dbr_umem_id, dbr_offset) = dpa_place(&p, a.cq_dbr_daddr, "the CQ doorbell record")?;
        let (obj, cqn) = devx::create(
            p.process.dev(),
            &CreateCq {
                log_cq_size: a.log_cq_depth,
                cqe_sz: 0,
                uar_page: a.uar_id,
                target,
                mem: RingMem {
                    umem_id,
                    umem_offset,
                    dbr_umem_id,
                    dbr_offset,
                },
                cq_period: a.cq_period,
                cq_max_count: a.cq_max_count,
                oi: a.overrun_ignore != 0,
                cc: a.cc,
                cqe_comp: false,
            },
        )
        .map_err(|e| Failure::new(format!("CREATE_CQ: {e}")))?;
        let q = Queue {
            tir: None,
            obj,
            num: cqn.0,
            _dbr: None,
            _tis: None,
            _td: None,
            process: p,
        };
        insert(&CQS, q, cq, "cq")
    })
}

/// The doorbell record of a work queue: where the attributes put it, or 64 bytes of DPA
/// memory the library makes (zeroed) when they give DPA address 0.
pub(crate) fn wq_dbr(p: &Proc, q: &FlexioQmem) -> Result<((u32, u64), Option<DpaBuf>)> {
    if q.memtype == FLEXIO_MEMTYPE_DPA && q.addr == 0 {
        let buf = p.process.alloc(64)?;
        p.process.memset(buf.daddr(), 0, 64)?;
        let at = dpa_place(p, buf.daddr(), "the doorbell record")?;
        return Ok((at, Some(buf)));
    }
    Ok((place(p, q, "the doorbell record")?, None))
}

/// The `WqAttr` of a work queue's attributes, with the ring and record placed.
fn wq(p: &Proc, a: &FlexioWqAttr, stride: u8, dbr: (u32, u64)) -> Result<WqAttr> {
    let (umem_id, umem_offset) = place(p, &a.wq_ring_qmem, "the ring")?;
    Ok(WqAttr {
        pd: pd_of(p, a.pd)?,
        // No UAR given (FlexIO's RQ sample gives none): the process's.
        uar_page: if a.uar_id == 0 {
            p.process.uar().page_id()
        } else {
            a.uar_id
        },
        log_wq_stride: stride,
        log_wq_sz: a.log_wq_depth,
        mem: RingMem {
            umem_id,
            umem_offset,
            dbr_umem_id: dbr.0,
            dbr_offset: dbr.1,
        },
    })
}

/// Creates an Ethernet SQ sending in the process's TIS, completing to CQ `cq_num`, and moves
/// it to ready (FlexIO `flexio_sq_create`). Its entries are 64-byte WQE basic blocks.
///
/// # Safety
/// `fattr` is NULL or valid; `flexio_sq_ptr` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flexio_sq_create(
    process: *mut FlexioProcess,
    ibv_ctx: *mut c_void,
    cq_num: u32,
    fattr: *const FlexioWqAttr,
    flexio_sq_ptr: *mut *mut FlexioSq,
) -> FlexioStatus {
    entry("flexio_sq_create", || {
        let p = proc(process)?;
        same_context(ibv_ctx)?;
        // SAFETY: NULL or valid (the caller's contract).
        let a = unsafe { fattr.as_ref() }.ok_or_else(|| Failure::new("fattr is NULL"))?;
        if flexio_sq_ptr.is_null() {
            return Err(Failure::new("flexio_sq_ptr is NULL"));
        }
        let (td, tis) = transport(&p)?;
        let (dbr_at, dbr) = wq_dbr(&p, &a.wq_dbr_qmem)?;
        let cmd = CreateSq {
            cqn: Cqn(cq_num),
            tisn: tis.tisn(),
            wq: wq(&p, a, 6, dbr_at)?,
            flush_in_error_en: true,
        };
        let (obj, sqn) = devx::create(p.process.dev(), &cmd)
            .map_err(|e| Failure::new(format!("CREATE_SQ: {e}")))?;
        devx::modify(
            &obj,
            &ModifySq {
                sqn,
                from: WqState::Rst,
                to: WqState::Rdy,
            },
        )
        .map_err(|e| Failure::new(format!("MODIFY_SQ to ready: {e}")))?;
        let Sqn(num) = sqn;
        let q = Queue {
            tir: None,
            obj,
            num,
            _dbr: dbr,
            _tis: Some(tis),
            _td: Some(td),
            process: p,
        };
        insert(&SQS, q, flexio_sq_ptr, "flexio_sq_ptr")
    })
}

/// Creates a cyclic RQ completing to CQ `cq_num`, moves it to ready, and makes a TIR that
/// steers to it (FlexIO `flexio_rq_create`; `flexio_rq_get_tir`). The stride is the
/// attributes' (16 bytes when they give none).
///
/// # Safety
/// `fattr` is NULL or valid; `flexio_rq_ptr` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flexio_rq_create(
    process: *mut FlexioProcess,
    ibv_ctx: *mut c_void,
    cq_num: u32,
    fattr: *const FlexioWqAttr,
    flexio_rq_ptr: *mut *mut FlexioRq,
) -> FlexioStatus {
    entry("flexio_rq_create", || {
        let p = proc(process)?;
        same_context(ibv_ctx)?;
        // SAFETY: NULL or valid (the caller's contract).
        let a = unsafe { fattr.as_ref() }.ok_or_else(|| Failure::new("fattr is NULL"))?;
        if flexio_rq_ptr.is_null() {
            return Err(Failure::new("flexio_rq_ptr is NULL"));
        }
        let stride = if a.log_wq_stride == 0 {
            DEFAULT_LOG_WQ_STRIDE
        } else {
            a.log_wq_stride
        };
        let (td, _) = transport(&p)?;
        let (dbr_at, dbr) = wq_dbr(&p, &a.wq_dbr_qmem)?;
        let cmd = CreateRq {
            cqn: Cqn(cq_num),
            wq: wq(&p, a, stride, dbr_at)?,
            flush_in_error_en: true,
            counter_set_id: 0,
        };
        let dev = p.process.dev();
        let (obj, rqn) =
            devx::create(dev, &cmd).map_err(|e| Failure::new(format!("CREATE_RQ: {e}")))?;
        devx::modify(
            &obj,
            &ModifyRq {
                rqn,
                from: WqState::Rst,
                to: WqState::Rdy,
            },
        )
        .map_err(|e| Failure::new(format!("MODIFY_RQ to ready: {e}")))?;
        let (tir, _) = devx::create(
            dev,
            &CreateTir {
                transport_domain: td.tdn(),
                inline_rqn: rqn,
            },
        )
        .map_err(|e| Failure::new(format!("CREATE_TIR: {e}")))?;
        let Rqn(num) = rqn;
        let q = Queue {
            tir: Some(tir),
            obj,
            num,
            _dbr: dbr,
            _tis: None,
            _td: Some(td),
            process: p,
        };
        insert(&RQS, q, flexio_rq_ptr, "flexio_rq_ptr")
    })
}

/// A CQ's moderation as firmware has it (FlexIO `flexio_cq_query_moderation`): the CQE count
/// and the period (microseconds) after which an event is raised, and the period mode.
///
/// # Safety
/// The out-pointers are NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flexio_cq_query_moderation(
    cq: *mut FlexioCq,
    max_count: *mut u16,
    period: *mut u16,
    mode: *mut u16,
) -> FlexioStatus {
    entry("flexio_cq_query_moderation", || {
        if max_count.is_null() || period.is_null() || mode.is_null() {
            return Err(Failure::new("an out-pointer is NULL"));
        }
        let q = CQS.get(cq)?;
        let ctx = devx::query(&q.obj, &QueryCq(Cqn(q.num)))
            .map_err(|e| Failure::new(format!("QUERY_CQ: {e}")))?;
        let v = View::<cqc::Layout>::new(&ctx)
            .map_err(|e| Failure::new(format!("QUERY_CQ answer: {e}")))?;
        // SAFETY: checked non-NULL; writable (the caller's contract).
        unsafe {
            max_count.write(v.value(cqc::cq_max_count));
            period.write(v.value(cqc::cq_period));
            mode.write(u16::from(v.value(cqc::cq_period_mode)));
        }
        Ok(())
    })
}

/// Changes a CQ's moderation (FlexIO `flexio_cq_modify_moderation`): the CQE count and the
/// period; the period mode stays EVENT (CQE mode is not supported).
///
/// # Safety
/// `cq` is any pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flexio_cq_modify_moderation(
    cq: *mut FlexioCq,
    max_count: u16,
    period: u16,
    mode: u16,
) -> FlexioStatus {
    entry("flexio_cq_modify_moderation", || {
        if u32::from(mode) != FLEXIO_CQ_PERIOD_MODE_EVENT {
            return Err(Failure::new(
                "cq_period_mode CQE (the period restarting on each CQE) is not supported",
            ));
        }
        let q = CQS.get(cq)?;
        devx::modify(
            &q.obj,
            &ModifyCqModeration {
                cqn: Cqn(q.num),
                cq_period: period,
                cq_max_count: max_count,
            },
        )
        .map_err(|e| Failure::new(format!("MODIFY_CQ: {e}")))
    })
}

/// Moves an RQ from ready to error (FlexIO `flexio_rq_set_err_state`): its posted WQEs are
/// flushed with error completions and it takes no more packets.
///
/// # Safety
/// `rq` is any pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flexio_rq_set_err_state(rq: *mut FlexioRq) -> FlexioStatus {
    entry("flexio_rq_set_err_state", || {
        let q = RQS.get(rq)?;
        devx::modify(
            &q.obj,
            &ModifyRq {
                rqn: Rqn(q.num),
                from: WqState::Rdy,
                to: WqState::Err,
            },
        )
        .map_err(|e| Failure::new(format!("MODIFY_RQ to error: {e}")))
    })
}

/// Creates an RMP, a shared receive queue for QPs (FlexIO `flexio_rmp_create`): its WQEs a
/// cyclic ring or a linked list (`fattr->rq.wq_type`; zeroed attributes mean linked list), of
/// the attributes' stride (16 bytes when they give none), ready at once. QPs name it by
/// `flexio_rmp_get_wq_num` (`rq_type` SRQ, `rmpqn`).
///
/// # Safety
/// `fattr` is NULL or valid; `flexio_rmp_ptr` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flexio_rmp_create(
    process: *mut FlexioProcess,
    ibv_ctx: *mut c_void,
    fattr: *const FlexioWqAttr,
    flexio_rmp_ptr: *mut *mut FlexioRmp,
) -> FlexioStatus {
    entry("flexio_rmp_create", || {
        let p = proc(process)?;
        same_context(ibv_ctx)?;
        // SAFETY: NULL or valid (the caller's contract).
        let a = unsafe { fattr.as_ref() }.ok_or_else(|| Failure::new("fattr is NULL"))?;
        if flexio_rmp_ptr.is_null() {
            return Err(Failure::new("flexio_rmp_ptr is NULL"));
        }
        let linked_list = match a.sq_or_rq {
            FLEXIO_WQ_TYPE_LINKED_LIST => true,
            FLEXIO_WQ_TYPE_CYCLIC => false,
            t => return Err(Failure::new(format!("wq_type {t} is unknown"))),
        };
        let stride = if a.log_wq_stride == 0 {
            DEFAULT_LOG_WQ_STRIDE
        } else {
            a.log_wq_stride
        };
        let (dbr_at, dbr) = wq_dbr(&p, &a.wq_dbr_qmem)?;
        let cmd = CreateRmp {
            wq: wq(&p, a, stride, dbr_at)?,
            linked_list,
        };
        let (obj, num) = devx::create(p.process.dev(), &cmd)
            .map_err(|e| Failure::new(format!("CREATE_RMP: {e}")))?;
        let q = Queue {
            tir: None,
            obj,
            num,
            _dbr: dbr,
            _tis: None,
            _td: None,
            process: p,
        };
        insert(&RMPS, q, flexio_rmp_ptr, "flexio_rmp_ptr")
    })
}

/// Destroys an RMP (FlexIO `flexio_rmp_destroy`); the QPs on it must be gone first.
///
/// # Safety
/// `flexio_rmp` is any pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flexio_rmp_destroy(flexio_rmp: *mut FlexioRmp) -> FlexioStatus {
    entry("flexio_rmp_destroy", || destroy(&RMPS, flexio_rmp))
}

/// The RMP number, `u32::MAX` for a bad handle (FlexIO `flexio_rmp_get_wq_num`).
///
/// # Safety
/// `rmp` is any pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flexio_rmp_get_wq_num(rmp: *mut FlexioRmp) -> u32 {
    getter("flexio_rmp_get_wq_num", u32::MAX, || Ok(RMPS.get(rmp)?.num))
}

/// Destroys the queue of handle `h` in `table`: its firmware objects (a TIR before its RQ),
/// then what they used.
fn destroy<H>(table: &'static Table<Queue>, h: *mut H) -> Result<()> {
    let q = table.remove(h)?;
    match Arc::try_unwrap(q) {
        Ok(mut q) => {
            if let Some(t) = q.tir.as_mut() {
                t.try_destroy()
                    .map_err(|e| Failure::new(format!("destroying the TIR: {e}")))?;
            }
            q.obj
                .try_destroy()
                .map_err(|e| Failure::new(format!("destroying the queue: {e}")))
        }
        // A call on it is still running; the last one releases it.
        Err(_) => Ok(()),
    }
}

/// Destroys a CQ (FlexIO `flexio_cq_destroy`); its queues must be gone first.
///
/// # Safety
/// `cq` is any pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flexio_cq_destroy(cq: *mut FlexioCq) -> FlexioStatus {
    entry("flexio_cq_destroy", || destroy(&CQS, cq))
}

/// Destroys an SQ (FlexIO `flexio_sq_destroy`).
///
/// # Safety
/// `flexio_sq` is any pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flexio_sq_destroy(flexio_sq: *mut FlexioSq) -> FlexioStatus {
    entry("flexio_sq_destroy", || destroy(&SQS, flexio_sq))
}

/// Destroys an RQ and its TIR (FlexIO `flexio_rq_destroy`).
///
/// # Safety
/// `flexio_rq` is any pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flexio_rq_destroy(flexio_rq: *mut FlexioRq) -> FlexioStatus {
    entry("flexio_rq_destroy", || destroy(&RQS, flexio_rq))
}

/// The CQ number, `u32::MAX` for a bad handle (FlexIO `flexio_cq_get_cq_num`).
///
/// # Safety
/// `cq` is any pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flexio_cq_get_cq_num(cq: *mut FlexioCq) -> u32 {
    getter("flexio_cq_get_cq_num", u32::MAX, || Ok(CQS.get(cq)?.num))
}

/// The SQ number, `u32::MAX` for a bad handle (FlexIO `flexio_sq_get_wq_num`).
///
/// # Safety
/// `sq` is any pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flexio_sq_get_wq_num(sq: *mut FlexioSq) -> u32 {
    getter("flexio_sq_get_wq_num", u32::MAX, || Ok(SQS.get(sq)?.num))
}

/// The RQ number, `u32::MAX` for a bad handle (FlexIO `flexio_rq_get_wq_num`).
///
/// # Safety
/// `rq` is any pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flexio_rq_get_wq_num(rq: *mut FlexioRq) -> u32 {
    getter("flexio_rq_get_wq_num", u32::MAX, || Ok(RQS.get(rq)?.num))
}

/// The RQ's TIR as rdma-core's `struct mlx5dv_devx_obj *` (for a steering rule's
/// destination), NULL for a bad handle (FlexIO `flexio_rq_get_tir`). It lives as long as the
/// RQ.
///
/// # Safety
/// `rq` is any pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flexio_rq_get_tir(rq: *mut FlexioRq) -> *mut c_void {
    getter("flexio_rq_get_tir", std::ptr::null_mut(), || {
        let q = RQS.get(rq)?;
        let tir = q
            .tir
            .as_ref()
            .ok_or_else(|| Failure::new("the RQ has no TIR"))?;
        q.process
            .rdma
            .devx_obj_ptr(tir.handle())
            .map_err(|e| Failure::new(format!("the TIR: {e}")))
    })
}
