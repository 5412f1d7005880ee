/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * The libflexio C API on a device: the version, applications and functions, a process, calls with and
 * without packed arguments, DPA memory, event handlers, outboxes, message streams and the
 * checks every entry point makes. Built with gcc against flexio/include and run under
 * `mlx5-dpa run` by tools/tests/real_clients.rs (flexio_c_api); it prints what it saw and
 * exits non-zero at the first check that fails.
 *
 * Usage: api DEVICE_ELF (fw-blobs/bin/rpc_calc.elf)
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libflexio/flexio_ver.h>
#define FLEXIO_VER_USED FLEXIO_VER(24, 4, 0)
#include <libflexio/flexio.h>

#define CHECK(cond, ...)                                                   \
	do {                                                               \
		if (!(cond)) {                                             \
			printf("FAILED (line %d): ", __LINE__);            \
			printf(__VA_ARGS__);                               \
			printf("\n");                                      \
			exit(1);                                           \
		}                                                          \
	} while (0)

/* Host stubs, as DPACC would define them: their addresses name the device functions. */
void rpc_calculate(void) {}
void rpc_digits8(void) {}
void calc_u32(void) {}

static void pack_u64s(void *argbuf, va_list ap, int n)
{
	uint64_t *w = argbuf;

	for (int i = 0; i < n; i++)
		w[i] = va_arg(ap, uint64_t);
}

static void pack_two(void *argbuf, va_list ap) { pack_u64s(argbuf, ap, 2); }
static void pack_eight(void *argbuf, va_list ap) { pack_u64s(argbuf, ap, 8); }

/* Two u32 for the program's own unpack (rpc_unpack_u32_pair). */
static void pack_u32_pair(void *argbuf, va_list ap)
{
	uint32_t *w = argbuf;

	w[0] = va_arg(ap, uint32_t);
	w[1] = va_arg(ap, uint32_t);
}

static void *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	void *buf;
	long n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc(n);
	if (!buf || fread(buf, 1, n, f) != (size_t)n) {
		fclose(f);
		free(buf);
		return NULL;
	}
	fclose(f);
	*len = n;
	return buf;
}

/* The layouts every FlexIO program fills in (LP64; flexio/src/queue.rs asserts the same). */
_Static_assert(sizeof(struct flexio_qmem) == 24, "struct flexio_qmem");
_Static_assert(sizeof(struct flexio_cq_attr) == 80, "struct flexio_cq_attr");
_Static_assert(offsetof(struct flexio_cq_attr, uar_id) == 16, "flexio_cq_attr.uar_id");
_Static_assert(offsetof(struct flexio_cq_attr, cq_ring_qmem) == 48, "flexio_cq_attr.cq_ring_qmem");
_Static_assert(offsetof(struct flexio_cq_attr, cq_dbr_daddr) == 72, "flexio_cq_attr.cq_dbr_daddr");
_Static_assert(sizeof(struct flexio_wq_attr) == 80, "struct flexio_wq_attr");
_Static_assert(offsetof(struct flexio_wq_attr, pd) == 16, "flexio_wq_attr.pd");
_Static_assert(offsetof(struct flexio_wq_attr, wq_ring_qmem) == 32, "flexio_wq_attr.wq_ring_qmem");
_Static_assert(offsetof(struct flexio_wq_attr, wq_dbr_qmem) == 56, "flexio_wq_attr.wq_dbr_qmem");

/* A CQ in DPA memory of 4 CQEs, each owned by hardware, and its zeroed record. */
static struct flexio_cq *make_cq(struct flexio_process *process, uint8_t element,
				 struct flexio_thread *thread)
{
	struct flexio_cq_attr attr = {0};
	struct flexio_cq *cq = NULL;
	struct mlx5_cqe64 cqes[4];
	uint64_t dbr = 0;

