//! The packet-processor sample end to end on the model: DPA-resident RQ / SQ / CQs driven by a
//! DPA event handler through an outbox, frames of several kinds, counters, and fault injection
//! over every firmware command of the set-up (each failure names its step; nothing leaks).

use crate::dpa_common::bf3;

use crate::flexio_packet_processor as pp;

use std::time::Duration;

use mlx5_dpa::dpa::DpaError;
use mlx5_dpa::mlx5::cmd::OuterMatch;

type R = Result<(), Box<dyn std::error::Error>>;

const T: Duration = Duration::from_secs(10);

/// A frame of `len` bytes to `dst` from the peer, IPv4 / UDP when `udp`, else ethertype 0x88b5;
/// its payload holds digits and other bytes.
fn frame(dst: [u8; 6], len: usize, udp: bool) -> Vec<u8> {
    let mut f = pp::sample_frame(dst);
    if !udp {
        f[12..14].copy_from_slice(&0x88b5u16.to_be_bytes());
    }
    f.truncate(42);
    while f.len() < len {
        f.push(b"0123456789=abz:"[f.len() % 15]);
    }
    f
}

#[test]
fn the_demo_rewrites_the_sample_frame() -> R {
    let (d, ctx) = bf3();
    let mut out = Vec::new();
    let report = pp::run(&ctx, &mut out)?;
    let text = String::from_utf8(out)?;
    // The answer equals the host's own application of the rule, which differs from the input.
    assert_eq!(report.received, pp::expected_answer(&report.sent));
    assert_ne!(report.received, report.sent);
    assert_eq!(report.sent.len(), 65);
    assert_eq!(&report.sent[6..12], &pp::PEER_MAC);
    assert_eq!(&report.received[0..6], &pp::PEER_MAC);
    assert_eq!(&report.received[42..], b"===============bcdefghi");
    assert_eq!(
        (
            report.stats.rx_packets,
            report.stats.tx_packets,
            report.stats.rewritten
        ),
        (1, 1, 1)
    );
    assert!(report.stats.ready);
    assert!(text.contains("received 65 bytes from the DPA"), "{text}");
    drop(ctx);
    d.stop_engine();
    assert!(d.inventory().is_empty(), "left: {}", d.inventory());
    Ok(())
}

#[test]
fn frames_of_every_kind_and_size_come_back_rewritten() -> R {
    let (d, ctx) = bf3();
    {
        // Take every frame to the port's MAC (not only UDP), so non-IP frames reach the DPA.
        let probe = pp::PacketProcessor::setup(&ctx, &pp::Options::default())?;
        let mac = probe.port_mac;
        drop(probe);
        let opts = pp::Options {
            flow: Some(OuterMatch {
                dmac: Some(mac),
                ..OuterMatch::default()
            }),
            log_depth: 3,
            ..pp::Options::default()
        };
        let p = pp::PacketProcessor::setup(&ctx, &opts)?;
        p.wait_ready(T)?;
        let mut host = pp::HostPort::new(&ctx, pp::PEER_MAC)?;
        // More frames than the RQ and SQ hold (8 each), so both rings wrap.
        let mut n = 0u64;
        let mut rewritten = 0u64;
        for i in 0..24usize {
            let udp = i % 3 != 0;
            let len = 42 + (i * 97) % 1400;
            let f = frame(mac, len, udp);
            host.send(&f)?;
            let got = host.recv(T)?;
            assert_eq!(
                got,
                pp::expected_answer(&f),
                "frame {i} ({len} bytes, udp {udp})"
            );
            n += 1;
            rewritten += u64::from(udp);
        }
        let s = p.stats()?;
        assert_eq!((s.rx_packets, s.tx_packets), (n, n));
        assert_eq!(s.rewritten, rewritten);
        assert_eq!((s.rx_dropped, s.tx_dropped, s.sq_dead), (0, 0, false));
        // Frames longer than a send buffer (2 KiB here) are dropped and counted.
        let big = frame(mac, 2100, true);
        host.send(&big)?;
        let deadline = std::time::Instant::now() + T;
        while p.stats()?.rx_dropped == 0 {
            assert!(
                std::time::Instant::now() < deadline,
                "the long frame was not counted"
            );
            std::thread::sleep(Duration::from_millis(2));
        }
        assert!(
            host.recv(Duration::from_millis(200)).is_err(),
            "no answer to a dropped frame"
        );
        assert_eq!(
            p.process().err_status()?.status,
            mlx5_dpa::dpa::ProcessStatus::Ok
        );
    }
    drop(ctx);
    d.stop_engine();
    assert!(d.inventory().is_empty(), "left: {}", d.inventory());
    Ok(())
}

#[test]
fn bad_options_are_refused_before_the_device_is_touched() {
    let (d, ctx) = bf3();
    let before = d.stats().fw.commands;
    for opts in [
        pp::Options {
            log_buf_size: 5,
            ..pp::Options::default()
        },
        pp::Options {
            log_depth: 0,
            ..pp::Options::default()
        },
    ] {
        let e = pp::PacketProcessor::setup(&ctx, &opts).expect_err("bad options");
        assert_eq!(e.step(), Some("checking options"));
        assert!(matches!(e.root(), DpaError::BadArgs(_)), "{e}");
    }
    assert_eq!(d.stats().fw.commands, before);
    d.stop_engine();
}

