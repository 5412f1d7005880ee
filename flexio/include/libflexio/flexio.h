/*
 * libflexio host API, as implemented by mlx5-dpa (flexio/ in the mlx5-dpa repository).
 * SPDX-License-Identifier: MIT OR Apache-2.0
 *
 * Written from the public FlexIO host API (FlexIO SDK 24.01, `libflexio/flexio.h`): the same
 * names, types, structure layouts and return codes, so that a program written for NVIDIA's
 * libflexio compiles against this header and links `-lflexio` unchanged. The text and the
 * comments are this project's. docs/flexio-c.md lists what is implemented and how it
 * behaves; a function this header does not declare is not implemented yet.
 */

#ifndef _FLEXIO_SDK_H_
#define _FLEXIO_SDK_H_

#include <infiniband/verbs.h>
#include <infiniband/mlx5dv.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <libflexio/flexio_ver.h>

/*
 * The host API versions this library implements (for information: programs state theirs with
 * FLEXIO_VER_USED, see flexio_ver.h, and flexio_version_set). A stated version above the
 * current one is an error, the last supported one warns.
 */
#define FLEXIO_CURRENT_VERSION FLEXIO_VER(24, 10, 0)
#define FLEXIO_LAST_SUPPORTED_VERSION FLEXIO_VER(24, 1, 0)

#ifdef FLEXIO_VER_USED
#if FLEXIO_VER_USED == FLEXIO_VER_LATEST
#undef FLEXIO_VER_USED
#define FLEXIO_VER_USED FLEXIO_CURRENT_VERSION
#endif
#if FLEXIO_VER_USED < FLEXIO_LAST_SUPPORTED_VERSION
#error "FLEXIO_VER_USED is older than FLEXIO_LAST_SUPPORTED_VERSION: move the program to a newer FlexIO API"
#elif FLEXIO_VER_USED == FLEXIO_LAST_SUPPORTED_VERSION
#warning "FLEXIO_VER_USED is the oldest version still supported: support for it ends with the next version"
#elif FLEXIO_VER_USED > FLEXIO_CURRENT_VERSION
#error "FLEXIO_VER_USED is newer than this library (FLEXIO_CURRENT_VERSION)"
#endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The DPA of a BlueField-3: 16 cores of 16 execution units, 2 of them kept by the DPA OS. */
#define PHY_CORES_NUM 16
#define EUS_PER_CORE 16
#define EUS_LIMIT (PHY_CORES_NUM * EUS_PER_CORE)
#define OS_RESERVED_EUS 2
#define USER_EUS_LIMIT (EUS_LIMIT - OS_RESERVED_EUS)
#define EU_BITMASK_LEN (EUS_LIMIT / 8)

/* A DPA address. */
typedef uint64_t flexio_uintptr_t;

/* Device messages: chunk size (log2 bytes), stream count, the default stream, the levels. */
#define FLEXIO_MSG_DEV_LOG_DATA_CHUNK_BSIZE 9
#define FLEXIO_MSG_DEV_MAX_STREAMS_AMOUNT 255
#define FLEXIO_MSG_DEV_DEFAULT_STREAM_ID 0
#define FLEXIO_MSG_DEV_NO_PRINT 0
#define FLEXIO_MSG_DEV_ALWAYS_PRINT 1
#define FLEXIO_MSG_DEV_ERROR 2
#define FLEXIO_MSG_DEV_WARN 3
#define FLEXIO_MSG_DEV_INFO 4
#define FLEXIO_MSG_DEV_DEBUG 5

typedef uint8_t flexio_msg_dev_level;

/* What a CQ is attached to. */
enum {
	FLEXIO_CQ_ELEMENT_TYPE_DPA_THREAD = 0x0,
	FLEXIO_CQ_ELEMENT_TYPE_EXT_EQ = 0x2,
	FLEXIO_CQ_ELEMENT_TYPE_NON_DPA_CQ = 0x8,
	FLEXIO_CQ_ELEMENT_TYPE_DPA_MSIX_EMULATED_CQ = 0x9,
};

/* What every call returns. */
typedef enum {
	FLEXIO_STATUS_SUCCESS = 0,
	FLEXIO_STATUS_FAILED = 1,
	FLEXIO_STATUS_TIMEOUT = 2,
	FLEXIO_STATUS_FATAL_ERR = 3,
} flexio_status;

/* A process's error state (flexio_err_status_get). */
enum flexio_err_status {
	FLEXIO_DEV_NO_ERROR = 0,
	FLEXIO_DEV_FATAL_ERROR = 1,
	FLEXIO_DEV_USER_ERROR = 2,
};

