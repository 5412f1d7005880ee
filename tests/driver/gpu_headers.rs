//! The GPUNetIO headers (`src/gpu/include`), built as host C++ with g++ and run on CPU threads
//! against the device model:
//! - send: the handle's layout is `GpuEthTxq`'s, a WQE they write is `EthSq::post_send`'s byte
//!   for byte, and frames sent through an exported queue (shared by several threads, doorbells
//!   rung by the CPU proxy or by the "kernel" itself) arrive byte for byte at an RQ;
//! - receive and semaphores: frames the host sends arrive in an exported RQ's strides, a
//!   receive "kernel" tells the CPU through a semaphore, and the strides are used again.
//!
//! Without g++ the tests say so and pass without checking.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mlx5_dpa::gpu::{
    EthRxq, EthTxq, GpuError, GpuEthRxq, GpuEthTxq, GpuSemaphore, NicHandler, Semaphore,
    SemaphoreStatus,
};
use mlx5_dpa::mem::{Access, DmaBuf, Umem};
use mlx5_dpa::queues::wq::ETH_MIN_INLINE;
use mlx5_dpa::queues::{CompletionKind, EthSq, EthSqConfig, HostQueueMem, QueueError};

use crate::common;
use crate::gpu;
use gpu::{harness, sym, WhileKernels, DOCA_ERROR_AGAIN, DOCA_ERROR_INVALID_VALUE, DOCA_SUCCESS};

const SLOT: usize = 2048;
const WAIT: Duration = Duration::from_secs(30);

type LayoutFn = unsafe extern "C" fn(*mut u64, i32) -> i32;
type PrepareFn = unsafe extern "C" fn(*const GpuEthTxq, *mut u8, u16, u64, u32, u32, i32) -> i32;
type SendFn = unsafe extern "C" fn(u64, u64, u32, u32, *const u32, u32, u32, u32) -> i32;
type PollNbFn = unsafe extern "C" fn(u64) -> i32;

fn frame(mac: [u8; 6], i: usize, len: usize) -> Vec<u8> {
    let mut f = Vec::with_capacity(len);
    f.extend_from_slice(&mac);
    f.extend_from_slice(&[0x02, 0, 0, 0, 0, 0x66]);
    f.extend_from_slice(&0x88b5u16.to_be_bytes());
    f.extend_from_slice(&(i as u32).to_be_bytes());
    while f.len() < len {
        f.push((f.len() * 5 + i * 11) as u8);
    }
    f
}

#[test]
#[cfg_attr(no_gxx, ignore = "g++ is not installed")]
fn the_handle_layout_is_the_headers() {
    let lib = harness();
    let layout: LayoutFn = sym(lib, b"harness_layout");
    let mut v = [0u64; 32];
    // SAFETY: `v` holds 32 entries and the harness writes at most that many.
    let n = unsafe { layout(v.as_mut_ptr(), 32) } as usize;
    use std::mem::{offset_of, size_of};
    let ours = [
        size_of::<GpuEthTxq>(),
        offset_of!(GpuEthTxq, wqe_addr),
        offset_of!(GpuEthTxq, wqe_db_rec),
        offset_of!(GpuEthTxq, wqe_db),
        offset_of!(GpuEthTxq, cpu_proxy_db),
        offset_of!(GpuEthTxq, cqe_addr),
        offset_of!(GpuEthTxq, cq_db_rec),
        offset_of!(GpuEthTxq, sq_rsvd_index),
        offset_of!(GpuEthTxq, sq_ready_index),
        offset_of!(GpuEthTxq, wqe_pi),
        offset_of!(GpuEthTxq, cqe_ci),
        offset_of!(GpuEthTxq, cq_rsvd_index),
        offset_of!(GpuEthTxq, sq_num_shift8),
        offset_of!(GpuEthTxq, wqe_mask),
        offset_of!(GpuEthTxq, cqe_num),
        offset_of!(GpuEthTxq, cqe_mask),
        offset_of!(GpuEthTxq, nic_handler),
        offset_of!(GpuEthTxq, lock),
        offset_of!(GpuEthTxq, cq_lock),
        offset_of!(GpuEthTxq, reserved),
    ];
    let theirs: Vec<usize> = v[..n].iter().map(|&x| x as usize).collect();
    assert_eq!(theirs, ours, "size, then each field's offset");
}

