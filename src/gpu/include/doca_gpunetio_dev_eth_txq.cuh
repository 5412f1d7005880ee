/*
 * mlx5-dpa: GPUNetIO Ethernet send from CUDA kernels, as NVIDIA's public GPUNetIO API
 * reference describes it: low-level (prepare a WQE, update the doorbell record, ring the
 * doorbell or hand it to the CPU proxy, poll completions) and the high-level send, which
 * shares a queue among threads.
 *
 * Written for mlx5-dpa; the WQE it writes is the driver's `EthSq::post_send` WQE byte for
 * byte (one WQEBB: control segment, Ethernet segment with the 18-byte L2 header inline, one
 * data segment for the rest), which the project's tests check on the device model.
 *
 * Waits are bounded: a blocking completion wait gives up with DOCA_ERROR_TIME_OUT after
 * DOCA_GPUNETIO_ETH_POLL_TIMEOUT_NS (10 s unless defined before the include), measured with
 * the GPU's global timer (the monotonic clock in host builds).
 */
#ifndef DOCA_GPUNETIO_DEV_ETH_TXQ_CUH
#define DOCA_GPUNETIO_DEV_ETH_TXQ_CUH

#include "doca_gpunetio_dev_eth_common.cuh"
#include "doca_gpunetio_dev_buf.cuh"

/* The WQE at index `wqe_idx` (modulo the ring). */
__device__ static __forceinline__ struct doca_gpu_dev_eth_txq_wqe *
doca_gpu_dev_eth_txq_get_wqe_ptr(const struct doca_gpu_eth_txq *txq, uint64_t wqe_idx)
{
	uint64_t slot = wqe_idx & txq->wqe_mask;
	return (struct doca_gpu_dev_eth_txq_wqe *)(txq->wqe_addr + (slot << DOCA_GPUNETIO_ETH_MLX5_WQE_SHIFT));
}

/* Reserves `count` WQE slots; returns the first one's index. */
template <enum doca_gpu_dev_eth_resource_sharing_mode resource_sharing_mode = DOCA_GPUNETIO_ETH_RESOURCE_SHARING_MODE_GPU>
__device__ static __forceinline__ uint64_t doca_gpu_dev_eth_txq_reserve_wq_slots(struct doca_gpu_eth_txq *txq,
										    uint32_t count)
{
	return doca_gpu_dev_eth_atomic_add<resource_sharing_mode>(&txq->sq_rsvd_index, count);
}

/*
 * Writes a send WQE at `wqe_ptr` (index `wqe_idx`): the frame of `nbytes` at `addr` (GPU
 * address; the first 18 bytes are read here and carried inline), `mkey` in network byte
 * order (as DOCA's samples pass it). DOCA_ERROR_INVALID_VALUE for frames under 18 bytes.
 */
__device__ __inline__ static doca_error_t doca_gpu_dev_eth_txq_wqe_prepare_send(const struct doca_gpu_eth_txq *txq,
									       struct doca_gpu_dev_eth_txq_wqe *wqe_ptr,
									       const uint16_t wqe_idx,
									       const uint64_t addr,
									       const uint32_t mkey,
									       const uint32_t nbytes,
									       const enum doca_gpu_eth_send_flags flags)
{
	if (nbytes < DOCA_GPUNETIO_ETH_L2_INLINE)
		return DOCA_ERROR_INVALID_VALUE;
	const uint8_t *hdr = (const uint8_t *)addr;
	uint64_t w = (uint64_t)wqe_ptr;
	uint32_t ce = (flags & DOCA_GPUNETIO_ETH_SEND_FLAG_NOTIFY) ? DOCA_GPUNETIO_ETH_CTRL_CQ_UPDATE
								    : DOCA_GPUNETIO_ETH_CTRL_CQ_FIRST_ERR;
	/* Control: opmod_idx_opcode, qpn_ds (4 segments), then signature, reserved, fm_ce_se, imm. */
	uint32_t idx_opcode = ((uint32_t)wqe_idx << DOCA_GPUNETIO_ETH_WQE_IDX_SHIFT) | DOCA_GPUNETIO_ETH_MLX5_OPCODE_SEND;
	uint32_t qpn_ds = txq->sq_num_shift8 | 4u;
	uint64_t ctrl0 = doca_gpu_dev_eth_pair(doca_gpu_dev_eth_bswap32(idx_opcode), doca_gpu_dev_eth_bswap32(qpn_ds));
	uint64_t ctrl1 = (uint64_t)ce << 24; /* byte 11 of the segment */
	/* Ethernet: checksum flags 0, inline_hdr_sz 18 (bytes 12..13), the header's first 2 bytes. */
	uint64_t eth1 = ((uint64_t)doca_gpu_dev_eth_bswap16(DOCA_GPUNETIO_ETH_L2_INLINE) << 32) |
			(doca_gpu_dev_eth_bytes(hdr, 2) << 48);
	/* The header's other 16 bytes, then the data segment for the rest of the frame. */
	uint64_t inl0 = doca_gpu_dev_eth_bytes(hdr + 2, 8);
	uint64_t inl1 = doca_gpu_dev_eth_bytes(hdr + 10, 8);
	uint64_t data0 = doca_gpu_dev_eth_pair(doca_gpu_dev_eth_bswap32(nbytes - DOCA_GPUNETIO_ETH_L2_INLINE), mkey);
	uint64_t data1 = doca_gpu_dev_eth_bswap64(addr + DOCA_GPUNETIO_ETH_L2_INLINE);
	doca_gpu_dev_eth_store64(w + 0, ctrl0);
	doca_gpu_dev_eth_store64(w + 8, ctrl1);
	doca_gpu_dev_eth_store64(w + 16, 0);
	doca_gpu_dev_eth_store64(w + 24, eth1);
	doca_gpu_dev_eth_store64(w + 32, inl0);
	doca_gpu_dev_eth_store64(w + 40, inl1);
	doca_gpu_dev_eth_store64(w + 48, data0);
	doca_gpu_dev_eth_store64(w + 56, data1);
	return DOCA_SUCCESS;
}

