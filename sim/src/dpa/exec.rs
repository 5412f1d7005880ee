//! One activation of a thread on an EU: the hart's initial state (the DPA ABI), the bus the
//! hart sees (process memory, outbox pages, window registers and aperture), the FlexIO-OS
//! calls, and what the activation leaves for firmware to apply.
//!
//! An activation runs without the device lock, on a worker thread. What it needs from
//! firmware is copied into the [`Job`] when it is dispatched (its process's outboxes and
//! windows, the thread's defaults); its doorbells are recorded as [`Effect`]s and applied by
//! firmware, in order, when the activation's [`Done`] is applied. The one thing that needs
//! firmware during the run is the translation of a window's mkey: it takes the lock briefly
//! once per mkey and pins the mkey's UMEM until the activation is applied, so the host memory
//! stays registered while the hart may DMA into it.

use std::collections::BTreeMap;
use std::sync::{Arc, Weak};

use crate::mem::Dma;
use crate::riscv::{self, reg, Access, Bus, CodeCache, Fault, Hart, MemError, RamRegion, Stop};
use crate::state::dpa::memory::{Area, ProcessMem};
use crate::state::dpa::{
    device_code, error_syndrome, map, nic_counter, outbox_reg, rtos_call, rtos_errno,
    NicCounterConfig, Paused,
};

/// What a dispatched activation needs.
pub(crate) struct Job {
    pub(crate) seq: u64,
    pub(crate) thread: u32,
    pub(crate) process: u32,
    pub(crate) eu: u16,
    /// The thread's activation number (1 = first).
    pub(crate) activation: u64,
    pub(crate) hart: Hart,
    /// The EU's code cache for the process's text (boxed: a cache is several hundred bytes,
    /// and a job and its result move through queues several times).
    pub(crate) cache: Option<Box<CodeCache>>,
    /// The process's text generation the cache was valid for at dispatch.
    pub(crate) text_version: u64,
    pub(crate) mem: Arc<ProcessMem>,
    pub(crate) slot: u32,
    pub(crate) entry: u64,
    pub(crate) arg: u64,
    pub(crate) tls: u64,
    pub(crate) budget: u64,
    /// The process's outboxes (id -> UAR page) and windows (id -> PD) at dispatch.
    pub(crate) outboxes: Arc<BTreeMap<u32, u32>>,
    pub(crate) windows: Arc<BTreeMap<u32, u32>>,
    pub(crate) default_outbox: Option<u32>,
    pub(crate) default_window: Option<u32>,
    pub(crate) duar: u32,
    /// The thread was created continuable: DUAR_HANDLER_RETURN(YIELD) keeps its registers.
    pub(crate) continuable: bool,
    /// [`crate::state::dpa::DpaCoherency::Hardware`]: stores buffered until written back.
    pub(crate) weak: bool,
    /// A continuable thread's registers where it yielded: the activation resumes there.
    pub(crate) resume: Option<Hart>,
    /// The activation stopped at a `pause` and goes on here.
    pub(crate) paused: Option<Box<Paused>>,
    pub(crate) vhca_id: u16,
    /// Functions the process is extended to (OUTBOX_SET_GVMI may name them).
    pub(crate) extensions: Vec<u16>,
    pub(crate) uid: u16,
    /// The device, for window translations.
    pub(crate) dev: Weak<std::sync::Mutex<crate::state::State>>,
    /// A debugger is attached to the process ([`super::debug`]): one instruction at a time,
    /// stopping where it says.
    pub(crate) debug: Option<Arc<super::debug::DebugState>>,
}

/// A doorbell an activation stored into an outbox page, applied by firmware afterwards.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Effect {
    /// CQ_DB: arm CQ `cqn` with consumer index `ci`.
    CqArm {
        outbox: u32,
        gvmi: u16,
        cqn: u32,
        ci: u32,
    },
    /// EQ_DB_REARM / EQ_DB_NO_REARM.
    EqUpdate {
        outbox: u32,
        gvmi: u16,
        eqn: u32,
        ci: u32,
        rearm: bool,
    },
    /// SXD_DB: new producer counter `pi` of SQ or QP `qn`.
    Send {
        outbox: u32,
        gvmi: u16,
        qn: u32,
        pi: u16,
    },
}

/// Why a failed activation failed (what the coredump says).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Failure {
    /// `dpa_coredump.cause`.
    pub(crate) cause: u8,
    pub(crate) access: u8,
    pub(crate) access_size: u8,
    pub(crate) mem_error: u8,
    pub(crate) device_code: u32,
    pub(crate) pc: u64,
    pub(crate) fault_addr: u64,
    pub(crate) insn: u32,
    /// `dpa_process_status` and `error_syndrome`.
    pub(crate) status: u8,
    pub(crate) syndrome: u32,
}

/// `dpa_coredump.cause` values.
pub(crate) mod cause {
    pub(crate) const WATCHDOG: u8 = 1;
    pub(crate) const MEMORY: u8 = 2;
    pub(crate) const ILLEGAL: u8 = 3;
    pub(crate) const MISALIGNED_TARGET: u8 = 4;
    pub(crate) const EBREAK: u8 = 5;
    pub(crate) const BAD_RTOS_CALL: u8 = 6;
    /// A memory fault in the guard below the thread's stack: the thread outgrew its 8184
    /// bytes (`map::STACK_SIZE`).
    pub(crate) const STACK_OVERFLOW: u8 = 7;
    /// A known FlexIO-OS call whose arguments the OS refused (`device_code` says why): the
    /// process crashes, as FlexIO documents for bad NIC counter configurations.
    pub(crate) const RTOS_CALL_REFUSED: u8 = 8;
}

