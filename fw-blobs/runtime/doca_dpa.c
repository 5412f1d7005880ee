/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * DOCA DPA's device side over the FlexIO runtime: kernel launches (the entry every launch
 * thread runs, thread rank and count), sync events in host memory reached through the
 * context's window, and the device log. The host half is mlx5_dpa::doca; the structures the
 * two share are in mlx5_dpa_doca.h.
 */
#include <stdarg.h>
#include <stdint.h>

/* DOCA's headers first: their empty __dpa_global__ (valid on typedefs) is then the one used.
 * The runtime is written against DOCA 2.9's API (the headers' default, hence the #undefs)
 * whatever the program's sources ask for; it implements DOCA 2.6's and 2.7's calls under their own symbols
 * (__doca_dpa_v26_*, __doca_dpa_v27_*, end of the file). */
#undef DOCA_VERSION_MAJOR
#undef DOCA_VERSION_MINOR
#undef DOCA_VERSION_PATCH
#include <doca_dpa_dev.h>
#include <doca_dpa_dev_sync_event.h>
#include <doca_dpa_dev_rdma.h>
#include <doca_dpa_dev_buf.h>
#include <dpaintrin.h>
#include <libflexio-dev/flexio_dev.h>
#include <libflexio-dev/flexio_dev_queue_access.h>
#include <libflexio-dev/flexio_dev_tracer.h>
#include <mlx5_dpa_doca.h>

/* Written by the host (mlx5_dpa::doca::Dpa::start); zero until then. */
volatile struct doca_dpa_rt __doca_dpa_rt;
/* The user data of async ops, by QPN (written by the host as async ops start). */
volatile struct doca_dpa_udata __doca_dpa_udata[MLX5_DPA_DOCA_UDATA_SLOTS];

void __doca_dpa_kernel_entry(uint64_t launch_daddr);
void __doca_dpa_thread_entry(uint64_t block_daddr);

/* ---- rank and thread count of the running launch, by thread id ---- */

#define KCTX_SLOTS 512u /* twice the 256 DPA threads a device has */

struct kctx {
	uint32_t key; /* thread id + 1; 0: free */
	uint32_t rank;
	uint32_t num_threads;
	/* The function doca_dpa_dev_device_set selected in this run (0: none). */
	uint32_t device;
	/* A DOCA DPA thread's block (0 for a launch thread). */
	volatile struct doca_dpa_thread_block *thread;
};

static struct kctx kctx_table[KCTX_SLOTS];

static uint32_t my_thread_id(void)
{
	struct flexio_dev_thread_ctx *t;

	flexio_dev_get_thread_ctx(&t);
	return flexio_dev_get_thread_id(t);
}

static struct kctx *kctx_find(uint32_t key, int claim)
{
	uint32_t i = (key * 2654435761u) % KCTX_SLOTS;
	uint32_t n;

	for (n = 0; n < KCTX_SLOTS; n++, i = (i + 1) % KCTX_SLOTS) {
		uint32_t k = __atomic_load_n(&kctx_table[i].key, __ATOMIC_ACQUIRE);

		if (k == key)
			return &kctx_table[i];
		if (claim && k == 0) {
			uint32_t expect = 0;

			if (__atomic_compare_exchange_n(&kctx_table[i].key, &expect, key, 0, __ATOMIC_ACQ_REL,
							__ATOMIC_ACQUIRE))
				return &kctx_table[i];
			if (expect == key)
				return &kctx_table[i];
		}
	}
	return 0;
}

unsigned int doca_dpa_dev_thread_rank(void)
{
	struct kctx *k = kctx_find(my_thread_id() + 1, 0);

	return k ? k->rank : 0;
}

unsigned int doca_dpa_dev_num_threads(void)
{
	struct kctx *k = kctx_find(my_thread_id() + 1, 0);

	return k ? k->num_threads : 1;
}

void doca_dpa_dev_yield(void)
{
	struct flexio_dev_thread_ctx *t;

	/* Launch threads are not continuable: FlexIO's yield returns at once and the kernel runs
	 * on, which is all a kernel may assume. */
	flexio_dev_get_thread_ctx(&t);
	flexio_dev_yield(t);
}

/* ---- sync events ---- */

/* The context was never started by the host, or a handle is 0: a fault with a clear place. */
static __attribute__((noreturn)) void doca_dpa_fatal(void)
{
	__builtin_trap();
}

static volatile uint64_t *event_ptr(doca_dpa_dev_sync_event_t h)
{
	struct flexio_dev_thread_ctx *t;
	flexio_uintptr_t daddr;

	if (__doca_dpa_rt.magic != MLX5_DPA_DOCA_MAGIC || h == 0 || (h & 7))
		doca_dpa_fatal();
	flexio_dev_get_thread_ctx(&t);
	if (flexio_dev_window_config(t, (uint16_t)__doca_dpa_rt.window_id, __doca_dpa_rt.mkey) !=
	    FLEXIO_DEV_STATUS_SUCCESS)
		doca_dpa_fatal();
	if (flexio_dev_window_ptr_acquire(t, h, &daddr) != FLEXIO_DEV_STATUS_SUCCESS)
		doca_dpa_fatal();
	return (volatile uint64_t *)(uintptr_t)daddr;
}

/*
 * The `pause` hint (Zihintpause: `fence w, 0`), spelled as its encoding so that no assembler
 * extension is needed. On the DPA it is a fence that orders nothing; it tells a core (and the
 * model, which then lets another activation run on the host thread) that this one is spinning.
 */
static inline void spin_pause(void)
{
	__asm__ volatile(".insn i 0x0f, 0, x0, x0, 0x010" ::: "memory");
}

/* Adds from DPA threads take one of these AMO locks (by handle) around read-add-write. */
#define EVENT_LOCKS 64u
static uint32_t event_locks[EVENT_LOCKS];

void doca_dpa_dev_sync_event_get(doca_dpa_dev_sync_event_t h, uint64_t *value)
{
	volatile uint64_t *p = event_ptr(h);

	__dpa_thread_window_read_inv();
	*value = *p;
}

void doca_dpa_dev_sync_event_update_set(doca_dpa_dev_sync_event_t h, uint64_t value)
{
	volatile uint64_t *p = event_ptr(h);

	*p = value;
	__dpa_thread_window_writeback();
}

void doca_dpa_dev_sync_event_update_add(doca_dpa_dev_sync_event_t h, uint64_t value)
{
	volatile uint64_t *p = event_ptr(h);
	uint32_t *lock = &event_locks[(h >> 3) % EVENT_LOCKS];

	while (__atomic_exchange_n(lock, 1, __ATOMIC_ACQUIRE))
		spin_pause();
	__dpa_thread_window_read_inv();
	*p = *p + value;
	__dpa_thread_window_writeback();
	__atomic_store_n(lock, 0, __ATOMIC_RELEASE);
}

void doca_dpa_dev_sync_event_wait_gt(doca_dpa_dev_sync_event_t h, uint64_t value, uint64_t mask)
{
	volatile uint64_t *p = event_ptr(h);

	for (;;) {
		__dpa_thread_window_read_inv();
		if ((*p & mask) > value)
			return;
		spin_pause();
	}
}

/* ---- log ---- */

/*
 * The functions the outbox acts on (OUTBOX_SET_GVMI): the process's own, or another function
 * an extended context's resources are on. Every doorbell the runtime rings names its queue's
 * function first, so what DPA code selected with doca_dpa_dev_device_set never sends one of
 * the runtime's doorbells astray.
 */
static uint32_t own_function(void)
{
	return __doca_dpa_rt.vhca;
}

static void use_function(uint32_t vhca)
{
	struct flexio_dev_thread_ctx *t;

	flexio_dev_get_thread_ctx(&t);
	if (flexio_dev_outbox_config_uar_extension(t, vhca) != FLEXIO_DEV_STATUS_SUCCESS)
		doca_dpa_fatal();
}

/* A resource on another function may be used only after doca_dpa_dev_device_set selected it
 * in this run (DOCA's rule for extended contexts); then its doorbell goes to that function. */
static void enter_function(uint32_t vhca)
{
	if (vhca != own_function()) {
		struct kctx *k = kctx_find(my_thread_id() + 1, 0);

		if (!k || k->device != vhca)
			doca_dpa_fatal();
	}
	use_function(vhca);
}

void doca_dpa_dev_device_set(doca_dpa_dev_t dpa_handle)
{
	volatile struct doca_dpa_device *d = (volatile struct doca_dpa_device *)(uintptr_t)dpa_handle;
	struct kctx *k;

	if (dpa_handle == 0 || (dpa_handle & 7) || d->magic != MLX5_DPA_DOCA_DEVICE_MAGIC)
		doca_dpa_fatal();
	k = kctx_find(my_thread_id() + 1, 1);
	if (k)
		k->device = d->vhca;
	use_function(d->vhca);
}

