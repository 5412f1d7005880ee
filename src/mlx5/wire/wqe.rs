//! Work queue entries: the 16-byte segments a send or receive WQE is made of (rdma-core
//! `providers/mlx5/mlx5dv.h`: `mlx5_wqe_ctrl_seg`, `mlx5_wqe_eth_seg`, `mlx5_wqe_inl_data_seg`,
//! `mlx5_wqe_data_seg`, `mlx5_wqe_raddr_seg`, `mlx5_wqe_atomic_seg`), the send opcodes and the
//! control segment's flags.
//!
//! A send WQE is one or more 64-byte basic blocks (WQEBBs) of 16-byte segments, the control
//! segment first; `ds` counts the segments. An Ethernet SEND carries an Ethernet segment whose
//! inline headers start in its last two bytes and continue, 16 bytes a segment, in the segments
//! after it. An inline-data segment is a byte count with [`INLINE_SEG`] set, then the bytes. A
//! receive WQE is a list of data segments, a shorter list ending with lkey [`INVALID_LKEY`].
//!
//! The segment builders (`CtrlSegRepr::to_bytes`, [`data_seg`], [`raddr_seg`], ...) return
//! the 16 bytes as a value so that the driver's post path stores each segment with one 16-byte
//! store.

use super::{byte_at, first, wire_view};
use crate::layout;

layout! {
    /// `mlx5_wqe_ctrl_seg`; offsets and widths as in rdma-core `providers/mlx5/mlx5dv.h`.
    pub mlx5_wqe_ctrl_seg: 0x80 {
        opmod_idx_opcode @ 0x0 : 0x20,
        qpn_ds @ 0x20 : 0x20,
        signature @ 0x40 : 0x8,
        dci_stream_channel_id @ 0x48 : 0x10,
        fm_ce_se @ 0x58 : 0x8,
        imm @ 0x60 : 0x20,
    }
}

layout! {
    /// `mlx5_wqe_eth_seg`; offsets and widths as in rdma-core `providers/mlx5/mlx5dv.h`. The
    /// WQE holds its first 16 bytes; `inline_hdr` is the segment after it.
    pub mlx5_wqe_eth_seg: 0x100 {
        cs_flags @ 0x20 : 0x8,
        mss @ 0x30 : 0x10,
        inline_hdr_sz @ 0x60 : 0x10,
        inline_hdr_start @ 0x70 : [0x8; 2],
        inline_hdr @ 0x80 : [0x8; 16],
    }
}

layout! {
    /// `mlx5_wqe_inl_data_seg`; as in rdma-core `providers/mlx5/mlx5dv.h` (the data follows).
    pub mlx5_wqe_inl_data_seg: 0x20 {
        byte_count @ 0x0 : 0x20,
    }
}

layout! {
    /// `mlx5_wqe_data_seg`; offsets and widths as in rdma-core `providers/mlx5/mlx5dv.h`.
    pub mlx5_wqe_data_seg: 0x80 {
        byte_count @ 0x0 : 0x20,
        lkey @ 0x20 : 0x20,
        addr @ 0x40 : 0x40,
    }
}

layout! {
    /// `mlx5_wqe_raddr_seg`; offsets and widths as in rdma-core `providers/mlx5/mlx5dv.h`.
    pub mlx5_wqe_raddr_seg: 0x80 {
        raddr @ 0x0 : 0x40,
        rkey @ 0x40 : 0x20,
    }
}

layout! {
    /// `mlx5_wqe_atomic_seg`; offsets and widths as in rdma-core `providers/mlx5/mlx5dv.h`.
    pub mlx5_wqe_atomic_seg: 0x80 {
        swap_add @ 0x0 : 0x40,
        compare @ 0x40 : 0x40,
    }
}

layout! {
    /// `mlx5_wqe_wseg`, the wait segment of a WAIT WQE (DPDK `drivers/common/mlx5/mlx5_prm.h`;
    /// two segments): wait until the 8 bytes at `va` (through `lkey`), masked, meet
    /// `operation` against `value`.
    pub mlx5_wqe_wseg: 0x100 {
        operation @ 0x0 : 0x20,
        lkey @ 0x20 : 0x20,
        va_high @ 0x40 : 0x20,
        va_low @ 0x60 : 0x20,
        value @ 0x80 : 0x40,
        mask @ 0xc0 : 0x40,
    }
}

