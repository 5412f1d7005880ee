//! Marks the tests whose programs are missing here as ignored (`build-support/tools.rs`).
include!("../build-support/tools.rs");

fn main() {
    version_info();
    require_program("riscv64-unknown-elf-gcc", "no_riscv_gcc");
    require_program("objcopy", "no_objcopy");
    require_program("gdb-multiarch", "no_gdb_multiarch");
    // NVIDIA's snap programs (fw-blobs/compat/README.md), not redistributable: a directory.
    require_env_path("MLX5_DPA_SNAP_DIR", "no_snap_dir");
}

/// `--version`'s long form: the git revision the tool was built from (when built from a
/// checkout) and the features built in.
fn version_info() {
    let rev = std::process::Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".into());
    let dirty = std::process::Command::new("git")
        .args(["status", "--porcelain", "--untracked-files=no"])
        .output()
        .ok()
        .is_some_and(|o| o.status.success() && !o.stdout.is_empty());
    let features: Vec<&str> = [
        ("jit", "CARGO_FEATURE_JIT"),
        ("gpu", "CARGO_FEATURE_GPU"),
        ("rdma-core", "CARGO_FEATURE_RDMA_CORE"),
    ]
    .into_iter()
    .filter(|(_, var)| std::env::var_os(var).is_some())
    .map(|(f, _)| f)
    .collect();
    println!(
        "cargo:rustc-env=MLX5_DPA_BUILD=git {rev}{}, features: {}",
        if dirty { " (modified)" } else { "" },
        if features.is_empty() {
            "none".to_string()
        } else {
            features.join(", ")
        }
    );
    // A new commit or checkout changes HEAD (or the branch it names).
    for f in ["../.git/HEAD", "../.git/index"] {
        println!("cargo:rerun-if-changed={f}");
    }
}
