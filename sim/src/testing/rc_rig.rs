//! One reliable-connected QP built from raw firmware commands and hand-built WQEs.
//!
//! The RC counterpart of [`crate::rig::EthRig`]: a PD, a UAR, one UMEM holding the QP ring
//! (RQ then SQ), two CQs, the doorbell records and a data area covered by a memory key. It
//! drives the QP state machine with the driver's `ModifyQp` commands and writes WQEs and
//! doorbells by hand in the formats of rdma-core's `mlx5dv.h` (docs/sources.md §6). It works over
//! any [`Devx`], so it runs on hardware as well.

use mlx5_dpa::mlx5::{Cqn, Pdn, Qpn};
use std::sync::Arc;

use mlx5_dpa::devx::{self, Devx, DevxError, DevxObj, Uar, UarKind, UmemAccess};
use mlx5_dpa::mem::Lkey;
use mlx5_dpa::mem::{DmaBuf, Umem as MemUmem};
use mlx5_dpa::mlx5::cmd::{
    AllocPd, CreateMkey, CreateQp, Init2Rtr, MkeyAccess, ModifyQp, Qp2Rst, QpAttr, QpTransition,
    QueryQp, Rst2Init, Rtr2Rts,
};
use mlx5_dpa::mlx5::wire::cqe::{self as cqe_fmt, cqe64_offset, Cqe64, CQE_SIZE};
use mlx5_dpa::mlx5::wire::wqe::{
    atomic_seg, data_seg, end_of_scatter_seg, inline_seg, opcode as wqe_op, raddr_seg, CtrlSeg,
    CtrlSegRepr, CTRL_CQ_UPDATE, CTRL_FENCE, CTRL_SOLICITED, INLINE_FIRST, SEG, WQEBB,
};
use mlx5_dpa::uar::barrier;

use crate::testing::rig::RigError;
use crate::testing::RigMem;

/// Sizes and rights.
#[derive(Debug, Clone, Copy)]
pub struct RcRigConfig {
    /// log2 of SQ WQE basic blocks.
    pub log_sq: u8,
    /// log2 of RQ WQEs.
    pub log_rq: u8,
    /// RQ WQE stride: `16 << log_rq_stride` bytes.
    pub log_rq_stride: u8,
    /// log2 of CQEs per CQ.
    pub log_cq: u8,
    /// Bytes of the data area (a multiple of 4096).
    pub data_len: usize,
    /// Rights of the data area's memory key.
    pub access: MkeyAccess,
    /// The QP's `user_index` (what its CQEs carry in `srqn_uidx`).
    pub user_index: u32,
}

impl Default for RcRigConfig {
    fn default() -> Self {
        RcRigConfig {
            log_sq: 6,
            log_rq: 6,
            log_rq_stride: 2,
            log_cq: 8,
            data_len: 1 << 20,
            access: MkeyAccess {
                local_read: true,
                local_write: true,
                remote_read: true,
                remote_write: true,
                atomic: true,
            },
            user_index: 0,
        }
    }
}

/// What a work request does (`MLX5_OPCODE_*` with its segments).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RcOp {
    /// NOP (0x00).
    Nop,
    /// SEND (0x0a).
    Send,
    /// SEND with immediate (0x0b); the value goes on the wire big-endian.
    SendImm(u32),
    /// RDMA WRITE (0x08).
    Write {
        /// Remote address.
        raddr: u64,
        /// Remote key.
        rkey: u32,
    },
    /// RDMA WRITE with immediate (0x09).
    WriteImm {
        /// Remote address.
        raddr: u64,
        /// Remote key.
        rkey: u32,
        /// Immediate data.
        imm: u32,
    },
    /// RDMA READ (0x10): the gather list is where the data lands.
    Read {
        /// Remote address.
        raddr: u64,
        /// Remote key.
        rkey: u32,
    },
    /// Atomic compare and swap (0x11): the one 8-byte SGE receives the original value.
    CompareSwap {
        /// Remote address (8-byte aligned).
        raddr: u64,
        /// Remote key.
        rkey: u32,
        /// Compared with the remote value.
        compare: u64,
        /// Written when equal.
        swap: u64,
    },
    /// Atomic fetch and add (0x12).
    FetchAdd {
        /// Remote address (8-byte aligned).
        raddr: u64,
        /// Remote key.
        rkey: u32,
        /// Added to the remote value.
        add: u64,
    },
}

