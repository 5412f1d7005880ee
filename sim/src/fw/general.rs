//! General objects: the DPA objects, aliases and cross-function access grants.
//!
//! The DPA object contexts are the driver's provisional layouts (`layouts::dpa`); the model
//! validates them against the DPA capability page and keeps memory accounting per process.
//! A DPA_PROCESS loads its device ELF into its own memory here; the runtime of the DPA
//! objects (threads, outboxes, windows, execution) is `crate::dpa`.

use mlx5_dpa::mlx5::layout::View;
use mlx5_dpa::mlx5::layouts::{self as l, dpa::obj_type, vhca::alias_type};

use super::{inbox, limit, owned, size, unref, Firmware};
use crate::check::{self, Check};
use crate::state::objects::*;

use crate::state::dpa::map::{DUMEM_BASE, DUMEM_ID_BASE};
use crate::state::dpa::Affinity;

/// An object context as its layout, or the inbox is too short for it.
fn ctx_view<L: mlx5_dpa::mlx5::Layout>(ctx: &[u8]) -> Result<View<'_, L>, Check> {
    View::<L>::new(ctx).map_err(|_| check::INBOX_TOO_SHORT)
}

/// What a creation that makes no process gives back.
fn no_process((kind, refs): (GenKind, Vec<Ref>)) -> (GenKind, Vec<Ref>, Option<NewProcess>) {
    (kind, refs, None)
}

/// A new process's loaded image, heap size and DUMEM bytes in use, kept from its checks to
/// its creation.
struct NewProcess {
    loaded: crate::dpa::loader::Loaded,
    heap: u64,
    dumem_used: u64,
}

const HDR: usize = size::<l::general_obj_in_cmd_hdr::Layout>();

/// Alias object types (docs/sources.md §2, §3): 0xff01.. .
fn is_alias_type(t: u16) -> bool {
    t >= 0xff00
}

impl Firmware {
    fn ctx_len(obj_type: u16) -> Option<usize> {
        Some(match obj_type {
            obj_type::DPA_PROCESS => size::<l::dpa_process::Layout>(),
            obj_type::DPA_MEM => size::<l::dpa_mem::Layout>(),
            obj_type::DPA_THREAD => size::<l::dpa_thread::Layout>(),
            obj_type::DPA_OUTBOX => size::<l::dpa_outbox::Layout>(),
            obj_type::DPA_WINDOW => size::<l::dpa_window::Layout>(),
            obj_type::DPA_EQ => size::<l::dpa_eq::Layout>(),
            obj_type::DB_CQ_MAPPING => size::<l::dpa_db_cq_mapping::Layout>(),
            obj_type::DPA_UAR => size::<l::dpa_uar::Layout>(),
            t if is_alias_type(t) => size::<l::alias_context::Layout>(),
            _ => return None,
        })
    }

    fn process_of(&self, uid: u16, id: u32) -> Result<&GenObj, Check> {
        let g = self.gen.get(id).ok_or(check::NO_SUCH_DPA_PROCESS)?;
        if g.obj_type != obj_type::DPA_PROCESS || is_alias(g) {
            return Err(check::WRONG_OBJ_TYPE);
        }
        owned(&g.meta, uid)?;
        Ok(g)
    }

    /// The object `id` names for context `uid`: the target of an alias of type `t` that `uid`
    /// holds, or `id` itself.
    pub(crate) fn through_alias(&self, uid: u16, id: u32, t: u16) -> u32 {
        match self.gen.get(id) {
            Some(GenObj {
                meta,
                kind: GenKind::Alias {
                    of_type, target, ..
                },
                ..
            }) if meta.uid == uid && *of_type == t => *target,
            _ => id,
        }
    }

    fn count_type(&self, t: u16) -> u32 {
        self.gen
            .iter()
            .filter(|(_, g)| g.obj_type == t && !is_alias(g))
            .count() as u32
    }

