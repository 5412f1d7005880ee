/*
 * mlx5-dpa: DOCA 2.x's GPU buffer accessors for CUDA kernels (the names and signatures of DOCA
 * 2.x's doca_gpunetio_dev_buf.cuh; the implementation and text are this project's). A buffer
 * array comes from the host (mlx5_dpa::gpu::BufArr); a received packet's buffer from
 * doca_gpu_dev_eth_rxq_get_buf. As DOCA's, they check nothing.
 */
#ifndef DOCA_GPUNETIO_DEV_BUF_CUH
#define DOCA_GPUNETIO_DEV_BUF_CUH

#include "doca_gpunetio_dev_eth_common.cuh"

/* Buffer `doca_gpu_buf_idx` of the array. */
__device__ static __forceinline__ doca_error_t doca_gpu_dev_buf_get_buf(const struct doca_gpu_buf_arr *buf_arr_gpu,
								       uint64_t doca_gpu_buf_idx,
								       struct doca_gpu_buf **buf)
{
	*buf = (struct doca_gpu_buf *)(uintptr_t)(buf_arr_gpu->bufs + doca_gpu_buf_idx * sizeof(struct doca_gpu_buf));
	return DOCA_SUCCESS;
}

/* The buffer's address. */
__device__ static __forceinline__ doca_error_t doca_gpu_dev_buf_get_addr(const struct doca_gpu_buf *buf,
									uintptr_t *addr)
{
	*addr = (uintptr_t)buf->addr;
	return DOCA_SUCCESS;
}

/* The buffer's key (big-endian, as a WQE carries it). */
__device__ static __forceinline__ doca_error_t doca_gpu_dev_buf_get_mkey(const struct doca_gpu_buf *buf, uint32_t *mkey)
{
	*mkey = buf->mkey;
	return DOCA_SUCCESS;
}

#endif /* DOCA_GPUNETIO_DEV_BUF_CUH */
