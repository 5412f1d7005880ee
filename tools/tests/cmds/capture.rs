//! `--capture` records this tool's DevX calls in the capture library's format; `capture show`
//! decodes them with the project's layouts; `capture diff` aligns two captures and names what
//! differs.

use crate::common;
use common::*;

fn captured(name: &str, args: &[&str]) -> String {
    let file = scratch("capture", name, b"");
    let mut all = vec!["--sim", "--capture", &file];
    all.extend_from_slice(args);
    let o = run(&all);
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    file
}

#[test]
fn a_capture_of_the_rpc_demo_decodes_with_the_layouts() {
    let file = captured("rpc.jsonl", &["demo", "rpc", "1", "2"]);
    let o = run(&["capture", "show", &file, "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    let calls = v["calls"].as_array().expect("calls");
    assert!(calls.len() > 20, "{v}");
    // Numbered from 1, in order.
    for (i, c) in calls.iter().enumerate() {
        assert_eq!(c["seq"].as_u64(), Some(i as u64 + 1));
    }
    // The process creation, decoded as DPA_PROCESS: its image is rpc_calc.elf.
    let elf_len = std::fs::read(repo("fw-blobs/bin/rpc_calc.elf"))
        .expect("elf")
        .len();
    let create = calls
        .iter()
        .find(|c| c["what"] == "CREATE_GENERAL_OBJECT DPA_PROCESS")
        .expect("the process creation");
    assert_eq!(create["call"], "obj_create");
    assert_eq!(create["status"], "OK (0x0)");
    assert_eq!(
        create["fields"]["elf_size"],
        format!("{elf_len:#x}"),
        "{create}"
    );
    // Queries and the destroy name the object by its create.
    let seq = create["seq"].as_u64();
    assert!(
        calls
            .iter()
            .any(|c| c["call"] == "obj_query" && c["obj"].as_u64() == seq),
        "{v}"
    );
    assert!(
        calls
            .iter()
            .any(|c| c["call"] == "obj_destroy" && c["obj"].as_u64() == seq),
        "{v}"
    );
}

#[test]
fn diff_aligns_captures_and_names_what_differs() {
    let a = captured("a.jsonl", &["demo", "rpc", "1", "2"]);
    let o = run(&["capture", "diff", &a, &a]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert!(
        stdout(&o).contains("0 only in A, 0 only in B"),
        "{}",
        stdout(&o)
    );

    // Another flow: commands only one side sent, and fields that differ.
    let b = captured("b.jsonl", &["demo", "window"]);
    let o = run(&["capture", "diff", &a, &b, "--json"]);
    assert_eq!(o.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    let only_b = v["only_b"].as_u64().unwrap();
    assert!(only_b > 0, "{v}");
    assert!(
        v["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|i| i["kind"] == "only_b" && i["command"] == "CREATE_GENERAL_OBJECT DPA_WINDOW"),
        "the window demo makes a DPA_WINDOW the RPC demo does not: {v}"
    );
    // Ignoring a field drops it from the differences.
    let o = run(&[
        "capture",
        "diff",
        &a,
        &b,
        "--json",
        "--ignore",
        "start_addr",
    ]);
    let w: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert!(
        !w.to_string()
            .contains("\"field\":\"memory_key_mkey_entry.start_addr\""),
        "{w}"
    );
}

#[test]
fn bad_captures_and_misplaced_options_are_refused() {
    let bad = scratch("capture", "bad.jsonl", b"{\"seq\":1}\n");
    let o = run(&["capture", "show", &bad]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("line 1"), "{}", stderr(&o));
    let o = run(&["--capture", &bad, "prm", "layouts", "cqc"]);
    assert_eq!(o.status.code(), Some(2));
}

/// A capture of `ops` as the capture library writes it: one `general_cmd` per opcode.
fn synthetic(name: &str, ops: &[u16]) -> String {
    let mut text = String::new();
    for (i, op) in ops.iter().enumerate() {
        text.push_str(&format!(
            "{{\"seq\":{},\"call\":\"general_cmd\",\"t_ns\":0,\"dur_ns\":0,\"ret\":0,\"errno\":0,\
             \"in\":\"{op:04x}000000000000{}\",\"out\":\"{}\"}}\n",
            i + 1,
            "0".repeat(16),
            "0".repeat(32)
        ));
    }
    scratch("capture", name, text.as_bytes())
}

/// Regression (issue 30, defect 2): the alignment took an (n+1) x (m+1) table of u32 (20 000
/// records a side: 1.6 GB); it now runs in linear space. Run under a 768 MiB address-space
/// limit, which the table alone exceeded.
#[test]
fn diffing_large_captures_takes_linear_memory() {
    let kinds = [0x100u16, 0x101, 0x200, 0x400, 0x800];
    let a: Vec<u16> = (0..20_000).map(|i| kinds[i % kinds.len()]).collect();
    let mut b = a.clone();
    for k in (0..b.len()).step_by(97) {
        b[k] = 0x900;
    }
    let (fa, fb) = (
        synthetic("large_a.jsonl", &a),
        synthetic("large_b.jsonl", &b),
    );
    let o = std::process::Command::new("sh")
        .args([
            "-c",
            "ulimit -v 786432 && exec \"$0\" capture diff \"$1\" \"$2\" --json",
            env!("CARGO_BIN_EXE_mlx5-dpa"),
            &fa,
            &fb,
        ])
        .output()
        .expect("sh");
    // Differences found: exit status 1, and a whole report.
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    let changed = b.len().div_ceil(97) as u64;
    // Each changed command is one only in A and one only in B; everything else aligns.
    assert_eq!(v["only_a"], changed, "{}", v["only_a"]);
    assert_eq!(v["only_b"], changed);
    assert_eq!(v["matched"], a.len() as u64 - changed);
    assert_eq!(v["approximate"], false);
}
