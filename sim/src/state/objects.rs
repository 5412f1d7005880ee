//! The objects firmware keeps, with the runtime state the datapath needs.

use crate::mem::Dma;
pub(crate) use crate::state::qp::QpCtx;
pub(crate) use mlx5_dpa::mlx5::enums::{QpServiceType, QpState, UnknownValue, WqState, WqType};

/// Names one firmware object: what a DevX handle stands for, and what the kernel's destroy
/// command names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ObjRef {
    /// Protection domain.
    Pd(u32),
    /// Transport domain.
    Td(u32),
    /// Memory key, by mkey index.
    Mkey(u32),
    /// Completion queue.
    Cq(u32),
    /// Send queue.
    Sq(u32),
    /// Receive queue.
    Rq(u32),
    /// Receive memory pool.
    Rmp(u32),
    /// Transport interface send.
    Tis(u32),
    /// Transport interface receive.
    Tir(u32),
    /// RQ table.
    Rqt(u32),
    /// Q counter, by `counter_set_id`.
    QCounter(u32),
    /// Flow counter, by `flow_counter_id`.
    FlowCounter(u32),
    /// Flow table.
    FlowTable {
        /// `table_type`.
        table_type: u8,
        /// `table_id`.
        id: u32,
    },
    /// Flow group of a table.
    FlowGroup {
        /// `table_type`.
        table_type: u8,
        /// `table_id`.
        table: u32,
        /// `group_id`.
        id: u32,
    },
    /// Flow table entry.
    Fte {
        /// `table_type`.
        table_type: u8,
        /// `table_id`.
        table: u32,
        /// `flow_index`.
        index: u32,
    },
    /// Queue pair.
    Qp(u32),
    /// General object (`obj_type`, `obj_id`).
    General {
        /// `obj_type`.
        obj_type: u16,
        /// `obj_id`.
        id: u32,
    },
}

impl ObjRef {
    /// A short kind name, for the inventory.
    pub fn kind(&self) -> &'static str {
        match self {
            ObjRef::Pd(_) => "PD",
            ObjRef::Td(_) => "TD",
            ObjRef::Mkey(_) => "MKEY",
            ObjRef::Cq(_) => "CQ",
            ObjRef::Sq(_) => "SQ",
            ObjRef::Rq(_) => "RQ",
            ObjRef::Rmp(_) => "RMP",
            ObjRef::Tis(_) => "TIS",
            ObjRef::Tir(_) => "TIR",
            ObjRef::Rqt(_) => "RQT",
            ObjRef::QCounter(_) => "Q_COUNTER",
            ObjRef::FlowCounter(_) => "FLOW_COUNTER",
            ObjRef::FlowTable { .. } => "FLOW_TABLE",
            ObjRef::FlowGroup { .. } => "FLOW_GROUP",
            ObjRef::Fte { .. } => "FTE",
            ObjRef::Qp(_) => "QP",
            ObjRef::General { .. } => "GENERAL_OBJECT",
        }
    }
}

/// Owner and reference count, common to every object.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Meta {
    pub(crate) uid: u16,
    pub(crate) refs: u32,
}

impl Meta {
    pub(crate) fn new(uid: u16) -> Self {
        Meta { uid, refs: 0 }
    }
}

#[derive(Debug)]
pub(crate) struct Pd {
    pub(crate) meta: Meta,
}

#[derive(Debug)]
pub(crate) struct Td {
    pub(crate) meta: Meta,
}

#[derive(Debug)]
pub(crate) struct Mkey {
    pub(crate) meta: Meta,
    pub(crate) key: u32,
    pub(crate) pd: u32,
    pub(crate) umem: u32,
    pub(crate) start: u64,
    pub(crate) len: u64,
    /// The whole translated range.
    pub(crate) dma: Dma,
    /// Access rights (`mkc.lr`, `lw`, `rr`, `rw`, `a`): gathers need `lr`, scatters `lw`, the
    /// RC responder `rr`, `rw` or `a`.
    pub(crate) lr: bool,
    pub(crate) lw: bool,
    pub(crate) rr: bool,
    pub(crate) rw: bool,
    pub(crate) a: bool,
}

