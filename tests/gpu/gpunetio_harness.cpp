// Host build of the GPUNetIO send headers (src/gpu/include), for tests/driver/gpu_headers.rs: the
// functions a CUDA kernel would call, run on CPU threads against the device model.
#include "doca_gpunetio_dev_eth_txq.cuh"

#define FIELD(f) offsetof(struct doca_gpu_eth_txq, f)

// The handle's size and field offsets, in declaration order.
extern "C" int harness_layout(uint64_t *out, int n)
{
	const uint64_t v[] = {
		sizeof(struct doca_gpu_eth_txq),
		FIELD(wqe_addr), FIELD(wqe_db_rec), FIELD(wqe_db), FIELD(cpu_proxy_db),
		FIELD(cqe_addr), FIELD(cq_db_rec), FIELD(sq_rsvd_index), FIELD(sq_ready_index),
		FIELD(wqe_pi), FIELD(cqe_ci), FIELD(cq_rsvd_index), FIELD(sq_num_shift8),
		FIELD(wqe_mask), FIELD(cqe_num), FIELD(cqe_mask), FIELD(nic_handler),
		FIELD(lock), FIELD(cq_lock), FIELD(reserved),
	};
	int count = (int)(sizeof(v) / sizeof(v[0]));
	for (int i = 0; i < count && i < n; i++)
		out[i] = v[i];
	return count;
}

// One WQE written to `wqe` as a kernel would, for a byte comparison with the driver's.
extern "C" int harness_prepare(const struct doca_gpu_eth_txq *txq, void *wqe, uint16_t idx, uint64_t addr,
			       uint32_t mkey_be, uint32_t nbytes, int notify)
{
	return doca_gpu_dev_eth_txq_wqe_prepare_send(txq, (struct doca_gpu_dev_eth_txq_wqe *)wqe, idx, addr, mkey_be,
						     nbytes,
						     notify ? DOCA_GPUNETIO_ETH_SEND_FLAG_NOTIFY
							    : DOCA_GPUNETIO_ETH_SEND_FLAG_NONE);
}

// A "thread" of a send kernel: frames first, first + step, ... below n (frame i at
// buf + i * stride, `len(i)` bytes), every one with NOTIFY, through the shared-queue send
// (GPU sharing mode, AUTO handler). Then waits for the completions of its own frames.
// Returns 0, or the doca_error_t of the first failure.
extern "C" int harness_send(struct doca_gpu_eth_txq *txq, uint64_t buf, uint32_t mkey_be, uint32_t stride,
			    const uint32_t *lens, uint32_t first, uint32_t step, uint32_t n)
{
	uint32_t mine = 0;
	for (uint32_t i = first; i < n; i += step) {
		doca_gpu_dev_eth_ticket_t ticket = 0;
		doca_gpu_dev_eth_txq_send(txq, buf + (uint64_t)i * stride, mkey_be, lens[i],
					  DOCA_GPUNETIO_ETH_SEND_FLAG_NOTIFY, &ticket);
		mine++;
	}
	uint32_t done = 0;
	while (done < mine) {
		uint32_t got = 0;
		doca_error_t r = doca_gpu_dev_eth_txq_poll_completion(txq, 1, DOCA_GPUNETIO_ETH_WAIT_FLAG_B, &got);
		if (r != DOCA_SUCCESS)
			return (int)r;
		done += got;
	}
	return 0;
}

// A non-blocking look for one completion (DOCA_ERROR_AGAIN when there is none).
extern "C" int harness_poll_nb(struct doca_gpu_eth_txq *txq)
{
	uint32_t got = 0;
	return (int)doca_gpu_dev_eth_txq_poll_completion(txq, 1, DOCA_GPUNETIO_ETH_WAIT_FLAG_NB, &got);
}

// ---------------------------------------------------------------------------------------------
// Receive and semaphores (doca_gpunetio_dev_eth_rxq.cuh, doca_gpunetio_dev_sem.cuh).

#include "doca_gpunetio_dev_eth_rxq.cuh"
#include "doca_gpunetio_dev_sem.cuh"

#define RXFIELD(f) offsetof(struct doca_gpu_eth_rxq, f)
#define SEMFIELD(f) offsetof(struct doca_gpu_semaphore_gpu, f)

// The receive handle's and the semaphore's sizes and field offsets, in declaration order.
extern "C" int harness_rx_layout(uint64_t *out, int n)
{
	const uint64_t v[] = {
		sizeof(struct doca_gpu_eth_rxq),
		RXFIELD(pkt_addr), RXFIELD(pkt_num), RXFIELD(max_pkt_sz), RXFIELD(wqe_db_rec),
		RXFIELD(wqe_pi), RXFIELD(cqe_addr), RXFIELD(cq_db_rec), RXFIELD(cqe_ci),
		RXFIELD(cqe_num), RXFIELD(cqe_mask), RXFIELD(pkt_mkey), RXFIELD(reserved), RXFIELD(bufs),
		sizeof(struct doca_gpu_semaphore_gpu),
		SEMFIELD(items), SEMFIELD(custom_info), SEMFIELD(num_items), SEMFIELD(custom_info_size),
		sizeof(struct doca_gpu_semaphore_item),
	};
	int count = (int)(sizeof(v) / sizeof(v[0]));
	for (int i = 0; i < count && i < n; i++)
		out[i] = v[i];
	return count;
}

