//! RC queue pairs over user-supplied ring memory.
//!
//! Ring layout in the QP's memory (PRM "Queue Pair"; rdma-core `mlx5_calc_wq_size`): the
//! receive queue first, `2^log_rq_size` WQEs of `stride` bytes, then the send queue,
//! `2^log_sq_size` WQEBBs. Doorbell record: receive counter in `dbrec[0]`, send counter in
//! `dbrec[1]`.
//!
//! Connection (PRM "QP State Machine"; the attributes each transition writes are in
//! [`crate::mlx5::cmd::ModifyQp`]): RST -> INIT (port, remote access rights) -> RTR (path MTU,
//! remote QPN, receive PSN, the address path: force-loopback on the same device, or the peer's
//! MAC and GID) -> RTS (send PSN, retry counts, timeout). A failed WQE moves the QP to ERR; the
//! remaining WQEs complete with WR_FLUSH_ERR; [`RcQp::reset`] then [`RcQp::connect`] recover.
//!
//! Send WQE segments after the control segment, per opcode (rdma-core `mlx5dv.h`):
//! `raddr` (remote address, rkey) for RDMA and atomics, `atomic` (swap/add, compare) for
//! atomics, then data segments or one inline segment.

pub use crate::mlx5::ids::Qpn;
use std::sync::Arc;

use super::cq::{Cq, CqObj};
use super::descriptor::{wq_kind, WqDescriptor};
use super::ring::{SEG, WQEBB};
use super::shared::{host_queue, HostQueue};
use super::wq::{data_seg, RecvRing, SendRing, CTRL_CQ_UPDATE, CTRL_SOLICITED};
use super::{MemPlace, QueueError, QueueMemory};
use crate::devx::{self, Devx, DevxObj};
use crate::mem::{Access, Pd, Rkey, Sge};
use crate::mlx5::cmd::{
    CreateQp, Init2Rtr, ModifyQp, Qp2Err, Qp2Rst, QpAttr, QpState, QueryQp, RingMem, Rst2Init,
    Rtr2Rts,
};
use crate::mlx5::layouts::qpc;
use crate::mlx5::wire::wqe::{
    atomic_seg, inline_seg, opcode as wqe_opcode, raddr_seg, INLINE_FIRST,
};
use crate::uar::{DoorbellRecord, UarPage, RCV_DBR, SND_DBR};

/// `fm_ce_se` fence bits: wait for earlier RDMA READs and atomics (`MLX5_WQE_CTRL_FENCE`).
pub const CTRL_FENCE: u8 = 0x80;

/// How to create an RC QP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QpConfig {
    /// log2 of send WQEBBs.
    pub log_sq_size: u8,
    /// log2 of receive WQEs; `None` for a QP that never receives.
    pub log_rq_size: Option<u8>,
    /// Scatter entries per receive.
    pub max_recv_sge: u8,
    /// Ask for a CQE at least once every this many send WQEBBs (as
    /// [`super::EthSqConfig::signal_every`]; with one-WQEBB WQEs, every `signal_every`th).
    pub signal_every: u16,
}

impl QpConfig {
    /// A QP with `2^log_sq` send WQEBBs, `2^log_rq` receives of one SGE, every WQE signalled.
    pub fn new(log_sq: u8, log_rq: u8) -> QpConfig {
        QpConfig {
            log_sq_size: log_sq,
            log_rq_size: Some(log_rq),
            max_recv_sge: 1,
            signal_every: 1,
        }
    }
    /// Bytes per receive WQE (at least 16, a power of two).
    pub fn rq_stride(&self) -> usize {
        (usize::from(self.max_recv_sge.max(1)) * SEG).next_power_of_two()
    }
    /// Bytes of the receive ring (0 without one).
    pub fn rq_bytes(&self) -> usize {
        self.log_rq_size
            .map_or(0, |l| (1usize << l.min(16)) * self.rq_stride())
    }
    /// Ring bytes this QP needs (receive ring, then send ring).
    pub fn ring_bytes(&self) -> usize {
        self.rq_bytes() + (1usize << self.log_sq_size.min(16)) * WQEBB
    }
}

