//! Queue pairs: create, the state transitions, query, destroy.

use super::*;

// ---------------------------------------------------------------------------------------------
// Queue pairs.

pub use crate::mlx5::enums::{QpServiceType, QpState};

/// `qpc.rq_type` for a QP receiving from a shared receive queue (PRM; the kernel's
/// `MLX5_SRQ_RQ`); `qpc.srqn_rmpn_xrqn` names it.
pub const QPC_RQ_TYPE_SRQ: u64 = 0x1;
/// `qpc.rq_type` for a QP without receive queue (PRM / rdma-core `MLX5_ZERO_LEN_RQ`).
pub const QPC_RQ_TYPE_ZERO_LEN_RQ: u64 = 0x3;
/// `qpc.pm_state` migrated (PRM `MLX5_QPC_PM_STATE_MIGRATED`).
pub const QPC_PM_STATE_MIGRATED: u64 = 0x3;

/// CREATE_QP (RC) with user-owned rings: one UMEM holds the RQ then the SQ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CreateQp {
    pub pd: Pdn,
    pub uar_page: u32,
    pub cqn_snd: Cqn,
    pub cqn_rcv: Cqn,
    pub log_sq_size: u8,
    /// log2 of RQ entries; `None` for a QP without receive queue.
    pub log_rq_size: Option<u8>,
    /// RQ stride: 16 << `log_rq_stride` bytes.
    pub log_rq_stride: u8,
    /// Receive from this shared receive queue (an RMP, `rq_type` SRQ) instead of an RQ of
    /// the QP's own; `log_rq_size` is then ignored and the ring holds the send queue only.
    pub srqn: Option<u32>,
    pub mem: RingMem,
    /// `qpc.user_index`: what the QP's CQEs carry in `srqn_uidx` (CQE version 1), for software
    /// that finds its QP by an index of its own (libmlx5's `uidx`).
    pub user_index: u32,
}

command! {
    CreateQp: CREATE_QP, create_qp_in -> create_qp_out => Qpn;
    fn encode(&self, v: &mut ViewMut<'_, Self::In>) -> Result<(), CmdError> {
        let op = Self::OPCODE;
        let q = create_qp_in::qpc;
        v.set_value(q.at(qpc::st), QpServiceType::Rc);
        v.set(q.at(qpc::pm_state), QPC_PM_STATE_MIGRATED);
        put(v, op, q.at(qpc::pd), u64::from(self.pd), "pd")?;
        put(
            v,
            op,
            q.at(qpc::uar_page),
            u64::from(self.uar_page),
            "uar_page",
        )?;
        put(
            v,
            op,
            q.at(qpc::cqn_snd),
            u64::from(self.cqn_snd),
            "cqn_snd",
        )?;
        put(
            v,
            op,
            q.at(qpc::cqn_rcv),
            u64::from(self.cqn_rcv),
            "cqn_rcv",
        )?;
        put(
            v,
            op,
            q.at(qpc::log_sq_size),
            u64::from(self.log_sq_size),
            "log_sq_size",
        )?;
        // Without a receive queue: `rq_type` zero-length RQ (PRM `MLX5_ZERO_LEN_RQ`), so the
        // send ring starts at the ring's beginning, where the driver puts it.
        if let Some(srqn) = self.srqn {
            v.set(q.at(qpc::rq_type), QPC_RQ_TYPE_SRQ);
            put(v, op, q.at(qpc::srqn_rmpn_xrqn), u64::from(srqn), "srqn")?;
        } else if self.log_rq_size.is_none() {
            v.set(q.at(qpc::rq_type), QPC_RQ_TYPE_ZERO_LEN_RQ);
        }
        if let (None, Some(n)) = (self.srqn, self.log_rq_size) {
            put(v, op, q.at(qpc::log_rq_size), u64::from(n), "log_rq_size")?;
            put(
                v,
                op,
                q.at(qpc::log_rq_stride),
                u64::from(self.log_rq_stride),
                "log_rq_stride",
            )?;
        }
        v.set(q.at(qpc::dbr_umem_valid), 1);
        v.set(q.at(qpc::dbr_umem_id), u64::from(self.mem.dbr_umem_id));
        v.set(q.at(qpc::dbr_addr), self.mem.dbr_offset);
        v.set(create_qp_in::wq_umem_valid, 1);
        v.set(create_qp_in::wq_umem_id, u64::from(self.mem.umem_id));
        v.set(create_qp_in::wq_umem_offset, self.mem.umem_offset);
        put(
            v,
            op,
            q.at(qpc::user_index),
            u64::from(self.user_index),
            "user_index",
        )?;
        Ok(())
    }
    fn decode(&self, v: View<'_, Self::Out>) -> Result<Qpn, CmdError> {
        Ok(Qpn(v.value(create_qp_out::qpn)))
    }
}

