//! Instruction decoding: one 16- or 32-bit encoding to one [`Insn`], the form the interpreter
//! executes and the code cache stores.
//!
//! Compressed instructions are expanded here into the operation of their 32-bit equivalent
//! (RISC-V unprivileged spec, chapter "C" Standard Extension, tables 16.5-16.7), so the
//! interpreter has a single implementation of every operation. Every encoding this file does
//! not name is [`Op::Illegal`] carrying the raw bits; decoding never panics.
//!
//! Register fields: `rs1` / `rs2` are 0..=31. `rd` is 0..=32: a write to `x0` is redirected to
//! the sink register 32 so the interpreter never needs a "rd != 0" test and `x0` stays zero.

/// The operations of RV64IMAC + Zbb + Zbs + counter reads. Names follow the spec's mnemonics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
#[allow(missing_docs)]
pub(crate) enum Op {
    /// Illegal or unsupported encoding; `imm` holds the raw bits.
    Illegal = 0,
    // RV64I
    Lui,
    Auipc,
    Jal,
    Jalr,
    Beq,
    Bne,
    Blt,
    Bge,
    Bltu,
    Bgeu,
    Lb,
    Lh,
    Lw,
    Ld,
    Lbu,
    Lhu,
    Lwu,
    Sb,
    Sh,
    Sw,
    Sd,
    Addi,
    Slti,
    Sltiu,
    Xori,
    Ori,
    Andi,
    Slli,
    Srli,
    Srai,
    Add,
    Sub,
    Sll,
    Slt,
    Sltu,
    Xor,
    Srl,
    Sra,
    Or,
    And,
    Addiw,
    Slliw,
    Srliw,
    Sraiw,
    Addw,
    Subw,
    Sllw,
    Srlw,
    Sraw,
    Fence,
    FenceI,
    Ecall,
    Ebreak,
    // Zicsr, counters only (csrrs rd, csr, x0)
    Rdcycle,
    Rdtime,
    Rdinstret,
    // M
    Mul,
    Mulh,
    Mulhsu,
    Mulhu,
    Div,
    Divu,
    Rem,
    Remu,
    Mulw,
    Divw,
    Divuw,
    Remw,
    Remuw,
    // A
    LrW,
    ScW,
    LrD,
    ScD,
    AmoswapW,
    AmoaddW,
    AmoxorW,
    AmoandW,
    AmoorW,
    AmominW,
    AmomaxW,
    AmominuW,
    AmomaxuW,
    AmoswapD,
    AmoaddD,
    AmoxorD,
    AmoandD,
    AmoorD,
    AmominD,
    AmomaxD,
    AmominuD,
    AmomaxuD,
    // Zbb
    Andn,
    Orn,
    Xnor,
    Clz,
    Clzw,
    Ctz,
    Ctzw,
    Cpop,
    Cpopw,
    Max,
    Maxu,
    Min,
    Minu,
    SextB,
    SextH,
    ZextH,
    Rol,
    Rolw,
    Ror,
    Rori,
    Roriw,
    Rorw,
    OrcB,
    Rev8,
    // Zbs
    Bclr,
    Bclri,
    Bext,
    Bexti,
    Binv,
    Binvi,
    Bset,
    Bseti,
    // Zbp 0.93 (draft)
    Grev,
    Grevi,
    Grevw,
    Greviw,
    Gorc,
    Gorci,
    Gorcw,
    Gorciw,
    Shfl,
    Shfli,
    Unshfl,
    Unshfli,
    Shflw,
    Unshflw,
    XpermN,
    XpermB,
    XpermH,
    XpermW,
    Pack,
    Packu,
    Packh,
    Packw,
    Packuw,
    // Zbr 0.93 (draft)
    Crc32B,
    Crc32H,
    Crc32W,
    Crc32D,
    Crc32cB,
    Crc32cH,
    Crc32cW,
    Crc32cD,
}

