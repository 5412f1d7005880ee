//! DPA application authentication (`mlx5_dpa::dpa::auth`): signing a device ELF with a test
//! key and certificate chain (`tests/data/auth`, made with openssl for these tests only),
//! verifying it, and every way verification must fail; NVIDIA's signed snap programs (when
//! `MLX5_DPA_SNAP_DIR` names a folder holding them, see `fw-blobs/compat/README.md`) give the
//! hash lists this crate computes, byte for byte, and verify.

use mlx5_dpa::dpa::auth::{self, Anchor, AuthError, CryptoData, HashList};
use mlx5_dpa::dpa::elf::Elf;

const APP: &[u8] = include_bytes!("../../fw-blobs/bin/rpc_calc.elf");
const LEAF_KEY: &str = include_str!("../data/auth/leaf.key.pem");
const OTHER_KEY: &str = include_str!("../data/auth/other.key.pem");
const LEAF: &[u8] = include_bytes!("../data/auth/leaf.der");
const ROOT: &[u8] = include_bytes!("../data/auth/root.der");
const OTHER: &[u8] = include_bytes!("../data/auth/other.der");

fn signed(app: &[u8], chain: &[&[u8]]) -> Vec<u8> {
    let key = auth::private_key_from_pem(LEAF_KEY).expect("key");
    let chain: Vec<Vec<u8>> = chain.iter().map(|c| c.to_vec()).collect();
    auth::sign(app, &key, &chain).expect("sign")
}

#[test]
fn a_signed_application_verifies_and_names_its_signer() {
    let sig = signed(APP, &[ROOT, LEAF]);
    assert_eq!(sig.len() % 4, 0, "padded to dwords");
    let v = auth::verify(APP, &sig, &[]).expect("verify");
    assert!(
        v.hash_list_matches && v.signature_valid && v.chain_valid,
        "{v:?}"
    );
    assert_eq!(
        v.anchor,
        Anchor::SelfSigned,
        "the root in the chain signs itself"
    );
    assert!(v.valid());
    assert!(
        v.signer().contains("mlx5-dpa Test DPA Code Signer"),
        "{}",
        v.signer()
    );
    assert_eq!(v.chain.len(), 2);

    // The leaf alone, anchored by a trusted root given apart.
    let sig = signed(APP, &[LEAF]);
    let v = auth::verify(APP, &sig, &[ROOT.to_vec()]).expect("verify");
    assert!(
        matches!(&v.anchor, Anchor::Trusted(s) if s.contains("Test DPA Root CA")),
        "{v:?}"
    );
    assert!(v.valid());
    // ... and without the root, nothing anchors it.
    let v = auth::verify(APP, &sig, &[]).expect("verify");
    assert!(
        matches!(&v.anchor, Anchor::Unknown(s) if s.contains("Test DPA Root CA")),
        "{v:?}"
    );
    assert!(!v.valid());
    // A trusted certificate of another name does not anchor it either.
    let v = auth::verify(APP, &sig, &[OTHER.to_vec()]).expect("verify");
    assert!(matches!(v.anchor, Anchor::Unknown(_)), "{v:?}");
}

#[test]
fn the_blob_has_the_layout_the_seed_gives() {
    let sig = signed(APP, &[ROOT, LEAF]);
    let cd = CryptoData::parse(&sig).expect("parse");
    assert_eq!(cd.signature_type(), 2, "RSA_SHA_512");
    assert_eq!(&sig[0x40..0x48], b"HASHLIST");
    let elf = Elf::parse(APP).expect("elf");
    let hashed_sections = elf
        .sections()
        .iter()
        .enumerate()
        .filter(|(i, s)| *i != 0 && s.sh_type != 8)
        .count();
    assert_eq!(usize::from(sig[0x40 + 0xb]), elf.segments().len());
    assert_eq!(usize::from(sig[0x40 + 0xf]), hashed_sections);
    assert_eq!(cd.signature.len(), 256, "a 2048-bit key signs 256 bytes");
    assert_eq!(cd.chain_header.chain_type(), 1);
    assert_eq!(cd.chain_header.count(), 2);
    assert_eq!(
        cd.chain_header.length(),
        12 + ROOT.len() + LEAF.len(),
        "the chain's length counts its header"
    );
    assert_eq!(cd.chain[0].der, ROOT);
    assert_eq!(cd.chain[1].der, LEAF);
    // The signature covers the metadata and the hash list, nothing more.
    assert_eq!(cd.signed_bytes(), sig[..0x40 + cd.hash_list.len()]);
}