/// Bytes in a segment (the `ds` unit).
pub const SEG: usize = 16;
/// Bytes in a send WQE basic block (PRM: WQEBB = 64 bytes; rdma-core `MLX5_SEND_WQE_BB`).
pub const WQEBB: usize = 64;
/// Segments per WQEBB.
pub const SEGS_PER_WQEBB: usize = WQEBB / SEG;

/// WQEBBs taken by a WQE of `ds` 16-byte segments (at least one): how far a WQE moves the
/// producer counter, for the driver posting it and for the device reading it.
#[inline]
pub fn wqebbs(ds: usize) -> u16 {
    ds.div_ceil(SEGS_PER_WQEBB).max(1) as u16
}
/// Largest `ds` a control segment can carry (6 bits).
pub const MAX_DS: usize = 63;

/// `fm_ce_se` value asking for a CQE (`MLX5_WQE_CTRL_CQ_UPDATE`: "always", 0b10 in bits 3:2).
pub const CTRL_CQ_UPDATE: u8 = 0x08;
/// `fm_ce_se` value asking for a CQE on the first error only (0b01 in bits 3:2).
pub const CTRL_CQ_FIRST_ERR: u8 = 0x04;
/// `fm_ce_se` bits 3:2: the completion mode.
pub const CTRL_CE_MASK: u8 = 0x0c;
/// `fm_ce_se` fence mode "fence" (`MLX5_WQE_CTRL_FENCE`, 4 in bits 7:5).
pub const CTRL_FENCE: u8 = 0x80;
/// `fm_ce_se` solicited-event bit (`MLX5_WQE_CTRL_SOLICITED`).
pub const CTRL_SOLICITED: u8 = 0x02;
/// The lkey that ends a receive scatter list (`MLX5_INVALID_LKEY`).
pub const INVALID_LKEY: u32 = 0x100;
/// Inline-data segment marker in `byte_count` (`MLX5_INLINE_SEG`).
pub const INLINE_SEG: u32 = 0x8000_0000;
/// The length bits of an inline segment's `byte_count` (PRM: 10 bits).
pub const INLINE_BYTE_COUNT_MASK: u32 = 0x3ff;
/// Bytes of inline data the first inline segment holds after its byte count.
pub const INLINE_FIRST: usize = SEG - 4;
/// Where an Ethernet segment's inline headers start: its last two bytes.
pub const ETH_INLINE_START: usize = byte_at(first(mlx5_wqe_eth_seg::inline_hdr_start));

/// Byte offsets in a control segment, from the declaration (for code that writes a WQE image
/// byte by byte, such as a benchmark's floor).
pub mod at {
    use super::{byte_at, mlx5_wqe_ctrl_seg as c};
    pub const OPMOD_IDX_OPCODE: usize = byte_at(c::opmod_idx_opcode);
    pub const QPN_DS: usize = byte_at(c::qpn_ds);
    pub const FM_CE_SE: usize = byte_at(c::fm_ce_se);
    pub const IMM: usize = byte_at(c::imm);
}

/// Send WQE opcodes (ctrl segment byte 3; rdma-core `MLX5_OPCODE_*`).
pub mod opcode {
    pub const NOP: u8 = 0x00;
    pub const SEND_INVAL: u8 = 0x01;
    pub const RDMA_WRITE: u8 = 0x08;
    pub const RDMA_WRITE_IMM: u8 = 0x09;
    pub const SEND: u8 = 0x0a;
    pub const SEND_IMM: u8 = 0x0b;
    pub const RDMA_READ: u8 = 0x10;
    pub const ATOMIC_CS: u8 = 0x11;
    pub const ATOMIC_FA: u8 = 0x12;
    /// WAIT (DPDK `MLX5_OPCODE_WAIT`): the send queue stops at it until its condition holds.
    pub const WAIT: u8 = 0x0f;
}