/// One decoded instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Insn {
    pub op: Op,
    /// Destination, 0..=32 (32 = the sink standing for x0).
    pub rd: u8,
    pub rs1: u8,
    pub rs2: u8,
    /// Instruction length in bytes: 2 or 4.
    pub len: u8,
    /// Bytes from the start of its cached block (set when the block is built; 0 from
    /// [`decode`]). The interpreter finds an instruction's pc from it, not by counting.
    pub off: u8,
    /// The interpreter's handler: the operation's own (`op as u8`), or, set when the block is
    /// built, a fused pair's, which runs this instruction and the next of its block as one
    /// (`exec`'s `fuse`). Only the interpreter reads it.
    pub dispatch: u8,
    /// Sign-extended immediate (shift amount for shifts; raw bits for `Illegal`).
    pub imm: i32,
}

/// The fence sets of `pause` (Zihintpause, `fence w, 0`): predecessor w (1), successor none
/// (0).
pub(crate) const PAUSE_SETS: u32 = 0x10;

/// The sink register index standing for writes to x0.
pub(crate) const SINK: u8 = 32;

impl Insn {
    fn new(op: Op, rd: u32, rs1: u32, rs2: u32, imm: i32, len: u8) -> Insn {
        let rd = (rd & 31) as u8;
        Insn {
            op,
            rd: if rd == 0 { SINK } else { rd },
            rs1: (rs1 & 31) as u8,
            rs2: (rs2 & 31) as u8,
            len,
            off: 0,
            dispatch: op as u8,
            imm,
        }
    }

    fn illegal(bits: u32, len: u8) -> Insn {
        Insn {
            op: Op::Illegal,
            rd: SINK,
            rs1: 0,
            rs2: 0,
            len,
            off: 0,
            dispatch: Op::Illegal as u8,
            imm: bits as i32,
        }
    }

    /// The raw encoding of an `Illegal` instruction.
    pub fn encoding(&self) -> u32 {
        self.imm as u32
    }
}

/// Decodes the instruction whose first 16 bits are the low half of `bits` (the high half is
/// only looked at for 32-bit instructions).
pub(crate) fn decode(bits: u32) -> Insn {
    if bits & 3 == 3 {
        decode32(bits)
    } else {
        decode16(bits as u16)
    }
}

/// The length in bytes of the instruction starting with these 16 bits.
#[inline]
pub(crate) fn insn_len(low: u16) -> u8 {
    if low & 3 == 3 {
        4
    } else {
        2
    }
}

#[inline]
fn bits(v: u32, hi: u32, lo: u32) -> u32 {
    (v >> lo) & ((1u32 << (hi - lo + 1)) - 1)
}

/// Sign-extends the low `width` bits of `v`.
#[inline]
fn sext(v: u32, width: u32) -> i32 {
    let s = 32 - width;
    ((v << s) as i32) >> s
}

fn imm_i(raw: u32) -> i32 {
    (raw as i32) >> 20
}

fn imm_s(raw: u32) -> i32 {
    (((raw as i32) >> 25) << 5) | bits(raw, 11, 7) as i32
}

fn imm_b(raw: u32) -> i32 {
    let v = (bits(raw, 31, 31) << 12)
        | (bits(raw, 7, 7) << 11)
        | (bits(raw, 30, 25) << 5)
        | (bits(raw, 11, 8) << 1);
    sext(v, 13)
}

fn imm_u(raw: u32) -> i32 {
    (raw & 0xffff_f000) as i32
}

fn imm_j(raw: u32) -> i32 {
    let v = (bits(raw, 31, 31) << 20)
        | (bits(raw, 19, 12) << 12)
        | (bits(raw, 20, 20) << 11)
        | (bits(raw, 30, 21) << 1);
    sext(v, 21)
}

