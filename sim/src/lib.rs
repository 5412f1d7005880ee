//! # mlx5-sim
//!
//! A software BlueField-3 behind the same DevX interface as the hardware. It implements the
//! driver's [`mlx5_dpa::devx::Devx`] trait ([`SimDevx`]), so driver code runs on it unchanged.
//!
//! - [`fw`]: the firmware command processor: object tables, validation with PRM status codes
//!   and one syndrome per check ([`fw::check`]), capability profiles ([`profile`]), fault
//!   injection, an inventory of live objects.
//! - [`SimDevx`]: the kernel's DevX rules in front of it (method whitelist, uid, forced
//!   `umem_valid`, handle ownership), UMEM registration, UAR pages, EQ numbers, event
//!   channels.
//! - The datapath engine: watches UAR doorbells and doorbell records, executes send WQEs,
//!   steers received frames (flow tables -> TIR -> RQ), writes CQEs and raises completion
//!   events. Driven by [`Device::step`] (deterministic, for tests) or by a background thread
//!   ([`Device::start_engine`]).
//! - The RC transport: reliable-connected QPs execute SEND, RDMA WRITE / READ and atomics
//!   as RoCE v2 between linked devices, or inside one device with force loopback.
//! - [`port`]: where frames go: internal loopback, a link to another model instance, a TAP
//!   device, and pcap capture.
//!
//! ```
//! use std::sync::Arc;
//! use mlx5_dpa::devx::{self, Devx};
//! let dev = mlx5_sim::Device::new(mlx5_sim::profile::Profile::bf3());
//! let ctx: Arc<dyn Devx> = dev.open_devx();
//! let caps = devx::query_caps(&*ctx).unwrap();
//! assert!(caps.has_dpa());
//! ```
//!
//! - [`dpa`]: the DPA: processes load their device ELF into isolated DPA memory, threads run
//!   on 256 EUs (RISC-V, [`riscv`]) when the host runs them or a CQ bound to them completes,
//!   with the FlexIO-OS calls, outbox doorbells, windows into host memory, a watchdog and
//!   coredumps. Activations run on a pool of worker threads; [`Device::step`] waits for them
//!   (deterministic), the background engine does not.

pub mod check;
mod datapath;
pub mod devx;
pub mod dpa;
mod events;
pub mod fw;
mod mem;
pub mod port;
pub mod profile;
pub mod responder;
mod slab;
mod state;
#[cfg(any(test, feature = "test-utils"))]
pub mod testing;
pub mod vm;

/// The RISC-V engine (its own crate, `mlx5-dpa-rv`).
pub use mlx5_dpa_rv as riscv;

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

pub use dpa::{DpaAccessError, DpaStats};
pub use state::dpa::{DpaProcessInfo, DpaThreadInfo};

use mlx5_dpa::mlx5::{Opcode, Status};
use mlx5_dpa::sync::lock;

pub use check::Check;
pub use datapath::syndrome;
pub use devx::SimDevx;
pub use fw::vport::{eui64, gid_table, GID_TABLE_SIZE, IPV4_GID_INDEX};
pub use fw::{FwStats, Inventory, ObjRef};
use profile::Profile;
pub use state::datapath::{PortMode, PortStats};
pub use state::events::event_type;
pub use state::rc::RcStats;
use state::State;
pub use state::MAX_SUB_FUNCTIONS;

pub(crate) struct Shared {
    /// The state, shared with the DPA workers by a weak handle (`state::with_state_of`).
    state: Arc<Mutex<State>>,
    engine_running: AtomicBool,
    engine_thread: Mutex<Option<std::thread::JoinHandle<()>>>,
    /// The engine is sleeping between passes (idle): a firmware command wakes it
    /// ([`Device::kick`]).
    engine_asleep: AtomicBool,
    /// While busy, the engine sleeps briefly between passes instead of yielding
    /// ([`Device::set_engine_wait`]).
    engine_naps: AtomicBool,
    /// Passes the engine thread made ([`Device::engine_passes`]).
    engine_passes: AtomicU64,
    /// Doorbells and firmware commands announced to the engine ([`Device::kick`]): a pass
    /// that finds work no kick announced shows a client that rings without telling (another
    /// process, a GPU kernel's stores), and keeps the engine polling for a while.
    kicks: AtomicU64,
    /// Raised after every pass that did work: what the driver's host-side waits sleep on
    /// ([`mlx5_dpa::devx::Devx::wait_activity`]).
    activity: mlx5_dpa::sync::Activity,
    /// Workers standing in for the engine that sleep until the next kick, and what wakes
    /// them: [`Device::kick`] raises it while one sleeps ([`Device::stand_in_step`]).
    stand_ins_asleep: AtomicUsize,
    kicked: mlx5_dpa::sync::Activity,
    /// Until when a stand-in polls instead of sleeping: it found work no kick announced.
    stand_in_busy_until: Mutex<Instant>,
    /// Passes made by workers standing in for the engine ([`Device::stand_in_passes`]).
    stand_in_passes: AtomicU64,
    /// The workers that run DPA activations (outside the state lock).
    dpa: dpa::Exec,
}

