#!/bin/sh
# Builds the bare corpus (fw-blobs/bare/*.c) into fw-blobs/bare/bin/*.elf and writes
# fw-blobs/bare/SHA256SUMS. Deterministic: fixed flags, no build id, source paths mapped to
# "bare/", sorted inputs. Needs Debian's gcc-riscv64-unknown-elf (12.2 was used for the
# committed ELFs; another version may produce other bytes, then SHA256SUMS changes).
#
# Usage: fw-blobs/bare/build.sh [--check]   (--check: build into a temporary directory and
#                                            compare with the committed SHA256SUMS)
set -eu

here=$(cd "$(dirname "$0")" && pwd)
cc=${RISCV_CC:-riscv64-unknown-elf-gcc}
out="$here/bin"
check=0
if [ "${1:-}" = "--check" ]; then
	check=1
	out=$(mktemp -d)
	trap 'rm -rf "$out"' EXIT
fi
mkdir -p "$out"

cflags="-march=rv64imac_zbb_zbs -mabi=lp64 -mcmodel=medany -O2 -ffreestanding -nostdlib -fno-builtin
	-fno-tree-loop-distribute-patterns -fno-asynchronous-unwind-tables -fno-pic -g0
	-ffile-prefix-map=$here=bare -Wall -Wextra -Werror"
ldflags="-static -Wl,--build-id=none -Wl,-T,$here/link.ld -Wl,--no-warn-rwx-segments"

cd "$here"
for src in $(ls *.c | LC_ALL=C sort); do
	name=${src%.c}
	[ "$name" = libc ] && continue
	# shellcheck disable=SC2086
	$cc $cflags $ldflags -o "$out/$name.elf" crt0.S libc.c "$src"
done
# The compute loop again, linked below 4 MiB (link-4m.ld) for the benchmark's ckb-vm run.
# shellcheck disable=SC2086
$cc $cflags $(echo "$ldflags" | sed "s|$here/link.ld|$here/link-4m.ld|") \
	-o "$out/compute-4m.elf" crt0.S libc.c compute.c

sums=$(cd "$out" && sha256sum $(ls *.elf | LC_ALL=C sort))
if [ $check = 1 ]; then
	if [ "$sums" = "$(cat "$here/SHA256SUMS")" ]; then
		echo "bare corpus: reproduced byte for byte"
	else
		echo "bare corpus: differs from SHA256SUMS ($($cc --version | head -1))" >&2
		exit 1
	fi
else
	echo "$sums" > "$here/SHA256SUMS"
	echo "bare corpus: $(ls "$out"/*.elf | wc -l) ELFs in $out ($($cc --version | head -1))"
fi
