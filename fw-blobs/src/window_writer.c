/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * window_writer: writes a recognisable pattern into host memory through a window.
 *
 * Entries (argument block: window_writer.h):
 *   window_write(args_daddr)     selects window args->window_id keyed with args->mkey, then
 *                                fills args->len bytes at host address args->haddr:
 *                                  BYTES: byte i = (pattern + i) & 0xff
 *                                  TEXT:  "Hello from DPA <pattern>\n" repeated, cut at len
 *                                Returns the bytes written (also in args->result), or
 *                                WINDOW_WRITER_ERR.
 *   window_checksum(args_daddr)  same window set-up, then returns the sum of the len bytes at
 *                                haddr as u64 (also in args->result): reads through the window.
 */
#include <stdint.h>

#include <libflexio-dev/flexio_dev.h>
#include "window_writer.h"

uint64_t window_write(uint64_t args_daddr);
uint64_t window_checksum(uint64_t args_daddr);

/* Selects and keys the window; stores the DPA address of haddr in *dst. */
static int window_open(struct flexio_dev_thread_ctx *dtctx, volatile struct window_writer_args *a,
		       volatile uint8_t **dst)
{
	flexio_uintptr_t daddr;

	if (flexio_dev_window_config(dtctx, (uint16_t)a->window_id, a->mkey) != FLEXIO_DEV_STATUS_SUCCESS)
		return -1;
	if (flexio_dev_window_ptr_acquire(dtctx, a->haddr, &daddr) != FLEXIO_DEV_STATUS_SUCCESS)
		return -1;
	a->daddr = daddr;
	*dst = (volatile uint8_t *)(uintptr_t)daddr;
	return 0;
}

/* Fills len bytes at dst by `mode` (pure; window_writer.h). */
static void ww_fill(volatile uint8_t *dst, uint64_t len, uint32_t pattern, uint32_t mode)
{
	uint64_t i;

	if (mode == WINDOW_WRITER_MODE_BYTES) {
		for (i = 0; i < len; i++)
			dst[i] = (uint8_t)(pattern + i);
	} else {
		char line[48];
		uint64_t n = (uint64_t)mlx5_dpa_snprintf(line, sizeof(line), "Hello from DPA %u\n", pattern);
		uint64_t k = 0;

		for (i = 0; i < len; i++) {
			dst[i] = (uint8_t)line[k];
			if (++k == n)
				k = 0;
		}
	}
}

__dpa_rpc__ uint64_t window_write(uint64_t args_daddr)
{
	volatile struct window_writer_args *a = (volatile struct window_writer_args *)(uintptr_t)args_daddr;
	struct flexio_dev_thread_ctx *dtctx;
	volatile uint8_t *dst;
	uint64_t len = a->len;

	flexio_dev_get_thread_ctx(&dtctx);
	if (a->mode > WINDOW_WRITER_MODE_TEXT || window_open(dtctx, a, &dst)) {
		a->result = WINDOW_WRITER_ERR;
		return WINDOW_WRITER_ERR;
	}
	ww_fill(dst, len, a->pattern, a->mode);
	/* ORDERING: the host-memory stores are issued before the RPC reports completion. */
	mlx5_dpa_fence_rw_o();
	a->result = len;
	return len;
}

__dpa_rpc__ uint64_t window_checksum(uint64_t args_daddr)
{
	volatile struct window_writer_args *a = (volatile struct window_writer_args *)(uintptr_t)args_daddr;
	struct flexio_dev_thread_ctx *dtctx;
	volatile uint8_t *src;
	uint64_t sum = 0;
	uint64_t i;

	flexio_dev_get_thread_ctx(&dtctx);
	if (window_open(dtctx, a, &src)) {
		a->result = WINDOW_WRITER_ERR;
		return WINDOW_WRITER_ERR;
	}
	for (i = 0; i < a->len; i++)
		sum += src[i];
	a->result = sum;
	return sum;
}
