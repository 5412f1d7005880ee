//! RISC-V engine speed: guest instructions per second on the compute loop of the bare corpus
//! (`fw-blobs/bare/compute.c`), and the same ELF under qemu-user when `qemu-riscv64` is on PATH.
//!
//! `cargo bench -p mlx5-dpa-rv --bench riscv`. Criterion measures `compute(N)` called as a function
//! in the bare machine (throughput in guest instructions). Then one summary line:
//!
//! ```text
//! summary riscv: engine X MIPS, qemu Y MIPS (engine / qemu = R)
//! ```
//!
//! Engine MIPS: the best of three timed runs of `compute(LONG)`. qemu MIPS: the same number of
//! instructions (counted by the engine) over the wall-clock time of `qemu-riscv64 compute.elf
//! LONG` minus that of `qemu-riscv64 compute.elf 0` (process start, translation, exit), best
//! of three each.
//!
//! ckb-vm MIPS: ckb-vm's assembly interpreter (`AsmMachine`, RV64IMC + B + A) running
//! `compute-4m.elf` (the same loop linked below 4 MiB, ckb-vm's memory) the same way as qemu:
//! `compute LONG` less `compute 0`, best of three, over the engine's instruction count; its
//! own count (one cycle per instruction) and exit code are checked against the engine's.
//!
//! With the `jit` feature (`cargo bench -p mlx5-dpa-rv --features jit --bench riscv`), also
//! the JIT (compiling at its default threshold, compile time included), in the same run, as a
//! ratio to the interpreter and to qemu, after checking that it retires the same number of
//! instructions and returns the same value.

#[path = "../../benches/common/summary.rs"]
#[macro_use]
mod summary;

use std::hint::black_box;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use mlx5_dpa_rv::bare::{BareMachine, BareStop};

/// Loop iterations per criterion sample (about 24 instructions each).
const SHORT: u64 = 100_000;
/// Loop iterations of the summary runs.
const LONG: u64 = 4_000_000;

fn elf_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fw-blobs/bare/bin/compute.elf")
}

/// Runs `compute(n)` in `m`; returns the retired instructions.
fn compute(m: &mut BareMachine, n: u64) -> u64 {
    let r = m
        .call_symbol("compute", &[n], u64::MAX)
        .expect("compute symbol");
    assert!(matches!(r.stop, BareStop::Return { .. }), "{}", r.stop);
    r.instret
}

fn best_of_3(mut f: impl FnMut() -> Option<Duration>) -> Option<Duration> {
    (0..3)
        .map(|_| f())
        .collect::<Option<Vec<_>>>()?
        .into_iter()
        .min()
}

/// Answers the loop's `write` ecalls (64) with their length and drops the bytes; exit (93)
/// is ckb-vm's own.
struct CkbWrite;

impl<M: ckb_vm::SupportMachine> ckb_vm::Syscalls<M> for CkbWrite {
    fn initialize(&mut self, _: &mut M) -> Result<(), ckb_vm::Error> {
        Ok(())
    }

    fn ecall(&mut self, m: &mut M) -> Result<bool, ckb_vm::Error> {
        use ckb_vm::registers::{A0, A2, A7};
        use ckb_vm::Register;
        if m.registers()[A7].to_u64() != 64 {
            return Ok(false);
        }
        let len = m.registers()[A2].clone();
        m.set_register(A0, len);
        Ok(true)
    }
}

/// Runs `compute-4m.elf n` in ckb-vm's assembly interpreter: wall time, exit code, retired
/// instructions.
fn ckb_vm_run(elf: &[u8], n: u64) -> Option<(Duration, i8, u64)> {
    use ckb_vm::{DefaultMachineRunner, SupportMachine};
    let core = <Box<ckb_vm::machine::asm::AsmCoreMachine> as SupportMachine>::new(
        ckb_vm::ISA_IMC | ckb_vm::ISA_B | ckb_vm::ISA_A,
        ckb_vm::machine::VERSION2,
        u64::MAX,
    );
    let machine = ckb_vm::DefaultMachineBuilder::new(core)
        .instruction_cycle_func(Box::new(|_| 1))
        .syscall(Box::new(CkbWrite))
        .build();
    let mut m = ckb_vm::machine::asm::AsmMachine::new(machine);
    let args = [
        ckb_vm::Bytes::from_static(b"compute"),
        ckb_vm::Bytes::from(n.to_string()),
    ];
    m.load_program(
        &ckb_vm::Bytes::copy_from_slice(elf),
        args.into_iter().map(Ok),
    )
    .ok()?;
    let t = Instant::now();
    let code = m.run().ok()?;
    let d = t.elapsed();
    Some((d, code, m.machine.cycles()))
}

/// Wall time of `qemu-riscv64 ELF n`, if qemu runs.
fn qemu_time(elf: &PathBuf, n: u64) -> Option<Duration> {
    let t = Instant::now();
    let out = Command::new("qemu-riscv64")
        .arg(elf)
        .arg(n.to_string())
        .output()
        .ok()?;
    let d = t.elapsed();
    // compute.c exits with the low 7 bits of its result: any status but a signal is a run.
    out.status.code().map(|_| d)
}

