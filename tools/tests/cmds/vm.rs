//! `mlx5-dpa vm run`: the bare corpus ELFs, and small ELFs written by the test (every way a
//! run ends: exit ecalls, tohost, return, budget, faults).

use crate::common;
use common::*;

use std::path::PathBuf;

fn corpus(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../fw-blobs/bare/bin")
        .join(name)
        .display()
        .to_string()
}

const TEXT: u64 = 0x4000_0000;
const DATA: u64 = 0x8000_0000;

/// A minimal ELF64 RISC-V executable: `text` (r-x) at TEXT, `data` (rw-) at DATA, symbols
/// (name, value), entry at TEXT.
fn elf(text: &[u32], data: &[u8], symbols: &[(&str, u64)]) -> Vec<u8> {
    let code: Vec<u8> = text.iter().flat_map(|w| w.to_le_bytes()).collect();
    let mut f = vec![0u8; 64];
    f[..4].copy_from_slice(b"\x7fELF");
    f[4] = 2; // ELFCLASS64
    f[5] = 1; // little-endian
    f[6] = 1;
    f[16..18].copy_from_slice(&2u16.to_le_bytes()); // ET_EXEC
    f[18..20].copy_from_slice(&243u16.to_le_bytes()); // EM_RISCV
    f[20..24].copy_from_slice(&1u32.to_le_bytes());
    f[24..32].copy_from_slice(&TEXT.to_le_bytes());
    f[32..40].copy_from_slice(&64u64.to_le_bytes());
    f[52..54].copy_from_slice(&64u16.to_le_bytes());
    f[54..56].copy_from_slice(&56u16.to_le_bytes());
    f[56..58].copy_from_slice(&2u16.to_le_bytes());
    f[58..60].copy_from_slice(&64u16.to_le_bytes());
    let text_off = 64 + 2 * 56;
    let data_off = text_off + code.len();
    let ph = |flags: u32, off: usize, vaddr: u64, len: usize| {
        let mut p = vec![0u8; 56];
        p[0..4].copy_from_slice(&1u32.to_le_bytes());
        p[4..8].copy_from_slice(&flags.to_le_bytes());
        p[8..16].copy_from_slice(&(off as u64).to_le_bytes());
        p[16..24].copy_from_slice(&vaddr.to_le_bytes());
        p[32..40].copy_from_slice(&(len as u64).to_le_bytes());
        p[40..48].copy_from_slice(&(len.max(8) as u64).to_le_bytes());
        p
    };
    f.extend(ph(5, text_off, TEXT, code.len()));
    f.extend(ph(6, data_off, DATA, data.len()));
    f.extend(&code);
    f.extend(data);
    // .symtab / .strtab / .shstrtab
    let mut strtab = vec![0u8];
    let mut symtab = vec![0u8; 24];
    for (name, value) in symbols {
        let mut e = vec![0u8; 24];
        e[0..4].copy_from_slice(&(strtab.len() as u32).to_le_bytes());
        e[4] = 0x12; // global function
        e[6..8].copy_from_slice(&1u16.to_le_bytes());
        e[8..16].copy_from_slice(&value.to_le_bytes());
        symtab.extend(e);
        strtab.extend(name.as_bytes());
        strtab.push(0);
    }
    let shstr = b"\0.symtab\0.strtab\0.shstrtab\0";
    while !f.len().is_multiple_of(8) {
        f.push(0);
    }
    let sym_off = f.len();
    f.extend(&symtab);
    let str_off = f.len();
    f.extend(&strtab);
    let shstr_off = f.len();
    f.extend(shstr);
    while !f.len().is_multiple_of(8) {
        f.push(0);
    }
    let shoff = f.len();
    let sh = |name: u32, ty: u32, off: usize, size: usize, link: u32, ent: u64| {
        let mut s = vec![0u8; 64];
        s[0..4].copy_from_slice(&name.to_le_bytes());
        s[4..8].copy_from_slice(&ty.to_le_bytes());
        s[24..32].copy_from_slice(&(off as u64).to_le_bytes());
        s[32..40].copy_from_slice(&(size as u64).to_le_bytes());
        s[40..44].copy_from_slice(&link.to_le_bytes());
        s[56..64].copy_from_slice(&ent.to_le_bytes());
        s
    };
    f.extend(sh(0, 0, 0, 0, 0, 0));
    f.extend(sh(1, 2, sym_off, symtab.len(), 2, 24));
    f.extend(sh(9, 3, str_off, strtab.len(), 0, 0));
    f.extend(sh(17, 3, shstr_off, shstr.len(), 0, 0));
    f[40..48].copy_from_slice(&(shoff as u64).to_le_bytes());
    f[60..62].copy_from_slice(&4u16.to_le_bytes());
    f[62..64].copy_from_slice(&3u16.to_le_bytes());
    f
}

