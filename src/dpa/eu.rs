//! EU groups and EU partitions of the DPA (FlexIO `flexio_eu_group` / partitions as created by
//! the DPA management tools), through ACCESS_REGISTER_USER.
//!
//! - [`EuGroup`]: `NIC_DPA_EUG_REG` (0xC012), layout `nic_dpa_eug_reg`. A group is a named set
//!   of EUs; a thread with [`Affinity::Group`](super::thread::Affinity::Group)`(group.id())`
//!   runs only on one of them.
//! - [`EuPartition`]: `NIC_DPA_EU_PARTITION_REG` (0xC015), layout `nic_dpa_eu_partition_reg`.
//!   A partition is a set of EUs given to a list of functions (vHCA ids), with a limit on the
//!   groups made in it; a group may be created inside one ([`EuGroup::create_in`]).
//!
//! Both registers are written with `operation` CREATE (0), MODIFY (1) or DESTROY (2); firmware
//! answers a CREATE with the register contents, the new id in `eug_id` / `eu_partition_id`.
//! Each handle here sends DESTROY when dropped; a group made in a partition keeps the
//! partition alive and goes first.
//!
//! # Layouts and EU numbering (provisional)
//!
//! Both layouts are our reading of mstflint's adb (see `layouts::dpa`). `member_mask` is 32
//! dwords; this driver puts EU `n` at bit `n % 32` of dword `n / 32` (dword 0 first), as the
//! device model does. EU ids are checked against the topology of [`DpaCaps`]
//! ([`EuTopology::total_eus`](super::caps::EuTopology::total_eus)); which EUs the DPA OS
//! reserves is not public, so reserved ones are left to firmware to refuse.

use std::sync::Arc;

use crate::devx::{self, Devx};
use crate::mlx5::cmd::AccessRegisterUser;
use crate::mlx5::layout::{ArrayField, Field, Layout, View, ViewMut};
use crate::mlx5::layouts::dpa::reg_id;
use crate::mlx5::layouts::{nic_dpa_eu_partition_reg as part_reg, nic_dpa_eug_reg as eug_reg};

use super::caps::DpaCaps;
use super::DpaError;

/// `operation` of the EU registers.
mod operation {
    pub const CREATE: u64 = 0;
    pub const DESTROY: u64 = 2;
}

/// Bytes of `eug_name` (0x10: mstflint adb, docs/sources.md section 9).
pub const EUG_NAME_LEN: usize = 16;
/// Most vHCA ids one partition names (`num_vhca_id` is 8 bits wide).
pub const MAX_PARTITION_VHCAS: usize = 255;

/// Checks `eus` against the device's topology and returns them sorted, without duplicates.
fn checked_members(caps: &DpaCaps, eus: &[u32]) -> Result<Vec<u32>, DpaError> {
    if eus.is_empty() {
        return Err(DpaError::BadArgs("an empty set of EUs".into()));
    }
    let total = caps.topology.total_eus();
    if let Some(bad) = eus.iter().find(|&&eu| eu >= total) {
        return Err(DpaError::BadArgs(format!(
            "EU {bad} out of range (the DPA has {total} EUs)"
        )));
    }
    let mut v = eus.to_vec();
    v.sort_unstable();
    v.dedup();
    Ok(v)
}

/// Sets the bits of `members` in a `member_mask` array (EU n: bit n % 32 of dword n / 32).
fn put_mask<L: Layout>(
    v: &mut ViewMut<'_, L>,
    mask: ArrayField<L>,
    members: &[u32],
) -> Result<(), DpaError> {
    for &eu in members {
        let f = mask
            .at(eu / 32)
            .ok_or_else(|| DpaError::BadArgs(format!("EU {eu} beyond the register's mask")))?;
        let cur = v.get(f);
        v.set(f, cur | 1 << (eu % 32));
    }
    Ok(())
}

/// The EUs whose bits are set in a `member_mask` array.
fn get_mask<L: Layout>(v: &View<'_, L>, mask: ArrayField<L>) -> Vec<u32> {
    (0..mask.len())
        .filter_map(|i| mask.at(i).map(|f| (i, v.get(f))))
        .flat_map(|(i, w)| {
            (0..32)
                .filter(move |b| (w >> b) & 1 == 1)
                .map(move |b| i * 32 + b)
        })
        .collect()
}

