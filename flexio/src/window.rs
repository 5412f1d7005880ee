//! Windows (`flexio_window_create`): the DPA's view of host memory, over a PD whose keys the
//! window accepts. The device selects one with `flexio_dev_window_config` and the id
//! `flexio_window_get_id` gives.

use std::sync::Arc;

use mlx5_dpa::devx::rdma_core::{IbvPd, RdmaCoreDevx};
use mlx5_dpa::dpa::window::Window;
use mlx5_dpa::mem::Pd;

use crate::handle::{Slot, Table};
use crate::process::{proc, FlexioProcess, Proc};
use crate::{entry, getter, put, Failure, FlexioStatus};

/// `struct flexio_window` (opaque to C).
pub struct FlexioWindow {
    _private: [u8; 0],
}

struct Win {
    window: Slot<Window>,
    id: u32,
    _process: Arc<Proc>,
}

static WINDOWS: Table<Win> = Table::new("flexio_window");

/// Creates a window of `process` over `pd` (FlexIO `flexio_window_create`): host memory
/// registered on `pd` (`ibv_reg_mr`) is what device code reaches through it. `pd` is the
/// caller's, on the process's device, and must outlive the window.
///
/// # Safety
/// `pd` is NULL or a live `struct ibv_pd *`; `window` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flexio_window_create(
    process: *mut FlexioProcess,
    pd: *mut IbvPd,
    window: *mut *mut FlexioWindow,
) -> FlexioStatus {
    entry("flexio_window_create", || {
        let p = proc(process)?;
        if pd.is_null() {
            return Err(Failure::new("pd is NULL"));
        }
        if window.is_null() {
            return Err(Failure::new("window is NULL"));
        }
        // SAFETY: a live PD (the caller's contract).
        let pdn = unsafe { RdmaCoreDevx::pdn(pd) }.map_err(|e| Failure::new(format!("pd: {e}")))?;
        // The caller owns the PD; the window names it by number and never frees it.
        let w = p.process.window(&Pd::import(pdn))?;
        let id = w.id();
        let h = WINDOWS.insert(Win {
            window: Slot::new("window", w),
            id,
            _process: p,
        });
        // SAFETY: checked non-NULL; writable.
        unsafe { put(window, h, "window") }
    })
}

/// Destroys a window; NULL is accepted (FlexIO `flexio_window_destroy`). A window a thread
/// still names is kept by its process until the thread is gone (docs/flexio-c.md).
///
/// # Safety
/// `window` is any pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flexio_window_destroy(window: *mut FlexioWindow) -> FlexioStatus {
    entry("flexio_window_destroy", || {
        if window.is_null() {
            return Ok(());
        }
        match WINDOWS.remove(window)?.window.take() {
            Some(w) => Ok(w.destroy()?),
            None => Ok(()),
        }
    })
}

/// The window's id, what device code passes to `flexio_dev_window_config`; `u32::MAX` for a
/// bad handle (FlexIO `flexio_window_get_id`).
///
/// # Safety
/// `window` is any pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flexio_window_get_id(window: *mut FlexioWindow) -> u32 {
    getter("flexio_window_get_id", u32::MAX, || {
        Ok(WINDOWS.get(window)?.id)
    })
}
