//! `mlx5-dpa cc`: typed errors always; with Debian's riscv64-unknown-elf-gcc present (else
//! these say so and check nothing more), it reproduces fw-blobs' build byte for byte, and a
//! program written here against the FlexIO headers runs as the RPC demo's device side.

use crate::common;
use common::*;
use std::process::Output;

fn scratch_dir(tag: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("mlx5-dpa-cc-test-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn missing_compiler_and_sources_are_clear_errors() {
    let o = run(&[
        "cc",
        "--cc",
        "/nonexistent/riscv-gcc",
        "-o",
        "/tmp/x.elf",
        &repo("fw-blobs/src/rpc_calc.c"),
    ]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(
        err.contains("not found") && err.contains("apt-get install gcc-riscv64-unknown-elf"),
        "{err}"
    );
}

/// Regression (issue 30, defect 5): `--sign-key` was read whole, without the tool's bound,
/// so `/dev/zero` grew until the OOM killer came.
#[test]
fn a_sign_key_that_is_no_regular_file_is_refused_before_reading() {
    let o = run(&[
        "cc",
        "-o",
        "/tmp/x.elf",
        "--sign-key",
        "/dev/zero",
        "--cert",
        "/dev/null",
        &repo("fw-blobs/src/rpc_calc.c"),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("/dev/zero is not a regular file"),
        "{}",
        stderr(&o)
    );
}

#[test]
#[cfg_attr(no_riscv_gcc, ignore = "riscv64-unknown-elf-gcc is not installed")]
fn missing_sources_and_compile_errors_are_clear_errors() {
    {
        let o = run(&["cc", "-o", "/tmp/x.elf", "/nonexistent/src.c"]);
        assert_eq!(o.status.code(), Some(1));
        assert!(stderr(&o).contains("no such source file"), "{}", stderr(&o));
        let d = scratch_dir("bad");
        let src = d.join("bad.c");
        std::fs::write(&src, "int f(void) { return not_declared; }\n").unwrap();
        let o = run(&[
            "cc",
            "-o",
            &d.join("x.elf").display().to_string(),
            &src.display().to_string(),
        ]);
        assert_eq!(o.status.code(), Some(1));
        let err = stderr(&o);
        assert!(
            err.contains("compiling") && err.contains("not_declared"),
            "{err}"
        );
        let _ = std::fs::remove_dir_all(&d);
    }
}

#[test]
#[cfg_attr(no_riscv_gcc, ignore = "riscv64-unknown-elf-gcc is not installed")]
fn cc_reproduces_the_fw_blobs_build_byte_for_byte() {
    let d = scratch_dir("repro");
    let out = d.join("rpc_calc.elf");
    let o = run(&[
        "cc",
        "-o",
        &out.display().to_string(),
        &repo("fw-blobs/src/rpc_calc.c"),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        std::fs::read(&out).unwrap() == std::fs::read(repo("fw-blobs/bin/rpc_calc.elf")).unwrap(),
        "cc and build.sh disagree"
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// A device program as a FlexIO user writes it (libflexio-dev, libflexio-libc, dpaintrin),
/// built by `mlx5-dpa cc` and run by the RPC demo in place of fw-blobs' build: its own
/// rpc_calculate (a product here) and its print come back.
#[test]
#[cfg_attr(no_riscv_gcc, ignore = "riscv64-unknown-elf-gcc is not installed")]
fn a_program_built_with_cc_runs_as_the_rpc_demos_device_side() {
    let d = scratch_dir("rpc");
    let src = d.join("my_rpc_dev.c");
    std::fs::write(
        &src,
        r#"#include <libflexio-dev/flexio_dev.h>
#include <libflexio-libc/string.h>
#include <libflexio-libc/stdio.h>
#include <dpaintrin.h>

uint64_t rpc_calculate(uint64_t a, uint64_t b);

__dpa_rpc__ uint64_t rpc_calculate(uint64_t a, uint64_t b)
{
	char word[16];

	snprintf(word, sizeof(word), "%s", "Product");
	__dpa_thread_memory_writeback();
	flexio_dev_print("%s: %lu * %lu = %lu (%u chars)\n", word, a, b, a * b,
			 (unsigned)strlen(word));
	return a * b;
}
"#,
    )
    .unwrap();
    let elf = d.join("my_rpc.elf");
    let o = run(&[
        "cc",
        "-o",
        &elf.display().to_string(),
        &src.display().to_string(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run(&[
        "--sim",
        "demo",
        "rpc",
        "6",
        "7",
        "--app-elf",
        &elf.display().to_string(),
    ]);
    let out = stdout(&o);
    assert!(o.status.success(), "{out}\n{}", stderr(&o));
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines,
        [
            "Welcome to 'Flex IO RPC' sample",
            "Registered on device mlx5-sim (bf3)",
            "Product: 6 * 7 = 42 (7 chars)",
            "Result: 42",
            "Flex IO RPC sample is done",
        ]
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// `--package-into HOST --app NAME` adds `.dpa_bin_NAME` to a copy of the host program, as
/// DPACC packages device code (here twice, into `/bin/true`: any ELF host program will do);
/// `elf info` finds both.
#[test]
#[cfg_attr(
    any(no_riscv_gcc, no_objcopy),
    ignore = "riscv64-unknown-elf-gcc or objcopy is not installed"
)]
fn cc_packages_the_device_elf_into_a_host_program() {
    let d = scratch_dir("pkg");
    let once = d.join("host_one");
    let out = d.join("host_two");
    let o = package(
        &once,
        "/bin/true",
        "calc1",
        None,
        &repo("fw-blobs/src/rpc_calc.c"),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let o = package(
        &out,
        &once.display().to_string(),
        "calc2",
        None,
        &repo("fw-blobs/src/rpc_calc.c"),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run(&[
        "elf",
        "info",
        &out.display().to_string(),
        "--app",
        "calc2",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let j: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let entries = j["apps"][0]["entries"].as_array().unwrap();
    assert!(entries.iter().any(|e| e["name"] == "rpc_calculate"), "{j}");
    let o = run(&["elf", "info", &out.display().to_string()]);
    let text = stdout(&o);
    assert!(
        text.contains("app calc1:") && text.contains("app calc2:"),
        "{text}"
    );
    // A name that cannot be a section suffix is refused before anything runs.
    let o = package(
        &out,
        "/bin/true",
        "bad name",
        None,
        &repo("fw-blobs/src/rpc_calc.c"),
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("letters, digits and '_' only"),
        "{}",
        stderr(&o)
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// Compiles a device source that states FlexIO device API `version` (or none) and has `body`
/// as an RPC's body.
fn build_for_version(d: &std::path::Path, tag: &str, version: Option<&str>, body: &str) -> Output {
    let src = d.join(format!("{tag}.c"));
    let stated = version
        .map(|v| format!("#define FLEXIO_DEV_VER_USED {v}\n"))
        .unwrap_or_default();
    std::fs::write(
        &src,
        format!(
            "#include <libflexio-dev/flexio_dev_ver.h>\n\
             {stated}\
             #include <libflexio-dev/flexio_dev.h>\n\
             #include <libflexio-dev/flexio_dev_queue_access.h>\n\
             __dpa_rpc__ uint64_t f(uint64_t x) {{\n{body}\n}}\n"
        ),
    )
    .unwrap();
    run(&[
        "cc",
        "-o",
        &d.join(format!("{tag}.elf")).display().to_string(),
        &src.display().to_string(),
    ])
}

/// The device half of the version API, as FlexIO 25.01's headers check it: no lower bound
/// (0.0.0 warns that it is the last supported), every version up to 25.01 silent,
/// FLEXIO_DEV_VER_LATEST taken as 25.01, a newer version than the headers' an error.
#[test]
#[cfg_attr(no_riscv_gcc, ignore = "riscv64-unknown-elf-gcc is not installed")]
fn the_device_version_macros_check_at_compile_time() {
    let d = scratch_dir("ver");
    let build = |v: &str| build_for_version(&d, "v", Some(v), "return x;");
    let o = build("FLEXIO_DEV_VER(0, 0, 0)");
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("oldest version still supported"),
        "{}",
        stderr(&o)
    );
    for v in ["24, 1", "24, 4", "24, 10", "25, 1"] {
        let o = build(&format!("FLEXIO_DEV_VER({v}, 0)"));
        assert!(
            o.status.success() && stderr(&o).is_empty(),
            "{v}: {}",
            stderr(&o)
        );
    }
    let o = build("FLEXIO_DEV_VER_LATEST");
    assert!(
        o.status.success() && stderr(&o).is_empty(),
        "{}",
        stderr(&o)
    );
    let o = build("FLEXIO_DEV_VER(25, 4, 0)");
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("newer than these headers"),
        "{}",
        stderr(&o)
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// The calls FlexIO 24.10 changed, as each version has them: before 24.10 the doorbell calls
/// take the thread context and return a status and the window calls take the thread context
/// (and `flexio_dev_cc_db_next_act_t` is a name); from 24.10 neither, the window calls take a
/// window entity. A program that states its version gets that version's forms only (the other
/// form is a compile error); one that states none (as every 24.01 program) gets both.
#[test]
#[cfg_attr(no_riscv_gcc, ignore = "riscv64-unknown-elf-gcc is not installed")]
fn each_device_api_version_declares_its_own_call_forms() {
    let d = scratch_dir("forms");
    let old = "struct flexio_dev_thread_ctx *t;\n\
               flexio_dev_get_thread_ctx(&t);\n\
               flexio_dev_status_t s = flexio_dev_qp_sq_ring_db(t, 1, 2);\n\
               s |= flexio_dev_cq_arm(t, 0, 3);\n\
               s |= flexio_dev_eq_update_ci(t, 0, 4);\n\
               if (x == 7) s |= flexio_dev_msix_send(t, 5);\n\
               s |= flexio_dev_window_config(t, 1, 6);\n\
               flexio_uintptr_t p = 0;\n\
               s |= flexio_dev_window_ptr_acquire(t, 0x1000, &p);\n\
               flexio_dev_cc_db_next_act_t a = CC_DB_NEXT_ACT_SINGLE;\n\
               return s + p + a;";
    let new = "flexio_dev_qp_sq_ring_db(1, 2);\n\
               flexio_dev_cq_arm(0, 3);\n\
               flexio_dev_eq_update_ci(0, 4);\n\
               if (x == 7) flexio_dev_zcqe_gen(5);\n\
               flexio_dev_status_t s = flexio_dev_window_config(FLEXIO_DEV_WINDOW_ENTITY_0, 1, 6);\n\
               flexio_uintptr_t p = 0;\n\
               s |= flexio_dev_window_ptr_acquire(FLEXIO_DEV_WINDOW_ENTITY_0, 0x1000, &p);\n\
               enum flexio_dev_cc_db_next_act a = CC_DB_NEXT_ACT_SINGLE;\n\
               return s + p + a;";
    let cases: [(Option<&str>, bool, bool); 7] = [
        (None, true, true),
        (Some("FLEXIO_DEV_VER(24, 1, 0)"), true, false),
        (Some("FLEXIO_DEV_VER(24, 4, 0)"), true, false),
        (Some("FLEXIO_DEV_VER(24, 7, 0)"), true, false),
        (Some("FLEXIO_DEV_VER(24, 10, 0)"), false, true),
        (Some("FLEXIO_DEV_VER(25, 1, 0)"), false, true),
        (Some("FLEXIO_DEV_VER_LATEST"), false, true),
    ];
    for (version, old_ok, new_ok) in cases {
        for (form, body, ok) in [("old", old, old_ok), ("new", new, new_ok)] {
            let o = build_for_version(&d, form, version, body);
            let err = stderr(&o);
            if ok {
                // Silent, too: a form taken for the other would warn about its argument types.
                assert!(
                    o.status.success() && err.is_empty(),
                    "{version:?}, {form} form: {err}"
                );
            } else {
                assert_eq!(o.status.code(), Some(1), "{version:?}, {form} form: {err}");
                assert!(
                    err.contains("too many arguments") || err.contains("too few arguments"),
                    "{version:?}, {form} form: {err}"
                );
            }
        }
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// DOCA DPA's device API as the DOCA version macros select it (`DOCA_VERSION_MAJOR` /
/// `_MINOR`, 2.9 when unstated): 2.6's buffer-and-offset forms, 2.7's and 2.8's map forms
/// without a connection id, 2.9's with one. Each version takes its own call and refuses the
/// others'; a version before 2.6 is an error that names the macros.
#[test]
#[cfg_attr(no_riscv_gcc, ignore = "riscv64-unknown-elf-gcc is not installed")]
fn the_doca_version_macros_select_the_device_api() {
    let d = scratch_dir("doca-ver");
    let forms = [
        ("2.6", "doca_dpa_dev_rdma_post_send(r, buf, 8, 64);"),
        ("2.7", "doca_dpa_dev_rdma_post_send(r, map, addr, 64, 1);"),
        (
            "2.9",
            "doca_dpa_dev_rdma_post_send(r, 0, map, addr, 64, DOCA_DPA_DEV_SUBMIT_FLAG_FLUSH);",
        ),
    ];
    let build = |defines: &[&str], body: &str| {
        let src = d.join("k.c");
        std::fs::write(
            &src,
            format!(
                "#include <doca_dpa_dev.h>\n\
                 #include <doca_dpa_dev_buf.h>\n\
                 #include <doca_dpa_dev_rdma.h>\n\
                 __dpa_global__ void k(doca_dpa_dev_rdma_t r, doca_dpa_dev_buf_t buf,\n\
                 doca_dpa_dev_mmap_t map, uint64_t addr) {{\n\
                 (void)buf; (void)map; (void)addr;\n{body}\n}}\n"
            ),
        )
        .unwrap();
        let out = d.join("k.elf").display().to_string();
        let src = src.display().to_string();
        let mut args = vec!["cc", "-o", &out];
        for def in defines {
            args.extend(["-D", def]);
        }
        args.push(&src);
        run(&args)
    };
    let versions: [(&[&str], &str); 6] = [
        (&[], "2.9"),
        (&["DOCA_VERSION_MINOR=6"], "2.6"),
        (&["DOCA_VERSION_MAJOR=2", "DOCA_VERSION_MINOR=7"], "2.7"),
        (&["DOCA_VERSION_MINOR=8"], "2.7"),
        (&["DOCA_VERSION_MINOR=10"], "2.9"),
        (&["DOCA_VERSION_MAJOR=3", "DOCA_VERSION_MINOR=0"], "2.9"),
    ];
    for (defines, api) in versions {
        for (form, body) in forms {
            let o = build(defines, body);
            let err = stderr(&o);
            if form == api {
                assert!(
                    o.status.success() && err.is_empty(),
                    "{defines:?}, {form} form: {err}"
                );
            } else {
                assert_eq!(o.status.code(), Some(1), "{defines:?}, {form} form: {err}");
            }
        }
    }
    let o = build(&["DOCA_VERSION_MINOR=5"], "");
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("DOCA_VERSION_MAJOR"), "{}", stderr(&o));
    // 2.7's shared receive queue calls are refused by name, not left to the linker.
    let o = build(
        &["DOCA_VERSION_MINOR=7"],
        "doca_dpa_dev_rdma_srq_post_receive(0, 1);",
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("not supported"), "{}", stderr(&o));
    let _ = std::fs::remove_dir_all(&d);
}

/// The device headers define the public FlexIO names and no others of theirs: a program may
/// declare the PRM's constants itself (as NVIDIA's headers leave it to), which a macro of the
/// same name in ours would break (`enum { 0xd = 13 }`).
#[test]
#[cfg_attr(no_riscv_gcc, ignore = "riscv64-unknown-elf-gcc is not installed")]
fn a_program_may_declare_the_prm_constants_the_headers_do_not() {
    let d = scratch_dir("names");
    let src = d.join("own_names.c");
    std::fs::write(
        &src,
        "#include <libflexio-dev/flexio_dev.h>\n\
         #include <libflexio-dev/flexio_dev_queue_access.h>\n\
         enum { MLX5_CQE_REQ = 0, MLX5_CQE_REQ_ERR = 13, MLX5_CQE_RESP_ERR = 14 };\n\
         enum { MLX5_SEND_WQE_BB = 64, MLX5_WQE_SEG_SIZE = 16, MLX5_INLINE_SEG = 0x80000000 };\n\
         enum { MLX5_WQE_CTRL_CQ_UPDATE = 8 };\n\
         __dpa_rpc__ uint64_t f(uint64_t x) { return x + MLX5_CQE_REQ_ERR; }\n",
    )
    .unwrap();
    let o = run(&[
        "cc",
        "-o",
        &d.join("own_names.elf").display().to_string(),
        &src.display().to_string(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let _ = std::fs::remove_dir_all(&d);
}

/// `mlx5-dpa cc -o OUT --package-into HOST --app APP [--cpu CPU] SRC`.
fn package(out: &std::path::Path, host: &str, app: &str, cpu: Option<&str>, src: &str) -> Output {
    let out = out.display().to_string();
    let mut args = vec!["cc", "-o", &out, "--package-into", host, "--app", app];
    if let Some(cpu) = cpu {
        args.extend(["--cpu", cpu]);
    }
    args.push(src);
    run(&args)
}

/// `--cpu bf3,cx8` builds one copy per hardware model, each with its `__NV_DPA`, packaged as
/// `.dpa_bin_NAME@nv-dpa-<model>`: the two copies differ where the source asks for the model
/// and `elf info` lists them with their models; the committed `tests/data/dpa/host_models.elf`
/// is what `make_models_elf.sh` makes. A repeated model, an unknown one, or several models
/// without a host program are refused.
#[test]
#[cfg_attr(no_riscv_gcc, ignore = "riscv64-unknown-elf-gcc is not installed")]
fn cc_builds_a_copy_per_hardware_model() {
    let d = scratch_dir("cpu");
    let out = d.join("host");
    let src = repo("tests/data/dpa/which_model.c");
    let o = package(&out, "/bin/true", "which", Some("bf3,nv-dpa-cx8"), &src);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run(&["elf", "info", &out.display().to_string(), "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let j: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let apps = j["apps"].as_array().unwrap();
    let models: Vec<(&str, &str, bool)> = apps
        .iter()
        .map(|a| {
            (
                a["name"].as_str().unwrap(),
                a["hw_model"].as_str().unwrap(),
                a["hw_model_labelled"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        models,
        [("which", "nv-dpa-bf3", true), ("which", "nv-dpa-cx8", true)]
    );
    let apps = mlx5_dpa::dpa::app::App::all_in_host_elf(&std::fs::read(&out).unwrap()).unwrap();
    assert_ne!(apps[0].image(), apps[1].image(), "the copies are one build");
    let text = stdout(&run(&["elf", "info", &out.display().to_string()]));
    assert!(
        text.contains("app which@nv-dpa-bf3:") && text.contains("app which@nv-dpa-cx8:"),
        "{text}"
    );

    // The committed fixture is the script's output (same compiler, same tool).
    let fixture_dir = d.join("fixture");
    std::fs::create_dir_all(&fixture_dir).unwrap();
    let script = repo("tests/data/dpa/make_models_elf.sh");
    let copy = fixture_dir.join("make_models_elf.sh");
    std::fs::copy(&script, &copy).unwrap();
    std::fs::copy(&src, fixture_dir.join("which_model.c")).unwrap();
    let s = std::process::Command::new("sh")
        .arg(&copy)
        .env("MLX5_DPA", env!("CARGO_BIN_EXE_mlx5-dpa"))
        .output()
        .unwrap();
    if s.status.success() {
        // The device copies, not the host program around them (the host's gcc may differ).
        let copies = |path: &std::path::Path| {
            let bytes = std::fs::read(path).unwrap();
            mlx5_dpa::dpa::app::App::all_in_host_elf(&bytes)
                .unwrap()
                .into_iter()
                .map(|a| (a.name().to_string(), a.hw_model_label(), a.image().to_vec()))
                .collect::<Vec<_>>()
        };
        assert!(
            copies(&fixture_dir.join("host_models.elf"))
                == copies(std::path::Path::new(&repo(
                    "tests/data/dpa/host_models.elf"
                ))),
            "tests/data/dpa/host_models.elf is stale: run make_models_elf.sh"
        );
    } else {
        eprintln!(
            "make_models_elf.sh not checked: {}",
            String::from_utf8_lossy(&s.stderr)
        );
    }

    // The RPC sample's device side built for two models: the demo takes the BlueField-3 copy
    // from the host program and runs it.
    let rpc_host = d.join("rpc_host");
    let rpc_src = repo("fw-blobs/src/rpc_calc.c");
    let o = package(&rpc_host, "/bin/true", "rpc", Some("cx8,bf3"), &rpc_src);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run(&[
        "--sim",
        "demo",
        "rpc",
        "7",
        "8",
        "--app-elf",
        &rpc_host.display().to_string(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("Result: 15"), "{}", stdout(&o));

    for (cpu, want) in [
        ("bf3,bf3", "names nv-dpa-bf3 twice"),
        ("cx7", "unknown DPA hardware model \"cx7\""),
    ] {
        let o = package(&out, "/bin/true", "which", Some(cpu), &src);
        assert_ne!(o.status.code(), Some(0));
        assert!(stderr(&o).contains(want), "{cpu}: {}", stderr(&o));
    }
    let o = run(&[
        "cc",
        "-o",
        &d.join("x.elf").display().to_string(),
        "--cpu",
        "bf3,cx8",
        &src,
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("--package-into"), "{}", stderr(&o));
    let _ = std::fs::remove_dir_all(&d);
}

/// `cc --embed HOST --app NAME --sign-key KEY --cert ...`: the signature goes in
/// `.dpa_sig_NAME`, named by `.dpa_sig_name_NAME`, and verifies; without packaging it is
/// OUT.sig. A bad key fails before anything is built.
#[test]
#[cfg_attr(
    any(no_riscv_gcc, no_objcopy),
    ignore = "riscv64-unknown-elf-gcc or objcopy is not installed"
)]
fn cc_signs_what_it_builds() {
    let d = scratch_dir("sign");
    let auth = |f: &str| repo(&format!("tests/data/auth/{f}"));
    let src = repo("fw-blobs/src/rpc_calc.c");
    let host = d.join("host_signed").display().to_string();
    let o = run(&[
        "cc",
        "-o",
        &host,
        "--embed",
        "/bin/true",
        "--app",
        "calc",
        "--sign-key",
        &auth("leaf.key.pem"),
        "--cert",
        &auth("root.der"),
        "--cert",
        &auth("leaf.der"),
        &src,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run(&["verify", &host, "--app", "calc", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(v["valid"], true, "{v}");
    assert_eq!(v["signature_from"], ".dpa_sig_calc", "{v}");

    let elf = d.join("calc.elf").display().to_string();
    let o = run(&[
        "cc",
        "-o",
        &elf,
        "--sign-key",
        &auth("leaf.key.pem"),
        "--cert",
        &auth("leaf.der"),
        &src,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run(&["verify", &elf, "--ca", &auth("root.der")]);
    assert!(o.status.success(), "{}", stdout(&o));

    let o = run(&[
        "cc",
        "-o",
        &elf,
        "--sign-key",
        &auth("leaf.der"),
        "--cert",
        &auth("leaf.der"),
        &src,
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("signing:"), "{}", stderr(&o));
}
