/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * The DPA's machine-level interface as the mlx5-dpa model implements it (docs/sources.md §5):
 * the thread context at `tp`, the FlexIO-OS calls (`ecall`), the outbox doorbell page and
 * the device barriers. Everything above this header (flexio_dev.h and friends) is written
 * in terms of these definitions only.
 */
#ifndef MLX5_DPA_FLEXIO_DEV_DPA_ARCH_H
#define MLX5_DPA_FLEXIO_DEV_DPA_ARCH_H

#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------------------------------------- */
/* Thread context                                                                         */
/* ------------------------------------------------------------------------------------- */

/**
 * The per-thread context the FlexIO OS keeps for the running thread; `tp` points at it for
 * the whole activation. 48 bytes:
 *
 * | offset | field                | meaning |
 * |--------|----------------------|---------|
 * | 0      | `version`            | context layout version (set by the OS) |
 * | 4      | `outbox_config_id`   | outbox currently configured (OUTBOX_SET_CFG) |
 * | 6      | `window_config_id`   | window currently configured (WINDOW_SET_CFG) |
 * | 8      | `outbox_base`        | DPA address of the configured outbox page (4 KiB) |
 * | 16     | `window_base`        | DPA address where host address 0 of the window appears |
 * | 24     | `window_config_base` | DPA address of the window's mkey register |
 * | 32     | `metadata_parameter` | the thread's thread-local-storage address (the host's thread_local_storage_daddr; 0 for none) |
 * | 40     | `errno`              | recoverable-error code of the thread (u32; MLX5_DPA_OS_ERRNO_*) |
 * | 44     | `thread_id`          | the thread's DPA_THREAD id (provisional: the model's place for it; FlexIO's "thread metadata" is not public) |
 *
 * The OS owns this memory; programs read it and only write `errno` (via flexio_dev_rst_errno).
 */
struct flexio_dev_thread_ctx {
	uint32_t version;
	uint16_t outbox_config_id;
	uint16_t window_config_id;
	uint64_t outbox_base;
	uint64_t window_base;
	uint64_t window_config_base;
	uint64_t metadata_parameter;
	uint32_t errno;
	uint32_t thread_id;
};

_Static_assert(sizeof(struct flexio_dev_thread_ctx) == 48, "thread ctx is 48 bytes");
_Static_assert(offsetof(struct flexio_dev_thread_ctx, outbox_config_id) == 4, "outbox id @4");
_Static_assert(offsetof(struct flexio_dev_thread_ctx, window_config_id) == 6, "window id @6");
_Static_assert(offsetof(struct flexio_dev_thread_ctx, outbox_base) == 8, "outbox_base @8");
_Static_assert(offsetof(struct flexio_dev_thread_ctx, window_base) == 16, "window_base @16");
_Static_assert(offsetof(struct flexio_dev_thread_ctx, window_config_base) == 24, "cfg @24");
_Static_assert(offsetof(struct flexio_dev_thread_ctx, metadata_parameter) == 32, "meta @32");
_Static_assert(offsetof(struct flexio_dev_thread_ctx, errno) == 40, "errno @40");

/** FlexIO's own name for the same layout. */
#define flexio_os_thread_ctx flexio_dev_thread_ctx

/** The thread context of the running thread (reads `tp`; no OS call). */
static inline struct flexio_dev_thread_ctx *mlx5_dpa_thread_ctx(void)
{
	struct flexio_dev_thread_ctx *ctx;

	__asm__("mv %0, tp" : "=r"(ctx));
	return ctx;
}

/* ------------------------------------------------------------------------------------- */
/* FlexIO-OS calls: `ecall`, number in a7, arguments in a0..                              */
/* ------------------------------------------------------------------------------------- */

