//! DOCA DPA (`mlx5_dpa::doca`) end to end on the device model, with the kernels of
//! `fw-blobs/src/doca_kernels.c`: the seed's kernel launch ("Hello from kernel" through the
//! device log), launch-level waits and completion events, the seed's linear and diamond
//! chains, thread ranks, arguments by the calling convention, sync events from both sides,
//! what is refused, and a DPA fault reaching the host as the context's error state.

use crate::dpa_common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use dpa_common::model;
use mlx5_dpa::doca::{DocaError, Dpa, DpaAttr, KernelArg, LogLevel, SyncEvent, SyncEventAttr};
use mlx5_dpa::dpa::app::App;
use mlx5_dpa::dpa::msg_stream::MsgOutput;

const KERNELS: &[u8] = include_bytes!("../../fw-blobs/bin/doca_kernels.elf");
const WAIT: Duration = Duration::from_secs(20);
const ALL: u64 = u64::MAX;

fn app() -> App {
    App::from_device_elf("doca_kernels", KERNELS).unwrap()
}

/// A context whose device log is collected in memory.
fn context(level: LogLevel) -> (mlx5_sim::Device, Dpa, Arc<Mutex<Vec<u8>>>) {
    let (d, ctx) = model("bf3");
    let log = Arc::new(Mutex::new(Vec::new()));
    let w = Arc::clone(&log);
    let attr = DpaAttr {
        log_level: level,
        log_output: MsgOutput::Writer(w),
        // Faults on purpose leave no files: the prefix names a directory that does not exist
        // (a_dpa_thread_fault_writes_doca_fatal_files checks the files).
        fatal_file_prefix: Some(
            std::env::temp_dir()
                .join("doca-dpa-tests-no-such-directory")
                .join("doca_dpa_fatal"),
        ),
        ..DpaAttr::default()
    };
    let dpa = Dpa::start(&ctx, &app(), &attr).unwrap();
    (d, dpa, log)
}