/// Path MTU (PRM `qpc.mtu` encoding).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Mtu {
    M256 = 1,
    M512 = 2,
    M1024 = 3,
    M2048 = 4,
    M4096 = 5,
}

impl Mtu {
    /// Bytes.
    pub fn bytes(self) -> usize {
        128 << (self as u8)
    }
}

/// Who is at the other end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RcPeer {
    /// A QP on the same device, reached without leaving it (`ads.fl`).
    Loopback { remote_qpn: Qpn },
    /// A QP on another port, reached by RoCEv2.
    Remote {
        remote_qpn: Qpn,
        /// The peer's MAC (next hop).
        mac: [u8; 6],
        /// The peer's GID (an IPv4 address as `::ffff:a.b.c.d`).
        gid: [u8; 16],
        /// Our GID table index to send from.
        gid_index: u8,
        hop_limit: u8,
    },
}

impl RcPeer {
    fn remote_qpn(&self) -> Qpn {
        match self {
            RcPeer::Loopback { remote_qpn } | RcPeer::Remote { remote_qpn, .. } => *remote_qpn,
        }
    }
}

/// Attributes for [`RcQp::connect`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RcConnect {
    pub peer: RcPeer,
    /// Rights granted to the peer: REMOTE_READ, REMOTE_WRITE, REMOTE_ATOMIC.
    pub remote_access: Access,
    pub mtu: Mtu,
    /// First PSN we send, and the first we expect (the peer's send PSN).
    pub send_psn: u32,
    pub recv_psn: u32,
    /// log2 of outstanding RDMA READ / atomic requests we may issue, and accept.
    pub log_sra_max: u8,
    pub log_rra_max: u8,
    /// RNR NAK timer we ask the peer to wait (IB encoding, 0..31).
    pub min_rnr_timer: u8,
    /// Transport retries (0..7) and RNR retries (0..7; 7 = forever).
    pub retry_count: u8,
    pub rnr_retry: u8,
    /// Local ACK timeout: 4.096 us * 2^timeout (0 = infinite).
    pub ack_timeout: u8,
    /// Physical port, 1-based.
    pub port: u8,
}

impl RcConnect {
    /// Defaults for a peer: all remote rights, MTU 1024, PSNs 0, 7 RNR retries.
    pub fn new(peer: RcPeer) -> RcConnect {
        RcConnect {
            peer,
            remote_access: Access::REMOTE_READ | Access::REMOTE_WRITE | Access::REMOTE_ATOMIC,
            mtu: Mtu::M1024,
            send_psn: 0,
            recv_psn: 0,
            log_sra_max: 4,
            log_rra_max: 4,
            min_rnr_timer: 1,
            retry_count: 7,
            rnr_retry: 7,
            ack_timeout: 14,
            port: 1,
        }
    }
}

/// A remote buffer: address and key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RemoteAddr {
    pub addr: u64,
    pub rkey: Rkey,
}

