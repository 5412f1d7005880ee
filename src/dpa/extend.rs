//! A DPA process extended to another function of its device (a BlueField's SF): queues and keys
//! of that function in the process's memory, completion queues of that function waking the
//! process's threads, and doorbells the process's threads ring on that function's queues.
//!
//! FlexIO does this with `flexio_uar_extend` (a UAR of the other function extended to the
//! process) and, for queues created on another `ibv_context`, aliases of the process's objects
//! on that function. The mechanism, as snap-rdma's `snap_cross_gvmi.c` shows it: the process's
//! function grants access to an object (ALLOW_OTHER_VHCA_ACCESS, with an access key); the other
//! function creates an alias of it (CREATE_GENERAL_OBJECT with `alias_object`, naming the
//! owner's vhca_id, the object and the key) and names the object by the alias's id:
//!
//! | object | alias type | what the other function uses it for |
//! |---|---|---|
//! | the process's memory (its DUMEM) | `DPA_DUMEM` (0xff13) | `umem_id` of rings and keys in DPA memory |
//! | a DPA thread | `DPA_THREAD`, `alias_object` set | the CQ element a CQ activates |
//! | the process | `DPA_PROCESS`, `alias_object` set | the process a DPA_UAR of that function extends (provisional: how FlexIO names the process there is not public) |
//!
//! DPA code acts on the other function through its outbox once it selected that function
//! (OUTBOX_SET_GVMI with the function's vhca_id: `flexio_dev_outbox_config_uar_extension`,
//! DOCA's `doca_dpa_dev_device_set`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::devx::{self, Devx, DevxObj, UarKind};
use crate::mem::Pd;
use crate::mlx5::cmd::{AllowOtherVhcaAccess, CreateAlias, CreateGeneralObject, DpaUarAttr};
use crate::mlx5::layouts::dpa::obj_type;
use crate::mlx5::layouts::vhca::alias_type;
use crate::sync::lock;
use crate::uar::UarPage;

use super::{DpaError, StepExt};

/// What a process needs on another function (see the module documentation). Dropped when the
/// last extended handle, and every queue made through one, is gone: the aliases first, then
/// the function's UAR and PD.
pub(crate) struct Extension {
    // Fields drop in declaration order.
    thread_aliases: Mutex<HashMap<u32, (DevxObj, u32)>>,
    _dpa_uar: DevxObj,
    _process_alias: DevxObj,
    _dumem_alias: DevxObj,
    pub(crate) dumem_alias: u32,
    pub(crate) uar: Arc<UarPage>,
    pub(crate) pd: Arc<Pd>,
    pub(crate) dev: Arc<dyn Devx>,
    pub(crate) vhca_id: u16,
    /// The process's own function.
    owner_vhca: u16,
    key: [u8; 32],
    /// The process's own DevX context (it grants the thread aliases).
    owner_dev: Arc<dyn Devx>,
    /// Keeps the process alive.
    _process: Arc<dyn std::any::Any + Send + Sync>,
}

/// The process an extension is made for.
pub(crate) struct Owner<'a> {
    pub(crate) dev: &'a Arc<dyn Devx>,
    pub(crate) id: u32,
    pub(crate) dumem_id: u32,
    pub(crate) vhca_id: u16,
    pub(crate) keep: Arc<dyn std::any::Any + Send + Sync>,
}

impl std::fmt::Debug for Extension {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Extension")
            .field("vhca_id", &self.vhca_id)
            .field("dumem_alias", &self.dumem_alias)
            .finish_non_exhaustive()
    }
}

/// The vhca_id of the function `dev` was opened on (QUERY_HCA_CAP, general page).
pub(crate) fn vhca_id(dev: &dyn Devx) -> Result<u16, DpaError> {
    let page = devx::exec(dev, &crate::mlx5::caps::Caps::QUERIES[0])?;
    let v = crate::mlx5::View::<crate::mlx5::layouts::cmd_hca_cap::Layout>::new(&page)
        .map_err(|e| DpaError::Device(format!("QUERY_HCA_CAP answer: {e}")))?;
    Ok(v.value(crate::mlx5::layouts::cmd_hca_cap::vhca_id))
}