/* WAIT with opmod TIME (PRM; DPDK MLX5_OPCODE_WAIT, MLX5_OPC_MOD_WAIT_TIME): the send queue
 * stops at it until the NIC's real-time clock reaches its value. */
#define DOCA_GPUNETIO_ETH_MLX5_OPCODE_WAIT 0xf
#define DOCA_GPUNETIO_ETH_MLX5_OPC_MOD_WAIT_TIME 0x2
#define DOCA_GPUNETIO_ETH_NS_PER_S 1000000000ull
/* The wait segment's condition: go once the value is cyclically smaller than the clock (DPDK's
 * MLX5_WAIT_COND_CYCLIC_SMALLER, which it schedules sends with). */
#define MLX5_DPA_GPUNETIO_WAIT_COND_CYCLIC_SMALLER 5u

/*
 * Writes a wait-on-time WQE at `wqe_ptr` (index `wqe_idx`): the WQEs after it leave once the
 * NIC's real-time clock passed `wait_on_time_ts` (from doca_gpu_dev_eth_txq_calculate_timestamp).
 * A CQE when `flags` has NOTIFY (it counts as a notified send).
 */
__device__ __inline__ static doca_error_t doca_gpu_dev_eth_txq_wqe_prepare_wait_time(const struct doca_gpu_eth_txq *txq,
										    struct doca_gpu_dev_eth_txq_wqe *wqe_ptr,
										    const uint16_t wqe_idx,
										    const uint64_t wait_on_time_ts,
										    const enum doca_gpu_eth_send_flags flags)
{
	uint64_t w = (uint64_t)wqe_ptr;
	uint32_t ce = (flags & DOCA_GPUNETIO_ETH_SEND_FLAG_NOTIFY) ? DOCA_GPUNETIO_ETH_CTRL_CQ_UPDATE
								    : DOCA_GPUNETIO_ETH_CTRL_CQ_FIRST_ERR;
	uint32_t opmod_idx_opcode = ((uint32_t)DOCA_GPUNETIO_ETH_MLX5_OPC_MOD_WAIT_TIME << 24) |
				    ((uint32_t)wqe_idx << DOCA_GPUNETIO_ETH_WQE_IDX_SHIFT) | DOCA_GPUNETIO_ETH_MLX5_OPCODE_WAIT;
	/* Control (3 segments), then the wait segment: operation, lkey and address 0, the value
	 * (big-endian already), an all-ones mask. */
	doca_gpu_dev_eth_store64(w + 0, doca_gpu_dev_eth_pair(doca_gpu_dev_eth_bswap32(opmod_idx_opcode),
							      doca_gpu_dev_eth_bswap32(txq->sq_num_shift8 | 3u)));
	doca_gpu_dev_eth_store64(w + 8, (uint64_t)ce << 24);
	doca_gpu_dev_eth_store64(w + 16, doca_gpu_dev_eth_pair(doca_gpu_dev_eth_bswap32(MLX5_DPA_GPUNETIO_WAIT_COND_CYCLIC_SMALLER), 0));
	doca_gpu_dev_eth_store64(w + 24, 0);
	doca_gpu_dev_eth_store64(w + 32, wait_on_time_ts);
	doca_gpu_dev_eth_store64(w + 40, ~0ull);
	return DOCA_SUCCESS;
}

