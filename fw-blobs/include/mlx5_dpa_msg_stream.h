/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * Device side of a message stream (the transport under flexio_dev_print / flexio_dev_msg).
 *
 * As in FlexIO, a stream is an RC QP whose send queue and CQ live in DPA memory, connected
 * (force-loopback) to a host QP that only receives. The host builds both ends, writes one
 * struct flexio_msg_stream_dev_ctx into DPA memory and calls the RPC
 * flexio_msg_stream_dev_init(ctx_daddr); from then on the device owns the send queue, its
 * CQ and the device-owned part of the context, and every message is one SEND:
 *
 *   - the text is formatted on the thread's stack (at most MLX5_DPA_MSG_MAX_LEN bytes);
 *   - under the stream's AMO spinlock, the program takes the next WQEBB (counter sq_pi),
 *     copies the text into buffer slot (sq_pi mod depth), writes ctrl (SEND, ds 2, CQE
 *     requested) + one data segment (slot address, buf_lkey), bumps the send doorbell record
 *     and rings SXD_DB(sq_pi + 1, qp.num) on the thread's current outbox;
 *   - before that, it reaps the stream's CQ: a requester CQE for WQE counter w frees every
 *     slot up to w. When all depth slots are in flight it polls the CQ up to
 *     FLEXIO_MSG_DEV_FULL_POLLS times and then drops the message (MLX5_DPA_MSG_ERR_FULL).
 *
 * The host sees one receive completion per message; byte_cnt is the text length (no NUL).
 * Its receive buffers must hold slot_size bytes. Slot size = buf_size >> log_sq_wqebb_cnt.
 * Every SEND asks for a CQE, so the stream's CQ needs at least depth (1 << log_sq_wqebb_cnt)
 * entries; nobody arms it (the device polls it when it posts). Replacing or removing a stream
 * while other threads print to it is the host's race to avoid.
 */
#ifndef MLX5_DPA_FLEXIO_DEV_MSG_STREAM_H
#define MLX5_DPA_FLEXIO_DEV_MSG_STREAM_H

#include <stddef.h>
#include <stdint.h>

#include "libflexio-dev/flexio_dev.h"
#include "mlx5_dpa_descriptor.h"

/** Attempts at a stream's spinlock before a message is dropped with ERR_BUSY. */
#define FLEXIO_MSG_DEV_LOCK_TRIES (1u << 20)
/** Polls of a full stream's CQ before a message is dropped with ERR_FULL. */
#define FLEXIO_MSG_DEV_FULL_POLLS (1u << 16)

/**
 * The device-side context of one stream, in DPA memory, 8-byte aligned, 208 bytes.
 *
 * Written by the host before flexio_msg_stream_dev_init (offsets 0..167):
 *
 * | offset | field | |
 * |---|---|---|
 * | 0   | `qp` (WqDescriptor, 88 B) | RC QP: kind 3, num = QPN, sq_ring_addr, log_sq_wqebb_cnt, sq_producer_index, dbr_addr (DPA addresses) |
 * | 88  | `cq` (CqDescriptor, 56 B) | the QP's send CQ: cqn, log_cqe_cnt, cqe_size, consumer_index, cq_ring_addr, cq_dbr_addr |
 * | 144 | `buf_daddr` u64 | message buffer in DPA memory (depth slots) |
 * | 152 | `buf_size` u32 | bytes; slot size = buf_size >> qp.log_sq_wqebb_cnt, at least 16 |
 * | 156 | `buf_lkey` u32 | key covering the buffer (the process's DPA memory mkey) |
 * | 160 | `stream_id` u32 | 0 .. FLEXIO_MSG_DEV_MAX_STREAMS_AMOUNT - 1 |
 * | 164 | `level` u32 | messages with 1 <= level <= this are posted |
 *
 * Owned by the device after init (the host zeroes them; init sets them):
 *
 * | offset | field | |
 * |---|---|---|
 * | 168 | `lock` u32 | AMO spinlock (0 free) |
 * | 172 | `sq_pi` u32 | next WQEBB counter (starts at qp.sq_producer_index) |
 * | 176 | `sq_done` u32 | WQEBB counter up to which SENDs completed |
 * | 180 | `cq_ci` u32 | CQ consumer counter (starts at cq.consumer_index) |
 * | 184 | `msgs_posted` u64 | messages posted |
 * | 192 | `msgs_dropped` u64 | messages dropped for ERR_BUSY / ERR_FULL / ERR_QUEUE |
 * | 200 | `last_err_synd` u32 | error word of the last error CQE (0 = none) |
 * | 204 | `dead` u32 | 1 after an error CQE: every later message fails with ERR_QUEUE |
 */
