/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * rpc_calc: the FlexIO RPC sample, for the mlx5-dpa model.
 *
 * Entries (see fw-blobs/README.md):
 *   rpc_calculate(a, b)   a + b; prints "Calculate: a + b = r" on stream 0 if one is
 *                         configured (called through the runtime's generic unpack)
 *   rpc_echo(x)           returns x (one argument: also callable directly)
 *   rpc_digits8(a..h)     the eight arguments as decimal digits, a first
 *   rpc_unpack_u32_pair   an unpack of the program's own: two u32 in the buffer
 * plus the runtime's flexio_msg_stream_dev_init / _fini and mlx5_dpa_rpc_entry.
 */
#include <stdint.h>

#include <libflexio-dev/flexio_dev.h>

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

uint64_t rpc_digits8(uint64_t a, uint64_t b, uint64_t c, uint64_t d, uint64_t e, uint64_t f,
		     uint64_t g, uint64_t h);

/* Eight arguments, each a decimal digit of the result in order: shows the generic unpack
 * passes all eight, in order. */
__dpa_rpc__ uint64_t rpc_digits8(uint64_t a, uint64_t b, uint64_t c, uint64_t d, uint64_t e,
				 uint64_t f, uint64_t g, uint64_t h)
{
	return ((((((a * 10 + b) * 10 + c) * 10 + d) * 10 + e) * 10 + f) * 10 + g) * 10 + h;
}

/* A program's own unpack (as snap writes `vrdma_dpa_rpc_unpack_func`): its argument buffer
 * holds two little-endian u32, passed to a two-argument function. */
flexio_dev_arg_unpack_func_t rpc_unpack_u32_pair;
uint64_t rpc_unpack_u32_pair(void *arg_buf, void *func)
{
	const uint32_t *w = (const uint32_t *)arg_buf;

	return ((uint64_t(*)(uint64_t, uint64_t))func)(w[0], w[1]);
}
