//! Ethernet through the driver's queue API, end to end on the device model: frames of varied
//! sizes go out of an SQ, loop back through steering into an RQ, and arrive byte for byte.

use mlx5_dpa::devx::UAR_DOORBELL_OFFSET;
use mlx5_dpa::mlx5::wire::wqe::opcode as wqe_opcode;
use mlx5_dpa::queues::wq::ETH_MIN_INLINE;
use mlx5_dpa::queues::{CompletionKind, QueueError};

const BUF: usize = 2048;

use crate::common;
use common::Eth;

fn eth(log: u8, signal_every: u16) -> Result<Eth, QueueError> {
    common::eth(log + 1, log + 2, log, signal_every, BUF)
}

fn frame(mac: [u8; 6], i: usize, len: usize) -> Vec<u8> {
    let mut f = Vec::with_capacity(len);
    f.extend_from_slice(&mac);
    f.extend_from_slice(&[0x02, 0, 0, 0, 0, 0x77]);
    f.extend_from_slice(&0x88b5u16.to_be_bytes());
    while f.len() < len {
        f.push((f.len() * 7 + i * 13) as u8);
    }
    f
}

#[test]
fn frames_of_varied_sizes_arrive_byte_for_byte() -> Result<(), QueueError> {
    let mut e = eth(6, 1)?;
    let n = 64;
    for i in 0..n {
        let sge = e.rx.sge(i * BUF, BUF)?;
        e.rq.post_recv(&[sge], 1000 + i as u64)?;
    }
    e.rq.ring_doorbell();
    let sizes: Vec<usize> = (0..n).map(|i| 60 + (i * 367) % 1455).collect();
    let mut sent = Vec::new();
    for (i, &len) in sizes.iter().enumerate() {
        let f = frame(e.mac, i, len);
        e.tx.write(i * BUF, &f)?;
        // Inline the first 18 bytes; gather the rest from the registered buffer.
        let rest = e.tx.sge(i * BUF + ETH_MIN_INLINE, len - ETH_MIN_INLINE)?;
        e.sq.post_send(&f[..ETH_MIN_INLINE], &[rest], i as u64)?;
        sent.push(f);
    }
    e.sq.ring_doorbell();
    e.dev.run_until_idle();

    let mut tx_done = Vec::new();
    while let Some(c) = e.tx_cq.poll() {
        let c = c.expect("send completion");
        assert_eq!(c.kind, CompletionKind::Send { wqe_opcode: 0 });
        assert_eq!(c.qpn, e.sq.sqn().0);
        tx_done.push(e.sq.complete(&c)?);
    }
    assert_eq!(tx_done.len(), n);
    assert!(tx_done
        .iter()
        .enumerate()
        .all(|(i, &(id, k))| id == i as u64 && k == 1));

    let mut got = 0;
    while let Some(c) = e.rx_cq.poll() {
        let c = c.expect("receive completion");
        assert_eq!(c.kind, CompletionKind::Recv);
        let id = e.rq.complete(c.wqe_counter)? as usize - 1000;
        assert_eq!(id, got, "receives complete in order");
        assert_eq!(c.byte_len as usize, sizes[id]);
        let mut buf = vec![0u8; c.byte_len as usize];
        e.rx.read(id * BUF, &mut buf)?;
        assert_eq!(buf, sent[id], "frame {id} differs");
        got += 1;
    }
    assert_eq!(got, n);
    Ok(())
}

#[test]
fn signalling_every_nth_retires_the_unsignalled_ones_too() -> Result<(), QueueError> {
    let mut e = eth(5, 8)?;
    for i in 0..32 {
        e.sq.post_nop(i, false)?;
    }
    e.sq.ring_doorbell();
    e.dev.run_until_idle();
    let mut retired = 0;
    let mut cqes = 0;
    e.tx_cq.poll_batch(64, |c| {
        let c = c.expect("completion");
        assert_eq!(
            c.kind,
            CompletionKind::Send {
                wqe_opcode: wqe_opcode::NOP
            }
        );
        cqes += 1;
        let (id, k) = e.sq.complete(&c).expect("outstanding");
        assert_eq!(id % 8, 7, "the 8th of each group is signalled");
        retired += k;
    });
    assert_eq!((cqes, retired), (4, 32));
    assert_eq!(e.sq.free(), 128);
    Ok(())
}

