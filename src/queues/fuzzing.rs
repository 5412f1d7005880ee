//! Entry point for the CQE/EQE fuzz target (`fuzz/fuzz_targets/cqe_eqe.rs`) and the property
//! test that replays it on stable. Not part of the API.
//!
//! Whatever the bytes, nothing here may panic: the views check their length once, then every
//! accessor and `decode` reads inside the 64 bytes. The ring helpers are fed values taken from
//! the bytes, inside the domain their callers use (log sizes below 32 for counter
//! arithmetic, at most 15 for 16-bit free space), and the `assert!`s check invariants that a
//! correct implementation keeps for every input; a failed one is a bug, reported as a panic.

use super::ring;
use crate::mlx5::wire::{
    Completion, CompletionError, CompletionKind, Cqe, Cqe128, Cqe64, Eqe, Event, Syndrome, CQE_SIZE,
};

fn take<const N: usize>(data: &[u8], at: usize) -> [u8; N] {
    let mut out = [0u8; N];
    for (i, b) in out.iter_mut().enumerate() {
        *b = data.get(at + i).copied().unwrap_or(0);
    }
    out
}

fn cqe(c: &Cqe) {
    let fields = (
        c.opcode(),
        c.owner(),
        c.byte_cnt(),
        c.imm_inval_pkey(),
        c.sop_drop_qpn(),
        c.wqe_counter(),
        c.syndrome(),
        c.vendor_err_synd(),
        c.is_invalid(),
    );
    assert!(fields.0 <= 0xf && fields.1 <= 1);
    assert_eq!(Cqe::from_array(*c.bytes()), *c);
    let parsed = c.decode();
    // Whatever parses, emitted into a poisoned CQE, parses the same again.
    let mut again = Cqe64::new_unchecked([0xa5u8; CQE_SIZE]);
    match parsed {
        Ok(done) => done.emit(&mut again),
        Err(e) => e.emit(&mut again),
    }
    assert_eq!(Completion::parse(&again), parsed);
    match parsed {
        Ok(done) => {
            assert_eq!(done.qpn, c.sop_drop_qpn() & 0xff_ffff);
            assert_eq!(done.wqe_counter, c.wqe_counter());
            assert_eq!(done.byte_len, c.byte_cnt());
            assert_eq!(done.flow_tag(), done.qpn);
            assert_eq!(
                done.is_send(),
                matches!(done.kind, CompletionKind::Send { .. })
            );
            let has_imm = !matches!(
                done.kind,
                CompletionKind::Send { .. } | CompletionKind::Recv
            );
            assert_eq!(done.imm.is_some(), has_imm);
            assert!(!c.is_invalid());
        }
        Err(e) => {
            match e {
                CompletionError::Work {
                    syndrome,
                    qpn,
                    wqe_counter,
                    ..
                } => {
                    assert_eq!(syndrome.raw(), c.syndrome());
                    assert_eq!(e.syndrome(), Some(syndrome));
                    assert_eq!(e.qpn(), Some(qpn));
                    assert_eq!(e.wqe_counter(), Some(wqe_counter));
                }
                CompletionError::Malformed { opcode } => {
                    assert_eq!(opcode, c.opcode());
                    assert_eq!((e.syndrome(), e.qpn(), e.wqe_counter()), (None, None, None));
                }
            }
            let _ = e.to_string();
        }
    }
    let s = Syndrome::from_raw(c.syndrome());
    assert_eq!(s.raw(), c.syndrome());
    let _ = s.to_string();
}

fn eqe(e: &Eqe<[u8; 64]>) {
    let _ = (e.event_type(), e.sub_type(), e.owner());
    match e.decode() {
        Event::Completion { cqn } | Event::CqError { cqn, .. } => assert!(cqn <= 0xff_ffff),
        Event::QpSrq { qp_srq_n, .. } => assert!(qp_srq_n <= 0xff_ffff),
        Event::PortChange { port, .. } => assert!(port <= 0xf),
        Event::Other { event_type, .. } => assert_eq!(event_type, e.event_type()),
    }
}

fn ring_helpers(data: &[u8]) {
    let [a, b] = take::<2>(data, 0);
    let counter = u32::from_le_bytes(take::<4>(data, 2));
    let [p0, p1, c0, c1, w0, w1] = take::<6>(data, 6);
    let log = a % 32;
    let log16 = b % 16;
    let slot = ring::slot(counter, log);
    assert!(slot < 1usize << log);
    let parity = ring::owner_parity(counter, log);
    assert!(parity <= 1);
    // The next pass flips the parity (2^32 is an even number of passes for log < 32).
    assert_ne!(
        parity,
        ring::owner_parity(counter.wrapping_add(1 << log), log)
    );
    let op_own = b;
    assert_eq!(
        ring::cqe_is_sw_owned(op_own, counter, log),
        op_own & 1 == parity && op_own >> 4 != ring::CQE_OPCODE_INVALID
    );
    let ds = usize::from(a);
    let bbs = ring::wqebbs(ds);
    assert!(bbs >= 1 && usize::from(bbs) * ring::SEGS_PER_WQEBB >= ds);
    let (pi, ci, c) = (
        u16::from_le_bytes([p0, p1]),
        u16::from_le_bytes([c0, c1]),
        u16::from_le_bytes([w0, w1]),
    );
    let used = ring::used16(pi, ci);
    let free = ring::free16(pi, ci, log16);
    let size = 1u32 << log16;
    if u32::from(used) <= size {
        assert_eq!(u32::from(used) + u32::from(free), size);
    } else {
        assert_eq!(free, 0);
    }
    assert_eq!(
        ring::in_window16(c, ci, pi),
        c.wrapping_sub(ci) < pi.wrapping_sub(ci)
    );
    assert!(!ring::in_window16(c, pi, pi));
}

/// Feeds `data` to the CQE view (64-byte and, when long enough, the second half of a 128-byte
/// CQE), the EQE view, and the ring helpers. Never panics on any input.
pub fn parse_cqe_eqe(data: &[u8]) {
    match Cqe::copy_from(data) {
        Ok(c) => cqe(&c),
        Err(e) => {
            assert!(data.len() < CQE_SIZE);
            assert_eq!(e.got, data.len());
        }
    }
    if let Some(second) = data.get(CQE_SIZE..) {
        if let Ok(c) = Cqe::copy_from(second) {
            cqe(&c);
        }
    }
    if let Ok(big) = Cqe128::new_checked(data) {
        assert_eq!(
            big.cqe64().decode(),
            Cqe::copy_from(&data[64..]).unwrap().decode()
        );
    }
    if let Ok(e) = Eqe::copy_from(data) {
        eqe(&e);
        let ev = e.decode();
        assert_eq!(Event::parse(&Eqe::new_unchecked(ev.to_eqe())), ev);
    }
    ring_helpers(data);
}
