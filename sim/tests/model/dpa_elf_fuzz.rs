//! The `dpa_elf` fuzz target as property tests, so CI exercises it: arbitrary bytes and
//! mutated real ELFs go through the driver's ELF parser, the bare machine and the engine
//! crate's own ELF reader without a panic.

use mlx5_sim::testing::fuzzing::fuzz_dpa_elf as fuzz_elf;
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

/// The engine crate's ELF reader (the `object` crate) and the driver's parser read every
/// executable of `fw-blobs` the same: entry, loadable segments with their permissions, and
/// the value of every defined symbol.
#[test]
fn both_elf_readers_agree_on_every_fw_blob() {
    use mlx5_dpa::dpa::elf::Elf;
    use mlx5_sim::riscv::bare::Image;

    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fw-blobs");
    let mut n = 0;
    for dir in ["bin", "bare/bin"] {
        for e in std::fs::read_dir(root.join(dir)).unwrap() {
            let path = e.unwrap().path();
            if path.extension().is_none_or(|x| x != "elf") {
                continue;
            }
            let bytes = std::fs::read(&path).unwrap();
            let ours = mlx5_sim::vm::image(&Elf::parse_device(&bytes).unwrap());
            let theirs = Image::from_elf(&bytes).unwrap();
            assert_eq!(ours, theirs, "{}", path.display());
            n += 1;
        }
    }
    assert!(n >= 15, "only {n} ELFs compared");
}
