//! The kernel's DevX layer, as the model's front door: one [`SimDevx`] per opened context.
//!
//! It applies the rules the kernel applies before firmware sees a mailbox (docs/sources.md §1):
//! the method must match the opcode (the OTHER whitelist vs the OBJ_CREATE list), `uid` is
//! overwritten with the context's, the `*_umem_valid` bits of ring-creating commands are
//! forced, modify / query name the object of the handle they are sent on, and destroy runs
//! the command built at create time. Firmware errors come back like a newer kernel returns
//! them: `EREMOTEIO` with the mailbox copied out.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use mlx5_dpa::devx::{
    Devx, DevxError, EventChannel, ObjHandle, Uar, UarKind, Umem, UmemAccess, UmemHandle,
};
use mlx5_dpa::mlx5::cmd::CmdError;
use mlx5_dpa::mlx5::layout::write_bits;
use mlx5_dpa::mlx5::layouts as l;
use mlx5_dpa::mlx5::{DevxMethod, Opcode};
use mlx5_dpa::sync::lock;
use nix::errno::Errno;

use crate::fw::{self, ObjRef};
use crate::mem::{UarPage, UAR_PAGE_SIZE};
use crate::Device;

/// Handles of one context (the uverbs IDR on the kernel path).
#[derive(Debug, Default)]
pub(crate) struct Handles {
    next: u64,
    pub(crate) objs: BTreeMap<u64, ObjRef>,
    umems: HashMap<u64, u32>,
    uars: HashMap<u64, u32>,
}

impl Handles {
    fn alloc(&mut self) -> u64 {
        self.next += 1;
        self.next
    }
}

/// One DevX context on the model (what opening `/dev/infiniband/uverbsN` gives on hardware).
/// Dropping it releases what it still holds, in reverse order, as the kernel does when a
/// context is closed.
pub struct SimDevx {
    dev: Device,
    uid: u16,
    handles: Arc<Mutex<Handles>>,
    /// Memory whose UMEM deregistration was refused ([`Devx::retain_until_close`]): returned
    /// to the system in `drop`, after the context's registrations are gone.
    retained: Mutex<Vec<Box<dyn std::any::Any + Send + Sync>>>,
}

impl std::fmt::Debug for SimDevx {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimDevx")
            .field("uid", &self.uid)
            .finish_non_exhaustive()
    }
}

fn os(op: &'static str, errno: Errno) -> DevxError {
    DevxError::Os { op, errno }
}

fn opcode_of(inbox: &[u8]) -> Opcode {
    Opcode(u16::from_be_bytes([inbox[0], inbox[1]]))
}

/// Forces the `*_umem_valid` bits the way the kernel's `devx_set_umem_valid` does.
fn force_umem_valid(op: Opcode, inbox: &mut [u8]) {
    let mut set = |bit: u32| {
        if (bit as usize) / 8 < inbox.len() {
            write_bits(inbox, bit, 1, 1);
        }
    };
    match op {
        Opcode::CREATE_MKEY => set(l::create_mkey_in::mkey_umem_valid.offset()),
        Opcode::CREATE_CQ => {
            set(l::create_cq_in::cq_umem_valid.offset());
            set(l::create_cq_in::cq_context
                .at(l::cqc::dbr_umem_valid)
                .offset());
        }
        Opcode::CREATE_QP => {
            set(l::create_qp_in::wq_umem_valid.offset());
            set(l::create_qp_in::qpc.at(l::qpc::dbr_umem_valid).offset());
        }
        Opcode::CREATE_SQ => {
            let wq = l::create_sq_in::ctx.nested(l::sqc::wq);
            set(wq.at(l::wq::wq_umem_valid).offset());
            set(wq.at(l::wq::dbr_umem_valid).offset());
        }
        Opcode::CREATE_RQ => {
            let wq = l::create_rq_in::ctx.nested(l::rqc::wq);
            set(wq.at(l::wq::wq_umem_valid).offset());
            set(wq.at(l::wq::dbr_umem_valid).offset());
        }
        Opcode::CREATE_RMP => {
            let wq = l::create_rmp_in::ctx.nested(l::rmpc::wq);
            set(wq.at(l::wq::wq_umem_valid).offset());
            set(wq.at(l::wq::dbr_umem_valid).offset());
        }
        _ => {}
    }
}

