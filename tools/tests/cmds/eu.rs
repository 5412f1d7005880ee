//! `mlx5-dpa eu` on the model: partitions and groups created, read back, listed and
//! destroyed in one `eu batch` run; bad input refused with a sentence.

use crate::common;
use common::*;

fn batch(ops: &str, profile: &str) -> std::process::Output {
    // One file per call: the tests run at once, in one process.
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let file = scratch("eu", &format!("ops{n}.txt"), ops.as_bytes());
    run(&[&format!("--sim={profile}"), "eu", "batch", &file])
}

#[test]
fn partitions_and_groups_are_made_read_back_and_destroyed() {
    let o = batch(
        "# a partition for functions 2 and 3, a group in it, one outside\n\
         partition create --eus 16-31 --vhca 2,3 --max-groups 4\n\
         group create rx --eus 16-19 --partition 1\n\
         group create any --eus 0,1,5\n\
         show --json\n\
         group destroy 1\n\
         group show 2\n",
        "bf3",
    );
    let text = stdout(&o);
    assert!(o.status.success(), "{text}{}", stderr(&o));
    assert!(
        text.contains("created partition 1: EUs 16-31 (16), functions 2,3, at most 4 groups"),
        "{text}"
    );
    assert!(
        text.contains("created group 1 \"rx\": EUs 16-19 (4), in partition 1"),
        "{text}"
    );
    assert!(
        text.contains("created group 2 \"any\": EUs 0-1,5 (3)"),
        "{text}"
    );
    let json_line = text
        .lines()
        .find(|l| l.starts_with('{'))
        .expect("show --json");
    let v: serde_json::Value = serde_json::from_str(json_line).expect("json");
    assert_eq!(v["eus"], 256);
    assert_eq!(v["partitions"][0]["vhca_ids"], serde_json::json!([2, 3]));
    assert_eq!(v["groups"].as_array().map(Vec::len), Some(2));
    assert_eq!(v["groups"][0]["partition"], 1);
    assert!(text.contains("destroyed group 1"), "{text}");
    assert!(text.contains("group 2 \"any\""), "{text}");
}

#[test]
fn bad_operations_name_their_line_and_why() {
    let o = batch("show\ngroup create g --eus 9999\n", "bf3");
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("line 2"), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("EU 9999 out of range"),
        "{}",
        stderr(&o)
    );
    let o = batch("group create g --eus 3-1\n", "bf3");
    assert!(stderr(&o).contains("numbers and ranges"), "{}", stderr(&o));
    let o = batch("group destroy 7\n", "bf3");
    assert_eq!(o.status.code(), Some(1), "no such group: {}", stdout(&o));
    let o = batch("batch other.txt\n", "bf3");
    assert!(
        stderr(&o).contains("a batch runs no batch"),
        "{}",
        stderr(&o)
    );
    // A device without a DPA.
    let o = run(&["--sim=cx7", "eu", "show"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("DPA"), "{}", stderr(&o));
}

/// Regression (issue 30, defect 5): `eu batch` read its file whole, without the tool's bound,
/// so `eu batch /dev/zero` grew until the OOM killer came; standard input is bounded too.
#[test]
fn a_batch_file_is_bounded() {
    let o = run(&["--sim=bf3", "eu", "batch", "/dev/zero"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("/dev/zero is not a regular file"),
        "{}",
        stderr(&o)
    );
    // An endless pipe stops at the limit.
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_mlx5-dpa"))
        .args(["--sim=bf3", "eu", "batch", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut stdin = child.stdin.take().expect("stdin");
    let feeder = std::thread::spawn(move || {
        use std::io::Write;
        let block = vec![b'#'; 1 << 16];
        // Stops when the tool closes the pipe; 64 MiB at most, four times the limit.
        for _ in 0..1024 {
            if stdin.write_all(&block).is_err() {
                break;
            }
        }
    });
    let o = child.wait_with_output().expect("wait");
    feeder.join().expect("feeder");
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("standard input has more than 16777216 bytes"),
        "{}",
        stderr(&o)
    );
}

/// Regression: a partition made without --max-groups was shown "at most 0 groups", and then
/// took a group; 0 sets no limit, and says so.
#[test]
fn a_partition_without_a_group_limit_says_so_and_takes_groups() {
    let o = batch(
        "partition create --eus 8-11 --vhca 3\n\
         group create g --eus 8 --partition 1\n\
         group create h --eus 9 --partition 1\n",
        "bf3",
    );
    let text = stdout(&o);
    assert!(o.status.success(), "{text}{}", stderr(&o));
    assert!(text.contains("functions 3, groups without limit"), "{text}");
    assert!(text.contains("created group 2 \"h\""), "{text}");
}