#[test]
fn a_changed_application_or_blob_fails_verification() {
    let sig = signed(APP, &[ROOT, LEAF]);
    // One byte of the text segment changed: its segment, its section and the whole-ELF hash
    // no longer match; the signature itself is still the signer's.
    let elf = Elf::parse(APP).expect("elf");
    let text = elf.section(".text").expect(".text");
    let mut app = APP.to_vec();
    app[text.offset as usize + 4] ^= 1;
    let v = auth::verify(&app, &sig, &[]).expect("verify");
    assert!(!v.hash_list_matches, "{v:?}");
    assert!(
        v.mismatches.iter().any(|m| m == "elf"),
        "{:?}",
        v.mismatches
    );
    assert!(
        v.mismatches.iter().any(|m| m.starts_with("segment")),
        "{:?}",
        v.mismatches
    );
    assert!(
        v.mismatches.iter().any(|m| m.starts_with("hashed section")),
        "{:?}",
        v.mismatches
    );
    assert!(v.signature_valid);
    assert!(!v.valid());

    // A hash in the blob changed: the signature no longer verifies.
    let mut bad = sig.clone();
    bad[0x40 + 0x30] ^= 0x80;
    let v = auth::verify(APP, &bad, &[]).expect("verify");
    assert!(
        !v.signature_valid && !v.hash_list_matches && !v.valid(),
        "{v:?}"
    );

    // The signature changed.
    let cd = CryptoData::parse(&sig).expect("parse");
    let mut bad = sig.clone();
    bad[0x40 + cd.hash_list.len() + 7] ^= 1;
    let v = auth::verify(APP, &bad, &[]).expect("verify");
    assert!(!v.signature_valid && !v.valid());
}

#[test]
fn a_key_the_leaf_does_not_hold_is_refused() {
    let other = auth::private_key_from_pem(OTHER_KEY).expect("key");
    assert_eq!(
        auth::sign(APP, &other, &[ROOT.to_vec(), LEAF.to_vec()]).unwrap_err(),
        AuthError::KeyMismatch
    );
    let key = auth::private_key_from_pem(LEAF_KEY).expect("key");
    assert_eq!(
        auth::sign(APP, &key, &[]).unwrap_err(),
        AuthError::ChainLength(0)
    );
    let five = vec![LEAF.to_vec(); 5];
    assert_eq!(
        auth::sign(APP, &key, &five).unwrap_err(),
        AuthError::ChainLength(5)
    );
    assert!(matches!(
        auth::private_key_from_pem(
            "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"
        ),
        Err(AuthError::Key(_))
    ));
    assert!(matches!(
        auth::sign(b"not an elf", &key, &[LEAF.to_vec()]),
        Err(AuthError::Elf(_))
    ));
}

#[test]
fn every_truncation_and_corruption_of_a_blob_is_an_error_or_fine() {
    let sig = signed(APP, &[ROOT, LEAF]);
    let cd = CryptoData::parse(&sig).expect("parse");
    let end = 0x40 + cd.hash_list.len() + cd.signature.len() + cd.chain_header.length();
    for cut in 0..end {
        assert!(CryptoData::parse(&sig[..cut]).is_err(), "cut at {cut}");
    }
    // Corruptions: never a panic.
    let mut x = 0x2545_f491_4f6c_dd1du64;
    for _ in 0..2000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let mut b = sig.clone();
        let at = (x as usize) % b.len();
        b[at] ^= (x >> 32) as u8 | 1;
        let _ = CryptoData::parse(&b);
        let _ = auth::verify(APP, &b, &[ROOT.to_vec()]);
    }
    assert!(matches!(
        CryptoData::parse(&[0u8; 0x40]),
        Err(AuthError::SignatureType(0))
    ));
}

#[test]
fn hash_lists_round_trip() {
    let hl = HashList::of_elf(APP).expect("hash list");
    let b = hl.to_bytes();
    assert_eq!(b.len(), hl.len());
    let (back, len) = HashList::parse(&b).expect("parse");
    assert_eq!((back, len), (hl, b.len()));
}

/// NVIDIA's signed programs: the hash list in each `.sig` is the one computed here, byte for
/// byte; the signature verifies with the leaf's key; the chain (ICA, then EE) verifies; its
/// root is not in the file.
#[test]
#[cfg_attr(
    no_snap_dir,
    ignore = "MLX5_DPA_SNAP_DIR does not name NVIDIA's snap programs (fw-blobs/compat/README.md)"
)]
fn nvidia_signed_programs_give_our_hash_lists_and_verify() {
    let dir = std::env::var_os("MLX5_DPA_SNAP_DIR").expect("set at build time (build.rs)");
    let dir = std::path::PathBuf::from(dir);
    for name in ["dpa_nvme", "dpa_nvme_mp", "dpa_virtq_split"] {
        let elf = std::fs::read(dir.join(name)).expect("program");
        let sig = std::fs::read(dir.join(format!("{name}.sig"))).expect("signature");
        let cd = CryptoData::parse(&sig).expect("parse");
        assert_eq!(
            HashList::of_elf(&elf).expect("hash list").to_bytes(),
            cd.hash_list_raw,
            "{name}: the hash list, byte for byte"
        );
        let v = auth::verify(&elf, &sig, &[]).expect("verify");
        assert!(
            v.hash_list_matches && v.signature_valid && v.chain_valid,
            "{name}: {v:?}"
        );
        assert!(
            v.signer().contains("NVIDIA DPA Code Signer"),
            "{name}: {}",
            v.signer()
        );
        assert!(
            matches!(&v.anchor, Anchor::Unknown(root) if root.contains("NVIDIA")),
            "{name}: {v:?}"
        );
    }
}