/// How an activation ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// DUAR_HANDLER_RETURN(0): wait for the next event.
    Reschedule,
    /// DUAR_HANDLER_RETURN(YIELD) of a continuable thread: wait for the next event, then
    /// resume with these registers (pc after the `ecall`).
    Yield(Box<Hart>),
    /// DUAR_HANDLER_RETURN(RETRIGGER): start again at the entry at once, without an event.
    Retrigger,
    /// The entry returned (`Some(a0)`), or DUAR_HANDLER_RETURN(1) (`None`).
    Finish(Option<u64>),
    /// EXIT_PROCESS(status).
    Exit(u64),
    /// Fault, watchdog or bad RTOS call.
    Failed(Failure),
    /// Stopped at a `pause` hint: queued at once to go on from there.
    Paused(Box<Paused>),
}

/// A finished activation, for firmware to apply.
pub(crate) struct Done {
    pub(crate) seq: u64,
    pub(crate) thread: u32,
    pub(crate) process: u32,
    pub(crate) eu: u16,
    pub(crate) activation: u64,
    pub(crate) hart: Hart,
    /// The code cache going back to its EU (`None` after an internal failure).
    pub(crate) cache: Option<Box<CodeCache>>,
    pub(crate) text_version: u64,
    pub(crate) outcome: Outcome,
    /// Instructions retired by this activation.
    pub(crate) instret: u64,
    pub(crate) rtos_calls: u64,
    pub(crate) effects: Vec<Effect>,
    /// UMEMs pinned by window translations (unpinned when applied).
    pub(crate) pinned: Vec<u32>,
    /// The window configured at the end (for coredump regions).
    pub(crate) window: Option<u32>,
    /// The process's outboxes at dispatch, for a failed activation's coredump regions
    /// (empty otherwise).
    pub(crate) outboxes: Vec<u32>,
    pub(crate) slot: u32,
    /// Stack bytes from `sp` (for a coredump), and where they start.
    pub(crate) stack_addr: u64,
    pub(crate) stack: Vec<u8>,
    /// DPA-memory stores not written back by the end (weak coherency), committed later.
    pub(crate) unwritten: Vec<(u64, u8)>,
}

/// A window mkey, translated once.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Xlat {
    pub(crate) mkey: u32,
    pub(crate) start: u64,
    pub(crate) len: u64,
    pub(crate) dma: Dma,
    pub(crate) lr: bool,
    pub(crate) lw: bool,
    pub(crate) umem: u32,
}

/// The bus of one activation.
struct ActBus<'a> {
    job: &'a Job,
    cache: Box<CodeCache>,
    ctx: u64,
    outbox: Option<u32>,
    /// Configured window: id and PD.
    window: Option<(u32, u32)>,
    /// The mkey written to the configured window's register.
    mkey: Option<u32>,
    xlat: Option<Xlat>,
    effects: Vec<Effect>,
    /// The function the outbox acts on: the process's own, or one it is extended to
    /// (OUTBOX_SET_GVMI).
    gvmi: u16,
    pinned: Vec<u32>,
    ticks: std::cell::Cell<u64>,
    /// Weak coherency: DPA-memory stores not yet written back (byte address -> value).
    pending: std::collections::BTreeMap<u64, u8>,
    /// Weak coherency: window stores not yet written back (aperture address -> value).
    win_pending: std::collections::BTreeMap<u64, u8>,
    /// Weak coherency: window lines read (aperture line address -> 64 bytes).
    win_lines: std::collections::HashMap<u64, [u8; 64]>,
}

/// A cache line, as the weak coherency model keeps window reads.
const LINE: u64 = 64;

