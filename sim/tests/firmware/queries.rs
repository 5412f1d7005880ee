//! Device queries and mailbox-level checks.

use mlx5_dpa::devx::{self};
use mlx5_dpa::mlx5::cmd::*;
use mlx5_dpa::mlx5::layouts as l;
use mlx5_dpa::mlx5::{Opcode, Status, View};
use mlx5_sim::fw::check::{self};
use nix::errno::Errno;

use l::obj_type as ot;

use crate::harness::*;

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

    // The pages DPDK's mlx5 driver reads: Ethernet offloads (no header inlining required),
    // NIC flow tables (receive tables with flow tags, no software ownership, no transmit
    // tables).
    let page = |cap_type| {
        ok(devx::exec(
            &*ctx,
            &QueryHcaCap {
                cap_type,
                current: true,
            },
        ))
    };
    let eth = page(QueryHcaCap::ETHERNET_OFFLOADS);
    let e = ok(View::<l::per_protocol_networking_offload_caps::Layout>::new(&eth));
    assert_eq!(
        e.get(l::per_protocol_networking_offload_caps::wqe_inline_mode),
        2
    );
    let at = page(QueryHcaCap::ATOMIC);
    let a = ok(View::<l::atomic_caps::Layout>::new(&at));
    assert_eq!(
        a.get(l::atomic_caps::atomic_operations),
        0b11,
        "CAS and FAA"
    );
    assert_eq!(a.get(l::atomic_caps::atomic_size_qp), 1 << 3, "8 bytes");
    let dm = page(QueryHcaCap::DEVICE_MEMORY);
    let d = ok(View::<l::device_mem_cap::Layout>::new(&dm));
    assert_eq!(d.get(l::device_mem_cap::memic), 0, "no device memory");
    let ft = page(QueryHcaCap::NIC_FLOW_TABLE);
    let f = ok(View::<l::flow_table_nic_cap::Layout>::new(&ft));
    let rx = l::flow_table_nic_cap::flow_table_properties_nic_receive;
    let tx = l::flow_table_nic_cap::flow_table_properties_nic_transmit;
    assert_eq!(f.get(rx.at(l::flow_table_prop_layout::ft_support)), 1);
    assert_eq!(f.get(rx.at(l::flow_table_prop_layout::flow_tag)), 1);
    assert_eq!(f.get(rx.at(l::flow_table_prop_layout::sw_owner)), 0);
    assert_eq!(f.get(tx.at(l::flow_table_prop_layout::ft_support)), 0);
    // A capability type the device lacks (the e-switch flow tables).
    expect_check(
        devx::exec(
            &*ctx,
            &QueryHcaCap {
                cap_type: 0x8,
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
    expect_check(
        raw_general(&*ctx, &ok(q.clone()), 16),
        check::OUTBOX_TOO_SHORT,
    );
    assert_eq!(check::OUTBOX_TOO_SHORT.status, Status::BAD_OUTP_LEN);
    // Room for the header and cmd_hca_cap's layout but not the whole 4 KiB union: answered,
    // cut to the outbox (rdma-core's test suite asks real firmware with 2064 bytes).
    let q = ok(q);
    let full = ok(raw_general(&*ctx, &q, 0x1010));
    let cut = ok(raw_general(&*ctx, &q, 0x810));
    assert_eq!(cut[..], full[..0x810]);
    let caps = View::<l::cmd_hca_cap::Layout>::new(&cut[0x10..]).expect("cap layout");
    assert_ne!(caps.get(l::cmd_hca_cap::log_max_qp), 0);
    let least = 0x10 + <l::cmd_hca_cap::Layout as mlx5_dpa::mlx5::layout::Layout>::SIZE_BYTES;
    ok(raw_general(&*ctx, &q, least));
    expect_check(raw_general(&*ctx, &q, least - 1), check::OUTBOX_TOO_SHORT);

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
