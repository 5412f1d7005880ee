//! The verbs write commands, done on the model's firmware as Linux's `mlx5_ib` does them on a
//! NIC's: each function names the kernel function it follows (Linux
//! `drivers/infiniband/hw/mlx5/{main,cq,qp,mr,srq,ah}.c`, `drivers/infiniband/core/uverbs_cmd.c`).
//! Objects are created with the driver's typed PRM commands (`mlx5_dpa::mlx5::cmd`) through the
//! context's DevX handle, so they carry the context's uid as a kernel-created object does.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use mlx5_dpa::devx::kernel::abi::mlx5 as m;
use mlx5_dpa::devx::kernel::abi::write::{self as w, access, qp_attr_mask as mask, qp_state};
use mlx5_dpa::devx::{self, Devx, UmemAccess};
use mlx5_dpa::mlx5::cmd::{
    AllocPd, CqEventTarget, CreateCq, CreateMkey, CreateQp, CreateRmp, Init2Rtr, MkeyAccess,
    ModifyQp, Qp2Err, Qp2Rst, QpAttr, RingMem, Rst2Init, Rtr2Rts, Rts2Rts, WqAttr,
};
use mlx5_dpa::mlx5::{Cqn, Pdn};
use mlx5_dpa::sync::lock;
use nix::errno::Errno;
use zerocopy::IntoBytes;

use crate::context::{
    errno_of, CompRouter, Cq, Mr, MrRights, Obj, Pd, Qp, QpAttrs, Srq, Ucontext, UserUmem,
};
use crate::device::{self, PortInfo};
use crate::event::EventFile;
use crate::fds;
use crate::wio::WriteIo;

fn pd_of(ctx: &Ucontext, h: u32) -> Result<Arc<Pd>, Errno> {
    match ctx.get(u64::from(h)) {
        Some(Obj::Pd(p)) => Ok(p),
        _ => Err(Errno::EINVAL),
    }
}

fn cq_of(ctx: &Ucontext, h: u32) -> Result<Arc<Cq>, Errno> {
    match ctx.get(u64::from(h)) {
        Some(Obj::Cq(c)) => Ok(c),
        _ => Err(Errno::EINVAL),
    }
}

fn qp_of(ctx: &Ucontext, h: u32) -> Result<Arc<Qp>, Errno> {
    match ctx.get(u64::from(h)) {
        Some(Obj::Qp(q)) => Ok(q),
        _ => Err(Errno::EINVAL),
    }
}

/// Creates the DevX context of a uverbs context and answers the mlx5 request
/// (`mlx5_ib_alloc_ucontext`). Shared by the write command and the ioctl method.
pub(crate) fn alloc_ucontext(
    ctx: &Ucontext,
    req: &m::mlx5_ib_alloc_ucontext_req_v2,
    resp_room: usize,
) -> Result<m::mlx5_ib_alloc_ucontext_resp, Errno> {
    let mut s = ctx.lock();
    if s.devx.is_some() {
        return Err(Errno::EINVAL);
    }
    // mlx5_ib_alloc_ucontext: unknown request flags and lib caps are refused.
    if req.flags & !m::MLX5_IB_ALLOC_UCTX_DEVX != 0 || req.comp_mask != 0 {
        return Err(Errno::EINVAL);
    }
    if req.lib_caps & !(m::MLX5_LIB_CAP_4K_UAR | m::MLX5_LIB_CAP_DYN_UAR) != 0 {
        return Err(Errno::EINVAL);
    }
    let sim = Arc::new(ctx.dev.open());
    let devx: Arc<dyn Devx> = Arc::clone(&sim) as Arc<dyn Devx>;
    let caps = Arc::new(devx::query_caps(&*devx).map_err(errno_of)?);
    let g = &caps.general;
    let resp = m::mlx5_ib_alloc_ucontext_resp {
        qp_tab_size: 1 << g.log_max_qp,
        bf_reg_size: 1 << g.log_bf_reg_size,
        // No static bfregs: UARs are allocated dynamically (`MLX5_IB_OBJECT_UAR`).
        tot_bfregs: 0,
        cache_line_size: 64,
        max_sq_desc_sz: device::MAX_WQE_SZ as u16,
        max_rq_desc_sz: device::MAX_WQE_SZ as u16,
        max_send_wqebb: 1 << g.log_max_qp_sz,
        max_recv_wr: 1 << g.log_max_qp_sz,
        max_srq_recv_wr: 1 << device::LOG_MAX_SRQ_SZ,
        num_ports: 1,
        flow_action_flags: 0,
        comp_mask: 0,
        response_length: resp_room.min(core::mem::size_of::<m::mlx5_ib_alloc_ucontext_resp>())
            as u32,
        cqe_version: req.max_cqe_version.min(g.cqe_version),
        cmds_supp_uhw: 1 | 2, // QUERY_DEVICE | CREATE_AH
        // MLX5_USER_INLINE_MODE_L2 (min_wqe_inline_mode L2, plus one).
        eth_min_inline: 2,
        clock_info_versions: 0,
        hca_core_clock_offset: 0,
        log_uar_size: 12,
        num_uars_per_page: 1,
        num_dyn_bfregs: 0,
        dump_fill_mkey: 0,
    };
    s.devx = Some(crate::config::captured(devx));
    s.sim = Some(sim);
    s.caps = Some(caps);
    s.devx_enabled = req.flags & m::MLX5_IB_ALLOC_UCTX_DEVX != 0;
    Ok(resp)
}

/// The context's async event file (created once).
pub(crate) fn async_file(ctx: &Ucontext) -> Result<Arc<EventFile>, Errno> {
    if let Some(f) = ctx.lock().async_file.clone() {
        return Ok(f);
    }
    let f = EventFile::new(true)?;
    fds::add_event(&f)?;
    ctx.lock().async_file = Some(Arc::clone(&f));
    Ok(f)
}

/// GET_CONTEXT (`ib_uverbs_get_context`).
pub(crate) fn get_context(ctx: &Ucontext, io: &WriteIo<'_>) -> Result<(), Errno> {
    let req: m::mlx5_ib_alloc_ucontext_req_v2 = io.uhw();
    if io.uhw_len() < 8 {
        return Err(Errno::EINVAL);
    }
    let resp = alloc_ucontext(ctx, &req, io.uhw_out_len())?;
    let f = async_file(ctx)?;
    let n = ctx.dev.with_profile_mut(|p| p.comp_vectors);
    io.resp(
        w::ib_uverbs_get_context_resp {
            async_fd: f.fd() as u32,
            num_comp_vectors: n,
        }
        .as_bytes(),
    )?;
    io.uhw_resp(resp.as_bytes())
}

/// QUERY_DEVICE (`ib_uverbs_query_device`, `mlx5_ib_query_device`).
pub(crate) fn query_device(ctx: &Ucontext, io: &WriteIo<'_>) -> Result<(), Errno> {
    let r = device::device_attr(ctx)?;
    io.resp(r.as_bytes())
}

/// EX_QUERY_DEVICE (`ib_uverbs_ex_query_device`).
pub(crate) fn ex_query_device(ctx: &Ucontext, io: &WriteIo<'_>) -> Result<(), Errno> {
    let req: w::ib_uverbs_ex_query_device = io.req()?;
    if req.comp_mask != 0 || req.reserved != 0 {
        return Err(Errno::EINVAL);
    }
    let mut r = device::device_attr_ex(ctx)?;
    r.response_length =
        io.core_out_len()
            .min(core::mem::size_of::<w::ib_uverbs_ex_query_device_resp>()) as u32;
    io.resp(r.as_bytes())?;
    let d = m::mlx5_ib_query_device_resp {
        response_length: io
            .uhw_out_len()
            .min(core::mem::size_of::<m::mlx5_ib_query_device_resp>())
            as u32,
        ..Default::default()
    };
    io.uhw_resp(d.as_bytes())
}

