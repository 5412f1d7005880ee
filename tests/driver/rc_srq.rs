//! Shared receive queues through the driver's API, end to end on the device model: two RC QPs
//! receive from one SRQ (an RMP, `qpc.rq_type` SRQ), on one model and across two linked
//! models; completions name the QP and the SRQ WQE; the SRQ retires WQEs in any order; an
//! empty SRQ makes the sender wait (RNR) until a receive is posted.

use crate::dpa_common::addressed;
use std::sync::Arc;
use std::time::Duration;

use mlx5_dpa::devx::{self, Devx, UarKind};
use mlx5_dpa::mem::{Access, MemoryRegion, Pd};
use mlx5_dpa::mlx5::cmd::QueryNicVportContext;
use mlx5_dpa::queues::{
    CompletionKind, Cq, CqConfig, HostQueueMem, QpConfig, QueueError, RcConnect, RcPeer, RcQp,
    RqConfig, SendOp, SendWr, Srq,
};
use mlx5_dpa::uar::UarPage;

use crate::rdma_rc;
use rdma_rc::Side;

type R = Result<(), Box<dyn std::error::Error>>;
type E = Box<dyn std::error::Error>;

const T: Duration = Duration::from_secs(5);
/// Bytes of each SRQ receive buffer.
const SLOT: usize = 4096;

/// The receiving end: one SRQ, two QPs on it, each with its own receive CQ.
struct Receiver {
    qps: [RcQp; 2],
    recv_cqs: [Cq; 2],
    _send_cq: Cq,
    srq: Srq,
    mr: MemoryRegion,
    ctx: Arc<dyn Devx>,
}

impl Receiver {
    fn new(ctx: &Arc<dyn Devx>, log_srq: u8) -> Result<Receiver, E> {
        let pd = Pd::alloc(ctx)?;
        let uar = UarPage::alloc(ctx, UarKind::NonCached)?;
        let cqc = CqConfig::new(6);
        let cq = || Cq::create(ctx, &uar, HostQueueMem::alloc(ctx, cqc.ring_bytes())?, &cqc);
        let send_cq = cq()?;
        let recv_cqs = [cq()?, cq()?];
        let rqc = RqConfig {
            log_size: log_srq,
            max_sge: 1,
        };
        let srq = Srq::create(
            ctx,
            &pd,
            &uar,
            HostQueueMem::alloc(ctx, rqc.ring_bytes())?,
            &rqc,
        )?;
        let qpc = QpConfig {
            log_rq_size: None,
            ..QpConfig::new(5, 0)
        };
        let qp = |rcq: &Cq| {
            RcQp::create_with_srq(
                ctx,
                &pd,
                &uar,
                &send_cq,
                rcq,
                &srq,
                HostQueueMem::alloc(ctx, qpc.ring_bytes())?,
                &qpc,
            )
        };
        let qps = [qp(&recv_cqs[0])?, qp(&recv_cqs[1])?];
        let mr = MemoryRegion::alloc(ctx, &pd, 16 * SLOT, Access::LOCAL_WRITE)?;
        Ok(Receiver {
            qps,
            recv_cqs,
            _send_cq: send_cq,
            srq,
            mr,
            ctx: Arc::clone(ctx),
        })
    }

    /// Posts SRQ receives into slots `from..to` (wr_id 100 + slot).
    fn post(&mut self, slots: std::ops::Range<usize>) -> R {
        for s in slots {
            self.srq
                .post_recv(&[self.mr.sge(s * SLOT, SLOT)?], 100 + s as u64)?;
        }
        self.srq.ring_doorbell();
        Ok(())
    }
}

fn peer(to_ctx: &Arc<dyn Devx>, qpn: mlx5_dpa::queues::Qpn, same: bool) -> Result<RcPeer, E> {
    if same {
        return Ok(RcPeer::Loopback { remote_qpn: qpn });
    }
    // Both models list their GIDs alike: the index found on the peer is this side's too.
    let (gid_index, entry) = devx::roce_v2_ipv4_address(to_ctx.as_ref())?;
    let mac = devx::exec(to_ctx.as_ref(), &QueryNicVportContext)?.mac;
    Ok(RcPeer::Remote {
        remote_qpn: qpn,
        mac,
        gid: entry.gid,
        gid_index,
        hop_limit: 64,
    })
}

