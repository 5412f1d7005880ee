//! Fuzz entry point: arbitrary command mailboxes into the firmware model, through one DevX
//! context, as user space would send them. Shared by `fuzz/fuzz_targets/sim_firmware.rs` and
//! the property test that replays random inputs in the normal test suite.
//!
//! The input is a program of operations, each starting with one selector byte: raw mailboxes
//! through each DevX method, typed commands whose fields name live objects (then mutated),
//! object destroys, UMEM and UAR registration, doorbell and memory writes, engine steps and
//! fault injection. Whatever the bytes, nothing may panic, and after the context is closed the
//! device must hold nothing.

use mlx5_dpa::mlx5::{Cqn, Pdn, Qpn, Rqn, Sqn};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use mlx5_dpa::devx::{Devx, ObjHandle, Uar, UarKind, Umem, UmemAccess};
use mlx5_dpa::mem::DmaBuf;
use mlx5_dpa::mlx5::cmd::{self, *};
use mlx5_dpa::mlx5::layout::Layout;
use mlx5_dpa::mlx5::layouts as l;
use mlx5_dpa::mlx5::{DevxMethod, Opcode, Status};

use crate::fw::{object_of_inbox, ObjRef};
use crate::profile::{Profile, MODEL_OBJ_TYPES_DPA};
use crate::{Device, SimDevx};

/// Operations run per input at most (keeps one input fast).
const MAX_OPS: usize = 256;
/// Longest raw inbox (the largest fixed layout is CREATE_FLOW_GROUP's 0x400 bytes).
const MAX_INBOX: usize = 0x480;
/// Longest raw outbox (QUERY_HCA_CAP needs 0x1010 bytes).
const MAX_OUTBOX: usize = 0x1100;
/// Largest UMEM, in pages.
const MAX_UMEM_PAGES: usize = 16;

/// Runs `data` as a program against a fresh BlueField-3 model. Panics only when the model
/// misbehaves: a panic inside it, or objects left behind by a closed context.
pub fn fuzz_mailbox(data: &[u8]) {
    let mut h = Harness::new();
    let mut input = Input(data);
    for _ in 0..MAX_OPS {
        let Some(op) = input.byte() else { break };
        h.op(op, &mut input);
    }
    h.finish();
}

/// The program's bytes; reads past the end give zeros.
struct Input<'a>(&'a [u8]);

impl<'a> Input<'a> {
    fn byte(&mut self) -> Option<u8> {
        let (&b, rest) = self.0.split_first()?;
        self.0 = rest;
        Some(b)
    }
    fn b(&mut self) -> u8 {
        self.byte().unwrap_or(0)
    }
    fn u16(&mut self) -> u16 {
        u16::from_be_bytes([self.b(), self.b()])
    }
    fn u64(&mut self) -> u64 {
        let mut v = [0u8; 8];
        v.iter_mut().for_each(|x| *x = self.b());
        u64::from_be_bytes(v)
    }
    fn bytes(&mut self, n: usize) -> &'a [u8] {
        let (a, b) = self.0.split_at(n.min(self.0.len()));
        self.0 = b;
        a
    }
}

/// The object kinds a typed command can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Pd,
    Td,
    Cq,
    Sq,
    Rq,
    Tis,
    Tir,
    Rqt,
    Table,
    Group,
    Qp,
    Gen(u16),
    AnyGen,
}

fn id_of(o: ObjRef, k: Kind) -> Option<u32> {
    Some(match (o, k) {
        (ObjRef::Pd(x), Kind::Pd)
        | (ObjRef::Td(x), Kind::Td)
        | (ObjRef::Cq(x), Kind::Cq)
        | (ObjRef::Sq(x), Kind::Sq)
        | (ObjRef::Rq(x), Kind::Rq)
        | (ObjRef::Tis(x), Kind::Tis)
        | (ObjRef::Tir(x), Kind::Tir)
        | (ObjRef::Rqt(x), Kind::Rqt)
        | (ObjRef::Qp(x), Kind::Qp) => x,
        (ObjRef::FlowTable { id, .. }, Kind::Table) => id,
        (ObjRef::FlowGroup { id, .. }, Kind::Group) => id,
        (ObjRef::General { obj_type, id }, Kind::Gen(t)) if obj_type == t => id,
        (ObjRef::General { id, .. }, Kind::AnyGen) => id,
        _ => return None,
    })
}

/// A UAR page the harness holds (its fields, to free it again after a refused free).
struct UarRec {
    handle: u64,
    page_id: u32,
    base: NonNull<u8>,
    len: usize,
}

struct Harness {
    dev: Device,
    /// Dropped before `mem`: closing the context deregisters its UMEMs.
    ctx: Option<SimDevx>,
    handles: Vec<ObjHandle>,
    umems: Vec<(Umem, usize)>,
    uars: Vec<UarRec>,
    mem: Vec<Arc<DmaBuf>>,
}

impl Drop for Harness {
    fn drop(&mut self) {
        // The context goes first, so no registration outlives the memory (on a failed check,
        // registrations the model refused to release are never touched again: nothing steps
        // the device after this).
        self.ctx.take();
        self.uars.clear();
    }
}

