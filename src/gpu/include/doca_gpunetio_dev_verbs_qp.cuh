/*
 * mlx5-dpa: GPUNetIO Verbs QP functions for CUDA kernels: WQE preparation (write, read, send,
 * atomic fetch-add, receive), slot reservation, and doorbell submission for the send and
 * receive queues, through the doorbell register or the CPU proxy.
 *
 * Written for mlx5-dpa from NVIDIA's public GPUNetIO API reference; parameter lists are this
 * project's (plain addresses and big-endian keys). Every send WQE asks for a CQE and takes one
 * WQEBB, so WQE index k completes with CQE k: the ticket an operation returns is both.
 */
#ifndef DOCA_GPUNETIO_DEV_VERBS_QP_CUH
#define DOCA_GPUNETIO_DEV_VERBS_QP_CUH

#include "doca_gpunetio_dev_eth_common.cuh"
#include "doca_gpunetio_verbs_def.h"

/* Byte swaps, by the Verbs names of the public API. */
__device__ static __forceinline__ uint16_t doca_gpu_dev_verbs_bswap16(uint16_t x)
{
	return doca_gpu_dev_eth_bswap16(x);
}
__device__ static __forceinline__ uint32_t doca_gpu_dev_verbs_bswap32(uint32_t x)
{
	return doca_gpu_dev_eth_bswap32(x);
}
__device__ static __forceinline__ uint64_t doca_gpu_dev_verbs_bswap64(uint64_t x)
{
	return doca_gpu_dev_eth_bswap64(x);
}

/* Send WQE `wqe_idx` (modulo the ring). */
__device__ static __forceinline__ struct doca_gpu_dev_verbs_wqe *
doca_gpu_dev_verbs_get_wqe_ptr(const struct doca_gpu_dev_verbs_qp *qp, uint64_t wqe_idx)
{
	return (struct doca_gpu_dev_verbs_wqe *)(uintptr_t)(qp->sq_wqe_daddr + ((wqe_idx & qp->sq_wqe_mask) << 6));
}

/* The lane of the calling thread in its warp (0 for a CPU "kernel" thread of the host build). */
__device__ static __forceinline__ unsigned int doca_gpu_dev_verbs_get_lane_id(void)
{
#if defined(MLX5_GPUNETIO_HOST_BUILD)
	return 0;
#else
	unsigned int lane;
	asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
	return lane;
#endif
}

/* The GPU's global timer, in nanoseconds. */
__device__ static __forceinline__ uint64_t doca_gpu_dev_verbs_query_globaltimer(void)
{
	return doca_gpu_dev_eth_now_ns();
}

/* An acquire fence of `sync_scope`: later loads are not taken before earlier ones. */
template <enum doca_gpu_dev_verbs_sync_scope sync_scope = DOCA_GPUNETIO_VERBS_SYNC_SCOPE_GPU>
__device__ static __forceinline__ void doca_gpu_dev_verbs_fence_acquire(void)
{
	if (sync_scope == DOCA_GPUNETIO_VERBS_SYNC_SCOPE_CTA)
		__threadfence_block();
	else if (sync_scope == DOCA_GPUNETIO_VERBS_SYNC_SCOPE_GPU)
		__threadfence();
	else
		__threadfence_system();
}

/* A read of `*ptr` that other threads may be writing (a plain one when the resource is the
 * calling thread's alone), ordered before what the thread reads after it. */
template <typename T,
	  enum doca_gpu_dev_verbs_resource_sharing_mode mode = DOCA_GPUNETIO_VERBS_RESOURCE_SHARING_MODE_GPU>
__device__ static __forceinline__ T doca_gpu_dev_verbs_atomic_read(T *ptr)
{
	if (mode == DOCA_GPUNETIO_VERBS_RESOURCE_SHARING_MODE_EXCLUSIVE)
		return *ptr;
	T v = DOCA_GPUNETIO_VOLATILE(*ptr);
	doca_gpu_dev_verbs_fence_acquire<mode == DOCA_GPUNETIO_VERBS_RESOURCE_SHARING_MODE_CTA ?
						 DOCA_GPUNETIO_VERBS_SYNC_SCOPE_CTA :
						 DOCA_GPUNETIO_VERBS_SYNC_SCOPE_GPU>();
	return v;
}

