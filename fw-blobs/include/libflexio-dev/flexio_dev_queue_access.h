/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * Queue access for DPA programs (FlexIO names): CQE getters, send WQE segment setters,
 * receive WQE access, doorbell records and outbox doorbells. Plus a few mlx5_dpa_* helpers
 * (not FlexIO API) for the descriptors in mlx5_dpa_descriptor.h.
 *
 * Memory rules: CQEs, rings and doorbell records are shared with the NIC, so every access
 * here is volatile; a WQE slot belongs to the program from the moment it reaps the slot's
 * completion (or the slot was never used) until it rings the doorbell for it.
 */
#ifndef MLX5_DPA_FLEXIO_DEV_QUEUE_ACCESS_H
#define MLX5_DPA_FLEXIO_DEV_QUEUE_ACCESS_H

#include <stddef.h>
#include <stdint.h>

#include "flexio_dev.h"
#include "flexio_dev_endianity.h"
#include "flexio_dev_queue_types.h"
#include "../mlx5_dpa_descriptor.h"

/* ------------------------------------------------------------------------------------- */
/* Outbox doorbells                                                                       */
/* ------------------------------------------------------------------------------------- */

/*
 * Each doorbell call exists in two forms (flexio_dev.h, MLX5_DPA_FLEXIO_DEV_FORMS): before
 * 24.10 `f(dtctx, ...)` returning flexio_dev_status_t, from 24.10 `f(...)` returning nothing.
 * Both store to the running thread's outbox (the context is the thread's `tp` either way);
 * mlx5_dpa_flexio_dev_<call>_<n> is the form with n arguments.
 */
#define MLX5_DPA_FLEXIO_DEV_DOORBELL(f, n_old, n_new, params, reg, value)                 \
	static inline flexio_dev_status_t mlx5_dpa_flexio_dev_##f##_##n_old(                   \
		struct flexio_dev_thread_ctx *dtctx, MLX5_DPA_UNPAREN params)                     \
	{                                                                                       \
		mlx5_dpa_outbox_write(dtctx->outbox_base, reg, value);                                \
		return FLEXIO_DEV_STATUS_SUCCESS;                                               \
	}                                                                                       \
	static inline void mlx5_dpa_flexio_dev_##f##_##n_new(MLX5_DPA_UNPAREN params)            \
	{                                                                                       \
		mlx5_dpa_outbox_write(mlx5_dpa_thread_ctx()->outbox_base, reg, value);                     \
	}

/**
 * flexio_dev_qp_sq_ring_db([dtctx,] pi, qnum): rings a QP's or SQ's send doorbell,
 * SXD_DB = pi[15:0] | qnum << 32 on the thread's outbox. `pi` is the producer counter after
 * the new WQEs (the count of WQEBBs ever posted). Orders all earlier stores (WQEs, doorbell
 * record) before the doorbell.
 */
MLX5_DPA_FLEXIO_DEV_DOORBELL(qp_sq_ring_db, 3, 2, (uint16_t pi, uint32_t qnum), MLX5_DPA_OUTBOX_SXD_DB,
			     OUTBOX_V_SXD_DB(pi, qnum))
#define flexio_dev_qp_sq_ring_db(...) \
	MLX5_DPA_FLEXIO_DEV_CALL(mlx5_dpa_flexio_dev_qp_sq_ring_db, 3, 2, __VA_ARGS__)

/**
 * flexio_dev_zcqe_gen([dtctx,] cqn), also named flexio_dev_msix_send: asks the NIC for a zero
 * CQE on CQ `cqn`, which activates what the CQ is bound to; for an MSI-X-emulated CQ, an
 * interrupt to the host (RXT_DB). The model has no emulated functions: there the store faults
 * with the outbox-register device code.
 */
MLX5_DPA_FLEXIO_DEV_DOORBELL(zcqe_gen, 2, 1, (uint32_t cqn), MLX5_DPA_OUTBOX_RXT_DB,
			     OUTBOX_V_RXT_DB(cqn))
#define flexio_dev_zcqe_gen(...) \
	MLX5_DPA_FLEXIO_DEV_CALL(mlx5_dpa_flexio_dev_zcqe_gen, 2, 1, __VA_ARGS__)
