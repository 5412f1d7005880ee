//! The RISC-V fuzz targets (`fuzz/fuzz_targets/dpa_elf.rs`, `rv_exec.rs`) as property tests,
//! so CI exercises them: arbitrary bytes as an ELF and as an instruction stream never panic,
//! and the fast RAM path and the bus path agree on every instruction stream.

use mlx5_sim::riscv::bare::{fuzz_elf, fuzz_exec, BareMachine};
use mlx5_sim::riscv::{run, Fault, Hart, Stop};
use proptest::prelude::*;

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

    #[test]
    fn arbitrary_bytes_as_an_elf_never_panic(data in proptest::collection::vec(any::<u8>(), 0..1024)) {
        fuzz_elf(&data);
    }

    /// A real ELF with random bytes changed: reaches deep into the parser and the loader.
    #[test]
    fn mutated_elfs_never_panic(edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8), cut in any::<prop::sample::Index>()) {
        let mut bytes = corpus_elf("crc.elf");
        for (at, v) in edits {
            // Mostly in the headers, where the structure is.
            let i = at.index(bytes.len().min(if v & 1 == 0 { 256 } else { usize::MAX }));
            bytes[i] = v;
        }
        if cut.index(4) == 0 {
            let keep = cut.index(bytes.len());
            bytes.truncate(keep);
        }
        fuzz_elf(&bytes);
    }
}

#[test]
fn the_corpus_elfs_themselves_go_through_the_fuzz_entry() {
    for name in ["compute.elf", "atomics.elf"] {
        fuzz_elf(&corpus_elf(name));
    }
}
