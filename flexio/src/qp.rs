//! RC QPs a DPA program drives (`flexio_qp_create`, `flexio_qp_modify`): created in RST from
//! FlexIO's QP attributes, with their ring and doorbell record where the attributes say (as
//! the other queues, queue.rs), then moved one transition per `flexio_qp_modify` call, as
//! FlexIO's samples move them (RST -> INIT -> RTR -> RTS, RTS -> RTS, any -> ERR or RST).

use std::ffi::c_void;
use std::sync::{Arc, Mutex, PoisonError};

use mlx5_dpa::devx::{self, DevxObj};
use mlx5_dpa::dpa::DpaBuf;
use mlx5_dpa::mlx5::cmd::{
    opt_param, CreateQp, Init2Rtr, ModifyQp, Qp2Err, Qp2Rst, QpAttr, QueryQp, RingMem, Rst2Init,
    Rtr2Rts, Rts2Rts,
};
use mlx5_dpa::mlx5::layouts::qpc;
use mlx5_dpa::mlx5::{Cqn, Qpn, View};

use crate::handle::Table;
use crate::process::{proc, FlexioProcess, Proc};
use crate::queue::{is_rmp_of, pd_of, place, same_context, wq_dbr, FlexioQmem};
use crate::{entry, getter, put, Failure, FlexioStatus, Result};

/// `struct flexio_qp_attr_opt_param_mask`.
#[repr(C)]
pub struct FlexioQpAttrOptParamMask {
    pub qp_access_mask: bool,
    pub min_rnr_nak_timer: bool,
}

/// `struct flexio_qp_attr` (LP64 layout asserted below and in flexio/tests/c/qp.c).
#[repr(C)]
pub struct FlexioQpAttr {
    pub transport_type: u32,
    pub uar_id: u32,
    pub user_index: u32,
    pub qp_access_mask: i32,
    pub ops_flag: i32,
    pub pd: *mut c_void,
    pub log_sq_depth: i32,
    pub no_sq: i32,
    pub sq_cqn: u32,
    pub log_rq_depth: i32,
    pub rq_type: i32,
    pub rq_cqn: u32,
    pub rmpqn: u32,
    pub qp_wq_buff_qmem: FlexioQmem,
    pub qp_wq_dbr_qmem: FlexioQmem,
    pub next_state: u32,
    pub remote_qp_num: u32,
    pub gid_table_index: u8,
    pub fl: u8,
    pub dest_mac: *const u8,
    pub rgid_or_rip: [u8; 16],
    pub rlid: u16,
    pub min_rnr_nak_timer: u32,
    pub path_mtu: u32,
    pub retry_count: u8,
    pub vhca_port_num: u8,
    pub next_rcv_psn: u32,
    pub next_send_psn: u32,
    pub udp_sport: u16,
    pub grh: u8,
    pub log_rra_max: u8,
    pub log_sra_max: u8,
    pub isolate_vl_tc: u8,
}

const _: () = {
    assert!(size_of::<FlexioQpAttr>() == 184);
    assert!(std::mem::offset_of!(FlexioQpAttr, pd) == 24);
    assert!(std::mem::offset_of!(FlexioQpAttr, qp_wq_buff_qmem) == 64);
    assert!(std::mem::offset_of!(FlexioQpAttr, next_state) == 112);
    assert!(std::mem::offset_of!(FlexioQpAttr, dest_mac) == 128);
    assert!(std::mem::offset_of!(FlexioQpAttr, rgid_or_rip) == 136);
    assert!(std::mem::offset_of!(FlexioQpAttr, path_mtu) == 160);
    assert!(std::mem::offset_of!(FlexioQpAttr, next_rcv_psn) == 168);
    assert!(std::mem::offset_of!(FlexioQpAttr, isolate_vl_tc) == 181);
};

pub const FLEXIO_QPC_ST_RC: u32 = 0x0;
pub const FLEXIO_QP_QPC_RQ_TYPE_REGULAR: i32 = 0x0;
pub const FLEXIO_QP_QPC_RQ_TYPE_SRQ_RMP_XRC_SRQ_XRQ: i32 = 0x1;
pub const FLEXIO_QP_QPC_RQ_TYPE_ZERO_SIZE_RQ: i32 = 0x3;
/// `enum flexio_qp_state` (the PRM's `qpc.state` values).
pub const FLEXIO_QP_STATE_RST: u32 = 0x0;
pub const FLEXIO_QP_STATE_INIT: u32 = 0x1;
pub const FLEXIO_QP_STATE_RTR: u32 = 0x2;
pub const FLEXIO_QP_STATE_RTS: u32 = 0x3;
pub const FLEXIO_QP_STATE_ERR: u32 = 0x6;

