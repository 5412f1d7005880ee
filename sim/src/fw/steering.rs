//! TIS, TIR, RQT and NIC receive flow steering commands.

use mlx5_dpa::mlx5::layouts as l;

use super::{inbox, outbox, owned, size, Firmware};
use crate::check::{self, Check};
use crate::state::objects::*;

/// Destination types (PRM `dest_format_struct.destination_type`).
mod dest_type {
    pub(super) const FLOW_TABLE: u64 = 0x1;
    pub(super) const TIR: u64 = 0x2;
}

/// Byte offset and length of the outer headers inside `fte_match_param`.
const OUTER: std::ops::Range<usize> = 0..64;

impl Firmware {
    pub(super) fn create_tis(
        &mut self,
        uid: u16,
        inb: &[u8],
        out: &mut [u8],
    ) -> Result<ObjRef, Check> {
        use l::create_tis_in as m;
        let v = inbox::<m::Layout>(inb)?;
        let mut o = outbox::<l::create_tis_out::Layout>(out)?;
        let td = v.value(m::ctx.at(l::tisc::transport_domain));
        let t = self.tds.get(td).ok_or(check::NO_SUCH_TD)?;
        owned(&t.meta, uid)?;
        if v.get(m::ctx.at(l::tisc::tls_en)) != 0 {
            return Err(check::NOT_SUPPORTED);
        }
        let tisn = self
            .tises
            .insert(Tis {
                meta: Meta::new(uid),
                td,
            })
            .ok_or(check::TOO_MANY_OBJECTS)?;
        if let Some(t) = self.tds.get_mut(td) {
            t.meta.refs += 1;
        }
        o.set(l::create_tis_out::tisn, u64::from(tisn));
        Ok(ObjRef::Tis(tisn))
    }

    pub(super) fn create_tir(
        &mut self,
        uid: u16,
        inb: &[u8],
        out: &mut [u8],
    ) -> Result<ObjRef, Check> {
        use l::create_tir_in as m;
        use l::tirc;
        let v = inbox::<m::Layout>(inb)?;
        let mut o = outbox::<l::create_tir_out::Layout>(out)?;
        let c = m::ctx;
        let td = v.value(c.at(tirc::transport_domain));
        // Transport domain 0 is none (domains are numbered from 1 here): DPDK's mlx5 driver
        // creates its drop TIR with it before any transport domain of its own exists, and
        // firmware takes it. Such a TIR shares no domain with any TIS, so self-loopback
        // blocking never applies to it.
        if td != 0 {
            let t = self.tds.get(td).ok_or(check::NO_SUCH_TD)?;
            owned(&t.meta, uid)?;
        }
        if v.get(c.at(tirc::lro_enable_mask)) != 0 || v.get(c.at(tirc::tunneled_offload_en)) != 0 {
            return Err(check::NOT_SUPPORTED);
        }
        // disp_type: 0 direct (inline_rqn), 1 indirect (RQT) (PRM).
        let dispatch = match v.get(c.at(tirc::disp_type)) {
            0 => {
                let rqn = v.value(c.at(tirc::inline_rqn));
                let rq = self.rqs.get(rqn).ok_or(check::NO_SUCH_RQ)?;
                owned(&rq.meta, uid)?;
                Dispatch::Direct(rqn)
            }
            1 => {
                let rqtn = v.value(c.at(tirc::indirect_table));
                let rqt = self.rqts.get(rqtn).ok_or(check::NO_SUCH_RQT)?;
                owned(&rqt.meta, uid)?;
                // rx_hash_fn: 0 none, 1 xor8, 2 toeplitz (PRM). The model hashes with
                // Toeplitz only when asked; none/xor8 pick by a plain fold.
                if v.get(c.at(tirc::rx_hash_fn)) > 2 {
                    return Err(check::BAD_HASH_FN);
                }
                Dispatch::Indirect(rqtn)
            }
            _ => return Err(check::BAD_DISP_TYPE),
        };
        let raw: Box<[u8]> = v.bytes()[size::<l::mbox_in::Layout>()..size::<m::Layout>()].into();
        let tirn = self
            .tirs
            .insert(Tir {
                meta: Meta::new(uid),
                td,
                dispatch,
                self_lb_block: v.value(c.at(tirc::self_lb_block)),
                raw,
            })
            .ok_or(check::TOO_MANY_OBJECTS)?;
        if let Some(t) = self.tds.get_mut(td) {
            t.meta.refs += 1;
        }
        match dispatch {
            Dispatch::Direct(rq) => {
                if let Some(r) = self.rqs.get_mut(rq) {
                    r.meta.refs += 1;
                }
            }
            Dispatch::Indirect(rqt) => {
                if let Some(r) = self.rqts.get_mut(rqt) {
                    r.meta.refs += 1;
                }
            }
        }
        o.set(l::create_tir_out::tirn, u64::from(tirn));
        Ok(ObjRef::Tir(tirn))
    }

