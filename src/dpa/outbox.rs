//! DPA outboxes (FlexIO `flexio_outbox_create` / `flexio_outbox_destroy`): the page through
//! which a device program rings doorbells.
//!
//! An [`Outbox`] is one DPA_OUTBOX general object (provisional context, `layouts::dpa`) naming
//! a process and a UAR page. It is made by [`Process::outbox`](super::Process::outbox)
//! (FlexIO `flexio_outbox_create(process, uar, &outbox)`) and destroyed when dropped.
//!
//! A device program selects it with `flexio_dev_outbox_config(dtctx, outbox_id)` (or gets it
//! as its event handler's default outbox,
//! [`EventHandlerAttr::default_outbox_id`](super::thread::EventHandlerAttr)) and stores
//! doorbells (CQ arm, EQ update, SQ / QP send) into the page. The device honours a doorbell
//! only for a queue of the same user context whose UAR is the outbox's UAR; any other is
//! dropped (the process is not failed). So queues the DPA rings are created on the outbox's
//! UAR, usually the process's own ([`Process::uar`](super::Process::uar), FlexIO
//! `flexio_process_get_uar`).
//!
//! # Order of destruction
//!
//! An event handler names its default outbox by id only
//! ([`EventHandlerAttr::default_outbox_id`](super::thread::EventHandlerAttr)), so it does
//! not keep the outbox alive. Firmware refuses to destroy an outbox a thread still names;
//! [`Outbox::destroy`] reports that, and either way the process keeps the refused outbox and
//! destroys it once the last such thread is gone (at the latest with the process).

use std::sync::Arc;

use crate::devx::{self, DevxObj};
use crate::mlx5::cmd::{CreateGeneralObject, DpaOutboxAttr};
use crate::uar::UarPage;

use super::process::ProcessInner;
use super::DpaError;

/// A DPA outbox (FlexIO `struct flexio_outbox`); destroyed when dropped, before the UAR page and
/// the process, which it keeps alive.
#[derive(Debug)]
pub struct Outbox {
    // Fields drop in declaration order: the object, then the UAR page, then the process.
    obj: DevxObj,
    id: u32,
    uar: Arc<UarPage>,
    process: Arc<ProcessInner>,
}

impl Outbox {
    /// CREATE_GENERAL_OBJECT(DPA_OUTBOX) for `process` over `uar`.
    pub(crate) fn create(
        process: &Arc<ProcessInner>,
        uar: &Arc<UarPage>,
    ) -> Result<Outbox, DpaError> {
        let (obj, id) = devx::create(
            &process.dev,
            &CreateGeneralObject(DpaOutboxAttr {
                dpa_process_id: process.id,
                uar: uar.page_id(),
            }),
        )?;
        Ok(Outbox {
            obj,
            id,
            uar: Arc::clone(uar),
            process: Arc::clone(process),
        })
    }

    /// The DPA_OUTBOX object id (FlexIO `flexio_outbox_get_id`): what a device program selects
    /// with `flexio_dev_outbox_config`, and what an event handler names as its default outbox.
    pub fn id(&self) -> u32 {
        self.id
    }

    /// The UAR page whose queues this outbox may ring.
    pub fn uar(&self) -> &Arc<UarPage> {
        &self.uar
    }

    /// The DPA_PROCESS the outbox belongs to.
    pub fn process_id(&self) -> u32 {
        self.process.id
    }

    /// Destroys the outbox now, reporting a refusal. After a refusal (a thread still names it
    /// as its default outbox) the outbox is destroyed later, as on drop.
    ///
    /// # Errors
    /// Firmware's refusal.
    pub fn destroy(mut self) -> Result<(), DpaError> {
        Ok(self.obj.try_destroy()?)
    }
}

impl Drop for Outbox {
    /// Destroys the outbox; if firmware refuses because a thread still names it, the process
    /// keeps it (with its UAR page) and destroys it once the thread is gone.
    fn drop(&mut self) {
        if self.obj.try_destroy().is_err() {
            let obj = std::mem::replace(&mut self.obj, DevxObj::gone(&self.process.dev));
            self.process.defer(obj, Box::new(Arc::clone(&self.uar)));
        }
    }
}

impl super::Process {
    /// Creates an outbox of this process over `uar` (FlexIO
    /// `flexio_outbox_create(process, uar, &outbox)`); it rings only queues on that UAR.
    /// Usually `uar` is [`Process::uar`](super::Process::uar) (FlexIO
    /// `flexio_process_get_uar`).
    ///
    /// # Errors
    /// Firmware's refusal (outbox limit, a UAR of another user context).
    pub fn outbox(&self, uar: &Arc<UarPage>) -> Result<Outbox, DpaError> {
        Outbox::create(self.inner(), uar)
    }
}