/// A zeroed inbox of `len` bytes with opcode and the op_mod / obj_type word.
fn header(op: Opcode, op_mod: u16, len: usize) -> Vec<u8> {
    let mut b = vec![0u8; len.max(8)];
    b[0..2].copy_from_slice(&op.0.to_be_bytes());
    b[6..8].copy_from_slice(&op_mod.to_be_bytes());
    b
}

fn encoded<C: Command>(c: &C) -> Option<(Vec<u8>, usize)> {
    Some((cmd::encode_inbox(c).ok()?, cmd::outbox_len(c)))
}

fn qp_modify<T: QpTransition + Copy>(qpn: u32, attr: QpAttr, t: T) -> Option<(Vec<u8>, usize)> {
    encoded(&ModifyQp {
        qpn: Qpn(qpn),
        attr,
        transition: t,
    })
}

fn wq_state(b: u8) -> WqState {
    [WqState::Rst, WqState::Rdy, WqState::Err][usize::from(b) % 3]
}

/// Names `obj` in a modify / query inbox the way the kernel checks it.
fn name_object(mb: &mut [u8], obj: ObjRef) {
    if mb.len() < 16 {
        return;
    }
    match obj {
        ObjRef::General { obj_type, id } => {
            mb[6..8].copy_from_slice(&obj_type.to_be_bytes());
            mb[8..12].copy_from_slice(&id.to_be_bytes());
        }
        other => {
            if let Some(id) = id_of_any(other) {
                mb[9..12].copy_from_slice(&id.to_be_bytes()[1..]);
            }
        }
    }
}

fn id_of_any(o: ObjRef) -> Option<u32> {
    match o {
        ObjRef::Pd(x)
        | ObjRef::Td(x)
        | ObjRef::Mkey(x)
        | ObjRef::Cq(x)
        | ObjRef::Sq(x)
        | ObjRef::Rq(x)
        | ObjRef::Rmp(x)
        | ObjRef::Tis(x)
        | ObjRef::Tir(x)
        | ObjRef::Rqt(x)
        | ObjRef::Qp(x) => Some(x),
        _ => None,
    }
}

/// Opcodes DevX carries through `method`.
fn opcodes(method: DevxMethod) -> Vec<Opcode> {
    Opcode::ALL
        .iter()
        .map(|(op, _)| *op)
        .filter(|op| op.devx_method() == method)
        .collect()
}

impl Harness {
    fn new() -> Harness {
        let dev = Device::new(Profile::bf3());
        let ctx = dev.open();
        Harness {
            dev,
            ctx: Some(ctx),
            handles: Vec::new(),
            umems: Vec::new(),
            uars: Vec::new(),
            mem: Vec::new(),
        }
    }

    fn ctx(&self) -> Option<&SimDevx> {
        self.ctx.as_ref()
    }

    /// Live object numbers of `kind`.
    fn ids(&self, kind: Kind) -> Vec<u32> {
        let Some(ctx) = self.ctx() else {
            return Vec::new();
        };
        self.handles
            .iter()
            .filter_map(|h| ctx.object(*h))
            .filter_map(|o| id_of(o, kind))
            .collect()
    }

    /// A live object of `kind` chosen by the input, or a number that names nothing.
    fn pick(&self, input: &mut Input<'_>, kind: Kind) -> u32 {
        let b = input.b();
        let ids = self.ids(kind);
        if ids.is_empty() || b >= 0xf0 {
            u32::from(b)
        } else {
            ids[usize::from(b) % ids.len()]
        }
    }

    /// A live handle whose object is of `kind`.
    fn pick_handle(&self, input: &mut Input<'_>, kind: Kind) -> Option<(ObjHandle, u32)> {
        let ctx = self.ctx()?;
        let hs: Vec<(ObjHandle, u32)> = self
            .handles
            .iter()
            .filter_map(|h| Some((*h, id_of(ctx.object(*h)?, kind)?)))
            .collect();
        let b = usize::from(input.b());
        (!hs.is_empty()).then(|| hs[b % hs.len()])
    }

    fn uar(&self, input: &mut Input<'_>) -> u32 {
        let b = input.b();
        if self.uars.is_empty() || b >= 0xf0 {
            u32::from(b)
        } else {
            self.uars[usize::from(b) % self.uars.len()].page_id
        }
    }

    fn umem(&self, input: &mut Input<'_>) -> (u32, u64) {
        let b = input.b();
        if self.umems.is_empty() || b >= 0xf0 {
            (u32::from(b), 4096)
        } else {
            let (u, len) = self.umems[usize::from(b) % self.umems.len()];
            (u.umem_id, len as u64)
        }
    }

    fn ring(&self, input: &mut Input<'_>) -> RingMem {
        let (umem_id, len) = self.umem(input);
        let pages = (len / 4096).max(1);
        let umem_offset = u64::from(input.b()) % pages * 4096;
        let dbr_offset = u64::from(input.b()) * 64 % len.max(64);
        RingMem {
            umem_id,
            umem_offset,
            dbr_umem_id: umem_id,
            dbr_offset,
        }
    }

