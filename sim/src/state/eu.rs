//! The DPA's EU partitions and EU groups as the model holds them (the register rules are
//! `fw::eu`).

use std::collections::{BTreeSet, HashMap};

/// One EU partition or EU group on the device.
#[derive(Debug, Clone)]
pub(crate) struct EuReg {
    /// The register image as firmware answers reads of it.
    pub(crate) data: Vec<u8>,
    /// The context that made it (0: the kernel; then it belongs to the device).
    pub(crate) uid: u16,
    /// Its EUs (physical numbers), ascending.
    pub(crate) members: BTreeSet<u32>,
    /// Partitions: the functions it is given to. Groups: empty.
    pub(crate) vhcas: Vec<u16>,
    /// Groups: the partition it was made in (`None`: the partition manager's default one).
    /// Partitions: `None`.
    pub(crate) partition: Option<u16>,
    /// Partitions: most groups (`max_num_eug`; 0 means no limit).
    pub(crate) max_groups: u16,
}

/// The partitions, or the groups, by id. Ids are handed out lowest free first, from 1, in
/// O(log n) (a batch of tens of thousands of creates stays linear).
#[derive(Debug)]
pub(crate) struct EuTable {
    regs: HashMap<u16, EuReg>,
    /// Ids below `next` free again.
    free: BTreeSet<u16>,
    /// The lowest id never handed out (0: all of 1 ..= u16::MAX were).
    next: u16,
}

impl Default for EuTable {
    fn default() -> Self {
        EuTable {
            regs: HashMap::new(),
            free: BTreeSet::new(),
            next: 1,
        }
    }
}

impl EuTable {
    pub(crate) fn get(&self, id: &u16) -> Option<&EuReg> {
        self.regs.get(id)
    }

    pub(crate) fn len(&self) -> usize {
        self.regs.len()
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = (&u16, &EuReg)> {
        self.regs.iter()
    }

    pub(crate) fn values(&self) -> impl Iterator<Item = &EuReg> {
        self.regs.values()
    }

    /// The id the next [`EuTable::add`] takes, if one is free.
    pub(crate) fn next_id(&self) -> Option<u16> {
        self.free
            .first()
            .copied()
            .or((self.next != 0).then_some(self.next))
    }

    /// Stores `reg` under [`EuTable::next_id`]; `None` when every id is taken.
    pub(crate) fn add(&mut self, reg: EuReg) -> Option<u16> {
        let id = self.next_id()?;
        if !self.free.remove(&id) {
            self.next = self.next.wrapping_add(1);
        }
        self.regs.insert(id, reg);
        Some(id)
    }

    /// Replaces the register `id` holds (a MODIFY).
    pub(crate) fn replace(&mut self, id: u16, reg: EuReg) {
        if let Some(r) = self.regs.get_mut(&id) {
            *r = reg;
        }
    }

    pub(crate) fn remove(&mut self, id: &u16) -> Option<EuReg> {
        let r = self.regs.remove(id)?;
        self.free.insert(*id);
        Some(r)
    }

    /// Keeps only what `keep` accepts.
    pub(crate) fn retain(&mut self, mut keep: impl FnMut(&EuReg) -> bool) {
        let gone: Vec<u16> = self
            .regs
            .iter()
            .filter(|(_, r)| !keep(r))
            .map(|(id, _)| *id)
            .collect();
        for id in gone {
            self.remove(&id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reg() -> EuReg {
        EuReg {
            data: Vec::new(),
            uid: 1,
            members: BTreeSet::new(),
            vhcas: Vec::new(),
            partition: None,
            max_groups: 0,
        }
    }

    #[test]
    fn ids_are_lowest_free_first_and_run_out() {
        let mut t = EuTable::default();
        assert_eq!(
            (t.add(reg()), t.add(reg()), t.add(reg())),
            (Some(1), Some(2), Some(3))
        );
        t.remove(&2);
        t.remove(&1);
        assert_eq!(
            (t.add(reg()), t.add(reg()), t.add(reg())),
            (Some(1), Some(2), Some(4))
        );
        while t.add(reg()).is_some() {}
        assert_eq!(t.len(), usize::from(u16::MAX));
        assert_eq!(t.next_id(), None);
        t.remove(&7);
        assert_eq!(t.add(reg()), Some(7));
    }
}
