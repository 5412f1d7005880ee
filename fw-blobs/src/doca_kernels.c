/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * doca_kernels: DOCA DPA kernels for this project's tests and demos, written against the DOCA
 * DPA device API (doca_dpa_dev.h, doca_dpa_dev_sync_event.h) as a DOCA user would write them.
 *
 *   hello_world()                      logs "Hello from kernel" (the seed's kernel launch sample)
 *   linear_kernel(wait, comp)          waits for wait > 0 (if any), then adds 1 to comp
 *   diamond_kernel(wait, th, c1, c2)   waits for wait > th - 1 (if any), adds 1 to c1 and c2 (if any)
 *   rank_kernel(out_ev_base, stride)   adds (rank + 1) << (8 * rank) to event out (a checksum of
 *                                      the ranks that ran) and num_threads to the next word
 *   struct_kernel(args)                a 48-byte struct by value (passed by reference): sets
 *                                      args.ev to args.a + args.b + ... + args.f
 *   pair_kernel(pair, ev)              a 16-byte struct by value (two registers): sets ev to
 *                                      pair.x * 1000 + pair.y
 *   spin_kernel(ev)                    waits on ev for ever (for the watchdog)
 *   sum_rpc(a, b)                      an RPC: returns a + b
 *   pingpong_kernel(ping, pong, rounds) for i in 1..=rounds: waits for ping > i - 1, sets pong
 *                                      to i (a host <-> DPA sync-event round trip each)
 *   hello_world_thread_kernel(ev)      the seed's DPA thread: logs, sets ev to 1, finishes
 *   hello_world_thread_notify_rpc(nc)  the seed's RPC: logs, notifies the thread of nc
 *   counting_thread(arg)               a DPA thread: adds arg to the event in its local
 *                                      storage word 0, notifies word 1 (if set), reschedules
 *   notify_kernel(nc, times)           notifies nc's thread `times` times
 *   relay_thread(arg)                  a DPA thread: adds 1 to the event in its local storage
 *                                      word 0 and, while that event is below word 2, notifies
 *                                      word 1 (two of them notify each other)
 *   trace_kernel(n)                    traces n records (i, i * 2, i * 3, i * 4, i * 5), i = 1..n
 *   fault_thread(arg)                  a DPA thread that stores to address 0 (a memory fault)
 *   memcpy_kernel(ops, comp, dmap, d, smap, s, len, ev)
 *                                      posts one memcpy, waits for its completion, acks it and
 *                                      sets ev to (type << 32 | user data) + 1
 *   completion_thread(arg)             a DPA thread woken by completions: local storage
 *                                      {completion handle, event}; adds each element's user
 *                                      data to the event, acks, asks for the next notification
 *   hash_kernel(ht, base, n, out)      each of the launch's threads adds keys base + rank * n ..
 *                                      + n - 1 (value key * 3), removes the odd ones, then looks
 *                                      every one up: out[rank] counts the lookups that agree
 *   group_thread(ev)                   a DPA thread: adds (1 << rank) + (num_threads << 32) to ev
 *   rdma_kernel(rdma, op, lmap, laddr, rmap, raddr, len, arg)
 *                                      one RDMA operation on connection op >> 8: op & 0xff is
 *                                      0 receive, 1 send, 2 send with immediate arg, 3 write,
 *                                      4 write with immediate arg, 5 read, 6 fetch-and-add arg,
 *                                      7 signal_set of the remote event raddr to arg,
 *                                      8 signal_add of arg, 9 acknowledge arg receives
 *   poll_kernel(comp, out, ev)         waits for one completion, writes {type, immediate,
 *                                      user data, wr index} to out (u64 each), acks, adds 1 to ev
 *   rdma_write_batches(rdma, comp, lmap, laddr, rmap, raddr, len, batches)
 *                                      `batches` x 32 RDMA writes of len bytes, each batch's last
 *                                      one reporting a completion that is waited for and acked
 *   pingpong_rdma_thread(arg)          DOCA's ping-pong sample endpoint, a DPA thread woken by its
 *                                      RDMA's completions; local storage: struct pp_state below
 *   pingpong_start_rpc(state)          starts an endpoint: posts its receive; the ping sends 0
 *   rdma_post_receive_rpc(rdma, map, addr, len), rdma_post_send_rpc(rdma, map, addr, len)
 *                                      RPCs posting one receive / one send (DOCA's initiator /
 *                                      target samples)
 *   target_thread(arg)                 the target's DPA thread: local storage {completion, data
 *                                      address, event}; logs the completion and the value
 *                                      received, sets the event, finishes
 *   device_rdma_kernel(dev, rdma, op, map, addr, len)
 *                                      doca_dpa_dev_device_set(dev) (when dev is not 0), then on
 *                                      connection 0 of rdma: op 0 receive, 1 send of len bytes
 *   element_counting_thread(arg)       a DPA thread woken by completions: local storage
 *                                      {completion handle, event}; adds 1 to the event per
 *                                      element, acks, asks for the next notification
 *   printf_kernel(x)                   the DPA guide's hello world: doca_dpa_dev_printf of a line
 *                                      with x
 *   it_post_receives_rpc(state), it_target_thread(arg), it_release_thread(arg),
 *   it_send_rpc(rdma, connection, map, addr)
 *                                      DOCA's initiator / target sample with two connections
 *                                      (struct it_state below)
 *   buf_kernel(ops, comp, harr, darr, dmap, daddr, ev)
 *                                      buffers: sums the bytes of host buffer harr[2] (through
 *                                      mmap_get_external_ptr), writes the sum into harr[3]
 *                                      (through buf_get_external_ptr), sets darr[0] to daddr
 *                                      of dmap with harr[2]'s length, copies harr[2] there
 *                                      (post_buf_memcpy), waits for the completion, sets ev
 *                                      to the sum + 1
 *   post_wait_kernel(ops, ev, gt, ne, dmap, d, smap, s)
 *                                      posts on async ops: a wait until ev > gt, a wait until
 *                                      ev != ne, then an 8-byte memcpy from s to d
 *   rdma_buf_kernel(rdma, op, larr, lidx, rarr, ridx, arg)
 *                                      rdma_kernel's operations 0..6 in their buffer forms, on
 *                                      buffer lidx of larr and ridx of rarr
 *   binary_tree_kernel(args)           a node of DOCA's binary-tree sample (a 48-byte struct by
 *                                      value): waits for wait > thresh - 1 (if any), sets left
 *                                      and right to 1, sets comp (if any) to comp_val
 */
