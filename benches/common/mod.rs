//! What the DPA benches share: a started model and the activation round trip of a thread.

#[allow(dead_code)] // not every bench names the mode
pub mod busy;
#[allow(dead_code)] // the throughput benches' host; not every bench uses it
pub mod host;

use std::sync::Arc;
use std::time::Duration;

use mlx5_dpa::devx::Devx;
use mlx5_dpa::dpa::thread::EventHandler;

/// How long any one wait of a bench may take.
pub const T: Duration = Duration::from_secs(10);

/// The `bf3` model with its engine started, and a DevX context on it; in the busy mode
/// ([`busy`]), the competitor threads started beside it.
pub fn model() -> (mlx5_sim::Device, Arc<dyn Devx>) {
    busy::start();
    let d = mlx5_sim::Device::with_profile("bf3").expect("bf3 profile");
    d.start_engine();
    let ctx = d.open_devx();
    (d, ctx)
}

/// Runs an existing thread once and waits until it is no longer running (the driver's
/// `wait_done`: a look is two firmware commands; between looks the wait sleeps on the
/// device's activity).
#[allow(dead_code)] // not every bench that shares this module activates a thread
pub fn activate(h: &EventHandler, arg: u64) {
    h.run(arg).expect("run");
    h.wait_done(T).expect("the activation");
}

#[allow(dead_code)] // the criterion benches filter themselves
mod args;
#[allow(unused_imports)] // the criterion benches filter themselves
pub use args::selected;

/// The median of `v` (the upper one of an even count).
#[allow(dead_code)] // not every bench takes medians
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}
