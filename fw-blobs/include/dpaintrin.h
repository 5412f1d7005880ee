/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * DPA intrinsics for GCC-built device code: the fences, cache operations, counters and
 * fixed-point helpers of the DPA Subsystem Programming Guide (seed
 * `dpa-subsystem-programming-guide.txt`, "Memory Model" and "DPA intrinsics"), with the
 * names DPACC's `dpaintrin.h` gives them, so device sources written for DPACC compile here
 * unchanged. Written from the guide's descriptions; not NVIDIA's header.
 *
 * Fences: the guide's memory spaces map onto the RISC-V fence sets. __DPA_MEMORY and
 * __DPA_HEAP are ordinary memory (r / w); __DPA_MMIO is device space, the outbox and the
 * window (reads i, writes o); __DPA_SYSTEM is all of them (iorw). So
 * __dpa_thread_fence(__DPA_MEMORY, __DPA_W, __DPA_W) is `fence w, w` and
 * __dpa_thread_window_read_inv() is `fence i, i`. NVIDIA's own builds use ordinary fence
 * encodings too (docs/sources.md section 8). Each fence is a compiler barrier as well.
 *
 * Counters: __dpa_thread_cycles / _inst_ret / _time read the `cycle`, `instret` and `time`
 * CSRs (rdcycle, rdinstret, rdtime), meaningful, as the guide says, only while the thread
 * stays on one execution unit.
 *
 * Fixed point (__dpa_fxp_*): NVIDIA's xrpfxp instructions have no public encoding, so these
 * are software with the guide's semantics on Q16.16 values.
 */
#ifndef MLX5_DPA_DPAINTRIN_H
#define MLX5_DPA_DPAINTRIN_H

#include <stdint.h>

/** An intrinsics version as a number (ours: major * 100 + minor). */
#define DPA_INTRIN_VERSION(MAJOR, MINOR) ((MAJOR) * 100 + (MINOR))
#ifndef DPA_INTRIN_VERSION_USED
#define DPA_INTRIN_VERSION_USED (DPA_INTRIN_VERSION(1, 3))
#endif
#if DPA_INTRIN_VERSION_USED != DPA_INTRIN_VERSION(1, 3)
#error "dpaintrin.h: only intrinsics version 1.3 is provided"
#endif

/* Memory spaces. */
#define __DPA_HEAP 1
#define __DPA_MEMORY 2
#define __DPA_MMIO 3
#define __DPA_SYSTEM 4

/* Memory operations. */
#define __DPA_R 1
#define __DPA_W 2
#define __DPA_RW 3

/* The fence set (RISC-V bits: i 8, o 4, r 2, w 1) of an operation on a space. */
#define __DPA_FENCE_SET_(SPACE, OP)                                                     \
	((SPACE) == __DPA_SYSTEM ? 0xf                                                    \
	 : (SPACE) == __DPA_MMIO ? ((((OP) & __DPA_R) ? 8 : 0) | (((OP) & __DPA_W) ? 4 : 0)) \
				 : ((((OP) & __DPA_R) ? 2 : 0) | (((OP) & __DPA_W) ? 1 : 0)))
/* The encoding of `fence pred, succ` (MISC-MEM, funct3 0, fm 0). */
#define __DPA_FENCE_WORD_(SPACE, PRED, SUCC) \
	(0x0fu | ((unsigned)__DPA_FENCE_SET_(SPACE, PRED) << 24) | \
	 ((unsigned)__DPA_FENCE_SET_(SPACE, SUCC) << 20))

/**
 * Orders the calling thread's PRED_OP operations on MEMORY_SPACE before the call ahead of its
 * SUCC_OP operations after it, as seen by every thread, the host, the NIC and peer devices.
 * All three arguments must be the constants above.
 */
#define __dpa_thread_fence(MEMORY_SPACE, PRED_OP, SUCC_OP)                              \
	__asm__ volatile(".word %0" ::"i"(__DPA_FENCE_WORD_(MEMORY_SPACE, PRED_OP, SUCC_OP)) \
			 : "memory")

