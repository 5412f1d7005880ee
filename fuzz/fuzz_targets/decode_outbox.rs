//! Any bytes as the output mailbox of a command (first byte picks it). Must never panic.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| mlx5_dpa::mlx5::fuzzing::decode_any_outbox(data));
