/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * FlexIO's tracer (libflexio-dev/flexio_dev_tracer.h): cheap binary trace records, formatted
 * on the host. A record names a format by number and carries up to six u64 arguments; the
 * host created the stream `tracer_id` as a tracer stream with its format templates (Rust:
 * `MsgStreamAttr::tracer_formats`) and prints each record as its template with the arguments
 * (printf integer conversions).
 *
 * Here every record is posted at once, as one SEND on the stream's queue (FlexIO's QP
 * transport), so flexio_dev_tracer_flush and flexio_dev_tracer_notify_host have nothing left
 * to do; they exist for programs that call them.
 */
#ifndef MLX5_DPA_FLEXIO_DEV_TRACER_H
#define MLX5_DPA_FLEXIO_DEV_TRACER_H

#include <stdint.h>

#include "flexio_dev.h"
#include "../mlx5_dpa_msg_stream.h"

/** One trace record, 64 bytes: the format's number and six arguments. */
struct flexio_tracer_msg {
	uint32_t format_id;
	uint32_t reserved[3];
	uint64_t arg0;
	uint64_t arg1;
	uint64_t arg2;
	uint64_t arg3;
	uint64_t arg4;
	uint64_t arg5;
} __attribute__((__packed__, aligned(8)));

_Static_assert(sizeof(struct flexio_tracer_msg) == 64, "a trace record is 64 bytes");

/** Posts a record (the arguments beyond `nargs` are 0); the results of flexio_dev_msg. */
static inline int mlx5_dpa_trace(uint8_t tracer_id, flexio_msg_dev_level level, int format_id,
				 uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4,
				 uint64_t a5)
{
	struct flexio_tracer_msg m = { (uint32_t)format_id, { 0, 0, 0 }, a0, a1, a2, a3, a4, a5 };

	return mlx5_dpa_msg_post_raw(tracer_id, level, &m, sizeof(m));
}

static inline void flexio_dev_trace_0(uint8_t tracer_id, flexio_msg_dev_level level, int format_id)
{
	(void)mlx5_dpa_trace(tracer_id, level, format_id, 0, 0, 0, 0, 0, 0);
}

static inline void flexio_dev_trace_1(uint8_t tracer_id, flexio_msg_dev_level level, int format_id,
				      uint64_t arg0)
{
	(void)mlx5_dpa_trace(tracer_id, level, format_id, arg0, 0, 0, 0, 0, 0);
}

static inline void flexio_dev_trace_2(uint8_t tracer_id, flexio_msg_dev_level level, int format_id,
				      uint64_t arg0, uint64_t arg1)
{
	(void)mlx5_dpa_trace(tracer_id, level, format_id, arg0, arg1, 0, 0, 0, 0);
}

static inline void flexio_dev_trace_3(uint8_t tracer_id, flexio_msg_dev_level level, int format_id,
				      uint64_t arg0, uint64_t arg1, uint64_t arg2)
{
	(void)mlx5_dpa_trace(tracer_id, level, format_id, arg0, arg1, arg2, 0, 0, 0);
}

static inline void flexio_dev_trace_4(uint8_t tracer_id, flexio_msg_dev_level level, int format_id,
				      uint64_t arg0, uint64_t arg1, uint64_t arg2, uint64_t arg3)
{
	(void)mlx5_dpa_trace(tracer_id, level, format_id, arg0, arg1, arg2, arg3, 0, 0);
}

static inline void flexio_dev_trace_5(uint8_t tracer_id, flexio_msg_dev_level level, int format_id,
				      uint64_t arg0, uint64_t arg1, uint64_t arg2, uint64_t arg3,
				      uint64_t arg4)
{
	(void)mlx5_dpa_trace(tracer_id, level, format_id, arg0, arg1, arg2, arg3, arg4, 0);
}

static inline void flexio_dev_trace_6(uint8_t tracer_id, flexio_msg_dev_level level, int format_id,
				      uint64_t arg0, uint64_t arg1, uint64_t arg2, uint64_t arg3,
				      uint64_t arg4, uint64_t arg5)
{
	(void)mlx5_dpa_trace(tracer_id, level, format_id, arg0, arg1, arg2, arg3, arg4, arg5);
}

/** Nothing is buffered on the device: returns at once. */
static inline void flexio_dev_tracer_flush(uint8_t tracer_id)
{
	(void)tracer_id;
}

/** Nothing is buffered on the device: returns at once. */
static inline void flexio_dev_tracer_notify_host(uint8_t tracer_id, uint32_t num_msg)
{
	(void)tracer_id;
	(void)num_msg;
}

#endif /* MLX5_DPA_FLEXIO_DEV_TRACER_H */
