//! DPA applications (`mlx5_dpa::dpa::app`): the fw-blobs device ELFs, the committed DPACC-style
//! host ELF `tests/data/dpa/host_apps.elf` (built by `make_host_elf.sh` next to it), every
//! malformation of its packaging, and random or corrupted bytes that must give errors, never
//! panics.

use crate::elf_edit;

use std::path::PathBuf;

use elf_edit::{header_of, rename};
use mlx5_dpa::dpa::app::{
    App, AppError, SignatureLocation, SignatureStatus, SHT_DPA_CRYPTO, SIG_NAME_LEN,
};
use mlx5_dpa::dpa::elf::{Elf, ElfError, PF_R, PF_W, PF_X};
use proptest::prelude::*;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn host_fixture() -> Vec<u8> {
    std::fs::read(root().join("tests/data/dpa/host_apps.elf")).unwrap()
}

fn blob(name: &str) -> Vec<u8> {
    std::fs::read(root().join("fw-blobs/bin").join(name)).unwrap()
}

/// The file range of section `name`'s contents.
fn contents_of(bytes: &[u8], name: &str) -> std::ops::Range<usize> {
    let elf = Elf::parse(bytes).unwrap();
    let s = elf.section(name).unwrap();
    s.offset as usize..(s.offset + s.size) as usize
}

fn set_size(bytes: &mut [u8], name: &str, size: u64) {
    let (h, _) = header_of(bytes, name);
    bytes[h + 32..h + 40].copy_from_slice(&size.to_le_bytes());
}

#[test]
fn device_elf_gives_entries_segments_and_isa() {
    let app = App::from_device_elf("rpc_calc", &blob("rpc_calc.elf")).unwrap();
    assert_eq!(app.name(), "rpc_calc");
    assert_eq!(app.image(), blob("rpc_calc.elf").as_slice());
    assert_eq!(app.e_flags(), 1);
    assert_eq!(app.e_flags_str(), "RVC, soft-float");
    assert!(app.isa().unwrap().starts_with("rv64i"), "{:?}", app.isa());
    let entry = app.symbol("mlx5_dpa_rpc_entry").unwrap();
    assert_eq!(entry & 0xffff_0000_0000_0000, 0);
    assert!(app
        .entries()
        .iter()
        .any(|e| e.name == "rpc_calculate" && e.addr == app.symbol("rpc_calculate").unwrap()));
    // Global functions only: no NOTYPE markers, no locals.
    assert!(app.entries().iter().all(|e| !e.name.starts_with("__dpa_")));
    assert!(app.symbol("__dpa_data_start").is_some());
    assert!(app.symbol("no_such_symbol").is_none());
    let segs = app.segments();
    assert_eq!(segs.len(), 2);
    assert_eq!(segs[0].flags, PF_R | PF_X);
    assert_eq!(segs[0].flags_str(), "r-x");
    assert_eq!(segs[1].flags, PF_R | PF_W);
    assert!(segs.iter().all(|s| s.memsz >= s.filesz));
    assert_eq!(app.signature(), &SignatureStatus::Unsigned);
    assert!(app.elf().is_ok());

    let file = App::from_device_elf_file(&root().join("fw-blobs/bin/selftest.elf")).unwrap();
    assert_eq!(file.name(), "selftest");
    assert!(matches!(
        App::from_device_elf_file(&root().join("no/such.elf")),
        Err(AppError::Read { .. })
    ));
}