/// OP (0x33): RV64I, M and the bit-manipulation register forms, by funct7 and funct3.
fn op_reg(f7: u32, f3: u32) -> Option<Op> {
    Some(match (f7, f3) {
        (0x00, 0) => Op::Add,
        (0x00, 1) => Op::Sll,
        (0x00, 2) => Op::Slt,
        (0x00, 3) => Op::Sltu,
        (0x00, 4) => Op::Xor,
        (0x00, 5) => Op::Srl,
        (0x00, 6) => Op::Or,
        (0x00, 7) => Op::And,
        (0x20, 0) => Op::Sub,
        (0x20, 5) => Op::Sra,
        (0x20, 4) => Op::Xnor,
        (0x20, 6) => Op::Orn,
        (0x20, 7) => Op::Andn,
        (0x01, 0) => Op::Mul,
        (0x01, 1) => Op::Mulh,
        (0x01, 2) => Op::Mulhsu,
        (0x01, 3) => Op::Mulhu,
        (0x01, 4) => Op::Div,
        (0x01, 5) => Op::Divu,
        (0x01, 6) => Op::Rem,
        (0x01, 7) => Op::Remu,
        (0x05, 4) => Op::Min,
        (0x05, 5) => Op::Minu,
        (0x05, 6) => Op::Max,
        (0x05, 7) => Op::Maxu,
        (0x30, 1) => Op::Rol,
        (0x30, 5) => Op::Ror,
        (0x24, 1) => Op::Bclr,
        (0x24, 5) => Op::Bext,
        (0x34, 1) => Op::Binv,
        (0x14, 1) => Op::Bset,
        (0x34, 5) => Op::Grev,
        (0x14, 5) => Op::Gorc,
        (0x04, 1) => Op::Shfl,
        (0x04, 5) => Op::Unshfl,
        (0x14, 2) => Op::XpermN,
        (0x14, 4) => Op::XpermB,
        (0x14, 6) => Op::XpermH,
        (0x14, 0) => Op::XpermW,
        (0x04, 4) => Op::Pack,
        (0x24, 4) => Op::Packu,
        (0x04, 7) => Op::Packh,
        _ => return None,
    })
}

/// OP-32 (0x3b): the word forms, by funct7 and funct3 (`zext.h` is `packw` with rs2 0).
fn op_32(f7: u32, f3: u32, rs2: u32) -> Option<Op> {
    Some(match (f7, f3) {
        (0x00, 0) => Op::Addw,
        (0x00, 1) => Op::Sllw,
        (0x00, 5) => Op::Srlw,
        (0x20, 0) => Op::Subw,
        (0x20, 5) => Op::Sraw,
        (0x01, 0) => Op::Mulw,
        (0x01, 4) => Op::Divw,
        (0x01, 5) => Op::Divuw,
        (0x01, 6) => Op::Remw,
        (0x01, 7) => Op::Remuw,
        (0x04, 4) if rs2 == 0 => Op::ZextH,
        (0x04, 4) => Op::Packw,
        (0x24, 4) => Op::Packuw,
        (0x30, 1) => Op::Rolw,
        (0x30, 5) => Op::Rorw,
        (0x34, 5) => Op::Grevw,
        (0x14, 5) => Op::Gorcw,
        (0x04, 1) => Op::Shflw,
        (0x04, 5) => Op::Unshflw,
        _ => return None,
    })
}

/// AMO (0x2f): A, by width (funct3) and funct5; `lr` needs rs2 0.
fn op_amo(f3: u32, funct5: u32, rs2: u32) -> Option<Op> {
    Some(match (f3, funct5) {
        (2, 0b00010) if rs2 == 0 => Op::LrW,
        (2, 0b00011) => Op::ScW,
        (2, 0b00001) => Op::AmoswapW,
        (2, 0b00000) => Op::AmoaddW,
        (2, 0b00100) => Op::AmoxorW,
        (2, 0b01100) => Op::AmoandW,
        (2, 0b01000) => Op::AmoorW,
        (2, 0b10000) => Op::AmominW,
        (2, 0b10100) => Op::AmomaxW,
        (2, 0b11000) => Op::AmominuW,
        (2, 0b11100) => Op::AmomaxuW,
        (3, 0b00010) if rs2 == 0 => Op::LrD,
        (3, 0b00011) => Op::ScD,
        (3, 0b00001) => Op::AmoswapD,
        (3, 0b00000) => Op::AmoaddD,
        (3, 0b00100) => Op::AmoxorD,
        (3, 0b01100) => Op::AmoandD,
        (3, 0b01000) => Op::AmoorD,
        (3, 0b10000) => Op::AmominD,
        (3, 0b10100) => Op::AmomaxD,
        (3, 0b11000) => Op::AmominuD,
        (3, 0b11100) => Op::AmomaxuD,
        _ => return None,
    })
}