	memset(cqes, 0, sizeof(cqes));
	for (int i = 0; i < 4; i++)
		mlx5dv_set_cqe_owner(&cqes[i], 1);
	attr.log_cq_depth = 2;
	attr.element_type = element;
	attr.thread = thread;
	attr.uar_id = flexio_uar_get_id(flexio_process_get_uar(process));
	CHECK(flexio_copy_from_host(process, cqes, sizeof(cqes), &attr.cq_ring_qmem.daddr) ==
		      FLEXIO_STATUS_SUCCESS &&
	      flexio_copy_from_host(process, &dbr, sizeof(dbr), &attr.cq_dbr_daddr) ==
		      FLEXIO_STATUS_SUCCESS,
	      "the CQ's memory");
	CHECK(flexio_cq_create(process, NULL, &attr, &cq) == FLEXIO_STATUS_SUCCESS &&
		      flexio_cq_get_cq_num(cq) != UINT32_MAX,
	      "flexio_cq_create (element type %#x)", element);
	return cq;
}

/* A root-table steering rule to the RQ's TIR, made with mlx5dv_dr on the program's own
 * context, as FlexIO's samples steer: the TIR is an object of that context. */
static void steer_to(struct ibv_context *ibv_ctx, struct flexio_rq *rq)
{
	uint8_t buf[sizeof(struct mlx5dv_flow_match_parameters) + 64];
	struct mlx5dv_flow_match_parameters *p = (void *)buf;
	struct mlx5dv_dr_domain *dmn;
	struct mlx5dv_dr_table *tbl;
	struct mlx5dv_dr_matcher *matcher;
	struct mlx5dv_dr_action *action;
	struct mlx5dv_dr_rule *rule;

	dmn = mlx5dv_dr_domain_create(ibv_ctx, MLX5DV_DR_DOMAIN_TYPE_NIC_RX);
	CHECK(dmn, "mlx5dv_dr_domain_create (errno %d)", errno);
	tbl = mlx5dv_dr_table_create(dmn, 0);
	CHECK(tbl, "mlx5dv_dr_table_create of the root (errno %d)", errno);
	/* fte_match_set_lyr_2_4: the source MAC is its first six bytes. */
	memset(buf, 0, sizeof(buf));
	p->match_sz = 64;
	memset(p->match_buf, 0xff, 6);
	matcher = mlx5dv_dr_matcher_create(tbl, 0, 1 /* outer headers */, p);
	CHECK(matcher, "mlx5dv_dr_matcher_create (errno %d)", errno);
	action = mlx5dv_dr_action_create_dest_devx_tir(flexio_rq_get_tir(rq));
	CHECK(action, "mlx5dv_dr_action_create_dest_devx_tir (errno %d)", errno);
	memcpy(p->match_buf, "\x02\x42\x7e\x7f\xeb\x02", 6);
	rule = mlx5dv_dr_rule_create(matcher, p, 1, &action);
	CHECK(rule, "mlx5dv_dr_rule_create (errno %d)", errno);
	CHECK(mlx5dv_dr_matcher_destroy(matcher) != 0, "a matcher in use is not destroyed");
	CHECK(!mlx5dv_dr_rule_destroy(rule) && !mlx5dv_dr_action_destroy(action) &&
		      !mlx5dv_dr_matcher_destroy(matcher) && !mlx5dv_dr_table_destroy(tbl) &&
		      !mlx5dv_dr_domain_destroy(dmn),
	      "the steering objects' destroys");
	printf("steering: a root rule from 02:42:7e:7f:eb:02 to the RQ's TIR\n");
}

/* CQs (one activating the event handler's thread), an Ethernet SQ and an RQ with its TIR. */
static void queues(struct ibv_context *ibv_ctx, struct flexio_process *process,
		   struct flexio_event_handler *eh)
{
	struct flexio_wq_attr sq_attr = {0}, rq_attr = {0};
	struct flexio_cq *sq_cq, *rq_cq, *bad = NULL;
	struct flexio_cq_attr bad_attr = {0};
	struct flexio_sq *sq = NULL;
	struct flexio_rq *rq = NULL;

	CHECK(flexio_event_handler_get_thread(eh), "flexio_event_handler_get_thread");
	sq_cq = make_cq(process, FLEXIO_CQ_ELEMENT_TYPE_NON_DPA_CQ, NULL);
	rq_cq = make_cq(process, FLEXIO_CQ_ELEMENT_TYPE_DPA_THREAD,
			flexio_event_handler_get_thread(eh));

