#!/bin/sh
# Builds tests/data/dpa/host_models.elf: a small x86-64 host program carrying DPA applications
# built for several hardware models, packaged by `mlx5-dpa cc` (mlx5_dpa::dpa::hw_model):
#
#   .dpa_bin_which@nv-dpa-bf3   which_model.c built with --cpu bf3,cx8: one copy per model,
#   .dpa_bin_which@nv-dpa-cx8   each answering 3 or 8 from `which_model`
#   .dpa_bin_newest@nv-dpa-cx9  which_model.c built with --cpu cx9 only (answers 9)
#   .dpa_bin_legacy             which_model.c built without --cpu: unlabelled, BlueField-3
#
# Needs gcc, strip, objcopy, riscv64-unknown-elf-gcc and the mlx5-dpa tool (built here with
# cargo unless MLX5_DPA names one). The tests use the committed output and need none of these.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ -z "${MLX5_DPA:-}" ]; then
  cargo build --quiet --release -p mlx5-dpa-tools --manifest-path "$root/Cargo.toml"
  MLX5_DPA="$root/target/release/mlx5-dpa"
fi

printf 'int main(void) { return 0; }\n' > "$tmp/host.c"
gcc -Os -o "$tmp/host" "$tmp/host.c" -Wl,-z,noseparate-code -Wl,--build-id=none
strip "$tmp/host"

src="$here/which_model.c"
"$MLX5_DPA" cc -o "$tmp/h1" --package-into "$tmp/host" --app which --cpu bf3,cx8 "$src"
"$MLX5_DPA" cc -o "$tmp/h2" --package-into "$tmp/h1" --app newest --cpu cx9 "$src"
"$MLX5_DPA" cc -o "$here/host_models.elf" --package-into "$tmp/h2" --app legacy "$src"
echo "wrote $here/host_models.elf"
