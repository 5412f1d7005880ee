//! GPUNetIO on the device model (feature `gpu`): CUDA kernels drive the driver's queues, as
//! DOCA's GPUNetIO samples do. `mlx5-dpa demo gpu-send | gpu-recv | gpu-verbs` runs them.
//!
//! - `send`: a kernel sends N frames through an exported Ethernet SQ (its threads share the
//!   queue); the model loops them back to an RQ the host reads; every frame is checked byte
//!   for byte.
//! - `recv`: the host sends N frames to the model's MAC; a kernel receives them into an
//!   exported RQ's strides and reports each batch through a GPUNetIO semaphore; the CPU checks
//!   every packet in its stride and the kernel's byte sums.
//! - `verbs`: a kernel puts data into a peer's memory over an exported RC QP (force-loopback on
//!   the model), each put with a signal; then one-put latency.
//!
//! Doorbells: rung by the kernel when the model's UAR page is registered with CUDA, else by the
//! CPU proxy (the default; `--cpu-proxy` forces it).
//!
//! Every queue, ring and buffer the kernel touches is host memory registered with CUDA
//! (`cuMemHostRegister`, unified addressing): the handles hold host addresses.

use std::error::Error;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mlx5_dpa::devx::{Devx, UarKind};
use mlx5_dpa::gpu::cuda::{Gpu, HostRegistration};
use mlx5_dpa::gpu::{EthRxq, EthTxq, NicHandler, Semaphore, SemaphoreStatus, VerbsQp};
use mlx5_dpa::mem::{Access, DmaBuf, MemoryRegion, Pd, Umem};
use mlx5_dpa::mlx5::cmd::OuterMatch;
use mlx5_dpa::queues::steering::{RxFlow, Tis, TransportDomain};
use mlx5_dpa::queues::wq::ETH_MIN_INLINE;
use mlx5_dpa::queues::{Cq, CqConfig, EthSq, EthSqConfig, HostQueueMem, Rq, RqConfig};
use mlx5_dpa::uar::UarPage;

const SLOT: usize = 2048;
const WAIT: Duration = Duration::from_secs(60);
/// Kernel threads: one block of 64.
const THREADS: u32 = 64;

/// What a run measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Report {
    /// Frames, packets or puts, all checked.
    pub count: usize,
    /// From launch to the kernel's end.
    pub elapsed: Duration,
    /// Doorbells the CPU proxy rang (0 when the kernel rang them).
    pub proxy_doorbells: u64,
}

/// A buffer of the run: registered with the device (a ring, through its UMEM) and with CUDA.
fn carved(
    ctx: &Arc<dyn Devx>,
    gpu: &Gpu,
    regs: &mut Vec<HostRegistration>,
    len: usize,
) -> Result<HostQueueMem, Box<dyn Error>> {
    let buf = DmaBuf::new(len + 4096)?;
    let umem = Umem::register(ctx, &buf, Access::LOCAL_WRITE)?;
    regs.push(gpu.register_buf(&buf)?);
    // SAFETY: the buffer is this run's alone; ring and record do not overlap.
    Ok(unsafe { HostQueueMem::carve(umem, 0, len, len) }?)
}

/// The Ethernet queue set of a run: an SQ with its CQ, an RQ with its CQ and a flow rule for
/// the port's MAC, their memory registered with CUDA.
struct EthSet {
    sq: EthSq,
    tx_cq: Cq,
    rq: Rq,
    rx_cq: Cq,
    _flow: RxFlow,
    pd: Arc<Pd>,
    uar: Arc<UarPage>,
    mac: [u8; 6],
}

