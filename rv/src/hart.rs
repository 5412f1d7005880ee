//! The hart and what it runs against: registers and counters ([`Hart`]), the memory it sees
//! ([`Bus`]), and how a run stops ([`Stop`], [`Fault`]).

use crate::cache::CodeCache;
use crate::ram::RamRegion;

/// What kind of access faulted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    Fetch,
    Load,
    Store,
}

/// Why a memory access failed (returned by a [`Bus`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemError {
    /// No memory or device at this address.
    Unmapped,
    /// The region does not allow this access (e.g. store to text, fetch from data).
    Denied,
    /// Not naturally aligned where alignment is required.
    Misaligned,
    /// An MMIO device refused the access (e.g. window without an mkey); `code` is device-defined.
    Device(u32),
}

/// The guest's memory as the engine sees it. Implemented by the DPA model (process memory,
/// outbox page, window aperture) and by the bare `vm run` machine.
///
/// `size` is 1, 2, 4 or 8; values are little-endian, zero-extended into the u64. The engine
/// checks natural alignment of loads and stores itself before calling the bus.
pub trait Bus {
    fn load(&mut self, addr: u64, size: u8) -> Result<u64, MemError>;
    fn store(&mut self, addr: u64, size: u8, value: u64) -> Result<(), MemError>;
    /// Instruction fetch of 16 or 32 bits at `addr` (2-byte aligned); may return 32 bits
    /// even when only 16 are needed if they are mapped. The engine uses the low 16 bits of
    /// the answer only: a 32-bit instruction is fetched as two halfwords (`addr`, `addr + 2`).
    fn fetch(&mut self, addr: u64) -> Result<u32, MemError>;
    /// `rdtime` value.
    fn time(&self) -> u64 {
        0
    }

    /// Fast path (optional): the plain RAM containing `addr`, which the engine may then read
    /// and write directly, without calling `load` / `store` / `fetch`, for the rest of the
    /// current `run` call. Accesses the region's `Perms` do not allow still go to the bus
    /// methods (which report the error). Return `None` for device memory and for any address
    /// whose accesses the bus must see (a watched `tohost`, an MMIO page).
    ///
    /// Soundness is the contract of [`RamRegion::new`] (an `unsafe` constructor).
    fn ram_region(&mut self, _addr: u64) -> Option<RamRegion> {
        None
    }

    /// Optional: RAM regions a run will likely use, as [`Bus::ram_region`] would give them
    /// (the same contract), offered when each `run` call starts so that its first accesses
    /// (and compiled code's, with the `jit` feature) need no lookup. At most four.
    fn ram_regions(&mut self) -> [Option<RamRegion>; 4] {
        [None; 4]
    }

    /// Optional: the RAM an AMO, LR or SC at `addr` acts on, for a bus that gives no
    /// [`Bus::ram_region`] for `addr` (because it must see every plain load and store there)
    /// yet whose atomics must stay atomic with respect to other harts. The engine uses the
    /// region for that one atomic only. Without it an atomic is a `load` then a `store`.
    fn atomic_region(&mut self, _addr: u64) -> Option<RamRegion> {
        None
    }

    /// A `fence` with its predecessor and successor sets (bits: i 8, o 4, r 2, w 1), for a bus
    /// that models write-back or invalidation (the engine itself keeps no caches).
    fn fence(&mut self, _pred: u8, _succ: u8) {}

    /// A `pause` hint (Zihintpause: `fence w, 0`, encoding 0x0100000f) retired: `true` makes
    /// `run` return [`Stop::Pause`] right after it, so that a bus modelling many EUs on few
    /// host threads can give the host thread to another activation while this one spins.
    /// The default keeps running (a `pause` is then an ordinary fence).
    fn pause(&mut self) -> bool {
        false
    }

    /// Optional: a decoded-instruction cache the bus keeps for this hart across `run` calls
    /// (without one, each call starts with an empty cache and decodes again). The engine takes
    /// it out of the bus for the duration of a call and puts it back at the end. The bus must
    /// [clear](CodeCache::clear) it whenever code changes other than by this hart's own stores
    /// or `fence.i` (a new image, DMA into text, a changed memory map).
    fn code_cache(&mut self) -> Option<&mut CodeCache> {
        None
    }
}

/// A guest fault: never a host crash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Memory access failed.
    Memory {
        pc: u64,
        addr: u64,
        access: Access,
        size: u8,
        error: MemError,
    },
    /// Unknown or illegal instruction; `encoding` is the raw 16/32-bit word.
    IllegalInstruction { pc: u64, encoding: u32 },
    /// Misaligned jump/branch target (not 2-byte aligned).
    MisalignedTarget { pc: u64, target: u64 },
}

/// Why `run` returned. The hart's state is left consistent so the caller can resume.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// `ecall`; `pc` already points past it. The caller reads a7/a0.. and writes a0.
    Ecall,
    /// `ebreak`; `pc` points at it.
    Ebreak,
    /// The instruction budget ran out.
    Budget,
    /// A fault; `pc` points at the faulting instruction.
    Fault(Fault),
    /// A `pause` hint the bus asked to stop at ([`Bus::pause`]); `pc` points past it.
    Pause,
}

/// Per-EU register state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hart {
    /// x0..x31 (x0 always reads 0).
    pub x: [u64; 32],
    pub pc: u64,
    /// Retired instructions (rdinstret); rdcycle reads the same counter.
    pub instret: u64,
    /// LR/SC reservation: the address of the last LR and the value it read.
    pub reservation: Option<(u64, u64)>,
}

impl Hart {
    pub fn new(pc: u64) -> Hart {
        Hart {
            x: [0; 32],
            pc,
            instret: 0,
            reservation: None,
        }
    }
}

/// ABI register numbers (psABI names), for callers setting up calls and reading results.
pub mod reg {
    pub const ZERO: usize = 0;
    pub const RA: usize = 1;
    pub const SP: usize = 2;
    pub const GP: usize = 3;
    pub const TP: usize = 4;
    pub const A0: usize = 10;
    pub const A1: usize = 11;
    pub const A2: usize = 12;
    pub const A7: usize = 17;
}
