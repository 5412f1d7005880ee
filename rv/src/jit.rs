//! A Cranelift JIT for hot code (feature `jit`): regions of basic blocks within one guest page,
//! compiled to host code.
//!
//! The interpreter stays the reference: the JIT compiles only what it can do exactly and hands
//! everything else back to it, one instruction at a time.
//!
//! - **Budgets stay exact.** Each guest block of a region is entered only when the remaining
//!   budget covers all of it (its length is subtracted on entry); otherwise the region exits
//!   and the interpreter runs the partial block. Side exits give back what was not retired.
//! - **Faults stay exact.** A load goes inline only when it falls, naturally aligned (as
//!   [`crate::RamRegion::load`] checks), in one of the RAM regions the interpreter has met in
//!   this run; anything else exits *before* the load and the interpreter performs it, faulting
//!   or going through the bus as it would have. A store goes inline the same way when its
//!   region needs none of the interpreter's after-store work: the code cache holds no
//!   decoded instruction there and no LR reservation is held (checked on entry; neither can
//!   appear inside compiled code, which decodes nothing and takes no reservation).
//!   Other stores call back into the interpreter's own store path (region fast path,
//!   reservation, code-cache invalidation); a store the fast path cannot do exits before it
//!   the same way, and a store that dropped decoded code ends the region after it. `fence`
//!   calls the bus's fence.
//! - **What is compiled:** RV64I loads, stores, ALU, branches and jumps, `fence` (not `pause`),
//!   M (`mulhsu` aside), and the Zbb / Zbs operations with a one-to-one Cranelift
//!   instruction. Everything else (`ecall`, `ebreak`, `pause`, `fence.i`, counters, atomics,
//!   LR/SC, the draft bit-manipulation operations, illegal encodings, an instruction across a
//!   page end) ends the compiled code before it: the interpreter runs it.
//! - **Registers** are the region's variables: it loads the ones it reads from the
//!   interpreter's array where it is entered and keeps them in host registers across its
//!   blocks and loops; each guest block stores what it changed where it ends or leaves, and
//!   a call back into the interpreter (a store it hands over, a `fence`) has the registers
//!   stored before it and loaded again after it, so that no guest value lives across a call.
//! - **Hotness and invalidation** live beside the decoded blocks (the code cache's
//!   per-instruction JIT state): a block entered [`DEFAULT_HOT`] times has its region
//!   compiled; invalidating or clearing decoded code forgets its compiled state with it.
//!   Compiled regions live in a [`JitShare`], by entry address: the caches of harts running
//!   one read-only program (the DPA's EUs running a process) share one, so a region is
//!   compiled once, not once per EU. Host code stays allocated (a region that invalidated
//!   itself by a store returns safely) until the last cache sharing it goes. Compile work is
//!   bounded per program: a share compiles at most 1024 regions and 8 Ki guest instructions
//!   in all, and one entry address at most 4 times (code that keeps rewriting itself stays
//!   in the interpreter).
//!
//! The differential tests run random programs of the compiled operations (`tests/jit.rs`),
//! the `rv_exec` fuzz entry, the unit tests and the bare corpus through the JIT and compare
//! every register, the pc, the retired count, memory and the stop with the interpreter (and
//! the corpus with qemu).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{
    types, AbiParam, Block, InstBuilder, MemFlagsData, Signature, Type, Value,
};
use cranelift_codegen::isa::TargetFrontendConfig;
use cranelift_codegen::settings::{self, Configurable};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext, Variable};
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{default_libcall_names, Linkage, Module};

use crate::decode::{Insn, Op, PAUSE_SETS, SINK};

/// The code cache's page (`cache::PAGE_SHIFT`, which checks that the two agree): regions
/// stay within one.
pub(crate) const PAGE_SHIFT: u32 = 12;

/// Entries into a region's start before it is compiled (by default).
pub(crate) const DEFAULT_HOT: u32 = 32;
/// Most guest blocks in one region, and instructions.
pub(crate) const MAX_REGION_BLOCKS: usize = 16;
pub(crate) const MAX_REGION_INSNS: usize = 256;
/// Most regions one share compiles (bounds its host memory; entries past it run in the
/// interpreter).
const MAX_MODULE_REGIONS: usize = 1024;
/// Most guest instructions one share compiles, over all its regions: bounds compile time and
/// host memory per program whatever its code does (a program that keeps storing into its own
/// page and branching back had a 256-instruction region compiled for every two it ran: 43 s
/// and 398 MB for one fuzz input the interpreter ran in 0.05 s). The DPA programs of this
/// repository's tests compile at most 791 (measured 2026-11-28), a tenth of this.
pub(crate) const MAX_SHARE_INSNS: usize = 8 * 1024;
/// Most times one entry address is compiled (its page's code changed in between): code that
/// keeps rewriting itself runs in the interpreter after that.
pub(crate) const MAX_RECOMPILES: u8 = 4;

/// What compiled code reads and writes (layout shared with the generated code: offsets below).
#[repr(C)]
pub(crate) struct JitCtx {
    /// The interpreter's register array (x1 to x31 at their own index, 32 the x0 sink).
    pub x: *mut u64,
    /// In: the instructions the run may still retire. Out: what is left of them.
    pub left: u64,
    /// Out: where the interpreter goes on.
    pub pc: u64,
    /// Readable RAM regions: guest base, length, host pointer, and the length within which
    /// compiled code stores there itself (the length, or 0) each; length 0 when none. A
    /// region takes stores inline only when it is writable, the code cache holds no decoded
    /// instruction in it and no LR reservation is held: a store there needs none of the
    /// interpreter's after-store work.
    pub rd: [u64; REGION_WORDS * LOAD_REGIONS],
    /// The interpreter's state, for the callbacks.
    pub exec: *mut u8,
    /// `extern "C" fn(exec, addr, value, size) -> u64`: 0 stored, 1 stored and decoded code
    /// dropped (leave after the store), 2 not stored (leave before it).
    pub store: usize,
    /// `extern "C" fn(exec, sets) -> u64`: a `fence` (the bus's, with its sets).
    pub fence: usize,
}

