//! DPA RDMA between two device models linked by a cable (RoCE v2 frames on the wire): each
//! side exports its RDMA (`doca_rdma_export`) and connects to the other's details
//! (`doca_rdma_connect`); DPA kernels post every operation and poll the completions
//! (`fw-blobs/src/doca_kernels.c` `rdma_kernel`, `poll_kernel`).

use std::time::Duration;

use mlx5_dpa::doca::{
    DocaError, Dpa, DpaAttr, KernelArg, RdmaConnDetails, SyncEvent, SyncEventAttr,
    RDMA_CONN_DETAILS_LEN,
};
use mlx5_dpa::dpa::app::App;
use mlx5_dpa::dpa::msg_stream::MsgOutput;

const KERNELS: &[u8] = include_bytes!("../fw-blobs/bin/doca_kernels.elf");
const WAIT: Duration = Duration::from_secs(20);
const ALL: u64 = u64::MAX;

fn model(mac_last: u8, ip_last: u8) -> mlx5_sim::Device {
    let d = mlx5_sim::Device::with_profile("bf3").expect("bf3");
    d.set_port_address([0x02, 0, 0x5e, 0, 0, mac_last], [10, 0, 0, ip_last]);
    d.start_engine();
    d
}

fn start(d: &mlx5_sim::Device) -> Dpa {
    let attr = DpaAttr {
        log_output: MsgOutput::Collect,
        ..DpaAttr::default()
    };
    let app = App::from_device_elf("doca_kernels", KERNELS).unwrap();
    Dpa::start(&d.open_devx(), &app, &attr).unwrap()
}

/// Runs `rdma_kernel` once on `dpa` and waits for it.
fn op(dpa: &Dpa, done: &SyncEvent, n: &mut u64, args: [u64; 8]) {
    *n += 1;
    dpa.kernel_launch_update_add(
        None,
        Some((done, 1)),
        1,
        "rdma_kernel",
        &args.map(KernelArg::U64),
    )
    .unwrap();
    done.wait_gt(*n - 1, ALL, WAIT).unwrap();
}

/// One completion of `comp`, through `poll_kernel`: (type, immediate, user data, wr index).
fn poll(
    dpa: &Dpa,
    comp: u64,
    out: &mlx5_dpa::dpa::DpaBuf,
    ev: &SyncEvent,
    n: &mut u64,
) -> [u64; 4] {
    *n += 1;
    dpa.kernel_launch_update_set(
        None,
        None,
        1,
        "poll_kernel",
        &[comp, out.daddr(), ev.dpa_handle().unwrap()].map(KernelArg::U64),
    )
    .unwrap();
    ev.wait_gt(*n - 1, ALL, WAIT).unwrap();
    let mut b = [0u8; 32];
    dpa.d2h_memcpy(&mut b, out.daddr()).unwrap();
    std::array::from_fn(|i| u64::from_le_bytes(b[8 * i..8 * i + 8].try_into().unwrap()))
}

