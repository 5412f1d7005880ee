/*
 * mlx5-dpa: DOCA 2.x's GPU DMA calls for CUDA kernels (the names and signatures of DOCA 2.x's
 * doca_gpunetio_dev_dma.cuh; the implementation and text are this project's). A DMA queue
 * comes from the host (mlx5_dpa::gpu::Dma): on mlx5 it is an RC QP connected to itself, and a
 * copy is an RDMA WRITE of it, so `struct doca_gpu_dma` is that QP's Verbs handle. The host
 * sees the copies complete (Dma::progress); kernels only enqueue and commit.
 */
#ifndef DOCA_GPUNETIO_DEV_DMA_CUH
#define DOCA_GPUNETIO_DEV_DMA_CUH

#include "doca_gpunetio_dev_buf.cuh"
#include "doca_gpunetio_dev_verbs_qp.cuh"

struct doca_gpu_dma {
	struct doca_gpu_dev_verbs_qp qp;
};

/*
 * Enqueues a copy of `length` bytes from `src_offset` of `src_buf` to `dst_offset` of `dst_buf`
 * (threads may enqueue at once; each takes the next slot). Nothing moves before
 * doca_gpu_dev_dma_commit. The destination's key must allow remote writes.
 */
__device__ static inline doca_error_t doca_gpu_dev_dma_memcpy(struct doca_gpu_dma *dma, struct doca_gpu_buf *src_buf,
							      uint64_t src_offset, struct doca_gpu_buf *dst_buf,
							      uint64_t dst_offset, size_t length)
{
	if (!dma || !src_buf || !dst_buf || length > 0x7fffffffu)
		return DOCA_ERROR_INVALID_VALUE;
	struct doca_gpu_dev_verbs_qp *qp = &dma->qp;
	/* The host consumes the completions (Dma::progress), so the kernel does not wait on them;
	 * the host's progress makes room. */
	uint64_t idx = doca_gpu_dev_verbs_reserve_wq_slots(qp, 1, DOCA_GPUNETIO_VERBS_GPU_CODE_OPT_SKIP_AVAILABILITY_CHECK);
	struct doca_gpu_dev_verbs_addr raddr = {dst_buf->addr + dst_offset, dst_buf->mkey};
	struct doca_gpu_dev_verbs_addr laddr = {src_buf->addr + src_offset, src_buf->mkey};
	doca_gpu_dev_verbs_wqe_prepare_write(qp, (uint64_t)(uintptr_t)doca_gpu_dev_verbs_get_wqe_ptr(qp, idx),
					     (uint16_t)idx, raddr, laddr, (uint32_t)length);
	doca_gpu_dev_verbs_mark_wqes_ready(qp, idx, idx);
	return DOCA_SUCCESS;
}

/* Hands the enqueued copies to the NIC (one thread at a time). */
__device__ static inline doca_error_t doca_gpu_dev_dma_commit(struct doca_gpu_dma *dma)
{
	if (!dma)
		return DOCA_ERROR_INVALID_VALUE;
	doca_gpu_dev_verbs_submit(&dma->qp, DOCA_GPUNETIO_VOLATILE(dma->qp.sq_ready_index));
	return DOCA_SUCCESS;
}

#endif /* DOCA_GPUNETIO_DEV_DMA_CUH */