	sq_attr.log_wq_depth = 2;
	sq_attr.uar_id = flexio_uar_get_id(flexio_process_get_uar(process));
	sq_attr.pd = flexio_process_get_pd(process);
	CHECK(flexio_buf_dev_alloc(process, 4 * 64, &sq_attr.wq_ring_qmem.daddr) ==
		      FLEXIO_STATUS_SUCCESS,
	      "the SQ's ring");
	CHECK(flexio_sq_create(process, NULL, flexio_cq_get_cq_num(sq_cq), &sq_attr, &sq) ==
		      FLEXIO_STATUS_SUCCESS &&
	      flexio_sq_get_wq_num(sq) != UINT32_MAX,
	      "flexio_sq_create");

	rq_attr = sq_attr;
	CHECK(flexio_buf_dev_alloc(process, 4 * 16, &rq_attr.wq_ring_qmem.daddr) ==
		      FLEXIO_STATUS_SUCCESS,
	      "the RQ's ring");
	CHECK(flexio_rq_create(process, NULL, flexio_cq_get_cq_num(rq_cq), &rq_attr, &rq) ==
		      FLEXIO_STATUS_SUCCESS &&
	      flexio_rq_get_wq_num(rq) != UINT32_MAX && flexio_rq_get_tir(rq),
	      "flexio_rq_create");
	steer_to(ibv_ctx, rq);
	printf("queues: CQs %#x and %#x, SQ %#x, RQ %#x with a TIR\n",
	       flexio_cq_get_cq_num(sq_cq), flexio_cq_get_cq_num(rq_cq), flexio_sq_get_wq_num(sq),
	       flexio_rq_get_wq_num(rq));

	bad_attr.element_type = FLEXIO_CQ_ELEMENT_TYPE_NON_DPA_CQ;
	bad_attr.cqe_comp_type = FLEXIO_CQE_COMP_BASIC;
	CHECK(flexio_cq_create(process, NULL, &bad_attr, &bad) == FLEXIO_STATUS_FAILED,
	      "CQE compression is refused");

	/* Moderation: what the CQ was made with, then changed. */
	{
		uint16_t count = 0, period = 0, mode = 9;

		CHECK(flexio_cq_query_moderation(rq_cq, &count, &period, &mode) ==
				      FLEXIO_STATUS_SUCCESS &&
			      mode == FLEXIO_CQ_PERIOD_MODE_EVENT,
		      "flexio_cq_query_moderation");
		CHECK(flexio_cq_modify_moderation(rq_cq, 8, 16, FLEXIO_CQ_PERIOD_MODE_EVENT) ==
			      FLEXIO_STATUS_SUCCESS,
		      "flexio_cq_modify_moderation");
		CHECK(flexio_cq_query_moderation(rq_cq, &count, &period, &mode) ==
				      FLEXIO_STATUS_SUCCESS &&
			      count == 8 && period == 16,
		      "the CQ's moderation is 8 CQEs / 16 us (read %u / %u)", count, period);
		CHECK(flexio_cq_modify_moderation(rq_cq, 8, 16, FLEXIO_CQ_PERIOD_MODE_CQE) ==
			      FLEXIO_STATUS_FAILED,
		      "CQE period mode is refused");
		CHECK(flexio_cq_query_moderation(rq_cq, NULL, &period, &mode) == FLEXIO_STATUS_FAILED,
		      "a NULL out-pointer is refused");
	}

	CHECK(flexio_rq_set_err_state(rq) == FLEXIO_STATUS_SUCCESS, "flexio_rq_set_err_state");
	CHECK(flexio_rq_set_err_state(rq) == FLEXIO_STATUS_FAILED,
	      "an RQ in error is not moved to error again");

	CHECK(flexio_rq_destroy(rq) == FLEXIO_STATUS_SUCCESS &&
		      flexio_sq_destroy(sq) == FLEXIO_STATUS_SUCCESS &&
		      flexio_cq_destroy(rq_cq) == FLEXIO_STATUS_SUCCESS &&
		      flexio_cq_destroy(sq_cq) == FLEXIO_STATUS_SUCCESS,
	      "the queues' destroys");
	CHECK(flexio_sq_destroy(sq) == FLEXIO_STATUS_FAILED, "an SQ destroyed twice is refused");
}

