/* The little runtime of the bare corpus programs: write / exit ecalls (Linux numbers, served
 * by qemu-user and by the mlx5-sim bare machine) and a checksum report. */
#ifndef BARE_H
#define BARE_H

#include <stdint.h>
#include <stddef.h>

static inline long bare_ecall3(long n, long a, long b, long c)
{
	register long a0 __asm__("a0") = a;
	register long a1 __asm__("a1") = b;
	register long a2 __asm__("a2") = c;
	register long a7 __asm__("a7") = n;
	__asm__ volatile("ecall" : "+r"(a0) : "r"(a1), "r"(a2), "r"(a7) : "memory");
	return a0;
}

static inline void bare_write(const char *s, size_t n)
{
	bare_ecall3(64, 1, (long)s, (long)n);
}

static inline void bare_puts(const char *s)
{
	size_t n = 0;
	while (s[n])
		n++;
	bare_write(s, n);
}

/* "name 0123456789abcdef\n" */
static inline void bare_report(const char *name, uint64_t v)
{
	char buf[17];
	for (int i = 0; i < 16; i++) {
		unsigned d = (v >> (60 - 4 * i)) & 0xf;
		buf[i] = d < 10 ? '0' + d : 'a' + d - 10;
	}
	buf[16] = '\n';
	bare_puts(name);
	bare_write(" ", 1);
	bare_write(buf, 17);
}

/* Mixes a value into a running checksum (64-bit FNV-1a over the bytes). */
static inline uint64_t mix(uint64_t h, uint64_t v)
{
	for (int i = 0; i < 8; i++) {
		h ^= (v >> (8 * i)) & 0xff;
		h *= 0x100000001b3ull;
	}
	return h;
}

#define MIX_INIT 0xcbf29ce484222325ull

/* The compiler may emit calls to these even with -ffreestanding. */
void *memset(void *d, int c, size_t n);
void *memcpy(void *d, const void *s, size_t n);

/* A value the compiler cannot see through (defeats constant folding of the tests). */
#define OPAQUE(x) ({ __typeof__((x) + 0) _v = (x); __asm__ volatile("" : "+r"(_v)); _v; })

#endif