    /// A work queue: mostly with the usual stride (`stride`) and a size that fits a page.
    fn wq(&self, input: &mut Input<'_>, stride: u8) -> WqAttr {
        let s = input.b();
        WqAttr {
            pd: Pdn(self.pick(input, Kind::Pd)),
            uar_page: self.uar(input),
            log_wq_stride: if s < 0xc0 { stride } else { s % 16 },
            log_wq_sz: if s & 1 == 0 { s % 6 } else { s % 20 },
            mem: self.ring(input),
        }
    }

    fn op(&mut self, op: u8, input: &mut Input<'_>) {
        match op % 16 {
            0 => {
                let (mb, out) = self.raw_mailbox(input, DevxMethod::General);
                self.general(&mb, out);
            }
            1 => {
                let (mb, out) = self.raw_mailbox(input, DevxMethod::ObjCreate);
                self.create(&mb, out);
            }
            2 => self.on_handle(input, DevxMethod::ObjModify),
            3 => self.on_handle(input, DevxMethod::ObjQuery),
            4 => {
                let i = usize::from(input.b());
                if !self.handles.is_empty() {
                    let h = self.handles[i % self.handles.len()];
                    if let Some(ctx) = self.ctx() {
                        if ctx.obj_destroy(h).is_ok() {
                            self.handles.retain(|x| *x != h);
                        }
                    }
                }
            }
            5 => self.umem_reg(input),
            6 => {
                let i = usize::from(input.b());
                if !self.umems.is_empty() {
                    let i = i % self.umems.len();
                    let h = self.umems[i].0.handle;
                    if self.ctx().is_some_and(|c| c.umem_dereg(h).is_ok()) {
                        self.umems.swap_remove(i);
                    }
                }
            }
            7 => {
                let uar = self
                    .ctx()
                    .and_then(|c| c.uar_alloc(UarKind::NonCached).ok());
                if let Some(u) = uar {
                    self.uars.push(UarRec {
                        handle: u.handle,
                        page_id: u.page_id,
                        base: u.base,
                        len: u.len,
                    });
                }
            }
            8 => {
                let i = usize::from(input.b());
                if !self.uars.is_empty() {
                    let i = i % self.uars.len();
                    let r = &self.uars[i];
                    let uar = Uar {
                        handle: r.handle,
                        page_id: r.page_id,
                        base: r.base,
                        len: r.len,
                    };
                    if self.ctx().is_some_and(|c| c.uar_free(uar).is_ok()) {
                        self.uars.swap_remove(i);
                    }
                }
            }
            9 => self.template_create(input),
            10 => {
                self.dev.step();
            }
            11 => {
                let b = input.b();
                let statuses = &Status::ALL[1..];
                let status = statuses[usize::from(input.b()) % statuses.len()];
                match b % 3 {
                    0 => self.dev.fail_nth_command(u64::from(b % 8) + 1, status),
                    1 => {
                        let op = Opcode::ALL[usize::from(input.b()) % Opcode::ALL.len()].0;
                        self.dev.fail_opcode(op, status);
                    }
                    _ => self.dev.clear_faults(),
                }
            }
            12 => self.write_memory(input),
            13 => self.ring_doorbell(input),
            14 => self.template_modify(input),
            _ => self.template_query(input),
        }
    }

    /// A mailbox from the input; its opcode usually one DevX carries through `method`.
    fn raw_mailbox(&self, input: &mut Input<'_>, method: DevxMethod) -> (Vec<u8>, usize) {
        let sel = input.b();
        let len = usize::from(input.u16()) % MAX_INBOX;
        let out = usize::from(input.u16()) % MAX_OUTBOX;
        // The first `fill` bytes come from the input, the rest are zero (as in most real
        // mailboxes), so that one raw mailbox does not swallow the rest of the program.
        let fill = usize::from(input.b());
        let mut mb = vec![0u8; len];
        let src = input.bytes(fill.min(len));
        mb[..src.len()].copy_from_slice(src);
        if sel < 0xc0 && len >= 2 {
            let ops = opcodes(method);
            if !ops.is_empty() {
                let op = ops[usize::from(sel) % ops.len()];
                mb[0..2].copy_from_slice(&op.0.to_be_bytes());
            }
        }
        (mb, out)
    }

    fn general(&self, mb: &[u8], out_len: usize) {
        if let Some(ctx) = self.ctx() {
            let mut out = vec![0u8; out_len];
            let _ = ctx.general_cmd(mb, &mut out);
        }
    }

    fn create(&mut self, mb: &[u8], out_len: usize) {
        let Some(ctx) = self.ctx() else { return };
        let mut out = vec![0u8; out_len];
        if let Ok(h) = ctx.obj_create(mb, &mut out) {
            self.handles.push(h);
        }
    }

