//! Model throughput: firmware commands per second and 64-byte loopback packets per second.
//!
//! `cargo bench -p mlx5-sim --bench sim`. Each group has a baseline measured in the same run:
//! for commands, the bare cost of taking the device lock; for packets, copying the same frames
//! between two host buffers, and a plain ring of the loopback's shape in one thread
//! ([`PlainRing`]). The summary line puts the model's 64-byte loopback beside that ring, in
//! alternated rounds of the same run.

#[path = "../../benches/common/summary.rs"]
#[macro_use]
mod summary;

use std::hint::black_box;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use mlx5_dpa::devx::{self, Devx};
use mlx5_dpa::mlx5::cmd::AllocPd;
use mlx5_sim::profile::Profile;
use mlx5_sim::testing::rig::{Completion as RigCompletion, EthRig, RigConfig};
use mlx5_sim::Device;

fn commands(c: &mut Criterion) {
    let dev = Device::new(Profile::bf3());
    let ctx = dev.open_devx();
    let mut g = c.benchmark_group("firmware");
    g.throughput(Throughput::Elements(1));
    let mut nop = [0u8; 16];
    nop[0..2].copy_from_slice(&0x080du16.to_be_bytes());
    let mut out = [0u8; 16];
    g.bench_function("baseline_lock_and_copy", |b| {
        let m = Mutex::new([0u8; 16]);
        b.iter(|| {
            let g = m.lock().unwrap();
            out.copy_from_slice(&*g);
            black_box(&out);
        })
    });
    g.bench_function("nop_general_cmd", |b| {
        b.iter(|| {
            ctx.general_cmd(black_box(&nop), &mut out).unwrap();
            black_box(&out);
        })
    });
    g.bench_function("alloc_and_dealloc_pd", |b| {
        let ctx: Arc<dyn Devx> = Arc::clone(&ctx);
        b.iter(|| {
            let (obj, pd) = devx::create(&ctx, &AllocPd).unwrap();
            black_box(pd);
            obj.destroy().unwrap();
        })
    });
    g.finish();
}

fn frame64(seed: u8) -> Vec<u8> {
    let mut f = vec![seed; 64];
    f[0..6].copy_from_slice(&[0x02, 0x00, 0x5e, 0x00, 0x00, 0x01]);
    f[12..14].copy_from_slice(&[0x08, 0x00]);
    f
}

/// Frames per round of the loopback benches (one doorbell each).
const BATCH: usize = 64;

/// What one 64-byte frame costs with no device in the way: the loopback's work done by one
/// thread on plain arrays. Per frame the host writes a 64-byte send WQE (control, inline
/// L2 header, one data segment) and the frame into a send buffer; the "device" reads the
/// WQE, copies the 64 bytes into a receive buffer, compares a 16-byte header image under
/// a mask (one steering rule), and writes a 64-byte receive CQE (and a send CQE every
/// `signal_every`th); the host polls the CQEs (owner bit, byte count), copies the frame
/// out and re-posts the receive WQE.
struct PlainRing {
    sq: Vec<[u8; 64]>,
    tx: Vec<[u8; 64]>,
    rx: Vec<[u8; 64]>,
    rq: Vec<[u8; 16]>,
    rx_cq: Vec<[u8; 64]>,
    tx_cq: Vec<[u8; 64]>,
    pi: u32,
    tx_cq_pi: u32,
    tx_cq_ci: u32,
    signal_every: u32,
    rule_value: [u8; 16],
    rule_mask: [u8; 16],
    out: [u8; 64],
}

impl PlainRing {
    const LOG: u32 = 10;

    fn new(signal_every: u16) -> PlainRing {
        let n = 1usize << Self::LOG;
        let mut rule_mask = [0u8; 16];
        rule_mask[0..6].fill(0xff); // dmac
        rule_mask[12..14].fill(0xff); // ethertype
        let mut rule_value = [0u8; 16];
        rule_value[0..6].copy_from_slice(&[0x02, 0x00, 0x5e, 0x00, 0x00, 0x01]);
        rule_value[12..14].copy_from_slice(&[0x08, 0x00]);
        PlainRing {
            sq: vec![[0; 64]; n],
            tx: vec![[0; 64]; n],
            rx: vec![[0; 64]; n],
            rq: vec![[0; 16]; n],
            rx_cq: vec![[0; 64]; n],
            tx_cq: vec![[0; 64]; n],
            pi: 0,
            tx_cq_pi: 0,
            tx_cq_ci: 0,
            signal_every: u32::from(signal_every),
            rule_value,
            rule_mask,
            out: [0; 64],
        }
    }

