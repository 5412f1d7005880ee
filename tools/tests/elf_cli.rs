//! `mlx5-dpa elf info`: a device ELF of fw-blobs, the committed host ELF with embedded apps
//! (`tests/data/dpa/host_apps.elf`), `--app`, `--json`, and malformed files.

mod common;
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
    assert!(out.contains(" rpc_calculate_rpc_stub\n"), "{out}");
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
