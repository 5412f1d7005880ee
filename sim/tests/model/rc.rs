//! The RC transport of the model, driven through raw PRM commands and hand-built WQEs
//! (`mlx5_sim::testing::rc_rig`): on one device with force loopback, on one device through the port's
//! loopback, and across two linked devices. Data is checked byte for byte; every error class
//! the transport reports is provoked; a linked exchange is captured and dissected by tshark.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mlx5_dpa::devx::{self, DevxError};
use mlx5_dpa::mem::Lkey;
use mlx5_dpa::mlx5::cmd::{
    CmdError, Init2Rtr, MkeyAccess, Qp2Err, QpAttr, QueryNicVportContext, QueryRoceAddress,
    Rst2Init, Rtr2Rts, Rts2Rts,
};
use mlx5_dpa::mlx5::layout::View;
use mlx5_dpa::mlx5::layouts as l;
use mlx5_dpa::mlx5::wire::wqe::{self, CtrlSeg, CtrlSegRepr, InlineSeg};
use mlx5_sim::fw::check;
use mlx5_sim::profile::Profile;
use mlx5_sim::testing::rc_rig::{cqe, RcCompletion, RcOp, RcRig, RcRigConfig, SendWr, Sge};
use mlx5_sim::testing::rig::{EthRig, RigConfig};
use mlx5_sim::{syndrome, Device, PortAddress, PortMode};

const MAC_A: [u8; 6] = [0x02, 0x00, 0x5e, 0x10, 0x00, 0x0a];
const MAC_B: [u8; 6] = [0x02, 0x00, 0x5e, 0x10, 0x00, 0x0b];
const IP_A: [u8; 4] = [192, 0, 2, 10];
const IP_B: [u8; 4] = [192, 0, 2, 11];
/// Start PSNs close to the 24-bit wrap, so that every test crosses it.
const PSN_A: u32 = 0xff_fff0;
const PSN_B: u32 = 0xff_ff80;

fn pattern(len: usize, seed: u32) -> Vec<u8> {
    let mut x = seed.wrapping_mul(2_654_435_761).max(1);
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x as u8
        })
        .collect()
}

/// Connection attributes of one side.
#[derive(Debug, Clone, Copy)]
struct Side {
    mtu: u8,
    fl: bool,
    peer: Option<PortAddress>,
    rre: bool,
    rwe: bool,
    rae: bool,
    rnr_retry: u8,
    retry_count: u8,
    min_rnr_nak: u8,
    ack_timeout: u8,
    log_sra_max: u8,
}

impl Side {
    fn new(mtu: u8) -> Side {
        Side {
            mtu,
            fl: true,
            peer: None,
            rre: true,
            rwe: true,
            rae: true,
            rnr_retry: 7,
            retry_count: 7,
            min_rnr_nak: 1,
            ack_timeout: 16,
            log_sra_max: 3,
        }
    }

    fn attr(&self, remote_qpn: u32, send_psn: u32, rcv_psn: u32) -> QpAttr {
        let peer = self.peer;
        QpAttr {
            rre: self.rre,
            rwe: self.rwe,
            rae: self.rae,
            vhca_port_num: 1,
            mtu: self.mtu,
            remote_qpn,
            next_rcv_psn: rcv_psn,
            log_rra_max: 3,
            min_rnr_nak: self.min_rnr_nak,
            fl: self.fl,
            rmac: peer.map_or([0; 6], |p| p.mac),
            rgid: peer.map_or([0; 16], |p| p.gid),
            src_addr_index: 1,
            hop_limit: 64,
            next_send_psn: send_psn,
            log_sra_max: self.log_sra_max,
            retry_count: self.retry_count,
            rnr_retry: self.rnr_retry,
            ack_timeout: self.ack_timeout,
            opt_param_mask: 0,
            q_key: 0,
        }
    }
}

/// Two connected QPs: on one device (force loopback or port loopback) or on two linked ones.
struct Pair {
    devs: Vec<Device>,
    a: RcRig,
    b: RcRig,
    side_a: Side,
    side_b: Side,
}

enum Mode {
    ForceLoopback,
    PortLoopback,
    Linked,
}

impl Pair {
    fn new(mode: Mode, cfg: RcRigConfig, side_a: Side, side_b: Side) -> Pair {
        let (devs, ctx_a, ctx_b) = match mode {
            Mode::ForceLoopback | Mode::PortLoopback => {
                let d = Device::new(Profile::bf3());
                d.set_port_address(MAC_A, IP_A);
                let c = d.open_devx();
                (vec![d], Arc::clone(&c), c)
            }
            Mode::Linked => {
                let a = Device::new(Profile::bf3());
                let b = Device::new(Profile::bf3());
                a.set_port_address(MAC_A, IP_A);
                b.set_port_address(MAC_B, IP_B);
                Device::link(&a, &b);
                let (ca, cb) = (a.open_devx(), b.open_devx());
                (vec![a, b], ca, cb)
            }
        };
        let (mut side_a, mut side_b) = (side_a, side_b);
        match mode {
            Mode::ForceLoopback => {}
            Mode::PortLoopback => {
                let me = devs[0].port_address();
                side_a.fl = false;
                side_b.fl = false;
                side_a.peer = Some(me);
                side_b.peer = Some(me);
            }
            Mode::Linked => {
                side_a.fl = false;
                side_b.fl = false;
                side_a.peer = Some(devs[1].port_address());
                side_b.peer = Some(devs[0].port_address());
            }
        }
        let a = RcRig::new(ctx_a, cfg).expect("rig A");
        let b = RcRig::new(ctx_b, cfg).expect("rig B");
        let p = Pair {
            devs,
            a,
            b,
            side_a,
            side_b,
        };
        p.connect();
        p
    }

    fn fl(mtu: u8) -> Pair {
        Pair::new(
            Mode::ForceLoopback,
            RcRigConfig::default(),
            Side::new(mtu),
            Side::new(mtu),
        )
    }

    fn linked(mtu: u8) -> Pair {
        Pair::new(
            Mode::Linked,
            RcRigConfig::default(),
            Side::new(mtu),
            Side::new(mtu),
        )
    }

    fn connect(&self) {
        self.a
            .connect(self.side_a.attr(self.b.qpn, PSN_A, PSN_B))
            .expect("connect A");
        self.b
            .connect(self.side_b.attr(self.a.qpn, PSN_B, PSN_A))
            .expect("connect B");
    }

    /// 2RST on both, then RST -> INIT -> RTR -> RTS again.
    fn recover(&mut self) {
        self.a.reset().expect("reset A");
        self.b.reset().expect("reset B");
        self.connect();
    }

    fn devices(&self) -> Vec<&Device> {
        self.devs.iter().collect()
    }

    fn run(&self) -> usize {
        Device::run_together(&self.devices())
    }

    /// Runs (waiting for timers) until `f` yields or `timeout` passes.
    fn wait<T>(
        &mut self,
        timeout: Duration,
        mut f: impl FnMut(&mut Pair) -> Option<T>,
    ) -> Option<T> {
        let end = Instant::now() + timeout;
        loop {
            self.run();
            if let Some(x) = f(self) {
                return Some(x);
            }
            if Instant::now() > end {
                return None;
            }
            std::thread::sleep(Duration::from_micros(100));
        }
    }

    fn send_cqe_a(&mut self) -> RcCompletion {
        self.wait(Duration::from_secs(5), |p| p.a.poll_send())
            .expect("a send completion")
    }

    fn recv_cqe_b(&mut self) -> RcCompletion {
        self.wait(Duration::from_secs(5), |p| p.b.poll_recv())
            .expect("a receive completion")
    }

    fn qp_state(rig: &RcRig) -> u64 {
        let q = rig.query().expect("query");
        View::<l::qpc::Layout>::new(&q).unwrap().get(l::qpc::state)
    }

    fn stats(&self) -> mlx5_sim::RcStats {
        let mut s = self.devs[0].stats().rc;
        if let Some(d) = self.devs.get(1) {
            let t = d.stats().rc;
            s.tx_packets += t.tx_packets;
            s.rx_packets += t.rx_packets;
            s.icrc_errors += t.icrc_errors;
            s.malformed += t.malformed;
            s.dropped += t.dropped;
            s.duplicates += t.duplicates;
            s.retransmits += t.retransmits;
            s.timeouts += t.timeouts;
            s.rnr_naks_sent += t.rnr_naks_sent;
            s.naks_sent += t.naks_sent;
            s.error_completions += t.error_completions;
        }
        s
    }
}

/// Status and syndrome of a command firmware refused.
fn refusal(e: DevxError) -> (mlx5_dpa::mlx5::Status, u32) {
    match e {
        DevxError::Command {
            source: CmdError::Firmware {
                status, syndrome, ..
            },
            ..
        } => (status, syndrome),
        e => panic!("not a firmware refusal: {e}"),
    }
}

fn ok_req(c: RcCompletion, op: u8, index: u16, qpn: u32, bytes: u32) {
    assert_eq!(c.opcode, cqe::REQ, "{c:?}");
    assert_eq!(c.wqe_opcode, op, "{c:?}");
    assert_eq!(c.wqe_counter, index, "{c:?}");
    assert_eq!(c.qpn, qpn, "{c:?}");
    assert_eq!(c.byte_cnt, bytes, "{c:?}");
}

fn err_req(c: RcCompletion, syn: u8, index: u16) {
    assert_eq!(c.opcode, cqe::REQ_ERR, "{c:?}");
    assert_eq!(c.syndrome, syn, "{c:?}");
    assert_eq!(c.wqe_counter, index, "{c:?}");
}

