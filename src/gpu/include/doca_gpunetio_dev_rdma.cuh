/*
 * mlx5-dpa: DOCA 2.x's GPU RDMA calls for CUDA kernels (the names, signatures and enum values
 * of DOCA 2.x's doca_gpunetio_dev_rdma.cuh; the implementation and text are this project's).
 *
 * A `struct doca_gpu_dev_rdma` comes from the host (mlx5_dpa::gpu::Rdma): one or more RC
 * connections, each an exported Verbs QP (doca_gpunetio_dev_verbs_qp.cuh), so every call here
 * is WQEs on a connection's send ring or receive ring. Both generations of the signatures are
 * here, as C++ overloads told apart by their argument counts: DOCA 2.7 and later name the
 * connection (`connection_index`, 0 for the first); DOCA 2.5 / 2.6 had one connection and no
 * such argument, and their doca_gpu_dev_rdma_recv_wait_all had no connection output.
 *
 * Sends (write, read, send, their inline forms) are enqueued, strong (the position taken in
 * turn) or weak (the caller's position from doca_gpu_dev_rdma_get_info, then
 * doca_gpu_dev_rdma_commit_weak with the count); nothing reaches the NIC before a commit.
 * doca_gpu_dev_rdma_wait_all waits for everything committed. Receives go on the receive side
 * (doca_gpu_dev_rdma_get_recv), committed the same way, and doca_gpu_dev_rdma_recv_wait_all
 * reports them with their immediates. A receive side exists for a handle of one connection;
 * with several, receiving needs a receive queue the connections share, which the export does
 * not make: doca_gpu_dev_rdma_get_recv says DOCA_ERROR_NOT_SUPPORTED.
 *
 * Every wait is bounded (DOCA_GPUNETIO_ETH_POLL_TIMEOUT_NS): DOCA_ERROR_TIME_OUT, after which
 * the queue is in error (destroy it). An enqueue on a full ring first takes the completions of
 * what was committed, waiting for them if needed.
 */
#ifndef DOCA_GPUNETIO_DEV_RDMA_CUH
#define DOCA_GPUNETIO_DEV_RDMA_CUH

#include "doca_gpunetio_dev_buf.cuh"
#include "doca_gpunetio_dev_verbs_cq.cuh"

/* mlx5 RC opcodes with an immediate (PRM; rdma-core mlx5dv.h). */
#define DOCA_GPUNETIO_MLX5_OPCODE_RDMA_WRITE_IMM 0x09
#define DOCA_GPUNETIO_MLX5_OPCODE_SEND_IMM 0x0b
/* Responder CQE opcodes that carry an immediate (PRM: MLX5_CQE_RESP_WR_IMM, _RESP_SEND_IMM). */
#define DOCA_GPUNETIO_MLX5_CQE_RESP_WR_IMM 0x1
#define DOCA_GPUNETIO_MLX5_CQE_RESP_SEND_IMM 0x3
/* An inline data segment's byte count carries this bit (MLX5_INLINE_SEG). */
#define DOCA_GPUNETIO_MLX5_INLINE_SEG 0x80000000u
/* The most connections one handle holds (this project's limit). */
#define MLX5_DPA_GPU_RDMA_MAX_CONNECTIONS 8
/* The largest inline payloads that fit one 64-byte WQE (DOCA 2.x's documented maximums). */
#define MLX5_DPA_GPU_RDMA_WRITE_INLINE_MAX 28
#define MLX5_DPA_GPU_RDMA_SEND_INLINE_MAX 44

enum doca_gpu_dev_rdma_write_flags {
	DOCA_GPU_RDMA_WRITE_FLAG_NONE = 0,
	DOCA_GPU_RDMA_WRITE_FLAG_IMM = 1,
};

enum doca_gpu_dev_rdma_send_flags {
	DOCA_GPU_RDMA_SEND_FLAG_NONE = 0,
	DOCA_GPU_RDMA_SEND_FLAG_IMM = 1,
};

/* recv_wait_all: NB reports what completed and returns; B waits for every receive committed. */
enum doca_gpu_dev_rdma_recv_wait_flags {
	DOCA_GPU_RDMA_RECV_WAIT_FLAG_NB = 0,
	DOCA_GPU_RDMA_RECV_WAIT_FLAG_B = 1,
};

/* The receive side: the connection that receives (its Verbs QP), 0 when there is none. 16 bytes. */
struct doca_gpu_dev_rdma_r {
	uint64_t qp;	   /*  0 struct doca_gpu_dev_verbs_qp * */
	uint64_t reserved; /*  8 */
};

/* The handle, filled in by mlx5_dpa::gpu::Rdma. 104 bytes; offsets in the comments. */
struct doca_gpu_dev_rdma {
	uint64_t commits;		 /*  0 commits made */
	uint64_t commits_waited;	 /*  8 ... and reported by doca_gpu_dev_rdma_wait_all */
	uint32_t num_connections;	 /* 16 */
	uint32_t reserved;		 /* 20 */
	struct doca_gpu_dev_rdma_r recv; /* 24 */
	uint64_t conn[MLX5_DPA_GPU_RDMA_MAX_CONNECTIONS]; /* 40 struct doca_gpu_dev_verbs_qp * each */
};

/* Connection `i`'s QP, or null when there is no such connection. */
__device__ static __forceinline__ struct doca_gpu_dev_verbs_qp *doca_priv_gpu_dev_rdma_qp(const struct doca_gpu_dev_rdma *rdma,
											 uint32_t i)
{
	if (!rdma || i >= rdma->num_connections || i >= MLX5_DPA_GPU_RDMA_MAX_CONNECTIONS)
		return (struct doca_gpu_dev_verbs_qp *)0;
	return (struct doca_gpu_dev_verbs_qp *)(uintptr_t)rdma->conn[i];
}

