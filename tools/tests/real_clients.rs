//! Unmodified clients of an mlx5 device on the model, through `mlx5-dpa run`: rdma-core's
//! programs (`ibv_devices`, `ibv_devinfo`, the pingpongs), perftest, DPDK's testpmd,
//! rdma-core's own test suite (pyverbs), and this project's driver on its pure-Rust kernel
//! backend (and on rdma-core, in a build with `--features rdma-core`). Each test checks the
//! client's own success output.
//!
//! What a test needs is looked for when the binary starts: the right to make a mount namespace
//! (root), the preloaded library (built here with cargo if missing), and the client programs
//! (Debian's `ibverbs-utils`, `perftest`, `python3-pyverbs`, `tshark`, `dpdk-dev`). A test
//! whose needs are missing is reported *ignored* and listed, with the reason, in a skip summary
//! on standard error; it never passes without running. `.ci/run` installs the packages.
//!
//! Two-process tests run two runners whose ports are linked by UDP on 127.0.0.1 (`--link`), each
//! with its own IPv4 address (its GID 1); the pair exchange QP numbers over TCP on loopback as
//! the programs always do. Every wait is bounded: a process that outlives its limit is killed
//! (with its process group) and the test fails saying so.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::{Duration, Instant};

use libtest_mimic::{Arguments, Failed, Trial};

/// How long one client process may run.
const LIMIT: Duration = Duration::from_secs(120);