/** __dpa_thread_fence(__DPA_MEMORY, OP1, OP2). */
#define __dpa_thread_memory_fence(OP1, OP2) __dpa_thread_fence(__DPA_MEMORY, OP1, OP2)
/** __dpa_thread_fence(__DPA_MMIO, OP1, OP2): ordering around outbox stores. */
#define __dpa_thread_outbox_fence(OP1, OP2) __dpa_thread_fence(__DPA_MMIO, OP1, OP2)
/** __dpa_thread_fence(__DPA_MMIO, OP1, OP2): ordering around window accesses. */
#define __dpa_thread_window_fence(OP1, OP2) __dpa_thread_fence(__DPA_MMIO, OP1, OP2)
/** Every earlier access of every space before every later one. */
#define __dpa_thread_system_fence() __dpa_thread_fence(__DPA_SYSTEM, __DPA_RW, __DPA_RW)
/** Window contents read before the call are not reused by reads after it (fence i, i). */
#define __dpa_thread_window_read_inv() __dpa_thread_fence(__DPA_MMIO, __DPA_R, __DPA_R)
/** Window writes before the call are visible before any write after it (fence o, o). */
#define __dpa_thread_window_writeback() __dpa_thread_fence(__DPA_MMIO, __DPA_W, __DPA_W)
/** Memory writes before the call are visible before any write after it (fence w, w). */
#define __dpa_thread_memory_writeback() __dpa_thread_fence(__DPA_MEMORY, __DPA_W, __DPA_W)

/**
 * A hint that the cache line at ADDR holds nothing worth writing back. The model keeps no
 * caches, so this evaluates ADDR and does nothing else.
 */
#define __dpa_data_ignore(ADDR) ((void)(ADDR))

static inline uint64_t __dpa_thread_cycles_(void)
{
	uint64_t v;

	__asm__ volatile("rdcycle %0" : "=r"(v));
	return v;
}

static inline uint64_t __dpa_thread_inst_ret_(void)
{
	uint64_t v;

	__asm__ volatile("rdinstret %0" : "=r"(v));
	return v;
}

static inline uint64_t __dpa_thread_time_(void)
{
	uint64_t v;

	__asm__ volatile("rdtime %0" : "=r"(v));
	return v;
}

/** Cycles since an arbitrary point on the thread's current execution unit. */
#define __dpa_thread_cycles() __dpa_thread_cycles_()
/** Instructions retired since an arbitrary point on the thread's current execution unit. */
#define __dpa_thread_inst_ret() __dpa_thread_inst_ret_()
/** Timer ticks since an arbitrary point on the thread's current execution unit. */
#define __dpa_thread_time() __dpa_thread_time_()

/** Q16.16 reciprocal 1/x of the Q16.16 value N (N = 0 gives the largest value). */
static inline int __dpa_fxp_rcp_(int n)
{
	if (n == 0)
		return INT32_MAX;
	int64_t r = ((int64_t)1 << 32) / n;

	return r > INT32_MAX ? INT32_MAX : r < INT32_MIN ? INT32_MIN : (int)r;
}

/** Q16.16 power of two 2^x of the Q16.16 value N (saturating; rounded down). */
static inline int __dpa_fxp_pow2_(int n)
{
	/* 2^(2^-k), k = 1..16, in Q1.31: 2^f is their product over f's set bits. */
	static const uint32_t root[16] = {
		0xb504f334u, 0x9837f052u, 0x8b95c1e4u, 0x85aac368u, 0x82cd8699u, 0x8164d1f4u,
		0x80b1ed50u, 0x8058d7d3u, 0x802c6437u, 0x8016302fu, 0x800b179du, 0x80058bafu,
		0x8002c5d0u, 0x800162e6u, 0x8000b173u, 0x800058b9u,
	};
	int ip = n >> 16; /* floor of x */
	uint64_t m = (uint64_t)1 << 31; /* 1.0 in Q1.31 */

	for (int k = 0; k < 16; k++)
		if ((uint32_t)n & (0x8000u >> k))
			m = (m * root[k]) >> 31;
	if (ip >= 15)
		return INT32_MAX;
	if (ip < -47)
		return 0;
	/* m is 2^frac in Q1.31; the result is m * 2^ip in Q16.16. */
	return ip >= -15 ? (int)((m << (ip + 15)) >> 30) : (int)(m >> (15 - ip));
}

/** Q16.16 base-2 logarithm of the unsigned Q16.16 value N (N = 0 gives the smallest value). */
static inline int __dpa_fxp_log2_(unsigned n)
{
	if (n == 0)
		return INT32_MIN;
	int msb = 31 - __builtin_clz(n);
	int result = (msb - 16) * 65536;
	/* Fraction bit by bit: square the normalised mantissa (Q1.31). */
	uint64_t m = (uint64_t)n << (31 - msb); /* in [2^31, 2^32) */

	for (int bit = 15; bit >= 0; bit--) {
		m = (m * m) >> 31;
		if (m >= ((uint64_t)1 << 32)) {
			m >>= 1;
			result += 1 << bit;
		}
	}
	return result;
}

#define __dpa_fxp_rcp(N) __dpa_fxp_rcp_(N)
#define __dpa_fxp_pow2(N) __dpa_fxp_pow2_(N)
#define __dpa_fxp_log2(N) __dpa_fxp_log2_(N)

#endif /* MLX5_DPA_DPAINTRIN_H */