/* A bounded spin: false once DOCA_GPUNETIO_ETH_POLL_TIMEOUT_NS have passed since `*start`. */
__device__ static __forceinline__ bool doca_priv_gpu_dev_rdma_spin(uint64_t n, uint64_t *start)
{
	if ((n & 255) != 0)
		return true;
	uint64_t now = doca_gpu_dev_eth_now_ns();
	if (n == 0)
		*start = now;
	return now - *start <= DOCA_GPUNETIO_ETH_POLL_TIMEOUT_NS;
}

/*
 * Makes send slot `idx` free to write: a slot one ring back must have its CQE consumed. The
 * completions of what was committed are taken (waiting for them); a ring filled by what is not
 * committed yet cannot drain: DOCA_ERROR_FULL.
 */
__device__ static inline doca_error_t doca_priv_gpu_dev_rdma_sq_room(struct doca_gpu_dev_verbs_qp *qp, uint64_t idx)
{
	uint64_t size = (uint64_t)qp->sq_wqe_mask + 1;
	if (DOCA_GPUNETIO_VOLATILE(qp->cq_sq.cqe_ci) + size > idx)
		return DOCA_SUCCESS;
	uint64_t need = idx - size; /* this WQE's CQE frees the slot */
	uint64_t start = 0;
	for (uint64_t n = 0; DOCA_GPUNETIO_VOLATILE(qp->sq_wqe_pi) <= need; n++)
		if (!doca_priv_gpu_dev_rdma_spin(n, &start))
			return DOCA_ERROR_FULL;
	return doca_priv_gpu_dev_verbs_cq_wait<DOCA_GPUNETIO_VERBS_RESOURCE_SHARING_MODE_GPU>(&qp->cq_sq, need,
											     (uint32_t *)0);
}

/* Marks send WQE `idx` written once the ones before it are (bounded). */
__device__ static inline doca_error_t doca_priv_gpu_dev_rdma_ready(struct doca_gpu_dev_verbs_qp *qp, uint64_t idx)
{
	__threadfence();
	uint64_t start = 0;
	for (uint64_t n = 0; DOCA_GPUNETIO_VOLATILE(qp->sq_ready_index) != idx; n++)
		if (!doca_priv_gpu_dev_rdma_spin(n, &start))
			return DOCA_ERROR_TIME_OUT;
	__threadfence();
	DOCA_GPUNETIO_VOLATILE(qp->sq_ready_index) = idx + 1;
	return DOCA_SUCCESS;
}

/* The send slot of weak position `position`: the first at or after the committed ones. */
__device__ static __forceinline__ uint64_t doca_priv_gpu_dev_rdma_weak_slot(const struct doca_gpu_dev_verbs_qp *qp,
									    uint32_t position)
{
	uint64_t base = DOCA_GPUNETIO_VOLATILE(qp->sq_ready_index);
	return base + ((position - (uint32_t)base) & qp->sq_wqe_mask);
}

/* What one send WQE is: its opcode, and its payload (a region, or inline bytes). */
struct doca_priv_gpu_dev_rdma_op {
	uint32_t opcode;
	uint32_t imm;
	uint64_t raddr;
	uint32_t rkey;
	uint64_t laddr;
	uint32_t lkey;
	uint32_t bytes;
	const uint8_t *inl; /* inline payload, else null */
};

/* Writes send WQE `idx` of `qp` (one WQEBB, always asking for a CQE). */
__device__ static inline void doca_priv_gpu_dev_rdma_wqe(struct doca_gpu_dev_verbs_qp *qp, uint64_t idx,
							 const struct doca_priv_gpu_dev_rdma_op *op)
{
	uint64_t w = (uint64_t)(uintptr_t)doca_gpu_dev_verbs_get_wqe_ptr(qp, idx);
	bool remote = op->opcode != DOCA_GPUNETIO_MLX5_OPCODE_SEND && op->opcode != DOCA_GPUNETIO_MLX5_OPCODE_SEND_IMM;
	uint64_t at = w + 16;
	if (remote) {
		doca_priv_gpu_dev_verbs_raddr(at, op->raddr, op->rkey);
		at += 16;
	}
	uint32_t ds;
	if (op->inl) {
		doca_gpu_dev_eth_store32(at, doca_gpu_dev_eth_bswap32(op->bytes | DOCA_GPUNETIO_MLX5_INLINE_SEG));
		volatile uint8_t *dst = (volatile uint8_t *)(uintptr_t)(at + 4);
		for (uint32_t i = 0; i < op->bytes; i++)
			dst[i] = op->inl[i];
		ds = (uint32_t)((at - w) / 16) + (4 + op->bytes + 15) / 16;
	} else {
		doca_priv_gpu_dev_verbs_data(at, op->laddr, op->lkey, op->bytes);
		ds = (uint32_t)((at - w) / 16) + 1;
	}
	doca_gpu_dev_eth_store64(w + 8, ((uint64_t)DOCA_GPUNETIO_ETH_CTRL_CQ_UPDATE << 24) | ((uint64_t)op->imm << 32));
	doca_gpu_dev_eth_store64(w, doca_gpu_dev_eth_pair(doca_gpu_dev_eth_bswap32(((uint32_t)(uint16_t)idx << 8) | op->opcode),
							  doca_gpu_dev_eth_bswap32(qp->sq_num_shift8 | ds)));
}

