//! A uverbs context: what one open `/dev/infiniband/uverbsN` holds — the DevX context on the
//! model, the objects created through it (each named by a handle, as the kernel's IDR names
//! them), its UAR mappings and event files.
//!
//! Objects are kept as `Arc`s: an object that others were created on (a PD under an MR, a CQ
//! under a QP) is held by them too, so destroying it while used is `EBUSY` (the kernel's use
//! counts), and closing the context drops the handles newest first, which releases every
//! firmware object before what it depends on. Client memory given to the device (rings, MRs,
//! doorbell pages) is registered as a UMEM and pinned ([`UserUmem`]) until the last object
//! over it is gone.

use std::collections::{BTreeMap, HashMap};
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, Weak};

use mlx5_dpa::devx::{Devx, DevxObj, EventChannel, Uar, UmemAccess, UmemHandle};
use mlx5_dpa::sync::lock;
use mlx5_sim::{Device, ObjRef};
use nix::errno::Errno;

use crate::event::EventFile;

/// Client memory registered with the device as a UMEM: deregistered (and unpinned) on drop.
/// Offsets into it (the PRM's `*_umem_offset`) count from `addr`, as the kernel's DevX UMEMs.
pub(crate) struct UserUmem {
    devx: Arc<dyn Devx>,
    handle: UmemHandle,
    pub(crate) umem_id: u32,
    /// Where the registered range starts.
    pub(crate) addr: u64,
    /// The pages pinned for it.
    pin_start: usize,
    done: AtomicBool,
}

impl UserUmem {
    /// Registers `addr .. addr + len`, after checking every page of it is mapped.
    ///
    /// # Errors
    /// `EFAULT` (a hole), `EINVAL` (empty, wrapping), the model's refusal.
    pub(crate) fn register(
        devx: &Arc<dyn Devx>,
        addr: u64,
        len: u64,
        access: UmemAccess,
    ) -> Result<UserUmem, Errno> {
        Self::register_pgsz(devx, addr, len, access, !0xfffu64)
    }

    /// As [`UserUmem::register`], with the page sizes the caller allows
    /// (`MLX5_IB_ATTR_DEVX_UMEM_REG_PGSZ_BITMAP`).
    pub(crate) fn register_pgsz(
        devx: &Arc<dyn Devx>,
        addr: u64,
        len: u64,
        access: UmemAccess,
        pgsz_bitmap: u64,
    ) -> Result<UserUmem, Errno> {
        let (pin_start, pin_len) = crate::user::mapped_range(addr, len)?;
        let n = usize::try_from(len).map_err(|_| Errno::EINVAL)?;
        // SAFETY: the range is mapped memory of this process (checked above), and `munmap` of
        // it is deferred until this registration is dropped (`Server::pin`): it stays allocated
        // and mapped while the device may reach it.
        let u = unsafe { devx.umem_reg(addr as usize as *mut u8, n, access, pgsz_bitmap) }
            .map_err(errno_of)?;
        crate::user::pin(pin_start, pin_len);
        Ok(UserUmem {
            devx: Arc::clone(devx),
            handle: u.handle,
            umem_id: u.umem_id,
            addr,
            pin_start,
            done: AtomicBool::new(false),
        })
    }

    /// Offset of the client address `at` in the UMEM.
    pub(crate) fn offset_of(&self, at: u64) -> u64 {
        at - self.addr
    }

    /// Deregisters now; `EBUSY` while an object still uses it (then it stays registered).
    pub(crate) fn dereg(&self) -> Result<(), Errno> {
        if self.done.load(Ordering::Acquire) {
            return Ok(());
        }
        self.devx.umem_dereg(self.handle).map_err(errno_of)?;
        self.done.store(true, Ordering::Release);
        crate::user::unpin(self.pin_start);
        Ok(())
    }
}

impl Drop for UserUmem {
    fn drop(&mut self) {
        if self.dereg().is_err() {
            // Still referenced in firmware: the memory stays pinned (never unmapped) rather
            // than freed under the device.
            tracing::warn!(target: "mlx5_sim_uverbs", "UMEM {} left registered", self.umem_id);
        }
    }
}

