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

/* NVIDIA's public GPUNetIO names (NVIDIA-DOCA/gpunetio `doca_gpunetio_verbs_def.h`; values
 * from there, text this project's). */
#define DOCA_GPUNETIO_VERBS_WARP_SIZE 32
#define DOCA_GPUNETIO_VERBS_WARP_FULL_MASK 0xffffffffu
#define DOCA_GPUNETIO_VERBS_CQE_SIZE 64
#define DOCA_GPUNETIO_VERBS_WQE_IDX_SHIFT 8
/* Keys reach the device byte-swapped already (as struct doca_gpu_dev_verbs_addr's). */
#define DOCA_GPUNETIO_VERBS_MKEY_SWAPPED 1

/* The control segment's fm_ce_se byte: completion, solicited event, fence modes. */
enum doca_gpu_dev_verbs_wqe_ctrl_flags {
	DOCA_GPUNETIO_IB_MLX5_WQE_CTRL_CQ_ERROR_UPDATE = 0x00,
	DOCA_GPUNETIO_IB_MLX5_WQE_CTRL_SOLICITED = 0x02,
	DOCA_GPUNETIO_IB_MLX5_WQE_CTRL_CQ_FIRST_CQE_ERROR = 0x04,
	DOCA_GPUNETIO_IB_MLX5_WQE_CTRL_CQ_UPDATE = 0x08,
	DOCA_GPUNETIO_IB_MLX5_WQE_CTRL_INITIATOR_SMALL_FENCE = 0x20,
	DOCA_GPUNETIO_IB_MLX5_WQE_CTRL_FENCE = 0x40,
	DOCA_GPUNETIO_IB_MLX5_WQE_CTRL_CQ_UPDATE_FENCE = 0x48,
	DOCA_GPUNETIO_IB_MLX5_WQE_CTRL_STRONG_ORDERING = 0x60,
};

/* What doca_gpu_dev_verbs_submit may skip or add (bits, or-ed). */
enum doca_gpu_dev_verbs_gpu_code_opt {
	DOCA_GPUNETIO_VERBS_GPU_CODE_OPT_DEFAULT = 0,
	DOCA_GPUNETIO_VERBS_GPU_CODE_OPT_ASYNC_STORE_RELEASE = 1 << 0,
	DOCA_GPUNETIO_VERBS_GPU_CODE_OPT_SKIP_AVAILABILITY_CHECK = 1 << 1,
	DOCA_GPUNETIO_VERBS_GPU_CODE_OPT_SKIP_DB_RINGING = 1 << 2,
	DOCA_GPUNETIO_VERBS_GPU_CODE_OPT_CPU_PROXY_UPDATE_PI = 1 << 3,
};

/* How a QP's send doorbell record is kept (a host setting; the model's QPs keep a valid one). */
enum doca_gpu_verbs_send_dbr_mode_ext {
	DOCA_GPUNETIO_VERBS_SEND_DBR_MODE_EXT_VALID_DBR = 0,
	DOCA_GPUNETIO_VERBS_SEND_DBR_MODE_EXT_NO_DBR_HW = 1,
	DOCA_GPUNETIO_VERBS_SEND_DBR_MODE_EXT_NO_DBR_SW_EMULATED = 2,
};

/* A GID as DOCA Verbs holds it (16 bytes). */
struct doca_verbs_gid {
	uint8_t raw[16];
};

/* One 64-byte send WQE basic block, as kernels point at it (doca_gpu_dev_verbs_get_wqe_ptr). */
struct doca_gpu_dev_verbs_wqe {
	union {
		uint8_t inl_data[64];
		uint64_t qw[8];
	};
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