/// What a send work request does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SendOp<'a> {
    /// SEND gathered from `sges`, optionally with immediate data.
    Send { sges: &'a [Sge], imm: Option<u32> },
    /// SEND of `data` copied into the WQE (inline).
    SendInline { data: &'a [u8], imm: Option<u32> },
    /// RDMA WRITE of `sges` to `remote`, optionally with immediate (which consumes a receive).
    Write {
        sges: &'a [Sge],
        remote: RemoteAddr,
        imm: Option<u32>,
    },
    /// RDMA READ from `remote` into `sges`.
    Read { sges: &'a [Sge], remote: RemoteAddr },
    /// 8-byte compare-and-swap at `remote`; the original value lands in `local` (8 bytes).
    CompareSwap {
        local: Sge,
        remote: RemoteAddr,
        compare: u64,
        swap: u64,
    },
    /// 8-byte fetch-and-add at `remote`; the original value lands in `local`.
    FetchAdd {
        local: Sge,
        remote: RemoteAddr,
        add: u64,
    },
    /// NOP.
    Nop,
}

/// A send work request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SendWr<'a> {
    pub wr_id: u64,
    pub op: SendOp<'a>,
    /// Ask for a CQE (besides the queue's signal-every policy).
    pub signaled: bool,
    /// Raise a solicited event at the receiver.
    pub solicited: bool,
    /// Wait for earlier READs and atomics first.
    pub fence: bool,
}

impl<'a> SendWr<'a> {
    /// A signalled request.
    pub fn new(wr_id: u64, op: SendOp<'a>) -> SendWr<'a> {
        SendWr {
            wr_id,
            op,
            signaled: true,
            solicited: false,
            fence: false,
        }
    }
}

/// Most inline bytes in one WQE (the WQE stays within 16 segments after ctrl).
pub const MAX_INLINE: usize = 12 * SEG - 4;

/// An RC queue pair.
pub struct RcQp {
    // Drop order: the QP before its CQs, PD and memory.
    obj: DevxObj,
    qpn: Qpn,
    sq: SendRing,
    rq: Option<RecvRing>,
    dbr: DoorbellRecord,
    uar: Arc<UarPage>,
    ring_place: MemPlace,
    dbr_place: MemPlace,
    rq_bytes: usize,
    send_cq: Arc<CqObj>,
    recv_cq: Arc<CqObj>,
    /// The shared receive queue it receives from, kept until the QP is destroyed.
    _srq: Option<Arc<super::srq::SrqObj>>,
    _pd: Arc<Pd>,
    _mem: Box<dyn QueueMemory>,
}

impl std::fmt::Debug for RcQp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RcQp")
            .field("qpn", &self.qpn)
            .field("sq_pi", &self.sq.pi())
            .field("sq_ci", &self.sq.ci())
            .finish()
    }
}

impl RcQp {
    /// CREATE_QP (RC) over `mem`; the QP starts in RST.
    ///
    /// # Errors
    /// Configuration, memory or firmware errors.
    #[allow(clippy::too_many_arguments)]
    pub fn create(
        dev: &Arc<dyn Devx>,
        pd: &Arc<Pd>,
        uar: &Arc<UarPage>,
        send_cq: &Cq,
        recv_cq: &Cq,
        mem: impl QueueMemory,
        cfg: &QpConfig,
    ) -> Result<RcQp, QueueError> {
        Self::create_inner(dev, pd, uar, send_cq, recv_cq, None, mem, cfg)
    }

    /// CREATE_QP (RC) receiving from `srq` (PRM `rq_type` SRQ): `mem` holds the send ring
    /// only, `cfg.log_rq_size` must be `None`; receive completions go to `recv_cq`, naming this
    /// QP and the SRQ's WQE. The QP starts in RST.
    ///
    /// # Errors
    /// Configuration (a receive ring asked for, an SRQ of another PD), memory or firmware
    /// errors.
    #[allow(clippy::too_many_arguments)]
    pub fn create_with_srq(
        dev: &Arc<dyn Devx>,
        pd: &Arc<Pd>,
        uar: &Arc<UarPage>,
        send_cq: &Cq,
        recv_cq: &Cq,
        srq: &super::Srq,
        mem: impl QueueMemory,
        cfg: &QpConfig,
    ) -> Result<RcQp, QueueError> {
        if cfg.log_rq_size.is_some() {
            return Err(QueueError::Config(
                "a QP with a shared receive queue has no receive ring (log_rq_size: None)".into(),
            ));
        }
        if !Arc::ptr_eq(&srq.shared.pd, pd) {
            return Err(QueueError::Config(
                "the SRQ belongs to another protection domain".into(),
            ));
        }
        Self::create_inner(dev, pd, uar, send_cq, recv_cq, Some(srq), mem, cfg)
    }

