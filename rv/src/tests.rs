//! Unit tests of the engine: decoding edge cases, each extension's semantics, faults, budget,
//! the code cache, and the fast (RAM region) path against the plain bus path.

use super::bitmanip;
use super::decode::{decode16, decode32, Op, SINK};
use super::*;

// ---------------------------------------------------------------------------------------------
// A test bus: RAM regions with permissions (optionally offered as fast regions), and a device
// page at DEV that records stores and answers loads with a fixed value.

const TEXT: u64 = 0x1000;
const DATA: u64 = 0x10_0000;
/// A page both code and data (read, write, execute).
const RWX: u64 = 0x20_0000;
const DEV: u64 = 0x9000_0000;

struct TestBus {
    regions: Vec<(u64, GuestRam, Perms)>,
    fast: bool,
    dev_stores: Vec<(u64, u8, u64)>,
    dev_value: u64,
    time: u64,
    cache: Option<CodeCache>,
    /// The fences the engine reported, (pred, succ).
    fences: Vec<(u8, u8)>,
    /// What `pause` answers, and how often it was asked.
    stop_at_pause: bool,
    pauses: u32,
}

impl TestBus {
    fn new(fast: bool) -> TestBus {
        TestBus {
            regions: vec![
                (TEXT, GuestRam::new(0x1000), Perms::RX),
                (DATA, GuestRam::new(0x1000), Perms::RW),
                (RWX, GuestRam::new(0x1000), Perms::RWX),
            ],
            fast,
            dev_stores: Vec::new(),
            dev_value: 0x1122_3344_5566_7788,
            time: 0,
            cache: None,
            fences: Vec::new(),
            stop_at_pause: false,
            pauses: 0,
        }
    }

    /// [`TestBus::new`] with a code cache of its own, as the model's EUs have.
    fn with_cache(fast: bool) -> TestBus {
        TestBus {
            cache: Some(CodeCache::new()),
            ..TestBus::new(fast)
        }
    }

    fn region(&self, addr: u64) -> Option<&(u64, GuestRam, Perms)> {
        self.regions
            .iter()
            .find(|(b, r, _)| *b <= addr && addr < b + r.len())
    }

    fn poke(&self, addr: u64, size: u8, v: u64) {
        let (b, r, _) = self.region(addr).unwrap();
        assert!(r.store(addr - b, size, v));
    }

    fn peek(&self, addr: u64, size: u8) -> u64 {
        let (b, r, _) = self.region(addr).unwrap();
        r.load(addr - b, size).unwrap()
    }

    /// Writes 32-bit instructions at `at` (2-byte aligned).
    fn code(&self, at: u64, insns: &[u32]) {
        for (i, w) in insns.iter().enumerate() {
            let a = at + 4 * i as u64;
            self.poke(a, 2, u64::from(*w & 0xffff));
            self.poke(a + 2, 2, u64::from(*w >> 16));
        }
    }

    /// Writes raw code bytes at `at`.
    fn code_bytes(&self, at: u64, bytes: &[u8]) {
        for (i, b) in bytes.iter().enumerate() {
            self.poke(at + i as u64, 1, u64::from(*b));
        }
    }

    /// Writes 16-bit instructions at `at`.
    fn code16(&self, at: u64, insns: &[u16]) {
        for (i, w) in insns.iter().enumerate() {
            self.poke(at + 2 * i as u64, 2, u64::from(*w));
        }
    }
}

impl Bus for TestBus {
    fn load(&mut self, addr: u64, size: u8) -> Result<u64, MemError> {
        if (DEV..DEV + 0x1000).contains(&addr) {
            return Ok(self.dev_value);
        }
        let (b, r, p) = self.region(addr).ok_or(MemError::Unmapped)?;
        if !p.read {
            return Err(MemError::Denied);
        }
        r.load(addr - b, size).ok_or(MemError::Misaligned)
    }

    fn store(&mut self, addr: u64, size: u8, value: u64) -> Result<(), MemError> {
        if (DEV..DEV + 0x1000).contains(&addr) {
            self.dev_stores.push((addr, size, value));
            return Ok(());
        }
        let (b, r, p) = self.region(addr).ok_or(MemError::Unmapped)?;
        if !p.write {
            return Err(MemError::Denied);
        }
        if r.store(addr - b, size, value) {
            Ok(())
        } else {
            Err(MemError::Misaligned)
        }
    }

    fn fetch(&mut self, addr: u64) -> Result<u32, MemError> {
        let (b, r, p) = self.region(addr).ok_or(MemError::Unmapped)?;
        if !p.exec {
            return Err(MemError::Denied);
        }
        let lo = r.load(addr - b, 2).ok_or(MemError::Misaligned)?;
        let hi = r.load(addr - b + 2, 2).unwrap_or(0);
        Ok((lo | hi << 16) as u32)
    }

    fn time(&self) -> u64 {
        self.time
    }

    fn pause(&mut self) -> bool {
        self.pauses += 1;
        self.stop_at_pause
    }

    fn fence(&mut self, pred: u8, succ: u8) {
        self.fences.push((pred, succ));
    }

    fn ram_region(&mut self, addr: u64) -> Option<RamRegion> {
        if !self.fast {
            return None;
        }
        let (b, r, p) = self.region(addr)?;
        // SAFETY: the GuestRam lives in `self.regions`, untouched while the engine runs.
        unsafe { r.region(*b, *p) }.ok()
    }

    fn code_cache(&mut self) -> Option<&mut CodeCache> {
        self.cache.as_mut()
    }
}

// ---------------------------------------------------------------------------------------------
// A tiny assembler (RV64 base formats).

fn r(f7: u32, rs2: u32, rs1: u32, f3: u32, rd: u32, op: u32) -> u32 {
    f7 << 25 | rs2 << 20 | rs1 << 15 | f3 << 12 | rd << 7 | op
}
fn i(imm: i32, rs1: u32, f3: u32, rd: u32, op: u32) -> u32 {
    ((imm as u32) & 0xfff) << 20 | rs1 << 15 | f3 << 12 | rd << 7 | op
}
fn s(imm: i32, rs2: u32, rs1: u32, f3: u32) -> u32 {
    let imm = imm as u32;
    ((imm >> 5) & 0x7f) << 25 | rs2 << 20 | rs1 << 15 | f3 << 12 | (imm & 0x1f) << 7 | 0x23
}
fn b(imm: i32, rs2: u32, rs1: u32, f3: u32) -> u32 {
    let imm = imm as u32;
    ((imm >> 12) & 1) << 31
        | ((imm >> 5) & 0x3f) << 25
        | rs2 << 20
        | rs1 << 15
        | f3 << 12
        | ((imm >> 1) & 0xf) << 8
        | ((imm >> 11) & 1) << 7
        | 0x63
}
fn jal(rd: u32, imm: i32) -> u32 {
    let imm = imm as u32;
    ((imm >> 20) & 1) << 31
        | ((imm >> 1) & 0x3ff) << 21
        | ((imm >> 11) & 1) << 20
        | ((imm >> 12) & 0xff) << 12
        | rd << 7
        | 0x6f
}
fn addi(rd: u32, rs1: u32, imm: i32) -> u32 {
    i(imm, rs1, 0, rd, 0x13)
}
fn lui(rd: u32, imm20: u32) -> u32 {
    imm20 << 12 | rd << 7 | 0x37
}
fn load(f3: u32, rd: u32, rs1: u32, imm: i32) -> u32 {
    i(imm, rs1, f3, rd, 0x03)
}
fn amo(funct5: u32, f3: u32, rd: u32, rs1: u32, rs2: u32) -> u32 {
    r(funct5 << 2, rs2, rs1, f3, rd, 0x2f)
}
const ECALL: u32 = 0x0000_0073;
const EBREAK: u32 = 0x0010_0073;

/// Runs `insns` (followed by an ecall) at TEXT with x-registers preset; returns the hart.
fn exec_with(bus: &mut TestBus, regs: &[(usize, u64)], insns: &[u32]) -> (Hart, Stop) {
    let mut code = insns.to_vec();
    code.push(ECALL);
    bus.code(TEXT, &code);
    let mut h = Hart::new(TEXT);
    for &(n, v) in regs {
        h.x[n] = v;
    }
    let stop = run(&mut h, bus, 10_000);
    (h, stop)
}

fn exec(regs: &[(usize, u64)], insns: &[u32]) -> Hart {
    for fast in [true, false] {
        let mut bus = TestBus::new(fast);
        let (h, stop) = exec_with(&mut bus, regs, insns);
        assert_eq!(stop, Stop::Ecall, "fast path {fast}");
        if !fast {
            return h;
        }
    }
    unreachable!()
}

/// One R-type operation on (a, b) in x5, x6 into x7.
fn op_r(f7: u32, f3: u32, op: u32, a: u64, b: u64) -> u64 {
    exec(&[(5, a), (6, b)], &[r(f7, 6, 5, f3, 7, op)]).x[7]
}

// ---------------------------------------------------------------------------------------------
// Decoding.

