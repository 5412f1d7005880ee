//! DOCA 2.x's GPU RDMA header (`src/gpu/include/doca_gpunetio_dev_rdma.cuh`), built as host C++
//! with g++ and run on CPU threads against the device model: the handle's layout is
//! `GpuRdma`'s; the DOCA 2.6 RDMA write sample's client and server (writes and sends with
//! immediates, receives with and without buffers, flags written back) run against each other
//! with DOCA 2.5 / 2.6 signatures; DOCA 2.7's weak writes, strong reads and inline writes on
//! the second connection of a handle of two land in that connection's peer; refused arguments
//! get the documented codes.

use std::sync::Arc;

use mlx5_dpa::devx::{Devx, UarKind};
use mlx5_dpa::gpu::{BufArr, GpuRdma, NicHandler, Rdma, VerbsQp};
use mlx5_dpa::mem::{Access, MemoryRegion, Pd};
use mlx5_dpa::queues::{Cq, CqConfig, HostQueueMem, QpConfig, RcConnect, RcPeer, RcQp};
use mlx5_dpa::uar::UarPage;

use crate::gpu;
use gpu::{harness, sym, WhileKernels, DOCA_ERROR_INVALID_VALUE, DOCA_SUCCESS};

type R = Result<(), Box<dyn std::error::Error>>;
type LayoutFn = unsafe extern "C" fn(*mut u64, i32) -> i32;
type ServerFn = unsafe extern "C" fn(u64, u64, u64, u64, u32, u32, *mut u32) -> i32;
type ClientFn = unsafe extern "C" fn(u64, u64, u64, u64, u64, u32, u32, *mut u32) -> i32;
type WeakFn =
    unsafe extern "C" fn(u64, u32, u64, u64, u64, u32, u32, *const u8, u32, u64, *mut u32) -> i32;
type RefusalsFn = unsafe extern "C" fn(u64, u64, *mut i32);

const DOCA_ERROR_NOT_SUPPORTED: i32 = 4;
const ACCESS: Access = Access::LOCAL_WRITE
    .union(Access::REMOTE_READ)
    .union(Access::REMOTE_WRITE);

/// One end: a protection domain and an RC QP with its two CQs (not connected yet).
pub(crate) struct End {
    pub(crate) pd: Arc<Pd>,
    qp: RcQp,
    send_cq: Cq,
    recv_cq: Cq,
}

fn end(ctx: &Arc<dyn Devx>) -> Result<End, Box<dyn std::error::Error>> {
    end_sized(ctx, 6)
}

/// An end whose send ring and CQs hold `2^log` entries.
pub(crate) fn end_sized(ctx: &Arc<dyn Devx>, log: u8) -> Result<End, Box<dyn std::error::Error>> {
    end_with(ctx, log, false)
}

/// An end whose send ring and receive CQ hold `2^log` entries, its send CQ too or, with
/// `collapsed`, one entry every completion rewrites.
pub(crate) fn end_with(
    ctx: &Arc<dyn Devx>,
    log: u8,
    collapsed: bool,
) -> Result<End, Box<dyn std::error::Error>> {
    let pd = Pd::alloc(ctx)?;
    let uar = UarPage::alloc(ctx, UarKind::NonCached)?;
    let cq =
        |cqc: CqConfig| Cq::create(ctx, &uar, HostQueueMem::alloc(ctx, cqc.ring_bytes())?, &cqc);
    let send_cq = cq(if collapsed {
        CqConfig::collapsed()
    } else {
        CqConfig::new(log)
    })?;
    let recv_cq = cq(CqConfig::new(log))?;
    let qpc = QpConfig::new(log, 5);
    let qp = RcQp::create(
        ctx,
        &pd,
        &uar,
        &send_cq,
        &recv_cq,
        HostQueueMem::alloc(ctx, qpc.ring_bytes())?,
        &qpc,
    )?;
    Ok(End {
        pd,
        qp,
        send_cq,
        recv_cq,
    })
}