impl RcOp {
    /// The WQE opcode.
    pub fn opcode(&self) -> u8 {
        match self {
            RcOp::Nop => wqe_op::NOP,
            RcOp::Send => wqe_op::SEND,
            RcOp::SendImm(_) => wqe_op::SEND_IMM,
            RcOp::Write { .. } => wqe_op::RDMA_WRITE,
            RcOp::WriteImm { .. } => wqe_op::RDMA_WRITE_IMM,
            RcOp::Read { .. } => wqe_op::RDMA_READ,
            RcOp::CompareSwap { .. } => wqe_op::ATOMIC_CS,
            RcOp::FetchAdd { .. } => wqe_op::ATOMIC_FA,
        }
    }
}

/// A scatter / gather element: the driver's (`mlx5_dpa::mem::Sge`).
pub use mlx5_dpa::mem::Sge;

/// A send work request.
#[derive(Debug, Clone, Copy)]
pub struct SendWr<'a> {
    /// The operation.
    pub op: RcOp,
    /// Gather list (scatter list for READ and atomics).
    pub sges: &'a [Sge],
    /// Inline data, after the SGEs.
    pub inline: Option<&'a [u8]>,
    /// Ask for a CQE (`fm_ce_se` CQ update).
    pub signaled: bool,
    /// Fence: wait for earlier READs and atomics.
    pub fence: bool,
    /// Solicited event.
    pub solicited: bool,
}

impl<'a> SendWr<'a> {
    /// A signaled request without inline data or fence.
    pub fn new(op: RcOp, sges: &'a [Sge]) -> Self {
        SendWr {
            op,
            sges,
            inline: None,
            signaled: true,
            fence: false,
            solicited: false,
        }
    }
}

/// A completion as the rig reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RcCompletion {
    /// CQE opcode (`op_own[7:4]`).
    pub opcode: u8,
    /// `byte_cnt`.
    pub byte_cnt: u32,
    /// `wqe_counter`.
    pub wqe_counter: u16,
    /// Error syndrome (byte 0x37 of error CQEs).
    pub syndrome: u8,
    /// Vendor error syndrome (byte 0x36).
    pub vendor_syndrome: u8,
    /// `sop_drop_qpn[31:24]`: the WQE opcode on requester CQEs.
    pub wqe_opcode: u8,
    /// `sop_drop_qpn[23:0]`.
    pub qpn: u32,
    /// `imm_inval_pkey` as a big-endian word (the immediate as sent).
    pub imm: u32,
    /// `srqn_uidx`: the QP's user index.
    pub user_index: u32,
}

/// CQE opcodes the rig's users look at (`MLX5_CQE_*`), declared with the CQE format.
pub use mlx5_dpa::mlx5::wire::cqe::opcode as cqe;

struct Off {
    qp: usize,
    sq: usize,
    cq_snd: usize,
    cq_rcv: usize,
    dbr: usize,
    data: usize,
    total: usize,
}

const DBR_QP: usize = 0;
const DBR_CQ_SND: usize = 64;
const DBR_CQ_RCV: usize = 128;

