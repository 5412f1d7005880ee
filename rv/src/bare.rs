//! A bare machine around the engine, for `mlx5-dpa vm run` and the engine's own tests: an
//! [`Image`]'s segments (an ELF's `PT_LOAD` segments, [`Image::from_elf`]) at their link
//! addresses with their permissions, a stack, and three ways to end a run.
//!
//! - `ecall` with a7 = 4 (FlexIO-OS `EXIT_PROCESS`, docs/sources.md section 5) or a7 = 93 (newlib /
//!   Linux `exit`): exit with status a0. a7 = 64 (`write`) to fd 1 or 2 appends to
//!   [`BareMachine::output`] (as qemu-user would print it), so test programs can report.
//! - A store into the `tohost` symbol (if the image has one) of a value `v` with `v & 1 == 1`:
//!   exit with status `v >> 1` (riscv-tests convention).
//! - Returning from the entry function: `ra` holds [`RETURN_ADDRESS`], an unmapped address; the
//!   fetch there ends the run with a0 as the return value (so any function can be an entry).
//!
//! Memory: each segment is a [`GuestRam`] covering its bytes (rounded out to 8-byte bounds),
//! handed to the engine as [`RamRegion`]s, except the doubleword of `tohost`, which goes through
//! [`Bus::store`] so the machine sees it. There is no other device.

pub use crate::image::{Image, ImageError, LoadSegment};

use crate::cache::CodeCache;
use crate::exec::run;
use crate::hart::{reg, Access, Bus, Fault, Hart, MemError, Stop};
use crate::ram::{GuestRam, Perms, RamRegion};

/// The return address given to the entry function: never mapped (the machine refuses images
/// that would map it), 4-byte aligned.
pub const RETURN_ADDRESS: u64 = 0xffff_ffff_ffff_f000;
/// Stack size.
pub const STACK_SIZE: u64 = 1 << 20;
/// Zeroed bytes above the initial `sp` (read by start-up code as argc / argv / envp).
pub const INITIAL_FRAME: u64 = 64;
/// Stack tops tried in order; the first whose stack overlaps no segment is used.
const STACK_TOPS: [u64; 4] = [0x7ff0_0000, 0x3ff0_0000, 0x1_0000_0000_0000, 0x10_0000];
/// `MemError::Device` code of the tohost store that ends a run.
const TOHOST_STOP: u32 = 0x7f0_4057;
/// Output kept from `write` ecalls (bytes beyond are counted, not stored).
const OUTPUT_LIMIT: usize = 1 << 20;
/// Most bytes of segments the machine allocates (all segments together).
pub const SEGMENT_LIMIT: u64 = 256 << 20;

/// ecall numbers (a7).
pub mod ecall {
    /// FlexIO-OS `EXIT_PROCESS` (a0 = status).
    pub const EXIT_PROCESS: u64 = 4;
    /// newlib / Linux `write(fd, buf, len)`.
    pub const WRITE: u64 = 64;
    /// newlib / Linux `exit(status)`.
    pub const EXIT: u64 = 93;
}

/// Why an image cannot be loaded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BareError {
    #[error(transparent)]
    Image(#[from] ImageError),
    #[error(
        "segment {index} at {vaddr:#x}: {len:#x} bytes of data for {memsz:#x} bytes of memory"
    )]
    SegmentData {
        index: usize,
        vaddr: u64,
        len: usize,
        memsz: u64,
    },
    #[error(
        "segment {index} at {vaddr:#x} ({memsz:#x} bytes) is past the bare machine's memory limit"
    )]
    TooLarge {
        index: usize,
        vaddr: u64,
        memsz: u64,
    },
    #[error("segments at {a:#x} and {b:#x} overlap (8-byte granularity)")]
    Overlap { a: u64, b: u64 },
    #[error("a segment covers the return sentinel {RETURN_ADDRESS:#x}")]
    SentinelMapped,
    #[error("no room for a {STACK_SIZE:#x}-byte stack outside the segments")]
    NoStackRoom,
    #[error("no symbol {0:?} in the image")]
    NoSymbol(String),
    #[error("{count} arguments given; at most 8 are passed (a0..a7)")]
    TooManyArgs { count: usize },
}

/// How the exit was requested.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitVia {
    /// `ecall` with a7 = 93.
    Exit,
    /// `ecall` with a7 = 4 (FlexIO-OS EXIT_PROCESS).
    ExitProcess,
    /// Store into `tohost`.
    Tohost,
}

