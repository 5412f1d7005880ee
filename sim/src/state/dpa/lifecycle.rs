//! The DPA's object lifecycle as state transitions: what creating and destroying the DPA
//! general objects does to the DPA's state (processes, threads, outboxes, windows, DPA UARs,
//! DPA_MEM blocks), to the memory model (a process's DUMEM) and to the objects' queried
//! contexts; thread state changes and completion events. Firmware commands, the datapath and
//! the DPA runtime call these; none of them decodes or runs anything.

use std::sync::Arc;

use mlx5_dpa::mlx5::layout::{View, ViewMut};
use mlx5_dpa::mlx5::layouts::{self as l, dpa::obj_type, dpa_process_status as ps};

use super::memory::ProcessMem;
use super::{map, Affinity, ProcStatus, ProcessRt, ThreadRt, ThreadState};
use crate::check::{self, Check};
use crate::state::objects::{GenKind, GenObj};
use crate::state::Firmware;

/// DUMEM id of a process (the model's id space, next to host UMEM ids).
pub(crate) fn dumem_id(process: u32) -> u32 {
    map::DUMEM_ID_BASE + process
}

impl Firmware {
    /// Registers the runtime of a new DPA_PROCESS (its memory becomes DUMEM `dumem_id(id)`).
    pub(crate) fn dpa_add_process(
        &mut self,
        id: u32,
        uid: u16,
        mem: ProcessMem,
        data_span: u64,
        heap: u64,
        dumem_used: u64,
    ) {
        let mem = Arc::new(mem);
        mem.set_dumem_limit(dumem_used);
        let backing: Arc<dyn crate::mem::DumemBacking> = mem.clone();
        // SAFETY: the DUMEM's memory is the process's mapping, which `backing` keeps alive;
        // every other access to it is atomic (`dpa::memory`).
        unsafe {
            self.mem.register_dumem(
                dumem_id(id),
                uid,
                mem.dumem_host_addr(),
                mem.dumem_len() as usize,
                backing,
            );
        }
        let slots = vec![false; mem.slot_count as usize];
        self.dpa.processes.insert(
            id,
            ProcessRt {
                uid,
                vhca: self.vhca_of(uid),
                extensions: Default::default(),
                mem,
                status: ProcStatus::Ok,
                closing: false,
                coredump: None,
                slots,
                outboxes: Default::default(),
                windows: Default::default(),
                dpa_uars: Vec::new(),
                dpa_mems: Default::default(),
                data_span,
                heap,
                heap_end: dumem_used,
                nic_counters: None,
                debug: None,
                warm_eu: None,
            },
        );
    }

    /// Refuses to destroy a process whose DUMEM queues or mkeys still use.
    pub(crate) fn dpa_check_destroy(&self, obj_type_: u16, id: u32) -> Result<(), Check> {
        if obj_type_ == obj_type::DPA_PROCESS && self.mem.dumem_refs(dumem_id(id)) != 0 {
            return Err(check::OBJECT_IN_USE);
        }
        Ok(())
    }

