//! Any bytes decoded as any PRM layout (first byte picks the layout). Must never panic.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| mlx5_dpa::mlx5::fuzzing::decode_any_layout(data));
