//! DPA RDMA between two device models linked by a cable (RoCE v2 frames on the wire): each
//! side exports its RDMA (`doca_rdma_export`) and connects to the other's details
//! (`doca_rdma_connect`); DPA kernels post every operation and poll the completions
//! (`fw-blobs/src/doca_kernels.c` `rdma_kernel`, `poll_kernel`).

use crate::doca_common;
use crate::dpa_common::addressed;

use doca_common::{Side, WAIT};
use mlx5_dpa::doca::{
    DocaError, Dpa, DpaAttr, RdmaConnDetails, SyncEventAttr, RDMA_CONN_DETAILS_LEN,
};
use mlx5_dpa::dpa::app::App;
use mlx5_dpa::dpa::msg_stream::MsgOutput;

const KERNELS: &[u8] = include_bytes!("../../fw-blobs/bin/doca_kernels.elf");
const ALL: u64 = u64::MAX;

fn start(d: &mlx5_sim::Device) -> Dpa {
    let attr = DpaAttr {
        log_output: MsgOutput::Collect,
        ..DpaAttr::default()
    };
    let app = App::from_device_elf("doca_kernels", KERNELS).unwrap();
    Dpa::start(&d.open_devx(), &app, &attr).unwrap()
}

#[test]
fn dpa_rdma_between_two_linked_models() {
    let (da, db) = (addressed(1, 1), addressed(2, 2));
    mlx5_sim::Device::link(&da, &db);
    let (mut sa, mut sb) = (Side::new(start(&da)), Side::new(start(&db)));
    let side = |d: &Dpa| {
        let mut comp = d.completion_create(32).unwrap();
        comp.start().unwrap();
        let mut rdma = d.rdma_create(16).unwrap();
        rdma.attach(&comp).unwrap();
        rdma.start().unwrap();
        let buf = d.mem_alloc(1024).unwrap();
        d.memset(buf.daddr(), 0, 1024).unwrap();
        let map = d.mmap_dpa(&buf).unwrap();
        (comp, rdma, buf, map)
    };
    let (ca, mut ra, abuf, amap) = side(&sa.dpa);
    let (cb, mut rb, bbuf, bmap) = side(&sb.dpa);

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
    let am = (amap.dpa_handle(), abuf.daddr());
    let bm = (bmap.dpa_handle(), bbuf.daddr());
    let data: Vec<u8> = (0..100u32).map(|i| (i * 17 + 9) as u8).collect();
    sa.dpa.h2d_memcpy(abuf.daddr(), &data).unwrap();

    // SEND with immediate into B's posted receive.
    sb.op([rbh, 0, bm.0, bm.1, 0, 0, 128, 0]).unwrap();
    sa.op([rah, 2, am.0, am.1, 0, 0, 100, 0x5151]).unwrap();
    assert_eq!(sb.poll(&cb), [3, 0x5151, 0, 0]);
    assert_eq!(sa.poll(&ca)[0], 0);
    let mut got = vec![0u8; 100];
    sb.dpa.d2h_memcpy(&mut got, bbuf.daddr()).unwrap();
    assert_eq!(got, data, "send");

    // WRITE into B at 256, READ it back into A at 512.
    sa.op([rah, 3, am.0, am.1, bm.0, bm.1 + 256, 64, 0])
        .unwrap();
    assert_eq!(sa.poll(&ca)[0], 0);
    sa.op([rah, 5, am.0, am.1 + 512, bm.0, bm.1 + 256, 64, 0])
        .unwrap();
    assert_eq!(sa.poll(&ca)[0], 0);
    sa.dpa
        .d2h_memcpy(&mut got[..64], abuf.daddr() + 512)
        .unwrap();
    assert_eq!(&got[..64], &data[..64], "write then read");

    // Two fetch-and-adds of 5 on B's word at 768.
    for _ in 0..2 {
        sa.op([rah, 6, am.0, am.1, bm.0, bm.1 + 768, 8, 5]).unwrap();
        assert_eq!(sa.poll(&ca)[0], 0);
    }
    let mut w = [0u8; 8];
    sb.dpa.d2h_memcpy(&mut w, bbuf.daddr() + 768).unwrap();
    assert_eq!(u64::from_le_bytes(w), 10, "atomic");

    // A's kernels set B's exported event to 40, then add 2; B's host sees 42.
    let ev = sb
        .dpa
        .sync_event(SyncEventAttr {
            publisher_remote: true,
            subscriber_cpu: true,
            ..SyncEventAttr::default()
        })
        .unwrap();
    let remote = sa.dpa.remote_event(ev.export_remote().unwrap()).unwrap();
    sa.op([rah, 7, 0, 0, 0, remote.dpa_handle(), 0, 40])
        .unwrap();
    assert_eq!(sa.poll(&ca)[0], 0);
    sa.op([rah, 8, 0, 0, 0, remote.dpa_handle(), 0, 2]).unwrap();
    assert_eq!(sa.poll(&ca)[0], 0);
    assert_eq!(ev.wait_gt(41, ALL, WAIT).unwrap(), 42);

    // It all crossed the cable as frames.
    assert!(da.stats().port.tx_frames > 0 && db.stats().port.tx_frames > 0);
    sa.dpa.peek_at_last_error().unwrap();
    sb.dpa.peek_at_last_error().unwrap();
    drop((ra, rb));
    drop((ca, cb));
    // The contexts go while the engines still run their threads' teardown.
    drop((remote, ev, amap, bmap, abuf, bbuf));
    drop((sa, sb));
    da.stop_engine();
    db.stop_engine();
}
