//! Work queues: the send and receive rings shared by every queue kind, the Ethernet SQ, and
//! the RQ.
//!
//! The WQE formats (control, Ethernet, inline and data segments) are declared in
//! [`crate::mlx5::wire::wqe`]; this module places them in the rings. A WQE may wrap from the last WQEBB of the ring to the first; segments are written one by one
//! at their wrapped address. Receive WQEs are `stride / 16` data segments; a shorter list ends
//! with a segment whose lkey is `MLX5_INVALID_LKEY` (0x100).

pub use crate::mlx5::ids::{Rqn, Sqn};
use std::ptr::NonNull;
use std::sync::Arc;

use super::cq::{Cq, CqObj};
use super::descriptor::{wq_kind, WqDescriptor};
use super::ring::{self, SEG, WQEBB};
use super::shared::{host_queue, HostQueue};
use super::transport::Tis;
use super::{MemPlace, QueueError, QueueMemory};
use crate::devx::{self, Devx, DevxObj};
use crate::mem::{Pd, Sge};
use crate::mlx5::cmd::{CreateRq, CreateSq, ModifyRq, ModifySq, RingMem, WqAttr, WqState};
use crate::mlx5::wire::wqe::{self as wire_wqe, opcode as wqe_opcode};
use crate::mlx5::wire::Completion;
use crate::uar::{barrier, send_doorbell, DoorbellRecord, UarPage, RCV_DBR, SND_DBR};

pub use crate::mlx5::wire::wqe::{
    CTRL_CQ_UPDATE, CTRL_SOLICITED, INLINE_SEG, INVALID_LKEY, MAX_DS,
};
/// Bytes of packet headers an Ethernet send WQE must inline at least: L2 with a VLAN tag
/// (rdma-core `MLX5_ETH_L2_INLINE_HEADER_SIZE`; `min_wqe_inline_mode` L2).
pub const ETH_MIN_INLINE: usize = 18;
/// Most header bytes this driver inlines in an Ethernet segment.
pub const ETH_MAX_INLINE: usize = 256;

/// A data segment image.
#[inline]
pub(crate) fn data_seg(sge: &Sge) -> [u8; 16] {
    wire_wqe::data_seg(sge.len, sge.lkey.0, sge.addr)
}

/// The hot state of a send ring: everything posting reads and writes, in one `Copy` value.
///
/// Posting works on a copy held in a local (or in a [`EthBurst`]) and writes it back once:
/// WQE stores go through a raw pointer the compiler cannot tell apart from `self`, so state
/// kept in `self` would be reloaded and stored again after every segment.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SendCursor {
    // 32 bytes without padding: copying the cursor in and out must not move padding bytes
    // (a copy of padding became overlapping 4-byte stores and loads, and a store-forwarding
    // stall on every WQE).
    base: NonNull<u8>,
    /// `qpn << 8`, big-endian, as a native word: a control segment's `qpn_ds` less the `ds`.
    qpn_word: u32,
    /// `(2^log_size << 6) - 1`: WQEBB counter `c` starts at byte `(c << 6) & bytes_mask` of
    /// the ring (a shift and an and per WQE, where `(c & mask) * 64` costs two more moves).
    bytes_mask: u32,
    /// `2^log_size - 1`: a counter's ring slot is `counter & mask` (kept rather than
    /// `log_size`, which costs a shift and a negation on every use).
    mask: u16,
    /// `ci + 2^log_size`: the producer counter at which the ring is full (log_size <= 15).
    limit: u16,
    /// Next WQEBB counter to write.
    pub(crate) pi: u16,
    /// Oldest WQEBB not yet retired by a completion.
    pub(crate) ci: u16,
    /// `pi` when the doorbell last rang: WQEs are pending while they differ.
    db_pi: u16,
    /// The WQE that reaches this producer counter (ends at or past it) asks for a CQE.
    signal_at: u16,
    signal_every: u16,
    _spare: u16,
}

const _: () = assert!(std::mem::size_of::<SendCursor>() == 32);

/// Where a WQE under construction lives; segments are written by index.
pub(crate) struct WqeSlot {
    pi: u16,
}

impl SendCursor {
    /// The queue number.
    #[inline(always)]
    fn num(&self) -> u32 {
        u32::from_be(self.qpn_word) >> 8
    }

    #[inline(always)]
    fn log(&self) -> u8 {
        (u32::from(self.mask) + 1).trailing_zeros() as u8
    }

    /// The byte offset in the ring of WQEBB counter `counter`'s slot.
    #[inline(always)]
    fn bb_offset(&self, counter: u16) -> usize {
        (usize::from(counter) << 6) & self.bytes_mask as usize
    }

    /// The ring slot of WQEBB counter `counter`.
    #[inline(always)]
    fn slot(&self, counter: u16) -> usize {
        usize::from(counter & self.mask)
    }

    /// Free WQEBBs.
    #[inline(always)]
    pub(crate) fn free(&self) -> u16 {
        // `pi` never passes `limit` (`begin` checks the room), so this is
        // `free16(pi, ci, log_size)` in one subtraction.
        self.limit.wrapping_sub(self.pi)
    }

    /// Reserves room for a WQE of `ds` segments.
    #[inline(always)]
    pub(crate) fn begin(&self, queue: &'static str, ds: usize) -> Result<WqeSlot, QueueError> {
        if ds > MAX_DS {
            return Err(too_many_segments(ds));
        }
        let needed = ring::wqebbs(ds);
        let free = self.free();
        if needed > free {
            return Err(QueueError::Full {
                queue,
                needed,
                free,
            });
        }
        Ok(WqeSlot { pi: self.pi })
    }