    /// Runtime bookkeeping after a DPA general object was created (`ctx` is its context).
    pub(crate) fn dpa_created(&mut self, id: u32) {
        let Some(g) = self.gen.get(id) else { return };
        match g.kind {
            GenKind::DpaThread {
                process,
                outbox,
                window,
            } => {
                let Ok(c) = View::<l::dpa_thread::Layout>::new(&g.ctx) else {
                    return;
                };
                use l::dpa_thread as th;
                let aff_id = c.get(th::affinity_id) as u16;
                let affinity = match c.get(th::affinity_type) {
                    1 => Affinity::Eu(aff_id),
                    2 => Affinity::Group(aff_id),
                    _ => Affinity::None,
                };
                let (entry, tls, continuable) = (
                    c.get(th::entry_point),
                    c.get(th::thread_local_storage_daddr),
                    c.get(th::continuable) != 0,
                );
                let Some(p) = self.dpa.processes.get_mut(&process) else {
                    return;
                };
                let Some(slot) = p.slots.iter().position(|s| !s) else {
                    return;
                };
                p.slots[slot] = true;
                self.dpa.threads.insert(
                    id,
                    ThreadRt {
                        process,
                        slot: slot as u32,
                        state: ThreadState::Idle,
                        pending_event: false,
                        affinity,
                        entry,
                        tls,
                        default_outbox: outbox,
                        default_window: window,
                        activations: 0,
                        last_eu: None,
                        return_value: 0,
                        continuable,
                        resume: None,
                        paused: None,
                    },
                );
            }
            GenKind::DpaOutbox { process, uar } => {
                if let Some(p) = self.dpa.processes.get_mut(&process) {
                    std::sync::Arc::make_mut(&mut p.outboxes).insert(id, uar);
                }
            }
            GenKind::DpaWindow { process, pd } => {
                if let Some(p) = self.dpa.processes.get_mut(&process) {
                    std::sync::Arc::make_mut(&mut p.windows).insert(id, pd);
                }
            }
            GenKind::DpaUar { process, uar, vhca } => {
                let uid = self.gen.get(id).map_or(0, |g| g.meta.uid);
                if let Some(p) = self.dpa.processes.get_mut(&process) {
                    if vhca == p.vhca {
                        p.dpa_uars.push(id);
                    } else {
                        p.extensions.insert(vhca, (id, uid, uar));
                    }
                }
            }
            GenKind::DpaMem {
                process,
                size,
                addr,
            } => {
                if let Some(p) = self.dpa.processes.get_mut(&process) {
                    p.dpa_mems.insert(id, (addr, size));
                    let used = addr + size - p.mem.dumem_base();
                    p.mem.set_dumem_limit(used);
                }
            }
            _ => {}
        }
    }

    /// Runtime bookkeeping when a DPA general object is destroyed.
    pub(crate) fn dpa_released(&mut self, id: u32, g: &GenObj) {
        match g.kind {
            GenKind::DpaProcess { .. } => {
                if let Some(p) = self.dpa.processes.remove(&id) {
                    // Its decoded (and compiled) code on every EU goes with it: kept, each
                    // destroyed process left ~30 KiB on some EU until eight later programs
                    // had pushed it out (linear growth over the first 2048 processes).
                    let v = p.mem.text_version();
                    for e in &mut self.dpa.eus {
                        e.caches.retain(|(t, _)| *t != v);
                    }
                }
                // Refs were checked by `dpa_check_destroy`.
                let _ = self.mem.unregister_dumem(dumem_id(id));
            }
            GenKind::DpaThread { .. } => {
                if let Some(t) = self.dpa.threads.remove(&id) {
                    if let Some(p) = self.dpa.processes.get_mut(&t.process) {
                        if let Some(s) = p.slots.get_mut(t.slot as usize) {
                            *s = false;
                        }
                    }
                }
                self.dpa.pending.retain(|t| *t != id);
            }
            GenKind::DpaOutbox { process, .. } => {
                if let Some(p) = self.dpa.processes.get_mut(&process) {
                    std::sync::Arc::make_mut(&mut p.outboxes).remove(&id);
                }
            }
            GenKind::DpaWindow { process, .. } => {
                if let Some(p) = self.dpa.processes.get_mut(&process) {
                    std::sync::Arc::make_mut(&mut p.windows).remove(&id);
                }
            }
            GenKind::DpaUar { process, .. } => {
                if let Some(p) = self.dpa.processes.get_mut(&process) {
                    p.dpa_uars.retain(|u| *u != id);
                    p.extensions.retain(|_, e| e.0 != id);
                }
            }
            GenKind::DpaMem {
                process,
                addr,
                size,
            } => {
                if let Some(p) = self.dpa.processes.get_mut(&process) {
                    p.dpa_mems.remove(&id);
                    // A block allocated here again starts zeroed, like fresh memory.
                    p.mem.discard(addr.saturating_sub(p.mem.dumem_base()), size);
                }
            }
            _ => {}
        }
    }

