/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * selftest: small entries for the model's own tests (DPA engine, FlexIO-OS calls, outbox,
 * window, scheduling, faults). Each is documented at its definition and in the README;
 * argument blocks are in selftest.h. "Pure" entries make no OS call and touch no thread
 * context, so they also run on the bare `vm run` machine.
 */
#include <stdint.h>

#include <libflexio-dev/flexio_dev.h>
#include <libflexio-libc/string.h>
#include <libflexio-dev/flexio_dev_queue_access.h>
#include <libflexio-dev/flexio_dev_debug.h>
#include <libflexio-dev/flexio_dev_tracer.h>
#include <dpaintrin.h>
#include "selftest.h"

uint64_t st_add(uint64_t x);
uint64_t st_add2(uint64_t a, uint64_t b);
void st_spin_forever(void);
uint64_t st_fault_load(uint64_t addr);
uint64_t st_store(uint64_t addr);
uint64_t st_illegal(void);
uint64_t st_ebreak(void);
void st_exit(uint64_t status);
void st_finish(void);
uint64_t st_get_duar(void);
uint64_t st_outbox_db(uint64_t args_daddr);
uint64_t st_outbox_gvmi(uint64_t gvmi);
uint64_t st_window_rw(uint64_t args_daddr);
void st_counter(uint64_t daddr);
uint64_t st_tls(uint64_t x);
uint64_t st_ctx_dump(uint64_t daddr);
uint64_t st_gp_global(uint64_t x);
uint64_t st_stack(uint64_t bytes);
uint64_t st_print(uint64_t x);
uint64_t st_msg(uint64_t stream_and_level);
uint64_t st_format_check(void);
uint64_t st_thread_id(uint64_t daddr);
uint64_t st_yield(uint64_t daddr);
uint64_t st_retrigger(uint64_t daddr);
uint64_t st_msix(uint64_t cqn);
uint64_t st_window_copy(uint64_t daddr);
uint64_t st_time(uint64_t daddr);
uint64_t st_sim(uint64_t x);
uint64_t st_wqe_nop(uint64_t args_daddr);
uint64_t st_window_marks(uint64_t args_daddr);
uint64_t st_window_poll(uint64_t args_daddr);
uint64_t st_trace(uint64_t x);
uint64_t st_nic_counters(uint64_t args_daddr);

/** Pure. Returns x + 1. */
__dpa_global__ uint64_t st_add(uint64_t x)
{
	return x + 1;
}

/** Pure. Returns a0 + a1 (for the bare machine, which can set several argument registers). */
__dpa_global__ uint64_t st_add2(uint64_t a, uint64_t b)
{
	return a + b;
}

/** Pure. Never returns: a one-instruction loop, for the watchdog / instruction budget. */
__dpa_global__ void st_spin_forever(void)
{
	for (;;)
		__asm__ volatile("");
}

/** Returns the u64 loaded from `addr` (unmapped / misaligned / text address -> load fault). */
__dpa_global__ uint64_t st_fault_load(uint64_t addr)
{
	return *(volatile uint64_t *)(uintptr_t)addr;
}

/** Stores ST_STORE_VALUE (8 bytes) at `addr` and returns 0 (bad address -> store fault). */
__dpa_global__ uint64_t st_store(uint64_t addr)
{
	*(volatile uint64_t *)(uintptr_t)addr = ST_STORE_VALUE;
	return 0;
}

/** Executes 0x0000000b, an instruction of the unused custom-0 space: illegal instruction. */
__dpa_global__ uint64_t st_illegal(void)
{
	__asm__ volatile(".insn r CUSTOM_0, 0, 0, x0, x0, x0" ::: "memory");
	return 0;
}

/** Executes `ebreak`. */
__dpa_global__ uint64_t st_ebreak(void)
{
	__asm__ volatile("ebreak" ::: "memory");
	return 0;
}

/** EXIT_PROCESS with a0 = status (unfiltered, unlike flexio_dev_error). Does not return. */
__dpa_global__ void st_exit(uint64_t status)
{
	mlx5_dpa_os_call1_noreturn(MLX5_DPA_OS_EXIT_PROCESS, status);
}

/** Ends the thread with DUAR_HANDLER_RETURN(1) instead of a return. */
__dpa_global__ void st_finish(void)
{
	flexio_dev_thread_finish();
}

/** GET_DUAR; returns what the OS left in a0. */
__dpa_global__ uint64_t st_get_duar(void)
{
	return mlx5_dpa_os_call1(MLX5_DPA_OS_GET_DUAR, 0);
}

