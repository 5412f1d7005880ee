/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * The host <-> device protocol of FlexIO's packet-processor sample (the layout of its public
 * `flexio_packet_processor_com.h`, written here from those facts): what the host tells the
 * event handler about its queues. Packed, 8-byte aligned: 120 bytes.
 */
#ifndef PP_SAMPLE_H
#define PP_SAMPLE_H

#include <stdint.h>

#include <libflexio-dev/flexio_dev.h>

#define LOG_CQ_DEPTH 7
#define LOG_RQ_DEPTH 7
#define LOG_SQ_DEPTH 7
#define LOG_WQD_CHUNK_BSIZE 11

struct app_transfer_cq {
	uint32_t cq_num;
	uint32_t log_cq_depth;
	flexio_uintptr_t cq_ring_daddr;
	flexio_uintptr_t cq_dbr_daddr;
} __attribute__((__packed__, aligned(8)));

struct app_transfer_wq {
	uint32_t wq_num;
	uint32_t wqd_mkey_id;
	flexio_uintptr_t wq_ring_daddr;
	flexio_uintptr_t wq_dbr_daddr;
	flexio_uintptr_t wqd_daddr;
} __attribute__((__packed__, aligned(8)));

struct host2dev_packet_processor_data {
	struct app_transfer_cq rq_cq_transf;
	struct app_transfer_wq rq_transf;
	struct app_transfer_cq sq_cq_transf;
	struct app_transfer_wq sq_transf;
	uint8_t not_first_run;
} __attribute__((__packed__, aligned(8)));

_Static_assert(sizeof(struct app_transfer_cq) == 24, "app_transfer_cq is 24 bytes");
_Static_assert(sizeof(struct app_transfer_wq) == 32, "app_transfer_wq is 32 bytes");
_Static_assert(sizeof(struct host2dev_packet_processor_data) == 120, "h2d is 120 bytes");
_Static_assert(__builtin_offsetof(struct host2dev_packet_processor_data, not_first_run) == 112,
	       "not_first_run @112");

#endif
