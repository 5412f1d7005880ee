/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * Check of the device code, run by `build.sh --test` under qemu-riscv64 (Linux user mode)
 * and/or the model's bare machine (`mlx5-dpa vm run`). Not a device program: it links the
 * programs' objects with this file,
 * fakes the parts of the DPA the code touches (thread context at tp, outbox page, rings and
 * doorbell records in ordinary memory) and checks what the code writes, byte for byte.
 * OS calls are never reached: the checked paths end before flexio_dev_thread_reschedule,
 * and the only `ecall`s made here are Linux write / exit.
 */
#include <stdarg.h>
#include <stdint.h>

#include <libflexio-dev/flexio_dev.h>
#include <mlx5_dpa_msg_stream.h>
#include <libflexio-dev/flexio_dev_queue_access.h>
#include <libflexio-libc/inttypes.h>
#include <libflexio-libc/stdio.h>
#include <libflexio-libc/string.h>
#include <dpaintrin.h>
#include "matmul.h"
#include "selftest.h"

/* Internals (static functions) are checked directly. */
#include "../src/packet_processor.c"
#include "../src/window_writer.c"

uint64_t rpc_calculate(uint64_t a, uint64_t b);
uint64_t rpc_echo(uint64_t x);
uint64_t st_add(uint64_t x);
uint64_t st_format_check(void);
uint64_t st_gp_global(uint64_t x);
uint64_t st_stack(uint64_t x);
uint64_t st_ctx_dump(uint64_t daddr);
uint64_t st_tls(uint64_t x);
uint64_t st_msg(uint64_t stream_and_level);
uint64_t matmul_cell(uint64_t task_daddr);
uint64_t matmul_full(uint64_t task_daddr);
uint64_t matmul_selfcheck(void);

static long linux_call3(long nr, long a, long b, long c)
{
	register long a0 __asm__("a0") = a;
	register long a1 __asm__("a1") = b;
	register long a2 __asm__("a2") = c;
	register long a7 __asm__("a7") = nr;

	__asm__ volatile("ecall" : "+r"(a0) : "r"(a1), "r"(a2), "r"(a7) : "memory");
	return a0;
}

static void say(const char *fmt, ...)
{
	char buf[256];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = mlx5_dpa_vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(buf) - 1)
		n = sizeof(buf) - 1;
	linux_call3(64, 1, (long)buf, n);
}

static int failures;
static int checks;

