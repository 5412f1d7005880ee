/*
 * mlx5-dpa: GPUNetIO semaphores in CUDA kernels, as NVIDIA's public GPUNetIO API reference
 * describes them: a ring of items, each a status, packet info (a count and a buffer index)
 * and an application-defined "custom info" block, through which a kernel and a CPU thread
 * (or two kernels) pass work: fill an item, then set it READY; the other side waits for
 * READY, reads, and sets DONE (or FREE).
 *
 * Written for mlx5-dpa. The host side is mlx5_dpa::gpu::Semaphore (items in host memory the
 * GPU reaches: DOCA_GPU_MEM_TYPE_CPU_GPU).
 */
#ifndef DOCA_GPUNETIO_DEV_SEM_CUH
#define DOCA_GPUNETIO_DEV_SEM_CUH

#include "doca_gpunetio_dev_eth_common.cuh"

__device__ static __forceinline__ struct doca_gpu_semaphore_item *
doca_priv_gpu_dev_semaphore_item(const struct doca_gpu_semaphore_gpu *sem, uint32_t idx)
{
	return (struct doca_gpu_semaphore_item *)(sem->items + (uint64_t)idx * sizeof(struct doca_gpu_semaphore_item));
}

/* Sets item `idx`'s status, after everything this thread wrote before (info included). */
__device__ static __forceinline__ doca_error_t doca_gpu_dev_semaphore_set_status(const struct doca_gpu_semaphore_gpu *sem,
										 uint32_t idx,
										 enum doca_gpu_semaphore_status status)
{
	if (idx >= sem->num_items)
		return DOCA_ERROR_INVALID_VALUE;
	__threadfence_system();
	DOCA_GPUNETIO_VOLATILE(doca_priv_gpu_dev_semaphore_item(sem, idx)->status) = (uint32_t)status;
	return DOCA_SUCCESS;
}

/* Item `idx`'s status. */
__device__ static __forceinline__ doca_error_t doca_gpu_dev_semaphore_get_status(const struct doca_gpu_semaphore_gpu *sem,
										 uint32_t idx,
										 enum doca_gpu_semaphore_status *status)
{
	if (idx >= sem->num_items || status == 0)
		return DOCA_ERROR_INVALID_VALUE;
	*status = (enum doca_gpu_semaphore_status)DOCA_GPUNETIO_VOLATILE(doca_priv_gpu_dev_semaphore_item(sem, idx)->status);
	__threadfence_system();
	return DOCA_SUCCESS;
}

/* Fills item `idx`'s packet info, then sets its status. */
__device__ static __forceinline__ doca_error_t doca_gpu_dev_semaphore_set_packet_info(const struct doca_gpu_semaphore_gpu *sem,
										      uint32_t idx,
										      enum doca_gpu_semaphore_status status,
										      uint32_t num_packets,
										      uint64_t doca_buf_idx)
{
	if (idx >= sem->num_items)
		return DOCA_ERROR_INVALID_VALUE;
	struct doca_gpu_semaphore_item *it = doca_priv_gpu_dev_semaphore_item(sem, idx);
	DOCA_GPUNETIO_VOLATILE(it->num_packets) = num_packets;
	DOCA_GPUNETIO_VOLATILE(it->doca_buf_idx) = doca_buf_idx;
	return doca_gpu_dev_semaphore_set_status(sem, idx, status);
}

/*
 * Item `idx`'s packet info if its status is `status` (DOCA_ERROR_NOT_FOUND otherwise: look
 * again later).
 */
__device__ static __forceinline__ doca_error_t
doca_gpu_dev_semaphore_get_packet_info_status(const struct doca_gpu_semaphore_gpu *sem,
					     uint32_t idx,
					     enum doca_gpu_semaphore_status status,
					     uint32_t *num_packets,
					     uint64_t *doca_buf_idx)
{
	enum doca_gpu_semaphore_status now;
	doca_error_t r = doca_gpu_dev_semaphore_get_status(sem, idx, &now);
	if (r != DOCA_SUCCESS)
		return r;
	if (now != status)
		return DOCA_ERROR_NOT_FOUND;
	struct doca_gpu_semaphore_item *it = doca_priv_gpu_dev_semaphore_item(sem, idx);
	*num_packets = DOCA_GPUNETIO_VOLATILE(it->num_packets);
	*doca_buf_idx = DOCA_GPUNETIO_VOLATILE(it->doca_buf_idx);
	return DOCA_SUCCESS;
}

/* The address of item `idx`'s custom info (DOCA_ERROR_NOT_FOUND when there is none). */
__device__ static __forceinline__ doca_error_t doca_gpu_dev_semaphore_get_custom_info_addr(
	const struct doca_gpu_semaphore_gpu *sem, uint32_t idx, void **custom_info)
{
	if (idx >= sem->num_items || custom_info == 0)
		return DOCA_ERROR_INVALID_VALUE;
	if (sem->custom_info == 0)
		return DOCA_ERROR_NOT_FOUND;
	*custom_info = (void *)(sem->custom_info + (uint64_t)idx * sem->custom_info_size);
	return DOCA_SUCCESS;
}

#endif /* DOCA_GPUNETIO_DEV_SEM_CUH */