/// Readable RAM regions a compiled load (or store) looks in (the interpreter's last ones).
pub(crate) const LOAD_REGIONS: usize = 4;
/// Words per region in [`JitCtx::rd`]: base, length, host pointer, store length.
pub(crate) const REGION_WORDS: usize = 4;
/// The store length's word in a region of [`JitCtx::rd`].
pub(crate) const STORE_LEN: usize = 3;

const OFF_X: i32 = 0;
const OFF_LEFT: i32 = 8;
const OFF_PC: i32 = 16;
const OFF_RD: i32 = 24;
const OFF_EXEC: i32 = OFF_RD + 8 * (REGION_WORDS * LOAD_REGIONS) as i32;
const OFF_STORE: i32 = OFF_EXEC + 8;
const OFF_FENCE: i32 = OFF_STORE + 8;

/// Which length of a `JitCtx::rd` region an access must fall within: its byte offset in the
/// region's words.
#[derive(Clone, Copy)]
enum RegionLen {
    /// The region's length (loads).
    Load = 8,
    /// Its store length (the length, or 0 where stores go through the interpreter).
    Store = 8 * STORE_LEN as isize,
}

/// How compiled code left: go on at `ctx.pc` (look for compiled code there), or run one
/// instruction at `ctx.pc` in the interpreter first.
pub(crate) const EXIT_GO_ON: u64 = 0;
pub(crate) const EXIT_INTERPRET: u64 = 1;

/// Compiled code: `extern "C" fn(&mut JitCtx) -> exit`.
pub(crate) type JitFn = unsafe extern "C" fn(*mut JitCtx) -> u64;

/// One guest block of a region: its instructions with their addresses.
pub(crate) struct GuestBlock {
    pub pc: u64,
    pub insns: Vec<(u64, Insn)>,
}

/// Compiled regions and their compiler, which several code caches may share
/// ([`JitShare`]): regions are found by their entry address, so a cache finds what another
/// compiled. Host code lives as long as the last cache that shares it.
struct JitCore {
    /// Freed by hand on drop (`JITModule` leaks its code memory when dropped).
    module: std::mem::ManuallyDrop<JITModule>,
    /// Entry address -> its region's code, or `None` when it does not compile.
    entries: HashMap<u64, Option<JitFn>>,
    /// Regions compiled into `module` (at most [`MAX_MODULE_REGIONS`]; then no more).
    regions: usize,
    /// Guest instructions compiled into `module` (at most [`MAX_SHARE_INSNS`]).
    insns: usize,
    /// Entry address -> times a region was compiled there (at most [`MAX_RECOMPILES`]); kept
    /// across invalidations.
    compiles: HashMap<u64, u8>,
    ctx: cranelift_codegen::Context,
    fctx: FunctionBuilderContext,
    next_name: u32,
}

impl Drop for JitCore {
    fn drop(&mut self) {
        // SAFETY: `module` is taken once, here, and never used after.
        let m = unsafe { std::mem::ManuallyDrop::take(&mut self.module) };
        // SAFETY: the last cache sharing the core is gone: none of its code can run any more
        // (running code holds its cache, and so the core, alive).
        unsafe { m.free_memory() };
    }
}

/// Compiled code shared by the code caches of harts running the same program
/// ([`CodeCache::set_jit_shared`](crate::CodeCache::set_jit_shared)): what one compiles, the
/// others run. Only for code no hart stores into (a read-only text, as a DPA process's is):
/// a store drops the region from the share and from the storing hart's cache, not from the
/// copies other caches already took.
#[derive(Clone)]
pub struct JitShare(Arc<Mutex<JitCore>>);

impl std::fmt::Debug for JitShare {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let core = lock(&self.0);
        f.debug_struct("JitShare")
            .field("regions", &core.regions)
            .field("insns", &core.insns)
            .field("entries", &core.entries.len())
            .finish()
    }
}

impl JitShare {
    /// Regions compiled into this share so far.
    pub fn regions(&self) -> usize {
        lock(&self.0).regions
    }

    /// Guest instructions compiled into this share so far (at most 8 Ki: past that, code
    /// runs in the interpreter).
    pub fn compiled_insns(&self) -> usize {
        lock(&self.0).insns
    }

    /// An empty share; `None` when the host has no Cranelift backend.
    pub fn new() -> Option<JitShare> {
        let module = new_module()?;
        let ctx = module.make_context();
        Some(JitShare(Arc::new(Mutex::new(JitCore {
            module: std::mem::ManuallyDrop::new(module),
            entries: HashMap::new(),
            regions: 0,
            insns: 0,
            compiles: HashMap::new(),
            ctx,
            fctx: FunctionBuilderContext::new(),
            next_name: 0,
        }))))
    }
}

fn lock(m: &Mutex<JitCore>) -> std::sync::MutexGuard<'_, JitCore> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The JIT state of one code cache. Which of its blocks are hot, compiled or not compilable
/// is kept beside the decoded blocks ([`CodeCache`](crate::CodeCache)'s per-instruction JIT
/// state, naming an index into `local`), so a dispatch costs an index, and a block dropped by
/// invalidation takes its state with it.
pub(crate) struct Jit {
    hot: u32,
    share: JitShare,
    /// The compiled regions this cache's blocks name.
    local: Vec<JitFn>,
}

impl std::fmt::Debug for Jit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Jit")
            .field("hot", &self.hot)
            .field("local", &self.local.len())
            .field("share", &self.share)
            .finish()
    }
}