#[test]
fn host_elf_carries_two_apps_one_signed() {
    let host = host_fixture();
    let apps = App::all_in_host_elf(&host).unwrap();
    let mut names: Vec<&str> = apps.iter().map(|a| a.name()).collect();
    names.sort_unstable();
    assert_eq!(names, ["rpc_calc", "selftest"]);

    let rpc = App::from_host_elf(&host, "rpc_calc").unwrap();
    assert_eq!(rpc.image(), blob("rpc_calc.elf").as_slice());
    assert_eq!(
        rpc.entries(),
        App::from_device_elf("x", &blob("rpc_calc.elf"))
            .unwrap()
            .entries()
    );
    let SignatureStatus::Present(sig) = rpc.signature() else {
        panic!("rpc_calc is signed: {:?}", rpc.signature());
    };
    assert_eq!(sig.section, ".dpa_sig_rpc_calc");
    assert_eq!(sig.location, SignatureLocation::Host);
    assert_eq!(sig.sh_type, SHT_DPA_CRYPTO);
    assert_eq!(sig.metadata.metadata_version(), 1);
    assert_eq!(sig.metadata.signature_type(), 2);
    assert_eq!(sig.metadata.signature_type_name(), Some("RSA_SHA_512"));

    let st = App::from_host_elf(&host, "selftest").unwrap();
    assert_eq!(st.image(), blob("selftest.elf").as_slice());
    assert_eq!(st.signature(), &SignatureStatus::Unsigned);
    assert!(st.symbol("st_outbox_db").is_some());

    match App::from_host_elf(&host, "matmul") {
        Err(AppError::NoSuchApp { name, available }) => {
            assert_eq!(name, "matmul");
            assert_eq!(available.len(), 2);
        }
        other => panic!("{other:?}"),
    }
    let e = App::from_host_elf(&host, "matmul").unwrap_err().to_string();
    assert!(e.contains("rpc_calc") && e.contains("selftest"), "{e}");
}

#[test]
fn all_in_elf_takes_a_device_elf_or_a_host_elf() {
    let apps = App::all_in_elf("dev", &blob("matmul.elf")).unwrap();
    assert_eq!(apps.len(), 1);
    assert_eq!(apps[0].name(), "dev");
    assert_eq!(App::all_in_elf("h", &host_fixture()).unwrap().len(), 2);
    // A host ELF without apps is neither.
    let mut bare = host_fixture();
    rename(&mut bare, ".dpa_bin_rpc_calc", ".xpa_bin_rpc_calc");
    rename(&mut bare, ".dpa_bin_selftest", ".xpa_bin_selftest");
    rename(
        &mut bare,
        ".dpa_sig_name_rpc_calc",
        ".xpa_sig_name_rpc_calc",
    );
    assert!(App::all_in_host_elf(&bare).unwrap().is_empty());
    assert_eq!(
        App::all_in_elf("h", &bare).unwrap_err(),
        AppError::NoApps { machine: 62 }
    );
    assert_eq!(
        App::all_in_elf("x", b"not an elf").unwrap_err(),
        AppError::Elf(ElfError::BadMagic)
    );
}

