/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * packet_processor: the FlexIO packet-processor sample's behaviour, for the mlx5-dpa model.
 * Every frame received on the RQ is copied to a send buffer, rewritten (packet_processor.h:
 * MACs swapped, UDP payload digits mapped to letters) and sent back on the Ethernet SQ.
 *
 * Entries (context block: packet_processor.h):
 *   flexio_pp_dev(ctx_daddr)   event handler bound to the RQ's CQ. Per activation: takes up to
 *                              one CQ ring's worth of receive CQEs; for each good one copies,
 *                              rewrites and posts the frame (ctrl + eth with 18 inlined header
 *                              bytes + one data segment for the rest, CQE requested), rings
 *                              SXD_DB, hands the receive WQE back (RQ record + 1) and advances
 *                              the CQ record; then arms the RQ CQ (CQ_DB) and reschedules.
 *   pp_init(ctx_daddr)         optional RPC: validates the context and sets up the device
 *                              state now (the handler does it on its first activation
 *                              otherwise). Returns PP_OK or a PP_ERR_* (sign-extended).
 *   pp_rewrite(frame, len)     pure: applies the rewrite rule to len bytes at DPA address
 *                              frame; returns PP_REWRITE_* flags (an RPC of two arguments).
 *   pp_selfcheck()             pure: runs the rule on built-in frames and compares with golden
 *                              bytes; 0 = pass, else the number of the failing case.
 */
#include <stdint.h>

#include <libflexio-dev/flexio_dev.h>
#include <libflexio-libc/string.h>
#include <libflexio-dev/flexio_dev_queue_access.h>
#include "packet_processor.h"

void flexio_pp_dev(uint64_t thread_arg);
uint64_t pp_init(uint64_t ctx_daddr);
uint64_t pp_rewrite(uint64_t frame_daddr, uint64_t len);
uint64_t pp_selfcheck(void);

/* The rewrite rule (packet_processor.h). Pure. */
static uint32_t pp_rewrite_frame(uint8_t *f, uint32_t len)
{
	uint32_t applied = 0;

	if (len < 14)
		return 0;
	for (int i = 0; i < 6; i++) {
		uint8_t t = f[i];

		f[i] = f[6 + i];
		f[6 + i] = t;
	}
	applied |= PP_REWRITE_MACS_SWAPPED;
	if (len >= PP_UDP_PAYLOAD_OFFSET && f[12] == 0x08 && f[13] == 0x00 && f[14] == 0x45 &&
	    f[23] == 17) {
		for (uint32_t i = PP_UDP_PAYLOAD_OFFSET; i < len; i++) {
			if (f[i] >= '0' && f[i] <= '9')
				f[i] = (uint8_t)(f[i] - '0' + 'a');
		}
		f[40] = 0;
		f[41] = 0;
		applied |= PP_REWRITE_PAYLOAD;
	}
	return applied;
}

static int cq_desc_ok(const struct mlx5_dpa_cq_descriptor *cq)
{
	return (cq->cqe_size == 64 || cq->cqe_size == 128) && cq->cq_ring_addr && cq->cq_dbr_addr &&
	       cq->log_cqe_cnt <= 24;
}

/* Validates the host part and sets up the device part; returns PP_OK or PP_ERR_*. */
static int pp_setup(struct pp_dev_ctx *c)
{
	if (!cq_desc_ok(&c->rq_cq))
		return PP_ERR_RQ_CQ;
	if (c->rq.kind != MLX5_DPA_WQ_KIND_RQ || !c->rq.rq_ring_addr || !c->rq.dbr_addr ||
	    c->rq.rq_wqe_stride < 16 || c->rq.log_rq_wqe_cnt > 15)
		return PP_ERR_RQ;
	if (c->sq.kind != MLX5_DPA_WQ_KIND_ETH_SQ || !c->sq.sq_ring_addr || !c->sq.dbr_addr ||
	    c->sq.log_sq_wqebb_cnt > 15)
		return PP_ERR_SQ;
	if (!cq_desc_ok(&c->sq_cq) || c->sq_cq.log_cqe_cnt < c->sq.log_sq_wqebb_cnt)
		return PP_ERR_SQ_CQ;
	if (!c->tx_buf_daddr || c->log_tx_buf_size < 6 || c->log_tx_buf_size > 16)
		return PP_ERR_TX_BUF;

	c->rq_cq_ci = c->rq_cq.consumer_index & MLX5_DPA_MASK24;
	c->rq_pi = c->rq.rq_producer_index & 0xffff;
	c->sq_pi = c->sq.sq_producer_index & 0xffff;
	c->sq_done = c->sq_pi;
	c->sq_cq_ci = c->sq_cq.consumer_index & MLX5_DPA_MASK24;
	c->last_err_synd = 0;
	c->sq_dead = 0;
	__atomic_store_n(&c->state, PP_STATE_READY, __ATOMIC_RELEASE);
	return PP_OK;
}