#[test]
fn a_full_ring_is_a_typed_error_not_an_overwrite() -> Result<(), QueueError> {
    let mut e = eth(2, 1)?;
    // 16 WQEBBs; each NOP takes one.
    for i in 0..16 {
        e.sq.post_nop(i, true)?;
    }
    match e.sq.post_nop(99, true) {
        Err(QueueError::Full {
            needed: 1, free: 0, ..
        }) => {}
        other => panic!("expected Full, got {other:?}"),
    }
    let f = frame(e.mac, 0, 64);
    assert!(matches!(
        e.sq.post_send(&f[..10], &[], 1),
        Err(QueueError::BadRequest(_))
    ));
    Ok(())
}

#[test]
fn a_burst_sends_like_post_send_with_one_doorbell_at_its_end() -> Result<(), QueueError> {
    let mut e = eth(4, 1)?;
    let n = 12;
    for i in 0..n {
        let sge = e.rx.sge(i * BUF, BUF)?;
        e.rq.post_recv(&[sge], i as u64)?;
    }
    e.rq.ring_doorbell();
    let mut sent = Vec::new();
    let mut burst = e.sq.burst();
    for i in 0..n {
        let f = frame(e.mac, i, 60 + i * 31);
        e.tx.write(i * BUF, &f)?;
        let rest =
            e.tx.sge(i * BUF + ETH_MIN_INLINE, f.len() - ETH_MIN_INLINE)?;
        if i % 2 == 0 {
            burst.post_send(&f[..ETH_MIN_INLINE], &[rest], i as u64)?;
        } else {
            burst.post_send_signaled(&f[..ETH_MIN_INLINE], &[rest], i as u64)?;
        }
        sent.push(f);
    }
    // A bad request inside a burst is refused and leaves what was posted alone.
    assert!(matches!(
        burst.post_send(&sent[0][..4], &[], 99),
        Err(QueueError::BadRequest(_))
    ));
    assert_eq!(burst.free(), 64 - n as u16);
    // Nothing is visible to the device before the burst ends.
    drop(burst);
    e.dev.run_until_idle();
    let mut ids = Vec::new();
    while let Some(c) = e.tx_cq.poll() {
        let c = c.expect("send completion");
        ids.push(e.sq.complete(&c)?.0);
    }
    assert_eq!(ids, (0..n as u64).collect::<Vec<_>>());
    for (i, f) in sent.iter().enumerate() {
        let c = e.rx_cq.poll().expect("a receive").expect("no error");
        assert_eq!(e.rq.complete(c.wqe_counter)? as usize, i);
        let mut buf = vec![0u8; c.byte_len as usize];
        e.rx.read(i * BUF, &mut buf)?;
        assert_eq!(&buf, f, "frame {i}");
    }
    assert!(e.rx_cq.poll().is_none());
    Ok(())
}

#[test]
fn a_burst_is_not_rung_until_it_ends_and_stops_at_a_full_ring() -> Result<(), QueueError> {
    // 16 WQEBBs, a CQE every second NOP (the CQ holds 8).
    let mut e = eth(2, 2)?;
    {
        let mut burst = e.sq.burst();
        for i in 0..16 {
            burst.post_nop(i, false)?;
        }
        assert!(matches!(
            burst.post_nop(99, true),
            Err(QueueError::Full {
                needed: 1,
                free: 0,
                ..
            })
        ));
        // The model may run while the burst is open: the doorbell has not rung.
        e.dev.run_until_idle();
        assert!(e.tx_cq.poll().is_none(), "no CQE before the burst ends");
        burst.finish();
    }
    e.dev.run_until_idle();
    let (mut ids, mut retired) = (Vec::new(), 0);
    while let Some(c) = e.tx_cq.poll() {
        let (id, k) = e.sq.complete(&c.expect("nop"))?;
        ids.push(id);
        retired += k;
    }
    assert_eq!(ids, (1..16).step_by(2).collect::<Vec<_>>());
    assert_eq!(retired, 16);
    assert_eq!(e.sq.free(), 16);
    Ok(())
}