/// QUERY_PORT (`ib_uverbs_query_port`).
pub(crate) fn query_port(ctx: &Ucontext, io: &WriteIo<'_>) -> Result<(), Errno> {
    let req: w::ib_uverbs_query_port = io.req()?;
    let p = PortInfo::of(ctx, req.port_num)?;
    io.resp(p.resp().as_bytes())
}

/// ALLOC_PD (`mlx5_ib_alloc_pd`).
pub(crate) fn alloc_pd(ctx: &Ucontext, io: &WriteIo<'_>) -> Result<(), Errno> {
    let devx = ctx.devx()?;
    let (obj, pdn) = devx::create(&devx, &AllocPd).map_err(errno_of)?;
    let h = ctx.insert(Obj::Pd(Arc::new(Pd {
        _obj: obj,
        pdn: pdn.0,
    })));
    io.resp(w::ib_uverbs_alloc_pd_resp { pd_handle: h }.as_bytes())?;
    io.uhw_resp(m::mlx5_ib_alloc_pd_resp { pdn: pdn.0 }.as_bytes())
}

/// DEALLOC_PD: `EBUSY` while an MR, QP or SRQ uses it.
pub(crate) fn dealloc_pd(ctx: &Ucontext, io: &WriteIo<'_>) -> Result<(), Errno> {
    let req: w::ib_uverbs_dealloc_pd = io.req()?;
    ctx.remove(u64::from(req.pd_handle), |o| matches!(o, Obj::Pd(_)))
        .map(drop)
}

/// A key byte for the next mkey: the kernel rotates `mkey_key` per device so a stale key of a
/// destroyed MR does not match its successor at the same index.
fn next_key() -> u8 {
    static KEY: AtomicU32 = AtomicU32::new(0);
    KEY.fetch_add(1, Ordering::Relaxed) as u8
}

/// What an MR is made of, as REG_MR (or REREG_MR) names it.
#[derive(Clone, Copy)]
struct MrParams {
    start: u64,
    length: u64,
    hca_va: u64,
    access: u32,
}

/// `ib_check_mr_access`, and what this device refuses (on-demand paging: its ODP caps are
/// clear).
fn check_mr_access(a: u32) -> Result<(), Errno> {
    if a & !access::SUPPORTED != 0 {
        return Err(Errno::EINVAL);
    }
    if a & (access::REMOTE_WRITE | access::REMOTE_ATOMIC) != 0 && a & access::LOCAL_WRITE == 0 {
        return Err(Errno::EINVAL);
    }
    if a & access::ON_DEMAND != 0 {
        return Err(Errno::EOPNOTSUPP);
    }
    Ok(())
}

/// The mkey rights of verbs access flags.
fn mkey_access(a: u32) -> MkeyAccess {
    MkeyAccess {
        local_read: true,
        local_write: a & access::LOCAL_WRITE != 0,
        remote_read: a & access::REMOTE_READ != 0,
        remote_write: a & access::REMOTE_WRITE != 0,
        atomic: a & access::REMOTE_ATOMIC != 0,
    }
}

/// Pins the range (a UMEM) and makes an mkey over it (`mlx5_ib_reg_user_mr`).
fn make_mr(ctx: &Ucontext, pd: Arc<Pd>, p: MrParams) -> Result<(Mr, u32), Errno> {
    check_mr_access(p.access)?;
    if p.length == 0 {
        return Err(Errno::EINVAL);
    }
    let a = p.access;
    let devx = ctx.devx()?;
    // The pin is writable or not (`ib_access_writable`); over writable memory any rights may
    // be granted later by REREG_MR without a new key, as the kernel's UMR does.
    let writable = access::LOCAL_WRITE | access::REMOTE_WRITE | access::REMOTE_ATOMIC;
    let ua = if a & writable != 0 {
        UmemAccess::LOCAL_WRITE
            | UmemAccess::REMOTE_WRITE
            | UmemAccess::REMOTE_READ
            | UmemAccess::REMOTE_ATOMIC
    } else {
        UmemAccess::REMOTE_READ
    };
    let umem = UserUmem::register(&devx, p.start, p.length, ua)?;
    let (mkey, key) = devx::create(
        &devx,
        &CreateMkey {
            pd: Pdn(pd.pdn),
            start_addr: p.hca_va,
            len: p.length,
            access: mkey_access(a),
            umem_id: umem.umem_id,
            umem_offset: umem.offset_of(p.start),
            key: next_key(),
            log_page_size: 12,
        },
    )
    .map_err(errno_of)?;
    Ok((
        Mr {
            _mkey: mkey,
            _umem: umem,
            key,
            start: p.start,
            length: p.length,
            hca_va: p.hca_va,
            rights: Mutex::new(MrRights {
                pd,
                access: p.access,
            }),
        },
        key,
    ))
}

/// REG_MR.
pub(crate) fn reg_mr(ctx: &Ucontext, io: &WriteIo<'_>) -> Result<(), Errno> {
    let req: w::ib_uverbs_reg_mr = io.req()?;
    check_mr_access(req.access_flags)?;
    let pd = pd_of(ctx, req.pd_handle)?;
    let (mr, key) = make_mr(
        ctx,
        pd,
        MrParams {
            start: req.start,
            length: req.length,
            hca_va: req.hca_va,
            access: req.access_flags,
        },
    )?;
    let h = ctx.insert(Obj::Mr(Arc::new(mr)));
    io.resp(
        w::ib_uverbs_reg_mr_resp {
            mr_handle: h,
            lkey: key,
            rkey: key,
        }
        .as_bytes(),
    )
}

/// `IB_MR_REREG_TRANS`, `_PD`, `_ACCESS` (`enum ib_mr_rereg_flags`).
const REREG_TRANS: u32 = 1;
const REREG_PD: u32 = 2;
const REREG_ACCESS: u32 = 4;

/// REREG_MR (`ib_uverbs_rereg_mr`, `mlx5_ib_rereg_user_mr`): the MR gets a new translation, PD
/// or access rights. As mlx5_ib may, it is made anew (a new key) and the old one destroyed; the
/// handle stays.
pub(crate) fn rereg_mr(ctx: &Ucontext, io: &WriteIo<'_>) -> Result<(), Errno> {
    let req: w::ib_uverbs_rereg_mr = io.req()?;
    let all = REREG_TRANS | REREG_PD | REREG_ACCESS;
    if req.flags == 0 || req.flags & !all != 0 {
        return Err(Errno::EINVAL);
    }
    let h = req.mr_handle;
    let Some(Obj::Mr(old)) = ctx.get(u64::from(h)) else {
        return Err(Errno::EINVAL);
    };
    let (old_pd, old_access) = {
        let r = lock(&old.rights);
        (Arc::clone(&r.pd), r.access)
    };
    let mut p = MrParams {
        start: old.start,
        length: old.length,
        hca_va: old.hca_va,
        access: old_access,
    };
    if req.flags & REREG_TRANS != 0 {
        // ib_uverbs_rereg_mr: start and hca_va in the same page offset.
        if req.start & 0xfff != req.hca_va & 0xfff {
            return Err(Errno::EINVAL);
        }
        p.start = req.start;
        p.length = req.length;
        p.hca_va = req.hca_va;
    }
    if req.flags & REREG_ACCESS != 0 {
        check_mr_access(req.access_flags)?;
        p.access = req.access_flags;
    }
    let pd = if req.flags & REREG_PD != 0 {
        pd_of(ctx, req.pd_handle)?
    } else {
        old_pd
    };
    // Same memory: the key stays and only the PD and rights change, as mlx5_ib does with a
    // UMR (`umr_rereg_pd_access`); the model refuses when the pin is not writable enough,
    // and then the MR is made anew, as the kernel does too.
    if req.flags & REREG_TRANS == 0 {
        let sim = ctx.lock().sim.clone().ok_or(Errno::EINVAL)?;
        if sim
            .umr_rereg_mkey(old.key, pd.pdn, mkey_access(p.access))
            .is_ok()
        {
            *lock(&old.rights) = MrRights {
                pd,
                access: p.access,
            };
            let key = old.key;
            return io.resp(
                w::ib_uverbs_rereg_mr_resp {
                    lkey: key,
                    rkey: key,
                }
                .as_bytes(),
            );
        }
    }
    let (mr, key) = make_mr(ctx, pd, p)?;
    drop(old);
    {
        let mut s = ctx.lock();
        // The old MR goes (its mkey, then its memory) as the new one takes the handle.
        let was = s.objs.insert(h, Obj::Mr(Arc::new(mr)));
        drop(s);
        drop(was);
    }
    io.resp(
        w::ib_uverbs_rereg_mr_resp {
            lkey: key,
            rkey: key,
        }
        .as_bytes(),
    )
}

