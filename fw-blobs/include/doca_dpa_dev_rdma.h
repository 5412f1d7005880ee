/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * RDMA from DPA code (DOCA DPA's device communication library as the seed doca-dpa.txt
 * documents it, DOCA 2.9: the memory-map forms; 2.6's and 2.7's as doca_dpa_dev.h selects them;
 * names and signatures are DOCA's, this text is this project's). An RDMA handle comes from the host (mlx5_dpa::doca::DpaRdma::dpa_handle);
 * its connections have ids 0 .. max connections - 1 (the host's RdmaConnection::id); an id it
 * does not have, or one not connected yet, stops the thread. Receives have no connection: the
 * RDMA's connections share its receive queue (or a shared one it was created on), and a receive
 * completion's user data names the connection it came in on. Completions go to the completion
 * context the RDMA is attached to; a DPA RDMA must not be used from two threads at once
 * (DOCA's rule; here posts take a lock anyway).
 */
#ifndef DOCA_DPA_DEV_RDMA_H_
#define DOCA_DPA_DEV_RDMA_H_

#include <doca_dpa_dev.h>
#include <doca_dpa_dev_buf.h>
#include <doca_dpa_dev_sync_event.h>

#ifdef __cplusplus
extern "C" {
#endif

/** An RDMA as DPA code names it. */
__dpa_global__ typedef uint64_t doca_dpa_dev_rdma_t;

/** A shared receive queue as DPA code names it (DOCA 2.6's `doca_rdma_srq` on the DPA). */
__dpa_global__ typedef uint64_t doca_dpa_dev_rdma_srq_t;

#if MLX5_DPA_DOCA_DEV_API == 206
/*
 * DOCA 2.6's device RDMA API (its public doca_dpa_dev_rdma.h; signatures are DOCA's): one
 * connection, buffers with offsets, every operation completing into the RDMA's completion
 * context, and doca_dpa_dev_rdma_synchronize to wait for all of them (it consumes the context's
 * completions, receives' included, and stops the thread on an error completion).
 */
#define doca_dpa_dev_rdma_read __doca_dpa_v26_rdma_read
#define doca_dpa_dev_rdma_write __doca_dpa_v26_rdma_write
#define doca_dpa_dev_rdma_post_send __doca_dpa_v26_rdma_post_send
#define doca_dpa_dev_rdma_post_receive __doca_dpa_v26_rdma_post_receive
#define doca_dpa_dev_rdma_atomic_fetch_add __doca_dpa_v26_rdma_atomic_fetch_add
#define doca_dpa_dev_rdma_signal_set __doca_dpa_v26_rdma_signal_set
#define doca_dpa_dev_rdma_signal_add __doca_dpa_v26_rdma_signal_add
#define doca_dpa_dev_rdma_synchronize __doca_dpa_v26_rdma_synchronize
#define doca_dpa_dev_rdma_srq_post_receive __doca_dpa_v26_rdma_srq_post_receive

/** Reads `length` bytes at `src_offset` of the remote buffer into `dst_offset` of the local one. */
DOCA_EXPERIMENTAL void doca_dpa_dev_rdma_read(doca_dpa_dev_rdma_t rdma, doca_dpa_dev_buf_t dst_mem, uint64_t dst_offset,
					      doca_dpa_dev_buf_t src_mem, uint64_t src_offset, size_t length);
/** Writes `length` bytes at `src_offset` of the local buffer to `dst_offset` of the remote one. */
DOCA_EXPERIMENTAL void doca_dpa_dev_rdma_write(doca_dpa_dev_rdma_t rdma, doca_dpa_dev_buf_t dst_mem, uint64_t dst_offset,
					       doca_dpa_dev_buf_t src_mem, uint64_t src_offset, size_t length);
/** Sends `length` bytes at `offset` of the buffer into the peer's next posted receive. */
DOCA_EXPERIMENTAL void doca_dpa_dev_rdma_post_send(doca_dpa_dev_rdma_t rdma, doca_dpa_dev_buf_t buf, uint64_t offset,
						   size_t length);
/** Posts a receive of up to `length` bytes at `offset` of the buffer. */
DOCA_EXPERIMENTAL void doca_dpa_dev_rdma_post_receive(doca_dpa_dev_rdma_t rdma, doca_dpa_dev_buf_t buf, uint64_t offset,
						      size_t length);
/** Adds `value` to the 8 bytes at `dst_offset` of the remote buffer, atomically. */
DOCA_EXPERIMENTAL void doca_dpa_dev_rdma_atomic_fetch_add(doca_dpa_dev_rdma_t rdma, doca_dpa_dev_buf_t dst_mem,
							  uint64_t dst_offset, size_t value);
/** Sets a peer's exported sync event to `count`. */
DOCA_EXPERIMENTAL void doca_dpa_dev_rdma_signal_set(doca_dpa_dev_rdma_t rdma,
						    doca_dpa_dev_sync_event_remote_net_t remote_sync_event,
						    uint64_t count);
/** Adds `count` to a peer's exported sync event. */
DOCA_EXPERIMENTAL void doca_dpa_dev_rdma_signal_add(doca_dpa_dev_rdma_t rdma,
						    doca_dpa_dev_sync_event_remote_net_t remote_sync_event,
						    uint64_t count);
/** Waits until every operation posted on the RDMA has completed. */
DOCA_EXPERIMENTAL void doca_dpa_dev_rdma_synchronize(doca_dpa_dev_rdma_t rdma);
/** Posts a receive of up to `length` bytes at `offset` of the buffer on a shared receive queue. */
DOCA_EXPERIMENTAL void doca_dpa_dev_rdma_srq_post_receive(doca_dpa_dev_rdma_srq_t rdma_srq, doca_dpa_dev_buf_t buf,
							  uint64_t offset, size_t length);

#elif MLX5_DPA_DOCA_DEV_API == 207
/*
 * DOCA 2.7's and 2.8's device RDMA API (signatures as DOCA 2.7 has them): memory maps and
 * addresses (or DOCA buffers), one connection and no connection id, `completion_requested`
 * (a completion when above 0) instead of submit flags, doca_dpa_dev_rdma_synchronize as in
 * 2.6. Receives, their acknowledgement and the buffer receive are as in 2.9. 2.7's shared
 * receive queue calls (doca_dpa_dev_rdma_srq_post_receive with a ring index,
 * doca_dpa_dev_rdma_srq_receive_ack) are not supported: calling one is a compile error.
 */
#define doca_dpa_dev_rdma_synchronize __doca_dpa_v26_rdma_synchronize
#define doca_dpa_dev_rdma_post_read __doca_dpa_v27_rdma_post_read
#define doca_dpa_dev_rdma_post_write __doca_dpa_v27_rdma_post_write
#define doca_dpa_dev_rdma_post_write_imm __doca_dpa_v27_rdma_post_write_imm
#define doca_dpa_dev_rdma_post_send __doca_dpa_v27_rdma_post_send
#define doca_dpa_dev_rdma_post_send_imm __doca_dpa_v27_rdma_post_send_imm
#define doca_dpa_dev_rdma_post_atomic_fetch_add __doca_dpa_v27_rdma_post_atomic_fetch_add
#define doca_dpa_dev_rdma_post_buf_read __doca_dpa_v27_rdma_post_buf_read
#define doca_dpa_dev_rdma_post_buf_write __doca_dpa_v27_rdma_post_buf_write
#define doca_dpa_dev_rdma_post_buf_write_imm __doca_dpa_v27_rdma_post_buf_write_imm
#define doca_dpa_dev_rdma_post_buf_send __doca_dpa_v27_rdma_post_buf_send
#define doca_dpa_dev_rdma_post_buf_send_imm __doca_dpa_v27_rdma_post_buf_send_imm
#define doca_dpa_dev_rdma_post_buf_atomic_fetch_add __doca_dpa_v27_rdma_post_buf_atomic_fetch_add
#define doca_dpa_dev_rdma_signal_set __doca_dpa_v26_rdma_signal_set
#define doca_dpa_dev_rdma_signal_add __doca_dpa_v26_rdma_signal_add

/** Waits until the last operation posted has completed; that operation must ask for a completion. */
DOCA_EXPERIMENTAL void doca_dpa_dev_rdma_synchronize(doca_dpa_dev_rdma_t rdma);
/** Reads `length` bytes at `src_addr` of the remote map into `dst_addr` of the local map. */
DOCA_EXPERIMENTAL void doca_dpa_dev_rdma_post_read(doca_dpa_dev_rdma_t rdma, doca_dpa_dev_mmap_t dst_mmap_handle,
						   uint64_t dst_addr, doca_dpa_dev_mmap_t src_mmap_handle,
						   uint64_t src_addr, size_t length, uint32_t completion_requested);
/** Writes `length` local bytes to `dst_addr` of the remote map. */
DOCA_EXPERIMENTAL void doca_dpa_dev_rdma_post_write(doca_dpa_dev_rdma_t rdma, doca_dpa_dev_mmap_t dst_mmap_handle,
						    uint64_t dst_addr, doca_dpa_dev_mmap_t src_mmap_handle,
						    uint64_t src_addr, size_t length, uint32_t completion_requested);
/** As post_write, and the peer gets a completion with `immediate` (consuming a receive). */
DOCA_EXPERIMENTAL void doca_dpa_dev_rdma_post_write_imm(doca_dpa_dev_rdma_t rdma, doca_dpa_dev_mmap_t dst_mmap_handle,
							uint64_t dst_addr, doca_dpa_dev_mmap_t src_mmap_handle,
							uint64_t src_addr, size_t length, uint32_t immediate,
							uint32_t completion_requested);
/** Sends `length` local bytes into the peer's next posted receive. */
DOCA_EXPERIMENTAL void doca_dpa_dev_rdma_post_send(doca_dpa_dev_rdma_t rdma, doca_dpa_dev_mmap_t mmap_handle,
						   uint64_t addr, size_t length, uint32_t completion_requested);
/** As post_send, with `immediate` in the peer's completion. */
DOCA_EXPERIMENTAL void doca_dpa_dev_rdma_post_send_imm(doca_dpa_dev_rdma_t rdma, doca_dpa_dev_mmap_t mmap_handle,
						       uint64_t addr, size_t length, uint32_t immediate,
						       uint32_t completion_requested);
/** Adds `value` to the 8 bytes at `dst_addr` of the remote map, atomically. */
DOCA_EXPERIMENTAL void doca_dpa_dev_rdma_post_atomic_fetch_add(doca_dpa_dev_rdma_t rdma,
							       doca_dpa_dev_mmap_t dst_mmap_handle, uint64_t dst_addr,
							       uint64_t value, uint32_t completion_requested);
/* The buffer forms: maps, addresses and lengths from DOCA buffers (the source's length). */
DOCA_EXPERIMENTAL void doca_dpa_dev_rdma_post_buf_read(doca_dpa_dev_rdma_t rdma, doca_dpa_dev_buf_t dst_buf_handle,
						       doca_dpa_dev_buf_t src_buf_handle, uint32_t completion_requested);
DOCA_EXPERIMENTAL void doca_dpa_dev_rdma_post_buf_write(doca_dpa_dev_rdma_t rdma, doca_dpa_dev_buf_t dst_buf_handle,
							doca_dpa_dev_buf_t src_buf_handle, uint32_t completion_requested);
DOCA_EXPERIMENTAL void doca_dpa_dev_rdma_post_buf_write_imm(doca_dpa_dev_rdma_t rdma, doca_dpa_dev_buf_t dst_buf_handle,
							    doca_dpa_dev_buf_t src_buf_handle, uint32_t immediate,
							    uint32_t completion_requested);
DOCA_EXPERIMENTAL void doca_dpa_dev_rdma_post_buf_send(doca_dpa_dev_rdma_t rdma, doca_dpa_dev_buf_t send_buf_handle,
						       uint32_t completion_requested);
DOCA_EXPERIMENTAL void doca_dpa_dev_rdma_post_buf_send_imm(doca_dpa_dev_rdma_t rdma, doca_dpa_dev_buf_t send_buf_handle,
							   uint32_t immediate, uint32_t completion_requested);
DOCA_EXPERIMENTAL void doca_dpa_dev_rdma_post_buf_atomic_fetch_add(doca_dpa_dev_rdma_t rdma,
								   doca_dpa_dev_buf_t dst_buf_handle, uint64_t value,
								   uint32_t completion_requested);
/** Posts a receive of up to `length` bytes into `addr` of the local map. */
DOCA_EXPERIMENTAL void doca_dpa_dev_rdma_post_receive(doca_dpa_dev_rdma_t rdma, doca_dpa_dev_mmap_t mmap_handle,
						      uint64_t addr, size_t length);
DOCA_EXPERIMENTAL void doca_dpa_dev_rdma_post_buf_receive(doca_dpa_dev_rdma_t rdma,
							  doca_dpa_dev_buf_t receive_buf_handle);
/** Frees `num_acked` receives whose data has been used. */
DOCA_EXPERIMENTAL void doca_dpa_dev_rdma_receive_ack(doca_dpa_dev_rdma_t rdma, uint32_t num_acked);
/** Sets a peer's exported sync event to `count`. */
DOCA_EXPERIMENTAL void doca_dpa_dev_rdma_signal_set(doca_dpa_dev_rdma_t rdma,
						    doca_dpa_dev_sync_event_remote_net_t remote_sync_event,
						    uint64_t count);
/** Adds `count` to a peer's exported sync event. */
DOCA_EXPERIMENTAL void doca_dpa_dev_rdma_signal_add(doca_dpa_dev_rdma_t rdma,
						    doca_dpa_dev_sync_event_remote_net_t remote_sync_event,
						    uint64_t count);
DOCA_EXPERIMENTAL void doca_dpa_dev_rdma_srq_post_receive(doca_dpa_dev_rdma_srq_t rdma_srq, uint32_t next_index)
	__attribute__((unavailable("DOCA 2.7's shared receive queue calls are not supported by mlx5-dpa")));
DOCA_EXPERIMENTAL void doca_dpa_dev_rdma_srq_receive_ack(doca_dpa_dev_rdma_srq_t rdma_srq, uint32_t num_acked)
	__attribute__((unavailable("DOCA 2.7's shared receive queue calls are not supported by mlx5-dpa")));

#else

/** Reads `length` bytes at `src_addr` of the remote map into `dst_addr` of the local map. */
DOCA_EXPERIMENTAL void doca_dpa_dev_rdma_post_read(doca_dpa_dev_rdma_t rdma, uint32_t connection_id,
						   doca_dpa_dev_mmap_t dst_mmap_handle, uint64_t dst_addr,
						   doca_dpa_dev_mmap_t src_mmap_handle, uint64_t src_addr,
						   size_t length, uint32_t flags);

/** Writes `length` local bytes to `dst_addr` of the remote map. */
DOCA_EXPERIMENTAL void doca_dpa_dev_rdma_post_write(doca_dpa_dev_rdma_t rdma, uint32_t connection_id,
						    doca_dpa_dev_mmap_t dst_mmap_handle, uint64_t dst_addr,
						    doca_dpa_dev_mmap_t src_mmap_handle, uint64_t src_addr,
						    size_t length, uint32_t flags);

/** As post_write, and the peer gets a completion with `immediate` (consuming a receive). */
DOCA_EXPERIMENTAL void doca_dpa_dev_rdma_post_write_imm(doca_dpa_dev_rdma_t rdma, uint32_t connection_id,
							doca_dpa_dev_mmap_t dst_mmap_handle, uint64_t dst_addr,
							doca_dpa_dev_mmap_t src_mmap_handle, uint64_t src_addr,
							size_t length, uint32_t immediate, uint32_t flags);

/** Sends `length` local bytes into the peer's next posted receive. */
DOCA_EXPERIMENTAL void doca_dpa_dev_rdma_post_send(doca_dpa_dev_rdma_t rdma, uint32_t connection_id,
						   doca_dpa_dev_mmap_t mmap_handle, uint64_t addr, size_t length,
						   uint32_t flags);

/** As post_send, with `immediate` in the peer's completion. */
DOCA_EXPERIMENTAL void doca_dpa_dev_rdma_post_send_imm(doca_dpa_dev_rdma_t rdma, uint32_t connection_id,
						       doca_dpa_dev_mmap_t mmap_handle, uint64_t addr, size_t length,
						       uint32_t immediate, uint32_t flags);

/** Posts a receive of up to `length` bytes into `addr` of the local map. */
DOCA_EXPERIMENTAL void doca_dpa_dev_rdma_post_receive(doca_dpa_dev_rdma_t rdma, doca_dpa_dev_mmap_t mmap_handle,
						      uint64_t addr, size_t length);

/** Frees `num_acked` receives whose data has been used; posting past the free ones stops the thread. */
DOCA_EXPERIMENTAL void doca_dpa_dev_rdma_receive_ack(doca_dpa_dev_rdma_t rdma, uint32_t num_acked);

/** Adds `value` to the 8 bytes at `dst_addr` of the remote map, atomically. */
DOCA_EXPERIMENTAL void doca_dpa_dev_rdma_post_atomic_fetch_add(doca_dpa_dev_rdma_t rdma, uint32_t connection_id,
							       doca_dpa_dev_mmap_t dst_mmap_handle, uint64_t dst_addr,
							       uint64_t value, uint32_t flags);

/** Sets a peer's exported sync event to `count` (an RDMA WRITE of the value). */
DOCA_EXPERIMENTAL void doca_dpa_dev_rdma_signal_set(doca_dpa_dev_rdma_t rdma, uint32_t connection_id,
						    doca_dpa_dev_sync_event_remote_net_t remote_sync_event,
						    uint64_t count);

/** Adds `count` to a peer's exported sync event (an RDMA atomic fetch-and-add). */
DOCA_EXPERIMENTAL void doca_dpa_dev_rdma_signal_add(doca_dpa_dev_rdma_t rdma, uint32_t connection_id,
						    doca_dpa_dev_sync_event_remote_net_t remote_sync_event,
						    uint64_t count);

/*
 * The buffer forms: maps, addresses and lengths come from DOCA buffers (doca_dpa_dev_buf.h);
 * a read or write moves the source buffer's length.
 */
DOCA_EXPERIMENTAL void doca_dpa_dev_rdma_post_buf_read(doca_dpa_dev_rdma_t rdma, uint32_t connection_id,
						       doca_dpa_dev_buf_t dst_buf_handle, doca_dpa_dev_buf_t src_buf_handle,
						       uint32_t flags);
DOCA_EXPERIMENTAL void doca_dpa_dev_rdma_post_buf_write(doca_dpa_dev_rdma_t rdma, uint32_t connection_id,
							doca_dpa_dev_buf_t dst_buf_handle, doca_dpa_dev_buf_t src_buf_handle,
							uint32_t flags);
DOCA_EXPERIMENTAL void doca_dpa_dev_rdma_post_buf_write_imm(doca_dpa_dev_rdma_t rdma, uint32_t connection_id,
							    doca_dpa_dev_buf_t dst_buf_handle,
							    doca_dpa_dev_buf_t src_buf_handle, uint32_t immediate,
							    uint32_t flags);
DOCA_EXPERIMENTAL void doca_dpa_dev_rdma_post_buf_send(doca_dpa_dev_rdma_t rdma, uint32_t connection_id,
						       doca_dpa_dev_buf_t send_buf_handle, uint32_t flags);
DOCA_EXPERIMENTAL void doca_dpa_dev_rdma_post_buf_send_imm(doca_dpa_dev_rdma_t rdma, uint32_t connection_id,
							   doca_dpa_dev_buf_t send_buf_handle, uint32_t immediate,
							   uint32_t flags);
DOCA_EXPERIMENTAL void doca_dpa_dev_rdma_post_buf_receive(doca_dpa_dev_rdma_t rdma,
							  doca_dpa_dev_buf_t receive_buf_handle);
DOCA_EXPERIMENTAL void doca_dpa_dev_rdma_post_buf_atomic_fetch_add(doca_dpa_dev_rdma_t rdma, uint32_t connection_id,
								   doca_dpa_dev_buf_t dst_buf_handle, uint64_t value,
								   uint32_t flags);

#endif /* MLX5_DPA_DOCA_DEV_API */

/** The work request index (the send or receive counter) of an RDMA completion. */
DOCA_EXPERIMENTAL uint32_t doca_dpa_dev_rdma_completion_get_wr_index(doca_dpa_dev_completion_element_t comp_element);

#ifdef __cplusplus
}
#endif

#endif /* DOCA_DPA_DEV_RDMA_H_ */