/** End this activation. a0 = MLX5_DPA_HANDLER_RETURN_RESCHEDULE or MLX5_DPA_HANDLER_RETURN_FINISH. */
#define MLX5_DPA_OS_DUAR_HANDLER_RETURN 0
/** Query the thread's DUAR: a0 = its id. */
#define MLX5_DPA_OS_GET_DUAR 1
/** Select the thread's outbox: a0 = outbox id. Updates outbox_base / outbox_config_id. */
#define MLX5_DPA_OS_OUTBOX_SET_CFG 2
/** Select the thread's window: a0 = window id. Updates window_base / window_config_base. */
#define MLX5_DPA_OS_WINDOW_SET_CFG 3
/** Stop the whole process: a0 = status (recorded as the process status). */
#define MLX5_DPA_OS_EXIT_PROCESS 4
/** Select the GVMI the outbox acts on: a0 = gvmi. */
#define MLX5_DPA_OS_OUTBOX_SET_GVMI 5
/**
 * Configure NIC counter sampling: a0 = values array, a1 = counter id array, a2 = how many.
 * The process crashes on arguments the OS refuses. Provisional (the model's number).
 */
#define MLX5_DPA_OS_NIC_COUNTERS_CONFIG 6
/** Sample the configured NIC counters into the values array. Provisional. */
#define MLX5_DPA_OS_NIC_COUNTERS_SAMPLE 7
/** The PCC table base of GVMI a0, returned in a0. Provisional. */
#define MLX5_DPA_OS_GET_PCC_TABLE_BASE 8

/**
 * Result in a0 of the selection calls: OUTBOX_SET_CFG, WINDOW_SET_CFG and OUTBOX_SET_GVMI
 * return MLX5_DPA_OS_OK, or MLX5_DPA_OS_FAILED with the reason in the thread context's errno word
 * (MLX5_DPA_OS_ERRNO_*). Every other register is preserved across an `ecall`.
 */
#define MLX5_DPA_OS_OK 0
#define MLX5_DPA_OS_FAILED (~(uint64_t)0)
/** errno: the outbox / window id is not an object of this process. */
#define MLX5_DPA_OS_ERRNO_NO_SUCH_OBJECT 1
/** errno: the object belongs to another process. */
#define MLX5_DPA_OS_ERRNO_OTHER_PROCESS 2
/** errno: OUTBOX_SET_GVMI with a GVMI that is not this function's. */
#define MLX5_DPA_OS_ERRNO_BAD_GVMI 3

/** DUAR_HANDLER_RETURN argument: wait for the next event, then start again at the entry. */
#define MLX5_DPA_HANDLER_RETURN_RESCHEDULE 0
/** DUAR_HANDLER_RETURN argument: the thread is finished. */
#define MLX5_DPA_HANDLER_RETURN_FINISH 1
/**
 * DUAR_HANDLER_RETURN argument (provisional, the model's number): a continuable thread waits
 * for its next event and then resumes after the call; any other thread goes on at once.
 */
#define MLX5_DPA_HANDLER_RETURN_YIELD 2
/** DUAR_HANDLER_RETURN argument (provisional): start again at the entry at once. */
#define MLX5_DPA_HANDLER_RETURN_RETRIGGER 3

/** An OS call with one argument; returns whatever the OS left in a0. */
static inline uint64_t mlx5_dpa_os_call1(uint64_t nr, uint64_t arg0)
{
	register uint64_t a0 __asm__("a0") = arg0;
	register uint64_t a7 __asm__("a7") = nr;

	__asm__ volatile("ecall" : "+r"(a0) : "r"(a7) : "memory");
	return a0;
}

/** An OS call with three arguments; returns whatever the OS left in a0. */
static inline uint64_t mlx5_dpa_os_call3(uint64_t nr, uint64_t arg0, uint64_t arg1, uint64_t arg2)
{
	register uint64_t a0 __asm__("a0") = arg0;
	register uint64_t a1 __asm__("a1") = arg1;
	register uint64_t a2 __asm__("a2") = arg2;
	register uint64_t a7 __asm__("a7") = nr;

	__asm__ volatile("ecall" : "+r"(a0) : "r"(a1), "r"(a2), "r"(a7) : "memory");
	return a0;
}

/** An OS call that does not return to the caller (HANDLER_RETURN, EXIT_PROCESS). */
static inline __attribute__((noreturn)) void mlx5_dpa_os_call1_noreturn(uint64_t nr, uint64_t arg0)
{
	register uint64_t a0 __asm__("a0") = arg0;
	register uint64_t a7 __asm__("a7") = nr;

	__asm__ volatile("ecall" : : "r"(a0), "r"(a7) : "memory");
	__builtin_unreachable();
}

/* ------------------------------------------------------------------------------------- */
/* Outbox page: doorbells to the NIC, 64-bit stores at fixed offsets                       */
/* ------------------------------------------------------------------------------------- */

