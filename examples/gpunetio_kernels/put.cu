/* mlx5-dpa: a GPUNetIO kernel of examples/gpunetio.rs (NVRTC on a GPU; clang checks it as CUDA
 * device code in tests/driver/gpu_headers.rs). */
#include "doca_gpunetio_dev_verbs_onesided.cuh"

/* Each thread puts its chunks (with a +1 signal each) and waits for them. */
extern "C" __global__ void put(uint64_t qp_addr, uint64_t raddr, uint64_t rkey_be, uint64_t laddr, uint64_t lkey_be,
			       uint64_t chunk, uint64_t n, uint64_t sig, uint64_t sink, uint64_t status_addr)
{
	struct doca_gpu_dev_verbs_qp *qp = (struct doca_gpu_dev_verbs_qp *)qp_addr;
	int *status = (int *)status_addr;
	uint32_t t = threadIdx.x;
	for (uint32_t i = t; i < n; i += blockDim.x) {
		struct doca_gpu_dev_verbs_addr r = {raddr + (uint64_t)i * chunk, (uint32_t)rkey_be};
		struct doca_gpu_dev_verbs_addr l = {laddr + (uint64_t)i * chunk, (uint32_t)lkey_be};
		struct doca_gpu_dev_verbs_addr sr = {sig, (uint32_t)rkey_be};
		struct doca_gpu_dev_verbs_addr sl = {sink + 8ull * t, (uint32_t)lkey_be};
		doca_gpu_dev_verbs_ticket_t tk = 0;
		doca_gpu_dev_verbs_put_signal(qp, r, l, chunk, sr, sl, 1, &tk);
		doca_error_t e = doca_gpu_dev_verbs_wait(qp, tk);
		if (e != DOCA_SUCCESS) {
			status[t] = (int)e;
			return;
		}
	}
	status[t] = 0;
}
