//! Model throughput: firmware commands per second and 64-byte loopback packets per second.
//!
//! `cargo bench -p mlx5-sim --bench sim`. Each group has a baseline measured in the same run:
//! for commands, the bare cost of taking the device lock; for packets, copying the same frames
//! between two host buffers.

use std::hint::black_box;
use std::sync::{Arc, Mutex};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use mlx5_dpa::devx::{self, Devx};
use mlx5_dpa::mlx5::cmd::AllocPd;
use mlx5_sim::profile::Profile;
use mlx5_sim::testing::rig::{EthRig, RigConfig};
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

fn loopback(c: &mut Criterion) {
    const BATCH: usize = 64;
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
    for signal_every in [1u16, 16] {
        let dev = Device::new(Profile::bf3());
        let cfg = RigConfig {
            log_sq: 10,
            log_rq: 10,
            log_cq: 12,
            buf_size: 128,
            signal_every,
            ..Default::default()
        };
        let mut rig = EthRig::new(dev.open_devx(), cfg).unwrap();
        rig.fill_rq();
        let mut done = Vec::with_capacity(BATCH);
        g.bench_function(
            format!("model_batch{BATCH}_signal_every{signal_every}"),
            |b| {
                b.iter(|| {
                    for f in &frames {
                        rig.post_send(f).unwrap();
                    }
                    rig.ring_sq();
                    dev.step();
                    done.clear();
                    rig.poll_tx_into(usize::MAX, &mut done);
                    let mut n = 0;
                    rig.poll_rx(usize::MAX, |r| {
                        black_box(r.is_ok());
                        n += 1;
                    });
                    assert_eq!(n, BATCH);
                })
            },
        );
    }
    g.finish();
}

criterion_group!(benches, commands, loopback);
criterion_main!(benches);