#[test]
#[cfg_attr(no_gxx, ignore = "g++ is not installed")]
fn a_wqe_the_headers_write_is_the_drivers() -> Result<(), QueueError> {
    let lib = harness();
    let prepare: PrepareFn = sym(lib, b"harness_prepare");
    let e = common::eth(6, 6, 5, 1, SLOT)?;
    // A driver SQ whose ring this test can read: carved from a buffer it keeps.
    let cfg = EthSqConfig {
        log_size: 4,
        signal_every: 1,
    };
    let ring_len = cfg.ring_bytes();
    let buf = DmaBuf::new(ring_len + 4096)?;
    let umem = Umem::register(&e.ctx, &buf, Access::LOCAL_WRITE)?;
    // SAFETY: the buffer is this test's alone; the ring and the record do not overlap.
    let mem = unsafe { HostQueueMem::carve(umem, 0, ring_len, ring_len) }?;
    let mut sq = EthSq::create(&e.ctx, &e.pd, &e.uar, &e.tis, &e.tx_cq, mem, &cfg)?;
    let handle = GpuEthTxq {
        sq_num_shift8: sq.sqn().0 << 8,
        ..Default::default()
    };
    for (i, len) in [60usize, 61, 1514].into_iter().enumerate() {
        let f = frame(e.mac, i, len);
        e.tx.write(i * SLOT, &f)?;
        let rest = e.tx.sge(i * SLOT + ETH_MIN_INLINE, len - ETH_MIN_INLINE)?;
        sq.post_send(&f[..ETH_MIN_INLINE], &[rest], i as u64)?;
        let drivers = buf.to_vec(i * 64, 64)?;
        let mut theirs = [0u8; 64];
        let addr = e.tx.sge(i * SLOT, len)?.addr;
        // SAFETY: `theirs` holds one WQEBB; `addr` is the frame's address in `e.tx`, whose
        // first 18 bytes the function reads.
        let r = unsafe {
            prepare(
                &handle,
                theirs.as_mut_ptr(),
                i as u16,
                addr,
                e.tx.lkey().0.to_be(),
                len as u32,
                1,
            )
        };
        assert_eq!(r, DOCA_SUCCESS);
        assert_eq!(theirs.to_vec(), drivers, "WQE {i} ({len} bytes)");
    }
    // Shorter than the inline L2 header: refused, nothing written.
    let mut w = [0xeeu8; 64];
    // SAFETY: as above; the function returns before reading the frame.
    let r = unsafe { prepare(&handle, w.as_mut_ptr(), 0, 0, 0, 10, 1) };
    assert_eq!(r, DOCA_ERROR_INVALID_VALUE);
    assert_eq!(w, [0xee; 64]);
    Ok(())
}

