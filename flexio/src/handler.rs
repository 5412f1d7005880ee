//! Event handlers (a DPA thread running a device function on each activation) and outboxes.

use std::sync::Arc;

use mlx5_dpa::dpa::outbox::Outbox;
use mlx5_dpa::dpa::thread::{Affinity, EventHandler, EventHandlerAttr};

use crate::handle::{Slot, Table};
use crate::process::{proc, FlexioProcess, Proc};
use crate::{entry, getter, put, Failure, FlexioStatus, Result};

/// `struct flexio_affinity`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct FlexioAffinity {
    pub type_: u32,
    pub id: u32,
}

pub const FLEXIO_AFFINITY_NONE: u32 = 0;
pub const FLEXIO_AFFINITY_STRICT: u32 = 1;
pub const FLEXIO_AFFINITY_GROUP: u32 = 2;

/// `struct flexio_event_handler_attr`.
#[repr(C)]
pub struct FlexioEventHandlerAttr {
    pub host_stub_func: *const std::ffi::c_void,
    pub continuable: i32,
    pub arg: u64,
    pub thread_local_storage_daddr: u64,
    pub affinity: FlexioAffinity,
}

/// `struct flexio_event_handler` (opaque to C).
pub struct FlexioEventHandler {
    _private: [u8; 0],
}

/// `struct flexio_outbox_attr`.
#[repr(C)]
pub struct FlexioOutboxAttr {
    pub uar: *mut std::ffi::c_void,
    pub en_pcc: u32,
}

/// `struct flexio_outbox` (opaque to C).
pub struct FlexioOutbox {
    _private: [u8; 0],
}

/// A handler with its process (kept alive while the handler lives).
pub(crate) struct Handler {
    handler: Slot<EventHandler>,
    id: u32,
    _process: Arc<Proc>,
}

static HANDLERS: Table<Handler> = Table::new("flexio_event_handler");

struct OutboxObj {
    outbox: Slot<Outbox>,
    id: u32,
    process: Arc<Proc>,
}

static OUTBOXES: Table<OutboxObj> = Table::new("flexio_outbox");

fn affinity(a: FlexioAffinity) -> Result<Affinity> {
    let id = || {
        u16::try_from(a.id).map_err(|_| Failure::new(format!("affinity id {} is too large", a.id)))
    };
    match a.type_ {
        FLEXIO_AFFINITY_NONE => Ok(Affinity::None),
        FLEXIO_AFFINITY_STRICT => Ok(Affinity::Strict(id()?)),
        FLEXIO_AFFINITY_GROUP => Ok(Affinity::Group(id()?)),
        t => Err(Failure::new(format!("affinity type {t} is unknown"))),
    }
}

/// Creates an event handler running the registered function `host_stub_func` (FlexIO
/// `flexio_event_handler_create`).
///
/// # Safety
/// `fattr` is NULL or valid; `event_handler_ptr` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flexio_event_handler_create(
    process: *mut FlexioProcess,
    fattr: *mut FlexioEventHandlerAttr,
    event_handler_ptr: *mut *mut FlexioEventHandler,
) -> FlexioStatus {
    entry("flexio_event_handler_create", || {
        let p = proc(process)?;
        // SAFETY: NULL or valid (the caller's contract).
        let a = unsafe { fattr.as_ref() }.ok_or_else(|| Failure::new("fattr is NULL"))?;
        if event_handler_ptr.is_null() {
            return Err(Failure::new("event_handler_ptr is NULL"));
        }
        let f = p.app.func(a.host_stub_func)?;
        let attr = EventHandlerAttr {
            entry: f.name,
            arg: a.arg,
            thread_local_storage_daddr: a.thread_local_storage_daddr,
            affinity: affinity(a.affinity)?,
            continuable: a.continuable != 0,
            // As FlexIO's threads, each starts with the process's default outbox.
            default_outbox_id: p.default_outbox.id(),
            ..EventHandlerAttr::default()
        };
        let h = p.process.event_handler(&attr)?;
        let id = h.id();
        let handle = HANDLERS.insert(Handler {
            handler: Slot::new("event handler", h),
            id,
            _process: p,
        });
        // SAFETY: checked non-NULL; writable.
        unsafe { put(event_handler_ptr, handle, "event_handler_ptr") }
    })
}

/// Destroys an event handler (FlexIO `flexio_event_handler_destroy`).
///
/// # Safety
/// `event_handler` is any pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flexio_event_handler_destroy(
    event_handler: *mut FlexioEventHandler,
) -> FlexioStatus {
    entry("flexio_event_handler_destroy", || {
        match HANDLERS.remove(event_handler)?.handler.take() {
            Some(t) => Ok(t.destroy()?),
            None => Ok(()),
        }
    })
}

/// Runs the handler once with `user_arg` (FlexIO `flexio_event_handler_run`).
///
/// # Safety
/// `event_handler` is any pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flexio_event_handler_run(
    event_handler: *mut FlexioEventHandler,
    user_arg: u64,
) -> FlexioStatus {
    entry("flexio_event_handler_run", || {
        HANDLERS
            .get(event_handler)?
            .handler
            .with(|t| Ok(t.run(user_arg)?))
    })
}

