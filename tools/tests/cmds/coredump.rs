//! `mlx5-dpa coredump`: a coredump made on the model by a faulting RPC, decoded, saved, and
//! written as an ELF core file; bad images refused with a sentence.

use crate::common;
use common::*;

#[test]
fn a_faulting_call_gives_an_image_and_a_core_file() {
    let elf = repo("fw-blobs/bin/selftest.elf");
    let image = scratch("coredump", "fault.dump", b"");
    let core = scratch("coredump", "fault.core", b"");
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
    let text = stdout(&o);
    // The call faulted: exit status 1, the cause in words (regression: exit 0, and the cause
    // printed as a Rust `Debug` dump).
    assert_eq!(o.status.code(), Some(1), "{text}{}", stderr(&o));
    assert!(
        text.contains("cause: an 8-byte load failed: nothing is mapped there at pc"),
        "{text}"
    );
    assert!(
        stderr(&o).contains("st_fault_load faulted: an 8-byte load failed"),
        "{}",
        stderr(&o)
    );
    assert!(text.contains("fault address 0x10"), "{text}");

    // The saved image decodes to the same dump; its pc is in the text region.
    let o = run(&["coredump", "show", &image, "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(v["fault_addr"], 0x10);
    assert_eq!(v["cause"], "an 8-byte load failed: nothing is mapped there");
    assert_eq!(v["signal"], 11);
    assert_eq!(v["registers"]["a0"], 0x10, "the argument, still in a0");
    let pc = v["pc"].as_u64().expect("pc");
    let text_region = v["regions"]
        .as_array()
        .expect("regions")
        .iter()
        .find(|r| r["kind"] == "Text")
        .expect("a text region");
    let (base, size) = (
        text_region["base"].as_u64().unwrap(),
        text_region["size"].as_u64().unwrap(),
    );
    assert!(pc >= base && pc < base + size, "{v}");

    // `coredump core` writes the same core file as `rpc --core`.
    let again = scratch("coredump", "again.core", b"");
    let o = run(&["coredump", "core", &image, "-o", &again]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        std::fs::read(&core).expect("core"),
        std::fs::read(&again).expect("core again")
    );
}

#[test]
fn a_call_that_returns_makes_no_coredump() {
    let elf = repo("fw-blobs/bin/selftest.elf");
    let o = run(&["coredump", "rpc", &elf, "st_add", "--args", "41"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("st_add returned 0x2a (42)"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn foreign_and_truncated_images_are_refused() {
    let junk = scratch("coredump", "junk.dump", &[0x55; 1024]);
    let o = run(&["coredump", "show", &junk]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("not a DPA coredump"), "{}", stderr(&o));
    let short = scratch("coredump", "short.dump", b"DPAC");
    let o = run(&["coredump", "core", &short, "-o", "/dev/null"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("shorter"), "{}", stderr(&o));
    // A device option on a command that talks to none is refused.
    let o = run(&["--sim", "coredump", "show", &junk]);
    assert_eq!(o.status.code(), Some(2));
}
