/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * window_writer: argument block of its entries (host <-> device contract).
 */
#ifndef MLX5_DPA_WINDOW_WRITER_H
#define MLX5_DPA_WINDOW_WRITER_H

#include <stddef.h>
#include <stdint.h>

/** Fill modes. */
#define WINDOW_WRITER_MODE_BYTES 0 /**< byte i = (pattern + i) & 0xff */
#define WINDOW_WRITER_MODE_TEXT 1  /**< "Hello from DPA <pattern>\n" repeated, cut at len */

/**
 * Argument block of window_write / window_checksum, in DPA memory, 8-byte aligned, 48 bytes.
 *
 * | offset | field | |
 * |---|---|---|
 * | 0  | `window_id` u32 | window to select (WINDOW_SET_CFG) |
 * | 4  | `mkey` u32 | key of the host memory (stored to window_config_base) |
 * | 8  | `haddr` u64 | host address (in the mkey's space) of the first byte |
 * | 16 | `len` u64 | bytes to write / read |
 * | 24 | `pattern` u32 | BYTES: start value (low 8 bits); TEXT: the number N printed |
 * | 28 | `mode` u32 | WINDOW_WRITER_MODE_* (window_write only) |
 * | 32 | `result` u64 | out: bytes written (window_write) or byte sum (window_checksum) |
 * | 40 | `daddr` u64 | out: the DPA address haddr was reached at (window_base + haddr) |
 */
struct window_writer_args {
	uint32_t window_id;
	uint32_t mkey;
	uint64_t haddr;
	uint64_t len;
	uint32_t pattern;
	uint32_t mode;
	uint64_t result;
	uint64_t daddr;
};

_Static_assert(sizeof(struct window_writer_args) == 48, "window_writer_args is 48 bytes");
_Static_assert(offsetof(struct window_writer_args, haddr) == 8, "haddr @8");
_Static_assert(offsetof(struct window_writer_args, len) == 16, "len @16");
_Static_assert(offsetof(struct window_writer_args, pattern) == 24, "pattern @24");
_Static_assert(offsetof(struct window_writer_args, mode) == 28, "mode @28");
_Static_assert(offsetof(struct window_writer_args, result) == 32, "result @32");
_Static_assert(offsetof(struct window_writer_args, daddr) == 40, "daddr @40");

/** Error return of the entries (as u64): no window for the thread, or a bad mode. */
#define WINDOW_WRITER_ERR ((uint64_t)-1)

#endif /* MLX5_DPA_WINDOW_WRITER_H */
