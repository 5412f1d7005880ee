/*
 * The variadic part of flexio_process_call (SPDX-License-Identifier: MIT OR Apache-2.0).
 *
 * The exported symbol flexio_process_call is a jump into mlx5_flexio_process_call
 * (src/process.rs), which arrives here with the caller's registers and stack untouched.
 * A function registered with a pack function (flexio_func_pup_register) gets the
 * arguments packed by it into an argument buffer; one registered without
 * (flexio_func_register) takes one 64-bit argument. Everything else is the Rust side's.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

typedef void(pack_fn)(void *argbuf, va_list ap);

/* src/process.rs. Each returns a flexio_status. */
int mlx5_flexio_call_info(void *process, void *func, int *pup, size_t *argbuf_size,
			  pack_fn **pack);
int mlx5_flexio_call_packed(void *process, void *func, const void *argbuf, size_t len,
			    uint64_t *ret);
int mlx5_flexio_call_raw(void *process, void *func, uint64_t arg, uint64_t *ret);

int mlx5_flexio_process_call(void *process, void *func, uint64_t *ret, ...);

int mlx5_flexio_process_call(void *process, void *func, uint64_t *ret, ...)
{
	int pup = 0;
	size_t size = 0;
	pack_fn *pack = NULL;
	va_list ap;
	int st;

	st = mlx5_flexio_call_info(process, func, &pup, &size, &pack);
	if (st)
		return st;
	va_start(ap, ret);
	if (pup) {
		/* The Rust side checked the size against the largest argument buffer. */
		void *buf = calloc(1, size ? size : 1);

		if (!buf) {
			va_end(ap);
			return 1; /* FLEXIO_STATUS_FAILED */
		}
		pack(buf, ap);
		st = mlx5_flexio_call_packed(process, func, buf, size, ret);
		free(buf);
	} else {
		uint64_t arg = va_arg(ap, uint64_t);

		st = mlx5_flexio_call_raw(process, func, arg, ret);
	}
	va_end(ap);
	return st;
}