// One thread-scope receive with attributes: sizes into `bytes` (max_rx_pkts of them).
extern "C" int harness_recv(struct doca_gpu_eth_rxq *rxq, uint32_t max_rx_pkts, uint64_t timeout_ns,
			    uint64_t *first, uint32_t *num, uint32_t *bytes)
{
	struct doca_gpu_dev_eth_rxq_attr attr[256];
	if (max_rx_pkts > 256)
		return DOCA_ERROR_INVALID_VALUE;
	volatile uint64_t f = 0;
	doca_error_t r = doca_gpu_dev_eth_rxq_recv<DOCA_GPUNETIO_ETH_EXEC_SCOPE_THREAD, DOCA_GPUNETIO_ETH_MCST_DISABLED,
						   DOCA_GPUNETIO_ETH_NIC_HANDLER_AUTO, true>(rxq, max_rx_pkts, timeout_ns,
											       &f, num, attr);
	*first = f;
	for (uint32_t i = 0; i < *num; i++)
		bytes[i] = attr[i].bytes;
	return (int)r;
}

// The custom info the receive "kernel" leaves in each semaphore item.
struct rx_info {
	uint32_t packets;
	uint32_t reserved;
	uint64_t byte_sum; // every byte of every packet of the item, added
};

// A receive "kernel" as GPUNetIO's samples have it: receives in batches of at most `batch`,
// and for each batch with packets waits for the next semaphore item to be FREE, fills its
// custom info, and sets it READY with the batch's packet info. Ends after `total` packets.
extern "C" int harness_rx_kernel(struct doca_gpu_eth_rxq *rxq, const struct doca_gpu_semaphore_gpu *sem,
				 uint64_t total, uint32_t batch, uint64_t timeout_ns)
{
	struct doca_gpu_dev_eth_rxq_attr attr[256];
	if (batch > 256 || batch == 0)
		return DOCA_ERROR_INVALID_VALUE;
	uint64_t got = 0;
	uint32_t idx = 0;
	uint64_t start = doca_gpu_dev_eth_now_ns();
	while (got < total) {
		if (doca_gpu_dev_eth_now_ns() - start > 60000000000ull)
			return DOCA_ERROR_TIME_OUT;
		volatile uint64_t first = 0;
		uint32_t n = 0;
		doca_error_t r = doca_gpu_dev_eth_rxq_recv<DOCA_GPUNETIO_ETH_EXEC_SCOPE_THREAD,
							   DOCA_GPUNETIO_ETH_MCST_DISABLED,
							   DOCA_GPUNETIO_ETH_NIC_HANDLER_AUTO, true>(
			rxq, batch, timeout_ns, &first, &n, attr);
		if (r != DOCA_SUCCESS)
			return (int)r;
		if (n == 0)
			continue;
		enum doca_gpu_semaphore_status st = DOCA_GPU_SEMAPHORE_STATUS_HOLD;
		while (doca_gpu_dev_semaphore_get_status(sem, idx, &st) == DOCA_SUCCESS &&
		       st != DOCA_GPU_SEMAPHORE_STATUS_FREE) {
			if (doca_gpu_dev_eth_now_ns() - start > 60000000000ull)
				return DOCA_ERROR_TIME_OUT;
		}
		struct rx_info *info = 0;
		r = doca_gpu_dev_semaphore_get_custom_info_addr(sem, idx, (void **)&info);
		if (r != DOCA_SUCCESS)
			return (int)r;
		uint64_t sum = 0;
		for (uint32_t i = 0; i < n; i++) {
			const uint8_t *p = (const uint8_t *)doca_gpu_dev_eth_rxq_get_pkt_addr(rxq, first + i);
			for (uint32_t b = 0; b < attr[i].bytes; b++)
				sum += p[b];
		}
		info->packets = n;
		info->byte_sum = sum;
		r = doca_gpu_dev_semaphore_set_packet_info(sem, idx, DOCA_GPU_SEMAPHORE_STATUS_READY, n, first);
		if (r != DOCA_SUCCESS)
			return (int)r;
		idx = (idx + 1) % sem->num_items;
		got += n;
	}
	return 0;
}

// ---------------------------------------------------------------------------------------------
// Verbs (doca_gpunetio_dev_verbs_*.cuh).

#include "doca_gpunetio_dev_verbs_twosided.cuh"

#define QPFIELD(f) offsetof(struct doca_gpu_dev_verbs_qp, f)
#define CQFIELD(f) offsetof(struct doca_gpu_dev_verbs_cq, f)