/// `IBV_ACCESS_*` bits (rdma-core `verbs.h`) a QP's access mask takes.
const IBV_ACCESS_LOCAL_WRITE: i32 = 1;
const IBV_ACCESS_REMOTE_WRITE: i32 = 2;
const IBV_ACCESS_REMOTE_READ: i32 = 4;
const IBV_ACCESS_REMOTE_ATOMIC: i32 = 8;

/// The RQ stride of a FlexIO QP: one 16-byte data segment per receive WQE (FlexIO's QP
/// attributes carry no stride; the device's receive WQE is `struct flexio_dev_wqe_rcv_data_seg`,
/// fw-blobs/include/libflexio-dev/flexio_dev_queue_types.h). Provisional.
const LOG_RQ_STRIDE: u8 = 0;

/// `struct flexio_qp` (opaque to C).
pub struct FlexioQp {
    _private: [u8; 0],
}

struct Qp {
    obj: DevxObj,
    qpn: Qpn,
    /// The access mask given at creation (or by the last modify that set it).
    access: Mutex<i32>,
    _dbr: Option<DpaBuf>,
    _process: Arc<Proc>,
}

static QPS: Table<Qp> = Table::new("flexio_qp");

/// Creates an RC QP in RST (FlexIO `flexio_qp_create`): its send and receive queues complete
/// to CQs `sq_cqn` / `rq_cqn`, its ring (receive queue first, then the send queue's 64-byte
/// basic blocks) and doorbell record where the attributes say; or receiving from an RMP of the
/// process (`rq_type` SRQ, `rmpqn`), its ring then the send queue's only. Refused as not
/// supported: other transports, `no_sq`, another context.
///
/// # Safety
/// `qp_fattr` is NULL or valid; `qp_ptr` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flexio_qp_create(
    process: *mut FlexioProcess,
    ibv_ctx: *mut c_void,
    qp_fattr: *const FlexioQpAttr,
    qp_ptr: *mut *mut FlexioQp,
) -> FlexioStatus {
    entry("flexio_qp_create", || {
        let p = proc(process)?;
        same_context(ibv_ctx)?;
        // SAFETY: NULL or valid (the caller's contract).
        let a = unsafe { qp_fattr.as_ref() }.ok_or_else(|| Failure::new("qp_fattr is NULL"))?;
        if qp_ptr.is_null() {
            return Err(Failure::new("qp_ptr is NULL"));
        }
        if a.transport_type != FLEXIO_QPC_ST_RC {
            return Err(Failure::new(format!(
                "transport type {:#x}: only RC QPs are supported",
                a.transport_type
            )));
        }
        if a.no_sq != 0 {
            return Err(Failure::new(
                "QPs without a send queue are not supported yet",
            ));
        }
        let log = |v: i32, what: &str| {
            u8::try_from(v)
                .ok()
                .filter(|&l| l <= 15)
                .ok_or_else(|| Failure::new(format!("{what} {v} is out of range (0..=15)")))
        };
        let log_rq_size = match a.rq_type {
            FLEXIO_QP_QPC_RQ_TYPE_REGULAR => Some(log(a.log_rq_depth, "log_rq_depth")?),
            FLEXIO_QP_QPC_RQ_TYPE_ZERO_SIZE_RQ => None,
            FLEXIO_QP_QPC_RQ_TYPE_SRQ_RMP_XRC_SRQ_XRQ => {
                if !is_rmp_of(&p, a.rmpqn) {
                    return Err(Failure::new(format!(
                        "rmpqn {:#x} is no RMP of this process",
                        a.rmpqn
                    )));
                }
                None
            }
            t => return Err(Failure::new(format!("rq_type {t} is unknown"))),
        };
        access_bits(a.qp_access_mask)?;
        let (umem_id, umem_offset) = place(&p, &a.qp_wq_buff_qmem, "the QP's ring")?;
        let (dbr_at, dbr) = wq_dbr(&p, &a.qp_wq_dbr_qmem)?;
        let cmd = CreateQp {
            pd: pd_of(&p, a.pd)?,
            uar_page: if a.uar_id == 0 {
                p.process.uar().page_id()
            } else {
                a.uar_id
            },
            cqn_snd: Cqn(a.sq_cqn),
            cqn_rcv: Cqn(a.rq_cqn),
            log_sq_size: log(a.log_sq_depth, "log_sq_depth")?,
            log_rq_size,
            log_rq_stride: LOG_RQ_STRIDE,
            srqn: (a.rq_type == FLEXIO_QP_QPC_RQ_TYPE_SRQ_RMP_XRC_SRQ_XRQ).then_some(a.rmpqn),
            mem: RingMem {
                umem_id,
                umem_offset,
                dbr_umem_id: dbr_at.0,
                dbr_offset: dbr_at.1,
            },
            user_index: a.user_index,
        };
        let (obj, qpn) = devx::create(p.process.dev(), &cmd)
            .map_err(|e| Failure::new(format!("CREATE_QP: {e}")))?;
        let h = QPS.insert(Qp {
            obj,
            qpn,
            access: Mutex::new(a.qp_access_mask),
            _dbr: dbr,
            _process: p,
        });
        // SAFETY: checked non-NULL; writable.
        unsafe { put(qp_ptr, h, "qp_ptr") }
    })
}

