//! The harness: an Env (a device, its contexts, the host memory of their UMEMs) and the
//! helpers every section uses to run typed commands and assert checks.

use mlx5_dpa::mlx5::{Cqn, Pdn, Qpn, Rqn};
use std::cell::Cell;
use std::fmt::Debug;
use std::sync::Arc;

use mlx5_dpa::devx::{self, Devx, DevxError, DevxObj, ObjHandle, UarKind, Umem, UmemAccess};
use mlx5_dpa::mem::DmaBuf;
use mlx5_dpa::mlx5::cmd::*;
use mlx5_dpa::mlx5::layouts as l;
use mlx5_dpa::mlx5::{Layout, Opcode, View, ViewMut};
use mlx5_sim::fw::check::Check;
use mlx5_sim::profile::Profile;
use mlx5_sim::{Device, SimDevx};
use nix::errno::Errno;

/// Page-aligned, zeroed host memory for UMEMs: the driver's `DmaBuf`.
pub(crate) fn host_mem(len: usize) -> Arc<DmaBuf> {
    DmaBuf::new(len.max(1)).expect("host memory")
}

/// The first byte of `m`, for raw registrations.
pub(crate) fn base(m: &DmaBuf) -> *mut u8 {
    m.ptr(0, m.len()).expect("whole buffer").as_ptr()
}

/// A device, its contexts and the host memory their UMEMs live in. Contexts are dropped (and
/// so deregister their UMEMs) before the memory is freed.
pub(crate) struct Env {
    pub(crate) dev: Device,
    pub(crate) ctxs: Vec<Arc<SimDevx>>,
    pub(crate) mem: Vec<Arc<DmaBuf>>,
}

impl Env {
    pub(crate) fn new(profile: Profile) -> Env {
        let dev = Device::new(profile);
        let ctx = Arc::new(dev.open());
        Env {
            dev,
            ctxs: vec![ctx],
            mem: Vec::new(),
        }
    }

    pub(crate) fn bf3() -> Env {
        Env::new(Profile::bf3())
    }

    pub(crate) fn cx7() -> Env {
        Env::new(Profile::cx7())
    }

    /// The first context, as the driver sees it.
    pub(crate) fn ctx(&self) -> Arc<dyn Devx> {
        self.ctxs[0].clone()
    }

    /// Opens one more context.
    pub(crate) fn open(&mut self) -> (Arc<dyn Devx>, Arc<SimDevx>) {
        let sim = Arc::new(self.dev.open());
        self.ctxs.push(Arc::clone(&sim));
        (sim.clone(), sim)
    }

    /// Registers `len` bytes of fresh memory on `ctx` (one of this Env's contexts).
    pub(crate) fn umem(&mut self, ctx: &Arc<dyn Devx>, len: usize, access: UmemAccess) -> Umem {
        assert!(
            self.ctxs.iter().any(|c| {
                let c: Arc<dyn Devx> = c.clone();
                Arc::ptr_eq(&c, ctx)
            }),
            "UMEMs are registered only on the Env's own contexts"
        );
        let m = host_mem(len);
        let p = base(&m);
        // SAFETY: `m` is `len` bytes of this process's memory, kept in `self.mem`. The Env drops
        // every context (which deregisters its UMEMs) before it frees that memory, and leaks
        // the memory instead when a context is still referenced elsewhere (see `Drop`).
        let u = unsafe { ctx.umem_reg(p, len, access, 1 << 12) };
        self.mem.push(m);
        ok(u)
    }

    /// Drops context `i` (which must not be shared any more).
    pub(crate) fn close(&mut self, i: usize) {
        let c = self.ctxs.remove(i);
        assert_eq!(Arc::strong_count(&c), 1, "context still in use");
        drop(c);
    }
}

impl Drop for Env {
    fn drop(&mut self) {
        let ctxs = std::mem::take(&mut self.ctxs);
        let shared = ctxs.iter().any(|c| Arc::strong_count(c) > 1);
        drop(ctxs);
        if shared {
            // A context outlives the Env: its UMEMs may still be registered. Leak the memory
            // rather than free memory the model may still address.
            for m in self.mem.drain(..) {
                std::mem::forget(m);
            }
        }
    }
}