    /// Writes segment `i` of the WQE in `slot`.
    #[inline(always)]
    pub(crate) fn seg(&self, slot: &WqeSlot, i: usize, bytes: &[u8; 16]) {
        let p = self.seg_ptr(slot, i);
        // One 16-byte store of the segment: a byte-array copy compiled to one store per field
        // written into the array (four for an Ethernet segment). On x86-64 the halves are
        // joined in an SSE2 register and stored once.
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `seg_ptr`'s 16 bytes, 16-byte aligned.
        unsafe {
            use std::arch::x86_64::{__m128i, _mm_set_epi64x, _mm_store_si128};
            let lo = u64::from_ne_bytes([
                bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
            ]);
            let hi = u64::from_ne_bytes([
                bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14],
                bytes[15],
            ]);
            _mm_store_si128(p.cast::<__m128i>(), _mm_set_epi64x(hi as i64, lo as i64));
        }
        #[cfg(not(target_arch = "x86_64"))]
        // SAFETY: `seg_ptr`'s 16 bytes, 16-byte aligned.
        unsafe {
            p.cast::<u128>().write(u128::from_ne_bytes(*bytes))
        };
    }

    /// Writes segment `i` of the WQE in `slot` given as its two 8-byte halves, each the
    /// segment's bytes in memory order read as a native word (`u64::from_ne_bytes`): two
    /// 8-byte stores from the registers the halves were built in. A burst's post retires four
    /// to five instructions a cycle and its stores are below the two a cycle the core takes:
    /// joining the halves in an SSE2 register first cost three instructions a segment, and
    /// bursts ran 5% slower (`benches/queues.rs`).
    #[inline(always)]
    pub(crate) fn seg_words(&self, slot: &WqeSlot, i: usize, [lo, hi]: [u64; 2]) {
        let p = self.seg_ptr(slot, i).cast::<u64>();
        // SAFETY: `seg_ptr`'s 16 bytes, 16-byte aligned.
        unsafe {
            p.write(lo);
            p.add(1).write(hi);
        }
    }

    /// Where segment `i` of the WQE in `slot` goes: 16 bytes of the ring, 16-byte aligned.
    #[inline(always)]
    fn seg_ptr(&self, slot: &WqeSlot, i: usize) -> *mut u8 {
        // The WQEBB's offset, masked into the ring, then the segment's place in it (so a WQE
        // wraps WQEBB by WQEBB, and all segments of one WQEBB share the one offset).
        let off = self.bb_offset(slot.pi.wrapping_add((i / 4) as u16)) + (i % 4) * SEG;
        // SAFETY: `bytes_mask + 1` is the ring's length (a power of two of WQEBBs, checked at
        // queue creation), so `bb_offset` is a WQEBB inside it and the 16 bytes at `off`, less
        // than a WQEBB past it, too; `off` is a multiple of 16 in a page-aligned ring. The
        // slot lies between the producer and the consumer counters (`begin` checked the
        // room), so the device does not read it until the doorbell record moves past it: a
        // plain store is the right one.
        unsafe { self.base.as_ptr().add(off) }
    }

    /// Decides whether the WQE of `ds` segments in `slot` asks for a CQE: when forced, or
    /// when it reaches `signal_at`, so that at least one WQE in every `signal_every` WQEBBs
    /// does (every `signal_every`th WQE when each takes one WQEBB). Counting WQEBBs, not WQEs,
    /// keeps a ring of large WQEs from filling before any asks. Only a signalled WQE moves
    /// state: posting stores nothing here.
    #[inline(always)]
    pub(crate) fn signal(&mut self, slot: &WqeSlot, ds: usize, force: bool) -> bool {
        let end = slot.pi.wrapping_add(ring::wqebbs(ds));
        // `end` at or past `signal_at`: within half the ring (signal_every is at most half
        // of a ring of at most 2^15), so the signed difference orders them.
        if force || end.wrapping_sub(self.signal_at) as i16 >= 0 {
            self.signal_at = end.wrapping_add(self.signal_every);
            true
        } else {
            false
        }
    }

    /// Writes the control segment and commits the WQE; its `wr_id` and size go to the
    /// ring's shadow arrays.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn finish(
        &mut self,
        shadow: &mut impl Slots,
        slot: WqeSlot,
        opcode: u8,
        opmod: u8,
        ds: usize,
        fm_ce_se: u8,
        imm: u32,
        wr_id: u64,
    ) {
        self.seg_words(
            &slot,
            0,
            ctrl_seg(self.qpn_word, opcode, opmod, slot.pi, ds, fm_ce_se, imm),
        );
        let n = ring::wqebbs(ds);
        let first = self.slot(slot.pi);
        if let Some(w) = shadow.wr_ids().get_mut(first) {
            *w = wr_id;
        }
        if n > 1 {
            // Slots come from the ring's own mask: always in range.
            let last = self.slot(slot.pi.wrapping_add(n - 1));
            for s in [first, last] {
                if let Some(c) = shadow.sizes().get_mut(s) {
                    *c = n;
                }
            }
        }
        self.pi = slot.pi.wrapping_add(n);
    }

    /// Rings the doorbell if WQEs were posted since the last one.
    #[inline]
    pub(crate) fn doorbell(&mut self, nbb: &[u16], dbr: &DoorbellRecord, uar: &UarPage) {
        if self.pi != self.db_pi {
            // The last WQE ends just before `pi`; its size is at its last slot.
            let last = self.slot(self.pi.wrapping_sub(1));
            let last_pi = self
                .pi
                .wrapping_sub(nbb.get(last).copied().unwrap_or(1).max(1));
            let off = self.slot(last_pi) * WQEBB;
            let mut ctrl = [0u8; 8];
            // SAFETY: the first 8 bytes of a WQEBB inside the ring (`slot < 2^log_size`); the
            // driver wrote them in `finish` and the device only reads WQEs.
            unsafe {
                std::ptr::copy_nonoverlapping(self.base.as_ptr().add(off), ctrl.as_mut_ptr(), 8)
            };
            send_doorbell(dbr, self.pi, uar, ctrl, None);
            self.db_pi = self.pi;
        }
    }
}