static const char *level_tag(doca_dpa_dev_log_level_t level)
{
	/* "INF" is what DOCA's documented output shows; the other tags are provisional. */
	switch (level) {
	case DOCA_DPA_DEV_LOG_LEVEL_CRIT:
		return "CRT";
	case DOCA_DPA_DEV_LOG_LEVEL_ERROR:
		return "ERR";
	case DOCA_DPA_DEV_LOG_LEVEL_WARNING:
		return "WRN";
	case DOCA_DPA_DEV_LOG_LEVEL_INFO:
		return "INF";
	default:
		return "DBG";
	}
}

void doca_dpa_dev_log(doca_dpa_dev_log_level_t log_level, const char *format, ...)
{
	char text[MLX5_DPA_MSG_MAX_LEN];
	uint32_t limit = __doca_dpa_rt.log_level;
	int n;
	va_list ap;

	if (limit == 0)
		limit = DOCA_DPA_DEV_LOG_LEVEL_INFO;
	if (log_level <= DOCA_DPA_DEV_LOG_LEVEL_DISABLE || (uint32_t)log_level > limit)
		return;
	n = mlx5_dpa_snprintf(text, sizeof(text), "[DOCA][DPA DEVICE][%s] ", level_tag(log_level));
	if (n < 0 || (uint32_t)n >= sizeof(text))
		return;
	va_start(ap, format);
	mlx5_dpa_vsnprintf(text + n, sizeof(text) - (uint32_t)n, format, ap);
	va_end(ap);
	use_function(own_function());
	flexio_dev_msg(FLEXIO_MSG_DEV_DEFAULT_STREAM_ID, FLEXIO_MSG_DEV_ALWAYS_PRINT, "%s", text);
}

void doca_dpa_dev_printf(const char *format, ...)
{
	char text[MLX5_DPA_MSG_MAX_LEN];
	va_list ap;

	va_start(ap, format);
	mlx5_dpa_vsnprintf(text, sizeof(text), format, ap);
	va_end(ap);
	use_function(own_function());
	flexio_dev_msg(FLEXIO_MSG_DEV_DEFAULT_STREAM_ID, FLEXIO_MSG_DEV_ALWAYS_PRINT, "%s", text);
}

/* ---- completion contexts ---- */

int doca_dpa_dev_get_completion(doca_dpa_dev_completion_t h, doca_dpa_dev_completion_element_t *elem)
{
	volatile struct doca_dpa_completion_block *b = (volatile struct doca_dpa_completion_block *)(uintptr_t)h;
	struct mlx5_dpa_cq_descriptor cq = b->cq;
	uint32_t i = b->read;
	struct flexio_dev_cqe64 *cqe = mlx5_dpa_cq_cqe(&cq, i);

	if (h == 0 || (h & 7))
		doca_dpa_fatal();
	/*
	 * Never read past what the ring holds beyond the last acknowledged element. Nothing new:
	 * callers poll in a loop, so pause (the model then lets other activations run and hands
	 * this one's doorbells to the NIC, as hardware would have at once).
	 */
	if (i - b->acked >= (1u << cq.log_cqe_cnt) || !mlx5_dpa_cqe_ready(&cq, cqe, i)) {
		spin_pause();
		return 0;
	}
	b->read = i + 1;
	*elem = (doca_dpa_dev_completion_element_t)(uintptr_t)cqe;
	return 1;
}

doca_dpa_dev_completion_type_t doca_dpa_dev_get_completion_type(doca_dpa_dev_completion_element_t e)
{
	return (doca_dpa_dev_completion_type_t)(flexio_dev_cqe_get_opcode((struct flexio_dev_cqe64 *)(uintptr_t)e));
}

uint32_t doca_dpa_dev_get_completion_user_data(doca_dpa_dev_completion_element_t e)
{
	uint32_t qpn = flexio_dev_cqe_get_qpn((struct flexio_dev_cqe64 *)(uintptr_t)e);
	uint32_t i;

	for (i = 0; i < MLX5_DPA_DOCA_UDATA_SLOTS; i++)
		if (__doca_dpa_udata[i].qpn == qpn)
			return __doca_dpa_udata[i].user_data;
	return 0;
}

uint32_t doca_dpa_dev_get_completion_immediate(doca_dpa_dev_completion_element_t e)
{
	/* imm_inval_pkey, big-endian at 0x24 of the 64-byte CQE (mlx5_cqe64). */
	return be32_to_cpu(*(volatile uint32_t *)(uintptr_t)(e + 0x24));
}

void doca_dpa_dev_completion_ack(doca_dpa_dev_completion_t h, uint64_t num_comp)
{
	volatile struct doca_dpa_completion_block *b = (volatile struct doca_dpa_completion_block *)(uintptr_t)h;
	uint32_t acked = b->acked + (uint32_t)num_comp;

	if (acked - b->acked > b->read - b->acked)
		acked = b->read;
	b->acked = acked;
	flexio_dev_dbr_cq_set_ci((uint32_t *)(uintptr_t)b->cq.cq_dbr_addr, acked);
	__dpa_thread_memory_writeback();
}

static void completion_arm(volatile struct doca_dpa_completion_block *b)
{
	struct flexio_dev_thread_ctx *t;

	use_function(b->vhca);
	flexio_dev_get_thread_ctx(&t);
	/* Armed at what was read: an element not read yet raises the event at once. */
	flexio_dev_cq_arm(t, b->read, b->cq.cqn);
}

void doca_dpa_dev_completion_request_notification(doca_dpa_dev_completion_t h)
{
	if (h == 0 || (h & 7))
		doca_dpa_fatal();
	completion_arm((volatile struct doca_dpa_completion_block *)(uintptr_t)h);
}

/* ---- async ops ---- */

static volatile struct doca_dpa_async_ops_block *async_lock(doca_dpa_dev_async_ops_t h)
{
	volatile struct doca_dpa_async_ops_block *a = (volatile struct doca_dpa_async_ops_block *)(uintptr_t)h;

	if (h == 0 || (h & 7))
		doca_dpa_fatal();
	while (__atomic_exchange_n((uint32_t *)&a->lock, 1, __ATOMIC_ACQUIRE))
		spin_pause();
	return a;
}

/* Hands the WQE at `pi` to the NIC: producer counter, doorbell record, doorbell; unlocks. */
static void async_ring(volatile struct doca_dpa_async_ops_block *a, const struct mlx5_dpa_wq_descriptor *qp,
		       uint32_t pi)
{
	struct flexio_dev_thread_ctx *t;

	a->pi = pi + 1;
	mlx5_dpa_dbr_sq_set_pi(qp->dbr_addr, pi + 1);
	__dpa_thread_memory_writeback();
	use_function(a->vhca);
	flexio_dev_get_thread_ctx(&t);
	flexio_dev_qp_sq_ring_db(t, (uint16_t)(pi + 1), qp->num);
	__atomic_store_n((uint32_t *)&a->lock, 0, __ATOMIC_RELEASE);
}

void doca_dpa_dev_post_memcpy(doca_dpa_dev_async_ops_t h, doca_dpa_dev_mmap_t dst_mmap, uint64_t dst_addr,
			      doca_dpa_dev_mmap_t src_mmap, uint64_t src_addr, size_t length, uint32_t flags)
{
	volatile struct doca_dpa_async_ops_block *a = async_lock(h);
	struct mlx5_dpa_wq_descriptor qp = a->qp;
	uint32_t pi = a->pi;
	union flexio_dev_sqe_seg *wqe = mlx5_dpa_sq_wqebb(&qp, pi);

	/* An RDMA WRITE in loopback: ctrl, remote address (destination), data (source). */
	mlx5_dpa_swqe_ctrl_set(wqe, 0, MLX5_CTRL_SEG_OPCODE_RDMA_WRITE, pi, qp.num, 3,
			       (flags & DOCA_DPA_DEV_SUBMIT_FLAG_OPTIMIZE_REPORTS) ?
				       0 : (MLX5_CTRL_SEG_CE_CQE_ALWAYS << 2),
			       0);
	flexio_dev_swqe_seg_rdma_set(wqe + 1, (uint32_t)dst_mmap, dst_addr);
	flexio_dev_swqe_seg_mem_ptr_data_set(wqe + 2, (uint32_t)length, (uint32_t)src_mmap, src_addr);
	async_ring(a, &qp, pi);
}

/*
 * A WAIT-on-data WQE (DPDK mlx5_prm.h: opcode 0x0f, opmod 1, then a 32-byte wait segment):
 * the async ops' queue stops at it until the event's counter meets `operation` against
 * `value`; then its completion arrives in the attached completion context, which activates
 * the attached thread.
 */
#define WAIT_OPCODE 0x0f
#define WAIT_OPMOD_DATA 1
#define WAIT_COND_EQUAL 1u
#define WAIT_COND_BIGGER 2u
#define WAIT_COND_INVERT 0x10u

