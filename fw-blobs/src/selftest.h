/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * selftest: argument blocks of its entries (host/model tests <-> device contract).
 */
#ifndef MLX5_DPA_SELFTEST_H
#define MLX5_DPA_SELFTEST_H

#include <stddef.h>
#include <stdint.h>

/** st_store writes this 64-bit value. */
#define ST_STORE_VALUE 0x0123456789abcdefull
/** st_gp_global: the initialised global it checks (in .data). */
#define ST_DATA_MAGIC 0x600dda7a5eed0001ull
/** st_gp_global returns this when .data / .rodata did not hold their link-time values. */
#define ST_GLOBAL_BAD ((uint64_t)-1)
/** Returned by st_outbox_db, st_outbox_gvmi, st_window_rw and st_tls when the OS refused. */
#define ST_FAILED (~(uint64_t)0)
/** st_outbox_db: outbox_id meaning "keep the thread's current outbox". */
#define ST_OUTBOX_KEEP 0xffffffffu

/**
 * st_outbox_db argument block, 16 bytes, 8-byte aligned.
 *
 * | offset | field | |
 * |---|---|---|
 * | 0 | `outbox_id` u32 | outbox to select first (OUTBOX_SET_CFG), or ST_OUTBOX_KEEP |
 * | 4 | `reg` u32 | byte offset in the outbox page: 0x100 CQ_DB, 0x140 EQ_DB_REARM, 0x180 EQ_DB_NO_REARM, 0x1c0 SXD_DB (not checked: bad offsets are for fault tests) |
 * | 8 | `value` u64 | the 64-bit value stored |
 */
struct st_outbox_args {
	uint32_t outbox_id;
	uint32_t reg;
	uint64_t value;
};

_Static_assert(sizeof(struct st_outbox_args) == 16, "st_outbox_args is 16 bytes");
_Static_assert(offsetof(struct st_outbox_args, reg) == 4, "reg @4");
_Static_assert(offsetof(struct st_outbox_args, value) == 8, "value @8");

/**
 * st_window_rw argument block, 48 bytes, 8-byte aligned.
 *
 * | offset | field | |
 * |---|---|---|
 * | 0  | `window_id` u32 | window to select (WINDOW_SET_CFG) |
 * | 4  | `mkey` u32 | key stored to window_config_base |
 * | 8  | `haddr` u64 | host address (8-byte aligned) |
 * | 16 | `write_value` u64 | stored at haddr through the window |
 * | 24 | `old_value` u64 | out: u64 read at haddr before the store |
 * | 32 | `new_value` u64 | out: u64 read back after the store (also the return value) |
 * | 40 | `daddr` u64 | out: window_base + haddr |
 */
struct st_window_args {
	uint32_t window_id;
	uint32_t mkey;
	uint64_t haddr;
	uint64_t write_value;
	uint64_t old_value;
	uint64_t new_value;
	uint64_t daddr;
};

_Static_assert(sizeof(struct st_window_args) == 48, "st_window_args is 48 bytes");
_Static_assert(offsetof(struct st_window_args, haddr) == 8, "haddr @8");
_Static_assert(offsetof(struct st_window_args, write_value) == 16, "write_value @16");
_Static_assert(offsetof(struct st_window_args, old_value) == 24, "old_value @24");
_Static_assert(offsetof(struct st_window_args, new_value) == 32, "new_value @32");
_Static_assert(offsetof(struct st_window_args, daddr) == 40, "daddr @40");

/**
 * Argument block of the coherency checks (st_wqe_nop, st_window_marks, st_window_poll).
 *
 * | offset | field |
 * |---|---|
 * | 0 | `window_id` u32 (st_wqe_nop: the SQ number) |
 * | 4 | `mkey` u32 (st_wqe_nop: the producer counter the WQE gets) |
 * | 8 | `haddr` u64: host buffer through the window (st_wqe_nop: the SQ ring's DPA address) |
 * | 16 | `mode` u64: bit 0 = do the write-back / read-invalidate under test |
 * | 24 | `stop` u64: the host sets it (by DMA) to end a wait |
 */
struct st_coh_args {
	uint32_t window_id;
	uint32_t mkey;
	uint64_t haddr;
	uint64_t mode;
	uint64_t stop;
};

_Static_assert(sizeof(struct st_coh_args) == 32, "st_coh_args is 32 bytes");

/**
 * st_nic_counters: op 0 configures `n` ids from `ids` into `values` (both in this block, heap
 * memory), op 1 samples, op 2 configures with the ids copied to a stack array (refused),
 * op 3 returns flexio_dev_get_pcc_table_base(n).
 */
struct st_nic_args {
	uint32_t op;
	uint32_t n;
	uint32_t ids[16];
	uint32_t values[16];
};

#endif /* MLX5_DPA_SELFTEST_H */
