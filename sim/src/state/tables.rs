//! The firmware's tables: every object firmware keeps, in number spaces of their own
//! (`Slab`s), the DPA's runtime state, the fault plan and the counters. Command handlers
//! (`crate::fw`) and the datapath (`crate::datapath`) both work on them.

use std::collections::HashMap;

use mlx5_dpa::mlx5::layouts as l;
use mlx5_dpa::mlx5::{Opcode, Status};

use crate::mem::{MemModel, UarPage};
use crate::profile::Profile;
use crate::slab::Slab;
use crate::state::dpa::DpaState;
use crate::state::objects::*;

/// `log2` limit from a capability: `count < 2^log`.
pub(crate) fn limit(log: u64) -> u32 {
    if log >= 32 {
        u32::MAX
    } else {
        1u32 << log
    }
}

/// What the fault plan does.
#[derive(Debug, Default, Clone)]
pub struct FaultPlan {
    /// Fail the command with this sequence number (see `Firmware::commands`).
    pub at: Vec<(u64, Status)>,
    /// Fail every command with this opcode.
    pub by_opcode: HashMap<u16, Status>,
    /// Fail the `k`th command from now with this opcode (and `op_mod`, when given): the
    /// count left until then.
    pub nth_of: Vec<(Opcode, Option<u16>, u64, Status)>,
    /// The commands failed so far: sequence number, opcode, `op_mod` (kept while the plan
    /// is; [`crate::Device::injected_faults`]).
    pub hit: Vec<(u64, Opcode, u16)>,
    /// When set, every command's opcode and `op_mod` is appended
    /// ([`crate::Device::record_commands`]).
    pub trace: Option<Vec<(Opcode, u16)>>,
}

/// Counters.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct FwStats {
    /// Commands executed.
    pub commands: u64,
    /// Commands refused.
    pub failed: u64,
}

/// The firmware's tables.
pub struct Firmware {
    pub(crate) profile: Profile,
    pub(crate) mem: MemModel,
    pub(crate) uars: Slab<UarPage>,
    pub(crate) pds: Slab<Pd>,
    pub(crate) tds: Slab<Td>,
    pub(crate) mkeys: Slab<Mkey>,
    pub(crate) cqs: Slab<Cq>,
    pub(crate) sqs: Slab<Sq>,
    pub(crate) rqs: Slab<Rq>,
    pub(crate) q_counters: Slab<QCounter>,
    pub(crate) flow_counters: Slab<FlowCounter>,
    pub(crate) rmps: Slab<Rmp>,
    pub(crate) tises: Slab<Tis>,
    pub(crate) tirs: Slab<Tir>,
    pub(crate) rqts: Slab<Rqt>,
    pub(crate) tables: Slab<FlowTable>,
    pub(crate) groups: Slab<FlowGroup>,
    pub(crate) qps: Slab<Qp>,
    pub(crate) gen: Slab<GenObj>,
    pub(crate) grants: Vec<Grant>,
    pub(crate) root_table: Option<u32>,
    /// Raised by every change to steering (a flow table, group or entry created or
    /// destroyed, the root set): what the datapath's cached decisions are valid for
    /// (`crate::state::datapath::FlowCache`).
    pub(crate) steering_gen: u64,
    /// Armed CQs with a moderation period whose first CQE since the arm waits for the event:
    /// the timers the datapath's pass looks at (`datapath::step`), so that it does not look at
    /// every CQ. May hold a CQ twice, or one whose timer has ended: the pass checks each.
    pub(crate) timed_cqs: Vec<u32>,
    /// EU groups and EU partitions (`fw::eu`).
    pub(crate) eugs: super::eu::EuTable,
    pub(crate) partitions: super::eu::EuTable,
    /// The DPA's runtime (`crate::dpa`): process memory, threads, EUs.
    pub(crate) dpa: DpaState,
    pub(crate) faults: FaultPlan,
    pub(crate) stats: FwStats,
    pub(crate) next_uid: u16,
    /// Contexts opened on a sub-function (uid -> its vhca_id); every other context is the
    /// physical function's (`profile.vhca_id`).
    pub(crate) sf_uids: HashMap<u16, u16>,
    pub(crate) table_seq: u64,
}