    pub(super) fn create_general(
        &mut self,
        uid: u16,
        inb: &[u8],
        out: &mut [u8],
    ) -> Result<ObjRef, Check> {
        use l::general_obj_in_cmd_hdr as h;
        let v = inbox::<h::Layout>(inb)?;
        let mut o = super::outbox::<l::general_obj_out_cmd_hdr::Layout>(out)?;
        let t = v.value(h::obj_type);
        if v.get(h::log_obj_range) != 0 {
            return Err(check::NOT_SUPPORTED);
        }
        if !(is_alias_type(t) || self.profile.supports_obj_type(t)) {
            return Err(check::UNKNOWN_OBJ_TYPE);
        }
        // An alias: of a general object (its type, alias_object set) or of another class of
        // object (an alias type, 0xff01.., always with alias_object).
        let alias = v.get(h::alias_object) == 1;
        if is_alias_type(t) && !alias {
            return Err(check::UNKNOWN_OBJ_TYPE);
        }
        let len = if alias {
            size::<l::alias_context::Layout>()
        } else {
            Self::ctx_len(t).ok_or(check::UNKNOWN_OBJ_TYPE)?
        };
        if inb.len() < HDR + len {
            return Err(check::INBOX_TOO_SHORT);
        }
        let mut ctx: Box<[u8]> = inb[HDR..HDR + len].into();
        let (kind, refs, new_process) = match t {
            _ if alias => self.create_alias(uid, t, &ctx).map(no_process)?,
            obj_type::DPA_PROCESS => self.create_dpa_process(uid, t, &ctx)?,
            obj_type::DPA_MEM => self.create_dpa_mem(uid, t, &ctx).map(no_process)?,
            obj_type::DPA_THREAD => self.create_dpa_thread(uid, t, &ctx).map(no_process)?,
            obj_type::DPA_OUTBOX => self.create_dpa_outbox(uid, t, &ctx).map(no_process)?,
            obj_type::DPA_WINDOW => self.create_dpa_window(uid, t, &ctx).map(no_process)?,
            obj_type::DPA_UAR => self.create_dpa_uar(uid, t, &ctx).map(no_process)?,
            obj_type::DPA_EQ => self.create_dpa_eq(uid, t, &ctx).map(no_process)?,
            obj_type::DB_CQ_MAPPING => self.create_db_cq_mapping(uid, t, &ctx).map(no_process)?,
            _ => return Err(check::UNKNOWN_OBJ_TYPE),
        };
        self.take_refs(&refs);
        let id = match self.gen.insert_with(|_| GenObj {
            meta: Meta::new(uid),
            obj_type: t,
            kind,
            ctx: Box::new([]),
        }) {
            Some(id) => id,
            None => {
                for r in refs {
                    self.drop_ref(r);
                }
                return Err(check::TOO_MANY_OBJECTS);
            }
        };
        // Fill in the outputs of the context.
        if t == obj_type::DPA_PROCESS {
            if let Ok(mut c) = mlx5_dpa::mlx5::ViewMut::<l::dpa_process::Layout>::new(&mut ctx) {
                c.set(l::dpa_process::dumem_id, u64::from(DUMEM_ID_BASE + id));
                // Where the program's data was linked (map::LINK_LAYOUTS).
                let base = new_process
                    .as_ref()
                    .map_or(DUMEM_BASE, |n| n.loaded.mem.dumem_base());
                c.set(l::dpa_process::dumem_base, base);
                c.set(l::dpa_process::dpa_process_status, 0);
            }
        }
        if let Some(GenObj {
            kind: GenKind::DpaMem { addr, size, .. },
            ..
        }) = self.gen.get(id)
        {
            let (addr, size) = (*addr, *size);
            if let Ok(mut c) = mlx5_dpa::mlx5::ViewMut::<l::dpa_mem::Layout>::new(&mut ctx) {
                c.set(l::dpa_mem::dpa_addr, addr);
                c.set(l::dpa_mem::size, size);
            }
        }
        if let Some(g) = self.gen.get_mut(id) {
            g.ctx = ctx;
        }
        if let Some(GenObj {
            kind:
                GenKind::Alias {
                    of_type: alias_type::DPA_DUMEM,
                    target,
                    ..
                },
            ..
        }) = self.gen.get(id)
        {
            let target = *target;
            // The target was checked above, under the same lock.
            let _ = self.mem.add_dumem_alias(id, uid, target);
        }
        match new_process {
            Some(NewProcess {
                loaded,
                heap,
                dumem_used,
            }) => {
                self.dpa_add_process(id, uid, loaded.mem, loaded.data_span, heap, dumem_used);
            }
            None => self.dpa_created(id),
        }
        if t == obj_type::DPA_THREAD {
            self.dpa_sync_thread_ctx(id);
        }
        o.set(l::general_obj_out_cmd_hdr::obj_id, u64::from(id));
        Ok(ObjRef::General { obj_type: t, id })
    }