/// One RC QP with its CQs, rings and a data area.
pub struct RcRig {
    ctx: Arc<dyn Devx>,
    cfg: RcRigConfig,
    objs: Vec<DevxObj>,
    qp_obj: usize,
    umem: Option<Arc<MemUmem>>,
    uar: Option<Uar>,
    mem: Arc<DmaBuf>,
    off: Off,
    /// Protection domain.
    pub pdn: u32,
    /// Key of the data area (used as lkey and rkey).
    pub key: u32,
    /// QP number.
    pub qpn: u32,
    /// Send CQ.
    pub cqn_snd: u32,
    /// Receive CQ.
    pub cqn_rcv: u32,
    sq_pi: u16,
    rq_pi: u16,
    cq_snd_ci: u32,
    cq_rcv_ci: u32,
    last_ctrl: [u8; 8],
}

impl RcRig {
    /// Builds the QP (in RST) on `ctx`.
    ///
    /// # Errors
    /// Configuration out of range, or the first command the device refused.
    pub fn new(ctx: Arc<dyn Devx>, cfg: RcRigConfig) -> Result<RcRig, RigError> {
        if cfg.log_sq > 15
            || cfg.log_rq > 15
            || cfg.log_rq_stride > 7
            || cfg.log_cq > 20
            || cfg.data_len == 0
            || !cfg.data_len.is_multiple_of(4096)
        {
            return Err(RigError::Config("sizes"));
        }
        let mut o = 0usize;
        let mut take = |n: usize| {
            let at = o;
            o += n.div_ceil(4096) * 4096;
            at
        };
        let rq_bytes = (16usize << cfg.log_rq_stride) << cfg.log_rq;
        let qp = take(rq_bytes + (64 << cfg.log_sq));
        let cq_snd = take(64 << cfg.log_cq);
        let cq_rcv = take(64 << cfg.log_cq);
        let dbr = take(256);
        let data = take(cfg.data_len);
        let off = Off {
            qp,
            sq: qp + rq_bytes,
            cq_snd,
            cq_rcv,
            dbr,
            data,
            total: o,
        };
        let mem = DmaBuf::new(off.total)?;
        for i in 0..(1usize << cfg.log_cq) {
            mem.put(
                off.cq_snd + cqe64_offset(i, CQE_SIZE) + cqe_fmt::at::OP_OWN,
                &[(cqe_fmt::opcode::INVALID << 4) | 1],
            );
            mem.put(
                off.cq_rcv + cqe64_offset(i, CQE_SIZE) + cqe_fmt::at::OP_OWN,
                &[(cqe_fmt::opcode::INVALID << 4) | 1],
            );
        }
        let mut rig = RcRig {
            ctx,
            cfg,
            objs: Vec::new(),
            qp_obj: 0,
            umem: None,
            uar: None,
            mem,
            off,
            pdn: 0,
            key: 0,
            qpn: 0,
            cqn_snd: 0,
            cqn_rcv: 0,
            sq_pi: 0,
            rq_pi: 0,
            cq_snd_ci: 0,
            cq_rcv_ci: 0,
            last_ctrl: [0; 8],
        };
        rig.build()?;
        Ok(rig)
    }

    fn keep<T>(&mut self, r: (DevxObj, T)) -> T {
        self.objs.push(r.0);
        r.1
    }