int main(int argc, char **argv)
{
	struct flexio_app_attr app_attr = {0};
	struct flexio_app *app = NULL, **list = NULL;
	struct flexio_process *process = NULL;
	struct flexio_msg_stream *stream = NULL;
	flexio_msg_stream_attr_t stream_attr = {0};
	struct flexio_event_handler_attr eh_attr = {0};
	struct flexio_event_handler *eh = NULL;
	struct flexio_outbox *outbox = NULL;
	struct flexio_uar *uar = NULL;
	struct flexio_heap_mem_info info = {0};
	struct ibv_device **devs;
	struct ibv_context *ibv_ctx;
	flexio_func_t *echo = NULL;
	flexio_uintptr_t daddr = 0, copy = 0;
	uint64_t ret = 0, elf_copy[4];
	char name[FLEXIO_MAX_NAME_LEN + 1];
	uint32_t n = 0, pup = 9;
	size_t elf_len = 0;
	void *elf;
	int found = 0;

	CHECK(argc == 2, "usage: %s DEVICE_ELF", argv[0]);

	/* The version: outside the supported range refused, then the program's own, once. */
	CHECK(flexio_version_set(FLEXIO_VER(23, 10, 0)) == FLEXIO_STATUS_FAILED, "version too old");
	CHECK(flexio_version_set(FLEXIO_VER(99, 1, 0)) == FLEXIO_STATUS_FAILED, "version too new");
	CHECK(flexio_version_set(FLEXIO_VER_USED) == FLEXIO_STATUS_SUCCESS, "flexio_version_set");
	CHECK(flexio_version_set(FLEXIO_VER_USED) == FLEXIO_STATUS_SUCCESS, "the same again");
	CHECK(flexio_version_set(FLEXIO_CURRENT_VERSION) == FLEXIO_STATUS_FAILED,
	      "another version after one was set");
	printf("version: 24.04 set\n");
	elf = read_file(argv[1], &elf_len);
	CHECK(elf, "cannot read %s", argv[1]);

	/* Applications and functions. */
	app_attr.app_name = "rpc_calc";
	app_attr.app_ptr = elf;
	app_attr.app_bsize = elf_len;
	CHECK(flexio_app_create(&app_attr, &app) == FLEXIO_STATUS_SUCCESS, "flexio_app_create");
	free(elf); /* the library keeps its own copy */
	CHECK(!strcmp(flexio_app_get_name(app), "rpc_calc"), "flexio_app_get_name");
	CHECK(flexio_app_get_elf_size(app) == elf_len, "flexio_app_get_elf_size");
	CHECK(flexio_app_get_elf(app, elf_copy, sizeof(elf_copy)) == FLEXIO_STATUS_FAILED,
	      "flexio_app_get_elf into a buffer too small");
	CHECK(flexio_app_get_list(&list, &n) == FLEXIO_STATUS_SUCCESS, "flexio_app_get_list");
	for (uint32_t i = 0; i < n; i++)
		found |= list[i] == app;
	CHECK(found && flexio_app_list_free(list) == FLEXIO_STATUS_SUCCESS, "the app list");
	printf("app %s: %zu bytes, %u app(s) listed\n", flexio_app_get_name(app), elf_len, n);

	CHECK(flexio_func_pup_register(app, "rpc_calculate", "mlx5_dpa_rpc_unpack_u64",
				       rpc_calculate, 16, pack_two) == FLEXIO_STATUS_SUCCESS,
	      "register rpc_calculate");
	CHECK(flexio_func_pup_register(app, "rpc_digits8", "mlx5_dpa_rpc_unpack_u64",
				       rpc_digits8, 64, pack_eight) == FLEXIO_STATUS_SUCCESS,
	      "register rpc_digits8");
	CHECK(flexio_func_pup_register(app, "rpc_calculate", "rpc_unpack_u32_pair", calc_u32, 8,
				       pack_u32_pair) == FLEXIO_STATUS_SUCCESS,
	      "register rpc_calculate with the program's own unpack");
	CHECK(flexio_func_register(app, "rpc_echo", &echo) == FLEXIO_STATUS_SUCCESS && echo,
	      "register rpc_echo");
	CHECK(flexio_func_register(app, "no_such_function", &echo) == FLEXIO_STATUS_FAILED,
	      "a function the ELF lacks is refused");
	CHECK(flexio_func_pup_register(app, "rpc_calculate", "mlx5_dpa_rpc_unpack_u64",
				       rpc_calculate, 16, pack_two) == FLEXIO_STATUS_FAILED,
	      "a stub registered twice is refused");
	CHECK(flexio_func_get_register_info(app, rpc_calculate, &pup, name, NULL, sizeof(name),
					    NULL, NULL, NULL, NULL) == FLEXIO_STATUS_SUCCESS &&
		      pup == 1 && !strcmp(name, "rpc_calculate"),
	      "flexio_func_get_register_info");

	/* A process on the first device. */
	devs = ibv_get_device_list(NULL);
	CHECK(devs && devs[0], "no RDMA device");
	ibv_ctx = ibv_open_device(devs[0]);
	CHECK(ibv_ctx, "ibv_open_device");
	CHECK(flexio_process_create(NULL, app, NULL, &process) == FLEXIO_STATUS_FAILED,
	      "a NULL ibv_context is refused");
	CHECK(flexio_process_create(ibv_ctx, app, NULL, &process) == FLEXIO_STATUS_SUCCESS,
	      "flexio_process_create");
	printf("process on %s, DUMEM %#x, UAR %#x\n", ibv_get_device_name(devs[0]),
	       flexio_process_get_dumem_id(process),
	       flexio_uar_get_id(flexio_process_get_uar(process)));

	stream_attr.data_bsize = 4 << FLEXIO_MSG_DEV_LOG_DATA_CHUNK_BSIZE;
	stream_attr.sync_mode = FLEXIO_LOG_DEV_SYNC_MODE_SYNC;
	stream_attr.level = FLEXIO_MSG_DEV_INFO;
	CHECK(flexio_msg_stream_create(process, &stream_attr, stdout, NULL, &stream) ==
		      FLEXIO_STATUS_SUCCESS,
	      "flexio_msg_stream_create");
	CHECK(flexio_msg_stream_get_id(stream) == FLEXIO_MSG_DEV_DEFAULT_STREAM_ID,
	      "the first stream is the default one");
	CHECK(flexio_msg_stream_level_set(stream, FLEXIO_MSG_DEV_DEBUG) == FLEXIO_STATUS_FAILED,
	      "the default stream's level is fixed");

	/* Calls. */
	CHECK(flexio_process_call(process, rpc_calculate, &ret, 44ul, 55ul) ==
		      FLEXIO_STATUS_SUCCESS && ret == 99,
	      "rpc_calculate(44, 55) gave %lu", (unsigned long)ret);
	CHECK(flexio_msg_stream_flush(stream) == FLEXIO_STATUS_SUCCESS, "flexio_msg_stream_flush");
	printf("Result: %lu\n", (unsigned long)ret);
	CHECK(flexio_process_call(process, rpc_digits8, &ret, 1ul, 2ul, 3ul, 4ul, 5ul, 6ul, 7ul,
				  8ul) == FLEXIO_STATUS_SUCCESS && ret == 12345678,
	      "rpc_digits8(1..8) gave %lu", (unsigned long)ret);
	CHECK(flexio_process_call(process, calc_u32, &ret, 7000u, 77u) == FLEXIO_STATUS_SUCCESS &&
		      ret == 7077,
	      "rpc_calculate through rpc_unpack_u32_pair gave %lu", (unsigned long)ret);
	CHECK(flexio_process_call(process, echo, &ret, 0xfeedfaceul) == FLEXIO_STATUS_SUCCESS &&
		      ret == 0xfeedface,
	      "rpc_echo gave %#lx", (unsigned long)ret);
	CHECK(flexio_process_call(process, (flexio_func_t *)main, &ret, 1ul) ==
		      FLEXIO_STATUS_FAILED,
	      "a stub never registered is refused");
	CHECK(flexio_process_call((struct flexio_process *)app, rpc_calculate, &ret, 1ul, 2ul) ==
		      FLEXIO_STATUS_FAILED,
	      "an application is no process");
	printf("calls: 4 of 4 returned what they should\n");

	/* DPA memory. */
	{
		char text[100];

		memset(text, 'x', sizeof(text));
		CHECK(flexio_buf_dev_alloc(process, 4096, &daddr) == FLEXIO_STATUS_SUCCESS && daddr,
		      "flexio_buf_dev_alloc");
		CHECK(flexio_buf_dev_memset(process, 0, 4096, daddr) == FLEXIO_STATUS_SUCCESS,
		      "flexio_buf_dev_memset");
		CHECK(flexio_host2dev_memcpy(process, text, sizeof(text), daddr) ==
			      FLEXIO_STATUS_SUCCESS,
		      "flexio_host2dev_memcpy");
		CHECK(flexio_copy_from_host(process, text, sizeof(text), &copy) ==
			      FLEXIO_STATUS_SUCCESS && copy && copy != daddr,
		      "flexio_copy_from_host");
		CHECK(flexio_process_mem_info_get(process, &info) == FLEXIO_STATUS_SUCCESS &&
			      info.requested == 4096 + sizeof(text) &&
			      info.allocated >= info.requested && info.size > info.allocated,
		      "flexio_process_mem_info_get: requested %zu, allocated %zu, size %zu",
		      info.requested, info.allocated, info.size);
		CHECK(flexio_buf_dev_free(process, copy) == FLEXIO_STATUS_SUCCESS &&
			      flexio_buf_dev_free(process, copy) == FLEXIO_STATUS_FAILED,
		      "a buffer freed twice is refused the second time");
		{
			struct flexio_mkey_attr mkey_attr = {0};
			struct flexio_mkey *mkey = NULL;

			mkey_attr.pd = flexio_process_get_pd(process);
			mkey_attr.daddr = daddr;
			mkey_attr.len = 4096;
			mkey_attr.access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
			CHECK(mkey_attr.pd, "flexio_process_get_pd");
			CHECK(flexio_device_mkey_create(process, &mkey_attr, &mkey) ==
				      FLEXIO_STATUS_SUCCESS &&
			      flexio_mkey_get_id(mkey) != UINT32_MAX,
			      "flexio_device_mkey_create");
			printf("mkey %#x over %#lx\n", flexio_mkey_get_id(mkey),
			       (unsigned long)daddr);
			CHECK(flexio_device_mkey_destroy(mkey) == FLEXIO_STATUS_SUCCESS &&
				      flexio_device_mkey_destroy(NULL) == FLEXIO_STATUS_SUCCESS,
			      "flexio_device_mkey_destroy");
			mkey_attr.daddr = 0x10;
			CHECK(flexio_device_mkey_create(process, &mkey_attr, &mkey) ==
				      FLEXIO_STATUS_FAILED,
			      "a key below the process's memory is refused");
		}
		CHECK(flexio_buf_dev_free(process, daddr) == FLEXIO_STATUS_SUCCESS &&
			      flexio_buf_dev_free(process, 0) == FLEXIO_STATUS_SUCCESS,
		      "flexio_buf_dev_free");
		printf("memory: %zu bytes asked for, %zu held, of %zu\n", info.requested,
		       info.allocated, info.size);
	}

	/* An event handler, an outbox, and queues. */
	eh_attr.host_stub_func = echo;
	eh_attr.affinity.type = FLEXIO_AFFINITY_NONE;
	CHECK(flexio_event_handler_create(process, &eh_attr, &eh) == FLEXIO_STATUS_SUCCESS,
	      "flexio_event_handler_create");
	CHECK(flexio_event_handler_get_obj_id(eh) != UINT32_MAX, "flexio_event_handler_get_obj_id");
	CHECK(flexio_event_handler_get_id(eh) == flexio_event_handler_get_obj_id(eh),
	      "flexio_event_handler_get_id: the thread metadata's id");
	CHECK(flexio_event_handler_get_id(NULL) == UINT32_MAX, "no id for a NULL handler");
	CHECK(flexio_outbox_create(process, NULL, &outbox) == FLEXIO_STATUS_SUCCESS,
	      "flexio_outbox_create");
	printf("event handler thread %#x, outbox %#x\n", flexio_event_handler_get_obj_id(eh),
	       flexio_outbox_get_id(outbox));
	CHECK(flexio_outbox_get_uar(outbox) == flexio_process_get_uar(process),
	      "an outbox rings through the process's UAR");
	CHECK(flexio_outbox_get_uar(NULL) == NULL, "a NULL outbox has no UAR");

	/* A UAR of the program's own, beside the process's. */
	CHECK(flexio_uar_create(process, &uar) == FLEXIO_STATUS_SUCCESS && uar, "flexio_uar_create");
	/* rdma-core hands out UAR registers from shared pages: the new one may share the
	 * process's page (it did on the served device, 2026-11-29). */
	CHECK(flexio_uar_get_id(uar) != UINT32_MAX && uar != flexio_process_get_uar(process),
	      "the new UAR is a handle of its own");
	CHECK(flexio_uar_destroy(flexio_process_get_uar(process)) == FLEXIO_STATUS_FAILED,
	      "the process's own UAR is not the caller's to destroy");
	CHECK(flexio_uar_destroy(uar) == FLEXIO_STATUS_SUCCESS &&
		      flexio_uar_destroy(uar) == FLEXIO_STATUS_FAILED,
	      "flexio_uar_destroy, once");
	CHECK(flexio_outbox_destroy(outbox) == FLEXIO_STATUS_SUCCESS &&
		      flexio_outbox_destroy(outbox) == FLEXIO_STATUS_FAILED,
	      "an outbox destroyed twice is refused the second time");
	queues(ibv_ctx, process, eh);
	CHECK(flexio_event_handler_destroy(eh) == FLEXIO_STATUS_SUCCESS,
	      "flexio_event_handler_destroy");

	CHECK(flexio_err_status_get(process) == FLEXIO_DEV_NO_ERROR, "flexio_err_status_get");
	CHECK(flexio_msg_stream_destroy(stream) == FLEXIO_STATUS_SUCCESS,
	      "flexio_msg_stream_destroy");

	/* FlexIO's deprecated default-stream calls, as older programs use them. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
	CHECK(flexio_log_dev_flush(process) == FLEXIO_STATUS_FAILED,
	      "no log_dev stream to flush yet");
	CHECK(flexio_log_dev_init(process, &stream_attr, stdout, NULL) == FLEXIO_STATUS_SUCCESS,
	      "flexio_log_dev_init");
	CHECK(flexio_log_dev_init(process, &stream_attr, stdout, NULL) == FLEXIO_STATUS_FAILED,
	      "one log_dev stream per process");
	CHECK(flexio_process_call(process, rpc_calculate, &ret, 20ul, 22ul) ==
			      FLEXIO_STATUS_SUCCESS && ret == 42,
	      "rpc_calculate(20, 22) gave %lu", (unsigned long)ret);
	CHECK(flexio_log_dev_flush(process) == FLEXIO_STATUS_SUCCESS, "flexio_log_dev_flush");
	CHECK(flexio_log_dev_destroy(process) == FLEXIO_STATUS_SUCCESS &&
		      flexio_log_dev_destroy(process) == FLEXIO_STATUS_FAILED,
	      "flexio_log_dev_destroy, once");
#pragma GCC diagnostic pop
	CHECK(flexio_process_destroy(process) == FLEXIO_STATUS_SUCCESS, "flexio_process_destroy");
	CHECK(flexio_process_destroy(process) == FLEXIO_STATUS_FAILED,
	      "a process destroyed twice is refused the second time");
	CHECK(flexio_process_destroy(NULL) == FLEXIO_STATUS_SUCCESS, "NULL is no process to destroy");
	CHECK(flexio_app_destroy(app) == FLEXIO_STATUS_SUCCESS, "flexio_app_destroy");
	ibv_close_device(ibv_ctx);
	ibv_free_device_list(devs);
	printf("flexio C API: all checks passed\n");
	return 0;
}