/* Marks WQEs `from_wqe_idx` ..= `to_wqe_idx` written: waits for the ones before them. */
template <enum doca_gpu_dev_eth_resource_sharing_mode resource_sharing_mode = DOCA_GPUNETIO_ETH_RESOURCE_SHARING_MODE_GPU>
__device__ static __forceinline__ void doca_gpu_dev_eth_txq_mark_wqes_ready(struct doca_gpu_eth_txq *txq,
									   uint64_t from_wqe_idx,
									   uint64_t to_wqe_idx)
{
	if (resource_sharing_mode == DOCA_GPUNETIO_ETH_RESOURCE_SHARING_MODE_EXCLUSIVE) {
		txq->sq_ready_index = to_wqe_idx + 1;
		return;
	}
	__threadfence();
	while (DOCA_GPUNETIO_VOLATILE(txq->sq_ready_index) != from_wqe_idx)
		;
	__threadfence();
	DOCA_GPUNETIO_VOLATILE(txq->sq_ready_index) = to_wqe_idx + 1;
}

/* Writes `prod_index` (16 bits, big-endian) to the doorbell record, after the WQEs. */
template <enum doca_gpu_dev_eth_sync_scope sync_scope = DOCA_GPUNETIO_ETH_SYNC_SCOPE_GPU>
__device__ static __forceinline__ void doca_gpu_dev_eth_txq_update_dbr(struct doca_gpu_eth_txq *txq, uint32_t prod_index)
{
	doca_gpu_dev_eth_fence_nic();
	doca_gpu_dev_eth_store32(txq->wqe_db_rec, doca_gpu_dev_eth_bswap32(prod_index & DOCA_GPUNETIO_ETH_WQE_PI_MASK));
}

/* The doorbell value for `prod_index`: a control segment's first 8 bytes with the index. */
__device__ static __forceinline__ uint64_t doca_gpu_dev_eth_txq_prepare_db(const struct doca_gpu_eth_txq *txq,
									 uint64_t prod_index)
{
	uint32_t idx = (uint32_t)(prod_index & DOCA_GPUNETIO_ETH_WQE_PI_MASK) << DOCA_GPUNETIO_ETH_WQE_IDX_SHIFT;
	return doca_gpu_dev_eth_pair(doca_gpu_dev_eth_bswap32(idx), doca_gpu_dev_eth_bswap32(txq->sq_num_shift8));
}

/* Rings the NIC's doorbell register from the GPU (GPU_SM_DB queues), after the record. */
template <enum doca_gpu_dev_eth_sync_scope sync_scope = DOCA_GPUNETIO_ETH_SYNC_SCOPE_GPU>
__device__ static __forceinline__ void doca_gpu_dev_eth_txq_ring_db(struct doca_gpu_eth_txq *txq, uint64_t prod_index)
{
	doca_gpu_dev_eth_fence_nic();
	doca_gpu_dev_eth_store64(txq->wqe_db, doca_gpu_dev_eth_txq_prepare_db(txq, prod_index));
}

/*
 * Under the submit lock, when `prod_index` is past what was submitted: the doorbell record,
 * then the doorbell register (`proxy` false) or the CPU proxy's slot (`proxy` true).
 */
template <enum doca_gpu_dev_eth_resource_sharing_mode resource_sharing_mode, enum doca_gpu_dev_eth_sync_scope sync_scope,
	  bool proxy>
__device__ static __forceinline__ void doca_priv_gpu_dev_eth_txq_submit(struct doca_gpu_eth_txq *txq, uint64_t prod_index)
{
	doca_gpu_dev_eth_lock<resource_sharing_mode>(&txq->lock);
	uint64_t old = doca_gpu_dev_eth_atomic_max<resource_sharing_mode>(&txq->wqe_pi, prod_index);
	if (old < prod_index) {
		doca_gpu_dev_eth_txq_update_dbr<sync_scope>(txq, (uint32_t)prod_index);
		if (proxy) {
			doca_gpu_dev_eth_fence_nic();
			doca_gpu_dev_eth_store64(txq->cpu_proxy_db, prod_index);
		} else {
			doca_gpu_dev_eth_txq_ring_db<sync_scope>(txq, prod_index);
		}
	}
	doca_gpu_dev_eth_unlock<resource_sharing_mode>(&txq->lock);
}

/*
 * Hands `prod_index` to the CPU proxy (CPU_PROXY queues): updates the doorbell record and the
 * proxy's slot; `doca_eth_txq_gpu_cpu_proxy_progress` on the CPU rings the doorbell.
 */
