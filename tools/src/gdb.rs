//! A GDB remote server (the `gdbstub` crate, RISC-V 64 target description) over the bare
//! machine of `vm run`: `mlx5-dpa vm run ELF --gdb 127.0.0.1:1234` loads the program, stops
//! before its first instruction and waits for `gdb-multiarch`:
//!
//! ```text
//! $ gdb-multiarch ELF -ex 'target remote 127.0.0.1:1234'
//! (gdb) break compute
//! (gdb) continue
//! (gdb) info registers a0
//! (gdb) stepi
//! (gdb) x/4xw $sp
//! ```
//!
//! What it serves: the 32 integer registers and the pc (read and write), memory (read and
//! write, any mapped byte, text included: a write there drops the decoded code), software
//! breakpoints (kept by the server; the guest's bytes are never patched), single step,
//! continue, Ctrl-C. A run stops for the debugger at a breakpoint, after a step, on a fault
//! (SIGSEGV for a memory fault, SIGBUS for a misaligned one, SIGILL for an illegal
//! instruction), on the guest's own `ebreak` (SIGTRAP), on an `ecall` the machine does not
//! serve (SIGSYS) and when the `--max-insns` budget is spent (SIGXCPU, the watchdog's
//! signal); the program's exit (or its entry function's return) ends the session with the
//! exit code (the return value's low byte). Detaching lets the program run on to its end;
//! `kill` ends it.
//!
//! The bare machine has one hart, so GDB sees one thread.

use std::collections::BTreeSet;
use std::io::Write;
use std::net::{TcpListener, TcpStream};

use gdbstub::common::Signal;
use gdbstub::conn::ConnectionExt;
use gdbstub::stub::{run_blocking, DisconnectReason, GdbStub, SingleThreadStopReason};
use gdbstub::target::ext::base::singlethread::{
    SingleThreadBase, SingleThreadResume, SingleThreadResumeOps, SingleThreadSingleStep,
    SingleThreadSingleStepOps,
};
use gdbstub::target::ext::base::BaseOps;
use gdbstub::target::ext::breakpoints::{
    Breakpoints, BreakpointsOps, SwBreakpoint, SwBreakpointOps,
};
use gdbstub::target::{Target, TargetError, TargetResult};
use gdbstub_arch::riscv::reg::RiscvCoreRegs;
use gdbstub_arch::riscv::Riscv64;
use mlx5_sim::riscv::bare::{BareMachine, BareStop};
use mlx5_sim::riscv::{Fault, Hart, MemError};

/// Instructions a `continue` runs between looks at the connection (for a Ctrl-C).
const CHUNK: u64 = 1 << 16;
/// The same, one step at a time, while breakpoints are set.
const STEPPED_CHUNK: u64 = 1 << 12;

/// Why the debugging session failed.
#[derive(Debug, thiserror::Error)]
pub enum GdbError {
    #[error("gdbserver on {addr}: {source}")]
    Listen {
        addr: String,
        source: std::io::Error,
    },
    #[error("gdbserver: {0}")]
    Session(String),
}

/// How a session ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The program ended while the debugger was attached.
    Finished(BareStop),
    /// The debugger detached (or went away): the program is to run on.
    Detached,
    /// The debugger killed the program.
    Killed,
}

/// The debugged machine and its hart.
struct VmTarget<'m> {
    machine: &'m mut BareMachine,
    hart: Hart,
    /// The run's instruction limit (`--max-insns`), against `hart.instret`.
    max_insns: u64,
    breakpoints: BTreeSet<u64>,
    step: bool,
    /// The terminal stop, once the program ended.
    finished: Option<BareStop>,
}

enum RunEvent {
    Incoming,
    Stopped(SingleThreadStopReason<u64>),
}

