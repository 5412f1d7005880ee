//! FlexIO semantics through the driver's `dpa` API only, on the device model: capabilities,
//! process lifetime, DPA memory, host <-> DPA copies, RPC, faults with coredumps, the
//! watchdog and event handlers activated by completions.

use crate::dpa_common;

use dpa_common::model;
use std::time::{Duration, Instant};

use mlx5_dpa::devx::UarKind;
use mlx5_dpa::dpa::caps::DpaCaps;
use mlx5_dpa::dpa::coredump::RegionKind;
use mlx5_dpa::dpa::heap::SIZE_CLASSES;
use mlx5_dpa::dpa::thread::{Affinity, EventHandlerAttr, ThreadState};
use mlx5_dpa::dpa::{DpaError, Process, ProcessAttr, ProcessStatus};
use mlx5_dpa::mem::Pd;
use mlx5_dpa::queues::{
    Arm, Cq, CqConfig, CqEvents, HostQueueMem, QpConfig, RcConnect, RcPeer, RcQp, SendOp, SendWr,
};
use mlx5_dpa::uar::UarPage;

type R = Result<(), Box<dyn std::error::Error>>;

const SELFTEST: &[u8] = include_bytes!("../../fw-blobs/bin/selftest.elf");
const RPC_CALC: &[u8] = include_bytes!("../../fw-blobs/bin/rpc_calc.elf");
/// The same program linked with the older layout: text at 0x1000_0000, data at 0x2800_0000.
const RPC_CALC_OLDER: &[u8] = include_bytes!("../../fw-blobs/bin/rpc_calc_older.elf");
/// One source built twice (fw-blobs/src/ident.h): same layout, `ident(x)` = 0xa000 + x / 0xb000 + x.
const IDENT_A: &[u8] = include_bytes!("../../fw-blobs/bin/ident_a.elf");
const IDENT_B: &[u8] = include_bytes!("../../fw-blobs/bin/ident_b.elf");
const T: Duration = Duration::from_secs(10);

#[test]
fn caps_on_bf3_and_not_supported_on_cx7() -> R {
    let (d, ctx) = model("bf3");
    let caps = DpaCaps::query(&ctx)?;
    assert_eq!(caps.topology.total_eus(), 256);
    assert_eq!(caps.topology.usable_eus(), 254);
    assert_eq!(caps.max_processes, 64);
    assert_eq!(caps.max_threads_per_process, 256);
    assert_eq!(caps.process_mem_bytes, 256 << 20);
    d.stop_engine();

    let (d, ctx) = model("cx7");
    assert!(matches!(
        DpaCaps::query(&ctx),
        Err(DpaError::NotSupported(_))
    ));
    assert!(matches!(
        Process::create(&ctx, SELFTEST, &ProcessAttr::default()),
        Err(DpaError::NotSupported(_))
    ));
    d.stop_engine();
    Ok(())
}

#[test]
fn process_create_destroy_leaves_nothing() -> R {
    let (d, ctx) = model("bf3");
    {
        let p = Process::create(&ctx, SELFTEST, &ProcessAttr::default())?;
        let b = p.alloc(100)?;
        p.copy_to_dev(b.daddr(), &[1, 2, 3])?;
        let h = p.event_handler(&EventHandlerAttr::new("st_add", 1))?;
        assert_eq!(p.call_raw("st_add", 1)?, 2);
        // Dropping the process first: the buffer and the handler keep it alive.
        drop(p);
        drop(h);
        drop(b);
    }
    drop(ctx);
    d.stop_engine();
    assert!(d.inventory().is_empty(), "{}", d.inventory());
    Ok(())
}