// The QP handle's and the CQ handle's sizes and field offsets, in declaration order.
extern "C" int harness_verbs_layout(uint64_t *out, int n)
{
	const uint64_t v[] = {
		sizeof(struct doca_gpu_dev_verbs_qp),
		QPFIELD(sq_rsvd_index), QPFIELD(sq_ready_index), QPFIELD(sq_wqe_pi), QPFIELD(sq_wqe_daddr),
		QPFIELD(sq_dbrec), QPFIELD(sq_db), QPFIELD(cpu_proxy_db), QPFIELD(rq_rsvd_index),
		QPFIELD(rq_wqe_pi), QPFIELD(rq_wqe_daddr), QPFIELD(rq_dbrec), QPFIELD(sq_num),
		QPFIELD(sq_num_shift8), QPFIELD(sq_wqe_mask), QPFIELD(rq_wqe_mask), QPFIELD(rcv_wqe_size),
		QPFIELD(nic_handler), QPFIELD(sq_lock), QPFIELD(rq_lock), QPFIELD(cq_sq), QPFIELD(cq_rq),
		sizeof(struct doca_gpu_dev_verbs_cq),
		CQFIELD(cqe_daddr), CQFIELD(dbrec), CQFIELD(cqe_ci), CQFIELD(cqe_rsvd), CQFIELD(cq_num),
		CQFIELD(cqe_num), CQFIELD(cqe_mask), CQFIELD(lock),
	};
	int count = (int)(sizeof(v) / sizeof(v[0]));
	for (int i = 0; i < count && i < n; i++)
		out[i] = v[i];
	return count;
}

// One WQE of `kind` (0 write, 1 read, 2 send, 3 atomic fetch-add of `val`) into `wqe`.
extern "C" void harness_verbs_prepare(const struct doca_gpu_dev_verbs_qp *qp, int kind, void *wqe, uint16_t idx,
				      uint64_t raddr, uint32_t rkey_be, uint64_t laddr, uint32_t lkey_be, uint64_t val)
{
	struct doca_gpu_dev_verbs_addr r = {raddr, rkey_be}, l = {laddr, lkey_be};
	uint64_t w = (uint64_t)wqe;
	switch (kind) {
	case 0:
		doca_gpu_dev_verbs_wqe_prepare_write(qp, w, idx, r, l, (uint32_t)val);
		break;
	case 1:
		doca_gpu_dev_verbs_wqe_prepare_read(qp, w, idx, r, l, (uint32_t)val);
		break;
	case 2:
		doca_gpu_dev_verbs_wqe_prepare_send(qp, w, idx, l, (uint32_t)val);
		break;
	default:
		doca_gpu_dev_verbs_wqe_prepare_atomic(qp, w, idx, r, l, val);
		break;
	}
}

// A put "kernel" thread: chunks first, first + step, ... below n of `chunk` bytes each, from
// `laddr` to `raddr` at the same offsets, each a put with signal (+1 on the peer's 8 bytes at
// `sig`); waits for each. Returns 0, or the doca_error_t of the first failure.
extern "C" int harness_verbs_put_signal(struct doca_gpu_dev_verbs_qp *qp, uint64_t raddr, uint32_t rkey_be, uint64_t laddr,
					uint32_t lkey_be, uint32_t chunk, uint32_t first, uint32_t step, uint32_t n,
					uint64_t sig, uint64_t sig_sink, uint32_t sink_lkey_be)
{
	for (uint32_t i = first; i < n; i += step) {
		struct doca_gpu_dev_verbs_addr r = {raddr + (uint64_t)i * chunk, rkey_be};
		struct doca_gpu_dev_verbs_addr l = {laddr + (uint64_t)i * chunk, lkey_be};
		struct doca_gpu_dev_verbs_addr sr = {sig, rkey_be};
		// Each thread's own 8 bytes for the fetched old value.
		struct doca_gpu_dev_verbs_addr sl = {sig_sink + 8ull * first, sink_lkey_be};
		doca_gpu_dev_verbs_ticket_t t = 0;
		doca_gpu_dev_verbs_put_signal(qp, r, l, chunk, sr, sl, 1, &t);
		doca_error_t e = doca_gpu_dev_verbs_wait(qp, t);
		if (e != DOCA_SUCCESS)
			return (int)e;
	}
	return 0;
}

// One get, one send, or one receive (posted, then waited for: `bytes` what arrived), and wait.
extern "C" int harness_verbs_get(struct doca_gpu_dev_verbs_qp *qp, uint64_t raddr, uint32_t rkey_be, uint64_t laddr,
				 uint32_t lkey_be, uint32_t size)
{
	struct doca_gpu_dev_verbs_addr r = {raddr, rkey_be}, l = {laddr, lkey_be};
	doca_gpu_dev_verbs_ticket_t t = 0;
	doca_gpu_dev_verbs_get(qp, r, l, size, &t);
	return (int)doca_gpu_dev_verbs_wait(qp, t);
}

