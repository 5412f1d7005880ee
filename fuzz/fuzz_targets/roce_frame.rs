//! Any bytes as a frame arriving at the model's port: the RoCE v2 address check and parser,
//! also with the ICRC made right (see `mlx5_sim::testing::fuzzing::fuzz_roce_frame`). Must never panic.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| mlx5_sim::testing::fuzzing::fuzz_roce_frame(data));