    /// Refuses one more object of type `t` when the DPA capability `log_max` (a log2 count)
    /// says the device holds no more.
    fn below_limit<T>(
        &self,
        t: u16,
        log_max: mlx5_dpa::mlx5::Field<l::dpa_cap::Layout, T>,
        err: Check,
    ) -> Result<(), Check> {
        if u64::from(self.count_type(t)) >= u64::from(limit(self.profile.dpa_cap(log_max))) {
            return Err(err);
        }
        Ok(())
    }

    /// Takes a reference on each object a new one stands on.
    fn take_refs(&mut self, refs: &[Ref]) {
        for r in refs {
            match *r {
                Ref::Pd(p) => {
                    if let Some(p) = self.pds.get_mut(p) {
                        p.meta.refs += 1
                    }
                }
                Ref::Umem(u) => self.mem.pin_whole(u),
                Ref::Uar(u) => {
                    if let Some(u) = self.uars.get_mut(u) {
                        u.refs += 1
                    }
                }
                Ref::Gen(g) => {
                    if let Some(g) = self.gen.get_mut(g) {
                        g.meta.refs += 1
                    }
                }
                Ref::Cq(c) => {
                    if let Some(c) = self.cqs.get_mut(c) {
                        c.meta.refs += 1
                    }
                }
            }
        }
    }

    /// An alias of another function's object, through the grant its owner made.
    fn create_alias(
        &mut self,
        _uid: u16,
        t: u16,
        ctx: &[u8],
    ) -> Result<(GenKind, Vec<Ref>), Check> {
        use l::alias_context as a;

        let c = ctx_view::<a::Layout>(ctx)?;
        let vhca = c.value(a::vhca_id_to_be_accessed);
        if !self.is_function(vhca) {
            // Another device's function: not something one model reaches.
            return Err(check::NOT_SUPPORTED);
        }
        let target = c.value(a::object_id_to_be_accessed);
        let key = c
            .get_bytes(a::access_key)
            .map_err(|_| check::INBOX_TOO_SHORT)?;
        let grant = self
            .grants
            .iter()
            .find(|g| g.vhca == vhca && g.obj_id == target && g.obj_type == t)
            .ok_or(check::NO_SUCH_ALIAS_GRANT)?;
        if grant.key[..] != key[..32.min(key.len())] {
            return Err(check::BAD_ACCESS_KEY);
        }
        if t == alias_type::DPA_DUMEM && self.mem.dumem_refs_of(target).is_none() {
            return Err(check::NO_SUCH_OBJECT);
        }
        Ok((GenKind::Alias { of_type: t, target }, vec![]))
    }

    /// A DPA process: its image loaded (and authenticated when the profile trusts a root).
    fn create_dpa_process(
        &mut self,
        uid: u16,
        t: u16,
        ctx: &[u8],
    ) -> Result<(GenKind, Vec<Ref>, Option<NewProcess>), Check> {
        use l::dpa_cap as d;
        use l::dpa_process as p;
        let c = ctx_view::<p::Layout>(ctx)?;
        let max = self
            .profile
            .dpa_cap(d::max_dpa_processes)
            .min(u64::from(limit(
                self.profile.dpa_cap(d::log_max_dpa_process),
            )));
        if u64::from(self.count_type(t)) >= max {
            return Err(check::TOO_MANY_OBJECTS);
        }
        let pd = c.get(p::pd) as u32;
        self.check_owned_pd(uid, pd)?;
        let elf_umem = c.get(p::elf_umem_id) as u32;
        let elf_size = c.get(p::elf_size);
        if elf_size == 0 {
            return Err(check::BAD_LENGTH);
        }
        let image = self
            .mem
            .range(uid, elf_umem, c.get(p::elf_umem_offset), elf_size)
            .map_err(|e| {
                if e == check::BAD_UMEM_RANGE {
                    check::BAD_ELF_RANGE
                } else {
                    e
                }
            })?;
        let heap = c.get(p::heap_size);
        let budget = self.profile.dpa_process_memory();
        elf_size.checked_add(heap).ok_or(check::BAD_HEAP_SIZE)?;
        if heap > budget || elf_size > crate::state::dpa::map::ELF_MAX {
            return Err(check::DPA_MEMORY_EXHAUSTED);
        }
        // Load the ELF at its link addresses (what it occupies is accounted below,
        // not its file size); the heap follows the data segments, DPA_MEM blocks the
        // heap.
        let mut bytes = vec![0u8; elf_size as usize];
        if !image.read(0, &mut bytes) {
            return Err(check::BAD_ELF_RANGE);
        }
        // DPA Application Authentication, when the profile enables it.
        if !self.profile.dpa_auth_roots.is_empty() {
            let sig_size = c.get(p::sig_size);
            if sig_size == 0 {
                return Err(check::DPA_APP_UNSIGNED);
            }
            if sig_size > 64 << 10 {
                return Err(check::BAD_SIG_RANGE);
            }
            let sig = self
                .mem
                .range(
                    uid,
                    c.get(p::sig_umem_id) as u32,
                    c.get(p::sig_umem_offset),
                    sig_size,
                )
                .map_err(|_| check::BAD_SIG_RANGE)?;
            let mut sig_bytes = vec![0u8; sig_size as usize];
            if !sig.read(0, &mut sig_bytes) {
                return Err(check::BAD_SIG_RANGE);
            }
            let valid =
                mlx5_dpa::image::auth::verify(&bytes, &sig_bytes, &self.profile.dpa_auth_roots)
                    .is_ok_and(|v| v.trusted());
            if !valid {
                return Err(check::DPA_APP_AUTH_FAILED);
            }
        }
        let dumem_len = budget.min(crate::state::dpa::map::DUMEM_MAX);
        let slots = limit(self.profile.dpa_cap(d::log_max_dpa_threads_per_process))
            .min(crate::state::dpa::map::MAX_SLOTS);
        let loaded = crate::dpa::loader::load(&bytes, dumem_len, slots)?;
        let dumem_used = round_up(
            loaded
                .data_span
                .checked_add(heap)
                .ok_or(check::BAD_HEAP_SIZE)?,
            4096,
        );
        let used = loaded.image_bytes.saturating_add(heap);
        if used > budget || dumem_used > dumem_len {
            return Err(check::DPA_MEMORY_EXHAUSTED);
        }
        let new = NewProcess {
            loaded,
            heap,
            dumem_used,
        };
        Ok((
            GenKind::DpaProcess {
                pd,
                elf_umem,
                used,
                threads: 0,
            },
            vec![Ref::Pd(pd), Ref::Umem(elf_umem)],
            Some(new),
        ))
    }