/// A control segment, as [`CtrlSegRepr::to_bytes`] writes it, in the two native words of
/// [`SendCursor::seg_words`]. `qpn_word` is `qpn << 8` big-endian, as a native `u32` (the
/// cursor keeps it so): building `qpn_ds` from the number costs a shift, an or and a byte swap
/// on every WQE.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn ctrl_seg(
    qpn_word: u32,
    opcode: u8,
    opmod: u8,
    wqe_index: u16,
    ds: usize,
    fm_ce_se: u8,
    imm: u32,
) -> [u64; 2] {
    let w0 = ((u32::from(opmod) << 24) | (u32::from(wqe_index) << 8) | u32::from(opcode)).to_be();
    let w1 = qpn_word | (ds as u32 & 0x3f).to_be();
    let w2 = u32::from(fm_ce_se).to_be();
    [join_ne(w0, w1), join_ne(w2, imm.to_be())]
}

/// The native word whose memory bytes are `a`'s then `b`'s.
#[inline(always)]
fn join_ne(a: u32, b: u32) -> u64 {
    // Arithmetic, not a byte array: LLVM split the array's word back into bytes.
    if cfg!(target_endian = "little") {
        u64::from(a) | (u64::from(b) << 32)
    } else {
        (u64::from(a) << 32) | u64::from(b)
    }
}

/// A data segment (`wire::wqe::data_seg`) in the two native words of
/// [`SendCursor::seg_words`]: one byte swap per word, where the byte image compiled to a
/// five-instruction vector shuffle.
#[inline(always)]
pub(crate) fn data_seg_words(sge: &Sge) -> [u64; 2] {
    // Big-endian `len` then `lkey`: the 8 bytes of `len << 32 | lkey` in big-endian order.
    // Written as a rotation of `lkey << 32 | len`, which on a little-endian host is one 8-byte
    // load of the two fields (adjacent in `Sge`): a load, a rotation and a byte swap.
    [
        ((u64::from(sge.lkey.0) << 32) | u64::from(sge.len))
            .rotate_right(32)
            .to_be(),
        sge.addr.to_be(),
    ]
}

#[cold]
fn too_many_segments(ds: usize) -> QueueError {
    QueueError::BadRequest(format!(
        "the WQE needs {ds} segments; a WQE holds at most {MAX_DS}"
    ))
}

#[cold]
fn bad_inline_len(h: usize) -> QueueError {
    QueueError::BadRequest(format!(
        "{h} inline header bytes; an Ethernet WQE inlines {ETH_MIN_INLINE}..={ETH_MAX_INLINE}"
    ))
}

/// Per-WQE shadow state: the `wr_id` of the WQE starting at each slot, and WQE sizes.
///
/// `nbb[s]` is one except at the first and the last slot of a WQE of more than one WQEBB
/// still outstanding, where it is that WQE's size: posting such a WQE writes both, retiring it
/// puts both back to one, a reset fills the array with ones. So posting a one-WQEBB WQE (an
/// Ethernet send) stores only its `wr_id`; retiring walks WQEs forward from their first
/// slots, and the doorbell finds the last WQE posted from its last slot.
#[derive(Debug)]
pub(crate) struct Shadow {
    wr_id: Box<[u64]>,
    nbb: Box<[u16]>,
}

impl Shadow {
    /// The arrays as slices, for a burst: the slices' addresses and lengths then live in
    /// registers, where the arrays' own were loaded again after every WQE store.
    #[inline(always)]
    pub(crate) fn view(&mut self) -> ShadowMut<'_> {
        ShadowMut {
            wr_id: &mut self.wr_id,
            nbb: &mut self.nbb,
        }
    }
}

/// [`Shadow`], borrowed for a burst.
#[derive(Debug)]
pub(crate) struct ShadowMut<'a> {
    wr_id: &'a mut [u64],
    nbb: &'a mut [u16],
}

/// Where posting finds the shadow arrays: [`Shadow`] itself for one post (its arrays are
/// loaded after the WQE's stores, when they are needed: loaded up front, for one post, they
/// held registers the post needed and were spilled), or a [`ShadowMut`] for a burst.
pub(crate) trait Slots {
    fn wr_ids(&mut self) -> &mut [u64];
    fn sizes(&mut self) -> &mut [u16];
}

impl Slots for Shadow {
    #[inline(always)]
    fn wr_ids(&mut self) -> &mut [u64] {
        &mut self.wr_id
    }
    #[inline(always)]
    fn sizes(&mut self) -> &mut [u16] {
        &mut self.nbb
    }
}

impl Slots for ShadowMut<'_> {
    #[inline(always)]
    fn wr_ids(&mut self) -> &mut [u64] {
        self.wr_id
    }
    #[inline(always)]
    fn sizes(&mut self) -> &mut [u16] {
        self.nbb
    }
}

/// A send ring: WQEBB slots, producer/consumer counters, and per-WQE shadow state.
#[derive(Debug)]
pub(crate) struct SendRing {
    pub(crate) cur: SendCursor,
    shadow: Shadow,
}

// SAFETY: `cur.base` points into queue memory the owning queue holds; only `&mut self`
// methods (or a burst holding `&mut` of the queue) write through it.
unsafe impl Send for SendRing {}

impl SendRing {
    pub(crate) fn new(base: NonNull<u8>, log_size: u8, signal_every: u16, num: u32) -> SendRing {
        // Callers keep `log_size` in 1..=15 (`EthSqConfig`, `QpConfig`): 2^21 bytes at most.
        let n = 1usize << log_size;
        SendRing {
            cur: SendCursor {
                base,
                qpn_word: (num << 8).to_be(),
                bytes_mask: ((n * WQEBB) - 1) as u32,
                mask: ((1u32 << log_size) - 1) as u16,
                limit: 1u16 << log_size.min(15),
                pi: 0,
                ci: 0,
                db_pi: 0,
                signal_at: signal_every.max(1),
                signal_every: signal_every.max(1),
                _spare: 0,
            },
            shadow: Shadow {
                wr_id: vec![0; n].into_boxed_slice(),
                nbb: vec![1; n].into_boxed_slice(),
            },
        }
    }

    pub(crate) fn log_size(&self) -> u8 {
        self.cur.log()
    }

    /// Next WQEBB counter to write.
    pub(crate) fn pi(&self) -> u16 {
        self.cur.pi
    }