/// Longest [`Device::step`] waits for the activations it dispatched (each is bounded by its
/// instruction budget; this only guards against a wedged host).
const DPA_WAIT: Duration = Duration::from_secs(600);

/// One model device (a BlueField-3-like function). Cheap to clone; clones share the device.
#[derive(Clone)]
pub struct Device {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe())
    }
}

pub use state::dpa::DpaCoherency;

/// Counters of the whole device.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Firmware command counters.
    pub fw: FwStats,
    /// Port counters.
    pub port: PortStats,
    /// RC transport counters.
    pub rc: RcStats,
    /// DPA counters.
    pub dpa: DpaStats,
}

/// The addresses of the device's port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortAddress {
    /// The MAC address (QUERY_NIC_VPORT_CONTEXT `permanent_address`).
    pub mac: [u8; 6],
    /// The IPv4 address RoCE v2 packets come from.
    pub ipv4: [u8; 4],
    /// GID table entry 1 (QUERY_ROCE_ADDRESS index 1, [`fw::vport::IPV4_GID_INDEX`]):
    /// `::ffff:a.b.c.d`.
    pub gid: [u8; 16],
}

impl Device {
    /// A device with `profile` and its port in internal loopback.
    pub fn new(profile: Profile) -> Device {
        let shared = Arc::new(Shared {
            state: Arc::new(Mutex::new(State {
                fw: state::Firmware::new(profile),
                dp: state::datapath::Datapath::new(),
            })),
            engine_running: AtomicBool::new(false),
            engine_thread: Mutex::new(None),
            engine_asleep: AtomicBool::new(false),
            engine_naps: AtomicBool::new(false),
            engine_passes: AtomicU64::new(0),
            kicks: AtomicU64::new(0),
            stand_ins_asleep: AtomicUsize::new(0),
            kicked: mlx5_dpa::sync::Activity::default(),
            stand_in_busy_until: Mutex::new(Instant::now()),
            stand_in_passes: AtomicU64::new(0),
            activity: mlx5_dpa::sync::Activity::default(),
            dpa: dpa::Exec::new(),
        });
        // While the engine runs, a worker that finished an activation makes the engine's
        // pass itself: its doorbells and completions take effect without waiting for the
        // engine thread to look (stepping tests, without the engine, keep their order). Not
        // when a pass is under way (the device lock is taken): the engine polls while
        // activations are in flight, so its next pass takes the result, and the worker goes
        // on to the next activation instead of queueing for the lock (with 16 DPA threads
        // on 2 cores, waiting there cost a futex sleep and wake-up per activation).
        let weak = Arc::downgrade(&shared);
        shared.dpa.set_pass_hook(Box::new(move || {
            weak.upgrade().is_some_and(|shared| {
                shared.engine_running.load(Ordering::Acquire) && Device { shared }.try_pass()
            })
        }));
        let weak = Arc::downgrade(&shared);
        shared.dpa.set_wake_hook(Box::new(move || {
            if let Some(shared) = weak.upgrade() {
                Device { shared }.kick();
            }
        }));
        let weak = Arc::downgrade(&shared);
        shared.dpa.set_stand_in_hook(Box::new(move || {
            if let Some(shared) = weak.upgrade() {
                if shared.engine_running.load(Ordering::Acquire) {
                    Device { shared }.stand_in_step();
                }
            }
        }));
        Device { shared }
    }

    /// A device by profile name (`bf3`, `cx7`).
    pub fn with_profile(name: &str) -> Option<Device> {
        Profile::by_name(name).map(Device::new)
    }

    pub(crate) fn with_state<R>(&self, f: impl FnOnce(&mut State) -> R) -> R {
        let mut st = lock(&self.shared.state);
        f(&mut st)
    }

    /// A description for messages.
    pub fn describe(&self) -> String {
        self.with_state(|st| format!("mlx5-sim device model (profile {})", st.fw.profile().name))
    }

    /// Opens a DevX context on the device.
    pub fn open(&self) -> SimDevx {
        SimDevx::new(self.clone())
    }

    /// Opens a DevX context as the driver's trait object.
    pub fn open_devx(&self) -> Arc<dyn mlx5_dpa::devx::Devx> {
        Arc::new(self.open())
    }

    /// Opens a DevX context on sub-function `sf` (1 ..= [`MAX_SUB_FUNCTIONS`]) of this device,
    /// as a BlueField's SF: its own vhca_id (the PF's + `sf`) and objects, the same port, NIC
    /// and DPA. Another function's objects are reached only through aliases it was granted
    /// (ALLOW_OTHER_VHCA_ACCESS on the owner's side), as on hardware.
    ///
    /// # Errors
    /// `sf` outside 1 ..= [`MAX_SUB_FUNCTIONS`].
    pub fn open_function(&self, sf: u16) -> Result<Arc<dyn mlx5_dpa::devx::Devx>, String> {
        if sf == 0 || sf > MAX_SUB_FUNCTIONS {
            return Err(format!(
                "sub-function {sf}: this device has 1 ..= {MAX_SUB_FUNCTIONS}"
            ));
        }
        let ctx = self.open();
        let uid = ctx.uid();
        self.with_state(|st| {
            let vhca = st.fw.profile.vhca_id + sf;
            st.fw.sf_uids.insert(uid, vhca);
        });
        Ok(Arc::new(ctx))
    }

