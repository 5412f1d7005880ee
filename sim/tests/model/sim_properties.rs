//! Property tests of the firmware model: random command sequences (valid and invalid, typed and
//! raw, with faults injected) never panic, and after each sequence the device can be emptied,
//! both by destroying everything explicitly and by simply closing the context. Also replays
//! random inputs through the fuzz entry point (`mlx5_sim::testing::fuzzing::fuzz_mailbox`).
//!
//! Case counts are modest by default (the suite runs in seconds); `PROPTEST_CASES` overrides.

use mlx5_dpa::mlx5::{Cqn, Pdn, Qpn, Rqn, Sqn};
use std::ptr::NonNull;
use std::sync::Arc;

use mlx5_dpa::devx::{Devx, ObjHandle, Uar, UarKind, Umem, UmemAccess};
use mlx5_dpa::mem::DmaBuf;
use mlx5_dpa::mlx5::cmd::*;
use mlx5_dpa::mlx5::layouts as l;
use mlx5_dpa::mlx5::{DevxMethod, Layout, Opcode, Status};
use mlx5_sim::profile::Profile;
use mlx5_sim::{Device, ObjRef, SimDevx};
use proptest::prelude::*;

use l::obj_type as ot;

fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

fn config(default_cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases: cases(default_cases),
        // No regression files next to the sources; failures print the minimal input.
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

// ---------------------------------------------------------------------------------------------
// Operations.

/// Chooses an object: below 0xc0 a live one of the wanted kind, 0xc0..0xe0 a live one of any
/// kind (type confusion), above that a number that names nothing.
type Pick = u8;

#[derive(Debug, Clone)]
enum Op {
    Pd,
    Td,
    Uar,
    Umem {
        pages: u8,
        access: u8,
    },
    Mkey {
        pd: Pick,
        umem: Pick,
        page: u8,
        pages: u8,
        access: u8,
    },
    Cq {
        uar: Pick,
        umem: Pick,
        page: u8,
        log: u8,
        cqe_sz: u8,
        target: u8,
        element: Pick,
    },
    Tis {
        td: Pick,
        pd: Pick,
    },
    Sq {
        cq: Pick,
        tis: Pick,
        pd: Pick,
        uar: Pick,
        umem: Pick,
        page: u8,
        stride: u8,
        log: u8,
    },
    Rq {
        cq: Pick,
        pd: Pick,
        uar: Pick,
        umem: Pick,
        page: u8,
        stride: u8,
        log: u8,
    },
    Tir {
        td: Pick,
        rq: Pick,
    },
    Rqt {
        rqs: Vec<Pick>,
    },
    Table {
        level: u8,
        log: u8,
    },
    Group {
        table: Pick,
        start: u8,
        len: u8,
    },
    Fte {
        table: Pick,
        group: Pick,
        index: u8,
        tir: Pick,
    },
    Qp {
        pd: Pick,
        uar: Pick,
        cq: Pick,
        umem: Pick,
        page: u8,
        log_sq: u8,
        log_rq: Option<u8>,
    },
    Process {
        pd: Pick,
        umem: Pick,
        elf_pages: u8,
        heap_mib: u16,
    },
    Mem {
        process: Pick,
        size: u32,
    },
    Thread {
        process: Pick,
        entry: u16,
        affinity: u8,
        affinity_id: u16,
        outbox: Option<Pick>,
        window: Option<Pick>,
    },
    Outbox {
        process: Pick,
        uar: Pick,
    },
    Window {
        process: Pick,
        pd: Pick,
    },
    Destroy(u8),
    DeregUmem(u8),
    FreeUar(u8),
    ModifySq {
        sq: Pick,
        from: u8,
        to: u8,
    },
    ModifyRq {
        rq: Pick,
        from: u8,
        to: u8,
    },
    ModifyQp {
        qp: Pick,
        transition: u8,
        mtu: u8,
    },
    Raw {
        method: u8,
        opcode: Option<u8>,
        handle: u8,
        body: Vec<u8>,
        out: u16,
    },
    Fault {
        kind: u8,
        nth: u8,
        status: u8,
    },
    Step,
    /// A plausible stack in one go (CQ, TIS, SQ, RQ, TIR, RQT, flow table, group and entry, QP,
    /// DPA process, thread and a CQ bound to it) over the newest PD, TD, UAR and UMEM.
    Chain(u8),
}

/// Mostly a live object of the wanted kind; sometimes one of another kind, or nothing.
fn p() -> impl Strategy<Value = Pick> {
    prop_oneof![14 => 0u8..0xc0, 1 => 0xc0u8..0xe0, 1 => 0xe0u8..=0xff]
}

/// The resources most objects need, which a sequence may start with.
fn setup() -> Vec<Op> {
    vec![
        Op::Pd,
        Op::Td,
        Op::Uar,
        Op::Umem {
            pages: 16,
            access: 1,
        },
        Op::Umem {
            pages: 16,
            access: 0xf,
        },
    ]
}

fn sequence() -> impl Strategy<Value = Vec<Op>> {
    (any::<bool>(), prop::collection::vec(op_strategy(), 1..40)).prop_map(|(pre, ops)| {
        if pre {
            setup().into_iter().chain(ops).collect()
        } else {
            ops
        }
    })
}

fn op_strategy() -> impl Strategy<Value = Op> {
    prop_oneof![
        // Resources most objects need come often, so that deep objects get built.
        6 => Just(Op::Pd),
        4 => Just(Op::Td),
        6 => Just(Op::Uar),
        6 => (1u8..17, prop_oneof![3 => Just(1u8), 1 => any::<u8>()])
            .prop_map(|(pages, access)| Op::Umem { pages, access }),
        2 => (p(), p(), p(), 0u8..4, p()).prop_map(|(pd, umem, page, pages, access)| Op::Mkey {
            pd,
            umem,
            page,
            pages,
            access
        }),
        6 => (p(), p(), p(), prop_oneof![4 => 0u8..9, 1 => 0u8..24], 0u8..3, p(), p()).prop_map(
            |(uar, umem, page, log, cqe_sz, target, element)| Op::Cq {
                uar,
                umem,
                page,
                log,
                cqe_sz,
                target,
                element
            }
        ),
        4 => (p(), p()).prop_map(|(td, pd)| Op::Tis { td, pd }),
        5 => (p(), p(), p(), p(), p(), p(), prop_oneof![4 => Just(6u8), 1 => 4u8..8], prop_oneof![4 => 0u8..7, 1 => 0u8..19]).prop_map(
            |(cq, tis, pd, uar, umem, page, stride, log)| Op::Sq {
                cq,
                tis,
                pd,
                uar,
                umem,
                page,
                stride,
                log
            }
        ),
        5 => (p(), p(), p(), p(), p(), 3u8..15, 0u8..8).prop_map(
            |(cq, pd, uar, umem, page, stride, log)| Op::Rq {
                cq,
                pd,
                uar,
                umem,
                page,
                stride,
                log
            }
        ),
        5 => (p(), p()).prop_map(|(td, rq)| Op::Tir { td, rq }),
        2 => prop::collection::vec(p(), 1..4).prop_map(|rqs| Op::Rqt { rqs }),
        2 => (0u8..3, 0u8..6).prop_map(|(level, log)| Op::Table { level, log }),
        4 => (p(), 0u8..40, 0u8..10).prop_map(|(table, start, len)| Op::Group { table, start, len }),
        6 => (p(), p(), 0u8..40, p()).prop_map(|(table, group, index, tir)| Op::Fte {
            table,
            group,
            index,
            tir
        }),
        3 => (p(), p(), p(), p(), p(), 0u8..16, prop::option::of(0u8..16)).prop_map(
            |(pd, uar, cq, umem, page, log_sq, log_rq)| Op::Qp {
                pd,
                uar,
                cq,
                umem,
                page,
                log_sq,
                log_rq
            }
        ),
        4 => (p(), p(), 0u8..3, 0u16..300).prop_map(|(pd, umem, elf_pages, heap_mib)| Op::Process {
            pd,
            umem,
            elf_pages,
            heap_mib
        }),
        3 => (p(), prop_oneof![0u32..4096, Just(1 << 20), Just(100 << 20), any::<u32>()])
            .prop_map(|(process, size)| Op::Mem { process, size }),
        4 => (
            p(),
            0u16..4,
            0u8..4,
            0u16..300,
            prop::option::of(p()),
            prop::option::of(p())
        )
            .prop_map(|(process, entry, affinity, affinity_id, outbox, window)| {
                Op::Thread {
                    process,
                    entry,
                    affinity,
                    affinity_id,
                    outbox,
                    window,
                }
            }),
        2 => (p(), p()).prop_map(|(process, uar)| Op::Outbox { process, uar }),
        2 => (p(), p()).prop_map(|(process, pd)| Op::Window { process, pd }),
        4 => p().prop_map(Op::Destroy),
        1 => p().prop_map(Op::DeregUmem),
        1 => p().prop_map(Op::FreeUar),
        2 => (p(), 0u8..4, 0u8..4).prop_map(|(sq, from, to)| Op::ModifySq { sq, from, to }),
        2 => (p(), 0u8..4, 0u8..4).prop_map(|(rq, from, to)| Op::ModifyRq { rq, from, to }),
        2 => (p(), 0u8..7, 0u8..7).prop_map(|(qp, transition, mtu)| Op::ModifyQp {
            qp,
            transition,
            mtu
        }),
        3 => (
            0u8..4,
            prop::option::of(p()),
            p(),
            prop::collection::vec(any::<u8>(), 0..0x500),
            0u16..0x1100
        )
            .prop_map(|(method, opcode, handle, body, out)| Op::Raw {
                method,
                opcode,
                handle,
                body,
                out
            }),
        1 => (0u8..3, 1u8..6, 1u8..17).prop_map(|(kind, nth, status)| Op::Fault {
            kind,
            nth,
            status
        }),
        1 => Just(Op::Step),
        3 => any::<u8>().prop_map(Op::Chain),
    ]
}

// ---------------------------------------------------------------------------------------------
// Harness.

struct UarRec {
    handle: u64,
    page_id: u32,
    base: NonNull<u8>,
    len: usize,
}

impl UarRec {
    fn uar(&self) -> Uar {
        Uar {
            handle: self.handle,
            page_id: self.page_id,
            base: self.base,
            len: self.len,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Pd,
    Td,
    Cq,
    Sq,
    Rq,
    Tis,
    Tir,
    Table,
    Group,
    Qp,
    Gen(u16),
}

fn id_of(o: ObjRef, k: Option<Kind>) -> Option<u32> {
    Some(match (o, k) {
        (ObjRef::Pd(x), Some(Kind::Pd))
        | (ObjRef::Td(x), Some(Kind::Td))
        | (ObjRef::Cq(x), Some(Kind::Cq))
        | (ObjRef::Sq(x), Some(Kind::Sq))
        | (ObjRef::Rq(x), Some(Kind::Rq))
        | (ObjRef::Tis(x), Some(Kind::Tis))
        | (ObjRef::Tir(x), Some(Kind::Tir))
        | (ObjRef::Qp(x), Some(Kind::Qp)) => x,
        (ObjRef::FlowTable { id, .. }, Some(Kind::Table)) => id,
        (ObjRef::FlowGroup { id, .. }, Some(Kind::Group)) => id,
        (ObjRef::General { obj_type, id }, Some(Kind::Gen(t))) if obj_type == t => id,
        // Any kind: the object's number, whatever it is.
        (
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
            | ObjRef::Qp(x)
            | ObjRef::FlowTable { id: x, .. }
            | ObjRef::FlowGroup { id: x, .. }
            | ObjRef::Fte { index: x, .. }
            | ObjRef::General { id: x, .. },
            None,
        ) => x,
        _ => return None,
    })
}

/// One device, one context, and what the sequence created on it (in creation order).
struct Sim {
    dev: Device,
    /// Dropped (closing the context) before `mem` is freed.
    ctx: Option<Arc<SimDevx>>,
    handles: Vec<ObjHandle>,
    umems: Vec<(Umem, usize)>,
    uars: Vec<UarRec>,
    mem: Vec<Arc<DmaBuf>>,
}

impl Drop for Sim {
    fn drop(&mut self) {
        self.ctx.take();
    }
}

const WQ_STATES: [WqState; 3] = [WqState::Rst, WqState::Rdy, WqState::Err];

impl Sim {
    fn new() -> Sim {
        let dev = Device::new(Profile::bf3());
        let ctx = Arc::new(dev.open());
        Sim {
            dev,
            ctx: Some(ctx),
            handles: Vec::new(),
            umems: Vec::new(),
            uars: Vec::new(),
            mem: Vec::new(),
        }
    }

    fn ctx(&self) -> &SimDevx {
        self.ctx.as_deref().expect("context open")
    }

    fn pick(&self, p: Pick, kind: Kind) -> u32 {
        let want = if p < 0xc0 { Some(kind) } else { None };
        let ids: Vec<u32> = self
            .handles
            .iter()
            .filter_map(|h| self.ctx().object(*h))
            .filter_map(|o| id_of(o, want))
            .collect();
        if p >= 0xe0 || ids.is_empty() {
            0xf000 + u32::from(p)
        } else {
            ids[usize::from(p) % ids.len()]
        }
    }

    fn pick_handle(&self, p: Pick, kind: Kind) -> Option<(ObjHandle, u32)> {
        let hs: Vec<(ObjHandle, u32)> = self
            .handles
            .iter()
            .filter_map(|h| Some((*h, id_of(self.ctx().object(*h)?, Some(kind))?)))
            .collect();
        (!hs.is_empty()).then(|| hs[usize::from(p) % hs.len()])
    }

    fn uar(&self, p: Pick) -> u32 {
        if p >= 0xe0 || self.uars.is_empty() {
            0x7000 + u32::from(p)
        } else {
            self.uars[usize::from(p) % self.uars.len()].page_id
        }
    }

    /// A UMEM id and the byte offset of page `page` in it.
    fn umem(&self, p: Pick, page: u8) -> (u32, u64) {
        if p >= 0xe0 || self.umems.is_empty() {
            (0x9000 + u32::from(p), 0)
        } else {
            let (u, len) = self.umems[usize::from(p) % self.umems.len()];
            let pages = (len / 4096) as u64;
            // Inside, or (page >= 0xf0) one page past the end.
            let pg = if page >= 0xf0 {
                pages
            } else {
                u64::from(page) % pages
            };
            (u.umem_id, pg * 4096)
        }
    }

    fn ring(&self, umem: Pick, page: u8) -> RingMem {
        let (umem_id, off) = self.umem(umem, page);
        RingMem {
            umem_id,
            umem_offset: off,
            dbr_umem_id: umem_id,
            dbr_offset: u64::from(page) * 64 % 4096,
        }
    }

    /// Creates with a typed command and records the handle.
    fn create<C: Command>(&mut self, cmd: &C) {
        let Ok(inbox) = encode_inbox(cmd) else { return };
        let mut out = vec![0u8; outbox_len(cmd)];
        if let Ok(h) = self.ctx().obj_create(&inbox, &mut out) {
            self.handles.push(h);
        }
    }

    fn modify<C: Command>(&self, h: ObjHandle, cmd: &C) {
        if let Ok(inbox) = encode_inbox(cmd) {
            let mut out = vec![0u8; outbox_len(cmd)];
            let _ = self.ctx().obj_modify(h, &inbox, &mut out);
        }
    }

    fn apply(&mut self, op: &Op) {
        match *op {
            Op::Pd => self.create(&AllocPd),
            Op::Td => self.create(&AllocTransportDomain),
            Op::Uar => {
                if let Ok(u) = self.ctx().uar_alloc(UarKind::NonCached) {
                    self.uars.push(UarRec {
                        handle: u.handle,
                        page_id: u.page_id,
                        base: u.base,
                        len: u.len,
                    });
                }
            }
            Op::Umem { pages, access } => {
                let len = usize::from(pages) * 4096;
                let m = DmaBuf::new(len).expect("host memory");
                // Every UMEM starts with a valid device ELF, so processes can be created
                // from its first page.
                let elf = mlx5_sim::testing::dpa_rig::elf::minimal();
                let _ = m.write(0, &elf);
                let p = m.ptr(0, len).expect("whole buffer").as_ptr();
                // SAFETY: `m` is `len` bytes of this process's memory, kept in `self.mem`
                // until the Sim is dropped, which closes the context (deregistering every
                // UMEM) before freeing it.
                let r = unsafe {
                    self.ctx().umem_reg(
                        p,
                        len,
                        UmemAccess::from_bits_truncate(u32::from(access)),
                        1 << 12,
                    )
                };
                if let Ok(u) = r {
                    self.umems.push((u, len));
                }
                self.mem.push(m);
            }
            Op::Mkey {
                pd,
                umem,
                page,
                pages,
                access,
            } => {
                let (umem_id, umem_offset) = self.umem(umem, page);
                let cmd = CreateMkey {
                    pd: Pdn(self.pick(pd, Kind::Pd)),
                    start_addr: 0x1000,
                    len: u64::from(pages) * 4096,
                    access: MkeyAccess {
                        local_read: true,
                        local_write: access & 1 != 0,
                        remote_read: access & 2 != 0,
                        remote_write: access & 4 != 0,
                        atomic: access & 8 != 0,
                    },
                    umem_id,
                    umem_offset,
                    key: access,
                    log_page_size: 12,
                };
                self.create(&cmd);
            }
            Op::Cq {
                uar,
                umem,
                page,
                log,
                cqe_sz,
                target,
                element,
            } => {
                // Mostly an EQ (one in five numbers past the last), sometimes a DPA element.
                let target = match target % 8 {
                    0..=5 => CqEventTarget::Eq(0x10 + u32::from(target >> 3) % 5),
                    6 => CqEventTarget::DpaThread(self.pick(element, Kind::Gen(ot::DPA_THREAD))),
                    _ => CqEventTarget::DpaEq(self.pick(element, Kind::Gen(ot::DPA_EQ))),
                };
                let cmd = CreateCq {
                    log_cq_size: log,
                    cqe_sz: cqe_sz.min(1),
                    uar_page: self.uar(uar),
                    target,
                    mem: self.ring(umem, page),
                    cq_period: 0,
                    cq_max_count: 0,
                    oi: cqe_sz == 2,
                    cc: false,
                    cqe_comp: false,
                };
                self.create(&cmd);
            }
            Op::Tis { td, pd } => {
                let cmd = CreateTis {
                    transport_domain: self.pick(td, Kind::Td),
                    pd: Pdn(self.pick(pd, Kind::Pd)),
                };
                self.create(&cmd);
            }
            Op::Sq {
                cq,
                tis,
                pd,
                uar,
                umem,
                page,
                stride,
                log,
            } => {
                let cmd = CreateSq {
                    cqn: Cqn(self.pick(cq, Kind::Cq)),
                    tisn: self.pick(tis, Kind::Tis),
                    wq: WqAttr {
                        pd: Pdn(self.pick(pd, Kind::Pd)),
                        uar_page: self.uar(uar),
                        log_wq_stride: stride,
                        log_wq_sz: log,
                        mem: self.ring(umem, page),
                    },
                    flush_in_error_en: false,
                };
                self.create(&cmd);
            }
            Op::Rq {
                cq,
                pd,
                uar,
                umem,
                page,
                stride,
                log,
            } => {
                let cmd = CreateRq {
                    cqn: Cqn(self.pick(cq, Kind::Cq)),
                    wq: WqAttr {
                        pd: Pdn(self.pick(pd, Kind::Pd)),
                        uar_page: self.uar(uar),
                        log_wq_stride: stride,
                        log_wq_sz: log,
                        mem: self.ring(umem, page),
                    },
                    flush_in_error_en: true,
                    counter_set_id: 0,
                };
                self.create(&cmd);
            }
            Op::Tir { td, rq } => {
                let cmd = CreateTir {
                    transport_domain: self.pick(td, Kind::Td),
                    inline_rqn: Rqn(self.pick(rq, Kind::Rq)),
                };
                self.create(&cmd);
            }
            Op::Rqt { ref rqs } => {
                let rqns = rqs.iter().map(|p| Rqn(self.pick(*p, Kind::Rq))).collect();
                self.create(&CreateRqt { rqns });
            }
            Op::Table { level, log } => self.create(&CreateFlowTable {
                level,
                log_size: log,
            }),
            Op::Group { table, start, len } => {
                let cmd = CreateFlowGroup {
                    table_id: self.pick(table, Kind::Table),
                    start_flow_index: u32::from(start),
                    end_flow_index: u32::from(start) + u32::from(len),
                    criteria: OuterMatch {
                        ethertype: (len % 2 == 0).then_some(0),
                        ..OuterMatch::default()
                    },
                };
                self.create(&cmd);
            }
            Op::Fte {
                table,
                group,
                index,
                tir,
            } => {
                let cmd = SetFte {
                    table_id: self.pick(table, Kind::Table),
                    flow_index: u32::from(index),
                    group_id: self.pick(group, Kind::Group),
                    value: OuterMatch {
                        ethertype: Some(0x0800),
                        ..OuterMatch::default()
                    },
                    tirn: self.pick(tir, Kind::Tir),
                    flow_counter: None,
                };
                self.create(&cmd);
            }
            Op::Qp {
                pd,
                uar,
                cq,
                umem,
                page,
                log_sq,
                log_rq,
            } => {
                let cmd = CreateQp {
                    pd: Pdn(self.pick(pd, Kind::Pd)),
                    uar_page: self.uar(uar),
                    cqn_snd: Cqn(self.pick(cq, Kind::Cq)),
                    cqn_rcv: Cqn(self.pick(cq, Kind::Cq)),
                    log_sq_size: log_sq,
                    log_rq_size: log_rq,
                    log_rq_stride: 1,
                    srqn: None,
                    mem: self.ring(umem, page),
                    user_index: 0,
                };
                self.create(&cmd);
            }
            Op::Process {
                pd,
                umem,
                elf_pages,
                heap_mib,
            } => {
                let (elf_umem_id, elf_umem_offset) = self.umem(umem, 0);
                let cmd = CreateGeneralObject(DpaProcessAttr {
                    pd: Pdn(self.pick(pd, Kind::Pd)),
                    elf_umem_id,
                    elf_umem_offset,
                    elf_size: u64::from(elf_pages) * 4096,
                    heap_size: u64::from(heap_mib) << 20,
                    sig_umem_id: 0,
                    sig_umem_offset: 0,
                    sig_size: 0,
                });
                self.create(&cmd);
            }
            Op::Mem { process, size } => {
                let cmd = CreateGeneralObject(DpaMemAttr {
                    dpa_process_id: self.pick(process, Kind::Gen(ot::DPA_PROCESS)),
                    size: u64::from(size),
                });
                self.create(&cmd);
            }
            Op::Thread {
                process,
                entry,
                affinity,
                affinity_id,
                outbox,
                window,
            } => {
                let cmd = CreateGeneralObject(DpaThreadAttr {
                    dpa_process_id: self.pick(process, Kind::Gen(ot::DPA_PROCESS)),
                    entry_point: u64::from(entry) * 0x1000,
                    user_arg: 1,
                    thread_local_storage_daddr: 0,
                    affinity: match affinity {
                        0 | 3 => DpaAffinity::None,
                        1 => DpaAffinity::Strict(affinity_id),
                        _ => DpaAffinity::Group(affinity_id % 3),
                    },
                    default_outbox_id: outbox
                        .map_or(0, |p| self.pick(p, Kind::Gen(ot::DPA_OUTBOX))),
                    default_window_id: window
                        .map_or(0, |p| self.pick(p, Kind::Gen(ot::DPA_WINDOW))),
                    continuable: false,
                });
                self.create(&cmd);
            }
            Op::Outbox { process, uar } => {
                let cmd = CreateGeneralObject(DpaOutboxAttr {
                    dpa_process_id: self.pick(process, Kind::Gen(ot::DPA_PROCESS)),
                    uar: self.uar(uar),
                });
                self.create(&cmd);
            }
            Op::Window { process, pd } => {
                let cmd = CreateGeneralObject(DpaWindowAttr {
                    dpa_process_id: self.pick(process, Kind::Gen(ot::DPA_PROCESS)),
                    pd: Pdn(self.pick(pd, Kind::Pd)),
                });
                self.create(&cmd);
            }
            Op::Destroy(i) => {
                if !self.handles.is_empty() {
                    let i = usize::from(i) % self.handles.len();
                    if self.ctx().obj_destroy(self.handles[i]).is_ok() {
                        self.handles.remove(i);
                    }
                }
            }
            Op::DeregUmem(i) => {
                if !self.umems.is_empty() {
                    let i = usize::from(i) % self.umems.len();
                    if self.ctx().umem_dereg(self.umems[i].0.handle).is_ok() {
                        self.umems.remove(i);
                    }
                }
            }
            Op::FreeUar(i) => {
                if !self.uars.is_empty() {
                    let i = usize::from(i) % self.uars.len();
                    if self.ctx().uar_free(self.uars[i].uar()).is_ok() {
                        self.uars.remove(i);
                    }
                }
            }
            Op::ModifySq { sq, from, to } => {
                if let Some((h, sqn)) = self.pick_handle(sq, Kind::Sq) {
                    let cmd = ModifySq {
                        sqn: Sqn(sqn),
                        from: WQ_STATES[usize::from(from) % 3],
                        to: WQ_STATES[usize::from(to) % 3],
                    };
                    self.modify(h, &cmd);
                }
            }
            Op::ModifyRq { rq, from, to } => {
                if let Some((h, rqn)) = self.pick_handle(rq, Kind::Rq) {
                    let cmd = ModifyRq {
                        rqn: Rqn(rqn),
                        from: WQ_STATES[usize::from(from) % 3],
                        to: WQ_STATES[usize::from(to) % 3],
                    };
                    self.modify(h, &cmd);
                }
            }
            Op::ModifyQp {
                qp,
                transition,
                mtu,
            } => {
                if let Some((h, qpn)) = self.pick_handle(qp, Kind::Qp) {
                    let attr = QpAttr {
                        mtu,
                        fl: true,
                        ..QpAttr::default()
                    };
                    match transition {
                        0 => self.modify(
                            h,
                            &ModifyQp {
                                qpn: Qpn(qpn),
                                attr,
                                transition: Rst2Init,
                            },
                        ),
                        1 => self.modify(
                            h,
                            &ModifyQp {
                                qpn: Qpn(qpn),
                                attr,
                                transition: Init2Rtr,
                            },
                        ),
                        2 => self.modify(
                            h,
                            &ModifyQp {
                                qpn: Qpn(qpn),
                                attr,
                                transition: Rtr2Rts,
                            },
                        ),
                        3 => self.modify(
                            h,
                            &ModifyQp {
                                qpn: Qpn(qpn),
                                attr,
                                transition: Rts2Rts,
                            },
                        ),
                        4 => self.modify(
                            h,
                            &ModifyQp {
                                qpn: Qpn(qpn),
                                attr,
                                transition: Qp2Err,
                            },
                        ),
                        _ => self.modify(
                            h,
                            &ModifyQp {
                                qpn: Qpn(qpn),
                                attr,
                                transition: Qp2Rst,
                            },
                        ),
                    }
                }
            }
            Op::Raw {
                method,
                opcode,
                handle,
                ref body,
                out,
            } => self.raw(method, opcode, handle, body, out),
            Op::Fault { kind, nth, status } => {
                let status = Status::ALL[usize::from(status) % Status::ALL.len()];
                match kind {
                    0 => self.dev.fail_nth_command(u64::from(nth), status),
                    1 => {
                        let op = Opcode::ALL[usize::from(nth) * 7 % Opcode::ALL.len()].0;
                        self.dev.fail_opcode(op, status);
                    }
                    _ => self.dev.clear_faults(),
                }
            }
            Op::Step => {
                self.dev.step();
            }
            Op::Chain(seed) => self.chain(seed),
        }
    }

    /// The newest live object of `kind`, or a number that names nothing.
    fn newest(&self, kind: Kind) -> u32 {
        self.handles
            .iter()
            .rev()
            .filter_map(|h| id_of(self.ctx().object(*h)?, Some(kind)))
            .next()
            .unwrap_or(0xfff0)
    }

    fn chain(&mut self, seed: u8) {
        let uar = self.uars.last().map_or(0x7777, |u| u.page_id);
        let (umem_id, len) = self
            .umems
            .last()
            .map_or((0x9999, 4096), |(u, len)| (u.umem_id, *len));
        let pages = (len / 4096) as u64;
        let ring = |i: u64| RingMem {
            umem_id,
            umem_offset: (u64::from(seed) + i) % pages * 4096,
            dbr_umem_id: umem_id,
            dbr_offset: i * 64,
        };
        let (pd, td) = (self.newest(Kind::Pd), self.newest(Kind::Td));
        let wq = |log_wq_stride, i| WqAttr {
            pd: Pdn(pd),
            uar_page: uar,
            log_wq_stride,
            log_wq_sz: 5,
            mem: ring(i),
        };
        let cq_on = |target, i| CreateCq {
            log_cq_size: 5,
            cqe_sz: 0,
            uar_page: uar,
            target,
            mem: ring(i),
            cq_period: 0,
            cq_max_count: 0,
            oi: false,
            cc: false,
            cqe_comp: false,
        };
        self.create(&cq_on(CqEventTarget::Eq(0x10), 0));
        let cqn = self.newest(Kind::Cq);
        self.create(&CreateTis {
            transport_domain: td,
            pd: Pdn(pd),
        });
        let tisn = self.newest(Kind::Tis);
        self.create(&CreateSq {
            cqn: Cqn(cqn),
            tisn,
            wq: wq(6, 1),
            flush_in_error_en: false,
        });
        self.create(&CreateRq {
            cqn: Cqn(cqn),
            wq: wq(4, 2),
            flush_in_error_en: false,
            counter_set_id: 0,
        });
        let rqn = self.newest(Kind::Rq);
        self.create(&CreateTir {
            transport_domain: td,
            inline_rqn: Rqn(rqn),
        });
        let tirn = self.newest(Kind::Tir);
        self.create(&CreateRqt {
            rqns: vec![Rqn(rqn)],
        });
        self.create(&CreateFlowTable {
            level: seed % 2,
            log_size: 4,
        });
        let table_id = self.newest(Kind::Table);
        self.create(&CreateFlowGroup {
            table_id,
            start_flow_index: 0,
            end_flow_index: 15,
            criteria: OuterMatch {
                udp_dport: Some(0),
                ..OuterMatch::default()
            },
        });
        let group_id = self.newest(Kind::Group);
        self.create(&SetFte {
            table_id,
            flow_index: u32::from(seed % 16),
            group_id,
            value: OuterMatch {
                udp_dport: Some(u16::from(seed)),
                ..OuterMatch::default()
            },
            tirn,
            flow_counter: None,
        });
        self.create(&CreateQp {
            pd: Pdn(pd),
            uar_page: uar,
            cqn_snd: Cqn(cqn),
            cqn_rcv: Cqn(cqn),
            log_sq_size: 4,
            log_rq_size: Some(4),
            log_rq_stride: 1,
            srqn: None,
            mem: ring(3),
            user_index: 0,
        });
        self.create(&CreateGeneralObject(DpaProcessAttr {
            pd: Pdn(pd),
            elf_umem_id: umem_id,
            elf_umem_offset: 0,
            elf_size: 4096,
            heap_size: 1 << 20,
            sig_umem_id: 0,
            sig_umem_offset: 0,
            sig_size: 0,
        }));
        let process = self.newest(Kind::Gen(ot::DPA_PROCESS));
        self.create(&CreateGeneralObject(DpaThreadAttr {
            dpa_process_id: process,
            entry_point: 0x1000,
            user_arg: u64::from(seed),
            thread_local_storage_daddr: 0,
            affinity: DpaAffinity::Strict(u16::from(seed)),
            default_outbox_id: 0,
            default_window_id: 0,
            continuable: false,
        }));
        let thread = self.newest(Kind::Gen(ot::DPA_THREAD));
        self.create(&cq_on(CqEventTarget::DpaThread(thread), 5));
        self.create(&CreateGeneralObject(DpaMemAttr {
            dpa_process_id: process,
            size: u64::from(seed) << 12,
        }));
    }

    /// A raw mailbox: its opcode one of the method's (when `opcode` is set), its body random.
    fn raw(&mut self, method: u8, opcode: Option<u8>, handle: u8, body: &[u8], out: u16) {
        let method = [
            DevxMethod::General,
            DevxMethod::ObjCreate,
            DevxMethod::ObjModify,
            DevxMethod::ObjQuery,
        ][usize::from(method) % 4];
        let mut mb = body.to_vec();
        if let (Some(sel), true) = (opcode, mb.len() >= 2) {
            let ops: Vec<Opcode> = Opcode::ALL
                .iter()
                .map(|(op, _)| *op)
                .filter(|op| op.devx_method() == method)
                .collect();
            let op = ops[usize::from(sel) % ops.len()];
            mb[0..2].copy_from_slice(&op.0.to_be_bytes());
        }
        let mut out = vec![0u8; usize::from(out)];
        let h = if self.handles.is_empty() {
            ObjHandle(u64::from(handle))
        } else {
            self.handles[usize::from(handle) % self.handles.len()]
        };
        let ctx = self.ctx();
        match method {
            DevxMethod::General => {
                let _ = ctx.general_cmd(&mb, &mut out);
            }
            DevxMethod::ObjCreate => {
                if let Ok(h) = ctx.obj_create(&mb, &mut out) {
                    self.handles.push(h);
                }
            }
            DevxMethod::ObjModify => {
                let _ = ctx.obj_modify(h, &mb, &mut out);
            }
            _ => {
                let _ = ctx.obj_query(h, &mb, &mut out);
            }
        }
    }

    /// Destroys everything the sequence left, in reverse creation order, retrying while that
    /// makes progress; then deregisters the UMEMs and frees the UARs. Each step must succeed.
    fn teardown(&mut self) -> Result<(), String> {
        loop {
            let before = self.handles.len();
            for i in (0..self.handles.len()).rev() {
                if self.ctx().obj_destroy(self.handles[i]).is_ok() {
                    self.handles.remove(i);
                }
            }
            if self.handles.is_empty() || self.handles.len() == before {
                break;
            }
        }
        if !self.handles.is_empty() {
            let left: Vec<_> = self.handles.iter().map(|h| self.ctx().object(*h)).collect();
            return Err(format!("objects that cannot be destroyed: {left:?}"));
        }
        for (u, _) in std::mem::take(&mut self.umems) {
            self.ctx()
                .umem_dereg(u.handle)
                .map_err(|e| format!("UMEM {} still referenced: {e}", u.umem_id))?;
        }
        for r in std::mem::take(&mut self.uars) {
            self.ctx()
                .uar_free(r.uar())
                .map_err(|e| format!("UAR {} still referenced: {e}", r.page_id))?;
        }
        Ok(())
    }

    fn close(&mut self) {
        self.ctx.take();
        self.uars.clear();
    }
}

/// EU groups and partitions (device registers, not context objects) a raw mailbox may have
/// created: deleted through the register interface.
fn clear_dpa_registers(dev: &Device) {
    let ctx = dev.open();
    for (reg, kind, len) in [
        (
            l::reg_id::NIC_DPA_EUG_REG,
            "EUG",
            l::nic_dpa_eug_reg::Layout::SIZE_BYTES,
        ),
        (
            l::reg_id::NIC_DPA_EU_PARTITION_REG,
            "EU_PARTITION",
            l::nic_dpa_eu_partition_reg::Layout::SIZE_BYTES,
        ),
    ] {
        for id in 1..=u16::MAX {
            if dev.inventory().count(kind) == 0 {
                break;
            }
            let mut data = vec![0u8; len];
            data[0] = 2 << 4;
            data[2..4].copy_from_slice(&id.to_be_bytes());
            let cmd = AccessRegisterUser {
                register_id: reg,
                argument: 0,
                write: true,
                data,
            };
            let inbox = encode_inbox(&cmd).expect("register inbox");
            let mut out = vec![0u8; outbox_len(&cmd)];
            let _ = ctx.general_cmd(&inbox, &mut out);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Properties.

proptest! {
    #![proptest_config(config(64))]

    /// Any sequence, then an explicit teardown (every object destroyable, every UMEM and UAR
    /// released), leaves the device empty; closing the context afterwards changes nothing.
    #[test]
    fn random_sequences_tear_down_explicitly(ops in sequence()) {
        let mut sim = Sim::new();
        for op in &ops {
            sim.apply(op);
        }
        sim.dev.clear_faults();
        let res = sim.teardown();
        prop_assert!(res.is_ok(), "{}; inventory: {}", res.unwrap_err(), sim.dev.inventory());
        clear_dpa_registers(&sim.dev);
        let inv = sim.dev.inventory();
        prop_assert!(inv.is_empty(), "left after teardown: {inv}");
        sim.close();
        prop_assert!(sim.dev.inventory().is_empty());
    }

    /// Any sequence, then closing the context (faults still armed), leaves the device empty.
    #[test]
    fn random_sequences_released_by_closing_the_context(ops in sequence()) {
        let mut sim = Sim::new();
        for op in &ops {
            sim.apply(op);
        }
        // Closing releases everything even with faults still armed.
        sim.close();
        sim.dev.clear_faults();
        clear_dpa_registers(&sim.dev);
        let inv = sim.dev.inventory();
        prop_assert!(inv.is_empty(), "left after the context closed: {inv}");
    }
}

/// Inputs for `fuzz_mailbox`: plain random bytes, or bytes biased towards its operation
/// selectors (the first byte of each step, modulo 16: 9 builds a typed command, 5 registers a
/// UMEM, 7 allocates a UAR, 14 modifies, 15 queries, 4 destroys), which get further.
fn fuzz_input() -> impl Strategy<Value = Vec<u8>> {
    const SELECTORS: [u8; 14] = [9, 9, 9, 9, 9, 9, 5, 5, 7, 7, 14, 14, 15, 4];
    prop_oneof![
        1 => prop::collection::vec(any::<u8>(), 0..2048),
        3 => prop::collection::vec(any::<u8>(), 0..1024).prop_map(|v| {
            v.into_iter()
                .map(|b| if b < 0x70 { SELECTORS[usize::from(b) % SELECTORS.len()] } else { b })
                .collect()
        }),
    ]
}

proptest! {
    #![proptest_config(config(256))]

    /// The fuzz target's entry point on random inputs: plain random bytes, and programs made
    /// of operation bytes each followed by a few random argument bytes (which get further).
    #[test]
    fn fuzz_mailbox_replays_random_inputs(data in fuzz_input()) {
        mlx5_sim::testing::fuzzing::fuzz_mailbox(&data);
    }
}

/// A few hand-made programs for the fuzz entry point: empty, all zeros, all ones, and one that
/// builds a stack of objects through templates before closing.
#[test]
fn fuzz_mailbox_fixed_inputs() {
    mlx5_sim::testing::fuzzing::fuzz_mailbox(&[]);
    mlx5_sim::testing::fuzzing::fuzz_mailbox(&[0; 4096]);
    mlx5_sim::testing::fuzzing::fuzz_mailbox(&[0xff; 4096]);
    let mut prog = Vec::new();
    // umem (8 pages, LOCAL_WRITE), uar, then templates PD, TD, CQ.
    prog.extend_from_slice(&[5, 7, 1, 0]);
    prog.extend_from_slice(&[7]);
    prog.extend_from_slice(&[9, 0, 0]);
    prog.extend_from_slice(&[9, 1, 0]);
    prog.extend_from_slice(&[9, 3, 0, 0, 6, 0, 0, 0, 0, 0, 1, 0, 0, 0]);
    prog.extend_from_slice(&[10, 10, 10]);
    mlx5_sim::testing::fuzzing::fuzz_mailbox(&prog);
}
