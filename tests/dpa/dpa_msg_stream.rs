//! Message streams (FlexIO `flexio_msg_stream_create` / `destroy`) on the device model: text
//! a DPA program prints with `flexio_dev_print` / `flexio_dev_msg` (the self-test program's
//! `st_print` and `st_msg`) reaches the host exactly, filtered by level, per stream, in
//! order past the ring depth, to memory, a file or a writer; destroy removes the stream from
//! the device and leaves nothing behind.

use crate::dpa_common::bf3;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mlx5_dpa::dpa::msg_stream::{
    MsgLevel, MsgOutput, MsgStream, MsgStreamAttr, SyncMode, BROADCAST_STREAM,
};
use mlx5_dpa::dpa::outbox::Outbox;
use mlx5_dpa::dpa::thread::{EventHandler, EventHandlerAttr, ThreadState};
use mlx5_dpa::dpa::{DpaError, Process, ProcessAttr};

type R = Result<(), Box<dyn std::error::Error>>;

const SELFTEST: &[u8] = include_bytes!("../../fw-blobs/bin/selftest.elf");
const T: Duration = Duration::from_secs(10);
/// `MLX5_DPA_MSG_ERR_NO_STREAM` (flexio_dev.h).
const ERR_NO_STREAM: i64 = -1;

/// A thread that runs `entry` with the process's outbox as its default (a stream's send
/// queue is rung through it).
fn printer(p: &Process, outbox: &Outbox, entry: &str) -> Result<EventHandler, DpaError> {
    p.event_handler(&EventHandlerAttr {
        default_outbox_id: outbox.id(),
        ..EventHandlerAttr::new(entry, 0)
    })
}

/// Runs `h` once with `arg` and returns what the entry returned, sign-extended.
fn run(h: &EventHandler, arg: u64) -> Result<i64, Box<dyn std::error::Error>> {
    h.run(arg)?;
    let start = Instant::now();
    loop {
        let info = h.info()?;
        match info.state {
            ThreadState::Finished | ThreadState::Idle => return Ok(info.return_value as i64),
            ThreadState::Error => return Err("the DPA thread failed".into()),
            _ => {}
        }
        if start.elapsed() > T {
            return Err("the DPA thread did not finish".into());
        }
        std::thread::sleep(Duration::from_micros(100));
    }
}

/// `st_msg`'s argument: stream in bits 7:0, level in bits 15:8.
fn msg_arg(stream: u32, level: MsgLevel) -> u64 {
    u64::from(stream) | u64::from(level.as_raw()) << 8
}

/// What `st_msg` formats: "st_msg stream %u level %u\n".
fn st_msg_text(stream: u32, level: MsgLevel) -> String {
    format!("st_msg stream {stream} level {}\n", level.as_raw())
}

