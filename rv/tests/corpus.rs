//! The bare corpus (`fw-blobs/bare/*.c`, built by `fw-blobs/bare/build.sh`) on the engine,
//! against the results qemu-user recorded (`fw-blobs/bare/record.sh` ->
//! `tests/data/corpus.json`): the exit code and the checksum line each program prints.
//! The retired-instruction count is the engine's own earlier count (not independent): it is
//! compared so that a change in it is noticed and re-recorded on purpose.

use mlx5_dpa_rv::bare::{BareMachine, BareStop, ExitVia};
use mlx5_dpa_rv::Stop;

const BUDGET: u64 = 20_000_000;

fn corpus_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fw-blobs/bare/bin")
}

fn expected() -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/corpus.json"),
    )
    .expect("tests/data/corpus.json");
    let v: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
    v["programs"].as_array().expect("programs").clone()
}

#[test]
fn corpus_programs_match_qemu() {
    let programs = expected();
    assert!(programs.len() >= 8, "corpus shrank: {}", programs.len());
    for p in programs {
        let name = p["name"].as_str().unwrap();
        let bytes = std::fs::read(corpus_dir().join(format!("{name}.elf"))).unwrap();
        let mut m = BareMachine::from_elf_bytes(&bytes).unwrap();
        let report = m.call(m.entry(), &[], BUDGET).unwrap();
        let code = match report.stop {
            BareStop::Exit {
                code,
                via: ExitVia::Exit,
            } => code,
            other => panic!("{name}: {other}"),
        };
        // qemu-user reports the status as a process exit status: 8 bits.
        assert_eq!(
            code & 0xff,
            p["exit_code"].as_u64().unwrap(),
            "{name}: exit code"
        );
        assert_eq!(
            String::from_utf8_lossy(m.output()),
            p["stdout"].as_str().unwrap(),
            "{name}: output"
        );
        assert_eq!(
            report.instret,
            p["instret"].as_u64().unwrap(),
            "{name}: instret"
        );
        assert_eq!(report.hart.instret, report.instret);
    }
}

#[test]
fn compute_is_callable_as_a_function_and_deterministic() {
    let bytes = std::fs::read(corpus_dir().join("compute.elf")).unwrap();
    let mut m = BareMachine::from_elf_bytes(&bytes).unwrap();
    let a = m.call_symbol("compute", &[1000], BUDGET).unwrap();
    let BareStop::Return { value } = a.stop else {
        panic!("{}", a.stop)
    };
    // The table the loop writes persists between calls, so reload for the second run.
    let mut m2 = BareMachine::from_elf_bytes(&bytes).unwrap();
    let b = m2.call_symbol("compute", &[1000], BUDGET).unwrap();
    assert_eq!(b.stop, BareStop::Return { value });
    assert_eq!(a.instret, b.instret);
    // main prints compute(20000): the same function through the ELF entry.
    let mut m3 = BareMachine::from_elf_bytes(&bytes).unwrap();
    let direct = m3.call_symbol("compute", &[20000], BUDGET).unwrap();
    let BareStop::Return { value } = direct.stop else {
        panic!("{}", direct.stop)
    };
    let line = expected()
        .into_iter()
        .find(|p| p["name"] == "compute")
        .unwrap()["stdout"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(line, format!("compute {value:016x}\n"));
}

#[test]
fn budget_stops_exactly_and_a_run_can_continue() {
    let bytes = std::fs::read(corpus_dir().join("sort.elf")).unwrap();
    let mut m = BareMachine::from_elf_bytes(&bytes).unwrap();
    let r = m.call(m.entry(), &[], 12_345).unwrap();
    assert_eq!(r.stop, BareStop::Budget);
    assert_eq!(r.instret, 12_345);
    // Continue the same hart with the engine directly: the next stop is the `write` ecall of
    // the report, then (served by hand) the exit.
    let mut hart = r.hart;
    let stop = mlx5_dpa_rv::run(&mut hart, &mut m, BUDGET);
    assert_eq!((stop, hart.x[17]), (Stop::Ecall, 64));
    let before = hart.instret;
    let stop = mlx5_dpa_rv::run(&mut hart, &mut m, BUDGET);
    assert_eq!((stop, hart.x[17]), (Stop::Ecall, 64));
    assert!(hart.instret > before);
    while hart.x[17] == 64 {
        assert_eq!(mlx5_dpa_rv::run(&mut hart, &mut m, BUDGET), Stop::Ecall);
    }
    assert_eq!(hart.x[17], 93);
    let total = expected()
        .into_iter()
        .find(|p| p["name"] == "sort")
        .unwrap()["instret"]
        .as_u64()
        .unwrap();
    assert_eq!(hart.instret, total);
}

/// The corpus through the JIT (compiling every region at first sight): the same exit code,
/// output and retired-instruction count as qemu and the interpreter.
#[cfg(feature = "jit")]
#[test]
fn corpus_programs_match_qemu_through_the_jit() {
    for p in expected() {
        let name = p["name"].as_str().unwrap();
        let bytes = std::fs::read(corpus_dir().join(format!("{name}.elf"))).unwrap();
        let mut m = BareMachine::from_elf_bytes(&bytes).unwrap();
        assert!(m.set_jit(Some(1)), "no JIT on this host");
        let report = m.call(m.entry(), &[], BUDGET).unwrap();
        let BareStop::Exit {
            code,
            via: ExitVia::Exit,
        } = report.stop
        else {
            panic!("{name}: {}", report.stop)
        };
        assert_eq!(code & 0xff, p["exit_code"].as_u64().unwrap(), "{name}");
        assert_eq!(
            String::from_utf8_lossy(m.output()),
            p["stdout"].as_str().unwrap(),
            "{name}"
        );
        assert_eq!(report.instret, p["instret"].as_u64().unwrap(), "{name}");
    }
}
