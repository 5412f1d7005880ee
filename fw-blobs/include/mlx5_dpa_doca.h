/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * The contract between the DOCA DPA runtime (runtime/doca_dpa.c) and its host side
 * (mlx5_dpa::doca): this project's own layouts, not DOCA's (DOCA's are not public). The host
 * writes both structures into DPA memory; the offsets are fixed and checked by the Rust side.
 */
#ifndef MLX5_DPA_DOCA_H_
#define MLX5_DPA_DOCA_H_

#include <stdint.h>

#include <mlx5_dpa_descriptor.h>

/** MLX5_DPA_DOCA_MAGIC in doca_dpa_rt.magic: the host has set the context up. */
#define MLX5_DPA_DOCA_MAGIC 0x444f4341u /* "DOCA" */

/**
 * The context's global block, the runtime's `__doca_dpa_rt` (found by symbol and written by
 * the host at doca_dpa_start): the window and key over the host memory that holds the
 * context's sync-event counters and launch-done words, and the device log level.
 */
struct doca_dpa_rt {
	uint32_t magic;     /* 0x00 */
	uint32_t window_id; /* 0x04 */
	uint32_t mkey;      /* 0x08 */
	uint32_t log_level; /* 0x0c: doca_dpa_dev_log_level_t */
	uint32_t vhca;      /* 0x10: the function the process is on (its outbox's own GVMI) */
	uint32_t reserved;  /* 0x14 */
};

/** A context as DPA code names it (doca_dpa_get_dpa_handle, doca_dpa_dev_device_set): the
 * function its resources are on. */
struct doca_dpa_device {
	uint32_t magic; /* 0x00: MLX5_DPA_DOCA_DEVICE_MAGIC */
	uint32_t vhca;  /* 0x04 */
};

#define MLX5_DPA_DOCA_DEVICE_MAGIC 0x44504144u /* "DAPD" */

/** The message stream that carries doca_dpa_dev_trace records (the log is stream 0). */
#define MLX5_DPA_DOCA_TRACE_STREAM 1

/** comp_op of a launch. */
enum {
	MLX5_DPA_DOCA_COMP_NONE = 0,
	MLX5_DPA_DOCA_COMP_SET = 1,
	MLX5_DPA_DOCA_COMP_ADD = 2,
};

/**
 * One kernel launch, in DPA memory; each of its threads runs __doca_dpa_kernel_entry with the
 * launch's address. Copies of by-reference arguments follow it.
 */
struct doca_dpa_launch {
	uint64_t func;          /* 0x00: the kernel's address */
	uint64_t regs[8];       /* 0x08: a0..a7 */
	uint32_t num_threads;   /* 0x48 */
	uint32_t next_rank;     /* 0x4c: taken with an AMO by each thread as it starts */
	uint32_t finished;      /* 0x50: counted with an AMO by each thread as it ends */
	uint32_t comp_op;       /* 0x54: MLX5_DPA_DOCA_COMP_* */
	uint64_t comp_event;    /* 0x58: the completion event's handle */
	uint64_t comp_count;    /* 0x60 */
	uint64_t done_haddr;    /* 0x68: host address the last thread writes done_value to */
	uint64_t done_value;    /* 0x70 */
};

/**
 * A DOCA DPA thread, in DPA memory; the FlexIO thread runs __doca_dpa_thread_entry with its
 * address.
 */
struct doca_dpa_thread_block {
	uint64_t func;   /* 0x00: the thread's kernel */
	uint64_t arg;    /* 0x08: its argument */
	uint64_t notify; /* 0x10: DPA address of the attached notification block (0: none) */
	uint64_t arm;    /* 0x18: nonzero: this run only arms the thread's CQs (doca_dpa_thread_run) */
	uint64_t comp;   /* 0x20: DPA address of the attached completion context's block (0: none) */
	uint32_t rank;        /* 0x28: rank in its thread group (doca_dpa_thread_group) */
	uint32_t num_threads; /* 0x2c: threads of its group; 0: not in a group */
};

/**
 * A notification completion, in DPA memory; its address is the device handle. Notifiers post a
 * NOP asking for a CQE to `sq`; the CQE lands in `cq`, which is bound to the thread and armed,
 * and so activates it; the thread consumes one CQE per run.
 */
struct doca_dpa_notify_block {
	struct mlx5_dpa_cq_descriptor cq; /* 0x00 (56 bytes) */
	uint32_t cq_ci;                   /* 0x38: CQEs the thread has consumed */
	uint32_t lock;                    /* 0x3c: AMO lock of the notifiers */
	struct mlx5_dpa_wq_descriptor sq; /* 0x40 (88 bytes) */
	uint32_t sq_pi;                   /* 0x98: NOPs posted */
	uint32_t reserved;                /* 0x9c */
};

/** A completion context, in DPA memory; its address is the device handle. */
struct doca_dpa_completion_block {
	struct mlx5_dpa_cq_descriptor cq; /* 0x00 (56 bytes) */
	uint32_t read;                    /* 0x38: elements read (doca_dpa_dev_get_completion) */
	uint32_t acked;                   /* 0x3c: elements acknowledged (the CQ's consumer index) */
	uint32_t vhca;                    /* 0x40: the function the CQ is on */
	uint32_t reserved;                /* 0x44 */
};

/** Async ops, in DPA memory; the address is the device handle. */
struct doca_dpa_async_ops_block {
	struct mlx5_dpa_wq_descriptor qp; /* 0x00 (88 bytes): an RC QP connected in loopback */
	uint32_t pi;                      /* 0x58: WQEBBs posted */
	uint32_t lock;                    /* 0x5c */
	uint32_t vhca;                    /* 0x60: the function the QP is on */
	uint32_t reserved;                /* 0x64 */
};

/**
 * A hash table, in DPA memory; its address is the device handle. Open addressing with linear
 * probing over `capacity` (a power of two) entries, under an AMO lock.
 */
struct doca_dpa_hash_table_block {
	uint32_t capacity; /* 0x00 */
	uint32_t lock;     /* 0x04 */
	uint32_t used;     /* 0x08: entries in use or removed (tombstones) */
	uint32_t reserved; /* 0x0c */
	/* 0x10: struct doca_dpa_hash_entry entries[capacity] */
};

/** A hash table entry. */
struct doca_dpa_hash_entry {
	uint32_t key;
	uint32_t state; /* MLX5_DPA_DOCA_HASH_* */
	uint64_t value;
};

enum {
	MLX5_DPA_DOCA_HASH_EMPTY = 0,
	MLX5_DPA_DOCA_HASH_USED = 1,
	MLX5_DPA_DOCA_HASH_REMOVED = 2,
};

/** One connection of a DPA RDMA: an RC QP (send queue only; it receives from the RDMA's
 * shared receive queue). */
struct doca_dpa_rdma_conn {
	struct mlx5_dpa_wq_descriptor qp; /* 0x00 (88 bytes) */
	uint32_t sq_pi;                   /* 0x58: WQEBBs posted */
	uint32_t lock;                    /* 0x5c */
	uint64_t scratch;                 /* 0x60: a ring of 8-byte words in DPA memory, one per send
					   * slot: fetched atomic values, signalled counts */
	uint32_t scratch_lkey;            /* 0x68 */
	uint32_t scratch_mask;            /* 0x6c: ring words - 1 */
	uint32_t connected;               /* 0x70: set by the host once the QP is connected */
	uint32_t vhca;                    /* 0x74: the function the QP is on */
	uint32_t reserved[2];
};

/** A receive queue (an RMP) in DPA memory: a DPA RDMA's own, or a shared one several RDMAs
 * receive from; a shared one's address is its device handle (doca_dpa_dev_rdma_srq_t). */
struct doca_dpa_rdma_srq {
	uint64_t ring;     /* 0x00: cyclic ring of receive WQEs (one data segment each) */
	uint64_t dbr;      /* 0x08: doorbell record (receive counter at +0, big-endian) */
	uint32_t log_size; /* 0x10 */
	uint32_t stride;   /* 0x14: bytes per WQE */
	uint32_t pi;       /* 0x18: receives posted */
	uint32_t acked;    /* 0x1c: receives acknowledged */
	uint32_t lock;     /* 0x20 */
	uint32_t srqn;     /* 0x24 */
	uint64_t reserved[3];
};

/** A DPA RDMA, in DPA memory; its address is the device handle. */
struct doca_dpa_rdma_block {
	uint64_t comp;      /* 0x00: the attached completion context's handle (DOCA 2.6's
			     * doca_dpa_dev_rdma_synchronize polls it) */
	uint64_t srq;       /* 0x08: its receive queue (struct doca_dpa_rdma_srq) */
	uint32_t num_conns; /* 0x10 */
	uint32_t reserved0;
	uint64_t reserved1;
	struct doca_dpa_rdma_conn conns[]; /* 0x20 */
};

_Static_assert(sizeof(struct doca_dpa_rdma_conn) == 0x80, "RDMA_CONN");
_Static_assert(__builtin_offsetof(struct doca_dpa_rdma_conn, scratch) == 0x60, "conn scratch @0x60");
_Static_assert(__builtin_offsetof(struct doca_dpa_rdma_conn, connected) == 0x70, "conn connected @0x70");
_Static_assert(sizeof(struct doca_dpa_rdma_srq) == 0x40, "SRQ_BLOCK");
_Static_assert(__builtin_offsetof(struct doca_dpa_rdma_srq, srqn) == 0x24, "srqn @0x24");
_Static_assert(sizeof(struct doca_dpa_rdma_block) == 0x20, "RDMA_HEAD");

/** A peer's exported sync event (doca_dpa_dev_sync_event_remote_net_t points at this). */
struct doca_dpa_remote_event {
	uint64_t addr; /* 0x00: the counter's address at the peer */
	uint32_t rkey; /* 0x08: the peer's key */
	uint32_t reserved;
};

/** One buffer of a buffer array (doca_dpa_dev_buf_t points at this). */
struct doca_dpa_buf {
	uint64_t addr;  /* 0x00 */
	uint64_t len;   /* 0x08 */
	uint64_t mmap;  /* 0x10: the map's key; bit 32 set: host memory (else DPA memory) */
	uint64_t reserved;
};

/** `doca_dpa_buf.mmap`: the key is over host memory. */
#define MLX5_DPA_DOCA_MMAP_HOST (1ull << 32)

/** One entry of the runtime's `__doca_dpa_udata` table: the user data of async ops' QP. */
struct doca_dpa_udata {
	uint32_t qpn;
	uint32_t user_data;
};

/** Entries of `__doca_dpa_udata`. */
#define MLX5_DPA_DOCA_UDATA_SLOTS 64

#endif /* MLX5_DPA_DOCA_H_ */
