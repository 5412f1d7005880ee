//! A debugger attached to a DPA process of the model (`Device::dpa_debug`): breakpoints stop
//! an activation before the instruction, with its registers readable and writable; a step
//! stops after one instruction; faults stop before the process fails of them; a halt stops
//! the next activation at its first instruction; detaching lets everything go on.

use crate::dpa_common::bf3;
use std::time::Duration;

use mlx5_dpa::dpa::elf::Elf;
use mlx5_dpa::dpa::{DpaError, Process, ProcessAttr};
use mlx5_sim::dpa::debug::StopReason;

const RPC_CALC: &[u8] = include_bytes!("../../fw-blobs/bin/rpc_calc.elf");
const SELFTEST: &[u8] = include_bytes!("../../fw-blobs/bin/selftest.elf");
const WAIT: Duration = Duration::from_secs(20);

fn symbol(elf: &[u8], name: &str) -> u64 {
    Elf::parse(elf).unwrap().symbol(name).unwrap().value
}

#[test]
fn a_breakpoint_stops_the_call_and_its_registers_can_be_changed() {
    let (d, ctx) = bf3();
    let p = std::sync::Arc::new(Process::create(&ctx, RPC_CALC, &ProcessAttr::default()).unwrap());
    let dbg = d.dpa_debug(p.id()).expect("attach");
    let at = symbol(RPC_CALC, "rpc_calculate");
    dbg.set_breakpoint(at);
    // The text at the breakpoint reads back as the ELF has it.
    let text = Elf::parse(RPC_CALC).unwrap();
    let sec = text.section(".text").unwrap();
    let off = (at - sec.addr) as usize;
    assert_eq!(dbg.read(at, 4).unwrap(), sec.data[off..off + 4]);

    let caller = {
        let p = std::sync::Arc::clone(&p);
        std::thread::spawn(move || p.call("rpc_calculate", &[44, 55]))
    };
    let (thread, why) = dbg.wait_stop(WAIT).expect("a stop");
    assert_eq!(why, StopReason::Breakpoint);
    let halted = dbg.halted();
    let h = halted.iter().find(|h| h.thread == thread).expect("halted");
    assert_eq!(h.hart.pc, at);
    assert_eq!((h.hart.x[10], h.hart.x[11]), (44, 55), "a0, a1");
    // a1 = 1000: the call's result shows the change.
    let mut x = h.hart.x;
    x[11] = 1000;
    assert!(dbg.set_registers(thread, x, h.hart.pc));
    // One step: stopped again, one instruction on.
    assert!(dbg.step(thread));
    let (t2, why) = dbg.wait_stop(WAIT).expect("the step's stop");
    assert_eq!((t2, why), (thread, StopReason::Step));
    let pc = dbg.halted()[0].hart.pc;
    assert!(pc == at + 2 || pc == at + 4, "{pc:#x} after {at:#x}");
    dbg.remove_breakpoint(at);
    dbg.resume();
    let r = caller.join().unwrap().expect("the call");
    assert_eq!(r, 1044, "44 + the a1 the debugger wrote");
    drop(dbg);
    assert_eq!(
        p.call("rpc_calculate", &[1, 2]).unwrap(),
        3,
        "detached: runs free"
    );
}

