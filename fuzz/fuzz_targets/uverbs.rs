//! Any bytes as a program of system calls on the served uverbs device: ioctls (headers and
//! attributes of any shape, pointers into the client's arena or into unmapped memory), legacy
//! and extended write commands, UAR mmaps (see `mlx5_sim_uverbs::fuzzing`). Must never panic,
//! and the closed context must leave nothing on the model.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    mlx5_sim_uverbs::fuzzing::fuzz_uverbs(data);
});
