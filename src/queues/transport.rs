//! The transport objects Ethernet queues are made in: the transport domain, and the TIS an
//! Ethernet SQ sends through. (Receive steering, TIRs and flow rules, is `steering`, which
//! re-exports these.)

use std::sync::Arc;

use super::QueueError;
use crate::devx::{self, Devx, DevxObj};
use crate::mem::Pd;
use crate::mlx5::cmd::{AllocTransportDomain, CreateTis};

/// A transport domain (groups TISs and TIRs for loopback decisions).
#[derive(Debug)]
pub struct TransportDomain {
    _obj: DevxObj,
    tdn: u32,
}

impl TransportDomain {
    /// ALLOC_TRANSPORT_DOMAIN.
    ///
    /// # Errors
    /// Firmware refused.
    pub fn alloc(dev: &Arc<dyn Devx>) -> Result<Arc<TransportDomain>, QueueError> {
        let (obj, tdn) = devx::create(dev, &AllocTransportDomain)?;
        Ok(Arc::new(TransportDomain { _obj: obj, tdn }))
    }
    /// The transport domain number.
    pub fn tdn(&self) -> u32 {
        self.tdn
    }
}

/// A transport interface send object.
#[derive(Debug)]
pub struct Tis {
    _obj: DevxObj,
    tisn: u32,
    _td: Arc<TransportDomain>,
    _pd: Arc<Pd>,
}

impl Tis {
    /// CREATE_TIS in `td`.
    ///
    /// # Errors
    /// Firmware refused.
    pub fn create(
        dev: &Arc<dyn Devx>,
        td: &Arc<TransportDomain>,
        pd: &Arc<Pd>,
    ) -> Result<Arc<Tis>, QueueError> {
        let (obj, tisn) = devx::create(
            dev,
            &CreateTis {
                transport_domain: td.tdn(),
                pd: pd.pdn(),
            },
        )?;
        Ok(Arc::new(Tis {
            _obj: obj,
            tisn,
            _td: Arc::clone(td),
            _pd: Arc::clone(pd),
        }))
    }
    /// The TIS number.
    pub fn tisn(&self) -> u32 {
        self.tisn
    }
}