/// DEREG_MR.
pub(crate) fn dereg_mr(ctx: &Ucontext, io: &WriteIo<'_>) -> Result<(), Errno> {
    let req: w::ib_uverbs_dereg_mr = io.req()?;
    ctx.remove(u64::from(req.mr_handle), |o| matches!(o, Obj::Mr(_)))
        .map(drop)
}

/// CREATE_COMP_CHANNEL (`ib_uverbs_create_comp_channel`): an event file.
pub(crate) fn create_comp_channel(ctx: &Ucontext, io: &WriteIo<'_>) -> Result<(), Errno> {
    let f = EventFile::new(true)?;
    fds::add_event(&f)?;
    ctx.lock().channels.insert(f.fd(), Arc::clone(&f));
    io.resp(w::ib_uverbs_create_comp_channel_resp { fd: f.fd() as u32 }.as_bytes())
}

/// The context's router of completion events, started with its first CQ on a channel.
fn comp_router(ctx: &Ucontext) -> Result<Arc<CompRouter>, Errno> {
    if let Some(r) = ctx.lock().comp.clone() {
        return Ok(r);
    }
    let chan = ctx
        .lock()
        .sim
        .clone()
        .ok_or(Errno::EINVAL)?
        .shared_event_channel();
    let r = Arc::new(CompRouter {
        chan,
        routes: Default::default(),
        stop: Default::default(),
    });
    crate::pump::start_comp(Arc::clone(&r))?;
    ctx.lock().comp = Some(Arc::clone(&r));
    Ok(r)
}

struct CqReq {
    user_handle: u64,
    cqe: u32,
    comp_vector: u32,
    comp_channel: i32,
}

/// CREATE_CQ (`mlx5_ib_create_cq`, `create_cq_user`).
fn create_cq_common(ctx: &Ucontext, r: CqReq, io: &WriteIo<'_>) -> Result<(u32, u32, u32), Errno> {
    // create_cq_user: at least up to `flags` of the driver data.
    if io.uhw_len() < 22 {
        return Err(Errno::EINVAL);
    }
    let u: m::mlx5_ib_create_cq = io.uhw();
    if (u.cqe_size != 64 && u.cqe_size != 128) || u.reserved0 != 0 || u.reserved1 != 0 {
        return Err(Errno::EINVAL);
    }
    if u.cqe_comp_en != 0 {
        // No CQE compression on this device (`cqe_compression` clear).
        return Err(Errno::EOPNOTSUPP);
    }
    let known = m::MLX5_IB_CREATE_CQ_FLAGS_CQE_128B_PAD
        | m::MLX5_IB_CREATE_CQ_FLAGS_UAR_PAGE_INDEX
        | m::MLX5_IB_CREATE_CQ_FLAGS_REAL_TIME_TS;
    if u.flags & !known != 0 {
        return Err(Errno::EINVAL);
    }
    if u.flags & (m::MLX5_IB_CREATE_CQ_FLAGS_CQE_128B_PAD | m::MLX5_IB_CREATE_CQ_FLAGS_REAL_TIME_TS)
        != 0
    {
        return Err(Errno::EOPNOTSUPP);
    }
    let devx = ctx.devx()?;
    let caps = ctx.caps()?;
    let max = 1u64 << caps.general.log_max_cq_sz;
    if u64::from(r.cqe) > max {
        return Err(Errno::EINVAL);
    }
    let entries = (u64::from(r.cqe) + 1).next_power_of_two();
    if entries > max {
        return Err(Errno::EINVAL);
    }
    let comp_vectors = ctx.dev.with_profile_mut(|p| p.comp_vectors);
    if r.comp_vector >= comp_vectors {
        return Err(Errno::EINVAL);
    }
    let channel = if r.comp_channel >= 0 {
        Some(
            ctx.lock()
                .channels
                .get(&r.comp_channel)
                .cloned()
                .ok_or(Errno::EINVAL)?,
        )
    } else {
        None
    };
    let uar = if u.flags & m::MLX5_IB_CREATE_CQ_FLAGS_UAR_PAGE_INDEX != 0 {
        ctx.uar_by_page(u32::from(u.uar_page_index))
            .ok_or(Errno::EINVAL)?
    } else {
        ctx.default_uar()?
    };
    let bytes = entries * u64::from(u.cqe_size);
    let umem = UserUmem::register(&devx, u.buf_addr, bytes, UmemAccess::LOCAL_WRITE)?;
    let db = ctx.db_page(u.db_addr)?;
    let eqn = devx.query_eqn(r.comp_vector).map_err(errno_of)?;
    let (obj, cqn) = devx::create(
        &devx,
        &CreateCq {
            log_cq_size: entries.trailing_zeros() as u8,
            cqe_sz: u8::from(u.cqe_size == 128),
            uar_page: uar.page_id,
            target: CqEventTarget::Eq(eqn),
            mem: RingMem {
                umem_id: umem.umem_id,
                umem_offset: umem.offset_of(u.buf_addr),
                dbr_umem_id: db.umem.umem_id,
                dbr_offset: db.umem.offset_of(u.db_addr),
            },
            cq_period: 0,
            cq_max_count: 0,
            oi: false,
            cc: false,
            cqe_comp: false,
        },
    )
    .map_err(errno_of)?;
    let comp_reported = Arc::new(AtomicU32::new(0));
    let obj_handle = obj.handle();
    let cq = Arc::new(Cq {
        obj,
        cqn: cqn.0,
        _umem: umem,
        _db: db,
        channel: channel.clone(),
        comp_reported: Arc::clone(&comp_reported),
    });
    let h = ctx.insert(Obj::Cq(cq));
    if let Some(file) = channel {
        let router = match comp_router(ctx) {
            Ok(r) => r,
            Err(e) => {
                let _ = ctx.remove(u64::from(h), |_| true);
                return Err(e);
            }
        };
        mlx5_dpa::sync::lock(&router.routes)
            .insert(u64::from(h), (file, r.user_handle, comp_reported));
        if let Err(e) = router.chan.subscribe(
            Some(obj_handle),
            &[mlx5_sim::event_type::COMP],
            u64::from(h),
        ) {
            mlx5_dpa::sync::lock(&router.routes).remove(&u64::from(h));
            let _ = ctx.remove(u64::from(h), |_| true);
            return Err(errno_of(e));
        }
    }
    Ok((h, entries as u32 - 1, cqn.0))
}

/// CREATE_CQ.
pub(crate) fn create_cq(ctx: &Ucontext, io: &WriteIo<'_>) -> Result<(), Errno> {
    let req: w::ib_uverbs_create_cq = io.req()?;
    let (h, cqe, cqn) = create_cq_common(
        ctx,
        CqReq {
            user_handle: req.user_handle,
            cqe: req.cqe,
            comp_vector: req.comp_vector,
            comp_channel: req.comp_channel,
        },
        io,
    )?;
    io.resp(w::ib_uverbs_create_cq_resp { cq_handle: h, cqe }.as_bytes())?;
    io.uhw_resp(m::mlx5_ib_create_cq_resp { cqn, reserved: 0 }.as_bytes())
}

