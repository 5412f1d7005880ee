//! The engine's fuzz target (`fuzz/fuzz_targets/rv_exec.rs`) as property tests, so CI
//! exercises it: arbitrary instruction streams never panic, and the fast RAM path and the bus
//! path agree on every one. (Arbitrary bytes as an ELF: `sim/tests/model/dpa_elf_fuzz.rs`, which
//! goes through both ELF readers.)

use mlx5_dpa_rv::bare::{fuzz_elf, fuzz_exec_with, BareMachine};
use mlx5_dpa_rv::{run, Fault, Hart, Stop};
use proptest::prelude::*;

/// The fuzz entry, with its JIT run where the engine has the JIT.
fn fuzz_exec(data: &[u8]) {
    fuzz_exec_with(data, cfg!(feature = "jit"));
}

fn corpus_elf(name: &str) -> Vec<u8> {
    std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../fw-blobs/bare/bin")
            .join(name),
    )
    .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn arbitrary_instruction_streams_never_panic(data in proptest::collection::vec(any::<u8>(), 0..512)) {
        fuzz_exec(&data);
    }

    /// Words biased towards the interesting opcodes (loads, stores, AMOs, branches, system).
    #[test]
    fn arbitrary_instruction_words_never_panic(
        words in proptest::collection::vec(
            (any::<u32>(), prop::sample::select(vec![0x03u32, 0x23, 0x2f, 0x63, 0x67, 0x6f, 0x73, 0x13, 0x33, 0x3b, 0x1b, 0x0f])),
            1..64,
        )
    ) {
        let mut bytes = Vec::new();
        for (w, op) in words {
            let w = if w & 1 == 0 { (w & !0x7f) | op } else { w };
            bytes.extend_from_slice(&w.to_le_bytes());
        }
        fuzz_exec(&bytes);
    }

    #[test]
    fn arbitrary_pcs_fault_or_run_without_panic(pc in any::<u64>(), code in proptest::collection::vec(any::<u8>(), 0..64)) {
        let mut m = BareMachine::from_code(0x1000, &code).unwrap();
        let mut hart = Hart::new(pc);
        let stop = run(&mut hart, &mut m, 1000);
        if let Stop::Fault(Fault::Memory { pc: at, .. } | Fault::IllegalInstruction { pc: at, .. }) = stop {
            prop_assert_eq!(at, hart.pc);
        }
        prop_assert!(hart.instret <= 1000);
        prop_assert_eq!(hart.x[0], 0);
    }
}

#[test]
fn the_corpus_elfs_themselves_go_through_the_fuzz_entry() {
    for name in ["compute.elf", "atomics.elf"] {
        fuzz_elf(&corpus_elf(name));
    }
}
