//! `mlx5-dpa demo rpc`: FlexIO's RPC sample through the CLI, on the device model.

mod common;
use common::*;

#[test]
fn demo_rpc_adds_on_the_dpa() {
    let o = run(&["--sim", "demo", "rpc", "44", "55"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "stdout:\n{out}\nstderr:\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(out.lines().any(|l| l == "Result: 99"), "{out}");
}

#[test]
fn demo_rpc_without_a_dpa_says_so() {
    let o = run(&["--sim=cx7", "demo", "rpc", "1", "2"]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("DPA not supported"), "{err}");
}
