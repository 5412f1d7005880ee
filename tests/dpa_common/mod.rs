//! What every DPA test starts with: a device model with its engine running (the engine runs
//! the DPA threads and the copies' RDMA traffic) and a DevX context on it.

use std::sync::Arc;

use mlx5_dpa::devx::Devx;

/// The model with profile `profile` (`bf3`, or `cx7` without a DPA), engine started.
pub fn model(profile: &str) -> (mlx5_sim::Device, Arc<dyn Devx>) {
    let d = mlx5_sim::Device::with_profile(profile).expect("profile");
    d.start_engine();
    let ctx = d.open_devx();
    (d, ctx)
}
