/*
 * mlx5-dpa: DOCA 2.5 / 2.6's GPU RDMA calls as 2.6 kernels use them (written here; nothing
 * copied), checked as CUDA device code in tests/driver/gpu_headers.rs: no connection index.
 * A server block posts receives (without a buffer for writes with immediate), commits them,
 * tells the client with a 1-byte write, and waits for them; a client block writes with an
 * immediate from each thread's buffer, commits once and waits.
 */
#include "doca_gpunetio_dev_buf.cuh"
#include "doca_gpunetio_dev_rdma.cuh"

__global__ void server(struct doca_gpu_dev_rdma *rdma, struct doca_gpu_buf_arr *flag_local,
		       struct doca_gpu_buf_arr *flag_remote, uint32_t *imm)
{
	struct doca_gpu_dev_rdma_r *recv;
	struct doca_gpu_buf *lf, *rf;
	uint32_t num = 0;

	if (doca_gpu_dev_rdma_get_recv(rdma, &recv) != DOCA_SUCCESS)
		return;
	doca_gpu_dev_rdma_recv_strong(recv, NULL, 0, 0, 0);
	__syncthreads();
	if (threadIdx.x == 0) {
		doca_gpu_dev_rdma_recv_commit_strong(recv);
		doca_gpu_dev_buf_get_buf(flag_local, 0, &lf);
		doca_gpu_dev_buf_get_buf(flag_remote, 0, &rf);
		doca_gpu_dev_rdma_write_strong(rdma, rf, 0, lf, 0, 1, 0, DOCA_GPU_RDMA_WRITE_FLAG_NONE);
		doca_gpu_dev_rdma_commit_strong(rdma);
		doca_gpu_dev_rdma_recv_wait_all(recv, DOCA_GPU_RDMA_RECV_WAIT_FLAG_B, &num, imm);
	}
}

__global__ void client(struct doca_gpu_dev_rdma *rdma, struct doca_gpu_buf_arr *local, struct doca_gpu_buf_arr *remote,
		       size_t size)
{
	struct doca_gpu_buf *l, *r;
	uint32_t commits = 0;

	doca_gpu_dev_buf_get_buf(local, threadIdx.x, &l);
	doca_gpu_dev_buf_get_buf(remote, threadIdx.x, &r);
	doca_gpu_dev_rdma_write_strong(rdma, r, 0, l, 0, size, threadIdx.x, DOCA_GPU_RDMA_WRITE_FLAG_IMM);
	__syncthreads();
	if (threadIdx.x == 0) {
		doca_gpu_dev_rdma_commit_strong(rdma);
		doca_gpu_dev_rdma_wait_all(rdma, &commits);
	}
}