/// The DPA timer: `rdtime` counts nanoseconds (the profile's 1000 MHz timer) of the host's
/// monotonic clock since the first read in this process, so it advances with real time, is
/// the same clock on every EU, and never goes back; two reads in one nanosecond still differ.
fn dpa_timer_now() -> u64 {
    static EPOCH: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    let epoch = *EPOCH.get_or_init(std::time::Instant::now);
    u64::try_from(epoch.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

impl ActBus<'_> {
    fn mem(&self) -> &ProcessMem {
        &self.job.mem
    }

    fn write_ctx(&self, off: u64, size: usize, v: u64) {
        self.mem().write_le(self.ctx + off, size, v);
    }

    /// Selects outbox `id` (activation start, OUTBOX_SET_CFG).
    fn set_outbox(&mut self, id: Option<u32>) {
        self.outbox = id;
        let (cfg, base) = id.map_or((0, 0), |i| (u64::from(i & 0xffff), map::outbox(i)));
        self.write_ctx(4, 2, cfg);
        self.write_ctx(8, 8, base);
    }

    /// Writes back buffered DPA-memory stores (weak coherency).
    fn writeback_memory(&mut self) {
        for (addr, b) in std::mem::take(&mut self.pending) {
            let _ = self.mem().write(addr, &[b]);
        }
    }

    /// Writes back buffered window stores (weak coherency); errors of the write-back itself
    /// (a window gone bad since) drop the bytes, as a failed write-back would.
    fn writeback_window(&mut self) {
        for (addr, b) in std::mem::take(&mut self.win_pending) {
            let _ = self.window_access_direct(addr, 1, Some(u64::from(b)));
        }
    }

    /// Selects window `id` (activation start, WINDOW_SET_CFG); forgets the mkey.
    fn set_window(&mut self, id: Option<u32>) {
        // What was written through the old window goes out before the change.
        self.writeback_window();
        self.win_lines.clear();
        self.window = id.and_then(|i| self.job.windows.get(&i).map(|pd| (i, *pd)));
        self.mkey = None;
        self.xlat = None;
        let (cfg, base, reg) = match self.window {
            Some((i, _)) => (u64::from(i & 0xffff), map::WINDOW_BASE, map::window_cfg(i)),
            None => (0, 0, 0),
        };
        self.write_ctx(6, 2, cfg);
        self.write_ctx(16, 8, base);
        self.write_ctx(24, 8, reg);
    }

    fn outbox_store(&mut self, id: u32, off: u64, size: u8, v: u64) -> Result<(), MemError> {
        if size != 8 {
            return Err(MemError::Device(device_code::OUTBOX_SIZE));
        }
        let lo = (v & 0xff_ffff) as u32;
        let hi = (v >> 32) as u32;
        let e = match off {
            outbox_reg::CQ_DB => Effect::CqArm {
                outbox: id,
                gvmi: self.gvmi,
                cqn: lo,
                ci: hi & 0xff_ffff,
            },
            outbox_reg::EQ_DB_REARM | outbox_reg::EQ_DB_NO_REARM => Effect::EqUpdate {
                outbox: id,
                gvmi: self.gvmi,
                eqn: lo,
                ci: hi & 0xff_ffff,
                rearm: off == outbox_reg::EQ_DB_REARM,
            },
            outbox_reg::SXD_DB => Effect::Send {
                outbox: id,
                gvmi: self.gvmi,
                qn: hi & 0xff_ffff,
                pi: v as u16,
            },
            _ => return Err(MemError::Device(device_code::OUTBOX_REGISTER)),
        };
        self.effects.push(e);
        Ok(())
    }

    /// The translation of the configured window's mkey (looked up once under the device
    /// lock; the UMEM stays pinned until the activation is applied).
    fn translation(&mut self) -> Result<Xlat, MemError> {
        let (window, pd) = self
            .window
            .ok_or(MemError::Device(device_code::WINDOW_NOT_CONFIGURED))?;
        let mkey = self
            .mkey
            .ok_or(MemError::Device(device_code::WINDOW_NO_MKEY))?;
        if let Some(x) = self.xlat.filter(|x| x.mkey == mkey) {
            return Ok(x);
        }
        let uid = self.job.uid;
        let x = crate::state::with_state_of(&self.job.dev, |st| {
            let m = st
                .fw
                .mkeys
                .get(mkey >> 8)
                .filter(|m| m.key == mkey && m.meta.uid == uid)
                .ok_or(device_code::WINDOW_BAD_MKEY)?;
            if m.pd != pd {
                return Err(device_code::WINDOW_PD_MISMATCH);
            }
            let x = Xlat {
                mkey,
                start: m.start,
                len: m.len,
                dma: m.dma,
                lr: m.lr,
                lw: m.lw,
                umem: m.umem,
            };
            st.fw.mem.pin_whole(x.umem);
            Ok(x)
        })
        .unwrap_or(Err(device_code::WINDOW_BAD_MKEY))
        .map_err(MemError::Device)?;
        tracing::trace!(target: "mlx5_sim::dpa", window, mkey, "window mkey translated");
        self.pinned.push(x.umem);
        self.xlat = Some(x);
        Ok(x)
    }

    /// A window access, through the weak model's line cache and store buffer when it is on.
    fn window_access(&mut self, addr: u64, size: u8, store: Option<u64>) -> Result<u64, MemError> {
        if !self.job.weak {
            return self.window_access_direct(addr, size, store);
        }
        let n = u64::from(size);
        match store {
            Some(v) => {
                // Checked against the window now (faults stay where the access is).
                self.window_check(addr, size, true)?;
                for i in 0..n {
                    let b = (v >> (8 * i)) as u8;
                    self.win_pending.insert(addr + i, b);
                    if let Some(l) = self.win_lines.get_mut(&((addr + i) & !(LINE - 1))) {
                        l[((addr + i) % LINE) as usize] = b;
                    }
                }
                Ok(0)
            }
            None => {
                self.window_check(addr, size, false)?;
                let line = addr & !(LINE - 1);
                if !self.win_lines.contains_key(&line) {
                    let mut l = [0u8; LINE as usize];
                    for (i, b) in l.iter_mut().enumerate() {
                        // Bytes of the line outside the window read as 0.
                        *b = self
                            .window_access_direct(line + i as u64, 1, None)
                            .unwrap_or(0) as u8;
                    }
                    self.win_lines.insert(line, l);
                }
                let l = self.win_lines[&line];
                let mut v = 0u64;
                for i in 0..n {
                    let a = addr + i;
                    let b = self
                        .win_pending
                        .get(&a)
                        .copied()
                        .unwrap_or(l[(a % LINE) as usize]);
                    v |= u64::from(b) << (8 * i);
                }
                Ok(v)
            }
        }
    }

    /// The checks of a window access without doing it.
    fn window_check(&mut self, addr: u64, size: u8, write: bool) -> Result<(), MemError> {
        let x = self.translation()?;
        let h = addr - map::WINDOW_BASE;
        h.checked_sub(x.start)
            .filter(|o| o.checked_add(u64::from(size)).is_some_and(|e| e <= x.len))
            .ok_or(MemError::Device(device_code::WINDOW_BOUNDS))?;
        if (write && !x.lw) || (!write && !x.lr) {
            return Err(MemError::Device(device_code::WINDOW_ACCESS));
        }
        Ok(())
    }

    fn window_access_direct(
        &mut self,
        addr: u64,
        size: u8,
        store: Option<u64>,
    ) -> Result<u64, MemError> {
        let x = self.translation()?;
        let h = addr - map::WINDOW_BASE;
        let off = h
            .checked_sub(x.start)
            .filter(|o| o.checked_add(u64::from(size)).is_some_and(|e| e <= x.len))
            .ok_or(MemError::Device(device_code::WINDOW_BOUNDS))?;
        let n = usize::from(size);
        match store {
            Some(v) => {
                if !x.lw {
                    return Err(MemError::Device(device_code::WINDOW_ACCESS));
                }
                if !x.dma.write(off as usize, &v.to_le_bytes()[..n]) {
                    return Err(MemError::Device(device_code::WINDOW_BOUNDS));
                }
                Ok(0)
            }
            None => {
                if !x.lr {
                    return Err(MemError::Device(device_code::WINDOW_ACCESS));
                }
                let mut b = [0u8; 8];
                if !x.dma.read(off as usize, &mut b[..n]) {
                    return Err(MemError::Device(device_code::WINDOW_BOUNDS));
                }
                Ok(u64::from_le_bytes(b))
            }
        }
    }

    /// The MMIO target of `addr`, if it is one of this process's.
    fn mmio(&self, addr: u64) -> Option<Mmio> {
        if addr >= map::WINDOW_BASE && addr - map::WINDOW_BASE < map::WINDOW_SPAN {
            return Some(Mmio::Aperture);
        }
        if let Some(off) = addr.checked_sub(map::OUTBOX_BASE) {
            let id = off / map::OUTBOX_PAGE;
            if let Ok(id) = u32::try_from(id) {
                if self.job.outboxes.contains_key(&id) {
                    return Some(Mmio::Outbox(id, off % map::OUTBOX_PAGE));
                }
            }
        }
        if let Some(off) = addr.checked_sub(map::WINDOW_CFG_BASE) {
            if let Some((w, _)) = self.window {
                if off / 8 == u64::from(w) {
                    return Some(Mmio::WindowCfg);
                }
            }
        }
        None
    }
}

enum Mmio {
    Outbox(u32, u64),
    WindowCfg,
    Aperture,
}

impl Bus for ActBus<'_> {
    fn load(&mut self, addr: u64, size: u8) -> Result<u64, MemError> {
        if let Some((area, _)) = self.mem().locate(addr) {
            // SAFETY: the process memory is kept alive by the job's Arc for the whole run.
            let r = unsafe { self.mem().ram_region(addr) };
            let v = match r.and_then(|r| r.load(addr, size)) {
                Some(v) if area.perms().read => v,
                Some(_) => return Err(MemError::Denied),
                None => return Err(MemError::Unmapped),
            };
            // This thread's own buffered stores (same-address ordering).
            if self.job.weak && !self.pending.is_empty() {
                let mut v = v;
                for (a, b) in self.pending.range(addr..addr + u64::from(size)) {
                    let sh = 8 * (a - addr);
                    v = (v & !(0xff << sh)) | (u64::from(*b) << sh);
                }
                return Ok(v);
            }
            return Ok(v);
        }
        match self.mmio(addr) {
            Some(Mmio::Aperture) => self.window_access(addr, size, None),
            Some(Mmio::WindowCfg) if size == 8 => Ok(u64::from(self.mkey.unwrap_or(0))),
            Some(Mmio::WindowCfg) => Err(MemError::Device(device_code::WINDOW_REG_SIZE)),
            Some(Mmio::Outbox(..)) => Err(MemError::Denied),
            None => Err(MemError::Unmapped),
        }
    }

    fn store(&mut self, addr: u64, size: u8, value: u64) -> Result<(), MemError> {
        if let Some((area, _)) = self.mem().locate(addr) {
            if !area.perms().write {
                return Err(MemError::Denied);
            }
            if self.job.weak && area == Area::Dumem {
                // Checked like a real store (the whole access inside the area), then kept.
                if self
                    .mem()
                    .locate(addr + u64::from(size) - 1)
                    .map(|(a, _)| a)
                    != Some(area)
                {
                    return Err(MemError::Unmapped);
                }
                for i in 0..u64::from(size) {
                    self.pending.insert(addr + i, (value >> (8 * i)) as u8);
                }
                return Ok(());
            }
            // SAFETY: as in `load`.
            let r = unsafe { self.mem().ram_region(addr) };
            return match r.map(|r| r.store(addr, size, value)) {
                Some(true) => Ok(()),
                _ => Err(MemError::Unmapped),
            };
        }
        match self.mmio(addr) {
            Some(Mmio::Aperture) => self.window_access(addr, size, Some(value)).map(|_| ()),
            Some(Mmio::WindowCfg) if size == 8 => {
                self.mkey = Some(value as u32);
                Ok(())
            }
            Some(Mmio::WindowCfg) => Err(MemError::Device(device_code::WINDOW_REG_SIZE)),
            Some(Mmio::Outbox(id, off)) => self.outbox_store(id, off, size, value),
            None => Err(MemError::Unmapped),
        }
    }

    fn fetch(&mut self, addr: u64) -> Result<u32, MemError> {
        if addr == map::SENTINEL {
            return Err(MemError::Device(device_code::RETURNED));
        }
        match self.mem().locate(addr) {
            Some((Area::Text, _)) => self
                .mem()
                .read_le(addr, 2)
                .map(|v| v as u32)
                .ok_or(MemError::Unmapped),
            Some(_) => Err(MemError::Denied),
            None if self.mmio(addr).is_some() => Err(MemError::Denied),
            None => Err(MemError::Unmapped),
        }
    }

    fn time(&self) -> u64 {
        let t = dpa_timer_now().max(self.ticks.get().saturating_add(1));
        self.ticks.set(t);
        t
    }

    fn ram_region(&mut self, addr: u64) -> Option<RamRegion> {
        // Weak coherency: the bus sees every DPA-memory access (its store buffer).
        if self.job.weak && matches!(self.mem().locate(addr), Some((Area::Dumem, _))) {
            return None;
        }
        // SAFETY: the process memory is kept alive by the job's Arc for the whole `run` call
        // (and longer); every other access to it is atomic (`memory` module docs).
        unsafe { self.mem().ram_region(addr) }
    }

    fn ram_regions(&mut self) -> [Option<RamRegion>; 4] {
        // What an activation touches: its text, the process's data and heap, its thread
        // context and its stack.
        let text = self.mem().text_base();
        let dumem = self.mem().dumem_base();
        let slot = self.job.slot;
        [text, dumem, map::slot_base(slot), map::stack_lo(slot)].map(|a| self.ram_region(a))
    }

    fn atomic_region(&mut self, addr: u64) -> Option<RamRegion> {
        // An atomic acts on memory: this thread's buffered bytes of the word go first.
        let word = addr & !7;
        let mine: Vec<(u64, u8)> = self
            .pending
            .range(word..word + 8)
            .map(|(a, b)| (*a, *b))
            .collect();
        for (a, b) in mine {
            self.pending.remove(&a);
            let _ = self.mem().write(a, &[b]);
        }
        // SAFETY: as in `ram_region`.
        unsafe { self.mem().ram_region(addr) }
    }

    fn fence(&mut self, pred: u8, succ: u8) {
        if !self.job.weak {
            return;
        }
        // DPA memory written back: `w` among the predecessors (memory_writeback, a memory or
        // system fence ordering writes).
        if pred & 1 != 0 {
            self.writeback_memory();
        }
        // Window written back: `o` among the predecessors (window_writeback, outbox fences).
        if pred & 4 != 0 {
            self.writeback_window();
        }
        // Window read invalidation: `i` before `i` (window_read_inv, system fences).
        if pred & 8 != 0 && succ & 8 != 0 {
            self.win_lines.clear();
        }
    }

    /// Every `pause` gives the host thread up (see [`Paused`]).
    fn pause(&mut self) -> bool {
        true
    }

    fn code_cache(&mut self) -> Option<&mut CodeCache> {
        Some(&mut *self.cache)
    }
}

