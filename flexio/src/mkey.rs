//! Memory keys over a process's DPA memory (`flexio_device_mkey_create`): what queues in DPA
//! memory put in their WQEs to name DPA buffers.

use std::sync::Arc;

use mlx5_dpa::devx::rdma_core::{IbvPd, RdmaCoreDevx};
use mlx5_dpa::devx::UmemAccess;
use mlx5_dpa::dpa::queues::DpaMkey;

use crate::handle::Table;
use crate::process::{proc, FlexioProcess, Proc};
use crate::{entry, getter, put, Failure, FlexioStatus};

/// `struct flexio_mkey_attr`.
#[repr(C)]
pub struct FlexioMkeyAttr {
    pub pd: *mut IbvPd,
    pub daddr: u64,
    pub len: usize,
    pub access: i32,
}

/// `struct flexio_mkey` (opaque to C).
pub struct FlexioMkey {
    _private: [u8; 0],
}

struct Mkey {
    mkey: DpaMkey,
    _process: Arc<Proc>,
}

static MKEYS: Table<Mkey> = Table::new("flexio_mkey");

/// Creates a key over `len` bytes of the process's DPA memory at `daddr` (FlexIO
/// `flexio_device_mkey_create`). The PD is the process's (`flexio_process_get_pd`; NULL
/// means it too); `access` takes `IBV_ACCESS_LOCAL_WRITE`, `_REMOTE_WRITE`, `_REMOTE_READ`
/// and `_REMOTE_ATOMIC`.
///
/// # Safety
/// `fattr` is NULL or valid, its `pd` NULL or a live `struct ibv_pd *`; `mkey` NULL or
/// writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flexio_device_mkey_create(
    process: *mut FlexioProcess,
    fattr: *mut FlexioMkeyAttr,
    mkey: *mut *mut FlexioMkey,
) -> FlexioStatus {
    entry("flexio_device_mkey_create", || {
        let p = proc(process)?;
        // SAFETY: NULL or valid (the caller's contract).
        let a = unsafe { fattr.as_ref() }.ok_or_else(|| Failure::new("fattr is NULL"))?;
        if mkey.is_null() {
            return Err(Failure::new("mkey is NULL"));
        }
        if !a.pd.is_null() && a.pd != p.ibv_pd() {
            // SAFETY: a live PD (the caller's contract).
            let pdn = unsafe { RdmaCoreDevx::pdn(a.pd) }
                .map_err(|e| Failure::new(format!("the attributes' pd: {e}")))?;
            if pdn != p.process.pd().pdn().0 {
                return Err(Failure::new(format!(
                    "PD {pdn:#x} is not the process's ({:#x})",
                    p.process.pd().pdn().0
                )));
            }
        }
        let access = u32::try_from(a.access)
            .ok()
            .and_then(UmemAccess::from_bits)
            .ok_or_else(|| Failure::new(format!("access {:#x} has unknown bits", a.access)))?;
        let k = DpaMkey::create(&p.process, a.daddr, a.len as u64, access)?;
        let h = MKEYS.insert(Mkey {
            mkey: k,
            _process: p,
        });
        // SAFETY: checked non-NULL; writable.
        unsafe { put(mkey, h, "mkey") }
    })
}

/// Destroys a key; NULL is accepted (FlexIO `flexio_device_mkey_destroy`).
///
/// # Safety
/// `mkey` is any pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flexio_device_mkey_destroy(mkey: *mut FlexioMkey) -> FlexioStatus {
    entry("flexio_device_mkey_destroy", || {
        if mkey.is_null() {
            return Ok(());
        }
        MKEYS.remove(mkey).map(drop)
    })
}

/// The key (what a WQE's data segment carries), `u32::MAX` for a bad handle (FlexIO
/// `flexio_mkey_get_id`).
///
/// # Safety
/// `mkey` is any pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flexio_mkey_get_id(mkey: *mut FlexioMkey) -> u32 {
    getter("flexio_mkey_get_id", u32::MAX, || {
        Ok(MKEYS.get(mkey)?.mkey.lkey().0)
    })
}