fn new_module() -> Option<JITModule> {
    let mut flags = settings::builder();
    flags.set("opt_level", "speed").ok()?;
    flags.set("enable_verifier", "false").ok()?;
    flags.set("use_colocated_libcalls", "false").ok()?;
    flags.set("is_pic", "false").ok()?;
    let isa = cranelift_native::builder()
        .ok()?
        .finish(settings::Flags::new(flags))
        .ok()?;
    Some(JITModule::new(JITBuilder::with_isa(
        isa,
        default_libcall_names(),
    )))
}

impl Jit {
    /// A JIT compiling regions entered `hot` times into `share` (or a share of its own);
    /// `None` when the host has no Cranelift backend.
    pub(crate) fn new(hot: u32, share: Option<&JitShare>) -> Option<Jit> {
        let share = match share {
            Some(s) => s.clone(),
            None => JitShare::new()?,
        };
        Some(Jit {
            // Counts stay below `JIT_COMPILED`'s bit (`CodeCache::jit_state`).
            hot: hot.clamp(1, 1 << 30),
            share,
            local: Vec::new(),
        })
    }

    /// The share this JIT compiles into.
    pub(crate) fn share(&self) -> JitShare {
        self.share.clone()
    }

    /// Entries into a block before its region is compiled.
    pub(crate) fn hot(&self) -> u32 {
        self.hot
    }

    /// Compiled region `index` (of this cache).
    pub(crate) fn func(&self, index: u32) -> Option<JitFn> {
        self.local.get(index as usize).copied()
    }

    /// Forgets the regions this cache named (its blocks' states are gone): the share keeps
    /// them for the others.
    pub(crate) fn forget_local(&mut self) {
        self.local.clear();
    }

    /// Drops the shared regions entered in guest page `vpn` (its code changed).
    pub(crate) fn invalidate_page(&mut self, vpn: u64) {
        lock(&self.share.0)
            .entries
            .retain(|pc, _| pc >> PAGE_SHIFT != vpn);
    }

    /// Drops every shared region (the code may have changed anywhere).
    pub(crate) fn invalidate_all(&mut self) {
        lock(&self.share.0).entries.clear();
    }

    /// The region entered at `pc`: found in the share, or compiled from `region()`'s blocks
    /// (the first is the entry) and put there. Its index for this cache, `None` when it does
    /// not compile (or the share is full).
    pub(crate) fn obtain(
        &mut self,
        pc: u64,
        region: impl FnOnce() -> Vec<GuestBlock>,
    ) -> Option<u32> {
        let known = lock(&self.share.0).entries.get(&pc).copied();
        let f = match known {
            Some(found) => found,
            None => {
                // Gathered without the lock (gathering decodes into this cache).
                let blocks = region();
                let mut core = lock(&self.share.0);
                let size: usize = blocks.iter().map(|b| b.insns.len()).sum();
                let f = match core.entries.get(&pc) {
                    // Another cache compiled it meanwhile.
                    Some(found) => *found,
                    None if core.regions >= MAX_MODULE_REGIONS
                        || core.insns + size > MAX_SHARE_INSNS
                        || core.compiles.get(&pc).is_some_and(|&n| n >= MAX_RECOMPILES)
                        || blocks.first().is_none_or(|b| compilable_prefix(b) == 0) =>
                    {
                        None
                    }
                    None => {
                        *core.compiles.entry(pc).or_insert(0) += 1;
                        let f = core.compile(&blocks);
                        if f.is_some() {
                            core.regions += 1;
                            core.insns += size;
                        }
                        f
                    }
                };
                core.entries.insert(pc, f);
                f
            }
        };
        self.local.push(f?);
        (self.local.len() - 1).try_into().ok()
    }
}

impl JitCore {
    fn compile(&mut self, blocks: &[GuestBlock]) -> Option<JitFn> {
        let ptr = self.module.target_config().pointer_type();
        let mut sig = self.module.make_signature();
        sig.params.push(AbiParam::new(ptr));
        sig.returns.push(AbiParam::new(types::I64));
        let name = format!("r{}", self.next_name);
        self.next_name = self.next_name.wrapping_add(1);
        let id = self
            .module
            .declare_function(&name, Linkage::Local, &sig)
            .ok()?;
        self.module.clear_context(&mut self.ctx);
        self.ctx.func.signature = sig.clone();
        let mut store_sig = self.module.make_signature();
        for _ in 0..4 {
            store_sig.params.push(AbiParam::new(types::I64));
        }
        store_sig.returns.push(AbiParam::new(types::I64));
        let mut fence_sig = self.module.make_signature();
        fence_sig.params.push(AbiParam::new(types::I64));
        fence_sig.params.push(AbiParam::new(types::I64));
        fence_sig.returns.push(AbiParam::new(types::I64));
        {
            let config = self.module.target_config();
            let b = FunctionBuilder::new(&mut self.ctx.func, &mut self.fctx);
            Gen::new(b, store_sig, fence_sig).region(blocks, config)?;
        }
        self.module.define_function(id, &mut self.ctx).ok()?;
        self.module.clear_context(&mut self.ctx);
        self.module.finalize_definitions().ok()?;
        let code = self.module.get_finalized_function(id);
        // SAFETY: `code` is the finalized, executable entry of a function compiled with the
        // signature `fn(pointer) -> i64` in the host's default calling convention, which is
        // `extern "C"` on the hosts Cranelift's native builder supports.
        Some(unsafe { std::mem::transmute::<*const u8, JitFn>(code) })
    }
}

/// How many instructions of `b`, from its start, the JIT compiles.
pub(crate) fn compilable_prefix(b: &GuestBlock) -> usize {
    b.insns
        .iter()
        .take_while(|(pc, i)| compiles(i) && !crosses_page(*pc, i))
        .count()
}

fn crosses_page(pc: u64, i: &Insn) -> bool {
    (pc >> PAGE_SHIFT) != (pc.wrapping_add(u64::from(i.len) - 1) >> PAGE_SHIFT)
}