/// A fresh access key (grants are per object; the key only has to be unguessable by other
/// users of the device).
fn access_key() -> [u8; 32] {
    use std::hash::{BuildHasher, Hasher};
    let mut key = [0u8; 32];
    for (i, chunk) in key.chunks_exact_mut(8).enumerate() {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_usize(i);
        h.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos()),
        );
        chunk.copy_from_slice(&h.finish().to_le_bytes());
    }
    key
}

impl Extension {
    /// Extends `process` to the function of `dev`.
    pub(crate) fn new(process: Owner<'_>, dev: &Arc<dyn Devx>) -> Result<Extension, DpaError> {
        let owner_vhca = process.vhca_id;
        let vhca = vhca_id(dev.as_ref()).step("querying the other function's vhca_id")?;
        if vhca == owner_vhca {
            return Err(DpaError::BadArgs(format!(
                "the process is already on function {vhca:#x}"
            )));
        }
        let key = access_key();
        const GRANT: &str = "granting the other function access to the process";
        let allow = |object_type, object_id| {
            devx::exec(
                process.dev.as_ref(),
                &AllowOtherVhcaAccess {
                    object_type,
                    object_id,
                    access_key: key,
                },
            )
        };
        allow(alias_type::DPA_DUMEM, process.dumem_id).step(GRANT)?;
        allow(obj_type::DPA_PROCESS, process.id).step(GRANT)?;
        let alias = |obj_type, object_id| {
            devx::create(
                dev,
                &CreateAlias {
                    obj_type,
                    vhca_id: owner_vhca,
                    object_id,
                    access_key: key,
                },
            )
        };
        const ALIAS: &str = "aliasing the process on the other function";
        let (dumem_obj, dumem_alias) =
            alias(alias_type::DPA_DUMEM, process.dumem_id).step(ALIAS)?;
        let (process_alias, process_alias_id) =
            alias(obj_type::DPA_PROCESS, process.id).step(ALIAS)?;
        const UAR: &str = "extending a UAR of the other function to the process";
        let pd = Pd::alloc(dev).step("allocating the other function's PD")?;
        let uar = UarPage::alloc(dev, UarKind::NonCached).step(UAR)?;
        let (dpa_uar, _) = devx::create(
            dev,
            &CreateGeneralObject(DpaUarAttr {
                dpa_process_id: process_alias_id,
                uar_page: uar.page_id(),
            }),
        )
        .step(UAR)?;
        Ok(Extension {
            thread_aliases: Mutex::new(HashMap::new()),
            _dpa_uar: dpa_uar,
            _process_alias: process_alias,
            _dumem_alias: dumem_obj,
            dumem_alias,
            uar,
            pd,
            dev: Arc::clone(dev),
            vhca_id: vhca,
            owner_vhca,
            key,
            owner_dev: Arc::clone(process.dev),
            _process: process.keep,
        })
    }

    /// The id this function names DPA thread `thread` by (an alias, made on first use).
    pub(crate) fn thread(&self, thread: u32) -> Result<u32, DpaError> {
        let mut aliases = lock(&self.thread_aliases);
        if let Some((_, id)) = aliases.get(&thread) {
            return Ok(*id);
        }
        const T: &str = "aliasing the DPA thread on the other function";
        devx::exec(
            self.owner_dev.as_ref(),
            &AllowOtherVhcaAccess {
                object_type: obj_type::DPA_THREAD,
                object_id: thread,
                access_key: self.key,
            },
        )
        .step(T)?;
        let (obj, id) = devx::create(
            &self.dev,
            &CreateAlias {
                obj_type: obj_type::DPA_THREAD,
                vhca_id: self.owner_vhca,
                object_id: thread,
                access_key: self.key,
            },
        )
        .step(T)?;
        aliases.insert(thread, (obj, id));
        Ok(id)
    }
}