/** Outbox page size. */
#define MLX5_DPA_OUTBOX_PAGE_SIZE 0x1000
/** Re-arm a CQ and update its consumer index: cqn[23:0] | cq_ci[23:0] << 32. */
#define MLX5_DPA_OUTBOX_CQ_DB 0x100
/** Update an EQ consumer index and re-arm it: eqn | eq_ci << 32. */
#define MLX5_DPA_OUTBOX_EQ_DB_REARM 0x140
/** Update an EQ consumer index without re-arming: eqn | eq_ci << 32. */
#define MLX5_DPA_OUTBOX_EQ_DB_NO_REARM 0x180
/** Send doorbell: wqe_index[15:0] (the new producer counter) | qp_or_sq[23:0] << 32. */
#define MLX5_DPA_OUTBOX_SXD_DB 0x1c0
/** Emulation doorbell context re-arm: dummy_qpn[23:0] | emulation_index[25:0] << 32. */
#define MLX5_DPA_OUTBOX_EMU_CAP 0x200
#define MLX5_DPA_OUTBOX_EMU_CAP_TRIGGER 0x240
#define MLX5_DPA_OUTBOX_RXT_DB 0x280
#define MLX5_DPA_OUTBOX_CC_DB 0x340

#define MLX5_DPA_MASK24 0xffffffu

/* Values of the emulation, MSI-X and congestion-control registers (bit positions of the
 * public BSD-3 flexio_dev_dpa_arch.h register layouts, docs/sources.md section 5). */
/** EMU_CAP / EMU_CAP_TRIGGER value. */
#define OUTBOX_V_EMU_CAP(dummy_qpn, emulation_index) \
	(((uint64_t)((dummy_qpn) & MLX5_DPA_MASK24)) | ((uint64_t)((emulation_index) & 0x3ffffffu) << 32))
/** RXT_DB value: a zero CQE on `cqn`, whose event raises the MSI-X of its EQ. */
#define OUTBOX_V_RXT_DB(cqn) ((uint64_t)((cqn) & MLX5_DPA_MASK24))
/** CC_DB value: rate (ccq_res) [31:0], rtt request [32], next action [35:34], ccq id [63:48]. */
#define OUTBOX_V_CC_DB(rate, ccq_id, next_act, rtt_req)                                 \
	(((uint64_t)(uint32_t)(rate)) | ((uint64_t)((rtt_req) & 1) << 32) |               \
	 ((uint64_t)((next_act) & 3) << 34) | ((uint64_t)((ccq_id) & 0xffffu) << 48))

/** CQ_DB value. */
#define OUTBOX_V_CQ_DB(cqn, cq_ci) \
	(((uint64_t)((cqn) & MLX5_DPA_MASK24)) | ((uint64_t)((cq_ci) & MLX5_DPA_MASK24) << 32))
/** EQ_DB_REARM / EQ_DB_NO_REARM value. */
#define MLX5_DPA_OUTBOX_V_EQ_DB(eqn, eq_ci) \
	(((uint64_t)((eqn) & MLX5_DPA_MASK24)) | ((uint64_t)((eq_ci) & 0x3ffffffu) << 32))
/** SXD_DB value. */
#define OUTBOX_V_SXD_DB(wqe_index, qp_or_sq) \
	(((uint64_t)((wqe_index) & 0xffffu)) | ((uint64_t)((qp_or_sq) & MLX5_DPA_MASK24) << 32))

/* FlexIO's names for the same page and values (the public flexio_dev_dpa_arch.h, 24.01):
 * the page as a struct, each register's fields as a "bit map" struct whose member sizes are
 * bit widths (so a member's offsetof is its bit position), and the value builders on top. */

/** A value stored into an outbox register. */
typedef uint64_t dpa_outbox_value_t;
/** A value stored into a window register. */
typedef uint64_t dpa_window_value_t;
/** One byte per bit in the register bit maps below. */
typedef unsigned char pseudo_bit_t;

