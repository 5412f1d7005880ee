/*
 * mlx5-dpa: the public low-level Verbs calls as NVIDIA's example kernels use them
 * (NVIDIA-DOCA/gpunetio write_bw / write_lat / put_bw; written here, nothing copied), checked as
 * CUDA device code in tests/driver/gpu_headers.rs; tests/driver/gpu_cpu_runtime.rs launches
 * write_chunks on CPU threads against the model.
 */
#include "doca_gpunetio_dev_verbs_onesided.cuh"

/* One block: each thread writes its chunk; the last submits for all, then polls the last CQE. */
__global__ void write_chunks(struct doca_gpu_dev_verbs_qp *qp, uint32_t iters, uint32_t size, uint8_t *src,
			     uint32_t src_mkey, uint8_t *dst, uint32_t dst_mkey, int *status)
{
	uint64_t wqe_idx =
		doca_gpu_dev_verbs_atomic_read<uint64_t, DOCA_GPUNETIO_VERBS_RESOURCE_SHARING_MODE_GPU>(&qp->sq_wqe_pi) +
		threadIdx.x;
	uint64_t start = doca_gpu_dev_verbs_query_globaltimer();

	for (uint32_t i = threadIdx.x; i < iters; i += blockDim.x) {
		struct doca_gpu_dev_verbs_wqe *w = doca_gpu_dev_verbs_get_wqe_ptr(qp, wqe_idx);
		doca_gpu_dev_verbs_wqe_prepare_write(qp, w, (uint16_t)wqe_idx, DOCA_GPUNETIO_MLX5_OPCODE_RDMA_WRITE,
						     DOCA_GPUNETIO_IB_MLX5_WQE_CTRL_CQ_UPDATE, 0,
						     (uint64_t)(dst + size * threadIdx.x), dst_mkey,
						     (uint64_t)(src + size * threadIdx.x), src_mkey, size);
		__syncthreads();
		if (threadIdx.x == blockDim.x - 1)
			doca_gpu_dev_verbs_submit<DOCA_GPUNETIO_VERBS_RESOURCE_SHARING_MODE_EXCLUSIVE>(
				qp, wqe_idx + 1, DOCA_GPUNETIO_VERBS_GPU_CODE_OPT_CPU_PROXY_UPDATE_PI);
		__syncthreads();
		wqe_idx += blockDim.x;
	}
	if (threadIdx.x == blockDim.x - 1 && doca_gpu_dev_verbs_get_lane_id() < DOCA_GPUNETIO_VERBS_WARP_SIZE)
		status[0] = doca_gpu_dev_verbs_poll_cq_at(doca_gpu_dev_verbs_qp_get_cq_sq(qp), wqe_idx - blockDim.x);
	if (threadIdx.x == 0)
		status[1] = (int)(doca_gpu_dev_verbs_query_globaltimer() - start);
}

/* Ping-pong latency's sender: a BlueFlame-form submit per write, the collapsed poll at the end. */
__global__ void ping_bf(struct doca_gpu_dev_verbs_qp *qp, uint32_t iters, uint64_t dst, uint32_t dst_mkey,
			uint64_t src, uint32_t src_mkey, uint32_t size, int *status)
{
	uint64_t wqe_idx =
		doca_gpu_dev_verbs_atomic_read<uint64_t, DOCA_GPUNETIO_VERBS_RESOURCE_SHARING_MODE_EXCLUSIVE>(&qp->sq_wqe_pi);
	for (uint32_t i = 0; i < iters; i++) {
		doca_gpu_dev_verbs_fence_acquire<DOCA_GPUNETIO_VERBS_SYNC_SCOPE_SYS>();
		struct doca_gpu_dev_verbs_wqe *w = doca_gpu_dev_verbs_get_wqe_ptr(qp, wqe_idx);
		doca_gpu_dev_verbs_wqe_prepare_write(qp, w, (uint16_t)wqe_idx, DOCA_GPUNETIO_MLX5_OPCODE_RDMA_WRITE,
						     DOCA_GPUNETIO_IB_MLX5_WQE_CTRL_CQ_UPDATE, 0, dst, dst_mkey, src,
						     src_mkey, size);
		doca_gpu_dev_verbs_submit_bf<DOCA_GPUNETIO_VERBS_RESOURCE_SHARING_MODE_EXCLUSIVE,
					     DOCA_GPUNETIO_VERBS_SYNC_SCOPE_GPU>(qp, wqe_idx + 1, w);
		wqe_idx++;
	}
	*status = doca_gpu_dev_verbs_poll_cq_collapsed_at(qp, wqe_idx - 1);
}

/* The byte swaps a kernel reads CQE fields with. */
__global__ void swaps(const uint16_t *in16, const uint32_t *in32, const uint64_t *in64, uint64_t *out)
{
	out[0] = DOCA_GPUNETIO_ETH_BSWAP16(*in16);
	out[1] = doca_gpu_dev_verbs_bswap16(*in16);
	out[2] = doca_gpu_dev_verbs_bswap32(*in32);
	out[3] = doca_gpu_dev_verbs_bswap64(*in64);
}

extern "C" {

/* The host's launch of write_chunks: one block of `threads` threads. */
int verbs_lowlevel_write_chunks(cudaStream_t stream, unsigned threads, struct doca_gpu_dev_verbs_qp *qp, uint32_t iters,
				uint32_t size, uint8_t *src, uint32_t src_mkey, uint8_t *dst, uint32_t dst_mkey,
				int *status)
{
	write_chunks<<<1, threads, 0, stream>>>(qp, iters, size, src, src_mkey, dst, dst_mkey, status);
	return (int)cudaGetLastError();
}

} /* extern "C" */
