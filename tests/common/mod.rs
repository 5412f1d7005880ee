//! An Ethernet queue set on the device model, built through the driver's API only, shared by
//! the integration tests.
#![allow(dead_code)]

use std::sync::Arc;

use mlx5_dpa::devx::{Devx, UarKind};
use mlx5_dpa::mem::{Access, MemoryRegion, Pd};
use mlx5_dpa::mlx5::cmd::OuterMatch;
use mlx5_dpa::queues::steering::{RxFlow, Tis, TransportDomain};
use mlx5_dpa::queues::{Cq, CqConfig, EthSq, EthSqConfig, HostQueueMem, QueueError, Rq, RqConfig};
use mlx5_dpa::uar::UarPage;

/// SQ, RQ, their CQs, a flow rule for the port's MAC, and TX / RX buffers of `2^log_rq` slots.
pub struct Eth {
    pub dev: mlx5_sim::Device,
    pub sq: EthSq,
    pub tx_cq: Cq,
    pub rq: Rq,
    pub rx_cq: Cq,
    pub tx: MemoryRegion,
    pub rx: MemoryRegion,
    pub mac: [u8; 6],
    pub _flow: RxFlow,
    /// What the queues were made with, for tests that make more.
    pub ctx: Arc<dyn Devx>,
    pub pd: Arc<Pd>,
    pub uar: Arc<UarPage>,
    pub tis: Arc<Tis>,
}

/// CQs of `2^log_cq`, an SQ of `2^log_sq` WQEBBs signalling every `signal_every` WQEBBs, an RQ of
/// `2^log_rq`, and buffers of `2^log_rq` slots of `slot` bytes.
pub fn eth(
    log_cq: u8,
    log_sq: u8,
    log_rq: u8,
    signal_every: u16,
    slot: usize,
) -> Result<Eth, QueueError> {
    let dev = mlx5_sim::Device::with_profile("bf3").expect("bf3 profile");
    let ctx: Arc<dyn Devx> = dev.open_devx();
    let mac = dev.with_profile_mut(|p| p.mac);
    let pd = Pd::alloc(&ctx)?;
    let uar = UarPage::alloc(&ctx, UarKind::NonCached)?;
    let td = TransportDomain::alloc(&ctx)?;
    let tis = Tis::create(&ctx, &td, &pd)?;
    let cqc = CqConfig::new(log_cq);
    let tx_cq = Cq::create(
        &ctx,
        &uar,
        HostQueueMem::alloc(&ctx, cqc.ring_bytes())?,
        &cqc,
    )?;
    let rx_cq = Cq::create(
        &ctx,
        &uar,
        HostQueueMem::alloc(&ctx, cqc.ring_bytes())?,
        &cqc,
    )?;
    let sqc = EthSqConfig {
        log_size: log_sq,
        signal_every,
    };
    let sq = EthSq::create(
        &ctx,
        &pd,
        &uar,
        &tis,
        &tx_cq,
        HostQueueMem::alloc(&ctx, sqc.ring_bytes())?,
        &sqc,
    )?;
    let rqc = RqConfig {
        log_size: log_rq,
        max_sge: 1,
    };
    let rq = Rq::create(
        &ctx,
        &pd,
        &uar,
        &rx_cq,
        HostQueueMem::alloc(&ctx, rqc.ring_bytes())?,
        &rqc,
    )?;
    let flow = RxFlow::to_rq(
        &ctx,
        &td,
        &rq,
        OuterMatch {
            dmac: Some(mac),
            ..Default::default()
        },
        0,
    )?;
    let n = 1usize << log_rq;
    let tx = MemoryRegion::alloc(&ctx, &pd, n * slot, Access::LOCAL_WRITE)?;
    let rx = MemoryRegion::alloc(&ctx, &pd, n * slot, Access::LOCAL_WRITE)?;
    Ok(Eth {
        dev,
        sq,
        tx_cq,
        rq,
        rx_cq,
        tx,
        rx,
        mac,
        _flow: flow,
        ctx,
        pd,
        uar,
        tis,
    })
}