    fn build(&mut self) -> Result<(), RigError> {
        let ctx = Arc::clone(&self.ctx);
        let cfg = self.cfg;
        let pd = devx::create(&ctx, &AllocPd)?;
        self.pdn = self.keep(pd).0;
        let uar = ctx.uar_alloc(UarKind::NonCached)?;
        let uar_page = uar.page_id;
        self.uar = Some(uar);
        // The registration holds the memory until the device gives it back.
        let umem = MemUmem::register(
            &ctx,
            &self.mem,
            UmemAccess::LOCAL_WRITE
                | UmemAccess::REMOTE_READ
                | UmemAccess::REMOTE_WRITE
                | UmemAccess::REMOTE_ATOMIC,
        )?;
        let umem_id = umem.id().0;
        self.umem = Some(umem);
        let key = self.create_mkey(self.pdn, cfg.access, 0, cfg.data_len)?;
        self.key = key;
        let eqn = ctx.query_eqn(0)?;
        let dbr_base = self.off.dbr;
        let ring = move |off: usize, dbr: usize| super::ring_mem(umem_id, off, dbr_base + dbr);
        let cq = |off, dbr| super::rig_cq(cfg.log_cq, uar_page, eqn, ring(off, dbr));
        let c = devx::create(&ctx, &cq(self.off.cq_snd, DBR_CQ_SND))?;
        self.cqn_snd = self.keep(c).0;
        let c = devx::create(&ctx, &cq(self.off.cq_rcv, DBR_CQ_RCV))?;
        self.cqn_rcv = self.keep(c).0;
        let qp = devx::create(
            &ctx,
            &CreateQp {
                pd: Pdn(self.pdn),
                uar_page,
                cqn_snd: Cqn(self.cqn_snd),
                cqn_rcv: Cqn(self.cqn_rcv),
                log_sq_size: cfg.log_sq,
                log_rq_size: Some(cfg.log_rq),
                log_rq_stride: cfg.log_rq_stride,
                srqn: None,
                mem: ring(self.off.qp, DBR_QP),
                user_index: cfg.user_index,
            },
        )?;
        self.qpn = self.keep(qp).0;
        self.qp_obj = self.objs.len() - 1;
        Ok(())
    }

    /// Allocates another protection domain (owned by the rig).
    ///
    /// # Errors
    /// The device refused.
    pub fn alloc_pd(&mut self) -> Result<u32, RigError> {
        let pd = devx::create(&self.ctx, &AllocPd)?;
        Ok(self.keep(pd).0)
    }

    /// Creates another memory key over `len` bytes of the data area at `offset`, in `pd`,
    /// with `access` (owned by the rig). Its address space is the host address.
    ///
    /// # Errors
    /// Out of the data area, or the device refused.
    pub fn create_mkey(
        &mut self,
        pd: u32,
        access: MkeyAccess,
        offset: usize,
        len: usize,
    ) -> Result<u32, RigError> {
        if offset
            .checked_add(len)
            .is_none_or(|e| e > self.cfg.data_len)
            || len == 0
        {
            return Err(RigError::Config("mkey outside the data area"));
        }
        let umem_id = self
            .umem
            .as_ref()
            .ok_or(RigError::Config("no umem"))?
            .id()
            .0;
        let at = self.off.data + offset;
        let tag = (self.objs.len() as u8).wrapping_mul(17).wrapping_add(0x21);
        let mkey = devx::create(
            &self.ctx,
            &CreateMkey {
                pd: Pdn(pd),
                start_addr: self.mem.va(at),
                len: len as u64,
                access,
                umem_id,
                umem_offset: at as u64,
                key: tag,
                log_page_size: 12,
            },
        )?;
        Ok(self.keep(mkey))
    }

    /// The address of byte `off` of the data area (what SGEs and remote addresses name).
    pub fn addr(&self, off: usize) -> u64 {
        self.mem.va(self.off.data + off)
    }

    /// An SGE over the data area with the rig's key.
    pub fn sge(&self, off: usize, len: u32) -> Sge {
        Sge {
            addr: self.addr(off),
            len,
            lkey: Lkey(self.key),
        }
    }

    /// Writes into the data area.
    pub fn write_data(&self, off: usize, data: &[u8]) {
        assert!(off + data.len() <= self.cfg.data_len);
        self.mem.put(self.off.data + off, data);
    }

    /// Reads from the data area.
    pub fn read_data(&self, off: usize, len: usize) -> Vec<u8> {
        assert!(off + len <= self.cfg.data_len);
        let mut v = vec![0u8; len];
        self.mem.get(self.off.data + off, &mut v);
        v
    }

    fn qp(&self) -> &DevxObj {
        &self.objs[self.qp_obj]
    }