/** The outbox page, register by register (the DPA_OUTBOX_* offsets above). */
struct dpa_outbox9_u_page_le {
	uint64_t UCTL;
	uint8_t rsvd_uctl[0x38];
	uint64_t BUFFER;
	uint8_t rsvd_buffer[0xb8];
	uint64_t CQ_DB;
	uint8_t rsvd_cq_db[0x38];
	uint64_t EQ_DB_REARM;
	uint8_t rsvd_eq_db_rearm[0x38];
	uint64_t EQ_DB_NO_REARM;
	uint8_t rsvd_eq_db_no_rearm[0x38];
	uint64_t SXD_DB;
	uint8_t rsvd_sxd_db[0x38];
	uint64_t EMU_CAP;
	uint8_t rsvd_emu_cap[0x38];
	uint64_t EMU_CAP_TRIGGER;
	uint8_t rsvd_emu_cap_trigger[0x38];
	uint64_t RXT_DB;
	uint8_t rsvd_rxt_db[0x38];
	uint64_t RXT_DONE0;
	uint64_t RXT_DONE1;
	uint8_t rsvd_rxt_done[0x30];
	uint64_t RXC_RD;
	uint8_t rsvd_rxc_rd[0x38];
	uint64_t CC_DB;
	uint8_t rsvd_cc_db[0xc78];
	uint64_t SW_RESERVE;
	uint8_t rsvd_sw_reserve[0x38];
};
typedef struct dpa_outbox9_u_page_le dpa_outbox_u_page_t;

_Static_assert(offsetof(dpa_outbox_u_page_t, CQ_DB) == MLX5_DPA_OUTBOX_CQ_DB, "CQ_DB");
_Static_assert(offsetof(dpa_outbox_u_page_t, EQ_DB_REARM) == MLX5_DPA_OUTBOX_EQ_DB_REARM, "EQ re");
_Static_assert(offsetof(dpa_outbox_u_page_t, EQ_DB_NO_REARM) == MLX5_DPA_OUTBOX_EQ_DB_NO_REARM, "EQ");
_Static_assert(offsetof(dpa_outbox_u_page_t, SXD_DB) == MLX5_DPA_OUTBOX_SXD_DB, "SXD_DB");
_Static_assert(offsetof(dpa_outbox_u_page_t, EMU_CAP) == MLX5_DPA_OUTBOX_EMU_CAP, "EMU_CAP");
_Static_assert(offsetof(dpa_outbox_u_page_t, EMU_CAP_TRIGGER) == MLX5_DPA_OUTBOX_EMU_CAP_TRIGGER, "T");
_Static_assert(offsetof(dpa_outbox_u_page_t, RXT_DB) == MLX5_DPA_OUTBOX_RXT_DB, "RXT_DB");
_Static_assert(offsetof(dpa_outbox_u_page_t, CC_DB) == MLX5_DPA_OUTBOX_CC_DB, "CC_DB");
_Static_assert(sizeof(dpa_outbox_u_page_t) == 0x1000, "one 4 KiB page");

/** CQ_DB: the CQ to re-arm and its new consumer index. */
struct dpa_outbox_v9_reg_CQ_DB_rbits {
	pseudo_bit_t cqn[24];
	pseudo_bit_t rsvd0[8];
	pseudo_bit_t cq_ci[24];
	pseudo_bit_t rsvd1[8];
};
/** EQ_DB_REARM: the EQ's new consumer index, re-arming it. */
struct dpa_outbox_v9_reg_EQ_DB_REARM_rbits {
	pseudo_bit_t eqn[24];
	pseudo_bit_t rsvd0[8];
	pseudo_bit_t eq_ci[26];
	pseudo_bit_t rsvd1[6];
};
/** EQ_DB_NO_REARM: the EQ's new consumer index only. */
struct dpa_outbox_v9_reg_EQ_DB_NO_REARM_rbits {
	pseudo_bit_t eqn[24];
	pseudo_bit_t rsvd0[8];
	pseudo_bit_t eq_ci[26];
	pseudo_bit_t rsvd1[6];
};
/** SXD_DB: a send queue's new producer counter. */
struct dpa_outbox_v9_reg_SXD_DB_rbits {
	pseudo_bit_t wqe_index[16];
	pseudo_bit_t rsvd0[16];
	pseudo_bit_t qp_or_sq[24];
	pseudo_bit_t rsvd1[8];
};
/** RXT_DB: a zero CQE on a CQ, raising its EQ's MSI-X. */
struct dpa_outbox_v9_reg_RXT_DB_rbits {
	pseudo_bit_t cqn[24];
	pseudo_bit_t rsvd0[40];
};
/** CC_DB: a congestion-control answer. */
struct dpa_outbox_v9_reg_CC_DB_rbits {
	pseudo_bit_t ccq_res[32];
	pseudo_bit_t rttrq[1];
	pseudo_bit_t rsvd0[1];
	pseudo_bit_t nxt_act[2];
	pseudo_bit_t rsvd1[12];
	pseudo_bit_t ccq_id[16];
};
/** EMU_CAP: re-arm an emulation doorbell context. */
struct dpa_outbox_v9_reg_EMU_CAP_rbits {
	pseudo_bit_t dummy_qpn[24];
	pseudo_bit_t rsvd0[8];
	pseudo_bit_t emulation_index[26];
	pseudo_bit_t rsvd1[6];
};
/** EMU_CAP_TRIGGER: re-arm and trigger an emulation doorbell context. */
struct dpa_outbox_v9_reg_EMU_CAP_TRIGGER_rbits {
	pseudo_bit_t dummy_qpn[24];
	pseudo_bit_t rsvd0[8];
	pseudo_bit_t emulation_index[26];
	pseudo_bit_t rsvd1[6];
};

