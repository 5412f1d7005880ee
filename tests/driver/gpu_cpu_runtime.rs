//! CUDA kernel sources run as they are written, on CPU threads against the device model: the
//! CPU runtime for CUDA kernels (`tests/gpu/cpu/cuda_runtime.h`: blocks one after another,
//! each block's threads as CPU threads, `__syncthreads` a barrier) and g++ build a kernel file
//! with its own host launch functions into a library, after nvcc's one rewrite of the launch
//! syntax (`kernel<<<config>>>(args)` into a runtime call, in a scratch copy). The test then
//! calls the file's launch functions as its host program would.
//!
//! Run always: this project's corpus kernels (`tests/gpu/corpus`), the low-level Verbs writes
//! of 16 threads and DOCA 2.6's RDMA server and client kernels against each other. Run with a
//! checkout of NVIDIA's public GPUNetIO repository (`GPUNETIO_CHECKOUT=DIR cargo test --test
//! driver gpu_cpu_runtime -- --ignored`; never committed here): its three example kernels,
//! unmodified (put_bw, write_bw, write_lat), each checked in the peer's memory.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mlx5_dpa::devx::Devx;
use mlx5_dpa::gpu::{Rdma, VerbsQp};
use mlx5_dpa::mem::{Access, MemoryRegion, Pd};

use crate::gpu::{sym, WhileKernels, DOCA_SUCCESS};
use crate::gpu_rdma::{connect, device, end_sized, end_with, local, remote_of};

type R = Result<(), Box<dyn std::error::Error>>;

/// nvcc's one rewrite of the launch syntax: each `kernel<<<config>>>` (the kernel an
/// identifier, perhaps qualified, perhaps with template arguments) becomes
/// `mlx5_cpu_cuda::launch(kernel, config)`; the call's arguments follow as they were.
fn rewrite_launches(src: &str) -> Result<String, String> {
    let mut out = String::with_capacity(src.len());
    let mut rest = src;
    while let Some(at) = rest.find("<<<") {
        let end = rest[at..]
            .find(">>>")
            .map(|e| at + e)
            .ok_or("a launch without its >>>")?;
        let head = rest[..at].trim_end();
        let b = head.as_bytes();
        let mut start = head.len();
        if b.last() == Some(&b'>') {
            // Template arguments: back to the matching '<'.
            let mut depth = 0i32;
            loop {
                if start == 0 {
                    return Err("unbalanced template arguments before <<<".into());
                }
                start -= 1;
                match b[start] {
                    b'>' => depth += 1,
                    b'<' => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    _ => {}
                }
            }
            while start > 0 && b[start - 1].is_ascii_whitespace() {
                start -= 1;
            }
        }
        let name_end = start;
        while start > 0 && (b[start - 1].is_ascii_alphanumeric() || b"_:".contains(&b[start - 1])) {
            start -= 1;
        }
        if start == name_end {
            return Err(format!("no kernel name before <<< at byte {at}"));
        }
        out.push_str(&head[..start]);
        out.push_str("mlx5_cpu_cuda::launch(");
        out.push_str(&head[start..]);
        out.push_str(", ");
        out.push_str(&rest[at + 3..end]);
        out.push(')');
        rest = &rest[end + 3..];
    }
    out.push_str(rest);
    Ok(out)
}

#[test]
fn launches_become_runtime_calls_and_nothing_else_changes() {
    let src = "a = b << 2;\nput_bw<SCOPE_THREAD><<<blocks, threads, 0, stream>>>(qp, n);\n\
               write_lat<true, H>\n    <<<1, 1, 0, s>>>(qp);\nns::k<<<g, b>>>();\n";
    assert_eq!(
        rewrite_launches(src).unwrap(),
        "a = b << 2;\nmlx5_cpu_cuda::launch(put_bw<SCOPE_THREAD>, blocks, threads, 0, stream)(qp, n);\n\
         mlx5_cpu_cuda::launch(write_lat<true, H>, 1, 1, 0, s)(qp);\nmlx5_cpu_cuda::launch(ns::k, g, b)();\n"
    );
    assert!(rewrite_launches("k<<<1, 1(x);").is_err());
    assert!(rewrite_launches("  <<<1, 1>>>(x);").is_err());
}

