/*
 * mlx5-dpa: GPUNetIO Verbs one-sided operations for CUDA kernels, sharing a QP among threads:
 * put (RDMA WRITE), put with a signal (an atomic fetch-add after the write), signal alone,
 * get (RDMA READ). THREAD scope: each thread posts and submits; WARP scope (CUDA builds):
 * every lane posts, the first submits. Written for mlx5-dpa from NVIDIA's public GPUNetIO API
 * reference. The returned ticket is the last WQE's index: wait for it with
 * doca_gpu_dev_verbs_wait.
 */
#ifndef DOCA_GPUNETIO_DEV_VERBS_ONESIDED_CUH
#define DOCA_GPUNETIO_DEV_VERBS_ONESIDED_CUH

#include "doca_gpunetio_dev_verbs_cq.cuh"

/* The operations one reservation covers, by kind. */
enum doca_priv_gpu_dev_verbs_op {
	DOCA_PRIV_VERBS_PUT,
	DOCA_PRIV_VERBS_PUT_SIGNAL,
	DOCA_PRIV_VERBS_SIGNAL,
	DOCA_PRIV_VERBS_GET,
	DOCA_PRIV_VERBS_SEND,
};

/* Writes the WQEs of one operation from slot `idx` on; returns how many. */
template <enum doca_priv_gpu_dev_verbs_op op>
__device__ static __forceinline__ uint32_t doca_priv_gpu_dev_verbs_post(struct doca_gpu_dev_verbs_qp *qp, uint64_t idx,
								      struct doca_gpu_dev_verbs_addr raddr,
								      struct doca_gpu_dev_verbs_addr laddr, size_t size,
								      struct doca_gpu_dev_verbs_addr sig_raddr,
								      struct doca_gpu_dev_verbs_addr sig_laddr,
								      uint64_t sig_val)
{
	uint64_t w = (uint64_t)(uintptr_t)doca_gpu_dev_verbs_get_wqe_ptr(qp, idx);
	switch (op) {
	case DOCA_PRIV_VERBS_PUT:
		doca_gpu_dev_verbs_wqe_prepare_write(qp, w, (uint16_t)idx, raddr, laddr, (uint32_t)size);
		return 1;
	case DOCA_PRIV_VERBS_PUT_SIGNAL:
		doca_gpu_dev_verbs_wqe_prepare_write(qp, w, (uint16_t)idx, raddr, laddr, (uint32_t)size);
		doca_gpu_dev_verbs_wqe_prepare_atomic(qp, (uint64_t)(uintptr_t)doca_gpu_dev_verbs_get_wqe_ptr(qp, idx + 1), (uint16_t)(idx + 1),
						      sig_raddr, sig_laddr, sig_val);
		return 2;
	case DOCA_PRIV_VERBS_SIGNAL:
		doca_gpu_dev_verbs_wqe_prepare_atomic(qp, w, (uint16_t)idx, sig_raddr, sig_laddr, sig_val);
		return 1;
	case DOCA_PRIV_VERBS_GET:
		doca_gpu_dev_verbs_wqe_prepare_read(qp, w, (uint16_t)idx, raddr, laddr, (uint32_t)size);
		return 1;
	default:
		doca_gpu_dev_verbs_wqe_prepare_send(qp, w, (uint16_t)idx, laddr, (uint32_t)size);
		return 1;
	}
}

/* Reserves, writes, marks ready and submits one operation at `exec_scope`; its ticket. */
template <enum doca_priv_gpu_dev_verbs_op op, enum doca_gpu_dev_verbs_resource_sharing_mode mode,
	  enum doca_gpu_dev_verbs_nic_handler nic_handler, enum doca_gpu_dev_verbs_exec_scope exec_scope>
