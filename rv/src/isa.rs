//! What of a program the engine can execute: a linear sweep over code that reports every
//! encoding the decoder does not name (`mlx5-dpa elf isa`), and the words that explain an
//! illegal instruction (which opcode space it lies in).
//!
//! The sweep decodes exactly as the interpreter does (`decode`), so "no undecodable
//! instruction" here means no [`crate::Fault::IllegalInstruction`] from any instruction the
//! sweep covered. A sweep is only as good as its ranges: give it function bodies (symbols with
//! a size), not whole sections, where a section pads between functions with zero halfwords
//! (`c.unimp`, illegal by definition).

use crate::decode::{decode, insn_len, Op};

/// An encoding the engine does not execute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Undecodable {
    /// Its guest address.
    pub addr: u64,
    /// The raw 16- or 32-bit encoding (the low halfword alone when the range ends inside a
    /// 32-bit instruction).
    pub encoding: u32,
    /// 2 or 4; 0 when the range ends inside the instruction.
    pub len: u8,
}

impl Undecodable {
    /// The opcode space the encoding lies in, where that says more than "unknown"
    /// (see [`opcode_space`]).
    pub fn opcode_space(&self) -> Option<OpcodeSpace> {
        if self.len == 0 {
            None
        } else {
            opcode_space(self.encoding)
        }
    }
}

/// The RISC-V opcode spaces reserved for vendor extensions (unprivileged spec, "RISC-V Base
/// Opcode Map": custom-0 0b00_010_11, custom-1 0b01_010_11, custom-2/rv128 0b10_110_11,
/// custom-3/rv128 0b11_110_11).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpcodeSpace {
    Custom0,
    Custom1,
    Custom2,
    Custom3,
}

impl OpcodeSpace {
    /// The spec's name of the space.
    pub fn name(self) -> &'static str {
        match self {
            OpcodeSpace::Custom0 => "custom-0",
            OpcodeSpace::Custom1 => "custom-1",
            OpcodeSpace::Custom2 => "custom-2",
            OpcodeSpace::Custom3 => "custom-3",
        }
    }
}

impl std::fmt::Display for OpcodeSpace {
    /// The space and what is known of it for the DPA: the compiler's ISA string names
    /// NVIDIA's extensions `xfenceheap`, `xnvcc` and `xrpfxp` (docs/sources.md section 8), vendor
    /// extensions live in the custom spaces, and no public document gives their encodings.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} opcode space: a vendor extension (NVIDIA's DPA extensions xfenceheap / xnvcc / \
             xrpfxp have no public encodings, so the engine does not execute them)",
            self.name()
        )
    }
}

/// The custom opcode space of a 32-bit encoding, `None` for a compressed one or any other
/// major opcode.
pub fn opcode_space(encoding: u32) -> Option<OpcodeSpace> {
    if encoding & 3 != 3 {
        return None;
    }
    match encoding & 0x7f {
        0x0b => Some(OpcodeSpace::Custom0),
        0x2b => Some(OpcodeSpace::Custom1),
        0x5b => Some(OpcodeSpace::Custom2),
        0x7b => Some(OpcodeSpace::Custom3),
        _ => None,
    }
}

/// What a sweep found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sweep {
    /// Instructions decoded, the undecodable ones included.
    pub instructions: u64,
    /// Bytes covered.
    pub bytes: u64,
    /// The encodings the engine does not execute, in address order.
    pub undecodable: Vec<Undecodable>,
}

impl Sweep {
    /// Sweeps `code`, whose first byte is at guest address `base`, instruction by instruction
    /// from its start, adding to what this sweep found.
    pub fn add(&mut self, code: &[u8], base: u64) {
        let mut off = 0usize;
        while off + 2 <= code.len() {
            let low = u16::from_le_bytes([code[off], code[off + 1]]);
            let len = usize::from(insn_len(low));
            let addr = base.wrapping_add(off as u64);
            self.instructions += 1;
            if off + len > code.len() {
                self.undecodable.push(Undecodable {
                    addr,
                    encoding: u32::from(low),
                    len: 0,
                });
                off = code.len();
                break;
            }
            let bits = if len == 4 {
                u32::from_le_bytes([code[off], code[off + 1], code[off + 2], code[off + 3]])
            } else {
                u32::from(low)
            };
            if decode(bits).op == Op::Illegal {
                self.undecodable.push(Undecodable {
                    addr,
                    encoding: bits,
                    len: len as u8,
                });
            }
            off += len;
        }
        if off < code.len() {
            // One odd byte at the end: no instruction fits in it.
            self.instructions += 1;
            self.undecodable.push(Undecodable {
                addr: base.wrapping_add(off as u64),
                encoding: u32::from(code[off]),
                len: 0,
            });
            off = code.len();
        }
        self.bytes += off as u64;
    }
}

/// Sweeps one range.
pub fn sweep(code: &[u8], base: u64) -> Sweep {
    let mut s = Sweep::default();
    s.add(code, base);
    s
}
