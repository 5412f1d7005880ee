//! What every DPA test starts with: a device model with its engine running (the engine runs
//! the DPA threads and the copies' RDMA traffic) and a DevX context on it.
#![allow(dead_code)]

use std::sync::Arc;

use mlx5_dpa::devx::Devx;

/// The model with profile `profile` (`bf3`, or `cx7` without a DPA), engine started.
pub fn model(profile: &str) -> (mlx5_sim::Device, Arc<dyn Devx>) {
    let d = mlx5_sim::Device::with_profile(profile).expect("profile");
    d.start_engine();
    let ctx = d.open_devx();
    (d, ctx)
}

/// The bf3 model with its engine running, and a DevX context on it.
pub fn bf3() -> (mlx5_sim::Device, Arc<dyn Devx>) {
    model("bf3")
}

/// A bf3 model whose port has MAC 02:00:5e:00:00:`mac_last` and IPv4 10.0.0.`ip_last`, engine
/// started: one end of a RoCEv2 link between two models.
pub fn addressed(mac_last: u8, ip_last: u8) -> mlx5_sim::Device {
    let d = mlx5_sim::Device::with_profile("bf3").expect("bf3");
    d.set_port_address([0x02, 0, 0x5e, 0, 0, mac_last], [10, 0, 0, ip_last]);
    d.start_engine();
    d
}
