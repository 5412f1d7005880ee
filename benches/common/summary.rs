//! The `summary!` lines of a bench: printed, and kept in `target/bench-summary/<bench>.txt`
//! for the table the last bench of `cargo bench` prints (`sim/benches/summary.rs`). Included
//! by path from every bench that reports figures.

/// Appends `line` to this bench's summary file (started afresh by the process's first line).
pub fn record(bench: &str, line: &str) {
    use std::io::Write;
    use std::sync::atomic::{AtomicBool, Ordering};
    static STARTED: AtomicBool = AtomicBool::new(false);
    // target/<profile>/deps/<bench>-<hash>: the target directory is three levels up.
    let Some(dir) = std::env::current_exe().ok().and_then(|e| {
        e.parent()
            .and_then(|p| p.parent())
            .and_then(|p| p.parent())
            .map(|t| t.join("bench-summary"))
    }) else {
        return;
    };
    let _ = std::fs::create_dir_all(&dir);
    let first = !STARTED.swap(true, Ordering::Relaxed);
    let file = std::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .append(!first)
        .truncate(first)
        .open(dir.join(format!("{bench}{}.txt", busy_suffix())));
    if let Ok(mut f) = file {
        let _ = writeln!(f, "{line}");
    }
}

/// `-busy` in the busy mode (`MLX5_BENCH_BUSY`, `benches/common/busy.rs`): its figures are
/// kept apart from the quiet ones.
fn busy_suffix() -> &'static str {
    match std::env::var("MLX5_BENCH_BUSY") {
        Ok(v) if !v.is_empty() && v != "0" => "-busy",
        _ => "",
    }
}

/// `println!` that also records the line for the closing table.
macro_rules! summary {
    ($($t:tt)*) => {{
        let line = format!($($t)*);
        println!("{line}");
        $crate::summary::record(env!("CARGO_CRATE_NAME"), &line);
    }};
}
