//! Destroying objects: the one decoder of every destroy inbox (through the layouts of
//! `layouts/destroy.rs` and the object layouts), the inbox the kernel builds for
//! `DEVX_OBJ_DESTROY` (its inverse), and the destroy itself: ownership and reference checks,
//! then what each kind of object releases.

use mlx5_dpa::mlx5::layout::{Field, Layout, View, ViewMut};
use mlx5_dpa::mlx5::layouts as l;
use mlx5_dpa::mlx5::Opcode;

use super::{inbox, owned, uar_unref, unref, Firmware};
use crate::check::{self, Check};
use crate::slab::Slab;
use crate::state::objects::*;

/// The objects destroyed by one number: variant, opcode, inbox layout and number field.
macro_rules! by_number {
    ($m:ident!($($args:tt)*)) => {
        $m!($($args)*
            Pd: DEALLOC_PD, dealloc_pd_in, pd;
            Td: DEALLOC_TRANSPORT_DOMAIN, dealloc_transport_domain_in, transport_domain;
            Mkey: DESTROY_MKEY, destroy_mkey_in, mkey_index;
            Cq: DESTROY_CQ, destroy_cq_in, cqn;
            Sq: DESTROY_SQ, destroy_sq_in, sqn;
            Rq: DESTROY_RQ, destroy_rq_in, rqn;
            Rmp: DESTROY_RMP, destroy_rmp_in, rmpn;
            Tis: DESTROY_TIS, destroy_tis_in, tisn;
            Tir: DESTROY_TIR, destroy_tir_in, tirn;
            Rqt: DESTROY_RQT, destroy_rqt_in, rqtn;
            QCounter: DEALLOC_Q_COUNTER, dealloc_q_counter_in, counter_set_id;
            FlowCounter: DEALLOC_FLOW_COUNTER, dealloc_flow_counter_in, flow_counter_id;
            Qp: DESTROY_QP, destroy_qp_in, qpn;
        )
    };
}

/// The object a destroy, dealloc or delete inbox names; `None` for any other opcode.
///
/// # Errors
/// The inbox is shorter than its layout.
pub(crate) fn destroyed_object(op: Opcode, inb: &[u8]) -> Option<Result<ObjRef, Check>> {
    fn num<L: Layout, T>(inb: &[u8], f: Field<L, T>) -> Result<u32, Check> {
        Ok(inbox::<L>(inb)?.get(f) as u32)
    }
    macro_rules! decode {
        ($op:ident, $inb:ident, $($v:ident: $opc:ident, $lay:ident, $field:ident;)*) => {
            match $op {
                $(Opcode::$opc => Some(num($inb, l::$lay::$field).map(ObjRef::$v)),)*
                Opcode::DESTROY_FLOW_TABLE => Some(inbox::<l::destroy_flow_table_in::Layout>($inb).map(|v| {
                    ObjRef::FlowTable {
                        table_type: v.value(l::destroy_flow_table_in::table_type),
                        id: v.value(l::destroy_flow_table_in::table_id),
                    }
                })),
                Opcode::DESTROY_FLOW_GROUP => Some(inbox::<l::destroy_flow_group_in::Layout>($inb).map(|v| {
                    ObjRef::FlowGroup {
                        table_type: v.value(l::destroy_flow_group_in::table_type),
                        table: v.value(l::destroy_flow_group_in::table_id),
                        id: v.value(l::destroy_flow_group_in::group_id),
                    }
                })),
                Opcode::DELETE_FLOW_TABLE_ENTRY => Some(inbox::<l::delete_fte_in::Layout>($inb).map(|v| {
                    ObjRef::Fte {
                        table_type: v.value(l::delete_fte_in::table_type),
                        table: v.value(l::delete_fte_in::table_id),
                        index: v.value(l::delete_fte_in::flow_index),
                    }
                })),
                Opcode::DESTROY_GENERAL_OBJECT => Some(general(&$inb)),
                _ => None,
            }
        };
    }
    by_number!(decode!(op, inb,))
}

fn general(inb: &[u8]) -> Result<ObjRef, Check> {
    use l::general_obj_in_cmd_hdr as h;
    let v: View<'_, h::Layout> = inbox(inb)?;
    Ok(ObjRef::General {
        obj_type: v.value(h::obj_type),
        id: v.value(h::obj_id),
    })
}