/// Sends `n` frames of varied sizes through an exported SQ from `threads` CPU threads running
/// the header's shared-queue send, with `handler` ringing; checks every frame arrives.
fn send_through(
    handler: NicHandler,
    threads: u32,
    n: usize,
) -> Result<(), Box<dyn std::error::Error>> {
    let lib = harness();
    let send: SendFn = sym(lib, b"harness_send");
    let poll_nb: PollNbFn = sym(lib, b"harness_poll_nb");
    let mut e = common::eth(9, 9, 9, 1, SLOT)?;
    e.dev.start_engine();
    for i in 0..n {
        let sge = e.rx.sge(i * SLOT, SLOT)?;
        e.rq.post_recv(&[sge], i as u64)?;
    }
    e.rq.ring_doorbell();
    let lens: Vec<u32> = (0..n).map(|i| 60 + ((i * 389) % 1455) as u32).collect();
    let mut sent = Vec::new();
    for (i, &len) in lens.iter().enumerate() {
        let f = frame(e.mac, i, len as usize);
        e.tx.write(i * SLOT, &f)?;
        sent.push(f);
    }
    let common::Eth {
        dev,
        sq,
        tx_cq,
        mut rq,
        mut rx_cq,
        tx,
        rx,
        ..
    } = e;
    let mut txq = WhileKernels::new(EthTxq::export(sq, tx_cq, handler)?);
    let handle = txq.handle_addr();
    // Nothing sent yet: a non-blocking poll finds nothing.
    // SAFETY: `handle` is the live handle of `txq`.
    assert_eq!(unsafe { poll_nb(handle) }, DOCA_ERROR_AGAIN);
    let base = tx.sge(0, SLOT)?.addr;
    let mkey = tx.lkey().0.to_be();
    let lens = Arc::new(lens);
    let done = Arc::new(AtomicBool::new(false));
    let workers: Vec<_> = (0..threads)
        .map(|t| {
            let lens = Arc::clone(&lens);
            txq.spawn(move || {
                // SAFETY: the handle, the frames (`base + i * SLOT`, `lens[i]` bytes) and
                // `lens` outlive the threads (joined below); the harness reads `n` lengths.
                unsafe {
                    send(
                        handle,
                        base,
                        mkey,
                        SLOT as u32,
                        lens.as_ptr(),
                        t,
                        threads,
                        lens.len() as u32,
                    )
                }
            })
        })
        .collect();
    // The CPU proxy, while the "kernels" run (it has nothing to do for GPU_SM_DB).
    let mut rang = 0;
    let start = Instant::now();
    while !workers.iter().all(|w| w.is_finished()) {
        rang += usize::from(txq.cpu_proxy_progress());
        assert!(start.elapsed() < WAIT, "the senders did not finish");
        std::thread::yield_now();
    }
    done.store(true, Ordering::Release);
    for w in workers {
        assert_eq!(w.join().expect("sender"), DOCA_SUCCESS, "a sender failed");
    }
    assert_eq!(txq.producer_index(), n as u64, "every WQE submitted");
    match handler {
        NicHandler::CpuProxy => assert!(rang > 0, "the proxy rang"),
        NicHandler::GpuSmDb => assert_eq!(rang, 0, "nothing for the proxy"),
    }
    // Every frame at the receive queue, byte for byte (threads interleave: by index).
    let mut seen = vec![false; n];
    let start = Instant::now();
    let mut got = 0;
    while got < n {
        assert!(start.elapsed() < WAIT, "{got} of {n} frames arrived");
        let Some(c) = rx_cq.poll() else {
            std::thread::yield_now();
            continue;
        };
        let c = c.expect("receive completion");
        assert_eq!(c.kind, CompletionKind::Recv);
        let slot = rq.complete(c.wqe_counter)? as usize;
        let mut b = vec![0u8; c.byte_len as usize];
        rx.read(slot * SLOT, &mut b)?;
        let i = u32::from_be_bytes([b[14], b[15], b[16], b[17]]) as usize;
        assert!(i < n && !seen[i], "frame {i} once");
        assert_eq!(b, sent[i], "frame {i}");
        seen[i] = true;
        got += 1;
    }
    drop(txq);
    drop(dev);
    Ok(())
}

#[test]
#[cfg_attr(no_gxx, ignore = "g++ is not installed")]
fn four_threads_share_a_queue_rung_by_the_cpu_proxy() -> Result<(), Box<dyn std::error::Error>> {
    send_through(NicHandler::CpuProxy, 4, 256)
}

#[test]
#[cfg_attr(no_gxx, ignore = "g++ is not installed")]
fn the_kernel_rings_the_doorbell_itself() -> Result<(), Box<dyn std::error::Error>> {
    send_through(NicHandler::GpuSmDb, 2, 128)
}

#[test]
#[cfg_attr(no_gxx, ignore = "g++ is not installed")]
fn export_refuses_a_foreign_cq_and_outstanding_work() -> Result<(), QueueError> {
    let e = common::eth(5, 5, 4, 1, SLOT)?;
    let common::Eth {
        sq, tx_cq, rx_cq, ..
    } = e;
    // Completions of this SQ go to tx_cq: another CQ is refused, and the queues come back.
    let back = EthTxq::export(sq, rx_cq, NicHandler::CpuProxy).expect_err("a foreign CQ");
    assert!(
        matches!(&back.error, GpuError::Unsuitable(m) if m.contains("not the SQ's")),
        "{back}"
    );
    let mut sq = back.sq;
    // Work outstanding on the SQ: refused too.
    sq.post_nop(1, true)?;
    let back = EthTxq::export(sq, tx_cq, NicHandler::CpuProxy).expect_err("outstanding work");
    assert!(
        matches!(&back.error, GpuError::Unsuitable(m) if m.contains("outstanding")),
        "{back}"
    );
    Ok(())
}

type RecvFn = unsafe extern "C" fn(u64, u32, u64, *mut u64, *mut u32, *mut u32) -> i32;
type RxKernelFn = unsafe extern "C" fn(u64, u64, u64, u32, u64) -> i32;