impl VmTarget<'_> {
    /// The stop GDB is told of for a stop of the machine other than the budget's.
    fn report(&mut self, stop: BareStop) -> SingleThreadStopReason<u64> {
        match stop {
            BareStop::Exit { code, .. } => {
                self.finished = Some(stop);
                SingleThreadStopReason::Exited(code as u8)
            }
            BareStop::Return { value } => {
                self.finished = Some(stop);
                SingleThreadStopReason::Exited(value as u8)
            }
            BareStop::Budget => SingleThreadStopReason::Signal(Signal::SIGXCPU),
            BareStop::Ebreak { .. } => SingleThreadStopReason::Signal(Signal::SIGTRAP),
            BareStop::UnknownEcall { .. } => SingleThreadStopReason::Signal(Signal::SIGSYS),
            BareStop::Fault(Fault::Memory {
                error: MemError::Misaligned,
                ..
            })
            | BareStop::Fault(Fault::MisalignedTarget { .. }) => {
                SingleThreadStopReason::Signal(Signal::SIGBUS)
            }
            BareStop::Fault(Fault::Memory { .. }) => {
                SingleThreadStopReason::Signal(Signal::SIGSEGV)
            }
            BareStop::Fault(Fault::IllegalInstruction { .. }) => {
                SingleThreadStopReason::Signal(Signal::SIGILL)
            }
        }
    }

    fn left(&self) -> u64 {
        self.max_insns.saturating_sub(self.hart.instret)
    }

    /// Runs as GDB asked (one step, or on until a stop), looking at the connection between
    /// chunks.
    fn run(&mut self, mut incoming: impl FnMut() -> bool) -> RunEvent {
        if let Some(stop) = self.finished {
            return RunEvent::Stopped(self.report(stop));
        }
        if self.step {
            if self.left() == 0 {
                return RunEvent::Stopped(self.report(BareStop::Budget));
            }
            return RunEvent::Stopped(match self.machine.resume(&mut self.hart, 1) {
                BareStop::Budget => SingleThreadStopReason::DoneStep,
                stop => self.report(stop),
            });
        }
        loop {
            if incoming() {
                return RunEvent::Incoming;
            }
            if self.left() == 0 {
                return RunEvent::Stopped(self.report(BareStop::Budget));
            }
            if self.breakpoints.is_empty() {
                let chunk = CHUNK.min(self.left());
                match self.machine.resume(&mut self.hart, chunk) {
                    BareStop::Budget => continue,
                    stop => return RunEvent::Stopped(self.report(stop)),
                }
            }
            // One instruction at a time, stopping before one at a breakpoint (the first one is
            // executed even there: it is where the last stop was).
            for _ in 0..STEPPED_CHUNK.min(self.left()) {
                match self.machine.resume(&mut self.hart, 1) {
                    BareStop::Budget => {}
                    stop => return RunEvent::Stopped(self.report(stop)),
                }
                if self.breakpoints.contains(&self.hart.pc) {
                    return RunEvent::Stopped(SingleThreadStopReason::SwBreak(()));
                }
            }
        }
    }
}

impl Target for VmTarget<'_> {
    type Arch = Riscv64;
    type Error = &'static str;

    fn base_ops(&mut self) -> BaseOps<'_, Self::Arch, Self::Error> {
        BaseOps::SingleThread(self)
    }

    fn support_breakpoints(&mut self) -> Option<BreakpointsOps<'_, Self>> {
        Some(self)
    }
}

impl SingleThreadBase for VmTarget<'_> {
    fn read_registers(&mut self, regs: &mut RiscvCoreRegs<u64>) -> TargetResult<(), Self> {
        regs.x = self.hart.x;
        regs.pc = self.hart.pc;
        Ok(())
    }

    fn write_registers(&mut self, regs: &RiscvCoreRegs<u64>) -> TargetResult<(), Self> {
        self.hart.x = regs.x;
        self.hart.x[0] = 0;
        self.hart.pc = regs.pc;
        Ok(())
    }

    fn read_addrs(&mut self, start_addr: u64, data: &mut [u8]) -> TargetResult<usize, Self> {
        if let Some(bytes) = self.machine.read(start_addr, data.len() as u64) {
            data.copy_from_slice(&bytes);
            return Ok(data.len());
        }
        // Some byte is not mapped: what is, up to the first that is not.
        let mut n = 0;
        for (i, d) in data.iter_mut().enumerate() {
            match start_addr
                .checked_add(i as u64)
                .and_then(|a| self.machine.read(a, 1))
            {
                Some(b) => *d = b[0],
                None => break,
            }
            n += 1;
        }
        if n == 0 {
            return Err(TargetError::NonFatal);
        }
        Ok(n)
    }

    fn write_addrs(&mut self, start_addr: u64, data: &[u8]) -> TargetResult<(), Self> {
        if self.machine.write(start_addr, data) {
            Ok(())
        } else {
            Err(TargetError::NonFatal)
        }
    }

    fn support_resume(&mut self) -> Option<SingleThreadResumeOps<'_, Self>> {
        Some(self)
    }
}