/// The remote rights of an `IBV_ACCESS_*` mask: (read, write, atomic).
fn access_bits(mask: i32) -> Result<(bool, bool, bool)> {
    let known = IBV_ACCESS_LOCAL_WRITE
        | IBV_ACCESS_REMOTE_WRITE
        | IBV_ACCESS_REMOTE_READ
        | IBV_ACCESS_REMOTE_ATOMIC;
    if mask & !known != 0 {
        return Err(Failure::new(format!(
            "qp_access_mask {mask:#x} has unknown bits"
        )));
    }
    Ok((
        mask & IBV_ACCESS_REMOTE_READ != 0,
        mask & IBV_ACCESS_REMOTE_WRITE != 0,
        mask & IBV_ACCESS_REMOTE_ATOMIC != 0,
    ))
}

/// The PRM attributes of a FlexIO modify.
fn attr_of(a: &FlexioQpAttr, access: i32) -> Result<QpAttr> {
    let (rre, rwe, rae) = access_bits(access)?;
    let mut rmac = [0u8; 6];
    if !a.dest_mac.is_null() {
        // SAFETY: a non-NULL dest_mac points at 6 bytes (FlexIO's contract).
        rmac.copy_from_slice(unsafe { std::slice::from_raw_parts(a.dest_mac, 6) });
    }
    // Checked where it is used (INIT -> RTR); 0 elsewhere is "not given".
    let mtu = u8::try_from(a.path_mtu).unwrap_or(0);
    let min_rnr_nak = u8::try_from(a.min_rnr_nak_timer)
        .ok()
        .filter(|&t| t < 32)
        .ok_or_else(|| {
            Failure::new(format!(
                "min_rnr_nak_timer {} is out of range (0..=31)",
                a.min_rnr_nak_timer
            ))
        })?;
    Ok(QpAttr {
        rre,
        rwe,
        rae,
        vhca_port_num: a.vhca_port_num.max(1),
        mtu,
        remote_qpn: a.remote_qp_num & 0xff_ffff,
        next_rcv_psn: a.next_rcv_psn & 0xff_ffff,
        log_rra_max: a.log_rra_max,
        min_rnr_nak,
        fl: a.fl != 0,
        rmac,
        rgid: a.rgid_or_rip,
        src_addr_index: a.gid_table_index,
        hop_limit: if a.grh != 0 { 64 } else { 0 },
        next_send_psn: a.next_send_psn & 0xff_ffff,
        log_sra_max: a.log_sra_max,
        retry_count: a.retry_count.min(7),
        // FlexIO's attributes name neither: retry receiver-not-ready for ever, and the
        // verbs default ACK timeout (provisional).
        rnr_retry: 7,
        ack_timeout: 14,
        ..QpAttr::default()
    })
}

/// The QP's state as firmware has it.
fn state(qp: &Qp) -> Result<u32> {
    let ctx = devx::query(&qp.obj, &QueryQp(qp.qpn))
        .map_err(|e| Failure::new(format!("QUERY_QP: {e}")))?;
    let v = View::<qpc::Layout>::new(&ctx)
        .map_err(|e| Failure::new(format!("QUERY_QP answer: {e}")))?;
    // A 4-bit field.
    Ok(v.get(qpc::state) as u32)
}