#include <doca_dpa_dev.h>
#include <doca_dpa_dev_buf.h>
#include <doca_dpa_dev_rdma.h>
#include <doca_dpa_dev_sync_event.h>
#include <dpaintrin.h>

#define ALL_BITS 0xffffffffffffffffull

__dpa_global__ void hello_world(void)
{
	DOCA_DPA_DEV_LOG_INFO("Hello from kernel\n");
}

__dpa_global__ void linear_kernel(doca_dpa_dev_sync_event_t wait_ev, doca_dpa_dev_sync_event_t comp_ev)
{
	if (wait_ev)
		doca_dpa_dev_sync_event_wait_gt(wait_ev, 0, ALL_BITS);
	doca_dpa_dev_sync_event_update_add(comp_ev, 1);
}

__dpa_global__ void diamond_kernel(doca_dpa_dev_sync_event_t wait_ev, uint64_t wait_th,
				   doca_dpa_dev_sync_event_t comp_ev1, doca_dpa_dev_sync_event_t comp_ev2)
{
	if (wait_ev)
		doca_dpa_dev_sync_event_wait_gt(wait_ev, wait_th - 1, ALL_BITS);
	doca_dpa_dev_sync_event_update_add(comp_ev1, 1);
	if (comp_ev2)
		doca_dpa_dev_sync_event_update_add(comp_ev2, 1);
}

__dpa_global__ void rank_kernel(doca_dpa_dev_sync_event_t ranks, doca_dpa_dev_sync_event_t count)
{
	unsigned int r = doca_dpa_dev_thread_rank();

	doca_dpa_dev_sync_event_update_add(ranks, 1ull << r);
	if (r == 0)
		doca_dpa_dev_sync_event_update_set(count, doca_dpa_dev_num_threads());
}

struct __dpa_global__ six {
	uint64_t a, b, c, d, e;
	doca_dpa_dev_sync_event_t ev;
};

__dpa_global__ void struct_kernel(struct six s)
{
	doca_dpa_dev_sync_event_update_set(s.ev, s.a + s.b + s.c + s.d + s.e);
}

struct __dpa_global__ pair {
	uint64_t x, y;
};

__dpa_global__ void pair_kernel(struct pair p, doca_dpa_dev_sync_event_t ev)
{
	doca_dpa_dev_sync_event_update_set(ev, p.x * 1000 + p.y);
}