/// EX_CREATE_CQ.
pub(crate) fn ex_create_cq(ctx: &Ucontext, io: &WriteIo<'_>) -> Result<(), Errno> {
    let req: w::ib_uverbs_ex_create_cq = io.req()?;
    if req.comp_mask != 0 || req.reserved != 0 {
        return Err(Errno::EINVAL);
    }
    // IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION | IGNORE_OVERRUN: neither on this device.
    if req.flags != 0 {
        return Err(Errno::EOPNOTSUPP);
    }
    let (h, cqe, cqn) = create_cq_common(
        ctx,
        CqReq {
            user_handle: req.user_handle,
            cqe: req.cqe,
            comp_vector: req.comp_vector,
            comp_channel: req.comp_channel,
        },
        io,
    )?;
    let resp = w::ib_uverbs_ex_create_cq_resp {
        base: w::ib_uverbs_create_cq_resp { cq_handle: h, cqe },
        comp_mask: 0,
        response_length: io.core_out_len().min(16) as u32,
    };
    io.resp(resp.as_bytes())?;
    io.uhw_resp(m::mlx5_ib_create_cq_resp { cqn, reserved: 0 }.as_bytes())
}

/// DESTROY_CQ: `EBUSY` while a QP uses it; its unread events go with it.
pub(crate) fn destroy_cq(ctx: &Ucontext, io: &WriteIo<'_>) -> Result<(), Errno> {
    let req: w::ib_uverbs_destroy_cq = io.req()?;
    let o = ctx.remove(u64::from(req.cq_handle), |o| matches!(o, Obj::Cq(_)))?;
    let Obj::Cq(cq) = o else {
        return Err(Errno::EINVAL);
    };
    if let Some(r) = ctx.lock().comp.clone() {
        mlx5_dpa::sync::lock(&r.routes).remove(&u64::from(req.cq_handle));
    }
    if let Some(f) = &cq.channel {
        f.remove_tag(u64::from(req.cq_handle));
    }
    let reported = cq.comp_reported.load(Ordering::Acquire);
    drop(cq);
    io.resp(
        w::ib_uverbs_destroy_cq_resp {
            comp_events_reported: reported,
            async_events_reported: 0,
        }
        .as_bytes(),
    )
}

struct QpReq {
    user_handle: u64,
    pd_handle: u32,
    send_cq_handle: u32,
    recv_cq_handle: u32,
    srq_handle: u32,
    caps: [u32; 5],
    sq_sig_all: u8,
    qp_type: u8,
    is_srq: u8,
    /// `IB_QP_CREATE_BLOCK_MULTICAST_LOOPBACK`.
    block_lb_mc: bool,
}

/// `IB_QP_CREATE_BLOCK_MULTICAST_LOOPBACK` (`enum ib_qp_create_flags`).
const CREATE_BLOCK_MULTICAST_LOOPBACK: u32 = 1 << 1;

/// CREATE_QP (`mlx5_ib_create_qp`, `create_user_qp`): an RC or UD QP on the client's buffer.
fn create_qp_common(ctx: &Ucontext, r: QpReq, io: &WriteIo<'_>) -> Result<(u32, u32), Errno> {
    let _ = r.user_handle;
    let ud = match r.qp_type {
        w::qp_type::RC => false,
        w::qp_type::UD => true,
        // The model has no UC, raw-packet or XRC datapath yet: refused as a device without
        // them refuses them (`mlx5_ib_create_qp`'s type check).
        w::qp_type::UC
        | w::qp_type::RAW_PACKET
        | w::qp_type::XRC_INI
        | w::qp_type::XRC_TGT
        | w::qp_type::DRIVER => return Err(Errno::EOPNOTSUPP),
        _ => return Err(Errno::EINVAL),
    };
    if io.uhw_len() < 40 {
        return Err(Errno::EINVAL);
    }
    let u: m::mlx5_ib_create_qp = io.uhw();
    if u.flags & !m::MLX5_QP_FLAGS_KNOWN != 0 {
        return Err(Errno::EINVAL);
    }
    // get_qp_user_index: 24 bits.
    if u.uidx > 0xff_ffff {
        return Err(Errno::EINVAL);
    }
    let devx = ctx.devx()?;
    let caps = ctx.caps()?;
    let max = 1u32 << caps.general.log_max_qp_sz;
    let pow2 = |n: u32| n == 0 || n.is_power_of_two();
    if !pow2(u.sq_wqe_count)
        || !pow2(u.rq_wqe_count)
        || u.sq_wqe_count > max
        || u.rq_wqe_count > max
    {
        return Err(Errno::EINVAL);
    }
    if u.sq_wqe_count == 0 {
        return Err(Errno::EINVAL);
    }
    if u.rq_wqe_count > 0 && !(4..=9).contains(&u.rq_wqe_shift) {
        return Err(Errno::EINVAL);
    }
    let pd = pd_of(ctx, r.pd_handle)?;
    let send_cq = cq_of(ctx, r.send_cq_handle)?;
    let recv_cq = cq_of(ctx, r.recv_cq_handle)?;
    let srq = if r.is_srq != 0 {
        match ctx.get(u64::from(r.srq_handle)) {
            Some(Obj::Srq(s)) => Some(s),
            _ => return Err(Errno::EINVAL),
        }
    } else {
        None
    };
    let uar = if u.flags & m::MLX5_QP_FLAG_UAR_PAGE_INDEX != 0 {
        ctx.uar_by_page(u.bfreg_index).ok_or(Errno::EINVAL)?
    } else if u.flags & m::MLX5_QP_FLAG_BFREG_INDEX != 0 {
        // No static bfregs in this context (`tot_bfregs` 0).
        return Err(Errno::EINVAL);
    } else {
        ctx.default_uar()?
    };
    let rq_bytes = if srq.is_some() {
        0
    } else {
        u64::from(u.rq_wqe_count) << u.rq_wqe_shift
    };
    let bytes = rq_bytes + u64::from(u.sq_wqe_count) * 64;
    let umem = UserUmem::register(&devx, u.buf_addr, bytes, UmemAccess::LOCAL_WRITE)?;
    let db = ctx.db_page(u.db_addr)?;
    let log_rq =
        (srq.is_none() && u.rq_wqe_count > 0).then(|| u.rq_wqe_count.trailing_zeros() as u8);
    let (obj, qpn) = create_qp_obj(
        &devx,
        ud,
        r.block_lb_mc,
        &CreateQp {
            pd: Pdn(pd.pdn),
            uar_page: uar.page_id,
            cqn_snd: Cqn(send_cq.cqn),
            cqn_rcv: Cqn(recv_cq.cqn),
            log_sq_size: u.sq_wqe_count.trailing_zeros() as u8,
            log_rq_size: log_rq,
            log_rq_stride: u.rq_wqe_shift.saturating_sub(4) as u8,
            srqn: srq.as_ref().map(|s| s.srqn),
            mem: RingMem {
                umem_id: umem.umem_id,
                umem_offset: umem.offset_of(u.buf_addr),
                dbr_umem_id: db.umem.umem_id,
                dbr_offset: db.umem.offset_of(u.db_addr),
            },
            // The user index libmlx5 finds the QP by in CQEs (`get_qp_user_index`).
            user_index: u.uidx,
        },
    )?;
    // `set_rq_size` of a user QP: the WQE count it asked for, and what one WQE holds.
    let rq_caps = if srq.is_some() || u.rq_wqe_count == 0 {
        (0, 0)
    } else {
        (u.rq_wqe_count, (1u32 << u.rq_wqe_shift) / 16)
    };
    let qp = Arc::new(Qp {
        obj,
        qpn,
        ud,
        rq_caps,
        _umem: umem,
        _db: db,
        _send_cq: send_cq,
        _recv_cq: recv_cq,
        _srq: srq,
        _pd: pd,
        sq_sig_all: r.sq_sig_all != 0,
        caps: r.caps,
        attrs: Default::default(),
    });
    let h = ctx.insert(Obj::Qp(qp));
    let _ = u.bfreg_index;
    Ok((h, qpn))
}

