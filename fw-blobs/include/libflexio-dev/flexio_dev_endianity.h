/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * Byte-order helpers for DPA programs (mlx5-dpa device runtime).
 *
 * The DPA is little-endian RV64. Everything the NIC reads or writes in rings (CQEs, WQE
 * segments, doorbell records) is big-endian (PRM), so values cross with the cpu_to_be* /
 * be*_to_cpu helpers below. Names follow FlexIO's flexio_dev_endianity.h; they are
 * expressions (usable in constant initialisers), built on GCC's bswap builtins, which the
 * compiler lowers to Zbb `rev8` (+ shift) with -march=..._zbb.
 */
#ifndef MLX5_DPA_FLEXIO_DEV_ENDIANITY_H
#define MLX5_DPA_FLEXIO_DEV_ENDIANITY_H

#include <stdint.h>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the DPA is little-endian; this runtime supports nothing else"
#endif

/** CPU (little-endian) to big-endian. */
#define cpu_to_be16(v) ((uint16_t)__builtin_bswap16((uint16_t)(v)))
#define cpu_to_be32(v) ((uint32_t)__builtin_bswap32((uint32_t)(v)))
#define cpu_to_be64(v) ((uint64_t)__builtin_bswap64((uint64_t)(v)))
/** Big-endian to CPU. */
#define be16_to_cpu(v) ((uint16_t)__builtin_bswap16((uint16_t)(v)))
#define be32_to_cpu(v) ((uint32_t)__builtin_bswap32((uint32_t)(v)))
#define be64_to_cpu(v) ((uint64_t)__builtin_bswap64((uint64_t)(v)))
/** Little-endian conversions are the identity on the DPA. */
#define cpu_to_le16(v) ((uint16_t)(v))
#define cpu_to_le32(v) ((uint32_t)(v))
#define cpu_to_le64(v) ((uint64_t)(v))
#define le16_to_cpu(v) ((uint16_t)(v))
#define le32_to_cpu(v) ((uint32_t)(v))
#define le64_to_cpu(v) ((uint64_t)(v))

#endif /* MLX5_DPA_FLEXIO_DEV_ENDIANITY_H */
