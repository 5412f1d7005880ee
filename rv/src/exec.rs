//! The interpreter loop.
//!
//! Registers live in the run's [`Exec`], a 256-entry array (index 32 is the sink for writes
//! to x0; any `u8` index is in it, so no bounds check or mask remains); `pc` and the count in
//! locals. The outer loop finds (or decodes) the basic block at `pc` in the [`CodeCache`] and
//! cuts it to the remaining budget; [`run_block`] runs it threaded: each instruction's handler
//! ends by jumping to the next one's, so the host predicts each handler's jump on its own, and
//! a block's end goes on into the next decoded block of its page ([`chain`]) without the outer
//! loop. The common instructions have handlers of their own; the rest go to [`slow_op`], and
//! loads and stores their fast path misses to [`load_miss`] / [`store_miss`]. Memory goes
//! through the last [`RamRegion`] used for loads / stores / fetches when it covers the access,
//! otherwise through the [`Bus`].

use super::bitmanip as bm;
use super::cache::{to_page_end, CodeCache, MAX_BLOCK, NO_PAGE, PAGE_SHIFT};
use super::decode::{decode, insn_len, Insn, Op, PAUSE_SETS, SINK};
use super::hart::{Access, Bus, Fault, Hart, MemError, Stop};
use super::ram::{AmoOp, RamRegion};

struct Exec<'a, B: Bus> {
    /// The registers during a run: index 32 is the sink for writes to x0, the compiled code
    /// (feature `jit`) uses x1 to x31; 256 of them so that an instruction's `u8` register
    /// fields index it with neither a bounds check nor a mask.
    x: [u64; 256],
    /// The block being run: its pc; the run's count before its instruction at index `i` of
    /// the code the handlers run is `bias + i` (wrapping: the block's count before it, less
    /// its first index); where the run goes on when it stops at a block's end ([`NO_PC`]
    /// until then); and why it ended early ([`Slow::Done`] at a block's end).
    base: u64,
    bias: u64,
    npc: u64,
    exit: Slow,
    /// The hart's count when the run started.
    instret0: u64,
    /// Chaining (see [`chain`]): a block may follow without a return to the outer loop while
    /// the run's count after it stays within `stop_at` (0: no chaining); the cached page the
    /// current block is in (its number and its index in the cache).
    stop_at: u64,
    vpn: u64,
    page: usize,
    bus: &'a mut B,
    cache: &'a mut CodeCache,
    /// Last region a load hit (readable), and the one before it: code that alternates
    /// between two regions (a packet buffer and the stack) finds the other one here without
    /// a search.
    rd_region: RamRegion,
    rd_prev: RamRegion,
    /// Last region a store hit (writable), and the one before it.
    wr_region: RamRegion,
    wr_prev: RamRegion,
    /// Last region an instruction was fetched from (executable).
    x_region: RamRegion,
    /// A page the bus said has no RAM region (so it is not asked again at once).
    no_ram_vpn: u64,
    /// The last blocks [`chain`] went on into during this [`run_block`], most recent first
    /// (see [`Link`]).
    links: [Link; LINKS],
    /// The last regions the bus gave (a program alternating between stack, data and a
    /// context page finds them here without asking the bus again), `recent_next` the slot
    /// to replace next.
    recent: [RamRegion; RECENT],
    recent_next: usize,
    /// LR/SC reservation.
    resv: Option<(u64, u64)>,
    /// Set when a store dropped decoded code: the current block must not go on.
    code_changed: bool,
    /// The regions handed to compiled code (`JitCtx::rd`) and the code cache's generation
    /// they were gathered at; `None` after one of the regions above changed. (Only for speed:
    /// every region stays valid for the whole run, so a stale set is still a safe one.)
    #[cfg(feature = "jit")]
    jit_rd: Option<(JitRegions, u64)>,
}

impl<B: Bus> Exec<'_, B> {
    /// Notes that the last load / store region or the recent ones changed.
    #[inline(always)]
    fn regions_changed(&mut self) {
        #[cfg(feature = "jit")]
        {
            self.jit_rd = None;
        }
    }

    /// The bus's RAM region containing `addr`, if any.
    #[cold]
    #[inline(never)]
    fn find_region(&mut self, addr: u64) -> Option<RamRegion> {
        if let Some(r) = self.recent.iter().find(|r| r.contains(addr)) {
            return Some(*r);
        }
        let vpn = addr >> PAGE_SHIFT;
        if vpn == self.no_ram_vpn {
            return None;
        }
        match self.bus.ram_region(addr) {
            Some(r) if r.contains(addr) => {
                self.recent[self.recent_next] = r;
                self.recent_next = (self.recent_next + 1) % RECENT;
                self.regions_changed();
                Some(r)
            }
            _ => {
                self.no_ram_vpn = vpn;
                None
            }
        }
    }

    #[inline(always)]
    fn load(&mut self, addr: u64, size: u8) -> Result<u64, MemError> {
        match self.rd_region.load(addr, size) {
            Some(v) => Ok(v),
            None => self.load_slow(addr, size),
        }
    }

    #[inline(never)]
    fn load_slow(&mut self, addr: u64, size: u8) -> Result<u64, MemError> {
        if addr & (u64::from(size) - 1) != 0 {
            return Err(MemError::Misaligned);
        }
        if let Some(v) = self.rd_prev.load(addr, size) {
            std::mem::swap(&mut self.rd_region, &mut self.rd_prev);
            self.regions_changed();
            return Ok(v);
        }
        if let Some(r) = self.find_region(addr) {
            if r.perms().read {
                if let Some(v) = r.load(addr, size) {
                    self.rd_prev = std::mem::replace(&mut self.rd_region, r);
                    self.regions_changed();
                    return Ok(v);
                }
            }
        }
        self.bus.load(addr, size)
    }

    #[inline(always)]
    fn store(&mut self, addr: u64, size: u8, value: u64) -> Result<(), MemError> {
        if !self.wr_region.store(addr, size, value) {
            self.store_slow(addr, size, value)?;
        }
        self.after_store(addr, size);
        Ok(())
    }

    /// A store that hits the last store region, where no reservation is held and no code may
    /// be cached: `false` (nothing stored) otherwise, and [`Exec::store`] does it.
    #[inline(always)]
    fn store_fast(&mut self, addr: u64, size: u8, value: u64) -> bool {
        self.resv.is_none()
            && !self.cache.may_hold(addr, size)
            && self.wr_region.store(addr, size, value)
    }

    #[inline(never)]
    fn store_slow(&mut self, addr: u64, size: u8, value: u64) -> Result<(), MemError> {
        if addr & (u64::from(size) - 1) != 0 {
            return Err(MemError::Misaligned);
        }
        if self.wr_prev.store(addr, size, value) {
            std::mem::swap(&mut self.wr_region, &mut self.wr_prev);
            self.regions_changed();
            return Ok(());
        }
        if let Some(r) = self.find_region(addr) {
            if r.perms().write && r.store(addr, size, value) {
                self.wr_prev = std::mem::replace(&mut self.wr_region, r);
                self.regions_changed();
                return Ok(());
            }
        }
        self.bus.store(addr, size, value)
    }

    /// A store by this hart: it ends a reservation on the same doubleword and drops decoded
    /// instructions it overwrote.
    #[inline(always)]
    fn after_store(&mut self, addr: u64, size: u8) {
        if let Some((r, _)) = self.resv {
            if r & !7 == addr & !7 {
                self.resv = None;
            }
        }
        if self.cache.may_hold(addr, size) {
            self.cache.invalidate(addr, u64::from(size));
            self.code_changed = true;
        }
    }

    /// An AMO of `size` (4 or 8) bytes; returns the old value, zero-extended.
    fn amo(&mut self, addr: u64, size: u8, op: AmoOp, value: u64) -> Result<u64, MemError> {
        if addr & (u64::from(size) - 1) != 0 {
            return Err(MemError::Misaligned);
        }
        let fast = if self.wr_region.perms().read {
            self.wr_region.amo(addr, size, op, value)
        } else {
            None
        };
        let old = match fast {
            Some(old) => old,
            None => self.amo_slow(addr, size, op, value)?,
        };
        self.after_store(addr, size);
        Ok(old)
    }

    /// An AMO's old value as rd receives it (a word sign-extended).
    #[inline(always)]
    fn amo_rd(&mut self, addr: u64, size: u8, op: AmoOp, value: u64) -> Result<u64, MemError> {
        let old = self.amo(addr, size, op, value)?;
        Ok(if size == 4 { sx32(old) } else { old })
    }

    /// LR: a load that reserves the word with the value it read.
    fn lr(&mut self, addr: u64, size: u8) -> Result<u64, MemError> {
        let v = self.load(addr, size)?;
        self.resv = Some((addr, v));
        Ok(if size == 4 { sx32(v) } else { v })
    }

    /// SC: 0 when the store happened, 1 when the reservation was lost. The store happens only
    /// if the word still holds what LR read, atomically: another hart's SC or store in between
    /// fails this one.
    fn sc(&mut self, addr: u64, size: u8, value: u64) -> Result<u64, MemError> {
        if addr & (u64::from(size) - 1) != 0 {
            return Err(MemError::Misaligned);
        }
        let held = self.resv.take();
        match held {
            Some((a, seen)) if a == addr => match self.amo(addr, size, AmoOp::Cas(seen), value) {
                Ok(old) => Ok(u64::from(old != seen)),
                Err(e) => {
                    self.resv = held;
                    Err(e)
                }
            },
            _ => Ok(1),
        }
    }

    #[inline(never)]
    fn amo_slow(&mut self, addr: u64, size: u8, op: AmoOp, value: u64) -> Result<u64, MemError> {
        if let Some(r) = self.find_region(addr) {
            if r.perms().read && r.perms().write {
                if let Some(old) = r.amo(addr, size, op, value) {
                    self.wr_prev = std::mem::replace(&mut self.wr_region, r);
                    self.regions_changed();
                    return Ok(old);
                }
            }
        }
        if let Some(r) = self.bus.atomic_region(addr) {
            if r.perms().read && r.perms().write {
                if let Some(old) = r.amo(addr, size, op, value) {
                    return Ok(old);
                }
            }
        }
        // A device: read, then write (not atomic with respect to anything else on the bus).
        let old = self.bus.load(addr, size)?;
        self.bus.store(addr, size, op.apply(old, value, size))?;
        Ok(old)
    }

    /// 16 bits of instruction at `addr`.
    fn fetch16(&mut self, addr: u64) -> Result<u16, MemError> {
        if let Some(v) = self.x_region.load(addr, 2) {
            return Ok(v as u16);
        }
        if let Some(r) = self.find_region(addr) {
            if r.perms().exec {
                if let Some(v) = r.load(addr, 2) {
                    self.x_region = r;
                    return Ok(v as u16);
                }
            }
        }
        self.bus.fetch(addr).map(|v| v as u16)
    }

    /// Fetches and decodes the block starting at `pc` (page number `vpn`) into the cache;
    /// returns (cached page, first arena index, length). A fetch fault on the first
    /// instruction is the result; on a later one the block ends before it.
    #[cold]
    #[inline(never)]
    fn build(
        &mut self,
        code: &mut Vec<Insn>,
        vpn: u64,
        pc: u64,
    ) -> Result<(usize, usize, usize), Fault> {
        if !CodeCache::has_room(code) {
            self.cache.clear_with(code);
        }
        let page = self.cache.page(vpn);
        let fault = |addr, error| Fault::Memory {
            pc,
            addr,
            access: Access::Fetch,
            size: 2,
            error,
        };
        let room = to_page_end(pc);
        // Decoded straight into the cache's arena (no block-sized buffer to fill and copy).
        let start = code.len();
        let mut n = 0;
        let mut off = 0u64; // bytes from pc
        while n < MAX_BLOCK && off < room {
            let a = pc.wrapping_add(off);
            let lo = match self.fetch16(a) {
                Ok(v) => v,
                Err(e) if n == 0 => return Err(fault(a, e)),
                Err(_) => break,
            };
            let len = u64::from(insn_len(lo));
            let crosses = off + len > room;
            if crosses && n > 0 {
                break; // an instruction across the page end is a block of its own
            }
            let raw = if len == 4 {
                let a2 = a.wrapping_add(2);
                match self.fetch16(a2) {
                    Ok(hi) => u32::from(lo) | (u32::from(hi) << 16),
                    Err(e) if n == 0 => return Err(fault(a2, e)),
                    Err(_) => break,
                }
            } else {
                u32::from(lo)
            };
            let mut insn = decode(raw);
            // At most 63 instructions of at most 4 bytes before this one.
            insn.off = off as u8;
            code.push(insn);
            n += 1;
            off += len;
            if ends_block(insn.op) || crosses {
                break;
            }
        }
        if let Some(block) = code.get_mut(start..) {
            fuse(block);
        }
        let len = self.cache.finish_block(code, page, pc, start);
        // The block's end marker (not part of the block: its length leaves it out).
        if let Some(last) = code.last().copied() {
            code.push(block_end(&last));
        }
        Ok((page, start, len))
    }
}

