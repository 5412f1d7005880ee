//! The DPA's runtime: dispatching queued threads to free EUs as activations on the worker
//! pool, and applying their results (EU and thread state, process failure and coredump,
//! doorbells). The objects' lifecycle is state (`state::dpa::lifecycle`); the
//! DPA_PROCESS_COREDUMP command is with the other firmware commands (`fw::general`).

use std::sync::{Arc, Weak};

use mlx5_dpa::mlx5::layout::{View, ViewMut};
use mlx5_dpa::mlx5::layouts::{self as l, dpa::obj_type, dpa_process_status as ps};

use super::exec::{self, Effect, Job, Outcome};
use super::Exec;
use crate::riscv::{CodeCache, Hart};
use crate::state::dpa::memory::ProcessMem;
use crate::state::dpa::{Affinity, ProcStatus, ThreadState};
use crate::state::objects::GenKind;
use crate::state::Firmware;
use crate::state::State;

impl Firmware {
    /// The EU for a thread of function `vhca` with `affinity`: `Ok(Some)` a free one,
    /// `Ok(None)` none free now, `Err` none can ever match (the EUs it may use are
    /// [`Firmware::eus_for`]: its partition's, its group's). Among the free EUs allowed:
    /// `warm` (the EU that last kept a code cache of the program of text version `text`) when
    /// it still holds it; else the lowest with room for one more code cache; else the lowest.
    /// Many processes sharing the low EUs would otherwise evict each other's decoded (and
    /// compiled) code at every activation once more than [`EU_CODE_CACHES`] take turns on
    /// one EU.
    ///
    /// [`EU_CODE_CACHES`]: crate::state::dpa::EU_CODE_CACHES
    fn dpa_choose_eu(
        &self,
        vhca: u16,
        affinity: Affinity,
        warm: Option<u16>,
        text: u64,
    ) -> Result<Option<u16>, ()> {
        let allowed = self.eus_for(vhca, affinity).ok_or(())?;
        let free = |e: u32| self.dpa.eus.get(e as usize).filter(|x| !x.busy);
        if let Some(w) = warm.map(u32::from) {
            if allowed.contains(w)
                && free(w).is_some_and(|x| x.caches.iter().any(|(v, _)| *v == text))
            {
                return Ok(Some(w as u16));
            }
        }
        let eus = self.profile.dpa_eus();
        let room = (0..eus).find(|&e| {
            allowed.contains(e)
                && free(e).is_some_and(|x| x.caches.len() < crate::state::dpa::EU_CODE_CACHES)
        });
        Ok(room
            .or_else(|| (0..eus).find(|&e| allowed.contains(e) && free(e).is_some()))
            .map(|e| e as u16))
    }