/// The errno of a DevX-level error, as the kernel returns it.
pub(crate) fn errno_of(e: mlx5_dpa::devx::DevxError) -> Errno {
    use mlx5_dpa::devx::DevxError as E;
    match e {
        E::Os { errno, .. } => errno,
        E::Command { errno, .. } => errno.unwrap_or(Errno::EREMOTEIO),
        E::BadMailbox(_) => Errno::EINVAL,
        E::Unsupported(_) => Errno::EOPNOTSUPP,
        E::Timeout(..) => Errno::ETIMEDOUT,
        E::WrongMethod { .. } => Errno::EINVAL,
        E::NoDevice { .. } | E::UnknownDevice { .. } => Errno::ENODEV,
        // A kind of error the driver adds later: an I/O error until it is mapped here.
        _ => Errno::EIO,
    }
}

/// A page of doorbell records shared by the queues whose records lie in it (the kernel's
/// `mlx5_ib_db_map_user` keeps one mapping per user page).
pub(crate) struct DbPage {
    pub(crate) umem: UserUmem,
}

// The objects below hold what they were made over (`_`-named fields): fields drop in
// declaration order, so the firmware object goes first, then its memory, then the objects it
// used.

/// A protection domain.
pub(crate) struct Pd {
    pub(crate) _obj: DevxObj,
    pub(crate) pdn: u32,
}

/// A memory region: an mkey over a UMEM of the client's memory.
pub(crate) struct Mr {
    pub(crate) _mkey: DevxObj,
    pub(crate) _umem: UserUmem,
    /// Its lkey and rkey (one value).
    pub(crate) key: u32,
    /// What it was registered as; REREG_MR may change the PD and access in place.
    pub(crate) start: u64,
    pub(crate) length: u64,
    pub(crate) hca_va: u64,
    pub(crate) rights: Mutex<MrRights>,
}

/// The part of an MR that REREG_MR can change without a new key.
pub(crate) struct MrRights {
    pub(crate) pd: Arc<Pd>,
    pub(crate) access: u32,
}

/// A completion queue.
pub(crate) struct Cq {
    pub(crate) obj: DevxObj,
    pub(crate) cqn: u32,
    pub(crate) _umem: UserUmem,
    pub(crate) _db: Arc<DbPage>,
    /// The completion channel its events go to.
    pub(crate) channel: Option<Arc<EventFile>>,
    /// Completion events the client has read (DESTROY_CQ's `comp_events_reported`).
    pub(crate) comp_reported: Arc<AtomicU32>,
}

/// A shared receive queue (an RMP on the model).
pub(crate) struct Srq {
    pub(crate) obj: DevxObj,
    pub(crate) srqn: u32,
    pub(crate) _umem: UserUmem,
    pub(crate) _db: Arc<DbPage>,
    pub(crate) _pd: Arc<Pd>,
    pub(crate) max_wr: u32,
    pub(crate) max_sge: u32,
    pub(crate) limit: AtomicU32,
}

/// A QP's attributes as last set, for QUERY_QP and for the transitions that follow.
#[derive(Debug, Clone, Default)]
pub(crate) struct QpAttrs {
    pub(crate) state: u8,
    pub(crate) port: u8,
    pub(crate) pkey_index: u16,
    pub(crate) qkey: u32,
    pub(crate) access: u32,
    pub(crate) path_mtu: u8,
    pub(crate) dest_qp_num: u32,
    pub(crate) rq_psn: u32,
    pub(crate) sq_psn: u32,
    pub(crate) max_rd_atomic: u8,
    pub(crate) max_dest_rd_atomic: u8,
    pub(crate) min_rnr_timer: u8,
    pub(crate) timeout: u8,
    pub(crate) retry_cnt: u8,
    pub(crate) rnr_retry: u8,
    pub(crate) dest: mlx5_dpa::devx::kernel::abi::write::ib_uverbs_qp_dest,
}

/// A queue pair.
pub(crate) struct Qp {
    pub(crate) obj: DevxObj,
    pub(crate) qpn: u32,
    /// A UD QP (else RC).
    pub(crate) ud: bool,
    /// The receive queue as built: WQEs, and data segments per WQE (`max_recv_wr`,
    /// `max_recv_sge` of QUERY_QP).
    pub(crate) rq_caps: (u32, u32),
    pub(crate) _umem: UserUmem,
    pub(crate) _db: Arc<DbPage>,
    pub(crate) _send_cq: Arc<Cq>,
    pub(crate) _recv_cq: Arc<Cq>,
    pub(crate) _srq: Option<Arc<Srq>>,
    pub(crate) _pd: Arc<Pd>,
    pub(crate) sq_sig_all: bool,
    pub(crate) caps: [u32; 5],
    pub(crate) attrs: Mutex<QpAttrs>,
}

