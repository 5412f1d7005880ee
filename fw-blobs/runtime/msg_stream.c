/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * Message streams, device side: flexio_dev_msg / flexio_dev_print / flexio_dev_puts and the
 * stream RPCs. The protocol (one SEND per message on an RC QP in DPA memory) is described
 * in mlx5_dpa_msg_stream.h.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <libflexio-dev/flexio_dev.h>
#include <libflexio-libc/string.h>
#include <mlx5_dpa_msg_stream.h>
#include <libflexio-dev/flexio_dev_queue_access.h>

/*
 * The configured streams, shared by every thread of the process (DPA memory, .bss).
 * Written by the init / fini RPCs with release stores, read with acquire loads, so a thread
 * that sees a pointer also sees the context the RPC initialised.
 */
static struct flexio_msg_stream_dev_ctx *msg_streams[FLEXIO_MSG_DEV_MAX_STREAMS_AMOUNT];

#define MSG_ERR(e) ((uint64_t)(int64_t)(e))

__dpa_rpc__ uint64_t flexio_msg_stream_dev_init(uint64_t ctx_daddr)
{
	struct flexio_msg_stream_dev_ctx *s = (struct flexio_msg_stream_dev_ctx *)(uintptr_t)ctx_daddr;
	uint32_t log_depth;

	if (ctx_daddr == 0 || (ctx_daddr & 7))
		return MSG_ERR(FLEXIO_MSG_STREAM_DEV_ERR_CTX);
	if (s->stream_id >= FLEXIO_MSG_DEV_MAX_STREAMS_AMOUNT)
		return MSG_ERR(FLEXIO_MSG_STREAM_DEV_ERR_ID);
	log_depth = s->qp.log_sq_wqebb_cnt;
	if (s->qp.kind != MLX5_DPA_WQ_KIND_RC_QP || s->qp.sq_ring_addr == 0 || s->qp.dbr_addr == 0 ||
	    log_depth > 15)
		return MSG_ERR(FLEXIO_MSG_STREAM_DEV_ERR_QP);
	if ((s->cq.cqe_size != 64 && s->cq.cqe_size != 128) || s->cq.cq_ring_addr == 0 ||
	    s->cq.cq_dbr_addr == 0 || s->cq.log_cqe_cnt > 24)
		return MSG_ERR(FLEXIO_MSG_STREAM_DEV_ERR_CQ);
	if (s->buf_daddr == 0 || (s->buf_size >> log_depth) < 16)
		return MSG_ERR(FLEXIO_MSG_STREAM_DEV_ERR_BUF);

	spin_init(&s->lock);
	s->sq_pi = s->qp.sq_producer_index & 0xffff;
	s->sq_done = s->sq_pi;
	s->cq_ci = s->cq.consumer_index & MLX5_DPA_MASK24;
	s->msgs_posted = 0;
	s->msgs_dropped = 0;
	s->last_err_synd = 0;
	s->dead = 0;
	__atomic_store_n(&msg_streams[s->stream_id], s, __ATOMIC_RELEASE);
	return FLEXIO_MSG_STREAM_DEV_OK;
}

__dpa_rpc__ uint64_t flexio_msg_stream_dev_fini(uint64_t stream_id)
{
	struct flexio_msg_stream_dev_ctx *s;

	if (stream_id >= FLEXIO_MSG_DEV_MAX_STREAMS_AMOUNT)
		return MSG_ERR(FLEXIO_MSG_STREAM_DEV_ERR_ID);
	s = __atomic_exchange_n(&msg_streams[stream_id], NULL, __ATOMIC_ACQ_REL);
	if (s && mlx5_dpa_spin_lock_bounded(&s->lock, FLEXIO_MSG_DEV_LOCK_TRIES) == 0)
		spin_unlock(&s->lock);
	return FLEXIO_MSG_STREAM_DEV_OK;
}