extern "C" int harness_verbs_send(struct doca_gpu_dev_verbs_qp *qp, uint64_t laddr, uint32_t lkey_be, uint32_t size)
{
	struct doca_gpu_dev_verbs_addr l = {laddr, lkey_be};
	doca_gpu_dev_verbs_ticket_t t = 0;
	doca_gpu_dev_verbs_send(qp, l, size, &t);
	return (int)doca_gpu_dev_verbs_wait(qp, t);
}

extern "C" int harness_verbs_recv(struct doca_gpu_dev_verbs_qp *qp, uint64_t laddr, uint32_t lkey_be, uint32_t size,
				  uint32_t *bytes)
{
	struct doca_gpu_dev_verbs_addr l = {laddr, lkey_be};
	doca_gpu_dev_verbs_ticket_t t = 0;
	doca_gpu_dev_verbs_recv(qp, l, size, &t);
	return (int)doca_gpu_dev_verbs_recv_wait(qp, t, bytes);
}

// `count` puts of `size` bytes (all to the same addresses), waiting for every `window`th and
// the last (so at most `window` are outstanding). Returns 0 or the first doca_error_t.
extern "C" int harness_verbs_put_many(struct doca_gpu_dev_verbs_qp *qp, uint64_t raddr, uint32_t rkey_be, uint64_t laddr,
				      uint32_t lkey_be, uint32_t size, uint32_t count, uint32_t window)
{
	struct doca_gpu_dev_verbs_addr r = {raddr, rkey_be}, l = {laddr, lkey_be};
	for (uint32_t i = 0; i < count; i++) {
		doca_gpu_dev_verbs_ticket_t t = 0;
		doca_gpu_dev_verbs_put(qp, r, l, size, &t);
		if ((i + 1) % window == 0 || i + 1 == count) {
			doca_error_t e = doca_gpu_dev_verbs_wait(qp, t);
			if (e != DOCA_SUCCESS)
				return (int)e;
		}
	}
	return 0;
}

// The byte swaps: the Ethernet macro and the three Verbs functions.
extern "C" void harness_bswaps(uint64_t *out)
{
	out[0] = DOCA_GPUNETIO_ETH_BSWAP16(0x1234);
	out[1] = doca_gpu_dev_verbs_bswap16(0x1234);
	out[2] = doca_gpu_dev_verbs_bswap32(0x12345678u);
	out[3] = doca_gpu_dev_verbs_bswap64(0x0102030405060708ull);
}

// `count` puts from one thread, put i from `laddr` + i * `size` to `raddr` + i * `size`,
// waiting only for the last: more than a ring's worth in flight unless the reservation waits
// for its slot.
extern "C" int harness_verbs_put_stream(struct doca_gpu_dev_verbs_qp *qp, uint64_t raddr, uint32_t rkey_be,
					uint64_t laddr, uint32_t lkey_be, uint32_t size, uint32_t count)
{
	doca_gpu_dev_verbs_ticket_t t = 0;
	for (uint32_t i = 0; i < count; i++) {
		struct doca_gpu_dev_verbs_addr r = {raddr + (uint64_t)i * size, rkey_be};
		struct doca_gpu_dev_verbs_addr l = {laddr + (uint64_t)i * size, lkey_be};
		doca_gpu_dev_verbs_put(qp, r, l, size, &t);
	}
	return (int)doca_gpu_dev_verbs_wait(qp, t);
}

// One put posted (not waited for): its ticket, to wait for later with harness_verbs_wait.
extern "C" uint64_t harness_verbs_put_nowait(struct doca_gpu_dev_verbs_qp *qp, uint64_t raddr, uint32_t rkey_be,
					     uint64_t laddr, uint32_t lkey_be, uint32_t size)
{
	struct doca_gpu_dev_verbs_addr r = {raddr, rkey_be}, l = {laddr, lkey_be};
	doca_gpu_dev_verbs_ticket_t t = 0;
	doca_gpu_dev_verbs_put(qp, r, l, size, &t);
	return t;
}

// Waits for the send of `ticket`.
extern "C" int harness_verbs_wait(struct doca_gpu_dev_verbs_qp *qp, uint64_t ticket)
{
	return (int)doca_gpu_dev_verbs_wait(qp, ticket);
}