__dpa_global__ void spin_kernel(doca_dpa_dev_sync_event_t ev)
{
	doca_dpa_dev_sync_event_wait_gt(ev, ALL_BITS - 1, ALL_BITS);
}

/* An RPC (doca_dpa_rpc): returns a + b. */
__dpa_rpc__ uint64_t sum_rpc(uint64_t a, uint64_t b)
{
	return a + b;
}

/* The node of DOCA's binary-tree sample (dpa_binary_tree), with the sample's argument layout. */
struct __dpa_global__ tree_node_args {
	doca_dpa_dev_sync_event_t wait_event;
	uint64_t wait_thresh;
	doca_dpa_dev_sync_event_t left_event;
	doca_dpa_dev_sync_event_t right_event;
	doca_dpa_dev_sync_event_t comp_event;
	uint64_t comp_val;
};

__dpa_global__ void binary_tree_kernel(struct tree_node_args a)
{
	if (a.wait_event)
		doca_dpa_dev_sync_event_wait_gt(a.wait_event, a.wait_thresh - 1, ALL_BITS);
	doca_dpa_dev_sync_event_update_set(a.left_event, 1);
	doca_dpa_dev_sync_event_update_set(a.right_event, 1);
	if (a.comp_event)
		doca_dpa_dev_sync_event_update_set(a.comp_event, a.comp_val);
}

__dpa_global__ void pingpong_kernel(doca_dpa_dev_sync_event_t ping, doca_dpa_dev_sync_event_t pong,
				    uint64_t rounds)
{
	uint64_t i;

	for (i = 1; i <= rounds; i++) {
		doca_dpa_dev_sync_event_wait_gt(ping, i - 1, ALL_BITS);
		doca_dpa_dev_sync_event_update_set(pong, i);
	}
}

/* The seed's hello-world DPA thread: logs, sets the host's event to 1, and finishes. */
__dpa_global__ void hello_world_thread_kernel(uint64_t arg)
{
	DOCA_DPA_DEV_LOG_INFO("Hello World From DPA Thread!\n");
	doca_dpa_dev_sync_event_update_set(arg, 1);
	doca_dpa_dev_thread_finish();
}

/* The seed's RPC that notifies the thread. */
__dpa_rpc__ uint64_t hello_world_thread_notify_rpc(doca_dpa_dev_notification_completion_t comp_handle)
{
	DOCA_DPA_DEV_LOG_INFO("Notifying DPA Thread From RPC\n");
	doca_dpa_dev_thread_notify(comp_handle);
	return 0;
}

/*
 * A counting DPA thread: its local storage holds {count event, notify handle of the next
 * thread or 0}; each run adds 1 to the event and, if a next thread is named, notifies it.
 */
__dpa_global__ void counting_thread(uint64_t arg)
{
	volatile uint64_t *tls = (volatile uint64_t *)(uintptr_t)doca_dpa_dev_thread_get_local_storage();

	doca_dpa_dev_sync_event_update_add(tls[0], arg);
	if (tls[1])
		doca_dpa_dev_thread_notify(tls[1]);
	doca_dpa_dev_thread_reschedule();
}

/* A kernel that notifies a thread `times` times. */
__dpa_global__ void notify_kernel(doca_dpa_dev_notification_completion_t comp, uint64_t times)
{
	uint64_t i;

	for (i = 0; i < times; i++)
		doca_dpa_dev_thread_notify(comp);
}

__dpa_global__ void relay_thread(uint64_t arg)
{
	volatile uint64_t *tls = (volatile uint64_t *)(uintptr_t)doca_dpa_dev_thread_get_local_storage();
	uint64_t count;

	(void)arg;
	doca_dpa_dev_sync_event_update_add(tls[0], 1);
	doca_dpa_dev_sync_event_get(tls[0], &count);
	if (count < tls[2])
		doca_dpa_dev_thread_notify(tls[1]);
	doca_dpa_dev_thread_reschedule();
}

__dpa_global__ void trace_kernel(uint64_t n)
{
	uint64_t i;

	for (i = 1; i <= n; i++)
		doca_dpa_dev_trace(i, i * 2, i * 3, i * 4, i * 5);
	doca_dpa_dev_trace_flush();
}

__dpa_global__ void fault_thread(uint64_t arg)
{
	*(volatile uint64_t *)(uintptr_t)0 = arg;
	doca_dpa_dev_thread_reschedule();
}

