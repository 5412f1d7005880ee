/*
 * mlx5-dpa: DOCA 2.x's GPU DMA as 2.x kernels use it (written here; nothing copied), checked as
 * CUDA device code in tests/driver/gpu_headers.rs: each thread copies its buffer, one commits.
 */
#include "doca_gpunetio_dev_dma.cuh"

__global__ void dma_copy(struct doca_gpu_dma *dma, struct doca_gpu_buf_arr *src, struct doca_gpu_buf_arr *dst,
			 size_t size, int *status)
{
	struct doca_gpu_buf *s, *d;
	doca_gpu_dev_buf_get_buf(src, threadIdx.x, &s);
	doca_gpu_dev_buf_get_buf(dst, threadIdx.x, &d);
	status[threadIdx.x] = (int)doca_gpu_dev_dma_memcpy(dma, s, 0, d, 0, size);
	__syncthreads();
	if (threadIdx.x == 0)
		doca_gpu_dev_dma_commit(dma);
}