/// A UAR page: allocated on the model, mapped into the client by `mmap` of its offset. Freed
/// when both the object is destroyed and the mapping is gone (the kernel keeps a mapped page).
pub(crate) struct UarMap {
    devx: Arc<dyn Devx>,
    uar: Mutex<Option<Uar>>,
    pub(crate) page_id: u32,
    pub(crate) pgoff: u64,
    pub(crate) base: usize,
    pub(crate) len: usize,
    mapped: AtomicU32,
    destroyed: AtomicBool,
}

impl UarMap {
    fn release_if_done(&self) {
        if self.destroyed.load(Ordering::Acquire) && self.mapped.load(Ordering::Acquire) == 0 {
            if let Some(u) = lock(&self.uar).take() {
                let _ = self.devx.uar_free(u);
            }
        }
    }
}

impl Drop for UarMap {
    fn drop(&mut self) {
        // Only when nothing maps it (a mapping holds an `Arc` through the context's table).
        if let Some(u) = self
            .uar
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
        {
            let _ = self.devx.uar_free(u);
        }
    }
}

/// A model event channel that one thread waits on while others subscribe through it.
pub(crate) type SharedChannel = Arc<dyn EventChannel + Send + Sync>;

/// A raw DevX object (`MLX5_IB_METHOD_DEVX_OBJ_CREATE`): destroyed (with the command the
/// model derived at create time) when dropped, or explicitly with [`DevxRaw::destroy`].
pub(crate) struct DevxRaw {
    pub(crate) devx: Arc<dyn Devx>,
    pub(crate) handle: mlx5_dpa::devx::ObjHandle,
    done: AtomicBool,
}

impl DevxRaw {
    pub(crate) fn new(devx: Arc<dyn Devx>, handle: mlx5_dpa::devx::ObjHandle) -> DevxRaw {
        DevxRaw {
            devx,
            handle,
            done: AtomicBool::new(false),
        }
    }

    /// Destroys it now; on failure it stays (and the error is the kernel's answer).
    pub(crate) fn destroy(&self) -> Result<(), mlx5_dpa::devx::DevxError> {
        if self.done.load(Ordering::Acquire) {
            return Ok(());
        }
        self.devx.obj_destroy(self.handle)?;
        self.done.store(true, Ordering::Release);
        Ok(())
    }
}

impl Drop for DevxRaw {
    fn drop(&mut self) {
        let _ = self.destroy();
    }
}

/// A DevX event channel (`MLX5_IB_OBJECT_DEVX_ASYNC_EVENT_FD`): the model's channel, the
/// client's event file and the thread between them.
pub(crate) struct DevxChannel {
    pub(crate) chan: SharedChannel,
    pub(crate) file: Arc<EventFile>,
    pub(crate) omit_data: bool,
    pub(crate) stop: Arc<AtomicBool>,
}

impl Drop for DevxChannel {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
    }
}

/// One object of a context.
#[derive(Clone)]
pub(crate) enum Obj {
    Pd(Arc<Pd>),
    Mr(Arc<Mr>),
    Cq(Arc<Cq>),
    Qp(Arc<Qp>),
    Srq(Arc<Srq>),
    Devx(Arc<DevxRaw>),
    Umem(Arc<UserUmem>),
    Uar(Arc<UarMap>),
    Ah(Arc<Ah>),
    FlowMatcher(Arc<FlowMatcher>),
    Flow(Arc<Flow>),
}

/// An address handle: libmlx5 builds the address vector itself; the kernel's part is the
/// destination MAC it resolves, and the PD the handle holds.
pub(crate) struct Ah {
    pub(crate) _pd: Arc<Pd>,
}

