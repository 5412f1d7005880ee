#!/bin/sh
# SPDX-License-Identifier: MIT OR Apache-2.0
#
# tests/gpu/compat/check.sh GPUNETIO_CHECKOUT: NVIDIA's public GPUNetIO example kernels
# (github.com/NVIDIA-DOCA/gpunetio, `examples/*/*_kernel.cu`), compiled unmodified as CUDA device
# code with clang's CUDA front end against this project's headers (src/gpu/include) and the
# CUDA stand-in (tests/gpu/standin). The host-only headers the examples' common header pulls
# in (DOCA's host API, the application's internals) are empty stand-ins made in a scratch
# folder, except DOCA_LOG, which the kernels' host functions call. Nothing of NVIDIA's is
# copied into this repository: the checkout is read where it lies.
#
# Prints one line per kernel: PASS, or FAIL with its first error; exits 1 if any fails, 2 when
# clang++ or the checkout is missing. To run the kernels on CPU threads against the model:
# GPUNETIO_CHECKOUT=DIR cargo test --test driver gpu_cpu_runtime -- --ignored
set -u

src=${1:?usage: check.sh GPUNETIO_CHECKOUT (a checkout of github.com/NVIDIA-DOCA/gpunetio)}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
if ! command -v clang++ >/dev/null 2>&1; then
	echo "check.sh: clang++ not found (apt-get install clang)" >&2
	exit 2
fi
if [ ! -d "$src/examples" ]; then
	echo "check.sh: $src has no examples/ (a checkout of NVIDIA-DOCA/gpunetio?)" >&2
	exit 2
fi
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
for h in doca_verbs.h doca_gpunetio.h doca_gpunetio_high_level.h; do
	echo "/* check.sh: empty stand-in for a host-only header */" >"$scratch/$h"
done
cat >"$scratch/doca_internal.hpp" <<'H'
/* check.sh: stand-in for the application's internals: DOCA_LOG of the kernels' host code. */
#pragma once
#define LOG_ERR 0
#define LOG_INFO 1
#define DOCA_LOG(level, ...) printf(__VA_ARGS__)
H

failed=0
for k in "$src"/examples/*/*_kernel.cu; do
	name=$(basename "$k" .cu)
	out=$(clang++ -x cuda --cuda-gpu-arch=sm_80 --cuda-device-only -nocudainc -nocudalib \
		-fsyntax-only -std=c++17 -include cuda_runtime.h -I "$root/tests/gpu/standin" \
		-I "$scratch" -I "$root/src/gpu/include" -I "$src/examples" "$k" 2>&1)
	if [ $? -eq 0 ]; then
		echo "PASS  $name"
	else
		failed=$((failed + 1))
		first=$(printf '%s\n' "$out" | grep -m1 'error:' | sed 's/^.*error: //')
		echo "FAIL  $name: $first"
	fi
done
echo "check.sh: $failed failed"
[ "$failed" -eq 0 ]