/// WAIT's opmods (DPDK `MLX5_OPC_MOD_WAIT_*`).
pub mod wait_opmod {
    /// Wait for a CQ's producer index.
    pub const CQ_PI: u8 = 0;
    /// Wait for a word of memory ([`WaitSeg`](super::WaitSeg)).
    pub const DATA: u8 = 1;
    /// Wait for a time.
    pub const TIME: u8 = 2;
}

/// A wait segment's `operation` (DPDK `MLX5_WAIT_COND_*`). Which side of the comparison the
/// memory word is on is not public; here it is `word OP value` (`BIGGER`: the word is greater),
/// provisional.
pub mod wait_cond {
    /// Negates the condition.
    pub const INVERT: u32 = 0x10;
    pub const ALWAYS_TRUE: u32 = 0;
    pub const EQUAL: u32 = 1;
    pub const BIGGER: u32 = 2;
    pub const SMALLER: u32 = 3;
    pub const CYCLIC_BIGGER: u32 = 4;
    pub const CYCLIC_SMALLER: u32 = 5;

    /// Whether `word` meets `operation` against `value`, both masked with `mask`; `None` for
    /// an operation this table does not define.
    pub fn holds(operation: u32, word: u64, value: u64, mask: u64) -> Option<bool> {
        let (w, v) = (word & mask, value & mask);
        let base = match operation & !INVERT {
            ALWAYS_TRUE => true,
            EQUAL => w == v,
            BIGGER => w > v,
            SMALLER => w < v,
            // Serial-number order: the difference read as signed.
            CYCLIC_BIGGER => (w.wrapping_sub(v) as i64) > 0,
            CYCLIC_SMALLER => (w.wrapping_sub(v) as i64) < 0,
            _ => return None,
        };
        Some(base != (operation & INVERT != 0))
    }
}

wire_view! {
    /// A control segment (`struct mlx5_wqe_ctrl_seg`) over any byte buffer.
    CtrlSeg over mlx5_wqe_ctrl_seg, "control segment", SEG;
    /// `opmod_idx_opcode`: `opmod << 24 | wqe_index << 8 | opcode`.
    opmod_idx_opcode / set_opmod_idx_opcode: u32,
    /// `qpn_ds`: `qpn << 8 | ds`.
    qpn_ds / set_qpn_ds: u32,
    /// `signature`.
    signature / set_signature: u8,
    /// `fm_ce_se`: fence mode 7:5, completion mode 3:2, solicited event 1.
    fm_ce_se / set_fm_ce_se: u8,
    /// `imm`: immediate data, big-endian as on the wire.
    imm / set_imm: u32,
}

wire_view! {
    /// The first 16 bytes of an Ethernet segment (`struct mlx5_wqe_eth_seg`).
    EthSeg over mlx5_wqe_eth_seg, "Ethernet segment", SEG;
    /// `cs_flags` (`MLX5_ETH_WQE_L3_CSUM` / `L4_CSUM`).
    cs_flags / set_cs_flags: u8,
    /// `mss` (LSO).
    mss / set_mss: u16,
    /// `inline_hdr_sz`: bytes of packet headers inlined, starting at `inline_hdr_start`.
    inline_hdr_sz / set_inline_hdr_sz: u16,
}

wire_view! {
    /// An inline-data segment's header (`struct mlx5_wqe_inl_data_seg`).
    InlineSeg over mlx5_wqe_inl_data_seg, "inline segment", 4;
    /// `byte_count`, with [`INLINE_SEG`] set.
    byte_count / set_byte_count: u32,
}

wire_view! {
    /// A data (gather / scatter) segment (`struct mlx5_wqe_data_seg`).
    DataSeg over mlx5_wqe_data_seg, "data segment", SEG;
    /// `byte_count`.
    byte_count / set_byte_count: u32,
    /// `lkey`.
    lkey / set_lkey: u32,
    /// `addr`.
    addr / set_addr: u64,
}