#define flexio_dev_msix_send(...) \
	MLX5_DPA_FLEXIO_DEV_CALL(mlx5_dpa_flexio_dev_zcqe_gen, 2, 1, __VA_ARGS__)

/**
 * flexio_dev_db_ctx_arm([dtctx,] qnum, emu_ctx_id): re-arms the emulation doorbell context
 * `emu_ctx_id` for queue `qnum` (EMU_CAP). Like flexio_dev_msix_send, an emulation feature the
 * model does not have.
 */
MLX5_DPA_FLEXIO_DEV_DOORBELL(db_ctx_arm, 3, 2, (uint32_t qnum, uint32_t emu_ctx_id),
			     MLX5_DPA_OUTBOX_EMU_CAP, OUTBOX_V_EMU_CAP(qnum, emu_ctx_id))
#define flexio_dev_db_ctx_arm(...) \
	MLX5_DPA_FLEXIO_DEV_CALL(mlx5_dpa_flexio_dev_db_ctx_arm, 3, 2, __VA_ARGS__)

/**
 * flexio_dev_db_ctx_force_trigger([dtctx,] cqn, emu_ctx_id): triggers the emulation doorbell
 * context `emu_ctx_id` on CQ `cqn` now (EMU_CAP_TRIGGER).
 */
MLX5_DPA_FLEXIO_DEV_DOORBELL(db_ctx_force_trigger, 3, 2, (uint32_t cqn, uint32_t emu_ctx_id),
			     MLX5_DPA_OUTBOX_EMU_CAP_TRIGGER, OUTBOX_V_EMU_CAP(cqn, emu_ctx_id))
#define flexio_dev_db_ctx_force_trigger(...) \
	MLX5_DPA_FLEXIO_DEV_CALL(mlx5_dpa_flexio_dev_db_ctx_force_trigger, 3, 2, __VA_ARGS__)

/** What the congestion-control engine does after a CC doorbell. */
enum flexio_dev_cc_db_next_act {
	CC_DB_NEXT_ACT_SINGLE = 0x0,
	CC_DB_NEXT_ACT_MULTIPLE = 0x1,
	CC_DB_NEXT_ACT_FW = 0x2,
};
#if MLX5_DPA_FLEXIO_DEV_FORMS != 2
/** 24.01's name of the enum. */
typedef enum flexio_dev_cc_db_next_act flexio_dev_cc_db_next_act_t;
#endif

/**
 * flexio_dev_cc_ring_db([dtctx,] ccq_id, rate, rtt_req, next_act): rings the
 * congestion-control doorbell of CC queue `ccq_id`: the new rate (ccq_res), an RTT measurement
 * request, the next action (CC_DB). Programmable congestion control is not in the model:
 * there the store faults with the outbox-register device code.
 */
MLX5_DPA_FLEXIO_DEV_DOORBELL(cc_ring_db, 5, 4,
			     (uint16_t ccq_id, uint32_t rate, uint32_t rtt_req,
			      enum flexio_dev_cc_db_next_act next_act),
			     MLX5_DPA_OUTBOX_CC_DB, OUTBOX_V_CC_DB(rate, ccq_id, next_act, rtt_req))
#define flexio_dev_cc_ring_db(...) \
	MLX5_DPA_FLEXIO_DEV_CALL(mlx5_dpa_flexio_dev_cc_ring_db, 5, 4, __VA_ARGS__)

/**
 * flexio_dev_cq_arm([dtctx,] ci, qnum): arms CQ `qnum` and tells the NIC its consumer index
 * `ci` (CQ_DB = qnum | ci << 32): the next CQE on it raises the event that starts the thread
 * bound to the CQ. If CQEs are already waiting past `ci`, the event follows at once.
 */
MLX5_DPA_FLEXIO_DEV_DOORBELL(cq_arm, 3, 2, (uint32_t ci, uint32_t qnum), MLX5_DPA_OUTBOX_CQ_DB,
			     OUTBOX_V_CQ_DB(qnum, ci))
#define flexio_dev_cq_arm(...) \
	MLX5_DPA_FLEXIO_DEV_CALL(mlx5_dpa_flexio_dev_cq_arm, 3, 2, __VA_ARGS__)

