//! Teardown that goes wrong: destroys firmware refuses, and handles dropped while the device
//! is still busy. Memory registered with the device is never returned to the system while a
//! registration may exist, and nothing is left once the context closes.
//!
//! These tests are a binary of their own: before the fix of a refused UMEM deregistration,
//! the model's engine crashed the whole process with SIGSEGV.

mod common;
mod dpa_common;

use std::time::{Duration, Instant};

use mlx5_dpa::dpa::thread::{Affinity, EventHandlerAttr, ThreadState};
use mlx5_dpa::dpa::{Process, ProcessAttr};
use mlx5_dpa::mem::retained;
use mlx5_dpa::mlx5::{Opcode, Status};

const SELFTEST: &[u8] = include_bytes!("../fw-blobs/bin/selftest.elf");
const T: Duration = Duration::from_secs(10);

type R = Result<(), Box<dyn std::error::Error>>;

/// Regression: a refused DESTROY_SQ left the SQ (and so its CQ) alive, the UMEMs under their
/// rings refused deregistration, and `Umem::drop` ignored that and unmapped the buffers; the
/// model's engine then read WQEs from and wrote CQEs into unmapped memory (SIGSEGV; with the
/// addresses mapped again, silent corruption). Now the buffers stay with the context, counted,
/// and go when the context has released the objects.
#[test]
fn refused_destroy_keeps_ring_memory_until_the_context_closes() {
    let mut e = common::eth(6, 6, 5, 1, 256).expect("queue set");
    // Work the engine has not seen yet: NOPs behind a doorbell.
    for i in 0..16 {
        e.sq.post_nop(i, true).expect("post");
    }
    e.sq.ring_doorbell();
    let before = retained();
    e.dev.fail_opcode(Opcode::DESTROY_SQ, Status::INT_ERR);
    let dev = e.dev.clone();
    drop(e.sq);
    drop(e.tx_cq);
    dev.clear_faults();
    let after = retained();
    assert!(
        after.buffers >= before.buffers + 2,
        "the SQ's and its CQ's ring buffers are retained: {before:?} -> {after:?}"
    );
    // The SQ is still there: the engine runs its WQEs and writes their CQEs into memory that
    // must still be mapped.
    dev.run_until_idle();
    assert!(dev.stats().fw.failed >= 1, "DESTROY_SQ was refused");
    assert!(
        !dev.inventory().is_empty(),
        "the SQ and CQ are left until the context closes"
    );
    // Closing the context (the last handle) releases them, and then the retained memory.
    drop((e.rq, e.rx_cq, e.tx, e.rx, e._flow, e.mac));
    assert!(dev.inventory().is_empty(), "left: {}", dev.inventory());
}

/// Regression: dropping an event handler while its activation ran left the thread, and so
/// the process, its PD, image UMEM, UAR and copier, alive until the context closed: firmware
/// refuses to destroy a thread that is on an EU, and the drop tried once. Now the drop waits
/// (bounded) for the activation to end, here by the watchdog, and everything goes at once.
#[test]
fn a_handler_dropped_while_it_spins_is_destroyed_once_the_watchdog_stops_it() -> R {
    const EU: u16 = 9;
    let (d, ctx) = dpa_common::model("bf3");
    d.with_profile_mut(|p| p.dpa_insn_budget = 2_000_000);
    let p = Process::create(&ctx, SELFTEST, &ProcessAttr::default())?;
    let h = p.event_handler(&EventHandlerAttr {
        affinity: Affinity::Strict(EU),
        ..EventHandlerAttr::new("st_spin_forever", 0)
    })?;
    h.run(0)?;
    // Until the activation is on its EU (bounded).
    let start = Instant::now();
    loop {
        let info = h.info()?;
        if info.state == ThreadState::Running && info.last_eu == EU {
            break;
        }
        assert!(
            start.elapsed() < T,
            "the activation never started: {info:?}"
        );
        std::thread::sleep(Duration::from_micros(200));
    }
    assert_eq!(d.dpa_stats().watchdogs, 0, "still spinning when dropped");
    drop(h);
    drop(p);
    assert_eq!(
        d.dpa_stats().watchdogs,
        1,
        "the watchdog ended the activation"
    );
    // With the context still open, nothing is left.
    assert!(d.inventory().is_empty(), "left: {}", d.inventory());
    drop(ctx);
    d.stop_engine();
    Ok(())
}