    pub(super) fn create_rqt(
        &mut self,
        uid: u16,
        inb: &[u8],
        out: &mut [u8],
    ) -> Result<ObjRef, Check> {
        use l::create_rqt_in as m;
        use l::rqtc;
        let v = inbox::<m::Layout>(inb)?;
        let mut o = outbox::<l::create_rqt_out::Layout>(out)?;
        let max = v.get(m::rqt_context.at(rqtc::rqt_max_size));
        let actual = v.get(m::rqt_context.at(rqtc::rqt_actual_size));
        if max > 1 << self.profile.cap(l::cmd_hca_cap::log_max_rqt_size) {
            return Err(check::ABOVE_CAP);
        }
        if actual == 0 || actual > max {
            return Err(check::BAD_RQT_SIZE);
        }
        let mut rqs = Vec::with_capacity(actual as usize);
        for i in 0..actual as usize {
            let rqn = v
                .flex_get(m::rq_num, i)
                .map_err(|_| check::INBOX_TOO_SHORT)? as u32
                & 0xff_ffff;
            let rq = self.rqs.get(rqn).ok_or(check::NO_SUCH_RQ)?;
            owned(&rq.meta, uid)?;
            rqs.push(rqn);
        }
        for rq in &rqs {
            if let Some(r) = self.rqs.get_mut(*rq) {
                r.meta.refs += 1;
            }
        }
        let Some(rqtn) = self.rqts.insert(Rqt {
            meta: Meta::new(uid),
            rqs: rqs.clone(),
        }) else {
            for rq in rqs {
                super::unref(self.rqs.get_mut(rq).map(|r| &mut r.meta));
            }
            return Err(check::TOO_MANY_OBJECTS);
        };
        o.set(l::create_rqt_out::rqtn, u64::from(rqtn));
        Ok(ObjRef::Rqt(rqtn))
    }

    pub(super) fn create_flow_table(
        &mut self,
        uid: u16,
        inb: &[u8],
        out: &mut [u8],
    ) -> Result<ObjRef, Check> {
        use l::create_flow_table_in as m;
        use l::flow_table_context as f;
        let v = inbox::<m::Layout>(inb)?;
        let mut o = outbox::<l::create_flow_table_out::Layout>(out)?;
        if self.profile.cap(l::cmd_hca_cap::nic_flow_table) == 0 {
            return Err(check::NOT_SUPPORTED);
        }
        if v.get(m::other_vport) != 0 {
            return Err(check::NOT_SUPPORTED);
        }
        let table_type = v.value(m::table_type);
        if table_type != TABLE_TYPE_NIC_RX {
            return Err(check::BAD_TABLE_TYPE);
        }
        let c = m::flow_table_context;
        if v.get(c.at(f::reformat_en)) != 0
            || v.get(c.at(f::decap_en)) != 0
            || v.get(c.at(f::sw_owner)) != 0
        {
            return Err(check::NOT_SUPPORTED);
        }
        // table_miss_action 0 = default (drop at the NIC RX root), others not modelled.
        if v.get(c.at(f::table_miss_action)) != 0 {
            return Err(check::NOT_SUPPORTED);
        }
        let log_size = v.get(c.at(f::log_size));
        if log_size > 24 {
            return Err(check::BAD_LOG_SIZE);
        }
        self.table_seq += 1;
        let id = self
            .tables
            .insert(FlowTable {
                meta: Meta::new(uid),
                table_type,
                level: v.value(c.at(f::level)),
                size: 1 << log_size,
                groups: Vec::new(),
                entries: Default::default(),
                created: self.table_seq,
                lookup: None,
            })
            .ok_or(check::TOO_MANY_OBJECTS)?;
        self.steering_gen += 1;
        o.set(l::create_flow_table_out::table_id, u64::from(id));
        Ok(ObjRef::FlowTable { table_type, id })
    }