    /// Starts every queued thread that has a free EU matching its affinity (in arrival
    /// order; the EU [`Firmware::dpa_choose_eu`] picks). Returns how many were dispatched.
    pub(crate) fn dpa_dispatch(
        &mut self,
        pool: &Exec,
        dev: &Weak<std::sync::Mutex<State>>,
    ) -> usize {
        if self.dpa.pending.is_empty() {
            return 0;
        }
        let eus = self.profile.dpa_eus() as usize;
        self.dpa.eu_count_at_least(eus);
        let budget = self.profile.dpa_insn_budget.max(1);
        let mut waiting = std::collections::VecDeque::new();
        let mut n = 0;
        while let Some(id) = self.dpa.pending.pop_front() {
            let Some(t) = self.dpa.threads.get(&id) else {
                continue;
            };
            if t.state != ThreadState::Queued {
                continue;
            }
            let Some(p) = self.dpa.processes.get(&t.process) else {
                continue;
            };
            if p.status != ProcStatus::Ok || p.closing {
                self.dpa.stats.dropped_events += 1;
                if let Some(t) = self.dpa.threads.get_mut(&id) {
                    t.state = ThreadState::Idle;
                }
                self.dpa_sync_thread_ctx(id);
                continue;
            }
            let eu = match self.dpa_choose_eu(p.vhca, t.affinity, p.warm_eu, p.mem.text_version()) {
                Ok(Some(eu)) => eu,
                Ok(None) => {
                    waiting.push_back(id);
                    continue;
                }
                Err(()) => {
                    // The EU or group went away (a group register destroyed, a profile
                    // shrunk): the event cannot run anywhere.
                    self.dpa.stats.dropped_events += 1;
                    if let Some(t) = self.dpa.threads.get_mut(&id) {
                        t.state = ThreadState::Idle;
                    }
                    self.dpa_sync_thread_ctx(id);
                    continue;
                }
            };
            let arg = self
                .gen
                .get(id)
                .and_then(|g| View::<l::dpa_thread::Layout>::new(&g.ctx).ok())
                .map_or(0, |c| c.get(l::dpa_thread::user_arg));
            let text_version = p.mem.text_version();
            // `dpa_choose_eu` picks below `eus`, and the table has at least that many.
            let Some(e) = self.dpa.eus.get_mut(usize::from(eu)) else {
                waiting.push_back(id);
                continue;
            };
            e.busy = true;
            let cache = match e.caches.iter().position(|(v, _)| *v == text_version) {
                Some(i) => e.caches.remove(i).1,
                None => {
                    self.dpa.stats.code_caches_made += 1;
                    #[cfg(feature = "jit")]
                    let share = jit_share_for(&mut self.dpa.jit_programs, &p.mem, text_version);
                    #[cfg(not(feature = "jit"))]
                    let share: Option<Share> = None;
                    Box::new(new_code_cache(share))
                }
            };
            self.dpa.seq += 1;
            let job = Job {
                seq: self.dpa.seq,
                thread: id,
                process: t.process,
                eu,
                activation: t.activations + 1,
                hart: e.hart.take().unwrap_or_else(|| Hart::new(0)),
                cache: Some(cache),
                text_version,
                mem: Arc::clone(&p.mem),
                slot: t.slot,
                entry: t.entry,
                arg,
                tls: t.tls,
                budget,
                outboxes: Arc::clone(&p.outboxes),
                windows: Arc::clone(&p.windows),
                default_outbox: t.default_outbox,
                default_window: t.default_window,
                duar: p.dpa_uars.first().copied().unwrap_or(0),
                continuable: t.continuable,
                weak: self.dpa.coherency == crate::state::dpa::DpaCoherency::Hardware,
                resume: t.resume.clone(),
                paused: t.paused.clone(),
                vhca_id: p.vhca,
                extensions: p.extensions.keys().copied().collect(),
                uid: p.uid,
                dev: dev.clone(),
                debug: p.debug.clone(),
            };
            if let Some(t) = self.dpa.threads.get_mut(&id) {
                t.state = ThreadState::Running { eu };
                t.last_eu = Some(eu);
                // The job carries the continuation now.
                t.resume = None;
                t.paused = None;
            }
            // The running activation holds its thread: it cannot be destroyed meanwhile.
            if let Some(g) = self.gen.get_mut(id) {
                g.meta.refs += 1;
            }
            tracing::trace!(target: "mlx5_sim::dpa", thread = id, eu, "activation dispatched");
            pool.submit(job);
            n += 1;
        }
        self.dpa.pending = waiting;
        n
    }
}

/// The compiled-code share of a process's text (version `version`): the one its EUs already
/// use, or the one of a process with the same text at the same address (a program the DPA
/// runs in several processes is compiled once), or a new one.
#[cfg(feature = "jit")]
fn jit_share_for(
    programs: &mut Vec<crate::state::dpa::JitProgram>,
    mem: &ProcessMem,
    version: u64,
) -> Option<crate::riscv::JitShare> {
    if let Some(s) = mem.jit_share(version) {
        return Some(s);
    }
    let text_base = mem.text_base();
    let mut text = vec![0u8; usize::try_from(mem.text_span).ok()?];
    mem.read(text_base, &mut text).ok()?;
    if mem.text_version() != version {
        // Changed while read: no share for a text that is not the one read.
        return None;
    }
    let same = |p: &crate::state::dpa::JitProgram| p.text_base == text_base && p.text == text;
    let share = match programs.iter().position(same) {
        Some(i) => {
            let p = programs.remove(i);
            let s = p.share.clone();
            programs.push(p);
            s
        }
        None => {
            let share = crate::riscv::JitShare::new()?;
            if programs.len() >= crate::state::dpa::JIT_PROGRAMS {
                programs.remove(0);
            }
            programs.push(crate::state::dpa::JitProgram {
                text_base,
                text,
                share: share.clone(),
            });
            share
        }
    };
    mem.set_jit_share(version, share.clone());
    Some(share)
}

/// What an EU code cache compiles into (nothing without the `jit` feature).
#[cfg(feature = "jit")]
type Share = crate::riscv::JitShare;
#[cfg(not(feature = "jit"))]
type Share = std::convert::Infallible;

