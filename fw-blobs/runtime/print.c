/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * The printf formatter of the device runtime (mlx5_dpa_vsnprintf). Pure: no OS call, no
 * global state, no floating point; safe from any number of threads. Conversions and flags are
 * listed in flexio_dev.h.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <libflexio-dev/flexio_dev.h>
#include <libflexio-libc/string.h>

struct out {
	char *buf;
	size_t size;
	size_t len; /* characters produced so far, stored or not */
};

static void put(struct out *o, char c)
{
	if (o->len + 1 < o->size)
		o->buf[o->len] = c;
	o->len++;
}

static void pad(struct out *o, char c, int n)
{
	while (n-- > 0)
		put(o, c);
}

enum {
	F_MINUS = 1 << 0,
	F_ZERO = 1 << 1,
	F_PLUS = 1 << 2,
	F_SPACE = 1 << 3,
	F_ALT = 1 << 4,
};

static void fmt_int(struct out *o, uint64_t v, int neg, unsigned base, int upper, unsigned flags,
		    int width, int prec)
{
	const char *dig = upper ? "0123456789ABCDEF" : "0123456789abcdef";
	char tmp[24];
	char prefix[2];
	int nd = 0;
	int np = 0;
	int zeros;
	int total;

	if (!(v == 0 && prec == 0)) {
		do {
			tmp[nd++] = dig[v % base];
			v /= base;
		} while (v);
	}
	if (neg)
		prefix[np++] = '-';
	else if (flags & F_PLUS)
		prefix[np++] = '+';
	else if (flags & F_SPACE)
		prefix[np++] = ' ';
	if ((flags & F_ALT) && base == 16 && nd > 0 && !(nd == 1 && tmp[0] == '0')) {
		prefix[0] = '0';
		prefix[1] = upper ? 'X' : 'x';
		np = 2;
	}
	zeros = prec > nd ? prec - nd : 0;
	if ((flags & F_ALT) && base == 8 && zeros == 0 && (nd == 0 || tmp[nd - 1] != '0'))
		zeros = 1;
	total = np + zeros + nd;
	if (!(flags & F_MINUS)) {
		if ((flags & F_ZERO) && prec < 0)
			zeros += width > total ? width - total : 0;
		else
			pad(o, ' ', width - total);
	}
	for (int i = 0; i < np; i++)
		put(o, prefix[i]);
	pad(o, '0', zeros);
	while (nd)
		put(o, tmp[--nd]);
	if (flags & F_MINUS)
		pad(o, ' ', width - total);
}

static void fmt_str(struct out *o, const char *s, unsigned flags, int width, int prec)
{
	int n;

	if (!s)
		s = "(null)";
	n = (int)mlx5_dpa_strnlen(s, prec >= 0 ? (size_t)prec : (size_t)-1);
	if (!(flags & F_MINUS))
		pad(o, ' ', width - n);
	for (int i = 0; i < n; i++)
		put(o, s[i]);
	if (flags & F_MINUS)
		pad(o, ' ', width - n);
}

/* Length modifiers, in the order C promotes them. */
enum { L_HH, L_H, L_NONE, L_L, L_LL };

static int64_t arg_signed(va_list *ap, int len)
{
	switch (len) {
	case L_HH:
		return (signed char)va_arg(*ap, int);
	case L_H:
		return (short)va_arg(*ap, int);
	case L_NONE:
		return va_arg(*ap, int);
	case L_L:
		return va_arg(*ap, long);
	default:
		return va_arg(*ap, long long);
	}
}

static uint64_t arg_unsigned(va_list *ap, int len)
{
	switch (len) {
	case L_HH:
		return (unsigned char)va_arg(*ap, unsigned int);
	case L_H:
		return (unsigned short)va_arg(*ap, unsigned int);
	case L_NONE:
		return va_arg(*ap, unsigned int);
	case L_L:
		return va_arg(*ap, unsigned long);
	default:
		return va_arg(*ap, unsigned long long);
	}
}