/// Writes (or reads) one EU register and returns firmware's answer.
fn access(
    dev: &dyn Devx,
    register_id: u16,
    write: bool,
    data: Vec<u8>,
) -> Result<Vec<u8>, DpaError> {
    Ok(devx::exec(
        dev,
        &AccessRegisterUser {
            register_id,
            argument: 0,
            write,
            data,
        },
    )?)
}

/// A register image with only `operation` and the id set (for DESTROY and reads).
fn id_only<L: Layout, T, U>(
    operation: Field<L, T>,
    op: u64,
    id_field: Field<L, U>,
    id: u16,
) -> Vec<u8> {
    let mut d = vec![0u8; L::SIZE_BYTES];
    // The buffer is exactly the layout's size: `new` cannot fail.
    if let Ok(mut v) = ViewMut::<L>::new(&mut d) {
        v.set(operation, op);
        v.set(id_field, u64::from(id));
    }
    d
}

struct PartitionInner {
    dev: Arc<dyn Devx>,
    id: u16,
    members: Vec<u32>,
    /// [`EuPartition::keep`] (or a kept group in it): no DESTROY at the end.
    kept: std::sync::atomic::AtomicBool,
}

impl Drop for PartitionInner {
    fn drop(&mut self) {
        if self.kept.load(std::sync::atomic::Ordering::Relaxed) {
            return;
        }
        let d = id_only(
            part_reg::operation,
            operation::DESTROY,
            part_reg::eu_partition_id,
            self.id,
        );
        // A refused destroy on drop has nowhere to go.
        let _ = access(self.dev.as_ref(), reg_id::NIC_DPA_EU_PARTITION_REG, true, d);
    }
}

/// An EU partition (`NIC_DPA_EU_PARTITION_REG`); destroyed when dropped and no group made in
/// it ([`EuGroup::create_in`]) is left.
pub struct EuPartition {
    inner: Arc<PartitionInner>,
}

impl std::fmt::Debug for EuPartition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EuPartition")
            .field("id", &self.inner.id)
            .field("members", &self.inner.members)
            .finish_non_exhaustive()
    }
}

impl EuPartition {
    /// Creates a partition of the EUs `eus` for the functions `vhca_ids`, in which at most
    /// `max_num_eug` groups may be created.
    ///
    /// # Errors
    /// [`DpaError::NotSupported`] without a DPA; [`DpaError::BadArgs`] for no EU, an EU out of
    /// range or more than [`MAX_PARTITION_VHCAS`] vHCA ids; firmware's refusal.
    pub fn create(
        dev: &Arc<dyn Devx>,
        eus: &[u32],
        max_num_eug: u16,
        vhca_ids: &[u16],
    ) -> Result<EuPartition, DpaError> {
        let caps = DpaCaps::query(dev)?;
        let members = checked_members(&caps, eus)?;
        if vhca_ids.len() > MAX_PARTITION_VHCAS {
            return Err(DpaError::BadArgs(format!(
                "{} vHCA ids (at most {MAX_PARTITION_VHCAS})",
                vhca_ids.len()
            )));
        }
        let mut d = vec![0u8; part_reg::Layout::SIZE_BYTES];
        {
            let mut v = ViewMut::<part_reg::Layout>::new(&mut d)
                .map_err(|e| DpaError::Device(e.to_string()))?;
            v.set(part_reg::operation, operation::CREATE);
            v.set(part_reg::max_num_eug, u64::from(max_num_eug));
            v.set(part_reg::num_vhca_id, vhca_ids.len() as u64);
            for (i, &vhca) in vhca_ids.iter().enumerate() {
                if let Some(f) = part_reg::vhca_id.at(i as u32) {
                    v.set(f, u64::from(vhca));
                }
            }
            put_mask(&mut v, part_reg::member_mask, &members)?;
        }
        let answer = access(dev.as_ref(), reg_id::NIC_DPA_EU_PARTITION_REG, true, d)?;
        let v = View::<part_reg::Layout>::new(&answer)
            .map_err(|e| DpaError::Device(format!("NIC_DPA_EU_PARTITION_REG answer: {e}")))?;
        let id = v.get(part_reg::eu_partition_id) as u16;
        Ok(EuPartition {
            inner: Arc::new(PartitionInner {
                dev: Arc::clone(dev),
                id,
                members,
                kept: std::sync::atomic::AtomicBool::new(false),
            }),
        })
    }

