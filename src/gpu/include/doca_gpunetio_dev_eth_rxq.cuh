/*
 * mlx5-dpa: GPUNetIO Ethernet receive in CUDA kernels, as NVIDIA's public GPUNetIO API
 * reference describes it: `doca_gpu_dev_eth_rxq_recv` at thread, warp or block scope fills
 * the queue's strides in order, and `doca_gpu_dev_eth_rxq_get_pkt_addr` names a packet's.
 *
 * Written for mlx5-dpa. The host (mlx5_dpa::gpu::EthRxq) posts one receive WQE per stride of
 * the packet buffer, once; a receive consumes CQEs in order (packet k is in stride k modulo
 * the stride count) and hands the WQEs back by moving the receive counter, the buffers
 * unchanged. Not shared: one thread, warp or block per queue.
 */
#ifndef DOCA_GPUNETIO_DEV_ETH_RXQ_CUH
#define DOCA_GPUNETIO_DEV_ETH_RXQ_CUH

#include "doca_gpunetio_dev_eth_common.cuh"
#include "doca_gpunetio_dev_buf.cuh"

/* The address of packet `packet_idx` (its stride, modulo the buffer). */
__device__ static __forceinline__ uint64_t doca_gpu_dev_eth_rxq_get_pkt_addr(const struct doca_gpu_eth_rxq *rxq,
									   uint64_t packet_idx)
{
	return rxq->pkt_addr + (packet_idx % rxq->pkt_num) * rxq->max_pkt_sz;
}

/*
 * One thread's receive: up to `max_rx_pkts` packets, waiting at most `timeout_ns` for them
 * (0: until `max_rx_pkts` arrived, bounded by DOCA_GPUNETIO_ETH_POLL_TIMEOUT_NS). Fills
 * `out_attr[i]` when given. DOCA_ERROR_IO_FAILED on an error CQE (the packets before it are
 * received and counted).
 */
__device__ static inline doca_error_t doca_priv_gpu_dev_eth_rxq_recv(struct doca_gpu_eth_rxq *rxq,
								 uint32_t max_rx_pkts,
								 uint64_t timeout_ns,
								 uint64_t *out_first_pkt_idx,
								 uint32_t *out_pkt_num,
								 struct doca_gpu_dev_eth_rxq_attr *out_attr)
{
	uint64_t first = rxq->cqe_ci;
	uint64_t limit = timeout_ns ? timeout_ns : DOCA_GPUNETIO_ETH_POLL_TIMEOUT_NS;
	uint64_t start = doca_gpu_dev_eth_now_ns();
	uint32_t n = 0;
	doca_error_t r = DOCA_SUCCESS;
	for (uint64_t looks = 0; n < max_rx_pkts; looks++) {
		uint64_t idx = first + n;
		uint64_t cqe = rxq->cqe_addr + ((idx & rxq->cqe_mask) * DOCA_GPUNETIO_ETH_CQE_SIZE);
		uint8_t parity = (idx & rxq->cqe_num) ? 1 : 0;
		uint8_t op_own = *(volatile uint8_t *)(cqe + 63);
		uint8_t opcode = op_own >> DOCA_GPUNETIO_ETH_MLX5_CQE_OPCODE_SHIFT;
		if (opcode != DOCA_GPUNETIO_ETH_MLX5_CQE_INVALID && (op_own & 1) == parity) {
			__threadfence();
			if (opcode == DOCA_GPUNETIO_ETH_MLX5_CQE_RESP_ERR) {
				r = DOCA_ERROR_IO_FAILED;
				break;
			}
			uint32_t bytes = doca_gpu_dev_eth_bswap32(*(volatile uint32_t *)(cqe + 44));
			if (out_attr)
				out_attr[n].bytes = bytes;
			if (rxq->bufs) {
				/* The stride's DOCA 2.x buffer keeps what the CQE says of its packet. */
				struct doca_gpu_buf *b =
					(struct doca_gpu_buf *)(uintptr_t)(rxq->bufs + (idx % rxq->pkt_num) *
										  sizeof(struct doca_gpu_buf));
				b->bytes = bytes;
				b->timestamp = doca_gpu_dev_eth_bswap64(*(volatile uint64_t *)(cqe + 56));
			}
			n++;
			continue;
		}
		if ((looks & 255) == 0 && doca_gpu_dev_eth_now_ns() - start > limit)
			break;
	}
	if (n > 0) {
		/* The CQEs are consumed, and their WQEs (same strides) posted again. */
		rxq->cqe_ci = first + n;
		rxq->wqe_pi += n;
		doca_gpu_dev_eth_fence_nic();
		doca_gpu_dev_eth_store32(rxq->cq_db_rec,
					 doca_gpu_dev_eth_bswap32((uint32_t)(first + n) & DOCA_GPUNETIO_ETH_CQE_CI_MASK));
		doca_gpu_dev_eth_store32(rxq->wqe_db_rec,
					 doca_gpu_dev_eth_bswap32((uint32_t)rxq->wqe_pi & DOCA_GPUNETIO_ETH_WQE_PI_MASK));
	}
	*out_first_pkt_idx = first;
	*out_pkt_num = n;
	return r;
}