/// CREATE_QP on the model: the driver's typed command for RC; for UD, or with multicast
/// loopback blocked, the same mailbox with `qpc.st` UD (`mlx5_ib`'s `create_qp_common` sets
/// the service type from the verbs type) and `qpc.block_lb_mc`.
fn create_qp_obj(
    devx: &Arc<dyn Devx>,
    ud: bool,
    block_lb_mc: bool,
    cmd: &CreateQp,
) -> Result<(mlx5_dpa::devx::DevxObj, u32), Errno> {
    use mlx5_dpa::mlx5::layout::{Layout, View, ViewMut};
    use mlx5_dpa::mlx5::layouts::{create_qp_in, create_qp_out, qpc};
    if !ud && !block_lb_mc {
        let (obj, qpn) = devx::create(devx, cmd).map_err(errno_of)?;
        return Ok((obj, qpn.0));
    }
    let mut inbox = mlx5_dpa::mlx5::cmd::encode_inbox(cmd).map_err(|_| Errno::EINVAL)?;
    {
        let mut v = ViewMut::<create_qp_in::Layout>::new(&mut inbox).map_err(|_| Errno::EINVAL)?;
        if ud {
            v.set(create_qp_in::qpc.at(qpc::st), QPC_ST_UD);
        }
        if block_lb_mc {
            v.set(create_qp_in::qpc.at(qpc::block_lb_mc), 1);
        }
    }
    let (out, obj) =
        devx::raw_command(devx, &inbox, create_qp_out::Layout::SIZE_BYTES).map_err(errno_of)?;
    let obj = obj.ok_or(Errno::EINVAL)?;
    let qpn = View::<create_qp_out::Layout>::new(&out)
        .map_err(|_| Errno::EINVAL)?
        .value(create_qp_out::qpn);
    Ok((obj, qpn))
}

/// `qpc.st` of a UD QP (PRM).
const QPC_ST_UD: u64 = 0x2;

fn qp_resp(h: u32, qpn: u32, caps: [u32; 5]) -> w::ib_uverbs_create_qp_resp {
    w::ib_uverbs_create_qp_resp {
        qp_handle: h,
        qpn,
        max_send_wr: caps[0],
        max_recv_wr: caps[1],
        max_send_sge: caps[2],
        max_recv_sge: caps[3],
        max_inline_data: caps[4],
        reserved: 0,
    }
}

/// The request of CREATE_QP or EX_CREATE_QP (their fields have the same names).
macro_rules! qp_req {
    ($req:expr, $block_lb_mc:expr) => {{
        let r = &$req;
        QpReq {
            user_handle: r.user_handle,
            pd_handle: r.pd_handle,
            send_cq_handle: r.send_cq_handle,
            recv_cq_handle: r.recv_cq_handle,
            srq_handle: r.srq_handle,
            caps: [
                r.max_send_wr,
                r.max_recv_wr,
                r.max_send_sge,
                r.max_recv_sge,
                r.max_inline_data,
            ],
            sq_sig_all: r.sq_sig_all,
            qp_type: r.qp_type,
            is_srq: r.is_srq,
            block_lb_mc: $block_lb_mc,
        }
    }};
}

/// The mlx5 part of a CREATE_QP answer: the bfreg index the request named.
fn mlx5_qp_resp(io: &WriteIo<'_>) -> Result<(), Errno> {
    let u: m::mlx5_ib_create_qp = io.uhw();
    io.uhw_resp(
        m::mlx5_ib_create_qp_resp {
            bfreg_index: u.bfreg_index,
            ..Default::default()
        }
        .as_bytes(),
    )
}

/// CREATE_QP.
pub(crate) fn create_qp(ctx: &Ucontext, io: &WriteIo<'_>) -> Result<(), Errno> {
    let req: w::ib_uverbs_create_qp = io.req()?;
    let r = qp_req!(req, false);
    let caps = r.caps;
    let (h, qpn) = create_qp_common(ctx, r, io)?;
    io.resp(qp_resp(h, qpn, caps).as_bytes())?;
    mlx5_qp_resp(io)
}

/// EX_CREATE_QP.
pub(crate) fn ex_create_qp(ctx: &Ucontext, io: &WriteIo<'_>) -> Result<(), Errno> {
    let req: w::ib_uverbs_ex_create_qp = io.req()?;
    // Create flags: blocking multicast loopback only (the model has no multicast, so its
    // QPs never receive their own; the capability `block_lb_mc` says so).
    if req.comp_mask != 0
        || req.create_flags & !CREATE_BLOCK_MULTICAST_LOOPBACK != 0
        || req.source_qpn != 0
    {
        return Err(Errno::EOPNOTSUPP);
    }
    let r = qp_req!(req, req.create_flags & CREATE_BLOCK_MULTICAST_LOOPBACK != 0);
    let caps = r.caps;
    let (h, qpn) = create_qp_common(ctx, r, io)?;
    let resp = w::ib_uverbs_ex_create_qp_resp {
        base: qp_resp(h, qpn, caps),
        comp_mask: 0,
        response_length: io.core_out_len().min(40) as u32,
    };
    io.resp(resp.as_bytes())?;
    mlx5_qp_resp(io)
}

/// DESTROY_QP.
pub(crate) fn destroy_qp(ctx: &Ucontext, io: &WriteIo<'_>) -> Result<(), Errno> {
    let req: w::ib_uverbs_destroy_qp = io.req()?;
    ctx.remove(u64::from(req.qp_handle), |o| matches!(o, Obj::Qp(_)))?;
    io.resp(w::ib_uverbs_destroy_qp_resp { events_reported: 0 }.as_bytes())
}

/// The attributes each RC transition requires and allows (IBA 10.3.1 and Linux
/// `drivers/infiniband/core/verbs.c` `qp_state_table`, RC column).
fn rc_transition(cur: u8, new: u8) -> Option<(u32, u32)> {
    use qp_state::*;
    Some(match (cur, new) {
        (RESET, RESET) | (_, ERR) => (0, 0),
        (_, RESET) => (0, 0),
        (RESET, INIT) => (mask::PKEY_INDEX | mask::PORT | mask::ACCESS_FLAGS, 0),
        (INIT, INIT) => (0, mask::PKEY_INDEX | mask::PORT | mask::ACCESS_FLAGS),
        (INIT, RTR) => (
            mask::AV
                | mask::PATH_MTU
                | mask::DEST_QPN
                | mask::RQ_PSN
                | mask::MAX_DEST_RD_ATOMIC
                | mask::MIN_RNR_TIMER,
            mask::ALT_PATH | mask::ACCESS_FLAGS | mask::PKEY_INDEX | mask::RATE_LIMIT,
        ),
        (RTR, RTS) => (
            mask::TIMEOUT
                | mask::RETRY_CNT
                | mask::RNR_RETRY
                | mask::SQ_PSN
                | mask::MAX_QP_RD_ATOMIC,
            mask::CUR_STATE
                | mask::ALT_PATH
                | mask::ACCESS_FLAGS
                | mask::MIN_RNR_TIMER
                | mask::PATH_MIG_STATE
                | mask::RATE_LIMIT,
        ),
        (RTS, RTS) => (
            0,
            mask::CUR_STATE
                | mask::ACCESS_FLAGS
                | mask::ALT_PATH
                | mask::PATH_MIG_STATE
                | mask::MIN_RNR_TIMER
                | mask::RATE_LIMIT,
        ),
        _ => return None,
    })
}

