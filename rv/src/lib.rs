//! RV64IMAC (+ Zbb, Zbs, the Zbp / Zbr 0.93 drafts, Zicsr counters) execution engine for the device model's DPA, a crate
//! of its own: it imports nothing from the model or the driver (the model implements [`Bus`]),
//! and its bare machine takes segments as input ([`bare::Image`]).
//!
//! [`run`] executes a [`Hart`] against a [`Bus`] until an `ecall`, `ebreak`, a fault or the
//! instruction budget. The ISA is what the BlueField-3 DPA compiler targets (docs/sources.md section 5:
//! `rv64imac_zbb_zbp0p93_zbr0p93_zbs`), user mode only:
//!
//! - RV64I, M (the spec's divide-by-zero and overflow results), A (LR/SC with the hart's
//!   reservation, SC a compare-and-swap against the value LR read, so harts sharing memory
//!   never both win; every AMO in word and doubleword width), C (every RV64C form; the
//!   floating-point loads/stores are illegal: no F/D), Zbb, Zbs.
//! - The draft bit-manipulation extensions the DPA compiler emits, with the semantics of the
//!   draft specification's reference code (version 0.93): Zbp (`grev[i][w]`, `gorc[i][w]`,
//!   `[un]shfl[i|w]`, `xperm.{n,b,h,w}`, `pack[u|h|w|uw]`; `rev8`, `orc.b` and `zext.h` are
//!   their Zbb special cases) and Zbr (`crc32[c].{b,h,w,d}`).
//! - Zicsr only as `csrrs rd, cycle|time|instret, x0` (`rdcycle`, `rdtime`, `rdinstret`);
//!   `cycle` reads the retired-instruction count, `time` [`Bus::time`]. Every other CSR access
//!   is an illegal instruction.
//! - `fence` (all variants) is a no-op; `fence.i` empties the decoded-instruction cache.
//! - Misaligned loads, stores, LR/SC and AMOs fault ([`MemError::Misaligned`]), as the DPA
//!   model wants faults rather than emulation.
//! - NVIDIA's custom instructions (custom-0 / custom-1 opcode spaces) fault as illegal
//!   instructions with their encoding: no public document gives their encodings. [`isa`]
//!   names the opcode space of such a fault and sweeps a program for every encoding the
//!   engine would refuse (`mlx5-dpa elf isa`).
//!
//! Nothing in the guest's input makes the engine panic: every encoding decodes (unknown ones to
//! [`Fault::IllegalInstruction`]), every address is checked by the bus or against a
//! [`RamRegion`]'s bounds.
//!
//! Speed: instructions are decoded once, into basic blocks kept in a [`CodeCache`] (a store by
//! the hart into decoded code drops the blocks of that page and ends the current block, so
//! self-modifying code works even without `fence.i`); plain RAM is accessed directly through
//! [`RamRegion`]s the bus offers with [`Bus::ram_region`], everything else through the bus
//! methods.
//!
//! [`bare`] is a minimal machine around the engine for `mlx5-dpa vm run`: an image's segments,
//! a stack, exit by `ecall` or `tohost`, return to a sentinel.
//!
//! # Example
//!
//! A function of two instructions (`addi a0, a0, 1; ret`) called on the bare machine:
//!
//! ```
//! use mlx5_dpa_rv::bare::{BareMachine, BareStop};
//!
//! let code: Vec<u8> = [0x0015_0513u32, 0x0000_8067].iter().flat_map(|w| w.to_le_bytes()).collect();
//! let mut m = BareMachine::from_code(0x1000, &code)?;
//! let r = m.call(0x1000, &[41], 100)?;
//! assert_eq!(r.stop, BareStop::Return { value: 42 });
//! assert_eq!(r.instret, 2);
//! # Ok::<(), mlx5_dpa_rv::bare::BareError>(())
//! ```

pub mod bare;
mod bitmanip;
mod cache;
mod decode;
mod exec;
mod hart;
mod image;
pub mod isa;
#[cfg(feature = "jit")]
mod jit;
mod ram;

pub use cache::CodeCache;
pub use exec::run;
pub use hart::{reg, Access, Bus, Fault, Hart, MemError, Stop};
#[cfg(feature = "jit")]
pub use jit::JitShare;
pub use ram::{GuestRam, Perms, RamRegion, RegionError};

#[cfg(target_endian = "big")]
compile_error!(
    "the RISC-V engine maps little-endian guest memory directly: little-endian hosts only"
);

#[cfg(test)]
mod tests;