    /// Oldest WQEBB not retired.
    pub(crate) fn ci(&self) -> u16 {
        self.cur.ci
    }

    /// Free WQEBBs.
    pub(crate) fn free(&self) -> u16 {
        self.cur.free()
    }

    /// Runs `f` on a copy of the hot state and the shadow arrays, then stores the copy back.
    #[inline(always)]
    pub(crate) fn with<R>(&mut self, f: impl FnOnce(&mut SendCursor, &mut Shadow) -> R) -> R {
        let mut cur = self.cur;
        let signal_at = cur.signal_at;
        let r = f(&mut cur, &mut self.shadow);
        // Posting moves only these, and `signal_at` only on a signalled WQE.
        self.cur.pi = cur.pi;
        if cur.signal_at != signal_at {
            self.cur.signal_at = cur.signal_at;
        }
        r
    }

    /// Rings the doorbell if WQEs were posted since the last one.
    #[inline]
    pub(crate) fn doorbell(&mut self, dbr: &DoorbellRecord, uar: &UarPage) {
        self.cur.doorbell(&self.shadow.nbb, dbr, uar);
    }

    /// Retires WQEs up to and including the one at `wqe_counter`; returns its `wr_id` and how
    /// many WQEs were retired.
    #[inline]
    pub(crate) fn retire(
        &mut self,
        queue: &'static str,
        wqe_counter: u16,
    ) -> Result<(u64, u16), QueueError> {
        let (pi, mask, num) = (self.cur.pi, self.cur.mask, self.cur.num());
        let mut ci = self.cur.ci;
        let stray = QueueError::StrayCompletion {
            queue,
            num,
            wqe_counter,
        };
        if !ring::in_window16(wqe_counter, ci, pi) {
            return Err(stray);
        }
        let first = ci;
        let mut count = 0;
        let mut multi = false;
        loop {
            let s = usize::from(ci & mask);
            let at = ci;
            let n = self.shadow.nbb.get(s).copied().unwrap_or(1).max(1);
            multi |= n > 1;
            ci = ci.wrapping_add(n);
            count += 1;
            if at == wqe_counter {
                if multi {
                    self.forget_sizes(first, count);
                }
                self.cur.ci = ci;
                self.cur.limit = ci.wrapping_add(mask).wrapping_add(1);
                return Ok((self.shadow.wr_id.get(s).copied().unwrap_or(0), count));
            }
            if !ring::in_window16(wqe_counter, ci, pi) {
                // The counter fell between WQE starts: not a WQE we posted. Nothing retired.
                return Err(stray);
            }
        }
    }

    /// Puts the sizes of the `count` WQEs from counter `from` back to one (they are retired):
    /// [`Shadow`]'s rule.
    #[cold]
    fn forget_sizes(&mut self, mut from: u16, count: u16) {
        let mask = self.cur.mask;
        for _ in 0..count {
            let s = usize::from(from & mask);
            let n = self.shadow.nbb.get(s).copied().unwrap_or(1).max(1);
            if n > 1 {
                let last = usize::from(from.wrapping_add(n - 1) & mask);
                for i in [s, last] {
                    if let Some(c) = self.shadow.nbb.get_mut(i) {
                        *c = 1;
                    }
                }
            }
            from = from.wrapping_add(n);
        }
    }

    /// Forgets every WQE (after the queue went through RST).
    pub(crate) fn reset(&mut self) {
        self.cur.pi = 0;
        self.cur.ci = 0;
        self.cur.limit = self.cur.mask.wrapping_add(1);
        self.cur.db_pi = 0;
        self.cur.signal_at = self.cur.signal_every;
        self.shadow.nbb.fill(1);
    }

    /// WQEBBs posted and not yet retired by a completion.
    pub(crate) fn outstanding(&self) -> u16 {
        ring::used16(self.cur.pi, self.cur.ci)
    }
}

/// Builds one Ethernet send WQE: ctrl, Ethernet segment with `headers` inlined, then one data
/// segment per gather entry.
#[inline(always)]
fn eth_send(
    cur: &mut SendCursor,
    shadow: &mut impl Slots,
    headers: &[u8],
    gather: &[Sge],
    wr_id: u64,
    force: bool,
) -> Result<(), QueueError> {
    let h = headers.len();
    if !(ETH_MIN_INLINE..=ETH_MAX_INLINE).contains(&h) {
        return Err(bad_inline_len(h));
    }
    let hdr_segs = (h - 2).div_ceil(SEG);
    let ds = 2 + hdr_segs + gather.len();
    let slot = cur.begin("Ethernet SQ", ds)?;
    // The Ethernet segment holds the first two header bytes; the rest follow it.
    cur.seg(&slot, 1, &wire_wqe::eth_seg(headers));
    for (i, chunk) in headers[2..].chunks(SEG).enumerate() {
        let mut s = [0u8; 16];
        s[..chunk.len()].copy_from_slice(chunk);
        cur.seg(&slot, 2 + i, &s);
    }
    for (i, g) in gather.iter().enumerate() {
        cur.seg_words(&slot, 2 + hdr_segs + i, data_seg_words(g));
    }
    let ce = if cur.signal(&slot, ds, force) {
        CTRL_CQ_UPDATE
    } else {
        0
    };
    cur.finish(shadow, slot, wqe_opcode::SEND, 0, ds, ce, 0, wr_id);
    Ok(())
}

#[inline(always)]
fn eth_nop(
    cur: &mut SendCursor,
    shadow: &mut impl Slots,
    wr_id: u64,
    signaled: bool,
) -> Result<(), QueueError> {
    let slot = cur.begin("Ethernet SQ", 1)?;
    let ce = if cur.signal(&slot, 1, signaled) {
        CTRL_CQ_UPDATE
    } else {
        0
    };
    cur.finish(shadow, slot, wqe_opcode::NOP, 0, 1, ce, 0, wr_id);
    Ok(())
}

