/*
 * mlx5-dpa: GPUNetIO Verbs completion polling for CUDA kernels. Written for mlx5-dpa from
 * NVIDIA's public GPUNetIO API reference. Waits are bounded (DOCA_GPUNETIO_ETH_POLL_TIMEOUT_NS).
 */
#ifndef DOCA_GPUNETIO_DEV_VERBS_CQ_CUH
#define DOCA_GPUNETIO_DEV_VERBS_CQ_CUH

#include "doca_gpunetio_dev_verbs_qp.cuh"

/* One look at the CQE of ticket `cqe_idx` on the send (SQ) or receive (RQ) CQ. */
template <enum doca_gpu_dev_verbs_qp_type qp_type = DOCA_GPUNETIO_VERBS_QP_SQ>
__device__ static __forceinline__ doca_error_t doca_gpu_dev_verbs_poll_cq_at(const struct doca_gpu_dev_verbs_qp *qp,
									     uint64_t cqe_idx)
{
	return doca_gpu_dev_verbs_poll_one_cq_at(qp_type == DOCA_GPUNETIO_VERBS_QP_SQ ? &qp->cq_sq : &qp->cq_rq, cqe_idx,
						 (uint32_t *)0);
}

/* Waits for the send operation of `ticket` to complete (its CQE), consuming the CQEs up to it. */
template <enum doca_gpu_dev_verbs_resource_sharing_mode mode = DOCA_GPUNETIO_VERBS_RESOURCE_SHARING_MODE_GPU,
	  enum doca_gpu_dev_verbs_nic_handler nic_handler = DOCA_GPUNETIO_VERBS_NIC_HANDLER_AUTO>
__device__ static inline doca_error_t doca_gpu_dev_verbs_wait(struct doca_gpu_dev_verbs_qp *qp,
							       doca_gpu_dev_verbs_ticket_t ticket)
{
	return doca_priv_gpu_dev_verbs_cq_wait<mode>(&qp->cq_sq, ticket, (uint32_t *)0);
}

/* Waits for the receive of `ticket` (its CQE); `bytes`: what arrived. */
template <enum doca_gpu_dev_verbs_resource_sharing_mode mode = DOCA_GPUNETIO_VERBS_RESOURCE_SHARING_MODE_GPU>
__device__ static inline doca_error_t doca_gpu_dev_verbs_recv_wait(struct doca_gpu_dev_verbs_qp *qp,
								    doca_gpu_dev_verbs_ticket_t ticket, uint32_t *bytes)
{
	return doca_priv_gpu_dev_verbs_cq_wait<mode>(&qp->cq_rq, ticket, bytes);
}

/* The send queue's and the receive queue's CQ of a QP. */
__device__ static __forceinline__ struct doca_gpu_dev_verbs_cq *doca_gpu_dev_verbs_qp_get_cq_sq(struct doca_gpu_dev_verbs_qp *qp)
{
	return &qp->cq_sq;
}
__device__ static __forceinline__ struct doca_gpu_dev_verbs_cq *doca_gpu_dev_verbs_qp_get_cq_rq(struct doca_gpu_dev_verbs_qp *qp)
{
	return &qp->cq_rq;
}

/* -EIO and -ETIMEDOUT (Linux errno values), what the public CQ polls return. */
#define MLX5_DPA_GPUNETIO_EIO 5
#define MLX5_DPA_GPUNETIO_ETIMEDOUT 110

/*
 * The public form: waits for CQE `cons_index` of `cq` and consumes the CQEs up to it; 0, or
 * -EIO for an error completion. Bounded (DOCA_GPUNETIO_ETH_POLL_TIMEOUT_NS): -ETIMEDOUT when the
 * CQE did not come.
 */
template <enum doca_gpu_dev_verbs_resource_sharing_mode mode = DOCA_GPUNETIO_VERBS_RESOURCE_SHARING_MODE_GPU,
	  enum doca_gpu_dev_verbs_qp_type qp_type = DOCA_GPUNETIO_VERBS_QP_SQ>
__device__ static inline int doca_gpu_dev_verbs_poll_cq_at(struct doca_gpu_dev_verbs_cq *cq, uint64_t cons_index)
{
	doca_error_t r = doca_priv_gpu_dev_verbs_cq_wait<mode>(cq, cons_index, (uint32_t *)0);
	if (r == DOCA_SUCCESS)
		return 0;
	return r == DOCA_ERROR_TIME_OUT ? -MLX5_DPA_GPUNETIO_ETIMEDOUT : -MLX5_DPA_GPUNETIO_EIO;
}

/*
 * As doca_gpu_dev_verbs_poll_cq_at on the QP's send CQ, for a collapsed one (one entry that
 * every completion rewrites, exported from a CQ created collapsed: CqConfig::collapsed); on a
 * CQ that is not collapsed it waits the same way.
 */
template <enum doca_gpu_dev_verbs_resource_sharing_mode mode = DOCA_GPUNETIO_VERBS_RESOURCE_SHARING_MODE_GPU,
	  enum doca_gpu_dev_verbs_qp_type qp_type = DOCA_GPUNETIO_VERBS_QP_SQ>
__device__ static inline int doca_gpu_dev_verbs_poll_cq_collapsed_at(struct doca_gpu_dev_verbs_qp *qp,
								     uint64_t cons_index)
{
	return doca_gpu_dev_verbs_poll_cq_at<mode, qp_type>(&qp->cq_sq, cons_index);
}

#endif /* DOCA_GPUNETIO_DEV_VERBS_CQ_CUH */