struct wait_seg {
	uint32_t operation;
	uint32_t lkey;
	uint32_t va_high;
	uint32_t va_low;
	uint64_t value;
	uint64_t mask;
};

static void post_wait(doca_dpa_dev_async_ops_t h, doca_dpa_dev_sync_event_t se, uint32_t operation, uint64_t value)
{
	volatile struct doca_dpa_async_ops_block *a;
	struct mlx5_dpa_wq_descriptor qp;
	volatile struct wait_seg *w;
	union flexio_dev_sqe_seg *wqe;
	uint32_t pi;

	if (__doca_dpa_rt.magic != MLX5_DPA_DOCA_MAGIC || se == 0 || (se & 7))
		doca_dpa_fatal();
	a = async_lock(h);
	qp = a->qp;
	pi = a->pi;
	wqe = mlx5_dpa_sq_wqebb(&qp, pi);
	mlx5_dpa_swqe_ctrl_set(wqe, WAIT_OPMOD_DATA, WAIT_OPCODE, pi, qp.num, 3, MLX5_CTRL_SEG_CE_CQE_ALWAYS << 2, 0);
	/* The event's counter is a word of the context's host page: its handle is the address. */
	w = (volatile struct wait_seg *)(wqe + 1);
	w->operation = cpu_to_be32(operation);
	w->lkey = cpu_to_be32(__doca_dpa_rt.mkey);
	w->va_high = cpu_to_be32((uint32_t)(se >> 32));
	w->va_low = cpu_to_be32((uint32_t)se);
	w->value = cpu_to_be64(value);
	w->mask = ~0ull;
	async_ring(a, &qp, pi);
}

void doca_dpa_dev_sync_event_post_wait_gt(doca_dpa_dev_async_ops_t async_ops_handle,
					  doca_dpa_dev_sync_event_t wait_se_handle, uint64_t value)
{
	post_wait(async_ops_handle, wait_se_handle, WAIT_COND_BIGGER, value);
}

void doca_dpa_dev_sync_event_post_wait_ne(doca_dpa_dev_async_ops_t async_ops_handle,
					  doca_dpa_dev_sync_event_t wait_se_handle, uint64_t value)
{
	post_wait(async_ops_handle, wait_se_handle, WAIT_COND_EQUAL | WAIT_COND_INVERT, value);
}

/* ---- RDMA ---- */

static volatile struct doca_dpa_rdma_block *rdma_block(doca_dpa_dev_rdma_t h)
{
	if (h == 0 || (h & 7))
		doca_dpa_fatal();
	return (volatile struct doca_dpa_rdma_block *)(uintptr_t)h;
}

/* Connection `id` of an RDMA, locked; an id it does not have, or one not connected, stops the
 * thread (DOCA's device calls have no error return). */
static volatile struct doca_dpa_rdma_conn *conn_lock(doca_dpa_dev_rdma_t h, uint32_t id)
{
	volatile struct doca_dpa_rdma_block *r = rdma_block(h);
	volatile struct doca_dpa_rdma_conn *c;

	if (id >= r->num_conns)
		doca_dpa_fatal();
	c = &r->conns[id];
	if (!c->connected)
		doca_dpa_fatal();
	enter_function(c->vhca);
	while (__atomic_exchange_n((uint32_t *)&c->lock, 1, __ATOMIC_ACQUIRE))
		spin_pause();
	return c;
}

static void conn_unlock(volatile struct doca_dpa_rdma_conn *c)
{
	__atomic_store_n((uint32_t *)&c->lock, 0, __ATOMIC_RELEASE);
}

/* The scratch word of the connection's next send slot (its WQE is the only one using it while
 * outstanding). */
static uint64_t conn_scratch(volatile struct doca_dpa_rdma_conn *c)
{
	return c->scratch + 8 * (uint64_t)(c->sq_pi & c->scratch_mask);
}

/*
 * One send WQE on a locked connection: ctrl, then a remote-address segment (when `rkey_used`),
 * an atomic segment (fetch-and-add), a data segment (when `len_used`); rung at once. Unlocks.
 */
static void conn_post(volatile struct doca_dpa_rdma_conn *c, uint8_t opcode, uint32_t imm_be, int rkey_used,
		      uint32_t rkey, uint64_t raddr, int add_used, uint64_t add, int len_used, uint32_t lkey,
		      uint64_t laddr, uint32_t len, uint32_t flags)
{
	struct mlx5_dpa_wq_descriptor qp = c->qp;
	uint32_t pi = c->sq_pi;
	union flexio_dev_sqe_seg *wqe = mlx5_dpa_sq_wqebb(&qp, pi);
	struct flexio_dev_thread_ctx *t;
	uint8_t ds = 1;

	if (rkey_used)
		flexio_dev_swqe_seg_rdma_set(wqe + ds++, rkey, raddr);
	if (add_used)
		flexio_dev_swqe_seg_atomic_set(wqe + ds++, add, 0);
	if (len_used)
		flexio_dev_swqe_seg_mem_ptr_data_set(wqe + ds++, len, lkey, laddr);
	mlx5_dpa_swqe_ctrl_set(wqe, 0, opcode, pi, qp.num, ds,
			       (flags & DOCA_DPA_DEV_SUBMIT_FLAG_OPTIMIZE_REPORTS) ? 0 : (MLX5_CTRL_SEG_CE_CQE_ALWAYS << 2),
			       imm_be);
	c->sq_pi = pi + 1;
	mlx5_dpa_dbr_sq_set_pi(qp.dbr_addr, pi + 1);
	__dpa_thread_memory_writeback();
	use_function(c->vhca);
	flexio_dev_get_thread_ctx(&t);
	flexio_dev_qp_sq_ring_db(t, (uint16_t)(pi + 1), qp.num);
	conn_unlock(c);
}

static void rdma_post(doca_dpa_dev_rdma_t h, uint32_t id, uint8_t opcode, uint32_t imm_be, int rkey_used,
		      uint32_t rkey, uint64_t raddr, int add_used, uint64_t add, int len_used, uint32_t lkey,
		      uint64_t laddr, uint32_t len, uint32_t flags)
{
	conn_post(conn_lock(h, id), opcode, imm_be, rkey_used, rkey, raddr, add_used, add, len_used, lkey, laddr, len,
		  flags);
}

void doca_dpa_dev_rdma_post_read(doca_dpa_dev_rdma_t rdma, uint32_t connection_id, doca_dpa_dev_mmap_t dst_mmap,
				 uint64_t dst_addr, doca_dpa_dev_mmap_t src_mmap, uint64_t src_addr, size_t length,
				 uint32_t flags)
{
	rdma_post(rdma, connection_id, MLX5_CTRL_SEG_OPCODE_RDMA_READ, 0, 1, (uint32_t)src_mmap, src_addr, 0, 0, 1,
		  (uint32_t)dst_mmap, dst_addr, (uint32_t)length, flags);
}

void doca_dpa_dev_rdma_post_write(doca_dpa_dev_rdma_t rdma, uint32_t connection_id, doca_dpa_dev_mmap_t dst_mmap,
				  uint64_t dst_addr, doca_dpa_dev_mmap_t src_mmap, uint64_t src_addr, size_t length,
				  uint32_t flags)
{
	rdma_post(rdma, connection_id, MLX5_CTRL_SEG_OPCODE_RDMA_WRITE, 0, 1, (uint32_t)dst_mmap, dst_addr, 0, 0, 1,
		  (uint32_t)src_mmap, src_addr, (uint32_t)length, flags);
}

void doca_dpa_dev_rdma_post_write_imm(doca_dpa_dev_rdma_t rdma, uint32_t connection_id,
				      doca_dpa_dev_mmap_t dst_mmap, uint64_t dst_addr, doca_dpa_dev_mmap_t src_mmap,
				      uint64_t src_addr, size_t length, uint32_t immediate, uint32_t flags)
{
	rdma_post(rdma, connection_id, MLX5_CTRL_SEG_OPCODE_RDMA_WRITE_WITH_IMMEDIATE, cpu_to_be32(immediate), 1,
		  (uint32_t)dst_mmap, dst_addr, 0, 0, 1, (uint32_t)src_mmap, src_addr, (uint32_t)length, flags);
}

void doca_dpa_dev_rdma_post_send(doca_dpa_dev_rdma_t rdma, uint32_t connection_id, doca_dpa_dev_mmap_t mmap,
				 uint64_t addr, size_t length, uint32_t flags)
{
	rdma_post(rdma, connection_id, MLX5_CTRL_SEG_OPCODE_SEND, 0, 0, 0, 0, 0, 0, 1, (uint32_t)mmap, addr,
		  (uint32_t)length, flags);
}