#[test]
#[cfg_attr(no_gxx, ignore = "g++ is not installed")]
fn the_receive_and_semaphore_layouts_are_the_headers() {
    let lib = harness();
    let layout: LayoutFn = sym(lib, b"harness_rx_layout");
    let mut v = [0u64; 32];
    // SAFETY: `v` holds 32 entries and the harness writes at most that many.
    let n = unsafe { layout(v.as_mut_ptr(), 32) } as usize;
    use std::mem::{offset_of, size_of};
    let ours = [
        size_of::<GpuEthRxq>(),
        offset_of!(GpuEthRxq, pkt_addr),
        offset_of!(GpuEthRxq, pkt_num),
        offset_of!(GpuEthRxq, max_pkt_sz),
        offset_of!(GpuEthRxq, wqe_db_rec),
        offset_of!(GpuEthRxq, wqe_pi),
        offset_of!(GpuEthRxq, cqe_addr),
        offset_of!(GpuEthRxq, cq_db_rec),
        offset_of!(GpuEthRxq, cqe_ci),
        offset_of!(GpuEthRxq, cqe_num),
        offset_of!(GpuEthRxq, cqe_mask),
        offset_of!(GpuEthRxq, pkt_mkey),
        offset_of!(GpuEthRxq, reserved),
        offset_of!(GpuEthRxq, bufs),
        size_of::<GpuSemaphore>(),
        offset_of!(GpuSemaphore, items),
        offset_of!(GpuSemaphore, custom_info),
        offset_of!(GpuSemaphore, num_items),
        offset_of!(GpuSemaphore, custom_info_size),
        16,
    ];
    let theirs: Vec<usize> = v[..n].iter().map(|&x| x as usize).collect();
    assert_eq!(theirs, ours, "sizes, then each field's offset");
}

/// Sends frames `range` of `sent` through the host's own SQ (the model loops them back to its
/// MAC, into the exported RQ), and waits for their send completions.
fn host_send(
    sq: &mut EthSq,
    cq: &mut mlx5_dpa::queues::Cq,
    tx: &mlx5_dpa::mem::MemoryRegion,
    sent: &[Vec<u8>],
    range: std::ops::Range<usize>,
) -> Result<(), QueueError> {
    for i in range.clone() {
        let at = (i % 64) * SLOT;
        tx.write(at, &sent[i])?;
        let rest = tx.sge(at + ETH_MIN_INLINE, sent[i].len() - ETH_MIN_INLINE)?;
        sq.post_send(&sent[i][..ETH_MIN_INLINE], &[rest], i as u64)?;
    }
    sq.ring_doorbell();
    let start = Instant::now();
    let mut done = 0;
    while done < range.len() {
        assert!(start.elapsed() < WAIT, "send completions");
        match cq.poll() {
            Some(c) => {
                sq.complete(&c.expect("send"))?;
                done += 1;
            }
            None => std::thread::yield_now(),
        }
    }
    Ok(())
}

#[test]
#[cfg_attr(no_gxx, ignore = "g++ is not installed")]
fn a_receive_kernel_tells_the_cpu_through_a_semaphore() -> Result<(), Box<dyn std::error::Error>> {
    let lib = harness();
    let recv: RecvFn = sym(lib, b"harness_recv");
    let rx_kernel: RxKernelFn = sym(lib, b"harness_rx_kernel");
    // An RQ of 64 strides of 2 KiB; 200 frames go through it, so every stride is used again.
    let e = common::eth(8, 8, 6, 1, SLOT)?;
    e.dev.start_engine();
    let common::Eth {
        dev,
        mut sq,
        mut tx_cq,
        rq,
        rx_cq,
        tx,
        rx,
        mac,
        _flow,
        ..
    } = e;
    let rxq = WhileKernels::new((EthRxq::export(rq, rx_cq, rx, SLOT)?, Semaphore::new(8, 16)?));
    let (rxq_ref, sem) = (&rxq.0, &rxq.1);
    assert_eq!(rxq_ref.strides(), (64, SLOT));
    let handle = rxq_ref.handle_addr();
    // Nothing sent: a receive with a 1 ms timeout returns no packets.
    let (mut first, mut num, mut bytes) = (u64::MAX, u32::MAX, [0u32; 256]);
    // SAFETY: `handle` is the live handle of `rxq`; the outputs are this frame's.
    let r = unsafe {
        recv(
            handle,
            8,
            1_000_000,
            &mut first,
            &mut num,
            bytes.as_mut_ptr(),
        )
    };
    assert_eq!((r, first, num), (DOCA_SUCCESS, 0, 0));

    let n = 200usize;
    let sent: Vec<Vec<u8>> = (0..n)
        .map(|i| frame(mac, i, 60 + (i * 331) % 1455))
        .collect();
    let sem_handle = sem.handle_addr();
    let kernel = rxq.spawn(move || {
        // SAFETY: the handles outlive the thread (joined below).
        unsafe { rx_kernel(handle, sem_handle, n as u64, 16, 200_000) }
    });
    // Batches of 32: the next goes out once the CPU has read the semaphore items of this one,
    // so strides are reused only after their packets were checked.
    let mut idx = 0u32;
    let mut next = 0usize;
    while next < n {
        let end = (next + 32).min(n);
        host_send(&mut sq, &mut tx_cq, &tx, &sent, next..end)?;
        let start = Instant::now();
        let mut seen = next;
        while seen < end {
            assert!(start.elapsed() < WAIT, "packets {seen}..{end} not reported");
            if sem.status(idx)? != SemaphoreStatus::Ready {
                std::thread::yield_now();
                continue;
            }
            let (count, first) = sem.packet_info(idx)?;
            assert_eq!(
                first as usize, seen,
                "item {idx} starts where the last ended"
            );
            let info = sem.custom_info(idx)?;
            assert_eq!(u32::from_le_bytes(info[..4].try_into()?), count);
            let mut sum = 0u64;
            for k in first..first + u64::from(count) {
                let f = &sent[k as usize];
                let stride = (k % 64) as usize;
                let got = rxq_ref.packets().buf().to_vec(stride * SLOT, f.len())?;
                assert_eq!(&got, f, "packet {k} in stride {stride}");
                sum += f.iter().map(|&b| u64::from(b)).sum::<u64>();
            }
            assert_eq!(
                u64::from_le_bytes(info[8..16].try_into()?),
                sum,
                "item {idx}'s byte sum"
            );
            sem.set_status(idx, SemaphoreStatus::Free)?;
            seen += count as usize;
            idx = (idx + 1) % sem.len();
        }
        next = end;
    }
    assert_eq!(kernel.join().expect("kernel"), DOCA_SUCCESS);
    assert_eq!(rxq_ref.received(), n as u64);
    assert_eq!(
        dev.stats().port.rx_no_buffer,
        0,
        "every frame found a stride"
    );
    drop(rxq);
    Ok(())
}

