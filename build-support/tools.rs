// Included by the build scripts of the crates whose tests need programs from outside (`g++`,
// `riscv64-unknown-elf-gcc`, `objcopy`, `gdb-multiarch`, `ip`): each program missing from PATH
// sets a cfg, and the tests that need it carry `#[cfg_attr(CFG, ignore = "...")]`, so where it
// is missing they are reported ignored, with the reason, and never as passed. Installing the
// program (which changes a PATH directory) or changing PATH runs the script again.

/// Sets `cfg` unless `program` is on PATH; declares `cfg` either way.
fn require_program(program: &str, cfg: &str) {
    println!("cargo::rustc-check-cfg=cfg({cfg})");
    println!("cargo::rerun-if-env-changed=PATH");
    let dirs: Vec<std::path::PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    for d in &dirs {
        if d.is_dir() {
            println!("cargo::rerun-if-changed={}", d.display());
        }
    }
    if !dirs.iter().any(|d| d.join(program).is_file()) {
        println!("cargo::rustc-cfg={cfg}");
    }
}

/// Sets `cfg` unless the environment variable `var` is set (to a path that exists).
#[allow(dead_code)]
fn require_env_path(var: &str, cfg: &str) {
    println!("cargo::rustc-check-cfg=cfg({cfg})");
    println!("cargo::rerun-if-env-changed={var}");
    let ok = std::env::var_os(var).is_some_and(|p| std::path::Path::new(&p).exists());
    if !ok {
        println!("cargo::rustc-cfg={cfg}");
    }
}