void doca_dpa_dev_rdma_post_send_imm(doca_dpa_dev_rdma_t rdma, uint32_t connection_id, doca_dpa_dev_mmap_t mmap,
				     uint64_t addr, size_t length, uint32_t immediate, uint32_t flags)
{
	rdma_post(rdma, connection_id, MLX5_CTRL_SEG_OPCODE_SEND_WITH_IMMEDIATE, cpu_to_be32(immediate), 0, 0, 0, 0,
		  0, 1, (uint32_t)mmap, addr, (uint32_t)length, flags);
}

void doca_dpa_dev_rdma_post_atomic_fetch_add(doca_dpa_dev_rdma_t rdma, uint32_t connection_id,
					     doca_dpa_dev_mmap_t dst_mmap, uint64_t dst_addr, uint64_t value,
					     uint32_t flags)
{
	volatile struct doca_dpa_rdma_conn *c = conn_lock(rdma, connection_id);

	/* The fetched value lands in a scratch word (DOCA returns none). */
	conn_post(c, MLX5_CTRL_SEG_OPCODE_ATOMIC_FETCH_AND_ADD, 0, 1, (uint32_t)dst_mmap, dst_addr, 1, value, 1,
		  c->scratch_lkey, conn_scratch(c), 8, flags);
}

static volatile struct doca_dpa_remote_event *remote_event(doca_dpa_dev_sync_event_remote_net_t remote)
{
	if (remote == 0 || (remote & 7))
		doca_dpa_fatal();
	return (volatile struct doca_dpa_remote_event *)(uintptr_t)remote;
}

void doca_dpa_dev_rdma_signal_set(doca_dpa_dev_rdma_t rdma, uint32_t connection_id,
				  doca_dpa_dev_sync_event_remote_net_t remote, uint64_t count)
{
	volatile struct doca_dpa_remote_event *ev = remote_event(remote);
	volatile struct doca_dpa_rdma_conn *c = conn_lock(rdma, connection_id);
	uint64_t word = conn_scratch(c);

	/* The value goes out of a scratch word: write it there, then RDMA WRITE those 8 bytes. */
	*(volatile uint64_t *)(uintptr_t)word = count;
	__dpa_thread_memory_writeback();
	conn_post(c, MLX5_CTRL_SEG_OPCODE_RDMA_WRITE, 0, 1, ev->rkey, ev->addr, 0, 0, 1, c->scratch_lkey, word, 8,
		  DOCA_DPA_DEV_SUBMIT_FLAG_FLUSH);
}

void doca_dpa_dev_rdma_signal_add(doca_dpa_dev_rdma_t rdma, uint32_t connection_id,
				  doca_dpa_dev_sync_event_remote_net_t remote, uint64_t count)
{
	volatile struct doca_dpa_remote_event *ev = remote_event(remote);
	volatile struct doca_dpa_rdma_conn *c = conn_lock(rdma, connection_id);

	conn_post(c, MLX5_CTRL_SEG_OPCODE_ATOMIC_FETCH_AND_ADD, 0, 1, ev->rkey, ev->addr, 1, count, 1,
		  c->scratch_lkey, conn_scratch(c), 8, DOCA_DPA_DEV_SUBMIT_FLAG_FLUSH);
}

/* A receive queue block, locked. */
static volatile struct doca_dpa_rdma_srq *srq_lock(uint64_t h)
{
	volatile struct doca_dpa_rdma_srq *q = (volatile struct doca_dpa_rdma_srq *)(uintptr_t)h;

	if (h == 0 || (h & 7))
		doca_dpa_fatal();
	while (__atomic_exchange_n((uint32_t *)&q->lock, 1, __ATOMIC_ACQUIRE))
		spin_pause();
	return q;
}

static void srq_unlock(volatile struct doca_dpa_rdma_srq *q)
{
	__atomic_store_n((uint32_t *)&q->lock, 0, __ATOMIC_RELEASE);
}

/* One receive WQE (one data segment) at the queue's producer counter, published at once. */
static void srq_post(uint64_t h, doca_dpa_dev_mmap_t mmap, uint64_t addr, size_t length)
{
	volatile struct doca_dpa_rdma_srq *q = srq_lock(h);
	uint32_t pi = q->pi;
	volatile struct flexio_dev_wqe_rcv_data_seg *w;

	/* More receives outstanding than the queue holds: DOCA asks for acks first. */
	if (pi - q->acked >= (1u << q->log_size)) {
		srq_unlock(q);
		doca_dpa_fatal();
	}
	w = (volatile struct flexio_dev_wqe_rcv_data_seg *)(uintptr_t)(q->ring + (uint64_t)(pi & ((1u << q->log_size) - 1)) *
										    q->stride);
	w->byte_count = cpu_to_be32((uint32_t)length);
	w->lkey = cpu_to_be32((uint32_t)mmap);
	w->addr = cpu_to_be64(addr);
	q->pi = pi + 1;
	/* The WQE before the counter that hands it to the NIC. */
	__dpa_thread_memory_writeback();
	mlx5_dpa_dbr_rq_set_pi(q->dbr, pi + 1);
	__dpa_thread_memory_writeback();
	srq_unlock(q);
}

static void srq_ack(uint64_t h, uint32_t num_acked)
{
	volatile struct doca_dpa_rdma_srq *q = srq_lock(h);
	uint32_t acked = q->acked + num_acked;

	if (acked - q->acked > q->pi - q->acked)
		acked = q->pi;
	q->acked = acked;
	srq_unlock(q);
}

void doca_dpa_dev_rdma_post_receive(doca_dpa_dev_rdma_t h, doca_dpa_dev_mmap_t mmap, uint64_t addr, size_t length)
{
	srq_post(rdma_block(h)->srq, mmap, addr, length);
}

void doca_dpa_dev_rdma_receive_ack(doca_dpa_dev_rdma_t h, uint32_t num_acked)
{
	srq_ack(rdma_block(h)->srq, num_acked);
}

/* The buffer forms: the maps, addresses and lengths come from the buffers. */
#define BUF_MMAP(b) (((volatile struct doca_dpa_buf *)(uintptr_t)(b))->mmap)
#define BUF_ADDR(b) (((volatile struct doca_dpa_buf *)(uintptr_t)(b))->addr)
#define BUF_LEN(b) (((volatile struct doca_dpa_buf *)(uintptr_t)(b))->len)

void doca_dpa_dev_rdma_post_buf_read(doca_dpa_dev_rdma_t rdma, uint32_t connection_id, doca_dpa_dev_buf_t dst,
				     doca_dpa_dev_buf_t src, uint32_t flags)
{
	doca_dpa_dev_rdma_post_read(rdma, connection_id, BUF_MMAP(dst), BUF_ADDR(dst), BUF_MMAP(src), BUF_ADDR(src),
				    BUF_LEN(src), flags);
}

void doca_dpa_dev_rdma_post_buf_write(doca_dpa_dev_rdma_t rdma, uint32_t connection_id, doca_dpa_dev_buf_t dst,
				      doca_dpa_dev_buf_t src, uint32_t flags)
{
	doca_dpa_dev_rdma_post_write(rdma, connection_id, BUF_MMAP(dst), BUF_ADDR(dst), BUF_MMAP(src), BUF_ADDR(src),
				     BUF_LEN(src), flags);
}

void doca_dpa_dev_rdma_post_buf_write_imm(doca_dpa_dev_rdma_t rdma, uint32_t connection_id, doca_dpa_dev_buf_t dst,
					  doca_dpa_dev_buf_t src, uint32_t immediate, uint32_t flags)
{
	doca_dpa_dev_rdma_post_write_imm(rdma, connection_id, BUF_MMAP(dst), BUF_ADDR(dst), BUF_MMAP(src),
					 BUF_ADDR(src), BUF_LEN(src), immediate, flags);
}

void doca_dpa_dev_rdma_post_buf_send(doca_dpa_dev_rdma_t rdma, uint32_t connection_id, doca_dpa_dev_buf_t buf,
				     uint32_t flags)
{
	doca_dpa_dev_rdma_post_send(rdma, connection_id, BUF_MMAP(buf), BUF_ADDR(buf), BUF_LEN(buf), flags);
}

void doca_dpa_dev_rdma_post_buf_send_imm(doca_dpa_dev_rdma_t rdma, uint32_t connection_id, doca_dpa_dev_buf_t buf,
					 uint32_t immediate, uint32_t flags)
{
	doca_dpa_dev_rdma_post_send_imm(rdma, connection_id, BUF_MMAP(buf), BUF_ADDR(buf), BUF_LEN(buf), immediate,
					flags);
}

void doca_dpa_dev_rdma_post_buf_receive(doca_dpa_dev_rdma_t rdma, doca_dpa_dev_buf_t buf)
{
	doca_dpa_dev_rdma_post_receive(rdma, BUF_MMAP(buf), BUF_ADDR(buf), BUF_LEN(buf));
}

