/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * What DOCA DPA's host and device sides share (DOCA DPA 2.6 `doca_dpa_common.h`; the names,
 * values and signatures are DOCA's public API, this text is this project's): the device log
 * levels, and the annotations DPACC reads.
 */
#ifndef DOCA_DPA_COMMON_H_
#define DOCA_DPA_COMMON_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * DPACC's annotations. DOCA code puts __dpa_global__ on kernels, and also on the typedefs and
 * structs their arguments use, so it must be valid in all three places: here it expands to
 * nothing. Kernels are ordinary global functions, which the linker keeps, and the host finds
 * them by symbol name. (libflexio-dev/flexio_dev.h gives FlexIO code a function-only
 * definition when it is included first.)
 */
#ifndef __dpa_global__
#define __dpa_global__
#endif
#ifndef __dpa_rpc__
#define __dpa_rpc__
#endif
#ifndef DOCA_EXPERIMENTAL
#define DOCA_EXPERIMENTAL
#endif
#ifndef DOCA_STABLE
#define DOCA_STABLE
#endif

/** Device log levels (doca_dpa_dev_log): a message passes when its level is at most the
 * context's level (doca_dpa_set_log_level on the host). */
typedef enum doca_dpa_dev_log_level {
	DOCA_DPA_DEV_LOG_LEVEL_DISABLE = 10,
	DOCA_DPA_DEV_LOG_LEVEL_CRIT = 20,
	DOCA_DPA_DEV_LOG_LEVEL_ERROR = 30,
	DOCA_DPA_DEV_LOG_LEVEL_WARNING = 40,
	DOCA_DPA_DEV_LOG_LEVEL_INFO = 50,
	DOCA_DPA_DEV_LOG_LEVEL_DEBUG = 60,
} doca_dpa_dev_log_level_t;

#ifdef __cplusplus
}
#endif

#endif /* DOCA_DPA_COMMON_H_ */