    /// A raw modify or query on a live handle, usually naming the handle's object.
    fn on_handle(&self, input: &mut Input<'_>, method: DevxMethod) {
        let i = usize::from(input.b());
        let flags = input.b();
        let (mut mb, out_len) = self.raw_mailbox(input, method);
        let Some(ctx) = self.ctx() else { return };
        let h = if self.handles.is_empty() || flags & 4 != 0 {
            ObjHandle(u64::from(flags))
        } else {
            self.handles[i % self.handles.len()]
        };
        if let (Some(obj), true) = (ctx.object(h), flags & 1 == 0) {
            // An opcode of this method that names this kind of object.
            let fits: Vec<Opcode> = opcodes(method)
                .into_iter()
                .filter(|op| {
                    let mut hdr = header(*op, 0, 16);
                    name_object(&mut hdr, obj);
                    object_of_inbox(&hdr) == Some(obj)
                })
                .collect();
            if !fits.is_empty() && mb.len() >= 16 {
                let op = fits[usize::from(flags >> 3) % fits.len()];
                mb[0..2].copy_from_slice(&op.0.to_be_bytes());
                name_object(&mut mb, obj);
            }
        }
        let mut out = vec![0u8; out_len];
        let _ = match method {
            DevxMethod::ObjModify => ctx.obj_modify(h, &mb, &mut out),
            _ => ctx.obj_query(h, &mb, &mut out),
        };
    }

    fn umem_reg(&mut self, input: &mut Input<'_>) {
        let pages = usize::from(input.b()) % MAX_UMEM_PAGES + 1;
        let access = UmemAccess::from_bits_truncate(u32::from(input.b()));
        let pgsz = if input.b() < 0xf0 { 1 << 12 } else { 0x800 };
        let Ok(m) = DmaBuf::new(pages * 4096) else {
            return;
        };
        // Every UMEM starts with a valid device ELF, so DPA processes can be created from
        // its first page (and their threads, outboxes... exercised).
        let elf = crate::testing::dpa_rig::elf::minimal();
        let _ = m.write(0, &elf);
        let Some(ctx) = self.ctx.as_ref() else { return };
        let Ok(ptr) = m.ptr(0, m.len()) else { return };
        // Raw registration, so the access bits and page-size bitmap are the input's.
        // SAFETY: `m` is `pages * 4096` bytes of this process's memory, kept in `self.mem`
        // until the harness is dropped, which closes the context (deregistering every UMEM)
        // before the memory is unmapped.
        let r = unsafe { ctx.umem_reg(ptr.as_ptr(), m.len(), access, pgsz) };
        if let Ok(u) = r {
            self.umems.push((u, m.len()));
        }
        self.mem.push(m);
    }

    /// Writes input bytes into host memory the model may DMA (rings, doorbell records).
    fn write_memory(&mut self, input: &mut Input<'_>) {
        let i = usize::from(input.b());
        let off = usize::from(input.u16());
        let n = usize::from(input.b());
        let src = input.bytes(n);
        if self.mem.is_empty() {
            return;
        }
        let m = &self.mem[i % self.mem.len()];
        let off = off % m.len();
        let n = src.len().min(m.len() - off);
        let _ = m.write(off, &src[..n]);
    }

    /// Writes a UAR register (CQ arm, send doorbell, or anything else).
    fn ring_doorbell(&mut self, input: &mut Input<'_>) {
        let i = usize::from(input.b());
        let reg = usize::from(input.u16()) % 512 * 8;
        let value = input.u64();
        if self.uars.is_empty() {
            return;
        }
        let r = &self.uars[i % self.uars.len()];
        if reg + 8 > r.len {
            return;
        }
        // SAFETY: the page is mapped while the harness holds its `UarRec` (removed when the
        // page is freed); `reg` is 8-byte aligned and inside the page; the model accesses its
        // registers only atomically.
        let cell = unsafe { AtomicU64::from_ptr(r.base.as_ptr().add(reg).cast::<u64>()) };
        cell.store(value, Ordering::Release);
    }