// The body of NVIDIA's public write_bw / write_lat kernels (NVIDIA-DOCA/gpunetio examples) for
// one thread, with the public low-level calls: `n` RDMA WRITEs of `size` bytes, each prepared
// in the WQE at the producer index, submitted (through the doorbell, or the BlueFlame form with
// `bf`), then the last one's CQE polled on the send CQ (collapsed form with `collapsed`).
extern "C" int harness_verbs_lowlevel_write(struct doca_gpu_dev_verbs_qp *qp, uint64_t raddr, uint32_t rkey_be,
					    uint64_t laddr, uint32_t lkey_be, uint32_t size, uint32_t n, int bf,
					    int collapsed)
{
	uint64_t wqe_idx =
		doca_gpu_dev_verbs_atomic_read<uint64_t, DOCA_GPUNETIO_VERBS_RESOURCE_SHARING_MODE_GPU>(&qp->sq_wqe_pi);
	for (uint32_t i = 0; i < n; i++) {
		struct doca_gpu_dev_verbs_wqe *w = doca_gpu_dev_verbs_get_wqe_ptr(qp, wqe_idx);
		doca_gpu_dev_verbs_wqe_prepare_write(qp, w, (uint16_t)wqe_idx, DOCA_GPUNETIO_MLX5_OPCODE_RDMA_WRITE,
						     DOCA_GPUNETIO_IB_MLX5_WQE_CTRL_CQ_UPDATE, 0,
						     raddr + (uint64_t)i * size, rkey_be, laddr + (uint64_t)i * size,
						     lkey_be, size);
		doca_gpu_dev_verbs_fence_acquire<DOCA_GPUNETIO_VERBS_SYNC_SCOPE_SYS>();
		if (bf)
			doca_gpu_dev_verbs_submit_bf<DOCA_GPUNETIO_VERBS_RESOURCE_SHARING_MODE_EXCLUSIVE,
						     DOCA_GPUNETIO_VERBS_SYNC_SCOPE_GPU>(qp, wqe_idx + 1, w);
		else
			doca_gpu_dev_verbs_submit<DOCA_GPUNETIO_VERBS_RESOURCE_SHARING_MODE_EXCLUSIVE>(
				qp, wqe_idx + 1, DOCA_GPUNETIO_VERBS_GPU_CODE_OPT_CPU_PROXY_UPDATE_PI);
		wqe_idx++;
	}
	if (collapsed)
		return doca_gpu_dev_verbs_poll_cq_collapsed_at(qp, wqe_idx - 1);
	return doca_gpu_dev_verbs_poll_cq_at(doca_gpu_dev_verbs_qp_get_cq_sq(qp), wqe_idx - 1);
}

// DOCA 2.x's receive on one thread: packets until `want` arrived (or 10 s), each with its
// buffer's address and the length the receive recorded (get_buf, get_addr, get_buf_bytes).
extern "C" int harness_recv_v2(struct doca_gpu_eth_rxq *rxq, uint32_t want, uint64_t *first, uint64_t *addrs,
			       uint32_t *lens)
{
	uint32_t got = 0;
	uint64_t start = doca_gpu_dev_eth_now_ns();
	while (got < want) {
		uint32_t num = 0;
		uint64_t idx = 0;
		doca_error_t r = doca_gpu_dev_eth_rxq_receive_thread(rxq, want - got, 1000000, &num, &idx);
		if (r != DOCA_SUCCESS)
			return (int)r;
		if (got == 0 && num > 0)
			*first = idx;
		for (uint32_t i = 0; i < num; i++) {
			struct doca_gpu_buf *buf = 0;
			uintptr_t addr = 0;
			doca_gpu_dev_eth_rxq_get_buf(rxq, idx + i, &buf);
			doca_gpu_dev_buf_get_addr(buf, &addr);
			addrs[got + i] = addr;
			doca_gpu_dev_eth_rxq_get_buf_bytes(rxq, idx + i, &lens[got + i]);
		}
		got += num;
		if (doca_gpu_dev_eth_now_ns() - start > 10000000000ull)
			return DOCA_ERROR_TIME_OUT;
	}
	return DOCA_SUCCESS;
}

// DOCA 2.x's send on one thread: buffers 0 .. n - 1 of `arr` (lengths `lens`), each asking for
// a notification, with the strong pattern (enqueue, commit, push) or the weak one (positions
// from get_info, commit of n, push); then waits for the n completions.
extern "C" int harness_send_v2(struct doca_gpu_eth_txq *txq, const struct doca_gpu_buf_arr *arr, const uint32_t *lens,
			       uint32_t n, int weak)
{
	uint32_t base = 0, mask = 0, done = 0;
	if (weak && doca_gpu_dev_eth_txq_get_info(txq, &base, &mask) != DOCA_SUCCESS)
		return DOCA_ERROR_INVALID_VALUE;
	for (uint32_t i = 0; i < n; i++) {
		struct doca_gpu_buf *buf = 0;
		doca_gpu_dev_buf_get_buf(arr, i, &buf);
		doca_error_t r = weak ? doca_gpu_dev_eth_txq_send_enqueue_weak(txq, buf, lens[i], (base + i) & mask,
									     DOCA_GPU_SEND_FLAG_NOTIFY) :
					doca_gpu_dev_eth_txq_send_enqueue_strong(txq, buf, lens[i], DOCA_GPU_SEND_FLAG_NOTIFY);
		if (r != DOCA_SUCCESS)
			return (int)r;
	}
	doca_error_t r = weak ? doca_gpu_dev_eth_txq_commit_weak(txq, n) : doca_gpu_dev_eth_txq_commit_strong(txq);
	if (r == DOCA_SUCCESS)
		r = doca_gpu_dev_eth_txq_push(txq);
	if (r == DOCA_SUCCESS)
		r = doca_gpu_dev_eth_txq_wait_completion(txq, n, DOCA_GPU_ETH_TXQ_WAIT_FLAG_B, &done);
	if (r == DOCA_SUCCESS && done != n)
		r = DOCA_ERROR_UNEXPECTED;
	return (int)r;
}

