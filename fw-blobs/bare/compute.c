/* The benchmark loop: integer mixing, a multiply, a table load and a store per iteration,
 * branches. compute(n) is also an entry of its own (the engine benchmark calls it directly);
 * main runs it for argv[1] iterations (qemu-user timing) or a small default. */
#include "bare.h"

static uint32_t tab[256];

uint64_t compute(uint64_t n)
{
	uint64_t a = 0x9e3779b97f4a7c15ull, b = 1, acc = 0;
	for (uint64_t i = 0; i < n; i++) {
		a ^= a << 7;
		a ^= a >> 9;
		b = b * 6364136223846793005ull + 1442695040888963407ull;
		uint32_t t = tab[(a ^ b) & 0xff];
		tab[i & 0xff] = t + (uint32_t)a;
		if (t & 1)
			acc += t;
		else
			acc ^= b >> 3;
	}
	return acc ^ a;
}

static uint64_t parse(const char *s)
{
	uint64_t v = 0;
	while (*s >= '0' && *s <= '9')
		v = v * 10 + (uint64_t)(*s++ - '0');
	return v;
}

int main(int argc, char **argv)
{
	uint64_t n = argc > 1 ? parse(argv[1]) : 20000;
	uint64_t r = compute(n);
	bare_report("compute", r);
	return (int)(r & 0x7f);
}