/// Compressed encodings and their 32-bit expansion, assembled by GNU as 2.40
/// (`.option rvc` / `.option norvc`), covering every RV64C form and the immediate extremes.
const RVC_PAIRS: &[(u16, u32)] = &[
    (0x0040, 0x00410413), // c.addi4spn x8, sp, 4
    (0x1ffc, 0x3fc10793), // c.addi4spn x15, sp, 1020
    (0x4104, 0x00052483), // c.lw x9, 0(x10)
    (0x5c7c, 0x07c42783), // c.lw x15, 124(x8)
    (0x6080, 0x0004b403), // c.ld x8, 0(x9)
    (0x7f7c, 0x0f873783), // c.ld x15, 248(x14)
    (0xc124, 0x04952023), // c.sw x9, 64(x10)
    (0xdc7c, 0x06f42e23), // c.sw x15, 124(x8)
    (0xe480, 0x0084b423), // c.sd x8, 8(x9)
    (0xff7c, 0x0ef73c23), // c.sd x15, 248(x14)
    (0x0001, 0x00000013), // c.nop
    (0x1081, 0xfe008093), // c.addi x1, -32
    (0x0ffd, 0x01ff8f93), // c.addi x31, 31
    (0x0285, 0x00128293), // c.addi x5, 1
    (0x32fd, 0xfff2829b), // c.addiw x5, -1
    (0x2301, 0x0003031b), // c.addiw x6, 0
    (0x2ffd, 0x01ff8f9b), // c.addiw x31, 31
    (0x5f81, 0xfe000f93), // c.li x31, -32
    (0x40fd, 0x01f00093), // c.li x1, 31
    (0x7101, 0xe0010113), // c.addi16sp sp, -512
    (0x617d, 0x1f010113), // c.addi16sp sp, 496
    (0x6141, 0x01010113), // c.addi16sp sp, 16
    (0x6185, 0x000011b7), // c.lui x3, 1
    (0x6ffd, 0x0001ffb7), // c.lui x31, 0x1f
    (0x7201, 0xfffe0237), // c.lui x4, 0xfffe0
    (0x72fd, 0xfffff2b7), // c.lui x5, 0xfffff
    (0x8005, 0x00145413), // c.srli x8, 1
    (0x90fd, 0x03f4d493), // c.srli x9, 63
    (0x9781, 0x4207d793), // c.srai x15, 32
    (0x8515, 0x40555513), // c.srai x10, 5
    (0x9881, 0xfe04f493), // c.andi x9, -32
    (0x8a7d, 0x01f67613), // c.andi x12, 31
    (0x8c1d, 0x40f40433), // c.sub x8, x15
    (0x8cb9, 0x00e4c4b3), // c.xor x9, x14
    (0x8d55, 0x00d56533), // c.or x10, x13
    (0x8df1, 0x00c5f5b3), // c.and x11, x12
    (0x9e0d, 0x40b6063b), // c.subw x12, x11
    (0x9fa1, 0x008787bb), // c.addw x15, x8
    (0xaffd, 0x7fe0006f), // c.j .+2046
    (0xb001, 0x801ff06f), // c.j .-2048
    (0xa009, 0x0020006f), // c.j .+2
    (0xd001, 0xf00400e3), // c.beqz x8, .-256
    (0xce7d, 0x0e060f63), // c.beqz x12, .+254
    (0xe389, 0x00079163), // c.bnez x15, .+2
    (0xfcfd, 0xfe049fe3), // c.bnez x9, .-2
    (0x1ffe, 0x03ff9f93), // c.slli x31, 63
    (0x0086, 0x00109093), // c.slli x1, 1
    (0x50fe, 0x0fc12083), // c.lwsp x1, 252(sp)
    (0x4f82, 0x00012f83), // c.lwsp x31, 0(sp)
    (0x7ffe, 0x1f813f83), // c.ldsp x31, 504(sp)
    (0x6122, 0x00813103), // c.ldsp x2, 8(sp)
    (0x8082, 0x00008067), // c.jr x1
    (0x8f82, 0x000f8067), // c.jr x31
    (0x82fe, 0x01f002b3), // c.mv x5, x31
    (0x8f86, 0x00100fb3), // c.mv x31, x1
    (0x9002, 0x00100073), // c.ebreak
    (0x9382, 0x000380e7), // c.jalr x7
    (0x9082, 0x000080e7), // c.jalr x1
    (0x90fe, 0x01f080b3), // c.add x1, x31
    (0x9f8a, 0x002f8fb3), // c.add x31, x2
    (0xdffe, 0x0ff12e23), // c.swsp x31, 252(sp)
    (0xc006, 0x00112023), // c.swsp x1, 0(sp)
    (0xff86, 0x1e113c23), // c.sdsp x1, 504(sp)
    (0xe47e, 0x01f13423), // c.sdsp x31, 8(sp)
];

#[test]
fn every_compressed_form_expands_like_its_32_bit_equivalent() {
    for &(c, e) in RVC_PAIRS {
        let dc = decode16(c);
        let de = decode32(e);
        assert_ne!(dc.op, Op::Illegal, "{c:#06x}");
        assert_eq!((dc.len, de.len), (2, 4));
        assert_eq!(
            (dc.op, dc.rd, dc.rs1, dc.rs2, dc.imm),
            (de.op, de.rd, de.rs1, de.rs2, de.imm),
            "{c:#06x} vs {e:#010x}"
        );
    }
}

#[test]
fn reserved_compressed_encodings_are_illegal_with_their_encoding() {
    for c in [
        0x0000u16, // defined illegal
        0x0004,    // c.addi4spn nzuimm = 0
        0x2000,    // c.fld
        0x8000,    // quadrant 0, funct3 100
        0xa000,    // c.fsd
        0x2001,    // c.addiw rd = 0
        0x6101,    // c.addi16sp nzimm = 0
        0x6181,    // c.lui nzimm = 0
        0x9c41,    // quadrant 1 funct3 100, reserved (Zcb space)
        0x9c61,    // likewise
        0x2002,    // c.fldsp
        0x4002,    // c.lwsp rd = 0
        0x6002,    // c.ldsp rd = 0
        0x8002,    // c.jr rs1 = 0
        0xa002,    // c.fsdsp
    ] {
        let d = decode16(c);
        assert_eq!(d.op, Op::Illegal, "{c:#06x}");
        assert_eq!((d.encoding(), d.len), (u32::from(c), 2));
    }
}

#[test]
fn every_16_bit_word_decodes_without_panic() {
    for c in 0..=u16::MAX {
        if c & 3 != 3 {
            let d = decode16(c);
            assert_eq!(d.len, 2);
            assert!(d.rd <= SINK && d.rs1 < 32 && d.rs2 < 32);
        }
    }
}

#[test]
fn illegal_32_bit_encodings_fault_with_the_encoding() {
    for enc in [
        0x0000_000bu32,             // custom-0 (NVIDIA extensions live in the custom spaces)
        0x0000_002b,                // custom-1
        0xc000_9073,                // csrrw x0, cycle, x1
        0xc000_a073,                // csrrs x0, cycle, x1 (a write: rs1 != x0)
        0xc000_e073,                // csrrsi x0, cycle, 1
        0x3000_2573,                // csrr a0, mstatus
        0xc030_2573,                // csrr a0, hpmcounter3
        0x3020_0073,                // mret
        0x1050_0073,                // wfi
        amo(0b00010, 2, 10, 11, 5), // lr.w with rs2 != 0
        0x0000_2003 | 7 << 12,      // load funct3 7
        0x0000_4023,                // store funct3 4
        0x0000_2063,                // branch funct3 2
        0x0000_1067,                // jalr funct3 1
        0x0800_0033,                // OP funct7 4
        0x0000_200f,                // misc-mem funct3 2
        0x0000_003f,                // 48-bit prefix
        0xffff_ffff,
        0x0800_003b, // OP-32 funct7 4 funct3 0 (packw is funct3 4, the zext.h form rs2 = 0)
        0x6140_9393, // crc32 selector 0x14 (only 0x10..=0x13 and 0x18..=0x1b are defined)
    ] {
        let mut bus = TestBus::new(true);
        bus.code(TEXT, &[addi(1, 0, 1), enc]);
        let mut h = Hart::new(TEXT);
        let stop = run(&mut h, &mut bus, 100);
        assert_eq!(
            stop,
            Stop::Fault(Fault::IllegalInstruction {
                pc: TEXT + 4,
                encoding: enc
            }),
            "{enc:#010x}"
        );
        assert_eq!((h.pc, h.instret, h.x[1]), (TEXT + 4, 1, 1));
    }
    // A compressed illegal carries 16 bits.
    let mut bus = TestBus::new(true);
    bus.code16(TEXT, &[0x0000, 0xffff]);
    let mut h = Hart::new(TEXT);
    assert_eq!(
        run(&mut h, &mut bus, 10),
        Stop::Fault(Fault::IllegalInstruction {
            pc: TEXT,
            encoding: 0
        })
    );
}

// ---------------------------------------------------------------------------------------------
// RV64I

#[test]
fn writes_to_x0_are_discarded() {
    let h = exec(
        &[(1, 7), (2, DATA)],
        &[
            addi(0, 1, 5),
            r(0, 1, 1, 0, 0, 0x33), // add x0, x1, x1
            lui(0, 0x12345),
            jal(0, 4),
            load(3, 0, 2, 0),          // ld x0, 0(x2)
            0x4001_u32 | 0x0001 << 16, // c.li x0, 0 (a hint) ; c.nop
        ],
    );
    assert_eq!(h.x[0], 0);
    assert_eq!(h.x[1], 7);
}

#[test]
fn loads_sign_and_zero_extend() {
    let mut bus = TestBus::new(true);
    bus.poke(DATA, 8, 0x8000_0000_8080_8080);
    let (h, stop) = exec_with(
        &mut bus,
        &[(5, DATA)],
        &[
            load(0, 10, 5, 0), // lb
            load(4, 11, 5, 0), // lbu
            load(1, 12, 5, 0), // lh
            load(5, 13, 5, 0), // lhu
            load(2, 14, 5, 0), // lw
            load(6, 15, 5, 0), // lwu
            load(2, 16, 5, 4), // lw of 0x80000000
            load(3, 17, 5, 0), // ld
        ],
    );
    assert_eq!(stop, Stop::Ecall);
    assert_eq!(h.x[10], 0xffff_ffff_ffff_ff80);
    assert_eq!(h.x[11], 0x80);
    assert_eq!(h.x[12], 0xffff_ffff_ffff_8080);
    assert_eq!(h.x[13], 0x8080);
    assert_eq!(h.x[14], 0xffff_ffff_8080_8080);
    assert_eq!(h.x[15], 0x8080_8080);
    assert_eq!(h.x[16], 0xffff_ffff_8000_0000);
    assert_eq!(h.x[17], 0x8000_0000_8080_8080);
}