fn failure(cause: u8, status: u8, syndrome: u32, pc: u64) -> Failure {
    Failure {
        cause,
        access: 0,
        access_size: 0,
        mem_error: 0,
        device_code: 0,
        pc,
        fault_addr: 0,
        insn: 0,
        status,
        syndrome,
    }
}

/// The failure a fault of the thread in `slot` is. A memory fault in the guard below its stack
/// with `sp` below the stack is a stack overflow, named so in the coredump (the psABI has no
/// red zone, so code only touches memory at or above `sp`: a frame that does not fit moves
/// `sp` into the guard before its first access there; a stray pointer into the guard leaves
/// `sp` where it was and stays a plain memory fault).
fn fault_failure(f: Fault, slot: u32, sp: u64) -> Failure {
    let mut failure = fault_failure_of(f);
    if let Fault::Memory { addr, .. } = f {
        if map::in_stack_guard(slot, addr) && sp < map::stack_lo(slot) {
            failure.cause = cause::STACK_OVERFLOW;
        }
    }
    failure
}

fn fault_failure_of(f: Fault) -> Failure {
    use mlx5_dpa::mlx5::layouts::dpa_process_status as ps;
    match f {
        Fault::Memory {
            pc,
            addr,
            access,
            size,
            error,
        } => {
            let (acc, syn) = match access {
                Access::Fetch => (1, error_syndrome::FETCH_FAULT),
                Access::Load => (2, error_syndrome::LOAD_FAULT),
                Access::Store => (3, error_syndrome::STORE_FAULT),
            };
            let (mem_error, device_code) = match error {
                MemError::Unmapped => (1, 0),
                MemError::Denied => (2, 0),
                MemError::Misaligned => (3, 0),
                MemError::Device(c) => (4, c),
            };
            Failure {
                access: acc,
                access_size: size,
                mem_error,
                device_code,
                fault_addr: addr,
                ..failure(cause::MEMORY, ps::FAULT, syn, pc)
            }
        }
        Fault::IllegalInstruction { pc, encoding } => Failure {
            insn: encoding,
            ..failure(
                cause::ILLEGAL,
                ps::FAULT,
                error_syndrome::ILLEGAL_INSTRUCTION,
                pc,
            )
        },
        Fault::MisalignedTarget { pc, target } => Failure {
            fault_addr: target,
            ..failure(
                cause::MISALIGNED_TARGET,
                ps::FAULT,
                error_syndrome::MISALIGNED_TARGET,
                pc,
            )
        },
    }
}

