//! The JIT against the interpreter (feature `jit`): random programs made of the operations the
//! JIT compiles (ALU, M, Zbb / Zbs, loads and stores, branches and jumps, with a few it does not
//! compile mixed in), run with random budgets by the interpreter alone, by the JIT compiling at
//! first sight and by the JIT compiling at the second entry. Every register, the pc, the
//! retired count, the stop and the memory must be the same. Loads and stores go to three
//! places: data beside the code (stores the JIT hands back to the interpreter, which checks
//! them against decoded code), the code itself, and the stack, a segment that holds no code
//! (stores the JIT makes inline).
//!
//! The fuzz entry (`tests/fuzz.rs`, `fuzz_exec`) and the corpus
//! (`corpus_programs_match_qemu_through_the_jit`) run the JIT too; this test reaches the
//! compiled operations far more often than arbitrary bytes do.
#![cfg(feature = "jit")]

use mlx5_dpa_rv::bare::BareMachine;
use proptest::prelude::*;

const BASE: u64 = 0x1000;
/// Data the programs load and store: the page after the code's, in the same read-write-execute
/// segment (one store kind writes into the code page instead: self-modifying code).
const DATA: u64 = 0x2800;
/// The registers holding `DATA`, `BASE` and 1 KiB below the initial `sp` (never written by
/// the programs).
const DATA_REG: u32 = 31;
const CODE_REG: u32 = 30;
const STACK_REG: u32 = 29;
/// Bytes of the segment (two pages).
const SEGMENT: usize = 0x2000;

fn r(f7: u32, rs2: u32, rs1: u32, f3: u32, rd: u32, op: u32) -> u32 {
    (f7 << 25) | (rs2 << 20) | (rs1 << 15) | (f3 << 12) | (rd << 7) | op
}

fn i(imm: i32, rs1: u32, f3: u32, rd: u32, op: u32) -> u32 {
    (((imm as u32) & 0xfff) << 20) | (rs1 << 15) | (f3 << 12) | (rd << 7) | op
}

fn s(imm: i32, rs2: u32, rs1: u32, f3: u32) -> u32 {
    let imm = imm as u32;
    ((imm >> 5 & 0x7f) << 25) | (rs2 << 20) | (rs1 << 15) | (f3 << 12) | ((imm & 0x1f) << 7) | 0x23
}

fn b(imm: i32, rs2: u32, rs1: u32, f3: u32) -> u32 {
    let imm = imm as u32;
    ((imm >> 12 & 1) << 31)
        | ((imm >> 5 & 0x3f) << 25)
        | (rs2 << 20)
        | (rs1 << 15)
        | (f3 << 12)
        | ((imm >> 1 & 0xf) << 8)
        | ((imm >> 11 & 1) << 7)
        | 0x63
}

fn jal(rd: u32, imm: i32) -> u32 {
    let imm = imm as u32;
    ((imm >> 20 & 1) << 31)
        | ((imm >> 1 & 0x3ff) << 21)
        | ((imm >> 11 & 1) << 20)
        | ((imm >> 12 & 0xff) << 12)
        | (rd << 7)
        | 0x6f
}

/// R-type operations (funct7, funct3, opcode).
const R_OPS: &[(u32, u32, u32)] = &[
    (0, 0, 0x33),    // add
    (0x20, 0, 0x33), // sub
    (0, 1, 0x33),    // sll
    (0, 2, 0x33),    // slt
    (0, 3, 0x33),    // sltu
    (0, 4, 0x33),    // xor
    (0, 5, 0x33),    // srl
    (0x20, 5, 0x33), // sra
    (0, 6, 0x33),    // or
    (0, 7, 0x33),    // and
    (1, 0, 0x33),    // mul
    (1, 1, 0x33),    // mulh
    (1, 2, 0x33),    // mulhsu (interpreted)
    (1, 3, 0x33),    // mulhu
    (1, 4, 0x33),    // div
    (1, 5, 0x33),    // divu
    (1, 6, 0x33),    // rem
    (1, 7, 0x33),    // remu
    (0, 0, 0x3b),    // addw
    (0x20, 0, 0x3b), // subw
    (0, 1, 0x3b),    // sllw
    (0, 5, 0x3b),    // srlw
    (0x20, 5, 0x3b), // sraw
    (1, 0, 0x3b),    // mulw
    (1, 4, 0x3b),    // divw
    (1, 5, 0x3b),    // divuw
    (1, 6, 0x3b),    // remw
    (1, 7, 0x3b),    // remuw
    (0x20, 7, 0x33), // andn
    (0x20, 6, 0x33), // orn
    (0x20, 4, 0x33), // xnor
    (0x05, 4, 0x33), // min
    (0x05, 5, 0x33), // minu
    (0x05, 6, 0x33), // max
    (0x05, 7, 0x33), // maxu
    (0x30, 1, 0x33), // rol
    (0x30, 5, 0x33), // ror
    (0x30, 1, 0x3b), // rolw
    (0x30, 5, 0x3b), // rorw
    (0x24, 1, 0x33), // bclr
    (0x24, 5, 0x33), // bext
    (0x34, 1, 0x33), // binv
    (0x14, 1, 0x33), // bset
];