impl SingleThreadResume for VmTarget<'_> {
    fn resume(&mut self, signal: Option<Signal>) -> Result<(), Self::Error> {
        if signal.is_some() {
            return Err("the bare machine has no signals to deliver");
        }
        self.step = false;
        Ok(())
    }

    fn support_single_step(&mut self) -> Option<SingleThreadSingleStepOps<'_, Self>> {
        Some(self)
    }
}

impl SingleThreadSingleStep for VmTarget<'_> {
    fn step(&mut self, signal: Option<Signal>) -> Result<(), Self::Error> {
        if signal.is_some() {
            return Err("the bare machine has no signals to deliver");
        }
        self.step = true;
        Ok(())
    }
}

impl Breakpoints for VmTarget<'_> {
    fn support_sw_breakpoint(&mut self) -> Option<SwBreakpointOps<'_, Self>> {
        Some(self)
    }
}

impl SwBreakpoint for VmTarget<'_> {
    fn add_sw_breakpoint(&mut self, addr: u64, _kind: usize) -> TargetResult<bool, Self> {
        self.breakpoints.insert(addr);
        Ok(true)
    }

    fn remove_sw_breakpoint(&mut self, addr: u64, _kind: usize) -> TargetResult<bool, Self> {
        Ok(self.breakpoints.remove(&addr))
    }
}

enum EventLoop<'m> {
    #[allow(dead_code)]
    Never(std::marker::PhantomData<&'m ()>, std::convert::Infallible),
}

impl<'m> run_blocking::BlockingEventLoop for EventLoop<'m> {
    type Target = VmTarget<'m>;
    type Connection = TcpStream;
    type StopReason = SingleThreadStopReason<u64>;

    #[allow(clippy::type_complexity)]
    fn wait_for_stop_reason(
        target: &mut VmTarget<'m>,
        conn: &mut TcpStream,
    ) -> Result<
        run_blocking::Event<Self::StopReason>,
        run_blocking::WaitForStopReasonError<&'static str, std::io::Error>,
    > {
        // A connection that cannot be peeked is gone: stop and let the read say so.
        let event = target.run(|| conn.peek().map(|b| b.is_some()).unwrap_or(true));
        match event {
            RunEvent::Incoming => {
                let byte = conn
                    .read()
                    .map_err(run_blocking::WaitForStopReasonError::Connection)?;
                Ok(run_blocking::Event::IncomingData(byte))
            }
            RunEvent::Stopped(reason) => Ok(run_blocking::Event::TargetStopped(reason)),
        }
    }

    fn on_interrupt(_target: &mut VmTarget<'m>) -> Result<Option<Self::StopReason>, &'static str> {
        Ok(Some(SingleThreadStopReason::Signal(Signal::SIGINT)))
    }
}

/// Listens on `addr` (`HOST:PORT`; port 0 picks a free one), says where on standard error
/// (`gdbserver: listening on 127.0.0.1:PORT`), takes one debugger and serves it `hart` on
/// `machine` until the program ends or the debugger leaves. `hart` is left where the session
/// left it.
pub fn serve(
    machine: &mut BareMachine,
    hart: &mut Hart,
    max_insns: u64,
    addr: &str,
) -> Result<Outcome, GdbError> {
    let listen = |source| GdbError::Listen {
        addr: addr.to_string(),
        source,
    };
    let listener = TcpListener::bind(addr).map_err(listen)?;
    let local = listener.local_addr().map_err(listen)?;
    {
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "gdbserver: listening on {local}");
        let _ = err.flush();
    }
    let (stream, _) = listener.accept().map_err(listen)?;
    // Small packets both ways: no Nagle delay on each.
    let _ = stream.set_nodelay(true);
    let mut target = VmTarget {
        machine,
        hart: hart.clone(),
        max_insns,
        breakpoints: BTreeSet::new(),
        step: false,
        finished: None,
    };
    let result = GdbStub::new(stream).run_blocking::<EventLoop<'_>>(&mut target);
    *hart = target.hart.clone();
    match result {
        Ok(DisconnectReason::TargetExited(_)) | Ok(DisconnectReason::TargetTerminated(_)) => {
            Ok(target.finished.map_or(Outcome::Detached, Outcome::Finished))
        }
        Ok(DisconnectReason::Disconnect) => Ok(Outcome::Detached),
        Ok(DisconnectReason::Kill) => Ok(Outcome::Killed),
        Err(e) => Err(GdbError::Session(e.to_string())),
    }
}

