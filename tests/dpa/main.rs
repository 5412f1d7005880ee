//! Integration tests of FlexIO, DOCA DPA and the model's DPA, one binary (one link of the model) for them all;
//! each module was a test binary of its own.

/// The throughput benches' pipelined host port (`benches/common/host.rs`), for the test that
/// keeps many frames in flight through many DPA threads.
#[path = "../../benches/common/host.rs"]
mod bench_host;
#[path = "../common/mod.rs"]
mod common;
#[path = "../dpa_common/doca.rs"]
mod doca_common;
#[path = "../dpa_common/mod.rs"]
mod dpa_common;
#[path = "../elf_edit/mod.rs"]
mod elf_edit;
#[path = "../../examples/flexio_packet_processor.rs"]
#[allow(dead_code)]
mod flexio_packet_processor;
/// How long any one wait of `bench_host` may take.
const T: std::time::Duration = std::time::Duration::from_secs(30);
#[path = "../../examples/flexio_window.rs"]
#[allow(dead_code)]
mod flexio_window;

mod doca_dpa;
mod doca_dpa_buf;
mod doca_dpa_conns;
mod doca_dpa_extend;
mod doca_dpa_linked;
mod doca_dpa_v26;
mod doca_dpa_v27;
mod dpa_app;
mod dpa_auth;
mod dpa_cmdq;
mod dpa_debug;
mod dpa_hw_model;
mod dpa_jit;
mod dpa_msg_stream;
mod dpa_nic_counters;
mod dpa_packet_processor;
mod dpa_process;
mod dpa_ps;
mod dpa_queues;
mod dpa_window;
mod fault_sweep;
mod flexio_version;
mod outside_bytes;
