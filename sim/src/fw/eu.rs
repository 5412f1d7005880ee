//! The DPA's EU registers: `NIC_DPA_EU_PARTITION_REG` and `NIC_DPA_EUG_REG` through
//! ACCESS_REGISTER_USER, and the rules the model applies to who may use them.
//!
//! What NVIDIA documents (the DPA EU management tool's guide, `dpaeumgmt`, and the FlexIO SDK
//! guide's "Execution Unit Partitions"; summarised in docs/model-dpa.md, "EU partitions and groups"):
//! - the *partition manager* is the function that controls all of the system's EUs (the
//!   ECPF on a BlueField-3); it owns the default partition, which holds every EU;
//! - any other function needs a partition made for it (a set of EUs given to a list of vHCA
//!   ids) before it can run a DPA thread, and sees the partition's EUs as virtual EUs
//!   numbered from 0;
//! - an EU group is made under a partition, of EUs in that partition.
//!
//! Who may write what is not public. The model's rules (provisional):
//! - only the partition manager writes partitions: contexts of the physical function the
//!   model stands for (its `vhca_id`, as the ECPF), and the kernel (uid 0);
//! - a register made through a DevX context belongs to that context, as every object a DevX
//!   context makes carries its uid (the kernel writes it into each command's header): only
//!   it (or the kernel) reads, modifies, destroys or names it in a thread's affinity, and it
//!   is released when the context closes. A function named in a partition may read it and
//!   make groups in it. Registers the kernel writes (uid 0) belong to the device;
//! - partitions do not overlap (each is an isolated pool of EUs), name only functions of
//!   this device, and hold at most `max_num_eug` groups when that is non-zero;
//! - a group a live thread is bound to, and a partition that still holds a group or a live
//!   thread of one of its functions, cannot be destroyed (RES_BUSY), so no queued activation
//!   loses the EUs it may run on.

use std::collections::BTreeSet;

use mlx5_dpa::mlx5::layout::{ArrayField, Layout, View, ViewMut};
use mlx5_dpa::mlx5::layouts::{self as l, nic_dpa_eu_partition_reg as pr, nic_dpa_eug_reg as gr};

use super::{check, inbox, size, Check};
use crate::state::dpa::Affinity;
use crate::state::eu::EuReg;
use crate::state::Firmware;

/// `operation` of both registers.
const CREATE: u64 = 0;
const MODIFY: u64 = 1;
const DESTROY: u64 = 2;

/// The EUs whose bits are set in a `member_mask` (EU n: bit n % 32 of dword n / 32).
fn mask_of<L: Layout>(v: &View<'_, L>, mask: ArrayField<L>) -> BTreeSet<u32> {
    (0..mask.len())
        .filter_map(|i| mask.at(i).map(|f| (i, v.get(f))))
        .flat_map(|(i, w)| {
            (0..32u32)
                .filter(move |b| (w >> b) & 1 == 1)
                .map(move |b| i * 32 + b)
        })
        .collect()
}

impl Firmware {
    /// Whether context `uid` acts for the partition manager (the physical function, or the
    /// kernel).
    fn is_partition_manager(&self, uid: u16) -> bool {
        uid == 0 || self.vhca_of(uid) == self.profile.vhca_id
    }

    /// The partition function `vhca` runs its DPA threads in: `None` for the partition
    /// manager (every EU), else the lowest-numbered partition naming it.
    pub(crate) fn partition_of_function(&self, vhca: u16) -> Result<Option<(u16, &EuReg)>, Check> {
        if vhca == self.profile.vhca_id {
            return Ok(None);
        }
        self.partitions
            .iter()
            .filter(|(_, p)| p.vhcas.contains(&vhca))
            .min_by_key(|(id, _)| **id)
            .map(|(id, p)| Some((*id, p)))
            .ok_or(check::NO_PARTITION)
    }

    /// Whether context `uid` may name group `id` (in a thread's affinity, a read, a write).
    pub(crate) fn group_usable(&self, uid: u16, id: u16) -> Result<&EuReg, Check> {
        let g = self.eugs.get(&id).ok_or(check::NO_SUCH_OBJECT)?;
        if uid != 0 && g.uid != 0 && g.uid != uid {
            return Err(check::WRONG_UID);
        }
        Ok(g)
    }

