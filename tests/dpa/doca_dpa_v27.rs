//! DOCA 2.7's (and 2.8's) device RDMA calls on the device model, with the kernel of
//! `fw-blobs/src/doca27_kernels.c` (built with `DOCA_VERSION_MINOR=7`): every 2.7 operation
//! between two contexts on memory maps and addresses, without a connection id, asking for its
//! completion and followed by `doca_dpa_dev_rdma_synchronize`; a write whose first half asks
//! for no completion.

use crate::doca_dpa_v26::{launch, rdma, start_app};
use crate::dpa_common;

use dpa_common::model;
use mlx5_dpa::doca::{DocaError, Dpa, SyncEvent, SyncEventAttr};

const KERNELS: &[u8] = include_bytes!("../../fw-blobs/bin/doca27_kernels.elf");

fn start(ctx: &std::sync::Arc<dyn mlx5_dpa::devx::Devx>) -> Dpa {
    start_app(ctx, "doca27_kernels", KERNELS)
}

/// Launches `v27_rdma_kernel` on `d` and waits for it to end.
fn op(d: &Dpa, done: &SyncEvent, n: &mut u64, args: [u64; 8]) -> Result<(), DocaError> {
    launch(d, "v27_rdma_kernel", done, n, args)
}

#[test]
fn doca_2_7_rdma_calls_on_maps_synchronize() {
    let (_d, ctx) = model("bf3");
    let a = start(&ctx);
    let b = start(&ctx);
    let (_ca, mut ra) = rdma(&a);
    let (_cb, mut rb) = rdma(&b);
    ra.connect(&mut rb).unwrap();
    let (rah, rbh) = (ra.dpa_handle().unwrap(), rb.dpa_handle().unwrap());

    // A: 512 bytes of host memory (host addresses); B: 512 bytes of DPA memory (DPA
    // addresses), which A names with B's map handle.
    let amap = a.mmap_host(512).unwrap();
    let amem = amap.host_memory().unwrap();
    let data: Vec<u8> = (0..64u32).map(|i| (i * 29 + 7) as u8).collect();
    amem.buf().write(8, &data).unwrap();
    let bmem = b.mem_alloc(512).unwrap();
    b.memset(bmem.daddr(), 0, 512).unwrap();
    let bmap = b.mmap_dpa(&bmem).unwrap();
    let (ah, abase) = (amap.dpa_handle(), amap.range().0);
    let (bh, bbase) = (bmap.dpa_handle(), bmap.range().0);
    let adone = a.sync_event(SyncEventAttr::dpa_to_cpu()).unwrap();
    let bdone = b.sync_event(SyncEventAttr::dpa_to_cpu()).unwrap();
    let (mut an, mut bn) = (0, 0);
    let mut got = vec![0u8; 64];

    // post_receive(bmap, +16, 64) on B, post_send(amap, +8, 64, 1) from A.
    op(&b, &bdone, &mut bn, [rbh, 0, bh, bbase + 16, 0, 0, 64, 0]).unwrap();
    op(&a, &adone, &mut an, [rah, 1, ah, abase + 8, 0, 0, 64, 0]).unwrap();
    b.d2h_memcpy(&mut got, bmem.daddr() + 16).unwrap();
    assert_eq!(got, data, "send");

    // post_write(remote +128, local +8, 64, 1), then post_read(local +256, remote +128, 64, 1).
    op(
        &a,
        &adone,
        &mut an,
        [rah, 2, ah, abase + 8, bh, bbase + 128, 64, 0],
    )
    .unwrap();
    b.d2h_memcpy(&mut got, bmem.daddr() + 128).unwrap();
    assert_eq!(got, data, "write");
    op(
        &a,
        &adone,
        &mut an,
        [rah, 3, ah, abase + 256, bh, bbase + 128, 64, 0],
    )
    .unwrap();
    amem.buf().read(256, &mut got).unwrap();
    assert_eq!(got, data, "read");

    // A write in two halves, the first asking for no completion: synchronize returns once
    // the second's completes, and both halves are there.
    op(
        &a,
        &adone,
        &mut an,
        [rah, 7, ah, abase + 8, bh, bbase + 192, 64, 0],
    )
    .unwrap();
    b.d2h_memcpy(&mut got, bmem.daddr() + 192).unwrap();
    assert_eq!(got, data, "write in halves");

    // post_atomic_fetch_add(remote +384, 3, 1) twice.
    for _ in 0..2 {
        op(&a, &adone, &mut an, [rah, 4, ah, 0, bh, bbase + 384, 8, 3]).unwrap();
    }
    let mut w = [0u8; 8];
    b.d2h_memcpy(&mut w, bmem.daddr() + 384).unwrap();
    assert_eq!(u64::from_le_bytes(w), 6, "atomic");

    // signal_set(remote event, 7), then signal_add(5): B's host sees 12.
    let ev = b
        .sync_event(SyncEventAttr {
            publisher_remote: true,
            subscriber_cpu: true,
            ..SyncEventAttr::default()
        })
        .unwrap();
    let remote = a.remote_event(ev.export_remote().unwrap()).unwrap();
    let rev = remote.dpa_handle();
    op(&a, &adone, &mut an, [rah, 5, ah, 0, rev, 0, 0, 7]).unwrap();
    assert_eq!(ev.get(), 7, "signal_set");
    op(&a, &adone, &mut an, [rah, 6, ah, 0, rev, 0, 0, 5]).unwrap();
    assert_eq!(ev.get(), 12, "signal_add");
}