/// SEND, SEND_IMM, WRITE, WRITE_IMM, READ, CAS, FA on a connected pair, checked byte for byte.
fn every_operation(p: &mut Pair) {
    let (qa, qb) = (p.a.qpn, p.b.qpn);
    // SEND, gathered from two SGEs into two receive SGEs.
    let msg = pattern(700, 1);
    p.a.write_data(0, &msg[..300]);
    p.a.write_data(8192, &msg[300..]);
    let r0 =
        p.b.post_recv(&[p.b.sge(0x1_0000, 200), p.b.sge(0x2_0000, 1000)])
            .unwrap();
    let sg = [p.a.sge(0, 300), p.a.sge(8192, 400)];
    let i = p.a.send(&SendWr::new(RcOp::Send, &sg)).unwrap();
    ok_req(p.send_cqe_a(), 0x0a, i, qa, 0);
    let c = p.recv_cqe_b();
    assert_eq!(
        (c.opcode, c.byte_cnt, c.wqe_counter, c.qpn),
        (cqe::RESP_SEND, 700, r0, qb)
    );
    let mut got = p.b.read_data(0x1_0000, 200);
    got.extend(p.b.read_data(0x2_0000, 500));
    assert_eq!(got, msg);

    // SEND with immediate, with inline data after an SGE.
    let r1 = p.b.post_recv(&[p.b.sge(0x3_0000, 4096)]).unwrap();
    let inline = b"inline tail";
    let wr = SendWr {
        inline: Some(inline),
        ..SendWr::new(RcOp::SendImm(0x1234_5678), &sg[..1])
    };
    let i = p.a.send(&wr).unwrap();
    ok_req(p.send_cqe_a(), 0x0b, i, qa, 0);
    let c = p.recv_cqe_b();
    assert_eq!(
        (c.opcode, c.byte_cnt, c.wqe_counter, c.imm),
        (
            cqe::RESP_SEND_IMM,
            300 + inline.len() as u32,
            r1,
            0x1234_5678
        )
    );
    let mut want = msg[..300].to_vec();
    want.extend_from_slice(inline);
    assert_eq!(p.b.read_data(0x3_0000, want.len()), want);

    // RDMA WRITE: no receive completion.
    let data = pattern(5000, 2);
    p.a.write_data(0x4_0000, &data);
    let sg = [p.a.sge(0x4_0000, 5000)];
    let op = RcOp::Write {
        raddr: p.b.addr(0x5_0000),
        rkey: p.b.key,
    };
    let i = p.a.send(&SendWr::new(op, &sg)).unwrap();
    ok_req(p.send_cqe_a(), 0x08, i, qa, 0);
    assert_eq!(p.b.read_data(0x5_0000, 5000), data);
    assert!(p.b.poll_recv().is_none());

    // RDMA WRITE with immediate: consumes a receive WQE, byte_cnt is the write's length.
    let r2 = p.b.post_recv(&[p.b.sge(0x6_0000, 16)]).unwrap();
    let data = pattern(1234, 3);
    p.a.write_data(0x4_0000, &data);
    let sg = [p.a.sge(0x4_0000, 1234)];
    let op = RcOp::WriteImm {
        raddr: p.b.addr(0x7_0000),
        rkey: p.b.key,
        imm: 0xdead_beef,
    };
    let i = p.a.send(&SendWr::new(op, &sg)).unwrap();
    ok_req(p.send_cqe_a(), 0x09, i, qa, 0);
    let c = p.recv_cqe_b();
    assert_eq!(
        (c.opcode, c.byte_cnt, c.wqe_counter, c.imm, c.qpn),
        (cqe::RESP_WR_IMM, 1234, r2, 0xdead_beef, qb)
    );
    assert_eq!(p.b.read_data(0x7_0000, 1234), data);

    // RDMA READ into two local SGEs.
    let data = pattern(3000, 4);
    p.b.write_data(0x8_0000, &data);
    let sg = [p.a.sge(0x9_0000, 1000), p.a.sge(0xa_0000, 2000)];
    let op = RcOp::Read {
        raddr: p.b.addr(0x8_0000),
        rkey: p.b.key,
    };
    let i = p.a.send(&SendWr::new(op, &sg)).unwrap();
    ok_req(p.send_cqe_a(), 0x10, i, qa, 3000);
    let mut got = p.a.read_data(0x9_0000, 1000);
    got.extend(p.a.read_data(0xa_0000, 2000));
    assert_eq!(got, data);

    // Compare and swap: host byte order in memory, the original value comes back.
    p.b.write_data(0xb_0000, &0x1111_2222_3333_4444u64.to_le_bytes());
    let sg = [p.a.sge(0xc_0000, 8)];
    let (cas_addr, cas_key) = (p.b.addr(0xb_0000), p.b.key);
    let cas = |compare, swap| RcOp::CompareSwap {
        raddr: cas_addr,
        rkey: cas_key,
        compare,
        swap,
    };
    let op = cas(0x1111_2222_3333_4444, 0x5555_6666_7777_8888);
    let i = p.a.send(&SendWr::new(op, &sg)).unwrap();
    ok_req(p.send_cqe_a(), 0x11, i, qa, 8);
    assert_eq!(
        p.a.read_data(0xc_0000, 8),
        0x1111_2222_3333_4444u64.to_le_bytes()
    );
    assert_eq!(
        p.b.read_data(0xb_0000, 8),
        0x5555_6666_7777_8888u64.to_le_bytes()
    );
    // Not equal: no swap, the current value comes back.
    let i = p.a.send(&SendWr::new(cas(1, 2), &sg)).unwrap();
    ok_req(p.send_cqe_a(), 0x11, i, qa, 8);
    assert_eq!(
        p.a.read_data(0xc_0000, 8),
        0x5555_6666_7777_8888u64.to_le_bytes()
    );
    assert_eq!(
        p.b.read_data(0xb_0000, 8),
        0x5555_6666_7777_8888u64.to_le_bytes()
    );

    // Fetch and add, wrapping.
    p.b.write_data(0xb_0008, &u64::MAX.to_le_bytes());
    let op = RcOp::FetchAdd {
        raddr: p.b.addr(0xb_0008),
        rkey: p.b.key,
        add: 5,
    };
    let i = p.a.send(&SendWr::new(op, &sg)).unwrap();
    ok_req(p.send_cqe_a(), 0x12, i, qa, 8);
    assert_eq!(p.a.read_data(0xc_0000, 8), u64::MAX.to_le_bytes());
    assert_eq!(p.b.read_data(0xb_0008, 8), 4u64.to_le_bytes());

    // Zero-length SEND and WRITE.
    let r3 = p.b.post_recv(&[p.b.sge(0x3_0000, 64)]).unwrap();
    let i = p.a.send(&SendWr::new(RcOp::Send, &[])).unwrap();
    ok_req(p.send_cqe_a(), 0x0a, i, qa, 0);
    let c = p.recv_cqe_b();
    assert_eq!(
        (c.opcode, c.byte_cnt, c.wqe_counter),
        (cqe::RESP_SEND, 0, r3)
    );
    let op = RcOp::Write { raddr: 0, rkey: 0 };
    let i = p.a.send(&SendWr::new(op, &[])).unwrap();
    ok_req(p.send_cqe_a(), 0x08, i, qa, 0);

    // Unsignaled requests give no CQE; a NOP completes in order.
    let data = pattern(64, 5);
    p.a.write_data(0x4_0000, &data);
    let sg = [p.a.sge(0x4_0000, 64)];
    for k in 0..3u64 {
        let op = RcOp::Write {
            raddr: p.b.addr(0xd_0000 + 64 * k as usize),
            rkey: p.b.key,
        };
        p.a.post_send(&SendWr {
            signaled: false,
            ..SendWr::new(op, &sg)
        })
        .unwrap();
    }
    let i = p.a.post_send(&SendWr::new(RcOp::Nop, &[])).unwrap();
    p.a.ring();
    ok_req(p.send_cqe_a(), 0x00, i, qa, 0);
    p.run();
    assert!(p.a.poll_send().is_none());
    for k in 0..3 {
        assert_eq!(p.b.read_data(0xd_0000 + 64 * k, 64), data);
    }
    assert!(p.a.poll_send().is_none() && p.b.poll_send().is_none());
    assert_eq!(p.stats().error_completions, 0);
    assert_eq!(p.stats().icrc_errors, 0);
}

#[test]
fn force_loopback_every_operation() {
    for mtu in [1, 3, 5] {
        let mut p = Pair::fl(mtu);
        every_operation(&mut p);
        assert_eq!(p.devs[0].stats().port.tx_frames, 0, "fl frames stay inside");
    }
}

#[test]
fn port_loopback_every_operation() {
    let mut p = Pair::new(
        Mode::PortLoopback,
        RcRigConfig::default(),
        Side::new(2),
        Side::new(2),
    );
    every_operation(&mut p);
    let s = p.devs[0].stats();
    assert!(s.port.tx_frames > 0);
    // RC frames never reach Ethernet steering.
    assert_eq!(s.port.rx_frames, 0);
}

#[test]
fn linked_every_operation() {
    for mtu in [1, 4] {
        let mut p = Pair::linked(mtu);
        every_operation(&mut p);
        // Both directions work: B is a requester too.
        let data = pattern(999, 9);
        p.b.write_data(0, &data);
        let r = p.a.post_recv(&[p.a.sge(0x1000, 2048)]).unwrap();
        let sg = [p.b.sge(0, 999)];
        let i = p.b.send(&SendWr::new(RcOp::Send, &sg)).unwrap();
        let c = p.wait(Duration::from_secs(5), |p| p.b.poll_send()).unwrap();
        ok_req(c, 0x0a, i, p.b.qpn, 0);
        let c = p.wait(Duration::from_secs(5), |p| p.a.poll_recv()).unwrap();
        assert_eq!(
            (c.opcode, c.byte_cnt, c.wqe_counter),
            (cqe::RESP_SEND, 999, r)
        );
        assert_eq!(p.a.read_data(0x1000, 999), data);
    }
}