    /// The partition id (`eu_partition_id`).
    pub fn id(&self) -> u16 {
        self.inner.id
    }

    /// Leaves the partition on the device when the handle goes (as the DPA management tool's
    /// partitions stay, for other programs to run in); returns its id. [`destroy_partition`]
    /// removes it later. How long the device keeps it is the device's rule: the model
    /// releases what a DevX context made when that context closes (docs/model-dpa.md, "EU partitions
    /// and groups").
    pub fn keep(self) -> u16 {
        self.inner
            .kept
            .store(true, std::sync::atomic::Ordering::Relaxed);
        self.inner.id
    }

    /// The EUs of the partition, ascending.
    pub fn members(&self) -> &[u32] {
        &self.inner.members
    }

    /// Reads the partition's register back and returns the EUs firmware holds for it.
    ///
    /// # Errors
    /// Firmware's refusal; a short answer.
    pub fn query_members(&self) -> Result<Vec<u32>, DpaError> {
        let d = id_only(
            part_reg::operation,
            0,
            part_reg::eu_partition_id,
            self.inner.id,
        );
        let answer = access(
            self.inner.dev.as_ref(),
            reg_id::NIC_DPA_EU_PARTITION_REG,
            false,
            d,
        )?;
        let v = View::<part_reg::Layout>::new(&answer)
            .map_err(|e| DpaError::Device(format!("NIC_DPA_EU_PARTITION_REG answer: {e}")))?;
        Ok(get_mask(&v, part_reg::member_mask))
    }
}

/// An EU group (`NIC_DPA_EUG_REG`); destroyed when dropped.
pub struct EuGroup {
    dev: Arc<dyn Devx>,
    id: u16,
    name: String,
    members: Vec<u32>,
    /// DESTROY was sent (by [`EuGroup::destroy`]); the drop sends nothing more.
    destroyed: bool,
    /// The partition the group was made in, kept until the group is destroyed.
    _partition: Option<Arc<PartitionInner>>,
}

impl std::fmt::Debug for EuGroup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EuGroup")
            .field("id", &self.id)
            .field("name", &self.name)
            .field("members", &self.members)
            .field("partition", &self._partition.as_ref().map(|p| p.id))
            .finish_non_exhaustive()
    }
}

impl EuGroup {
    /// Creates a group named `name` of the EUs `eus`.
    ///
    /// # Errors
    /// [`DpaError::NotSupported`] without a DPA; [`DpaError::BadArgs`] for no EU, an EU out of
    /// range, or a name longer than [`EUG_NAME_LEN`] bytes or holding a NUL; firmware's
    /// refusal.
    pub fn create(dev: &Arc<dyn Devx>, name: &str, eus: &[u32]) -> Result<EuGroup, DpaError> {
        let caps = DpaCaps::query(dev)?;
        let members = checked_members(&caps, eus)?;
        EuGroup::write_create(dev, name, members, None, None)
    }

    /// Creates a group named `name` of the EUs `eus` inside `partition`; every EU must be a
    /// member of the partition. The group keeps the partition alive.
    ///
    /// # Errors
    /// As [`EuGroup::create`], and [`DpaError::BadArgs`] for an EU outside the partition.
    pub fn create_in(
        partition: &EuPartition,
        name: &str,
        eus: &[u32],
    ) -> Result<EuGroup, DpaError> {
        let p = &partition.inner;
        let caps = DpaCaps::query(&p.dev)?;
        let members = checked_members(&caps, eus)?;
        if let Some(bad) = members.iter().find(|eu| !p.members.contains(eu)) {
            return Err(DpaError::BadArgs(format!(
                "EU {bad} is not in EU partition {}",
                p.id
            )));
        }
        EuGroup::write_create(&p.dev, name, members, Some(p.id), Some(Arc::clone(p)))
    }