    /// Runs a mailbox as the kernel itself would (uid 0, no DevX restrictions): for commands
    /// only the kernel may send, such as SET_FLOW_TABLE_ROOT.
    ///
    /// # Errors
    /// The check that refused the command (the outbox holds status and syndrome too).
    pub fn kernel_command(&self, inbox: &[u8], outbox: &mut [u8]) -> Result<Option<ObjRef>, Check> {
        self.with_state(|st| st.fw.execute(0, inbox, outbox))
    }

    /// Destroys an object made with [`Device::kernel_command`], with the destroy command the
    /// kernel would send for it.
    ///
    /// # Errors
    /// The check that refused the destroy (something still refers to the object).
    pub fn kernel_destroy(&self, obj: ObjRef) -> Result<(), Check> {
        let mut out = [0u8; 16];
        let inbox = fw::destroy_inbox(obj);
        self.with_state(|st| st.fw.execute(0, &inbox, &mut out))
            .map(drop)
    }

    /// Live firmware objects (and UMEMs, UARs) per kind.
    pub fn inventory(&self) -> Inventory {
        self.with_state(|st| st.fw.inventory())
    }

    /// Counters.
    pub fn stats(&self) -> Stats {
        self.with_state(|st| Stats {
            fw: st.fw.stats,
            port: st.dp.port.stats,
            rc: st.dp.rc_stats,
            dpa: st.fw.dpa.stats,
        })
    }

    /// Chooses how the DPA's stores become visible ([`DpaCoherency`]); for activations
    /// dispatched from now on.
    pub fn set_dpa_coherency(&self, c: DpaCoherency) {
        self.with_state(|st| st.fw.dpa.coherency = c);
    }

    /// The DPA processes and their threads, by id (`mlx5-dpa ps`'s table; model only: a
    /// device lists no processes to other programs).
    pub fn dpa_processes(&self) -> Vec<state::dpa::DpaProcessInfo> {
        use state::dpa::{Affinity, DpaThreadInfo, ProcStatus, ThreadState};
        self.with_state(|st| {
            let dpa = &st.fw.dpa;
            let mut procs: Vec<state::dpa::DpaProcessInfo> = dpa
                .processes
                .iter()
                .map(|(&id, p)| state::dpa::DpaProcessInfo {
                    id,
                    vhca: p.vhca,
                    status: match p.status {
                        ProcStatus::Ok => "ok".to_string(),
                        ProcStatus::Error { status, syndrome } => {
                            format!("failed (status {status:#x}, syndrome {syndrome:#010x})")
                        }
                        ProcStatus::Exited(code) => format!("exited ({code})"),
                    },
                    memory: p.heap_end,
                    threads: Vec::new(),
                })
                .collect();
            procs.sort_by_key(|p| p.id);
            let mut threads: Vec<(&u32, &state::dpa::ThreadRt)> = dpa.threads.iter().collect();
            threads.sort_by_key(|(id, _)| **id);
            for (&id, t) in threads {
                let (state, eu) = match t.state {
                    ThreadState::Idle => ("idle", t.last_eu),
                    ThreadState::Queued => ("queued", t.last_eu),
                    ThreadState::Running { eu } => ("running", Some(eu)),
                    ThreadState::Finished => ("finished", t.last_eu),
                    ThreadState::Error => ("error", t.last_eu),
                };
                let affinity = match t.affinity {
                    Affinity::None => "any".to_string(),
                    Affinity::Eu(e) => format!("EU {e}"),
                    Affinity::Group(g) => format!("group {g}"),
                };
                if let Some(p) = procs.iter_mut().find(|p| p.id == t.process) {
                    p.threads.push(DpaThreadInfo {
                        id,
                        state,
                        eu,
                        affinity,
                        entry: t.entry,
                        activations: t.activations,
                    });
                }
            }
            procs
        })
    }

    /// DPA counters.
    pub fn dpa_stats(&self) -> DpaStats {
        self.with_state(|st| st.fw.dpa.stats)
    }

    /// Code caches (a program's decoded, and with the `jit` feature compiled, code) the EUs
    /// hold now, at most eight per EU; a destroyed process's go with it.
    pub fn dpa_code_caches(&self) -> usize {
        self.with_state(|st| st.fw.dpa.eus.iter().map(|e| e.caches.len()).sum())
    }