/* QP service types (the PRM's qpc.st). */
enum flexio_qp_transport_type {
	FLEXIO_QPC_ST_RC = 0x0,
	FLEXIO_QPC_ST_UC = 0x1,
	FLEXIO_QPC_ST_UD = 0x2,
	FLEXIO_QPC_ST_XRC = 0x3,
	FLEXIO_QPC_ST_IBL2 = 0x4,
	FLEXIO_QPC_ST_DCI = 0x5,
	FLEXIO_QPC_ST_QP0 = 0x7,
	FLEXIO_QPC_ST_QP1 = 0x8,
	FLEXIO_QPC_ST_RAW_DATAGRAM = 0x9,
	FLEXIO_QPC_ST_REG_UMR = 0xc,
	FLEXIO_QPC_ST_DC_CNAK = 0x10,
};

/* CQE compression and moderation modes. */
enum flexio_cqe_comp_type {
	FLEXIO_CQE_COMP_NONE = 0x0,
	FLEXIO_CQE_COMP_BASIC = 0x1,
	FLEXIO_CQE_COMP_ENH = 0x2,
};

enum flexio_cq_period_mode {
	FLEXIO_CQ_PERIOD_MODE_EVENT = 0x0,
	FLEXIO_CQ_PERIOD_MODE_CQE = 0x1,
};

typedef uint32_t flexio_uar_device_id;

/* A device function as the host names it: the address of its host stub. */
typedef void(flexio_func_t)(void);

/* Handles. Their contents are the library's. */
struct flexio_process;
struct flexio_window;
struct flexio_outbox;
struct flexio_event_handler;
struct flexio_thread;
struct flexio_cq;
struct flexio_rq;
struct flexio_rmp;
struct flexio_sq;
struct flexio_qp;
struct flexio_mkey;
struct flexio_uar;
struct flexio_app;
struct flexio_cmdq;
struct flexio_msg_stream;

/* Where a queue's memory is: DPA memory (the default) or host memory in a UMEM. */
enum flexio_memtype {
	FLEXIO_MEMTYPE_DPA = 0,
	FLEXIO_MEMTYPE_HOST = 1,
};

struct flexio_qmem {
	enum flexio_memtype memtype;
	union {
		flexio_uintptr_t daddr;   /* FLEXIO_MEMTYPE_DPA */
		uint64_t humem_offset;    /* FLEXIO_MEMTYPE_HOST: offset in the UMEM */
	};
	uint32_t umem_id;
};

/* A process's heap (flexio_process_mem_info_get). */
struct flexio_heap_mem_info {
	uint64_t base_addr;
	size_t size;
	size_t requested;
	size_t allocated;
};

struct flexio_cq_attr {
	uint8_t log_cq_depth;
	uint8_t element_type;
	union {
		uint32_t emulated_eqn;
		struct flexio_thread *thread;
	};
	uint32_t uar_id;
	void *uar_base_addr;
	enum flexio_cqe_comp_type cqe_comp_type;
	enum flexio_cq_period_mode cq_period_mode;
	uint16_t cq_period;
	uint16_t cq_max_count;
	bool no_arm;
	bool cc;
	uint8_t overrun_ignore;
	uint8_t always_armed;
	struct flexio_qmem cq_ring_qmem;
	flexio_uintptr_t cq_dbr_daddr;
};

struct flexio_wq_sq_attr {
	uint8_t allow_multi_pkt_send_wqe;
};

enum flexio_wq_type {
	FLEXIO_WQ_TYPE_LINKED_LIST = 0x0,
	FLEXIO_WQ_TYPE_CYCLIC = 0x1,
};

struct flexio_wq_rq_attr {
	enum flexio_wq_type wq_type;
};

struct flexio_wq_attr {
	uint8_t log_wq_stride; /* 0 means 4 (16-byte entries) */
	uint8_t log_wq_depth;
	uint32_t uar_id;
	uint32_t user_index;
	struct ibv_pd *pd;
	union {
		struct flexio_wq_sq_attr sq;
		struct flexio_wq_rq_attr rq;
	};
	struct flexio_qmem wq_ring_qmem;
	struct flexio_qmem wq_dbr_qmem;
};

struct flexio_process_attr {
	struct ibv_pd *pd; /* NULL: the process makes its own */
	int en_pcc;
};

enum flexio_affinity_type {
	FLEXIO_AFFINITY_NONE = 0,
	FLEXIO_AFFINITY_STRICT,
	FLEXIO_AFFINITY_GROUP,
};