/// Regression (issue 30, defect 9): each created, called and dropped process left its code
/// cache (~30 KiB) on an EU, so memory grew linearly over the first 2048 processes while
/// the model reported nothing alive. A destroyed process's caches now go with it
/// (`examples/process_churn.rs` shows the resident set flat).
#[test]
fn a_destroyed_processes_code_caches_go_with_it() -> R {
    let (d, ctx) = model("bf3");
    let keep = Process::create(&ctx, SELFTEST, &ProcessAttr::default())?;
    assert_eq!(keep.call_raw("st_add", 1)?, 2);
    let before = d.dpa_code_caches();
    assert!(before >= 1, "the live process's code is cached");
    for i in 0..40u64 {
        let p = Process::create(&ctx, SELFTEST, &ProcessAttr::default())?;
        assert_eq!(p.call_raw("st_add", i)?, i + 1);
        assert!(d.dpa_code_caches() > before);
    }
    assert!(d.dpa_stats().code_caches_made >= 41);
    assert_eq!(
        d.dpa_code_caches(),
        before,
        "caches of destroyed processes are held"
    );
    drop(keep);
    assert_eq!(d.dpa_code_caches(), 0);
    drop(ctx);
    d.stop_engine();
    Ok(())
}

/// Regression: the model's per-EU decoded-instruction caches were keyed by (process id, text
/// generation); ids are reused and generations restarted at 0 for every process, so a process
/// that got a destroyed process's id ran the destroyed process's code on the same EU, even
/// from another DevX context. Two gcc-built programs with the same layout and different
/// constants, one after the other on one EU.
#[test]
fn a_process_reusing_a_destroyed_ones_id_runs_its_own_code() -> R {
    const EU: u16 = 7;
    let (d, ctx_a) = model("bf3");
    let ctx_b = d.open_devx();
    let run = |ctx: &std::sync::Arc<dyn mlx5_dpa::devx::Devx>, elf: &[u8]| {
        let p = Process::create(ctx, elf, &ProcessAttr::default())?;
        let h = p.event_handler(&EventHandlerAttr {
            affinity: Affinity::Strict(EU),
            ..EventHandlerAttr::new("ident", 0)
        })?;
        h.run(1)?;
        let info = h.wait_done(T)?;
        assert_eq!(info.last_eu, EU);
        Ok::<_, DpaError>((p.id(), info.return_value))
    };
    let (id_a, a) = run(&ctx_a, IDENT_A)?;
    assert_eq!(a, 0xa001);
    // Context A's process is destroyed, then the context closes.
    drop(ctx_a);
    let (id_b, b) = run(&ctx_b, IDENT_B)?;
    assert_eq!(id_b, id_a, "the model reuses the destroyed process's id");
    assert_eq!(
        b, 0xb001,
        "process {id_b:#x} ran the code of the process before it"
    );
    // And back: A's program again, in B's context, under the same id.
    let (id_c, c) = run(&ctx_b, IDENT_A)?;
    assert_eq!((id_c, c), (id_a, 0xa001));
    drop(ctx_b);
    d.stop_engine();
    assert!(d.inventory().is_empty(), "{}", d.inventory());
    Ok(())
}

/// Regression: a size near `u64::MAX` overflowed rounding up to pages (a panic in debug
/// builds, a 0-byte block in release). Every absurd size is a typed error, and nothing is
/// allocated.
#[test]
fn absurd_dpa_buffer_sizes_are_typed_errors() -> R {
    let (d, ctx) = model("bf3");
    let p = Process::create(&ctx, SELFTEST, &ProcessAttr::default())?;
    let before = p.heap_stats();
    for size in [
        u64::MAX,
        u64::MAX - 63,
        u64::MAX - 4095,
        u64::MAX - 4096 - 63,
        1 << 63,
        1 << 40,
        0,
    ] {
        match p.alloc(size) {
            Err(DpaError::BadArgs(_)) | Err(DpaError::Devx(_)) => {}
            other => panic!("alloc({size:#x}): {other:?}"),
        }
    }
    assert_eq!(p.heap_stats(), before);
    drop(p);
    drop(ctx);
    d.stop_engine();
    assert!(d.inventory().is_empty(), "{}", d.inventory());
    Ok(())
}

