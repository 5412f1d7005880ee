/* mlx5-dpa: a GPUNetIO kernel of examples/gpunetio.rs (NVRTC on a GPU; clang checks it as CUDA
 * device code in tests/driver/gpu_headers.rs). */
#include "doca_gpunetio_dev_eth_rxq.cuh"
#include "doca_gpunetio_dev_sem.cuh"

struct rx_info {
	uint32_t packets;
	uint32_t reserved;
	unsigned long long byte_sum;
};

/* One thread receives in batches and reports each through the next semaphore item. */
extern "C" __global__ void receive(uint64_t rxq_addr, uint64_t sem_addr, uint64_t total, uint64_t status_addr)
{
	struct doca_gpu_eth_rxq *rxq = (struct doca_gpu_eth_rxq *)rxq_addr;
	const struct doca_gpu_semaphore_gpu *sem = (const struct doca_gpu_semaphore_gpu *)sem_addr;
	int *status = (int *)status_addr;
	struct doca_gpu_dev_eth_rxq_attr attr[32];
	uint64_t got = 0, start = doca_gpu_dev_eth_now_ns();
	uint32_t idx = 0;
	while (got < total) {
		if (doca_gpu_dev_eth_now_ns() - start > 60000000000ull) {
			*status = DOCA_ERROR_TIME_OUT;
			return;
		}
		volatile uint64_t first = 0;
		uint32_t n = 0;
		doca_error_t r = doca_gpu_dev_eth_rxq_recv<DOCA_GPUNETIO_ETH_EXEC_SCOPE_THREAD, DOCA_GPUNETIO_ETH_MCST_DISABLED,
							   DOCA_GPUNETIO_ETH_NIC_HANDLER_AUTO, true>(rxq, 32, 100000, &first, &n, attr);
		if (r != DOCA_SUCCESS) {
			*status = (int)r;
			return;
		}
		if (n == 0)
			continue;
		enum doca_gpu_semaphore_status st = DOCA_GPU_SEMAPHORE_STATUS_HOLD;
		while (doca_gpu_dev_semaphore_get_status(sem, idx, &st) == DOCA_SUCCESS && st != DOCA_GPU_SEMAPHORE_STATUS_FREE)
			if (doca_gpu_dev_eth_now_ns() - start > 60000000000ull) {
				*status = DOCA_ERROR_TIME_OUT;
				return;
			}
		struct rx_info *info = 0;
		doca_gpu_dev_semaphore_get_custom_info_addr(sem, idx, (void **)&info);
		unsigned long long sum = 0;
		for (uint32_t i = 0; i < n; i++) {
			const uint8_t *p = (const uint8_t *)doca_gpu_dev_eth_rxq_get_pkt_addr(rxq, first + i);
			for (uint32_t b = 0; b < attr[i].bytes; b++)
				sum += p[b];
		}
		info->packets = n;
		info->byte_sum = sum;
		doca_gpu_dev_semaphore_set_packet_info(sem, idx, DOCA_GPU_SEMAPHORE_STATUS_READY, n, first);
		idx = (idx + 1) % sem->num_items;
		got += n;
	}
	*status = 0;
}
