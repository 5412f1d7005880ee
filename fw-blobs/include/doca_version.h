/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * Which DOCA release device code is written for (the macro names are those of DOCA's public
 * doca_version.h; this text is this project's). A DOCA installation fixes them; with these
 * headers a program's build states them, each on its own, and what is not stated is the
 * newest release the headers speak, 2.9:
 *
 *     mlx5-dpa cc -D DOCA_VERSION_MAJOR=2 -D DOCA_VERSION_MINOR=6 ...   DOCA 2.6 device code
 *
 * doca_dpa_dev.h reads them to choose the device API: 2.6's, 2.7's (also 2.8's) or 2.9's
 * (docs/doca-dpa.md, "Device API versions"). A DOCA installation's own doca_version.h, when a
 * build includes it first, counts the same (it has the same include guard).
 */
#ifndef DOCA_VERSION_H_
#define DOCA_VERSION_H_

#ifndef DOCA_VERSION_MAJOR
#define DOCA_VERSION_MAJOR 2
#endif
#ifndef DOCA_VERSION_MINOR
#define DOCA_VERSION_MINOR 9
#endif
#ifndef DOCA_VERSION_PATCH
#define DOCA_VERSION_PATCH 0
#endif

/*
 * A version as one number, exact or for comparison (the patch weighed by 1000, as DOCA's
 * official versions are). Without DOCA's size_t cast, so that #if can use them too.
 */
#define DOCA_VERSION_CALC_EXACT(major, minor, patch) (((major) << 24) | ((minor) << 16) | (patch))
#define DOCA_VERSION_EXACT DOCA_VERSION_CALC_EXACT(DOCA_VERSION_MAJOR, DOCA_VERSION_MINOR, DOCA_VERSION_PATCH)
#define DOCA_VERSION_CALC(major, minor, patch) (((major) << 24) | ((minor) << 16) | ((patch) * 1000))
#define DOCA_VERSION_OFFICIAL DOCA_VERSION_CALC(DOCA_VERSION_MAJOR, DOCA_VERSION_MINOR, DOCA_VERSION_PATCH)
/** Whether the version stated is exactly major.minor.patch. */
#define DOCA_VERSION_EQ_CURRENT(major, minor, patch) (DOCA_VERSION_CALC(major, minor, patch) == DOCA_VERSION_OFFICIAL)
/** Whether major.minor.patch is at most the version stated. */
#define DOCA_VERSION_LTE_CURRENT(major, minor, patch) (DOCA_VERSION_CALC(major, minor, patch) <= DOCA_VERSION_OFFICIAL)

#define MLX5_DPA_DOCA_STR_(x) #x
#define MLX5_DPA_DOCA_STR(x) MLX5_DPA_DOCA_STR_(x)
/** The version stated, as text ("2.9.0"). */
#ifndef DOCA_VERSION_STRING
#define DOCA_VERSION_STRING                                                       \
	MLX5_DPA_DOCA_STR(DOCA_VERSION_MAJOR)                                     \
	"." MLX5_DPA_DOCA_STR(DOCA_VERSION_MINOR) "." MLX5_DPA_DOCA_STR(DOCA_VERSION_PATCH)
#endif

/** The version the program was built for. */
static inline const char *doca_version(void)
{
	return DOCA_VERSION_STRING;
}

/** The version of the DOCA the program runs on: here the runtime's device API, "2.9.0". */
const char *doca_version_runtime(void);

#endif /* DOCA_VERSION_H_ */
