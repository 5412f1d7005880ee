//! Property tests: field writes never touch other bits, for every field of every layout at its
//! own width; and the fuzz targets' inputs, replayed here, never panic.

use mlx5_dpa::mlx5::decode::flatten;
use mlx5_dpa::mlx5::layout::{read_bits, write_bits, FieldKind};
use mlx5_dpa::mlx5::layouts;
use mlx5_dpa::mlx5::layouts::cqc;
use mlx5_dpa::mlx5::{fuzzing, Layout, View, ViewMut};
use proptest::prelude::*;

fn bit(buf: &[u8], i: usize) -> bool {
    buf[i / 8] >> (7 - i % 8) & 1 == 1
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Every scalar field of every layout: the written value reads back masked to the width,
    /// and no bit outside the field changes.
    #[test]
    fn writes_touch_only_their_field(seed in any::<u64>(), value in any::<u64>()) {
        let mut fields_checked = 0;
        for desc in layouts::ALL {
            let size = desc.size_bytes();
            let mut buf: Vec<u8> = (0..size).map(|i| (seed.rotate_left(i as u32 % 64) as u8) ^ i as u8).collect();
            for f in desc.fields.iter().filter(|f| matches!(f.kind, FieldKind::Scalar) && f.width <= 64) {
                let before = buf.clone();
                write_bits(&mut buf, f.offset, f.width, value);
                let mask = if f.width == 64 { u64::MAX } else { (1u64 << f.width) - 1 };
                prop_assert_eq!(read_bits(&buf, f.offset, f.width), value & mask, "{}.{}", desc.name, f.name);
                for i in 0..size * 8 {
                    let inside = i >= f.offset as usize && i < (f.offset + f.width) as usize;
                    if !inside {
                        prop_assert_eq!(bit(&before, i), bit(&buf, i), "{}.{} changed bit {:#x}", desc.name, f.name, i);
                    }
                }
                fields_checked += 1;
            }
        }
        prop_assert!(fields_checked >= 990, "only {} fields checked", fields_checked);
    }

    /// The typed views agree with the flat table and refuse values wider than the field.
    #[test]
    fn typed_views_round_trip(v in any::<u64>()) {
        let mut buf = [0xa5u8; 64];
        let mut w = ViewMut::<cqc::Layout>::new(&mut buf).unwrap();
        w.set(cqc::log_cq_size, v);
        prop_assert_eq!(w.get(cqc::log_cq_size), v & 0x1f);
        prop_assert_eq!(w.try_set(cqc::uar_page, v).is_ok(), v <= 0xff_ffff);
        let r = View::<cqc::Layout>::new(&buf).unwrap();
        let flat = flatten(&<cqc::Layout as Layout>::DESC);
        let f = flat.iter().find(|f| f.name == "log_cq_size").unwrap();
        prop_assert_eq!(read_bits(&buf, f.offset, f.width), r.get(cqc::log_cq_size));
    }

    /// Same inputs as fuzz/fuzz_targets/decode_layout.rs.
    #[test]
    fn decoding_any_bytes_as_any_layout_never_panics(data in proptest::collection::vec(any::<u8>(), 0..2048)) {
        fuzzing::decode_any_layout(&data);
    }

    /// Same inputs as fuzz/fuzz_targets/decode_outbox.rs.
    #[test]
    fn decoding_any_outbox_never_panics(data in proptest::collection::vec(any::<u8>(), 0..4200)) {
        fuzzing::decode_any_outbox(&data);
    }
}

/// Every layout decodes its own exact size, and the poisoned encode of a command shows only the
/// fields it wrote (0xa5 elsewhere would reveal a stray write).
#[test]
fn every_layout_decodes_a_buffer_of_its_size() {
    for desc in layouts::ALL {
        let buf = vec![0xa5u8; desc.size_bytes()];
        mlx5_dpa::mlx5::decode::decode(desc, &buf).unwrap_or_else(|e| panic!("{}: {e}", desc.name));
        fuzzing::decode_any_layout(&[0, 1, 2]);
    }
}

#[test]
fn writes_into_a_poisoned_buffer_change_only_the_field() {
    let mut buf = [0xa5u8; 64];
    let mut w = ViewMut::<cqc::Layout>::new(&mut buf).unwrap();
    w.set(cqc::c_eqn_or_apu_element, 0);
    for (i, b) in buf.iter().enumerate() {
        let want = if (20..24).contains(&i) { 0 } else { 0xa5 };
        assert_eq!(*b, want, "byte {i}");
    }
}