/// Connects sender `i` with the receiver's QP `i`.
fn connect(senders: &mut [Side; 2], rx: &mut Receiver, same: bool, rnr_retry: u8) -> R {
    for (i, s) in senders.iter_mut().enumerate() {
        let mut cs = RcConnect::new(peer(&rx.ctx, rx.qps[i].qpn(), same)?);
        cs.rnr_retry = rnr_retry;
        s.qp.connect(&cs)?;
        rx.qps[i].connect(&RcConnect::new(peer(&s.ctx, s.qp.qpn(), same)?))?;
    }
    Ok(())
}

fn send(s: &mut Side, data: &[u8], imm: Option<u32>) -> R {
    s.mr.write(0, data)?;
    s.qp.post_send(&SendWr::new(
        1,
        SendOp::Send {
            sges: &[s.mr.sge(0, data.len())?],
            imm,
        },
    ))?;
    s.qp.ring_send_doorbell();
    let c = s.send_cq.poll_timeout(T)??;
    s.qp.complete_send(c.wqe_counter)?;
    Ok(())
}

/// Messages from both senders fill the SRQ's WQEs in ring order; each completion names the
/// receiving QP and the SRQ WQE, and lands on that QP's receive CQ.
fn two_qps_share_the_srq(same: bool) -> R {
    let (da, db) = if same {
        (addressed(1, 1), None)
    } else {
        let (a, b) = (addressed(1, 1), addressed(2, 2));
        mlx5_sim::Device::link(&a, &b);
        (a, Some(b))
    };
    let ca = da.open_devx();
    let cb = db
        .as_ref()
        .map_or_else(|| Arc::clone(&ca), |d| d.open_devx());
    let mut senders = [Side::new(&ca)?, Side::new(&ca)?];
    let mut rx = Receiver::new(&cb, 3)?;
    connect(&mut senders, &mut rx, same, 7)?;
    rx.post(0..4)?;
    // Several packets (the default MTU is 1024 bytes) for the third message.
    let long: Vec<u8> = (0..3000u32).map(|i| (i * 7 + 1) as u8).collect();
    let msgs: [(usize, &[u8], Option<u32>); 4] = [
        (0, b"first, from sender 0", None),
        (1, b"second, from sender 1", Some(0x1234)),
        (0, &long, None),
        (1, b"fourth", None),
    ];
    for (k, &(from, data, imm)) in msgs.iter().enumerate() {
        send(&mut senders[from], data, imm)?;
        let c = rx.recv_cqs[from].poll_timeout(T)??;
        assert_eq!(c.qpn, rx.qps[from].qpn().0, "message {k} names its QP");
        assert_eq!(c.wqe_counter, k as u16, "message {k} took the next SRQ WQE");
        assert_eq!(c.byte_len as usize, data.len());
        assert_eq!(c.imm, imm);
        let kind = if imm.is_some() {
            CompletionKind::RecvImm
        } else {
            CompletionKind::Recv
        };
        assert_eq!(c.kind, kind);
        assert_eq!(rx.srq.complete(c.wqe_counter)?, 100 + k as u64);
        assert_eq!(
            rx.mr.buf().to_vec(k * SLOT, data.len())?,
            data,
            "message {k}"
        );
    }
    assert!(rx.recv_cqs.iter_mut().all(|c| c.poll().is_none()));
    assert_eq!(rx.srq.free(), 8);
    if let Some(db) = &db {
        assert!(da.stats().port.tx_frames > 0 && db.stats().port.tx_frames > 0);
    }
    drop((senders, rx));
    da.stop_engine();
    if let Some(db) = db {
        db.stop_engine();
    }
    Ok(())
}

#[test]
fn two_qps_share_one_srq_on_one_model() -> R {
    two_qps_share_the_srq(true)
}

#[test]
fn two_qps_share_one_srq_across_two_linked_models() -> R {
    two_qps_share_the_srq(false)
}