    /// Templates 0-7 and 13: PD, transport domain, mkey, CQ, TIS, SQ, RQ, RMP, QP.
    fn queue_template(&mut self, t: u8, input: &mut Input<'_>) -> Option<(Vec<u8>, usize)> {
        use l::obj_type as ot;
        match t {
            0 => encoded(&AllocPd),
            1 => encoded(&AllocTransportDomain),
            2 => {
                let pd = self.pick(input, Kind::Pd);
                let (umem_id, len) = self.umem(input);
                let a = input.b();
                encoded(&CreateMkey {
                    pd: Pdn(pd),
                    start_addr: 0,
                    len: 4096 * u64::from(a % 4),
                    access: MkeyAccess {
                        local_read: a & 0x10 != 0,
                        local_write: a & 0x20 != 0,
                        remote_read: a & 0x40 != 0,
                        remote_write: a & 0x80 != 0,
                        atomic: a & 0x08 != 0,
                    },
                    umem_id,
                    umem_offset: u64::from(input.b()) * 4096 % len.max(4096),
                    key: input.b(),
                    log_page_size: 12,
                })
            }
            3 => {
                let sel = input.b();
                let target = match sel % 4 {
                    0 | 1 => CqEventTarget::Eq(0x10 + u32::from(sel >> 2) % 5),
                    2 => CqEventTarget::DpaThread(self.pick(input, Kind::Gen(ot::DPA_THREAD))),
                    _ => CqEventTarget::DpaEq(self.pick(input, Kind::Gen(ot::DPA_EQ))),
                };
                encoded(&CreateCq {
                    log_cq_size: input.b() % 10,
                    cqe_sz: input.b() % 2,
                    uar_page: self.uar(input),
                    target,
                    mem: self.ring(input),
                    cq_period: u16::from(input.b()),
                    cq_max_count: u16::from(input.b()),
                    oi: sel & 0x80 != 0,
                    cc: false,
                    cqe_comp: false,
                })
            }
            4 => encoded(&CreateTis {
                transport_domain: self.pick(input, Kind::Td),
                pd: Pdn(self.pick(input, Kind::Pd)),
            }),
            5 => encoded(&CreateSq {
                cqn: Cqn(self.pick(input, Kind::Cq)),
                tisn: self.pick(input, Kind::Tis),
                wq: self.wq(input, 6),
                flush_in_error_en: false,
            }),
            6 => encoded(&CreateRq {
                cqn: Cqn(self.pick(input, Kind::Cq)),
                wq: self.wq(input, 4),
                flush_in_error_en: true,
                counter_set_id: 0,
            }),
            7 => encoded(&CreateRmp {
                wq: self.wq(input, 5),
                linked_list: input.b() & 1 == 1,
            }),
            13 => {
                let sel = input.b();
                encoded(&CreateQp {
                    pd: Pdn(self.pick(input, Kind::Pd)),
                    uar_page: self.uar(input),
                    cqn_snd: Cqn(self.pick(input, Kind::Cq)),
                    cqn_rcv: Cqn(self.pick(input, Kind::Cq)),
                    log_sq_size: sel % 8,
                    log_rq_size: (sel & 0x80 == 0).then_some((sel >> 3) % 8),
                    log_rq_stride: (sel >> 4) % 4,
                    srqn: None,
                    mem: self.ring(input),
                    user_index: u32::from(input.b()),
                })
            }
            _ => None,
        }
    }

    /// Templates 8-12: TIR, RQT, flow table, flow group, flow entry.
    fn steering_template(&mut self, t: u8, input: &mut Input<'_>) -> Option<(Vec<u8>, usize)> {
        match t {
            8 => {
                let sel = input.b();
                let td = self.pick(input, Kind::Td);
                let rqn = self.pick(input, Kind::Rq);
                let rqtn = self.pick(input, Kind::Rqt);
                encoded(&CreateTir {
                    transport_domain: td,
                    inline_rqn: Rqn(rqn),
                })
                .map(|(mut mb, n)| {
                    if sel & 1 == 1 {
                        // Indirect: through an RQT, with the hash function from the input.
                        use l::create_tir_in as m;
                        if let Ok(mut v) = mlx5_dpa::mlx5::ViewMut::<m::Layout>::new(&mut mb) {
                            v.set(m::ctx.at(l::tirc::disp_type), 1);
                            v.set(
                                m::ctx.at(l::tirc::indirect_table),
                                u64::from(rqtn & 0xff_ffff),
                            );
                            v.set(m::ctx.at(l::tirc::rx_hash_fn), u64::from(sel >> 1) % 4);
                        }
                    }
                    (mb, n)
                })
            }
            9 => {
                let n = usize::from(input.b() % 4) + 1;
                let rqns = (0..n).map(|_| Rqn(self.pick(input, Kind::Rq))).collect();
                encoded(&CreateRqt { rqns })
            }
            10 => encoded(&CreateFlowTable {
                level: input.b() % 4,
                log_size: input.b() % 6,
            }),
            11 => {
                let table_id = self.pick(input, Kind::Table);
                let start = u32::from(input.b() % 32);
                let crit = input.b();
                encoded(&CreateFlowGroup {
                    table_id,
                    start_flow_index: start,
                    end_flow_index: start + u32::from(crit % 8),
                    criteria: OuterMatch {
                        udp_dport: (crit & 0x80 != 0).then_some(0),
                        ..OuterMatch::default()
                    },
                })
            }
            12 => encoded(&SetFte {
                table_id: self.pick(input, Kind::Table),
                flow_index: u32::from(input.b() % 32),
                group_id: self.pick(input, Kind::Group),
                value: OuterMatch::default(),
                tirn: self.pick(input, Kind::Tir),
                flow_counter: None,
            }),
            _ => None,
        }
    }

