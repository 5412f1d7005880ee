//! A DPA process (FlexIO `flexio_process_create` / `flexio_process_destroy`), its memory,
//! copies, event handlers and RPC (`flexio_process_call`).
//!
//! # What [`Process::create`] builds, in order
//!
//! 1. The DPA capability check ([`DpaCaps::query`]): no DPA is [`DpaError::NotSupported`].
//! 2. The device ELF parsed on the host (symbols for entries; a malformed image is refused
//!    before firmware sees it).
//! 3. The image copied into host memory registered as a UMEM, and a PD of the process's own.
//! 4. DPA_PROCESS (provisional context: PD, image UMEM / offset / size, heap size); QUERY gives
//!    the process memory's DUMEM id and base address.
//! 5. A host UAR page and a DPA_UAR extending it to the process (FlexIO `flexio_uar_extend`,
//!    what the RTOS call GET_DUAR returns).
//! 6. The copier ([`super::copy`]): loopback RC QPs, staging region and DUMEM key.
//! 7. A 4 KiB-class DPA buffer for RPC argument blocks.
//!
//! Each step's handle is RAII; a failure drops what was made, newest first. The same order
//! holds on [`Drop`]: the process state's fields are declared in reverse creation order, and
//! buffers ([`DpaBuf`]) and handlers ([`EventHandler`](super::thread::EventHandler)) keep the process alive through an
//! `Arc`, so the DPA_PROCESS goes last whatever the user drops first.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::devx::{self, Devx, DevxError, DevxObj, UarKind};
use crate::dpa::coredump::{Coredump, CoredumpError};
use crate::dpa::elf::{Elf, ElfError};
use crate::mem::{Access, DmaBuf, MemError, Pd, Umem};
use crate::mlx5::cmd::{
    CreateGeneralObject, DpaProcessAttr, DpaProcessCoredump, DpaUarAttr, QueryGeneralObject,
};
use crate::mlx5::layout::{Layout, View};
use crate::mlx5::layouts::{dpa::obj_type, dpa_process, dpa_process_status};
use crate::queues::QueueError;
pub(crate) use crate::sync::lock;
use crate::uar::UarPage;

use super::caps::DpaCaps;
use super::copy::Copier;
use super::heap::{Heap, HeapStats};

/// Default heap of a process (FlexIO leaves it to the image; the model maps it after data).
pub const DEFAULT_HEAP_SIZE: u64 = 64 * 1024;
/// Longest wait for an RPC ([`Process::call`]) to finish.
pub const RPC_TIMEOUT: Duration = Duration::from_secs(30);
/// Most u64 arguments [`Process::call`] passes: the eight the runtime's generic unpack hands on
/// in a0..a7 (LP64 psABI).
pub const MAX_RPC_ARGS: usize = 8;
/// Largest argument buffer [`Process::call_packed`] takes.
pub const MAX_RPC_ARG_BUF: usize = 1024;
/// The runtime's RPC entry (fw-blobs `runtime/rpc.c`): a call's thread starts there with a0 =
/// the address of a `struct mlx5_dpa_rpc_call` (unpack, func, ret, reserved, argument buffer).
pub const RPC_ENTRY: &str = "mlx5_dpa_rpc_entry";
/// The runtime's generic unpack: up to eight u64 arguments from a 64-byte buffer.
pub const RPC_GENERIC_UNPACK: &str = "mlx5_dpa_rpc_unpack_u64";
/// Bytes of `struct mlx5_dpa_rpc_call` before its argument buffer.
pub(crate) const RPC_CALL_HEADER: usize = 32;