/**
 * flexio_dev_eq_update_ci([dtctx,] ci, qnum): updates EQ `qnum`'s consumer index without
 * re-arming it (EQ_DB_NO_REARM).
 */
MLX5_DPA_FLEXIO_DEV_DOORBELL(eq_update_ci, 3, 2, (uint32_t ci, uint32_t qnum),
			     MLX5_DPA_OUTBOX_EQ_DB_NO_REARM, MLX5_DPA_OUTBOX_V_EQ_DB(qnum, ci))
#define flexio_dev_eq_update_ci(...) \
	MLX5_DPA_FLEXIO_DEV_CALL(mlx5_dpa_flexio_dev_eq_update_ci, 3, 2, __VA_ARGS__)

/* ------------------------------------------------------------------------------------- */
/* CQE getters                                                                            */
/* ------------------------------------------------------------------------------------- */

/** Owner bit (op_own bit 0). */
/** The CQ number of a completion EQE (low 24 bits of event_data.cqn). */
static inline uint32_t flexio_dev_eqe_get_cqn(struct flexio_dev_eqe *eqe)
{
	return be32_to_cpu(*(volatile __be32 *)&eqe->event_data.cqn) & MLX5_DPA_MASK24;
}

/** An EQE's owner bit. */
static inline uint8_t flexio_dev_eqe_get_owner(struct flexio_dev_eqe *eqe)
{
	return *(volatile uint8_t *)&eqe->owner & 0x1;
}

static inline uint8_t flexio_dev_cqe_get_owner(struct flexio_dev_cqe64 *cqe)
{
	return *(volatile uint8_t *)&cqe->op_own & 0x1;
}

/** Opcode (op_own bits 7:4): MLX5_CQE_*. */
static inline uint8_t flexio_dev_cqe_get_opcode(struct flexio_dev_cqe64 *cqe)
{
	return *(volatile uint8_t *)&cqe->op_own >> 4;
}

/** Bytes received (responder) or the message length (requester). */
static inline uint32_t flexio_dev_cqe_get_byte_cnt(struct flexio_dev_cqe64 *cqe)
{
	return be32_to_cpu(*(volatile __be32 *)&cqe->byte_cnt);
}

/** Counter of the WQE this CQE completes (receive: RQ WQE index; send: WQEBB counter). */
static inline uint16_t flexio_dev_cqe_get_wqe_counter(struct flexio_dev_cqe64 *cqe)
{
	return be16_to_cpu(*(volatile __be16 *)&cqe->wqe_counter);
}

/** QP / SQ / RQ number (bits 23:0 of the word at 0x38). */
static inline uint32_t flexio_dev_cqe_get_qpn(struct flexio_dev_cqe64 *cqe)
{
	return be32_to_cpu(*(volatile __be32 *)&cqe->qpn) & MLX5_DPA_MASK24;
}

/**
 * The error word of an error CQE (MLX5_DPA_CQE_REQ_ERR / RESP_ERR): bits 7:0 syndrome
 * (MLX5_CQE_SYNDROME_*), bits 15:8 vendor syndrome.
 */
static inline uint32_t flexio_dev_cqe_get_err_synd(struct flexio_dev_cqe64 *cqe)
{
	return be32_to_cpu(*(volatile __be32 *)&cqe->err_syndrome);
}

/** User index (bits 23:0 of srqn_uidx). */
static inline uint32_t flexio_dev_cqe_get_user_index(struct flexio_dev_cqe64 *cqe)
{
	return be32_to_cpu(*(volatile __be32 *)&cqe->srqn_uidx) & MLX5_DPA_MASK24;
}

/** Checksum-ok bits. */
static inline uint8_t flexio_dev_cqe_get_csum_ok(struct flexio_dev_cqe64 *cqe)
{
	return *(volatile uint8_t *)&cqe->csum_ok;
}

/* ------------------------------------------------------------------------------------- */
/* Send WQE segments                                                                      */
/* ------------------------------------------------------------------------------------- */