/// The DPA_THREAD object id of the handler's thread, what a CQ names, `u32::MAX` for a bad
/// handle (FlexIO `flexio_event_handler_get_obj_id`).
///
/// # Safety
/// `event_handler` is any pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flexio_event_handler_get_obj_id(
    event_handler: *mut FlexioEventHandler,
) -> u32 {
    getter("flexio_event_handler_get_obj_id", u32::MAX, || {
        Ok(HANDLERS.get(event_handler)?.id)
    })
}

/// The id in the handler's thread metadata, what device code reads with
/// `flexio_dev_get_thread_id`; `u32::MAX` for a bad handle (FlexIO
/// `flexio_event_handler_get_id`). The model's thread metadata holds the DPA_THREAD object id
/// (fw-blobs/include/libflexio-dev/flexio_dev.h), so this is the same number as
/// [`flexio_event_handler_get_obj_id`]'s.
///
/// # Safety
/// `event_handler` is any pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flexio_event_handler_get_id(
    event_handler: *mut FlexioEventHandler,
) -> u32 {
    getter("flexio_event_handler_get_id", u32::MAX, || {
        Ok(HANDLERS.get(event_handler)?.id)
    })
}

/// `struct flexio_thread` (opaque to C): an event handler's thread, named by the handler's
/// own handle.
pub struct FlexioThread {
    _private: [u8; 0],
}

/// The event handler's thread, for a CQ that activates it; NULL for a bad handle (FlexIO
/// `flexio_event_handler_get_thread`).
///
/// # Safety
/// `event_handler` is any pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flexio_event_handler_get_thread(
    event_handler: *mut FlexioEventHandler,
) -> *mut FlexioThread {
    getter(
        "flexio_event_handler_get_thread",
        std::ptr::null_mut(),
        || {
            HANDLERS.get(event_handler)?;
            Ok(event_handler.cast())
        },
    )
}

/// The DPA_THREAD object id of `thread` (from `flexio_event_handler_get_thread`).
pub(crate) fn handler_thread_id(thread: *mut std::ffi::c_void) -> Result<u32> {
    Ok(HANDLERS
        .get(thread.cast::<FlexioEventHandler>())
        .map_err(|_| Failure::new(format!("{thread:p} is no event handler's thread")))?
        .id)
}

/// Creates an outbox of the process over the process's UAR (FlexIO `flexio_outbox_create`;
/// the attribute's `uar` is not used, as FlexIO documents; PCC outboxes are not supported).
///
/// # Safety
/// `fattr` is NULL or valid; `outbox` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flexio_outbox_create(
    process: *mut FlexioProcess,
    fattr: *mut FlexioOutboxAttr,
    outbox: *mut *mut FlexioOutbox,
) -> FlexioStatus {
    entry("flexio_outbox_create", || {
        let p = proc(process)?;
        // SAFETY: NULL or valid (the caller's contract).
        if let Some(a) = unsafe { fattr.as_ref() } {
            if a.en_pcc != 0 {
                return Err(Failure::new("PCC outboxes (en_pcc) are not supported"));
            }
        }
        if outbox.is_null() {
            return Err(Failure::new("outbox is NULL"));
        }
        let o = p.process.outbox(p.process.uar())?;
        let id = o.id();
        let h = OUTBOXES.insert(OutboxObj {
            outbox: Slot::new("outbox", o),
            id,
            process: p,
        });
        // SAFETY: checked non-NULL; writable.
        unsafe { put(outbox, h, "outbox") }
    })
}

/// The UAR the outbox rings through: its process's (FlexIO `flexio_outbox_get_uar`; FlexIO
/// 24.01 ignores the attributes' `uar` and uses the process's, as here). NULL for a bad handle.
///
/// # Safety
/// `outbox` is any pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flexio_outbox_get_uar(outbox: *mut FlexioOutbox) -> *mut crate::FlexioUar {
    getter("flexio_outbox_get_uar", std::ptr::null_mut(), || {
        let o = OUTBOXES.get(outbox)?;
        Ok(crate::process::process_uar(&o.process))
    })
}

/// Destroys an outbox (FlexIO `flexio_outbox_destroy`).
///
/// # Safety
/// `outbox` is any pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flexio_outbox_destroy(outbox: *mut FlexioOutbox) -> FlexioStatus {
    entry("flexio_outbox_destroy", || {
        match OUTBOXES.remove(outbox)?.outbox.take() {
            Some(t) => Ok(t.destroy()?),
            None => Ok(()),
        }
    })
}

/// The outbox's DPA_OUTBOX object id, `u32::MAX` for a bad handle (FlexIO
/// `flexio_outbox_get_id`).
///
/// # Safety
/// `outbox` is any pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flexio_outbox_get_id(outbox: *mut FlexioOutbox) -> u32 {
    getter("flexio_outbox_get_id", u32::MAX, || {
        Ok(OUTBOXES.get(outbox)?.id)
    })
}