/// Messages of many packets, in every direction, some beyond the ACK-request interval and
/// the requester's window.
fn multi_packet(p: &mut Pair) {
    let qa = p.a.qpn;
    // A 20000-byte SEND into three receive SGEs.
    let msg = pattern(20_000, 11);
    p.a.write_data(0, &msg);
    let r =
        p.b.post_recv(&[
            p.b.sge(0x1_0000, 7000),
            p.b.sge(0x3_0000, 3000),
            p.b.sge(0x5_0000, 20_000),
        ])
        .unwrap();
    let sg = [p.a.sge(0, 20_000)];
    let i = p.a.send(&SendWr::new(RcOp::SendImm(7), &sg)).unwrap();
    ok_req(p.send_cqe_a(), 0x0b, i, qa, 0);
    let c = p.recv_cqe_b();
    assert_eq!(
        (c.opcode, c.byte_cnt, c.wqe_counter, c.imm),
        (cqe::RESP_SEND_IMM, 20_000, r, 7)
    );
    let mut got = p.b.read_data(0x1_0000, 7000);
    got.extend(p.b.read_data(0x3_0000, 3000));
    got.extend(p.b.read_data(0x5_0000, 10_000));
    assert_eq!(got, msg);
    // A 600 KiB WRITE (more packets than the window at 256-byte MTU).
    let big = pattern(600 * 1024, 12);
    p.a.write_data(0, &big);
    let sg = [p.a.sge(0, big.len() as u32)];
    let op = RcOp::WriteImm {
        raddr: p.b.addr(0x1_0000),
        rkey: p.b.key,
        imm: 99,
    };
    let r = p.b.post_recv(&[]).unwrap();
    let i = p.a.send(&SendWr::new(op, &sg)).unwrap();
    ok_req(p.send_cqe_a(), 0x09, i, qa, 0);
    let c = p.recv_cqe_b();
    assert_eq!(
        (c.opcode, c.byte_cnt, c.wqe_counter),
        (cqe::RESP_WR_IMM, big.len() as u32, r)
    );
    assert!(p.b.read_data(0x1_0000, big.len()) == big);
    // A 300 KiB READ back into A at another place.
    let sg = [p.a.sge(0xa_0000, 300 * 1024)];
    let op = RcOp::Read {
        raddr: p.b.addr(0x1_0000),
        rkey: p.b.key,
    };
    let i = p.a.send(&SendWr::new(op, &sg)).unwrap();
    ok_req(p.send_cqe_a(), 0x10, i, qa, 300 * 1024);
    assert!(p.a.read_data(0xa_0000, 300 * 1024) == big[..300 * 1024]);
    // Several messages in flight at once, mixed, completing in order.
    let mut idx = Vec::new();
    for k in 0..8usize {
        let sg = [p.a.sge(k * 4096, 4000)];
        let op = if k % 2 == 0 {
            RcOp::Write {
                raddr: p.b.addr(0xe_0000 + k * 4096),
                rkey: p.b.key,
            }
        } else {
            RcOp::Read {
                raddr: p.b.addr(0x1_0000 + k * 4096),
                rkey: p.b.key,
            }
        };
        idx.push((p.a.post_send(&SendWr::new(op, &sg)).unwrap(), op));
    }
    p.a.ring();
    for (i, op) in idx {
        let c = p.send_cqe_a();
        let (code, bytes) = match op {
            RcOp::Read { .. } => (0x10, 4000),
            _ => (0x08, 0),
        };
        ok_req(c, code, i, qa, bytes);
    }
    assert_eq!(p.stats().error_completions, 0);
}

#[test]
fn multi_packet_messages_force_loopback() {
    multi_packet(&mut Pair::fl(1));
}

#[test]
fn multi_packet_messages_linked() {
    let mut p = Pair::linked(1);
    multi_packet(&mut p);
    // And at the largest MTU.
    let mut p = Pair::linked(5);
    multi_packet(&mut p);
}

#[test]
fn bad_lkey_is_a_local_protection_error_then_everything_flushes() {
    let mut p = Pair::fl(3);
    let qa = p.a.qpn;
    let good = [p.a.sge(0, 100)];
    let bad = [Sge {
        lkey: Lkey(p.a.key ^ 0x100),
        ..p.a.sge(0, 100)
    }];
    // The WQE before the bad one completes normally; the bad one errs; the rest flush.
    p.b.post_recv(&[p.b.sge(0, 4096)]).unwrap();
    let i0 = p.a.post_send(&SendWr::new(RcOp::Send, &good)).unwrap();
    let i1 = p.a.post_send(&SendWr::new(RcOp::Send, &bad)).unwrap();
    let i2 = p.a.post_send(&SendWr::new(RcOp::Send, &good)).unwrap();
    let i3 =
        p.a.post_send(&SendWr {
            signaled: false,
            ..SendWr::new(RcOp::Send, &good)
        })
        .unwrap();
    p.a.ring();
    p.run();
    let c = p.a.drain_send();
    assert_eq!(c.len(), 4, "{c:?}");
    ok_req(c[0], 0x0a, i0, qa, 0);
    err_req(c[1], syndrome::LOCAL_PROT_ERR, i1);
    assert_eq!((c[1].wqe_opcode, c[1].qpn), (0x0a, qa));
    err_req(c[2], syndrome::WR_FLUSH_ERR, i2);
    // Flushes complete every WQE, signaled or not.
    err_req(c[3], syndrome::WR_FLUSH_ERR, i3);
    assert_eq!(Pair::qp_state(&p.a), 6);
    // WQEs posted in ERR flush as well.
    let i4 = p.a.send(&SendWr::new(RcOp::Nop, &[])).unwrap();
    p.run();
    err_req(p.a.poll_send().unwrap(), syndrome::WR_FLUSH_ERR, i4);
    // The responder was not affected.
    assert_eq!(Pair::qp_state(&p.b), 3);
    assert_eq!(p.b.drain_recv().len(), 1);

    // READ into a key without local write; a range outside the key; a key of another PD.
    p.recover();
    let ro =
        p.a.create_mkey(
            p.a.pdn,
            MkeyAccess {
                local_read: true,
                ..MkeyAccess::default()
            },
            0x8_0000,
            4096,
        )
        .unwrap();
    let pd2 = p.a.alloc_pd().unwrap();
    let other_pd =
        p.a.create_mkey(
            pd2,
            MkeyAccess {
                local_read: true,
                local_write: true,
                ..MkeyAccess::default()
            },
            0x9_0000,
            4096,
        )
        .unwrap();
    let cases = [
        (
            RcOp::Read {
                raddr: p.b.addr(0),
                rkey: p.b.key,
            },
            Sge {
                lkey: Lkey(ro),
                ..p.a.sge(0x8_0000, 64)
            },
        ),
        (
            RcOp::Send,
            Sge {
                lkey: Lkey(other_pd),
                ..p.a.sge(0x9_0000, 64)
            },
        ),
        (RcOp::Send, p.a.sge((1 << 20) - 32, 64)),
    ];
    for (op, sge) in cases {
        let i = p.a.send(&SendWr::new(op, &[sge])).unwrap();
        err_req(p.send_cqe_a(), syndrome::LOCAL_PROT_ERR, i);
        assert_eq!(Pair::qp_state(&p.a), 6);
        p.recover();
    }
}

#[test]
fn malformed_wqes_are_local_qp_operation_errors() {
    let mut p = Pair::fl(3);
    let good = SendWr::new(RcOp::Nop, &[]);
    let mut cases: Vec<(Vec<u8>, u8)> = Vec::new();
    // Unknown opcode.
    let with_ctrl = |f: &dyn Fn(&mut CtrlSegRepr)| {
        let mut w = p.a.build_wqe(&good);
        let mut c = CtrlSegRepr::parse(&CtrlSeg::new_unchecked(&w[..16]));
        f(&mut c);
        c.emit(&mut CtrlSeg::new_unchecked(&mut w[..16]));
        w
    };
    let w = with_ctrl(&|c| c.opcode = 0x55);
    cases.push((w, syndrome::LOCAL_QP_OP_ERR));
    // Another QP's number.
    let w = with_ctrl(&|c| c.qpn += 1);
    cases.push((w, syndrome::LOCAL_QP_OP_ERR));
    // ds = 0.
    let w = with_ctrl(&|c| c.ds = 0);
    cases.push((w, syndrome::LOCAL_QP_OP_ERR));
    // A WRITE without its remote address segment.
    let w = with_ctrl(&|c| c.opcode = wqe::opcode::RDMA_WRITE);
    cases.push((w, syndrome::LOCAL_QP_OP_ERR));
    // An atomic whose result buffer is not 8 bytes.
    let sg = [p.a.sge(0, 16)];
    let w = p.a.build_wqe(&SendWr::new(
        RcOp::FetchAdd {
            raddr: p.b.addr(0),
            rkey: p.b.key,
            add: 1,
        },
        &sg,
    ));
    cases.push((w, syndrome::LOCAL_LENGTH_ERR));
    // An inline segment longer than the WQE.
    let mut w = p.a.build_wqe(&SendWr {
        inline: Some(b"abc"),
        ..SendWr::new(RcOp::Send, &[])
    });
    InlineSeg::new_unchecked(&mut w[16..20]).set_byte_count(wqe::INLINE_SEG | 900);
    cases.push((w, syndrome::LOCAL_QP_OP_ERR));
    // A WAIT: without its wait segment; on a CQ (an opmod the model does not take); on a word
    // its key does not cover.
    let w = with_ctrl(&|c| c.opcode = wqe::opcode::WAIT);
    cases.push((w, syndrome::LOCAL_QP_OP_ERR));
    let wait = |opmod: u8, lkey: u32, va: u64| {
        let mut w = with_ctrl(&|c| {
            c.opcode = wqe::opcode::WAIT;
            c.opmod = opmod;
            c.ds = 3;
        });
        w.resize(64, 0);
        let mut s = wqe::WaitSeg::new_unchecked(&mut w[16..48]);
        s.set_operation(wqe::wait_cond::ALWAYS_TRUE);
        s.set_lkey(lkey);
        s.set_va_high((va >> 32) as u32);
        s.set_va_low(va as u32);
        w
    };
    cases.push((
        wait(wqe::wait_opmod::CQ_PI, p.a.key, p.a.addr(0)),
        syndrome::LOCAL_QP_OP_ERR,
    ));
    cases.push((
        wait(wqe::wait_opmod::DATA, p.a.key ^ 0x100, p.a.addr(0)),
        syndrome::LOCAL_PROT_ERR,
    ));
    for (w, syn) in cases {
        let i = p.a.post_raw(&w, true).unwrap();
        p.a.ring();
        err_req(p.send_cqe_a(), syn, i);
        p.run();
        assert!(p.a.poll_send().is_none());
        p.recover();
    }
    // Garbage in every byte of a WQE never panics.
    for seed in 0..64u32 {
        let mut w = pattern(128, seed);
        let mut c = CtrlSeg::new_unchecked(&mut w[..16]);
        c.set_qpn_ds((p.a.qpn << 8) | (c.qpn_ds() & 0xff));
        p.a.post_raw(&w, true).unwrap();
        p.a.ring();
        p.run();
        p.a.drain_send();
        p.b.drain_recv();
        p.recover();
    }
}