    /// One round of `frames`; returns the frames received.
    fn round(&mut self, frames: &[Vec<u8>]) -> usize {
        let mask = (1u32 << Self::LOG) - 1;
        let start = self.pi;
        // Host: WQEs and send buffers.
        for (k, f) in frames.iter().enumerate() {
            let pi = start.wrapping_add(k as u32);
            let i = (pi & mask) as usize;
            self.tx[i].copy_from_slice(f);
            let w = &mut self.sq[i];
            w[0..4].copy_from_slice(&((pi & 0xffff) << 8 | 0x0a).to_be_bytes());
            w[4..8].copy_from_slice(&(0x100u32 << 8 | 4).to_be_bytes());
            w[11] = if (pi + 1).is_multiple_of(self.signal_every) {
                8
            } else {
                0
            };
            w[28..30].copy_from_slice(&18u16.to_be_bytes());
            w[30..48].copy_from_slice(&f[0..18]);
            w[48..52].copy_from_slice(&((f.len() - 18) as u32).to_be_bytes());
            w[52..56].copy_from_slice(&0x1234u32.to_be_bytes());
            w[56..64].copy_from_slice(&(i as u64).to_be_bytes());
        }
        self.pi = start.wrapping_add(frames.len() as u32);
        // Device: each WQE to a receive buffer and a CQE.
        for pi in start..self.pi {
            let i = (pi & mask) as usize;
            let w = black_box(&self.sq[i]);
            let buf = u64::from_be_bytes(w[56..64].try_into().unwrap_or_default()) as usize
                & mask as usize;
            let len = 18 + u32::from_be_bytes(w[48..52].try_into().unwrap_or_default()) as usize;
            let frame = &self.tx[buf];
            let mut image = [0u8; 16];
            image.copy_from_slice(&frame[0..16]);
            let hit = image
                .iter()
                .zip(&self.rule_mask)
                .zip(&self.rule_value)
                .fold(0u8, |d, ((b, m), v)| d | ((b & m) ^ v));
            if hit != 0 {
                continue;
            }
            let slot = u64::from_be_bytes(self.rq[i][8..16].try_into().unwrap_or_default())
                as usize
                & mask as usize;
            self.rx[slot][..len.min(64)].copy_from_slice(&frame[..len.min(64)]);
            let owner = ((pi >> Self::LOG) & 1) as u8;
            let c = &mut self.rx_cq[i];
            *c = [0; 64];
            c[44..48].copy_from_slice(&(len as u32).to_be_bytes());
            c[60..62].copy_from_slice(&((pi & 0xffff) as u16).to_be_bytes());
            c[63] = 0x20 | owner;
            if w[11] & 8 != 0 {
                let t = (self.tx_cq_pi & mask) as usize;
                let c = &mut self.tx_cq[t];
                *c = [0; 64];
                c[60..62].copy_from_slice(&((pi & 0xffff) as u16).to_be_bytes());
                c[63] = ((self.tx_cq_pi >> Self::LOG) & 1) as u8;
                self.tx_cq_pi = self.tx_cq_pi.wrapping_add(1);
            }
        }
        // Host: both CQs, the frames out, the receive WQEs back.
        let mut got = 0;
        for pi in start..self.pi {
            let i = (pi & mask) as usize;
            let c = black_box(&self.rx_cq[i]);
            if c[63] & 1 != ((pi >> Self::LOG) & 1) as u8 {
                break;
            }
            let len = u32::from_be_bytes(c[44..48].try_into().unwrap_or_default()) as usize;
            let slot = u64::from_be_bytes(self.rq[i][8..16].try_into().unwrap_or_default())
                as usize
                & mask as usize;
            self.out[..len.min(64)].copy_from_slice(&self.rx[slot][..len.min(64)]);
            black_box(&self.out);
            self.rq[i][8..16].copy_from_slice(&(i as u64).to_be_bytes());
            got += 1;
        }
        while self.tx_cq_ci != self.tx_cq_pi {
            black_box(&self.tx_cq[(self.tx_cq_ci & mask) as usize]);
            self.tx_cq_ci = self.tx_cq_ci.wrapping_add(1);
        }
        got
    }
}

/// The rig of the model's loopback benches: its rule matches every frame.
fn loopback_rig(signal_every: u16) -> (Device, EthRig) {
    rules_rig(signal_every, None)
}

/// A loopback rig whose rule matches the frames' destination MAC, after `extra` rules of
/// the same group that match other MACs (`RigConfig::extra_rules`).
fn rules_rig(signal_every: u16, extra: Option<u32>) -> (Device, EthRig) {
    let dev = Device::new(Profile::bf3());
    let mut cfg = RigConfig {
        log_sq: 10,
        log_rq: 10,
        log_cq: 12,
        buf_size: 128,
        signal_every,
        ..Default::default()
    };
    if let Some(extra) = extra {
        cfg.rule.dmac = Some(frame64(0)[0..6].try_into().unwrap());
        cfg.extra_rules = extra;
    }
    let mut rig = EthRig::new(dev.open_devx(), cfg).unwrap();
    rig.fill_rq();
    (dev, rig)
}