    /// A block of a process's DPA memory, first fit after its heap.
    fn create_dpa_mem(
        &mut self,
        uid: u16,
        _t: u16,
        ctx: &[u8],
    ) -> Result<(GenKind, Vec<Ref>), Check> {
        use l::dpa_cap as d;
        use l::dpa_mem as m;
        let c = ctx_view::<m::Layout>(ctx)?;
        let process = c.get(m::dpa_process_id) as u32;
        self.process_of(uid, process)?;
        let size = c.get(m::size);
        if size == 0 {
            return Err(check::BAD_LENGTH);
        }
        if size > 1u64 << self.profile.dpa_cap(d::log_max_dpa_mem).min(63) {
            return Err(check::ABOVE_CAP);
        }
        let block = self.profile.dpa_cap(d::dpa_mem_block_size).max(1);
        let rounded = size
            .div_ceil(block)
            .checked_mul(block)
            .ok_or(check::BAD_LENGTH)?;
        let budget = self.profile.dpa_process_memory();
        // First fit in the DUMEM window after the heap (freed blocks are reused).
        let free = self.dpa.find_block(process, rounded);
        let Some(GenObj {
            kind: GenKind::DpaProcess { used, .. },
            ..
        }) = self.gen.get_mut(process)
        else {
            return Err(check::NO_SUCH_DPA_PROCESS);
        };
        let Some(addr) = free.filter(|_| used.saturating_add(rounded) <= budget) else {
            return Err(check::DPA_MEMORY_EXHAUSTED);
        };
        *used += rounded;
        Ok((
            GenKind::DpaMem {
                process,
                size: rounded,
                addr,
            },
            vec![Ref::Gen(process)],
        ))
    }

