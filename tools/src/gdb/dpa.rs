//! GDB on the DPA processes of the device model, as NVIDIA's `dpa-gdbserver` serves a
//! device's: a process is chosen by its debug token, the number FlexIO's samples print
//! ("Use the token >>> 0x... <<< for debugging").
//!
//! ```text
//! $ mlx5-dpa demo rpc 44 55 --gdb 127.0.0.1:1234 &
//! Use the token >>> 0x000000002c5e01a7 <<< for debugging
//! $ gdb-multiarch fw-blobs/bin/rpc_calc.elf
//! (gdb) target extended-remote 127.0.0.1:1234
//! (gdb) monitor ps                 # the device's processes, with their tokens
//! (gdb) attach 0x2c5e01a7          # by token
//! (gdb) break rpc_calculate
//! (gdb) continue
//! ```
//!
//! `target remote` (not extended) takes the process the server was started for at once. The
//! DPA threads of the attached process are GDB threads (`info threads` names each one's EU);
//! registers, memory, software breakpoints, `stepi` (only the stepped thread moves),
//! continue, Ctrl-C (a halt: every activation stops at its next instruction). Stops on a
//! breakpoint (SIGTRAP), a step, a halt (SIGINT), a fault (its signal) and the watchdog
//! (SIGXCPU), each before the process fails of it. `detach`, `kill` or the end of a
//! connection that looked at the process let it go on (a debugger does not end a process its
//! host program owns); a connection that never did (a port scan, `ps --connect`) leaves a
//! waiting process waiting. One debugger at a time: another connection meanwhile is answered
//! `E.busy: ...`; silent or idle connections are closed (10 s before the first byte, 15
//! minutes between packets). `monitor token` and `monitor ps`.

use std::io::Write;
use std::net::{TcpListener, TcpStream};

use gdbstub::common::{Pid, Signal, Tid};
use gdbstub::conn::ConnectionExt;
use gdbstub::stub::{run_blocking, GdbStub, MultiThreadStopReason};
use gdbstub::target::ext::base::multithread::{
    MultiThreadBase, MultiThreadResume, MultiThreadResumeOps, MultiThreadSchedulerLocking,
    MultiThreadSchedulerLockingOps, MultiThreadSingleStep, MultiThreadSingleStepOps,
};
use gdbstub::target::ext::base::BaseOps;
use gdbstub::target::ext::breakpoints::{
    Breakpoints, BreakpointsOps, SwBreakpoint, SwBreakpointOps,
};
use gdbstub::target::ext::extended_mode::{
    Args, AttachKind, CurrentActivePid, CurrentActivePidOps, ExtendedMode, ExtendedModeOps,
    ShouldTerminate,
};
use gdbstub::target::ext::monitor_cmd::{ConsoleOutput, MonitorCmd, MonitorCmdOps};
use gdbstub::target::ext::thread_extra_info::{ThreadExtraInfo, ThreadExtraInfoOps};
use gdbstub::target::{Target, TargetError, TargetResult};
use gdbstub_arch::riscv::reg::RiscvCoreRegs;
use gdbstub_arch::riscv::Riscv64;
use mlx5_sim::dpa::debug::StopReason;
use mlx5_sim::DpaDebugger;

use super::GdbError;

/// How long a wait for a stop looks at the connection in between.
const POLL: std::time::Duration = std::time::Duration::from_millis(20);

/// The debug token of a process, as FlexIO samples print it ("Use the token >>> ... <<< for
/// debugging"): this run's process id mixed with the DPA process id, 31 bits so that GDB can
/// take it anywhere it takes a process id (`attach TOKEN`). `monitor token` names it.
pub fn debug_token(process: u32) -> u64 {
    let mut x = (u64::from(std::process::id()) << 32) | u64::from(process);
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    (x & 0x7fff_ffff) | 1
}