struct flexio_affinity {
	enum flexio_affinity_type type;
	uint32_t id; /* the EU (STRICT) or EU group (GROUP) */
};

struct flexio_event_handler_attr {
	flexio_func_t *host_stub_func;
	int continuable;
	uint64_t arg;
	flexio_uintptr_t thread_local_storage_daddr;
	struct flexio_affinity affinity;
};

enum flexio_qp_op_types {
	FLEXIO_QP_WR_RDMA_WRITE = 0x4,
	FLEXIO_QP_WR_RDMA_READ = 0x8,
	FLEXIO_QP_WR_ATOMIC_CMP_AND_SWAP = 0x10,
};

struct flexio_qp_attr_opt_param_mask {
	bool qp_access_mask;
	bool min_rnr_nak_timer;
};

enum flexio_qp_qpc_mtu {
	FLEXIO_QP_QPC_MTU_BYTES_256 = 0x1,
	FLEXIO_QP_QPC_MTU_BYTES_512 = 0x2,
	FLEXIO_QP_QPC_MTU_BYTES_1K = 0x3,
	FLEXIO_QP_QPC_MTU_BYTES_2K = 0x4,
	FLEXIO_QP_QPC_MTU_BYTES_4K = 0x5,
};

enum {
	FLEXIO_QP_QPC_RQ_TYPE_REGULAR = 0x0,
	FLEXIO_QP_QPC_RQ_TYPE_SRQ_RMP_XRC_SRQ_XRQ = 0x1,
	FLEXIO_QP_QPC_RQ_TYPE_ZERO_SIZE_RQ = 0x3,
};

enum flexio_qp_state {
	FLEXIO_QP_STATE_RST = 0x0,
	FLEXIO_QP_STATE_INIT = 0x1,
	FLEXIO_QP_STATE_RTR = 0x2,
	FLEXIO_QP_STATE_RTS = 0x3,
	FLEXIO_QP_STATE_ERR = 0x6,
};

struct flexio_qp_attr {
	uint32_t transport_type;
	uint32_t uar_id;
	uint32_t user_index;
	int qp_access_mask;
	int ops_flag;
	struct ibv_pd *pd;
	int log_sq_depth;
	int no_sq;
	uint32_t sq_cqn;
	int log_rq_depth;
	int rq_type;
	uint32_t rq_cqn;
	uint32_t rmpqn;
	struct flexio_qmem qp_wq_buff_qmem;
	struct flexio_qmem qp_wq_dbr_qmem;
	/* What flexio_qp_modify sets. */
	enum flexio_qp_state next_state;
	uint32_t remote_qp_num;
	uint8_t gid_table_index;
	uint8_t fl;
	uint8_t *dest_mac;
	union ibv_gid rgid_or_rip;
	uint16_t rlid;
	uint32_t min_rnr_nak_timer;
	enum flexio_qp_qpc_mtu path_mtu;
	uint8_t retry_count;
	uint8_t vhca_port_num;
	uint32_t next_rcv_psn;
	uint32_t next_send_psn;
	uint16_t udp_sport;
	uint8_t grh;
	uint8_t log_rra_max;
	uint8_t log_sra_max;
	uint8_t isolate_vl_tc;
};

struct flexio_mkey_attr {
	struct ibv_pd *pd;
	flexio_uintptr_t daddr;
	size_t len;
	int access;
};

enum flexio_cmdq_state {
	FLEXIO_CMDQ_STATE_PENDING = 0,
	FLEXIO_CMDQ_STATE_RUNNING = 1,
};

struct flexio_cmdq_attr {
	int workers;
	int batch_size;
	enum flexio_cmdq_state state;
};

/* An application: its device ELF, as DPACC's generated constructor hands it over. */
struct flexio_app_attr {
	const char *app_name;
	void *app_ptr;
	size_t app_bsize;
	char *app_sig_sec_name;
};

typedef enum flexio_log_dev_sync_mode {
	FLEXIO_LOG_DEV_SYNC_MODE_SYNC = 0,   /* a host thread prints as messages arrive */
	FLEXIO_LOG_DEV_SYNC_MODE_ASYNC = 1,  /* messages wait for flexio_msg_stream_flush */
	FLEXIO_LOG_DEV_SYNC_MODE_BATCH = 2,  /* as ASYNC */
	FLEXIO_LOG_DEV_SYNC_MODE_TRACER = 3, /* binary records printed with tracer_msg_formats */
} flexio_msg_dev_sync_mode;