/// A fresh EU code cache: with the `jit` feature, hot code is compiled into `share` (what
/// one EU compiled, the others run).
#[cfg_attr(not(feature = "jit"), allow(unused_variables))]
fn new_code_cache(share: Option<Share>) -> CodeCache {
    #[allow(unused_mut)] // set only with the JIT
    let mut c = CodeCache::new();
    #[cfg(feature = "jit")]
    if let Some(share) = share {
        c.set_jit_shared(CodeCache::JIT_HOT, &share);
    }
    c
}

/// Applies finished activations (in dispatch order): EU and thread state, process failure
/// and coredump, doorbells. Returns the work done.
pub(crate) fn apply(st: &mut State, done: Vec<exec::Done>) -> usize {
    let mut work = 0;
    for mut d in done {
        work += 1 + d.effects.len();
        let fw = &mut st.fw;
        let stats = &mut fw.dpa.stats;
        let paused = matches!(d.outcome, Outcome::Paused(_));
        // A pause is a slice of an activation, not one of its own.
        if !paused {
            stats.activations += 1;
        }
        stats.instructions += d.instret;
        stats.rtos_calls += d.rtos_calls;
        for u in &d.pinned {
            fw.mem.unpin(*u);
        }
        if let Some(g) = fw.gen.get_mut(d.thread) {
            g.meta.refs = g.meta.refs.saturating_sub(1);
        }
        if let Some(e) = fw.dpa.eus.get_mut(usize::from(d.eu)) {
            e.busy = false;
            if !paused {
                e.activations += 1;
            }
            e.hart = Some(d.hart.clone());
        }
        // Doorbells first: they were rung during the activation.
        for e in &d.effects {
            apply_effect(st, d.process, *e);
        }
        if !d.unwritten.is_empty() {
            let bytes = std::mem::take(&mut d.unwritten);
            st.fw.dpa.late_writebacks.push((d.process, bytes));
        }
        let fw = &mut st.fw;
        // The cache goes back to its EU only while its process lives (`dpa_released` drops
        // a destroyed process's caches; none may come back after).
        if let (Some(e), Some(p)) = (
            fw.dpa.eus.get_mut(usize::from(d.eu)),
            fw.dpa.processes.get_mut(&d.process),
        ) {
            if let Some(cache) = d.cache.take() {
                if e.caches.len() >= crate::state::dpa::EU_CODE_CACHES {
                    e.caches.remove(0);
                }
                e.caches.push((d.text_version, cache));
            }
            p.warm_eu = Some(d.eu);
        }
        let Some(t) = fw.dpa.threads.get_mut(&d.thread) else {
            continue;
        };
        if !paused {
            t.activations += 1;
        }
        let process = t.process;
        let mut requeue = false;
        match d.outcome {
            Outcome::Paused(ref p) => {
                // Queued at once to go on where it stopped; an event that came meanwhile
                // stays pending for after the activation.
                t.paused = Some(p.clone());
                t.state = ThreadState::Queued;
                requeue = true;
            }
            Outcome::Reschedule => {
                requeue = std::mem::take(&mut t.pending_event);
                t.state = if requeue {
                    ThreadState::Queued
                } else {
                    ThreadState::Idle
                };
            }
            Outcome::Yield(ref hart) => {
                t.resume = Some((**hart).clone());
                requeue = std::mem::take(&mut t.pending_event);
                t.state = if requeue {
                    ThreadState::Queued
                } else {
                    ThreadState::Idle
                };
            }
            Outcome::Retrigger => {
                t.pending_event = false;
                requeue = true;
                t.state = ThreadState::Queued;
            }
            Outcome::Finish(ret) => {
                t.pending_event = false;
                t.state = ThreadState::Finished;
                if let Some(v) = ret {
                    t.return_value = v;
                }
            }
            Outcome::Exit(code) => {
                t.pending_event = false;
                t.state = ThreadState::Finished;
                if let Some(p) = fw.dpa.processes.get_mut(&process) {
                    if p.status == ProcStatus::Ok {
                        p.status = ProcStatus::Exited(code);
                    }
                }
            }
            Outcome::Failed(f) => {
                t.pending_event = false;
                t.state = ThreadState::Error;
                if f.status == ps::WATCHDOG {
                    fw.dpa.stats.watchdogs += 1;
                } else {
                    fw.dpa.stats.faults += 1;
                }
                tracing::debug!(
                    target: "mlx5_sim::dpa",
                    thread = d.thread,
                    process,
                    pc = format_args!("{:#x}", f.pc),
                    syndrome = format_args!("{:#x}", f.syndrome),
                    "activation failed"
                );
                let first = fw
                    .dpa
                    .processes
                    .get(&process)
                    .is_some_and(|p| p.status == ProcStatus::Ok);
                if first {
                    let image = super::coredump::build(fw, &d, &f);
                    if let Some(p) = fw.dpa.processes.get_mut(&process) {
                        p.status = ProcStatus::Error {
                            status: f.status,
                            syndrome: f.syndrome,
                        };
                        p.coredump = Some(image);
                    }
                }
            }
        }
        if requeue {
            fw.dpa.pending.push_back(d.thread);
        }
    }
    work
}