#[cfg(feature = "jit")]
impl<B: Bus> Exec<'_, B> {
    /// The block at `pc` (arena index `start`) with the JIT: counts an entry, compiles its
    /// region when it became hot, runs the compiled code with the registers `x` and at most
    /// `left` instructions.
    fn jit_block(&mut self, code: &mut Vec<Insn>, pc: u64, start: usize, left: u64) -> JitStep {
        use crate::cache::{JIT_COMPILED, JIT_NEVER};
        let Some(&state) = self.cache.jit_state.get(start) else {
            return JitStep::Interpret;
        };
        let Some(hot) = self.cache.jit.as_ref().map(|j| j.hot()) else {
            return JitStep::Interpret;
        };
        let index = match state {
            JIT_NEVER => return JitStep::Interpret,
            s if s & JIT_COMPILED != 0 => s & !JIT_COMPILED,
            s if s + 1 < hot => {
                self.cache.jit_state[start] = s + 1;
                return JitStep::Interpret;
            }
            _ => {
                // Gathering the region decodes into the cache (which may start over): the
                // JIT is out of it meanwhile, and the block is looked up again after.
                let Some(mut jit) = self.cache.jit.take() else {
                    return JitStep::Interpret;
                };
                let index = jit.obtain(pc, || self.region(code, pc));
                self.cache.jit = Some(jit);
                let page = self.cache.page(pc >> PAGE_SHIFT);
                if let Some((start, _)) = self.cache.block(page, pc) {
                    if let Some(s) = self.cache.jit_state.get_mut(start) {
                        *s = index.map_or(JIT_NEVER, |i| i | JIT_COMPILED);
                    }
                }
                return JitStep::Again;
            }
        };
        let Some(f) = self.cache.jit.as_ref().and_then(|j| j.func(index)) else {
            return JitStep::Interpret;
        };
        let generation = self.cache.generation();
        let mut rd = match self.jit_rd {
            Some((rd, g)) if g == generation => rd,
            _ => {
                let rd = self.load_regions();
                self.jit_rd = Some((rd, generation));
                rd
            }
        };
        if self.resv.is_some() {
            // A store must end the reservation: all of them through `jit_store`.
            for r in rd.chunks_mut(crate::jit::REGION_WORDS) {
                r[crate::jit::STORE_LEN] = 0;
            }
        }
        let mut ctx = crate::jit::JitCtx {
            x: self.x.as_mut_ptr(),
            left,
            pc,
            rd,
            exec: (self as *mut Self).cast(),
            store: jit_store::<B> as *const () as usize,
            fence: jit_fence::<B> as *const () as usize,
        };
        // SAFETY: `f` is compiled code for the guest code at `pc` (kept in the cache's JIT,
        // whose host code is freed only at a safe point, not during this call). It reads and
        // writes the 64 registers behind `ctx.x`, `ctx` itself, and host memory only inside
        // the RAM regions `ctx.rd` describes, with aligned accesses (their `RamRegion::new`
        // contract makes them valid for atomic reads and writes for the whole run); other
        // stores go through `jit_store` with `ctx.exec`, which points to this `Exec`, not
        // otherwise used until the call returns.
        let kind = unsafe { f(&mut ctx) };
        JitStep::Ran {
            retired: left - ctx.left,
            next: ctx.pc,
            interpret: kind == crate::jit::EXIT_INTERPRET,
        }
    }

    /// The readable regions compiled loads may use: the last store's, the last load's, the
    /// recent ones, without repeats (compiled stores try them in this order); each with its
    /// length for inline stores when it is writable and holds no decoded code, else 0.
    fn load_regions(&self) -> JitRegions {
        const W: usize = crate::jit::REGION_WORDS;
        let mut rd = [0u64; W * crate::jit::LOAD_REGIONS];
        let mut k = 0;
        let candidates = [self.wr_region, self.rd_region]
            .into_iter()
            .chain(self.recent.iter().copied());
        for r in candidates {
            let raw = r.raw();
            if k < crate::jit::LOAD_REGIONS
                && r.perms().read
                && raw[1] > 0
                && !rd
                    .chunks(W)
                    .take(k)
                    .any(|c| c[0] == raw[0] && c[1] == raw[1])
            {
                let stores = r.perms().write && self.cache.holds_no_code(raw[0], raw[1]);
                rd[W * k..W * k + 3].copy_from_slice(&raw);
                rd[W * k + crate::jit::STORE_LEN] = if stores { raw[1] } else { 0 };
                k += 1;
            }
        }
        rd
    }

    /// The blocks of the region starting at `entry`: reachable from it by direct jumps and
    /// branches and by falling through, within its page, breadth first.
    fn region(&mut self, code: &mut Vec<Insn>, entry: u64) -> Vec<crate::jit::GuestBlock> {
        let vpn = entry >> PAGE_SHIFT;
        let mut out: Vec<crate::jit::GuestBlock> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        let mut queue = std::collections::VecDeque::from([entry]);
        let mut total = 0;
        while let Some(pc) = queue.pop_front() {
            if out.len() >= crate::jit::MAX_REGION_BLOCKS || total >= crate::jit::MAX_REGION_INSNS {
                break;
            }
            if pc >> PAGE_SHIFT != vpn || pc & 1 != 0 || !seen.insert(pc) {
                continue;
            }
            let page = self.cache.page(vpn);
            let (start, len) = match self.cache.block(page, pc) {
                Some(b) => b,
                None => match self.build(code, vpn, pc) {
                    Ok((_, start, len)) => (start, len),
                    Err(_) => continue,
                },
            };
            let mut insns = Vec::with_capacity(len);
            let mut a = pc;
            for &insn in code.get(start..start + len).unwrap_or_default() {
                insns.push((a, insn));
                a = a.wrapping_add(u64::from(insn.len));
            }
            let g = crate::jit::GuestBlock { pc, insns };
            let n = crate::jit::compilable_prefix(&g);
            if n == g.insns.len() {
                if let Some(&(ipc, last)) = g.insns.last() {
                    let imm = last.imm as i64 as u64;
                    match last.op {
                        Op::Jal => queue.push_back(ipc.wrapping_add(imm)),
                        Op::Beq | Op::Bne | Op::Blt | Op::Bge | Op::Bltu | Op::Bgeu => {
                            queue.push_back(ipc.wrapping_add(imm));
                            queue.push_back(a);
                        }
                        Op::Jalr => {}
                        _ => queue.push_back(a),
                    }
                }
            }
            total += g.insns.len();
            out.push(g);
        }
        out
    }
}

