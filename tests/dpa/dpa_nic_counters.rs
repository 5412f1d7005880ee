//! NIC counters from DPA code (`flexio_dev_nic_counters_config` / `_sample`, counter ids of
//! FlexIO 24.01's `enum flexio_dev_nic_counter_ids`) and `flexio_dev_get_pcc_table_base`, on
//! the device model: the sampled values follow the port's byte counters as frames go out and
//! come back, and every configuration FlexIO documents as a crash crashes the process with
//! the refusal named in its coredump.

use crate::common;

use std::time::{Duration, Instant};

use mlx5_dpa::dpa::coredump::Cause;
use mlx5_dpa::dpa::{DpaError, Process, ProcessAttr};
use mlx5_dpa::queues::wq::ETH_MIN_INLINE;

const SELFTEST: &[u8] = include_bytes!("../../fw-blobs/bin/selftest.elf");
const BUF: usize = 2048;

// FlexIO's counter ids (`flexio_dev.h`).
const PORT0_RX_BYTES: u32 = 0x10;
const PORT1_RX_BYTES: u32 = 0x11;
const PORT0_TX_BYTES: u32 = 0x20;
const PORT3_TX_BYTES: u32 = 0x23;

// The OS calls and the model's refusal codes (`flexio_dev_dpa_arch.h`, `dpa::device_code`).
const NIC_COUNTERS_CONFIG: u64 = 6;
const NIC_COUNTERS_SAMPLE: u64 = 7;
const UNKNOWN_ID: u32 = 0x0d9a_0020;
const TOO_MANY: u32 = 0x0d9a_0021;
const BAD_POINTER: u32 = 0x0d9a_0022;
const NOT_CONFIGURED: u32 = 0x0d9a_0023;

/// `struct st_nic_args` (selftest.h): op, n, ids[16], values[16].
fn args(op: u32, ids: &[u32]) -> Vec<u8> {
    let mut b = vec![0u8; 8 + 64 + 64];
    b[..4].copy_from_slice(&op.to_le_bytes());
    b[4..8].copy_from_slice(&(ids.len() as u32).to_le_bytes());
    for (i, id) in ids.iter().enumerate() {
        b[8 + 4 * i..12 + 4 * i].copy_from_slice(&id.to_le_bytes());
    }
    b
}

