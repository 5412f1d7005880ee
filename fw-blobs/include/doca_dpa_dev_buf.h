/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * DOCA buffers from DPA code (the seed doca-dpa.txt, DOCA 2.9's buffer accessors, which 2.7
 * and 2.8 share; 2.6's external pointer takes an offset; names and signatures are DOCA's,
 * the layout is this project's, see mlx5_dpa_doca.h). A buffer array handle comes from the
 * host (mlx5_dpa::doca::DpaBufArray::dpa_handle); each buffer is an
 * address, a length and a memory map.
 */
#ifndef DOCA_DPA_DEV_BUF_H_
#define DOCA_DPA_DEV_BUF_H_

#include <doca_dpa_dev.h>

#ifdef __cplusplus
extern "C" {
#endif

/** One buffer of a buffer array. */
__dpa_global__ typedef uint64_t doca_dpa_dev_buf_t;
/** A buffer array as DPA code names it. */
__dpa_global__ typedef uint64_t doca_dpa_dev_buf_arr_t;

/** Buffer `buf_idx` of the array (no bounds check, as DOCA's). */
DOCA_EXPERIMENTAL doca_dpa_dev_buf_t doca_dpa_dev_buf_array_get_buf(doca_dpa_dev_buf_arr_t buf_arr, const uint64_t buf_idx);

DOCA_EXPERIMENTAL void doca_dpa_dev_buf_set_addr(doca_dpa_dev_buf_t buf, uintptr_t addr);
DOCA_EXPERIMENTAL uintptr_t doca_dpa_dev_buf_get_addr(doca_dpa_dev_buf_t buf);
DOCA_EXPERIMENTAL void doca_dpa_dev_buf_set_len(doca_dpa_dev_buf_t buf, size_t len);
DOCA_EXPERIMENTAL uint64_t doca_dpa_dev_buf_get_len(doca_dpa_dev_buf_t buf);
DOCA_EXPERIMENTAL void doca_dpa_dev_buf_set_mmap(doca_dpa_dev_buf_t buf, doca_dpa_dev_mmap_t mmap);
DOCA_EXPERIMENTAL doca_dpa_dev_mmap_t doca_dpa_dev_buf_get_mmap(doca_dpa_dev_buf_t buf);

#if MLX5_DPA_DOCA_DEV_API == 206
/** DOCA 2.6: as below, `buf_offset` bytes into the buffer. */
#define doca_dpa_dev_buf_get_external_ptr __doca_dpa_v26_buf_get_external_ptr
DOCA_EXPERIMENTAL doca_dpa_dev_uintptr_t doca_dpa_dev_buf_get_external_ptr(doca_dpa_dev_buf_t buf, uint64_t buf_offset);

/*
 * DOCA 2.6's copies by the thread itself: `length` bytes from `src_offset` of one buffer to
 * `dst_offset` of another, and a 2D transpose of `num_rows` x `num_columns` elements of
 * `element_size` bytes (element (r, c) to (c, r)). Here each is complete when it returns;
 * doca_dpa_dev_memcpy_synchronize orders them with what follows.
 */
DOCA_EXPERIMENTAL void doca_dpa_dev_memcpy_nb(doca_dpa_dev_buf_t dst_mem, uint64_t dst_offset, doca_dpa_dev_buf_t src_mem,
					      uint64_t src_offset, size_t length);
DOCA_EXPERIMENTAL void doca_dpa_dev_memcpy_transpose2D_nb(doca_dpa_dev_buf_t dst_mem, uint64_t dst_offset,
							  doca_dpa_dev_buf_t src_mem, uint64_t src_offset,
							  size_t length, size_t element_size, size_t num_columns,
							  size_t num_rows);
DOCA_EXPERIMENTAL void doca_dpa_dev_memcpy_synchronize(void);
#else
/**
 * A pointer DPA code can load and store through, to the buffer's memory: the buffer's address
 * itself for DPA memory, the context's window keyed with the buffer's map for host memory
 * (valid until the thread's next external-pointer or sync-event call, which re-key the window).
 */
DOCA_EXPERIMENTAL doca_dpa_dev_uintptr_t doca_dpa_dev_buf_get_external_ptr(doca_dpa_dev_buf_t buf);
#endif

#if MLX5_DPA_DOCA_DEV_API == 207
/* DOCA 2.7 / 2.8: the last argument is completion_requested, a completion when above 0. */
#define doca_dpa_dev_post_buf_memcpy __doca_dpa_v27_post_buf_memcpy
#endif

/** doca_dpa_dev_post_memcpy with the buffers' maps, addresses and the source's length. */
DOCA_EXPERIMENTAL void doca_dpa_dev_post_buf_memcpy(doca_dpa_dev_async_ops_t async_ops_handle,
						    doca_dpa_dev_buf_t dst_buf_handle, doca_dpa_dev_buf_t src_buf_handle,
						    uint32_t flags);

#ifdef __cplusplus
}
#endif

#endif /* DOCA_DPA_DEV_BUF_H_ */
