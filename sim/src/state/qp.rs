//! A QP's context as the state transitions leave it (PRM `qpc` / `ads`, typed): shared by
//! firmware's QP table and the RC transport's per-QP state. The QP states and service types
//! are the driver's (`mlx5_dpa::mlx5::enums`).

/// The QP context fields the state transitions set, typed (PRM `qpc` / `ads`). Each
/// transition takes only its own fields (`fw::queues`); the stored `qpc` mirrors them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct QpCtx {
    // RST2INIT (and INIT2INIT).
    pub(crate) rre: bool,
    pub(crate) rwe: bool,
    pub(crate) rae: bool,
    pub(crate) pm_state: u8,
    pub(crate) port: u8,
    pub(crate) pkey_index: u16,
    /// A UD QP's Q_Key.
    pub(crate) q_key: u32,
    // INIT2RTR.
    /// Path MTU, PRM encoding (1 = 256 bytes .. 5 = 4096 bytes).
    pub(crate) mtu: u8,
    pub(crate) log_msg_max: u8,
    pub(crate) remote_qpn: u32,
    pub(crate) next_rcv_psn: u32,
    pub(crate) log_rra_max: u8,
    pub(crate) min_rnr_nak: u8,
    /// Force loopback: the peer QP is on this device.
    pub(crate) fl: bool,
    pub(crate) rmac: [u8; 6],
    pub(crate) rgid: [u8; 16],
    pub(crate) src_addr_index: u8,
    pub(crate) hop_limit: u8,
    pub(crate) udp_sport: u16,
    // RTR2RTS (and RTS2RTS).
    pub(crate) next_send_psn: u32,
    pub(crate) log_sra_max: u8,
    pub(crate) retry_count: u8,
    pub(crate) rnr_retry: u8,
    pub(crate) ack_timeout: u8,
}
