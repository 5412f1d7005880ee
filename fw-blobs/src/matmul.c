/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * matmul: the worker of FlexIO's multithread sample: one cell of C = A x B per task, so a
 * command queue (or many threads) computes a matrix in parallel.
 *
 * Entries (task block: matmul.h):
 *   matmul_cell(task_daddr)   C[row][col] = sum_k A[row][k] * B[k][col]; returns it (also in
 *                             task->result), sets task->done = 1. A command-queue task.
 *   matmul_full(task_daddr)   all of C; returns the wrapping sum of C's elements.
 *   matmul_selfcheck()        no argument: multiplies two built-in 5x5 matrices and compares
 *                             with golden values; returns 0 on success, else 1 + the index of
 *                             the first wrong cell. Pure (no OS call, no queue).
 * All return MATMUL_ERR for a bad task.
 */
#include <stdint.h>

#include <libflexio-dev/flexio_dev.h>
#include "matmul.h"

uint64_t matmul_cell(uint64_t task_daddr);
uint64_t matmul_full(uint64_t task_daddr);
uint64_t matmul_selfcheck(void);

/* One cell: the pure function every entry uses. */
static uint64_t mm_cell(const uint64_t *a, const uint64_t *b, uint32_t n, uint32_t row, uint32_t col)
{
	uint64_t sum = 0;

	for (uint32_t k = 0; k < n; k++)
		sum += a[(uint64_t)row * n + k] * b[(uint64_t)k * n + col];
	return sum;
}

static uint64_t mm_all(const uint64_t *a, const uint64_t *b, uint64_t *c, uint32_t n)
{
	uint64_t total = 0;

	for (uint32_t r = 0; r < n; r++) {
		for (uint32_t col = 0; col < n; col++) {
			uint64_t v = mm_cell(a, b, n, r, col);

			c[(uint64_t)r * n + col] = v;
			total += v;
		}
	}
	return total;
}

static int task_ok(const volatile struct matmul_task *t)
{
	return t->n >= 1 && t->n <= MATMUL_MAX_N && t->a_daddr && t->b_daddr && t->c_daddr;
}

static uint64_t task_finish(volatile struct matmul_task *t, uint64_t result)
{
	t->result = result;
	__atomic_store_n(&t->done, 1, __ATOMIC_RELEASE);
	return result;
}

__dpa_global__ uint64_t matmul_cell(uint64_t task_daddr)
{
	volatile struct matmul_task *t = (volatile struct matmul_task *)(uintptr_t)task_daddr;
	uint64_t v;

	if (!task_ok(t) || t->row >= t->n || t->col >= t->n)
		return task_finish(t, MATMUL_ERR);
	v = mm_cell((const uint64_t *)(uintptr_t)t->a_daddr, (const uint64_t *)(uintptr_t)t->b_daddr,
		    t->n, t->row, t->col);
	((uint64_t *)(uintptr_t)t->c_daddr)[(uint64_t)t->row * t->n + t->col] = v;
	return task_finish(t, v);
}

__dpa_rpc__ uint64_t matmul_full(uint64_t task_daddr)
{
	volatile struct matmul_task *t = (volatile struct matmul_task *)(uintptr_t)task_daddr;

	if (!task_ok(t))
		return task_finish(t, MATMUL_ERR);
	return task_finish(t, mm_all((const uint64_t *)(uintptr_t)t->a_daddr,
				     (const uint64_t *)(uintptr_t)t->b_daddr,
				     (uint64_t *)(uintptr_t)t->c_daddr, t->n));
}

/* Built-in check: A[i][j] = i + j + 1, B[i][j] = 2i - j + 3 (as u64, wrapping), 5 x 5. */
#define SC_N 5
static const uint64_t sc_expected[SC_N * SC_N] = {
	/* golden values, computed independently with Python big integers mod 2^64 */
	0x7dull, 0x6eull, 0x5full, 0x50ull, 0x41ull,
	0xa0ull, 0x8cull, 0x78ull, 0x64ull, 0x50ull,
	0xc3ull, 0xaaull, 0x91ull, 0x78ull, 0x5full,
	0xe6ull, 0xc8ull, 0xaaull, 0x8cull, 0x6eull,
	0x109ull, 0xe6ull, 0xc3ull, 0xa0ull, 0x7dull,
};

__dpa_rpc__ uint64_t matmul_selfcheck(void)
{
	uint64_t a[SC_N * SC_N];
	uint64_t b[SC_N * SC_N];
	uint64_t c[SC_N * SC_N];

	for (uint32_t i = 0; i < SC_N; i++) {
		for (uint32_t j = 0; j < SC_N; j++) {
			a[i * SC_N + j] = (uint64_t)i + j + 1;
			b[i * SC_N + j] = 2 * (uint64_t)i - j + 3;
		}
	}
	(void)mm_all(a, b, c, SC_N);
	for (uint32_t i = 0; i < SC_N * SC_N; i++) {
		if (c[i] != sc_expected[i])
			return 1 + i;
	}
	return 0;
}