template <enum doca_gpu_dev_eth_resource_sharing_mode resource_sharing_mode = DOCA_GPUNETIO_ETH_RESOURCE_SHARING_MODE_GPU,
	  enum doca_gpu_dev_eth_sync_scope sync_scope = DOCA_GPUNETIO_ETH_SYNC_SCOPE_GPU>
__device__ static __forceinline__ void doca_gpu_dev_eth_txq_submit_proxy(struct doca_gpu_eth_txq *txq, uint64_t prod_index)
{
	doca_priv_gpu_dev_eth_txq_submit<resource_sharing_mode, sync_scope, true>(txq, prod_index);
}

/* Submits WQEs before `prod_index` with the GPU ringing the doorbell. */
template <enum doca_gpu_dev_eth_resource_sharing_mode resource_sharing_mode = DOCA_GPUNETIO_ETH_RESOURCE_SHARING_MODE_GPU,
	  enum doca_gpu_dev_eth_sync_scope sync_scope = DOCA_GPUNETIO_ETH_SYNC_SCOPE_GPU>
__device__ static __forceinline__ void doca_gpu_dev_eth_txq_submit_db(struct doca_gpu_eth_txq *txq, uint64_t prod_index)
{
	doca_priv_gpu_dev_eth_txq_submit<resource_sharing_mode, sync_scope, false>(txq, prod_index);
}

/*
 * Submits every WQE before `prod_index` to the NIC: through the doorbell or the CPU proxy, as
 * `nic_handler` says (AUTO: as the host set the queue up). Threads may call it in parallel;
 * the greatest index wins.
 */
template <enum doca_gpu_dev_eth_resource_sharing_mode resource_sharing_mode = DOCA_GPUNETIO_ETH_RESOURCE_SHARING_MODE_GPU,
	  enum doca_gpu_dev_eth_sync_scope sync_scope = DOCA_GPUNETIO_ETH_SYNC_SCOPE_GPU,
	  enum doca_gpu_dev_eth_nic_handler nic_handler = DOCA_GPUNETIO_ETH_NIC_HANDLER_AUTO>
__device__ static __forceinline__ void doca_gpu_dev_eth_txq_submit(struct doca_gpu_eth_txq *txq, uint64_t prod_index)
{
	uint32_t handler = nic_handler == DOCA_GPUNETIO_ETH_NIC_HANDLER_AUTO ? txq->nic_handler : (uint32_t)nic_handler;
	if (handler == DOCA_GPUNETIO_ETH_NIC_HANDLER_CPU_PROXY)
		doca_gpu_dev_eth_txq_submit_proxy<resource_sharing_mode, sync_scope>(txq, prod_index);
	else
		doca_gpu_dev_eth_txq_submit_db<resource_sharing_mode, sync_scope>(txq, prod_index);
}

/*
 * Sends the frame of `size` bytes at `addr` (`mkey` big-endian): reserves a slot, writes the
 * WQE, waits for the slots before it to be written, submits. THREAD scope: each thread on
 * its own. WARP / BLOCK: every thread of the warp / block calls it with its own frame; one
 * reservation and one submit for all (CUDA builds only).
 */
template <enum doca_gpu_dev_eth_resource_sharing_mode resource_sharing_mode = DOCA_GPUNETIO_ETH_RESOURCE_SHARING_MODE_GPU,
	  enum doca_gpu_dev_eth_sync_scope sync_scope = DOCA_GPUNETIO_ETH_SYNC_SCOPE_GPU,
	  enum doca_gpu_dev_eth_nic_handler nic_handler = DOCA_GPUNETIO_ETH_NIC_HANDLER_AUTO,
	  enum doca_gpu_dev_eth_exec_scope exec_scope = DOCA_GPUNETIO_ETH_EXEC_SCOPE_THREAD>