struct flexio_msg_stream_dev_ctx {
	struct mlx5_dpa_wq_descriptor qp;
	struct mlx5_dpa_cq_descriptor cq;
	uint64_t buf_daddr;
	uint32_t buf_size;
	uint32_t buf_lkey;
	uint32_t stream_id;
	uint32_t level;
	/* device-owned */
	struct spinlock_s lock;
	uint32_t sq_pi;
	uint32_t sq_done;
	uint32_t cq_ci;
	uint64_t msgs_posted;
	uint64_t msgs_dropped;
	uint32_t last_err_synd;
	uint32_t dead;
};

_Static_assert(sizeof(struct flexio_msg_stream_dev_ctx) == 208, "msg stream ctx is 208 bytes");
_Static_assert(offsetof(struct flexio_msg_stream_dev_ctx, cq) == 88, "cq @88");
_Static_assert(offsetof(struct flexio_msg_stream_dev_ctx, buf_daddr) == 144, "buf_daddr @144");
_Static_assert(offsetof(struct flexio_msg_stream_dev_ctx, buf_size) == 152, "buf_size @152");
_Static_assert(offsetof(struct flexio_msg_stream_dev_ctx, buf_lkey) == 156, "buf_lkey @156");
_Static_assert(offsetof(struct flexio_msg_stream_dev_ctx, stream_id) == 160, "stream_id @160");
_Static_assert(offsetof(struct flexio_msg_stream_dev_ctx, level) == 164, "level @164");
_Static_assert(offsetof(struct flexio_msg_stream_dev_ctx, lock) == 168, "lock @168");
_Static_assert(offsetof(struct flexio_msg_stream_dev_ctx, sq_pi) == 172, "sq_pi @172");
_Static_assert(offsetof(struct flexio_msg_stream_dev_ctx, sq_done) == 176, "sq_done @176");
_Static_assert(offsetof(struct flexio_msg_stream_dev_ctx, cq_ci) == 180, "cq_ci @180");
_Static_assert(offsetof(struct flexio_msg_stream_dev_ctx, msgs_posted) == 184, "posted @184");
_Static_assert(offsetof(struct flexio_msg_stream_dev_ctx, msgs_dropped) == 192, "dropped @192");
_Static_assert(offsetof(struct flexio_msg_stream_dev_ctx, last_err_synd) == 200, "synd @200");
_Static_assert(offsetof(struct flexio_msg_stream_dev_ctx, dead) == 204, "dead @204");

/** Results of the stream RPCs (returned as u64: negative values sign-extended). */
enum flexio_msg_stream_dev_init_status {
	FLEXIO_MSG_STREAM_DEV_OK = 0,
	/** stream_id >= FLEXIO_MSG_DEV_MAX_STREAMS_AMOUNT. */
	FLEXIO_MSG_STREAM_DEV_ERR_ID = -1,
	/** The QP is not an RC QP (kind 3), or has no send ring or doorbell record. */
	FLEXIO_MSG_STREAM_DEV_ERR_QP = -2,
	/** cqe_size not 64/128, or no ring / doorbell record. */
	FLEXIO_MSG_STREAM_DEV_ERR_CQ = -3,
	/** No buffer, or slot size below 16 bytes. */
	FLEXIO_MSG_STREAM_DEV_ERR_BUF = -4,
	/** ctx_daddr is 0 or not 8-byte aligned. */
	FLEXIO_MSG_STREAM_DEV_ERR_CTX = -5,
};

/**
 * RPC (entry): validates the context at `ctx_daddr`, initialises its device-owned part and
 * makes it stream ctx->stream_id (replacing an earlier one with that id). Returns
 * FLEXIO_MSG_STREAM_DEV_OK or a negative flexio_msg_stream_dev_init_status.
 */
uint64_t flexio_msg_stream_dev_init(uint64_t ctx_daddr);

/**
 * RPC (entry): forgets stream `stream_id` (later messages to it fail with ERR_NO_STREAM).
 * Waits for the stream's lock (bounded) so no post is in flight. Returns 0, or
 * FLEXIO_MSG_STREAM_DEV_ERR_ID.
 */
uint64_t flexio_msg_stream_dev_fini(uint64_t stream_id);

/**
 * Posts `len` bytes of `data` as they are (one SEND, cut to the stream's slot size) on stream
 * `stream_id` if `level` passes its level; the results of flexio_dev_msg. The tracer's
 * records go this way (flexio_dev_tracer.h).
 */
int mlx5_dpa_msg_post_raw(int stream_id, flexio_msg_dev_level level, const void *data,
			  uint32_t len);

#endif /* MLX5_DPA_FLEXIO_DEV_MSG_STREAM_H */