/** A register's bit map at address 0, to take its members' offsets. */
#define _OUTBOX_NULL_PTR(reg) ((struct dpa_outbox_v9_reg_##reg##_rbits *)0)
/** Width in bits of a register field. */
#define _OUTBOX_BIT_SIZE(reg, field) (sizeof(_OUTBOX_NULL_PTR(reg)->field))
/** Bit position of a register field. */
#define _OUTBOX_OFFSET(reg, field) ((uint64_t) & (_OUTBOX_NULL_PTR(reg)->field))
#define _OUTBOX_P_BGN(reg, field) (_OUTBOX_OFFSET(reg, field))

/** One to four field values, each shifted to its position. */
#define OUTBOX_VALUE1(v1, s1) (((dpa_outbox_value_t)(v1)) << (s1))
#define OUTBOX_VALUE2(v1, s1, v2, s2) (OUTBOX_VALUE1(v1, s1) | OUTBOX_VALUE1(v2, s2))
#define OUTBOX_VALUE3(v1, s1, v2, s2, v3, s3) (OUTBOX_VALUE2(v1, s1, v2, s2) | OUTBOX_VALUE1(v3, s3))
#define OUTBOX_VALUE4(v1, s1, v2, s2, v3, s3, v4, s4) \
	(OUTBOX_VALUE3(v1, s1, v2, s2, v3, s3) | OUTBOX_VALUE1(v4, s4))

/** The address of a register of an outbox page. */
#define OUTBOX_PAGE_FIELD_PTR(page, reg) ((dpa_outbox_value_t *)(&(((dpa_outbox_u_page_t *)(page))->reg)))
/** Stores `value` into register `reg` of the outbox page at `page`. */
#define outbox_write(page, reg, value) \
	__outbox_write(OUTBOX_PAGE_FIELD_PTR(page, reg), (dpa_outbox_value_t)(value))
static inline void __outbox_write(dpa_outbox_value_t *reg, dpa_outbox_value_t value)
{
	*(volatile dpa_outbox_value_t *)reg = value;
}