#define CHECK(cond, ...)                                         \
	do {                                                     \
		checks++;                                        \
		if (!(cond)) {                                   \
			failures++;                              \
			say("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
			say(__VA_ARGS__);                        \
			say("\n");                               \
		}                                                \
	} while (0)

static uint32_t be32_at(const void *p)
{
	const uint8_t *b = p;

	return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

static uint64_t be64_at(const uint8_t *b)
{
	return (uint64_t)be32_at(b) << 32 | be32_at(b + 4);
}

/* Fake DPA environment. */
static struct flexio_dev_thread_ctx fake_ctx;
static uint64_t fake_outbox[MLX5_DPA_OUTBOX_PAGE_SIZE / 8] __attribute__((aligned(4096)));

static void use_fake_ctx(void)
{
	fake_ctx.version = 1;
	fake_ctx.outbox_base = (uint64_t)(uintptr_t)fake_outbox;
	__asm__ volatile("mv tp, %0" : : "r"(&fake_ctx) : "memory");
}

static void init_cq(uint8_t *ring, uint32_t entries)
{
	memset(ring, 0, entries * 64);
	for (uint32_t i = 0; i < entries; i++)
		ring[i * 64 + 63] = (MLX5_DPA_CQE_INVALID << 4) | 1;
}

static void put_cqe(uint8_t *ring, uint32_t log, uint32_t ci, uint8_t opcode, uint16_t wqe_counter,
		    uint32_t byte_cnt)
{
	uint8_t *c = ring + (ci & ((1u << log) - 1)) * 64;

	memset(c, 0, 64);
	c[0x2c] = byte_cnt >> 24;
	c[0x2d] = byte_cnt >> 16;
	c[0x2e] = byte_cnt >> 8;
	c[0x2f] = byte_cnt;
	c[0x3c] = wqe_counter >> 8;
	c[0x3d] = wqe_counter;
	c[0x3f] = (uint8_t)(opcode << 4 | ((ci >> log) & 1));
}

/* libflexio-libc: string.h against the C definitions, the formatting half of stdio.h,
 * inttypes.h. */
static void check_libc(void)
{
	char buf[64];
	char *end;
	const char *s = "thread alloc: OOM";

	CHECK(strchr(s, 'O') == s + 14 && strrchr(s, 'O') == s + 15, "strchr/strrchr");
	CHECK(strchr(s, 'z') == NULL && strchr(s, '\0') == s + 17, "strchr miss / NUL");
	CHECK(memchr(s, ':', 17) == s + 12 && memchr(s, ':', 12) == NULL, "memchr");
	CHECK(strcmp("abc", "abd") < 0 && strcmp("abd", "abc") > 0 && !strcmp("x", "x"), "strcmp");
	CHECK(strncmp("abcX", "abcY", 3) == 0 && strncmp("ab", "abc", 3) < 0, "strncmp");
	CHECK(strcmp("\xff", "a") > 0, "strcmp compares unsigned chars");
	strcpy(buf, "Event");
	strcat(buf, " demo");
	strncat(buf, "!!!", 1);
	CHECK(!strcmp(buf, "Event demo!"), "strcpy/strcat/strncat: %s", buf);
	memset(buf, 'x', 8);
	strncpy(buf, "ab", 5);
	CHECK(!memcmp(buf, "ab\0\0\0xxx", 8), "strncpy pads with NULs");
	CHECK(strspn("aabbc", "ab") == 4 && strcspn("aabbc", "c") == 4, "strspn/strcspn");
	CHECK(strpbrk(s, "ah") == s + 1 && strpbrk(s, "QZ") == NULL, "strpbrk");
	CHECK(!strcmp(strstr("packet processor", "pro"), "processor") &&
		      strstr("abc", "abd") == NULL, "strstr");
	CHECK(strxfrm(buf, "sort", sizeof(buf)) == 4 && !strcmp(buf, "sort"), "strxfrm");
	CHECK(!strcmp(strerror(1), "No such object") && !strcmp(strerror(77), "Unknown error"),
	      "strerror");
	CHECK(snprintf(buf, sizeof(buf), "%s %" PRIu64 " %" PRIx32, "n", (uint64_t)99, 0xabu) == 7 &&
		      !strcmp(buf, "n 99 ab"), "snprintf with PRI macros: %s", buf);
	CHECK(sprintf(buf, "%05d|%-3s|", 42, "x") == 10 && !strcmp(buf, "00042|x  |"),
	      "sprintf: %s", buf);
	CHECK(snprintf(buf, 4, "%d", 123456) == 6 && !strcmp(buf, "123"), "snprintf truncates");
	end = NULL;
	CHECK(asprintf(&end, "%d", 1) == -1 && end == NULL, "asprintf has no allocator");
	CHECK(strtoimax(" -0x1f", &end, 0) == -31 && *end == '\0', "strtoimax hex");
	CHECK(strtoimax("0755", NULL, 0) == 0755 && strtoumax("z", &end, 36) == 35, "octal, base 36");
	CHECK(strtoimax("99999999999999999999", NULL, 10) == INTMAX_MAX, "strtoimax saturates");
	CHECK(strtoimax("-99999999999999999999", NULL, 10) == INTMAX_MIN, "strtoimax saturates low");
	CHECK(strtoumax("12ab", &end, 10) == 12 && !strcmp(end, "ab"), "strtoumax end");
	CHECK(strtoumax("xyz", &end, 10) == 0 && !strcmp(end, "xyz"), "no digits: end = input");
	CHECK(imaxabs(-5) == 5 && imaxdiv(17, 5).quot == 3 && imaxdiv(17, 5).rem == 2, "imax");
}

/* dpaintrin.h: the fence encodings, the counters, the fixed-point helpers. */
static void check_dpaintrin(void)
{
	/* The words __dpa_thread_fence emits: fence pred, succ (i 8, o 4, r 2, w 1). */
	CHECK(__DPA_FENCE_WORD_(__DPA_MEMORY, __DPA_W, __DPA_W) == 0x0110000fu, "fence w,w");
	CHECK(__DPA_FENCE_WORD_(__DPA_MEMORY, __DPA_R, __DPA_R) == 0x0220000fu, "fence r,r");
	CHECK(__DPA_FENCE_WORD_(__DPA_MMIO, __DPA_R, __DPA_R) == 0x0880000fu, "fence i,i");
	CHECK(__DPA_FENCE_WORD_(__DPA_MMIO, __DPA_W, __DPA_W) == 0x0440000fu, "fence o,o");
	CHECK(__DPA_FENCE_WORD_(__DPA_SYSTEM, __DPA_RW, __DPA_RW) == 0x0ff0000fu, "fence iorw,iorw");
	CHECK(__DPA_FENCE_WORD_(__DPA_HEAP, __DPA_RW, __DPA_W) == 0x0310000fu, "fence rw,w");
	/* They execute (as fences) where the code runs. */
	__dpa_thread_memory_writeback();
	__dpa_thread_window_read_inv();
	__dpa_thread_system_fence();
	uint64_t i0 = __dpa_thread_inst_ret();
	uint64_t c0 = __dpa_thread_cycles();
	volatile uint64_t spin = 0;

	for (int k = 0; k < 1000; k++)
		spin += k;
	CHECK(__dpa_thread_inst_ret() > i0 + 1000 && __dpa_thread_cycles() > c0, "counters move");
	/* Q16.16: 1/2 = 0.5, 1/0.25 = 4, 2^3 = 8, 2^0.5, 2^-1, log2 8 = 3, log2 0.5 = -1. */
	CHECK(__dpa_fxp_rcp(2 << 16) == 0x8000 && __dpa_fxp_rcp(0x4000) == 4 << 16, "rcp");
	CHECK(__dpa_fxp_rcp(-(2 << 16)) == -0x8000 && __dpa_fxp_rcp(0) == INT32_MAX, "rcp edges");
	CHECK(__dpa_fxp_pow2(3 << 16) == 8 << 16 && __dpa_fxp_pow2(-(1 << 16)) == 0x8000, "pow2");
	CHECK(__dpa_fxp_pow2(0x8000) >= 92680 && __dpa_fxp_pow2(0x8000) <= 92682, "pow2(0.5) = %d",
	      __dpa_fxp_pow2(0x8000));
	CHECK(__dpa_fxp_pow2(20 << 16) == INT32_MAX, "pow2 saturates");
	CHECK(__dpa_fxp_log2(8u << 16) == 3 << 16 && __dpa_fxp_log2(0x8000u) == -(1 << 16), "log2");
	CHECK(__dpa_fxp_log2(3u << 16) >= 103872 && __dpa_fxp_log2(3u << 16) <= 103874,
	      "log2(3) = %d", __dpa_fxp_log2(3u << 16));
	CHECK(__dpa_fxp_log2(0) == INT32_MIN, "log2(0)");
}

/* The emulation, MSI-X and congestion-control doorbells: the documented outbox values (bit
 * positions of the public flexio_dev_dpa_arch.h register layouts) at their offsets. */
static void check_nic_doorbells(void)
{
	struct flexio_dev_thread_ctx *dtctx = &fake_ctx;

	CHECK(flexio_dev_msix_send(dtctx, 0x1234567) == FLEXIO_DEV_STATUS_SUCCESS &&
		      fake_outbox[MLX5_DPA_OUTBOX_RXT_DB / 8] == 0x234567,
	      "RXT_DB %lx", fake_outbox[MLX5_DPA_OUTBOX_RXT_DB / 8]);
	flexio_dev_db_ctx_arm(dtctx, 0xabcdef, 0x3ffffff);
	CHECK(fake_outbox[MLX5_DPA_OUTBOX_EMU_CAP / 8] == (0x3ffffffull << 32 | 0xabcdef),
	      "EMU_CAP %lx", fake_outbox[MLX5_DPA_OUTBOX_EMU_CAP / 8]);
	flexio_dev_db_ctx_force_trigger(dtctx, 0x12, 0x34);
	CHECK(fake_outbox[MLX5_DPA_OUTBOX_EMU_CAP_TRIGGER / 8] == (0x34ull << 32 | 0x12),
	      "EMU_CAP_TRIGGER %lx", fake_outbox[MLX5_DPA_OUTBOX_EMU_CAP_TRIGGER / 8]);
	flexio_dev_cc_ring_db(dtctx, 0xbeef, 0x01020304, 1, CC_DB_NEXT_ACT_FW);
	CHECK(fake_outbox[MLX5_DPA_OUTBOX_CC_DB / 8] ==
		      (0xbeefull << 48 | 2ull << 34 | 1ull << 32 | 0x01020304),
	      "CC_DB %lx", fake_outbox[MLX5_DPA_OUTBOX_CC_DB / 8]);
	/* The thread id sits at context offset 44. */
	fake_ctx.thread_id = 0x77;
	CHECK(flexio_dev_get_thread_id(dtctx) == 0x77, "thread id");
}

/* FlexIO's own names for the outbox page and its values agree with the runtime's. */
static void check_outbox_names(void)
{
	CHECK(OUTBOX_VALUE2(0x123456, CQ_DB_CQN_SHIFT, 0xabcdef, CQ_DB_CQ_CI_SHIFT) ==
		      OUTBOX_V_CQ_DB(0x123456, 0xabcdef),
	      "CQ_DB shifts");
	CHECK(OUTBOX_V_EQ_DB_REARM(0x12, 0x3ffffff) == MLX5_DPA_OUTBOX_V_EQ_DB(0x12, 0x3ffffff) &&
		      OUTBOX_V_EQ_DB_NO_REARM(0x34, 0x56) == MLX5_DPA_OUTBOX_V_EQ_DB(0x34, 0x56),
	      "EQ_DB values");
	CHECK(OUTBOX_VALUE2(0xbcd, SXD_DB_WQE_INDEX_SHIFT, 0x77, SXD_DB_QP_OR_SQ_SHIFT) ==
		      OUTBOX_V_SXD_DB(0xbcd, 0x77),
	      "SXD_DB shifts");
	CHECK(OUTBOX_V_EMU_CAP_TRIGGER(0x12, 0x34) == OUTBOX_V_EMU_CAP(0x12, 0x34) &&
		      EMU_CAP_DUMMY_QPN_SHIFT == 0 && EMU_CAP_EMULATION_INDEX_SHIFT == 32,
	      "EMU_CAP values");
	CHECK(OUTBOX_VALUE4(0x01020304, CC_DB_RES_SHIFT, 0xbeef, CC_DB_ID_SHIFT, 2,
			    CC_DB_NXT_ACT_SHIFT, 1, CC_DB_RTTRQ_SHIFT) ==
		      OUTBOX_V_CC_DB(0x01020304, 0xbeef, 2, 1),
	      "CC_DB shifts");
	CHECK(OUTBOX_VALUE1(0x42, RXT_DB_CQN_SHIFT) == OUTBOX_V_RXT_DB(0x42), "RXT_DB shift");
	CHECK(_OUTBOX_BIT_SIZE(EQ_DB_REARM, eq_ci) == 26 && _OUTBOX_BIT_SIZE(CQ_DB, cq_ci) == 24,
	      "field widths");
	outbox_write(fake_outbox, CQ_DB, OUTBOX_V_CQ_DB(7, 9));
	CHECK(fake_outbox[MLX5_DPA_OUTBOX_CQ_DB / 8] == (9ull << 32 | 7), "outbox_write CQ_DB");
	outbox_write(fake_outbox, SXD_DB, OUTBOX_V_SXD_DB(3, 5));
	CHECK(fake_outbox[MLX5_DPA_OUTBOX_SXD_DB / 8] == (5ull << 32 | 3), "outbox_write SXD_DB");
}

static void check_pure(void)
{
	/* A call as the host writes it: unpack, func, ret, reserved, then eight argument words. */
	uint64_t call[4 + 8] = { 0 };
	struct mlx5_dpa_rpc_call *c = (struct mlx5_dpa_rpc_call *)call;

	CHECK(st_format_check() == 0, "st_format_check -> case %lu", st_format_check());
	CHECK(pp_selfcheck() == 0, "pp_selfcheck -> %lu", pp_selfcheck());
	CHECK(matmul_selfcheck() == 0, "matmul_selfcheck -> %lu", matmul_selfcheck());
	CHECK(st_add(41) == 42, "st_add");
	CHECK(rpc_calculate(44, 55) == 99, "rpc_calculate");
	c->unpack = (uint64_t)(uintptr_t)mlx5_dpa_rpc_unpack_u64;
	c->func = (uint64_t)(uintptr_t)rpc_calculate;
	c->arg_buf[0] = 44;
	c->arg_buf[1] = 55;
	CHECK(mlx5_dpa_rpc_entry((uint64_t)(uintptr_t)c) == 99 && c->ret == 99,
	      "rpc entry result %lu", c->ret);
	c->func = (uint64_t)(uintptr_t)rpc_echo;
	c->arg_buf[0] = 0x1122334455667788ull;
	CHECK(mlx5_dpa_rpc_entry((uint64_t)(uintptr_t)c) == 0x1122334455667788ull &&
	      c->ret == 0x1122334455667788ull, "echo through the generic unpack");
	CHECK(st_gp_global(5) == 5 && st_gp_global(7) == 12, "st_gp_global");
	CHECK(st_stack(4096) == 16 * (255 * 256 / 2), "st_stack");
}

static void check_matmul(void)
{
	static uint64_t a[9], b[9], c[9];
	struct matmul_task t = { 0 };
	uint64_t sum = 0;

	for (int i = 0; i < 9; i++) {
		a[i] = i + 1;
		b[i] = 9 - i;
	}
	t.a_daddr = (uint64_t)(uintptr_t)a;
	t.b_daddr = (uint64_t)(uintptr_t)b;
	t.c_daddr = (uint64_t)(uintptr_t)c;
	t.n = 3;
	t.row = 1;
	t.col = 2;
	/* row 1 of A = 4 5 6, column 2 of B = 7 4 1: 28 + 20 + 6 = 54 */
	CHECK(matmul_cell((uint64_t)(uintptr_t)&t) == 54 && c[5] == 54 && t.done == 1 && t.result == 54,
	      "matmul_cell %lu", c[5]);
	/* C = [[30,24,18],[84,69,54],[138,114,90]]: sum 621 */
	CHECK(matmul_full((uint64_t)(uintptr_t)&t) == 621 && c[0] == 30 && c[8] == 90, "matmul_full");
	t.row = 3;
	CHECK(matmul_cell((uint64_t)(uintptr_t)&t) == MATMUL_ERR, "matmul_cell bad row");
	for (int i = 0; i < 9; i++)
		sum += c[i];
	CHECK(sum == 621, "sum");
}

static void check_window_fill(void)
{
	static uint8_t out[40];

	ww_fill(out, 5, 0xfe, WINDOW_WRITER_MODE_BYTES);
	CHECK(out[0] == 0xfe && out[1] == 0xff && out[2] == 0 && out[4] == 2, "bytes mode");
	ww_fill(out, sizeof(out), 7, WINDOW_WRITER_MODE_TEXT);
	CHECK(memcmp(out, "Hello from DPA 7\nHello from DPA 7\nHello ", 40) == 0, "text mode");
}

static void check_ctx_dump(void)
{
	uint64_t out[6] = { 0 };

	CHECK(st_ctx_dump((uint64_t)(uintptr_t)out) == 1, "st_ctx_dump version");
	CHECK(out[1] == (uint64_t)(uintptr_t)fake_outbox, "st_ctx_dump outbox_base");
}

static void check_tls(void)
{
	static uint64_t tls_block[2];

	CHECK(st_tls(3) == ST_FAILED, "no TLS");
	fake_ctx.metadata_parameter = (uint64_t)(uintptr_t)tls_block;
	CHECK(st_tls(3) == 3 && st_tls(4) == 7 && tls_block[0] == 7, "TLS sum");
	fake_ctx.metadata_parameter = 0;
}

/* Message stream: depth 4, slot 64 bytes, CQ 4 entries. */
static uint8_t ms_sq[4 * 64] __attribute__((aligned(64)));
static uint8_t ms_cq[4 * 64] __attribute__((aligned(64)));
static uint32_t ms_dbr[2];
static uint32_t ms_cq_dbr[1];
static uint8_t ms_buf[4 * 64] __attribute__((aligned(64)));
static struct flexio_msg_stream_dev_ctx ms;

static void check_msg_stream(void)
{
	const uint32_t qpn = 0x1234;
	uint8_t *w;
	int r;

	CHECK(flexio_dev_print("nobody listens") == MLX5_DPA_MSG_ERR_NO_STREAM, "no stream");
	memset(&ms, 0, sizeof(ms));
	ms.qp.kind = MLX5_DPA_WQ_KIND_RC_QP;
	ms.qp.num = qpn;
	ms.qp.sq_ring_addr = (uint64_t)(uintptr_t)ms_sq;
	ms.qp.log_sq_wqebb_cnt = 2;
	ms.qp.dbr_addr = (uint64_t)(uintptr_t)ms_dbr;
	ms.cq.cqn = 0x55;
	ms.cq.log_cqe_cnt = 2;
	ms.cq.cqe_size = 64;
	ms.cq.cq_ring_addr = (uint64_t)(uintptr_t)ms_cq;
	ms.cq.cq_dbr_addr = (uint64_t)(uintptr_t)ms_cq_dbr;
	ms.buf_daddr = (uint64_t)(uintptr_t)ms_buf;
	ms.buf_size = sizeof(ms_buf);
	ms.buf_lkey = 0xabcd;
	ms.stream_id = 0;
	ms.level = FLEXIO_MSG_DEV_INFO;
	init_cq(ms_cq, 4);

	ms.stream_id = FLEXIO_MSG_DEV_MAX_STREAMS_AMOUNT; /* 255: the broadcast id */
	CHECK((int64_t)flexio_msg_stream_dev_init((uint64_t)(uintptr_t)&ms) == FLEXIO_MSG_STREAM_DEV_ERR_ID,
	      "bad id");
	ms.stream_id = 0;
	CHECK(flexio_msg_stream_dev_init((uint64_t)(uintptr_t)&ms) == 0, "init");

	r = flexio_dev_print("hello %d", 42);
	CHECK(r == 8, "print returned %d", r);
	w = ms_sq;
	CHECK(be32_at(w + 0) == 0x0a, "ctrl idx_opcode %x", be32_at(w));
	CHECK(be32_at(w + 4) == (qpn << 8 | 2), "ctrl qpn_ds %x", be32_at(w + 4));
	CHECK(w[0xb] == 0x08, "fm_ce_se %x", w[0xb]);
	CHECK(be32_at(w + 16) == 8 && be32_at(w + 20) == 0xabcd &&
	      be64_at(w + 24) == (uint64_t)(uintptr_t)ms_buf, "data segment");
	CHECK(memcmp(ms_buf, "hello 42", 8) == 0, "slot text");
	CHECK(be32_at(&ms_dbr[1]) == 1, "send dbr %x", be32_at(&ms_dbr[1]));
	CHECK(fake_outbox[MLX5_DPA_OUTBOX_SXD_DB / 8] == ((uint64_t)qpn << 32 | 1), "SXD_DB %lx",
	      fake_outbox[MLX5_DPA_OUTBOX_SXD_DB / 8]);

	CHECK(flexio_dev_msg(0, FLEXIO_MSG_DEV_DEBUG, "filtered") == 0, "level filter");
	CHECK(flexio_dev_msg(0, FLEXIO_MSG_DEV_NO_PRINT, "filtered") == 0, "NO_PRINT");
	CHECK(flexio_dev_msg(1, FLEXIO_MSG_DEV_ERROR, "x") == MLX5_DPA_MSG_ERR_NO_STREAM, "stream 1");
	CHECK((int64_t)st_msg(0xff | FLEXIO_MSG_DEV_ERROR << 8) == 26 && ms.sq_pi == 2 &&
	      memcmp(ms_buf + 64, "st_msg stream 255 level 2\n", 26) == 0, "broadcast");
	/* Two in flight (hello, broadcast); two more fill the queue; the fifth finds it full. */
	CHECK(flexio_dev_print("3") == 1 && flexio_dev_print("4") == 1, "fill");
	CHECK(ms.sq_pi == 4 && ms.sq_done == 0, "pi %u done %u", ms.sq_pi, ms.sq_done);
	CHECK(flexio_dev_print("5") == MLX5_DPA_MSG_ERR_FULL, "full");
	CHECK(ms.msgs_dropped == 1, "dropped %lu", ms.msgs_dropped);
	/* The NIC completes WQEs 0 and 1 with one CQE for counter 1. */
	put_cqe(ms_cq, 2, 0, MLX5_DPA_CQE_REQ, 1, 0);
	CHECK(flexio_dev_print("six %s", "6") == 5, "after completion");
	CHECK(ms.sq_done == 2 && ms.cq_ci == 1 && be32_at(ms_cq_dbr) == 1, "reaped: done %u ci %u",
	      ms.sq_done, ms.cq_ci);
	w = ms_sq + 0 * 64; /* counter 4 reuses WQEBB 0 and slot 0 */
	CHECK(be32_at(w) == (4 << 8 | 0x0a) && memcmp(ms_buf, "six 6", 5) == 0, "wrapped slot");
	CHECK(fake_outbox[MLX5_DPA_OUTBOX_SXD_DB / 8] == ((uint64_t)qpn << 32 | 5), "SXD_DB 5");
	/* Long text is cut at the 64-byte slot. */
	CHECK(flexio_dev_print("%070d", 1) == 64, "slot cut");
	/* Error CQE kills the stream. */
	put_cqe(ms_cq, 2, 1, MLX5_DPA_CQE_REQ_ERR, 2, 0);
	CHECK(flexio_dev_print("x") == MLX5_DPA_MSG_ERR_QUEUE && ms.dead == 1, "dead stream");
	/* No outbox. */
	fake_ctx.outbox_base = 0;
	CHECK(flexio_dev_print("x") == MLX5_DPA_MSG_ERR_NO_OUTBOX, "no outbox");
	fake_ctx.outbox_base = (uint64_t)(uintptr_t)fake_outbox;
	CHECK(flexio_msg_stream_dev_fini(0) == 0 && flexio_dev_print("x") == MLX5_DPA_MSG_ERR_NO_STREAM,
	      "fini");
}

/* Packet processor: RQ/SQ depth 4, CQs 4 entries, 2 KiB buffers. */
static uint8_t pp_rq_ring[4 * 16] __attribute__((aligned(64)));
static uint8_t pp_rq_cq[4 * 64] __attribute__((aligned(64)));
static uint8_t pp_sq_ring[4 * 64] __attribute__((aligned(64)));
static uint8_t pp_sq_cq[4 * 64] __attribute__((aligned(64)));
static uint32_t pp_rq_dbr[2], pp_sq_dbr[2], pp_rq_cq_dbr[1], pp_sq_cq_dbr[1];
static uint8_t pp_rx[4][2048] __attribute__((aligned(64)));
static uint8_t pp_tx[4][2048] __attribute__((aligned(64)));
static struct pp_dev_ctx ppc;

static void check_packet_processor(void)
{
	struct flexio_dev_thread_ctx *dtctx = &fake_ctx;
	const uint32_t sqn = 0x777;
	uint32_t len = sizeof(sc_udp_in);
	uint8_t *w;

	memset(&ppc, 0, sizeof(ppc));
	ppc.rq_cq.cqn = 0x41;
	ppc.rq_cq.log_cqe_cnt = 2;
	ppc.rq_cq.cqe_size = 64;
	ppc.rq_cq.cq_ring_addr = (uint64_t)(uintptr_t)pp_rq_cq;
	ppc.rq_cq.cq_dbr_addr = (uint64_t)(uintptr_t)pp_rq_cq_dbr;
	ppc.rq.kind = MLX5_DPA_WQ_KIND_RQ;
	ppc.rq.num = 0x99;
	ppc.rq.rq_ring_addr = (uint64_t)(uintptr_t)pp_rq_ring;
	ppc.rq.log_rq_wqe_cnt = 2;
	ppc.rq.rq_wqe_stride = 16;
	ppc.rq.rq_producer_index = 4;
	ppc.rq.dbr_addr = (uint64_t)(uintptr_t)pp_rq_dbr;
	ppc.sq_cq = ppc.rq_cq;
	ppc.sq_cq.cqn = 0x42;
	ppc.sq_cq.cq_ring_addr = (uint64_t)(uintptr_t)pp_sq_cq;
	ppc.sq_cq.cq_dbr_addr = (uint64_t)(uintptr_t)pp_sq_cq_dbr;
	ppc.sq.kind = MLX5_DPA_WQ_KIND_ETH_SQ;
	ppc.sq.num = sqn;
	ppc.sq.sq_ring_addr = (uint64_t)(uintptr_t)pp_sq_ring;
	ppc.sq.log_sq_wqebb_cnt = 2;
	ppc.sq.dbr_addr = (uint64_t)(uintptr_t)pp_sq_dbr;
	ppc.tx_buf_daddr = (uint64_t)(uintptr_t)pp_tx;
	ppc.tx_buf_lkey = 0x5150;
	ppc.log_tx_buf_size = 11;
	init_cq(pp_rq_cq, 4);
	init_cq(pp_sq_cq, 4);
	for (int i = 0; i < 4; i++) {
		struct flexio_dev_wqe_rcv_data_seg *r = (void *)(pp_rq_ring + 16 * i);

		r->byte_count = cpu_to_be32(2048);
		r->lkey = cpu_to_be32(0x5150);
		r->addr = cpu_to_be64((uint64_t)(uintptr_t)pp_rx[i]);
	}

	CHECK(pp_init((uint64_t)(uintptr_t)&ppc) == PP_OK && ppc.state == PP_STATE_READY, "pp_init");
	CHECK(pp_poll(dtctx, &ppc) == 0, "empty CQ");

	/* One UDP frame in RX buffer 0, one runt in buffer 1. */
	memcpy(pp_rx[0], sc_udp_in, len);
	put_cqe(pp_rq_cq, 2, 0, MLX5_DPA_CQE_RESP_SEND, 0, len);
	put_cqe(pp_rq_cq, 2, 1, MLX5_DPA_CQE_RESP_SEND, 1, 10);
	CHECK(pp_poll(dtctx, &ppc) == 2, "two CQEs");
	CHECK(ppc.rx_packets == 2 && ppc.tx_packets == 1 && ppc.rx_dropped == 1 && ppc.rewritten == 1,
	      "counters rx %lu tx %lu drop %lu", ppc.rx_packets, ppc.tx_packets, ppc.rx_dropped);
	CHECK(memcmp(pp_tx[0], sc_udp_out, len) == 0, "tx buffer holds the rewritten frame");
	w = pp_sq_ring;
	CHECK(be32_at(w) == 0x0a && be32_at(w + 4) == (sqn << 8 | 4) && w[0xb] == 0x08, "ctrl");
	CHECK(be32_at(w + 16 + 12) >> 16 == PP_INLINE_HDR_SIZE, "inline size");
	CHECK(memcmp(w + 16 + 14, sc_udp_out, 2) == 0 && memcmp(w + 32, sc_udp_out + 2, 16) == 0,
	      "inline headers");
	CHECK(be32_at(w + 48) == len - 18 && be32_at(w + 52) == 0x5150 &&
	      be64_at(w + 56) == (uint64_t)(uintptr_t)pp_tx[0] + 18, "data segment");
	CHECK(be32_at(&pp_sq_dbr[1]) == 1 && fake_outbox[MLX5_DPA_OUTBOX_SXD_DB / 8] == ((uint64_t)sqn << 32 | 1),
	      "SQ doorbell");
	CHECK(be32_at(&pp_rq_dbr[0]) == 6 && be32_at(pp_rq_cq_dbr) == 2, "RQ record %u, CQ record %u",
	      be32_at(&pp_rq_dbr[0]), be32_at(pp_rq_cq_dbr));

	/* Fill the SQ (3 more), then a fifth frame is dropped until a send completion arrives. */
	for (uint32_t i = 2; i < 6; i++) {
		memcpy(pp_rx[i & 3], sc_udp_in, len);
		put_cqe(pp_rq_cq, 2, i, MLX5_DPA_CQE_RESP_SEND, (uint16_t)i, len);
	}
	CHECK(pp_poll(dtctx, &ppc) == 4, "four CQEs");
	CHECK(ppc.tx_packets == 4 && ppc.tx_dropped == 1 && ppc.sq_pi == 4, "SQ full: tx %lu drop %lu",
	      ppc.tx_packets, ppc.tx_dropped);
	put_cqe(pp_sq_cq, 2, 0, MLX5_DPA_CQE_REQ, 3, 0);
	memcpy(pp_rx[2], sc_udp_in, len);
	put_cqe(pp_rq_cq, 2, 6, MLX5_DPA_CQE_RESP_SEND, 6, len);
	CHECK(pp_poll(dtctx, &ppc) == 1 && ppc.tx_packets == 5 && ppc.sq_done == 4, "after completion");
	CHECK(be32_at(pp_sq_cq_dbr) == 1, "SQ CQ record");
	/* Error CQE on the RQ: counted, WQE handed back. */
	put_cqe(pp_rq_cq, 2, 7, MLX5_DPA_CQE_RESP_ERR, 7, 0);
	CHECK(pp_poll(dtctx, &ppc) == 1 && ppc.rx_dropped == 2, "error CQE");
	CHECK(ppc.rq_cq_ci == 8 && be32_at(&pp_rq_dbr[0]) == 12, "ci %u", ppc.rq_cq_ci);
	/* The arm doorbell the handler would ring. */
	flexio_dev_cq_arm(dtctx, ppc.rq_cq_ci, ppc.rq_cq.cqn);
	CHECK(fake_outbox[MLX5_DPA_OUTBOX_CQ_DB / 8] == (8ull << 32 | 0x41), "CQ_DB");
}

int check_main(void);
int check_main(void)
{
	use_fake_ctx();
	check_pure();
	check_libc();
	check_dpaintrin();
	check_matmul();
	check_window_fill();
	check_ctx_dump();
	check_tls();
	check_msg_stream();
	check_packet_processor();
	check_nic_doorbells();
	check_outbox_names();
	say("check: %d checks, %d failures\n", checks, failures);
	return failures ? 1 : 0;
}

__asm__(".globl _start\n"
	"_start:\n"
	"	call check_main\n"
	"	li a7, 93\n"
	"	ecall\n");
