//! Fault injection, capacity, inventory.

use mlx5_dpa::devx::{self, UarKind, UmemAccess};
use mlx5_dpa::mlx5::cmd::*;
use mlx5_dpa::mlx5::layouts as l;
use mlx5_dpa::mlx5::{Opcode, Status};
use mlx5_sim::fw::check::{self, Check};
use mlx5_sim::profile::Profile;
use nix::errno::Errno;

use crate::harness::*;

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
            cc: false,
            cqe_comp: false,
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
            counter_set_id: 0,
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
            flow_counter: None,
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
            srqn: None,
            mem: ring(0x3000),
            user_index: 0,
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
            sig_umem_id: 0,
            sig_umem_offset: 0,
            sig_size: 0,
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
            cc: false,
            cqe_comp: false,
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
            cc: false,
            cqe_comp: false,
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
