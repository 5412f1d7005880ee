/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * mlx5-dpa device runtime: the FlexIO device API, as far as the mlx5-dpa model's DPA
 * supports it, for DPA programs built with Debian's gcc-riscv64-unknown-elf.
 *
 * Function names and signatures follow NVIDIA FlexIO's libflexio-dev, so a FlexIO sample's
 * device code compiles against this header with few changes; the implementation is our own
 * and targets exactly the ABI in fw-blobs/README.md (docs/sources.md §4-§6):
 *
 *  - an activation starts at an entry symbol with a0 = the 64-bit argument, sp = top of a
 *    per-thread stack, tp = the thread context (struct flexio_dev_thread_ctx); returning
 *    from the entry function finishes the thread with a0 as the recorded return value;
 *  - the OS is reached with `ecall` (flexio_dev_dpa_arch.h);
 *  - doorbells are 64-bit stores to the thread's outbox page; host memory is reached
 *    through the thread's window.
 *
 * What FlexIO has and this runtime does not: the thread id getter, yield/retrigger, NIC
 * counters, PCC, the emulation doorbells, window copy helpers. RPCs need no generated code:
 * the runtime's generic unpack serves functions of up to eight u64 arguments
 * (mlx5_dpa_rpc_entry below).
 */
#ifndef MLX5_DPA_FLEXIO_DEV_H
#define MLX5_DPA_FLEXIO_DEV_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "flexio_dev_dpa_arch.h"
#include "flexio_dev_ver.h"

/*
 * The versions of the device API these headers implement. 25.01's own headers set no lower
 * bound (0.0.0, which only warns); so do these.
 */
#define FLEXIO_DEV_CURRENT_VERSION FLEXIO_DEV_VER(25, 1, 0)
#define FLEXIO_DEV_LAST_SUPPORTED_VERSION FLEXIO_DEV_VER(0, 0, 0)

/*
 * Which forms of the calls that changed in 24.10 the headers declare
 * (MLX5_DPA_FLEXIO_DEV_FORMS: 1 = before 24.10, 2 = 24.10 and later, 3 = both):
 *
 *  - before 24.10 the outbox doorbell calls (flexio_dev_qp_sq_ring_db, _cq_arm, _eq_update_ci,
 *    _zcqe_gen / _msix_send, _db_ctx_arm, _db_ctx_force_trigger, _cc_ring_db) take the thread
 *    context first and return flexio_dev_status_t, and the window calls take the thread
 *    context;
 *  - from 24.10 the doorbell calls take no thread context and return nothing, and the window
 *    calls take an enum flexio_window_entity.
 *
 * A program that states FLEXIO_DEV_VER_USED gets exactly its version's forms. One that states
 * none gets the newest version, as NVIDIA's 25.01 headers choose; since FlexIO 24.01 had no
 * way to state a version (it had no flexio_dev_ver.h), such a program's older calls are
 * recognised as well: the doorbell calls by their argument count, the window calls by the
 * type of their first argument.
 */
#ifndef FLEXIO_DEV_VER_USED
#define FLEXIO_DEV_VER_USED FLEXIO_DEV_CURRENT_VERSION
#define MLX5_DPA_FLEXIO_DEV_FORMS 3
#else
#if FLEXIO_DEV_VER_USED == FLEXIO_DEV_VER_LATEST
#undef FLEXIO_DEV_VER_USED
#define FLEXIO_DEV_VER_USED FLEXIO_DEV_CURRENT_VERSION
#endif
#if FLEXIO_DEV_VER_USED < FLEXIO_DEV_LAST_SUPPORTED_VERSION
#error "FLEXIO_DEV_VER_USED is older than FLEXIO_DEV_LAST_SUPPORTED_VERSION: move the program to a newer FlexIO device API"
#elif FLEXIO_DEV_VER_USED == FLEXIO_DEV_LAST_SUPPORTED_VERSION
#warning "FLEXIO_DEV_VER_USED is the oldest version still supported: support for it ends with the next version"
#elif FLEXIO_DEV_VER_USED > FLEXIO_DEV_CURRENT_VERSION
#error "FLEXIO_DEV_VER_USED is newer than these headers (FLEXIO_DEV_CURRENT_VERSION, 25.01)"
#endif
#if FLEXIO_DEV_VER_USED >= FLEXIO_DEV_VER(24, 10, 0)
#define MLX5_DPA_FLEXIO_DEV_FORMS 2
#else
#define MLX5_DPA_FLEXIO_DEV_FORMS 1
#endif
#endif

