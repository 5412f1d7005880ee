#!/usr/bin/env bash
# fw-blobs/compat/snap.sh DIR: NVIDIA-built snap DPA programs on the model (see README.md here).
set -euo pipefail
dir=${1:?usage: snap.sh DIR (the dpa_app folder of a my-snap-rdma checkout)}
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
cargo build -q --release -p mlx5-dpa-tools
status=0
for p in dpa_nvme dpa_nvme_mp dpa_virtq_split; do
    target/release/mlx5-dpa elf isa "$dir/$p" || status=$?
done
snap=$(cd "$dir" && pwd)
MLX5_DPA_SNAP_DIR=$snap cargo test -q --release -p mlx5-dpa-tools --test cmds snap_elfs:: || status=$?
# Their signatures: the hash lists this project computes, byte for byte, and verification.
MLX5_DPA_SNAP_DIR=$snap cargo test -q --release -p mlx5-dpa --test dpa dpa_auth::nvidia || status=$?
MLX5_DPA_SNAP_DIR=$snap cargo test -q --release -p mlx5-dpa-tools --test cmds auth::nvidia || status=$?
exit $status