impl Obj {
    /// How many others hold it (its use count; 0 = free to destroy).
    pub(crate) fn users(&self) -> usize {
        let n = match self {
            Obj::Pd(a) => Arc::strong_count(a),
            Obj::Mr(a) => Arc::strong_count(a),
            Obj::Cq(a) => Arc::strong_count(a),
            Obj::Qp(a) => Arc::strong_count(a),
            Obj::Srq(a) => Arc::strong_count(a),
            Obj::Devx(a) => Arc::strong_count(a),
            Obj::Umem(a) => Arc::strong_count(a),
            Obj::Ah(a) => Arc::strong_count(a),
            Obj::FlowMatcher(a) => Arc::strong_count(a),
            Obj::Flow(a) => Arc::strong_count(a),
            // The context's table of mappings holds UAR pages too; a mapped page outlives its
            // object anyway (`Ucontext::destroy_uar`), and queues on it hold it in firmware.
            Obj::Uar(_) => return 0,
        };
        n.saturating_sub(1)
    }
}

/// Where one CQ's completion events go: its channel, the `user_handle` the records carry, and
/// the count of records read.
pub(crate) type CompRoute = (Arc<EventFile>, u64, Arc<AtomicU32>);

/// Routes the model's completion events of this context to the CQs' completion channels.
pub(crate) struct CompRouter {
    pub(crate) chan: SharedChannel,
    /// cookie (the CQ's handle) -> where its events go
    pub(crate) routes: Mutex<HashMap<u64, CompRoute>>,
    pub(crate) stop: Arc<AtomicBool>,
}

impl Drop for CompRouter {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
    }
}

/// The mutable state of a context.
#[derive(Default)]
pub(crate) struct CtxState {
    /// The DevX context, from GET_CONTEXT on (the same object twice: as the driver's trait
    /// and as the model's type, for its shareable event channels).
    pub(crate) devx: Option<Arc<dyn Devx>>,
    pub(crate) sim: Option<Arc<mlx5_sim::SimDevx>>,
    /// The device's capabilities, read once when the context was made (as the kernel reads
    /// them once when it probes the device: verbs never send QUERY_HCA_CAP of their own).
    pub(crate) caps: Option<Arc<mlx5_dpa::mlx5::caps::Caps>>,
    /// GET_CONTEXT asked for DevX (`MLX5_IB_ALLOC_UCTX_DEVX`).
    pub(crate) devx_enabled: bool,
    next: u32,
    pub(crate) objs: BTreeMap<u32, Obj>,
    /// UAR mappings by mmap page offset.
    pub(crate) uars: BTreeMap<u64, Arc<UarMap>>,
    next_pgoff: u64,
    /// Doorbell pages by page address.
    pub(crate) db_pages: HashMap<usize, Weak<DbPage>>,
    pub(crate) async_file: Option<Arc<EventFile>>,
    pub(crate) comp: Option<Arc<CompRouter>>,
    /// Completion channels made by this context: fd -> file.
    pub(crate) channels: HashMap<RawFd, Arc<EventFile>>,
    /// DevX event channels and async command fds of this context: fd -> channel.
    pub(crate) devx_channels: HashMap<RawFd, Arc<DevxChannel>>,
    pub(crate) cmd_fds: HashMap<RawFd, Arc<EventFile>>,
    /// The context's own UAR, for CQs created without a UAR page index.
    pub(crate) default_uar: Option<Arc<UarMap>>,
}

/// Where dynamic UARs' mmap offsets start (in pages): above every legacy
/// `cmd << 8 | index` offset, so the two can never be confused.
const DYN_PGOFF_BASE: u64 = 1 << 16;

/// One open uverbs device.
pub struct Ucontext {
    pub(crate) dev: Device,
    pub(crate) state: Mutex<CtxState>,
}

impl Ucontext {
    pub(crate) fn new(dev: Device) -> Ucontext {
        Ucontext {
            dev,
            state: Mutex::new(CtxState::default()),
        }
    }

