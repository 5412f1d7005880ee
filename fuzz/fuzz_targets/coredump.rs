//! Any bytes as a DPA coredump image (what DPA_PROCESS_COREDUMP returns), with and without a
//! valid header (see `mlx5_dpa::dpa::fuzzing::parse_coredump`). Must never panic.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| mlx5_dpa::dpa::fuzzing::parse_coredump(data));