fn mlx5_dpa() -> &'static str {
    env!("CARGO_BIN_EXE_mlx5-dpa")
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Builds the library of `package` with cargo (a no-op when it is up to date) into this
/// profile's target directory, and returns the path of `file` there.
fn build_lib(package: &str, file: &str) -> Result<PathBuf, String> {
    let exe = PathBuf::from(mlx5_dpa());
    let dir = exe.parent().ok_or("no target directory")?.to_path_buf();
    let release = dir.file_name().is_some_and(|n| n == "release");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut c = Command::new(cargo);
    c.current_dir(repo()).args(["build", "-q", "-p", package]);
    if release {
        c.arg("--release");
    }
    let out = c.output().map_err(|e| format!("cargo: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "cargo build -p {package} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let p = dir.join(file);
    p.is_file()
        .then_some(p)
        .ok_or_else(|| format!("{file} was not built"))
}

/// The preloaded library that puts a program on the served device.
fn preload() -> Result<PathBuf, String> {
    build_lib("mlx5-sim-preload", "libmlx5_sim_preload.so")
}

fn which(prog: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(prog))
        .find(|p| p.is_file())
}

/// What this machine offers the tests.
struct Env {
    preload: PathBuf,
    /// Why nothing can run (no namespace, no library), if so.
    blocked: Option<String>,
}

impl Env {
    fn probe() -> Env {
        let preload = match preload() {
            Ok(p) => p,
            Err(e) => {
                return Env {
                    preload: PathBuf::new(),
                    blocked: Some(e),
                }
            }
        };
        let mut env = Env {
            preload,
            blocked: None,
        };
        match env.run(&Runner::single(), &["true"]) {
            Ok(o) if o.status.success() => {}
            Ok(o) => {
                env.blocked = Some(format!(
                    "mlx5-dpa run cannot set up its namespace here: {}",
                    String::from_utf8_lossy(&o.stderr).trim()
                ))
            }
            Err(e) => env.blocked = Some(e.message().unwrap_or("mlx5-dpa run failed").to_string()),
        }
        env
    }

    fn command(&self, r: &Runner, program: &[&str]) -> Command {
        let mut c = Command::new(mlx5_dpa());
        if let Some(f) = &r.capture {
            c.arg("--capture").arg(f);
        }
        c.env("MLX5_SIM_PRELOAD", &self.preload)
            .env_remove("RUST_LOG")
            .arg("run")
            .args(r.args())
            .arg("--")
            .args(program)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        // Its own process group, so a process that outlives its limit goes with its children.
        std::os::unix::process::CommandExt::process_group(&mut c, 0);
        c
    }

    fn run(&self, r: &Runner, program: &[&str]) -> Result<Output, Failed> {
        let child = self
            .command(r, program)
            .spawn()
            .map_err(|e| format!("spawn {program:?}: {e}"))?;
        wait(child, LIMIT, program)
    }
}

/// Waits for a child at most `limit`; past it the whole process group is killed.
fn wait(mut child: Child, limit: Duration, what: &[&str]) -> Result<Output, Failed> {
    let end = Instant::now() + limit;
    // Drain both pipes on threads, so a chatty child never blocks on a full pipe.
    let mut so = child.stdout.take();
    let mut se = child.stderr.take();
    let t1 = std::thread::spawn(move || {
        let mut v = Vec::new();
        if let Some(s) = so.as_mut() {
            let _ = s.read_to_end(&mut v);
        }
        v
    });
    let t2 = std::thread::spawn(move || {
        let mut v = Vec::new();
        if let Some(s) = se.as_mut() {
            let _ = s.read_to_end(&mut v);
        }
        v
    });
    loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            let stdout = t1.join().unwrap_or_default();
            let stderr = t2.join().unwrap_or_default();
            return Ok(Output {
                status,
                stdout,
                stderr,
            });
        }
        if Instant::now() > end {
            // SAFETY: kill(2) of the child's own process group (made with process_group(0)).
            unsafe { libc_kill(-(child.id() as i32)) };
            let _ = child.wait();
            return Err(format!("{what:?} still running after {limit:?}: killed").into());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

extern "C" {
    fn kill(pid: i32, sig: i32) -> i32;
}

/// SIGKILL to a process group.
///
/// # Safety
/// `pgid` must name a process group of this test's own children.
unsafe fn libc_kill(pgid: i32) {
    // SAFETY: per this function's contract; signal 9 is SIGKILL.
    unsafe {
        kill(pgid, 9);
    }
}

/// One runner's settings.
#[derive(Clone)]
struct Runner {
    ip: String,
    link: Option<(u16, u16)>,
    pcap: Option<PathBuf>,
    /// `mlx5-dpa --capture FILE run ...`: the server's mailboxes.
    capture: Option<PathBuf>,
}

impl Runner {
    fn single() -> Runner {
        Runner {
            ip: "10.7.0.1".into(),
            link: None,
            pcap: None,
            capture: None,
        }
    }

    fn args(&self) -> Vec<String> {
        let mut v = vec!["--ip".to_string(), self.ip.clone()];
        if let Some((l, p)) = self.link {
            v.push("--link".into());
            v.push(format!("udp:127.0.0.1:{l},127.0.0.1:{p}"));
        }
        if let Some(p) = &self.pcap {
            v.push("--pcap".into());
            v.push(p.display().to_string());
        }
        v
    }

    /// Two runners linked to each other.
    fn pair() -> (Runner, Runner, u16) {
        let a = port();
        let b = port();
        let tcp = port();
        (
            Runner {
                ip: "10.7.0.1".into(),
                link: Some((a, b)),
                pcap: None,
                capture: None,
            },
            Runner {
                ip: "10.7.0.2".into(),
                link: Some((b, a)),
                pcap: None,
                capture: None,
            },
            tcp,
        )
    }
}

/// A port number of this test process (UDP links and the programs' TCP exchange): below the
/// kernel's ephemeral range (`ip_local_port_range`, where any outgoing connection of the
/// machine may hold a port, or leave it in TIME_WAIT) and free for TCP and UDP when taken.
/// Before, ports ran up to 60000 and `ib_read_bw`'s server once could not listen on 38660.
fn port() -> u16 {
    static NEXT: AtomicU16 = AtomicU16::new(0);
    const FLOOR: u16 = 10_000;
    let ephemeral = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|t| t.split_whitespace().next()?.parse::<u16>().ok())
        .unwrap_or(32_768);
    let span = ephemeral.saturating_sub(FLOOR).max(1_000);
    let base = (std::process::id() % 1_000) as u16 * 10;
    let mut p = FLOOR;
    for _ in 0..span {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        p = FLOOR + base.wrapping_add(n) % span;
        let free = std::net::TcpListener::bind(("0.0.0.0", p)).is_ok()
            && std::net::UdpSocket::bind(("0.0.0.0", p)).is_ok();
        if free {
            break;
        }
    }
    p
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn check(cond: bool, what: &str, o: &Output) -> Result<(), Failed> {
    if cond {
        Ok(())
    } else {
        Err(format!("{what}; exit {:?}, output:\n{}", o.status, text(o)).into())
    }
}

/// A server and a client: the server starts first; the client retries while the server is
/// not listening yet (a connection refused ends it at once).
fn client_server(
    env: &Env,
    server: (&Runner, Vec<String>),
    client: (&Runner, Vec<String>),
) -> Result<(Output, Output), Failed> {
    let sargs: Vec<&str> = server.1.iter().map(String::as_str).collect();
    let cargs: Vec<&str> = client.1.iter().map(String::as_str).collect();
    let s = env
        .command(server.0, &sargs)
        .spawn()
        .map_err(|e| format!("spawn server: {e}"))?;
    let end = Instant::now() + Duration::from_secs(30);
    let c = loop {
        let c = env.run(client.0, &cargs)?;
        let t = text(&c);
        let refused = !c.status.success()
            && (t.contains("Couldn't connect") || t.contains("Unable to open file descriptor"));
        if !refused || Instant::now() > end {
            break c;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let s = wait(s, LIMIT, &sargs)?;
    Ok((s, c))
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

// ---------------------------------------------------------------------------------------------
// The tests.

fn ibv_devices(env: &Env) -> Result<(), Failed> {
    let o = env.run(&Runner::single(), &["ibv_devices"])?;
    check(o.status.success(), "ibv_devices failed", &o)?;
    // The GUID is the EUI-64 of the MAC 02:00:10.7.0.1.
    check(
        text(&o).contains("mlx5_0") && text(&o).contains("00000afffe070001"),
        "mlx5_0 with its node GUID listed",
        &o,
    )
}

fn ibv_devinfo(env: &Env) -> Result<(), Failed> {
    let o = env.run(&Runner::single(), &["ibv_devinfo", "-v"])?;
    check(o.status.success(), "ibv_devinfo -v failed", &o)?;
    let t = text(&o);
    for want in [
        "hca_id:\tmlx5_0",
        "vendor_id:\t\t\t0x02c9",
        "vendor_part_id:\t\t\t41692",
        "state:\t\t\tPORT_ACTIVE (4)",
        "link_layer:\t\tEthernet",
        "GID[  0]:\t\tfe80::aff:fe07:1, RoCE v2",
        "GID[  1]:\t\t::ffff:10.7.0.1, RoCE v2",
        "phys_state:\t\tLINK_UP (5)",
    ] {
        check(t.contains(want), &format!("ibv_devinfo shows {want:?}"), &o)?;
    }
    Ok(())
}

fn pingpong(env: &Env, prog: &str, extra: &[&str], done: &str) -> Result<(), Failed> {
    let (a, b, tcp) = Runner::pair();
    let tcp = tcp.to_string();
    let mut common = vec![prog, "-g", "1", "-n", "50", "-p", &tcp];
    common.extend_from_slice(extra);
    let mut client = common.clone();
    client.push("localhost");
    let (s, c) = client_server(env, (&a, strings(&common)), (&b, strings(&client)))?;
    check(
        s.status.success() && text(&s).contains(done),
        "server done",
        &s,
    )?;
    check(
        c.status.success() && text(&c).contains(done),
        "client done",
        &c,
    )?;
    Ok(())
}

fn perftest(env: &Env, prog: &str) -> Result<(), Failed> {
    let (a, b, tcp) = Runner::pair();
    let tcp = tcp.to_string();
    let common = vec![prog, "-x", "1", "-d", "mlx5_0", "-n", "200", "-p", &tcp];
    let mut client = common.clone();
    client.push("localhost");
    let (s, c) = client_server(env, (&a, strings(&common)), (&b, strings(&client)))?;
    for (o, who) in [(&s, "server"), (&c, "client")] {
        let t = text(o);
        // The result table: a header, then a row that starts with the message size.
        let row = t
            .lines()
            .skip_while(|l| !l.trim_start().starts_with("#bytes"))
            .nth(1)
            .unwrap_or("");
        let ok = o.status.success()
            && row
                .split_whitespace()
                .next()
                .is_some_and(|n| n.parse::<u64>().is_ok())
            && !t.contains("error");
        check(ok, &format!("{prog} {who}: a result row"), o)?;
    }
    Ok(())
}

fn driver(env: &Env, backend: &str, args: &[&str], want: &[&str]) -> Result<(), Failed> {
    // `devices` lists what sysfs shows, through no backend.
    let mut program = if args.first() == Some(&"devices") {
        vec![mlx5_dpa()]
    } else {
        vec![mlx5_dpa(), "--backend", backend, "--device", "mlx5_0"]
    };
    program.extend_from_slice(args);
    let o = env.run(&Runner::single(), &program)?;
    check(o.status.success(), &format!("mlx5-dpa {args:?}"), &o)?;
    for w in want {
        check(
            text(&o).contains(w),
            &format!("mlx5-dpa {args:?} says {w:?}"),
            &o,
        )?;
    }
    Ok(())
}

/// Where cargo puts the crate's example `name` (`cargo test --workspace` builds them).
fn example_path(name: &str) -> PathBuf {
    PathBuf::from(mlx5_dpa())
        .parent()
        .map(|d| d.join("examples").join(name))
        .unwrap_or_default()
}

fn example(env: &Env, name: &str, want: &str) -> Result<(), Failed> {
    let exe = example_path(name).display().to_string();
    let o = env.run(&Runner::single(), &[&exe, "--device", "mlx5_0"])?;
    check(o.status.success(), &format!("example {name}"), &o)?;
    check(
        text(&o).contains(want),
        &format!("example {name} says {want:?}"),
        &o,
    )
}

/// libflexio installed with flexio/install.sh under this profile's target directory, and the
/// flags `pkg-config libflexio` gives for it (a FlexIO program is built so). Installed once per
/// run: the tests that use it run in parallel, and one must not link while another rewrites
/// the library.
fn install_libflexio() -> Result<(PathBuf, Vec<String>), Failed> {
    static ONCE: std::sync::OnceLock<Result<(PathBuf, Vec<String>), String>> =
        std::sync::OnceLock::new();
    ONCE.get_or_init(|| install_libflexio_now().map_err(|e| e.message().unwrap_or("").to_string()))
        .clone()
        .map_err(Failed::from)
}

fn install_libflexio_now() -> Result<(PathBuf, Vec<String>), Failed> {
    let exe_dir = PathBuf::from(mlx5_dpa())
        .parent()
        .ok_or("no target directory")?
        .to_path_buf();
    let profile = exe_dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let prefix = exe_dir.join("flexio-prefix");
    let out = Command::new("bash")
        .arg(repo().join("flexio/install.sh"))
        .arg(&prefix)
        .env("PROFILE", &profile)
        .current_dir(repo())
        .output()
        .map_err(|e| format!("flexio/install.sh: {e}"))?;
    check(out.status.success(), "flexio/install.sh", &out)?;
    let pc = Command::new("pkg-config")
        .args(["--cflags", "--libs", "libflexio"])
        .env("PKG_CONFIG_PATH", prefix.join("lib/pkgconfig"))
        .output()
        .map_err(|e| format!("pkg-config: {e}"))?;
    check(
        pc.status.success(),
        "pkg-config --cflags --libs libflexio",
        &pc,
    )?;
    let mut flags: Vec<String> = String::from_utf8_lossy(&pc.stdout)
        .split_whitespace()
        .map(str::to_owned)
        .collect();
    flags.push(format!("-Wl,-rpath,{}", prefix.join("lib").display()));
    Ok((exe_dir, flags))
}

/// gcc with warnings as errors, building `exe` from `inputs` and `flags`.
fn gcc(exe: &Path, inputs: &[&Path], flags: &[String]) -> Result<(), Failed> {
    let out = Command::new("gcc")
        .args(["-Wall", "-Wextra", "-Werror", "-o"])
        .arg(exe)
        .args(inputs)
        .args(flags)
        .output()
        .map_err(|e| format!("gcc: {e}"))?;
    check(
        out.status.success(),
        &format!("gcc builds {}", exe.display()),
        &out,
    )
}

/// A C program of the libflexio API (flexio/tests/c/api.c), built as a FlexIO program is:
/// the library installed with flexio/install.sh, the flags from `pkg-config libflexio`, gcc.
/// It runs on the served device and covers every API group the library has, and the checks
/// every entry point makes.
fn flexio_c_api(env: &Env) -> Result<(), Failed> {
    let (dir, mut flags) = install_libflexio()?;
    let exe = dir.join("flexio_c_api");
    // Its steering rule is made with rdma-core's mlx5dv_dr, as FlexIO's samples make theirs.
    flags.push("-lmlx5".into());
    gcc(&exe, &[&repo().join("flexio/tests/c/api.c")], &flags)?;
    let elf = repo().join("fw-blobs/bin/rpc_calc.elf");
    let o = env.run(
        &Runner::single(),
        &[&exe.display().to_string(), &elf.display().to_string()],
    )?;
    check(o.status.success(), "the libflexio C test", &o)?;
    for want in [
        "version: 24.04 set",
        "Calculate: 44 + 55 = 99",
        "Calculate: 20 + 22 = 42",
        "Result: 99",
        "calls: 4 of 4 returned what they should",
        "steering: a root rule from 02:42:7e:7f:eb:02 to the RQ's TIR",
        "flexio C API: all checks passed",
    ] {
        check(text(&o).contains(want), &format!("it says {want:?}"), &o)?;
    }
    Ok(())
}

/// libflexio's windows and command queues (flexio/tests/c/window_cmdq.c) with fw-blobs'
/// window_writer: an RPC and a queued task write host memory through a window over the
/// process's PD, the task only once its queue runs.
fn flexio_c_windows_and_cmdq(env: &Env) -> Result<(), Failed> {
    let (dir, flags) = install_libflexio()?;
    let exe = dir.join("flexio_window_cmdq");
    gcc(
        &exe,
        &[&repo().join("flexio/tests/c/window_cmdq.c")],
        &flags,
    )?;
    let elf = repo().join("fw-blobs/bin/window_writer.elf");
    let o = env.run(
        &Runner::single(),
        &[&exe.display().to_string(), &elf.display().to_string()],
    )?;
    check(o.status.success(), "the libflexio window and cmdq test", &o)?;
    for want in [
        "the RPC wrote 256 bytes of host memory",
        "command queue: the task ran once the queue was running",
        "flexio windows and command queues: all checks passed",
    ] {
        check(text(&o).contains(want), &format!("it says {want:?}"), &o)?;
    }
    Ok(())
}

/// libflexio's RC QPs (flexio/tests/c/qp.c) with fw-blobs' selftest: a QP in DPA memory moved
/// to RTS, a NOP the device posts on it completing in a CQ over host memory, the other moves
/// and the refusals.
fn flexio_c_qp(env: &Env) -> Result<(), Failed> {
    let (dir, mut flags) = install_libflexio()?;
    let exe = dir.join("flexio_qp");
    // The CQ's host ring is a DevX UMEM (mlx5dv_devx_umem_reg).
    flags.push("-lmlx5".into());
    gcc(&exe, &[&repo().join("flexio/tests/c/qp.c")], &flags)?;
    let elf = repo().join("fw-blobs/bin/selftest.elf");
    let o = env.run(
        &Runner::single(),
        &[&exe.display().to_string(), &elf.display().to_string()],
    )?;
    check(o.status.success(), "the libflexio QP test", &o)?;
    for want in [
        ": RST -> INIT -> RTR -> RTS",
        ": the device's NOP completed in the host's CQ",
        "on RMP",
        "fault: the error descriptor woke, the crash data was written",
        "flexio QPs: all checks passed",
    ] {
        check(text(&o).contains(want), &format!("it says {want:?}"), &o)?;
    }
    Ok(())
}

/// DPACC's application build by `mlx5-dpa dpacc` (with the command line
/// `doca_build_dpacc.sh` gives it), and a host program that uses only what that library
/// defines (flexio/tests/c/dpacc_host.c, `-DDEV_APP_NAME`), as NVIDIA's samples are built.
fn flexio_dpacc(env: &Env) -> Result<(), Failed> {
    let (dir, flags) = install_libflexio()?;
    let lib = dir.join("rpc_calc_app.a");
    let out = Command::new(mlx5_dpa())
        .arg("dpacc")
        .arg(repo().join("fw-blobs/src/rpc_calc.c"))
        .arg("-o")
        .arg(&lib)
        .arg("-hostcc=gcc")
        .arg("--devicecc-options=-I.,-Wall")
        .arg("--devicelink-options=-ldpa")
        .arg("-hostcc-options=-fPIC ,-Wall,-Werror,")
        .arg("--app-name=rpc_calc_app")
        .output()
        .map_err(|e| format!("mlx5-dpa dpacc: {e}"))?;
    check(out.status.success(), "mlx5-dpa dpacc", &out)?;
    let exe = dir.join("flexio_dpacc_host");
    let mut f = vec!["-DDEV_APP_NAME=rpc_calc_app".to_string()];
    f.extend(flags);
    gcc(
        &exe,
        &[&repo().join("flexio/tests/c/dpacc_host.c"), &lib],
        &f,
    )?;
    let o = env.run(&Runner::single(), &[&exe.display().to_string()])?;
    check(
        o.status.success(),
        "the host program over dpacc's library",
        &o,
    )?;
    for want in [
        "application rpc_calc_app",
        "Calculate: 44 + 55 = 99",
        "Result: 99, digits 87654321, echo 0x5a5a5a5a",
        "dpacc host program: done",
    ] {
        check(text(&o).contains(want), &format!("it says {want:?}"), &o)?;
    }
    Ok(())
}

fn rc_capture(env: &Env) -> Result<(), Failed> {
    capture(
        env,
        &["ibv_rc_pingpong"],
        &["RC Send Last", "RC Acknowledge"],
        "RoCEv2 SENDs (4 KiB: First, Middle, Last) and ACKs dissected",
    )
}

fn ud_capture(env: &Env) -> Result<(), Failed> {
    capture(
        env,
        &["ibv_ud_pingpong", "-s", "512"],
        &["UD Send Only", "Queue Key: 0x0000000011111111"],
        "UD SENDs with their DETH (ud_pingpong's Q_Key) dissected",
    )
}

/// A two-process exchange of `program` captured on one side and read by tshark (summary lines
/// and the full dissection, `-P -V`): each of
/// `want` is in the dissection and nothing is malformed.
fn capture(env: &Env, program: &[&str], want: &[&str], what: &str) -> Result<(), Failed> {
    let (a, mut b, tcp) = Runner::pair();
    let pcap = std::env::temp_dir().join(format!("mlx5-cap-{}-{tcp}.pcap", std::process::id()));
    b.pcap = Some(pcap.clone());
    let tcp = tcp.to_string();
    let mut common = program.to_vec();
    common.extend_from_slice(&["-g", "1", "-n", "5", "-p", &tcp]);
    let mut client = common.clone();
    client.push("localhost");
    let (s, c) = client_server(env, (&a, strings(&common)), (&b, strings(&client)))?;
    check(s.status.success() && c.status.success(), "the exchange", &c)?;
    let o = Command::new("tshark")
        .args(["-P", "-V", "-r"])
        .arg(&pcap)
        .output()
        .map_err(|e| format!("tshark: {e}"))?;
    let _ = std::fs::remove_file(&pcap);
    let t = String::from_utf8_lossy(&o.stdout);
    check(o.status.success(), "tshark reads the capture", &o)?;
    check(
        t.contains("RoCE") && want.iter().all(|w| t.contains(w)),
        what,
        &o,
    )?;
    check(!t.contains("Malformed"), "nothing malformed", &o)
}

/// A program's output as it comes, for sessions that answer what the program printed. Its
/// standard output and error are kept apart: testpmd prints its prompt and answers on the
/// first while DPDK logs on the second, and a log line written between two writes of the
/// prompt split it where one buffer held both (seen under load).
struct Session {
    child: Child,
    stdin: Option<std::process::ChildStdin>,
    out: std::sync::Arc<std::sync::Mutex<Vec<u8>>>,
    err: std::sync::Arc<std::sync::Mutex<Vec<u8>>>,
    /// Where the next [`Session::until`] starts looking in the standard output.
    seen: usize,
}

impl Session {
    fn start(mut cmd: Command) -> Result<Session, Failed> {
        cmd.stdin(Stdio::piped());
        let mut child = cmd.spawn().map_err(|e| format!("spawn: {e}"))?;
        let stdin = child.stdin.take();
        let out = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let err = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let pipes: [(Option<Box<dyn Read + Send>>, _); 2] = [
            (
                child
                    .stdout
                    .take()
                    .map(|p| Box::new(p) as Box<dyn Read + Send>),
                &out,
            ),
            (
                child
                    .stderr
                    .take()
                    .map(|p| Box::new(p) as Box<dyn Read + Send>),
                &err,
            ),
        ];
        for (p, to) in pipes {
            let Some(mut p) = p else { continue };
            let out = std::sync::Arc::clone(to);
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                while let Ok(n @ 1..) = p.read(&mut buf) {
                    out.lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .extend_from_slice(&buf[..n]);
                }
            });
        }
        Ok(Session {
            child,
            stdin,
            out,
            err,
            seen: 0,
        })
    }

    /// What the program printed on its standard output so far.
    fn text(&self) -> String {
        let o = self
            .out
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        String::from_utf8_lossy(&o).into_owned()
    }

    /// Both outputs, for a failure's report.
    fn report(&self) -> String {
        let e = self
            .err
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        format!(
            "{}\n--- standard error ---\n{}",
            self.text(),
            String::from_utf8_lossy(&e)
        )
    }

    /// Waits (at most `limit`) until `needle` is printed after what earlier calls saw; returns
    /// what was printed from there up to and including it.
    fn until(&mut self, needle: &str, limit: Duration) -> Result<String, Failed> {
        let end = Instant::now() + limit;
        loop {
            let t = self.text();
            if let Some(at) = t.get(self.seen..).and_then(|r| r.find(needle)) {
                let stop = self.seen + at + needle.len();
                let got = t[self.seen..stop].to_string();
                self.seen = stop;
                return Ok(got);
            }
            if Instant::now() > end || self.child.try_wait().ok().flatten().is_some() {
                return Err(format!("waited for {needle:?}; output:\n{}", self.report()).into());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits (at most `limit`) for the program to exit by itself: its exit handlers (the
    /// model's capture is flushed in one) run to the end, where dropping the session would
    /// kill it.
    fn exit(&mut self, limit: Duration) -> Result<std::process::ExitStatus, Failed> {
        let end = Instant::now() + limit;
        loop {
            if let Some(st) = self.child.try_wait().map_err(|e| e.to_string())? {
                return Ok(st);
            }
            if Instant::now() > end {
                return Err(format!("still running after {limit:?}:\n{}", self.report()).into());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn send(&mut self, line: &str) -> Result<(), Failed> {
        use std::io::Write;
        let s = self.stdin.as_mut().ok_or("stdin closed")?;
        s.write_all(format!("{line}\n").as_bytes())
            .map_err(|e| format!("write {line:?}: {e}").into())
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            // SAFETY: kill(2) of the child's own process group (made with process_group(0)).
            unsafe { libc_kill(-(self.child.id() as i32)) };
        }
        let _ = self.child.wait();
    }
}

/// The number after `label` in `text` (testpmd's `RX-packets: 580688` style).
fn count_after(text: &str, label: &str) -> Option<u64> {
    let at = text.find(label)? + label.len();
    text[at..].split_whitespace().next()?.parse().ok()
}

/// `dpdk-testpmd` on the model's PCI function, interactive, line-buffered (through `stdbuf`,
/// so each answer arrives when printed), with testpmd's own `extra` options; waits for its
/// first prompt.
fn testpmd(env: &Env, r: &Runner, extra: &[&str]) -> Result<Session, Failed> {
    testpmd_with(env, r, &[], extra)
}

/// [`testpmd`] with more `NAME=value` variables in its environment.
fn testpmd_with(env: &Env, r: &Runner, vars: &[&str], extra: &[&str]) -> Result<Session, Failed> {
    let mut program = vec![
        "stdbuf",
        "-oL",
        "env",
        "SYSFS_PCI_DEVICES=/sys/class/mlx5_sim_pci",
    ];
    program.extend_from_slice(vars);
    program.extend_from_slice(&[
        "dpdk-testpmd",
        "-l",
        "0-1",
        "--no-huge",
        "-m",
        "512",
        "--no-shconf",
        "-a",
        "0000:08:00.0",
        "--",
        "-i",
        "--total-num-mbufs=2048",
    ]);
    program.extend_from_slice(extra);
    let mut s = Session::start(env.command(r, &program))?;
    s.until("testpmd> ", TESTPMD_WAIT)?;
    Ok(s)
}

/// How long one testpmd answer may take (the first includes DPDK's probe).
const TESTPMD_WAIT: Duration = Duration::from_secs(90);

/// Quits a testpmd session: `quit`, its goodbye, and its exit status.
fn quit(s: &mut Session) -> Result<std::process::ExitStatus, Failed> {
    s.send("quit")?;
    s.until("Bye...", TESTPMD_WAIT)?;
    s.exit(TESTPMD_WAIT)
}

/// `start`, then `show port stats 0` until at least `least` more frames came back than before
/// it (the port's counts add up over runs), then `stop`: the forwarding statistics `stop`
/// printed.
fn forward(s: &mut Session, start: &str, least: u64) -> Result<String, Failed> {
    let received = |s: &mut Session| -> Result<u64, Failed> {
        s.send("show port stats 0")?;
        let st = s.until("Tx-bps", TESTPMD_WAIT)?;
        Ok(count_after(&st, "RX-packets:").unwrap_or(0))
    };
    let before = received(s)?;
    s.send(start)?;
    s.until("testpmd> ", TESTPMD_WAIT)?;
    let end = Instant::now() + TESTPMD_WAIT;
    loop {
        if received(s)? >= before + least {
            break;
        }
        if Instant::now() > end {
            return Err(format!("fewer than {least} frames came back:\n{}", s.report()).into());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    s.send("stop")?;
    s.until("Done.", TESTPMD_WAIT)
}

/// Frames each receive queue forwarded, from `stop`'s per-stream statistics (io mode forwards
/// queue N to queue N).
fn per_queue_rx(fwd: &str, queues: usize) -> Vec<u64> {
    (0..queues)
        .map(|q| {
            fwd.split(&format!("RX Port= 0/Queue= {q} "))
                .nth(1)
                .and_then(|t| count_after(t, "RX-packets:"))
                .unwrap_or(0)
        })
        .collect()
}

/// DPDK's testpmd on the model, unmodified, in interactive mode: DPDK 22.11's mlx5 driver finds
/// the PCI function and its netdev, probes, creates its queues, RSS objects and control flows
/// with DevX, and forwards (io mode, `start tx_first`) through the port's loopback. Checks the
/// port's MAC, link and speed as `show port info` prints them, that frames were forwarded and
/// that the counts hold together, and that tshark dissects the frames the model's port
/// carried. Sixteen bursts at once into 64 receive buffers overrun the receive queue: the
/// frames it had no buffer for are counted by the model's Q counter, which DPDK reads as
/// `RX-missed` (and `stop` as `RX-dropped`); what was sent is what came back, what was missed
/// and what was still in flight. Then macswap forwarding: the capture holds the frames it sent
/// back with their addresses swapped. The receive CQ compresses
/// CQEs, as DPDK 22.11 asks of every device, so its receive path expands the model's
/// compression sessions.
fn dpdk_testpmd_io(env: &Env) -> Result<(), Failed> {
    let pcap = std::env::temp_dir().join(format!("mlx5-dpdk-{}.pcap", std::process::id()));
    let capture = pcap.with_extension("jsonl");
    let stats = pcap.with_extension("stats");
    let mut r = Runner::single();
    r.pcap = Some(pcap.clone());
    r.capture = Some(capture.clone());
    let var = format!("MLX5_SIM_STATS={}", stats.display());
    let mut s = testpmd_with(env, &r, &[&var], &["--rxd=64", "--txd=1024"])?;
    s.send("show port info 0")?;
    let info = s.until("Device error handling mode", TESTPMD_WAIT)?;
    let want = [
        "MAC address: 02:00:0A:07:00:01",
        "Driver name: mlx5_pci",
        "Link status: up",
        "Link speed: 200 Gbps",
        "MTU: 1500",
    ];
    if let Some(w) = want.iter().find(|w| !info.contains(*w)) {
        return Err(format!("show port info lacks {w:?}:\n{info}").into());
    }
    let fwd = forward(&mut s, "start tx_first 16", 1)?;
    let acc = fwd
        .split("Accumulated forward statistics")
        .nth(1)
        .unwrap_or_default();
    let (rx, tx) = (
        count_after(acc, "RX-packets:"),
        count_after(acc, "TX-packets:"),
    );
    let (missed, dropped) = (
        count_after(acc, "RX-dropped:").unwrap_or(0),
        count_after(acc, "TX-dropped:"),
    );
    // macswap: each frame goes back with its addresses swapped.
    s.send("set fwd macswap")?;
    s.until("testpmd> ", TESTPMD_WAIT)?;
    let swapped = forward(&mut s, "start tx_first", 1000)?;
    // Frames still on their way when forwarding stopped may yet find no buffer: read
    // `RX-missed` (the Q counter) until it holds still, then it is final.
    let mut nic = String::new();
    let mut last = None;
    let end = Instant::now() + TESTPMD_WAIT;
    while Instant::now() < end {
        s.send("show port stats 0")?;
        nic = s.until("Tx-bps", TESTPMD_WAIT)?;
        let now = count_after(&nic, "RX-missed:");
        if now.is_some() && now == last {
            break;
        }
        last = now;
        std::thread::sleep(Duration::from_millis(200));
    }
    let nic_missed = count_after(&nic, "RX-missed:").unwrap_or(0);
    let status = quit(&mut s)?;
    let text = s.text();
    drop(s);
    if !status.success() {
        return Err(format!("testpmd ended with {status}:\n{text}").into());
    }
    let (Some(rx), Some(tx)) = (rx, tx) else {
        return Err(format!("no forward statistics:\n{text}").into());
    };
    if rx == 0
        || missed == 0
        || tx < rx + missed
        || tx - rx - missed > 16 * 32
        || dropped != Some(0)
    {
        return Err(
            format!("rx {rx}, missed {missed}, tx {tx}, tx dropped {dropped:?}:\n{fwd}").into(),
        );
    }
    if nic_missed < missed {
        return Err(format!("RX-missed is below the {missed} stop counted:\n{nic}").into());
    }
    println!("testpmd: io forwarding rx {rx}, missed {missed}, tx {tx}");
    // The model's own port counters, written when testpmd exited, against testpmd's: every
    // frame testpmd sent (both runs) left the model's SQs; the receive queues had no buffer
    // for exactly what testpmd finally reported missed; they took what testpmd received, and
    // at most a burst a queue more (received by the model, not yet polled when forwarding
    // stopped).
    let model = std::fs::read_to_string(&stats).map_err(|e| format!("{}: {e}", stats.display()))?;
    let _ = std::fs::remove_file(&stats);
    let m = |name: &str| count_after(&model, &format!("{name} "));
    let s_acc = swapped
        .split("Accumulated forward statistics")
        .nth(1)
        .unwrap_or_default();
    let (s_rx, s_tx) = (
        count_after(s_acc, "RX-packets:").unwrap_or(0),
        count_after(s_acc, "TX-packets:").unwrap_or(0),
    );
    let delivered = m("rx_delivered").unwrap_or(0);
    if m("tx_frames") != Some(tx + s_tx)
        || m("rx_no_buffer") != Some(nic_missed)
        || delivered < rx + s_rx
        || delivered > rx + s_rx + 2 * 16 * 32
    {
        return Err(format!(
            "the model's counters against testpmd's (io rx {rx} tx {tx} missed {missed}, \
             macswap rx {s_rx} tx {s_tx}):\n{model}"
        )
        .into());
    }
    println!(
        "testpmd: the model's counters: {}",
        model.replace('\n', ", ")
    );
    // The capture holds DPDK's DevX commands and the kernel's for its flow rules: the objects
    // of its receive path, in the model's mailboxes.
    let shown = Command::new(mlx5_dpa())
        .args(["capture", "show"])
        .arg(&capture)
        .output()
        .map_err(|e| format!("capture show: {e}"))?;
    let _ = std::fs::remove_file(&capture);
    let t = String::from_utf8_lossy(&shown.stdout);
    for want in [
        "ALLOC_Q_COUNTER: OK",
        "CREATE_CQ: OK",
        "CREATE_RQT: OK",
        "CREATE_TIR: OK",
        "CREATE_FLOW_TABLE: OK",
        "SET_FLOW_TABLE_ENTRY: OK",
    ] {
        check(
            shown.status.success() && t.contains(want),
            &format!("the capture of the run has {want}"),
            &shown,
        )?;
    }
    let o = Command::new("tshark")
        .args(["-r"])
        .arg(&pcap)
        .args(["-c", "2000", "-T", "fields", "-e", "frame.protocols"])
        .output()
        .map_err(|e| format!("tshark: {e}"))?;
    let t = String::from_utf8_lossy(&o.stdout);
    check(o.status.success(), "tshark reads the capture", &o)?;
    let lines: Vec<&str> = t.lines().collect();
    check(
        !lines.is_empty() && lines.iter().all(|l| *l == "eth:ethertype:ip:udp:data"),
        "every captured frame is Ethernet / IPv4 / UDP (testpmd's frames), none malformed",
        &o,
    )?;
    // The frames macswap sent back: from testpmd's peer address to the port's.
    let o = Command::new("tshark")
        .arg("-r")
        .arg(&pcap)
        .args([
            "-Y",
            "eth.src == 02:00:00:00:00:00 && eth.dst == 02:00:0a:07:00:01",
        ])
        .args(["-T", "fields", "-e", "frame.number"])
        .output()
        .map_err(|e| format!("tshark: {e}"))?;
    let _ = std::fs::remove_file(&pcap);
    // Every frame in flight changes direction at each forward, so about half of what the
    // macswap run sent went this way: of each of its first burst's 32 frames sent t times,
    // t / 2 rounded down. (A fixed count failed under load, where the timed run sends fewer.)
    let back = String::from_utf8_lossy(&o.stdout).lines().count() as u64;
    check(
        o.status.success() && s_tx >= 128 && 2 * back <= s_tx && 2 * back + 2 * 32 >= s_tx,
        &format!("macswap's {s_tx} frames, half of them swapped ({back}), are in the capture; its run:\n{swapped}"),
        &o,
    )
}

/// testpmd on two runners whose ports are linked (UDP on 127.0.0.1): B forwards what A sends
/// back to A, each on its own model. B starts forwarding first; A sends its first burst and
/// forwards what comes back. Both sides' counts hold together: what A sent B received (less
/// what was on the link when B stopped), and what B sent A received.
fn dpdk_testpmd_two_runners(env: &Env) -> Result<(), Failed> {
    let (a, b, _) = Runner::pair();
    let mut sb = testpmd(env, &b, &[])?;
    sb.send("start")?;
    sb.until("testpmd> ", TESTPMD_WAIT)?;
    let mut sa = testpmd(env, &a, &[])?;
    let fwd_a = forward(&mut sa, "start tx_first", 1000)?;
    sb.send("stop")?;
    let fwd_b = sb.until("Done.", TESTPMD_WAIT)?;
    for s in [&mut sa, &mut sb] {
        quit(s)?;
    }
    let counts = |t: &str| {
        let acc = t
            .split("Accumulated forward statistics")
            .nth(1)
            .unwrap_or_default();
        (
            count_after(acc, "RX-packets:").unwrap_or(0),
            count_after(acc, "TX-packets:").unwrap_or(0),
        )
    };
    let ((a_rx, a_tx), (b_rx, b_tx)) = (counts(&fwd_a), counts(&fwd_b));
    println!("testpmd: A sent {a_tx}, received {a_rx}; B received {b_rx}, sent {b_tx}");
    if a_rx < 1000 || b_rx < a_rx || b_tx < a_rx || a_tx < b_rx || a_tx - b_rx > 64 {
        return Err(format!(
            "A sent {a_tx}, received {a_rx}; B received {b_rx}, sent {b_tx}\nA:\n{fwd_a}\nB:\n{fwd_b}"
        )
        .into());
    }
    Ok(())
}

/// testpmd over four queues: each frame's RSS hash (which the model reports in the CQE) picks
/// its queue through DPDK's indirection table; RSS spreads a flow mix (`--txonly-multi-flow`
/// varies the source address) over all four, and over two, as the TIRs' Toeplitz hash and the
/// RQT say; then a
/// rule
/// (`flow create ... udp dst is 5000 ... actions count / queue index 1`, a root-table rule
/// through the kernel's flow methods) takes every frame to queue 1 and counts them
/// (`flow query`: a flow counter of the model); a drop rule drops and counts them. Each queue
/// forwards what it receives back out of the same queue, so a queue that stopped sending would
/// show here too.
fn dpdk_testpmd_rss_and_flow(env: &Env) -> Result<(), Failed> {
    let four = [
        "--rxq=4",
        "--txq=4",
        "--rxd=256",
        "--txd=256",
        "--txonly-multi-flow",
        "--tx-udp=9,5000",
    ];
    let r = Runner::single();
    let mut s = testpmd(env, &r, &four)?;
    // Each frame's RSS hash, as the model reports it in the CQE and testpmd prints it: not 0,
    // and the queue it arrived on is the one DPDK's indirection table (512 entries, entry i
    // queue i mod 4) gives for it.
    for cmd in ["set fwd rxonly", "set verbose 1"] {
        s.send(cmd)?;
        s.until("testpmd> ", TESTPMD_WAIT)?;
    }
    // No prompt to wait for: the forwarding core's lines may land inside it.
    s.send("start tx_first")?;
    let end = Instant::now() + TESTPMD_WAIT;
    while s.text().matches("RSS queue=").count() < 4 * 32 && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(20));
    }
    s.send("stop")?;
    let verbose = s.until("Done.", TESTPMD_WAIT)?;
    let hashes: Vec<(u32, u32)> = s
        .text()
        .lines()
        .filter_map(|l| {
            let h = l.split("RSS hash=0x").nth(1)?.split_whitespace().next()?;
            let q = l.split("RSS queue=0x").nth(1)?.split_whitespace().next()?;
            Some((
                u32::from_str_radix(h, 16).ok()?,
                u32::from_str_radix(q, 16).ok()?,
            ))
        })
        .collect();
    if hashes.len() < 4 * 32 || hashes.iter().any(|&(h, q)| h == 0 || q != (h % 512) % 4) {
        return Err(format!("RSS hashes and queues: {hashes:?}\n{verbose}").into());
    }
    for cmd in ["set verbose 0", "set fwd io"] {
        s.send(cmd)?;
        s.until("testpmd> ", TESTPMD_WAIT)?;
    }
    let fwd = forward(&mut s, "start tx_first", 4000)?;
    let spread = per_queue_rx(&fwd, 4);
    quit(&mut s)?;
    drop(s);
    if spread.iter().any(|&n| n < 100) {
        return Err(format!("RSS left a queue (nearly) empty: {spread:?}\n{fwd}").into());
    }
    // Two queues: the same spread over both.
    let two = [
        "--rxq=2",
        "--txq=2",
        "--rxd=256",
        "--txd=256",
        "--txonly-multi-flow",
        "--tx-udp=9,5000",
    ];
    let mut s = testpmd(env, &r, &two)?;
    let fwd2 = forward(&mut s, "start tx_first", 2000)?;
    let spread2 = per_queue_rx(&fwd2, 2);
    quit(&mut s)?;
    drop(s);
    if spread2.iter().any(|&n| n < 100) {
        return Err(
            format!("RSS left one of two queues (nearly) empty: {spread2:?}\n{fwd2}").into(),
        );
    }
    println!("testpmd: RSS over 2 queues {spread2:?}");
    let mut s = testpmd(env, &r, &four)?;
    s.send(
        "flow create 0 ingress pattern eth / ipv4 / udp dst is 5000 / end \
         actions count / queue index 1 / end",
    )?;
    let made = s.until("testpmd> ", TESTPMD_WAIT)?;
    if !made.contains("Flow rule #0 created") {
        return Err(format!("the rule was not made:\n{}", s.report()).into());
    }
    let fwd = forward(&mut s, "start tx_first", 4000)?;
    let steered = per_queue_rx(&fwd, 4);
    let tx = fwd
        .split("Accumulated forward statistics")
        .nth(1)
        .and_then(|t| count_after(t, "TX-packets:"))
        .unwrap_or(0);
    s.send("flow query 0 0 count")?;
    let q = s.until("bytes:", TESTPMD_WAIT)?;
    let hits = count_after(&q, "hits:").unwrap_or(0);
    quit(&mut s)?;
    if steered[1] < 4000 || steered[0] + steered[2] + steered[3] != 0 {
        return Err(
            format!("the rule did not take every frame to queue 1: {steered:?}\n{fwd}").into(),
        );
    }
    // The rule's counter saw every frame sent: those received and those still in flight when
    // forwarding stopped.
    if hits < steered[1] || hits > tx {
        let rx = steered[1];
        return Err(
            format!("the rule counted {hits}; queue 1 received {rx}, {tx} sent:\n{q}").into(),
        );
    }
    println!("testpmd: RSS over 4 queues {spread:?}; by rule {steered:?}, {hits} hits");
    // A drop rule (the kernel's flow flag DROP): nothing arrives, the rule counts every frame.
    let mut s = testpmd(env, &r, &four)?;
    s.send(
        "flow create 0 ingress pattern eth / ipv4 / udp dst is 5000 / end \
         actions count / drop / end",
    )?;
    let made = s.until("testpmd> ", TESTPMD_WAIT)?;
    if !made.contains("Flow rule #0 created") {
        return Err(format!("the drop rule was not made:\n{}", s.report()).into());
    }
    s.send("start tx_first")?;
    s.until("testpmd> ", TESTPMD_WAIT)?;
    let end = Instant::now() + TESTPMD_WAIT;
    let mut dropped = 0;
    while dropped < 4 * 32 && Instant::now() < end {
        s.send("flow query 0 0 count")?;
        let q = s.until("bytes:", TESTPMD_WAIT)?;
        dropped = count_after(&q, "hits:").unwrap_or(0);
        std::thread::sleep(Duration::from_millis(20));
    }
    s.send("stop")?;
    let fwd = s.until("Done.", TESTPMD_WAIT)?;
    quit(&mut s)?;
    let rx = fwd
        .split("Accumulated forward statistics")
        .nth(1)
        .and_then(|t| count_after(t, "RX-packets:"));
    if dropped != 4 * 32 || rx != Some(0) {
        return Err(format!("the drop rule counted {dropped}, {rx:?} arrived:\n{fwd}").into());
    }
    Ok(())
}

/// One file of rdma-core's test suite: it ran, nothing failed and at least `least` of its
/// tests passed. Prints its counts.
fn pyverbs(env: &Env, suite: &Path, module: &str, least: usize) -> Result<(), Failed> {
    let py = suite.join("run_tests.py").display().to_string();
    let o = env.run(
        &Runner::single(),
        &[
            "/usr/bin/python3",
            &py,
            "--dev",
            "mlx5_0",
            "--gid",
            "1",
            "-v",
            &format!("tests.{module}"),
        ],
    )?;
    let t = text(&o);
    let count = |suffix: &str| {
        t.lines()
            .filter(|l| l.contains(" ... ") && l.trim_end().ends_with(suffix))
            .count()
    };
    let (ok, skipped, failed) = (
        count("ok"),
        t.lines().filter(|l| l.contains(" ... skipped")).count(),
        count("FAIL") + count("ERROR"),
    );
    eprintln!("pyverbs {module}: {ok} passed, {failed} failed, {skipped} skipped");
    check(
        t.contains("\nOK") && failed == 0,
        &format!("{module}: no failures"),
        &o,
    )?;
    check(
        ok >= least,
        &format!("{module}: at least {least} passed"),
        &o,
    )
}

/// The fork / exit script beside this file.
fn fork_script() -> String {
    repo()
        .join("tools/tests/data/fork_and_exit.py")
        .display()
        .to_string()
}

/// `--capture` of a verbs client: the PRM mailboxes the server sent for `ibv_rc_pingpong`'s
/// verbs, as a kernel would: the CQ, the QP and its three transitions, an mkey for the MR; and
/// no QUERY_HCA_CAP once the context is open (the capabilities are read once, as the kernel
/// reads them at probe time; libmlx5's own DevX queries come first).
fn capture_of_a_verbs_client(env: &Env) -> Result<(), Failed> {
    let (a, mut b, tcp) = Runner::pair();
    let file = std::env::temp_dir().join(format!("mlx5-run-{}-{tcp}.jsonl", std::process::id()));
    b.capture = Some(file.clone());
    let tcp = tcp.to_string();
    let common = ["ibv_rc_pingpong", "-g", "1", "-n", "5", "-p", &tcp];
    let mut client = common.to_vec();
    client.push("localhost");
    let (s, c) = client_server(env, (&a, strings(&common)), (&b, strings(&client)))?;
    check(s.status.success() && c.status.success(), "the exchange", &c)?;
    let shown = Command::new(mlx5_dpa())
        .args(["capture", "show"])
        .arg(&file)
        .output()
        .map_err(|e| format!("capture show: {e}"))?;
    let _ = std::fs::remove_file(&file);
    let t = String::from_utf8_lossy(&shown.stdout).into_owned();
    check(shown.status.success(), "capture show reads it", &shown)?;
    let order: Vec<&str> = [
        "ALLOC_PD",
        "CREATE_MKEY",
        "CREATE_CQ",
        "CREATE_QP",
        "RST2INIT_QP",
        "INIT2RTR_QP",
        "RTR2RTS_QP",
    ]
    .into_iter()
    .collect();
    let at = |name: &str| t.lines().position(|l| l.contains(&format!(" {name}:")));
    let found: Vec<Option<usize>> = order.iter().map(|n| at(n)).collect();
    check(
        found.iter().all(Option::is_some) && found.windows(2).all(|w| w[0] < w[1]),
        &format!("the verbs' mailboxes in order: {order:?}"),
        &shown,
    )?;
    let first_pd = found[0].unwrap_or(0);
    let late_caps = t
        .lines()
        .skip(first_pd)
        .filter(|l| l.contains("QUERY_HCA_CAP"))
        .count();
    check(
        late_caps == 0,
        "no QUERY_HCA_CAP after the context opened",
        &shown,
    )
}

/// UD through pyverbs (`tools/tests/data/ud_checks.py`): a wrong Q_Key dropped; the GRH area,
/// byte count, source QP and GRH flag of a receive; a datagram above the MTU refused.
fn ud_checks(env: &Env) -> Result<(), Failed> {
    let script = repo()
        .join("tools/tests/data/ud_checks.py")
        .display()
        .to_string();
    let o = env.run(&Runner::single(), &["/usr/bin/python3", &script])?;
    check(
        o.status.success() && text(&o).contains("ud: ok"),
        "every UD check",
        &o,
    )
}

/// The extended device attributes through pyverbs (`tools/tests/data/device_attr_ex.py`):
/// RSS capabilities, receive WQs, timestamp mask and clock, which libibverbs copies only when
/// the response length the server writes covers them.
fn device_attr_ex(env: &Env) -> Result<(), Failed> {
    let script = repo()
        .join("tools/tests/data/device_attr_ex.py")
        .display()
        .to_string();
    let o = env.run(&Runner::single(), &["/usr/bin/python3", &script])?;
    check(
        o.status.success() && text(&o).contains("device_attr_ex: ok"),
        "every extended attribute",
        &o,
    )
}

/// A client that forks: the child's inherited context answers EIO and the child runs on a
/// device of its own; the parent's device carries traffic before and after.
fn fork_in_a_client(env: &Env) -> Result<(), Failed> {
    let script = fork_script();
    let o = env.run(&Runner::single(), &["/usr/bin/python3", &script, "fork"])?;
    let t = text(&o);
    check(
        o.status.success()
            && t.contains("child: inherited context answers EIO")
            && t.contains("child: message on its own device")
            && t.contains("parent: message after fork"),
        "fork: the child on its own device, the parent's undisturbed",
        &o,
    )
}

/// A client that leaves with live objects (`_exit`, or SIGKILL): the runner reports its
/// status, and nothing is left behind: no staging directory, the link's UDP port free.
fn exit_without_cleanup(env: &Env, how: &[&str], code: i32) -> Result<(), Failed> {
    let (a, _, _) = Runner::pair();
    let script = fork_script();
    let mut argv = vec!["/usr/bin/python3", script.as_str()];
    argv.extend_from_slice(how);
    let child = env
        .command(&a, &argv)
        .spawn()
        .map_err(|e| format!("spawn: {e}"))?;
    let runner_pid = child.id();
    let o = wait(child, LIMIT, &argv)?;
    check(
        o.status.code() == Some(code) && text(&o).contains("two connected QPs; leaving"),
        &format!("the runner exits with the program's status {code}"),
        &o,
    )?;
    let stage = std::env::temp_dir().join(format!("mlx5-sim-ns-{runner_pid}"));
    check(!stage.exists(), &format!("{} removed", stage.display()), &o)?;
    let (local, _) = a.link.ok_or("a linked runner")?;
    let free = std::net::UdpSocket::bind(("127.0.0.1", local)).is_ok();
    check(free, &format!("UDP port {local} free again"), &o)
}

/// The runner itself killed while its program runs: its staging directory is already gone
/// (the mounts it built live on in the namespace, not under the host's `/tmp`).
fn runner_killed(env: &Env) -> Result<(), Failed> {
    use std::io::BufRead;
    let mut child = env
        .command(
            &Runner::single(),
            &["sh", "-c", "echo ready; exec sleep 60"],
        )
        .spawn()
        .map_err(|e| format!("spawn: {e}"))?;
    let pid = child.id();
    let mut line = String::new();
    if let Some(out) = child.stdout.take() {
        // Bounded: the line comes, or the pipe closes when the runner ends.
        let _ = std::io::BufReader::new(out).read_line(&mut line);
    }
    // SAFETY: kill(2) of this test's own child, then of its process group.
    unsafe {
        kill(pid as i32, 9);
    }
    let _ = child.wait();
    let stage = std::env::temp_dir().join(format!("mlx5-sim-ns-{pid}"));
    let left = stage.exists();
    // SAFETY: as above: the group made with process_group(0) for this child.
    unsafe { libc_kill(-(pid as i32)) };
    if line.trim() != "ready" {
        return Err(format!("the program did not start under the runner: {line:?}").into());
    }
    if left {
        return Err(format!("{} left behind", stage.display()).into());
    }
    Ok(())
}

/// rdma-core's test files, unpacked (Debian ships some gzipped) into a scratch folder.
fn pyverbs_suite() -> Option<PathBuf> {
    let src = Path::new("/usr/share/doc/rdma-core/tests");
    if !src.join("run_tests.py").is_file() {
        return None;
    }
    let dst = std::env::temp_dir().join(format!("mlx5-pyverbs-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dst);
    std::fs::create_dir_all(&dst).ok()?;
    for e in std::fs::read_dir(src).ok()?.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if let Some(stem) = name.strip_suffix(".gz") {
            let out = Command::new("gzip")
                .arg("-dc")
                .arg(e.path())
                .output()
                .ok()?;
            std::fs::write(dst.join(stem), out.stdout).ok()?;
        } else {
            std::fs::copy(e.path(), dst.join(&name)).ok()?;
        }
    }
    Some(dst)
}

/// A test's body.
type TestFn = Box<dyn FnOnce(&Env) -> Result<(), Failed> + Send>;

fn main() {
    let mut args = Arguments::from_args();
    // Each test starts processes that spin on two cores: one at a time unless asked.
    if args.test_threads.is_none() {
        args.test_threads = Some(1);
    }
    let env = std::sync::Arc::new(Env::probe());
    let mut trials: Vec<Trial> = Vec::new();
    let mut skipped: Vec<(String, String)> = Vec::new();
    let mut add = |name: &str, needs: &[&str], f: TestFn| {
        // A need is a program on PATH, or (with a '/') a file.
        let found = |p: &str| {
            if p.contains('/') {
                Path::new(p).exists()
            } else {
                which(p).is_some()
            }
        };
        let missing: Vec<&str> = needs.iter().copied().filter(|p| !found(p)).collect();
        let why = env.blocked.clone().or_else(|| {
            (!missing.is_empty()).then(|| format!("not installed: {}", missing.join(", ")))
        });
        let e = std::sync::Arc::clone(&env);
        let t = Trial::test(name, move || f(&e));
        match why {
            Some(w) => {
                skipped.push((name.to_string(), w));
                trials.push(t.with_ignored_flag(true));
            }
            None => trials.push(t),
        }
    };
    add("ibv_devices", &["ibv_devices"], Box::new(ibv_devices));
    add("ibv_devinfo_v", &["ibv_devinfo"], Box::new(ibv_devinfo));
    add(
        "ibv_rc_pingpong",
        &["ibv_rc_pingpong"],
        Box::new(|e| pingpong(e, "ibv_rc_pingpong", &[], "iters in")),
    );
    add(
        "ibv_rc_pingpong_events",
        &["ibv_rc_pingpong"],
        Box::new(|e| pingpong(e, "ibv_rc_pingpong", &["-e"], "iters in")),
    );
    add(
        "ibv_ud_pingpong",
        &["ibv_ud_pingpong"],
        // Messages within the port's active MTU (1024), as the program requires.
        Box::new(|e| pingpong(e, "ibv_ud_pingpong", &["-s", "512"], "iters in")),
    );
    add(
        "ibv_srq_pingpong",
        &["ibv_srq_pingpong"],
        Box::new(|e| pingpong(e, "ibv_srq_pingpong", &["-q", "4"], "iters in")),
    );
    for p in ["ib_write_bw", "ib_write_lat", "ib_read_bw", "ib_send_bw"] {
        add(p, &[p], Box::new(move |e| perftest(e, p)));
    }
    add(
        "rc_pcap_dissected_by_tshark",
        &["ibv_rc_pingpong", "tshark"],
        Box::new(rc_capture),
    );
    add(
        "capture_of_a_verbs_client",
        &["ibv_rc_pingpong"],
        Box::new(capture_of_a_verbs_client),
    );
    add(
        "ud_pcap_dissected_by_tshark",
        &["ibv_ud_pingpong", "tshark"],
        Box::new(ud_capture),
    );
    let mut backends = vec!["kernel"];
    if cfg!(feature = "rdma-core") {
        backends.push("rdma-core");
    }
    for b in backends {
        let cases: &[(&str, &[&str], &[&str])] = &[
            (
                "devices",
                &["devices"],
                &["mlx5_0", "/dev/infiniband/uverbs0", "0000:08:00.0"],
            ),
            ("caps", &["caps"], &["log_max_qp", "apu"]),
            ("doctor", &["doctor"], &["11 of 11 steps passed"]),
            (
                "eth_loopback",
                &["demo", "eth-loopback"],
                &["verified 16 frames"],
            ),
            ("rdma", &["demo", "rdma"], &["7 operations, 7 verified"]),
            ("rpc", &["demo", "rpc", "44", "55"], &["Result: 99"]),
            (
                "packet_processor",
                &["demo", "packet-processor"],
                &["verified: MACs swapped"],
            ),
            (
                "doca_dpa_kernel_launch",
                &["demo", "doca-dpa", "kernel-launch"],
                &["Kernel completion event has been signaled"],
            ),
        ];
        for &(name, a, want) in cases {
            let a: Vec<&'static str> = a.to_vec();
            let want: Vec<&'static str> = want.to_vec();
            add(
                &format!("driver_{}_{name}", b.replace('-', "_")),
                &[],
                Box::new(move |e| driver(e, b, &a, &want)),
            );
        }
    }
    for (name, want) in [
        ("eth_loopback", "verified"),
        ("rdma_rc", "verified"),
        ("flexio_rpc", "Result: 99"),
        ("flexio_window", "Hello from DPA"),
        ("doca_dpa", "Kernel completion event has been signaled"),
    ] {
        let exe = example_path(name);
        let exe: &'static str = Box::leak(exe.display().to_string().into_boxed_str());
        add(
            &format!("example_{name}_on_the_kernel_backend"),
            &[exe],
            Box::new(move |e| example(e, name, want)),
        );
    }
    add("runner_killed", &["sh", "sleep"], Box::new(runner_killed));
    add(
        "flexio_c_api",
        &["gcc", "pkg-config", "/usr/include/infiniband/verbs.h"],
        Box::new(flexio_c_api),
    );
    add(
        "flexio_c_windows_and_cmdq",
        &["gcc", "pkg-config", "/usr/include/infiniband/verbs.h"],
        Box::new(flexio_c_windows_and_cmdq),
    );
    add(
        "flexio_c_qp",
        &["gcc", "pkg-config", "/usr/include/infiniband/verbs.h"],
        Box::new(flexio_c_qp),
    );
    add(
        "flexio_dpacc",
        &[
            "gcc",
            "ar",
            "pkg-config",
            "riscv64-unknown-elf-gcc",
            "/usr/include/infiniband/verbs.h",
        ],
        Box::new(flexio_dpacc),
    );
    let pyverbs_module = "/usr/lib/python3/dist-packages/pyverbs/__init__.py";
    add(
        "ud_qkey_grh_and_mtu",
        &["/usr/bin/python3", pyverbs_module],
        Box::new(ud_checks),
    );
    add(
        "dpdk_testpmd_io_forwarding",
        &["dpdk-testpmd", "stdbuf", "tshark", "/dev/net/tun"],
        Box::new(dpdk_testpmd_io),
    );
    add(
        "dpdk_testpmd_between_two_runners",
        &["dpdk-testpmd", "stdbuf", "/dev/net/tun"],
        Box::new(dpdk_testpmd_two_runners),
    );
    add(
        "dpdk_testpmd_rss_and_flow_rule",
        &["dpdk-testpmd", "stdbuf", "/dev/net/tun"],
        Box::new(dpdk_testpmd_rss_and_flow),
    );
    add(
        "query_device_ex_extensions",
        &["/usr/bin/python3", pyverbs_module],
        Box::new(device_attr_ex),
    );
    add(
        "fork_in_a_client",
        &["/usr/bin/python3", pyverbs_module],
        Box::new(fork_in_a_client),
    );
    add(
        "exit_without_cleanup",
        &["/usr/bin/python3", pyverbs_module],
        Box::new(|e| exit_without_cleanup(e, &["exit", "3"], 3)),
    );
    add(
        "killed_without_cleanup",
        &["/usr/bin/python3", pyverbs_module],
        Box::new(|e| exit_without_cleanup(e, &["kill"], 128 + 9)),
    );
    let suite = pyverbs_suite();
    // Each file with the least number of its tests that must pass (what passes today): a
    // test that starts to skip, because the device stopped offering something, fails here.
    for (m, least) in [
        ("test_device", 12),
        ("test_pd", 4),
        ("test_mr", 5),
        ("test_cq", 3),
        ("test_cqex", 4),
        ("test_cq_events", 2),
        ("test_qp", 16),
        ("test_qpex", 16),
        ("test_atomic", 7),
        ("test_mlx5_uar", 1),
        ("test_mlx5_query_port", 1),
        ("test_mlx5_cq", 5),
        ("test_mlx5_raw_wqe", 1),
        ("test_mlx5_udp_sport", 1),
        ("test_fork", 1),
    ] {
        let s = suite.clone();
        let needs: &[&str] = if s.is_some() {
            &["python3"]
        } else {
            &["pyverbs-tests"]
        };
        add(
            &format!("pyverbs_{m}"),
            needs,
            Box::new(move |e| {
                pyverbs(
                    e,
                    s.as_deref().unwrap_or(Path::new("/nonexistent")),
                    m,
                    least,
                )
            }),
        );
    }
    // rdma-core's DevX traffic test takes the port's MAC and address from the kernel netdev
    // under /sys/class/infiniband/<dev>/device/net (`ip addr`): the runner's TAP interface. It
    // builds its frames with scapy.
    let s = suite.clone();
    add(
        "pyverbs_test_mlx5_devx",
        &[
            "python3",
            "/usr/lib/python3/dist-packages/scapy/__init__.py",
            "/dev/net/tun",
        ],
        Box::new(move |e| {
            pyverbs(
                e,
                s.as_deref().unwrap_or(Path::new("/nonexistent")),
                "test_mlx5_devx",
                1,
            )
        }),
    );
    if !skipped.is_empty() {
        eprintln!("real_clients: {} test(s) skipped:", skipped.len());
        for (n, w) in &skipped {
            eprintln!("  {n}: {w}");
        }
    }
    libtest_mimic::run(&args, trials).exit();
}