/// Why a bare run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BareStop {
    /// The program exited with `code`.
    Exit { code: u64, via: ExitVia },
    /// The entry function returned `value` (a0).
    Return { value: u64 },
    /// The instruction budget ran out.
    Budget,
    /// `ebreak` at `pc`.
    Ebreak { pc: u64 },
    /// An `ecall` the machine does not serve (a7 = `number`), at `pc`.
    UnknownEcall { number: u64, pc: u64 },
    /// A guest fault.
    Fault(Fault),
}

impl std::fmt::Display for BareStop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            BareStop::Exit { code, via } => {
                let how = match via {
                    ExitVia::Exit => "ecall exit",
                    ExitVia::ExitProcess => "ecall EXIT_PROCESS",
                    ExitVia::Tohost => "tohost",
                };
                write!(f, "exit ({how}), code {}", code as i64)
            }
            BareStop::Return { value } => write!(f, "return, value {value:#x}"),
            BareStop::Budget => write!(f, "budget exhausted"),
            BareStop::Ebreak { pc } => write!(f, "ebreak at {pc:#x}"),
            BareStop::UnknownEcall { number, pc } => {
                write!(f, "unsupported ecall a7={number} at {pc:#x}")
            }
            BareStop::Fault(Fault::IllegalInstruction { pc, encoding }) => {
                let width = if encoding & 3 == 3 { 8 } else { 4 };
                write!(
                    f,
                    "fault: illegal instruction {encoding:#0w$x} at {pc:#x}",
                    w = width + 2
                )?;
                match crate::isa::opcode_space(encoding) {
                    Some(space) => write!(f, " (in the {space})"),
                    None => Ok(()),
                }
            }
            BareStop::Fault(Fault::Memory {
                pc,
                addr,
                access,
                size,
                error,
            }) => {
                let what = match access {
                    Access::Fetch => "fetch",
                    Access::Load => "load",
                    Access::Store => "store",
                };
                write!(
                    f,
                    "fault: {size}-byte {what} at {addr:#x} ({error:?}) by the instruction at {pc:#x}"
                )
            }
            BareStop::Fault(Fault::MisalignedTarget { pc, target }) => {
                write!(f, "fault: misaligned jump target {target:#x} at {pc:#x}")
            }
        }
    }
}

/// The result of [`BareMachine::call`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BareReport {
    pub stop: BareStop,
    /// Instructions executed (retired; a `tohost` store that ends the run counts).
    pub instret: u64,
    /// The hart at the end.
    pub hart: Hart,
}

#[derive(Debug)]
struct Segment {
    base: u64,
    end: u64,
    perms: Perms,
    ram: GuestRam,
}

/// The machine: segments, stack, `tohost` watch, `write` output, a code cache.
#[derive(Debug)]
pub struct BareMachine {
    segments: Vec<Segment>,
    entry: u64,
    symbols: Vec<(String, u64)>,
    tohost: Option<u64>,
    tohost_exit: Option<u64>,
    stack_top: u64,
    global_pointer: Option<u64>,
    output: Vec<u8>,
    cache: CodeCache,
    fast_path: bool,
}

impl BareMachine {
    /// Reads `bytes` as a RISC-V executable ([`Image::from_elf`]) and loads it.
    pub fn from_elf_bytes(bytes: &[u8]) -> Result<BareMachine, BareError> {
        Self::from_image(&Image::from_elf(bytes)?)
    }

    /// Loads the segments of `image` and places a stack.
    pub fn from_image(image: &Image<'_>) -> Result<BareMachine, BareError> {
        Self::from_image_limited(image, SEGMENT_LIMIT)
    }