    /// A DPA thread of a process, with its affinity and default outbox / window.
    fn create_dpa_thread(
        &mut self,
        uid: u16,
        t: u16,
        ctx: &[u8],
    ) -> Result<(GenKind, Vec<Ref>), Check> {
        use l::dpa_cap as d;
        use l::dpa_thread as th;
        let c = ctx_view::<th::Layout>(ctx)?;
        let process = c.get(th::dpa_process_id) as u32;
        self.process_of(uid, process)?;
        self.below_limit(t, d::log_max_dpa_thread, check::TOO_MANY_THREADS)?;
        if let Some(GenObj {
            kind: GenKind::DpaProcess { threads, .. },
            ..
        }) = self.gen.get(process)
        {
            if u64::from(*threads)
                >= u64::from(limit(
                    self.profile.dpa_cap(d::log_max_dpa_threads_per_process),
                ))
            {
                return Err(check::TOO_MANY_THREADS);
            }
        }
        // Provisional layout: an override may widen the field past 16 bits.
        let id = u16::try_from(c.get(th::affinity_id));
        let affinity = match (c.get(th::affinity_type), id) {
            (0, _) => Affinity::None,
            (1, Ok(id)) if self.profile.dpa_cap(d::thread_affinity_single_hart) == 1 => {
                Affinity::Eu(id)
            }
            (2, Ok(id)) if self.profile.dpa_cap(d::thread_affinity_hart_group) == 1 => {
                Affinity::Group(id)
            }
            _ => return Err(check::BAD_AFFINITY),
        };
        // The process's function must have EUs for it (`fw::eu`).
        let vhca = self
            .dpa
            .processes
            .get(&process)
            .map_or(self.vhca_of(uid), |p| p.vhca);
        self.affinity_allowed(uid, vhca, affinity)?;
        if c.get(th::entry_point) == 0 {
            return Err(check::BAD_ENTRY_POINT);
        }
        if !self.dpa.has_slot(process) {
            return Err(check::TOO_MANY_THREADS);
        }
        let mut refs = vec![Ref::Gen(process)];
        let mut linked = |field, want, missing| -> Result<Option<u32>, Check> {
            let id = c.get(field) as u32;
            if id == 0 {
                return Ok(None);
            }
            let g = self.gen.get(id).ok_or(missing)?;
            if g.obj_type != want {
                return Err(check::WRONG_OBJ_TYPE);
            }
            owned(&g.meta, uid)?;
            if parent_process(&g.kind) != Some(process) {
                return Err(check::CROSS_PROCESS);
            }
            refs.push(Ref::Gen(id));
            Ok(Some(id))
        };
        let outbox = linked(
            th::default_outbox_id,
            obj_type::DPA_OUTBOX,
            check::NO_SUCH_DPA_OUTBOX,
        )?;
        let window = linked(
            th::default_window_id,
            obj_type::DPA_WINDOW,
            check::NO_SUCH_DPA_WINDOW,
        )?;
        if let Some(GenObj {
            kind: GenKind::DpaProcess { threads, .. },
            ..
        }) = self.gen.get_mut(process)
        {
            *threads += 1;
        }
        Ok((
            GenKind::DpaThread {
                process,
                outbox,
                window,
            },
            refs,
        ))
    }

    /// An outbox of a process over a UAR.
    fn create_dpa_outbox(
        &mut self,
        uid: u16,
        t: u16,
        ctx: &[u8],
    ) -> Result<(GenKind, Vec<Ref>), Check> {
        use l::dpa_cap as d;
        use l::dpa_outbox as ob;
        let c = ctx_view::<ob::Layout>(ctx)?;
        let process = c.get(ob::dpa_process_id) as u32;
        self.process_of(uid, process)?;
        self.below_limit(t, d::log_max_dpa_outbox, check::TOO_MANY_OBJECTS)?;
        let uar = c.get(ob::uar) as u32;
        self.check_uar(uid, uar)?;
        Ok((
            GenKind::DpaOutbox { process, uar },
            vec![Ref::Gen(process), Ref::Uar(uar)],
        ))
    }

    /// A window of a process over a PD.
    fn create_dpa_window(
        &mut self,
        uid: u16,
        t: u16,
        ctx: &[u8],
    ) -> Result<(GenKind, Vec<Ref>), Check> {
        use l::dpa_cap as d;
        use l::dpa_window as w;
        let c = ctx_view::<w::Layout>(ctx)?;
        let process = c.get(w::dpa_process_id) as u32;
        self.process_of(uid, process)?;
        self.below_limit(t, d::log_max_dpa_window, check::TOO_MANY_OBJECTS)?;
        let pd = c.get(w::pd) as u32;
        self.check_owned_pd(uid, pd)?;
        Ok((
            GenKind::DpaWindow { process, pd },
            vec![Ref::Gen(process), Ref::Pd(pd)],
        ))
    }

