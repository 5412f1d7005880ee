/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * libflexio's RC QPs on a device, with fw-blobs' selftest program: a QP whose ring is in DPA
 * memory is moved RST -> INIT -> RTR -> RTS (force loopback to itself), the device posts a
 * NOP on it (st_wqe_nop) and its completion lands in a CQ whose ring is host memory the
 * program registered as a UMEM; then RTS -> RTS, ERR and RST, a second QP receiving from an
 * RMP, the refusals, and last a fault: the error descriptor wakes and the crash data is
 * written. Built with gcc
 * against flexio/include and run under `mlx5-dpa run` by tools/tests/real_clients.rs
 * (flexio_c_qp); it prints what it saw and exits non-zero at the first check that fails.
 *
 * Usage: qp DEVICE_ELF (fw-blobs/bin/selftest.elf)
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <infiniband/mlx5dv.h>
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

/* The layout every FlexIO program fills in (LP64; flexio/src/qp.rs asserts the same). */
_Static_assert(sizeof(struct flexio_qp_attr) == 184, "struct flexio_qp_attr");
_Static_assert(offsetof(struct flexio_qp_attr, pd) == 24, "flexio_qp_attr.pd");
_Static_assert(offsetof(struct flexio_qp_attr, qp_wq_buff_qmem) == 64, "qp_wq_buff_qmem");
_Static_assert(offsetof(struct flexio_qp_attr, next_state) == 112, "next_state");
_Static_assert(offsetof(struct flexio_qp_attr, dest_mac) == 128, "dest_mac");
_Static_assert(offsetof(struct flexio_qp_attr, rgid_or_rip) == 136, "rgid_or_rip");
_Static_assert(offsetof(struct flexio_qp_attr, path_mtu) == 160, "path_mtu");
_Static_assert(offsetof(struct flexio_qp_attr, next_rcv_psn) == 168, "next_rcv_psn");
_Static_assert(offsetof(struct flexio_qp_attr, isolate_vl_tc) == 181, "isolate_vl_tc");

/* selftest's argument block of st_wqe_nop (fw-blobs/src/selftest.h, struct st_coh_args):
 * window_id = the QP number, mkey = the WQE index, haddr = the send ring's DPA address. */
struct st_coh_args {
	uint32_t window_id;
	uint32_t mkey;
	uint64_t haddr;
	uint64_t mode;
	uint64_t stop;
};

#define LOG_CQ 2

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

static void modify(struct flexio_qp *qp, struct flexio_qp_attr *attr, enum flexio_qp_state to,
		   const char *what)
{
	attr->next_state = to;
	CHECK(flexio_qp_modify(qp, attr, NULL) == FLEXIO_STATUS_SUCCESS, "flexio_qp_modify to %s",
	      what);
	CHECK(flexio_qp_state_get(qp) == to, "the QP is in %s", what);
}