/// A burst of posts on an [`EthSq`] ([`EthSq::burst`]): the same WQEs as
/// [`EthSq::post_send`], with the ring's counters kept in a local copy that is stored back,
/// and the doorbell rung, once when the burst ends.
///
/// ```no_run
/// # fn f(sq: &mut mlx5_dpa::queues::EthSq, hdr: &[u8], sge: mlx5_dpa::mem::Sge)
/// # -> Result<(), mlx5_dpa::queues::QueueError> {
/// let mut burst = sq.burst();
/// for wr_id in 0..32 {
///     burst.post_send(hdr, &[sge], wr_id)?;
/// }
/// burst.finish(); // or drop: one doorbell for the 32 WQEs
/// # Ok(()) }
/// ```
pub struct EthBurst<'a> {
    cur: SendCursor,
    home: &'a mut SendCursor,
    shadow: ShadowMut<'a>,
    dbr: &'a DoorbellRecord,
    uar: &'a UarPage,
}

impl EthBurst<'_> {
    /// As [`EthSq::post_send`].
    ///
    /// # Errors
    /// As [`EthSq::post_send`]; a refused WQE leaves the ring as it was.
    #[inline]
    pub fn post_send(
        &mut self,
        headers: &[u8],
        gather: &[Sge],
        wr_id: u64,
    ) -> Result<(), QueueError> {
        let EthBurst { cur, shadow, .. } = self;
        eth_send(cur, shadow, headers, gather, wr_id, false)
    }

    /// As [`EthSq::post_send_signaled`].
    ///
    /// # Errors
    /// As [`EthSq::post_send`].
    #[inline]
    pub fn post_send_signaled(
        &mut self,
        headers: &[u8],
        gather: &[Sge],
        wr_id: u64,
    ) -> Result<(), QueueError> {
        let EthBurst { cur, shadow, .. } = self;
        eth_send(cur, shadow, headers, gather, wr_id, true)
    }

    /// As [`EthSq::post_nop`].
    ///
    /// # Errors
    /// No room.
    #[inline]
    pub fn post_nop(&mut self, wr_id: u64, signaled: bool) -> Result<(), QueueError> {
        eth_nop(&mut self.cur, &mut self.shadow, wr_id, signaled)
    }

    /// Free WQEBBs left in the ring.
    #[inline]
    pub fn free(&self) -> u16 {
        self.cur.free()
    }

    /// Ends the burst: stores the counters back and rings the doorbell for what was posted.
    #[inline]
    pub fn finish(self) {
        // Drop does the work.
    }
}

impl Drop for EthBurst<'_> {
    #[inline]
    fn drop(&mut self) {
        self.cur.doorbell(self.shadow.nbb, self.dbr, self.uar);
        *self.home = self.cur;
    }
}

impl std::fmt::Debug for EthBurst<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EthBurst")
            .field("pi", &self.cur.pi)
            .field("ci", &self.cur.ci)
            .finish()
    }
}

/// A receive ring.
#[derive(Debug)]
pub(crate) struct RecvRing {
    base: NonNull<u8>,
    log_size: u8,
    stride: usize,
    pub(crate) pi: u16,
    pub(crate) ci: u16,
    wr_id: Box<[u64]>,
    pending: bool,
    num: u32,
}

// SAFETY: as for `SendRing`.
unsafe impl Send for RecvRing {}

impl RecvRing {
    pub(crate) fn new(base: NonNull<u8>, log_size: u8, stride: usize, num: u32) -> RecvRing {
        RecvRing {
            base,
            log_size,
            stride,
            pi: 0,
            ci: 0,
            wr_id: vec![0; 1 << log_size].into_boxed_slice(),
            pending: false,
            num,
        }
    }

    pub(crate) fn max_sge(&self) -> usize {
        self.stride / SEG
    }

    pub(crate) fn stride(&self) -> usize {
        self.stride
    }

    pub(crate) fn log_size(&self) -> u8 {
        self.log_size
    }

    #[inline]
    pub(crate) fn post(
        &mut self,
        queue: &'static str,
        sges: &[Sge],
        wr_id: u64,
    ) -> Result<(), QueueError> {
        if sges.len() > self.max_sge() {
            return Err(QueueError::BadRequest(format!(
                "{} scatter entries; this receive queue takes at most {}",
                sges.len(),
                self.max_sge()
            )));
        }
        let free = ring::free16(self.pi, self.ci, self.log_size);
        if free == 0 {
            return Err(QueueError::Full {
                queue,
                needed: 1,
                free,
            });
        }
        let s = ring::slot(u32::from(self.pi), self.log_size);
        let at = s * self.stride;
        let write = |i: usize, seg: [u8; 16]| {
            // SAFETY: `s < 2^log_size`, `i < stride / 16`: inside the ring (checked at
            // creation). The slot is free (checked above), so the device does not read it.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    seg.as_ptr(),
                    self.base.as_ptr().add(at + i * SEG),
                    SEG,
                );
            }
        };
        for (i, sge) in sges.iter().enumerate() {
            write(i, data_seg(sge));
        }
        if sges.len() < self.max_sge() {
            write(sges.len(), wire_wqe::end_of_scatter_seg());
        }
        self.wr_id[s] = wr_id;
        self.pi = self.pi.wrapping_add(1);
        self.pending = true;
        Ok(())
    }

    #[inline]
    pub(crate) fn doorbell(&mut self, dbr: &DoorbellRecord) {
        if self.pending {
            // ORDERING: the receive WQEs before the counter that hands them to the device.
            barrier::dma_wmb();
            dbr.store(RCV_DBR, u32::from(self.pi));
            self.pending = false;
        }
    }

    #[inline]
    pub(crate) fn retire(
        &mut self,
        queue: &'static str,
        wqe_counter: u16,
    ) -> Result<u64, QueueError> {
        if !ring::in_window16(wqe_counter, self.ci, self.pi) {
            return Err(QueueError::StrayCompletion {
                queue,
                num: self.num,
                wqe_counter,
            });
        }
        let s = ring::slot(u32::from(wqe_counter), self.log_size);
        self.ci = wqe_counter.wrapping_add(1);
        Ok(self.wr_id[s])
    }

    pub(crate) fn reset(&mut self) {
        self.pi = 0;
        self.ci = 0;
        self.pending = false;
    }

    /// The `wr_id` posted in ring slot `s` (`s < 2^log_size`).
    pub(crate) fn wr_id_at(&self, s: usize) -> u64 {
        self.wr_id[s]
    }
}