/// Cycles a `pause` hint takes on the model (provisional: Zihintpause leaves the duration to
/// the implementation, and the DPA's is not public). The model counts cycles as instructions,
/// so a pause retires as this many.
pub(crate) const PAUSE_CYCLES: u64 = 256;

/// `a0` of a failed RTOS call.
const RTOS_FAILED: u64 = u64::MAX;

/// DUAR_HANDLER_RETURN arguments beyond 0 (reschedule) and 1 (finish). Provisional: the
/// model's numbers for FlexIO's `flexio_dev_yield` and `flexio_dev_thread_retrigger`, whose
/// RTOS encoding is not public (fw-blobs `flexio_dev_dpa_arch.h` uses the same).
pub(crate) mod handler_return {
    pub(crate) const YIELD: u64 = 2;
    pub(crate) const RETRIGGER: u64 = 3;
}

/// Instructions an activation may retire before [`run`]'s `long` is called (the engine, which
/// runs activations itself, then calls a worker to stand in for its passes): about 100 us of
/// guest code on the 2-core machine.
pub(crate) const STAND_IN_AFTER: u64 = 50_000;

/// The hart an activation starts with: where a pause left it, where a continuable thread
/// yielded, or at the entry with the thread's stack, context and argument.
fn start_hart(job: &mut Job, paused: Option<&Paused>, ctx: u64, instret_start: u64) -> Hart {
    let mut hart = std::mem::replace(&mut job.hart, Hart::new(0));
    if let Some(p) = paused {
        hart.x = p.hart.x;
        hart.pc = p.hart.pc;
    } else {
        match job.resume.take() {
            // A continuable thread that yielded goes on where it stopped (its stack is its own
            // slot's, untouched since).
            Some(saved) => {
                hart.x = saved.x;
                hart.pc = saved.pc;
            }
            None => {
                hart.x = [0; 32];
                hart.pc = job.entry;
                hart.x[reg::RA] = map::SENTINEL;
                hart.x[reg::SP] = map::stack_top(job.slot);
                hart.x[reg::TP] = ctx;
                hart.x[reg::A0] = job.arg;
            }
        }
    }
    hart.instret = instret_start;
    hart.reservation = None;
    hart
}

