//! `mlx5-dpa vm run --gdb`: `gdb-multiarch` (Debian's package), in batch mode, attached to the
//! bare machine: breakpoints, registers, single step, memory, the stops a run can make.
//! Where `gdb-multiarch` is missing the tests are reported ignored, with the reason
//! (`tools/build.rs`); `.ci/run` installs it.

use crate::common;
use common::*;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Longest a step of a test (gdb's session, the server's start, its exit) may take.
const WAIT: Duration = Duration::from_secs(60);

/// `mlx5-dpa vm run ARGS --gdb 127.0.0.1:0`, started; returns it and the port it listens on
/// (read from its standard error).
fn start_server(args: &[&str]) -> (Child, u16) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_mlx5-dpa"))
        .args(args)
        .args(["--gdb", "127.0.0.1:0"])
        .env_remove("RUST_LOG")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start mlx5-dpa");
    let err = child.stderr.take().expect("stderr");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(err).lines().map_while(Result::ok) {
            if let Some(p) = line.strip_prefix("gdbserver: listening on 127.0.0.1:") {
                let _ = tx.send(p.trim().parse::<u16>().ok());
            }
        }
    });
    match rx.recv_timeout(WAIT) {
        Ok(Some(port)) => (child, port),
        other => {
            let _ = child.kill();
            panic!("no listening line from the server: {other:?}");
        }
    }
}

/// Runs `gdb-multiarch` in batch mode on `elf`, connected to `port`, with `commands`; returns
/// what it printed (both streams).
fn gdb(elf: &str, port: u16, commands: &[&str]) -> String {
    gdb_on(elf, &format!("target remote 127.0.0.1:{port}"), commands)
}

/// As [`gdb`], connected with `target` (e.g. `target extended-remote ...`).
fn gdb_on(elf: &str, target: &str, commands: &[&str]) -> String {
    let mut c = Command::new("gdb-multiarch");
    c.args([
        "-batch",
        "-nx",
        "-ex",
        "set confirm off",
        "-ex",
        "set pagination off",
    ])
    .arg("-ex")
    .arg(format!("file {elf}"))
    .arg("-ex")
    .arg(target);
    for cmd in commands {
        c.arg("-ex").arg(cmd);
    }
    let mut child = c
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start gdb-multiarch");
    let status = wait(&mut child);
    let out = child.wait_with_output().expect("gdb output");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(status.is_some(), "gdb-multiarch did not finish:\n{text}");
    text
}