/// Polls (the stream may also have a reader thread) until `n` messages were collected.
fn collect(s: &mut MsgStream, n: usize) -> Result<Vec<String>, Box<dyn std::error::Error>> {
    let start = Instant::now();
    let mut got = Vec::new();
    while got.len() < n {
        s.poll()?;
        got.extend(s.take_messages());
        if start.elapsed() > T {
            return Err(format!("{} of {n} messages arrived: {got:?}", got.len()).into());
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    Ok(got)
}

fn batch(stream_id: u32, level: MsgLevel) -> MsgStreamAttr {
    MsgStreamAttr {
        sync_mode: SyncMode::Batch,
        ..MsgStreamAttr::new(stream_id, level, MsgOutput::Collect)
    }
}

#[test]
fn print_arrives_with_the_exact_text() -> R {
    let (d, ctx) = bf3();
    let p = Process::create(&ctx, SELFTEST, &ProcessAttr::default())?;
    let outbox = p.outbox(p.uar())?;
    let mut s = MsgStream::create(&p, &batch(0, MsgLevel::Info))?;
    let h = printer(&p, &outbox, "st_print")?;
    let xs = [0u64, 42, u64::MAX];
    for x in xs {
        let want = format!("selftest {x}\n");
        // flexio_dev_print returns the bytes posted.
        assert_eq!(run(&h, x)?, want.len() as i64);
    }
    // Batch: nothing is delivered before the host polls.
    assert!(s.take_messages().is_empty());
    let got = collect(&mut s, xs.len())?;
    let want: Vec<String> = xs.iter().map(|x| format!("selftest {x}\n")).collect();
    assert_eq!(got, want);
    assert_eq!(s.delivered(), 3);
    let st = s.device_stats(&p)?;
    assert_eq!((st.msgs_posted, st.msgs_dropped, st.dead), (3, 0, false));
    // Nothing more arrives.
    assert_eq!(s.flush(Duration::from_millis(100))?, 0);
    assert!(s.take_messages().is_empty());
    s.close()?;
    drop((h, outbox, p, ctx));
    d.stop_engine();
    Ok(())
}

#[test]
fn sync_mode_delivers_without_the_caller_polling() -> R {
    let (d, ctx) = bf3();
    let p = Process::create(&ctx, SELFTEST, &ProcessAttr::default())?;
    let outbox = p.outbox(p.uar())?;
    let s = MsgStream::create(
        &p,
        &MsgStreamAttr::new(0, MsgLevel::Info, MsgOutput::Collect),
    )?;
    assert_eq!(s.sync_mode(), SyncMode::Sync);
    let h = printer(&p, &outbox, "st_print")?;
    assert!(run(&h, 7)? > 0);
    let start = Instant::now();
    let mut got = Vec::new();
    while got.is_empty() && start.elapsed() < T {
        // Only the reader thread polls here.
        got.extend(s.take_messages());
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(got, ["selftest 7\n"]);
    s.close()?;
    drop((h, outbox, p, ctx));
    d.stop_engine();
    Ok(())
}

#[test]
fn level_filters_on_the_device() -> R {
    let (d, ctx) = bf3();
    let p = Process::create(&ctx, SELFTEST, &ProcessAttr::default())?;
    let outbox = p.outbox(p.uar())?;
    let mut s = MsgStream::create(&p, &batch(0, MsgLevel::Warn))?;
    let msg = printer(&p, &outbox, "st_msg")?;
    let print = printer(&p, &outbox, "st_print")?;
    // Above the stream's level, or NO_PRINT: filtered (result 0), never sent.
    for level in [MsgLevel::Info, MsgLevel::Debug, MsgLevel::NoPrint] {
        assert_eq!(run(&msg, msg_arg(0, level))?, 0, "{level:?}");
    }
    // flexio_dev_print is INFO.
    assert_eq!(run(&print, 5)?, 0);
    // At or below: delivered.
    let passing = [MsgLevel::Warn, MsgLevel::Error, MsgLevel::AlwaysPrint];
    for level in passing {
        assert_eq!(
            run(&msg, msg_arg(0, level))?,
            st_msg_text(0, level).len() as i64
        );
    }
    let got = collect(&mut s, passing.len())?;
    let want: Vec<String> = passing.iter().map(|&l| st_msg_text(0, l)).collect();
    assert_eq!(got, want);
    assert_eq!(s.flush(Duration::from_millis(100))?, 0);
    assert!(s.take_messages().is_empty());
    let st = s.device_stats(&p)?;
    assert_eq!((st.msgs_posted, st.msgs_dropped), (3, 0));
    drop((s, msg, print, outbox, p, ctx));
    d.stop_engine();
    Ok(())
}

#[test]
fn two_streams_get_their_own_messages() -> R {
    let (d, ctx) = bf3();
    let p = Process::create(&ctx, SELFTEST, &ProcessAttr::default())?;
    let outbox = p.outbox(p.uar())?;
    let mut s0 = MsgStream::create(&p, &batch(0, MsgLevel::Debug))?;
    let mut s3 = MsgStream::create(&p, &batch(200, MsgLevel::Error))?;
    assert_ne!(s0.qpns(), s3.qpns());
    assert_ne!(s0.ctx_daddr(), s3.ctx_daddr());
    let msg = printer(&p, &outbox, "st_msg")?;

    assert!(run(&msg, msg_arg(200, MsgLevel::Error))? > 0);
    assert!(run(&msg, msg_arg(0, MsgLevel::Info))? > 0);
    // Stream 200 filters INFO (ids go up to 254, FlexIO's FLEXIO_MSG_DEV_MAX_STREAMS_AMOUNT
    // of 255; before: 4); stream 1 does not exist.
    assert_eq!(run(&msg, msg_arg(200, MsgLevel::Info))?, 0);
    assert_eq!(run(&msg, msg_arg(1, MsgLevel::Error))?, ERR_NO_STREAM);
    // Broadcast reaches both.
    assert!(run(&msg, msg_arg(BROADCAST_STREAM, MsgLevel::AlwaysPrint))? > 0);

    let b = st_msg_text(BROADCAST_STREAM, MsgLevel::AlwaysPrint);
    assert_eq!(
        collect(&mut s0, 2)?,
        [st_msg_text(0, MsgLevel::Info), b.clone()]
    );
    assert_eq!(collect(&mut s3, 2)?, [st_msg_text(200, MsgLevel::Error), b]);
    s0.flush(Duration::from_millis(50))?;
    s3.flush(Duration::from_millis(50))?;
    assert!(s0.take_messages().is_empty() && s3.take_messages().is_empty());
    assert_eq!(s0.device_stats(&p)?.msgs_posted, 2);
    assert_eq!(s3.device_stats(&p)?.msgs_posted, 2);
    s3.close()?;
    s0.close()?;
    drop((msg, outbox, p, ctx));
    d.stop_engine();
    Ok(())
}

#[test]
fn many_messages_recycle_slots_in_order() -> R {
    let (d, ctx) = bf3();
    let p = Process::create(&ctx, SELFTEST, &ProcessAttr::default())?;
    let outbox = p.outbox(p.uar())?;
    // 4 slots on the device, 8 receives on the host: 150 messages recycle both many times.
    let mut s = MsgStream::create(
        &p,
        &MsgStreamAttr {
            log_depth: 2,
            slot_size: 64,
            ..MsgStreamAttr::new(0, MsgLevel::Info, MsgOutput::Collect)
        },
    )?;
    let h = printer(&p, &outbox, "st_print")?;
    let n = 150u64;
    for i in 0..n {
        let r = run(&h, i * 1_000_003)?;
        assert_eq!(
            r,
            format!("selftest {}\n", i * 1_000_003).len() as i64,
            "message {i}"
        );
    }
    let got = collect(&mut s, n as usize)?;
    let want: Vec<String> = (0..n)
        .map(|i| format!("selftest {}\n", i * 1_000_003))
        .collect();
    assert_eq!(got, want);
    let st = s.device_stats(&p)?;
    assert_eq!((st.msgs_posted, st.msgs_dropped, st.dead), (n, 0, false));
    assert_eq!(st.sq_pi, n as u32);
    assert_eq!(s.delivered(), n);
    s.close()?;
    drop((h, outbox, p, ctx));
    d.stop_engine();
    Ok(())
}

#[test]
fn output_to_a_file_and_to_a_writer() -> R {
    let (d, ctx) = bf3();
    let p = Process::create(&ctx, SELFTEST, &ProcessAttr::default())?;
    let outbox = p.outbox(p.uar())?;
    let path = std::env::temp_dir().join(format!("mlx5-dpa-msg-stream-{}.log", std::process::id()));
    let mut file = MsgStream::create(
        &p,
        &MsgStreamAttr {
            sync_mode: SyncMode::Batch,
            ..MsgStreamAttr::new(0, MsgLevel::Info, MsgOutput::File(path.clone()))
        },
    )?;
    let sink = Arc::new(Mutex::new(Vec::<u8>::new()));
    let writer = MsgStream::create(
        &p,
        &MsgStreamAttr::new(2, MsgLevel::Debug, MsgOutput::Writer(sink.clone())),
    )?;
    let print = printer(&p, &outbox, "st_print")?;
    let msg = printer(&p, &outbox, "st_msg")?;
    for x in 1..=3 {
        assert!(run(&print, x)? > 0);
    }
    assert!(run(&msg, msg_arg(2, MsgLevel::Debug))? > 0);
    // Every message is posted: the file stream has 3 waiting, the writer's reader 1.
    let mut n = 0;
    let start = Instant::now();
    while n < 3 && start.elapsed() < T {
        n += file.flush(Duration::from_millis(200))?;
    }
    assert_eq!(n, 3);
    file.close()?;
    assert_eq!(
        std::fs::read_to_string(&path)?,
        "selftest 1\nselftest 2\nselftest 3\n"
    );
    std::fs::remove_file(&path)?;
    let want = st_msg_text(2, MsgLevel::Debug);
    let start = Instant::now();
    while sink.lock().map_or(0, |v| v.len()) < want.len() && start.elapsed() < T {
        std::thread::sleep(Duration::from_millis(1));
    }
    writer.close()?;
    assert_eq!(
        String::from_utf8(sink.lock().map_err(|_| "poisoned")?.clone())?,
        want
    );
    drop((print, msg, outbox, p, ctx));
    d.stop_engine();
    Ok(())
}

#[test]
fn bad_attributes_are_refused_and_ids_are_exclusive() -> R {
    let (d, ctx) = bf3();
    let p = Process::create(&ctx, SELFTEST, &ProcessAttr::default())?;
    let bad = [
        // 255 is the broadcast id, not a stream.
        batch(255, MsgLevel::Info),
        MsgStreamAttr {
            slot_size: 8,
            ..batch(0, MsgLevel::Info)
        },
        MsgStreamAttr {
            log_depth: 0,
            ..batch(0, MsgLevel::Info)
        },
        MsgStreamAttr {
            output: MsgOutput::File("/nonexistent-dir/x/y.log".into()),
            ..batch(0, MsgLevel::Info)
        },
    ];
    for a in &bad {
        let e = MsgStream::create(&p, a).unwrap_err();
        assert!(matches!(e.root(), DpaError::BadArgs(_)), "{a:?}: {e}");
    }
    let first = MsgStream::create(&p, &batch(1, MsgLevel::Info))?;
    let e = MsgStream::create(&p, &batch(1, MsgLevel::Info)).unwrap_err();
    assert!(matches!(e, DpaError::BadArgs(_)), "{e}");
    // Another process may use the same id.
    let q = Process::create(&ctx, SELFTEST, &ProcessAttr::default())?;
    let other = MsgStream::create(&q, &batch(1, MsgLevel::Info))?;
    assert!(matches!(other.device_stats(&p), Err(DpaError::BadArgs(_))));
    drop(first);
    // The id is free again once its stream is gone.
    let again = MsgStream::create(&p, &batch(1, MsgLevel::Info))?;
    drop((again, other, q, p, ctx));
    d.stop_engine();
    assert!(d.inventory().is_empty(), "{}", d.inventory());
    Ok(())
}

#[test]
fn destroy_removes_the_stream_and_leaves_nothing() -> R {
    let (d, ctx) = bf3();
    {
        let p = Process::create(&ctx, SELFTEST, &ProcessAttr::default())?;
        let outbox = p.outbox(p.uar())?;
        let s0 = MsgStream::create(
            &p,
            &MsgStreamAttr::new(0, MsgLevel::Info, MsgOutput::Collect),
        )?;
        let mut s1 = MsgStream::create(&p, &batch(1, MsgLevel::Info))?;
        let print = printer(&p, &outbox, "st_print")?;
        let msg = printer(&p, &outbox, "st_msg")?;
        assert!(run(&print, 1)? > 0);
        assert!(run(&msg, msg_arg(1, MsgLevel::Info))? > 0);
        // The process goes first: the streams keep it alive.
        drop(p);
        drop(s0);
        // Stream 0 is gone on the device too; stream 1 still works.
        assert_eq!(run(&print, 2)?, ERR_NO_STREAM);
        assert!(run(&msg, msg_arg(1, MsgLevel::Info))? > 0);
        assert_eq!(
            collect(&mut s1, 2)?,
            [
                st_msg_text(1, MsgLevel::Info),
                st_msg_text(1, MsgLevel::Info)
            ]
        );
        drop(s1);
        assert_eq!(run(&msg, msg_arg(1, MsgLevel::Info))?, ERR_NO_STREAM);
        drop((print, msg, outbox));
    }
    drop(ctx);
    d.stop_engine();
    assert!(d.inventory().is_empty(), "{}", d.inventory());
    Ok(())
}

/// FlexIO's simulator prints (`flexio_dev_debug.h`) arrive on the default stream, truncated as
/// documented (the high digits dropped), and SIM_TRACEVAL names the function, the variable and
/// its value.
#[test]
fn the_simulator_debug_prints_reach_the_default_stream() -> R {
    let (d, ctx) = bf3();
    let p = Process::create(&ctx, SELFTEST, &ProcessAttr::default())?;
    let outbox = p.outbox(p.uar())?;
    let mut s = MsgStream::create(&p, &batch(0, MsgLevel::Info))?;
    let h = printer(&p, &outbox, "st_sim")?;
    assert_eq!(run(&h, 42)?, 0);
    let got = collect(&mut s, 5)?;
    assert_eq!(got[..4], ["hello", "345", "-42", "!"]);
    assert!(
        got[4].starts_with("st_sim:") && got[4].ends_with(" x = 0x2a\n"),
        "{:?}",
        got[4]
    );
    s.close()?;
    drop((h, outbox, p, ctx));
    d.stop_engine();
    Ok(())
}

/// FlexIO's tracer: the device posts binary records (`flexio_dev_trace_*`), the host prints
/// each as its format with the arguments; the stream's level filters records too.
#[test]
fn tracer_records_are_printed_with_their_formats() -> R {
    let (d, ctx) = bf3();
    let p = Process::create(&ctx, SELFTEST, &ProcessAttr::default())?;
    let outbox = p.outbox(p.uar())?;
    let formats: Arc<[String]> = vec![
        "tracer started\n".to_string(),
        "x = %lu, 2x = %#lx\n".to_string(),
        "six: %d %d %d %d %d %ld\n".to_string(),
    ]
    .into();
    let mut s = MsgStream::create(
        &p,
        &MsgStreamAttr {
            tracer_formats: Some(formats),
            ..batch(1, MsgLevel::Info)
        },
    )?;
    let h = printer(&p, &outbox, "st_trace")?;
    assert_eq!(run(&h, 21)?, 0);
    assert_eq!(
        collect(&mut s, 3)?,
        [
            "tracer started\n",
            "x = 21, 2x = 0x2a\n",
            "six: 1 2 3 4 5 -1\n"
        ]
    );
    // The DEBUG record was filtered on the device.
    assert_eq!(s.flush(Duration::from_millis(100))?, 0);
    assert_eq!(s.device_stats(&p)?.msgs_posted, 3);
    s.close()?;
    drop((h, outbox, p, ctx));
    d.stop_engine();
    Ok(())
}