/// Decodes a 32-bit instruction (bits 1:0 == 0b11).
pub(crate) fn decode32(raw: u32) -> Insn {
    let opcode = raw & 0x7f;
    let rd = bits(raw, 11, 7);
    let rs1 = bits(raw, 19, 15);
    let rs2 = bits(raw, 24, 20);
    let f3 = bits(raw, 14, 12);
    let f7 = bits(raw, 31, 25);
    let f6 = bits(raw, 31, 26);
    let imm12 = bits(raw, 31, 20);
    let ill = Insn::illegal(raw, 4);
    let r = |op: Op| Insn::new(op, rd, rs1, rs2, 0, 4);
    let i = |op: Op| Insn::new(op, rd, rs1, 0, imm_i(raw), 4);
    // Shift-immediate forms: `imm` is the shift amount.
    let sh6 = |op: Op| Insn::new(op, rd, rs1, 0, bits(raw, 25, 20) as i32, 4);
    let sh5 = |op: Op| Insn::new(op, rd, rs1, 0, bits(raw, 24, 20) as i32, 4);
    match opcode {
        0x37 => Insn::new(Op::Lui, rd, 0, 0, imm_u(raw), 4),
        0x17 => Insn::new(Op::Auipc, rd, 0, 0, imm_u(raw), 4),
        0x6f => Insn::new(Op::Jal, rd, 0, 0, imm_j(raw), 4),
        0x67 if f3 == 0 => i(Op::Jalr),
        0x63 => {
            let op = match f3 {
                0 => Op::Beq,
                1 => Op::Bne,
                4 => Op::Blt,
                5 => Op::Bge,
                6 => Op::Bltu,
                7 => Op::Bgeu,
                _ => return ill,
            };
            Insn::new(op, 0, rs1, rs2, imm_b(raw), 4)
        }
        0x03 => {
            let op = match f3 {
                0 => Op::Lb,
                1 => Op::Lh,
                2 => Op::Lw,
                3 => Op::Ld,
                4 => Op::Lbu,
                5 => Op::Lhu,
                6 => Op::Lwu,
                _ => return ill,
            };
            i(op)
        }
        0x23 => {
            let op = match f3 {
                0 => Op::Sb,
                1 => Op::Sh,
                2 => Op::Sw,
                3 => Op::Sd,
                _ => return ill,
            };
            Insn::new(op, 0, rs1, rs2, imm_s(raw), 4)
        }
        0x13 => match f3 {
            0 => i(Op::Addi),
            2 => i(Op::Slti),
            3 => i(Op::Sltiu),
            4 => i(Op::Xori),
            6 => i(Op::Ori),
            7 => i(Op::Andi),
            1 => match (f6, imm12) {
                (0b000000, _) => sh6(Op::Slli),
                (0b010010, _) => sh6(Op::Bclri),
                (0b011010, _) => sh6(Op::Binvi),
                (0b001010, _) => sh6(Op::Bseti),
                (_, 0x600) => r(Op::Clz),
                (_, 0x601) => r(Op::Ctz),
                (_, 0x602) => r(Op::Cpop),
                (_, 0x604) => r(Op::SextB),
                (_, 0x605) => r(Op::SextH),
                (_, 0x610) => r(Op::Crc32B),
                (_, 0x611) => r(Op::Crc32H),
                (_, 0x612) => r(Op::Crc32W),
                (_, 0x613) => r(Op::Crc32D),
                (_, 0x618) => r(Op::Crc32cB),
                (_, 0x619) => r(Op::Crc32cH),
                (_, 0x61a) => r(Op::Crc32cW),
                (_, 0x61b) => r(Op::Crc32cD),
                // shfli: imm[11:5] = 0000100, a 5-bit control.
                (0b000010, _) if bits(raw, 25, 25) == 0 => sh5(Op::Shfli),
                _ => ill,
            },
            _ => match (f6, imm12) {
                // f3 == 5
                (0b000000, _) => sh6(Op::Srli),
                (0b010000, _) => sh6(Op::Srai),
                (0b011000, _) => sh6(Op::Rori),
                (0b010010, _) => sh6(Op::Bexti),
                (_, 0x287) => r(Op::OrcB),
                (_, 0x6b8) => r(Op::Rev8),
                (0b011010, _) => sh6(Op::Grevi),
                (0b001010, _) => sh6(Op::Gorci),
                (0b000010, _) if bits(raw, 25, 25) == 0 => sh5(Op::Unshfli),
                _ => ill,
            },
        },
        0x1b => match (f3, f7, imm12) {
            (0, _, _) => i(Op::Addiw),
            (1, 0b0000000, _) => sh5(Op::Slliw),
            (1, _, 0x600) => r(Op::Clzw),
            (1, _, 0x601) => r(Op::Ctzw),
            (1, _, 0x602) => r(Op::Cpopw),
            (5, 0b0000000, _) => sh5(Op::Srliw),
            (5, 0b0100000, _) => sh5(Op::Sraiw),
            (5, 0b0110000, _) => sh5(Op::Roriw),
            (5, 0b0110100, _) => sh5(Op::Greviw),
            (5, 0b0010100, _) => sh5(Op::Gorciw),
            _ => ill,
        },
        0x33 => op_reg(f7, f3).map_or(ill, r),
        0x3b => op_32(f7, f3, rs2).map_or(ill, r),
        // MISC-MEM: every FENCE variant (fence.tso, pause) orders nothing in this
        // single-issue model; FENCE.I empties the code cache.
        0x0f => match f3 {
            // imm: pred in bits 7:4, succ in bits 3:0.
            0 => Insn::new(Op::Fence, 0, 0, 0, bits(raw, 27, 20) as i32, 4),
            1 => Insn::new(Op::FenceI, 0, 0, 0, 0, 4),
            _ => ill,
        },
        0x73 => match raw {
            0x0000_0073 => Insn::new(Op::Ecall, 0, 0, 0, 0, 4),
            0x0010_0073 => Insn::new(Op::Ebreak, 0, 0, 0, 0, 4),
            // csrrs rd, csr, x0 on the three user counters; every other CSR access is illegal.
            _ if f3 == 2 && rs1 == 0 => match imm12 {
                0xc00 => Insn::new(Op::Rdcycle, rd, 0, 0, 0, 4),
                0xc01 => Insn::new(Op::Rdtime, rd, 0, 0, 0, 4),
                0xc02 => Insn::new(Op::Rdinstret, rd, 0, 0, 0, 4),
                _ => ill,
            },
            _ => ill,
        },
        0x2f => op_amo(f3, bits(raw, 31, 27), rs2).map_or(ill, r),
        // custom-0 (0x0b) and custom-1 (0x2b) carry NVIDIA's DPA extensions (xfenceheap's
        // `fence.heap`, xnvcc's `cinva`, xrpfxp's `fxprcp` / `fxppw2` / `fxplog2`). Their
        // encodings are not public (only the mnemonics are: DOCA `dpaintrin.h` and
        // `dpa-clang -print-supported-extensions`), so they fault as illegal instructions
        // carrying the encoding rather than being guessed.
        _ => ill,
    }
}