    /// Like [`BareMachine::from_image`], with at most `limit` bytes of segments in all.
    pub fn from_image_limited(image: &Image<'_>, limit: u64) -> Result<BareMachine, BareError> {
        // Check every size before allocating anything.
        let mut layout = Vec::new();
        let mut total = 0u64;
        for (index, s) in image.segments.iter().enumerate() {
            if s.memsz == 0 {
                continue;
            }
            let too_large = BareError::TooLarge {
                index,
                vaddr: s.vaddr,
                memsz: s.memsz,
            };
            if s.data.len() as u64 > s.memsz {
                return Err(BareError::SegmentData {
                    index,
                    vaddr: s.vaddr,
                    len: s.data.len(),
                    memsz: s.memsz,
                });
            }
            // Round out to 8 bytes.
            let base = s.vaddr & !7;
            let end = s
                .vaddr
                .checked_add(s.memsz)
                .and_then(|e| e.checked_add(7))
                .map(|e| e & !7)
                .ok_or(too_large.clone())?;
            total = total.saturating_add(end - base);
            if total > limit {
                return Err(too_large);
            }
            layout.push((base, end, s.perms, s.vaddr - base, s.data));
        }
        let segments = layout
            .into_iter()
            .map(|(base, end, perms, off, data)| {
                let ram = GuestRam::new(end - base);
                ram.write_bytes(off, data);
                Segment {
                    base,
                    end,
                    perms,
                    ram,
                }
            })
            .collect();
        Self::assemble(segments, image.entry, image.symbols.clone(), STACK_SIZE)
    }

    /// A machine with `code` at `base` (8-byte aligned) in one read-write-execute segment of
    /// at least 4 KiB, and the stack; no symbols, entry at `base`.
    pub fn from_code(base: u64, code: &[u8]) -> Result<BareMachine, BareError> {
        Self::from_code_with_stack(base, code, STACK_SIZE)
    }

    /// As [`BareMachine::from_code`] with a stack of `stack_size` bytes (at least 4 KiB,
    /// rounded up to whole pages; at most [`STACK_SIZE`]): the fuzz entry uses a small one,
    /// since making the memory is most of the cost of a short run.
    pub fn from_code_with_stack(
        base: u64,
        code: &[u8],
        stack_size: u64,
    ) -> Result<BareMachine, BareError> {
        let len = (code.len() as u64).max(4096).next_multiple_of(8);
        if len > SEGMENT_LIMIT || !base.is_multiple_of(8) || base.checked_add(len).is_none() {
            return Err(BareError::TooLarge {
                index: 0,
                vaddr: base,
                memsz: len,
            });
        }
        let ram = GuestRam::new(len);
        ram.write_bytes(0, code);
        let seg = Segment {
            base,
            end: base + len,
            perms: Perms::RWX,
            ram,
        };
        let stack = stack_size.clamp(4096, STACK_SIZE).next_multiple_of(4096);
        Self::assemble(vec![seg], base, Vec::new(), stack)
    }

    /// The machine of `segments` and a stack of `stack_size` bytes.
    fn assemble(
        mut segments: Vec<Segment>,
        entry: u64,
        symbols: Vec<(String, u64)>,
        stack_size: u64,
    ) -> Result<BareMachine, BareError> {
        segments.sort_by_key(|s| s.base);
        for w in segments.windows(2) {
            if w[0].end > w[1].base {
                return Err(BareError::Overlap {
                    a: w[0].base,
                    b: w[1].base,
                });
            }
        }
        let overlaps = |lo: u64, hi: u64| segments.iter().any(|s| s.base < hi && lo < s.end);
        if overlaps(RETURN_ADDRESS, RETURN_ADDRESS + 4) {
            return Err(BareError::SentinelMapped);
        }
        let stack_top = STACK_TOPS
            .iter()
            .copied()
            .find(|&t| !overlaps(t - stack_size, t))
            .ok_or(BareError::NoStackRoom)?;
        segments.push(Segment {
            base: stack_top - stack_size,
            end: stack_top,
            perms: Perms::RW,
            ram: GuestRam::new(stack_size),
        });
        segments.sort_by_key(|s| s.base);
        let find = |n: &str| symbols.iter().find(|(s, _)| s == n).map(|&(_, v)| v);
        Ok(BareMachine {
            tohost: find("tohost"),
            global_pointer: find("__global_pointer$"),
            segments,
            entry,
            symbols,
            tohost_exit: None,
            stack_top,
            output: Vec::new(),
            cache: CodeCache::new(),
            fast_path: true,
        })
    }

    /// Whether the engine gets the segments as [`RamRegion`]s (the default) or goes through
    /// the bus methods for every access (for differential tests of the two paths).
    pub fn set_fast_path(&mut self, on: bool) {
        self.fast_path = on;
    }

    /// Compiles hot code with the JIT (feature `jit`): after `hot` entries of a region's start
    /// (0 or 1: at once), or never with `None`. Returns whether the JIT is on.
    #[cfg(feature = "jit")]
    pub fn set_jit(&mut self, hot: Option<u32>) -> bool {
        self.cache.set_jit(hot)
    }

