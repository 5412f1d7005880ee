// Host build of the GPUNetIO send headers (src/gpu/include), for tests/gpu_eth_txq.rs: the
// functions a CUDA kernel would call, run on CPU threads against the device model.
#include "doca_gpunetio_dev_eth_txq.cuh"

#define FIELD(f) offsetof(struct doca_gpu_eth_txq, f)

// The handle's size and field offsets, in declaration order.
extern "C" int harness_layout(uint64_t *out, int n)
{
	const uint64_t v[] = {
		sizeof(struct doca_gpu_eth_txq),
		FIELD(wqe_addr), FIELD(wqe_db_rec), FIELD(wqe_db), FIELD(cpu_proxy_db),
		FIELD(cqe_addr), FIELD(cq_db_rec), FIELD(sq_rsvd_index), FIELD(sq_ready_index),
		FIELD(wqe_pi), FIELD(cqe_ci), FIELD(cq_rsvd_index), FIELD(sq_num_shift8),
		FIELD(wqe_mask), FIELD(cqe_num), FIELD(cqe_mask), FIELD(nic_handler),
		FIELD(lock), FIELD(cq_lock), FIELD(reserved),
	};
	int count = (int)(sizeof(v) / sizeof(v[0]));
	for (int i = 0; i < count && i < n; i++)
		out[i] = v[i];
	return count;
}

// One WQE written to `wqe` as a kernel would, for a byte comparison with the driver's.
extern "C" int harness_prepare(const struct doca_gpu_eth_txq *txq, void *wqe, uint16_t idx, uint64_t addr,
			       uint32_t mkey_be, uint32_t nbytes, int notify)
{
	return doca_gpu_dev_eth_txq_wqe_prepare_send(txq, (struct doca_gpu_dev_eth_txq_wqe *)wqe, idx, addr, mkey_be,
						     nbytes,
						     notify ? DOCA_GPUNETIO_ETH_SEND_FLAG_NOTIFY
							    : DOCA_GPUNETIO_ETH_SEND_FLAG_NONE);
}

// A "thread" of a send kernel: frames first, first + step, ... below n (frame i at
// buf + i * stride, `len(i)` bytes), every one with NOTIFY, through the shared-queue send
// (GPU sharing mode, AUTO handler). Then waits for the completions of its own frames.
// Returns 0, or the doca_error_t of the first failure.
extern "C" int harness_send(struct doca_gpu_eth_txq *txq, uint64_t buf, uint32_t mkey_be, uint32_t stride,
			    const uint32_t *lens, uint32_t first, uint32_t step, uint32_t n)
{
	uint32_t mine = 0;
	for (uint32_t i = first; i < n; i += step) {
		doca_gpu_dev_eth_ticket_t ticket = 0;
		doca_gpu_dev_eth_txq_send(txq, buf + (uint64_t)i * stride, mkey_be, lens[i],
					  DOCA_GPUNETIO_ETH_SEND_FLAG_NOTIFY, &ticket);
		mine++;
	}
	uint32_t done = 0;
	while (done < mine) {
		uint32_t got = 0;
		doca_error_t r = doca_gpu_dev_eth_txq_poll_completion(txq, 1, DOCA_GPUNETIO_ETH_WAIT_FLAG_B, &got);
		if (r != DOCA_SUCCESS)
			return (int)r;
		done += got;
	}
	return 0;
}

// A non-blocking look for one completion (DOCA_ERROR_AGAIN when there is none).
extern "C" int harness_poll_nb(struct doca_gpu_eth_txq *txq)
{
	uint32_t got = 0;
	return (int)doca_gpu_dev_eth_txq_poll_completion(txq, 1, DOCA_GPUNETIO_ETH_WAIT_FLAG_NB, &got);
}
