//! DevX: how a command mailbox reaches firmware.
//!
//! [`Devx`] is the one seam between the driver and a device. It carries exactly what the
//! kernel's DevX interface offers (docs/sources.md §1): general commands, object create / modify /
//! query / destroy on handles, UMEM registration, UAR pages, EQ numbers and an event channel.
//! Three implementations exist:
//!
//! - [`kernel::KernelDevx`]: the kernel's uverbs ioctl interface in pure Rust (no C library);
//! - `rdma_core::RdmaCoreDevx` (feature `rdma-core`): rdma-core's libmlx5 loaded with dlopen;
//! - the device model `mlx5-sim`.
//!
//! On top of the trait, [`exec`], [`create`], [`modify`] and [`query`] run a typed
//! [`Command`] through the method the kernel accepts for its opcode,
//! and check status and syndrome in one place. Created objects are [`DevxObj`] handles that
//! destroy the object when dropped.

pub mod capture;
pub mod discovery;
pub mod kernel;
#[cfg(feature = "rdma-core")]
pub mod rdma_core;

use std::sync::Arc;
use std::time::Duration;

use crate::mlx5::cmd::{self, CmdError, Command};
use crate::mlx5::{DevxMethod, Opcode};

pub use discovery::{list_devices, DeviceInfo};

/// Errors of the transport layer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DevxError {
    /// A system call failed.
    #[error("{op}: {errno}")]
    Os {
        op: &'static str,
        errno: nix::errno::Errno,
    },
    /// The command reached firmware, which refused it (the kernel returned the mailbox).
    /// `errno` is what the system call returned alongside (EREMOTEIO on newer kernels).
    #[error("{source}{}", errno.map(|e| format!(" (errno {e})")).unwrap_or_default())]
    Command {
        #[source]
        source: CmdError,
        errno: Option<nix::errno::Errno>,
    },
    /// No mlx5 device was found.
    #[error("no mlx5 device found (looked in {searched}); run without hardware on the device model with `--sim`")]
    NoDevice { searched: String },
    /// The named device does not exist.
    #[error("no mlx5 device named {name:?} (found: {found})")]
    UnknownDevice { name: String, found: String },
    /// The opcode cannot be sent the way the caller asked.
    #[error("{opcode} is sent as {expected:?}, not {used:?}")]
    WrongMethod {
        opcode: Opcode,
        expected: DevxMethod,
        used: DevxMethod,
    },
    /// A mailbox is malformed before it is sent (too short, unknown opcode).
    #[error("bad mailbox: {0}")]
    BadMailbox(String),
    /// The backend cannot do this at all (missing library, missing kernel feature).
    #[error("not supported: {0}")]
    Unsupported(String),
    /// A bounded wait ended.
    #[error("timed out after {0:?} waiting for {1}")]
    Timeout(Duration, &'static str),
}

impl DevxError {
    /// The firmware status, if firmware refused the command.
    pub fn status(&self) -> Option<crate::mlx5::Status> {
        match self {
            DevxError::Command { source, .. } => source.status(),
            _ => None,
        }
    }

    /// The firmware syndrome, if firmware refused the command.
    pub fn syndrome(&self) -> Option<u32> {
        match self {
            DevxError::Command { source, .. } => source.syndrome(),
            _ => None,
        }
    }
}

impl From<CmdError> for DevxError {
    fn from(source: CmdError) -> Self {
        DevxError::Command {
            source,
            errno: None,
        }
    }
}

/// A backend's handle for a created object (the uverbs IDR number on the kernel path).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ObjHandle(pub u64);

/// A backend's handle for a UMEM registration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct UmemHandle(pub u64);

bitflags::bitflags! {
    /// UMEM access flags (`IB_ACCESS_*` as accepted by `MLX5_IB_ATTR_DEVX_UMEM_REG_ACCESS`).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub struct UmemAccess: u32 {
        const LOCAL_WRITE = 1;
        const REMOTE_WRITE = 2;
        const REMOTE_READ = 4;
        const REMOTE_ATOMIC = 8;
    }
}