    /// Creates a group in partition `partition_id`, one that exists on the device apart from
    /// this program (made by a management tool, [`EuPartition::keep`]); the handle does not
    /// keep the partition. Whether the EUs lie in it is firmware's to check (the device model
    /// checks only that they exist).
    ///
    /// # Errors
    /// As [`EuGroup::create`].
    pub fn create_in_id(
        dev: &Arc<dyn Devx>,
        name: &str,
        eus: &[u32],
        partition_id: u16,
    ) -> Result<EuGroup, DpaError> {
        let caps = DpaCaps::query(dev)?;
        let members = checked_members(&caps, eus)?;
        EuGroup::write_create(dev, name, members, Some(partition_id), None)
    }

    fn write_create(
        dev: &Arc<dyn Devx>,
        name: &str,
        members: Vec<u32>,
        partition_id: Option<u16>,
        partition: Option<Arc<PartitionInner>>,
    ) -> Result<EuGroup, DpaError> {
        if name.len() > EUG_NAME_LEN || name.contains('\0') {
            return Err(DpaError::BadArgs(format!(
                "EU group name {name:?}: at most {EUG_NAME_LEN} bytes, no NUL"
            )));
        }
        let mut d = vec![0u8; eug_reg::Layout::SIZE_BYTES];
        {
            let mut v = ViewMut::<eug_reg::Layout>::new(&mut d)
                .map_err(|e| DpaError::Device(e.to_string()))?;
            v.set(eug_reg::operation, operation::CREATE);
            if let Some(p) = partition_id {
                v.set(eug_reg::partition_id_valid, 1);
                v.set(eug_reg::partition_id, u64::from(p));
            }
            for (i, &b) in name.as_bytes().iter().enumerate() {
                if let Some(f) = eug_reg::eug_name.at(i as u32) {
                    v.set(f, u64::from(b));
                }
            }
            put_mask(&mut v, eug_reg::member_mask, &members)?;
        }
        let answer = access(dev.as_ref(), reg_id::NIC_DPA_EUG_REG, true, d)?;
        let v = View::<eug_reg::Layout>::new(&answer)
            .map_err(|e| DpaError::Device(format!("NIC_DPA_EUG_REG answer: {e}")))?;
        Ok(EuGroup {
            dev: Arc::clone(dev),
            id: v.get(eug_reg::eug_id) as u16,
            name: name.to_string(),
            members,
            destroyed: false,
            _partition: partition,
        })
    }

    /// The group id (`eug_id`): what [`Affinity::Group`](super::thread::Affinity::Group)
    /// names.
    pub fn id(&self) -> u16 {
        self.id
    }

    /// The name given at creation.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The EUs of the group, ascending.
    pub fn members(&self) -> &[u32] {
        &self.members
    }

    /// The partition the group was made in, if any.
    pub fn partition_id(&self) -> Option<u16> {
        self._partition.as_ref().map(|p| p.id)
    }

    /// Reads the group's register back and returns the EUs firmware holds for it.
    ///
    /// # Errors
    /// Firmware's refusal; a short answer.
    pub fn query_members(&self) -> Result<Vec<u32>, DpaError> {
        let d = id_only(eug_reg::operation, 0, eug_reg::eug_id, self.id);
        let answer = access(self.dev.as_ref(), reg_id::NIC_DPA_EUG_REG, false, d)?;
        let v = View::<eug_reg::Layout>::new(&answer)
            .map_err(|e| DpaError::Device(format!("NIC_DPA_EUG_REG answer: {e}")))?;
        Ok(get_mask(&v, eug_reg::member_mask))
    }

    /// Leaves the group (and the partition it was made in) on the device when the handle
    /// goes; returns its id. [`destroy_group`] removes it later (the model releases it with
    /// the context that made it, as [`EuPartition::keep`] says).
    pub fn keep(mut self) -> u16 {
        self.destroyed = true;
        if let Some(p) = &self._partition {
            p.kept.store(true, std::sync::atomic::Ordering::Relaxed);
        }
        self.id
    }

    /// Destroys the group now, reporting a refusal (dropping it destroys it too, silently).
    ///
    /// # Errors
    /// Firmware's refusal.
    pub fn destroy(mut self) -> Result<(), DpaError> {
        // Refused or not, the drop does not send it again.
        self.destroyed = true;
        self.write_destroy()
    }

    fn write_destroy(&self) -> Result<(), DpaError> {
        let d = id_only(
            eug_reg::operation,
            operation::DESTROY,
            eug_reg::eug_id,
            self.id,
        );
        access(self.dev.as_ref(), reg_id::NIC_DPA_EUG_REG, true, d)?;
        Ok(())
    }
}