/*
 * One look at CQE `cqe_idx` of `cq`: DOCA_SUCCESS when there (and not an error),
 * DOCA_ERROR_IO_FAILED for an error CQE, DOCA_ERROR_AGAIN when not yet. `bytes`: its byte
 * count, when given.
 *
 * A collapsed CQ (`cqe_num` 0: a send CQ created with the PRM's `cc`) has one entry, rewritten
 * with every completion: `cqe_idx` is done once the entry's `wqe_counter` reached it (a send
 * queue's completions come in order). Its byte counts are not kept.
 */
__device__ static __forceinline__ doca_error_t doca_gpu_dev_verbs_poll_one_cq_at(const struct doca_gpu_dev_verbs_cq *cq,
										 uint64_t cqe_idx, uint32_t *bytes)
{
	if (cq->cqe_num == 0) {
		/* wqe_counter (bytes 60-61, big-endian), signature, op_own: one load, one CQE. */
		uint32_t tail = *(volatile uint32_t *)(cq->cqe_daddr + 60);
		uint8_t opcode = (uint8_t)(tail >> 24) >> 4;
		uint16_t counter = (uint16_t)(((tail & 0xff) << 8) | ((tail >> 8) & 0xff));
		uint16_t ahead = (uint16_t)(counter - (uint16_t)cqe_idx);
		if (opcode == DOCA_GPUNETIO_ETH_MLX5_CQE_INVALID || ahead >= 0x8000)
			return DOCA_ERROR_AGAIN;
		__threadfence();
		bool error = opcode == DOCA_GPUNETIO_ETH_MLX5_CQE_REQ_ERR || opcode == DOCA_GPUNETIO_ETH_MLX5_CQE_RESP_ERR;
		/* An error after `cqe_idx` leaves it done. */
		return error && ahead == 0 ? DOCA_ERROR_IO_FAILED : DOCA_SUCCESS;
	}
	uint64_t cqe = cq->cqe_daddr + ((cqe_idx & cq->cqe_mask) << 6);
	uint8_t parity = (cqe_idx & cq->cqe_num) ? 1 : 0;
	uint8_t op_own = *(volatile uint8_t *)(cqe + 63);
	uint8_t opcode = op_own >> 4;
	if (opcode == DOCA_GPUNETIO_ETH_MLX5_CQE_INVALID || (op_own & 1) != parity)
		return DOCA_ERROR_AGAIN;
	__threadfence();
	if (opcode == DOCA_GPUNETIO_ETH_MLX5_CQE_REQ_ERR || opcode == DOCA_GPUNETIO_ETH_MLX5_CQE_RESP_ERR)
		return DOCA_ERROR_IO_FAILED;
	if (bytes)
		*bytes = doca_gpu_dev_eth_bswap32(*(volatile uint32_t *)(cqe + 44));
	return DOCA_SUCCESS;
}

/* Consumes CQEs up to `ci` (exclusive) of `cq`. */
template <enum doca_gpu_dev_verbs_resource_sharing_mode mode>
__device__ static __forceinline__ void doca_priv_gpu_dev_verbs_cq_release(struct doca_gpu_dev_verbs_cq *cq, uint64_t ci)
{
	const enum doca_gpu_dev_eth_resource_sharing_mode m = (enum doca_gpu_dev_eth_resource_sharing_mode)mode;
	doca_gpu_dev_eth_lock<m>(&cq->lock);
	uint64_t old = doca_gpu_dev_eth_atomic_max<m>(&cq->cqe_ci, ci);
	if (old < ci) {
		doca_gpu_dev_eth_fence_nic();
		doca_gpu_dev_eth_store32(cq->dbrec, doca_gpu_dev_eth_bswap32((uint32_t)ci & 0xffffff));
	}
	doca_gpu_dev_eth_unlock<m>(&cq->lock);
}

/*
 * Waits for CQE `idx` of `cq` and consumes the CQEs up to it.
 *
 * Threads sharing a send queue wait for their own tickets, each consuming up to its own CQE.
 * A thread that waits late may find its CQE consumed by another: once the consumer index
 * passes a CQE, the NIC may overwrite its slot (with the CQE one ring later). So a consumer
 * index past `idx` is an answer: consumers advance it only past a CQE that completed well,
 * and the completions of one send queue come in order, so every CQE before that one completed
 * well too. An error CQE is therefore not consumed (the queue pair is in error; its waiters
 * see their own error or flush CQEs). A receive wait (`bytes` given) needs its own CQE's byte
 * count: receive CQEs are not shared between waiting threads.
 */