fn eth_set(
    ctx: &Arc<dyn Devx>,
    gpu: &Gpu,
    regs: &mut Vec<HostRegistration>,
    mac: [u8; 6],
    log: u8,
) -> Result<EthSet, Box<dyn Error>> {
    let pd = Pd::alloc(ctx)?;
    let uar = UarPage::alloc(ctx, UarKind::NonCached)?;
    let td = TransportDomain::alloc(ctx)?;
    let tis = Tis::create(ctx, &td, &pd)?;
    let cqc = CqConfig::new(log);
    let tx_cq = Cq::create(ctx, &uar, carved(ctx, gpu, regs, cqc.ring_bytes())?, &cqc)?;
    let rx_cq = Cq::create(ctx, &uar, carved(ctx, gpu, regs, cqc.ring_bytes())?, &cqc)?;
    let sqc = EthSqConfig {
        log_size: log,
        signal_every: 1,
    };
    let sq = EthSq::create(
        ctx,
        &pd,
        &uar,
        &tis,
        &tx_cq,
        carved(ctx, gpu, regs, sqc.ring_bytes())?,
        &sqc,
    )?;
    let rqc = RqConfig {
        log_size: log,
        max_sge: 1,
    };
    let rq = Rq::create(
        ctx,
        &pd,
        &uar,
        &rx_cq,
        carved(ctx, gpu, regs, rqc.ring_bytes())?,
        &rqc,
    )?;
    let flow = RxFlow::to_rq(
        ctx,
        &td,
        &rq,
        OuterMatch {
            dmac: Some(mac),
            ..Default::default()
        },
        0,
    )?;
    Ok(EthSet {
        sq,
        tx_cq,
        rq,
        rx_cq,
        _flow: flow,
        pd,
        uar,
        mac,
    })
}

/// Frame `i` of a run: to `mac`, an experimental EtherType, its index, then a pattern.
pub fn frame(mac: [u8; 6], i: usize, len: usize) -> Vec<u8> {
    let mut f = Vec::with_capacity(len);
    f.extend_from_slice(&mac);
    f.extend_from_slice(&[0x02, 0, 0, 0, 0, 0x67, 0x88, 0xb5]);
    f.extend_from_slice(&(i as u32).to_be_bytes());
    while f.len() < len {
        f.push((f.len() * 3 + i) as u8);
    }
    f
}

/// Runs the CPU proxy (`step`) on this thread until `stream` is done; returns the doorbells
/// it rang. The stream is waited for on a thread of its own.
fn proxy_until_done<T>(
    q: &mut T,
    step: fn(&mut T) -> bool,
    gpu: &Gpu,
) -> Result<u64, Box<dyn Error>> {
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
    let start = Instant::now();
    let mut rang = 0;
    while !stop.load(Ordering::Acquire) {
        rang += u64::from(step(q));
        if start.elapsed() > WAIT {
            return Err("the kernel did not finish in 60 s".into());
        }
        std::hint::spin_loop();
    }
    waiter.join().map_err(|_| "stream waiter")??;
    Ok(rang)
}

/// Reads the kernel threads' status words (0 each, or a doca_error_t).
fn statuses(status: &DmaBuf, n: usize) -> Result<(), Box<dyn Error>> {
    for t in 0..n {
        let mut w = [0u8; 4];
        status.read(4 * t, &mut w)?;
        let e = i32::from_le_bytes(w);
        if e != 0 {
            return Err(format!("GPU thread {t} failed: doca_error_t {e}").into());
        }
    }
    Ok(())
}

const SEND_KERNEL: &str = include_str!("gpunetio_kernels/send_frames.cu");