/// The attributes each UD transition requires and allows (Linux `qp_state_table`, UD
/// column).
fn ud_transition(cur: u8, new: u8) -> Option<(u32, u32)> {
    use qp_state::*;
    Some(match (cur, new) {
        (RESET, RESET) | (_, ERR) | (_, RESET) => (0, 0),
        (RESET, INIT) => (mask::PKEY_INDEX | mask::PORT | mask::QKEY, 0),
        (INIT, INIT) => (0, mask::PKEY_INDEX | mask::PORT | mask::QKEY),
        (INIT, RTR) => (0, mask::PKEY_INDEX | mask::QKEY),
        (RTR, RTS) => (mask::SQ_PSN, mask::CUR_STATE | mask::QKEY),
        (RTS, RTS) => (0, mask::CUR_STATE | mask::QKEY),
        _ => return None,
    })
}

/// The PRM optional-parameter mask of the verbs attributes a modify names (Linux mlx5_ib
/// `ib_mask_to_mlx5_opt`).
fn opt_mask(attr_mask: u32) -> u32 {
    use mlx5_dpa::mlx5::cmd::opt_param as o;
    let map: [(u32, u32); 11] = [
        (mask::ACCESS_FLAGS, o::RWE | o::RRE | o::RAE),
        (mask::PKEY_INDEX, o::PKEY_INDEX),
        (mask::PORT, o::PRI_PORT),
        (mask::QKEY, o::Q_KEY),
        (mask::AV, o::PRIMARY_ADDR_PATH | o::PRI_PORT),
        (mask::TIMEOUT, o::ACK_TIMEOUT),
        (mask::RETRY_CNT, o::RETRY_COUNT),
        (mask::RNR_RETRY, o::RNR_RETRY),
        (mask::MAX_QP_RD_ATOMIC, o::SRA_MAX),
        (mask::MIN_RNR_TIMER, o::RNR_TIMEOUT),
        (mask::PATH_MIG_STATE, o::PM_STATE),
    ];
    let mut m = map
        .iter()
        .filter(|(ib, _)| attr_mask & ib != 0)
        .fold(0, |m, (_, p)| m | p);
    if attr_mask & mask::MAX_DEST_RD_ATOMIC != 0 {
        m |= o::RRA_MAX | o::RWE | o::RRE | o::RAE;
    }
    if attr_mask & mask::ALT_PATH != 0 {
        m |= o::ALT_ADDR_PATH;
    }
    m
}

fn log2_ceil(n: u8) -> u8 {
    if n <= 1 {
        0
    } else {
        (u32::from(n) - 1).ilog2() as u8 + 1
    }
}

/// MODIFY_QP (`mlx5_ib_modify_qp`, `__mlx5_ib_modify_qp`): checks the transition and its
/// attributes as `ib_modify_qp_is_ok` does, then sends the PRM transition.
fn modify_qp_common(ctx: &Ucontext, req: &w::ib_uverbs_modify_qp) -> Result<(), Errno> {
    let qp = qp_of(ctx, req.qp_handle)?;
    let mut a = mlx5_dpa::sync::lock(&qp.attrs);
    let cur = if req.attr_mask & mask::CUR_STATE != 0 {
        req.cur_qp_state
    } else {
        a.state
    };
    let new = if req.attr_mask & mask::STATE != 0 {
        req.qp_state
    } else {
        cur
    };
    if cur > qp_state::ERR || new > qp_state::ERR {
        return Err(Errno::EINVAL);
    }
    let table = if qp.ud { ud_transition } else { rc_transition };
    let (required, optional) = table(cur, new).ok_or(Errno::EINVAL)?;
    let given = req.attr_mask & !(mask::STATE | mask::CUR_STATE);
    if given & required != required || given & !(required | optional) != 0 {
        return Err(Errno::EINVAL);
    }
    let mut next = a.clone();
    apply_attrs(ctx, req, &mut next)?;
    let m_ = req.attr_mask;
    let mut rmac = [0u8; 6];
    if m_ & mask::AV != 0 {
        // RoCE needs a GRH (`IB_UVERBS_QPF_GRH_REQUIRED`).
        if req.dest.is_global == 0 {
            return Err(Errno::EINVAL);
        }
        if u32::from(req.dest.sgid_index) >= device::GID_TABLE_LEN {
            return Err(Errno::EINVAL);
        }
        next.dest = req.dest;
    }
    if !qp.ud && (m_ & mask::AV != 0 || new == qp_state::RTR) {
        rmac = device::resolve_dmac(ctx, &next.dest.dgid).ok_or(Errno::EHOSTUNREACH)?;
    }
    let attr = prm_attr(qp.ud, &next, req.attr_mask, rmac);
    let qpn = mlx5_dpa::mlx5::Qpn(qp.qpn);
    send_transition(&qp.obj, qpn, attr, cur, new)?.map_err(errno_of)?;
    next.state = new;
    if new == qp_state::RESET {
        next = QpAttrs::default();
    }
    *a = next;
    Ok(())
}

/// The attributes `req` sets, checked as `mlx5_ib` checks them, written into `next`.
fn apply_attrs(
    ctx: &Ucontext,
    req: &w::ib_uverbs_modify_qp,
    next: &mut QpAttrs,
) -> Result<(), Errno> {
    let caps = device::Caps::of(ctx)?;
    let ra_res = caps.get(mlx5_dpa::mlx5::layouts::cmd_hca_cap::log_max_ra_res_qp);
    let ra_req = caps.get(mlx5_dpa::mlx5::layouts::cmd_hca_cap::log_max_ra_req_qp);
    let m_ = req.attr_mask;
    if m_ & mask::PORT != 0 {
        if req.port_num != 1 {
            return Err(Errno::EINVAL);
        }
        next.port = req.port_num;
    }
    if m_ & mask::PKEY_INDEX != 0 {
        if req.pkey_index >= device::PKEY_TABLE_LEN {
            return Err(Errno::EINVAL);
        }
        next.pkey_index = req.pkey_index;
    }
    if m_ & mask::ACCESS_FLAGS != 0 {
        next.access = req.qp_access_flags;
    }
    if m_ & mask::QKEY != 0 {
        next.qkey = req.qkey;
    }
    if m_ & mask::PATH_MTU != 0 {
        if !(1..=5).contains(&req.path_mtu) {
            return Err(Errno::EINVAL);
        }
        next.path_mtu = req.path_mtu;
    }
    if m_ & mask::DEST_QPN != 0 {
        next.dest_qp_num = req.dest_qp_num & 0xff_ffff;
    }
    if m_ & mask::RQ_PSN != 0 {
        next.rq_psn = req.rq_psn & 0xff_ffff;
    }
    if m_ & mask::SQ_PSN != 0 {
        next.sq_psn = req.sq_psn & 0xff_ffff;
    }
    if m_ & mask::MAX_DEST_RD_ATOMIC != 0 {
        if u64::from(req.max_dest_rd_atomic) > 1u64 << ra_res.min(32) {
            return Err(Errno::EINVAL);
        }
        next.max_dest_rd_atomic = req.max_dest_rd_atomic;
    }
    if m_ & mask::MAX_QP_RD_ATOMIC != 0 {
        if u64::from(req.max_rd_atomic) > 1u64 << ra_req.min(32) {
            return Err(Errno::EINVAL);
        }
        next.max_rd_atomic = req.max_rd_atomic;
    }
    if m_ & mask::MIN_RNR_TIMER != 0 {
        next.min_rnr_timer = req.min_rnr_timer & 0x1f;
    }
    if m_ & mask::TIMEOUT != 0 {
        next.timeout = req.timeout & 0x1f;
    }
    if m_ & mask::RETRY_CNT != 0 {
        next.retry_cnt = req.retry_cnt & 7;
    }
    if m_ & mask::RNR_RETRY != 0 {
        next.rnr_retry = req.rnr_retry & 7;
    }
    Ok(())
}

