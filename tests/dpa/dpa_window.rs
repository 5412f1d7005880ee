//! Windows, outboxes and EU groups / partitions through the driver's `dpa` API, end to end on
//! the device model: a device program writes and reads host memory through a window, a key of
//! another PD faults it, misaligned buffers are refused on the host, an outbox rings only
//! queues of its UAR, a grouped handler runs on a member EU, and nothing is left behind.

use crate::dpa_common;
use crate::flexio_window as sample;

use dpa_common::model;
use std::time::{Duration, Instant};

use mlx5_dpa::devx::UarKind;
use mlx5_dpa::dpa::caps::DpaCaps;
use mlx5_dpa::dpa::coredump::RegionKind;
use mlx5_dpa::dpa::eu::{self, EuGroup, EuPartition, EUG_NAME_LEN};
use mlx5_dpa::dpa::thread::{Affinity, EventHandler, EventHandlerAttr, ThreadInfo, ThreadState};
use mlx5_dpa::dpa::window::WINDOW_BUF_ALIGN;
use mlx5_dpa::dpa::{DpaError, Process, ProcessAttr, ProcessStatus};
use mlx5_dpa::mem::{Access, MemoryRegion, Pd};
use mlx5_dpa::queues::{Cq, CqConfig, HostQueueMem};
use mlx5_dpa::uar::UarPage;

type R = Result<(), Box<dyn std::error::Error>>;

const WINDOW_WRITER: &[u8] = include_bytes!("../../fw-blobs/bin/window_writer.elf");
const SELFTEST: &[u8] = include_bytes!("../../fw-blobs/bin/selftest.elf");
const T: Duration = Duration::from_secs(10);

/// `WINDOW_WRITER_MODE_*` (fw-blobs/src/window_writer.h).
const MODE_BYTES: u32 = 0;
const MODE_TEXT: u32 = 1;
/// `WINDOW_WRITER_ERR`.
const WINDOW_WRITER_ERR: u64 = u64::MAX;
/// `st_outbox_args.outbox_id` meaning "use the thread's default outbox" (selftest.h).
const ST_OUTBOX_KEEP: u32 = 0xffff_ffff;
/// `st_outbox_db`'s failure return (selftest.h `ST_FAILED`).
const ST_FAILED: u64 = u64::MAX;
/// Outbox register of the CQ arm doorbell (the model's outbox page, FlexIO `CQ_DB`).
const OUTBOX_CQ_DB: u32 = 0x100;

/// `struct window_writer_args` (window_writer.h), as the window sample writes it.
use sample::window_writer_args as window_args;

/// `result` and `daddr` of a `window_writer_args` block in DPA memory.
fn window_out(p: &Process, args: u64) -> Result<(u64, u64), DpaError> {
    let mut a = [0u8; 48];
    p.copy_from_dev(args, &mut a)?;
    let u = |o: usize| u64::from_le_bytes(a[o..o + 8].try_into().unwrap_or([0; 8]));
    Ok((u(32), u(40)))
}

fn host_bytes(mr: &MemoryRegion, off: usize, len: usize) -> Vec<u8> {
    let mut v = vec![0u8; len];
    mr.read(off, &mut v).expect("host read");
    v
}

