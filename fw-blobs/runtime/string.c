/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * The C library pieces a -nostdlib program still needs (GCC emits memcpy / memset calls for
 * struct copies and large initialisers). Word accesses are used only when both pointers are
 * 8-byte aligned, so nothing here makes a misaligned access.
 */
#include <stddef.h>
#include <stdint.h>

#include <libflexio-dev/flexio_dev.h>

void *memcpy(void *dst, const void *src, size_t n)
{
	uint8_t *d = dst;
	const uint8_t *s = src;

	if ((((uintptr_t)d | (uintptr_t)s) & 7) == 0) {
		for (; n >= 8; n -= 8, d += 8, s += 8)
			*(uint64_t *)d = *(const uint64_t *)s;
	}
	for (; n; n--)
		*d++ = *s++;
	return dst;
}

void *memmove(void *dst, const void *src, size_t n)
{
	uint8_t *d = dst;
	const uint8_t *s = src;

	if (d == s || n == 0)
		return dst;
	if (d < s || d >= s + n)
		return memcpy(dst, src, n);
	/* Overlapping with dst above src: copy backwards. */
	while (n--)
		d[n] = s[n];
	return dst;
}

void *memset(void *dst, int c, size_t n)
{
	uint8_t *d = dst;
	uint64_t w = (uint8_t)c;

	w |= w << 8;
	w |= w << 16;
	w |= w << 32;
	for (; n && ((uintptr_t)d & 7); n--)
		*d++ = (uint8_t)c;
	for (; n >= 8; n -= 8, d += 8)
		*(uint64_t *)d = w;
	for (; n; n--)
		*d++ = (uint8_t)c;
	return dst;
}

int memcmp(const void *a, const void *b, size_t n)
{
	const uint8_t *x = a;
	const uint8_t *y = b;

	for (; n; n--, x++, y++) {
		if (*x != *y)
			return *x < *y ? -1 : 1;
	}
	return 0;
}

size_t strlen(const char *s)
{
	const char *p = s;

	while (*p)
		p++;
	return (size_t)(p - s);
}

size_t strnlen(const char *s, size_t max)
{
	size_t n = 0;

	while (n < max && s[n])
		n++;
	return n;
}