impl std::fmt::Debug for Firmware {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Firmware")
            .field("profile", &self.profile.name)
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

/// EQ numbers the model has; vector `v` is served by `EQN_BASE + v`.
pub(crate) const EQN_BASE: u32 = 0x10;

impl Firmware {
    /// Firmware for `profile`, with empty tables.
    pub fn new(profile: Profile) -> Self {
        use l::cmd_hca_cap as c;
        let lim = |f| limit(profile.cap(f));
        Firmware {
            mem: MemModel::new(),
            uars: Slab::new(0x20, 1 << 16),
            pds: Slab::new(0x1, lim(c::log_max_pd)),
            tds: Slab::new(0x1, lim(c::log_max_transport_domain)),
            mkeys: Slab::new(0x10, lim(c::log_max_mkey)),
            cqs: Slab::new(0x400, lim(c::log_max_cq)),
            sqs: Slab::new(0x1000, lim(c::log_max_sq)),
            rqs: Slab::new(0x2000, lim(c::log_max_rq)),
            // counter_set_id is 8 bits; 0 names no counter.
            q_counters: Slab::new(0x1, profile.cap(c::max_qp_cnt).min(255) as u32),
            flow_counters: Slab::new(
                0x1,
                (profile.cap(c::max_flow_counter_31_16) << 16
                    | profile.cap(c::max_flow_counter_15_0))
                .min(1 << 24) as u32,
            ),
            rmps: Slab::new(0x3000, lim(c::log_max_rmp)),
            tises: Slab::new(0x10, lim(c::log_max_tis)),
            tirs: Slab::new(0x10, lim(c::log_max_tir)),
            rqts: Slab::new(0x10, lim(c::log_max_rqt)),
            tables: Slab::new(0x100, 1 << 16),
            groups: Slab::new(0x1, 1 << 20),
            qps: Slab::new(0x4000, lim(c::log_max_qp)),
            gen: Slab::new(0x1, 1 << 20),
            grants: Vec::new(),
            root_table: None,
            steering_gen: 0,
            timed_cqs: Vec::new(),
            eugs: Default::default(),
            partitions: Default::default(),
            dpa: DpaState::default(),
            faults: FaultPlan::default(),
            stats: FwStats::default(),
            next_uid: 1,
            sf_uids: HashMap::new(),
            table_seq: 0,
            profile,
        }
    }

    /// The device profile.
    pub fn profile(&self) -> &Profile {
        &self.profile
    }

    /// Commands executed so far (the next command gets this number plus one).
    pub fn commands(&self) -> u64 {
        self.stats.commands
    }

    pub(crate) fn alloc_uid(&mut self) -> u16 {
        let uid = self.next_uid;
        self.next_uid = self.next_uid.wrapping_add(1).max(1);
        uid
    }

    /// The vhca_id of the function context `uid` was opened on.
    pub(crate) fn vhca_of(&self, uid: u16) -> u16 {
        self.sf_uids
            .get(&uid)
            .copied()
            .unwrap_or(self.profile.vhca_id)
    }

    /// Whether `vhca` is a function of this device: the physical function or one of its
    /// [`MAX_SUB_FUNCTIONS`] sub-functions.
    pub(crate) fn is_function(&self, vhca: u16) -> bool {
        let pf = self.profile.vhca_id;
        vhca == pf || (vhca > pf && u32::from(vhca - pf) <= u32::from(MAX_SUB_FUNCTIONS))
    }
}

/// Sub-functions a model device has (numbered 1 ..= this; vhca_id = the PF's + the number).
pub const MAX_SUB_FUNCTIONS: u16 = 4;
