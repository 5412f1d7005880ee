//! The GPUNetIO Verbs headers (`src/gpu/include/doca_gpunetio_dev_verbs_*.cuh`), built as host
//! C++ with g++ and run on CPU threads against the device model: the QP handle's layout is
//! `GpuVerbsQp`'s; the WRITE, READ, SEND and fetch-add WQEs they write are `RcQp::post_send`'s
//! byte for byte; and through an exported RC QP (force-loopback to a host-driven peer), "kernel"
//! threads put with signals (the CPU proxy or the kernel ringing), get, send and receive, each
//! checked in the peer's memory. Without g++ the tests say so and pass without checking.

use std::time::{Duration, Instant};

use mlx5_dpa::devx::UarKind;
use mlx5_dpa::gpu::{GpuVerbsCq, GpuVerbsQp, NicHandler, VerbsQp};
use mlx5_dpa::mem::{Access, DmaBuf, Pd, Umem};
use mlx5_dpa::queues::{Cq, CqConfig, HostQueueMem, QpConfig, RcQp, RemoteAddr, SendOp, SendWr};
use mlx5_dpa::uar::UarPage;

use crate::gpu;
use gpu::{harness, sym, WhileKernels, DOCA_SUCCESS};

use crate::rdma_rc;
use rdma_rc::Side;

type R = Result<(), Box<dyn std::error::Error>>;
type LayoutFn = unsafe extern "C" fn(*mut u64, i32) -> i32;
type PrepareFn =
    unsafe extern "C" fn(*const GpuVerbsQp, i32, *mut u8, u16, u64, u32, u64, u32, u64);
type PutSignalFn =
    unsafe extern "C" fn(u64, u64, u32, u64, u32, u32, u32, u32, u32, u64, u64, u32) -> i32;
type GetFn = unsafe extern "C" fn(u64, u64, u32, u64, u32, u32) -> i32;
type PutNowaitFn = unsafe extern "C" fn(u64, u64, u32, u64, u32, u32) -> u64;
type PutManyFn = unsafe extern "C" fn(u64, u64, u32, u64, u32, u32, u32, u32) -> i32;
type WaitFn = unsafe extern "C" fn(u64, u64) -> i32;
type SendFn = unsafe extern "C" fn(u64, u64, u32, u32) -> i32;
type RecvFn = unsafe extern "C" fn(u64, u64, u32, u32, *mut u32) -> i32;

const WAIT: Duration = Duration::from_secs(30);
/// The peer's signal counter (8 bytes) and where the puts land, in each side's 64 KiB region.
const SIGNAL_AT: usize = 60 * 1024;
const CHUNK: usize = 256;
const CHUNKS: usize = 64;

#[test]
#[cfg_attr(no_gxx, ignore = "g++ is not installed")]
fn the_qp_handle_layout_is_the_headers() {
    let lib = harness();
    let layout: LayoutFn = sym(lib, b"harness_verbs_layout");
    let mut v = [0u64; 64];
    // SAFETY: `v` holds 64 entries and the harness writes at most that many.
    let n = unsafe { layout(v.as_mut_ptr(), 64) } as usize;
    use std::mem::{offset_of, size_of};
    let ours = [
        size_of::<GpuVerbsQp>(),
        offset_of!(GpuVerbsQp, sq_rsvd_index),
        offset_of!(GpuVerbsQp, sq_ready_index),
        offset_of!(GpuVerbsQp, sq_wqe_pi),
        offset_of!(GpuVerbsQp, sq_wqe_daddr),
        offset_of!(GpuVerbsQp, sq_dbrec),
        offset_of!(GpuVerbsQp, sq_db),
        offset_of!(GpuVerbsQp, cpu_proxy_db),
        offset_of!(GpuVerbsQp, rq_rsvd_index),
        offset_of!(GpuVerbsQp, rq_wqe_pi),
        offset_of!(GpuVerbsQp, rq_wqe_daddr),
        offset_of!(GpuVerbsQp, rq_dbrec),
        offset_of!(GpuVerbsQp, sq_num),
        offset_of!(GpuVerbsQp, sq_num_shift8),
        offset_of!(GpuVerbsQp, sq_wqe_mask),
        offset_of!(GpuVerbsQp, rq_wqe_mask),
        offset_of!(GpuVerbsQp, rcv_wqe_size),
        offset_of!(GpuVerbsQp, nic_handler),
        offset_of!(GpuVerbsQp, sq_lock),
        offset_of!(GpuVerbsQp, rq_lock),
        offset_of!(GpuVerbsQp, cq_sq),
        offset_of!(GpuVerbsQp, cq_rq),
        size_of::<GpuVerbsCq>(),
        offset_of!(GpuVerbsCq, cqe_daddr),
        offset_of!(GpuVerbsCq, dbrec),
        offset_of!(GpuVerbsCq, cqe_ci),
        offset_of!(GpuVerbsCq, cqe_rsvd),
        offset_of!(GpuVerbsCq, cq_num),
        offset_of!(GpuVerbsCq, cqe_num),
        offset_of!(GpuVerbsCq, cqe_mask),
        offset_of!(GpuVerbsCq, lock),
    ];
    let theirs: Vec<usize> = v[..n].iter().map(|&x| x as usize).collect();
    assert_eq!(theirs, ours, "sizes, then each field's offset");
}