/// A WAIT on time (opmod TIME, the capability `wait_on_time`) holds the send queue until the
/// device's real-time clock passes its value (seconds << 32 | nanoseconds; CYCLIC_SMALLER, as
/// DPDK schedules sends): the signaled NOP behind it completes only after that time, and the
/// WAIT's own CQE comes first. Before, a WAIT on time was a local QP operation error.
#[test]
fn a_wait_on_time_holds_the_send_queue_until_its_time() {
    let mut p = Pair::fl(3);
    let utc = || {
        std::time::SystemTime::now()
            .duration_since(std::time::SystemTime::UNIX_EPOCH)
            .unwrap()
    };
    let at = utc() + Duration::from_millis(200);
    let mut w = p.a.build_wqe(&SendWr::new(RcOp::Nop, &[]));
    let mut c = CtrlSegRepr::parse(&CtrlSeg::new_unchecked(&w[..16]));
    (c.opcode, c.opmod, c.ds) = (wqe::opcode::WAIT, wqe::wait_opmod::TIME, 3);
    c.emit(&mut CtrlSeg::new_unchecked(&mut w[..16]));
    w.resize(64, 0);
    let mut s = wqe::WaitSeg::new_unchecked(&mut w[16..48]);
    s.set_operation(wqe::wait_cond::CYCLIC_SMALLER);
    s.set_value((at.as_secs() << 32) | u64::from(at.subsec_nanos()));
    s.set_mask(!0);
    let waited = p.a.post_raw(&w, true).unwrap();
    let nop = p.a.build_wqe(&SendWr::new(RcOp::Nop, &[]));
    let after = p.a.post_raw(&nop, true).unwrap();
    p.a.ring();
    let first = p.send_cqe_a();
    let second = p.send_cqe_a();
    assert!(utc() >= at, "the NOP completed before the WAIT's time");
    assert_eq!((first.wqe_counter, second.wqe_counter), (waited, after));
    assert!(p.a.poll_send().is_none());
}

#[test]
fn bad_rkey_and_access_not_granted_are_remote_access_errors() {
    let mut p = Pair::fl(3);
    let qa = p.a.qpn;
    let b_no_rights =
        p.b.create_mkey(
            p.b.pdn,
            MkeyAccess {
                local_read: true,
                local_write: true,
                ..MkeyAccess::default()
            },
            0x1_0000,
            4096,
        )
        .unwrap();
    let pd2 = p.b.alloc_pd().unwrap();
    let b_other_pd =
        p.b.create_mkey(p.b.pdn, RcRigConfig::default().access, 0x2_0000, 4096)
            .and(p.b.create_mkey(pd2, RcRigConfig::default().access, 0x3_0000, 4096))
            .unwrap();
    let sg = [p.a.sge(0, 64)];
    let sg8 = [p.a.sge(0, 8)];
    let kb = p.b.key;
    let cases: Vec<(RcOp, &[Sge], u8)> = vec![
        // A key that does not exist.
        (
            RcOp::Write {
                raddr: p.b.addr(0),
                rkey: kb ^ 0x200,
            },
            &sg,
            syndrome::REMOTE_ACCESS_ERR,
        ),
        // The right key with the wrong tag byte.
        (
            RcOp::Read {
                raddr: p.b.addr(0),
                rkey: kb ^ 1,
            },
            &sg,
            syndrome::REMOTE_ACCESS_ERR,
        ),
        // Out of the key's range.
        (
            RcOp::Write {
                raddr: p.b.addr((1 << 20) - 32),
                rkey: kb,
            },
            &sg,
            syndrome::REMOTE_ACCESS_ERR,
        ),
        // A key without remote rights.
        (
            RcOp::Write {
                raddr: p.b.addr(0x1_0000),
                rkey: b_no_rights,
            },
            &sg,
            syndrome::REMOTE_ACCESS_ERR,
        ),
        (
            RcOp::Read {
                raddr: p.b.addr(0x1_0000),
                rkey: b_no_rights,
            },
            &sg,
            syndrome::REMOTE_ACCESS_ERR,
        ),
        (
            RcOp::FetchAdd {
                raddr: p.b.addr(0x1_0000),
                rkey: b_no_rights,
                add: 1,
            },
            &sg8,
            syndrome::REMOTE_ACCESS_ERR,
        ),
        // A key of another PD than the responder QP's.
        (
            RcOp::Write {
                raddr: p.b.addr(0x3_0000),
                rkey: b_other_pd,
            },
            &sg,
            syndrome::REMOTE_ACCESS_ERR,
        ),
        // A misaligned atomic is an invalid request.
        (
            RcOp::CompareSwap {
                raddr: p.b.addr(4),
                rkey: kb,
                compare: 0,
                swap: 1,
            },
            &sg8,
            syndrome::REMOTE_INVAL_REQ_ERR,
        ),
    ];
    for (op, sg, syn) in cases {
        let before = p.b.read_data(0, 64);
        p.b.post_recv(&[p.b.sge(0x5_0000, 64)]).unwrap();
        let i = p.a.send(&SendWr::new(op, sg)).unwrap();
        let c = p.send_cqe_a();
        err_req(c, syn, i);
        assert_eq!((c.wqe_opcode, c.qpn), (op.opcode(), qa));
        // Requester and responder are in ERR; the responder's posted receive flushed.
        assert_eq!(Pair::qp_state(&p.a), 6);
        assert_eq!(Pair::qp_state(&p.b), 6);
        p.run();
        let r = p.b.drain_recv();
        assert_eq!(r.len(), 1);
        assert_eq!(
            (r[0].opcode, r[0].syndrome),
            (cqe::RESP_ERR, syndrome::WR_FLUSH_ERR)
        );
        assert_eq!(p.b.read_data(0, 64), before, "nothing written");
        p.recover();
    }
    // QP access enables: B refuses remote write, read and atomics.
    p.side_b.rre = false;
    p.side_b.rwe = false;
    p.side_b.rae = false;
    p.recover();
    let ops = [
        RcOp::Write {
            raddr: p.b.addr(0),
            rkey: kb,
        },
        RcOp::Read {
            raddr: p.b.addr(0),
            rkey: kb,
        },
        RcOp::FetchAdd {
            raddr: p.b.addr(0),
            rkey: kb,
            add: 1,
        },
    ];
    for op in ops {
        let sg = if matches!(op, RcOp::FetchAdd { .. }) {
            &sg8[..]
        } else {
            &sg[..]
        };
        let i = p.a.send(&SendWr::new(op, sg)).unwrap();
        err_req(p.send_cqe_a(), syndrome::REMOTE_ACCESS_ERR, i);
        p.recover();
    }
    // SENDs still work.
    p.b.post_recv(&[p.b.sge(0, 64)]).unwrap();
    let i = p.a.send(&SendWr::new(RcOp::Send, &sg)).unwrap();
    ok_req(p.send_cqe_a(), 0x0a, i, qa, 0);
}

#[test]
fn no_receive_posted_exhausts_rnr_retries() {
    let side = Side {
        rnr_retry: 2,
        min_rnr_nak: 1,
        ..Side::new(3)
    };
    for mode in [Mode::ForceLoopback, Mode::Linked] {
        let mut p = Pair::new(mode, RcRigConfig::default(), side, side);
        let sg = [p.a.sge(0, 100)];
        let i = p.a.send(&SendWr::new(RcOp::Send, &sg)).unwrap();
        err_req(p.send_cqe_a(), syndrome::RNR_RETRY_EXC_ERR, i);
        // The first try and two retries were each refused.
        assert_eq!(p.stats().rnr_naks_sent, 3);
        assert_eq!(Pair::qp_state(&p.a), 6);
        // RNR does not hurt the responder.
        assert_eq!(Pair::qp_state(&p.b), 3);
        // WRITE with immediate needs a receive WQE too.
        p.recover();
        let op = RcOp::WriteImm {
            raddr: p.b.addr(0),
            rkey: p.b.key,
            imm: 1,
        };
        let i = p.a.send(&SendWr::new(op, &sg)).unwrap();
        err_req(p.send_cqe_a(), syndrome::RNR_RETRY_EXC_ERR, i);
        // rnr_retry 0: the first RNR NAK ends it.
        p.side_a.rnr_retry = 0;
        p.recover();
        let before = p.stats().rnr_naks_sent;
        let i = p.a.send(&SendWr::new(RcOp::Send, &sg)).unwrap();
        err_req(p.send_cqe_a(), syndrome::RNR_RETRY_EXC_ERR, i);
        assert_eq!(p.stats().rnr_naks_sent, before + 1);
    }
}

/// `SENDS` SENDs in flight against no receive: 50 RNR episodes, none fatal, then receives
/// posted and every message delivered. Returns the capture of the exchange (device A's port).
fn rnr_in_flight(mode: Mode, side: Side) -> Vec<u8> {
    const SENDS: u16 = 4;
    let forever = side;
    let mut p = Pair::new(mode, RcRigConfig::default(), forever, forever);
    let buf = SharedBuf::default();
    p.devs[0].capture(buf.clone()).unwrap();
    let mut msgs = Vec::new();
    let mut idx = Vec::new();
    for k in 0..SENDS {
        let off = usize::from(k) * 0x1000;
        let msg = pattern(1000, u32::from(k) + 7);
        p.a.write_data(off, &msg);
        let sg = [p.a.sge(off, 1000)];
        idx.push(p.a.send(&SendWr::new(RcOp::Send, &sg)).unwrap());
        msgs.push(msg);
    }
    // 50 RNR episodes, none of them fatal.
    let episodes = p.wait(Duration::from_secs(10), |p| {
        assert!(
            p.a.poll_send().is_none(),
            "a SEND completed with no receive"
        );
        (p.stats().rnr_naks_sent >= 50).then_some(())
    });
    assert!(episodes.is_some(), "{:?}", p.stats());
    assert_eq!(Pair::qp_state(&p.a), 3, "the requester is still in RTS");
    for k in 0..SENDS {
        p.b.post_recv(&[p.b.sge(0x1_0000 + usize::from(k) * 0x1000, 4096)])
            .unwrap();
    }
    for (k, &i) in idx.iter().enumerate() {
        ok_req(p.send_cqe_a(), 0x0a, i, p.a.qpn, 0);
        let c = p.recv_cqe_b();
        assert_eq!(c.byte_cnt, 1000);
        assert_eq!(p.b.read_data(0x1_0000 + k * 0x1000, 1000), msgs[k]);
    }
    assert_eq!(p.stats().error_completions, 0, "{:?}", p.stats());
    p.devs[0].stop_captures().unwrap();
    let bytes = buf.0.lock().unwrap().clone();
    bytes
}

/// The sides of [`rnr_in_flight`]: RNR retries without end, one transport retry.
fn rnr_forever() -> Side {
    Side {
        rnr_retry: 7,
        retry_count: 1,
        min_rnr_nak: 1,
        ..Side::new(1)
    }
}