    /// Templates 14-24: the DPA and cross-function general objects.
    fn general_template(&mut self, t: u8, input: &mut Input<'_>) -> Option<(Vec<u8>, usize)> {
        use l::obj_type as ot;
        match t {
            14 => {
                let pd = self.pick(input, Kind::Pd);
                let (elf_umem_id, len) = self.umem(input);
                let s = input.b();
                encoded(&CreateGeneralObject(DpaProcessAttr {
                    pd: Pdn(pd),
                    elf_umem_id,
                    elf_umem_offset: u64::from(s % 4) * 4096 % len.max(4096),
                    elf_size: 4096 * u64::from(s >> 6),
                    heap_size: u64::from(input.b()) << 20,
                    sig_umem_id: 0,
                    sig_umem_offset: 0,
                    sig_size: 0,
                }))
            }
            15 => {
                let p = self.pick(input, Kind::Gen(ot::DPA_PROCESS));
                let size = u64::from(input.b()) << (input.b() % 30);
                encoded(&CreateGeneralObject(DpaMemAttr {
                    dpa_process_id: p,
                    size,
                }))
            }
            16 => {
                let p = self.pick(input, Kind::Gen(ot::DPA_PROCESS));
                let sel = input.b();
                let aff = u16::from(input.b());
                encoded(&CreateGeneralObject(DpaThreadAttr {
                    dpa_process_id: p,
                    entry_point: u64::from(sel >> 2) * 0x100,
                    user_arg: 0,
                    thread_local_storage_daddr: 0,
                    affinity: match sel % 4 {
                        0 | 1 => DpaAffinity::None,
                        2 => DpaAffinity::Strict(aff),
                        _ => DpaAffinity::Group(aff % 4),
                    },
                    default_outbox_id: if sel & 0x40 != 0 {
                        self.pick(input, Kind::Gen(ot::DPA_OUTBOX))
                    } else {
                        0
                    },
                    default_window_id: if sel & 0x80 != 0 {
                        self.pick(input, Kind::Gen(ot::DPA_WINDOW))
                    } else {
                        0
                    },
                    continuable: false,
                }))
            }
            17 => encoded(&CreateGeneralObject(DpaOutboxAttr {
                dpa_process_id: self.pick(input, Kind::Gen(ot::DPA_PROCESS)),
                uar: self.uar(input),
            })),
            18 => encoded(&CreateGeneralObject(DpaWindowAttr {
                dpa_process_id: self.pick(input, Kind::Gen(ot::DPA_PROCESS)),
                pd: Pdn(self.pick(input, Kind::Pd)),
            })),
            19 => {
                let uar_page = self.uar(input);
                let (umem_id, len) = self.umem(input);
                let log = input.b() % 24;
                encoded(&CreateGeneralObject(DpaEqAttr {
                    log_umem_size: log,
                    uar_page,
                    umem_id,
                    umem_offset: u64::from(input.b()) * 4096 % len.max(4096),
                    oi: log & 1 == 1,
                }))
            }
            20 => encoded(&CreateGeneralObject(DbCqMappingAttr {
                device_emulation_id: 0,
                queue_id: u32::from(input.b()),
                cqn: self.pick(input, Kind::Cq),
                queue_type: 0,
                device_type: 0,
            })),
            21 => {
                // EU group / partition register writes (create, modify, destroy).
                let sel = input.b();
                let (register_id, len) = if sel & 1 == 0 {
                    (
                        l::reg_id::NIC_DPA_EUG_REG,
                        l::nic_dpa_eug_reg::Layout::SIZE_BYTES,
                    )
                } else {
                    (
                        l::reg_id::NIC_DPA_EU_PARTITION_REG,
                        l::nic_dpa_eu_partition_reg::Layout::SIZE_BYTES,
                    )
                };
                let mut data = vec![0u8; len];
                data[0] = ((sel >> 1) % 4) << 4;
                data[3] = input.b() % 4;
                let eu = usize::from(input.b());
                data[0x40 + eu / 32 * 4 + (3 - eu % 32 / 8)] |= 1 << (eu % 8);
                encoded(&AccessRegisterUser {
                    register_id,
                    argument: 0,
                    write: sel & 0x80 == 0,
                    data,
                })
            }
            22 => {
                let t = MODEL_OBJ_TYPES_DPA[usize::from(input.b()) % MODEL_OBJ_TYPES_DPA.len()];
                encoded(&AllowOtherVhcaAccess {
                    object_type: t,
                    object_id: self.pick(input, Kind::AnyGen),
                    access_key: [input.b() % 2; 32],
                })
            }
            23 => {
                let sel = input.b();
                encoded(&CreateAlias {
                    obj_type: 0xff00 | u16::from(sel),
                    vhca_id: if sel & 1 == 0 { 2 } else { u16::from(sel) },
                    object_id: self.pick(input, Kind::AnyGen),
                    access_key: [input.b() % 2; 32],
                })
            }
            24 => {
                let hdr = l::general_obj_in_cmd_hdr::Layout::SIZE_BYTES;
                let mut b = header(
                    Opcode::CREATE_GENERAL_OBJECT,
                    ot::DPA_UAR,
                    hdr + l::dpa_uar::Layout::SIZE_BYTES,
                );
                let p = self.pick(input, Kind::Gen(ot::DPA_PROCESS));
                let uar = self.uar(input);
                if let Ok(mut v) = mlx5_dpa::mlx5::ViewMut::<l::dpa_uar::Layout>::new(&mut b[hdr..])
                {
                    v.set(l::dpa_uar::dpa_process_id, u64::from(p));
                    v.set(l::dpa_uar::uar_page, u64::from(uar & 0xff_ffff));
                }
                Some((b, 16))
            }
            _ => None,
        }
    }

