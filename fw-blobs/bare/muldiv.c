/* M extension edge cases: the spec's divide-by-zero and overflow results, high multiplies. */
#include "bare.h"

static const int64_t vals[] = {
	0, 1, -1, 2, -2, 3, -3, 7, -7, 0x7fffffff, -0x7fffffff - 1, 0xffffffff,
	0x7fffffffffffffffll, -0x7fffffffffffffffll - 1, 0x123456789abcdefll,
	-0x123456789abcdefll, 1000000007, 65536, -65536,
};
#define N (sizeof(vals) / sizeof(vals[0]))

/* The compiler treats division by zero as undefined; the hardware result is defined, so use
 * the instructions directly. */
#define OP(insn, a, b) ({ uint64_t _r; __asm__(insn " %0, %1, %2" : "=r"(_r) : "r"(a), "r"(b)); _r; })

int main(void)
{
	uint64_t h = MIX_INIT;
	for (unsigned i = 0; i < N; i++) {
		for (unsigned j = 0; j < N; j++) {
			uint64_t a = (uint64_t)vals[i], b = (uint64_t)vals[j];
			h = mix(h, OP("mul", a, b));
			h = mix(h, OP("mulh", a, b));
			h = mix(h, OP("mulhsu", a, b));
			h = mix(h, OP("mulhu", a, b));
			h = mix(h, OP("div", a, b));
			h = mix(h, OP("divu", a, b));
			h = mix(h, OP("rem", a, b));
			h = mix(h, OP("remu", a, b));
			h = mix(h, OP("mulw", a, b));
			h = mix(h, OP("divw", a, b));
			h = mix(h, OP("divuw", a, b));
			h = mix(h, OP("remw", a, b));
			h = mix(h, OP("remuw", a, b));
		}
	}
	/* the defined corner results, checked here as well as through the checksum */
	int bad = 0;
	bad |= OP("div", 5, 0) != ~0ull;
	bad |= OP("divu", 5, 0) != ~0ull;
	bad |= OP("rem", 5, 0) != 5;
	bad |= OP("remu", 5, 0) != 5;
	bad |= OP("div", 0x8000000000000000ull, -1) != 0x8000000000000000ull;
	bad |= OP("rem", 0x8000000000000000ull, -1) != 0;
	bad |= OP("divw", 0x80000000, -1) != 0xffffffff80000000ull;
	bad |= OP("remw", 0x80000000, -1) != 0;
	bad |= OP("divuw", 7, 0) != ~0ull;
	bad |= OP("remuw", 0x80000007ull, 0) != 0xffffffff80000007ull;
	/* and the compiler's own use of M: a loop of real divisions */
	uint64_t acc = 0;
	for (uint64_t k = 1; k < 2000; k++)
		acc += (OPAQUE(0xfedcba9876543210ull) / k) % (k + 3);
	h = mix(h, acc);
	bare_report("muldiv", h);
	return bad ? 1 : (int)(h & 0x7f) | 0x80;
}