/// A registered UMEM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Umem {
    pub handle: UmemHandle,
    /// The id firmware knows the UMEM by (`*_umem_id` fields).
    pub umem_id: u32,
}

/// UAR page kinds (`MLX5_IB_UAPI_UAR_ALLOC_TYPE_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UarKind {
    /// Write-combining (BlueFlame) mapping.
    BlueFlame = 0,
    /// Non-cached mapping.
    NonCached = 1,
}

/// An allocated and mapped UAR page.
#[derive(Debug)]
pub struct Uar {
    /// Backend handle.
    pub handle: u64,
    /// Page index firmware knows (`uar_page` fields).
    pub page_id: u32,
    /// Start of the mapping. The doorbell register is at `base + 0x800`.
    pub base: std::ptr::NonNull<u8>,
    /// Length of the mapping.
    pub len: usize,
}

// SAFETY: `base` points at an MMIO (or model) page that stays mapped until `uar_free`; writes
// through it are device doorbells that any thread may issue. The pointer itself carries no
// thread affinity.
unsafe impl Send for Uar {}
// SAFETY: as above; shared references only hand out the address.
unsafe impl Sync for Uar {}

/// Offset of the doorbell register in a UAR page (docs/sources.md §1).
pub const UAR_DOORBELL_OFFSET: usize = 0x800;

/// One event read from an event channel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DevxEvent {
    /// The cookie given at subscription.
    pub cookie: u64,
    /// The EQE (64 bytes) unless the channel omits data.
    pub data: Vec<u8>,
}

/// A DevX event channel (an async event fd on the kernel path).
pub trait EventChannel: Send {
    /// Subscribes to `event_types` of `obj` (or to unaffiliated events when `None`), tagging
    /// events with `cookie`.
    ///
    /// # Errors
    /// Backend errors.
    fn subscribe(
        &self,
        obj: Option<ObjHandle>,
        event_types: &[u16],
        cookie: u64,
    ) -> Result<(), DevxError>;
    /// Waits at most `timeout` for one event; `Ok(None)` when none arrived.
    ///
    /// # Errors
    /// Backend errors, or a malformed event record.
    fn read_event(&self, timeout: Duration) -> Result<Option<DevxEvent>, DevxError>;
}