/// The RNR episodes of a linked exchange as tshark dissects them: RNR NAKs, and no sequence
/// error NAK.
#[test]
#[cfg_attr(no_tshark, ignore = "tshark is not installed")]
fn rnr_episodes_dissect_in_tshark() {
    let bytes = rnr_in_flight(Mode::Linked, rnr_forever());
    let text = tshark_clean(&bytes, "rnr");
    assert!(
        text.matches("RNR Nak (1)").count() >= 50,
        "tshark shows the RNR NAKs"
    );
    assert!(!text.contains("PSN Sequence Error"), "no sequence NAK");
}

/// Regression: with no receive posted, the responder sent an RNR NAK and then a PSN sequence
/// NAK for the packets already in flight behind it, and the requester counted each sequence
/// NAK against `retry_count`: after a few episodes the QP failed with retries exceeded,
/// though `rnr_retry = 7` retries forever. IBA: after an RNR NAK the requester waits the RNR
/// timer and resends from the NAK'd PSN; packets behind it are not separate retry events;
/// `rnr_retry` counts RNR NAKs, `retry_count` timeouts and sequence errors. Several
/// multi-packet SENDs are in flight each time, and `retry_count` is 1, so one stray sequence
/// NAK would show.
#[test]
fn rnr_episodes_with_packets_in_flight_are_not_sequence_errors() {
    const SENDS: u16 = 4;
    for mode in [Mode::ForceLoopback, Mode::Linked] {
        rnr_in_flight(mode, rnr_forever());
    }
    // rnr_retry 2: the third RNR NAK ends it, with the RNR error, not a transport retry one.
    let twice = Side {
        rnr_retry: 2,
        retry_count: 0,
        min_rnr_nak: 1,
        ..Side::new(1)
    };
    for mode in [Mode::ForceLoopback, Mode::Linked] {
        let mut p = Pair::new(mode, RcRigConfig::default(), twice, twice);
        let mut first = None;
        for k in 0..SENDS {
            let sg = [p.a.sge(usize::from(k) * 0x1000, 1000)];
            let i = p.a.send(&SendWr::new(RcOp::Send, &sg)).unwrap();
            first.get_or_insert(i);
        }
        err_req(p.send_cqe_a(), syndrome::RNR_RETRY_EXC_ERR, first.unwrap());
        assert_eq!(p.stats().rnr_naks_sent, 3, "{:?}", p.stats());
    }
}

#[test]
fn rnr_then_success_once_a_receive_is_posted() {
    // 0.96 ms between retries, retried forever.
    let side = Side {
        rnr_retry: 7,
        min_rnr_nak: 13,
        ..Side::new(2)
    };
    for mode in [Mode::ForceLoopback, Mode::Linked] {
        let mut p = Pair::new(mode, RcRigConfig::default(), side, side);
        let msg = pattern(3000, 21);
        p.a.write_data(0, &msg);
        let sg = [p.a.sge(0, 3000)];
        let i = p.a.send(&SendWr::new(RcOp::Send, &sg)).unwrap();
        // The engine goes idle while the RNR timer runs: a waiting retry is not work.
        p.run();
        assert!(p.a.poll_send().is_none());
        std::thread::sleep(Duration::from_millis(5));
        p.run();
        assert!(p.stats().rnr_naks_sent >= 2, "{:?}", p.stats());
        assert!(p.a.poll_send().is_none());
        let r = p.b.post_recv(&[p.b.sge(0x1_0000, 4096)]).unwrap();
        ok_req(p.send_cqe_a(), 0x0a, i, p.a.qpn, 0);
        let c = p.recv_cqe_b();
        assert_eq!(
            (c.opcode, c.byte_cnt, c.wqe_counter),
            (cqe::RESP_SEND, 3000, r)
        );
        assert_eq!(p.b.read_data(0x1_0000, 3000), msg);
        assert_eq!(p.stats().error_completions, 0);
    }
}

#[test]
fn receive_too_small_is_a_length_error_on_both_sides() {
    for mode in [Mode::ForceLoopback, Mode::Linked] {
        let mut p = Pair::new(mode, RcRigConfig::default(), Side::new(1), Side::new(1));
        let r0 =
            p.b.post_recv(&[p.b.sge(0, 100), p.b.sge(0x1000, 100)])
                .unwrap();
        let r1 = p.b.post_recv(&[p.b.sge(0x2000, 4096)]).unwrap();
        let sg = [p.a.sge(0, 1000)];
        let i = p.a.send(&SendWr::new(RcOp::Send, &sg)).unwrap();
        err_req(p.send_cqe_a(), syndrome::REMOTE_INVAL_REQ_ERR, i);
        p.run();
        let r = p.b.drain_recv();
        assert_eq!(r.len(), 2, "{r:?}");
        assert_eq!(
            (r[0].opcode, r[0].syndrome, r[0].wqe_counter),
            (cqe::RESP_ERR, syndrome::LOCAL_LENGTH_ERR, r0)
        );
        assert_eq!(
            (r[1].opcode, r[1].syndrome, r[1].wqe_counter),
            (cqe::RESP_ERR, syndrome::WR_FLUSH_ERR, r1)
        );
        assert_eq!(Pair::qp_state(&p.b), 6);
        // A receive posted in ERR flushes too.
        let r2 = p.b.post_recv(&[p.b.sge(0, 64)]).unwrap();
        p.run();
        let r = p.b.drain_recv();
        assert_eq!(
            (r[0].syndrome, r[0].wqe_counter),
            (syndrome::WR_FLUSH_ERR, r2)
        );
        // A bad receive lkey: LOCAL_PROT_ERR at the responder, remote operational error at
        // the requester.
        p.recover();
        let bad = Sge {
            lkey: Lkey(p.b.key ^ 0x300),
            ..p.b.sge(0, 4096)
        };
        let r3 = p.b.post_recv(&[bad]).unwrap();
        let i = p.a.send(&SendWr::new(RcOp::Send, &sg)).unwrap();
        err_req(p.send_cqe_a(), syndrome::REMOTE_OP_ERR, i);
        let c = p.recv_cqe_b();
        assert_eq!(
            (c.opcode, c.syndrome, c.wqe_counter),
            (cqe::RESP_ERR, syndrome::LOCAL_PROT_ERR, r3)
        );
    }
}

#[test]
fn move_to_err_flushes_posted_work_and_reset_recovers() {
    let mut p = Pair::linked(3);
    let sg = [p.a.sge(0, 64)];
    let r0 = p.a.post_recv(&[p.a.sge(0x1000, 64)]).unwrap();
    let r1 = p.a.post_recv(&[p.a.sge(0x2000, 64)]).unwrap();
    p.a.modify(Qp2Err, QpAttr::default()).unwrap();
    let i0 = p.a.post_send(&SendWr::new(RcOp::Send, &sg)).unwrap();
    let i1 =
        p.a.post_send(&SendWr {
            signaled: false,
            ..SendWr::new(
                RcOp::Read {
                    raddr: p.b.addr(0),
                    rkey: p.b.key,
                },
                &sg,
            )
        })
        .unwrap();
    p.a.ring();
    p.run();
    let s = p.a.drain_send();
    assert_eq!(s.len(), 2);
    err_req(s[0], syndrome::WR_FLUSH_ERR, i0);
    err_req(s[1], syndrome::WR_FLUSH_ERR, i1);
    assert_eq!((s[1].wqe_opcode, s[1].qpn), (0x10, p.a.qpn));
    let r = p.a.drain_recv();
    assert_eq!(r.len(), 2);
    assert_eq!(
        (r[0].syndrome, r[0].wqe_counter),
        (syndrome::WR_FLUSH_ERR, r0)
    );
    assert_eq!(
        (r[1].syndrome, r[1].wqe_counter),
        (syndrome::WR_FLUSH_ERR, r1)
    );
    // Nothing was sent.
    assert_eq!(p.stats().tx_packets, 0);
    // RST -> INIT -> RTR -> RTS, then traffic works again in both directions.
    p.recover();
    for _ in 0..3 {
        p.b.post_recv(&[p.b.sge(0, 64)]).unwrap();
        let i = p.a.send(&SendWr::new(RcOp::Send, &sg)).unwrap();
        ok_req(p.send_cqe_a(), 0x0a, i, p.a.qpn, 0);
        assert_eq!(p.recv_cqe_b().opcode, cqe::RESP_SEND);
    }
    assert_eq!(i0, 0, "indices start at 0 after a reset");
}

#[test]
fn unanswered_requests_exhaust_transport_retries() {
    // ~4 ms ACK timeout, 2 retries.
    let side = Side {
        ack_timeout: 10,
        retry_count: 2,
        ..Side::new(3)
    };
    let mut p = Pair::new(Mode::Linked, RcRigConfig::default(), side, side);
    // The responder is not listening.
    p.b.reset().unwrap();
    let sg = [p.a.sge(0, 64)];
    let start = Instant::now();
    let i = p.a.send(&SendWr::new(RcOp::Send, &sg)).unwrap();
    err_req(p.send_cqe_a(), syndrome::TRANSPORT_RETRY_EXC_ERR, i);
    assert!(start.elapsed() >= Duration::from_millis(12));
    let s = p.stats();
    assert_eq!((s.timeouts, s.retransmits), (3, 2), "{s:?}");
    assert_eq!(s.dropped, 3, "three packets to a QP in RST");
    // A cable to nowhere.
    p.devs[0].set_port(PortMode::Down);
    p.a.reset().unwrap();
    p.a.connect(p.side_a.attr(p.b.qpn, PSN_A, PSN_B)).unwrap();
    let i =
        p.a.send(&SendWr::new(
            RcOp::Read {
                raddr: p.b.addr(0),
                rkey: p.b.key,
            },
            &sg,
        ))
        .unwrap();
    err_req(p.send_cqe_a(), syndrome::TRANSPORT_RETRY_EXC_ERR, i);
}

