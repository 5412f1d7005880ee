/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* libflexio-dev/flexio_dev_debug.h: the simulator prints, on the default message stream. */
#include <stdint.h>

#include <libflexio-dev/flexio_dev.h>
#include <libflexio-dev/flexio_dev_debug.h>

static void post(const char *text)
{
	(void)flexio_dev_msg(FLEXIO_MSG_DEV_DEFAULT_STREAM_ID, FLEXIO_MSG_DEV_ALWAYS_PRINT, "%s",
			     text);
}

/* The last `len` characters of `s` (the low digits), `len` clamped to what fits. */
static const char *low_digits(const char *s, int len)
{
	int n = 0;

	while (s[n])
		n++;
	if (len < 0)
		len = 0;
	return len < n ? s + (n - len) : s;
}

void print_sim_str(const char *str, int len)
{
	char buf[MLX5_DPA_MSG_MAX_LEN];
	int n = 0;

	if (!str)
		return;
	while (n < len && n < (int)sizeof(buf) - 1 && str[n]) {
		buf[n] = str[n];
		n++;
	}
	buf[n] = '\0';
	post(buf);
}

void print_sim_hex(uint64_t val, int len)
{
	char buf[24];

	(void)mlx5_dpa_snprintf(buf, sizeof(buf), "%lx", val);
	post(low_digits(buf, len));
}

void print_sim_int(int val, int len)
{
	char buf[24];

	(void)mlx5_dpa_snprintf(buf, sizeof(buf), "%d", val);
	post(low_digits(buf, len));
}

void print_sim_putc(int val)
{
	char buf[2] = { (char)val, '\0' };

	post(buf);
}

void sim_trace(const char *text, uint64_t val, const char *func, int line)
{
	(void)flexio_dev_msg(FLEXIO_MSG_DEV_DEFAULT_STREAM_ID, FLEXIO_MSG_DEV_ALWAYS_PRINT,
			     "%s:%d %s = 0x%lx\n", func ? func : "?", line, text ? text : "", val);
}
