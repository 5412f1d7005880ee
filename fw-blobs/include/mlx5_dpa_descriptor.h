/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * The driver's queue descriptors, as C: `CqDescriptor` (56 bytes) and `WqDescriptor`
 * (88 bytes) of src/queues/descriptor.rs. The host serialises them little-endian with
 * `to_bytes()` into DPA memory; a DPA program reads them in place. Addresses in them are
 * the ones the DPA uses: DPA addresses for rings and doorbell records in DPA memory.
 * The host must not touch a queue once it handed the descriptor over.
 *
 * Fields the DPA does not use (uar_*, arm_sn, ring_umem_*) are kept so the layout is the
 * driver's byte for byte. Keep this file and descriptor.rs in step: the static asserts below
 * pin every offset.
 */
#ifndef MLX5_DPA_DESCRIPTOR_H
#define MLX5_DPA_DESCRIPTOR_H

#include <stddef.h>
#include <stdint.h>

/**
 * A completion queue (driver `CqDescriptor`), 56 bytes.
 *
 * | offset | field |
 * |---|---|
 * | 0  | `cqn` |
 * | 4  | `log_cqe_cnt` (ring has 1 << log_cqe_cnt entries) |
 * | 8  | `cqe_size` (64 or 128; the 64-byte CQE is the last 64 bytes of each entry) |
 * | 12 | `consumer_index` (where polling resumes) |
 * | 16 | `cq_ring_addr` |
 * | 24 | `cq_dbr_addr` (consumer index record: BE32, 24 bits, at +0) |
 * | 32 | `uar_page_id` |
 * | 36 | reserved |
 * | 40 | `uar_arm_addr` (host address; unused on the DPA, which arms through the outbox) |
 * | 48 | `arm_sn` |
 * | 52 | reserved |
 */
struct mlx5_dpa_cq_descriptor {
	uint32_t cqn;
	uint32_t log_cqe_cnt;
	uint32_t cqe_size;
	uint32_t consumer_index;
	uint64_t cq_ring_addr;
	uint64_t cq_dbr_addr;
	uint32_t uar_page_id;
	uint32_t reserved;
	uint64_t uar_arm_addr;
	uint32_t arm_sn;
	uint32_t reserved2;
};

/** `WqDescriptor.kind` values (driver `wq_kind`). */
#define MLX5_DPA_WQ_KIND_ETH_SQ 1
#define MLX5_DPA_WQ_KIND_RQ 2
#define MLX5_DPA_WQ_KIND_RC_QP 3

/**
 * A work queue (driver `WqDescriptor`), 88 bytes.
 *
 * | offset | field |
 * |---|---|
 * | 0  | `kind` (MLX5_DPA_WQ_KIND_*) |
 * | 4  | `num`: SQN, RQN or QPN (goes in qpn_ds and in SXD_DB) |
 * | 8  | `sq_ring_addr` (0 without a send ring) |
 * | 16 | `log_sq_wqebb_cnt` |
 * | 20 | `sq_producer_index` (next WQEBB counter, 16 bits significant) |
 * | 24 | `rq_ring_addr` (0 without a receive ring) |
 * | 32 | `log_rq_wqe_cnt` |
 * | 36 | `rq_wqe_stride` (bytes) |
 * | 40 | `rq_producer_index` (16 bits significant) |
 * | 44 | `uar_page_id` |
 * | 48 | `dbr_addr` (doorbell record: receive counter BE32 at +0, send counter BE32 at +4) |
 * | 56 | `uar_doorbell_addr` (host address; unused on the DPA, which rings SXD_DB) |
 * | 64 | `send_cq` |
 * | 68 | `recv_cq` |
 * | 72 | `ring_umem_id` |
 * | 76 | reserved |
 * | 80 | `ring_umem_offset` |
 */
struct mlx5_dpa_wq_descriptor {
	uint32_t kind;
	uint32_t num;
	uint64_t sq_ring_addr;
	uint32_t log_sq_wqebb_cnt;
	uint32_t sq_producer_index;
	uint64_t rq_ring_addr;
	uint32_t log_rq_wqe_cnt;
	uint32_t rq_wqe_stride;
	uint32_t rq_producer_index;
	uint32_t uar_page_id;
	uint64_t dbr_addr;
	uint64_t uar_doorbell_addr;
	uint32_t send_cq;
	uint32_t recv_cq;
	uint32_t ring_umem_id;
	uint32_t reserved;
	uint64_t ring_umem_offset;
};

/** Doorbell record offsets inside a WQ's record. */
#define MLX5_DPA_RCV_DBR 0
#define MLX5_DPA_SND_DBR 4

_Static_assert(sizeof(struct mlx5_dpa_cq_descriptor) == 56, "CqDescriptor is 56 bytes");
_Static_assert(offsetof(struct mlx5_dpa_cq_descriptor, consumer_index) == 12, "cq ci @12");
_Static_assert(offsetof(struct mlx5_dpa_cq_descriptor, cq_ring_addr) == 16, "cq ring @16");
_Static_assert(offsetof(struct mlx5_dpa_cq_descriptor, cq_dbr_addr) == 24, "cq dbr @24");
_Static_assert(offsetof(struct mlx5_dpa_cq_descriptor, uar_page_id) == 32, "cq uar @32");
_Static_assert(offsetof(struct mlx5_dpa_cq_descriptor, uar_arm_addr) == 40, "cq arm @40");
_Static_assert(offsetof(struct mlx5_dpa_cq_descriptor, arm_sn) == 48, "cq arm_sn @48");

_Static_assert(sizeof(struct mlx5_dpa_wq_descriptor) == 88, "WqDescriptor is 88 bytes");
_Static_assert(offsetof(struct mlx5_dpa_wq_descriptor, num) == 4, "wq num @4");
_Static_assert(offsetof(struct mlx5_dpa_wq_descriptor, sq_ring_addr) == 8, "sq ring @8");
_Static_assert(offsetof(struct mlx5_dpa_wq_descriptor, log_sq_wqebb_cnt) == 16, "sq log @16");
_Static_assert(offsetof(struct mlx5_dpa_wq_descriptor, sq_producer_index) == 20, "sq pi @20");
_Static_assert(offsetof(struct mlx5_dpa_wq_descriptor, rq_ring_addr) == 24, "rq ring @24");
_Static_assert(offsetof(struct mlx5_dpa_wq_descriptor, log_rq_wqe_cnt) == 32, "rq log @32");
_Static_assert(offsetof(struct mlx5_dpa_wq_descriptor, rq_wqe_stride) == 36, "rq stride @36");
_Static_assert(offsetof(struct mlx5_dpa_wq_descriptor, rq_producer_index) == 40, "rq pi @40");
_Static_assert(offsetof(struct mlx5_dpa_wq_descriptor, uar_page_id) == 44, "wq uar @44");
_Static_assert(offsetof(struct mlx5_dpa_wq_descriptor, dbr_addr) == 48, "wq dbr @48");
_Static_assert(offsetof(struct mlx5_dpa_wq_descriptor, uar_doorbell_addr) == 56, "wq db @56");
_Static_assert(offsetof(struct mlx5_dpa_wq_descriptor, send_cq) == 64, "send_cq @64");
_Static_assert(offsetof(struct mlx5_dpa_wq_descriptor, recv_cq) == 68, "recv_cq @68");
_Static_assert(offsetof(struct mlx5_dpa_wq_descriptor, ring_umem_id) == 72, "umem id @72");
_Static_assert(offsetof(struct mlx5_dpa_wq_descriptor, ring_umem_offset) == 80, "umem off @80");

#endif /* MLX5_DPA_DESCRIPTOR_H */