    /// Reads DPA memory of process `process` (text, data, heap, DPA_MEM blocks, thread
    /// contexts and stacks). Model-only debug access: real hosts reach DPA memory only by DMA.
    ///
    /// # Errors
    /// No such process, or a byte of the range is not mapped in it.
    pub fn dpa_read(
        &self,
        process: u32,
        daddr: u64,
        len: usize,
    ) -> Result<Vec<u8>, DpaAccessError> {
        let mem = self
            .with_state(|st| dpa::runtime::process_mem(&st.fw, process))
            .ok_or(DpaAccessError::NoProcess(process))?;
        let mut b = vec![0u8; len];
        mem.read(daddr, &mut b).map_err(DpaAccessError::Unmapped)?;
        Ok(b)
    }

    /// Writes DPA memory of process `process`, whatever the guest permissions (text too).
    /// Model-only debug access, like [`Device::dpa_read`].
    ///
    /// # Errors
    /// No such process, or a byte of the range is not mapped in it (nothing is written then).
    pub fn dpa_write(&self, process: u32, daddr: u64, data: &[u8]) -> Result<(), DpaAccessError> {
        let mem = self
            .with_state(|st| dpa::runtime::process_mem(&st.fw, process))
            .ok_or(DpaAccessError::NoProcess(process))?;
        mem.write(daddr, data).map_err(DpaAccessError::Unmapped)
    }

    /// Attaches a debugger to DPA process `process` ([`dpa::debug`]): its activations
    /// dispatched from now on run one instruction at a time on threads of their own and stop
    /// where the returned handle says (activations already running are not stopped). The
    /// handle detaches when dropped: everything goes on. One debugger at a time.
    ///
    /// # Errors
    /// No such process, or one with a debugger attached.
    pub fn dpa_debug(&self, process: u32) -> Result<DpaDebugger, DpaAccessError> {
        let state = self.with_state(|st| {
            let p = st
                .fw
                .dpa
                .processes
                .get_mut(&process)
                .ok_or(DpaAccessError::NoProcess(process))?;
            if p.debug.as_ref().is_some_and(|d| !d.is_detached()) {
                return Err(DpaAccessError::Debugged(process));
            }
            let s = Arc::new(dpa::debug::DebugState::default());
            p.debug = Some(Arc::clone(&s));
            Ok(s)
        })?;
        Ok(DpaDebugger {
            dev: self.clone(),
            process,
            state,
        })
    }

    /// Stops dispatching activations of user context `uid` and waits (bounded) for the ones
    /// running: the kernel's context teardown calls this before destroying the objects.
    pub(crate) fn dpa_quiesce(&self, uid: u16) {
        self.with_state(|st| st.fw.dpa.close_uid(uid));
        if self.shared.dpa.in_flight() > 0 {
            self.shared.dpa.wait_idle(DPA_WAIT);
            let done = self.shared.dpa.take_done();
            self.with_state(|st| dpa::runtime::apply(st, done));
        }
    }

    /// Fails the `n`th command from now (1 = the next one) with `status`.
    pub fn fail_nth_command(&self, n: u64, status: Status) {
        self.with_state(|st| {
            let at = st.fw.commands() + n.max(1);
            st.fw.faults.at.push((at, status));
        })
    }

    /// Fails every command with `opcode` with `status` until [`Device::clear_faults`].
    pub fn fail_opcode(&self, opcode: Opcode, status: Status) {
        self.with_state(|st| {
            st.fw.faults.by_opcode.insert(opcode.0, status);
        })
    }

    /// Fails the `k`th command from now (1 = the next one) with `opcode` (and `op_mod`, when
    /// given) with `status`. Unlike [`Device::fail_nth_command`], commands of other kinds in
    /// between (a wait's polling queries, however many) do not move the target.
    pub fn fail_nth_of(&self, opcode: Opcode, op_mod: Option<u16>, k: u64, status: Status) {
        self.with_state(|st| st.fw.faults.nth_of.push((opcode, op_mod, k.max(1), status)))
    }

    /// Starts (`true`) or stops recording the opcode and `op_mod` of every command; stopping
    /// returns what was recorded.
    pub fn record_commands(&self, on: bool) -> Vec<(Opcode, u16)> {
        self.with_state(|st| {
            let was = std::mem::take(&mut st.fw.faults.trace);
            if on {
                st.fw.faults.trace = Some(Vec::new());
            }
            was.unwrap_or_default()
        })
    }

    /// The commands injected faults failed since the last [`Device::clear_faults`]:
    /// sequence number, opcode, `op_mod`.
    pub fn injected_faults(&self) -> Vec<(u64, Opcode, u16)> {
        self.with_state(|st| st.fw.faults.hit.clone())
    }

    /// Removes every injected fault.
    pub fn clear_faults(&self) {
        self.with_state(|st| st.fw.faults = fw::FaultPlan::default())
    }

    /// Changes a capability of the running device (tests shrink limits with this).
    pub fn with_profile_mut<R>(&self, f: impl FnOnce(&mut Profile) -> R) -> R {
        self.with_state(|st| f(&mut st.fw.profile))
    }