    pub(crate) fn lock(&self) -> std::sync::MutexGuard<'_, CtxState> {
        lock(&self.state)
    }

    /// The DevX context (after GET_CONTEXT); `EINVAL` before, as the kernel's
    /// `ib_uverbs_get_ucontext` answers.
    pub(crate) fn devx(&self) -> Result<Arc<dyn Devx>, Errno> {
        self.lock().devx.clone().ok_or(Errno::EINVAL)
    }

    /// The device's capabilities (after GET_CONTEXT; `EINVAL` before).
    pub(crate) fn caps(&self) -> Result<Arc<mlx5_dpa::mlx5::caps::Caps>, Errno> {
        self.lock().caps.clone().ok_or(Errno::EINVAL)
    }

    /// Adds an object; its handle.
    pub(crate) fn insert(&self, o: Obj) -> u32 {
        let mut s = self.lock();
        let h = s.next;
        s.next = s.next.wrapping_add(1);
        s.objs.insert(h, o);
        h
    }

    /// The object of a handle.
    pub(crate) fn get(&self, h: u64) -> Option<Obj> {
        let h = u32::try_from(h).ok()?;
        self.lock().objs.get(&h).cloned()
    }

    /// Removes an object if nothing uses it: `EBUSY` if something does, `EINVAL` if absent.
    /// The object is destroyed when the returned value is dropped.
    pub(crate) fn remove(&self, h: u64, check: impl Fn(&Obj) -> bool) -> Result<Obj, Errno> {
        let h = u32::try_from(h).map_err(|_| Errno::EINVAL)?;
        let mut s = self.lock();
        let o = s.objs.get(&h).ok_or(Errno::EINVAL)?;
        if !check(o) {
            return Err(Errno::EINVAL);
        }
        if o.users() > 0 {
            return Err(Errno::EBUSY);
        }
        s.objs.remove(&h).ok_or(Errno::EINVAL)
    }

    /// A new dynamic UAR of this context, with its mmap offset.
    pub(crate) fn alloc_uar(&self, kind: mlx5_dpa::devx::UarKind) -> Result<Arc<UarMap>, Errno> {
        let devx = self.devx()?;
        let uar = devx.uar_alloc(kind).map_err(errno_of)?;
        let mut s = self.lock();
        let pgoff = DYN_PGOFF_BASE + s.next_pgoff;
        s.next_pgoff += 1;
        let m = Arc::new(UarMap {
            devx,
            page_id: uar.page_id,
            base: uar.base.as_ptr() as usize,
            len: uar.len,
            uar: Mutex::new(Some(uar)),
            pgoff,
            mapped: AtomicU32::new(0),
            destroyed: AtomicBool::new(false),
        });
        s.uars.insert(pgoff, Arc::clone(&m));
        Ok(m)
    }

    /// Destroys a UAR object (the page goes when it is also unmapped).
    pub(crate) fn destroy_uar(&self, m: &Arc<UarMap>) {
        m.destroyed.store(true, Ordering::Release);
        if m.mapped.load(Ordering::Acquire) == 0 {
            self.lock().uars.remove(&m.pgoff);
        }
        m.release_if_done();
    }

    /// The UAR page the context uses when a CQ names none.
    pub(crate) fn default_uar(&self) -> Result<Arc<UarMap>, Errno> {
        if let Some(u) = self.lock().default_uar.clone() {
            return Ok(u);
        }
        let u = self.alloc_uar(mlx5_dpa::devx::UarKind::NonCached)?;
        self.lock().default_uar = Some(Arc::clone(&u));
        Ok(u)
    }

    /// A UAR page of this context by its page id (`uar_page_index`, `bfreg_index`).
    pub(crate) fn uar_by_page(&self, page_id: u32) -> Option<Arc<UarMap>> {
        self.lock()
            .uars
            .values()
            .find(|u| u.page_id == page_id && !u.destroyed.load(Ordering::Acquire))
            .cloned()
    }

    /// The doorbell page holding `addr`, registered once for all the records in it.
    pub(crate) fn db_page(&self, addr: u64) -> Result<Arc<DbPage>, Errno> {
        if !addr.is_multiple_of(4) {
            return Err(Errno::EINVAL);
        }
        let page = crate::user::page_size() as u64;
        let start = (addr & !(page - 1)) as usize;
        if let Some(p) = self.lock().db_pages.get(&start).and_then(Weak::upgrade) {
            return Ok(p);
        }
        let devx = self.devx()?;
        let umem = UserUmem::register(&devx, start as u64, page, UmemAccess::LOCAL_WRITE)?;
        let p = Arc::new(DbPage { umem });
        let mut s = self.lock();
        s.db_pages.retain(|_, w| w.strong_count() > 0);
        s.db_pages.insert(start, Arc::downgrade(&p));
        Ok(p)
    }

    /// `mmap` of this descriptor at `offset`: a UAR page.
    pub(crate) fn mmap(
        &self,
        len: usize,
        _prot: i32,
        flags: i32,
        offset: i64,
    ) -> Result<usize, Errno> {
        let page = crate::user::page_size();
        if offset < 0 || !(offset as usize).is_multiple_of(page) {
            return Err(Errno::EINVAL);
        }
        if flags & libc::MAP_SHARED == 0 || flags & libc::MAP_FIXED != 0 {
            return Err(Errno::EINVAL);
        }
        let pgoff = offset as u64 / page as u64;
        let m = self.lock().uars.get(&pgoff).cloned().ok_or(Errno::EINVAL)?;
        if m.destroyed.load(Ordering::Acquire) || len == 0 || len > m.len {
            return Err(Errno::EINVAL);
        }
        m.mapped.fetch_add(1, Ordering::AcqRel);
        Ok(m.base)
    }

    /// `munmap` of a UAR page this context mapped; false if `addr` is none of them.
    pub(crate) fn munmap(&self, addr: usize, _len: usize) -> bool {
        let m = self.lock().uars.values().find(|u| u.base == addr).cloned();
        let Some(m) = m else {
            return false;
        };
        let was = m
            .mapped
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
            .is_ok();
        if !was {
            return false;
        }
        if m.destroyed.load(Ordering::Acquire) && m.mapped.load(Ordering::Acquire) == 0 {
            self.lock().uars.remove(&m.pgoff);
            m.release_if_done();
        }
        true
    }

    /// The context is closed: everything it holds is released, newest first, then the DevX
    /// context itself (which releases what firmware still has of it).
    pub(crate) fn close(&self) {
        let mut s = std::mem::take(&mut *self.lock());
        if let Some(c) = s.comp.take() {
            c.stop.store(true, Ordering::Release);
        }
        for (_, c) in s.devx_channels.drain() {
            c.stop.store(true, Ordering::Release);
        }
        while let Some((_, o)) = s.objs.pop_last() {
            drop(o);
        }
        // UAR pages still mapped stay with their mappings (the client may still hold the
        // address); the others go.
        let uars = std::mem::take(&mut s.uars);
        for (_, u) in uars {
            u.destroyed.store(true, Ordering::Release);
            if u.mapped.load(Ordering::Acquire) > 0 {
                // Kept: the page must stay valid for the mapping; leaked with it.
                std::mem::forget(u);
            } else {
                u.release_if_done();
            }
        }
        s.default_uar = None;
        s.db_pages.clear();
        drop(s);
    }
}