/// `gpu-send`: a kernel sends `n` frames (up to 1024) through an exported SQ; each is checked
/// at the RQ.
///
/// # Errors
/// No GPU ([`mlx5_dpa::gpu::GpuError`]), queue or CUDA failures, or a frame missing or wrong.
pub fn send(
    ctx: &Arc<dyn Devx>,
    mac: [u8; 6],
    n: usize,
    handler: NicHandler,
    out: &mut dyn Write,
) -> Result<Report, Box<dyn Error>> {
    if !(1..=1024).contains(&n) {
        return Err(format!("{n} frames: 1 to 1024").into());
    }
    let gpu = Gpu::open(0)?;
    let mut regs = Vec::new();
    let mut set = eth_set(ctx, &gpu, &mut regs, mac, 10)?;
    let rx = MemoryRegion::alloc(ctx, &set.pd, n * SLOT, Access::LOCAL_WRITE)?;
    for i in 0..n {
        set.rq.post_recv(&[rx.sge(i * SLOT, SLOT)?], i as u64)?;
    }
    set.rq.ring_doorbell();
    let tx = MemoryRegion::alloc(ctx, &set.pd, n * SLOT, Access::LOCAL_WRITE)?;
    let lens = DmaBuf::new(4 * n)?;
    let status = DmaBuf::new(4 * THREADS as usize)?;
    let mut sent = Vec::with_capacity(n);
    for i in 0..n {
        let f = frame(set.mac, i, 60 + (i * 389) % 1455);
        tx.write(i * SLOT, &f)?;
        lens.write(4 * i, &(f.len() as u32).to_le_bytes())?;
        sent.push(f);
    }
    let handler = usable(&gpu, &set.uar, handler, &mut regs)?;
    let EthSet {
        sq,
        tx_cq,
        mut rq,
        mut rx_cq,
        ..
    } = set;
    let mut txq = EthTxq::export(sq, tx_cq, handler)?;
    for b in [tx.buf(), &lens, &status, txq.page()] {
        regs.push(gpu.register_buf(b)?);
    }
    writeln!(
        out,
        "GPU: {:?}; doorbells: {handler:?}",
        mlx5_dpa::gpu::cuda::probe()?
    )?;
    let module = gpu.compile(SEND_KERNEL)?;
    let f = gpu.function(&module, "send_frames")?;
    let args = [
        txq.handle_addr(),
        tx.sge(0, SLOT)?.addr,
        u64::from(tx.lkey().0.to_be()),
        SLOT as u64,
        lens.addr(),
        n as u64,
        status.addr(),
    ];
    let t0 = Instant::now();
    // SAFETY: `send_frames` takes these seven uint64_t parameters; every address among them is
    // registered host memory that lives until the stream is synchronised below.
    unsafe { gpu.launch(&f, 1, THREADS, &args) }?;
    let rang = proxy_until_done(&mut txq, EthTxq::cpu_proxy_progress, &gpu)?;
    let elapsed = t0.elapsed();
    statuses(&status, THREADS as usize)?;
    let mut seen = vec![false; n];
    let start = Instant::now();
    for _ in 0..n {
        let c = loop {
            if let Some(c) = rx_cq.poll() {
                break c?;
            }
            if start.elapsed() > WAIT {
                return Err("frames missing at the RQ".into());
            }
            std::thread::yield_now();
        };
        let slot = rq.complete(c.wqe_counter)? as usize;
        let mut b = vec![0u8; c.byte_len as usize];
        rx.read(slot * SLOT, &mut b)?;
        let i = u32::from_be_bytes([b[14], b[15], b[16], b[17]]) as usize;
        if i >= n || seen[i] || b != sent[i] {
            return Err(format!("frame {i} arrived wrong or twice").into());
        }
        seen[i] = true;
    }
    writeln!(
        out,
        "{n} frames sent by {THREADS} GPU threads in {elapsed:?} ({:.0} frames/s), every one checked at the RQ; {rang} doorbells rung by the CPU proxy",
        n as f64 / elapsed.as_secs_f64()
    )?;
    drop(txq);
    drop(regs);
    Ok(Report {
        count: n,
        elapsed,
        proxy_doorbells: rang,
    })
}

/// The doorbell handler to use: the kernel rings when the UAR page can be registered with CUDA
/// (as I/O memory) and the caller did not ask for the proxy.
fn usable(
    gpu: &Gpu,
    uar: &Arc<UarPage>,
    wanted: NicHandler,
    regs: &mut Vec<HostRegistration>,
) -> Result<NicHandler, Box<dyn Error>> {
    if wanted == NicHandler::CpuProxy || uar.base().is_null() {
        return Ok(NicHandler::CpuProxy);
    }
    match gpu.register_host(uar.base() as u64, 4096, true) {
        Ok(r) => {
            regs.push(r);
            Ok(NicHandler::GpuSmDb)
        }
        // The model's UAR page is ordinary memory: retry as such.
        Err(_) => match gpu.register_host(uar.base() as u64, 4096, false) {
            Ok(r) => {
                regs.push(r);
                Ok(NicHandler::GpuSmDb)
            }
            Err(_) => Ok(NicHandler::CpuProxy),
        },
    }
}

const RECV_KERNEL: &str = include_str!("gpunetio_kernels/receive.cu");