/// The register-register operations of quadrant 1 (C.SUB, C.XOR, C.OR, C.AND, C.SUBW, C.ADDW),
/// by bit 12 and bits 6:5; the rest is reserved (Zcb's space, not supported).
fn c_arith(b12: u32, b65: u32) -> Option<Op> {
    Some(match (b12, b65) {
        (0, 0b00) => Op::Sub,
        (0, 0b01) => Op::Xor,
        (0, 0b10) => Op::Or,
        (0, 0b11) => Op::And,
        (1, 0b00) => Op::Subw,
        (1, 0b01) => Op::Addw,
        _ => return None,
    })
}

/// Decodes a 16-bit compressed instruction (bits 1:0 != 0b11) into its 32-bit operation.
pub(crate) fn decode16(c: u16) -> Insn {
    let c = u32::from(c);
    let ill = Insn::illegal(c, 2);
    let op = bits(c, 15, 13);
    // The 3-bit register fields name x8..x15.
    let r_hi = 8 + bits(c, 9, 7); // rs1' / rd'
    let r_lo = 8 + bits(c, 4, 2); // rs2' / rd'
    let rd = bits(c, 11, 7); // full rd / rs1
    let rs2 = bits(c, 6, 2); // full rs2
    let imm6 = sext((bits(c, 12, 12) << 5) | bits(c, 6, 2), 6);
    let shamt = (bits(c, 12, 12) << 5) | bits(c, 6, 2);
    let n = |op: Op, rd: u32, rs1: u32, rs2: u32, imm: i32| Insn::new(op, rd, rs1, rs2, imm, 2);
    match (c & 3, op) {
        // Quadrant 0
        (0, 0b000) => {
            // C.ADDI4SPN: nzuimm[5:4|9:6|2|3]
            let imm = (bits(c, 12, 11) << 4)
                | (bits(c, 10, 7) << 6)
                | (bits(c, 6, 6) << 2)
                | (bits(c, 5, 5) << 3);
            if imm == 0 {
                ill // includes the all-zero "defined illegal" instruction
            } else {
                n(Op::Addi, r_lo, 2, 0, imm as i32)
            }
        }
        (0, 0b010) => {
            // C.LW: uimm[5:3] at 12:10, uimm[2|6] at 6:5
            let imm = (bits(c, 12, 10) << 3) | (bits(c, 6, 6) << 2) | (bits(c, 5, 5) << 6);
            n(Op::Lw, r_lo, r_hi, 0, imm as i32)
        }
        (0, 0b011) => {
            // C.LD: uimm[5:3] at 12:10, uimm[7:6] at 6:5
            let imm = (bits(c, 12, 10) << 3) | (bits(c, 6, 5) << 6);
            n(Op::Ld, r_lo, r_hi, 0, imm as i32)
        }
        (0, 0b110) => {
            let imm = (bits(c, 12, 10) << 3) | (bits(c, 6, 6) << 2) | (bits(c, 5, 5) << 6);
            n(Op::Sw, 0, r_hi, r_lo, imm as i32)
        }
        (0, 0b111) => {
            let imm = (bits(c, 12, 10) << 3) | (bits(c, 6, 5) << 6);
            n(Op::Sd, 0, r_hi, r_lo, imm as i32)
        }
        // 001 C.FLD, 101 C.FSD (no D extension), 100 reserved.
        (0, _) => ill,

        // Quadrant 1
        (1, 0b000) => n(Op::Addi, rd, rd, 0, imm6), // C.ADDI / C.NOP (and HINTs)
        (1, 0b001) => {
            if rd == 0 {
                ill
            } else {
                n(Op::Addiw, rd, rd, 0, imm6) // C.ADDIW
            }
        }
        (1, 0b010) => n(Op::Addi, rd, 0, 0, imm6), // C.LI
        (1, 0b011) => {
            if rd == 2 {
                // C.ADDI16SP: nzimm[9] at 12, nzimm[4|6|8:7|5] at 6:2
                let v = (bits(c, 12, 12) << 9)
                    | (bits(c, 6, 6) << 4)
                    | (bits(c, 5, 5) << 6)
                    | (bits(c, 4, 3) << 7)
                    | (bits(c, 2, 2) << 5);
                if v == 0 {
                    ill
                } else {
                    n(Op::Addi, 2, 2, 0, sext(v, 10))
                }
            } else if imm6 == 0 {
                ill // C.LUI with nzimm == 0 is reserved
            } else {
                n(Op::Lui, rd, 0, 0, imm6 << 12) // C.LUI
            }
        }
        (1, 0b100) => match bits(c, 11, 10) {
            0b00 => n(Op::Srli, r_hi, r_hi, 0, shamt as i32),
            0b01 => n(Op::Srai, r_hi, r_hi, 0, shamt as i32),
            0b10 => n(Op::Andi, r_hi, r_hi, 0, imm6),
            _ => {
                c_arith(bits(c, 12, 12), bits(c, 6, 5)).map_or(ill, |op| n(op, r_hi, r_hi, r_lo, 0))
            }
        },
        (1, 0b101) => {
            // C.J: imm[11|4|9:8|10|6|7|3:1|5]
            let v = (bits(c, 12, 12) << 11)
                | (bits(c, 11, 11) << 4)
                | (bits(c, 10, 9) << 8)
                | (bits(c, 8, 8) << 10)
                | (bits(c, 7, 7) << 6)
                | (bits(c, 6, 6) << 7)
                | (bits(c, 5, 3) << 1)
                | (bits(c, 2, 2) << 5);
            n(Op::Jal, 0, 0, 0, sext(v, 12))
        }
        (1, _) => {
            // C.BEQZ / C.BNEZ: imm[8|4:3] at 12:10, imm[7:6|2:1|5] at 6:2
            let v = (bits(c, 12, 12) << 8)
                | (bits(c, 11, 10) << 3)
                | (bits(c, 6, 5) << 6)
                | (bits(c, 4, 3) << 1)
                | (bits(c, 2, 2) << 5);
            let op = if op == 0b110 { Op::Beq } else { Op::Bne };
            n(op, 0, r_hi, 0, sext(v, 9))
        }

        // Quadrant 2
        (2, 0b000) => n(Op::Slli, rd, rd, 0, shamt as i32), // C.SLLI
        (2, 0b010) => {
            if rd == 0 {
                ill
            } else {
                // C.LWSP: uimm[5] at 12, uimm[4:2|7:6] at 6:2
                let imm = (bits(c, 12, 12) << 5) | (bits(c, 6, 4) << 2) | (bits(c, 3, 2) << 6);
                n(Op::Lw, rd, 2, 0, imm as i32)
            }
        }
        (2, 0b011) => {
            if rd == 0 {
                ill
            } else {
                // C.LDSP: uimm[5] at 12, uimm[4:3|8:6] at 6:2
                let imm = (bits(c, 12, 12) << 5) | (bits(c, 6, 5) << 3) | (bits(c, 4, 2) << 6);
                n(Op::Ld, rd, 2, 0, imm as i32)
            }
        }
        (2, 0b100) => match (bits(c, 12, 12), rd, rs2) {
            (0, 0, 0) => ill,                        // C.JR with rs1 = 0: reserved
            (0, _, 0) => n(Op::Jalr, 0, rd, 0, 0),   // C.JR
            (0, _, _) => n(Op::Add, rd, 0, rs2, 0),  // C.MV
            (_, 0, 0) => n(Op::Ebreak, 0, 0, 0, 0),  // C.EBREAK
            (_, _, 0) => n(Op::Jalr, 1, rd, 0, 0),   // C.JALR
            (_, _, _) => n(Op::Add, rd, rd, rs2, 0), // C.ADD
        },
        (2, 0b110) => {
            // C.SWSP: uimm[5:2|7:6] at 12:7
            let imm = (bits(c, 12, 9) << 2) | (bits(c, 8, 7) << 6);
            n(Op::Sw, 0, 2, rs2, imm as i32)
        }
        (2, 0b111) => {
            // C.SDSP: uimm[5:3|8:6] at 12:7
            let imm = (bits(c, 12, 10) << 3) | (bits(c, 9, 7) << 6);
            n(Op::Sd, 0, 2, rs2, imm as i32)
        }
        // 001 C.FLDSP, 101 C.FSDSP (no D extension); quadrant 3 is not compressed.
        _ => ill,
    }
}
