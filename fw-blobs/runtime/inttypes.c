/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* libflexio-libc/inttypes.h: imaxabs, imaxdiv, strtoimax, strtoumax. */
#include <stdint.h>

#include <libflexio-libc/inttypes.h>

intmax_t imaxabs(intmax_t j)
{
	return j < 0 ? -j : j;
}

imaxdiv_t imaxdiv(intmax_t numer, intmax_t denom)
{
	imaxdiv_t r = { numer / denom, numer % denom };

	return r;
}

static int digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'Z')
		return c - 'A' + 10;
	return 99;
}

/* The magnitude of a number in `s` (after sign handling), saturating at `limit`. */
static uintmax_t parse(const char *s, char **endptr, int base, int *neg, uintmax_t limit_pos,
		       uintmax_t limit_neg)
{
	const char *p = s;
	uintmax_t v = 0;
	int any = 0, over = 0;

	while (*p == ' ' || (*p >= '\t' && *p <= '\r'))
		p++;
	*neg = 0;
	if (*p == '+' || *p == '-')
		*neg = *p++ == '-';
	if ((base == 0 || base == 16) && p[0] == '0' && (p[1] == 'x' || p[1] == 'X') &&
	    digit(p[2]) < 16) {
		p += 2;
		base = 16;
	} else if (base == 0) {
		base = p[0] == '0' ? 8 : 10;
	}
	if (base < 2 || base > 36) {
		if (endptr)
			*endptr = (char *)(uintptr_t)s;
		return 0;
	}
	uintmax_t limit = *neg ? limit_neg : limit_pos;

	for (; digit(*p) < base; p++) {
		any = 1;
		uintmax_t d = (uintmax_t)digit(*p);

		if (v > (limit - d) / (uintmax_t)base)
			over = 1;
		else
			v = v * (uintmax_t)base + d;
	}
	if (endptr)
		*endptr = (char *)(uintptr_t)(any ? p : s);
	return over ? limit : v;
}

intmax_t strtoimax(const char *nptr, char **endptr, int base)
{
	int neg;
	uintmax_t v = parse(nptr, endptr, base, &neg, (uintmax_t)INTMAX_MAX,
			    (uintmax_t)INTMAX_MAX + 1);

	return neg ? (intmax_t)(0 - v) : (intmax_t)v;
}

uintmax_t strtoumax(const char *nptr, char **endptr, int base)
{
	int neg;
	uintmax_t v = parse(nptr, endptr, base, &neg, UINTMAX_MAX, UINTMAX_MAX);

	return neg ? 0 - v : v;
}
