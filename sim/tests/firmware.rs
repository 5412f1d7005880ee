//! The firmware model command by command: success, and every validation failure class a
//! command can produce, asserted by its exact check (`status` and the model's syndrome from
//! `mlx5_sim::fw::check`). Then the state machines, the reference rules (what may be destroyed
//! when), the kernel DevX layer's rules, fault injection, capacity limits and the inventory.
//!
//! Everything goes through the driver's typed commands (`mlx5_dpa::mlx5::cmd`) and the DevX
//! trait, as driver code would; invalid mailboxes are typed mailboxes patched afterwards.

use std::cell::Cell;
use std::fmt::Debug;
use std::sync::Arc;

use mlx5_dpa::devx::{self, Devx, DevxError, DevxObj, ObjHandle, Uar, UarKind, Umem, UmemAccess};
use mlx5_dpa::mem::DmaBuf;
use mlx5_dpa::mlx5::cmd::*;
use mlx5_dpa::mlx5::layouts as l;
use mlx5_dpa::mlx5::{Layout, Opcode, Status, View, ViewMut};
use mlx5_sim::fw::check::{self, Check};
use mlx5_sim::profile::Profile;
use mlx5_sim::{Device, ObjRef, SimDevx};
use nix::errno::Errno;

use l::obj_type as ot;

// ---------------------------------------------------------------------------------------------
// Harness.

/// Page-aligned, zeroed host memory for UMEMs: the driver's `DmaBuf`.
fn host_mem(len: usize) -> Arc<DmaBuf> {
    DmaBuf::new(len.max(1)).expect("host memory")
}

/// The first byte of `m`, for raw registrations.
fn base(m: &DmaBuf) -> *mut u8 {
    m.ptr(0, m.len()).expect("whole buffer").as_ptr()
}

/// A device, its contexts and the host memory their UMEMs live in. Contexts are dropped (and
/// so deregister their UMEMs) before the memory is freed.
struct Env {
    dev: Device,
    ctxs: Vec<Arc<SimDevx>>,
    mem: Vec<Arc<DmaBuf>>,
}

impl Env {
    fn new(profile: Profile) -> Env {
        let dev = Device::new(profile);
        let ctx = Arc::new(dev.open());
        Env {
            dev,
            ctxs: vec![ctx],
            mem: Vec::new(),
        }
    }

    fn bf3() -> Env {
        Env::new(Profile::bf3())
    }

    fn cx7() -> Env {
        Env::new(Profile::cx7())
    }

    /// The first context, as the driver sees it.
    fn ctx(&self) -> Arc<dyn Devx> {
        self.ctxs[0].clone()
    }

    /// Opens one more context.
    fn open(&mut self) -> (Arc<dyn Devx>, Arc<SimDevx>) {
        let sim = Arc::new(self.dev.open());
        self.ctxs.push(Arc::clone(&sim));
        (sim.clone(), sim)
    }