    fn template_create(&mut self, input: &mut Input<'_>) {
        let t = input.b() % 25;
        let general = matches!(t, 21 | 22);
        let built: Option<(Vec<u8>, usize)> = match t {
            0..=7 | 13 => self.queue_template(t, input),
            8..=12 => self.steering_template(t, input),
            _ => self.general_template(t, input),
        };
        let Some((mut mb, out_len)) = built else {
            return;
        };
        mutate(&mut mb, input);
        if general {
            self.general(&mb, out_len);
        } else {
            self.create(&mb, out_len);
        }
    }

    fn template_modify(&mut self, input: &mut Input<'_>) {
        use l::obj_type as ot;
        let sel = input.b();
        let built = match sel % 6 {
            0 => self.pick_handle(input, Kind::Sq).and_then(|(h, sqn)| {
                let m = ModifySq {
                    sqn: Sqn(sqn),
                    from: wq_state(input.b()),
                    to: wq_state(input.b()),
                };
                Some((h, encoded(&m)?))
            }),
            1 => self.pick_handle(input, Kind::Rq).and_then(|(h, rqn)| {
                let m = ModifyRq {
                    rqn: Rqn(rqn),
                    from: wq_state(input.b()),
                    to: wq_state(input.b()),
                };
                Some((h, encoded(&m)?))
            }),
            2 => self.pick_handle(input, Kind::Qp).and_then(|(h, qpn)| {
                let t = input.b();
                let attr = QpAttr {
                    mtu: t >> 5,
                    fl: true,
                    ..QpAttr::default()
                };
                let mb = match t % 6 {
                    0 => qp_modify(qpn, attr, Rst2Init),
                    1 => qp_modify(qpn, attr, Init2Rtr),
                    2 => qp_modify(qpn, attr, Rtr2Rts),
                    3 => qp_modify(qpn, attr, Rts2Rts),
                    4 => qp_modify(qpn, attr, Qp2Err),
                    _ => qp_modify(qpn, attr, Qp2Rst),
                };
                Some((h, mb?))
            }),
            3 => self.pick_handle(input, Kind::Cq).and_then(|(h, cqn)| {
                let m = ModifyCqModeration {
                    cqn: Cqn(cqn),
                    cq_period: u16::from(input.b()),
                    cq_max_count: u16::from(input.b()),
                };
                Some((h, encoded(&m)?))
            }),
            4 => self
                .pick_handle(input, Kind::Gen(ot::DPA_THREAD))
                .and_then(|(h, id)| {
                    let (mut mb, n) = encoded(&ModifyGeneralObject {
                        obj_id: id,
                        obj: DpaThreadAttr {
                            dpa_process_id: 0,
                            entry_point: 0,
                            user_arg: input.u64(),
                            thread_local_storage_daddr: 0,
                            affinity: DpaAffinity::None,
                            default_outbox_id: 0,
                            default_window_id: 0,
                            continuable: false,
                        },
                    })?;
                    let select = u64::from(input.b() % 8);
                    mb.get_mut(16..24)?.copy_from_slice(&select.to_be_bytes());
                    Some((h, (mb, n)))
                }),
            _ => self
                .pick_handle(input, Kind::Gen(ot::DB_CQ_MAPPING))
                .and_then(|(h, id)| {
                    let (mut mb, n) = encoded(&ModifyGeneralObject {
                        obj_id: id,
                        obj: DbCqMappingAttr {
                            device_emulation_id: 0,
                            queue_id: 0,
                            cqn: 0,
                            queue_type: 0,
                            device_type: 0,
                        },
                    })?;
                    mb.get_mut(16..24)?
                        .copy_from_slice(&u64::from(input.b() % 4).to_be_bytes());
                    Some((h, (mb, n)))
                }),
        };
        let Some((h, (mut mb, out_len))) = built else {
            return;
        };
        if sel & 0x80 != 0 {
            mutate(&mut mb, input);
        }
        if let Some(ctx) = self.ctx() {
            let mut out = vec![0u8; out_len];
            let _ = ctx.obj_modify(h, &mb, &mut out);
        }
    }

