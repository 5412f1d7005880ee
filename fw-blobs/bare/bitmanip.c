/* Zbb and Zbs through the compiler's builtins and patterns, plus orc.b (no builtin). */
#include "bare.h"

static uint64_t orc_b(uint64_t x)
{
	uint64_t r;
	__asm__("orc.b %0, %1" : "=r"(r) : "r"(x));
	return r;
}

static uint64_t rol(uint64_t x, unsigned n) { return (x << (n & 63)) | (x >> (-n & 63)); }
static uint64_t ror(uint64_t x, unsigned n) { return (x >> (n & 63)) | (x << (-n & 63)); }
static uint32_t rolw(uint32_t x, unsigned n) { return (x << (n & 31)) | (x >> (-n & 31)); }
static uint32_t rorw(uint32_t x, unsigned n) { return (x >> (n & 31)) | (x << (-n & 31)); }

int main(void)
{
	uint64_t h = MIX_INIT;
	uint64_t x = 0x0123456789abcdefull;
	for (unsigned i = 0; i < 300; i++) {
		/* xorshift64 */
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		uint64_t y = x >> (i % 64);
		uint64_t z = OPAQUE(x & 0x00ff00ff000000ffull);
		unsigned n = OPAQUE(i);
		h = mix(h, y ? (uint64_t)__builtin_clzll(y) : 64);
		h = mix(h, y ? (uint64_t)__builtin_ctzll(y) : 64);
		h = mix(h, (uint32_t)y ? (uint64_t)__builtin_clz((uint32_t)y) : 32);
		h = mix(h, (uint32_t)y ? (uint64_t)__builtin_ctz((uint32_t)y) : 32);
		h = mix(h, (uint64_t)__builtin_popcountll(y));
		h = mix(h, (uint64_t)__builtin_popcount((uint32_t)y));
		h = mix(h, __builtin_bswap64(y));
		h = mix(h, orc_b(z));
		h = mix(h, x & ~y);
		h = mix(h, x | ~y);
		h = mix(h, ~(x ^ y));
		h = mix(h, (int64_t)x < (int64_t)y ? x : y);
		h = mix(h, (int64_t)x > (int64_t)y ? x : y);
		h = mix(h, x < y ? x : y);
		h = mix(h, x > y ? x : y);
		h = mix(h, (uint64_t)(int64_t)(int8_t)y);
		h = mix(h, (uint64_t)(int64_t)(int16_t)y);
		h = mix(h, (uint16_t)y);
		h = mix(h, rol(x, n));
		h = mix(h, ror(x, n));
		h = mix(h, ror(x, 13));
		h = mix(h, (uint64_t)(int64_t)(int32_t)rolw((uint32_t)x, n));
		h = mix(h, (uint64_t)(int64_t)(int32_t)rorw((uint32_t)x, n));
		h = mix(h, (uint64_t)(int64_t)(int32_t)rorw((uint32_t)x, 7));
		/* Zbs: bset / bclr / binv / bext, register and immediate forms */
		h = mix(h, x | (1ull << (n & 63)));
		h = mix(h, x & ~(1ull << (n & 63)));
		h = mix(h, x ^ (1ull << (n & 63)));
		h = mix(h, (x >> (n & 63)) & 1);
		h = mix(h, x | (1ull << 40));
		h = mix(h, x & ~(1ull << 62));
		h = mix(h, x ^ (1ull << 33));
		h = mix(h, (x >> 45) & 1);
	}
	int bad = orc_b(0x0001000000ff0010ull) != 0x00ff000000ff00ffull;
	bare_report("bitmanip", h);
	return bad ? 1 : (int)(h & 0x7f);
}
