//! Queue descriptors for external engines: everything a GPU kernel or a DPA program needs to
//! drive a queue itself, as plain `#[repr(C)]` structs of fixed layout (all fields little-endian
//! when serialised with `to_bytes`; every offset below is part of the contract).
//!
//! The idea follows DOCA GPUNetIO's "bridge" export (`doca_gpu_verbs_export_qp` and friends):
//! the host creates the queue, then hands over numbers, ring and doorbell addresses and the
//! current counters; from then on the other engine posts, rings and polls, and the host must
//! not touch the queue. Addresses are those the *device side* uses: host virtual addresses for
//! rings in host memory, DPA addresses for rings in DPA memory ([`super::MemPlace::device_addr`]).
//!
//! Formats the engine must follow: send WQEs of 64-byte WQEBBs (ctrl segment with
//! `wqe_index << 8 | opcode` and `qpn << 8 | ds`), the send counter (16 bits, big-endian) in
//! `dbr_addr + 4`, the receive counter in `dbr_addr + 0`, then the first 8 bytes of the ctrl
//! segment to `uar_doorbell_addr`; CQEs with the owner bit in byte 63 of each 64-byte CQE (second
//! half of a 128-byte CQE), the consumer index (24 bits, big-endian) in `cq_dbr_addr + 0`,
//! arming with `arm_sn << 28 | cmd | ci` and the CQN at `uar_arm_addr` (docs/sources.md §6).

/// A CQ for an external engine. Size 56 bytes.
///
/// | offset | field |
/// |---|---|
/// | 0 | `cqn` |
/// | 4 | `log_cqe_cnt` |
/// | 8 | `cqe_size` (64 or 128) |
/// | 12 | `consumer_index` (where polling resumes) |
/// | 16 | `cq_ring_addr` |
/// | 24 | `cq_dbr_addr` |
/// | 32 | `uar_page_id` |
/// | 36 | reserved |
/// | 40 | `uar_arm_addr` (host address of UAR + 0x20; 0 when unmapped) |
/// | 48 | `arm_sn` (0..3) |
/// | 52 | `flags` ([`CQ_FLAG_COLLAPSED`]) |
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CqDescriptor {
    pub cqn: u32,
    pub log_cqe_cnt: u32,
    pub cqe_size: u32,
    pub consumer_index: u32,
    pub cq_ring_addr: u64,
    pub cq_dbr_addr: u64,
    pub uar_page_id: u32,
    pub _reserved: u32,
    pub uar_arm_addr: u64,
    pub arm_sn: u32,
    pub flags: u32,
}

/// [`CqDescriptor::flags`]: a collapsed CQ (PRM `cc`), whose every CQE rewrites entry 0.
pub const CQ_FLAG_COLLAPSED: u32 = 1;

/// Which kind of work queue a [`WqDescriptor`] describes.
pub mod wq_kind {
    /// An Ethernet SQ (send ring only).
    pub const ETH_SQ: u32 = 1;
    /// An RQ (receive ring only).
    pub const RQ: u32 = 2;
    /// An RC QP (receive ring, then send ring).
    pub const RC_QP: u32 = 3;
}

/// A work queue (SQ, RQ or QP) for an external engine. Size 88 bytes.
///
/// | offset | field |
/// |---|---|
/// | 0 | `kind` ([`wq_kind`]) |
/// | 4 | `num`: SQN, RQN or QPN (what goes in `qpn_ds`) |
/// | 8 | `sq_ring_addr` (0 without send ring) |
/// | 16 | `log_sq_wqebb_cnt` |
/// | 20 | `sq_producer_index`: next WQEBB counter (16 bits significant) |
/// | 24 | `rq_ring_addr` (0 without receive ring) |
/// | 32 | `log_rq_wqe_cnt` |
/// | 36 | `rq_wqe_stride` (bytes) |
/// | 40 | `rq_producer_index` (16 bits significant) |
/// | 44 | `uar_page_id` |
/// | 48 | `dbr_addr` (the record: receive counter at +0, send counter at +4) |
/// | 56 | `uar_doorbell_addr` (host address of UAR + 0x800; 0 when unmapped) |
/// | 64 | `send_cq` CQN |
/// | 68 | `recv_cq` CQN |
/// | 72 | `ring_umem_id` (the UMEM holding the ring(s)) |
/// | 76 | reserved |
/// | 80 | `ring_umem_offset` |
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WqDescriptor {
    pub kind: u32,
    pub num: u32,
    pub sq_ring_addr: u64,
    pub log_sq_wqebb_cnt: u32,
    pub sq_producer_index: u32,
    pub rq_ring_addr: u64,
    pub log_rq_wqe_cnt: u32,
    pub rq_wqe_stride: u32,
    pub rq_producer_index: u32,
    pub uar_page_id: u32,
    pub dbr_addr: u64,
    pub uar_doorbell_addr: u64,
    pub send_cq: u32,
    pub recv_cq: u32,
    pub ring_umem_id: u32,
    pub _reserved: u32,
    pub ring_umem_offset: u64,
}

