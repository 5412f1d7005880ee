//! The interpreter loop.
//!
//! Registers live in a local 64-entry array during a run (index 32 is the sink for writes to
//! x0; indices are masked with 63 so no bounds check remains), `pc` and the retired count in
//! locals. The outer loop finds (or decodes) the basic block at `pc` in the [`CodeCache`] and
//! cuts it to the remaining budget; the inner loop walks the block by index and dispatches on
//! each operation. Memory goes through the last [`RamRegion`] used for loads / stores /
//! fetches when it covers the access, otherwise through the [`Bus`].

use super::bitmanip as bm;
use super::cache::{to_page_end, CodeCache, MAX_BLOCK, NO_PAGE, PAGE_SHIFT};
use super::decode::{decode, insn_len, Op, PAUSE_SETS};
use super::hart::{Access, Bus, Fault, Hart, MemError, Stop};
use super::ram::{AmoOp, RamRegion};

struct Exec<'a, B: Bus> {
    bus: &'a mut B,
    cache: &'a mut CodeCache,
    /// Last region a load hit (readable).
    rd_region: RamRegion,
    /// Last region a store hit (writable).
    wr_region: RamRegion,
    /// Last region an instruction was fetched from (executable).
    x_region: RamRegion,
    /// A page the bus said has no RAM region (so it is not asked again at once).
    no_ram_vpn: u64,
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
        if let Some(r) = self.find_region(addr) {
            if r.perms().read {
                if let Some(v) = r.load(addr, size) {
                    self.rd_region = r;
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

    #[inline(never)]
    fn store_slow(&mut self, addr: u64, size: u8, value: u64) -> Result<(), MemError> {
        if addr & (u64::from(size) - 1) != 0 {
            return Err(MemError::Misaligned);
        }
        if let Some(r) = self.find_region(addr) {
            if r.perms().write && r.store(addr, size, value) {
                self.wr_region = r;
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
                    self.wr_region = r;
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
    fn build(&mut self, vpn: u64, pc: u64) -> Result<(usize, usize, usize), Fault> {
        if !self.cache.has_room() {
            self.cache.clear();
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
        let start = self.cache.code_len();
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
            let insn = decode(raw);
            self.cache.push_insn(insn);
            n += 1;
            off += len;
            if ends_block(insn.op) || crosses {
                break;
            }
        }
        let len = self.cache.finish_block(page, pc, start);
        Ok((page, start, len))
    }
}

#[cfg(feature = "jit")]
impl<B: Bus> Exec<'_, B> {
    /// The block at `pc` (arena index `start`) with the JIT: counts an entry, compiles its
    /// region when it became hot, runs the compiled code with the registers `x` and at most
    /// `left` instructions.
    fn jit_block(&mut self, x: &mut [u64; 64], pc: u64, start: usize, left: u64) -> JitStep {
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
                let index = jit.obtain(pc, || self.region(pc));
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
            x: x.as_mut_ptr(),
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
    fn region(&mut self, entry: u64) -> Vec<crate::jit::GuestBlock> {
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
                None => match self.build(vpn, pc) {
                    Ok((_, start, len)) => (start, len),
                    Err(_) => continue,
                },
            };
            let mut insns = Vec::with_capacity(len);
            let mut a = pc;
            for i in start..start + len {
                let Some(insn) = self.cache.insn(i) else {
                    break;
                };
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
        ex.wr_region = r;
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
    let mut ex = Exec {
        bus,
        cache,
        rd_region: RamRegion::EMPTY,
        wr_region: RamRegion::EMPTY,
        x_region: RamRegion::EMPTY,
        no_ram_vpn: NO_PAGE,
        recent: hint,
        recent_next: 0,
        resv: hart.reservation,
        code_changed: false,
        #[cfg(feature = "jit")]
        jit_rd: None,
    };
    let mut x = [0u64; 64];
    x[1..32].copy_from_slice(&hart.x[1..32]);
    let mut pc = hart.pc;
    let mut n: u64 = 0;
    let instret0 = hart.instret;
    let mut cur_vpn = NO_PAGE;
    let mut cur_page = 0usize;
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
            None => match ex.build(vpn, pc) {
                Ok((page, start, len)) => {
                    cur_page = page;
                    (start, len)
                }
                Err(f) => break Stop::Fault(f),
            },
        };
        #[cfg(feature = "jit")]
        if !interpret_one && ex.cache.jit.is_some() {
            match ex.jit_block(&mut x, pc, start, max_insns - n) {
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
        #[cfg_attr(not(feature = "jit"), allow(unused_mut))]
        let mut end = start + len.min(usize::try_from(max_insns - n).unwrap_or(usize::MAX));
        #[cfg(feature = "jit")]
        if std::mem::take(&mut interpret_one) {
            end = end.min(start + 1);
        }
        match run_block(&mut ex, &mut x, &mut pc, &mut n, instret0, start, end) {
            BlockEnd::Next => {}
            BlockEnd::Relookup => cur_vpn = NO_PAGE,
            BlockEnd::Stop(stop) => break stop,
        }
    };

    hart.x[0] = 0;
    hart.x[1..32].copy_from_slice(&x[1..32]);
    hart.pc = pc;
    hart.instret = instret0.wrapping_add(n);
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
/// under it), or a stop of the run.
enum BlockEnd {
    Next,
    Relookup,
    Stop(Stop),
}

/// Runs the decoded instructions `start..end` of one block from `*pc_out`, counting them in
/// `*n_out` (both written back at every exit). Inlined into [`run_cached`]: one block is one
/// pass of its loop.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn run_block<B: Bus>(
    ex: &mut Exec<'_, B>,
    x: &mut [u64; 64],
    pc_out: &mut u64,
    n_out: &mut u64,
    instret0: u64,
    start: usize,
    mut end: usize,
) -> BlockEnd {
    let mut pc = *pc_out;
    let mut n = *n_out;
    let mut relookup = false;
    macro_rules! exit {
        ($stop:expr) => {{
            *pc_out = pc;
            *n_out = n;
            return BlockEnd::Stop($stop);
        }};
    }
    let mut i = start;
    while i < end {
        let Some(insn) = ex.cache.insn(i) else {
            // Cannot happen (entries only name decoded blocks); start over to be safe.
            ex.cache.clear();
            *pc_out = pc;
            *n_out = n;
            return BlockEnd::Relookup;
        };
        i += 1;
        let rd = usize::from(insn.rd & 63);
        let v1 = x[usize::from(insn.rs1 & 63)];
        let v2 = x[usize::from(insn.rs2 & 63)];
        let imm = insn.imm as i64 as u64;
        let next = pc.wrapping_add(u64::from(insn.len));
        let mut npc = next;

        macro_rules! mem_fault {
            ($addr:expr, $access:expr, $size:expr, $e:expr) => {
                exit!(Stop::Fault(Fault::Memory {
                    pc,
                    addr: $addr,
                    access: $access,
                    size: $size,
                    error: $e,
                }))
            };
        }
        // A store dropped decoded code (maybe this block's): after this instruction, look
        // the pc up again.
        macro_rules! code_check {
            () => {
                if ex.code_changed {
                    ex.code_changed = false;
                    end = i;
                }
            };
        }
        macro_rules! load {
            ($size:expr, $ext:expr) => {{
                let a = v1.wrapping_add(imm);
                match ex.load(a, $size) {
                    Ok(v) => x[rd] = $ext(v),
                    Err(e) => mem_fault!(a, Access::Load, $size, e),
                }
            }};
        }
        macro_rules! store {
            ($size:expr) => {{
                let a = v1.wrapping_add(imm);
                if let Err(e) = ex.store(a, $size, v2) {
                    mem_fault!(a, Access::Store, $size, e);
                }
                code_check!();
            }};
        }
        macro_rules! branch {
            ($cond:expr) => {
                if $cond {
                    npc = pc.wrapping_add(imm);
                }
            };
        }
        macro_rules! amo {
            ($size:expr, $op:expr) => {{
                to_rd!(ex.amo_rd(v1, $size, $op, v2), v1, Access::Store, $size);
                code_check!();
            }};
        }
        // A memory access whose value goes to rd, or its fault.
        macro_rules! to_rd {
            ($r:expr, $addr:expr, $access:expr, $size:expr) => {
                match $r {
                    Ok(v) => x[rd] = v,
                    Err(e) => mem_fault!($addr, $access, $size, e),
                }
            };
        }

        match insn.op {
            Op::Illegal => {
                exit!(Stop::Fault(Fault::IllegalInstruction {
                    pc,
                    encoding: insn.encoding(),
                }))
            }
            Op::Auipc => x[rd] = pc.wrapping_add(imm),
            Op::Jal => {
                x[rd] = next;
                npc = pc.wrapping_add(imm);
            }
            Op::Jalr => {
                npc = v1.wrapping_add(imm) & !1;
                x[rd] = next;
            }
            Op::Beq => branch!(v1 == v2),
            Op::Bne => branch!(v1 != v2),
            Op::Blt => branch!((v1 as i64) < (v2 as i64)),
            Op::Bge => branch!((v1 as i64) >= (v2 as i64)),
            Op::Bltu => branch!(v1 < v2),
            Op::Bgeu => branch!(v1 >= v2),
            Op::Lb => load!(1, |v: u64| v as i8 as i64 as u64),
            Op::Lh => load!(2, |v: u64| v as i16 as i64 as u64),
            Op::Lw => load!(4, sx32),
            Op::Ld => load!(8, |v: u64| v),
            Op::Lbu => load!(1, |v: u64| v),
            Op::Lhu => load!(2, |v: u64| v),
            Op::Lwu => load!(4, |v: u64| v),
            Op::Sb => store!(1),
            Op::Sh => store!(2),
            Op::Sw => store!(4),
            Op::Sd => store!(8),
            Op::Fence => {
                let sets = insn.imm as u32;
                ex.bus.fence((sets >> 4) as u8 & 0xf, sets as u8 & 0xf);
                // `pause` (Zihintpause) is the fence with predecessor w and no successor.
                if sets & 0xff == PAUSE_SETS && ex.bus.pause() {
                    pc = next;
                    n += 1;
                    exit!(Stop::Pause);
                }
            }
            Op::FenceI => {
                ex.cache.clear();
                relookup = true;
                end = i;
            }
            Op::Ecall => {
                pc = next;
                n += 1;
                exit!(Stop::Ecall);
            }
            Op::Ebreak => exit!(Stop::Ebreak),
            Op::Rdcycle | Op::Rdinstret => x[rd] = instret0.wrapping_add(n),
            Op::Rdtime => x[rd] = ex.bus.time(),
            Op::LrW => to_rd!(ex.lr(v1, 4), v1, Access::Load, 4),
            Op::LrD => to_rd!(ex.lr(v1, 8), v1, Access::Load, 8),
            Op::ScW => {
                to_rd!(ex.sc(v1, 4, v2), v1, Access::Store, 4);
                code_check!();
            }
            Op::ScD => {
                to_rd!(ex.sc(v1, 8, v2), v1, Access::Store, 8);
                code_check!();
            }
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
            Op::Lui => x[rd] = imm,
            Op::Addi => x[rd] = v1.wrapping_add(imm),
            Op::Slti => x[rd] = u64::from((v1 as i64) < (imm as i64)),
            Op::Sltiu => x[rd] = u64::from(v1 < imm),
            Op::Xori => x[rd] = v1 ^ imm,
            Op::Ori => x[rd] = v1 | imm,
            Op::Andi => x[rd] = v1 & imm,
            Op::Slli => x[rd] = v1 << (imm & 63),
            Op::Srli => x[rd] = v1 >> (imm & 63),
            Op::Srai => x[rd] = ((v1 as i64) >> (imm & 63)) as u64,
            Op::Add => x[rd] = v1.wrapping_add(v2),
            Op::Sub => x[rd] = v1.wrapping_sub(v2),
            Op::Sll => x[rd] = v1 << (v2 & 63),
            Op::Slt => x[rd] = u64::from((v1 as i64) < (v2 as i64)),
            Op::Sltu => x[rd] = u64::from(v1 < v2),
            Op::Xor => x[rd] = v1 ^ v2,
            Op::Srl => x[rd] = v1 >> (v2 & 63),
            Op::Sra => x[rd] = ((v1 as i64) >> (v2 & 63)) as u64,
            Op::Or => x[rd] = v1 | v2,
            Op::And => x[rd] = v1 & v2,
            Op::Addiw => x[rd] = sx32(v1.wrapping_add(imm)),
            Op::Slliw => x[rd] = sx32(u64::from((v1 as u32) << (imm & 31))),
            Op::Srliw => x[rd] = sx32(u64::from((v1 as u32) >> (imm & 31))),
            Op::Sraiw => x[rd] = ((v1 as i32) >> (imm & 31)) as i64 as u64,
            Op::Addw => x[rd] = sx32(v1.wrapping_add(v2)),
            Op::Subw => x[rd] = sx32(v1.wrapping_sub(v2)),
            Op::Sllw => x[rd] = sx32(u64::from((v1 as u32) << (v2 & 31))),
            Op::Srlw => x[rd] = sx32(u64::from((v1 as u32) >> (v2 & 31))),
            Op::Sraw => x[rd] = ((v1 as i32) >> (v2 & 31)) as i64 as u64,
            Op::Mul => x[rd] = v1.wrapping_mul(v2),
            Op::Mulh => x[rd] = ((i128::from(v1 as i64) * i128::from(v2 as i64)) >> 64) as u64,
            Op::Mulhsu => x[rd] = ((i128::from(v1 as i64) * i128::from(v2)) >> 64) as u64,
            Op::Mulhu => x[rd] = ((u128::from(v1) * u128::from(v2)) >> 64) as u64,
            Op::Div => {
                x[rd] = if v2 == 0 {
                    u64::MAX
                } else {
                    (v1 as i64).wrapping_div(v2 as i64) as u64
                };
            }
            Op::Divu => x[rd] = v1.checked_div(v2).unwrap_or(u64::MAX),
            Op::Rem => {
                x[rd] = if v2 == 0 {
                    v1
                } else {
                    (v1 as i64).wrapping_rem(v2 as i64) as u64
                };
            }
            Op::Remu => x[rd] = v1.checked_rem(v2).unwrap_or(v1),
            Op::Mulw => x[rd] = sx32(v1.wrapping_mul(v2)),
            Op::Divw => {
                let (a, b) = (v1 as i32, v2 as i32);
                x[rd] = (if b == 0 { -1 } else { a.wrapping_div(b) }) as i64 as u64;
            }
            Op::Divuw => {
                let (a, b) = (v1 as u32, v2 as u32);
                x[rd] = sx32(u64::from(a.checked_div(b).unwrap_or(u32::MAX)));
            }
            Op::Remw => {
                let (a, b) = (v1 as i32, v2 as i32);
                x[rd] = (if b == 0 { a } else { a.wrapping_rem(b) }) as i64 as u64;
            }
            Op::Remuw => {
                let (a, b) = (v1 as u32, v2 as u32);
                x[rd] = sx32(u64::from(a.checked_rem(b).unwrap_or(a)));
            }
            // Zba / Zbb / Zbc / Zbp / Zbr / Zbs: register results only.
            _ => x[rd] = bitmanip(insn.op, v1, v2, imm),
        }
        pc = npc;
        n += 1;
    }
    *pc_out = pc;
    *n_out = n;
    if relookup {
        BlockEnd::Relookup
    } else {
        BlockEnd::Next
    }
}