/// Runs one activation to its end. `long`, if given, is called once when the activation has
/// retired [`STAND_IN_AFTER`] instructions in this run and goes on (the budget
/// stays exact: the engine stops there and resumes the same hart).
pub(crate) fn run(mut job: Job, long: Option<&dyn Fn()>) -> Done {
    use mlx5_dpa::mlx5::layouts::dpa_process_status as ps;
    let cache = job
        .cache
        .take()
        .unwrap_or_else(|| Box::new(CodeCache::new()));
    let ctx = map::context(job.slot);
    let paused = job.paused.take();
    let instret_start = paused.as_ref().map_or(0, |p| p.hart.instret);
    let mut hart = start_hart(&mut job, paused.as_deref(), ctx, instret_start);
    let mut bus = ActBus {
        job: &job,
        cache,
        ctx,
        outbox: None,
        window: None,
        mkey: None,
        xlat: None,
        // An activation usually rings a few doorbells (its SQ, its CQ's arm): room for them
        // at once, not three reallocations.
        effects: Vec::with_capacity(4),
        gvmi: paused.as_ref().map_or(job.vhca_id, |p| p.gvmi),
        pinned: Vec::new(),
        ticks: std::cell::Cell::new(0),
        pending: Default::default(),
        win_pending: Default::default(),
        win_lines: Default::default(),
    };
    // The thread context (docs/sources.md §5), then the thread's default outbox and window.
    bus.write_ctx(0, 4, 1);
    bus.write_ctx(32, 8, job.tls);
    if paused.is_none() {
        bus.write_ctx(40, 4, 0);
    }
    // Provisional: the thread's id where `flexio_dev_get_thread_id` reads it (the last word of
    // the 48-byte context; FlexIO keeps it in "thread metadata", whose layout is not public).
    bus.write_ctx(44, 4, u64::from(job.thread));
    match &paused {
        // Going on after a pause: what the activation had selected.
        Some(p) => {
            bus.set_outbox(p.outbox.filter(|o| job.outboxes.contains_key(o)));
            bus.set_window(p.window);
            if bus.window.is_some() {
                bus.mkey = p.mkey;
            }
        }
        None => {
            bus.set_outbox(job.default_outbox.filter(|o| job.outboxes.contains_key(o)));
            bus.set_window(job.default_window);
        }
    }
    let mut rtos_calls = 0;
    let mut long = long.map(|f| (f, instret_start.saturating_add(STAND_IN_AFTER)));
    let debug = job.debug.clone();
    let mut stepper = super::debug::Stepper::default();
    // A stop of the debugger's for a fault or the watchdog, before the process fails of it.
    let debug_stop =
        |stepper: &mut super::debug::Stepper, hart: &mut Hart, reason: super::debug::StopReason| {
            if let Some(d) = &debug {
                d.stop(stepper, job.thread, job.eu, hart, reason);
            }
        };
    let outcome = loop {
        let left = job.budget.saturating_sub(hart.instret);
        if left == 0 {
            debug_stop(&mut stepper, &mut hart, super::debug::StopReason::Watchdog);
            break Outcome::Failed(failure(
                cause::WATCHDOG,
                ps::WATCHDOG,
                error_syndrome::WATCHDOG,
                hart.pc,
            ));
        }
        let slice = match long {
            Some((f, at)) if hart.instret >= at => {
                f();
                long = None;
                left
            }
            Some((_, at)) => left.min(at - hart.instret),
            None => left,
        };
        // Under a debugger: one instruction at a time, each looked at first.
        let slice = match &debug {
            Some(d) => {
                d.before(&mut stepper, job.thread, job.eu, &mut hart);
                1
            }
            None => slice,
        };
        match riscv::run(&mut hart, &mut bus, slice) {
            Stop::Budget => continue,
            Stop::Pause => {
                // A pause holds its EU for a while: the cycle counter and the watchdog's
                // budget advance by PAUSE_CYCLES for it, so a thread spinning with pauses is
                // still stopped by the watchdog.
                hart.instret = hart.instret.saturating_add(PAUSE_CYCLES - 1);
                break Outcome::Paused(Box::new(Paused {
                    hart: hart.clone(),
                    outbox: bus.outbox,
                    window: bus.window.map(|(w, _)| w),
                    mkey: bus.mkey,
                    gvmi: bus.gvmi,
                }));
            }
            Stop::Ebreak => {
                debug_stop(&mut stepper, &mut hart, super::debug::StopReason::Fault(5));
                break Outcome::Failed(failure(
                    cause::EBREAK,
                    ps::FAULT,
                    error_syndrome::EBREAK,
                    hart.pc,
                ));
            }
            Stop::Fault(Fault::Memory {
                access: Access::Fetch,
                error: MemError::Device(device_code::RETURNED),
                ..
            }) => break Outcome::Finish(Some(hart.x[reg::A0])),
            Stop::Fault(f) => {
                let signal = match f {
                    Fault::Memory {
                        error: MemError::Misaligned,
                        ..
                    }
                    | Fault::MisalignedTarget { .. } => 7,
                    Fault::Memory { .. } => 11,
                    Fault::IllegalInstruction { .. } => 4,
                };
                debug_stop(
                    &mut stepper,
                    &mut hart,
                    super::debug::StopReason::Fault(signal),
                );
                break Outcome::Failed(fault_failure(f, job.slot, hart.x[reg::SP]));
            }
            Stop::Ecall => {
                rtos_calls += 1;
                match rtos_call(&job, &mut bus, &hart) {
                    Ok(ret) => hart.x[reg::A0] = ret,
                    Err(end) => break end,
                }
            }
        }
    };
    finish(&job, hart, bus, outcome, rtos_calls, instret_start)
}