/// Connects `a` and `b` (force loopback on one device) and exports both for the GPU: `a`'s
/// doorbell rung by the kernel, `b`'s by the CPU proxy.
pub(crate) fn connect(
    mut a: End,
    mut b: End,
) -> Result<(VerbsQp, VerbsQp), Box<dyn std::error::Error>> {
    let mut ca = RcConnect::new(RcPeer::Loopback {
        remote_qpn: b.qp.qpn(),
    });
    let mut cb = RcConnect::new(RcPeer::Loopback {
        remote_qpn: a.qp.qpn(),
    });
    (ca.send_psn, cb.recv_psn, cb.send_psn, ca.recv_psn) = (0x100, 0x100, 0x300, 0x300);
    a.qp.connect(&ca)?;
    b.qp.connect(&cb)?;
    let va = VerbsQp::export(a.qp, a.send_cq, a.recv_cq, NicHandler::GpuSmDb)?;
    let vb = VerbsQp::export(b.qp, b.send_cq, b.recv_cq, NicHandler::CpuProxy)?;
    Ok((va, vb))
}

pub(crate) fn device() -> (mlx5_sim::Device, Arc<dyn Devx>) {
    let dev = mlx5_sim::Device::with_profile("bf3").expect("bf3");
    dev.start_engine();
    let ctx = dev.open_devx();
    (dev, ctx)
}

/// A local array of `num` buffers of `size` bytes, filled with `fill(i)` at byte i.
pub(crate) fn local(
    ctx: &Arc<dyn Devx>,
    pd: &Arc<Pd>,
    num: usize,
    size: usize,
    fill: impl Fn(usize) -> u8,
) -> Result<BufArr, Box<dyn std::error::Error>> {
    let mr = MemoryRegion::alloc(ctx, pd, num * size, ACCESS)?;
    mr.write(0, &(0..num * size).map(fill).collect::<Vec<u8>>())?;
    Ok(BufArr::new(mr, num, size)?)
}

/// The same buffers as the peer sees them (its address and rkey).
pub(crate) fn remote_of(arr: &BufArr) -> Result<BufArr, Box<dyn std::error::Error>> {
    let mr = arr.region().expect("a local array");
    let (num, size) = arr.shape();
    Ok(BufArr::remote(mr.addr(), mr.rkey(), num, size)?)
}

#[test]
#[cfg_attr(no_gxx, ignore = "g++ is not installed")]
fn the_rdma_handle_layout_is_the_headers() {
    let layout: LayoutFn = sym(harness(), b"harness_rdma_layout");
    let mut v = [0u64; 16];
    // SAFETY: `v` holds 16 entries and the harness writes at most that many.
    let n = unsafe { layout(v.as_mut_ptr(), 16) } as usize;
    use std::mem::{offset_of, size_of};
    let ours = [
        size_of::<GpuRdma>(),
        offset_of!(GpuRdma, commits),
        offset_of!(GpuRdma, commits_waited),
        offset_of!(GpuRdma, num_connections),
        offset_of!(GpuRdma, reserved),
        offset_of!(GpuRdma, recv_qp),
        offset_of!(GpuRdma, conn),
        offset_of!(GpuRdma, conn) - offset_of!(GpuRdma, recv_qp),
    ];
    let theirs: Vec<usize> = v[..n].iter().map(|&x| x as usize).collect();
    assert_eq!(theirs, ours, "size, then each field's offset");
}