/// Whether the JIT compiles `i` (everything else goes back to the interpreter, a `pause`
/// among them: it may end the run).
pub(crate) fn compiles(i: &Insn) -> bool {
    use Op::*;
    if i.op == Fence {
        return (i.imm as u32) & 0xff != PAUSE_SETS;
    }
    matches!(
        i.op,
        Lui | Auipc
            | Jal
            | Jalr
            | Beq
            | Bne
            | Blt
            | Bge
            | Bltu
            | Bgeu
            | Lb
            | Lh
            | Lw
            | Ld
            | Lbu
            | Lhu
            | Lwu
            | Sb
            | Sh
            | Sw
            | Sd
            | Addi
            | Slti
            | Sltiu
            | Xori
            | Ori
            | Andi
            | Slli
            | Srli
            | Srai
            | Add
            | Sub
            | Sll
            | Slt
            | Sltu
            | Xor
            | Srl
            | Sra
            | Or
            | And
            | Addiw
            | Slliw
            | Srliw
            | Sraiw
            | Addw
            | Subw
            | Sllw
            | Srlw
            | Sraw
            | Mul
            | Mulh
            | Mulhu
            | Div
            | Divu
            | Rem
            | Remu
            | Mulw
            | Divw
            | Divuw
            | Remw
            | Remuw
            | Andn
            | Orn
            | Xnor
            | Clz
            | Clzw
            | Ctz
            | Ctzw
            | Cpop
            | Cpopw
            | Max
            | Maxu
            | Min
            | Minu
            | SextB
            | SextH
            | ZextH
            | Rol
            | Rolw
            | Ror
            | Rori
            | Roriw
            | Rorw
            | Rev8
            | Bclr
            | Bclri
            | Bext
            | Bexti
            | Binv
            | Binvi
            | Bset
            | Bseti
    )
}

/// A region exit to emit once the region's code is (a block being filled cannot be left for
/// another): the host block, pc, exit kind, the budget left at the exit, the registers the
/// current guest block changed (stored back there).
struct Pending {
    blk: Block,
    pc: u64,
    kind: u64,
    left: Value,
    dirty: Vec<(usize, Value)>,
}

/// The code generator of one region. Guest registers are the region's variables: the ones it
/// reads are loaded from the interpreter's array where the region is entered, and kept in
/// host values across its blocks and loops. A guest block stores the registers it changed
/// where it ends or leaves (a side exit stores only what its block changed so far, so exits
/// stay small and a value lives no longer than its uses and its block). So a register a
/// loop carries is a host value from one block to the next, instead of a store at one
/// block's end and a load at the next one's start.
struct Gen<'a> {
    b: FunctionBuilder<'a>,
    store_sig: Signature,
    fence_sig: Signature,
    /// The remaining budget.
    left: Variable,
    ctxp: Value,
    xp: Value,
    /// x1 to x31 (index 0 unused).
    vars: [Variable; 32],
    /// The registers the guest block being emitted changed so far.
    dirty: u32,
    /// The registers the region reads or writes.
    regs: u32,
    /// Guest block address -> host block.
    targets: HashMap<u64, Block>,
    pending: Vec<Pending>,
}

