//! The background engine's polling: it backs off when nothing happens, so an idle model costs
//! well under 1% of a core (the latency bench, `cargo bench --bench latency`, measures the CPU
//! time; this counts passes, which load can only make fewer).

use std::time::Duration;

use mlx5_sim::Device;

#[test]
fn an_idle_engine_backs_off_to_about_a_hundred_passes_a_second() {
    let d = Device::with_profile("bf3").expect("bf3");
    d.start_engine();
    // Past the first second of nothing to do.
    std::thread::sleep(Duration::from_millis(1200));
    let a = d.engine_passes();
    std::thread::sleep(Duration::from_secs(1));
    let b = d.engine_passes();
    d.stop_engine();
    let per_second = b - a;
    assert!(a > 0, "the engine never passed");
    // 10 ms sleeps make about 100; before the back-off it made hundreds of thousands.
    assert!(
        per_second <= 150,
        "{per_second} passes in a second of nothing to do"
    );
}
