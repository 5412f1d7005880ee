//! DOCA DPA extended contexts (`doca_dpa_device_extend`) on the device model: a base context on
//! the physical function and an extended one on sub-function 1, sharing the process. The
//! extended context's RDMA, completion context and memory maps are the SF's (queues in the
//! process's memory through a DUMEM alias, the completion context waking a DPA thread through
//! a thread alias); DPA code selects the extended context with `doca_dpa_dev_device_set`
//! before posting on its RDMA, and without it the post stops the thread.

use std::time::Duration;

use mlx5_dpa::doca::{
    CompletionContext, DocaError, Dpa, DpaAttr, DpaRdma, KernelArg, SyncEvent, SyncEventAttr,
};
use mlx5_dpa::dpa::app::App;
use mlx5_dpa::dpa::msg_stream::MsgOutput;

const KERNELS: &[u8] = include_bytes!("../../fw-blobs/bin/doca_kernels.elf");
const WAIT: Duration = Duration::from_secs(20);
const ALL: u64 = u64::MAX;

fn base(ctx: &std::sync::Arc<dyn mlx5_dpa::devx::Devx>) -> Dpa {
    let attr = DpaAttr {
        log_output: MsgOutput::Collect,
        fatal_file_prefix: Some(
            std::env::temp_dir()
                .join("doca-dpa-extend-tests-no-such-directory")
                .join("doca_dpa_fatal"),
        ),
        ..DpaAttr::default()
    };
    let app = App::from_device_elf("doca_kernels", KERNELS).unwrap();
    Dpa::start(ctx, &app, &attr).unwrap()
}

fn rdma(d: &Dpa, comp: &CompletionContext) -> DpaRdma {
    let mut r = d.rdma_create(8).unwrap();
    r.attach(comp).unwrap();
    r.start().unwrap();
    r
}

/// Launches `device_rdma_kernel(dev, rdma, op, map, addr, len)` and waits for it.
fn op(d: &Dpa, done: &SyncEvent, n: &mut u64, args: [u64; 6]) -> Result<u64, DocaError> {
    *n += 1;
    d.kernel_launch_update_add(
        None,
        Some((done, 1)),
        1,
        "device_rdma_kernel",
        &args.map(KernelArg::U64),
    )?;
    done.wait_gt(*n - 1, ALL, WAIT)
}