#[test]
fn word_operations_sign_extend_their_32_bit_results() {
    let h = exec(
        &[(5, 0x7fff_ffff), (6, 0xffff_ffff_0000_0001)],
        &[
            i(1, 5, 0, 10, 0x1b),          // addiw: 0x7fffffff + 1
            r(0, 6, 5, 0, 11, 0x3b),       // addw
            r(0x20, 5, 6, 0, 12, 0x3b),    // subw: 1 - 0x7fffffff
            i(31, 6, 1, 13, 0x1b),         // slliw 31
            i(0x400 | 1, 6, 5, 14, 0x1b),  // sraiw of 0x00000001 by 1
            i(4, 11, 5, 15, 0x1b),         // srliw of 0x80000000 by 4
            i(4 | 0x400, 11, 5, 16, 0x1b), // sraiw of 0x80000000 by 4
            lui(17, 0x80000),              // lui sign-extends
            i(-1, 0, 0, 18, 0x1b),         // addiw x18, x0, -1
        ],
    );
    assert_eq!(h.x[10], 0xffff_ffff_8000_0000);
    assert_eq!(h.x[11], 0xffff_ffff_8000_0000);
    assert_eq!(h.x[12], 0xffff_ffff_8000_0002);
    assert_eq!(h.x[13], 0xffff_ffff_8000_0000);
    assert_eq!(h.x[14], 0);
    assert_eq!(h.x[15], 0x0800_0000);
    assert_eq!(h.x[16], 0xffff_ffff_f800_0000);
    assert_eq!(h.x[17], 0xffff_ffff_8000_0000);
    assert_eq!(h.x[18], u64::MAX);
}

#[test]
fn jumps_link_and_clear_bit_zero() {
    // jalr with an odd target: bit 0 is cleared; rd == rs1 uses the old value.
    let h = exec(
        &[(5, TEXT + 9)],
        &[
            i(0, 5, 0, 5, 0x67), // jalr x5, 0(x5) -> TEXT + 8
            addi(6, 0, 1),       // skipped
            addi(7, 0, 2),       // TEXT + 8
        ],
    );
    assert_eq!((h.x[5], h.x[6], h.x[7]), (TEXT + 4, 0, 2));
}

#[test]
fn branches_compare_signed_and_unsigned() {
    // Each taken branch skips an addi that would set bit k of x10.
    let mut prog = Vec::new();
    for (k, f3) in [(0, 0u32), (1, 1), (2, 4), (3, 5), (4, 6), (5, 7)] {
        prog.push(b(8, 6, 5, f3));
        prog.push(i(1 << k, 10, 6, 10, 0x13)); // ori x10, x10, 1<<k
    }
    // x5 = -1, x6 = 1: beq no, bne yes, blt yes, bge no, bltu no, bgeu yes
    let h = exec(&[(5, u64::MAX), (6, 1)], &prog);
    assert_eq!(h.x[10], 0b011001);
}

// ---------------------------------------------------------------------------------------------
// M

#[test]
fn division_follows_the_spec_for_zero_and_overflow() {
    const OP: u32 = 0x33;
    const OPW: u32 = 0x3b;
    let min = i64::MIN as u64;
    assert_eq!(op_r(1, 4, OP, 7, 0), u64::MAX); // div by 0
    assert_eq!(op_r(1, 5, OP, 7, 0), u64::MAX); // divu by 0
    assert_eq!(op_r(1, 6, OP, 7, 0), 7); // rem by 0
    assert_eq!(op_r(1, 7, OP, 7, 0), 7); // remu by 0
    assert_eq!(op_r(1, 4, OP, min, u64::MAX), min); // div overflow
    assert_eq!(op_r(1, 6, OP, min, u64::MAX), 0); // rem overflow
    assert_eq!(op_r(1, 4, OP, -7i64 as u64, 2), -3i64 as u64); // rounds toward zero
    assert_eq!(op_r(1, 6, OP, -7i64 as u64, 2), -1i64 as u64);
    assert_eq!(op_r(1, 4, OPW, 7, 0), u64::MAX); // divw by 0
    assert_eq!(op_r(1, 5, OPW, 7, 0), u64::MAX); // divuw by 0
    assert_eq!(
        op_r(1, 6, OPW, 0xffff_ffff_8000_0007, 0),
        0xffff_ffff_8000_0007
    ); // remw
    assert_eq!(op_r(1, 7, OPW, 0x8000_0007, 0), 0xffff_ffff_8000_0007); // remuw sext
    assert_eq!(
        op_r(1, 4, OPW, 0x8000_0000, u64::MAX),
        0xffff_ffff_8000_0000
    );
    assert_eq!(op_r(1, 6, OPW, 0x8000_0000, u64::MAX), 0);
    assert_eq!(op_r(1, 5, OPW, 0xffff_fffe, 2), 0x7fff_ffff); // divuw on low words
    assert_eq!(
        op_r(1, 0, OPW, 0x1_0000_0002, 0x4000_0000),
        0xffff_ffff_8000_0000
    ); // mulw
}

/// `sllw`, `srlw`, `sraw`: the low five bits of rs2, the low word of rs1, the result's word
/// sign-extended.
#[test]
fn word_shifts_use_five_bits_and_sign_extend() {
    const OPW: u32 = 0x3b;
    assert_eq!(op_r(0, 1, OPW, 0x1_4000_0001, 33), 0xffff_ffff_8000_0002); // sllw by 1
    assert_eq!(op_r(0, 5, OPW, 0xffff_0000_8000_0000, 31 + 32), 1); // srlw by 31
    assert_eq!(op_r(0, 5, OPW, 0x8000_0000, 0), 0xffff_ffff_8000_0000); // srlw by 0
    assert_eq!(op_r(0x20, 5, OPW, 0x8000_0000, 4), 0xffff_ffff_f800_0000); // sraw
    assert_eq!(op_r(0x20, 5, OPW, 0x1_7000_0000, 36), 0x0700_0000); // sraw by 4
}

#[test]
fn high_multiplies_take_signedness_from_the_operands() {
    const OP: u32 = 0x33;
    let m1 = u64::MAX;
    assert_eq!(op_r(1, 0, OP, m1, m1), 1); // mul
    assert_eq!(op_r(1, 1, OP, m1, m1), 0); // mulh(-1, -1) = 0
    assert_eq!(op_r(1, 2, OP, m1, m1), m1); // mulhsu(-1, 2^64-1) = -1
    assert_eq!(op_r(1, 3, OP, m1, m1), m1 - 1); // mulhu
    assert_eq!(op_r(1, 1, OP, i64::MIN as u64, 2), m1); // mulh(MIN, 2) = -1
}

// ---------------------------------------------------------------------------------------------
// Zbb / Zbs

#[test]
fn bit_manipulation_results() {
    const OP: u32 = 0x33;
    let x = 0x0080_0000_0000_f0f0u64;
    let un =
        |imm12: i32, f3: u32, opc: u32, a: u64| exec(&[(5, a)], &[i(imm12, 5, f3, 7, opc)]).x[7];
    assert_eq!(un(0x600, 1, 0x13, x), 8); // clz
    assert_eq!(un(0x600, 1, 0x13, 0), 64);
    assert_eq!(un(0x601, 1, 0x13, x), 4); // ctz
    assert_eq!(un(0x602, 1, 0x13, x), 9); // cpop
    assert_eq!(un(0x600, 1, 0x1b, x), 16); // clzw
    assert_eq!(un(0x600, 1, 0x1b, 0), 32);
    assert_eq!(un(0x601, 1, 0x1b, 0), 32); // ctzw
    assert_eq!(un(0x602, 1, 0x1b, u64::MAX), 32); // cpopw
    assert_eq!(un(0x604, 1, 0x13, 0x80), u64::MAX - 0x7f); // sext.b
    assert_eq!(un(0x605, 1, 0x13, 0x8000), u64::MAX - 0x7fff); // sext.h
    assert_eq!(
        un(0x287, 5, 0x13, 0x0001_0000_00ff_0010),
        0x00ff_0000_00ff_00ff
    ); // orc.b
    assert_eq!(
        un(0x6b8, 5, 0x13, 0x0102_0304_0506_0708),
        0x0807_0605_0403_0201
    ); // rev8
    assert_eq!(un(0x600 | 4, 5, 0x13, 0x11), 0x1000_0000_0000_0001); // rori 4
    assert_eq!(un(0x600 | 4, 5, 0x1b, 0x10), 1); // roriw 4
    assert_eq!(un(0x600 | 4, 5, 0x1b, 0x1), 0x1000_0000); // roriw
    assert_eq!(un(0x600 | 1, 5, 0x1b, 0x1), 0xffff_ffff_8000_0000); // roriw sign-extends
    assert_eq!(
        exec(&[(5, 0x12_3456_789a)], &[r(4, 0, 5, 4, 7, 0x3b)]).x[7],
        0x789a
    ); // zext.h
    assert_eq!(op_r(0x20, 7, OP, 0b1100, 0b1010), 0b0100); // andn
    assert_eq!(op_r(0x20, 6, OP, 0, 0), u64::MAX); // orn
    assert_eq!(op_r(0x20, 4, OP, 5, 5), u64::MAX); // xnor
    assert_eq!(op_r(5, 4, OP, u64::MAX, 1), u64::MAX); // min (signed)
    assert_eq!(op_r(5, 5, OP, u64::MAX, 1), 1); // minu
    assert_eq!(op_r(5, 6, OP, u64::MAX, 1), 1); // max
    assert_eq!(op_r(5, 7, OP, u64::MAX, 1), u64::MAX); // maxu
    assert_eq!(op_r(0x30, 1, OP, 1 << 63, 65), 1); // rol by 65 & 63
    assert_eq!(op_r(0x30, 5, OP, 1, 1), 1 << 63); // ror
    assert_eq!(op_r(0x30, 1, 0x3b, 0x8000_0000, 1), 1); // rolw
    assert_eq!(op_r(0x30, 5, 0x3b, 1, 33), 0xffff_ffff_8000_0000); // rorw by 33 & 31
    assert_eq!(op_r(0x24, 1, OP, u64::MAX, 64 + 3), !8); // bclr uses rs2 & 63
    assert_eq!(op_r(0x24, 5, OP, 8, 3), 1); // bext
    assert_eq!(op_r(0x34, 1, OP, 8, 3), 0); // binv
    assert_eq!(op_r(0x14, 1, OP, 0, 63), 1 << 63); // bset
    let imm = |f6: i32, sh: i32, f3: u32, a: u64| {
        exec(&[(5, a)], &[i(f6 << 6 | sh, 5, f3, 7, 0x13)]).x[7]
    };
    assert_eq!(imm(0b010010, 63, 1, u64::MAX), u64::MAX >> 1); // bclri
    assert_eq!(imm(0b010010, 40, 5, 1 << 40), 1); // bexti
    assert_eq!(imm(0b011010, 0, 1, 1), 0); // binvi
    assert_eq!(imm(0b001010, 33, 1, 0), 1 << 33); // bseti
}