    #[allow(clippy::too_many_arguments)]
    fn create_inner(
        dev: &Arc<dyn Devx>,
        pd: &Arc<Pd>,
        uar: &Arc<UarPage>,
        send_cq: &Cq,
        recv_cq: &Cq,
        srq: Option<&super::Srq>,
        mem: impl QueueMemory,
        cfg: &QpConfig,
    ) -> Result<RcQp, QueueError> {
        if cfg.log_sq_size == 0 || cfg.log_sq_size > 15 || cfg.log_rq_size.is_some_and(|l| l > 15) {
            return Err(QueueError::Config(format!(
                "QP log_sq_size {} (1..=15), log_rq_size {:?} (..=15)",
                cfg.log_sq_size, cfg.log_rq_size
            )));
        }
        if cfg.signal_every == 0 || u32::from(cfg.signal_every) > (1u32 << cfg.log_sq_size) / 2 {
            return Err(QueueError::Config(format!(
                "signal_every {} must be 1..={}",
                cfg.signal_every,
                (1u32 << cfg.log_sq_size) / 2
            )));
        }
        if cfg.rq_stride() > 512 {
            return Err(QueueError::Config(format!(
                "max_recv_sge {} (at most 32)",
                cfg.max_recv_sge
            )));
        }
        let bytes = cfg.ring_bytes();
        let HostQueue {
            ring_place,
            ring: region,
            dbr_place,
            dbr,
        } = host_queue(&mem, "QP memory", bytes)?;
        let ring = region.base();
        let stride = cfg.rq_stride();
        let (obj, qpn) = devx::create(
            dev,
            &CreateQp {
                pd: pd.pdn(),
                uar_page: uar.page_id(),
                cqn_snd: send_cq.cqn(),
                cqn_rcv: recv_cq.cqn(),
                log_sq_size: cfg.log_sq_size,
                log_rq_size: cfg.log_rq_size,
                log_rq_stride: (stride.trailing_zeros() - 4) as u8,
                srqn: srq.map(super::Srq::srqn),
                mem: RingMem {
                    umem_id: ring_place.umem_id,
                    umem_offset: ring_place.umem_offset,
                    dbr_umem_id: dbr_place.umem_id,
                    dbr_offset: dbr_place.umem_offset,
                },
                user_index: 0,
            },
        )?;
        let rq_bytes = cfg.rq_bytes();
        // The send ring starts `rq_bytes` into the region.
        let sq_base = region
            .part(rq_bytes, bytes - rq_bytes)
            .ok_or_else(|| QueueError::Config("QP ring size".into()))?;
        Ok(RcQp {
            obj,
            qpn,
            sq: SendRing::new(sq_base, cfg.log_sq_size, cfg.signal_every, qpn.0),
            rq: cfg
                .log_rq_size
                .map(|l| RecvRing::new(ring, l, stride, qpn.0)),
            dbr,
            uar: Arc::clone(uar),
            ring_place,
            dbr_place,
            rq_bytes,
            send_cq: Arc::clone(&send_cq.shared),
            recv_cq: Arc::clone(&recv_cq.shared),
            _srq: srq.map(|s| Arc::clone(&s.shared)),
            _pd: Arc::clone(pd),
            _mem: Box::new(mem),
        })
    }

    /// The QP number.
    pub fn qpn(&self) -> Qpn {
        self.qpn
    }

    /// Moves the QP RST -> INIT -> RTR -> RTS towards `c.peer`.
    ///
    /// # Errors
    /// Firmware refused a transition (the error names it); the QP is left where it stopped.
    pub fn connect(&mut self, c: &RcConnect) -> Result<(), QueueError> {
        connect_rc(&self.obj, self.qpn, c)
    }