/* Consumes the stream's new CQEs (at most one ring's worth); caller holds the lock. */
static void stream_reap(struct flexio_msg_stream_dev_ctx *s)
{
	uint32_t budget = 1u << s->cq.log_cqe_cnt;
	uint32_t n = 0;

	while (n < budget) {
		struct flexio_dev_cqe64 *cqe = mlx5_dpa_cq_cqe(&s->cq, s->cq_ci);
		uint8_t op;

		if (!mlx5_dpa_cqe_ready(&s->cq, cqe, s->cq_ci))
			break;
		op = flexio_dev_cqe_get_opcode(cqe);
		/* Every message is one WQEBB, so the counter names the WQE and frees up to it. */
		s->sq_done = (flexio_dev_cqe_get_wqe_counter(cqe) + 1u) & 0xffff;
		if (op != MLX5_DPA_CQE_REQ) {
			s->last_err_synd = op == MLX5_DPA_CQE_REQ_ERR || op == MLX5_DPA_CQE_RESP_ERR ?
				flexio_dev_cqe_get_err_synd(cqe) : 0xffffffffu;
			s->dead = 1;
		}
		s->cq_ci++;
		n++;
	}
	if (n)
		flexio_dev_dbr_cq_set_ci((uint32_t *)(uintptr_t)s->cq.cq_dbr_addr, s->cq_ci);
}

static int stream_drop(struct flexio_msg_stream_dev_ctx *s, int err)
{
	__atomic_fetch_add(&s->msgs_dropped, 1, __ATOMIC_RELAXED);
	return err;
}

/* Posts `len` bytes of `text` as one SEND on stream `s`. */
static int stream_post(struct flexio_msg_stream_dev_ctx *s, struct flexio_dev_thread_ctx *t,
		       const char *text, uint32_t len)
{
	uint32_t log_depth = s->qp.log_sq_wqebb_cnt;
	uint32_t depth = 1u << log_depth;
	uint32_t slot_size = s->buf_size >> log_depth;
	uint32_t polls = 0;
	union flexio_dev_sqe_seg *wqe;
	uint64_t slot;
	uint32_t idx;

	if (t->outbox_base == 0)
		return stream_drop(s, MLX5_DPA_MSG_ERR_NO_OUTBOX);
	if (len > slot_size)
		len = slot_size;
	if (mlx5_dpa_spin_lock_bounded(&s->lock, FLEXIO_MSG_DEV_LOCK_TRIES))
		return stream_drop(s, MLX5_DPA_MSG_ERR_BUSY);

	stream_reap(s);
	while (!s->dead && ((s->sq_pi - s->sq_done) & 0xffff) >= depth) {
		if (++polls > FLEXIO_MSG_DEV_FULL_POLLS) {
			spin_unlock(&s->lock);
			return stream_drop(s, MLX5_DPA_MSG_ERR_FULL);
		}
		stream_reap(s);
	}
	if (s->dead) {
		spin_unlock(&s->lock);
		return stream_drop(s, MLX5_DPA_MSG_ERR_QUEUE);
	}

	idx = s->sq_pi;
	slot = s->buf_daddr + (uint64_t)(idx & (depth - 1)) * slot_size;
	memcpy((void *)(uintptr_t)slot, text, len);
	wqe = mlx5_dpa_sq_wqebb(&s->qp, idx);
	/* A zero byte_count in a data segment means 2 GiB: an empty message has no segment. */
	mlx5_dpa_swqe_ctrl_set(&wqe[0], 0, MLX5_CTRL_SEG_OPCODE_SEND, idx, s->qp.num, len ? 2 : 1,
			       MLX5_DPA_WQE_CTRL_CQ_UPDATE, 0);
	if (len)
		flexio_dev_swqe_seg_mem_ptr_data_set(&wqe[1], len, s->buf_lkey, slot);
	s->sq_pi = idx + 1;
	/* ORDERING: text and WQE before the record (fence w,w inside), record before the
	 * doorbell (fence rw,o inside mlx5_dpa_outbox_write). */
	mlx5_dpa_dbr_sq_set_pi(s->qp.dbr_addr, s->sq_pi);
	flexio_dev_qp_sq_ring_db(t, (uint16_t)s->sq_pi, s->qp.num);
	s->msgs_posted++;
	spin_unlock(&s->lock);
	return (int)len;
}