/// What DevX offers. Mailboxes are big-endian PRM bytes; the backend moves them unchanged
/// (the kernel overwrites `uid`).
pub trait Devx: Send + Sync {
    /// A short description of the backend and device, for messages.
    fn describe(&self) -> String;
    /// `MLX5_IB_METHOD_DEVX_OTHER`.
    ///
    /// # Errors
    /// [`DevxError::Os`] when the system call fails without a mailbox. A firmware error is
    /// *not* an error here: the outbox holds status and syndrome, checked by the caller.
    fn general_cmd(&self, inbox: &[u8], outbox: &mut [u8]) -> Result<(), DevxError>;
    /// `MLX5_IB_METHOD_DEVX_OBJ_CREATE`; returns the handle to modify, query and destroy by.
    ///
    /// # Errors
    /// As [`Devx::general_cmd`]; a handle is returned only when firmware succeeded.
    fn obj_create(&self, inbox: &[u8], outbox: &mut [u8]) -> Result<ObjHandle, DevxError>;
    /// `MLX5_IB_METHOD_DEVX_OBJ_MODIFY`.
    ///
    /// # Errors
    /// As [`Devx::general_cmd`].
    fn obj_modify(&self, obj: ObjHandle, inbox: &[u8], outbox: &mut [u8]) -> Result<(), DevxError>;
    /// `MLX5_IB_METHOD_DEVX_OBJ_QUERY`.
    ///
    /// # Errors
    /// As [`Devx::general_cmd`].
    fn obj_query(&self, obj: ObjHandle, inbox: &[u8], outbox: &mut [u8]) -> Result<(), DevxError>;
    /// `MLX5_IB_METHOD_DEVX_OBJ_DESTROY`: firmware destroys the object with the command the
    /// backend derived at create time.
    ///
    /// # Errors
    /// The destroy failed (e.g. the object is still referenced).
    fn obj_destroy(&self, obj: ObjHandle) -> Result<(), DevxError>;
    /// `MLX5_IB_METHOD_DEVX_UMEM_REG`.
    ///
    /// # Safety
    /// `addr..addr+len` must be memory of this process that stays allocated and mapped until
    /// [`Devx::umem_dereg`] returns: the device reads and writes it by DMA.
    ///
    /// # Errors
    /// Backend errors.
    unsafe fn umem_reg(
        &self,
        addr: *mut u8,
        len: usize,
        access: UmemAccess,
        pgsz_bitmap: u64,
    ) -> Result<Umem, DevxError>;
    /// `MLX5_IB_METHOD_DEVX_UMEM_DEREG`.
    ///
    /// # Errors
    /// The UMEM is still referenced by an object.
    fn umem_dereg(&self, umem: UmemHandle) -> Result<(), DevxError>;
    /// Allocates and maps a UAR page (`MLX5_IB_METHOD_UAR_OBJ_ALLOC` and mmap).
    ///
    /// # Errors
    /// Backend errors.
    fn uar_alloc(&self, kind: UarKind) -> Result<Uar, DevxError>;
    /// Unmaps and frees a UAR page.
    ///
    /// # Errors
    /// Backend errors.
    fn uar_free(&self, uar: Uar) -> Result<(), DevxError>;
    /// `MLX5_IB_METHOD_DEVX_QUERY_EQN`: the EQ number serving completion vector `vector`.
    ///
    /// # Errors
    /// Backend errors.
    fn query_eqn(&self, vector: u32) -> Result<u32, DevxError>;
    /// Opens an event channel.
    ///
    /// # Errors
    /// Backend errors.
    fn event_channel(&self) -> Result<Box<dyn EventChannel>, DevxError>;
    /// Keeps `mem` (memory whose UMEM deregistration was refused, so the device may still
    /// reach it) alive until this context is closed and its registrations are gone; only then
    /// may it be returned to the system. The default keeps it for the life of the process
    /// (the kernel path: an event channel holds a duplicate of the context's file, so closing
    /// this handle does not prove the registrations gone).
    fn retain_until_close(&self, mem: Box<dyn std::any::Any + Send + Sync>) {
        std::mem::forget(mem);
    }
    /// Called after each doorbell this context's [`Uar`] pages took (send, receive, CQ arm,
    /// BlueFlame). A NIC sees the MMIO store itself: the default does nothing. The model's
    /// engine sleeps when it has nothing to do, and is woken here.
    fn doorbell_rung(&self) {}
    /// A count that changes whenever the device may have written what a host-side wait looks
    /// at (a CQE, a DMA write, a DPA thread's end); [`Devx::wait_activity`] sleeps on it. A
    /// NIC gives no such notice without interrupts: the default is always 0.
    fn activity(&self) -> u64 {
        0
    }
    /// Between two looks of a host-side wait: returns once [`Devx::activity`] differs from
    /// `seen` (read before the look that found nothing), or after at most `timeout`; the
    /// caller looks again either way. Returns `false` at once where the device gives no
    /// notice (the default: a NIC writes without telling anyone), and the caller then waits
    /// its own way (yields, backs off); the model spins briefly, then sleeps until its next
    /// pass that did work, and returns `true`.
    fn wait_activity(&self, seen: u64, timeout: Duration) -> bool {
        let _ = (seen, timeout);
        false
    }
}

/// The pause between two looks of a host-side wait whose look costs the device work (a
/// firmware command): where the device gives notice ([`Devx::wait_activity`], the model), a
/// sleep until its next activity, at most [`Backoff::MAX`]; elsewhere the first
/// [`Backoff::YIELDS`] pauses give the core away once each, and then the pauses are sleeps
/// that double from 20 us up to [`Backoff::MAX`] (most calls end within microseconds; a
/// longer one should not cost firmware a command per yield).
#[derive(Debug)]
pub struct Backoff {
    looks: u32,
    sleep: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            looks: 0,
            sleep: Duration::from_micros(20),
        }
    }
}

