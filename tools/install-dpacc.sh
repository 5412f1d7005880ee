#!/usr/bin/env bash
# Puts a `dpacc` where NVIDIA's doca_build_dpacc.sh runs it (by default
# /opt/mellanox/doca/tools/dpacc, the path that script fixes): a two-line script running
# `mlx5-dpa dpacc` with DPACC's arguments (docs/flexio-c.md).
#
#   tools/install-dpacc.sh [PATH]
#
# The tool is $MLX5_DPA, else `mlx5-dpa` on PATH, else built here (cargo build --release).
set -euo pipefail
dest="${1:-/opt/mellanox/doca/tools/dpacc}"
tool="${MLX5_DPA:-$(command -v mlx5-dpa || true)}"
if [ -z "$tool" ]; then
  root="$(cd "$(dirname "$0")/.." && pwd)"
  (cd "$root" && cargo build -q --release -p mlx5-dpa-tools)
  tool="${CARGO_TARGET_DIR:-$root/target}/release/mlx5-dpa"
fi
tool="$(cd "$(dirname "$tool")" && pwd)/$(basename "$tool")"
install -d "$(dirname "$dest")"
printf '#!/bin/sh\n# DPACC over mlx5-dpa (written by mlx5-dpa'"'"'s tools/install-dpacc.sh)\nexec "%s" dpacc "$@"\n' \
  "$tool" >"$dest"
chmod 0755 "$dest"
echo "dpacc installed at $dest (runs $tool dpacc)"
