/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * A host program as NVIDIA's FlexIO samples write one, over a device library built by
 * `mlx5-dpa dpacc` (DPACC's application build): the application and the function stubs come
 * from that library (built with -DDEV_APP_NAME=<its --app-name>), nothing is registered by
 * hand. Run by tools/tests/real_clients.rs (flexio_dpacc) under `mlx5-dpa run`, with
 * fw-blobs/src/rpc_calc.c as the device code.
 */
#include <stdio.h>
#include <string.h>

#include <libflexio/flexio.h>

/* What DPACC's library defines. */
extern struct flexio_app *DEV_APP_NAME;
extern flexio_func_t rpc_calculate;
extern flexio_func_t rpc_digits8;
extern flexio_func_t rpc_echo;

int main(void)
{
	flexio_msg_stream_attr_t stream_attr = {0};
	struct flexio_msg_stream *stream = NULL;
	struct flexio_process *process = NULL;
	struct ibv_device **devs;
	struct ibv_context *ctx;
	uint64_t sum = 0, digits = 0, echo = 0;
	int err = 1;

	if (!DEV_APP_NAME) {
		printf("the application was not created\n");
		return 1;
	}
	printf("application %s, %zu bytes\n", flexio_app_get_name(DEV_APP_NAME),
	       flexio_app_get_elf_size(DEV_APP_NAME));
	devs = ibv_get_device_list(NULL);
	if (!devs || !devs[0])
		return 1;
	ctx = ibv_open_device(devs[0]);
	if (!ctx || flexio_process_create(ctx, DEV_APP_NAME, NULL, &process))
		goto out;
	stream_attr.data_bsize = 4 << FLEXIO_MSG_DEV_LOG_DATA_CHUNK_BSIZE;
	stream_attr.sync_mode = FLEXIO_LOG_DEV_SYNC_MODE_SYNC;
	stream_attr.level = FLEXIO_MSG_DEV_INFO;
	if (flexio_msg_stream_create(process, &stream_attr, stdout, NULL, &stream))
		goto out;
	if (flexio_process_call(process, &rpc_calculate, &sum, 44ul, 55ul) ||
	    flexio_process_call(process, &rpc_digits8, &digits, 8ul, 7ul, 6ul, 5ul, 4ul, 3ul, 2ul,
				1ul) ||
	    flexio_process_call(process, &rpc_echo, &echo, 0x5a5a5a5aul))
		goto out;
	flexio_msg_stream_flush(stream);
	printf("Result: %lu, digits %lu, echo %#lx\n", (unsigned long)sum, (unsigned long)digits,
	       (unsigned long)echo);
	err = !(sum == 99 && digits == 87654321 && echo == 0x5a5a5a5a);
out:
	if (stream)
		flexio_msg_stream_destroy(stream);
	flexio_process_destroy(process);
	if (ctx)
		ibv_close_device(ctx);
	ibv_free_device_list(devs);
	printf("%s\n", err ? "FAILED" : "dpacc host program: done");
	return err;
}
