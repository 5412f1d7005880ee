//! `mlx5-dpa elf info`: a device ELF of fw-blobs, the committed host ELF with embedded apps
//! (`tests/data/dpa/host_apps.elf`), `--app`, `--json`, and malformed files.

use crate::common;
use common::*;

fn host() -> String {
    repo("tests/data/dpa/host_apps.elf")
}

#[test]
fn device_elf_info_lists_entries_segments_and_isa() {
    let o = run(&["elf", "info", &repo("fw-blobs/bin/rpc_calc.elf")]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.starts_with("app rpc_calc: device ELF of "), "{out}");
    assert!(out.contains("e_flags: 0x1 (RVC, soft-float)"), "{out}");
    assert!(out.contains("isa: rv64i"), "{out}");
    assert!(out.contains("signature: none"), "{out}");
    assert!(out.contains("0x0000000040000000 memsz "), "{out}");
    assert!(out.contains(" r-x\n") && out.contains(" rw-\n"), "{out}");
    assert!(out.contains(" mlx5_dpa_rpc_entry\n"), "{out}");
}

#[test]
fn host_elf_info_shows_both_apps_and_the_signature() {
    let o = run(&["elf", "info", &host()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("app rpc_calc:") && out.contains("app selftest:"),
        "{out}"
    );
    assert!(
        out.contains(
            "signature: .dpa_sig_rpc_calc (host ELF, 104 bytes), metadata_version 1, \
             signature_type 2 (RSA_SHA_512)"
        ),
        "{out}"
    );
    assert!(out.contains(" st_outbox_db\n"), "{out}");

    let o = run(&["elf", "info", &host(), "--app", "selftest"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("app selftest:") && !out.contains("rpc_calc"),
        "{out}"
    );
}

#[test]
fn json_output_is_one_object() {
    let o = run(&["elf", "info", &host(), "--json", "--app", "rpc_calc"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let apps = v["apps"].as_array().unwrap();
    assert_eq!(apps.len(), 1);
    let a = &apps[0];
    assert_eq!(a["name"], "rpc_calc");
    assert_eq!(a["e_flags"], 1);
    assert_eq!(a["signature"]["present"], true);
    assert_eq!(a["signature"]["sh_type"], 0x7000_0666);
    assert_eq!(a["signature"]["signature_type"], 2);
    assert_eq!(a["signature"]["signature_type_name"], "RSA_SHA_512");
    let segs = a["segments"].as_array().unwrap();
    assert_eq!(segs.len(), 2);
    assert_eq!(segs[0]["vaddr"], 0x4000_0000u64);
    assert_eq!(segs[0]["flags"], "r-x");
    let entries = a["entries"].as_array().unwrap();
    assert!(entries
        .iter()
        .any(|e| e["name"] == "rpc_calculate" && e["addr"].as_u64().unwrap() >= 0x4000_0000));
}

#[test]
fn malformed_files_fail_with_a_clear_error() {
    let cases: Vec<(String, &str)> = vec![
        (scratch("elf-cli", "text.txt", b"hello"), "not an ELF file"),
        (
            scratch(
                "elf-cli",
                "short.elf",
                &std::fs::read(repo("fw-blobs/bin/selftest.elf")).unwrap()[..200],
            ),
            "outside the file",
        ),
        (repo("no/such/file.elf"), "cannot read"),
    ];
    for (path, want) in cases {
        let o = run(&["elf", "info", &path]);
        assert!(!o.status.success(), "{path}: {}", stdout(&o));
        let err = stderr(&o);
        assert!(
            err.starts_with("mlx5-dpa: ") && err.contains(want),
            "{path}: {err}"
        );
    }

    // The host ELF with one embedded image's e_machine changed.
    let mut b = std::fs::read(host()).unwrap();
    let needle = std::fs::read(repo("fw-blobs/bin/selftest.elf")).unwrap();
    let at = b
        .windows(64)
        .position(|w| w == &needle[..64])
        .expect("selftest image in the host ELF");
    b[at + 18] = 62;
    let o = run(&["elf", "info", &scratch("elf-cli", "bad_app.elf", &b)]);
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(
        err.contains("\"selftest\"") && err.contains("not RISC-V"),
        "{err}"
    );

    let o = run(&["elf", "info", &host(), "--app", "nope"]);
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(
        err.contains("no DPA application \"nope\"") && err.contains("rpc_calc"),
        "{err}"
    );
}

#[test]
fn elf_isa_finds_only_the_self_tests_deliberate_fault_in_the_committed_device_programs() {
    let dir = repo("fw-blobs/bin");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let path = e.unwrap().path();
        if path.extension().and_then(|x| x.to_str()) != Some("elf") {
            continue;
        }
        let p = path.display().to_string();
        let o = run(&["elf", "isa", &p]);
        let out = stdout(&o);
        if path.file_stem().and_then(|x| x.to_str()) == Some("selftest") {
            // The self-test faults on purpose in `st_illegal` (a custom-0 word), and only there.
            assert_eq!(o.status.code(), Some(3), "{p}: {out}");
            assert!(out.contains("  undecodable: 1\n"), "{p}: {out}");
            assert!(
                out.contains(" <st_illegal+0x0>: 0x0000000b (custom-0"),
                "{p}: {out}"
            );
        } else {
            assert_eq!(o.status.code(), Some(0), "{p}: {out}");
            assert!(
                out.contains(" functions\n  undecodable: none\n"),
                "{p}: {out}"
            );
        }
        n += 1;
    }
    assert!(n >= 5, "only {n} device programs in {dir}");
}

/// A custom-0 word and a `c.unimp` planted in `rpc_calculate`: both are listed with their
/// function and offset, the custom one with its opcode space, and the exit status is 3.
#[test]
fn elf_isa_lists_planted_undecodable_instructions_by_function() {
    use mlx5_dpa::dpa::elf::Elf;
    let mut b = std::fs::read(repo("fw-blobs/bin/rpc_calc.elf")).unwrap();
    let at = {
        let elf = Elf::parse(&b).unwrap();
        let sym = elf.symbol("rpc_calculate").expect("rpc_calculate").clone();
        let seg = elf
            .load_segments()
            .find(|s| s.executable() && (s.vaddr..s.vaddr + s.filesz).contains(&sym.value))
            .expect("text segment");
        assert!(sym.size >= 8, "{sym:?}");
        (sym.value, (seg.offset + sym.value - seg.vaddr) as usize)
    };
    let (addr, off) = at;
    b[off..off + 4].copy_from_slice(&0x0000_100bu32.to_le_bytes());
    b[off + 4..off + 6].copy_from_slice(&[0, 0]);
    let p = scratch("elf-cli", "planted.elf", &b);
    let o = run(&["elf", "isa", &p]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("  undecodable: 2\n"), "{out}");
    assert!(
        out.contains(&format!(
            "    {addr:#x} <rpc_calculate+0x0>: 0x0000100b (custom-0 opcode space"
        )),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "    {:#x} <rpc_calculate+0x4>: 0x0000\n",
            addr + 4
        )),
        "{out}"
    );
    let o = run(&["elf", "isa", "--json", &p]);
    assert_eq!(o.status.code(), Some(3));
    let j: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let found = j["apps"][0]["undecodable"].as_array().unwrap();
    assert_eq!(found.len(), 2);
    assert_eq!(found[0]["addr"].as_u64(), Some(addr));
    assert_eq!(found[0]["opcode_space"], "custom-0");
    assert_eq!(found[1]["function"], "rpc_calculate+0x4");
}

/// A signature as a separate file (snap's `dpa_nvme` + `dpa_nvme.sig` layout): the crypto data
/// with its 0x40-byte metadata header, taken from `--sig` or from `FILE.sig` beside the ELF.
#[test]
fn elf_info_shows_a_separate_signature_file() {
    let elf = std::fs::read(repo("fw-blobs/bin/rpc_calc.elf")).unwrap();
    let mut sig = vec![0u8; 0x40];
    sig[0x3c..0x40].copy_from_slice(&2u32.to_be_bytes());
    sig.extend_from_slice(b"HASHLIST");
    sig.extend_from_slice(&[0xab; 56]);
    let dir = std::env::temp_dir().join(format!("mlx5-dpa-elf-sig-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let app = dir.join("calc");
    std::fs::write(&app, &elf).unwrap();
    let app = app.display().to_string();
    // No file beside it: unsigned.
    let o = run(&["elf", "info", &app]);
    assert!(stdout(&o).contains("  signature: none\n"), "{}", stdout(&o));
    // Beside it as calc.sig: found without asking.
    std::fs::write(format!("{app}.sig"), &sig).unwrap();
    let o = run(&["elf", "info", &app]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains(&format!(
            "  signature: {app}.sig (separate file, 128 bytes), metadata_version 0, \
             signature_type 2 (RSA_SHA_512)\n"
        )),
        "{}",
        stdout(&o)
    );
    // Named with --sig, and in JSON.
    let other = scratch("elf-cli", "other.sig", &sig);
    let o = run(&["elf", "info", &app, "--sig", &other, "--json"]);
    let j: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let s = &j["apps"][0]["signature"];
    assert_eq!(s["present"], true);
    assert_eq!(s["location"], "separate file");
    assert_eq!(s["section"], other.as_str());
    assert_eq!(s["signature_type"], 2);
    // Shorter than the metadata header: an error naming the file.
    let short = scratch("elf-cli", "short.sig", &sig[..0x3f]);
    let o = run(&["elf", "info", &app, "--sig", &short]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("short.sig") && stderr(&o).contains("shorter than its 64-byte"),
        "{}",
        stderr(&o)
    );
    // A host ELF with two applications: which one the file signs is not said.
    let o = run(&["elf", "info", &host(), "--sig", &other]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("carries 2 applications"),
        "{}",
        stderr(&o)
    );
    let o = run(&["elf", "info", &host(), "--app", "rpc_calc", "--sig", &other]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("(separate file, 128 bytes)"),
        "{}",
        stdout(&o)
    );
    let _ = std::fs::remove_dir_all(&dir);
}
