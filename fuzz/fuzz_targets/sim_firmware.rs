//! Any bytes as a program of command mailboxes into the firmware model, through one DevX
//! context (see `mlx5_sim::testing::fuzzing`). Must never panic, and the closed context must leave
//! nothing behind.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| mlx5_sim::testing::fuzzing::fuzz_mailbox(data));
