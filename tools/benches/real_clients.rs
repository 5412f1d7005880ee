//! Real clients on the model, beside the driver's own API in the same run
//! (`cargo bench -p mlx5-dpa-tools --bench real_clients`):
//!
//! - **the cost the uverbs server adds to a call**: ALLOC_PD + DEALLOC_PD and QUERY_HCA_CAP
//!   through the driver's pure-Rust kernel backend, in a program run by `mlx5-dpa run` (the
//!   ioctls go through the preloaded library and the server to the model), against the same
//!   calls through the model's DevX front door in this process;
//! - **perftest**: `ib_write_bw` (64 KiB WRITEs) and `ib_write_lat` (8-byte WRITE ping-pong,
//!   half a round trip) between two runners linked by UDP, against the same transfers between
//!   two models linked by UDP in this process through the driver's RC QPs.
//!
//! The parts that need root (a mount namespace) or perftest say why they skipped. Figures go
//! to the `cargo bench` summary table.

#[path = "../../examples/rdma_rc.rs"]
#[allow(dead_code)]
mod rdma_rc;
#[path = "../../benches/common/summary.rs"]
#[allow(unused_macros)]
mod summary;

use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mlx5_dpa::devx::{self, Devx};
use mlx5_dpa::mem::Pd;
use mlx5_dpa::mlx5::cmd::QueryHcaCap;
use mlx5_dpa::queues::{SendOp, SendWr};

/// DevX call pairs per round, and rounds (the median is reported).
const CALLS: u32 = 5_000;
const ROUNDS: usize = 5;
/// perftest iterations, and the same count for the in-process transfers.
const BW_ITERS: u32 = 1_000;
const LAT_ITERS: u32 = 1_000;
const BW_SIZE: usize = 64 * 1024;
/// Longest any one wait may take.
const WAIT: Duration = Duration::from_secs(10);

