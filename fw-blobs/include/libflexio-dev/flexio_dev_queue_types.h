/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * Datapath formats the DPA program reads and writes (PRM; docs/sources.md §6): the 64-byte CQE and
 * the 16-byte send / receive WQE segments. All multi-byte fields are big-endian on the wire
 * (typed __be16/__be32/__be64). Structures are naturally aligned (not packed) so the compiler
 * never splits an access into bytes; every offset is checked below.
 */
#ifndef MLX5_DPA_FLEXIO_DEV_QUEUE_TYPES_H
#define MLX5_DPA_FLEXIO_DEV_QUEUE_TYPES_H

#include <stddef.h>
#include <stdint.h>

#include "flexio_dev_endianity.h"

/** Big-endian wire types: documentation only (plain integers). */
typedef uint64_t __be64;
typedef uint32_t __be32;
typedef uint16_t __be16;

/** A send WQE basic block (WQEBB) is 64 bytes = 4 segments of 16 bytes. */
#define LOG_SQE_NUM_SEGS 2
#define MLX5_DPA_SEND_WQE_BB 64
#define MLX5_DPA_WQE_SEG_SIZE 16

/** CQE opcodes (op_own[7:4]). */
#define MLX5_DPA_CQE_REQ 0x0
#define MLX5_DPA_CQE_RESP_WR_IMM 0x1
#define MLX5_DPA_CQE_RESP_SEND 0x2
#define MLX5_DPA_CQE_RESP_SEND_IMM 0x3
#define MLX5_DPA_CQE_RESP_SEND_INV 0x4
#define MLX5_DPA_CQE_REQ_ERR 0xd
#define MLX5_DPA_CQE_RESP_ERR 0xe
#define MLX5_DPA_CQE_INVALID 0xf

/**
 * A 64-byte CQE (for 128-byte CQEs: the second half of each entry).
 *
 * | offset | field |
 * |---|---|
 * | 0x20 | `srqn_uidx` (BE32, user index in bits 23:0) |
 * | 0x2c | `byte_cnt` (BE32) |
 * | 0x34 | `err_syndrome` (BE32; error CQEs: vendor syndrome byte 0x36, syndrome byte 0x37) |
 * | 0x38 | `qpn` (BE32, `sop_drop_qpn`: QP/SQ number in bits 23:0) |
 * | 0x3c | `wqe_counter` (BE16) |
 * | 0x3e | `signature` |
 * | 0x3f | `op_own`: opcode in bits 7:4, owner in bit 0 |
 */
struct flexio_dev_cqe64 {
	__be32 rsvd0[7];
	uint8_t csum_ok;
	uint8_t rsvd29[3];
	__be32 srqn_uidx;
	__be32 rsvd36[2];
	__be32 byte_cnt;
	__be32 rsvd48;
	__be32 err_syndrome;
	__be32 qpn;
	__be16 wqe_counter;
	uint8_t signature;
	uint8_t op_own;
};

_Static_assert(sizeof(struct flexio_dev_cqe64) == 64, "CQE is 64 bytes");
_Static_assert(offsetof(struct flexio_dev_cqe64, srqn_uidx) == 0x20, "srqn_uidx @0x20");
_Static_assert(offsetof(struct flexio_dev_cqe64, byte_cnt) == 0x2c, "byte_cnt @0x2c");
_Static_assert(offsetof(struct flexio_dev_cqe64, err_syndrome) == 0x34, "syndrome @0x34");
_Static_assert(offsetof(struct flexio_dev_cqe64, qpn) == 0x38, "qpn @0x38");
_Static_assert(offsetof(struct flexio_dev_cqe64, wqe_counter) == 0x3c, "wqe_counter @0x3c");
_Static_assert(offsetof(struct flexio_dev_cqe64, op_own) == 0x3f, "op_own @0x3f");

/** Control segment (first segment of every send WQE). */
struct flexio_dev_wqe_ctrl_seg {
	__be32 idx_opcode;         /**< 0x0: opmod << 24 | wqe_index << 8 | opcode */
	__be32 qpn_ds;             /**< 0x4: qpn_or_sqn << 8 | ds (16-byte segment count) */
	__be32 signature_fm_ce_se; /**< 0x8: signature byte 8; fm_ce_se byte 0xb */
	__be32 general_id;         /**< 0xc: immediate / general id */
};

/**
 * Checksum-offload and software-parser flags of the Ethernet segment's `cs_swp_flags`
 * (PRM "Send WQE Construction Summary", as FlexIO names them).
 */
typedef enum {
	FLEXIO_ETH_SEG_L4CS = 0x8000,
	FLEXIO_ETH_SEG_L3CS = 0x4000,
	FLEXIO_ETH_SEG_L4CS_INNER = 0x2000,
	FLEXIO_ETH_SEG_L3CS_INNER = 0x1000,
	FLEXIO_ETH_SEG_TRAILER_ALIGN = 0x0200,
	FLEXIO_ETH_SEG_SWP_OUTER_L4_TYPE = 0x0040,
	FLEXIO_ETH_SEG_SWP_OUTER_L3_TYPE = 0x0020,
	FLEXIO_ETH_SEG_SWP_INNER_L4_TYPE = 0x0002,
	FLEXIO_ETH_SEG_SWP_INNER_L3_TYPE = 0x0001,
} flexio_dev_wqe_eth_seg_cs_swp_flags_t;