#[test]
fn bad_image_and_unknown_symbol_are_typed_errors() -> R {
    let (d, ctx) = model("bf3");
    assert!(matches!(
        Process::create(&ctx, b"not an elf", &ProcessAttr::default()),
        Err(DpaError::Elf(_))
    ));
    let p = Process::create(&ctx, SELFTEST, &ProcessAttr::default())?;
    assert!(matches!(
        p.call("no_such_function", &[]),
        Err(DpaError::UnknownSymbol(_))
    ));
    assert!(matches!(
        p.call("st_add", &[1, 2, 3, 4, 5, 6, 7, 8, 9]),
        Err(DpaError::BadArgs(_))
    ));
    assert!(matches!(
        p.call_packed("st_add", "mlx5_dpa_rpc_unpack_u64", &[0; 1025]),
        Err(DpaError::BadArgs(_))
    ));
    assert!(matches!(
        p.call_packed("st_add", "no_such_unpack", &[0; 8]),
        Err(DpaError::UnknownSymbol(s)) if s == "no_such_unpack"
    ));
    drop(p);
    drop(ctx);
    d.stop_engine();
    assert!(d.inventory().is_empty(), "{}", d.inventory());
    Ok(())
}

#[test]
fn alloc_uses_size_classes_and_frees_blocks() -> R {
    let (d, ctx) = model("bf3");
    let p = Process::create(&ctx, SELFTEST, &ProcessAttr::default())?;
    // The RPC argument block lives in one 4 KiB-class block.
    let base = p.heap_stats();
    assert_eq!(base.blocks_per_class, [1, 0, 0, 0]);
    // Small buffers share blocks, 64-byte aligned.
    let a = p.alloc(8)?;
    let b = p.alloc(100)?;
    assert_eq!(a.len(), 64);
    assert_eq!(b.len(), 128);
    assert_eq!(a.daddr() % 64, 0);
    assert_ne!(a.daddr(), b.daddr());
    assert_eq!(p.heap_stats().blocks_per_class, [1, 0, 0, 0]);
    let mid = p.alloc(100 << 10)?;
    let big = p.alloc(1 << 20)?;
    assert_eq!(p.heap_stats().blocks_per_class, [1, 1, 1, 0]);
    assert_eq!(mid.len(), 100 << 10);
    // The largest class exceeds the model's 256 MiB budget once anything else is allocated.
    assert!(p.alloc(SIZE_CLASSES[3]).is_err());
    drop(mid);
    drop(big);
    assert_eq!(p.heap_stats().blocks_per_class, [1, 0, 0, 0]);
    drop((a, b));
    assert_eq!(p.heap_stats().buffers, 1);
    assert!(matches!(p.alloc(0), Err(DpaError::BadArgs(_))));
    drop(p);
    d.stop_engine();
    Ok(())
}

#[test]
fn copy_round_trip_and_memset() -> R {
    let (d, ctx) = model("bf3");
    let p = Process::create(&ctx, SELFTEST, &ProcessAttr::default())?;
    let buf = p.alloc(6000)?;
    let data: Vec<u8> = (0..6000u32).map(|i| (i * 31 + 7) as u8).collect();
    p.copy_to_dev(buf.daddr(), &data)?;
    let mut back = vec![0u8; data.len()];
    p.copy_from_dev(buf.daddr(), &mut back)?;
    assert_eq!(back, data);
    // A buffer of a larger class, above the first: the key grows to cover it.
    let big = p.alloc(200 << 10)?;
    let data2: Vec<u8> = (0..(150u32 << 10)).map(|i| (i ^ (i >> 8)) as u8).collect();
    p.copy_to_dev(big.daddr() + 1000, &data2)?;
    let mut back2 = vec![0u8; data2.len()];
    p.copy_from_dev(big.daddr() + 1000, &mut back2)?;
    assert_eq!(back2, data2);
    // memset
    p.memset(buf.daddr() + 100, 0xab, 1000)?;
    p.copy_from_dev(buf.daddr(), &mut back)?;
    assert!(back[100..1100].iter().all(|&x| x == 0xab));
    assert_eq!(&back[..100], &data[..100]);
    assert_eq!(&back[1100..], &data[1100..]);
    // The DPA sees what the host wrote: st_fault_load reads a u64.
    p.copy_to_dev(buf.daddr(), &0x1122_3344_5566_7788u64.to_le_bytes())?;
    assert_eq!(
        p.call_raw("st_fault_load", buf.daddr())?,
        0x1122_3344_5566_7788
    );
    // And the host sees what the DPA wrote: st_store.
    assert_eq!(p.call_raw("st_store", buf.daddr() + 8)?, 0);
    let mut w = [0u8; 8];
    p.copy_from_dev(buf.daddr() + 8, &mut w)?;
    assert_eq!(u64::from_le_bytes(w), 0x0123_4567_89ab_cdef);
    // Outside the process memory: refused before anything is sent.
    assert!(matches!(
        p.copy_to_dev(0x1000, &[0; 8]),
        Err(DpaError::BadArgs(_))
    ));
    drop((buf, big, p));
    d.stop_engine();
    Ok(())
}