/**
 * Selects outbox args->outbox_id (unless ST_OUTBOX_KEEP), then stores args->value (64-bit)
 * at outbox_base + args->reg. Returns the outbox_base it used, or ST_FAILED (nothing stored)
 * when OUTBOX_SET_CFG failed.
 */
__dpa_global__ uint64_t st_outbox_db(uint64_t args_daddr)
{
	volatile struct st_outbox_args *a = (volatile struct st_outbox_args *)(uintptr_t)args_daddr;
	struct flexio_dev_thread_ctx *dtctx;
	uint64_t base;

	flexio_dev_get_thread_ctx(&dtctx);
	if (a->outbox_id != ST_OUTBOX_KEEP &&
	    flexio_dev_outbox_config(dtctx, (uint16_t)a->outbox_id) != FLEXIO_DEV_STATUS_SUCCESS)
		return ST_FAILED;
	base = *(volatile uint64_t *)&dtctx->outbox_base;
	mlx5_dpa_outbox_write(base, a->reg, a->value);
	return base;
}

/** OUTBOX_SET_GVMI with a0 = gvmi; returns 0, or ST_FAILED when the OS refused. */
__dpa_global__ uint64_t st_outbox_gvmi(uint64_t gvmi)
{
	struct flexio_dev_thread_ctx *dtctx;

	flexio_dev_get_thread_ctx(&dtctx);
	if (flexio_dev_outbox_config_uar_extension(dtctx, (uint32_t)gvmi) != FLEXIO_DEV_STATUS_SUCCESS)
		return ST_FAILED;
	return 0;
}

/**
 * Window round trip: select + key the window, read the u64 at haddr (old_value), store
 * write_value, read it back (new_value). Returns new_value, or ST_FAILED (no access made)
 * when WINDOW_SET_CFG failed or the thread has no window.
 */
__dpa_global__ uint64_t st_window_rw(uint64_t args_daddr)
{
	volatile struct st_window_args *a = (volatile struct st_window_args *)(uintptr_t)args_daddr;
	struct flexio_dev_thread_ctx *dtctx;
	flexio_uintptr_t daddr;
	volatile uint64_t *p;

	flexio_dev_get_thread_ctx(&dtctx);
	if (flexio_dev_window_config(dtctx, (uint16_t)a->window_id, a->mkey) != FLEXIO_DEV_STATUS_SUCCESS ||
	    flexio_dev_window_ptr_acquire(dtctx, a->haddr, &daddr) != FLEXIO_DEV_STATUS_SUCCESS)
		return ST_FAILED;
	a->daddr = daddr;
	p = (volatile uint64_t *)(uintptr_t)daddr;
	a->old_value = *p;
	*p = a->write_value;
	a->new_value = *p;
	return a->new_value;
}

/**
 * Event-handler style: atomically adds 1 to the u64 at `daddr` (amoadd.d), then
 * reschedules (waits for the next event). Counts activations.
 */
__dpa_global__ void st_counter(uint64_t daddr)
{
	__atomic_fetch_add((uint64_t *)(uintptr_t)daddr, 1, __ATOMIC_SEQ_CST);
	flexio_dev_thread_reschedule();
}

/**
 * Thread-local storage: adds x to the u64 at the thread's TLS address (metadata_parameter,
 * the host's thread_local_storage_daddr) and returns the new value; ST_FAILED when the
 * thread has none. Each thread of a test gets its own block, so the sums stay apart.
 */
__dpa_global__ uint64_t st_tls(uint64_t x)
{
	struct flexio_dev_thread_ctx *dtctx;
	volatile uint64_t *tls;

	flexio_dev_get_thread_ctx(&dtctx);
	tls = (volatile uint64_t *)(uintptr_t)flexio_dev_get_thread_local_storage(dtctx);
	if (!tls)
		return ST_FAILED;
	*tls += x;
	return *tls;
}

/** Copies the 48-byte thread context (at tp) to `daddr`; returns its version word. */
__dpa_global__ uint64_t st_ctx_dump(uint64_t daddr)
{
	const volatile uint64_t *src = (const volatile uint64_t *)mlx5_dpa_thread_ctx();
	volatile uint64_t *dst = (volatile uint64_t *)(uintptr_t)daddr;

	for (int i = 0; i < 6; i++)
		dst[i] = src[i];
	return (uint32_t)src[0];
}

/* .data, .rodata and .bss objects for st_gp_global. */
static volatile uint64_t st_data_word = ST_DATA_MAGIC;
static const char st_rodata_text[] = "mlx5-dpa selftest";
static volatile uint64_t st_bss_acc;