/// Where a CQ reports its events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CqTarget {
    Eq(u32),
    DpaThread(u32),
    DpaEq(u32),
}

/// CQ error state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CqStatus {
    Ok,
    Overflow,
}

#[derive(Debug)]
pub(crate) struct Cq {
    pub(crate) meta: Meta,
    pub(crate) log_size: u8,
    pub(crate) cqe_bytes: usize,
    pub(crate) ring: Dma,
    pub(crate) ring_umem: u32,
    pub(crate) dbr: Dma,
    pub(crate) dbr_umem: u32,
    pub(crate) uar_page: u32,
    pub(crate) target: CqTarget,
    pub(crate) oi: bool,
    /// Collapsed (`cqc.cc`): every CQE goes to entry 0; never overruns.
    pub(crate) cc: bool,
    pub(crate) period: u16,
    pub(crate) max_count: u16,
    pub(crate) status: CqStatus,
    /// Producer counter (CQEs written).
    pub(crate) pi: u32,
    /// The consumer counter its doorbell record held when last read. The driver only moves
    /// it forward, so while it leaves room for the next CQE the record need not be read
    /// again (see `datapath::cq::write_one`).
    pub(crate) ci_seen: u32,
    /// Armed: the consumer index the arm named (events fire for CQEs past it).
    pub(crate) armed: Option<u32>,
    /// The last arm word acted on (sequence number, command and consumer index, as the
    /// doorbell record's second word holds it).
    pub(crate) arm_seen: u32,
    /// CQEs since arming, for moderation.
    pub(crate) pending_since_arm: u32,
    pub(crate) first_pending: Option<std::time::Instant>,
    pub(crate) raw: Box<[u8]>,
    pub(crate) events: u64,
    /// CQE compression (`cqc.cqe_comp_en`), when on.
    pub(crate) comp: Option<CqeCompression>,
}

/// A CQ's CQE compression: receive CQEs held during an engine pass, to be written as one
/// compression session when they are alike (`datapath::cq`).
#[derive(Debug, Default)]
pub(crate) struct CqeCompression {
    /// CQEs held, oldest first; at most `max`.
    pub(crate) held: Vec<[u8; 64]>,
    /// Most CQEs in a session (`cmd_hca_cap.cqe_compression_max_num`).
    pub(crate) max: usize,
}

/// The ring of a work queue.
#[derive(Debug, Clone, Copy)]
pub(crate) struct WqRing {
    pub(crate) ring: Dma,
    pub(crate) ring_umem: u32,
    pub(crate) dbr: Dma,
    pub(crate) dbr_umem: u32,
    pub(crate) log_stride: u8,
    pub(crate) log_size: u8,
    pub(crate) pd: u32,
    /// The UAR its doorbells are rung through: a send queue's. A receive queue has none: it
    /// is rung through its doorbell record alone, and its `uar_page` is not read.
    pub(crate) uar_page: Option<u32>,
    /// Linked-list WQEs (`wq_type` 0): each begins with a next segment naming its successor.
    pub(crate) linked: bool,
}

#[derive(Debug)]
pub(crate) struct Sq {
    pub(crate) meta: Meta,
    pub(crate) state: WqState,
    pub(crate) cqn: u32,
    pub(crate) tis: u32,
    pub(crate) wq: WqRing,
    /// WQEBBs consumed (16-bit wrapping counter, like the producer's).
    pub(crate) ci: u16,
    pub(crate) doorbelled: bool,
    /// The producer counter the last doorbell announced (WQEs past it wait for one).
    pub(crate) rung_pi: u16,
    /// The doorbell record's counter as last read (a move without a doorbell is counted once).
    pub(crate) seen_pi: u16,
    pub(crate) raw: Box<[u8]>,
}

