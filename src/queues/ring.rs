//! Ring arithmetic shared by every queue: slots, owner parity, WQEBB counts and free space.
//! Pure functions, so the property tests can sweep every power-of-two size and counter wrap.
//!
//! Counters are free-running: a WQ producer counter is 16 bits (the width of `wqe_counter` and
//! of the doorbell record the device reads), a CQ consumer index 24 bits (PRM `cqc` / the CQ
//! doorbell record). Rings have 2^k entries, so the slot is the counter modulo the size and the
//! *pass* over the ring is the next bit up.

pub use crate::mlx5::wire::wqe::{wqebbs, SEG, SEGS_PER_WQEBB, WQEBB};
/// Mask of a CQ consumer index (24 bits).
pub const CQ_CI_MASK: u32 = 0xff_ffff;
/// `op_own[7:4]` of a CQE nobody wrote yet (PRM `MLX5_CQE_INVALID`).
pub const CQE_OPCODE_INVALID: u8 = crate::mlx5::wire::cqe::opcode::INVALID;
/// `op_own` written into every CQE before the CQ is created: invalid opcode, owner 1 (DPDK's
/// `MLX5_CQE_INVALIDATE`; FlexIO's host sets owner 1 on every entry, docs/sources.md section 9). The
/// device writes owner 0 on the first pass, so a consumer that checks only the owner bit (as
/// FlexIO device code does) sees no entry before the device wrote it; on later passes the
/// owner left by the pass before marks it. The invalid opcode is a second mark for consumers
/// that check both, as `cqe_is_sw_owned` does.
pub const CQE_INIT_OP_OWN: u8 = (CQE_OPCODE_INVALID << 4) | 1;

/// The slot of `counter` in a ring of `2^log_size` entries.
#[inline]
pub fn slot(counter: u32, log_size: u8) -> usize {
    (counter & ((1u32 << log_size) - 1)) as usize
}

/// The owner bit the device writes in pass `counter >> log_size`: its parity.
#[inline]
pub fn owner_parity(counter: u32, log_size: u8) -> u8 {
    ((counter >> log_size) & 1) as u8
}

/// Whether the CQE with `op_own`, read at consumer index `ci`, is software's: the owner bit
/// equals the pass parity and the opcode is not the invalid one.
#[inline]
pub fn cqe_is_sw_owned(op_own: u8, ci: u32, log_size: u8) -> bool {
    (op_own & 1) == owner_parity(ci, log_size) && (op_own >> 4) != CQE_OPCODE_INVALID
}

/// Entries in use between a 16-bit consumer and producer counter.
#[inline]
pub fn used16(pi: u16, ci: u16) -> u16 {
    pi.wrapping_sub(ci)
}

/// Free entries of a ring of `2^log_size` (at most 2^15) with 16-bit counters; 0 when the
/// counters are inconsistent (more in use than the ring holds).
#[inline]
pub fn free16(pi: u16, ci: u16, log_size: u8) -> u16 {
    let size = 1u32 << log_size;
    size.saturating_sub(u32::from(used16(pi, ci))) as u16
}

/// Whether the 16-bit counter `c` lies in the half-open window `[from, to)` (mod 2^16).
#[inline]
pub fn in_window16(c: u16, from: u16, to: u16) -> bool {
    c.wrapping_sub(from) < to.wrapping_sub(from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wqebbs_rounds_up_to_whole_blocks() {
        assert_eq!(wqebbs(0), 1);
        assert_eq!(wqebbs(1), 1);
        assert_eq!(wqebbs(4), 1);
        assert_eq!(wqebbs(5), 2);
        assert_eq!(wqebbs(63), 16);
    }

    #[test]
    fn initial_cqe_is_hardware_owned_on_pass_zero_and_one() {
        for log in 0..=16 {
            assert!(!cqe_is_sw_owned(CQE_INIT_OP_OWN, 0, log));
            assert!(!cqe_is_sw_owned(CQE_INIT_OP_OWN, 1 << log, log));
        }
    }
}