    /// Registers `len` bytes of fresh memory on `ctx` (one of this Env's contexts).
    fn umem(&mut self, ctx: &Arc<dyn Devx>, len: usize, access: UmemAccess) -> Umem {
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
    fn close(&mut self, i: usize) {
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
const POOL: usize = 1 << 20;

/// The resources most objects need: PD, TD, UAR, EQN and a UMEM to put rings in.
struct Kit {
    ctx: Arc<dyn Devx>,
    pd: DevxObj,
    pdn: u32,
    td: DevxObj,
    tdn: u32,
    uar: u32,
    eqn: u32,
    umem: Umem,
    next: Cell<u64>,
    /// Bytes of the device ELF at the start of the pool (processes load it).
    elf_len: u64,
}

impl Kit {
    fn new(env: &mut Env, ctx: &Arc<dyn Devx>) -> Kit {
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
            pdn,
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
    fn take(&self, len: u64, align: u64) -> u64 {
        let at = self.next.get().next_multiple_of(align);
        assert!(at + len <= POOL as u64, "kit pool exhausted");
        self.next.set(at + len);
        at
    }

    fn ring(&self, len: u64) -> RingMem {
        let umem_offset = self.take(len, 4096);
        let dbr_offset = self.take(64, 64);
        RingMem {
            umem_id: self.umem.umem_id,
            umem_offset,
            dbr_umem_id: self.umem.umem_id,
            dbr_offset,
        }
    }

    fn cq_cmd(&self) -> CreateCq {
        CreateCq {
            log_cq_size: 6,
            cqe_sz: 0,
            uar_page: self.uar,
            target: CqEventTarget::Eq(self.eqn),
            mem: self.ring(64 << 6),
            cq_period: 0,
            cq_max_count: 0,
            oi: false,
        }
    }

    fn cq(&self) -> (DevxObj, u32) {
        ok(devx::create(&self.ctx, &self.cq_cmd()))
    }

    fn tis(&self) -> (DevxObj, u32) {
        ok(devx::create(
            &self.ctx,
            &CreateTis {
                transport_domain: self.tdn,
                pd: self.pdn,
            },
        ))
    }

    fn wq(&self, log_wq_stride: u8, log_wq_sz: u8) -> WqAttr {
        WqAttr {
            pd: self.pdn,
            uar_page: self.uar,
            log_wq_stride,
            log_wq_sz,
            mem: self.ring(1 << (log_wq_stride + log_wq_sz)),
        }
    }

    fn sq_cmd(&self, cqn: u32, tisn: u32) -> CreateSq {
        CreateSq {
            cqn,
            tisn,
            wq: self.wq(6, 6),
            flush_in_error_en: false,
        }
    }

    fn sq(&self, cqn: u32, tisn: u32) -> (DevxObj, u32) {
        ok(devx::create(&self.ctx, &self.sq_cmd(cqn, tisn)))
    }

    fn rq_cmd(&self, cqn: u32) -> CreateRq {
        CreateRq {
            cqn,
            wq: self.wq(4, 6),
            flush_in_error_en: false,
        }
    }

    fn rq(&self, cqn: u32) -> (DevxObj, u32) {
        ok(devx::create(&self.ctx, &self.rq_cmd(cqn)))
    }

    fn tir(&self, rqn: u32) -> (DevxObj, u32) {
        ok(devx::create(
            &self.ctx,
            &CreateTir {
                transport_domain: self.tdn,
                inline_rqn: rqn,
            },
        ))
    }

    fn qp_cmd(&self, cqn: u32) -> CreateQp {
        CreateQp {
            pd: self.pdn,
            uar_page: self.uar,
            cqn_snd: cqn,
            cqn_rcv: cqn,
            log_sq_size: 4,
            log_rq_size: Some(4),
            log_rq_stride: 0,
            mem: self.ring(4096),
        }
    }

    fn mkey_cmd(&self, len: u64) -> CreateMkey {
        CreateMkey {
            pd: self.pdn,
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

    fn process_attr(&self) -> DpaProcessAttr {
        DpaProcessAttr {
            pd: self.pdn,
            elf_umem_id: self.umem.umem_id,
            elf_umem_offset: 0,
            elf_size: self.elf_len,
            heap_size: 0,
        }
    }

    fn process(&self) -> (DevxObj, u32) {
        ok(devx::create(
            &self.ctx,
            &CreateGeneralObject(self.process_attr()),
        ))
    }

    fn thread_attr(&self, process: u32) -> DpaThreadAttr {
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

    fn thread(&self, process: u32) -> (DevxObj, u32) {
        ok(devx::create(
            &self.ctx,
            &CreateGeneralObject(self.thread_attr(process)),
        ))
    }
}

#[track_caller]
fn ok<T, E: Debug>(r: Result<T, E>) -> T {
    r.unwrap_or_else(|e| panic!("unexpected error: {e:?}"))
}

/// Asserts that firmware refused the command with exactly `want` (status and syndrome).
#[track_caller]
fn expect_check<T: Debug>(r: Result<T, DevxError>, want: Check) {
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
fn expect_errno<T: Debug>(r: Result<T, DevxError>, want: Errno) {
    match r {
        Err(DevxError::Os { errno, .. }) if errno == want => {}
        other => panic!("expected errno {want}, got {other:?}"),
    }
}

/// Outbox length that fits every command used here.
const OUT: usize = 0x1100;

/// A raw call's result with a firmware refusal turned into `DevxError::Command`, like the
/// typed helpers report it.
fn fw_result<T>(op: Opcode, res: Result<T, DevxError>, outbox: &[u8]) -> Result<T, DevxError> {
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

fn opcode_of(inbox: &[u8]) -> Opcode {
    Opcode(u16::from_be_bytes([inbox[0], inbox[1]]))
}

/// A general command with an outbox of `out_len` bytes; returns the outbox.
fn raw_general(ctx: &dyn Devx, inbox: &[u8], out_len: usize) -> Result<Vec<u8>, DevxError> {
    let mut out = vec![0u8; out_len];
    let r = ctx.general_cmd(inbox, &mut out);
    fw_result(opcode_of(inbox), r, &out).map(|()| out)
}

/// Creates from a raw inbox; the handle is left to the context.
fn raw_create(ctx: &dyn Devx, inbox: &[u8]) -> Result<ObjHandle, DevxError> {
    let mut out = vec![0u8; OUT];
    let r = ctx.obj_create(inbox, &mut out);
    fw_result(opcode_of(inbox), r, &out)
}

fn raw_modify(ctx: &dyn Devx, h: ObjHandle, inbox: &[u8]) -> Result<(), DevxError> {
    let mut out = vec![0u8; OUT];
    let r = ctx.obj_modify(h, inbox, &mut out);
    fw_result(opcode_of(inbox), r, &out)
}

fn raw_query(ctx: &dyn Devx, h: ObjHandle, inbox: &[u8], n: usize) -> Result<Vec<u8>, DevxError> {
    let mut out = vec![0u8; n];
    let r = ctx.obj_query(h, inbox, &mut out);
    fw_result(opcode_of(inbox), r, &out).map(|()| out)
}

fn raw_destroy(ctx: &dyn Devx, h: ObjHandle) -> Result<(), DevxError> {
    ctx.obj_destroy(h)
}

/// Creates through DevX with a typed command but without a destroying `DevxObj` wrapper: the
/// object lives until destroyed by handle or until its context goes.
fn mk<C: Command>(ctx: &dyn Devx, cmd: &C) -> Result<(ObjHandle, C::Output), DevxError> {
    let inbox = encode_inbox(cmd)?;
    let mut out = vec![0u8; outbox_len(cmd)];
    let h = fw_result(C::OPCODE, ctx.obj_create(&inbox, &mut out), &out)?;
    Ok((h, decode_outbox(cmd, &out)?))
}

/// `cmd`'s inbox after `patch` changed it.
fn patched<C: Command>(cmd: &C, patch: impl FnOnce(&mut ViewMut<'_, C::In>)) -> Vec<u8> {
    let mut inbox = ok(encode_inbox(cmd));
    patch(&mut ok(ViewMut::<C::In>::new(&mut inbox)));
    inbox
}

/// A zeroed inbox of `len` bytes with opcode and op_mod set.
fn header(op: Opcode, op_mod: u16, len: usize) -> Vec<u8> {
    let mut b = vec![0u8; len.max(8)];
    b[0..2].copy_from_slice(&op.0.to_be_bytes());
    b[6..8].copy_from_slice(&op_mod.to_be_bytes());
    b.truncate(len);
    b
}

/// Bytes of a general object context.
fn ctx_len<L: Layout>() -> usize {
    L::SIZE_BYTES
}

/// A CREATE_GENERAL_OBJECT inbox of `obj_type` whose context `fill` writes.
fn general_inbox<L: Layout>(obj_type: u16, fill: impl FnOnce(&mut ViewMut<'_, L>)) -> Vec<u8> {
    let hdr = l::general_obj_in_cmd_hdr::Layout::SIZE_BYTES;
    let mut b = header(Opcode::CREATE_GENERAL_OBJECT, obj_type, hdr + L::SIZE_BYTES);
    fill(&mut ok(ViewMut::<L>::new(&mut b[hdr..])));
    b
}

fn query_state<L: Layout>(
    obj: &DevxObj,
    op: Opcode,
    id_field: mlx5_dpa::mlx5::Field<L>,
    id: u32,
    out_len: usize,
    read: impl FnOnce(&[u8]) -> u64,
) -> u64 {
    let mut inbox = header(op, 0, L::SIZE_BYTES);
    ok(ViewMut::<L>::new(&mut inbox)).set(id_field, u64::from(id));
    let out = ok(raw_query(&**obj.device(), obj.handle(), &inbox, out_len));
    read(&out)
}

fn sq_state(obj: &DevxObj, sqn: u32) -> u64 {
    use l::query_sq_out as o;
    query_state::<l::query_sq_in::Layout>(
        obj,
        Opcode::QUERY_SQ,
        l::query_sq_in::sqn,
        sqn,
        o::Layout::SIZE_BYTES,
        |out| ok(View::<o::Layout>::new(out)).get(o::sq_context.at(l::sqc::state)),
    )
}

fn rq_state(obj: &DevxObj, rqn: u32) -> u64 {
    use l::query_rq_out as o;
    query_state::<l::query_rq_in::Layout>(
        obj,
        Opcode::QUERY_RQ,
        l::query_rq_in::rqn,
        rqn,
        o::Layout::SIZE_BYTES,
        |out| ok(View::<o::Layout>::new(out)).get(o::rq_context.at(l::rqc::state)),
    )
}

fn qp_state(obj: &DevxObj, qpn: u32) -> u64 {
    let qpc = ok(devx::query(obj, &QueryQp(qpn)));
    ok(View::<l::qpc::Layout>::new(&qpc)).get(l::qpc::state)
}

/// The inbox of a DPA thread modify with `select` and the given thread attributes.
fn modify_thread_inbox(id: u32, select: u64, attr: DpaThreadAttr, state: u64) -> Vec<u8> {
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
fn eug_reg(operation: u8, id: u16, members: &[u32]) -> Vec<u8> {
    let mut d = vec![0u8; l::nic_dpa_eug_reg::Layout::SIZE_BYTES];
    d[0] = operation << 4;
    d[2..4].copy_from_slice(&id.to_be_bytes());
    for &eu in members {
        let byte = 0x40 + (eu / 32) as usize * 4 + (3 - (eu % 32) as usize / 8);
        d[byte] |= 1 << (eu % 8);
    }
    d
}

fn eug(write: bool, data: Vec<u8>) -> AccessRegisterUser {
    AccessRegisterUser {
        register_id: l::reg_id::NIC_DPA_EUG_REG,
        argument: 0,
        write,
        data,
    }
}

fn cap_general(ctx: &dyn Devx) -> Vec<u8> {
    ok(devx::exec(
        ctx,
        &QueryHcaCap {
            cap_type: QueryHcaCap::GENERAL,
            current: true,
        },
    ))
}

// ---------------------------------------------------------------------------------------------
// Device queries and mailbox-level checks.

#[test]
fn query_hca_cap_bf3_reports_general_dpa_and_apu() {
    let env = Env::bf3();
    let ctx = env.ctx();
    use l::cmd_hca_cap as c;
    for current in [true, false] {
        let page = ok(devx::exec(
            &*ctx,
            &QueryHcaCap {
                cap_type: QueryHcaCap::GENERAL,
                current,
            },
        ));
        assert_eq!(page.len(), 4096);
        let v = ok(View::<c::Layout>::new(&page));
        assert_eq!(v.get(c::apu), 1);
        assert_eq!(v.get(c::log_max_cq), 18);
        assert_eq!(v.get(c::log_max_cq_sz), 22);
        assert_eq!(v.get(c::nic_flow_table), 1);
        let types = v.get(c::general_obj_types);
        for t in [
            ot::DPA_MEM,
            ot::DPA_PROCESS,
            ot::DPA_THREAD,
            ot::DPA_OUTBOX,
            ot::DB_CQ_MAPPING,
            ot::DPA_EQ,
            ot::DPA_WINDOW,
        ] {
            assert_eq!(types >> t & 1, 1, "obj type {t:#x}");
        }
        assert_eq!(types >> ot::RESERVED_QPN & 1, 0);
    }
    let g2 = ok(devx::exec(
        &*ctx,
        &QueryHcaCap {
            cap_type: QueryHcaCap::GENERAL_2,
            current: true,
        },
    ));
    let v2 = ok(View::<l::cmd_hca_cap_2::Layout>::new(&g2));
    assert_eq!(
        v2.get(l::cmd_hca_cap_2::general_obj_types_127_64) >> (ot::DPA_UAR - 64) & 1,
        1
    );
    let dpa = ok(devx::exec(
        &*ctx,
        &QueryHcaCap {
            cap_type: QueryHcaCap::DPA,
            current: true,
        },
    ));
    let d = ok(View::<l::dpa_cap::Layout>::new(&dpa));
    assert_eq!(d.get(l::dpa_cap::log_max_dpa_threads_per_process), 8);
    assert_eq!(d.get(l::dpa_cap::dpa_mem_block_size), 1 << 20);
    assert_eq!(d.get(l::dpa_cap::log_max_num_dpa_mem_blocks), 8);
    assert_eq!(d.get(l::dpa_cap::thread_affinity_single_hart), 1);
    assert!(ok(devx::query_caps(&*ctx)).has_dpa());

    // A capability type the device lacks.
    expect_check(
        devx::exec(
            &*ctx,
            &QueryHcaCap {
                cap_type: 0x7,
                current: true,
            },
        ),
        check::UNKNOWN_CAP_TYPE,
    );
    // Another function's capabilities are not the model's to give.
    let q = QueryHcaCap {
        cap_type: 0,
        current: true,
    };
    let inbox = patched(&q, |v| v.set(l::query_hca_cap_in::other_function, 1));
    expect_check(
        raw_general(&*ctx, &inbox, outbox_len(&q)),
        check::NOT_SUPPORTED,
    );

    // The page is the running profile: a changed capability shows.
    env.dev
        .with_profile_mut(|p| p.set_general(c::log_max_cq, 5));
    let page = cap_general(&*ctx);
    assert_eq!(ok(View::<c::Layout>::new(&page)).get(c::log_max_cq), 5);
}

#[test]
fn query_hca_cap_cx7_has_no_dpa_page() {
    let env = Env::cx7();
    let ctx = env.ctx();
    let page = cap_general(&*ctx);
    let v = ok(View::<l::cmd_hca_cap::Layout>::new(&page));
    assert_eq!(v.get(l::cmd_hca_cap::apu), 0);
    assert_eq!(v.get(l::cmd_hca_cap::general_obj_types), 0);
    expect_check(
        devx::exec(
            &*ctx,
            &QueryHcaCap {
                cap_type: QueryHcaCap::DPA,
                current: true,
            },
        ),
        check::UNKNOWN_CAP_TYPE,
    );
    assert_eq!(check::UNKNOWN_CAP_TYPE.status, Status::BAD_PARAM);
    assert!(!ok(devx::query_caps(&*ctx)).has_dpa());
}

#[test]
fn nop_issi_and_unknown_opcodes() {
    let env = Env::bf3();
    let ctx = env.ctx();
    ok(devx::exec(&*ctx, &Nop));
    expect_check(
        raw_general(&*ctx, &header(Opcode::NOP, 1, 16), 16),
        check::BAD_OP_MOD,
    );
    // Unknown opcodes in the general range reach firmware, which answers BAD_OP.
    for op in [0xb00, 0xbff, 0xcff, Opcode::CREATE_DPA_PARTITION.0] {
        expect_check(
            raw_general(&*ctx, &header(Opcode(op), 0, 64), 64),
            check::UNKNOWN_OPCODE,
        );
    }
    assert_eq!(check::UNKNOWN_OPCODE.status, Status::BAD_OP);
    // Known to DevX, not implemented by the model: BAD_OP as well (modify/query on a handle).
    let mut kit_env = Env::bf3();
    let kctx = kit_env.ctx();
    let kit = Kit::new(&mut kit_env, &kctx);
    let (cq, cqn) = kit.cq();
    let (rq, rqn) = kit.rq(cqn);
    let (tir, tirn) = kit.tir(rqn);
    let mut q = header(Opcode::QUERY_TIR, 0, 16);
    q[8..12].copy_from_slice(&tirn.to_be_bytes());
    expect_check(
        raw_query(&*kctx, tir.handle(), &q, 0x100),
        check::UNKNOWN_OPCODE,
    );
    drop((tir, rq, cq));

    // QUERY_ISSI: the model speaks ISSI 1.
    let out = ok(raw_general(&*ctx, &header(Opcode::QUERY_ISSI, 0, 16), 0x70));
    assert_eq!(u16::from_be_bytes([out[10], out[11]]), 1);
    expect_check(
        raw_general(&*ctx, &header(Opcode::QUERY_ISSI, 0, 16), 16),
        check::OUTBOX_TOO_SHORT,
    );
}

#[test]
fn short_mailboxes() {
    let env = Env::bf3();
    let ctx = env.ctx();
    // Inbox shorter than the command's layout: BAD_INP_LEN.
    expect_check(
        raw_general(&*ctx, &header(Opcode::ALLOW_OTHER_VHCA_ACCESS, 0, 16), 16),
        check::INBOX_TOO_SHORT,
    );
    assert_eq!(check::INBOX_TOO_SHORT.status, Status::BAD_INP_LEN);
    expect_check(
        raw_create(&*ctx, &header(Opcode::CREATE_CQ, 0, 16)),
        check::INBOX_TOO_SHORT,
    );
    // A general object header without its context.
    expect_check(
        raw_create(
            &*ctx,
            &header(Opcode::CREATE_GENERAL_OBJECT, ot::DPA_PROCESS, 16),
        ),
        check::INBOX_TOO_SHORT,
    );
    // Outbox shorter than the command's layout: BAD_OUTP_LEN.
    let q = encode_inbox(&QueryHcaCap {
        cap_type: 0,
        current: true,
    });
    expect_check(raw_general(&*ctx, &ok(q), 16), check::OUTBOX_TOO_SHORT);
    assert_eq!(check::OUTBOX_TOO_SHORT.status, Status::BAD_OUTP_LEN);

    // Shorter than the 16-byte header: the kernel refuses without asking firmware.
    let before = env.dev.stats().fw.commands;
    expect_errno(
        raw_general(&*ctx, &header(Opcode::NOP, 0, 15), 16),
        Errno::EINVAL,
    );
    expect_errno(
        raw_general(&*ctx, &header(Opcode::NOP, 0, 16), 8),
        Errno::EINVAL,
    );
    expect_errno(
        raw_create(&*ctx, &header(Opcode::ALLOC_PD, 0, 8)),
        Errno::EINVAL,
    );
    assert_eq!(env.dev.stats().fw.commands, before);
}

// ---------------------------------------------------------------------------------------------
// Objects, command by command.

#[test]
fn pd_and_transport_domain() {
    let mut env = Env::bf3();
    let ctx = env.ctx();
    let (pd, pdn) = ok(devx::create(&ctx, &AllocPd));
    let (td, tdn) = ok(devx::create(&ctx, &AllocTransportDomain));
    assert!(pdn >= 1 && tdn >= 1);
    let inv = env.dev.inventory();
    assert_eq!((inv.count("PD"), inv.count("TD")), (1, 1));
    let (pd2, pdn2) = ok(devx::create(&ctx, &AllocPd));
    assert_ne!(pdn, pdn2);
    ok(pd2.destroy());
    ok(pd.destroy());
    ok(td.destroy());
    assert!(env.dev.inventory().is_empty());

    // Referenced PD and TD cannot be destroyed.
    let kit = Kit::new(&mut env, &ctx);
    let (mkey, _) = ok(devx::create(&ctx, &kit.mkey_cmd(4096)));
    let (tis, _) = kit.tis();
    expect_check(raw_destroy(&*ctx, kit.pd.handle()), check::OBJECT_IN_USE);
    expect_check(raw_destroy(&*ctx, kit.td.handle()), check::OBJECT_IN_USE);
    assert_eq!(check::OBJECT_IN_USE.status, Status::RES_BUSY);
    ok(mkey.destroy());
    ok(tis.destroy());
    ok(raw_destroy(&*ctx, kit.pd.handle()));
    ok(raw_destroy(&*ctx, kit.td.handle()));
    // The handles are gone with the objects.
    expect_errno(raw_destroy(&*ctx, kit.pd.handle()), Errno::EINVAL);
}

#[test]
fn mkey() {
    let mut env = Env::bf3();
    let ctx = env.ctx();
    let kit = Kit::new(&mut env, &ctx);
    let cmd = kit.mkey_cmd(8192);
    let (m, key) = ok(devx::create(&ctx, &cmd));
    assert_eq!(key & 0xff, 0x42);
    assert!(key >> 8 >= 0x10);
    assert_eq!(env.dev.inventory().count("MKEY"), 1);

    // Access mode other than MTT.
    let inbox = patched(&kit.mkey_cmd(4096), |v| {
        v.set(
            l::create_mkey_in::memory_key_mkey_entry.at(l::mkc::access_mode_1_0),
            2,
        )
    });
    expect_check(raw_create(&*ctx, &inbox), check::BAD_ACCESS_MODE);
    // UMEM missing.
    expect_check(
        devx::create(
            &ctx,
            &CreateMkey {
                umem_id: 0xdead,
                ..kit.mkey_cmd(4096)
            },
        ),
        check::NO_SUCH_UMEM,
    );
    // Range outside the UMEM.
    expect_check(
        devx::create(
            &ctx,
            &CreateMkey {
                umem_offset: POOL as u64 - 4096,
                ..kit.mkey_cmd(8192)
            },
        ),
        check::BAD_UMEM_RANGE,
    );
    // Zero length.
    expect_check(
        devx::create(
            &ctx,
            &CreateMkey {
                len: 0,
                ..kit.mkey_cmd(4096)
            },
        ),
        check::BAD_LENGTH,
    );
    // PD missing.
    expect_check(
        devx::create(
            &ctx,
            &CreateMkey {
                pd: 0xfff0,
                ..kit.mkey_cmd(4096)
            },
        ),
        check::NO_SUCH_PD,
    );
    // Rights the UMEM was not registered with.
    let ro = env.umem(&ctx, 8192, UmemAccess::empty());
    let on_ro = CreateMkey {
        umem_id: ro.umem_id,
        umem_offset: 0,
        ..kit.mkey_cmd(4096)
    };
    expect_check(devx::create(&ctx, &on_ro), check::ACCESS_NOT_GRANTED);
    expect_check(
        devx::create(
            &ctx,
            &CreateMkey {
                access: MkeyAccess {
                    local_write: true,
                    remote_write: true,
                    ..MkeyAccess::default()
                },
                ..kit.mkey_cmd(4096)
            },
        ),
        check::ACCESS_NOT_GRANTED,
    );
    // Local read needs nothing from the registration.
    let read_only = CreateMkey {
        access: MkeyAccess {
            local_read: true,
            ..MkeyAccess::default()
        },
        ..on_ro
    };
    let (m2, _) = ok(devx::create(&ctx, &read_only));
    expect_errno(ctx.umem_dereg(ro.handle), Errno::EBUSY);
    ok(m2.destroy());
    ok(ctx.umem_dereg(ro.handle));
    ok(m.destroy());
}

#[test]
fn cq() {
    let mut env = Env::bf3();
    let ctx = env.ctx();
    let kit = Kit::new(&mut env, &ctx);
    let (cq, cqn) = kit.cq();
    assert!(cqn >= 0x400);
    let cqc = ok(devx::query(&cq, &QueryCq(cqn)));
    let v = ok(View::<l::cqc::Layout>::new(&cqc));
    assert_eq!(v.get(l::cqc::log_cq_size), 6);
    assert_eq!(v.get(l::cqc::c_eqn_or_apu_element), u64::from(kit.eqn));
    assert_eq!(v.get(l::cqc::uar_page), u64::from(kit.uar));

    let c = l::create_cq_in::cq_context;
    // cqe_sz 2 (neither 64 nor 128 bytes); the typed command cannot even say it.
    let inbox = patched(&kit.cq_cmd(), |v| v.set(c.at(l::cqc::cqe_sz), 2));
    expect_check(raw_create(&*ctx, &inbox), check::BAD_CQE_SIZE);
    // Log size above log_max_cq_sz (22).
    expect_check(
        devx::create(
            &ctx,
            &CreateCq {
                log_cq_size: 23,
                ..kit.cq_cmd()
            },
        ),
        check::BAD_LOG_SIZE,
    );
    // UAR page that was never allocated.
    expect_check(
        devx::create(
            &ctx,
            &CreateCq {
                uar_page: 0x7777,
                ..kit.cq_cmd()
            },
        ),
        check::NO_SUCH_UAR,
    );
    // EQ numbers: below the first, and past the last completion vector.
    expect_errno(ctx.query_eqn(4), Errno::EINVAL);
    for eqn in [0, kit.eqn + 4] {
        expect_check(
            devx::create(
                &ctx,
                &CreateCq {
                    target: CqEventTarget::Eq(eqn),
                    ..kit.cq_cmd()
                },
            ),
            check::NO_SUCH_EQ,
        );
    }
    // Ring and doorbell record alignment and range.
    let base = kit.cq_cmd();
    let mut mis = base;
    mis.mem.umem_offset += 32;
    expect_check(devx::create(&ctx, &mis), check::BAD_ALIGNMENT);
    let mut mis = base;
    mis.mem.dbr_offset += 4;
    expect_check(devx::create(&ctx, &mis), check::BAD_ALIGNMENT);
    let mut far = base;
    far.mem.umem_offset = POOL as u64 - 64;
    expect_check(devx::create(&ctx, &far), check::BAD_UMEM_RANGE);
    // Features the profile lacks, and op_mod.
    let inbox = patched(&kit.cq_cmd(), |v| v.set(c.at(l::cqc::cc), 1));
    expect_check(raw_create(&*ctx, &inbox), check::NOT_SUPPORTED);
    let inbox = patched(&kit.cq_cmd(), |v| v.set(l::create_cq_in::op_mod, 1));
    expect_check(raw_create(&*ctx, &inbox), check::BAD_OP_MOD);

    // Moderation.
    ok(devx::modify(
        &cq,
        &ModifyCqModeration {
            cqn,
            cq_period: 16,
            cq_max_count: 8,
        },
    ));
    let cqc = ok(devx::query(&cq, &QueryCq(cqn)));
    let v = ok(View::<l::cqc::Layout>::new(&cqc));
    assert_eq!(
        (v.get(l::cqc::cq_period), v.get(l::cqc::cq_max_count)),
        (16, 8)
    );
    let m = ModifyCqModeration {
        cqn,
        cq_period: 1,
        cq_max_count: 1,
    };
    let resize = patched(&m, |v| v.set(l::modify_cq_in::op_mod, 1));
    expect_check(
        raw_modify(&*ctx, cq.handle(), &resize),
        check::NOT_SUPPORTED,
    );
    let select = patched(&m, |v| v.set(l::modify_cq_in::modify_field_select, 4));
    expect_check(
        raw_modify(&*ctx, cq.handle(), &select),
        check::BAD_MODIFY_SELECT,
    );
    assert_eq!(env.dev.inventory().count("CQ"), 1);
}

#[test]
fn cq_bound_to_dpa_objects() {
    let mut env = Env::bf3();
    let ctx = env.ctx();
    let kit = Kit::new(&mut env, &ctx);
    let (process, pid) = kit.process();
    let (thread, tid) = kit.thread(pid);
    let on = |target| CreateCq {
        target,
        ..kit.cq_cmd()
    };
    let (cq, _) = ok(devx::create(&ctx, &on(CqEventTarget::DpaThread(tid))));
    // The thread is referenced by the CQ.
    expect_check(raw_destroy(&*ctx, thread.handle()), check::OBJECT_IN_USE);
    // DPA-bound CQs take 64-byte CQEs only.
    expect_check(
        devx::create(
            &ctx,
            &CreateCq {
                cqe_sz: 1,
                ..on(CqEventTarget::DpaThread(tid))
            },
        ),
        check::CQE_SIZE_UNSUPPORTED,
    );
    // Bound to an object that is not a thread.
    expect_check(
        devx::create(&ctx, &on(CqEventTarget::DpaThread(pid))),
        check::WRONG_OBJ_TYPE,
    );
    expect_check(
        devx::create(&ctx, &on(CqEventTarget::DpaEq(tid))),
        check::WRONG_OBJ_TYPE,
    );
    expect_check(
        devx::create(&ctx, &on(CqEventTarget::DpaThread(0x7fff))),
        check::NO_SUCH_DPA_THREAD,
    );
    expect_check(
        devx::create(&ctx, &on(CqEventTarget::DpaEq(0x7fff))),
        check::NO_SUCH_DPA_EQ,
    );
    let c = l::create_cq_in::cq_context;
    let inbox = patched(&on(CqEventTarget::DpaThread(tid)), |v| {
        v.set(c.at(l::cqc::apu_element_type), 3)
    });
    expect_check(raw_create(&*ctx, &inbox), check::BAD_CQ_TARGET);
    let inbox = patched(&kit.cq_cmd(), |v| v.set(c.at(l::cqc::apu_element_type), 1));
    expect_check(raw_create(&*ctx, &inbox), check::BAD_CQ_TARGET);
    ok(cq.destroy());
    ok(thread.destroy());
    ok(process.destroy());

    // Without a DPA, apu CQs are not supported at all.
    let mut cx7 = Env::cx7();
    let ctx7 = cx7.ctx();
    let kit7 = Kit::new(&mut cx7, &ctx7);
    expect_check(
        devx::create(
            &ctx7,
            &CreateCq {
                target: CqEventTarget::DpaThread(1),
                ..kit7.cq_cmd()
            },
        ),
        check::NOT_SUPPORTED,
    );
}

#[test]
fn sq_create_checks() {
    let mut env = Env::bf3();
    let ctx = env.ctx();
    let kit = Kit::new(&mut env, &ctx);
    let (_cq, cqn) = kit.cq();
    let (_tis, tisn) = kit.tis();
    let (sq, sqn) = kit.sq(cqn, tisn);
    assert_eq!(sq_state(&sq, sqn), 0);

    expect_check(
        devx::create(&ctx, &kit.sq_cmd(0x3ff, tisn)),
        check::NO_SUCH_CQ,
    );
    expect_check(
        devx::create(&ctx, &kit.sq_cmd(cqn, 0xfff0)),
        check::NO_SUCH_TIS,
    );
    for stride in [5, 7] {
        let mut c = kit.sq_cmd(cqn, tisn);
        c.wq.log_wq_stride = stride;
        expect_check(devx::create(&ctx, &c), check::BAD_STRIDE);
    }
    let mut c = kit.sq_cmd(cqn, tisn);
    c.wq.log_wq_sz = 18;
    expect_check(devx::create(&ctx, &c), check::BAD_LOG_SIZE);
    let mut c = kit.sq_cmd(cqn, tisn);
    c.wq.pd = 0xfff0;
    expect_check(devx::create(&ctx, &c), check::NO_SUCH_PD);
    let mut c = kit.sq_cmd(cqn, tisn);
    c.wq.uar_page = 0x7777;
    expect_check(devx::create(&ctx, &c), check::NO_SUCH_UAR);
    let mut c = kit.sq_cmd(cqn, tisn);
    c.wq.mem.umem_offset = POOL as u64 - 64;
    expect_check(devx::create(&ctx, &c), check::BAD_UMEM_RANGE);

    let s = l::create_sq_in::ctx;
    let w = s.nested(l::sqc::wq);
    // Created in RDY instead of RST.
    let inbox = patched(&kit.sq_cmd(cqn, tisn), |v| v.set(s.at(l::sqc::state), 1));
    expect_check(raw_create(&*ctx, &inbox), check::BAD_STATE_FIELD);
    // Two TISes where the device takes one: a capability limit.
    let inbox = patched(&kit.sq_cmd(cqn, tisn), |v| {
        v.set(s.at(l::sqc::tis_lst_sz), 2)
    });
    expect_check(raw_create(&*ctx, &inbox), check::ABOVE_CAP);
    assert_eq!(check::ABOVE_CAP.status, Status::LIM_ERR);
    let inbox = patched(&kit.sq_cmd(cqn, tisn), |v| v.set(w.at(l::wq::wq_type), 0));
    expect_check(raw_create(&*ctx, &inbox), check::BAD_WQ_TYPE);
    let inbox = patched(&kit.sq_cmd(cqn, tisn), |v| v.set(s.at(l::sqc::hairpin), 1));
    expect_check(raw_create(&*ctx, &inbox), check::NOT_SUPPORTED);
    assert_eq!(env.dev.inventory().count("SQ"), 1);
}

#[test]
fn sq_state_machine() {
    use WqState::*;
    let mut env = Env::bf3();
    let ctx = env.ctx();
    let kit = Kit::new(&mut env, &ctx);
    let (_cq, cqn) = kit.cq();
    let (_tis, tisn) = kit.tis();
    let (sq, sqn) = kit.sq(cqn, tisn);
    let m = |from, to| devx::modify(&sq, &ModifySq { sqn, from, to });

    // RST -> ERR, RST -> RST are not transitions.
    expect_check(m(Rst, Err), check::BAD_SQ_TRANSITION);
    assert_eq!(check::BAD_SQ_TRANSITION.status, Status::BAD_RES_STATE);
    expect_check(m(Rst, Rst), check::BAD_SQ_TRANSITION);
    // The current state named must be the queue's.
    expect_check(m(Rdy, Err), check::CURRENT_STATE_MISMATCH);
    ok(m(Rst, Rdy));
    assert_eq!(sq_state(&sq, sqn), 1);
    ok(m(Rdy, Rdy));
    ok(m(Rdy, Err));
    assert_eq!(sq_state(&sq, sqn), 3);
    expect_check(m(Err, Rdy), check::BAD_SQ_TRANSITION);
    expect_check(m(Rst, Rdy), check::CURRENT_STATE_MISMATCH);
    ok(m(Err, Rst));
    assert_eq!(sq_state(&sq, sqn), 0);
    ok(m(Rst, Rdy));
    ok(m(Rdy, Rst));
    // A next state that is no state at all.
    let inbox = patched(
        &ModifySq {
            sqn,
            from: Rst,
            to: Rdy,
        },
        |v| v.set(l::modify_sq_in::sq_context.at(l::sqc::state), 2),
    );
    expect_check(
        raw_modify(&*ctx, sq.handle(), &inbox),
        check::BAD_STATE_FIELD,
    );
    assert_eq!(sq_state(&sq, sqn), 0);
}

#[test]
fn rq_create_checks_and_state_machine() {
    use WqState::*;
    let mut env = Env::bf3();
    let ctx = env.ctx();
    let kit = Kit::new(&mut env, &ctx);
    let (_cq, cqn) = kit.cq();
    let (rq, rqn) = kit.rq(cqn);
    assert_eq!(rq_state(&rq, rqn), 0);

    expect_check(devx::create(&ctx, &kit.rq_cmd(0x3ff)), check::NO_SUCH_CQ);
    // Stride below log_min_stride_sz_rq (4) and above log_max_stride_sz_rq (13).
    for stride in [3, 14] {
        let mut c = kit.rq_cmd(cqn);
        c.wq.log_wq_stride = stride;
        c.wq.log_wq_sz = 1;
        expect_check(devx::create(&ctx, &c), check::BAD_STRIDE);
    }
    let r = l::create_rq_in::ctx;
    let inbox = patched(&kit.rq_cmd(cqn), |v| v.set(r.at(l::rqc::state), 1));
    expect_check(raw_create(&*ctx, &inbox), check::BAD_STATE_FIELD);
    let inbox = patched(&kit.rq_cmd(cqn), |v| v.set(r.at(l::rqc::mem_rq_type), 1));
    expect_check(raw_create(&*ctx, &inbox), check::NOT_SUPPORTED);

    let m = |from, to| devx::modify(&rq, &ModifyRq { rqn, from, to });
    expect_check(m(Rst, Err), check::BAD_RQ_TRANSITION);
    assert_eq!(check::BAD_RQ_TRANSITION.status, Status::BAD_RES_STATE);
    expect_check(m(Err, Rst), check::CURRENT_STATE_MISMATCH);
    ok(m(Rst, Rdy));
    assert_eq!(rq_state(&rq, rqn), 1);
    ok(m(Rdy, Err));
    expect_check(m(Err, Rdy), check::BAD_RQ_TRANSITION);
    ok(m(Err, Rst));
    assert_eq!(rq_state(&rq, rqn), 0);
    // Modifying another RQ through this handle is refused by DevX.
    let (_rq2, rqn2) = kit.rq(cqn);
    expect_errno(
        devx::modify(
            &rq,
            &ModifyRq {
                rqn: rqn2,
                from: Rst,
                to: Rdy,
            },
        ),
        Errno::EINVAL,
    );

    // RMP: created ready (or reset), over the same wq checks.
    let (rmp, _) = ok(devx::create(&ctx, &CreateRmp { wq: kit.wq(4, 6) }));
    let inbox = patched(&CreateRmp { wq: kit.wq(4, 6) }, |v| {
        v.set(l::create_rmp_in::ctx.at(l::rmpc::state), 3)
    });
    expect_check(raw_create(&*ctx, &inbox), check::BAD_STATE_FIELD);
    expect_check(
        devx::create(
            &ctx,
            &CreateRmp {
                wq: WqAttr {
                    log_wq_stride: 2,
                    ..kit.wq(4, 6)
                },
            },
        ),
        check::BAD_STRIDE,
    );
    assert_eq!(env.dev.inventory().count("RMP"), 1);
    ok(rmp.destroy());
}

#[test]
fn qp_create_and_state_machine() {
    let mut env = Env::bf3();
    let ctx = env.ctx();
    let kit = Kit::new(&mut env, &ctx);
    let (cq, cqn) = kit.cq();
    let (qp, qpn) = ok(devx::create(&ctx, &kit.qp_cmd(cqn)));
    assert!(qpn >= 0x4000);
    assert_eq!(qp_state(&qp, qpn), 0);

    let attr = QpAttr {
        mtu: 3,
        fl: true,
        vhca_port_num: 1,
        ..QpAttr::default()
    };
    let go = |t: &dyn Fn() -> Result<(), DevxError>| t();
    let rst2init = || {
        devx::modify(
            &qp,
            &ModifyQp {
                qpn,
                attr,
                transition: Rst2Init,
            },
        )
    };
    let init2rtr = |a: QpAttr| {
        devx::modify(
            &qp,
            &ModifyQp {
                qpn,
                attr: a,
                transition: Init2Rtr,
            },
        )
    };
    let rtr2rts = || {
        devx::modify(
            &qp,
            &ModifyQp {
                qpn,
                attr,
                transition: Rtr2Rts,
            },
        )
    };
    let rts2rts = || {
        devx::modify(
            &qp,
            &ModifyQp {
                qpn,
                attr,
                transition: Rts2Rts,
            },
        )
    };
    let to_err = || {
        devx::modify(
            &qp,
            &ModifyQp {
                qpn,
                attr,
                transition: Qp2Err,
            },
        )
    };
    let to_rst = || {
        devx::modify(
            &qp,
            &ModifyQp {
                qpn,
                attr,
                transition: Qp2Rst,
            },
        )
    };

    // INIT2RTR from RST.
    expect_check(init2rtr(attr), check::BAD_QP_TRANSITION);
    assert_eq!(check::BAD_QP_TRANSITION.status, Status::BAD_QP_STATE);
    ok(go(&rst2init));
    assert_eq!(qp_state(&qp, qpn), 1);
    expect_check(go(&rst2init), check::BAD_QP_TRANSITION);
    // Path MTU outside 256..4096 bytes.
    for mtu in [0, 6] {
        expect_check(init2rtr(QpAttr { mtu, ..attr }), check::BAD_MTU);
    }
    ok(init2rtr(attr));
    assert_eq!(qp_state(&qp, qpn), 2);
    expect_check(go(&rts2rts), check::BAD_QP_TRANSITION);
    ok(go(&rtr2rts));
    assert_eq!(qp_state(&qp, qpn), 3);
    ok(go(&rts2rts));
    assert_eq!(qp_state(&qp, qpn), 3);
    ok(go(&to_err));
    assert_eq!(qp_state(&qp, qpn), 6);
    expect_check(go(&rtr2rts), check::BAD_QP_TRANSITION);
    ok(go(&to_err));
    ok(go(&to_rst));
    assert_eq!(qp_state(&qp, qpn), 0);
    ok(go(&to_rst));
    ok(go(&rst2init));

    // Creation checks.
    expect_check(
        devx::create(
            &ctx,
            &CreateQp {
                pd: 0xfff0,
                ..kit.qp_cmd(cqn)
            },
        ),
        check::NO_SUCH_PD,
    );
    expect_check(
        devx::create(
            &ctx,
            &CreateQp {
                cqn_snd: 0x3ff,
                ..kit.qp_cmd(cqn)
            },
        ),
        check::NO_SUCH_CQ,
    );
    // log_sq_size is 4 bits wide, as is log_max_qp_sz: shrink the cap to get past it.
    env.dev
        .with_profile_mut(|p| p.set_general(l::cmd_hca_cap::log_max_qp_sz, 3));
    expect_check(devx::create(&ctx, &kit.qp_cmd(cqn)), check::BAD_LOG_SIZE);
    env.dev
        .with_profile_mut(|p| p.set_general(l::cmd_hca_cap::log_max_qp_sz, 15));
    let q = l::create_qp_in::qpc;
    let inbox = patched(&kit.qp_cmd(cqn), |v| v.set(q.at(l::qpc::st), 3));
    expect_check(raw_create(&*ctx, &inbox), check::BAD_QP_TYPE);
    let inbox = patched(&kit.qp_cmd(cqn), |v| v.set(q.at(l::qpc::state), 1));
    expect_check(raw_create(&*ctx, &inbox), check::BAD_STATE_FIELD);
    let inbox = patched(&kit.qp_cmd(cqn), |v| v.set(q.at(l::qpc::rq_type), 1));
    expect_check(raw_create(&*ctx, &inbox), check::NOT_SUPPORTED);

    // The QP holds its CQ.
    expect_check(raw_destroy(&*ctx, cq.handle()), check::OBJECT_IN_USE);
    ok(qp.destroy());
    ok(cq.destroy());
}

#[test]
fn tis_tir_and_rqt() {
    let mut env = Env::bf3();
    let ctx = env.ctx();
    let kit = Kit::new(&mut env, &ctx);
    expect_check(
        devx::create(
            &ctx,
            &CreateTis {
                transport_domain: 0xfff0,
                pd: kit.pdn,
            },
        ),
        check::NO_SUCH_TD,
    );
    let (_cq, cqn) = kit.cq();
    let (rq, rqn) = kit.rq(cqn);
    let (rq2, rqn2) = kit.rq(cqn);

    // Direct TIR.
    let (tir, _) = kit.tir(rqn);
    expect_check(
        devx::create(
            &ctx,
            &CreateTir {
                transport_domain: kit.tdn,
                inline_rqn: 0x1fff,
            },
        ),
        check::NO_SUCH_RQ,
    );
    expect_check(
        devx::create(
            &ctx,
            &CreateTir {
                transport_domain: 0xfff0,
                inline_rqn: rqn,
            },
        ),
        check::NO_SUCH_TD,
    );

    // RQT and an indirect TIR over it.
    let (rqt, rqtn) = ok(devx::create(
        &ctx,
        &CreateRqt {
            rqns: vec![rqn, rqn2],
        },
    ));
    expect_check(
        devx::create(
            &ctx,
            &CreateRqt {
                rqns: vec![rqn, 0x1fff],
            },
        ),
        check::NO_SUCH_RQ,
    );
    let r = l::create_rqt_in::rqt_context;
    let two = CreateRqt {
        rqns: vec![rqn, rqn2],
    };
    let inbox = patched(&two, |v| v.set(r.at(l::rqtc::rqt_actual_size), 3));
    expect_check(raw_create(&*ctx, &inbox), check::BAD_RQT_SIZE);
    let inbox = patched(&two, |v| v.set(r.at(l::rqtc::rqt_actual_size), 0));
    expect_check(raw_create(&*ctx, &inbox), check::BAD_RQT_SIZE);
    let inbox = patched(&two, |v| v.set(r.at(l::rqtc::rqt_max_size), 1024));
    expect_check(raw_create(&*ctx, &inbox), check::ABOVE_CAP);
    // The list is shorter than rqt_actual_size says.
    let inbox = patched(&two, |v| {
        v.set(r.at(l::rqtc::rqt_max_size), 4);
        v.set(r.at(l::rqtc::rqt_actual_size), 4);
    });
    expect_check(raw_create(&*ctx, &inbox), check::INBOX_TOO_SHORT);

    let t = l::create_tir_in::ctx;
    let direct = CreateTir {
        transport_domain: kit.tdn,
        inline_rqn: 0,
    };
    let indirect = |hash: u64| {
        patched(&direct, |v| {
            v.set(t.at(l::tirc::disp_type), 1);
            v.set(t.at(l::tirc::indirect_table), u64::from(rqtn));
            v.set(t.at(l::tirc::rx_hash_fn), hash);
        })
    };
    let itir = ok(raw_create(&*ctx, &indirect(2)));
    expect_check(raw_create(&*ctx, &indirect(3)), check::BAD_HASH_FN);
    let inbox = patched(&direct, |v| {
        v.set(t.at(l::tirc::disp_type), 1);
        v.set(t.at(l::tirc::indirect_table), 0xfff0);
    });
    expect_check(raw_create(&*ctx, &inbox), check::NO_SUCH_RQT);
    let inbox = patched(&direct, |v| v.set(t.at(l::tirc::disp_type), 2));
    expect_check(raw_create(&*ctx, &inbox), check::BAD_DISP_TYPE);

    // References: RQ <- RQT <- TIR, RQ <- TIR, TD <- TIR.
    expect_check(raw_destroy(&*ctx, rq2.handle()), check::OBJECT_IN_USE);
    expect_check(raw_destroy(&*ctx, rq.handle()), check::OBJECT_IN_USE);
    expect_check(raw_destroy(&*ctx, rqt.handle()), check::OBJECT_IN_USE);
    ok(raw_destroy(&*ctx, itir));
    ok(rqt.destroy());
    ok(rq2.destroy());
    expect_check(raw_destroy(&*ctx, rq.handle()), check::OBJECT_IN_USE);
    ok(tir.destroy());
    ok(rq.destroy());
}

#[test]
fn flow_table_group_and_entries() {
    let mut env = Env::bf3();
    let ctx = env.ctx();
    let kit = Kit::new(&mut env, &ctx);
    let (_cq, cqn) = kit.cq();
    let (_rq, rqn) = kit.rq(cqn);
    let (tir, tirn) = kit.tir(rqn);

    let ft = CreateFlowTable {
        level: 0,
        log_size: 4,
    };
    let (table, tid) = ok(devx::create(&ctx, &ft));
    let inbox = patched(&ft, |v| v.set(l::create_flow_table_in::table_type, 1));
    expect_check(raw_create(&*ctx, &inbox), check::BAD_TABLE_TYPE);
    expect_check(
        devx::create(
            &ctx,
            &CreateFlowTable {
                level: 0,
                log_size: 25,
            },
        ),
        check::BAD_LOG_SIZE,
    );
    let inbox = patched(&ft, |v| {
        v.set(
            l::create_flow_table_in::flow_table_context
                .at(l::flow_table_context::table_miss_action),
            1,
        )
    });
    expect_check(raw_create(&*ctx, &inbox), check::NOT_SUPPORTED);

    let fg = |table_id, start, end| CreateFlowGroup {
        table_id,
        start_flow_index: start,
        end_flow_index: end,
        criteria: OuterMatch {
            udp_dport: Some(0),
            ..OuterMatch::default()
        },
    };
    let (group, gid) = ok(devx::create(&ctx, &fg(tid, 0, 7)));
    // Overlapping, and reaching past the table's 16 entries.
    expect_check(devx::create(&ctx, &fg(tid, 4, 9)), check::GROUP_RANGE_BAD);
    expect_check(devx::create(&ctx, &fg(tid, 8, 16)), check::GROUP_RANGE_BAD);
    expect_check(
        devx::create(&ctx, &fg(0xfff0, 0, 1)),
        check::NO_SUCH_FLOW_TABLE,
    );
    let inbox = patched(&fg(tid, 8, 9), |v| {
        v.set(l::create_flow_group_in::match_criteria_enable, 2)
    });
    expect_check(raw_create(&*ctx, &inbox), check::BAD_MATCH_CRITERIA);
    let (group2, _) = ok(devx::create(&ctx, &fg(tid, 8, 15)));

    let fte = |flow_index, group_id, tirn| SetFte {
        table_id: tid,
        flow_index,
        group_id,
        value: OuterMatch {
            udp_dport: Some(4791),
            ..OuterMatch::default()
        },
        tirn,
    };
    let (entry, ()) = ok(devx::create(&ctx, &fte(3, gid, tirn)));
    expect_check(
        devx::create(&ctx, &fte(3, gid, tirn)),
        check::FLOW_INDEX_TAKEN,
    );
    expect_check(
        devx::create(&ctx, &fte(9, gid, tirn)),
        check::FLOW_INDEX_OUTSIDE_GROUP,
    );
    expect_check(devx::create(&ctx, &fte(4, gid, 0xfff0)), check::NO_SUCH_TIR);
    expect_check(
        devx::create(&ctx, &fte(4, 0xfff0, tirn)),
        check::NO_SUCH_FLOW_GROUP,
    );
    let c = l::set_fte_in::flow_context;
    // DROP together with a forward, COUNT (no counters in the model).
    for action in [0x2 | 0x4, 0x4 | 0x8] {
        let inbox = patched(&fte(4, gid, tirn), |v| {
            v.set(c.at(l::flow_context::action), action)
        });
        expect_check(raw_create(&*ctx, &inbox), check::BAD_ACTION);
    }
    // A destination type the model does not know.
    let inbox = patched(&fte(4, gid, tirn), |v| {
        ok(v.flex_set(
            l::set_fte_in::destination,
            0,
            (5 << 56) | (u64::from(tirn) << 32),
        ));
    });
    expect_check(raw_create(&*ctx, &inbox), check::BAD_DESTINATION);
    // Forwarding to a table of the same level (no loops).
    let (other, other_id) = ok(devx::create(&ctx, &ft));
    let to_table = |id: u32| {
        patched(&fte(5, gid, tirn), |v| {
            ok(v.flex_set(
                l::set_fte_in::destination,
                0,
                (1 << 56) | (u64::from(id) << 32),
            ));
        })
    };
    expect_check(
        raw_create(&*ctx, &to_table(other_id)),
        check::BAD_DESTINATION,
    );
    let (deeper, deeper_id) = ok(devx::create(
        &ctx,
        &CreateFlowTable {
            level: 1,
            log_size: 2,
        },
    ));
    let fwd = ok(raw_create(&*ctx, &to_table(deeper_id)));

    // What may be destroyed when.
    expect_check(raw_destroy(&*ctx, table.handle()), check::OBJECT_IN_USE);
    expect_check(raw_destroy(&*ctx, group.handle()), check::OBJECT_IN_USE);
    expect_check(raw_destroy(&*ctx, tir.handle()), check::OBJECT_IN_USE);
    expect_check(raw_destroy(&*ctx, deeper.handle()), check::OBJECT_IN_USE);
    assert_eq!(env.dev.inventory().count("FTE"), 2);
    ok(raw_destroy(&*ctx, fwd));
    ok(deeper.destroy());
    ok(entry.destroy());
    ok(group.destroy());
    expect_check(raw_destroy(&*ctx, table.handle()), check::OBJECT_IN_USE);
    ok(group2.destroy());
    ok(table.destroy());
    ok(other.destroy());

    // SET_FLOW_TABLE_ROOT is the kernel's: DevX refuses it, the kernel may send it.
    let (t3, t3id) = ok(devx::create(&ctx, &ft));
    let root = ok(encode_inbox(&SetFlowTableRoot { table_id: t3id }));
    expect_errno(raw_general(&*ctx, &root, 16), Errno::EINVAL);
    let mut out = [0u8; 16];
    ok(env.dev.kernel_command(&root, &mut out));
    let bad_root = ok(encode_inbox(&SetFlowTableRoot { table_id: 0xfff0 }));
    assert_eq!(
        env.dev.kernel_command(&bad_root, &mut out),
        Err(check::NO_SUCH_FLOW_TABLE)
    );
    ok(t3.destroy());
}

// ---------------------------------------------------------------------------------------------
// General objects (DPA).

#[test]
fn dpa_process() {
    let mut env = Env::bf3();
    let ctx = env.ctx();
    let kit = Kit::new(&mut env, &ctx);
    let create = |a: DpaProcessAttr| devx::create(&ctx, &CreateGeneralObject(a));
    expect_check(
        create(DpaProcessAttr {
            pd: 0xfff0,
            ..kit.process_attr()
        }),
        check::NO_SUCH_PD,
    );
    expect_check(
        create(DpaProcessAttr {
            elf_umem_id: 0xdead,
            ..kit.process_attr()
        }),
        check::NO_SUCH_UMEM,
    );
    expect_check(
        create(DpaProcessAttr {
            elf_umem_offset: POOL as u64 - 100,
            ..kit.process_attr()
        }),
        check::BAD_ELF_RANGE,
    );
    expect_check(
        create(DpaProcessAttr {
            elf_size: 0,
            ..kit.process_attr()
        }),
        check::BAD_LENGTH,
    );
    let budget = env.dev.with_profile_mut(|p| p.dpa_process_memory());
    assert_eq!(budget, 256 << 20);
    expect_check(
        create(DpaProcessAttr {
            heap_size: budget,
            ..kit.process_attr()
        }),
        check::DPA_MEMORY_EXHAUSTED,
    );
    expect_check(
        create(DpaProcessAttr {
            heap_size: u64::MAX,
            ..kit.process_attr()
        }),
        check::BAD_HEAP_SIZE,
    );

    let (process, pid) = kit.process();
    let ctx_bytes = ok(devx::query(
        &process,
        &QueryGeneralObject {
            obj_type: ot::DPA_PROCESS,
            obj_id: pid,
            ctx_len: ctx_len::<l::dpa_process::Layout>(),
        },
    ));
    let v = ok(View::<l::dpa_process::Layout>::new(&ctx_bytes));
    assert_eq!(v.get(l::dpa_process::dumem_base), 0x8000_0000);
    assert_eq!(v.get(l::dpa_process::pd), u64::from(kit.pdn));
    assert_eq!(v.get(l::dpa_process::dpa_process_status), 0);
    assert_eq!(env.dev.inventory().count("DPA_PROCESS"), 1);
    // It holds its PD and its ELF UMEM.
    expect_check(raw_destroy(&*ctx, kit.pd.handle()), check::OBJECT_IN_USE);
    expect_errno(ctx.umem_dereg(kit.umem.handle), Errno::EBUSY);

    // The process count limit of the running profile.
    env.dev
        .with_profile_mut(|p| p.set_dpa(l::dpa_cap::max_dpa_processes, 1));
    expect_check(create(kit.process_attr()), check::TOO_MANY_OBJECTS);
    ok(process.destroy());
}

#[test]
fn dpa_memory_accounting() {
    let mut env = Env::bf3();
    let ctx = env.ctx();
    let kit = Kit::new(&mut env, &ctx);
    let (process, pid) = kit.process();
    let budget = env.dev.with_profile_mut(|p| p.dpa_process_memory());
    let mem = |dpa_process_id, size| {
        devx::create(
            &ctx,
            &CreateGeneralObject(DpaMemAttr {
                dpa_process_id,
                size,
            }),
        )
    };
    // The ELF image (4 KiB) is accounted; blocks are 1 MiB.
    let (big, big_id) = ok(mem(pid, budget - (1 << 20)));
    let q = ok(devx::query(
        &big,
        &QueryGeneralObject {
            obj_type: ot::DPA_MEM,
            obj_id: big_id,
            ctx_len: ctx_len::<l::dpa_mem::Layout>(),
        },
    ));
    let v = ok(View::<l::dpa_mem::Layout>::new(&q));
    assert_eq!(v.get(l::dpa_mem::dpa_addr), 0x8000_0000 + 4096);
    assert_eq!(v.get(l::dpa_mem::size), budget - (1 << 20));
    // One more byte rounds up to a block that does not fit.
    expect_check(mem(pid, 1), check::DPA_MEMORY_EXHAUSTED);
    assert_eq!(check::DPA_MEMORY_EXHAUSTED.status, Status::NO_RES);
    ok(big.destroy());
    let (small, _) = ok(mem(pid, 1));
    expect_check(mem(pid, 0), check::BAD_LENGTH);
    expect_check(mem(pid, (1 << 28) + 1), check::ABOVE_CAP);
    expect_check(mem(0x7fff, 4096), check::NO_SUCH_DPA_PROCESS);
    // A DPA_MEM is not a process.
    let small_obj = env.ctxs[0].object(small.handle());
    let Some(ObjRef::General { id: small_gen, .. }) = small_obj else {
        panic!("DPA_MEM handle names {small_obj:?}");
    };
    expect_check(mem(small_gen, 4096), check::WRONG_OBJ_TYPE);
    // The process has memory: busy.
    expect_check(raw_destroy(&*ctx, process.handle()), check::OBJECT_IN_USE);
    ok(small.destroy());
    ok(process.destroy());
}

#[test]
fn dpa_thread() {
    let mut env = Env::bf3();
    let ctx = env.ctx();
    let kit = Kit::new(&mut env, &ctx);
    let (process, pid) = kit.process();
    let create = |a: DpaThreadAttr| devx::create(&ctx, &CreateGeneralObject(a));
    let (t0, tid) = ok(create(kit.thread_attr(pid)));
    let (t1, _) = ok(create(DpaThreadAttr {
        affinity: DpaAffinity::Strict(255),
        ..kit.thread_attr(pid)
    }));
    // EU 256 does not exist (16 cores x 16 EUs), nor does EU group 1 yet.
    expect_check(
        create(DpaThreadAttr {
            affinity: DpaAffinity::Strict(256),
            ..kit.thread_attr(pid)
        }),
        check::BAD_AFFINITY,
    );
    expect_check(
        create(DpaThreadAttr {
            affinity: DpaAffinity::Group(1),
            ..kit.thread_attr(pid)
        }),
        check::BAD_AFFINITY,
    );
    let inbox = general_inbox::<l::dpa_thread::Layout>(ot::DPA_THREAD, |v| {
        v.set(l::dpa_thread::dpa_process_id, u64::from(pid));
        v.set(l::dpa_thread::entry_point, 0x1000);
        v.set(l::dpa_thread::affinity_type, 3);
    });
    expect_check(raw_create(&*ctx, &inbox), check::BAD_AFFINITY);
    // An EU group makes group affinity valid.
    let created = ok(devx::exec(&*ctx, &eug(true, eug_reg(0, 0, &[0, 1]))));
    let gid = u16::from_be_bytes([created[2], created[3]]);
    assert_eq!(gid, 1);
    let (t2, _) = ok(create(DpaThreadAttr {
        affinity: DpaAffinity::Group(gid),
        ..kit.thread_attr(pid)
    }));
    expect_check(
        create(DpaThreadAttr {
            entry_point: 0,
            ..kit.thread_attr(pid)
        }),
        check::BAD_ENTRY_POINT,
    );
    expect_check(create(kit.thread_attr(0x7fff)), check::NO_SUCH_DPA_PROCESS);
    expect_check(create(kit.thread_attr(tid)), check::WRONG_OBJ_TYPE);

    // Modify: user_arg (bit 0) and state (bit 1) only.
    let attr = DpaThreadAttr {
        user_arg: 77,
        ..kit.thread_attr(pid)
    };
    expect_check(
        devx::modify(
            &t0,
            &ModifyGeneralObject {
                obj_id: tid,
                obj: attr,
            },
        ),
        check::BAD_MODIFY_SELECT,
    );
    ok(raw_modify(
        &*ctx,
        t0.handle(),
        &modify_thread_inbox(tid, 1, attr, 0),
    ));
    expect_check(
        raw_modify(&*ctx, t0.handle(), &modify_thread_inbox(tid, 4, attr, 0)),
        check::BAD_MODIFY_SELECT,
    );
    expect_check(
        raw_modify(&*ctx, t0.handle(), &modify_thread_inbox(tid, 2, attr, 4)),
        check::BAD_STATE_FIELD,
    );
    let q = ok(devx::query(
        &t0,
        &QueryGeneralObject {
            obj_type: ot::DPA_THREAD,
            obj_id: tid,
            ctx_len: ctx_len::<l::dpa_thread::Layout>(),
        },
    ));
    assert_eq!(
        ok(View::<l::dpa_thread::Layout>::new(&q)).get(l::dpa_thread::user_arg),
        77
    );

    // Threads per process: 2^1 once the profile says so.
    let (p2, pid2) = kit.process();
    env.dev
        .with_profile_mut(|p| p.set_dpa(l::dpa_cap::log_max_dpa_threads_per_process, 1));
    expect_check(create(kit.thread_attr(pid)), check::TOO_MANY_THREADS);
    assert_eq!(check::TOO_MANY_THREADS.status, Status::NO_RES);
    let (a, _) = ok(create(kit.thread_attr(pid2)));
    let (b, _) = ok(create(kit.thread_attr(pid2)));
    expect_check(create(kit.thread_attr(pid2)), check::TOO_MANY_THREADS);
    ok(b.destroy());
    let (b, _) = ok(create(kit.thread_attr(pid2)));

    // A process with threads is busy.
    expect_check(raw_destroy(&*ctx, process.handle()), check::OBJECT_IN_USE);
    expect_check(raw_destroy(&*ctx, p2.handle()), check::OBJECT_IN_USE);
    for t in [t0, t1, t2, a, b] {
        ok(t.destroy());
    }
    ok(process.destroy());
    ok(p2.destroy());
    assert_eq!(env.dev.inventory().count("DPA_THREAD"), 0);
}

#[test]
fn dpa_outbox_window_and_thread_links() {
    let mut env = Env::bf3();
    let ctx = env.ctx();
    let kit = Kit::new(&mut env, &ctx);
    let (pa, pida) = kit.process();
    let (pb, pidb) = kit.process();
    let outbox = |p, uar| {
        devx::create(
            &ctx,
            &CreateGeneralObject(DpaOutboxAttr {
                dpa_process_id: p,
                uar,
            }),
        )
    };
    let window = |p, pd| {
        devx::create(
            &ctx,
            &CreateGeneralObject(DpaWindowAttr {
                dpa_process_id: p,
                pd,
            }),
        )
    };
    let (ob_a, oba) = ok(outbox(pida, kit.uar));
    let (ob_b, obb) = ok(outbox(pidb, kit.uar));
    expect_check(outbox(pida, 0x7777), check::NO_SUCH_UAR);
    expect_check(outbox(0x7fff, kit.uar), check::NO_SUCH_DPA_PROCESS);
    let (win_a, wa) = ok(window(pida, kit.pdn));
    expect_check(window(pida, 0xfff0), check::NO_SUCH_PD);

    let thread = |outbox_id, window_id| {
        devx::create(
            &ctx,
            &CreateGeneralObject(DpaThreadAttr {
                default_outbox_id: outbox_id,
                default_window_id: window_id,
                ..kit.thread_attr(pida)
            }),
        )
    };
    let (t, _) = ok(thread(oba, wa));
    expect_check(thread(obb, 0), check::CROSS_PROCESS);
    expect_check(thread(wa, 0), check::WRONG_OBJ_TYPE);
    expect_check(thread(0, oba), check::WRONG_OBJ_TYPE);
    expect_check(thread(0x7fff, 0), check::NO_SUCH_DPA_OUTBOX);
    expect_check(thread(0, 0x7fff), check::NO_SUCH_DPA_WINDOW);
    // Referenced by the thread.
    expect_check(raw_destroy(&*ctx, ob_a.handle()), check::OBJECT_IN_USE);
    expect_check(raw_destroy(&*ctx, win_a.handle()), check::OBJECT_IN_USE);
    ok(t.destroy());
    for o in [ob_a, ob_b, win_a, pa, pb] {
        ok(o.destroy());
    }
}

#[test]
fn dpa_eq_uar_and_doorbell_mapping() {
    let mut env = Env::bf3();
    let ctx = env.ctx();
    let kit = Kit::new(&mut env, &ctx);
    let eq = |log_umem_size, umem_offset| {
        devx::create(
            &ctx,
            &CreateGeneralObject(DpaEqAttr {
                log_umem_size,
                uar_page: kit.uar,
                umem_id: kit.umem.umem_id,
                umem_offset,
                oi: false,
            }),
        )
    };
    let (deq, deq_id) = ok(eq(12, kit.take(4096, 4096)));
    expect_check(eq(5, 0), check::BAD_LOG_SIZE);
    expect_check(eq(12, POOL as u64 - 64), check::BAD_UMEM_RANGE);
    let (cq, cqn) = ok(devx::create(
        &ctx,
        &CreateCq {
            target: CqEventTarget::DpaEq(deq_id),
            ..kit.cq_cmd()
        },
    ));
    expect_check(raw_destroy(&*ctx, deq.handle()), check::OBJECT_IN_USE);

    let map = |cqn| {
        devx::create(
            &ctx,
            &CreateGeneralObject(DbCqMappingAttr {
                device_emulation_id: 0,
                queue_id: 0,
                cqn,
                queue_type: 0,
                device_type: 0,
            }),
        )
    };
    let (mapping, _) = ok(map(cqn));
    expect_check(map(0x3ff), check::NO_SUCH_CQ);
    expect_check(raw_destroy(&*ctx, cq.handle()), check::OBJECT_IN_USE);

    // DPA_UAR (no typed command yet): a host UAR extended to a process.
    let (process, pid) = kit.process();
    let dpa_uar = |p: u32, page: u32| {
        general_inbox::<l::dpa_uar::Layout>(ot::DPA_UAR, |v| {
            v.set(l::dpa_uar::dpa_process_id, u64::from(p));
            v.set(l::dpa_uar::uar_page, u64::from(page));
        })
    };
    let du = ok(raw_create(&*ctx, &dpa_uar(pid, kit.uar)));
    expect_check(
        raw_create(&*ctx, &dpa_uar(0x7fff, kit.uar)),
        check::NO_SUCH_DPA_PROCESS,
    );
    expect_check(raw_create(&*ctx, &dpa_uar(pid, 0x7777)), check::NO_SUCH_UAR);
    let inv = env.dev.inventory();
    assert_eq!(
        (
            inv.count("DPA_EQ"),
            inv.count("DB_CQ_MAPPING"),
            inv.count("DPA_UAR")
        ),
        (1, 1, 1)
    );
    ok(raw_destroy(&*ctx, du));
    ok(mapping.destroy());
    ok(cq.destroy());
    ok(deq.destroy());
    ok(process.destroy());
}

#[test]
fn general_object_types_and_headers() {
    let mut env = Env::bf3();
    let ctx = env.ctx();
    let kit = Kit::new(&mut env, &ctx);
    // Types the device does not have.
    for t in [0x1234, ot::RESERVED_QPN, ot::EMULATED_DEV_EQ] {
        expect_check(
            raw_create(&*ctx, &header(Opcode::CREATE_GENERAL_OBJECT, t, 16 + 0x100)),
            check::UNKNOWN_OBJ_TYPE,
        );
    }
    let p = CreateGeneralObject(kit.process_attr());
    // alias_object on a type that is not an alias.
    let inbox = patched(&p, |v| v.set(l::general_obj_in_cmd_hdr::alias_object, 1));
    expect_check(raw_create(&*ctx, &inbox), check::UNKNOWN_OBJ_TYPE);
    let inbox = patched(&p, |v| v.set(l::general_obj_in_cmd_hdr::log_obj_range, 2));
    expect_check(raw_create(&*ctx, &inbox), check::NOT_SUPPORTED);

    let (process, pid) = kit.process();
    // Query naming another type than the handle's object: DevX refuses.
    expect_errno(
        devx::query(
            &process,
            &QueryGeneralObject {
                obj_type: ot::DPA_THREAD,
                obj_id: pid,
                ctx_len: 0x60,
            },
        ),
        Errno::EINVAL,
    );
    // The kernel's own destroy with the wrong type, and of nothing.
    let mut out = [0u8; 16];
    let destroy = |t: u16, id: u32| {
        ok(encode_inbox(&DestroyGeneralObject {
            obj_type: t,
            obj_id: id,
        }))
    };
    assert_eq!(
        env.dev
            .kernel_command(&destroy(ot::DPA_THREAD, pid), &mut out),
        Err(check::WRONG_OBJ_TYPE)
    );
    assert_eq!(out[0], Status::BAD_PARAM.0);
    assert_eq!(
        u32::from_be_bytes([out[4], out[5], out[6], out[7]]),
        check::WRONG_OBJ_TYPE.syndrome
    );
    assert_eq!(
        env.dev
            .kernel_command(&destroy(ot::DPA_PROCESS, 0x7fff), &mut out),
        Err(check::NO_SUCH_OBJECT)
    );
    // Query with an outbox too short for the context.
    let q = ok(encode_inbox(&QueryGeneralObject {
        obj_type: ot::DPA_PROCESS,
        obj_id: pid,
        ctx_len: 0,
    }));
    expect_check(
        raw_query(&*ctx, process.handle(), &q, 16),
        check::OUTBOX_TOO_SHORT,
    );
    ok(process.destroy());

    // A NIC without DPA has none of the DPA types.
    let mut cx7 = Env::cx7();
    let c7 = cx7.ctx();
    let kit7 = Kit::new(&mut cx7, &c7);
    for t in mlx5_sim::profile::MODEL_OBJ_TYPES_DPA {
        expect_check(
            raw_create(&*c7, &header(Opcode::CREATE_GENERAL_OBJECT, t, 16 + 0x100)),
            check::UNKNOWN_OBJ_TYPE,
        );
    }
    expect_check(
        devx::create(&c7, &CreateGeneralObject(kit7.process_attr())),
        check::UNKNOWN_OBJ_TYPE,
    );
}

#[test]
fn aliases_and_access_grants() {
    let mut env = Env::bf3();
    let ctx = env.ctx();
    let kit = Kit::new(&mut env, &ctx);
    let (process, pid) = kit.process();
    let key = [7u8; 32];
    let allow = |ctx: &dyn Devx, object_type, object_id| {
        devx::exec(
            ctx,
            &AllowOtherVhcaAccess {
                object_type,
                object_id,
                access_key: key,
            },
        )
    };
    ok(allow(&*ctx, ot::DPA_PROCESS, pid));
    expect_check(allow(&*ctx, 0x1234, pid), check::UNKNOWN_OBJ_TYPE);
    expect_check(allow(&*ctx, ot::DPA_PROCESS, 0x7fff), check::NO_SUCH_OBJECT);
    expect_check(allow(&*ctx, ot::DPA_THREAD, pid), check::NO_SUCH_OBJECT);
    let (ctx2, _) = env.open();
    expect_check(allow(&*ctx2, ot::DPA_PROCESS, pid), check::WRONG_UID);

    let alias = |object_id, vhca_id, access_key| {
        devx::create(
            &ctx,
            &CreateAlias {
                obj_type: 0xff13,
                vhca_id,
                object_id,
                access_key,
            },
        )
    };
    let (a, _) = ok(alias(pid, 2, key));
    assert_eq!(env.dev.inventory().count("ALIAS"), 1);
    expect_check(alias(pid, 2, [8; 32]), check::BAD_ACCESS_KEY);
    expect_check(alias(pid + 1, 2, key), check::NO_SUCH_ALIAS_GRANT);
    expect_check(alias(pid, 3, key), check::NOT_SUPPORTED);
    ok(a.destroy());
    ok(process.destroy());
}

#[test]
fn access_register_user_eu_groups() {
    let env = Env::bf3();
    let ctx = env.ctx();
    let created = ok(devx::exec(&*ctx, &eug(true, eug_reg(0, 0, &[0, 5, 255]))));
    let id = u16::from_be_bytes([created[2], created[3]]);
    assert_eq!(env.dev.inventory().count("EUG"), 1);
    let read = ok(devx::exec(&*ctx, &eug(false, eug_reg(0, id, &[]))));
    assert_eq!(read, created);
    // Modify in place; modify of a group that does not exist.
    ok(devx::exec(&*ctx, &eug(true, eug_reg(1, id, &[1]))));
    expect_check(
        devx::exec(&*ctx, &eug(true, eug_reg(1, 9, &[1]))),
        check::NO_SUCH_OBJECT,
    );
    // EU 300 does not exist.
    expect_check(
        devx::exec(&*ctx, &eug(true, eug_reg(0, 0, &[300]))),
        check::BAD_AFFINITY,
    );
    expect_check(
        devx::exec(&*ctx, &eug(true, eug_reg(5, 0, &[1]))),
        check::BAD_REGISTER_OP,
    );
    expect_check(
        devx::exec(
            &*ctx,
            &AccessRegisterUser {
                register_id: 0x1234,
                ..eug(true, eug_reg(0, 0, &[1]))
            },
        ),
        check::BAD_REGISTER,
    );
    expect_check(
        devx::exec(&*ctx, &eug(true, vec![0; 4])),
        check::INBOX_TOO_SHORT,
    );
    let w = eug(true, eug_reg(0, 0, &[1]));
    let op_mod = patched(&w, |v| v.set(l::access_register_in::op_mod, 2));
    expect_check(raw_general(&*ctx, &op_mod, 0x200), check::BAD_OP_MOD);
    expect_check(
        raw_general(&*ctx, &ok(encode_inbox(&w)), 16),
        check::OUTBOX_TOO_SHORT,
    );
    // Delete.
    ok(devx::exec(&*ctx, &eug(true, eug_reg(2, id, &[]))));
    expect_check(
        devx::exec(&*ctx, &eug(false, eug_reg(0, id, &[]))),
        check::NO_SUCH_OBJECT,
    );
    assert!(env.dev.inventory().is_empty());

    let cx7 = Env::cx7();
    expect_check(
        devx::exec(&*cx7.ctx(), &eug(true, eug_reg(0, 0, &[1]))),
        check::BAD_REGISTER,
    );
}

// ---------------------------------------------------------------------------------------------
// Reference rules, DevX rules, contexts.

#[test]
fn reference_rules() {
    let mut env = Env::bf3();
    let ctx = env.ctx();
    let kit = Kit::new(&mut env, &ctx);
    let (cq, cqn) = kit.cq();
    let (tis, tisn) = kit.tis();
    let (sq, _) = kit.sq(cqn, tisn);
    // CQ and TIS used by the SQ.
    expect_check(raw_destroy(&*ctx, cq.handle()), check::OBJECT_IN_USE);
    expect_check(raw_destroy(&*ctx, tis.handle()), check::OBJECT_IN_USE);
    // The UMEM holds rings; the UAR is named by the CQ and SQ.
    expect_errno(ctx.umem_dereg(kit.umem.handle), Errno::EBUSY);
    let uar = ok(ctx.uar_alloc(UarKind::NonCached));
    let (uar_handle, uar_page, uar_base, uar_len) = (uar.handle, uar.page_id, uar.base, uar.len);
    let (cq2, _) = ok(devx::create(
        &ctx,
        &CreateCq {
            uar_page,
            ..kit.cq_cmd()
        },
    ));
    expect_errno(ctx.uar_free(uar), Errno::EBUSY);
    ok(sq.destroy());
    ok(cq.destroy());
    ok(tis.destroy());
    ok(cq2.destroy());
    ok(ctx.uar_free(Uar {
        handle: uar_handle,
        page_id: uar_page,
        base: uar_base,
        len: uar_len,
    }));
    ok(ctx.umem_dereg(kit.umem.handle));
    expect_errno(ctx.umem_dereg(kit.umem.handle), Errno::EINVAL);
    assert_eq!(env.dev.inventory().count("UMEM"), 0);
    assert_eq!(env.dev.inventory().count("UAR"), 1);
}

#[test]
fn failed_creates_take_no_references() {
    let mut env = Env::bf3();
    let ctx = env.ctx();
    let kit = Kit::new(&mut env, &ctx);
    let (cq, cqn) = kit.cq();
    let (tis, tisn) = kit.tis();
    // Each of these fails after some references were already looked up.
    let mut sq = kit.sq_cmd(cqn, tisn);
    sq.wq.mem.dbr_offset = POOL as u64;
    expect_check(devx::create(&ctx, &sq), check::BAD_UMEM_RANGE);
    expect_check(
        devx::create(
            &ctx,
            &CreateCq {
                target: CqEventTarget::Eq(0),
                ..kit.cq_cmd()
            },
        ),
        check::NO_SUCH_EQ,
    );
    let mut qp = kit.qp_cmd(cqn);
    qp.mem.umem_offset = POOL as u64;
    expect_check(devx::create(&ctx, &qp), check::BAD_UMEM_RANGE);
    expect_check(
        devx::create(&ctx, &CreateRqt { rqns: vec![0x1fff] }),
        check::NO_SUCH_RQ,
    );
    let (process, pid) = kit.process();
    expect_check(
        devx::create(
            &ctx,
            &CreateGeneralObject(DpaThreadAttr {
                default_window_id: 0x7fff,
                ..kit.thread_attr(pid)
            }),
        ),
        check::NO_SUCH_DPA_WINDOW,
    );
    expect_check(
        devx::create(
            &ctx,
            &CreateGeneralObject(DpaMemAttr {
                dpa_process_id: pid,
                size: 1 << 30,
            }),
        ),
        check::ABOVE_CAP,
    );
    // Everything the failures looked at can go now, in any order.
    ok(process.destroy());
    ok(cq.destroy());
    ok(tis.destroy());
    let Kit {
        pd,
        td,
        umem,
        ctx: kctx,
        ..
    } = kit;
    ok(pd.destroy());
    ok(td.destroy());
    ok(kctx.umem_dereg(umem.handle));
    let inv = env.dev.inventory();
    assert_eq!(inv.by_kind.keys().copied().collect::<Vec<_>>(), vec!["UAR"]);
}

#[test]
fn devx_layer_rules() {
    let mut env = Env::bf3();
    let ctx = env.ctx();
    let kit = Kit::new(&mut env, &ctx);
    let stats = || env.dev.stats().fw.commands;

    // The method must match the opcode; refused without reaching firmware.
    let before = stats();
    let cq_inbox = ok(encode_inbox(&kit.cq_cmd()));
    expect_errno(raw_general(&*ctx, &cq_inbox, OUT), Errno::EINVAL);
    let q = ok(encode_inbox(&QueryHcaCap {
        cap_type: 0,
        current: true,
    }));
    expect_errno(raw_create(&*ctx, &q), Errno::EINVAL);
    let mut destroy = header(Opcode::DESTROY_CQ, 0, 16);
    destroy[8..12].copy_from_slice(&0x400u32.to_be_bytes());
    expect_errno(raw_general(&*ctx, &destroy, 16), Errno::EINVAL);
    expect_errno(raw_create(&*ctx, &destroy), Errno::EINVAL);
    expect_errno(
        raw_general(&*ctx, &header(Opcode::CREATE_EQ, 0, 0x200), 16),
        Errno::EINVAL,
    );
    assert_eq!(stats(), before);

    // Modify / query name the handle's object, with the method's opcodes.
    let (_cq, cqn) = kit.cq();
    let (_tis, tisn) = kit.tis();
    let (sq1, sqn1) = kit.sq(cqn, tisn);
    let (_sq2, sqn2) = kit.sq(cqn, tisn);
    let before = stats();
    expect_errno(
        devx::modify(
            &sq1,
            &ModifySq {
                sqn: sqn2,
                from: WqState::Rst,
                to: WqState::Rdy,
            },
        ),
        Errno::EINVAL,
    );
    let mut query_sq = header(Opcode::QUERY_SQ, 0, 16);
    query_sq[8..12].copy_from_slice(&sqn1.to_be_bytes());
    expect_errno(raw_modify(&*ctx, sq1.handle(), &query_sq), Errno::EINVAL);
    let modify_sq = ok(encode_inbox(&ModifySq {
        sqn: sqn1,
        from: WqState::Rst,
        to: WqState::Rdy,
    }));
    expect_errno(
        raw_query(&*ctx, sq1.handle(), &modify_sq, OUT),
        Errno::EINVAL,
    );
    expect_errno(
        raw_modify(&*ctx, ObjHandle(9999), &modify_sq),
        Errno::EINVAL,
    );
    expect_errno(raw_destroy(&*ctx, ObjHandle(9999)), Errno::EINVAL);
    assert_eq!(stats(), before);
    ok(raw_modify(&*ctx, sq1.handle(), &modify_sq));

    // umem_valid is forced by the kernel for DevX; without it firmware refuses.
    let c = l::create_cq_in::cq_context;
    let no_umem = patched(&kit.cq_cmd(), |v| {
        v.set(l::create_cq_in::cq_umem_valid, 0);
        v.set(c.at(l::cqc::dbr_umem_valid), 0);
    });
    let h = ok(raw_create(&*ctx, &no_umem));
    ok(raw_destroy(&*ctx, h));
    let mut out = [0u8; 16];
    assert_eq!(
        env.dev.kernel_command(&no_umem, &mut out),
        Err(check::UMEM_NOT_VALID)
    );

    // UMEM registration rules.
    let m = host_mem(4096);
    let p = base(&m);
    // SAFETY: every call below fails before registering anything, so no registration of
    // `m` outlives it.
    unsafe {
        expect_errno(
            ctx.umem_reg(p, 0, UmemAccess::LOCAL_WRITE, 1 << 12),
            Errno::EINVAL,
        );
        expect_errno(
            ctx.umem_reg(p, 4096, UmemAccess::LOCAL_WRITE, 0x800),
            Errno::EINVAL,
        );
        expect_errno(
            ctx.umem_reg(p, 4096, UmemAccess::REMOTE_WRITE, 1 << 12),
            Errno::EINVAL,
        );
    }
    drop(m);
}

#[test]
fn uid_is_the_contexts_own() {
    let mut env = Env::bf3();
    let ctx1 = env.ctx();
    let kit1 = Kit::new(&mut env, &ctx1);
    let (ctx2, sim2) = env.open();
    let uid1 = env.ctxs[0].uid();
    assert_ne!(uid1, sim2.uid());
    // ctx2 claims ctx1's uid (and then the kernel's) in the mailbox: the kernel overwrites it.
    for claimed in [uid1, 0] {
        let tis = CreateTis {
            transport_domain: kit1.tdn,
            pd: kit1.pdn,
        };
        let inbox = patched(&tis, |v| v.set(l::create_tis_in::uid, u64::from(claimed)));
        expect_check(raw_create(&*ctx2, &inbox), check::WRONG_UID);
    }
    // ctx1 may put anything in uid: it is overwritten with its own.
    let inbox = patched(
        &CreateTis {
            transport_domain: kit1.tdn,
            pd: kit1.pdn,
        },
        |v| v.set(l::create_tis_in::uid, 0x1234),
    );
    let h = ok(raw_create(&*ctx1, &inbox));
    assert!(matches!(env.ctxs[0].object(h), Some(ObjRef::Tis(_))));
    ok(raw_destroy(&*ctx1, h));
}

#[test]
fn contexts_are_isolated() {
    let mut env = Env::bf3();
    let ctx1 = env.ctx();
    let kit1 = Kit::new(&mut env, &ctx1);
    let (cq1, cqn1) = kit1.cq();
    let (tis1, tisn1) = kit1.tis();
    let (ctx2, _) = env.open();

    // ctx2 has no handles at all yet: every one of ctx1's is unknown to it.
    let before = env.dev.stats().fw.commands;
    expect_errno(raw_destroy(&*ctx2, cq1.handle()), Errno::EINVAL);
    let mut q = header(Opcode::QUERY_CQ, 0, 16);
    q[8..12].copy_from_slice(&cqn1.to_be_bytes());
    expect_errno(raw_query(&*ctx2, cq1.handle(), &q, OUT), Errno::EINVAL);
    let m = ok(encode_inbox(&ModifyCqModeration {
        cqn: cqn1,
        cq_period: 1,
        cq_max_count: 1,
    }));
    expect_errno(raw_modify(&*ctx2, cq1.handle(), &m), Errno::EINVAL);
    expect_errno(ctx2.umem_dereg(kit1.umem.handle), Errno::EINVAL);
    assert_eq!(env.dev.stats().fw.commands, before);

    // Objects of ctx2 may not reference ctx1's.
    let kit2 = Kit::new(&mut env, &ctx2);
    expect_check(
        devx::create(
            &ctx2,
            &CreateMkey {
                pd: kit1.pdn,
                ..kit2.mkey_cmd(4096)
            },
        ),
        check::WRONG_UID,
    );
    expect_check(
        devx::create(
            &ctx2,
            &CreateCq {
                uar_page: kit1.uar,
                ..kit2.cq_cmd()
            },
        ),
        check::WRONG_UID,
    );
    let mut on_umem1 = kit2.cq_cmd();
    on_umem1.mem.umem_id = kit1.umem.umem_id;
    expect_check(devx::create(&ctx2, &on_umem1), check::WRONG_UID);
    expect_check(
        devx::create(&ctx2, &kit2.sq_cmd(cqn1, tisn1)),
        check::WRONG_UID,
    );
    expect_check(
        devx::create(
            &ctx2,
            &CreateGeneralObject(DpaProcessAttr {
                pd: kit1.pdn,
                ..kit2.process_attr()
            }),
        ),
        check::WRONG_UID,
    );
    // ctx2's own objects work, and go with ctx2.
    let (cq2, _) = kit2.cq();
    let inv = env.dev.inventory();
    assert_eq!(
        (inv.count("CQ"), inv.count("PD"), inv.count("UMEM")),
        (2, 2, 2)
    );
    drop((cq2, kit2, ctx2));
    env.close(1);
    let inv = env.dev.inventory();
    assert_eq!(
        (
            inv.count("CQ"),
            inv.count("PD"),
            inv.count("UMEM"),
            inv.count("UAR")
        ),
        (1, 1, 1, 1)
    );
    drop((cq1, tis1));
}

// ---------------------------------------------------------------------------------------------
// Fault injection, capacity, inventory.

#[test]
fn fault_injection() {
    let mut env = Env::bf3();
    let ctx = env.ctx();
    let injected = |status| Check {
        status,
        ..check::FAULT_INJECTED
    };
    env.dev.fail_nth_command(1, Status::NO_RES);
    expect_check(devx::create(&ctx, &AllocPd), injected(Status::NO_RES));
    let (_pd, _) = ok(devx::create(&ctx, &AllocPd));
    env.dev.fail_nth_command(2, Status::BAD_RES);
    ok(devx::exec(&*ctx, &Nop));
    expect_check(devx::exec(&*ctx, &Nop), injected(Status::BAD_RES));
    ok(devx::exec(&*ctx, &Nop));

    let kit = Kit::new(&mut env, &ctx);
    let failed = env.dev.stats().fw.failed;
    env.dev.fail_opcode(Opcode::CREATE_CQ, Status::NO_RES);
    for _ in 0..3 {
        expect_check(devx::create(&ctx, &kit.cq_cmd()), injected(Status::NO_RES));
    }
    ok(devx::exec(&*ctx, &Nop));
    assert_eq!(env.dev.stats().fw.failed, failed + 3);
    env.dev.clear_faults();
    let (cq, _) = kit.cq();

    // A refused destroy leaves the object and its handle in place.
    env.dev.fail_opcode(Opcode::DESTROY_CQ, Status::INT_ERR);
    expect_check(raw_destroy(&*ctx, cq.handle()), injected(Status::INT_ERR));
    assert_eq!(env.dev.inventory().count("CQ"), 1);
    env.dev.clear_faults();
    ok(cq.destroy());
    assert_eq!(env.dev.inventory().count("CQ"), 0);

    // The k-th command of one opcode, whatever runs in between; failed commands are
    // recorded with their opcode and op_mod, and commands are traced when asked.
    env.dev.clear_faults();
    env.dev.record_commands(true);
    env.dev
        .fail_nth_of(Opcode::ALLOC_PD, None, 2, Status::BAD_RES);
    let (_a, _) = ok(devx::create(&ctx, &AllocPd));
    for _ in 0..5 {
        ok(devx::exec(&*ctx, &Nop));
    }
    expect_check(devx::create(&ctx, &AllocPd), injected(Status::BAD_RES));
    let (_b, _) = ok(devx::create(&ctx, &AllocPd));
    let hit = env.dev.injected_faults();
    assert_eq!(hit.len(), 1);
    assert_eq!((hit[0].1, hit[0].2), (Opcode::ALLOC_PD, 0));
    let trace = env.dev.record_commands(false);
    assert_eq!(trace.len(), 8);
    assert_eq!(trace.iter().filter(|(o, _)| *o == Opcode::NOP).count(), 5);
    // An op_mod that never comes never fires.
    env.dev
        .fail_nth_of(Opcode::ALLOC_PD, Some(7), 1, Status::BAD_RES);
    let (_c, _) = ok(devx::create(&ctx, &AllocPd));
    assert_eq!(env.dev.injected_faults().len(), 1);
    env.dev.clear_faults();
}

#[test]
fn object_count_limits() {
    use l::cmd_hca_cap as c;
    // Count limits are sized when the device is made: build it from a shrunk profile.
    let mut p = Profile::bf3();
    p.set_general(c::log_max_cq, 1);
    p.set_general(c::log_max_sq, 0);
    let mut env = Env::new(p);
    let ctx = env.ctx();
    let kit = Kit::new(&mut env, &ctx);
    let (cq_a, cqn) = kit.cq();
    let (_cq_b, _) = kit.cq();
    expect_check(devx::create(&ctx, &kit.cq_cmd()), check::TOO_MANY_OBJECTS);
    assert_eq!(check::TOO_MANY_OBJECTS.status, Status::NO_RES);
    let (_tis, tisn) = kit.tis();
    let (sq, _) = kit.sq(cqn, tisn);
    expect_check(
        devx::create(&ctx, &kit.sq_cmd(cqn, tisn)),
        check::TOO_MANY_OBJECTS,
    );
    ok(sq.destroy());
    ok(cq_a.destroy());
    let (_cq_c, cqn_c) = kit.cq();
    let (_sq, _) = kit.sq(cqn_c, tisn);

    let mut p = Profile::bf3();
    p.set_general(c::log_max_pd, 0);
    let env = Env::new(p);
    let ctx = env.ctx();
    let (_pd, _) = ok(devx::create(&ctx, &AllocPd));
    expect_check(devx::create(&ctx, &AllocPd), check::TOO_MANY_OBJECTS);

    // The SQ limit is also read from the running profile.
    let mut env = Env::bf3();
    let ctx = env.ctx();
    let kit = Kit::new(&mut env, &ctx);
    let (_cq, cqn) = kit.cq();
    let (_tis, tisn) = kit.tis();
    let (_sq, _) = kit.sq(cqn, tisn);
    env.dev
        .with_profile_mut(|p| p.set_general(c::log_max_sq, 0));
    expect_check(
        devx::create(&ctx, &kit.sq_cmd(cqn, tisn)),
        check::TOO_MANY_OBJECTS,
    );
}

#[test]
fn inventory_counts_and_context_drop_releases_everything() {
    let mut env = Env::bf3();
    let ctx = env.ctx();
    // Objects created without destroying wrappers: only the context's drop releases them.
    let c = &*ctx;
    let (_, pdn) = ok(mk(c, &AllocPd));
    let (_, tdn) = ok(mk(c, &AllocTransportDomain));
    let uar = ok(ctx.uar_alloc(UarKind::NonCached)).page_id;
    let eqn = ok(ctx.query_eqn(1));
    let umem = env.umem(&ctx, 1 << 16, UmemAccess::LOCAL_WRITE);
    let ring = |at: u64| RingMem {
        umem_id: umem.umem_id,
        umem_offset: at,
        dbr_umem_id: umem.umem_id,
        dbr_offset: 0xf000 + at / 64,
    };
    let (_, cqn) = ok(mk(
        c,
        &CreateCq {
            log_cq_size: 6,
            cqe_sz: 0,
            uar_page: uar,
            target: CqEventTarget::Eq(eqn),
            mem: ring(0),
            cq_period: 0,
            cq_max_count: 0,
            oi: false,
        },
    ));
    let (_, tisn) = ok(mk(
        c,
        &CreateTis {
            transport_domain: tdn,
            pd: pdn,
        },
    ));
    let wq = |at| WqAttr {
        pd: pdn,
        uar_page: uar,
        log_wq_stride: 6,
        log_wq_sz: 6,
        mem: ring(at),
    };
    ok(mk(
        c,
        &CreateSq {
            cqn,
            tisn,
            wq: wq(0x1000),
            flush_in_error_en: false,
        },
    ));
    let (_, rqn) = ok(mk(
        c,
        &CreateRq {
            cqn,
            wq: wq(0x2000),
            flush_in_error_en: false,
        },
    ));
    let (_, tirn) = ok(mk(
        c,
        &CreateTir {
            transport_domain: tdn,
            inline_rqn: rqn,
        },
    ));
    ok(mk(c, &CreateRqt { rqns: vec![rqn] }));
    let (_, tid) = ok(mk(
        c,
        &CreateFlowTable {
            level: 0,
            log_size: 2,
        },
    ));
    let (_, gid) = ok(mk(
        c,
        &CreateFlowGroup {
            table_id: tid,
            start_flow_index: 0,
            end_flow_index: 3,
            criteria: OuterMatch::default(),
        },
    ));
    ok(mk(
        c,
        &SetFte {
            table_id: tid,
            flow_index: 0,
            group_id: gid,
            value: OuterMatch::default(),
            tirn,
        },
    ));
    ok(mk(
        c,
        &CreateQp {
            pd: pdn,
            uar_page: uar,
            cqn_snd: cqn,
            cqn_rcv: cqn,
            log_sq_size: 4,
            log_rq_size: Some(4),
            log_rq_stride: 0,
            mem: ring(0x3000),
        },
    ));
    ok(mk(
        c,
        &CreateMkey {
            pd: pdn,
            start_addr: 0,
            len: 4096,
            access: MkeyAccess::default(),
            umem_id: umem.umem_id,
            umem_offset: 0x4000,
            key: 1,
            log_page_size: 12,
        },
    ));
    let elf = mlx5_sim::testing::dpa_rig::elf::minimal();
    assert!(0x5000 + elf.len() <= 0xf000);
    let pool = env.mem.last().expect("the umem's memory");
    // 0x5000.. holds nothing else (asserted to end before the doorbell records).
    pool.write(0x5000, &elf).expect("the ELF fits");
    let (_, pid) = ok(mk(
        c,
        &CreateGeneralObject(DpaProcessAttr {
            pd: pdn,
            elf_umem_id: umem.umem_id,
            elf_umem_offset: 0x5000,
            elf_size: elf.len() as u64,
            heap_size: 0,
        }),
    ));
    let (_, oid) = ok(mk(
        c,
        &CreateGeneralObject(DpaOutboxAttr {
            dpa_process_id: pid,
            uar,
        }),
    ));
    let (_, wid) = ok(mk(
        c,
        &CreateGeneralObject(DpaWindowAttr {
            dpa_process_id: pid,
            pd: pdn,
        }),
    ));
    let (_, thread) = ok(mk(
        c,
        &CreateGeneralObject(DpaThreadAttr {
            dpa_process_id: pid,
            entry_point: 0x1000,
            user_arg: 0,
            thread_local_storage_daddr: 0,
            affinity: DpaAffinity::None,
            default_outbox_id: oid,
            default_window_id: wid,
            continuable: true,
        }),
    ));
    ok(mk(
        c,
        &CreateCq {
            log_cq_size: 6,
            cqe_sz: 0,
            uar_page: uar,
            target: CqEventTarget::DpaThread(thread),
            mem: ring(0x6000),
            cq_period: 0,
            cq_max_count: 0,
            oi: false,
        },
    ));
    ok(mk(
        c,
        &CreateGeneralObject(DpaMemAttr {
            dpa_process_id: pid,
            size: 4096,
        }),
    ));

    let inv = env.dev.inventory();
    let want = [
        ("CQ", 2),
        ("DPA_MEM", 1),
        ("DPA_OUTBOX", 1),
        ("DPA_PROCESS", 1),
        ("DPA_THREAD", 1),
        ("DPA_WINDOW", 1),
        ("FLOW_GROUP", 1),
        ("FLOW_TABLE", 1),
        ("FTE", 1),
        ("MKEY", 1),
        ("PD", 1),
        ("QP", 1),
        ("RQ", 1),
        ("RQT", 1),
        ("SQ", 1),
        ("TD", 1),
        ("TIR", 1),
        ("TIS", 1),
        ("UAR", 1),
        ("UMEM", 1),
    ];
    assert_eq!(
        inv.by_kind
            .iter()
            .map(|(k, n)| (*k, *n))
            .collect::<Vec<_>>(),
        want.to_vec(),
        "inventory: {inv}"
    );
    assert!(inv.to_string().contains("CQ=2"));
    // The context holds everything: the UMEM cannot go yet.
    expect_errno(ctx.umem_dereg(umem.handle), Errno::EBUSY);
    drop(ctx);
    env.close(0);
    let inv = env.dev.inventory();
    assert!(inv.is_empty(), "left after the context closed: {inv}");
    assert_eq!(inv.to_string(), "(nothing live)");
}

#[test]
fn closing_a_context_is_not_subject_to_injected_faults() {
    let mut env = Env::bf3();
    let ctx = env.ctx();
    let c = &*ctx;
    ok(mk(c, &AllocPd));
    let uar = ok(ctx.uar_alloc(UarKind::NonCached)).page_id;
    let umem = env.umem(&ctx, 1 << 14, UmemAccess::LOCAL_WRITE);
    ok(mk(
        c,
        &CreateCq {
            log_cq_size: 6,
            cqe_sz: 0,
            uar_page: uar,
            target: CqEventTarget::Eq(ok(ctx.query_eqn(0))),
            mem: RingMem {
                umem_id: umem.umem_id,
                umem_offset: 0,
                dbr_umem_id: umem.umem_id,
                dbr_offset: 0x3000,
            },
            cq_period: 0,
            cq_max_count: 0,
            oi: false,
        },
    ));
    // Faults aimed at the program's commands: every destroy, and the next command.
    env.dev.fail_opcode(Opcode::DESTROY_CQ, Status::INT_ERR);
    env.dev.fail_opcode(Opcode::DEALLOC_PD, Status::INT_ERR);
    env.dev.fail_nth_command(1, Status::NO_RES);
    drop(ctx);
    env.close(0);
    // The kernel releases a closed context's objects whatever else is going on; a CQ left
    // behind would keep its UMEM registered over memory the application may free now.
    let inv = env.dev.inventory();
    assert!(inv.is_empty(), "left after the context closed: {inv}");
    // Per-opcode faults stay armed for the commands that follow.
    let ctx2 = env.open().0;
    let (h, _) = ok(mk(&*ctx2, &AllocPd));
    expect_check(
        raw_destroy(&*ctx2, h),
        Check {
            status: Status::INT_ERR,
            ..check::FAULT_INJECTED
        },
    );
    env.dev.clear_faults();
    ok(raw_destroy(&*ctx2, h));
}

#[test]
fn missing_objects_and_table_types() {
    let mut env = Env::bf3();
    let ctx = env.ctx();
    let kit = Kit::new(&mut env, &ctx);
    // Through DevX every modify, query and destroy names a live object of the handle; the
    // kernel's own commands (uid 0) can name anything.
    let kernel = |inbox: &[u8]| {
        let mut out = [0u8; 0x110];
        env.dev.kernel_command(inbox, &mut out).map(|_| ())
    };
    let named = |op: Opcode, id: u32| {
        let mut b = header(op, 0, 0x110);
        b[8..12].copy_from_slice(&(id & 0xff_ffff).to_be_bytes());
        b
    };
    assert_eq!(
        kernel(&named(Opcode::DESTROY_MKEY, 0x7f)),
        Err(check::NO_SUCH_MKEY)
    );
    assert_eq!(
        kernel(&named(Opcode::MODIFY_SQ, 0xfff)),
        Err(check::NO_SUCH_SQ)
    );
    assert_eq!(
        kernel(&named(Opcode::QUERY_RQ, 0xfff)),
        Err(check::NO_SUCH_RQ)
    );
    assert_eq!(
        kernel(&named(Opcode::DESTROY_RMP, 0xfff)),
        Err(check::NO_SUCH_RMP)
    );
    assert_eq!(
        kernel(&named(Opcode::QP_2ERR, 0xfff)),
        Err(check::NO_SUCH_QP)
    );
    assert_eq!(
        kernel(&named(Opcode::QUERY_CQ, 0x3ff)),
        Err(check::NO_SUCH_CQ)
    );

    let (table, tid) = ok(devx::create(
        &ctx,
        &CreateFlowTable {
            level: 0,
            log_size: 2,
        },
    ));
    let delete = |index: u32| {
        let mut b = header(Opcode::DELETE_FLOW_TABLE_ENTRY, 0, 0x40);
        b[0x14..0x18].copy_from_slice(&tid.to_be_bytes());
        b[0x20..0x24].copy_from_slice(&index.to_be_bytes());
        b
    };
    assert_eq!(kernel(&delete(1)), Err(check::NO_SUCH_FTE));
    let mut wrong_type = header(Opcode::DESTROY_FLOW_TABLE, 0, 0x40);
    wrong_type[0x10] = 1;
    wrong_type[0x14..0x18].copy_from_slice(&tid.to_be_bytes());
    assert_eq!(kernel(&wrong_type), Err(check::TABLE_TYPE_MISMATCH));
    // A group naming the table with another table_type.
    let fg = CreateFlowGroup {
        table_id: tid,
        start_flow_index: 0,
        end_flow_index: 1,
        criteria: OuterMatch::default(),
    };
    let inbox = patched(&fg, |v| v.set(l::create_flow_group_in::table_type, 1));
    expect_check(raw_create(&*ctx, &inbox), check::TABLE_TYPE_MISMATCH);

    // The kernel may destroy a context's object; the context's handle then names nothing.
    let (cq, cqn) = kit.cq();
    ok(kernel(&named(Opcode::DESTROY_CQ, cqn)));
    expect_check(raw_destroy(&*ctx, cq.handle()), check::NO_SUCH_CQ);
    drop(cq);
    ok(table.destroy());
}
