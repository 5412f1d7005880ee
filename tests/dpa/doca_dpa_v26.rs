//! DOCA 2.6's device buffer and RDMA calls (`DOCA_VERSION_MINOR=6`) on the device model,
//! with the kernels of `fw-blobs/src/doca26_kernels.c`: every 2.6 RDMA operation between two
//! contexts with `doca_dpa_dev_rdma_synchronize`, the RDMA copy sample's kernel, external
//! pointers with an offset, and an error completion stopping a synchronizing thread.

use crate::dpa_common;

use std::time::Duration;

use dpa_common::model;
use mlx5_dpa::doca::{
    CompletionContext, DocaError, Dpa, DpaAttr, DpaBufArray, DpaMmap, DpaRdma, KernelArg,
    SyncEvent, SyncEventAttr,
};
use mlx5_dpa::dpa::app::App;
use mlx5_dpa::dpa::msg_stream::MsgOutput;

const KERNELS: &[u8] = include_bytes!("../../fw-blobs/bin/doca26_kernels.elf");
const WAIT: Duration = Duration::from_secs(20);
const ALL: u64 = u64::MAX;

fn start(ctx: &std::sync::Arc<dyn mlx5_dpa::devx::Devx>) -> Dpa {
    start_app(ctx, "doca26_kernels", KERNELS)
}

/// A DOCA DPA context running `elf` (also for `doca_dpa_v27`).
pub(crate) fn start_app(
    ctx: &std::sync::Arc<dyn mlx5_dpa::devx::Devx>,
    name: &str,
    elf: &[u8],
) -> Dpa {
    let attr = DpaAttr {
        log_output: MsgOutput::Collect,
        // Faults on purpose leave no files (the prefix's directory does not exist).
        fatal_file_prefix: Some(
            std::env::temp_dir()
                .join("doca-dpa-v26-tests-no-such-directory")
                .join("doca_dpa_fatal"),
        ),
        ..DpaAttr::default()
    };
    let app = App::from_device_elf(name, elf).unwrap();
    Dpa::start(ctx, &app, &attr).unwrap()
}

/// An RDMA attached to a polled completion context (2.6's and 2.7's synchronize consume it).
pub(crate) fn rdma(d: &Dpa) -> (CompletionContext, DpaRdma) {
    let mut comp = d.completion_create(32).unwrap();
    comp.start().unwrap();
    let mut rdma = d.rdma_create(16).unwrap();
    rdma.attach(&comp).unwrap();
    rdma.start().unwrap();
    (comp, rdma)
}

/// A one-buffer array over all of `map`.
fn array(d: &Dpa, map: &DpaMmap) -> DpaBufArray {
    let mut arr = d.buf_arr_create(1).unwrap();
    arr.set_params(map, map.range().1, 0).unwrap();
    arr.start().unwrap();
    arr
}

/// Launches `v26_rdma_kernel` on `d` and waits for it to end.
fn op(d: &Dpa, done: &SyncEvent, n: &mut u64, args: [u64; 8]) -> Result<(), DocaError> {
    launch(d, "v26_rdma_kernel", done, n, args)
}

/// Launches `kernel` on one thread of `d`, its completion adding 1 to `done`, and waits for
/// it to end (`n` counts the launches on `done`).
pub(crate) fn launch(
    d: &Dpa,
    kernel: &str,
    done: &SyncEvent,
    n: &mut u64,
    args: [u64; 8],
) -> Result<(), DocaError> {
    *n += 1;
    d.kernel_launch_update_add(None, Some((done, 1)), 1, kernel, &args.map(KernelArg::U64))?;
    done.wait_gt(*n - 1, ALL, WAIT).map(|_| ())
}

