//! RC queue pairs through the driver's API only, end to end on the device model: every
//! operation with its data checked, on one model (force-loopback) and across two linked
//! models (RoCEv2), and the error paths with recovery.

use crate::dpa_common::addressed;
use std::sync::Arc;
use std::time::Duration;

use mlx5_dpa::devx::Devx;
use mlx5_dpa::mem::Rkey;
use mlx5_dpa::mlx5::cmd::QpState;
use mlx5_dpa::queues::{CompletionError, RcConnect, RcPeer, RemoteAddr, SendOp, SendWr, Syndrome};

use crate::rdma_rc;
use rdma_rc::Side;

type R = Result<(), Box<dyn std::error::Error>>;

const T: Duration = Duration::from_secs(5);

fn pair_on_one() -> Result<(mlx5_sim::Device, Side, Side), Box<dyn std::error::Error>> {
    let d = addressed(1, 1);
    let ctx = d.open_devx();
    let mut a = Side::new(&ctx)?;
    let mut b = Side::new(&ctx)?;
    rdma_rc::connect(&mut a, &mut b, true)?;
    Ok((d, a, b))
}

#[test]
fn every_operation_on_one_model_with_force_loopback() -> R {
    let (d, mut a, mut b) = pair_on_one()?;
    let mut out = Vec::new();
    let r = rdma_rc::run(&mut a, &mut b, &mut out)?;
    assert_eq!((r.operations, r.verified), (7, 7));
    d.stop_engine();
    Ok(())
}

#[test]
fn every_operation_across_two_linked_models() -> R {
    let (da, db) = (addressed(1, 1), addressed(2, 2));
    mlx5_sim::Device::link(&da, &db);
    let (ca, cb): (Arc<dyn Devx>, Arc<dyn Devx>) = (da.open_devx(), db.open_devx());
    let mut a = Side::new(&ca)?;
    let mut b = Side::new(&cb)?;
    rdma_rc::connect(&mut a, &mut b, false)?;
    let r = rdma_rc::run(&mut a, &mut b, &mut Vec::new())?;
    assert_eq!((r.operations, r.verified), (7, 7));
    // The traffic crossed the link as frames.
    assert!(da.stats().port.tx_frames > 0 && db.stats().port.tx_frames > 0);
    da.stop_engine();
    db.stop_engine();
    Ok(())
}

fn expect_error(
    side: &mut Side,
    syndrome: Syndrome,
) -> Result<CompletionError, Box<dyn std::error::Error>> {
    let c = side.send_cq.poll_timeout(T)?;
    let e = c.expect_err("an error completion");
    assert_eq!(e.syndrome(), Some(syndrome), "{e}");
    side.qp
        .complete_send(e.wqe_counter().ok_or("work error")?)?;
    Ok(e)
}

/// After an error: the QP is in ERR, later WQEs flush, and RST -> RTS makes it work again.
fn recover_and_send(a: &mut Side, b: &mut Side, same: bool) -> R {
    assert_eq!(a.qp.state()?, QpState::Err);
    a.qp.post_send(&SendWr::new(77, SendOp::Nop))?;
    a.qp.ring_send_doorbell();
    expect_error(a, Syndrome::WrFlush)?;
    // Reset both ends (a responder error may have moved the responder too) and reconnect.
    a.qp.reset()?;
    b.qp.reset()?;
    while b.recv_cq.poll().is_some() {}
    rdma_rc::connect(a, b, same)?;
    assert_eq!(a.qp.state()?, QpState::Rts);
    let msg = b"after recovery";
    a.mr.write(0, msg)?;
    b.qp.post_recv(&[b.mr.sge(0, 64)?], 5)?;
    b.qp.ring_recv_doorbell();
    a.qp.post_send(&SendWr::new(
        78,
        SendOp::Send {
            sges: &[a.mr.sge(0, msg.len())?],
            imm: None,
        },
    ))?;
    a.qp.ring_send_doorbell();
    let c = a.send_cq.poll_timeout(T)??;
    assert_eq!(a.qp.complete_send(c.wqe_counter)?.0, 78);
    let c = b.recv_cq.poll_timeout(T)??;
    assert_eq!(b.qp.complete_recv(c.wqe_counter)?, 5);
    assert_eq!(b.mr.buf().to_vec(0, msg.len())?, msg);
    Ok(())
}

#[test]
fn bad_lkey_is_a_local_protection_error_and_the_qp_recovers() -> R {
    let (d, mut a, mut b) = pair_on_one()?;
    let mut sge = a.mr.sge(0, 16)?;
    sge.lkey.0 ^= 0x5500;
    a.qp.post_send(&SendWr::new(
        1,
        SendOp::Write {
            sges: &[sge],
            remote: RemoteAddr {
                addr: b.mr.addr(),
                rkey: b.mr.rkey(),
            },
            imm: None,
        },
    ))?;
    a.qp.ring_send_doorbell();
    let e = expect_error(&mut a, Syndrome::LocalProt)?;
    assert!(matches!(
        e,
        CompletionError::Work {
            requester: true,
            ..
        }
    ));
    recover_and_send(&mut a, &mut b, true)?;
    d.stop_engine();
    Ok(())
}