impl SimDevx {
    pub(crate) fn new(dev: Device) -> Self {
        let uid = dev.with_state(|st| st.fw.alloc_uid());
        SimDevx {
            dev,
            uid,
            handles: Arc::new(Mutex::new(Handles::default())),
            retained: Mutex::default(),
        }
    }

    /// The uid firmware knows this context by.
    pub fn uid(&self) -> u16 {
        self.uid
    }

    /// The device this context is open on.
    pub fn device(&self) -> &Device {
        &self.dev
    }

    /// The firmware object behind a handle (for tests and tools).
    pub fn object(&self, h: ObjHandle) -> Option<ObjRef> {
        self.lock().objs.get(&h.0).copied()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Handles> {
        lock(&self.handles)
    }

    /// Sends a prepared mailbox to firmware; `EREMOTEIO` with the mailbox when it refuses.
    fn run(
        &self,
        op: &'static str,
        inbox: &mut [u8],
        outbox: &mut [u8],
    ) -> Result<Option<ObjRef>, DevxError> {
        if inbox.len() < 16 || outbox.len() < 16 {
            return Err(os(op, Errno::EINVAL));
        }
        // The kernel overwrites uid in every mailbox.
        inbox[2..4].copy_from_slice(&self.uid.to_be_bytes());
        let uid = self.uid;
        let r = self
            .dev
            .with_state(|st| st.fw.execute(uid, inbox, outbox))
            .map_err(|_| os(op, Errno::EREMOTEIO));
        // What the command started (an activation, a queue) is seen at once. A query starts
        // nothing: it does not wake the engine, which would only take a core from a caller
        // whose wait is a run of queries (a thread's state). (No command raises the device's
        // activity: a wait whose look is a command would never sleep.)
        if opcode_of(inbox).devx_method() != DevxMethod::ObjQuery {
            self.dev.kick();
        }
        r
    }
}

impl Devx for SimDevx {
    fn describe(&self) -> String {
        self.dev.describe()
    }

    fn general_cmd(&self, inbox: &[u8], outbox: &mut [u8]) -> Result<(), DevxError> {
        if inbox.len() < 16 {
            return Err(os("DEVX_OTHER", Errno::EINVAL));
        }
        if opcode_of(inbox).devx_method() != DevxMethod::General {
            return Err(os("DEVX_OTHER", Errno::EINVAL));
        }
        let mut inbox = inbox.to_vec();
        self.run("DEVX_OTHER", &mut inbox, outbox).map(|_| ())
    }

    fn obj_create(&self, inbox: &[u8], outbox: &mut [u8]) -> Result<ObjHandle, DevxError> {
        if inbox.len() < 16 {
            return Err(os("DEVX_OBJ_CREATE", Errno::EINVAL));
        }
        let op = opcode_of(inbox);
        if op.devx_method() != DevxMethod::ObjCreate {
            return Err(os("DEVX_OBJ_CREATE", Errno::EINVAL));
        }
        let mut inbox = inbox.to_vec();
        force_umem_valid(op, &mut inbox);
        let created = self.run("DEVX_OBJ_CREATE", &mut inbox, outbox)?;
        let Some(obj) = created else {
            return Err(os("DEVX_OBJ_CREATE", Errno::EINVAL));
        };
        let mut h = self.lock();
        let handle = h.alloc();
        h.objs.insert(handle, obj);
        Ok(ObjHandle(handle))
    }

    fn obj_modify(&self, obj: ObjHandle, inbox: &[u8], outbox: &mut [u8]) -> Result<(), DevxError> {
        self.on_handle("DEVX_OBJ_MODIFY", DevxMethod::ObjModify, obj, inbox, outbox)
    }

    fn obj_query(&self, obj: ObjHandle, inbox: &[u8], outbox: &mut [u8]) -> Result<(), DevxError> {
        self.on_handle("DEVX_OBJ_QUERY", DevxMethod::ObjQuery, obj, inbox, outbox)
    }

    fn obj_destroy(&self, obj: ObjHandle) -> Result<(), DevxError> {
        let target = self
            .lock()
            .objs
            .get(&obj.0)
            .copied()
            .ok_or(os("DEVX_OBJ_DESTROY", Errno::EINVAL))?;
        let mut inbox = fw::destroy_inbox(target);
        let mut outbox = [0u8; 16];
        match self.run("DEVX_OBJ_DESTROY", &mut inbox, &mut outbox) {
            Ok(_) => {
                self.lock().objs.remove(&obj.0);
                Ok(())
            }
            Err(DevxError::Os {
                errno: Errno::EREMOTEIO,
                ..
            }) => {
                let op = opcode_of(&inbox);
                Err(DevxError::Command {
                    source: mlx5_dpa::mlx5::cmd::check_status(op, 0, &outbox)
                        .err()
                        .unwrap_or(CmdError::NoStatus { opcode: op, len: 0 }),
                    errno: Some(Errno::EREMOTEIO),
                })
            }
            Err(e) => Err(e),
        }
    }