#[test]
fn srq_wqes_retire_in_any_order() -> R {
    let d = addressed(1, 1);
    let ctx = d.open_devx();
    let mut senders = [Side::new(&ctx)?, Side::new(&ctx)?];
    let mut rx = Receiver::new(&ctx, 2)?;
    connect(&mut senders, &mut rx, true, 7)?;
    rx.post(0..4)?;
    assert_eq!(rx.srq.free(), 0);
    send(&mut senders[0], b"to qp 0", None)?;
    send(&mut senders[1], b"to qp 1", None)?;
    // The second QP's CQ is polled first: WQE 1 retires before WQE 0, and its slot is not
    // free until WQE 0 is done too.
    let c1 = rx.recv_cqs[1].poll_timeout(T)??;
    let c0 = rx.recv_cqs[0].poll_timeout(T)??;
    assert_eq!((c0.wqe_counter, c1.wqe_counter), (0, 1));
    assert_eq!(rx.srq.complete(1)?, 101);
    assert_eq!(rx.srq.free(), 0);
    assert!(matches!(
        rx.srq.complete(1),
        Err(QueueError::StrayCompletion { .. })
    ));
    assert_eq!(rx.srq.complete(0)?, 100);
    assert_eq!(rx.srq.free(), 2);
    // A counter outside the posted window is stray.
    assert!(matches!(
        rx.srq.complete(4),
        Err(QueueError::StrayCompletion { .. })
    ));
    drop((senders, rx));
    d.stop_engine();
    Ok(())
}

#[test]
fn an_empty_srq_makes_the_sender_wait_until_a_receive_is_posted() -> R {
    let d = addressed(1, 1);
    let ctx = d.open_devx();
    let mut senders = [Side::new(&ctx)?, Side::new(&ctx)?];
    let mut rx = Receiver::new(&ctx, 2)?;
    connect(&mut senders, &mut rx, true, 7)?;
    let s = &mut senders[1];
    s.mr.write(0, b"patience")?;
    s.qp.post_send(&SendWr::new(
        1,
        SendOp::Send {
            sges: &[s.mr.sge(0, 8)?],
            imm: None,
        },
    ))?;
    s.qp.ring_send_doorbell();
    std::thread::sleep(Duration::from_millis(20));
    assert!(s.send_cq.poll().is_none(), "no completion before a receive");
    rx.post(0..1)?;
    let c = s.send_cq.poll_timeout(T)??;
    assert_eq!(s.qp.complete_send(c.wqe_counter)?.0, 1);
    let c = rx.recv_cqs[1].poll_timeout(T)??;
    assert_eq!((c.qpn, c.wqe_counter), (rx.qps[1].qpn().0, 0));
    assert_eq!(rx.mr.buf().to_vec(0, 8)?, b"patience");
    drop((senders, rx));
    d.stop_engine();
    Ok(())
}

#[test]
fn a_qp_with_an_srq_has_no_receive_ring_of_its_own() -> R {
    let d = addressed(1, 1);
    let ctx = d.open_devx();
    let mut rx = Receiver::new(&ctx, 2)?;
    // Receives go to the SRQ, not the QP.
    assert!(rx.qps[0].post_recv(&[rx.mr.sge(0, 64)?], 1).is_err());
    // A receive ring asked for beside the SRQ, or an SRQ of another PD, is refused.
    let pd = Pd::alloc(&ctx)?;
    let uar = UarPage::alloc(&ctx, UarKind::NonCached)?;
    let cqc = CqConfig::new(4);
    let cq = Cq::create(
        &ctx,
        &uar,
        HostQueueMem::alloc(&ctx, cqc.ring_bytes())?,
        &cqc,
    )?;
    let with_rq = QpConfig::new(4, 4);
    let without_rq = QpConfig {
        log_rq_size: None,
        ..with_rq
    };
    for qpc in [with_rq, without_rq] {
        let refused = RcQp::create_with_srq(
            &ctx,
            &pd,
            &uar,
            &cq,
            &cq,
            &rx.srq,
            HostQueueMem::alloc(&ctx, qpc.ring_bytes())?,
            &qpc,
        );
        assert!(matches!(refused, Err(QueueError::Config(_))), "{refused:?}");
    }
    drop(rx);
    d.stop_engine();
    Ok(())
}
