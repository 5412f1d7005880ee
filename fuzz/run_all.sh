#!/usr/bin/env bash
# Runs every fuzz target for SECONDS each (default 600), two at once, on the stable toolchain
# (RUSTC_BOOTSTRAP=1 lets cargo-fuzz pass its -Z flags), and prints one line per target:
# executions, executions per second, and whether libFuzzer found a crash (its input is then
# under fuzz/artifacts/<target>/). Needs `cargo install cargo-fuzz`. Seeds the corpora first.
#
#   fuzz/run_all.sh [SECONDS] [TARGET...]
set -euo pipefail
cd "$(dirname "$0")"
SECS=${1:-600}
shift || true
TARGETS=("$@")
if [ ${#TARGETS[@]} -eq 0 ]; then
	mapfile -t TARGETS < <(RUSTC_BOOTSTRAP=1 cargo fuzz list)
fi
./seed.sh >/dev/null
RUSTC_BOOTSTRAP=1 cargo fuzz build -O >/dev/null 2>&1
LOGS=$(mktemp -d)
trap 'rm -rf "$LOGS"' EXIT

run_one() {
	local t=$1
	mkdir -p "corpus/$t" "artifacts/$t"
	RUSTC_BOOTSTRAP=1 cargo fuzz run -O "$t" -- -max_total_time="$SECS" \
		-print_final_stats=1 -rss_limit_mb=2048 >"$LOGS/$t.log" 2>&1 || true
	local execs
	execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$LOGS/$t.log" | grep -o '[0-9]*$' || echo 0)
	local verdict="no crash"
	if grep -qE '^(==[0-9]+==ERROR|SUMMARY: libFuzzer|.*deadly signal|thread .* panicked)' "$LOGS/$t.log"; then
		verdict="CRASH: $(grep -m1 -E 'artifact_prefix|Test unit written' "$LOGS/$t.log" || echo 'see the log')"
		cp "$LOGS/$t.log" "artifacts/$t/last.log"
	fi
	printf '%-16s %12s execs %8s exec/s  %s\n' "$t" "$execs" "$((execs / SECS))" "$verdict"
}

echo "fuzz: ${#TARGETS[@]} targets, ${SECS} s each, two at once"
i=0
while [ $i -lt ${#TARGETS[@]} ]; do
	run_one "${TARGETS[$i]}" &
	a=$!
	b=
	if [ $((i + 1)) -lt ${#TARGETS[@]} ]; then
		run_one "${TARGETS[$((i + 1))]}" &
		b=$!
	fi
	wait $a ${b:+$b}
	i=$((i + 2))
done