impl Backoff {
    /// Pauses that only yield, where the device gives no notice.
    pub const YIELDS: u32 = 64;
    /// The longest pause.
    pub const MAX: Duration = Duration::from_millis(2);

    /// Pauses after a look that found nothing; `seen` is [`Devx::activity`] read before it.
    pub fn pause(&mut self, dev: &dyn Devx, seen: u64) {
        if dev.wait_activity(seen, Self::MAX) {
            return;
        }
        self.looks = self.looks.saturating_add(1);
        if self.looks <= Self::YIELDS {
            std::thread::yield_now();
        } else {
            std::thread::sleep(self.sleep);
            self.sleep = (self.sleep * 2).min(Self::MAX);
        }
    }
}

/// Looks with `look` until it gives `Some`, at most `timeout`, waiting on `dev`'s activity
/// between looks ([`Devx::wait_activity`]): the one loop of the driver's host-side waits for
/// something the device writes. `Ok(None)` when `timeout` passed first.
///
/// # Errors
/// What `look` returned.
pub fn wait_for<T, E>(
    dev: &dyn Devx,
    timeout: Duration,
    mut look: impl FnMut() -> Result<Option<T>, E>,
) -> Result<Option<T>, E> {
    let start = std::time::Instant::now();
    loop {
        let seen = dev.activity();
        if let Some(v) = look()? {
            return Ok(Some(v));
        }
        let spent = start.elapsed();
        if spent >= timeout {
            return Ok(None);
        }
        if !dev.wait_activity(seen, timeout - spent) {
            std::thread::yield_now();
        }
    }
}

/// A firmware object created through DevX; destroyed when dropped.
pub struct DevxObj {
    dev: Arc<dyn Devx>,
    handle: ObjHandle,
    opcode: Opcode,
    destroyed: bool,
}

impl std::fmt::Debug for DevxObj {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DevxObj")
            .field("handle", &self.handle)
            .field("created_by", &self.opcode)
            .finish()
    }
}

impl DevxObj {
    /// The backend handle.
    pub fn handle(&self) -> ObjHandle {
        self.handle
    }
    /// The opcode that created the object.
    pub fn created_by(&self) -> Opcode {
        self.opcode
    }
    /// The device the object lives on.
    pub fn device(&self) -> &Arc<dyn Devx> {
        &self.dev
    }
    /// Destroys the object now and reports the result (drop ignores it).
    ///
    /// # Errors
    /// The destroy failed; the handle is then left to the backend (the kernel frees it with
    /// the context).
    pub fn destroy(mut self) -> Result<(), DevxError> {
        self.destroyed = true;
        let r = self.dev.obj_destroy(self.handle);
        trace_destroy(self.opcode, self.handle, &r);
        r
    }

    /// A placeholder that names no object and destroys nothing (what a handle leaves behind
    /// when it hands its object on, e.g. to be destroyed later).
    pub(crate) fn gone(dev: &Arc<dyn Devx>) -> DevxObj {
        DevxObj {
            dev: Arc::clone(dev),
            handle: ObjHandle(0),
            opcode: Opcode(0),
            destroyed: true,
        }
    }

    /// Destroys the object now if it still exists; after a refusal it stays alive (and is
    /// tried again on drop), so a caller may retry once what blocked it is gone.
    ///
    /// # Errors
    /// The destroy failed.
    pub fn try_destroy(&mut self) -> Result<(), DevxError> {
        if self.destroyed {
            return Ok(());
        }
        let r = self.dev.obj_destroy(self.handle);
        trace_destroy(self.opcode, self.handle, &r);
        r?;
        self.destroyed = true;
        Ok(())
    }
}

impl Drop for DevxObj {
    fn drop(&mut self) {
        if !self.destroyed {
            // A failed destroy on drop has nowhere to go but the trace; `destroy()` reports it.
            let r = self.dev.obj_destroy(self.handle);
            trace_destroy(self.opcode, self.handle, &r);
        }
    }
}

