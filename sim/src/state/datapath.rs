//! The datapath's own state: the port (what it is connected to, captures, counters), the
//! event subscriptions, the RC transport's counters and frame queues, and the scratch buffers
//! one engine pass reuses so the datapath does not allocate.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use crate::port::pcap::PcapWriter;
use crate::port::tap::Tap;
use crate::state::events::Subscription;
use crate::state::rc::{RcStats, LOCAL_QUEUE};

/// Largest frame the port carries.
pub(crate) const MAX_FRAME: usize = 10240;
/// Frames waiting on a link before the far end drops them.
pub(crate) const LINK_QUEUE: usize = 8192;

/// One end of a cable between two model devices.
#[derive(Debug, Clone)]
pub struct LinkEnd {
    pub(crate) tx: Arc<Mutex<VecDeque<Vec<u8>>>>,
    pub(crate) rx: Arc<Mutex<VecDeque<Vec<u8>>>>,
}

impl LinkEnd {
    pub(crate) fn pair() -> (LinkEnd, LinkEnd) {
        let a = Arc::new(Mutex::new(VecDeque::new()));
        let b = Arc::new(Mutex::new(VecDeque::new()));
        (
            LinkEnd {
                tx: Arc::clone(&b),
                rx: Arc::clone(&a),
            },
            LinkEnd { tx: a, rx: b },
        )
    }
}

/// What the port is connected to.
#[derive(Debug)]
pub enum PortMode {
    /// Frames sent come straight back in (the default).
    Loopback,
    /// A cable to another model device.
    Link(LinkEnd),
    /// A Linux TAP interface.
    Tap(Tap),
    /// Another process's model, by UDP datagrams ([`crate::port::udp`]).
    Udp(crate::port::udp::UdpPort),
    /// Nothing: frames sent are dropped and counted.
    Down,
}

/// Port counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PortStats {
    /// Frames sent by SQs.
    pub tx_frames: u64,
    /// Bytes sent by SQs.
    pub tx_bytes: u64,
    /// Frames that entered receive steering.
    pub rx_frames: u64,
    /// Bytes of the frames that entered receive steering.
    pub rx_bytes: u64,
    /// Frames delivered into an RQ.
    pub rx_delivered: u64,
    /// Frames dropped by steering (no rule matched, or a drop rule).
    pub rx_steering_drops: u64,
    /// Frames dropped because the RQ had no posted WQE or was not ready.
    pub rx_no_buffer: u64,
    /// Frames dropped because the port was down or a link queue was full.
    pub tx_dropped: u64,
    /// Frames a TIR refused by its self-loopback block.
    pub rx_self_lb_blocked: u64,
    /// Send WQEs completed with an error CQE.
    pub wqe_errors: u64,
    /// Receive completions with an error CQE.
    pub rx_errors: u64,
    /// CQEs lost to a CQ overrun.
    pub cq_overruns: u64,
    /// CQE compression sessions written (each stands for two or more CQEs).
    pub cqe_sessions: u64,
    /// SQs that ran because their doorbell record moved with no UAR doorbell seen.
    pub dbr_without_doorbell: u64,
    /// Completion events raised.
    pub events: u64,
}

pub(crate) struct Port {
    pub(crate) mode: PortMode,
    pub(crate) captures: Vec<PcapWriter<Box<dyn std::io::Write + Send>>>,
    pub(crate) stats: PortStats,
}

/// Most decisions a [`FlowCache`] holds; a full cache is emptied (frames of more flows
/// than this are steered by the walk again, one cache fill each).
pub(crate) const FLOW_CACHE_MAX: usize = 4096;

/// What steering decided for one header image, and what deciding changed on the way (the
/// walk's side effects, done again on every frame the decision is reused for).
#[derive(Debug, Default)]
pub(crate) struct FlowDecision {
    /// The TIR and flow tag, or `None`: dropped.
    pub(crate) tir: Option<(u32, u32)>,
    /// Flow counters of the entries hit (each counts the frame).
    pub(crate) counters: Vec<u32>,
}