/* Enqueues one send WQE on connection `conn`: strong (`weak` false) or at weak `position`. */
__device__ static inline doca_error_t doca_priv_gpu_dev_rdma_enqueue(struct doca_gpu_dev_rdma *rdma, uint32_t conn,
								     const struct doca_priv_gpu_dev_rdma_op *op, bool weak,
								     uint32_t position)
{
	struct doca_gpu_dev_verbs_qp *qp = doca_priv_gpu_dev_rdma_qp(rdma, conn);
	if (!qp)
		return DOCA_ERROR_INVALID_VALUE;
	/* Room is made below: a slot may wait for WQEs not committed yet, which never complete. */
	uint64_t idx = weak ? doca_priv_gpu_dev_rdma_weak_slot(qp, position) :
			      doca_gpu_dev_verbs_reserve_wq_slots<DOCA_GPUNETIO_VERBS_RESOURCE_SHARING_MODE_GPU>(
				      qp, 1, DOCA_GPUNETIO_VERBS_GPU_CODE_OPT_SKIP_AVAILABILITY_CHECK);
	doca_error_t r = doca_priv_gpu_dev_rdma_sq_room(qp, idx);
	if (r != DOCA_SUCCESS)
		return r;
	doca_priv_gpu_dev_rdma_wqe(qp, idx, op);
	return weak ? DOCA_SUCCESS : doca_priv_gpu_dev_rdma_ready(qp, idx);
}

/* The operation of a write (or write with immediate) between two buffers. */
__device__ static __forceinline__ bool doca_priv_gpu_dev_rdma_write_op(struct doca_priv_gpu_dev_rdma_op *op,
								       struct doca_gpu_buf *remote_buf, uint64_t remote_offset,
								       struct doca_gpu_buf *local_buf, uint64_t local_offset,
								       size_t length, uint32_t imm, uint32_t flags)
{
	if (!remote_buf || !local_buf || length > 0x7fffffffu || flags > DOCA_GPU_RDMA_WRITE_FLAG_IMM)
		return false;
	*op = {flags == DOCA_GPU_RDMA_WRITE_FLAG_IMM ? (uint32_t)DOCA_GPUNETIO_MLX5_OPCODE_RDMA_WRITE_IMM :
						       (uint32_t)DOCA_GPUNETIO_MLX5_OPCODE_RDMA_WRITE,
	       flags == DOCA_GPU_RDMA_WRITE_FLAG_IMM ? imm : 0,
	       remote_buf->addr + remote_offset,
	       remote_buf->mkey,
	       local_buf->addr + local_offset,
	       local_buf->mkey,
	       (uint32_t)length,
	       (const uint8_t *)0};
	return true;
}

/* DOCA 2.7+: an RDMA WRITE of `length` bytes from `local_buf` + `local_offset` to `remote_buf` +
 * `remote_offset` (with `imm`, big-endian as given, when `flags` is ..._IMM) at `position`. */
__device__ static inline doca_error_t doca_gpu_dev_rdma_write_weak(struct doca_gpu_dev_rdma *rdma, uint32_t connection_index,
								   struct doca_gpu_buf *remote_buf, uint64_t remote_offset,
								   struct doca_gpu_buf *local_buf, uint64_t local_offset,
								   size_t length, uint32_t imm,
								   const enum doca_gpu_dev_rdma_write_flags flags,
								   uint32_t position)
{
	struct doca_priv_gpu_dev_rdma_op op;
	if (!doca_priv_gpu_dev_rdma_write_op(&op, remote_buf, remote_offset, local_buf, local_offset, length, imm, flags))
		return DOCA_ERROR_INVALID_VALUE;
	return doca_priv_gpu_dev_rdma_enqueue(rdma, connection_index, &op, true, position);
}

/* As doca_gpu_dev_rdma_write_weak, the position taken in turn. */
__device__ static inline doca_error_t doca_gpu_dev_rdma_write_strong(struct doca_gpu_dev_rdma *rdma,
								     uint32_t connection_index,
								     struct doca_gpu_buf *remote_buf, uint64_t remote_offset,
								     struct doca_gpu_buf *local_buf, uint64_t local_offset,
								     size_t length, uint32_t imm,
								     const enum doca_gpu_dev_rdma_write_flags flags)
{
	struct doca_priv_gpu_dev_rdma_op op;
	if (!doca_priv_gpu_dev_rdma_write_op(&op, remote_buf, remote_offset, local_buf, local_offset, length, imm, flags))
		return DOCA_ERROR_INVALID_VALUE;
	return doca_priv_gpu_dev_rdma_enqueue(rdma, connection_index, &op, false, 0);
}

/* The operation of an inline write (or write with immediate): `len` (at most 28) bytes. */
__device__ static __forceinline__ bool doca_priv_gpu_dev_rdma_write_inline_op(struct doca_priv_gpu_dev_rdma_op *op,
									      struct doca_gpu_buf *remote_buf,
									      uint64_t remote_offset, const uint8_t *data,
									      uint32_t len, uint32_t imm, uint32_t flags)
{
	if (!remote_buf || (!data && len) || len > MLX5_DPA_GPU_RDMA_WRITE_INLINE_MAX || flags > DOCA_GPU_RDMA_WRITE_FLAG_IMM)
		return false;
	bool with_imm = flags == DOCA_GPU_RDMA_WRITE_FLAG_IMM;
	*op = {with_imm ? (uint32_t)DOCA_GPUNETIO_MLX5_OPCODE_RDMA_WRITE_IMM : (uint32_t)DOCA_GPUNETIO_MLX5_OPCODE_RDMA_WRITE,
	       with_imm ? imm : 0,
	       remote_buf->addr + remote_offset,
	       remote_buf->mkey,
	       0,
	       0,
	       len,
	       data ? data : (const uint8_t *)""};
	return true;
}