    /// The state firmware reports (QUERY_QP).
    ///
    /// # Errors
    /// Firmware refused, or reported a state this driver does not know.
    pub fn state(&self) -> Result<QpState, QueueError> {
        let ctx = devx::query(&self.obj, &QueryQp(self.qpn))?;
        let v = crate::mlx5::View::<qpc::Layout>::new(&ctx)
            .map_err(|e| QueueError::Config(format!("QUERY_QP answer: {e}")))?;
        v.value(qpc::state)
            .map_err(|e| QueueError::Config(format!("QUERY_QP answer: {e}")))
    }

    /// Moves the QP to ERR (outstanding WQEs are flushed).
    ///
    /// # Errors
    /// Firmware refused.
    pub fn to_error(&mut self) -> Result<(), QueueError> {
        let qpn = self.qpn;
        devx::modify(
            &self.obj,
            &ModifyQp {
                qpn,
                attr: QpAttr::default(),
                transition: Qp2Err,
            },
        )?;
        Ok(())
    }

    /// Moves the QP to RST and forgets every outstanding WQE; [`RcQp::connect`] makes it usable
    /// again. Poll the CQs for flushed completions first if their `wr_id`s matter.
    ///
    /// # Errors
    /// Firmware refused.
    pub fn reset(&mut self) -> Result<(), QueueError> {
        let qpn = self.qpn;
        devx::modify(
            &self.obj,
            &ModifyQp {
                qpn,
                attr: QpAttr::default(),
                transition: Qp2Rst,
            },
        )?;
        self.sq.reset();
        if let Some(rq) = &mut self.rq {
            rq.reset();
        }
        self.dbr.store(SND_DBR, 0);
        self.dbr.store(RCV_DBR, 0);
        Ok(())
    }

    /// Free send WQEBBs.
    pub fn send_free(&self) -> u16 {
        self.sq.free()
    }

    /// Writes one send WQE. Not visible to the device until [`RcQp::ring_send_doorbell`].
    ///
    /// # Errors
    /// Too many segments, inline data too long, a bad atomic SGE, or no room.
    #[inline]
    pub fn post_send(&mut self, wr: &SendWr<'_>) -> Result<(), QueueError> {
        const Q: &str = "RC send queue";
        let mut imm = 0u32;
        let (opcode, ds) = match wr.op {
            SendOp::Send { sges, imm: i } => {
                imm = i.unwrap_or(0);
                let op = if i.is_some() {
                    wqe_opcode::SEND_IMM
                } else {
                    wqe_opcode::SEND
                };
                (op, 1 + sges.len())
            }
            SendOp::SendInline { data, imm: i } => {
                if data.len() > MAX_INLINE {
                    return Err(QueueError::BadRequest(format!(
                        "{} inline bytes; at most {MAX_INLINE}",
                        data.len()
                    )));
                }
                imm = i.unwrap_or(0);
                let op = if i.is_some() {
                    wqe_opcode::SEND_IMM
                } else {
                    wqe_opcode::SEND
                };
                (op, 1 + (4 + data.len()).div_ceil(SEG))
            }
            SendOp::Write { sges, imm: i, .. } => {
                imm = i.unwrap_or(0);
                let op = if i.is_some() {
                    wqe_opcode::RDMA_WRITE_IMM
                } else {
                    wqe_opcode::RDMA_WRITE
                };
                (op, 2 + sges.len())
            }
            SendOp::Read { sges, .. } => (wqe_opcode::RDMA_READ, 2 + sges.len()),
            SendOp::CompareSwap { local, .. } | SendOp::FetchAdd { local, .. } => {
                if local.len != 8 {
                    return Err(QueueError::BadRequest(format!(
                        "an atomic returns 8 bytes; the local SGE has {}",
                        local.len
                    )));
                }
                let op = if matches!(wr.op, SendOp::CompareSwap { .. }) {
                    wqe_opcode::ATOMIC_CS
                } else {
                    wqe_opcode::ATOMIC_FA
                };
                (op, 4)
            }
            SendOp::Nop => (wqe_opcode::NOP, 1),
        };
        self.sq.with(|sq, shadow| {
            let slot = sq.begin(Q, ds)?;
            let raddr = |r: &RemoteAddr| raddr_seg(r.addr, r.rkey.0);
            match wr.op {
                SendOp::Send { sges, .. } => {
                    for (i, g) in sges.iter().enumerate() {
                        sq.seg(&slot, 1 + i, &data_seg(g));
                    }
                }
                SendOp::SendInline { data, .. } => {
                    // The inline segment: byte count with the inline bit, then the bytes, in as
                    // many 16-byte segments as they need.
                    sq.seg(&slot, 1, &inline_seg(data));
                    let first = data.len().min(INLINE_FIRST);
                    for (i, chunk) in data[first..].chunks(SEG).enumerate() {
                        let mut s = [0u8; 16];
                        s[..chunk.len()].copy_from_slice(chunk);
                        sq.seg(&slot, 2 + i, &s);
                    }
                }
                SendOp::Write { sges, remote, .. } | SendOp::Read { sges, remote } => {
                    sq.seg(&slot, 1, &raddr(&remote));
                    for (i, g) in sges.iter().enumerate() {
                        sq.seg(&slot, 2 + i, &data_seg(g));
                    }
                }
                SendOp::CompareSwap {
                    local,
                    remote,
                    compare,
                    swap,
                } => {
                    sq.seg(&slot, 1, &raddr(&remote));
                    sq.seg(&slot, 2, &atomic_seg(swap, compare));
                    sq.seg(&slot, 3, &data_seg(&local));
                }
                SendOp::FetchAdd { local, remote, add } => {
                    sq.seg(&slot, 1, &raddr(&remote));
                    sq.seg(&slot, 2, &atomic_seg(add, 0));
                    sq.seg(&slot, 3, &data_seg(&local));
                }
                SendOp::Nop => {}
            }
            let mut flags = if sq.signal(&slot, ds, wr.signaled) {
                CTRL_CQ_UPDATE
            } else {
                0
            };
            if wr.solicited {
                flags |= CTRL_SOLICITED;
            }
            if wr.fence {
                flags |= CTRL_FENCE;
            }
            sq.finish(shadow, slot, opcode, 0, ds, flags, imm, wr.wr_id);
            Ok(())
        })
    }

