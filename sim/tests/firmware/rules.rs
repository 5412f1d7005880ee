//! Reference rules, DevX rules, contexts.

use mlx5_dpa::devx::{self, ObjHandle, Uar, UarKind, UmemAccess};
use mlx5_dpa::mlx5::cmd::*;
use mlx5_dpa::mlx5::layouts as l;
use mlx5_dpa::mlx5::Opcode;
use mlx5_dpa::mlx5::{Cqn, Pdn, Rqn, Sqn};
use mlx5_sim::fw::check::{self};
use mlx5_sim::ObjRef;
use nix::errno::Errno;

use crate::harness::*;

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
        devx::create(
            &ctx,
            &CreateRqt {
                rqns: vec![Rqn(0x1fff)],
            },
        ),
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
                sqn: Sqn(sqn2),
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
        sqn: Sqn(sqn1),
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
            pd: Pdn(kit1.pdn),
        };
        let inbox = patched(&tis, |v| v.set(l::create_tis_in::uid, u64::from(claimed)));
        expect_check(raw_create(&*ctx2, &inbox), check::WRONG_UID);
    }
    // ctx1 may put anything in uid: it is overwritten with its own.
    let inbox = patched(
        &CreateTis {
            transport_domain: kit1.tdn,
            pd: Pdn(kit1.pdn),
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
        cqn: Cqn(cqn1),
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
                pd: Pdn(kit1.pdn),
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
                pd: Pdn(kit1.pdn),
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

/// Counters: an RQ names its Q counter (no such counter, another context's counter: refused),
/// and a counter in use cannot be deallocated; a bulk of flow counters is refused (the
/// profile offers none); a query of a counter names it as the kernel finds it.
#[test]
fn counters_in_use_and_their_refusals() {
    let mut env = Env::bf3();
    let ctx = env.ctx();
    let kit = Kit::new(&mut env, &ctx);
    let (cq, cqn) = kit.cq();
    let (qc, qid) = ok(devx::create(&ctx, &AllocQCounter));
    let missing = CreateRq {
        counter_set_id: qid + 1,
        ..kit.rq_cmd(cqn)
    };
    expect_check(devx::create(&ctx, &missing), check::NO_SUCH_Q_COUNTER);
    let (other, _) = env.open();
    let (oqc, oqid) = ok(devx::create(&other, &AllocQCounter));
    let foreign = CreateRq {
        counter_set_id: oqid,
        ..kit.rq_cmd(cqn)
    };
    expect_check(devx::create(&ctx, &foreign), check::WRONG_UID);
    let (rq, _) = ok(devx::create(
        &ctx,
        &CreateRq {
            counter_set_id: qid,
            ..kit.rq_cmd(cqn)
        },
    ));
    expect_check(raw_destroy(&*ctx, qc.handle()), check::OBJECT_IN_USE);
    let stats = ok(devx::query(
        &qc,
        &QueryQCounter {
            counter_set_id: qid,
            clear: false,
        },
    ));
    assert_eq!(stats.out_of_buffer, 0);
    ok(rq.destroy());
    ok(qc.destroy());
    ok(oqc.destroy());
    let bulk = patched(&AllocFlowCounter, |v| {
        v.set(l::alloc_flow_counter_in::flow_counter_bulk, 1)
    });
    expect_check(raw_create(&*ctx, &bulk), check::NOT_SUPPORTED);
    let (fc, fid) = ok(devx::create(&ctx, &AllocFlowCounter));
    let t = ok(devx::query(
        &fc,
        &QueryFlowCounter {
            flow_counter_id: fid,
            clear: false,
        },
    ));
    assert_eq!((t.packets, t.octets), (0, 0));
    ok(fc.destroy());
    ok(cq.destroy());
    assert_eq!(env.dev.inventory().count("Q_COUNTER"), 0);
    assert_eq!(env.dev.inventory().count("FLOW_COUNTER"), 0);
}