    fn table_of(&self, uid: u16, table_type: u8, id: u32) -> Result<&FlowTable, Check> {
        let t = self.tables.get(id).ok_or(check::NO_SUCH_FLOW_TABLE)?;
        owned(&t.meta, uid)?;
        if t.table_type != table_type {
            return Err(check::TABLE_TYPE_MISMATCH);
        }
        Ok(t)
    }

    pub(super) fn create_flow_group(
        &mut self,
        uid: u16,
        inb: &[u8],
        out: &mut [u8],
    ) -> Result<ObjRef, Check> {
        use l::create_flow_group_in as m;
        let v = inbox::<m::Layout>(inb)?;
        let mut o = outbox::<l::create_flow_group_out::Layout>(out)?;
        let table_type = v.value(m::table_type);
        let table = v.value(m::table_id);
        let t = self.table_of(uid, table_type, table)?;
        let (start, end) = (v.value(m::start_flow_index), v.value(m::end_flow_index));
        if start > end || end >= t.size {
            return Err(check::GROUP_RANGE_BAD);
        }
        for g in &t.groups {
            if let Some(g) = self.groups.get(*g) {
                if start <= g.end && g.start <= end {
                    return Err(check::GROUP_RANGE_BAD);
                }
            }
        }
        // match_criteria_enable: bit 0 outer headers (the only criteria the model matches).
        let enable = v.get(m::match_criteria_enable);
        if enable & !1 != 0 {
            return Err(check::BAD_MATCH_CRITERIA);
        }
        let mut mask = [0u8; 64];
        if enable & 1 != 0 {
            let at = (m::match_criteria.offset() / 8) as usize;
            mask.copy_from_slice(&inb[at + OUTER.start..at + OUTER.end]);
        }
        let id = self
            .groups
            .insert(FlowGroup {
                meta: Meta::new(uid),
                table,
                start,
                end,
                mask,
            })
            .ok_or(check::TOO_MANY_OBJECTS)?;
        if let Some(t) = self.tables.get_mut(table) {
            t.groups.push(id);
            t.lookup = None;
        }
        self.steering_gen += 1;
        o.set(l::create_flow_group_out::group_id, u64::from(id));
        Ok(ObjRef::FlowGroup {
            table_type,
            table,
            id,
        })
    }