/* The inline write: `inl_lenght` (at most 28) bytes from `inl_data`, carried in the WQE. */
__device__ static inline doca_error_t doca_gpu_dev_rdma_write_inline_weak(struct doca_gpu_dev_rdma *rdma,
									  uint32_t connection_index,
									  struct doca_gpu_buf *remote_buf,
									  uint64_t remote_offset, uint8_t *inl_data,
									  uint32_t inl_lenght, uint32_t imm,
									  const enum doca_gpu_dev_rdma_write_flags flags,
									  uint32_t position)
{
	struct doca_priv_gpu_dev_rdma_op op;
	if (!doca_priv_gpu_dev_rdma_write_inline_op(&op, remote_buf, remote_offset, inl_data, inl_lenght, imm, flags))
		return DOCA_ERROR_INVALID_VALUE;
	return doca_priv_gpu_dev_rdma_enqueue(rdma, connection_index, &op, true, position);
}

__device__ static inline doca_error_t doca_gpu_dev_rdma_write_inline_strong(struct doca_gpu_dev_rdma *rdma,
									    uint32_t connection_index,
									    struct doca_gpu_buf *remote_buf,
									    uint64_t remote_offset, uint8_t *inl_data,
									    uint32_t inl_lenght, uint32_t imm,
									    const enum doca_gpu_dev_rdma_write_flags flags)
{
	struct doca_priv_gpu_dev_rdma_op op;
	if (!doca_priv_gpu_dev_rdma_write_inline_op(&op, remote_buf, remote_offset, inl_data, inl_lenght, imm, flags))
		return DOCA_ERROR_INVALID_VALUE;
	return doca_priv_gpu_dev_rdma_enqueue(rdma, connection_index, &op, false, 0);
}

/* An RDMA READ of `length` bytes from `remote_buf` + `remote_offset` into `local_buf` +
 * `local_offset`; `flags_bitmask` must be 0. */
__device__ static inline doca_error_t doca_gpu_dev_rdma_read_weak(struct doca_gpu_dev_rdma *rdma, uint32_t connection_index,
								  struct doca_gpu_buf *remote_buf, uint64_t remote_offset,
								  struct doca_gpu_buf *local_buf, uint64_t local_offset,
								  size_t length, const uint32_t flags_bitmask, uint32_t position)
{
	struct doca_priv_gpu_dev_rdma_op op;
	if (flags_bitmask ||
	    !doca_priv_gpu_dev_rdma_write_op(&op, remote_buf, remote_offset, local_buf, local_offset, length, 0, 0))
		return DOCA_ERROR_INVALID_VALUE;
	op.opcode = DOCA_GPUNETIO_MLX5_OPCODE_RDMA_READ;
	return doca_priv_gpu_dev_rdma_enqueue(rdma, connection_index, &op, true, position);
}

__device__ static inline doca_error_t doca_gpu_dev_rdma_read_strong(struct doca_gpu_dev_rdma *rdma,
								    uint32_t connection_index,
								    struct doca_gpu_buf *remote_buf, uint64_t remote_offset,
								    struct doca_gpu_buf *local_buf, uint64_t local_offset,
								    size_t length, const uint32_t flags_bitmask)
{
	struct doca_priv_gpu_dev_rdma_op op;
	if (flags_bitmask ||
	    !doca_priv_gpu_dev_rdma_write_op(&op, remote_buf, remote_offset, local_buf, local_offset, length, 0, 0))
		return DOCA_ERROR_INVALID_VALUE;
	op.opcode = DOCA_GPUNETIO_MLX5_OPCODE_RDMA_READ;
	return doca_priv_gpu_dev_rdma_enqueue(rdma, connection_index, &op, false, 0);
}

/* The operation of a send (or send with immediate) of a buffer's bytes. */
__device__ static __forceinline__ bool doca_priv_gpu_dev_rdma_send_op(struct doca_priv_gpu_dev_rdma_op *op,
								      struct doca_gpu_buf *send_buf, uint64_t send_offset,
								      size_t length, uint32_t imm, uint32_t flags)
{
	if (!send_buf || length > 0x7fffffffu || flags > DOCA_GPU_RDMA_SEND_FLAG_IMM)
		return false;
	*op = {flags == DOCA_GPU_RDMA_SEND_FLAG_IMM ? (uint32_t)DOCA_GPUNETIO_MLX5_OPCODE_SEND_IMM :
						      (uint32_t)DOCA_GPUNETIO_MLX5_OPCODE_SEND,
	       flags == DOCA_GPU_RDMA_SEND_FLAG_IMM ? imm : 0,
	       0,
	       0,
	       send_buf->addr + send_offset,
	       send_buf->mkey,
	       (uint32_t)length,
	       (const uint8_t *)0};
	return true;
}

/* A SEND of `src_length` bytes from `send_buf` + `send_offset` (with `imm` when `flags` is
 * ..._IMM); the peer must have a receive committed. */
__device__ static inline doca_error_t doca_gpu_dev_rdma_send_weak(struct doca_gpu_dev_rdma *rdma, uint32_t connection_index,
								  struct doca_gpu_buf *send_buf, uint64_t send_offset,
								  size_t src_length, uint32_t imm,
								  const enum doca_gpu_dev_rdma_send_flags flags, uint32_t position)
{
	struct doca_priv_gpu_dev_rdma_op op;
	if (!doca_priv_gpu_dev_rdma_send_op(&op, send_buf, send_offset, src_length, imm, flags))
		return DOCA_ERROR_INVALID_VALUE;
	return doca_priv_gpu_dev_rdma_enqueue(rdma, connection_index, &op, true, position);
}

