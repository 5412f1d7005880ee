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

size_t mlx5_dpa_strnlen(const char *s, size_t max)
{
	size_t n = 0;

	while (n < max && s[n])
		n++;
	return n;
}

/* The rest of ISO C <string.h> (libflexio-libc/string.h). */

void *memchr(const void *s, int c, size_t n)
{
	const uint8_t *p = s;

	for (; n; n--, p++) {
		if (*p == (uint8_t)c)
			return (void *)(uintptr_t)p;
	}
	return NULL;
}

char *strcpy(char *dst, const char *src)
{
	char *d = dst;

	while ((*d++ = *src++))
		;
	return dst;
}

char *strncpy(char *dst, const char *src, size_t n)
{
	size_t i = 0;

	for (; i < n && src[i]; i++)
		dst[i] = src[i];
	for (; i < n; i++)
		dst[i] = '\0';
	return dst;
}

char *strcat(char *dst, const char *src)
{
	strcpy(dst + strlen(dst), src);
	return dst;
}

char *strncat(char *dst, const char *src, size_t n)
{
	char *d = dst + strlen(dst);

	while (n-- && *src)
		*d++ = *src++;
	*d = '\0';
	return dst;
}

int strcmp(const char *a, const char *b)
{
	while (*a && *a == *b) {
		a++;
		b++;
	}
	return (int)(uint8_t)*a - (int)(uint8_t)*b;
}

int strncmp(const char *a, const char *b, size_t n)
{
	for (; n; n--, a++, b++) {
		if (*a != *b || !*a)
			return (int)(uint8_t)*a - (int)(uint8_t)*b;
	}
	return 0;
}

/* The DPA has one locale, "C": collation is byte order. */
int strcoll(const char *a, const char *b)
{
	return strcmp(a, b);
}

size_t strxfrm(char *dst, const char *src, size_t n)
{
	size_t len = strlen(src);

	if (n > len) {
		strcpy(dst, src);
	} else if (n) {
		memcpy(dst, src, n - 1);
		dst[n - 1] = '\0';
	}
	return len;
}

char *strchr(const char *s, int c)
{
	for (;; s++) {
		if (*s == (char)c)
			return (char *)(uintptr_t)s;
		if (!*s)
			return NULL;
	}
}

char *strrchr(const char *s, int c)
{
	const char *last = NULL;

	for (;; s++) {
		if (*s == (char)c)
			last = s;
		if (!*s)
			return (char *)(uintptr_t)last;
	}
}

size_t strspn(const char *s, const char *accept)
{
	size_t n = 0;

	while (s[n] && strchr(accept, s[n]))
		n++;
	return n;
}

size_t strcspn(const char *s, const char *reject)
{
	size_t n = 0;

	while (s[n] && !strchr(reject, s[n]))
		n++;
	return n;
}

char *strpbrk(const char *s, const char *accept)
{
	s += strcspn(s, accept);
	return *s ? (char *)(uintptr_t)s : NULL;
}

char *strstr(const char *haystack, const char *needle)
{
	size_t n = strlen(needle);

	for (; *haystack; haystack++) {
		if (!strncmp(haystack, needle, n))
			return (char *)(uintptr_t)haystack;
	}
	return n ? NULL : (char *)(uintptr_t)haystack;
}

/* The errno values of the runtime's OS calls (flexio_dev_err.h, README "FlexIO-OS calls"). */
char *strerror(int errnum)
{
	switch (errnum) {
	case 0:
		return (char *)"Success";
	case 1:
		return (char *)"No such object";
	case 2:
		return (char *)"Object of another process";
	case 3:
		return (char *)"Bad GVMI";
	default:
		return (char *)"Unknown error";
	}
}