/// Bytes of the UMEM a [`Kit`] carves rings, doorbell records and ELF images from.
pub(crate) const POOL: usize = 1 << 20;

/// The resources most objects need: PD, TD, UAR, EQN and a UMEM to put rings in.
pub(crate) struct Kit {
    pub(crate) ctx: Arc<dyn Devx>,
    pub(crate) pd: DevxObj,
    pub(crate) pdn: u32,
    pub(crate) td: DevxObj,
    pub(crate) tdn: u32,
    pub(crate) uar: u32,
    pub(crate) eqn: u32,
    pub(crate) umem: Umem,
    pub(crate) next: Cell<u64>,
    /// Bytes of the device ELF at the start of the pool (processes load it).
    pub(crate) elf_len: u64,
}

impl Kit {
    pub(crate) fn new(env: &mut Env, ctx: &Arc<dyn Devx>) -> Kit {
        let (pd, pdn) = ok(devx::create(ctx, &AllocPd));
        let (td, tdn) = ok(devx::create(ctx, &AllocTransportDomain));
        let uar = ok(ctx.uar_alloc(UarKind::NonCached)).page_id;
        let eqn = ok(ctx.query_eqn(0));
        let umem = env.umem(ctx, POOL, UmemAccess::LOCAL_WRITE);
        // A valid device ELF at the start of the pool, for DPA processes.
        let elf = mlx5_sim::testing::dpa_rig::elf::minimal();
        let pool = env.mem.last().expect("the pool was just registered");
        assert!(elf.len() <= POOL);
        pool.write(0, &elf).expect("the ELF fits the pool");
        Kit {
            ctx: Arc::clone(ctx),
            pd,
            pdn: pdn.0,
            td,
            tdn,
            uar,
            eqn,
            umem,
            next: Cell::new(elf.len().next_multiple_of(4096) as u64),
            elf_len: elf.len() as u64,
        }
    }

    /// `len` bytes of the pool, aligned to `align`.
    pub(crate) fn take(&self, len: u64, align: u64) -> u64 {
        let at = self.next.get().next_multiple_of(align);
        assert!(at + len <= POOL as u64, "kit pool exhausted");
        self.next.set(at + len);
        at
    }

    pub(crate) fn ring(&self, len: u64) -> RingMem {
        let umem_offset = self.take(len, 4096);
        let dbr_offset = self.take(64, 64);
        RingMem {
            umem_id: self.umem.umem_id,
            umem_offset,
            dbr_umem_id: self.umem.umem_id,
            dbr_offset,
        }
    }

    pub(crate) fn cq_cmd(&self) -> CreateCq {
        CreateCq {
            log_cq_size: 6,
            cqe_sz: 0,
            uar_page: self.uar,
            target: CqEventTarget::Eq(self.eqn),
            mem: self.ring(64 << 6),
            cq_period: 0,
            cq_max_count: 0,
            oi: false,
            cc: false,
            cqe_comp: false,
        }
    }

    pub(crate) fn cq(&self) -> (DevxObj, u32) {
        ok(devx::create(&self.ctx, &self.cq_cmd()).map(|(o, n)| (o, n.0)))
    }

    pub(crate) fn tis(&self) -> (DevxObj, u32) {
        ok(devx::create(
            &self.ctx,
            &CreateTis {
                transport_domain: self.tdn,
                pd: Pdn(self.pdn),
            },
        ))
    }

    pub(crate) fn wq(&self, log_wq_stride: u8, log_wq_sz: u8) -> WqAttr {
        WqAttr {
            pd: Pdn(self.pdn),
            uar_page: self.uar,
            log_wq_stride,
            log_wq_sz,
            mem: self.ring(1 << (log_wq_stride + log_wq_sz)),
        }
    }

    pub(crate) fn sq_cmd(&self, cqn: u32, tisn: u32) -> CreateSq {
        CreateSq {
            cqn: Cqn(cqn),
            tisn,
            wq: self.wq(6, 6),
            flush_in_error_en: false,
        }
    }

    pub(crate) fn sq(&self, cqn: u32, tisn: u32) -> (DevxObj, u32) {
        ok(devx::create(&self.ctx, &self.sq_cmd(cqn, tisn)).map(|(o, n)| (o, n.0)))
    }