#[derive(Debug)]
pub(crate) struct Rq {
    pub(crate) meta: Meta,
    pub(crate) state: WqState,
    pub(crate) cqn: u32,
    pub(crate) wq: WqRing,
    /// WQEs consumed (16-bit wrapping).
    pub(crate) ci: u16,
    /// The producer counter its doorbell record held when last read: while it is ahead of
    /// `ci`, a WQE is known posted without reading the record again (the driver only moves
    /// it forward).
    pub(crate) posted: u16,
    pub(crate) raw: Box<[u8]>,
    pub(crate) dropped: u64,
    /// The Q counter its drops count to (`rqc.counter_set_id`; 0: none).
    pub(crate) q_counter: u32,
}

#[derive(Debug)]
pub(crate) struct Rmp {
    pub(crate) meta: Meta,
    pub(crate) wq: WqRing,
    /// Receive WQEs taken (by any QP of the pool): the cyclic pool hands out its WQEs one
    /// after the other; against the doorbell record's counter it says whether any is posted.
    pub(crate) ci: u16,
    /// A linked-list pool: the WQE it hands out next; each taken WQE's next segment names the
    /// one after it (the software keeps the list, `mlx5_wqe_srq_next_seg`).
    pub(crate) head: u16,
}

#[derive(Debug)]
pub(crate) struct Tis {
    pub(crate) meta: Meta,
    pub(crate) td: u32,
}

/// How a TIR picks its RQ.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Dispatch {
    Direct(u32),
    Indirect(u32),
}

#[derive(Debug)]
pub(crate) struct Tir {
    pub(crate) meta: Meta,
    pub(crate) td: u32,
    pub(crate) dispatch: Dispatch,
    pub(crate) self_lb_block: u8,
    pub(crate) raw: Box<[u8]>,
}

#[derive(Debug)]
pub(crate) struct Rqt {
    pub(crate) meta: Meta,
    pub(crate) rqs: Vec<u32>,
}

/// A flow destination.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dest {
    Tir(u32),
    Table(u32),
}

#[derive(Debug)]
pub(crate) struct Fte {
    pub(crate) meta: Meta,
    pub(crate) group: u32,
    pub(crate) action: u16,
    pub(crate) dests: Vec<Dest>,
    /// The flow counter the COUNT action adds the entry's frames to.
    pub(crate) counter: Option<u32>,
    pub(crate) flow_tag: u32,
    /// The outer-header match value (`fte_match_set_lyr_2_4`, 64 bytes).
    pub(crate) value: [u8; 64],
}

#[derive(Debug)]
pub(crate) struct FlowGroup {
    pub(crate) meta: Meta,
    pub(crate) table: u32,
    pub(crate) start: u32,
    pub(crate) end: u32,
    /// Outer-header mask (64 bytes) when `match_criteria_enable` bit 0 is set.
    pub(crate) mask: [u8; 64],
}

/// `table_type` NIC_RX (PRM `flow_table_type`).
pub(crate) const TABLE_TYPE_NIC_RX: u8 = 0x0;
/// Flow context actions (PRM `flow_context.action` bits).
pub(crate) mod action {
    pub(crate) const ALLOW: u16 = 0x1;
    pub(crate) const DROP: u16 = 0x2;
    pub(crate) const FWD_DEST: u16 = 0x4;
    pub(crate) const COUNT: u16 = 0x8;
}

#[derive(Debug)]
pub(crate) struct FlowTable {
    pub(crate) meta: Meta,
    pub(crate) table_type: u8,
    pub(crate) level: u8,
    pub(crate) size: u32,
    pub(crate) groups: Vec<u32>,
    pub(crate) entries: std::collections::BTreeMap<u32, Fte>,
    pub(crate) created: u64,
    /// The entries by group and match value, for steering's lookups; `None` after any change
    /// of the table's groups or entries, and built again at the next frame
    /// (`datapath::steering`).
    pub(crate) lookup: Option<FlowLookup>,
}

