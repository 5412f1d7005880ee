/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * libflexio-libc/stdio.h: formatted output over the runtime's formatter and message streams
 * (see the header for what a "file" is on the DPA).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <libflexio-dev/flexio_dev.h>
#include <libflexio-dev/flexio_dev_err.h>
#include <libflexio-libc/stdio.h>
#include <libflexio-libc/string.h>

struct mlx5_dpa_file {
	int id;
};

static struct mlx5_dpa_file out_file = { 1 };
static struct mlx5_dpa_file err_file = { 2 };
FILE *const mlx5_dpa_stdout = &out_file;
FILE *const mlx5_dpa_stderr = &err_file;

int vprintf(const char *fmt, va_list ap)
{
	return mlx5_dpa_vmsg(FLEXIO_MSG_DEV_DEFAULT_STREAM_ID, FLEXIO_MSG_DEV_ALWAYS_PRINT, fmt,
			       ap);
}

int printf(const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vprintf(fmt, ap);
	va_end(ap);
	return n;
}

int vfprintf(FILE *stream, const char *fmt, va_list ap)
{
	if (stream != stdout && stream != stderr)
		return EOF;
	return vprintf(fmt, ap);
}

int fprintf(FILE *stream, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vfprintf(stream, fmt, ap);
	va_end(ap);
	return n;
}

int vsnprintf(char *s, size_t n, const char *fmt, va_list ap)
{
	return mlx5_dpa_vsnprintf(s, n, fmt, ap);
}

int snprintf(char *s, size_t n, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = mlx5_dpa_vsnprintf(s, n, fmt, ap);
	va_end(ap);
	return r;
}

/* No size given: the caller promises the room, as in ISO C. */
int vsprintf(char *s, const char *fmt, va_list ap)
{
	return mlx5_dpa_vsnprintf(s, SIZE_MAX >> 1, fmt, ap);
}

int sprintf(char *s, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vsprintf(s, fmt, ap);
	va_end(ap);
	return r;
}

int vasprintf(char **strp, const char *fmt, va_list ap)
{
	(void)fmt;
	(void)ap;
	if (strp)
		*strp = NULL;
	return -1;
}

int asprintf(char **strp, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vasprintf(strp, fmt, ap);
	va_end(ap);
	return r;
}

int fputs(const char *s, FILE *stream)
{
	if (stream != stdout && stream != stderr)
		return EOF;
	return printf("%s", s) < 0 ? EOF : 0;
}

int puts(const char *s)
{
	return printf("%s\n", s) < 0 ? EOF : 0;
}

void clearerr(FILE *stream)
{
	(void)stream;
}

int feof(FILE *stream)
{
	(void)stream;
	return 0;
}

int ferror(FILE *stream)
{
	(void)stream;
	return 0;
}

/* Every message is posted when written: nothing is buffered. */
int fflush(FILE *stream)
{
	(void)stream;
	return 0;
}

void perror(const char *s)
{
	int e = (int)flexio_dev_get_errno(mlx5_dpa_thread_ctx());

	if (s && *s)
		(void)printf("%s: %s\n", s, strerror(e));
	else
		(void)printf("%s\n", strerror(e));
}