    pub(crate) fn rq_cmd(&self, cqn: u32) -> CreateRq {
        CreateRq {
            cqn: Cqn(cqn),
            wq: self.wq(4, 6),
            flush_in_error_en: false,
            counter_set_id: 0,
        }
    }

    pub(crate) fn rq(&self, cqn: u32) -> (DevxObj, u32) {
        ok(devx::create(&self.ctx, &self.rq_cmd(cqn)).map(|(o, n)| (o, n.0)))
    }

    pub(crate) fn tir(&self, rqn: u32) -> (DevxObj, u32) {
        ok(devx::create(
            &self.ctx,
            &CreateTir {
                transport_domain: self.tdn,
                inline_rqn: Rqn(rqn),
            },
        ))
    }

    pub(crate) fn qp_cmd(&self, cqn: u32) -> CreateQp {
        CreateQp {
            pd: Pdn(self.pdn),
            uar_page: self.uar,
            cqn_snd: Cqn(cqn),
            cqn_rcv: Cqn(cqn),
            log_sq_size: 4,
            log_rq_size: Some(4),
            log_rq_stride: 0,
            srqn: None,
            mem: self.ring(4096),
            user_index: 0,
        }
    }

    pub(crate) fn mkey_cmd(&self, len: u64) -> CreateMkey {
        CreateMkey {
            pd: Pdn(self.pdn),
            start_addr: 0x10_0000,
            len,
            access: MkeyAccess {
                local_read: true,
                local_write: true,
                ..MkeyAccess::default()
            },
            umem_id: self.umem.umem_id,
            umem_offset: self.take(len, 4096),
            key: 0x42,
            log_page_size: 12,
        }
    }

    pub(crate) fn process_attr(&self) -> DpaProcessAttr {
        DpaProcessAttr {
            pd: Pdn(self.pdn),
            elf_umem_id: self.umem.umem_id,
            elf_umem_offset: 0,
            elf_size: self.elf_len,
            heap_size: 0,
            sig_umem_id: 0,
            sig_umem_offset: 0,
            sig_size: 0,
        }
    }

    pub(crate) fn process(&self) -> (DevxObj, u32) {
        ok(devx::create(
            &self.ctx,
            &CreateGeneralObject(self.process_attr()),
        ))
    }

    pub(crate) fn thread_attr(&self, process: u32) -> DpaThreadAttr {
        DpaThreadAttr {
            dpa_process_id: process,
            entry_point: 0x1000,
            user_arg: 7,
            thread_local_storage_daddr: 0,
            affinity: DpaAffinity::None,
            default_outbox_id: 0,
            default_window_id: 0,
            continuable: false,
        }
    }

    pub(crate) fn thread(&self, process: u32) -> (DevxObj, u32) {
        ok(devx::create(
            &self.ctx,
            &CreateGeneralObject(self.thread_attr(process)),
        ))
    }
}

#[track_caller]
pub(crate) fn ok<T, E: Debug>(r: Result<T, E>) -> T {
    r.unwrap_or_else(|e| panic!("unexpected error: {e:?}"))
}

/// Asserts that firmware refused the command with exactly `want` (status and syndrome).
#[track_caller]
pub(crate) fn expect_check<T: Debug>(r: Result<T, DevxError>, want: Check) {
    match r {
        Err(DevxError::Command {
            source: CmdError::Firmware {
                status, syndrome, ..
            },
            ..
        }) => assert!(
            status == want.status && syndrome == want.syndrome,
            "expected {want}, got status {status}, syndrome {syndrome:#010x} ({})",
            Check::by_syndrome(syndrome).map_or("not a model check", |c| c.what)
        ),
        other => panic!("expected {want}, got {other:?}"),
    }
}

/// Asserts a system-call error (the kernel DevX layer refused before firmware).
#[track_caller]
pub(crate) fn expect_errno<T: Debug>(r: Result<T, DevxError>, want: Errno) {
    match r {
        Err(DevxError::Os { errno, .. }) if errno == want => {}
        other => panic!("expected errno {want}, got {other:?}"),
    }
}

