//! General objects (the DPA's).

use mlx5_dpa::devx::{self, Devx};
use mlx5_dpa::mlx5::cmd::*;
use mlx5_dpa::mlx5::layouts as l;
use mlx5_dpa::mlx5::{Opcode, Status, View};
use mlx5_sim::fw::check::{self};
use mlx5_sim::ObjRef;
use nix::errno::Errno;
use std::sync::Arc;

use l::obj_type as ot;

use crate::harness::*;

#[test]
fn dpa_process() {
    let mut env = Env::bf3();
    let ctx = env.ctx();
    let kit = Kit::new(&mut env, &ctx);
    let create = |a: DpaProcessAttr| devx::create(&ctx, &CreateGeneralObject(a));
    expect_check(
        create(DpaProcessAttr {
            pd: mlx5_dpa::mlx5::Pdn(0xfff0),
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
    let (win_a, wa) = ok(window(pida, mlx5_dpa::mlx5::Pdn(kit.pdn)));
    expect_check(window(pida, mlx5_dpa::mlx5::Pdn(0xfff0)), check::NO_SUCH_PD);

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
    let (mapping, _) = ok(map(cqn.0));
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
    // alias_object on a general type makes an alias of that type (as snap's DPA thread
    // aliases): a process context read as an alias context names no function of this device.
    let inbox = patched(&p, |v| v.set(l::general_obj_in_cmd_hdr::alias_object, 1));
    expect_check(raw_create(&*ctx, &inbox), check::NOT_SUPPORTED);
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

    let alias = |ctx: &Arc<dyn Devx>, obj_type, object_id, vhca_id, access_key| {
        devx::create(
            ctx,
            &CreateAlias {
                obj_type,
                vhca_id,
                object_id,
                access_key,
            },
        )
    };
    // The process, aliased on the physical function itself (vhca 2).
    let (a, _) = ok(alias(&ctx, ot::DPA_PROCESS, pid, 2, key));
    assert_eq!(env.dev.inventory().count("ALIAS"), 1);
    expect_check(
        alias(&ctx, ot::DPA_PROCESS, pid, 2, [8; 32]),
        check::BAD_ACCESS_KEY,
    );
    expect_check(
        alias(&ctx, ot::DPA_PROCESS, pid + 1, 2, key),
        check::NO_SUCH_ALIAS_GRANT,
    );
    // A grant is for its type: the process's memory (its DUMEM, alias type 0xff13) was not
    // granted yet.
    let dumem = 0x0800_0000 + pid;
    expect_check(
        alias(&ctx, 0xff13, dumem, 2, key),
        check::NO_SUCH_ALIAS_GRANT,
    );
    ok(allow(&*ctx, 0xff13, dumem));
    expect_check(allow(&*ctx, 0xff13, dumem + 1), check::NO_SUCH_OBJECT);
    // Sub-function 1 (vhca 3) aliases the PF's grants; it granted nothing itself; vhca 0x100
    // is no function of this device.
    let sf = env.dev.open_function(1).unwrap();
    let pd_sf = ok(devx::create(&sf, &AllocPd));
    let key_on = |umem_id, key| {
        devx::create(
            &sf,
            &CreateMkey {
                pd: pd_sf.1,
                start_addr: 0x8000_0000,
                len: 64,
                access: MkeyAccess {
                    local_read: true,
                    local_write: true,
                    ..MkeyAccess::default()
                },
                umem_id,
                umem_offset: 0,
                key,
                log_page_size: 12,
            },
        )
    };
    // Without an alias the PF's DUMEM is not the sub-function's to name.
    expect_check(key_on(dumem, 0x43), check::WRONG_UID);
    let (d, did) = ok(alias(&sf, 0xff13, dumem, 2, key));
    expect_check(
        alias(&sf, ot::DPA_PROCESS, pid, 3, key),
        check::NO_SUCH_ALIAS_GRANT,
    );
    expect_check(
        alias(&sf, ot::DPA_PROCESS, pid, 0x100, key),
        check::NOT_SUPPORTED,
    );
    // The alias names the DUMEM for the sub-function: a key over the PF process's memory.
    let mkey = ok(key_on(did, 0x42));
    // The key holds the DUMEM: the process cannot go before it; the alias may.
    expect_check(raw_destroy(&*ctx, process.handle()), check::OBJECT_IN_USE);
    ok(d.destroy());
    ok(mkey.0.destroy());
    ok(pd_sf.0.destroy());
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