__device__ static inline void doca_gpu_dev_eth_txq_send(struct doca_gpu_eth_txq *txq,
							 uint64_t addr,
							 uint32_t mkey,
							 size_t size,
							 enum doca_gpu_eth_send_flags flags,
							 doca_gpu_dev_eth_ticket_t *out_ticket)
{
	if (exec_scope == DOCA_GPUNETIO_ETH_EXEC_SCOPE_THREAD) {
		uint64_t idx = doca_gpu_dev_eth_txq_reserve_wq_slots<resource_sharing_mode>(txq, 1);
		doca_gpu_dev_eth_txq_wqe_prepare_send(txq, doca_gpu_dev_eth_txq_get_wqe_ptr(txq, idx), (uint16_t)idx, addr,
						      mkey, (uint32_t)size, flags);
		doca_gpu_dev_eth_txq_mark_wqes_ready<resource_sharing_mode>(txq, idx, idx);
		doca_gpu_dev_eth_txq_submit<resource_sharing_mode, sync_scope, nic_handler>(txq, idx + 1);
		if (out_ticket)
			*out_ticket = idx;
		return;
	}
#if !defined(MLX5_GPUNETIO_HOST_BUILD)
	if (exec_scope == DOCA_GPUNETIO_ETH_EXEC_SCOPE_WARP) {
		unsigned mask = __activemask();
		unsigned lane = threadIdx.x % DOCA_GPUNETIO_ETH_WARP_SIZE;
		unsigned leader = __ffs(mask) - 1;
		unsigned n = __popc(mask);
		unsigned rank = __popc(mask & ((1u << lane) - 1));
		uint64_t base = 0;
		if (lane == leader)
			base = doca_gpu_dev_eth_txq_reserve_wq_slots<resource_sharing_mode>(txq, n);
		base = __shfl_sync(mask, base, leader);
		uint64_t idx = base + rank;
		doca_gpu_dev_eth_txq_wqe_prepare_send(txq, doca_gpu_dev_eth_txq_get_wqe_ptr(txq, idx), (uint16_t)idx, addr,
						      mkey, (uint32_t)size, flags);
		__syncwarp(mask);
		if (lane == leader) {
			doca_gpu_dev_eth_txq_mark_wqes_ready<resource_sharing_mode>(txq, base, base + n - 1);
			doca_gpu_dev_eth_txq_submit<resource_sharing_mode, sync_scope, nic_handler>(txq, base + n);
		}
		if (out_ticket)
			*out_ticket = idx;
		return;
	}
	/* BLOCK */
	__shared__ uint64_t block_base;
	unsigned n = blockDim.x * blockDim.y * blockDim.z;
	unsigned rank = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
	if (rank == 0)
		block_base = doca_gpu_dev_eth_txq_reserve_wq_slots<resource_sharing_mode>(txq, n);
	__syncthreads();
	uint64_t idx = block_base + rank;
	doca_gpu_dev_eth_txq_wqe_prepare_send(txq, doca_gpu_dev_eth_txq_get_wqe_ptr(txq, idx), (uint16_t)idx, addr, mkey,
					      (uint32_t)size, flags);
	__syncthreads();
	if (rank == 0) {
		doca_gpu_dev_eth_txq_mark_wqes_ready<resource_sharing_mode>(txq, block_base, block_base + n - 1);
		doca_gpu_dev_eth_txq_submit<resource_sharing_mode, sync_scope, nic_handler>(txq, block_base + n);
	}
	if (out_ticket)
		*out_ticket = idx;
	__syncthreads();
#endif
}

/*
 * Looks at CQE `cqe_idx`: DOCA_SUCCESS when it is software's (a send done), DOCA_ERROR_IO_FAILED
 * for an error CQE, DOCA_ERROR_AGAIN when not yet there (DOCA_ERROR_TIME_OUT for a blocking
 * wait that gave up).
 */
__device__ static __forceinline__ doca_error_t doca_priv_gpu_dev_eth_txq_cqe_wait(const struct doca_gpu_eth_txq *txq,
										 uint64_t cqe_idx,
										 enum doca_gpu_dev_eth_wait_flags wait_mode)
{
	uint64_t cqe = txq->cqe_addr + ((cqe_idx & txq->cqe_mask) * DOCA_GPUNETIO_ETH_CQE_SIZE);
	uint8_t parity = (cqe_idx & txq->cqe_num) ? 1 : 0;
	uint64_t start = 0;
	for (uint64_t n = 0;; n++) {
		uint8_t op_own = *(volatile uint8_t *)(cqe + 63);
		uint8_t opcode = op_own >> DOCA_GPUNETIO_ETH_MLX5_CQE_OPCODE_SHIFT;
		if (opcode != DOCA_GPUNETIO_ETH_MLX5_CQE_INVALID && (op_own & 1) == parity) {
			__threadfence();
			return opcode == DOCA_GPUNETIO_ETH_MLX5_CQE_REQ_ERR ? DOCA_ERROR_IO_FAILED : DOCA_SUCCESS;
		}
		if (wait_mode == DOCA_GPUNETIO_ETH_WAIT_FLAG_NB)
			return DOCA_ERROR_AGAIN;
		/* The clock every 256 looks. */
		if ((n & 255) == 0) {
			uint64_t now = doca_gpu_dev_eth_now_ns();
			if (n == 0)
				start = now;
			else if (now - start > DOCA_GPUNETIO_ETH_POLL_TIMEOUT_NS)
				return DOCA_ERROR_TIME_OUT;
		}
	}
}

