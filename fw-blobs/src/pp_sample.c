/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * pp_sample: FlexIO's packet-processor sample, device side, written here against the FlexIO
 * API as a FlexIO user would, speaking the sample's protocol (pp_sample.h; docs/sources.md section 9):
 *
 *   flexio_pp_dev(h2d)   the event handler bound to the RQ's CQ. On its first activation it
 *                        takes the queues from `h2d` (a struct host2dev_packet_processor_data
 *                        in DPA memory) and sets `not_first_run`. For every received frame it
 *                        prints "Process packet: <n>" on the default message stream, copies the
 *                        frame into the next send buffer, swaps the MAC addresses, and for a
 *                        65-byte frame writes "  Event demo***..." from byte 0x2a with the
 *                        frame's send index (low hex digit) at 0x2a; sends it (ctrl + eth +
 *                        data segments, no inlined headers, a CQE on error only), returns the
 *                        receive buffer, and moves the CQ on. Then it arms the CQ and waits.
 *
 * The owner bit alone decides whether a CQE is new, as in NVIDIA's sample: CQEs start owner = 1
 * (`op_own = 0xf1`), the NIC writes 0 on the first pass.
 */
#include <stdint.h>

#include <libflexio-dev/flexio_dev.h>
#include <libflexio-dev/flexio_dev_queue_access.h>
#include <libflexio-libc/string.h>
#include <dpaintrin.h>

#include "pp_sample.h"

void flexio_pp_dev(uint64_t thread_arg);

#define RQ_MASK ((1u << LOG_RQ_DEPTH) - 1)
#define SQ_SEG_MASK ((1u << (LOG_SQ_DEPTH + LOG_SQE_NUM_SEGS)) - 1)
#define TX_MASK ((1u << LOG_SQ_DEPTH) - 1)
#define DEMO_FRAME_LEN 65
#define DEMO_TEXT_AT 0x2a

struct cq_pos {
	uint32_t cqn;
	uint32_t log_depth;
	uint32_t ci;
	uint8_t hw_owner;
	struct flexio_dev_cqe64 *ring;
	uint32_t *dbr;
};

static struct {
	uint64_t packets;
	uint32_t lkey;
	struct cq_pos rq_cq;
	struct flexio_dev_wqe_rcv_data_seg *rq_ring;
	uint32_t *rq_dbr;
	uint32_t sqn;
	union flexio_dev_sqe_seg *sq_ring;
	uint32_t sq_seg;
	uint32_t sq_pi;
	char *tx_bufs;
	uint32_t tx_idx;
} st;

static void cq_init(struct cq_pos *c, const struct app_transfer_cq *t)
{
	c->cqn = t->cq_num;
	c->log_depth = t->log_cq_depth;
	c->ci = 0;
	c->hw_owner = 1;
	c->ring = (struct flexio_dev_cqe64 *)t->cq_ring_daddr;
	c->dbr = (uint32_t *)t->cq_dbr_daddr;
}

static struct flexio_dev_cqe64 *cq_head(const struct cq_pos *c)
{
	return &c->ring[c->ci & ((1u << c->log_depth) - 1)];
}

static void cq_step(struct cq_pos *c)
{
	c->ci++;
	if (!(c->ci & ((1u << c->log_depth) - 1)))
		c->hw_owner ^= 1;
	flexio_dev_dbr_cq_set_ci(c->dbr, c->ci);
}

static void swap_macs(char *f)
{
	for (int i = 0; i < 6; i++) {
		char t = f[i];

		f[i] = f[6 + i];
		f[6 + i] = t;
	}
}