__device__ static inline doca_error_t doca_gpu_dev_rdma_send_strong(struct doca_gpu_dev_rdma *rdma,
								    uint32_t connection_index, struct doca_gpu_buf *send_buf,
								    uint64_t send_offset, size_t src_length, uint32_t imm,
								    const enum doca_gpu_dev_rdma_send_flags flags)
{
	struct doca_priv_gpu_dev_rdma_op op;
	if (!doca_priv_gpu_dev_rdma_send_op(&op, send_buf, send_offset, src_length, imm, flags))
		return DOCA_ERROR_INVALID_VALUE;
	return doca_priv_gpu_dev_rdma_enqueue(rdma, connection_index, &op, false, 0);
}

/* The operation of an inline send (or send with immediate): `len` (at most 44) bytes. */
__device__ static __forceinline__ bool doca_priv_gpu_dev_rdma_send_inline_op(struct doca_priv_gpu_dev_rdma_op *op,
									     const uint8_t *data, uint32_t len, uint32_t imm,
									     uint32_t flags)
{
	if ((!data && len) || len > MLX5_DPA_GPU_RDMA_SEND_INLINE_MAX || flags > DOCA_GPU_RDMA_SEND_FLAG_IMM)
		return false;
	bool with_imm = flags == DOCA_GPU_RDMA_SEND_FLAG_IMM;
	*op = {with_imm ? (uint32_t)DOCA_GPUNETIO_MLX5_OPCODE_SEND_IMM : (uint32_t)DOCA_GPUNETIO_MLX5_OPCODE_SEND,
	       with_imm ? imm : 0,
	       0,
	       0,
	       0,
	       0,
	       len,
	       data ? data : (const uint8_t *)""};
	return true;
}

/* The inline send: `inl_lenght` (at most 44) bytes from `inl_data`, carried in the WQE. */
__device__ static inline doca_error_t doca_gpu_dev_rdma_send_inline_weak(struct doca_gpu_dev_rdma *rdma,
									 uint32_t connection_index, uint8_t *inl_data,
									 uint32_t inl_lenght, uint32_t imm,
									 const enum doca_gpu_dev_rdma_send_flags flags,
									 uint32_t position)
{
	struct doca_priv_gpu_dev_rdma_op op;
	if (!doca_priv_gpu_dev_rdma_send_inline_op(&op, inl_data, inl_lenght, imm, flags))
		return DOCA_ERROR_INVALID_VALUE;
	return doca_priv_gpu_dev_rdma_enqueue(rdma, connection_index, &op, true, position);
}

__device__ static inline doca_error_t doca_gpu_dev_rdma_send_inline_strong(struct doca_gpu_dev_rdma *rdma,
									   uint32_t connection_index, uint8_t *inl_data,
									   uint32_t inl_lenght, uint32_t imm,
									   const enum doca_gpu_dev_rdma_send_flags flags)
{
	struct doca_priv_gpu_dev_rdma_op op;
	if (!doca_priv_gpu_dev_rdma_send_inline_op(&op, inl_data, inl_lenght, imm, flags))
		return DOCA_ERROR_INVALID_VALUE;
	return doca_priv_gpu_dev_rdma_enqueue(rdma, connection_index, &op, false, 0);
}

/* Hands the weak operations at the `num_ops` positions after the last commit to the NIC (one
 * thread, after the others enqueued). */
__device__ static inline doca_error_t doca_gpu_dev_rdma_commit_weak(struct doca_gpu_dev_rdma *rdma,
								    uint32_t connection_index, uint32_t num_ops)
{
	struct doca_gpu_dev_verbs_qp *qp = doca_priv_gpu_dev_rdma_qp(rdma, connection_index);
	if (!qp || num_ops > qp->sq_wqe_mask + 1)
		return DOCA_ERROR_INVALID_VALUE;
	__threadfence();
	uint64_t end = DOCA_GPUNETIO_VOLATILE(qp->sq_ready_index) + num_ops;
	DOCA_GPUNETIO_VOLATILE(qp->sq_rsvd_index) = end;
	DOCA_GPUNETIO_VOLATILE(qp->sq_ready_index) = end;
	doca_gpu_dev_verbs_submit(qp, end);
	doca_gpu_dev_eth_atomic_add<DOCA_GPUNETIO_ETH_RESOURCE_SHARING_MODE_GPU>(&rdma->commits, 1);
	return DOCA_SUCCESS;
}

/* Hands every strong operation enqueued on the connection to the NIC (one thread, after the
 * others enqueued). */
__device__ static inline doca_error_t doca_gpu_dev_rdma_commit_strong(struct doca_gpu_dev_rdma *rdma,
								      uint32_t connection_index)
{
	struct doca_gpu_dev_verbs_qp *qp = doca_priv_gpu_dev_rdma_qp(rdma, connection_index);
	if (!qp)
		return DOCA_ERROR_INVALID_VALUE;
	doca_gpu_dev_verbs_submit(qp, DOCA_GPUNETIO_VOLATILE(qp->sq_ready_index));
	doca_gpu_dev_eth_atomic_add<DOCA_GPUNETIO_ETH_RESOURCE_SHARING_MODE_GPU>(&rdma->commits, 1);
	return DOCA_SUCCESS;
}

/* Waits for every operation committed on every connection; `num_commits`: the commits done
 * since the last call (one thread). DOCA_ERROR_IO_FAILED when one failed. */