void doca_dpa_dev_rdma_post_buf_atomic_fetch_add(doca_dpa_dev_rdma_t rdma, uint32_t connection_id,
						 doca_dpa_dev_buf_t dst, uint64_t value, uint32_t flags)
{
	doca_dpa_dev_rdma_post_atomic_fetch_add(rdma, connection_id, BUF_MMAP(dst), BUF_ADDR(dst), value, flags);
}

uint32_t doca_dpa_dev_rdma_completion_get_wr_index(doca_dpa_dev_completion_element_t e)
{
	return flexio_dev_cqe_get_wqe_counter((struct flexio_dev_cqe64 *)(uintptr_t)e);
}

/* ---- hash table ---- */

static volatile struct doca_dpa_hash_entry *ht_entries(volatile struct doca_dpa_hash_table_block *t)
{
	return (volatile struct doca_dpa_hash_entry *)(uintptr_t)((uint64_t)(uintptr_t)t + 0x10);
}

static volatile struct doca_dpa_hash_table_block *ht_lock(doca_dpa_dev_hash_table_t h)
{
	volatile struct doca_dpa_hash_table_block *t = (volatile struct doca_dpa_hash_table_block *)(uintptr_t)h;

	if (h == 0 || (h & 7) || t->capacity == 0 || (t->capacity & (t->capacity - 1)))
		doca_dpa_fatal();
	while (__atomic_exchange_n((uint32_t *)&t->lock, 1, __ATOMIC_ACQUIRE))
		spin_pause();
	return t;
}

static void ht_unlock(volatile struct doca_dpa_hash_table_block *t)
{
	__atomic_store_n((uint32_t *)&t->lock, 0, __ATOMIC_RELEASE);
}

/* The slot holding `key`, or -1; *free_slot: the first reusable slot seen (or -1). */
static int64_t ht_probe(volatile struct doca_dpa_hash_table_block *t, uint32_t key, int64_t *free_slot)
{
	volatile struct doca_dpa_hash_entry *e = ht_entries(t);
	uint32_t mask = t->capacity - 1;
	uint32_t i = (key * 2654435761u) & mask;
	uint32_t n;

	*free_slot = -1;
	for (n = 0; n < t->capacity; n++, i = (i + 1) & mask) {
		if (e[i].state == MLX5_DPA_DOCA_HASH_EMPTY) {
			if (*free_slot < 0)
				*free_slot = i;
			return -1;
		}
		if (e[i].state == MLX5_DPA_DOCA_HASH_USED && e[i].key == key)
			return i;
		if (e[i].state == MLX5_DPA_DOCA_HASH_REMOVED && *free_slot < 0)
			*free_slot = i;
	}
	return -1;
}

void doca_dpa_dev_hash_table_add(doca_dpa_dev_hash_table_t h, uint32_t key, uint64_t value)
{
	volatile struct doca_dpa_hash_table_block *t = ht_lock(h);
	volatile struct doca_dpa_hash_entry *e = ht_entries(t);
	int64_t free_slot;
	int64_t at = ht_probe(t, key, &free_slot);

	if (at < 0) {
		if (free_slot < 0) {
			/* Full: DOCA calls this anomalous; here the thread stops where it happened. */
			ht_unlock(t);
			doca_dpa_fatal();
		}
		at = free_slot;
		if (e[at].state == MLX5_DPA_DOCA_HASH_EMPTY)
			t->used = t->used + 1;
		e[at].key = key;
		e[at].state = MLX5_DPA_DOCA_HASH_USED;
	}
	e[at].value = value;
	ht_unlock(t);
}

void doca_dpa_dev_hash_table_remove(doca_dpa_dev_hash_table_t h, uint32_t key)
{
	volatile struct doca_dpa_hash_table_block *t = ht_lock(h);
	int64_t free_slot;
	int64_t at = ht_probe(t, key, &free_slot);

	if (at >= 0)
		ht_entries(t)[at].state = MLX5_DPA_DOCA_HASH_REMOVED;
	ht_unlock(t);
}

int doca_dpa_dev_hash_table_find(doca_dpa_dev_hash_table_t h, uint32_t key, uint64_t *value)
{
	volatile struct doca_dpa_hash_table_block *t = ht_lock(h);
	int64_t free_slot;
	int64_t at = ht_probe(t, key, &free_slot);

	if (at >= 0)
		*value = ht_entries(t)[at].value;
	ht_unlock(t);
	return at >= 0;
}

/* ---- buffers ---- */

doca_dpa_dev_buf_t doca_dpa_dev_buf_array_get_buf(doca_dpa_dev_buf_arr_t buf_arr, const uint64_t buf_idx)
{
	return buf_arr + buf_idx * sizeof(struct doca_dpa_buf);
}

#define DPA_BUF(b) ((volatile struct doca_dpa_buf *)(uintptr_t)(b))

void doca_dpa_dev_buf_set_addr(doca_dpa_dev_buf_t buf, uintptr_t addr)
{
	DPA_BUF(buf)->addr = addr;
}

uintptr_t doca_dpa_dev_buf_get_addr(doca_dpa_dev_buf_t buf)
{
	return DPA_BUF(buf)->addr;
}

void doca_dpa_dev_buf_set_len(doca_dpa_dev_buf_t buf, size_t len)
{
	DPA_BUF(buf)->len = len;
}

uint64_t doca_dpa_dev_buf_get_len(doca_dpa_dev_buf_t buf)
{
	return DPA_BUF(buf)->len;
}

void doca_dpa_dev_buf_set_mmap(doca_dpa_dev_buf_t buf, doca_dpa_dev_mmap_t mmap)
{
	DPA_BUF(buf)->mmap = mmap;
}

doca_dpa_dev_mmap_t doca_dpa_dev_buf_get_mmap(doca_dpa_dev_buf_t buf)
{
	return DPA_BUF(buf)->mmap;
}

/*
 * A pointer DPA code loads and stores through: a DPA address as it is; a host address through
 * the context's window keyed with the map (sync events re-key the window as they go, so the
 * pointer holds until the thread's next sync-event call, as DOCA's holds until the next
 * external-pointer call).
 */
static doca_dpa_dev_uintptr_t external_ptr(doca_dpa_dev_mmap_t mmap, uint64_t addr)
{
	struct flexio_dev_thread_ctx *t;
	flexio_uintptr_t daddr;

	if (!(mmap & MLX5_DPA_DOCA_MMAP_HOST))
		return addr;
	if (__doca_dpa_rt.magic != MLX5_DPA_DOCA_MAGIC)
		doca_dpa_fatal();
	flexio_dev_get_thread_ctx(&t);
	if (flexio_dev_window_config(t, (uint16_t)__doca_dpa_rt.window_id, (uint32_t)mmap) !=
		    FLEXIO_DEV_STATUS_SUCCESS ||
	    flexio_dev_window_ptr_acquire(t, addr, &daddr) != FLEXIO_DEV_STATUS_SUCCESS)
		doca_dpa_fatal();
	return daddr;
}

doca_dpa_dev_uintptr_t doca_dpa_dev_mmap_get_external_ptr(doca_dpa_dev_mmap_t mmap_handle, uint64_t addr)
{
	return external_ptr(mmap_handle, addr);
}

doca_dpa_dev_uintptr_t doca_dpa_dev_buf_get_external_ptr(doca_dpa_dev_buf_t buf)
{
	return external_ptr(DPA_BUF(buf)->mmap, DPA_BUF(buf)->addr);
}

void doca_dpa_dev_post_buf_memcpy(doca_dpa_dev_async_ops_t async_ops, doca_dpa_dev_buf_t dst, doca_dpa_dev_buf_t src,
				  uint32_t flags)
{
	doca_dpa_dev_post_memcpy(async_ops, (uint32_t)DPA_BUF(dst)->mmap, DPA_BUF(dst)->addr,
				 (uint32_t)DPA_BUF(src)->mmap, DPA_BUF(src)->addr, DPA_BUF(src)->len, flags);
}

/* ---- trace ---- */

void doca_dpa_dev_trace(uint64_t arg1, uint64_t arg2, uint64_t arg3, uint64_t arg4, uint64_t arg5)
{
	/* Format 0 of the host's trace stream; no stream configured: the record is dropped. */
	use_function(own_function());
	flexio_dev_trace_5(MLX5_DPA_DOCA_TRACE_STREAM, FLEXIO_MSG_DEV_ALWAYS_PRINT, 0, arg1, arg2, arg3,
			   arg4, arg5);
}

void doca_dpa_dev_trace_flush(void)
{
	use_function(own_function());
	flexio_dev_tracer_flush(MLX5_DPA_DOCA_TRACE_STREAM);
}

/* ---- DPA threads and notifications ---- */

typedef void (*thread_fn)(uint64_t);

static volatile struct doca_dpa_notify_block *my_notify(struct kctx **out)
{
	struct kctx *k = kctx_find(my_thread_id() + 1, 0);

	*out = k;
	if (!k || !k->thread || !k->thread->notify)
		return 0;
	return (volatile struct doca_dpa_notify_block *)(uintptr_t)k->thread->notify;
}