/// `gpu-recv`: the host sends `n` frames; a kernel receives them through 64 strides and reports
/// through a semaphore; every packet and byte sum is checked by the CPU.
///
/// # Errors
/// As [`send`].
pub fn recv(
    ctx: &Arc<dyn Devx>,
    mac: [u8; 6],
    n: usize,
    out: &mut dyn Write,
) -> Result<Report, Box<dyn Error>> {
    if !(1..=100_000).contains(&n) {
        return Err(format!("{n} frames: 1 to 100000").into());
    }
    let gpu = Gpu::open(0)?;
    let mut regs = Vec::new();
    let set = eth_set(ctx, &gpu, &mut regs, mac, 6)?;
    let pkts = MemoryRegion::alloc(ctx, &set.pd, 64 * SLOT, Access::LOCAL_WRITE)?;
    regs.push(gpu.register_buf(pkts.buf())?);
    let tx = MemoryRegion::alloc(ctx, &set.pd, 64 * SLOT, Access::LOCAL_WRITE)?;
    let EthSet {
        mut sq,
        mut tx_cq,
        rq,
        rx_cq,
        mac,
        ..
    } = set;
    let rxq = EthRxq::export(rq, rx_cq, pkts, SLOT)?;
    let sem = Semaphore::new(8, 16)?;
    let status = DmaBuf::new(4096)?;
    for b in [rxq.page(), sem.buf(), &status] {
        regs.push(gpu.register_buf(b)?);
    }
    let module = gpu.compile(RECV_KERNEL)?;
    let f = gpu.function(&module, "receive")?;
    let args = [
        rxq.handle_addr(),
        sem.handle_addr(),
        n as u64,
        status.addr(),
    ];
    let t0 = Instant::now();
    // SAFETY: `receive` takes these four uint64_t parameters; as in `send`.
    unsafe { gpu.launch(&f, 1, 1, &args) }?;
    let mut idx = 0u32;
    let mut next = 0usize;
    let start = Instant::now();
    while next < n {
        // Batches of 32: the next goes once the kernel has reported this one (strides are
        // reused only after the CPU checked their packets).
        let end = (next + 32).min(n);
        let sent: Vec<Vec<u8>> = (next..end)
            .map(|i| frame(mac, i, 60 + (i * 331) % 1455))
            .collect();
        for (k, f) in sent.iter().enumerate() {
            tx.write(k * SLOT, f)?;
            let rest = tx.sge(k * SLOT + ETH_MIN_INLINE, f.len() - ETH_MIN_INLINE)?;
            sq.post_send(&f[..ETH_MIN_INLINE], &[rest], (next + k) as u64)?;
        }
        sq.ring_doorbell();
        for _ in next..end {
            let c = tx_cq.poll_timeout(WAIT)??;
            sq.complete(&c)?;
        }
        let mut seen = next;
        while seen < end {
            if start.elapsed() > WAIT {
                return Err(format!("packets {seen}..{end} not reported").into());
            }
            if sem.status(idx)? != SemaphoreStatus::Ready {
                std::thread::yield_now();
                continue;
            }
            let (count, first) = sem.packet_info(idx)?;
            let info = sem.custom_info(idx)?;
            let mut sum = 0u64;
            for k in first..first + u64::from(count) {
                let f = &sent[k as usize - next];
                let got = rxq
                    .packets()
                    .buf()
                    .to_vec((k % 64) as usize * SLOT, f.len())?;
                if &got != f {
                    return Err(format!("packet {k} differs in its stride").into());
                }
                sum += f.iter().map(|&b| u64::from(b)).sum::<u64>();
            }
            let theirs = u64::from_le_bytes(info[8..16].try_into()?);
            if theirs != sum {
                return Err(
                    format!("item {idx}: the kernel summed {theirs}, the CPU {sum}").into(),
                );
            }
            sem.set_status(idx, SemaphoreStatus::Free)?;
            seen += count as usize;
            idx = (idx + 1) % sem.len();
        }
        next = end;
    }
    gpu.synchronize()?;
    let elapsed = t0.elapsed();
    statuses(&status, 1)?;
    writeln!(
        out,
        "{n} frames received by a GPU kernel in {elapsed:?}, reported through a semaphore; every packet and byte sum checked by the CPU"
    )?;
    drop((rxq, sem));
    drop(regs);
    Ok(Report {
        count: n,
        elapsed,
        proxy_doorbells: 0,
    })
}

const PUT_KERNEL: &str = include_str!("gpunetio_kernels/put.cu");