/// How to create an Ethernet SQ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EthSqConfig {
    /// log2 of the number of WQEBBs.
    pub log_size: u8,
    /// Ask for a CQE at least once every this many WQEBBs: the first WQE that ends
    /// `signal_every` WQEBBs or more past the end of the last signalled one asks (1 = every
    /// WQE; with one-WQEBB WQEs, every `signal_every`th). At most half the ring.
    pub signal_every: u16,
}

impl EthSqConfig {
    /// Ring bytes this SQ needs.
    pub fn ring_bytes(&self) -> usize {
        (1usize << self.log_size.min(16)) * WQEBB
    }
}

/// An Ethernet send queue over one TIS.
pub struct EthSq {
    // Field order is drop order: the SQ object goes before what it references.
    obj: DevxObj,
    sqn: Sqn,
    ring: SendRing,
    dbr: DoorbellRecord,
    uar: Arc<UarPage>,
    ring_place: MemPlace,
    dbr_place: MemPlace,
    send_cq: Arc<CqObj>,
    _tis: Arc<Tis>,
    _pd: Arc<Pd>,
    _mem: Box<dyn QueueMemory>,
}

impl std::fmt::Debug for EthSq {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EthSq")
            .field("sqn", &self.sqn)
            .field("pi", &self.ring.pi())
            .field("ci", &self.ring.ci())
            .finish()
    }
}

impl EthSq {
    /// Creates the SQ (CREATE_SQ over `tis`, completions to `cq`) and moves it RST -> RDY.
    ///
    /// # Errors
    /// Configuration, memory, or firmware errors; a created SQ is destroyed again.
    pub fn create(
        dev: &Arc<dyn Devx>,
        pd: &Arc<Pd>,
        uar: &Arc<UarPage>,
        tis: &Arc<Tis>,
        cq: &Cq,
        mem: impl QueueMemory,
        cfg: &EthSqConfig,
    ) -> Result<EthSq, QueueError> {
        if cfg.log_size > 15 || cfg.log_size == 0 {
            return Err(QueueError::Config(format!(
                "SQ log_size {} (1..=15)",
                cfg.log_size
            )));
        }
        if cfg.signal_every == 0 || u32::from(cfg.signal_every) > (1u32 << cfg.log_size) / 2 {
            return Err(QueueError::Config(format!(
                "signal_every {} must be 1..={} for a ring of {} WQEBBs",
                cfg.signal_every,
                (1u32 << cfg.log_size) / 2,
                1u32 << cfg.log_size
            )));
        }
        let HostQueue {
            ring_place,
            ring,
            dbr_place,
            dbr,
        } = host_queue(&mem, "SQ memory", cfg.ring_bytes())?;
        let ring = ring.base();
        let (obj, sqn) = create_rdy_sq(
            dev,
            &CreateSq {
                cqn: cq.cqn(),
                tisn: tis.tisn(),
                wq: WqAttr {
                    pd: pd.pdn(),
                    uar_page: uar.page_id(),
                    log_wq_stride: 6,
                    log_wq_sz: cfg.log_size,
                    mem: RingMem {
                        umem_id: ring_place.umem_id,
                        umem_offset: ring_place.umem_offset,
                        dbr_umem_id: dbr_place.umem_id,
                        dbr_offset: dbr_place.umem_offset,
                    },
                },
                flush_in_error_en: true,
            },
        )?;
        Ok(EthSq {
            obj,
            sqn,
            ring: SendRing::new(ring, cfg.log_size, cfg.signal_every, sqn.0),
            dbr,
            uar: Arc::clone(uar),
            ring_place,
            dbr_place,
            send_cq: Arc::clone(&cq.shared),
            _tis: Arc::clone(tis),
            _pd: Arc::clone(pd),
            _mem: Box::new(mem),
        })
    }

    /// The SQ number.
    pub fn sqn(&self) -> Sqn {
        self.sqn
    }

    /// Free WQEBBs.
    pub fn free(&self) -> u16 {
        self.ring.free()
    }

    /// Posts one frame: `headers` (at least [`ETH_MIN_INLINE`] bytes) inlined in the Ethernet
    /// segment, then the rest of the frame gathered from `gather`. Not visible to the device
    /// until [`EthSq::ring_doorbell`].
    ///
    /// # Errors
    /// Header length out of range, too many segments, or no room.
    #[inline]
    pub fn post_send(
        &mut self,
        headers: &[u8],
        gather: &[Sge],
        wr_id: u64,
    ) -> Result<(), QueueError> {
        self.post(headers, gather, wr_id, false)
    }

    /// As [`EthSq::post_send`], always asking for a CQE.
    ///
    /// # Errors
    /// As [`EthSq::post_send`].
    pub fn post_send_signaled(
        &mut self,
        headers: &[u8],
        gather: &[Sge],
        wr_id: u64,
    ) -> Result<(), QueueError> {
        self.post(headers, gather, wr_id, true)
    }

    #[inline]
    fn post(
        &mut self,
        headers: &[u8],
        gather: &[Sge],
        wr_id: u64,
        force: bool,
    ) -> Result<(), QueueError> {
        self.ring
            .with(|cur, shadow| eth_send(cur, shadow, headers, gather, wr_id, force))
    }

    /// Posts a NOP (optionally signalled).
    ///
    /// # Errors
    /// No room.
    pub fn post_nop(&mut self, wr_id: u64, signaled: bool) -> Result<(), QueueError> {
        self.ring
            .with(|cur, shadow| eth_nop(cur, shadow, wr_id, signaled))
    }