    /// The JIT's compiled code (feature `jit`, with the JIT on): regions, instructions.
    #[cfg(feature = "jit")]
    pub fn jit_share(&self) -> Option<crate::jit::JitShare> {
        self.cache.jit_share()
    }

    /// The ELF entry point.
    pub fn entry(&self) -> u64 {
        self.entry
    }

    /// The address of a symbol.
    pub fn symbol(&self, name: &str) -> Option<u64> {
        self.symbols
            .iter()
            .find(|(s, _)| s == name)
            .map(|&(_, v)| v)
    }

    /// Where `sp` starts.
    pub fn stack_top(&self) -> u64 {
        self.stack_top
    }

    /// What the program wrote to fd 1 / 2 so far.
    pub fn output(&self) -> &[u8] {
        &self.output
    }

    /// Runs from the symbol `name` (see [`BareMachine::call`]).
    pub fn call_symbol(
        &mut self,
        name: &str,
        args: &[u64],
        max_insns: u64,
    ) -> Result<BareReport, BareError> {
        let pc = self
            .symbol(name)
            .ok_or_else(|| BareError::NoSymbol(name.to_string()))?;
        self.call(pc, args, max_insns)
    }

    /// Runs a fresh hart from `pc` with `args` in a0.., `sp` [`INITIAL_FRAME`] bytes below the
    /// stack top (the frame zeroed: argc 0 for start-up code that reads it), `gp` at
    /// `__global_pointer$` (if the image has it), `ra` at [`RETURN_ADDRESS`], for at most
    /// `max_insns` instructions. Memory keeps what earlier calls left in it.
    pub fn call(&mut self, pc: u64, args: &[u64], max_insns: u64) -> Result<BareReport, BareError> {
        let mut hart = self.start(pc, args)?;
        let stop = self.resume(&mut hart, max_insns);
        Ok(BareReport {
            stop,
            instret: hart.instret,
            hart,
        })
    }

    /// The hart [`BareMachine::call`] starts with (and its stack frame zeroed), not yet run:
    /// run it with [`BareMachine::resume`] (a debugger steps it so).
    pub fn start(&mut self, pc: u64, args: &[u64]) -> Result<Hart, BareError> {
        if args.len() > 8 {
            return Err(BareError::TooManyArgs { count: args.len() });
        }
        let mut hart = Hart::new(pc);
        // sp points at a zeroed frame (a process start with argc = 0, no argv or envp).
        let sp = self.stack_top - INITIAL_FRAME;
        self.write(sp, &[0; INITIAL_FRAME as usize]);
        hart.x[reg::SP] = sp;
        hart.x[reg::RA] = RETURN_ADDRESS;
        hart.x[reg::GP] = self.global_pointer.unwrap_or(0);
        for (i, a) in args.iter().enumerate() {
            hart.x[reg::A0 + i] = *a;
        }
        self.tohost_exit = None;
        Ok(hart)
    }

    /// Runs `hart` for at most `budget` more instructions, serving the machine's `ecall`s,
    /// until the run ends or the budget does ([`BareStop::Budget`]; `resume` again goes on
    /// where it stopped). A budget of 1 is a single step.
    pub fn resume(&mut self, hart: &mut Hart, budget: u64) -> BareStop {
        let end = hart.instret.saturating_add(budget);
        loop {
            let left = end.saturating_sub(hart.instret);
            match run(hart, self, left) {
                Stop::Budget => break BareStop::Budget,
                // The bare machine never asks to stop at a pause (`Bus::pause` default).
                Stop::Pause => continue,
                Stop::Ebreak => break BareStop::Ebreak { pc: hart.pc },
                Stop::Ecall => {
                    let number = hart.x[reg::A7];
                    let a0 = hart.x[reg::A0];
                    match number {
                        ecall::EXIT => {
                            break BareStop::Exit {
                                code: a0,
                                via: ExitVia::Exit,
                            }
                        }
                        ecall::EXIT_PROCESS => {
                            break BareStop::Exit {
                                code: a0,
                                via: ExitVia::ExitProcess,
                            }
                        }
                        ecall::WRITE => {
                            hart.x[reg::A0] = self.write_call(a0, hart.x[reg::A1], hart.x[reg::A2]);
                        }
                        _ => {
                            break BareStop::UnknownEcall {
                                number,
                                pc: hart.pc.wrapping_sub(4),
                            }
                        }
                    }
                }
                Stop::Fault(Fault::Memory {
                    access: Access::Fetch,
                    addr: RETURN_ADDRESS,
                    pc: RETURN_ADDRESS,
                    ..
                }) => {
                    break BareStop::Return {
                        value: hart.x[reg::A0],
                    }
                }
                Stop::Fault(Fault::Memory {
                    access: Access::Store,
                    error: MemError::Device(TOHOST_STOP),
                    ..
                }) if self.tohost_exit.is_some() => {
                    // The store itself happened: count it.
                    hart.instret += 1;
                    break BareStop::Exit {
                        code: self.tohost_exit.unwrap_or(0),
                        via: ExitVia::Tohost,
                    };
                }
                Stop::Fault(f) => break BareStop::Fault(f),
            }
        }
    }