#[test]
fn qp_context_follows_each_transition() {
    let dev = Device::new(Profile::bf3());
    let ctx = dev.open_devx();
    let rig = RcRig::new(Arc::clone(&ctx), RcRigConfig::default()).unwrap();
    let peer = PortAddress {
        mac: MAC_B,
        ipv4: IP_B,
        gid: {
            let mut g = [0u8; 16];
            g[10] = 0xff;
            g[11] = 0xff;
            g[12..].copy_from_slice(&IP_B);
            g
        },
    };
    let attr = QpAttr {
        rre: true,
        rwe: false,
        rae: true,
        vhca_port_num: 1,
        mtu: 4,
        remote_qpn: 0x4321,
        next_rcv_psn: 0x12_3456,
        log_rra_max: 2,
        min_rnr_nak: 12,
        fl: false,
        rmac: peer.mac,
        rgid: peer.gid,
        src_addr_index: 1,
        hop_limit: 33,
        next_send_psn: 0xab_cdef,
        log_sra_max: 1,
        retry_count: 5,
        rnr_retry: 6,
        ack_timeout: 17,
        opt_param_mask: 0,
        q_key: 0x1111_2222,
    };
    let q = |rig: &RcRig| rig.query().unwrap();
    fn get<T>(b: &[u8], f: mlx5_dpa::mlx5::Field<l::qpc::Layout, T>) -> u64 {
        View::<l::qpc::Layout>::new(b).unwrap().get(f)
    }
    fn path<T>(
        f: mlx5_dpa::mlx5::Field<l::ads::Layout, T>,
    ) -> mlx5_dpa::mlx5::Field<l::qpc::Layout, T> {
        l::qpc::primary_address_path.at(f)
    }
    use l::{ads, qpc};
    // RST2INIT takes only its fields.
    rig.modify(Rst2Init, attr).unwrap();
    let b = q(&rig);
    assert_eq!(
        (
            get(&b, qpc::state),
            get(&b, qpc::rre),
            get(&b, qpc::rwe),
            get(&b, qpc::rae)
        ),
        (1, 1, 0, 1)
    );
    assert_eq!(get(&b, path(ads::vhca_port_num)), 1);
    assert_eq!(get(&b, qpc::pm_state), 3);
    assert_eq!(get(&b, qpc::q_key), 0x1111_2222);
    assert_eq!(get(&b, qpc::mtu), 0, "INIT2RTR's field not taken yet");
    assert_eq!(get(&b, qpc::next_send_psn), 0);
    // INIT2RTR.
    rig.modify(Init2Rtr, attr).unwrap();
    let b = q(&rig);
    assert_eq!(get(&b, qpc::state), 2);
    assert_eq!(get(&b, qpc::mtu), 4);
    assert_eq!(get(&b, qpc::log_msg_max), 30);
    assert_eq!(get(&b, qpc::remote_qpn), 0x4321);
    assert_eq!(get(&b, qpc::next_rcv_psn), 0x12_3456);
    assert_eq!(get(&b, qpc::log_rra_max), 2);
    assert_eq!(get(&b, qpc::min_rnr_nak), 12);
    assert_eq!(get(&b, path(ads::rmac_47_32)), 0x0200);
    assert_eq!(get(&b, path(ads::rmac_31_0)), 0x5e10_000b);
    assert_eq!(get(&b, path(ads::hop_limit)), 33);
    let rgid: Vec<u8> = (0..16)
        .map(|i| get(&b, path(ads::rgid_rip.at(i).unwrap())) as u8)
        .collect();
    assert_eq!(rgid, peer.gid);
    assert_eq!(
        get(&b, qpc::next_send_psn),
        0,
        "RTR2RTS's field not taken yet"
    );
    assert_eq!(get(&b, qpc::rre), 1, "earlier fields kept");
    // RTR2RTS.
    rig.modify(Rtr2Rts, attr).unwrap();
    let b = q(&rig);
    assert_eq!(get(&b, qpc::state), 3);
    assert_eq!(get(&b, qpc::next_send_psn), 0xab_cdef);
    assert_eq!(get(&b, qpc::log_sra_max), 1);
    assert_eq!(get(&b, qpc::retry_count), 5);
    assert_eq!(get(&b, qpc::rnr_retry), 6);
    assert_eq!(get(&b, path(ads::ack_timeout)), 17);
    assert_eq!(get(&b, qpc::mtu), 4);
    // RTS2RTS changes the retry attributes, not the send PSN.
    rig.modify(
        Rts2Rts,
        QpAttr {
            retry_count: 1,
            next_send_psn: 7,
            ..attr
        },
    )
    .unwrap();
    let b = q(&rig);
    assert_eq!(get(&b, qpc::retry_count), 1);
    assert_eq!(get(&b, qpc::next_send_psn), 0xab_cdef);
    // RTS2RTS changes only what its opt_param_mask names: here the retry count, not the RNR
    // retry count or the ACK timeout given beside it.
    rig.modify(
        Rts2Rts,
        QpAttr {
            retry_count: 2,
            rnr_retry: 0,
            ack_timeout: 3,
            opt_param_mask: mlx5_dpa::mlx5::cmd::opt_param::RETRY_COUNT,
            ..attr
        },
    )
    .unwrap();
    let b = q(&rig);
    assert_eq!(get(&b, qpc::retry_count), 2);
    assert_eq!(get(&b, qpc::rnr_retry), 6);
    assert_eq!(get(&b, path(ads::ack_timeout)), 17);

    // INIT2RTR refusals: a GID that is not IPv4-mapped, a GID index not populated, a port
    // that does not exist.
    let mut rig = rig;
    rig.reset().unwrap();
    rig.modify(Rst2Init, attr).unwrap();
    let refused = |r: Result<(), DevxError>, want: mlx5_sim::Check| {
        assert_eq!(
            refusal(r.unwrap_err()),
            (want.status, want.syndrome),
            "{want}"
        );
    };
    refused(
        rig.modify(
            Init2Rtr,
            QpAttr {
                rgid: [0xfe; 16],
                ..attr
            },
        ),
        check::GID_NOT_IPV4,
    );
    refused(
        rig.modify(
            Init2Rtr,
            QpAttr {
                src_addr_index: 2,
                ..attr
            },
        ),
        check::BAD_GID_INDEX,
    );
    // The link-local entry: not carried (RoCE v2 over IPv4 only).
    refused(
        rig.modify(
            Init2Rtr,
            QpAttr {
                src_addr_index: 0,
                ..attr
            },
        ),
        check::GID_NOT_IPV4,
    );
    refused(
        rig.modify(
            Init2Rtr,
            QpAttr {
                vhca_port_num: 2,
                ..attr
            },
        ),
        check::BAD_PORT,
    );
    // Force loopback needs no address.
    rig.modify(
        Init2Rtr,
        QpAttr {
            fl: true,
            rgid: [0; 16],
            ..attr
        },
    )
    .unwrap();
    drop(rig);
    drop(ctx);
    assert!(dev.inventory().is_empty(), "{}", dev.inventory());
}

#[test]
fn query_qp_reports_live_psns_and_counters_and_reset_clears_them() {
    let mut p = Pair::fl(3);
    let sg = [p.a.sge(0, 3000)];
    p.b.post_recv(&[p.b.sge(0, 4096)]).unwrap();
    let i = p.a.send(&SendWr::new(RcOp::Send, &sg)).unwrap();
    ok_req(p.send_cqe_a(), 0x0a, i, p.a.qpn, 0);
    fn get<T>(rig: &RcRig, f: mlx5_dpa::mlx5::Field<l::qpc::Layout, T>) -> u64 {
        View::<l::qpc::Layout>::new(&rig.query().unwrap())
            .unwrap()
            .get(f)
    }
    // 3000 bytes at 1024-byte MTU: three PSNs, across the 24-bit wrap.
    assert_eq!(
        get(&p.a, l::qpc::next_send_psn),
        u64::from((PSN_A + 3) & 0xff_ffff)
    );
    assert_eq!(
        get(&p.b, l::qpc::next_rcv_psn),
        u64::from((PSN_A + 3) & 0xff_ffff)
    );
    assert_eq!(get(&p.a, l::qpc::hw_sq_wqebb_counter), 1);
    assert_eq!(get(&p.b, l::qpc::hw_rq_counter), 1);
    p.a.reset().unwrap();
    assert_eq!(get(&p.a, l::qpc::hw_sq_wqebb_counter), 0);
    assert_eq!(get(&p.a, l::qpc::state), 0);
}

#[test]
fn port_address_commands() {
    let dev = Device::new(Profile::bf3());
    let ctx = dev.open_devx();
    let v = devx::exec(&*ctx, &QueryNicVportContext).unwrap();
    assert_eq!(v.mac, Profile::bf3().mac);
    assert_eq!(v.mtu, 1500);
    assert!(v.roce_en);
    let r = devx::exec(&*ctx, &QueryRoceAddress(1)).unwrap();
    assert_eq!(r.mac, Profile::bf3().mac);
    assert_eq!(&r.gid[..12], &[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff]);
    assert_eq!(&r.gid[12..], &Profile::bf3().ipv4);
    assert_eq!((r.roce_version, r.roce_l3_type, r.vlan), (2, 0, None));
    // Index 0: the link-local GID of the MAC's EUI-64, RoCE v2 over IPv6.
    let ll = devx::exec(&*ctx, &QueryRoceAddress(0)).unwrap();
    let m = Profile::bf3().mac;
    assert_eq!(
        ll.gid,
        [
            0xfe,
            0x80,
            0,
            0,
            0,
            0,
            0,
            0,
            m[0] ^ 2,
            m[1],
            m[2],
            0xff,
            0xfe,
            m[3],
            m[4],
            m[5]
        ]
    );
    assert_eq!((ll.roce_version, ll.roce_l3_type), (2, 1));
    // Indexes 0 and 1 are populated.
    let e = devx::exec(&*ctx, &QueryRoceAddress(2)).unwrap_err();
    assert_eq!(
        refusal(e),
        (check::BAD_GID_INDEX.status, check::BAD_GID_INDEX.syndrome)
    );
    let mut inbox = mlx5_dpa::mlx5::cmd::encode_inbox(&QueryRoceAddress(2)).unwrap();
    let mut out = vec![0u8; 0x30];
    assert_eq!(
        dev.kernel_command(&inbox, &mut out),
        Err(check::BAD_GID_INDEX)
    );
    // other_vport is not for a function's own context.
    inbox = mlx5_dpa::mlx5::cmd::encode_inbox(&QueryNicVportContext).unwrap();
    inbox[8] = 0x80;
    let mut out = vec![0u8; 0x110];
    assert_eq!(
        dev.kernel_command(&inbox, &mut out),
        Err(check::OTHER_VPORT)
    );
    // The address can be changed, and the commands follow.
    dev.set_port_address(MAC_B, IP_B);
    let a = dev.port_address();
    assert_eq!((a.mac, a.ipv4), (MAC_B, IP_B));
    let v = devx::exec(&*ctx, &QueryNicVportContext).unwrap();
    assert_eq!(v.mac, MAC_B);
    let r = devx::exec(&*ctx, &QueryRoceAddress(1)).unwrap();
    assert_eq!((r.gid, r.mac), (a.gid, MAC_B));
}