wire_view! {
    /// A remote-address segment (`struct mlx5_wqe_raddr_seg`).
    RaddrSeg over mlx5_wqe_raddr_seg, "remote address segment", SEG;
    /// `raddr`.
    raddr / set_raddr: u64,
    /// `rkey`.
    rkey / set_rkey: u32,
}

wire_view! {
    /// An atomic segment (`struct mlx5_wqe_atomic_seg`).
    AtomicSeg over mlx5_wqe_atomic_seg, "atomic segment", SEG;
    /// `swap_add`: the swap value of a compare-and-swap, the addend of a fetch-and-add.
    swap_add / set_swap_add: u64,
    /// `compare`.
    compare / set_compare: u64,
}

wire_view! {
    /// A wait segment (`struct mlx5_wqe_wseg`), 32 bytes.
    WaitSeg over mlx5_wqe_wseg, "wait segment", 2 * SEG;
    /// `operation`: a [`wait_cond`] value.
    operation / set_operation: u32,
    /// `lkey` of the word waited on.
    lkey / set_lkey: u32,
    /// `va_high`.
    va_high / set_va_high: u32,
    /// `va_low`.
    va_low / set_va_low: u32,
    /// `value`.
    value / set_value: u64,
    /// `mask`.
    mask / set_mask: u64,
}

/// What a control segment says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CtrlSegRepr {
    pub opcode: u8,
    pub opmod: u8,
    /// The WQE's index: the producer counter of its first WQEBB.
    pub wqe_index: u16,
    /// The QP or SQ number (24 bits).
    pub qpn: u32,
    /// Segments in the WQE, the control segment included (6 bits).
    pub ds: u8,
    pub fm_ce_se: u8,
    pub imm: u32,
}

impl CtrlSegRepr {
    /// Reads a control segment.
    #[inline]
    pub fn parse<T: AsRef<[u8]>>(s: &CtrlSeg<T>) -> CtrlSegRepr {
        let w0 = s.opmod_idx_opcode();
        let w1 = s.qpn_ds();
        CtrlSegRepr {
            opcode: w0 as u8,
            opmod: (w0 >> 24) as u8,
            wqe_index: (w0 >> 8) as u16,
            qpn: w1 >> 8,
            ds: (w1 & 0x3f) as u8,
            fm_ce_se: s.fm_ce_se(),
            imm: s.imm(),
        }
    }

    /// Writes the fields into `s` (the signature and reserved bytes are left as they are).
    #[inline]
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, s: &mut CtrlSeg<T>) {
        s.set_opmod_idx_opcode(self.word0());
        s.set_qpn_ds(self.word1());
        s.set_fm_ce_se(self.fm_ce_se);
        s.set_imm(self.imm);
    }

    /// The segment as 16 bytes (zero where no field is).
    #[inline(always)]
    pub fn to_bytes(&self) -> [u8; SEG] {
        let mut s = CtrlSeg::new_unchecked([0u8; SEG]);
        self.emit(&mut s);
        s.into_inner()
    }

    /// The completion mode asks for a CQE on every WQE ([`CTRL_CQ_UPDATE`]).
    #[inline]
    pub fn cq_update(&self) -> bool {
        self.fm_ce_se & CTRL_CE_MASK == CTRL_CQ_UPDATE
    }

    #[inline(always)]
    fn word0(&self) -> u32 {
        (u32::from(self.opmod) << 24) | (u32::from(self.wqe_index) << 8) | u32::from(self.opcode)
    }
    #[inline(always)]
    fn word1(&self) -> u32 {
        (self.qpn << 8) | u32::from(self.ds & 0x3f)
    }
}

/// A data segment as 16 bytes.
#[inline(always)]
pub fn data_seg(byte_count: u32, lkey: u32, addr: u64) -> [u8; SEG] {
    let mut s = DataSeg::new_unchecked([0u8; SEG]);
    s.set_byte_count(byte_count);
    s.set_lkey(lkey);
    s.set_addr(addr);
    s.into_inner()
}