/// Waits for `child` at most `WAIT` (killing it after); its exit code, `None` if killed.
fn wait(child: &mut Child) -> Option<i32> {
    let start = Instant::now();
    loop {
        if let Some(s) = child.try_wait().expect("wait") {
            return Some(s.code().unwrap_or(-1));
        }
        if start.elapsed() > WAIT {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The server's exit code and standard output, once it ended.
fn server_end(mut child: Child) -> (Option<i32>, String) {
    let code = wait(&mut child);
    let out = child.wait_with_output().expect("server output");
    (code, String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The value of ELF symbol `name` in `path`.
fn symbol(path: &str, name: &str) -> u64 {
    let bytes = std::fs::read(path).expect("read ELF");
    let elf = mlx5_dpa::dpa::elf::Elf::parse(&bytes).expect("parse ELF");
    elf.symbol(name).expect("symbol").value
}

/// The hex number after `prefix` in `text` (first occurrence).
fn hex_after(text: &str, prefix: &str) -> Option<u64> {
    let at = text.find(prefix)? + prefix.len();
    let rest = text[at..].trim_start().trim_start_matches("0x");
    let digits: String = rest.chars().take_while(char::is_ascii_hexdigit).collect();
    u64::from_str_radix(&digits, 16).ok()
}

#[test]
#[cfg_attr(no_gdb_multiarch, ignore = "gdb-multiarch is not installed")]
fn breakpoints_registers_steps_and_memory() {
    let elf = repo("fw-blobs/bare/bin/compute.elf");
    let compute = symbol(&elf, "compute");
    // What compute(5) returns, from a run without the debugger.
    let plain = run(&[
        "vm", "run", &elf, "--entry", "compute", "--args", "5", "--json",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&plain.stdout).expect("json");
    let expected = v["return_value"].as_u64().expect("return value");

    let (server, port) = start_server(&["vm", "run", &elf]);
    let out = gdb(
        &elf,
        port,
        &[
            "break compute",
            "continue",
            "printf \"stopped-pc %#lx\\n\", $pc",
            "stepi",
            "printf \"stepped-pc %#lx\\n\", $pc",
            "set {unsigned int}($sp - 128) = 0x1234abcd",
            "printf \"memory %#x\\n\", *(unsigned int *)($sp - 128)",
            // main's compute(n) becomes compute(5): the rest of the run shows whether the
            // register write took.
            "set $pc = compute",
            "set $a0 = 5",
            "delete",
            "continue",
        ],
    );
    let (code, stdout) = server_end(server);

    assert_eq!(
        hex_after(&out, "Breakpoint 1 at "),
        Some(compute),
        "breakpoint at the ELF's compute:\n{out}"
    );
    assert_eq!(hex_after(&out, "stopped-pc "), Some(compute), "{out}");
    let stepped = hex_after(&out, "stepped-pc ").expect("pc after stepi");
    assert!(
        stepped == compute + 2 || stepped == compute + 4,
        "one instruction on from {compute:#x}: {stepped:#x}\n{out}"
    );
    assert_eq!(hex_after(&out, "memory "), Some(0x1234_abcd), "{out}");
    // The program reports compute's result and exits with its low 7 bits.
    assert!(
        stdout.contains(&format!("compute {expected:016x}")),
        "the run went on with a0 = 5: {stdout}\n{out}"
    );
    let exit = (expected & 0x7f) as i32;
    assert_eq!(code, Some(exit), "{stdout}");
    let told = if exit == 0 {
        "exited normally".to_string()
    } else {
        format!("exited with code 0{exit:o}") // gdb prints the code in octal, with a leading 0
    };
    assert!(out.contains(&told), "gdb saw the exit ({told}):\n{out}");
}

#[test]
#[cfg_attr(no_gdb_multiarch, ignore = "gdb-multiarch is not installed")]
fn the_budget_and_faults_stop_with_their_signals() {
    let elf = repo("fw-blobs/bare/bin/compute.elf");

    // The instruction budget is the watchdog: SIGXCPU.
    let (server, port) = start_server(&["vm", "run", &elf, "--max-insns", "1000"]);
    let out = gdb(&elf, port, &["continue", "kill"]);
    let (code, _) = server_end(server);
    assert!(out.contains("SIGXCPU"), "{out}");
    assert_eq!(code, Some(1), "killed by the debugger: failure");

    // A fetch from an unmapped address: SIGSEGV, with the pc at it.
    let (server, port) = start_server(&["vm", "run", &elf]);
    let out = gdb(
        &elf,
        port,
        &[
            "set $pc = 0x10",
            "continue",
            "printf \"fault-pc %#lx\\n\", $pc",
            "detach",
        ],
    );
    let (code, stdout) = server_end(server);
    assert!(out.contains("SIGSEGV"), "{out}");
    assert_eq!(hex_after(&out, "fault-pc "), Some(0x10), "{out}");
    // Detached, the run goes on from where it was, and faults again.
    assert_eq!(code, Some(1), "{stdout}");
    assert!(stdout.contains("fault"), "{stdout}");
}

#[test]
#[cfg_attr(no_gdb_multiarch, ignore = "gdb-multiarch is not installed")]
fn gdb_opens_a_core_file_of_a_faulting_call() {
    let elf = repo("fw-blobs/bin/selftest.elf");
    let image = scratch("gdb", "fault.dump", b"");
    let core = scratch("gdb", "fault.core", b"");
    let o = run(&[
        "coredump",
        "rpc",
        &elf,
        "st_fault_load",
        "--args",
        "0x10",
        "--image",
        &image,
        "--core",
        &core,
    ]);
    // The call faulted, as asked: exit status 1, the files written.
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let shown = run(&["coredump", "show", &image, "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&shown.stdout).expect("json");
    let sp = v["registers"]["sp"].as_u64().expect("sp");

    let mut c = Command::new("gdb-multiarch");
    c.args(["-batch", "-nx", &elf, &core])
        .args([
            "-ex",
            "printf \"pc %#lx a0 %#lx sp %#lx\\n\", $pc, $a0, $sp",
        ])
        .args(["-ex", "info symbol $pc"])
        .args([
            "-ex",
            "printf \"word %#lx\\n\", *(unsigned long *)($sp + 8)",
        ])
        .args(["-ex", "bt"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().expect("gdb-multiarch");
    assert!(wait(&mut child).is_some(), "gdb-multiarch did not finish");
    let out = child.wait_with_output().expect("output");
    let out = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.contains("Program terminated with signal SIGSEGV"),
        "{out}"
    );
    assert_eq!(hex_after(&out, "pc "), v["pc"].as_u64(), "{out}");
    assert_eq!(hex_after(&out, " a0 "), Some(0x10), "{out}");
    assert_eq!(hex_after(&out, " sp "), Some(sp), "{out}");
    assert!(out.contains("st_fault_load in section .text"), "{out}");
    // The return address the RPC entry pushed, read from the core's stack segment; the
    // backtrace walks through it.
    let listed = stdout(&run(&["coredump", "show", &image]));
    let in_dump = hex_after(&listed, &format!("stack {:#014x}: ", sp + 8));
    assert!(
        in_dump.is_some(),
        "the dump lists the word at sp + 8:\n{listed}"
    );
    assert_eq!(hex_after(&out, "word "), in_dump, "{out}");
    assert!(out.contains("mlx5_dpa_rpc_entry"), "{out}");
}

#[test]
#[cfg_attr(no_gdb_multiarch, ignore = "gdb-multiarch is not installed")]
fn gdb_debugs_a_dpa_process_of_the_model() {
    let elf = repo("fw-blobs/bin/rpc_calc.elf");
    let (server, port) = start_server(&["demo", "rpc", "44", "55"]);
    let out = gdb(
        &elf,
        port,
        &[
            "info threads",
            "monitor token",
            "break rpc_calculate",
            "continue",
            "printf \"args %d %d\\n\", $a0, $a1",
            "printf \"stopped-pc %#lx\\n\", $pc",
            "stepi",
            "printf \"stepped-pc %#lx\\n\", $pc",
            "delete",
            "continue",
        ],
    );
    let (code, stdout) = server_end(server);
    assert_eq!(code, Some(0), "{stdout}\n{out}");
    assert!(stdout.contains("Result: 99"), "{stdout}");
    // The token the demo printed, as FlexIO's samples do, is the one the server names.
    let token = hex_after(&stdout, "Use the token >>> ").expect("a token line");
    assert_eq!(hex_after(&out, "token "), Some(token), "{out}");
    // The DPA thread, stopped on its EU at its first instruction before GDB continued it.
    assert!(
        out.contains("DPA thread 0x") && out.contains("stopped on EU"),
        "{out}"
    );
    assert!(out.contains("Breakpoint 1, "), "{out}");
    assert!(out.contains("args 44 55"), "{out}");
    let stopped = hex_after(&out, "stopped-pc ").expect("pc");
    let stepped = hex_after(&out, "stepped-pc ").expect("pc after stepi");
    assert!(
        stepped == stopped + 2 || stepped == stopped + 4,
        "{stopped:#x} -> {stepped:#x}\n{out}"
    );
}

#[test]
#[cfg_attr(no_gdb_multiarch, ignore = "gdb-multiarch is not installed")]
fn gdb_stops_the_packet_processors_handler() {
    let elf = repo("fw-blobs/bin/pp_sample.elf");
    let (server, port) = start_server(&["demo", "packet-processor"]);
    let out = gdb(
        &elf,
        port,
        &[
            "break flexio_pp_dev",
            "continue",
            "info threads",
            "delete",
            "continue",
        ],
    );
    let (code, stdout) = server_end(server);
    assert_eq!(code, Some(0), "{stdout}\n{out}");
    assert!(
        out.contains("Breakpoint 1, ") && out.contains("in flexio_pp_dev"),
        "{out}"
    );
    assert!(out.contains("stopped on EU"), "{out}");
    assert!(stdout.contains("Use the token >>> 0x"), "{stdout}");
    assert!(stdout.contains("verified: MACs swapped"), "{stdout}");
}

#[test]
#[cfg_attr(no_gdb_multiarch, ignore = "gdb-multiarch is not installed")]
fn gdb_lists_the_multithread_samples_workers_as_threads_on_their_eus() {
    let elf = repo("fw-blobs/bin/matmul.elf");
    let (server, port) = start_server(&["demo", "multithread"]);
    let out = gdb(&elf, port, &["info threads", "continue"]);
    let (code, stdout) = server_end(server);
    assert_eq!(code, Some(0), "{stdout}\n{out}");
    assert!(stdout.contains("C matches the host's product"), "{stdout}");
    // Each command-queue worker stopped at its first instruction, each on an EU of its own.
    let eus: std::collections::BTreeSet<&str> = out
        .lines()
        .filter_map(|l| l.split("stopped on EU ").nth(1))
        .filter_map(|r| r.split(')').next())
        .collect();
    assert!(eus.len() >= 2, "workers on distinct EUs: {eus:?}\n{out}");
}

#[test]
#[cfg_attr(no_gdb_multiarch, ignore = "gdb-multiarch is not installed")]
fn gdb_stops_a_doca_dpa_kernel() {
    let elf = repo("fw-blobs/bin/doca_kernels.elf");
    let (server, port) = start_server(&["demo", "doca-dpa", "binary-tree", "--delay-ms", "0"]);
    let out = gdb(
        &elf,
        port,
        &[
            "break binary_tree_kernel",
            "continue",
            "info threads",
            "delete",
            "continue",
        ],
    );
    let (code, stdout) = server_end(server);
    assert_eq!(code, Some(0), "{stdout}\n{out}");
    assert!(stdout.contains("Use the token >>> 0x"), "{stdout}");
    assert!(
        out.contains("Breakpoint 1, ") && out.contains("binary_tree_kernel"),
        "{out}"
    );
    assert!(out.contains("stopped on EU"), "{out}");
    // The sample ran to its end after GDB let it go: its last kernel's completion.
    assert!(
        stdout.contains("Completion event kernel G has been signaled"),
        "{stdout}"
    );
}

/// As [`start_server`], also reading the server's standard output: returns the debug token it
/// printed ("Use the token >>> 0x... <<<") and a handle that yields the whole output once
/// the server ends.
fn start_server_with_token(args: &[&str]) -> (Child, u16, u64, std::thread::JoinHandle<String>) {
    let (mut child, port) = start_server(args);
    let out = child.stdout.take().expect("stdout");
    let (tx, rx) = mpsc::channel();
    let all = std::thread::spawn(move || {
        let mut text = String::new();
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if let Some(t) = hex_after(&line, "Use the token >>> ") {
                let _ = tx.send(t);
            }
            text.push_str(&line);
            text.push('\n');
        }
        text
    });
    match rx.recv_timeout(WAIT) {
        Ok(token) => (child, port, token, all),
        Err(e) => {
            let _ = child.kill();
            panic!("no token line from the server: {e}");
        }
    }
}

#[test]
#[cfg_attr(no_gdb_multiarch, ignore = "gdb-multiarch is not installed")]
fn extended_mode_attaches_the_process_by_its_token() {
    let elf = repo("fw-blobs/bin/rpc_calc.elf");
    let (mut server, port, token, stdout) = start_server_with_token(&["demo", "rpc", "44", "55"]);
    // Odd like every token, and not this one.
    let wrong = token ^ 0x10;
    let out = gdb_on(
        &elf,
        &format!("target extended-remote 127.0.0.1:{port}"),
        &[
            "info threads",
            "monitor ps",
            &format!("attach {wrong:#x}"),
            &format!("attach {token:#x}"),
            "monitor token",
            "break rpc_calculate",
            "continue",
            "printf \"args %d %d\\n\", $a0, $a1",
            "delete",
            "detach",
        ],
    );
    let code = wait(&mut server);
    let stdout = stdout.join().expect("server output");
    assert_eq!(code, Some(0), "{stdout}\n{out}");
    assert!(stdout.contains("Result: 99"), "{stdout}");
    // Extended mode starts with nothing attached; the demo's process waits, listed by token.
    assert!(out.contains("No threads."), "{out}");
    assert!(
        out.contains(&format!("token {token:#x}, waiting for its debugger")),
        "{out}"
    );
    assert!(
        out.contains(&format!("Attaching to process {wrong} failed")),
        "{out}"
    );
    assert_eq!(
        hex_after(&out, "DPA process 0x1, token "),
        Some(token),
        "{out}"
    );
    assert!(out.contains("Breakpoint 1, "), "{out}");
    assert!(out.contains("args 44 55"), "{out}");
}

#[test]
#[cfg_attr(no_gdb_multiarch, ignore = "gdb-multiarch is not installed")]
fn sim_serves_its_running_processes_by_token() {
    let elf = repo("fw-blobs/bin/pp_sample.elf");
    let (mut server, port, token, stdout) =
        start_server_with_token(&["sim", "--app", "packet-processor", "--seconds", "600"]);
    let out = gdb_on(
        &elf,
        &format!("target extended-remote 127.0.0.1:{port}"),
        &[
            &format!("attach {token:#x}"),
            "info threads",
            "x/2i $pc",
            "monitor ps",
            "detach",
        ],
    );
    // Ctrl-C ends the model's run early, with its summary.
    let pid = nix::unistd::Pid::from_raw(i32::try_from(server.id()).expect("pid"));
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).expect("SIGINT");
    let code = wait(&mut server);
    let stdout = stdout.join().expect("server output");
    assert_eq!(code, Some(130), "{stdout}\n{out}");
    assert!(stdout.contains("interrupted"), "{stdout}");
    // The handler's thread, waiting for its next frame, and its code read from DPA memory.
    assert!(
        out.contains("DPA thread 0x") && out.contains("waiting"),
        "{out}"
    );
    assert!(out.contains("<flexio_pp_dev"), "{out}");
    assert!(
        out.contains(&format!("token {token:#x}, debugger attached")),
        "{out}"
    );
}

/// Waits (bounded) until `ps --connect` is served again, and finds the demo's process still
/// waiting for its debugger.
fn served_again(port: u16) {
    let deadline = Instant::now() + WAIT;
    loop {
        let o = ps(port);
        if o.status.success() {
            assert!(
                stdout(&o).contains("waiting for its debugger"),
                "{}",
                stdout(&o)
            );
            return;
        }
        assert!(Instant::now() < deadline, "{}", stderr(&o));
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `mlx5-dpa ps --connect 127.0.0.1:PORT`.
fn ps(port: u16) -> std::process::Output {
    run(&["ps", "--connect", &format!("127.0.0.1:{port}")])
}

/// Regression (issue 30, defect 7): a connection that opened and closed at once (a port scan)
/// released the process a `--gdb` demo holds at its entry, so it ran without its debugger.
/// Silent connections now leave it waiting; no GDB is needed to show it.
#[test]
fn a_port_scan_leaves_the_waiting_process_waiting() {
    let (mut child, port, token, _out) = start_server_with_token(&["demo", "rpc", "44", "55"]);
    for _ in 0..3 {
        drop(std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect"));
    }
    // A connection that says nothing is closed after its wait; nothing is let go either.
    let silent = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
    let o = ps(port);
    drop(silent);
    let text = stdout(&o);
    assert!(o.status.success(), "{text}{}", stderr(&o));
    let line = text
        .lines()
        .find(|l| l.contains(&format!("token {token:#x}")))
        .unwrap_or_else(|| panic!("no process with token {token:#x}: {text}"));
    assert!(line.ends_with(", waiting for its debugger"), "{line}");
    assert_eq!(child.try_wait().expect("try_wait"), None, "the demo ran on");
    let _ = child.kill();
    let _ = child.wait();
}

/// Regression (issue 30, defect 7): one connected client blocked every other one forever
/// (`ps --connect` then said "no answer"). Another connection is now told the server is busy,
/// at once, and served once the first goes.
#[test]
fn a_second_client_is_told_the_server_is_busy() {
    use std::io::{Read, Write};
    let (mut child, port, _token, _out) = start_server_with_token(&["demo", "rpc", "44", "55"]);
    let mut first = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
    // Extended mode: a session, attached to nothing, left open.
    first.write_all(b"$!#21").expect("write");
    let mut reply = [0u8; 7];
    first.set_read_timeout(Some(WAIT)).expect("timeout");
    first.read_exact(&mut reply).expect("the server's answer");
    assert_eq!(&reply, b"+$OK#9a");
    let start = Instant::now();
    let o = ps(port);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("is busy: another debugger is connected to this gdbserver"),
        "{}",
        stderr(&o)
    );
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
    drop(first);
    // Served again once the first session has ended (it notices the close at once).
    served_again(port);
    let _ = child.kill();
    let _ = child.wait();
}

/// Regression (issue 30, defect 7): with 200 idle connections `ps --connect` said "refused"
/// (the backlog was full). Past 64 connections that have not spoken, a new one is told why;
/// once they go, the server answers again.
#[test]
fn a_flood_of_silent_connections_is_named_and_passes() {
    let (mut child, port, _token, _out) = start_server_with_token(&["demo", "rpc", "44", "55"]);
    let silent: Vec<std::net::TcpStream> = (0..200)
        .map(|_| std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect"))
        .collect();
    // Every connection is accepted at once; the 64 first wait to speak.
    let deadline = Instant::now() + WAIT;
    loop {
        let o = ps(port);
        let err = stderr(&o);
        if err.contains("too many connections are waiting to speak to this gdbserver") {
            break;
        }
        assert!(Instant::now() < deadline, "{err}");
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(silent);
    served_again(port);
    let _ = child.kill();
    let _ = child.wait();
}
