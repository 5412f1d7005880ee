//! End-to-end Ethernet through the model, from raw commands and hand-built WQEs: loopback,
//! a link between two model devices, pcap, events, error CQEs, overrun and steering drops.

use mlx5_dpa::mlx5::Cqn;
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mlx5_dpa::mlx5::cmd::OuterMatch;
use mlx5_dpa::mlx5::wire::wqe::{self, CtrlSegRepr};
use mlx5_dpa::mlx5::wire::{Eqe, Event};
use mlx5_sim::port::pcap::read_pcap;
use mlx5_sim::profile::Profile;
use mlx5_sim::testing::rig::{EthRig, RigConfig};
use mlx5_sim::{event_type, Device};

#[derive(Clone, Default)]
struct SharedBuf(Arc<Mutex<Vec<u8>>>);
impl Write for SharedBuf {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

const DMAC: [u8; 6] = [0x02, 0x00, 0x5e, 0x00, 0x00, 0x01];

/// A UDP/IPv4 frame of `len` bytes whose payload is derived from `seed`.
fn frame(len: usize, seed: u32) -> Vec<u8> {
    let mut f = vec![0u8; len];
    f[0..6].copy_from_slice(&DMAC);
    f[6..12].copy_from_slice(&[0x02, 0, 0, 0, 0, 0x09]);
    f[12..14].copy_from_slice(&[0x08, 0x00]);
    f[14] = 0x45;
    f[16..18].copy_from_slice(&((len - 14) as u16).to_be_bytes());
    f[22] = 64;
    f[23] = 17;
    f[26..30].copy_from_slice(&[10, 0, 0, 1]);
    f[30..34].copy_from_slice(&[10, 0, 0, 2]);
    f[34..36].copy_from_slice(&4000u16.to_be_bytes());
    f[36..38].copy_from_slice(&4791u16.to_be_bytes());
    let mut x = seed.wrapping_mul(2_654_435_761).max(1);
    for b in &mut f[42..] {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        *b = x as u8;
    }
    f
}

fn collect_rx(rig: &mut EthRig, out: &mut Vec<Vec<u8>>) -> usize {
    rig.poll_rx(usize::MAX, |r| {
        out.push(r.expect("receive completion without error").to_vec())
    })
}

#[test]
fn loopback_frames_arrive_byte_for_byte_and_pcap_has_them() {
    let dev = Device::new(Profile::bf3());
    let pcap = SharedBuf::default();
    dev.capture(pcap.clone()).unwrap();
    let ctx = dev.open_devx();
    let mut rig = EthRig::new(ctx.clone(), RigConfig::default()).unwrap();
    rig.fill_rq();
    let sizes: Vec<usize> = (0..200).map(|i| 60 + (i * 37) % 1440).collect();
    let sent: Vec<Vec<u8>> = sizes
        .iter()
        .enumerate()
        .map(|(i, &n)| frame(n, i as u32))
        .collect();
    let mut got = Vec::new();
    let mut tx_done = 0;
    for chunk in sent.chunks(32) {
        for f in chunk {
            rig.post_send(f).unwrap();
        }
        rig.ring_sq();
        dev.run_until_idle();
        let c = rig.poll_tx(usize::MAX);
        assert!(c.iter().all(|c| c.opcode == 0), "send completions: {c:?}");
        tx_done += c.len();
        collect_rx(&mut rig, &mut got);
    }
    assert_eq!(tx_done, sent.len());
    assert_eq!(got.len(), sent.len());
    for (i, (a, b)) in sent.iter().zip(&got).enumerate() {
        assert_eq!(a, b, "frame {i} differs");
    }
    let stats = dev.stats().port;
    assert_eq!(stats.tx_frames, 200);
    assert_eq!(stats.rx_delivered, 200);
    assert_eq!(
        stats.dbr_without_doorbell, 0,
        "every SQ run was rung through the UAR"
    );
    dev.stop_captures().unwrap();
    let recorded = read_pcap(&pcap.0.lock().unwrap()).unwrap();
    assert_eq!(recorded.len(), sent.len());
    for (r, s) in recorded.iter().zip(&sent) {
        assert_eq!(&r.1, s);
    }
    drop(rig);
    drop(ctx);
    assert!(dev.inventory().is_empty(), "left over: {}", dev.inventory());
}

#[test]
fn two_linked_devices_exchange_frames() {
    let a = Device::new(Profile::bf3());
    let b = Device::new(Profile::bf3());
    Device::link(&a, &b);
    let mut ra = EthRig::new(a.open_devx(), RigConfig::default()).unwrap();
    let mut rb = EthRig::new(b.open_devx(), RigConfig::default()).unwrap();
    ra.fill_rq();
    rb.fill_rq();
    let f1 = frame(128, 1);
    let f2 = frame(900, 2);
    ra.post_send(&f1).unwrap();
    ra.ring_sq();
    rb.post_send(&f2).unwrap();
    rb.ring_sq();
    a.run_until_idle();
    b.run_until_idle();
    a.run_until_idle();
    let (mut at_a, mut at_b) = (Vec::new(), Vec::new());
    collect_rx(&mut ra, &mut at_a);
    collect_rx(&mut rb, &mut at_b);
    assert_eq!(at_b, vec![f1], "A's frame reaches B, not A");
    assert_eq!(at_a, vec![f2]);
}

#[test]
fn steering_drops_frames_no_rule_matches() {
    let dev = Device::new(Profile::bf3());
    let cfg = RigConfig {
        rule: OuterMatch {
            dmac: Some(DMAC),
            udp_dport: Some(4791),
            ..Default::default()
        },
        ..Default::default()
    };
    let mut rig = EthRig::new(dev.open_devx(), cfg).unwrap();
    rig.fill_rq();
    let good = frame(100, 3);
    let mut other_mac = frame(100, 4);
    other_mac[5] = 0x77;
    let mut other_port = frame(100, 5);
    other_port[36..38].copy_from_slice(&53u16.to_be_bytes());
    for f in [&other_mac, &good, &other_port] {
        rig.post_send(f).unwrap();
    }
    rig.ring_sq();
    dev.run_until_idle();
    let mut got = Vec::new();
    collect_rx(&mut rig, &mut got);
    assert_eq!(got, vec![good]);
    assert_eq!(dev.stats().port.rx_steering_drops, 2);
}

/// Steering finds entries through a lookup built from a table's entries; adding, replacing
/// and deleting entries after frames went through must change what the next frame hits (a
/// lookup left as it was built would keep steering by the old entries).
#[test]
fn steering_follows_rules_changed_after_traffic() {
    use mlx5_dpa::devx;
    use mlx5_dpa::mlx5::cmd::{CreateFlowGroup, CreateFlowTable, SetFte};
    let dev = Device::new(Profile::bf3());
    let ctx = dev.open_devx();
    let mut rig = EthRig::new(
        ctx.clone(),
        RigConfig {
            rule: OuterMatch {
                dmac: Some(DMAC),
                ..Default::default()
            },
            ..Default::default()
        },
    )
    .unwrap();
    rig.fill_rq();
    let other = [0x02, 0x00, 0x5e, 0x00, 0x00, 0x42];
    let mut to_other = frame(100, 6);
    to_other[0..6].copy_from_slice(&other);
    let send = |rig: &mut EthRig, f: &[u8]| -> usize {
        rig.post_send(f).unwrap();
        rig.ring_sq();
        dev.run_until_idle();
        let mut got = Vec::new();
        collect_rx(rig, &mut got);
        got.len()
    };
    // A second root table (level 0, younger than the rig's, so walked after it) whose group
    // matches destination MACs, with no entry yet: its lookup is built empty by this frame.
    let (table, table_id) = devx::create(
        &ctx,
        &CreateFlowTable {
            level: 0,
            log_size: 2,
        },
    )
    .unwrap();
    let (group, group_id) = devx::create(
        &ctx,
        &CreateFlowGroup {
            table_id,
            start_flow_index: 0,
            end_flow_index: 3,
            criteria: OuterMatch {
                dmac: Some([0xff; 6]),
                ..Default::default()
            },
        },
    )
    .unwrap();
    assert_eq!(
        send(&mut rig, &to_other),
        0,
        "no rule for the other MAC yet"
    );
    // Added after that frame: the next one hits it.
    let tirn = rig.tirn;
    let fte = |index: u32, mac: [u8; 6]| SetFte {
        table_id,
        flow_index: index,
        group_id,
        value: OuterMatch {
            dmac: Some(mac),
            ..Default::default()
        },
        tirn,
        flow_counter: None,
    };
    let (entry, _) = devx::create(&ctx, &fte(1, other)).unwrap();
    assert_eq!(send(&mut rig, &to_other), 1, "the rule added after traffic");
    // Deleted: dropped again.
    entry.destroy().unwrap();
    assert_eq!(
        send(&mut rig, &to_other),
        0,
        "the rule deleted after traffic"
    );
    // Another index of the group, another MAC: the frame's MAC still misses.
    let (entry, _) = devx::create(&ctx, &fte(2, [0x02, 0, 0, 0, 0, 0x43])).unwrap();
    assert_eq!(send(&mut rig, &to_other), 0, "a rule for another MAC");
    assert_eq!(
        send(&mut rig, &frame(100, 7)),
        1,
        "the rig's own rule still hits"
    );
    assert_eq!(dev.stats().port.rx_steering_drops, 3);
    entry.destroy().unwrap();
    group.destroy().unwrap();
    table.destroy().unwrap();
}

#[test]
fn an_sq_record_moved_without_a_doorbell_waits_for_one() {
    let dev = Device::new(Profile::bf3());
    let ctx = dev.open_devx();
    let mut rig = EthRig::new(ctx.clone(), RigConfig::default()).unwrap();
    rig.fill_rq();
    rig.post_send(&frame(64, 7)).unwrap();
    rig.update_sq_record();
    dev.run_until_idle();
    dev.run_until_idle();
    // Hardware reads the record when rung: nothing went out, and the move was counted once.
    assert_eq!(dev.stats().port.tx_frames, 0);
    assert!(rig.poll_tx(usize::MAX).is_empty());
    assert_eq!(dev.stats().port.dbr_without_doorbell, 1);
    rig.ring_sq();
    dev.run_until_idle();
    assert_eq!(dev.stats().port.tx_frames, 1);
    assert_eq!(rig.poll_rx(16, |_| {}), 1);
}

#[test]
fn armed_cq_raises_one_event_then_stays_disarmed() {
    let dev = Device::new(Profile::bf3());
    let ctx = dev.open_devx();
    let mut rig = EthRig::new(ctx.clone(), RigConfig::default()).unwrap();
    rig.fill_rq();
    let ch = ctx.event_channel().unwrap();
    ch.subscribe(Some(rig.rx_cq_handle()), &[event_type::COMP], 0xc00c1e)
        .unwrap();
    let send = |rig: &mut EthRig, seed| {
        rig.post_send(&frame(64, seed)).unwrap();
        rig.ring_sq();
        dev.run_until_idle();
    };
    // Not armed: a completion raises nothing.
    send(&mut rig, 1);
    assert_eq!(ch.read_event(Duration::from_millis(20)).unwrap(), None);
    assert_eq!(rig.poll_rx(16, |_| {}), 1);
    // Armed: exactly one event, carrying the cookie and the CQ number.
    rig.arm_rx();
    dev.run_until_idle();
    send(&mut rig, 2);
    send(&mut rig, 3);
    let ev = ch
        .read_event(Duration::from_secs(1))
        .unwrap()
        .expect("one event");
    assert_eq!(ev.cookie, 0xc00c1e);
    let eqe = Eqe::copy_from(&ev.data).unwrap();
    assert_eq!(eqe.event_type(), 0, "completion event type");
    assert_eq!(eqe.decode(), Event::Completion { cqn: rig.cqn_rx });
    assert_eq!(
        ch.read_event(Duration::from_millis(20)).unwrap(),
        None,
        "disarmed after one event"
    );
    assert_eq!(rig.poll_rx(16, |_| {}), 2);
    // Arming while CQEs are pending fires at once.
    send(&mut rig, 4);
    rig.arm_rx();
    dev.run_until_idle();
    assert!(ch.read_event(Duration::from_secs(1)).unwrap().is_some());
}

#[test]
fn bad_lkey_gives_an_error_cqe_and_the_sq_stops() {
    let dev = Device::new(Profile::bf3());
    let mut rig = EthRig::new(dev.open_devx(), RigConfig::default()).unwrap();
    rig.fill_rq();
    let mut w = [0u8; 64];
    let ctrl = CtrlSegRepr {
        opcode: wqe::opcode::SEND,
        opmod: 0,
        wqe_index: 0,
        qpn: 0,
        ds: 4,
        fm_ce_se: wqe::CTRL_CQ_UPDATE,
        imm: 0,
    };
    let hdr = frame(64, 0);
    w[..16].copy_from_slice(&ctrl.to_bytes());
    w[16..32].copy_from_slice(&wqe::eth_seg(&hdr[..18]));
    w[32..48].copy_from_slice(&hdr[2..18]);
    // No such key.
    w[48..64].copy_from_slice(&wqe::data_seg(46, 0x00de_ad5a, 0x1000));
    rig.post_raw_wqe(w).unwrap();
    rig.post_send(&frame(64, 1)).unwrap();
    rig.ring_sq();
    dev.run_until_idle();
    let c = rig.poll_tx(16);
    assert_eq!(c.len(), 1, "the WQE after the error is not executed: {c:?}");
    assert_eq!(c[0].opcode, 0xd, "requester error CQE");
    assert_eq!(c[0].syndrome, 0x04, "local protection error");
    assert_eq!(c[0].qpn, rig.sqn);
    assert_eq!(rig.poll_rx(16, |_| {}), 0);
    assert_eq!(dev.stats().port.wqe_errors, 1);
}

#[test]
fn cq_overrun_is_detected_and_reported() {
    let dev = Device::new(Profile::bf3());
    let ctx = dev.open_devx();
    let cfg = RigConfig {
        log_cq: 2,
        ..Default::default()
    };
    let mut rig = EthRig::new(ctx.clone(), cfg).unwrap();
    rig.fill_rq();
    let ch = ctx.event_channel().unwrap();
    ch.subscribe(Some(rig.rx_cq_handle()), &[event_type::CQ_ERROR], 7)
        .unwrap();
    for i in 0..6 {
        rig.post_send(&frame(64, i)).unwrap();
    }
    rig.ring_sq();
    dev.run_until_idle();
    // The TX CQ (4 entries) also overran; the RX CQ delivered 4 then overran.
    assert!(dev.stats().port.cq_overruns >= 2);
    let ev = ch
        .read_event(Duration::from_secs(1))
        .unwrap()
        .expect("CQ error event");
    assert_eq!(ev.cookie, 7);
    assert_eq!(ev.data[1], 0x04);
    assert_eq!(ev.data[0x2b], 1, "overrun syndrome");
}

#[test]
fn the_engine_thread_runs_queues_without_step() {
    let dev = Device::new(Profile::bf3());
    dev.start_engine();
    let mut rig = EthRig::new(dev.open_devx(), RigConfig::default()).unwrap();
    rig.fill_rq();
    let f = frame(300, 9);
    rig.post_send(&f).unwrap();
    rig.ring_sq();
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut got = Vec::new();
    while got.is_empty() && Instant::now() < deadline {
        collect_rx(&mut rig, &mut got);
        std::thread::sleep(Duration::from_micros(100));
    }
    dev.stop_engine();
    assert_eq!(got, vec![f]);
}

#[test]
fn cq_moderation_holds_the_event_until_max_count_completions() {
    use mlx5_dpa::mlx5::cmd::ModifyCqModeration;
    let dev = Device::new(Profile::bf3());
    let ctx = dev.open_devx();
    let mut rig = EthRig::new(ctx.clone(), RigConfig::default()).unwrap();
    rig.fill_rq();
    mlx5_dpa::devx::modify(
        rig.rx_cq(),
        &ModifyCqModeration {
            cqn: Cqn(rig.cqn_rx),
            cq_period: 0,
            cq_max_count: 3,
        },
    )
    .unwrap();
    let ch = ctx.event_channel().unwrap();
    ch.subscribe(Some(rig.rx_cq_handle()), &[event_type::COMP], 1)
        .unwrap();
    rig.arm_rx();
    for seed in 0..2 {
        rig.post_send(&frame(64, seed)).unwrap();
    }
    rig.ring_sq();
    dev.run_until_idle();
    assert_eq!(
        ch.read_event(Duration::from_millis(20)).unwrap(),
        None,
        "2 of 3 completions: no event yet"
    );
    rig.post_send(&frame(64, 9)).unwrap();
    rig.ring_sq();
    dev.run_until_idle();
    assert!(
        ch.read_event(Duration::from_secs(1)).unwrap().is_some(),
        "the third completion raises it"
    );
    assert_eq!(dev.stats().port.events, 1);
}

/// CQ moderation by time (`cq_period`, microseconds): an armed CQ's event waits until the period
/// has passed since its first CQE, then a pass raises it, with no further completion. A period
/// set by MODIFY_CQ while a CQE already waits starts that CQ's timer too (the pass looks only at
/// CQs whose timer runs, `Firmware::timed_cqs`).
#[test]
fn cq_moderation_by_period_raises_the_event_once_the_period_passed() {
    use mlx5_dpa::mlx5::cmd::ModifyCqModeration;
    const PERIOD_US: u16 = 3_000;
    let period = Duration::from_micros(u64::from(PERIOD_US));
    let dev = Device::new(Profile::bf3());
    let ctx = dev.open_devx();
    let mut rig = EthRig::new(ctx.clone(), RigConfig::default()).unwrap();
    rig.fill_rq();
    let moderate = |rig: &EthRig, cq_period: u16, cq_max_count: u16| {
        mlx5_dpa::devx::modify(
            rig.rx_cq(),
            &ModifyCqModeration {
                cqn: Cqn(rig.cqn_rx),
                cq_period,
                cq_max_count,
            },
        )
        .unwrap()
    };
    let ch = ctx.event_channel().unwrap();
    ch.subscribe(Some(rig.rx_cq_handle()), &[event_type::COMP], 1)
        .unwrap();
    // 1. By time only: one completion, then nothing but passes.
    moderate(&rig, PERIOD_US, 0);
    rig.arm_rx();
    let sent = Instant::now();
    rig.post_send(&frame(64, 1)).unwrap();
    rig.ring_sq();
    dev.run_until_idle();
    if sent.elapsed() < period {
        // (On a machine slow enough to take the whole period here, the event may be due.)
        assert_eq!(dev.stats().port.events, 0, "raised before its period");
    }
    step_past(&dev, sent, period);
    assert!(
        ch.read_event(Duration::from_secs(1)).unwrap().is_some(),
        "the period passed: the next pass raises it"
    );
    assert_eq!(dev.stats().port.events, 1);
    let mut got = Vec::new();
    collect_rx(&mut rig, &mut got);
    assert_eq!(got.len(), 1);
    // 2. A count the completions do not reach, then a period set while one waits.
    moderate(&rig, 0, 100);
    rig.arm_rx();
    rig.post_send(&frame(64, 2)).unwrap();
    rig.ring_sq();
    dev.run_until_idle();
    std::thread::sleep(Duration::from_millis(2));
    dev.step();
    assert_eq!(
        dev.stats().port.events,
        1,
        "1 of 100 completions and no period"
    );
    let set = Instant::now();
    moderate(&rig, PERIOD_US, 100);
    step_past(&dev, set, period);
    assert!(
        ch.read_event(Duration::from_secs(1)).unwrap().is_some(),
        "the period set while the CQE waited has passed"
    );
    assert_eq!(dev.stats().port.events, 2);
}

/// Waits until `period` has passed since `since` (and a millisecond more), then makes one
/// engine pass: the pass that finds a moderation timer due.
fn step_past(dev: &Device, since: Instant, period: Duration) {
    std::thread::sleep(period.saturating_sub(since.elapsed()) + Duration::from_millis(1));
    dev.step();
}

/// CQE compression (`cqe_comp_en`): the receive CQEs of one engine pass go out as compression
/// sessions (`mlx5_dpa::mlx5::wire::cqe::session`), which the rig expands. Every frame still
/// arrives byte for byte and in order; a session never crosses the ring's end (a 64-entry CQ
/// and bursts of 40 make them meet it), a lone CQE stays plain, and an error CQE ends the
/// session before it, so completions keep their order.
#[test]
fn compressed_cqes_carry_every_frame_in_order() {
    let dev = Device::new(Profile::bf3());
    let ctx = dev.open_devx();
    let cfg = RigConfig {
        log_cq: 6,
        buf_size: 1024,
        rx_post_len: 960,
        cqe_compression: true,
        ..Default::default()
    };
    let mut rig = EthRig::new(ctx.clone(), cfg).unwrap();
    rig.fill_rq();
    let mut sent = Vec::new();
    let mut got = Vec::new();
    for burst in 0..6u32 {
        for i in 0..40 {
            let f = frame(60 + ((burst * 40 + i) as usize * 53) % 890, burst * 40 + i);
            rig.post_send(&f).unwrap();
            sent.push(f);
        }
        rig.ring_sq();
        dev.run_until_idle();
        assert_eq!(rig.poll_tx(usize::MAX).len(), 40);
        collect_rx(&mut rig, &mut got);
    }
    assert_eq!(got.len(), sent.len());
    for (i, (a, b)) in sent.iter().zip(&got).enumerate() {
        assert_eq!(a, b, "frame {i} differs");
    }
    let sessions = dev.stats().port.cqe_sessions;
    assert_eq!(
        rig.sessions, sessions,
        "every session written was read as one"
    );
    // 240 CQEs in bursts of 40 on a 64-entry ring: at least one session per burst, and more
    // where a burst meets the ring's end.
    assert!(sessions > 6, "{sessions} sessions");

    // One frame alone: a plain CQE.
    let lone = frame(200, 999);
    rig.post_send(&lone).unwrap();
    rig.ring_sq();
    dev.run_until_idle();
    rig.poll_tx(usize::MAX);
    got.clear();
    collect_rx(&mut rig, &mut got);
    assert_eq!(got, vec![lone]);
    assert_eq!(
        dev.stats().port.cqe_sessions,
        sessions,
        "no session for one CQE"
    );

    // Five frames, one too long for a receive buffer (an error CQE), five more.
    let frames: Vec<Vec<u8>> = (0..11)
        .map(|i| frame(if i == 5 { 1000 } else { 100 + i }, 2000 + i as u32))
        .collect();
    for f in &frames {
        rig.post_send(f).unwrap();
    }
    rig.ring_sq();
    dev.run_until_idle();
    rig.poll_tx(usize::MAX);
    let mut order = Vec::new();
    rig.poll_rx(usize::MAX, |r| {
        order.push(r.map(<[u8]>::to_vec).map_err(|c| c.opcode));
    });
    assert_eq!(order.len(), 11);
    for (i, (r, f)) in order.iter().zip(&frames).enumerate() {
        if i == 5 {
            assert_eq!(r, &Err(0xe), "the long frame's error CQE, in its place");
        } else {
            assert_eq!(r, &Ok(f.clone()), "frame {i}");
        }
    }
    assert_eq!(
        dev.stats().port.cqe_sessions,
        sessions + 2,
        "two runs of five"
    );
    drop(rig);
    drop(ctx);
    assert!(dev.inventory().is_empty(), "left over: {}", dev.inventory());
}

/// Two send queues ringing through one UAR page (DPDK's TX queues share one): both ring before
/// the engine's next pass, so the page's doorbell register holds only the second ring. Both
/// queues' frames must go out. Before, the first queue's ring was lost and its frames waited
/// for good while the other queue kept the engine busy (found with testpmd over four queues).
#[test]
fn send_queues_sharing_a_uar_page_both_run() {
    let dev = Device::new(Profile::bf3());
    let ctx = dev.open_devx();
    let mut a = EthRig::new(ctx.clone(), RigConfig::default()).unwrap();
    // B's own rule matches nothing that is sent; every frame lands in A's RQ.
    let b_cfg = RigConfig {
        rule: OuterMatch {
            dmac: Some([0x02, 0, 0, 0, 0, 0x7e]),
            ..Default::default()
        },
        level: 1,
        ..Default::default()
    };
    let mut b = EthRig::new_sharing_uar(ctx.clone(), b_cfg, &a).unwrap();
    a.fill_rq();
    let mut got = Vec::new();
    for round in 0..3u32 {
        let fa = frame(100, 10 * round);
        let fb = frame(200, 10 * round + 1);
        a.post_send(&fa).unwrap();
        b.post_send(&fb).unwrap();
        a.ring_sq();
        b.ring_sq();
        dev.run_until_idle();
        assert_eq!(a.poll_tx(usize::MAX).len(), 1, "A's send, round {round}");
        assert_eq!(b.poll_tx(usize::MAX).len(), 1, "B's send, round {round}");
        got.clear();
        collect_rx(&mut a, &mut got);
        assert_eq!(got.len(), 2, "both frames, round {round}");
        assert!(got.contains(&fa) && got.contains(&fb));
    }
    drop(b);
    drop(a);
    drop(ctx);
    assert!(dev.inventory().is_empty(), "left over: {}", dev.inventory());
}

/// The RQ's Q counter counts the frames it had no WQE for (`out_of_buffer`), and the rule's
/// flow counter every frame and byte the rule took, whether or not the RQ could take it. A
/// query with `clear` reads and zeroes. The rig's teardown (entries and queues first, then the
/// counters they name) leaves nothing.
#[test]
fn q_and_flow_counters_count_drops_and_hits() {
    let dev = Device::new(Profile::bf3());
    let ctx = dev.open_devx();
    let cfg = RigConfig {
        log_rq: 4,
        counters: true,
        ..Default::default()
    };
    let mut rig = EthRig::new(ctx.clone(), cfg).unwrap();
    rig.fill_rq();
    let sizes: Vec<usize> = (0..40).map(|i| 64 + i * 7).collect();
    for (i, &n) in sizes.iter().enumerate() {
        rig.post_send(&frame(n, i as u32)).unwrap();
    }
    rig.ring_sq();
    dev.run_until_idle();
    assert_eq!(rig.poll_tx(usize::MAX).len(), 40);
    let (q, f) = rig.counters().unwrap();
    assert_eq!(q.out_of_buffer, 40 - 16, "16 WQEs posted, 40 frames");
    assert_eq!(f.packets, 40);
    assert_eq!(f.octets, sizes.iter().sum::<usize>() as u64);
    assert_eq!(dev.stats().port.rx_no_buffer, 24);
    // Read and clear.
    let (q, f) = rig.query_counters(true).unwrap();
    assert_eq!((q.out_of_buffer, f.packets), (24, 40));
    let (q, f) = rig.counters().unwrap();
    assert_eq!((q.out_of_buffer, f.packets, f.octets), (0, 0, 0));
    drop(rig);
    drop(ctx);
    assert!(dev.inventory().is_empty(), "left over: {}", dev.inventory());
}

/// Two CQs armed through one UAR page before the engine's next pass (rdma-core's CQs share
/// their context's pages): the register holds only the second arm, but both CQs are armed, as
/// their doorbell records say, and each raises its event. Before, the first CQ's event never
/// came. (A CQ's first arm at consumer index 0 writes the word the record started with, so the
/// first round arms one CQ at a time; the model cannot tell that arm from none.)
#[test]
fn cqs_armed_through_one_uar_page_both_raise_events() {
    let dev = Device::new(Profile::bf3());
    let ctx = dev.open_devx();
    let other = [0x02, 0, 0, 0, 0, 0x7e];
    let a_cfg = RigConfig {
        rule: OuterMatch {
            dmac: Some(DMAC),
            ..Default::default()
        },
        ..Default::default()
    };
    let mut a = EthRig::new(ctx.clone(), a_cfg).unwrap();
    let b_cfg = RigConfig {
        rule: OuterMatch {
            dmac: Some(other),
            ..Default::default()
        },
        level: 1,
        ..Default::default()
    };
    let mut b = EthRig::new_sharing_uar(ctx.clone(), b_cfg, &a).unwrap();
    a.fill_rq();
    b.fill_rq();
    let ch = ctx.event_channel().unwrap();
    ch.subscribe(Some(a.rx_cq_handle()), &[event_type::COMP], 0xa)
        .unwrap();
    ch.subscribe(Some(b.rx_cq_handle()), &[event_type::COMP], 0xb)
        .unwrap();
    for round in 0..3u32 {
        a.arm_rx();
        if round == 0 {
            dev.run_until_idle();
        }
        b.arm_rx();
        dev.run_until_idle();
        let mut to_b = frame(80, 100 + round);
        to_b[0..6].copy_from_slice(&other);
        a.post_send(&frame(80, round)).unwrap();
        a.post_send(&to_b).unwrap();
        a.ring_sq();
        dev.run_until_idle();
        let mut cookies = Vec::new();
        while let Some(ev) = ch.read_event(Duration::from_millis(200)).unwrap() {
            cookies.push(ev.cookie);
        }
        cookies.sort_unstable();
        assert_eq!(cookies, vec![0xa, 0xb], "one event per CQ, round {round}");
        assert_eq!(a.poll_rx(16, |_| {}), 1);
        assert_eq!(b.poll_rx(16, |_| {}), 1);
        a.poll_tx(usize::MAX);
    }
}

/// A consumer that keeps a 16-bit CQ counter (DPDK's send queues do, and write it to the
/// doorbell record's 24 bits): past its first wrap, at 65,536 CQEs, the CQ goes on. The model
/// compares counters modulo twice the ring, as the NIC does; before, it took the wrap for
/// 65,536 CQEs unread and stopped the CQ as overrun (testpmd's forwarding stalled there).
#[test]
fn a_16_bit_cq_consumer_counter_wraps_without_an_overrun() {
    let dev = Device::new(Profile::bf3());
    let cfg = RigConfig {
        log_cq: 6,
        log_sq: 6,
        log_rq: 6,
        buf_size: 128,
        cq_ci_bits: 16,
        ..Default::default()
    };
    let mut rig = EthRig::new(dev.open_devx(), cfg).unwrap();
    rig.fill_rq();
    let f = frame(64, 1);
    let (mut sent, mut got) = (0u32, 0usize);
    let mut tx = Vec::with_capacity(32);
    while sent < 70_000 {
        for _ in 0..32 {
            rig.post_send(&f).unwrap();
        }
        rig.ring_sq();
        dev.run_until_idle();
        tx.clear();
        assert_eq!(
            rig.poll_tx_into(usize::MAX, &mut tx),
            32,
            "after {sent} frames"
        );
        got += rig.poll_rx(usize::MAX, |_| {});
        sent += 32;
    }
    assert_eq!(got, 70_016);
    assert_eq!(dev.stats().port.cq_overruns, 0);
}