    fn template_query(&mut self, input: &mut Input<'_>) {
        let Some(ctx) = self.ctx() else { return };
        if self.handles.is_empty() {
            return;
        }
        let h = self.handles[usize::from(input.b()) % self.handles.len()];
        let short = input.b() & 1 == 1;
        let built = match ctx.object(h) {
            Some(ObjRef::Cq(n)) => encoded(&QueryCq(Cqn(n))),
            Some(ObjRef::Qp(n)) => encoded(&QueryQp(Qpn(n))),
            Some(ObjRef::General { obj_type, id }) => encoded(&QueryGeneralObject {
                obj_type,
                obj_id: id,
                ctx_len: 0x100,
            }),
            Some(obj @ (ObjRef::Sq(_) | ObjRef::Rq(_))) => {
                let op = if matches!(obj, ObjRef::Sq(_)) {
                    Opcode::QUERY_SQ
                } else {
                    Opcode::QUERY_RQ
                };
                let mut mb = header(op, 0, 16);
                name_object(&mut mb, obj);
                Some((mb, 0x110))
            }
            _ => None,
        };
        if let Some((mb, n)) = built {
            let mut out = vec![0u8; if short { 16 } else { n }];
            let _ = ctx.obj_query(h, &mb, &mut out);
        }
    }

    /// Closes the context and checks that it left nothing behind.
    fn finish(mut self) {
        // Closing the context releases everything, injected faults or not.
        self.ctx.take();
        self.uars.clear();
        self.dev.clear_faults();
        let inv = self.dev.inventory();
        assert!(
            inv.is_empty(),
            "the closed context left objects behind: {inv}"
        );
    }
}

/// Flips up to three input-chosen bytes of `mb`.
fn mutate(mb: &mut [u8], input: &mut Input<'_>) {
    let n = input.b() % 4;
    for _ in 0..n {
        let at = usize::from(input.u16());
        let x = input.b();
        if !mb.is_empty() {
            let i = at % mb.len();
            mb[i] ^= x;
        }
    }
}

/// Fuzz entry point: any bytes as a frame arriving at the model's port from outside (a TAP,
/// a linked device): the RoCE v2 address check and parser. When the bytes carry an IPv4
/// total length that fits, they are parsed a second time with the ICRC made right, so the
/// parser gets past its check to the transport headers. Must never panic; what it accepts
/// must lie inside the frame.
pub fn fuzz_roce_frame(data: &[u8]) {
    use crate::port::roce;
    let mac = [0x02, 0x00, 0x5e, 0x00, 0x00, 0x01];
    let ip = [10, 0, 0, 1];
    let _ = roce::is_for(data, &mac, &ip);
    let check = |f: &[u8]| {
        if let Ok(p) = roce::parse(f) {
            assert!(p.payload.len() <= f.len());
        }
    };
    check(data);
    let Some(total) = data
        .get(16..18)
        .map(|b| usize::from(u16::from_be_bytes([b[0], b[1]])))
    else {
        return;
    };
    let end = 14 + total;
    if total < 4 || end > data.len() {
        return;
    }
    let mut f = data.to_vec();
    if let Some(c) = roce::icrc(&f[14..end - 4]) {
        f[end - 4..end].copy_from_slice(&c.to_le_bytes());
        check(&f);
    }
}

/// Fuzz entry point: any bytes as a frame reaching `mlx5-dpa sim`'s responder (from the
/// kernel through a TAP): its ARP and ICMP echo parsers, also with the target address patched
/// in so they get past the address check. Replies are well formed: ARP replies 60 bytes, echo
/// replies with valid IPv4 and ICMP checksums. Must never panic.
pub fn fuzz_responder_frame(data: &[u8]) {
    use crate::responder::{arp_reply, checksum, echo_reply};
    let ip = std::net::Ipv4Addr::new(10, 99, 0, 2);
    let mac = [0x02, 0x00, 0x5e, 0x00, 0x00, 0x02];
    let check = |f: &[u8]| {
        if let Some(r) = arp_reply(f, ip, mac) {
            assert_eq!(r.len(), 60);
        }
        if let Some(r) = echo_reply(f, ip, mac) {
            let ihl = usize::from(r[14] & 0xf) * 4;
            let total = usize::from(u16::from_be_bytes([r[16], r[17]]));
            assert_eq!(r.len(), 14 + total);
            assert_eq!(checksum(&r[14..14 + ihl]), 0, "IPv4 header checksum");
            assert_eq!(checksum(&r[14 + ihl..]), 0, "ICMP checksum");
        }
    };
    check(data);
    let mut f = data.to_vec();
    if f.len() >= 42 {
        // ARP target protocol address, then IPv4 destination.
        f[38..42].copy_from_slice(&ip.octets());
        check(&f);
        let mut g = data.to_vec();
        g[30..34].copy_from_slice(&ip.octets());
        check(&g);
    }
}

/// Fuzz entry of the `dpa_elf` target (and `sim/tests/model/dpa_elf_fuzz.rs`): any bytes through the
/// driver's ELF parser (`mlx5_dpa::dpa::elf`) and, when it accepts them, through the bare
/// machine as an image of the segments it found; then the same bytes through the engine
/// crate's own reader (`Image::from_elf`). Must never panic.
pub fn fuzz_dpa_elf(data: &[u8]) {
    use crate::riscv::bare::{fuzz_elf, fuzz_image};
    use mlx5_dpa::dpa::elf::Elf;

    if let Ok(elf) = Elf::parse(data) {
        let _ = elf.section(".text");
        let _ = elf.symbol("main");
        fuzz_image(&crate::vm::image(&elf));
    }
    fuzz_elf(data);
}
