/* mlx5-dpa: a GPUNetIO kernel of examples/gpunetio.rs (NVRTC on a GPU; clang checks it as CUDA
 * device code in tests/driver/gpu_headers.rs). */
#include "doca_gpunetio_dev_eth_txq.cuh"

extern "C" __global__ void send_frames(uint64_t txq_addr, uint64_t buf, uint64_t mkey_be, uint64_t stride,
				       uint64_t lens_addr, uint64_t n, uint64_t status_addr)
{
	struct doca_gpu_eth_txq *txq = (struct doca_gpu_eth_txq *)txq_addr;
	const uint32_t *lens = (const uint32_t *)lens_addr;
	int *status = (int *)status_addr;
	uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
	uint32_t step = gridDim.x * blockDim.x;
	uint32_t mine = 0;
	for (uint32_t i = t; i < n; i += step) {
		doca_gpu_dev_eth_txq_send(txq, buf + (uint64_t)i * stride, (uint32_t)mkey_be, lens[i],
					  DOCA_GPUNETIO_ETH_SEND_FLAG_NOTIFY, (doca_gpu_dev_eth_ticket_t *)0);
		mine++;
	}
	for (uint32_t done = 0; done < mine;) {
		uint32_t got = 0;
		doca_error_t r = doca_gpu_dev_eth_txq_poll_completion(txq, 1, DOCA_GPUNETIO_ETH_WAIT_FLAG_B, &got);
		if (r != DOCA_SUCCESS) {
			status[t] = (int)r;
			return;
		}
		done += got;
	}
	status[t] = 0;
}