/** Ethernet segment (second segment of an Ethernet send WQE). */
struct flexio_dev_wqe_eth_seg {
	__be32 rsvd0;           /**< 0x0: software parser offsets (unused) */
	__be16 cs_swp_flags;    /**< 0x4: checksum offload flags */
	__be16 mss;             /**< 0x6: LSO segment size, 0 otherwise */
	__be32 rsvd2;           /**< 0x8: flow table metadata (unused) */
	__be16 inline_hdr_bsz;  /**< 0xc: bytes of packet headers inlined from 0xe on */
	uint8_t inline_hdrs[2]; /**< 0xe: first two inlined bytes; the rest fill the next segments */
};

/** Segment holding inlined header bytes past the first two (continuation of the eth segment). */
struct flexio_dev_wqe_inline_data_seg {
	uint8_t inline_data[16];
};

/** Pointer data segment (send gather entry). */
struct flexio_dev_wqe_mem_ptr_send_data_seg {
	__be32 byte_count; /**< 0x0 */
	__be32 lkey;       /**< 0x4 */
	__be64 addr;       /**< 0x8: address in the lkey's space (a DPA address for DPA memory) */
};

/** Inline send data segment: byte_count has bit 31 (MLX5_DPA_INLINE_SEG) set; data follows. */
struct flexio_dev_wqe_inline_send_data_seg {
	__be32 byte_count;
	__be32 data_and_padding[3]; /**< the bytes in memory order, zero padded */
};

/** Remote address segment (RDMA). */
struct flexio_dev_wqe_rdma_seg {
	__be64 raddr;
	__be32 rkey;
	__be32 rsvd0;
};

/** Atomic segment. */
struct flexio_dev_wqe_atomic_seg {
	__be64 swap_or_add_data;
	__be64 compare_data;
};

/** Receive WQE data segment (one per stride in these programs). */
struct flexio_dev_wqe_rcv_data_seg {
	__be32 byte_count; /**< 0x0: buffer size */
	__be32 lkey;       /**< 0x4 */
	__be64 addr;       /**< 0x8: buffer address */
};

/** Shared-receive segment: links a receive WQE to the next one of a shared receive queue. */
struct flexio_dev_wqe_shared_receive_seg {
	uint8_t rsvd0[2];
	__be16 next_wqe_index; /**< 0x2 */
	uint8_t signature;     /**< 0x4 */
	uint8_t rsvd1[11];
};

/** Transpose segment (matrix transpose WQEs): element size and matrix shape. */
struct flexio_dev_wqe_transpose_seg {
	uint8_t rsvd0[3];
	uint8_t element_size; /**< 0x3 */
	uint8_t rsvd1;
	uint8_t num_of_cols;  /**< 0x5: 7 bits */
	uint8_t rsvd2;
	uint8_t num_of_rows;  /**< 0x7: 7 bits */
	uint8_t rsvd4[8];
};

/** One 16-byte slot of a send WQE, viewed as any segment type. */
union flexio_dev_sqe_seg {
	struct flexio_dev_wqe_ctrl_seg ctrl;
	struct flexio_dev_wqe_eth_seg eth;
	struct flexio_dev_wqe_inline_data_seg inline_data;
	struct flexio_dev_wqe_rdma_seg rdma;
	struct flexio_dev_wqe_mem_ptr_send_data_seg mem_ptr_send_data;
	struct flexio_dev_wqe_inline_send_data_seg inline_send_data;
	struct flexio_dev_wqe_atomic_seg atomic;
	struct flexio_dev_wqe_transpose_seg transpose;
	struct flexio_dev_wqe_shared_receive_seg shared_receive;
};

/**
 * A 64-byte event queue entry (PRM `mlx5_eqe`): `type` at 0x1, `sub_type` at 0x3, the event
 * data at 0x20 (for a completion event the CQ number in the low 24 bits of its word at 0x18),
 * `signature` at 0x3e, `owner` (bit 0) at 0x3f.
 */
struct flexio_dev_eqe {
	uint8_t rsvd00;
	uint8_t type;
	uint8_t rsvd02;
	uint8_t sub_type;
	uint8_t rsvd4[28];
	struct {
		__be32 rsvd00[6];
		__be32 cqn;
	} event_data;
	__be16 rsvd3c;
	uint8_t signature;
	uint8_t owner;
};

_Static_assert(sizeof(struct flexio_dev_eqe) == 64, "EQE is 64 bytes");
_Static_assert(offsetof(struct flexio_dev_eqe, event_data.cqn) == 0x38, "EQE cqn @0x38");
_Static_assert(offsetof(struct flexio_dev_eqe, owner) == 0x3f, "EQE owner @0x3f");
_Static_assert(offsetof(struct flexio_dev_wqe_shared_receive_seg, signature) == 4, "srq sig @4");
_Static_assert(offsetof(struct flexio_dev_wqe_transpose_seg, num_of_rows) == 7, "rows @7");

_Static_assert(sizeof(union flexio_dev_sqe_seg) == 16, "send segment is 16 bytes");
_Static_assert(sizeof(struct flexio_dev_wqe_rcv_data_seg) == 16, "receive segment is 16 bytes");
_Static_assert(offsetof(struct flexio_dev_wqe_ctrl_seg, signature_fm_ce_se) == 8, "fm_ce_se word");
_Static_assert(offsetof(struct flexio_dev_wqe_eth_seg, inline_hdr_bsz) == 0xc, "inline size @0xc");
_Static_assert(offsetof(struct flexio_dev_wqe_eth_seg, inline_hdrs) == 0xe, "inline hdrs @0xe");
_Static_assert(offsetof(struct flexio_dev_wqe_mem_ptr_send_data_seg, addr) == 8, "addr @8");

#endif /* MLX5_DPA_FLEXIO_DEV_QUEUE_TYPES_H */