/*
 * MLX5_DPA_FLEXIO_DEV_CALL(f, n_old, n_new, args...) calls f_<n_old> (the pre-24.10 form, which
 * has n_old arguments) or f_<n_new> (the 24.10 one) as MLX5_DPA_FLEXIO_DEV_FORMS says; with
 * both forms, the one whose argument count matches.
 */
#define MLX5_DPA_CAT_(a, b) a##b
#define MLX5_DPA_CAT(a, b) MLX5_DPA_CAT_(a, b)
#define MLX5_DPA_NARGS_(_1, _2, _3, _4, _5, _6, _7, _8, n, ...) n
#define MLX5_DPA_NARGS(...) MLX5_DPA_NARGS_(__VA_ARGS__, 8, 7, 6, 5, 4, 3, 2, 1, 0)
#if MLX5_DPA_FLEXIO_DEV_FORMS == 3
#define MLX5_DPA_FLEXIO_DEV_CALL(f, n_old, n_new, ...) \
	MLX5_DPA_CAT(f##_, MLX5_DPA_NARGS(__VA_ARGS__))(__VA_ARGS__)
#elif MLX5_DPA_FLEXIO_DEV_FORMS == 2
#define MLX5_DPA_FLEXIO_DEV_CALL(f, n_old, n_new, ...) f##_##n_new(__VA_ARGS__)
#else
#define MLX5_DPA_FLEXIO_DEV_CALL(f, n_old, n_new, ...) f##_##n_old(__VA_ARGS__)
#endif

#include "flexio_dev_endianity.h"

typedef uint64_t flexio_uintptr_t;
/** A UAR's device id (what flexio_dev_outbox_config_uar_extension takes). */
typedef uint32_t flexio_uar_device_id;

#ifndef __unused
#define __unused __attribute__((__unused__))
#endif

/**
 * Marks a function the host starts by symbol name (event handler, RPC, command-queue
 * task): kept even if unreferenced, never inlined away, default visibility. The model finds
 * entries in the ELF symbol table, so this is all an entry needs.
 */
/* DPACC's clang places FlexIO's entry points in an `.entry_point` text section between these
 * two markers; with gcc and this project's link scripts every entry point is found by symbol,
 * so they expand to nothing. */
#define __FLEXIO_ENTRY_POINT_START
#define __FLEXIO_ENTRY_POINT_END

#ifndef __dpa_global__
#define __dpa_global__ __attribute__((used, noinline, visibility("default")))
#endif
#ifndef __dpa_rpc__
/** An RPC entry: `uint64_t f(uint64_t arg)`; the return value (a0) is what the host gets. */
#define __dpa_rpc__ __dpa_global__
#endif

/** Status of the flexio_dev_* calls. */
typedef enum {
	FLEXIO_DEV_STATUS_SUCCESS = 0,
	FLEXIO_DEV_STATUS_FAILED = 1,
} flexio_dev_status_t;

/** Entry types (documentation; the model passes one u64 in a0 to each). */
typedef uint64_t(flexio_dev_rpc_handler_t)(uint64_t arg);
typedef void(flexio_dev_event_handler_t)(uint64_t thread_arg);
typedef void(flexio_dev_async_rpc_handler_t)(uint64_t arg);

/* ------------------------------------------------------------------------------------- */
/* Threads                                                                                */
/* ------------------------------------------------------------------------------------- */

/**
 * Stores the running thread's context (the value of `tp`) in *dtctx. Always returns 0.
 * Cheap: no OS call. Call it once per activation, like FlexIO code does.
 */
static inline int flexio_dev_get_thread_ctx(struct flexio_dev_thread_ctx **dtctx)
{
	*dtctx = mlx5_dpa_thread_ctx();
	return 0;
}

/**
 * Ends this activation and waits for the thread's next event (DUAR_HANDLER_RETURN, a0 = 0);
 * the next event starts the entry function again from the top with the same argument.
 * State that must survive lives in DPA memory (globals or the argument's block), never on
 * the stack. Does not return.
 */
__attribute__((noreturn)) void flexio_dev_thread_reschedule(void);

/**
 * Ends this activation and marks the thread finished (DUAR_HANDLER_RETURN, a0 = 1): later
 * events do not start it. Returning from the entry function does the same, with the return
 * value recorded. Does not return.
 */
__attribute__((noreturn)) void flexio_dev_thread_finish(void);

/**
 * Stops the whole process with status 0 (EXIT_PROCESS, a0 = 0): no thread of the process
 * runs again. Does not return.
 */
__attribute__((noreturn)) void flexio_dev_process_finish(void);

/** The older name of flexio_dev_thread_reschedule. */
__attribute__((noreturn, deprecated)) void flexio_dev_reschedule(void);
/** The older name of flexio_dev_process_finish. */
__attribute__((noreturn, deprecated)) void flexio_dev_finish(void);

/**
 * The exit point of a continuable event handler (created with `continuable`): the
 * activation ends here and the thread's next event resumes execution after this call, with
 * the registers and stack as they were. For a thread that is not continuable the call has no
 * effect and returns at once. (DUAR_HANDLER_RETURN with MLX5_DPA_HANDLER_RETURN_YIELD.)
 */
void flexio_dev_yield(struct flexio_dev_thread_ctx *dtctx);

/**
 * Ends the activation and runs the thread again at once, from its entry, without waiting
 * for an event (DUAR_HANDLER_RETURN with MLX5_DPA_HANDLER_RETURN_RETRIGGER). Does not return.
 */
__attribute__((noreturn)) void flexio_dev_thread_retrigger(void);

/** The running thread's id (its DPA_THREAD object id, as the host sees it). */
static inline uint32_t flexio_dev_get_thread_id(struct flexio_dev_thread_ctx *dtctx)
{
	return *(volatile uint32_t *)&dtctx->thread_id;
}

/**
 * The thread's local storage: the DPA address the host gave as thread_local_storage_daddr
 * when it created the thread (0 for none). The model keeps it in the context's
 * metadata_parameter word; FlexIO reaches it through its own metadata there.
 */
static inline flexio_uintptr_t flexio_dev_get_thread_local_storage(struct flexio_dev_thread_ctx *dtctx)
{
	return *(volatile uint64_t *)&dtctx->metadata_parameter;
}

/* ------------------------------------------------------------------------------------- */
/* NIC counters and congestion control                                                    */
/* ------------------------------------------------------------------------------------- */

/** The NIC counters a process can sample: bytes received / sent by ports 0..3. */
enum flexio_dev_nic_counter_ids {
	FLEXIO_DEV_NIC_COUNTER_PORT0_RX_BYTES = 0x10,
	FLEXIO_DEV_NIC_COUNTER_PORT1_RX_BYTES = 0x11,
	FLEXIO_DEV_NIC_COUNTER_PORT2_RX_BYTES = 0x12,
	FLEXIO_DEV_NIC_COUNTER_PORT3_RX_BYTES = 0x13,

	FLEXIO_DEV_NIC_COUNTER_PORT0_TX_BYTES = 0x20,
	FLEXIO_DEV_NIC_COUNTER_PORT1_TX_BYTES = 0x21,
	FLEXIO_DEV_NIC_COUNTER_PORT2_TX_BYTES = 0x22,
	FLEXIO_DEV_NIC_COUNTER_PORT3_TX_BYTES = 0x23,
};

/**
 * Chooses the NIC counters flexio_dev_nic_counters_sample() reads: `num_counters` ids from
 * `counter_ids`, each sampled into the 32-bit word of `values` at the same index. The OS keeps
 * the list; one configuration per process, a later call replaces it. Both arrays must be in
 * global or heap memory (not on the stack). The process crashes (coredump cause
 * RtosCallRefused) on an unknown id, on too many ids (the model allows 8) and on arrays
 * outside global or heap memory. (OS call NIC_COUNTERS_CONFIG.)
 */
void flexio_dev_nic_counters_config(uint32_t *values, uint32_t *counter_ids, uint32_t num_counters);

/**
 * Stores the current value of each configured counter, as 32 bits that wrap, into the
 * configured values array. The process crashes if no configuration was made. (OS call
 * NIC_COUNTERS_SAMPLE.) The model has one port, port 0; the ids of ports it lacks read 0.
 */
void flexio_dev_nic_counters_sample(void);

/**
 * The base address of the programmable-congestion-control table of function `gvmi`. The model
 * runs no PCC processes and answers 0 for every GVMI. (OS call GET_PCC_TABLE_BASE.)
 */
uint64_t flexio_dev_get_pcc_table_base(uint16_t gvmi);

/* ------------------------------------------------------------------------------------- */
/* Outbox and window                                                                      */
/* ------------------------------------------------------------------------------------- */

/**
 * Selects outbox `outbox_config_id` for this thread (OUTBOX_SET_CFG). Afterwards
 * dtctx->outbox_base is the page the doorbell helpers store to. Returns FAILED when the OS
 * refused (the id is not an outbox of this process; errno says why) and the old outbox stays.
 */
flexio_dev_status_t flexio_dev_outbox_config(struct flexio_dev_thread_ctx *dtctx,
					     uint16_t outbox_config_id);

/** Same as flexio_dev_outbox_config (FlexIO's unchecked variant). */
void flexio_dev_outbox_config_fast(struct flexio_dev_thread_ctx *dtctx, uint16_t outbox_config_id);

/**
 * Makes the outbox act on the function with GVMI `device_id` (OUTBOX_SET_GVMI). The model
 * accepts only the process's own function; FAILED otherwise.
 */
flexio_dev_status_t flexio_dev_outbox_config_uar_extension(struct flexio_dev_thread_ctx *dtctx,
							   uint32_t device_id);

/**
 * A thread's windows (FlexIO 24.10). The model gives each thread one window, entity 0; the
 * calls below answer FLEXIO_DEV_STATUS_FAILED for entity 1.
 */
enum flexio_window_entity {
	FLEXIO_DEV_WINDOW_ENTITY_0 = 0,
	FLEXIO_DEV_WINDOW_ENTITY_1 = 1,
	FLEXIO_DEV_WINDOW_ENTITY_NUM = 2,
};

/**
 * Selects window `window_config_id` (WINDOW_SET_CFG) and keys it with `mkey` (a 64-bit store of
 * the mkey to the thread context's window_config_base). Afterwards host address H of that mkey
 * is at DPA address window_base + H. Returns FAILED when the OS refused the id (nothing stored
 * then) or the thread ends up with no window.
 */
flexio_dev_status_t flexio_dev_multi_window_config(enum flexio_window_entity win_entity,
						   uint16_t window_config_id, uint32_t mkey);

/**
 * Re-keys the currently selected window with `mkey` (store to window_config_base only).
 * Returns FAILED when the thread has no window (window_config_base == 0).
 */
flexio_dev_status_t flexio_dev_multi_window_mkey_config(enum flexio_window_entity win_entity,
							uint32_t mkey);

/**
 * The DPA address at which host address `haddr` of the current window's mkey appears:
 * *daddr = window_base + haddr. Returns FAILED (and leaves *daddr alone) when the thread has
 * no window (window_base == 0).
 */
static inline flexio_dev_status_t flexio_dev_multi_window_ptr_acquire(
	enum flexio_window_entity win_entity, uint64_t haddr, flexio_uintptr_t *daddr)
{
	struct flexio_dev_thread_ctx *dtctx = mlx5_dpa_thread_ctx();

	if (win_entity != FLEXIO_DEV_WINDOW_ENTITY_0 || dtctx->window_base == 0)
		return FLEXIO_DEV_STATUS_FAILED;
	*daddr = dtctx->window_base + haddr;
	return FLEXIO_DEV_STATUS_SUCCESS;
}

/**
 * Copies between host memory and DPA memory through the window. FlexIO documents both as
 * unsupported, and so are they here: they return FLEXIO_DEV_STATUS_FAILED (use
 * flexio_dev_window_ptr_acquire and ordinary loads and stores).
 */
static inline flexio_dev_status_t flexio_dev_multi_window_copy_from_host(
	enum flexio_window_entity win_entity, void *daddr, uint64_t haddr, uint32_t size)
{
	(void)win_entity;
	(void)daddr;
	(void)haddr;
	(void)size;
	return FLEXIO_DEV_STATUS_FAILED;
}

static inline flexio_dev_status_t flexio_dev_multi_window_copy_to_host(
	enum flexio_window_entity win_entity, uint64_t haddr, const void *daddr, uint32_t size)
{
	(void)win_entity;
	(void)haddr;
	(void)daddr;
	(void)size;
	return FLEXIO_DEV_STATUS_FAILED;
}

/*
 * flexio_dev_window_config, _mkey_config, _ptr_acquire, _copy_from_host and _copy_to_host:
 * from 24.10 the multi-window calls above (`_entity` forms); before, the same with the thread
 * context first, on window entity 0 (`_ctx` forms).
 */
#define MLX5_DPA_FLEXIO_DEV_WINDOW_FORMS(f, args, call_args)                                 \
	static inline flexio_dev_status_t mlx5_dpa_flexio_dev_window_##f##_entity(               \
		enum flexio_window_entity win_entity, MLX5_DPA_UNPAREN args)                      \
	{                                                                                       \
		return flexio_dev_multi_window_##f(win_entity, MLX5_DPA_UNPAREN call_args);      \
	}                                                                                       \
	static inline flexio_dev_status_t mlx5_dpa_flexio_dev_window_##f##_ctx(                  \
		struct flexio_dev_thread_ctx *dtctx, MLX5_DPA_UNPAREN args)                       \
	{                                                                                       \
		(void)dtctx;                                                                    \
		return flexio_dev_multi_window_##f(FLEXIO_DEV_WINDOW_ENTITY_0,                   \
						   MLX5_DPA_UNPAREN call_args);                   \
	}
