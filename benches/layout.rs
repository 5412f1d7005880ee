//! Field access through the layout layer against hand-written shifts on the same bytes.
//!
//! Baseline: reading and writing `cqc.log_cq_size` and `cqc.c_eqn_or_apu_element` with
//! explicit big-endian shifts; measured: the same through `View` / `ViewMut`. The ratio is the
//! cost of the generic layer on a control path.

use criterion::{criterion_group, criterion_main, Criterion};
use mlx5_dpa::mlx5::layouts::cqc;
use mlx5_dpa::mlx5::{Layout, View, ViewMut};
use std::hint::black_box;

fn by_hand(buf: &mut [u8; 64], v: u32) -> u32 {
    // log_cq_size: bits 0x63..0x68 -> byte 12, low 5 bits; c_eqn_or_apu_element: dword 5.
    buf[12] = (buf[12] & !0x1f) | (v as u8 & 0x1f);
    buf[20..24].copy_from_slice(&v.to_be_bytes());
    u32::from(buf[12] & 0x1f) + u32::from_be_bytes([buf[20], buf[21], buf[22], buf[23]])
}

fn by_layout(buf: &mut [u8; 64], v: u32) -> u32 {
    let mut w = ViewMut::<cqc::Layout>::new(buf).expect("64 bytes");
    w.set(cqc::log_cq_size, u64::from(v));
    w.set(cqc::c_eqn_or_apu_element, u64::from(v));
    let r = View::<cqc::Layout>::new(buf).expect("64 bytes");
    (r.get(cqc::log_cq_size) + r.get(cqc::c_eqn_or_apu_element)) as u32
}

fn bench(c: &mut Criterion) {
    assert_eq!(cqc::Layout::SIZE_BYTES, 64);
    let mut a = [0u8; 64];
    let mut b = [0u8; 64];
    assert_eq!(by_hand(&mut a, 0x1234_5677), by_layout(&mut b, 0x1234_5677));
    assert_eq!(a, b);
    let mut g = c.benchmark_group("cqc_field_access");
    g.bench_function("hand_shifts", |bn| {
        bn.iter(|| by_hand(black_box(&mut a), black_box(0x55)))
    });
    g.bench_function("layout_view", |bn| {
        bn.iter(|| by_layout(black_box(&mut b), black_box(0x55)))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