/// The activation's end as the engine takes it: the window's stores written back, the stack
/// kept for a coredump when it failed, the hart, cache and effects handed back.
fn finish(
    job: &Job,
    hart: Hart,
    mut bus: ActBus<'_>,
    outcome: Outcome,
    rtos_calls: u64,
    instret_start: u64,
) -> Done {
    // Weak coherency: the window's buffered stores reach the host as the activation ends;
    // DPA-memory stores not written back are committed after the NIC's next pass.
    bus.writeback_window();
    let unwritten: Vec<(u64, u8)> = std::mem::take(&mut bus.pending).into_iter().collect();
    // Stack bytes for a coredump: from sp upwards, inside the thread's stack.
    let (stack_addr, stack) = match outcome {
        Outcome::Failed(_) => stack_window(&job.mem, job.slot, hart.x[reg::SP]),
        _ => (0, Vec::new()),
    };
    // Only a coredump uses them.
    let outboxes = match outcome {
        Outcome::Failed(_) => job.outboxes.keys().copied().collect(),
        _ => Vec::new(),
    };
    Done {
        seq: job.seq,
        thread: job.thread,
        process: job.process,
        eu: job.eu,
        activation: job.activation,
        instret: hart.instret.saturating_sub(instret_start),
        hart,
        cache: Some(bus.cache),
        text_version: job.text_version,
        outcome,
        rtos_calls,
        effects: std::mem::take(&mut bus.effects),
        pinned: std::mem::take(&mut bus.pinned),
        window: bus.window.map(|(w, _)| w),
        outboxes,
        slot: job.slot,
        stack_addr,
        stack,
        unwritten,
    }
}

/// One FlexIO-OS call (`ecall`, number in a7): its return value for a0, or the end of the
/// activation it asks for (or the failure it causes).
fn rtos_call(job: &Job, bus: &mut ActBus<'_>, hart: &Hart) -> Result<u64, Outcome> {
    use mlx5_dpa::mlx5::layouts::dpa_process_status as ps;
    let a0 = hart.x[reg::A0];
    let nr = hart.x[reg::A7];
    let fail = |errno: u32, bus: &ActBus<'_>| {
        bus.write_ctx(40, 4, u64::from(errno));
        RTOS_FAILED
    };
    Ok(match nr {
        rtos_call::DUAR_HANDLER_RETURN if a0 == 0 => return Err(Outcome::Reschedule),
        rtos_call::DUAR_HANDLER_RETURN if a0 == 1 => return Err(Outcome::Finish(None)),
        // Yield: without `continuable` it has no effect (FlexIO's documentation);
        // the call returns 0 and the thread runs on.
        rtos_call::DUAR_HANDLER_RETURN if a0 == handler_return::YIELD => {
            if job.continuable {
                return Err(Outcome::Yield(Box::new(hart.clone())));
            }
            0
        }
        rtos_call::DUAR_HANDLER_RETURN if a0 == handler_return::RETRIGGER => {
            return Err(Outcome::Retrigger)
        }
        rtos_call::GET_DUAR => u64::from(job.duar),
        rtos_call::OUTBOX_SET_CFG => match u32::try_from(a0) {
            Ok(id) if job.outboxes.contains_key(&id) => {
                bus.set_outbox(Some(id));
                0
            }
            _ => fail(rtos_errno::NO_SUCH_OBJECT, bus),
        },
        rtos_call::WINDOW_SET_CFG => match u32::try_from(a0) {
            Ok(id) if job.windows.contains_key(&id) => {
                bus.set_window(Some(id));
                0
            }
            _ => fail(rtos_errno::NO_SUCH_OBJECT, bus),
        },
        rtos_call::EXIT_PROCESS => return Err(Outcome::Exit(a0)),
        // The process's own function, or one it was extended to.
        rtos_call::OUTBOX_SET_GVMI => match u16::try_from(a0) {
            Ok(g) if g == job.vhca_id || job.extensions.contains(&g) => {
                bus.gvmi = g;
                0
            }
            _ => fail(rtos_errno::BAD_GVMI, bus),
        },
        rtos_call::NIC_COUNTERS_CONFIG | rtos_call::NIC_COUNTERS_SAMPLE => {
            let done = if nr == rtos_call::NIC_COUNTERS_CONFIG {
                nic_counters_config(bus, a0, hart.x[reg::A1], hart.x[reg::A2])
            } else {
                nic_counters_sample(bus)
            };
            match done {
                Ok(()) => 0,
                Err(code) => {
                    return Err(Outcome::Failed(Failure {
                        device_code: code,
                        ..failure(
                            cause::RTOS_CALL_REFUSED,
                            ps::BAD_RTOS_CALL,
                            error_syndrome::RTOS_CALL_REFUSED,
                            hart.pc.wrapping_sub(4),
                        )
                    }))
                }
            }
        }
        // The model runs no programmable-congestion-control processes, so no GVMI
        // has a PCC table: 0 (provisional; the table's layout is not public).
        rtos_call::GET_PCC_TABLE_BASE => 0,
        _ => {
            // The number stays whole in the dumped a7 (gpr[17]).
            return Err(Outcome::Failed(Failure {
                // pc points past the ecall; report the ecall itself.
                ..failure(
                    cause::BAD_RTOS_CALL,
                    ps::BAD_RTOS_CALL,
                    error_syndrome::BAD_RTOS_CALL,
                    hart.pc.wrapping_sub(4),
                )
            }));
        }
    })
}