    /// Whether a thread of function `vhca` with `affinity` can be created: the function has
    /// EUs (a partition, unless it is the partition manager), and a strict EU is one of them
    /// (a virtual number inside a partition).
    pub(crate) fn affinity_allowed(
        &self,
        uid: u16,
        vhca: u16,
        affinity: Affinity,
    ) -> Result<(), Check> {
        let eus = self.profile.dpa_eus();
        let part = self.partition_of_function(vhca)?;
        match affinity {
            Affinity::None => Ok(()),
            Affinity::Eu(e) => {
                let n = part.map_or(eus, |(_, p)| p.members.len() as u32);
                if u32::from(e) < n {
                    Ok(())
                } else {
                    Err(check::BAD_AFFINITY)
                }
            }
            // A group that does not exist is a bad affinity, as before groups had owners.
            Affinity::Group(g) => match self.group_usable(uid, g) {
                Err(c) if c == check::NO_SUCH_OBJECT => Err(check::BAD_AFFINITY),
                r => r.map(|_| ()),
            },
        }
    }

    /// The physical EUs a thread of function `vhca` may run on for `affinity`, or `None`
    /// when nothing matches any more (its partition or group went with a closed context).
    /// Allocates nothing: the dispatcher asks at every activation.
    pub(crate) fn eus_for(&self, vhca: u16, affinity: Affinity) -> Option<EuChoice<'_>> {
        let eus = self.profile.dpa_eus();
        let pool = match self.partition_of_function(vhca) {
            Ok(None) => None,
            Ok(Some((_, p))) => Some(&p.members),
            Err(_) => return None,
        };
        let choice = match affinity {
            Affinity::None => EuChoice::Pool { eus, pool },
            // A strict EU of a partitioned function is virtual: the n-th of its partition.
            Affinity::Eu(e) => {
                let phys = match pool {
                    None => u32::from(e),
                    Some(p) => *p.iter().nth(usize::from(e))?,
                };
                EuChoice::One(phys)
            }
            Affinity::Group(g) => EuChoice::Group {
                members: &self.eugs.get(&g)?.members,
                eus,
                pool,
            },
        };
        (0..eus).any(|e| choice.contains(e)).then_some(choice)
    }

    /// Whether a live thread is bound to group `id`, or (with `vhcas`) belongs to a process
    /// of one of those functions.
    fn threads_using(&self, group: Option<u16>, vhcas: &[u16]) -> bool {
        self.dpa.threads.values().any(|t| {
            group.is_some_and(|g| t.affinity == Affinity::Group(g))
                || self
                    .dpa
                    .processes
                    .get(&t.process)
                    .is_some_and(|p| vhcas.contains(&p.vhca))
        })
    }

    /// ACCESS_REGISTER_USER of the EU registers.
    pub(super) fn access_register(
        &mut self,
        uid: u16,
        inb: &[u8],
        out: &mut [u8],
    ) -> Result<(), Check> {
        use l::access_register_in as a;
        use l::dpa::reg_id;
        let v = inbox::<a::Layout>(inb)?;
        let op_mod = v.get(a::op_mod); // write 0, read 1
        if op_mod > 1 {
            return Err(check::BAD_OP_MOD);
        }
        let reg = v.value(a::register_id);
        let data = &inb[size::<a::Layout>()..];
        let len = match reg {
            reg_id::NIC_DPA_EUG_REG if self.profile.dpa.is_some() => size::<gr::Layout>(),
            reg_id::NIC_DPA_EU_PARTITION_REG if self.profile.dpa.is_some() => size::<pr::Layout>(),
            _ => return Err(check::BAD_REGISTER),
        };
        if data.len() < len {
            return Err(check::INBOX_TOO_SHORT);
        }
        if out.len() < size::<l::access_register_out::Layout>() + len {
            return Err(check::OUTBOX_TOO_SHORT);
        }
        let data = &data[..len];
        let answer = if reg == reg_id::NIC_DPA_EUG_REG {
            self.eug_reg(uid, op_mod == 1, data)?
        } else {
            self.partition_reg(uid, op_mod == 1, data)?
        };
        let base = size::<l::access_register_out::Layout>();
        out[base..base + len].copy_from_slice(&answer);
        Ok(())
    }

    fn partition_reg(&mut self, uid: u16, read: bool, data: &[u8]) -> Result<Vec<u8>, Check> {
        let v = View::<pr::Layout>::new(data).map_err(|_| check::INBOX_TOO_SHORT)?;
        let id = v.get(pr::eu_partition_id) as u16;
        let caller = self.vhca_of(uid);
        let mine = |p: &EuReg| uid == 0 || p.uid == 0 || p.uid == uid;
        if read {
            let p = self.partitions.get(&id).ok_or(check::NO_SUCH_OBJECT)?;
            // Its owner, the partition manager's other contexts for a device-wide one, and
            // the functions it is given to may read it.
            if !(mine(p) || p.vhcas.contains(&caller)) {
                return Err(check::WRONG_UID);
            }
            return Ok(p.data.clone());
        }
        if !self.is_partition_manager(uid) {
            return Err(check::NOT_PARTITION_MANAGER);
        }
        match v.get(pr::operation) {
            op @ (CREATE | MODIFY) => {
                if op == MODIFY {
                    let p = self.partitions.get(&id).ok_or(check::NO_SUCH_OBJECT)?;
                    if !mine(p) {
                        return Err(check::WRONG_UID);
                    }
                }
                let members = mask_of(&v, pr::member_mask);
                let eus = self.profile.dpa_eus();
                if members.is_empty() || members.iter().any(|&e| e >= eus) {
                    return Err(check::BAD_AFFINITY);
                }
                let n = u32::from(v.get(pr::num_vhca_id) as u8);
                let vhcas: Vec<u16> = (0..n)
                    .filter_map(|i| pr::vhca_id.at(i).map(|f| v.get(f) as u16))
                    .collect();
                if vhcas.is_empty() || vhcas.iter().any(|&h| !self.is_function(h)) {
                    return Err(check::BAD_PARTITION_VHCA);
                }
                let overlaps = self
                    .partitions
                    .iter()
                    .any(|(&other, p)| other != id && !p.members.is_disjoint(&members));
                if overlaps {
                    return Err(check::PARTITION_OVERLAP);
                }
                let max_groups = v.get(pr::max_num_eug) as u16;
                let new_id = if op == CREATE {
                    self.partitions.next_id().ok_or(check::TOO_MANY_OBJECTS)?
                } else {
                    // A modify may not strand a group outside the partition.
                    let strands = self
                        .eugs
                        .values()
                        .any(|g| g.partition == Some(id) && !g.members.is_subset(&members));
                    if strands {
                        return Err(check::OBJECT_IN_USE);
                    }
                    id
                };
                let mut stored = data.to_vec();
                if let Ok(mut w) = ViewMut::<pr::Layout>::new(&mut stored) {
                    w.set(pr::eu_partition_id, u64::from(new_id));
                    w.set(pr::operation, 0);
                }
                let owner = self
                    .partitions
                    .get(&id)
                    .filter(|_| op == MODIFY)
                    .map(|p| p.uid);
                let reg = EuReg {
                    data: stored.clone(),
                    uid: owner.unwrap_or(uid),
                    members,
                    vhcas,
                    partition: None,
                    max_groups,
                };
                if op == CREATE {
                    self.partitions.add(reg);
                } else {
                    self.partitions.replace(id, reg);
                }
                Ok(stored)
            }
            DESTROY => {
                let p = self.partitions.get(&id).ok_or(check::NO_SUCH_OBJECT)?;
                if !mine(p) {
                    return Err(check::WRONG_UID);
                }
                let vhcas = p.vhcas.clone();
                if self.eugs.values().any(|g| g.partition == Some(id))
                    || self.threads_using(None, &vhcas)
                {
                    return Err(check::OBJECT_IN_USE);
                }
                Ok(self
                    .partitions
                    .remove(&id)
                    .map(|p| p.data)
                    .unwrap_or_default())
            }
            _ => Err(check::BAD_REGISTER_OP),
        }
    }

    fn eug_reg(&mut self, uid: u16, read: bool, data: &[u8]) -> Result<Vec<u8>, Check> {
        let v = View::<gr::Layout>::new(data).map_err(|_| check::INBOX_TOO_SHORT)?;
        let id = v.get(gr::eug_id) as u16;
        if read {
            return Ok(self.group_usable(uid, id)?.data.clone());
        }
        match v.get(gr::operation) {
            op @ (CREATE | MODIFY) => {
                let (partition, owner) = if op == MODIFY {
                    let g = self.group_usable(uid, id)?;
                    (g.partition, g.uid)
                } else if v.get(gr::partition_id_valid) == 1 {
                    let pid = v.get(gr::partition_id) as u16;
                    let p = self.partitions.get(&pid).ok_or(check::NO_SUCH_OBJECT)?;
                    let caller = self.vhca_of(uid);
                    let allowed = self.is_partition_manager(uid)
                        && (uid == 0 || p.uid == 0 || p.uid == uid)
                        || p.vhcas.contains(&caller);
                    if !allowed {
                        return Err(check::WRONG_UID);
                    }
                    (Some(pid), uid)
                } else {
                    // No partition named: the caller's own (the manager's is every EU).
                    let caller = self.vhca_of(uid);
                    let own = self.partition_of_function(caller)?;
                    (own.map(|(pid, _)| pid), uid)
                };
                let members = mask_of(&v, gr::member_mask);
                let eus = self.profile.dpa_eus();
                let pool_ok = match partition.and_then(|p| self.partitions.get(&p)) {
                    Some(p) => members.is_subset(&p.members),
                    None => partition.is_none() && members.iter().all(|&e| e < eus),
                };
                if members.is_empty() || !pool_ok {
                    return Err(check::BAD_AFFINITY);
                }
                let new_id = if op == CREATE {
                    if let Some(p) = partition.and_then(|p| self.partitions.get(&p)) {
                        let full = p.max_groups != 0
                            && self
                                .eugs
                                .values()
                                .filter(|g| g.partition == partition)
                                .count()
                                >= usize::from(p.max_groups);
                        if full {
                            return Err(check::TOO_MANY_OBJECTS);
                        }
                    }
                    self.eugs.next_id().ok_or(check::TOO_MANY_OBJECTS)?
                } else {
                    id
                };
                let mut stored = data.to_vec();
                if let Ok(mut w) = ViewMut::<gr::Layout>::new(&mut stored) {
                    w.set(gr::eug_id, u64::from(new_id));
                    w.set(gr::operation, 0);
                    w.set(gr::partition_id_valid, u64::from(partition.is_some()));
                    w.set(gr::partition_id, u64::from(partition.unwrap_or(0)));
                }
                let reg = EuReg {
                    data: stored.clone(),
                    uid: owner,
                    members,
                    vhcas: Vec::new(),
                    partition,
                    max_groups: 0,
                };
                if op == CREATE {
                    self.eugs.add(reg);
                } else {
                    self.eugs.replace(id, reg);
                }
                Ok(stored)
            }
            DESTROY => {
                self.group_usable(uid, id)?;
                if self.threads_using(Some(id), &[]) {
                    return Err(check::OBJECT_IN_USE);
                }
                Ok(self.eugs.remove(&id).map(|g| g.data).unwrap_or_default())
            }
            _ => Err(check::BAD_REGISTER_OP),
        }
    }

    /// The kernel closes context `uid`: the EU groups, then the partitions, it made go with
    /// it (its threads are gone by now).
    pub(crate) fn release_eu_registers(&mut self, uid: u16) {
        if uid == 0 {
            return;
        }
        self.eugs.retain(|g| g.uid != uid);
        self.partitions.retain(|p| p.uid != uid);
    }
}

/// The EUs a thread may run on ([`Firmware::eus_for`]).
pub(crate) enum EuChoice<'a> {
    /// Every EU below `eus`, or those of a partition.
    Pool {
        eus: u32,
        pool: Option<&'a BTreeSet<u32>>,
    },
    /// One EU.
    One(u32),
    /// A group's EUs inside the pool.
    Group {
        members: &'a BTreeSet<u32>,
        eus: u32,
        pool: Option<&'a BTreeSet<u32>>,
    },
}

impl EuChoice<'_> {
    /// Whether EU `e` is one of them.
    pub(crate) fn contains(&self, e: u32) -> bool {
        match *self {
            EuChoice::Pool { eus, pool } => e < eus && pool.is_none_or(|p| p.contains(&e)),
            EuChoice::One(x) => x == e,
            EuChoice::Group { members, eus, pool } => {
                e < eus && members.contains(&e) && pool.is_none_or(|p| p.contains(&e))
            }
        }
    }
}
