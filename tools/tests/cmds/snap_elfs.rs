//! NVIDIA-built DPA programs (snap's `dpa_nvme`, `dpa_nvme_mp`, `dpa_virtq_split`; docs/sources.md
//! section 8), which are not ours to commit: with `MLX5_DPA_SNAP_DIR` naming a folder that holds
//! them (`fw-blobs/compat/README.md` says how to fetch them), every instruction decodes
//! (`elf isa`), their `.sig` files read as RSA_SHA_512 signatures (`elf info`), and their own
//! `strlen` / `strchr` / `strrchr` return what the C library
//! definitions say, on strings taken from their `.rodata`. Without the variable the test says
//! so and checks nothing.

use crate::common;
use common::*;

use mlx5_dpa::dpa::elf::Elf;

const PROGRAMS: [&str; 3] = ["dpa_nvme", "dpa_nvme_mp", "dpa_virtq_split"];

/// `vm run FILE --entry FUNC --args ARGS` and the function's return value.
fn call(file: &str, func: &str, args: &[u64]) -> u64 {
    let args: Vec<String> = args.iter().map(|a| format!("{a:#x}")).collect();
    let o = run(&[
        "vm",
        "run",
        file,
        "--entry",
        func,
        "--args",
        &args.join(","),
        "--json",
    ]);
    assert!(o.status.success(), "{file} {func}: {}", stderr(&o));
    let j: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("json");
    j["return_value"]
        .as_u64()
        .unwrap_or_else(|| panic!("{file} {func}: {j}"))
}

/// Up to `n` NUL-terminated printable strings of at least 8 bytes in `.rodata`, with their
/// guest addresses.
fn rodata_strings(elf: &Elf<'_>, n: usize) -> Vec<(u64, Vec<u8>)> {
    let sec = elf.section(".rodata").expect(".rodata");
    let mut out = Vec::new();
    let mut start = 0usize;
    for (i, b) in sec.data.iter().enumerate() {
        if *b != 0 {
            continue;
        }
        let s = &sec.data[start..i];
        if s.len() >= 8 && s.iter().all(|c| (0x20..0x7f).contains(c)) {
            out.push((sec.addr + start as u64, s.to_vec()));
            if out.len() == n {
                break;
            }
        }
        start = i + 1;
    }
    out
}

#[test]
#[cfg_attr(
    no_snap_dir,
    ignore = "MLX5_DPA_SNAP_DIR does not name NVIDIA's snap programs (fw-blobs/compat/README.md)"
)]
fn nvidia_built_programs_decode_whole_and_their_string_functions_return_the_right_pointers() {
    let dir = std::env::var_os("MLX5_DPA_SNAP_DIR").expect("set at build time (tools/build.rs)");
    let dir = std::path::PathBuf::from(dir);
    for name in PROGRAMS {
        let path = dir.join(name);
        let file = path.display().to_string();
        let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{file}: {e}"));

        let o = run(&["elf", "isa", &file]);
        let out = stdout(&o);
        assert_eq!(o.status.code(), Some(0), "{file}: {out}");
        assert!(out.contains("zbp0p93_zbr0p93"), "{file}: {out}");
        assert!(out.contains("  undecodable: none\n"), "{file}: {out}");

        // The signature beside it (`<name>.sig`): RSA_SHA_512 crypto data.
        let o = run(&["elf", "info", &file]);
        let out = stdout(&o);
        assert!(o.status.success(), "{file}: {}", stderr(&o));
        if dir.join(format!("{name}.sig")).is_file() {
            assert!(
                out.contains(".sig (separate file, ")
                    && out.contains("signature_type 2 (RSA_SHA_512)"),
                "{file}: {out}"
            );
        }

        let elf = Elf::parse(&bytes).unwrap();
        let strings = rodata_strings(&elf, 6);
        assert!(strings.len() >= 3, "{file}: too few strings in .rodata");
        for (addr, s) in &strings {
            assert_eq!(call(&file, "strlen", &[*addr]), s.len() as u64, "{file}");
            let absent = (1u8..=0x7f).find(|c| !s.contains(c)).unwrap();
            for c in [s[0], s[s.len() / 2], s[s.len() - 1], absent] {
                let first = s
                    .iter()
                    .position(|x| *x == c)
                    .map_or(0, |i| addr + i as u64);
                let last = s
                    .iter()
                    .rposition(|x| *x == c)
                    .map_or(0, |i| addr + i as u64);
                let c64 = u64::from(c);
                assert_eq!(call(&file, "strchr", &[*addr, c64]), first, "{file} {c:#x}");
                assert_eq!(call(&file, "strrchr", &[*addr, c64]), last, "{file} {c:#x}");
            }
            // The terminator is part of the string for both (C11 7.24.5.2 / 7.24.5.5).
            let end = addr + s.len() as u64;
            assert_eq!(call(&file, "strchr", &[*addr, 0]), end, "{file}");
            assert_eq!(call(&file, "strrchr", &[*addr, 0]), end, "{file}");
        }
    }
}