    /// One pass of the datapath engine: doorbells, send queues, arriving frames, moderation
    /// timers, then the DPA: activations are dispatched to EUs, run (on the worker threads)
    /// to their end, and their results applied before `step` returns, so a test stepping
    /// the device sees a deterministic order. Returns the work done (WQEs, frames, arms,
    /// activations); 0 when idle.
    pub fn step(&self) -> usize {
        let mut work = self.pass();
        if self.shared.dpa.in_flight() > 0 {
            if !self.shared.dpa.wait_idle(DPA_WAIT) {
                tracing::error!(target: "mlx5_sim::dpa", "DPA activations still running after {DPA_WAIT:?}");
            }
            let done = self.shared.dpa.take_done();
            let applied = self.with_state(|st| dpa::runtime::apply(st, done));
            if applied > 0 {
                self.shared.activity.bump();
            }
            work += applied;
        }
        work
    }

    /// One pass without waiting for activations (the background engine's): results that
    /// are ready are applied, the datapath runs, queued threads are dispatched.
    fn pass(&self) -> usize {
        self.pass_locked(lock(&self.shared.state))
    }

    /// [`Device::pass`] when the device lock is free; nothing when it is taken (a pass or
    /// a command under way).
    /// Returns whether it made one.
    fn try_pass(&self) -> bool {
        match self.shared.state.try_lock() {
            Ok(st) => {
                self.pass_locked(st);
                true
            }
            Err(std::sync::TryLockError::Poisoned(e)) => {
                self.pass_locked(e.into_inner());
                true
            }
            Err(std::sync::TryLockError::WouldBlock) => false,
        }
    }

    /// [`Device::pass`] on the locked state, which it releases.
    fn pass_locked(&self, mut st: std::sync::MutexGuard<'_, State>) -> usize {
        let weak = Arc::downgrade(&self.shared.state);
        let work = {
            let st = &mut *st;
            let done = self.shared.dpa.take_done();
            let mut work = dpa::runtime::apply(st, done);
            work += datapath::step(st);
            // After the NIC's pass: what activations left unwritten-back becomes visible.
            work += st.fw.dpa.commit_late_writebacks();
            work += st.fw.dpa_dispatch(&self.shared.dpa, &weak);
            work
        };
        drop(st);
        if work > 0 {
            self.shared.activity.bump();
        }
        // Only when no worker thread could be started: run the activations here.
        self.shared.dpa.help();
        work
    }

    /// What host-side waits on this device sleep on: raised after every pass that did work.
    pub(crate) fn activity(&self) -> &mlx5_dpa::sync::Activity {
        &self.shared.activity
    }

    /// Steps until a pass finds nothing to do (at most `1_000_000` passes). Returns the total
    /// work done.
    pub fn run_until_idle(&self) -> usize {
        let mut total = 0;
        for _ in 0..1_000_000 {
            let n = self.step();
            if n == 0 {
                break;
            }
            total += n;
        }
        total
    }

    /// Runs several devices (linked to each other) until a whole round finds nothing to do:
    /// each device steps until idle, in turn. Returns the total work done. Timers that are not
    /// due (an RNR wait, an ACK timeout) are not work: call again after they expire.
    pub fn run_together(devices: &[&Device]) -> usize {
        let mut total = 0;
        for _ in 0..100_000 {
            let round: usize = devices.iter().map(|d| d.run_until_idle()).sum();
            if round == 0 {
                break;
            }
            total += round;
        }
        total
    }

    /// Sets the port's MAC and IPv4 address (what the vport context, the GID table and RoCE
    /// v2 frames carry).
    pub fn set_port_address(&self, mac: [u8; 6], ipv4: [u8; 4]) {
        self.with_state(|st| {
            st.fw.profile.mac = mac;
            st.fw.profile.ipv4 = ipv4;
        })
    }

    /// The port's addresses.
    pub fn port_address(&self) -> PortAddress {
        self.with_state(|st| PortAddress {
            mac: st.fw.profile.mac,
            ipv4: st.fw.profile.ipv4,
            gid: fw::vport::ipv4_gid(st.fw.profile.ipv4),
        })
    }

    /// Starts the background engine thread (idempotent). It polls like hardware would, and
    /// stops when [`Device::stop_engine`] is called or the last handle to the device goes.
    pub fn start_engine(&self) {
        if self.shared.engine_running.swap(true, Ordering::AcqRel) {
            return;
        }
        let weak: Weak<Shared> = Arc::downgrade(&self.shared);
        let handle = std::thread::Builder::new()
            .name("mlx5-sim-engine".into())
            .spawn(move || engine_loop(weak));
        match handle {
            Ok(h) => {
                *self
                    .shared
                    .engine_thread
                    .lock()
                    .unwrap_or_else(|e| e.into_inner()) = Some(h);
            }
            Err(e) => {
                tracing::error!(target: "mlx5_sim::engine", "cannot start the engine thread: {e}");
                self.shared.engine_running.store(false, Ordering::Release);
            }
        }
    }

