/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * DOCA DPA kernels written against DOCA 2.6's device buffer and RDMA API, built with
 * DOCA_VERSION_MINOR=6 (build.sh): what DOCA 2.6 device sources call, for the tests
 * (tests/dpa/doca_dpa_v26.rs) and `mlx5-dpa demo doca-dpa rdma-copy`.
 *
 *   dpa_rdma_write_and_signal(rdma, remote_arr, local_arr, length, remote_ev, count)
 *                                      the RDMA copy sample's kernel (same name and arguments
 *                                      as DOCA 2.6's sample): writes local buffer 0 to remote
 *                                      buffer 0, sets the remote event, synchronizes
 *   update_event_kernel(ev, val)       sets ev to val
 *   v26_rdma_kernel(rdma, op, larr, loff, rarr, roff, len, arg)
 *                                      one 2.6 operation on buffer 0 of each array at the
 *                                      offsets: op 0 receive, 1 send, 2 write, 3 read, 4
 *                                      fetch-and-add arg, 5 signal_set of remote event rarr to
 *                                      arg, 6 signal_add; every op but the receive is followed
 *                                      by doca_dpa_dev_rdma_synchronize
 *   v26_memcpy_kernel(darr, doff, sarr, soff, len, cols, rows, ev)
 *                                      doca_dpa_dev_memcpy_nb of len bytes from buffer 0 of
 *                                      sarr at soff to buffer 0 of darr at doff (cols 0), or a
 *                                      transpose of rows x cols 2-byte elements; then
 *                                      synchronize, and sets ev to the build's DOCA minor << 8 |
 *                                      the runtime's (doca_version, doca_version_runtime)
 *   v26_srq_receive_kernel(srq, arr, offset, len)
 *                                      posts a receive of len bytes at `offset` of buffer 0 on
 *                                      a shared receive queue (doca_dpa_dev_rdma_srq_post_receive)
 *   v26_external_kernel(arr, offset, ev)
 *                                      sets ev to the u64 at `offset` of buffer 0, read through
 *                                      doca_dpa_dev_buf_get_external_ptr(buf, offset)
 */
#include <doca_dpa_dev.h>
#include <doca_dpa_dev_buf.h>
#include <doca_dpa_dev_rdma.h>
#include <doca_dpa_dev_sync_event.h>
#include <dpaintrin.h>

__dpa_global__ void dpa_rdma_write_and_signal(doca_dpa_dev_rdma_t rdma, doca_dpa_dev_buf_arr_t remote_arr,
					      doca_dpa_dev_buf_arr_t local_arr, size_t length,
					      doca_dpa_dev_sync_event_remote_net_t remote_ev, uint64_t count)
{
	doca_dpa_dev_buf_t dst = doca_dpa_dev_buf_array_get_buf(remote_arr, 0);
	doca_dpa_dev_buf_t src = doca_dpa_dev_buf_array_get_buf(local_arr, 0);

	doca_dpa_dev_rdma_write(rdma, dst, 0, src, 0, length);
	doca_dpa_dev_rdma_signal_set(rdma, remote_ev, count);
	doca_dpa_dev_rdma_synchronize(rdma);
}

__dpa_global__ void update_event_kernel(doca_dpa_dev_sync_event_t ev, uint64_t val)
{
	doca_dpa_dev_sync_event_update_set(ev, val);
}

__dpa_global__ void v26_rdma_kernel(doca_dpa_dev_rdma_t rdma, uint64_t op, doca_dpa_dev_buf_arr_t larr, uint64_t loff,
				    doca_dpa_dev_buf_arr_t rarr, uint64_t roff, uint64_t len, uint64_t arg)
{
	doca_dpa_dev_buf_t l = doca_dpa_dev_buf_array_get_buf(larr, 0);
	doca_dpa_dev_buf_t r = op < 5 && rarr ? doca_dpa_dev_buf_array_get_buf(rarr, 0) : 0;

	switch (op) {
	case 0:
		doca_dpa_dev_rdma_post_receive(rdma, l, loff, len);
		return;
	case 1:
		doca_dpa_dev_rdma_post_send(rdma, l, loff, len);
		break;
	case 2:
		doca_dpa_dev_rdma_write(rdma, r, roff, l, loff, len);
		break;
	case 3:
		doca_dpa_dev_rdma_read(rdma, l, loff, r, roff, len);
		break;
	case 4:
		doca_dpa_dev_rdma_atomic_fetch_add(rdma, r, roff, arg);
		break;
	case 5:
		doca_dpa_dev_rdma_signal_set(rdma, rarr, arg);
		break;
	case 6:
		doca_dpa_dev_rdma_signal_add(rdma, rarr, arg);
		break;
	}
	doca_dpa_dev_rdma_synchronize(rdma);
}

__dpa_global__ void v26_external_kernel(doca_dpa_dev_buf_arr_t arr, uint64_t offset, doca_dpa_dev_sync_event_t ev)
{
	doca_dpa_dev_buf_t b = doca_dpa_dev_buf_array_get_buf(arr, 0);
	volatile uint64_t *p = (volatile uint64_t *)(uintptr_t)doca_dpa_dev_buf_get_external_ptr(b, offset);
	uint64_t v;

	__dpa_thread_window_read_inv();
	v = *p;
	doca_dpa_dev_sync_event_update_set(ev, v);
}

__dpa_global__ void v26_memcpy_kernel(doca_dpa_dev_buf_arr_t darr, uint64_t doff, doca_dpa_dev_buf_arr_t sarr,
				       uint64_t soff, uint64_t len, uint64_t cols, uint64_t rows,
				       doca_dpa_dev_sync_event_t ev)
{
	doca_dpa_dev_buf_t d = doca_dpa_dev_buf_array_get_buf(darr, 0);
	doca_dpa_dev_buf_t s = doca_dpa_dev_buf_array_get_buf(sarr, 0);

	if (cols == 0)
		doca_dpa_dev_memcpy_nb(d, doff, s, soff, len);
	else
		doca_dpa_dev_memcpy_transpose2D_nb(d, doff, s, soff, len, 2, cols, rows);
	doca_dpa_dev_memcpy_synchronize();
	/* The version text both ways: the build's (2.6.0) and the runtime's (2.9.0). */
	doca_dpa_dev_sync_event_update_set(ev, (uint64_t)(doca_version()[2] - '0') << 8 |
						       (uint64_t)(doca_version_runtime()[2] - '0'));
}

__dpa_global__ void v26_srq_receive_kernel(doca_dpa_dev_rdma_srq_t srq, doca_dpa_dev_buf_arr_t arr, uint64_t offset,
					   uint64_t len)
{
	doca_dpa_dev_rdma_srq_post_receive(srq, doca_dpa_dev_buf_array_get_buf(arr, 0), offset, len);
}