/** Completion request modes (ctrl segment fm_ce_se bits 3:2). */
enum cq_ce_mode {
	MLX5_CTRL_SEG_CE_CQE_ON_CQE_ERROR = 0x0,
	MLX5_CTRL_SEG_CE_CQE_ON_FIRST_CQE_ERROR = 0x1,
	MLX5_CTRL_SEG_CE_CQE_ALWAYS = 0x2,
	MLX5_CTRL_SEG_CE_CQE_AND_EQE = 0x3,
};

/** fm_ce_se value asking for a CQE (MLX5_DPA_WQE_CTRL_CQ_UPDATE = CE_CQE_ALWAYS << 2). */
#define MLX5_DPA_WQE_CTRL_CQ_UPDATE 0x08

/** Send opcodes (ctrl segment bits 7:0; PRM "Send WQE opcodes"). */
enum {
	MLX5_CTRL_SEG_OPCODE_NOP = 0x0,
	MLX5_CTRL_SEG_OPCODE_SND_INV = 0x1,
	MLX5_CTRL_SEG_OPCODE_RDMA_WRITE = 0x8,
	MLX5_CTRL_SEG_OPCODE_RDMA_WRITE_WITH_IMMEDIATE = 0x9,
	MLX5_CTRL_SEG_OPCODE_SEND = 0xa,
	MLX5_CTRL_SEG_OPCODE_SEND_WITH_IMMEDIATE = 0xb,
	MLX5_CTRL_SEG_OPCODE_LSO = 0xe,
	MLX5_CTRL_SEG_OPCODE_WAIT = 0xf,
	MLX5_CTRL_SEG_OPCODE_RDMA_READ = 0x10,
	MLX5_CTRL_SEG_OPCODE_ATOMIC_COMPARE_AND_SWAP = 0x11,
	MLX5_CTRL_SEG_OPCODE_ATOMIC_FETCH_AND_ADD = 0x12,
	MLX5_CTRL_SEG_OPCODE_ATOMIC_MASKED_COMPARE_AND_SWAP = 0x14,
	MLX5_CTRL_SEG_OPCODE_ATOMIC_MASKED_FETCH_AND_ADD = 0x15,
	MLX5_CTRL_SEG_OPCODE_RECEIVE_EN = 0x16,
	MLX5_CTRL_SEG_OPCODE_SEND_EN = 0x17,
	MLX5_CTRL_SEG_OPCODE_SET_PSV = 0x20,
	MLX5_CTRL_SEG_OPCODE_GET_PSV = 0x21,
	MLX5_CTRL_SEG_OPCODE_CHECK_PSV = 0x22,
	MLX5_CTRL_SEG_OPCODE_DUMP = 0x23,
	MLX5_CTRL_SEG_OPCODE_UMR = 0x25,
	MLX5_CTRL_SEG_OPCODE_RGET_PSV = 0x26,
	MLX5_CTRL_SEG_OPCODE_RCHECK_PSV = 0x27,
	MLX5_CTRL_SEG_OPCODE_TAG_MATCHING = 0x28,
	MLX5_CTRL_SEG_OPCODE_ENHANCED_MPSW = 0x29,
	MLX5_CTRL_SEG_OPCODE_QOS_REMAP = 0x2a,
	MLX5_CTRL_SEG_OPCODE_FLOW_TABLE_ACCESS = 0x2c,
	MLX5_CTRL_SEG_OPCODE_ACCESS_ASO = 0x2d,
	MLX5_CTRL_SEG_OPCODE_MMO = 0x2f,
	MLX5_CTRL_SEG_OPCODE_LOAD_REMOTE_MICRO_APP = 0x30,
	MLX5_CTRL_SEG_OPCODE_STORE_REMOTE_MICRO_APP = 0x31,
	MLX5_CTRL_SEG_OPCODE_LOCAL_MMO = 0x32,
};

/** opmod of LOCAL_MMO WQEs (ctrl segment bits 31:24). */
enum {
	MLX5_CTRL_SEGMENT_OPC_MOD_LOCAL_MMO_TRANSPOSE = 0x0,
	MLX5_CTRL_SEGMENT_OPC_MOD_LOCAL_MMO_LOCAL_DMA = 0x1,
};