int main(int argc, char **argv)
{
	struct flexio_qp_attr_opt_param_mask mask = {0};
	struct flexio_app_attr app_attr = {0};
	struct flexio_cq_attr cq_attr = {0};
	struct flexio_qp_attr attr = {0};
	struct st_coh_args args = {0};
	struct flexio_process *process = NULL;
	struct flexio_app *app = NULL;
	struct flexio_qp *qp = NULL, *bad = NULL, *srq_qp = NULL;
	struct flexio_wq_attr wq_attr = {0};
	struct flexio_rmp *rmp = NULL;
	struct flexio_cq *cq = NULL;
	struct mlx5dv_devx_umem *umem;
	struct mlx5_cqe64 *cqes;
	flexio_func_t *nop_fn = NULL;
	flexio_uintptr_t ring = 0, args_daddr = 0;
	struct ibv_device **devs;
	struct ibv_context *ibv_ctx;
	uint64_t ret = 1;
	size_t elf_len = 0;
	uint32_t qpn;
	void *elf;
	char crash_dir[] = "/tmp/flexio-qp-XXXXXX", crash_base[64];
	flexio_func_t *fault_fn = NULL;
	struct dirent *ent;
	int polls, err_fd, crash_files = 0;
	DIR *dir;

	CHECK(argc == 2, "usage: %s DEVICE_ELF", argv[0]);
	elf = read_file(argv[1], &elf_len);
	CHECK(elf, "cannot read %s", argv[1]);
	app_attr.app_name = "selftest";
	app_attr.app_ptr = elf;
	app_attr.app_bsize = elf_len;
	CHECK(flexio_app_create(&app_attr, &app) == FLEXIO_STATUS_SUCCESS, "flexio_app_create");
	free(elf);
	CHECK(flexio_func_register(app, "st_wqe_nop", &nop_fn) == FLEXIO_STATUS_SUCCESS,
	      "flexio_func_register");
	devs = ibv_get_device_list(NULL);
	CHECK(devs && devs[0], "no RDMA device");
	ibv_ctx = ibv_open_device(devs[0]);
	CHECK(ibv_ctx, "ibv_open_device");
	CHECK(flexio_process_create(ibv_ctx, app, NULL, &process) == FLEXIO_STATUS_SUCCESS,
	      "flexio_process_create");

	/* The CQ's ring in host memory, a UMEM of the program's context; CQEs owned by hardware. */
	CHECK(posix_memalign((void **)&cqes, 4096, 4096) == 0, "posix_memalign");
	memset(cqes, 0, 4096);
	for (int i = 0; i < 1 << LOG_CQ; i++)
		mlx5dv_set_cqe_owner(&cqes[i], 1), cqes[i].op_own |= MLX5_CQE_INVALID << 4;
	umem = mlx5dv_devx_umem_reg(ibv_ctx, cqes, 4096, IBV_ACCESS_LOCAL_WRITE);
	CHECK(umem, "mlx5dv_devx_umem_reg");
	cq_attr.log_cq_depth = LOG_CQ;
	cq_attr.element_type = FLEXIO_CQ_ELEMENT_TYPE_NON_DPA_CQ;
	cq_attr.uar_id = flexio_uar_get_id(flexio_process_get_uar(process));
	cq_attr.cq_ring_qmem.memtype = FLEXIO_MEMTYPE_HOST;
	cq_attr.cq_ring_qmem.humem_offset = 0;
	cq_attr.cq_ring_qmem.umem_id = umem->umem_id;
	CHECK(flexio_buf_dev_alloc(process, 64, &cq_attr.cq_dbr_daddr) == FLEXIO_STATUS_SUCCESS &&
		      flexio_buf_dev_memset(process, 0, 64, cq_attr.cq_dbr_daddr) ==
			      FLEXIO_STATUS_SUCCESS,
	      "the CQ's record");
	CHECK(flexio_cq_create(process, NULL, &cq_attr, &cq) == FLEXIO_STATUS_SUCCESS,
	      "flexio_cq_create with a host ring");

	/* The QP: no receive queue, 4 send WQEs in DPA memory, the record made by the library. */
	CHECK(flexio_buf_dev_alloc(process, 4 * 64, &ring) == FLEXIO_STATUS_SUCCESS, "the QP's ring");
	attr.transport_type = FLEXIO_QPC_ST_RC;
	attr.qp_access_mask = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	attr.pd = flexio_process_get_pd(process);
	attr.log_sq_depth = 2;
	attr.sq_cqn = flexio_cq_get_cq_num(cq);
	attr.rq_cqn = flexio_cq_get_cq_num(cq);
	attr.rq_type = FLEXIO_QP_QPC_RQ_TYPE_ZERO_SIZE_RQ;
	attr.qp_wq_buff_qmem.memtype = FLEXIO_MEMTYPE_DPA;
	attr.qp_wq_buff_qmem.daddr = ring;
	attr.qp_wq_dbr_qmem.memtype = FLEXIO_MEMTYPE_DPA;
	CHECK(flexio_qp_create(process, NULL, NULL, &qp) == FLEXIO_STATUS_FAILED,
	      "a QP without attributes is refused");
	attr.transport_type = FLEXIO_QPC_ST_UD;
	CHECK(flexio_qp_create(process, NULL, &attr, &bad) == FLEXIO_STATUS_FAILED,
	      "a UD QP is refused");
	attr.transport_type = FLEXIO_QPC_ST_RC;
	attr.rq_type = FLEXIO_QP_QPC_RQ_TYPE_SRQ_RMP_XRC_SRQ_XRQ;
	attr.rmpqn = 0x123456;
	CHECK(flexio_qp_create(process, NULL, &attr, &bad) == FLEXIO_STATUS_FAILED,
	      "a QP on an RMP the process does not have is refused");
	attr.rq_type = FLEXIO_QP_QPC_RQ_TYPE_ZERO_SIZE_RQ;
	CHECK(flexio_qp_create(process, NULL, &attr, &qp) == FLEXIO_STATUS_SUCCESS && qp,
	      "flexio_qp_create");
	qpn = flexio_qp_get_qp_num(qp);
	CHECK(qpn != UINT32_MAX, "flexio_qp_get_qp_num");
	CHECK(flexio_qp_state_get(qp) == FLEXIO_QP_STATE_RST, "a new QP is in RST");

	/* To RTS, connected to itself through the device (force loopback). */
	attr.vhca_port_num = 1;
	modify(qp, &attr, FLEXIO_QP_STATE_INIT, "INIT");
	attr.next_state = FLEXIO_QP_STATE_RTS;
	CHECK(flexio_qp_modify(qp, &attr, NULL) == FLEXIO_STATUS_FAILED, "INIT -> RTS is refused");
	attr.remote_qp_num = qpn;
	attr.fl = 1;
	attr.next_state = FLEXIO_QP_STATE_RTR;
	CHECK(flexio_qp_modify(qp, &attr, NULL) == FLEXIO_STATUS_FAILED,
	      "INIT -> RTR without a path MTU is refused");
	attr.path_mtu = FLEXIO_QP_QPC_MTU_BYTES_1K;
	attr.min_rnr_nak_timer = 12;
	attr.log_rra_max = 2;
	modify(qp, &attr, FLEXIO_QP_STATE_RTR, "RTR");
	attr.retry_count = 7;
	attr.log_sra_max = 2;
	modify(qp, &attr, FLEXIO_QP_STATE_RTS, "RTS");
	printf("QP %#x: RST -> INIT -> RTR -> RTS\n", qpn);

	/* The device posts a NOP asking for a CQE; it arrives in the host ring. */
	args.window_id = qpn;
	args.mkey = 0;
	args.haddr = ring;
	args.mode = 1;
	CHECK(flexio_copy_from_host(process, &args, sizeof(args), &args_daddr) ==
		      FLEXIO_STATUS_SUCCESS,
	      "the NOP's arguments");
	CHECK(flexio_process_call(process, nop_fn, &ret, args_daddr) == FLEXIO_STATUS_SUCCESS &&
		      ret == 0,
	      "st_wqe_nop");
	/* Bounded: 10 s of 1 ms polls. */
	for (polls = 0; polls < 10000 && mlx5dv_get_cqe_opcode(&cqes[0]) == MLX5_CQE_INVALID;
	     polls++)
		nanosleep(&(struct timespec){.tv_nsec = 1000000}, NULL);
	CHECK(mlx5dv_get_cqe_opcode(&cqes[0]) == MLX5_CQE_REQ, "a requester CQE (opcode %#x)",
	      mlx5dv_get_cqe_opcode(&cqes[0]));
	CHECK((be32toh(cqes[0].sop_drop_qpn) & 0xffffff) == qpn, "the CQE names the QP");
	CHECK(be16toh(cqes[0].wqe_counter) == 0, "the CQE is WQE 0's");
	printf("QP %#x: the device's NOP completed in the host's CQ\n", qpn);

	/* RTS -> RTS changes what the mask names; an empty one changes nothing and is refused. */
	attr.next_state = FLEXIO_QP_STATE_RTS;
	CHECK(flexio_qp_modify(qp, &attr, &mask) == FLEXIO_STATUS_FAILED,
	      "RTS -> RTS with an empty mask is refused");
	mask.min_rnr_nak_timer = true;
	attr.min_rnr_nak_timer = 14;
	CHECK(flexio_qp_modify(qp, &attr, &mask) == FLEXIO_STATUS_SUCCESS, "RTS -> RTS");
	modify(qp, &attr, FLEXIO_QP_STATE_ERR, "ERR");
	modify(qp, &attr, FLEXIO_QP_STATE_RST, "RST");
	CHECK(flexio_qp_state_get(NULL) == FLEXIO_QP_STATE_ERR, "a NULL QP reads as ERR");
	CHECK(flexio_qp_get_qp_num(NULL) == UINT32_MAX, "a NULL QP has no number");

	/* A second QP receiving from an RMP: a cyclic ring of 8 16-byte WQEs in DPA memory. */
	wq_attr.log_wq_depth = 3;
	wq_attr.pd = flexio_process_get_pd(process);
	wq_attr.rq.wq_type = FLEXIO_WQ_TYPE_CYCLIC;
	wq_attr.wq_ring_qmem.memtype = FLEXIO_MEMTYPE_DPA;
	wq_attr.wq_dbr_qmem.memtype = FLEXIO_MEMTYPE_DPA;
	CHECK(flexio_buf_dev_alloc(process, 8 * 16, &wq_attr.wq_ring_qmem.daddr) ==
		      FLEXIO_STATUS_SUCCESS,
	      "the RMP's ring");
	CHECK(flexio_rmp_create(process, NULL, NULL, &rmp) == FLEXIO_STATUS_FAILED,
	      "an RMP without attributes is refused");
	CHECK(flexio_rmp_create(process, NULL, &wq_attr, &rmp) == FLEXIO_STATUS_SUCCESS && rmp,
	      "flexio_rmp_create");
	CHECK(flexio_rmp_get_wq_num(rmp) != UINT32_MAX, "flexio_rmp_get_wq_num");
	attr.rq_type = FLEXIO_QP_QPC_RQ_TYPE_SRQ_RMP_XRC_SRQ_XRQ;
	attr.rmpqn = flexio_rmp_get_wq_num(rmp);
	CHECK(flexio_buf_dev_alloc(process, 4 * 64, &attr.qp_wq_buff_qmem.daddr) ==
		      FLEXIO_STATUS_SUCCESS,
	      "the second QP's ring");
	CHECK(flexio_qp_create(process, NULL, &attr, &srq_qp) == FLEXIO_STATUS_SUCCESS,
	      "flexio_qp_create on the RMP");
	attr.remote_qp_num = flexio_qp_get_qp_num(srq_qp);
	modify(srq_qp, &attr, FLEXIO_QP_STATE_INIT, "INIT");
	modify(srq_qp, &attr, FLEXIO_QP_STATE_RTR, "RTR");
	modify(srq_qp, &attr, FLEXIO_QP_STATE_RTS, "RTS");
	printf("QP %#x on RMP %#x: RST -> INIT -> RTR -> RTS\n", flexio_qp_get_qp_num(srq_qp),
	       flexio_rmp_get_wq_num(rmp));
	CHECK(flexio_qp_destroy(srq_qp) == FLEXIO_STATUS_SUCCESS, "flexio_qp_destroy (on the RMP)");
	CHECK(flexio_rmp_destroy(rmp) == FLEXIO_STATUS_SUCCESS, "flexio_rmp_destroy");

	CHECK(flexio_qp_destroy(qp) == FLEXIO_STATUS_SUCCESS, "flexio_qp_destroy");
	CHECK(flexio_qp_destroy(qp) == FLEXIO_STATUS_FAILED, "a destroyed QP is gone");
	CHECK(flexio_cq_destroy(cq) == FLEXIO_STATUS_SUCCESS, "flexio_cq_destroy");

	/* A fault: the error descriptor becomes readable, the crash data names the cause. */
	err_fd = flexio_err_handler_fd(process);
	CHECK(err_fd >= 0 && flexio_err_handler_fd(process) == err_fd, "flexio_err_handler_fd");
	CHECK(poll(&(struct pollfd){.fd = err_fd, .events = POLLIN}, 1, 0) == 0,
	      "the error descriptor is quiet while the process runs");
	CHECK(flexio_crash_data(process, NULL) == FLEXIO_STATUS_FAILED,
	      "no crash data while the process runs");
	CHECK(flexio_func_register(app, "st_fault_load", &fault_fn) == FLEXIO_STATUS_SUCCESS,
	      "flexio_func_register(st_fault_load)");
	CHECK(flexio_process_call(process, fault_fn, &ret, 8ul) != FLEXIO_STATUS_SUCCESS,
	      "a load from address 8 fails the call");
	CHECK(flexio_err_status_get(process) == FLEXIO_DEV_FATAL_ERROR, "the process failed");
	CHECK(poll(&(struct pollfd){.fd = err_fd, .events = POLLIN}, 1, 10000) == 1,
	      "the error descriptor became readable (within 10 s)");
	CHECK(mkdtemp(crash_dir), "mkdtemp");
	snprintf(crash_base, sizeof(crash_base), "%s/qp", crash_dir);
	CHECK(flexio_crash_data(process, crash_base) == FLEXIO_STATUS_SUCCESS, "flexio_crash_data");
	dir = opendir(crash_dir);
	CHECK(dir, "opendir");
	while ((ent = readdir(dir))) {
		if (!strstr(ent->d_name, ".crash"))
			continue;
		crash_files++;
		CHECK(unlinkat(dirfd(dir), ent->d_name, 0) == 0, "removing %s", ent->d_name);
	}
	closedir(dir);
	CHECK(rmdir(crash_dir) == 0, "rmdir");
	CHECK(crash_files == 1, "one .crash file was written (%d)", crash_files);
	printf("fault: the error descriptor woke, the crash data was written\n");
	CHECK(mlx5dv_devx_umem_dereg(umem) == 0, "mlx5dv_devx_umem_dereg");
	free(cqes);
	CHECK(flexio_process_destroy(process) == FLEXIO_STATUS_SUCCESS, "flexio_process_destroy");
	CHECK(ibv_close_device(ibv_ctx) == 0, "ibv_close_device");
	ibv_free_device_list(devs);
	CHECK(flexio_app_destroy(app) == FLEXIO_STATUS_SUCCESS, "flexio_app_destroy");
	printf("flexio QPs: all checks passed\n");
	return 0;
}