#[test]
#[cfg_attr(no_gxx, ignore = "g++ is not installed")]
fn the_wqes_the_headers_write_are_the_drivers() -> R {
    let lib = harness();
    let prepare: PrepareFn = sym(lib, b"harness_verbs_prepare");
    let dev = mlx5_sim::Device::with_profile("bf3").expect("bf3");
    let ctx = dev.open_devx();
    let pd = Pd::alloc(&ctx)?;
    let uar = UarPage::alloc(&ctx, UarKind::NonCached)?;
    let cqc = CqConfig::new(5);
    let scq = Cq::create(
        &ctx,
        &uar,
        HostQueueMem::alloc(&ctx, cqc.ring_bytes())?,
        &cqc,
    )?;
    let rcq = Cq::create(
        &ctx,
        &uar,
        HostQueueMem::alloc(&ctx, cqc.ring_bytes())?,
        &cqc,
    )?;
    // A QP whose rings this test can read: carved from a buffer it keeps (receive ring first).
    let qpc = QpConfig::new(4, 4);
    let len = qpc.ring_bytes();
    let buf = DmaBuf::new(len + 4096)?;
    let umem = Umem::register(&ctx, &buf, Access::LOCAL_WRITE)?;
    // SAFETY: the buffer is this test's alone; the rings and the record do not overlap.
    let mem = unsafe { HostQueueMem::carve(umem, 0, len, len) }?;
    let mut qp = RcQp::create(&ctx, &pd, &uar, &scq, &rcq, mem, &qpc)?;
    let mr = mlx5_dpa::mem::MemoryRegion::alloc(&ctx, &pd, 4096, Access::LOCAL_WRITE)?;
    let handle = GpuVerbsQp {
        sq_num_shift8: qp.qpn().0 << 8,
        ..Default::default()
    };
    let remote = RemoteAddr {
        addr: 0x1234_5678_9abc_def0,
        rkey: mlx5_dpa::mem::Rkey(0x00ab_cdef),
    };
    let local = mr.sge(64, 8)?;
    let ops: [(i32, SendOp<'_>, usize, u64); 4] = [
        (
            0,
            SendOp::Write {
                sges: &[local],
                remote,
                imm: None,
            },
            48,
            8,
        ),
        (
            1,
            SendOp::Read {
                sges: &[local],
                remote,
            },
            48,
            8,
        ),
        (
            2,
            SendOp::Send {
                sges: &[local],
                imm: None,
            },
            32,
            8,
        ),
        (
            3,
            SendOp::FetchAdd {
                local,
                remote,
                add: 0x0102_0304_0506_0708,
            },
            64,
            0x0102_0304_0506_0708,
        ),
    ];
    let sq_at = qpc.rq_bytes();
    for (i, (kind, op, bytes, val)) in ops.into_iter().enumerate() {
        qp.post_send(&SendWr::new(i as u64, op))?;
        let drivers = buf.to_vec(sq_at + 64 * i, bytes)?;
        let mut theirs = [0u8; 64];
        // SAFETY: `theirs` holds one WQEBB; the function only writes it.
        unsafe {
            prepare(
                &handle,
                kind,
                theirs.as_mut_ptr(),
                i as u16,
                remote.addr,
                remote.rkey.0.to_be(),
                local.addr,
                local.lkey.0.to_be(),
                val,
            )
        };
        assert_eq!(theirs[..bytes].to_vec(), drivers, "WQE kind {kind}");
    }
    Ok(())
}

/// The model, the exported QP, and the two sides' regions (`b` with its queues).
type Pair = (mlx5_sim::Device, WhileKernels<VerbsQp>, Side, Side);

/// A connected pair on one model: `a` exported to the "GPU" with `handler`, `b` host-driven.
fn pair(handler: NicHandler) -> Result<Pair, Box<dyn std::error::Error>> {
    let dev = mlx5_sim::Device::with_profile("bf3").expect("bf3");
    dev.set_port_address([0x02, 0, 0x5e, 0, 0, 1], [10, 0, 0, 1]);
    dev.start_engine();
    let ctx = dev.open_devx();
    let mut a = Side::new(&ctx)?;
    let mut b = Side::new(&ctx)?;
    rdma_rc::connect(&mut a, &mut b, true)?;
    // Swap a's queues for placeholders, so `a` keeps its region for the test.
    let placeholder = Side::new(&ctx)?;
    let qp = std::mem::replace(&mut a.qp, placeholder.qp);
    let send_cq = std::mem::replace(&mut a.send_cq, placeholder.send_cq);
    let recv_cq = std::mem::replace(&mut a.recv_cq, placeholder.recv_cq);
    let v = VerbsQp::export(qp, send_cq, recv_cq, handler)?;
    Ok((dev, WhileKernels::new(v), a, b))
}

/// A thread that waits late for its put finds its CQE consumed by the others: the consumer
/// index passed it, and the NIC has since written another CQE in its slot (a CQ of 64, 70
/// more puts). The wait succeeds at once (issue 31: before, it polled the overwritten slot
/// until its 10 s timeout; with four threads sharing the queue under load, about one run of
/// 150 of `four_threads_put_with_signals_through_the_cpu_proxy` timed out so).
#[test]
#[cfg_attr(no_gxx, ignore = "g++ is not installed")]
fn a_late_waiter_finds_its_completion_consumed_by_others() -> R {
    let lib = harness();
    let put_nowait: PutNowaitFn = sym(lib, b"harness_verbs_put_nowait");
    let put_many: PutManyFn = sym(lib, b"harness_verbs_put_many");
    let wait: WaitFn = sym(lib, b"harness_verbs_wait");
    let (_dev, qp, a, b) = pair(NicHandler::GpuSmDb)?;
    let (handle, laddr, lkey) = (
        qp.handle_addr(),
        a.mr.sge(0, 8)?.addr,
        a.mr.lkey().0.to_be(),
    );
    let (raddr, rkey) = (b.mr.sge(0, 8)?.addr, b.mr.rkey().0.to_be());
    a.mr.write(0, &[0x5a; 64])?;
    // SAFETY: the handle and both regions outlive the calls, which return before them.
    let late = unsafe { put_nowait(handle, raddr, rkey, laddr, lkey, 64) };
    // SAFETY: as above.
    let r = unsafe { put_many(handle, raddr + 4096, rkey, laddr, lkey, 64, 70, 1) };
    assert_eq!(r, DOCA_SUCCESS, "the other puts");
    let start = Instant::now();
    // SAFETY: as above.
    let r = unsafe { wait(handle, late) };
    assert_eq!(r, DOCA_SUCCESS, "the late wait");
    assert!(start.elapsed() < Duration::from_secs(1), "answered at once");
    assert_eq!(
        b.mr.buf().to_vec(0, 64)?,
        vec![0x5a; 64],
        "the late put landed"
    );
    Ok(())
}

type BswapsFn = unsafe extern "C" fn(*mut u64);

/// The public byte-swap helpers (`DOCA_GPUNETIO_ETH_BSWAP16`, `doca_gpu_dev_verbs_bswap16` /
/// `32` / `64`) swap as Rust's `swap_bytes` does.
#[test]
#[cfg_attr(no_gxx, ignore = "g++ is not installed")]
fn the_byte_swap_helpers_swap() {
    let f: BswapsFn = sym(harness(), b"harness_bswaps");
    let mut out = [0u64; 4];
    // SAFETY: `out` holds the 4 words the harness writes.
    unsafe { f(out.as_mut_ptr()) };
    assert_eq!(
        out,
        [
            u64::from(0x1234u16.swap_bytes()),
            u64::from(0x1234u16.swap_bytes()),
            u64::from(0x1234_5678u32.swap_bytes()),
            0x0102_0304_0506_0708u64.swap_bytes(),
        ]
    );
}

type PutStreamFn = unsafe extern "C" fn(u64, u64, u32, u64, u32, u32, u32) -> i32;

/// One thread puts 200 chunks into a ring of 64 and waits only for the last: as NVIDIA's
/// `doca_gpu_dev_verbs_reserve_wq_slots` does, each reservation first waits for its slot's
/// previous WQE to complete (consuming the CQEs), so no WQE in flight is overwritten and the
/// CQ never overruns. Before, the 65th put overwrote the first while the NIC could still read
/// it, and the unconsumed CQ overran.
#[test]
#[cfg_attr(no_gxx, ignore = "g++ is not installed")]
fn puts_past_the_ring_wait_for_their_slots() -> R {
    let lib = harness();
    let stream: PutStreamFn = sym(lib, b"harness_verbs_put_stream");
    const N: usize = 200;
    const SIZE: usize = 256;
    let (_dev, qp, a, b) = pair(NicHandler::GpuSmDb)?;
    let data: Vec<u8> = (0..N * SIZE).map(|i| (i * 7 + i / 251) as u8).collect();
    a.mr.write(0, &data)?;
    // SAFETY: the handle and both regions outlive the call, which returns before them.
    let r = unsafe {
        stream(
            qp.handle_addr(),
            b.mr.sge(0, 8)?.addr,
            b.mr.rkey().0.to_be(),
            a.mr.sge(0, 8)?.addr,
            a.mr.lkey().0.to_be(),
            SIZE as u32,
            N as u32,
        )
    };
    assert_eq!(r, DOCA_SUCCESS, "the last put's completion");
    assert_eq!(b.mr.buf().to_vec(0, N * SIZE)?, data, "every chunk");
    assert_eq!(qp.producer_index(), N as u64);
    Ok(())
}

/// The same 200 puts through a QP whose send CQ is collapsed (PRM `cc`: one entry, rewritten
/// by every completion, never overrun), as NVIDIA's latency samples create it: the slot waits
/// and the last wait read the entry's `wqe_counter`. Before the model took `cc`, CREATE_CQ
/// refused it.
#[test]
#[cfg_attr(no_gxx, ignore = "g++ is not installed")]
fn puts_complete_through_a_collapsed_send_cq() -> R {
    let lib = harness();
    let stream: PutStreamFn = sym(lib, b"harness_verbs_put_stream");
    const N: usize = 200;
    const SIZE: usize = 128;
    let (_dev, ctx) = crate::gpu_rdma::device();
    let (a, b) = (
        crate::gpu_rdma::end_with(&ctx, 6, true)?,
        crate::gpu_rdma::end_with(&ctx, 6, false)?,
    );
    let (pa, pb) = (std::sync::Arc::clone(&a.pd), std::sync::Arc::clone(&b.pd));
    let (qa, qb) = crate::gpu_rdma::connect(a, b)?;
    let access = mlx5_dpa::mem::Access::LOCAL_WRITE | mlx5_dpa::mem::Access::REMOTE_WRITE;
    let src = mlx5_dpa::mem::MemoryRegion::alloc(&ctx, &pa, N * SIZE, access)?;
    let dst = mlx5_dpa::mem::MemoryRegion::alloc(&ctx, &pb, N * SIZE, access)?;
    let data: Vec<u8> = (0..N * SIZE).map(|i| (i * 5 + i / 253) as u8).collect();
    src.write(0, &data)?;
    let q = WhileKernels::new((qa, qb, src, dst));
    // SAFETY: the handle and both regions outlive the call, which returns before them.
    let r = unsafe {
        stream(
            q.0.handle_addr(),
            q.3.addr(),
            q.3.rkey().0.to_be(),
            q.2.addr(),
            q.2.lkey().0.to_be(),
            SIZE as u32,
            N as u32,
        )
    };
    assert_eq!(r, DOCA_SUCCESS, "the last put's completion");
    assert_eq!(q.3.buf().to_vec(0, N * SIZE)?, data, "every chunk");
    Ok(())
}

/// `threads` "kernel" threads put 64 chunks of 256 bytes from `a`'s region into `b`'s, each
/// with a signal (+1) on `b`'s counter; `b`'s bytes and counter are checked.
fn put_with_signals(handler: NicHandler, threads: u32) -> R {
    let lib = harness();
    let put: PutSignalFn = sym(lib, b"harness_verbs_put_signal");
    let (_dev, mut qp, a, b) = pair(handler)?;
    let data: Vec<u8> = (0..CHUNK * CHUNKS)
        .map(|i| (i * 7 + i / 251) as u8)
        .collect();
    a.mr.write(0, &data)?;
    b.mr.write(SIGNAL_AT, &0u64.to_ne_bytes())?;
    let (handle, laddr, lkey) = (
        qp.handle_addr(),
        a.mr.sge(0, 8)?.addr,
        a.mr.lkey().0.to_be(),
    );
    let (raddr, rkey) = (b.mr.sge(0, 8)?.addr, b.mr.rkey().0.to_be());
    let sig = raddr + SIGNAL_AT as u64;
    // Fetched old values land in `a`'s region, 8 bytes per thread, after the data.
    let sink = laddr + (CHUNK * CHUNKS) as u64;
    let workers: Vec<_> = (0..threads)
        .map(|t| {
            qp.spawn(move || {
                // SAFETY: the handle and both regions outlive the threads (joined below, or
                // kept by `WhileKernels` if the test fails first).
                unsafe {
                    put(
                        handle,
                        raddr,
                        rkey,
                        laddr,
                        lkey,
                        CHUNK as u32,
                        t,
                        threads,
                        CHUNKS as u32,
                        sig,
                        sink,
                        lkey,
                    )
                }
            })
        })
        .collect();
    let start = Instant::now();
    let mut rang = 0;
    while !workers.iter().all(|w| w.is_finished()) {
        rang += usize::from(qp.cpu_proxy_progress());
        assert!(start.elapsed() < WAIT, "the put kernels did not finish");
        std::thread::yield_now();
    }
    for w in workers {
        assert_eq!(w.join().expect("put kernel"), DOCA_SUCCESS);
    }
    match handler {
        NicHandler::CpuProxy => assert!(rang > 0),
        NicHandler::GpuSmDb => assert_eq!(rang, 0),
    }
    assert_eq!(
        qp.producer_index(),
        2 * CHUNKS as u64,
        "a write and an atomic per chunk"
    );
    assert_eq!(b.mr.buf().to_vec(0, data.len())?, data, "the peer's bytes");
    let counter = u64::from_ne_bytes(
        b.mr.buf()
            .to_vec(SIGNAL_AT, 8)?
            .try_into()
            .map_err(|_| "8")?,
    );
    assert_eq!(counter, CHUNKS as u64, "one signal per put");
    Ok(())
}

#[test]
#[cfg_attr(no_gxx, ignore = "g++ is not installed")]
fn four_threads_put_with_signals_through_the_cpu_proxy() -> R {
    put_with_signals(NicHandler::CpuProxy, 4)
}

#[test]
#[cfg_attr(no_gxx, ignore = "g++ is not installed")]
fn a_thread_puts_with_signals_ringing_the_doorbell_itself() -> R {
    put_with_signals(NicHandler::GpuSmDb, 1)
}

#[test]
#[cfg_attr(no_gxx, ignore = "g++ is not installed")]
fn get_send_and_receive_between_the_kernel_and_the_host() -> R {
    let lib = harness();
    let get: GetFn = sym(lib, b"harness_verbs_get");
    let send: SendFn = sym(lib, b"harness_verbs_send");
    let recv: RecvFn = sym(lib, b"harness_verbs_recv");
    let (_dev, qp, a, mut b) = pair(NicHandler::GpuSmDb)?;
    let (handle, lkey, rkey) = (
        qp.handle_addr(),
        a.mr.lkey().0.to_be(),
        b.mr.rkey().0.to_be(),
    );
    let (la, ra) = (a.mr.sge(0, 8)?.addr, b.mr.sge(0, 8)?.addr);

    // get: b's 3000 bytes at 8 KiB into a at 0.
    let theirs: Vec<u8> = (0..3000).map(|i| (i % 253) as u8 ^ 0x5a).collect();
    b.mr.write(8192, &theirs)?;
    // SAFETY: the handle and regions are live; the harness waits for the completion.
    let r = unsafe { get(handle, ra + 8192, rkey, la, lkey, 3000) };
    assert_eq!(r, DOCA_SUCCESS);
    assert_eq!(a.mr.buf().to_vec(0, 3000)?, theirs, "read from the peer");

    // send: the host posts a receive on b first; the kernel sends 1000 bytes from a at 4 KiB.
    let msg: Vec<u8> = (0..1000).map(|i| (i * 3) as u8).collect();
    a.mr.write(4096, &msg)?;
    b.qp.post_recv(&[b.mr.sge(16384, 2048)?], 7)?;
    b.qp.ring_recv_doorbell();
    // SAFETY: as above.
    let r = unsafe { send(handle, la + 4096, lkey, 1000) };
    assert_eq!(r, DOCA_SUCCESS);
    let c = b.recv_cq.poll_timeout(WAIT)??;
    b.qp.complete_recv(c.wqe_counter)?;
    assert_eq!(c.byte_len, 1000);
    assert_eq!(b.mr.buf().to_vec(16384, 1000)?, msg, "sent to the host");

    // receive: the kernel posts a receive and waits; the host sends 777 bytes.
    let back: Vec<u8> = (0..777).map(|i| (i * 11 + 1) as u8).collect();
    b.mr.write(20480, &back)?;
    let mut got = 0u32;
    let got_ptr = &mut got as *mut u32 as usize;
    let receiver = qp.spawn(move || {
        // SAFETY: as above; `got` outlives the thread (joined below).
        unsafe { recv(handle, la + 32768, lkey, 2048, got_ptr as *mut u32) }
    });
    // The receive is posted before the send goes: wait for the kernel's receive counter.
    // (The kernel's receive counter, `rq_wqe_pi` of the handle.)
    let start = Instant::now();
    while u64::from_le_bytes(qp.page().to_vec(64, 8)?.try_into().map_err(|_| "8")?) == 0 {
        assert!(start.elapsed() < WAIT, "the kernel posted no receive");
        std::thread::yield_now();
    }
    b.qp.post_send(&SendWr::new(
        9,
        SendOp::Send {
            sges: &[b.mr.sge(20480, 777)?],
            imm: None,
        },
    ))?;
    b.qp.ring_send_doorbell();
    let c = b.send_cq.poll_timeout(WAIT)??;
    b.qp.complete_send(c.wqe_counter)?;
    assert_eq!(receiver.join().expect("receiver"), DOCA_SUCCESS);
    assert_eq!(got, 777);
    assert_eq!(
        a.mr.buf().to_vec(32768, 777)?,
        back,
        "received from the host"
    );
    Ok(())
}

type LowlevelWriteFn = unsafe extern "C" fn(u64, u64, u32, u64, u32, u32, u32, i32, i32) -> i32;

/// NVIDIA's public low-level Verbs calls, as the write_bw / write_lat example kernels use them
/// (`atomic_read` of the producer index, `get_wqe_ptr`, the 11-argument `wqe_prepare_write`,
/// `submit` with a code option or `submit_bf`, `poll_cq_at` on `qp_get_cq_sq` or
/// `poll_cq_collapsed_at`), run on a CPU thread against the model: 16 writes land byte for
/// byte in the peer's region, with each submit form and each poll.
#[test]
#[cfg_attr(no_gxx, ignore = "g++ is not installed")]
fn the_public_low_level_calls_write_to_the_peer() -> R {
    let lib = harness();
    let write: LowlevelWriteFn = sym(lib, b"harness_verbs_lowlevel_write");
    const N: usize = 16;
    const SIZE: usize = 128;
    let (_dev, qp, a, b) = pair(NicHandler::GpuSmDb)?;
    let (handle, laddr, lkey) = (
        qp.handle_addr(),
        a.mr.sge(0, 8)?.addr,
        a.mr.lkey().0.to_be(),
    );
    let (raddr, rkey) = (b.mr.sge(0, 8)?.addr, b.mr.rkey().0.to_be());
    for (round, (bf, collapsed)) in [(0, 0), (1, 1)].into_iter().enumerate() {
        let data: Vec<u8> = (0..N * SIZE)
            .map(|i| (i * 13 + round * 101 + 7) as u8)
            .collect();
        a.mr.write(0, &data)?;
        // SAFETY: the handle and both regions outlive the call, which returns before them.
        let r = unsafe {
            write(
                handle,
                raddr,
                rkey,
                laddr,
                lkey,
                SIZE as u32,
                N as u32,
                bf,
                collapsed,
            )
        };
        assert_eq!(r, 0, "round {round}: the last write's CQE");
        assert_eq!(
            b.mr.buf().to_vec(0, data.len())?,
            data,
            "round {round}: the peer's bytes"
        );
    }
    assert_eq!(qp.producer_index(), 2 * N as u64);
    Ok(())
}
