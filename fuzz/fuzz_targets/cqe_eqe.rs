//! Any bytes as a CQE (64-byte and the second half of a 128-byte one), as an EQE, and as
//! values for the ring arithmetic. Must never panic.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| mlx5_dpa::queues::fuzzing::parse_cqe_eqe(data));