#[test]
#[cfg_attr(no_gxx, ignore = "g++ is not installed")]
fn rx_export_refuses_what_does_not_fit() -> Result<(), QueueError> {
    let e = common::eth(5, 5, 4, 1, SLOT)?;
    let common::Eth {
        rq,
        tx_cq,
        rx_cq,
        rx,
        ..
    } = e;
    // The SQ's CQ, not the RQ's.
    let back = EthRxq::export(rq, tx_cq, rx, SLOT).expect_err("a foreign CQ");
    assert!(matches!(&back.error, GpuError::Unsuitable(_)), "{back}");
    // Strides larger than the buffer allows.
    let back = EthRxq::export(back.rq, rx_cq, back.pkts, 4 * SLOT).expect_err("too big");
    assert!(
        matches!(&back.error, GpuError::Unsuitable(m) if m.contains("do not fit")),
        "{back}"
    );
    Ok(())
}

/// Compiles `src` as CUDA device code with clang's CUDA front end (syntax only) against the
/// headers and the CUDA stand-in of tests/gpu/standin; the compiler's output on failure.
fn clang_cuda(src: &std::path::Path) -> Result<(), String> {
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let o = std::process::Command::new("clang++")
        .args([
            "-x",
            "cuda",
            "--cuda-gpu-arch=sm_80",
            "--cuda-device-only",
            "-nocudainc",
            "-nocudalib",
            "-fsyntax-only",
            "-std=c++17",
            "-Werror",
            "-include",
            "cuda_runtime.h",
        ])
        .arg("-I")
        .arg(root.join("tests/gpu/standin"))
        .arg("-I")
        .arg(root.join("src/gpu/include"))
        .arg(src)
        .output()
        .map_err(|e| format!("clang++ did not run: {e}"))?;
    if o.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&o.stderr).into_owned())
    }
}

/// Every kernel of ours (the GPU demos' and tests/gpu/corpus) is valid CUDA device code for
/// the headers, as clang's CUDA front end reads it (nvcc is not here; NVRTC compiles them on a
/// GPU). `verbs_twosided.cu` reads `DOCA_GPUNETIO_VOLATILE(*p)`, which the `decltype` form of
/// the macro made ill-formed (a pointer to a reference).
#[test]
#[cfg_attr(no_clangxx, ignore = "clang++ is not installed")]
fn our_kernels_are_cuda_device_code() {
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut kernels = Vec::new();
    for dir in ["examples/gpunetio_kernels", "tests/gpu/corpus"] {
        for e in std::fs::read_dir(root.join(dir)).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "cu") {
                kernels.push(p);
            }
        }
    }
    kernels.sort();
    assert!(kernels.len() >= 4, "{kernels:?}");
    let failed: Vec<String> = kernels
        .iter()
        .filter_map(|k| {
            clang_cuda(k)
                .err()
                .map(|e| format!("{}:\n{e}", k.display()))
        })
        .collect();
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