/// Errors of the FlexIO layer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DpaError {
    /// The device has no (usable) DPA.
    #[error("DPA not supported: {0}")]
    NotSupported(&'static str),
    /// The device ELF is unusable.
    #[error("device ELF: {0}")]
    Elf(#[from] ElfError),
    /// The ELF has no such symbol.
    #[error("the process's ELF has no symbol {0:?}")]
    UnknownSymbol(String),
    /// Arguments out of range.
    #[error("bad argument: {0}")]
    BadArgs(String),
    /// The device answered something this driver cannot use.
    #[error("unexpected device answer: {0}")]
    Device(String),
    /// Transport or firmware error.
    #[error(transparent)]
    Devx(#[from] DevxError),
    #[error(transparent)]
    Mem(#[from] MemError),
    #[error(transparent)]
    Queue(#[from] QueueError),
    /// An RDMA operation of a copy completed with an error.
    #[error("{op} of {len:#x} bytes at DPA address {daddr:#x} failed: {detail}")]
    Copy {
        op: &'static str,
        daddr: u64,
        len: usize,
        detail: String,
    },
    /// A bounded wait ended.
    #[error("timed out after {after:?} waiting for {what}")]
    Timeout { what: &'static str, after: Duration },
    /// The process failed (FlexIO `flexio_err_status_get` != 0).
    #[error("DPA process failed: {status:?}, syndrome {syndrome:#x}")]
    ProcessFault {
        status: ProcessStatus,
        syndrome: u32,
    },
    /// The coredump image could not be decoded.
    #[error(transparent)]
    Coredump(#[from] CoredumpError),
    /// One step of a multi-step set-up failed: which step, and why. What the earlier steps
    /// created has been released when this is returned.
    #[error("{step}: {source}")]
    Step {
        step: &'static str,
        #[source]
        source: Box<DpaError>,
    },
}

impl DpaError {
    /// The innermost error under any [`DpaError::Step`] wrappers.
    pub fn root(&self) -> &DpaError {
        match self {
            DpaError::Step { source, .. } => source.root(),
            e => e,
        }
    }

    /// The firmware syndrome under any step wrappers, when firmware refused a command.
    pub fn syndrome(&self) -> Option<u32> {
        match self.root() {
            DpaError::Devx(e) => e.syndrome(),
            _ => None,
        }
    }

    /// The outermost step name, when the error came from a named step.
    pub fn step(&self) -> Option<&'static str> {
        match self {
            DpaError::Step { step, .. } => Some(step),
            _ => None,
        }
    }
}

/// Names the set-up step a fallible call belongs to ([`DpaError::Step`]).
pub trait StepExt<T> {
    /// Wraps an error of the device or the transport as `DpaError::Step { step, .. }`, so a
    /// failed firmware command says which step of a multi-step flow it broke. Errors about
    /// the caller's own input and about what the DPA program did ([`DpaError::BadArgs`],
    /// [`DpaError::UnknownSymbol`], [`DpaError::Elf`], [`DpaError::NotSupported`],
    /// [`DpaError::ProcessFault`]) pass through unwrapped, to be matched as they are.
    ///
    /// # Errors
    /// The error, wrapped or not.
    fn step(self, step: &'static str) -> Result<T, DpaError>;
}

impl<T, E: Into<DpaError>> StepExt<T> for Result<T, E> {
    fn step(self, step: &'static str) -> Result<T, DpaError> {
        self.map_err(|e| match e.into() {
            e @ (DpaError::BadArgs(_)
            | DpaError::UnknownSymbol(_)
            | DpaError::Elf(_)
            | DpaError::NotSupported(_)
            | DpaError::ProcessFault { .. }) => e,
            e => DpaError::Step {
                step,
                source: Box::new(e),
            },
        })
    }
}

/// `dpa_process_status` (numbers provisional, see `layouts::dpa::dpa_process_status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProcessStatus {
    Ok,
    /// A thread faulted.
    Fault,
    /// A thread exceeded its instruction budget.
    Watchdog,
    /// A thread made an RTOS call the OS does not know.
    BadRtosCall,
    /// The process called EXIT_PROCESS with this status.
    Exited(u32),
    /// Another firmware error number.
    Other(u8),
}

/// FlexIO `flexio_err_status_get` and what goes with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ErrStatus {
    pub status: ProcessStatus,
    pub error_syndrome: u32,
}

/// How to create a process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessAttr {
    /// Bytes of heap after the data segments.
    pub heap_size: u64,
    /// The application's crypto data (its signature: [`super::auth`]), handed to firmware
    /// with the image, as a device with DPA Application Authentication enabled requires.
    /// From a host program's signature section ([`super::app::App::crypto_data`]) or a `.sig`
    /// file.
    pub signature: Option<Vec<u8>>,
    /// A PD the caller made (by its number), for the process and what is made on it, instead
    /// of a PD of the process's own; the caller keeps it alive longer than the process.
    pub pd: Option<crate::mlx5::Pdn>,
}

impl ProcessAttr {
    /// The attributes of a process of `app`: the defaults, with the app's signature (a host
    /// program's signature section, or a `.sig` file attached to it) when it has one.
    pub fn for_app(app: &super::app::App) -> ProcessAttr {
        ProcessAttr {
            signature: app.crypto_data().map(<[u8]>::to_vec),
            ..ProcessAttr::default()
        }
    }
}

impl Default for ProcessAttr {
    fn default() -> Self {
        ProcessAttr {
            heap_size: DEFAULT_HEAP_SIZE,
            signature: None,
            pd: None,
        }
    }
}

/// The shared state of a process. Fields drop in declaration order: the copier (QPs, key) and
/// heap blocks first, then the DPA_UAR and its page, the process, the image and the PD.
pub(crate) struct ProcessInner {
    /// Objects whose destroy firmware refused while a thread still named them (an outbox or
    /// window dropped before the handlers using it as their default), with what they keep
    /// alive; retried when a thread goes, and at the latest here, first of all fields.
    deferred: Mutex<Vec<Deferred>>,
    /// Message stream ids in use (bit n = stream n): the device knows a stream by id only.
    msg_stream_ids: Mutex<[u64; 4]>,
    copier: Mutex<Copier>,
    heap: Mutex<Heap>,
    /// Serialises RPCs (one argument block).
    pub(crate) rpc: Mutex<u64>,
    /// The outbox the runtime's own threads (RPCs) get as their default, over the process's
    /// UAR, made on first use: FlexIO's RPCs may print (`flexio_dev_print` rings a message
    /// stream's queue through the thread's outbox). Destroyed before the process.
    pub(crate) rpc_outbox: Mutex<Option<(DevxObj, u32)>>,
    _dpa_uar: DevxObj,
    uar: Arc<UarPage>,
    obj: DevxObj,
    _image: Arc<Umem>,
    pd: Arc<Pd>,
    pub(crate) dev: Arc<dyn Devx>,
    pub(crate) id: u32,
    dumem_id: u32,
    dumem_base: u64,
    symbols: Vec<(String, u64)>,
    caps: DpaCaps,
}

impl std::fmt::Debug for ProcessInner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Process")
            .field("id", &self.id)
            .field("dumem_id", &self.dumem_id)
            .field("dumem_base", &self.dumem_base)
            .finish_non_exhaustive()
    }
}

/// An object waiting to be destroyed, and what must outlive it.
pub(crate) struct Deferred {
    pub(crate) obj: DevxObj,
    pub(crate) _keep: Box<dyn std::any::Any + Send + Sync>,
}

impl ProcessInner {
    /// Keeps `obj` (and `keep`) until its destroy succeeds ([`ProcessInner::retry_deferred`]).
    pub(crate) fn defer(&self, obj: DevxObj, keep: Box<dyn std::any::Any + Send + Sync>) {
        lock(&self.deferred).push(Deferred { obj, _keep: keep });
    }

    /// Claims message stream id `id` (< 256); false when it is taken or out of range.
    pub(crate) fn claim_stream_id(&self, id: u32) -> bool {
        let mut ids = lock(&self.msg_stream_ids);
        let Some(word) = ids.get_mut((id / 64) as usize) else {
            return false;
        };
        let bit = 1u64 << (id % 64);
        if *word & bit != 0 {
            return false;
        }
        *word |= bit;
        true
    }

    /// Releases a claimed message stream id.
    pub(crate) fn release_stream_id(&self, id: u32) {
        if let Some(word) = lock(&self.msg_stream_ids).get_mut((id / 64) as usize) {
            *word &= !(1u64 << (id % 64));
        }
    }

    /// Tries the deferred destroys again (after a thread went); keeps the ones still refused.
    pub(crate) fn retry_deferred(&self) {
        lock(&self.deferred).retain_mut(|d| d.obj.try_destroy().is_err());
    }

    pub(crate) fn symbol(&self, name: &str) -> Result<u64, DpaError> {
        self.symbols
            .iter()
            .find(|(n, _)| n == name)
            .map(|&(_, v)| v)
            .ok_or_else(|| DpaError::UnknownSymbol(name.to_string()))
    }

    pub(crate) fn err_status(&self) -> Result<ErrStatus, DpaError> {
        let q = devx::query(
            &self.obj,
            &QueryGeneralObject {
                obj_type: obj_type::DPA_PROCESS,
                obj_id: self.id,
                ctx_len: dpa_process::Layout::SIZE_BYTES,
            },
        )?;
        let v = View::<dpa_process::Layout>::new(&q)
            .map_err(|e| DpaError::Device(format!("DPA_PROCESS {:#x} query: {e}", self.id)))?;
        let raw = v.get(dpa_process::dpa_process_status) as u8;
        let status = match raw {
            dpa_process_status::OK => ProcessStatus::Ok,
            dpa_process_status::FAULT => ProcessStatus::Fault,
            dpa_process_status::WATCHDOG => ProcessStatus::Watchdog,
            dpa_process_status::BAD_RTOS_CALL => ProcessStatus::BadRtosCall,
            dpa_process_status::EXITED => {
                ProcessStatus::Exited(v.get(dpa_process::exit_status) as u32)
            }
            x => ProcessStatus::Other(x),
        };
        Ok(ErrStatus {
            status,
            error_syndrome: v.get(dpa_process::error_syndrome) as u32,
        })
    }

    /// The process's failure as an error (also when, oddly, it reports none).
    pub(crate) fn fault(&self) -> Result<DpaError, DpaError> {
        let st = self.err_status()?;
        Ok(DpaError::ProcessFault {
            status: st.status,
            syndrome: st.error_syndrome,
        })
    }

    fn cover(&self) -> u64 {
        lock(&self.heap).extent()
    }
}

/// A DPA process. Cheap handles to it ([`DpaBuf`], [`EventHandler`](super::thread::EventHandler), queues, streams, and
/// clones of this value) keep it alive; it is destroyed when the last one goes.
#[derive(Debug, Clone)]
pub struct Process {
    inner: Arc<ProcessInner>,
    /// An extended handle ([`Process::extend`]): queues, keys and UARs of another function.
    ext: Option<Arc<super::extend::Extension>>,
}

/// A buffer in DPA memory (FlexIO `flexio_buf_dev_alloc`); freed when dropped.
#[derive(Debug)]
pub struct DpaBuf {
    daddr: u64,
    len: u64,
    process: Arc<ProcessInner>,
}

impl DpaBuf {
    /// The DPA address.
    pub fn daddr(&self) -> u64 {
        self.daddr
    }
    /// Usable bytes (the request rounded up to [`super::heap::DPA_BUF_ALIGN`]).
    pub fn len(&self) -> u64 {
        self.len
    }
    /// Never true (zero-byte buffers are refused).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Drop for DpaBuf {
    fn drop(&mut self) {
        lock(&self.process.heap).free(self.daddr);
    }
}

impl Process {
    /// Creates a process running application `app` (FlexIO `flexio_process_create`, which
    /// takes the app): its image, and its signature (a host program's signature section or a
    /// `.sig` file attached to it) unless `attr` gives one.
    ///
    /// # Errors
    /// As [`Process::create`].
    pub fn from_app(
        dev: &Arc<dyn Devx>,
        app: &super::app::App,
        attr: &ProcessAttr,
    ) -> Result<Process, DpaError> {
        let attr = ProcessAttr {
            signature: attr
                .signature
                .clone()
                .or_else(|| ProcessAttr::for_app(app).signature),
            ..attr.clone()
        };
        Process::create(dev, app.image(), &attr)
    }

    /// Creates a process running the device ELF `elf` (FlexIO `flexio_process_create`).
    ///
    /// # Errors
    /// [`DpaError::NotSupported`] without a DPA, [`DpaError::Elf`] for a bad image, firmware
    /// refusals (a process over the memory budget...). What was created is released.
    pub fn create(
        dev: &Arc<dyn Devx>,
        elf: &[u8],
        attr: &ProcessAttr,
    ) -> Result<Process, DpaError> {
        let caps = DpaCaps::query(dev).step("querying the DPA capabilities")?;
        let parsed = Elf::parse_device(elf).step("parsing the device ELF")?;
        let symbols: Vec<(String, u64)> = parsed
            .symbols()
            .iter()
            .filter(|s| s.is_defined() && !s.name.is_empty())
            .map(|s| (s.name.clone(), s.value))
            .collect();
        const IMAGE: &str = "registering the ELF image";
        // The signature, if any, follows the image in the same memory, 64-byte aligned.
        let sig = attr.signature.as_deref().unwrap_or(&[]);
        let sig_offset = elf.len().next_multiple_of(64);
        let image_buf = DmaBuf::new((sig_offset + sig.len()).max(1)).step(IMAGE)?;
        image_buf.write(0, elf).step(IMAGE)?;
        if !sig.is_empty() {
            image_buf.write(sig_offset, sig).step(IMAGE)?;
        }
        let image = Umem::register(dev, &image_buf, Access::empty()).step(IMAGE)?;
        let pd = match attr.pd {
            Some(pdn) => Pd::import(pdn.0),
            None => Pd::alloc(dev).step("allocating the process's PD")?,
        };
        const PROCESS: &str = "creating the DPA process";
        let (obj, id) = devx::create(
            dev,
            &CreateGeneralObject(DpaProcessAttr {
                pd: pd.pdn(),
                elf_umem_id: image.id().0,
                elf_umem_offset: 0,
                elf_size: elf.len() as u64,
                heap_size: attr.heap_size,
                sig_umem_id: if sig.is_empty() { 0 } else { image.id().0 },
                sig_umem_offset: if sig.is_empty() { 0 } else { sig_offset as u64 },
                sig_size: sig.len() as u64,
            }),
        )
        .step(PROCESS)?;
        let q = devx::query(
            &obj,
            &QueryGeneralObject {
                obj_type: obj_type::DPA_PROCESS,
                obj_id: id,
                ctx_len: dpa_process::Layout::SIZE_BYTES,
            },
        )
        .step(PROCESS)?;
        let v = View::<dpa_process::Layout>::new(&q)
            .map_err(|e| DpaError::Device(format!("DPA_PROCESS {id:#x} query: {e}")))
            .step(PROCESS)?;
        let dumem_id = v.get(dpa_process::dumem_id) as u32;
        let dumem_base = v.get(dpa_process::dumem_base);
        const UAR: &str = "extending a UAR to the process";
        let uar = UarPage::alloc(dev, UarKind::NonCached).step(UAR)?;
        let (dpa_uar, _) = devx::create(
            dev,
            &CreateGeneralObject(DpaUarAttr {
                dpa_process_id: id,
                uar_page: uar.page_id(),
            }),
        )
        .step(UAR)?;
        let copier = Copier::new(dev, &pd, &uar, dumem_id, dumem_base)
            .step("setting up host <-> DPA copies")?;
        let mut heap = Heap::default();
        let (rpc_block, _) = heap
            .alloc(dev, id, (RPC_CALL_HEADER + MAX_RPC_ARG_BUF) as u64)
            .step("allocating the RPC argument block")?;
        Ok(Process {
            ext: None,
            inner: Arc::new(ProcessInner {
                deferred: Mutex::new(Vec::new()),
                msg_stream_ids: Mutex::new([0; 4]),
                copier: Mutex::new(copier),
                heap: Mutex::new(heap),
                rpc: Mutex::new(rpc_block),
                rpc_outbox: Mutex::new(None),
                _dpa_uar: dpa_uar,
                uar,
                obj,
                _image: image,
                pd,
                dev: Arc::clone(dev),
                id,
                dumem_id,
                dumem_base,
                symbols,
                caps,
            }),
        })
    }

    /// The DPA_PROCESS object id.
    pub fn id(&self) -> u32 {
        self.inner.id
    }

    /// The shared state, for the handles of other modules that keep the process alive.
    pub(crate) fn inner(&self) -> &Arc<ProcessInner> {
        &self.inner
    }

    /// The process memory as a UMEM (queues in DPA memory name it) and its base address; on an
    /// extended handle, the id the other function names it by.
    pub fn dumem(&self) -> (u32, u64) {
        match &self.ext {
            Some(e) => (e.dumem_alias, self.inner.dumem_base),
            None => (self.inner.dumem_id, self.inner.dumem_base),
        }
    }

    /// The process's PD (FlexIO `flexio_process_get_pd`); on an extended handle, the other
    /// function's PD its queues and keys are made in.
    pub fn pd(&self) -> &Arc<Pd> {
        match &self.ext {
            Some(e) => &e.pd,
            None => &self.inner.pd,
        }
    }

    /// The host UAR page extended to the process (FlexIO `flexio_process_get_uar`); on an
    /// extended handle, the other function's UAR extended to it (`flexio_uar_extend`).
    pub fn uar(&self) -> &Arc<UarPage> {
        match &self.ext {
            Some(e) => &e.uar,
            None => &self.inner.uar,
        }
    }

    /// The DevX context queues of this handle are made on: the process's own, or on an
    /// extended handle the other function's.
    pub fn dev(&self) -> &Arc<dyn Devx> {
        match &self.ext {
            Some(e) => &e.dev,
            None => &self.inner.dev,
        }
    }

    /// A handle on the same process whose queues, keys and UAR are on the function of `dev`,
    /// another function of the same device (FlexIO `flexio_uar_extend` and the aliases
    /// `flexio_cq_create` / `flexio_qp_create` need on another `ibv_context`; see
    /// `dpa::extend`). DPA code rings that function's queues after selecting it
    /// ([`Process::vhca_id`] to `flexio_dev_outbox_config_uar_extension`).
    ///
    /// # Errors
    /// `dev` is the process's own function; a refusal (no such function, no cross-function
    /// access), naming the step.
    pub fn extend(&self, dev: &Arc<dyn Devx>) -> Result<Process, DpaError> {
        let ext = super::extend::Extension::new(
            super::extend::Owner {
                dev: &self.inner.dev,
                id: self.inner.id,
                dumem_id: self.inner.dumem_id,
                vhca_id: self.inner.caps.vhca_id,
                keep: Arc::clone(&self.inner) as Arc<dyn std::any::Any + Send + Sync>,
            },
            dev,
        )?;
        Ok(Process {
            inner: Arc::clone(&self.inner),
            ext: Some(Arc::new(ext)),
        })
    }

    /// Whether this is an extended handle ([`Process::extend`]).
    pub fn is_extended(&self) -> bool {
        self.ext.is_some()
    }

    /// The vhca_id of the function this handle's queues are on (its own for a plain handle).
    pub fn vhca_id(&self) -> u16 {
        match &self.ext {
            Some(e) => e.vhca_id,
            None => self.inner.caps.vhca_id,
        }
    }

    /// The id this handle's function names DPA thread `thread` by: the thread's own id, or
    /// on an extended handle an alias of it (made on first use).
    ///
    /// # Errors
    /// The grant or the alias was refused, naming the step.
    pub fn thread_here(&self, thread: u32) -> Result<u32, DpaError> {
        match &self.ext {
            Some(e) => e.thread(thread),
            None => Ok(thread),
        }
    }

    /// What a queue made through this handle keeps alive besides the process.
    pub(crate) fn extension(&self) -> Option<Arc<dyn std::any::Any + Send + Sync>> {
        self.ext
            .as_ref()
            .map(|e| Arc::clone(e) as Arc<dyn std::any::Any + Send + Sync>)
    }

    /// The DPA's limits as queried at creation.
    pub fn caps(&self) -> &DpaCaps {
        &self.inner.caps
    }

    /// A symbol's DPA address.
    ///
    /// # Errors
    /// [`DpaError::UnknownSymbol`].
    pub fn symbol(&self, name: &str) -> Result<u64, DpaError> {
        self.inner.symbol(name)
    }

    /// FlexIO `flexio_err_status_get`: the process status and error syndrome.
    ///
    /// # Errors
    /// Firmware's refusal.
    pub fn err_status(&self) -> Result<ErrStatus, DpaError> {
        self.inner.err_status()
    }

    /// The coredump of a failed process (FlexIO `flexio_coredump_create`), decoded.
    ///
    /// # Errors
    /// Firmware refuses while the process has not failed; an undecodable image.
    pub fn coredump(&self) -> Result<Coredump, DpaError> {
        Ok(Coredump::parse(&self.coredump_raw()?)?)
    }

    /// The coredump image as firmware returned it (to save, or to decode elsewhere).
    ///
    /// # Errors
    /// As [`Process::coredump`], less the decoding.
    pub fn coredump_raw(&self) -> Result<Vec<u8>, DpaError> {
        Ok(devx::exec(
            self.inner.dev.as_ref(),
            &DpaProcessCoredump {
                dpa_process_id: self.inner.id,
            },
        )?)
    }

    /// Allocates `size` bytes of DPA memory (FlexIO `flexio_buf_dev_alloc`); see
    /// [`super::heap`] for the size classes.
    ///
    /// # Errors
    /// Zero size, or firmware refused a DPA_MEM block (budget exhausted).
    pub fn alloc(&self, size: u64) -> Result<DpaBuf, DpaError> {
        let (daddr, len) = lock(&self.inner.heap).alloc(&self.inner.dev, self.inner.id, size)?;
        Ok(DpaBuf {
            daddr,
            len,
            process: Arc::clone(&self.inner),
        })
    }

    /// DPA_MEM blocks and buffers in use.
    pub fn heap_stats(&self) -> HeapStats {
        lock(&self.inner.heap).stats()
    }

    /// Copies `data` to DPA address `daddr` (FlexIO `flexio_host2dev_memcpy`).
    ///
    /// # Errors
    /// A range outside the process memory, an RDMA error, a timeout.
    pub fn copy_to_dev(&self, daddr: u64, data: &[u8]) -> Result<(), DpaError> {
        let cover = self.inner.cover();
        lock(&self.inner.copier).write(daddr, data, cover)
    }

    /// Copies DPA memory at `daddr` into `out`.
    ///
    /// # Errors
    /// As [`Process::copy_to_dev`].
    pub fn copy_from_dev(&self, daddr: u64, out: &mut [u8]) -> Result<(), DpaError> {
        let cover = self.inner.cover();
        lock(&self.inner.copier).read(daddr, out, cover)
    }

    /// Fills `len` bytes at `daddr` with `byte` (FlexIO `flexio_buf_dev_memset`).
    ///
    /// # Errors
    /// As [`Process::copy_to_dev`].
    pub fn memset(&self, daddr: u64, byte: u8, len: usize) -> Result<(), DpaError> {
        let cover = self.inner.cover();
        lock(&self.inner.copier).fill(daddr, len, byte, cover)
    }
}