#[test]
fn malformed_packaging_gives_typed_errors() {
    let host = host_fixture();

    // Two sections for the same app.
    let mut b = host.clone();
    rename(&mut b, ".dpa_bin_selftest", ".dpa_bin_rpc_calc");
    assert_eq!(
        App::all_in_host_elf(&b).unwrap_err(),
        AppError::DuplicateApp("rpc_calc".into())
    );

    // The embedded device ELF is not RISC-V.
    let mut b = host.clone();
    let r = contents_of(&b, ".dpa_bin_selftest");
    b[r.start + 18..r.start + 20].copy_from_slice(&62u16.to_le_bytes());
    assert_eq!(
        App::all_in_host_elf(&b).unwrap_err(),
        AppError::DeviceElf {
            app: "selftest".into(),
            source: ElfError::NotRiscv(62)
        }
    );

    // The embedded device ELF is truncated (its section shortened).
    let mut b = host.clone();
    set_size(&mut b, ".dpa_bin_selftest", 0x100);
    assert!(matches!(
        App::from_host_elf(&b, "selftest").unwrap_err(),
        AppError::DeviceElf { ref app, source: ElfError::OutOfBounds { .. } } if app == "selftest"
    ));

    // The host section runs past the end of the file.
    let mut b = host.clone();
    set_size(&mut b, ".dpa_bin_selftest", 1 << 40);
    assert!(matches!(
        App::all_in_host_elf(&b).unwrap_err(),
        AppError::HostElf(ElfError::OutOfBounds { .. })
    ));

    // The signature-name section: wrong size, no NUL, names nothing, names a missing app.
    let mut b = host.clone();
    set_size(&mut b, ".dpa_sig_name_rpc_calc", 255);
    assert_eq!(
        App::all_in_host_elf(&b).unwrap_err(),
        AppError::SigNameSize {
            section: ".dpa_sig_name_rpc_calc".into(),
            size: 255
        }
    );
    let mut b = host.clone();
    let r = contents_of(&b, ".dpa_sig_name_rpc_calc");
    assert_eq!(r.len(), SIG_NAME_LEN);
    b[r.clone()].fill(b'A');
    assert_eq!(
        App::all_in_host_elf(&b).unwrap_err(),
        AppError::SigNameNotTerminated(".dpa_sig_name_rpc_calc".into())
    );
    let mut b = host.clone();
    b[r.start + 9] = b'X'; // ".dpa_sig_Xpc_calc"
    assert_eq!(
        App::from_host_elf(&b, "rpc_calc").unwrap().signature(),
        &SignatureStatus::Missing {
            section: ".dpa_sig_Xpc_calc".into()
        }
    );
    let mut b = host.clone();
    b[r.clone()].fill(0);
    assert_eq!(
        App::from_host_elf(&b, "rpc_calc").unwrap().signature(),
        &SignatureStatus::Unsigned
    );
    let mut b = host.clone();
    rename(&mut b, ".dpa_sig_name_rpc_calc", ".dpa_sig_name_rpc_calx");
    assert!(matches!(
        App::all_in_host_elf(&b).unwrap_err(),
        AppError::SigNameWithoutApp { ref app, .. } if app == "rpc_calx"
    ));

    // The signature section is shorter than its metadata header.
    let mut b = host;
    set_size(&mut b, ".dpa_sig_rpc_calc", 0x20);
    assert_eq!(
        App::all_in_host_elf(&b).unwrap_err(),
        AppError::SignatureTruncated {
            section: ".dpa_sig_rpc_calc".into(),
            size: 0x20
        }
    );
}

#[test]
fn errors_name_what_is_wrong() {
    let e = App::from_device_elf("x", &host_fixture())
        .unwrap_err()
        .to_string();
    assert!(e.contains("\"x\"") && e.contains("RISC-V"), "{e}");
    let e = App::all_in_elf("x", &host_fixture()[..100])
        .unwrap_err()
        .to_string();
    assert!(e.contains("outside the file"), "{e}");
    let e = App::all_in_host_elf(b"MZ").unwrap_err().to_string();
    assert!(e.starts_with("host ELF: not an ELF file"), "{e}");
}

/// Every prefix of the fixture parses or fails with a typed error.
#[test]
fn every_truncation_of_the_host_elf_is_an_error_or_fine() {
    let host = host_fixture();
    for len in (0..host.len()).step_by(97) {
        let _ = App::all_in_elf("x", &host[..len]);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Random bytes never panic any constructor.
    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = App::from_device_elf("r", &bytes);
        let _ = App::all_in_host_elf(&bytes);
        let _ = App::all_in_elf("r", &bytes);
        let mut elf = b"\x7fELF\x02\x01\x01".to_vec();
        elf.extend_from_slice(&bytes);
        let _ = App::all_in_elf("r", &elf);
    }

    /// The fixture with a few bytes overwritten (headers, section table, embedded images,
    /// signature name) never panics.
    #[test]
    fn corrupted_host_elf_never_panics(
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
        hot in any::<bool>(),
    ) {
        let mut b = host_fixture();
        let shoff = u64::from_le_bytes(b[0x28..0x30].try_into().unwrap()) as usize;
        for (i, v) in edits {
            // Half the time, aim at the ELF header and the section header table.
            let at = if hot {
                let hot_len = 64 + (b.len() - shoff);
                let k = i.index(hot_len);
                if k < 64 { k } else { shoff + k - 64 }
            } else {
                i.index(b.len())
            };
            b[at] = v;
        }
        let _ = App::all_in_elf("c", &b);
        let _ = App::from_host_elf(&b, "rpc_calc");
    }
}