/// Older snap builds link text at 0x1000_0000 and data at 0x2800_0000 (docs/sources.md section 8):
/// such a program loads at its link addresses, its DPA memory (data, heap, buffers) starts at
/// 0x2800_0000, and it runs as the current layout does. (Before: creation was refused with
/// "a loadable segment outside the text window".)
#[test]
fn a_program_linked_with_the_older_layout_loads_and_runs() -> R {
    let (d, ctx) = model("bf3");
    {
        let p = Process::create(&ctx, RPC_CALC_OLDER, &ProcessAttr::default())?;
        let entry = p.symbol("rpc_calculate")?;
        assert!((0x1000_0000..0x2800_0000).contains(&entry), "{entry:#x}");
        assert_eq!(p.call("rpc_calculate", &[44, 55])?, 99);
        assert_eq!(
            p.call("rpc_digits8", &[8, 7, 6, 5, 4, 3, 2, 1])?,
            87_654_321
        );
        let buf = p.alloc(4096)?;
        assert!(
            (0x2800_0000..0x4000_0000).contains(&buf.daddr()),
            "{:#x}",
            buf.daddr()
        );
        let data: Vec<u8> = (0..4096u32).map(|i| (i * 7) as u8).collect();
        p.copy_to_dev(buf.daddr(), &data)?;
        let mut back = vec![0u8; 4096];
        p.copy_from_dev(buf.daddr(), &mut back)?;
        assert_eq!(back, data);
        drop(buf);
    }
    drop(ctx);
    d.stop_engine();
    assert!(d.inventory().is_empty(), "{}", d.inventory());
    Ok(())
}

#[test]
fn rpc_calls_through_the_generic_unpack_a_programs_own_and_directly() -> R {
    let (d, ctx) = model("bf3");
    let p = Process::create(&ctx, RPC_CALC, &ProcessAttr::default())?;
    assert_eq!(p.call("rpc_calculate", &[44, 55])?, 99);
    assert_eq!(p.call("rpc_echo", &[0xdead_beef])?, 0xdead_beef);
    // All eight arguments arrive, in order; fewer are padded with zeros.
    assert_eq!(
        p.call("rpc_digits8", &[1, 2, 3, 4, 5, 6, 7, 8])?,
        12_345_678
    );
    assert_eq!(p.call("rpc_digits8", &[9])?, 90_000_000);
    // The program's own unpack reads the buffer the caller packed (two u32 here).
    let mut packed = Vec::new();
    packed.extend_from_slice(&40u32.to_le_bytes());
    packed.extend_from_slice(&2u32.to_le_bytes());
    assert_eq!(
        p.call_packed("rpc_calculate", "rpc_unpack_u32_pair", &packed)?,
        42
    );
    assert_eq!(p.call_raw("rpc_echo", 7)?, 7);
    let s = Process::create(&ctx, SELFTEST, &ProcessAttr::default())?;
    assert_eq!(s.call_raw("st_add", 41)?, 42);
    assert_eq!(s.err_status()?.status, ProcessStatus::Ok);
    drop((p, s));
    d.stop_engine();
    Ok(())
}