/* Takes the next notification CQE if there is one: 1 when taken. */
static int notify_take(volatile struct doca_dpa_notify_block *n)
{
	struct mlx5_dpa_cq_descriptor cq = n->cq;
	uint32_t ci = n->cq_ci;
	struct flexio_dev_cqe64 *cqe = mlx5_dpa_cq_cqe(&cq, ci);

	if (!mlx5_dpa_cqe_ready(&cq, cqe, ci))
		return 0;
	n->cq_ci = ci + 1;
	flexio_dev_dbr_cq_set_ci((uint32_t *)(uintptr_t)cq.cq_dbr_addr, ci + 1);
	__dpa_thread_memory_writeback();
	return 1;
}

void __doca_dpa_thread_entry(uint64_t block_daddr)
{
	volatile struct doca_dpa_thread_block *b = (volatile struct doca_dpa_thread_block *)(uintptr_t)block_daddr;
	struct kctx *k = kctx_find(my_thread_id() + 1, 1);
	thread_fn f = (thread_fn)(uintptr_t)b->func;

	if (k) {
		k->device = 0;
		/* A thread of a thread group knows its rank and the group's size; others are 0 of 1. */
		k->rank = b->num_threads ? b->rank : 0;
		k->num_threads = b->num_threads ? b->num_threads : 1;
		k->thread = b;
	}
	/* doca_dpa_thread_run: arm the thread's CQs, run nothing. */
	if (b->arm) {
		b->arm = 0;
		__dpa_thread_memory_writeback();
		if (b->comp)
			completion_arm((volatile struct doca_dpa_completion_block *)(uintptr_t)b->comp);
		doca_dpa_dev_thread_reschedule();
	}
	if (b->notify)
		notify_take((volatile struct doca_dpa_notify_block *)(uintptr_t)b->notify);
	f(b->arg);
	doca_dpa_dev_thread_reschedule();
}

void doca_dpa_dev_thread_reschedule(void)
{
	struct kctx *k;
	volatile struct doca_dpa_notify_block *n = my_notify(&k);

	if (n) {
		struct mlx5_dpa_cq_descriptor cq = n->cq;
		uint32_t ci = n->cq_ci;
		struct flexio_dev_thread_ctx *t;

		/* Another notification already waits: run again at once, for it. */
		if (mlx5_dpa_cqe_ready(&cq, mlx5_dpa_cq_cqe(&cq, ci), ci))
			flexio_dev_thread_retrigger();
		/* Ask for an event on the next CQE (one that arrived since is reported at once). */
		use_function(own_function());
		flexio_dev_get_thread_ctx(&t);
		flexio_dev_cq_arm(t, ci, cq.cqn);
	}
	if (k)
		__atomic_store_n(&k->key, 0, __ATOMIC_RELEASE);
	flexio_dev_thread_reschedule();
}

void doca_dpa_dev_thread_finish(void)
{
	struct kctx *k = kctx_find(my_thread_id() + 1, 0);

	if (k)
		__atomic_store_n(&k->key, 0, __ATOMIC_RELEASE);
	flexio_dev_thread_finish();
}

doca_dpa_dev_uintptr_t doca_dpa_dev_thread_get_local_storage(void)
{
	struct flexio_dev_thread_ctx *t;

	flexio_dev_get_thread_ctx(&t);
	return flexio_dev_get_thread_local_storage(t);
}

void doca_dpa_dev_thread_notify(doca_dpa_dev_notification_completion_t h)
{
	volatile struct doca_dpa_notify_block *n = (volatile struct doca_dpa_notify_block *)(uintptr_t)h;
	struct flexio_dev_thread_ctx *t;
	struct mlx5_dpa_wq_descriptor sq;
	uint32_t pi;

	if (h == 0 || (h & 7))
		doca_dpa_fatal();
	while (__atomic_exchange_n((uint32_t *)&n->lock, 1, __ATOMIC_ACQUIRE))
		spin_pause();
	sq = n->sq;
	pi = n->sq_pi;
	/* A NOP that asks for a CQE: the CQE is the notification. */
	mlx5_dpa_swqe_ctrl_set(mlx5_dpa_sq_wqebb(&sq, pi), 0, MLX5_CTRL_SEG_OPCODE_NOP, pi, sq.num, 1,
			       MLX5_CTRL_SEG_CE_CQE_ALWAYS << 2, 0);
	n->sq_pi = pi + 1;
	mlx5_dpa_dbr_sq_set_pi(sq.dbr_addr, pi + 1);
	__dpa_thread_memory_writeback();
	use_function(own_function());
	flexio_dev_get_thread_ctx(&t);
	flexio_dev_qp_sq_ring_db(t, (uint16_t)(pi + 1), sq.num);
	__atomic_store_n((uint32_t *)&n->lock, 0, __ATOMIC_RELEASE);
}

/* ---- kernel launch ---- */

typedef void (*kernel_fn)(uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t,
			  uint64_t);

void __doca_dpa_kernel_entry(uint64_t launch_daddr)
{
	volatile struct doca_dpa_launch *l = (volatile struct doca_dpa_launch *)(uintptr_t)launch_daddr;
	uint32_t key = my_thread_id() + 1;
	uint32_t rank = __atomic_fetch_add((uint32_t *)&l->next_rank, 1, __ATOMIC_ACQ_REL);
	struct kctx *k = kctx_find(key, 1);
	kernel_fn f = (kernel_fn)(uintptr_t)l->func;

	if (k) {
		k->device = 0;
		k->rank = rank;
		k->num_threads = l->num_threads;
	}
	f(l->regs[0], l->regs[1], l->regs[2], l->regs[3], l->regs[4], l->regs[5], l->regs[6], l->regs[7]);
	if (k)
		__atomic_store_n(&k->key, 0, __ATOMIC_RELEASE);
	if (__atomic_add_fetch((uint32_t *)&l->finished, 1, __ATOMIC_ACQ_REL) == l->num_threads) {
		if (l->comp_op == MLX5_DPA_DOCA_COMP_SET)
			doca_dpa_dev_sync_event_update_set(l->comp_event, l->comp_count);
		else if (l->comp_op == MLX5_DPA_DOCA_COMP_ADD)
			doca_dpa_dev_sync_event_update_add(l->comp_event, l->comp_count);
		if (l->done_haddr)
			doca_dpa_dev_sync_event_update_set(l->done_haddr, l->done_value);
	}
	flexio_dev_thread_reschedule();
}

/* The runtime is built with the headers' default version, 2.9 (the #undefs above). */
const char *doca_version_runtime(void)
{
	return DOCA_VERSION_STRING;
}

/* ---- DOCA 2.6's device buffer and RDMA calls (MLX5_DPA_DOCA_DEV_API 206) ---- */

doca_dpa_dev_uintptr_t __doca_dpa_v26_buf_get_external_ptr(doca_dpa_dev_buf_t buf, uint64_t buf_offset);
void __doca_dpa_v26_rdma_read(doca_dpa_dev_rdma_t rdma, doca_dpa_dev_buf_t dst, uint64_t dst_offset,
			      doca_dpa_dev_buf_t src, uint64_t src_offset, size_t length);
void __doca_dpa_v26_rdma_write(doca_dpa_dev_rdma_t rdma, doca_dpa_dev_buf_t dst, uint64_t dst_offset,
			       doca_dpa_dev_buf_t src, uint64_t src_offset, size_t length);
void __doca_dpa_v26_rdma_post_send(doca_dpa_dev_rdma_t rdma, doca_dpa_dev_buf_t buf, uint64_t offset, size_t length);
void __doca_dpa_v26_rdma_post_receive(doca_dpa_dev_rdma_t rdma, doca_dpa_dev_buf_t buf, uint64_t offset,
				      size_t length);
void __doca_dpa_v26_rdma_atomic_fetch_add(doca_dpa_dev_rdma_t rdma, doca_dpa_dev_buf_t dst, uint64_t dst_offset,
					  size_t value);
void __doca_dpa_v26_rdma_signal_set(doca_dpa_dev_rdma_t rdma, doca_dpa_dev_sync_event_remote_net_t remote,
				    uint64_t count);
void __doca_dpa_v26_rdma_signal_add(doca_dpa_dev_rdma_t rdma, doca_dpa_dev_sync_event_remote_net_t remote,
				    uint64_t count);
void __doca_dpa_v26_rdma_synchronize(doca_dpa_dev_rdma_t rdma);
void __doca_dpa_v26_rdma_srq_post_receive(uint64_t rdma_srq, doca_dpa_dev_buf_t buf, uint64_t offset, size_t length);

/* 2.6 operations have no flags: each asks for its completion, which synchronize waits for. */
#define V26_FLAGS DOCA_DPA_DEV_SUBMIT_FLAG_FLUSH

