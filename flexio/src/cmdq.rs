//! Command queues (`flexio_cmdq_create`): tasks the DPA runs in the background on worker
//! threads of the process, each a registered function called with one 64-bit argument.

use std::sync::Arc;

use mlx5_dpa::dpa::cmdq::{CmdQueue, CmdqAttr, CmdqState};

use crate::handle::{Slot, Table};
use crate::process::{proc, FlexioProcess, Proc};
use crate::{entry, getter, put, Failure, FlexioStatus};

/// `enum flexio_cmdq_state`: created pending (tasks wait for `flexio_cmdq_state_running`).
pub const FLEXIO_CMDQ_STATE_PENDING: i32 = 0;
/// Created running.
pub const FLEXIO_CMDQ_STATE_RUNNING: i32 = 1;

/// `struct flexio_cmdq_attr`.
#[repr(C)]
pub struct FlexioCmdqAttr {
    pub workers: i32,
    pub batch_size: i32,
    pub state: i32,
}

/// `struct flexio_cmdq` (opaque to C).
pub struct FlexioCmdq {
    _private: [u8; 0],
}

struct Cmdq {
    queue: Slot<CmdQueue>,
    process: Arc<Proc>,
}

static CMDQS: Table<Cmdq> = Table::new("flexio_cmdq");

/// Creates a command queue on `process` (FlexIO `flexio_cmdq_create`): `workers` threads,
/// each running up to `batch_size` tasks per activation, pending or running.
///
/// # Safety
/// `fattr` is NULL or valid; `cmdq` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flexio_cmdq_create(
    process: *mut FlexioProcess,
    fattr: *mut FlexioCmdqAttr,
    cmdq: *mut *mut FlexioCmdq,
) -> FlexioStatus {
    entry("flexio_cmdq_create", || {
        let p = proc(process)?;
        // SAFETY: NULL or valid (the caller's contract).
        let a = unsafe { fattr.as_ref() }.ok_or_else(|| Failure::new("fattr is NULL"))?;
        if cmdq.is_null() {
            return Err(Failure::new("cmdq is NULL"));
        }
        let count = |v: i32, what: &str| {
            u32::try_from(v)
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| Failure::new(format!("{what} {v} is not a positive count")))
        };
        let state = match a.state {
            FLEXIO_CMDQ_STATE_PENDING => CmdqState::Pending,
            FLEXIO_CMDQ_STATE_RUNNING => CmdqState::Running,
            s => return Err(Failure::new(format!("state {s} is unknown"))),
        };
        let attr = CmdqAttr::new(
            count(a.workers, "workers")?,
            count(a.batch_size, "batch_size")?,
            state,
        );
        let q = p.process.cmdq(&attr)?;
        let h = CMDQS.insert(Cmdq {
            queue: Slot::new("command queue", q),
            process: p,
        });
        // SAFETY: checked non-NULL; writable.
        unsafe { put(cmdq, h, "cmdq") }
    })
}

/// Adds a task: the function registered for `host_func`, called with `arg` on a worker
/// (FlexIO `flexio_cmdq_task_add`). FAILED when the queue is full.
///
/// # Safety
/// `cmdq` and `host_func` are any pointers.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flexio_cmdq_task_add(
    cmdq: *mut FlexioCmdq,
    host_func: *const std::ffi::c_void,
    arg: u64,
) -> FlexioStatus {
    entry("flexio_cmdq_task_add", || {
        let q = CMDQS.get(cmdq)?;
        let f = q.process.app.func(host_func)?;
        q.queue.with(|c| Ok(c.task_add(&f.name, arg)?))
    })
}

/// Moves a pending queue to running, which starts its tasks (FlexIO
/// `flexio_cmdq_state_running`).
///
/// # Safety
/// `cmdq` is any pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flexio_cmdq_state_running(cmdq: *mut FlexioCmdq) -> FlexioStatus {
    entry("flexio_cmdq_state_running", || {
        CMDQS.get(cmdq)?.queue.with(|c| Ok(c.state_running()?))
    })
}

/// Whether every task added so far has run (FlexIO `flexio_cmdq_is_empty`): 1 or 0, and 0
/// for a bad handle or a failed process.
///
/// # Safety
/// `cmdq` is any pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flexio_cmdq_is_empty(cmdq: *mut FlexioCmdq) -> i32 {
    getter("flexio_cmdq_is_empty", 0, || {
        let empty = CMDQS.get(cmdq)?.queue.with(|c| Ok(c.is_empty()?))?;
        Ok(i32::from(empty))
    })
}

/// Destroys a command queue, its workers first; NULL is accepted (FlexIO
/// `flexio_cmdq_destroy`).
///
/// # Safety
/// `cmdq` is any pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flexio_cmdq_destroy(cmdq: *mut FlexioCmdq) -> FlexioStatus {
    entry("flexio_cmdq_destroy", || {
        if cmdq.is_null() {
            return Ok(());
        }
        drop(CMDQS.remove(cmdq)?.queue.take());
        Ok(())
    })
}