/// I-type arithmetic (funct3, opcode, fixed high immediate bits or none).
const I_OPS: &[(u32, u32, Option<i32>)] = &[
    (0, 0x13, None),        // addi
    (2, 0x13, None),        // slti
    (3, 0x13, None),        // sltiu
    (4, 0x13, None),        // xori
    (6, 0x13, None),        // ori
    (7, 0x13, None),        // andi
    (0, 0x1b, None),        // addiw
    (1, 0x13, Some(0x000)), // slli (shamt below)
    (5, 0x13, Some(0x000)), // srli
    (5, 0x13, Some(0x400)), // srai
    (1, 0x1b, Some(0x000)), // slliw
    (5, 0x1b, Some(0x000)), // srliw
    (5, 0x1b, Some(0x400)), // sraiw
    (5, 0x13, Some(0x600)), // rori
    (5, 0x1b, Some(0x600)), // roriw
    (1, 0x13, Some(0x480)), // bclri
    (5, 0x13, Some(0x480)), // bexti
    (1, 0x13, Some(0x680)), // binvi
    (1, 0x13, Some(0x280)), // bseti
];

/// Unary Zbb operations (the whole 12-bit immediate, funct3, opcode).
const U_OPS: &[(i32, u32, u32)] = &[
    (0x600, 1, 0x13), // clz
    (0x601, 1, 0x13), // ctz
    (0x602, 1, 0x13), // cpop
    (0x604, 1, 0x13), // sext.b
    (0x605, 1, 0x13), // sext.h
    (0x6b8, 5, 0x13), // rev8
    (0x600, 1, 0x1b), // clzw
    (0x601, 1, 0x1b), // ctzw
    (0x602, 1, 0x1b), // cpopw
    (0x287, 5, 0x13), // orc.b (interpreted)
];

fn reg() -> impl Strategy<Value = u32> {
    0u32..32
}

fn rd() -> impl Strategy<Value = u32> {
    0u32..STACK_REG
}

/// One instruction; `at` is its index (branch targets stay near the program).
fn insn(at: usize, len: usize) -> impl Strategy<Value = u32> {
    let back = -(at as i32).min(12);
    let fwd = ((len - at) as i32).min(12);
    prop_oneof![
        8 => (0..R_OPS.len(), reg(), reg(), rd())
            .prop_map(|(k, rs2, rs1, rd)| { let (f7, f3, op) = R_OPS[k]; r(f7, rs2, rs1, f3, rd, op) }),
        6 => (0..I_OPS.len(), -2048i32..2048, reg(), rd()).prop_map(|(k, imm, rs1, rd)| {
            let (f3, op, hi) = I_OPS[k];
            let imm = match hi {
                Some(h) => h | (imm & if op == 0x1b { 31 } else { 63 }),
                None => imm,
            };
            i(imm, rs1, f3, rd, op)
        }),
        2 => (0..U_OPS.len(), reg(), rd()).prop_map(|(k, rs1, rd)| {
            let (imm, f3, op) = U_OPS[k];
            i(imm, rs1, f3, rd, op)
        }),
        // Loads from the data area (sometimes misaligned: a fault for both engines).
        3 => (0u32..7, 0i32..256, rd()).prop_map(|(f3, off, rd)| {
            let f3 = [0, 1, 2, 3, 4, 5, 6][f3 as usize];
            i(off * 4 - 512 + (off & 1), DATA_REG, f3, rd, 0x03)
        }),
        3 => (0u32..4, 0i32..256, reg()).prop_map(|(f3, off, rs2)| s(off * 4 - 512, rs2, DATA_REG, f3)),
        // Loads and stores on the stack, 2 KiB below `sp` (a segment without code).
        2 => (0u32..7, 0i32..512, rd()).prop_map(|(f3, off, rd)| {
            i(off * 4 - 1024 + (off & 1), STACK_REG, f3, rd, 0x03)
        }),
        3 => (0u32..4, 0i32..512, reg()).prop_map(|(f3, off, rs2)| {
            // Sometimes misaligned (odd offsets for halfword and wider stores).
            s(off * 4 - 1024 + (off & 2) / 2, rs2, STACK_REG, f3)
        }),
        // A store into the code page (maybe over the program itself).
        1 => (0u32..4, 0i32..2048, reg()).prop_map(|(f3, off, rs2)| s(off & !7, rs2, CODE_REG, f3)),
        3 => (0u32..8, back..fwd, reg(), reg()).prop_map(|(f3, d, rs2, rs1)| {
            let f3 = [0, 1, 4, 5, 6, 7, 0, 1][f3 as usize];
            b(d * 4, rs2, rs1, f3)
        }),
        1 => (back..fwd, rd()).prop_map(|(d, rd)| jal(rd, d * 4)),
        1 => (0u32..1 << 20, rd()).prop_map(|(imm, rd)| (imm << 12) | (rd << 7) | 0x37), // lui
        1 => (0u32..1 << 20, rd()).prop_map(|(imm, rd)| (imm << 12) | (rd << 7) | 0x17), // auipc
    ]
}

