//! Every declared layout field that a public header also defines must have the same bit offset
//! and width there (issue: "Check this yourself against the kernel's mlx5_ifc.h, DPDK and
//! rdma-core"). The references are offsets computed from the headers (tests/data/ifc/).

use std::collections::BTreeMap;

use mlx5_dpa::mlx5::decode::flatten;
use mlx5_dpa::mlx5::layouts;
use serde_json::Value;

/// Places where the public headers disagree with each other; ours follows the newer rdma-core /
/// DPDK. Each entry: (source, layout, field, why).
const KNOWN_DISAGREEMENTS: &[(&str, &str, &str, &str)] = &[
    (
        "rdma-core",
        "cmd_hca_cap",
        "fast_teardown",
        "rdma-core's provider copy has it at 0x111; the kernel, MLNX_OFED 24.01 and snap at 0xfb",
    ),
    (
        "snap-rdma-newer",
        "create_qp_in",
        "pas",
        "newer headers insert qpc_data_ext before pas; DevX QPs use wq_umem, never pas",
    ),
];

/// `mkc.log_page_size` is 6 bits at 0x1da in MLNX_OFED 24.01 and the current kernel; the older
/// headers here (rdma-core's provider copy, DPDK, snap, the 2017 kernel) declare only its low 5
/// bits at 0x1db. Ours follows the newer; the low bits agree with every source.
fn log_page_size_of_an_older_header(layout: &str, field: &str, off: u64, w: u64) -> bool {
    let at = match layout {
        "mkc" => 0x1db,
        "create_mkey_in" => 0x25b,
        _ => return false,
    };
    field.ends_with("log_page_size") && (off, w) == (at, 5)
}

