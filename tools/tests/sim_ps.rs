//! `mlx5-dpa sim --app packet-processor --ps`: the model's DPA process table and counters at
//! the end of the run.

mod common;
use common::*;

#[test]
fn the_packet_processors_process_and_thread_are_listed() {
    let o = run(&["sim", "--app", "packet-processor", "--seconds", "1", "--ps"]);
    let text = stdout(&o);
    assert!(o.status.success(), "{text}{}", stderr(&o));
    assert!(text.contains("DPA processes: 1"), "{text}");
    let process = text
        .lines()
        .find(|l| l.trim_start().starts_with("process 0x"))
        .expect("a process line");
    assert!(
        process.contains(": ok,") && process.contains("1 thread(s)"),
        "{process}"
    );
    let thread = text
        .lines()
        .find(|l| l.trim_start().starts_with("thread 0x"))
        .expect("a thread line");
    assert!(thread.contains("affinity any"), "{thread}");
    assert!(text.contains("DPA counters: "), "{text}");
    // --ps without --app: an empty table, said so.
    let o = run(&["sim", "--seconds", "0", "--ps"]);
    assert!(stdout(&o).contains("DPA processes: 0"), "{}", stdout(&o));
}
