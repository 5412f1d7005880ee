//! Tests of the `mlx5-dpa` tool, command by command, run as a user runs it: one binary for them
//! all; each module was a test binary of its own. (`real_clients.rs` needs its own harness.)

#[path = "../common/mod.rs"]
mod common;

mod auth;
mod capture;
mod cc_cli;
mod cli;
mod coredump;
mod doctor;
mod dpa_cli;
mod elf_cli;
mod eu;
mod gdb;
mod sim_ps;
mod snap_elfs;
mod vm;
