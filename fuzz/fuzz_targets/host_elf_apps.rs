//! Any bytes as a host ELF carrying DPA applications (`.dpa_bin_<app>` sections, signatures,
//! `.riscv.attributes`), or as a device ELF: the extraction `elf info` and `Process::create`
//! use (see `mlx5_dpa::dpa::fuzzing::extract_apps`). Must never panic. Seed the corpus with
//! `fuzz/seed.sh`.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| mlx5_dpa::dpa::fuzzing::extract_apps(data));