/// Applies one doorbell an activation stored into outbox page `outbox`: honoured only for a
/// queue of the process's user context on the outbox's UAR; otherwise dropped and counted.
fn apply_effect(st: &mut State, process: u32, e: Effect) {
    let State { fw, dp } = st;
    let Some(p) = fw.dpa.processes.get(&process) else {
        fw.dpa.stats.violations += 1;
        return;
    };
    let (outbox, gvmi) = match e {
        Effect::CqArm { outbox, gvmi, .. }
        | Effect::EqUpdate { outbox, gvmi, .. }
        | Effect::Send { outbox, gvmi, .. } => (outbox, gvmi),
    };
    let Some(&own_uar) = p.outboxes.get(&outbox) else {
        fw.dpa.stats.violations += 1;
        return;
    };
    // Acting on the process's own function, the outbox reaches its user context's queues on
    // the outbox's UAR; on a function it is extended to, that function's context's queues on
    // the extended UAR.
    let (uid, uar) = if gvmi == p.vhca {
        (p.uid, own_uar)
    } else if let Some(&(_, uid, uar)) = p.extensions.get(&gvmi) {
        (uid, uar)
    } else {
        fw.dpa.stats.violations += 1;
        return;
    };
    let honoured = match e {
        Effect::CqArm { cqn, ci, .. } => {
            let ok = fw
                .cqs
                .get(cqn)
                .is_some_and(|c| c.meta.uid == uid && c.uar_page == uar);
            if ok {
                crate::datapath::cq::arm_cq(fw, dp, uar, cqn, ci);
            }
            ok
        }
        Effect::Send { qn, pi, .. } => {
            if let Some(sq) = fw
                .sqs
                .get_mut(qn)
                .filter(|s| s.meta.uid == uid && s.wq.uar_page == Some(uar))
            {
                advance_record(&sq.wq.dbr, pi);
                sq.doorbelled = true;
                dp.active_sqs.push(qn);
                true
            } else if let Some(qp) = fw
                .qps
                .get_mut(qn)
                .filter(|q| q.meta.uid == uid && q.uar_page == uar)
            {
                advance_record(&qp.dbr, pi);
                qp.rc.doorbelled = true;
                true
            } else {
                false
            }
        }
        Effect::EqUpdate { eqn, ci, .. } => match fw.gen.get_mut(eqn) {
            Some(g)
                if g.obj_type == obj_type::DPA_EQ
                    && g.meta.uid == uid
                    && matches!(g.kind, GenKind::DpaEq { uar: u, .. } if u == uar) =>
            {
                if let Ok(mut c) = ViewMut::<l::dpa_eq::Layout>::new(&mut g.ctx) {
                    c.set(l::dpa_eq::consumer_counter, u64::from(ci));
                }
                true
            }
            _ => false,
        },
    };
    if honoured {
        fw.dpa.stats.doorbells += 1;
    } else {
        fw.dpa.stats.violations += 1;
        tracing::debug!(target: "mlx5_sim::dpa", process, outbox, effect = ?e, "outbox doorbell refused");
    }
}

/// Moves a send doorbell record (big-endian 16-bit counter at offset 4) forward to `pi`
/// when the doorbell names a later counter than the record holds: a program may ring with
/// the counter alone (FlexIO `flexio_dev_qp_sq_ring_db`) or after writing the record.
fn advance_record(dbr: &crate::mem::Dma, pi: u16) {
    let cur = dbr.read_be32(4).map_or(0, |v| v as u16);
    let ahead = pi.wrapping_sub(cur);
    if ahead != 0 && ahead < 0x8000 {
        dbr.write(4, &u32::from(pi).to_be_bytes());
    }
}

/// The memory a test may read: see `Device::dpa_read`.
pub(crate) fn process_mem(fw: &Firmware, process: u32) -> Option<Arc<ProcessMem>> {
    fw.dpa.processes.get(&process).map(|p| Arc::clone(&p.mem))
}