    /// Runs one state transition with `attr`.
    ///
    /// # Errors
    /// The device refused.
    pub fn modify<T: QpTransition>(&self, transition: T, attr: QpAttr) -> Result<(), DevxError> {
        devx::modify(
            self.qp(),
            &ModifyQp {
                qpn: Qpn(self.qpn),
                attr,
                transition,
            },
        )
    }

    /// RST -> INIT -> RTR -> RTS with `attr`.
    ///
    /// # Errors
    /// The first transition the device refused.
    pub fn connect(&self, attr: QpAttr) -> Result<(), DevxError> {
        self.modify(Rst2Init, attr)?;
        self.modify(Init2Rtr, attr)?;
        self.modify(Rtr2Rts, attr)
    }

    /// Moves the QP to RST and starts the rig's producer counters (and the doorbell record)
    /// over, as the device does with its consumer counters.
    ///
    /// # Errors
    /// The device refused.
    pub fn reset(&mut self) -> Result<(), DevxError> {
        self.modify(Qp2Rst, QpAttr::default())?;
        self.sq_pi = 0;
        self.rq_pi = 0;
        self.mem.put_be32(self.off.dbr + DBR_QP, 0);
        self.mem.put_be32(self.off.dbr + DBR_QP + 4, 0);
        Ok(())
    }

    /// QUERY_QP: the QP context bytes.
    ///
    /// # Errors
    /// The device refused.
    pub fn query(&self) -> Result<Vec<u8>, DevxError> {
        devx::query(self.qp(), &QueryQp(Qpn(self.qpn)))
    }

    /// Builds the WQE of `wr` (control segment with index 0 and this QP's number).
    pub fn build_wqe(&self, wr: &SendWr<'_>) -> Vec<u8> {
        let mut fm_ce_se = 0u8;
        if wr.signaled {
            fm_ce_se |= CTRL_CQ_UPDATE;
        }
        if wr.solicited {
            fm_ce_se |= CTRL_SOLICITED;
        }
        if wr.fence {
            fm_ce_se |= CTRL_FENCE;
        }
        let imm = match wr.op {
            RcOp::SendImm(imm) | RcOp::WriteImm { imm, .. } => imm,
            _ => 0,
        };
        let mut ctrl = CtrlSegRepr {
            opcode: wr.op.opcode(),
            opmod: 0,
            wqe_index: 0,
            qpn: self.qpn,
            ds: 0,
            fm_ce_se,
            imm,
        };
        let mut w = ctrl.to_bytes().to_vec();
        let raddr = |w: &mut Vec<u8>, raddr: u64, rkey: u32| {
            w.extend_from_slice(&raddr_seg(raddr, rkey));
        };
        match wr.op {
            RcOp::Write { raddr: a, rkey }
            | RcOp::WriteImm { raddr: a, rkey, .. }
            | RcOp::Read { raddr: a, rkey } => raddr(&mut w, a, rkey),
            RcOp::CompareSwap {
                raddr: a,
                rkey,
                compare,
                swap,
            } => {
                raddr(&mut w, a, rkey);
                w.extend_from_slice(&atomic_seg(swap, compare));
            }
            RcOp::FetchAdd {
                raddr: a,
                rkey,
                add,
            } => {
                raddr(&mut w, a, rkey);
                w.extend_from_slice(&atomic_seg(add, 0));
            }
            _ => {}
        }
        for s in wr.sges {
            w.extend_from_slice(&data_seg(s.len, s.lkey.0, s.addr));
        }
        if let Some(data) = wr.inline {
            let first = data.len().min(INLINE_FIRST);
            w.extend_from_slice(&inline_seg(data));
            w.extend_from_slice(&data[first..]);
            w.resize(w.len().div_ceil(SEG) * SEG, 0);
        }
        ctrl.ds = (w.len() / SEG) as u8;
        ctrl.emit(&mut CtrlSeg::new_unchecked(&mut w[..SEG]));
        w
    }