#[test]
fn a_fault_stops_before_the_process_fails_and_a_halt_stops_the_next_activation() {
    let (d, ctx) = bf3();
    let p = std::sync::Arc::new(Process::create(&ctx, SELFTEST, &ProcessAttr::default()).unwrap());
    let dbg = d.dpa_debug(p.id()).expect("attach");

    // Halt first: the next activation stops at its first instruction.
    dbg.halt();
    let caller = {
        let p = std::sync::Arc::clone(&p);
        std::thread::spawn(move || p.call_raw("st_add", 41))
    };
    let (_, why) = dbg.wait_stop(WAIT).expect("a stop");
    assert_eq!(why, StopReason::Halt);
    dbg.resume();
    assert_eq!(caller.join().unwrap().expect("st_add"), 42);

    let caller = {
        let p = std::sync::Arc::clone(&p);
        std::thread::spawn(move || p.call_raw("st_fault_load", 0x10))
    };
    let (thread, why) = dbg.wait_stop(WAIT).expect("the fault's stop");
    assert_eq!(why, StopReason::Fault(11), "SIGSEGV");
    let h = dbg
        .halted()
        .into_iter()
        .find(|h| h.thread == thread)
        .unwrap();
    assert_eq!(h.hart.pc, symbol(SELFTEST, "st_fault_load"));
    assert_eq!(h.hart.x[10], 0x10);
    dbg.resume();
    assert!(matches!(
        caller.join().unwrap(),
        Err(DpaError::ProcessFault { .. })
    ));
}

#[test]
fn detaching_while_stopped_lets_the_activation_finish() {
    let (d, ctx) = bf3();
    let p = std::sync::Arc::new(Process::create(&ctx, RPC_CALC, &ProcessAttr::default()).unwrap());
    let dbg = d.dpa_debug(p.id()).expect("attach");
    dbg.set_breakpoint(symbol(RPC_CALC, "rpc_echo"));
    let caller = {
        let p = std::sync::Arc::clone(&p);
        std::thread::spawn(move || p.call("rpc_echo", &[7]))
    };
    assert_eq!(
        dbg.wait_stop(WAIT).map(|s| s.1),
        Some(StopReason::Breakpoint)
    );
    drop(dbg);
    assert_eq!(caller.join().unwrap().expect("echo"), 7);
    assert!(d.dpa_debug(0xdead).is_err(), "no such process");
}

#[test]
fn the_watchdog_stops_before_the_process_fails_of_it() {
    let (d, ctx) = bf3();
    d.with_profile_mut(|p| p.dpa_insn_budget = 2_000);
    let p = std::sync::Arc::new(Process::create(&ctx, SELFTEST, &ProcessAttr::default()).unwrap());
    let dbg = d.dpa_debug(p.id()).expect("attach");
    let caller = {
        let p = std::sync::Arc::clone(&p);
        std::thread::spawn(move || p.call_raw("st_spin_forever", 0))
    };
    let (thread, why) = dbg.wait_stop(WAIT).expect("the watchdog's stop");
    assert_eq!(why, StopReason::Watchdog);
    assert!(dbg.halted().iter().any(|h| h.thread == thread));
    dbg.resume();
    assert!(matches!(
        caller.join().unwrap(),
        Err(DpaError::ProcessFault { .. })
    ));
}

#[test]
fn one_debugger_at_a_time_and_a_later_one_survives_the_first_ones_drop() {
    let (d, ctx) = bf3();
    let p = Process::create(&ctx, RPC_CALC, &ProcessAttr::default()).unwrap();
    let first = d.dpa_debug(p.id()).expect("attach");
    assert!(matches!(
        d.dpa_debug(p.id()),
        Err(mlx5_sim::DpaAccessError::Debugged(id)) if id == p.id()
    ));
    // Let go (as a GDB session's end does) but not yet dropped: a new debugger may attach,
    // and the old handle's drop must not take the new one's place away.
    first.detach();
    let second = d.dpa_debug(p.id()).expect("attach after the first let go");
    drop(first);
    let at = symbol(RPC_CALC, "rpc_calculate");
    second.set_breakpoint(at);
    let p = std::sync::Arc::new(p);
    let caller = {
        let p = std::sync::Arc::clone(&p);
        std::thread::spawn(move || p.call("rpc_calculate", &[2, 3]))
    };
    let (_, why) = second
        .wait_stop(WAIT)
        .expect("the second debugger still stops the call");
    assert_eq!(why, StopReason::Breakpoint);
    second.remove_breakpoint(at);
    second.resume();
    assert_eq!(caller.join().unwrap().unwrap(), 5);
}