template <enum doca_gpu_dev_verbs_resource_sharing_mode mode>
__device__ static inline doca_error_t doca_priv_gpu_dev_verbs_cq_wait(struct doca_gpu_dev_verbs_cq *cq, uint64_t idx,
								     uint32_t *bytes)
{
	uint64_t start = 0;
	for (uint64_t n = 0;; n++) {
		if (!bytes && DOCA_GPUNETIO_VOLATILE(cq->cqe_ci) > idx)
			return DOCA_SUCCESS;
		doca_error_t r = doca_gpu_dev_verbs_poll_one_cq_at(cq, idx, bytes);
		if (r == DOCA_SUCCESS) {
			doca_priv_gpu_dev_verbs_cq_release<mode>(cq, idx + 1);
			return r;
		}
		if (r != DOCA_ERROR_AGAIN)
			return r;
		if ((n & 255) == 0) {
			uint64_t now = doca_gpu_dev_eth_now_ns();
			if (n == 0)
				start = now;
			else if (now - start > DOCA_GPUNETIO_ETH_POLL_TIMEOUT_NS)
				return DOCA_ERROR_TIME_OUT;
		}
	}
}

/*
 * Reserves `count` send WQE slots; returns the first one's index. As NVIDIA's, it first waits
 * until the last of them is free, that is until the WQE one ring before it completed
 * (consuming the CQEs up to it), unless `code_opt` has
 * DOCA_GPUNETIO_VERBS_GPU_CODE_OPT_SKIP_AVAILABILITY_CHECK. The wait is bounded; when it ends
 * without the completion the queue is in error (as after an error completion).
 */
template <enum doca_gpu_dev_verbs_resource_sharing_mode mode = DOCA_GPUNETIO_VERBS_RESOURCE_SHARING_MODE_GPU>
__device__ static __forceinline__ uint64_t doca_gpu_dev_verbs_reserve_wq_slots(struct doca_gpu_dev_verbs_qp *qp,
									     uint32_t count,
									     uint32_t code_opt = DOCA_GPUNETIO_VERBS_GPU_CODE_OPT_DEFAULT)
{
	uint64_t idx = doca_gpu_dev_eth_atomic_add<(enum doca_gpu_dev_eth_resource_sharing_mode)mode>(&qp->sq_rsvd_index, count);
	uint64_t last = idx + count - 1, ring = (uint64_t)qp->sq_wqe_mask + 1;
	if (!(code_opt & DOCA_GPUNETIO_VERBS_GPU_CODE_OPT_SKIP_AVAILABILITY_CHECK) && count > 0 && last >= ring)
		(void)doca_priv_gpu_dev_verbs_cq_wait<mode>(&qp->cq_sq, last - ring, (uint32_t *)0);
	return idx;
}

/* Marks send WQEs `from` ..= `to` written, after the ones before them. */
template <enum doca_gpu_dev_verbs_resource_sharing_mode mode = DOCA_GPUNETIO_VERBS_RESOURCE_SHARING_MODE_GPU>
__device__ static __forceinline__ void doca_gpu_dev_verbs_mark_wqes_ready(struct doca_gpu_dev_verbs_qp *qp,
									  uint64_t from,
									  uint64_t to)
{
	if (mode == DOCA_GPUNETIO_VERBS_RESOURCE_SHARING_MODE_EXCLUSIVE) {
		qp->sq_ready_index = to + 1;
		return;
	}
	__threadfence();
	while (DOCA_GPUNETIO_VOLATILE(qp->sq_ready_index) != from)
		;
	__threadfence();
	DOCA_GPUNETIO_VOLATILE(qp->sq_ready_index) = to + 1;
}

/* The control segment of send WQE `idx`: `opcode`, `ds` 16-byte segments, a CQE always. */
__device__ static __forceinline__ void doca_priv_gpu_dev_verbs_ctrl(const struct doca_gpu_dev_verbs_qp *qp, uint64_t w,
								    uint16_t idx, uint32_t opcode, uint32_t ds)
{
	doca_gpu_dev_eth_store64(w, doca_gpu_dev_eth_pair(doca_gpu_dev_eth_bswap32(((uint32_t)idx << 8) | opcode),
							  doca_gpu_dev_eth_bswap32(qp->sq_num_shift8 | ds)));
	doca_gpu_dev_eth_store64(w + 8, (uint64_t)DOCA_GPUNETIO_ETH_CTRL_CQ_UPDATE << 24);
}