doca_dpa_dev_uintptr_t __doca_dpa_v26_buf_get_external_ptr(doca_dpa_dev_buf_t buf, uint64_t buf_offset)
{
	return external_ptr(BUF_MMAP(buf), BUF_ADDR(buf) + buf_offset);
}

void __doca_dpa_v26_rdma_read(doca_dpa_dev_rdma_t rdma, doca_dpa_dev_buf_t dst, uint64_t dst_offset,
			      doca_dpa_dev_buf_t src, uint64_t src_offset, size_t length)
{
	doca_dpa_dev_rdma_post_read(rdma, 0, BUF_MMAP(dst), BUF_ADDR(dst) + dst_offset, BUF_MMAP(src),
				    BUF_ADDR(src) + src_offset, length, V26_FLAGS);
}

void __doca_dpa_v26_rdma_write(doca_dpa_dev_rdma_t rdma, doca_dpa_dev_buf_t dst, uint64_t dst_offset,
			       doca_dpa_dev_buf_t src, uint64_t src_offset, size_t length)
{
	doca_dpa_dev_rdma_post_write(rdma, 0, BUF_MMAP(dst), BUF_ADDR(dst) + dst_offset, BUF_MMAP(src),
				     BUF_ADDR(src) + src_offset, length, V26_FLAGS);
}

void __doca_dpa_v26_rdma_post_send(doca_dpa_dev_rdma_t rdma, doca_dpa_dev_buf_t buf, uint64_t offset, size_t length)
{
	doca_dpa_dev_rdma_post_send(rdma, 0, BUF_MMAP(buf), BUF_ADDR(buf) + offset, length, V26_FLAGS);
}

void __doca_dpa_v26_rdma_post_receive(doca_dpa_dev_rdma_t rdma, doca_dpa_dev_buf_t buf, uint64_t offset,
				      size_t length)
{
	doca_dpa_dev_rdma_post_receive(rdma, BUF_MMAP(buf), BUF_ADDR(buf) + offset, length);
}

void __doca_dpa_v26_rdma_srq_post_receive(uint64_t rdma_srq, doca_dpa_dev_buf_t buf, uint64_t offset, size_t length)
{
	srq_post(rdma_srq, BUF_MMAP(buf), BUF_ADDR(buf) + offset, length);
}

void __doca_dpa_v26_rdma_atomic_fetch_add(doca_dpa_dev_rdma_t rdma, doca_dpa_dev_buf_t dst, uint64_t dst_offset,
					  size_t value)
{
	doca_dpa_dev_rdma_post_atomic_fetch_add(rdma, 0, BUF_MMAP(dst), BUF_ADDR(dst) + dst_offset, value, V26_FLAGS);
}

void __doca_dpa_v26_rdma_signal_set(doca_dpa_dev_rdma_t rdma, doca_dpa_dev_sync_event_remote_net_t remote,
				    uint64_t count)
{
	doca_dpa_dev_rdma_signal_set(rdma, 0, remote, count);
}

void __doca_dpa_v26_rdma_signal_add(doca_dpa_dev_rdma_t rdma, doca_dpa_dev_sync_event_remote_net_t remote,
				    uint64_t count)
{
	doca_dpa_dev_rdma_signal_add(rdma, 0, remote, count);
}

void __doca_dpa_v26_rdma_synchronize(doca_dpa_dev_rdma_t rdma)
{
	volatile struct doca_dpa_rdma_block *r = (volatile struct doca_dpa_rdma_block *)(uintptr_t)rdma;
	doca_dpa_dev_completion_element_t e;
	doca_dpa_dev_completion_type_t type;
	uint16_t last;

	if (rdma == 0 || (rdma & 7) || r->comp == 0 || r->num_conns == 0)
		doca_dpa_fatal();
	/* 2.6 has one connection. Every operation is one WQEBB asking for a completion: the last
	 * one posted ends it. */
	if (r->conns[0].sq_pi == 0)
		return;
	last = (uint16_t)(r->conns[0].sq_pi - 1);
	for (;;) {
		while (!doca_dpa_dev_get_completion(r->comp, &e))
			;
		type = doca_dpa_dev_get_completion_type(e);
		doca_dpa_dev_completion_ack(r->comp, 1);
		if (type == DOCA_DPA_DEV_COMP_SEND_ERR || type == DOCA_DPA_DEV_COMP_RECV_ERR)
			doca_dpa_fatal();
		if (type == DOCA_DPA_DEV_COMP_SEND && doca_dpa_dev_rdma_completion_get_wr_index(e) == last)
			return;
	}
}

/*
 * DOCA 2.6's thread-local copies (doca_dpa_dev_memcpy_nb, _memcpy_transpose2D_nb,
 * _memcpy_synchronize): done by the thread itself, through a bounce buffer, so each is
 * complete when the call returns and synchronize only orders them (a stronger guarantee than
 * DOCA's non-blocking calls give). Two host buffers of different maps cannot share the one
 * window, hence the bounce buffer: each chunk is read with the source's key, then written
 * with the destination's.
 */
#define V26_BOUNCE 128

void doca_dpa_dev_memcpy_nb(doca_dpa_dev_buf_t dst, uint64_t dst_offset, doca_dpa_dev_buf_t src,
			    uint64_t src_offset, size_t length);
void doca_dpa_dev_memcpy_transpose2D_nb(doca_dpa_dev_buf_t dst, uint64_t dst_offset, doca_dpa_dev_buf_t src,
					uint64_t src_offset, size_t length, size_t element_size,
					size_t num_columns, size_t num_rows);
void doca_dpa_dev_memcpy_synchronize(void);

/* Copies `len` (at most V26_BOUNCE) bytes from (smap, saddr) to (dmap, daddr). */
static void v26_copy_chunk(doca_dpa_dev_mmap_t dmap, uint64_t daddr, doca_dpa_dev_mmap_t smap, uint64_t saddr,
			   size_t len)
{
	uint8_t bounce[V26_BOUNCE];
	volatile uint8_t *p = (volatile uint8_t *)(uintptr_t)external_ptr(smap, saddr);
	size_t i;

	__dpa_thread_window_read_inv();
	for (i = 0; i < len; i++)
		bounce[i] = p[i];
	p = (volatile uint8_t *)(uintptr_t)external_ptr(dmap, daddr);
	for (i = 0; i < len; i++)
		p[i] = bounce[i];
	__dpa_thread_window_writeback();
}

void doca_dpa_dev_memcpy_nb(doca_dpa_dev_buf_t dst, uint64_t dst_offset, doca_dpa_dev_buf_t src,
			    uint64_t src_offset, size_t length)
{
	uint64_t d = BUF_ADDR(dst) + dst_offset, s = BUF_ADDR(src) + src_offset;
	doca_dpa_dev_mmap_t dmap = BUF_MMAP(dst), smap = BUF_MMAP(src);

	while (length) {
		size_t n = length < V26_BOUNCE ? length : V26_BOUNCE;

		v26_copy_chunk(dmap, d, smap, s, n);
		d += n;
		s += n;
		length -= n;
	}
}

/* Element (r, c) of the num_rows x num_columns source goes to (c, r) of the destination. */
void doca_dpa_dev_memcpy_transpose2D_nb(doca_dpa_dev_buf_t dst, uint64_t dst_offset, doca_dpa_dev_buf_t src,
					uint64_t src_offset, size_t length, size_t element_size,
					size_t num_columns, size_t num_rows)
{
	uint64_t d = BUF_ADDR(dst) + dst_offset, s = BUF_ADDR(src) + src_offset;
	doca_dpa_dev_mmap_t dmap = BUF_MMAP(dst), smap = BUF_MMAP(src);
	size_t r, c;

	if (element_size == 0 || element_size > V26_BOUNCE || num_columns == 0 || num_rows == 0 ||
	    num_rows > length / element_size / num_columns)
		doca_dpa_fatal();
	for (r = 0; r < num_rows; r++)
		for (c = 0; c < num_columns; c++)
			v26_copy_chunk(dmap, d + (c * num_rows + r) * element_size, smap,
				       s + (r * num_columns + c) * element_size, element_size);
}

void doca_dpa_dev_memcpy_synchronize(void)
{
	__dpa_thread_fence(__DPA_SYSTEM, __DPA_RW, __DPA_RW);
}

/* ---- DOCA 2.7's and 2.8's device calls (MLX5_DPA_DOCA_DEV_API 207) ---- */

/* 2.7 asks for a completion with completion_requested > 0; 2.9 leaves it out with
 * OPTIMIZE_REPORTS. Every operation is handed to the NIC at once either way. */
#define V27_FLAGS(cr) ((cr) ? DOCA_DPA_DEV_SUBMIT_FLAG_FLUSH \
			    : (DOCA_DPA_DEV_SUBMIT_FLAG_FLUSH | DOCA_DPA_DEV_SUBMIT_FLAG_OPTIMIZE_REPORTS))