/// Outbox length that fits every command used here.
pub(crate) const OUT: usize = 0x1100;

/// A raw call's result with a firmware refusal turned into `DevxError::Command`, like the
/// typed helpers report it.
pub(crate) fn fw_result<T>(
    op: Opcode,
    res: Result<T, DevxError>,
    outbox: &[u8],
) -> Result<T, DevxError> {
    match res {
        Err(DevxError::Os {
            errno: Errno::EREMOTEIO,
            op: name,
        }) => match check_status(op, 0, outbox) {
            Err(source) => Err(DevxError::Command {
                source,
                errno: Some(Errno::EREMOTEIO),
            }),
            Ok(()) => Err(DevxError::Os {
                op: name,
                errno: Errno::EREMOTEIO,
            }),
        },
        other => other,
    }
}

pub(crate) fn opcode_of(inbox: &[u8]) -> Opcode {
    Opcode(u16::from_be_bytes([inbox[0], inbox[1]]))
}

/// A general command with an outbox of `out_len` bytes; returns the outbox.
pub(crate) fn raw_general(
    ctx: &dyn Devx,
    inbox: &[u8],
    out_len: usize,
) -> Result<Vec<u8>, DevxError> {
    let mut out = vec![0u8; out_len];
    let r = ctx.general_cmd(inbox, &mut out);
    fw_result(opcode_of(inbox), r, &out).map(|()| out)
}

/// Creates from a raw inbox; the handle is left to the context.
pub(crate) fn raw_create(ctx: &dyn Devx, inbox: &[u8]) -> Result<ObjHandle, DevxError> {
    let mut out = vec![0u8; OUT];
    let r = ctx.obj_create(inbox, &mut out);
    fw_result(opcode_of(inbox), r, &out)
}

pub(crate) fn raw_modify(ctx: &dyn Devx, h: ObjHandle, inbox: &[u8]) -> Result<(), DevxError> {
    let mut out = vec![0u8; OUT];
    let r = ctx.obj_modify(h, inbox, &mut out);
    fw_result(opcode_of(inbox), r, &out)
}

pub(crate) fn raw_query(
    ctx: &dyn Devx,
    h: ObjHandle,
    inbox: &[u8],
    n: usize,
) -> Result<Vec<u8>, DevxError> {
    let mut out = vec![0u8; n];
    let r = ctx.obj_query(h, inbox, &mut out);
    fw_result(opcode_of(inbox), r, &out).map(|()| out)
}

pub(crate) fn raw_destroy(ctx: &dyn Devx, h: ObjHandle) -> Result<(), DevxError> {
    ctx.obj_destroy(h)
}

/// Creates through DevX with a typed command but without a destroying `DevxObj` wrapper: the
/// object lives until destroyed by handle or until its context goes.
pub(crate) fn mk<C: Command>(ctx: &dyn Devx, cmd: &C) -> Result<(ObjHandle, C::Output), DevxError> {
    let inbox = encode_inbox(cmd)?;
    let mut out = vec![0u8; outbox_len(cmd)];
    let h = fw_result(C::OPCODE, ctx.obj_create(&inbox, &mut out), &out)?;
    Ok((h, decode_outbox(cmd, &out)?))
}