/// Regression: the set-up runs its handler once; dropping the result while that activation was
/// still on an EU leaked the thread and everything under it until the context closed (2 to 17
/// object sets per 200 set-ups). Each drop now leaves an empty inventory, context still open.
#[test]
fn setup_dropped_at_once_leaves_nothing_200_times() -> R {
    let (d, ctx) = bf3();
    for i in 0..200 {
        let p = pp::PacketProcessor::setup(&ctx, &pp::Options::default())?;
        drop(p);
        assert!(
            d.inventory().is_empty(),
            "set-up {i} left: {}",
            d.inventory()
        );
    }
    drop(ctx);
    d.stop_engine();
    Ok(())
}

// Fault injection over every command of the set-up and the teardown: tests/dpa/fault_sweep.rs
// (`packet_processor_flow`).

/// FlexIO's own sample protocol (`host2dev_packet_processor_data`) with fw-blobs' build of its
/// device side: frames from the sample's source MAC come back with the MACs swapped, 65-byte
/// ones with "<n> Event demo***" (n = the low hex digit of the send index, 1 for the first), any
/// other length untouched otherwise; each is announced by "Process packet: <i>" on the message
/// stream; frames from another source MAC are not the sample's.
///
/// Run under both coherency models: the device code writes back what the NIC must see (the
/// WQEs, the receive doorbell record) and the runtime's message stream does too.
#[test]
fn the_samples_own_protocol_answers_every_frame_and_prints_each_index() -> R {
    for coherency in [
        mlx5_sim::DpaCoherency::Hardware,
        mlx5_sim::DpaCoherency::Coherent,
    ] {
        sample_protocol_round_trips(coherency)?;
    }
    Ok(())
}

fn sample_protocol_round_trips(coherency: mlx5_sim::DpaCoherency) -> R {
    let (d, ctx) = bf3();
    d.set_dpa_coherency(coherency);
    {
        let port_mac =
            mlx5_dpa::devx::exec(ctx.as_ref(), &mlx5_dpa::mlx5::cmd::QueryNicVportContext)?.mac;
        let mut s = pp::Sample::setup(&ctx, pp::PP_SAMPLE_ELF)?;
        let mut host = pp::HostPort::new(&ctx, pp::PEER_MAC)?;
        // 20 frames: 65-byte ones (rewritten) and others (only the MACs swapped).
        for i in 1..=20u64 {
            let f = if i % 3 == 0 {
                frame(port_mac, 100, true)
            } else {
                pp::sample_frame(port_mac)
            };
            host.send(&f)?;
            let got = host.recv(T)?;
            assert_eq!(got, pp::sample_answer(&f, i), "frame {i}");
        }
        let msgs = s.messages(T)?;
        let want: Vec<String> = (0..20).map(|i| format!("Process packet: {i}\n")).collect();
        assert_eq!(msgs, want);
        // A frame from another source does not reach the DPA: no answer, no message.
        let mut other = pp::sample_frame(port_mac);
        other[6..12].copy_from_slice(&[0x02, 0, 0, 0, 0, 0x99]);
        host.send(&other)?;
        assert!(host.recv(Duration::from_millis(200)).is_err());
        assert!(s.messages(Duration::from_millis(100))?.is_empty());
        drop(host);
        drop(s);
    }
    drop(ctx);
    d.stop_engine();
    assert!(d.inventory().is_empty(), "left: {}", d.inventory());
    Ok(())
}

/// Sixteen DPA threads (sixteen processes, one flow rule each) with 256 frames in flight, as
/// the throughput bench runs them: every frame is answered, by its own thread, none dropped.
/// With more activations in flight than cores, workers finish activations while the engine
/// holds the device (their pass is then left to the engine) and sleep and wake between
/// them; a result or a wake-up lost there stalls the window (the host port fails after 30 s
/// without an answer).
#[test]
fn sixteen_threads_answer_every_frame_with_256_in_flight() -> R {
    const THREADS: u16 = 16;
    let (d, ctx) = bf3();
    {
        let mac = d.port_address().mac;
        let rigs = (0..THREADS)
            .map(|k| {
                let depth = crate::bench_host::ring_log_depth(256, usize::from(THREADS));
                let p =
                    pp::PacketProcessor::setup(&ctx, &pp::Options::udp_flow(mac, 5001 + k, depth))?;
                p.wait_ready(T)?;
                Ok(p)
            })
            .collect::<Result<Vec<_>, DpaError>>()?;
        let frames = (0..THREADS)
            .map(|k| pp::flow_frame(mac, 5001 + k))
            .collect();
        let mut host = crate::bench_host::Host::new(&ctx, frames, pp::PEER_MAC);
        // Returns once every answer came (each checked for its length and its flow).
        host.run(8_000, 256);
        assert_eq!(host.sent().iter().sum::<u64>(), 8_000);
        for (k, r) in rigs.iter().enumerate() {
            let s = r.stats()?;
            assert!(host.sent()[k] > 0, "thread {k} was sent nothing");
            assert_eq!(s.rx_packets, host.sent()[k], "thread {k}");
            assert_eq!(s.rx_dropped + s.tx_dropped, 0, "thread {k}");
        }
        drop(host);
        drop(rigs);
    }
    drop(ctx);
    d.stop_engine();
    assert!(d.inventory().is_empty(), "left: {}", d.inventory());
    Ok(())
}

/// The host side refuses a device build without the sample's handler: a typed error naming
/// the missing symbol, and nothing left behind.
#[test]
fn a_build_without_the_samples_handler_is_refused() -> R {
    let (d, ctx) = bf3();
    let e = pp::Sample::setup(&ctx, include_bytes!("../../fw-blobs/bin/rpc_calc.elf")).unwrap_err();
    assert!(
        matches!(&e, DpaError::UnknownSymbol(s) if s == "flexio_pp_dev"),
        "{e}"
    );
    drop(ctx);
    d.stop_engine();
    assert!(d.inventory().is_empty(), "left: {}", d.inventory());
    Ok(())
}