__device__ static __forceinline__ void doca_priv_gpu_dev_verbs_raddr(uint64_t at, uint64_t raddr, uint32_t rkey_be)
{
	doca_gpu_dev_eth_store64(at, doca_gpu_dev_eth_bswap64(raddr));
	doca_gpu_dev_eth_store64(at + 8, doca_gpu_dev_eth_pair(rkey_be, 0));
}

__device__ static __forceinline__ void doca_priv_gpu_dev_verbs_data(uint64_t at, uint64_t addr, uint32_t lkey_be,
								    uint32_t bytes)
{
	doca_gpu_dev_eth_store64(at, doca_gpu_dev_eth_pair(doca_gpu_dev_eth_bswap32(bytes), lkey_be));
	doca_gpu_dev_eth_store64(at + 8, doca_gpu_dev_eth_bswap64(addr));
}

/* An RDMA WRITE of `bytes` from `laddr` to the peer's `raddr`. */
__device__ static __forceinline__ void doca_gpu_dev_verbs_wqe_prepare_write(const struct doca_gpu_dev_verbs_qp *qp,
									    uint64_t wqe, uint16_t idx,
									    struct doca_gpu_dev_verbs_addr raddr,
									    struct doca_gpu_dev_verbs_addr laddr,
									    uint32_t bytes)
{
	doca_priv_gpu_dev_verbs_ctrl(qp, wqe, idx, DOCA_GPUNETIO_MLX5_OPCODE_RDMA_WRITE, 3);
	doca_priv_gpu_dev_verbs_raddr(wqe + 16, raddr.addr, raddr.key);
	doca_priv_gpu_dev_verbs_data(wqe + 32, laddr.addr, laddr.key, bytes);
}

/* An RDMA READ of `bytes` from the peer's `raddr` into `laddr`. */
__device__ static __forceinline__ void doca_gpu_dev_verbs_wqe_prepare_read(const struct doca_gpu_dev_verbs_qp *qp,
									   uint64_t wqe, uint16_t idx,
									   struct doca_gpu_dev_verbs_addr raddr,
									   struct doca_gpu_dev_verbs_addr laddr,
									   uint32_t bytes)
{
	doca_priv_gpu_dev_verbs_ctrl(qp, wqe, idx, DOCA_GPUNETIO_MLX5_OPCODE_RDMA_READ, 3);
	doca_priv_gpu_dev_verbs_raddr(wqe + 16, raddr.addr, raddr.key);
	doca_priv_gpu_dev_verbs_data(wqe + 32, laddr.addr, laddr.key, bytes);
}

/*
 * The public low-level form: an RDMA operation `opcode` (RDMA_WRITE, _WRITE_IMM, _READ) of
 * `bytes` between local `laddr` / `lkey` and the peer's `raddr` / `rkey` (keys byte-swapped, as
 * DOCA_GPUNETIO_VERBS_MKEY_SWAPPED says), in WQE `wqe_ptr` at index `wqe_idx`, with the control
 * flags `ctrl_flags` (e.g. DOCA_GPUNETIO_IB_MLX5_WQE_CTRL_CQ_UPDATE for a CQE) and `immediate`.
 */
__device__ static __forceinline__ void
doca_gpu_dev_verbs_wqe_prepare_write(struct doca_gpu_dev_verbs_qp *qp, struct doca_gpu_dev_verbs_wqe *wqe_ptr,
				     uint16_t wqe_idx, uint32_t opcode,
				     enum doca_gpu_dev_verbs_wqe_ctrl_flags ctrl_flags, uint32_t immediate,
				     uint64_t raddr, uint32_t rkey, uint64_t laddr, uint32_t lkey, uint32_t bytes)
{
	uint64_t w = (uint64_t)(uintptr_t)wqe_ptr;
	doca_gpu_dev_eth_store64(w, doca_gpu_dev_eth_pair(doca_gpu_dev_eth_bswap32(((uint32_t)wqe_idx << 8) | opcode),
							  doca_gpu_dev_eth_bswap32(qp->sq_num_shift8 | 3)));
	/* Bytes 8..15: signature, two reserved, fm_ce_se, the immediate. */
	doca_gpu_dev_eth_store64(w + 8, ((uint64_t)(uint8_t)ctrl_flags << 24) | ((uint64_t)immediate << 32));
	doca_priv_gpu_dev_verbs_raddr(w + 16, raddr, rkey);
	doca_priv_gpu_dev_verbs_data(w + 32, laddr, lkey, bytes);
}

