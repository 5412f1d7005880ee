//! Feature `gpu`: CUDA through cudarc. Everywhere: the probe answers with a typed error, never
//! a panic, where there is no driver or no GPU. On a GPU machine (FACTS section 10): a CUDA
//! kernel compiled with NVRTC against the GPUNetIO headers sends frames through an exported
//! SQ of the device model, the CPU proxy ringing its doorbell, and they arrive byte for byte.
#![cfg(feature = "gpu")]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use cudarc::driver::{LaunchConfig, PushKernelArg};
use mlx5_dpa::gpu::cuda::{probe, Gpu};
use mlx5_dpa::gpu::{EthTxq, GpuError, NicHandler};
use mlx5_dpa::mem::{Access, DmaBuf, MemoryRegion, Umem};
use mlx5_dpa::queues::{Cq, CqConfig, EthSq, EthSqConfig, HostQueueMem};

mod common;

const SLOT: usize = 2048;
const WAIT: Duration = Duration::from_secs(60);

#[test]
fn without_a_gpu_the_probe_says_why() {
    match probe() {
        Ok(info) => {
            assert!(info.devices >= 1 && !info.name.is_empty(), "{info:?}");
            eprintln!("GPU: {info:?}");
        }
        Err(e @ (GpuError::NoDriver(_) | GpuError::NoDevice(_))) => {
            assert!(!e.to_string().is_empty());
            // Opening says the same, without a panic from the CUDA library.
            let open = Gpu::open(0).expect_err("no GPU to open");
            assert_eq!(
                std::mem::discriminant(&open),
                std::mem::discriminant(&e),
                "{open} / {e}"
            );
            eprintln!("no GPU here ({e}): the kernel test skips");
        }
        Err(other) => panic!("a probe error of the wrong kind: {other}"),
    }
}

const KERNEL: &str = r#"
#include "doca_gpunetio_dev_eth_txq.cuh"

extern "C" __global__ void send_frames(uint64_t txq_addr, uint64_t buf, uint32_t mkey_be, uint32_t stride,
				       uint64_t lens_addr, uint32_t n, uint64_t status_addr)
{
	struct doca_gpu_eth_txq *txq = (struct doca_gpu_eth_txq *)txq_addr;
	const uint32_t *lens = (const uint32_t *)lens_addr;
	int *status = (int *)status_addr;
	uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
	uint32_t step = gridDim.x * blockDim.x;
	uint32_t mine = 0;
	for (uint32_t i = t; i < n; i += step) {
		doca_gpu_dev_eth_txq_send(txq, buf + (uint64_t)i * stride, mkey_be, lens[i],
					  DOCA_GPUNETIO_ETH_SEND_FLAG_NOTIFY, (doca_gpu_dev_eth_ticket_t *)0);
		mine++;
	}
	for (uint32_t done = 0; done < mine;) {
		uint32_t got = 0;
		doca_error_t r = doca_gpu_dev_eth_txq_poll_completion(txq, 1, DOCA_GPUNETIO_ETH_WAIT_FLAG_B, &got);
		if (r != DOCA_SUCCESS) {
			status[t] = (int)r;
			return;
		}
		done += got;
	}
	status[t] = 0;
}
"#;

