//! The model's DPA with the RISC-V JIT (`cargo test --features jit`): processes loaded from the
//! same ELF share one program's compiled code, whichever EU runs them; another ELF gets its
//! own. (What the JIT computes is checked against the interpreter in `rv/tests/jit.rs`; every
//! other DPA test runs on a JIT model in CI too.)
#![cfg(feature = "jit")]

use crate::dpa_common;

use dpa_common::model;

use mlx5_dpa::dpa::{Process, ProcessAttr};

const RPC_CALC: &[u8] = include_bytes!("../../fw-blobs/bin/rpc_calc.elf");
const SELFTEST: &[u8] = include_bytes!("../../fw-blobs/bin/selftest.elf");

/// Calls `rpc_calculate` often enough for its code to become hot, checking every answer.
fn calls(p: &Process, n: u64) {
    for i in 0..n {
        assert_eq!(p.call("rpc_calculate", &[i, 3]).expect("rpc"), i + 3);
    }
}

#[test]
fn processes_of_one_elf_share_compiled_code_and_another_elf_gets_its_own() {
    let (d, ctx) = model("bf3");
    let a = Process::create(&ctx, RPC_CALC, &ProcessAttr::default()).expect("process a");
    let b = Process::create(&ctx, RPC_CALC, &ProcessAttr::default()).expect("process b");
    calls(&a, 200);
    calls(&b, 200);
    let programs = d.jit_programs();
    assert_eq!(
        programs.len(),
        1,
        "one program for two processes: {programs:?}"
    );
    let (_, _, regions) = programs[0];
    assert!(regions > 0, "nothing was compiled: {programs:?}");
    // The second process ran the first one's code: nothing more was compiled for it.
    calls(&b, 200);
    assert_eq!(d.jit_programs()[0].2, regions);

    let other = Process::create(&ctx, SELFTEST, &ProcessAttr::default()).expect("selftest");
    // Any call makes the selftest program's EU cache; hot or not, it is a program of its own.
    assert_eq!(other.call("st_add", &[41]).expect("st_add"), 42);
    let programs = d.jit_programs();
    assert_eq!(programs.len(), 2, "{programs:?}");
    assert_ne!(programs[0].1, 0);
}