__dpa_global__ void memcpy_kernel(doca_dpa_dev_async_ops_t ops, doca_dpa_dev_completion_t comp,
				  doca_dpa_dev_mmap_t dst_mmap, uint64_t dst, doca_dpa_dev_mmap_t src_mmap,
				  uint64_t src, uint64_t len, doca_dpa_dev_sync_event_t ev)
{
	doca_dpa_dev_completion_element_t e;
	uint64_t v;

	doca_dpa_dev_post_memcpy(ops, dst_mmap, dst, src_mmap, src, len, DOCA_DPA_DEV_SUBMIT_FLAG_FLUSH);
	while (!doca_dpa_dev_get_completion(comp, &e))
		;
	v = ((uint64_t)doca_dpa_dev_get_completion_type(e) << 32) | doca_dpa_dev_get_completion_user_data(e);
	doca_dpa_dev_completion_ack(comp, 1);
	doca_dpa_dev_sync_event_update_set(ev, v + 1);
}

__dpa_global__ void completion_thread(uint64_t arg)
{
	volatile uint64_t *tls = (volatile uint64_t *)(uintptr_t)doca_dpa_dev_thread_get_local_storage();
	doca_dpa_dev_completion_element_t e;

	(void)arg;
	while (doca_dpa_dev_get_completion(tls[0], &e)) {
		doca_dpa_dev_sync_event_update_add(tls[1], doca_dpa_dev_get_completion_user_data(e));
		doca_dpa_dev_completion_ack(tls[0], 1);
	}
	doca_dpa_dev_completion_request_notification(tls[0]);
	doca_dpa_dev_thread_reschedule();
}

/* Posts `n` memcpys of 8 bytes (i-th: src + 8i -> dst + 8i); their completions go elsewhere. */
__dpa_global__ void memcpy_many_kernel(doca_dpa_dev_async_ops_t ops, doca_dpa_dev_mmap_t dst_mmap, uint64_t dst,
				       doca_dpa_dev_mmap_t src_mmap, uint64_t src, uint64_t n)
{
	uint64_t i;

	for (i = 0; i < n; i++)
		doca_dpa_dev_post_memcpy(ops, dst_mmap, dst + 8 * i, src_mmap, src + 8 * i, 8,
					 DOCA_DPA_DEV_SUBMIT_FLAG_FLUSH);
}

__dpa_global__ void hash_kernel(doca_dpa_dev_hash_table_t ht, uint64_t base, uint64_t n, uint64_t out)
{
	unsigned int r = doca_dpa_dev_thread_rank();
	uint32_t first = (uint32_t)(base + r * n);
	uint64_t ok = 0, v, i;

	for (i = 0; i < n; i++)
		doca_dpa_dev_hash_table_add(ht, first + (uint32_t)i, (uint64_t)(first + i) * 3);
	for (i = 1; i < n; i += 2)
		doca_dpa_dev_hash_table_remove(ht, first + (uint32_t)i);
	for (i = 0; i < n; i++) {
		int found = doca_dpa_dev_hash_table_find(ht, first + (uint32_t)i, &v);

		if (i % 2 == 0)
			ok += found && v == (uint64_t)(first + i) * 3;
		else
			ok += !found;
	}
	((volatile uint64_t *)(uintptr_t)out)[r] = ok;
}

__dpa_global__ void group_thread(uint64_t ev)
{
	doca_dpa_dev_sync_event_update_add(ev, (1ull << doca_dpa_dev_thread_rank()) +
						    ((uint64_t)doca_dpa_dev_num_threads() << 32));
	doca_dpa_dev_thread_reschedule();
}

