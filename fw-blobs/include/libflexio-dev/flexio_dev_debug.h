/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * FlexIO's simulator debug prints (libflexio-dev/flexio_dev_debug.h): print_sim_str / _hex /
 * _int / _putc and sim_trace, which NVIDIA's SDK writes to its simulator's log. Here the
 * model is the simulator, and its log is the default message stream: each call posts one
 * message there (as flexio_dev_print does, level ALWAYS_PRINT), so the same program prints
 * on a BlueField-3 too, and prints nothing when the host configured no stream.
 *
 *   print_sim_str(s, len)   the first `len` bytes of `s` (up to its NUL)
 *   print_sim_hex(v, len)   `v` in hexadecimal, at most `len` digits (the high ones dropped)
 *   print_sim_int(v, len)   `v` in decimal, at most `len` characters (the high digits dropped)
 *   print_sim_putc(c)       one character
 *   sim_trace(text, v, func, line)  "<func>:<line> <text> = 0x<v>\n"
 */
#ifndef MLX5_DPA_FLEXIO_DEV_DEBUG_H
#define MLX5_DPA_FLEXIO_DEV_DEBUG_H

#include <stdint.h>

void print_sim_str(const char *str, int len);
void print_sim_hex(uint64_t val, int len);
void print_sim_int(int val, int len);
void print_sim_putc(int val);
void sim_trace(const char *text, uint64_t val, const char *func, int line);

#define SIM_TRACE(text, val) sim_trace(text, (uint64_t)(val), __func__, __LINE__)
#define SIM_TRACEVAL(val) SIM_TRACE(#val, val)

#endif /* MLX5_DPA_FLEXIO_DEV_DEBUG_H */
