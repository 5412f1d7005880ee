/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * matmul: task block of its entries (host <-> device contract).
 */
#ifndef MLX5_DPA_MATMUL_H
#define MLX5_DPA_MATMUL_H

#include <stddef.h>
#include <stdint.h>

/** Largest n the entries accept (the FlexIO sample uses 5). */
#define MATMUL_MAX_N 64

/**
 * Task block of matmul_cell / matmul_full, in DPA memory, 8-byte aligned, 48 bytes.
 * Matrices are n x n, row-major, u64 elements (element (r, c) at addr + 8 * (r * n + c)),
 * in DPA memory; products and sums wrap modulo 2^64.
 *
 * | offset | field | |
 * |---|---|---|
 * | 0  | `a_daddr` u64 | A |
 * | 8  | `b_daddr` u64 | B |
 * | 16 | `c_daddr` u64 | C = A x B (written) |
 * | 24 | `n` u32 | 1 .. MATMUL_MAX_N |
 * | 28 | `row` u32 | matmul_cell: the cell's row |
 * | 32 | `col` u32 | matmul_cell: the cell's column |
 * | 36 | `done` u32 | out: set to 1 (release store) when the entry finished |
 * | 40 | `result` u64 | out: the cell value (matmul_cell) or the sum of all of C (matmul_full) |
 */
struct matmul_task {
	uint64_t a_daddr;
	uint64_t b_daddr;
	uint64_t c_daddr;
	uint32_t n;
	uint32_t row;
	uint32_t col;
	uint32_t done;
	uint64_t result;
};

_Static_assert(sizeof(struct matmul_task) == 48, "matmul_task is 48 bytes");
_Static_assert(offsetof(struct matmul_task, n) == 24, "n @24");
_Static_assert(offsetof(struct matmul_task, row) == 28, "row @28");
_Static_assert(offsetof(struct matmul_task, col) == 32, "col @32");
_Static_assert(offsetof(struct matmul_task, done) == 36, "done @36");
_Static_assert(offsetof(struct matmul_task, result) == 40, "result @40");

/** Error return (as u64): n out of range, row/col outside the matrix, or a null address. */
#define MATMUL_ERR ((uint64_t)-1)

#endif /* MLX5_DPA_MATMUL_H */