/** Send WQE shapes flexio_dev_swqe_seg_ctrl_set knows (FlexIO values; ds in brackets). */
typedef enum {
	FLEXIO_CTRL_SEG_SEND_EN = 0,                 /**< Ethernet SEND: ctrl+eth+data [3] */
	FLEXIO_CTRL_SEG_SEND_RC = 1,                 /**< RC SEND: ctrl+data [2] */
	FLEXIO_CTRL_SEG_LDMA = 2,                    /**< LOCAL_MMO local DMA [4] */
	FLEXIO_CTRL_SEG_RDMA_WRITE = 3,              /**< ctrl+raddr+data [3] */
	FLEXIO_CTRL_SEG_RDMA_READ = 4,               /**< ctrl+raddr+data [3] */
	FLEXIO_CTRL_SEG_ATOMIC_COMPARE_AND_SWAP = 5, /**< ctrl+raddr+atomic+data [4] */
	FLEXIO_CTRL_SEG_LSO = 6,                     /**< Ethernet LSO: ctrl+eth+... [4] */
	FLEXIO_CTRL_SEG_NOP = 7,                     /**< ctrl [1] */
	FLEXIO_CTRL_SEG_RDMA_WRITE_IMM = 8,          /**< ctrl+raddr+data [3] */
	FLEXIO_CTRL_SEG_TRANSPOSE = 9,               /**< LOCAL_MMO transpose [4] */
} flexio_ctrl_seg_t;

/**
 * Writes a control segment from raw fields (mlx5_dpa helper, not FlexIO API):
 * idx_opcode = opmod << 24 | wqe_index[15:0] << 8 | opcode, qpn_ds = qnum << 8 | ds,
 * byte 0xb = fm_ce_se (MLX5_DPA_WQE_CTRL_CQ_UPDATE for a CQE), general_id = imm.
 */
static inline void mlx5_dpa_swqe_ctrl_set(union flexio_dev_sqe_seg *swqe, uint8_t opmod,
					  uint8_t opcode, uint32_t wqe_index, uint32_t qnum,
					  uint8_t ds, uint8_t fm_ce_se, uint32_t imm)
{
	volatile struct flexio_dev_wqe_ctrl_seg *c = &swqe->ctrl;

	c->idx_opcode = cpu_to_be32(((uint32_t)opmod << 24) | ((wqe_index & 0xffff) << 8) | opcode);
	c->qpn_ds = cpu_to_be32(((qnum & MLX5_DPA_MASK24) << 8) | (ds & 0x3f));
	c->signature_fm_ce_se = cpu_to_be32(fm_ce_se);
	c->general_id = imm;
}

/**
 * Writes a control segment for the WQE at producer counter `sq_pi` of queue `sq_number`,
 * with completion mode `ce` (enum cq_ce_mode) and the opcode / segment count that
 * `ctrl_seg_type` implies. Returns FAILED for a shape this runtime does not know.
 */