    /// MODIFY of a thread's `state`: RUNNING runs it once, IDLE makes it wait for events,
    /// FINISHED makes it ignore them. Refused while it runs, after it failed, or when its
    /// process failed or exited.
    pub(crate) fn dpa_set_thread_state(&mut self, id: u32, state: u8) -> Result<(), Check> {
        use l::dpa_thread_state as s;
        let t = self.dpa.threads.get(&id).ok_or(check::NO_SUCH_DPA_THREAD)?;
        let p = self
            .dpa
            .processes
            .get(&t.process)
            .ok_or(check::NO_SUCH_DPA_PROCESS)?;
        if p.status != ProcStatus::Ok || p.closing {
            return Err(check::DPA_PROCESS_STATE);
        }
        let next = match (t.state, state) {
            (ThreadState::Running { .. }, _) => return Err(check::DPA_THREAD_BUSY),
            (ThreadState::Error, _) => return Err(check::DPA_THREAD_STATE),
            (_, s::RUNNING) => ThreadState::Queued,
            (_, s::IDLE) => ThreadState::Idle,
            (_, s::FINISHED) => ThreadState::Finished,
            _ => return Err(check::BAD_STATE_FIELD),
        };
        let was_queued = t.state == ThreadState::Queued;
        if let Some(t) = self.dpa.threads.get_mut(&id) {
            t.state = next;
            if next != ThreadState::Queued {
                t.pending_event = false;
                // A paused activation ends where it stopped.
                t.paused = None;
            }
        }
        match (was_queued, next == ThreadState::Queued) {
            (false, true) => self.dpa.pending.push_back(id),
            (true, false) => self.dpa.pending.retain(|x| *x != id),
            _ => {}
        }
        self.dpa_sync_thread_ctx(id);
        Ok(())
    }

    /// A completion event for thread `id` (an armed CQ bound to it fired).
    pub(crate) fn dpa_event(&mut self, id: u32) {
        let Some(t) = self.dpa.threads.get_mut(&id) else {
            return;
        };
        let ok = self
            .dpa
            .processes
            .get(&t.process)
            .is_some_and(|p| p.status == ProcStatus::Ok && !p.closing);
        match t.state {
            _ if !ok => self.dpa.stats.dropped_events += 1,
            ThreadState::Idle => {
                t.state = ThreadState::Queued;
                self.dpa.pending.push_back(id);
            }
            ThreadState::Queued => {}
            ThreadState::Running { .. } => t.pending_event = true,
            ThreadState::Finished | ThreadState::Error => self.dpa.stats.dropped_events += 1,
        }
    }

    /// Copies a thread's runtime outputs into its context (what QUERY returns; the query
    /// calls this first, so the activation path need not).
    pub(crate) fn dpa_sync_thread_ctx(&mut self, id: u32) {
        let Some(t) = self.dpa.threads.get(&id) else {
            return;
        };
        let Some(g) = self.gen.get_mut(id) else {
            return;
        };
        use l::dpa_thread as th;
        if let Ok(mut c) = ViewMut::<th::Layout>::new(&mut g.ctx) {
            c.set(th::state, u64::from(t.state.code()));
            c.set(th::activation_count, t.activations);
            c.set(th::return_value, t.return_value);
            c.set(th::last_eu, u64::from(t.last_eu.unwrap_or(0)));
        }
    }

    pub(crate) fn dpa_sync_process_ctx(&mut self, id: u32) {
        let Some(p) = self.dpa.processes.get(&id) else {
            return;
        };
        let (status, syndrome, exit) = match p.status {
            ProcStatus::Ok => (ps::OK, 0, 0),
            ProcStatus::Error { status, syndrome } => (status, syndrome, 0),
            ProcStatus::Exited(code) => (ps::EXITED, 0, code),
        };
        let Some(g) = self.gen.get_mut(id) else {
            return;
        };
        use l::dpa_process as pr;
        if let Ok(mut c) = ViewMut::<pr::Layout>::new(&mut g.ctx) {
            c.set(pr::dpa_process_status, u64::from(status));
            c.set(pr::error_syndrome, u64::from(syndrome));
            c.set(pr::exit_status, exit & 0xffff_ffff);
        }
    }
}
