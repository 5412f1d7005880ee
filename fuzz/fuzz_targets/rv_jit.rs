//! The RISC-V JIT against the interpreter (see `mlx5_dpa_rv::bare::fuzz_jit`): any bytes as
//! a hotness choice and an instruction stream, run both ways; they must agree, and the JIT
//! must stay within its compile bound. Must never panic.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| mlx5_dpa_rv::bare::fuzz_jit(data));