#[test]
fn dpa_rdma_between_two_linked_models() {
    let (da, db) = (model(1, 1), model(2, 2));
    mlx5_sim::Device::link(&da, &db);
    let (a, b) = (start(&da), start(&db));
    let side = |d: &Dpa| {
        let mut comp = d.completion_create(32).unwrap();
        comp.start().unwrap();
        let mut rdma = d.rdma_create(16).unwrap();
        rdma.attach(&comp).unwrap();
        rdma.start().unwrap();
        let buf = d.mem_alloc(1024).unwrap();
        d.memset(buf.daddr(), 0, 1024).unwrap();
        let map = d.mmap_dpa(&buf).unwrap();
        let out = d.mem_alloc(32).unwrap();
        let done = d.sync_event(SyncEventAttr::dpa_to_cpu()).unwrap();
        let polled = d.sync_event(SyncEventAttr::dpa_to_cpu()).unwrap();
        (comp, rdma, buf, map, out, done, polled)
    };
    let (ca, mut ra, abuf, amap, aout, adone, apolled) = side(&a);
    let (cb, mut rb, bbuf, bmap, bout, bdone, bpolled) = side(&b);

    // The details travel as bytes, as DOCA's do; each names its own device's address.
    let (ea, eb) = (ra.export().unwrap(), rb.export().unwrap());
    assert_eq!((ea.id(), eb.id()), (0, 0));
    let (da_, db_) = (ea.details(), eb.details());
    assert_ne!((da_.gid, da_.mac), (db_.gid, db_.mac));
    let wire = db_.to_bytes();
    assert_eq!(RdmaConnDetails::from_bytes(&wire).unwrap(), db_);
    assert!(matches!(
        RdmaConnDetails::from_bytes(&wire[..RDMA_CONN_DETAILS_LEN - 1]),
        Err(DocaError::InvalidValue(_))
    ));
    // Its one connection is exported: no second export.
    assert!(matches!(ra.export(), Err(DocaError::NotPermitted(_))));
    ra.connect_to(&ea, &RdmaConnDetails::from_bytes(&wire).unwrap())
        .unwrap();
    rb.connect_to(&eb, &RdmaConnDetails::from_bytes(&da_.to_bytes()).unwrap())
        .unwrap();
    // A connected connection is not connected again.
    assert!(matches!(
        ra.connect_to(&ea, &db_),
        Err(DocaError::NotPermitted(_))
    ));

    let (rah, rbh) = (ra.dpa_handle().unwrap(), rb.dpa_handle().unwrap());
    let (cah, cbh) = (ca.dpa_handle().unwrap(), cb.dpa_handle().unwrap());
    let am = (amap.dpa_handle(), abuf.daddr());
    let bm = (bmap.dpa_handle(), bbuf.daddr());
    let (mut an, mut bn, mut ap, mut bp) = (0, 0, 0, 0);
    let data: Vec<u8> = (0..100u32).map(|i| (i * 17 + 9) as u8).collect();
    a.h2d_memcpy(abuf.daddr(), &data).unwrap();

    // SEND with immediate into B's posted receive.
    op(&b, &bdone, &mut bn, [rbh, 0, bm.0, bm.1, 0, 0, 128, 0]);
    op(&a, &adone, &mut an, [rah, 2, am.0, am.1, 0, 0, 100, 0x5151]);
    assert_eq!(poll(&b, cbh, &bout, &bpolled, &mut bp), [3, 0x5151, 0, 0]);
    assert_eq!(poll(&a, cah, &aout, &apolled, &mut ap)[0], 0);
    let mut got = vec![0u8; 100];
    b.d2h_memcpy(&mut got, bbuf.daddr()).unwrap();
    assert_eq!(got, data, "send");

    // WRITE into B at 256, READ it back into A at 512.
    op(
        &a,
        &adone,
        &mut an,
        [rah, 3, am.0, am.1, bm.0, bm.1 + 256, 64, 0],
    );
    assert_eq!(poll(&a, cah, &aout, &apolled, &mut ap)[0], 0);
    op(
        &a,
        &adone,
        &mut an,
        [rah, 5, am.0, am.1 + 512, bm.0, bm.1 + 256, 64, 0],
    );
    assert_eq!(poll(&a, cah, &aout, &apolled, &mut ap)[0], 0);
    a.d2h_memcpy(&mut got[..64], abuf.daddr() + 512).unwrap();
    assert_eq!(&got[..64], &data[..64], "write then read");

    // Two fetch-and-adds of 5 on B's word at 768.
    for _ in 0..2 {
        op(
            &a,
            &adone,
            &mut an,
            [rah, 6, am.0, am.1, bm.0, bm.1 + 768, 8, 5],
        );
        assert_eq!(poll(&a, cah, &aout, &apolled, &mut ap)[0], 0);
    }
    let mut w = [0u8; 8];
    b.d2h_memcpy(&mut w, bbuf.daddr() + 768).unwrap();
    assert_eq!(u64::from_le_bytes(w), 10, "atomic");

    // A's kernels set B's exported event to 40, then add 2; B's host sees 42.
    let ev = b
        .sync_event(SyncEventAttr {
            publisher_remote: true,
            subscriber_cpu: true,
            ..SyncEventAttr::default()
        })
        .unwrap();
    let remote = a.remote_event(ev.export_remote().unwrap()).unwrap();
    op(
        &a,
        &adone,
        &mut an,
        [rah, 7, 0, 0, 0, remote.dpa_handle(), 0, 40],
    );
    assert_eq!(poll(&a, cah, &aout, &apolled, &mut ap)[0], 0);
    op(
        &a,
        &adone,
        &mut an,
        [rah, 8, 0, 0, 0, remote.dpa_handle(), 0, 2],
    );
    assert_eq!(poll(&a, cah, &aout, &apolled, &mut ap)[0], 0);
    assert_eq!(ev.wait_gt(41, ALL, WAIT).unwrap(), 42);

    // It all crossed the cable as frames.
    assert!(da.stats().port.tx_frames > 0 && db.stats().port.tx_frames > 0);
    a.peek_at_last_error().unwrap();
    b.peek_at_last_error().unwrap();
    drop((ra, rb));
    drop((ca, cb));
    // The contexts go while the engines still run their threads' teardown.
    drop((
        remote, ev, adone, bdone, apolled, bpolled, aout, bout, amap, bmap, abuf, bbuf,
    ));
    drop((a, b));
    da.stop_engine();
    db.stop_engine();
}
