//! Integration tests of the device model through its DevX front door and its rigs: one binary
//! (one link of the model) for them all; each module was a test binary of its own. (`firmware/`
//! is the firmware model's own binary; `tap.rs` needs its own harness.)

mod dpa;
mod dpa_elf_fuzz;
mod engine;
mod loopback;
mod rc;
mod sim_properties;