/// A fresh directory for one test's files.
fn scratch(tag: &str) -> std::path::PathBuf {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    let d = std::env::temp_dir().join(format!(
        "doca-dpa-test-{tag}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn h(e: &SyncEvent) -> KernelArg {
    KernelArg::U64(e.dpa_handle().unwrap())
}

fn text(log: &Arc<Mutex<Vec<u8>>>) -> String {
    String::from_utf8_lossy(&log.lock().unwrap()).into_owned()
}

#[test]
fn kernel_launch_waits_for_its_event_logs_and_completes() {
    let (_d, dpa, log) = context(LogLevel::Info);
    let wait = dpa.sync_event(SyncEventAttr::cpu_to_dpa()).unwrap();
    let comp = dpa.sync_event(SyncEventAttr::dpa_to_cpu()).unwrap();
    dpa.kernel_launch_update_set(Some((&wait, 0)), Some((&comp, 1)), 1, "hello_world", &[])
        .unwrap();
    // Not started while the wait event is at its threshold.
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(comp.get(), 0);
    assert!(text(&log).is_empty(), "{}", text(&log));
    wait.update_set(1).unwrap();
    assert_eq!(comp.wait_gt(0, ALL, WAIT).unwrap(), 1);
    // The log line arrives through the stream; wait for it, bounded.
    let t0 = std::time::Instant::now();
    while !text(&log).contains("Hello from kernel") && t0.elapsed() < WAIT {
        std::thread::sleep(Duration::from_millis(2));
    }
    assert_eq!(text(&log), "[DOCA][DPA DEVICE][INF] Hello from kernel\n");
    dpa.stop().unwrap();
}

#[test]
fn the_log_level_filters_on_the_device() {
    let (_d, dpa, log) = context(LogLevel::Warning);
    let comp = dpa.sync_event(SyncEventAttr::dpa_to_cpu()).unwrap();
    dpa.kernel_launch_update_add(None, Some((&comp, 1)), 1, "hello_world", &[])
        .unwrap();
    comp.wait_gt(0, ALL, WAIT).unwrap();
    // The kernel ran (its completion came) and logged at INFO, above WARNING: nothing sent.
    dpa.flush_log(Duration::from_millis(100)).unwrap();
    assert_eq!(text(&log), "");
    assert_eq!(dpa.log_level(), LogLevel::Warning);
    // Raised at run time, the same kernel's line passes.
    dpa.set_log_level(LogLevel::Debug).unwrap();
    assert_eq!(dpa.log_level(), LogLevel::Debug);
    dpa.kernel_launch_update_add(None, Some((&comp, 1)), 1, "hello_world", &[])
        .unwrap();
    comp.wait_gt(1, ALL, WAIT).unwrap();
    dpa.flush_log(Duration::from_millis(200)).unwrap();
    assert_eq!(text(&log), "[DOCA][DPA DEVICE][INF] Hello from kernel\n");
    drop(dpa);
}

#[test]
fn printf_prints_the_line_as_it_is() {
    let (_d, dpa, log) = context(LogLevel::Info);
    let comp = dpa.sync_event(SyncEventAttr::dpa_to_cpu()).unwrap();
    dpa.kernel_launch_update_set(
        None,
        Some((&comp, 1)),
        1,
        "printf_kernel",
        &[KernelArg::U64(42)],
    )
    .unwrap();
    comp.wait_gt(0, ALL, WAIT).unwrap();
    dpa.flush_log(Duration::from_millis(200)).unwrap();
    assert_eq!(text(&log), "Hello World from the DPA, x = 42\n");
    // The DPA guide's printf has no level: a log level that hides INFO lines still prints it.
    dpa.set_log_level(LogLevel::Error).unwrap();
    dpa.kernel_launch_update_set(
        None,
        Some((&comp, 2)),
        1,
        "printf_kernel",
        &[KernelArg::U64(7)],
    )
    .unwrap();
    comp.wait_gt(1, ALL, WAIT).unwrap();
    dpa.flush_log(Duration::from_millis(200)).unwrap();
    assert!(text(&log).ends_with("x = 7\n"), "{}", text(&log));
}

#[test]
fn the_host_waits_for_not_equal() {
    let (_d, dpa, _log) = context(LogLevel::Info);
    let ev = dpa.sync_event(SyncEventAttr::dpa_to_cpu()).unwrap();
    // Equal to the value: the wait times out, bounded.
    assert!(matches!(
        ev.wait_ne(0, ALL, Duration::from_millis(30)),
        Err(DocaError::Timeout { .. })
    ));
    // A kernel sets it to 5: not equal to 0 under the mask, returning the counter.
    dpa.kernel_launch_update_set(None, Some((&ev, 5)), 1, "hello_world", &[])
        .unwrap();
    assert_eq!(ev.wait_ne(0, ALL, WAIT).unwrap(), 5);
    // The mask applies: 5 & 0b010 == 0, still "equal".
    assert!(matches!(
        ev.wait_ne(0, 0b010, Duration::from_millis(30)),
        Err(DocaError::Timeout { .. })
    ));
    // An event without a CPU subscriber cannot be waited for on the CPU.
    let dpa_only = dpa.sync_event(SyncEventAttr::dpa_to_dpa()).unwrap();
    assert!(matches!(
        dpa_only.wait_ne(0, ALL, WAIT),
        Err(DocaError::NotPermitted(_))
    ));
}

#[test]
fn buffer_copies_between_host_maps_and_dpa_memory() {
    let (_d, dpa, _log) = context(LogLevel::Info);
    let host = dpa.mmap_host(256).unwrap();
    let data: Vec<u8> = (0..64u32).map(|i| (i * 11 + 3) as u8).collect();
    host.host_memory().unwrap().write(32, &data).unwrap();
    let dmem = dpa.mem_alloc(128).unwrap();
    // doca_dpa_h2d_buf_memcpy: 64 bytes at 32 of the host map to DPA memory.
    dpa.h2d_buf_memcpy(dmem.daddr(), &host, 32, 64).unwrap();
    let mut got = vec![0u8; 64];
    dpa.d2h_memcpy(&mut got, dmem.daddr()).unwrap();
    assert_eq!(got, data);
    // doca_dpa_d2h_buf_memcpy: back into the map at 160.
    dpa.d2h_buf_memcpy(&host, 160, dmem.daddr(), 64).unwrap();
    assert_eq!(
        host.host_memory().unwrap().buf().to_vec(160, 64).unwrap(),
        data
    );
    // Outside the map, or a map over DPA memory: refused.
    let map_len = host.range().1 as usize;
    assert!(matches!(
        dpa.h2d_buf_memcpy(dmem.daddr(), &host, map_len - 32, 64),
        Err(DocaError::InvalidValue(_))
    ));
    assert!(matches!(
        dpa.d2h_buf_memcpy(&host, usize::MAX, dmem.daddr(), 2),
        Err(DocaError::InvalidValue(_))
    ));
    let dmap = dpa.mmap_dpa(&dmem).unwrap();
    assert!(matches!(
        dpa.h2d_buf_memcpy(dmem.daddr(), &dmap, 0, 8),
        Err(DocaError::InvalidValue(_))
    ));
}

#[test]
fn linear_chain_runs_in_order() {
    // A -> B -> C as the seed's linear example: A waits at launch for the host's event, B and
    // C wait in the kernel for their parent's event.
    let (_d, dpa, _log) = context(LogLevel::Info);
    let a = dpa.sync_event(SyncEventAttr::cpu_to_dpa()).unwrap();
    let b = dpa.sync_event(SyncEventAttr::dpa_to_dpa()).unwrap();
    let c = dpa.sync_event(SyncEventAttr::dpa_to_dpa()).unwrap();
    let done = dpa.sync_event(SyncEventAttr::dpa_to_cpu()).unwrap();
    dpa.kernel_launch_update_add(
        Some((&a, 0)),
        None,
        1,
        "linear_kernel",
        &[0u64.into(), h(&b)],
    )
    .unwrap();
    dpa.kernel_launch_update_add(None, None, 1, "linear_kernel", &[h(&b), h(&c)])
        .unwrap();
    dpa.kernel_launch_update_add(None, None, 1, "linear_kernel", &[h(&c), h(&done)])
        .unwrap();
    std::thread::sleep(Duration::from_millis(30));
    assert_eq!((b.get(), c.get(), done.get()), (0, 0, 0));
    a.update_set(1).unwrap();
    assert_eq!(done.wait_gt(0, ALL, WAIT).unwrap(), 1);
    assert_eq!((b.get(), c.get()), (1, 1));
    dpa.stop().unwrap();
}

#[test]
fn diamond_chain_waits_for_both_parents() {
    // A -> (B, C); C -> D; (B, D) -> E, as the seed's diamond example.
    let (_d, dpa, _log) = context(LogLevel::Info);
    let a = dpa.sync_event(SyncEventAttr::cpu_to_dpa()).unwrap();
    let ev: Vec<SyncEvent> = (0..4)
        .map(|_| dpa.sync_event(SyncEventAttr::dpa_to_dpa()).unwrap())
        .collect();
    let (b, c, d, e) = (&ev[0], &ev[1], &ev[2], &ev[3]);
    let done = dpa.sync_event(SyncEventAttr::dpa_to_cpu()).unwrap();
    let k = |wait: Option<&SyncEvent>, th: u64, c1: &SyncEvent, c2: Option<&SyncEvent>| {
        vec![
            wait.map_or(KernelArg::U64(0), h),
            th.into(),
            h(c1),
            c2.map_or(KernelArg::U64(0), h),
        ]
    };
    let launch = |w: Option<(&SyncEvent, u64)>, args: Vec<KernelArg>| {
        dpa.kernel_launch_update_set(w, None, 1, "diamond_kernel", &args)
            .unwrap()
    };
    launch(Some((&a, 0)), k(None, 0, b, Some(c)));
    launch(None, k(Some(b), 1, e, None));
    launch(None, k(Some(c), 1, d, None));
    launch(None, k(Some(d), 1, e, None));
    launch(None, k(Some(e), 2, &done, None));
    a.update_set(1).unwrap();
    assert_eq!(done.wait_gt(0, ALL, WAIT).unwrap(), 1);
    assert_eq!((b.get(), c.get(), d.get(), e.get()), (1, 1, 1, 2));
    dpa.stop().unwrap();
}

#[test]
fn every_rank_runs_once_and_sees_the_thread_count() {
    let (_d, dpa, _log) = context(LogLevel::Info);
    for n in [1u32, 3, 8, 16] {
        let ranks = dpa.sync_event(SyncEventAttr::dpa_to_cpu()).unwrap();
        let count = dpa.sync_event(SyncEventAttr::dpa_to_cpu()).unwrap();
        let comp = dpa.sync_event(SyncEventAttr::dpa_to_cpu()).unwrap();
        dpa.kernel_launch_update_set(
            None,
            Some((&comp, 7)),
            n,
            "rank_kernel",
            &[h(&ranks), h(&count)],
        )
        .unwrap();
        assert_eq!(comp.wait_gt(0, ALL, WAIT).unwrap(), 7);
        // Each rank adds 1 << rank once: all n bits, no carry.
        assert_eq!(ranks.get(), (1u64 << n) - 1, "{n} threads");
        assert_eq!(count.get(), u64::from(n));
    }
    dpa.stop().unwrap();
}

#[test]
fn struct_arguments_follow_the_calling_convention() {
    let (_d, dpa, _log) = context(LogLevel::Info);
    let out = dpa.sync_event(SyncEventAttr::dpa_to_cpu()).unwrap();
    let comp = dpa.sync_event(SyncEventAttr::dpa_to_cpu()).unwrap();
    // struct six { a, b, c, d, e, ev }: 48 bytes, passed by reference to a copy.
    let mut six = Vec::new();
    for v in [1u64, 20, 300, 4000, 50000, out.dpa_handle().unwrap()] {
        six.extend_from_slice(&v.to_le_bytes());
    }
    dpa.kernel_launch_update_add(
        None,
        Some((&comp, 1)),
        1,
        "struct_kernel",
        &[KernelArg::Bytes(six)],
    )
    .unwrap();
    comp.wait_gt(0, ALL, WAIT).unwrap();
    assert_eq!(out.get(), 54321);
    // struct pair { x, y }: 16 bytes in two registers, then the event in the third.
    let mut pair = Vec::new();
    pair.extend_from_slice(&12u64.to_le_bytes());
    pair.extend_from_slice(&34u64.to_le_bytes());
    dpa.kernel_launch_update_add(
        None,
        Some((&comp, 1)),
        1,
        "pair_kernel",
        &[KernelArg::Bytes(pair), h(&out)],
    )
    .unwrap();
    comp.wait_gt(1, ALL, WAIT).unwrap();
    assert_eq!(out.get(), 12034);
    dpa.stop().unwrap();
}

#[test]
fn launches_repeat_on_pooled_threads() {
    let (_d, dpa, _log) = context(LogLevel::Info);
    let comp = dpa.sync_event(SyncEventAttr::dpa_to_cpu()).unwrap();
    let ranks = dpa.sync_event(SyncEventAttr::dpa_to_cpu()).unwrap();
    let count = dpa.sync_event(SyncEventAttr::dpa_to_cpu()).unwrap();
    for i in 1..=50u64 {
        dpa.kernel_launch_update_add(
            None,
            Some((&comp, 1)),
            2,
            "rank_kernel",
            &[h(&ranks), h(&count)],
        )
        .unwrap();
        assert_eq!(comp.wait_gt(i - 1, ALL, WAIT).unwrap(), i);
    }
    // 50 launches of ranks 0 and 1: 50 * (1 + 2).
    assert_eq!(ranks.get(), 150);
    dpa.stop().unwrap();
}

#[test]
fn what_doca_refuses_is_refused() {
    let (_d, dpa, _log) = context(LogLevel::Info);
    let cpu_to_dpa = dpa.sync_event(SyncEventAttr::cpu_to_dpa()).unwrap();
    let dpa_to_cpu = dpa.sync_event(SyncEventAttr::dpa_to_cpu()).unwrap();
    let invalid = |r: Result<(), DocaError>| matches!(r, Err(DocaError::InvalidValue(_)));
    let denied = |r: Result<(), DocaError>| matches!(r, Err(DocaError::NotPermitted(_)));
    assert!(invalid(dpa.kernel_launch_update_set(
        None,
        None,
        0,
        "hello_world",
        &[]
    )));
    assert!(invalid(dpa.kernel_launch_update_set(
        None,
        None,
        dpa.max_threads_per_kernel() + 1,
        "hello_world",
        &[]
    )));
    assert!(invalid(dpa.kernel_launch_update_set(
        None,
        None,
        1,
        "no_such_kernel",
        &[]
    )));
    assert!(invalid(dpa.kernel_launch_update_set(
        Some((&cpu_to_dpa, 255)),
        None,
        1,
        "hello_world",
        &[]
    )));
    // Locations: waiting needs a DPA subscriber, completing a DPA publisher.
    assert!(denied(dpa.kernel_launch_update_set(
        Some((&dpa_to_cpu, 0)),
        None,
        1,
        "hello_world",
        &[]
    )));
    assert!(denied(dpa.kernel_launch_update_set(
        None,
        Some((&cpu_to_dpa, 1)),
        1,
        "hello_world",
        &[]
    )));
    assert!(matches!(
        dpa_to_cpu.update_set(1),
        Err(DocaError::NotPermitted(_))
    ));
    assert!(matches!(
        cpu_to_dpa.wait_gt(0, ALL, Duration::from_millis(1)),
        Err(DocaError::NotPermitted(_))
    ));
    let cpu_only = dpa
        .sync_event(SyncEventAttr {
            publisher_cpu: true,
            subscriber_cpu: true,
            ..SyncEventAttr::default()
        })
        .unwrap();
    assert!(matches!(
        cpu_only.dpa_handle(),
        Err(DocaError::NotPermitted(_))
    ));
    assert_eq!(cpu_only.update_add(5).unwrap(), 0);
    assert_eq!(cpu_only.wait_gt(4, ALL, WAIT).unwrap(), 5);
    assert!(matches!(
        cpu_only.wait_gt(5, ALL, Duration::from_millis(5)),
        Err(DocaError::Timeout { .. })
    ));
    assert!(matches!(
        dpa.sync_event(SyncEventAttr {
            publisher_cpu: true,
            publisher_dpa: true,
            subscriber_cpu: true,
            ..SyncEventAttr::default()
        }),
        Err(DocaError::NotPermitted(_))
    ));
    assert!(matches!(
        dpa.sync_event(SyncEventAttr::default()),
        Err(DocaError::InvalidValue(_))
    ));
    // Isolation: another context's event is refused.
    let (_d2, other, _l2) = context(LogLevel::Info);
    let foreign = other.sync_event(SyncEventAttr::cpu_to_dpa()).unwrap();
    assert!(denied(dpa.kernel_launch_update_set(
        Some((&foreign, 0)),
        None,
        1,
        "hello_world",
        &[]
    )));
    assert!(dpa.peek_at_last_error().is_ok());
    dpa.stop().unwrap();
}

#[test]
fn a_fault_puts_the_context_in_the_error_state() {
    let (d, dpa, _log) = context(LogLevel::Info);
    // A small watchdog budget: the spinning kernel pauses in its wait, and each pause counts
    // PAUSE_CYCLES (256) towards it.
    d.with_profile_mut(|p| p.dpa_insn_budget = 2_000_000);
    let never = dpa.sync_event(SyncEventAttr::dpa_to_dpa()).unwrap();
    let comp = dpa.sync_event(SyncEventAttr::dpa_to_cpu()).unwrap();
    // The kernel spins on an event nothing sets: the watchdog stops it.
    dpa.kernel_launch_update_set(None, Some((&comp, 1)), 1, "spin_kernel", &[h(&never)])
        .unwrap();
    match comp.wait_gt(0, ALL, Duration::from_secs(60)) {
        Err(DocaError::Fatal(why)) => assert!(why.contains("Watchdog"), "{why}"),
        other => panic!("{other:?}"),
    }
    assert!(matches!(dpa.peek_at_last_error(), Err(DocaError::Fatal(_))));
    assert!(matches!(
        dpa.kernel_launch_update_set(None, None, 1, "hello_world", &[]),
        Err(DocaError::Fatal(_))
    ));
    assert!(matches!(dpa.stop(), Err(DocaError::Fatal(_))));
}

#[test]
fn an_application_without_the_runtime_is_refused() {
    let (_d, ctx) = model("bf3");
    // A bare-metal test program: it loads as a process but has none of the runtime.
    let bytes = std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fw-blobs/bare/bin/compute.elf"),
    )
    .unwrap();
    let app = App::from_device_elf("compute", &bytes).unwrap();
    match Dpa::start(&ctx, &app, &DpaAttr::default()) {
        Err(DocaError::InvalidValue(why)) => assert!(why.contains("__doca_dpa_rt"), "{why}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_tree_of_spinning_kernels_outlasts_a_late_root() {
    // As DOCA's binary-tree sample: every kernel is launched at once and waits inside the
    // kernel for its parent; the host sets the root's event only later. Seven kernels spin on
    // the model's few host threads: each wait pauses, which lets the others run, and the
    // pauses' cycles keep the wait far inside the watchdog's budget.
    let (_d, dpa, _log) = context(LogLevel::Info);
    let root = dpa.sync_event(SyncEventAttr::cpu_to_dpa()).unwrap();
    let node: Vec<SyncEvent> = (0..6)
        .map(|_| dpa.sync_event(SyncEventAttr::dpa_to_dpa()).unwrap())
        .collect();
    let leaves_done = dpa.sync_event(SyncEventAttr::dpa_to_cpu()).unwrap();
    let launch = |wait: &SyncEvent, c1: &SyncEvent, c2: Option<&SyncEvent>| {
        let args = [h(wait), 1u64.into(), h(c1), c2.map_or(KernelArg::U64(0), h)];
        dpa.kernel_launch_update_set(None, None, 1, "diamond_kernel", &args)
            .unwrap();
    };
    // A: root -> B, C; B -> D, E; C -> F, G; D..G -> leaves_done.
    launch(&root, &node[0], Some(&node[1]));
    launch(&node[0], &node[2], Some(&node[3]));
    launch(&node[1], &node[4], Some(&node[5]));
    for n in &node[2..] {
        launch(n, &leaves_done, None);
    }
    std::thread::sleep(Duration::from_millis(600));
    assert_eq!(leaves_done.get(), 0);
    root.update_set(1).unwrap();
    assert_eq!(leaves_done.wait_gt(3, ALL, WAIT).unwrap(), 4);
    dpa.stop().unwrap();
}

#[test]
fn an_rpc_runs_while_kernels_spin_on_every_host_thread() {
    // Eight kernel threads spin on an event the host sets only after an RPC has answered:
    // more spinners than the model has host threads. Each wait pauses, so the RPC's
    // activation gets a turn, as it would get an EU of its own on the DPA.
    let (_d, dpa, _log) = context(LogLevel::Info);
    let go = dpa.sync_event(SyncEventAttr::cpu_to_dpa()).unwrap();
    let done = dpa.sync_event(SyncEventAttr::dpa_to_cpu()).unwrap();
    dpa.kernel_launch_update_set(None, None, 8, "linear_kernel", &[h(&go), h(&done)])
        .unwrap();
    // Let the launch start and spin before the RPC.
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(dpa.rpc("sum_rpc", &[40, 2]).unwrap(), 42);
    go.update_set(1).unwrap();
    assert_eq!(done.wait_gt(7, ALL, WAIT).unwrap(), 8);
    dpa.stop().unwrap();
}

#[test]
fn the_seeds_hello_world_thread_runs_when_an_rpc_notifies_it() {
    // doca-dpa.txt, "Procedure Steps": a DPA thread that logs and sets the host's event, and
    // an RPC that notifies it through a notification completion.
    let (_d, dpa, log) = context(LogLevel::Info);
    let cpu_se = dpa.sync_event(SyncEventAttr::dpa_to_cpu()).unwrap();
    let mut thread = dpa.thread_create();
    thread
        .set_func_arg("hello_world_thread_kernel", cpu_se.dpa_handle().unwrap())
        .unwrap();
    assert_eq!(
        thread.func_arg(),
        Some(("hello_world_thread_kernel", cpu_se.dpa_handle().unwrap()))
    );
    thread.start().unwrap();
    let notify = dpa.notification_completion_create(&mut thread).unwrap();
    thread.run().unwrap();
    // Nothing runs it until the notification.
    std::thread::sleep(Duration::from_millis(30));
    assert_eq!(cpu_se.get(), 0);
    assert_eq!(
        dpa.rpc("hello_world_thread_notify_rpc", &[notify.dpa_handle()])
            .unwrap(),
        0
    );
    cpu_se.wait_gt(0, ALL, WAIT).unwrap();
    dpa.flush_log(Duration::from_millis(200)).unwrap();
    assert_eq!(
        text(&log),
        "[DOCA][DPA DEVICE][INF] Notifying DPA Thread From RPC\n\
         [DOCA][DPA DEVICE][INF] Hello World From DPA Thread!\n"
    );
    // It finished: it is not run again.
    drop(notify);
    thread.stop();
    dpa.stop().unwrap();
}

#[test]
fn a_thread_runs_once_per_notification_and_threads_notify_threads() {
    // Thread 2 counts its runs; thread 1 counts too and notifies thread 2 on each run. A
    // kernel notifies thread 1 N times: both run N times.
    let (_d, dpa, _log) = context(LogLevel::Info);
    let count1 = dpa.sync_event(SyncEventAttr::dpa_to_cpu()).unwrap();
    let count2 = dpa.sync_event(SyncEventAttr::dpa_to_cpu()).unwrap();
    let tls1 = dpa.mem_alloc(16).unwrap();
    let tls2 = dpa.mem_alloc(16).unwrap();
    let mut t2 = dpa.thread_create();
    t2.set_func_arg("counting_thread", 1).unwrap();
    t2.set_local_storage(tls2.daddr()).unwrap();
    t2.start().unwrap();
    let n2 = dpa.notification_completion_create(&mut t2).unwrap();
    let mut t1 = dpa.thread_create();
    t1.set_func_arg("counting_thread", 1).unwrap();
    t1.set_local_storage(tls1.daddr()).unwrap();
    assert_eq!(t1.local_storage(), tls1.daddr());
    t1.start().unwrap();
    let n1 = dpa.notification_completion_create(&mut t1).unwrap();
    let words = |a: u64, b: u64| [a.to_le_bytes(), b.to_le_bytes()].concat();
    dpa.h2d_memcpy(tls2.daddr(), &words(count2.dpa_handle().unwrap(), 0))
        .unwrap();
    dpa.h2d_memcpy(
        tls1.daddr(),
        &words(count1.dpa_handle().unwrap(), n2.dpa_handle()),
    )
    .unwrap();
    t2.run().unwrap();
    t1.run().unwrap();
    const N: u64 = 20;
    dpa.kernel_launch_update_set(
        None,
        None,
        1,
        "notify_kernel",
        &[n1.dpa_handle().into(), N.into()],
    )
    .unwrap();
    assert_eq!(count1.wait_gt(N - 1, ALL, WAIT).unwrap(), N);
    assert_eq!(count2.wait_gt(N - 1, ALL, WAIT).unwrap(), N);
    // No extra runs after a quiet moment.
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!((count1.get(), count2.get()), (N, N));
    assert!(t1.handler().unwrap().activations().unwrap() >= N);
    dpa.peek_at_last_error().unwrap();
    drop((n1, n2));
    t1.stop();
    t2.stop();
    dpa.stop().unwrap();
}

#[test]
fn thread_misuse_is_refused() {
    let (_d, dpa, _log) = context(LogLevel::Info);
    let mut t = dpa.thread_create();
    assert!(matches!(t.start(), Err(DocaError::InvalidValue(_))));
    assert!(matches!(
        t.set_func_arg("no_such_function", 0),
        Err(DocaError::InvalidValue(_))
    ));
    assert!(matches!(t.run(), Err(DocaError::NotPermitted(_))));
    assert!(matches!(
        dpa.notification_completion_create(&mut t),
        Err(DocaError::NotPermitted(_))
    ));
    t.set_func_arg("counting_thread", 1).unwrap();
    t.start().unwrap();
    assert!(matches!(
        t.set_local_storage(64),
        Err(DocaError::NotPermitted(_))
    ));
    assert!(matches!(t.start(), Err(DocaError::NotPermitted(_))));
    let n = dpa.notification_completion_create(&mut t).unwrap();
    assert!(matches!(
        dpa.notification_completion_create(&mut t),
        Err(DocaError::NotPermitted(_))
    ));
    // A thread of another context.
    let (_d2, other, _l2) = context(LogLevel::Info);
    let mut foreign = other.thread_create();
    foreign.set_func_arg("counting_thread", 1).unwrap();
    foreign.start().unwrap();
    assert!(matches!(
        dpa.notification_completion_create(&mut foreign),
        Err(DocaError::NotPermitted(_))
    ));
    drop(n);
    t.stop();
    foreign.stop();
    dpa.stop().unwrap();
}

#[test]
fn trace_records_go_to_the_trace_file() {
    let (_d, ctx) = model("bf3");
    let dir = scratch("trace");
    let path = dir.join("trace.txt");
    let attr = DpaAttr {
        log_output: MsgOutput::Collect,
        trace_file: Some(path.clone()),
        ..DpaAttr::default()
    };
    let dpa = Dpa::start(&ctx, &app(), &attr).unwrap();
    let comp = dpa.sync_event(SyncEventAttr::dpa_to_cpu()).unwrap();
    dpa.kernel_launch_update_set(None, Some((&comp, 1)), 1, "trace_kernel", &[3u64.into()])
        .unwrap();
    comp.wait_gt(0, ALL, WAIT).unwrap();
    dpa.flush_log(Duration::from_millis(200)).unwrap();
    dpa.stop().unwrap();
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "0x1 0x2 0x3 0x4 0x5\n0x2 0x4 0x6 0x8 0xa\n0x3 0x6 0x9 0xc 0xf\n"
    );
    // Without a trace file the records are dropped on the device, and nothing fails.
    let (_d2, dpa2, _log) = context(LogLevel::Info);
    let comp2 = dpa2.sync_event(SyncEventAttr::dpa_to_cpu()).unwrap();
    dpa2.kernel_launch_update_set(None, Some((&comp2, 1)), 1, "trace_kernel", &[3u64.into()])
        .unwrap();
    comp2.wait_gt(0, ALL, WAIT).unwrap();
    dpa2.stop().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_dpa_thread_fault_writes_doca_fatal_files() {
    // A DPA thread (no launch in flight) faults: the context's error state names it, and the
    // core dump and crash report are written as DOCA writes them (<prefix>.<pid>.core/.crash).
    let (_d, ctx) = model("bf3");
    let dir = scratch("fatal");
    let prefix = dir.join("doca_dpa_fatal");
    let attr = DpaAttr {
        log_output: MsgOutput::Collect,
        fatal_file_prefix: Some(prefix.clone()),
        ..DpaAttr::default()
    };
    let dpa = Dpa::start(&ctx, &app(), &attr).unwrap();
    let mut t = dpa.thread_create();
    t.set_func_arg("fault_thread", 0x5a).unwrap();
    t.start().unwrap();
    let n = dpa.notification_completion_create(&mut t).unwrap();
    t.run().unwrap();
    // The RPC returns, or sees the process fail under it (the thread may fault first).
    match dpa.rpc("hello_world_thread_notify_rpc", &[n.dpa_handle()]) {
        Ok(_) | Err(DocaError::Dpa(mlx5_dpa::dpa::DpaError::ProcessFault { .. })) => {}
        Err(e) => panic!("{e:?}"),
    }
    let t0 = std::time::Instant::now();
    while dpa.peek_at_last_error().is_ok() {
        assert!(t0.elapsed() < WAIT, "the fault was not reported");
        std::thread::sleep(Duration::from_millis(5));
    }
    let why = dpa.peek_at_last_error().unwrap_err().to_string();
    let (core, crash) = dpa.fatal_files().expect("fatal files");
    let pid = std::process::id();
    assert_eq!(core, dir.join(format!("doca_dpa_fatal.{pid}.core")));
    assert_eq!(crash, dir.join(format!("doca_dpa_fatal.{pid}.crash")));
    assert!(
        why.contains("store failed") && why.contains(&core.display().to_string()),
        "{why}"
    );
    // The core file is the device's coredump image, which decodes to the faulting thread.
    let image = std::fs::read(&core).unwrap();
    assert_eq!(image, dpa.process().coredump_raw().unwrap());
    let dump = mlx5_dpa::dpa::coredump::Coredump::parse(&image).unwrap();
    assert_eq!(dump.dpa_thread_id, t.handler().unwrap().id());
    assert_eq!(dump.fault_addr, 0);
    let report = std::fs::read_to_string(&crash).unwrap();
    assert!(
        report.starts_with("DOCA DPA fatal error: DPA thread")
            && report.contains(&format!("thread {:#x}", dump.dpa_thread_id))
            && report.contains("x10 "),
        "{report}"
    );
    drop(n);
    t.stop();
    assert!(matches!(dpa.stop(), Err(DocaError::Fatal(_))));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn async_memcpy_completes_into_a_completion_context() {
    // A kernel posts a memcpy between two DPA buffers and polls the completion context: the
    // element is a SEND completion reporting the async ops' user data; the bytes arrived.
    let (_d, dpa, _log) = context(LogLevel::Info);
    let mut comp = dpa.completion_create(16).unwrap();
    assert_eq!(comp.queue_size(), 16);
    comp.start().unwrap();
    let mut ops = dpa.async_ops_create(8, 0xabcde).unwrap();
    assert_eq!((ops.queue_size(), ops.user_data()), (8, 0xabcde));
    ops.attach(&comp).unwrap();
    ops.start().unwrap();
    let src = dpa.mem_alloc(256).unwrap();
    let dst = dpa.mem_alloc(256).unwrap();
    let pattern: Vec<u8> = (0..200u32).map(|i| (i * 7 + 3) as u8).collect();
    dpa.h2d_memcpy(src.daddr(), &pattern).unwrap();
    let (src_map, dst_map) = (dpa.mmap_dpa(&src).unwrap(), dpa.mmap_dpa(&dst).unwrap());
    let ev = dpa.sync_event(SyncEventAttr::dpa_to_cpu()).unwrap();
    let args = [
        ops.dpa_handle().unwrap(),
        comp.dpa_handle().unwrap(),
        dst_map.dpa_handle(),
        dst.daddr(),
        src_map.dpa_handle(),
        src.daddr(),
        pattern.len() as u64,
        ev.dpa_handle().unwrap(),
    ]
    .map(KernelArg::U64);
    dpa.kernel_launch_update_set(None, None, 1, "memcpy_kernel", &args)
        .unwrap();
    let v = ev.wait_gt(0, ALL, WAIT).unwrap() - 1;
    assert_eq!(
        (v >> 32, v & 0xffff_ffff),
        (0, 0xabcde),
        "type SEND, the user data"
    );
    let mut got = vec![0u8; pattern.len()];
    dpa.d2h_memcpy(&mut got, dst.daddr()).unwrap();
    assert_eq!(got, pattern);
    // Host memory as the destination.
    let ev2 = dpa.sync_event(SyncEventAttr::dpa_to_cpu()).unwrap();
    let host = dpa.mmap_host(4096).unwrap();
    let hm = host.host_memory().unwrap();
    let args = [
        ops.dpa_handle().unwrap(),
        comp.dpa_handle().unwrap(),
        host.dpa_handle(),
        hm.addr() + 64,
        src_map.dpa_handle(),
        src.daddr(),
        pattern.len() as u64,
        ev2.dpa_handle().unwrap(),
    ]
    .map(KernelArg::U64);
    dpa.kernel_launch_update_set(None, None, 1, "memcpy_kernel", &args)
        .unwrap();
    assert_eq!(ev2.wait_gt(0, ALL, WAIT).unwrap(), v + 1);
    let mut got = vec![0u8; pattern.len()];
    hm.read(64, &mut got).unwrap();
    assert_eq!(got, pattern);
    drop(ops);
    drop(comp);
    dpa.stop().unwrap();
}

#[test]
fn completions_wake_the_attached_thread() {
    // A DPA thread attached to a completion context counts the user data of each completion:
    // a kernel posts 40 memcpys (more than the context holds at once: the thread acks as it
    // goes), the thread wakes and requests the next notification each time.
    let (_d, dpa, _log) = context(LogLevel::Info);
    let total = dpa.sync_event(SyncEventAttr::dpa_to_cpu()).unwrap();
    let tls = dpa.mem_alloc(16).unwrap();
    let mut t = dpa.thread_create();
    t.set_func_arg("completion_thread", 0).unwrap();
    t.set_local_storage(tls.daddr()).unwrap();
    t.start().unwrap();
    let mut comp = dpa.completion_create(64).unwrap();
    comp.set_thread(&mut t).unwrap();
    comp.start().unwrap();
    let mut ops = dpa.async_ops_create(64, 3).unwrap();
    ops.attach(&comp).unwrap();
    ops.start().unwrap();
    let words = [comp.dpa_handle().unwrap(), total.dpa_handle().unwrap()];
    dpa.h2d_memcpy(
        tls.daddr(),
        &[words[0].to_le_bytes(), words[1].to_le_bytes()].concat(),
    )
    .unwrap();
    t.run().unwrap();
    let src = dpa.mem_alloc(8 * 40).unwrap();
    let dst = dpa.mem_alloc(8 * 40).unwrap();
    let (sm, dm) = (dpa.mmap_dpa(&src).unwrap(), dpa.mmap_dpa(&dst).unwrap());
    let data: Vec<u8> = (0..320u32).map(|i| (i % 251) as u8).collect();
    dpa.h2d_memcpy(src.daddr(), &data).unwrap();
    const N: u64 = 40;
    dpa.kernel_launch_update_set(
        None,
        None,
        1,
        "memcpy_many_kernel",
        &[
            ops.dpa_handle().unwrap(),
            dm.dpa_handle(),
            dst.daddr(),
            sm.dpa_handle(),
            src.daddr(),
            N,
        ]
        .map(KernelArg::U64),
    )
    .unwrap();
    // Each completion adds the user data 3.
    assert_eq!(total.wait_gt(3 * N - 1, ALL, WAIT).unwrap(), 3 * N);
    let mut got = vec![0u8; 320];
    dpa.d2h_memcpy(&mut got, dst.daddr()).unwrap();
    assert_eq!(got, data);
    dpa.peek_at_last_error().unwrap();
    drop(ops);
    drop(comp);
    t.stop();
    dpa.stop().unwrap();
}

#[test]
fn async_ops_misuse_is_refused() {
    let (_d, dpa, _log) = context(LogLevel::Info);
    assert!(matches!(
        dpa.completion_create(0),
        Err(DocaError::InvalidValue(_))
    ));
    assert!(matches!(
        dpa.completion_create(1 << 16),
        Err(DocaError::InvalidValue(_))
    ));
    assert!(matches!(
        dpa.async_ops_create(8, 1 << 24),
        Err(DocaError::InvalidValue(_))
    ));
    let comp = dpa.completion_create(8).unwrap();
    assert!(matches!(comp.dpa_handle(), Err(DocaError::NotPermitted(_))));
    let mut ops = dpa.async_ops_create(8, 1).unwrap();
    // Attach needs a started context; start needs an attached one.
    assert!(matches!(ops.attach(&comp), Err(DocaError::NotPermitted(_))));
    assert!(matches!(ops.start(), Err(DocaError::NotPermitted(_))));
    assert!(matches!(ops.dpa_handle(), Err(DocaError::NotPermitted(_))));
    // Another context's completion context.
    let (_d2, other, _l2) = context(LogLevel::Info);
    let mut foreign = other.completion_create(8).unwrap();
    foreign.start().unwrap();
    assert!(matches!(
        ops.attach(&foreign),
        Err(DocaError::NotPermitted(_))
    ));
    // A thread with a completion context gets no second one.
    let mut t = dpa.thread_create();
    t.set_func_arg("completion_thread", 0).unwrap();
    t.start().unwrap();
    let mut c1 = dpa.completion_create(8).unwrap();
    c1.set_thread(&mut t).unwrap();
    let mut c2 = dpa.completion_create(8).unwrap();
    assert!(matches!(
        c2.set_thread(&mut t),
        Err(DocaError::NotPermitted(_))
    ));
    c1.start().unwrap();
    assert!(matches!(c1.start(), Err(DocaError::NotPermitted(_))));
    drop((c1, c2, foreign));
    t.stop();
    dpa.stop().unwrap();
}

#[test]
fn another_contexts_events_and_memory_are_out_of_reach() {
    // Two contexts (two processes) on one device. B's kernel is handed A's event handle (A's
    // host address): B's window is keyed to B's own page only, so the access faults in B, and
    // A's counter does not move.
    let (_d, ctx) = model("bf3");
    let attr = DpaAttr {
        log_output: MsgOutput::Collect,
        fatal_file_prefix: Some(
            std::env::temp_dir()
                .join("doca-dpa-tests-no-such-directory")
                .join("doca_dpa_fatal"),
        ),
        ..DpaAttr::default()
    };
    let a = Dpa::start(&ctx, &app(), &attr).unwrap();
    let b = Dpa::start(&ctx, &app(), &attr).unwrap();
    assert_ne!(a.process().id(), b.process().id());
    let a_ev = a.sync_event(SyncEventAttr::dpa_to_cpu()).unwrap();
    let b_done = b.sync_event(SyncEventAttr::dpa_to_cpu()).unwrap();
    b.kernel_launch_update_set(
        None,
        Some((&b_done, 1)),
        1,
        "linear_kernel",
        &[0u64.into(), a_ev.dpa_handle().unwrap().into()],
    )
    .unwrap();
    match b_done.wait_gt(0, ALL, WAIT) {
        Err(DocaError::Fatal(why)) => assert!(why.contains("load failed"), "{why}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(a_ev.get(), 0);
    a.peek_at_last_error().unwrap();
    assert!(matches!(b.peek_at_last_error(), Err(DocaError::Fatal(_))));

    // A memcpy of a third context C into A's memory map: C's QP is in C's PD, A's key in A's,
    // so the write is refused and C's completion context reports a send error; A's buffer
    // keeps its bytes.
    let c = Dpa::start(&ctx, &app(), &attr).unwrap();
    let a_buf = a.mem_alloc(64).unwrap();
    a.memset(a_buf.daddr(), 0x11, 64).unwrap();
    let a_map = a.mmap_dpa(&a_buf).unwrap();
    let mut comp = c.completion_create(8).unwrap();
    comp.start().unwrap();
    let mut ops = c.async_ops_create(8, 9).unwrap();
    ops.attach(&comp).unwrap();
    ops.start().unwrap();
    let c_buf = c.mem_alloc(64).unwrap();
    let c_map = c.mmap_dpa(&c_buf).unwrap();
    let ev = c.sync_event(SyncEventAttr::dpa_to_cpu()).unwrap();
    let args = [
        ops.dpa_handle().unwrap(),
        comp.dpa_handle().unwrap(),
        a_map.dpa_handle(),
        a_buf.daddr(),
        c_map.dpa_handle(),
        c_buf.daddr(),
        64,
        ev.dpa_handle().unwrap(),
    ]
    .map(KernelArg::U64);
    c.kernel_launch_update_set(None, None, 1, "memcpy_kernel", &args)
        .unwrap();
    let v = ev.wait_gt(0, ALL, WAIT).unwrap() - 1;
    assert_eq!(v >> 32, 0xd, "a send error completion: {v:#x}");
    let mut got = [0u8; 64];
    a.d2h_memcpy(&mut got, a_buf.daddr()).unwrap();
    assert_eq!(got, [0x11; 64]);
    drop((ops, comp));
    a.stop().unwrap();
}

#[test]
fn another_contexts_hash_table_completion_and_rdma_handles_leave_it_untouched() {
    // Handles are DPA addresses of their own process; in another process the same numbers
    // name that process's memory, never the owner's. B's kernels are handed A's hash table,
    // completion context and RDMA handles: A's objects keep every byte, A's RDMA sends
    // nothing, and A goes on working.
    let (_d, ctx) = model("bf3");
    let attr = DpaAttr {
        log_output: MsgOutput::Collect,
        fatal_file_prefix: Some(
            std::env::temp_dir()
                .join("doca-dpa-tests-no-such-directory")
                .join("doca_dpa_fatal"),
        ),
        ..DpaAttr::default()
    };
    let a = Dpa::start(&ctx, &app(), &attr).unwrap();
    let ht = a.hash_table_create(16).unwrap();
    let mut comp = a.completion_create(8).unwrap();
    comp.start().unwrap();
    let mut rdma = a.rdma_create(4).unwrap();
    rdma.attach(&comp).unwrap();
    rdma.start().unwrap();
    let mut peer_comp = a.completion_create(8).unwrap();
    peer_comp.start().unwrap();
    let mut peer = a.rdma_create(4).unwrap();
    peer.attach(&peer_comp).unwrap();
    peer.start().unwrap();
    rdma.connect(&mut peer).unwrap();
    let snapshot = |at: u64, len: usize| {
        let mut b = vec![0u8; len];
        a.d2h_memcpy(&mut b, at).unwrap();
        b
    };
    let (ht_h, comp_h, rdma_h) = (
        ht.dpa_handle(),
        comp.dpa_handle().unwrap(),
        rdma.dpa_handle().unwrap(),
    );
    let before = [
        snapshot(ht_h, 64),
        snapshot(comp_h, 64),
        snapshot(rdma_h, 0xa0),
    ];

    let b = Dpa::start(&ctx, &app(), &attr).unwrap();
    let out = b.mem_alloc(8).unwrap();
    let done = b.sync_event(SyncEventAttr::dpa_to_cpu()).unwrap();
    // Adding keys through A's table handle.
    let _ = b.kernel_launch_update_set(
        None,
        Some((&done, 1)),
        1,
        "hash_kernel",
        &[ht_h, 5000, 4, out.daddr()].map(KernelArg::U64),
    );
    let _ = done.wait_gt(0, ALL, WAIT);
    // Sending on A's RDMA handle, connection 0.
    let bbuf = b.mem_alloc(64).unwrap();
    let bmap = b.mmap_dpa(&bbuf).unwrap();
    let _ = b.kernel_launch_update_set(
        None,
        Some((&done, 2)),
        1,
        "rdma_kernel",
        &[rdma_h, 1, bmap.dpa_handle(), bbuf.daddr(), 0, 0, 8, 0].map(KernelArg::U64),
    );
    let _ = done.wait_gt(1, ALL, WAIT);
    let after = [
        snapshot(ht_h, 64),
        snapshot(comp_h, 64),
        snapshot(rdma_h, 0xa0),
    ];
    assert_eq!(before, after, "A's hash table, completion context and RDMA");
    a.peek_at_last_error().unwrap();
    // A's own objects still work: a send from A completes into A's context.
    let abuf = a.mem_alloc(64).unwrap();
    let amap = a.mmap_dpa(&abuf).unwrap();
    let a_done = a.sync_event(SyncEventAttr::dpa_to_cpu()).unwrap();
    let polled = a.sync_event(SyncEventAttr::dpa_to_cpu()).unwrap();
    let aout = a.mem_alloc(32).unwrap();
    a.kernel_launch_update_set(
        None,
        Some((&a_done, 1)),
        1,
        "rdma_kernel",
        &[
            peer.dpa_handle().unwrap(),
            0,
            amap.dpa_handle(),
            abuf.daddr(),
            0,
            0,
            64,
            0,
        ]
        .map(KernelArg::U64),
    )
    .unwrap();
    a_done.wait_gt(0, ALL, WAIT).unwrap();
    a.kernel_launch_update_set(
        None,
        Some((&a_done, 2)),
        1,
        "rdma_kernel",
        &[rdma_h, 1, amap.dpa_handle(), abuf.daddr(), 0, 0, 8, 0].map(KernelArg::U64),
    )
    .unwrap();
    a_done.wait_gt(1, ALL, WAIT).unwrap();
    a.kernel_launch_update_set(
        None,
        None,
        1,
        "poll_kernel",
        &[comp_h, aout.daddr(), polled.dpa_handle().unwrap()].map(KernelArg::U64),
    )
    .unwrap();
    polled.wait_gt(0, ALL, WAIT).unwrap();
    a.peek_at_last_error().unwrap();
    drop((rdma, peer, comp, peer_comp, ht));
}

#[test]
fn hash_tables_add_remove_and_find_from_many_threads() {
    // 16 kernel threads, 24 keys each, into a table made for 16 * 24 keys: each adds its keys,
    // removes the odd ones and looks every one up; all 24 lookups agree in every thread.
    let (_d, dpa, _log) = context(LogLevel::Info);
    const THREADS: u32 = 16;
    const N: u64 = 24;
    let ht = dpa.hash_table_create(THREADS * N as u32).unwrap();
    assert_eq!((ht.num_entries(), ht.capacity()), (384, 1024));
    let out = dpa.mem_alloc(8 * u64::from(THREADS)).unwrap();
    let done = dpa.sync_event(SyncEventAttr::dpa_to_cpu()).unwrap();
    dpa.kernel_launch_update_set(
        None,
        Some((&done, 1)),
        THREADS,
        "hash_kernel",
        &[ht.dpa_handle(), 1000, N, out.daddr()].map(KernelArg::U64),
    )
    .unwrap();
    done.wait_gt(0, ALL, WAIT).unwrap();
    let mut got = vec![0u8; 8 * THREADS as usize];
    dpa.d2h_memcpy(&mut got, out.daddr()).unwrap();
    let ok: Vec<u64> = got
        .chunks(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(ok, vec![N; THREADS as usize]);
    // The same keys again (the odd ones were removed: their tombstones are reused).
    dpa.kernel_launch_update_set(
        None,
        Some((&done, 2)),
        THREADS,
        "hash_kernel",
        &[ht.dpa_handle(), 1000, N, out.daddr()].map(KernelArg::U64),
    )
    .unwrap();
    done.wait_gt(1, ALL, WAIT).unwrap();
    dpa.d2h_memcpy(&mut got, out.daddr()).unwrap();
    assert!(got
        .chunks(8)
        .all(|c| u64::from_le_bytes(c.try_into().unwrap()) == N));
    assert!(matches!(
        dpa.hash_table_create(0),
        Err(DocaError::InvalidValue(_))
    ));
    dpa.peek_at_last_error().unwrap();
    drop(ht);
    dpa.stop().unwrap();
}

#[test]
fn a_full_hash_table_stops_the_thread() {
    // A table for 2 keys has 4 slots: the kernel adding 8 keys stops at the fifth (the table
    // is full), and the context reports the trap.
    let (_d, dpa, _log) = context(LogLevel::Info);
    let ht = dpa.hash_table_create(2).unwrap();
    let out = dpa.mem_alloc(8).unwrap();
    let done = dpa.sync_event(SyncEventAttr::dpa_to_cpu()).unwrap();
    dpa.kernel_launch_update_set(
        None,
        Some((&done, 1)),
        1,
        "hash_kernel",
        &[ht.dpa_handle(), 1, 8, out.daddr()].map(KernelArg::U64),
    )
    .unwrap();
    match done.wait_gt(0, ALL, WAIT) {
        Err(DocaError::Fatal(why)) => assert!(why.contains("an ebreak"), "{why}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn thread_group_members_know_their_rank() {
    // Four DPA threads in a group, each notified once: each adds 1 << rank and the group size
    // << 32, so the sum shows every rank once and the size four times.
    let (_d, dpa, _log) = context(LogLevel::Info);
    let ev = dpa.sync_event(SyncEventAttr::dpa_to_cpu()).unwrap();
    let mut tg = dpa.thread_group_create(4).unwrap();
    assert_eq!(tg.num_threads(), 4);
    let mut threads = Vec::new();
    let mut ncs = Vec::new();
    for _ in 0..4 {
        let mut t = dpa.thread_create();
        t.set_func_arg("group_thread", ev.dpa_handle().unwrap())
            .unwrap();
        t.start().unwrap();
        ncs.push(dpa.notification_completion_create(&mut t).unwrap());
        threads.push(t);
    }
    // Ranks in reverse creation order.
    for (i, t) in threads.iter().enumerate() {
        tg.set_thread(t, 3 - i as u32).unwrap();
    }
    assert!(matches!(
        tg.set_thread(&threads[0], 3),
        Err(DocaError::NotPermitted(_))
    ));
    assert!(matches!(
        tg.set_thread(&threads[0], 4),
        Err(DocaError::InvalidValue(_))
    ));
    tg.start().unwrap();
    for t in &threads {
        t.run().unwrap();
    }
    for nc in &ncs {
        dpa.kernel_launch_update_set(
            None,
            None,
            1,
            "notify_kernel",
            &[nc.dpa_handle(), 1].map(KernelArg::U64),
        )
        .unwrap();
    }
    let want = 0b1111 + ((4 * 4) << 32);
    assert_eq!(ev.wait_gt(want - 1, ALL, WAIT).unwrap(), want);
    // Misuse.
    let mut incomplete = dpa.thread_group_create(2).unwrap();
    incomplete.set_thread(&threads[0], 0).unwrap();
    assert!(matches!(
        incomplete.start(),
        Err(DocaError::NotPermitted(_))
    ));
    assert!(matches!(
        dpa.thread_group_create(0),
        Err(DocaError::InvalidValue(_))
    ));
    let unstarted = dpa.thread_create();
    assert!(matches!(
        incomplete.set_thread(&unstarted, 1),
        Err(DocaError::NotPermitted(_))
    ));
    drop(ncs);
    for t in threads {
        t.stop();
    }
    dpa.stop().unwrap();
}

/// Context `dpa`'s kernel `rdma_kernel` with one operation, waited for through `done`.
#[allow(clippy::too_many_arguments)]
fn rdma_op(
    dpa: &Dpa,
    done: &SyncEvent,
    n: &mut u64,
    rdma: u64,
    op: u64,
    l: (u64, u64),
    r: (u64, u64),
    len: u64,
    arg: u64,
) {
    *n += 1;
    dpa.kernel_launch_update_add(
        None,
        Some((done, 1)),
        1,
        "rdma_kernel",
        &[rdma, op, l.0, l.1, r.0, r.1, len, arg].map(KernelArg::U64),
    )
    .unwrap();
    done.wait_gt(*n - 1, ALL, WAIT).unwrap();
}

/// One completion of `comp`, polled by a kernel of `dpa`: (type, immediate, user data, wr index).
fn poll_one(
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
fn rdma_between_two_contexts_from_dpa_code() {
    // Two contexts (processes) on one device, each with a DPA RDMA attached to a completion
    // context, connected to each other. DPA kernels post every operation; DPA kernels poll the
    // completions.
    let (_d, ctx) = model("bf3");
    let attr = DpaAttr {
        log_output: MsgOutput::Collect,
        ..DpaAttr::default()
    };
    let a = Dpa::start(&ctx, &app(), &attr).unwrap();
    let b = Dpa::start(&ctx, &app(), &attr).unwrap();
    let side = |d: &Dpa| {
        let mut comp = d.completion_create(32).unwrap();
        comp.start().unwrap();
        let mut rdma = d.rdma_create(16).unwrap();
        rdma.attach(&comp).unwrap();
        rdma.start().unwrap();
        let buf = d.mem_alloc(1024).unwrap();
        let map = d.mmap_dpa(&buf).unwrap();
        let out = d.mem_alloc(32).unwrap();
        let done = d.sync_event(SyncEventAttr::dpa_to_cpu()).unwrap();
        let polled = d.sync_event(SyncEventAttr::dpa_to_cpu()).unwrap();
        (comp, rdma, buf, map, out, done, polled)
    };
    let (ca, mut ra, abuf, amap, aout, adone, apolled) = side(&a);
    let (cb, mut rb, bbuf, bmap, bout, bdone, bpolled) = side(&b);
    assert_eq!(ra.connect(&mut rb).unwrap(), (0, 0));
    let (mut an, mut bn, mut ap, mut bp) = (0, 0, 0, 0);
    let (rah, rbh) = (ra.dpa_handle().unwrap(), rb.dpa_handle().unwrap());
    let (cah, cbh) = (ca.dpa_handle().unwrap(), cb.dpa_handle().unwrap());
    let am = (amap.dpa_handle(), abuf.daddr());
    let bm = (bmap.dpa_handle(), bbuf.daddr());
    let data: Vec<u8> = (0..100u32).map(|i| (i * 13 + 1) as u8).collect();
    a.h2d_memcpy(abuf.daddr(), &data).unwrap();
    b.memset(bbuf.daddr(), 0, 1024).unwrap();

    // SEND with immediate into a posted receive.
    rdma_op(&b, &bdone, &mut bn, rbh, 0, bm, (0, 0), 128, 0);
    rdma_op(&a, &adone, &mut an, rah, 2, am, (0, 0), 100, 0x1234);
    assert_eq!(
        poll_one(&b, cbh, &bout, &bpolled, &mut bp),
        [3, 0x1234, 0, 0],
        "RECV_SEND_IMM"
    );
    assert_eq!(poll_one(&a, cah, &aout, &apolled, &mut ap)[0], 0, "SEND");
    let mut got = vec![0u8; 100];
    b.d2h_memcpy(&mut got, bbuf.daddr()).unwrap();
    assert_eq!(got, data);

    // WRITE into B's map at 256.
    rdma_op(&a, &adone, &mut an, rah, 3, am, (bm.0, bm.1 + 256), 64, 0);
    assert_eq!(poll_one(&a, cah, &aout, &apolled, &mut ap)[0], 0);
    b.d2h_memcpy(&mut got[..64], bbuf.daddr() + 256).unwrap();
    assert_eq!(&got[..64], &data[..64]);

    // READ B's 256.. back into A's 512.
    rdma_op(
        &a,
        &adone,
        &mut an,
        rah,
        5,
        (am.0, am.1 + 512),
        (bm.0, bm.1 + 256),
        64,
        0,
    );
    assert_eq!(poll_one(&a, cah, &aout, &apolled, &mut ap)[0], 0);
    a.d2h_memcpy(&mut got[..64], abuf.daddr() + 512).unwrap();
    assert_eq!(&got[..64], &data[..64]);

    // Two atomic fetch-and-adds of 5 on B's word at 768.
    for _ in 0..2 {
        rdma_op(&a, &adone, &mut an, rah, 6, am, (bm.0, bm.1 + 768), 8, 5);
        assert_eq!(poll_one(&a, cah, &aout, &apolled, &mut ap)[0], 0);
    }
    let mut w = [0u8; 8];
    b.d2h_memcpy(&mut w, bbuf.daddr() + 768).unwrap();
    assert_eq!(u64::from_le_bytes(w), 10);

    // WRITE with immediate: consumes B's next receive, reports the immediate there.
    rdma_op(&b, &bdone, &mut bn, rbh, 0, bm, (0, 0), 128, 0);
    rdma_op(
        &a,
        &adone,
        &mut an,
        rah,
        4,
        am,
        (bm.0, bm.1 + 896),
        32,
        0xbeef,
    );
    let c = poll_one(&b, cbh, &bout, &bpolled, &mut bp);
    assert_eq!(
        (c[0], c[1], c[3]),
        (1, 0xbeef, 1),
        "RECV_RDMA_WRITE_IMM, second receive"
    );
    assert_eq!(poll_one(&a, cah, &aout, &apolled, &mut ap)[0], 0);
    b.d2h_memcpy(&mut got[..32], bbuf.daddr() + 896).unwrap();
    assert_eq!(&got[..32], &data[..32]);

    // B's kernel signals A's exported sync event over the connection: set to 40, then add 2;
    // A's host sees 42 (a remote publisher, a CPU subscriber).
    let a_ev = a
        .sync_event(SyncEventAttr {
            publisher_remote: true,
            subscriber_cpu: true,
            ..SyncEventAttr::default()
        })
        .unwrap();
    assert!(matches!(
        a_ev.update_set(1),
        Err(DocaError::NotPermitted(_))
    ));
    let remote = b.remote_event(a_ev.export_remote().unwrap()).unwrap();
    rdma_op(
        &b,
        &bdone,
        &mut bn,
        rbh,
        7,
        bm,
        (0, remote.dpa_handle()),
        0,
        40,
    );
    assert_eq!(poll_one(&b, cbh, &bout, &bpolled, &mut bp)[0], 0);
    assert_eq!(a_ev.wait_gt(39, ALL, WAIT).unwrap(), 40);
    rdma_op(
        &b,
        &bdone,
        &mut bn,
        rbh,
        8,
        bm,
        (0, remote.dpa_handle()),
        0,
        2,
    );
    assert_eq!(poll_one(&b, cbh, &bout, &bpolled, &mut bp)[0], 0);
    assert_eq!(a_ev.wait_gt(41, ALL, WAIT).unwrap(), 42);
    // An event without a remote publisher has nothing to export.
    assert!(matches!(
        a.sync_event(SyncEventAttr::dpa_to_cpu())
            .unwrap()
            .export_remote(),
        Err(DocaError::NotPermitted(_))
    ));
    a.peek_at_last_error().unwrap();
    b.peek_at_last_error().unwrap();
    drop((ra, rb, ca, cb));
    a.stop().unwrap();
    b.stop().unwrap();
}

#[test]
fn rdma_between_dpa_code_and_a_host_qp() {
    // A DPA RDMA connected to a host RC QP: the DPA sends into the host's posted receive.
    use mlx5_dpa::mem::{Access, MemoryRegion};
    use mlx5_dpa::queues::{Cq, CqConfig, HostQueueMem, QpConfig, RcQp};
    let (_d, ctx) = model("bf3");
    let attr = DpaAttr {
        log_output: MsgOutput::Collect,
        ..DpaAttr::default()
    };
    let dpa = Dpa::start(&ctx, &app(), &attr).unwrap();
    let mut comp = dpa.completion_create(8).unwrap();
    comp.start().unwrap();
    let mut rdma = dpa.rdma_create(8).unwrap();
    rdma.attach(&comp).unwrap();
    rdma.start().unwrap();
    // The host side, in the process's PD (any PD of the device would do).
    let p = dpa.process();
    let cqc = CqConfig::new(4);
    let mut host_cq = Cq::create(
        &ctx,
        p.uar(),
        HostQueueMem::alloc(&ctx, cqc.ring_bytes()).unwrap(),
        &cqc,
    )
    .unwrap();
    let qpc = QpConfig::new(4, 4);
    let mut host_qp = RcQp::create(
        &ctx,
        p.pd(),
        p.uar(),
        &host_cq,
        &host_cq,
        HostQueueMem::alloc(&ctx, qpc.ring_bytes()).unwrap(),
        &qpc,
    )
    .unwrap();
    let mr = MemoryRegion::alloc(&ctx, p.pd(), 4096, Access::LOCAL_WRITE).unwrap();
    rdma.connect_host(&mut host_qp).unwrap();
    host_qp.post_recv(&[mr.sge(0, 256).unwrap()], 7).unwrap();
    host_qp.ring_recv_doorbell();
    let buf = dpa.mem_alloc(256).unwrap();
    let map = dpa.mmap_dpa(&buf).unwrap();
    let msg: Vec<u8> = (0..77u32).map(|i| (255 - i) as u8).collect();
    dpa.h2d_memcpy(buf.daddr(), &msg).unwrap();
    let (done, mut n) = (dpa.sync_event(SyncEventAttr::dpa_to_cpu()).unwrap(), 0);
    rdma_op(
        &dpa,
        &done,
        &mut n,
        rdma.dpa_handle().unwrap(),
        1,
        (map.dpa_handle(), buf.daddr()),
        (0, 0),
        77,
        0,
    );
    let c = host_cq.poll_timeout(WAIT).unwrap().unwrap();
    assert_eq!(c.byte_len, 77);
    assert_eq!(host_qp.complete_recv(c.wqe_counter).unwrap(), 7);
    assert_eq!(mr.buf().to_vec(0, 77).unwrap(), msg);
    drop((host_qp, host_cq, rdma, comp));
    dpa.stop().unwrap();
}