/// Builds the destroy command the kernel sends for `obj` (what `DEVX_OBJ_DESTROY` runs).
pub fn destroy_inbox(obj: ObjRef) -> Vec<u8> {
    fn build<L: Layout, T>(
        opcode: Field<L, T>,
        op: Opcode,
        set: impl FnOnce(&mut ViewMut<'_, L>),
    ) -> Vec<u8> {
        let mut b = vec![0u8; L::SIZE_BYTES];
        if let Ok(mut v) = ViewMut::<L>::new(&mut b) {
            v.set(opcode, u64::from(op.0));
            set(&mut v);
        }
        b
    }
    macro_rules! encode {
        ($obj:ident, $($v:ident: $opc:ident, $lay:ident, $field:ident;)*) => {
            match $obj {
                $(ObjRef::$v(id) => build(l::$lay::opcode, Opcode::$opc, |v| {
                    v.set(l::$lay::$field, u64::from(id))
                }),)*
                ObjRef::FlowTable { table_type, id } => {
                    use l::destroy_flow_table_in as t;
                    build(t::opcode, Opcode::DESTROY_FLOW_TABLE, |v| {
                        v.set(t::table_type, u64::from(table_type));
                        v.set(t::table_id, u64::from(id));
                    })
                }
                ObjRef::FlowGroup { table_type, table, id } => {
                    use l::destroy_flow_group_in as g;
                    build(g::opcode, Opcode::DESTROY_FLOW_GROUP, |v| {
                        v.set(g::table_type, u64::from(table_type));
                        v.set(g::table_id, u64::from(table));
                        v.set(g::group_id, u64::from(id));
                    })
                }
                ObjRef::Fte { table_type, table, index } => {
                    use l::delete_fte_in as e;
                    build(e::opcode, Opcode::DELETE_FLOW_TABLE_ENTRY, |v| {
                        v.set(e::table_type, u64::from(table_type));
                        v.set(e::table_id, u64::from(table));
                        v.set(e::flow_index, u64::from(index));
                    })
                }
                ObjRef::General { obj_type, id } => {
                    use l::general_obj_in_cmd_hdr as h;
                    build(h::opcode, Opcode::DESTROY_GENERAL_OBJECT, |v| {
                        v.set(h::obj_type, u64::from(obj_type));
                        v.set(h::obj_id, u64::from(id));
                    })
                }
            }
        };
    }
    by_number!(encode!(obj,))
}

/// The object a modify, query or destroy inbox names (the kernel checks it against the
/// handle).
pub fn object_of_inbox(inb: &[u8]) -> Option<ObjRef> {
    if inb.len() < 16 {
        return None;
    }
    let op = Opcode(u16::from_be_bytes([inb[0], inb[1]]));
    let id24 = u32::from_be_bytes([0, inb[9], inb[10], inb[11]]);
    Some(match op {
        Opcode::MODIFY_CQ | Opcode::QUERY_CQ => ObjRef::Cq(id24),
        Opcode::MODIFY_SQ | Opcode::QUERY_SQ => ObjRef::Sq(id24),
        Opcode::MODIFY_RQ | Opcode::QUERY_RQ => ObjRef::Rq(id24),
        Opcode::MODIFY_RMP | Opcode::QUERY_RMP => ObjRef::Rmp(id24),
        Opcode::MODIFY_TIS | Opcode::QUERY_TIS => ObjRef::Tis(id24),
        Opcode::MODIFY_TIR | Opcode::QUERY_TIR => ObjRef::Tir(id24),
        Opcode::MODIFY_RQT | Opcode::QUERY_RQT => ObjRef::Rqt(id24),
        Opcode::QUERY_MKEY => ObjRef::Mkey(id24),
        Opcode::QUERY_QP => ObjRef::Qp(id24),
        // The kernel finds these counters' numbers where their query inboxes hold them.
        Opcode::QUERY_Q_COUNTER => ObjRef::QCounter(u32::from(*inb.get(31)?)),
        Opcode::QUERY_FLOW_COUNTER => {
            ObjRef::FlowCounter(u32::from_be_bytes(inb.get(28..32)?.try_into().ok()?))
        }
        op if op.is_qp_transition() => ObjRef::Qp(id24),
        Opcode::MODIFY_GENERAL_OBJECT | Opcode::QUERY_GENERAL_OBJECT => general(inb).ok()?,
        op => return destroyed_object(op, inb)?.ok(),
    })
}

/// Removes object `id` of `slab` for `uid` when it is the owner's and nothing refers to it.
fn take<T>(
    slab: &mut Slab<T>,
    id: u32,
    uid: u16,
    meta: impl Fn(&T) -> &Meta,
    missing: Check,
) -> Result<T, Check> {
    let m = meta(slab.get(id).ok_or(missing)?);
    owned(m, uid)?;
    if m.refs != 0 {
        return Err(check::OBJECT_IN_USE);
    }
    slab.remove(id).ok_or(missing)
}

impl Firmware {
    /// Destroys an object after the reference and ownership checks.
    pub(crate) fn destroy(&mut self, uid: u16, obj: ObjRef) -> Result<(), Check> {
        match obj {
            ObjRef::Pd(id) => {
                take(&mut self.pds, id, uid, |o| &o.meta, check::NO_SUCH_PD)?;
            }
            ObjRef::Td(id) => {
                take(&mut self.tds, id, uid, |o| &o.meta, check::NO_SUCH_TD)?;
            }
            ObjRef::Mkey(id) => {
                let m = take(&mut self.mkeys, id, uid, |o| &o.meta, check::NO_SUCH_MKEY)?;
                self.mem.unpin(m.umem);
                unref(self.pds.get_mut(m.pd).map(|p| &mut p.meta));
            }
            ObjRef::Cq(id) => {
                let c = take(&mut self.cqs, id, uid, |o| &o.meta, check::NO_SUCH_CQ)?;
                self.mem.unpin(c.ring_umem);
                self.mem.unpin(c.dbr_umem);
                uar_unref(&mut self.uars, c.uar_page);
                match c.target {
                    CqTarget::Eq(_) => {}
                    CqTarget::DpaThread(t) | CqTarget::DpaEq(t) => {
                        unref(self.gen.get_mut(t).map(|g| &mut g.meta));
                    }
                }
            }
            ObjRef::Sq(id) => {
                let s = take(&mut self.sqs, id, uid, |o| &o.meta, check::NO_SUCH_SQ)?;
                self.release_wq(&s.wq);
                unref(self.cqs.get_mut(s.cqn).map(|c| &mut c.meta));
                unref(self.tises.get_mut(s.tis).map(|t| &mut t.meta));
            }
            ObjRef::Rq(id) => {
                let r = take(&mut self.rqs, id, uid, |o| &o.meta, check::NO_SUCH_RQ)?;
                self.release_wq(&r.wq);
                unref(self.cqs.get_mut(r.cqn).map(|c| &mut c.meta));
                unref(self.q_counters.get_mut(r.q_counter).map(|q| &mut q.meta));
            }
            ObjRef::Rmp(id) => {
                let r = take(&mut self.rmps, id, uid, |o| &o.meta, check::NO_SUCH_RMP)?;
                self.release_wq(&r.wq);
            }
            ObjRef::Tis(id) => {
                let t = take(&mut self.tises, id, uid, |o| &o.meta, check::NO_SUCH_TIS)?;
                unref(self.tds.get_mut(t.td).map(|t| &mut t.meta));
            }
            ObjRef::Tir(id) => {
                let t = take(&mut self.tirs, id, uid, |o| &o.meta, check::NO_SUCH_TIR)?;
                unref(self.tds.get_mut(t.td).map(|t| &mut t.meta));
                match t.dispatch {
                    Dispatch::Direct(rq) => unref(self.rqs.get_mut(rq).map(|r| &mut r.meta)),
                    Dispatch::Indirect(rqt) => unref(self.rqts.get_mut(rqt).map(|r| &mut r.meta)),
                }
            }
            ObjRef::Rqt(id) => {
                let r = take(&mut self.rqts, id, uid, |o| &o.meta, check::NO_SUCH_RQT)?;
                for rq in r.rqs {
                    unref(self.rqs.get_mut(rq).map(|r| &mut r.meta));
                }
            }
            ObjRef::QCounter(id) => {
                take(
                    &mut self.q_counters,
                    id,
                    uid,
                    |o| &o.meta,
                    check::NO_SUCH_Q_COUNTER,
                )?;
            }
            ObjRef::FlowCounter(id) => {
                take(
                    &mut self.flow_counters,
                    id,
                    uid,
                    |o| &o.meta,
                    check::NO_SUCH_FLOW_COUNTER,
                )?;
            }
            ObjRef::FlowTable { .. } | ObjRef::FlowGroup { .. } | ObjRef::Fte { .. } => {
                self.destroy_steering(uid, obj)?;
            }
            ObjRef::Qp(id) => {
                let q = take(&mut self.qps, id, uid, |o| &o.meta, check::NO_SUCH_QP)?;
                self.mem.unpin(q.ring_umem);
                self.mem.unpin(q.dbr_umem);
                uar_unref(&mut self.uars, q.uar_page);
                unref(self.pds.get_mut(q.pd).map(|p| &mut p.meta));
                for c in [q.cqn_snd, q.cqn_rcv].into_iter().flatten() {
                    unref(self.cqs.get_mut(c).map(|c| &mut c.meta));
                }
                if let Some(r) = q.srq {
                    unref(self.rmps.get_mut(r).map(|r| &mut r.meta));
                }
            }
            ObjRef::General { obj_type, id } => {
                let g = self.gen.get(id).ok_or(check::NO_SUCH_OBJECT)?;
                if g.obj_type != obj_type {
                    return Err(check::WRONG_OBJ_TYPE);
                }
                self.dpa_check_destroy(obj_type, id)?;
                let g = take(&mut self.gen, id, uid, |o| &o.meta, check::NO_SUCH_OBJECT)?;
                self.dpa_released(id, &g);
                self.release_general(id, g);
            }
        }
        Ok(())
    }

    /// Destroys a flow table, group or entry (a table only empty, a group only of its table).
    fn destroy_steering(&mut self, uid: u16, obj: ObjRef) -> Result<(), Check> {
        // Decisions cached by the datapath are of the old tables (raised even when the
        // destroy fails: a decision dropped is only made again).
        self.steering_gen += 1;
        match obj {
            ObjRef::FlowTable { table_type, id } => {
                let t = self.tables.get(id).ok_or(check::NO_SUCH_FLOW_TABLE)?;
                if t.table_type != table_type {
                    return Err(check::TABLE_TYPE_MISMATCH);
                }
                if !t.groups.is_empty() || !t.entries.is_empty() {
                    return Err(check::OBJECT_IN_USE);
                }
                take(
                    &mut self.tables,
                    id,
                    uid,
                    |o| &o.meta,
                    check::NO_SUCH_FLOW_TABLE,
                )?;
                if self.root_table == Some(id) {
                    self.root_table = None;
                }
            }
            ObjRef::FlowGroup {
                table_type,
                table,
                id,
            } => {
                let t = self.tables.get(table).ok_or(check::NO_SUCH_FLOW_TABLE)?;
                if t.table_type != table_type {
                    return Err(check::TABLE_TYPE_MISMATCH);
                }
                let g = self.groups.get(id).ok_or(check::NO_SUCH_FLOW_GROUP)?;
                if g.table != table {
                    return Err(check::NO_SUCH_FLOW_GROUP);
                }
                take(
                    &mut self.groups,
                    id,
                    uid,
                    |o| &o.meta,
                    check::NO_SUCH_FLOW_GROUP,
                )?;
                if let Some(t) = self.tables.get_mut(table) {
                    t.groups.retain(|g| *g != id);
                    t.lookup = None;
                }
            }
            ObjRef::Fte {
                table_type,
                table,
                index,
            } => {
                let t = self
                    .tables
                    .get_mut(table)
                    .ok_or(check::NO_SUCH_FLOW_TABLE)?;
                if t.table_type != table_type {
                    return Err(check::TABLE_TYPE_MISMATCH);
                }
                let e = t.entries.get(&index).ok_or(check::NO_SUCH_FTE)?;
                owned(&e.meta, uid)?;
                let e = t.entries.remove(&index).ok_or(check::NO_SUCH_FTE)?;
                t.lookup = None;
                unref(self.groups.get_mut(e.group).map(|g| &mut g.meta));
                for d in e.dests {
                    match d {
                        Dest::Tir(t) => unref(self.tirs.get_mut(t).map(|t| &mut t.meta)),
                        Dest::Table(t) => unref(self.tables.get_mut(t).map(|t| &mut t.meta)),
                    }
                }
                if let Some(c) = e.counter {
                    unref(self.flow_counters.get_mut(c).map(|c| &mut c.meta));
                }
            }
            _ => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every kind of object: the inbox built for it names it again.
    #[test]
    fn destroy_inboxes_round_trip() {
        let objs = [
            ObjRef::Pd(1),
            ObjRef::Td(2),
            ObjRef::Mkey(3),
            ObjRef::Cq(0x400),
            ObjRef::Sq(0x1000),
            ObjRef::Rq(0x2000),
            ObjRef::Rmp(0x3000),
            ObjRef::Tis(5),
            ObjRef::Tir(6),
            ObjRef::Rqt(7),
            ObjRef::Qp(0x4000),
            ObjRef::FlowTable {
                table_type: 0,
                id: 0x100,
            },
            ObjRef::FlowGroup {
                table_type: 0,
                table: 0x100,
                id: 9,
            },
            ObjRef::Fte {
                table_type: 0,
                table: 0x100,
                index: 11,
            },
            ObjRef::General {
                obj_type: 0x25,
                id: 12,
            },
        ];
        for obj in objs {
            let inb = destroy_inbox(obj);
            let op = Opcode(u16::from_be_bytes([inb[0], inb[1]]));
            assert_eq!(destroyed_object(op, &inb), Some(Ok(obj)), "{obj:?}");
            assert_eq!(object_of_inbox(&inb), Some(obj), "{obj:?}");
        }
        assert_eq!(destroyed_object(Opcode::NOP, &[0; 16]), None);
        assert!(matches!(
            destroyed_object(Opcode::DESTROY_CQ, &[0; 4]),
            Some(Err(_))
        ));
    }
}
