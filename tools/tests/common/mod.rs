//! Running the `mlx5-dpa` binary from the CLI tests, shared by each test crate (not every crate
//! uses every helper).
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Command, Output};

/// Runs `mlx5-dpa` with `args`.
pub fn run(args: &[&str]) -> Output {
    run_env(args, &[])
}

/// Runs `mlx5-dpa` with `args` and extra environment variables (`RUST_LOG` removed).
pub fn run_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_mlx5-dpa"));
    c.args(args).env_remove("RUST_LOG");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("run mlx5-dpa")
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A path inside the repository, from its root.
pub fn repo(rel: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(rel)
        .display()
        .to_string()
}

/// Writes `bytes` to a scratch file of this test process (`tag` keeps test crates apart) and
/// returns its path.
pub fn scratch(tag: &str, name: &str, bytes: &[u8]) -> String {
    let dir = std::env::temp_dir().join(format!("mlx5-dpa-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let p = dir.join(name);
    std::fs::write(&p, bytes).expect("scratch file");
    p.display().to_string()
}
