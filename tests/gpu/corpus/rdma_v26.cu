/*
 * mlx5-dpa: DOCA 2.5 / 2.6's GPU RDMA calls as 2.6 kernels use them (written here; nothing
 * copied): no connection index. Checked as CUDA device code in tests/driver/gpu_headers.rs and
 * run on CPU threads against the model in tests/driver/gpu_cpu_runtime.rs.
 *
 * The server's threads each post a receive without a buffer (for a write with immediate);
 * its thread 0 commits them, tells the client with a 1-byte write, and waits for them all.
 * The client's thread 0 waits for that byte; then each thread writes its buffer with its
 * index as the immediate, and thread 0 commits once and waits.
 */
#include "doca_gpunetio_dev_buf.cuh"
#include "doca_gpunetio_dev_rdma.cuh"

/* status: [0] the first failure (or DOCA_SUCCESS), [1] receives completed; imm: theirs. */
__global__ void server(struct doca_gpu_dev_rdma *rdma, struct doca_gpu_buf_arr *flag_local,
		       struct doca_gpu_buf_arr *flag_remote, uint32_t *imm, int *status)
{
	__shared__ struct doca_gpu_dev_rdma_r *recv;
	__shared__ int failed;
	struct doca_gpu_buf *lf, *rf;

	if (threadIdx.x == 0) {
		failed = (int)doca_gpu_dev_rdma_get_recv(rdma, &recv);
		status[0] = failed;
	}
	__syncthreads();
	if (failed != DOCA_SUCCESS)
		return;
	doca_error_t r = doca_gpu_dev_rdma_recv_strong(recv, NULL, 0, 0, 0);
	if (r != DOCA_SUCCESS)
		status[0] = (int)r;
	__syncthreads();
	if (threadIdx.x == 0 && status[0] == DOCA_SUCCESS) {
		uint32_t num = 0;
		doca_gpu_dev_buf_get_buf(flag_local, 0, &lf);
		doca_gpu_dev_buf_get_buf(flag_remote, 0, &rf);
		r = doca_gpu_dev_rdma_recv_commit_strong(recv);
		if (r == DOCA_SUCCESS)
			r = doca_gpu_dev_rdma_write_strong(rdma, rf, 0, lf, 0, 1, 0, DOCA_GPU_RDMA_WRITE_FLAG_NONE);
		if (r == DOCA_SUCCESS)
			r = doca_gpu_dev_rdma_commit_strong(rdma);
		if (r == DOCA_SUCCESS)
			r = doca_gpu_dev_rdma_recv_wait_all(recv, DOCA_GPU_RDMA_RECV_WAIT_FLAG_B, &num, imm);
		status[0] = (int)r;
		status[1] = (int)num;
	}
}

/* status: [0] the first failure of thread 0 (or DOCA_SUCCESS), [1] commits waited for,
 * [2 + i] thread i's write. */
__global__ void client(struct doca_gpu_dev_rdma *rdma, struct doca_gpu_buf_arr *flag, struct doca_gpu_buf_arr *local,
		       struct doca_gpu_buf_arr *remote, size_t size, int *status)
{
	__shared__ int ready;
	struct doca_gpu_buf *f, *l, *r;
	uint32_t commits = 0;

	if (threadIdx.x == 0) {
		uintptr_t addr = 0;
		uint64_t start = doca_gpu_dev_verbs_query_globaltimer();
		doca_gpu_dev_buf_get_buf(flag, 0, &f);
		doca_gpu_dev_buf_get_addr(f, &addr);
		ready = 1;
		while (DOCA_GPUNETIO_VOLATILE(*(uint8_t *)addr) != 1)
			if (doca_gpu_dev_verbs_query_globaltimer() - start > 10000000000ull) {
				ready = 0;
				break;
			}
		status[0] = ready ? DOCA_SUCCESS : DOCA_ERROR_TIME_OUT;
	}
	__syncthreads();
	if (!ready)
		return;
	doca_gpu_dev_buf_get_buf(local, threadIdx.x, &l);
	doca_gpu_dev_buf_get_buf(remote, threadIdx.x, &r);
	status[2 + threadIdx.x] =
		(int)doca_gpu_dev_rdma_write_strong(rdma, r, 0, l, 0, size, threadIdx.x, DOCA_GPU_RDMA_WRITE_FLAG_IMM);
	__syncthreads();
	if (threadIdx.x == 0) {
		doca_error_t e = doca_gpu_dev_rdma_commit_strong(rdma);
		if (e == DOCA_SUCCESS)
			e = doca_gpu_dev_rdma_wait_all(rdma, &commits);
		status[0] = (int)e;
		status[1] = (int)commits;
	}
}

extern "C" {

/* The host's launches: one block of `threads` threads each. */
int rdma_v26_server(cudaStream_t stream, unsigned threads, struct doca_gpu_dev_rdma *rdma,
		    struct doca_gpu_buf_arr *flag_local, struct doca_gpu_buf_arr *flag_remote, uint32_t *imm, int *status)
{
	server<<<1, threads, 0, stream>>>(rdma, flag_local, flag_remote, imm, status);
	return (int)cudaGetLastError();
}

int rdma_v26_client(cudaStream_t stream, unsigned threads, struct doca_gpu_dev_rdma *rdma, struct doca_gpu_buf_arr *flag,
		    struct doca_gpu_buf_arr *local, struct doca_gpu_buf_arr *remote, size_t size, int *status)
{
	client<<<1, threads, 0, stream>>>(rdma, flag, local, remote, size, status);
	return (int)cudaGetLastError();
}

} /* extern "C" */