/// A table's entries as steering finds them: its groups in order with their masks as words,
/// and (group, match value in 8-byte words) to what the lowest flow index of that group
/// holding that value does. Within a group every entry has the group's mask, so a frame's
/// masked header image is the key, as a NIC's hash per match definer does.
#[derive(Debug, Default)]
pub(crate) struct FlowLookup {
    pub(crate) groups: Vec<GroupLookup>,
    pub(crate) map: rustc_hash::FxHashMap<FlowKey, FlowHit>,
}

/// A group of a [`FlowLookup`], in the table's order.
#[derive(Debug)]
pub(crate) struct GroupLookup {
    pub(crate) id: u32,
    pub(crate) mask: [u64; 8],
    /// The mask is empty: the group matches on nothing, so every frame has its one possible
    /// value (all zeros).
    pub(crate) matches_all: bool,
    /// For a group that matches all: what its lowest entry does, found without hashing the
    /// frame (`None`: the group holds no entry). Unused for other groups.
    pub(crate) any: Option<FlowHit>,
}

/// The entry a frame hit, and what it does with the frame (copied from the entry when the
/// lookup is built, so a frame reads neither the entry nor the table's entry map).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FlowHit {
    pub(crate) index: u32,
    pub(crate) step: FlowStep,
    /// The entry's flow counter (its COUNT action).
    pub(crate) counter: Option<u32>,
}

/// A Q counter (`ALLOC_Q_COUNTER`): what the receive queues naming it in `counter_set_id`
/// could not take (PRM `out_of_buffer`: a frame for an RQ with no WQE posted).
#[derive(Debug)]
pub(crate) struct QCounter {
    pub(crate) meta: Meta,
    pub(crate) out_of_buffer: u32,
}

/// A flow counter (`ALLOC_FLOW_COUNTER`): the frames and bytes of the entries that count to it.
#[derive(Debug)]
pub(crate) struct FlowCounter {
    pub(crate) meta: Meta,
    pub(crate) packets: u64,
    pub(crate) octets: u64,
}

/// What an entry does with a frame: drop it (the DROP action, or no destination), deliver it
/// to a TIR with the entry's flow tag, or look it up in another table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FlowStep {
    Drop,
    Tir { tirn: u32, flow_tag: u32 },
    Table(u32),
}

/// A key of [`FlowLookup`]: the group and the masked image (or an entry's value).
#[derive(Debug, Clone, Copy, Eq)]
pub(crate) struct FlowKey(pub(crate) u32, pub(crate) [u64; 8]);

impl std::hash::Hash for FlowKey {
    /// The same fields `eq` compares, folded into one word first: each word times a constant
    /// of its own, summed (independent multiplies, where hashing word after word is a chain
    /// of nine), then mixed so that high bits reach the low ones the table indexes by.
    #[inline]
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        const K: [u64; 9] = [
            0x9e37_79b9_7f4a_7c15,
            0xc2b2_ae3d_27d4_eb4f,
            0x1656_67b1_9e37_79f9,
            0x85eb_ca77_c2b2_ae63,
            0x27d4_eb2f_1656_67c5,
            0xff51_afd7_ed55_8ccd,
            0xc4ce_b9fe_1a85_ec53,
            0xd6e8_feb8_6659_fd93,
            0xa076_1d64_78bd_642f,
        ];
        let sum = self
            .1
            .iter()
            .zip(&K)
            .fold(u64::from(self.0).wrapping_mul(K[8]), |a, (w, k)| {
                a.wrapping_add(w.wrapping_mul(*k))
            });
        let mut x = sum ^ (sum >> 33);
        x = x.wrapping_mul(K[5]);
        h.write_u64(x ^ (x >> 29));
    }
}