static inline flexio_dev_status_t flexio_dev_swqe_seg_ctrl_set(union flexio_dev_sqe_seg *swqe,
							       uint32_t sq_pi, uint32_t sq_number,
							       uint32_t ce,
							       flexio_ctrl_seg_t ctrl_seg_type)
{
	uint8_t opcode;
	uint8_t opmod = 0;
	uint8_t ds;

	switch (ctrl_seg_type) {
	case FLEXIO_CTRL_SEG_SEND_EN:
		opcode = MLX5_CTRL_SEG_OPCODE_SEND;
		ds = 3;
		break;
	case FLEXIO_CTRL_SEG_LSO:
		opcode = MLX5_CTRL_SEG_OPCODE_LSO;
		ds = 4;
		break;
	case FLEXIO_CTRL_SEG_LDMA:
		opcode = MLX5_CTRL_SEG_OPCODE_LOCAL_MMO;
		opmod = MLX5_CTRL_SEGMENT_OPC_MOD_LOCAL_MMO_LOCAL_DMA;
		ds = 4;
		break;
	case FLEXIO_CTRL_SEG_TRANSPOSE:
		opcode = MLX5_CTRL_SEG_OPCODE_LOCAL_MMO;
		opmod = MLX5_CTRL_SEGMENT_OPC_MOD_LOCAL_MMO_TRANSPOSE;
		ds = 4;
		break;
	case FLEXIO_CTRL_SEG_SEND_RC:
		opcode = MLX5_CTRL_SEG_OPCODE_SEND;
		ds = 2;
		break;
	case FLEXIO_CTRL_SEG_RDMA_WRITE:
		opcode = MLX5_CTRL_SEG_OPCODE_RDMA_WRITE;
		ds = 3;
		break;
	case FLEXIO_CTRL_SEG_RDMA_WRITE_IMM:
		opcode = MLX5_CTRL_SEG_OPCODE_RDMA_WRITE_WITH_IMMEDIATE;
		ds = 3;
		break;
	case FLEXIO_CTRL_SEG_RDMA_READ:
		opcode = MLX5_CTRL_SEG_OPCODE_RDMA_READ;
		ds = 3;
		break;
	case FLEXIO_CTRL_SEG_ATOMIC_COMPARE_AND_SWAP:
		opcode = MLX5_CTRL_SEG_OPCODE_ATOMIC_COMPARE_AND_SWAP;
		ds = 4;
		break;
	case FLEXIO_CTRL_SEG_NOP:
		opcode = MLX5_CTRL_SEG_OPCODE_NOP;
		ds = 1;
		break;
	default:
		return FLEXIO_DEV_STATUS_FAILED;
	}
	mlx5_dpa_swqe_ctrl_set(swqe, opmod, opcode, sq_pi, sq_number, ds, (uint8_t)((ce & 3) << 2),
			       0);
	return FLEXIO_DEV_STATUS_SUCCESS;
}

/**
 * Writes an Ethernet segment: checksum flags, LSO mss (0 without LSO), the number of header
 * bytes inlined from byte 0xe on, and the first two of them (`inline_hdrs` may be NULL when
 * inline_hdr_bsz is 0). Header bytes 2.. go into the following 16-byte segments
 * (struct flexio_dev_wqe_inline_data_seg), whole segments, before any data segment.
 */
static inline flexio_dev_status_t flexio_dev_swqe_seg_eth_set(union flexio_dev_sqe_seg *swqe,
							      uint16_t cs_swp_flags, uint16_t mss,
							      uint16_t inline_hdr_bsz,
							      uint8_t inline_hdrs[2])
{
	volatile struct flexio_dev_wqe_eth_seg *e = &swqe->eth;

	e->rsvd0 = 0;
	e->cs_swp_flags = cpu_to_be16(cs_swp_flags);
	e->mss = cpu_to_be16(mss);
	e->rsvd2 = 0;
	e->inline_hdr_bsz = cpu_to_be16(inline_hdr_bsz);
	e->inline_hdrs[0] = inline_hdrs ? inline_hdrs[0] : 0;
	e->inline_hdrs[1] = inline_hdrs ? inline_hdrs[1] : 0;
	return FLEXIO_DEV_STATUS_SUCCESS;
}

/** Writes a pointer data segment: `data_sz` bytes at `data_addr` under `lkey`. */
static inline flexio_dev_status_t flexio_dev_swqe_seg_mem_ptr_data_set(
	union flexio_dev_sqe_seg *swqe, uint32_t data_sz, uint32_t lkey, uint64_t data_addr)
{
	volatile struct flexio_dev_wqe_mem_ptr_send_data_seg *d = &swqe->mem_ptr_send_data;

	d->byte_count = cpu_to_be32(data_sz);
	d->lkey = cpu_to_be32(lkey);
	d->addr = cpu_to_be64(data_addr);
	return FLEXIO_DEV_STATUS_SUCCESS;
}

/** Marker of an inline data segment in its byte_count word (MLX5_DPA_INLINE_SEG). */
#define MLX5_DPA_INLINE_SEG 0x80000000u

/**
 * Writes an inline data segment holding `data_sz` (at most 12) bytes copied in memory order
 * from `data`; byte_count = MLX5_DPA_INLINE_SEG | data_sz. (FlexIO's version byte-swaps each
 * 32-bit word of `data` and omits the marker; this one follows the PRM.) Returns FAILED for
 * more than 12 bytes.
 */