/// `table_type` NIC RX (PRM `FS_FT_NIC_RX`): where the flow methods keep their tables.
pub(crate) const FLOW_NIC_RX: u8 = 0;

/// A flow matcher of the kernel's flow methods (flow.rs): its table and group in the model, and which entries its flows hold.
pub(crate) struct FlowMatcher {
    pub(crate) dev: Device,
    pub(crate) table: u32,
    pub(crate) group: u32,
    pub(crate) used: Mutex<Vec<bool>>,
}

impl Drop for FlowMatcher {
    fn drop(&mut self) {
        let _ = self.dev.kernel_destroy(ObjRef::FlowGroup {
            table_type: FLOW_NIC_RX,
            table: self.table,
            id: self.group,
        });
        let _ = self.dev.kernel_destroy(ObjRef::FlowTable {
            table_type: FLOW_NIC_RX,
            id: self.table,
        });
    }
}

/// A flow: one entry of its matcher's table, holding its destination's object.
pub(crate) struct Flow {
    pub(crate) matcher: Arc<FlowMatcher>,
    pub(crate) index: u32,
    /// Its destination's object (none for a drop rule).
    pub(crate) _dest: Option<Obj>,
    /// The DevX flow counter its COUNT action names, held as the kernel holds it.
    pub(crate) _counter: Option<Obj>,
}

impl Drop for Flow {
    fn drop(&mut self) {
        let _ = self.matcher.dev.kernel_destroy(ObjRef::Fte {
            table_type: FLOW_NIC_RX,
            table: self.matcher.table,
            index: self.index,
        });
        if let Some(u) = self
            .matcher
            .used
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get_mut(self.index as usize)
        {
            *u = false;
        }
    }
}