__dpa_global__ void rdma_kernel(doca_dpa_dev_rdma_t rdma, uint64_t op, doca_dpa_dev_mmap_t lmap, uint64_t laddr,
				doca_dpa_dev_mmap_t rmap, uint64_t raddr, uint64_t len, uint64_t arg)
{
	uint32_t f = DOCA_DPA_DEV_SUBMIT_FLAG_FLUSH;
	uint32_t c = (uint32_t)(op >> 8);

	switch (op & 0xff) {
	case 0:
		doca_dpa_dev_rdma_post_receive(rdma, lmap, laddr, len);
		break;
	case 1:
		doca_dpa_dev_rdma_post_send(rdma, c, lmap, laddr, len, f);
		break;
	case 2:
		doca_dpa_dev_rdma_post_send_imm(rdma, c, lmap, laddr, len, (uint32_t)arg, f);
		break;
	case 3:
		doca_dpa_dev_rdma_post_write(rdma, c, rmap, raddr, lmap, laddr, len, f);
		break;
	case 4:
		doca_dpa_dev_rdma_post_write_imm(rdma, c, rmap, raddr, lmap, laddr, len, (uint32_t)arg, f);
		break;
	case 5:
		doca_dpa_dev_rdma_post_read(rdma, c, lmap, laddr, rmap, raddr, len, f);
		break;
	case 6:
		doca_dpa_dev_rdma_post_atomic_fetch_add(rdma, c, rmap, raddr, arg, f);
		break;
	case 7:
		doca_dpa_dev_rdma_signal_set(rdma, c, raddr, arg);
		break;
	case 8:
		doca_dpa_dev_rdma_signal_add(rdma, c, raddr, arg);
		break;
	case 9:
		doca_dpa_dev_rdma_receive_ack(rdma, (uint32_t)arg);
		break;
	}
}

__dpa_global__ void poll_kernel(doca_dpa_dev_completion_t comp, uint64_t out, doca_dpa_dev_sync_event_t ev)
{
	volatile uint64_t *o = (volatile uint64_t *)(uintptr_t)out;
	doca_dpa_dev_completion_element_t e;

	while (!doca_dpa_dev_get_completion(comp, &e))
		;
	o[0] = doca_dpa_dev_get_completion_type(e);
	o[1] = doca_dpa_dev_get_completion_immediate(e);
	o[2] = doca_dpa_dev_get_completion_user_data(e);
	o[3] = doca_dpa_dev_rdma_completion_get_wr_index(e);
	doca_dpa_dev_completion_ack(comp, 1);
	doca_dpa_dev_sync_event_update_add(ev, 1);
}

__dpa_global__ void rdma_write_batches(doca_dpa_dev_rdma_t rdma, doca_dpa_dev_completion_t comp,
				       doca_dpa_dev_mmap_t lmap, uint64_t laddr, doca_dpa_dev_mmap_t rmap,
				       uint64_t raddr, uint64_t len, uint64_t batches)
{
	doca_dpa_dev_completion_element_t e;
	uint64_t b, i;

	for (b = 0; b < batches; b++) {
		for (i = 0; i < 31; i++)
			doca_dpa_dev_rdma_post_write(rdma, 0, rmap, raddr, lmap, laddr, len,
						     DOCA_DPA_DEV_SUBMIT_FLAG_OPTIMIZE_REPORTS);
		doca_dpa_dev_rdma_post_write(rdma, 0, rmap, raddr, lmap, laddr, len, DOCA_DPA_DEV_SUBMIT_FLAG_FLUSH);
		while (!doca_dpa_dev_get_completion(comp, &e))
			;
		doca_dpa_dev_completion_ack(comp, 1);
	}
}

/*
 * DOCA's ping-pong sample: two endpoints exchange the values 0 .. rounds - 1 over their RDMAs.
 * The ping sends v and waits for it back; the pong returns each value it receives; the ping
 * then sends v + 1. Each endpoint counts the values it receives and sets its event when all
 * arrived. The state is the thread's local storage.
 */
struct pp_state {
	doca_dpa_dev_rdma_t rdma;
	doca_dpa_dev_completion_t comp;
	doca_dpa_dev_mmap_t map;
	uint64_t recv_addr;  /* 8 bytes the receives land in */
	uint64_t send_addr;  /* 8 bytes the sends go out of */
	doca_dpa_dev_sync_event_t done;
	uint64_t is_ping;
	uint64_t rounds;
	uint64_t received;   /* values received so far */
	uint64_t errors;     /* values that were not the one expected */
};

static void pp_send(volatile struct pp_state *st, uint64_t v)
{
	*(volatile uint64_t *)(uintptr_t)st->send_addr = v;
	doca_dpa_dev_rdma_post_send(st->rdma, 0, st->map, st->send_addr, 8, DOCA_DPA_DEV_SUBMIT_FLAG_FLUSH);
}

__dpa_rpc__ uint64_t pingpong_start_rpc(uint64_t state)
{
	volatile struct pp_state *st = (volatile struct pp_state *)(uintptr_t)state;

	doca_dpa_dev_rdma_post_receive(st->rdma, st->map, st->recv_addr, 8);
	if (st->is_ping)
		pp_send(st, 0);
	return 0;
}