/// Moves the QP one step, from its state to `fattr->next_state` (FlexIO `flexio_qp_modify`):
/// RST -> INIT (access mask, port), INIT -> RTR (path: MTU, remote QP, PSN, force loopback or
/// MAC / GID / GID index), RTR -> RTS (send PSN, retries), RTS -> RTS (what `mask` names:
/// the access mask, the RNR NAK timer), and from any state to ERR or RST. Other moves are
/// refused.
///
/// # Safety
/// `fattr` is NULL or valid, its `dest_mac` NULL or 6 readable bytes; `mask` NULL or valid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flexio_qp_modify(
    qp: *mut FlexioQp,
    fattr: *const FlexioQpAttr,
    mask: *const FlexioQpAttrOptParamMask,
) -> FlexioStatus {
    entry("flexio_qp_modify", || {
        let q = QPS.get(qp)?;
        // SAFETY: NULL or valid (the caller's contract).
        let a = unsafe { fattr.as_ref() }.ok_or_else(|| Failure::new("fattr is NULL"))?;
        // SAFETY: NULL or valid (the caller's contract).
        let m = unsafe { mask.as_ref() };
        let mut access = q.access.lock().unwrap_or_else(PoisonError::into_inner);
        let new_access = if m.is_some_and(|m| m.qp_access_mask) {
            a.qp_access_mask
        } else {
            *access
        };
        let mut attr = attr_of(a, new_access)?;
        let qpn = q.qpn;
        let from = state(&q)?;
        let r = match (from, a.next_state) {
            (_, FLEXIO_QP_STATE_ERR) => devx::modify(
                &q.obj,
                &ModifyQp {
                    qpn,
                    attr,
                    transition: Qp2Err,
                },
            ),
            (_, FLEXIO_QP_STATE_RST) => devx::modify(
                &q.obj,
                &ModifyQp {
                    qpn,
                    attr,
                    transition: Qp2Rst,
                },
            ),
            (FLEXIO_QP_STATE_RST, FLEXIO_QP_STATE_INIT) => devx::modify(
                &q.obj,
                &ModifyQp {
                    qpn,
                    attr,
                    transition: Rst2Init,
                },
            ),
            (FLEXIO_QP_STATE_INIT, FLEXIO_QP_STATE_RTR) => {
                if !(1..=5).contains(&attr.mtu) {
                    return Err(Failure::new(format!("path_mtu {} is unknown", a.path_mtu)));
                }
                devx::modify(
                    &q.obj,
                    &ModifyQp {
                        qpn,
                        attr,
                        transition: Init2Rtr,
                    },
                )
            }
            (FLEXIO_QP_STATE_RTR, FLEXIO_QP_STATE_RTS) => devx::modify(
                &q.obj,
                &ModifyQp {
                    qpn,
                    attr,
                    transition: Rtr2Rts,
                },
            ),
            (FLEXIO_QP_STATE_RTS, FLEXIO_QP_STATE_RTS) => {
                let m = m.ok_or_else(|| Failure::new("RTS -> RTS needs a mask"))?;
                attr.opt_param_mask = if m.qp_access_mask {
                    opt_param::RRE | opt_param::RWE | opt_param::RAE
                } else {
                    0
                } | if m.min_rnr_nak_timer {
                    opt_param::RNR_TIMEOUT
                } else {
                    0
                };
                if attr.opt_param_mask == 0 {
                    return Err(Failure::new(
                        "RTS -> RTS with an empty mask changes nothing",
                    ));
                }
                devx::modify(
                    &q.obj,
                    &ModifyQp {
                        qpn,
                        attr,
                        transition: Rts2Rts,
                    },
                )
            }
            (f, t) => {
                return Err(Failure::new(format!(
                    "QP {:#x}: no move from state {f:#x} to {t:#x}",
                    qpn.0
                )))
            }
        };
        r.map_err(|e| Failure::new(format!("QP {:#x} to state {:#x}: {e}", qpn.0, a.next_state)))?;
        *access = new_access;
        Ok(())
    })
}

/// The QP's state (`enum flexio_qp_state`), `FLEXIO_QP_STATE_ERR` for a bad handle or a failed
/// query (FlexIO `flexio_qp_state_get`).
///
/// # Safety
/// `qp` is any pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flexio_qp_state_get(qp: *mut FlexioQp) -> u32 {
    getter("flexio_qp_state_get", FLEXIO_QP_STATE_ERR, || {
        let q = QPS.get(qp)?;
        state(&q)
    })
}

/// The QP number, `u32::MAX` for a bad handle (FlexIO `flexio_qp_get_qp_num`).
///
/// # Safety
/// `qp` is any pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flexio_qp_get_qp_num(qp: *mut FlexioQp) -> u32 {
    getter("flexio_qp_get_qp_num", u32::MAX, || Ok(QPS.get(qp)?.qpn.0))
}

/// Destroys a QP; NULL is accepted (FlexIO `flexio_qp_destroy`).
///
/// # Safety
/// `qp` is any pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flexio_qp_destroy(qp: *mut FlexioQp) -> FlexioStatus {
    entry("flexio_qp_destroy", || {
        if qp.is_null() {
            return Ok(());
        }
        match Arc::try_unwrap(QPS.remove(qp)?) {
            Ok(mut q) => q
                .obj
                .try_destroy()
                .map_err(|e| Failure::new(format!("destroying the QP: {e}"))),
            // A call on it is still running; the last one releases it.
            Err(_) => Ok(()),
        }
    })
}
