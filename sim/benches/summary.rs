//! The last bench of `cargo bench` (the sim package runs last, and this target sorts after
//! `sim`): one table of every figure the benches of this run measured.
//!
//! - Every criterion benchmark's median time per iteration (`target/criterion/<group>/<name>/
//!   new/estimates.json`), with its throughput where the bench declared one.
//! - Every bench's `summary` lines, with the ratios against the baselines each measured in the
//!   same run (`target/bench-summary/<bench>.txt`, written by `benches/common/summary.rs`).
//!
//! Figures from an earlier run of a bench that this run skipped (a filter) are listed too,
//! marked with their age.

use std::path::{Path, PathBuf};

#[path = "../../benches/common/args.rs"]
mod args;
use std::time::SystemTime;

fn target_dir() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    Some(exe.parent()?.parent()?.parent()?.to_path_buf())
}

fn age(p: &Path) -> String {
    let m = std::fs::metadata(p).and_then(|m| m.modified()).ok();
    match m.and_then(|t| SystemTime::now().duration_since(t).ok()) {
        Some(d) if d.as_secs() > 3600 => format!(" (from {} h ago)", d.as_secs() / 3600),
        _ => String::new(),
    }
}

fn human(ns: f64) -> String {
    match ns {
        n if n >= 1e9 => format!("{:.2} s", n / 1e9),
        n if n >= 1e6 => format!("{:.2} ms", n / 1e6),
        n if n >= 1e3 => format!("{:.2} us", n / 1e3),
        n => format!("{n:.2} ns"),
    }
}

/// One criterion benchmark: name, median ns per iteration, its declared throughput (kind,
/// amount per iteration), and how old the figure is.
type Figure = (String, f64, Option<(String, f64)>, String);

/// Every criterion benchmark's figure.
fn criterion(dir: &Path) -> Vec<Figure> {
    let mut out = Vec::new();
    let Ok(groups) = std::fs::read_dir(dir) else {
        return out;
    };
    let mut groups: Vec<_> = groups.filter_map(Result::ok).map(|e| e.path()).collect();
    groups.sort();
    for g in groups {
        let Ok(benches) = std::fs::read_dir(&g) else {
            continue;
        };
        let mut benches: Vec<_> = benches.filter_map(Result::ok).map(|e| e.path()).collect();
        benches.sort();
        for b in benches {
            let est = b.join("new/estimates.json");
            let Ok(text) = std::fs::read_to_string(&est) else {
                continue;
            };
            let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) else {
                continue;
            };
            let Some(ns) = v["median"]["point_estimate"].as_f64() else {
                continue;
            };
            let tp = std::fs::read_to_string(b.join("new/benchmark.json"))
                .ok()
                .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
                .and_then(|j| {
                    let t = j["throughput"].as_object()?.clone();
                    let (kind, n) = t.into_iter().next()?;
                    Some((kind, n.as_f64()?))
                });
            let file = |p: &Path| p.file_name().map(|n| n.to_string_lossy().into_owned());
            let name = format!(
                "{}/{}",
                file(&g).unwrap_or_default(),
                file(&b).unwrap_or_default()
            );
            out.push((name, ns, tp, age(&est)));
        }
    }
    out
}

fn main() {
    if !args::selected("summary") {
        return;
    }
    let Some(target) = target_dir() else {
        println!("summary: no target directory");
        return;
    };
    println!();
    println!("==================== summary of every bench ====================");
    println!("criterion benchmarks (median per iteration):");
    for (name, ns, tp, old) in criterion(&target.join("criterion")) {
        let rate = match tp {
            Some((kind, n)) if ns > 0.0 => {
                let per_s = n / (ns / 1e9);
                if kind == "Bytes" {
                    format!("{:>10.1} MB/s", per_s / 1e6)
                } else {
                    format!("{:>10.3} M/s", per_s / 1e6)
                }
            }
            _ => String::new(),
        };
        println!("  {name:<58} {:>11} {rate}{old}", human(ns));
    }
    let dir = target.join("bench-summary");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .map(|d| d.filter_map(Result::ok).map(|e| e.path()).collect())
        .unwrap_or_default();
    files.sort();
    println!("each bench's figures and ratios (baselines measured in the same run):");
    for f in files {
        let bench = f.file_stem().map(|s| s.to_string_lossy().into_owned());
        let old = age(&f);
        let Ok(text) = std::fs::read_to_string(&f) else {
            continue;
        };
        println!("  [{}]{old}", bench.unwrap_or_default());
        for line in text.lines() {
            println!("    {}", line.trim_start_matches("summary ").trim());
        }
    }
    println!("================================================================");
}
