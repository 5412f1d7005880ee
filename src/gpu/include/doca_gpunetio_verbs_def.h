/*
 * mlx5-dpa: GPUNetIO Verbs device definitions: enums and the QP handle a kernel drives an RC
 * QP with. Written for mlx5-dpa from NVIDIA's public GPUNetIO API reference (names and enum
 * values); the handle layout is this project's own (mlx5_dpa::gpu::VerbsQp fills it in), and
 * its offsets are part of its contract (checked by its tests).
 */
#ifndef DOCA_GPUNETIO_VERBS_DEF_H
#define DOCA_GPUNETIO_VERBS_DEF_H

#include "doca_gpunetio_eth_def.h"

/* mlx5 RC opcodes (PRM; rdma-core mlx5dv.h). */
#define DOCA_GPUNETIO_MLX5_OPCODE_RDMA_WRITE 0x08
#define DOCA_GPUNETIO_MLX5_OPCODE_SEND 0x0a
#define DOCA_GPUNETIO_MLX5_OPCODE_RDMA_READ 0x10
#define DOCA_GPUNETIO_MLX5_OPCODE_ATOMIC_FA 0x12
/* The lkey that ends a receive scatter list (MLX5_INVALID_LKEY). */
#define DOCA_GPUNETIO_MLX5_INVALID_LKEY 0x100

enum doca_gpu_dev_verbs_resource_sharing_mode {
	DOCA_GPUNETIO_VERBS_RESOURCE_SHARING_MODE_EXCLUSIVE = 0,
	DOCA_GPUNETIO_VERBS_RESOURCE_SHARING_MODE_CTA = 1,
	DOCA_GPUNETIO_VERBS_RESOURCE_SHARING_MODE_GPU = 2,
};

/* Who rings the doorbell. BlueFlame and no-DBR modes are not supported here (AUTO never picks them). */
enum doca_gpu_dev_verbs_nic_handler {
	DOCA_GPUNETIO_VERBS_NIC_HANDLER_AUTO = 0,
	DOCA_GPUNETIO_VERBS_NIC_HANDLER_CPU_PROXY = 1,
	DOCA_GPUNETIO_VERBS_NIC_HANDLER_GPU_SM_DB = 2,
	DOCA_GPUNETIO_VERBS_NIC_HANDLER_GPU_SM_BF = 3,
	DOCA_GPUNETIO_VERBS_NIC_HANDLER_GPU_SM_NO_DBR = 4,
};

enum doca_gpu_dev_verbs_qp_type {
	DOCA_GPUNETIO_VERBS_QP_SQ = 0,
	DOCA_GPUNETIO_VERBS_QP_RQ = 1,
};

enum doca_gpu_dev_verbs_exec_scope {
	DOCA_GPUNETIO_VERBS_EXEC_SCOPE_THREAD = 0,
	DOCA_GPUNETIO_VERBS_EXEC_SCOPE_WARP = 1,
};

enum doca_gpu_dev_verbs_sync_scope {
	DOCA_GPUNETIO_VERBS_SYNC_SCOPE_SYS = 0,
	DOCA_GPUNETIO_VERBS_SYNC_SCOPE_GPU = 1,
	DOCA_GPUNETIO_VERBS_SYNC_SCOPE_CTA = 2,
};

enum doca_gpu_dev_verbs_signal_op {
	DOCA_GPUNETIO_VERBS_SIGNAL_OP_ADD = 0,
};

/* The WQE index an operation was posted at: its CQE's index too (every WQE asks for one). */
typedef uint64_t doca_gpu_dev_verbs_ticket_t;

/* A memory region's address and key (the key big-endian, as DOCA's samples pass it). */
struct doca_gpu_dev_verbs_addr {
	uint64_t addr;
	uint32_t key;
};

/* A CQ of the QP. 48 bytes. */
struct doca_gpu_dev_verbs_cq {
	uint64_t cqe_daddr; /*  0 2^m 64-byte CQEs */
	uint64_t dbrec;	    /*  8 consumer index record (big-endian u32) */
	uint64_t cqe_ci;    /* 16 CQEs consumed */
	uint64_t cqe_rsvd;  /* 24 reserved for pollers */
	uint32_t cq_num;    /* 32 */
	uint32_t cqe_num;   /* 36 2^m */
	uint32_t cqe_mask;  /* 40 */
	int32_t lock;	    /* 44 */
};

/* An RC QP driven from the GPU. 216 bytes; offsets in the comments. */
struct doca_gpu_dev_verbs_qp {
	uint64_t sq_rsvd_index;	 /*   0 send WQE slots before this one are reserved */
	uint64_t sq_ready_index; /*   8 ... and written */
	uint64_t sq_wqe_pi;	 /*  16 the producer index submitted */
	uint64_t sq_wqe_daddr;	 /*  24 send ring: 2^n 64-byte WQEBBs */
	uint64_t sq_dbrec;	 /*  32 send counter (big-endian u32) */
	uint64_t sq_db;		 /*  40 UAR doorbell register (GPU_SM_DB), else 0 */
	uint64_t cpu_proxy_db;	 /*  48 the CPU proxy's slot (CPU_PROXY), else 0 */
	uint64_t rq_rsvd_index;	 /*  56 receive WQE slots before this one are reserved */
	uint64_t rq_wqe_pi;	 /*  64 receive WQEs posted */
	uint64_t rq_wqe_daddr;	 /*  72 receive ring */
	uint64_t rq_dbrec;	 /*  80 receive counter (big-endian u32) */
	uint32_t sq_num;	 /*  88 the QP number */
	uint32_t sq_num_shift8;	 /*  92 */
	uint32_t sq_wqe_mask;	 /*  96 */
	uint32_t rq_wqe_mask;	 /* 100 */
	uint32_t rcv_wqe_size;	 /* 104 bytes of a receive WQE (16 per scatter entry) */
	uint32_t nic_handler;	 /* 108 CPU_PROXY or GPU_SM_DB (never AUTO) */
	int32_t sq_lock;	 /* 112 */
	int32_t rq_lock;	 /* 116 */
	struct doca_gpu_dev_verbs_cq cq_sq; /* 120 */
	struct doca_gpu_dev_verbs_cq cq_rq; /* 168 */
};

#endif /* DOCA_GPUNETIO_VERBS_DEF_H */
