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
 * A program that states no version gets the newest (FLEXIO_DEV_CURRENT_VERSION), as NVIDIA's
 * 25.01 headers choose. flexio_dev.h refuses a version above FLEXIO_DEV_CURRENT_VERSION
 * (#error) and warns at FLEXIO_DEV_LAST_SUPPORTED_VERSION. What each version changes, and
 * where that is written, is the table in docs/flexio-c.md ("Device API versions"). The
 * encoding of a version is this project's (major << 32 | minor << 16 | sub-minor); only
 * comparisons matter.
 */
#ifndef MLX5_DPA_FLEXIO_DEV_VER_H
#define MLX5_DPA_FLEXIO_DEV_VER_H

/** A version: major (year), minor (month), sub-minor (always 0). */
#define FLEXIO_DEV_VER(major, minor, subminor) \
	((major) * 0x100000000ULL + (minor) * 0x10000ULL + (subminor))

/**
 * "The newest these headers have": a program may state it as its version, and flexio_dev.h
 * replaces it with FLEXIO_DEV_CURRENT_VERSION (its value is no version of its own).
 */
#define FLEXIO_DEV_VER_LATEST FLEXIO_DEV_VER(0xffff, 0xffff, 0xffff)

#endif /* MLX5_DPA_FLEXIO_DEV_VER_H */