fn engine(c: &mut Criterion) {
    let bytes = std::fs::read(elf_path()).expect("fw-blobs/bare/bin/compute.elf");
    let mut m = BareMachine::from_elf_bytes(&bytes).expect("load compute.elf");
    let per_call = compute(&mut m, SHORT);
    let mut g = c.benchmark_group("riscv");
    g.throughput(Throughput::Elements(per_call));
    g.bench_function("compute_loop", |b| {
        b.iter(|| black_box(compute(&mut m, black_box(SHORT))))
    });
    g.finish();

    // The summary.
    let mut insns = 0;
    let engine = best_of_3(|| {
        let mut m = BareMachine::from_elf_bytes(&bytes).ok()?;
        let t = Instant::now();
        insns = compute(&mut m, LONG);
        Some(t.elapsed())
    })
    .unwrap_or_default();
    let mips = |d: Duration| insns as f64 / d.as_secs_f64().max(1e-9) / 1e6;
    let engine_mips = mips(engine);
    #[cfg(feature = "jit")]
    let jit_mips = {
        let mut reference = None;
        let t = best_of_3(|| {
            let mut m = BareMachine::from_elf_bytes(&bytes).ok()?;
            assert!(
                m.set_jit(Some(mlx5_dpa_rv::CodeCache::JIT_HOT)),
                "no JIT here"
            );
            let t = Instant::now();
            let r = m.call_symbol("compute", &[LONG], u64::MAX).ok()?;
            let d = t.elapsed();
            reference = Some((r.instret, r.hart.x[10]));
            Some(d)
        })
        .unwrap_or_default();
        let mut m = BareMachine::from_elf_bytes(&bytes).expect("load");
        let r = m
            .call_symbol("compute", &[LONG], u64::MAX)
            .expect("compute");
        assert_eq!(
            reference,
            Some((r.instret, r.hart.x[10])),
            "the JIT disagrees"
        );
        mips(t)
    };
    // ckb-vm on the same loop: `compute LONG` less `compute 0`.
    let small = std::fs::read(elf_path().with_file_name("compute-4m.elf"))
        .expect("fw-blobs/bare/bin/compute-4m.elf");
    let ckb = (|| {
        let (_, code, long_insns) = ckb_vm_run(&small, LONG)?;
        let (_, _, empty_insns) = ckb_vm_run(&small, 0)?;
        let long = best_of_3(|| ckb_vm_run(&small, LONG).map(|r| r.0))?;
        let empty = best_of_3(|| ckb_vm_run(&small, 0).map(|r| r.0))?;
        Some((long.saturating_sub(empty), code, long_insns - empty_insns))
    })();
    let expect = {
        let mut m = BareMachine::from_elf_bytes(&bytes).expect("load");
        let r = m
            .call_symbol("compute", &[LONG], u64::MAX)
            .expect("compute");
        (r.hart.x[10] & 0x7f) as i8
    };
    match ckb {
        Some((t, code, loop_insns)) if !t.is_zero() => {
            assert_eq!(code, expect, "ckb-vm's exit code (the loop's result)");
            // The two runs differ by the loop and by parsing a longer argument.
            assert!(
                loop_insns.abs_diff(insns) < 1000,
                "ckb-vm retired {loop_insns} instructions for the loop, the engine {insns}"
            );
            let ckb_mips = mips(t);
            summary!(
                "summary riscv: engine {engine_mips:.0} MIPS, ckb-vm asm {ckb_mips:.0} MIPS \
                 (engine / ckb-vm = {:.2}; goal >= 1.0)",
                engine_mips / ckb_mips
            );
        }
        _ => summary!("summary riscv: ckb-vm did not run compute-4m.elf"),
    }
    let elf = elf_path();
    let qemu = best_of_3(|| qemu_time(&elf, LONG)).and_then(|long| {
        let empty = best_of_3(|| qemu_time(&elf, 0))?;
        Some(long.saturating_sub(empty))
    });
    match qemu {
        Some(q) if !q.is_zero() => {
            let qemu_mips = mips(q);
            #[cfg(feature = "jit")]
            summary!(
                "summary riscv: jit {jit_mips:.0} MIPS (jit / interpreter = {:.1}, jit / qemu = \
                 {:.2})",
                jit_mips / engine_mips,
                jit_mips / qemu_mips
            );
            summary!(
                "summary riscv: engine {engine_mips:.0} MIPS, qemu {qemu_mips:.0} MIPS \
                 (engine / qemu = {:.2}; {insns} instructions)",
                engine_mips / qemu_mips
            );
        }
        _ => summary!(
            "summary riscv: engine {engine_mips:.0} MIPS, qemu not installed \
             ({insns} instructions)"
        ),
    }
}

criterion_group!(benches, engine);
criterion_main!(benches);
