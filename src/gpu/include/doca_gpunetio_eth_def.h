/*
 * mlx5-dpa: GPUNetIO Ethernet device definitions (constants, enums, the queue handles).
 *
 * Written for mlx5-dpa from NVIDIA's public GPUNetIO API reference (names and values of the
 * enums and return codes); the handle layouts are this project's own, filled in by the host
 * side (`mlx5_dpa::gpu`), and their offsets are part of its contract (checked by its tests).
 *
 * Builds three ways: with nvcc, with NVRTC at run time (no system headers), and as plain host
 * C++ (g++ or clang++) where the CUDA built-ins are stood in for by host atomics, so that a
 * kernel's send logic can run on CPU threads against the device model.
 */
#ifndef DOCA_GPUNETIO_ETH_DEF_H
#define DOCA_GPUNETIO_ETH_DEF_H

#if defined(__CUDACC_RTC__)
/* NVRTC has no system headers. */
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef int int32_t;
typedef unsigned long long uint64_t;
typedef unsigned long long uintptr_t;
typedef decltype(sizeof(0)) size_t;
#else
#include <stddef.h>
#include <stdint.h>
#endif

#if !defined(__CUDACC__) && !defined(__CUDACC_RTC__)
/* Host build: the CUDA qualifiers and built-ins this header set uses, for CPU threads. */
#define MLX5_GPUNETIO_HOST_BUILD 1
#include <time.h>
#define __device__
#define __global__
#define __forceinline__ inline __attribute__((always_inline))
#define __inline__ inline
static inline void __threadfence(void) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
static inline void __threadfence_block(void) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
static inline void __threadfence_system(void) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
static inline unsigned long long atomicAdd(unsigned long long *p, unsigned long long v)
{
	return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);
}
static inline unsigned long long atomicMax(unsigned long long *p, unsigned long long v)
{
	unsigned long long old = __atomic_load_n(p, __ATOMIC_SEQ_CST);
	while (old < v && !__atomic_compare_exchange_n(p, &old, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
		;
	return old;
}
static inline int atomicCAS(int *p, int expected, int desired)
{
	__atomic_compare_exchange_n(p, &expected, desired, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
	return expected;
}
static inline int atomicExch(int *p, int v) { return __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST); }
#endif

/* DOCA return codes. */
#include "doca_error.h"

/* Sizes and opcodes of the mlx5 send path (PRM; rdma-core mlx5dv.h). */
#define DOCA_GPUNETIO_ETH_WARP_SIZE 32
#define DOCA_GPUNETIO_ETH_WQE_PI_MASK 0xFFFF   /* 16-bit WQE counter */
#define DOCA_GPUNETIO_ETH_CQE_CI_MASK 0xFFFFFF /* 24-bit CQ consumer index */
#define DOCA_GPUNETIO_ETH_CQE_SIZE 64
#define DOCA_GPUNETIO_ETH_MLX5_WQE_SHIFT 6 /* 64-byte WQEBB */
#define DOCA_GPUNETIO_ETH_WQE_IDX_SHIFT 8
#define DOCA_GPUNETIO_ETH_MLX5_OPCODE_SEND 0x0a
#define DOCA_GPUNETIO_ETH_MLX5_CQE_OPCODE_SHIFT 4
#define DOCA_GPUNETIO_ETH_MLX5_CQE_REQ_ERR 0x0d
#define DOCA_GPUNETIO_ETH_MLX5_CQE_RESP_ERR 0x0e
#define DOCA_GPUNETIO_ETH_MLX5_CQE_INVALID 0x0f
/* fm_ce_se: a CQE always (MLX5_WQE_CTRL_CQ_UPDATE), or on the first error only. */
#define DOCA_GPUNETIO_ETH_CTRL_CQ_UPDATE 0x08
#define DOCA_GPUNETIO_ETH_CTRL_CQ_FIRST_ERR 0x04
/* The L2 header bytes a send WQE carries inline (MLX5_ETH_L2_INLINE_HEADER_SIZE). */
#define DOCA_GPUNETIO_ETH_L2_INLINE 18

/* Send flags. */
enum doca_gpu_eth_send_flags {
	DOCA_GPUNETIO_ETH_SEND_FLAG_NONE = 0,	     /* a CQE only if the send fails */
	DOCA_GPUNETIO_ETH_SEND_FLAG_NOTIFY = 1 << 0, /* a CQE when the send is done */
};

/* How a completion wait waits. */
enum doca_gpu_dev_eth_wait_flags {
	DOCA_GPUNETIO_ETH_WAIT_FLAG_NB = 0, /* look once */
	DOCA_GPUNETIO_ETH_WAIT_FLAG_B = 1,  /* wait until done (or an error CQE) */
};

/* Who takes part in a high-level call. */
enum doca_gpu_dev_eth_exec_scope {
	DOCA_GPUNETIO_ETH_EXEC_SCOPE_THREAD = 0,
	DOCA_GPUNETIO_ETH_EXEC_SCOPE_WARP = 1,
	DOCA_GPUNETIO_ETH_EXEC_SCOPE_BLOCK = 2,
};

/* How far a fence reaches. */
enum doca_gpu_dev_eth_sync_scope {
	DOCA_GPUNETIO_ETH_SYNC_SCOPE_SYS = 0,
	DOCA_GPUNETIO_ETH_SYNC_SCOPE_GPU = 1,
	DOCA_GPUNETIO_ETH_SYNC_SCOPE_CTA = 2,
};

/* Who shares a queue: one thread, one block, or the whole GPU (atomics then). */
enum doca_gpu_dev_eth_resource_sharing_mode {
	DOCA_GPUNETIO_ETH_RESOURCE_SHARING_MODE_EXCLUSIVE = 0,
	DOCA_GPUNETIO_ETH_RESOURCE_SHARING_MODE_CTA = 1,
	DOCA_GPUNETIO_ETH_RESOURCE_SHARING_MODE_GPU = 2,
};

/* Who rings the NIC's doorbell: AUTO takes what the host set up for the queue. */
enum doca_gpu_dev_eth_nic_handler {
	DOCA_GPUNETIO_ETH_NIC_HANDLER_AUTO = 0,
	DOCA_GPUNETIO_ETH_NIC_HANDLER_CPU_PROXY = 1,
	DOCA_GPUNETIO_ETH_NIC_HANDLER_GPU_SM_DB = 2,
};

/* Completion polling: every CQE of a range, or only its last. */
enum doca_gpu_dev_eth_cq_poll_mode {
	DOCA_GPUNETIO_ETH_CQ_POLL_ALL = 0,
	DOCA_GPUNETIO_ETH_CQ_POLL_LAST = 1,
};

/* Memory consistency for receives into GPU memory on pre-Hopper GPUs (only DISABLED here). */
enum doca_gpu_dev_eth_mcst_mode {
	DOCA_GPUNETIO_ETH_MCST_DISABLED = 0,
	DOCA_GPUNETIO_ETH_MCST_ENABLED = 1,
	DOCA_GPUNETIO_ETH_MCST_AUTO = 2,
};

/* Semaphore item states (the values of DOCA's public doca_gpunetio.h). */
enum doca_gpu_semaphore_status {
	DOCA_GPU_SEMAPHORE_STATUS_FREE = 0,
	DOCA_GPU_SEMAPHORE_STATUS_READY = 1,
	DOCA_GPU_SEMAPHORE_STATUS_DONE = 2,
	DOCA_GPU_SEMAPHORE_STATUS_HOLD = 3,
	DOCA_GPU_SEMAPHORE_STATUS_ERROR = 4,
	DOCA_GPU_SEMAPHORE_STATUS_EXIT = 5,
};

/* The WQE index a send was posted at. */
typedef uint64_t doca_gpu_dev_eth_ticket_t;

/*
 * An Ethernet send queue driven from the GPU. Filled in by the host (mlx5_dpa::gpu::EthTxq);
 * the GPU updates the counters. 120 bytes; offsets in the comments.
 */
struct doca_gpu_eth_txq {
	uint64_t wqe_addr;	 /*   0 the ring: 2^n 64-byte WQEBBs */
	uint64_t wqe_db_rec;	 /*   8 the send counter of the doorbell record (big-endian u32) */
	uint64_t wqe_db;	 /*  16 the UAR doorbell register (GPU_SM_DB), else 0 */
	uint64_t cpu_proxy_db;	 /*  24 the CPU proxy's slot (u64 producer index), else 0 */
	uint64_t cqe_addr;	 /*  32 the CQ ring: 2^m 64-byte CQEs */
	uint64_t cq_db_rec;	 /*  40 the CQ consumer index record (big-endian u32) */
	uint64_t sq_rsvd_index;	 /*  48 WQE slots before this one are reserved */
	uint64_t sq_ready_index; /*  56 WQE slots before this one are written */
	uint64_t wqe_pi;	 /*  64 the producer index submitted to the NIC */
	uint64_t cqe_ci;	 /*  72 CQEs consumed */
	uint64_t cq_rsvd_index;	 /*  80 CQEs reserved by pollers */
	uint32_t sq_num_shift8;	 /*  88 SQ number << 8 */
	uint32_t wqe_mask;	 /*  92 2^n - 1 */
	uint32_t cqe_num;	 /*  96 2^m */
	uint32_t cqe_mask;	 /* 100 2^m - 1 */
	uint32_t nic_handler;	 /* 104 enum doca_gpu_dev_eth_nic_handler set up (never AUTO) */
	int32_t lock;		 /* 108 submit lock */
	int32_t cq_lock;	 /* 112 poll lock */
	uint32_t reserved;	 /* 116 */
};

/*
 * An Ethernet receive queue driven from the GPU: one receive WQE per stride of the packet
 * buffer. Filled in by the host (mlx5_dpa::gpu::EthRxq). 88 bytes.
 */
struct doca_gpu_eth_rxq {
	uint64_t pkt_addr;   /*  0 the packet buffer: pkt_num strides of max_pkt_sz bytes */
	uint64_t pkt_num;    /*  8 strides (= receive WQEs) */
	uint64_t max_pkt_sz; /* 16 stride bytes */
	uint64_t wqe_db_rec; /* 24 the receive counter of the doorbell record (big-endian u32) */
	uint64_t wqe_pi;     /* 32 receive WQEs posted */
	uint64_t cqe_addr;   /* 40 the CQ ring: 2^m 64-byte CQEs */
	uint64_t cq_db_rec;  /* 48 the CQ consumer index record */
	uint64_t cqe_ci;     /* 56 CQEs consumed = packets received */
	uint32_t cqe_num;    /* 64 2^m */
	uint32_t cqe_mask;   /* 68 2^m - 1 */
	uint32_t pkt_mkey;   /* 72 the buffer's key, big-endian */
	uint32_t reserved;   /* 76 */
	uint64_t bufs;	     /* 80 pkt_num struct doca_gpu_buf, one per stride (DOCA 2.x API) */
};

/*
 * DOCA 2.x: a GPU buffer (32 bytes) and a buffer array (16 bytes), filled in by the host
 * (mlx5_dpa::gpu::GpuBuf, BufArr, EthRxq). Kernels use the accessors of
 * doca_gpunetio_dev_buf.cuh. A received stride's buffer also holds what the receive read of its
 * packet: the length and the CQE's timestamp.
 */
struct doca_gpu_buf {
	uint64_t addr;	    /*  0 */
	uint32_t mkey;	    /*  8 big-endian */
	uint32_t bytes;	    /* 12 a received packet's length */
	uint64_t timestamp; /* 16 a received packet's timestamp */
	uint64_t reserved;  /* 24 */
};

struct doca_gpu_buf_arr {
	uint64_t bufs; /* 0 num struct doca_gpu_buf */
	uint64_t num;  /* 8 */
};

/* DOCA 2.x send flags and completion wait modes (values of DOCA 2.x's public headers). */
enum doca_gpu_send_flags {
	DOCA_GPU_SEND_FLAG_NONE = 0,
	DOCA_GPU_SEND_FLAG_NOTIFY = 1 << 0,
};

enum doca_gpu_dev_eth_txq_wait_flags {
	DOCA_GPU_ETH_TXQ_WAIT_FLAG_NB = 0,
	DOCA_GPU_ETH_TXQ_WAIT_FLAG_B = 1,
};

/* Per received packet, with enable_attributes. */
struct doca_gpu_dev_eth_rxq_attr {
	uint32_t bytes; /* its length */
	uint32_t reserved;
};

/* A semaphore item: status, then packet info. 16 bytes. */
struct doca_gpu_semaphore_item {
	uint32_t status; /* enum doca_gpu_semaphore_status */
	uint32_t num_packets;
	uint64_t doca_buf_idx;
};

/* A semaphore as kernels see it. Filled in by the host (mlx5_dpa::gpu::Semaphore). 24 bytes. */
struct doca_gpu_semaphore_gpu {
	uint64_t items;		   /*  0 num_items items */
	uint64_t custom_info;	   /*  8 num_items blocks of custom_info_size bytes, or 0 */
	uint32_t num_items;	   /* 16 */
	uint32_t custom_info_size; /* 20 */
};

/* A send WQE of one WQEBB: control, Ethernet with the L2 header inline, one data segment. */
struct doca_gpu_dev_eth_txq_wqe {
	uint8_t bytes[64];
};

#endif /* DOCA_GPUNETIO_ETH_DEF_H */