    /// `write(fd, buf, len)`: fd 1 and 2 go to the output; returns the byte count or -errno.
    fn write_call(&mut self, fd: u64, buf: u64, len: u64) -> u64 {
        const EBADF: i64 = 9;
        const EFAULT: i64 = 14;
        if fd != 1 && fd != 2 {
            return (-EBADF) as u64;
        }
        let len = len.min(1 << 16);
        let mut bytes = Vec::new();
        for i in 0..len {
            match self.read_byte(buf.wrapping_add(i)) {
                Some(b) => bytes.push(b),
                None => return (-EFAULT) as u64,
            }
        }
        let room = OUTPUT_LIMIT.saturating_sub(self.output.len());
        self.output
            .extend_from_slice(&bytes[..bytes.len().min(room)]);
        len
    }

    fn segment(&self, addr: u64) -> Option<&Segment> {
        self.segments
            .iter()
            .find(|s| s.base <= addr && addr < s.end)
    }

    fn read_byte(&self, addr: u64) -> Option<u8> {
        let s = self.segment(addr)?;
        s.ram.load(addr - s.base, 1).map(|v| v as u8)
    }

    /// Reads guest memory (any mapped bytes, whatever the permissions).
    pub fn read(&self, addr: u64, len: u64) -> Option<Vec<u8>> {
        // One segment holds the whole range: a bulk copy.
        if let Some(s) = self.segment(addr) {
            if addr.checked_add(len).is_some_and(|end| end <= s.end) {
                return s.ram.read_bytes(addr - s.base, len);
            }
        }
        (0..len)
            .map(|i| self.read_byte(addr.checked_add(i)?))
            .collect()
    }

    /// Writes guest memory (any mapped bytes); `false` and nothing written if some byte is not
    /// mapped. Decoded instructions are forgotten when executable memory is written.
    pub fn write(&mut self, addr: u64, bytes: &[u8]) -> bool {
        let mapped = (0..bytes.len() as u64)
            .all(|i| addr.checked_add(i).and_then(|a| self.segment(a)).is_some());
        if !mapped {
            return false;
        }
        let mut code = false;
        for (i, b) in bytes.iter().enumerate() {
            let a = addr + i as u64;
            if let Some(s) = self.segment(a) {
                s.ram.store(a - s.base, 1, u64::from(*b));
                code |= s.perms.exec;
            }
        }
        if code {
            self.cache.clear();
        }
        true
    }

    /// The segment containing `addr` with the permission `ok` asks for.
    fn access(&self, addr: u64, ok: impl Fn(Perms) -> bool) -> Result<&Segment, MemError> {
        let s = self.segment(addr).ok_or(MemError::Unmapped)?;
        if ok(s.perms) {
            Ok(s)
        } else {
            Err(MemError::Denied)
        }
    }
}

impl Bus for BareMachine {
    fn load(&mut self, addr: u64, size: u8) -> Result<u64, MemError> {
        let s = self.access(addr, |p| p.read)?;
        s.ram.load(addr - s.base, size).ok_or(MemError::Misaligned)
    }

    fn store(&mut self, addr: u64, size: u8, value: u64) -> Result<(), MemError> {
        let s = self.access(addr, |p| p.write)?;
        if !s.ram.store(addr - s.base, size, value) {
            return Err(MemError::Misaligned);
        }
        if let Some(t) = self.tohost {
            if addr & !7 == t & !7 {
                let word = s.ram.load((t & !7) - s.base, 8).unwrap_or(0);
                if word & 1 == 1 {
                    self.tohost_exit = Some(word >> 1);
                    return Err(MemError::Device(TOHOST_STOP));
                }
            }
        }
        Ok(())
    }

