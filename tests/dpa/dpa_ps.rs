//! The model's process table (`Device::dpa_processes`, `mlx5-dpa sim --ps`): processes with
//! their status and threads with state, EU and activation count, as activations and faults
//! change them.

use std::time::{Duration, Instant};

use mlx5_dpa::dpa::thread::{EventHandlerAttr, ThreadState};
use mlx5_dpa::dpa::{Process, ProcessAttr};

const SELFTEST: &[u8] = include_bytes!("../../fw-blobs/bin/selftest.elf");
const RPC_CALC: &[u8] = include_bytes!("../../fw-blobs/bin/rpc_calc.elf");

/// Runs `h` once and waits (bounded) until it is no longer running.
fn activate(h: &mlx5_dpa::dpa::thread::EventHandler) {
    h.run(1).expect("run");
    let start = Instant::now();
    while h.state().expect("state") == ThreadState::Running {
        assert!(start.elapsed() < Duration::from_secs(10), "still running");
        std::thread::yield_now();
    }
}

#[test]
fn processes_and_threads_are_listed_as_they_run_and_fail() {
    let d = mlx5_sim::Device::with_profile("bf3").expect("bf3");
    d.start_engine();
    let ctx = d.open_devx();
    assert!(d.dpa_processes().is_empty());

    let p = Process::create(&ctx, RPC_CALC, &ProcessAttr::default()).expect("process");
    let h = p
        .event_handler(&EventHandlerAttr::new("rpc_echo", 7))
        .expect("handler");
    let before = d.dpa_processes();
    let row = before.iter().find(|r| r.id == p.id()).expect("the process");
    assert_eq!(row.status, "ok");
    let thread = row.threads.first().expect("its thread").id;
    let entry = row.threads[0].entry;
    let base = row.threads[0].activations;
    activate(&h);
    activate(&h);
    let after = d.dpa_processes();
    let t = after
        .iter()
        .find(|r| r.id == p.id())
        .and_then(|r| r.threads.iter().find(|t| t.id == thread))
        .expect("the thread");
    assert_eq!(t.activations, base + 2);
    assert_eq!(t.entry, entry);
    assert!(t.eu.is_some(), "it ran on an EU: {t:?}");
    assert_ne!(t.state, "running");

    // A process that faults is listed as failed, with its status and syndrome.
    let q = Process::create(&ctx, SELFTEST, &ProcessAttr::default()).expect("process");
    assert!(q.call_raw("st_fault_load", 0x10).is_err());
    let rows = d.dpa_processes();
    let failed = rows.iter().find(|r| r.id == q.id()).expect("listed");
    assert!(
        failed.status.starts_with("failed (status"),
        "{}",
        failed.status
    );
    assert_eq!(rows.len(), 2);
    drop((h, p, q));
    drop(ctx);
    d.stop_engine();
    assert!(d.dpa_processes().is_empty(), "gone with their objects");
}
