/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * DOCA sync events from DPA code (DOCA DPA 2.6 `doca_dpa_dev_sync_event.h`; names and
 * signatures are DOCA's, this text is this project's). A handle comes from the host
 * (mlx5_dpa::doca::SyncEvent::dpa_handle, DOCA's doca_sync_event_export_to_dpa); 0 is no event.
 *
 * The counter lives in host memory and is reached through the context's window; every update
 * is written back before the call returns and every read sees the host's latest value (the
 * window fences of the DPA memory model are in the runtime). Adds from DPA threads are
 * atomic with respect to each other (an AMO lock in DPA memory).
 */
#ifndef DOCA_DPA_DEV_SYNC_EVENT_H_
#define DOCA_DPA_DEV_SYNC_EVENT_H_

#include <doca_dpa_dev.h>

#ifdef __cplusplus
extern "C" {
#endif

/** A sync event as DPA code names it. */
__dpa_global__ typedef uint64_t doca_dpa_dev_sync_event_t;
/** A remote peer's sync event, for RDMA signalling. */
__dpa_global__ typedef uint64_t doca_dpa_dev_sync_event_remote_net_t;

/** Reads the event's counter into *value. */
DOCA_EXPERIMENTAL void doca_dpa_dev_sync_event_get(doca_dpa_dev_sync_event_t dpa_dev_se_handle, uint64_t *value);

/** Adds `value` to the counter. */
DOCA_EXPERIMENTAL void doca_dpa_dev_sync_event_update_add(doca_dpa_dev_sync_event_t dpa_dev_se_handle, uint64_t value);

/** Sets the counter to `value`. */
DOCA_EXPERIMENTAL void doca_dpa_dev_sync_event_update_set(doca_dpa_dev_sync_event_t dpa_dev_se_handle, uint64_t value);

/**
 * Returns once (counter & mask) > value. The wait spins; like any kernel it is bounded by the
 * kernel's maximum run time (the DPA watchdog), so wait only on what something is sure to set.
 */
DOCA_EXPERIMENTAL void doca_dpa_dev_sync_event_wait_gt(doca_dpa_dev_sync_event_t dpa_dev_se_handle, uint64_t value,
						       uint64_t mask);

/**
 * Posts, on async ops, a wait until the event's counter is greater than `value`: the attached
 * thread is activated by its completion once it holds (doca_dpa_dev_sync_event_post_wait_gt of
 * the seed, which allows values and counters in 0..=254). Later operations on the same async
 * ops wait behind it. Non-blocking. The NIC's WAIT-on-data work request (cap wait_on_data).
 */
DOCA_EXPERIMENTAL void doca_dpa_dev_sync_event_post_wait_gt(doca_dpa_dev_async_ops_t async_ops_handle,
							    doca_dpa_dev_sync_event_t wait_se_handle, uint64_t value);

/** As post_wait_gt, until the counter is not equal to `value`. */
DOCA_EXPERIMENTAL void doca_dpa_dev_sync_event_post_wait_ne(doca_dpa_dev_async_ops_t async_ops_handle,
							    doca_dpa_dev_sync_event_t wait_se_handle, uint64_t value);

#ifdef __cplusplus
}
#endif

#endif /* DOCA_DPA_DEV_SYNC_EVENT_H_ */
