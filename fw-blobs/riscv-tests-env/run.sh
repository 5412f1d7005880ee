#!/bin/sh
# Builds the riscv-tests ISA suites against this bare environment and runs each test with
# `mlx5-dpa vm run`, printing PASS / FAIL / SKIP per test and a summary. Local use only (not
# CI); riscv-tests itself is never copied into this repository.
#
# Usage: fw-blobs/riscv-tests-env/run.sh RISCV_TESTS_DIR [SUITE...]
#   SUITE defaults to: rv64ui rv64um rv64ua rv64uc rv64uzbb rv64uzbs
#   MLX5_DPA=path/to/mlx5-dpa uses that binary (default: cargo build --release, then
#   target/release/mlx5-dpa). RISCV_CC overrides the compiler (riscv64-unknown-elf-gcc).
#
# Skipped, by design:
#   rv64ui-ma_data  misaligned loads and stores; the engine faults on them (the DPA model
#                   wants faults), the test expects them emulated or trapped to a handler.
# Every other test of these suites runs: the environment needs no privileged mode (results go
# to `tohost`, see riscv_test.h).
set -eu

if [ $# -lt 1 ]; then
	sed -n '6,9p' "$0" >&2
	exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
tests=$(cd "$1" && pwd)
shift
suites=${*:-rv64ui rv64um rv64ua rv64uc rv64uzbb rv64uzbs}
cc=${RISCV_CC:-riscv64-unknown-elf-gcc}
if [ -z "${MLX5_DPA:-}" ]; then
	(cd "$root" && cargo build --release -q -p mlx5-dpa-tools)
	MLX5_DPA="$root/target/release/mlx5-dpa"
fi
skip="rv64ui-ma_data"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

pass=0
fail=0
skipped=0
failed=""
for suite in $suites; do
	dir="$tests/isa/$suite"
	[ -d "$dir" ] || { echo "no suite $dir" >&2; exit 2; }
	# The test list of the suite's Makefrag: "<suite>_sc_tests = \ a b \ c ..."
	names=$(sed -n "/^${suite}_sc_tests *=/,/^\$/p" "$dir/Makefrag" | sed '1s/.*=//' | tr -d '\\')
	case $suite in
	rv64uc) march=rv64imac_zicsr_zifencei_zbb_zbs ;;
	*) march=rv64ima_zicsr_zifencei_zbb_zbs ;;
	esac
	for t in $names; do
		name="$suite-$t"
		case " $skip " in
		*" $name "*)
			echo "SKIP $name"
			skipped=$((skipped + 1))
			continue
			;;
		esac
		elf="$out/$name.elf"
		if ! $cc -march=$march -mabi=lp64 -static -mcmodel=medany -fvisibility=hidden \
			-nostdlib -nostartfiles -Wl,--build-id=none -Wl,--no-warn-rwx-segments \
			-I"$here" -I"$tests/isa/macros/scalar" -T"$here/link.ld" \
			-o "$elf" "$dir/$t.S" 2>"$out/$name.log"; then
			echo "FAIL $name (does not build: $(head -1 "$out/$name.log"))"
			fail=$((fail + 1))
			failed="$failed $name"
			continue
		fi
		result=$("$MLX5_DPA" vm run "$elf" --max-insns 10000000 2>&1 || true)
		if echo "$result" | grep -qx "exit code: 0"; then
			echo "PASS $name ($(echo "$result" | sed -n 's/^instructions: //p') instructions)"
			pass=$((pass + 1))
		else
			echo "FAIL $name: $(echo "$result" | grep -m1 '^stopped:')"
			fail=$((fail + 1))
			failed="$failed $name"
		fi
	done
done
echo "riscv-tests: $pass passed, $fail failed, $skipped skipped${failed:+ (failed:$failed)}"
[ $fail = 0 ]