/// The device's DPA processes, one of them attached at a time.
struct DpaTarget {
    dev: mlx5_sim::Device,
    /// The attached process's debugger.
    dbg: Option<DpaDebugger>,
    /// A process waiting for its debugger (the one a demo was started for): halted at its
    /// entry, attached by `target remote` at once or by `attach TOKEN` in extended mode.
    waiting: Option<DpaDebugger>,
    /// The thread a `stepi` steps (others stay stopped); `None`: continue all.
    step: Option<u32>,
    /// The debugger looked at the process (its threads or registers) or resumed it: when the
    /// connection ends, the process it held goes on. A connection that never did (a port
    /// scan, `ps --connect`) leaves a waiting process waiting.
    engaged: bool,
}

fn tid(thread: u32) -> Option<Tid> {
    Tid::new(thread as usize)
}

fn pid(token: u64) -> Option<Pid> {
    Pid::new(usize::try_from(token).ok()?)
}

impl DpaTarget {
    fn attached(&self) -> Result<&DpaDebugger, TargetError<&'static str>> {
        self.dbg.as_ref().ok_or(TargetError::NonFatal)
    }

    /// The attached process's threads: stopped ones with their EU, and the others.
    fn threads(&self) -> Vec<(u32, Option<u16>, bool)> {
        let Some(dbg) = &self.dbg else {
            return Vec::new();
        };
        let mut v: Vec<(u32, Option<u16>, bool)> = dbg
            .halted()
            .iter()
            .map(|h| (h.thread, Some(h.eu), true))
            .collect();
        if let Some(p) = self
            .dev
            .dpa_processes()
            .into_iter()
            .find(|p| p.id == dbg.process())
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

    /// Attaches to the process with debug token `token`, halting it (the one waiting for its
    /// debugger, already halted, is taken as it is). A process attached before is let go.
    fn attach_token(&mut self, token: u64) -> Result<(), String> {
        let waiting = self.waiting.as_ref().map(DpaDebugger::process);
        if let Some(dbg) = &self.dbg {
            if debug_token(dbg.process()) == token {
                return Ok(());
            }
        }
        let process = waiting
            .into_iter()
            .chain(self.dev.dpa_processes().into_iter().map(|p| p.id))
            .find(|&id| debug_token(id) == token)
            .ok_or_else(|| format!("no DPA process has token {token:#x} (see `monitor ps`)"))?;
        let dbg = if waiting == Some(process) {
            self.waiting.take().ok_or("raced")?
        } else {
            // Let the one attached go first: the process asked for may be it.
            self.dbg = None;
            let d = self.dev.dpa_debug(process).map_err(|e| e.to_string())?;
            d.halt();
            d
        };
        let threads = self
            .dev
            .dpa_processes()
            .into_iter()
            .find(|p| p.id == process)
            .map_or(0, |p| p.threads.len());
        if threads == 0 && dbg.halted().is_empty() {
            // GDB needs a thread to stand on; say why rather than "exited".
            if waiting == Some(process) {
                self.waiting = Some(dbg);
            }
            return Err(format!(
                "DPA process {process:#x} has no threads yet: attach once it has one"
            ));
        }
        self.step = None;
        self.dbg = Some(dbg);
        self.engaged = true;
        Ok(())
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

impl Target for DpaTarget {
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

    fn support_extended_mode(&mut self) -> Option<ExtendedModeOps<'_, Self>> {
        Some(self)
    }
}

impl MultiThreadBase for DpaTarget {
    fn read_registers(
        &mut self,
        regs: &mut RiscvCoreRegs<u64>,
        tid: Tid,
    ) -> TargetResult<(), Self> {
        self.engaged |= self.dbg.is_some();
        let thread = tid.get() as u32;
        match self
            .attached()?
            .halted()
            .into_iter()
            .find(|h| h.thread == thread)
        {
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
        if self
            .attached()?
            .set_registers(tid.get() as u32, regs.x, regs.pc)
        {
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
        let dbg = self.attached()?;
        if let Ok(b) = dbg.read(start_addr, data.len()) {
            data.copy_from_slice(&b);
            return Ok(data.len());
        }
        // Part of the range: as much as is mapped from its start.
        let mut n = 0;
        for (i, d) in data.iter_mut().enumerate() {
            match start_addr
                .checked_add(i as u64)
                .and_then(|a| dbg.read(a, 1).ok())
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
        self.attached()?
            .write(start_addr, data)
            .map_err(|_| TargetError::NonFatal)
    }

    fn list_active_threads(
        &mut self,
        thread_is_active: &mut dyn FnMut(Tid),
    ) -> Result<(), Self::Error> {
        self.engaged |= self.dbg.is_some();
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

impl MultiThreadResume for DpaTarget {
    fn resume(&mut self) -> Result<(), Self::Error> {
        self.engaged = true;
        let step = self.step.take();
        let dbg = self.dbg.as_ref().ok_or("no DPA process attached")?;
        match step {
            Some(t) if dbg.step(t) => {}
            _ => dbg.resume(),
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

impl MultiThreadSchedulerLocking for DpaTarget {
    /// A step moves only the stepped thread here anyway: the others stay stopped.
    fn set_resume_action_scheduler_lock(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }
}

impl MultiThreadSingleStep for DpaTarget {
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

impl ThreadExtraInfo for DpaTarget {
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

impl Breakpoints for DpaTarget {
    fn support_sw_breakpoint(&mut self) -> Option<SwBreakpointOps<'_, Self>> {
        Some(self)
    }
}

impl SwBreakpoint for DpaTarget {
    fn add_sw_breakpoint(&mut self, addr: u64, _kind: usize) -> TargetResult<bool, Self> {
        self.attached()?.set_breakpoint(addr);
        Ok(true)
    }

    fn remove_sw_breakpoint(&mut self, addr: u64, _kind: usize) -> TargetResult<bool, Self> {
        Ok(self.attached()?.remove_breakpoint(addr))
    }
}

impl ExtendedMode for DpaTarget {
    /// A DPA process is made by its host program, never by the debugger.
    fn run(&mut self, _filename: Option<&[u8]>, _args: Args<'_, '_>) -> TargetResult<Pid, Self> {
        Err(TargetError::NonFatal)
    }

    fn attach(&mut self, pid: Pid) -> TargetResult<(), Self> {
        let token = pid.get() as u64;
        self.attach_token(token).map_err(|e| {
            eprintln!("gdbserver: attach {token:#x}: {e}");
            TargetError::NonFatal
        })
    }

    fn query_if_attached(&mut self, _pid: Pid) -> TargetResult<AttachKind, Self> {
        Ok(AttachKind::Attach)
    }

    /// Lets the process go on: its host program owns it, and ends it.
    fn kill(&mut self, _pid: Option<Pid>) -> TargetResult<ShouldTerminate, Self> {
        self.dbg = None;
        self.step = None;
        Ok(ShouldTerminate::No)
    }

    fn restart(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }

    /// Extended mode: nothing is attached until `attach TOKEN` says which process.
    fn on_start(&mut self) -> Result<(), Self::Error> {
        if let Some(d) = self.dbg.take() {
            // The process the server was started for goes on waiting, halted, for its token.
            self.waiting = Some(d);
        }
        Ok(())
    }

    fn support_current_active_pid(&mut self) -> Option<CurrentActivePidOps<'_, Self>> {
        Some(self)
    }
}

impl CurrentActivePid for DpaTarget {
    fn current_active_pid(&mut self) -> Result<Pid, Self::Error> {
        let token = self.dbg.as_ref().map_or(1, |d| debug_token(d.process()));
        pid(token).ok_or("token out of range")
    }
}

impl MonitorCmd for DpaTarget {
    fn handle_monitor_cmd(
        &mut self,
        cmd: &[u8],
        mut out: ConsoleOutput<'_>,
    ) -> Result<(), Self::Error> {
        match std::str::from_utf8(cmd).unwrap_or("").trim() {
            "token" => match &self.dbg {
                Some(d) => gdbstub::outputln!(
                    out,
                    "DPA process {:#x}, token {:#x}",
                    d.process(),
                    debug_token(d.process())
                ),
                None => gdbstub::outputln!(out, "no DPA process attached (see `monitor ps`)"),
            },
            "ps" => {
                let stopped: Vec<u32> = self
                    .dbg
                    .as_ref()
                    .map(|d| d.halted().iter().map(|h| h.thread).collect())
                    .unwrap_or_default();
                let marks = crate::ps::Marks {
                    tokens: true,
                    attached: self.dbg.as_ref().map(DpaDebugger::process),
                    waiting: self.waiting.as_ref().map(DpaDebugger::process),
                    stopped: &stopped,
                };
                for line in crate::ps::table(&self.dev, marks) {
                    gdbstub::outputln!(out, "{line}");
                }
            }
            other => gdbstub::outputln!(out, "unknown monitor command {other:?} (token, ps)"),
        }
        Ok(())
    }
}

enum DpaLoop {}

impl run_blocking::BlockingEventLoop for DpaLoop {
    type Target = DpaTarget;
    type Connection = TcpStream;
    type StopReason = MultiThreadStopReason<u64>;

    #[allow(clippy::type_complexity)]
    fn wait_for_stop_reason(
        target: &mut DpaTarget,
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
            match &target.dbg {
                Some(dbg) => {
                    if let Some((thread, why)) = dbg.wait_stop(POLL) {
                        if let Some(r) = DpaTarget::stop_reason(thread, why) {
                            return Ok(run_blocking::Event::TargetStopped(r));
                        }
                    }
                }
                None => std::thread::sleep(POLL),
            }
        }
    }

    fn on_interrupt(target: &mut DpaTarget) -> Result<Option<Self::StopReason>, &'static str> {
        if let Some(d) = &target.dbg {
            d.halt();
        }
        Ok(None)
    }
}

/// How long a new connection may take to send its first byte before it is closed (a port
/// scan's half-open connection, a client that never speaks).
const FIRST_BYTE: std::time::Duration = std::time::Duration::from_secs(10);
/// How long a session may wait for its debugger's next packet (the process stopped, the
/// user away) before the connection is closed and the next client served.
const IDLE: std::time::Duration = std::time::Duration::from_secs(15 * 60);
/// Most connections waiting for their first byte at once; more are closed as they come.
const MAX_UNHEARD: usize = 64;
/// What a connection gets while another debugger holds the server: GDB's `E.text` error,
/// then the close.
const BUSY: &str = "E.busy: another debugger is connected to this gdbserver";
/// What a connection gets while [`MAX_UNHEARD`] others have not spoken yet.
const FLOODED: &str = "E.busy: too many connections are waiting to speak to this gdbserver";

/// `$payload#checksum`.
fn packet(payload: &str) -> Vec<u8> {
    let sum = payload.bytes().fold(0u8, u8::wrapping_add);
    format!("${payload}#{sum:02x}").into_bytes()
}

/// Answers `why` ([`BUSY`], [`FLOODED`]) and closes gracefully: what the client sent is read first (a second,
/// bounded), so the close is no reset that could discard the answer before it is read.
fn say_busy(mut stream: TcpStream, why: &str) {
    let _ = stream.write_all(&packet(why));
    let _ = stream.shutdown(std::net::Shutdown::Write);
    let _ = stream.set_read_timeout(Some(std::time::Duration::from_secs(1)));
    let mut sink = [0u8; 512];
    for _ in 0..64 {
        if !matches!(std::io::Read::read(&mut stream, &mut sink), Ok(1..)) {
            break;
        }
    }
}

/// Whether `stream` sends a byte within [`FIRST_BYTE`] (and has not closed).
fn speaks(stream: &TcpStream) -> bool {
    let mut b = [0u8; 1];
    stream.set_read_timeout(Some(FIRST_BYTE)).is_ok() && matches!(stream.peek(&mut b), Ok(1..))
}

/// One session: serves `stream` with the waiting process `first`, and returns the process
/// still waiting afterwards. A session lets its process go on when the debugger detached,
/// killed, or engaged it (looked at it, resumed it) before the connection ended; otherwise
/// the process waits on for the next connection.
fn session(
    dev: &mlx5_sim::Device,
    stream: TcpStream,
    first: Option<DpaDebugger>,
) -> Option<DpaDebugger> {
    let _ = stream.set_read_timeout(Some(IDLE));
    let _ = stream.set_nodelay(true);
    let mut target = DpaTarget {
        dev: dev.clone(),
        dbg: first,
        waiting: None,
        step: None,
        engaged: false,
    };
    let explicit = match GdbStub::new(stream).run_blocking::<DpaLoop>(&mut target) {
        Ok(reason) => matches!(
            reason,
            gdbstub::stub::DisconnectReason::Disconnect | gdbstub::stub::DisconnectReason::Kill
        ),
        Err(e) => {
            eprintln!("gdbserver: {e}");
            false
        }
    };
    if explicit || target.engaged {
        // Dropping its debugger detaches the attached process: it goes on.
        target.waiting.take()
    } else {
        target.dbg.take().or_else(|| target.waiting.take())
    }
}

/// Serves GDB the DPA processes of the model: listens on `addr` (saying where on standard
/// error) and serves one debugger after another, on threads of its own. While one is
/// connected, another connection is answered `E.busy...` and closed; a connection that says
/// nothing for [`FIRST_BYTE`], or a session idle for [`IDLE`], is closed. With `process`,
/// that process waits for its debugger: its activations stop at their first instruction
/// until GDB continues them; `target remote` attaches it at once, and extended mode
/// (`target extended-remote`) by its token. Other processes are attached by token, halted
/// where they are.
///
/// # Errors
/// The address cannot be listened on, or `process` cannot be debugged.
pub fn serve(
    dev: &mlx5_sim::Device,
    process: Option<u32>,
    addr: &str,
) -> Result<std::thread::JoinHandle<()>, GdbError> {
    let listen = |source| GdbError::Listen {
        addr: addr.to_string(),
        source,
    };
    let listener = TcpListener::bind(addr).map_err(listen)?;
    let local = listener.local_addr().map_err(listen)?;
    let first = match process {
        Some(p) => {
            let d = dev
                .dpa_debug(p)
                .map_err(|e| GdbError::Session(e.to_string()))?;
            // Stopped until GDB says go: its first activation waits at its entry.
            d.halt();
            Some(d)
        }
        None => None,
    };
    {
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "gdbserver: listening on {local}");
        let _ = err.flush();
    }
    let dev = dev.clone();
    // The process waiting for its debugger, between sessions, and whether a session runs.
    let slot = std::sync::Arc::new(std::sync::Mutex::new((first, false)));
    // Connections not yet heard from, each on a short-lived thread of its own.
    let unheard = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    Ok(std::thread::spawn(move || {
        while let Ok((stream, _)) = listener.accept() {
            use std::sync::atomic::Ordering::SeqCst;
            if unheard.fetch_add(1, SeqCst) >= MAX_UNHEARD {
                // A flood of silent connections: this one is told so (on a thread of its own,
                // a second at most), never held.
                unheard.fetch_sub(1, SeqCst);
                std::thread::spawn(move || say_busy(stream, FLOODED));
                continue;
            }
            let (dev, slot, unheard) = (
                dev.clone(),
                std::sync::Arc::clone(&slot),
                std::sync::Arc::clone(&unheard),
            );
            std::thread::spawn(move || {
                let spoke = speaks(&stream);
                unheard.fetch_sub(1, SeqCst);
                if !spoke {
                    return;
                }
                let first = {
                    let mut guard = mlx5_dpa::sync::lock(&slot);
                    if guard.1 {
                        drop(guard);
                        // One debugger at a time: say so rather than leave the client waiting.
                        say_busy(stream, BUSY);
                        return;
                    }
                    guard.1 = true;
                    guard.0.take()
                };
                let left = session(&dev, stream, first);
                *mlx5_dpa::sync::lock(&slot) = (left, false);
            });
        }
    }))
}