/// The PRM QP context of a transition to the attributes `next` (UD or RC).
fn prm_attr(ud: bool, next: &QpAttrs, attr_mask: u32, rmac: [u8; 6]) -> QpAttr {
    if ud {
        // A UD QP: port, P_Key index and Q_Key, the send PSN; each WQE carries its address.
        // `mlx5_ib` gives UD the largest MTU (`IB_MTU_4096`).
        QpAttr {
            vhca_port_num: next.port.max(1),
            q_key: next.qkey,
            mtu: 5,
            next_send_psn: next.sq_psn,
            opt_param_mask: opt_mask(attr_mask),
            ..QpAttr::default()
        }
    } else {
        QpAttr {
            rre: next.access & access::REMOTE_READ != 0,
            rwe: next.access & access::REMOTE_WRITE != 0,
            rae: next.access & access::REMOTE_ATOMIC != 0,
            vhca_port_num: next.port.max(1),
            mtu: next.path_mtu,
            remote_qpn: next.dest_qp_num,
            next_rcv_psn: next.rq_psn,
            log_rra_max: log2_ceil(next.max_dest_rd_atomic),
            min_rnr_nak: next.min_rnr_timer,
            fl: false,
            rmac,
            rgid: next.dest.dgid,
            src_addr_index: next.dest.sgid_index,
            hop_limit: next.dest.hop_limit,
            next_send_psn: next.sq_psn,
            log_sra_max: log2_ceil(next.max_rd_atomic),
            retry_count: next.retry_cnt,
            rnr_retry: next.rnr_retry,
            ack_timeout: next.timeout,
            opt_param_mask: opt_mask(attr_mask),
            q_key: next.qkey,
        }
    }
}

/// Sends the PRM transition from `cur` to `new` (INIT to INIT is no command).
fn send_transition(
    o: &mlx5_dpa::devx::DevxObj,
    qpn: mlx5_dpa::mlx5::Qpn,
    attr: QpAttr,
    cur: u8,
    new: u8,
) -> Result<Result<(), mlx5_dpa::devx::DevxError>, Errno> {
    Ok(match (cur, new) {
        (_, qp_state::RESET) => devx::modify(
            o,
            &ModifyQp {
                qpn,
                attr,
                transition: Qp2Rst,
            },
        ),
        (_, qp_state::ERR) => devx::modify(
            o,
            &ModifyQp {
                qpn,
                attr,
                transition: Qp2Err,
            },
        ),
        (qp_state::RESET, qp_state::INIT) => devx::modify(
            o,
            &ModifyQp {
                qpn,
                attr,
                transition: Rst2Init,
            },
        ),
        (qp_state::INIT, qp_state::INIT) => Ok(()),
        (qp_state::INIT, qp_state::RTR) => devx::modify(
            o,
            &ModifyQp {
                qpn,
                attr,
                transition: Init2Rtr,
            },
        ),
        (qp_state::RTR, qp_state::RTS) => devx::modify(
            o,
            &ModifyQp {
                qpn,
                attr,
                transition: Rtr2Rts,
            },
        ),
        (qp_state::RTS, qp_state::RTS) => devx::modify(
            o,
            &ModifyQp {
                qpn,
                attr,
                transition: Rts2Rts,
            },
        ),
        _ => return Err(Errno::EINVAL),
    })
}

/// MODIFY_QP.
pub(crate) fn modify_qp(ctx: &Ucontext, io: &WriteIo<'_>) -> Result<(), Errno> {
    let req: w::ib_uverbs_modify_qp = io.req()?;
    modify_qp_common(ctx, &req)
}

/// EX_MODIFY_QP.
pub(crate) fn ex_modify_qp(ctx: &Ucontext, io: &WriteIo<'_>) -> Result<(), Errno> {
    let req: w::ib_uverbs_ex_modify_qp = io.req()?;
    if req.reserved != 0 {
        return Err(Errno::EINVAL);
    }
    if req.base.attr_mask & mask::RATE_LIMIT != 0 && req.rate_limit != 0 {
        // No packet pacing on this device.
        return Err(Errno::EOPNOTSUPP);
    }
    modify_qp_common(ctx, &req.base)?;
    io.resp(
        w::ib_uverbs_ex_modify_qp_resp {
            comp_mask: 0,
            response_length: io.core_out_len().min(8) as u32,
        }
        .as_bytes(),
    )
}

/// QUERY_QP (`mlx5_ib_query_qp`): the state from firmware, the rest as last set.
pub(crate) fn query_qp(ctx: &Ucontext, io: &WriteIo<'_>) -> Result<(), Errno> {
    let req: w::ib_uverbs_query_qp = io.req()?;
    let qp = qp_of(ctx, req.qp_handle)?;
    let a = mlx5_dpa::sync::lock(&qp.attrs).clone();
    let fw_state = devx::query(
        &qp.obj,
        &mlx5_dpa::mlx5::cmd::QueryQp(mlx5_dpa::mlx5::Qpn(qp.qpn)),
    )
    .ok()
    .and_then(|ctxb| {
        mlx5_dpa::mlx5::View::<mlx5_dpa::mlx5::layouts::qpc::Layout>::new(&ctxb)
            .ok()
            .and_then(|v| v.value(mlx5_dpa::mlx5::layouts::qpc::state).ok())
    });
    // PRM states to IB states (`enum ib_qp_state`).
    use mlx5_dpa::mlx5::QpState as Prm;
    let state = match fw_state {
        Some(Prm::Rst) => qp_state::RESET,
        Some(Prm::Init) => qp_state::INIT,
        Some(Prm::Rtr) => qp_state::RTR,
        Some(Prm::Rts) => qp_state::RTS,
        Some(Prm::SqEr) => qp_state::SQE,
        Some(Prm::Err) => qp_state::ERR,
        Some(Prm::Sqd) => qp_state::SQD,
        Some(Prm::Suspended) | None => a.state,
    };
    let resp = w::ib_uverbs_query_qp_resp {
        dest: a.dest,
        // `mlx5_ib_query_qp` of a user QP: the receive queue as built (its WQE count and the
        // data segments a WQE holds), the send caps 0 (libmlx5 fills them in itself).
        max_send_wr: 0,
        max_recv_wr: qp.rq_caps.0,
        max_send_sge: 0,
        max_recv_sge: qp.rq_caps.1,
        max_inline_data: qp.caps[4],
        qkey: a.qkey,
        rq_psn: a.rq_psn,
        sq_psn: a.sq_psn,
        dest_qp_num: a.dest_qp_num,
        qp_access_flags: a.access,
        pkey_index: a.pkey_index,
        qp_state: state,
        cur_qp_state: state,
        path_mtu: a.path_mtu,
        path_mig_state: 3, // IB_MIG_MIGRATED
        max_rd_atomic: a.max_rd_atomic,
        max_dest_rd_atomic: a.max_dest_rd_atomic,
        min_rnr_timer: a.min_rnr_timer,
        port_num: a.port,
        timeout: a.timeout,
        retry_cnt: a.retry_cnt,
        rnr_retry: a.rnr_retry,
        sq_sig_all: u8::from(qp.sq_sig_all),
        ..Default::default()
    };
    io.resp(resp.as_bytes())
}

struct SrqReq {
    pd_handle: u32,
    max_wr: u32,
    max_sge: u32,
    srq_limit: u32,
}

