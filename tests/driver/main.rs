//! Integration tests of the driver's layouts, commands and queues, one binary (one link of the model) for them all;
//! each module was a test binary of its own.

#[path = "../common/mod.rs"]
mod common;
#[path = "../dpa_common/mod.rs"]
mod dpa_common;
#[path = "../gpu/mod.rs"]
mod gpu;
#[path = "../../examples/rdma_rc.rs"]
#[allow(dead_code)]
mod rdma_rc;

mod eth_queues;
mod golden_commands;
mod gpu_cpu_runtime;
mod gpu_headers;
mod gpu_rdma;
mod gpu_verbs;
mod ifc_reference;
mod layout_overrides;
mod properties;
mod rc_queues;
mod rc_srq;
mod ring_properties;
mod teardown;
mod waits;