static inline flexio_dev_status_t flexio_dev_swqe_seg_inline_data_set(
	union flexio_dev_sqe_seg *swqe, uint32_t data_sz, uint32_t *data)
{
	volatile struct flexio_dev_wqe_inline_send_data_seg *d = &swqe->inline_send_data;
	const uint8_t *src = (const uint8_t *)data;
	uint32_t i;

	volatile uint8_t *dst = (volatile uint8_t *)d->data_and_padding;

	if (data_sz > sizeof(d->data_and_padding))
		return FLEXIO_DEV_STATUS_FAILED;
	d->byte_count = cpu_to_be32(MLX5_DPA_INLINE_SEG | data_sz);
	for (i = 0; i < sizeof(d->data_and_padding); i++)
		dst[i] = i < data_sz ? src[i] : 0;
	return FLEXIO_DEV_STATUS_SUCCESS;
}

/** Writes a shared-receive segment: the next WQE of the shared receive queue, a signature. */
static inline flexio_dev_status_t flexio_dev_swqe_seg_shared_receive_set(
	union flexio_dev_sqe_seg *swqe, uint16_t next_wqe_index, uint8_t signature)
{
	volatile struct flexio_dev_wqe_shared_receive_seg *s = &swqe->shared_receive;

	s->next_wqe_index = cpu_to_be16(next_wqe_index);
	s->signature = signature;
	return FLEXIO_DEV_STATUS_SUCCESS;
}

/** Writes a transpose segment: element size and matrix shape (columns and rows, 7 bits each). */
static inline flexio_dev_status_t flexio_dev_swqe_seg_transpose_set(union flexio_dev_sqe_seg *swqe,
								    uint8_t element_size,
								    uint8_t num_of_cols,
								    uint8_t num_of_rows)
{
	volatile struct flexio_dev_wqe_transpose_seg *t = &swqe->transpose;

	t->element_size = element_size;
	t->num_of_cols = num_of_cols & 0x7f;
	t->num_of_rows = num_of_rows & 0x7f;
	return FLEXIO_DEV_STATUS_SUCCESS;
}

/** Writes a remote address segment. */
static inline flexio_dev_status_t flexio_dev_swqe_seg_rdma_set(union flexio_dev_sqe_seg *swqe,
							       uint32_t rkey, uint64_t raddr)
{
	volatile struct flexio_dev_wqe_rdma_seg *r = &swqe->rdma;

	r->raddr = cpu_to_be64(raddr);
	r->rkey = cpu_to_be32(rkey);
	r->rsvd0 = 0;
	return FLEXIO_DEV_STATUS_SUCCESS;
}

/** Writes an atomic segment. */
static inline flexio_dev_status_t flexio_dev_swqe_seg_atomic_set(union flexio_dev_sqe_seg *swqe,
								 uint64_t swap_or_add_data,
								 uint64_t compare_data)
{
	volatile struct flexio_dev_wqe_atomic_seg *a = &swqe->atomic;

	a->swap_or_add_data = cpu_to_be64(swap_or_add_data);
	a->compare_data = cpu_to_be64(compare_data);
	return FLEXIO_DEV_STATUS_SUCCESS;
}

/* ------------------------------------------------------------------------------------- */
/* Receive WQEs and doorbell records                                                      */
/* ------------------------------------------------------------------------------------- */

/** The buffer address of a receive WQE's (first) data segment. */
static inline void *flexio_dev_rwqe_get_addr(struct flexio_dev_wqe_rcv_data_seg *rwqe)
{
	return (void *)(uintptr_t)be64_to_cpu(*(volatile __be64 *)&rwqe->addr);
}

/**
 * Hands one more receive WQE to the NIC: the RQ doorbell record (BE32 at +0 of the WQ's
 * record) becomes (counter + 1) & 0xffff. Orders earlier stores before it.
 */
static inline flexio_dev_status_t flexio_dev_dbr_rq_inc_pi(uint32_t *rq_dbr)
{
	volatile uint32_t *r = rq_dbr;
	uint32_t pi = be32_to_cpu(*r);

	mlx5_dpa_fence_w_w();
	*r = cpu_to_be32((pi + 1) & 0xffff);
	return FLEXIO_DEV_STATUS_SUCCESS;
}

