/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * DOCA DPA device API: kernels and what they may call (DOCA DPA 2.6 `doca_dpa_dev.h` and the
 * seed doca-dpa.txt; names and signatures are DOCA's, this text is this project's). Built on
 * the FlexIO runtime of fw-blobs (runtime/doca_dpa.c); the host side is mlx5_dpa::doca.
 *
 * A kernel is a global function `__dpa_global__ void k(...)` the host launches by name
 * (doca_dpa_kernel_launch_update_set / _add, mlx5_dpa::doca::Dpa::kernel_launch). Its
 * arguments follow the RISC-V calling convention (LP64): up to eight integer registers, an
 * aggregate of up to 16 bytes in one or two of them, a larger one by reference to a copy the
 * host makes in DPA memory.
 */
#ifndef DOCA_DPA_DEV_H_
#define DOCA_DPA_DEV_H_

#include <doca_dpa_common.h>

#include <doca_version.h>

/** Device code (DOCA's headers mark it so). */
#define DOCA_DPA_DEVICE

/*
 * Which DOCA device API the buffer and RDMA headers declare, from the DOCA version the build
 * states (doca_version.h; 2.9 unless stated): MLX5_DPA_DOCA_DEV_API is 209 for DOCA 2.9 and
 * later (the seed's API, connections by id, submit flags), 207 for 2.7 and 2.8 (memory maps,
 * no connection id, completion_requested), 206 for 2.6 (buffers with offsets, one
 * connection, doca_dpa_dev_rdma_synchronize). The calls whose name stayed while their
 * arguments changed are macros onto separate runtime symbols (__doca_dpa_v26_*,
 * __doca_dpa_v27_*), so one runtime serves all three.
 */
#if DOCA_VERSION_MAJOR > 2 || (DOCA_VERSION_MAJOR == 2 && DOCA_VERSION_MINOR >= 9)
#define MLX5_DPA_DOCA_DEV_API 209
#elif DOCA_VERSION_MAJOR == 2 && DOCA_VERSION_MINOR >= 7
#define MLX5_DPA_DOCA_DEV_API 207
#elif DOCA_VERSION_MAJOR == 2 && DOCA_VERSION_MINOR == 6
#define MLX5_DPA_DOCA_DEV_API 206
#else
#error "these headers speak the DOCA DPA device API of DOCA 2.6 and later (DOCA_VERSION_MAJOR / _MINOR)"
#endif