// RV64 encodings used below.
const fn addi(rd: u32, rs1: u32, imm: i32) -> u32 {
    ((imm as u32) & 0xfff) << 20 | rs1 << 15 | rd << 7 | 0x13
}
const ECALL: u32 = 0x0000_0073;
const RET: u32 = 0x0000_8067; // jalr x0, 0(ra)
const A0: u32 = 10;
const A7: u32 = 17;

#[test]
fn runs_a_corpus_program_to_its_exit() {
    let o = run(&["vm", "run", &corpus("crc.elf")]);
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    let out = stdout(&o);
    assert!(out.starts_with("crc a80635866ac05100\n"), "{out}");
    assert!(
        out.contains("stopped: exit (ecall exit), code 0\n"),
        "{out}"
    );
    assert!(out.contains("exit code: 0\n"), "{out}");
    assert!(out.contains("instructions: 414303\n"), "{out}");
}

#[test]
fn entry_symbol_with_arguments_returns_a0() {
    let o = run(&[
        "vm",
        "run",
        &corpus("compute.elf"),
        "--entry",
        "compute",
        "--args",
        "0",
    ]);
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    assert!(
        stdout(&o).contains("return value: 0x9e3779b97f4a7c15"),
        "{}",
        stdout(&o)
    );
    let path = scratch(
        "vm-test",
        "add.elf",
        &elf(
            &[0x00b5_0533 /* add a0, a0, a1 */, RET],
            &[],
            &[("add", TEXT)],
        ),
    );
    let o = run(&["vm", "run", &path, "--entry", "add", "--args", "40,2"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("return value: 0x2a (42)\n"),
        "{}",
        stdout(&o)
    );
    assert!(stdout(&o).contains("instructions: 2\n"), "{}", stdout(&o));
    let o = run(&["vm", "run", &path, "--args", "-1,0x10"]);
    assert!(
        stdout(&o).contains("return value: 0xf (15)\n"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn exit_process_ecall_and_tohost_end_the_run() {
    let path = scratch(
        "vm-test",
        "exit4.elf",
        &elf(&[addi(A7, 0, 4), addi(A0, 0, -7), ECALL], &[], &[]),
    );
    let o = run(&["vm", "run", &path]);
    // The program's exit code is the tool's exit status; -7 is outside 0-255: 255.
    assert_eq!(o.status.code(), Some(255), "{}", stderr(&o));
    assert!(
        stdout(&o).contains(
            "stopped: exit (ecall EXIT_PROCESS), code -7\nexit code: -7\ninstructions: 3\n"
        ),
        "{}",
        stdout(&o)
    );
    assert!(stdout(&o).contains(" MIPS ("), "{}", stdout(&o));
    let o = run(&["vm", "run", &path, "--json"]);
    assert_eq!(o.status.code(), Some(255));
    let j: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("one JSON object");
    assert_eq!(j["exit_code"], -7);
    assert_eq!(j["instructions"], 3);
    assert_eq!(j["finished"], true);
    assert!(j["mips"].is_number(), "{j}");
    // t0 = 1 << 31 (DATA); t1 = (5 << 1) | 1; sd t1, 8(t0)  (tohost at DATA + 8)
    let path = scratch(
        "vm-test",
        "tohost.elf",
        &elf(
            &[addi(5, 0, 1), 0x01f2_9293, addi(6, 0, 11), 0x0062_b423],
            &[0; 16],
            &[("tohost", DATA + 8)],
        ),
    );
    let o = run(&["vm", "run", &path]);
    assert_eq!(o.status.code(), Some(5), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("stopped: exit (tohost), code 5\nexit code: 5\ninstructions: 4\n"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn faults_and_budget_fail_with_the_reason() {
    let path = scratch(
        "vm-test",
        "illegal.elf",
        &elf(&[addi(5, 0, 1), 0x0000_000b], &[], &[]),
    );
    let o = run(&["vm", "run", &path]);
    assert!(!o.status.success());
    assert!(
        stdout(&o).contains(
            "stopped: fault: illegal instruction 0x0000000b at 0x40000004 (in the custom-0 \
             opcode space: a vendor extension (NVIDIA's DPA extensions xfenceheap / xnvcc / \
             xrpfxp have no public encodings, so the engine does not execute them))\n"
        ),
        "{}",
        stdout(&o)
    );
    assert!(stdout(&o).contains("instructions: 1\n"));
    assert!(stderr(&o).contains("did not finish"), "{}", stderr(&o));

    // sd x0, 0(x0): nothing is mapped at 0.
    let path = scratch("vm-test", "store.elf", &elf(&[0x0000_3023], &[], &[]));
    let o = run(&["vm", "run", &path]);
    assert!(!o.status.success());
    assert!(
        stdout(&o)
            .contains("fault: 8-byte store at 0x0 (Unmapped) by the instruction at 0x40000000"),
        "{}",
        stdout(&o)
    );

    let o = run(&["vm", "run", &corpus("sort.elf"), "--max-insns", "1000"]);
    assert!(!o.status.success());
    assert!(
        stdout(&o).contains("stopped: budget exhausted\ninstructions: 1000\n"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn bad_input_is_reported() {
    let o = run(&["vm", "run", "/nonexistent/x.elf"]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("cannot read /nonexistent/x.elf"),
        "{}",
        stderr(&o)
    );
    let path = scratch("vm-test", "not-elf", b"#!/bin/sh\n");
    let o = run(&["vm", "run", &path]);
    assert!(stderr(&o).contains("not an ELF file"), "{}", stderr(&o));
    let o = run(&["vm", "run", &corpus("crc.elf"), "--entry", "nope"]);
    assert!(stderr(&o).contains("no symbol \"nope\""), "{}", stderr(&o));
    let o = run(&["vm", "run", &corpus("crc.elf"), "--args", "1,zz"]);
    assert!(
        stderr(&o).contains("\"zz\" is not an integer"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_flexio_program_without_entry_lists_its_entries() {
    let o = run(&["vm", "run", &repo("fw-blobs/bin/rpc_calc.elf")]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(err.contains("has no standalone entry"), "{err}");
    assert!(err.contains("flexio_dev_thread_finish"), "{err}");
    assert!(err.contains("rpc_digits8"), "{err}");
    assert!(stdout(&o).is_empty(), "nothing ran: {}", stdout(&o));
}

/// A long run says how far it got (regression: a runaway program was silent until its budget
/// ran out, 20 s or so); the wait before the first line is set to 0 here.
#[test]
fn a_long_run_reports_progress() {
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_mlx5-dpa"))
        .args([
            "vm",
            "run",
            &repo("fw-blobs/bin/selftest.elf"),
            "--entry",
            "st_spin_forever",
            "--max-insns",
            "50000000",
        ])
        .env("MLX5_DPA_VM_QUIET_MS", "0")
        .output()
        .expect("run");
    assert_eq!(o.status.code(), Some(1), "the budget ends it");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("vm: 20 M of 50 M instructions after "),
        "{err}"
    );
}