/// DOCA 2.6's RDMA write sample, client and server on two CPU threads against the model, in
/// the 2.5 / 2.6 signatures: 4 rounds, writes with immediates in even rounds (receives without
/// buffers) and sends with immediates in odd ones (receives into the halves of the server's
/// buffer). The server's buffers hold the client's bytes, its receives report the client's
/// immediates in order, and each side's wait_all counts its commits.
#[test]
#[cfg_attr(no_gxx, ignore = "g++ is not installed")]
fn the_26_write_sample_runs_client_against_server() -> R {
    let lib = harness();
    let server: ServerFn = sym(lib, b"harness_rdma_server_v26");
    let client: ClientFn = sym(lib, b"harness_rdma_client_v26");
    const ROUNDS: usize = 4;
    const HALF: usize = 512;
    let (dev, ctx) = device();
    let (c_end, s_end) = (end(&ctx)?, end(&ctx)?);
    let (c_pd, s_pd) = (Arc::clone(&c_end.pd), Arc::clone(&s_end.pd));
    let (cq, sq) = connect(c_end, s_end)?;
    let b = local(&ctx, &c_pd, ROUNDS, HALF, |i| (i * 7 + 1) as u8)?;
    let c = local(&ctx, &c_pd, ROUNDS, HALF, |i| (i * 11 + 3) as u8)?;
    let cf = local(&ctx, &c_pd, 1, 64, |_| 0)?;
    let a = local(&ctx, &s_pd, ROUNDS, 2 * HALF, |_| 0)?;
    let sf = local(&ctx, &s_pd, 1, 64, |_| 1)?;
    let (ra, rf) = (remote_of(&a)?, remote_of(&cf)?);
    let q = WhileKernels::new((
        Rdma::new(vec![cq])?,
        Rdma::new(vec![sq])?,
        [b, c, cf, a, sf, ra, rf],
    ));
    let h = |i: usize| q.2[i].handle_addr();
    let (client_rdma, server_rdma) = (q.0.handle_addr(), q.1.handle_addr());
    let (hb, hc, hcf, ha, hsf, hra, hrf) = (h(0), h(1), h(2), h(3), h(4), h(5), h(6));
    let srv = q.spawn(move || {
        let mut imm = [0u32; 2 * ROUNDS];
        // SAFETY: the handles, arrays and regions outlive the call (WhileKernels keeps them
        // while the thread runs); `imm` holds the 2 immediates of each round.
        let r = unsafe {
            server(
                server_rdma,
                ha,
                hsf,
                hrf,
                ROUNDS as u32,
                HALF as u32,
                imm.as_mut_ptr(),
            )
        };
        (r, imm)
    });
    let cli = q.spawn(move || {
        let mut commits = 0u32;
        // SAFETY: as for the server's call; `commits` is this thread's.
        let r = unsafe {
            client(
                client_rdma,
                hb,
                hc,
                hcf,
                hra,
                ROUNDS as u32,
                HALF as u32,
                &mut commits,
            )
        };
        (r, commits)
    });
    // The CPU proxy rings the server's doorbells while the "kernels" run.
    let mut q = q;
    while !srv.is_finished() {
        q.1.cpu_proxy_progress();
        std::thread::yield_now();
    }
    let (sr, imm) = srv.join().expect("server thread");
    let (cr, commits) = cli.join().expect("client thread");
    assert_eq!(cr, DOCA_SUCCESS, "the client");
    assert_eq!(sr, DOCA_SUCCESS, "the server");
    assert_eq!(commits, ROUNDS as u32, "the client's commits, one a round");
    assert_eq!(q.1.commits(), ROUNDS as u64, "the server's flag writes");
    let want_imm: Vec<u32> = (0..ROUNDS as u32).flat_map(|i| [i, i + 1]).collect();
    assert_eq!(imm.to_vec(), want_imm, "immediates, in order");
    let got = q.2[3]
        .region()
        .expect("local")
        .buf()
        .to_vec(0, ROUNDS * 2 * HALF)?;
    let src = |arr: usize, i: usize| -> Vec<u8> {
        q.2[arr]
            .region()
            .expect("local")
            .buf()
            .to_vec(i * HALF, HALF)
            .expect("read")
    };
    for i in 0..ROUNDS {
        let at = i * 2 * HALF;
        assert_eq!(
            &got[at..at + HALF],
            src(0, i).as_slice(),
            "round {i}, B's half"
        );
        assert_eq!(
            &got[at + HALF..at + 2 * HALF],
            src(1, i).as_slice(),
            "round {i}, C's half"
        );
    }
    let flags = q.2[2].region().expect("local").buf().to_vec(0, ROUNDS)?;
    assert_eq!(
        flags,
        vec![1u8; ROUNDS],
        "the server's flags reached the client"
    );
    drop(q);
    drop(dev);
    Ok(())
}