/// Waits, bounded, until `h` has `n` activations and is no longer running.
fn wait_activations(h: &EventHandler, n: u64) -> Result<ThreadInfo, DpaError> {
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

fn dpa_objects(d: &mlx5_sim::Device) -> usize {
    let inv = d.inventory();
    inv.by_kind
        .iter()
        .filter(|(k, _)| k.starts_with("DPA") || **k == "EUG" || **k == "EU_PARTITION")
        .map(|(_, n)| n)
        .sum()
}

#[test]
fn device_writes_and_reads_a_host_buffer_through_a_window() -> R {
    let (d, ctx) = model("bf3");
    let p = Process::create(&ctx, WINDOW_WRITER, &ProcessAttr::default())?;
    let mr = MemoryRegion::alloc(&ctx, p.pd(), 4096, Access::LOCAL_WRITE)?;
    mr.buf().fill(0, 4096, 0xa5)?;
    let w = p.window(p.pd())?;
    assert_eq!(w.pd().pdn(), p.pd().pdn());
    assert_eq!(w.process_id(), p.id());
    let wb = w.host_buf(mr.mkey(), 128, 200)?;
    assert_eq!(
        (wb.window_id, wb.mkey, wb.haddr, wb.len),
        (w.id(), mr.lkey(), mr.addr() + 128, 200)
    );

    let args = p.alloc(48)?;
    p.copy_to_dev(args.daddr(), &window_args(&wb, 7, MODE_BYTES))?;
    assert_eq!(p.call_raw("window_write", args.daddr())?, 200);
    // Exactly the 200 bytes at 128 changed, to the pattern; the poison around them stayed.
    let host = host_bytes(&mr, 0, 4096);
    let want: Vec<u8> = (0..200u32).map(|i| (7 + i) as u8).collect();
    assert_eq!(&host[128..328], &want[..]);
    assert!(host[..128].iter().all(|&b| b == 0xa5));
    assert!(host[328..].iter().all(|&b| b == 0xa5));
    let (result, daddr) = window_out(&p, args.daddr())?;
    assert_eq!(result, 200);
    assert_ne!(daddr, 0, "the program reports where haddr was mapped");

    // Text mode, at another aligned offset.
    let wb2 = w.host_buf(mr.mkey(), 1024, 40)?;
    p.copy_to_dev(args.daddr(), &window_args(&wb2, 42, MODE_TEXT))?;
    assert_eq!(p.call_raw("window_write", args.daddr())?, 40);
    let line = b"Hello from DPA 42\n";
    let want: Vec<u8> = line.iter().copied().cycle().take(40).collect();
    assert_eq!(host_bytes(&mr, 1024, 40), want);
    // The aperture is linear: the same offset between host and DPA addresses.
    let (_, daddr2) = window_out(&p, args.daddr())?;
    assert_eq!(daddr2 - wb2.haddr, daddr - wb.haddr);

    // Reading through the window: the device's sum of bytes the host wrote.
    let data: Vec<u8> = (0..256u32).map(|i| (i * 3) as u8).collect();
    mr.write(2048, &data)?;
    let wb3 = w.host_buf(mr.mkey(), 2048, 256)?;
    p.copy_to_dev(args.daddr(), &window_args(&wb3, 0, 0))?;
    let sum: u64 = data.iter().map(|&b| u64::from(b)).sum();
    assert_eq!(p.call_raw("window_checksum", args.daddr())?, sum);

    // A window id the process does not own: the program's WINDOW_SET_CFG fails, no fault.
    let mut bogus = wb;
    bogus.window_id = w.id() + 1000;
    p.copy_to_dev(args.daddr(), &window_args(&bogus, 1, MODE_BYTES))?;
    assert_eq!(p.call_raw("window_write", args.daddr())?, WINDOW_WRITER_ERR);
    assert_eq!(p.err_status()?.status, ProcessStatus::Ok);

    // The window, the buffer and the process go in any order.
    drop((p, args));
    drop(w);
    drop(mr);
    drop(ctx);
    d.stop_engine();
    assert!(d.inventory().is_empty(), "{}", d.inventory());
    Ok(())
}

#[test]
fn an_event_handler_writes_through_its_default_window() -> R {
    let (d, ctx) = model("bf3");
    let p = Process::create(&ctx, WINDOW_WRITER, &ProcessAttr::default())?;
    let pd = Pd::alloc(&ctx)?;
    // A window over a PD of the user's (not the process's own).
    let w = p.window(&pd)?;
    let mr = MemoryRegion::alloc(&ctx, &pd, 4096, Access::LOCAL_WRITE)?;
    let wb = w.host_buf(mr.mkey(), 0, 64)?;
    let args = p.alloc(48)?;
    p.copy_to_dev(args.daddr(), &window_args(&wb, 0x30, MODE_BYTES))?;
    let h = p.event_handler(&EventHandlerAttr {
        default_window_id: w.id(),
        ..EventHandlerAttr::new("window_write", args.daddr())
    })?;
    for n in 1..=2u64 {
        h.run(args.daddr())?;
        let info = wait_activations(&h, n)?;
        assert_eq!(info.return_value, 64);
    }
    let want: Vec<u8> = (0x30..0x70u8).collect();
    assert_eq!(host_bytes(&mr, 0, 64), want);
    assert_eq!(host_bytes(&mr, 64, 64), [0u8; 64]);
    // The handler named the window; once it is gone the window's destroy is accepted.
    drop(h);
    w.destroy()?;
    assert_eq!(d.inventory().count("DPA_WINDOW"), 0);
    drop((p, args, mr, pd));
    drop(ctx);
    d.stop_engine();
    assert!(d.inventory().is_empty(), "{}", d.inventory());
    Ok(())
}

/// Dropping a window and an outbox while a handler still names them: firmware refuses their
/// destroy, the process keeps them, and they go as soon as the handler does.
#[test]
fn a_window_and_outbox_dropped_before_their_handler_go_with_it() -> R {
    let (d, ctx) = model("bf3");
    let p = Process::create(&ctx, WINDOW_WRITER, &ProcessAttr::default())?;
    let pd = Pd::alloc(&ctx)?;
    let w = p.window(&pd)?;
    let o = p.outbox(p.uar())?;
    let h = p.event_handler(&EventHandlerAttr {
        default_window_id: w.id(),
        default_outbox_id: o.id(),
        ..EventHandlerAttr::new("window_write", 0)
    })?;
    // An explicit destroy reports the refusal ...
    assert!(w.destroy().is_err(), "a thread names the window");
    drop(o);
    drop(pd);
    // ... and both stay, kept by the process, while the thread names them.
    assert_eq!(d.inventory().count("DPA_WINDOW"), 1);
    assert_eq!(d.inventory().count("DPA_OUTBOX"), 1);
    assert_eq!(
        d.inventory().count("PD"),
        2,
        "the window keeps its PD (and the process its own)"
    );
    drop(h);
    assert_eq!(d.inventory().count("DPA_WINDOW"), 0);
    assert_eq!(d.inventory().count("DPA_OUTBOX"), 0);
    assert_eq!(
        d.inventory().count("PD"),
        1,
        "only the process's own PD is left"
    );
    drop(p);
    drop(ctx);
    d.stop_engine();
    assert!(d.inventory().is_empty(), "{}", d.inventory());
    Ok(())
}

#[test]
fn a_key_of_another_pd_faults_the_process() -> R {
    let (d, ctx) = model("bf3");
    let p = Process::create(&ctx, WINDOW_WRITER, &ProcessAttr::default())?;
    let w = p.window(p.pd())?;
    let other_pd = Pd::alloc(&ctx)?;
    let foreign = MemoryRegion::alloc(&ctx, &other_pd, 4096, Access::LOCAL_WRITE)?;
    foreign.buf().fill(0, 4096, 0x5a)?;
    // The host cannot tell the key's PD; the device refuses it at the first access.
    let wb = w.host_buf(foreign.mkey(), 0, 64)?;
    let args = p.alloc(48)?;
    p.copy_to_dev(args.daddr(), &window_args(&wb, 1, MODE_BYTES))?;
    match p.call_raw("window_write", args.daddr()) {
        Err(DpaError::ProcessFault { status, syndrome }) => {
            assert_eq!(status, ProcessStatus::Fault);
            assert_ne!(syndrome, 0);
        }
        other => panic!("expected a fault, got {other:?}"),
    }
    let st = p.err_status()?;
    assert_eq!(st.status, ProcessStatus::Fault);
    assert_ne!(st.error_syndrome, 0);
    // The fault is the first store into the aperture.
    let dump = p.coredump()?;
    assert_eq!(
        dump.region_of(dump.fault_addr).map(|r| r.kind),
        Some(RegionKind::Window),
        "{dump}"
    );
    assert!(
        host_bytes(&foreign, 0, 4096).iter().all(|&b| b == 0x5a),
        "nothing reached the foreign buffer"
    );
    drop((p, w, args, foreign, other_pd));
    drop(ctx);
    d.stop_engine();
    assert!(d.inventory().is_empty(), "{}", d.inventory());
    Ok(())
}

#[test]
fn misaligned_or_outside_window_buffers_are_bad_args() -> R {
    let (d, ctx) = model("bf3");
    let p = Process::create(&ctx, WINDOW_WRITER, &ProcessAttr::default())?;
    let w = p.window(p.pd())?;
    let mr = MemoryRegion::alloc(&ctx, p.pd(), 4096, Access::LOCAL_WRITE)?;
    for off in [1usize, 8, 32, 63, 4096 - 32] {
        assert!(
            matches!(w.host_buf(mr.mkey(), off, 16), Err(DpaError::BadArgs(_))),
            "offset {off}"
        );
    }
    assert!(matches!(
        w.host_buf(mr.mkey(), 0, 0),
        Err(DpaError::BadArgs(_))
    ));
    assert!(matches!(
        w.host_buf(mr.mkey(), 4096 - 64, 65),
        Err(DpaError::BadArgs(_))
    ));
    assert!(matches!(
        w.host_buf(mr.mkey(), usize::MAX - 63, 64),
        Err(DpaError::BadArgs(_))
    ));
    // Every 64-byte boundary, up to the whole region, is fine.
    assert_eq!(w.host_buf(mr.mkey(), 0, 4096)?.len, 4096);
    let b = w.host_buf(mr.mkey(), 4096 - 64, 64)?;
    assert_eq!(b.haddr % WINDOW_BUF_ALIGN, 0);
    drop((p, w, mr));
    d.stop_engine();
    Ok(())
}

/// `struct st_outbox_args` (selftest.h): ring `value` at `reg` of outbox `outbox_id`.
fn outbox_args(outbox_id: u32, reg: u32, value: u64) -> [u8; 16] {
    let mut a = [0u8; 16];
    a[0..4].copy_from_slice(&outbox_id.to_le_bytes());
    a[4..8].copy_from_slice(&reg.to_le_bytes());
    a[8..16].copy_from_slice(&value.to_le_bytes());
    a
}

#[test]
fn an_outbox_rings_only_queues_of_its_uar() -> R {
    let (d, ctx) = model("bf3");
    let p = Process::create(&ctx, SELFTEST, &ProcessAttr::default())?;
    let other_uar = UarPage::alloc(&ctx, UarKind::NonCached)?;
    let cfg = CqConfig::new(4);
    // A CQ on the process's UAR and one on another UAR.
    let cq = Cq::create(
        &ctx,
        p.uar(),
        HostQueueMem::alloc(&ctx, cfg.ring_bytes())?,
        &cfg,
    )?;
    let other_cq = Cq::create(
        &ctx,
        &other_uar,
        HostQueueMem::alloc(&ctx, cfg.ring_bytes())?,
        &cfg,
    )?;
    let own = p.outbox(p.uar())?;
    let other = p.outbox(&other_uar)?;
    assert_eq!(own.uar().page_id(), p.uar().page_id());
    assert_eq!(other.uar().page_id(), other_uar.page_id());
    assert_ne!(own.id(), other.id());
    let args = p.alloc(16)?;
    let arm = |cqn: u32| u64::from(cqn);
    let ring = |outbox: u32, cqn: u32| -> Result<u64, DpaError> {
        p.copy_to_dev(args.daddr(), &outbox_args(outbox, OUTBOX_CQ_DB, arm(cqn)))?;
        p.call_raw("st_outbox_db", args.daddr())
    };
    let stats = || {
        let s = d.dpa_stats();
        (s.doorbells, s.violations)
    };
    let s0 = stats();
    // Each outbox arms the CQ on its own UAR.
    assert_ne!(ring(own.id(), cq.cqn().0)?, ST_FAILED);
    assert_eq!(stats(), (s0.0 + 1, s0.1));
    assert_ne!(ring(other.id(), other_cq.cqn().0)?, ST_FAILED);
    assert_eq!(stats(), (s0.0 + 2, s0.1));
    // Across UARs: dropped and counted, both ways; the process is not failed.
    ring(other.id(), cq.cqn().0)?;
    assert_eq!(stats(), (s0.0 + 2, s0.1 + 1));
    ring(own.id(), other_cq.cqn().0)?;
    assert_eq!(stats(), (s0.0 + 2, s0.1 + 2));
    assert_eq!(p.err_status()?.status, ProcessStatus::Ok);

    // An event handler's default outbox (the program keeps what the thread was given).
    p.copy_to_dev(
        args.daddr(),
        &outbox_args(ST_OUTBOX_KEEP, OUTBOX_CQ_DB, arm(cq.cqn().0)),
    )?;
    let h = p.event_handler(&EventHandlerAttr {
        default_outbox_id: own.id(),
        ..EventHandlerAttr::new("st_outbox_db", args.daddr())
    })?;
    h.run(args.daddr())?;
    let info = wait_activations(&h, 1)?;
    assert_ne!(info.return_value, ST_FAILED);
    assert_eq!(stats(), (s0.0 + 3, s0.1 + 2));

    // Teardown in any order leaves no DPA object.
    // (A handler names its default outbox by id only: it goes before the outbox.)
    drop(p);
    drop(h);
    drop(own);
    drop((cq, other_cq));
    drop(args);
    let inv = d.inventory();
    // The other outbox holds the process, and with it the outbox the process keeps for
    // its RPC threads (made by the calls above).
    assert_eq!(
        (inv.count("DPA_OUTBOX"), inv.count("DPA_PROCESS")),
        (2, 1),
        "the other outbox holds the process: {inv}"
    );
    other.destroy()?;
    drop(other_uar);
    assert_eq!(dpa_objects(&d), 0, "{}", d.inventory());
    drop(ctx);
    d.stop_engine();
    assert!(d.inventory().is_empty(), "{}", d.inventory());
    Ok(())
}

#[test]
fn a_grouped_handler_runs_on_a_member_eu() -> R {
    let (d, ctx) = model("bf3");
    let g = EuGroup::create(&ctx, "pair", &[42, 17, 42])?;
    assert_eq!(g.members(), &[17, 42]);
    assert_eq!(g.name(), "pair");
    assert_eq!(g.query_members()?, vec![17, 42]);
    assert_eq!(d.inventory().count("EUG"), 1);

    let p = Process::create(&ctx, SELFTEST, &ProcessAttr::default())?;
    let handlers: Vec<EventHandler> = (0..3)
        .map(|_| {
            p.event_handler(&EventHandlerAttr {
                affinity: Affinity::Group(g.id()),
                ..EventHandlerAttr::new("st_add", 1)
            })
        })
        .collect::<Result<_, _>>()?;
    for round in 1..=3u64 {
        for h in &handlers {
            h.run(round)?;
        }
        for h in &handlers {
            let info = wait_activations(h, round)?;
            assert_eq!(info.return_value, round + 1);
            assert!(
                g.members().contains(&u32::from(info.last_eu)),
                "ran on EU {}",
                info.last_eu
            );
        }
    }
    // Strict affinity elsewhere is not confused with the group.
    let strict = p.event_handler(&EventHandlerAttr {
        affinity: Affinity::Strict(200),
        ..EventHandlerAttr::new("st_add", 1)
    })?;
    strict.run(5)?;
    assert_eq!(wait_activations(&strict, 1)?.last_eu, 200);

    drop((handlers, strict, p));
    g.destroy()?;
    assert_eq!(d.inventory().count("EUG"), 0);
    drop(ctx);
    d.stop_engine();
    assert!(d.inventory().is_empty(), "{}", d.inventory());
    Ok(())
}

#[test]
fn eu_sets_are_checked_against_the_topology() -> R {
    let (d, ctx) = model("bf3");
    let bad = |r: Result<EuGroup, DpaError>| matches!(r, Err(DpaError::BadArgs(_)));
    assert!(bad(EuGroup::create(&ctx, "none", &[])));
    assert!(bad(EuGroup::create(&ctx, "far", &[3, 256])));
    assert!(bad(EuGroup::create(&ctx, "huge", &[u32::MAX])));
    let long = "x".repeat(EUG_NAME_LEN + 1);
    assert!(bad(EuGroup::create(&ctx, &long, &[1])));
    assert!(bad(EuGroup::create(&ctx, "a\0b", &[1])));
    assert!(matches!(
        EuPartition::create(&ctx, &[], 1, &[0]),
        Err(DpaError::BadArgs(_))
    ));
    assert!(matches!(
        EuPartition::create(&ctx, &[300], 1, &[0]),
        Err(DpaError::BadArgs(_))
    ));
    assert!(matches!(
        EuPartition::create(&ctx, &[1], 1, &[0; 256]),
        Err(DpaError::BadArgs(_))
    ));
    // The highest EU and a full-length name are fine.
    let g = EuGroup::create(&ctx, &"n".repeat(EUG_NAME_LEN), &[255])?;
    assert_eq!(g.query_members()?, vec![255]);
    drop(g);
    assert_eq!(d.inventory().count("EUG"), 0, "{}", d.inventory());
    d.stop_engine();

    // No DPA: not supported, before any register is written.
    let (d, ctx) = model("cx7");
    assert!(matches!(
        EuGroup::create(&ctx, "g", &[1]),
        Err(DpaError::NotSupported(_))
    ));
    assert!(matches!(
        EuPartition::create(&ctx, &[1], 1, &[0]),
        Err(DpaError::NotSupported(_))
    ));
    d.stop_engine();
    Ok(())
}

#[test]
fn groups_in_a_partition_keep_it_and_stay_inside_it() -> R {
    let (d, ctx) = model("bf3");
    let members: Vec<u32> = (32..48).collect();
    let sf_vhca = DpaCaps::query(&ctx)?.vhca_id + 1;
    let part = EuPartition::create(&ctx, &members, 4, &[sf_vhca])?;
    assert_eq!(part.members(), &members[..]);
    assert_eq!(part.query_members()?, members);
    assert_eq!(d.inventory().count("EU_PARTITION"), 1);
    let g = EuGroup::create_in(&part, "in-part", &[33, 40])?;
    assert_eq!(g.partition_id(), Some(part.id()));
    assert!(matches!(
        EuGroup::create_in(&part, "outside", &[33, 48]),
        Err(DpaError::BadArgs(_))
    ));
    // A handler of the group runs inside the partition.
    let p = Process::create(&ctx, SELFTEST, &ProcessAttr::default())?;
    let h = p.event_handler(&EventHandlerAttr {
        affinity: Affinity::Group(g.id()),
        ..EventHandlerAttr::new("st_add", 1)
    })?;
    h.run(1)?;
    let eu = u32::from(wait_activations(&h, 1)?.last_eu);
    assert!(eu == 33 || eu == 40, "ran on EU {eu}");
    drop((h, p));
    // The group keeps the partition: dropping the partition handle first destroys nothing.
    drop(part);
    assert_eq!(d.inventory().count("EU_PARTITION"), 1);
    drop(g);
    assert_eq!(d.inventory().count("EUG"), 0);
    assert_eq!(d.inventory().count("EU_PARTITION"), 0);
    drop(ctx);
    d.stop_engine();
    assert!(d.inventory().is_empty(), "{}", d.inventory());
    Ok(())
}

/// The model's syndrome for `check`, as a refused command carries it.
fn refused(r: Result<impl std::fmt::Debug, DpaError>, check: mlx5_sim::Check) -> bool {
    match r {
        Err(e) => e.syndrome() == Some(check.syndrome),
        Ok(v) => panic!("accepted, expected {check}: {v:?}"),
    }
}

/// Regression (issue 30, defect 1): another context could read, rewrite and destroy a
/// context's EU group, after which the owner's grouped handler was silently dropped.
#[test]
fn eu_groups_belong_to_the_context_that_made_them() -> R {
    use mlx5_sim::check;
    let (d, a) = model("bf3");
    let b = d.open_devx();
    let g = EuGroup::create(&a, "mine", &[5, 6])?;
    let p = Process::create(&a, SELFTEST, &ProcessAttr::default())?;
    let h = p.event_handler(&EventHandlerAttr {
        affinity: Affinity::Group(g.id()),
        ..EventHandlerAttr::new("st_add", 1)
    })?;
    // Another context neither reads, destroys nor binds a thread to it.
    assert!(refused(
        eu::read_group(b.as_ref(), g.id()),
        check::WRONG_UID
    ));
    assert!(refused(
        eu::destroy_group(b.as_ref(), g.id()),
        check::WRONG_UID
    ));
    let pb = Process::create(&b, SELFTEST, &ProcessAttr::default())?;
    assert!(refused(
        pb.event_handler(&EventHandlerAttr {
            affinity: Affinity::Group(g.id()),
            ..EventHandlerAttr::new("st_add", 1)
        }),
        check::WRONG_UID
    ));
    // The owner's handler still runs on a member.
    h.run(7)?;
    let info = wait_activations(&h, 1)?;
    assert_eq!(info.return_value, 8);
    assert!([5, 6].contains(&info.last_eu), "ran on EU {}", info.last_eu);
    assert_eq!(d.stats().dpa.dropped_events, 0);
    // Not even the owner destroys a group a live thread is bound to.
    assert!(refused(
        eu::destroy_group(a.as_ref(), g.id()),
        check::OBJECT_IN_USE
    ));
    drop((h, p, pb, b));
    // A group left behind (kept, or its destroy refused) goes when its context closes.
    let kept = g.keep();
    assert_eq!(eu::read_group(a.as_ref(), kept)?.members, vec![5, 6]);
    drop(a);
    d.stop_engine();
    assert!(d.inventory().is_empty(), "{}", d.inventory());
    Ok(())
}

/// Regression (issue 30, defect 1): any context could create a partition over every EU for
/// any vHCA, and partitions did not constrain where a function's threads ran.
#[test]
fn partitions_are_the_managers_and_confine_a_functions_threads() -> R {
    use mlx5_sim::check;
    let (d, pf) = model("bf3");
    let sf = d.open_function(1).unwrap();
    let sf_vhca = DpaCaps::query(&sf)?.vhca_id;
    assert_eq!(sf_vhca, DpaCaps::query(&pf)?.vhca_id + 1);
    // Only the partition manager (the physical function) writes partitions.
    assert!(refused(
        EuPartition::create(&sf, &(0..256).collect::<Vec<_>>(), 0, &[sf_vhca]),
        check::NOT_PARTITION_MANAGER
    ));
    // A function without a partition has no EU to run on.
    let ps = Process::create(&sf, SELFTEST, &ProcessAttr::default())?;
    let handler = |affinity| {
        ps.event_handler(&EventHandlerAttr {
            affinity,
            ..EventHandlerAttr::new("st_add", 1)
        })
    };
    assert!(refused(handler(Affinity::None), check::NO_PARTITION));
    // Partitions name functions of this device and do not overlap.
    assert!(refused(
        EuPartition::create(&pf, &[40], 0, &[0x7777]),
        check::BAD_PARTITION_VHCA
    ));
    let members: Vec<u32> = (40..44).collect();
    let part = EuPartition::create(&pf, &members, 1, &[sf_vhca])?;
    assert!(refused(
        EuPartition::create(&pf, &[43, 44], 0, &[sf_vhca]),
        check::PARTITION_OVERLAP
    ));
    // The function reads its partition; its groups stay inside it, at most max_num_eug.
    assert_eq!(eu::read_partition(sf.as_ref(), part.id())?.members, members);
    assert!(refused(
        EuGroup::create(&sf, "out", &[39]),
        check::BAD_AFFINITY
    ));
    let g = EuGroup::create(&sf, "in", &[42])?;
    assert_eq!(
        eu::read_group(sf.as_ref(), g.id())?.partition,
        Some(part.id())
    );
    assert!(refused(
        EuGroup::create(&sf, "second", &[41]),
        check::TOO_MANY_OBJECTS
    ));
    // Its threads run inside the partition; a strict EU is a virtual number in it.
    let any = handler(Affinity::None)?;
    let strict = handler(Affinity::Strict(1))?;
    let grouped = handler(Affinity::Group(g.id()))?;
    assert!(refused(handler(Affinity::Strict(4)), check::BAD_AFFINITY));
    for (h, want) in [(&any, None), (&strict, Some(41)), (&grouped, Some(42))] {
        h.run(1)?;
        let eu = u32::from(wait_activations(h, 1)?.last_eu);
        assert!(members.contains(&eu), "ran on EU {eu}");
        if let Some(w) = want {
            assert_eq!(eu, w);
        }
    }
    // The partition stays while a group or a thread of its function does.
    assert!(refused(
        eu::destroy_partition(pf.as_ref(), part.id()),
        check::OBJECT_IN_USE
    ));
    drop((grouped, g));
    assert_eq!(d.inventory().count("EUG"), 0, "{}", d.inventory());
    assert!(refused(
        eu::destroy_partition(pf.as_ref(), part.id()),
        check::OBJECT_IN_USE
    ));
    drop((any, strict, ps));
    drop(part);
    assert_eq!(d.inventory().count("EU_PARTITION"), 0, "{}", d.inventory());
    assert_eq!(d.stats().dpa.dropped_events, 0);
    drop((sf, pf));
    d.stop_engine();
    assert!(d.inventory().is_empty(), "{}", d.inventory());
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// The DPA Subsystem guide's coherency table, as the model option `DpaCoherency::Hardware`: a
// program missing a write-back or a read invalidation fails as it would on the hardware, and
// works once it has them. (With the default, coherent model every case below "works".)

/// `struct st_coh_args`: window id, key, host address, mode, stop.
fn coh_args(window_id: u32, mkey: u32, haddr: u64, mode: u64) -> [u8; 32] {
    let mut a = [0u8; 32];
    a[0..4].copy_from_slice(&window_id.to_le_bytes());
    a[4..8].copy_from_slice(&mkey.to_le_bytes());
    a[8..16].copy_from_slice(&haddr.to_le_bytes());
    a[16..24].copy_from_slice(&mode.to_le_bytes());
    a
}

fn host_u64(mr: &MemoryRegion, i: usize) -> u64 {
    u64::from_le_bytes(host_bytes(mr, 8 * i, 8).try_into().unwrap())
}

/// Waits, bounded, for `cond`.
fn until(what: &str, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(start.elapsed() < T, "{what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// `st_window_marks` running on a new process of `ctx`: it stores its mark through a window
/// into `mr` and spins until `stop` (`args` + 24) is set. Its parts, dropped in reverse order.
struct Marks {
    h: EventHandler,
    args: mlx5_dpa::dpa::DpaBuf,
    _w: mlx5_dpa::dpa::window::Window,
    mr: MemoryRegion,
    p: Process,
}

fn start_marks(ctx: &std::sync::Arc<dyn mlx5_dpa::devx::Devx>) -> Result<Marks, DpaError> {
    let p = Process::create(ctx, SELFTEST, &ProcessAttr::default())?;
    let mr = MemoryRegion::alloc(ctx, p.pd(), 4096, Access::LOCAL_WRITE)?;
    let w = p.window(p.pd())?;
    let args = p.alloc(32)?;
    p.copy_to_dev(args.daddr(), &coh_args(w.id(), mr.lkey().0, mr.addr(), 0))?;
    let h = p.event_handler(&EventHandlerAttr::new("st_window_marks", args.daddr()))?;
    h.run(args.daddr())?;
    Ok(Marks {
        h,
        args,
        _w: w,
        mr,
        p,
    })
}

/// Window stores reach host memory at a window write-back; the ones after it only when the
/// activation ends.
#[test]
fn window_stores_are_visible_once_written_back() -> R {
    for coherency in [
        mlx5_sim::DpaCoherency::Hardware,
        mlx5_sim::DpaCoherency::Coherent,
    ] {
        let (d, ctx) = model("bf3");
        d.set_dpa_coherency(coherency);
        let m = start_marks(&ctx)?;
        let (p, mr, args, h) = (&m.p, &m.mr, &m.args, &m.h);
        until("the written-back mark", || host_u64(mr, 0) == 0xa1);
        match coherency {
            // The DPA is waiting for `stop`: its second store has not been written back.
            mlx5_sim::DpaCoherency::Hardware => {
                assert_eq!(host_u64(mr, 1), 0, "not written back yet")
            }
            // Visible at once: while the activation still runs (the DPA may not have made the
            // store yet when the mark arrives, so it is waited for).
            mlx5_sim::DpaCoherency::Coherent => {
                until("the second store", || host_u64(mr, 1) == 0xc3);
                assert_eq!(h.info()?.state, ThreadState::Running);
            }
        }
        p.copy_to_dev(args.daddr() + 24, &1u64.to_le_bytes())?;
        let info = wait_activations(h, 1)?;
        assert_eq!(info.return_value, 1);
        assert_eq!(
            host_u64(mr, 1),
            0xc3,
            "written back when the activation ended"
        );
        drop((m, ctx));
        d.stop_engine();
    }
    Ok(())
}

/// While the engine thread runs a long activation (a DPA thread spinning on a flag), a worker
/// stands in for it, and with nothing to do sleeps until the next doorbell instead of passing
/// back to back: at most one pass per `STAND_IN_WAIT` (200 us) over a quiet stretch, where
/// a yielding stand-in made one per yield (tens of thousands in the same time on an idle
/// core).
#[test]
fn a_stand_in_with_nothing_to_do_sleeps() -> R {
    let (d, ctx) = model("bf3");
    d.with_profile_mut(|p| p.dpa_insn_budget = u64::MAX);
    let m = start_marks(&ctx)?;
    let (p, mr, args, h) = (&m.p, &m.mr, &m.args, &m.h);
    // The mark: the activation runs, spinning on `stop`, and a worker stands in.
    until("the mark", || host_u64(mr, 0) == 0xa1);
    until("a stand-in", || d.stand_in_passes() > 0);
    let (t0, p0) = (Instant::now(), d.stand_in_passes());
    std::thread::sleep(Duration::from_millis(300));
    let (dt, passes) = (t0.elapsed(), d.stand_in_passes() - p0);
    // The DPA thread let go before anything is checked (a spinning activation would hold
    // the device's teardown).
    p.copy_to_dev(args.daddr() + 24, &1u64.to_le_bytes())?;
    let info = wait_activations(h, 1)?;
    assert_eq!(info.return_value, 1);
    // One pass per 200 us sleep at most, twice that for slack.
    let most = 2 * dt.as_micros() as u64 / 200 + 10;
    assert!(
        passes <= most,
        "{passes} stand-in passes in {dt:?} with nothing to do (at most {most})"
    );
    drop((m, ctx));
    d.stop_engine();
    Ok(())
}

/// Window reads come from a line read once until `__dpa_thread_window_read_inv`: a program
/// polling a host flag without invalidating never sees the host's change; with it, it does.
#[test]
fn window_reads_need_an_invalidation_to_see_the_host() -> R {
    let (d, ctx) = model("bf3");
    d.set_dpa_coherency(mlx5_sim::DpaCoherency::Hardware);
    // The poll below must still be running after 100 ms of wall-clock time: no watchdog
    // (a fast engine, the JIT's, retires the default budget sooner than that).
    d.with_profile_mut(|p| p.dpa_insn_budget = u64::MAX);
    let p = Process::create(&ctx, SELFTEST, &ProcessAttr::default())?;
    let mr = MemoryRegion::alloc(&ctx, p.pd(), 4096, Access::LOCAL_WRITE)?;
    let w = p.window(p.pd())?;
    for invalidate in [true, false] {
        mr.write(0, &[0u8; 64])?;
        let args = p.alloc(32)?;
        p.copy_to_dev(
            args.daddr(),
            &coh_args(w.id(), mr.lkey().0, mr.addr(), u64::from(invalidate)),
        )?;
        let h = p.event_handler(&EventHandlerAttr::new("st_window_poll", args.daddr()))?;
        h.run(args.daddr())?;
        // The DPA's cue: it is polling now.
        until("the DPA's cue", || host_u64(&mr, 2) == 0x5a);
        mr.write(24, &1u64.to_le_bytes())?;
        if invalidate {
            let info = wait_activations(&h, 1)?;
            assert!(info.return_value >= 1, "{info:?}");
        } else {
            // Without the invalidation the cached line never changes: still polling.
            std::thread::sleep(Duration::from_millis(100));
            assert_eq!(h.info()?.state, ThreadState::Running);
            p.copy_to_dev(args.daddr() + 24, &1u64.to_le_bytes())?;
            let info = wait_activations(&h, 1)?;
            assert_eq!(info.return_value, 0, "ended by `stop`, the flag never seen");
        }
        drop((h, args));
    }
    drop((w, mr, p, ctx));
    d.stop_engine();
    Ok(())
}
