#!/usr/bin/env bash
# fw-blobs/compat/check.sh DOCA_CHECKOUT: NVIDIA's public FlexIO / DOCA device sources, built
# unmodified with `mlx5-dpa cc` and run where this project can run them (see README.md here).
#
# DOCA_CHECKOUT is a checkout of github.com/ssbandjl/doca holding at least
#   doca-dpu-repo-ubuntu2204-local/flexio-samples_24.01.2011_all.deb_dir
#   doca-dpu-repo-ubuntu2204-local/doca-apps-dev_2.6.0058-1_arm64.deb_dir/opt/mellanox/doca/applications/l2_reflector
# Nothing is copied into this repository; the builds go to a temporary directory.
set -uo pipefail
doca=${1:?usage: check.sh DOCA_CHECKOUT (see fw-blobs/compat/README.md)}
root=$(cd "$(dirname "$0")/../.." && pwd)
samples=$doca/doca-dpu-repo-ubuntu2204-local/flexio-samples_24.01.2011_all.deb_dir/opt/mellanox/flexio/samples
apps=$doca/doca-dpu-repo-ubuntu2204-local/doca-apps-dev_2.6.0058-1_arm64.deb_dir/opt/mellanox/doca/applications
[ -d "$samples" ] || { echo "check.sh: no FlexIO samples under $doca" >&2; exit 2; }

(cd "$root" && cargo build -q --release -p mlx5-dpa-tools -p mlx5-sim-preload) || exit 2
tool=$root/target/release/mlx5-dpa
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
failed=0

step() { # name command...
	local name=$1
	shift
	if "$@" >"$out/log" 2>&1; then
		echo "PASS  $name"
	else
		echo "FAIL  $name"
		sed 's/^/      /' "$out/log"
		failed=$((failed + 1))
	fi
}

# Device sources, unmodified.
step "cc flexio_rpc/dev/flexio_rpc_dev.c" \
	"$tool" cc -o "$out/flexio_rpc.elf" "$samples/flexio_rpc/dev/flexio_rpc_dev.c"
step "cc packet_processor/dev + common/dev/com_dev.c" \
	"$tool" cc -o "$out/packet_processor.elf" -I "$samples/common/dev" \
	"$samples/packet_processor/dev/flexio_packet_processor_dev.c" "$samples/common/dev/com_dev.c"
if [ -d "$apps/l2_reflector" ]; then
	step "cc DOCA l2_reflector/src/device" \
		"$tool" cc -o "$out/l2_reflector.elf" "$apps/l2_reflector/src/device/l2_reflector_device.c"
fi