impl PartialEq for FlowKey {
    /// Every word compared without a branch or a call (an array's `==` calls `memcmp`, which
    /// cost more than the rest of the lookup).
    #[inline]
    fn eq(&self, o: &FlowKey) -> bool {
        let differ = self.1.iter().zip(&o.1).fold(0, |d, (a, b)| d | (a ^ b));
        differ == 0 && self.0 == o.0
    }
}

/// The receive queue of a QP: at offset 0 of its ring.
#[derive(Debug, Clone, Copy)]
pub(crate) struct QpRq {
    pub(crate) log_size: u8,
    /// log2 of the WQE stride in bytes.
    pub(crate) log_stride: u8,
}

/// The send queue of a QP: 64-byte WQEBBs right after the RQ.
#[derive(Debug, Clone, Copy)]
pub(crate) struct QpSq {
    pub(crate) offset: usize,
    pub(crate) log_size: u8,
}

#[derive(Debug)]
pub(crate) struct Qp {
    pub(crate) meta: Meta,
    pub(crate) state: QpState,
    pub(crate) st: QpServiceType,
    /// `qpc.user_index`: written to `srqn_uidx` of the QP's CQEs (CQE version 1).
    pub(crate) user_index: u32,
    pub(crate) pd: u32,
    pub(crate) cqn_snd: Option<u32>,
    pub(crate) cqn_rcv: Option<u32>,
    pub(crate) ring_umem: u32,
    pub(crate) dbr_umem: u32,
    pub(crate) uar_page: u32,
    /// The RQ then the SQ.
    pub(crate) ring: Dma,
    /// Doorbell record: receive counter at 0, send counter at 4.
    pub(crate) dbr: Dma,
    pub(crate) rq: Option<QpRq>,
    /// The shared receive queue (RMP) it receives from instead (`rq_type` SRQ).
    pub(crate) srq: Option<u32>,
    pub(crate) sq: Option<QpSq>,
    pub(crate) ctx: QpCtx,
    /// The transport's runtime state (`crate::rc`).
    pub(crate) rc: crate::state::rc::RcState,
    pub(crate) qpc: Box<[u8]>,
}

/// A general object's payload.
#[derive(Debug)]
pub(crate) enum GenKind {
    DpaProcess {
        pd: u32,
        elf_umem: u32,
        /// DPA memory in use (image + heap + DPA_MEM objects), for accounting.
        used: u64,
        threads: u32,
    },
    DpaMem {
        process: u32,
        size: u64,
        addr: u64,
    },
    DpaThread {
        process: u32,
        outbox: Option<u32>,
        window: Option<u32>,
    },
    DpaOutbox {
        process: u32,
        uar: u32,
    },
    DpaWindow {
        process: u32,
        pd: u32,
    },
    DpaEq {
        umem: u32,
        uar: u32,
    },
    DbCqMapping {
        cqn: u32,
    },
    DpaUar {
        process: u32,
        uar: u32,
        /// The function whose UAR it is: the process's own, or another function the process
        /// is extended to (FlexIO `flexio_uar_extend`).
        vhca: u16,
    },
    /// Another (or the same) function's object, named here by the alias's id.
    Alias {
        /// The alias's type: a general object type, or an alias type (0xff01..).
        of_type: u16,
        target: u32,
    },
}

#[derive(Debug)]
pub(crate) struct GenObj {
    pub(crate) meta: Meta,
    pub(crate) obj_type: u16,
    pub(crate) kind: GenKind,
    /// The context as created (and modified), returned by QUERY_GENERAL_OBJECT.
    pub(crate) ctx: Box<[u8]>,
}

/// An ALLOW_OTHER_VHCA_ACCESS grant.
#[derive(Debug, Clone)]
pub(crate) struct Grant {
    /// The granting function.
    pub(crate) vhca: u16,
    pub(crate) obj_type: u16,
    pub(crate) obj_id: u32,
    pub(crate) key: [u8; 32],
}