fn program() -> impl Strategy<Value = Vec<u32>> {
    (8usize..120).prop_flat_map(|len| (0..len).map(|at| insn(at, len).boxed()).collect::<Vec<_>>())
}

type Outcome = (
    String,
    [u64; 32],
    u64,
    u64,
    Option<Vec<u8>>,
    Option<Vec<u8>>,
);

fn run(code: &[u32], data: &[u8], budget: u64, jit: Option<u32>) -> Outcome {
    let mut bytes: Vec<u8> = code.iter().flat_map(|w| w.to_le_bytes()).collect();
    // An ecall ends the program when control falls off its end.
    bytes.extend_from_slice(&0x0000_0073u32.to_le_bytes());
    bytes.resize(SEGMENT, 0);
    // Random data around DATA: what the prologue loads into the registers, and what the
    // program's loads find.
    let at = (DATA - BASE) as usize - 512;
    bytes[at..at + data.len()].copy_from_slice(data);
    let mut m = BareMachine::from_code(BASE, &bytes).expect("machine");
    if let Some(hot) = jit {
        assert!(m.set_jit(Some(hot)), "no JIT on this host");
    }
    let args = [0u64; 8];
    let mut outcome = None;
    // Twice: the second run finds the first one's compiled code (and memory).
    for _ in 0..2 {
        let r = m.call(BASE, &args, budget).expect("call");
        outcome = Some((
            r.stop.to_string(),
            r.hart.x,
            r.hart.pc,
            r.instret,
            m.read(BASE, SEGMENT as u64),
            m.read(m.stack_top() - 4096, 4096),
        ));
    }
    outcome.expect("ran")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn the_jit_agrees_with_the_interpreter(
        code in program(),
        data in proptest::collection::vec(any::<u8>(), 1024),
        budget in 1u64..3000,
    ) {
        // x31, x30 and x29 point at the data, the code and the stack: they are only read.
        let mut code = code;
        code.insert(0, i(-1024, 2, 0, STACK_REG, 0x13)); // addi x29, sp, -1024
        code.insert(1, (((DATA + 0x800) >> 12) << 12) as u32 | (DATA_REG << 7) | 0x37);
        code.insert(2, i((DATA & 0xfff) as i32, DATA_REG, 0, DATA_REG, 0x13));
        code.insert(3, (BASE as u32) | (CODE_REG << 7) | 0x37);
        // Every other register from the random data (ld xN, 8N - 512(x31)).
        for n in 1..STACK_REG {
            code.insert(3 + n as usize, i(8 * n as i32 - 512, DATA_REG, 3, n, 0x03));
        }
        let budget = budget + 32;
        let interp = run(&code, &data, budget, None);
        for hot in [1, 2] {
            let jit = run(&code, &data, budget, Some(hot));
            prop_assert_eq!(&interp, &jit, "hot {}", hot);
        }
    }
}

