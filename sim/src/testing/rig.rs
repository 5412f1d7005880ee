//! A minimal Ethernet queue set built from raw firmware commands and hand-built WQEs.
//!
//! This is the smallest thing that moves frames through a device: one SQ and one RQ, each
//! with its CQ, a TIS, a TIR, and a NIC RX flow table that sends matching frames to the TIR.
//! It exists to test and measure the model (and the `mlx5-dpa sim --tap` demo) before the
//! driver's queue layer; it writes WQEs and doorbells by hand, with the formats of docs/sources.md §6.
//! It works over any [`Devx`], so it runs on hardware as well.

use mlx5_dpa::mlx5::{Cqn, Opcode, Rqn, Sqn};
use std::sync::Arc;

use mlx5_dpa::mem::{DmaBuf, MemError, Umem as MemUmem};

use super::RigMem;
use mlx5_dpa::devx::{self, Devx, DevxError, DevxObj, Uar, UarKind, UmemAccess};
use mlx5_dpa::mlx5::cmd::{
    AllocFlowCounter, AllocPd, AllocQCounter, AllocTransportDomain, CreateCq, CreateFlowGroup,
    CreateFlowTable, CreateMkey, CreateRq, CreateSq, CreateTir, CreateTis, MkeyAccess, ModifyRq,
    ModifySq, OuterMatch, QCounterStats, QueryFlowCounter, QueryQCounter, SetFte, TrafficCounter,
    WqAttr, WqState,
};
use mlx5_dpa::mlx5::wire::cqe::{self, cqe64_offset, session, Cqe64, CQE_SIZE};
use mlx5_dpa::mlx5::wire::wqe::{
    data_seg, eth_seg, opcode as wqe_opcode, CtrlSeg, CtrlSegRepr, CTRL_CQ_UPDATE,
    ETH_INLINE_START, SEG, WQEBB,
};
use mlx5_dpa::uar::barrier;

/// Sizes and the receive rule.
#[derive(Debug, Clone, Copy)]
pub struct RigConfig {
    /// log2 of SQ WQE basic blocks.
    pub log_sq: u8,
    /// log2 of RQ WQEs.
    pub log_rq: u8,
    /// log2 of CQEs per CQ.
    pub log_cq: u8,
    /// Bytes of each packet buffer (a multiple of 64).
    pub buf_size: usize,
    /// Which frames the flow rule sends to this rig's RQ (all of them by default).
    pub rule: OuterMatch,
    /// Flow table level (several rigs on one device need distinct rules or levels).
    pub level: u8,
    /// Request a CQE for every `signal_every`th send (1 = all).
    pub signal_every: u16,
    /// Rules of the rig's flow group before its own (flow indices `0..extra_rules`; the
    /// rig's rule comes last), each `rule` with another destination MAC, so that no frame
    /// of the rule's hits them: what steering must look past. `rule` must match on `dmac`.
    pub extra_rules: u32,
    /// The receive CQ compresses CQEs (`cqe_comp_en`); the rig expands the sessions.
    pub cqe_compression: bool,
    /// Bytes each receive WQE offers (0: the whole buffer). Below `buf_size`, longer frames
    /// complete in error (a local length error), as on a NIC.
    pub rx_post_len: usize,
    /// A Q counter for the RQ and a flow counter for the rig's rule ([`EthRig::counters`]).
    pub counters: bool,
    /// Bits of the consumer counter the rig writes to its CQs' doorbell records (24, the
    /// field's width, by default; DPDK's send queues keep 16).
    pub cq_ci_bits: u8,
}

impl Default for RigConfig {
    fn default() -> Self {
        RigConfig {
            log_sq: 10,
            log_rq: 10,
            log_cq: 12,
            buf_size: 2048,
            rule: OuterMatch::default(),
            level: 0,
            signal_every: 1,
            extra_rules: 0,
            cqe_compression: false,
            rx_post_len: 0,
            counters: false,
            cq_ci_bits: 24,
        }
    }
}