/**
 * Globals work (no gp needed): checks the initialised .data word and a .rodata string, then
 * adds x to a .bss accumulator and returns its new value (it persists across activations of
 * the same process). Returns ST_GLOBAL_BAD when .data / .rodata were not loaded.
 */
__dpa_global__ uint64_t st_gp_global(uint64_t x)
{
	if (st_data_word != ST_DATA_MAGIC || strlen(st_rodata_text) != 17 ||
	    st_rodata_text[0] != 'm' || st_rodata_text[16] != 't')
		return ST_GLOBAL_BAD;
	st_bss_acc += x;
	return st_bss_acc;
}

/**
 * Pure. Uses `bytes` of stack (a variable-length array): fills it with i & 0xff and returns
 * the sum of its bytes. Within the thread's 8184-byte stack this returns; past it, the stores
 * reach below the stack and the thread faults (the model's guard).
 */
__dpa_global__ uint64_t st_stack(uint64_t bytes)
{
	volatile uint8_t buf[bytes];
	uint64_t sum = 0;

	for (uint64_t i = 0; i < bytes; i++)
		buf[i] = (uint8_t)i;
	for (uint64_t i = 0; i < bytes; i++)
		sum += buf[i];
	return sum;
}

/** flexio_dev_print("selftest %lu\n", x); returns its result sign-extended (< 0: no stream). */
__dpa_global__ uint64_t st_print(uint64_t x)
{
	return (uint64_t)(int64_t)flexio_dev_print("selftest %lu\n", x);
}

/**
 * flexio_dev_msg(stream, level, "st_msg stream %u level %u\n", ...) with stream = a0 bits
 * 7:0 (0xff = broadcast) and level = a0 bits 15:8; returns its result sign-extended.
 */
__dpa_global__ uint64_t st_msg(uint64_t stream_and_level)
{
	uint32_t stream = stream_and_level & 0xff;
	uint32_t level = (stream_and_level >> 8) & 0xff;

	return (uint64_t)(int64_t)flexio_dev_msg((int)stream, (flexio_msg_dev_level)level,
						 "st_msg stream %u level %u\n", stream, level);
}

/* One formatter case: formats into a 64-byte buffer and compares text and return value. */
static int fmt_case(const char *expect, const char *fmt, ...)
{
	char buf[64];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = mlx5_dpa_vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return n == (int)strlen(expect) && strlen(buf) == strlen(expect) &&
	       memcmp(buf, expect, strlen(expect) + 1) == 0;
}

/**
 * Pure. Runs the print formatter on fixed cases; returns 0 when all pass, else the number
 * of the first failing case.
 */
__dpa_global__ uint64_t st_format_check(void)
{
	char small[5];
	uint64_t k = 0;

#define CASE(...)                        \
	do {                             \
		k++;                     \
		if (!fmt_case(__VA_ARGS__)) \
			return k;        \
	} while (0)

	CASE("-42", "%d", -42);
	CASE("7", "%i", 7);
	CASE("4294967295", "%u", 4294967295u);
	CASE("-9000000000", "%ld", -9000000000l);
	CASE("18446744073709551615", "%lu", 18446744073709551615ul);
	CASE("-9223372036854775808", "%lld", (-9223372036854775807ll - 1));
	CASE("12345678901234", "%llu", 12345678901234ull);
	CASE("deadbeef", "%x", 0xdeadbeefu);
	CASE("123456789abcdef0", "%lx", 0x123456789abcdef0ul);
	CASE("ffffffffffffffff", "%llx", ~0ull);
	CASE("00001234", "%08x", 0x1234u);
	CASE("   42|42   |", "%5d|%-5d|", 42, 42);
	CASE("hello hel (null)", "%s %.3s %s", "hello", "hello", (char *)0);
	CASE("ok", "%c%c", 'o', 'k');
	CASE("0x0000000080001000", "%p", (void *)0x80001000ul);
	CASE("100%", "100%%");
	CASE("-0042", "%05d", -42);
	CASE("ABC", "%X", 0xabcu);
	CASE("0xff", "%#x", 255u);
	CASE("+5", "%+d", 5);
	CASE("0", "%lu", 0ul);
	CASE("  x", "%3c", 'x');
	CASE("44", "%hhu", 300);
	CASE("123", "%zu", (size_t)123);
	CASE("[  abc]", "[%*s]", 5, "abc");
	CASE("%q", "%q");
	CASE("Calculate: 44 + 55 = 99\n", "Calculate: %lu + %lu = %lu\n", 44ul, 55ul, 99ul);
#undef CASE
	/* Truncation: returns the full length, stores size - 1 characters and a NUL. */
	k++;
	if (mlx5_dpa_snprintf(small, sizeof(small), "%s", "abcdefgh") != 8 ||
	    memcmp(small, "abcd", 5) != 0)
		return k;
	return 0;
}