    unsafe fn umem_reg(
        &self,
        addr: *mut u8,
        len: usize,
        access: UmemAccess,
        pgsz_bitmap: u64,
    ) -> Result<Umem, DevxError> {
        const OP: &str = "DEVX_UMEM_REG";
        if addr.is_null() || len == 0 || (addr as usize).checked_add(len).is_none() {
            return Err(os(OP, Errno::EINVAL));
        }
        // Some page size of 4 KiB or more must be allowed (the kernel picks the best one).
        if pgsz_bitmap & !0xfff == 0 {
            return Err(os(OP, Errno::EINVAL));
        }
        // ib_umem rule: remote write / atomic needs local write.
        if access.intersects(UmemAccess::REMOTE_WRITE | UmemAccess::REMOTE_ATOMIC)
            && !access.contains(UmemAccess::LOCAL_WRITE)
        {
            return Err(os(OP, Errno::EINVAL));
        }
        let uid = self.uid;
        let id = self
            .dev
            .with_state(|st| st.fw.mem.register(uid, addr as usize, len, access))
            .ok_or(os(OP, Errno::ENOMEM))?;
        let mut h = self.lock();
        let handle = h.alloc();
        h.umems.insert(handle, id);
        Ok(Umem {
            handle: UmemHandle(handle),
            umem_id: id,
        })
    }

    fn umem_dereg(&self, umem: UmemHandle) -> Result<(), DevxError> {
        const OP: &str = "DEVX_UMEM_DEREG";
        let id = *self
            .lock()
            .umems
            .get(&umem.0)
            .ok_or(os(OP, Errno::EINVAL))?;
        let uid = self.uid;
        self.dev
            .with_state(|st| st.fw.mem.deregister(uid, id))
            .map_err(|_| os(OP, Errno::EBUSY))?;
        self.lock().umems.remove(&umem.0);
        Ok(())
    }

    fn uar_alloc(&self, _kind: UarKind) -> Result<Uar, DevxError> {
        const OP: &str = "UAR_OBJ_ALLOC";
        let page = UarPage::new(self.uid).map_err(|e| os(OP, e))?;
        let base = page.base();
        let page_id = self
            .dev
            .with_state(|st| st.fw.uars.insert(page))
            .ok_or(os(OP, Errno::ENOMEM))?;
        let mut h = self.lock();
        let handle = h.alloc();
        h.uars.insert(handle, page_id);
        Ok(Uar {
            handle,
            page_id,
            base,
            len: UAR_PAGE_SIZE,
        })
    }

    fn uar_free(&self, uar: Uar) -> Result<(), DevxError> {
        const OP: &str = "UAR_OBJ_DESTROY";
        let id = *self
            .lock()
            .uars
            .get(&uar.handle)
            .ok_or(os(OP, Errno::EINVAL))?;
        self.dev.with_state(|st| {
            match st.fw.uars.get(id) {
                Some(p) if p.refs > 0 => return Err(os(OP, Errno::EBUSY)),
                None => return Err(os(OP, Errno::EINVAL)),
                _ => {}
            }
            st.fw.uars.remove(id);
            Ok(())
        })?;
        self.lock().uars.remove(&uar.handle);
        Ok(())
    }

    fn query_eqn(&self, vector: u32) -> Result<u32, DevxError> {
        let n = self.dev.with_state(|st| st.fw.profile().comp_vectors);
        if vector >= n {
            return Err(os("DEVX_QUERY_EQN", Errno::EINVAL));
        }
        Ok(fw::EQN_BASE + vector)
    }

    fn event_channel(&self) -> Result<Box<dyn EventChannel>, DevxError> {
        Ok(Box::new(self.sim_event_channel()))
    }

    fn retain_until_close(&self, mem: Box<dyn std::any::Any + Send + Sync>) {
        self.retained
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(mem);
    }

    fn doorbell_rung(&self) {
        self.dev.kick();
    }

    fn activity(&self) -> u64 {
        self.dev.activity().epoch()
    }