/* Consumes CQEs up to `ci` (exclusive): the consumer index record lets the NIC reuse them. */
template <enum doca_gpu_dev_eth_resource_sharing_mode resource_sharing_mode = DOCA_GPUNETIO_ETH_RESOURCE_SHARING_MODE_GPU>
__device__ static __forceinline__ void doca_priv_gpu_dev_eth_txq_cq_release(struct doca_gpu_eth_txq *txq, uint64_t ci)
{
	doca_gpu_dev_eth_lock<resource_sharing_mode>(&txq->cq_lock);
	uint64_t old = doca_gpu_dev_eth_atomic_max<resource_sharing_mode>(&txq->cqe_ci, ci);
	if (old < ci) {
		doca_gpu_dev_eth_fence_nic();
		doca_gpu_dev_eth_store32(txq->cq_db_rec, doca_gpu_dev_eth_bswap32((uint32_t)ci & DOCA_GPUNETIO_ETH_CQE_CI_MASK));
	}
	doca_gpu_dev_eth_unlock<resource_sharing_mode>(&txq->cq_lock);
}

/* Waits for CQE `cqe_idx` and consumes CQEs up to it (no sharing among pollers). */
template <enum doca_gpu_dev_eth_resource_sharing_mode resource_sharing_mode = DOCA_GPUNETIO_ETH_RESOURCE_SHARING_MODE_GPU,
	  enum doca_gpu_dev_eth_sync_scope sync_scope = DOCA_GPUNETIO_ETH_SYNC_SCOPE_GPU>
__device__ static inline doca_error_t doca_gpu_dev_eth_txq_poll_completion_at(struct doca_gpu_eth_txq *txq,
									   const uint64_t cqe_idx,
									   enum doca_gpu_dev_eth_wait_flags wait_mode)
{
	doca_error_t r = doca_priv_gpu_dev_eth_txq_cqe_wait(txq, cqe_idx, wait_mode);
	if (r == DOCA_SUCCESS || r == DOCA_ERROR_IO_FAILED)
		doca_priv_gpu_dev_eth_txq_cq_release<resource_sharing_mode>(txq, cqe_idx + 1);
	return r;
}

/*
 * Waits for the next `num_cqe` CQEs (reserved for this caller, so pollers may share the
 * queue): all of them, or only the last (CQ_POLL_LAST). `num_completed`: how many were there.
 * Non-blocking: DOCA_ERROR_AGAIN, reserving nothing, unless the range's last CQE is there.
 */
template <enum doca_gpu_dev_eth_cq_poll_mode cqe_poll = DOCA_GPUNETIO_ETH_CQ_POLL_ALL,
	  enum doca_gpu_dev_eth_resource_sharing_mode resource_sharing_mode = DOCA_GPUNETIO_ETH_RESOURCE_SHARING_MODE_GPU,
	  enum doca_gpu_dev_eth_sync_scope sync_scope = DOCA_GPUNETIO_ETH_SYNC_SCOPE_GPU>
__device__ static inline doca_error_t doca_gpu_dev_eth_txq_poll_completion(struct doca_gpu_eth_txq *txq,
									const uint32_t num_cqe,
									enum doca_gpu_dev_eth_wait_flags wait_mode,
									uint32_t *num_completed)
{
	if (num_completed)
		*num_completed = 0;
	if (num_cqe == 0)
		return DOCA_SUCCESS;
	if (wait_mode == DOCA_GPUNETIO_ETH_WAIT_FLAG_NB) {
		/* Reserve only once the range's last CQE is there (they arrive in order). */
		uint64_t next = DOCA_GPUNETIO_VOLATILE(txq->cq_rsvd_index);
		doca_error_t peek = doca_priv_gpu_dev_eth_txq_cqe_wait(txq, next + num_cqe - 1, wait_mode);
		if (peek == DOCA_ERROR_AGAIN)
			return DOCA_ERROR_AGAIN;
		wait_mode = DOCA_GPUNETIO_ETH_WAIT_FLAG_B;
	}
	uint64_t first = doca_gpu_dev_eth_atomic_add<resource_sharing_mode>(&txq->cq_rsvd_index, num_cqe);
	uint32_t done = 0;
	doca_error_t r = DOCA_SUCCESS;
	uint64_t i = cqe_poll == DOCA_GPUNETIO_ETH_CQ_POLL_LAST ? num_cqe - 1 : 0;
	for (; i < num_cqe; i++) {
		r = doca_priv_gpu_dev_eth_txq_cqe_wait(txq, first + i, wait_mode);
		if (r != DOCA_SUCCESS)
			break;
		done = (uint32_t)i + 1;
	}
	if (r == DOCA_ERROR_IO_FAILED)
		done = (uint32_t)i + 1;
	if (done > 0)
		doca_priv_gpu_dev_eth_txq_cq_release<resource_sharing_mode>(txq, first + done);
	if (num_completed)
		*num_completed = done;
	return r;
}