// ---------------------------------------------------------------------------------------------
// A DPA process of the device model (`mlx5-dpa demo rpc --gdb`)

use gdbstub::common::Tid;
use gdbstub::stub::MultiThreadStopReason;
use gdbstub::target::ext::base::multithread::{
    MultiThreadBase, MultiThreadResume, MultiThreadResumeOps, MultiThreadSchedulerLocking,
    MultiThreadSchedulerLockingOps, MultiThreadSingleStep, MultiThreadSingleStepOps,
};
use gdbstub::target::ext::monitor_cmd::{ConsoleOutput, MonitorCmd, MonitorCmdOps};
use gdbstub::target::ext::thread_extra_info::{ThreadExtraInfo, ThreadExtraInfoOps};
use mlx5_sim::dpa::debug::StopReason;

/// How long a wait for a stop looks at the connection in between.
const POLL: std::time::Duration = std::time::Duration::from_millis(20);

/// The debug token of a process, as FlexIO samples print it ("Use the token >>> ... <<< for
/// debugging"): this run's process id mixed with the DPA process id, 31 bits so that GDB can
/// take it anywhere it takes a process id. `monitor token` names it.
pub fn debug_token(process: u32) -> u64 {
    let mut x = (u64::from(std::process::id()) << 32) | u64::from(process);
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    (x & 0x7fff_ffff) | 1
}

/// The debugged process.
struct ProcessTarget {
    dev: mlx5_sim::Device,
    dbg: mlx5_sim::DpaDebugger,
    /// The thread a `stepi` steps (others stay stopped); `None`: continue all.
    step: Option<u32>,
}

fn tid(thread: u32) -> Option<Tid> {
    Tid::new(thread as usize)
}

impl ProcessTarget {
    /// The process's threads: stopped ones with their EU, and the others.
    fn threads(&self) -> Vec<(u32, Option<u16>, bool)> {
        let halted = self.dbg.halted();
        let mut v: Vec<(u32, Option<u16>, bool)> = halted
            .iter()
            .map(|h| (h.thread, Some(h.eu), true))
            .collect();
        if let Some(p) = self
            .dev
            .dpa_processes()
            .into_iter()
            .find(|p| p.id == self.dbg.process())
        {
            for t in p.threads {
                if !v.iter().any(|(id, ..)| *id == t.id) {
                    v.push((t.id, t.eu, false));
                }
            }
        }
        v.sort_by_key(|(id, ..)| *id);
        v
    }

    fn stop_reason(thread: u32, why: StopReason) -> Option<MultiThreadStopReason<u64>> {
        let t = tid(thread)?;
        Some(match why {
            StopReason::Breakpoint => MultiThreadStopReason::SwBreak(t),
            StopReason::Step => MultiThreadStopReason::SignalWithThread {
                tid: t,
                signal: Signal::SIGTRAP,
            },
            StopReason::Halt => MultiThreadStopReason::SignalWithThread {
                tid: t,
                signal: Signal::SIGINT,
            },
            StopReason::Fault(sig) => MultiThreadStopReason::SignalWithThread {
                tid: t,
                signal: Signal(sig),
            },
            StopReason::Watchdog => MultiThreadStopReason::SignalWithThread {
                tid: t,
                signal: Signal::SIGXCPU,
            },
        })
    }
}

impl Target for ProcessTarget {
    type Arch = Riscv64;
    type Error = &'static str;

    fn base_ops(&mut self) -> BaseOps<'_, Self::Arch, Self::Error> {
        BaseOps::MultiThread(self)
    }

    fn support_breakpoints(&mut self) -> Option<BreakpointsOps<'_, Self>> {
        Some(self)
    }

    fn support_monitor_cmd(&mut self) -> Option<MonitorCmdOps<'_, Self>> {
        Some(self)
    }
}

impl MultiThreadBase for ProcessTarget {
    fn read_registers(
        &mut self,
        regs: &mut RiscvCoreRegs<u64>,
        tid: Tid,
    ) -> TargetResult<(), Self> {
        let thread = tid.get() as u32;
        match self.dbg.halted().into_iter().find(|h| h.thread == thread) {
            Some(h) => {
                regs.x = h.hart.x;
                regs.pc = h.hart.pc;
            }
            // Not stopped (idle, waiting for its next event): its entry, no registers.
            None => {
                let entry = self
                    .dev
                    .dpa_processes()
                    .into_iter()
                    .flat_map(|p| p.threads)
                    .find(|t| t.id == thread)
                    .map_or(0, |t| t.entry);
                regs.x = [0; 32];
                regs.pc = entry;
            }
        }
        Ok(())
    }

