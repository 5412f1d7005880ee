//! `mlx5-dpa sign` / `verify` on a device ELF with the test key and certificates of
//! `tests/data/auth`; NVIDIA's signed snap programs when `MLX5_DPA_SNAP_DIR` names them.

use crate::common;
use common::*;

fn data(name: &str) -> String {
    repo(&format!("tests/data/auth/{name}"))
}

#[test]
fn sign_then_verify_and_every_failure_is_named() {
    let app = std::fs::read(repo("fw-blobs/bin/rpc_calc.elf")).expect("app");
    let elf = scratch("auth", "app.elf", &app);
    let o = run(&[
        "sign",
        &elf,
        "--key",
        &data("leaf.key.pem"),
        "--cert",
        &data("root.der"),
        "--cert",
        &data("leaf.der"),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("signed by CN=mlx5-dpa Test DPA Code Signer"),
        "{}",
        stdout(&o)
    );

    // elf.sig beside it is found. Everything verifies, but nothing the caller trusts vouches
    // for the chain's self-signed root: an untrusted chain, exit status 1 (regression: it said
    // VALID and exited 0 for any self-made chain).
    let o = run(&["verify", &elf, "--json"]);
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(
        (&v["valid"], &v["trusted"]),
        (&true.into(), &false.into()),
        "{v}"
    );
    let o = run(&["verify", &elf]);
    assert!(stdout(&o).contains("UNTRUSTED CHAIN"), "{}", stdout(&o));
    let o = run(&["verify", &elf, "--ca", &data("root.der"), "--json"]);
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(v["trusted"], true);
    assert_eq!(
        v["signer"],
        "CN=mlx5-dpa Test DPA Code Signer,O=mlx5-dpa tests"
    );

    // `elf info` reads the same file as an RSA_SHA_512 signature.
    let o = run(&["elf", "info", &elf]);
    assert!(stdout(&o).contains("RSA_SHA_512"), "{}", stdout(&o));

    // A changed application: the hash list names what differs; exit status 1.
    let text = mlx5_dpa::dpa::elf::Elf::parse(&app)
        .expect("elf")
        .section(".text")
        .expect(".text")
        .offset as usize;
    let mut changed = app.clone();
    changed[text + 8] ^= 1;
    let other = scratch("auth", "changed.elf", &changed);
    let o = run(&["verify", &other, "--sig", &format!("{elf}.sig")]);
    assert_eq!(o.status.code(), Some(1));
    let text = stdout(&o);
    assert!(text.contains("hash list: FAILED (differs: elf"), "{text}");
    assert!(text.contains("NOT VALID"), "{text}");

    // A key the leaf does not hold: refused, nothing written.
    let out = scratch("auth", "wrong.sig", b"");
    std::fs::remove_file(&out).expect("rm");
    let o = run(&[
        "sign",
        &elf,
        "--key",
        &data("other.key.pem"),
        "--cert",
        &data("leaf.der"),
        "-o",
        &out,
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("does not match the signing key"),
        "{}",
        stderr(&o)
    );
    assert!(!std::path::Path::new(&out).exists());

    // The leaf alone: anchored only by the root given with --ca.
    let leaf_only = scratch("auth", "leaf_only.sig", b"");
    let o = run(&[
        "sign",
        &elf,
        "--key",
        &data("leaf.key.pem"),
        "--cert",
        &data("leaf.der"),
        "-o",
        &leaf_only,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run(&["verify", &elf, "--sig", &leaf_only]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stdout(&o).contains("NOT ANCHORED"), "{}", stdout(&o));
    let o = run(&[
        "verify",
        &elf,
        "--sig",
        &leaf_only,
        "--ca",
        &data("root.der"),
    ]);
    assert!(o.status.success(), "{}", stdout(&o));
    let o = run(&[
        "verify",
        &elf,
        "--sig",
        &leaf_only,
        "--ca",
        &data("other.der"),
    ]);
    assert_eq!(o.status.code(), Some(1));

    // Unsigned, and not a certificate.
    let bare = scratch("auth", "bare.elf", &app);
    let o = run(&["verify", &bare]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("no signature"), "{}", stderr(&o));
    let o = run(&[
        "sign",
        &bare,
        "--key",
        &data("leaf.key.pem"),
        "--cert",
        &bare,
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("not a certificate"), "{}", stderr(&o));
}

#[test]
#[cfg_attr(
    no_snap_dir,
    ignore = "MLX5_DPA_SNAP_DIR does not name NVIDIA's snap programs (fw-blobs/compat/README.md)"
)]
fn nvidia_signed_programs_verify_up_to_their_root() {
    let dir = std::env::var_os("MLX5_DPA_SNAP_DIR").expect("set at build time (tools/build.rs)");
    let dir = std::path::PathBuf::from(dir);
    for name in ["dpa_nvme", "dpa_nvme_mp", "dpa_virtq_split"] {
        let elf = dir.join(name).display().to_string();
        let o = run(&["verify", &elf, "--json"]);
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
        assert_eq!(v["hash_list_matches"], true, "{name}: {v}");
        assert_eq!(v["signature_valid"], true, "{name}: {v}");
        assert_eq!(v["chain_valid"], true, "{name}: {v}");
        assert_eq!(
            v["signer"], "CN=NVIDIA DPA Code Signer EE,O=NVIDIA",
            "{name}"
        );
    }
}

/// A device that requires signed images runs a demo's signed application: the `.sig` beside
/// the ELF is handed over, as `verify` finds it (regression: the demos ignored it); an
/// unsigned one is refused, and the refusal names the model's check.
#[test]
fn a_signed_app_runs_on_a_device_that_requires_signatures() {
    let app = std::fs::read(repo("fw-blobs/bin/rpc_calc.elf")).expect("app");
    let elf = scratch("auth-demo", "calc.elf", &app);
    let trust = data("root.der");
    let demo = |elf: &str| {
        run(&[
            "--sim-trust",
            &trust,
            "demo",
            "rpc",
            "20",
            "22",
            "--app-elf",
            elf,
        ])
    };
    let o = demo(&elf);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o)
            .contains("is the device model's check: DPA Application Authentication is enabled"),
        "{}",
        stderr(&o)
    );
    let o = run(&[
        "sign",
        &elf,
        "--key",
        &data("leaf.key.pem"),
        "--cert",
        &data("leaf.der"),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = demo(&elf);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("Result: 42"), "{}", stdout(&o));
}
