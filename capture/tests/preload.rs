//! The capture library preloaded into a program that calls DevX functions by name
//! (`capture-probe`): each call is recorded with its mailboxes, in order; without rdma-core
//! behind the library each fails with ENOSYS, recorded so. No device is needed.

use std::path::PathBuf;
use std::process::Command;

use mlx5_dpa_capture::{parse, ENV_FILE};

/// The cdylib cargo built beside this test (target/<profile>/deps or its parent).
fn library() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary");
    let deps = exe.parent().expect("deps dir").to_path_buf();
    for dir in [
        deps.clone(),
        deps.parent().expect("profile dir").to_path_buf(),
    ] {
        let p = dir.join("libmlx5_dpa_capture.so");
        if p.is_file() {
            return p;
        }
    }
    panic!("libmlx5_dpa_capture.so not found near {}", deps.display());
}

#[test]
fn a_preloaded_program_s_devx_calls_are_recorded() {
    let file = std::env::temp_dir().join(format!("capture-{}.jsonl", std::process::id()));
    let out = Command::new(env!("CARGO_BIN_EXE_capture-probe"))
        .env("LD_PRELOAD", library())
        .env(ENV_FILE, &file)
        .output()
        .expect("run the probe");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains(&format!("general_cmd: {}", libc::ENOSYS)),
        "{stdout}"
    );

    let text = std::fs::read_to_string(&file).expect("the capture");
    let _ = std::fs::remove_file(&file);
    let recs = parse(&text).expect("records");
    assert_eq!(recs.len(), 3, "{text}");
    assert_eq!(
        recs.iter().map(|r| r.call.as_str()).collect::<Vec<_>>(),
        ["general_cmd", "obj_create", "umem_reg"]
    );
    assert_eq!(recs.iter().map(|r| r.seq).collect::<Vec<_>>(), [1, 2, 3]);
    assert_eq!(
        recs[0].inbox,
        [1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0]
    );
    assert_eq!(recs[0].outbox.len(), 16);
    assert_eq!(
        (recs[0].ret, recs[0].errno),
        (i64::from(libc::ENOSYS), libc::ENOSYS)
    );
    assert_eq!(&recs[1].inbox[..2], &[4, 0], "CREATE_CQ");
    assert_eq!(
        (recs[1].ret, recs[1].obj),
        (-1, None),
        "no object without rdma-core"
    );
    assert_eq!((recs[2].size, recs[2].access), (Some(4096), Some(1)));
    assert!(
        recs.windows(2).all(|w| w[0].t_ns <= w[1].t_ns),
        "timed in order"
    );
}

#[test]
fn without_the_library_nothing_defines_the_calls() {
    let out = Command::new(env!("CARGO_BIN_EXE_capture-probe"))
        .env_remove("LD_PRELOAD")
        .output()
        .expect("run the probe");
    assert_eq!(out.status.code(), Some(2));
}
