/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * rpc_calc: the FlexIO RPC sample, for the mlx5-dpa model.
 *
 * Entries (see fw-blobs/README.md):
 *   rpc_calculate(a, b)            a + b; prints "Calculate: a + b = r" on stream 0 if one is
 *                                  configured. The model starts entries with a0 only, so the
 *                                  host calls it through its stub:
 *   rpc_calculate_rpc_stub(args)   args block: [0] = result (out), [1] = a, [2] = b
 *   rpc_echo(x)                    returns x (one argument: callable directly)
 *   rpc_echo_rpc_stub(args)        args block: [0] = result (out), [1] = x
 * plus the runtime's flexio_msg_stream_dev_init / _fini.
 */
#include <stdint.h>

#include "flexio_dev.h"

uint64_t rpc_calculate(uint64_t arg1, uint64_t arg2);
uint64_t rpc_echo(uint64_t x);

__dpa_rpc__ uint64_t rpc_calculate(uint64_t arg1, uint64_t arg2)
{
	uint64_t res = arg1 + arg2;

	(void)flexio_dev_print("Calculate: %lu + %lu = %lu\n", arg1, arg2, res);
	return res;
}

__dpa_rpc__ uint64_t rpc_echo(uint64_t x)
{
	return x;
}

FLEXIO_RPC_STUB(rpc_calculate, 2)
FLEXIO_RPC_STUB(rpc_echo, 1)