#define MLX5_DPA_UNPAREN(...) __VA_ARGS__
MLX5_DPA_FLEXIO_DEV_WINDOW_FORMS(config, (uint16_t window_config_id, uint32_t mkey),
				 (window_config_id, mkey))
MLX5_DPA_FLEXIO_DEV_WINDOW_FORMS(mkey_config, (uint32_t mkey), (mkey))
MLX5_DPA_FLEXIO_DEV_WINDOW_FORMS(ptr_acquire, (uint64_t haddr, flexio_uintptr_t *daddr),
				 (haddr, daddr))
MLX5_DPA_FLEXIO_DEV_WINDOW_FORMS(copy_from_host, (void *daddr, uint64_t haddr, uint32_t size),
				 (daddr, haddr, size))
MLX5_DPA_FLEXIO_DEV_WINDOW_FORMS(copy_to_host, (uint64_t haddr, const void *daddr, uint32_t size),
				 (haddr, daddr, size))

#if MLX5_DPA_FLEXIO_DEV_FORMS == 3
#define MLX5_DPA_FLEXIO_DEV_WINDOW(f, first)                                                \
	_Generic((first), struct flexio_dev_thread_ctx *: mlx5_dpa_flexio_dev_window_##f##_ctx, \
		 default: mlx5_dpa_flexio_dev_window_##f##_entity)
#elif MLX5_DPA_FLEXIO_DEV_FORMS == 2
#define MLX5_DPA_FLEXIO_DEV_WINDOW(f, first) mlx5_dpa_flexio_dev_window_##f##_entity
#else
#define MLX5_DPA_FLEXIO_DEV_WINDOW(f, first) mlx5_dpa_flexio_dev_window_##f##_ctx
#endif
#define flexio_dev_window_config(first, ...) \
	MLX5_DPA_FLEXIO_DEV_WINDOW(config, first)(first, __VA_ARGS__)
#define flexio_dev_window_mkey_config(first, ...) \
	MLX5_DPA_FLEXIO_DEV_WINDOW(mkey_config, first)(first, __VA_ARGS__)
#define flexio_dev_window_ptr_acquire(first, ...) \
	MLX5_DPA_FLEXIO_DEV_WINDOW(ptr_acquire, first)(first, __VA_ARGS__)
#define flexio_dev_window_copy_from_host(first, ...) \
	MLX5_DPA_FLEXIO_DEV_WINDOW(copy_from_host, first)(first, __VA_ARGS__)
#define flexio_dev_window_copy_to_host(first, ...) \
	MLX5_DPA_FLEXIO_DEV_WINDOW(copy_to_host, first)(first, __VA_ARGS__)

/* ------------------------------------------------------------------------------------- */
/* Spinlock (AMO based; shared DPA memory)                                                */
/* ------------------------------------------------------------------------------------- */

/** A spinlock in DPA memory: 0 = free, 1 = held. Zero-initialised memory is a free lock. */
struct spinlock_s {
	uint32_t locked;
};

/** Marks the lock free. */
static inline void spin_init(struct spinlock_s *lock)
{
	__atomic_store_n(&lock->locked, 0, __ATOMIC_RELEASE);
}

/** One attempt (amoswap.w.aq): returns 0 when the lock was taken, non-zero when busy. */
static inline uint32_t spin_trylock(struct spinlock_s *lock)
{
	return __atomic_exchange_n(&lock->locked, 1, __ATOMIC_ACQUIRE);
}

/** Takes the lock, spinning without bound (FlexIO semantics). Prefer mlx5_dpa_spin_lock_bounded. */
static inline void spin_lock(struct spinlock_s *lock)
{
	while (spin_trylock(lock))
		;
}

/** Takes the lock within `tries` attempts: returns 0 when held, -1 when it stayed busy. */
static inline int mlx5_dpa_spin_lock_bounded(struct spinlock_s *lock, uint32_t tries)
{
	while (tries--) {
		if (!spin_trylock(lock))
			return 0;
	}
	return -1;
}

/** Releases the lock (store-release). */
static inline void spin_unlock(struct spinlock_s *lock)
{
	__atomic_store_n(&lock->locked, 0, __ATOMIC_RELEASE);
}

/* ------------------------------------------------------------------------------------- */
/* Messages to the host (message streams; see mlx5_dpa_msg_stream.h)                    */
/* ------------------------------------------------------------------------------------- */

/** Stream ids: 0 is the default stream; 0xff sends to every configured stream. */
#define FLEXIO_MSG_DEV_DEFAULT_STREAM_ID 0
#define FLEXIO_MSG_DEV_BROADCAST_STREAM 0xff
/** Streams this runtime supports (ids 0..3). FlexIO allows 255. */
#define FLEXIO_MSG_DEV_MAX_STREAMS_AMOUNT 255

/**
 * Message levels (FlexIO values). A stream configured with level L posts a message of level
 * M when 1 <= M <= L, and drops it otherwise (NO_PRINT messages are always dropped).
 */
#define FLEXIO_MSG_DEV_NO_PRINT 0
#define FLEXIO_MSG_DEV_ALWAYS_PRINT 1
#define FLEXIO_MSG_DEV_ERROR 2
#define FLEXIO_MSG_DEV_WARN 3
#define FLEXIO_MSG_DEV_INFO 4
#define FLEXIO_MSG_DEV_DEBUG 5
typedef uint8_t flexio_msg_dev_level;

/** Longest message in bytes; longer ones are truncated (also to the stream's slot size). */
#define MLX5_DPA_MSG_MAX_LEN 256

/** Negative results of flexio_dev_msg / flexio_dev_puts. */
enum mlx5_dpa_msg_status {
	/** The stream id is out of range or the host never configured that stream. */
	MLX5_DPA_MSG_ERR_NO_STREAM = -1,
	/** The thread has no outbox (outbox_base == 0) to ring the stream's send queue. */
	MLX5_DPA_MSG_ERR_NO_OUTBOX = -2,
	/** The stream's lock stayed busy for FLEXIO_MSG_DEV_LOCK_TRIES attempts. */
	MLX5_DPA_MSG_ERR_BUSY = -3,
	/** The stream's send queue stayed full for FLEXIO_MSG_DEV_FULL_POLLS polls of its CQ. */
	MLX5_DPA_MSG_ERR_FULL = -4,
	/** The stream's send queue completed a message with an error CQE; the stream is dead. */
	MLX5_DPA_MSG_ERR_QUEUE = -5,
};

/**
 * Formats like printf (see mlx5_dpa_vsnprintf for the conversions) and posts the text as
 * one SEND on stream `stream_id` if `level` passes the stream's level. Safe from many threads
 * at once (per-stream AMO spinlock around the post). Returns the number of bytes posted,
 * 0 when the level filter dropped the message, or a negative mlx5_dpa_msg_status.
 * With FLEXIO_MSG_DEV_BROADCAST_STREAM, posts to every configured stream and returns the
 * byte count if at least one stream took it.
 */
int flexio_dev_msg(int stream_id, flexio_msg_dev_level level, const char *format, ...)
	__attribute__((format(printf, 3, 4)));

/** flexio_dev_msg with a va_list. */
int mlx5_dpa_vmsg(int stream_id, flexio_msg_dev_level level, const char *format, va_list ap);

#define flexio_dev_msg_err(strm_id, ...) flexio_dev_msg(strm_id, FLEXIO_MSG_DEV_ERROR, __VA_ARGS__)
#define flexio_dev_msg_warn(strm_id, ...) flexio_dev_msg(strm_id, FLEXIO_MSG_DEV_WARN, __VA_ARGS__)
#define flexio_dev_msg_info(strm_id, ...) flexio_dev_msg(strm_id, FLEXIO_MSG_DEV_INFO, __VA_ARGS__)
#define flexio_dev_msg_dbg(strm_id, ...) flexio_dev_msg(strm_id, FLEXIO_MSG_DEV_DEBUG, __VA_ARGS__)
#define flexio_dev_msg_dflt(lvl, ...) \
	flexio_dev_msg(FLEXIO_MSG_DEV_DEFAULT_STREAM_ID, lvl, __VA_ARGS__)
#define flexio_dev_msg_broadcast(lvl, ...) \
	flexio_dev_msg(FLEXIO_MSG_DEV_BROADCAST_STREAM, lvl, __VA_ARGS__)

/**
 * printf to the default stream (0) at level INFO, as FlexIO's flexio_dev_print. Returns what
 * flexio_dev_msg returns: negative (no crash) when the host configured no stream 0.
 */
#define flexio_dev_print(...) \
	flexio_dev_msg(FLEXIO_MSG_DEV_DEFAULT_STREAM_ID, FLEXIO_MSG_DEV_INFO, __VA_ARGS__)

/** Posts `str` as is to the default stream at level INFO; same results as flexio_dev_msg. */
int flexio_dev_puts(struct flexio_dev_thread_ctx *dtctx, char *str);

/**
 * The formatter behind the messages (pure; no OS, no queue). Writes at most size - 1
 * characters and a NUL (when size > 0) and returns the length the full text would have.
 * Conversions: %d %i %u %x %X %o %c %s %p %%; length modifiers h hh l ll z t j (values are
 * read as int, long or long long as C says); flags '-' '0' ' ' '+' '#'; field width and
 * precision as numbers or '*'. %p prints 0x and 16 hex digits; %s of NULL prints "(null)".
 * Unknown conversions are copied verbatim.
 */
int mlx5_dpa_vsnprintf(char *buf, size_t size, const char *fmt, va_list ap);
int mlx5_dpa_snprintf(char *buf, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* ------------------------------------------------------------------------------------- */
/* RPC: pack on the host, unpack on the device                                            */
/* ------------------------------------------------------------------------------------- */

/*
 * An unpack function (FlexIO `flexio_func_pup_register`): reads the arguments the host packed
 * into `argbuf` and calls `func` with them; what it returns is the call's result.
 */
typedef uint64_t(flexio_dev_arg_unpack_func_t)(void *argbuf, void *func);

/*
 * A call as the mlx5-dpa host writes it into DPA memory (8-byte aligned): the call's thread
 * starts at mlx5_dpa_rpc_entry with a0 = the struct's address. The entry runs
 * `unpack(arg_buf, func)`, stores its result in `ret` and returns it (the thread's return
 * value, which the host reads back).
 */
struct mlx5_dpa_rpc_call {
	uint64_t unpack; /* flexio_dev_arg_unpack_func_t * */
	uint64_t func;	 /* the RPC function */
	uint64_t ret;	 /* written by mlx5_dpa_rpc_entry */
	uint64_t reserved;
	uint64_t arg_buf[]; /* what the host packed */
};

uint64_t mlx5_dpa_rpc_entry(uint64_t call_daddr);

/*
 * The generic unpack: `arg_buf` holds eight u64 words (the host pads with zeros), passed to
 * `func` as its first eight arguments. Serves every function of up to eight u64 (or
 * narrower integer or pointer) parameters, which is what `process.call` sends.
 */
uint64_t mlx5_dpa_rpc_unpack_u64(void *arg_buf, void *func);

#endif /* MLX5_DPA_FLEXIO_DEV_H */