    /// Writes `wr` as the next WQE (not rung: see [`RcRig::ring`]). Returns its index.
    ///
    /// # Errors
    /// [`RigError::SqFull`]; a WQE above 16 WQEBBs is [`RigError::Config`].
    pub fn post_send(&mut self, wr: &SendWr<'_>) -> Result<u16, RigError> {
        let w = self.build_wqe(wr);
        self.post_raw(&w, true)
    }

    /// Writes a hand-built WQE (a multiple of 16 bytes) as the next one. With `set_index`
    /// the control segment gets the WQE index. Returns the index.
    ///
    /// # Errors
    /// [`RigError::SqFull`]; a WQE longer than 16 WQEBBs or not a multiple of 16 bytes is
    /// [`RigError::Config`].
    pub fn post_raw(&mut self, wqe: &[u8], set_index: bool) -> Result<u16, RigError> {
        if wqe.is_empty() || !wqe.len().is_multiple_of(SEG) || wqe.len() > 16 * WQEBB {
            return Err(RigError::Config("WQE size"));
        }
        let nbb = wqe.len().div_ceil(WQEBB) as u16;
        let size = 1u16 << self.cfg.log_sq;
        // The rig does not track completions of the SQ (errors may complete several WQEs):
        // it refuses only what cannot fit the ring at all.
        if nbb > size {
            return Err(RigError::SqFull);
        }
        let idx = self.sq_pi;
        let mut w = wqe.to_vec();
        w.resize(usize::from(nbb) * WQEBB, 0);
        if set_index {
            let mut c = CtrlSegRepr::parse(&CtrlSeg::new_unchecked(&w[..SEG]));
            c.wqe_index = idx;
            c.emit(&mut CtrlSeg::new_unchecked(&mut w[..SEG]));
        }
        for (i, bb) in w.chunks(WQEBB).enumerate() {
            let slot = (idx.wrapping_add(i as u16) & (size - 1)) as usize;
            self.mem.put(self.off.sq + slot * WQEBB, bb);
        }
        self.last_ctrl.copy_from_slice(&w[..8]);
        self.sq_pi = self.sq_pi.wrapping_add(nbb);
        Ok(idx)
    }

    /// Rings the send doorbell: doorbell record, barrier, then UAR + 0x800 with the last
    /// WQE's first control-segment word and this QP's number (a driver rings its own QP, even
    /// for a WQE whose control segment names another).
    pub fn ring(&mut self) {
        self.mem
            .put_be32(self.off.dbr + DBR_QP + 4, u32::from(self.sq_pi));
        barrier::dma_wmb();
        let ds = self.last_ctrl[7];
        self.last_ctrl[4..8].copy_from_slice(&((self.qpn << 8) | u32::from(ds)).to_be_bytes());
        let Some(uar) = &self.uar else { return };
        // SAFETY: `uar` is mapped for `uar.len` bytes until it is freed in Drop; the register
        // is 8-byte aligned and written with one 64-bit store, as doorbells must be.
        unsafe {
            std::ptr::write_volatile(
                uar.base.as_ptr().add(0x800).cast::<u64>(),
                u64::from_ne_bytes(self.last_ctrl),
            )
        }
    }

    /// Writes the send doorbell record only, without the UAR doorbell (hardware would not
    /// look, nor does the model: the WQEs wait for a doorbell, counted in
    /// `dbr_without_doorbell`).
    pub fn update_record(&mut self) {
        self.mem
            .put_be32(self.off.dbr + DBR_QP + 4, u32::from(self.sq_pi));
    }

    /// Posts and rings one request.
    ///
    /// # Errors
    /// As [`RcRig::post_send`].
    pub fn send(&mut self, wr: &SendWr<'_>) -> Result<u16, RigError> {
        let i = self.post_send(wr)?;
        self.ring();
        Ok(i)
    }