    /// A UAR of a process (another function's, through an alias of it).
    fn create_dpa_uar(
        &mut self,
        uid: u16,
        _t: u16,
        ctx: &[u8],
    ) -> Result<(GenKind, Vec<Ref>), Check> {
        use l::dpa_uar as u;
        let c = ctx_view::<u::Layout>(ctx)?;
        // Another function's process, through an alias of it: the UAR extends that
        // process to this function (FlexIO `flexio_uar_extend`; provisional: how
        // firmware learns the extension is not public).
        let named = c.get(u::dpa_process_id) as u32;
        let process = self.through_alias(uid, named, obj_type::DPA_PROCESS);
        if process == named {
            self.process_of(uid, process)?;
        } else if self.gen.get(process).map(|g| g.obj_type) != Some(obj_type::DPA_PROCESS) {
            return Err(check::NO_SUCH_DPA_PROCESS);
        }
        let uar = c.get(u::uar_page) as u32;
        self.check_uar(uid, uar)?;
        let vhca = self.vhca_of(uid);
        Ok((
            GenKind::DpaUar { process, uar, vhca },
            vec![Ref::Gen(process), Ref::Uar(uar)],
        ))
    }

    /// A DPA EQ in a UMEM.
    fn create_dpa_eq(
        &mut self,
        uid: u16,
        _t: u16,
        ctx: &[u8],
    ) -> Result<(GenKind, Vec<Ref>), Check> {
        use l::dpa_eq as e;
        let c = ctx_view::<e::Layout>(ctx)?;
        let log = c.get(e::log_umem_size);
        if !(6..=22).contains(&log) {
            return Err(check::BAD_LOG_SIZE);
        }
        let umem = self.mem.resolve(uid, c.value(e::umem_id));
        let off = c.get(e::umem_offset);
        self.mem.range(uid, umem, off, 1 << log)?;
        let uar = c.value(e::uar_page);
        self.check_uar(uid, uar)?;
        Ok((
            GenKind::DpaEq { umem, uar },
            vec![Ref::Umem(umem), Ref::Uar(uar)],
        ))
    }

    /// A doorbell-to-CQ mapping.
    fn create_db_cq_mapping(
        &mut self,
        uid: u16,
        _t: u16,
        ctx: &[u8],
    ) -> Result<(GenKind, Vec<Ref>), Check> {
        use l::dpa_db_cq_mapping as m;
        let c = ctx_view::<m::Layout>(ctx)?;
        let cqn = c.value(m::cqn);
        let cq = self.cqs.get(cqn).ok_or(check::NO_SUCH_CQ)?;
        owned(&cq.meta, uid)?;
        Ok((GenKind::DbCqMapping { cqn }, vec![Ref::Cq(cqn)]))
    }

    fn drop_ref(&mut self, r: Ref) {
        match r {
            Ref::Pd(p) => unref(self.pds.get_mut(p).map(|p| &mut p.meta)),
            Ref::Umem(u) => self.mem.unpin(u),
            Ref::Uar(u) => {
                if let Some(u) = self.uars.get_mut(u) {
                    u.refs = u.refs.saturating_sub(1)
                }
            }
            Ref::Gen(g) => unref(self.gen.get_mut(g).map(|g| &mut g.meta)),
            Ref::Cq(c) => unref(self.cqs.get_mut(c).map(|c| &mut c.meta)),
        }
    }

    pub(super) fn release_general(&mut self, id: u32, g: GenObj) {
        // Grants of the object go with it (ids are reused).
        let dumem = DUMEM_ID_BASE + id;
        self.grants.retain(|gr| {
            !(gr.obj_id == id && gr.obj_type == g.obj_type
                || g.obj_type == obj_type::DPA_PROCESS
                    && gr.obj_type == alias_type::DPA_DUMEM
                    && gr.obj_id == dumem)
        });
        let refs: Vec<Ref> = match g.kind {
            GenKind::DpaProcess { pd, elf_umem, .. } => vec![Ref::Pd(pd), Ref::Umem(elf_umem)],
            GenKind::DpaMem { process, size, .. } => {
                if let Some(GenObj {
                    kind: GenKind::DpaProcess { used, .. },
                    ..
                }) = self.gen.get_mut(process)
                {
                    *used = used.saturating_sub(size);
                }
                vec![Ref::Gen(process)]
            }
            GenKind::DpaThread {
                process,
                outbox,
                window,
            } => {
                if let Some(GenObj {
                    kind: GenKind::DpaProcess { threads, .. },
                    ..
                }) = self.gen.get_mut(process)
                {
                    *threads = threads.saturating_sub(1);
                }
                let mut r = vec![Ref::Gen(process)];
                r.extend(outbox.map(Ref::Gen));
                r.extend(window.map(Ref::Gen));
                r
            }
            GenKind::DpaOutbox { process, uar } | GenKind::DpaUar { process, uar, .. } => {
                vec![Ref::Gen(process), Ref::Uar(uar)]
            }
            GenKind::DpaWindow { process, pd } => vec![Ref::Gen(process), Ref::Pd(pd)],
            GenKind::DpaEq { umem, uar } => vec![Ref::Umem(umem), Ref::Uar(uar)],
            GenKind::DbCqMapping { cqn } => vec![Ref::Cq(cqn)],
            GenKind::Alias { of_type, .. } => {
                if of_type == alias_type::DPA_DUMEM {
                    self.mem.remove_dumem_alias(id);
                }
                vec![]
            }
        };
        for r in refs {
            self.drop_ref(r);
        }
    }