enum flexio_tracer_transport {
	FLEXIO_TRACER_TRANSPORT_QP = 0,
	FLEXIO_TRACER_TRANSPORT_WINDOW = 1,
};

typedef struct flexio_log_dev_attr {
	struct flexio_uar *uar; /* ignored: the process's UAR is used */
	size_t data_bsize;      /* a power of two, at least 2 KiB */
	flexio_msg_dev_sync_mode sync_mode;
	char *stream_name;
	flexio_msg_dev_level level;
	struct flexio_affinity mgmt_affinity;
	enum flexio_tracer_transport tracer_mode;
	char **tracer_msg_formats; /* NULL-terminated; a record's format number indexes it */
} flexio_msg_stream_attr_t;

struct flexio_outbox_attr {
	struct flexio_uar *uar; /* ignored: the process's UAR is used */
	uint32_t en_pcc;
};

/* Longest application or device function name. */
#define FLEXIO_MAX_NAME_LEN (256)

/* Packs the arguments of a call into the argument buffer (DPACC generates one per function). */
typedef void(flexio_func_arg_pack_fn_t)(void *argbuf, va_list ap);

/* Host logging levels. */
typedef enum flexio_log_lvl {
	FLEXIO_LOG_LVL_ERR = 0,
	FLEXIO_LOG_LVL_WARN = 1,
	FLEXIO_LOG_LVL_INFO = 2,
	FLEXIO_LOG_LVL_DBG = 3,
} flexio_log_lvl_t;

/* Applications and their functions (DPACC's generated code calls these at start). */
flexio_status flexio_app_create(struct flexio_app_attr *fattr, struct flexio_app **app);
flexio_status flexio_app_destroy(struct flexio_app *app);
flexio_status flexio_app_get_list(struct flexio_app ***app_list, uint32_t *num_apps);
flexio_status flexio_app_list_free(struct flexio_app **apps_list);
flexio_status flexio_app_get_elf(struct flexio_app *app, uint64_t *bin_buff, size_t bin_size);
const char *flexio_app_get_name(struct flexio_app *app);
size_t flexio_app_get_elf_size(struct flexio_app *app);
flexio_status flexio_func_pup_register(struct flexio_app *app, const char *dev_func_name,
				       const char *dev_unpack_func_name,
				       flexio_func_t *host_stub_func_addr, size_t argbuf_size,
				       flexio_func_arg_pack_fn_t *host_pack_func);
flexio_status flexio_func_register(struct flexio_app *app, const char *dev_func_name,
				   flexio_func_t **out_func);
flexio_status flexio_func_get_register_info(struct flexio_app *app,
					    flexio_func_t *host_stub_func_addr, uint32_t *pup,
					    char *dev_func_name, char *dev_unpack_func_name,
					    size_t func_name_size, size_t *argbuf_size,
					    flexio_func_arg_pack_fn_t **host_pack_func,
					    flexio_uintptr_t *dev_func_addr,
					    flexio_uintptr_t *dev_unpack_func_addr);

/* A failed process's crash in text, printed and written to <outfile or flexio_dev>.<id>.crash. */
flexio_status flexio_crash_data(struct flexio_process *process, const char *outfile);
/* A descriptor that becomes readable once the process has failed (valid until destroy). */
int flexio_err_handler_fd(struct flexio_process *process);

/* Processes. */
flexio_status flexio_process_create(struct ibv_context *ibv_ctx, struct flexio_app *app,
				    const struct flexio_process_attr *process_attr,
				    struct flexio_process **process_ptr);
flexio_status flexio_process_destroy(struct flexio_process *process);
flexio_status flexio_process_call(struct flexio_process *process, flexio_func_t *host_func,
				  uint64_t *func_ret, ...);
enum flexio_err_status flexio_err_status_get(struct flexio_process *process);
flexio_status flexio_coredump_create(struct flexio_process *process, const char *outfile);
uint32_t flexio_process_get_dumem_id(struct flexio_process *process);
struct flexio_uar *flexio_process_get_uar(struct flexio_process *process);
struct ibv_pd *flexio_process_get_pd(struct flexio_process *process);
uint64_t flexio_process_udbg_token_get(struct flexio_process *process);
uint32_t flexio_uar_get_id(struct flexio_uar *uar);
/* A UAR page of the process's device for its queues; only these are destroyed by the caller. */
flexio_status flexio_uar_create(struct flexio_process *process, struct flexio_uar **flexio_uar);
flexio_status flexio_uar_destroy(struct flexio_uar *uar);