# Every instruction of what was built runs on the model's engine.
for elf in "$out"/*.elf; do
	step "elf isa $(basename "$elf")" "$tool" elf isa "$elf"
done

# The RPC sample through process.call, with this project's host side.
rpc_check() {
	"$tool" --sim demo rpc 44 55 --app-elf "$out/flexio_rpc.elf" | tee "$out/rpc.txt" &&
		grep -qx "Calculate: 44 + 55 = 99" "$out/rpc.txt" &&
		grep -qx "Result: 99" "$out/rpc.txt"
}
step "run flexio_rpc (demo rpc --app-elf)" rpc_check
cat "$out/rpc.txt" 2>/dev/null | sed 's/^/      /'

# The packet processor through this project's host side of the sample's protocol.
pp_check() {
	"$tool" --sim demo packet-processor --app-elf "$out/packet_processor.elf" | tee "$out/pp.txt" &&
		grep -qx "Process packet: 0" "$out/pp.txt" &&
		grep -q '^verified: MACs swapped, payload "1 Event demo' "$out/pp.txt"
}
step "run packet_processor (demo packet-processor --app-elf)" pp_check
grep -E "^(Welcome|Registered|Process|verified|Flex IO)" "$out/pp.txt" 2>/dev/null | sed 's/^/      /'

# As the samples' `build.sh --cpu bf3,cx8`: the RPC sample's device code built for two hardware
# models into a host program; the demo takes the copy for the model's BlueField-3.
step "cc --cpu bf3,cx8 --package-into (flexio_rpc)" \
	"$tool" cc -o "$out/flexio_rpc_host" --package-into /bin/true --app flexio_rpc_dev \
	--cpu bf3,cx8 "$samples/flexio_rpc/dev/flexio_rpc_dev.c"
models_check() {
	"$tool" elf info "$out/flexio_rpc_host" | grep '^app' &&
		"$tool" --sim demo rpc 44 55 --app-elf "$out/flexio_rpc_host" >"$out/rpc2.txt" &&
		grep -qx "Result: 99" "$out/rpc2.txt"
}
step "run flexio_rpc from the two-model host program" models_check
grep '^app' "$out/log" 2>/dev/null | sed 's/^/      /'

# The RPC sample's two halves, both unmodified, as its build makes them: the device half by
# NVIDIA's doca_build_dpacc.sh, which runs /opt/mellanox/doca/tools/dpacc (this project's,
# put there by tools/install-dpacc.sh: needs the right to write there), the host half by gcc
# with `-DDEV_APP_NAME` and the flags `pkg-config libflexio` gives (flexio/install.sh); run
# under `mlx5-dpa run` (as root, for its namespace).
dpacc=/opt/mellanox/doca/tools/dpacc
host_setup() {
	PROFILE=release "$root/flexio/install.sh" "$out/prefix" &&
		MLX5_DPA="$tool" "$root/tools/install-dpacc.sh" "$dpacc"
}
step "install libflexio and dpacc ($dpacc)" host_setup
rpc_host() {
	(cd "$out" && bash "$samples/doca_build_dpacc.sh" --application --app_name flexio_rpc_dev \
		--srcs "$samples/flexio_rpc/dev/flexio_rpc_dev.c" --dpacc_build_dir "$out/dpacc" \
		--external_cc_options -Wall --hostcc_args -Wall) &&
		gcc -Wall -DDEV_APP_NAME=flexio_rpc_dev -o "$out/flexio_rpc" \
			"$samples/flexio_rpc/host/flexio_rpc.c" "$out/dpacc/flexio_rpc_dev.a" \
			$(PKG_CONFIG_PATH="$out/prefix/lib/pkgconfig" pkg-config --cflags --libs libflexio) \
			-Wl,-rpath,"$out/prefix/lib"
}
step "build flexio_rpc, host and device halves (doca_build_dpacc.sh, gcc)" rpc_host
rpc_run() {
	"$tool" run -- "$out/flexio_rpc" mlx5_0 44 55 | tee "$out/rpc_host.txt" &&
		grep -qx "Welcome to 'Flex IO RPC' sample" "$out/rpc_host.txt" &&
		grep -qx "Calculate: 44 + 55 = 99" "$out/rpc_host.txt" &&
		grep -qx "Result: 99" "$out/rpc_host.txt" &&
		grep -qx "Flex IO RPC sample is done" "$out/rpc_host.txt"
}
step "run flexio_rpc mlx5_0 44 55 (mlx5-dpa run)" rpc_run
sed 's/^/      /' "$out/rpc_host.txt" 2>/dev/null

# The packet processor's two halves, unmodified: device code with common/dev/com_dev.c, host
# code with common/host/flow_steering_utils.c (mlx5dv_dr rules, hence -lmlx5). It runs with
# --nic-mode (its NIC RX rule; the served device has no eswitch for the DPU mode's FDB rules)
# on a runner whose port is linked over UDP: pp_frame.py sends the sample's frame in and checks
# the frame that comes back; then Enter ends the sample.
pp_host() {
	(cd "$out" && bash "$samples/doca_build_dpacc.sh" --application \
		--app_name flexio_packet_processor_dev \
		--srcs "$samples/packet_processor/dev/flexio_packet_processor_dev.c" \
		--srcs "$samples/common/dev/com_dev.c" --dpacc_build_dir "$out/dpacc" \
		--additional_include_directories "$samples/common/dev" \
		--additional_include_directories "$samples/packet_processor" \
		--external_cc_options -Wall --hostcc_args -Wall) &&
		gcc -Wall -DDEV_APP_NAME=flexio_packet_processor_dev -o "$out/packet_processor" \
			"$samples/packet_processor/host/flexio_packet_processor_host.c" \
			"$samples/common/host/flow_steering_utils.c" -I "$samples/common/host" \
			-I "$samples/packet_processor" "$out/dpacc/flexio_packet_processor_dev.a" \
			$(PKG_CONFIG_PATH="$out/prefix/lib/pkgconfig" pkg-config --cflags --libs libflexio) \
			-lmlx5 -Wl,-rpath,"$out/prefix/lib"
}
step "build packet_processor, host and device halves (doca_build_dpacc.sh, gcc)" pp_host
pp_run() {
	local fifo="$out/pp.stdin" a=$((40000 + RANDOM % 10000)) b
	b=$((a + 1))
	mkfifo "$fifo" || return 1
	"$tool" run --link "udp:127.0.0.1:$a,127.0.0.1:$b" -- "$out/packet_processor" mlx5_0 \
		--nic-mode <"$fifo" >"$out/pp_host.txt" 2>&1 &
	local pid=$!
	exec 7>"$fifo"
	for _ in $(seq 100); do
		grep -q "Welcome" "$out/pp_host.txt" 2>/dev/null && break
		sleep 0.1
	done
	sleep 1
	python3 "$root/fw-blobs/compat/pp_frame.py" "$a" "$b" >"$out/pp_frame.txt"
	local sent=$?
	echo >&7
	exec 7>&-
	wait "$pid"
	[ "$sent" -eq 0 ] && grep -qx "Process packet: 0" "$out/pp_host.txt"
}
step "run packet_processor mlx5_0 --nic-mode, one frame in (mlx5-dpa run)" pp_run
sed 's/^/      /' "$out/pp_host.txt" "$out/pp_frame.txt" 2>/dev/null

# DOCA DPA 2.6's kernel-launch samples: their device sources built unmodified, run by this
# project's host side of each sample (`demo doca-dpa NAME --app-elf`), with the samples' own
# host delays (5 s before the wait event, 2 s before the tree's root).
dpa_samples=$doca/doca-dpu-repo-ubuntu2204-local/doca-samples_2.6.0058-1_arm64.deb_dir/opt/mellanox/doca/samples/doca_dpa
if [ -d "$dpa_samples" ]; then
	for s in kernel_launch wait_kernel_launch binary_tree diamond_tree; do
		step "cc DOCA dpa_$s/device" \
			"$tool" cc -o "$out/dpa_$s.elf" "$dpa_samples/dpa_$s/device/dpa_${s}_kernels_dev.c"
	done
	doca_check() { # sample delay_ms last-line
		"$tool" --sim demo doca-dpa "$1" --app-elf "$out/dpa_$(echo "$1" | tr - _).elf" \
			--delay-ms "$2" >"$out/doca_$1.txt" &&
			grep -qx "$3" "$out/doca_$1.txt"
	}
	step "run dpa_kernel_launch (demo doca-dpa kernel-launch --app-elf)" \
		doca_check kernel-launch 0 "\[DOCA\]\[DPA DEVICE\]\[INF\] Hello from kernel"
	sed 's/^/      /' "$out/doca_kernel-launch.txt" 2>/dev/null
	step "run dpa_wait_kernel_launch (wait event set after 5 s)" \
		doca_check wait-kernel-launch 5000 "\[DOCA\]\[DPA DEVICE\]\[INF\] Hello from kernel"
	step "run dpa_binary_tree (root set after 2 s)" \
		doca_check binary-tree 2000 "Completion event kernel G has been signaled"
	tail -n 2 "$out/doca_binary-tree.txt" 2>/dev/null | sed 's/^/      /'
	step "run dpa_diamond_tree" \
		doca_check diamond-tree 0 "Kernel D completion event has been signaled"
	# The RDMA copy sample calls DOCA 2.6's device RDMA API (doca_dpa_dev_rdma_write,
	# signal_set without a connection id, synchronize), which 2.9 changed under the same names:
	# the headers declare 2.6's when the build states DOCA 2.6 (doca_version.h's macros).
	step "cc DOCA dpa_rdma_copy/device (-D DOCA_VERSION_MINOR=6)" \
		"$tool" cc -D DOCA_VERSION_MINOR=6 -o "$out/dpa_rdma_copy.elf" \
		"$dpa_samples/dpa_rdma_copy/device/dpa_rdma_copy_kernels_dev.c"
	step "run dpa_rdma_copy (demo doca-dpa rdma-copy --app-elf)" \
		doca_check rdma-copy 0 "After copying: local buffer = 10, remote buffer = 10"
	tail -n 2 "$out/doca_rdma-copy.txt" 2>/dev/null | sed 's/^/      /'
else
	echo "SKIP  DOCA DPA 2.6 samples: $dpa_samples not in the checkout"
fi

echo "check.sh: $failed failed"
[ "$failed" -eq 0 ]