__dpa_global__ void pingpong_rdma_thread(uint64_t arg)
{
	volatile struct pp_state *st = (volatile struct pp_state *)(uintptr_t)doca_dpa_dev_thread_get_local_storage();
	doca_dpa_dev_completion_element_t e;

	(void)arg;
	while (doca_dpa_dev_get_completion(st->comp, &e)) {
		doca_dpa_dev_completion_type_t type = doca_dpa_dev_get_completion_type(e);

		doca_dpa_dev_completion_ack(st->comp, 1);
		if (type != DOCA_DPA_DEV_COMP_RECV_SEND)
			continue; /* our own send's completion */
		{
			uint64_t v = *(volatile uint64_t *)(uintptr_t)st->recv_addr;

			if (v != st->received)
				st->errors = st->errors + 1;
			st->received = st->received + 1;
			doca_dpa_dev_rdma_receive_ack(st->rdma, 1);
			if (st->received < st->rounds)
				doca_dpa_dev_rdma_post_receive(st->rdma, st->map, st->recv_addr, 8);
			if (!st->is_ping)
				pp_send(st, v);
			else if (v + 1 < st->rounds)
				pp_send(st, v + 1);
			if (st->received == st->rounds)
				doca_dpa_dev_sync_event_update_set(st->done, 1);
		}
	}
	doca_dpa_dev_completion_request_notification(st->comp);
	doca_dpa_dev_thread_reschedule();
}

__dpa_rpc__ uint64_t rdma_post_receive_rpc(doca_dpa_dev_rdma_t rdma, doca_dpa_dev_mmap_t map, uint64_t addr,
					   uint64_t len)
{
	doca_dpa_dev_rdma_post_receive(rdma, map, addr, len);
	return 0;
}

__dpa_rpc__ uint64_t rdma_post_send_rpc(doca_dpa_dev_rdma_t rdma, doca_dpa_dev_mmap_t map, uint64_t addr,
					uint64_t len)
{
	doca_dpa_dev_rdma_post_send(rdma, 0, map, addr, len, DOCA_DPA_DEV_SUBMIT_FLAG_FLUSH);
	return 0;
}

__dpa_global__ void target_thread(uint64_t arg)
{
	volatile uint64_t *tls = (volatile uint64_t *)(uintptr_t)doca_dpa_dev_thread_get_local_storage();
	doca_dpa_dev_completion_element_t e;

	(void)arg;
	if (!doca_dpa_dev_get_completion(tls[0], &e)) {
		doca_dpa_dev_completion_request_notification(tls[0]);
		doca_dpa_dev_thread_reschedule();
	}
	DOCA_DPA_DEV_LOG_INFO("Target DPA thread: completion type %u, user data (connection) %u, received %lu\n",
			      (unsigned int)doca_dpa_dev_get_completion_type(e),
			      (unsigned int)doca_dpa_dev_get_completion_user_data(e),
			      (unsigned long)*(volatile uint64_t *)(uintptr_t)tls[1]);
	doca_dpa_dev_completion_ack(tls[0], 1);
	doca_dpa_dev_sync_event_update_set(tls[2], 1);
	doca_dpa_dev_thread_finish();
}

__dpa_global__ void buf_kernel(doca_dpa_dev_async_ops_t ops, doca_dpa_dev_completion_t comp,
			       doca_dpa_dev_buf_arr_t harr, doca_dpa_dev_buf_arr_t darr, doca_dpa_dev_mmap_t dmap,
			       uint64_t daddr, doca_dpa_dev_sync_event_t ev)
{
	doca_dpa_dev_buf_t src = doca_dpa_dev_buf_array_get_buf(harr, 2);
	doca_dpa_dev_buf_t out = doca_dpa_dev_buf_array_get_buf(harr, 3);
	doca_dpa_dev_buf_t dst = doca_dpa_dev_buf_array_get_buf(darr, 0);
	doca_dpa_dev_completion_element_t e;
	volatile uint8_t *p;
	uint64_t sum = 0, i;

	p = (volatile uint8_t *)(uintptr_t)doca_dpa_dev_mmap_get_external_ptr(doca_dpa_dev_buf_get_mmap(src),
									     doca_dpa_dev_buf_get_addr(src));
	__dpa_thread_window_read_inv();
	for (i = 0; i < doca_dpa_dev_buf_get_len(src); i++)
		sum += p[i];
	*(volatile uint64_t *)(uintptr_t)doca_dpa_dev_buf_get_external_ptr(out) = sum;
	__dpa_thread_window_writeback();

	doca_dpa_dev_buf_set_addr(dst, daddr);
	doca_dpa_dev_buf_set_len(dst, doca_dpa_dev_buf_get_len(src));
	doca_dpa_dev_buf_set_mmap(dst, dmap);
	doca_dpa_dev_post_buf_memcpy(ops, dst, src, DOCA_DPA_DEV_SUBMIT_FLAG_FLUSH);
	while (!doca_dpa_dev_get_completion(comp, &e))
		;
	doca_dpa_dev_completion_ack(comp, 1);
	doca_dpa_dev_sync_event_update_set(ev, sum + 1);
}