impl<'a> Gen<'a> {
    fn new(mut b: FunctionBuilder<'a>, store_sig: Signature, fence_sig: Signature) -> Gen<'a> {
        let left = b.declare_var(types::I64);
        let entry = b.create_block();
        b.append_block_params_for_function_params(entry);
        b.switch_to_block(entry);
        let ctxp = b.block_params(entry)[0];
        let f = MemFlagsData::trusted();
        let xp = b.ins().load(types::I64, f, ctxp, OFF_X);
        let l = b.ins().load(types::I64, f, ctxp, OFF_LEFT);
        b.def_var(left, l);
        let vars = std::array::from_fn(|_| b.declare_var(types::I64));
        Gen {
            b,
            store_sig,
            fence_sig,
            left,
            ctxp,
            xp,
            vars,
            dirty: 0,
            regs: 0,
            targets: HashMap::new(),
            pending: Vec::new(),
        }
    }

    /// Loads every register the region's compiled instructions read into its variable (in
    /// the entry block); notes every one they read or write.
    fn load_registers(&mut self, blocks: &[GuestBlock]) {
        let (mut used, mut regs) = (0u32, 0u32);
        for g in blocks {
            for &(_, i) in &g.insns[..compilable_prefix(g)] {
                for r in [i.rs1, i.rs2] {
                    used |= 1u32.checked_shl(u32::from(r)).unwrap_or(0);
                }
                regs |= 1u32.checked_shl(u32::from(i.rd)).unwrap_or(0);
            }
        }
        // x0 is a constant, never a variable.
        used &= !1;
        self.regs = (regs | used) & !1;
        self.load_regs(used);
    }

    /// Loads the registers of `mask` from the interpreter's array into their variables.
    fn load_regs(&mut self, mask: u32) {
        let f = MemFlagsData::trusted();
        for r in (1..32).filter(|r| mask & (1 << r) != 0) {
            let v = self.b.ins().load(types::I64, f, self.xp, (8 * r) as i32);
            self.b.def_var(self.vars[r], v);
        }
    }

    /// A call into the interpreter (`sig`, the function at `f`, `args`), with the registers
    /// in the interpreter's array across it: the block's changed ones are stored before it,
    /// and every register of the region is loaded again after it. So no guest value is live
    /// across the call, which would otherwise keep it in a callee-saved register or, there
    /// being only five, on the stack for the whole region. Returns the call's results.
    fn call_out(&mut self, sig: Signature, f: Value, args: &[Value]) -> Vec<Value> {
        for (r, v) in self.dirty() {
            self.b
                .ins()
                .store(MemFlagsData::trusted(), v, self.xp, (8 * r) as i32);
        }
        let sig = self.b.import_signature(sig);
        let call = self.b.ins().call_indirect(sig, f, args);
        let results = self.b.inst_results(call).to_vec();
        self.load_regs(self.regs);
        results
    }

    fn region(mut self, blocks: &[GuestBlock], config: TargetFrontendConfig) -> Option<()> {
        for g in blocks {
            let blk = self.b.create_block();
            self.targets.insert(g.pc, blk);
        }
        let first = *self.targets.get(&blocks.first()?.pc)?;
        self.load_registers(blocks);
        self.b.ins().jump(first, &[]);
        for g in blocks {
            self.block(g)?;
        }
        for p in std::mem::take(&mut self.pending) {
            self.b.switch_to_block(p.blk);
            let f = MemFlagsData::trusted();
            for (r, v) in p.dirty {
                self.b.ins().store(f, v, self.xp, (8 * r) as i32);
            }
            self.b.ins().store(f, p.left, self.ctxp, OFF_LEFT);
            let pc = self.b.ins().iconst(types::I64, p.pc as i64);
            self.b.ins().store(f, pc, self.ctxp, OFF_PC);
            let k = self.b.ins().iconst(types::I64, p.kind as i64);
            self.b.ins().return_(&[k]);
        }
        self.b.seal_all_blocks();
        self.b.finalize(config);
        Some(())
    }

    fn reg(&mut self, r: u8) -> Value {
        let r = usize::from(r & 31);
        if r == 0 {
            return self.b.ins().iconst(types::I64, 0);
        }
        self.b.use_var(self.vars[r])
    }

    fn set(&mut self, rd: u8, v: Value) {
        let r = usize::from(rd & 31);
        if rd != SINK && r != 0 {
            self.b.def_var(self.vars[r], v);
            self.dirty |= 1 << r;
        }
    }

    /// The registers the guest block changed so far, with their values here.
    fn dirty(&mut self) -> Vec<(usize, Value)> {
        (1..32)
            .filter(|r| self.dirty & (1 << r) != 0)
            .map(|r| (r, self.b.use_var(self.vars[r])))
            .collect()
    }

    /// Stores the registers the guest block changed (it ends here).
    fn flush(&mut self) {
        for (r, v) in self.dirty() {
            self.b
                .ins()
                .store(MemFlagsData::trusted(), v, self.xp, (8 * r) as i32);
        }
        self.dirty = 0;
    }

    /// Leaves the region at a computed pc (after `flush`).
    fn exit_dynamic(&mut self, pc: Value, kind: u64) {
        let f = MemFlagsData::trusted();
        let left = self.b.use_var(self.left);
        self.b.ins().store(f, left, self.ctxp, OFF_LEFT);
        self.b.ins().store(f, pc, self.ctxp, OFF_PC);
        let k = self.b.ins().iconst(types::I64, kind as i64);
        self.b.ins().return_(&[k]);
    }

    /// A host block that goes on at `pc`: the region's block there, or an exit. Only where
    /// the block ends (registers flushed).
    fn target(&mut self, pc: u64) -> Block {
        if let Some(&b) = self.targets.get(&pc) {
            return b;
        }
        self.exit_block(pc, EXIT_GO_ON, 0)
    }

    /// A host block that leaves before the instruction at `pc` for the interpreter, giving
    /// back `unretired` instructions of the budget.
    fn bail(&mut self, pc: u64, unretired: u64) -> Block {
        self.exit_block(pc, EXIT_INTERPRET, unretired)
    }

    /// A host block that leaves the region from here (the block's changed registers stored).
    fn exit_block(&mut self, pc: u64, kind: u64, unretired: u64) -> Block {
        let blk = self.b.create_block();
        let mut left = self.b.use_var(self.left);
        if unretired > 0 {
            left = self.b.ins().iadd_imm_s(left, unretired as i64);
        }
        let dirty = self.dirty();
        self.pending.push(Pending {
            blk,
            pc,
            kind,
            left,
            dirty,
        });
        blk
    }

    fn block(&mut self, g: &GuestBlock) -> Option<()> {
        let blk = *self.targets.get(&g.pc)?;
        self.b.switch_to_block(blk);
        self.dirty = 0;
        let n = compilable_prefix(g);
        let len = n as u64;
        if n == 0 {
            let pc = self.b.ins().iconst(types::I64, g.pc as i64);
            self.exit_dynamic(pc, EXIT_INTERPRET);
            return Some(());
        }
        // The budget covers the whole compiled block, or the interpreter runs it.
        let left = self.b.use_var(self.left);
        let short = self
            .b
            .ins()
            .icmp_imm_s(IntCC::UnsignedLessThan, left, len as i64);
        let body = self.b.create_block();
        let out = self.bail(g.pc, 0);
        self.b.ins().brif(short, out, &[], body, &[]);
        self.b.switch_to_block(body);
        let left = self.b.ins().iadd_imm_s(left, -(len as i64));
        self.b.def_var(self.left, left);
        for (k, &(pc, insn)) in g.insns[..n].iter().enumerate() {
            // Instructions of the block not retired if this one leaves before itself.
            let rest = len - k as u64;
            if self.insn(pc, insn, rest)? {
                return Some(());
            }
        }
        // Fell off the compiled part: the next instruction, in or out of the region.
        let (last_pc, last) = g.insns[n - 1];
        let next = last_pc.wrapping_add(u64::from(last.len));
        self.flush();
        if n < g.insns.len() {
            let pc = self.b.ins().iconst(types::I64, next as i64);
            self.exit_dynamic(pc, EXIT_INTERPRET);
        } else {
            let t = self.target(next);
            self.b.ins().jump(t, &[]);
        }
        Some(())
    }

    /// Emits one instruction; returns whether it ended the block (a jump or branch).
    fn insn(&mut self, pc: u64, i: Insn, rest: u64) -> Option<bool> {
        use Op::*;
        let imm = i64::from(i.imm);
        let next = pc.wrapping_add(u64::from(i.len));
        let v1 = self.reg(i.rs1);
        let v2 = self.reg(i.rs2);
        let w = |g: &mut Gen<'_>, v: Value| g.b.ins().ireduce(types::I32, v);
        let sx = |g: &mut Gen<'_>, v: Value| g.b.ins().sextend(types::I64, v);
        let bool64 = |g: &mut Gen<'_>, c: Value| g.b.ins().uextend(types::I64, c);
        let r = match i.op {
            Lui => self.b.ins().iconst(types::I64, imm),
            Auipc => self
                .b
                .ins()
                .iconst(types::I64, pc.wrapping_add(imm as u64) as i64),
            Jal => {
                let link = self.b.ins().iconst(types::I64, next as i64);
                self.set(i.rd, link);
                self.flush();
                let t = self.target(pc.wrapping_add(imm as u64));
                self.b.ins().jump(t, &[]);
                return Some(true);
            }
            Jalr => {
                let t = self.b.ins().iadd_imm_s(v1, imm);
                let t = self.b.ins().band_imm_s(t, !1);
                let link = self.b.ins().iconst(types::I64, next as i64);
                self.set(i.rd, link);
                self.flush();
                self.exit_dynamic(t, EXIT_GO_ON);
                return Some(true);
            }
            Beq | Bne | Blt | Bge | Bltu | Bgeu => {
                let cc = match i.op {
                    Beq => IntCC::Equal,
                    Bne => IntCC::NotEqual,
                    Blt => IntCC::SignedLessThan,
                    Bge => IntCC::SignedGreaterThanOrEqual,
                    Bltu => IntCC::UnsignedLessThan,
                    _ => IntCC::UnsignedGreaterThanOrEqual,
                };
                let c = self.b.ins().icmp(cc, v1, v2);
                self.flush();
                let taken = self.target(pc.wrapping_add(imm as u64));
                let fall = self.target(next);
                self.b.ins().brif(c, taken, &[], fall, &[]);
                return Some(true);
            }
            Lb | Lh | Lw | Ld | Lbu | Lhu | Lwu => self.load(pc, i, v1, imm, rest),
            Sb | Sh | Sw | Sd => {
                self.store(pc, i, v1, v2, imm, rest);
                return Some(false);
            }
            Fence => {
                self.fence(imm);
                return Some(false);
            }
            Addi => self.b.ins().iadd_imm_s(v1, imm),
            Slti => {
                let c = self.b.ins().icmp_imm_s(IntCC::SignedLessThan, v1, imm);
                bool64(self, c)
            }
            Sltiu => {
                let c = self.b.ins().icmp_imm_s(IntCC::UnsignedLessThan, v1, imm);
                bool64(self, c)
            }
            Xori => self.b.ins().bxor_imm_s(v1, imm),
            Ori => self.b.ins().bor_imm_s(v1, imm),
            Andi => self.b.ins().band_imm_s(v1, imm),
            Slli => self.b.ins().ishl_imm_u(v1, imm & 63),
            Srli => self.b.ins().ushr_imm_u(v1, imm & 63),
            Srai => self.b.ins().sshr_imm_u(v1, imm & 63),
            Add => self.b.ins().iadd(v1, v2),
            Sub => self.b.ins().isub(v1, v2),
            Sll => self.b.ins().ishl(v1, v2),
            Slt => {
                let c = self.b.ins().icmp(IntCC::SignedLessThan, v1, v2);
                bool64(self, c)
            }
            Sltu => {
                let c = self.b.ins().icmp(IntCC::UnsignedLessThan, v1, v2);
                bool64(self, c)
            }
            Xor => self.b.ins().bxor(v1, v2),
            Srl => self.b.ins().ushr(v1, v2),
            Sra => self.b.ins().sshr(v1, v2),
            Or => self.b.ins().bor(v1, v2),
            And => self.b.ins().band(v1, v2),
            Addiw => {
                let s = self.b.ins().iadd_imm_s(v1, imm);
                let s = w(self, s);
                sx(self, s)
            }
            Slliw | Srliw | Sraiw => {
                let a = w(self, v1);
                let s = match i.op {
                    Slliw => self.b.ins().ishl_imm_u(a, imm & 31),
                    Srliw => self.b.ins().ushr_imm_u(a, imm & 31),
                    _ => self.b.ins().sshr_imm_u(a, imm & 31),
                };
                sx(self, s)
            }
            Addw | Subw | Mulw => {
                let s = match i.op {
                    Addw => self.b.ins().iadd(v1, v2),
                    Subw => self.b.ins().isub(v1, v2),
                    _ => self.b.ins().imul(v1, v2),
                };
                let s = w(self, s);
                sx(self, s)
            }
            Sllw | Srlw | Sraw => {
                let a = w(self, v1);
                let s = match i.op {
                    Sllw => self.b.ins().ishl(a, v2),
                    Srlw => self.b.ins().ushr(a, v2),
                    _ => self.b.ins().sshr(a, v2),
                };
                sx(self, s)
            }
            Mul => self.b.ins().imul(v1, v2),
            Mulh => self.b.ins().smulhi(v1, v2),
            Mulhu => self.b.ins().umulhi(v1, v2),
            Div | Rem => self.signed_div(v1, v2, types::I64, i.op == Rem),
            Divu | Remu => self.unsigned_div(v1, v2, types::I64, i.op == Remu),
            Divw | Remw => {
                let (a, b) = (w(self, v1), w(self, v2));
                let q = self.signed_div(a, b, types::I32, i.op == Remw);
                sx(self, q)
            }
            Divuw | Remuw => {
                let (a, b) = (w(self, v1), w(self, v2));
                let q = self.unsigned_div(a, b, types::I32, i.op == Remuw);
                sx(self, q)
            }
            // Zba / Zbb / Zbs, or what `compilable_prefix` cut off.
            _ => self.bitmanip(i, v1, v2, imm)?,
        };
        self.set(i.rd, r);
        Some(false)
    }

    /// A load's value, extended to 64 bits as the instruction says.
    fn load(&mut self, pc: u64, i: Insn, v1: Value, imm: i64, rest: u64) -> Value {
        use Op::*;
        let sx = |g: &mut Gen<'_>, v: Value| g.b.ins().sextend(types::I64, v);
        let (ty, size, signed) = match i.op {
            Lb => (types::I8, 1, true),
            Lh => (types::I16, 2, true),
            Lw => (types::I32, 4, true),
            Ld => (types::I64, 8, false),
            Lbu => (types::I8, 1, false),
            Lhu => (types::I16, 2, false),
            _ => (types::I32, 4, false),
        };
        let addr = self.b.ins().iadd_imm_s(v1, imm);
        let p = self.host_address(addr, size, pc, rest);
        let v = self.b.ins().load(ty, MemFlagsData::trusted(), p, 0);
        if ty == types::I64 {
            v
        } else if signed {
            sx(self, v)
        } else {
            self.b.ins().uextend(types::I64, v)
        }
    }

    /// A word of the context the compiled code runs with (`OFF_*`).
    fn ctx_word(&mut self, off: i32) -> Value {
        self.b
            .ins()
            .load(types::I64, MemFlagsData::trusted(), self.ctxp, off)
    }

    /// A fence: the bus's fence hook, with the predecessor and successor sets of `imm`.
    fn fence(&mut self, imm: i64) {
        let exec = self.ctx_word(OFF_EXEC);
        let f = self.ctx_word(OFF_FENCE);
        let sets = self.b.ins().iconst(types::I64, imm & 0xff);
        self.call_out(self.fence_sig.clone(), f, &[exec, sets]);
    }

    /// A store: inline when naturally aligned in a region that takes stores inline (its store
    /// length covers it); else the interpreter's store path, leaving the block when that says
    /// so.
    fn store(&mut self, pc: u64, i: Insn, v1: Value, v2: Value, imm: i64, rest: u64) {
        use Op::*;
        let next = pc.wrapping_add(u64::from(i.len));
        let size = match i.op {
            Sb => 1,
            Sh => 2,
            Sw => 4,
            _ => 8,
        };
        let addr = self.b.ins().iadd_imm_s(v1, imm);
        let fl = MemFlagsData::trusted();
        let slow = self.b.create_block();
        let done = self.b.create_block();
        let p = self.region_address(addr, size, RegionLen::Store, slow);
        // A plain aligned store: what the interpreter's relaxed atomic store is.
        match size {
            1 => self.b.ins().istore8(fl, v2, p, 0),
            2 => self.b.ins().istore16(fl, v2, p, 0),
            4 => self.b.ins().istore32(fl, v2, p, 0),
            _ => self.b.ins().store(fl, v2, p, 0),
        };
        self.b.ins().jump(done, &[]);
        self.b.switch_to_block(slow);
        let exec = self.ctx_word(OFF_EXEC);
        let f = self.ctx_word(OFF_STORE);
        let size = self.b.ins().iconst(types::I64, size);
        let res = self.call_out(self.store_sig.clone(), f, &[exec, addr, v2, size])[0];
        // 0: go on; 1: leave after the store (decoded code dropped); 2: leave before.
        let ok = self.b.create_block();
        let not_ok = self.b.create_block();
        self.b.ins().brif(res, not_ok, &[], ok, &[]);
        self.b.switch_to_block(not_ok);
        let before = self.bail(pc, rest);
        let after = self.exit_block(next, EXIT_GO_ON, rest - 1);
        let stored = self.b.ins().icmp_imm_s(IntCC::Equal, res, 1);
        self.b.ins().brif(stored, after, &[], before, &[]);
        self.b.switch_to_block(ok);
        self.b.ins().jump(done, &[]);
        self.b.switch_to_block(done);
    }

    /// The value of a bit-manipulation instruction (Zba, Zbb, Zbs); `None` for one the JIT
    /// does not compile (`compilable_prefix` cuts those off before).
    fn bitmanip(&mut self, i: Insn, v1: Value, v2: Value, imm: i64) -> Option<Value> {
        use Op::*;
        let w = |g: &mut Gen<'_>, v: Value| g.b.ins().ireduce(types::I32, v);
        let sx = |g: &mut Gen<'_>, v: Value| g.b.ins().sextend(types::I64, v);
        Some(match i.op {
            Andn => self.b.ins().band_not(v1, v2),
            Orn => self.b.ins().bor_not(v1, v2),
            Xnor => self.b.ins().bxor_not(v1, v2),
            Clz => self.b.ins().clz(v1),
            Ctz => self.b.ins().ctz(v1),
            Cpop => self.b.ins().popcnt(v1),
            Clzw | Ctzw | Cpopw => {
                let a = w(self, v1);
                let c = match i.op {
                    Clzw => self.b.ins().clz(a),
                    Ctzw => self.b.ins().ctz(a),
                    _ => self.b.ins().popcnt(a),
                };
                self.b.ins().uextend(types::I64, c)
            }
            Max => self.b.ins().smax(v1, v2),
            Maxu => self.b.ins().umax(v1, v2),
            Min => self.b.ins().smin(v1, v2),
            Minu => self.b.ins().umin(v1, v2),
            SextB | SextH => {
                let ty = if i.op == SextB { types::I8 } else { types::I16 };
                let a = self.b.ins().ireduce(ty, v1);
                sx(self, a)
            }
            ZextH => self.b.ins().band_imm_s(v1, 0xffff),
            Rol => self.b.ins().rotl(v1, v2),
            Ror => self.b.ins().rotr(v1, v2),
            Rori => self.b.ins().rotr_imm_u(v1, imm & 63),
            Rolw | Rorw | Roriw => {
                let a = w(self, v1);
                let s = match i.op {
                    Rolw => self.b.ins().rotl(a, v2),
                    Rorw => self.b.ins().rotr(a, v2),
                    _ => self.b.ins().rotr_imm_u(a, imm & 31),
                };
                sx(self, s)
            }
            Rev8 => self.b.ins().bswap(v1),
            Bclr | Bext | Binv | Bset => {
                let one = self.b.ins().iconst(types::I64, 1);
                let bit = self.b.ins().ishl(one, v2);
                self.bit_op(i.op, v1, v2, bit)
            }
            Bclri | Bexti | Binvi | Bseti => {
                let bit = self.b.ins().iconst(types::I64, (1u64 << (imm & 63)) as i64);
                let sh = self.b.ins().iconst(types::I64, imm & 63);
                self.bit_op(i.op, v1, sh, bit)
            }
            _ => return None,
        })
    }

    fn bit_op(&mut self, op: Op, v1: Value, sh: Value, bit: Value) -> Value {
        use Op::*;
        match op {
            Bclr | Bclri => self.b.ins().band_not(v1, bit),
            Binv | Binvi => self.b.ins().bxor(v1, bit),
            Bset | Bseti => self.b.ins().bor(v1, bit),
            _ => {
                let s = self.b.ins().ushr(v1, sh);
                self.b.ins().band_imm_s(s, 1)
            }
        }
    }

    /// The host address of a naturally aligned `size`-byte load at `addr` in one of the
    /// readable regions; leaves for the interpreter otherwise.
    fn host_address(&mut self, addr: Value, size: i64, pc: u64, rest: u64) -> Value {
        let out = self.bail(pc, rest);
        self.region_address(addr, size, RegionLen::Load, out)
    }

    /// The host address of a naturally aligned `size`-byte access at `addr` inside one of the
    /// regions of `JitCtx::rd` (within the length `len` names); goes to `miss` otherwise.
    /// The regions are tried in order, a compare and a branch each (an access site mostly
    /// hits the same one, which the branch predictor learns), after one alignment test
    /// (region bases are 8-aligned, so the address's alignment is the offset's). Their words
    /// are loaded from `JitCtx` where they are used (cache hits), not held in host registers
    /// across the region.
    fn region_address(&mut self, addr: Value, size: i64, len: RegionLen, miss: Block) -> Value {
        let join = self.b.create_block();
        let found = self.b.declare_var(types::I64);
        if size > 1 {
            let low = self.b.ins().band_imm_s(addr, size - 1);
            let aligned = self.b.create_block();
            self.b.ins().brif(low, miss, &[], aligned, &[]);
            self.b.switch_to_block(aligned);
        }
        let fl = MemFlagsData::trusted();
        for k in 0..LOAD_REGIONS {
            let at = OFF_RD + 8 * (REGION_WORDS * k) as i32;
            let base = self.b.ins().load(types::I64, fl, self.ctxp, at);
            let limit = self
                .b
                .ins()
                .load(types::I64, fl, self.ctxp, at + len as i32);
            let off = self.b.ins().isub(addr, base);
            let inside = self.b.ins().icmp(IntCC::UnsignedLessThan, off, limit);
            let hit = self.b.create_block();
            let next = if k + 1 < LOAD_REGIONS {
                self.b.create_block()
            } else {
                miss
            };
            self.b.ins().brif(inside, hit, &[], next, &[]);
            self.b.switch_to_block(hit);
            let host = self.b.ins().load(types::I64, fl, self.ctxp, at + 16);
            let p = self.b.ins().iadd(host, off);
            self.b.def_var(found, p);
            self.b.ins().jump(join, &[]);
            if next != miss {
                self.b.switch_to_block(next);
            }
        }
        self.b.switch_to_block(join);
        self.b.use_var(found)
    }

    /// RISC-V signed division / remainder (by zero: all ones / the dividend; overflow: the
    /// dividend / 0), without Cranelift's traps.
    fn signed_div(&mut self, a: Value, b: Value, ty: Type, rem: bool) -> Value {
        let min = if ty == types::I32 {
            i64::from(i32::MIN)
        } else {
            i64::MIN
        };
        let zero = self.b.ins().icmp_imm_s(IntCC::Equal, b, 0);
        let a_min = self.b.ins().icmp_imm_s(IntCC::Equal, a, min);
        let b_m1 = self.b.ins().icmp_imm_s(IntCC::Equal, b, -1);
        let ovf = self.b.ins().band(a_min, b_m1);
        let bad = self.b.ins().bor(zero, ovf);
        let one = self.b.ins().iconst(ty, 1);
        let d = self.b.ins().select(bad, one, b);
        if rem {
            // Overflow: srem by 1 gives 0, as RISC-V wants.
            let r = self.b.ins().srem(a, d);
            self.b.ins().select(zero, a, r)
        } else {
            // Overflow: sdiv by 1 gives the dividend (MIN), as RISC-V wants.
            let q = self.b.ins().sdiv(a, d);
            let all = self.b.ins().iconst(ty, -1);
            self.b.ins().select(zero, all, q)
        }
    }

    fn unsigned_div(&mut self, a: Value, b: Value, ty: Type, rem: bool) -> Value {
        let zero = self.b.ins().icmp_imm_s(IntCC::Equal, b, 0);
        let one = self.b.ins().iconst(ty, 1);
        let d = self.b.ins().select(zero, one, b);
        if rem {
            let r = self.b.ins().urem(a, d);
            self.b.ins().select(zero, a, r)
        } else {
            let q = self.b.ins().udiv(a, d);
            let all = self.b.ins().iconst(ty, -1);
            self.b.ins().select(zero, all, q)
        }
    }
}
