//! Marks the tests whose programs are missing here as ignored (`build-support/tools.rs`).
include!("../build-support/tools.rs");

fn main() {
    require_program("riscv64-unknown-elf-gcc", "no_riscv_gcc");
    require_program("objcopy", "no_objcopy");
    require_program("gdb-multiarch", "no_gdb_multiarch");
    // NVIDIA's snap programs (fw-blobs/compat/README.md), not redistributable: a directory.
    require_env_path("MLX5_DPA_SNAP_DIR", "no_snap_dir");
}