static void handle_frame(struct flexio_dev_thread_ctx *ctx, struct flexio_dev_cqe64 *cqe)
{
	uint32_t len = flexio_dev_cqe_get_byte_cnt(cqe);
	uint16_t idx = flexio_dev_cqe_get_wqe_counter(cqe);
	char *rx = flexio_dev_rwqe_get_addr(&st.rq_ring[idx & RQ_MASK]);
	char *tx = st.tx_bufs + ((st.tx_idx++ & TX_MASK) << LOG_WQD_CHUNK_BSIZE);
	union flexio_dev_sqe_seg *seg;

	if (len > (1u << LOG_WQD_CHUNK_BSIZE))
		len = 1u << LOG_WQD_CHUNK_BSIZE;
	memcpy(tx, rx, len);
	swap_macs(tx);
	if (len == DEMO_FRAME_LEN) {
		memcpy(tx + DEMO_TEXT_AT, "  Event demo***************", DEMO_FRAME_LEN - DEMO_TEXT_AT);
		tx[DEMO_TEXT_AT] = "0123456789abcdef"[st.tx_idx & 0xf];
	}
	seg = &st.sq_ring[st.sq_seg++ & SQ_SEG_MASK];
	flexio_dev_swqe_seg_ctrl_set(seg, st.sq_pi, st.sqn, MLX5_CTRL_SEG_CE_CQE_ON_CQE_ERROR,
				     FLEXIO_CTRL_SEG_SEND_EN);
	seg = &st.sq_ring[st.sq_seg++ & SQ_SEG_MASK];
	flexio_dev_swqe_seg_eth_set(seg, 0, 0, 0, NULL);
	seg = &st.sq_ring[st.sq_seg++ & SQ_SEG_MASK];
	flexio_dev_swqe_seg_mem_ptr_data_set(seg, len, st.lkey, (uint64_t)(uintptr_t)tx);
	/* The WQE's fourth segment stays unused: one WQEBB per frame. */
	st.sq_seg++;
	__dpa_thread_fence(__DPA_MEMORY, __DPA_W, __DPA_W);
	flexio_dev_qp_sq_ring_db(ctx, ++st.sq_pi, st.sqn);
	__dpa_thread_fence(__DPA_MEMORY, __DPA_W, __DPA_W);
	flexio_dev_dbr_rq_inc_pi(st.rq_dbr);
}

__dpa_global__ void flexio_pp_dev(uint64_t thread_arg)
{
	struct host2dev_packet_processor_data *h2d =
		(struct host2dev_packet_processor_data *)thread_arg;
	struct flexio_dev_thread_ctx *ctx;

	if (!h2d->not_first_run) {
		st.packets = 0;
		st.lkey = h2d->sq_transf.wqd_mkey_id;
		cq_init(&st.rq_cq, &h2d->rq_cq_transf);
		st.rq_ring = (struct flexio_dev_wqe_rcv_data_seg *)h2d->rq_transf.wq_ring_daddr;
		st.rq_dbr = (uint32_t *)h2d->rq_transf.wq_dbr_daddr;
		st.sqn = h2d->sq_transf.wq_num;
		st.sq_ring = (union flexio_dev_sqe_seg *)h2d->sq_transf.wq_ring_daddr;
		st.sq_seg = 0;
		st.sq_pi = 0;
		st.tx_bufs = (char *)h2d->sq_transf.wqd_daddr;
		st.tx_idx = 0;
		h2d->not_first_run = 1;
	}
	flexio_dev_get_thread_ctx(&ctx);
	while (flexio_dev_cqe_get_owner(cq_head(&st.rq_cq)) != st.rq_cq.hw_owner) {
		flexio_dev_print("Process packet: %ld\n", (long)st.packets++);
		__dpa_thread_fence(__DPA_MEMORY, __DPA_R, __DPA_R);
		handle_frame(ctx, cq_head(&st.rq_cq));
		cq_step(&st.rq_cq);
	}
	__dpa_thread_fence(__DPA_MEMORY, __DPA_W, __DPA_W);
	flexio_dev_cq_arm(ctx, st.rq_cq.ci, st.rq_cq.cqn);
	flexio_dev_thread_reschedule();
}