    /// How the engine waits between passes while it polls for doorbells that are not
    /// announced to it (see [`Device::kick`]): [`EngineWait::Yield`] (the default)
    /// passes again as soon as the core is its again, the fastest when the device's users
    /// leave it a core; [`EngineWait::Nap`] sleeps a few microseconds instead, for programs
    /// whose threads spin without yielding on as many cores as there are: a yielding engine
    /// then waits for a spinning thread's whole time slice (milliseconds) before each pass,
    /// while a sleeping one is let back in as soon as it wakes. The uverbs server naps: two
    /// perftest processes (two spinning clients, two engines) on 2 cores measured 4.0-4.7 ms
    /// for half a WRITE ping-pong yielding and 130-142 us napping (`ib_write_lat`,
    /// 2026-11-28).
    pub fn set_engine_wait(&self, w: EngineWait) {
        self.shared
            .engine_naps
            .store(w == EngineWait::Nap, Ordering::Relaxed);
    }

    /// Wakes the engine thread if it sleeps between passes: called for every firmware command
    /// and every doorbell the driver rings ([`mlx5_dpa::devx::Devx::doorbell_rung`]). A
    /// doorbell written without it (a client in another process, a kernel's store) is seen
    /// at the engine's next pass, within its longest sleep, and keeps the engine polling.
    pub(crate) fn kick(&self) {
        // ORDERING: see the engine's sleep in `engine_loop`.
        self.shared.kicks.fetch_add(1, Ordering::SeqCst);
        // ORDERING: see `stand_in_step`.
        if self.shared.stand_ins_asleep.load(Ordering::SeqCst) > 0 {
            self.shared.kicked.bump();
        }
        // A load first: the common case (the engine awake) writes nothing shared.
        if self.shared.engine_asleep.load(Ordering::SeqCst)
            && self.shared.engine_asleep.swap(false, Ordering::AcqRel)
        {
            if let Some(h) = &*lock(&self.shared.engine_thread) {
                h.thread().unpark();
            }
        }
    }

    /// One step of a worker standing in for the engine while the engine thread runs a long
    /// activation: a pass; when it found nothing, a sleep until the next kick (a doorbell, a
    /// firmware command), at most [`STAND_IN_WAIT`]. As the engine does, it polls instead for
    /// [`ENGINE_BUSY`] after a pass found work no kick announced (a client in another
    /// process).
    fn stand_in_step(&self) {
        let sh = &self.shared;
        let before = sh.kicks.load(Ordering::SeqCst);
        let n = self.pass();
        sh.stand_in_passes.fetch_add(1, Ordering::Relaxed);
        let now = Instant::now();
        let mut busy_until = lock(&sh.stand_in_busy_until);
        if n > 0 {
            if sh.kicks.load(Ordering::SeqCst) == before {
                *busy_until = now + ENGINE_BUSY;
            }
            return;
        }
        if now < *busy_until {
            drop(busy_until);
            std::thread::yield_now();
            return;
        }
        drop(busy_until);
        // ORDERING: SeqCst add to the sleepers, then SeqCst load of the kick count; `kick`
        // adds to the count, then loads the sleepers. Either it sees this one asleep and
        // raises `kicked` (after the epoch read below, or the count check sees its kick), or
        // this sees its kick and does not sleep.
        sh.stand_ins_asleep.fetch_add(1, Ordering::SeqCst);
        let seen = sh.kicked.epoch();
        if sh.kicks.load(Ordering::SeqCst) == before {
            sh.kicked.wait(seen, STAND_IN_WAIT);
        }
        sh.stand_ins_asleep.fetch_sub(1, Ordering::SeqCst);
    }

    /// Limits the host threads that run DPA activations beside the engine thread (1 ..= 4;
    /// 0: one per host core, at most 4), for scaling measurements. Takes effect for threads
    /// not started yet: set it before the first activation.
    pub fn set_dpa_workers(&self, n: usize) {
        self.shared.dpa.set_max_workers(n);
    }

    /// The programs whose compiled code the DPA keeps (feature `jit`), most recent last: for
    /// each, where its text was loaded, its length and the regions compiled so far. Processes
    /// loaded from the same ELF at the same address share one.
    #[cfg(feature = "jit")]
    pub fn jit_programs(&self) -> Vec<(u64, usize, usize)> {
        self.with_state(|st| {
            st.fw
                .dpa
                .jit_programs
                .iter()
                .map(|p| (p.text_base, p.text.len(), p.share.regions()))
                .collect()
        })
    }

    /// Passes the background engine thread has made since the device was created: what an
    /// idle engine costs (it backs off to about a hundred passes a second after a second with
    /// nothing to do).
    pub fn engine_passes(&self) -> u64 {
        self.shared.engine_passes.load(Ordering::Relaxed)
    }

    /// Passes made by workers standing in for the engine thread while it ran a long
    /// activation: what a DPA thread spinning on the NIC costs beside it (a stand-in sleeps
    /// until the next doorbell when a pass finds nothing).
    pub fn stand_in_passes(&self) -> u64 {
        self.shared.stand_in_passes.load(Ordering::Relaxed)
    }

    /// Stops the background engine thread and waits for it.
    pub fn stop_engine(&self) {
        self.shared.engine_running.store(false, Ordering::Release);
        self.kick();
        let h = self
            .shared
            .engine_thread
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(h) = h {
            let _ = h.join();
        }
    }

