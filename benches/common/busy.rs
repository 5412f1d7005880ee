//! The benches' busy mode: `MLX5_BENCH_BUSY=N` runs N CPU-bound competitor threads beside
//! the bench for its whole run (`MLX5_BENCH_BUSY=1` or any other value that is not a count:
//! 2), as a compiler or a test run next to the model would. Their summary lines go to
//! `<bench>-busy.txt`, so the closing table shows quiet and busy figures side by side.

use std::sync::OnceLock;

/// The competitor threads asked for by `MLX5_BENCH_BUSY` (0: quiet).
pub fn competitors() -> usize {
    static N: OnceLock<usize> = OnceLock::new();
    *N.get_or_init(|| match std::env::var("MLX5_BENCH_BUSY") {
        Err(_) => 0,
        Ok(v) if v.is_empty() || v == "0" => 0,
        Ok(v) => v.parse().unwrap_or(2).min(64),
    })
}

/// "quiet", or "busy (N competitor threads)".
pub fn mode() -> String {
    match competitors() {
        0 => "quiet".into(),
        n => format!("busy ({n} competitor threads)"),
    }
}

/// Starts the competitors once per process; they spin until the process ends.
pub fn start() {
    static STARTED: OnceLock<()> = OnceLock::new();
    STARTED.get_or_init(|| {
        for i in 0..competitors() {
            let _ = std::thread::Builder::new()
                .name(format!("bench-busy-{i}"))
                .spawn(|| {
                    let mut x = 1u64;
                    loop {
                        // Integer work the compiler cannot drop: no memory traffic, no yields.
                        for _ in 0..1_000_000 {
                            x = std::hint::black_box(x.wrapping_mul(6_364_136_223_846_793_005))
                                .wrapping_add(1);
                        }
                    }
                });
        }
    });
}
