//! Objects, command by command.

use mlx5_dpa::devx::{self, DevxError, UmemAccess};
use mlx5_dpa::mlx5::cmd::*;
use mlx5_dpa::mlx5::layouts as l;
use mlx5_dpa::mlx5::{Cqn, Pdn, Qpn, Rqn, Sqn};
use mlx5_dpa::mlx5::{Status, View};
use mlx5_sim::fw::check::{self};
use nix::errno::Errno;

use crate::harness::*;

#[test]
fn pd_and_transport_domain() {
    let mut env = Env::bf3();
    let ctx = env.ctx();
    let (pd, pdn) = ok(devx::create(&ctx, &AllocPd));
    let (td, tdn) = ok(devx::create(&ctx, &AllocTransportDomain));
    assert!(pdn >= Pdn(1) && tdn >= 1);
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
                pd: Pdn(0xfff0),
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
    let cqc = ok(devx::query(&cq, &QueryCq(Cqn(cqn))));
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
    // Features the profile lacks, and op_mod: CQE compression of 128-byte CQEs, and mini
    // CQEs of another format than the hash one.
    let inbox = patched(&kit.cq_cmd(), |v| {
        v.set(c.at(l::cqc::cqe_comp_en), 1);
        v.set(c.at(l::cqc::cqe_sz), 1);
    });
    expect_check(raw_create(&*ctx, &inbox), check::NOT_SUPPORTED);
    let inbox = patched(&kit.cq_cmd(), |v| {
        v.set(c.at(l::cqc::cqe_comp_en), 1);
        v.set(c.at(l::cqc::mini_cqe_res_format), 1);
    });
    expect_check(raw_create(&*ctx, &inbox), check::NOT_SUPPORTED);
    let inbox = patched(&kit.cq_cmd(), |v| v.set(l::create_cq_in::op_mod, 1));
    expect_check(raw_create(&*ctx, &inbox), check::BAD_OP_MOD);

    // Moderation.
    ok(devx::modify(
        &cq,
        &ModifyCqModeration {
            cqn: Cqn(cqn),
            cq_period: 16,
            cq_max_count: 8,
        },
    ));
    let cqc = ok(devx::query(&cq, &QueryCq(Cqn(cqn))));
    let v = ok(View::<l::cqc::Layout>::new(&cqc));
    assert_eq!(
        (v.get(l::cqc::cq_period), v.get(l::cqc::cq_max_count)),
        (16, 8)
    );
    let m = ModifyCqModeration {
        cqn: Cqn(cqn),
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
    c.wq.pd = Pdn(0xfff0);
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
    let m = |from, to| {
        devx::modify(
            &sq,
            &ModifySq {
                sqn: Sqn(sqn),
                from,
                to,
            },
        )
    };

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
            sqn: Sqn(sqn),
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

    let m = |from, to| {
        devx::modify(
            &rq,
            &ModifyRq {
                rqn: Rqn(rqn),
                from,
                to,
            },
        )
    };
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
                rqn: Rqn(rqn2),
                from: Rst,
                to: Rdy,
            },
        ),
        Errno::EINVAL,
    );

    // RMP: created ready (or reset), over the same wq checks.
    let (rmp, _) = ok(devx::create(
        &ctx,
        &CreateRmp {
            wq: kit.wq(4, 6),
            linked_list: false,
        },
    ));
    let inbox = patched(
        &CreateRmp {
            wq: kit.wq(4, 6),
            linked_list: false,
        },
        |v| v.set(l::create_rmp_in::ctx.at(l::rmpc::state), 3),
    );
    expect_check(raw_create(&*ctx, &inbox), check::BAD_STATE_FIELD);
    expect_check(
        devx::create(
            &ctx,
            &CreateRmp {
                wq: WqAttr {
                    log_wq_stride: 2,
                    ..kit.wq(4, 6)
                },
                linked_list: false,
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
    assert!(qpn >= Qpn(0x4000));
    assert_eq!(qp_state(&qp, qpn.0), 0);

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
    assert_eq!(qp_state(&qp, qpn.0), 1);
    expect_check(go(&rst2init), check::BAD_QP_TRANSITION);
    // Path MTU outside 256..4096 bytes.
    for mtu in [0, 6] {
        expect_check(init2rtr(QpAttr { mtu, ..attr }), check::BAD_MTU);
    }
    ok(init2rtr(attr));
    assert_eq!(qp_state(&qp, qpn.0), 2);
    expect_check(go(&rts2rts), check::BAD_QP_TRANSITION);
    ok(go(&rtr2rts));
    assert_eq!(qp_state(&qp, qpn.0), 3);
    ok(go(&rts2rts));
    assert_eq!(qp_state(&qp, qpn.0), 3);
    ok(go(&to_err));
    assert_eq!(qp_state(&qp, qpn.0), 6);
    expect_check(go(&rtr2rts), check::BAD_QP_TRANSITION);
    ok(go(&to_err));
    ok(go(&to_rst));
    assert_eq!(qp_state(&qp, qpn.0), 0);
    ok(go(&to_rst));
    ok(go(&rst2init));

    // Creation checks.
    expect_check(
        devx::create(
            &ctx,
            &CreateQp {
                pd: Pdn(0xfff0),
                ..kit.qp_cmd(cqn)
            },
        ),
        check::NO_SUCH_PD,
    );
    expect_check(
        devx::create(
            &ctx,
            &CreateQp {
                cqn_snd: Cqn(0x3ff),
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
    let inbox = patched(&kit.qp_cmd(cqn), |v| v.set(q.at(l::qpc::rq_type), 2));
    expect_check(raw_create(&*ctx, &inbox), check::NOT_SUPPORTED);

    // A shared receive queue (rq_type SRQ): the RMP must exist, be the user's and share the
    // QP's PD; the QP holds it.
    expect_check(
        devx::create(
            &ctx,
            &CreateQp {
                srqn: Some(0x7fff),
                ..kit.qp_cmd(cqn)
            },
        ),
        check::NO_SUCH_RMP,
    );
    let (rmp, rmpn) = ok(devx::create(
        &ctx,
        &CreateRmp {
            wq: kit.wq(4, 6),
            linked_list: false,
        },
    ));
    let (srq_qp, _) = ok(devx::create(
        &ctx,
        &CreateQp {
            srqn: Some(rmpn),
            log_rq_size: None,
            ..kit.qp_cmd(cqn)
        },
    ));
    expect_check(raw_destroy(&*ctx, rmp.handle()), check::OBJECT_IN_USE);
    let (pd2, pdn2) = ok(devx::create(&ctx, &AllocPd));
    expect_check(
        devx::create(
            &ctx,
            &CreateQp {
                pd: pdn2,
                srqn: Some(rmpn),
                ..kit.qp_cmd(cqn)
            },
        ),
        check::PD_MISMATCH,
    );
    ok(srq_qp.destroy());
    ok(rmp.destroy());
    ok(pd2.destroy());

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
                pd: Pdn(kit.pdn),
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
                inline_rqn: Rqn(0x1fff),
            },
        ),
        check::NO_SUCH_RQ,
    );
    expect_check(
        devx::create(
            &ctx,
            &CreateTir {
                transport_domain: 0xfff0,
                inline_rqn: Rqn(rqn),
            },
        ),
        check::NO_SUCH_TD,
    );

    // RQT and an indirect TIR over it.
    let (rqt, rqtn) = ok(devx::create(
        &ctx,
        &CreateRqt {
            rqns: vec![Rqn(rqn), Rqn(rqn2)],
        },
    ));
    expect_check(
        devx::create(
            &ctx,
            &CreateRqt {
                rqns: vec![Rqn(rqn), Rqn(0x1fff)],
            },
        ),
        check::NO_SUCH_RQ,
    );
    let r = l::create_rqt_in::rqt_context;
    let two = CreateRqt {
        rqns: vec![Rqn(rqn), Rqn(rqn2)],
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
        inline_rqn: Rqn(0),
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
        flow_counter: None,
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