    /// Starts a burst: posts through the returned [`EthBurst`] keep the ring's counters in
    /// registers, and the doorbell rings once when the burst ends (dropped or
    /// [`EthBurst::finish`]ed). The fastest way to post many WQEs.
    #[inline]
    pub fn burst(&mut self) -> EthBurst<'_> {
        EthBurst {
            cur: self.ring.cur,
            home: &mut self.ring.cur,
            shadow: self.ring.shadow.view(),
            dbr: &self.dbr,
            uar: &self.uar,
        }
    }

    /// Rings the doorbell for everything posted since the last one (one doorbell per batch).
    #[inline]
    pub fn ring_doorbell(&mut self) {
        self.ring.doorbell(&self.dbr, &self.uar);
    }

    /// Retires the WQEs a send completion covers; returns the signalled WQE's `wr_id` and how
    /// many WQEs (signalled or not) completed.
    ///
    /// # Errors
    /// The completion names no outstanding WQE of this SQ.
    #[inline]
    pub fn complete(&mut self, c: &Completion) -> Result<(u64, u16), QueueError> {
        self.ring.retire("Ethernet SQ", c.wqe_counter)
    }

    /// After an error completion: ERR -> RST -> RDY, forgetting every outstanding WQE.
    ///
    /// # Errors
    /// Firmware refused a transition.
    pub fn recover(&mut self) -> Result<(), QueueError> {
        let sqn = self.sqn;
        devx::modify(
            &self.obj,
            &ModifySq {
                sqn,
                from: WqState::Err,
                to: WqState::Rst,
            },
        )?;
        self.ring.reset();
        self.dbr.store(SND_DBR, 0);
        devx::modify(
            &self.obj,
            &ModifySq {
                sqn,
                from: WqState::Rst,
                to: WqState::Rdy,
            },
        )?;
        Ok(())
    }

    /// The DevX handle.
    pub fn obj(&self) -> &DevxObj {
        &self.obj
    }

    /// The UAR page its doorbells go to.
    pub fn uar(&self) -> &Arc<UarPage> {
        &self.uar
    }

    /// A descriptor for an external engine (the host must stop posting).
    pub fn descriptor(&self) -> WqDescriptor {
        WqDescriptor {
            kind: wq_kind::ETH_SQ,
            num: self.sqn.0,
            sq_ring_addr: self.ring_place.device_addr,
            log_sq_wqebb_cnt: u32::from(self.ring.log_size()),
            sq_producer_index: u32::from(self.ring.pi()),
            uar_page_id: self.uar.page_id(),
            dbr_addr: self.dbr_place.device_addr,
            uar_doorbell_addr: self.uar.base() as u64 + crate::devx::UAR_DOORBELL_OFFSET as u64,
            send_cq: self.send_cq.cqn.0,
            ring_umem_id: self.ring_place.umem_id,
            ring_umem_offset: self.ring_place.umem_offset,
            ..Default::default()
        }
    }
}

/// How to create an RQ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RqConfig {
    /// log2 of the number of receive WQEs.
    pub log_size: u8,
    /// Scatter entries per receive (rounded up to a power of two for the stride).
    pub max_sge: u8,
}

impl RqConfig {
    /// Bytes per receive WQE.
    pub fn stride(&self) -> usize {
        (usize::from(self.max_sge.max(1)) * SEG).next_power_of_two()
    }
    /// Ring bytes this RQ needs.
    pub fn ring_bytes(&self) -> usize {
        (1usize << self.log_size.min(16)) * self.stride()
    }
    /// The sizes a receive queue (`what`: RQ, SRQ) may have; the sentence saying why not.
    pub(crate) fn check(&self, what: &str) -> Result<(), String> {
        if self.log_size > 15 || self.max_sge == 0 || self.stride() > 1024 {
            return Err(format!(
                "{what} log_size {} (at most 15), max_sge {} (1..=64)",
                self.log_size, self.max_sge
            ));
        }
        Ok(())
    }
    /// The work queue of a receive queue of these sizes over `mem`.
    pub(crate) fn wq_attr(&self, pd: crate::mem::Pdn, uar_page: u32, mem: RingMem) -> WqAttr {
        WqAttr {
            pd,
            uar_page,
            log_wq_stride: self.stride().trailing_zeros() as u8,
            log_wq_sz: self.log_size,
            mem,
        }
    }
}

/// The firmware object of an RQ, held by TIRs that point at it.
pub(crate) struct RqObj {
    pub(crate) obj: DevxObj,
    pub(crate) rqn: Rqn,
    cq: Arc<CqObj>,
    _pd: Arc<Pd>,
    _mem: Box<dyn QueueMemory>,
}

/// A cyclic receive queue (Ethernet), fed by steering through a TIR.
pub struct Rq {
    pub(crate) shared: Arc<RqObj>,
    ring: RecvRing,
    dbr: DoorbellRecord,
    ring_place: MemPlace,
    dbr_place: MemPlace,
    uar_page_id: u32,
}

impl std::fmt::Debug for Rq {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rq")
            .field("rqn", &self.shared.rqn)
            .field("pi", &self.ring.pi)
            .field("ci", &self.ring.ci)
            .finish()
    }
}

impl Rq {
    /// Creates the RQ (completions to `cq`) and moves it RST -> RDY.
    ///
    /// # Errors
    /// Configuration, memory, or firmware errors.
    pub fn create(
        dev: &Arc<dyn Devx>,
        pd: &Arc<Pd>,
        uar: &Arc<UarPage>,
        cq: &Cq,
        mem: impl QueueMemory,
        cfg: &RqConfig,
    ) -> Result<Rq, QueueError> {
        cfg.check("RQ").map_err(QueueError::Config)?;
        let HostQueue {
            ring_place,
            ring,
            dbr_place,
            dbr,
        } = host_queue(&mem, "RQ memory", cfg.ring_bytes())?;
        let ring = ring.base();
        let stride = cfg.stride();
        let (obj, rqn) = create_rdy_rq(
            dev,
            &CreateRq {
                cqn: cq.cqn(),
                wq: cfg.wq_attr(pd.pdn(), uar.page_id(), ring_mem(&ring_place, &dbr_place)),
                flush_in_error_en: true,
                counter_set_id: 0,
            },
        )?;
        Ok(Rq {
            shared: Arc::new(RqObj {
                obj,
                rqn,
                cq: Arc::clone(&cq.shared),
                _pd: Arc::clone(pd),
                _mem: Box::new(mem),
            }),
            ring: RecvRing::new(ring, cfg.log_size, stride, rqn.0),
            dbr,
            ring_place,
            dbr_place,
            uar_page_id: uar.page_id(),
        })
    }