    /// Rings the send doorbell for everything posted since the last one.
    #[inline]
    pub fn ring_send_doorbell(&mut self) {
        self.sq.doorbell(&self.dbr, &self.uar);
    }

    /// Posts one receive. Not visible until [`RcQp::ring_recv_doorbell`].
    ///
    /// # Errors
    /// The QP has no receive queue, too many entries, or no room.
    #[inline]
    pub fn post_recv(&mut self, sges: &[Sge], wr_id: u64) -> Result<(), QueueError> {
        let Some(rq) = &mut self.rq else {
            return Err(QueueError::BadRequest(
                "this QP was created without a receive queue".into(),
            ));
        };
        rq.post("RC receive queue", sges, wr_id)
    }

    /// Publishes posted receives.
    #[inline]
    pub fn ring_recv_doorbell(&mut self) {
        if let Some(rq) = &mut self.rq {
            rq.doorbell(&self.dbr);
        }
    }

    /// Retires send WQEs up to the one a completion (or error completion) names; returns its
    /// `wr_id` and how many WQEs completed.
    ///
    /// # Errors
    /// The counter names no outstanding WQE.
    #[inline]
    pub fn complete_send(&mut self, wqe_counter: u16) -> Result<(u64, u16), QueueError> {
        self.sq.retire("RC send queue", wqe_counter)
    }

    /// Retires the receive a completion names; returns its `wr_id`.
    ///
    /// # Errors
    /// No receive queue, or the counter names no outstanding receive.
    #[inline]
    pub fn complete_recv(&mut self, wqe_counter: u16) -> Result<u64, QueueError> {
        let Some(rq) = &mut self.rq else {
            return Err(QueueError::BadRequest(
                "this QP was created without a receive queue".into(),
            ));
        };
        rq.retire("RC receive queue", wqe_counter)
    }