__dpa_global__ void rdma_buf_kernel(doca_dpa_dev_rdma_t rdma, uint64_t op, doca_dpa_dev_buf_arr_t larr, uint64_t lidx,
				    doca_dpa_dev_buf_arr_t rarr, uint64_t ridx, uint64_t arg)
{
	doca_dpa_dev_buf_t l = doca_dpa_dev_buf_array_get_buf(larr, lidx);
	doca_dpa_dev_buf_t r = rarr ? doca_dpa_dev_buf_array_get_buf(rarr, ridx) : 0;
	uint32_t f = DOCA_DPA_DEV_SUBMIT_FLAG_FLUSH;

	switch (op) {
	case 0:
		doca_dpa_dev_rdma_post_buf_receive(rdma, l);
		break;
	case 1:
		doca_dpa_dev_rdma_post_buf_send(rdma, 0, l, f);
		break;
	case 2:
		doca_dpa_dev_rdma_post_buf_send_imm(rdma, 0, l, (uint32_t)arg, f);
		break;
	case 3:
		doca_dpa_dev_rdma_post_buf_write(rdma, 0, r, l, f);
		break;
	case 4:
		doca_dpa_dev_rdma_post_buf_write_imm(rdma, 0, r, l, (uint32_t)arg, f);
		break;
	case 5:
		doca_dpa_dev_rdma_post_buf_read(rdma, 0, l, r, f);
		break;
	case 6:
		doca_dpa_dev_rdma_post_buf_atomic_fetch_add(rdma, 0, r, arg, f);
		break;
	}
}

__dpa_global__ void post_wait_kernel(doca_dpa_dev_async_ops_t ops, doca_dpa_dev_sync_event_t ev, uint64_t gt,
				     uint64_t ne, doca_dpa_dev_mmap_t dmap, uint64_t d, doca_dpa_dev_mmap_t smap,
				     uint64_t s)
{
	doca_dpa_dev_sync_event_post_wait_gt(ops, ev, gt);
	doca_dpa_dev_sync_event_post_wait_ne(ops, ev, ne);
	doca_dpa_dev_post_memcpy(ops, dmap, d, smap, s, 8, DOCA_DPA_DEV_SUBMIT_FLAG_FLUSH);
}

/*
 * DOCA's initiator / target sample (dpa_initiator_target): the target's RDMA has two
 * connections, which share its receive queue, attached to one completion context that wakes
 * it_target_thread; the initiator sends 1, 2, 3, 4 over connections 0, 1, 0, 1. The target
 * thread logs each completion with its user data (the connection), keeps the value, reposts
 * the receive and acknowledges; with every value in, it notifies it_release_thread, which
 * sets the host's event. Local storage of it_target_thread: struct it_state.
 */
struct it_state {
	doca_dpa_dev_completion_t comp;                /* 0x00 */
	doca_dpa_dev_rdma_t rdma;                      /* 0x08 */
	doca_dpa_dev_mmap_t map;                       /* 0x10 */
	uint64_t recv_base;                            /* 0x18: receive slot i at recv_base + 8 i */
	uint64_t slots;                                /* 0x20: receive slots, a power of two */
	doca_dpa_dev_notification_completion_t notify; /* 0x28: it_release_thread's */
	uint64_t expected;                             /* 0x30: values to receive (1 .. expected) */
	uint64_t received;                             /* 0x38: bit v set once value v came */
	uint64_t count;                                /* 0x40: receives completed */
	uint64_t posted;                               /* 0x48: receives posted */
	uint64_t per_conn[2];                          /* 0x50: receives per connection */
};