__device__ static inline doca_error_t doca_gpu_dev_rdma_wait_all(struct doca_gpu_dev_rdma *rdma, uint32_t *num_commits)
{
	if (!rdma || !num_commits)
		return DOCA_ERROR_INVALID_VALUE;
	uint64_t commits = DOCA_GPUNETIO_VOLATILE(rdma->commits);
	for (uint32_t c = 0; c < rdma->num_connections && c < MLX5_DPA_GPU_RDMA_MAX_CONNECTIONS; c++) {
		struct doca_gpu_dev_verbs_qp *qp = doca_priv_gpu_dev_rdma_qp(rdma, c);
		uint64_t pi = DOCA_GPUNETIO_VOLATILE(qp->sq_wqe_pi);
		if (DOCA_GPUNETIO_VOLATILE(qp->cq_sq.cqe_ci) >= pi)
			continue;
		doca_error_t r = doca_priv_gpu_dev_verbs_cq_wait<DOCA_GPUNETIO_VERBS_RESOURCE_SHARING_MODE_GPU>(
			&qp->cq_sq, pi - 1, (uint32_t *)0);
		if (r != DOCA_SUCCESS)
			return r;
	}
	*num_commits = (uint32_t)(commits - rdma->commits_waited);
	rdma->commits_waited = commits;
	return DOCA_SUCCESS;
}

/* The next position of the connection's send ring and the mask positions wrap with. */
__device__ static inline doca_error_t doca_gpu_dev_rdma_get_info(struct doca_gpu_dev_rdma *rdma, uint32_t connection_index,
								 uint32_t *curr_position, uint32_t *mask_max_position)
{
	struct doca_gpu_dev_verbs_qp *qp = doca_priv_gpu_dev_rdma_qp(rdma, connection_index);
	if (!qp || !curr_position || !mask_max_position)
		return DOCA_ERROR_INVALID_VALUE;
	*curr_position = (uint32_t)DOCA_GPUNETIO_VOLATILE(qp->sq_ready_index);
	*mask_max_position = qp->sq_wqe_mask;
	return DOCA_SUCCESS;
}

/* The receive side (DOCA_ERROR_NOT_SUPPORTED for a handle of several connections). */
__device__ static inline doca_error_t doca_gpu_dev_rdma_get_recv(struct doca_gpu_dev_rdma *rdma,
								 struct doca_gpu_dev_rdma_r **rdma_r)
{
	if (!rdma || !rdma_r)
		return DOCA_ERROR_INVALID_VALUE;
	if (!rdma->recv.qp)
		return DOCA_ERROR_NOT_SUPPORTED;
	*rdma_r = &rdma->recv;
	return DOCA_SUCCESS;
}

/* Receive WQE `idx`: `recv_length` bytes at `recv_buf` + `recv_offset`, or none (a null buffer:
 * for a write with immediate, which brings no bytes). */
__device__ static inline void doca_priv_gpu_dev_rdma_recv_wqe(struct doca_gpu_dev_verbs_qp *qp, uint64_t idx,
							      struct doca_gpu_buf *recv_buf, size_t recv_length,
							      uint64_t recv_offset)
{
	if (recv_buf) {
		struct doca_gpu_dev_verbs_addr a = {recv_buf->addr + recv_offset, recv_buf->mkey};
		doca_gpu_dev_verbs_wqe_prepare_recv(qp, idx, a, (uint32_t)recv_length);
		return;
	}
	uint64_t w = qp->rq_wqe_daddr + (idx & qp->rq_wqe_mask) * qp->rcv_wqe_size;
	doca_priv_gpu_dev_verbs_data(w, 0, doca_gpu_dev_eth_bswap32(DOCA_GPUNETIO_MLX5_INVALID_LKEY), 0);
}

/* Receive slot `idx` is free once the receive one ring back completed and was reported. */
__device__ static __forceinline__ bool doca_priv_gpu_dev_rdma_rq_room(const struct doca_gpu_dev_verbs_qp *qp, uint64_t idx)
{
	return DOCA_GPUNETIO_VOLATILE(qp->cq_rq.cqe_ci) + qp->rq_wqe_mask + 1 > idx;
}

/* Enqueues a receive at `position` (flags_bitmask 0); DOCA_ERROR_FULL when its slot still holds
 * a receive not reported by doca_gpu_dev_rdma_recv_wait_all. */
__device__ static inline doca_error_t doca_gpu_dev_rdma_recv_weak(struct doca_gpu_dev_rdma_r *rdma_r,
								  struct doca_gpu_buf *recv_buf, size_t recv_length,
								  uint64_t recv_offset, const uint32_t flags_bitmask,
								  uint32_t position)
{
	if (!rdma_r || !rdma_r->qp || flags_bitmask || recv_length > 0x7fffffffu)
		return DOCA_ERROR_INVALID_VALUE;
	struct doca_gpu_dev_verbs_qp *qp = (struct doca_gpu_dev_verbs_qp *)(uintptr_t)rdma_r->qp;
	uint64_t base = DOCA_GPUNETIO_VOLATILE(qp->rq_wqe_pi);
	uint64_t idx = base + ((position - (uint32_t)base) & qp->rq_wqe_mask);
	if (!doca_priv_gpu_dev_rdma_rq_room(qp, idx))
		return DOCA_ERROR_FULL;
	doca_priv_gpu_dev_rdma_recv_wqe(qp, idx, recv_buf, recv_length, recv_offset);
	return DOCA_SUCCESS;
}