/// The model with DPA Application Authentication enabled, trusting the test root.
fn model_with_auth() -> (mlx5_sim::Device, std::sync::Arc<dyn mlx5_dpa::devx::Devx>) {
    let d = mlx5_sim::Device::with_profile("bf3").expect("bf3");
    d.with_profile_mut(|p| p.dpa_auth_roots = vec![ROOT.to_vec()]);
    d.start_engine();
    let ctx = d.open_devx();
    (d, ctx)
}

fn create(
    ctx: &std::sync::Arc<dyn mlx5_dpa::devx::Devx>,
    app: &[u8],
    signature: Option<Vec<u8>>,
) -> Result<mlx5_dpa::dpa::Process, mlx5_dpa::dpa::DpaError> {
    let attr = mlx5_dpa::dpa::ProcessAttr {
        signature,
        ..Default::default()
    };
    mlx5_dpa::dpa::Process::create(ctx, app, &attr)
}

#[test]
fn a_device_with_authentication_runs_only_what_its_root_vouches_for() {
    let (d, ctx) = model_with_auth();
    let refused = |r: Result<mlx5_dpa::dpa::Process, mlx5_dpa::dpa::DpaError>, syndrome: u32| {
        let Err(e) = r else {
            panic!("the device loaded it; syndrome {syndrome:#x} expected")
        };
        let text = e.to_string();
        assert!(
            text.contains(&format!("{syndrome:#x}")),
            "syndrome {syndrome:#x} expected: {text}"
        );
    };
    // Unsigned.
    refused(
        create(&ctx, APP, None),
        mlx5_sim::check::DPA_APP_UNSIGNED.syndrome,
    );
    // Signed, root in the chain, and the leaf alone: both anchored in the trusted root.
    for chain in [&[ROOT, LEAF][..], &[LEAF][..]] {
        let p = create(&ctx, APP, Some(signed(APP, chain))).expect("a signed app loads");
        assert_eq!(p.call("rpc_calculate", &[40, 2]).expect("rpc"), 42);
    }
    // Signed for another image.
    let elf = Elf::parse(APP).expect("elf");
    let text = elf.section(".text").expect(".text").offset as usize;
    let mut other = APP.to_vec();
    other[text + 2] ^= 1;
    refused(
        create(&ctx, &other, Some(signed(APP, &[ROOT, LEAF]))),
        mlx5_sim::check::DPA_APP_AUTH_FAILED.syndrome,
    );
    // Signed by a CA the device does not trust (self-signed, valid on its own).
    let key = auth::private_key_from_pem(OTHER_KEY).expect("key");
    let stranger = auth::sign(APP, &key, &[OTHER.to_vec()]).expect("sign");
    assert!(auth::verify(APP, &stranger, &[]).expect("verify").valid());
    refused(
        create(&ctx, APP, Some(stranger)),
        mlx5_sim::check::DPA_APP_AUTH_FAILED.syndrome,
    );
    drop(ctx);
    d.stop_engine();
    assert!(d.inventory().is_empty(), "{}", d.inventory());

    // Authentication disabled (the default): any image runs, signed or not.
    let d = mlx5_sim::Device::with_profile("bf3").expect("bf3");
    d.start_engine();
    let ctx = d.open_devx();
    let p = create(&ctx, APP, None).expect("unsigned, no authentication");
    assert_eq!(p.call("rpc_calculate", &[1, 2]).expect("rpc"), 3);
}

/// Regression: a DOCA DPA context made its process without the application's signature, so
/// a signed application could not start on a device that requires signatures.
#[test]
fn a_doca_context_hands_over_its_apps_signature() {
    use mlx5_dpa::doca::{Dpa, DpaAttr};
    use mlx5_dpa::dpa::app::App;
    const KERNELS: &[u8] = include_bytes!("../../fw-blobs/bin/doca_kernels.elf");
    let (d, ctx) = model_with_auth();
    let unsigned = App::from_device_elf("doca_kernels", KERNELS).expect("app");
    let e = Dpa::start(&ctx, &unsigned, &DpaAttr::default()).expect_err("unsigned refused");
    assert!(
        e.to_string().contains(&format!(
            "{:#x}",
            mlx5_sim::check::DPA_APP_UNSIGNED.syndrome
        )),
        "{e}"
    );
    let signed_app = unsigned
        .with_signature_file("doca_kernels.sig", &signed(KERNELS, &[ROOT, LEAF]))
        .expect("signature");
    let dpa = Dpa::start(&ctx, &signed_app, &DpaAttr::default()).expect("a signed app starts");
    dpa.stop().expect("stop");
    drop(ctx);
    d.stop_engine();
    assert!(d.inventory().is_empty(), "{}", d.inventory());
}