/*
 * Receives up to `max_rx_pkts` packets into the queue's strides, waiting at most `timeout_ns`.
 * `out_first_pkt_idx` / `out_pkt_num`: packets first .. first + num - 1 (for warp and block
 * scope in shared or global memory: every thread of the scope reads them). Only
 * DOCA_GPUNETIO_ETH_MCST_DISABLED; `enable_attributes` fills `out_attr` (packet sizes).
 */
template <enum doca_gpu_dev_eth_exec_scope exec_scope = DOCA_GPUNETIO_ETH_EXEC_SCOPE_THREAD,
	  enum doca_gpu_dev_eth_mcst_mode mcst_mode = DOCA_GPUNETIO_ETH_MCST_DISABLED,
	  enum doca_gpu_dev_eth_nic_handler nic_handler = DOCA_GPUNETIO_ETH_NIC_HANDLER_AUTO,
	  bool enable_attributes = false>
__device__ inline doca_error_t doca_gpu_dev_eth_rxq_recv(struct doca_gpu_eth_rxq *rxq,
							  uint32_t max_rx_pkts,
							  uint64_t timeout_ns,
							  volatile uint64_t *out_first_pkt_idx,
							  uint32_t *out_pkt_num,
							  struct doca_gpu_dev_eth_rxq_attr *out_attr)
{
	if (mcst_mode == DOCA_GPUNETIO_ETH_MCST_ENABLED)
		return DOCA_ERROR_NOT_SUPPORTED;
	struct doca_gpu_dev_eth_rxq_attr *attr = enable_attributes ? out_attr : (struct doca_gpu_dev_eth_rxq_attr *)0;
	if (exec_scope == DOCA_GPUNETIO_ETH_EXEC_SCOPE_THREAD) {
		uint64_t first = 0;
		doca_error_t r = doca_priv_gpu_dev_eth_rxq_recv(rxq, max_rx_pkts, timeout_ns, &first, out_pkt_num, attr);
		*out_first_pkt_idx = first;
		return r;
	}
#if !defined(MLX5_GPUNETIO_HOST_BUILD)
	/* One thread of the scope receives for all; the others wait for it. */
	bool leader;
	if (exec_scope == DOCA_GPUNETIO_ETH_EXEC_SCOPE_WARP)
		leader = (threadIdx.x % DOCA_GPUNETIO_ETH_WARP_SIZE) == (unsigned)(__ffs(__activemask()) - 1);
	else
		leader = threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0;
	__shared__ doca_error_t scope_result[32];
	unsigned slot = exec_scope == DOCA_GPUNETIO_ETH_EXEC_SCOPE_WARP ? (threadIdx.x / DOCA_GPUNETIO_ETH_WARP_SIZE) % 32 : 0;
	if (leader) {
		uint64_t first = 0;
		scope_result[slot] = doca_priv_gpu_dev_eth_rxq_recv(rxq, max_rx_pkts, timeout_ns, &first, out_pkt_num, attr);
		*out_first_pkt_idx = first;
		__threadfence_block();
	}
	if (exec_scope == DOCA_GPUNETIO_ETH_EXEC_SCOPE_WARP)
		__syncwarp();
	else
		__syncthreads();
	return scope_result[slot];
#else
	return DOCA_ERROR_NOT_SUPPORTED;
#endif
}

/*
 * DOCA 2.x's receive (the names and signatures of DOCA 2.x's doca_gpunetio_dev_eth_rxq.cuh):
 * per block, per warp or per thread, up to `max_rx_pkts` packets (0 for the block form: until
 * the timeout), waiting at most `timeout_ns` (0: until max_rx_pkts, bounded by
 * DOCA_GPUNETIO_ETH_POLL_TIMEOUT_NS). `doca_gpu_buf_idx`: the first packet's buffer index, for
 * doca_gpu_dev_eth_rxq_get_buf. Every thread of the scope calls it and reads the results.
 */