// DOCA 2.x's send on time on one thread: a wait until UTC `at_ns` (calculate_timestamp,
// wait_time_enqueue), then buffer 0 of `arr` (`len` bytes, notified), strong (enqueue each,
// commit) or weak (positions from get_info, commit of 2); push, then waits for the send's
// completion.
extern "C" int harness_send_at_v2(struct doca_gpu_eth_txq *txq, const struct doca_gpu_buf_arr *arr, uint32_t len,
				  uint64_t at_ns, int weak)
{
	uint64_t ts = 0;
	uint32_t base = 0, mask = 0, done = 0;
	struct doca_gpu_buf *buf = 0;
	doca_error_t r = doca_gpu_dev_eth_txq_calculate_timestamp(txq, at_ns, &ts);
	if (r != DOCA_SUCCESS)
		return (int)r;
	doca_gpu_dev_buf_get_buf(arr, 0, &buf);
	if (weak) {
		doca_gpu_dev_eth_txq_get_info(txq, &base, &mask);
		r = doca_gpu_dev_eth_txq_wait_time_enqueue_weak(txq, ts, base & mask, 0);
		if (r == DOCA_SUCCESS)
			r = doca_gpu_dev_eth_txq_send_enqueue_weak(txq, buf, len, (base + 1) & mask, DOCA_GPU_SEND_FLAG_NOTIFY);
		if (r == DOCA_SUCCESS)
			r = doca_gpu_dev_eth_txq_commit_weak(txq, 2);
	} else {
		r = doca_gpu_dev_eth_txq_wait_time_enqueue_strong(txq, ts, 0);
		if (r == DOCA_SUCCESS)
			r = doca_gpu_dev_eth_txq_send_enqueue_strong(txq, buf, len, DOCA_GPU_SEND_FLAG_NOTIFY);
		if (r == DOCA_SUCCESS)
			r = doca_gpu_dev_eth_txq_commit_strong(txq);
	}
	if (r == DOCA_SUCCESS)
		r = doca_gpu_dev_eth_txq_push(txq);
	if (r == DOCA_SUCCESS)
		r = doca_gpu_dev_eth_txq_wait_completion(txq, 1, DOCA_GPU_ETH_TXQ_WAIT_FLAG_B, &done);
	return r == DOCA_SUCCESS && done != 1 ? DOCA_ERROR_UNEXPECTED : (int)r;
}

#include "doca_gpunetio_dev_dma.cuh"

// DOCA 2.x's GPU DMA on one thread: copies buffer i of `src` to buffer i of `dst` (`len` bytes,
// from offset `off` of each), n of them, then one commit.
extern "C" int harness_dma_copy(struct doca_gpu_dma *dma, const struct doca_gpu_buf_arr *src,
				const struct doca_gpu_buf_arr *dst, uint32_t n, uint64_t off, uint32_t len)
{
	for (uint32_t i = 0; i < n; i++) {
		struct doca_gpu_buf *s = 0, *d = 0;
		doca_gpu_dev_buf_get_buf(src, i, &s);
		doca_gpu_dev_buf_get_buf(dst, i, &d);
		doca_error_t r = doca_gpu_dev_dma_memcpy(dma, s, off, d, off, len);
		if (r != DOCA_SUCCESS)
			return (int)r;
	}
	return (int)doca_gpu_dev_dma_commit(dma);
}


// ---------------------------------------------------------------------------------------------
// DOCA 2.x's GPU RDMA (doca_gpunetio_dev_rdma.cuh).

#include "doca_gpunetio_dev_rdma.cuh"

#define RDMAFIELD(f) offsetof(struct doca_gpu_dev_rdma, f)

// The handle's size and field offsets, in declaration order.
extern "C" int harness_rdma_layout(uint64_t *out, int n)
{
	const uint64_t v[] = {
		sizeof(struct doca_gpu_dev_rdma), RDMAFIELD(commits), RDMAFIELD(commits_waited),
		RDMAFIELD(num_connections),	  RDMAFIELD(reserved), RDMAFIELD(recv),
		RDMAFIELD(conn),		  sizeof(struct doca_gpu_dev_rdma_r),
	};
	int count = (int)(sizeof(v) / sizeof(v[0]));
	for (int i = 0; i < count && i < n; i++)
		out[i] = v[i];
	return count;
}