/// Errors of the rig.
#[derive(Debug, thiserror::Error)]
pub enum RigError {
    /// A DevX or firmware error.
    #[error(transparent)]
    Devx(#[from] DevxError),
    /// The frame does not fit a buffer or is shorter than the inlined L2 header.
    #[error("frame of {0} bytes does not fit (18..=buffer size)")]
    FrameSize(usize),
    /// The send queue is full.
    #[error("send queue full")]
    SqFull,
    /// Host memory could not be mapped or registered.
    #[error(transparent)]
    Mem(#[from] MemError),
    /// Configuration out of range.
    #[error("bad rig configuration: {0}")]
    Config(&'static str),
}

/// A completion as the rig reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Completion {
    /// CQE opcode (`op_own[7:4]`).
    pub opcode: u8,
    /// Bytes received.
    pub byte_cnt: u32,
    /// WQE counter.
    pub wqe_counter: u16,
    /// Error syndrome (error CQEs).
    pub syndrome: u8,
    /// `sop_drop_qpn` low 24 bits.
    pub qpn: u32,
}

struct Off {
    sq: usize,
    rq: usize,
    cq_tx: usize,
    cq_rx: usize,
    dbr: usize,
    tx_bufs: usize,
    rx_bufs: usize,
    total: usize,
}

/// The UAR page a rig rings through; freed when the last rig using it goes (after each has
/// destroyed its queues).
struct RigUar {
    ctx: Arc<dyn Devx>,
    uar: Option<Uar>,
}

impl Drop for RigUar {
    fn drop(&mut self) {
        if let Some(u) = self.uar.take() {
            let _ = self.ctx.uar_free(u);
        }
    }
}

/// One SQ/RQ pair with CQs, TIS, TIR and a flow rule.
pub struct EthRig {
    ctx: Arc<dyn Devx>,
    cfg: RigConfig,
    objs: Vec<DevxObj>,
    umem: Option<Arc<MemUmem>>,
    uar: Option<Arc<RigUar>>,
    mem: Arc<DmaBuf>,
    off: Off,
    lkey: u32,
    /// SQ number.
    pub sqn: u32,
    /// RQ number.
    pub rqn: u32,
    /// CQ of the SQ.
    pub cqn_tx: u32,
    /// CQ of the RQ.
    pub cqn_rx: u32,
    /// TIR number.
    pub tirn: u32,
    /// The RQ's Q counter and the rule's flow counter (`RigConfig::counters`; 0 without).
    pub q_counter: u32,
    pub flow_counter: u32,
    /// Flow table id.
    pub table_id: u32,
    sq_pi: u16,
    sq_acked: u16,
    rq_pi: u16,
    cq_tx_ci: u32,
    cq_rx_ci: u32,
    arm_sn: u32,
    last_ctrl: [u8; 8],
    pending_doorbell: bool,
    rx_scratch: Vec<u8>,
    /// Completions of a compression session not yet handed out.
    rx_session: std::collections::VecDeque<Completion>,
    /// Compression sessions expanded.
    pub sessions: u64,
}

const DBR_SQ: usize = 0;
const DBR_RQ: usize = 64;
const DBR_CQ_TX: usize = 128;
const DBR_CQ_RX: usize = 192;
const INLINE: usize = 18;

impl EthRig {
    /// Builds the queue set on `ctx`.
    ///
    /// # Errors
    /// Configuration out of range, or the first command the device refused (everything
    /// created before it is destroyed again).
    pub fn new(ctx: Arc<dyn Devx>, cfg: RigConfig) -> Result<EthRig, RigError> {
        EthRig::with_uar(ctx, cfg, None)
    }

    /// [`EthRig::new`], ringing through `uar` when given (else a UAR of its own).
    fn with_uar(
        ctx: Arc<dyn Devx>,
        cfg: RigConfig,
        uar: Option<Arc<RigUar>>,
    ) -> Result<EthRig, RigError> {
        if cfg.buf_size < 64
            || !cfg.buf_size.is_multiple_of(64)
            || cfg.log_sq > 15
            || cfg.log_rq > 15
            || cfg.log_cq > 20
            || cfg.extra_rules > 1 << 16
        {
            return Err(RigError::Config("sizes"));
        }
        if cfg.extra_rules > 0 && cfg.rule.dmac.is_none() {
            return Err(RigError::Config("extra_rules needs a rule on dmac"));
        }
        if cfg.signal_every == 0 {
            return Err(RigError::Config("signal_every must be at least 1"));
        }
        let mut o = 0usize;
        let mut take = |n: usize| {
            let at = o;
            o += n.div_ceil(64) * 64;
            at
        };
        let off = Off {
            sq: take(64 << cfg.log_sq),
            rq: take(16 << cfg.log_rq),
            cq_tx: take(64 << cfg.log_cq),
            cq_rx: take(64 << cfg.log_cq),
            dbr: take(256),
            tx_bufs: take(cfg.buf_size << cfg.log_sq),
            rx_bufs: take(cfg.buf_size << cfg.log_rq),
            total: 0,
        };
        let off = Off {
            total: o.div_ceil(4096) * 4096,
            ..off
        };
        let mem = DmaBuf::new(off.total)?;
        // CQEs start invalid and hardware-owned (op_own = INVALID << 4 | owner 1).
        for i in 0..(1usize << cfg.log_cq) {
            mem.put(
                off.cq_tx + cqe64_offset(i, CQE_SIZE) + cqe::at::OP_OWN,
                &[(cqe::opcode::INVALID << 4) | 1],
            );
            mem.put(
                off.cq_rx + cqe64_offset(i, CQE_SIZE) + cqe::at::OP_OWN,
                &[(cqe::opcode::INVALID << 4) | 1],
            );
        }
        let mut rig = EthRig {
            ctx: Arc::clone(&ctx),
            cfg,
            objs: Vec::new(),
            umem: None,
            uar,
            mem,
            off,
            lkey: 0,
            sqn: 0,
            rqn: 0,
            cqn_tx: 0,
            cqn_rx: 0,
            tirn: 0,
            q_counter: 0,
            flow_counter: 0,
            table_id: 0,
            sq_pi: 0,
            sq_acked: 0,
            rq_pi: 0,
            cq_tx_ci: 0,
            cq_rx_ci: 0,
            arm_sn: 0,
            last_ctrl: [0; 8],
            pending_doorbell: false,
            rx_scratch: vec![0; cfg.buf_size],
            rx_session: std::collections::VecDeque::new(),
            sessions: 0,
        };
        rig.build()?;
        Ok(rig)
    }

    /// Builds a queue set on `ctx` that rings its doorbells through `other`'s UAR page, as a
    /// program's queues share one (DPDK's TX queues do): the page's doorbell register then
    /// holds whichever queue rang last.
    ///
    /// # Errors
    /// As [`EthRig::new`]; [`RigError::Config`] when `other` lives on another context.
    pub fn new_sharing_uar(
        ctx: Arc<dyn Devx>,
        cfg: RigConfig,
        other: &EthRig,
    ) -> Result<EthRig, RigError> {
        if !Arc::ptr_eq(&ctx, &other.ctx) {
            return Err(RigError::Config("a shared UAR needs the same context"));
        }
        EthRig::with_uar(ctx, cfg, other.uar.clone())
    }

    fn keep<T>(&mut self, r: (DevxObj, T)) -> T {
        self.objs.push(r.0);
        r.1
    }

    fn build(&mut self) -> Result<(), RigError> {
        let ctx = Arc::clone(&self.ctx);
        let cfg = self.cfg;
        let pd = devx::create(&ctx, &AllocPd)?;
        let pd = self.keep(pd);
        let td = devx::create(&ctx, &AllocTransportDomain)?;
        let td = self.keep(td);
        let uar = match self.uar.take() {
            Some(u) => u,
            None => Arc::new(RigUar {
                ctx: Arc::clone(&ctx),
                uar: Some(ctx.uar_alloc(UarKind::NonCached)?),
            }),
        };
        let uar_page = uar.uar.as_ref().map_or(0, |u| u.page_id);
        self.uar = Some(uar);
        // The registration holds the memory until the device gives it back.
        let umem = MemUmem::register(&ctx, &self.mem, UmemAccess::LOCAL_WRITE)?;
        let umem_id = umem.id().0;
        self.umem = Some(umem);
        let mkey = devx::create(
            &ctx,
            &CreateMkey {
                pd,
                start_addr: self.mem.va(0),
                len: self.off.total as u64,
                access: MkeyAccess {
                    local_read: true,
                    local_write: true,
                    ..Default::default()
                },
                umem_id,
                umem_offset: 0,
                key: 0x5a,
                log_page_size: 12,
            },
        )?;
        // CREATE_MKEY answers the full key (mkey_index << 8 | key).
        self.lkey = self.keep(mkey);
        let eqn = ctx.query_eqn(0)?;
        let dbr_base = self.off.dbr;
        let ring = move |off: usize, dbr: usize| super::ring_mem(umem_id, off, dbr_base + dbr);
        let cq = |off, dbr| super::rig_cq(cfg.log_cq, uar_page, eqn, ring(off, dbr));
        let c = devx::create(&ctx, &cq(self.off.cq_tx, DBR_CQ_TX))?;
        self.cqn_tx = self.keep(c).0;
        let c = devx::create(
            &ctx,
            &CreateCq {
                cqe_comp: cfg.cqe_compression,
                ..cq(self.off.cq_rx, DBR_CQ_RX)
            },
        )?;
        self.cqn_rx = self.keep(c).0;
        // Counters after the CQs (`rx_cq` is the fifth object), before the queues naming them.
        if cfg.counters {
            let q = devx::create(&ctx, &AllocQCounter)?;
            self.q_counter = self.keep(q);
            let f = devx::create(&ctx, &AllocFlowCounter)?;
            self.flow_counter = self.keep(f);
        }
        let tis = devx::create(
            &ctx,
            &CreateTis {
                transport_domain: td,
                pd,
            },
        )?;
        let tisn = self.keep(tis);
        let sq = devx::create(
            &ctx,
            &CreateSq {
                cqn: Cqn(self.cqn_tx),
                tisn,
                wq: WqAttr {
                    pd,
                    uar_page,
                    log_wq_stride: 6,
                    log_wq_sz: cfg.log_sq,
                    mem: ring(self.off.sq, DBR_SQ),
                },
                flush_in_error_en: false,
            },
        )?;
        self.sqn = self.keep(sq).0;
        let rq = devx::create(
            &ctx,
            &CreateRq {
                cqn: Cqn(self.cqn_rx),
                wq: WqAttr {
                    pd,
                    uar_page,
                    log_wq_stride: 4,
                    log_wq_sz: cfg.log_rq,
                    mem: ring(self.off.rq, DBR_RQ),
                },
                flush_in_error_en: false,
                counter_set_id: self.q_counter,
            },
        )?;
        self.rqn = self.keep(rq).0;
        let sq_obj = &self.objs[self.objs.len() - 2];
        devx::modify(
            sq_obj,
            &ModifySq {
                sqn: Sqn(self.sqn),
                from: WqState::Rst,
                to: WqState::Rdy,
            },
        )?;
        let rq_obj = &self.objs[self.objs.len() - 1];
        devx::modify(
            rq_obj,
            &ModifyRq {
                rqn: Rqn(self.rqn),
                from: WqState::Rst,
                to: WqState::Rdy,
            },
        )?;
        let tir = devx::create(
            &ctx,
            &CreateTir {
                transport_domain: td,
                inline_rqn: Rqn(self.rqn),
            },
        )?;
        self.tirn = self.keep(tir);
        let table = devx::create(
            &ctx,
            &CreateFlowTable {
                level: cfg.level,
                log_size: (cfg.extra_rules + 1)
                    .next_power_of_two()
                    .trailing_zeros()
                    .max(4) as u8,
            },
        )?;
        self.table_id = self.keep(table);
        let group = devx::create(
            &ctx,
            &CreateFlowGroup {
                table_id: self.table_id,
                start_flow_index: 0,
                end_flow_index: cfg.extra_rules,
                criteria: cfg.rule,
            },
        )?;
        let group_id = self.keep(group);
        for k in 0..cfg.extra_rules {
            // Locally administered addresses that differ from the rule's in their first byte.
            let mut dmac = cfg.rule.dmac.unwrap_or_default();
            dmac[0] ^= 0x04;
            dmac[4..6].copy_from_slice(&(k as u16).to_be_bytes());
            let fte = devx::create(
                &ctx,
                &SetFte {
                    table_id: self.table_id,
                    flow_index: k,
                    group_id,
                    value: OuterMatch {
                        dmac: Some(dmac),
                        ..cfg.rule
                    },
                    tirn: self.tirn,
                    flow_counter: None,
                },
            )?;
            self.keep(fte);
        }
        let fte = devx::create(
            &ctx,
            &SetFte {
                table_id: self.table_id,
                flow_index: cfg.extra_rules,
                group_id,
                value: cfg.rule,
                tirn: self.tirn,
                flow_counter: (self.flow_counter != 0).then_some(self.flow_counter),
            },
        )?;
        self.keep(fte);
        Ok(())
    }

    /// What the rig's counters hold (`RigConfig::counters`): the RQ's Q counter, the rule's
    /// flow counter.
    ///
    /// # Errors
    /// The queries' errors; [`RigError::Config`] without counters.
    pub fn counters(&self) -> Result<(QCounterStats, TrafficCounter), RigError> {
        self.query_counters(false)
    }

    /// [`EthRig::counters`], zeroing them after reading when `clear`.
    ///
    /// # Errors
    /// As [`EthRig::counters`].
    pub fn query_counters(&self, clear: bool) -> Result<(QCounterStats, TrafficCounter), RigError> {
        let obj = |op| self.objs.iter().find(|o| o.created_by() == op);
        let (Some(q), Some(f)) = (
            obj(Opcode::ALLOC_Q_COUNTER),
            obj(Opcode::ALLOC_FLOW_COUNTER),
        ) else {
            return Err(RigError::Config("the rig has no counters"));
        };
        let q = devx::query(
            q,
            &QueryQCounter {
                counter_set_id: self.q_counter,
                clear,
            },
        )?;
        let f = devx::query(
            f,
            &QueryFlowCounter {
                flow_counter_id: self.flow_counter,
                clear,
            },
        )?;
        Ok((q, f))
    }

    /// The memory key of the rig's buffers.
    pub fn lkey(&self) -> u32 {
        self.lkey
    }

    /// Send WQEs posted but not yet completed.
    pub fn sq_outstanding(&self) -> u16 {
        self.sq_pi.wrapping_sub(self.sq_acked)
    }

    /// Writes one SEND WQE for `frame` (not yet rung: see [`EthRig::ring_sq`]).
    ///
    /// # Errors
    /// [`RigError::FrameSize`], [`RigError::SqFull`].
    pub fn post_send(&mut self, frame: &[u8]) -> Result<(), RigError> {
        if frame.len() < INLINE || frame.len() > self.cfg.buf_size {
            return Err(RigError::FrameSize(frame.len()));
        }
        let size = 1u16 << self.cfg.log_sq;
        if self.sq_outstanding() >= size {
            return Err(RigError::SqFull);
        }
        let idx = self.sq_pi;
        let slot = (idx & (size - 1)) as usize;
        let buf = self.off.tx_bufs + slot * self.cfg.buf_size;
        self.mem.put(buf, frame);
        let mut w = [0u8; WQEBB];
        // Control segment: SEND, 4 segments, a CQE every `signal_every` WQEs.
        let every = self.cfg.signal_every;
        // (A mask where it can: a 16-bit division per frame showed in the loopback's profile.)
        let nth = if every.is_power_of_two() {
            idx & (every - 1)
        } else {
            idx % every
        };
        let signal = nth == every - 1;
        let ctrl = CtrlSegRepr {
            opcode: wqe_opcode::SEND,
            opmod: 0,
            wqe_index: idx,
            qpn: self.sqn,
            ds: 4,
            fm_ce_se: if signal { CTRL_CQ_UPDATE } else { 0 },
            imm: 0,
        };
        w[..SEG].copy_from_slice(&ctrl.to_bytes());
        // Ethernet segment with the 18-byte L2 header inline, spilling into the next segment.
        w[SEG..2 * SEG].copy_from_slice(&eth_seg(&frame[..INLINE]));
        let in_eth = SEG - ETH_INLINE_START;
        w[2 * SEG..2 * SEG + INLINE - in_eth].copy_from_slice(&frame[in_eth..INLINE]);
        // Data segment for the rest of the frame.
        let rest = (frame.len() - INLINE) as u32;
        let addr = self.mem.va(buf + INLINE);
        w[3 * SEG..4 * SEG].copy_from_slice(&data_seg(rest, self.lkey, addr));
        self.mem.put(self.off.sq + slot * 64, &w);
        self.last_ctrl.copy_from_slice(&w[..8]);
        self.sq_pi = self.sq_pi.wrapping_add(1);
        self.pending_doorbell = true;
        Ok(())
    }

    /// Writes a hand-built 64-byte WQE as the next one, with this rig's SQ number and the
    /// WQE index filled into its control segment (for tests that need malformed WQEs).
    ///
    /// # Errors
    /// [`RigError::SqFull`].
    pub fn post_raw_wqe(&mut self, mut w: [u8; 64]) -> Result<(), RigError> {
        let size = 1u16 << self.cfg.log_sq;
        if self.sq_outstanding() >= size {
            return Err(RigError::SqFull);
        }
        let idx = self.sq_pi;
        let mut ctrl = CtrlSegRepr::parse(&CtrlSeg::new_unchecked(&w[..SEG]));
        (ctrl.wqe_index, ctrl.qpn) = (idx, self.sqn);
        ctrl.emit(&mut CtrlSeg::new_unchecked(&mut w[..SEG]));
        let slot = (idx & (size - 1)) as usize;
        self.mem.put(self.off.sq + slot * 64, &w);
        self.last_ctrl.copy_from_slice(&w[..8]);
        self.sq_pi = self.sq_pi.wrapping_add(1);
        self.pending_doorbell = true;
        Ok(())
    }

    /// Rings the SQ doorbell: doorbell record, barrier, then the UAR register (docs/sources.md §6).
    pub fn ring_sq(&mut self) {
        if !self.pending_doorbell {
            return;
        }
        self.pending_doorbell = false;
        self.mem
            .put_be32(self.off.dbr + DBR_SQ + 4, u32::from(self.sq_pi));
        barrier::dma_wmb();
        self.uar_write(0x800, self.last_ctrl);
    }

    /// Writes the SQ's doorbell record only, without the UAR doorbell (the WQEs wait for one,
    /// as on hardware; counted in `dbr_without_doorbell`).
    pub fn update_sq_record(&mut self) {
        self.mem
            .put_be32(self.off.dbr + DBR_SQ + 4, u32::from(self.sq_pi));
    }

    fn uar_write(&self, off: usize, bytes: [u8; 8]) {
        let Some(uar) = self.uar.as_ref().and_then(|u| u.uar.as_ref()) else {
            return;
        };
        assert!(off + 8 <= uar.len);
        // SAFETY: `uar` is mapped for `uar.len` bytes until it is freed in Drop; the register
        // is 8-byte aligned and written with one 64-bit store, as doorbells must be.
        unsafe {
            std::ptr::write_volatile(
                uar.base.as_ptr().add(off).cast::<u64>(),
                u64::from_ne_bytes(bytes),
            )
        }
    }

    /// Posts receive buffers until the RQ is full. Returns how many were posted.
    pub fn fill_rq(&mut self) -> usize {
        let size = 1u16 << self.cfg.log_rq;
        let mut n = 0;
        let bufs = self.mem.va(self.off.rx_bufs);
        let len = match self.cfg.rx_post_len {
            0 => self.cfg.buf_size,
            n => n.min(self.cfg.buf_size),
        };
        // The RQ consumer is the RX CQ's progress; buffers in flight are rq_pi - completed.
        while self.rq_pi.wrapping_sub(self.cq_rx_ci as u16) < size {
            let slot = (self.rq_pi & (size - 1)) as usize;
            let addr = bufs + (slot * self.cfg.buf_size) as u64;
            let seg = data_seg(len as u32, self.lkey, addr);
            self.mem.put(self.off.rq + slot * SEG, &seg);
            self.rq_pi = self.rq_pi.wrapping_add(1);
            n += 1;
        }
        if n > 0 {
            barrier::dma_wmb();
            self.mem
                .put_be32(self.off.dbr + DBR_RQ, u32::from(self.rq_pi));
        }
        n
    }

    /// The consumer counter's bits the rig writes (`RigConfig::cq_ci_bits`).
    fn ci_mask(&self) -> u32 {
        (1u32 << self.cfg.cq_ci_bits.clamp(1, 24)) - 1
    }

    fn poll_cq(&mut self, ring: usize, dbr: usize, rx: bool) -> Option<Completion> {
        if rx {
            if let Some(c) = self.rx_session.pop_front() {
                return Some(c);
            }
        }
        let ci = if rx { self.cq_rx_ci } else { self.cq_tx_ci };
        let mask = (1u32 << self.cfg.log_cq) - 1;
        let at = ring + ((ci & mask) as usize) * CQE_SIZE;
        let op_own = self.mem.get_u8(at + cqe::at::OP_OWN);
        let owner = (ci >> self.cfg.log_cq) & 1;
        if op_own >> 4 == cqe::opcode::INVALID || u32::from(op_own & 1) != owner {
            return None;
        }
        barrier::dma_rmb();
        let mut c = [0u8; CQE_SIZE];
        if session::format(op_own) == session::FORMAT_COMPRESSED {
            self.mem.get(at, &mut c);
            return Some(self.expand_session(ring, dbr, ci, &c));
        }
        // What a completion reports lies in the CQE's last 24 bytes: only they are read.
        const TAIL: usize = 40;
        const _: () = assert!(
            cqe::at::BYTE_CNT >= TAIL
                && cqe::at::VENDOR_ERR_SYND >= TAIL
                && cqe::at::SYNDROME >= TAIL
        );
        self.mem.get(at + TAIL, &mut c[TAIL..]);
        let c = Cqe64::new_unchecked(c);
        let done = Completion {
            opcode: op_own >> 4,
            byte_cnt: c.byte_cnt(),
            wqe_counter: c.wqe_counter(),
            syndrome: c.syndrome(),
            qpn: c.qpn(),
        };
        let ci = ci.wrapping_add(1);
        if rx {
            self.cq_rx_ci = ci;
        } else {
            self.cq_tx_ci = ci;
        }
        Some(done)
    }

    /// Tells the device how far a CQ was consumed (its doorbell record), once a poll, as a
    /// driver does after a burst.
    fn update_cq_record(&self, rx: bool) {
        let (ci, dbr) = if rx {
            (self.cq_rx_ci, DBR_CQ_RX)
        } else {
            (self.cq_tx_ci, DBR_CQ_TX)
        };
        self.mem.put_be32(self.off.dbr + dbr, ci & self.ci_mask());
    }

    /// Expands the compression session whose title `title` is at `ci`
    /// (`mlx5_dpa::mlx5::wire::cqe::session`): queues its completions, marks its slots
    /// invalid, moves the consumer index past it; returns the first completion.
    fn expand_session(&mut self, ring: usize, dbr: usize, ci: u32, title: &[u8; 64]) -> Completion {
        let size = 1usize << self.cfg.log_cq;
        let first = (ci as usize) & (size - 1);
        let t = Cqe64::new_unchecked(&title[..]);
        let n = t.byte_cnt() as usize;
        assert!(
            n >= 2 && first + n <= size,
            "a session of {n} CQEs at slot {first} of {size}: too short or crossing the end"
        );
        self.sessions += 1;
        let mut array = [0u8; CQE_SIZE];
        for i in 0..n {
            let j = i / session::MINIS_PER_ARRAY;
            if i % session::MINIS_PER_ARRAY == 0 {
                let at = ring + (first + session::array_slot(j)) * CQE_SIZE;
                self.mem.get(at, &mut array);
            }
            let m = session::MiniCqe::read(&array, i);
            self.rx_session.push_back(Completion {
                opcode: title[cqe::at::OP_OWN] >> 4,
                byte_cnt: m.byte_cnt,
                wqe_counter: t.wqe_counter().wrapping_add(i as u16),
                syndrome: 0,
                qpn: t.qpn(),
            });
        }
        for i in 0..n {
            let at = ring + (first + i) * CQE_SIZE + cqe::at::OP_OWN;
            self.mem.put(at, &[cqe::opcode::INVALID << 4]);
        }
        let ci = ci.wrapping_add(n as u32);
        self.cq_rx_ci = ci;
        self.mem.put_be32(self.off.dbr + dbr, ci & self.ci_mask());
        self.rx_session
            .pop_front()
            .expect("a session of two or more")
    }

    /// Reaps up to `max` send completions into `out` (which is not cleared); returns how
    /// many. Does not allocate once `out` has capacity.
    pub fn poll_tx_into(&mut self, max: usize, out: &mut Vec<Completion>) -> usize {
        let mut n = 0;
        while n < max {
            let Some(c) = self.poll_cq(self.off.cq_tx, DBR_CQ_TX, false) else {
                break;
            };
            if c.opcode == 0x0 {
                self.sq_acked = c.wqe_counter.wrapping_add(1);
            }
            out.push(c);
            n += 1;
        }
        if n > 0 {
            self.update_cq_record(false);
        }
        n
    }

    /// Reaps send completions; returns them (at most `max`). Allocates the returned vector:
    /// loops use [`EthRig::poll_tx_into`].
    pub fn poll_tx(&mut self, max: usize) -> Vec<Completion> {
        let mut v = Vec::new();
        self.poll_tx_into(max, &mut v);
        v
    }

    /// Reaps up to `max` receive completions, handing each frame (or the error completion)
    /// to `f`, then reposts the buffers. Returns how many completions were reaped.
    pub fn poll_rx(&mut self, max: usize, mut f: impl FnMut(Result<&[u8], Completion>)) -> usize {
        let mut n = 0;
        let mut buf = std::mem::take(&mut self.rx_scratch);
        while n < max {
            let Some(c) = self.poll_cq(self.off.cq_rx, DBR_CQ_RX, true) else {
                break;
            };
            n += 1;
            if c.opcode == 0x2 {
                let slot = (c.wqe_counter & ((1u16 << self.cfg.log_rq) - 1)) as usize;
                let len = (c.byte_cnt as usize).min(self.cfg.buf_size);
                self.mem
                    .get(self.off.rx_bufs + slot * self.cfg.buf_size, &mut buf[..len]);
                f(Ok(&buf[..len]));
            } else {
                f(Err(c));
            }
        }
        self.rx_scratch = buf;
        if n > 0 {
            self.update_cq_record(true);
            self.fill_rq();
        }
        n
    }

    /// Arms the receive CQ for one completion event (doorbell record, then UAR + 0x20).
    pub fn arm_rx(&mut self) {
        let word = (self.arm_sn & 3) << 28 | (self.cq_rx_ci & 0xff_ffff);
        self.arm_sn = self.arm_sn.wrapping_add(1);
        self.mem.put_be32(self.off.dbr + DBR_CQ_RX + 4, word);
        barrier::dma_wmb();
        let mut b = [0u8; 8];
        b[0..4].copy_from_slice(&word.to_be_bytes());
        b[4..8].copy_from_slice(&self.cqn_rx.to_be_bytes());
        self.uar_write(0x20, b);
    }

    /// The RX CQ object (to modify its moderation, for instance).
    pub fn rx_cq(&self) -> &DevxObj {
        &self.objs[4]
    }

    /// The DevX handle of the RX CQ (to subscribe to its events).
    pub fn rx_cq_handle(&self) -> mlx5_dpa::devx::ObjHandle {
        // Creation order: PD, TD, MKEY, CQ tx, CQ rx, ...
        self.objs[4].handle()
    }
}

impl Drop for EthRig {
    fn drop(&mut self) {
        while let Some(o) = self.objs.pop() {
            if let Err(e) = o.destroy() {
                tracing::warn!(target: "mlx5_sim::testing::rig", "destroy failed: {e}");
            }
        }
        // Deregisters (or, when refused, hands the memory to the context to keep).
        self.umem = None;
        // Freed with the last rig ringing through it.
        self.uar = None;
    }
}