#[test]
fn a_cuda_kernel_sends_frames_rung_by_the_cpu_proxy() -> Result<(), Box<dyn std::error::Error>> {
    let gpu = match Gpu::open(0) {
        Ok(g) => g,
        Err(e) => {
            eprintln!("no GPU ({e}): skipped");
            return Ok(());
        }
    };
    let mut e = common::eth(9, 9, 9, 1, SLOT)?;
    e.dev.start_engine();
    // The SQ and CQ rings in buffers of the test's, each registered with CUDA whole.
    let carved = |len: usize| -> Result<(Arc<DmaBuf>, HostQueueMem), Box<dyn std::error::Error>> {
        let buf = DmaBuf::new(len + 4096)?;
        let umem = Umem::register(&e.ctx, &buf, Access::LOCAL_WRITE)?;
        // SAFETY: the buffer is this test's alone; ring and record do not overlap.
        let mem = unsafe { HostQueueMem::carve(umem, 0, len, len) }?;
        Ok((buf, mem))
    };
    let ccfg = CqConfig::new(9);
    let (cq_buf, cq_mem) = carved(ccfg.ring_bytes())?;
    let cq = Cq::create(&e.ctx, &e.uar, cq_mem, &ccfg)?;
    let scfg = EthSqConfig {
        log_size: 9,
        signal_every: 1,
    };
    let (sq_buf, sq_mem) = carved(scfg.ring_bytes())?;
    let sq = EthSq::create(&e.ctx, &e.pd, &e.uar, &e.tis, &cq, sq_mem, &scfg)?;
    let n = 256usize;
    for i in 0..n {
        let sge = e.rx.sge(i * SLOT, SLOT)?;
        e.rq.post_recv(&[sge], i as u64)?;
    }
    e.rq.ring_doorbell();
    let tx = MemoryRegion::alloc(&e.ctx, &e.pd, n * SLOT, Access::LOCAL_WRITE)?;
    let mut sent = Vec::new();
    let lens = DmaBuf::new(4 * n)?;
    for i in 0..n {
        let len = 60 + (i * 389) % 1455;
        let mut f = Vec::with_capacity(len);
        f.extend_from_slice(&e.mac);
        f.extend_from_slice(&[0x02, 0, 0, 0, 0, 0x67, 0x88, 0xb5]);
        f.extend_from_slice(&(i as u32).to_be_bytes());
        while f.len() < len {
            f.push((f.len() * 3 + i) as u8);
        }
        tx.write(i * SLOT, &f)?;
        lens.write(4 * i, &(len as u32).to_le_bytes())?;
        sent.push(f);
    }
    let status = DmaBuf::new(4096)?;
    let mut txq = EthTxq::export(sq, cq, NicHandler::CpuProxy)?;
    let _regs = [
        gpu.register_buf(&cq_buf)?,
        gpu.register_buf(&sq_buf)?,
        gpu.register_buf(tx.buf())?,
        gpu.register_buf(&lens)?,
        gpu.register_buf(&status)?,
        gpu.register_buf(txq.page())?,
    ];
    let module = gpu.compile(KERNEL)?;
    let f = gpu.function(&module, "send_frames")?;
    let (handle, base, mkey, stride) = (
        txq.handle_addr(),
        tx.sge(0, SLOT)?.addr,
        tx.lkey().0.to_be(),
        SLOT as u32,
    );
    let (lens_addr, count, status_addr) = (lens.addr(), n as u32, status.addr());
    let mut launch = gpu.stream().launch_builder(&f);
    launch
        .arg(&handle)
        .arg(&base)
        .arg(&mkey)
        .arg(&stride)
        .arg(&lens_addr)
        .arg(&count)
        .arg(&status_addr);
    let t0 = Instant::now();
    // SAFETY: the arguments match the kernel's parameters; every address they carry is
    // registered host memory that outlives the kernel (synchronised below).
    unsafe { launch.launch(LaunchConfig::for_num_elems(64)) }?;
    // The CPU proxy runs while the kernel does.
    let stop = Arc::new(AtomicBool::new(false));
    let stream = Arc::clone(gpu.stream());
    let waiter = {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            let r = stream.synchronize();
            stop.store(true, Ordering::Release);
            r
        })
    };
    let mut rang = 0u64;
    while !stop.load(Ordering::Acquire) {
        rang += u64::from(txq.cpu_proxy_progress());
        assert!(t0.elapsed() < WAIT, "the kernel did not finish");
        std::hint::spin_loop();
    }
    waiter.join().expect("waiter")?;
    let elapsed = t0.elapsed();
    for t in 0..64 {
        let mut w = [0u8; 4];
        status.read(4 * t, &mut w)?;
        assert_eq!(i32::from_le_bytes(w), 0, "GPU thread {t}");
    }
    assert_eq!(txq.producer_index(), n as u64);
    eprintln!(
        "GPU sent {n} frames through the CPU proxy in {elapsed:?} ({:.0} frames/s, {rang} doorbells)",
        n as f64 / elapsed.as_secs_f64()
    );
    let mut seen = vec![false; n];
    let start = Instant::now();
    for _ in 0..n {
        let c = loop {
            if let Some(c) = e.rx_cq.poll() {
                break c.expect("receive");
            }
            assert!(start.elapsed() < WAIT, "frames missing");
            std::thread::yield_now();
        };
        let slot = e.rq.complete(c.wqe_counter)? as usize;
        let mut b = vec![0u8; c.byte_len as usize];
        e.rx.read(slot * SLOT, &mut b)?;
        let i = u32::from_be_bytes([b[14], b[15], b[16], b[17]]) as usize;
        assert!(i < n && !seen[i]);
        assert_eq!(b, sent[i], "frame {i}");
        seen[i] = true;
    }
    Ok(())
}