    fn wait_activity(&self, seen: u64, timeout: std::time::Duration) -> bool {
        self.dev.activity().wait(seen, timeout);
        true
    }
}

impl SimDevx {
    /// Changes the PD and rights of this context's mkey `key` in place (the key stays): the
    /// model's stand-in for the kernel's UMR work request when a verbs MR is re-registered
    /// with a new PD or access (Linux mlx5_ib `umr_rereg_pd_access`).
    ///
    /// # Errors
    /// The check that refused it: no such mkey or PD of this context, or rights beyond what
    /// the MR's memory was registered with.
    pub fn umr_rereg_mkey(
        &self,
        key: u32,
        pd: u32,
        rights: mlx5_dpa::mlx5::cmd::MkeyAccess,
    ) -> Result<(), crate::Check> {
        let uid = self.uid;
        self.dev
            .with_state(|st| st.fw.umr_rereg_mkey(uid, key, pd, rights))
    }

    fn sim_event_channel(&self) -> crate::events::SimEventChannel {
        let handles = Arc::clone(&self.handles);
        crate::events::SimEventChannel {
            dev: self.dev.clone(),
            resolve: Box::new(move |h| {
                let table = lock(&handles);
                table.objs.get(&h.0).copied()
            }),
            queue: Arc::default(),
        }
    }

    /// An event channel one thread may wait on while others subscribe through it (what a
    /// server of the kernel's DevX event fds needs); otherwise as [`Devx::event_channel`].
    pub fn shared_event_channel(&self) -> Arc<dyn EventChannel + Send + Sync> {
        Arc::new(self.sim_event_channel())
    }

    fn on_handle(
        &self,
        op: &'static str,
        method: DevxMethod,
        obj: ObjHandle,
        inbox: &[u8],
        outbox: &mut [u8],
    ) -> Result<(), DevxError> {
        if inbox.len() < 16 {
            return Err(os(op, Errno::EINVAL));
        }
        let target = self
            .lock()
            .objs
            .get(&obj.0)
            .copied()
            .ok_or(os(op, Errno::EINVAL))?;
        if opcode_of(inbox).devx_method() != method {
            return Err(os(op, Errno::EINVAL));
        }
        // devx_is_valid_obj_id: the inbox must name the handle's object.
        if fw::object_of_inbox(inbox) != Some(target) {
            return Err(os(op, Errno::EINVAL));
        }
        let mut inbox = inbox.to_vec();
        self.run(op, &mut inbox, outbox).map(|_| ())
    }
}

impl Drop for SimDevx {
    fn drop(&mut self) {
        // Release in reverse creation order; repeat while progress is made, since references
        // between objects may not follow handle order.
        let mut h = std::mem::take(&mut *self.lock());
        let uid = self.uid;
        // Activations of this context's threads finish first (bounded by their budget).
        self.dev.dpa_quiesce(uid);
        let registered = self.dev.with_state(|st| {
            // The kernel releases a closed context whatever else goes on: injected faults are
            // for commands the application sends, not for this (a refused destroy here would
            // leave objects, and their UMEM registrations, over memory about to be freed).
            let faults = std::mem::take(&mut st.fw.faults);
            loop {
                let before = h.objs.len();
                let ids: Vec<u64> = h.objs.keys().rev().copied().collect();
                for id in ids {
                    let obj = h.objs[&id];
                    let mut out = [0u8; 16];
                    if st
                        .fw
                        .execute(uid, &fw::destroy_inbox(obj), &mut out)
                        .is_ok()
                    {
                        h.objs.remove(&id);
                    }
                }
                if h.objs.is_empty() || h.objs.len() == before {
                    break;
                }
            }
            // EU groups and partitions this context made go with it (`fw::eu`).
            st.fw.release_eu_registers(uid);
            for (_, id) in h.umems.drain() {
                let _ = st.fw.mem.deregister(uid, id);
            }
            for (_, id) in h.uars.drain() {
                st.fw.uars.remove(id);
            }
            st.fw.faults = faults;
            st.fw.mem.has_umems_of(uid)
        });
        let retained = std::mem::take(
            &mut *self
                .retained
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        );
        if registered {
            // A registration survived the release (an object that would not go): the memory
            // stays with the process rather than being unmapped under the device.
            tracing::error!(target: "mlx5_sim::devx", uid, "UMEM left after closing the context");
            std::mem::forget(retained);
        }
        // Otherwise every registration of the context is gone, and `retained` is unmapped here.
    }
}
