/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * RPC as FlexIO does it (docs/sources.md section 9): the host packs a call's arguments into an
 * argument buffer in DPA memory, and on the device an unpack function
 * `uint64_t unpack(void *arg_buf, void *func)` reads them and calls the function.
 *
 * The runtime's part: the entry a call's thread starts at, and a generic unpack for
 * functions of up to eight u64 arguments (what DPACC generates for `__dpa_rpc__` functions
 * of that shape). A program with its own unpack (snap's `vrdma_dpa_rpc_unpack_func`) names
 * it in the call instead; see `struct mlx5_dpa_rpc_call` in flexio_dev.h for the layout.
 */
#include <libflexio-dev/flexio_dev.h>

uint64_t mlx5_dpa_rpc_entry(uint64_t call_daddr)
{
	struct mlx5_dpa_rpc_call *call = (struct mlx5_dpa_rpc_call *)(uintptr_t)call_daddr;
	flexio_dev_arg_unpack_func_t *unpack = (flexio_dev_arg_unpack_func_t *)(uintptr_t)call->unpack;
	uint64_t ret = unpack(call->arg_buf, (void *)(uintptr_t)call->func);

	call->ret = ret;
	return ret;
}

typedef uint64_t(mlx5_dpa_rpc_u64x8_t)(uint64_t, uint64_t, uint64_t, uint64_t, uint64_t,
				       uint64_t, uint64_t, uint64_t);

uint64_t mlx5_dpa_rpc_unpack_u64(void *arg_buf, void *func)
{
	const uint64_t *a = (const uint64_t *)arg_buf;

	/* Under the LP64 psABI the first eight integer arguments travel in a0..a7, so a
	 * function of fewer u64 parameters called with eight ignores the rest. */
	return ((mlx5_dpa_rpc_u64x8_t *)func)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]);
}