/// DOCA 2.7's weak writes (positions from get_info, one commit of all), strong reads back and
/// an inline write, on connection 1 of a handle of two: all land in connection 1's peer, none
/// in connection 0's; wait_all counts the three commits. A handle of two has no receive side.
#[test]
#[cfg_attr(no_gxx, ignore = "g++ is not installed")]
fn the_27_weak_writes_reads_and_inline_use_the_named_connection() -> R {
    let lib = harness();
    let weak: WeakFn = sym(lib, b"harness_rdma_weak_v27");
    let refusals: RefusalsFn = sym(lib, b"harness_rdma_refusals");
    const N: usize = 12;
    const SIZE: usize = 300;
    let (dev, ctx) = device();
    let (a0, b0, a1, b1) = (end(&ctx)?, end(&ctx)?, end(&ctx)?, end(&ctx)?);
    let (pd0, pd1, pdb0, pdb1) = (
        Arc::clone(&a0.pd),
        Arc::clone(&a1.pd),
        Arc::clone(&b0.pd),
        Arc::clone(&b1.pd),
    );
    let (q0, p0) = connect(a0, b0)?;
    let (q1, p1) = connect(a1, b1)?;
    let data = |i: usize| (i * 29 + 17) as u8;
    let l = local(&ctx, &pd1, N, SIZE, data)?;
    let back = local(&ctx, &pd1, N, SIZE, |_| 0)?;
    let peer0 = local(&ctx, &pdb0, N, SIZE, |_| 0)?;
    let peer1 = local(&ctx, &pdb1, N, SIZE, |_| 0)?;
    let probe = local(&ctx, &pd0, 1, 64, |_| 0)?;
    let r1 = remote_of(&peer1)?;
    let mut q = WhileKernels::new((Rdma::new(vec![q0, q1])?, [l, back, peer0, peer1, r1, probe]));
    let inline: Vec<u8> = (0..28u8).map(|i| 0xa0 ^ i).collect();
    let mut commits = 0u32;
    // SAFETY: the handles, arrays and the inline bytes outlive the call, which returns before
    // them.
    let r = unsafe {
        weak(
            q.0.handle_addr(),
            1,
            q.1[0].handle_addr(),
            q.1[4].handle_addr(),
            q.1[1].handle_addr(),
            N as u32,
            SIZE as u32,
            inline.as_ptr(),
            inline.len() as u32,
            SIZE as u64 - 28,
            &mut commits,
        )
    };
    assert_eq!(r, DOCA_SUCCESS);
    assert_eq!(commits, 3, "weak writes, reads, the inline write");
    let mut want: Vec<u8> = (0..N * SIZE).map(data).collect();
    let buf = |i: usize| {
        q.1[i]
            .region()
            .expect("local")
            .buf()
            .to_vec(0, N * SIZE)
            .expect("read")
    };
    assert_eq!(buf(1), want, "the reads brought the writes back");
    want[SIZE - 28..SIZE].copy_from_slice(&inline);
    assert_eq!(buf(3), want, "connection 1's peer");
    assert!(
        buf(2).iter().all(|&b| b == 0),
        "nothing reached connection 0's peer"
    );
    let mut out = [0i32; 6];
    // SAFETY: the handle and the array outlive the call; `out` holds the 6 results.
    unsafe { refusals(q.0.handle_addr(), q.1[5].handle_addr(), out.as_mut_ptr()) };
    assert_eq!(
        out,
        [
            DOCA_ERROR_INVALID_VALUE,
            DOCA_ERROR_INVALID_VALUE,
            DOCA_ERROR_INVALID_VALUE,
            DOCA_ERROR_INVALID_VALUE,
            DOCA_ERROR_NOT_SUPPORTED,
            -1
        ],
        "connection 2 of 2, inline 29 and 45 bytes, read flags, get_recv of two connections"
    );
    q.0.cpu_proxy_progress();
    drop(q);
    drop((p0, p1));
    drop(dev);
    Ok(())
}

/// A handle of one connection has a receive side; a receive wait with an unknown flag is
/// refused there.
#[test]
#[cfg_attr(no_gxx, ignore = "g++ is not installed")]
fn a_one_connection_handle_receives_and_checks_its_flags() -> R {
    let refusals: RefusalsFn = sym(harness(), b"harness_rdma_refusals");
    let (dev, ctx) = device();
    let (a, b) = (end(&ctx)?, end(&ctx)?);
    let pd = Arc::clone(&a.pd);
    let (qa, qb) = connect(a, b)?;
    let q = WhileKernels::new((Rdma::new(vec![qa])?, local(&ctx, &pd, 1, 64, |_| 0)?));
    let mut out = [0i32; 6];
    // SAFETY: the handle and the array outlive the call; `out` holds the 6 results.
    unsafe { refusals(q.0.handle_addr(), q.1.handle_addr(), out.as_mut_ptr()) };
    assert_eq!(out[4], DOCA_SUCCESS, "get_recv");
    assert_eq!(
        out[5], DOCA_ERROR_INVALID_VALUE,
        "recv_wait_all with flag 7"
    );
    assert!(
        Rdma::new(Vec::new()).is_err(),
        "a handle needs a connection"
    );
    drop(q);
    drop(qb);
    drop(dev);
    Ok(())
}