    /// Posts a receive WQE with `sges` (ended by an invalid-lkey segment when shorter than
    /// the stride). Returns its index.
    ///
    /// # Errors
    /// More SGEs than the stride holds.
    pub fn post_recv(&mut self, sges: &[Sge]) -> Result<u16, RigError> {
        let stride = SEG << self.cfg.log_rq_stride;
        if sges.len() > stride / SEG {
            return Err(RigError::Config("too many receive SGEs"));
        }
        let mut w = vec![0u8; stride];
        for (seg, s) in w.chunks_exact_mut(SEG).zip(sges) {
            seg.copy_from_slice(&data_seg(s.len, s.lkey.0, s.addr));
        }
        if sges.len() < stride / SEG {
            let i = sges.len() * SEG;
            w[i..i + SEG].copy_from_slice(&end_of_scatter_seg());
        }
        let idx = self.rq_pi;
        let slot = (idx & ((1u16 << self.cfg.log_rq) - 1)) as usize;
        self.mem.put(self.off.qp + slot * stride, &w);
        self.rq_pi = self.rq_pi.wrapping_add(1);
        barrier::dma_wmb();
        self.mem
            .put_be32(self.off.dbr + DBR_QP, u32::from(self.rq_pi));
        Ok(idx)
    }

    fn poll(&mut self, rcv: bool) -> Option<RcCompletion> {
        let (ring, dbr, ci) = if rcv {
            (self.off.cq_rcv, DBR_CQ_RCV, self.cq_rcv_ci)
        } else {
            (self.off.cq_snd, DBR_CQ_SND, self.cq_snd_ci)
        };
        let mask = (1u32 << self.cfg.log_cq) - 1;
        let at = ring + ((ci & mask) as usize) * CQE_SIZE;
        let op_own = self.mem.get_u8(at + mlx5_dpa::mlx5::wire::cqe::at::OP_OWN);
        let owner = (ci >> self.cfg.log_cq) & 1;
        if op_own >> 4 == cqe::INVALID || u32::from(op_own & 1) != owner {
            return None;
        }
        barrier::dma_rmb();
        let mut c = [0u8; CQE_SIZE];
        self.mem.get(at, &mut c);
        let c = Cqe64::new_unchecked(c);
        let done = RcCompletion {
            opcode: op_own >> 4,
            byte_cnt: c.byte_cnt(),
            wqe_counter: c.wqe_counter(),
            syndrome: c.syndrome(),
            vendor_syndrome: c.vendor_err_synd(),
            wqe_opcode: (c.sop_drop_qpn() >> 24) as u8,
            qpn: c.qpn(),
            imm: c.imm_inval_pkey(),
            user_index: c.srqn_uidx(),
        };
        let ci = ci.wrapping_add(1);
        if rcv {
            self.cq_rcv_ci = ci;
        } else {
            self.cq_snd_ci = ci;
        }
        self.mem.put_be32(self.off.dbr + dbr, ci & 0xff_ffff);
        Some(done)
    }

    /// The next send completion, if any.
    pub fn poll_send(&mut self) -> Option<RcCompletion> {
        self.poll(false)
    }

    /// The next receive completion, if any.
    pub fn poll_recv(&mut self) -> Option<RcCompletion> {
        self.poll(true)
    }

    /// Every send completion available now.
    pub fn drain_send(&mut self) -> Vec<RcCompletion> {
        std::iter::from_fn(|| self.poll_send()).collect()
    }

    /// Every receive completion available now.
    pub fn drain_recv(&mut self) -> Vec<RcCompletion> {
        std::iter::from_fn(|| self.poll_recv()).collect()
    }
}

impl Drop for RcRig {
    fn drop(&mut self) {
        while let Some(o) = self.objs.pop() {
            if let Err(e) = o.destroy() {
                tracing::warn!(target: "mlx5_sim::testing::rig", "destroy failed: {e}");
            }
        }
        // Deregisters (or, when refused, hands the memory to the context to keep).
        self.umem = None;
        if let Some(u) = self.uar.take() {
            let _ = self.ctx.uar_free(u);
        }
    }
}
