/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * packet_processor: context block of its event handler and the payload rewrite rule
 * (host <-> device contract).
 */
#ifndef MLX5_DPA_PACKET_PROCESSOR_H
#define MLX5_DPA_PACKET_PROCESSOR_H

#include <stddef.h>
#include <stdint.h>

#include "mlx5_dpa_descriptor.h"

/*
 * The rewrite rule (pp_rewrite_frame), applied to every frame before it is sent back:
 *
 *  1. Frames shorter than 14 bytes are left alone (the handler drops frames under 18 bytes).
 *  2. Destination MAC (bytes 0..5) and source MAC (bytes 6..11) are swapped.
 *  3. If the frame is IPv4 over Ethernet II without VLAN (bytes 12..13 = 08 00), with a
 *     20-byte IP header (byte 14 = 0x45) carrying UDP (byte 23 = 17), and is at least 42 bytes
 *     long, then every byte from offset 42 (the UDP payload) to the end of the frame that is
 *     an ASCII digit '0'..'9' becomes 'a'..'j' ('0' -> 'a', ..., '9' -> 'j'); other bytes are
 *     unchanged; and the UDP checksum (bytes 40..41) is set to 0 ("no checksum" in IPv4),
 *     since the payload changed. IP header and lengths are not touched.
 *
 * Example: payload "=====0123456789" comes back as "=====abcdefghij".
 * Return value: PP_REWRITE_MACS_SWAPPED | PP_REWRITE_PAYLOAD as applied.
 */
#define PP_UDP_PAYLOAD_OFFSET 42
#define PP_REWRITE_MACS_SWAPPED 0x1
#define PP_REWRITE_PAYLOAD 0x2

/** Bytes of each sent frame inlined in the Ethernet segment (L2 header + VLAN tag room). */
#define PP_INLINE_HDR_SIZE 18

/** ctx->flags: print "pp: packet <n> len <len>" on message stream 0 for every packet. */
#define PP_FLAG_PRINT 0x1

/** ctx->state once the device set up its counters; anything else means "not yet". */
#define PP_STATE_READY 0x50505244u /* "DRPP" */
/** ctx->state when the descriptors were rejected (the handler then finishes the thread). */
#define PP_STATE_BAD 0x50504241u   /* "ABPP" */

/**
 * Context of the flexio_pp_dev event handler (its thread argument), in DPA memory, 8-byte
 * aligned, 392 bytes. The host fills offsets 0..311 and zeroes the rest; the device owns
 * 312.. from the first activation (or pp_init) on and updates it in place.
 *
 * Host-written:
 *
 * | offset | field | |
 * |---|---|---|
 * | 0   | `rq_cq` CqDescriptor (56 B) | CQ of the RQ, ring + record in DPA memory; the handler is bound to it |
 * | 56  | `rq` WqDescriptor (88 B) | kind 2 (RQ): rq_ring_addr, log_rq_wqe_cnt, rq_wqe_stride (>= 16), rq_producer_index (WQEs the host posted), dbr_addr; each receive WQE = one data segment naming a buffer in DPA memory |
 * | 144 | `sq_cq` CqDescriptor (56 B) | CQ of the SQ (polled, never armed): >= SQ depth entries |
 * | 200 | `sq` WqDescriptor (88 B) | kind 1 (ETH_SQ): num = SQN, sq_ring_addr, log_sq_wqebb_cnt, sq_producer_index, dbr_addr |
 * | 288 | `tx_buf_daddr` u64 | send buffers in DPA memory: SQ depth buffers of 1 << log_tx_buf_size bytes |
 * | 296 | `tx_buf_lkey` u32 | key of the send buffers |
 * | 300 | `log_tx_buf_size` u32 | 6..16; frames longer than a buffer are dropped |
 * | 304 | `flags` u32 | PP_FLAG_* |
 * | 308 | reserved u32 | 0 |
 *
 * Device-owned:
 *
 * | offset | field | |
 * |---|---|---|
 * | 312 | `state` u32 | PP_STATE_READY once set up |
 * | 316 | `rq_cq_ci` u32 | RQ CQ consumer counter |
 * | 320 | `rq_pi` u32 | receive WQEs handed to the NIC (record value, 16 bits significant) |
 * | 324 | `sq_pi` u32 | send WQEBB counter |
 * | 328 | `sq_cq_ci` u32 | SQ CQ consumer counter |
 * | 332 | `sq_done` u32 | send WQEBB counter up to which sends completed |
 * | 336 | `rx_packets` u64 | receive CQEs taken (good or not) |
 * | 344 | `tx_packets` u64 | frames posted on the SQ |
 * | 352 | `rx_dropped` u64 | error CQEs, runts (< 18 B), frames longer than a send buffer |
 * | 360 | `tx_dropped` u64 | frames dropped because the SQ stayed full or failed |
 * | 368 | `activations` u64 | handler activations |
 * | 376 | `last_err_synd` u32 | error word of the last error CQE on either CQ |
 * | 380 | `sq_dead` u32 | 1 after an SQ error CQE (later frames are dropped) |
 * | 384 | `rewritten` u64 | frames whose UDP payload was rewritten |
 */
