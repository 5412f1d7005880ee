//! DPA RDMAs with several connections and shared receive queues, from DPA code on the device
//! model (`fw-blobs/src/doca_kernels.c` `rdma_kernel`, `poll_kernel`): the connections of one
//! RDMA share its receive queue and completions name their connection as user data; RDMAs
//! created on one [`DpaRdmaSrq`] take its receives in ring order; connection ids out of range
//! stop the thread; the DOCA 2.6 form `doca_dpa_dev_rdma_srq_post_receive`.

use crate::doca_common;
use crate::dpa_common;

use doca_common::{Side, WAIT};
use dpa_common::model;
use mlx5_dpa::doca::{
    CompletionContext, DocaError, Dpa, DpaAttr, DpaRdma, KernelArg, SyncEventAttr,
    MAX_RDMA_CONNECTIONS,
};
use mlx5_dpa::dpa::app::App;
use mlx5_dpa::dpa::msg_stream::MsgOutput;
use mlx5_dpa::dpa::DpaBuf;

const KERNELS: &[u8] = include_bytes!("../../fw-blobs/bin/doca_kernels.elf");
const KERNELS_26: &[u8] = include_bytes!("../../fw-blobs/bin/doca26_kernels.elf");
const ALL: u64 = u64::MAX;

/// `rdma_kernel` operations.
const RECV: u64 = 0;
const SEND: u64 = 1;
const SEND_IMM: u64 = 2;
const WRITE: u64 = 3;
/// DOCA_DPA_DEV_COMP_SEND and DOCA_DPA_DEV_COMP_RECV_SEND / _RECV_SEND_IMM.
const COMP_SEND: u64 = 0;
const COMP_RECV: u64 = 2;
const COMP_RECV_IMM: u64 = 3;

fn start(ctx: &std::sync::Arc<dyn mlx5_dpa::devx::Devx>, elf: &'static [u8], name: &str) -> Dpa {
    let attr = DpaAttr {
        log_output: MsgOutput::Collect,
        // Faults on purpose leave no files (the prefix's directory does not exist).
        fatal_file_prefix: Some(
            std::env::temp_dir()
                .join("doca-dpa-conns-tests-no-such-directory")
                .join("doca_dpa_fatal"),
        ),
        ..DpaAttr::default()
    };
    Dpa::start(ctx, &App::from_device_elf(name, elf).unwrap(), &attr).unwrap()
}

fn comp(d: &Dpa) -> CompletionContext {
    let mut c = d.completion_create(64).unwrap();
    c.start().unwrap();
    c
}

fn rdma(d: &Dpa, comp: &CompletionContext, conns: u32) -> DpaRdma {
    let mut r = d.rdma_create(16).unwrap();
    r.set_max_connections(conns).unwrap();
    r.attach(comp).unwrap();
    r.start().unwrap();
    r
}

/// A DPA buffer of `len` zeroed bytes and its map: (map handle, address, buffer, map).
fn memory(d: &Dpa, len: u64) -> (u64, u64, DpaBuf, mlx5_dpa::doca::DpaMmap) {
    let buf = d.mem_alloc(len).unwrap();
    d.memset(buf.daddr(), 0, len as usize).unwrap();
    let map = d.mmap_dpa(&buf).unwrap();
    (map.dpa_handle(), buf.daddr(), buf, map)
}