/// Address and transport attributes applied by the QP state transitions. Zero fields are left
/// at zero; each transition writes the ones the PRM reads for it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QpAttr {
    /// RST2INIT: remote access rights.
    pub rre: bool,
    pub rwe: bool,
    pub rae: bool,
    /// RST2INIT: physical port (1-based).
    pub vhca_port_num: u8,
    /// RST2INIT: the Q_Key of a UD QP (`qpc.q_key`; datagrams whose DETH carries another are
    /// dropped).
    pub q_key: u32,
    /// INIT2RTR: path MTU (PRM encoding: 1 = 256 B .. 5 = 4096 B).
    pub mtu: u8,
    pub remote_qpn: u32,
    pub next_rcv_psn: u32,
    pub log_rra_max: u8,
    pub min_rnr_nak: u8,
    /// Force loopback (`ads.fl`): the peer is on the same device.
    pub fl: bool,
    pub rmac: [u8; 6],
    pub rgid: [u8; 16],
    pub src_addr_index: u8,
    pub hop_limit: u8,
    /// RTR2RTS.
    pub next_send_psn: u32,
    pub log_sra_max: u8,
    pub retry_count: u8,
    pub rnr_retry: u8,
    pub ack_timeout: u8,
    /// RTS2RTS: the attributes it changes, as [`opt_param`] bits (`opt_param_mask`); 0 means
    /// the RTR2RTS set ([`opt_param::RTS2RTS_DEFAULT`]).
    pub opt_param_mask: u32,
}

/// `opt_param_mask` bits of the QP transitions: which optional attributes a transition applies
/// (Linux `include/linux/mlx5/qp.h` `enum mlx5_qp_optpar`, as `mlx5_ib`'s
/// `ib_mask_to_mlx5_opt` maps verbs attributes to them).
pub mod opt_param {
    pub const ALT_ADDR_PATH: u32 = 1 << 0;
    pub const RRE: u32 = 1 << 1;
    pub const RAE: u32 = 1 << 2;
    pub const RWE: u32 = 1 << 3;
    pub const PKEY_INDEX: u32 = 1 << 4;
    pub const Q_KEY: u32 = 1 << 5;
    pub const RNR_TIMEOUT: u32 = 1 << 6;
    pub const PRIMARY_ADDR_PATH: u32 = 1 << 7;
    pub const SRA_MAX: u32 = 1 << 8;
    pub const RRA_MAX: u32 = 1 << 9;
    pub const PM_STATE: u32 = 1 << 10;
    pub const RETRY_COUNT: u32 = 1 << 12;
    pub const RNR_RETRY: u32 = 1 << 13;
    pub const ACK_TIMEOUT: u32 = 1 << 14;
    pub const PRI_PORT: u32 = 1 << 16;
    /// What [`super::Rts2Rts`] changes when [`super::QpAttr::opt_param_mask`] is 0.
    pub const RTS2RTS_DEFAULT: u32 = SRA_MAX | RETRY_COUNT | RNR_RETRY | ACK_TIMEOUT;
    /// `opt_param_mask_95_32` of RTS2RTS: the UDP source port (rdma-core `mlx5_ifc.h`
    /// `MLX5_QPC_OPT_MASK_32_UDP_SPORT`).
    pub const OPT_MASK_32_UDP_SPORT: u64 = 1 << 2;
}

