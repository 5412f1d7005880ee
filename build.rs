//! Marks the tests whose programs are missing here as ignored (`build-support/tools.rs`): the
//! GPU header tests build the headers as host C++ with g++; `tests/dpa/dpa_auth.rs` checks NVIDIA's
//! signed programs where `MLX5_DPA_SNAP_DIR` names them.
include!("build-support/tools.rs");

fn main() {
    require_program("g++", "no_gxx");
    // clang's CUDA front end checks GPUNetIO kernels as device code (no CUDA toolkit needed).
    require_program("clang++", "no_clangxx");
    // NVIDIA's signed snap programs (fw-blobs/compat/README.md), not redistributable.
    require_env_path("MLX5_DPA_SNAP_DIR", "no_snap_dir");
}
