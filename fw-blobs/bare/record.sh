#!/bin/sh
# Records the expected results of the bare corpus in rv/tests/data/corpus.json:
# exit code and output (the checksum line) from an independent run under qemu-user
# (qemu-riscv64), and the retired-instruction count from this project's engine (`mlx5-dpa vm
# run`: not independent, it only pins the count so a change shows up in review).
#
# Usage: fw-blobs/bare/record.sh      (MLX5_DPA=path/to/mlx5-dpa to skip the cargo build)
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out="$root/rv/tests/data/corpus.json"
qemu=${QEMU:-qemu-riscv64}
command -v "$qemu" >/dev/null || { echo "record.sh: $qemu not found (apt install qemu-user)" >&2; exit 1; }
if [ -z "${MLX5_DPA:-}" ]; then
	(cd "$root" && cargo build --release -q -p mlx5-dpa-tools)
	MLX5_DPA="$root/target/release/mlx5-dpa"
fi

tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
{
	printf '{\n'
	printf '  "comment": "Written by fw-blobs/bare/record.sh. exit_code and stdout: qemu-user; instret: the mlx5-sim engine.",\n'
	printf '  "qemu": "%s",\n' "$("$qemu" --version | head -1)"
	printf '  "programs": [\n'
	first=1
	for elf in $(ls "$here"/bin/*.elf | LC_ALL=C sort); do
		name=$(basename "$elf" .elf)
		set +e
		stdout=$("$qemu" "$elf")
		code=$?
		set -e
		instret=$("$MLX5_DPA" vm run "$elf" | sed -n 's/^instructions: //p')
		sha=$(sha256sum "$elf" | cut -d' ' -f1)
		[ $first = 1 ] || printf ',\n'
		first=0
		printf '    {"name": "%s", "sha256": "%s", "exit_code": %d, "stdout": "%s\\n", "instret": %d}' \
			"$name" "$sha" "$code" "$stdout" "$instret"
	done
	printf '\n  ]\n}\n'
} >"$tmp"
mv "$tmp" "$out"
trap - EXIT
echo "recorded $(grep -c '"name"' "$out") programs in $out"
