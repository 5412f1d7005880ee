//! A host program's library carrying DPA device code: `build.rs` runs
//! `mlx5_dpa::dpa::embed::embed`, and this includes what it generated: module `calc` with the
//! device ELF in this binary's `.dpa_bin_calc` section (as DPACC puts it in a C host
//! program), `calc::rpc::rpc_calculate(&process, a, b)` and the other declared entry points.
//! `tests/embedded.rs` runs them on the device model.

include!(concat!(env!("OUT_DIR"), "/dpa_apps.rs"));