/** Stores flexio_dev_get_thread_id() at `daddr` and returns it. */
__dpa_global__ uint64_t st_thread_id(uint64_t daddr)
{
	struct flexio_dev_thread_ctx *ctx;

	flexio_dev_get_thread_ctx(&ctx);
	*(volatile uint64_t *)(uintptr_t)daddr = flexio_dev_get_thread_id(ctx);
	return flexio_dev_get_thread_id(ctx);
}

/**
 * Yields three times, keeping a running sum in a local: out[i] = 0x1000 + 1 + .. + (i + 1)
 * before the i-th yield, and returns 0x1006. A continuable thread does this over four
 * activations (its registers survive each yield); any other thread in one.
 */
__dpa_global__ uint64_t st_yield(uint64_t daddr)
{
	volatile uint64_t *out = (volatile uint64_t *)(uintptr_t)daddr;
	struct flexio_dev_thread_ctx *ctx;
	uint64_t local = 0x1000;

	flexio_dev_get_thread_ctx(&ctx);
	for (uint64_t i = 0; i < 3; i++) {
		local += i + 1;
		out[i] = local;
		flexio_dev_yield(ctx);
	}
	return local;
}

/** Counts its activations at `daddr`; retriggers itself until the count is 3, returns it. */
__dpa_global__ uint64_t st_retrigger(uint64_t daddr)
{
	volatile uint64_t *count = (volatile uint64_t *)(uintptr_t)daddr;

	*count += 1;
	if (*count < 3)
		flexio_dev_thread_retrigger();
	return *count;
}

/** flexio_dev_msix_send on CQ `cqn` (the model has no emulated MSI-X: a clear fault). */
__dpa_global__ uint64_t st_msix(uint64_t cqn)
{
	struct flexio_dev_thread_ctx *ctx;

	flexio_dev_get_thread_ctx(&ctx);
	return flexio_dev_msix_send(ctx, (uint32_t)cqn);
}

/** Both window copy helpers (documented unsupported): 0 when both answer FAILED. */
__dpa_global__ uint64_t st_window_copy(uint64_t daddr)
{
	struct flexio_dev_thread_ctx *ctx;

	flexio_dev_get_thread_ctx(&ctx);
	if (flexio_dev_window_copy_from_host(ctx, (void *)(uintptr_t)daddr, 0x1000, 8) !=
	    FLEXIO_DEV_STATUS_FAILED)
		return 1;
	if (flexio_dev_window_copy_to_host(ctx, 0x1000, (void *)(uintptr_t)daddr, 8) !=
	    FLEXIO_DEV_STATUS_FAILED)
		return 2;
	return 0;
}

/**
 * Reads the timer (rdtime, __dpa_thread_time) twice and stores both at `daddr` ([0], [1]);
 * returns the first.
 */
__dpa_global__ uint64_t st_time(uint64_t daddr)
{
	volatile uint64_t *out = (volatile uint64_t *)(uintptr_t)daddr;
	uint64_t t0, t1;

	__asm__ volatile("rdtime %0" : "=r"(t0));
	__asm__ volatile("rdtime %0" : "=r"(t1));
	out[0] = t0;
	out[1] = t1;
	return t0;
}

/** The simulator prints (flexio_dev_debug.h), five messages on the default stream. */
__dpa_global__ uint64_t st_sim(uint64_t x)
{
	print_sim_str("hello world", 5);
	print_sim_hex(0x12345, 3);
	print_sim_int(-42, 8);
	print_sim_putc('!');
	SIM_TRACEVAL(x);
	return 0;
}

/**
 * Writes a NOP send WQE (a CQE always) at slot 0 of the SQ ring at `haddr` with WQE index
 * `mkey`, for SQ `window_id`; with mode bit 0 writes it back (__dpa_thread_memory_writeback),
 * then rings the SQ doorbell with a plain outbox store (no fence: the store itself writes
 * nothing back). Returns 0.
 */