/* DPA memory of a process. */
flexio_status flexio_buf_dev_alloc(struct flexio_process *process, size_t buff_bsize,
				   flexio_uintptr_t *dest_daddr_p);
flexio_status flexio_buf_dev_free(struct flexio_process *process, flexio_uintptr_t daddr);
flexio_status flexio_host2dev_memcpy(struct flexio_process *process, void *src_haddr,
				     size_t buff_bsize, flexio_uintptr_t dest_daddr);
flexio_status flexio_buf_dev_memset(struct flexio_process *process, int value,
				    size_t buff_bsize, flexio_uintptr_t dest_daddr);
flexio_status flexio_copy_from_host(struct flexio_process *process, void *src_haddr,
				    size_t buff_bsize, flexio_uintptr_t *dest_daddr_p);
flexio_status flexio_process_mem_info_get(const struct flexio_process *process,
					  struct flexio_heap_mem_info *info);

/* Memory keys over DPA memory. */
flexio_status flexio_device_mkey_create(struct flexio_process *process,
					struct flexio_mkey_attr *fattr, struct flexio_mkey **mkey);
flexio_status flexio_device_mkey_destroy(struct flexio_mkey *mkey);
uint32_t flexio_mkey_get_id(struct flexio_mkey *mkey);

/*
 * RC QPs: created in RST with their ring and doorbell record where the attributes say;
 * flexio_qp_modify moves one step to fattr->next_state (RST -> INIT -> RTR -> RTS,
 * RTS -> RTS by `mask`, any -> ERR or RST). Only RC, with an SQ and a regular or zero-size RQ.
 */
flexio_status flexio_qp_create(struct flexio_process *process, struct ibv_context *ibv_ctx,
			       struct flexio_qp_attr *qp_fattr, struct flexio_qp **qp_ptr);
flexio_status flexio_qp_modify(struct flexio_qp *qp, struct flexio_qp_attr *fattr,
			       struct flexio_qp_attr_opt_param_mask *mask);
flexio_status flexio_qp_destroy(struct flexio_qp *qp);
uint32_t flexio_qp_get_qp_num(struct flexio_qp *qp);
enum flexio_qp_state flexio_qp_state_get(struct flexio_qp *qp);

/*
 * Windows: the DPA's view of host memory registered on `pd` (the caller's, kept alive by it);
 * device code selects one by the id flexio_window_get_id gives.
 */
flexio_status flexio_window_create(struct flexio_process *process, struct ibv_pd *pd,
				   struct flexio_window **window);
flexio_status flexio_window_destroy(struct flexio_window *window);
uint32_t flexio_window_get_id(struct flexio_window *window);

/*
 * Command queues: registered functions run in the background on `workers` DPA threads, each
 * taking up to `batch_size` tasks per activation. flexio_cmdq_task_add fails on a full queue;
 * flexio_cmdq_is_empty is 1 once every task added has run.
 */
flexio_status flexio_cmdq_create(struct flexio_process *process, struct flexio_cmdq_attr *fattr,
				 struct flexio_cmdq **cmdq);
flexio_status flexio_cmdq_task_add(struct flexio_cmdq *cmdq, flexio_func_t *host_func,
				   uint64_t arg);
flexio_status flexio_cmdq_state_running(struct flexio_cmdq *cmdq);
int flexio_cmdq_is_empty(struct flexio_cmdq *cmdq);
flexio_status flexio_cmdq_destroy(struct flexio_cmdq *cmdq);

/* Event handlers: a DPA thread running a device function on each activation. */
flexio_status flexio_event_handler_create(struct flexio_process *process,
					  struct flexio_event_handler_attr *fattr,
					  struct flexio_event_handler **event_handler_ptr);
flexio_status flexio_event_handler_destroy(struct flexio_event_handler *event_handler);
flexio_status flexio_event_handler_run(struct flexio_event_handler *event_handler,
				       uint64_t user_arg);
uint32_t flexio_event_handler_get_obj_id(struct flexio_event_handler *event_handler);
/* The id device code reads with flexio_dev_get_thread_id (here the same as the object id). */
uint32_t flexio_event_handler_get_id(struct flexio_event_handler *event_handler);
struct flexio_thread *flexio_event_handler_get_thread(struct flexio_event_handler *event_handler);

/* Queues a DPA program drives (ibv_ctx: NULL, the process's device). */
flexio_status flexio_cq_create(struct flexio_process *process, struct ibv_context *ibv_ctx,
			       const struct flexio_cq_attr *fattr, struct flexio_cq **cq);