/// `JitCtx::rd`.
#[cfg(feature = "jit")]
type JitRegions = [u64; crate::jit::REGION_WORDS * crate::jit::LOAD_REGIONS];

/// What [`Exec::jit_block`] did.
#[cfg(feature = "jit")]
enum JitStep {
    /// Compiled code ran: it retired `retired` instructions; go on at `next`, with the
    /// interpreter for one instruction first when `interpret`.
    Ran {
        retired: u64,
        next: u64,
        interpret: bool,
    },
    /// Interpret the block.
    Interpret,
    /// The region was just compiled (or found not to compile): look the block up again.
    Again,
}

/// The store compiled code calls: the interpreter's fast path only (0 stored, 1 stored and
/// decoded code dropped, 2 not stored: the interpreter does it).
#[cfg(feature = "jit")]
extern "C" fn jit_store<B: Bus>(exec: *mut u8, addr: u64, value: u64, size: u64) -> u64 {
    // SAFETY: compiled code passes back `JitCtx::exec`, the `Exec` of the `jit_call` that is
    // running it (same `B`), which nothing else uses during the call.
    let ex = unsafe { &mut *exec.cast::<Exec<'_, B>>() };
    let size = size as u8;
    if !ex.wr_region.store(addr, size, value) {
        let Some(r) = ex
            .recent
            .iter()
            .find(|r| r.perms().write && r.contains(addr))
            .copied()
        else {
            return 2;
        };
        if !r.store(addr, size, value) {
            return 2;
        }
        ex.wr_prev = std::mem::replace(&mut ex.wr_region, r);
        ex.regions_changed();
    }
    ex.after_store(addr, size);
    if ex.code_changed {
        ex.code_changed = false;
        return 1;
    }
    0
}

/// The fence compiled code calls (never a `pause`: that stays with the interpreter).
#[cfg(feature = "jit")]
extern "C" fn jit_fence<B: Bus>(exec: *mut u8, sets: u64) -> u64 {
    // SAFETY: as in `jit_store`.
    let ex = unsafe { &mut *exec.cast::<Exec<'_, B>>() };
    ex.bus.fence((sets >> 4) as u8 & 0xf, sets as u8 & 0xf);
    0
}

/// Whether an operation ends a block (it may change the pc, leave `run`, or change the cache).
fn ends_block(op: Op) -> bool {
    matches!(
        op,
        Op::Jal
            | Op::Jalr
            | Op::Beq
            | Op::Bne
            | Op::Blt
            | Op::Bge
            | Op::Bltu
            | Op::Bgeu
            | Op::Ecall
            | Op::Ebreak
            | Op::FenceI
            | Op::Illegal
    )
}

/// RAM regions an `Exec` remembers besides the last load and store ones.
const RECENT: usize = 4;

/// Sign-extends a 32-bit result.
#[inline(always)]
fn sx32(v: u64) -> u64 {
    v as i32 as i64 as u64
}

/// Runs until an ecall, ebreak, fault, or `max_insns` instructions have retired.
///
/// - Returns [`Stop::Budget`] after exactly `max_insns` retired instructions (at once when it
///   is 0); `hart.instret` grows by the number retired in this call.
/// - An `ecall` retires (it counts, and `pc` moves past it); an `ebreak` and a faulting
///   instruction do not (`pc` stays on them, registers and memory as before the instruction).
/// - A store by this hart to the doubleword of its reservation ends the reservation; SC
///   succeeds only at exactly the address of the last LR, and only if memory there still
///   holds what the LR read: the store is an atomic compare-and-swap against that value, so
///   of two harts holding reservations on one word at most one SC succeeds. (A store by
///   another hart of the very value LR read does not fail the SC: the compare-and-swap
///   reading of LR/SC that QEMU also uses.)
/// - With the C extension every branch and jump target is 2-byte aligned, so
///   [`Fault::MisalignedTarget`] never occurs; an odd `hart.pc` on entry is a fetch fault
///   ([`MemError::Misaligned`]).
pub fn run<B: Bus>(hart: &mut Hart, bus: &mut B, max_insns: u64) -> Stop {
    let mut kept = bus.code_cache().map(std::mem::take);
    let stop = match &mut kept {
        Some(cache) => run_cached(hart, bus, cache, max_insns),
        None => {
            #[allow(unused_mut)] // mutated only in the JIT's unit tests
            let mut cache = CodeCache::new();
            // The unit tests of the `jit` build run every program through the JIT, compiling
            // at first sight (what it does not compile, the interpreter runs as always).
            #[cfg(all(test, feature = "jit"))]
            cache.set_jit(Some(1));
            run_cached(hart, bus, &mut cache, max_insns)
        }
    };
    if let Some(cache) = kept {
        if let Some(slot) = bus.code_cache() {
            *slot = cache;
        }
    }
    stop
}

/// The interpreter with the code cache `cache`. See [`run`].
fn run_cached<B: Bus>(hart: &mut Hart, bus: &mut B, cache: &mut CodeCache, max_insns: u64) -> Stop {
    if max_insns == 0 {
        return Stop::Budget;
    }
    if hart.pc & 1 != 0 {
        return Stop::Fault(Fault::Memory {
            pc: hart.pc,
            addr: hart.pc,
            access: Access::Fetch,
            size: 2,
            error: MemError::Misaligned,
        });
    }
    // The regions the bus expects the run to use, known from the start.
    let hint = bus.ram_regions().map(|r| r.unwrap_or(RamRegion::EMPTY));
    let mut code = cache.lend_code();
    let mut ex = Exec {
        x: [0; 256],
        base: 0,
        bias: 0,
        npc: 0,
        exit: Slow::Done,
        instret0: hart.instret,
        stop_at: 0,
        vpn: NO_PAGE,
        page: 0,
        bus,
        cache,
        rd_region: RamRegion::EMPTY,
        rd_prev: RamRegion::EMPTY,
        wr_region: RamRegion::EMPTY,
        wr_prev: RamRegion::EMPTY,
        x_region: RamRegion::EMPTY,
        no_ram_vpn: NO_PAGE,
        links: [NO_LINK; LINKS],
        recent: hint,
        recent_next: 0,
        resv: hart.reservation,
        code_changed: false,
        #[cfg(feature = "jit")]
        jit_rd: None,
    };
    ex.x[1..32].copy_from_slice(&hart.x[1..32]);
    let mut pc = hart.pc;
    let mut n: u64 = 0;
    let mut cur_vpn = NO_PAGE;
    let mut cur_page = 0usize;
    // A block cut short by the budget, with its end marker.
    let mut cut: Vec<Insn> = Vec::with_capacity(MAX_BLOCK + 1);
    // Compiled code left before an instruction the interpreter must run.
    #[cfg(feature = "jit")]
    let mut interpret_one = false;

    let stop = loop {
        if n >= max_insns {
            break Stop::Budget;
        }

        let vpn = pc >> PAGE_SHIFT;
        if vpn != cur_vpn {
            cur_page = ex.cache.page(vpn);
            cur_vpn = vpn;
        }
        let (start, len) = match ex.cache.block(cur_page, pc) {
            Some(b) => b,
            None => match ex.build(&mut code, vpn, pc) {
                Ok((page, start, len)) => {
                    cur_page = page;
                    (start, len)
                }
                Err(f) => break Stop::Fault(f),
            },
        };
        #[cfg(feature = "jit")]
        if !interpret_one && ex.cache.jit.is_some() {
            match ex.jit_block(&mut code, pc, start, max_insns - n) {
                JitStep::Ran {
                    retired,
                    next,
                    interpret,
                } => {
                    n += retired;
                    pc = next;
                    interpret_one = interpret;
                    continue;
                }
                JitStep::Again => {
                    // Gathering the region may have emptied the cache.
                    cur_vpn = NO_PAGE;
                    continue;
                }
                JitStep::Interpret => {}
            }
        }
        // Never past the budget: a block may end early.
        let left = max_insns - n;
        #[cfg_attr(not(feature = "jit"), allow(unused_mut))]
        let mut run = len.min(usize::try_from(left).unwrap_or(usize::MAX));
        // How far blocks may chain after this one.
        #[cfg_attr(not(feature = "jit"), allow(unused_mut))]
        let mut stop_at = n + left.min(CHAIN);
        #[cfg(feature = "jit")]
        if std::mem::take(&mut interpret_one) {
            run = run.min(1);
        }
        #[cfg(feature = "jit")]
        if ex.cache.jit.is_some() {
            // The outer loop counts each block's entries for the JIT.
            stop_at = 0;
        }
        let Some(block) = code.get(start..start + len).filter(|b| !b.is_empty()) else {
            // Cannot happen (entries only name decoded blocks); start over to be safe.
            ex.cache.clear_with(&mut code);
            cur_vpn = NO_PAGE;
            continue;
        };
        let (run_code, run_start) = if run == len {
            ex.stop_at = stop_at;
            (&code[..], start)
        } else {
            // Cut by the budget: a copy of the instructions that may run, with an end marker
            // after them (a fused pair cut in two runs its first alone); no chaining.
            cut.clear();
            cut.extend_from_slice(&block[..run]);
            if let Some(last) = cut.last_mut() {
                last.dispatch = last.op as u8;
                let end = block_end(last);
                cut.push(end);
            }
            ex.stop_at = 0;
            (&cut[..], 0)
        };
        ex.vpn = cur_vpn;
        ex.page = cur_page;
        match run_block(&mut ex, run_code, run_start, &mut pc, &mut n) {
            BlockEnd::Next => {}
            BlockEnd::Relookup => cur_vpn = NO_PAGE,
            BlockEnd::FenceI => {
                ex.cache.clear_with(&mut code);
                cur_vpn = NO_PAGE;
            }
            BlockEnd::Stop(stop) => break stop,
        }
    };
    ex.cache.return_code(code);
    hart.x[0] = 0;
    hart.x[1..32].copy_from_slice(&ex.x[1..32]);
    hart.pc = pc;
    hart.instret = ex.instret0.wrapping_add(n);
    hart.reservation = ex.resv;
    stop
}

/// The value of a bit-manipulation instruction (Zba, Zbb, Zbc, Zbs and the draft Zbp / Zbr the
/// DPA toolchain emits): a pure function of its operands. The interpreter hands it only those
/// (its own match names every other instruction).
#[inline(always)]
fn bitmanip(op: Op, v1: u64, v2: u64, imm: u64) -> u64 {
    match op {
        Op::Andn => v1 & !v2,
        Op::Orn => v1 | !v2,
        Op::Xnor => !(v1 ^ v2),
        Op::Clz => u64::from(v1.leading_zeros()),
        Op::Clzw => u64::from((v1 as u32).leading_zeros()),
        Op::Ctz => u64::from(v1.trailing_zeros()),
        Op::Ctzw => u64::from((v1 as u32).trailing_zeros()),
        Op::Cpop => u64::from(v1.count_ones()),
        Op::Cpopw => u64::from((v1 as u32).count_ones()),
        Op::Max => (v1 as i64).max(v2 as i64) as u64,
        Op::Maxu => v1.max(v2),
        Op::Min => (v1 as i64).min(v2 as i64) as u64,
        Op::Minu => v1.min(v2),
        Op::SextB => v1 as i8 as i64 as u64,
        Op::SextH => v1 as i16 as i64 as u64,
        Op::ZextH => v1 & 0xffff,
        Op::Rol => v1.rotate_left((v2 & 63) as u32),
        Op::Rolw => sx32(u64::from((v1 as u32).rotate_left((v2 & 31) as u32))),
        Op::Ror => v1.rotate_right((v2 & 63) as u32),
        Op::Rori => v1.rotate_right((imm & 63) as u32),
        Op::Roriw => sx32(u64::from((v1 as u32).rotate_right((imm & 31) as u32))),
        Op::Rorw => sx32(u64::from((v1 as u32).rotate_right((v2 & 31) as u32))),
        Op::OrcB => {
            let mut r = 0u64;
            for i in 0..8 {
                if (v1 >> (i * 8)) & 0xff != 0 {
                    r |= 0xff << (i * 8);
                }
            }
            r
        }
        Op::Rev8 => v1.swap_bytes(),
        Op::Bclr => v1 & !(1u64 << (v2 & 63)),
        Op::Bclri => v1 & !(1u64 << (imm & 63)),
        Op::Bext => (v1 >> (v2 & 63)) & 1,
        Op::Bexti => (v1 >> (imm & 63)) & 1,
        Op::Binv => v1 ^ (1u64 << (v2 & 63)),
        Op::Binvi => v1 ^ (1u64 << (imm & 63)),
        Op::Bset => v1 | (1u64 << (v2 & 63)),
        Op::Bseti => v1 | (1u64 << (imm & 63)),
        Op::Grev => bm::grev64(v1, (v2 & 63) as u32),
        Op::Grevi => bm::grev64(v1, (imm & 63) as u32),
        Op::Grevw => sx32(u64::from(bm::grev32(v1 as u32, (v2 & 31) as u32))),
        Op::Greviw => sx32(u64::from(bm::grev32(v1 as u32, (imm & 31) as u32))),
        Op::Gorc => bm::gorc64(v1, (v2 & 63) as u32),
        Op::Gorci => bm::gorc64(v1, (imm & 63) as u32),
        Op::Gorcw => sx32(u64::from(bm::gorc32(v1 as u32, (v2 & 31) as u32))),
        Op::Gorciw => sx32(u64::from(bm::gorc32(v1 as u32, (imm & 31) as u32))),
        Op::Shfl => bm::shfl64(v1, (v2 & 31) as u32),
        Op::Shfli => bm::shfl64(v1, (imm & 31) as u32),
        Op::Unshfl => bm::unshfl64(v1, (v2 & 31) as u32),
        Op::Unshfli => bm::unshfl64(v1, (imm & 31) as u32),
        Op::Shflw => sx32(u64::from(bm::shfl32(v1 as u32, (v2 & 15) as u32))),
        Op::Unshflw => sx32(u64::from(bm::unshfl32(v1 as u32, (v2 & 15) as u32))),
        Op::XpermN => bm::xperm(v1, v2, 2),
        Op::XpermB => bm::xperm(v1, v2, 3),
        Op::XpermH => bm::xperm(v1, v2, 4),
        Op::XpermW => bm::xperm(v1, v2, 5),
        Op::Pack => (v1 & 0xffff_ffff) | (v2 << 32),
        Op::Packu => (v1 >> 32) | (v2 & 0xffff_ffff_0000_0000),
        Op::Packh => (v1 & 0xff) | ((v2 & 0xff) << 8),
        Op::Packw => sx32((v1 & 0xffff) | ((v2 & 0xffff) << 16)),
        Op::Packuw => sx32(((v1 >> 16) & 0xffff) | (v2 & 0xffff_0000)),
        Op::Crc32B => bm::crc(v1, 8, bm::CRC32),
        Op::Crc32H => bm::crc(v1, 16, bm::CRC32),
        Op::Crc32W => bm::crc(v1, 32, bm::CRC32),
        Op::Crc32D => bm::crc(v1, 64, bm::CRC32),
        Op::Crc32cB => bm::crc(v1, 8, bm::CRC32C),
        Op::Crc32cH => bm::crc(v1, 16, bm::CRC32C),
        Op::Crc32cW => bm::crc(v1, 32, bm::CRC32C),
        Op::Crc32cD => bm::crc(v1, 64, bm::CRC32C),
        _ => {
            debug_assert!(false, "{op:?} is not a bit-manipulation instruction");
            0
        }
    }
}

/// What ended a block: the next block, or the same pc looked up again (the code cache changed
/// under it, or a `fence.i` asks for it to be emptied), or a stop of the run.
enum BlockEnd {
    Next,
    Relookup,
    FenceI,
    Stop(Stop),
}

/// Runs the block at `*pc_out` (arena index `start` of `code`: the cache's arena, or a copy
/// of a block cut short by the budget, each block followed by its end marker) and the blocks
/// chained after it; adds the number retired to `*n_out` and leaves the next pc in `*pc_out`.
///
/// Threaded: each instruction's handler (the [`Handlers`] table, by [`Insn::dispatch`]: its
/// operation's, a fused pair's, or the end marker's) runs it and ends by calling the next
/// instruction's handler, a tail call that compiles to one indirect jump, so each handler's
/// jump is predicted on its own. A block's last jump or branch, or its end marker, goes on
/// into the next block when [`chain`] allows, else records the next pc in `ex.npc` and
/// returns the end marker's index. A handler that cannot go on (a fault, a stop, a store into
/// decoded code) records why in `ex.exit` and returns its instruction's index. Where a call
/// is not turned into a jump (unoptimised builds) the calls nest at most one per
/// instruction of a block, and one per chained block, of which there are at most [`CHAIN`].
///
/// Neither the pc nor the count moves per instruction: an instruction's pc is its block's
/// plus its `off`, the run's count before it its index plus the block's `bias`.
#[inline(always)]
fn run_block<B: Bus>(
    ex: &mut Exec<'_, B>,
    code: &[Insn],
    start: usize,
    pc_out: &mut u64,
    n_out: &mut u64,
) -> BlockEnd {
    ex.base = *pc_out;
    ex.bias = n_out.wrapping_sub(start as u64);
    ex.npc = NO_PC;
    ex.links = [NO_LINK; LINKS];
    let i = next(ex, code, start);
    // What retired before instruction `i` (in the block the run stopped in).
    let before = ex.bias.wrapping_add(i as u64);
    let Some(&insn) = code.get(i) else {
        // Cannot happen (every block has its end marker): go on after what ran.
        *pc_out = match code.get(i.wrapping_sub(1)).filter(|_| before > *n_out) {
            Some(l) => fall_through(ex.base, l),
            None => ex.base,
        };
        *n_out = before;
        return BlockEnd::Relookup;
    };
    let pc = ex.base.wrapping_add(u64::from(insn.off));
    let after = fall_through(ex.base, &insn);
    let (pc, retired, end) = match std::mem::replace(&mut ex.exit, Slow::Done) {
        // At a block's end: `ex.npc` is where the run goes on.
        Slow::Done => (ex.npc, before, BlockEnd::Next),
        Slow::CodeChanged => (after, before + 1, BlockEnd::Relookup),
        Slow::FenceI => (after, before + 1, BlockEnd::FenceI),
        Slow::Stop(stop) => (pc, before, BlockEnd::Stop(stop)),
        Slow::StopAfter(stop) => (after, before + 1, BlockEnd::Stop(stop)),
    };
    *pc_out = pc;
    *n_out = retired;
    end
}

/// `Exec::npc` while no block end has set it: odd, so never a pc.
const NO_PC: u64 = u64::MAX;

/// Instructions a run may retire in chained blocks before it returns to the outer loop
/// (which checks nothing chaining does not: this only bounds the depth of handler calls
/// where they are not jumps, a block being at least one instruction; an unoptimised build's
/// frames are large).
const CHAIN: u64 = if cfg!(debug_assertions) { 256 } else { 4096 };

/// A handler: runs instruction `i` of `code` (`insn`, a reference so that it stays in a
/// register and the call can be a jump), and the rest of the run after it;
/// returns where the run stopped (see [`run_block`]).
type Handler<B> = fn(&mut Exec<'_, B>, &[Insn], usize, &Insn) -> usize;

/// Runs instruction `i` of `code` and the ones after it.
#[inline(always)]
fn next<B: Bus>(ex: &mut Exec<'_, B>, code: &[Insn], i: usize) -> usize {
    match code.get(i) {
        Some(insn) => Handlers::<B>::TABLE[usize::from(insn.dispatch)](ex, code, i, insn),
        None => i,
    }
}

/// The end of a block whose last instruction retired (`end`: the block's end marker), the
/// run going on at `target`: on into the block at `target` when it is decoded, in the same
/// page, and fits in the budget, and blocks may still chain; else the run returns there.
/// (A store that dropped decoded code, `fence.i` and every stop leave before this; the page's
/// entries are the cache's own, so a dropped block is never entered.)
#[inline(always)]
fn chain<B: Bus>(ex: &mut Exec<'_, B>, code: &[Insn], end: usize, target: u64) -> usize {
    let (start, len) = if ex.links[0].pc == target {
        (ex.links[0].start as usize, usize::from(ex.links[0].len))
    } else if ex.links[1].pc == target {
        ex.links.swap(0, 1);
        (ex.links[0].start as usize, usize::from(ex.links[0].len))
    } else {
        match (target >> PAGE_SHIFT == ex.vpn)
            .then(|| ex.cache.block(ex.page, target))
            .flatten()
        {
            Some((start, len)) => {
                if let (Ok(s), Ok(l)) = (u32::try_from(start), u8::try_from(len)) {
                    ex.links[1] = ex.links[0];
                    ex.links[0] = Link {
                        pc: target,
                        start: s,
                        len: l,
                    };
                }
                (start, len)
            }
            None => {
                ex.npc = target;
                return end;
            }
        }
    };
    // The count after this block (`len` is never 0: it grows with every chained one).
    let at = ex.bias.wrapping_add(end as u64);
    if at + len as u64 <= ex.stop_at {
        ex.bias = at.wrapping_sub(start as u64);
        ex.base = target;
        return next(ex, code, start);
    }
    ex.npc = target;
    end
}

/// A block [`chain`] went on into in this [`run_block`]: its pc, and where it is in the code
/// arena. [`Exec::links`] keeps the last two, most recent first: a loop mostly goes back
/// to one head and on to one or two other blocks, so the next target is mostly one of them,
/// found with a compare and two loads instead of the page check and the cache's entry lookup
/// (the compute loop: 724-760 MIPS against 644-656, docs/performance.md, 2026-12-08). A
/// hash-indexed table of eight measured no faster than the lookup.
///
/// Entries stay right while a `run_block` lasts, and it empties them when it starts: the
/// cache drops or moves decoded code only where a store into code, `fence.i` or a new
/// block's decoding happens; the first two leave `run_block` at once (`Slow::CodeChanged`,
/// `Slow::FenceI`) and the last happens outside it.
#[derive(Clone, Copy)]
struct Link {
    pc: u64,
    start: u32,
    len: u8,
}

/// Entries of [`Exec::links`].
const LINKS: usize = 2;
/// An empty [`Link`]: its pc is odd, so never a target.
const NO_LINK: Link = Link {
    pc: NO_PC,
    start: 0,
    len: 0,
};

/// The end marker after each block (dispatch [`BLOCK_END`]): a copy of the block's last
/// instruction, whose fall-through is where the run goes on when that instruction did not
/// jump.
fn block_end(last: &Insn) -> Insn {
    Insn {
        dispatch: BLOCK_END,
        ..*last
    }
}

/// The pc after instruction `insn` of the block at `base`.
#[inline(always)]
fn fall_through(base: u64, insn: &Insn) -> u64 {
    base.wrapping_add(u64::from(insn.off))
        .wrapping_add(u64::from(insn.len))
}

/// The end marker's handler (at index `i`): the block ran to its end without a jump.
fn h_end<B: Bus>(ex: &mut Exec<'_, B>, code: &[Insn], i: usize, insn: &Insn) -> usize {
    chain(ex, code, i, fall_through(ex.base, insn))
}

/// The handler of each operation (indexed by its `Op` value): the common ones have their own,
/// the rest go to [`h_slow`].
struct Handlers<B>(std::marker::PhantomData<B>);

impl<B: Bus> Handlers<B> {
    const TABLE: [Handler<B>; 256] = {
        let mut t: [Handler<B>; 256] = [h_slow::<B>; 256];
        macro_rules! set {
                ($($op:ident => $h:ident),* $(,)?) => { $( t[Op::$op as usize] = $h::<B>; )* };
            }
        set!(
            Auipc => h_auipc, Jal => h_jal, Jalr => h_jalr,
            Beq => h_beq, Bne => h_bne, Blt => h_blt, Bge => h_bge, Bltu => h_bltu, Bgeu => h_bgeu,
            Lb => h_lb, Lh => h_lh, Lw => h_lw, Ld => h_ld, Lbu => h_lbu, Lhu => h_lhu, Lwu => h_lwu,
            Sb => h_sb, Sh => h_sh, Sw => h_sw, Sd => h_sd,
            Lui => h_lui, Addi => h_addi, Slti => h_slti, Sltiu => h_sltiu, Xori => h_xori,
            Ori => h_ori, Andi => h_andi, Slli => h_slli, Srli => h_srli, Srai => h_srai,
            Add => h_add, Sub => h_sub, Sll => h_sll, Slt => h_slt, Sltu => h_sltu, Xor => h_xor,
            Srl => h_srl, Sra => h_sra, Or => h_or, And => h_and,
            Addiw => h_addiw, Slliw => h_slliw, Srliw => h_srliw, Sraiw => h_sraiw,
            Addw => h_addw, Subw => h_subw, Mul => h_mul, Mulw => h_mulw,
            Sllw => h_sllw, Srlw => h_srlw, Sraw => h_sraw, Fence => h_fence,
            Andn => h_andn, Orn => h_orn, Xnor => h_xnor, ZextH => h_zext_h, SextB => h_sext_b,
            SextH => h_sext_h, Rev8 => h_rev8,
        );
        t[FUSE_SLLI_ADD as usize] = f_slli_add::<B>;
        t[FUSE_SLLI_SRLI as usize] = f_slli_srli::<B>;
        t[FUSE_ANDI_SLLI as usize] = f_andi_slli::<B>;
        t[FUSE_LUI_ADDI as usize] = f_lui_addi::<B>;
        t[FUSE_LUI_ADDIW as usize] = f_lui_addiw::<B>;
        t[FUSE_AUIPC_ADDI as usize] = f_auipc_addi::<B>;
        t[FUSE_ADD_LB as usize] = f_add_lb::<B>;
        t[FUSE_ADD_LH as usize] = f_add_lh::<B>;
        t[FUSE_ADD_LW as usize] = f_add_lw::<B>;
        t[FUSE_ADD_LD as usize] = f_add_ld::<B>;
        t[FUSE_ADD_LBU as usize] = f_add_lbu::<B>;
        t[FUSE_ADD_LHU as usize] = f_add_lhu::<B>;
        t[FUSE_ADD_LWU as usize] = f_add_lwu::<B>;
        t[BLOCK_END as usize] = h_end::<B>;
        t
    };
}

/// Everything without a handler of its own, and the loads and stores the fast paths miss.
fn h_slow<B: Bus>(ex: &mut Exec<'_, B>, block: &[Insn], i: usize, insn: &Insn) -> usize {
    let pc = ex.base.wrapping_add(u64::from(insn.off));
    let instret = ex.instret0.wrapping_add(ex.bias).wrapping_add(i as u64);
    match slow_op(ex, *insn, pc, instret) {
        Slow::Done => next(ex, block, i + 1),
        why => {
            ex.exit = why;
            i
        }
    }
}

/// Handlers whose instruction writes `rd` from `v1` (rs1), `v2` (rs2), `imm` and the pc.
macro_rules! alu {
    ($($name:ident: |$v1:ident, $v2:ident, $imm:ident, $pc:ident| $e:expr;)*) => {$(
        #[allow(unused_variables)]
        fn $name<B: Bus>(ex: &mut Exec<'_, B>, block: &[Insn], i: usize, insn: &Insn) -> usize {
            let $v1 = ex.x[usize::from(insn.rs1)];
            let $v2 = ex.x[usize::from(insn.rs2)];
            let $imm = insn.imm as i64 as u64;
            let $pc = || ex.base.wrapping_add(u64::from(insn.off));
            let v = $e;
            ex.x[usize::from(insn.rd)] = v;
            next(ex, block, i + 1)
        }
    )*};
}

alu! {
    h_auipc: |v1, v2, imm, pc| pc().wrapping_add(imm);
    h_lui: |v1, v2, imm, pc| imm;
    h_addi: |v1, v2, imm, pc| v1.wrapping_add(imm);
    h_slti: |v1, v2, imm, pc| u64::from((v1 as i64) < (imm as i64));
    h_sltiu: |v1, v2, imm, pc| u64::from(v1 < imm);
    h_xori: |v1, v2, imm, pc| v1 ^ imm;
    h_ori: |v1, v2, imm, pc| v1 | imm;
    h_andi: |v1, v2, imm, pc| v1 & imm;
    h_slli: |v1, v2, imm, pc| v1 << (imm & 63);
    h_srli: |v1, v2, imm, pc| v1 >> (imm & 63);
    h_srai: |v1, v2, imm, pc| ((v1 as i64) >> (imm & 63)) as u64;
    h_add: |v1, v2, imm, pc| v1.wrapping_add(v2);
    h_sub: |v1, v2, imm, pc| v1.wrapping_sub(v2);
    h_sll: |v1, v2, imm, pc| v1 << (v2 & 63);
    h_slt: |v1, v2, imm, pc| u64::from((v1 as i64) < (v2 as i64));
    h_sltu: |v1, v2, imm, pc| u64::from(v1 < v2);
    h_xor: |v1, v2, imm, pc| v1 ^ v2;
    h_srl: |v1, v2, imm, pc| v1 >> (v2 & 63);
    h_sra: |v1, v2, imm, pc| ((v1 as i64) >> (v2 & 63)) as u64;
    h_or: |v1, v2, imm, pc| v1 | v2;
    h_and: |v1, v2, imm, pc| v1 & v2;
    h_addiw: |v1, v2, imm, pc| sx32(v1.wrapping_add(imm));
    h_slliw: |v1, v2, imm, pc| sx32(u64::from((v1 as u32) << (imm & 31)));
    h_srliw: |v1, v2, imm, pc| sx32(u64::from((v1 as u32) >> (imm & 31)));
    h_sraiw: |v1, v2, imm, pc| ((v1 as i32) >> (imm & 31)) as i64 as u64;
    h_addw: |v1, v2, imm, pc| sx32(v1.wrapping_add(v2));
    h_subw: |v1, v2, imm, pc| sx32(v1.wrapping_sub(v2));
    h_mul: |v1, v2, imm, pc| v1.wrapping_mul(v2);
    h_mulw: |v1, v2, imm, pc| sx32(v1.wrapping_mul(v2));
    h_sllw: |v1, v2, imm, pc| sx32(u64::from((v1 as u32) << (v2 & 31)));
    h_srlw: |v1, v2, imm, pc| sx32(u64::from((v1 as u32) >> (v2 & 31)));
    h_sraw: |v1, v2, imm, pc| ((v1 as i32) >> (v2 & 31)) as i64 as u64;
    // The bit-manipulation instructions the DPA toolchain emits most (the packet processor's
    // handler ran rev8, andn and zext.h about 20 times a frame through `slow_op`).
    h_andn: |v1, v2, imm, pc| bitmanip(Op::Andn, v1, v2, imm);
    h_orn: |v1, v2, imm, pc| bitmanip(Op::Orn, v1, v2, imm);
    h_xnor: |v1, v2, imm, pc| bitmanip(Op::Xnor, v1, v2, imm);
    h_zext_h: |v1, v2, imm, pc| bitmanip(Op::ZextH, v1, v2, imm);
    h_sext_b: |v1, v2, imm, pc| bitmanip(Op::SextB, v1, v2, imm);
    h_sext_h: |v1, v2, imm, pc| bitmanip(Op::SextH, v1, v2, imm);
    h_rev8: |v1, v2, imm, pc| bitmanip(Op::Rev8, v1, v2, imm);
}

/// `fence` (the bus's, with its predecessor and successor sets) and on; a `pause` goes to
/// [`slow_op`], which may stop the run there.
fn h_fence<B: Bus>(ex: &mut Exec<'_, B>, block: &[Insn], i: usize, insn: &Insn) -> usize {
    let sets = insn.imm as u32;
    if sets & 0xff == PAUSE_SETS {
        return h_slow(ex, block, i, insn);
    }
    ex.bus.fence((sets >> 4) as u8 & 0xf, sets as u8 & 0xf);
    next(ex, block, i + 1)
}

/// Branch handlers: a taken branch sets the block's next pc (a branch is always last; not
/// taken, the block goes on at its fall-through).
macro_rules! branch {
    ($($name:ident: |$v1:ident, $v2:ident| $cond:expr;)*) => {$(
        fn $name<B: Bus>(ex: &mut Exec<'_, B>, block: &[Insn], i: usize, insn: &Insn) -> usize {
            let $v1 = ex.x[usize::from(insn.rs1)];
            let $v2 = ex.x[usize::from(insn.rs2)];
            // A real branch (predicted), not a select the next block's lookup would wait
            // for. A branch is always its block's last instruction: the end marker follows.
            if $cond {
                let target = ex
                    .base
                    .wrapping_add(u64::from(insn.off))
                    .wrapping_add(insn.imm as i64 as u64);
                return chain(ex, block, i + 1, target);
            }
            // Not taken: the end marker's work (its marker copies this branch's offset and
            // length), here, without its dispatch.
            h_end(ex, block, i + 1, insn)
        }
    )*};
}

branch! {
    h_beq: |v1, v2| v1 == v2;
    h_bne: |v1, v2| v1 != v2;
    h_blt: |v1, v2| (v1 as i64) < (v2 as i64);
    h_bge: |v1, v2| (v1 as i64) >= (v2 as i64);
    h_bltu: |v1, v2| v1 < v2;
    h_bgeu: |v1, v2| v1 >= v2;
}

fn h_jal<B: Bus>(ex: &mut Exec<'_, B>, block: &[Insn], i: usize, insn: &Insn) -> usize {
    let pc = ex.base.wrapping_add(u64::from(insn.off));
    ex.x[usize::from(insn.rd)] = pc.wrapping_add(u64::from(insn.len));
    // A jump is always its block's last instruction: the end marker follows.
    chain(ex, block, i + 1, pc.wrapping_add(insn.imm as i64 as u64))
}

fn h_jalr<B: Bus>(ex: &mut Exec<'_, B>, block: &[Insn], i: usize, insn: &Insn) -> usize {
    let pc = ex.base.wrapping_add(u64::from(insn.off));
    let target = ex.x[usize::from(insn.rs1)].wrapping_add(insn.imm as i64 as u64) & !1;
    ex.x[usize::from(insn.rd)] = pc.wrapping_add(u64::from(insn.len));
    chain(ex, block, i + 1, target)
}

/// Load handlers (the last load region inline; else [`load_miss`]), each with its fused pair
/// of an `add` and the load through the sum.
macro_rules! load {
    ($($name:ident, $fused:ident: $size:expr, $ext:expr;)*) => {$(
        fn $name<B: Bus>(ex: &mut Exec<'_, B>, block: &[Insn], i: usize, insn: &Insn) -> usize {
            let a = ex.x[usize::from(insn.rs1)].wrapping_add(insn.imm as i64 as u64);
            match ex.rd_region.load(a, $size) {
                Some(v) => {
                    ex.x[usize::from(insn.rd)] = $ext(v);
                    next(ex, block, i + 1)
                }
                // A jump to a function of its own: the fast path keeps no registers for it.
                None => load_miss(ex, block, i, insn),
            }
        }

        /// The fused `add` and this load: the sum goes to the add's `rd` and is the load's
        /// base (the load's `rs1`); the load as its own handler does it, through
        /// [`load_miss`] when the last load region misses (the add has retired by then). A
        /// block cut between the two runs the add alone.
        fn $fused<B: Bus>(ex: &mut Exec<'_, B>, block: &[Insn], i: usize, insn: &Insn) -> usize {
            let v = ex.x[usize::from(insn.rs1)].wrapping_add(ex.x[usize::from(insn.rs2)]);
            ex.x[usize::from(insn.rd)] = v;
            let Some(b) = block.get(i + 1) else {
                return next(ex, block, i + 1);
            };
            let a = v.wrapping_add(b.imm as i64 as u64);
            match ex.rd_region.load(a, $size) {
                Some(loaded) => {
                    ex.x[usize::from(b.rd)] = $ext(loaded);
                    next(ex, block, i + 2)
                }
                None => load_miss(ex, block, i + 1, b),
            }
        }
    )*};
}

/// The size of a load or store and whether its value is sign-extended.
fn access_of(op: Op) -> (u8, bool) {
    match op {
        Op::Lb | Op::Sb => (1, true),
        Op::Lbu => (1, false),
        Op::Lh | Op::Sh => (2, true),
        Op::Lhu => (2, false),
        Op::Lw | Op::Sw => (4, true),
        Op::Lwu => (4, false),
        _ => (8, false),
    }
}

/// A load the last load region missed: the other regions and the bus
/// ([`Exec::load_slow`]), or the fault.
#[cold]
#[inline(never)]
fn load_miss<B: Bus>(ex: &mut Exec<'_, B>, block: &[Insn], i: usize, insn: &Insn) -> usize {
    let a = ex.x[usize::from(insn.rs1)].wrapping_add(insn.imm as i64 as u64);
    let (size, signed) = access_of(insn.op);
    match ex.load_slow(a, size) {
        Ok(v) => {
            let bits = 64 - 8 * u32::from(size);
            ex.x[usize::from(insn.rd)] = if signed {
                (((v << bits) as i64) >> bits) as u64
            } else {
                v
            };
            next(ex, block, i + 1)
        }
        Err(e) => mem_fault(ex, i, insn, a, Access::Load, size, e),
    }
}

/// Ends the block at instruction `i` with a fault of its access.
#[cold]
#[inline(never)]
fn mem_fault<B: Bus>(
    ex: &mut Exec<'_, B>,
    i: usize,
    insn: &Insn,
    addr: u64,
    access: Access,
    size: u8,
    error: MemError,
) -> usize {
    ex.exit = Slow::Stop(Stop::Fault(Fault::Memory {
        pc: ex.base.wrapping_add(u64::from(insn.off)),
        addr,
        access,
        size,
        error,
    }));
    i
}

load! {
    h_lb, f_add_lb: 1, |v: u64| v as i8 as i64 as u64;
    h_lh, f_add_lh: 2, |v: u64| v as i16 as i64 as u64;
    h_lw, f_add_lw: 4, sx32;
    h_ld, f_add_ld: 8, |v: u64| v;
    h_lbu, f_add_lbu: 1, |v: u64| v;
    h_lhu, f_add_lhu: 2, |v: u64| v;
    h_lwu, f_add_lwu: 4, |v: u64| v;
}

/// Store handlers: [`Exec::store_fast`] inline; else [`store_miss`].
macro_rules! store {
    ($($name:ident: $size:expr;)*) => {$(
        fn $name<B: Bus>(ex: &mut Exec<'_, B>, block: &[Insn], i: usize, insn: &Insn) -> usize {
            let a = ex.x[usize::from(insn.rs1)].wrapping_add(insn.imm as i64 as u64);
            let v = ex.x[usize::from(insn.rs2)];
            if ex.store_fast(a, $size, v) {
                next(ex, block, i + 1)
            } else {
                // A jump to a function of its own: the fast path keeps no registers for it.
                store_miss(ex, block, i, insn)
            }
        }
    )*};
}

/// A store [`Exec::store_fast`] did not take: [`Exec::store`] (other regions, the bus, a
/// reservation to end, decoded code to drop), or the fault.
#[cold]
#[inline(never)]
fn store_miss<B: Bus>(ex: &mut Exec<'_, B>, block: &[Insn], i: usize, insn: &Insn) -> usize {
    let a = ex.x[usize::from(insn.rs1)].wrapping_add(insn.imm as i64 as u64);
    let v = ex.x[usize::from(insn.rs2)];
    let (size, _) = access_of(insn.op);
    if let Err(e) = ex.store(a, size, v) {
        return mem_fault(ex, i, insn, a, Access::Store, size, e);
    }
    if std::mem::take(&mut ex.code_changed) {
        // This block may be gone: go on at the next pc, looked up again.
        ex.exit = Slow::CodeChanged;
        return i;
    }
    next(ex, block, i + 1)
}

store! {
    h_sb: 1;
    h_sh: 2;
    h_sw: 4;
    h_sd: 8;
}

/// Fused pairs ([`Insn::dispatch`] above every operation's own value): two instructions that
/// compilers emit one after the other for one value, the second reading what the first wrote
/// into the same register and overwriting it, run by one handler (one dispatch, and the value
/// between them never goes through the register file). The pairs RISC-V cores fuse too:
/// a shift and an add (an index, as Zba's `shNadd`), a shift left and right (a zero-extension
/// or a field), a mask and a shift, `lui` and `addi[w]` (a constant), `auipc` and `addi` (an
/// address); and an `add` and a load through the sum (an indexed load: one of the most
/// frequent dependent pairs in this repository's DPA programs, which keeps the sum too).
const FUSE_SLLI_ADD: u8 = 240;
const FUSE_SLLI_SRLI: u8 = 241;
const FUSE_ANDI_SLLI: u8 = 242;
const FUSE_LUI_ADDI: u8 = 243;
const FUSE_LUI_ADDIW: u8 = 244;
const FUSE_AUIPC_ADDI: u8 = 245;
/// `add` and a load through its result (an indexed access: the sum is kept too).
const FUSE_ADD_LB: u8 = 246;
const FUSE_ADD_LH: u8 = 247;
const FUSE_ADD_LW: u8 = 248;
const FUSE_ADD_LD: u8 = 249;
const FUSE_ADD_LBU: u8 = 250;
const FUSE_ADD_LHU: u8 = 251;
const FUSE_ADD_LWU: u8 = 252;
/// The dispatch of a block's end marker ([`block_end`]).
const BLOCK_END: u8 = 253;
const _: () = assert!(
    (Op::Crc32cD as u8) < FUSE_SLLI_ADD,
    "fused pairs above every operation"
);

/// Marks the fused pairs of a block just decoded ([`FUSE_SLLI_ADD`] and the others): each
/// pair's first instruction gets the pair's handler, the second stays as it is (it runs alone
/// only if the block is cut between them). Pairs do not overlap.
fn fuse(block: &mut [Insn]) {
    let mut i = 0;
    while let (Some(&a), Some(&b)) = (block.get(i), block.get(i + 1)) {
        // The second overwrites what the first wrote, and reads it.
        let chained = a.rd != SINK && b.rd == a.rd;
        let kind = match (a.op, b.op) {
            (Op::Slli, Op::Add) if chained && (b.rs1 == a.rd || b.rs2 == a.rd) => FUSE_SLLI_ADD,
            (Op::Slli, Op::Srli) if chained && b.rs1 == a.rd => FUSE_SLLI_SRLI,
            (Op::Andi, Op::Slli) if chained && b.rs1 == a.rd => FUSE_ANDI_SLLI,
            (Op::Lui, Op::Addi) if chained && b.rs1 == a.rd => FUSE_LUI_ADDI,
            (Op::Lui, Op::Addiw) if chained && b.rs1 == a.rd => FUSE_LUI_ADDIW,
            (Op::Auipc, Op::Addi) if chained && b.rs1 == a.rd => FUSE_AUIPC_ADDI,
            // The load need not overwrite the sum: the pair writes both.
            (Op::Add, load) if a.rd != SINK && b.rs1 == a.rd => match load {
                Op::Lb => FUSE_ADD_LB,
                Op::Lh => FUSE_ADD_LH,
                Op::Lw => FUSE_ADD_LW,
                Op::Ld => FUSE_ADD_LD,
                Op::Lbu => FUSE_ADD_LBU,
                Op::Lhu => FUSE_ADD_LHU,
                Op::Lwu => FUSE_ADD_LWU,
                _ => {
                    i += 1;
                    continue;
                }
            },
            _ => {
                i += 1;
                continue;
            }
        };
        if let Some(first) = block.get_mut(i) {
            first.dispatch = kind;
        }
        i += 2;
    }
}

/// Fused-pair handlers: `$first` is the first instruction's value (from `v1`, its rs1's
/// value, `imm` and `pc`); `$second` the pair's result from `v` (that value), the second
/// instruction `b` and `other` (the second's operand that is not the first's result). A
/// block cut between the two (by the budget) runs the first alone.
macro_rules! fused {
    ($($name:ident: |$v1:ident, $imm:ident, $pc:ident| $first:expr,
        |$v:ident, $b:ident, $other:ident| $second:expr;)*) => {$(
        #[allow(unused_variables)]
        fn $name<B: Bus>(ex: &mut Exec<'_, B>, block: &[Insn], i: usize, insn: &Insn) -> usize {
            let $v1 = ex.x[usize::from(insn.rs1)];
            let $imm = insn.imm as i64 as u64;
            let $pc = || ex.base.wrapping_add(u64::from(insn.off));
            let $v: u64 = $first;
            let Some($b) = block.get(i + 1) else {
                ex.x[usize::from(insn.rd)] = $v;
                return next(ex, block, i + 1);
            };
            let $other = if $b.rs1 == insn.rd {
                ex.x[usize::from($b.rs2)]
            } else {
                ex.x[usize::from($b.rs1)]
            };
            let r: u64 = $second;
            ex.x[usize::from($b.rd)] = r;
            next(ex, block, i + 2)
        }
    )*};
}

fused! {
    // add rd, rd, rt or add rd, rt, rd (`other` is rt; rd itself when both operands are rd).
    f_slli_add: |v1, imm, pc| v1 << (imm & 63),
        |v, b, other| v.wrapping_add(if b.rs1 == b.rs2 { v } else { other });
    f_slli_srli: |v1, imm, pc| v1 << (imm & 63), |v, b, other| v >> (b.imm & 63);
    f_andi_slli: |v1, imm, pc| v1 & imm, |v, b, other| v << (b.imm & 63);
    f_lui_addi: |v1, imm, pc| imm, |v, b, other| v.wrapping_add(b.imm as i64 as u64);
    f_lui_addiw: |v1, imm, pc| imm, |v, b, other| sx32(v.wrapping_add(b.imm as i64 as u64));
    f_auipc_addi: |v1, imm, pc| pc().wrapping_add(imm),
        |v, b, other| v.wrapping_add(b.imm as i64 as u64);
}

/// What [`slow_op`] did.
enum Slow {
    /// Its result is in place; go on.
    Done,
    /// It stored into decoded code (maybe this block's): go on at the next pc, looked up again.
    CodeChanged,
    /// `fence.i`: empty the cache, look the next pc up again.
    FenceI,
    /// Leave before the instruction (it did not retire).
    Stop(Stop),
    /// Leave after the instruction (it retired).
    StopAfter(Stop),
}

/// The instructions without a handler of their own (see [`Handlers`]): system (`pause`),
/// atomics, division, high multiplies, the rarer bit manipulation. `instret` is the count
/// before this instruction.
#[inline(never)]
fn slow_op<B: Bus>(ex: &mut Exec<'_, B>, insn: Insn, pc: u64, instret: u64) -> Slow {
    let rd = usize::from(insn.rd);
    let v1 = ex.x[usize::from(insn.rs1)];
    let v2 = ex.x[usize::from(insn.rs2)];
    let imm = insn.imm as i64 as u64;
    macro_rules! mem_fault {
        ($addr:expr, $access:expr, $size:expr, $e:expr) => {
            return Slow::Stop(Stop::Fault(Fault::Memory {
                pc,
                addr: $addr,
                access: $access,
                size: $size,
                error: $e,
            }))
        };
    }
    // A memory access whose value goes to rd, or its fault; then whether it dropped code.
    macro_rules! to_rd {
        ($r:expr, $addr:expr, $access:expr, $size:expr) => {{
            match $r {
                Ok(v) => ex.x[rd] = v,
                Err(e) => mem_fault!($addr, $access, $size, e),
            }
            if std::mem::take(&mut ex.code_changed) {
                return Slow::CodeChanged;
            }
        }};
    }
    macro_rules! amo {
        ($size:expr, $op:expr) => {
            to_rd!(ex.amo_rd(v1, $size, $op, v2), v1, Access::Store, $size)
        };
    }
    match insn.op {
        Op::Illegal => {
            return Slow::Stop(Stop::Fault(Fault::IllegalInstruction {
                pc,
                encoding: insn.encoding(),
            }))
        }
        Op::Fence => {
            let sets = insn.imm as u32;
            ex.bus.fence((sets >> 4) as u8 & 0xf, sets as u8 & 0xf);
            // `pause` (Zihintpause) is the fence with predecessor w and no successor.
            if sets & 0xff == PAUSE_SETS && ex.bus.pause() {
                return Slow::StopAfter(Stop::Pause);
            }
        }
        Op::FenceI => return Slow::FenceI,
        Op::Ecall => return Slow::StopAfter(Stop::Ecall),
        Op::Ebreak => return Slow::Stop(Stop::Ebreak),
        Op::Rdcycle | Op::Rdinstret => ex.x[rd] = instret,
        Op::Rdtime => ex.x[rd] = ex.bus.time(),
        Op::LrW => to_rd!(ex.lr(v1, 4), v1, Access::Load, 4),
        Op::LrD => to_rd!(ex.lr(v1, 8), v1, Access::Load, 8),
        Op::ScW => to_rd!(ex.sc(v1, 4, v2), v1, Access::Store, 4),
        Op::ScD => to_rd!(ex.sc(v1, 8, v2), v1, Access::Store, 8),
        Op::AmoswapW => amo!(4, AmoOp::Swap),
        Op::AmoaddW => amo!(4, AmoOp::Add),
        Op::AmoxorW => amo!(4, AmoOp::Xor),
        Op::AmoandW => amo!(4, AmoOp::And),
        Op::AmoorW => amo!(4, AmoOp::Or),
        Op::AmominW => amo!(4, AmoOp::Min),
        Op::AmomaxW => amo!(4, AmoOp::Max),
        Op::AmominuW => amo!(4, AmoOp::Minu),
        Op::AmomaxuW => amo!(4, AmoOp::Maxu),
        Op::AmoswapD => amo!(8, AmoOp::Swap),
        Op::AmoaddD => amo!(8, AmoOp::Add),
        Op::AmoxorD => amo!(8, AmoOp::Xor),
        Op::AmoandD => amo!(8, AmoOp::And),
        Op::AmoorD => amo!(8, AmoOp::Or),
        Op::AmominD => amo!(8, AmoOp::Min),
        Op::AmomaxD => amo!(8, AmoOp::Max),
        Op::AmominuD => amo!(8, AmoOp::Minu),
        Op::AmomaxuD => amo!(8, AmoOp::Maxu),
        Op::Mulh => ex.x[rd] = ((i128::from(v1 as i64) * i128::from(v2 as i64)) >> 64) as u64,
        Op::Mulhsu => ex.x[rd] = ((i128::from(v1 as i64) * i128::from(v2)) >> 64) as u64,
        Op::Mulhu => ex.x[rd] = ((u128::from(v1) * u128::from(v2)) >> 64) as u64,
        Op::Div => {
            ex.x[rd] = if v2 == 0 {
                u64::MAX
            } else {
                (v1 as i64).wrapping_div(v2 as i64) as u64
            };
        }
        Op::Divu => ex.x[rd] = v1.checked_div(v2).unwrap_or(u64::MAX),
        Op::Rem => {
            ex.x[rd] = if v2 == 0 {
                v1
            } else {
                (v1 as i64).wrapping_rem(v2 as i64) as u64
            };
        }
        Op::Remu => ex.x[rd] = v1.checked_rem(v2).unwrap_or(v1),
        Op::Divw => {
            let (a, b) = (v1 as i32, v2 as i32);
            ex.x[rd] = (if b == 0 { -1 } else { a.wrapping_div(b) }) as i64 as u64;
        }
        Op::Divuw => {
            let (a, b) = (v1 as u32, v2 as u32);
            ex.x[rd] = sx32(u64::from(a.checked_div(b).unwrap_or(u32::MAX)));
        }
        Op::Remw => {
            let (a, b) = (v1 as i32, v2 as i32);
            ex.x[rd] = (if b == 0 { a } else { a.wrapping_rem(b) }) as i64 as u64;
        }
        Op::Remuw => {
            let (a, b) = (v1 as u32, v2 as u32);
            ex.x[rd] = sx32(u64::from(a.checked_rem(b).unwrap_or(a)));
        }
        // Zba / Zbb / Zbc / Zbp / Zbr / Zbs: register results only.
        _ => ex.x[rd] = bitmanip(insn.op, v1, v2, imm),
    }
    Slow::Done
}
