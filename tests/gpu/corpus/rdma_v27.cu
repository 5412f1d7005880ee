/*
 * mlx5-dpa: DOCA 2.7+'s GPU RDMA calls as 2.7 kernels use them (written here; nothing copied),
 * checked as CUDA device code in tests/driver/gpu_headers.rs: every call names its connection.
 * A block writes its buffers with the weak pattern (positions from get_info, one commit of
 * all), reads one back, sends a small inline message, and waits; a receiver posts weak
 * receives and reports them with their connections.
 */
#include "doca_gpunetio_dev_buf.cuh"
#include "doca_gpunetio_dev_rdma.cuh"

__global__ void put_weak(struct doca_gpu_dev_rdma *rdma, uint32_t connection_id, struct doca_gpu_buf_arr *local,
			 struct doca_gpu_buf_arr *remote, size_t size)
{
	__shared__ uint32_t position, mask;
	struct doca_gpu_buf *l, *r;
	uint32_t commits = 0;

	if (threadIdx.x == 0)
		doca_gpu_dev_rdma_get_info(rdma, connection_id, &position, &mask);
	__syncthreads();
	doca_gpu_dev_buf_get_buf(local, threadIdx.x, &l);
	doca_gpu_dev_buf_get_buf(remote, threadIdx.x, &r);
	doca_gpu_dev_rdma_write_weak(rdma, connection_id, r, 0, l, 0, size, 0, DOCA_GPU_RDMA_WRITE_FLAG_NONE,
				     (position + threadIdx.x) & mask);
	__syncthreads();
	if (threadIdx.x == 0) {
		uint8_t hello[8] = {'h', 'e', 'l', 'l', 'o', 0, 0, 0};
		doca_gpu_dev_rdma_commit_weak(rdma, connection_id, blockDim.x);
		doca_gpu_dev_rdma_read_strong(rdma, connection_id, r, 0, l, 0, size, 0);
		doca_gpu_dev_rdma_send_inline_strong(rdma, connection_id, hello, sizeof(hello), 0,
						     DOCA_GPU_RDMA_SEND_FLAG_NONE);
		doca_gpu_dev_rdma_commit_strong(rdma, connection_id);
		doca_gpu_dev_rdma_wait_all(rdma, &commits);
	}
}

__global__ void receive_weak(struct doca_gpu_dev_rdma *rdma, struct doca_gpu_buf_arr *bufs, size_t size,
			     uint32_t *imm, uint32_t *conn)
{
	__shared__ uint32_t position, mask;
	struct doca_gpu_dev_rdma_r *recv;
	struct doca_gpu_buf *b;
	uint32_t num = 0;

	if (doca_gpu_dev_rdma_get_recv(rdma, &recv) != DOCA_SUCCESS)
		return;
	if (threadIdx.x == 0)
		doca_gpu_dev_rdma_recv_get_info(recv, &position, &mask);
	__syncthreads();
	doca_gpu_dev_buf_get_buf(bufs, threadIdx.x, &b);
	doca_gpu_dev_rdma_recv_weak(recv, b, size, 0, 0, (position + threadIdx.x) & mask);
	__syncthreads();
	if (threadIdx.x == 0) {
		doca_gpu_dev_rdma_recv_commit_weak(recv, blockDim.x);
		doca_gpu_dev_rdma_recv_wait_all(recv, DOCA_GPU_RDMA_RECV_WAIT_FLAG_B, &num, imm, conn);
	}
}