/*
 * DOCA 2.x's send (the names and signatures of DOCA 2.x's doca_gpunetio_dev_eth_txq.cuh), on the
 * same queue: buffers from doca_gpunetio_dev_buf.cuh.
 *
 * Strong: each enqueue takes the next WQE slot itself; one thread then commits (the written
 * slots go to the NIC: doorbell record and doorbell, or the CPU proxy) and pushes (nothing
 * more to do here: the commit rang). Weak: the caller places each packet at a position (masked
 * ring index) from doca_gpu_dev_eth_txq_get_info on, without gaps; one thread commits the
 * number placed. A wait on time (wait_time_enqueue) holds the packets after it until the time
 * calculate_timestamp made.
 */
__device__ static __forceinline__ enum doca_gpu_eth_send_flags doca_priv_gpu_dev_eth_send_flags(uint32_t flags_bitmask)
{
	return (flags_bitmask & DOCA_GPU_SEND_FLAG_NOTIFY) ? DOCA_GPUNETIO_ETH_SEND_FLAG_NOTIFY :
							     DOCA_GPUNETIO_ETH_SEND_FLAG_NONE;
}

__device__ static inline doca_error_t doca_gpu_dev_eth_txq_send_enqueue_strong(struct doca_gpu_eth_txq *eth_txq,
									       const struct doca_gpu_buf *buf_ptr,
									       const uint32_t nbytes,
									       const uint32_t flags_bitmask)
{
	if (!eth_txq || !buf_ptr)
		return DOCA_ERROR_INVALID_VALUE;
	uint64_t idx = doca_gpu_dev_eth_txq_reserve_wq_slots(eth_txq, 1);
	doca_error_t r = doca_gpu_dev_eth_txq_wqe_prepare_send(eth_txq, doca_gpu_dev_eth_txq_get_wqe_ptr(eth_txq, idx),
							       (uint16_t)idx, buf_ptr->addr, buf_ptr->mkey, nbytes,
							       doca_priv_gpu_dev_eth_send_flags(flags_bitmask));
	doca_gpu_dev_eth_txq_mark_wqes_ready(eth_txq, idx, idx);
	return r;
}

__device__ static inline doca_error_t doca_gpu_dev_eth_txq_commit_strong(struct doca_gpu_eth_txq *eth_txq)
{
	if (!eth_txq)
		return DOCA_ERROR_INVALID_VALUE;
	doca_gpu_dev_eth_txq_submit(eth_txq, DOCA_GPUNETIO_VOLATILE(eth_txq->sq_ready_index));
	return DOCA_SUCCESS;
}

/* The next free position (a masked ring index) and the mask of positions. */
__device__ static inline doca_error_t doca_gpu_dev_eth_txq_get_info(struct doca_gpu_eth_txq *eth_txq,
								    uint32_t *curr_position, uint32_t *mask_max_position)
{
	if (!eth_txq || !curr_position || !mask_max_position)
		return DOCA_ERROR_INVALID_VALUE;
	*curr_position = (uint32_t)(DOCA_GPUNETIO_VOLATILE(eth_txq->sq_rsvd_index) & eth_txq->wqe_mask);
	*mask_max_position = eth_txq->wqe_mask;
	return DOCA_SUCCESS;
}

__device__ static inline doca_error_t doca_gpu_dev_eth_txq_send_enqueue_weak(const struct doca_gpu_eth_txq *eth_txq,
									     const struct doca_gpu_buf *buf_ptr,
									     const uint32_t nbytes, const uint32_t position,
									     const uint32_t flags_bitmask)
{
	if (!eth_txq || !buf_ptr)
		return DOCA_ERROR_INVALID_VALUE;
	/* The WQE index of `position`: the first free slot's, plus how far the position is past it. */
	uint64_t base = DOCA_GPUNETIO_VOLATILE(((struct doca_gpu_eth_txq *)eth_txq)->sq_rsvd_index);
	uint64_t idx = base + ((position - (uint32_t)base) & eth_txq->wqe_mask);
	return doca_gpu_dev_eth_txq_wqe_prepare_send(eth_txq, doca_gpu_dev_eth_txq_get_wqe_ptr(eth_txq, idx),
						     (uint16_t)idx, buf_ptr->addr, buf_ptr->mkey, nbytes,
						     doca_priv_gpu_dev_eth_send_flags(flags_bitmask));
}