    fn fetch(&mut self, addr: u64) -> Result<u32, MemError> {
        let s = self.access(addr, |p| p.exec)?;
        let off = addr - s.base;
        let lo = s.ram.load(off, 2).ok_or(MemError::Misaligned)?;
        let hi = s.ram.load(off + 2, 2).unwrap_or(0);
        Ok((lo | (hi << 16)) as u32)
    }

    fn ram_region(&mut self, addr: u64) -> Option<RamRegion> {
        if !self.fast_path {
            return None;
        }
        let s = self.segment(addr)?;
        let (mut lo, mut hi) = (s.base, s.end);
        if let Some(t) = self.tohost {
            let t = t & !7;
            if (lo..hi).contains(&t) {
                if addr < t {
                    hi = t;
                } else if addr >= t + 8 {
                    lo = t + 8;
                } else {
                    return None;
                }
            }
        }
        // SAFETY: the segment's `GuestRam` lives in `self.segments`, which is neither changed
        // nor dropped while the engine runs: the bus methods above only read and write its
        // memory (atomically), and the machine cannot be touched from outside while `run`
        // holds it mutably.
        unsafe { s.ram.sub_region(lo, lo - s.base, hi - lo, s.perms) }.ok()
    }

    fn code_cache(&mut self) -> Option<&mut CodeCache> {
        Some(&mut self.cache)
    }
}

/// Fuzzing entry (`tests/fuzz.rs`): reads any bytes as an executable ([`Image::from_elf`])
/// and, when they make a machine of at most 16 MiB, runs it for up to 10 000 instructions from
/// the entry and from its first symbol. Must never panic.
#[doc(hidden)]
pub fn fuzz_elf(data: &[u8]) {
    let Ok(image) = Image::from_elf(data) else {
        return;
    };
    fuzz_image(&image);
}

/// Fuzzing entry: loads `image` (at most 16 MiB) and runs up to 10 000 instructions from its
/// entry and from its first symbol. Must never panic.
#[doc(hidden)]
pub fn fuzz_image(image: &Image<'_>) {
    let Ok(mut m) = BareMachine::from_image_limited(image, 16 << 20) else {
        return;
    };
    let _ = m.call(m.entry(), &[1, 2, 3], 10_000);
    if let Some(&(_, f)) = image.symbols.first() {
        let _ = m.call(f, &[], 10_000);
    }
}

/// Fuzzing entry (the `rv_jit` target, feature `jit`): the JIT against the interpreter. The
/// first byte chooses how hot a region gets before it is compiled (1, 2, 3 or the default
/// 32 entries) and the budget (up to 40 000 instructions); the rest is an instruction stream
/// at 0x1000, as [`fuzz_exec`] runs it. Runs it twice from its start (the second run finds the
/// first one's compiled code) in the interpreter and with the JIT, and panics if the two
/// differ in any way (stop, registers, pc, retired count, memory), or if the JIT compiled
/// more than its bound (8 Ki instructions per program). Must otherwise never panic.
#[cfg(feature = "jit")]
#[doc(hidden)]
pub fn fuzz_jit(data: &[u8]) {
    const BASE: u64 = 0x1000;
    let Some((&sel, code)) = data.split_first() else {
        return;
    };
    let hot = [1, 2, 3, crate::jit::DEFAULT_HOT][usize::from(sel & 3)];
    let budget = 2_500 * (1 + u64::from(sel >> 4));
    let mut outcomes = Vec::new();
    for jit in [false, true] {
        let Ok(mut m) = BareMachine::from_code_with_stack(BASE, code, 16 << 10) else {
            return;
        };
        if jit && !m.set_jit(Some(hot)) {
            return;
        }
        let args: Vec<u64> = (0..8).map(|i| BASE + 8 * i).collect();
        let runs: Vec<_> = (0..2)
            .map(|_| {
                m.call(BASE, &args, budget)
                    .map(|r| (r.stop, r.hart, r.instret))
            })
            .collect();
        if let Some(share) = m.jit_share() {
            assert!(
                share.compiled_insns() <= crate::jit::MAX_SHARE_INSNS,
                "{} instructions compiled",
                share.compiled_insns()
            );
        }
        outcomes.push((runs, m.read(BASE, 4096), m.output().to_vec()));
    }
    assert!(
        outcomes[0] == outcomes[1],
        "the JIT (hot {hot}) and the interpreter differ: {outcomes:?}"
    );
}