#[test]
fn an_extended_context_on_a_sub_function_carries_rdma_and_wakes_threads() {
    let d = mlx5_sim::Device::with_profile("bf3").unwrap();
    d.start_engine();
    let pf = d.open_devx();
    let sf = d.open_function(1).unwrap();
    let b = base(&pf);
    let e = b.device_extend(&sf).unwrap();
    assert!(e.is_extended() && !b.is_extended());
    assert_ne!(e.dpa_handle(), b.dpa_handle());
    // Only the base context extends, and not to its own function.
    assert!(matches!(
        e.device_extend(&sf),
        Err(DocaError::NotPermitted(_))
    ));
    assert!(matches!(
        b.device_extend(&pf),
        Err(DocaError::NotPermitted(_))
    ));
    // The SF's objects: aliases of the process, its memory and (below) the thread, a UAR
    // extended to the process.
    assert!(d.inventory().count("ALIAS") >= 2);
    assert_eq!(d.inventory().count("DPA_UAR"), 2);

    // The extended context's completion context wakes a DPA thread (of the shared process).
    let woken = b.sync_event(SyncEventAttr::dpa_to_cpu()).unwrap();
    let tls = b.mem_alloc(16).unwrap();
    let mut thread = e.thread_create();
    thread.set_func_arg("element_counting_thread", 0).unwrap();
    thread.set_local_storage(tls.daddr()).unwrap();
    thread.start().unwrap();
    let mut ecomp = e.completion_create(32).unwrap();
    ecomp.set_thread(&mut thread).unwrap();
    ecomp.start().unwrap();
    let words = [ecomp.dpa_handle().unwrap(), woken.dpa_handle().unwrap()];
    b.h2d_memcpy(
        tls.daddr(),
        &words
            .iter()
            .flat_map(|w| w.to_le_bytes())
            .collect::<Vec<u8>>(),
    )
    .unwrap();
    thread.run().unwrap();
    let mut er = rdma(&e, &ecomp);
    // The base context's RDMA, polled.
    let mut bcomp = b.completion_create(32).unwrap();
    bcomp.start().unwrap();
    let mut br = rdma(&b, &bcomp);
    er.connect(&mut br).unwrap();

    let ebuf = e.mem_alloc(256).unwrap();
    let emap = e.mmap_dpa(&ebuf).unwrap();
    let bbuf = b.mem_alloc(256).unwrap();
    let bmap = b.mmap_dpa(&bbuf).unwrap();
    e.h2d_memcpy(ebuf.daddr(), b"from the SF's RDMA").unwrap();
    b.h2d_memcpy(bbuf.daddr() + 128, b"from the PF's RDMA")
        .unwrap();
    let done = b.sync_event(SyncEventAttr::dpa_to_cpu()).unwrap();
    let mut n = 0;
    let (eh, erh, brh) = (
        e.dpa_handle(),
        er.dpa_handle().unwrap(),
        br.dpa_handle().unwrap(),
    );

    // PF -> SF: the extended RDMA's receive completes into the SF's completion context,
    // which wakes the thread.
    op(
        &b,
        &done,
        &mut n,
        [eh, erh, 0, emap.dpa_handle(), ebuf.daddr() + 128, 64],
    )
    .unwrap();
    op(
        &b,
        &done,
        &mut n,
        [0, brh, 1, bmap.dpa_handle(), bbuf.daddr() + 128, 18],
    )
    .unwrap();
    woken.wait_gt(0, ALL, WAIT).unwrap();
    let mut got = [0u8; 18];
    e.d2h_memcpy(&mut got, ebuf.daddr() + 128).unwrap();
    assert_eq!(&got, b"from the PF's RDMA");

    // SF -> PF: the kernel selects the extended context, then sends on its RDMA.
    op(
        &b,
        &done,
        &mut n,
        [0, brh, 0, bmap.dpa_handle(), bbuf.daddr(), 64],
    )
    .unwrap();
    op(
        &b,
        &done,
        &mut n,
        [eh, erh, 1, emap.dpa_handle(), ebuf.daddr(), 18],
    )
    .unwrap();
    let out = b.mem_alloc(32).unwrap();
    let polled = b.sync_event(SyncEventAttr::dpa_to_cpu()).unwrap();
    let deadline = std::time::Instant::now() + WAIT;
    let mut received = false;
    // The base completion context holds the PF's send completion and its receive.
    for i in 0..2 {
        b.kernel_launch_update_set(
            None,
            None,
            1,
            "poll_kernel",
            &[
                bcomp.dpa_handle().unwrap(),
                out.daddr(),
                polled.dpa_handle().unwrap(),
            ]
            .map(KernelArg::U64),
        )
        .unwrap();
        polled.wait_gt(i, ALL, WAIT).unwrap();
        let mut o = [0u8; 8];
        b.d2h_memcpy(&mut o, out.daddr()).unwrap();
        received |= u64::from_le_bytes(o) == 2;
        assert!(std::time::Instant::now() < deadline);
    }
    assert!(received, "a receive completion on the base context");
    let mut got = [0u8; 18];
    b.d2h_memcpy(&mut got, bbuf.daddr()).unwrap();
    assert_eq!(&got, b"from the SF's RDMA");
    b.peek_at_last_error().unwrap();

    // Without doca_dpa_dev_device_set, a post on the extended RDMA stops the thread.
    let r = op(
        &b,
        &done,
        &mut n,
        [0, erh, 1, emap.dpa_handle(), ebuf.daddr(), 8],
    );
    assert!(matches!(r, Err(DocaError::Fatal(_))), "{r:?}");
    assert!(b.peek_at_last_error().is_err());

    drop((er, br, ecomp, bcomp, emap, bmap));
    thread.stop();
    drop((e, b));
    d.stop_engine();
}

#[test]
fn an_extended_context_lets_go_of_everything_it_made_on_the_sub_function() {
    let d = mlx5_sim::Device::with_profile("bf3").unwrap();
    d.start_engine();
    let pf = d.open_devx();
    let sf = d.open_function(2).unwrap();
    let before = d.inventory();
    {
        let b = base(&pf);
        let e = b.device_extend(&sf).unwrap();
        let mut c = e.completion_create(8).unwrap();
        c.start().unwrap();
        let r = rdma(&e, &c);
        let buf = e.mem_alloc(64).unwrap();
        let map = e.mmap_dpa(&buf).unwrap();
        drop((r, map, c, e));
        b.stop().unwrap();
    }
    assert_eq!(d.inventory(), before);
    d.stop_engine();
}