static struct flexio_msg_stream_dev_ctx *stream_get(uint32_t id)
{
	if (id >= FLEXIO_MSG_DEV_MAX_STREAMS_AMOUNT)
		return NULL;
	return __atomic_load_n(&msg_streams[id], __ATOMIC_ACQUIRE);
}

static int level_passes(const struct flexio_msg_stream_dev_ctx *s, flexio_msg_dev_level level)
{
	return level != FLEXIO_MSG_DEV_NO_PRINT && level <= s->level;
}

int mlx5_dpa_vmsg(int stream_id, flexio_msg_dev_level level, const char *format, va_list ap)
{
	struct flexio_dev_thread_ctx *t = mlx5_dpa_thread_ctx();
	char text[MLX5_DPA_MSG_MAX_LEN];
	struct flexio_msg_stream_dev_ctx *s;
	uint32_t len;
	int any_ok = 0;
	int result;
	int n;

	if (stream_id != FLEXIO_MSG_DEV_BROADCAST_STREAM) {
		s = stream_get((uint32_t)stream_id);
		if (!s)
			return MLX5_DPA_MSG_ERR_NO_STREAM;
		if (!level_passes(s, level))
			return 0;
		n = mlx5_dpa_vsnprintf(text, sizeof(text), format, ap);
		len = (uint32_t)n < sizeof(text) ? (uint32_t)n : sizeof(text) - 1;
		return stream_post(s, t, text, len);
	}

	n = mlx5_dpa_vsnprintf(text, sizeof(text), format, ap);
	len = (uint32_t)n < sizeof(text) ? (uint32_t)n : sizeof(text) - 1;
	/* The best non-negative result if any stream took (or filtered) the message, else the
	 * first error, else NO_STREAM. */
	result = MLX5_DPA_MSG_ERR_NO_STREAM;
	for (uint32_t id = 0; id < FLEXIO_MSG_DEV_MAX_STREAMS_AMOUNT; id++) {
		int r;

		s = stream_get(id);
		if (!s)
			continue;
		r = level_passes(s, level) ? stream_post(s, t, text, len) : 0;
		if (r >= 0) {
			if (!any_ok || r > result)
				result = r;
			any_ok = 1;
		} else if (!any_ok && result == MLX5_DPA_MSG_ERR_NO_STREAM) {
			result = r;
		}
	}
	return result;
}

int flexio_dev_msg(int stream_id, flexio_msg_dev_level level, const char *format, ...)
{
	va_list ap;
	int n;

	va_start(ap, format);
	n = mlx5_dpa_vmsg(stream_id, level, format, ap);
	va_end(ap);
	return n;
}

int mlx5_dpa_msg_post_raw(int stream_id, flexio_msg_dev_level level, const void *data,
			  uint32_t len)
{
	struct flexio_msg_stream_dev_ctx *s = stream_get((uint32_t)stream_id);

	if (!s)
		return MLX5_DPA_MSG_ERR_NO_STREAM;
	if (!level_passes(s, level))
		return 0;
	return stream_post(s, mlx5_dpa_thread_ctx(), (const char *)data, len);
}

int flexio_dev_puts(struct flexio_dev_thread_ctx *dtctx, char *str)
{
	struct flexio_msg_stream_dev_ctx *s = stream_get(FLEXIO_MSG_DEV_DEFAULT_STREAM_ID);

	if (!s)
		return MLX5_DPA_MSG_ERR_NO_STREAM;
	if (!level_passes(s, FLEXIO_MSG_DEV_INFO))
		return 0;
	return stream_post(s, dtctx ? dtctx : mlx5_dpa_thread_ctx(), str, (uint32_t)strlen(str));
}