/// The `tracing` event of an object's destroy (target `mlx5_dpa::devx`, debug; a refusal at
/// warn level, since a drop has no other way to say it).
fn trace_destroy(opcode: Opcode, handle: ObjHandle, r: &Result<(), DevxError>) {
    match r {
        Ok(()) => {
            tracing::debug!(target: "mlx5_dpa::devx", created_by = %opcode, handle = handle.0, "object destroyed")
        }
        Err(e) => {
            tracing::warn!(target: "mlx5_dpa::devx", created_by = %opcode, handle = handle.0, error = %e, "object destroy refused")
        }
    }
}

fn check_method<C: Command>(used: DevxMethod) -> Result<(), DevxError> {
    let expected = C::OPCODE.devx_method();
    if expected != used {
        return Err(DevxError::WrongMethod {
            opcode: C::OPCODE,
            expected,
            used,
        });
    }
    Ok(())
}

/// One `tracing` event per firmware command the driver sends (target `mlx5_dpa::devx`,
/// level debug): opcode, op_mod, the outbox's status and syndrome, how long it took, and a
/// transport error if there was one. `mlx5-dpa --trace` shows them.
fn trace_command(
    opcode: Opcode,
    op_mod: u16,
    outbox: &[u8],
    error: Option<&DevxError>,
    t0: std::time::Instant,
) {
    let status = outbox.first().copied().unwrap_or(0);
    let syndrome = outbox
        .get(4..8)
        .map_or(0, |b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]));
    let us = t0.elapsed().as_micros() as u64;
    match error {
        None => {
            tracing::debug!(target: "mlx5_dpa::devx", %opcode, op_mod, status, syndrome = %format_args!("{syndrome:#x}"), us, "command")
        }
        Some(e) => {
            tracing::debug!(target: "mlx5_dpa::devx", %opcode, op_mod, status, syndrome = %format_args!("{syndrome:#x}"), us, error = %e, "command failed")
        }
    }
}

/// Attaches the command's identity to a transport error that carried a firmware status.
fn finish<C: Command>(
    cmd: &C,
    res: Result<(), DevxError>,
    outbox: &[u8],
) -> Result<C::Output, DevxError> {
    match res {
        Ok(()) => Ok(cmd::decode_outbox(cmd, outbox)?),
        Err(DevxError::Os { errno, op }) => {
            // Newer kernels return EREMOTEIO with the mailbox copied out: report firmware's word.
            match cmd::check_status(C::OPCODE, cmd.op_mod(), outbox) {
                Err(source @ CmdError::Firmware { .. }) => Err(DevxError::Command {
                    source,
                    errno: Some(errno),
                }),
                _ => Err(DevxError::Os { op, errno }),
            }
        }
        Err(e) => Err(e),
    }
}

/// Runs a general command (`DevxMethod::General`).
///
/// # Errors
/// Encoding, transport, firmware status or decoding errors.
pub fn exec<C: Command>(dev: &dyn Devx, cmd: &C) -> Result<C::Output, DevxError> {
    check_method::<C>(DevxMethod::General)?;
    let inbox = cmd::encode_inbox(cmd)?;
    let mut outbox = vec![0u8; cmd::outbox_len(cmd)];
    let t0 = std::time::Instant::now();
    let res = dev.general_cmd(&inbox, &mut outbox);
    trace_command(C::OPCODE, cmd.op_mod(), &outbox, res.as_ref().err(), t0);
    finish(cmd, res, &outbox)
}