__device__ static inline void doca_priv_gpu_dev_verbs_op(struct doca_gpu_dev_verbs_qp *qp,
							  struct doca_gpu_dev_verbs_addr raddr,
							  struct doca_gpu_dev_verbs_addr laddr, size_t size,
							  struct doca_gpu_dev_verbs_addr sig_raddr,
							  struct doca_gpu_dev_verbs_addr sig_laddr, uint64_t sig_val,
							  doca_gpu_dev_verbs_ticket_t *out_ticket)
{
	const uint32_t per = op == DOCA_PRIV_VERBS_PUT_SIGNAL ? 2 : 1;
	if (exec_scope == DOCA_GPUNETIO_VERBS_EXEC_SCOPE_THREAD) {
		uint64_t idx = doca_gpu_dev_verbs_reserve_wq_slots<mode>(qp, per);
		doca_priv_gpu_dev_verbs_post<op>(qp, idx, raddr, laddr, size, sig_raddr, sig_laddr, sig_val);
		doca_gpu_dev_verbs_mark_wqes_ready<mode>(qp, idx, idx + per - 1);
		doca_gpu_dev_verbs_submit<mode, DOCA_GPUNETIO_VERBS_SYNC_SCOPE_GPU, nic_handler>(qp, idx + per);
		if (out_ticket)
			*out_ticket = idx + per - 1;
		return;
	}
#if !defined(MLX5_GPUNETIO_HOST_BUILD)
	/* WARP: every lane writes its own WQEs; the put-signal's atomic is posted once, by the
	 * first lane, after all the writes. */
	unsigned mask = __activemask();
	unsigned lane = threadIdx.x % DOCA_GPUNETIO_ETH_WARP_SIZE;
	unsigned leader = __ffs(mask) - 1;
	unsigned n = __popc(mask);
	unsigned rank = __popc(mask & ((1u << lane) - 1));
	uint32_t total = op == DOCA_PRIV_VERBS_PUT_SIGNAL ? n + 1 : n;
	uint64_t base = 0;
	if (lane == leader)
		base = doca_gpu_dev_verbs_reserve_wq_slots<mode>(qp, total);
	base = __shfl_sync(mask, base, leader);
	uint64_t idx = base + rank;
	if (op == DOCA_PRIV_VERBS_PUT_SIGNAL) {
		doca_priv_gpu_dev_verbs_post<DOCA_PRIV_VERBS_PUT>(qp, idx, raddr, laddr, size, sig_raddr, sig_laddr, sig_val);
		if (lane == leader)
			doca_priv_gpu_dev_verbs_post<DOCA_PRIV_VERBS_SIGNAL>(qp, base + n, raddr, laddr, size, sig_raddr,
									     sig_laddr, sig_val);
	} else {
		doca_priv_gpu_dev_verbs_post<op>(qp, idx, raddr, laddr, size, sig_raddr, sig_laddr, sig_val);
	}
	__syncwarp(mask);
	if (lane == leader) {
		doca_gpu_dev_verbs_mark_wqes_ready<mode>(qp, base, base + total - 1);
		doca_gpu_dev_verbs_submit<mode, DOCA_GPUNETIO_VERBS_SYNC_SCOPE_GPU, nic_handler>(qp, base + total);
	}
	__syncwarp(mask);
	if (out_ticket)
		*out_ticket = op == DOCA_PRIV_VERBS_PUT_SIGNAL ? base + n : idx;
#endif
}

/* RDMA WRITE of `size` bytes from `laddr` to `raddr`. */
template <enum doca_gpu_dev_verbs_resource_sharing_mode mode = DOCA_GPUNETIO_VERBS_RESOURCE_SHARING_MODE_GPU,
	  enum doca_gpu_dev_verbs_nic_handler nic_handler = DOCA_GPUNETIO_VERBS_NIC_HANDLER_AUTO,
	  enum doca_gpu_dev_verbs_exec_scope exec_scope = DOCA_GPUNETIO_VERBS_EXEC_SCOPE_THREAD>
__device__ static inline void doca_gpu_dev_verbs_put(struct doca_gpu_dev_verbs_qp *qp, struct doca_gpu_dev_verbs_addr raddr,
						      struct doca_gpu_dev_verbs_addr laddr, size_t size,
						      doca_gpu_dev_verbs_ticket_t *out_ticket)
{
	struct doca_gpu_dev_verbs_addr none = {0, 0};
	doca_priv_gpu_dev_verbs_op<DOCA_PRIV_VERBS_PUT, mode, nic_handler, exec_scope>(qp, raddr, laddr, size, none, none, 0,
										       out_ticket);
}

