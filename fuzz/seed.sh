#!/bin/sh
# Seeds the fuzz corpora (fuzz/corpus/<target>/, ignored by git) with real inputs, so that
# the fuzzers start from well-formed bytes: the fw-blobs device ELFs and the host-ELF fixture
# for the ELF targets, and for `uverbs` a program of calls that all succeed. The other targets
# start from nothing and find their way (the frame and coredump targets fix up checksums and
# headers themselves).
set -eu
cd "$(dirname "$0")/.."
for t in host_elf_apps dpa_elf; do
	mkdir -p "fuzz/corpus/$t"
	cp fw-blobs/bin/*.elf tests/data/dpa/host_apps.elf "fuzz/corpus/$t/"
done
mkdir -p fuzz/corpus/rv_exec
for f in fw-blobs/bare/bin/*.elf; do
	cp "$f" "fuzz/corpus/rv_exec/$(basename "$f")"
done
mkdir -p fuzz/corpus/uverbs
cargo run -q -p mlx5-sim-uverbs --features test-utils --example uverbs_fuzz_seed \
	>fuzz/corpus/uverbs/seed
echo "fuzz/seed.sh: corpora seeded under fuzz/corpus/"