/// Creates an object (`DevxMethod::ObjCreate`); the handle destroys it when dropped.
///
/// # Errors
/// Encoding, transport, firmware status or decoding errors. On a decoding error after a
/// successful create, the object is destroyed before returning.
pub fn create<C: Command>(dev: &Arc<dyn Devx>, cmd: &C) -> Result<(DevxObj, C::Output), DevxError> {
    check_method::<C>(DevxMethod::ObjCreate)?;
    let inbox = cmd::encode_inbox(cmd)?;
    let mut outbox = vec![0u8; cmd::outbox_len(cmd)];
    let t0 = std::time::Instant::now();
    let res = dev.obj_create(&inbox, &mut outbox);
    trace_command(C::OPCODE, cmd.op_mod(), &outbox, res.as_ref().err(), t0);
    match res {
        Ok(handle) => {
            tracing::debug!(target: "mlx5_dpa::devx", opcode = %C::OPCODE, handle = handle.0, "object created");
            let obj = DevxObj {
                dev: Arc::clone(dev),
                handle,
                opcode: C::OPCODE,
                destroyed: false,
            };
            // `obj` is dropped (and so destroyed) if decoding fails.
            let out = cmd::decode_outbox(cmd, &outbox)?;
            Ok((obj, out))
        }
        Err(e) => Err(finish(cmd, Err(e), &outbox)
            .err()
            .unwrap_or(DevxError::BadMailbox(
                "backend reported an error but the outbox decoded".into(),
            ))),
    }
}

/// Modifies an object (`DevxMethod::ObjModify`).
///
/// # Errors
/// Encoding, transport, firmware status or decoding errors.
pub fn modify<C: Command>(obj: &DevxObj, cmd: &C) -> Result<C::Output, DevxError> {
    check_method::<C>(DevxMethod::ObjModify)?;
    let inbox = cmd::encode_inbox(cmd)?;
    let mut outbox = vec![0u8; cmd::outbox_len(cmd)];
    let t0 = std::time::Instant::now();
    let res = obj.dev.obj_modify(obj.handle, &inbox, &mut outbox);
    trace_command(C::OPCODE, cmd.op_mod(), &outbox, res.as_ref().err(), t0);
    finish(cmd, res, &outbox)
}

/// Queries an object (`DevxMethod::ObjQuery`).
///
/// # Errors
/// Encoding, transport, firmware status or decoding errors.
pub fn query<C: Command>(obj: &DevxObj, cmd: &C) -> Result<C::Output, DevxError> {
    check_method::<C>(DevxMethod::ObjQuery)?;
    let inbox = cmd::encode_inbox(cmd)?;
    let mut outbox = vec![0u8; cmd::outbox_len(cmd)];
    let t0 = std::time::Instant::now();
    let res = obj.dev.obj_query(obj.handle, &inbox, &mut outbox);
    trace_command(C::OPCODE, cmd.op_mod(), &outbox, res.as_ref().err(), t0);
    finish(cmd, res, &outbox)
}

/// Reads the device's capabilities (general page, page 2, and the DPA page when `apu` is set).
///
/// # Errors
/// The general page query failing; pages 2 and DPA are optional (a device may refuse them).
pub fn query_caps(dev: &dyn Devx) -> Result<crate::mlx5::caps::Caps, DevxError> {
    let [g, g2, d] = crate::mlx5::caps::Caps::QUERIES;
    let general = exec(dev, &g)?;
    let general_2 = exec(dev, &g2).ok();
    let apu = crate::mlx5::View::<crate::mlx5::layouts::cmd_hca_cap::Layout>::new(&general)
        .map(|v| v.get(crate::mlx5::layouts::cmd_hca_cap::apu) == 1)
        .unwrap_or(false);
    // A device that reports a DPA (`apu`) has its capability page: a failed query is an
    // error to report, not a missing DPA.
    let dpa = if apu { Some(exec(dev, &d)?) } else { None };
    crate::mlx5::caps::Caps::decode(&general, general_2.as_deref(), dpa.as_deref())
        .map_err(|e| DevxError::BadMailbox(e.to_string()))
}

/// GID table entries [`roce_v2_ipv4_address`] looks through.
pub const GID_SCAN: u16 = 256;

