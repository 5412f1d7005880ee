//! Teardown that goes wrong: destroys firmware refuses, and handles dropped while the device
//! is still busy. Memory registered with the device is never returned to the system while a
//! registration may exist, and nothing is left once the context closes.
//!
//! These tests are a binary of their own: before the fix of a refused UMEM deregistration,
//! the model's engine crashed the whole process with SIGSEGV.

use crate::common;
use crate::dpa_common;

use std::time::{Duration, Instant};

use mlx5_dpa::dpa::thread::{Affinity, EventHandlerAttr, ThreadState};
use mlx5_dpa::dpa::{Process, ProcessAttr};
use mlx5_dpa::mem::retained;
use mlx5_dpa::mlx5::{Opcode, Status};

const SELFTEST: &[u8] = include_bytes!("../../fw-blobs/bin/selftest.elf");
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
    drop((e.tis, e.uar, e.pd, e.ctx));
    assert!(dev.inventory().is_empty(), "left: {}", dev.inventory());
}

/// `spin_while(flag)`: stores 1 to the u64 at `flag + 8` (it runs), then spins while the
/// u64 at `flag` is not zero, then returns.
fn spin_while_elf() -> Vec<u8> {
    use mlx5_sim::testing::dpa_rig::asm::{r, Asm};
    use mlx5_sim::testing::dpa_rig::elf::ElfSpec;
    let mut a = Asm::new();
    a.li(r::T1, 1).sd(r::T1, r::A0, 8);
    let top = a.here();
    a.ld(r::T0, r::A0, 0).bne_to(r::T0, r::ZERO, top).ret();
    ElfSpec::new(a.bytes()).symbol("spin_while", 0).build()
}

/// Regression: dropping an event handler while its activation ran left the thread, and so
/// the process, its PD, image UMEM, UAR and copier, alive until the context closed: firmware
/// refuses to destroy a thread that is on an EU, and the drop tried once. Now the drop waits
/// (bounded) for the activation to end, and everything goes at once.
///
/// Deterministic: the activation spins on a flag in DPA memory, and a helper clears the flag
/// only after firmware has refused a destroy, so the drop certainly came while it ran.
#[test]
fn a_handler_dropped_while_it_runs_is_destroyed_once_the_activation_ends() -> R {
    let (d, ctx) = dpa_common::model("bf3");
    // No watchdog in the way: the flag alone ends the activation.
    d.with_profile_mut(|p| p.dpa_insn_budget = u64::MAX);
    let p = Process::create(&ctx, &spin_while_elf(), &ProcessAttr::default())?;
    let flag = p.alloc(16)?;
    d.dpa_write(p.id(), flag.daddr(), &1u64.to_le_bytes())?;
    let h = p.event_handler(&EventHandlerAttr::new("spin_while", flag.daddr()))?;
    h.run(flag.daddr())?;
    // Until the activation is on an EU: it marked `flag + 8`.
    let start = Instant::now();
    while d.dpa_read(p.id(), flag.daddr() + 8, 8)? != 1u64.to_le_bytes() {
        assert!(start.elapsed() < T, "the activation never started");
        std::thread::sleep(Duration::from_micros(200));
    }
    let (pid, daddr) = (p.id(), flag.daddr());
    let refused_before = d.stats().fw.failed;
    let helper = {
        let d = d.clone();
        std::thread::spawn(move || {
            let start = Instant::now();
            // Until firmware refused the destroy of the running thread.
            while d.stats().fw.failed == refused_before {
                assert!(start.elapsed() < T, "no destroy was refused");
                std::thread::sleep(Duration::from_micros(200));
            }
            d.dpa_write(pid, daddr, &0u64.to_le_bytes())
                .expect("clear the flag");
        })
    };
    drop(h);
    helper.join().expect("helper");
    drop(flag);
    drop(p);
    // With the context still open, nothing is left.
    assert!(d.inventory().is_empty(), "left: {}", d.inventory());
    assert_eq!(d.dpa_stats().watchdogs, 0);
    drop(ctx);
    d.stop_engine();
    Ok(())
}

/// The same with the watchdog ending a spin that never stops by itself: once it fires, the
/// dropped handler's objects go (the scenario; whether the drop came before or after
/// the watchdog depends on timing, the outcome does not).
#[test]
fn a_handler_dropped_while_it_spins_is_destroyed_once_the_watchdog_stops_it() -> R {
    const EU: u16 = 9;
    let (d, ctx) = dpa_common::model("bf3");
    d.with_profile_mut(|p| p.dpa_insn_budget = 20_000_000);
    let p = Process::create(&ctx, SELFTEST, &ProcessAttr::default())?;
    let h = p.event_handler(&EventHandlerAttr {
        affinity: Affinity::Strict(EU),
        ..EventHandlerAttr::new("st_spin_forever", 0)
    })?;
    h.run(0)?;
    // Until the activation started on its EU (bounded): running there, or already ended by
    // the watchdog (its 20 M instructions take about a second in a debug build; a test
    // thread that the scheduler left out that long sees it ended, which the outcome below
    // does not mind).
    let start = Instant::now();
    loop {
        let info = h.info()?;
        if info.last_eu == EU && (info.state == ThreadState::Running || info.activations == 1) {
            break;
        }
        assert!(
            start.elapsed() < T,
            "the activation never started: {info:?}"
        );
        std::thread::sleep(Duration::from_micros(200));
    }
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