struct pp_dev_ctx {
	struct mlx5_dpa_cq_descriptor rq_cq;
	struct mlx5_dpa_wq_descriptor rq;
	struct mlx5_dpa_cq_descriptor sq_cq;
	struct mlx5_dpa_wq_descriptor sq;
	uint64_t tx_buf_daddr;
	uint32_t tx_buf_lkey;
	uint32_t log_tx_buf_size;
	uint32_t flags;
	uint32_t reserved;
	/* device-owned */
	uint32_t state;
	uint32_t rq_cq_ci;
	uint32_t rq_pi;
	uint32_t sq_pi;
	uint32_t sq_cq_ci;
	uint32_t sq_done;
	uint64_t rx_packets;
	uint64_t tx_packets;
	uint64_t rx_dropped;
	uint64_t tx_dropped;
	uint64_t activations;
	uint32_t last_err_synd;
	uint32_t sq_dead;
	uint64_t rewritten;
};

_Static_assert(sizeof(struct pp_dev_ctx) == 392, "pp_dev_ctx is 392 bytes");
_Static_assert(offsetof(struct pp_dev_ctx, rq) == 56, "rq @56");
_Static_assert(offsetof(struct pp_dev_ctx, sq_cq) == 144, "sq_cq @144");
_Static_assert(offsetof(struct pp_dev_ctx, sq) == 200, "sq @200");
_Static_assert(offsetof(struct pp_dev_ctx, tx_buf_daddr) == 288, "tx_buf_daddr @288");
_Static_assert(offsetof(struct pp_dev_ctx, tx_buf_lkey) == 296, "tx_buf_lkey @296");
_Static_assert(offsetof(struct pp_dev_ctx, log_tx_buf_size) == 300, "log_tx_buf_size @300");
_Static_assert(offsetof(struct pp_dev_ctx, flags) == 304, "flags @304");
_Static_assert(offsetof(struct pp_dev_ctx, state) == 312, "state @312");
_Static_assert(offsetof(struct pp_dev_ctx, rq_cq_ci) == 316, "rq_cq_ci @316");
_Static_assert(offsetof(struct pp_dev_ctx, rq_pi) == 320, "rq_pi @320");
_Static_assert(offsetof(struct pp_dev_ctx, sq_pi) == 324, "sq_pi @324");
_Static_assert(offsetof(struct pp_dev_ctx, sq_cq_ci) == 328, "sq_cq_ci @328");
_Static_assert(offsetof(struct pp_dev_ctx, sq_done) == 332, "sq_done @332");
_Static_assert(offsetof(struct pp_dev_ctx, rx_packets) == 336, "rx_packets @336");
_Static_assert(offsetof(struct pp_dev_ctx, tx_packets) == 344, "tx_packets @344");
_Static_assert(offsetof(struct pp_dev_ctx, rx_dropped) == 352, "rx_dropped @352");
_Static_assert(offsetof(struct pp_dev_ctx, tx_dropped) == 360, "tx_dropped @360");
_Static_assert(offsetof(struct pp_dev_ctx, activations) == 368, "activations @368");
_Static_assert(offsetof(struct pp_dev_ctx, last_err_synd) == 376, "last_err_synd @376");
_Static_assert(offsetof(struct pp_dev_ctx, sq_dead) == 380, "sq_dead @380");
_Static_assert(offsetof(struct pp_dev_ctx, rewritten) == 384, "rewritten @384");

/** pp_init results (as u64; negative values sign-extended). */
#define PP_OK 0
#define PP_ERR_CTX (-1)     /**< ctx_daddr 0 or not 8-byte aligned */
#define PP_ERR_RQ_CQ (-2)   /**< rq_cq: cqe_size not 64/128, no ring/record, log > 24 */
#define PP_ERR_RQ (-3)      /**< rq: kind not 2, no ring/record, stride < 16, log > 15 */
#define PP_ERR_SQ_CQ (-4)   /**< sq_cq: as rq_cq, or fewer entries than the SQ depth */
#define PP_ERR_SQ (-5)      /**< sq: kind not 1, no ring/record, log > 15 */
#define PP_ERR_TX_BUF (-6)  /**< no send buffers, or log_tx_buf_size outside 6..16 */

#endif /* MLX5_DPA_PACKET_PROCESSOR_H */