fn say(line: &str) {
    println!("{line}");
    summary::record("real_clients", line);
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// ns per ALLOC_PD + DEALLOC_PD pair and per QUERY_HCA_CAP on `ctx` (medians of ROUNDS).
fn devx_calls(ctx: &Arc<dyn Devx>) -> (f64, f64) {
    let mut pd = Vec::new();
    let mut cap = Vec::new();
    for _ in 0..ROUNDS {
        let t = Instant::now();
        for _ in 0..CALLS {
            drop(Pd::alloc(ctx).expect("ALLOC_PD"));
        }
        pd.push(t.elapsed().as_nanos() as f64 / f64::from(CALLS));
        let q = QueryHcaCap {
            cap_type: 0,
            current: true,
        };
        let t = Instant::now();
        for _ in 0..CALLS {
            devx::exec(ctx.as_ref(), &q).expect("QUERY_HCA_CAP");
        }
        cap.push(t.elapsed().as_nanos() as f64 / f64::from(CALLS));
    }
    (median(pd), median(cap))
}

/// The child run by `mlx5-dpa run`: the kernel backend on the served device.
fn child() {
    let ctx: Arc<dyn Devx> = mlx5_dpa::devx::kernel::KernelDevx::open(Some("mlx5_0"))
        .expect("the served mlx5_0 through the kernel backend");
    let (pd, cap) = devx_calls(&ctx);
    println!("child {pd:.1} {cap:.1}");
}

/// `target/<profile>/`: where `mlx5-dpa` and the preloaded library are.
fn profile_dir() -> Option<PathBuf> {
    Some(
        PathBuf::from(env!("CARGO_BIN_EXE_mlx5-dpa"))
            .parent()?
            .to_path_buf(),
    )
}

/// Builds the preloaded library for this profile; its path.
fn preload() -> Result<PathBuf, String> {
    let dir = profile_dir().ok_or("no target directory")?;
    let release = dir.file_name().is_some_and(|n| n == "release");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut c = Command::new(cargo);
    c.current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .args(["build", "-q", "-p", "mlx5-sim-preload"]);
    if release {
        c.arg("--release");
    }
    let out = c.output().map_err(|e| format!("cargo: {e}"))?;
    if !out.status.success() {
        return Err("cargo build -p mlx5-sim-preload failed".into());
    }
    let p = dir.join("libmlx5_sim_preload.so");
    p.is_file()
        .then_some(p)
        .ok_or_else(|| "no libmlx5_sim_preload.so".into())
}

/// `mlx5-dpa run [runner args] -- program...`.
fn runner(preload: &PathBuf, args: &[String], program: &[String]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_mlx5-dpa"));
    c.env("MLX5_SIM_PRELOAD", preload)
        .env_remove("RUST_LOG")
        .arg("run")
        .args(args)
        .arg("--")
        .args(program)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

/// Runs a command to its end, killed past `limit`; its stdout, or why not.
fn output(mut c: Command, limit: Duration) -> Result<String, String> {
    let mut child = c.spawn().map_err(|e| format!("spawn: {e}"))?;
    let end = Instant::now() + limit;
    loop {
        if child.try_wait().map_err(|e| e.to_string())?.is_some() {
            break;
        }
        if Instant::now() > end {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("still running after {limit:?}"));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let o = child.wait_with_output().map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    if !o.status.success() {
        return Err(format!(
            "exit {:?}: {}{}",
            o.status,
            text,
            String::from_utf8_lossy(&o.stderr)
        ));
    }
    Ok(text)
}

fn which(prog: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(prog).is_file()))
}

/// A perftest pair (server first, then the client) on two linked runners; the client's output.
fn perftest(preload: &PathBuf, tool: &str, args: &[&str], base: u16) -> Result<String, String> {
    let link = |l: u16, p: u16| format!("udp:127.0.0.1:{l},127.0.0.1:{p}");
    let tcp = (base + 2).to_string();
    let mut prog: Vec<String> = vec![tool.into(), "-x".into(), "1".into(), "-F".into()];
    prog.extend(args.iter().map(|s| s.to_string()));
    prog.extend(["-p".into(), tcp]);
    let server_args = vec![
        "--ip".into(),
        "10.9.0.1".into(),
        "--link".into(),
        link(base, base + 1),
    ];
    let server = runner(preload, &server_args, &prog)
        .spawn()
        .map_err(|e| format!("spawn: {e}"))?;
    let mut client_prog = prog.clone();
    client_prog.push("127.0.0.1".into());
    let client_args = vec![
        "--ip".into(),
        "10.9.0.2".into(),
        "--link".into(),
        link(base + 1, base),
    ];
    // The client retries while the server is not listening yet.
    let mut last = String::new();
    for _ in 0..50 {
        std::thread::sleep(Duration::from_millis(200));
        match output(
            runner(preload, &client_args, &client_prog),
            Duration::from_secs(120),
        ) {
            Ok(t) => {
                let _ = output_of(server);
                return Ok(t);
            }
            Err(e) if e.contains("Couldn't connect") || e.contains("Unable to open") => last = e,
            Err(e) => {
                let _ = kill(server);
                return Err(e);
            }
        }
    }
    let _ = kill(server);
    Err(last)
}

fn output_of(mut c: std::process::Child) -> Option<std::process::ExitStatus> {
    let end = Instant::now() + Duration::from_secs(30);
    while Instant::now() < end {
        if let Ok(Some(s)) = c.try_wait() {
            return Some(s);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    kill(c)
}

fn kill(mut c: std::process::Child) -> Option<std::process::ExitStatus> {
    let _ = c.kill();
    c.wait().ok()
}

/// The numbers of perftest's result line for messages of `size` bytes.
fn result_line(out: &str, size: usize) -> Option<Vec<f64>> {
    out.lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|w| w.first() == Some(&size.to_string().as_str()) && w.len() >= 4)
        .map(|w| w.iter().filter_map(|x| x.parse().ok()).collect())
}

/// Two models in this process, each on a UDP port linked to the other's (as two runners are),
/// with a connected RC QP pair through the driver.
fn linked_pair(
    base: u16,
) -> (
    mlx5_sim::Device,
    mlx5_sim::Device,
    rdma_rc::Side,
    rdma_rc::Side,
) {
    let addr = |p: u16| SocketAddrV4::new(Ipv4Addr::LOCALHOST, p);
    let dev = |ip: [u8; 4], l: u16, p: u16| {
        let d = mlx5_sim::Device::with_profile("bf3").expect("bf3");
        d.set_port_address([0x02, 0, ip[0], ip[1], ip[2], ip[3]], ip);
        let port = mlx5_sim::port::udp::UdpPort::open(addr(l), addr(p)).expect("UDP port");
        d.set_port(mlx5_sim::PortMode::Udp(port));
        d.start_engine();
        d
    };
    let da = dev([10, 9, 1, 1], base, base + 1);
    let db = dev([10, 9, 1, 2], base + 1, base);
    let (ca, cb) = (da.open_devx(), db.open_devx());
    let mut a = rdma_rc::Side::new(&ca).expect("side a");
    let mut b = rdma_rc::Side::new(&cb).expect("side b");
    rdma_rc::connect(&mut a, &mut b, false).expect("connect");
    (da, db, a, b)
}

/// MB/s of BW_ITERS 64 KiB WRITEs from `a` to `b`, up to 32 in flight.
fn driver_write_bw(a: &mut rdma_rc::Side, b: &rdma_rc::Side) -> f64 {
    let remote = mlx5_dpa::queues::RemoteAddr {
        addr: b.mr.addr(),
        rkey: b.mr.rkey(),
    };
    let sge = [a.mr.sge(0, BW_SIZE).expect("sge")];
    let (mut posted, mut done) = (0u32, 0u32);
    let t = Instant::now();
    while done < BW_ITERS {
        while posted < BW_ITERS && posted - done < 32 {
            let wr = SendWr::new(
                u64::from(posted),
                SendOp::Write {
                    sges: &sge,
                    remote,
                    imm: None,
                },
            );
            a.qp.post_send(&wr).expect("post");
            posted += 1;
        }
        a.qp.ring_send_doorbell();
        let c = a
            .send_cq
            .poll_timeout(WAIT)
            .expect("a completion in time")
            .expect("WRITE completed");
        a.qp.complete_send(c.wqe_counter).expect("retire");
        done += 1;
    }
    (f64::from(BW_ITERS) * BW_SIZE as f64) / t.elapsed().as_secs_f64() / 1e6
}

/// Waits until 8 bytes at `off` of `s`'s region read `v`.
fn wait_value(s: &rdma_rc::Side, off: usize, v: u64) {
    let end = Instant::now() + WAIT;
    let mut b = [0u8; 8];
    loop {
        s.mr.buf().read(off, &mut b).expect("read");
        if u64::from_le_bytes(b) == v {
            return;
        }
        assert!(Instant::now() < end, "the peer's WRITE did not land");
        std::hint::spin_loop();
    }
}

/// One 8-byte WRITE of `v` from `from`'s region at `off` into `to`'s at `off`.
fn write8(from: &mut rdma_rc::Side, to: &rdma_rc::Side, off: usize, v: u64) {
    from.mr.write(off, &v.to_le_bytes()).expect("write");
    let remote = mlx5_dpa::queues::RemoteAddr {
        addr: to.mr.addr() + off as u64,
        rkey: to.mr.rkey(),
    };
    let sge = [from.mr.sge(off, 8).expect("sge")];
    from.qp
        .post_send(&SendWr::new(
            v,
            SendOp::Write {
                sges: &sge,
                remote,
                imm: None,
            },
        ))
        .expect("post");
    from.qp.ring_send_doorbell();
}

/// Median µs of half a WRITE ping-pong round trip (what ib_write_lat reports as t_typical).
fn driver_write_lat(a: &mut rdma_rc::Side, b: &mut rdma_rc::Side) -> f64 {
    let mut v = Vec::with_capacity(LAT_ITERS as usize);
    for i in 1..=u64::from(LAT_ITERS) {
        let t = Instant::now();
        write8(a, b, 0, i);
        wait_value(b, 0, i);
        write8(b, a, 8, i);
        wait_value(a, 8, i);
        v.push(t.elapsed().as_secs_f64() * 1e6 / 2.0);
        for s in [&mut *a, &mut *b] {
            let c = s.send_cq.poll_timeout(WAIT).expect("in time").expect("ok");
            s.qp.complete_send(c.wqe_counter).expect("retire");
        }
    }
    median(v)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.iter().any(|a| a == "--child") {
        child();
        return;
    }
    if args.iter().any(|a| a == "--list") {
        return;
    }
    let filter: Vec<&String> = args
        .iter()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    if !filter.is_empty() && !filter.iter().any(|f| "real_clients".contains(f.as_str())) {
        return;
    }
    say("real clients on the model (uverbs server), beside the driver's own API, same run:");

    // DevX calls: the model's front door here, the kernel backend through the server there.
    let d = mlx5_sim::Device::with_profile("bf3").expect("bf3");
    d.start_engine();
    let (pd_direct, cap_direct) = devx_calls(&d.open_devx());
    let pre = preload();
    let me = std::env::current_exe().expect("this bench's path");
    let served = pre.as_ref().map_err(Clone::clone).and_then(|p| {
        let prog = vec![me.display().to_string(), "--child".to_string()];
        let out = output(runner(p, &[], &prog), Duration::from_secs(300))?;
        let w: Vec<f64> = out
            .lines()
            .find_map(|l| l.strip_prefix("child "))
            .map(|r| {
                r.split_whitespace()
                    .filter_map(|x| x.parse().ok())
                    .collect()
            })
            .ok_or_else(|| format!("no figures in {out:?}"))?;
        if w.len() == 2 {
            Ok((w[0], w[1]))
        } else {
            Err(format!("no figures in {out:?}"))
        }
    });
    match served {
        Ok((pd, cap)) => {
            say(&format!(
                "  ALLOC_PD + DEALLOC_PD  {pd:>9.0} ns through the server   {pd_direct:>7.0} ns front door   ({:.1}x, +{:.0} ns a pair)",
                pd / pd_direct,
                pd - pd_direct
            ));
            say(&format!(
                "  QUERY_HCA_CAP          {cap:>9.0} ns through the server   {cap_direct:>7.0} ns front door   ({:.1}x, +{:.0} ns a call)",
                cap / cap_direct,
                cap - cap_direct
            ));
        }
        Err(e) => say(&format!(
            "  DevX calls through the server: skipped ({e}); front door: ALLOC_PD + DEALLOC_PD {pd_direct:.0} ns, QUERY_HCA_CAP {cap_direct:.0} ns"
        )),
    }
    drop(d);

    // Transfers: perftest between two runners, the driver between two models here.
    let base = 23_000 + (std::process::id() % 1_000) as u16 * 8;
    let (da, db, mut a, mut b) = linked_pair(base);
    let bw = driver_write_bw(&mut a, &b);
    let lat = driver_write_lat(&mut a, &mut b);
    drop((a, b));
    da.stop_engine();
    db.stop_engine();
    let perf = match (&pre, which("ib_write_bw") && which("ib_write_lat")) {
        (Err(e), _) => Err(e.clone()),
        (Ok(_), false) => Err("perftest is not installed".to_string()),
        (Ok(p), true) => {
            let size = BW_SIZE.to_string();
            let n = BW_ITERS.to_string();
            let bw_out = perftest(p, "ib_write_bw", &["-s", &size, "-n", &n], base + 4);
            let n = LAT_ITERS.to_string();
            let lat_out = perftest(p, "ib_write_lat", &["-s", "8", "-n", &n], base + 8);
            bw_out.and_then(|bo| {
                let lo = lat_out?;
                let b = result_line(&bo, BW_SIZE).ok_or_else(|| format!("no result in {bo}"))?;
                let l = result_line(&lo, 8).ok_or_else(|| format!("no result in {lo}"))?;
                // ib_write_bw: bytes, iterations, peak, average MB/s; ib_write_lat: bytes,
                // iterations, min, max, typical µs.
                Ok((b[3], l[4]))
            })
        }
    };
    match perf {
        Ok((pbw, plat)) => {
            say(&format!(
                "  64 KiB RDMA WRITE      {pbw:>9.1} MB/s ib_write_bw        {bw:>7.1} MB/s driver  ({:.2}x)",
                pbw / bw
            ));
            say(&format!(
                "  8 B WRITE ping-pong    {plat:>9.1} us ib_write_lat       {lat:>7.1} us driver  ({:.2}x; half a round trip)",
                plat / lat
            ));
        }
        Err(e) => say(&format!(
            "  perftest: skipped ({e}); the driver between two UDP-linked models: 64 KiB WRITE {bw:.1} MB/s, 8 B ping-pong {lat:.1} us"
        )),
    }
}