/* A SEND of `bytes` from `laddr`. */
__device__ static __forceinline__ void doca_gpu_dev_verbs_wqe_prepare_send(const struct doca_gpu_dev_verbs_qp *qp,
									   uint64_t wqe, uint16_t idx,
									   struct doca_gpu_dev_verbs_addr laddr,
									   uint32_t bytes)
{
	doca_priv_gpu_dev_verbs_ctrl(qp, wqe, idx, DOCA_GPUNETIO_MLX5_OPCODE_SEND, 2);
	doca_priv_gpu_dev_verbs_data(wqe + 16, laddr.addr, laddr.key, bytes);
}

/* An atomic fetch-and-add of `add` on the peer's 8 bytes at `raddr`; the old value to `laddr`. */
__device__ static __forceinline__ void doca_gpu_dev_verbs_wqe_prepare_atomic(const struct doca_gpu_dev_verbs_qp *qp,
									     uint64_t wqe, uint16_t idx,
									     struct doca_gpu_dev_verbs_addr raddr,
									     struct doca_gpu_dev_verbs_addr laddr,
									     uint64_t add)
{
	doca_priv_gpu_dev_verbs_ctrl(qp, wqe, idx, DOCA_GPUNETIO_MLX5_OPCODE_ATOMIC_FA, 4);
	doca_priv_gpu_dev_verbs_raddr(wqe + 16, raddr.addr, raddr.key);
	doca_gpu_dev_eth_store64(wqe + 32, doca_gpu_dev_eth_bswap64(add));
	doca_gpu_dev_eth_store64(wqe + 40, 0);
	doca_priv_gpu_dev_verbs_data(wqe + 48, laddr.addr, laddr.key, 8);
}

/* Receive WQE `idx`: `bytes` into `laddr` (and the end of the scatter list after it). */
__device__ static __forceinline__ void doca_gpu_dev_verbs_wqe_prepare_recv(const struct doca_gpu_dev_verbs_qp *qp,
									   uint64_t idx,
									   struct doca_gpu_dev_verbs_addr laddr,
									   uint32_t bytes)
{
	uint64_t w = qp->rq_wqe_daddr + (idx & qp->rq_wqe_mask) * qp->rcv_wqe_size;
	doca_priv_gpu_dev_verbs_data(w, laddr.addr, laddr.key, bytes);
	if (qp->rcv_wqe_size > 16)
		doca_priv_gpu_dev_verbs_data(w + 16, 0, doca_gpu_dev_eth_bswap32(DOCA_GPUNETIO_MLX5_INVALID_LKEY), 0);
}

/*
 * Submits the WQEs before `prod_index` of the send queue (doorbell record, then the doorbell
 * register or the CPU proxy's slot, as `nic_handler` says; AUTO: as set up) or of the receive
 * queue (the record only). Threads may call it in parallel: the greatest index wins.
 */
template <enum doca_gpu_dev_verbs_resource_sharing_mode mode = DOCA_GPUNETIO_VERBS_RESOURCE_SHARING_MODE_GPU,
	  enum doca_gpu_dev_verbs_sync_scope sync_scope = DOCA_GPUNETIO_VERBS_SYNC_SCOPE_GPU,
	  enum doca_gpu_dev_verbs_nic_handler nic_handler = DOCA_GPUNETIO_VERBS_NIC_HANDLER_AUTO,
	  enum doca_gpu_dev_verbs_qp_type qp_type = DOCA_GPUNETIO_VERBS_QP_SQ>