/// A frame of RoCE v2 to `addr` (UDP 4791), with `payload` after the UDP header and a zero
/// ICRC unless `icrc` is set.
fn roce_frame(addr: PortAddress, payload: &[u8], icrc: bool) -> Vec<u8> {
    let mut f = vec![0u8; 42];
    f[0..6].copy_from_slice(&addr.mac);
    f[6..12].copy_from_slice(&MAC_B);
    f[12..14].copy_from_slice(&[0x08, 0x00]);
    f[14] = 0x45;
    let total = (20 + 8 + payload.len() + 4) as u16;
    f[16..18].copy_from_slice(&total.to_be_bytes());
    f[22] = 64;
    f[23] = 17;
    f[26..30].copy_from_slice(&IP_B);
    f[30..34].copy_from_slice(&addr.ipv4);
    f[34..36].copy_from_slice(&0xc000u16.to_be_bytes());
    f[36..38].copy_from_slice(&4791u16.to_be_bytes());
    f[38..40].copy_from_slice(&(total - 20).to_be_bytes());
    f.extend_from_slice(payload);
    let crc = if icrc {
        mlx5_sim::port::roce::icrc(&f[14..]).unwrap_or(0)
    } else {
        0
    };
    f.extend_from_slice(&crc.to_le_bytes());
    f
}

#[test]
fn garbage_frames_are_counted_never_fatal() {
    // An Ethernet rig sends hand-made frames to the port's own RoCE address; the port loops
    // them back into the RC receiver.
    let dev = Device::new(Profile::bf3());
    let ctx = dev.open_devx();
    let mut eth = EthRig::new(Arc::clone(&ctx), RigConfig::default()).unwrap();
    eth.fill_rq();
    let me = dev.port_address();
    // A SEND_ONLY to QP 0x4000 (which does not exist yet), good ICRC.
    let mut bth = vec![0x04, 0x40, 0xff, 0xff, 0, 0, 0x40, 0x00, 0x80, 0, 0, 1];
    bth.extend_from_slice(b"data");
    let frames = vec![
        roce_frame(me, &bth, true),
        roce_frame(me, &bth, false),
        roce_frame(me, &bth[..5], true),
        // An opcode the model does not carry (UD SEND_ONLY).
        roce_frame(me, &[0x64, 0, 0xff, 0xff, 0, 0, 0x40, 0, 0, 0, 0, 1], true),
        // A P_Key not in the table.
        roce_frame(me, &[0x04, 0, 0x12, 0x34, 0, 0, 0x40, 0, 0, 0, 0, 1], true),
    ];
    for f in &frames {
        eth.post_send(f).unwrap();
    }
    for seed in 0..200u32 {
        let mut f = roce_frame(me, &pattern(12 + (seed as usize % 80), seed), seed % 2 == 0);
        // Random lengths in the IP and UDP headers, now and then.
        if seed % 5 == 0 {
            f[16] = seed as u8;
            f[39] = (seed >> 1) as u8;
        }
        eth.post_send(&f).unwrap();
        if eth.sq_outstanding() > 512 {
            eth.ring_sq();
            dev.run_until_idle();
            eth.poll_tx(usize::MAX);
        }
    }
    eth.ring_sq();
    dev.run_until_idle();
    let s = dev.stats();
    assert_eq!(
        s.rc.rx_packets + s.rc.icrc_errors + s.rc.malformed,
        205,
        "{:?}",
        s.rc
    );
    assert!(s.rc.icrc_errors >= 50, "{:?}", s.rc);
    assert!(s.rc.malformed >= 3);
    assert!(s.rc.dropped >= 1);
    // None reached Ethernet steering.
    assert_eq!(s.port.rx_frames, 0);
    // The port still works for RC afterwards.
    drop(eth);
    let mut p = Pair::fl(3);
    every_operation(&mut p);
}

#[derive(Clone, Default)]
struct SharedBuf(Arc<Mutex<Vec<u8>>>);
impl std::io::Write for SharedBuf {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Dissects a pcap with tshark and checks that no frame is malformed and no dissector reports
/// an error; returns the verbose text. Only for tests ignored where tshark is missing.
fn tshark_clean(bytes: &[u8], tag: &str) -> String {
    let path = std::env::temp_dir().join(format!("mlx5-sim-rc-{tag}-{}.pcap", std::process::id()));
    std::fs::write(&path, bytes).unwrap();
    // The payloads are test patterns, not upper-layer protocols: Wireshark's dissectors of
    // protocols over InfiniBand are turned off (its RPC-over-RDMA heuristic, in 4.0, throws
    // "malformed" on a zero-length SEND, which is a legal message).
    let mut cmd = std::process::Command::new("tshark");
    for proto in [
        "smc",
        "smb_direct",
        "rpcordma",
        "nvme-rdma",
        "lnet",
        "iser",
        "infiniband.eoib",
        "infiniband_sdp",
        "fcoib",
    ] {
        cmd.arg("--disable-protocol").arg(proto);
    }
    let out = cmd.arg("-r").arg(&path).arg("-V").output();
    let _ = std::fs::remove_file(&path);
    let out = out.expect("tshark runs (build.rs found it on PATH)");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !text.contains("Malformed"),
        "tshark found a malformed packet"
    );
    assert!(
        !text.contains("Expert Info (Error"),
        "tshark reported an error"
    );
    text
}

/// A linked exchange of every operation and two NAKs, captured: the frames of the pcap, with
/// every ICRC right.
fn linked_capture() -> (Vec<u8>, usize) {
    let mut p = Pair::linked(1);
    let buf = SharedBuf::default();
    p.devs[0].capture(buf.clone()).unwrap();
    every_operation(&mut p);
    multi_packet(&mut p);
    // An RNR NAK and a remote access NAK for the record.
    let sg = [p.a.sge(0, 64)];
    p.side_a.rnr_retry = 0;
    p.recover();
    let i = p.a.send(&SendWr::new(RcOp::Send, &sg)).unwrap();
    err_req(p.send_cqe_a(), syndrome::RNR_RETRY_EXC_ERR, i);
    p.recover();
    let op = RcOp::Write {
        raddr: p.b.addr(0),
        rkey: 0x1234_5600,
    };
    let i = p.a.send(&SendWr::new(op, &sg)).unwrap();
    err_req(p.send_cqe_a(), syndrome::REMOTE_ACCESS_ERR, i);
    p.devs[0].stop_captures().unwrap();
    let bytes = buf.0.lock().unwrap().clone();
    let frames = mlx5_sim::port::pcap::read_pcap(&bytes[..]).unwrap();
    assert!(frames.len() > 100);
    // tshark 4.0 shows the ICRC but has no preference to verify it: every captured frame's
    // ICRC is recomputed here (the function is checked against a ConnectX-4 Lx capture in
    // the unit tests of `port::roce`).
    for (_, f) in &frames {
        let n = f.len();
        let c = mlx5_sim::port::roce::icrc(&f[14..n - 4]).unwrap();
        assert_eq!(f[n - 4..], c.to_le_bytes());
    }
    if std::env::var_os("KEEP_PCAP").is_some() {
        std::fs::write("/tmp/rc-keep.pcap", &bytes).unwrap();
    }
    let n = frames.len();
    (bytes, n)
}

#[test]
fn pcap_of_a_linked_exchange_has_every_icrc_right() {
    let (_, frames) = linked_capture();
    assert!(frames > 100);
}

/// The capture as Wireshark's RoCE dissector reads it: every opcode and header of the
/// exchange, one BTH per frame.
#[test]
#[cfg_attr(no_tshark, ignore = "tshark is not installed")]
fn pcap_of_a_linked_exchange_dissects_as_roce() {
    let (bytes, frames) = linked_capture();
    let text = tshark_clean(&bytes, "linked");
    for want in [
        "InfiniBand",
        "Base Transport Header",
        "(RC) - SEND Only (4)",
        "(RC) - SEND First (0)",
        "(RC) - SEND Middle (1)",
        "(RC) - SEND Last with Immediate (3)",
        "(RC) - RDMA WRITE Only (10)",
        "(RC) - RDMA WRITE First (6)",
        "(RC) - RDMA WRITE Middle (7)",
        "(RC) - RDMA WRITE Last (8)",
        "(RC) - RDMA WRITE Last with Immediate (9)",
        "(RC) - RDMA READ Request (12)",
        "(RC) - RDMA READ response First (13)",
        "(RC) - RDMA READ response Middle (14)",
        "(RC) - RDMA READ response Last (15)",
        "(RC) - Acknowledge (17)",
        "(RC) - ATOMIC Acknowledge (18)",
        "(RC) - CmpSwap (19)",
        "(RC) - FetchAdd (20)",
        "RETH - RDMA Extended Transport Header",
        "AETH - ACK Extended Transport Header",
        "AtomicETH - Atomic Extended Transport Header",
        "ATOMICACKETH - Atomic ACK Extended Transport Header",
        "IMMDT - Immediate Data Extended Transport Header",
        "Invariant CRC",
        "RNR Nak",
    ] {
        assert!(text.contains(want), "tshark output lacks {want:?}");
    }
    // Every frame is RoCE: one BTH per frame.
    assert_eq!(text.matches("Base Transport Header").count(), frames);
}

#[test]
fn work_posted_before_rts_waits_and_doorbells_are_routed_to_qps() {
    let mut p = Pair::fl(3);
    p.a.reset().unwrap();
    let sg = [p.a.sge(0, 64)];
    p.b.post_recv(&[p.b.sge(0, 64)]).unwrap();
    // Posted in INIT, still there in RTR (the device takes send WQEs in RTS only) ...
    let attr = p.side_a.attr(p.b.qpn, PSN_A, PSN_B);
    p.a.modify(Rst2Init, attr).unwrap();
    let i = p.a.send(&SendWr::new(RcOp::Send, &sg)).unwrap();
    p.run();
    assert!(p.a.poll_send().is_none());
    p.a.modify(Init2Rtr, attr).unwrap();
    p.run();
    assert!(p.a.poll_send().is_none());
    assert_eq!(p.stats().tx_packets, 0);
    // ... and runs in RTS.
    p.a.modify(Rtr2Rts, attr).unwrap();
    ok_req(p.send_cqe_a(), 0x0a, i, p.a.qpn, 0);
    assert_eq!(p.recv_cqe_b().opcode, cqe::RESP_SEND);
    assert_eq!(p.devs[0].stats().port.dbr_without_doorbell, 0);
    // A doorbell record moved without a UAR doorbell: hardware reads the record when rung, so
    // the WQE waits (counted), and goes once the doorbell comes.
    p.b.post_recv(&[p.b.sge(0, 64)]).unwrap();
    let i = p.a.post_send(&SendWr::new(RcOp::Send, &sg)).unwrap();
    p.a.update_record();
    p.run();
    p.run();
    assert!(p.a.poll_send().is_none(), "sent without a doorbell");
    assert!(p.devs[0].stats().port.dbr_without_doorbell >= 1);
    p.a.ring();
    ok_req(p.send_cqe_a(), 0x0a, i, p.a.qpn, 0);
}

