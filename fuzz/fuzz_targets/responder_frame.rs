//! Any bytes as a frame from a TAP reaching `mlx5-dpa sim`'s responder: its ARP and ICMP
//! echo parsers (see `mlx5_sim::testing::fuzzing::fuzz_responder_frame`). Must never panic.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| mlx5_sim::testing::fuzzing::fuzz_responder_frame(data));
