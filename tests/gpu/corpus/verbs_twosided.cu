/*
 * mlx5-dpa: GPUNetIO kernels of the current API generation beyond the demos' (the demos'
 * kernels are in examples/gpunetio_kernels), checked as CUDA device code with clang in
 * tests/driver/gpu_headers.rs: two-sided Verbs in warp scope, a read-back with
 * DOCA_GPUNETIO_VOLATILE on any lvalue, and a warp-scope get.
 */
#include "doca_gpunetio_dev_verbs_twosided.cuh"

/* Posts a receive per thread, then sends to the peer; waits for both. */
extern "C" __global__ void ping(uint64_t qp_addr, uint64_t rbuf, uint64_t sbuf, uint32_t lkey_be, uint32_t size,
				int *status)
{
	struct doca_gpu_dev_verbs_qp *qp = (struct doca_gpu_dev_verbs_qp *)qp_addr;
	struct doca_gpu_dev_verbs_addr r = {rbuf + (uint64_t)threadIdx.x * size, lkey_be};
	struct doca_gpu_dev_verbs_addr s = {sbuf + (uint64_t)threadIdx.x * size, lkey_be};
	doca_gpu_dev_verbs_ticket_t rt = 0, st = 0;
	uint32_t got = 0;

	doca_gpu_dev_verbs_recv(qp, r, size, &rt);
	doca_gpu_dev_verbs_send<DOCA_GPUNETIO_VERBS_RESOURCE_SHARING_MODE_GPU, DOCA_GPUNETIO_VERBS_NIC_HANDLER_AUTO,
				DOCA_GPUNETIO_VERBS_EXEC_SCOPE_WARP>(qp, s, size, &st);
	doca_error_t e = doca_gpu_dev_verbs_wait(qp, st);
	if (e == DOCA_SUCCESS)
		e = doca_gpu_dev_verbs_recv_wait(qp, rt, &got);
	status[threadIdx.x] = e == DOCA_SUCCESS && got == size ? 0 : (int)e;
}

/* Reads the first byte of each thread's chunk back with volatile loads of `*p` and `a[i]`. */
extern "C" __global__ void read_back(const uint8_t *p, const uint8_t *a, int *out)
{
	uint8_t x = DOCA_GPUNETIO_VOLATILE(*p);
	uint8_t y = DOCA_GPUNETIO_VOLATILE(a[threadIdx.x]);
	out[threadIdx.x] = x + y;
}

/* A warp-scope get of one chunk per thread. */
extern "C" __global__ void get(uint64_t qp_addr, uint64_t raddr, uint32_t rkey_be, uint64_t laddr, uint32_t lkey_be,
			       uint32_t chunk, int *status)
{
	struct doca_gpu_dev_verbs_qp *qp = (struct doca_gpu_dev_verbs_qp *)qp_addr;
	struct doca_gpu_dev_verbs_addr r = {raddr + (uint64_t)threadIdx.x * chunk, rkey_be};
	struct doca_gpu_dev_verbs_addr l = {laddr + (uint64_t)threadIdx.x * chunk, lkey_be};
	doca_gpu_dev_verbs_ticket_t t = 0;
	doca_gpu_dev_verbs_get<DOCA_GPUNETIO_VERBS_RESOURCE_SHARING_MODE_GPU, DOCA_GPUNETIO_VERBS_NIC_HANDLER_AUTO,
			       DOCA_GPUNETIO_VERBS_EXEC_SCOPE_WARP>(qp, r, l, chunk, &t);
	status[threadIdx.x] = (int)doca_gpu_dev_verbs_wait(qp, t);
}