__device__ static __forceinline__ void doca_gpu_dev_verbs_submit(struct doca_gpu_dev_verbs_qp *qp, uint64_t prod_index,
								uint32_t code_opt = DOCA_GPUNETIO_VERBS_GPU_CODE_OPT_DEFAULT)
{
	const enum doca_gpu_dev_eth_resource_sharing_mode m = (enum doca_gpu_dev_eth_resource_sharing_mode)mode;
	if (qp_type == DOCA_GPUNETIO_VERBS_QP_RQ) {
		doca_gpu_dev_eth_lock<m>(&qp->rq_lock);
		uint64_t old = doca_gpu_dev_eth_atomic_max<m>(&qp->rq_wqe_pi, prod_index);
		if (old < prod_index) {
			doca_gpu_dev_eth_fence_nic();
			doca_gpu_dev_eth_store32(qp->rq_dbrec, doca_gpu_dev_eth_bswap32((uint32_t)prod_index & 0xffff));
		}
		doca_gpu_dev_eth_unlock<m>(&qp->rq_lock);
		return;
	}
	uint32_t handler = nic_handler == DOCA_GPUNETIO_VERBS_NIC_HANDLER_AUTO ? qp->nic_handler : (uint32_t)nic_handler;
	doca_gpu_dev_eth_lock<m>(&qp->sq_lock);
	uint64_t old = doca_gpu_dev_eth_atomic_max<m>(&qp->sq_wqe_pi, prod_index);
	if (old < prod_index) {
		doca_gpu_dev_eth_fence_nic();
		doca_gpu_dev_eth_store32(qp->sq_dbrec, doca_gpu_dev_eth_bswap32((uint32_t)prod_index & 0xffff));
		doca_gpu_dev_eth_fence_nic();
		if (code_opt & DOCA_GPUNETIO_VERBS_GPU_CODE_OPT_SKIP_DB_RINGING)
			; /* the caller rings later (another submit) */
		else if (handler == DOCA_GPUNETIO_VERBS_NIC_HANDLER_CPU_PROXY)
			doca_gpu_dev_eth_store64(qp->cpu_proxy_db, prod_index);
		else
			doca_gpu_dev_eth_store64(
				qp->sq_db,
				doca_gpu_dev_eth_pair(doca_gpu_dev_eth_bswap32(((uint32_t)prod_index & 0xffff) << 8),
						      doca_gpu_dev_eth_bswap32(qp->sq_num_shift8)));
	}
	doca_gpu_dev_eth_unlock<m>(&qp->sq_lock);
}

/*
 * The BlueFlame submit: on a NIC, the WQE is written through the BlueFlame register as well.
 * The model maps no BlueFlame register to kernels, so this submits through the doorbell the QP
 * was exported with, as doca_gpu_dev_verbs_submit with AUTO does; the WQE (`wqe`, already in
 * the ring) reaches the NIC the same way.
 */
template <enum doca_gpu_dev_verbs_resource_sharing_mode mode = DOCA_GPUNETIO_VERBS_RESOURCE_SHARING_MODE_GPU,
	  enum doca_gpu_dev_verbs_sync_scope sync_scope = DOCA_GPUNETIO_VERBS_SYNC_SCOPE_GPU>
__device__ static __forceinline__ void doca_gpu_dev_verbs_submit_bf(struct doca_gpu_dev_verbs_qp *qp, uint64_t prod_index,
								   struct doca_gpu_dev_verbs_wqe *wqe,
								   uint32_t code_opt = DOCA_GPUNETIO_VERBS_GPU_CODE_OPT_DEFAULT)
{
	(void)wqe;
	doca_gpu_dev_verbs_submit<mode, sync_scope>(qp, prod_index, code_opt);
}

/* Submits two QPs' send queues in one call (e.g. a main QP and its companion). */
template <enum doca_gpu_dev_verbs_resource_sharing_mode mode = DOCA_GPUNETIO_VERBS_RESOURCE_SHARING_MODE_GPU,
	  enum doca_gpu_dev_verbs_sync_scope sync_scope = DOCA_GPUNETIO_VERBS_SYNC_SCOPE_GPU,
	  enum doca_gpu_dev_verbs_nic_handler nic_handler = DOCA_GPUNETIO_VERBS_NIC_HANDLER_AUTO>
__device__ static __forceinline__ void doca_gpu_dev_verbs_submit_multi_qps(struct doca_gpu_dev_verbs_qp *qp0,
									   uint64_t prod_index0,
									   struct doca_gpu_dev_verbs_qp *qp1,
									   uint64_t prod_index1)
{
	doca_gpu_dev_verbs_submit<mode, sync_scope, nic_handler>(qp0, prod_index0);
	doca_gpu_dev_verbs_submit<mode, sync_scope, nic_handler>(qp1, prod_index1);
}

#endif /* DOCA_GPUNETIO_DEV_VERBS_QP_CUH */