__device__ static inline doca_error_t doca_gpu_dev_eth_txq_commit_weak(struct doca_gpu_eth_txq *eth_txq,
								       const uint32_t elements)
{
	if (!eth_txq || elements > eth_txq->wqe_mask + 1)
		return DOCA_ERROR_INVALID_VALUE;
	if (elements == 0)
		return DOCA_SUCCESS;
	uint64_t base = doca_gpu_dev_eth_txq_reserve_wq_slots(eth_txq, elements);
	doca_gpu_dev_eth_txq_mark_wqes_ready(eth_txq, base, base + elements - 1);
	doca_gpu_dev_eth_txq_submit(eth_txq, base + elements);
	return DOCA_SUCCESS;
}

__device__ static inline doca_error_t doca_gpu_dev_eth_txq_push(struct doca_gpu_eth_txq *eth_txq)
{
	return eth_txq ? DOCA_SUCCESS : DOCA_ERROR_INVALID_VALUE;
}

/* The wait-on-time value of UTC time `timestamp_ns`: the NIC's real-time format (seconds in the
 * upper 32 bits, nanoseconds in the lower), big-endian as the WQE carries it. */
__device__ static inline doca_error_t doca_gpu_dev_eth_txq_calculate_timestamp(const struct doca_gpu_eth_txq *eth_txq,
									       const uint64_t timestamp_ns,
									       uint64_t *wait_on_time_value)
{
	if (!eth_txq || !wait_on_time_value)
		return DOCA_ERROR_INVALID_VALUE;
	*wait_on_time_value = doca_gpu_dev_eth_bswap64((timestamp_ns % DOCA_GPUNETIO_ETH_NS_PER_S) |
						       ((timestamp_ns / DOCA_GPUNETIO_ETH_NS_PER_S) << 32));
	return DOCA_SUCCESS;
}

/* Enqueues a wait on time: the packets enqueued after it leave once the time passed. */
__device__ static inline doca_error_t doca_gpu_dev_eth_txq_wait_time_enqueue_strong(struct doca_gpu_eth_txq *eth_txq,
										    const uint64_t wait_on_time_value,
										    const uint32_t flags_bitmask)
{
	if (!eth_txq)
		return DOCA_ERROR_INVALID_VALUE;
	uint64_t idx = doca_gpu_dev_eth_txq_reserve_wq_slots(eth_txq, 1);
	doca_error_t r = doca_gpu_dev_eth_txq_wqe_prepare_wait_time(eth_txq, doca_gpu_dev_eth_txq_get_wqe_ptr(eth_txq, idx),
								    (uint16_t)idx, wait_on_time_value,
								    doca_priv_gpu_dev_eth_send_flags(flags_bitmask));
	doca_gpu_dev_eth_txq_mark_wqes_ready(eth_txq, idx, idx);
	return r;
}

/* The same at `position` (as doca_gpu_dev_eth_txq_send_enqueue_weak places a packet). */
__device__ static inline doca_error_t doca_gpu_dev_eth_txq_wait_time_enqueue_weak(struct doca_gpu_eth_txq *eth_txq,
										  const uint64_t wait_on_time_value,
										  const uint32_t position,
										  const uint32_t flags_bitmask)
{
	if (!eth_txq)
		return DOCA_ERROR_INVALID_VALUE;
	uint64_t base = DOCA_GPUNETIO_VOLATILE(eth_txq->sq_rsvd_index);
	uint64_t idx = base + ((position - (uint32_t)base) & eth_txq->wqe_mask);
	return doca_gpu_dev_eth_txq_wqe_prepare_wait_time(eth_txq, doca_gpu_dev_eth_txq_get_wqe_ptr(eth_txq, idx),
							  (uint16_t)idx, wait_on_time_value,
							  doca_priv_gpu_dev_eth_send_flags(flags_bitmask));
}

/* Waits for `num_sends` sends that asked for a notification (DOCA_GPU_SEND_FLAG_NOTIFY). */
__device__ static inline doca_error_t doca_gpu_dev_eth_txq_wait_completion(struct doca_gpu_eth_txq *eth_txq,
									   uint32_t num_sends,
									   enum doca_gpu_dev_eth_txq_wait_flags wait_mode,
									   uint32_t *num_completed)
{
	if (!eth_txq)
		return DOCA_ERROR_INVALID_VALUE;
	return doca_gpu_dev_eth_txq_poll_completion(eth_txq, num_sends,
						    wait_mode == DOCA_GPU_ETH_TXQ_WAIT_FLAG_B ? DOCA_GPUNETIO_ETH_WAIT_FLAG_B :
											DOCA_GPUNETIO_ETH_WAIT_FLAG_NB,
						    num_completed);
}

#endif /* DOCA_GPUNETIO_DEV_ETH_TXQ_CUH */
