/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * The C string functions FlexIO's device libc offers (libflexio-libc/string.h): the ISO C
 * <string.h> set, implemented in runtime/string.c. strerror knows the errno values the
 * runtime sets (flexio_dev_err.h) and calls the rest "Unknown error".
 */
#ifndef MLX5_DPA_LIBFLEXIO_LIBC_STRING_H
#define MLX5_DPA_LIBFLEXIO_LIBC_STRING_H

#include <stddef.h>

void *memchr(const void *s, int c, size_t n);
int memcmp(const void *a, const void *b, size_t n);
void *memcpy(void *__restrict dst, const void *__restrict src, size_t n);
void *memmove(void *dst, const void *src, size_t n);
void *memset(void *dst, int c, size_t n);
char *strcat(char *__restrict dst, const char *__restrict src);
char *strchr(const char *s, int c);
int strcmp(const char *a, const char *b);
int strcoll(const char *a, const char *b);
char *strcpy(char *__restrict dst, const char *__restrict src);
size_t strcspn(const char *s, const char *reject);
char *strerror(int errnum);
size_t strlen(const char *s);
char *strncat(char *__restrict dst, const char *__restrict src, size_t n);
int strncmp(const char *a, const char *b, size_t n);
char *strncpy(char *__restrict dst, const char *__restrict src, size_t n);
char *strpbrk(const char *s, const char *accept);
char *strrchr(const char *s, int c);
size_t strspn(const char *s, const char *accept);
char *strstr(const char *haystack, const char *needle);
size_t strxfrm(char *__restrict dst, const char *__restrict src, size_t n);

/* Not in ISO C, offered as well. */
size_t mlx5_dpa_strnlen(const char *s, size_t max);

#endif /* MLX5_DPA_LIBFLEXIO_LIBC_STRING_H */