const _: () = assert!(std::mem::size_of::<CqDescriptor>() == 56);
const _: () = assert!(std::mem::size_of::<WqDescriptor>() == 88);

impl CqDescriptor {
    /// The descriptor as little-endian bytes, in the documented layout.
    pub fn to_bytes(&self) -> [u8; 56] {
        let mut b = [0u8; 56];
        let mut w = Writer(&mut b, 0);
        w.u32(self.cqn);
        w.u32(self.log_cqe_cnt);
        w.u32(self.cqe_size);
        w.u32(self.consumer_index);
        w.u64(self.cq_ring_addr);
        w.u64(self.cq_dbr_addr);
        w.u32(self.uar_page_id);
        w.u32(0);
        w.u64(self.uar_arm_addr);
        w.u32(self.arm_sn);
        w.u32(self.flags);
        b
    }
}

impl WqDescriptor {
    /// The descriptor as little-endian bytes, in the documented layout.
    pub fn to_bytes(&self) -> [u8; 88] {
        let mut b = [0u8; 88];
        let mut w = Writer(&mut b, 0);
        w.u32(self.kind);
        w.u32(self.num);
        w.u64(self.sq_ring_addr);
        w.u32(self.log_sq_wqebb_cnt);
        w.u32(self.sq_producer_index);
        w.u64(self.rq_ring_addr);
        w.u32(self.log_rq_wqe_cnt);
        w.u32(self.rq_wqe_stride);
        w.u32(self.rq_producer_index);
        w.u32(self.uar_page_id);
        w.u64(self.dbr_addr);
        w.u64(self.uar_doorbell_addr);
        w.u32(self.send_cq);
        w.u32(self.recv_cq);
        w.u32(self.ring_umem_id);
        w.u32(0);
        w.u64(self.ring_umem_offset);
        b
    }
}

struct Writer<'a>(&'a mut [u8], usize);

impl Writer<'_> {
    fn u32(&mut self, v: u32) {
        self.0[self.1..self.1 + 4].copy_from_slice(&v.to_le_bytes());
        self.1 += 4;
    }
    fn u64(&mut self, v: u64) {
        self.0[self.1..self.1 + 8].copy_from_slice(&v.to_le_bytes());
        self.1 += 8;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serialised_offsets_match_repr_c() {
        let d = WqDescriptor {
            kind: 3,
            num: 0x4001,
            dbr_addr: 0x1122_3344_5566_7788,
            send_cq: 0x401,
            ring_umem_offset: 0xabcd,
            ..Default::default()
        };
        let b = d.to_bytes();
        assert_eq!(std::mem::offset_of!(WqDescriptor, dbr_addr), 48);
        assert_eq!(&b[48..56], &0x1122_3344_5566_7788u64.to_le_bytes());
        assert_eq!(std::mem::offset_of!(WqDescriptor, send_cq), 64);
        assert_eq!(&b[64..68], &0x401u32.to_le_bytes());
        assert_eq!(&b[80..88], &0xabcdu64.to_le_bytes());
        let c = CqDescriptor {
            uar_arm_addr: 7,
            arm_sn: 2,
            ..Default::default()
        };
        assert_eq!(std::mem::offset_of!(CqDescriptor, uar_arm_addr), 40);
        assert_eq!(c.to_bytes()[40], 7);
        assert_eq!(c.to_bytes()[48], 2);
    }
}