/* Enqueues a receive at the next position (threads take positions in turn). */
__device__ static inline doca_error_t doca_gpu_dev_rdma_recv_strong(struct doca_gpu_dev_rdma_r *rdma_r,
								    struct doca_gpu_buf *recv_buf, size_t recv_length,
								    uint64_t recv_offset, const uint32_t flags_bitmask)
{
	if (!rdma_r || !rdma_r->qp || flags_bitmask || recv_length > 0x7fffffffu)
		return DOCA_ERROR_INVALID_VALUE;
	struct doca_gpu_dev_verbs_qp *qp = (struct doca_gpu_dev_verbs_qp *)(uintptr_t)rdma_r->qp;
	uint64_t idx = doca_gpu_dev_eth_atomic_add<DOCA_GPUNETIO_ETH_RESOURCE_SHARING_MODE_GPU>(&qp->rq_rsvd_index, 1);
	if (!doca_priv_gpu_dev_rdma_rq_room(qp, idx))
		return DOCA_ERROR_FULL; /* the slot stays taken: the queue is in error */
	doca_priv_gpu_dev_rdma_recv_wqe(qp, idx, recv_buf, recv_length, recv_offset);
	return DOCA_SUCCESS;
}

/* Publishes the weak receives at the `num_ops` positions after the last commit (one thread). */
__device__ static inline doca_error_t doca_gpu_dev_rdma_recv_commit_weak(struct doca_gpu_dev_rdma_r *rdma_r,
									 uint32_t num_ops)
{
	if (!rdma_r || !rdma_r->qp)
		return DOCA_ERROR_INVALID_VALUE;
	struct doca_gpu_dev_verbs_qp *qp = (struct doca_gpu_dev_verbs_qp *)(uintptr_t)rdma_r->qp;
	if (num_ops > qp->rq_wqe_mask + 1)
		return DOCA_ERROR_INVALID_VALUE;
	__threadfence();
	uint64_t end = DOCA_GPUNETIO_VOLATILE(qp->rq_wqe_pi) + num_ops;
	DOCA_GPUNETIO_VOLATILE(qp->rq_rsvd_index) = end;
	doca_gpu_dev_verbs_submit<DOCA_GPUNETIO_VERBS_RESOURCE_SHARING_MODE_GPU, DOCA_GPUNETIO_VERBS_SYNC_SCOPE_GPU,
				  DOCA_GPUNETIO_VERBS_NIC_HANDLER_AUTO, DOCA_GPUNETIO_VERBS_QP_RQ>(qp, end);
	return DOCA_SUCCESS;
}

/* Publishes every strong receive enqueued (one thread, after the others enqueued). */
__device__ static inline doca_error_t doca_gpu_dev_rdma_recv_commit_strong(struct doca_gpu_dev_rdma_r *rdma_r)
{
	if (!rdma_r || !rdma_r->qp)
		return DOCA_ERROR_INVALID_VALUE;
	struct doca_gpu_dev_verbs_qp *qp = (struct doca_gpu_dev_verbs_qp *)(uintptr_t)rdma_r->qp;
	__threadfence();
	doca_gpu_dev_verbs_submit<DOCA_GPUNETIO_VERBS_RESOURCE_SHARING_MODE_GPU, DOCA_GPUNETIO_VERBS_SYNC_SCOPE_GPU,
				  DOCA_GPUNETIO_VERBS_NIC_HANDLER_AUTO, DOCA_GPUNETIO_VERBS_QP_RQ>(
		qp, DOCA_GPUNETIO_VOLATILE(qp->rq_rsvd_index));
	return DOCA_SUCCESS;
}

/*
 * Reports the receives that completed since the last call, in order: `num_ops` of them, each's
 * immediate (as it came, big-endian; 0 without one) in `imm_val` and its connection in
 * `connection_index` when those are given (each room for every receive committed). With
 * ..._FLAG_B, waits until every committed receive completed. DOCA_ERROR_IO_FAILED for a
 * receive that failed (those before it are reported).
 */
__device__ static inline doca_error_t doca_gpu_dev_rdma_recv_wait_all(struct doca_gpu_dev_rdma_r *rdma_r,
								      const enum doca_gpu_dev_rdma_recv_wait_flags flags,
								      uint32_t *num_ops, uint32_t *imm_val,
								      uint32_t *connection_index)
{
	if (!rdma_r || !rdma_r->qp || !num_ops || flags > DOCA_GPU_RDMA_RECV_WAIT_FLAG_B)
		return DOCA_ERROR_INVALID_VALUE;
	struct doca_gpu_dev_verbs_qp *qp = (struct doca_gpu_dev_verbs_qp *)(uintptr_t)rdma_r->qp;
	struct doca_gpu_dev_verbs_cq *cq = &qp->cq_rq;
	uint64_t ci = cq->cqe_ci, end = DOCA_GPUNETIO_VOLATILE(qp->rq_wqe_pi), idx = ci, start = 0;
	doca_error_t r = DOCA_SUCCESS;
	for (uint64_t n = 0; idx < end; n++) {
		uint32_t bytes = 0;
		doca_error_t got = doca_gpu_dev_verbs_poll_one_cq_at(cq, idx, &bytes);
		if (got == DOCA_SUCCESS) {
			uint64_t cqe = cq->cqe_daddr + ((idx & cq->cqe_mask) << 6);
			uint8_t opcode = *(volatile uint8_t *)(cqe + 63) >> 4;
			bool imm = opcode == DOCA_GPUNETIO_MLX5_CQE_RESP_WR_IMM || opcode == DOCA_GPUNETIO_MLX5_CQE_RESP_SEND_IMM;
			if (imm_val)
				imm_val[idx - ci] = imm ? *(volatile uint32_t *)(cqe + 36) : 0;
			if (connection_index)
				connection_index[idx - ci] = 0;
			idx++;
			continue;
		}
		if (got != DOCA_ERROR_AGAIN) {
			r = got;
			break;
		}
		if (flags == DOCA_GPU_RDMA_RECV_WAIT_FLAG_NB)
			break;
		if (!doca_priv_gpu_dev_rdma_spin(n, &start)) {
			r = DOCA_ERROR_TIME_OUT;
			break;
		}
	}
	if (idx > ci)
		doca_priv_gpu_dev_verbs_cq_release<DOCA_GPUNETIO_VERBS_RESOURCE_SHARING_MODE_GPU>(cq, idx);
	*num_ops = (uint32_t)(idx - ci);
	return r;
}