/// Fuzzing entry (the `rv_exec` target and `rv/tests/fuzz.rs`): `data` is an instruction
/// stream at 0x1000 in a read-write-execute segment; argument registers point into it. Runs up
/// to 10 000 instructions from its start and from a data-chosen pc, once with the fast RAM
/// path and once through the bus only, and panics if the two runs differ in any way (state,
/// memory, stop reason). Must otherwise never panic.
#[doc(hidden)]
pub fn fuzz_exec(data: &[u8]) {
    fuzz_exec_with(data, false);
}

/// [`fuzz_exec`], with (`jit`, feature `jit`) a third run through code compiled at first
/// sight that must agree too. The `rv_exec` fuzz target leaves it out (compiling every input
/// slows it thirtyfold; `rv_jit` fuzzes the JIT); the property tests take it.
#[doc(hidden)]
pub fn fuzz_exec_with(data: &[u8], jit: bool) {
    const BASE: u64 = 0x1000;
    const FUZZ_STACK: u64 = 16 << 10;
    let pc2 = data.get(..8).map_or(BASE + 2, |b| {
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        let v = u64::from_le_bytes(a);
        // Mostly inside the code, sometimes anywhere (odd, unmapped, huge).
        if v & 0xf0 != 0 {
            BASE + (v >> 8) % 4096
        } else {
            v
        }
    });
    let mut runs = Vec::new();
    // The fast RAM path, the bus path, and (feature `jit`, when asked) compiled code at first
    // sight.
    let jit_run = cfg!(feature = "jit") && jit;
    for (fast, jit) in [(true, false), (false, false), (true, true)] {
        if jit && !jit_run {
            continue;
        }
        // 16 KiB of stack: 10 000 instructions cannot use more than 80 KiB, and the run
        // faults the same on both paths when they try.
        let Ok(mut m) = BareMachine::from_code_with_stack(BASE, data, FUZZ_STACK) else {
            return;
        };
        m.set_fast_path(fast);
        #[cfg(feature = "jit")]
        if jit {
            m.set_jit(Some(1));
        }
        let args: Vec<u64> = (0..8).map(|i| BASE + 8 * i).collect();
        let a = m.call(BASE, &args, 10_000).map(|r| (r.stop, r.hart));
        let b = m.call(pc2, &args, 10_000).map(|r| (r.stop, r.hart));
        let memory = m.read(BASE, 4096);
        runs.push((a, b, memory, m.output().to_vec()));
    }
    assert!(runs[0] == runs[1], "fast and bus paths differ: {:?}", runs);
    if let Some(j) = runs.get(2) {
        assert!(
            runs[0] == *j,
            "the JIT and the interpreter differ: {:?}",
            runs
        );
    }
    // The ISA sweep (`mlx5-dpa elf isa`) agrees with the interpreter: an illegal instruction
    // the run from BASE stopped at, on the linear sweep's instruction boundaries, is listed
    // with its encoding.
    let sweep = crate::isa::sweep(data, BASE);
    assert_eq!(sweep.bytes, data.len() as u64);
    if let Some((Ok((BareStop::Fault(Fault::IllegalInstruction { pc, encoding }), _)), ..)) =
        runs.first()
    {
        let mut at = 0usize;
        while at + 2 <= data.len() && (at as u64) < pc.wrapping_sub(BASE) {
            at += usize::from(crate::decode::insn_len(u16::from_le_bytes([
                data[at],
                data[at + 1],
            ])));
        }
        let boundary = BASE + at as u64 == *pc && at + 2 <= data.len();
        let whole = boundary
            && at
                + usize::from(crate::decode::insn_len(u16::from_le_bytes([
                    data[at],
                    data[at + 1],
                ])))
                <= data.len();
        // Unless the run stored over its own code there (a0..a7 point into it).
        let len = usize::from(crate::decode::insn_len(u16::from_le_bytes([
            data.get(at).copied().unwrap_or(0),
            data.get(at + 1).copied().unwrap_or(0),
        ])));
        let unchanged = runs[0]
            .2
            .as_ref()
            .and_then(|m| m.get(at..at + len))
            .is_some_and(|now| data.get(at..at + len) == Some(now));
        if whole && unchanged {
            assert!(
                sweep
                    .undecodable
                    .iter()
                    .any(|u| u.addr == *pc && u.encoding == *encoding),
                "the sweep missed {encoding:#x} at {pc:#x}: {:?}",
                sweep.undecodable
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: u64 = 0x1_0000;

    fn machine(words: &[u32]) -> BareMachine {
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        BareMachine::from_code(BASE, &bytes).unwrap()
    }

    fn addi(rd: u32, rs1: u32, imm: i32) -> u32 {
        ((imm as u32) & 0xfff) << 20 | rs1 << 15 | rd << 7 | 0x13
    }
    const ECALL: u32 = 0x73;
    const RET: u32 = 0x8067;

    #[test]
    fn exit_ecalls_end_the_run_with_a0() {
        for (number, via) in [(93, ExitVia::Exit), (4, ExitVia::ExitProcess)] {
            let mut m = machine(&[addi(17, 0, number), addi(10, 0, -3), ECALL]);
            let r = m.call(BASE, &[], 100).unwrap();
            assert_eq!(
                r.stop,
                BareStop::Exit {
                    code: -3i64 as u64,
                    via
                }
            );
            assert_eq!((r.instret, r.hart.instret), (3, 3));
        }
    }

    #[test]
    fn write_ecall_collects_output_and_returns_the_count() {
        // a0 = 1, a1 = BASE + 64 (the text), a2 = 5; write; then return a0.
        let mut m = machine(&[
            addi(17, 0, 64),
            addi(10, 0, 1),
            0x0000_05b7 | ((BASE as u32) & 0xfffff000), // lui a1, BASE
            addi(11, 11, 64),
            addi(12, 0, 5),
            ECALL,
            RET,
        ]);
        assert!(m.write(BASE + 64, b"hello"));
        let r = m.call(BASE, &[], 100).unwrap();
        assert_eq!(r.stop, BareStop::Return { value: 5 });
        assert_eq!(m.output(), b"hello");
        // fd 3 is refused with -EBADF.
        let mut m = machine(&[addi(17, 0, 64), addi(10, 0, 3), ECALL, RET]);
        let r = m.call(BASE, &[], 100).unwrap();
        assert_eq!(
            r.stop,
            BareStop::Return {
                value: -9i64 as u64
            }
        );
    }

    #[test]
    fn unknown_ecalls_ebreak_and_budget_stop_the_run() {
        let mut m = machine(&[addi(17, 0, 1234), ECALL]);
        let r = m.call(BASE, &[], 100).unwrap();
        assert_eq!(
            r.stop,
            BareStop::UnknownEcall {
                number: 1234,
                pc: BASE + 4
            }
        );
        let mut m = machine(&[addi(5, 0, 1), 0x0010_0073]);
        let r = m.call(BASE, &[], 100).unwrap();
        assert_eq!(r.stop, BareStop::Ebreak { pc: BASE + 4 });
        let mut m = machine(&[0x0000_006f]); // j .
        let r = m.call(BASE, &[], 777).unwrap();
        assert_eq!((r.stop, r.instret), (BareStop::Budget, 777));
    }

    #[test]
    fn a_function_returns_through_the_sentinel_with_its_arguments() {
        // a0 = a0 + a7
        let mut m = machine(&[0x0115_0533, RET]);
        let r = m.call(BASE, &[40, 0, 0, 0, 0, 0, 0, 2], 100).unwrap();
        assert_eq!(r.stop, BareStop::Return { value: 42 });
        assert_eq!(r.hart.pc, RETURN_ADDRESS);
        assert_eq!(r.hart.x[reg::SP], m.stack_top() - INITIAL_FRAME);
        assert!(matches!(
            m.call(BASE, &[0; 9], 100),
            Err(BareError::TooManyArgs { count: 9 })
        ));
        assert!(matches!(
            m.call_symbol("main", &[], 100),
            Err(BareError::NoSymbol(_))
        ));
    }

    #[test]
    fn memory_outside_the_segments_faults() {
        // ld a0, 0(x0)
        let mut m = machine(&[0x0000_3503]);
        let r = m.call(BASE, &[], 100).unwrap();
        assert_eq!(
            r.stop,
            BareStop::Fault(Fault::Memory {
                pc: BASE,
                addr: 0,
                access: Access::Load,
                size: 8,
                error: MemError::Unmapped
            })
        );
        assert!(r.stop.to_string().contains("8-byte load at 0x0 (Unmapped)"));
        assert!(m.read(BASE, 4).is_some());
        assert!(m.read(0, 4).is_none());
        assert!(!m.write(BASE + 0x1000 - 2, &[0; 4]));
    }
}