#[test]
fn faulting_rpc_gives_process_fault_and_a_coredump() -> R {
    let (d, ctx) = model("bf3");
    let p = Process::create(&ctx, SELFTEST, &ProcessAttr::default())?;
    // No coredump while the process is fine.
    assert!(p.coredump().is_err());
    match p.call_raw("st_fault_load", 0x10) {
        Err(DpaError::ProcessFault { status, syndrome }) => {
            assert_eq!(status, ProcessStatus::Fault);
            assert_ne!(syndrome, 0);
        }
        other => panic!("expected a fault, got {other:?}"),
    }
    let st = p.err_status()?;
    assert_eq!(st.status, ProcessStatus::Fault);
    let dump = p.coredump()?;
    assert_eq!(dump.dpa_process_id, p.id());
    assert_eq!(
        dump.region_of(dump.pc).map(|r| r.kind),
        Some(RegionKind::Text)
    );
    assert_eq!(dump.fault_addr, 0x10);
    // A failed process takes no more calls.
    assert!(p.call_raw("st_add", 1).is_err());

    let q = Process::create(&ctx, SELFTEST, &ProcessAttr::default())?;
    assert!(matches!(
        q.call_raw("st_illegal", 0),
        Err(DpaError::ProcessFault {
            status: ProcessStatus::Fault,
            ..
        })
    ));
    let dump = q.coredump()?;
    assert_eq!(dump.insn, 0x0000_000b);
    let text = dump.to_string();
    assert!(
        text.contains("note: 0x0000000b is in the custom-0 opcode space"),
        "{text}"
    );
    assert_eq!(
        dump.region_of(dump.pc).map(|r| r.kind),
        Some(RegionKind::Text)
    );
    drop((p, q));
    drop(ctx);
    d.stop_engine();
    assert!(d.inventory().is_empty(), "{}", d.inventory());
    Ok(())
}

#[test]
fn watchdog_stops_a_spinning_rpc() -> R {
    let (d, ctx) = model("bf3");
    d.with_profile_mut(|p| p.dpa_insn_budget = 100_000);
    let p = Process::create(&ctx, SELFTEST, &ProcessAttr::default())?;
    match p.call_raw("st_spin_forever", 0) {
        Err(DpaError::ProcessFault { status, .. }) => assert_eq!(status, ProcessStatus::Watchdog),
        other => panic!("expected the watchdog, got {other:?}"),
    }
    let dump = p.coredump()?;
    assert_eq!(dump.pc, p.symbol("st_spin_forever")?);
    drop(p);
    d.stop_engine();
    Ok(())
}