int mlx5_dpa_vsnprintf(char *buf, size_t size, const char *fmt, va_list ap_in)
{
	struct out o = { buf, size, 0 };
	va_list ap;

	va_copy(ap, ap_in);
	while (*fmt) {
		const char *spec = fmt;
		unsigned flags = 0;
		int width = 0;
		int prec = -1;
		int len = L_NONE;
		char c;

		if (*fmt != '%') {
			put(&o, *fmt++);
			continue;
		}
		fmt++;
		for (;; fmt++) {
			if (*fmt == '-')
				flags |= F_MINUS;
			else if (*fmt == '0')
				flags |= F_ZERO;
			else if (*fmt == '+')
				flags |= F_PLUS;
			else if (*fmt == ' ')
				flags |= F_SPACE;
			else if (*fmt == '#')
				flags |= F_ALT;
			else
				break;
		}
		if (*fmt == '*') {
			width = va_arg(ap, int);
			if (width < 0) {
				flags |= F_MINUS;
				width = -width;
			}
			fmt++;
		} else {
			while (*fmt >= '0' && *fmt <= '9' && width < 100000)
				width = width * 10 + (*fmt++ - '0');
		}
		if (*fmt == '.') {
			fmt++;
			prec = 0;
			if (*fmt == '*') {
				prec = va_arg(ap, int);
				if (prec < 0)
					prec = -1;
				fmt++;
			} else {
				while (*fmt >= '0' && *fmt <= '9' && prec < 100000)
					prec = prec * 10 + (*fmt++ - '0');
			}
		}
		if (*fmt == 'h') {
			len = L_H;
			if (*++fmt == 'h') {
				len = L_HH;
				fmt++;
			}
		} else if (*fmt == 'l') {
			len = L_L;
			if (*++fmt == 'l') {
				len = L_LL;
				fmt++;
			}
		} else if (*fmt == 'z' || *fmt == 't' || *fmt == 'j') {
			len = L_LL; /* size_t, ptrdiff_t and intmax_t are 64-bit on lp64 */
			fmt++;
		}
		c = *fmt;
		if (c == '\0') {
			/* A lone '%' (or spec) at the end: copy it. */
			while (spec < fmt)
				put(&o, *spec++);
			break;
		}
		fmt++;
		switch (c) {
		case 'd':
		case 'i': {
			int64_t v = arg_signed(&ap, len);
			uint64_t m = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;

			fmt_int(&o, m, v < 0, 10, 0, flags, width, prec);
			break;
		}
		case 'u':
			fmt_int(&o, arg_unsigned(&ap, len), 0, 10, 0, flags & ~(F_PLUS | F_SPACE), width,
				prec);
			break;
		case 'x':
		case 'X':
			fmt_int(&o, arg_unsigned(&ap, len), 0, 16, c == 'X', flags & ~(F_PLUS | F_SPACE),
				width, prec);
			break;
		case 'o':
			fmt_int(&o, arg_unsigned(&ap, len), 0, 8, 0, flags & ~(F_PLUS | F_SPACE), width,
				prec);
			break;
		case 'p':
			/* Fixed form: 0x and 16 hex digits; flags and width are ignored. */
			put(&o, '0');
			put(&o, 'x');
			fmt_int(&o, (uint64_t)(uintptr_t)va_arg(ap, void *), 0, 16, 0, 0, 0, 16);
			break;
		case 'c':
			if (!(flags & F_MINUS))
				pad(&o, ' ', width - 1);
			put(&o, (char)va_arg(ap, int));
			if (flags & F_MINUS)
				pad(&o, ' ', width - 1);
			break;
		case 's':
			fmt_str(&o, va_arg(ap, const char *), flags, width, prec);
			break;
		case '%':
			put(&o, '%');
			break;
		default:
			/* Unknown conversion: copy the whole spec as written. */
			while (spec < fmt)
				put(&o, *spec++);
			break;
		}
	}
	va_end(ap);
	if (size > 0)
		buf[o.len < size ? o.len : size - 1] = '\0';
	return o.len > 0x7fffffff ? 0x7fffffff : (int)o.len;
}

int mlx5_dpa_snprintf(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = mlx5_dpa_vsnprintf(buf, size, fmt, ap);
	va_end(ap);
	return n;
}