    pub(super) fn set_fte(
        &mut self,
        uid: u16,
        inb: &[u8],
        out: &mut [u8],
    ) -> Result<ObjRef, Check> {
        use l::flow_context as fc;
        use l::set_fte_in as m;
        let v = inbox::<m::Layout>(inb)?;
        outbox::<l::set_fte_out::Layout>(out)?;
        // op_mod 0 = new entry, 1 = modify (not implemented by the model).
        match v.get(m::op_mod) {
            0 => {}
            1 => return Err(check::NOT_SUPPORTED),
            _ => return Err(check::BAD_OP_MOD),
        }
        let table_type = v.value(m::table_type);
        let table = v.value(m::table_id);
        let index = v.value(m::flow_index);
        let t = self.table_of(uid, table_type, table)?;
        if t.entries.contains_key(&index) {
            return Err(check::FLOW_INDEX_TAKEN);
        }
        let c = m::flow_context;
        let group = v.value(c.at(fc::group_id));
        let g = self
            .groups
            .get(group)
            .filter(|g| g.table == table)
            .ok_or(check::NO_SUCH_FLOW_GROUP)?;
        if index < g.start || index > g.end {
            return Err(check::FLOW_INDEX_OUTSIDE_GROUP);
        }
        let action = v.value(c.at(fc::action));
        let known = action::ALLOW | action::DROP | action::FWD_DEST | action::COUNT;
        if action & !known != 0 {
            return Err(check::BAD_ACTION);
        }
        // COUNT names its counter in the counter list that follows the destinations; the
        // model keeps one counter per entry.
        let n_counters = v.get(c.at(fc::flow_counter_list_size)) as usize;
        if (action & action::COUNT != 0) != (n_counters > 0) {
            return Err(check::BAD_ACTION);
        }
        if n_counters > 1 {
            return Err(check::ABOVE_CAP);
        }
        let n_dest = v.get(c.at(fc::destination_list_size)) as usize;
        let fwd = action & action::FWD_DEST != 0;
        if fwd == (n_dest == 0) || (action & action::DROP != 0 && fwd) {
            return Err(check::BAD_ACTION);
        }
        if n_dest > 16 {
            return Err(check::ABOVE_CAP);
        }
        let mut dests = Vec::with_capacity(n_dest);
        for i in 0..n_dest {
            // dest_format_struct entries are 64 bits each: type (8) and id (24).
            let word = v
                .flex_get(m::destination, i)
                .map_err(|_| check::INBOX_TOO_SHORT)?;
            let (ty, id) = (word >> 56, ((word >> 32) & 0xff_ffff) as u32);
            dests.push(match ty {
                dest_type::TIR => {
                    let tir = self.tirs.get(id).ok_or(check::NO_SUCH_TIR)?;
                    owned(&tir.meta, uid)?;
                    Dest::Tir(id)
                }
                dest_type::FLOW_TABLE => {
                    let next = self.tables.get(id).ok_or(check::NO_SUCH_FLOW_TABLE)?;
                    owned(&next.meta, uid)?;
                    // A forward must go to a deeper level (PRM), which also rules out loops.
                    if next.level <= self.tables.get(table).map(|t| t.level).unwrap_or(0) {
                        return Err(check::BAD_DESTINATION);
                    }
                    Dest::Table(id)
                }
                _ => return Err(check::BAD_DESTINATION),
            });
        }
        let counter = if n_counters == 1 {
            // flow_counter_list: the counter's id in the entry's upper 32 bits.
            let word = v
                .flex_get(m::destination, n_dest)
                .map_err(|_| check::INBOX_TOO_SHORT)?;
            let id = (word >> 32) as u32;
            let fc = self
                .flow_counters
                .get(id)
                .ok_or(check::NO_SUCH_FLOW_COUNTER)?;
            owned(&fc.meta, uid)?;
            Some(id)
        } else {
            None
        };
        let at = ((m::flow_context.offset() + fc::match_value.offset()) / 8) as usize;
        let mut value = [0u8; 64];
        value.copy_from_slice(&inb[at + OUTER.start..at + OUTER.end]);
        let mask = self.groups.get(group).map(|g| g.mask).unwrap_or([0; 64]);
        for (b, m) in value.iter_mut().zip(mask) {
            *b &= m;
        }
        for d in &dests {
            match *d {
                Dest::Tir(t) => {
                    if let Some(t) = self.tirs.get_mut(t) {
                        t.meta.refs += 1;
                    }
                }
                Dest::Table(t) => {
                    if let Some(t) = self.tables.get_mut(t) {
                        t.meta.refs += 1;
                    }
                }
            }
        }
        if let Some(g) = self.groups.get_mut(group) {
            g.meta.refs += 1;
        }
        if let Some(c) = counter.and_then(|c| self.flow_counters.get_mut(c)) {
            c.meta.refs += 1;
        }
        let flow_tag = v.value(c.at(fc::flow_tag));
        self.steering_gen += 1;
        if let Some(t) = self.tables.get_mut(table) {
            t.lookup = None;
            t.entries.insert(
                index,
                Fte {
                    meta: Meta::new(uid),
                    group,
                    action,
                    dests,
                    counter,
                    flow_tag,
                    value,
                },
            );
        }
        Ok(ObjRef::Fte {
            table_type,
            table,
            index,
        })
    }

    pub(super) fn set_flow_table_root(&mut self, uid: u16, inb: &[u8]) -> Result<(), Check> {
        use l::set_flow_table_root_in as m;
        let v = inbox::<m::Layout>(inb)?;
        let table_type = v.value(m::table_type);
        let id = v.value(m::table_id);
        self.table_of(uid, table_type, id)?;
        self.root_table = Some(id);
        self.steering_gen += 1;
        Ok(())
    }
}
