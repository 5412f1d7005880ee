/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * The device half of FlexIO's version API (seed `dpa-development-flexio-sdk.txt`, "Version
 * API and Backward Compatibility"). A program states the API version it was written for
 * before including flexio_dev.h:
 *
 *     #include <libflexio-dev/flexio_dev_ver.h>
 *     #define FLEXIO_DEV_VER_USED FLEXIO_DEV_VER(24, 4, 0)
 *     #include <libflexio-dev/flexio_dev.h>
 *
 * flexio_dev.h then refuses a version below FLEXIO_DEV_LAST_SUPPORTED_VERSION or above
 * FLEXIO_DEV_CURRENT_VERSION (#error) and warns at the last supported one. The encoding of a
 * version is this project's (major << 32 | minor << 16 | sub-minor); only comparisons matter.
 */
#ifndef MLX5_DPA_FLEXIO_DEV_VER_H
#define MLX5_DPA_FLEXIO_DEV_VER_H

/** A version: major (year), minor (month), sub-minor (always 0). */
#define FLEXIO_DEV_VER(major, minor, subminor) \
	((major) * 0x100000000ULL + (minor) * 0x10000ULL + (subminor))

/** The newest version these headers provide. */
#define FLEXIO_DEV_VER_LATEST FLEXIO_DEV_VER(24, 10, 0)

#endif /* MLX5_DPA_FLEXIO_DEV_VER_H */