/// `DOCA_GPUNETIO_VOLATILE` takes any lvalue, `*p` and `a[i]` included, in the host build as in
/// device code (g++ rejected the `decltype` form too).
#[test]
#[cfg_attr(no_gxx, ignore = "g++ is not installed")]
fn the_volatile_macro_takes_any_lvalue() {
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let dir = std::env::temp_dir().join(format!("mlx5-dpa-volatile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("volatile.cpp");
    std::fs::write(
        &src,
        "#include \"doca_gpunetio_dev_eth_common.cuh\"\n\
         int f(const unsigned char *p, unsigned char *a, int i) {\n\
         a[i] = DOCA_GPUNETIO_VOLATILE(*p);\n\
         DOCA_GPUNETIO_VOLATILE(a[i + 1]) = 7;\n\
         return DOCA_GPUNETIO_VOLATILE(a[i]);\n}\n",
    )
    .unwrap();
    let o = std::process::Command::new("g++")
        .args(["-std=c++17", "-fsyntax-only", "-Wall", "-Werror", "-I"])
        .arg(root.join("src/gpu/include"))
        .arg(&src)
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

type RecvV2Fn = unsafe extern "C" fn(u64, u32, *mut u64, *mut u64, *mut u32) -> i32;
type SendV2Fn = unsafe extern "C" fn(u64, u64, *const u32, u32, i32) -> i32;

/// DOCA 2.x's receive on a CPU thread against the model: the host sends 40 frames into an
/// exported RQ of 64 strides; `doca_gpu_dev_eth_rxq_receive_thread` gives the first buffer's
/// index, and each packet's buffer (`get_buf`, `doca_gpu_dev_buf_get_addr`) is its stride,
/// holding the frame byte for byte, with the length the receive recorded (`get_buf_bytes`).
#[test]
#[cfg_attr(no_gxx, ignore = "g++ is not installed")]
fn the_2x_receive_gives_each_packets_buffer_and_length() -> Result<(), Box<dyn std::error::Error>> {
    let lib = harness();
    let recv: RecvV2Fn = sym(lib, b"harness_recv_v2");
    let e = common::eth(8, 8, 6, 1, SLOT)?;
    e.dev.start_engine();
    let common::Eth {
        dev,
        mut sq,
        mut tx_cq,
        rq,
        rx_cq,
        tx,
        rx,
        mac,
        _flow,
        ..
    } = e;
    let rxq = WhileKernels::new(EthRxq::export(rq, rx_cq, rx, SLOT)?);
    let handle = rxq.handle_addr();
    let n = 40usize;
    let sent: Vec<Vec<u8>> = (0..n)
        .map(|i| frame(mac, i, 64 + (i * 97) % 1400))
        .collect();
    host_send(&mut sq, &mut tx_cq, &tx, &sent, 0..n)?;
    let (mut first, mut addrs, mut lens) = (u64::MAX, vec![0u64; n], vec![0u32; n]);
    // SAFETY: `handle` is the live handle of `rxq`; the outputs hold `n` entries each.
    let r = unsafe {
        recv(
            handle,
            n as u32,
            &mut first,
            addrs.as_mut_ptr(),
            lens.as_mut_ptr(),
        )
    };
    assert_eq!(r, DOCA_SUCCESS);
    assert_eq!(first, 0);
    let pkts = rxq.packets();
    for (i, f) in sent.iter().enumerate() {
        assert_eq!(
            addrs[i],
            pkts.sge(i * SLOT, SLOT)?.addr,
            "packet {i}'s buffer"
        );
        assert_eq!(lens[i] as usize, f.len(), "packet {i}'s length");
        assert_eq!(&pkts.buf().to_vec(i * SLOT, f.len())?, f, "packet {i}");
    }
    drop(rxq);
    drop(dev);
    Ok(())
}

/// A 2.x send rig on the model: an exported Ethernet SQ (kernel-rung) with a buffer array of
/// `bufs` slots, and an RQ with `recvs` receives posted, looped back.
struct SendRig {
    // Field order is drop order: the queues, then the device.
    txq: WhileKernels<(EthTxq, mlx5_dpa::gpu::BufArr)>,
    rq: mlx5_dpa::queues::Rq,
    rx_cq: mlx5_dpa::queues::Cq,
    rx: mlx5_dpa::mem::MemoryRegion,
    mac: [u8; 6],
    /// The steering rule to the RQ.
    _flow: mlx5_dpa::queues::steering::RxFlow,
    _dev: mlx5_sim::Device,
}

impl SendRig {
    fn new(bufs: usize, recvs: usize) -> Result<SendRig, Box<dyn std::error::Error>> {
        let mut e = common::eth(9, 9, 6, 1, SLOT)?;
        e.dev.start_engine();
        for i in 0..recvs {
            let sge = e.rx.sge(i * SLOT, SLOT)?;
            e.rq.post_recv(&[sge], i as u64)?;
        }
        e.rq.ring_doorbell();
        let common::Eth {
            dev,
            sq,
            tx_cq,
            rq,
            rx_cq,
            tx,
            rx,
            mac,
            _flow,
            ..
        } = e;
        let txq = WhileKernels::new((
            EthTxq::export(sq, tx_cq, NicHandler::GpuSmDb)?,
            mlx5_dpa::gpu::BufArr::new(tx, bufs, SLOT)?,
        ));
        Ok(SendRig {
            _flow,
            _dev: dev,
            txq,
            rq,
            rx_cq,
            rx,
            mac,
        })
    }

    /// The next frame the RQ received (30 s at most), its receive retired.
    fn received(&mut self, what: &str) -> Result<Vec<u8>, Box<dyn std::error::Error>> {
        let start = Instant::now();
        let c = loop {
            assert!(start.elapsed() < WAIT, "{what} did not arrive");
            match self.rx_cq.poll() {
                Some(c) => break c.expect("receive completion"),
                None => std::thread::yield_now(),
            }
        };
        let slot = self.rq.complete(c.wqe_counter)? as usize;
        let mut b = vec![0u8; c.byte_len as usize];
        self.rx.read(slot * SLOT, &mut b)?;
        Ok(b)
    }
}

/// DOCA 2.x's send on a CPU thread against the model, from a GPU buffer array
/// (`mlx5_dpa::gpu::BufArr`): 16 frames with the strong pattern (enqueue, commit, push), then 16
/// with the weak one (positions from `get_info`, commit of 16, push), each waited for with
/// `wait_completion`; all 32 arrive at the RQ byte for byte, in order.
#[test]
#[cfg_attr(no_gxx, ignore = "g++ is not installed")]
fn the_2x_send_patterns_deliver_every_frame_in_order() -> Result<(), Box<dyn std::error::Error>> {
    let lib = harness();
    let send: SendV2Fn = sym(lib, b"harness_send_v2");
    let n = 16usize;
    let mut r = SendRig::new(n, 2 * n)?;
    let (handle, arr) = (r.txq.0.handle_addr(), r.txq.1.handle_addr());
    let mut sent = Vec::new();
    for (round, weak) in [0, 1].into_iter().enumerate() {
        let lens: Vec<u32> = (0..n)
            .map(|i| 60 + ((i * 211 + round * 77) % 1400) as u32)
            .collect();
        for (i, &len) in lens.iter().enumerate() {
            let f = frame(r.mac, round * n + i, len as usize);
            r.txq
                .1
                .region()
                .expect("a local array")
                .write(i * SLOT, &f)?;
            sent.push(f);
        }
        // SAFETY: the handles, the buffers and `lens` outlive the call, which returns before
        // them.
        let rc = unsafe { send(handle, arr, lens.as_ptr(), n as u32, weak) };
        assert_eq!(rc, DOCA_SUCCESS, "round {round}");
    }
    assert_eq!(r.txq.0.producer_index(), 2 * n as u64);
    for (i, f) in sent.iter().enumerate() {
        assert_eq!(
            &r.received(&format!("frame {i}"))?,
            f,
            "frame {i}, in order"
        );
    }
    Ok(())
}

type SendAtFn = unsafe extern "C" fn(u64, u64, u32, u64, i32) -> i32;

/// DOCA 2.x's send on time on a CPU thread against the model: a wait until 300 ms from now
/// (`calculate_timestamp`, `wait_time_enqueue_strong` / `_weak`), then a frame; its completion
/// comes only once the time passed (the model's SQ stops at the WAIT-on-time WQE until its
/// real-time clock does), and the frame arrives intact. A time already past holds nothing.
/// Before, both calls answered DOCA_ERROR_NOT_SUPPORTED.
#[test]
#[cfg_attr(no_gxx, ignore = "g++ is not installed")]
fn the_2x_send_on_time_leaves_after_its_time() -> Result<(), Box<dyn std::error::Error>> {
    use std::time::SystemTime;
    let lib = harness();
    let send_at: SendAtFn = sym(lib, b"harness_send_at_v2");
    let mut r = SendRig::new(1, 4)?;
    let utc_ns = || {
        SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .expect("after 1970")
            .as_nanos() as u64
    };
    for (round, (weak, delay_ms)) in [(0, 300u64), (1, 300), (0, 0)].into_iter().enumerate() {
        let f = frame(r.mac, round, 200);
        r.txq.1.region().expect("a local array").write(0, &f)?;
        // A time already past for the last round.
        let at = utc_ns() + delay_ms * 1_000_000 - if delay_ms == 0 { 1_000_000_000 } else { 0 };
        // SAFETY: the handles and the buffer outlive the call, which returns before them.
        let rc = unsafe { send_at(r.txq.0.handle_addr(), r.txq.1.handle_addr(), 200, at, weak) };
        assert_eq!(rc, DOCA_SUCCESS, "round {round}");
        assert!(
            utc_ns() >= at,
            "round {round}: the send completed before its time"
        );
        assert_eq!(
            r.received(&format!("round {round}'s frame"))?,
            f,
            "round {round}"
        );
    }
    Ok(())
}

type DmaCopyFn = unsafe extern "C" fn(u64, u64, u64, u32, u64, u32) -> i32;

/// DOCA 2.x's GPU DMA on a CPU thread against the model: 8 copies of 200 bytes, from offset 16
/// of each buffer of one array to the same place in another (`doca_gpu_dev_dma_memcpy`, one
/// `doca_gpu_dev_dma_commit`), done as the host's progress sees them, byte for byte, and
/// nothing else written.
#[test]
#[cfg_attr(no_gxx, ignore = "g++ is not installed")]
fn the_2x_dma_copies_between_buffers() -> Result<(), Box<dyn std::error::Error>> {
    use mlx5_dpa::devx::UarKind;
    use mlx5_dpa::mem::{MemoryRegion, Pd};
    use mlx5_dpa::uar::UarPage;
    let lib = harness();
    let copy: DmaCopyFn = sym(lib, b"harness_dma_copy");
    let dev = mlx5_sim::Device::with_profile("bf3").expect("bf3");
    dev.start_engine();
    let ctx = dev.open_devx();
    let pd = Pd::alloc(&ctx)?;
    let uar = UarPage::alloc(&ctx, UarKind::NonCached)?;
    let (n, size) = (8usize, 256usize);
    let access = Access::LOCAL_WRITE | Access::REMOTE_WRITE | Access::REMOTE_READ;
    let src = MemoryRegion::alloc(&ctx, &pd, n * size, access)?;
    let dst = MemoryRegion::alloc(&ctx, &pd, n * size, access)?;
    let data: Vec<u8> = (0..n * size).map(|i| (i * 31 + 5) as u8).collect();
    src.write(0, &data)?;
    dst.write(0, &vec![0u8; n * size])?;
    let mut q = WhileKernels::new((
        mlx5_dpa::gpu::Dma::new(&ctx, &pd, &uar, 6, NicHandler::GpuSmDb)?,
        mlx5_dpa::gpu::BufArr::new(src, n, size)?,
        mlx5_dpa::gpu::BufArr::new(dst, n, size)?,
    ));
    // SAFETY: the handles and both arrays' regions outlive the call, which returns before them.
    let r = unsafe {
        copy(
            q.0.handle_addr(),
            q.1.handle_addr(),
            q.2.handle_addr(),
            n as u32,
            16,
            200,
        )
    };
    assert_eq!(r, DOCA_SUCCESS);
    assert_eq!(q.0.committed(), n as u64);
    let start = Instant::now();
    while q.0.progress()? < n as u64 {
        assert!(start.elapsed() < WAIT, "the copies did not complete");
        std::thread::yield_now();
    }
    let got =
        q.2.region()
            .expect("a local array")
            .buf()
            .to_vec(0, n * size)?;
    for i in 0..n {
        let at = i * size;
        assert_eq!(
            &got[at + 16..at + 216],
            &data[at + 16..at + 216],
            "buffer {i}"
        );
        assert!(got[at..at + 16]
            .iter()
            .chain(&got[at + 216..at + size])
            .all(|&b| b == 0));
    }
    drop(q);
    drop(dev);
    Ok(())
}