/// `cmd`'s inbox after `patch` changed it.
pub(crate) fn patched<C: Command>(cmd: &C, patch: impl FnOnce(&mut ViewMut<'_, C::In>)) -> Vec<u8> {
    let mut inbox = ok(encode_inbox(cmd));
    patch(&mut ok(ViewMut::<C::In>::new(&mut inbox)));
    inbox
}

/// A zeroed inbox of `len` bytes with opcode and op_mod set.
pub(crate) fn header(op: Opcode, op_mod: u16, len: usize) -> Vec<u8> {
    let mut b = vec![0u8; len.max(8)];
    b[0..2].copy_from_slice(&op.0.to_be_bytes());
    b[6..8].copy_from_slice(&op_mod.to_be_bytes());
    b.truncate(len);
    b
}

/// Bytes of a general object context.
pub(crate) fn ctx_len<L: Layout>() -> usize {
    L::SIZE_BYTES
}

/// A CREATE_GENERAL_OBJECT inbox of `obj_type` whose context `fill` writes.
pub(crate) fn general_inbox<L: Layout>(
    obj_type: u16,
    fill: impl FnOnce(&mut ViewMut<'_, L>),
) -> Vec<u8> {
    let hdr = l::general_obj_in_cmd_hdr::Layout::SIZE_BYTES;
    let mut b = header(Opcode::CREATE_GENERAL_OBJECT, obj_type, hdr + L::SIZE_BYTES);
    fill(&mut ok(ViewMut::<L>::new(&mut b[hdr..])));
    b
}

pub(crate) fn query_state<L: Layout, T>(
    obj: &DevxObj,
    op: Opcode,
    id_field: mlx5_dpa::mlx5::Field<L, T>,
    id: u32,
    out_len: usize,
    read: impl FnOnce(&[u8]) -> u64,
) -> u64 {
    let mut inbox = header(op, 0, L::SIZE_BYTES);
    ok(ViewMut::<L>::new(&mut inbox)).set(id_field, u64::from(id));
    let out = ok(raw_query(&**obj.device(), obj.handle(), &inbox, out_len));
    read(&out)
}

pub(crate) fn sq_state(obj: &DevxObj, sqn: u32) -> u64 {
    use l::query_sq_out as o;
    query_state::<l::query_sq_in::Layout, _>(
        obj,
        Opcode::QUERY_SQ,
        l::query_sq_in::sqn,
        sqn,
        o::Layout::SIZE_BYTES,
        |out| ok(View::<o::Layout>::new(out)).get(o::sq_context.at(l::sqc::state)),
    )
}

pub(crate) fn rq_state(obj: &DevxObj, rqn: u32) -> u64 {
    use l::query_rq_out as o;
    query_state::<l::query_rq_in::Layout, _>(
        obj,
        Opcode::QUERY_RQ,
        l::query_rq_in::rqn,
        rqn,
        o::Layout::SIZE_BYTES,
        |out| ok(View::<o::Layout>::new(out)).get(o::rq_context.at(l::rqc::state)),
    )
}

pub(crate) fn qp_state(obj: &DevxObj, qpn: u32) -> u64 {
    let qpc = ok(devx::query(obj, &QueryQp(Qpn(qpn))));
    ok(View::<l::qpc::Layout>::new(&qpc)).get(l::qpc::state)
}

/// The inbox of a DPA thread modify with `select` and the given thread attributes.
pub(crate) fn modify_thread_inbox(
    id: u32,
    select: u64,
    attr: DpaThreadAttr,
    state: u64,
) -> Vec<u8> {
    let hdr = l::general_obj_in_cmd_hdr::Layout::SIZE_BYTES;
    let mut b = ok(encode_inbox(&ModifyGeneralObject {
        obj_id: id,
        obj: attr,
    }));
    let mut c = ok(ViewMut::<l::dpa_thread::Layout>::new(&mut b[hdr..]));
    c.set(l::dpa_thread::modify_field_select, select);
    c.set(l::dpa_thread::state, state);
    b
}

/// NIC_DPA_EUG_REG contents: `operation`, `eug_id` and EU members.
pub(crate) fn eug_reg(operation: u8, id: u16, members: &[u32]) -> Vec<u8> {
    let mut d = vec![0u8; l::nic_dpa_eug_reg::Layout::SIZE_BYTES];
    d[0] = operation << 4;
    d[2..4].copy_from_slice(&id.to_be_bytes());
    for &eu in members {
        let byte = 0x40 + (eu / 32) as usize * 4 + (3 - (eu % 32) as usize / 8);
        d[byte] |= 1 << (eu % 8);
    }
    d
}

pub(crate) fn eug(write: bool, data: Vec<u8>) -> AccessRegisterUser {
    AccessRegisterUser {
        register_id: l::reg_id::NIC_DPA_EUG_REG,
        argument: 0,
        write,
        data,
    }
}

pub(crate) fn cap_general(ctx: &dyn Devx) -> Vec<u8> {
    ok(devx::exec(
        ctx,
        &QueryHcaCap {
            cap_type: QueryHcaCap::GENERAL,
            current: true,
        },
    ))
}
