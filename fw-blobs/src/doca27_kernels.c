/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * A DOCA DPA kernel written against DOCA 2.7's (and 2.8's) device RDMA API, built with
 * DOCA_VERSION_MINOR=7 (build.sh): memory maps and addresses, no connection id,
 * completion_requested, doca_dpa_dev_rdma_synchronize. For tests/dpa/doca_dpa_v27.rs.
 *
 *   v27_rdma_kernel(rdma, op, lmap, laddr, rmap, raddr, len, arg)
 *        one 2.7 operation between local map lmap at laddr and remote map rmap at raddr:
 *        op 0 receive of len bytes (no synchronize), 1 send, 2 write, 3 read, 4
 *        fetch-and-add arg, 5 signal_set of remote event rmap to arg, 6 signal_add, 7 write
 *        in two halves, the first without a completion; every op but the receive asks for a
 *        completion and is followed by doca_dpa_dev_rdma_synchronize
 */
#include <doca_dpa_dev.h>
#include <doca_dpa_dev_buf.h>
#include <doca_dpa_dev_rdma.h>
#include <doca_dpa_dev_sync_event.h>

__dpa_global__ void v27_rdma_kernel(doca_dpa_dev_rdma_t rdma, uint64_t op, doca_dpa_dev_mmap_t lmap, uint64_t laddr,
				    doca_dpa_dev_mmap_t rmap, uint64_t raddr, uint64_t len, uint64_t arg)
{
	switch (op) {
	case 0:
		doca_dpa_dev_rdma_post_receive(rdma, lmap, laddr, len);
		return;
	case 1:
		doca_dpa_dev_rdma_post_send(rdma, lmap, laddr, len, 1);
		break;
	case 2:
		doca_dpa_dev_rdma_post_write(rdma, rmap, raddr, lmap, laddr, len, 1);
		break;
	case 3:
		doca_dpa_dev_rdma_post_read(rdma, lmap, laddr, rmap, raddr, len, 1);
		break;
	case 4:
		doca_dpa_dev_rdma_post_atomic_fetch_add(rdma, rmap, raddr, arg, 1);
		break;
	case 5:
		doca_dpa_dev_rdma_signal_set(rdma, rmap, arg);
		break;
	case 6:
		doca_dpa_dev_rdma_signal_add(rdma, rmap, arg);
		break;
	case 7:
		doca_dpa_dev_rdma_post_write(rdma, rmap, raddr, lmap, laddr, len / 2, 0);
		doca_dpa_dev_rdma_post_write(rdma, rmap, raddr + len / 2, lmap, laddr + len / 2, len - len / 2, 1);
		break;
	}
	doca_dpa_dev_rdma_synchronize(rdma);
}
