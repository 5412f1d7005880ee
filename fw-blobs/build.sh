#!/bin/sh
# SPDX-License-Identifier: MIT OR Apache-2.0
#
# Reproducible build of the DPA device programs (fw-blobs/README.md).
#
#   ./build.sh          build bin/<program>.elf, write SHA256SUMS, then run bare/build.sh if present
#   ./build.sh --check  rebuild into a temporary directory and compare with SHA256SUMS
#                       (exit 1 on any difference); runs `bare/build.sh --check` if present
#   ./build.sh --test   build tests/check.c with the programs' code into a temporary ELF
#                       (Linux write/exit ecalls) and run it under qemu-riscv64 (apt-get
#                       install qemu-user) and, if MLX5_DPA_BIN names the mlx5-dpa binary,
#                       on the model's engine with `mlx5-dpa vm run`
#
# Toolchain: Debian bookworm's gcc-riscv64-unknown-elf 12.2.0-14+deb12u1+11+b2 with
# binutils-riscv64-unknown-elf 2.40-2+4+b1. Another version may produce different bytes;
# the check says so rather than guessing.
set -eu

HERE=$(cd "$(dirname "$0")" && pwd)
cd "$HERE"

MODE=build
case "${1:-}" in
"") ;;
--check) MODE=check ;;
--test) MODE=test ;;
*)
	echo "usage: $0 [--check | --test]" >&2
	exit 2
	;;
esac

CROSS=${CROSS:-riscv64-unknown-elf-}
CC=${CROSS}gcc
OBJDUMP=${CROSS}objdump
READELF=${CROSS}readelf
NM=${CROSS}nm

EXPECT_GCC="12.2.0"
if ! command -v "$CC" >/dev/null 2>&1; then
	echo "build.sh: $CC not found (apt-get install gcc-riscv64-unknown-elf)" >&2
	exit 2
fi
GCC_VERSION=$("$CC" -dumpfullversion)
if [ "$GCC_VERSION" != "$EXPECT_GCC" ]; then
	echo "build.sh: warning: $CC is $GCC_VERSION, SHA256SUMS were made with $EXPECT_GCC" >&2
fi

# Fixed environment: locale, time zone and source paths must not leak into the output.
export LC_ALL=C TZ=UTC SOURCE_DATE_EPOCH=0

PROGRAMS="rpc_calc window_writer matmul packet_processor selftest ident_a ident_b pp_sample doca_kernels doca26_kernels doca27_kernels"
# Linked a second time with the older layout (link/dpa_older.ld), as <name>_older.elf.
OLDER="rpc_calc"
RUNTIME="os string print msg_stream cmdq rpc stdio inttypes debug doca_dpa"

ARCH="-march=rv64imac_zbb_zbs -mabi=lp64 -mcmodel=medany"
# -mno-relax: no gp-relative accesses (the model does not set gp).
# -fno-tree-loop-distribute-patterns: keep memset/memcpy loops from becoming calls to themselves.
CFLAGS="$ARCH -mno-relax -std=gnu11 -O2 -g0 -ffreestanding -nostdlib -fno-builtin \
 -fno-tree-loop-distribute-patterns -fno-common -fno-pic -fno-pie -fno-stack-protector \
 -fno-asynchronous-unwind-tables -fno-unwind-tables -fno-ident \
 -ffile-prefix-map=$HERE=. -Wall -Wextra -Werror -Wno-unused-parameter \
 -Iinclude -Isrc"
LDFLAGS="$ARCH -nostdlib -static -no-pie -Wl,-T,link/dpa.ld -Wl,--no-relax \
 -Wl,--build-id=none -Wl,-z,max-page-size=4096 -Wl,--no-warn-rwx-segments"

status=0
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT INT TERM
if [ "$MODE" != build ]; then
	OUT=$WORK/bin
else
	OUT=$HERE/bin
fi
mkdir -p "$OUT" "$WORK/obj"

compile() { # source object [extra flags]
	# shellcheck disable=SC2086
	"$CC" $CFLAGS ${3:-} -c "$1" -o "$2"
}

RT_OBJS=""
for r in $RUNTIME; do
	compile "runtime/$r.c" "$WORK/obj/rt_$r.o"
	RT_OBJS="$RT_OBJS $WORK/obj/rt_$r.o"
done

# Sanity checks on every linked program: two PT_LOADs at the link addresses, RVC soft-float
# flags, no gp use, and the entry symbols the README promises.
check_elf() { # elf entries... (LOADS: the expected PT_LOAD addresses)
	elf=$1
	shift
	"$READELF" -hW "$elf" | grep -q "Flags:.*0x1, RVC, soft-float ABI" ||
		{ echo "build.sh: $elf: unexpected e_flags" >&2; exit 1; }
	loads=$("$READELF" -lW "$elf" | awk '$1 == "LOAD" { print $3 }' | tr '\n' ' ')
	[ "$loads" = "${LOADS:-0x0000000040000000 0x0000000080000000 }" ] ||
		{ echo "build.sh: $elf: PT_LOADs at $loads" >&2; exit 1; }
	if "$OBJDUMP" -d "$elf" | grep -Eq '[[:space:],(]gp([,)]|$)'; then
		echo "build.sh: $elf: uses gp" >&2
		exit 1
	fi
	for sym in "$@"; do
		"$NM" "$elf" | grep -Eq " [Tt] $sym\$" ||
			{ echo "build.sh: $elf: entry $sym missing" >&2; exit 1; }
	done
}