    pub(super) fn modify_general(&mut self, uid: u16, inb: &[u8]) -> Result<(), Check> {
        use l::general_obj_in_cmd_hdr as h;
        let v = inbox::<h::Layout>(inb)?;
        let t = v.value(h::obj_type);
        let id = v.value(h::obj_id);
        let len = Self::ctx_len(t).ok_or(check::UNKNOWN_OBJ_TYPE)?;
        if inb.len() < HDR + len {
            return Err(check::INBOX_TOO_SHORT);
        }
        let g = self.gen.get(id).ok_or(check::NO_SUCH_OBJECT)?;
        if g.obj_type != t {
            return Err(check::WRONG_OBJ_TYPE);
        }
        owned(&g.meta, uid)?;
        let ctx = &inb[HDR..HDR + len];
        // Every DPA context starts with a 64-bit modify_field_select.
        let select = u64::from_be_bytes(ctx[0..8].try_into().map_err(|_| check::INBOX_TOO_SHORT)?);
        // Modifiable fields (provisional): thread user_arg (bit 0) and state (bit 1);
        // DB_CQ_MAPPING map_state (bit 0). Nothing else.
        let allowed = match t {
            obj_type::DPA_THREAD => 0b11,
            obj_type::DB_CQ_MAPPING => 0b1,
            _ => 0,
        };
        if select == 0 || select & !allowed != 0 {
            return Err(check::BAD_MODIFY_SELECT);
        }
        if t == obj_type::DPA_THREAD {
            use l::dpa_thread as th;
            let new = ctx_view::<th::Layout>(ctx)?;
            if select & 2 != 0 && new.get(th::state) > 3 {
                return Err(check::BAD_STATE_FIELD);
            }
            // The state change is checked (and takes effect) first, so a refused change
            // leaves user_arg alone; a RUNNING thread reads user_arg when it is dispatched.
            if select & 2 != 0 {
                self.dpa_set_thread_state(id, new.get(th::state) as u8)?;
            }
            if select & 1 != 0 {
                if let Some(g) = self.gen.get_mut(id) {
                    if let Ok(mut c) = mlx5_dpa::mlx5::ViewMut::<th::Layout>::new(&mut g.ctx) {
                        c.set(th::user_arg, new.get(th::user_arg));
                    }
                }
            }
        } else if t == obj_type::DB_CQ_MAPPING {
            use l::dpa_db_cq_mapping as m;
            let new = ctx_view::<m::Layout>(ctx)?;
            if let Some(g) = self.gen.get_mut(id) {
                if let Ok(mut c) = mlx5_dpa::mlx5::ViewMut::<m::Layout>::new(&mut g.ctx) {
                    c.set(m::map_state, new.get(m::map_state));
                }
            }
        }
        Ok(())
    }

    pub(super) fn query_general(
        &mut self,
        uid: u16,
        inb: &[u8],
        out: &mut [u8],
    ) -> Result<(), Check> {
        use l::general_obj_in_cmd_hdr as h;
        let v = inbox::<h::Layout>(inb)?;
        let t = v.value(h::obj_type);
        let id = v.value(h::obj_id);
        let g = self.gen.get(id).ok_or(check::NO_SUCH_OBJECT)?;
        if g.obj_type != t {
            return Err(check::WRONG_OBJ_TYPE);
        }
        owned(&g.meta, uid)?;
        // A DPA thread's or process's runtime fields (state, activation count, status...)
        // are copied into its context here, when asked for, not at every activation.
        match t {
            obj_type::DPA_THREAD => self.dpa_sync_thread_ctx(id),
            obj_type::DPA_PROCESS => self.dpa_sync_process_ctx(id),
            _ => {}
        }
        let g = self.gen.get(id).ok_or(check::NO_SUCH_OBJECT)?;
        let base = size::<l::general_obj_out_cmd_hdr::Layout>();
        if out.len() < base + g.ctx.len() {
            return Err(check::OUTBOX_TOO_SHORT);
        }
        out[base..base + g.ctx.len()].copy_from_slice(&g.ctx);
        out[8..12].copy_from_slice(&id.to_be_bytes());
        Ok(())
    }