__dpa_rpc__ uint64_t pp_init(uint64_t ctx_daddr)
{
	int r;

	if (ctx_daddr == 0 || (ctx_daddr & 7))
		return (uint64_t)(int64_t)PP_ERR_CTX;
	r = pp_setup((struct pp_dev_ctx *)(uintptr_t)ctx_daddr);
	return (uint64_t)(int64_t)r;
}

/* Consumes the SQ's new CQEs (at most one ring's worth). */
static void pp_reap_sq(struct pp_dev_ctx *c)
{
	uint32_t budget = 1u << c->sq_cq.log_cqe_cnt;
	uint32_t n = 0;

	while (n < budget) {
		struct flexio_dev_cqe64 *cqe = mlx5_dpa_cq_cqe(&c->sq_cq, c->sq_cq_ci);
		uint8_t op;

		if (!mlx5_dpa_cqe_ready(&c->sq_cq, cqe, c->sq_cq_ci))
			break;
		op = flexio_dev_cqe_get_opcode(cqe);
		/* Every frame is one WQEBB: the counter frees all WQEs up to it. */
		c->sq_done = (flexio_dev_cqe_get_wqe_counter(cqe) + 1u) & 0xffff;
		if (op != MLX5_DPA_CQE_REQ) {
			c->last_err_synd = flexio_dev_cqe_get_err_synd(cqe);
			c->sq_dead = 1;
		}
		c->sq_cq_ci++;
		n++;
	}
	if (n)
		flexio_dev_dbr_cq_set_ci((uint32_t *)(uintptr_t)c->sq_cq.cq_dbr_addr, c->sq_cq_ci);
}

/* Copies, rewrites and posts one received frame; returns 0 when sent, -1 when dropped. */
static int pp_forward(struct flexio_dev_thread_ctx *dtctx, struct pp_dev_ctx *c, const uint8_t *rx,
		      uint32_t len)
{
	uint32_t depth = 1u << c->sq.log_sq_wqebb_cnt;
	union flexio_dev_sqe_seg *wqe;
	uint8_t *tx;
	uint32_t idx;

	pp_reap_sq(c);
	if (c->sq_dead || ((c->sq_pi - c->sq_done) & 0xffff) >= depth) {
		c->tx_dropped++;
		return -1;
	}
	idx = c->sq_pi;
	tx = (uint8_t *)(uintptr_t)(c->tx_buf_daddr + ((uint64_t)(idx & (depth - 1)) << c->log_tx_buf_size));
	memcpy(tx, rx, len);
	if (pp_rewrite_frame(tx, len) & PP_REWRITE_PAYLOAD)
		c->rewritten++;

	/* ctrl | eth (inline bytes 0..1) | inline bytes 2..17 | data segment for bytes 18.. */
	wqe = mlx5_dpa_sq_wqebb(&c->sq, idx);
	mlx5_dpa_swqe_ctrl_set(&wqe[0], 0, MLX5_CTRL_SEG_OPCODE_SEND, idx, c->sq.num,
			       len > PP_INLINE_HDR_SIZE ? 4 : 3, MLX5_DPA_WQE_CTRL_CQ_UPDATE, 0);
	flexio_dev_swqe_seg_eth_set(&wqe[1], 0, 0, PP_INLINE_HDR_SIZE, tx);
	memcpy(wqe[2].inline_data.inline_data, tx + 2, PP_INLINE_HDR_SIZE - 2);
	if (len > PP_INLINE_HDR_SIZE)
		flexio_dev_swqe_seg_mem_ptr_data_set(&wqe[3], len - PP_INLINE_HDR_SIZE, c->tx_buf_lkey,
						     (uint64_t)(uintptr_t)(tx + PP_INLINE_HDR_SIZE));
	c->sq_pi = idx + 1;
	/* ORDERING: frame and WQE before the record, record before SXD_DB (fences inside). */
	mlx5_dpa_dbr_sq_set_pi(c->sq.dbr_addr, c->sq_pi);
	flexio_dev_qp_sq_ring_db(dtctx, (uint16_t)c->sq_pi, c->sq.num);
	c->tx_packets++;
	return 0;
}