/// `signal_every` counts WQEBBs: in a ring of 16 WQEBBs signalling every 8, WQEs of three
/// WQEBBs each fill the ring after five, before an eighth WQE could ask for a CQE. Counting
/// WQEs (as the driver did) left such a ring full with nothing to complete it; counting WQEBBs,
/// the third WQE (the one reaching counter 8) asks. The doorbell carries the first 8 bytes of
/// the last WQE, found from the size kept at its last slot.
#[test]
fn large_wqes_are_signalled_by_wqebbs_and_rung_with_the_last_ones_ctrl() -> Result<(), QueueError> {
    let mut e = eth(2, 8)?;
    let f = frame(e.mac, 0, 128);
    // 2 + 8 segments (the Ethernet segment and 126 more inline bytes): 3 WQEBBs.
    let mut posted = 0u64;
    while e.sq.post_send(&f, &[], posted).is_ok() {
        posted += 1;
    }
    assert_eq!((posted, e.sq.free()), (5, 1));
    e.sq.ring_doorbell();
    // SAFETY: the model's UAR page is mapped for the UarPage's life; an aligned 8-byte read.
    let db =
        unsafe { std::ptr::read_volatile(e.uar.base().add(UAR_DOORBELL_OFFSET).cast::<[u8; 8]>()) };
    let last_pi = 4 * 3u32;
    assert_eq!(
        db[..4],
        ((last_pi << 8) | u32::from(wqe_opcode::SEND)).to_be_bytes(),
        "the doorbell names the last WQE"
    );
    assert_eq!(db[4..], ((e.sq.sqn().0 << 8) | 10).to_be_bytes());
    e.dev.run_until_idle();
    let mut ids = Vec::new();
    while let Some(c) = e.tx_cq.poll() {
        let (id, k) = e.sq.complete(&c.expect("send"))?;
        ids.push((id, k));
    }
    assert_eq!(ids, [(2, 3)], "the WQE reaching counter 8 asked for a CQE");
    assert_eq!(e.sq.free(), 10);
    // The next signal is due at counter 9 + 8 = 17: the WQE at 15..18.
    for i in 0..3 {
        e.sq.post_send(&f, &[], 10 + i)?;
    }
    e.sq.ring_doorbell();
    e.dev.run_until_idle();
    let mut ids = Vec::new();
    while let Some(c) = e.tx_cq.poll() {
        ids.push(e.sq.complete(&c.expect("send"))?);
    }
    assert_eq!(ids, [(10, 3)]);
    Ok(())
}

