//! A debugger attached to a DPA process of the model ([`crate::Device::dpa_debug`]); its
//! state lives with the process's, here, and the activations (`crate::dpa::exec`) consult it.
//!
//! While a process is attached, each of its activations runs on a thread of its own (never on
//! the engine thread nor a shared worker: the NIC and other processes go on while it is
//! stopped), one instruction at a time, and stops, blocking that thread, before an
//! instruction at a breakpoint, after a requested single step, when a halt is requested (the
//! debugger's, or another thread's stop: all-stop), and on a fault or the watchdog (before the
//! process fails of it). A stopped activation's registers can be read and changed; resuming
//! lets it go on (a fault or the watchdog then fails the process, as without a debugger).
//! Detaching resumes everything and ends the stops. Every wait of the debugger is bounded.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use mlx5_dpa_rv::Hart;

/// Why an activation stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// Before the instruction at a breakpoint.
    Breakpoint,
    /// After a single step.
    Step,
    /// A halt request (the debugger's, or another activation's stop).
    Halt,
    /// A fault (memory, illegal instruction, misaligned target, `ebreak`): the Linux signal
    /// a process would get (SIGSEGV 11, SIGBUS 7, SIGILL 4, SIGTRAP 5).
    Fault(u8),
    /// The instruction budget ran out (SIGXCPU).
    Watchdog,
}

/// A stopped activation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Halted {
    /// The DPA thread.
    pub thread: u32,
    /// The EU it runs on.
    pub eu: u16,
    pub reason: StopReason,
    /// Its registers (changes made with [`DebugState::set_registers`] apply when it goes on).
    pub hart: Hart,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Go {
    Wait,
    Continue,
    Step,
}

#[derive(Debug, Default)]
struct Inner {
    breakpoints: BTreeSet<u64>,
    halt: bool,
    detached: bool,
    halted: BTreeMap<u32, (Halted, Go)>,
    /// Stops not yet taken by [`DebugState::wait_stop`].
    events: VecDeque<(u32, StopReason)>,
}

/// The debugger's side of an attached process, shared with its activations.
#[derive(Debug, Default)]
pub struct DebugState {
    inner: Mutex<Inner>,
    changed: Condvar,
}

/// What one activation remembers between instructions.
#[derive(Debug, Default)]
pub(crate) struct Stepper {
    /// It was told to make one step: stop before the next instruction.
    step: bool,
    /// Where it was resumed: a breakpoint there is not hit again at once.
    resumed_at: Option<u64>,
}

impl DebugState {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Sets a breakpoint at `addr` (a DPA text address).
    pub fn set_breakpoint(&self, addr: u64) {
        self.lock().breakpoints.insert(addr);
    }

    /// Removes the breakpoint at `addr`; whether there was one.
    pub fn remove_breakpoint(&self, addr: u64) -> bool {
        self.lock().breakpoints.remove(&addr)
    }

    /// Asks every activation of the process to stop before its next instruction.
    pub fn halt(&self) {
        self.lock().halt = true;
        self.changed.notify_all();
    }

    /// The stopped activations, by thread.
    pub fn halted(&self) -> Vec<Halted> {
        self.lock()
            .halted
            .values()
            .map(|(h, _)| h.clone())
            .collect()
    }

    /// Changes the registers of stopped thread `thread` (x0 stays 0); false if it is not
    /// stopped.
    pub fn set_registers(&self, thread: u32, x: [u64; 32], pc: u64) -> bool {
        let mut g = self.lock();
        match g.halted.get_mut(&thread) {
            Some((h, Go::Wait)) => {
                h.hart.x = x;
                h.hart.x[0] = 0;
                h.hart.pc = pc;
                true
            }
            _ => false,
        }
    }

    /// Waits at most `timeout` for the next stop; `None` when none came.
    pub fn wait_stop(&self, timeout: Duration) -> Option<(u32, StopReason)> {
        let deadline = Instant::now() + timeout;
        let mut g = self.lock();
        loop {
            if let Some(e) = g.events.pop_front() {
                return Some(e);
            }
            let now = Instant::now();
            if now >= deadline || g.detached {
                return None;
            }
            g = self
                .changed
                .wait_timeout(g, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// Lets every stopped activation go on, and ends the halt request.
    pub fn resume(&self) {
        let mut g = self.lock();
        g.halt = false;
        g.events.clear();
        for (_, go) in g.halted.values_mut() {
            *go = Go::Continue;
        }
        drop(g);
        self.changed.notify_all();
    }

    /// Lets stopped thread `thread` make one step (the others stay stopped); false if it is
    /// not stopped.
    pub fn step(&self, thread: u32) -> bool {
        let mut g = self.lock();
        g.events.clear();
        let Some((_, go)) = g.halted.get_mut(&thread) else {
            return false;
        };
        *go = Go::Step;
        drop(g);
        self.changed.notify_all();
        true
    }

    /// Whether [`DebugState::detach`] ended it.
    pub fn is_detached(&self) -> bool {
        self.lock().detached
    }

    /// Ends the debugging: everything goes on and nothing stops any more.
    pub fn detach(&self) {
        let mut g = self.lock();
        g.detached = true;
        g.halt = false;
        g.breakpoints.clear();
        for (_, go) in g.halted.values_mut() {
            *go = Go::Continue;
        }
        drop(g);
        self.changed.notify_all();
    }

    /// Called by an activation before each instruction: stops there if it must, and returns
    /// when the debugger lets it go on (with the registers it may have changed in `hart`).
    pub(crate) fn before(&self, st: &mut Stepper, thread: u32, eu: u16, hart: &mut Hart) {
        let reason = {
            let g = self.lock();
            if g.detached {
                return;
            }
            if st.step {
                Some(StopReason::Step)
            } else if g.halt {
                Some(StopReason::Halt)
            } else if g.breakpoints.contains(&hart.pc) && st.resumed_at != Some(hart.pc) {
                Some(StopReason::Breakpoint)
            } else {
                None
            }
        };
        st.resumed_at = None;
        if let Some(r) = reason {
            self.stop(st, thread, eu, hart, r);
        }
    }

    /// Stops the activation for `reason` and waits until the debugger lets it go on.
    pub(crate) fn stop(
        &self,
        st: &mut Stepper,
        thread: u32,
        eu: u16,
        hart: &mut Hart,
        reason: StopReason,
    ) {
        let mut g = self.lock();
        if g.detached {
            return;
        }
        g.halted.insert(
            thread,
            (
                Halted {
                    thread,
                    eu,
                    reason,
                    hart: hart.clone(),
                },
                Go::Wait,
            ),
        );
        g.events.push_back((thread, reason));
        // All-stop: the process's other activations stop at their next instruction.
        g.halt = true;
        self.changed.notify_all();
        let go = loop {
            match g.halted.get(&thread).map(|(_, go)| *go) {
                Some(Go::Wait) if !g.detached => {}
                Some(go) => break go,
                None => break Go::Continue,
            }
            g = self
                .changed
                .wait_timeout(g, Duration::from_millis(100))
                .unwrap_or_else(|e| e.into_inner())
                .0;
        };
        if let Some((h, _)) = g.halted.remove(&thread) {
            hart.x = h.hart.x;
            hart.pc = h.hart.pc;
        }
        st.step = go == Go::Step;
        st.resumed_at = Some(hart.pc);
    }
}
