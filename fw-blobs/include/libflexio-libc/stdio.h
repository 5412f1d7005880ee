/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * The formatted output of FlexIO's device libc (libflexio-libc/stdio.h), over this runtime's
 * formatter (mlx5_dpa_vsnprintf: the conversions listed in flexio_dev.h) and its message
 * streams. The DPA has no files: `stdout` and `stderr` name the default message stream
 * (printf, puts and fprintf(stdout / stderr, ...) post there at level ALWAYS_PRINT, one
 * message per call, like flexio_dev_msg), and writing returns the byte count, or a negative
 * value when no stream is configured. sprintf / snprintf / vsprintf / vsnprintf only format.
 * There is no allocator on the device, so asprintf and vasprintf fail (-1, *strp = NULL).
 */
#ifndef MLX5_DPA_LIBFLEXIO_LIBC_STDIO_H
#define MLX5_DPA_LIBFLEXIO_LIBC_STDIO_H

#include <stdarg.h>
#include <stddef.h>

#ifndef EOF
#define EOF (-1)
#endif

/** A stream: only `stdout` and `stderr` exist. */
typedef struct mlx5_dpa_file FILE;

extern FILE *const mlx5_dpa_stdout;
extern FILE *const mlx5_dpa_stderr;
#define stdout mlx5_dpa_stdout
#define stderr mlx5_dpa_stderr

#define __MLX5_DPA_PRINTF(f, a) __attribute__((format(printf, f, a)))

int printf(const char *fmt, ...) __MLX5_DPA_PRINTF(1, 2);
int vprintf(const char *fmt, va_list ap) __MLX5_DPA_PRINTF(1, 0);
int fprintf(FILE *stream, const char *fmt, ...) __MLX5_DPA_PRINTF(2, 3);
int vfprintf(FILE *stream, const char *fmt, va_list ap) __MLX5_DPA_PRINTF(2, 0);
int sprintf(char *s, const char *fmt, ...) __MLX5_DPA_PRINTF(2, 3);
int snprintf(char *s, size_t n, const char *fmt, ...) __MLX5_DPA_PRINTF(3, 4);
int vsprintf(char *s, const char *fmt, va_list ap) __MLX5_DPA_PRINTF(2, 0);
int vsnprintf(char *s, size_t n, const char *fmt, va_list ap) __MLX5_DPA_PRINTF(3, 0);
int asprintf(char **strp, const char *fmt, ...) __MLX5_DPA_PRINTF(2, 3);
int vasprintf(char **strp, const char *fmt, va_list ap) __MLX5_DPA_PRINTF(2, 0);
int fputs(const char *s, FILE *stream);
int puts(const char *s);
void clearerr(FILE *stream);
int feof(FILE *stream);
int ferror(FILE *stream);
int fflush(FILE *stream);
void perror(const char *s);

#endif /* MLX5_DPA_LIBFLEXIO_LIBC_STDIO_H */