impl Drop for EuGroup {
    fn drop(&mut self) {
        if !self.destroyed {
            // A refused destroy on drop has nowhere to go (`EuGroup::destroy` reports it); the
            // group then stays until the context closes. Busy is the usual refusal: a thread
            // bound to the group is still there.
            let _ = self.write_destroy();
        }
    }
}

/// A partition as its register reads back (serialized as `mlx5-dpa eu show --json` prints
/// it).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PartitionInfo {
    pub id: u16,
    /// EUs, ascending.
    #[serde(rename = "eus")]
    pub members: Vec<u32>,
    /// The functions the partition is given to.
    pub vhca_ids: Vec<u16>,
    /// Most groups that may be made in it (`max_num_eug`).
    pub max_groups: u16,
}

/// A group as its register reads back (serialized as `mlx5-dpa eu show --json` prints it).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct GroupInfo {
    pub id: u16,
    pub name: String,
    /// EUs, ascending.
    #[serde(rename = "eus")]
    pub members: Vec<u32>,
    /// The partition it was made in (`partition_id_valid`).
    pub partition: Option<u16>,
}

/// Reads partition `id`.
///
/// # Errors
/// Firmware's refusal (no such partition), a short answer.
pub fn read_partition(dev: &dyn Devx, id: u16) -> Result<PartitionInfo, DpaError> {
    let d = id_only(part_reg::operation, 0, part_reg::eu_partition_id, id);
    let answer = access(dev, reg_id::NIC_DPA_EU_PARTITION_REG, false, d)?;
    let v = View::<part_reg::Layout>::new(&answer)
        .map_err(|e| DpaError::Device(format!("NIC_DPA_EU_PARTITION_REG answer: {e}")))?;
    let n = v.get(part_reg::num_vhca_id) as u32;
    Ok(PartitionInfo {
        id,
        members: get_mask(&v, part_reg::member_mask),
        vhca_ids: (0..n)
            .filter_map(|i| part_reg::vhca_id.at(i).map(|f| v.get(f) as u16))
            .collect(),
        max_groups: v.get(part_reg::max_num_eug) as u16,
    })
}

/// Reads group `id`.
///
/// # Errors
/// Firmware's refusal (no such group), a short answer.
pub fn read_group(dev: &dyn Devx, id: u16) -> Result<GroupInfo, DpaError> {
    let d = id_only(eug_reg::operation, 0, eug_reg::eug_id, id);
    let answer = access(dev, reg_id::NIC_DPA_EUG_REG, false, d)?;
    let v = View::<eug_reg::Layout>::new(&answer)
        .map_err(|e| DpaError::Device(format!("NIC_DPA_EUG_REG answer: {e}")))?;
    let name: Vec<u8> = (0..EUG_NAME_LEN as u32)
        .filter_map(|i| eug_reg::eug_name.at(i).map(|f| v.get(f) as u8))
        .take_while(|&b| b != 0)
        .collect();
    Ok(GroupInfo {
        id,
        name: String::from_utf8_lossy(&name).into_owned(),
        members: get_mask(&v, eug_reg::member_mask),
        partition: (v.get(eug_reg::partition_id_valid) == 1)
            .then(|| v.get(eug_reg::partition_id) as u16),
    })
}

/// Destroys partition `id` (one kept by [`EuPartition::keep`], or made by another program).
///
/// # Errors
/// Firmware's refusal.
pub fn destroy_partition(dev: &dyn Devx, id: u16) -> Result<(), DpaError> {
    let d = id_only(
        part_reg::operation,
        operation::DESTROY,
        part_reg::eu_partition_id,
        id,
    );
    access(dev, reg_id::NIC_DPA_EU_PARTITION_REG, true, d)?;
    Ok(())
}

/// Destroys group `id`.
///
/// # Errors
/// Firmware's refusal.
pub fn destroy_group(dev: &dyn Devx, id: u16) -> Result<(), DpaError> {
    let d = id_only(eug_reg::operation, operation::DESTROY, eug_reg::eug_id, id);
    access(dev, reg_id::NIC_DPA_EUG_REG, true, d)?;
    Ok(())
}