/// The first entry of the port's GID table that carries RoCE v2 over IPv4 (`roce_version` 2,
/// `roce_l3_type` IPv4, a non-zero GID): its index (what a QP's `src_addr_index` names) and the
/// entry. A BlueField-3 lists each address for RoCE v1 and v2, and its link-local GIDs first, so
/// the index depends on the device; the model has the link-local entry at 0 and IPv4 at 1.
///
/// # Errors
/// No such entry among the first [`GID_SCAN`] (the scan stops at the first index firmware
/// refuses as a bad parameter, the table's end); any other refusal of a query, or a transport
/// error.
pub fn roce_v2_ipv4_address(
    dev: &dyn Devx,
) -> Result<(u8, crate::mlx5::cmd::RoceAddress), DevxError> {
    use crate::mlx5::cmd::QueryRoceAddress;
    for i in 0..GID_SCAN {
        let a = match exec(dev, &QueryRoceAddress(i)) {
            Ok(a) => a,
            // An index past the table is a bad parameter: the scan is over. Any other refusal
            // is the query failing, and says so (it is no missing address).
            Err(e) if e.status() == Some(crate::mlx5::Status::BAD_PARAM) => break,
            Err(e) => return Err(e),
        };
        if a.roce_version == 2 && a.roce_l3_type == 0 && a.gid != [0; 16] {
            return Ok((i as u8, a));
        }
    }
    Err(DevxError::Unsupported(
        "no RoCE v2 IPv4 address in the port's GID table".into(),
    ))
}

/// The longest mailbox (inbox or outbox) DevX carries: the kernel passes each as one ioctl
/// attribute, whose length is a `__u16` (`struct ib_uverbs_attr`,
/// include/uapi/rdma/rdma_user_ioctl_cmds.h).
pub const MAX_MAILBOX_LEN: usize = u16::MAX as usize;

/// Sends a raw inbox the way the kernel wants its opcode sent and returns the outbox (status
/// not interpreted): the researcher's path (`mlx5-dpa cmd`). Objects created this way are
/// destroyed again before returning, unless `keep` is set, in which case they live as long as
/// the returned handle.
///
/// # Errors
/// A mailbox shorter than the command header, an opcode DevX does not accept, a modify /
/// query / destroy (they need a handle from the same context), or transport errors.
pub fn raw_command(
    dev: &Arc<dyn Devx>,
    inbox: &[u8],
    outbox_len: usize,
) -> Result<(Vec<u8>, Option<DevxObj>), DevxError> {
    if inbox.len() < 16 {
        return Err(DevxError::BadMailbox(format!(
            "inbox of {} bytes is shorter than the 16-byte header",
            inbox.len()
        )));
    }
    for (what, len) in [("inbox", inbox.len()), ("outbox", outbox_len)] {
        if len > MAX_MAILBOX_LEN {
            return Err(DevxError::BadMailbox(format!(
                "{what} of {len} bytes: DevX carries at most {MAX_MAILBOX_LEN}"
            )));
        }
    }
    let opcode = Opcode(u16::from_be_bytes([inbox[0], inbox[1]]));
    let mut outbox = vec![0u8; outbox_len.max(16)];
    match opcode.devx_method() {
        DevxMethod::General => {
            let r = dev.general_cmd(inbox, &mut outbox);
            keep_mailbox_on_remote_error(r)?;
            Ok((outbox, None))
        }
        DevxMethod::ObjCreate => match dev.obj_create(inbox, &mut outbox) {
            Ok(handle) => Ok((outbox, Some(DevxObj { dev: Arc::clone(dev), handle, opcode, destroyed: false }))),
            Err(e) => {
                keep_mailbox_on_remote_error(Err(e))?;
                Ok((outbox, None))
            }
        },
        m => Err(DevxError::Unsupported(format!(
            "{opcode} goes through {m:?}, which needs an object handle of this context; create the object in the same session"
        ))),
    }
}

/// A firmware error comes back as an errno *and* a filled mailbox; for raw commands the
/// mailbox is the answer.
fn keep_mailbox_on_remote_error(r: Result<(), DevxError>) -> Result<(), DevxError> {
    match r {
        Err(DevxError::Os {
            errno: nix::errno::Errno::EREMOTEIO,
            ..
        }) => Ok(()),
        other => other,
    }
}