COMMON_ENTRIES="flexio_msg_stream_dev_init flexio_msg_stream_dev_fini flexio_dev_thread_finish flexio_cmdq_dev_worker mlx5_dpa_rpc_entry mlx5_dpa_rpc_unpack_u64 __doca_dpa_kernel_entry __doca_dpa_thread_entry"
for p in $PROGRAMS; do
	case $p in
	# Written against DOCA 2.6's device API (include/doca_dpa_dev.h).
	doca26_kernels) compile "src/$p.c" "$WORK/obj/$p.o" -DDOCA_VERSION_MINOR=6 ;;
	# Written against DOCA 2.7's.
	doca27_kernels) compile "src/$p.c" "$WORK/obj/$p.o" -DDOCA_VERSION_MINOR=7 ;;
	*) compile "src/$p.c" "$WORK/obj/$p.o" ;;
	esac
	# shellcheck disable=SC2086
	"$CC" $LDFLAGS -o "$OUT/$p.elf" "$WORK/obj/$p.o" $RT_OBJS
	case $p in
	rpc_calc) entries="rpc_calculate rpc_echo rpc_digits8 rpc_unpack_u32_pair" ;;
	window_writer) entries="window_write window_checksum" ;;
	matmul) entries="matmul_cell matmul_full matmul_selfcheck" ;;
	packet_processor) entries="flexio_pp_dev pp_init pp_rewrite pp_selfcheck" ;;
	ident_a | ident_b) entries="ident" ;;
	pp_sample) entries="flexio_pp_dev" ;;
	doca26_kernels) entries="dpa_rdma_write_and_signal update_event_kernel v26_rdma_kernel v26_external_kernel v26_memcpy_kernel" ;;
	doca27_kernels) entries="v27_rdma_kernel" ;;
	doca_kernels) entries="hello_world linear_kernel diamond_kernel rank_kernel struct_kernel pair_kernel spin_kernel sum_rpc binary_tree_kernel pingpong_kernel hello_world_thread_kernel hello_world_thread_notify_rpc counting_thread notify_kernel relay_thread trace_kernel fault_thread memcpy_kernel completion_thread memcpy_many_kernel hash_kernel group_thread rdma_kernel poll_kernel rdma_write_batches pingpong_start_rpc pingpong_rdma_thread rdma_post_receive_rpc rdma_post_send_rpc target_thread buf_kernel rdma_buf_kernel post_wait_kernel" ;;
	selftest) entries="st_add st_add2 st_spin_forever st_fault_load st_store st_illegal st_ebreak \
st_exit st_finish st_get_duar st_outbox_db st_outbox_gvmi st_window_rw st_counter st_tls st_ctx_dump \
st_gp_global st_stack st_print st_msg st_format_check st_thread_id st_yield st_retrigger st_msix \
st_window_copy st_time st_sim st_wqe_nop \
st_window_marks st_window_poll st_trace" ;;
	esac
	# shellcheck disable=SC2086
	check_elf "$OUT/$p.elf" $COMMON_ENTRIES $entries
done
for p in $OLDER; do
	# shellcheck disable=SC2086
	"$CC" $(echo "$LDFLAGS" | sed 's|link/dpa.ld|link/dpa_older.ld|') -o "$OUT/${p}_older.elf" \
		"$WORK/obj/$p.o" $RT_OBJS
	LOADS="0x0000000010000000 0x0000000028000000 " check_elf "$OUT/${p}_older.elf" $COMMON_ENTRIES
done

if [ "$MODE" = test ]; then
	compile tests/check.c "$WORK/obj/check.o"
	# packet_processor.c and window_writer.c are #included by the check (static functions).
	# shellcheck disable=SC2086
	"$CC" $LDFLAGS -Wl,-e,_start -o "$WORK/check.elf" "$WORK/obj/check.o" \
		"$WORK/obj/rpc_calc.o" "$WORK/obj/matmul.o" \
		"$WORK/obj/selftest.o" $RT_OBJS
	QEMU=${QEMU:-qemu-riscv64}
	ran=0
	if command -v "$QEMU" >/dev/null 2>&1; then
		echo "build.sh --test: $QEMU"
		"$QEMU" "$WORK/check.elf" || status=1
		ran=1
	fi
	if [ -n "${MLX5_DPA_BIN:-}" ]; then
		echo "build.sh --test: $MLX5_DPA_BIN vm run"
		# vm run succeeds on any exit code: the code is in its report.
		"$MLX5_DPA_BIN" vm run "$WORK/check.elf" >"$WORK/vm.out" 2>&1 || status=1
		cat "$WORK/vm.out"
		grep -q '^exit code: 0$' "$WORK/vm.out" || status=1
		ran=1
	fi
	if [ $ran = 0 ]; then
		echo "build.sh --test: need qemu-riscv64 (apt-get install qemu-user) or MLX5_DPA_BIN" >&2
		exit 2
	fi
	exit $status
fi

sums() { # directory
	(cd "$1" && for p in $PROGRAMS $(for o in $OLDER; do echo "${o}_older"; done); do
		sha256sum "$p.elf"
	done | sed 's|  |  bin/|')
}

if [ "$MODE" = check ]; then
	if sums "$OUT" | diff -u SHA256SUMS -; then
		echo "build.sh --check: bin/*.elf reproduce SHA256SUMS"
	else
		echo "build.sh --check: MISMATCH against SHA256SUMS" >&2
		status=1
	fi
	if ! (cd "$HERE" && sha256sum --quiet -c SHA256SUMS); then
		echo "build.sh --check: committed bin/*.elf differ from SHA256SUMS" >&2
		status=1
	fi
else
	sums "$OUT" >SHA256SUMS
	echo "build.sh: built $(echo $PROGRAMS | wc -w) programs into bin/, wrote SHA256SUMS"
fi

if [ -f bare/build.sh ]; then
	if [ "$MODE" = check ]; then
		sh bare/build.sh --check || status=1
	else
		sh bare/build.sh
	fi
fi
exit $status
