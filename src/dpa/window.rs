//! DPA windows (FlexIO `flexio_window_create` / `flexio_window_destroy`): the DPA's view of
//! host memory.
//!
//! A [`Window`] is one DPA_WINDOW general object (provisional context, `layouts::dpa`) naming
//! a process and a PD. It is made by [`Process::window`](super::Process::window)
//! (FlexIO `flexio_window_create(process, pd, &window)`) and destroyed when dropped.
//!
//! # Who owns which memory
//!
//! The window itself maps nothing. The host memory a device program reaches through it is
//! registered by the user, on the window's PD, as a [`MemoryRegion`](crate::mem::MemoryRegion)
//! or an [`Mkey`]; the host owns that memory and must keep its key alive while the DPA may
//! use it. [`Window::host_buf`] checks a range of such a key and gives the triple the device
//! program needs ([`WindowBuf`]: window id, key, host address); the program passes them to
//! `flexio_dev_window_config(dtctx, window_id, mkey)` and
//! `flexio_dev_window_ptr_acquire(dtctx, haddr, &daddr)` and then loads and stores at `daddr`.
//!
//! The device checks the key when the program first touches the aperture: a key of another PD
//! (or of another user context) is a fault of the process (see
//! [`Process::err_status`](super::Process::err_status)), not an error of any host call. The
//! host cannot check the key's PD here: an [`Mkey`] does not expose it.
//!
//! FlexIO requires host buffers reached through a window to start on a
//! [`WINDOW_BUF_ALIGN`]-byte boundary; [`Window::host_buf`] refuses others.
//!
//! # Order of destruction
//!
//! An event handler names its default window by id only
//! ([`EventHandlerAttr::default_window_id`](super::thread::EventHandlerAttr)), so it does
//! not keep the window alive. Firmware refuses to destroy a window a thread still names;
//! [`Window::destroy`] reports that, and either way the process keeps the refused window (and
//! its PD) and destroys it once the last such thread is gone (at the latest with the process).

use std::sync::Arc;

use crate::devx::{self, DevxObj};
use crate::mem::{Lkey, Mkey, Pd};
use crate::mlx5::cmd::{CreateGeneralObject, DpaWindowAttr};

use super::process::ProcessInner;
use super::DpaError;

/// Alignment FlexIO requires of a host buffer reached through a window (bytes).
pub const WINDOW_BUF_ALIGN: u64 = 64;

/// A DPA window (FlexIO `struct flexio_window`); destroyed when dropped, before the PD and the
/// process, which it keeps alive.
#[derive(Debug)]
pub struct Window {
    // Fields drop in declaration order: the object, then the PD, then the process.
    obj: DevxObj,
    id: u32,
    pd: Arc<Pd>,
    process: Arc<ProcessInner>,
}

/// What a device program needs to reach a host buffer through a window (FlexIO: the window id
/// from `flexio_window_get_id`, the key from `ibv_reg_mr` and the buffer's address, passed to
/// the device in an argument block).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowBuf {
    /// The DPA_WINDOW id (`flexio_dev_window_config`'s `window_id`).
    pub window_id: u32,
    /// The key of the host memory (`flexio_dev_window_config`'s `mkey`).
    pub mkey: Lkey,
    /// Host address of the first byte, in the key's address space
    /// (`flexio_dev_window_ptr_acquire`'s `haddr`); a multiple of [`WINDOW_BUF_ALIGN`].
    pub haddr: u64,
    /// Bytes the program may touch from `haddr`.
    pub len: u64,
}

impl Window {
    /// CREATE_GENERAL_OBJECT(DPA_WINDOW) for `process` over `pd`.
    pub(crate) fn create(process: &Arc<ProcessInner>, pd: &Arc<Pd>) -> Result<Window, DpaError> {
        let (obj, id) = devx::create(
            &process.dev,
            &CreateGeneralObject(DpaWindowAttr {
                dpa_process_id: process.id,
                pd: pd.pdn(),
            }),
        )?;
        Ok(Window {
            obj,
            id,
            pd: Arc::clone(pd),
            process: Arc::clone(process),
        })
    }

    /// The DPA_WINDOW object id (FlexIO `flexio_window_get_id`): what a device program selects
    /// with `flexio_dev_window_config`, and what an event handler names as its default window
    /// ([`EventHandlerAttr::default_window_id`](super::thread::EventHandlerAttr)).
    pub fn id(&self) -> u32 {
        self.id
    }

    /// The PD whose keys the window accepts.
    pub fn pd(&self) -> &Arc<Pd> {
        &self.pd
    }

    /// The DPA_PROCESS the window belongs to.
    pub fn process_id(&self) -> u32 {
        self.process.id
    }

    /// Checks `len` bytes at `offset` of the memory `mkey` translates and returns what the
    /// device program needs to reach them through this window.
    ///
    /// `mkey` must be a key of this window's PD (see the module documentation: the device,
    /// not this call, enforces that).
    ///
    /// # Errors
    /// [`DpaError::BadArgs`] when `len` is 0, the range leaves the key's memory, or its first
    /// byte is not [`WINDOW_BUF_ALIGN`]-aligned.
    pub fn host_buf(&self, mkey: &Mkey, offset: usize, len: usize) -> Result<WindowBuf, DpaError> {
        let umem = mkey.umem();
        if len == 0 {
            return Err(DpaError::BadArgs("empty window buffer".into()));
        }
        let end = offset.checked_add(len).filter(|&e| e <= umem.len());
        if end.is_none() {
            return Err(DpaError::BadArgs(format!(
                "window buffer {offset:#x}+{len:#x} leaves the key's {:#x} bytes",
                umem.len()
            )));
        }
        let haddr = umem.addr() + offset as u64;
        if !haddr.is_multiple_of(WINDOW_BUF_ALIGN) {
            return Err(DpaError::BadArgs(format!(
                "window buffer at host address {haddr:#x} is not {WINDOW_BUF_ALIGN}-byte aligned"
            )));
        }
        Ok(WindowBuf {
            window_id: self.id,
            mkey: mkey.lkey(),
            haddr,
            len: len as u64,
        })
    }

    /// Destroys the window now, reporting a refusal. After a refusal (a thread still names it
    /// as its default window) the window is destroyed later, as on drop.
    ///
    /// # Errors
    /// Firmware's refusal.
    pub fn destroy(mut self) -> Result<(), DpaError> {
        Ok(self.obj.try_destroy()?)
    }
}

impl Drop for Window {
    /// Destroys the window; if firmware refuses because a thread still names it, the process
    /// keeps it (with its PD) and destroys it once the thread is gone.
    fn drop(&mut self) {
        if self.obj.try_destroy().is_err() {
            let obj = std::mem::replace(&mut self.obj, DevxObj::gone(&self.process.dev));
            self.process.defer(obj, Box::new(Arc::clone(&self.pd)));
        }
    }
}

impl super::Process {
    /// Creates a window of this process over `pd` (FlexIO
    /// `flexio_window_create(process, pd, &window)`); host memory the DPA reaches through it is
    /// registered on the same PD. Usually `pd` is [`Process::pd`](super::Process::pd) (FlexIO
    /// `flexio_process_get_pd`).
    ///
    /// # Errors
    /// Firmware's refusal (window limit, a PD of another user context).
    pub fn window(&self, pd: &Arc<Pd>) -> Result<Window, DpaError> {
        Window::create(self.inner(), pd)
    }
}