/// Builds `kernel` (a .cu file) for the CPU runtime into a library: the launches rewritten in a
/// scratch copy, host C++ with `include` dirs after the runtime's and the GPUNetIO headers'.
/// `strict`: warnings are errors (this project's kernels; NVIDIA's build as they are).
fn build(kernel: &Path, include: &[&Path], strict: bool) -> libloading::Library {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let name = kernel.file_stem().unwrap().to_string_lossy().into_owned();
    let scratch =
        std::env::temp_dir().join(format!("mlx5-dpa-cpu-cuda-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&scratch).unwrap();
    let src = std::fs::read_to_string(kernel).unwrap();
    let rewritten = rewrite_launches(&src).unwrap_or_else(|e| panic!("{}: {e}", kernel.display()));
    let copy = scratch.join(format!("{name}.cpp"));
    std::fs::write(&copy, rewritten).unwrap();
    let lib = scratch.join(format!("lib{name}.so"));
    let mut cmd = std::process::Command::new("g++");
    cmd.args(["-std=c++17", "-O2", "-shared", "-fPIC", "-pthread"])
        .arg("-DDOCA_GPUNETIO_ETH_POLL_TIMEOUT_NS=60000000000ull")
        .args(["-include", "cuda_runtime.h", "-I"])
        .arg(root.join("tests/gpu/cpu"))
        .arg("-I")
        .arg(root.join("src/gpu/include"));
    if strict {
        cmd.args(["-Wall", "-Wextra", "-Werror"]);
    }
    for dir in include {
        cmd.arg("-I").arg(dir);
    }
    let out = cmd
        .arg(&copy)
        .arg("-o")
        .arg(&lib)
        .output()
        .expect("g++ runs");
    assert!(
        out.status.success(),
        "{} does not build for the CPU runtime:\n{}",
        kernel.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    // SAFETY: the library is the kernel file just built; its initialisers are the C++
    // runtime's and the file's static objects.
    let l = unsafe { libloading::Library::new(&lib) }.expect("load the kernel library");
    let _ = std::fs::remove_dir_all(&scratch);
    l
}

fn corpus(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/gpu/corpus")
        .join(name)
}

const ACCESS: Access = Access::LOCAL_WRITE
    .union(Access::REMOTE_READ)
    .union(Access::REMOTE_WRITE);

/// A region of `len` bytes on `pd`, filled with `fill(i)` at byte i.
fn region(
    ctx: &Arc<dyn Devx>,
    pd: &Arc<Pd>,
    len: usize,
    fill: impl Fn(usize) -> u8,
) -> Result<MemoryRegion, Box<dyn std::error::Error>> {
    let mr = MemoryRegion::alloc(ctx, pd, len, ACCESS)?;
    mr.write(0, &(0..len).map(fill).collect::<Vec<u8>>())?;
    Ok(mr)
}

/// Two connected QPs (the first rung by the kernel, the second by the CPU proxy) with rings of
/// `2^log`, their protection domains, and a region of `len` bytes on each side (the first's
/// filled, the second's zero).
struct Pair {
    qa: VerbsQp,
    qb: VerbsQp,
    ma: MemoryRegion,
    mb: MemoryRegion,
    pa: Arc<Pd>,
    pb: Arc<Pd>,
}

fn pair(ctx: &Arc<dyn Devx>, log: u8, len: usize) -> Result<Pair, Box<dyn std::error::Error>> {
    pair_with(ctx, log, len, false)
}

/// As [`pair`], the send CQs collapsed with `collapsed`.
fn pair_with(
    ctx: &Arc<dyn Devx>,
    log: u8,
    len: usize,
    collapsed: bool,
) -> Result<Pair, Box<dyn std::error::Error>> {
    let (a, b) = (
        end_with(ctx, log, collapsed)?,
        end_with(ctx, log, collapsed)?,
    );
    let (pa, pb) = (Arc::clone(&a.pd), Arc::clone(&b.pd));
    let (qa, qb) = connect(a, b)?;
    let ma = region(ctx, &pa, len, |i| (i * 37 + 11) as u8)?;
    let mb = region(ctx, &pb, len, |_| 0)?;
    Ok(Pair {
        qa,
        qb,
        ma,
        mb,
        pa,
        pb,
    })
}

type WriteChunksFn =
    unsafe extern "C" fn(usize, u32, u64, u32, u32, u64, u32, u64, u32, *mut i32) -> i32;

/// The corpus's low-level Verbs kernel (write_bw's shape), launched as written: one block of
/// 16 threads, 64 writes, the last thread submitting for all and polling the last CQE. Each
/// thread's chunk lands in the peer's region byte for byte.
#[test]
#[cfg_attr(no_gxx, ignore = "g++ is not installed")]
fn the_corpus_verbs_kernel_runs_as_launched() -> R {
    const THREADS: usize = 16;
    const SIZE: usize = 256;
    let lib = build(&corpus("verbs_lowlevel.cu"), &[], true);
    let launch: WriteChunksFn = sym(&lib, b"verbs_lowlevel_write_chunks");
    let (_dev, ctx) = device();
    let p = pair(&ctx, 7, THREADS * SIZE)?;
    let q = WhileKernels::new((p.qa, p.qb, p.ma, p.mb));
    let mut status = [-1i32; 2];
    // SAFETY: the handle and regions outlive the call, which returns when the grid is done;
    // `status` holds the kernel's 2 words.
    let r = unsafe {
        launch(
            0,
            THREADS as u32,
            q.0.handle_addr(),
            64,
            SIZE as u32,
            q.2.addr(),
            q.2.lkey().0.to_be(),
            q.3.addr(),
            q.3.rkey().0.to_be(),
            status.as_mut_ptr(),
        )
    };
    assert_eq!(r, 0, "the launch");
    assert_eq!(status[0], 0, "the last CQE");
    assert_eq!(
        q.3.buf().to_vec(0, THREADS * SIZE)?,
        q.2.buf().to_vec(0, THREADS * SIZE)?,
        "every thread's chunk"
    );
    assert_eq!(q.0.producer_index(), 64);
    Ok(())
}

type ServerFn = unsafe extern "C" fn(usize, u32, u64, u64, u64, *mut u32, *mut i32) -> i32;
type ClientFn = unsafe extern "C" fn(usize, u32, u64, u64, u64, u64, usize, *mut i32) -> i32;

/// The corpus's DOCA 2.6 RDMA kernels, server and client of 8 threads each, launched from two
/// host threads: every client thread's write with immediate lands in its buffer on the server,
/// each consuming one of the server's receives, whose immediates are the thread indexes.
#[test]
#[cfg_attr(no_gxx, ignore = "g++ is not installed")]
fn the_corpus_26_rdma_kernels_run_against_each_other() -> R {
    const THREADS: usize = 8;
    const SIZE: usize = 128;
    let lib = Arc::new(build(&corpus("rdma_v26.cu"), &[], true));
    let server: ServerFn = sym(&lib, b"rdma_v26_server");
    let client: ClientFn = sym(&lib, b"rdma_v26_client");
    let (dev, ctx) = device();
    let (c_end, s_end) = (end_sized(&ctx, 6)?, end_sized(&ctx, 6)?);
    let (c_pd, s_pd) = (Arc::clone(&c_end.pd), Arc::clone(&s_end.pd));
    let (cq, sq) = connect(c_end, s_end)?;
    let data = |i: usize| (i * 13 + 7) as u8;
    let src = local(&ctx, &c_pd, THREADS, SIZE, data)?;
    let cflag = local(&ctx, &c_pd, 1, 64, |_| 0)?;
    let dst = local(&ctx, &s_pd, THREADS, SIZE, |_| 0)?;
    let sflag = local(&ctx, &s_pd, 1, 64, |_| 1)?;
    let (rdst, rflag) = (remote_of(&dst)?, remote_of(&cflag)?);
    let mut q = WhileKernels::new((
        Rdma::new(vec![cq])?,
        Rdma::new(vec![sq])?,
        [src, cflag, dst, sflag, rdst, rflag],
    ));
    let h = |i: usize| q.2[i].handle_addr();
    let (hsrc, hcflag, hsflag, hrdst, hrflag) = (h(0), h(1), h(3), h(4), h(5));
    let (c_rdma, s_rdma) = (q.0.handle_addr(), q.1.handle_addr());
    let l2 = Arc::clone(&lib);
    let srv = q.spawn(move || {
        let _lib = l2;
        let (mut imm, mut status) = ([u32::MAX; THREADS], [-1i32; 2]);
        // SAFETY: the handles and arrays outlive the launch (WhileKernels keeps them while
        // this thread runs); `imm` and `status` have the room the kernel uses.
        let r = unsafe {
            server(
                0,
                THREADS as u32,
                s_rdma,
                hsflag,
                hrflag,
                imm.as_mut_ptr(),
                status.as_mut_ptr(),
            )
        };
        (r, imm, status)
    });
    let l3 = Arc::clone(&lib);
    let cli = q.spawn(move || {
        let _lib = l3;
        let mut status = [-1i32; 2 + THREADS];
        // SAFETY: as for the server; `status` has room for 2 + THREADS words.
        let r = unsafe {
            client(
                0,
                THREADS as u32,
                c_rdma,
                hcflag,
                hsrc,
                hrdst,
                SIZE,
                status.as_mut_ptr(),
            )
        };
        (r, status)
    });
    let start = Instant::now();
    while !srv.is_finished() {
        q.1.cpu_proxy_progress();
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "the server kernel did not end"
        );
        std::thread::yield_now();
    }
    let (sr, imm, sstatus) = srv.join().expect("server");
    let (cr, cstatus) = cli.join().expect("client");
    assert_eq!((sr, cr), (0, 0), "the launches");
    assert_eq!(
        sstatus,
        [DOCA_SUCCESS, THREADS as i32],
        "server: result, receives"
    );
    assert_eq!(cstatus[..2], [DOCA_SUCCESS, 1], "client: result, commits");
    assert!(
        cstatus[2..].iter().all(|&s| s == DOCA_SUCCESS),
        "{cstatus:?}"
    );
    let mut got = imm.to_vec();
    got.sort_unstable();
    assert_eq!(got, (0..THREADS as u32).collect::<Vec<_>>(), "immediates");
    assert_eq!(
        q.2[2]
            .region()
            .expect("local")
            .buf()
            .to_vec(0, THREADS * SIZE)?,
        (0..THREADS * SIZE).map(data).collect::<Vec<u8>>(),
        "every thread's buffer on the server"
    );
    drop(q);
    drop(dev);
    Ok(())
}

/// The checkout of NVIDIA's public GPUNetIO repository named by `GPUNETIO_CHECKOUT`.
fn checkout() -> PathBuf {
    let dir = std::env::var_os("GPUNETIO_CHECKOUT")
        .map(PathBuf::from)
        .expect(
        "GPUNETIO_CHECKOUT: a checkout of github.com/NVIDIA-DOCA/gpunetio (never committed here)",
    );
    assert!(
        dir.join("examples").is_dir(),
        "{}: no examples/ (a checkout of NVIDIA-DOCA/gpunetio?)",
        dir.display()
    );
    dir
}

/// Builds NVIDIA's example kernel `name` (examples/NAME/NAME_kernel.cu), unmodified but for the
/// launch rewrite, with empty stand-ins for the host-only DOCA headers its common header
/// includes and DOCA_LOG printing.
fn public_kernel(name: &str) -> libloading::Library {
    let src = checkout();
    let standins =
        std::env::temp_dir().join(format!("mlx5-dpa-gpunetio-standins-{}", std::process::id()));
    std::fs::create_dir_all(&standins).unwrap();
    for h in [
        "doca_verbs.h",
        "doca_gpunetio.h",
        "doca_gpunetio_high_level.h",
    ] {
        std::fs::write(
            standins.join(h),
            "/* empty stand-in for a host-only header */\n",
        )
        .unwrap();
    }
    std::fs::write(
        standins.join("doca_internal.hpp"),
        "#pragma once\n#define LOG_ERR 0\n#define LOG_INFO 1\n\
         #define DOCA_LOG(level, ...) printf(__VA_ARGS__)\n",
    )
    .unwrap();
    let kernel = src
        .join("examples")
        .join(name)
        .join(format!("{name}_kernel.cu"));
    build(&kernel, &[&standins, &src.join("examples")], false)
}

/// DOCA_GPUNETIO_VERBS_EXEC_SCOPE_THREAD and the NIC handlers (NVIDIA's public values).
const SCOPE_THREAD: u32 = 0;
const HANDLER_CPU_PROXY: u32 = 1;
const HANDLER_GPU_SM_DB: u32 = 2;

type PutBwFn = unsafe extern "C" fn(usize, u64, u32, u32, u32, u32, u64, u32, u64, u32, u32) -> i32;

/// NVIDIA's put_bw kernel, unmodified, at thread scope: 2 blocks of 16 threads, 128 puts
/// (`doca_gpu_dev_verbs_put` on a shared QP, each thread polling its own CQE); each thread's
/// chunk lands in the peer's region.
#[test]
#[ignore = "needs a checkout of NVIDIA-DOCA/gpunetio: GPUNETIO_CHECKOUT=DIR ... -- --ignored"]
fn nvidias_put_bw_kernel_runs_on_the_model() -> R {
    const THREADS: usize = 32;
    const SIZE: usize = 512;
    let lib = public_kernel("gpunetio_verbs_put_bw");
    let put_bw: PutBwFn = sym(&lib, b"gpunetio_verbs_put_bw");
    let (_dev, ctx) = device();
    let p = pair(&ctx, 6, THREADS * SIZE)?;
    let q = WhileKernels::new((p.qa, p.qb, p.ma, p.mb));
    // SAFETY: the handle and regions outlive the call, which returns when the grid is done.
    let r = unsafe {
        put_bw(
            0,
            q.0.handle_addr(),
            128,
            2,
            (THREADS / 2) as u32,
            SIZE as u32,
            q.2.addr(),
            q.2.lkey().0.to_be(),
            q.3.addr(),
            q.3.rkey().0.to_be(),
            SCOPE_THREAD,
        )
    };
    assert_eq!(r, DOCA_SUCCESS);
    assert_eq!(q.0.producer_index(), 128, "every put submitted");
    assert_eq!(
        q.3.buf().to_vec(0, THREADS * SIZE)?,
        q.2.buf().to_vec(0, THREADS * SIZE)?
    );
    Ok(())
}

type WriteBwFn = unsafe extern "C" fn(usize, u64, u32, u32, u32, u32, u64, u32, u64, u32) -> i32;

/// NVIDIA's write_bw kernel, unmodified: one block of 32 threads, 256 writes prepared with the
/// low-level calls, the last thread submitting each round and polling the last CQE.
#[test]
#[ignore = "needs a checkout of NVIDIA-DOCA/gpunetio: GPUNETIO_CHECKOUT=DIR ... -- --ignored"]
fn nvidias_write_bw_kernel_runs_on_the_model() -> R {
    const THREADS: usize = 32;
    const SIZE: usize = 1024;
    let lib = public_kernel("gpunetio_verbs_write_bw");
    let write_bw: WriteBwFn = sym(&lib, b"gpunetio_verbs_write_bw");
    let (_dev, ctx) = device();
    // The kernel's own rule: the QP holds every WQE of the loop.
    let p = pair(&ctx, 8, THREADS * SIZE)?;
    let q = WhileKernels::new((p.qa, p.qb, p.ma, p.mb));
    // SAFETY: the handle and regions outlive the call, which returns when the grid is done.
    let r = unsafe {
        write_bw(
            0,
            q.0.handle_addr(),
            256,
            1,
            THREADS as u32,
            SIZE as u32,
            q.2.addr(),
            q.2.lkey().0.to_be(),
            q.3.addr(),
            q.3.rkey().0.to_be(),
        )
    };
    assert_eq!(r, DOCA_SUCCESS);
    assert_eq!(q.0.producer_index(), 256, "every write submitted");
    assert_eq!(
        q.3.buf().to_vec(0, THREADS * SIZE)?,
        q.2.buf().to_vec(0, THREADS * SIZE)?
    );
    Ok(())
}

type WriteLatFn = unsafe extern "C" fn(
    usize,
    u64,
    u32,
    u32,
    u32,
    u32,
    u64,
    u32,
    u64,
    u32,
    u64,
    u32,
    u32,
    bool,
) -> i32;

/// NVIDIA's write_lat kernel, unmodified: client (the kernel ringing) and server (the CPU
/// proxy ringing) ping-pong 200 writes of 64 bytes, each polling for the other's count in
/// the last byte; both end with the other's final count there. The send CQs are collapsed,
/// as the sample creates them: the kernel polls only the last completion.
#[test]
#[ignore = "needs a checkout of NVIDIA-DOCA/gpunetio: GPUNETIO_CHECKOUT=DIR ... -- --ignored"]
fn nvidias_write_lat_kernel_runs_on_the_model() -> R {
    const ITERS: u32 = 200;
    const SIZE: usize = 64;
    let lib = Arc::new(public_kernel("gpunetio_verbs_write_lat"));
    let write_lat: WriteLatFn = sym(&lib, b"gpunetio_verbs_write_lat");
    let (_dev, ctx) = device();
    // As NVIDIA's sample makes them: send CQs collapsed (the kernel polls only the last).
    let Pair { qa, qb, pa, pb, .. } = pair_with(&ctx, 6, 64, true)?;
    let side = |pd: &Arc<Pd>| -> Result<(MemoryRegion, MemoryRegion), Box<dyn std::error::Error>> {
        Ok((
            region(&ctx, pd, SIZE, |_| 0)?,
            region(&ctx, pd, SIZE, |_| 0)?,
        ))
    };
    let ((a_poll, a_post), (b_poll, b_post)) = (side(&pa)?, side(&pb)?);
    let mut q = WhileKernels::new((qa, qb, [a_poll, a_post, b_poll, b_post]));
    let run = |qp: u64, poll: &MemoryRegion, post: &MemoryRegion, dst: &MemoryRegion, h: u32| {
        let args = (
            qp,
            poll.addr(),
            poll.lkey().0.to_be(),
            post.addr(),
            post.lkey().0.to_be(),
            dst.addr(),
            dst.rkey().0.to_be(),
            h,
        );
        let l = Arc::clone(&lib);
        move |client: bool| {
            let _lib = l;
            // SAFETY: the handle and regions outlive the call (WhileKernels keeps them while
            // this thread runs).
            unsafe {
                write_lat(
                    0,
                    args.0,
                    ITERS,
                    1,
                    1,
                    SIZE as u32,
                    args.1,
                    args.2,
                    args.3,
                    args.4,
                    args.5,
                    args.6,
                    args.7,
                    client,
                )
            }
        }
    };
    let m = &q.2;
    let client = run(q.0.handle_addr(), &m[0], &m[1], &m[2], HANDLER_GPU_SM_DB);
    let server = run(q.1.handle_addr(), &m[2], &m[3], &m[0], HANDLER_CPU_PROXY);
    let c = q.spawn(move || client(true));
    let s = q.spawn(move || server(false));
    let start = Instant::now();
    while !(c.is_finished() && s.is_finished()) {
        q.1.cpu_proxy_progress();
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "the ping-pong did not end"
        );
        std::thread::yield_now();
    }
    assert_eq!(c.join().expect("client"), DOCA_SUCCESS);
    assert_eq!(s.join().expect("server"), DOCA_SUCCESS);
    for (i, who) in [
        (0, "the client's poll buffer"),
        (2, "the server's poll buffer"),
    ] {
        assert_eq!(
            q.2[i].buf().to_vec(SIZE - 1, 1)?,
            [ITERS as u8],
            "{who}: the other's last count"
        );
    }
    assert_eq!(q.0.producer_index(), u64::from(ITERS));
    assert_eq!(q.1.producer_index(), u64::from(ITERS));
    Ok(())
}