/// The segment that ends a receive scatter list shorter than the WQE's stride.
#[inline(always)]
pub fn end_of_scatter_seg() -> [u8; SEG] {
    data_seg(0, INVALID_LKEY, 0)
}

/// A remote-address segment as 16 bytes.
#[inline(always)]
pub fn raddr_seg(raddr: u64, rkey: u32) -> [u8; SEG] {
    let mut s = RaddrSeg::new_unchecked([0u8; SEG]);
    s.set_raddr(raddr);
    s.set_rkey(rkey);
    s.into_inner()
}

/// An atomic segment as 16 bytes.
#[inline(always)]
pub fn atomic_seg(swap_add: u64, compare: u64) -> [u8; SEG] {
    let mut s = AtomicSeg::new_unchecked([0u8; SEG]);
    s.set_swap_add(swap_add);
    s.set_compare(compare);
    s.into_inner()
}

/// The first segment of inline data: the byte count with [`INLINE_SEG`], then up to
/// [`INLINE_FIRST`] bytes of `data`. The rest of `data` follows in plain 16-byte segments.
#[inline(always)]
pub fn inline_seg(data: &[u8]) -> [u8; SEG] {
    let mut s = [0u8; SEG];
    InlineSeg::new_unchecked(&mut s[..]).set_byte_count(INLINE_SEG | data.len() as u32);
    let first = data.len().min(INLINE_FIRST);
    s[4..4 + first].copy_from_slice(&data[..first]);
    s
}

/// The first 16 bytes of an Ethernet segment with `headers.len()` bytes of inline headers, the
/// first two of them in it (`headers` holds at least two bytes). The rest of the headers
/// follow in plain 16-byte segments.
#[inline(always)]
pub fn eth_seg(headers: &[u8]) -> [u8; SEG] {
    let mut s = EthSeg::new_unchecked([0u8; SEG]);
    s.set_inline_hdr_sz(headers.len() as u16);
    s.as_bytes_mut()[ETH_INLINE_START..SEG].copy_from_slice(&headers[..SEG - ETH_INLINE_START]);
    s.into_inner()
}

#[cfg(test)]
mod tests {
    use super::super::test_util::poisoned;
    use super::*;

    #[test]
    fn ctrl_segments_round_trip_through_a_poisoned_buffer() {
        let reprs = [
            CtrlSegRepr {
                opcode: opcode::SEND,
                opmod: 0,
                wqe_index: 0xfffe,
                qpn: 0x00ab_cdef,
                ds: 63,
                fm_ce_se: CTRL_CQ_UPDATE | CTRL_SOLICITED,
                imm: 0xdead_beef,
            },
            CtrlSegRepr {
                opcode: opcode::ATOMIC_FA,
                opmod: 0x08,
                wqe_index: 1,
                qpn: 1,
                ds: 4,
                fm_ce_se: 0,
                imm: 0,
            },
        ];
        for r in reprs {
            let mut s = CtrlSeg::new_checked(poisoned::<16>()).unwrap();
            r.emit(&mut s);
            assert_eq!(CtrlSegRepr::parse(&s), r);
            assert_eq!(s.signature(), 0xa5, "emit leaves the signature");
            let fresh = r.to_bytes();
            assert_eq!(CtrlSegRepr::parse(&CtrlSeg::new_unchecked(fresh)), r);
            assert_eq!(fresh[8], 0);
        }
        assert!(reprs[0].cq_update() && !reprs[1].cq_update());
    }

    #[test]
    fn ctrl_segment_bytes_are_where_rdma_core_puts_them() {
        let r = CtrlSegRepr {
            opcode: 0x0a,
            opmod: 0x01,
            wqe_index: 0x0203,
            qpn: 0x04_0506,
            ds: 0x07,
            fm_ce_se: 0x08,
            imm: 0x090a_0b0c,
        };
        assert_eq!(
            r.to_bytes(),
            [1, 2, 3, 0x0a, 4, 5, 6, 7, 0, 0, 0, 8, 9, 0x0a, 0x0b, 0x0c]
        );
    }