#[test]
fn bad_rkey_is_a_remote_access_error_and_the_qp_recovers() -> R {
    let (d, mut a, mut b) = pair_on_one()?;
    let remote = RemoteAddr {
        addr: b.mr.addr(),
        rkey: Rkey(b.mr.rkey().0 ^ 0x7700),
    };
    a.qp.post_send(&SendWr::new(
        1,
        SendOp::Read {
            sges: &[a.mr.sge(0, 64)?],
            remote,
        },
    ))?;
    a.qp.ring_send_doorbell();
    expect_error(&mut a, Syndrome::RemoteAccess)?;
    recover_and_send(&mut a, &mut b, true)?;
    d.stop_engine();
    Ok(())
}

#[test]
fn out_of_bounds_remote_address_is_a_remote_access_error() -> R {
    let (d, mut a, b) = pair_on_one()?;
    let remote = RemoteAddr {
        addr: b.mr.addr() + b.mr.len() as u64 - 8,
        rkey: b.mr.rkey(),
    };
    a.qp.post_send(&SendWr::new(
        1,
        SendOp::Write {
            sges: &[a.mr.sge(0, 64)?],
            remote,
            imm: None,
        },
    ))?;
    a.qp.ring_send_doorbell();
    expect_error(&mut a, Syndrome::RemoteAccess)?;
    d.stop_engine();
    Ok(())
}

#[test]
fn access_not_granted_by_the_responder_qp_is_refused() -> R {
    let d = addressed(1, 1);
    let ctx = d.open_devx();
    let mut a = Side::new(&ctx)?;
    let mut b = Side::new(&ctx)?;
    // The responder QP grants remote read only: writes and atomics must be refused.
    let mut ca = RcConnect::new(RcPeer::Loopback {
        remote_qpn: b.qp.qpn(),
    });
    let mut cb = RcConnect::new(RcPeer::Loopback {
        remote_qpn: a.qp.qpn(),
    });
    cb.remote_access = mlx5_dpa::mem::Access::REMOTE_READ;
    ca.send_psn = 1;
    cb.recv_psn = 1;
    a.qp.connect(&ca)?;
    b.qp.connect(&cb)?;
    let remote = RemoteAddr {
        addr: b.mr.addr(),
        rkey: b.mr.rkey(),
    };
    a.qp.post_send(&SendWr::new(
        1,
        SendOp::Read {
            sges: &[a.mr.sge(0, 32)?],
            remote,
        },
    ))?;
    a.qp.ring_send_doorbell();
    let c = a.send_cq.poll_timeout(T)??;
    assert_eq!(a.qp.complete_send(c.wqe_counter)?.0, 1, "reads are granted");
    a.qp.post_send(&SendWr::new(
        2,
        SendOp::FetchAdd {
            local: a.mr.sge(64, 8)?,
            remote,
            add: 1,
        },
    ))?;
    a.qp.ring_send_doorbell();
    expect_error(&mut a, Syndrome::RemoteAccess)?;
    recover_and_send(&mut a, &mut b, true)?;
    d.stop_engine();
    Ok(())
}

#[test]
fn send_without_a_posted_receive_exhausts_rnr_retries() -> R {
    let d = addressed(1, 1);
    let ctx = d.open_devx();
    let mut a = Side::new(&ctx)?;
    let mut b = Side::new(&ctx)?;
    let mut ca = RcConnect::new(RcPeer::Loopback {
        remote_qpn: b.qp.qpn(),
    });
    let cb = RcConnect::new(RcPeer::Loopback {
        remote_qpn: a.qp.qpn(),
    });
    ca.rnr_retry = 0;
    a.qp.connect(&ca)?;
    b.qp.connect(&cb)?;
    a.qp.post_send(&SendWr::new(
        1,
        SendOp::SendInline {
            data: b"nobody listens",
            imm: None,
        },
    ))?;
    a.qp.ring_send_doorbell();
    expect_error(&mut a, Syndrome::RnrRetryExceeded)?;
    recover_and_send(&mut a, &mut b, true)?;
    d.stop_engine();
    Ok(())
}

#[test]
fn rnr_retries_succeed_once_a_receive_is_posted() -> R {
    let (d, mut a, mut b) = pair_on_one()?;
    // rnr_retry 7 (forever): the send waits for the receive.
    a.qp.post_send(&SendWr::new(
        1,
        SendOp::SendInline {
            data: b"patience",
            imm: None,
        },
    ))?;
    a.qp.ring_send_doorbell();
    std::thread::sleep(Duration::from_millis(20));
    assert!(
        a.send_cq.poll().is_none(),
        "no completion before a receive exists"
    );
    b.qp.post_recv(&[b.mr.sge(0, 64)?], 9)?;
    b.qp.ring_recv_doorbell();
    let c = a.send_cq.poll_timeout(T)??;
    assert_eq!(a.qp.complete_send(c.wqe_counter)?.0, 1);
    let c = b.recv_cq.poll_timeout(T)??;
    assert_eq!(c.byte_len, 8);
    assert_eq!(b.mr.buf().to_vec(0, 8)?, b"patience");
    d.stop_engine();
    Ok(())
}