/// `gpu-verbs`: 16 kernel threads put `n` chunks of 1 KiB, each with a signal, into a
/// force-loopback peer's memory over an exported RC QP; the peer's bytes and counter are
/// checked.
///
/// # Errors
/// As [`send`].
pub fn verbs(
    ctx: &Arc<dyn Devx>,
    n: usize,
    handler: NicHandler,
    out: &mut dyn Write,
) -> Result<Report, Box<dyn Error>> {
    use mlx5_dpa::queues::{QpConfig, RcConnect, RcPeer, RcQp};
    const CHUNK: usize = 1024;
    if !(1..=48).contains(&n) {
        return Err(format!("{n} chunks: 1 to 48").into());
    }
    let gpu = Gpu::open(0)?;
    let mut regs = Vec::new();
    let pd = Pd::alloc(ctx)?;
    let uar = UarPage::alloc(ctx, UarKind::NonCached)?;
    let cqc = CqConfig::new(7);
    let qpc = QpConfig::new(7, 6);
    let make = |regs: &mut Vec<HostRegistration>| -> Result<(RcQp, Cq, Cq), Box<dyn Error>> {
        let s = Cq::create(ctx, &uar, carved(ctx, &gpu, regs, cqc.ring_bytes())?, &cqc)?;
        let r = Cq::create(ctx, &uar, carved(ctx, &gpu, regs, cqc.ring_bytes())?, &cqc)?;
        let qp = RcQp::create(
            ctx,
            &pd,
            &uar,
            &s,
            &r,
            carved(ctx, &gpu, regs, qpc.ring_bytes())?,
            &qpc,
        )?;
        Ok((qp, s, r))
    };
    let (mut a, a_s, a_r) = make(&mut regs)?;
    let (mut b, _b_s, _b_r) = make(&mut regs)?;
    a.connect(&RcConnect::new(RcPeer::Loopback {
        remote_qpn: b.qpn(),
    }))?;
    b.connect(&RcConnect::new(RcPeer::Loopback {
        remote_qpn: a.qpn(),
    }))?;
    let access = Access::LOCAL_WRITE | Access::REMOTE_WRITE | Access::REMOTE_ATOMIC;
    let local = MemoryRegion::alloc(ctx, &pd, 64 * 1024, access)?;
    let remote = MemoryRegion::alloc(ctx, &pd, 64 * 1024, access)?;
    let data: Vec<u8> = (0..n * CHUNK).map(|i| (i * 7 + i / 251) as u8).collect();
    local.write(0, &data)?;
    let sig_at = 60 * 1024;
    remote.write(sig_at, &0u64.to_ne_bytes())?;
    let handler = usable(&gpu, &uar, handler, &mut regs)?;
    let mut qp = VerbsQp::export(a, a_s, a_r, handler)?;
    let status = DmaBuf::new(4096)?;
    for buf in [local.buf(), &status, qp.page()] {
        regs.push(gpu.register_buf(buf)?);
    }
    let module = gpu.compile(PUT_KERNEL)?;
    let f = gpu.function(&module, "put")?;
    let laddr = local.sge(0, 8)?.addr;
    let raddr = remote.sge(0, 8)?.addr;
    let args = [
        qp.handle_addr(),
        raddr,
        u64::from(remote.rkey().0.to_be()),
        laddr,
        u64::from(local.lkey().0.to_be()),
        CHUNK as u64,
        n as u64,
        raddr + sig_at as u64,
        laddr + (n * CHUNK) as u64,
        status.addr(),
    ];
    let t0 = Instant::now();
    // SAFETY: `put` takes these ten uint64_t parameters; as in `send`.
    unsafe { gpu.launch(&f, 1, 16, &args) }?;
    let rang = proxy_until_done(&mut qp, VerbsQp::cpu_proxy_progress, &gpu)?;
    let elapsed = t0.elapsed();
    statuses(&status, 16)?;
    if remote.buf().to_vec(0, data.len())? != data {
        return Err("the peer's bytes differ from what was put".into());
    }
    let counter = u64::from_ne_bytes(
        remote
            .buf()
            .to_vec(sig_at, 8)?
            .try_into()
            .map_err(|_| "8")?,
    );
    if counter != n as u64 {
        return Err(format!("the peer's signal counter is {counter}, not {n}").into());
    }
    writeln!(
        out,
        "{n} puts of {CHUNK} bytes with a signal each from 16 GPU threads in {elapsed:?} ({:.1} MB/s); the peer's bytes and counter ({counter}) checked; {rang} doorbells rung by the CPU proxy",
        (n * CHUNK) as f64 / elapsed.as_secs_f64() / 1e6
    )?;
    drop(qp);
    drop(regs);
    Ok(Report {
        count: n,
        elapsed,
        proxy_doorbells: rang,
    })
}

#[allow(dead_code)]
fn main() -> Result<(), Box<dyn Error>> {
    let dev = mlx5_sim::Device::with_profile("bf3").ok_or("bf3")?;
    dev.start_engine();
    let ctx = dev.open_devx();
    let mac = dev.with_profile_mut(|p| p.mac);
    let mut out = std::io::stdout();
    send(&ctx, mac, 256, NicHandler::CpuProxy, &mut out)?;
    Ok(())
}