void __doca_dpa_v27_post_memcpy(doca_dpa_dev_async_ops_t h, doca_dpa_dev_mmap_t dst_mmap, uint64_t dst_addr,
				doca_dpa_dev_mmap_t src_mmap, uint64_t src_addr, size_t length, uint32_t cr);
void __doca_dpa_v27_post_buf_memcpy(doca_dpa_dev_async_ops_t h, doca_dpa_dev_buf_t dst, doca_dpa_dev_buf_t src,
				    uint32_t cr);
void __doca_dpa_v27_rdma_post_read(doca_dpa_dev_rdma_t rdma, doca_dpa_dev_mmap_t dst_mmap, uint64_t dst_addr,
				   doca_dpa_dev_mmap_t src_mmap, uint64_t src_addr, size_t length, uint32_t cr);
void __doca_dpa_v27_rdma_post_write(doca_dpa_dev_rdma_t rdma, doca_dpa_dev_mmap_t dst_mmap, uint64_t dst_addr,
				    doca_dpa_dev_mmap_t src_mmap, uint64_t src_addr, size_t length, uint32_t cr);
void __doca_dpa_v27_rdma_post_write_imm(doca_dpa_dev_rdma_t rdma, doca_dpa_dev_mmap_t dst_mmap, uint64_t dst_addr,
					doca_dpa_dev_mmap_t src_mmap, uint64_t src_addr, size_t length,
					uint32_t immediate, uint32_t cr);
void __doca_dpa_v27_rdma_post_send(doca_dpa_dev_rdma_t rdma, doca_dpa_dev_mmap_t mmap, uint64_t addr, size_t length,
				   uint32_t cr);
void __doca_dpa_v27_rdma_post_send_imm(doca_dpa_dev_rdma_t rdma, doca_dpa_dev_mmap_t mmap, uint64_t addr,
				       size_t length, uint32_t immediate, uint32_t cr);
void __doca_dpa_v27_rdma_post_atomic_fetch_add(doca_dpa_dev_rdma_t rdma, doca_dpa_dev_mmap_t dst_mmap,
					       uint64_t dst_addr, uint64_t value, uint32_t cr);
void __doca_dpa_v27_rdma_post_buf_read(doca_dpa_dev_rdma_t rdma, doca_dpa_dev_buf_t dst, doca_dpa_dev_buf_t src,
				       uint32_t cr);
void __doca_dpa_v27_rdma_post_buf_write(doca_dpa_dev_rdma_t rdma, doca_dpa_dev_buf_t dst, doca_dpa_dev_buf_t src,
					uint32_t cr);
void __doca_dpa_v27_rdma_post_buf_write_imm(doca_dpa_dev_rdma_t rdma, doca_dpa_dev_buf_t dst,
					    doca_dpa_dev_buf_t src, uint32_t immediate, uint32_t cr);
void __doca_dpa_v27_rdma_post_buf_send(doca_dpa_dev_rdma_t rdma, doca_dpa_dev_buf_t buf, uint32_t cr);
void __doca_dpa_v27_rdma_post_buf_send_imm(doca_dpa_dev_rdma_t rdma, doca_dpa_dev_buf_t buf, uint32_t immediate,
					   uint32_t cr);
void __doca_dpa_v27_rdma_post_buf_atomic_fetch_add(doca_dpa_dev_rdma_t rdma, doca_dpa_dev_buf_t dst,
						   uint64_t value, uint32_t cr);

void __doca_dpa_v27_post_memcpy(doca_dpa_dev_async_ops_t h, doca_dpa_dev_mmap_t dst_mmap, uint64_t dst_addr,
				doca_dpa_dev_mmap_t src_mmap, uint64_t src_addr, size_t length, uint32_t cr)
{
	doca_dpa_dev_post_memcpy(h, dst_mmap, dst_addr, src_mmap, src_addr, length, V27_FLAGS(cr));
}

void __doca_dpa_v27_post_buf_memcpy(doca_dpa_dev_async_ops_t h, doca_dpa_dev_buf_t dst, doca_dpa_dev_buf_t src,
				    uint32_t cr)
{
	doca_dpa_dev_post_buf_memcpy(h, dst, src, V27_FLAGS(cr));
}

void __doca_dpa_v27_rdma_post_read(doca_dpa_dev_rdma_t rdma, doca_dpa_dev_mmap_t dst_mmap, uint64_t dst_addr,
				   doca_dpa_dev_mmap_t src_mmap, uint64_t src_addr, size_t length, uint32_t cr)
{
	doca_dpa_dev_rdma_post_read(rdma, 0, dst_mmap, dst_addr, src_mmap, src_addr, length, V27_FLAGS(cr));
}

void __doca_dpa_v27_rdma_post_write(doca_dpa_dev_rdma_t rdma, doca_dpa_dev_mmap_t dst_mmap, uint64_t dst_addr,
				    doca_dpa_dev_mmap_t src_mmap, uint64_t src_addr, size_t length, uint32_t cr)
{
	doca_dpa_dev_rdma_post_write(rdma, 0, dst_mmap, dst_addr, src_mmap, src_addr, length, V27_FLAGS(cr));
}

void __doca_dpa_v27_rdma_post_write_imm(doca_dpa_dev_rdma_t rdma, doca_dpa_dev_mmap_t dst_mmap, uint64_t dst_addr,
					doca_dpa_dev_mmap_t src_mmap, uint64_t src_addr, size_t length,
					uint32_t immediate, uint32_t cr)
{
	doca_dpa_dev_rdma_post_write_imm(rdma, 0, dst_mmap, dst_addr, src_mmap, src_addr, length, immediate,
					 V27_FLAGS(cr));
}

void __doca_dpa_v27_rdma_post_send(doca_dpa_dev_rdma_t rdma, doca_dpa_dev_mmap_t mmap, uint64_t addr, size_t length,
				   uint32_t cr)
{
	doca_dpa_dev_rdma_post_send(rdma, 0, mmap, addr, length, V27_FLAGS(cr));
}

void __doca_dpa_v27_rdma_post_send_imm(doca_dpa_dev_rdma_t rdma, doca_dpa_dev_mmap_t mmap, uint64_t addr,
				       size_t length, uint32_t immediate, uint32_t cr)
{
	doca_dpa_dev_rdma_post_send_imm(rdma, 0, mmap, addr, length, immediate, V27_FLAGS(cr));
}

void __doca_dpa_v27_rdma_post_atomic_fetch_add(doca_dpa_dev_rdma_t rdma, doca_dpa_dev_mmap_t dst_mmap,
					       uint64_t dst_addr, uint64_t value, uint32_t cr)
{
	doca_dpa_dev_rdma_post_atomic_fetch_add(rdma, 0, dst_mmap, dst_addr, value, V27_FLAGS(cr));
}

void __doca_dpa_v27_rdma_post_buf_read(doca_dpa_dev_rdma_t rdma, doca_dpa_dev_buf_t dst, doca_dpa_dev_buf_t src,
				       uint32_t cr)
{
	doca_dpa_dev_rdma_post_buf_read(rdma, 0, dst, src, V27_FLAGS(cr));
}

void __doca_dpa_v27_rdma_post_buf_write(doca_dpa_dev_rdma_t rdma, doca_dpa_dev_buf_t dst, doca_dpa_dev_buf_t src,
					uint32_t cr)
{
	doca_dpa_dev_rdma_post_buf_write(rdma, 0, dst, src, V27_FLAGS(cr));
}

void __doca_dpa_v27_rdma_post_buf_write_imm(doca_dpa_dev_rdma_t rdma, doca_dpa_dev_buf_t dst,
					    doca_dpa_dev_buf_t src, uint32_t immediate, uint32_t cr)
{
	doca_dpa_dev_rdma_post_buf_write_imm(rdma, 0, dst, src, immediate, V27_FLAGS(cr));
}

void __doca_dpa_v27_rdma_post_buf_send(doca_dpa_dev_rdma_t rdma, doca_dpa_dev_buf_t buf, uint32_t cr)
{
	doca_dpa_dev_rdma_post_buf_send(rdma, 0, buf, V27_FLAGS(cr));
}

void __doca_dpa_v27_rdma_post_buf_send_imm(doca_dpa_dev_rdma_t rdma, doca_dpa_dev_buf_t buf, uint32_t immediate,
					   uint32_t cr)
{
	doca_dpa_dev_rdma_post_buf_send_imm(rdma, 0, buf, immediate, V27_FLAGS(cr));
}

void __doca_dpa_v27_rdma_post_buf_atomic_fetch_add(doca_dpa_dev_rdma_t rdma, doca_dpa_dev_buf_t dst,
						   uint64_t value, uint32_t cr)
{
	doca_dpa_dev_rdma_post_buf_atomic_fetch_add(rdma, 0, dst, value, V27_FLAGS(cr));
}