/// WQEs of one and of three WQEBBs, mixed, around a ring of 16 WQEBBs many times: the one-
/// WQEBB WQEs land on slots where three-WQEBB WQEs began and ended before. The driver keeps a
/// size only for outstanding multi-WQEBB WQEs; a size left behind at such a slot would retire
/// a later one-WQEBB WQE as three (the next completion then a stray) or ring the doorbell with
/// another WQE's control segment.
#[test]
fn one_wqebb_wqes_on_slots_of_retired_large_ones_retire_and_ring_as_one() -> Result<(), QueueError>
{
    let mut e = eth(2, 1)?;
    let large = frame(e.mac, 0, 128); // 3 WQEBBs, as above
    let small = frame(e.mac, 1, 64);
    let small_sge = {
        e.tx.write(0, &small)?;
        e.tx.sge(ETH_MIN_INLINE, 64 - ETH_MIN_INLINE)?
    };
    let mut x = 0x2545_f491u32;
    let mut wr_id = 0u64;
    let mut pi = 0u32;
    for round in 0..40 {
        // 1 to 4 WQEs, each large with probability 1/3, at most 12 WQEBBs a round.
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        let mut want = Vec::new();
        let mut last_pi = pi;
        for k in 0..1 + x % 4 {
            let big = (x >> (8 + k)).is_multiple_of(3);
            last_pi = pi;
            if big {
                e.sq.post_send(&large, &[], wr_id)?;
                pi += 3;
            } else {
                e.sq.post_send(&small[..ETH_MIN_INLINE], &[small_sge], wr_id)?;
                pi += 1;
            }
            want.push(wr_id);
            wr_id += 1;
        }
        e.sq.ring_doorbell();
        // SAFETY: the model's UAR page is mapped for the UarPage's life; an aligned 8-byte read.
        let db = unsafe {
            std::ptr::read_volatile(e.uar.base().add(UAR_DOORBELL_OFFSET).cast::<[u8; 8]>())
        };
        assert_eq!(
            db[..4],
            (((last_pi & 0xffff) << 8) | u32::from(wqe_opcode::SEND)).to_be_bytes(),
            "round {round}: the doorbell names the last WQE"
        );
        e.dev.run_until_idle();
        let mut got = Vec::new();
        while let Some(c) = e.tx_cq.poll() {
            let (id, _) = e.sq.complete(&c.expect("send"))?;
            got.push(id);
        }
        // Every WQE is signalled: each completion retires its own WQE, of its own size.
        assert_eq!(got, want, "round {round}");
        assert_eq!(e.sq.free(), 16, "round {round}: the ring is empty again");
    }
    assert!(pi > 4 * 16, "the rounds went around the ring several times");
    Ok(())
}

/// A model with a CQ of `2^log_cq` entries of `cqe_size` and an Ethernet SQ of `2^log_sq`
/// WQEBBs signalling every WQE into it: the queues the NOP tests below post on and poll.
fn nop_queues(
    cqe_size: mlx5_dpa::queues::cq::CqeSize,
    log_cq: u8,
    log_sq: u8,
) -> Result<
    (
        mlx5_sim::Device,
        mlx5_dpa::queues::Cq,
        mlx5_dpa::queues::EthSq,
    ),
    QueueError,
> {
    use std::sync::Arc;

    use mlx5_dpa::devx::{Devx, UarKind};
    use mlx5_dpa::mem::Pd;
    use mlx5_dpa::queues::steering::{Tis, TransportDomain};
    use mlx5_dpa::queues::{Cq, CqConfig, EthSq, EthSqConfig, HostQueueMem};
    use mlx5_dpa::uar::UarPage;

    let dev = mlx5_sim::Device::with_profile("bf3").expect("bf3 profile");
    let ctx: Arc<dyn Devx> = dev.open_devx();
    let pd = Pd::alloc(&ctx)?;
    let uar = UarPage::alloc(&ctx, UarKind::NonCached)?;
    let td = TransportDomain::alloc(&ctx)?;
    let tis = Tis::create(&ctx, &td, &pd)?;
    let cqc = CqConfig {
        cqe_size,
        ..CqConfig::new(log_cq)
    };
    let cq = Cq::create(
        &ctx,
        &uar,
        HostQueueMem::alloc(&ctx, cqc.ring_bytes())?,
        &cqc,
    )?;
    let sqc = EthSqConfig {
        log_size: log_sq,
        signal_every: 1,
    };
    let mem = HostQueueMem::alloc(&ctx, sqc.ring_bytes())?;
    let sq = EthSq::create(&ctx, &pd, &uar, &tis, &cq, mem, &sqc)?;
    Ok((dev, cq, sq))
}