fn values(p: &Process, daddr: u64, n: usize) -> Result<Vec<u32>, DpaError> {
    let mut b = vec![0u8; 4 * n];
    p.copy_from_dev(daddr + 72, &mut b)?;
    Ok(b.chunks(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect())
}

/// Sends `sizes.len()` frames to the port's own MAC (they loop back into the RQ) and waits,
/// bounded, for every send and receive completion.
fn send_frames(e: &mut common::Eth, sizes: &[usize]) {
    for i in 0..sizes.len() {
        let sge = e.rx.sge(i * BUF, BUF).unwrap();
        e.rq.post_recv(&[sge], i as u64).unwrap();
    }
    e.rq.ring_doorbell();
    for (i, &len) in sizes.iter().enumerate() {
        let mut f = e.mac.to_vec();
        f.extend_from_slice(&[0x02, 0, 0, 0, 0, 0x77, 0x88, 0xb5]);
        f.resize(len, i as u8);
        e.tx.write(i * BUF, &f).unwrap();
        let rest =
            e.tx.sge(i * BUF + ETH_MIN_INLINE, len - ETH_MIN_INLINE)
                .unwrap();
        e.sq.post_send(&f[..ETH_MIN_INLINE], &[rest], i as u64)
            .unwrap();
    }
    e.sq.ring_doorbell();
    let (mut sent, mut received) = (0, 0);
    let deadline = Instant::now() + Duration::from_secs(30);
    while sent < sizes.len() || received < sizes.len() {
        assert!(
            Instant::now() < deadline,
            "{sent} sent, {received} received"
        );
        while let Some(c) = e.tx_cq.poll() {
            e.sq.complete(&c.expect("send completion")).unwrap();
            sent += 1;
        }
        while let Some(c) = e.rx_cq.poll() {
            let c = c.expect("receive completion");
            e.rq.complete(c.wqe_counter).unwrap();
            received += 1;
        }
        std::thread::yield_now();
    }
}

#[test]
fn sampled_counters_follow_the_ports_bytes() -> Result<(), DpaError> {
    let mut e = common::eth(7, 8, 6, 1, BUF).unwrap();
    e.dev.start_engine();
    let ctx = e.dev.open_devx();
    let p = Process::create(&ctx, SELFTEST, &ProcessAttr::default())?;
    let a = p.alloc(136)?;
    let ids = [
        PORT0_TX_BYTES,
        PORT0_RX_BYTES,
        PORT1_RX_BYTES,
        PORT3_TX_BYTES,
    ];
    p.copy_to_dev(a.daddr(), &args(0, &ids))?;
    assert_eq!(p.call_raw("st_nic_counters", a.daddr())?, 0);
    p.copy_to_dev(a.daddr(), &1u32.to_le_bytes())?;

    let mut expect_tx = 0u64;
    for round in [&[60usize, 61, 1500][..], &[64; 40][..], &[1514; 17][..]] {
        send_frames(&mut e, round);
        expect_tx += round.iter().sum::<usize>() as u64;
        assert_eq!(p.call_raw("st_nic_counters", a.daddr())?, 0);
        let port = e.dev.stats().port;
        assert_eq!((port.tx_bytes, port.rx_bytes), (expect_tx, expect_tx));
        // Ports 1 and 3 are not on this device: they read 0.
        assert_eq!(
            values(&p, a.daddr(), 4)?,
            [expect_tx as u32, expect_tx as u32, 0, 0],
            "after {expect_tx} bytes each way"
        );
    }

    // A later configuration replaces the first: one id now, the others' words untouched.
    p.memset(a.daddr() + 72, 0xee, 16)?;
    p.copy_to_dev(a.daddr(), &args(0, &[PORT0_RX_BYTES])[..72])?;
    assert_eq!(p.call_raw("st_nic_counters", a.daddr())?, 0);
    p.copy_to_dev(a.daddr(), &1u32.to_le_bytes())?;
    assert_eq!(p.call_raw("st_nic_counters", a.daddr())?, 0);
    assert_eq!(
        values(&p, a.daddr(), 4)?,
        [expect_tx as u32, 0xeeee_eeee, 0xeeee_eeee, 0xeeee_eeee]
    );

    // The model runs no PCC processes: no GVMI has a table.
    p.copy_to_dev(a.daddr(), &args(3, &[0; 5])[..8])?;
    assert_eq!(p.call_raw("st_nic_counters", a.daddr())?, 0);
    drop(a);
    drop(p);
    drop(ctx);
    e.dev.stop_engine();
    Ok(())
}

/// Each configuration FlexIO documents as a crash ("counters_ids too large", "bad pointers",
/// "unknown counter", sampling "never called" config) stops the process, and its coredump
/// names the OS call and the refusal.
#[test]
fn refused_configurations_crash_the_process_with_the_reason() -> Result<(), DpaError> {
    let (d, ctx) = {
        let d = mlx5_sim::Device::with_profile("bf3").unwrap();
        d.start_engine();
        let ctx = d.open_devx();
        (d, ctx)
    };
    let nine = [PORT0_TX_BYTES; 9];
    let cases: [(u32, &[u32], u64, u32); 6] = [
        (0, &[PORT0_TX_BYTES, 0x30], NIC_COUNTERS_CONFIG, UNKNOWN_ID),
        (0, &[0x14], NIC_COUNTERS_CONFIG, UNKNOWN_ID),
        (0, &nine, NIC_COUNTERS_CONFIG, TOO_MANY),
        (0, &[], NIC_COUNTERS_CONFIG, TOO_MANY),
        (2, &[PORT0_TX_BYTES], NIC_COUNTERS_CONFIG, BAD_POINTER),
        (1, &[], NIC_COUNTERS_SAMPLE, NOT_CONFIGURED),
    ];
    for (op, ids, number, reason) in cases {
        let p = Process::create(&ctx, SELFTEST, &ProcessAttr::default())?;
        let a = p.alloc(136)?;
        p.copy_to_dev(a.daddr(), &args(op, ids))?;
        let r = p.call_raw("st_nic_counters", a.daddr());
        assert!(
            matches!(r, Err(DpaError::ProcessFault { .. })),
            "op {op} ids {ids:x?}: {r:?}"
        );
        let dump = p.coredump()?;
        assert_eq!(
            dump.cause,
            Cause::RtosCallRefused { number, reason },
            "op {op} ids {ids:x?}"
        );
        drop(a);
        drop(p);
    }
    // A good configuration in one process is not another's.
    let p = Process::create(&ctx, SELFTEST, &ProcessAttr::default())?;
    let a = p.alloc(136)?;
    p.copy_to_dev(a.daddr(), &args(0, &[PORT0_TX_BYTES]))?;
    assert_eq!(p.call_raw("st_nic_counters", a.daddr())?, 0);
    let q = Process::create(&ctx, SELFTEST, &ProcessAttr::default())?;
    let b = q.alloc(136)?;
    q.copy_to_dev(b.daddr(), &args(1, &[]))?;
    assert!(q.call_raw("st_nic_counters", b.daddr()).is_err());
    drop((a, b, p, q));
    drop(ctx);
    d.stop_engine();
    assert!(d.inventory().is_empty(), "{}", d.inventory());
    Ok(())
}