// The server of DOCA 2.6's RDMA write sample, its two CUDA threads run by one CPU thread, in
// DOCA 2.5 / 2.6 signatures: for each round i below `rounds`, two receives (none for the
// writes with immediate of even rounds; into halves of buffer i of `a` for the sends of odd
// ones), committed; then a 1-byte write of flag i (local `f` to the client's `rf`) tells the
// client; then a blocking wait for both receives, their immediates to imm[2 i], imm[2 i + 1].
extern "C" int harness_rdma_server_v26(struct doca_gpu_dev_rdma *rdma, const struct doca_gpu_buf_arr *a,
				       const struct doca_gpu_buf_arr *f, const struct doca_gpu_buf_arr *rf,
				       uint32_t rounds, uint32_t half, uint32_t *imm)
{
	struct doca_gpu_dev_rdma_r *r = 0;
	doca_error_t e = doca_gpu_dev_rdma_get_recv(rdma, &r);
	if (e != DOCA_SUCCESS)
		return (int)e;
	struct doca_gpu_buf *lf, *rflag, *abuf;
	doca_gpu_dev_buf_get_buf(f, 0, &lf);
	doca_gpu_dev_buf_get_buf(rf, 0, &rflag);
	for (uint32_t i = 0; i < rounds; i++) {
		for (uint32_t t = 0; t < 2; t++) {
			if (i % 2 == 0) {
				e = doca_gpu_dev_rdma_recv_strong(r, NULL, 0, 0, 0);
			} else {
				doca_gpu_dev_buf_get_buf(a, i, &abuf);
				e = doca_gpu_dev_rdma_recv_strong(r, abuf, half, (uint64_t)t * half, 0);
			}
			if (e != DOCA_SUCCESS)
				return (int)e;
		}
		if ((e = doca_gpu_dev_rdma_recv_commit_strong(r)) != DOCA_SUCCESS)
			return (int)e;
		e = doca_gpu_dev_rdma_write_strong(rdma, rflag, i, lf, i, 1, 0, DOCA_GPU_RDMA_WRITE_FLAG_NONE);
		if (e == DOCA_SUCCESS)
			e = doca_gpu_dev_rdma_commit_strong(rdma);
		if (e != DOCA_SUCCESS)
			return (int)e;
		uint32_t num = 0;
		e = doca_gpu_dev_rdma_recv_wait_all(r, DOCA_GPU_RDMA_RECV_WAIT_FLAG_B, &num, &imm[2 * i]);
		if (e != DOCA_SUCCESS)
			return (int)e;
		if (num != 2)
			return DOCA_ERROR_UNEXPECTED;
	}
	uint32_t commits = 0;
	e = doca_gpu_dev_rdma_wait_all(rdma, &commits);
	return e == DOCA_SUCCESS && commits != rounds ? DOCA_ERROR_UNEXPECTED : (int)e;
}

// The sample's client: for each round i, waits (10 s at most) for flag i in its `f`, then its
// two threads each move a half of buffer i of `a` on the server (from buffer i of `b` and of
// `c`): writes with immediate i, i + 1 in even rounds, sends with those immediates in odd
// ones; one commit a round. Then waits for everything; `commits`: what wait_all reported.
extern "C" int harness_rdma_client_v26(struct doca_gpu_dev_rdma *rdma, const struct doca_gpu_buf_arr *b,
				       const struct doca_gpu_buf_arr *c, const struct doca_gpu_buf_arr *f,
				       const struct doca_gpu_buf_arr *ra, uint32_t rounds, uint32_t half,
				       uint32_t *commits)
{
	struct doca_gpu_buf *flag, *src, *dst;
	uintptr_t flag_addr = 0;
	doca_gpu_dev_buf_get_buf(f, 0, &flag);
	doca_gpu_dev_buf_get_addr(flag, &flag_addr);
	for (uint32_t i = 0; i < rounds; i++) {
		uint64_t start = doca_gpu_dev_eth_now_ns();
		while (DOCA_GPUNETIO_VOLATILE(((uint8_t *)flag_addr)[i]) != 1)
			if (doca_gpu_dev_eth_now_ns() - start > 10000000000ull)
				return DOCA_ERROR_TIME_OUT;
		doca_gpu_dev_buf_get_buf(ra, i, &dst);
		for (uint32_t t = 0; t < 2; t++) {
			doca_gpu_dev_buf_get_buf(t == 0 ? b : c, i, &src);
			doca_error_t e =
				i % 2 == 0 ?
					doca_gpu_dev_rdma_write_strong(rdma, dst, (uint64_t)t * half, src, 0, half, i + t,
								       DOCA_GPU_RDMA_WRITE_FLAG_IMM) :
					doca_gpu_dev_rdma_send_strong(rdma, src, 0, half, i + t, DOCA_GPU_RDMA_SEND_FLAG_IMM);
			if (e != DOCA_SUCCESS)
				return (int)e;
		}
		doca_error_t e = doca_gpu_dev_rdma_commit_strong(rdma);
		if (e != DOCA_SUCCESS)
			return (int)e;
	}
	return (int)doca_gpu_dev_rdma_wait_all(rdma, commits);
}

