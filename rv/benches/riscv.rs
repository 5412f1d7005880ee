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