    /// Sets what the port is connected to.
    pub fn set_port(&self, mode: PortMode) {
        self.with_state(|st| st.dp.port.mode = mode)
    }

    /// Connects the ports of two devices with a cable: frames sent by one arrive at the other.
    pub fn link(a: &Device, b: &Device) {
        let (ea, eb) = state::datapath::LinkEnd::pair();
        a.set_port(PortMode::Link(ea));
        b.set_port(PortMode::Link(eb));
    }

    /// Records every frame the port sends or receives to a pcap stream.
    ///
    /// # Errors
    /// Writing the pcap header failed.
    pub fn capture(&self, w: impl std::io::Write + Send + 'static) -> std::io::Result<()> {
        let writer = port::pcap::PcapWriter::new(Box::new(w) as Box<dyn std::io::Write + Send>)?;
        self.with_state(|st| st.dp.port.captures.push(writer));
        Ok(())
    }

    /// Flushes and removes every pcap capture.
    ///
    /// # Errors
    /// The first flush that failed.
    pub fn stop_captures(&self) -> std::io::Result<()> {
        let caps = self.with_state(|st| std::mem::take(&mut st.dp.port.captures));
        let mut res = Ok(());
        for mut c in caps {
            if let Err(e) = c.flush() {
                res = res.and(Err(e));
            }
        }
        res
    }
}

/// How a busy engine waits between passes ([`Device::set_engine_wait`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EngineWait {
    /// Gives the core away and passes again when it is back.
    #[default]
    Yield,
    /// Sleeps a few microseconds.
    Nap,
}

/// How long the engine keeps polling, yielding (or napping, [`EngineWait::Nap`]) between
/// passes, after it found work that no doorbell or command announced ([`Device::kick`]): a
/// client that rings without telling (another process through the uverbs server, a kernel
/// on the CPU runtime) is then seen within a pass, as a NIC's busy polling would.
const ENGINE_BUSY: Duration = Duration::from_millis(2);
/// After the last work, the engine makes passes back to back this long before it sleeps:
/// on a quiet machine the next doorbell of an exchange usually comes within it.
const ENGINE_SPIN: Duration = Duration::from_micros(5);
/// Then it sleeps between passes, a tenth of the time it has been idle, at least
/// `ENGINE_MIN_SLEEP` and at most `ENGINE_MAX_SLEEP`; after `ENGINE_DOZE` with nothing to
/// do, up to `ENGINE_DOZE_SLEEP` (an idle device then costs about a hundred passes a second,
/// well under 1% of a core). A doorbell or firmware command ends any sleep at once
/// ([`Device::kick`]); the sleeps bound how late a timer (an ACK timeout, a send on time) or
/// an unannounced doorbell is seen.
const ENGINE_MIN_SLEEP: Duration = Duration::from_micros(20);
/// A busy engine's nap ([`EngineWait::Nap`]): asked for 5 us; Linux's default timer slack
/// (50 us) makes it about 55. Measured against 20 and 100 us asked, it gave the shortest
/// perftest round trips on 2 cores.
const ENGINE_NAP: Duration = Duration::from_micros(5);
const ENGINE_MAX_SLEEP: Duration = Duration::from_millis(1);
/// Longest sleep of a worker standing in for the engine ([`Device::stand_in_step`]): it
/// bounds how late a timer or an unannounced doorbell is seen while a DPA thread spins.
const STAND_IN_WAIT: Duration = Duration::from_micros(200);
const ENGINE_DOZE: Duration = Duration::from_secs(1);
const ENGINE_DOZE_SLEEP: Duration = Duration::from_millis(10);
/// The engine thread's timer slack: its sleeps end within this of when they were asked to
/// (Linux's default is 50 us, longer than the shortest sleep).
const ENGINE_TIMER_SLACK_NS: std::ffi::c_ulong = 2_000;