    #[test]
    fn data_raddr_atomic_segments_round_trip() {
        let mut d = DataSeg::new_checked(poisoned::<16>()).unwrap();
        d.set_byte_count(0x1000);
        d.set_lkey(0x42);
        d.set_addr(0x1122_3344_5566_7788);
        assert_eq!(
            d.as_bytes(),
            &data_seg(0x1000, 0x42, 0x1122_3344_5566_7788)[..]
        );
        assert_eq!(
            (d.byte_count(), d.lkey(), d.addr()),
            (0x1000, 0x42, 0x1122_3344_5566_7788)
        );
        assert_eq!(
            DataSeg::new_unchecked(end_of_scatter_seg()).lkey(),
            INVALID_LKEY
        );

        let mut r = RaddrSeg::new_checked(poisoned::<16>()).unwrap();
        r.set_raddr(0xaabb_ccdd_eeff_0011);
        r.set_rkey(0x77);
        assert_eq!((r.raddr(), r.rkey()), (0xaabb_ccdd_eeff_0011, 0x77));
        assert_eq!(
            &r.as_bytes()[12..],
            &[0xa5; 4],
            "the reserved word is untouched"
        );
        let fresh = RaddrSeg::new_unchecked(raddr_seg(0xaabb_ccdd_eeff_0011, 0x77));
        assert_eq!((fresh.raddr(), fresh.rkey()), (r.raddr(), r.rkey()));

        let mut a = AtomicSeg::new_checked(poisoned::<16>()).unwrap();
        a.set_swap_add(5);
        a.set_compare(6);
        assert_eq!((a.swap_add(), a.compare()), (5, 6));
        assert_eq!(a.as_bytes(), &atomic_seg(5, 6)[..]);
    }

    #[test]
    fn inline_and_eth_segments() {
        let data = [1u8, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14];
        let s = inline_seg(&data);
        assert_eq!(
            InlineSeg::new_checked(&s[..]).unwrap().byte_count(),
            INLINE_SEG | 14
        );
        assert_eq!(&s[4..], &data[..12]);

        let hdr: Vec<u8> = (0..18).collect();
        let mut e = EthSeg::new_checked(poisoned::<16>()).unwrap();
        e.set_inline_hdr_sz(hdr.len() as u16);
        assert_eq!(e.inline_hdr_sz(), 18);
        let fresh = EthSeg::new_unchecked(eth_seg(&hdr));
        assert_eq!(fresh.inline_hdr_sz(), 18);
        assert_eq!(&fresh.as_bytes()[14..], &[0, 1]);
        assert_eq!(ETH_INLINE_START, 14);
    }

    #[test]
    fn short_buffers_are_refused() {
        assert!(CtrlSeg::new_checked(&[0u8; 15][..]).is_err());
        assert!(DataSeg::new_checked(&[0u8; 15][..]).is_err());
        assert!(InlineSeg::new_checked(&[0u8; 3][..]).is_err());
        assert!(EthSeg::new_checked(&[0u8; 16][..]).is_ok());
    }

    #[test]
    fn wait_conditions() {
        use super::wait_cond::*;
        let all = u64::MAX;
        assert_eq!(holds(BIGGER, 5, 4, all), Some(true));
        assert_eq!(holds(BIGGER, 4, 4, all), Some(false));
        assert_eq!(holds(EQUAL | INVERT, 5, 5, all), Some(false));
        assert_eq!(holds(EQUAL | INVERT, 6, 5, all), Some(true));
        assert_eq!(holds(SMALLER, 3, 4, all), Some(true));
        assert_eq!(holds(ALWAYS_TRUE, 0, 9, all), Some(true));
        // Cyclic: 1 is after u64::MAX.
        assert_eq!(holds(CYCLIC_BIGGER, 1, u64::MAX, all), Some(true));
        assert_eq!(holds(CYCLIC_SMALLER, 1, u64::MAX, all), Some(false));
        // The mask applies to both sides.
        assert_eq!(holds(EQUAL, 0x1ff, 0x2ff, 0xff), Some(true));
        assert_eq!(holds(6, 0, 0, all), None);
    }
}
