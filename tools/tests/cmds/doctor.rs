//! `mlx5-dpa doctor` on the model: every step passes on bf3; a device without a DPA (cx7) and
//! a model that requires signed DPA images stop at the step that cannot pass, with the
//! firmware's syndrome and the model's check.

use crate::common;
use common::*;

fn doctor(globals: &[&str]) -> (Option<i32>, serde_json::Value) {
    let mut args: Vec<&str> = globals.to_vec();
    args.extend(["doctor", "--json"]);
    let o = run(&args);
    let v = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}{}", stdout(&o), stderr(&o)));
    (o.status.code(), v)
}

fn names(v: &serde_json::Value) -> Vec<String> {
    v["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .map(|s| s["name"].as_str().unwrap_or("").to_string())
        .collect()
}

#[test]
fn every_step_passes_on_the_model() {
    let (code, v) = doctor(&["--sim"]);
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(v["passed"], v["total"], "{v}");
    let steps = v["steps"].as_array().expect("steps");
    assert_eq!(steps.len() as u64, v["total"].as_u64().unwrap());
    assert!(steps.iter().all(|s| s["ok"] == true), "{v}");
    // The last step called the DPA and checked the sum.
    let last = steps.last().expect("a step");
    assert!(
        last["detail"].as_str().unwrap().contains("= 0xacf13568"),
        "{last}"
    );
}

#[test]
fn a_device_without_a_dpa_stops_at_the_dpa() {
    let (code, v) = doctor(&["--sim=cx7"]);
    assert_eq!(code, Some(1));
    let steps = v["steps"].as_array().expect("steps");
    let failed = steps.last().expect("a step");
    assert_eq!(failed["ok"], false);
    assert_eq!(failed["name"], "query the DPA capabilities");
    assert!(
        failed["hint"].as_str().unwrap().contains("no DPA"),
        "{failed}"
    );
    // Everything before it passed; nothing after it ran.
    assert!(steps[..steps.len() - 1].iter().all(|s| s["ok"] == true));
    assert!(!names(&v).contains(&"load a DPA process".to_string()));
    assert_eq!(v["passed"].as_u64(), Some(steps.len() as u64 - 1));
}

#[test]
fn a_refusal_names_its_syndrome_and_the_models_check() {
    let root = repo("tests/data/auth/root.der");
    let (code, v) = doctor(&["--sim", "--sim-trust", &root]);
    assert_eq!(code, Some(1));
    let failed = v["steps"]
        .as_array()
        .expect("steps")
        .last()
        .cloned()
        .expect("a step");
    assert_eq!(failed["name"], "load a DPA process");
    assert_eq!(failed["syndrome"], 0x5131_022a, "{failed}");
    assert_eq!(failed["status"], "BAD_PARAM (0x3)", "{failed}");
    assert!(
        failed["check"]
            .as_str()
            .unwrap()
            .contains("without a signature"),
        "{failed}"
    );
    // --sim-trust configures a device: refused where there is none.
    let o = run(&["--sim-trust", &root, "prm", "layouts", "cqc"]);
    assert_eq!(o.status.code(), Some(2));
}