/// One round of the model's loopback: `frames` posted, one doorbell, the model stepped, both
/// CQs reaped (receives re-posted). Returns the frames received.
fn model_round(
    dev: &Device,
    rig: &mut EthRig,
    frames: &[Vec<u8>],
    done: &mut Vec<RigCompletion>,
) -> usize {
    for f in frames {
        rig.post_send(f).unwrap();
    }
    rig.ring_sq();
    dev.step();
    done.clear();
    rig.poll_tx_into(usize::MAX, done);
    let mut n = 0;
    rig.poll_rx(usize::MAX, |r| {
        black_box(r.is_ok());
        n += 1;
    });
    n
}

fn loopback(c: &mut Criterion) {
    let mut g = c.benchmark_group("loopback_64B");
    g.throughput(Throughput::Elements(BATCH as u64));
    let frames: Vec<Vec<u8>> = (0..BATCH).map(|i| frame64(i as u8)).collect();
    g.bench_function("baseline_copy", |b| {
        let mut dst = vec![0u8; 64 * BATCH];
        b.iter(|| {
            for (i, f) in frames.iter().enumerate() {
                dst[i * 64..i * 64 + 64].copy_from_slice(black_box(f));
            }
            black_box(&dst);
        })
    });
    g.bench_function("baseline_plain_ring_signal_every16", |b| {
        let mut ring = PlainRing::new(16);
        b.iter(|| assert_eq!(ring.round(&frames), BATCH))
    });
    for signal_every in [1u16, 16] {
        let (dev, mut rig) = loopback_rig(signal_every);
        let mut done = Vec::with_capacity(BATCH);
        g.bench_function(
            format!("model_batch{BATCH}_signal_every{signal_every}"),
            |b| b.iter(|| assert_eq!(model_round(&dev, &mut rig, &frames, &mut done), BATCH)),
        );
    }
    g.finish();
}

/// The model's loopback beside the plain ring: alternated rounds of `BATCH` frames (which goes
/// first rotates), the median of each, and their ratio.
fn datapath_summary(_: &mut Criterion) {
    const ROUNDS: usize = 2001;
    let frames: Vec<Vec<u8>> = (0..BATCH).map(|i| frame64(i as u8)).collect();
    let (dev, mut rig) = loopback_rig(16);
    let mut ring = PlainRing::new(16);
    let mut done = Vec::with_capacity(BATCH);
    let (mut model, mut plain) = (Vec::with_capacity(ROUNDS), Vec::with_capacity(ROUNDS));
    for r in 0..ROUNDS {
        for k in [r % 2, 1 - r % 2] {
            let t = Instant::now();
            let n = if k == 0 {
                model_round(&dev, &mut rig, &frames, &mut done)
            } else {
                ring.round(&frames)
            };
            let ns = t.elapsed().as_nanos() as f64 / BATCH as f64;
            assert_eq!(n, BATCH);
            if k == 0 {
                model.push(ns)
            } else {
                plain.push(ns)
            }
        }
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (m, p) = (median(&mut model), median(&mut plain));
    summary!(
"summary datapath: 64-byte loopback {m:.1} ns/frame, plain ring {p:.1} ns/frame ({:.1}x; median of {ROUNDS} alternated rounds of {BATCH} frames, a send CQE every 16; goal <= 5x)",
        m / p
    );

    // Steering against the rules a frame must look past: 1, 16 and 1024 rules in the
    // rig's group, the frames' own last.
    const RULES: [u32; 3] = [1, 16, 1024];
    let mut rigs: Vec<(Device, EthRig)> =
        RULES.iter().map(|n| rules_rig(16, Some(n - 1))).collect();
    let mut ns: Vec<Vec<f64>> = vec![Vec::with_capacity(ROUNDS); RULES.len()];
    for r in 0..ROUNDS {
        for k in 0..RULES.len() {
            let k = (k + r) % RULES.len();
            let (dev, rig) = &mut rigs[k];
            let t = Instant::now();
            assert_eq!(model_round(dev, rig, &frames, &mut done), BATCH);
            ns[k].push(t.elapsed().as_nanos() as f64 / BATCH as f64);
        }
    }
    let med: Vec<f64> = ns.iter_mut().map(median).collect();
    summary!(
"summary steering: 64-byte loopback with 1 rule {:.1} ns/frame, 16 rules {:.1} ({:.2}x), 1024 rules {:.1} ({:.2}x) (the frames' rule last in its group; median of {ROUNDS} rotated rounds; goal <= 1.5x)",
        med[0], med[1], med[1] / med[0], med[2], med[2] / med[0]
    );
}

criterion_group!(benches, commands, loopback, datapath_summary);
criterion_main!(benches);
