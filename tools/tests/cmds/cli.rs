//! The `mlx5-dpa` binary on the device model: `--sim`, `cmd`, `caps`, `--trace`.

use crate::common;
use common::*;

use mlx5_dpa::mlx5::layout::{Layout, ViewMut};
use mlx5_dpa::mlx5::layouts::{cqc, create_cq_in};

/// NOP (0x80d) with a 16-byte header, as `cmd` accepts it (spaces allowed).
const NOP: &str = "080d0000 00000000 00000000 00000000";
/// An opcode no firmware implements.
const UNKNOWN_OP: &str = "0b7f0000 00000000 00000000 00000000";

fn ok(args: &[&str]) -> (String, String) {
    let o = run(args);
    assert!(
        o.status.success(),
        "mlx5-dpa {args:?} failed\nstdout:\n{}\nstderr:\n{}",
        stdout(&o),
        stderr(&o)
    );
    (stdout(&o), stderr(&o))
}

/// Runs a `cmd` that firmware refuses: exit status 3, the answer printed.
fn refused(args: &[&str]) -> (String, String) {
    let o = run(args);
    assert_eq!(
        o.status.code(),
        Some(3),
        "mlx5-dpa {args:?}\nstdout:\n{}\nstderr:\n{}",
        stdout(&o),
        stderr(&o)
    );
    (stdout(&o), stderr(&o))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A full-length CREATE_CQ inbox with `set` applied to it.
fn create_cq(set: impl FnOnce(&mut ViewMut<'_, create_cq_in::Layout>)) -> String {
    let mut buf = vec![0u8; create_cq_in::Layout::SIZE_BYTES];
    let mut v = ViewMut::<create_cq_in::Layout>::new(&mut buf).unwrap();
    v.set(create_cq_in::opcode, 0x400);
    set(&mut v);
    hex(&buf)
}

#[test]
fn sim_caps_shows_the_dpa() {
    let (out, _) = ok(&["--sim", "caps"]);
    assert!(out.contains("profile bf3"), "{out}");
    assert!(out.contains("DPA capabilities"), "{out}");
    assert!(
        out.lines()
            .any(|l| l.split_whitespace().collect::<Vec<_>>()
                == ["max_num_dpa_thread_per_group", "16"]),
        "{out}"
    );
    // Named bits and log2 fields read as words and numbers, not Rust Debug output.
    assert!(out.contains("thread_affinity_single_hart"), "{out}");
    assert!(!out.contains("DpaCaps {"), "{out}");
    assert!(out.contains("DPA_PROCESS, DPA_THREAD"), "{out}");
    assert!(
        out.contains("model DPA: 16 cores x 16 execution units"),
        "{out}"
    );
    assert!(out.contains("DPA usable (apu, DPA page, process/thread/memory object types): yes"));
}

#[test]
fn sim_cx7_caps_has_no_dpa() {
    let (out, _) = ok(&["--sim=cx7", "caps"]);
    assert!(out.contains("profile cx7"), "{out}");
    assert!(out.contains("DPA: not present"), "{out}");
    assert!(!out.contains("DPA capabilities"), "{out}");
    assert!(!out.contains("model DPA"), "{out}");
}

#[test]
fn unknown_profile_fails_with_the_profile_list() {
    let o = run(&["--sim=nope", "caps"]);
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(err.contains("\"nope\""), "{err}");
    assert!(err.contains("bf3, cx7"), "{err}");
}

#[test]
fn sim_and_device_conflict() {
    let o = run(&["--sim", "--device", "mlx5_0", "caps"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("cannot be used with"), "{}", stderr(&o));
}

#[test]
fn cmd_nop_answers_ok() {
    let (out, err) = ok(&["--sim", "cmd", NOP]);
    assert!(out.contains("command: NOP (0x80d)"), "{out}");
    assert!(out.contains("status:  OK (0x0)"), "{out}");
    assert!(out.contains("syndrome: 0x00000000"), "{out}");
    assert!(
        out.contains("  0000: 00000000 00000000 00000000 00000000"),
        "{out}"
    );
    assert!(!out.contains("model check"), "{out}");
    // No --trace: nothing on stderr.
    assert!(err.is_empty(), "{err}");
}

#[test]
fn cmd_unknown_opcode_names_the_model_check() {
    let (out, _) = refused(&["--sim", "cmd", UNKNOWN_OP]);
    assert!(out.contains("status:  BAD_OP (0x2)"), "{out}");
    assert!(out.contains("syndrome: 0x51310003"), "{out}");
    assert!(
        out.contains("model check: opcode not implemented by this firmware"),
        "{out}"
    );
    assert!(out.contains("  0000: 02000000 51310003"), "{out}");
}

#[test]
fn cmd_create_cq_with_garbage_fields_is_refused_with_a_check() {
    // cqe_sz 3 is neither 64 nor 128 bytes.
    let bad_cqe = create_cq(|v| v.set(create_cq_in::cq_context.at(cqc::cqe_sz), 3));
    let (out, _) = refused(&["--sim", "cmd", &bad_cqe]);
    assert!(out.contains("command: CREATE_CQ (0x400)"), "{out}");
    assert!(out.contains("status:  BAD_PARAM (0x3)"), "{out}");
    assert!(
        out.contains("model check: cqe_sz not 64 or 128 bytes"),
        "{out}"
    );
    assert!(!out.contains("destroyed"), "{out}");

    // A UAR page this context never allocated.
    let bad_uar = create_cq(|v| v.set(create_cq_in::cq_context.at(cqc::uar_page), 0x1234));
    let (out, _) = refused(&["--sim", "cmd", &bad_uar]);
    assert!(out.contains("status:  BAD_RES (0x5)"), "{out}");
    assert!(
        out.contains("model check: uar_page is not an allocated UAR"),
        "{out}"
    );
}

#[test]
fn cmd_reads_hex_from_a_file() {
    let path = std::env::temp_dir().join(format!("mlx5-dpa-cli-nop-{}.hex", std::process::id()));
    std::fs::write(&path, "0x080d0000\n0x00000000\n0x00000000\n0x00000000\n").unwrap();
    let arg = format!("@{}", path.display());
    let (out, _) = ok(&["--sim=cx7", "cmd", &arg, "--out-len", "32"]);
    let _ = std::fs::remove_file(&path);
    assert!(out.contains("status:  OK (0x0)"), "{out}");
    assert!(out.contains("outbox (32 bytes):"), "{out}");
}

#[test]
fn trace_prints_each_command_on_stderr() {
    let (out, err) = ok(&["--sim", "--trace", "cmd", NOP]);
    assert!(out.contains("status:  OK (0x0)"), "{out}");
    let line = err
        .lines()
        .find(|l| l.contains("mlx5_sim::fw") && l.contains("NOP"))
        .unwrap_or_else(|| panic!("no trace line for NOP in:\n{err}"));
    assert!(line.contains("status=OK"), "{line}");
    assert!(line.contains("duration_ns="), "{line}");

    // A refused command is traced with its status and syndrome.
    let (_, err) = refused(&["--sim", "--trace", "cmd", UNKNOWN_OP]);
    assert!(
        err.lines()
            .any(|l| l.contains("status=BAD_OP") && l.contains("syndrome=0x51310003")),
        "{err}"
    );
}

#[test]
fn trace_respects_rust_log() {
    let o = run_env(
        &["--sim", "--trace", "cmd", NOP],
        &[("RUST_LOG", "mlx5_sim=off")],
    );
    assert!(o.status.success());
    assert!(!stderr(&o).contains("NOP"), "{}", stderr(&o));
    // RUST_LOG alone does not turn tracing on.
    let o = run_env(&["--sim", "cmd", NOP], &[("RUST_LOG", "debug")]);
    assert!(o.status.success());
    assert!(stderr(&o).is_empty(), "{}", stderr(&o));
}

#[test]
fn without_hardware_the_model_is_used() {
    if !mlx5_dpa::devx::list_devices().is_empty() {
        eprintln!("hardware present: the fallback is not exercised");
        return;
    }
    let (out, err) = ok(&["caps"]);
    assert!(
        err.contains("no mlx5 device found; using the device model (mlx5-sim, bf3)"),
        "{err}"
    );
    assert!(out.contains("DPA capabilities"), "{out}");

    let (out, _) = ok(&["devices"]);
    assert!(out.contains("No mlx5 devices found"), "{out}");
    assert!(out.contains("--sim[=bf3|cx7]"), "{out}");

    // A named device that does not exist is an error, not a fallback.
    let o = run(&["--device", "mlx5_nope", "caps"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("mlx5_nope"), "{}", stderr(&o));
}

#[test]
fn demo_eth_loopback_sends_receives_and_verifies_every_frame() {
    let dir = std::env::temp_dir().join(format!("mlx5-dpa-demo-eth-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let pcap = dir.join("eth.pcap");
    let (out, _) = ok(&[
        "--sim",
        "demo",
        "eth-loopback",
        "--packets",
        "300",
        "--pcap",
        pcap.to_str().expect("utf-8 path"),
    ]);
    assert!(
        out.contains("sent 300, received 300, verified 300 frames"),
        "{out}"
    );
    assert!(out.contains(" Mpps, "), "the rate: {out}");
    // The loopback port records each frame once, in order: EtherType 0x88b5, then the frame's
    // index as a big-endian u32.
    let frames = mlx5_sim::port::pcap::read_pcap(&std::fs::read(&pcap).expect("pcap written"))
        .expect("a valid pcap");
    assert_eq!(frames.len(), 300);
    for (i, (_, f)) in frames.iter().enumerate() {
        assert_eq!(&f[12..14], &[0x88, 0xb5]);
        assert_eq!(&f[14..18], &(i as u32).to_be_bytes());
        assert!((60..=1514).contains(&f.len()));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn demo_eth_loopback_prints_each_frame_for_small_runs() {
    let (out, _) = ok(&["--sim", "demo", "eth-loopback", "--packets", "3"]);
    assert_eq!(out.matches("sent     #").count(), 3, "{out}");
    assert_eq!(out.matches("  verified").count(), 3, "{out}");
}

#[test]
fn demo_rdma_runs_every_operation_in_loopback_and_across_a_link() {
    for args in [
        &["--sim", "demo", "rdma"][..],
        &["--sim", "demo", "rdma", "--linked"][..],
    ] {
        let (out, _) = ok(args);
        assert!(out.contains("7 operations, 7 verified"), "{args:?}: {out}");
        for op in [
            "SEND ",
            "SEND_IMM",
            "RDMA_WRITE ",
            "RDMA_WRITE_IMM",
            "RDMA_READ",
            "compare-and-swap",
            "fetch-and-add",
        ] {
            assert!(out.contains(op), "{args:?}: no {op} in {out}");
        }
    }
}

#[test]
fn demo_pcap_on_hardware_is_refused_clearly() {
    // --device names hardware; this machine's missing device is reported, never a panic.
    let o = run(&[
        "--device",
        "mlx5_nonexistent",
        "demo",
        "rdma",
        "--pcap",
        "/tmp/x.pcap",
    ]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("mlx5-dpa:"), "{}", stderr(&o));
}

/// Output into a closed pipe ends the tool quietly (SIGPIPE, as for any filter), never with
/// a panic, for every command that prints much: `mlx5-dpa prm layouts | head -1`.
#[test]
fn a_closed_pipe_ends_the_tool_quietly() {
    use std::io::Read;
    use std::os::unix::process::ExitStatusExt;
    use std::process::{Command, Stdio};
    for args in [
        &["prm", "layouts"][..],
        &["--sim", "caps"],
        &["--sim", "cmd", NOP],
        &["prm", "decode", "create_cq_in", &"00".repeat(0x110)],
        &["devices"],
        &["sim", "--seconds", "3"],
    ] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_mlx5-dpa"))
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn");
        // Read one byte, then close the pipe, as `head -c 1` does.
        let mut pipe = child.stdout.take().expect("stdout");
        let mut one = [0u8; 1];
        let _ = pipe.read(&mut one);
        drop(pipe);
        let mut err = String::new();
        child
            .stderr
            .take()
            .expect("stderr")
            .read_to_string(&mut err)
            .expect("stderr");
        let status = child.wait().expect("wait");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert!(
            status.success() || status.signal() == Some(13),
            "{args:?}: {status:?}, stderr {err}"
        );
    }
}

/// Inputs that would take unbounded memory are refused before they are read.
#[test]
fn inputs_and_output_lengths_are_bounded() {
    for args in [
        &["elf", "info", "/dev/zero"][..],
        &["vm", "run", "/dev/zero"],
        &["prm", "decode", "mbox_out", "@/dev/zero"],
        &["--sim", "cmd", "@/dev/zero"],
    ] {
        let o = run(args);
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        assert!(
            stderr(&o).contains("/dev/zero is not a regular file"),
            "{args:?}: {}",
            stderr(&o)
        );
    }
    let big = scratch("cli", "big.hex", &vec![b'0'; (1 << 20) + 2]);
    let o = run(&["prm", "decode", "mbox_out", &format!("@{big}")]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("more than 1048576 bytes"),
        "{}",
        stderr(&o)
    );
    for n in ["4000000000", "65536", "15"] {
        let o = run(&["--sim", "cmd", "--out-len", n, NOP]);
        assert_eq!(o.status.code(), Some(1), "--out-len {n}");
        assert!(stderr(&o).contains("65535"), "{}", stderr(&o));
        assert!(stdout(&o).is_empty(), "nothing sent: {}", stdout(&o));
    }
    let (out, _) = ok(&["--sim", "cmd", "--out-len", "65535", NOP]);
    assert!(out.contains("outbox (65535 bytes):"), "{out}");
}

/// `--sim` / `--device` on a command that talks to no device are usage errors, a misspelt
/// profile too; `--sim PROFILE` with a space works.
#[test]
fn global_options_that_do_not_apply_are_refused() {
    for args in [
        &["--sim=nonsense", "elf", "info", "x"][..],
        &["--sim", "prm", "layouts"],
        &["--device", "mlx5_0", "vm", "run", "x"],
        &["--device", "mlx5_0", "sim"],
        &["--sim=nonsense", "caps"],
    ] {
        let o = run(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stdout(&o));
        assert!(
            stderr(&o).starts_with("mlx5-dpa: "),
            "{args:?}: {}",
            stderr(&o)
        );
    }
    let (out, _) = ok(&["--sim", "cx7", "caps"]);
    assert!(out.contains("profile cx7"), "{out}");
    let (out, _) = ok(&["caps", "--sim", "cx7"]);
    assert!(out.contains("profile cx7"), "{out}");
}

/// What scripts read: one JSON object each, with the figures the text shows.
#[test]
fn json_outputs_parse() {
    let parse = |args: &[&str]| -> serde_json::Value {
        let o = run(args);
        serde_json::from_str(&stdout(&o))
            .unwrap_or_else(|e| panic!("{args:?}: {e}\n{}", stdout(&o)))
    };
    let d = parse(&["devices", "--json"]);
    assert!(d["devices"].is_array());
    assert!(d["model_profiles"].as_array().is_some_and(|p| p.len() >= 2));
    let c = parse(&["--sim", "caps", "--json"]);
    assert_eq!(c["general"]["apu"], true);
    assert_eq!(c["dpa"]["max_num_dpa_thread_per_group"], 16);
    assert_eq!(c["dpa"]["usable"], true);
    assert_eq!(c["model"]["profile"], "bf3");
    assert!(c["obj_types"]
        .as_array()
        .unwrap()
        .iter()
        .any(|t| t == "DPA_THREAD"));
    let c = parse(&["--sim=cx7", "caps", "--json"]);
    assert!(c["dpa"].is_null());
    let r = parse(&["--sim", "cmd", UNKNOWN_OP, "--json"]);
    assert_eq!(r["status"], 2);
    assert_eq!(r["status_name"], "BAD_OP");
    assert_eq!(r["syndrome"], 0x5131_0003);
    let r = parse(&["--sim", "cmd", NOP, "--json"]);
    assert_eq!(r["status_name"], "OK");
    assert_eq!(r["opcode_name"], "NOP");
    let p = parse(&[
        "prm",
        "decode",
        "alloc_pd_out",
        "00000000 00000000 00000017 00000000",
        "--json",
    ]);
    assert_eq!(p["fields"]["pd"], 0x17);
    let v = parse(&[
        "vm",
        "run",
        &repo("fw-blobs/bin/rpc_calc.elf"),
        "--entry",
        "rpc_calculate",
        "--args",
        "44,55",
        "--json",
    ]);
    assert_eq!(v["return_value"], 99);
}

/// A long `demo eth-loopback` shows progress with a rate; Ctrl-C stops sending, collects what
/// is in flight, and prints the summary; the exit status is an interrupted process's, 130
/// (regression: it was 0).
#[test]
fn demo_eth_loopback_reports_progress_and_stops_on_ctrl_c() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    let mut child = Command::new(env!("CARGO_BIN_EXE_mlx5-dpa"))
        .args(["--sim", "demo", "eth-loopback", "--packets", "1000000000"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    // The first progress line comes after a second of traffic.
    let progress = lines
        .by_ref()
        .map_while(Result::ok)
        .find(|l| l.starts_with("... "))
        .expect("a progress line");
    assert!(progress.contains(" Mpps"), "{progress}");
    let kill = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(kill.success());
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    let status = child.wait().expect("wait");
    assert_eq!(status.code(), Some(130), "{status:?}: {rest:?}");
    let summary = rest
        .iter()
        .find(|l| l.starts_with("sent "))
        .unwrap_or_else(|| panic!("no summary in {rest:?}"));
    assert!(summary.contains("(interrupted after "), "{summary}");
    // Everything sent came back and was checked.
    let n: Vec<&str> = summary
        .split(|c: char| !c.is_ascii_digit())
        .filter(|t| !t.is_empty())
        .collect();
    assert_eq!(n[0], n[1], "sent = received: {summary}");
    assert_eq!(n[1], n[2], "received = verified: {summary}");
}

/// Without a GPU (or a tool built without `--features gpu`) the GPU demos say why, and fail.
#[test]
fn gpu_demos_without_a_gpu_say_why() {
    for demo in ["gpu-send", "gpu-recv", "gpu-verbs"] {
        let o = run(&["demo", demo]);
        let err = stderr(&o);
        assert!(!o.status.success(), "{demo} succeeded without a GPU");
        assert!(
            err.contains("built without GPU support") || err.contains("no CUDA"),
            "{demo}: {err}"
        );
    }
}

/// One mistake, one exit status (regression: a missing `--layout-overrides` file exited 2, a
/// missing `capture show` file 1): a file that cannot be read is bad input, 1.
#[test]
fn a_missing_file_is_bad_input_wherever_it_is_named() {
    for args in [
        &["--layout-overrides", "/nonexistent", "prm", "layouts"][..],
        &["capture", "show", "/nonexistent"][..],
        &["coredump", "show", "/nonexistent"][..],
        &["elf", "info", "/nonexistent"][..],
    ] {
        let o = run(args);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("/nonexistent"),
            "{args:?}: {}",
            stderr(&o)
        );
    }
}

/// `--version` names the build (git revision, features); `completions SHELL` and `man` print
/// what a packager installs; the global options sit under their own heading, one line each
/// in short help.
#[test]
fn version_completions_man_and_global_options() {
    let o = run(&["--version"]);
    assert!(o.status.success());
    let v = stdout(&o);
    assert!(v.starts_with("mlx5-dpa 0.1.0 (git "), "{v}");
    assert!(v.contains("features: "), "{v}");
    for shell in ["bash", "zsh", "fish"] {
        let o = run(&["completions", shell]);
        assert!(o.status.success(), "{shell}: {}", stderr(&o));
        assert!(stdout(&o).contains("mlx5-dpa"), "{shell}");
        assert!(
            stdout(&o).contains("coredump"),
            "{shell}: subcommands completed"
        );
    }
    let o = run(&["completions", "tcsh"]);
    assert_eq!(o.status.code(), Some(2));
    let o = run(&["man"]);
    assert!(o.status.success());
    assert!(stdout(&o).contains(".TH mlx5-dpa 1"), "{}", stdout(&o));
    let o = run(&["eu", "-h"]);
    let help = stdout(&o);
    let globals = help
        .split("Global options:")
        .nth(1)
        .expect("a global heading");
    assert!(globals.contains("--sim-trust <CERT>"), "{help}");
    assert!(
        help.lines().all(|l| l.len() <= 120),
        "short help has long lines:\n{help}"
    );
}

/// Numbers are taken in decimal or hex wherever the tool takes a number (regression: only
/// some commands took hex), and refused with the option's name otherwise.
#[test]
fn numbers_in_hex_or_decimal_everywhere() {
    let (out, _) = ok(&["--sim", "demo", "eth-loopback", "--packets", "0x3"]);
    assert!(out.contains("sent 3"), "{out}");
    let o = run(&[
        "vm",
        "run",
        &repo("fw-blobs/bare/bin/sort.elf"),
        "--max-insns",
        "0x3e8",
    ]);
    assert!(stdout(&o).contains("instructions: 1000"), "{}", stdout(&o));
    let o = run(&["--sim", "demo", "eth-loopback", "--packets", "4k"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--packets"), "{}", stderr(&o));
    let o = run(&["--sim", "eu", "show", "--max-id", "0x10000"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("out of range"), "{}", stderr(&o));
}

/// `--trace` shows the driver's side too (issue 31: tracing in the driver): each command it
/// sends with status and syndrome, and each object it creates and destroys, which balance.
#[test]
fn trace_shows_the_drivers_commands_and_object_lifetimes() {
    let o = run(&["--sim", "--trace", "demo", "rpc", "1", "2"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    let driver: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("mlx5_dpa::devx:"))
        .collect();
    assert!(
        driver
            .iter()
            .any(|l| l.contains("command opcode=QUERY_HCA_CAP") && l.contains("status=0")),
        "{err}"
    );
    let created = driver
        .iter()
        .filter(|l| l.contains("object created"))
        .count();
    let destroyed = driver
        .iter()
        .filter(|l| l.contains("object destroyed"))
        .count();
    assert!(created > 5, "{created} objects: {err}");
    assert_eq!(
        created, destroyed,
        "every object the demo made is destroyed"
    );
}

/// `--trace` shows the driver's waits on the device (issue 31): each names what it waited
/// for and how long it took, and the RPC demo waits for its copies' completions and for the
/// DPA thread.
#[test]
fn trace_shows_the_drivers_waits() {
    let o = run(&["--sim", "--trace", "demo", "rpc", "1", "2"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    let waits: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("mlx5_dpa::wait:"))
        .collect();
    assert!(
        waits.iter().any(|l| l.contains("what=\"a completion\"")),
        "{err}"
    );
    assert!(
        waits
            .iter()
            .any(|l| l.contains("what=\"a DPA thread to finish\"")),
        "{err}"
    );
    assert!(
        waits
            .iter()
            .all(|l| l.contains("wait ended") && l.contains(" us=")),
        "{err}"
    );
}