template <enum doca_gpu_dev_eth_exec_scope exec_scope>
__device__ static inline doca_error_t doca_priv_gpu_dev_eth_rxq_receive(struct doca_gpu_eth_rxq *eth_rxq,
									uint32_t max_rx_pkts, uint64_t timeout_ns,
									uint32_t *num_rx_pkts, uint64_t *doca_gpu_buf_idx)
{
	if (max_rx_pkts == 0 && timeout_ns == 0)
		return DOCA_ERROR_INVALID_VALUE;
	uint32_t max = max_rx_pkts ? max_rx_pkts : (uint32_t)eth_rxq->pkt_num;
	if (exec_scope == DOCA_GPUNETIO_ETH_EXEC_SCOPE_THREAD) {
		volatile uint64_t first = 0;
		doca_error_t r = doca_gpu_dev_eth_rxq_recv<exec_scope>(eth_rxq, max, timeout_ns, &first, num_rx_pkts,
									 (struct doca_gpu_dev_eth_rxq_attr *)0);
		*doca_gpu_buf_idx = first;
		return r;
	}
#if !defined(MLX5_GPUNETIO_HOST_BUILD)
	/* The scope's leader receives: its first index reaches the others through shared memory
	 * (the count through `num_rx_pkts`, which the caller shares). */
	__shared__ volatile uint64_t scope_first[32];
	unsigned slot = exec_scope == DOCA_GPUNETIO_ETH_EXEC_SCOPE_WARP ? (threadIdx.x / DOCA_GPUNETIO_ETH_WARP_SIZE) % 32 : 0;
	doca_error_t r = doca_gpu_dev_eth_rxq_recv<exec_scope>(eth_rxq, max, timeout_ns, &scope_first[slot], num_rx_pkts,
								 (struct doca_gpu_dev_eth_rxq_attr *)0);
	*doca_gpu_buf_idx = scope_first[slot];
	return r;
#else
	return DOCA_ERROR_NOT_SUPPORTED;
#endif
}

__device__ static inline doca_error_t doca_gpu_dev_eth_rxq_receive_block(struct doca_gpu_eth_rxq *eth_rxq,
									 uint32_t max_rx_pkts, uint64_t timeout_ns,
									 uint32_t *num_rx_pkts, uint64_t *doca_gpu_buf_idx)
{
	return doca_priv_gpu_dev_eth_rxq_receive<DOCA_GPUNETIO_ETH_EXEC_SCOPE_BLOCK>(eth_rxq, max_rx_pkts, timeout_ns,
										    num_rx_pkts, doca_gpu_buf_idx);
}

__device__ static inline doca_error_t doca_gpu_dev_eth_rxq_receive_warp(struct doca_gpu_eth_rxq *eth_rxq,
									uint32_t max_rx_pkts, uint64_t timeout_ns,
									uint32_t *num_rx_pkts, uint64_t *doca_gpu_buf_idx)
{
	if (max_rx_pkts == 0)
		return DOCA_ERROR_INVALID_VALUE;
	return doca_priv_gpu_dev_eth_rxq_receive<DOCA_GPUNETIO_ETH_EXEC_SCOPE_WARP>(eth_rxq, max_rx_pkts, timeout_ns,
										   num_rx_pkts, doca_gpu_buf_idx);
}

__device__ static inline doca_error_t doca_gpu_dev_eth_rxq_receive_thread(struct doca_gpu_eth_rxq *eth_rxq,
									  uint32_t max_rx_pkts, uint64_t timeout_ns,
									  uint32_t *num_rx_pkts, uint64_t *doca_gpu_buf_idx)
{
	if (max_rx_pkts == 0)
		return DOCA_ERROR_INVALID_VALUE;
	return doca_priv_gpu_dev_eth_rxq_receive<DOCA_GPUNETIO_ETH_EXEC_SCOPE_THREAD>(eth_rxq, max_rx_pkts, timeout_ns,
										     num_rx_pkts, doca_gpu_buf_idx);
}

/* The buffer (stride) of packet `doca_gpu_buf_idx`. Its data holds until the stride is reused. */
__device__ static __forceinline__ doca_error_t doca_gpu_dev_eth_rxq_get_buf(struct doca_gpu_eth_rxq *eth_rxq,
									   uint64_t doca_gpu_buf_idx, struct doca_gpu_buf **buf)
{
	*buf = (struct doca_gpu_buf *)(uintptr_t)(eth_rxq->bufs + (doca_gpu_buf_idx % eth_rxq->pkt_num) *
									sizeof(struct doca_gpu_buf));
	return DOCA_SUCCESS;
}

/* The length the receive recorded for packet `doca_gpu_buf_idx`. */
__device__ static __forceinline__ void doca_gpu_dev_eth_rxq_get_buf_bytes(const struct doca_gpu_eth_rxq *eth_rxq,
									  uint64_t doca_gpu_buf_idx, uint32_t *nbytes)
{
	*nbytes = ((const struct doca_gpu_buf *)(uintptr_t)(eth_rxq->bufs + (doca_gpu_buf_idx % eth_rxq->pkt_num) *
										      sizeof(struct doca_gpu_buf)))
			  ->bytes;
}

/* The timestamp of packet `doca_gpu_buf_idx` (its CQE's; 0 where the NIC stamps none). */
__device__ static __forceinline__ void doca_gpu_dev_eth_rxq_get_buf_timestamp(const struct doca_gpu_eth_rxq *eth_rxq,
									      uint64_t doca_gpu_buf_idx,
									      uint64_t *timestamp_ns)
{
	*timestamp_ns = ((const struct doca_gpu_buf *)(uintptr_t)(eth_rxq->bufs + (doca_gpu_buf_idx % eth_rxq->pkt_num) *
											  sizeof(struct doca_gpu_buf)))
				->timestamp;
}

#endif /* DOCA_GPUNETIO_DEV_ETH_RXQ_CUH */
