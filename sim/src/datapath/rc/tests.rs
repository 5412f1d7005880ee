//! Unit tests of the transport's arithmetic and tables.

use std::time::Duration;

use super::responder::position;
use crate::port::roce::opcode as bth;
use crate::state::objects::QpCtx;
use crate::state::rc::*;

#[test]
fn psn_arithmetic_wraps_at_24_bits() {
    assert_eq!(psn_add(0xff_ffff, 1), 0);
    assert_eq!(psn_diff(0, 0xff_ffff), 1);
    assert_eq!(psn_diff(5, 5), 0);
    assert_eq!(psn_add(0xff_fffe, PSN_MASK), 0xff_fffd);
}

#[test]
fn timers_follow_the_iba_tables() {
    assert_eq!(rnr_delay(0), Duration::from_micros(655_360));
    assert_eq!(rnr_delay(1), Duration::from_micros(10));
    assert_eq!(rnr_delay(12), Duration::from_micros(640));
    assert_eq!(rnr_delay(31), Duration::from_micros(491_520));
    let ctx = QpCtx {
        ack_timeout: 14,
        ..QpCtx::default()
    };
    assert_eq!(ack_timeout(&ctx), Some(Duration::from_nanos(4096 << 14)));
    assert_eq!(ack_timeout(&QpCtx::default()), None);
    assert_eq!(mtu_bytes(1), 256);
    assert_eq!(mtu_bytes(5), 4096);
}

#[test]
fn packet_positions() {
    assert_eq!(position(bth::SEND_ONLY_IMM), (true, true));
    assert_eq!(position(bth::RDMA_WRITE_FIRST), (true, false));
    assert_eq!(position(bth::SEND_MIDDLE), (false, false));
    assert_eq!(position(bth::RDMA_WRITE_LAST_IMM), (false, true));
}