/// `Cq::poll`, `Cq::poll_raw` and `Cq::poll_batch` share one consumer position: mixed in
/// every order across many wraps of a small ring, with 64- and 128-byte CQEs, they hand over
/// every completion once and in order, and none finds an entry after the CQ runs empty.
#[test]
fn poll_poll_raw_and_poll_batch_share_the_consumer_position() -> Result<(), QueueError> {
    use mlx5_dpa::queues::cq::CqeSize;

    for cqe_size in [CqeSize::B64, CqeSize::B128] {
        // 4 CQEs, 3 completions a round: each round starts at another offset and most wrap.
        let (dev, mut cq, mut sq) = nop_queues(cqe_size, 2, 4)?;
        let mut next_id = 0u64;
        let mut seen = 0u64;
        // Every order of the three methods, one completion each (the batch takes at most 1).
        let orders = [
            [0, 1, 2],
            [0, 2, 1],
            [1, 0, 2],
            [1, 2, 0],
            [2, 0, 1],
            [2, 1, 0],
        ];
        for round in 0..48u32 {
            for _ in 0..3 {
                sq.post_nop(next_id, true)?;
                next_id += 1;
            }
            sq.ring_doorbell();
            dev.run_until_idle();
            for (step, how) in orders[round as usize % 6].into_iter().enumerate() {
                let c = match how {
                    0 => cq.poll().expect("a completion").expect("NOP completion"),
                    1 => cq
                        .poll_raw()
                        .expect("a CQE")
                        .decode()
                        .expect("NOP completion"),
                    _ => {
                        let mut got = None;
                        assert_eq!(cq.poll_batch(1, |c| got = Some(c)), 1);
                        got.expect("handed over").expect("NOP completion")
                    }
                };
                let (id, k) = sq.complete(&c)?;
                assert_eq!(
                    (id, k),
                    (seen, 1),
                    "{cqe_size:?} round {round} step {step}: in order, once"
                );
                seen += 1;
            }
            assert!(cq.poll().is_none(), "{cqe_size:?} round {round}: empty");
            assert!(cq.poll_raw().is_none());
            assert_eq!(cq.poll_batch(4, |_| ()), 0);
            assert_eq!(cq.consumer_index(), (round + 1) * 3);
        }
    }
    Ok(())
}

/// `Cq::poll_batch` walks the ring in runs up to the wrap: across many wraps, with batch
/// limits that do not divide the ring, and with 64- and 128-byte CQEs, it hands over every
/// completion once, in order, and leaves the consumer index where `Cq::poll` would.
#[test]
fn poll_batch_across_wraps_for_both_cqe_sizes() -> Result<(), QueueError> {
    use mlx5_dpa::queues::cq::CqeSize;

    for cqe_size in [CqeSize::B64, CqeSize::B128] {
        // 8 CQEs; 5 completions a round, so runs end at every offset of the ring.
        let (dev, mut cq, mut sq) = nop_queues(cqe_size, 3, 4)?;
        let mut next_id = 0u64;
        let mut seen = 0u64;
        for round in 0..40u32 {
            for _ in 0..5 {
                sq.post_nop(next_id, true)?;
                next_id += 1;
            }
            sq.ring_doorbell();
            dev.run_until_idle();
            let max = [1, 2, 3, 7, 64][round as usize % 5];
            let mut got = Vec::new();
            while cq.poll_batch(max, |c| got.push(c.expect("NOP completion"))) > 0 {}
            assert_eq!(got.len(), 5, "{cqe_size:?} round {round}");
            for c in got {
                assert_eq!(
                    c.kind,
                    CompletionKind::Send {
                        wqe_opcode: wqe_opcode::NOP
                    }
                );
                assert_eq!(c.qpn, sq.sqn().0);
                let (id, k) = sq.complete(&c)?;
                assert_eq!((id, k), (seen, 1), "{cqe_size:?}: in order, once");
                seen += 1;
            }
            assert!(cq.poll().is_none(), "nothing left after the batch");
            assert_eq!(cq.consumer_index(), (round + 1) * 5);
        }
    }
    Ok(())
}