/// The draft Zbp / Zbr instructions the DPA compiler emits, decoded from their 0.93 encodings
/// and run by the engine, against the reference operations (`bitmanip`) and known values.
#[test]
fn zbp_and_zbr_drafts_execute() {
    const OP: u32 = 0x33;
    const OP32: u32 = 0x3b;
    const OP_IMM: u32 = 0x13;
    const OP_IMM32: u32 = 0x1b;
    let v = 0x0123_4567_89ab_cdef_u64;
    // R-type, OP: grev, gorc, shfl, unshfl, xperm.{n,b,h,w}, pack, packu, packh.
    assert_eq!(op_r(0x34, 5, OP, v, 63), v.reverse_bits()); // grev
    assert_eq!(op_r(0x34, 5, OP, v, 56 + 64), v.swap_bytes()); // grev uses rs2 & 63
    assert_eq!(
        op_r(0x14, 5, OP, 0x0010_0000_8000_0001, 7),
        0x00ff_0000_ff00_00ff
    ); // gorc
    assert_eq!(op_r(0x04, 1, OP, 0xffff_ffff, 31), 0x5555_5555_5555_5555); // shfl (zip)
    assert_eq!(op_r(0x04, 5, OP, 0x5555_5555_5555_5555, 31), 0xffff_ffff); // unshfl
    assert_eq!(op_r(0x14, 2, OP, v, 0xfedc_ba98_7654_3210), v); // xperm.n identity
    assert_eq!(op_r(0x14, 4, OP, v, 0x0001_0203_0405_0607), v.swap_bytes()); // xperm.b
    assert_eq!(
        op_r(0x14, 6, OP, v, 0x0000_0001_0002_0003),
        0xcdef_89ab_4567_0123
    ); // xperm.h
    assert_eq!(op_r(0x14, 0, OP, v, 1), 0x89ab_cdef_0123_4567); // xperm.w
    assert_eq!(
        op_r(0x04, 4, OP, 0xaaaa_aaaa_1111_1111, 0xbbbb_bbbb_2222_2222),
        0x2222_2222_1111_1111
    ); // pack
    assert_eq!(
        op_r(0x24, 4, OP, 0xaaaa_aaaa_1111_1111, 0xbbbb_bbbb_2222_2222),
        0xbbbb_bbbb_aaaa_aaaa
    ); // packu
    assert_eq!(op_r(0x04, 7, OP, 0x1234, 0x5678), 0x7834); // packh
                                                           // OP-32: grevw, gorcw, shflw, unshflw, packw, packuw (results sign-extended).
    assert_eq!(op_r(0x34, 5, OP32, 0x1234_5678, 24), 0x7856_3412); // grevw (rev8.w)
    assert_eq!(op_r(0x34, 5, OP32, 0x0000_0080, 24), 0xffff_ffff_8000_0000); // sign-extended
    assert_eq!(op_r(0x14, 5, OP32, 0x0000_0100, 31), u64::MAX); // gorcw
    assert_eq!(op_r(0x04, 1, OP32, 0xffff, 15), 0x5555_5555); // shflw
    assert_eq!(op_r(0x04, 5, OP32, 0x5555_5555, 15), 0xffff); // unshflw
    assert_eq!(op_r(0x04, 4, OP32, 0x1234, 0x8765), 0xffff_ffff_8765_1234); // packw
    assert_eq!(op_r(0x04, 4, OP32, 0x8234_1234, 0), 0x1234); // packw x0 = zext.h
    assert_eq!(op_r(0x24, 4, OP32, 0x1111_2222, 0x3333_4444), 0x3333_1111); // packuw
                                                                            // Immediate forms: grevi (rev8 = 56 stays), gorci, shfli / unshfli, greviw, gorciw.
    let imm = |f6: i32, sh: i32, f3: u32, op: u32, a: u64| {
        exec(&[(5, a)], &[i(f6 << 6 | sh, 5, f3, 7, op)]).x[7]
    };
    assert_eq!(imm(0b011010, 63, 5, OP_IMM, v), v.reverse_bits()); // grevi (rev)
    assert_eq!(imm(0b011010, 56, 5, OP_IMM, v), v.swap_bytes()); // rev8
    assert_eq!(imm(0b001010, 7, 5, OP_IMM, 0x100), 0xff00); // orc.b
    assert_eq!(imm(0b001010, 1, 5, OP_IMM, 0b0100), 0b1100); // gorci 1
    assert_eq!(
        imm(0b000010, 31, 1, OP_IMM, 0xffff_ffff),
        0x5555_5555_5555_5555
    ); // shfli
    assert_eq!(
        imm(0b000010, 31, 5, OP_IMM, 0x5555_5555_5555_5555),
        0xffff_ffff
    ); // unshfli
    assert_eq!(imm(0b011010, 24, 5, OP_IMM32, 0x1234_5678), 0x7856_3412); // greviw
    assert_eq!(imm(0b001010, 7, 5, OP_IMM32, 0x0001_0000), 0x00ff_0000); // gorciw
                                                                         // Zbr: crc32.{b,h,w,d} and crc32c.*: R-type, OP-IMM, funct7 0110000, rs2 selects.
    let crc = |sel: u32, a: u64| exec(&[(5, a)], &[r(0x30, sel, 5, 1, 7, OP_IMM)]).x[7];
    let check = |sel_b: u32| {
        let s = b"123456789"
            .iter()
            .fold(0xffff_ffffu64, |s, &b| crc(sel_b, s ^ u64::from(b)));
        !s & 0xffff_ffff
    };
    assert_eq!(check(0x10), 0xcbf4_3926, "crc32.b over the check string");
    assert_eq!(check(0x18), 0xe306_9283, "crc32c.b over the check string");
    for (sel, nbits, poly) in [
        (0x11, 16, bitmanip::CRC32),
        (0x12, 32, bitmanip::CRC32),
        (0x13, 64, bitmanip::CRC32),
        (0x19, 16, bitmanip::CRC32C),
        (0x1a, 32, bitmanip::CRC32C),
        (0x1b, 64, bitmanip::CRC32C),
    ] {
        assert_eq!(
            crc(sel, v),
            bitmanip::crc(v, nbits, poly),
            "crc selector {sel:#x}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// A

#[test]
fn amos_return_the_old_value_and_store_the_operation() {
    // (funct5, operand, old, expected new), word and doubleword.
    let cases: &[(u32, u64, u64, u64)] = &[
        (0b00001, 5, 9, 5),                // swap
        (0b00000, 5, 9, 14),               // add
        (0b00100, 0b0110, 0b0101, 0b0011), // xor
        (0b01100, 0b0110, 0b0101, 0b0100), // and
        (0b01000, 0b0110, 0b0101, 0b0111), // or
        (0b10000, u64::MAX, 1, u64::MAX),  // min (signed)
        (0b10100, u64::MAX, 1, 1),         // max
        (0b11000, u64::MAX, 1, 1),         // minu
        (0b11100, u64::MAX, 1, u64::MAX),  // maxu
    ];
    for fast in [true, false] {
        for &(f5, operand, old, new) in cases {
            for (f3, size) in [(2u32, 4u8), (3, 8)] {
                let mask = if size == 4 { 0xffff_ffff } else { u64::MAX };
                let mut bus = TestBus::new(fast);
                bus.poke(DATA + 8, 8, 0xaaaa_aaaa_aaaa_aaaa);
                bus.poke(DATA, size, old & mask);
                let (h, stop) = exec_with(
                    &mut bus,
                    &[(5, DATA), (6, operand)],
                    &[amo(f5, f3, 7, 5, 6)],
                );
                assert_eq!(stop, Stop::Ecall);
                let sext = |v: u64| if size == 4 { v as i32 as i64 as u64 } else { v };
                assert_eq!(h.x[7], sext(old & mask), "f5 {f5:#b} size {size}");
                assert_eq!(bus.peek(DATA, size), new & mask, "f5 {f5:#b} size {size}");
                if size == 4 {
                    assert_eq!(bus.peek(DATA + 4, 4), 0, "word AMO touched the next word");
                }
            }
        }
    }
    // amoadd.w returns the old word sign-extended.
    let mut bus = TestBus::new(true);
    bus.poke(DATA, 4, 0x8000_0000);
    let (h, _) = exec_with(&mut bus, &[(5, DATA), (6, 1)], &[amo(0, 2, 7, 5, 6)]);
    assert_eq!(h.x[7], 0xffff_ffff_8000_0000);
}

#[test]
fn lr_sc_succeeds_once_and_fails_after_an_intervening_store() {
    let lr_d = |rd| amo(0b00010, 3, rd, 5, 0);
    let sc_d = |rd| amo(0b00011, 3, rd, 5, 6);
    for fast in [true, false] {
        let mut bus = TestBus::new(fast);
        bus.poke(DATA, 8, 41);
        let (h, _) = exec_with(
            &mut bus,
            &[(5, DATA), (6, 100)],
            &[
                lr_d(10),
                sc_d(11), // succeeds: 0
                sc_d(12), // no reservation any more: 1
                lr_d(13),
                s(4, 0, 5, 2), // sw x0, 4(x5): same doubleword
                sc_d(14),      // fails: 1
                lr_d(15),
                amo(0b00011, 3, 16, 7, 6), // sc.d at another address (x7): fails
            ],
        );
        assert_eq!((h.x[10], h.x[11], h.x[12]), (41, 0, 1));
        assert_eq!((h.x[13], h.x[14]), (100, 1));
        assert_eq!(h.x[16], 1);
        assert_eq!(bus.peek(DATA, 4), 100);
        assert_eq!(bus.peek(DATA + 4, 4), 0);
    }
    // A store elsewhere keeps the reservation; lr.w / sc.w.
    let mut bus = TestBus::new(true);
    let (h, _) = exec_with(
        &mut bus,
        &[(5, DATA), (6, 7)],
        &[
            amo(0b00010, 2, 10, 5, 0),
            s(64, 6, 5, 3),
            amo(0b00011, 2, 11, 5, 6),
        ],
    );
    assert_eq!(h.x[11], 0);
    assert_eq!(bus.peek(DATA, 4), 7);
    assert_eq!(h.reservation, None);
}

/// Two harts on one word: both take a reservation, one SC wins, the other fails although its
/// own hart never stored there (the reservation is a compare-and-swap against what LR read).
#[test]
fn of_two_harts_reserving_one_word_only_one_sc_succeeds() {
    let lr_d = |rd| amo(0b00010, 3, rd, 5, 0);
    let sc_d = |rd| amo(0b00011, 3, rd, 5, 6);
    for fast in [true, false] {
        let mut bus = TestBus::new(fast);
        bus.poke(DATA, 8, 41);
        // Each hart: lr.d; ecall | sc.d; ecall (so the two interleave).
        bus.code(TEXT, &[lr_d(10), ECALL, sc_d(11), ECALL]);
        let mut a = Hart::new(TEXT);
        let mut b = Hart::new(TEXT);
        for (h, v) in [(&mut a, 100), (&mut b, 200)] {
            h.x[5] = DATA;
            h.x[6] = v;
        }
        assert_eq!(run(&mut a, &mut bus, 100), Stop::Ecall);
        assert_eq!(run(&mut b, &mut bus, 100), Stop::Ecall);
        assert_eq!((a.x[10], b.x[10]), (41, 41), "both reserved the same value");
        assert_eq!(run(&mut b, &mut bus, 100), Stop::Ecall);
        assert_eq!(b.x[11], 0, "the first SC stores");
        assert_eq!(run(&mut a, &mut bus, 100), Stop::Ecall);
        assert_eq!(a.x[11], 1, "the second SC fails: the word changed under it");
        assert_eq!(bus.peek(DATA, 8), 200, "fast path {fast}");
    }
}

#[test]
fn misaligned_accesses_fault_and_change_nothing() {
    let cases: &[(u32, Access, u8)] = &[
        (load(2, 10, 5, 1), Access::Load, 4),    // lw
        (load(1, 10, 5, 3), Access::Load, 2),    // lh
        (load(3, 10, 5, 4), Access::Load, 8),    // ld
        (s(2, 6, 5, 3), Access::Store, 8),       // sd
        (s(1, 6, 5, 1), Access::Store, 2),       // sh
        (amo(0, 2, 10, 7, 6), Access::Store, 4), // amoadd.w at +2
        (amo(1, 3, 10, 7, 6), Access::Store, 8), // amoswap.d at +2
        (amo(2, 2, 10, 7, 0), Access::Load, 4),  // lr.w at +2
        (amo(3, 3, 10, 7, 6), Access::Store, 8), // sc.d at +2
    ];
    for fast in [true, false] {
        for &(insn, access, size) in cases {
            let mut bus = TestBus::new(fast);
            bus.poke(DATA, 8, 0x1234);
            let (h, stop) = exec_with(
                &mut bus,
                &[(5, DATA), (6, 99), (7, DATA + 2), (10, 55)],
                &[addi(8, 0, 1), insn],
            );
            let addr = match stop {
                Stop::Fault(Fault::Memory {
                    pc,
                    addr,
                    access: a,
                    size: sz,
                    error: MemError::Misaligned,
                }) => {
                    assert_eq!((pc, a, sz), (TEXT + 4, access, size), "{insn:#010x}");
                    addr
                }
                other => panic!("{insn:#010x}: {other:?}"),
            };
            assert_ne!(addr % u64::from(size), 0);
            assert_eq!((h.pc, h.instret, h.x[10], h.x[8]), (TEXT + 4, 1, 55, 1));
            assert_eq!(bus.peek(DATA, 8), 0x1234);
        }
    }
}

#[test]
fn unmapped_accesses_fault_mid_block_and_change_nothing() {
    // A load and a store to an address no region and no device covers, after an instruction
    // that retires: the fault names the access, the one before retired, the rest did not run.
    const NOWHERE: u64 = 0x10;
    let cases: &[(u32, Access, u8)] = &[
        (load(2, 10, 9, 0), Access::Load, 4), // lw
        (load(3, 10, 9, 0), Access::Load, 8), // ld
        (load(4, 10, 9, 0), Access::Load, 1), // lbu
        (s(0, 6, 9, 2), Access::Store, 4),    // sw
        (s(0, 6, 9, 0), Access::Store, 1),    // sb
        (s(0, 6, 9, 3), Access::Store, 8),    // sd
    ];
    for fast in [true, false] {
        for &(insn, access, size) in cases {
            let mut bus = TestBus::new(fast);
            bus.poke(DATA, 8, 0x1234);
            let (h, stop) = exec_with(
                &mut bus,
                &[(5, DATA), (6, 99), (9, NOWHERE), (10, 55)],
                &[addi(8, 0, 1), insn, addi(11, 0, 7)],
            );
            match stop {
                Stop::Fault(Fault::Memory {
                    pc,
                    addr,
                    access: a,
                    size: sz,
                    error: MemError::Unmapped,
                }) => assert_eq!((pc, addr, a, sz), (TEXT + 4, NOWHERE, access, size)),
                other => panic!("{insn:#010x}: {other:?}"),
            }
            assert_eq!(
                (h.pc, h.instret, h.x[10], h.x[8], h.x[11]),
                (TEXT + 4, 1, 55, 1, 0)
            );
            assert_eq!(bus.peek(DATA, 8), 0x1234);
        }
    }
}

/// The pairs the interpreter fuses run as their two instructions do: with every register
/// choice that changes the result (the second reading the first's result once or twice, the
/// other operand elsewhere), and cut by the budget between the two (the first alone retires,
/// the second runs on resuming).
#[test]
fn fused_pairs_run_as_their_two_instructions() {
    let slli = |rd, rs1, sh: i32| i(sh, rs1, 1, rd, 0x13);
    let srli = |rd, rs1, sh: i32| i(sh, rs1, 5, rd, 0x13);
    let andi = |rd, rs1, imm: i32| i(imm, rs1, 7, rd, 0x13);
    let addiw = |rd, rs1, imm: i32| i(imm, rs1, 0, rd, 0x1b);
    let add = |rd, rs1, rs2| r(0, rs2, rs1, 0, rd, 0x33);
    let auipc = |rd: u32, imm20: u32| imm20 << 12 | rd << 7 | 0x17;
    let (a, b): (u64, u64) = (0x1234_5678_9abc_def1, 0x0fed_cba9_8765_4321);
    // (pair, the pair's result in x7)
    let cases: Vec<([u32; 2], u64)> = vec![
        ([slli(7, 5, 3), add(7, 7, 6)], (a << 3).wrapping_add(b)),
        ([slli(7, 5, 3), add(7, 6, 7)], (a << 3).wrapping_add(b)),
        ([slli(7, 5, 3), add(7, 7, 7)], (a << 3).wrapping_add(a << 3)),
        (
            [slli(7, 7, 2), add(7, 7, 5)],
            (0x77u64 << 2).wrapping_add(a),
        ),
        ([slli(7, 5, 32), srli(7, 7, 32)], a & 0xffff_ffff),
        ([slli(7, 5, 8), srli(7, 7, 40)], (a << 8) >> 40),
        ([andi(7, 5, 0xff), slli(7, 7, 2)], (a & 0xff) << 2),
        ([andi(7, 5, -8), slli(7, 7, 1)], (a & !7) << 1),
        ([lui(7, 0x12345), addi(7, 7, -1)], 0x1234_5000 - 1),
        ([lui(7, 0x80000), addi(7, 7, 0x10)], 0xffff_ffff_8000_0010),
        ([lui(7, 0x80000), addiw(7, 7, -1)], 0x7fff_ffff),
        ([auipc(7, 0x1), addi(7, 7, 0x24)], TEXT + 4 + 0x1000 + 0x24),
    ];
    for (pair, want) in cases {
        // Behind an instruction that retires, in one block, with x7 preset.
        let regs = [(5, a), (6, b), (7, 0x77)];
        let h = exec(&regs, &[addi(8, 0, 1), pair[0], pair[1]]);
        assert_eq!((h.x[7], h.x[8]), (want, 1), "{pair:08x?}");
        assert_eq!(h.instret, 4, "{pair:08x?}");
        // The budget ends between the two: the first alone, then the rest.
        for fast in [true, false] {
            let mut bus = TestBus::new(fast);
            let mut code = vec![addi(8, 0, 1), pair[0], pair[1]];
            code.push(ECALL);
            bus.code(TEXT, &code);
            let mut h = Hart::new(TEXT);
            for &(n, v) in &regs {
                h.x[n] = v;
            }
            assert_eq!(run(&mut h, &mut bus, 2), Stop::Budget);
            assert_eq!((h.pc, h.instret), (TEXT + 8, 2), "{pair:08x?}");
            let mut alone = Hart::new(TEXT + 4);
            for &(n, v) in &regs {
                alone.x[n] = v;
            }
            let mut bus1 = TestBus::new(fast);
            bus1.code(TEXT, &code);
            assert_eq!(run(&mut alone, &mut bus1, 1), Stop::Budget);
            assert_eq!(h.x[7], alone.x[7], "the first alone: {pair:08x?}");
            assert_eq!(run(&mut h, &mut bus, 100), Stop::Ecall);
            assert_eq!((h.x[7], h.instret), (want, 4), "resumed: {pair:08x?}");
        }
    }
}

/// An `add` and a load through the sum (fused): the sum stays in the add's register, every
/// load width extends as alone, through the region fast path and the bus; a load that faults
/// leaves the add retired; a budget that ends between the two retires the add alone.
#[test]
fn an_add_and_a_load_through_its_sum_run_as_two_instructions() {
    const NOWHERE: u64 = 0x10;
    let add = |rd, rs1, rs2| r(0, rs2, rs1, 0, rd, 0x33);
    let word: u64 = 0x8000_0000_8080_8080;
    // (funct3, the loaded value of `word` at offset 0)
    let loads: [(u32, u64); 7] = [
        (0, 0xffff_ffff_ffff_ff80),
        (1, 0xffff_ffff_ffff_8080),
        (2, 0xffff_ffff_8080_8080),
        (3, word),
        (4, 0x80),
        (5, 0x8080),
        (6, 0x8080_8080),
    ];
    for fast in [true, false] {
        for (f3, want) in loads {
            // Into another register, and into the sum's own.
            for rd in [8, 7] {
                let pair = [add(7, 5, 6), load(f3, rd, 7, 8)];
                let mut bus = TestBus::new(fast);
                bus.poke(DATA + 16, 8, word);
                let (h, stop) = exec_with(&mut bus, &[(5, DATA), (6, 8)], &pair);
                assert_eq!(stop, Stop::Ecall, "f3 {f3} fast {fast}");
                assert_eq!(h.x[rd as usize], want, "f3 {f3} rd {rd} fast {fast}");
                if rd == 8 {
                    assert_eq!(h.x[7], DATA + 8, "the sum is kept");
                }
                assert_eq!(h.instret, 3);

                // The load faults: the add has retired, the load has not.
                let mut bus = TestBus::new(fast);
                let (h, stop) = exec_with(
                    &mut bus,
                    &[(5, NOWHERE), (6, 0), (8, 55)],
                    &[addi(9, 0, 1), pair[0], pair[1]],
                );
                match stop {
                    Stop::Fault(Fault::Memory {
                        pc,
                        addr,
                        access: Access::Load,
                        ..
                    }) => assert_eq!((pc, addr), (TEXT + 8, NOWHERE + 8)),
                    other => panic!("f3 {f3} fast {fast}: {other:?}"),
                }
                assert_eq!((h.pc, h.instret, h.x[7], h.x[9]), (TEXT + 8, 2, NOWHERE, 1));
                if rd == 8 {
                    assert_eq!(h.x[8], 55, "the faulting load wrote nothing");
                }

                // The budget ends between the two: the add alone, then the load on resuming.
                let mut bus = TestBus::new(fast);
                bus.poke(DATA + 16, 8, word);
                bus.code(TEXT, &[pair[0], pair[1], ECALL]);
                let mut h = Hart::new(TEXT);
                h.x[5] = DATA;
                h.x[6] = 8;
                assert_eq!(run(&mut h, &mut bus, 1), Stop::Budget);
                assert_eq!((h.pc, h.instret, h.x[7]), (TEXT + 4, 1, DATA + 8));
                if rd == 8 {
                    assert_eq!(h.x[8], 0, "the load has not run");
                }
                assert_eq!(run(&mut h, &mut bus, 100), Stop::Ecall);
                assert_eq!((h.x[rd as usize], h.instret), (want, 3));
            }
        }
    }
}

/// Blocks run one after the other without the outer loop (chained, by a taken branch and by
/// falling through into the next block) count exactly: `rdinstret` inside them reads the
/// hart's count, and every budget stops at exactly its instruction, the run resuming to the
/// same end.
#[test]
fn chained_blocks_count_and_stop_exactly() {
    let csrr = |csr: i32, rd| i(csr, 0, 2, rd, 0x73);
    let beq = |rs1, rs2, off| b(off, rs2, rs1, 0);
    let blt = |rs1, rs2, off| b(off, rs2, rs1, 4);
    // Two blocks per iteration: the first falls through (its branch is never taken), the
    // second branches back; 5 instructions per iteration, 50 iterations, then the ecall.
    let code = [
        addi(5, 5, 1),
        csrr(0xc02, 6),
        beq(5, 0, 16),
        addi(8, 8, 2),
        blt(5, 7, -16),
        ECALL,
    ];
    let pcs = [TEXT, TEXT + 4, TEXT + 8, TEXT + 12, TEXT + 16];
    let start = 1000;
    let fresh = || {
        let mut h = Hart::new(TEXT);
        h.instret = start;
        h.x[7] = 50;
        h
    };
    for fast in [true, false] {
        let mut bus = TestBus::new(fast);
        bus.code(TEXT, &code);
        let mut whole = fresh();
        assert_eq!(run(&mut whole, &mut bus, 10_000), Stop::Ecall);
        assert_eq!(
            (whole.instret, whole.x[5], whole.x[6], whole.x[8], whole.pc),
            (start + 251, 50, start + 49 * 5 + 1, 100, TEXT + 24),
            "fast {fast}"
        );
        for budget in 1..251 {
            let mut h = fresh();
            assert_eq!(
                run(&mut h, &mut bus, budget),
                Stop::Budget,
                "budget {budget}"
            );
            assert_eq!(h.instret, start + budget, "budget {budget}");
            // After the last iteration's branch (not taken), the ecall.
            let pc = if budget == 250 {
                TEXT + 20
            } else {
                pcs[(budget % 5) as usize]
            };
            assert_eq!(h.pc, pc, "budget {budget}");
            assert_eq!(h.x[5], budget.div_ceil(5), "budget {budget}");
            assert_eq!(
                run(&mut h, &mut bus, 10_000),
                Stop::Ecall,
                "budget {budget}"
            );
            assert_eq!(
                (h.instret, h.x[5], h.x[6], h.x[8], h.pc),
                (whole.instret, whole.x[5], whole.x[6], whole.x[8], whole.pc),
                "budget {budget} fast {fast}"
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Budget, ecall / ebreak, counters, faults.

#[test]
fn the_budget_is_exact_and_runs_resume() {
    let mut bus = TestBus::new(true);
    bus.code(TEXT, &[addi(5, 5, 1), jal(0, -4)]);
    let mut h = Hart::new(TEXT);
    assert_eq!(run(&mut h, &mut bus, 0), Stop::Budget);
    assert_eq!(h.instret, 0);
    assert_eq!(run(&mut h, &mut bus, 1001), Stop::Budget);
    assert_eq!((h.instret, h.x[5], h.pc), (1001, 501, TEXT + 4));
    assert_eq!(run(&mut h, &mut bus, 999), Stop::Budget);
    assert_eq!((h.instret, h.x[5], h.pc), (2000, 1000, TEXT));
}

#[test]
fn ecall_retires_and_ebreak_does_not() {
    let mut bus = TestBus::new(true);
    bus.code(TEXT, &[addi(17, 0, 93), ECALL, EBREAK]);
    let mut h = Hart::new(TEXT);
    assert_eq!(run(&mut h, &mut bus, 100), Stop::Ecall);
    assert_eq!((h.pc, h.instret), (TEXT + 8, 2));
    assert_eq!(run(&mut h, &mut bus, 100), Stop::Ebreak);
    assert_eq!((h.pc, h.instret), (TEXT + 8, 2));
    // ecall as the last instruction of the budget is still reported.
    let mut h = Hart::new(TEXT);
    assert_eq!(run(&mut h, &mut bus, 2), Stop::Ecall);
}

#[test]
fn counters_read_instret_and_bus_time() {
    let mut bus = TestBus::new(true);
    bus.time = 12345;
    let csrr = |csr: i32, rd| i(csr, 0, 2, rd, 0x73);
    let (h, _) = exec_with(
        &mut bus,
        &[],
        &[
            addi(1, 0, 1),
            csrr(0xc02, 10),
            csrr(0xc00, 11),
            csrr(0xc01, 12),
        ],
    );
    assert_eq!((h.x[10], h.x[11], h.x[12]), (1, 2, 12345));
    // instret continues from the hart's counter.
    let mut h = Hart::new(TEXT);
    h.instret = 1000;
    bus.code(TEXT, &[csrr(0xc02, 10), ECALL]);
    run(&mut h, &mut bus, 10);
    assert_eq!((h.x[10], h.instret), (1000, 1002));
}

#[test]
fn fetch_faults_name_the_address_and_the_reason() {
    let mut bus = TestBus::new(true);
    // Jump into data (not executable) and to nowhere.
    bus.code(TEXT, &[lui(5, (DATA >> 12) as u32), i(0, 5, 0, 0, 0x67)]);
    let mut h = Hart::new(TEXT);
    assert_eq!(
        run(&mut h, &mut bus, 10),
        Stop::Fault(Fault::Memory {
            pc: DATA,
            addr: DATA,
            access: Access::Fetch,
            size: 2,
            error: MemError::Denied
        })
    );
    let mut h = Hart::new(0x5000);
    assert!(matches!(
        run(&mut h, &mut bus, 10),
        Stop::Fault(Fault::Memory {
            addr: 0x5000,
            access: Access::Fetch,
            error: MemError::Unmapped,
            ..
        })
    ));
    // A 32-bit instruction whose second half is past the end of executable memory.
    bus.code16(TEXT + 0xffe, &[0x0013]);
    let mut h = Hart::new(TEXT + 0xffe);
    assert_eq!(
        run(&mut h, &mut bus, 10),
        Stop::Fault(Fault::Memory {
            pc: TEXT + 0xffe,
            addr: TEXT + 0x1000,
            access: Access::Fetch,
            size: 2,
            error: MemError::Unmapped
        })
    );
    // An odd pc.
    let mut h = Hart::new(TEXT + 1);
    assert!(matches!(
        run(&mut h, &mut bus, 10),
        Stop::Fault(Fault::Memory {
            error: MemError::Misaligned,
            access: Access::Fetch,
            ..
        })
    ));
}

#[test]
fn stores_to_text_are_denied_by_the_bus() {
    for fast in [true, false] {
        let mut bus = TestBus::new(fast);
        let (h, stop) = exec_with(&mut bus, &[(5, TEXT)], &[s(0, 5, 5, 3)]);
        assert_eq!(
            stop,
            Stop::Fault(Fault::Memory {
                pc: TEXT,
                addr: TEXT,
                access: Access::Store,
                size: 8,
                error: MemError::Denied
            })
        );
        assert_eq!(h.instret, 0);
    }
}

#[test]
fn device_accesses_go_through_the_bus() {
    let mut bus = TestBus::new(true);
    let (h, stop) = exec_with(
        &mut bus,
        &[(5, DEV), (6, 3)],
        &[
            s(0x100, 6, 5, 3),    // sd to the device
            load(3, 10, 5, 0x40), // ld from the device
            amo(0, 3, 11, 5, 6),  // amoadd.d on the device: load then store
        ],
    );
    assert_eq!(stop, Stop::Ecall);
    assert_eq!(h.x[10], 0x1122_3344_5566_7788);
    assert_eq!(h.x[11], 0x1122_3344_5566_7788);
    assert_eq!(
        bus.dev_stores,
        vec![(DEV + 0x100, 8, 3), (DEV, 8, 0x1122_3344_5566_778b)]
    );
}

// ---------------------------------------------------------------------------------------------
// The code cache.

#[test]
fn stores_into_decoded_code_take_effect_without_fence_i() {
    for fast in [true, false] {
        let mut bus = TestBus::with_cache(fast);
        // Loop twice over a patched instruction: first `addi x10, x10, 1`, then the program
        // rewrites it to `addi x10, x10, 100` (x6 holds the new encoding).
        let target = RWX + 16;
        bus.code(
            RWX,
            &[
                addi(7, 0, 2), // loop count
                lui(5, (RWX >> 12) as u32),
                addi(0, 0, 0),
                addi(0, 0, 0),
                addi(10, 10, 1), // RWX + 16: the patched instruction
                s(16, 6, 5, 2),  // sw x6, 16(x5)
                addi(7, 7, -1),
                b(-12, 0, 7, 1), // bne x7, x0, -12 (back to the patched one)
                ECALL,
            ],
        );
        let mut h = Hart::new(RWX);
        h.x[6] = u64::from(addi(10, 10, 100));
        assert_eq!(run(&mut h, &mut bus, 100), Stop::Ecall);
        assert_eq!(h.x[10], 101, "fast {fast}");
        assert_eq!(bus.peek(target, 4), u64::from(addi(10, 10, 100)));
        // The cache was handed back to the bus and holds the page.
        assert!(bus.cache.as_ref().unwrap().pages() >= 1);
        // Changing code behind the engine's back needs a clear.
        bus.poke(target, 4, u64::from(addi(10, 10, 7)));
        bus.cache.as_mut().unwrap().clear();
        let mut h = Hart::new(target);
        bus.poke(target + 4, 4, u64::from(ECALL));
        run(&mut h, &mut bus, 10);
        assert_eq!(h.x[10], 7);
    }
}

/// Loads and stores that alternate between two regions (data and the page of the running
/// code) find the other one as the region before the last: a store there still drops the
/// decoded instruction it rewrites, and loads read what the stores wrote. The loop rewrites
/// the `addi` it runs with a larger immediate each time (1, then 100, then 101).
#[test]
fn alternating_regions_keep_loads_stores_and_code_exact() {
    for fast in [true, false] {
        let mut bus = TestBus::with_cache(fast);
        let add = |rd, rs1, rs2| r(0, rs2, rs1, 0, rd, 0x33);
        bus.code(
            RWX,
            &[
                addi(7, 0, 3),               // loop count
                lui(5, (RWX >> 12) as u32),  // x5: the code page
                lui(8, (DATA >> 12) as u32), // x8: data
                lui(9, 0x100),               // x9: one more in an I-type immediate
                addi(10, 10, 1),             // RWX + 16: the patched instruction
                s(0, 6, 8, 2),               // sw x6, 0(x8)
                s(16, 6, 5, 2),              // sw x6, 16(x5)
                load(2, 11, 8, 0),           // lw x11, 0(x8)
                load(2, 12, 5, 16),          // lw x12, 16(x5)
                add(6, 6, 9),
                addi(7, 7, -1),
                b(-28, 0, 7, 1), // bne x7, x0, -28 (back to the patched one)
                ECALL,
            ],
        );
        let mut h = Hart::new(RWX);
        h.x[6] = u64::from(addi(10, 10, 100));
        assert_eq!(run(&mut h, &mut bus, 200), Stop::Ecall, "fast {fast}");
        assert_eq!(h.x[10], 1 + 100 + 101, "fast {fast}");
        let last = i64::from(addi(10, 10, 102) as i32) as u64;
        assert_eq!((h.x[11], h.x[12]), (last, last), "fast {fast}");
    }
}

/// A block the run already went on into by a link (the last targets `chain` keeps) is
/// rewritten by a store from the other block of the loop: the next time the loop goes
/// back, the rewritten instruction runs, not the block decoded before the store. The loop's
/// stores go to the data page, but on the third iteration to the code page, over the `addi`
/// at the loop's head (+1 becomes +100): 1 + 1 + 1 + 100 + 100 + 100.
#[test]
fn a_linked_block_rewritten_by_a_store_runs_its_new_code() {
    for fast in [true, false] {
        let mut bus = TestBus::with_cache(fast);
        let rr = |f3, rd, rs1, rs2| r(0, rs2, rs1, f3, rd, 0x33);
        bus.code(
            RWX,
            &[
                addi(7, 0, 6),                        // RWX: iterations
                lui(17, (DATA >> 12) as u32),         // x17: data
                lui(16, ((RWX - DATA) >> 12) as u32), // x16: code less data
                jal(0, 4),                            // RWX + 12: on to the head
                addi(10, 10, 1),                      // RWX + 16, the head: rewritten
                jal(0, 4),                            // on into the other block
                addi(7, 7, -1),                       // RWX + 24
                i(3, 7, 4, 12, 0x13),                 // xori x12, x7, 3
                i(1, 12, 3, 12, 0x13),                // sltiu x12, x12, 1
                r(1, 16, 12, 0, 12, 0x33),            // mul x12, x12, x16
                rr(0, 5, 17, 12),                     // add x5, x17, x12
                s(16, 6, 5, 2),                       // sw x6, 16(x5)
                b(-32, 0, 7, 1),                      // bne x7, x0, head
                ECALL,
            ],
        );
        let mut h = Hart::new(RWX);
        h.x[6] = u64::from(addi(10, 10, 100));
        assert_eq!(run(&mut h, &mut bus, 500), Stop::Ecall, "fast {fast}");
        assert_eq!(h.x[10], 1 + 1 + 1 + 100 + 100 + 100, "fast {fast}");
    }
}

/// Compiled code stores inline only where that needs none of the interpreter's after-store
/// work. Here the loop's region is compiled at first sight, and from the second iteration on
/// the last store's region is the read-write-execute page that holds the loop: a store there
/// must still drop the instruction it rewrites (each iteration adds one more to x10).
#[cfg(feature = "jit")]
#[test]
fn compiled_stores_into_a_page_with_code_drop_what_they_overwrite() {
    let mut bus = TestBus::new(true);
    let mut cache = CodeCache::new();
    assert!(cache.set_jit(Some(1)));
    bus.cache = Some(cache);
    bus.code(
        RWX,
        &[
            addi(7, 0, 5),              // loop count
            lui(5, (RWX >> 12) as u32), // x5: the page
            lui(8, 1),                  // x8: 1 << 12, shifted below into the immediate
            i(8, 8, 1, 8, 0x13),        // slli x8, x8, 8: 1 << 20, one more in addi's imm
            s(512, 0, 5, 2),            // RWX + 16, loop: sw x0, 512(x5) (data beside code)
            r(0, 8, 6, 0, 6, 0x33),     // add x6, x6, x8: the next encoding
            s(32, 6, 5, 2),             // sw x6, 32(x5): rewrite RWX + 32
            addi(0, 0, 0),              // nop
            addi(10, 10, 0),            // RWX + 32: the rewritten instruction
            addi(7, 7, -1),
            b(-24, 0, 7, 1), // bne x7, x0, loop
            ECALL,
        ],
    );
    let mut h = Hart::new(RWX);
    h.x[6] = u64::from(addi(10, 10, 0));
    assert_eq!(run(&mut h, &mut bus, 1000), Stop::Ecall);
    assert_eq!(h.x[10], 1 + 2 + 3 + 4 + 5);
    assert_eq!(bus.peek(RWX + 32, 4), u64::from(addi(10, 10, 5)));
}

/// A store by compiled code ends a reservation on its doubleword, as the interpreter's does:
/// the store goes to a page without code, but the reservation taken by `lr.d` (interpreted)
/// is live when the compiled block after it is entered. The store writes the very value LR
/// read, so only the ended reservation makes the SC fail.
#[cfg(feature = "jit")]
#[test]
fn compiled_stores_end_a_reservation() {
    let lr_d = |rd| amo(0b00010, 3, rd, 5, 0);
    let sc_d = |rd| amo(0b00011, 3, rd, 5, 6);
    let mut bus = TestBus::new(true);
    bus.poke(DATA, 8, 41);
    let (h, stop) = exec_with(
        &mut bus,
        &[(5, DATA), (6, 41), (7, 4)],
        &[
            s(64, 0, 5, 3), // loop: sd x0, 64(x5) (the last store's region is DATA's)
            lr_d(1),
            jal(0, 4),                // a block of its own for the store after LR
            s(0, 6, 5, 3),            // sd x6, 0(x5): the value LR read
            sc_d(2),                  // fails: 1
            r(0, 2, 11, 0, 11, 0x33), // add x11, x11, x2
            addi(7, 7, -1),
            b(-28, 0, 7, 1), // bne x7, x0, loop
        ],
    );
    assert_eq!(stop, Stop::Ecall);
    assert_eq!(h.x[11], 4, "every SC after a store fails");
    assert_eq!(bus.peek(DATA, 8), 41);
}

#[test]
fn fence_i_and_fences_execute() {
    let h = exec(
        &[],
        &[0x0ff0_000f, 0x8330_000f, 0x0000_100f, addi(5, 0, 3)], // fence, fence.tso, fence.i
    );
    assert_eq!((h.x[5], h.instret), (3, 5));
}

#[test]
fn fast_and_bus_paths_agree_on_a_mixed_program() {
    // A little loop mixing loads, stores, AMOs and compressed code.
    let prog16: &[u16] = &[
        0x4501, // c.li a0, 0
        0x4595, // c.li a1, 5
        0x862a, // c.mv a2, a0 (loop)
        0x9532, // c.add a0, a2
        0x0505, // c.addi a0, 1
        0x15fd, // c.addi a1, -1
        0xfde5, // c.bnez a1, -8 (back to c.mv)
    ];
    let mut results = Vec::new();
    for fast in [true, false] {
        let mut bus = TestBus::new(fast);
        bus.code16(TEXT, prog16);
        bus.code(
            TEXT + 14,
            &[
                s(0, 10, 5, 3),      // sd a0, 0(x5)
                amo(0, 3, 6, 5, 10), // amoadd.d x6, a0, (x5)
                load(3, 7, 5, 0),
                ECALL,
            ],
        );
        let mut h = Hart::new(TEXT);
        h.x[5] = DATA + 64;
        let stop = run(&mut h, &mut bus, 1000);
        results.push((stop, h.clone(), bus.peek(DATA + 64, 8)));
    }
    assert_eq!(results[0], results[1]);
    assert_eq!(results[0].1.x[10], 31);
    assert_eq!(results[0].2, 62);
}

/// The sweep reports exactly what the interpreter would refuse, at the right addresses, over
/// mixed 16- and 32-bit code, and names the custom opcode spaces.
#[test]
fn the_isa_sweep_reports_every_encoding_the_interpreter_refuses() {
    let mut code = Vec::new();
    let push32 = |code: &mut Vec<u8>, w: u32| code.extend_from_slice(&w.to_le_bytes());
    push32(&mut code, addi(1, 0, 1)); // 0x0: legal
    code.extend_from_slice(&0x4501u16.to_le_bytes()); // 0x4: c.li a0, 0
    push32(&mut code, 0x0000_100b); // 0x6: custom-0
    code.extend_from_slice(&0x0000u16.to_le_bytes()); // 0xa: c.unimp
    push32(&mut code, 0x4180_5513); // 0xc: grevi a0, x0, 24 (Zbp: executes)
    push32(&mut code, 0x0000_007b); // 0x10: custom-3
    push32(&mut code, 0xc000_9073); // 0x14: csrrw x0, cycle, x1 (illegal in the engine)
    code.extend_from_slice(&0x0003u16.to_le_bytes()); // 0x18: the start of a cut-off 32-bit insn
    let base = 0x4000_0000;
    let s = isa::sweep(&code, base);
    assert_eq!(s.instructions, 8);
    assert_eq!(s.bytes, code.len() as u64);
    let found: Vec<(u64, u32, u8)> = s
        .undecodable
        .iter()
        .map(|u| (u.addr - base, u.encoding, u.len))
        .collect();
    assert_eq!(
        found,
        vec![
            (0x6, 0x0000_100b, 4),
            (0xa, 0x0000, 2),
            (0x10, 0x0000_007b, 4),
            (0x14, 0xc000_9073, 4),
            (0x18, 0x0003, 0),
        ]
    );
    let spaces: Vec<Option<&str>> = s
        .undecodable
        .iter()
        .map(|u| u.opcode_space().map(|o| o.name()))
        .collect();
    assert_eq!(
        spaces,
        vec![Some("custom-0"), None, Some("custom-3"), None, None]
    );
    // Each reported encoding really faults in the interpreter, and each unreported one runs.
    let mut off = 0usize;
    while off + 2 <= code.len() - 2 {
        let low = u16::from_le_bytes([code[off], code[off + 1]]);
        let len = if low & 3 == 3 { 4 } else { 2 };
        let mut bus = TestBus::new(true);
        let mut bytes = code[off..off + len].to_vec();
        bytes.extend_from_slice(&0x0010_0073u32.to_le_bytes()); // ebreak after it
        bus.code_bytes(TEXT, &bytes);
        let mut h = Hart::new(TEXT);
        let faulted = matches!(
            run(&mut h, &mut bus, 10),
            Stop::Fault(Fault::IllegalInstruction { .. })
        );
        let reported = s.undecodable.iter().any(|u| u.addr == base + off as u64);
        assert_eq!(faulted, reported, "offset {off:#x}");
        off += len;
    }
    // A trailing odd byte is reported, not skipped.
    let s = isa::sweep(&[0x13, 0x00, 0x00, 0x00, 0x01], 0x100);
    assert_eq!((s.instructions, s.undecodable.len()), (2, 1));
    assert_eq!(s.undecodable[0].addr, 0x104);
}

#[test]
fn an_illegal_instruction_in_a_custom_space_is_named_in_the_bare_machines_stop() {
    let stop = bare::BareStop::Fault(Fault::IllegalInstruction {
        pc: 0x4000_0010,
        encoding: 0x0000_102b,
    });
    let text = stop.to_string();
    assert!(text.contains("custom-1 opcode space"), "{text}");
    assert!(text.contains("xfenceheap"), "{text}");
    let plain = bare::BareStop::Fault(Fault::IllegalInstruction {
        pc: 0x4000_0010,
        encoding: 0xc000_9073,
    })
    .to_string();
    assert!(!plain.contains("opcode space"), "{plain}");
}

/// Every `fence` reaches the bus with its sets (a bus models write-back with them); `fence.i`
/// does not.
#[test]
fn fences_reach_the_bus_with_their_sets() {
    let mut bus = TestBus::new(true);
    bus.code(
        TEXT,
        &[
            0x0110_000f, // fence w, w
            0x0ff0_000f, // fence iorw, iorw
            0x0880_000f, // fence i, i
            0x0000_100f, // fence.i
            0x0100_0073, // ebreak is 0x00100073; this word is illegal, the run stops here
        ],
    );
    let mut h = Hart::new(TEXT);
    let _ = run(&mut h, &mut bus, 10);
    assert_eq!(bus.fences, [(1, 1), (15, 15), (8, 8)]);
}

/// `pause` (0x0100000f) asks the bus; a bus that says stop gets `Stop::Pause` with pc past it
/// and the instruction retired, one that does not gets an ordinary fence. Other fences never
/// ask.
#[test]
fn pause_stops_only_when_the_bus_asks() {
    const PAUSE: u32 = 0x0100_000f;
    const FENCE_RW_RW: u32 = 0x0330_000f;
    for fast in [true, false] {
        let mut bus = TestBus::new(fast);
        bus.stop_at_pause = true;
        let (h, stop) = exec_with(&mut bus, &[], &[addi(5, 0, 1), PAUSE, addi(5, 5, 1)]);
        assert_eq!(stop, Stop::Pause, "fast path {fast}");
        assert_eq!((h.pc, h.instret, h.x[5]), (TEXT + 8, 2, 1));
        // Going on from there runs the rest.
        bus.stop_at_pause = false;
        let mut h = h;
        assert_eq!(run(&mut h, &mut bus, 100), Stop::Ecall);
        assert_eq!(h.x[5], 2);

        let mut bus = TestBus::new(fast);
        let (h, stop) = exec_with(&mut bus, &[], &[PAUSE, FENCE_RW_RW, addi(6, 0, 7)]);
        assert_eq!(stop, Stop::Ecall);
        assert_eq!(h.x[6], 7);
        assert_eq!(bus.pauses, 1, "only the pause asks");
        assert_eq!(bus.fences, [(1, 0), (3, 3)]);
    }
}
