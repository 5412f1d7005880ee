/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * Thread, process, outbox and window calls of the device runtime (FlexIO-OS `ecall`s;
 * numbers in flexio_dev_dpa_arch.h). The selection calls return 0 in a0 on success and
 * all-ones on failure, with the reason in the thread context's errno word.
 */
#include <libflexio-dev/flexio_dev.h>
#include <libflexio-dev/flexio_dev_err.h>

void flexio_dev_thread_reschedule(void)
{
	mlx5_dpa_os_call1_noreturn(MLX5_DPA_OS_DUAR_HANDLER_RETURN, MLX5_DPA_HANDLER_RETURN_RESCHEDULE);
}

void flexio_dev_thread_finish(void)
{
	mlx5_dpa_os_call1_noreturn(MLX5_DPA_OS_DUAR_HANDLER_RETURN, MLX5_DPA_HANDLER_RETURN_FINISH);
}

void flexio_dev_process_finish(void)
{
	mlx5_dpa_os_call1_noreturn(MLX5_DPA_OS_EXIT_PROCESS, 0);
}

void flexio_dev_reschedule(void)
{
	flexio_dev_thread_reschedule();
}

void flexio_dev_finish(void)
{
	flexio_dev_process_finish();
}

void flexio_dev_yield(struct flexio_dev_thread_ctx *dtctx)
{
	(void)dtctx;
	(void)mlx5_dpa_os_call1(MLX5_DPA_OS_DUAR_HANDLER_RETURN, MLX5_DPA_HANDLER_RETURN_YIELD);
}

void flexio_dev_thread_retrigger(void)
{
	mlx5_dpa_os_call1_noreturn(MLX5_DPA_OS_DUAR_HANDLER_RETURN, MLX5_DPA_HANDLER_RETURN_RETRIGGER);
}

void flexio_dev_error(uint8_t error)
{
	if (error < 0x80)
		error = FLEXIO_DEV_ERROR_ILLEGAL_ERR;
	mlx5_dpa_os_call1_noreturn(MLX5_DPA_OS_EXIT_PROCESS, error);
}

flexio_dev_status_t flexio_dev_outbox_config(struct flexio_dev_thread_ctx *dtctx,
					     uint16_t outbox_config_id)
{
	(void)dtctx;
	/* ORDERING: doorbells stored before the switch go to the old outbox. */
	mlx5_dpa_fence_rw_o();
	if (mlx5_dpa_os_call1(MLX5_DPA_OS_OUTBOX_SET_CFG, outbox_config_id) != MLX5_DPA_OS_OK)
		return FLEXIO_DEV_STATUS_FAILED;
	return FLEXIO_DEV_STATUS_SUCCESS;
}

void flexio_dev_outbox_config_fast(struct flexio_dev_thread_ctx *dtctx, uint16_t outbox_config_id)
{
	(void)flexio_dev_outbox_config(dtctx, outbox_config_id);
}

flexio_dev_status_t flexio_dev_outbox_config_uar_extension(struct flexio_dev_thread_ctx *dtctx,
							   uint32_t device_id)
{
	(void)dtctx;
	mlx5_dpa_fence_rw_o();
	if (mlx5_dpa_os_call1(MLX5_DPA_OS_OUTBOX_SET_GVMI, device_id) != MLX5_DPA_OS_OK)
		return FLEXIO_DEV_STATUS_FAILED;
	return FLEXIO_DEV_STATUS_SUCCESS;
}

flexio_dev_status_t flexio_dev_multi_window_mkey_config(enum flexio_window_entity win_entity,
							uint32_t mkey)
{
	uint64_t cfg = *(volatile uint64_t *)&mlx5_dpa_thread_ctx()->window_config_base;

	if (win_entity != FLEXIO_DEV_WINDOW_ENTITY_0 || cfg == 0)
		return FLEXIO_DEV_STATUS_FAILED;
	/* ORDERING: accesses through the old key complete before the key changes, and accesses
	 * through the new key start after it. */
	mlx5_dpa_fence_rw_o();
	*(volatile uint64_t *)(uintptr_t)cfg = mkey;
	mlx5_dpa_fence_o_rw();
	return FLEXIO_DEV_STATUS_SUCCESS;
}

flexio_dev_status_t flexio_dev_multi_window_config(enum flexio_window_entity win_entity,
						   uint16_t window_config_id, uint32_t mkey)
{
	if (win_entity != FLEXIO_DEV_WINDOW_ENTITY_0)
		return FLEXIO_DEV_STATUS_FAILED;
	mlx5_dpa_fence_rw_o();
	if (mlx5_dpa_os_call1(MLX5_DPA_OS_WINDOW_SET_CFG, window_config_id) != MLX5_DPA_OS_OK)
		return FLEXIO_DEV_STATUS_FAILED;
	return flexio_dev_multi_window_mkey_config(win_entity, mkey);
}

void flexio_dev_nic_counters_config(uint32_t *values, uint32_t *counter_ids, uint32_t num_counters)
{
	(void)mlx5_dpa_os_call3(MLX5_DPA_OS_NIC_COUNTERS_CONFIG, (uintptr_t)values, (uintptr_t)counter_ids,
			   num_counters);
}

void flexio_dev_nic_counters_sample(void)
{
	(void)mlx5_dpa_os_call1(MLX5_DPA_OS_NIC_COUNTERS_SAMPLE, 0);
}

uint64_t flexio_dev_get_pcc_table_base(uint16_t gvmi)
{
	return mlx5_dpa_os_call1(MLX5_DPA_OS_GET_PCC_TABLE_BASE, gvmi);
}
