/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * Command queue worker (FlexIO `flexio_cmdq`, device side). The context block and the
 * host <-> device protocol are in mlx5_dpa_cmdq.h.
 */
#include <stdint.h>

#include <libflexio-dev/flexio_dev.h>
#include <mlx5_dpa_cmdq.h>

/* The program's code (link/dpa.ld): a task entry must point inside it. */
extern const char __dpa_text_start[];
extern const char __dpa_text_end[];

typedef uint64_t (*cmdq_task_fn)(uint64_t arg);

#define CMDQ_ERR(e) ((uint64_t)(int64_t)(e))

/* An entry the worker may call: nonzero, 2-byte aligned (IALIGN with RVC), inside .text. */
static int entry_ok(uint64_t entry)
{
	return entry != 0 && (entry & 1) == 0 && entry >= (uintptr_t)__dpa_text_start &&
	       entry < (uintptr_t)__dpa_text_end;
}

/*
 * Claims the next task and copies its slot to *task; returns 0 when claimed == producer, or
 * when the claim lock stayed busy for FLEXIO_CMDQ_DEV_LOCK_TRIES attempts (the activation
 * ends; the host runs the worker again while tasks are unclaimed).
 *
 * The claim is a compare-and-swap of `claimed` against `producer` made atomic by the claim
 * lock (amoswap.w), not by lr/sc: the mlx5-sim DPA keeps LR reservations per hart and a
 * store by another hart does not end them, so two EUs could both win an sc.d on the same
 * value there. Inside the lock: load claimed and producer, read the slot, amoadd claimed.
 * The slot is read before `claimed` moves: the host rewrites slot (c & mask) only for task
 * c + depth, which it may add only once c + 1 tasks retired, and only claimed tasks retire.
 */
static int claim(struct flexio_cmdq_dev_ctx *q, const volatile struct flexio_cmdq_task *ring,
		 uint64_t mask, struct flexio_cmdq_task *task)
{
	uint64_t c;
	uint64_t p;
	int got = 0;

	if (mlx5_dpa_spin_lock_bounded(&q->claim_lock, FLEXIO_CMDQ_DEV_LOCK_TRIES))
		return 0;
	c = __atomic_load_n(&q->claimed, __ATOMIC_RELAXED);
	/* ORDERING: acquire: the slots the host wrote before `producer` are visible. */
	p = __atomic_load_n(&q->producer, __ATOMIC_ACQUIRE);
	if ((int64_t)(p - c) > 0) {
		task->entry = ring[c & mask].entry;
		task->arg = ring[c & mask].arg;
		(void)__atomic_fetch_add(&q->claimed, 1, __ATOMIC_RELEASE);
		got = 1;
	}
	/* ORDERING: release by an AMO (amoswap), so the lock's next owner sees `claimed`. */
	(void)__atomic_exchange_n(&q->claim_lock.locked, 0, __ATOMIC_RELEASE);
	return got;
}

__dpa_global__ uint64_t flexio_cmdq_dev_worker(uint64_t ctx_daddr)
{
	struct flexio_cmdq_dev_ctx *q = (struct flexio_cmdq_dev_ctx *)(uintptr_t)ctx_daddr;
	const volatile struct flexio_cmdq_task *ring;
	uint64_t mask;
	struct flexio_cmdq_task t;
	uint64_t n = 0;

	if (ctx_daddr == 0 || (ctx_daddr & 7) ||
	    __atomic_load_n(&q->magic, __ATOMIC_ACQUIRE) != FLEXIO_CMDQ_DEV_MAGIC)
		return CMDQ_ERR(FLEXIO_CMDQ_DEV_ERR_CTX);
	if (q->log_depth > FLEXIO_CMDQ_DEV_MAX_LOG_DEPTH)
		return CMDQ_ERR(FLEXIO_CMDQ_DEV_ERR_DEPTH);
	if (q->ring_daddr == 0 || (q->ring_daddr & 15))
		return CMDQ_ERR(FLEXIO_CMDQ_DEV_ERR_RING);
	ring = (const volatile struct flexio_cmdq_task *)(uintptr_t)q->ring_daddr;
	mask = (1ull << q->log_depth) - 1;
	__atomic_fetch_add(&q->activations, 1u, __ATOMIC_RELAXED);

	while (claim(q, ring, mask, &t)) {
		n++;
		if (!entry_ok(t.entry)) {
			__atomic_store_n(&q->last_bad_entry, t.entry, __ATOMIC_RELAXED);
			__atomic_fetch_add(&q->errors, 1, __ATOMIC_RELEASE);
			continue;
		}
		(void)((cmdq_task_fn)(uintptr_t)t.entry)(t.arg);
		/* ORDERING: release: the task's stores are visible before it counts as done. */
		__atomic_fetch_add(&q->completed, 1, __ATOMIC_RELEASE);
	}
	return n;
}