    pub(super) fn allow_other_vhca_access(&mut self, uid: u16, inb: &[u8]) -> Result<(), Check> {
        use l::allow_other_vhca_access_in as a;
        let v = inbox::<a::Layout>(inb)?;
        let obj_type = v.value(a::object_type_to_be_accessed);
        let obj_id = v.value(a::object_id_to_be_accessed);
        let exists = match obj_type {
            // A DPA process's memory, by its DUMEM id.
            alias_type::DPA_DUMEM => {
                let process = obj_id.wrapping_sub(DUMEM_ID_BASE);
                let g = self
                    .gen
                    .get(process)
                    .filter(|g| {
                        g.obj_type == obj_type::DPA_PROCESS
                            && !is_alias(g)
                            && obj_id >= DUMEM_ID_BASE
                    })
                    .ok_or(check::NO_SUCH_OBJECT)?;
                owned(&g.meta, uid).is_ok()
            }
            // General object types that can be shared: the object must exist and be ours.
            t if self.profile.supports_obj_type(t) => {
                let g = self
                    .gen
                    .get(obj_id)
                    .filter(|g| g.obj_type == t && !is_alias(g))
                    .ok_or(check::NO_SUCH_OBJECT)?;
                owned(&g.meta, uid).is_ok()
            }
            _ => return Err(check::UNKNOWN_OBJ_TYPE),
        };
        if !exists {
            return Err(check::WRONG_UID);
        }
        let key_bytes = v
            .get_bytes(a::access_key)
            .map_err(|_| check::INBOX_TOO_SHORT)?;
        let mut key = [0u8; 32];
        key.copy_from_slice(&key_bytes[..32]);
        let vhca = self.vhca_of(uid);
        self.grants
            .retain(|g| !(g.vhca == vhca && g.obj_type == obj_type && g.obj_id == obj_id));
        self.grants.push(Grant {
            vhca,
            obj_type,
            obj_id,
            key,
        });
        Ok(())
    }
}

#[derive(Debug, Clone, Copy)]
enum Ref {
    Pd(u32),
    Umem(u32),
    Uar(u32),
    Gen(u32),
    Cq(u32),
}

fn parent_process(k: &GenKind) -> Option<u32> {
    match *k {
        GenKind::DpaMem { process, .. }
        | GenKind::DpaThread { process, .. }
        | GenKind::DpaOutbox { process, .. }
        | GenKind::DpaWindow { process, .. }
        | GenKind::DpaUar { process, .. } => Some(process),
        _ => None,
    }
}

/// Whether alias type `alias` can stand for general object type `target` (the model lets an
/// alias name any general type it was granted for; real firmware ties alias types to
/// object classes, docs/sources.md §2).
/// An alias object (of any type).
fn is_alias(g: &GenObj) -> bool {
    matches!(g.kind, GenKind::Alias { .. })
}

fn round_up(v: u64, to: u64) -> u64 {
    v.div_ceil(to) * to
}

impl Firmware {
    /// The DPA_PROCESS_COREDUMP command.
    pub(crate) fn dpa_process_coredump(
        &mut self,
        uid: u16,
        inb: &[u8],
        out: &mut [u8],
    ) -> Result<(), Check> {
        use l::dpa_process_coredump_out as o;
        let v = inbox::<l::dpa_process_coredump_in::Layout>(inb)?;
        let id = v.get(l::dpa_process_coredump_in::dpa_process_id) as u32;
        let g = self.gen.get(id).ok_or(check::NO_SUCH_DPA_PROCESS)?;
        if g.obj_type != obj_type::DPA_PROCESS {
            return Err(check::WRONG_OBJ_TYPE);
        }
        owned(&g.meta, uid)?;
        let dump = self
            .dpa
            .processes
            .get(&id)
            .and_then(|p| p.coredump.as_ref())
            .ok_or(check::NO_COREDUMP)?;
        let hdr = size::<o::Layout>();
        let dst = out
            .get_mut(hdr..hdr + dump.len())
            .ok_or(check::OUTBOX_TOO_SHORT)?;
        dst.copy_from_slice(dump);
        let len = dump.len() as u64;
        let mut ov = super::outbox::<o::Layout>(out)?;
        ov.set(o::dump_size, len);
        Ok(())
    }
}