/// Regression (issue 30, defect 8): a program that stores into its own code page and
/// branches back had a region (with 250 never-run instructions after the loop) compiled for
/// every two instructions it ran, up to the share's 1024 regions: a fuzz input took 43 s and
/// 398 MB where the interpreter took 0.05 s. One entry address is now compiled at most 4
/// times and a share at most 8 Ki instructions; the outcome is the interpreter's.
#[test]
fn self_modifying_code_stops_being_compiled() {
    let mut code = vec![
        0x0000_0517,        // auipc a0, 0: a0 = BASE
        s(0x400, 0, 10, 2), // loop: sw zero, 0x400(a0): a store into the code page
        b(-4, 0, 0, 0),     // beq zero, zero, loop
    ];
    // Never run, but in the region the loop's branch falls through to.
    code.extend((0..250).map(|k| i(k, 5, 0, 5, 0x13))); // addi t0, t0, k
    let budget = 20_000;
    let interp = run(&code, &[], budget, None);
    let mut bytes: Vec<u8> = code.iter().flat_map(|w| w.to_le_bytes()).collect();
    bytes.resize(SEGMENT, 0);
    let mut m = BareMachine::from_code(BASE, &bytes).expect("machine");
    assert!(m.set_jit(Some(1)), "no JIT on this host");
    let start = std::time::Instant::now();
    let r = m.call(BASE, &[0; 8], budget).expect("call");
    let share = m.jit_share().expect("the JIT is on");
    eprintln!(
        "{} regions, {} instructions compiled in {:?}",
        share.regions(),
        share.compiled_insns(),
        start.elapsed()
    );
    // Three entry addresses (the start, the loop, its branch), four compiles each at most.
    assert!(share.regions() <= 12, "{} regions", share.regions());
    assert!(
        share.compiled_insns() <= 12 * 256,
        "{}",
        share.compiled_insns()
    );
    // The budget ran out in the loop, as in the interpreter.
    assert_eq!(
        (r.stop.to_string(), r.hart.pc, r.instret),
        (interp.0.clone(), interp.2, budget)
    );
    assert_eq!(r.hart.x, interp.1);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// The `rv_jit` fuzz entry on arbitrary bytes: the JIT agrees with the interpreter.
    #[test]
    fn the_jit_fuzz_entry_holds_on_arbitrary_streams(data in proptest::collection::vec(any::<u8>(), 0..512)) {
        mlx5_dpa_rv::bare::fuzz_jit(&data);
    }
}

/// A loop of two guest blocks whose registers the compiled region carries from block to block
/// in host registers, with a store the JIT hands to the interpreter (the data page beside
/// the code: a call out of compiled code) and one it makes inline (the stack) in every
/// iteration, then a fault in the block after it: at every budget, stopping anywhere in the
/// loop or at the fault, the JIT ends where the interpreter does, with the same registers,
/// count and memory.
#[test]
fn registers_carried_across_blocks_and_calls_stay_exact_at_every_budget() {
    let code = [
        i(-1024, 2, 0, STACK_REG, 0x13), // addi x29, sp, -1024
        (((DATA + 0x800) >> 12) << 12) as u32 | (DATA_REG << 7) | 0x37,
        i((DATA & 0xfff) as i32, DATA_REG, 0, DATA_REG, 0x13),
        i(1, 0, 0, 6, 0x13),   // addi x6, zero, 1
        i(40, 0, 0, 11, 0x13), // addi x11, zero, 40
        // loop:
        r(0, 6, 5, 0, 5, 0x33),     // add x5, x5, x6
        i(3, 5, 1, 8, 0x13),        // slli x8, x5, 3
        r(0, 8, 6, 4, 6, 0x33),     // xor x6, x6, x8
        s(0, 5, DATA_REG, 2),       // sw x5, 0(x31): through the interpreter
        s(8, 6, STACK_REG, 3),      // sd x6, 8(x29): inline
        i(0, DATA_REG, 2, 9, 0x03), // lw x9, 0(x31)
        r(0, 9, 7, 0, 7, 0x33),     // add x7, x7, x9
        i(1, 10, 0, 10, 0x13),      // addi x10, x10, 1
        i(3, 10, 7, 12, 0x13),      // andi x12, x10, 3
        b(8, 0, 12, 0),             // beq x12, zero, +8
        r(0, 5, 7, 4, 7, 0x33),     // xor x7, x7, x5 (a block of its own)
        b(-44, 11, 10, 4),          // blt x10, x11, loop
        // After the loop, a register changed and then a misaligned load: the compiled code
        // leaves before the load, storing what its block changed, and the run faults there.
        i(7, 5, 0, 13, 0x13),        // addi x13, x5, 7
        i(2, DATA_REG, 2, 14, 0x03), // lw x14, 2(x31)
    ];
    let whole = 5 + 40 * 12 - 10 + 3;
    let budgets = (1..=160).chain((161..whole + 8).step_by(7));
    for budget in budgets {
        let interp = run(&code, &[], budget, None);
        for hot in [1, 2] {
            assert_eq!(
                run(&code, &[], budget, Some(hot)),
                interp,
                "budget {budget}, hot {hot}"
            );
        }
    }
}