#[test]
fn doca_2_6_rdma_calls_synchronize() {
    let (_d, ctx) = model("bf3");
    let a = start(&ctx);
    let b = start(&ctx);
    let (_ca, mut ra) = rdma(&a);
    let (_cb, mut rb) = rdma(&b);
    ra.connect(&mut rb).unwrap();
    let (rah, rbh) = (ra.dpa_handle().unwrap(), rb.dpa_handle().unwrap());

    // A: 512 bytes of host memory; B: 512 bytes of DPA memory. A names B's memory through an
    // array over B's map.
    let amap = a.mmap_host(512).unwrap();
    let amem = amap.host_memory().unwrap();
    let data: Vec<u8> = (0..64u32).map(|i| (i * 29 + 7) as u8).collect();
    amem.buf().write(8, &data).unwrap();
    let bmem = b.mem_alloc(512).unwrap();
    b.memset(bmem.daddr(), 0, 512).unwrap();
    let bmap = b.mmap_dpa(&bmem).unwrap();
    let (aarr, barr, rarr) = (array(&a, &amap), array(&b, &bmap), array(&a, &bmap));
    let (ah, bh, rh) = (
        aarr.dpa_handle().unwrap(),
        barr.dpa_handle().unwrap(),
        rarr.dpa_handle().unwrap(),
    );
    let adone = a.sync_event(SyncEventAttr::dpa_to_cpu()).unwrap();
    let bdone = b.sync_event(SyncEventAttr::dpa_to_cpu()).unwrap();
    let (mut an, mut bn) = (0, 0);
    let mut got = vec![0u8; 64];

    // post_receive(buf, 16, 64) on B, post_send(buf, 8, 64) from A.
    op(&b, &bdone, &mut bn, [rbh, 0, bh, 16, 0, 0, 64, 0]).unwrap();
    op(&a, &adone, &mut an, [rah, 1, ah, 8, 0, 0, 64, 0]).unwrap();
    b.d2h_memcpy(&mut got, bmem.daddr() + 16).unwrap();
    assert_eq!(got, data, "send");

    // write(remote, 128, local, 8, 64), then read(local, 256, remote, 128, 64).
    op(&a, &adone, &mut an, [rah, 2, ah, 8, rh, 128, 64, 0]).unwrap();
    b.d2h_memcpy(&mut got, bmem.daddr() + 128).unwrap();
    assert_eq!(got, data, "write");
    op(&a, &adone, &mut an, [rah, 3, ah, 256, rh, 128, 64, 0]).unwrap();
    amem.buf().read(256, &mut got).unwrap();
    assert_eq!(got, data, "read");

    // atomic_fetch_add(remote, 384, 3) twice.
    for _ in 0..2 {
        op(&a, &adone, &mut an, [rah, 4, ah, 0, rh, 384, 8, 3]).unwrap();
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
    op(
        &a,
        &adone,
        &mut an,
        [rah, 5, ah, 0, remote.dpa_handle(), 0, 0, 7],
    )
    .unwrap();
    assert_eq!(ev.get(), 7, "signal_set");
    op(
        &a,
        &adone,
        &mut an,
        [rah, 6, ah, 0, remote.dpa_handle(), 0, 0, 5],
    )
    .unwrap();
    assert_eq!(ev.get(), 12, "signal_add");
}

#[test]
fn the_rdma_copy_samples_kernel_copies_and_signals() {
    // DOCA 2.6's RDMA copy flow in one context: two RDMAs connected to each other, host
    // buffers of 8 bytes, the remote event set by the kernel.
    let (_d, ctx) = model("bf3");
    let dpa = start(&ctx);
    let (_c1, mut local) = rdma(&dpa);
    let (_c2, mut remote) = rdma(&dpa);
    local.connect(&mut remote).unwrap();
    let lmap = dpa.mmap_host(8).unwrap();
    let rmap = dpa.mmap_host(8).unwrap();
    lmap.host_memory()
        .unwrap()
        .buf()
        .write(0, &10u64.to_le_bytes())
        .unwrap();
    let (larr, rarr) = (array(&dpa, &lmap), array(&dpa, &rmap));
    let put_signal = dpa
        .sync_event(SyncEventAttr {
            publisher_remote: true,
            subscriber_cpu: true,
            ..SyncEventAttr::default()
        })
        .unwrap();
    let remote_ev = dpa
        .remote_event(put_signal.export_remote().unwrap())
        .unwrap();
    dpa.kernel_launch_update_set(
        None,
        None,
        1,
        "dpa_rdma_write_and_signal",
        &[
            local.dpa_handle().unwrap(),
            rarr.dpa_handle().unwrap(),
            larr.dpa_handle().unwrap(),
            8,
            remote_ev.dpa_handle(),
            1,
        ]
        .map(KernelArg::U64),
    )
    .unwrap();
    put_signal.wait_gt(0, ALL, WAIT).unwrap();
    let mut w = [0u8; 8];
    rmap.host_memory().unwrap().buf().read(0, &mut w).unwrap();
    assert_eq!(u64::from_le_bytes(w), 10);
}

#[test]
fn external_pointers_take_an_offset() {
    let (_d, ctx) = model("bf3");
    let dpa = start(&ctx);
    let map = dpa.mmap_host(64).unwrap();
    let mem = map.host_memory().unwrap();
    mem.buf().write(24, &0x1234_5678u64.to_le_bytes()).unwrap();
    mem.buf().write(32, &0x9abcu64.to_le_bytes()).unwrap();
    let arr = array(&dpa, &map);
    for (offset, want) in [(24, 0x1234_5678), (32, 0x9abc)] {
        let ev = dpa.sync_event(SyncEventAttr::dpa_to_cpu()).unwrap();
        dpa.kernel_launch_update_set(
            None,
            None,
            1,
            "v26_external_kernel",
            &[arr.dpa_handle().unwrap(), offset, ev.dpa_handle().unwrap()].map(KernelArg::U64),
        )
        .unwrap();
        ev.wait_gt(0, ALL, WAIT).unwrap();
        assert_eq!(ev.get(), want);
    }
}

#[test]
fn synchronize_stops_the_thread_on_an_error_completion() {
    // A writes into a map of a third context its peer's PD cannot use: the write completes
    // in error, and synchronize stops the thread instead of returning.
    let (_d, ctx) = model("bf3");
    let a = start(&ctx);
    let b = start(&ctx);
    let c = start(&ctx);
    let (_ca, mut ra) = rdma(&a);
    let (_cb, mut rb) = rdma(&b);
    ra.connect(&mut rb).unwrap();
    let amap = a.mmap_host(64).unwrap();
    let cmem = c.mem_alloc(64).unwrap();
    c.memset(cmem.daddr(), 0x5a, 64).unwrap();
    let cmap = c.mmap_dpa(&cmem).unwrap();
    let (aarr, carr) = (array(&a, &amap), array(&a, &cmap));
    let done = a.sync_event(SyncEventAttr::dpa_to_cpu()).unwrap();
    let mut n = 0;
    let r = op(
        &a,
        &done,
        &mut n,
        [
            ra.dpa_handle().unwrap(),
            2,
            aarr.dpa_handle().unwrap(),
            0,
            carr.dpa_handle().unwrap(),
            0,
            64,
            0,
        ],
    );
    assert!(matches!(r, Err(DocaError::Fatal(_))), "{r:?}");
    assert!(matches!(a.peek_at_last_error(), Err(DocaError::Fatal(_))));
    let mut got = [0u8; 64];
    c.d2h_memcpy(&mut got, cmem.daddr()).unwrap();
    assert_eq!(got, [0x5a; 64], "the other context's memory is unchanged");
}

#[test]
fn the_threads_own_copies_and_transposes() {
    // DOCA 2.6's doca_dpa_dev_memcpy_nb / _memcpy_transpose2D_nb between two host maps (two
    // keys, one window), then synchronize; the kernel also reports the DOCA version it was
    // built for (2.6) and the runtime's (2.9).
    let (_d, ctx) = model("bf3");
    let dpa = start(&ctx);
    let smap = dpa.mmap_host(64).unwrap();
    let src: Vec<u8> = (0..64u8)
        .map(|i| i.wrapping_mul(7).wrapping_add(3))
        .collect();
    smap.host_memory().unwrap().buf().write(0, &src).unwrap();
    let dmap = dpa.mmap_host(192).unwrap();
    let (sarr, darr) = (array(&dpa, &smap), array(&dpa, &dmap));
    let (sh, dh) = (sarr.dpa_handle().unwrap(), darr.dpa_handle().unwrap());
    let done = dpa.sync_event(SyncEventAttr::dpa_to_cpu()).unwrap();
    let mut n = 0;
    let ev = dpa.sync_event(SyncEventAttr::dpa_to_cpu()).unwrap();
    let evh = ev.dpa_handle().unwrap();

    // 40 bytes from source offset 8 to destination offset 16.
    launch(
        &dpa,
        "v26_memcpy_kernel",
        &done,
        &mut n,
        [dh, 16, sh, 8, 40, 0, 0, evh],
    )
    .unwrap();
    let mut got = vec![0u8; 192];
    dmap.host_memory().unwrap().buf().read(0, &mut got).unwrap();
    assert_eq!(&got[16..56], &src[8..48], "memcpy_nb");
    assert!(got[..16].iter().chain(&got[56..]).all(|&b| b == 0));
    assert_eq!(
        ev.get(),
        6 << 8 | 9,
        "doca_version() 2.6, doca_version_runtime() 2.9"
    );

    // The 4 x 8 matrix of 2-byte elements, transposed to offset 64.
    launch(
        &dpa,
        "v26_memcpy_kernel",
        &done,
        &mut n,
        [dh, 64, sh, 0, 64, 8, 4, evh],
    )
    .unwrap();
    dmap.host_memory().unwrap().buf().read(0, &mut got).unwrap();
    for r in 0..4 {
        for c in 0..8 {
            let (s, d) = ((r * 8 + c) * 2, 64 + (c * 4 + r) * 2);
            assert_eq!(got[d..d + 2], src[s..s + 2], "element ({r}, {c})");
        }
    }

    // A transpose whose elements do not fit its length stops the thread.
    let r = launch(
        &dpa,
        "v26_memcpy_kernel",
        &done,
        &mut n,
        [dh, 64, sh, 0, 8, 8, 4, evh],
    );
    assert!(matches!(r, Err(DocaError::Fatal(_))), "{r:?}");
}
