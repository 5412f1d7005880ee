/*
 * mlx5-dpa: DOCA 2.x's buffer-based Ethernet API as 2.x kernels use it (written here; nothing
 * copied), checked as CUDA device code in tests/driver/gpu_headers.rs: a block receives, each
 * thread reads its packet's buffer, and echoes it back with the strong send pattern; a warp
 * sends from a buffer array with the weak pattern.
 */
#include "doca_gpunetio_dev_buf.cuh"
#include "doca_gpunetio_dev_eth_rxq.cuh"
#include "doca_gpunetio_dev_eth_txq.cuh"

__global__ void echo(struct doca_gpu_eth_rxq *rxq, struct doca_gpu_eth_txq *txq, uint32_t *exit_cond)
{
	__shared__ uint32_t rx_pkt_num;
	__shared__ uint64_t rx_buf_idx;

	while (DOCA_GPUNETIO_VOLATILE(*exit_cond) == 0) {
		doca_error_t ret = doca_gpu_dev_eth_rxq_receive_block(rxq, 32, 1000000, &rx_pkt_num, &rx_buf_idx);
		if (ret != DOCA_SUCCESS) {
			if (threadIdx.x == 0)
				DOCA_GPUNETIO_VOLATILE(*exit_cond) = 1;
			break;
		}
		for (uint32_t i = threadIdx.x; i < rx_pkt_num; i += blockDim.x) {
			struct doca_gpu_buf *buf;
			uintptr_t addr;
			uint32_t nbytes;
			uint64_t ts;
			doca_gpu_dev_eth_rxq_get_buf(rxq, rx_buf_idx + i, &buf);
			doca_gpu_dev_buf_get_addr(buf, &addr);
			doca_gpu_dev_eth_rxq_get_buf_bytes(rxq, rx_buf_idx + i, &nbytes);
			doca_gpu_dev_eth_rxq_get_buf_timestamp(rxq, rx_buf_idx + i, &ts);
			((uint8_t *)addr)[0] ^= 1;
			doca_gpu_dev_eth_txq_send_enqueue_strong(txq, buf, nbytes, DOCA_GPU_SEND_FLAG_NONE);
		}
		__syncthreads();
		if (threadIdx.x == 0 && rx_pkt_num > 0) {
			doca_gpu_dev_eth_txq_commit_strong(txq);
			doca_gpu_dev_eth_txq_push(txq);
		}
		__syncthreads();
	}
}

__global__ void send_weak(struct doca_gpu_eth_txq *txq, const struct doca_gpu_buf_arr *arr, uint32_t nbytes,
			  uint32_t *status)
{
	__shared__ uint32_t base, mask;
	if (threadIdx.x == 0)
		doca_gpu_dev_eth_txq_get_info(txq, &base, &mask);
	__syncthreads();
	struct doca_gpu_buf *buf;
	uint32_t mkey;
	doca_gpu_dev_buf_get_buf(arr, threadIdx.x, &buf);
	doca_gpu_dev_buf_get_mkey(buf, &mkey);
	doca_gpu_dev_eth_txq_send_enqueue_weak(txq, buf, nbytes, (base + threadIdx.x) & mask,
					       DOCA_GPU_SEND_FLAG_NOTIFY);
	__syncthreads();
	if (threadIdx.x == 0) {
		uint32_t done = 0;
		doca_gpu_dev_eth_txq_commit_weak(txq, blockDim.x);
		doca_gpu_dev_eth_txq_push(txq);
		*status = doca_gpu_dev_eth_txq_wait_completion(txq, blockDim.x, DOCA_GPU_ETH_TXQ_WAIT_FLAG_B, &done);
		status[1] = done;
	}
}