    fn write_registers(&mut self, regs: &RiscvCoreRegs<u64>, tid: Tid) -> TargetResult<(), Self> {
        if self.dbg.set_registers(tid.get() as u32, regs.x, regs.pc) {
            Ok(())
        } else {
            Err(TargetError::NonFatal)
        }
    }

    fn read_addrs(
        &mut self,
        start_addr: u64,
        data: &mut [u8],
        _tid: Tid,
    ) -> TargetResult<usize, Self> {
        if let Ok(b) = self.dbg.read(start_addr, data.len()) {
            data.copy_from_slice(&b);
            return Ok(data.len());
        }
        let mut n = 0;
        for (i, d) in data.iter_mut().enumerate() {
            match start_addr
                .checked_add(i as u64)
                .and_then(|a| self.dbg.read(a, 1).ok())
            {
                Some(b) => *d = b[0],
                None => break,
            }
            n += 1;
        }
        if n == 0 {
            return Err(TargetError::NonFatal);
        }
        Ok(n)
    }

    fn write_addrs(&mut self, start_addr: u64, data: &[u8], _tid: Tid) -> TargetResult<(), Self> {
        self.dbg
            .write(start_addr, data)
            .map_err(|_| TargetError::NonFatal)
    }

    fn list_active_threads(
        &mut self,
        thread_is_active: &mut dyn FnMut(Tid),
    ) -> Result<(), Self::Error> {
        for (id, ..) in self.threads() {
            if let Some(t) = tid(id) {
                thread_is_active(t);
            }
        }
        Ok(())
    }

    fn support_resume(&mut self) -> Option<MultiThreadResumeOps<'_, Self>> {
        Some(self)
    }

    fn support_thread_extra_info(&mut self) -> Option<ThreadExtraInfoOps<'_, Self>> {
        Some(self)
    }
}

impl MultiThreadResume for ProcessTarget {
    fn resume(&mut self) -> Result<(), Self::Error> {
        match self.step.take() {
            Some(t) if self.dbg.step(t) => {}
            _ => self.dbg.resume(),
        }
        Ok(())
    }

    fn clear_resume_actions(&mut self) -> Result<(), Self::Error> {
        self.step = None;
        Ok(())
    }

    fn set_resume_action_continue(
        &mut self,
        _tid: Tid,
        signal: Option<Signal>,
    ) -> Result<(), Self::Error> {
        if signal.is_some() {
            return Err("no signals to deliver on the DPA");
        }
        Ok(())
    }

    fn support_single_step(&mut self) -> Option<MultiThreadSingleStepOps<'_, Self>> {
        Some(self)
    }

    fn support_scheduler_locking(&mut self) -> Option<MultiThreadSchedulerLockingOps<'_, Self>> {
        Some(self)
    }
}

impl MultiThreadSchedulerLocking for ProcessTarget {
    /// A step moves only the stepped thread here anyway: the others stay stopped.
    fn set_resume_action_scheduler_lock(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }
}

impl MultiThreadSingleStep for ProcessTarget {
    fn set_resume_action_step(
        &mut self,
        tid: Tid,
        signal: Option<Signal>,
    ) -> Result<(), Self::Error> {
        if signal.is_some() {
            return Err("no signals to deliver on the DPA");
        }
        self.step = Some(tid.get() as u32);
        Ok(())
    }
}

impl ThreadExtraInfo for ProcessTarget {
    fn thread_extra_info(&self, tid: Tid, buf: &mut [u8]) -> Result<usize, Self::Error> {
        let thread = tid.get() as u32;
        let text = match self.threads().into_iter().find(|(id, ..)| *id == thread) {
            Some((_, Some(eu), true)) => format!("DPA thread {thread:#x}, stopped on EU {eu}"),
            Some((_, Some(eu), false)) => {
                format!("DPA thread {thread:#x}, waiting (last on EU {eu})")
            }
            _ => format!("DPA thread {thread:#x}, waiting"),
        };
        let n = text.len().min(buf.len());
        buf[..n].copy_from_slice(&text.as_bytes()[..n]);
        Ok(n)
    }
}

