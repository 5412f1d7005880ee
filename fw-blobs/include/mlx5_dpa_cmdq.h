/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * Command queue, device side (FlexIO `flexio_cmdq`): the host queues tasks, each a device
 * function and one u64 argument, and worker threads run them.
 *
 * The host allocates one context block and a task ring in DPA memory, writes the context
 * (magic, ring address, log depth, counters zero) and creates its workers: event handlers
 * with entry flexio_cmdq_dev_worker and argument = the context's DPA address.
 *
 * Submitting (host): write tasks into ring slots (counter & (depth - 1)), then, with a later
 * RDMA write that starts only after the slots' write completed, store the new `producer`
 * counter, then run the workers that are not running. The host adds task k (and later writes
 * its slot, k & (depth - 1)) only when k - (completed + errors) < depth.
 *
 * Running (device): an activation of flexio_cmdq_dev_worker loops:
 *
 *   - when claimed == producer, nothing is left: it returns;
 *   - under the claim lock (an AMO spinlock, amoswap.w), compares `claimed` with `producer`,
 *     reads slot (claimed & (depth - 1)) and advances `claimed` by one (amoadd.d): a
 *     compare-and-swap made atomic by the lock, so each task goes to exactly one worker and
 *     `claimed` never passes `producer`. (Not lr/sc: the mlx5-sim DPA does not end one
 *     hart's reservation on another hart's store, so two EUs could win the same sc.d.)
 *     Reading the slot before `claimed` moves is what makes slot reuse safe: only claimed
 *     tasks retire and claims go in order, so the host's rule above cannot let it rewrite
 *     the slot of task c (with task c + depth) before task c is claimed;
 *     a lock that stays busy for FLEXIO_CMDQ_DEV_LOCK_TRIES attempts ends the activation;
 *   - an entry that is 0, odd (RISC-V code is 2-byte aligned with RVC) or
 *     outside the program's text is not called: `errors` += 1 (AMO add) and its address goes
 *     to `last_bad_entry`; any other entry is called as `uint64_t f(uint64_t arg)` (the
 *     return value is ignored, so `void f(uint64_t)` works too) and then `completed` += 1
 *     (AMO add, release: the task's stores are visible before the count).
 *
 * A task that faults ends the worker's activation and fails the process (the host sees the
 * thread in ERROR and the process status); the task stays claimed and is never counted.
 * A worker that is running when new tasks are published may already have seen
 * claimed == producer and return without them; the host runs idle and finished workers
 * again while `claimed < producer` (mlx5-dpa's `dpa::cmdq` does).
 *
 * Context block, in DPA memory, 8-byte aligned, 64 bytes:
 *
 * | offset | field | writer | |
 * |---|---|---|---|
 * | 0  | `magic` u32 | host | FLEXIO_CMDQ_DEV_MAGIC ("CMDQ") |
 * | 4  | `log_depth` u32 | host | ring of 1 << log_depth slots, 0 .. FLEXIO_CMDQ_DEV_MAX_LOG_DEPTH |
 * | 8  | `ring_daddr` u64 | host | the ring (16-byte aligned, 16 bytes per slot) |
 * | 16 | `producer` u64 | host | tasks published (a counter; slot = counter & (depth - 1)) |
 * | 24 | `claimed` u64 | device | tasks claimed by workers (CAS; never passes `producer`) |
 * | 32 | `completed` u64 | device | tasks whose function returned (AMO add) |
 * | 40 | `errors` u64 | device | tasks refused for a bad entry address (AMO add) |
 * | 48 | `last_bad_entry` u64 | device | entry address of the last refused task |
 * | 56 | `activations` u32 | device | worker activations that found a valid context (AMO add; wraps) |
 * | 60 | `claim_lock` u32 | device | claim spinlock (0 free; the host writes 0 at creation) |
 *
 * Ring slot (struct flexio_cmdq_task), 16 bytes:
 *
 * | offset | field | |
 * |---|---|---|
 * | 0 | `entry` u64 | DPA address of the task function |
 * | 8 | `arg` u64 | its argument (a0) |
 *
 * Counters are u64 and never wrap in practice; every comparison is by difference, so they
 * would survive a wrap anyway.
 */
#ifndef MLX5_DPA_FLEXIO_DEV_CMDQ_H
#define MLX5_DPA_FLEXIO_DEV_CMDQ_H

#include <stddef.h>
#include <stdint.h>

#include "libflexio-dev/flexio_dev.h"

/** `magic` of a valid context: the bytes "CMDQ". */
#define FLEXIO_CMDQ_DEV_MAGIC 0x51444d43u
/** Attempts at the claim lock before an activation gives up (and ends). */
#define FLEXIO_CMDQ_DEV_LOCK_TRIES (1u << 20)
/** Largest log_depth a context may have (65536 slots, 1 MiB of ring). */
#define FLEXIO_CMDQ_DEV_MAX_LOG_DEPTH 16

/** One ring slot. */
struct flexio_cmdq_task {
	uint64_t entry;
	uint64_t arg;
};

_Static_assert(sizeof(struct flexio_cmdq_task) == 16, "cmdq task is 16 bytes");
_Static_assert(offsetof(struct flexio_cmdq_task, arg) == 8, "arg @8");

/** The context block (see the table above). */
struct flexio_cmdq_dev_ctx {
	uint32_t magic;
	uint32_t log_depth;
	uint64_t ring_daddr;
	uint64_t producer;
	/* device-owned */
	uint64_t claimed;
	uint64_t completed;
	uint64_t errors;
	uint64_t last_bad_entry;
	uint32_t activations;
	struct spinlock_s claim_lock;
};

_Static_assert(sizeof(struct flexio_cmdq_dev_ctx) == 64, "cmdq ctx is 64 bytes");
_Static_assert(offsetof(struct flexio_cmdq_dev_ctx, log_depth) == 4, "log_depth @4");
_Static_assert(offsetof(struct flexio_cmdq_dev_ctx, ring_daddr) == 8, "ring_daddr @8");
_Static_assert(offsetof(struct flexio_cmdq_dev_ctx, producer) == 16, "producer @16");
_Static_assert(offsetof(struct flexio_cmdq_dev_ctx, claimed) == 24, "claimed @24");
_Static_assert(offsetof(struct flexio_cmdq_dev_ctx, completed) == 32, "completed @32");
_Static_assert(offsetof(struct flexio_cmdq_dev_ctx, errors) == 40, "errors @40");
_Static_assert(offsetof(struct flexio_cmdq_dev_ctx, last_bad_entry) == 48, "last_bad_entry @48");
_Static_assert(offsetof(struct flexio_cmdq_dev_ctx, activations) == 56, "activations @56");
_Static_assert(offsetof(struct flexio_cmdq_dev_ctx, claim_lock) == 60, "claim_lock @60");

/** Negative results of flexio_cmdq_dev_worker (as u64, sign-extended); nothing was touched. */
enum flexio_cmdq_dev_status {
	/** ctx_daddr is 0 or not 8-byte aligned, or the magic is wrong. */
	FLEXIO_CMDQ_DEV_ERR_CTX = -1,
	/** log_depth > FLEXIO_CMDQ_DEV_MAX_LOG_DEPTH. */
	FLEXIO_CMDQ_DEV_ERR_DEPTH = -2,
	/** ring_daddr is 0 or not 16-byte aligned. */
	FLEXIO_CMDQ_DEV_ERR_RING = -3,
};

/**
 * Worker entry (event handler, a0 = the context's DPA address): runs tasks until none is
 * left, then returns the number of tasks it claimed in this activation (run or refused), or
 * a negative flexio_cmdq_dev_status for an unusable context.
 */
uint64_t flexio_cmdq_dev_worker(uint64_t ctx_daddr);

#endif /* MLX5_DPA_FLEXIO_DEV_CMDQ_H */