#[test]
fn connections_of_one_rdma_share_its_receive_queue() {
    let (_d, ctx) = model("bf3");
    let mut a = Side::new(start(&ctx, KERNELS, "doca_kernels"));
    let mut b = Side::new(start(&ctx, KERNELS, "doca_kernels"));
    // A: one RDMA with two connections; B: one RDMA per connection.
    let ca = comp(&a.dpa);
    let mut ra = rdma(&a.dpa, &ca, 2);
    assert_eq!(ra.max_connections(), 2);
    let (cb0, cb1) = (comp(&b.dpa), comp(&b.dpa));
    let (mut rb0, mut rb1) = (rdma(&b.dpa, &cb0, 1), rdma(&b.dpa, &cb1, 1));
    assert_eq!(ra.connect(&mut rb0).unwrap(), (0, 0));
    assert_eq!(ra.connect(&mut rb1).unwrap(), (1, 0));
    // Every connection is taken now.
    let (cb2, mut rb2) = {
        let c = comp(&b.dpa);
        let r = rdma(&b.dpa, &c, 1);
        (c, r)
    };
    assert!(matches!(
        ra.connect(&mut rb2),
        Err(DocaError::NotPermitted(_))
    ));
    assert!(matches!(
        ra.set_max_connections(3),
        Err(DocaError::NotPermitted(_))
    ));
    let (rah, rb0h, rb1h) = (
        ra.dpa_handle().unwrap(),
        rb0.dpa_handle().unwrap(),
        rb1.dpa_handle().unwrap(),
    );
    let (am, aaddr, _abuf, _amap) = memory(&a.dpa, 1024);
    let (bm, baddr, _bbuf, _bmap) = memory(&b.dpa, 1024);
    let msgs: [&[u8]; 3] = [b"over connection 0", b"over connection 1", b"0 again"];
    for (i, m) in msgs.iter().enumerate() {
        b.dpa.h2d_memcpy(baddr + 64 * i as u64, m).unwrap();
    }

    // A posts three receives (slots 0, 1, 2 of 128 bytes); they go to the queue its two
    // connections share.
    for i in 0..3 {
        a.op([rah, RECV, am, aaddr + 128 * i, 0, 0, 128, 0])
            .unwrap();
    }
    // B sends over its two RDMAs: 0, 1, then 0 again with an immediate.
    let sends = [(rb0h, SEND, 0), (rb1h, SEND, 0), (rb0h, SEND_IMM, 0x77)];
    for (i, &(h, op, imm)) in sends.iter().enumerate() {
        let len = msgs[i].len() as u64;
        b.op([h, op, bm, baddr + 64 * i as u64, 0, 0, len, imm])
            .unwrap();
        // Each completion names the connection (user data) and the receive it filled.
        let (kind, conn) = if op == SEND_IMM {
            (COMP_RECV_IMM, 0)
        } else {
            (COMP_RECV, i as u64 % 2)
        };
        assert_eq!(a.poll(&ca), [kind, imm, conn, i as u64], "message {i}");
        let mut got = vec![0u8; msgs[i].len()];
        a.dpa.d2h_memcpy(&mut got, aaddr + 128 * i as u64).unwrap();
        assert_eq!(got, msgs[i], "message {i}");
    }
    assert_eq!(b.poll(&cb0)[0], COMP_SEND);
    assert_eq!(b.poll(&cb1)[0], COMP_SEND);
    assert_eq!(b.poll(&cb0)[0], COMP_SEND);

    // A writes over connection 1 into B; the completion names connection 1.
    a.dpa.h2d_memcpy(aaddr + 512, b"written by A").unwrap();
    a.op([rah, WRITE | 1 << 8, am, aaddr + 512, bm, baddr + 512, 12, 0])
        .unwrap();
    // Its WR index counts that connection's own sends.
    assert_eq!(a.poll(&ca), [COMP_SEND, 0, 1, 0]);
    let mut got = [0u8; 12];
    b.dpa.d2h_memcpy(&mut got, baddr + 512).unwrap();
    assert_eq!(&got, b"written by A");

    // Acknowledging the three receives frees the queue for more.
    a.op([rah, 9, 0, 0, 0, 0, 0, 3]).unwrap();
    a.dpa.peek_at_last_error().unwrap();

    // A connection id the RDMA does not have stops the thread; the context reports it.
    let e = a.op([rah, SEND | 2 << 8, am, aaddr, 0, 0, 8, 0]);
    assert!(e.is_err(), "{e:?}");
    assert!(a.dpa.peek_at_last_error().is_err());
    drop((ra, rb0, rb1, rb2, cb2));
}

#[test]
fn a_connection_not_yet_connected_stops_the_thread() {
    let (_d, ctx) = model("bf3");
    let mut a = Side::new(start(&ctx, KERNELS, "doca_kernels"));
    let b = Side::new(start(&ctx, KERNELS, "doca_kernels"));
    let ca = comp(&a.dpa);
    let mut ra = rdma(&a.dpa, &ca, 2);
    let cb = comp(&b.dpa);
    let mut rb = rdma(&b.dpa, &cb, 1);
    ra.connect(&mut rb).unwrap();
    let (am, aaddr, _abuf, _amap) = memory(&a.dpa, 64);
    // Connection 1 exists but is not connected.
    let rah = ra.dpa_handle().unwrap();
    assert!(a.op([rah, SEND | 1 << 8, am, aaddr, 0, 0, 8, 0]).is_err());
    assert!(a.dpa.peek_at_last_error().is_err());
    drop((ra, rb));
}

#[test]
fn max_connections_is_bounded() {
    let (_d, ctx) = model("bf3");
    let a = start(&ctx, KERNELS, "doca_kernels");
    let mut r = a.rdma_create(4).unwrap();
    assert!(matches!(
        r.set_max_connections(0),
        Err(DocaError::InvalidValue(_))
    ));
    assert!(matches!(
        r.set_max_connections(MAX_RDMA_CONNECTIONS + 1),
        Err(DocaError::InvalidValue(_))
    ));
    r.set_max_connections(MAX_RDMA_CONNECTIONS).unwrap();
    let c = comp(&a);
    r.attach(&c).unwrap();
    r.start().unwrap();
    assert!((0..MAX_RDMA_CONNECTIONS).all(|i| r.qpn(i).is_some()));
    assert!(r.qpn(MAX_RDMA_CONNECTIONS).is_none());
}