/** Writes a CQ's consumer index record: BE32 of ci[23:0]. */
static inline flexio_dev_status_t flexio_dev_dbr_cq_set_ci(uint32_t *cq_dbr, uint32_t ci)
{
	*(volatile uint32_t *)cq_dbr = cpu_to_be32(ci & MLX5_DPA_MASK24);
	return FLEXIO_DEV_STATUS_SUCCESS;
}

/** Sets a WQ's receive counter (record +0) to pi[15:0], after earlier stores (mlx5_dpa). */
static inline void mlx5_dpa_dbr_rq_set_pi(uint64_t wq_dbr_addr, uint32_t pi)
{
	mlx5_dpa_fence_w_w();
	*(volatile uint32_t *)(uintptr_t)(wq_dbr_addr + MLX5_DPA_RCV_DBR) = cpu_to_be32(pi & 0xffff);
}

/** Sets a WQ's send counter (record +4) to pi[15:0], after earlier stores (mlx5_dpa). */
static inline void mlx5_dpa_dbr_sq_set_pi(uint64_t wq_dbr_addr, uint32_t pi)
{
	mlx5_dpa_fence_w_w();
	*(volatile uint32_t *)(uintptr_t)(wq_dbr_addr + MLX5_DPA_SND_DBR) = cpu_to_be32(pi & 0xffff);
}

/* ------------------------------------------------------------------------------------- */
/* Descriptor-based helpers (mlx5_dpa, not FlexIO API)                                    */
/* ------------------------------------------------------------------------------------- */

/** The 64-byte CQE for consumer counter `ci` (last 64 bytes of a 64- or 128-byte entry). */
static inline struct flexio_dev_cqe64 *mlx5_dpa_cq_cqe(const struct mlx5_dpa_cq_descriptor *cq,
						       uint32_t ci)
{
	uint32_t mask = (1u << cq->log_cqe_cnt) - 1;
	uint32_t size = cq->cqe_size == 128 ? 128 : 64;

	return (struct flexio_dev_cqe64 *)(uintptr_t)(cq->cq_ring_addr + (uint64_t)(ci & mask) * size +
						      (size - 64));
}

/**
 * Whether the CQE for counter `ci` holds a new completion: its owner bit equals the pass
 * parity (ci >> log_cqe_cnt) & 1 and its opcode is not MLX5_DPA_CQE_INVALID. On true, a read
 * barrier has ordered the owner read before the caller's reads of the rest of the CQE.
 */
static inline int mlx5_dpa_cqe_ready(const struct mlx5_dpa_cq_descriptor *cq,
				     struct flexio_dev_cqe64 *cqe, uint32_t ci)
{
	uint8_t op_own = *(volatile uint8_t *)&cqe->op_own;

	if ((op_own & 1) != ((ci >> cq->log_cqe_cnt) & 1) || (op_own >> 4) == MLX5_DPA_CQE_INVALID)
		return 0;
	mlx5_dpa_fence_r_r();
	return 1;
}

/** The 64-byte WQEBB for send counter `pi` of a WQ's send ring. */
static inline union flexio_dev_sqe_seg *mlx5_dpa_sq_wqebb(const struct mlx5_dpa_wq_descriptor *wq,
							  uint32_t pi)
{
	uint32_t mask = (1u << wq->log_sq_wqebb_cnt) - 1;

	return (union flexio_dev_sqe_seg *)(uintptr_t)(wq->sq_ring_addr +
						       (uint64_t)(pi & mask) * MLX5_DPA_SEND_WQE_BB);
}

/** The receive WQE (first data segment) for receive counter `idx`. */
static inline struct flexio_dev_wqe_rcv_data_seg *
mlx5_dpa_rq_wqe(const struct mlx5_dpa_wq_descriptor *wq, uint32_t idx)
{
	uint32_t mask = (1u << wq->log_rq_wqe_cnt) - 1;
	uint32_t stride = wq->rq_wqe_stride ? wq->rq_wqe_stride : 16;

	return (struct flexio_dev_wqe_rcv_data_seg *)(uintptr_t)(wq->rq_ring_addr +
								 (uint64_t)(idx & mask) * stride);
}

#endif /* MLX5_DPA_FLEXIO_DEV_QUEUE_ACCESS_H */
