/*
 * mlx5-dpa: GPUNetIO Verbs two-sided operations for CUDA kernels: send, and receive (posting a
 * receive WQE; wait for its data with doca_gpu_dev_verbs_recv_wait). Written for mlx5-dpa from
 * NVIDIA's public GPUNetIO API reference. The peer must have a receive posted before a send
 * arrives.
 */
#ifndef DOCA_GPUNETIO_DEV_VERBS_TWOSIDED_CUH
#define DOCA_GPUNETIO_DEV_VERBS_TWOSIDED_CUH

#include "doca_gpunetio_dev_verbs_onesided.cuh"

/* SEND of `size` bytes from `laddr`. */
template <enum doca_gpu_dev_verbs_resource_sharing_mode mode = DOCA_GPUNETIO_VERBS_RESOURCE_SHARING_MODE_GPU,
	  enum doca_gpu_dev_verbs_nic_handler nic_handler = DOCA_GPUNETIO_VERBS_NIC_HANDLER_AUTO,
	  enum doca_gpu_dev_verbs_exec_scope exec_scope = DOCA_GPUNETIO_VERBS_EXEC_SCOPE_THREAD>
__device__ static inline void doca_gpu_dev_verbs_send(struct doca_gpu_dev_verbs_qp *qp, struct doca_gpu_dev_verbs_addr laddr,
						       size_t size, doca_gpu_dev_verbs_ticket_t *out_ticket)
{
	struct doca_gpu_dev_verbs_addr none = {0, 0};
	doca_priv_gpu_dev_verbs_op<DOCA_PRIV_VERBS_SEND, mode, nic_handler, exec_scope>(qp, none, laddr, size, none, none, 0,
										       out_ticket);
}

/* Posts one receive of at most `size` bytes into `laddr` and submits it; its ticket. */
template <enum doca_gpu_dev_verbs_resource_sharing_mode mode = DOCA_GPUNETIO_VERBS_RESOURCE_SHARING_MODE_GPU,
	  enum doca_gpu_dev_verbs_nic_handler nic_handler = DOCA_GPUNETIO_VERBS_NIC_HANDLER_AUTO>
__device__ static inline void doca_gpu_dev_verbs_recv(struct doca_gpu_dev_verbs_qp *qp, struct doca_gpu_dev_verbs_addr laddr,
						       size_t size, doca_gpu_dev_verbs_ticket_t *out_ticket)
{
	const enum doca_gpu_dev_eth_resource_sharing_mode m = (enum doca_gpu_dev_eth_resource_sharing_mode)mode;
	uint64_t idx = doca_gpu_dev_eth_atomic_add<m>(&qp->rq_rsvd_index, 1);
	doca_gpu_dev_verbs_wqe_prepare_recv(qp, idx, laddr, (uint32_t)size);
	/* Receives are published in order: wait for the ones before this. */
	if (mode != DOCA_GPUNETIO_VERBS_RESOURCE_SHARING_MODE_EXCLUSIVE) {
		__threadfence();
		while (DOCA_GPUNETIO_VOLATILE(qp->rq_wqe_pi) != idx)
			;
	}
	doca_gpu_dev_verbs_submit<mode, DOCA_GPUNETIO_VERBS_SYNC_SCOPE_GPU, nic_handler, DOCA_GPUNETIO_VERBS_QP_RQ>(qp, idx + 1);
	if (out_ticket)
		*out_ticket = idx;
}

#endif /* DOCA_GPUNETIO_DEV_VERBS_TWOSIDED_CUH */
