/* Integer arithmetic: add/sub/shift/compare in 64 and 32 bits over a spread of operands,
 * including sign-extension corners. */
#include "bare.h"

static const uint64_t vals[] = {
	0, 1, 2, 3, 7, 0x7f, 0x80, 0xff, 0x7fff, 0x8000, 0xffff, 0x7fffffff, 0x80000000,
	0xffffffff, 0x100000000ull, 0x7fffffffffffffffull, 0x8000000000000000ull,
	0xffffffffffffffffull, 0xfffffffffffffffeull, 0x123456789abcdef0ull, 0xdeadbeefcafef00dull,
	0x5555555555555555ull, 0xaaaaaaaaaaaaaaaaull, 31, 32, 33, 63, 64, 65,
};
#define N (sizeof(vals) / sizeof(vals[0]))

int main(void)
{
	uint64_t h = MIX_INIT;
	for (unsigned i = 0; i < N; i++) {
		for (unsigned j = 0; j < N; j++) {
			uint64_t a = OPAQUE(vals[i]), b = OPAQUE(vals[j]);
			int64_t sa = (int64_t)a, sb = (int64_t)b;
			uint32_t a32 = (uint32_t)a, b32 = (uint32_t)b;
			h = mix(h, a + b);
			h = mix(h, a - b);
			h = mix(h, a << (b & 63));
			h = mix(h, a >> (b & 63));
			h = mix(h, (uint64_t)(sa >> (b & 63)));
			h = mix(h, sa < sb);
			h = mix(h, a < b);
			h = mix(h, a ^ b);
			h = mix(h, a | b);
			h = mix(h, a & b);
			/* 32-bit (addw, subw, sllw, srlw, sraw), sign-extended to 64 */
			h = mix(h, (uint64_t)(int64_t)(int32_t)(a32 + b32));
			h = mix(h, (uint64_t)(int64_t)(int32_t)(a32 - b32));
			h = mix(h, (uint64_t)(int64_t)(int32_t)(a32 << (b & 31)));
			h = mix(h, (uint64_t)(int64_t)(int32_t)(a32 >> (b & 31)));
			h = mix(h, (uint64_t)(int64_t)((int32_t)a32 >> (b & 31)));
		}
		uint64_t a = OPAQUE(vals[i]);
		/* immediates */
		h = mix(h, a + 2047);
		h = mix(h, a - 2048);
		h = mix(h, (int64_t)a < -5);
		h = mix(h, a < 17);
		h = mix(h, a ^ 0x7ff);
		h = mix(h, a & -16);
		h = mix(h, a << 13);
		h = mix(h, (uint64_t)((int64_t)a >> 47));
		h = mix(h, (uint64_t)(int64_t)(int32_t)((uint32_t)a << 7));
		h = mix(h, (uint64_t)(int64_t)((int32_t)a >> 9));
		/* bytes and halves: loads with sign / zero extension */
		const volatile uint8_t *p = (const volatile uint8_t *)&vals[i];
		const volatile int16_t *q = (const volatile int16_t *)&vals[i];
		const volatile int32_t *r = (const volatile int32_t *)&vals[i];
		h = mix(h, (uint64_t)(int64_t)(int8_t)p[7]);
		h = mix(h, p[6]);
		h = mix(h, (uint64_t)(int64_t)q[3]);
		h = mix(h, (uint16_t)q[2]);
		h = mix(h, (uint64_t)(int64_t)r[1]);
		h = mix(h, (uint32_t)r[0]);
	}
	bare_report("intmath", h);
	return (int)(h & 0x7f);
}
