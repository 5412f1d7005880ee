#!/usr/bin/env bash
# Soak test: runs the DPA and device-model test binaries N times, two runs at once (as when
# another test run shares the machine's cores), and names every test that failed, with the
# round it failed in (the failed runs' output is kept in target/soak-failures/). Not part of
# CI; run it before trusting a change to the model or DPA.
#
#   tools/soak.sh [N] [FILTER]    N rounds (default 50); FILTER: a test-name substring
#                                  passed to every binary (default: all tests)
#
# Exit status: 0 when every run passed, 1 when any test failed, 2 on bad arguments.
set -euo pipefail
cd "$(dirname "$0")/.."

N=${1:-50}
FILTER=${2:-}
case $N in
'' | *[!0-9]*)
	echo "usage: $0 [N] [FILTER]" >&2
	exit 2
	;;
esac

# The binaries: the driver's tests (DPA, queues, teardown), and every test of the model.
mapfile -t BINS < <(
	cargo test --workspace --no-run --message-format=json 2>/dev/null |
		grep -o '"executable":"[^"]*"' | sed 's/^"executable":"//; s/"$//' |
		grep -E '/(dpa|driver|model|firmware|corpus|fuzz|mlx5_sim|mlx5_dpa_rv)-[0-9a-f]+$' |
		sort
)
if [ ${#BINS[@]} -eq 0 ]; then
	echo "soak: no test binaries found (does 'cargo test --no-run' build?)" >&2
	exit 2
fi
echo "soak: ${#BINS[@]} binaries, $N rounds, 2 runs at once${FILTER:+, filter '$FILTER'}"

LOGS=$(mktemp -d)
trap 'rm -rf "$LOGS"' EXIT
# The output of every failed binary run is kept here.
KEEP=target/soak-failures
rm -rf "$KEEP"
mkdir -p "$KEEP"

# One run: every binary in turn; writes "binary test" lines for failures to $1.
run_all() {
	local out=$1 b name log
	: >"$out"
	for b in "${BINS[@]}"; do
		name=$(basename "$b" | sed 's/-[0-9a-f]*$//')
		log="$out.$name.log"
		if ! "$b" --quiet ${FILTER:+"$FILTER"} >"$log" 2>&1; then
			cp "$log" "$KEEP/$(basename "$out")-$(date +%s%N)-$name.log"
			# libtest lists the failed tests under "failures:" as "    name".
			if grep -q '^failures:$' "$log"; then
				sed -n '/^failures:$/,/^test result/p' "$log" | grep -E '^    [A-Za-z0-9_:]+$' |
					sed "s|^    |$name |" | sort -u >>"$out"
			else
				# No list: the binary died (a signal, an abort).
				echo "$name (binary died: $(tail -n 1 "$log"))" >>"$out"
			fi
		fi
	done
}

start=$(date +%s)
failed=0
for ((r = 1; r <= N; r++)); do
	run_all "$LOGS/a" &
	pa=$!
	run_all "$LOGS/b" &
	pb=$!
	wait $pa $pb || true
	for c in a b; do
		while read -r line; do
			[ -n "$line" ] || continue
			echo "round $r run $c: FAILED $line"
			echo "$line" >>"$LOGS/all"
			failed=$((failed + 1))
		done <"$LOGS/$c"
	done
	if [ $((r % 10)) -eq 0 ] || [ "$r" -eq "$N" ]; then
		echo "soak: $r of $N rounds, $failed failures, $(($(date +%s) - start)) s"
	fi
done

if [ "$failed" -eq 0 ]; then
	echo "soak: $((2 * N)) runs of ${#BINS[@]} binaries, no failure"
	exit 0
fi
echo "soak: $failed failures in $((2 * N)) runs; by test (their output is in $KEEP):"
sort "$LOGS/all" | uniq -c | sort -rn
exit 1
