/* A extension: AMOs in both widths (through builtins and directly), LR/SC loops from
 * compare-and-swap, and a spin lock. */
#include "bare.h"

static volatile uint32_t w32[8];
static volatile uint64_t w64[8];

#define AMO(insn, p, v) ({ uint64_t _r; __asm__ volatile(insn " %0, %2, (%1)" : "=r"(_r) : "r"(p), "r"(v) : "memory"); _r; })

static uint32_t lock;

static void acquire(void)
{
	while (__atomic_exchange_n(&lock, 1, __ATOMIC_ACQUIRE))
		;
}

static void release(void)
{
	__atomic_store_n(&lock, 0, __ATOMIC_RELEASE);
}

int main(void)
{
	uint64_t h = MIX_INIT;
	static const uint64_t ops[] = { 1, 0xffffffff, 0x80000000, 0x7fffffff, 0x8000000000000000ull,
					0xfffffffffffffffeull, 12345, 0x123456789ull };
	for (unsigned i = 0; i < 8; i++) {
		w32[i] = 0x80000001u * (i + 1);
		w64[i] = 0x8000000000000001ull * (i + 3);
	}
	for (unsigned r = 0; r < 20; r++) {
		for (unsigned i = 0; i < 8; i++) {
			uint64_t v = ops[(i + r) % 8];
			volatile uint32_t *p = &w32[i];
			volatile uint64_t *q = &w64[i];
			h = mix(h, AMO("amoadd.w", p, v));
			h = mix(h, AMO("amoxor.w", p, v));
			h = mix(h, AMO("amoor.w", p, v >> 3));
			h = mix(h, AMO("amoand.w", p, ~v));
			h = mix(h, AMO("amomin.w", p, v));
			h = mix(h, AMO("amomax.w", p, v));
			h = mix(h, AMO("amominu.w", p, v));
			h = mix(h, AMO("amomaxu.w", p, v));
			h = mix(h, AMO("amoswap.w", p, v * 3));
			h = mix(h, AMO("amoadd.d", q, v));
			h = mix(h, AMO("amoxor.d", q, v));
			h = mix(h, AMO("amoor.d", q, v >> 3));
			h = mix(h, AMO("amoand.d", q, ~v));
			h = mix(h, AMO("amomin.d", q, v));
			h = mix(h, AMO("amomax.d", q, v));
			h = mix(h, AMO("amominu.d", q, v));
			h = mix(h, AMO("amomaxu.d", q, v));
			h = mix(h, AMO("amoswap.d", q, v * 5));
			/* compare-and-swap compiles to lr/sc loops */
			uint32_t e32 = *p;
			h = mix(h, __atomic_compare_exchange_n((uint32_t *)p, &e32, e32 + 7, 0,
							       __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST));
			uint32_t wrong = e32 + 1;
			h = mix(h, __atomic_compare_exchange_n((uint32_t *)p, &wrong, 0, 0,
							       __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST));
			h = mix(h, wrong);
			uint64_t e64 = *q;
			h = mix(h, __atomic_compare_exchange_n((uint64_t *)q, &e64, e64 ^ v, 0,
							       __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST));
			h = mix(h, __atomic_fetch_add((uint64_t *)q, 3, __ATOMIC_RELAXED));
		}
		acquire();
		h = mix(h, lock);
		release();
	}
	/* sc after a store to the reserved word must fail (nonzero first, so a cmpxchg-based
	 * emulation of sc sees the change too) */
	w64[0] = 5;
	uint64_t lrv, scr;
	__asm__ volatile("lr.d %0, (%2)\n\tsd zero, 0(%2)\n\tsc.d %1, %3, (%2)"
			 : "=&r"(lrv), "=&r"(scr) : "r"(&w64[0]), "r"(1ull) : "memory");
	int bad = scr == 0;
	h = mix(h, lrv);
	h = mix(h, w64[0]);
	bare_report("atomics", h);
	return bad ? 1 : (int)(h & 0x7f);
}