#[test]
fn retransmitted_requests_are_answered_but_not_executed_twice() {
    // ~1 ms ACK timeout; B is not stepped at first, so A times out and sends everything again.
    let side = Side {
        ack_timeout: 8,
        retry_count: 7,
        ..Side::new(1)
    };
    let mut p = Pair::new(Mode::Linked, RcRigConfig::default(), side, side);
    p.b.write_data(0x1_0000, &100u64.to_le_bytes());
    let data = pattern(2000, 31);
    p.a.write_data(0, &data);
    p.b.write_data(0x3_0000, &data);
    p.b.post_recv(&[p.b.sge(0x4_0000, 4096)]).unwrap();
    let (kb, sg8) = (p.b.key, [p.a.sge(0x8000, 8)]);
    let sg = [p.a.sge(0, 2000)];
    let read_sg = [p.a.sge(0x9000, 2000)];
    let ops = [
        (
            RcOp::FetchAdd {
                raddr: p.b.addr(0x1_0000),
                rkey: kb,
                add: 1,
            },
            &sg8[..],
        ),
        (
            RcOp::Write {
                raddr: p.b.addr(0x2_0000),
                rkey: kb,
            },
            &sg[..],
        ),
        (RcOp::Send, &sg[..]),
        (
            RcOp::Read {
                raddr: p.b.addr(0x3_0000),
                rkey: kb,
            },
            &read_sg[..],
        ),
    ];
    let mut idx = Vec::new();
    for (op, sg) in ops {
        idx.push(p.a.post_send(&SendWr::new(op, sg)).unwrap());
    }
    p.a.ring();
    for _ in 0..3 {
        p.devs[0].run_until_idle();
        std::thread::sleep(Duration::from_millis(3));
        p.devs[0].run_until_idle();
    }
    assert!(p.devs[0].stats().rc.retransmits >= 2);
    for (i, (op, _)) in idx.into_iter().zip(ops) {
        let bytes = match op {
            RcOp::FetchAdd { .. } => 8,
            RcOp::Read { .. } => 2000,
            _ => 0,
        };
        ok_req(p.send_cqe_a(), op.opcode(), i, p.a.qpn, bytes);
    }
    p.run();
    assert!(p.a.poll_send().is_none(), "one completion per WQE");
    // The add happened once; its original value came back.
    assert_eq!(p.b.read_data(0x1_0000, 8), 101u64.to_le_bytes());
    assert_eq!(p.a.read_data(0x8000, 8), 100u64.to_le_bytes());
    assert_eq!(p.b.read_data(0x2_0000, 2000), data);
    assert_eq!(p.a.read_data(0x9000, 2000), data);
    // One receive completion for the SEND.
    let r = p.b.drain_recv();
    assert_eq!(r.len(), 1);
    assert_eq!((r[0].opcode, r[0].byte_cnt), (cqe::RESP_SEND, 2000));
    let s = p.stats();
    assert!(s.duplicates > 0, "{s:?}");
    assert_eq!(s.error_completions, 0);
}

#[test]
fn a_lost_packet_is_recovered_by_a_sequence_nak() {
    let mut p = Pair::linked(3);
    let (a, b) = (p.devs[0].clone(), p.devs[1].clone());
    let m1 = pattern(100, 41);
    let m2 = pattern(200, 42);
    p.a.write_data(0, &m1);
    p.a.write_data(4096, &m2);
    p.b.post_recv(&[p.b.sge(0x1_0000, 4096)]).unwrap();
    p.b.post_recv(&[p.b.sge(0x2_0000, 4096)]).unwrap();
    // The first SEND goes into a cable that is not plugged in.
    a.set_port(PortMode::Down);
    let sg1 = [p.a.sge(0, 100)];
    let i1 = p.a.send(&SendWr::new(RcOp::Send, &sg1)).unwrap();
    a.run_until_idle();
    assert_eq!(a.stats().port.tx_dropped, 1);
    // Plugged in again: the second SEND arrives ahead of the expected PSN.
    Device::link(&a, &b);
    let sg2 = [p.a.sge(4096, 200)];
    let i2 = p.a.send(&SendWr::new(RcOp::Send, &sg2)).unwrap();
    ok_req(p.send_cqe_a(), 0x0a, i1, p.a.qpn, 0);
    ok_req(p.send_cqe_a(), 0x0a, i2, p.a.qpn, 0);
    let r = p.b.drain_recv();
    assert_eq!(r.len(), 2);
    assert_eq!((r[0].byte_cnt, r[1].byte_cnt), (100, 200));
    assert_eq!(p.b.read_data(0x1_0000, 100), m1);
    assert_eq!(p.b.read_data(0x2_0000, 200), m2);
    let s = p.stats();
    assert_eq!(s.naks_sent, 1, "{s:?}");
    assert!(s.retransmits >= 1);
    assert_eq!(s.error_completions, 0);
}

/// A wire between two UDP ports that drops chosen frames: `drop(from_b, frame)` says which.
struct LossyWire {
    stop: Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl LossyWire {
    /// Links `a` and `b` through the wire. `drop` sees each frame (and whether it comes from B)
    /// and returns true to lose it.
    fn link(
        a: &Device,
        b: &Device,
        mut drop: impl FnMut(bool, &[u8]) -> bool + Send + 'static,
    ) -> LossyWire {
        use mlx5_sim::port::udp::UdpPort;
        use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, UdpSocket};
        let any = SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0);
        let v4 = |s: &UdpSocket| match s.local_addr().unwrap() {
            SocketAddr::V4(a) => a,
            SocketAddr::V6(_) => unreachable!("bound to an IPv4 address"),
        };
        // The wire's two ends, and the addresses the devices' ports will have.
        let (wa, wb) = (UdpSocket::bind(any).unwrap(), UdpSocket::bind(any).unwrap());
        let (pa, pb) = (UdpSocket::bind(any).unwrap(), UdpSocket::bind(any).unwrap());
        let (pa_addr, pb_addr) = (v4(&pa), v4(&pb));
        drop_sockets(pa, pb);
        a.set_port(PortMode::Udp(UdpPort::open(pa_addr, v4(&wa)).unwrap()));
        b.set_port(PortMode::Udp(UdpPort::open(pb_addr, v4(&wb)).unwrap()));
        for s in [&wa, &wb] {
            s.set_read_timeout(Some(Duration::from_millis(1))).unwrap();
        }
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let halt = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            let mut buf = vec![0u8; 16384];
            while !halt.load(std::sync::atomic::Ordering::Acquire) {
                for (from_b, rx, tx, to) in [(false, &wa, &wb, pb_addr), (true, &wb, &wa, pa_addr)]
                {
                    if let Ok((n, _)) = rx.recv_from(&mut buf) {
                        if !drop(from_b, &buf[..n]) {
                            let _ = tx.send_to(&buf[..n], to);
                        }
                    }
                }
            }
        });
        LossyWire {
            stop,
            thread: Some(thread),
        }
    }
}

fn drop_sockets(a: std::net::UdpSocket, b: std::net::UdpSocket) {
    drop((a, b));
}

impl Drop for LossyWire {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The BTH opcode of a RoCE v2 frame (IPv4, no VLAN): after 14 + 20 + 8 bytes of headers.
fn bth_opcode(frame: &[u8]) -> Option<u8> {
    frame.get(42).copied()
}

/// A READ response that loses a packet in its middle: the requester asks again for the rest,
/// the responder answers that as a new READ (FIRST at the resume PSN), and the data lands whole.
/// (rdma-core's `ib_read_bw` over a lossy UDP link hit this as a BAD_RESP_ERR completion: the
/// requester expected MIDDLE there.)
#[test]
fn a_read_resumed_in_its_middle_lands_whole() {
    let mut p = Pair::new(
        Mode::Linked,
        RcRigConfig::default(),
        Side {
            ack_timeout: 12,
            ..Side::new(3)
        },
        Side::new(3),
    );
    let mut lost = 0;
    let _wire = LossyWire::link(&p.devs[0], &p.devs[1], move |from_b, f| {
        // The second packet of the first READ response: a MIDDLE.
        let mid = from_b && bth_opcode(f) == Some(0x0e);
        if mid {
            lost += 1;
        }
        mid && lost == 1
    });
    let data = pattern(4000, 9);
    p.b.write_data(0x3_0000, &data);
    let kb = p.b.key;
    let sg = [p.a.sge(0x9000, 4000)];
    let i =
        p.a.send(&SendWr::new(
            RcOp::Read {
                raddr: p.b.addr(0x3_0000),
                rkey: kb,
            },
            &sg,
        ))
        .unwrap();
    let c = p
        .wait(Duration::from_secs(10), |p| p.a.poll_send())
        .expect("the READ completes");
    ok_req(c, 0x10, i, p.a.qpn, 4000);
    assert_eq!(p.a.read_data(0x9000, 4000), data);
    let s = p.stats();
    assert!(s.retransmits >= 1, "{s:?}");
    assert_eq!(s.error_completions, 0, "{s:?}");
}

/// Every CQE of a QP carries its `user_index` in `srqn_uidx` (CQE version 1): rdma-core's libmlx5
/// finds the QP of a completion by that index, not by the QP number. (With it missing, rdma-core's
/// `ibv_srq_pingpong` over two or more QPs took completions for the wrong QP.)
#[test]
fn completions_carry_the_qps_user_index() {
    let mut p = Pair::new(
        Mode::ForceLoopback,
        RcRigConfig {
            user_index: 0x12_3456,
            ..RcRigConfig::default()
        },
        Side::new(3),
        Side::new(3),
    );
    let data = pattern(100, 5);
    p.a.write_data(0, &data);
    p.b.post_recv(&[p.b.sge(0x1_0000, 4096)]).unwrap();
    let sg = [p.a.sge(0, 100)];
    p.a.send(&SendWr::new(RcOp::Send, &sg)).unwrap();
    let s = p.send_cqe_a();
    let r = p.recv_cqe_b();
    assert_eq!(
        (s.user_index, r.user_index),
        (0x12_3456, 0x12_3456),
        "{s:?} {r:?}"
    );
}