/// One QP state transition command (`rst2init_qp_in`, ... share the same fields).
pub trait QpTransition {
    const OPCODE: Opcode;
    type In: Layout;
    fn qpn() -> crate::mlx5::Field<Self::In>;
    fn qpc() -> Option<crate::mlx5::layout::Nested<Self::In, qpc::Layout>>;
    /// The `opt_param_mask` field, for transitions that carry one.
    fn opt_param_mask() -> Option<crate::mlx5::Field<Self::In>>;
}

macro_rules! qp_transition {
    ($(#[$m:meta])* $ty:ident, $op:ident, $lay:ident, $ctx:expr, $mask:expr) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub struct $ty;
        impl QpTransition for $ty {
            const OPCODE: Opcode = Opcode::$op;
            type In = $lay::Layout;
            fn qpn() -> crate::mlx5::Field<Self::In> {
                $lay::qpn.untyped()
            }
            fn qpc() -> Option<crate::mlx5::layout::Nested<Self::In, qpc::Layout>> {
                $ctx
            }
            fn opt_param_mask() -> Option<crate::mlx5::Field<Self::In>> {
                let mask: Option<crate::mlx5::Field<Self::In, u32>> = $mask;
                mask.map(crate::mlx5::Field::untyped)
            }
        }
    };
}

qp_transition!(/// RST -> INIT.
    Rst2Init, RST2INIT_QP, rst2init_qp_in, Some(rst2init_qp_in::qpc),
    Some(rst2init_qp_in::opt_param_mask));
qp_transition!(/// INIT -> RTR.
    Init2Rtr, INIT2RTR_QP, init2rtr_qp_in, Some(init2rtr_qp_in::qpc),
    Some(init2rtr_qp_in::opt_param_mask));
qp_transition!(/// RTR -> RTS.
    Rtr2Rts, RTR2RTS_QP, rtr2rts_qp_in, Some(rtr2rts_qp_in::qpc),
    Some(rtr2rts_qp_in::opt_param_mask));
qp_transition!(/// RTS -> RTS (change the attributes `opt_param_mask` names).
    Rts2Rts, RTS2RTS_QP, rts2rts_qp_in, Some(rts2rts_qp_in::qpc),
    Some(rts2rts_qp_in::opt_param_mask));
qp_transition!(/// Any state -> ERR.
    Qp2Err, QP_2ERR, qp_2err_in, None, None);
qp_transition!(/// Any state -> RST.
    Qp2Rst, QP_2RST, qp_2rst_in, None, None);

/// A QP state transition `T` with attributes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModifyQp<T> {
    pub qpn: Qpn,
    pub attr: QpAttr,
    pub transition: T,
}