#define CQ_DB_CQN_SHIFT _OUTBOX_P_BGN(CQ_DB, cqn)
#define CQ_DB_CQ_CI_SHIFT _OUTBOX_P_BGN(CQ_DB, cq_ci)
#define RXT_DB_CQN_SHIFT _OUTBOX_P_BGN(RXT_DB, cqn)
#define CC_DB_RES_SHIFT _OUTBOX_P_BGN(CC_DB, ccq_res)
#define CC_DB_ID_SHIFT _OUTBOX_P_BGN(CC_DB, ccq_id)
#define CC_DB_NXT_ACT_SHIFT _OUTBOX_P_BGN(CC_DB, nxt_act)
#define CC_DB_RTTRQ_SHIFT _OUTBOX_P_BGN(CC_DB, rttrq)
#define EQ_DB_REARM_EQN_SHIFT _OUTBOX_P_BGN(EQ_DB_REARM, eqn)
#define EQ_DB_REARM_EQ_CI_SHIFT _OUTBOX_P_BGN(EQ_DB_REARM, eq_ci)
#define EQ_DB_NO_REARM_EQN_SHIFT _OUTBOX_P_BGN(EQ_DB_NO_REARM, eqn)
#define EQ_DB_NO_REARM_EQ_CI_SHIFT _OUTBOX_P_BGN(EQ_DB_NO_REARM, eq_ci)
#define SXD_DB_WQE_INDEX_SHIFT _OUTBOX_P_BGN(SXD_DB, wqe_index)
#define SXD_DB_QP_OR_SQ_SHIFT _OUTBOX_P_BGN(SXD_DB, qp_or_sq)
#define EMU_CAP_DUMMY_QPN_SHIFT _OUTBOX_P_BGN(EMU_CAP, dummy_qpn)
#define EMU_CAP_EMULATION_INDEX_SHIFT _OUTBOX_P_BGN(EMU_CAP, emulation_index)
#define EMU_CAP_TRIGGER_DUMMY_QPN_SHIFT _OUTBOX_P_BGN(EMU_CAP_TRIGGER, dummy_qpn)
#define EMU_CAP_TRIGGER_EMULATION_INDEX_SHIFT _OUTBOX_P_BGN(EMU_CAP_TRIGGER, emulation_index)

/** EQ_DB_REARM value (the same fields as MLX5_DPA_OUTBOX_V_EQ_DB). */
#define OUTBOX_V_EQ_DB_REARM(eqn, eq_ci) \
	OUTBOX_VALUE2(eqn, EQ_DB_REARM_EQN_SHIFT, eq_ci, EQ_DB_REARM_EQ_CI_SHIFT)
/** EQ_DB_NO_REARM value. */
#define OUTBOX_V_EQ_DB_NO_REARM(eqn, eq_ci) \
	OUTBOX_VALUE2(eqn, EQ_DB_NO_REARM_EQN_SHIFT, eq_ci, EQ_DB_NO_REARM_EQ_CI_SHIFT)
/** EMU_CAP_TRIGGER value. */
#define OUTBOX_V_EMU_CAP_TRIGGER(dummy_qpn, emulation_index)                           \
	OUTBOX_VALUE2(dummy_qpn, EMU_CAP_TRIGGER_DUMMY_QPN_SHIFT, emulation_index,        \
		      EMU_CAP_TRIGGER_EMULATION_INDEX_SHIFT)

/* ------------------------------------------------------------------------------------- */
/* Device barriers                                                                        */
/* ------------------------------------------------------------------------------------- */

/**
 * Orders earlier memory stores (WQE, packet buffer, counters) before later memory stores
 * (a doorbell record the NIC polls). FlexIO: __dpa_thread_fence(__DPA_MEMORY, __DPA_W, __DPA_W).
 */
static inline void mlx5_dpa_fence_w_w(void)
{
	__asm__ volatile("fence w, w" ::: "memory");
}

/**
 * Orders an earlier memory load (a CQE's owner byte) before later loads (the rest of that
 * CQE, the packet it names). FlexIO: __dpa_thread_fence(__DPA_MEMORY, __DPA_R, __DPA_R).
 */
static inline void mlx5_dpa_fence_r_r(void)
{
	__asm__ volatile("fence r, r" ::: "memory");
}

/**
 * Orders every earlier memory access before a later device output: used before each outbox
 * or window-register store, so the NIC sees the rings and records those stores announce.
 */
static inline void mlx5_dpa_fence_rw_o(void)
{
	__asm__ volatile("fence rw, o" ::: "memory");
}

/**
 * Orders a device output (window mkey register) before later memory accesses through the
 * window it configures.
 */
static inline void mlx5_dpa_fence_o_rw(void)
{
	__asm__ volatile("fence o, rw" ::: "memory");
}

/** A 64-bit store to an outbox register of the configured outbox page. */
static inline void mlx5_dpa_outbox_write(uint64_t outbox_base, uint32_t reg, uint64_t value)
{
	mlx5_dpa_fence_rw_o();
	*(volatile uint64_t *)(uintptr_t)(outbox_base + reg) = value;
}

#endif /* MLX5_DPA_FLEXIO_DEV_DPA_ARCH_H */
