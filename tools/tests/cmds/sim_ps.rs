//! `mlx5-dpa sim --app packet-processor --ps`: the model's DPA process table and counters at
//! the end of the run.

use crate::common;
use common::*;

#[test]
fn the_packet_processors_process_and_thread_are_listed() {
    let o = run(&["sim", "--app", "packet-processor", "--seconds", "1", "--ps"]);
    let text = stdout(&o);
    assert!(o.status.success(), "{text}{}", stderr(&o));
    assert!(text.contains("DPA processes: 1"), "{text}");
    let process = text
        .lines()
        .find(|l| l.trim_start().starts_with("process 0x"))
        .expect("a process line");
    assert!(
        process.contains(": ok,") && process.contains("1 thread(s)"),
        "{process}"
    );
    let thread = text
        .lines()
        .find(|l| l.trim_start().starts_with("thread 0x"))
        .expect("a thread line");
    assert!(thread.contains("affinity any"), "{thread}");
    assert!(text.contains("DPA counters: "), "{text}");
    // --ps without --app: an empty table, said so.
    let o = run(&["sim", "--seconds", "0", "--ps"]);
    assert!(stdout(&o).contains("DPA processes: 0"), "{}", stdout(&o));
}

/// `mlx5-dpa sim --app packet-processor --gdb 127.0.0.1:0`, started: the child, the
/// packet processor's debug token, the GDB server's port, and the rest of its standard output
/// (read on a thread of its own until it ends, so `sim` never writes into a closed pipe).
fn start_sim_with_gdb() -> (
    std::process::Child,
    u64,
    u16,
    std::thread::JoinHandle<String>,
) {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    let mut sim = Command::new(env!("CARGO_BIN_EXE_mlx5-dpa"))
        .args([
            "sim",
            "--app",
            "packet-processor",
            "--seconds",
            "600",
            "--gdb",
            "127.0.0.1:0",
        ])
        .env_remove("RUST_LOG")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start mlx5-dpa sim");
    // The token from standard output, the port from standard error (both before the run).
    let mut lines = BufReader::new(sim.stdout.take().expect("stdout")).lines();
    let token = lines
        .by_ref()
        .map_while(Result::ok)
        .find_map(|l| {
            l.split("Use the token >>> ")
                .nth(1)
                .and_then(|r| r.split_whitespace().next())
                .and_then(|t| u64::from_str_radix(t.trim_start_matches("0x"), 16).ok())
        })
        .expect("a token line");
    let rest = std::thread::spawn(move || {
        lines
            .map_while(Result::ok)
            .map(|l| l + "\n")
            .collect::<String>()
    });
    // Standard error read to its end on a thread of its own, so the server never blocks on it.
    let err = sim.stderr.take().expect("stderr");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for l in BufReader::new(err).lines().map_while(Result::ok) {
            if let Some(p) = l.strip_prefix("gdbserver: listening on 127.0.0.1:") {
                let _ = tx.send(p.trim().parse::<u16>().ok());
            }
        }
    });
    let port = rx
        .recv_timeout(std::time::Duration::from_secs(60))
        .ok()
        .flatten()
        .expect("a listening line");
    (sim, token, port, rest)
}

/// `mlx5-dpa ps --connect`: the table of a model inside another program, asked of that
/// program's GDB server (`sim --gdb`), with each process's debug token.
#[test]
fn ps_lists_another_programs_processes_through_its_gdb_server() {
    let (mut sim, token, port, _rest) = start_sim_with_gdb();
    let addr = format!("127.0.0.1:{port}");
    // Twice: asking attaches nothing and lets nothing go.
    for _ in 0..2 {
        let o = run(&["ps", "--connect", &addr]);
        let text = stdout(&o);
        assert!(o.status.success(), "{text}{}", stderr(&o));
        assert!(text.contains("DPA processes: 1"), "{text}");
        let process = text
            .lines()
            .find(|l| l.trim_start().starts_with("process 0x"))
            .expect("a process line");
        assert!(
            process.ends_with(&format!("1 thread(s), token {token:#x}")),
            "{process}"
        );
        assert!(text.contains("    thread 0x"), "{text}");
        assert!(text.contains("DPA counters: "), "{text}");
    }
    let pid = nix::unistd::Pid::from_raw(i32::try_from(sim.id()).expect("pid"));
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).expect("SIGINT");
    let status = sim.wait().expect("sim ends");
    assert_eq!(status.code(), Some(130), "{status:?}");
    // Nobody there: a clear error.
    let o = run(&["ps", "--connect", &addr]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains(&format!("cannot reach the GDB server at {addr}")),
        "{}",
        stderr(&o)
    );
}

/// Regression: SIGINT was caught only once set-up was over, so a Ctrl-C right after the GDB
/// server's line (when a client may already act on it) killed `sim` without its summary.
#[test]
fn ctrl_c_right_after_set_up_ends_sim_with_its_summary() {
    let (mut sim, _, _, rest) = start_sim_with_gdb();
    let pid = nix::unistd::Pid::from_raw(i32::try_from(sim.id()).expect("pid"));
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).expect("SIGINT");
    let status = sim.wait().expect("sim ends");
    let text = rest.join().expect("output");
    assert_eq!(status.code(), Some(130), "{status:?}\n{text}");
    assert!(
        text.contains("interrupted") && text.contains("packet processor: rx"),
        "{text}"
    );
}

/// A fake GDB server on a free port: answers the first packet with `reply`, then waits for
/// the client to go. Returns the port.
fn fake_server(reply: Vec<u8>) -> u16 {
    use std::io::{Read, Write};
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = l.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        if let Ok((mut s, _)) = l.accept() {
            let mut b = [0u8; 64];
            let _ = s.read(&mut b);
            let _ = s.write_all(&reply);
            // Until the client closes.
            let mut sink = [0u8; 4096];
            while matches!(s.read(&mut sink), Ok(1..)) {}
        }
    });
    port
}

/// `$payload#sum` with a plus in front (the acknowledgement of the client's packet).
fn answer(payload: &[u8]) -> Vec<u8> {
    let sum = payload.iter().fold(0u8, |a, b| a.wrapping_add(*b));
    let mut v = b"+$".to_vec();
    v.extend_from_slice(payload);
    v.extend_from_slice(format!("#{sum:02x}").as_bytes());
    v
}

/// Regression (issue 30, defect 4): `ps --connect` bounded each packet, not what the
/// server's run-length encoding expands to over all of them, and echoed an unexpected packet
/// whole into its error.
#[test]
fn ps_bounds_what_a_server_sends_and_what_it_echoes() {
    // 2 MiB of "0*~" (each 98 bytes once expanded) in output packets, after the OK.
    let mut flood = answer(b"OK");
    for _ in 0..32 {
        let mut p = b"O".to_vec();
        p.extend(std::iter::repeat_n(&b"0*~"[..], 20_000).flatten());
        flood.extend_from_slice(&answer(&p)[1..]);
    }
    let o = run(&[
        "ps",
        "--connect",
        &format!("127.0.0.1:{}", fake_server(flood)),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("more than 1048576 bytes"),
        "{}",
        stderr(&o)
    );
    // A 100 kB unexpected answer is cut in the message.
    let big = answer(&vec![b'x'; 100_000]);
    let o = run(&[
        "ps",
        "--connect",
        &format!("127.0.0.1:{}", fake_server(big)),
    ]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(
        err.len() < 400,
        "{} bytes: {}",
        err.len(),
        &err[..400.min(err.len())]
    );
    assert!(err.contains("... (100000 bytes)"), "{err}");
}