    /// Send WQEBBs posted and not yet retired by a completion.
    pub fn send_outstanding(&self) -> u16 {
        self.sq.outstanding()
    }

    /// The UAR page its doorbells go to.
    pub fn uar(&self) -> &Arc<UarPage> {
        &self.uar
    }

    /// The DevX handle.
    pub fn obj(&self) -> &DevxObj {
        &self.obj
    }

    /// A descriptor for an external engine (the host must stop posting).
    pub fn descriptor(&self) -> WqDescriptor {
        WqDescriptor {
            kind: wq_kind::RC_QP,
            num: self.qpn.0,
            sq_ring_addr: self.ring_place.device_addr + self.rq_bytes as u64,
            log_sq_wqebb_cnt: u32::from(self.sq.log_size()),
            sq_producer_index: u32::from(self.sq.pi()),
            rq_ring_addr: if self.rq.is_some() {
                self.ring_place.device_addr
            } else {
                0
            },
            log_rq_wqe_cnt: self.rq.as_ref().map_or(0, |r| u32::from(r.log_size())),
            rq_wqe_stride: self.rq.as_ref().map_or(0, |r| r.stride() as u32),
            rq_producer_index: self.rq.as_ref().map_or(0, |r| u32::from(r.pi)),
            uar_page_id: self.uar.page_id(),
            dbr_addr: self.dbr_place.device_addr,
            uar_doorbell_addr: self.uar.base() as u64 + crate::devx::UAR_DOORBELL_OFFSET as u64,
            send_cq: self.send_cq.cqn.0,
            recv_cq: self.recv_cq.cqn.0,
            ring_umem_id: self.ring_place.umem_id,
            _reserved: 0,
            ring_umem_offset: self.ring_place.umem_offset,
        }
    }
}

/// Moves the RC QP `obj` (number `qpn`) RST -> INIT -> RTR -> RTS towards `c.peer`: the
/// transitions of [`RcQp::connect`], shared with QPs whose rings live in DPA memory.
///
/// # Errors
/// Firmware refused a transition; the QP is left where it stopped.
pub(crate) fn connect_rc(obj: &DevxObj, qpn: Qpn, c: &RcConnect) -> Result<(), QueueError> {
    let mut attr = QpAttr {
        rre: c.remote_access.contains(Access::REMOTE_READ),
        rwe: c.remote_access.contains(Access::REMOTE_WRITE),
        rae: c.remote_access.contains(Access::REMOTE_ATOMIC),
        vhca_port_num: c.port,
        mtu: c.mtu as u8,
        remote_qpn: c.peer.remote_qpn().0,
        next_rcv_psn: c.recv_psn & 0xff_ffff,
        log_rra_max: c.log_rra_max,
        min_rnr_nak: c.min_rnr_timer,
        next_send_psn: c.send_psn & 0xff_ffff,
        log_sra_max: c.log_sra_max,
        retry_count: c.retry_count,
        rnr_retry: c.rnr_retry,
        ack_timeout: c.ack_timeout,
        ..QpAttr::default()
    };
    match c.peer {
        RcPeer::Loopback { .. } => attr.fl = true,
        RcPeer::Remote {
            mac,
            gid,
            gid_index,
            hop_limit,
            ..
        } => {
            attr.rmac = mac;
            attr.rgid = gid;
            attr.src_addr_index = gid_index;
            attr.hop_limit = hop_limit;
        }
    }
    devx::modify(
        obj,
        &ModifyQp {
            qpn,
            attr,
            transition: Rst2Init,
        },
    )?;
    devx::modify(
        obj,
        &ModifyQp {
            qpn,
            attr,
            transition: Init2Rtr,
        },
    )?;
    devx::modify(
        obj,
        &ModifyQp {
            qpn,
            attr,
            transition: Rtr2Rts,
        },
    )?;
    Ok(())
}
