//! `mlx5-dpa demo rpc`: FlexIO's RPC sample through the CLI, on the device model.

use crate::common;
use common::*;

#[test]
fn demo_rpc_adds_on_the_dpa() {
    let o = run(&["--sim", "demo", "rpc", "44", "55"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "stdout:\n{out}\nstderr:\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // As the seed shows it, the device's line through a message stream in its place.
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines,
        [
            "Welcome to 'Flex IO RPC' sample",
            "Registered on device mlx5-sim (bf3)",
            "Calculate: 44 + 55 = 99",
            "Result: 99",
            "Flex IO RPC sample is done",
        ]
    );
}

/// Operands as numbers are taken everywhere (hex, negative), and required (regression: `0x10`
/// was refused, and no operands silently meant 44 + 55).
#[test]
fn demo_rpc_takes_hex_and_requires_its_operands() {
    let o = run(&["--sim", "demo", "rpc", "0x10", "-1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("Result: 15"), "{}", stdout(&o));
    let o = run(&["--sim", "demo", "rpc"]);
    assert_eq!(o.status.code(), Some(2), "a usage error");
    assert!(stderr(&o).contains("required arguments"), "{}", stderr(&o));
    let o = run(&["--sim", "demo", "rpc", "ten", "1"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("'ten'"), "{}", stderr(&o));
    // A bad --gdb address is refused before anything is set up (regression: after the
    // process was made).
    for bad in ["notaport", "127.0.0.1:99999", ":1234"] {
        let o = run(&["--sim", "demo", "rpc", "1", "2", "--gdb", bad]);
        assert_eq!(o.status.code(), Some(2), "{bad}");
        assert!(stdout(&o).is_empty(), "{bad}: {}", stdout(&o));
        assert!(stderr(&o).contains("--gdb"), "{}", stderr(&o));
    }
}

/// `--app-elf` with a host program: an application built only for a newer hardware model is
/// refused on the model's BlueField-3, naming the copies there are; a host program with several
/// applications needs `--app`.
#[test]
fn demo_rpc_selects_from_a_host_program_by_hardware_model() {
    let models = repo("tests/data/dpa/host_models.elf");
    let o = run(&[
        "--sim",
        "demo",
        "rpc",
        "1",
        "2",
        "--app-elf",
        &models,
        "--app",
        "newest",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(
        err.contains("\"newest\" has no copy for the device's model (nv-dpa-bf3)")
            && err.contains("it has: nv-dpa-cx9"),
        "{err}"
    );
    let o = run(&["--sim", "demo", "rpc", "1", "2", "--app-elf", &models]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("carries applications which, newest, legacy: name one with --app"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn demo_rpc_without_a_dpa_says_so() {
    let o = run(&["--sim=cx7", "demo", "rpc", "1", "2"]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("DPA not supported"), "{err}");
}

fn ok_stdout(args: &[&str]) -> String {
    let o = run(args);
    let out = stdout(&o);
    assert!(
        o.status.success(),
        "stdout:\n{out}\nstderr:\n{}",
        stderr(&o)
    );
    out
}

#[test]
fn demo_window_shows_the_buffer_the_dpa_wrote() {
    let out = ok_stdout(&["--sim", "demo", "window"]);
    let before = out.lines().find(|l| l.starts_with("Before:")).expect(&out);
    let after = out.lines().find(|l| l.starts_with("After:")).expect(&out);
    assert!(!before.contains("Hello from DPA"), "{out}");
    assert!(after.contains("Hello from DPA"), "{out}");
}

#[test]
fn demo_multithread_multiplies_through_the_command_queue() {
    let out = ok_stdout(&["--sim", "demo", "multithread", "--workers", "3"]);
    assert!(
        out.contains("25 tasks on 3 workers: 25 completed, 0 errors"),
        "{out}"
    );
    assert!(out.contains("C matches the host's product"), "{out}");
}

/// The two hex dumps: the injected frame and the answer, parsed back to bytes.
fn dumps(out: &str) -> Vec<Vec<u8>> {
    let mut frames: Vec<Vec<u8>> = Vec::new();
    for l in out.lines() {
        if l.starts_with("sent ") || l.starts_with("received ") {
            frames.push(Vec::new());
        } else if let (Some(f), true) = (frames.last_mut(), l.starts_with("  ")) {
            let hex = l.get(8..55).unwrap_or("");
            f.extend(
                hex.split_whitespace()
                    .map(|b| u8::from_str_radix(b, 16).expect("hex byte")),
            );
        }
    }
    frames
}

#[test]
fn demo_packet_processor_prints_as_the_seed_and_writes_a_pcap() {
    let pcap = scratch("dpa-cli", "pp.pcap", b"");
    let out = ok_stdout(&["--sim", "demo", "packet-processor", "--pcap", &pcap]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[..3],
        [
            "Welcome to 'Flex IO SDK packet processing' sample app.",
            "Registered on device mlx5-sim (bf3)",
            "Process packet: 0",
        ],
        "{out}"
    );
    assert!(
        lines.contains(&"Flex IO SDK packet processing sample app is done"),
        "{out}"
    );
    let f = dumps(&out);
    assert_eq!(f.len(), 2, "{out}");
    let (sent, got) = (&f[0], &f[1]);
    assert_eq!(sent.len(), 65);
    assert_eq!(
        &sent[6..12],
        &[0x02, 0x42, 0x7e, 0x7f, 0xeb, 0x02],
        "source MAC"
    );
    assert_eq!(&sent[42..], b"===============12345678");
    assert_eq!(
        (&got[0..6], &got[6..12]),
        (&sent[6..12], &sent[0..6]),
        "MACs swapped"
    );
    // docs/sources.md section 9: "<index> Event demo" then '*', checksums untouched.
    assert_eq!(&got[42..], b"1 Event demo***********");
    assert_eq!(&got[12..42], &sent[12..42], "IP and UDP headers kept");
    // The pcap has both frames among the copier's RoCE traffic.
    let bytes = std::fs::read(&pcap).expect("pcap");
    let frames = mlx5_sim::port::pcap::read_pcap(&bytes).expect("a pcap file");
    assert!(frames.iter().any(|(_, x)| x == sent), "the injected frame");
    assert!(frames.iter().any(|(_, x)| x == got), "the answer");
}

#[test]
fn sim_runs_the_packet_processor_app() {
    let out = ok_stdout(&[
        "--sim",
        "sim",
        "--app",
        "packet-processor",
        "--seconds",
        "1",
    ]);
    assert!(out.contains("packet processor on the DPA"), "{out}");
    assert!(out.contains("packet processor: rx 0 frames"), "{out}");
}

/// DOCA DPA's kernel-launch samples through the CLI (fw-blobs' kernels): each prints the
/// sample's lines, the device's log line among them, and ends with its completion.
#[test]
fn demo_doca_dpa_samples_run_as_docas() {
    let lines = |sample: &str| -> Vec<String> {
        let o = run(&["--sim", "demo", "doca-dpa", sample, "--delay-ms", "50"]);
        assert!(o.status.success(), "{sample}: {}", stderr(&o));
        stdout(&o).lines().map(str::to_string).collect()
    };
    let hello = [
        "All DPA resources have been created",
        "[DOCA][DPA DEVICE][INF] Hello from kernel",
        "Kernel completion event has been signaled",
    ];
    assert_eq!(lines("kernel-launch"), hello);
    assert_eq!(lines("wait-kernel-launch"), hello);
    let tree = lines("binary-tree");
    for k in 'A'..='G' {
        let want = format!("Completion event kernel {k} has been signaled");
        assert!(tree.contains(&want), "{tree:?}");
    }
    assert_eq!(
        lines("diamond-tree").last().map(String::as_str),
        Some("Kernel D completion event has been signaled")
    );
    // The seed's hello world (doca-dpa.txt, "Execution"), the device's lines through the log.
    assert_eq!(
        lines("hello-world"),
        [
            "----> Open DOCA Device",
            "----> Initialize DOCA DPA Context",
            "----> Initialize DOCA Sync Event",
            "----> Initialize DOCA DPA Thread",
            "----> Initialize DOCA DPA Notification Completion",
            "----> Run DOCA DPA Thread",
            "----> Trigger DPA RPC",
            "[DOCA][DPA DEVICE][INF] Notifying DPA Thread From RPC",
            "[DOCA][DPA DEVICE][INF] Hello World From DPA Thread!",
            "----> Waiting For hello_world_thread_kernel To Finish",
            "----> Destroy DOCA DPA Notification Completion",
            "----> Destroy DOCA DPA Thread",
            "----> Destroy DOCA DPA event",
            "----> Destroy DOCA DPA context",
            "----> Destroy DOCA device",
            "----> DONE!",
        ]
    );
    // DOCA's ping-pong: 100 values each way, RDMA posted by two DPA threads.
    assert_eq!(
        lines("ping-pong"),
        [
            "All DPA resources have been created",
            "ping thread received 100 values, 0 out of order",
            "pong thread received 100 values, 0 out of order",
        ]
    );
    // DOCA's basic initiator / target: the receive's completion wakes the target's thread.
    assert_eq!(
        lines("basic-initiator-target"),
        [
            "All DPA resources have been created",
            "Target: posting an RDMA receive (RPC)",
            "Initiator: posting an RDMA send (RPC)",
            "[DOCA][DPA DEVICE][INF] Target DPA thread: completion type 2, user data (connection) 0, received 10",
            "The target's DPA thread has set the completion event",
        ]
    );
    // DOCA's initiator / target: two connections into one completion context; the target's
    // thread #1 takes the four values, logging each with its connection, and notifies #2.
    let it = lines("initiator-target");
    assert_eq!(
        it[..6],
        [
            "All DPA resources have been created",
            "Target: posting the initial RDMA receives (RPC)",
            "Initiator: connection #0 posts an RDMA send of value 1 (RPC)",
            "Initiator: connection #1 posts an RDMA send of value 2 (RPC)",
            "Initiator: connection #0 posts an RDMA send of value 3 (RPC)",
            "Initiator: connection #1 posts an RDMA send of value 4 (RPC)",
        ]
    );
    let mut got: Vec<&str> = it[6..10].iter().map(String::as_str).collect();
    got.sort_unstable();
    let mut want: Vec<String> = (1..=4)
        .map(|v| {
            format!(
                "[DOCA][DPA DEVICE][INF] Target DPA thread #1: completion on connection {} (user data), value {v}",
                (v - 1) % 2
            )
        })
        .collect();
    want.sort_unstable();
    assert_eq!(got, want);
    assert_eq!(
        it[10..],
        [
            "[DOCA][DPA DEVICE][INF] Target DPA thread #1: all values received, notifying thread #2",
            "[DOCA][DPA DEVICE][INF] Target DPA thread #2: setting the host's completion event",
            "The target's DPA thread #2 has set the completion event: values 1, 2, 3, 4 received, two over each connection",
        ]
    );
    // DOCA 2.6's RDMA copy, its kernel on DOCA 2.6's device API (fw-blobs doca26_kernels).
    assert_eq!(
        lines("rdma-copy"),
        [
            "Main thread finished allocating all DPA resources, signaling to remote thread",
            "Remote thread finished allocating all DPA resources, signaling to main thread",
            "Main thread finished connecting to remote thread's endpoint, signaling to remote thread",
            "Remote thread finished connecting to the main thread's rdma instances, signaling to main thread",
            "Main thread launching kernel to copy local buffer to remote buffer",
            "Before copying: local buffer = 10, remote buffer = 0",
            "Main thread finished copying local buffer to remote buffer, signaling to remote thread",
            "After copying: local buffer = 10, remote buffer = 10",
        ]
    );
    let o = run(&["--sim", "demo", "doca-dpa", "no-such-sample"]);
    assert_eq!(o.status.code(), Some(2));
}