impl Breakpoints for ProcessTarget {
    fn support_sw_breakpoint(&mut self) -> Option<SwBreakpointOps<'_, Self>> {
        Some(self)
    }
}

impl SwBreakpoint for ProcessTarget {
    fn add_sw_breakpoint(&mut self, addr: u64, _kind: usize) -> TargetResult<bool, Self> {
        self.dbg.set_breakpoint(addr);
        Ok(true)
    }

    fn remove_sw_breakpoint(&mut self, addr: u64, _kind: usize) -> TargetResult<bool, Self> {
        Ok(self.dbg.remove_breakpoint(addr))
    }
}

impl MonitorCmd for ProcessTarget {
    fn handle_monitor_cmd(
        &mut self,
        cmd: &[u8],
        mut out: ConsoleOutput<'_>,
    ) -> Result<(), Self::Error> {
        let process = self.dbg.process();
        match std::str::from_utf8(cmd).unwrap_or("").trim() {
            "token" => gdbstub::outputln!(
                out,
                "DPA process {process:#x}, token {:#x}",
                debug_token(process)
            ),
            "ps" => {
                for (id, eu, stopped) in self.threads() {
                    gdbstub::outputln!(
                        out,
                        "thread {id:#x}: {}{}",
                        if stopped { "stopped" } else { "waiting" },
                        eu.map(|e| format!(", EU {e}")).unwrap_or_default()
                    );
                }
            }
            other => gdbstub::outputln!(out, "unknown monitor command {other:?} (token, ps)"),
        }
        Ok(())
    }
}

enum ProcessLoop {}

impl run_blocking::BlockingEventLoop for ProcessLoop {
    type Target = ProcessTarget;
    type Connection = TcpStream;
    type StopReason = MultiThreadStopReason<u64>;

    #[allow(clippy::type_complexity)]
    fn wait_for_stop_reason(
        target: &mut ProcessTarget,
        conn: &mut TcpStream,
    ) -> Result<
        run_blocking::Event<Self::StopReason>,
        run_blocking::WaitForStopReasonError<&'static str, std::io::Error>,
    > {
        loop {
            if conn.peek().map(|b| b.is_some()).unwrap_or(true) {
                let byte = conn
                    .read()
                    .map_err(run_blocking::WaitForStopReasonError::Connection)?;
                return Ok(run_blocking::Event::IncomingData(byte));
            }
            if let Some((thread, why)) = target.dbg.wait_stop(POLL) {
                if let Some(r) = ProcessTarget::stop_reason(thread, why) {
                    return Ok(run_blocking::Event::TargetStopped(r));
                }
            }
        }
    }

    fn on_interrupt(_target: &mut ProcessTarget) -> Result<Option<Self::StopReason>, &'static str> {
        _target.dbg.halt();
        Ok(None)
    }
}

/// Serves GDB a DPA process of the model: listens on `addr` (saying where on standard
/// error), takes one debugger, and serves until it goes. The process's activations stop at
/// their first instruction until GDB continues them. Runs on a thread of its own.
///
/// # Errors
/// The address cannot be listened on.
pub fn serve_process(
    dev: &mlx5_sim::Device,
    process: u32,
    addr: &str,
) -> Result<std::thread::JoinHandle<()>, GdbError> {
    let listen = |source| GdbError::Listen {
        addr: addr.to_string(),
        source,
    };
    let listener = TcpListener::bind(addr).map_err(listen)?;
    let local = listener.local_addr().map_err(listen)?;
    let dbg = dev
        .dpa_debug(process)
        .map_err(|e| GdbError::Session(e.to_string()))?;
    // Stopped until GDB says go: its first activation waits at its entry.
    dbg.halt();
    {
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "gdbserver: listening on {local}");
        let _ = err.flush();
    }
    let dev = dev.clone();
    Ok(std::thread::spawn(move || {
        let Ok((stream, _)) = listener.accept() else {
            return;
        };
        let _ = stream.set_nodelay(true);
        let mut target = ProcessTarget {
            dev,
            dbg,
            step: None,
        };
        if let Err(e) = GdbStub::new(stream).run_blocking::<ProcessLoop>(&mut target) {
            eprintln!("gdbserver: {e}");
        }
        // Dropping the target detaches: everything goes on.
    }))
}