/// One process crashing or spinning leaves another untouched: each sees only its own memory,
/// and the failures show in the failing process's error status only.
#[test]
fn processes_are_isolated_and_fail_alone() -> R {
    let (d, ctx) = model("bf3");
    d.with_profile_mut(|p| p.dpa_insn_budget = 200_000);
    let a = Process::create(&ctx, SELFTEST, &ProcessAttr::default())?;
    let b = Process::create(&ctx, SELFTEST, &ProcessAttr::default())?;
    let c = Process::create(&ctx, SELFTEST, &ProcessAttr::default())?;
    let buf = a.alloc(64)?;
    let pattern = 0x5eed_1234_abcd_0001u64;
    a.copy_to_dev(buf.daddr(), &pattern.to_le_bytes())?;
    assert_eq!(a.call_raw("st_fault_load", buf.daddr())?, pattern);
    // B loads the same DPA address: its own memory (or nothing), never A's bytes.
    match b.call_raw("st_fault_load", buf.daddr()) {
        Ok(v) => assert_ne!(v, pattern, "B read A's memory"),
        Err(DpaError::ProcessFault { status, .. }) => assert_eq!(status, ProcessStatus::Fault),
        Err(e) => return Err(e.into()),
    }
    // B crashes, C spins into the watchdog; A is fine and still serves calls.
    let _ = b.call_raw("st_fault_load", 0x10);
    assert_eq!(b.err_status()?.status, ProcessStatus::Fault);
    assert!(matches!(
        c.call_raw("st_spin_forever", 0),
        Err(DpaError::ProcessFault {
            status: ProcessStatus::Watchdog,
            ..
        })
    ));
    assert_eq!(c.err_status()?.status, ProcessStatus::Watchdog);
    assert_eq!(a.err_status()?.status, ProcessStatus::Ok);
    assert_eq!(a.call_raw("st_add", 41)?, 42);
    assert_eq!(
        a.call_raw("st_fault_load", buf.daddr())?,
        pattern,
        "A's memory kept"
    );
    drop(buf);
    drop((a, b, c));
    drop(ctx);
    d.stop_engine();
    assert!(d.inventory().is_empty(), "{}", d.inventory());
    Ok(())
}

#[test]
fn event_handler_counts_completions() -> R {
    let (d, ctx) = model("bf3");
    let p = Process::create(&ctx, SELFTEST, &ProcessAttr::default())?;
    let counter = p.alloc(8)?;
    p.memset(counter.daddr(), 0, 8)?;
    let h = p.event_handler(&EventHandlerAttr::new("st_counter", counter.daddr()))?;
    assert_eq!(h.state()?, ThreadState::Idle);

    // A loopback RC pair whose requester's CQ raises its events on the handler.
    let pd = Pd::alloc(&ctx)?;
    let uar = UarPage::alloc(&ctx, UarKind::NonCached)?;
    let mut cqc = CqConfig::new(4);
    cqc.events = CqEvents::DpaThread(h.id());
    let mut cq = Cq::create(
        &ctx,
        &uar,
        HostQueueMem::alloc(&ctx, cqc.ring_bytes())?,
        &cqc,
    )?;
    let pc = CqConfig::new(4);
    let peer_cq = Cq::create(&ctx, &uar, HostQueueMem::alloc(&ctx, pc.ring_bytes())?, &pc)?;
    let qpc = QpConfig::new(4, 1);
    let mut qp = RcQp::create(
        &ctx,
        &pd,
        &uar,
        &cq,
        &cq,
        HostQueueMem::alloc(&ctx, qpc.ring_bytes())?,
        &qpc,
    )?;
    let mut peer = RcQp::create(
        &ctx,
        &pd,
        &uar,
        &peer_cq,
        &peer_cq,
        HostQueueMem::alloc(&ctx, qpc.ring_bytes())?,
        &qpc,
    )?;
    qp.connect(&RcConnect::new(RcPeer::Loopback {
        remote_qpn: peer.qpn(),
    }))?;
    peer.connect(&RcConnect::new(RcPeer::Loopback {
        remote_qpn: qp.qpn(),
    }))?;

    // st_counter does not re-arm: the host arms before each completion.
    for n in 1..=4u64 {
        cq.arm(Arm::Next);
        qp.post_send(&SendWr::new(n, SendOp::Nop))?;
        qp.ring_send_doorbell();
        let c = cq.poll_timeout(T)??;
        qp.complete_send(c.wqe_counter)?;
        let start = Instant::now();
        while h.activations()? < n {
            assert!(start.elapsed() < T, "activation {n} did not happen");
            std::thread::sleep(Duration::from_millis(1));
        }
        let start = Instant::now();
        while h.state()? != ThreadState::Idle {
            assert!(start.elapsed() < T, "activation {n} did not end");
            std::thread::sleep(Duration::from_millis(1));
        }
        let mut v = [0u8; 8];
        p.copy_from_dev(counter.daddr(), &mut v)?;
        assert_eq!(u64::from_le_bytes(v), n);
    }
    // A run from the host counts too.
    h.run(counter.daddr())?;
    let start = Instant::now();
    while h.activations()? < 5 {
        assert!(start.elapsed() < T);
        std::thread::sleep(Duration::from_millis(1));
    }
    drop((qp, peer, cq, peer_cq));
    h.destroy()?;
    drop((counter, p, pd, uar));
    drop(ctx);
    d.stop_engine();
    assert!(d.inventory().is_empty(), "{}", d.inventory());
    Ok(())
}