/// CREATE_SRQ (`mlx5_ib_create_srq`, `create_srq_user`): an RMP over the client's buffer, its
/// WQEs a linked list (`MLX5_WQ_TYPE_LINKED_LIST`), as libmlx5 lays them out.
fn create_srq_common(
    ctx: &Ucontext,
    r: SrqReq,
    io: &WriteIo<'_>,
) -> Result<(u32, u32, u32, u32), Errno> {
    if io.uhw_len() < 16 {
        return Err(Errno::EINVAL);
    }
    let u: m::mlx5_ib_create_srq = io.uhw();
    // MLX5_SRQ_FLAG_SIGNATURE is the only flag; the model checks no WQE signatures.
    if u.flags & !1 != 0 {
        return Err(Errno::EINVAL);
    }
    if r.max_wr == 0 || r.max_wr >= 1 << device::LOG_MAX_SRQ_SZ {
        return Err(Errno::EINVAL);
    }
    let max_gs = r.max_sge;
    if max_gs > device::MAX_WQE_SZ / 16 - 1 {
        return Err(Errno::EINVAL);
    }
    // desc_size: the next segment and the data segments, a power of two of at least 32.
    let desc = (16 + 16 * max_gs).next_power_of_two().max(32);
    let max = (r.max_wr + 1).next_power_of_two();
    if r.srq_limit > max - 1 {
        return Err(Errno::EINVAL);
    }
    let pd = pd_of(ctx, r.pd_handle)?;
    let devx = ctx.devx()?;
    let uar = ctx.default_uar()?;
    let umem = UserUmem::register(
        &devx,
        u.buf_addr,
        u64::from(max) * u64::from(desc),
        UmemAccess::LOCAL_WRITE,
    )?;
    let db = ctx.db_page(u.db_addr)?;
    let (obj, srqn) = devx::create(
        &devx,
        &CreateRmp {
            wq: WqAttr {
                pd: Pdn(pd.pdn),
                uar_page: uar.page_id,
                log_wq_stride: desc.trailing_zeros() as u8,
                log_wq_sz: max.trailing_zeros() as u8,
                mem: RingMem {
                    umem_id: umem.umem_id,
                    umem_offset: umem.offset_of(u.buf_addr),
                    dbr_umem_id: db.umem.umem_id,
                    dbr_offset: db.umem.offset_of(u.db_addr),
                },
            },
            linked_list: true,
        },
    )
    .map_err(errno_of)?;
    let gathers = (desc - 16) / 16;
    let srq = Arc::new(Srq {
        obj,
        srqn,
        _umem: umem,
        _db: db,
        _pd: pd,
        max_wr: max - 1,
        max_sge: gathers,
        limit: AtomicU32::new(r.srq_limit),
    });
    let h = ctx.insert(Obj::Srq(srq));
    Ok((h, max - 1, gathers, srqn))
}

fn srq_resp(
    io: &WriteIo<'_>,
    (h, max_wr, max_sge, srqn): (u32, u32, u32, u32),
) -> Result<(), Errno> {
    io.resp(
        w::ib_uverbs_create_srq_resp {
            srq_handle: h,
            max_wr,
            max_sge,
            srqn,
        }
        .as_bytes(),
    )?;
    io.uhw_resp(m::mlx5_ib_create_srq_resp { srqn, reserved: 0 }.as_bytes())
}

/// CREATE_SRQ.
pub(crate) fn create_srq(ctx: &Ucontext, io: &WriteIo<'_>) -> Result<(), Errno> {
    let req: w::ib_uverbs_create_srq = io.req()?;
    let r = create_srq_common(
        ctx,
        SrqReq {
            pd_handle: req.pd_handle,
            max_wr: req.max_wr,
            max_sge: req.max_sge,
            srq_limit: req.srq_limit,
        },
        io,
    )?;
    srq_resp(io, r)
}

/// CREATE_XSRQ: basic SRQs (`IB_SRQT_BASIC`); XRC and tag-matching SRQs are not on this
/// device (`EOPNOTSUPP`, as `mlx5_ib_create_srq` answers for types it lacks).
pub(crate) fn create_xsrq(ctx: &Ucontext, io: &WriteIo<'_>) -> Result<(), Errno> {
    let req: w::ib_uverbs_create_xsrq = io.req()?;
    match req.srq_type {
        0 => {}
        1 | 2 => return Err(Errno::EOPNOTSUPP),
        _ => return Err(Errno::EINVAL),
    }
    let r = create_srq_common(
        ctx,
        SrqReq {
            pd_handle: req.pd_handle,
            max_wr: req.max_wr,
            max_sge: req.max_sge,
            srq_limit: req.srq_limit,
        },
        io,
    )?;
    srq_resp(io, r)
}

/// MODIFY_SRQ.
pub(crate) fn modify_srq(ctx: &Ucontext, io: &WriteIo<'_>) -> Result<(), Errno> {
    let req: w::ib_uverbs_modify_srq = io.req()?;
    match ctx.get(u64::from(req.srq_handle)) {
        Some(Obj::Srq(s)) => {
            // IB_SRQ_LIMIT (2) arms the limit; IB_SRQ_MAX_WR (1) resizing is not supported.
            if req.attr_mask & 1 != 0 {
                return Err(Errno::EINVAL);
            }
            if req.attr_mask & 2 != 0 {
                if req.srq_limit > s.max_wr {
                    return Err(Errno::EINVAL);
                }
                s.limit.store(req.srq_limit, Ordering::Release);
            }
            Ok(())
        }
        _ => Err(Errno::EINVAL),
    }
}

/// QUERY_SRQ.
pub(crate) fn query_srq(ctx: &Ucontext, io: &WriteIo<'_>) -> Result<(), Errno> {
    let req: w::ib_uverbs_query_srq = io.req()?;
    match ctx.get(u64::from(req.srq_handle)) {
        Some(Obj::Srq(s)) => io.resp(
            w::ib_uverbs_query_srq_resp {
                max_wr: s.max_wr,
                max_sge: s.max_sge,
                srq_limit: s.limit.load(Ordering::Acquire),
                reserved: 0,
            }
            .as_bytes(),
        ),
        _ => Err(Errno::EINVAL),
    }
}

/// DESTROY_SRQ.
pub(crate) fn destroy_srq(ctx: &Ucontext, io: &WriteIo<'_>) -> Result<(), Errno> {
    let req: w::ib_uverbs_destroy_srq = io.req()?;
    ctx.remove(u64::from(req.srq_handle), |o| matches!(o, Obj::Srq(_)))?;
    io.resp(w::ib_uverbs_destroy_srq_resp { events_reported: 0 }.as_bytes())
}

/// CREATE_AH (`ib_uverbs_create_ah`, `mlx5_ib_create_ah`): the handle and the destination MAC.
pub(crate) fn create_ah(ctx: &Ucontext, io: &WriteIo<'_>) -> Result<(), Errno> {
    let req: w::ib_uverbs_create_ah = io.req()?;
    let pd = pd_of(ctx, req.pd_handle)?;
    let a = req.attr;
    if a.port_num != 1 {
        return Err(Errno::EINVAL);
    }
    // RoCE: a GRH is required (`rdma_ah_find_type`), from a GID of the table.
    if a.is_global == 0 || u32::from(a.grh.sgid_index) >= device::GID_TABLE_LEN {
        return Err(Errno::EINVAL);
    }
    // The destination MAC, as `ib_resolve_eth_dmac` finds it (the model's MACs follow from
    // the addresses, so no neighbour lookup is needed).
    let dmac = device::resolve_dmac(ctx, &a.grh.dgid).ok_or(Errno::EHOSTUNREACH)?;
    let h = ctx.insert(Obj::Ah(Arc::new(crate::context::Ah { _pd: pd })));
    io.resp(w::ib_uverbs_create_ah_resp { ah_handle: h }.as_bytes())?;
    io.uhw_resp(
        m::mlx5_ib_create_ah_resp {
            // Up to the end of `dmac` (`mlx5_ib_create_ah`'s `min_resp_len`).
            response_length: 10,
            dmac,
            reserved: [0; 6],
        }
        .as_bytes(),
    )
}

/// DESTROY_AH.
pub(crate) fn destroy_ah(ctx: &Ucontext, io: &WriteIo<'_>) -> Result<(), Errno> {
    let req: w::ib_uverbs_destroy_ah = io.req()?;
    ctx.remove(u64::from(req.ah_handle), |o| matches!(o, Obj::Ah(_)))
        .map(drop)
}