    /// The RQ number.
    pub fn rqn(&self) -> Rqn {
        self.shared.rqn
    }

    /// The CQ its completions go to.
    pub fn cqn(&self) -> super::Cqn {
        self.shared.cq.cqn
    }

    /// Free receive slots.
    pub fn free(&self) -> u16 {
        ring::free16(self.ring.pi, self.ring.ci, self.ring.log_size())
    }

    /// Posts one receive buffer (a scatter list). Not visible until [`Rq::ring_doorbell`].
    ///
    /// # Errors
    /// Too many entries or no room.
    #[inline]
    pub fn post_recv(&mut self, sges: &[Sge], wr_id: u64) -> Result<(), QueueError> {
        self.ring.post("RQ", sges, wr_id)
    }

    /// Publishes posted receives (the receive counter in the doorbell record; RQs have no
    /// MMIO doorbell).
    #[inline]
    pub fn ring_doorbell(&mut self) {
        self.ring.doorbell(&self.dbr);
    }

    /// Retires the receive a completion names; returns its `wr_id`.
    ///
    /// # Errors
    /// The completion names no outstanding receive.
    #[inline]
    pub fn complete(&mut self, wqe_counter: u16) -> Result<u64, QueueError> {
        self.ring.retire("RQ", wqe_counter)
    }

    /// The DevX handle.
    pub fn obj(&self) -> &DevxObj {
        &self.shared.obj
    }

    /// A descriptor for an external engine.
    pub fn descriptor(&self, recv_cq: &Cq) -> WqDescriptor {
        WqDescriptor {
            kind: wq_kind::RQ,
            num: self.shared.rqn.0,
            rq_ring_addr: self.ring_place.device_addr,
            log_rq_wqe_cnt: u32::from(self.ring.log_size()),
            rq_wqe_stride: self.ring.stride() as u32,
            rq_producer_index: u32::from(self.ring.pi),
            uar_page_id: self.uar_page_id,
            dbr_addr: self.dbr_place.device_addr,
            recv_cq: recv_cq.cqn().0,
            ring_umem_id: self.ring_place.umem_id,
            ring_umem_offset: self.ring_place.umem_offset,
            ..Default::default()
        }
    }
}

/// A ring and its doorbell record as a queue's context names them.
pub(crate) fn ring_mem(ring: &MemPlace, dbr: &MemPlace) -> RingMem {
    RingMem {
        umem_id: ring.umem_id,
        umem_offset: ring.umem_offset,
        dbr_umem_id: dbr.umem_id,
        dbr_offset: dbr.umem_offset,
    }
}

/// CREATE_SQ, then MODIFY_SQ RST -> RDY: an Ethernet SQ over any ring memory (host or DPA).
/// A failed transition destroys the SQ again (the handle drops).
pub(crate) fn create_rdy_sq(
    dev: &Arc<dyn Devx>,
    cmd: &CreateSq,
) -> Result<(DevxObj, Sqn), QueueError> {
    let (obj, sqn) = devx::create(dev, cmd)?;
    devx::modify(
        &obj,
        &ModifySq {
            sqn,
            from: WqState::Rst,
            to: WqState::Rdy,
        },
    )?;
    Ok((obj, sqn))
}

/// CREATE_RQ, then MODIFY_RQ RST -> RDY, as [`create_rdy_sq`].
pub(crate) fn create_rdy_rq(
    dev: &Arc<dyn Devx>,
    cmd: &CreateRq,
) -> Result<(DevxObj, Rqn), QueueError> {
    let (obj, rqn) = devx::create(dev, cmd)?;
    devx::modify(
        &obj,
        &ModifyRq {
            rqn,
            from: WqState::Rst,
            to: WqState::Rdy,
        },
    )?;
    Ok((obj, rqn))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mlx5::wire::wqe::CtrlSegRepr;

    #[test]
    fn the_fast_control_and_data_segments_are_the_wire_types() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for _ in 0..1000 {
            let r = next();
            let repr = CtrlSegRepr {
                opcode: r as u8,
                opmod: (r >> 8) as u8,
                wqe_index: (r >> 16) as u16,
                qpn: (r >> 32) as u32 & 0x00ff_ffff,
                ds: (r >> 56) as u8 & 0x3f,
                fm_ce_se: (r >> 40) as u8,
                imm: next() as u32,
            };
            let fast = ctrl_seg(
                (repr.qpn << 8).to_be(),
                repr.opcode,
                repr.opmod,
                repr.wqe_index,
                usize::from(repr.ds),
                repr.fm_ce_se,
                repr.imm,
            );
            assert_eq!(bytes_of(fast), repr.to_bytes(), "{repr:?}");
            let sge = Sge {
                addr: next(),
                len: r as u32,
                lkey: crate::mem::Lkey((r >> 32) as u32),
            };
            assert_eq!(bytes_of(data_seg_words(&sge)), data_seg(&sge), "{sge:?}");
        }
    }

    /// The segment bytes of [`SendCursor::seg_words`]'s two words.
    fn bytes_of([lo, hi]: [u64; 2]) -> [u8; 16] {
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&lo.to_ne_bytes());
        b[8..].copy_from_slice(&hi.to_ne_bytes());
        b
    }

    #[test]
    fn a_cursor_keeps_its_queue_number_and_size() {
        let mut ring = [0u128; 16];
        let base = NonNull::new(ring.as_mut_ptr().cast::<u8>()).unwrap();
        let r = SendRing::new(base, 2, 1, 0x00ab_cdef);
        assert_eq!(r.cur.num(), 0x00ab_cdef);
        assert_eq!(r.log_size(), 2);
        assert_eq!(r.free(), 4);
    }
}
