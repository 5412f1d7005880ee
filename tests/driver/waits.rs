//! The driver's host-side waits on the device model sleep until the device does something,
//! instead of spinning (issue 34): a waiting thread costs no core, and is woken by the pass
//! that wrote what it waits for.

use std::time::{Duration, Instant};

use mlx5_dpa::devx::DevxError;
use mlx5_dpa::queues::wq::ETH_MIN_INLINE;
use mlx5_dpa::queues::QueueError;

use crate::common;

const BUF: usize = 2048;

/// Nanoseconds the calling thread has been on a CPU (`/proc/thread-self/schedstat`, first
/// field).
fn thread_cpu_ns() -> u64 {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").expect("schedstat");
    s.split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .expect("schedstat's first field")
}

/// Regression: `Cq::poll_timeout` yielded between polls, so a thread waiting 300 ms for a
/// completion that never came was on a CPU for most of those 300 ms (and, on a machine
/// whose cores were all taken, got its turn only after the others' time slices).
#[test]
fn a_completion_wait_sleeps_instead_of_spinning() -> Result<(), QueueError> {
    let mut e = common::eth(6, 6, 5, 1, BUF)?;
    e.dev.start_engine();
    let wait = Duration::from_millis(300);
    let cpu = thread_cpu_ns();
    let start = Instant::now();
    let r = e.rx_cq.poll_timeout(wait);
    let wall = start.elapsed();
    let on_cpu = Duration::from_nanos(thread_cpu_ns() - cpu);
    assert!(
        matches!(r, Err(QueueError::Devx(DevxError::Timeout(..)))),
        "nothing was sent, so the wait ends by its timeout: {r:?}"
    );
    assert!(wall >= wait, "{wall:?}");
    assert!(
        on_cpu < wall / 10,
        "the waiting thread was on a CPU for {on_cpu:?} of {wall:?}"
    );
    e.dev.stop_engine();
    Ok(())
}

/// The other half: a completion that arrives while the wait sleeps ends it (it is not left
/// to the wait's timeout), here a frame sent from another thread 100 ms into the wait.
#[test]
fn a_sleeping_completion_wait_is_woken_by_its_completion() -> Result<(), QueueError> {
    let e = common::eth(6, 6, 5, 1, BUF)?;
    let common::Eth {
        dev,
        mut sq,
        mut rq,
        mut rx_cq,
        tx,
        rx,
        mac,
        tx_cq,
        _flow,
        ..
    } = e;
    dev.start_engine();
    rq.post_recv(&[rx.sge(0, BUF)?], 7)?;
    rq.ring_doorbell();
    let mut frame = mac.to_vec();
    frame.extend_from_slice(&[0x02, 0, 0, 0, 0, 0x77, 0x88, 0xb5]);
    frame.resize(64, 0x5a);
    tx.write(0, &frame)?;
    let sender = std::thread::spawn(move || -> Result<_, QueueError> {
        std::thread::sleep(Duration::from_millis(100));
        let rest = tx.sge(ETH_MIN_INLINE, frame.len() - ETH_MIN_INLINE)?;
        sq.post_send(&frame[..ETH_MIN_INLINE], &[rest], 1)?;
        sq.ring_doorbell();
        Ok((sq, tx))
    });
    let timeout = Duration::from_secs(20);
    let start = Instant::now();
    let c = rx_cq
        .poll_timeout(timeout)?
        .expect("a good receive completion");
    let took = start.elapsed();
    assert_eq!(c.byte_len, 64);
    assert_eq!(rq.complete(c.wqe_counter)?, 7);
    assert!(
        took < timeout / 2,
        "the completion came 100 ms into the wait, which ended after {took:?}"
    );
    let (_sq, _tx) = sender.join().expect("sender")?;
    drop(tx_cq);
    dev.stop_engine();
    Ok(())
}