#[test]
fn rdmas_on_one_shared_receive_queue_take_its_receives_in_order() {
    let (_d, ctx) = model("bf3");
    let mut a = Side::new(start(&ctx, KERNELS, "doca_kernels"));
    let mut b = Side::new(start(&ctx, KERNELS, "doca_kernels"));
    let srq = a.dpa.rdma_srq_create(6).unwrap();
    assert_eq!(srq.size(), 8);
    let (ca1, ca2) = (comp(&a.dpa), comp(&a.dpa));
    let mk = |c: &CompletionContext| {
        let mut r = a.dpa.rdma_create_with_srq(&srq, 8).unwrap();
        r.attach(c).unwrap();
        r.start().unwrap();
        r
    };
    let (mut r1, mut r2) = (mk(&ca1), mk(&ca2));
    let (cb, cb2) = (comp(&b.dpa), comp(&b.dpa));
    let (mut p1, mut p2) = (rdma(&b.dpa, &cb, 1), rdma(&b.dpa, &cb2, 1));
    r1.connect(&mut p1).unwrap();
    r2.connect(&mut p2).unwrap();
    let (am, aaddr, _abuf, _amap) = memory(&a.dpa, 512);
    let (bm, baddr, _bbuf, _bmap) = memory(&b.dpa, 512);
    b.dpa.h2d_memcpy(baddr, b"to r2 first").unwrap();
    b.dpa.h2d_memcpy(baddr + 64, b"then r1").unwrap();
    // Two receives posted through r1 land in the shared queue.
    let r1h = r1.dpa_handle().unwrap();
    a.op([r1h, RECV, am, aaddr, 0, 0, 64, 0]).unwrap();
    a.op([r1h, RECV, am, aaddr + 64, 0, 0, 64, 0]).unwrap();
    // r2's peer sends first: r2 takes WQE 0, then r1 takes WQE 1.
    b.op([p2.dpa_handle().unwrap(), SEND, bm, baddr, 0, 0, 11, 0])
        .unwrap();
    assert_eq!(a.poll(&ca2), [COMP_RECV, 0, 0, 0]);
    b.op([p1.dpa_handle().unwrap(), SEND, bm, baddr + 64, 0, 0, 7, 0])
        .unwrap();
    assert_eq!(a.poll(&ca1), [COMP_RECV, 0, 0, 1]);
    let mut got = [0u8; 11];
    a.dpa.d2h_memcpy(&mut got, aaddr).unwrap();
    assert_eq!(&got, b"to r2 first");
    let mut got = [0u8; 7];
    a.dpa.d2h_memcpy(&mut got, aaddr + 64).unwrap();
    assert_eq!(&got, b"then r1");

    // Another context's shared queue is refused.
    let other = b.dpa.rdma_srq_create(4).unwrap();
    assert!(matches!(
        a.dpa.rdma_create_with_srq(&other, 4),
        Err(DocaError::NotPermitted(_))
    ));
    a.dpa.peek_at_last_error().unwrap();
    drop((r1, r2, p1, p2));
}

#[test]
fn doca_2_6_srq_post_receive() {
    let (_d, ctx) = model("bf3");
    let a = start(&ctx, KERNELS_26, "doca26_kernels");
    let b = start(&ctx, KERNELS_26, "doca26_kernels");
    let srq = a.rdma_srq_create(4).unwrap();
    let ca = comp(&a);
    let mut ra = a.rdma_create_with_srq(&srq, 4).unwrap();
    ra.attach(&ca).unwrap();
    ra.start().unwrap();
    let cb = comp(&b);
    let mut rb = rdma(&b, &cb, 1);
    ra.connect(&mut rb).unwrap();
    let (_, aaddr, _abuf, amap) = memory(&a, 256);
    let (_, baddr, _bbuf, bmap) = memory(&b, 256);
    let arr = |d: &Dpa, m: &mlx5_dpa::doca::DpaMmap| {
        let mut x = d.buf_arr_create(1).unwrap();
        x.set_params(m, m.range().1, 0).unwrap();
        x.start().unwrap();
        x
    };
    let (aarr, barr) = (arr(&a, &amap), arr(&b, &bmap));
    let (adone, bdone) = (
        a.sync_event(SyncEventAttr::dpa_to_cpu()).unwrap(),
        b.sync_event(SyncEventAttr::dpa_to_cpu()).unwrap(),
    );
    // A posts a receive at offset 32 through the SRQ's own handle.
    a.kernel_launch_update_set(
        None,
        Some((&adone, 1)),
        1,
        "v26_srq_receive_kernel",
        &[srq.dpa_handle(), aarr.dpa_handle().unwrap(), 32, 64].map(KernelArg::U64),
    )
    .unwrap();
    adone.wait_gt(0, ALL, WAIT).unwrap();
    // B's 2.6 send (op 1) of 16 bytes at offset 0, synchronized.
    b.h2d_memcpy(baddr, b"srq post receive").unwrap();
    b.kernel_launch_update_set(
        None,
        Some((&bdone, 1)),
        1,
        "v26_rdma_kernel",
        &[
            rb.dpa_handle().unwrap(),
            1,
            barr.dpa_handle().unwrap(),
            0,
            0,
            0,
            16,
            0,
        ]
        .map(KernelArg::U64),
    )
    .unwrap();
    bdone.wait_gt(0, ALL, WAIT).unwrap();
    let mut got = [0u8; 16];
    a.d2h_memcpy(&mut got, aaddr + 32).unwrap();
    assert_eq!(&got, b"srq post receive");
    a.peek_at_last_error().unwrap();
    b.peek_at_last_error().unwrap();
    drop((ra, rb));
}
