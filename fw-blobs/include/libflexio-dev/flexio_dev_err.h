/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * Error reporting of DPA programs (FlexIO names): fatal errors end the process with a status
 * the host reads back; recoverable ones sit in the thread context's errno word.
 */
#ifndef MLX5_DPA_FLEXIO_DEV_ERR_H
#define MLX5_DPA_FLEXIO_DEV_ERR_H

#include <stdint.h>

#include "flexio_dev.h"

/**
 * Process status ranges (FlexIO): 0 OK, 1-63 OS / firmware, 64-127 SDK, 128-255 user.
 * flexio_dev_error(e) with e outside 128..255 reports FLEXIO_DEV_ERROR_ILLEGAL_ERR instead.
 */
typedef enum flexio_dev_errors {
	FLEXIO_DEV_ERROR_ILLEGAL_ERR = 0x42,
} flexio_dev_error_t;

/** Ends the process with user status `error` (EXIT_PROCESS, a0 = status). Does not return. */
__attribute__((noreturn)) void flexio_dev_error(uint8_t error);

/** The thread's errno word (thread context offset 40). */
static inline uint64_t flexio_dev_get_errno(struct flexio_dev_thread_ctx *dtctx)
{
	return *(volatile uint32_t *)&dtctx->errno;
}

/** Clears the thread's errno word. */
static inline void flexio_dev_rst_errno(struct flexio_dev_thread_ctx *dtctx)
{
	*(volatile uint32_t *)&dtctx->errno = 0;
}

/** Reads then clears the thread's errno word. */
static inline uint64_t flexio_dev_get_and_rst_errno(struct flexio_dev_thread_ctx *dtctx)
{
	uint64_t e = flexio_dev_get_errno(dtctx);

	flexio_dev_rst_errno(dtctx);
	return e;
}

#endif /* MLX5_DPA_FLEXIO_DEV_ERR_H */