/// Waits, bounded, until `h` has `n` activations and is not running; its info.
fn settle(
    h: &mlx5_dpa::dpa::thread::EventHandler,
    n: u64,
) -> Result<mlx5_dpa::dpa::thread::ThreadInfo, DpaError> {
    let start = Instant::now();
    loop {
        let info = h.info()?;
        if info.activations >= n && info.state != ThreadState::Running {
            return Ok(info);
        }
        assert!(start.elapsed() < T, "activation {n} did not end: {info:?}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// FlexIO's thread calls beyond reschedule / finish: `flexio_dev_get_thread_id` is the
/// handler's id; `flexio_dev_yield` in a continuable handler ends the activation and the next
/// event resumes after it with the registers kept (a non-continuable one runs straight
/// through); `flexio_dev_thread_retrigger` starts the thread again without an event; the
/// window copy helpers answer FAILED as documented; `flexio_dev_msix_send` needs an emulated
/// function the model does not have and faults with that named.
#[test]
fn thread_id_yield_retrigger_and_the_unsupported_calls() -> R {
    let (d, ctx) = model("bf3");
    let p = Process::create(&ctx, SELFTEST, &ProcessAttr::default())?;
    let buf = p.alloc(64)?;
    let words = |p: &Process| -> Result<[u64; 3], DpaError> {
        let mut b = [0u8; 24];
        p.copy_from_dev(buf.daddr(), &mut b)?;
        Ok([0, 1, 2].map(|i| u64::from_le_bytes(b[i * 8..i * 8 + 8].try_into().unwrap())))
    };

    // Thread id.
    let h = p.event_handler(&EventHandlerAttr::new("st_thread_id", buf.daddr()))?;
    h.run(buf.daddr())?;
    let info = settle(&h, 1)?;
    assert_eq!(info.return_value, u64::from(h.id()));
    assert_eq!(words(&p)?[0], u64::from(h.id()));
    drop(h);

    // Yield, continuable: one step per activation, the local sum kept across them.
    p.memset(buf.daddr(), 0, 64)?;
    let h = p.event_handler(&EventHandlerAttr {
        continuable: true,
        ..EventHandlerAttr::new("st_yield", buf.daddr())
    })?;
    for (n, want) in [
        (1, [0x1001, 0, 0]),
        (2, [0x1001, 0x1003, 0]),
        (3, [0x1001, 0x1003, 0x1006]),
    ] {
        h.run(buf.daddr())?;
        let info = settle(&h, n)?;
        assert_eq!(info.state, ThreadState::Idle, "activation {n} yielded");
        assert_eq!(words(&p)?, want, "after activation {n}");
    }
    h.run(buf.daddr())?;
    let info = settle(&h, 4)?;
    assert_eq!(
        (info.state, info.return_value),
        (ThreadState::Finished, 0x1006)
    );
    drop(h);
    // Not continuable: yield has no effect, one activation does it all.
    p.memset(buf.daddr(), 0, 64)?;
    let h = p.event_handler(&EventHandlerAttr::new("st_yield", buf.daddr()))?;
    h.run(buf.daddr())?;
    let info = settle(&h, 1)?;
    assert_eq!(
        (info.activations, info.return_value),
        (1, 0x1006),
        "{info:?}"
    );
    assert_eq!(words(&p)?, [0x1001, 0x1003, 0x1006]);
    drop(h);

    // Retrigger: three activations from one run.
    p.memset(buf.daddr(), 0, 64)?;
    let h = p.event_handler(&EventHandlerAttr::new("st_retrigger", buf.daddr()))?;
    h.run(buf.daddr())?;
    let info = settle(&h, 3)?;
    assert_eq!(
        (info.activations, info.state, info.return_value),
        (3, ThreadState::Finished, 3)
    );
    drop(h);

    assert_eq!(p.call_raw("st_window_copy", buf.daddr())?, 0);

    // MSI-X: a fault naming the outbox register the model lacks.
    let r = p.call_raw("st_msix", 5);
    assert!(matches!(r, Err(DpaError::ProcessFault { .. })), "{r:?}");
    let dump = p.coredump()?;
    assert!(
        matches!(
            dump.cause,
            mlx5_dpa::dpa::coredump::Cause::MemoryFault { .. }
        ),
        "{:?}",
        dump.cause
    );
    let text = dump.to_string();
    assert!(
        text.contains("store failed: a device register refused it"),
        "{text}"
    );
    drop(buf);
    drop(p);
    drop(ctx);
    d.stop_engine();
    assert!(d.inventory().is_empty(), "{}", d.inventory());
    Ok(())
}

/// The DPA timer (`rdtime`, `__dpa_thread_time`) follows real time: two reads in a row differ,
/// and two activations 20 ms apart read at least 20 ms (20,000,000 ticks of the 1 GHz timer)
/// apart. (Before: each read added a constant 1000, whatever the time.)
#[test]
fn the_dpa_timer_advances_with_real_time() -> R {
    let (d, ctx) = model("bf3");
    let p = Process::create(&ctx, SELFTEST, &ProcessAttr::default())?;
    let buf = p.alloc(16)?;
    let read = |p: &Process| -> Result<(u64, u64), DpaError> {
        let mut b = [0u8; 16];
        p.copy_from_dev(buf.daddr(), &mut b)?;
        Ok((
            u64::from_le_bytes(b[..8].try_into().unwrap()),
            u64::from_le_bytes(b[8..].try_into().unwrap()),
        ))
    };
    let first = p.call_raw("st_time", buf.daddr())?;
    let (a0, a1) = read(&p)?;
    assert_eq!(first, a0);
    assert!(a1 > a0, "{a0} {a1}");
    std::thread::sleep(Duration::from_millis(20));
    p.call_raw("st_time", buf.daddr())?;
    let (b0, _) = read(&p)?;
    assert!(b0 - a1 >= 20_000_000, "{a1} then {b0}");
    drop(buf);
    drop(p);
    drop(ctx);
    d.stop_engine();
    Ok(())
}

/// "DPA threads are an actual hardware resource and are, therefore, limited in number to 256"
/// (DPA Subsystem guide): the model's BlueField-3 refuses the 257th thread of the device, even
/// when it belongs to another process.
#[test]
fn the_device_has_256_dpa_threads() -> R {
    let (d, ctx) = model("bf3");
    {
        let caps = DpaCaps::query(&ctx)?;
        assert_eq!(caps.max_threads, 256, "{caps:?}");
        let p = Process::create(&ctx, SELFTEST, &ProcessAttr::default())?;
        let q = Process::create(&ctx, SELFTEST, &ProcessAttr::default())?;
        let mut threads = Vec::new();
        for i in 0..256 {
            let owner = if i < 200 { &p } else { &q };
            threads.push(owner.event_handler(&EventHandlerAttr::new("st_add", 0))?);
        }
        let e = q
            .event_handler(&EventHandlerAttr::new("st_add", 0))
            .unwrap_err();
        assert!(e.to_string().contains("NO_RES"), "{e}");
        // One gone, one can come.
        threads.pop();
        threads.push(p.event_handler(&EventHandlerAttr::new("st_add", 0))?);
        drop(threads);
    }
    drop(ctx);
    d.stop_engine();
    assert!(d.inventory().is_empty(), "{}", d.inventory());
    Ok(())
}