// DOCA 2.7+'s weak pattern on connection `conn` (as NIXL's GPUNetIO kernels post): positions
// from get_info, n writes of buffer i of `l` to buffer i of `r` (`size` bytes), one commit_weak
// of n; then n strong reads of them back into buffer i of `back`; then an inline write of
// `inl_len` bytes of `inl` to the peer at buffer 0 of `r`, offset `inl_off`. Waits for all.
// Returns 0 or the first error; `commits`: what wait_all reported.
extern "C" int harness_rdma_weak_v27(struct doca_gpu_dev_rdma *rdma, uint32_t conn, const struct doca_gpu_buf_arr *l,
				     const struct doca_gpu_buf_arr *r, const struct doca_gpu_buf_arr *back, uint32_t n,
				     uint32_t size, uint8_t *inl, uint32_t inl_len, uint64_t inl_off, uint32_t *commits)
{
	uint32_t pos = 0, mask = 0;
	doca_error_t e = doca_gpu_dev_rdma_get_info(rdma, conn, &pos, &mask);
	if (e != DOCA_SUCCESS)
		return (int)e;
	struct doca_gpu_buf *lb, *rb, *bb;
	for (uint32_t i = 0; i < n; i++) {
		doca_gpu_dev_buf_get_buf(l, i, &lb);
		doca_gpu_dev_buf_get_buf(r, i, &rb);
		e = doca_gpu_dev_rdma_write_weak(rdma, conn, rb, 0, lb, 0, size, 0, DOCA_GPU_RDMA_WRITE_FLAG_NONE,
						 (pos + i) & mask);
		if (e != DOCA_SUCCESS)
			return (int)e;
	}
	if ((e = doca_gpu_dev_rdma_commit_weak(rdma, conn, n)) != DOCA_SUCCESS)
		return (int)e;
	for (uint32_t i = 0; i < n; i++) {
		doca_gpu_dev_buf_get_buf(r, i, &rb);
		doca_gpu_dev_buf_get_buf(back, i, &bb);
		if ((e = doca_gpu_dev_rdma_read_strong(rdma, conn, rb, 0, bb, 0, size, 0)) != DOCA_SUCCESS)
			return (int)e;
	}
	if ((e = doca_gpu_dev_rdma_commit_strong(rdma, conn)) != DOCA_SUCCESS)
		return (int)e;
	doca_gpu_dev_buf_get_buf(r, 0, &rb);
	e = doca_gpu_dev_rdma_write_inline_strong(rdma, conn, rb, inl_off, inl, inl_len, 0, DOCA_GPU_RDMA_WRITE_FLAG_NONE);
	if (e == DOCA_SUCCESS)
		e = doca_gpu_dev_rdma_commit_strong(rdma, conn);
	if (e != DOCA_SUCCESS)
		return (int)e;
	return (int)doca_gpu_dev_rdma_wait_all(rdma, commits);
}

// What the calls say to arguments they refuse: [0] a connection past the last, [1] an inline
// write of 29 bytes, [2] an inline send of 45, [3] a read with flags, [4] get_recv, [5] a
// receive wait with an unknown flag (on the receive side get_recv gave, when it gave one).
extern "C" void harness_rdma_refusals(struct doca_gpu_dev_rdma *rdma, const struct doca_gpu_buf_arr *l, int *out)
{
	struct doca_gpu_buf *b;
	uint8_t bytes[64] = {0};
	doca_gpu_dev_buf_get_buf(l, 0, &b);
	out[0] = (int)doca_gpu_dev_rdma_write_strong(rdma, rdma->num_connections, b, 0, b, 0, 8, 0,
						     DOCA_GPU_RDMA_WRITE_FLAG_NONE);
	out[1] = (int)doca_gpu_dev_rdma_write_inline_strong(rdma, 0, b, 0, bytes, 29, 0, DOCA_GPU_RDMA_WRITE_FLAG_NONE);
	out[2] = (int)doca_gpu_dev_rdma_send_inline_strong(rdma, 0, bytes, 45, 0, DOCA_GPU_RDMA_SEND_FLAG_NONE);
	out[3] = (int)doca_gpu_dev_rdma_read_strong(rdma, 0, b, 0, b, 0, 8, 1);
	struct doca_gpu_dev_rdma_r *r = 0;
	out[4] = (int)doca_gpu_dev_rdma_get_recv(rdma, &r);
	uint32_t num = 0;
	out[5] = r ? (int)doca_gpu_dev_rdma_recv_wait_all(r, (enum doca_gpu_dev_rdma_recv_wait_flags)7, &num, NULL, NULL) :
		     -1;
}