/// `flexio_dev_nic_counters_config(values, ids, n)`: checks the configuration as FlexIO
/// documents (the process crashes on too many ids, an unknown id, or arrays outside global or
/// heap memory) and keeps it for the process, replacing any earlier one. The OS reads the ids
/// with the thread's own loads, so its buffered stores count.
fn nic_counters_config(bus: &mut ActBus<'_>, values: u64, ids: u64, n: u64) -> Result<(), u32> {
    if n == 0 || n > u64::from(nic_counter::MAX_CONFIG) {
        return Err(device_code::NIC_COUNTERS_TOO_MANY);
    }
    // Global or heap memory: DUMEM (data, heap, DPA_MEM blocks); read-only ids may also be
    // constants in the text segment. Never a thread's stack or context page.
    let inside = |bus: &ActBus<'_>, addr: u64, writable: bool| -> bool {
        let Some(end) = addr.checked_add(4 * n - 1) else {
            return false;
        };
        let first = bus.mem().locate(addr).map(|(a, _)| a);
        let last = bus.mem().locate(end).map(|(a, _)| a);
        addr.is_multiple_of(4)
            && first == last
            && (first == Some(Area::Dumem) || (!writable && first == Some(Area::Text)))
    };
    if !inside(bus, values, true) || !inside(bus, ids, false) {
        return Err(device_code::NIC_COUNTERS_BAD_POINTER);
    }
    let mut list = Vec::with_capacity(n as usize);
    for i in 0..n {
        let id = bus
            .load(ids + 4 * i, 4)
            .map_err(|_| device_code::NIC_COUNTERS_BAD_POINTER)? as u32;
        if !nic_counter::known(id) {
            return Err(device_code::NIC_COUNTERS_UNKNOWN_ID);
        }
        list.push(id);
    }
    let process = bus.job.process;
    let config = NicCounterConfig { values, ids: list };
    crate::state::with_state_of(&bus.job.dev, |st| {
        if let Some(p) = st.fw.dpa.processes.get_mut(&process) {
            p.nic_counters = Some(config);
        }
    });
    Ok(())
}

/// `flexio_dev_nic_counters_sample()`: stores each configured counter, 32 bits that wrap,
/// into the configured values array (with the thread's own stores). The model's one port is
/// port 0; the ids of ports 1..3 read 0, as counters of ports a device does not have.
fn nic_counters_sample(bus: &mut ActBus<'_>) -> Result<(), u32> {
    let process = bus.job.process;
    let (config, stats) = crate::state::with_state_of(&bus.job.dev, |st| {
        let config = st
            .fw
            .dpa
            .processes
            .get(&process)
            .and_then(|p| p.nic_counters.clone());
        (config, st.dp.port.stats)
    })
    .ok_or(device_code::NIC_COUNTERS_NOT_CONFIGURED)?;
    let config = config.ok_or(device_code::NIC_COUNTERS_NOT_CONFIGURED)?;
    for (i, id) in config.ids.iter().enumerate() {
        let v = match *id {
            nic_counter::PORT0_RX_BYTES => stats.rx_bytes,
            nic_counter::PORT0_TX_BYTES => stats.tx_bytes,
            _ => 0,
        };
        bus.store(config.values + 4 * i as u64, 4, v & 0xffff_ffff)
            .map_err(|_| device_code::NIC_COUNTERS_BAD_POINTER)?;
    }
    Ok(())
}

/// Up to `DPA_COREDUMP_MAX_STACK` bytes of the slot's stack from `sp` (8-byte aligned down).
fn stack_window(mem: &ProcessMem, slot: u32, sp: u64) -> (u64, Vec<u8>) {
    let lo = map::stack_lo(slot);
    let top = map::stack_top(slot);
    let start = (sp & !7).clamp(lo, top);
    let len = (top - start).min(mlx5_dpa::mlx5::layouts::DPA_COREDUMP_MAX_STACK as u64);
    let mut b = vec![0u8; len as usize];
    match mem.read(start, &mut b) {
        Ok(()) => (start, b),
        Err(_) => (0, Vec::new()),
    }
}

/// A `Done` for an activation whose run panicked (a bug of the model): the process fails
/// with [`error_syndrome::INTERNAL`] instead of the device hanging.
pub(crate) fn internal_failure(j: &JobHead) -> Done {
    use mlx5_dpa::mlx5::layouts::dpa_process_status as ps;
    Done {
        seq: j.seq,
        thread: j.thread,
        process: j.process,
        eu: j.eu,
        activation: j.activation,
        hart: Hart::new(0),
        cache: None,
        text_version: u64::MAX,
        outcome: Outcome::Failed(failure(
            cause::ILLEGAL,
            ps::FAULT,
            error_syndrome::INTERNAL,
            0,
        )),
        instret: 0,
        rtos_calls: 0,
        effects: Vec::new(),
        pinned: Vec::new(),
        window: None,
        outboxes: Vec::new(),
        slot: j.slot,
        stack_addr: 0,
        stack: Vec::new(),
        unwritten: Vec::new(),
    }
}

/// The identity of a job, kept outside it while it runs.
#[derive(Debug, Clone, Copy)]
pub(crate) struct JobHead {
    pub(crate) seq: u64,
    pub(crate) thread: u32,
    pub(crate) process: u32,
    pub(crate) eu: u16,
    pub(crate) activation: u64,
    pub(crate) slot: u32,
}

impl Job {
    pub(crate) fn head(&self) -> JobHead {
        JobHead {
            seq: self.seq,
            thread: self.thread,
            process: self.process,
            eu: self.eu,
            activation: self.activation,
            slot: self.slot,
        }
    }
}