/*
 * Takes up to one ring's worth of receive CQEs: forwards each good frame, hands every receive
 * WQE back and advances the CQ record. Returns the number of CQEs taken.
 */
static uint32_t pp_poll(struct flexio_dev_thread_ctx *dtctx, struct pp_dev_ctx *c)
{
	uint32_t max_len = 1u << c->log_tx_buf_size;
	uint32_t budget = 1u << c->rq_cq.log_cqe_cnt;
	uint32_t n = 0;

	while (n < budget) {
		struct flexio_dev_cqe64 *cqe = mlx5_dpa_cq_cqe(&c->rq_cq, c->rq_cq_ci);
		uint8_t op;

		if (!mlx5_dpa_cqe_ready(&c->rq_cq, cqe, c->rq_cq_ci))
			break;
		n++;
		c->rx_packets++;
		op = flexio_dev_cqe_get_opcode(cqe);
		if (op == MLX5_DPA_CQE_RESP_SEND || op == MLX5_DPA_CQE_RESP_SEND_IMM ||
		    op == MLX5_DPA_CQE_RESP_SEND_INV) {
			uint16_t wqe_idx = flexio_dev_cqe_get_wqe_counter(cqe);
			uint32_t len = flexio_dev_cqe_get_byte_cnt(cqe);
			const uint8_t *rx = flexio_dev_rwqe_get_addr(mlx5_dpa_rq_wqe(&c->rq, wqe_idx));

			if (len < PP_INLINE_HDR_SIZE || len > max_len) {
				c->rx_dropped++;
			} else {
				if (c->flags & PP_FLAG_PRINT)
					(void)flexio_dev_print("pp: packet %lu len %u\n", c->rx_packets, len);
				(void)pp_forward(dtctx, c, rx, len);
			}
		} else {
			c->last_err_synd = flexio_dev_cqe_get_err_synd(cqe);
			c->rx_dropped++;
		}
		/* Hand the receive WQE back and move past the CQE (fences inside). */
		c->rq_pi++;
		mlx5_dpa_dbr_rq_set_pi(c->rq.dbr_addr, c->rq_pi);
		c->rq_cq_ci++;
		flexio_dev_dbr_cq_set_ci((uint32_t *)(uintptr_t)c->rq_cq.cq_dbr_addr, c->rq_cq_ci);
	}
	return n;
}

__dpa_global__ void flexio_pp_dev(uint64_t thread_arg)
{
	struct pp_dev_ctx *c = (struct pp_dev_ctx *)(uintptr_t)thread_arg;
	struct flexio_dev_thread_ctx *dtctx;

	flexio_dev_get_thread_ctx(&dtctx);
	if (thread_arg == 0 || (thread_arg & 7))
		flexio_dev_thread_finish();
	if (__atomic_load_n(&c->state, __ATOMIC_ACQUIRE) != PP_STATE_READY) {
		if (c->state == PP_STATE_BAD || pp_setup(c) != PP_OK) {
			c->state = PP_STATE_BAD;
			flexio_dev_thread_finish();
		}
	}
	c->activations++;
	(void)pp_poll(dtctx, c);
	/* Arm for the next frame; if CQEs are already waiting the event comes at once. */
	flexio_dev_cq_arm(dtctx, c->rq_cq_ci, c->rq_cq.cqn);
	flexio_dev_thread_reschedule();
}

