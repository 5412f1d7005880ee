//! Any bytes as a RISC-V instruction stream in a bare machine, run through the fast RAM path
//! and through the bus path, which must agree (see `mlx5_dpa_rv::bare::fuzz_exec`). Must
//! never panic.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| mlx5_dpa_rv::bare::fuzz_exec(data));
