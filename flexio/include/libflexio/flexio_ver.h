/*
 * libflexio host version API, as implemented by mlx5-dpa (flexio/ in the mlx5-dpa repository).
 * SPDX-License-Identifier: MIT OR Apache-2.0
 *
 * The host half of FlexIO's version API (the seed `dpa-development-flexio-sdk.txt`, "Version
 * API and Backward Compatibility"). A program may state the API version it was written for
 * before including flexio.h, and pass it to flexio_version_set at run time:
 *
 *     #include <libflexio/flexio_ver.h>
 *     #define FLEXIO_VER_USED FLEXIO_VER(24, 4, 0)
 *     #include <libflexio/flexio.h>
 *     ...
 *     flexio_version_set(FLEXIO_VER_USED);
 *
 * A version is encoded as the device headers encode theirs (major << 32 | minor << 16 |
 * sub-minor), which is also what mlx5_dpa::dpa::version compares.
 */
#ifndef _FLEXIO_VER_H_
#define _FLEXIO_VER_H_

/** A version: major (year), minor (month), sub-minor (always 0). */
#define FLEXIO_VER(major, minor, subminor) \
	((major) * 0x100000000ULL + (minor) * 0x10000ULL + (subminor))

/**
 * "The newest this library has": flexio.h replaces it with FLEXIO_CURRENT_VERSION (its value
 * is no version of its own).
 */
#define FLEXIO_VER_LATEST FLEXIO_VER(0xffff, 0xffff, 0xffff)

#endif /* _FLEXIO_VER_H_ */