/// The engine thread: passes while there is work; then spins briefly, then sleeps until a
/// kick or its timeout. On a machine whose cores are all taken, a thread that sleeps and is
/// woken is run soon, where one that yields waits for the scheduler's next turn
/// (milliseconds): the engine keeps its latency there by sleeping, not yielding.
fn engine_loop(weak: Weak<Shared>) {
    // Best effort: without it the shortest sleeps are only longer.
    let _ = nix::sys::prctl::set_timerslack(ENGINE_TIMER_SLACK_NS);
    let mut last_work = Instant::now();
    // Until then, poll without sleeping: unannounced work was seen.
    let mut poll_until = last_work;
    // The kick count before the previous pass, and whether that pass found nothing.
    let mut prev_kicks = u64::MAX;
    let mut prev_empty = true;
    if let Some(shared) = weak.upgrade() {
        shared.dpa.set_engine_runs(true);
    }
    loop {
        let Some(shared) = weak.upgrade() else {
            return;
        };
        if !shared.engine_running.load(Ordering::Acquire) {
            shared.dpa.set_engine_runs(false);
            return;
        }
        let dev = Device { shared };
        if dev.shared.engine_asleep.load(Ordering::Relaxed) {
            dev.shared.engine_asleep.store(false, Ordering::SeqCst);
        }
        let kicks = dev.shared.kicks.load(Ordering::SeqCst);
        let n = dev.pass();
        dev.shared.engine_passes.fetch_add(1, Ordering::Relaxed);
        let now = Instant::now();
        if n > 0 && prev_empty && kicks == prev_kicks {
            // Found after a pass that found nothing, with no kick in between: somebody rang
            // without telling.
            poll_until = now + ENGINE_BUSY;
        }
        prev_kicks = kicks;
        prev_empty = n == 0;
        // The activations it dispatched: the first here (the next pass applies it), the
        // rest on the workers.
        if dev.shared.dpa.run_one_here() {
            // Its result (the queues it rang, its CQ re-arm) waits for the next pass: make
            // that pass now.
            last_work = Instant::now();
            prev_empty = false;
            continue;
        }
        if n > 0 {
            last_work = now;
            continue;
        }
        if now < poll_until {
            last_work = now;
            let nap = dev.shared.engine_naps.load(Ordering::Relaxed);
            drop(dev);
            if nap {
                std::thread::sleep(ENGINE_NAP);
            } else {
                std::thread::yield_now();
            }
            continue;
        }
        // Activations in flight on the workers: the engine sleeps until something for it
        // happens, at most ENGINE_MIN_SLEEP. A result queued, a job queued for the engine (the
        // pool's wake hook), a doorbell or a command (`kick`) each end the sleep; unannounced
        // work keeps it polling above. It used to yield and pass in a loop: on a machine whose
        // cores are all taken, a yield hands the core to whoever else runs, and the passes took
        // CPU from the workers (the 16-thread packet processor beside two CPU-bound threads ran
        // at 145-166 k frames/s; sleeping, 366-401 k).
        if dev.shared.dpa.in_flight() > 0 {
            last_work = now;
            dev.shared.engine_asleep.store(true, Ordering::SeqCst);
            if dev.shared.kicks.load(Ordering::SeqCst) != kicks || dev.shared.dpa.done_ready() {
                continue;
            }
            drop(dev);
            std::thread::park_timeout(ENGINE_MIN_SLEEP);
            continue;
        }
        let idle = now - last_work;
        if idle < ENGINE_SPIN {
            std::hint::spin_loop();
            continue;
        }
        let most = if idle < ENGINE_DOZE {
            ENGINE_MAX_SLEEP
        } else {
            ENGINE_DOZE_SLEEP
        };
        // ORDERING: SeqCst store of the flag, then SeqCst load of the count; `kick` adds to
        // the count, then loads the flag. Either it sees the engine asleep and unparks it, or
        // the engine sees its kick here and passes again instead of sleeping.
        dev.shared.engine_asleep.store(true, Ordering::SeqCst);
        if dev.shared.kicks.load(Ordering::SeqCst) != kicks {
            continue;
        }
        drop(dev);
        // A kick (or a stale unpark token) ends it early: only a pass more.
        std::thread::park_timeout((idle / 10).clamp(ENGINE_MIN_SLEEP, most));
    }
}

/// A debugger attached to a DPA process ([`Device::dpa_debug`]): breakpoints, halt, the
/// stopped activations and their registers ([`dpa::debug::DebugState`], through `Deref`),
/// and the process's memory. Dropping it detaches.
pub struct DpaDebugger {
    dev: Device,
    process: u32,
    state: Arc<dpa::debug::DebugState>,
}

impl DpaDebugger {
    /// The process debugged.
    pub fn process(&self) -> u32 {
        self.process
    }

    /// Reads the process's memory ([`Device::dpa_read`]).
    ///
    /// # Errors
    /// As [`Device::dpa_read`].
    pub fn read(&self, daddr: u64, len: usize) -> Result<Vec<u8>, DpaAccessError> {
        self.dev.dpa_read(self.process, daddr, len)
    }

    /// Writes the process's memory ([`Device::dpa_write`]; text too).
    ///
    /// # Errors
    /// As [`Device::dpa_write`].
    pub fn write(&self, daddr: u64, data: &[u8]) -> Result<(), DpaAccessError> {
        self.dev.dpa_write(self.process, daddr, data)
    }
}

impl std::ops::Deref for DpaDebugger {
    type Target = dpa::debug::DebugState;
    fn deref(&self) -> &Self::Target {
        &self.state
    }
}

impl Drop for DpaDebugger {
    fn drop(&mut self) {
        self.state.detach();
        let process = self.process;
        self.dev.with_state(|st| {
            // Only its own: a debugger attached after this one was let go stays.
            if let Some(p) = st.fw.dpa.processes.get_mut(&process) {
                if p.debug
                    .as_ref()
                    .is_some_and(|d| Arc::ptr_eq(d, &self.state))
                {
                    p.debug = None;
                }
            }
        });
    }
}

impl std::fmt::Debug for DpaDebugger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DpaDebugger")
            .field("process", &self.process)
            .finish_non_exhaustive()
    }
}