fn load(name: &str) -> BTreeMap<String, Value> {
    let path = format!("{}/tests/data/ifc/{name}.json", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let v: Value = serde_json::from_str(&text).expect("reference JSON");
    v["layouts"]
        .as_object()
        .expect("layouts object")
        .clone()
        .into_iter()
        .collect()
}

fn compare(source: &str, min_matches: usize, must_cover: &[&str]) {
    let reference = load(source);
    let mut matched = 0;
    let mut mismatches = Vec::new();
    let mut covered = Vec::new();
    for desc in layouts::ALL {
        let Some(r) = reference.get(desc.name) else {
            continue;
        };
        covered.push(desc.name);
        assert!(
            !desc.provisional,
            "{source} defines {} publicly: it should not be provisional",
            desc.name
        );
        let fields = r["fields"].as_object().expect("fields");
        for f in flatten(desc) {
            let Some(rv) = fields.get(&f.name) else {
                continue;
            };
            let (Some(off), Some(w)) = (rv[0].as_u64(), rv[1].as_u64()) else {
                continue;
            };
            if (off, w) == (u64::from(f.offset), u64::from(f.width)) {
                matched += 1;
            } else if !KNOWN_DISAGREEMENTS
                .iter()
                .any(|k| k.0 == source && k.1 == desc.name && k.2 == f.name)
                && !log_page_size_of_an_older_header(desc.name, &f.name, off, w)
            {
                mismatches.push(format!(
                    "{}.{}: ours [{:#x}, {}] vs {source} [{off:#x}, {w}]",
                    desc.name, f.name, f.offset, f.width
                ));
            }
        }
    }
    assert!(
        mismatches.is_empty(),
        "layout fields differ from {source}:\n{}",
        mismatches.join("\n")
    );
    assert!(
        matched >= min_matches,
        "only {matched} fields compared with {source}"
    );
    for name in must_cover {
        assert!(covered.contains(name), "{source} should cover {name}");
    }
}

#[test]
fn layouts_match_rdma_core() {
    compare(
        "rdma-core",
        1400,
        &[
            "cmd_hca_cap",
            "qpc",
            "mkc",
            "sqc",
            "set_fte_in",
            "access_register_in",
            // The datapath formats (byte structs of mlx5dv.h, laid out by the C compiler).
            "mlx5_cqe64",
            "mlx5_err_cqe",
            "mlx5_wqe_ctrl_seg",
            "mlx5_wqe_eth_seg",
            "mlx5_wqe_inl_data_seg",
            "mlx5_wqe_data_seg",
            "mlx5_wqe_raddr_seg",
            "mlx5_wqe_atomic_seg",
        ],
    );
}

#[test]
fn layouts_match_dpdk() {
    compare(
        "dpdk",
        2000,
        &[
            "cqc",
            "create_cq_in",
            "wq",
            "rqc",
            "tirc",
            "rqtc",
            "fte_match_param",
            "alias_context",
            // DPDK's `struct mlx5_cqe` and `mlx5_error_cqe`, compared as ours.
            "mlx5_cqe64",
            "mlx5_err_cqe",
        ],
    );
}

#[test]
fn layouts_match_the_kernel_header() {
    compare(
        "linux-2017",
        1900,
        &[
            "cqc",
            "create_cq_in",
            "qpc",
            "modify_cq_in",
            "qp_2err_in",
            "nop_in",
        ],
    );
}

#[test]
fn layouts_match_snap_rdma() {
    compare(
        "snap-rdma",
        1600,
        &[
            "cqc",
            "dpa_db_cq_mapping",
            "create_dpa_db_cq_mapping_in",
            "set_flow_table_root_in",
        ],
    );
    compare("snap-rdma-newer", 1600, &["dpa_eq", "dpa_cap", "cqc"]);
}

#[test]
fn dpa_binding_fields_sit_where_public_sources_put_them() {
    // cqc.apu_cq / apu_element_type / c_eqn_or_apu_element (docs/sources.md §3) and cmd_hca_cap.apu.
    let cqc = flatten(layouts::by_name("cqc").unwrap());
    let at = |n: &str| {
        cqc.iter()
            .find(|f| f.name == n)
            .map(|f| (f.offset, f.width))
    };
    assert_eq!(at("apu_cq"), Some((0x7, 1)));
    assert_eq!(at("apu_element_type"), Some((0x19, 3)));
    assert_eq!(at("c_eqn_or_apu_element"), Some((0xa0, 32)));
    let cap = flatten(layouts::by_name("cmd_hca_cap").unwrap());
    assert_eq!(
        cap.iter()
            .find(|f| f.name == "apu")
            .map(|f| (f.offset, f.width)),
        Some((0x688, 1))
    );
}

#[test]
fn layouts_match_ofed_24_01() {
    // The newest public copy of the PRM layouts held here (MLNX_OFED 24.01's
    // include/linux/mlx5/mlx5_ifc.h, as packaged for BlueField in ssbandjl/doca).
    compare(
        "ofed-24.01",
        2000,
        &["cmd_hca_cap", "mkc", "qpc", "cqc", "sqc", "fte_match_param"],
    );
}

/// Fields of public sources that are not among the reference JSON files (docs/sources.md section 9):
/// `dpa_cap` from a public NVIDIA `mlx5_prm.h` (`mlx5_ifc_dpa_capabilities_bits`), the EU
/// registers from mstflint's adb.
#[test]
fn dpa_capability_and_eu_register_fields_sit_where_public_sources_put_them() {
    let at = |layout: &str, field: &str| {
        flatten(layouts::by_name(layout).unwrap())
            .into_iter()
            .find(|f| f.name == field)
            .map(|f| (f.offset, f.width))
    };
    assert_eq!(at("dpa_cap", "dpa_auth_enabled"), Some((0x11, 1)));
    assert_eq!(at("dpa_cap", "log_max_dpa_partitions"), Some((0x6b, 5)));
    assert_eq!(
        at("dpa_cap", "log_max_harts_per_partition"),
        Some((0x73, 5))
    );
    assert_eq!(at("dpa_cap", "log_max_vhca_per_partition"), Some((0x7b, 5)));
    // 0x200 bytes of 16-bit vHCA ids; a 0x10-byte name; modify_field_select at byte 0x4.
    assert_eq!(
        at("nic_dpa_eu_partition_reg", "vhca_id"),
        Some((0x600, 0x200 * 8))
    );
    assert_eq!(at("nic_dpa_eug_reg", "eug_name"), Some((0x80, 0x10 * 8)));
    assert_eq!(
        at("nic_dpa_eug_reg", "modify_field_select").map(|(o, _)| o / 8),
        Some(0x4)
    );
}