static void it_post_receive(volatile struct it_state *st)
{
	uint64_t slot = st->posted & (st->slots - 1);

	doca_dpa_dev_rdma_post_receive(st->rdma, st->map, st->recv_base + 8 * slot, 8);
	st->posted = st->posted + 1;
}

__dpa_rpc__ uint64_t it_post_receives_rpc(uint64_t state)
{
	volatile struct it_state *st = (volatile struct it_state *)(uintptr_t)state;
	uint64_t i;

	for (i = 0; i < st->slots; i++)
		it_post_receive(st);
	return 0;
}

__dpa_global__ void it_target_thread(uint64_t arg)
{
	volatile struct it_state *st = (volatile struct it_state *)(uintptr_t)doca_dpa_dev_thread_get_local_storage();
	doca_dpa_dev_completion_element_t e;

	(void)arg;
	while (doca_dpa_dev_get_completion(st->comp, &e)) {
		uint32_t type = doca_dpa_dev_get_completion_type(e);
		uint32_t conn = doca_dpa_dev_get_completion_user_data(e);
		uint32_t wr = doca_dpa_dev_rdma_completion_get_wr_index(e);
		uint64_t v = *(volatile uint64_t *)(uintptr_t)(st->recv_base + 8 * (wr & (st->slots - 1)));

		doca_dpa_dev_completion_ack(st->comp, 1);
		if (type != DOCA_DPA_DEV_COMP_RECV_SEND) {
			DOCA_DPA_DEV_LOG_ERR("Target DPA thread #1: unexpected completion type %u\n", type);
			continue;
		}
		DOCA_DPA_DEV_LOG_INFO("Target DPA thread #1: completion on connection %u (user data), value %lu\n", conn,
				      (unsigned long)v);
		if (v < 64)
			st->received = st->received | (1ull << v);
		if (conn < 2)
			st->per_conn[conn] = st->per_conn[conn] + 1;
		st->count = st->count + 1;
		doca_dpa_dev_rdma_receive_ack(st->rdma, 1);
		it_post_receive(st);
		if (st->count == st->expected) {
			DOCA_DPA_DEV_LOG_INFO("Target DPA thread #1: all values received, notifying thread #2\n");
			doca_dpa_dev_thread_notify(st->notify);
			doca_dpa_dev_thread_finish();
		}
	}
	doca_dpa_dev_completion_request_notification(st->comp);
	doca_dpa_dev_thread_reschedule();
}

__dpa_global__ void it_release_thread(uint64_t ev)
{
	DOCA_DPA_DEV_LOG_INFO("Target DPA thread #2: setting the host's completion event\n");
	doca_dpa_dev_sync_event_update_set(ev, 1);
	doca_dpa_dev_thread_finish();
}

__dpa_rpc__ uint64_t it_send_rpc(doca_dpa_dev_rdma_t rdma, uint64_t connection, doca_dpa_dev_mmap_t map, uint64_t addr)
{
	doca_dpa_dev_rdma_post_send(rdma, (uint32_t)connection, map, addr, 8, DOCA_DPA_DEV_SUBMIT_FLAG_FLUSH);
	return 0;
}

__dpa_global__ void printf_kernel(uint64_t x)
{
	doca_dpa_dev_printf("Hello World from the DPA, x = %lu\n", (unsigned long)x);
}

__dpa_global__ void device_rdma_kernel(doca_dpa_dev_t dev, doca_dpa_dev_rdma_t rdma, uint64_t op,
				       doca_dpa_dev_mmap_t map, uint64_t addr, uint64_t len)
{
	if (dev)
		doca_dpa_dev_device_set(dev);
	if (op == 0)
		doca_dpa_dev_rdma_post_receive(rdma, map, addr, len);
	else
		doca_dpa_dev_rdma_post_send(rdma, 0, map, addr, len, DOCA_DPA_DEV_SUBMIT_FLAG_FLUSH);
}

__dpa_global__ void element_counting_thread(uint64_t arg)
{
	volatile uint64_t *tls = (volatile uint64_t *)(uintptr_t)doca_dpa_dev_thread_get_local_storage();
	doca_dpa_dev_completion_element_t e;

	(void)arg;
	while (doca_dpa_dev_get_completion(tls[0], &e)) {
		doca_dpa_dev_completion_ack(tls[0], 1);
		doca_dpa_dev_sync_event_update_add(tls[1], 1);
	}
	doca_dpa_dev_completion_request_notification(tls[0]);
	doca_dpa_dev_thread_reschedule();
}
