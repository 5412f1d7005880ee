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
//!
//! [`dpa`] serves the DPA processes of the device model instead, chosen by debug token.

pub mod dpa;

/// `--gdb HOST:PORT`, checked when the command line is read, before any set-up: a host (name
/// or address) and a port number, as the server will listen on.
pub fn host_port(s: &str) -> Result<String, String> {
    let (host, port) = s
        .rsplit_once(':')
        .ok_or_else(|| format!("{s:?} is not HOST:PORT (e.g. 127.0.0.1:1234; port 0: any)"))?;
    port.parse::<u16>()
        .map_err(|_| format!("{port:?} is not a port number (0 ..= 65535)"))?;
    if host.is_empty() {
        return Err(format!("{s:?} names no host (e.g. 127.0.0.1:{port})"));
    }
    std::net::ToSocketAddrs::to_socket_addrs(s)
        .map_err(|e| format!("{host:?}: {e}"))?
        .next()
        .ok_or_else(|| format!("{host:?} names no address"))?;
    Ok(s.to_string())
}

pub use dpa::debug_token;

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