flexio_status flexio_cq_destroy(struct flexio_cq *cq);
uint32_t flexio_cq_get_cq_num(struct flexio_cq *cq);
flexio_status flexio_sq_create(struct flexio_process *process, struct ibv_context *ibv_ctx,
			       uint32_t cq_num, const struct flexio_wq_attr *fattr,
			       struct flexio_sq **flexio_sq_ptr);
flexio_status flexio_sq_destroy(struct flexio_sq *flexio_sq);
uint32_t flexio_sq_get_wq_num(struct flexio_sq *sq);
flexio_status flexio_rq_create(struct flexio_process *process, struct ibv_context *ibv_ctx,
			       uint32_t cq_num, const struct flexio_wq_attr *fattr,
			       struct flexio_rq **flexio_rq_ptr);
flexio_status flexio_rq_destroy(struct flexio_rq *flexio_rq);
uint32_t flexio_rq_get_wq_num(struct flexio_rq *rq);
struct mlx5dv_devx_obj *flexio_rq_get_tir(struct flexio_rq *rq);
/* CQ moderation: CQE count and period (microseconds); period mode EVENT only. */
flexio_status flexio_cq_query_moderation(struct flexio_cq *cq, uint16_t *max_count,
					 uint16_t *period, uint16_t *mode);
flexio_status flexio_cq_modify_moderation(struct flexio_cq *cq, uint16_t max_count,
					  uint16_t period, uint16_t mode);
/* Moves an RQ from ready to error (its posted WQEs flush). */
flexio_status flexio_rq_set_err_state(struct flexio_rq *rq);
/* RMPs: shared receive queues for QPs (rq_type SRQ, rmpqn), cyclic or linked list. */
flexio_status flexio_rmp_create(struct flexio_process *process, struct ibv_context *ibv_ctx,
				const struct flexio_wq_attr *fattr, struct flexio_rmp **flexio_rmp_ptr);
flexio_status flexio_rmp_destroy(struct flexio_rmp *flexio_rmp);
uint32_t flexio_rmp_get_wq_num(struct flexio_rmp *rmp);

/* Outboxes. */
flexio_status flexio_outbox_create(struct flexio_process *process,
				   struct flexio_outbox_attr *fattr, struct flexio_outbox **outbox);
flexio_status flexio_outbox_destroy(struct flexio_outbox *outbox);
/* The UAR an outbox rings through: its process's. */
struct flexio_uar *flexio_outbox_get_uar(struct flexio_outbox *outbox);
uint32_t flexio_outbox_get_id(struct flexio_outbox *outbox);

/*
 * FlexIO's deprecated default-stream calls: flexio_log_dev_init makes a message stream to
 * `out` (as flexio_msg_stream_create) that the process's flexio_log_dev_flush and
 * flexio_log_dev_destroy act on; one per process.
 */
flexio_status flexio_log_dev_init(struct flexio_process *process,
				  flexio_msg_stream_attr_t *stream_fattr, FILE *out,
				  pthread_t *ppthread) __attribute__((deprecated));
flexio_status flexio_log_dev_flush(struct flexio_process *process) __attribute__((deprecated));
flexio_status flexio_log_dev_destroy(struct flexio_process *process) __attribute__((deprecated));

/* Messages from the device (flexio_dev_print and friends). */
flexio_status flexio_msg_stream_create(struct flexio_process *process,
				       flexio_msg_stream_attr_t *stream_fattr, FILE *out,
				       pthread_t *ppthread, struct flexio_msg_stream **stream);
flexio_status flexio_msg_stream_destroy(struct flexio_msg_stream *stream);
flexio_status flexio_msg_stream_flush(struct flexio_msg_stream *stream);
int flexio_msg_stream_get_id(struct flexio_msg_stream *stream);
flexio_status flexio_msg_stream_level_set(struct flexio_msg_stream *stream,
					  flexio_msg_dev_level level);

/*
 * The API version this program works with, stated once before any other call: FAILED for a
 * version below FLEXIO_LAST_SUPPORTED_VERSION, above FLEXIO_CURRENT_VERSION, or other than
 * one set before (the same again is accepted).
 */
flexio_status flexio_version_set(uint64_t version);

/* The library's own messages (on standard error). */
enum flexio_log_lvl flexio_log_lvl_set(enum flexio_log_lvl lvl);

#ifdef __cplusplus
}
#endif

#endif /* _FLEXIO_SDK_H_ */
