//! Property tests of the ring arithmetic (`mlx5_dpa::queues::ring`) against reference models
//! that keep counters as unbounded `u64`s: every power-of-two ring size, counters that wrap
//! at 2^16 (WQ), 2^24 (the CQ consumer index as published) and 2^32 (the CQ consumer index as
//! kept), and a producer that writes the owner bit the way the device does. Also replays the
//! CQE/EQE fuzz target's entry point on random bytes.

use std::collections::HashMap;

use mlx5_dpa::queues::fuzzing::parse_cqe_eqe;
use mlx5_dpa::queues::ring::{
    self, cqe_is_sw_owned, free16, in_window16, owner_parity, slot, used16, wqebbs,
    CQE_INIT_OP_OWN, CQE_OPCODE_INVALID, CQ_CI_MASK, SEGS_PER_WQEBB,
};
use proptest::prelude::*;

/// Largest CQ log size the properties sweep (the PRM's `log_cq_size` field is 5 bits; the
/// consumer index is 24 bits wide).
const MAX_CQ_LOG: u8 = 24;
/// Largest WQ log size (16-bit WQE counters).
const MAX_WQ_LOG: u8 = 16;

/// A start counter: anywhere, or just below one of the wrap points the arithmetic must cross.
fn start_counter() -> impl Strategy<Value = u64> {
    prop_oneof![
        any::<u32>().prop_map(u64::from),
        (0u64..70_000).prop_map(|d| (1u64 << 16) - d.min(1 << 16)),
        (0u64..70_000).prop_map(|d| (1u64 << 24) - d),
        (0u64..70_000).prop_map(|d| (1u64 << 32) - d),
        (0u64..70_000).prop_map(|d| (1u64 << 33) - d),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// The slot is the counter modulo the size and the owner parity is the pass number's low
    /// bit, for every log size and any 64-bit counter truncated to the 32 bits the CQ keeps.
    #[test]
    fn slot_and_parity_match_division(c in start_counter(), k in 0u64..100_000) {
        let c = c + k;
        for log in 0..=MAX_CQ_LOG {
            let size = 1u64 << log;
            let c32 = c as u32;
            prop_assert_eq!(slot(c32, log) as u64, c % size, "log {}", log);
            prop_assert_eq!(u64::from(owner_parity(c32, log)), (c / size) % 2, "log {}", log);
        }
    }

    /// Owner parity is constant inside a pass and flips at every pass boundary, also where
    /// the 32-bit counter wraps (2^32 is an even number of passes).
    #[test]
    fn owner_parity_alternates_every_pass(c in any::<u32>(), log in 0..=MAX_CQ_LOG) {
        let size = 1u32 << log;
        let first = c & !(size - 1);
        let p = owner_parity(first, log);
        prop_assert_eq!(owner_parity(first.wrapping_add(size - 1), log), p);
        prop_assert_eq!(owner_parity(c, log), p);
        prop_assert_eq!(owner_parity(first.wrapping_add(size), log), p ^ 1);
        prop_assert_eq!(owner_parity(first.wrapping_sub(1), log), p ^ 1);
        prop_assert_eq!(owner_parity(first.wrapping_add(size.wrapping_mul(2)), log), p);
    }

    /// Below log 24 the 24-bit consumer index the driver publishes carries the same slot and
    /// parity as the 32-bit counter it keeps (so wrapping at 2^24 changes nothing).
    #[test]
    fn the_published_24_bit_index_has_the_same_slot_and_parity(c in any::<u32>(), log in 0..MAX_CQ_LOG) {
        prop_assert_eq!(slot(c & CQ_CI_MASK, log), slot(c, log));
        prop_assert_eq!(owner_parity(c & CQ_CI_MASK, log), owner_parity(c, log));
    }

    /// A 16-bit WQ counter walks the slots of every ring of up to 2^16 entries in order
    /// across its wrap.
    #[test]
    fn wq_slots_are_continuous_across_the_16_bit_wrap(c in any::<u16>(), log in 0..=MAX_WQ_LOG) {
        let size = 1usize << log;
        let next = c.wrapping_add(1);
        prop_assert_eq!(slot(u32::from(next), log), (slot(u32::from(c), log) + 1) % size);
        prop_assert_eq!(slot(u32::from(c), log), usize::from(c) % size);
    }

    /// `cqe_is_sw_owned` against a device model: a producer that writes every CQE with
    /// `owner = (pi >> log) & 1` and a valid opcode, into a ring that already went round
    /// (or, on pass 0, holds the initial pattern), and a consumer that may read an entry
    /// exactly when the producer has written it: `ci < pi`. Counters are u64 in the model
    /// and u32 in the driver, started near every wrap point.
    #[test]
    fn cqe_ownership_matches_a_producer_model(
        log in 0..=MAX_CQ_LOG,
        start in start_counter(),
        ops in proptest::collection::vec((any::<bool>(), 0u8..0xf, 0u8..8), 1..600),
    ) {
        let size = 1u64 << log;
        let mask = size - 1;
        // The op_own the device wrote for counter k, and what a never-written slot holds.
        let written = |k: u64, opcode: u8, bits: u8| (opcode << 4) | ((bits << 1) & 0xe) | ((k >> log) & 1) as u8;
        // Slots not in the map hold what the producer wrote one pass before `start` (counters
        // start - size .. start - 1), or the initial pattern if that was before counter 0.
        let mut ring: HashMap<u64, u8> = HashMap::new();
        let before = |s: u64| -> u8 {
            let k = (start - (start & mask)) + s;
            let k = if k >= start { k.checked_sub(size) } else { Some(k) };
            match k {
                Some(k) => written(k, 2, 0),
                None => CQE_INIT_OP_OWN,
            }
        };
        let (mut pi, mut ci) = (start, start);
        for (produce, opcode, bits) in ops {
            if produce && pi - ci < size {
                ring.insert(pi & mask, written(pi, opcode, bits));
                pi += 1;
            } else {
                let op_own = ring.get(&(ci & mask)).copied().unwrap_or_else(|| before(ci & mask));
                let sw = cqe_is_sw_owned(op_own, ci as u32, log);
                prop_assert_eq!(sw, ci < pi, "ci {:#x} pi {:#x} log {} op_own {:#04x}", ci, pi, log, op_own);
                if sw {
                    ci += 1;
                }
            }
        }
        // Drain: everything written is readable, in order, and then nothing is.
        while ci < pi {
            let op_own = ring.get(&(ci & mask)).copied().unwrap_or_else(|| before(ci & mask));
            prop_assert!(cqe_is_sw_owned(op_own, ci as u32, log));
            ci += 1;
        }
        let op_own = ring.get(&(ci & mask)).copied().unwrap_or_else(|| before(ci & mask));
        prop_assert!(!cqe_is_sw_owned(op_own, ci as u32, log));
    }

    /// The invalid opcode is never software's, whatever the owner bit and counter.
    #[test]
    fn the_invalid_opcode_is_never_software_owned(low in 0u8..16, ci in any::<u32>(), log in 0..=MAX_CQ_LOG) {
        prop_assert!(!cqe_is_sw_owned((CQE_OPCODE_INVALID << 4) | low, ci, log));
    }

    /// `used16` / `free16` against u64 counters, for every ring size the 16-bit helpers take
    /// (2^0..2^15) and counters started near the 2^16 wrap.
    #[test]
    fn used_and_free_match_u64_counters(start in start_counter(), log in 0u8..=15, frac in 0.0f64..=1.0) {
        let size = 1u64 << log;
        let used = ((size as f64) * frac) as u64;
        let (ci, pi) = (start, start + used);
        prop_assert_eq!(u64::from(used16(pi as u16, ci as u16)), used);
        prop_assert_eq!(u64::from(free16(pi as u16, ci as u16, log)), size - used);
        // The edges: empty and full.
        prop_assert_eq!(u64::from(free16(ci as u16, ci as u16, log)), size);
        prop_assert_eq!(free16((ci + size) as u16, ci as u16, log), 0);
    }

    /// Inconsistent counters (more in use than the ring holds) give no free room rather than
    /// a wrapped-around number.
    #[test]
    fn overfull_counters_have_no_room(ci in any::<u16>(), log in 0u8..=15, extra in any::<u32>()) {
        let size = 1u32 << log;
        let used = size + 1 + extra % (0xffff - size);
        let pi = ci.wrapping_add(used as u16);
        prop_assert_eq!(free16(pi, ci, log), 0);
    }

    /// `in_window16(c, from, to)` is `from <= c < to` on u64 counters, for windows shorter
    /// than 2^16, across the wrap.
    #[test]
    fn in_window_matches_u64_counters(from in start_counter(), len in 0u64..(1 << 16), d in 0u64..(1 << 17)) {
        let to = from + len;
        let c = from + d;
        prop_assert_eq!(in_window16(c as u16, from as u16, to as u16), d % (1 << 16) < len);
        // The edges: `from` is in a non-empty window, `to` never is, `to - 1` is.
        prop_assert_eq!(in_window16(from as u16, from as u16, to as u16), len > 0);
        prop_assert!(!in_window16(to as u16, from as u16, to as u16));
        if len > 0 {
            prop_assert!(in_window16((to - 1) as u16, from as u16, to as u16));
        }
        // Counters behind the window are outside too.
        if d >= 1 && d <= (1 << 16) - len {
            prop_assert!(!in_window16(from.wrapping_sub(d) as u16, from as u16, to as u16));
        }
    }

    /// `wqebbs` is the number of 64-byte blocks `ds` 16-byte segments fill, at least one.
    #[test]
    fn wqebbs_counts_whole_blocks(ds in 0usize..=4 * 0xffff) {
        let want = if ds == 0 { 1 } else { ds.div_ceil(SEGS_PER_WQEBB) };
        prop_assert_eq!(usize::from(wqebbs(ds)), want);
        prop_assert!(usize::from(wqebbs(ds)) * ring::WQEBB >= ds * ring::SEG);
    }

    /// Same inputs as fuzz/fuzz_targets/cqe_eqe.rs.
    #[test]
    fn parsing_any_bytes_as_cqe_and_eqe_never_panics(data in proptest::collection::vec(any::<u8>(), 0..200)) {
        parse_cqe_eqe(&data);
    }
}

/// The initial CQE pattern is the device's on every pass for every size: on pass 0 its owner
/// bit alone says so (owner 1, parity 0), so consumers checking only the owner bit are right;
/// on odd passes the invalid opcode does.
#[test]
fn the_initial_pattern_is_hardware_owned_for_every_size() {
    for log in 0..=MAX_CQ_LOG {
        for pass in 0..4u32 {
            let ci = pass.wrapping_shl(u32::from(log));
            assert!(
                !cqe_is_sw_owned(CQE_INIT_OP_OWN, ci, log),
                "log {log} pass {pass}"
            );
        }
    }
    for log in 0..=MAX_CQ_LOG {
        assert_ne!(owner_parity(0, log), CQE_INIT_OP_OWN & 1, "log {log}");
    }
}