/* The next position of the receive ring and the mask positions wrap with. */
__device__ static inline doca_error_t doca_gpu_dev_rdma_recv_get_info(struct doca_gpu_dev_rdma_r *rdma_r,
								      uint32_t *curr_position, uint32_t *mask_max_position)
{
	if (!rdma_r || !rdma_r->qp || !curr_position || !mask_max_position)
		return DOCA_ERROR_INVALID_VALUE;
	struct doca_gpu_dev_verbs_qp *qp = (struct doca_gpu_dev_verbs_qp *)(uintptr_t)rdma_r->qp;
	*curr_position = (uint32_t)DOCA_GPUNETIO_VOLATILE(qp->rq_wqe_pi);
	*mask_max_position = qp->rq_wqe_mask;
	return DOCA_SUCCESS;
}

/*
 * DOCA 2.5 / 2.6: one connection, no connection_index (the same calls on connection 0), and
 * doca_gpu_dev_rdma_recv_wait_all without the connection output.
 */
__device__ static inline doca_error_t doca_gpu_dev_rdma_write_weak(struct doca_gpu_dev_rdma *rdma,
								   struct doca_gpu_buf *remote_buf, uint64_t remote_offset,
								   struct doca_gpu_buf *local_buf, uint64_t local_offset,
								   size_t length, uint32_t imm,
								   const enum doca_gpu_dev_rdma_write_flags flags,
								   uint32_t position)
{
	return doca_gpu_dev_rdma_write_weak(rdma, 0, remote_buf, remote_offset, local_buf, local_offset, length, imm,
					    flags, position);
}

__device__ static inline doca_error_t doca_gpu_dev_rdma_write_strong(struct doca_gpu_dev_rdma *rdma,
								     struct doca_gpu_buf *remote_buf, uint64_t remote_offset,
								     struct doca_gpu_buf *local_buf, uint64_t local_offset,
								     size_t length, uint32_t imm,
								     const enum doca_gpu_dev_rdma_write_flags flags)
{
	return doca_gpu_dev_rdma_write_strong(rdma, 0, remote_buf, remote_offset, local_buf, local_offset, length, imm,
					      flags);
}

__device__ static inline doca_error_t doca_gpu_dev_rdma_read_weak(struct doca_gpu_dev_rdma *rdma,
								  struct doca_gpu_buf *remote_buf, uint64_t remote_offset,
								  struct doca_gpu_buf *local_buf, uint64_t local_offset,
								  size_t length, const uint32_t flags_bitmask, uint32_t position)
{
	return doca_gpu_dev_rdma_read_weak(rdma, 0, remote_buf, remote_offset, local_buf, local_offset, length,
					   flags_bitmask, position);
}

__device__ static inline doca_error_t doca_gpu_dev_rdma_read_strong(struct doca_gpu_dev_rdma *rdma,
								    struct doca_gpu_buf *remote_buf, uint64_t remote_offset,
								    struct doca_gpu_buf *local_buf, uint64_t local_offset,
								    size_t length, const uint32_t flags_bitmask)
{
	return doca_gpu_dev_rdma_read_strong(rdma, 0, remote_buf, remote_offset, local_buf, local_offset, length,
					     flags_bitmask);
}

__device__ static inline doca_error_t doca_gpu_dev_rdma_send_weak(struct doca_gpu_dev_rdma *rdma,
								  struct doca_gpu_buf *send_buf, uint64_t send_offset,
								  size_t src_length, uint32_t imm,
								  const enum doca_gpu_dev_rdma_send_flags flags, uint32_t position)
{
	return doca_gpu_dev_rdma_send_weak(rdma, 0, send_buf, send_offset, src_length, imm, flags, position);
}

__device__ static inline doca_error_t doca_gpu_dev_rdma_send_strong(struct doca_gpu_dev_rdma *rdma,
								    struct doca_gpu_buf *send_buf, uint64_t send_offset,
								    size_t src_length, uint32_t imm,
								    const enum doca_gpu_dev_rdma_send_flags flags)
{
	return doca_gpu_dev_rdma_send_strong(rdma, 0, send_buf, send_offset, src_length, imm, flags);
}

__device__ static inline doca_error_t doca_gpu_dev_rdma_commit_weak(struct doca_gpu_dev_rdma *rdma, uint32_t num_ops)
{
	return doca_gpu_dev_rdma_commit_weak(rdma, 0, num_ops);
}

__device__ static inline doca_error_t doca_gpu_dev_rdma_commit_strong(struct doca_gpu_dev_rdma *rdma)
{
	return doca_gpu_dev_rdma_commit_strong(rdma, 0);
}

__device__ static inline doca_error_t doca_gpu_dev_rdma_get_info(struct doca_gpu_dev_rdma *rdma, uint32_t *curr_position,
								 uint32_t *mask_max_position)
{
	return doca_gpu_dev_rdma_get_info(rdma, 0, curr_position, mask_max_position);
}

__device__ static inline doca_error_t doca_gpu_dev_rdma_recv_wait_all(struct doca_gpu_dev_rdma_r *rdma_r,
								      const enum doca_gpu_dev_rdma_recv_wait_flags flags,
								      uint32_t *num_ops, uint32_t *imm_val)
{
	return doca_gpu_dev_rdma_recv_wait_all(rdma_r, flags, num_ops, imm_val, (uint32_t *)0);
}

#endif /* DOCA_GPUNETIO_DEV_RDMA_CUH */