#ifdef __cplusplus
extern "C" {
#endif

/** A DPA memory address. */
__dpa_global__ typedef uint64_t doca_dpa_dev_uintptr_t;

/** A DOCA DPA context as DPA code names it (the host's doca_dpa_get_dpa_handle). */
__dpa_global__ typedef uint64_t doca_dpa_dev_t;

/**
 * Selects the context whose resources the following calls use (DOCA's extended contexts, on
 * another function of the device, e.g. an SF): before any device call on a resource of an
 * extended context (an RDMA, say), in each run of a kernel or thread. A resource of another
 * function used without it stops the thread; the base context's resources need no call.
 */
DOCA_EXPERIMENTAL void doca_dpa_dev_device_set(doca_dpa_dev_t dpa_handle);

#ifndef __forceinline
#define __forceinline static inline __attribute__((always_inline))
#endif

/**
 * This thread's rank in the running kernel launch, or in its thread group for a DPA thread of
 * one: 0 .. doca_dpa_dev_num_threads() - 1 (0 for a DPA thread outside a group).
 */
DOCA_EXPERIMENTAL unsigned int doca_dpa_dev_thread_rank(void);

/** The number of threads running the current kernel launch, or of the DPA thread's group (1 outside one). */
DOCA_EXPERIMENTAL unsigned int doca_dpa_dev_num_threads(void);

/** Offers the EU to other threads; the kernel goes on from here. */
DOCA_EXPERIMENTAL void doca_dpa_dev_yield(void);

/* ---- DPA threads (doca_dpa_thread) ---- */

/**
 * Ends this activation of a DPA thread; the thread stays active and runs again on its next
 * notification or completion (at once if one is already waiting). Not for kernels of a
 * kernel launch.
 */
DOCA_EXPERIMENTAL __attribute__((noreturn)) void doca_dpa_dev_thread_reschedule(void);

/** Ends the DPA thread for good: it is marked finished and never runs again. */
DOCA_EXPERIMENTAL __attribute__((noreturn)) void doca_dpa_dev_thread_finish(void);

/** The DPA memory the host set as this thread's local storage (doca_dpa_thread_set_local_storage). */
DOCA_EXPERIMENTAL doca_dpa_dev_uintptr_t doca_dpa_dev_thread_get_local_storage(void);

/* ---- notification completions (doca_dpa_notification_completion) ---- */

/** A notification completion as DPA code names it (its handle from the host). */
__dpa_global__ typedef uint64_t doca_dpa_dev_notification_completion_t;

/**
 * Triggers the DPA thread the notification completion is attached to: it runs once for this
 * notification (notifications that arrive while it runs are each run after). Callable from
 * any DPA code of the context: kernels, DPA threads, RPCs.
 */
DOCA_EXPERIMENTAL void doca_dpa_dev_thread_notify(doca_dpa_dev_notification_completion_t comp_handle);

/**
 * Formats like printf and sends the text to the host's log (the context's default message
 * stream) as "[DOCA][DPA DEVICE][<LVL>] <text>", when `log_level` is at most the level the
 * host set (DOCA_DPA_DEV_LOG_LEVEL_INFO unless changed).
 */
DOCA_EXPERIMENTAL void doca_dpa_dev_log(doca_dpa_dev_log_level_t log_level, const char *format, ...)
	__attribute__((format(printf, 2, 3)));

/** Prints a formatted line to the host's standard output as it is (the DPA Subsystem guide's
 * `doca_dpa_dev_printf`; no level, no prefix). */
DOCA_EXPERIMENTAL void doca_dpa_dev_printf(const char *format, ...) __attribute__((format(printf, 1, 2)));

#define DOCA_DPA_DEV_LOG_CRIT(...) doca_dpa_dev_log(DOCA_DPA_DEV_LOG_LEVEL_CRIT, __VA_ARGS__)
#define DOCA_DPA_DEV_LOG_ERR(...) doca_dpa_dev_log(DOCA_DPA_DEV_LOG_LEVEL_ERROR, __VA_ARGS__)
#define DOCA_DPA_DEV_LOG_WARN(...) doca_dpa_dev_log(DOCA_DPA_DEV_LOG_LEVEL_WARNING, __VA_ARGS__)
#define DOCA_DPA_DEV_LOG_INFO(...) doca_dpa_dev_log(DOCA_DPA_DEV_LOG_LEVEL_INFO, __VA_ARGS__)
#define DOCA_DPA_DEV_LOG_DBG(...) doca_dpa_dev_log(DOCA_DPA_DEV_LOG_LEVEL_DEBUG, __VA_ARGS__)

/* ---- completion contexts (doca_dpa_completion) ---- */

/** A completion context as DPA code names it (its handle from the host). */
__dpa_global__ typedef uint64_t doca_dpa_dev_completion_t;
/** One completion read from a context (valid until acknowledged). */
__dpa_global__ typedef uint64_t doca_dpa_dev_completion_element_t;

/** What a completion element reports (the values of the NIC's CQE opcodes). */
typedef enum {
	DOCA_DPA_DEV_COMP_SEND = 0x0,                /**< Send completion */
	DOCA_DPA_DEV_COMP_RECV_RDMA_WRITE_IMM = 0x1, /**< Receive RDMA Write with Immediate completion */
	DOCA_DPA_DEV_COMP_RECV_SEND = 0x2,           /**< Receive Send completion */
	DOCA_DPA_DEV_COMP_RECV_SEND_IMM = 0x3,       /**< Receive Send with Immediate completion */
	DOCA_DPA_DEV_COMP_SEND_ERR = 0xD,            /**< Send Error completion */
	DOCA_DPA_DEV_COMP_RECV_ERR = 0xE,            /**< Receive Error completion */
} doca_dpa_dev_completion_type_t;

/** Reads the next completion not yet read into *comp_element: 1 if there was one, else 0. */
DOCA_EXPERIMENTAL int doca_dpa_dev_get_completion(doca_dpa_dev_completion_t dpa_comp_handle,
						  doca_dpa_dev_completion_element_t *comp_element);

/** The element's type. */
DOCA_EXPERIMENTAL doca_dpa_dev_completion_type_t
doca_dpa_dev_get_completion_type(doca_dpa_dev_completion_element_t comp_element);

/** The element's user data: the user_data of the async ops it completes (doca_dpa_async_ops_create). */
DOCA_EXPERIMENTAL uint32_t doca_dpa_dev_get_completion_user_data(doca_dpa_dev_completion_element_t comp_element);

/** The immediate data of a *_IMM completion. */
DOCA_EXPERIMENTAL uint32_t doca_dpa_dev_get_completion_immediate(doca_dpa_dev_completion_element_t comp_element);

/** Releases the `num_comp` oldest elements read, making room for new completions. */
DOCA_EXPERIMENTAL void doca_dpa_dev_completion_ack(doca_dpa_dev_completion_t dpa_comp_handle, uint64_t num_comp);

/** Asks for the attached thread to be triggered by the next completion. */
DOCA_EXPERIMENTAL void doca_dpa_dev_completion_request_notification(doca_dpa_dev_completion_t dpa_comp_handle);

/* ---- asynchronous operations (doca_dpa_async_ops) ---- */

/** Async ops as DPA code names them (their handle from the host). */
__dpa_global__ typedef uint64_t doca_dpa_dev_async_ops_t;
/** A memory map as DPA code names it (its handle from the host: DPA or host memory). */
__dpa_global__ typedef uint64_t doca_dpa_dev_mmap_t;

/** How an operation is submitted. */
enum doca_dpa_dev_submit_flag {
	DOCA_DPA_DEV_SUBMIT_FLAG_NONE = 0U,
	/** Hand this and earlier operations to the hardware now (here: always so). */
	DOCA_DPA_DEV_SUBMIT_FLAG_FLUSH = (1U << 0),
	/** The completion of this operation may be left out, reported by a later one's. */
	DOCA_DPA_DEV_SUBMIT_FLAG_OPTIMIZE_REPORTS = (1U << 1),
};

#if MLX5_DPA_DOCA_DEV_API == 207
/* DOCA 2.7 / 2.8: the last argument is completion_requested, a completion when above 0. */
#define doca_dpa_dev_post_memcpy __doca_dpa_v27_post_memcpy
#endif

/**
 * Copies `length` bytes from `src_addr` of `src_mmap_handle` to `dst_addr` of
 * `dst_mmap_handle` (addresses in each map's own address space: DPA addresses for DPA memory,
 * host addresses for host memory), without blocking; its completion arrives in the completion
 * context the async ops are attached to. At most the async ops' queue size may be outstanding.
 */
DOCA_EXPERIMENTAL void doca_dpa_dev_post_memcpy(doca_dpa_dev_async_ops_t async_ops_handle,
						doca_dpa_dev_mmap_t dst_mmap_handle, uint64_t dst_addr,
						doca_dpa_dev_mmap_t src_mmap_handle, uint64_t src_addr,
						size_t length, uint32_t flags);

/**
 * A pointer DPA code can load and store through, to `addr` of the map: `addr` itself for a map
 * over DPA memory; for host memory, the context's window keyed with the map (valid until the
 * thread's next external-pointer or sync-event call, which re-key the window). Reads of host
 * memory written by others need __dpa_thread_window_read_inv first, writes
 * __dpa_thread_window_writeback after (the DPA memory model).
 */
DOCA_EXPERIMENTAL doca_dpa_dev_uintptr_t doca_dpa_dev_mmap_get_external_ptr(doca_dpa_dev_mmap_t mmap_handle,
									  uint64_t addr);

/* ---- hash table (doca_dpa_hash_table) ---- */

/** A hash table as DPA code names it (its handle from the host). */
__dpa_global__ typedef uint64_t doca_dpa_dev_hash_table_t;

/** Maps `key` to `value` (replacing an earlier value). A table that is full stops the thread. */
DOCA_EXPERIMENTAL void doca_dpa_dev_hash_table_add(doca_dpa_dev_hash_table_t ht_handle, uint32_t key, uint64_t value);

/** Removes `key` (nothing if it is absent). */
DOCA_EXPERIMENTAL void doca_dpa_dev_hash_table_remove(doca_dpa_dev_hash_table_t ht_handle, uint32_t key);

/** Looks `key` up: 1 and *value when present, 0 when not. */
DOCA_EXPERIMENTAL int doca_dpa_dev_hash_table_find(doca_dpa_dev_hash_table_t ht_handle, uint32_t key, uint64_t *value);

/**
 * Adds a trace record of five values to the context's trace file (doca_dpa_trace_file_set_path
 * on the host; without one, records go nowhere). Each record is one line of the file.
 */
DOCA_EXPERIMENTAL void doca_dpa_dev_trace(uint64_t arg1, uint64_t arg2, uint64_t arg3, uint64_t arg4,
					  uint64_t arg5);

/** Sends buffered trace records to the host: nothing is buffered here, so it returns at once. */
DOCA_EXPERIMENTAL void doca_dpa_dev_trace_flush(void);

#ifdef __cplusplus
}
#endif

#endif /* DOCA_DPA_DEV_H_ */