impl<T: QpTransition> Command for ModifyQp<T> {
    const OPCODE: Opcode = T::OPCODE;
    type In = T::In;
    type Out = mbox_out::Layout;
    type Output = ();
    fn encode(&self, v: &mut ViewMut<'_, Self::In>) -> Result<(), CmdError> {
        let op = Self::OPCODE;
        put(v, op, T::qpn(), u64::from(self.qpn), "qpn")?;
        let Some(q) = T::qpc() else { return Ok(()) };
        let a = &self.attr;
        let p = q.nested(qpc::primary_address_path);
        match op {
            Opcode::RST2INIT_QP => {
                v.set(q.at(qpc::rre), u64::from(a.rre));
                v.set(q.at(qpc::rwe), u64::from(a.rwe));
                v.set(q.at(qpc::rae), u64::from(a.rae));
                v.set(q.at(qpc::pm_state), QPC_PM_STATE_MIGRATED);
                v.set(p.at(ads::vhca_port_num), u64::from(a.vhca_port_num));
                v.set(q.at(qpc::q_key), u64::from(a.q_key));
            }
            Opcode::INIT2RTR_QP => {
                put(v, op, q.at(qpc::mtu), u64::from(a.mtu), "mtu")?;
                v.set(q.at(qpc::log_msg_max), 30);
                put(
                    v,
                    op,
                    q.at(qpc::remote_qpn),
                    u64::from(a.remote_qpn),
                    "remote_qpn",
                )?;
                put(
                    v,
                    op,
                    q.at(qpc::next_rcv_psn),
                    u64::from(a.next_rcv_psn),
                    "next_rcv_psn",
                )?;
                put(
                    v,
                    op,
                    q.at(qpc::log_rra_max),
                    u64::from(a.log_rra_max),
                    "log_rra_max",
                )?;
                put(
                    v,
                    op,
                    q.at(qpc::min_rnr_nak),
                    u64::from(a.min_rnr_nak),
                    "min_rnr_nak",
                )?;
                v.set(p.at(ads::fl), u64::from(a.fl));
                v.set(p.at(ads::vhca_port_num), u64::from(a.vhca_port_num));
                if !a.fl {
                    v.set(
                        p.at(ads::rmac_47_32),
                        u64::from(u16::from_be_bytes([a.rmac[0], a.rmac[1]])),
                    );
                    v.set(
                        p.at(ads::rmac_31_0),
                        u64::from(u32::from_be_bytes([
                            a.rmac[2], a.rmac[3], a.rmac[4], a.rmac[5],
                        ])),
                    );
                    for (i, b) in a.rgid.iter().enumerate() {
                        if let Some(f) = ads::rgid_rip.at(i as u32) {
                            v.set(p.at(f), u64::from(*b));
                        }
                    }
                    v.set(p.at(ads::src_addr_index), u64::from(a.src_addr_index));
                    v.set(p.at(ads::hop_limit), u64::from(a.hop_limit));
                }
            }
            _ => {
                // RTR2RTS and RTS2RTS; RTS2RTS applies what its mask names.
                if op == Opcode::RTS2RTS_QP {
                    let mask = if a.opt_param_mask == 0 {
                        opt_param::RTS2RTS_DEFAULT
                    } else {
                        a.opt_param_mask
                    };
                    if let Some(f) = T::opt_param_mask() {
                        v.set(f, u64::from(mask));
                    }
                    v.set(q.at(qpc::rre), u64::from(a.rre));
                    v.set(q.at(qpc::rwe), u64::from(a.rwe));
                    v.set(q.at(qpc::rae), u64::from(a.rae));
                    put(
                        v,
                        op,
                        q.at(qpc::min_rnr_nak),
                        u64::from(a.min_rnr_nak),
                        "min_rnr_nak",
                    )?;
                }
                put(
                    v,
                    op,
                    q.at(qpc::next_send_psn),
                    u64::from(a.next_send_psn),
                    "next_send_psn",
                )?;
                put(
                    v,
                    op,
                    q.at(qpc::log_sra_max),
                    u64::from(a.log_sra_max),
                    "log_sra_max",
                )?;
                put(
                    v,
                    op,
                    q.at(qpc::retry_count),
                    u64::from(a.retry_count),
                    "retry_count",
                )?;
                put(
                    v,
                    op,
                    q.at(qpc::rnr_retry),
                    u64::from(a.rnr_retry),
                    "rnr_retry",
                )?;
                put(
                    v,
                    op,
                    p.at(ads::ack_timeout),
                    u64::from(a.ack_timeout),
                    "ack_timeout",
                )?;
            }
        }
        // A UD QP's Q_Key may change in the later transitions too (an optional parameter).
        if op != Opcode::RST2INIT_QP && a.opt_param_mask & opt_param::Q_KEY != 0 {
            v.set(q.at(qpc::q_key), u64::from(a.q_key));
            if op != Opcode::RTS2RTS_QP {
                if let Some(f) = T::opt_param_mask() {
                    v.set(f, u64::from(a.opt_param_mask));
                }
            }
        }
        Ok(())
    }
    fn decode(&self, _: View<'_, Self::Out>) -> Result<(), CmdError> {
        Ok(())
    }
}

query_command!(
    /// QUERY_QP: yields the QP context bytes (`qpc`).
    QueryQp(Qpn), QUERY_QP, query_qp_in.qpn, query_qp_out.qpc: qpc
);
