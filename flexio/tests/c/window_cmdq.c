/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * libflexio's windows and command queues on a device, with fw-blobs' window_writer program:
 * an RPC writes a pattern into host memory through a window over the process's PD, then a
 * command-queue task does the same in the background, started by moving the queue from
 * pending to running. Built with gcc against flexio/include and run under `mlx5-dpa run` by
 * tools/tests/real_clients.rs (flexio_c_windows_and_cmdq); it prints what it saw and exits
 * non-zero at the first check that fails.
 *
 * Usage: window_cmdq DEVICE_ELF (fw-blobs/bin/window_writer.elf)
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

/* window_writer's argument block (fw-blobs/src/window_writer.h), mode BYTES. */
struct window_writer_args {
	uint32_t window_id;
	uint32_t mkey;
	uint64_t haddr;
	uint64_t len;
	uint32_t pattern;
	uint32_t mode;
	uint64_t result;
	uint64_t daddr;
};

#define LEN 256

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

/* Whether buf holds window_writer's BYTES pattern. */
static int pattern_ok(const uint8_t *buf, uint32_t pattern)
{
	for (int i = 0; i < LEN; i++)
		if (buf[i] != (uint8_t)(pattern + i))
			return 0;
	return 1;
}

int main(int argc, char **argv)
{
	struct flexio_app_attr app_attr = {0};
	struct flexio_cmdq_attr cmdq_attr = {0};
	struct window_writer_args args = {0};
	struct flexio_process *process = NULL;
	struct flexio_window *window = NULL;
	struct flexio_cmdq *cmdq = NULL;
	struct flexio_app *app = NULL;
	flexio_func_t *write_fn = NULL;
	flexio_uintptr_t args_daddr[2];
	struct ibv_device **devs;
	struct ibv_context *ibv_ctx;
	struct ibv_mr *mr;
	struct ibv_pd *pd;
	uint8_t *host;
	uint64_t ret = 0;
	size_t elf_len = 0;
	void *elf;
	int polls;

	CHECK(argc == 2, "usage: %s DEVICE_ELF", argv[0]);
	elf = read_file(argv[1], &elf_len);
	CHECK(elf, "cannot read %s", argv[1]);
	app_attr.app_name = "window_writer";
	app_attr.app_ptr = elf;
	app_attr.app_bsize = elf_len;
	CHECK(flexio_app_create(&app_attr, &app) == FLEXIO_STATUS_SUCCESS, "flexio_app_create");
	free(elf);
	CHECK(flexio_func_register(app, "window_write", &write_fn) == FLEXIO_STATUS_SUCCESS,
	      "flexio_func_register");

	devs = ibv_get_device_list(NULL);
	CHECK(devs && devs[0], "no RDMA device");
	ibv_ctx = ibv_open_device(devs[0]);
	CHECK(ibv_ctx, "ibv_open_device");
	CHECK(flexio_process_create(ibv_ctx, app, NULL, &process) == FLEXIO_STATUS_SUCCESS,
	      "flexio_process_create");

	/* Host memory on the process's PD, reached through a window over that PD. */
	pd = flexio_process_get_pd(process);
	CHECK(pd, "flexio_process_get_pd");
	CHECK(posix_memalign((void **)&host, 64, 2 * LEN) == 0, "posix_memalign");
	memset(host, 0, 2 * LEN);
	mr = ibv_reg_mr(pd, host, 2 * LEN, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	CHECK(mr, "ibv_reg_mr");
	CHECK(flexio_window_create(process, NULL, &window) == FLEXIO_STATUS_FAILED,
	      "a window without a PD is refused");
	CHECK(flexio_window_create(process, pd, NULL) == FLEXIO_STATUS_FAILED,
	      "a window with nowhere to put it is refused");
	CHECK(flexio_window_create(process, pd, &window) == FLEXIO_STATUS_SUCCESS && window,
	      "flexio_window_create");
	CHECK(flexio_window_get_id(window) != UINT32_MAX, "flexio_window_get_id");
	CHECK(flexio_window_get_id((struct flexio_window *)&args) == UINT32_MAX,
	      "a bad window handle has no id");

	/* Two argument blocks in DPA memory: one for the RPC, one for the queued task. */
	for (int i = 0; i < 2; i++) {
		args.window_id = flexio_window_get_id(window);
		args.mkey = mr->lkey;
		args.haddr = (uint64_t)(uintptr_t)(host + i * LEN);
		args.len = LEN;
		args.pattern = 0x40 + i;
		CHECK(flexio_copy_from_host(process, &args, sizeof(args), &args_daddr[i]) ==
			      FLEXIO_STATUS_SUCCESS,
		      "flexio_copy_from_host");
	}
	CHECK(flexio_process_call(process, write_fn, &ret, args_daddr[0]) == FLEXIO_STATUS_SUCCESS &&
		      ret == LEN,
	      "window_write returned %lu", (unsigned long)ret);
	CHECK(pattern_ok(host, 0x40), "the RPC's bytes are in host memory");
	printf("window %u: the RPC wrote %d bytes of host memory\n", flexio_window_get_id(window),
	       LEN);

	/* A pending queue keeps its task until it runs. */
	cmdq_attr.workers = 0;
	cmdq_attr.batch_size = 1;
	cmdq_attr.state = FLEXIO_CMDQ_STATE_PENDING;
	CHECK(flexio_cmdq_create(process, &cmdq_attr, &cmdq) == FLEXIO_STATUS_FAILED,
	      "a queue without workers is refused");
	cmdq_attr.workers = 1;
	CHECK(flexio_cmdq_create(process, NULL, &cmdq) == FLEXIO_STATUS_FAILED,
	      "a queue without attributes is refused");
	CHECK(flexio_cmdq_create(process, &cmdq_attr, &cmdq) == FLEXIO_STATUS_SUCCESS && cmdq,
	      "flexio_cmdq_create");
	CHECK(flexio_cmdq_task_add(cmdq, (flexio_func_t *)main, 0) == FLEXIO_STATUS_FAILED,
	      "a task of an unregistered function is refused");
	CHECK(flexio_cmdq_is_empty(cmdq) == 1, "a new queue is empty");
	CHECK(flexio_cmdq_task_add(cmdq, write_fn, args_daddr[1]) == FLEXIO_STATUS_SUCCESS,
	      "flexio_cmdq_task_add");
	CHECK(flexio_cmdq_is_empty(cmdq) == 0, "a pending queue keeps its task");
	CHECK(pattern_ok(host + LEN, 0x41) == 0, "the task has not run while pending");
	CHECK(flexio_cmdq_state_running(cmdq) == FLEXIO_STATUS_SUCCESS, "flexio_cmdq_state_running");
	/* Bounded: 10 s of 1 ms polls. */
	for (polls = 0; polls < 10000 && !flexio_cmdq_is_empty(cmdq); polls++)
		nanosleep(&(struct timespec){.tv_nsec = 1000000}, NULL);
	CHECK(flexio_cmdq_is_empty(cmdq) == 1, "the queue emptied");
	CHECK(pattern_ok(host + LEN, 0x41), "the task's bytes are in host memory");
	printf("command queue: the task ran once the queue was running\n");

	CHECK(flexio_cmdq_destroy(cmdq) == FLEXIO_STATUS_SUCCESS, "flexio_cmdq_destroy");
	CHECK(flexio_cmdq_destroy(cmdq) == FLEXIO_STATUS_FAILED, "a destroyed queue is gone");
	CHECK(flexio_window_destroy(window) == FLEXIO_STATUS_SUCCESS, "flexio_window_destroy");
	CHECK(ibv_dereg_mr(mr) == 0, "ibv_dereg_mr");
	free(host);
	CHECK(flexio_process_destroy(process) == FLEXIO_STATUS_SUCCESS, "flexio_process_destroy");
	CHECK(ibv_close_device(ibv_ctx) == 0, "ibv_close_device");
	ibv_free_device_list(devs);
	CHECK(flexio_app_destroy(app) == FLEXIO_STATUS_SUCCESS, "flexio_app_destroy");
	printf("flexio windows and command queues: all checks passed\n");
	return 0;
}