__dpa_global__ uint64_t st_wqe_nop(uint64_t args_daddr)
{
	volatile struct st_coh_args *a = (volatile struct st_coh_args *)(uintptr_t)args_daddr;
	union flexio_dev_sqe_seg *wqe = (union flexio_dev_sqe_seg *)(uintptr_t)a->haddr;
	struct flexio_dev_thread_ctx *ctx;
	uint32_t pi = a->mkey, sqn = a->window_id;

	flexio_dev_get_thread_ctx(&ctx);
	mlx5_dpa_swqe_ctrl_set(wqe, 0, MLX5_CTRL_SEG_OPCODE_NOP, pi, sqn, 1,
			       MLX5_CTRL_SEG_CE_CQE_ALWAYS << 2, 0);
	if (a->mode & 1)
		__dpa_thread_memory_writeback();
	*(volatile uint64_t *)(uintptr_t)(ctx->outbox_base + MLX5_DPA_OUTBOX_SXD_DB) =
		OUTBOX_V_SXD_DB(pi + 1, sqn);
	return 0;
}

/** Selects and keys the window of `a`; returns the DPA address of `a->haddr` (0: failed). */
static volatile uint64_t *coh_window(volatile struct st_coh_args *a)
{
	struct flexio_dev_thread_ctx *ctx;
	flexio_uintptr_t daddr;

	flexio_dev_get_thread_ctx(&ctx);
	if (flexio_dev_window_config(ctx, (uint16_t)a->window_id, a->mkey) != FLEXIO_DEV_STATUS_SUCCESS ||
	    flexio_dev_window_ptr_acquire(ctx, a->haddr, &daddr) != FLEXIO_DEV_STATUS_SUCCESS)
		return 0;
	return (volatile uint64_t *)(uintptr_t)daddr;
}

/**
 * Through the window: host[0] = 0xa1, a window write-back, host[1] = 0xc3 (not written back);
 * then waits for `stop` and returns 1 (ST_FAILED without a window).
 */
__dpa_global__ uint64_t st_window_marks(uint64_t args_daddr)
{
	volatile struct st_coh_args *a = (volatile struct st_coh_args *)(uintptr_t)args_daddr;
	volatile uint64_t *h = coh_window(a);

	if (!h)
		return ST_FAILED;
	h[0] = 0xa1;
	__dpa_thread_window_writeback();
	h[1] = 0xc3;
	while (!a->stop)
		;
	return 1;
}

/**
 * Through the window: reads host[3] once (so that, with the hardware's coherency, its line is
 * cached before the host can change it), then host[2] = 0x5a and a write-back (the host's
 * cue), then polls host[3] until it is non-zero (with mode bit 0, invalidating the window's
 * reads each time) and returns how many polls that took; returns 0 when `stop` ends the wait
 * first.
 */
__dpa_global__ uint64_t st_window_poll(uint64_t args_daddr)
{
	volatile struct st_coh_args *a = (volatile struct st_coh_args *)(uintptr_t)args_daddr;
	volatile uint64_t *h = coh_window(a);
	uint64_t polls = 0;

	if (!h)
		return ST_FAILED;
	(void)h[3];
	h[2] = 0x5a;
	__dpa_thread_window_writeback();
	for (;;) {
		if (a->mode & 1)
			__dpa_thread_window_read_inv();
		polls++;
		if (h[3])
			return polls;
		if (a->stop)
			return 0;
	}
}

/** Tracer records on stream 1: formats 0, 1 and 2 with 0, 2 and 6 arguments. */
__dpa_global__ uint64_t st_trace(uint64_t x)
{
	flexio_dev_trace_0(1, FLEXIO_MSG_DEV_INFO, 0);
	flexio_dev_trace_2(1, FLEXIO_MSG_DEV_INFO, 1, x, x * 2);
	flexio_dev_trace_6(1, FLEXIO_MSG_DEV_ERROR, 2, 1, 2, 3, 4, 5, (uint64_t)-1);
	flexio_dev_trace_1(1, FLEXIO_MSG_DEV_DEBUG, 1, 99); /* filtered at level INFO */
	flexio_dev_tracer_flush(1);
	flexio_dev_tracer_notify_host(1, 3);
	return 0;
}

/** NIC counters and the PCC table base, as `struct st_nic_args` asks. */
__dpa_global__ uint64_t st_nic_counters(uint64_t args_daddr)
{
	struct st_nic_args *a = (struct st_nic_args *)(uintptr_t)args_daddr;
	uint32_t on_stack[16];

	switch (a->op) {
	case 0:
		flexio_dev_nic_counters_config(a->values, a->ids, a->n);
		return 0;
	case 1:
		flexio_dev_nic_counters_sample();
		return 0;
	case 2:
		for (uint32_t i = 0; i < 16; i++)
			((volatile uint32_t *)on_stack)[i] = a->ids[i];
		flexio_dev_nic_counters_config(a->values, on_stack, a->n);
		return 0;
	default:
		return flexio_dev_get_pcc_table_base((uint16_t)a->n);
	}
}
