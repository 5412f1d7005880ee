//! Any bytes as a DPA device ELF: the parser (`mlx5_dpa::dpa::elf`), the bare machine's loader
//! and up to 10 000 instructions of whatever loads (see `mlx5_sim::testing::fuzzing::fuzz_dpa_elf`).
//! Must never panic.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| mlx5_sim::testing::fuzzing::fuzz_dpa_elf(data));