/// Steering decisions by the frame's `fte_match_set_lyr_2_4` image (as eight words): a frame
/// of a flow seen before skips the walk over the root tables. Valid for one steering
/// generation (`Firmware::steering_gen`, raised by every command that changes a table, group,
/// entry or the root; the roots are computed again only then); emptied when it moved.
#[derive(Debug, Default)]
pub(crate) struct FlowCache {
    pub(crate) generation: u64,
    pub(crate) map: rustc_hash::FxHashMap<[u64; 8], FlowDecision>,
    /// Tests compare the cache with the walk: set, every frame is walked.
    #[cfg(test)]
    pub(crate) off: bool,
}

pub(crate) struct Datapath {
    pub(crate) port: Port,
    pub(crate) subs: Vec<Subscription>,
    pub(crate) ids: Vec<u32>,
    /// Ethernet SQs the next pass visits: rung (a UAR or DPA doorbell) or with work left.
    /// A pass with none visits every SQ (to count records moved without a doorbell), so a
    /// busy pass costs what its active queues cost, not the number of queues.
    pub(crate) active_sqs: Vec<u32>,
    /// CQs holding receive CQEs for a compression session, written at the end of the pass.
    pub(crate) held_cqs: Vec<u32>,
    /// UAR pages that rang a send doorbell / a CQ arm this pass (`datapath::step`).
    pub(crate) send_pages: Vec<u32>,
    pub(crate) arm_pages: Vec<u32>,
    /// The steering roots, in walk order (`datapath::steering::compute_roots`), and the
    /// steering generation they were computed at: every change of the tables raises it.
    pub(crate) roots: Vec<u32>,
    pub(crate) roots_gen: Option<u64>,
    /// Steering decisions by header image (`datapath::steering`).
    pub(crate) flow_cache: FlowCache,
    pub(crate) frame: Vec<u8>,
    /// Scratch of one pass (kept to avoid allocating on the datapath).
    pub(crate) doorbells: Vec<Doorbell>,
    pub(crate) incoming: VecDeque<Vec<u8>>,
    pub(crate) rx_buf: Vec<u8>,
    /// RC transport (`crate::rc`): its frame scratch, QP list scratch, frames delivered
    /// inside the device and their recycled buffers, counters.
    pub(crate) rc_frame: Vec<u8>,
    pub(crate) qp_ids: Vec<u32>,
    pub(crate) rc_local: VecDeque<Vec<u8>>,
    pub(crate) rc_pool: Vec<Vec<u8>>,
    pub(crate) rc_stats: RcStats,
}

impl Datapath {
    pub(crate) fn new() -> Self {
        Datapath {
            port: Port {
                mode: PortMode::Loopback,
                captures: Vec::new(),
                stats: PortStats::default(),
            },
            subs: Vec::new(),
            ids: Vec::new(),
            active_sqs: Vec::new(),
            held_cqs: Vec::new(),
            send_pages: Vec::new(),
            arm_pages: Vec::new(),
            roots: Vec::new(),
            roots_gen: None,
            flow_cache: FlowCache::default(),
            frame: Vec::with_capacity(MAX_FRAME),
            doorbells: Vec::new(),
            incoming: VecDeque::new(),
            rx_buf: Vec::new(),
            rc_frame: Vec::with_capacity(MAX_FRAME),
            qp_ids: Vec::new(),
            rc_local: VecDeque::new(),
            rc_pool: Vec::new(),
            rc_stats: RcStats::default(),
        }
    }
}

impl Datapath {
    /// Queues a frame for delivery inside the device, for the RC transport (force loopback,
    /// or RoCE v2 frames the port loops back); processed by `datapath::rc::drain_local`. A
    /// full queue drops the frame and counts it.
    pub(crate) fn enqueue_local(&mut self, frame: &[u8]) {
        if self.rc_local.len() >= LOCAL_QUEUE {
            self.rc_stats.local_dropped += 1;
            return;
        }
        let mut buf = self.rc_pool.pop().unwrap_or_default();
        buf.clear();
        buf.extend_from_slice(frame);
        self.rc_local.push_back(buf);
    }
}

/// A UAR register write the engine took in this pass: the page and the 8 bytes written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Doorbell {
    /// The CQ doorbell (`MLX5_CQ_DOORBELL`): arm a CQ.
    CqArm { page: u32, word: [u8; 8] },
    /// A send doorbell (`MLX5_BF_OFFSET` and its alternates): an SQ or QP has WQEs.
    Send { page: u32, word: [u8; 8] },
}