/* A put, then an atomic add of `sig_val` to the peer's signal at `sig_raddr` (the old value to
 * `sig_laddr`): the peer sees the signal after the data. */
template <enum doca_gpu_dev_verbs_signal_op signal_op = DOCA_GPUNETIO_VERBS_SIGNAL_OP_ADD,
	  enum doca_gpu_dev_verbs_resource_sharing_mode mode = DOCA_GPUNETIO_VERBS_RESOURCE_SHARING_MODE_GPU,
	  enum doca_gpu_dev_verbs_nic_handler nic_handler = DOCA_GPUNETIO_VERBS_NIC_HANDLER_AUTO,
	  enum doca_gpu_dev_verbs_exec_scope exec_scope = DOCA_GPUNETIO_VERBS_EXEC_SCOPE_THREAD>
__device__ static inline void doca_gpu_dev_verbs_put_signal(struct doca_gpu_dev_verbs_qp *qp,
							     struct doca_gpu_dev_verbs_addr raddr,
							     struct doca_gpu_dev_verbs_addr laddr, size_t size,
							     struct doca_gpu_dev_verbs_addr sig_raddr,
							     struct doca_gpu_dev_verbs_addr sig_laddr, uint64_t sig_val,
							     doca_gpu_dev_verbs_ticket_t *out_ticket)
{
	doca_priv_gpu_dev_verbs_op<DOCA_PRIV_VERBS_PUT_SIGNAL, mode, nic_handler, exec_scope>(
		qp, raddr, laddr, size, sig_raddr, sig_laddr, sig_val, out_ticket);
}

/* The atomic add alone. */
template <enum doca_gpu_dev_verbs_signal_op signal_op = DOCA_GPUNETIO_VERBS_SIGNAL_OP_ADD,
	  enum doca_gpu_dev_verbs_resource_sharing_mode mode = DOCA_GPUNETIO_VERBS_RESOURCE_SHARING_MODE_GPU,
	  enum doca_gpu_dev_verbs_nic_handler nic_handler = DOCA_GPUNETIO_VERBS_NIC_HANDLER_AUTO>
__device__ static inline void doca_gpu_dev_verbs_signal(struct doca_gpu_dev_verbs_qp *qp,
							 struct doca_gpu_dev_verbs_addr sig_raddr,
							 struct doca_gpu_dev_verbs_addr sig_laddr, uint64_t sig_val,
							 doca_gpu_dev_verbs_ticket_t *out_ticket)
{
	struct doca_gpu_dev_verbs_addr none = {0, 0};
	doca_priv_gpu_dev_verbs_op<DOCA_PRIV_VERBS_SIGNAL, mode, nic_handler, DOCA_GPUNETIO_VERBS_EXEC_SCOPE_THREAD>(
		qp, none, none, 0, sig_raddr, sig_laddr, sig_val, out_ticket);
}

/* RDMA READ of `size` bytes from `raddr` into `laddr`. */
template <enum doca_gpu_dev_verbs_resource_sharing_mode mode = DOCA_GPUNETIO_VERBS_RESOURCE_SHARING_MODE_GPU,
	  enum doca_gpu_dev_verbs_nic_handler nic_handler = DOCA_GPUNETIO_VERBS_NIC_HANDLER_AUTO,
	  enum doca_gpu_dev_verbs_exec_scope exec_scope = DOCA_GPUNETIO_VERBS_EXEC_SCOPE_THREAD>
__device__ static inline void doca_gpu_dev_verbs_get(struct doca_gpu_dev_verbs_qp *qp, struct doca_gpu_dev_verbs_addr raddr,
						      struct doca_gpu_dev_verbs_addr laddr, size_t size,
						      doca_gpu_dev_verbs_ticket_t *out_ticket)
{
	struct doca_gpu_dev_verbs_addr none = {0, 0};
	doca_priv_gpu_dev_verbs_op<DOCA_PRIV_VERBS_GET, mode, nic_handler, exec_scope>(qp, raddr, laddr, size, none, none, 0,
										       out_ticket);
}

#endif /* DOCA_GPUNETIO_DEV_VERBS_ONESIDED_CUH */