__dpa_rpc__ uint64_t pp_rewrite(uint64_t frame_daddr, uint64_t len)
{
	if (frame_daddr == 0 || len > 0xffffffffu)
		return 0;
	return pp_rewrite_frame((uint8_t *)(uintptr_t)frame_daddr, (uint32_t)len);
}

/* Golden cases for pp_selfcheck. */
static const uint8_t sc_udp_in[] = {
	0x02, 0x00, 0x00, 0x00, 0x00, 0x01, /* dst */
	0x02, 0x00, 0x00, 0x00, 0x00, 0x02, /* src */
	0x08, 0x00,                         /* IPv4 */
	0x45, 0x00, 0x00, 0x2f, 0x00, 0x01, 0x00, 0x00, 0x40, 0x11, 0x00, 0x00,
	0x0a, 0x00, 0x00, 0x01, 0x0a, 0x00, 0x00, 0x02, /* IP: len 47, UDP, 10.0.0.1 > 10.0.0.2 */
	0x30, 0x39, 0x30, 0x39, 0x00, 0x1b, 0x12, 0x34, /* UDP 12345 > 12345, len 27, csum 0x1234 */
	'=', '=', '=', '=', '=', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9', 'x', 'Y', '/', ':',
};
static const uint8_t sc_udp_out[] = {
	0x02, 0x00, 0x00, 0x00, 0x00, 0x02,
	0x02, 0x00, 0x00, 0x00, 0x00, 0x01,
	0x08, 0x00,
	0x45, 0x00, 0x00, 0x2f, 0x00, 0x01, 0x00, 0x00, 0x40, 0x11, 0x00, 0x00,
	0x0a, 0x00, 0x00, 0x01, 0x0a, 0x00, 0x00, 0x02,
	0x30, 0x39, 0x30, 0x39, 0x00, 0x1b, 0x00, 0x00,
	'=', '=', '=', '=', '=', 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j', 'x', 'Y', '/', ':',
};
/* ARP-typed frame with digits past byte 42: only the MACs change. */
static const uint8_t sc_arp_in[48] = {
	0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x08, 0x06,
	[42] = '1', '2', '3', '4', '5', '6',
};
static const uint8_t sc_arp_out[48] = {
	0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff, 0x08, 0x06,
	[42] = '1', '2', '3', '4', '5', '6',
};

__dpa_rpc__ uint64_t pp_selfcheck(void)
{
	uint8_t buf[64];

	_Static_assert(sizeof(sc_udp_in) == sizeof(sc_udp_out), "golden sizes");
	memcpy(buf, sc_udp_in, sizeof(sc_udp_in));
	if (pp_rewrite_frame(buf, sizeof(sc_udp_in)) != (PP_REWRITE_MACS_SWAPPED | PP_REWRITE_PAYLOAD))
		return 1;
	if (memcmp(buf, sc_udp_out, sizeof(sc_udp_out)))
		return 2;
	memcpy(buf, sc_arp_in, sizeof(sc_arp_in));
	if (pp_rewrite_frame(buf, sizeof(sc_arp_in)) != PP_REWRITE_MACS_SWAPPED)
		return 3;
	if (memcmp(buf, sc_arp_out, sizeof(sc_arp_out)))
		return 4;
	/* Runt: untouched. */
	memcpy(buf, sc_udp_in, 13);
	if (pp_rewrite_frame(buf, 13) != 0 || memcmp(buf, sc_udp_in, 13))
		return 5;
	/* Too short for a UDP payload (41 bytes): MACs only. */
	memcpy(buf, sc_udp_in, 41);
	if (pp_rewrite_frame(buf, 41) != PP_REWRITE_MACS_SWAPPED || memcmp(buf, sc_udp_out, 12) ||
	    memcmp(buf + 12, sc_udp_in + 12, 29))
		return 6;
	return 0;
}
