//! A tiny host on the model's port: answers ARP for its address and ICMP echo requests.
//!
//! It runs on the driver's own queues (`mlx5_dpa::queues`: an Ethernet SQ, an RQ, their CQs and
//! a flow rule), so `mlx5-dpa sim --tap NAME` gives the kernel a neighbour it can `ping`
//! through a TAP interface, with every frame going through the driver's rings and the model's
//! SQ, port, steering, RQ and CQs.

use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use std::sync::Arc;

use mlx5_dpa::devx::{Devx, UarKind};
use mlx5_dpa::mem::{Access, MemoryRegion, Pd};
use mlx5_dpa::mlx5::cmd::OuterMatch;
use mlx5_dpa::queues::steering::{RxFlow, Tis, TransportDomain};
use mlx5_dpa::queues::wq::ETH_MIN_INLINE;
use mlx5_dpa::queues::{Cq, CqConfig, EthSq, EthSqConfig, HostQueueMem, QueueError, Rq, RqConfig};
use mlx5_dpa::uar::UarPage;

use crate::Device;

/// Counters of a responder run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ResponderStats {
    /// Frames received.
    pub received: u64,
    /// ARP requests answered.
    pub arp_replies: u64,
    /// ICMP echo requests answered.
    pub echo_replies: u64,
    /// Frames neither answered nor malformed (other traffic).
    pub other: u64,
}

/// log2 of the receive and send slots; each slot holds one frame.
const LOG_SLOTS: u8 = 10;
/// Bytes of one frame slot.
const SLOT: usize = 2048;

/// Answers ARP and ping for `ip` with `mac`.
pub struct Responder {
    dev: Device,
    // Field order is drop order: the rule before the queues it points at, queues before
    // their CQs, the memory last.
    _flow: RxFlow,
    sq: EthSq,
    rq: Rq,
    tx_cq: Cq,
    rx_cq: Cq,
    tx: MemoryRegion,
    rx: MemoryRegion,
    /// Send slots used so far (the slot of the next reply is this modulo the slot count).
    tx_count: usize,
    frame: Vec<u8>,
    ip: Ipv4Addr,
    mac: [u8; 6],
    /// What it has done.
    pub stats: ResponderStats,
    /// Frames it did not answer, kept for inspection (the last 64).
    pub unanswered: Vec<Vec<u8>>,
}

impl Responder {
    /// Builds its queues on `dev` (a context of its own, through the driver's queue API): an
    /// Ethernet SQ and an RQ with their CQs, every receive buffer posted, and a flow rule
    /// taking every frame at level 0 (rules made before it are tried first).
    ///
    /// # Errors
    /// A queue or the rule could not be made.
    pub fn new(dev: &Device, ip: Ipv4Addr, mac: [u8; 6]) -> Result<Responder, QueueError> {
        let ctx: Arc<dyn Devx> = dev.open_devx();
        let pd = Pd::alloc(&ctx)?;
        let uar = UarPage::alloc(&ctx, UarKind::NonCached)?;
        let td = TransportDomain::alloc(&ctx)?;
        let tis = Tis::create(&ctx, &td, &pd)?;
        let cqc = CqConfig::new(LOG_SLOTS + 1);
        let mem = |n: usize| HostQueueMem::alloc(&ctx, n);
        let tx_cq = Cq::create(&ctx, &uar, mem(cqc.ring_bytes())?, &cqc)?;
        let rx_cq = Cq::create(&ctx, &uar, mem(cqc.ring_bytes())?, &cqc)?;
        let sqc = EthSqConfig {
            log_size: LOG_SLOTS,
            signal_every: 1,
        };
        let sq = EthSq::create(&ctx, &pd, &uar, &tis, &tx_cq, mem(sqc.ring_bytes())?, &sqc)?;
        let rqc = RqConfig {
            log_size: LOG_SLOTS,
            max_sge: 1,
        };
        let mut rq = Rq::create(&ctx, &pd, &uar, &rx_cq, mem(rqc.ring_bytes())?, &rqc)?;
        let flow = RxFlow::to_rq(&ctx, &td, &rq, OuterMatch::default(), 0)?;
        let slots = 1usize << LOG_SLOTS;
        let tx = MemoryRegion::alloc(&ctx, &pd, slots * SLOT, Access::LOCAL_WRITE)?;
        let rx = MemoryRegion::alloc(&ctx, &pd, slots * SLOT, Access::LOCAL_WRITE)?;
        for i in 0..slots {
            rq.post_recv(&[rx.sge(i * SLOT, SLOT)?], i as u64)?;
        }
        rq.ring_doorbell();
        Ok(Responder {
            dev: dev.clone(),
            _flow: flow,
            sq,
            rq,
            tx_cq,
            rx_cq,
            tx,
            rx,
            tx_count: 0,
            frame: Vec::with_capacity(SLOT),
            ip,
            mac,
            stats: ResponderStats::default(),
            unanswered: Vec::new(),
        })
    }

    /// One pass: engine step, receive, answer, send. Returns the engine's work plus the
    /// frames received.
    pub fn poll(&mut self) -> usize {
        let mut work = self.dev.step();
        let mut replies = Vec::new();
        while let Some(c) = self.rx_cq.poll() {
            work += 1;
            // A receive error (a frame longer than the buffer) still consumes its WQE.
            let counter = match c {
                Ok(c) => c.wqe_counter,
                Err(e) => match e.wqe_counter() {
                    Some(w) => w,
                    None => continue,
                },
            };
            let Ok(slot) = self.rq.complete(counter) else {
                continue;
            };
            let slot = slot as usize;
            if let Ok(c) = c {
                let len = (c.byte_len as usize).min(SLOT);
                self.frame.resize(len, 0);
                if self.rx.read(slot * SLOT, &mut self.frame).is_ok() {
                    self.stats.received += 1;
                    self.answer(&mut replies);
                }
            }
            if let Ok(sge) = self.rx.sge(slot * SLOT, SLOT) {
                let _ = self.rq.post_recv(&[sge], slot as u64);
            }
        }
        self.rq.ring_doorbell();
        let slots = 1usize << LOG_SLOTS;
        for r in &replies {
            let at = (self.tx_count % slots) * SLOT;
            let rest = r.len() - ETH_MIN_INLINE;
            let Ok(gather) = self.tx.sge(at + ETH_MIN_INLINE, rest) else {
                break;
            };
            if self.tx.write(at, r).is_err()
                || self
                    .sq
                    .post_send(&r[..ETH_MIN_INLINE], &[gather], at as u64)
                    .is_err()
            {
                break;
            }
            self.tx_count += 1;
        }
        self.sq.ring_doorbell();
        while let Some(c) = self.tx_cq.poll() {
            if let Ok(c) = c {
                let _ = self.sq.complete(&c);
            }
        }
        work
    }

    /// Answers the frame in `self.frame`, or keeps it as unanswered.
    fn answer(&mut self, replies: &mut Vec<Vec<u8>>) {
        let f = &self.frame;
        if let Some(reply) = arp_reply(f, self.ip, self.mac) {
            self.stats.arp_replies += 1;
            replies.push(reply);
        } else if let Some(reply) = echo_reply(f, self.ip, self.mac) {
            self.stats.echo_replies += 1;
            replies.push(reply);
        } else {
            self.stats.other += 1;
            self.unanswered.push(f.clone());
            let excess = self.unanswered.len().saturating_sub(64);
            self.unanswered.drain(..excess);
        }
    }

    /// Polls until `stop` is set or `limit` has passed.
    pub fn run(&mut self, stop: &AtomicBool, limit: Option<Duration>) {
        let start = Instant::now();
        while !stop.load(Ordering::Relaxed) && limit.is_none_or(|l| start.elapsed() < l) {
            if self.poll() == 0 {
                std::thread::sleep(Duration::from_micros(200));
            }
        }
    }
}

/// The ARP reply to a request for `ip`, from `mac`.
pub(crate) fn arp_reply(f: &[u8], ip: Ipv4Addr, mac: [u8; 6]) -> Option<Vec<u8>> {
    // Ethernet + ARP for IPv4 over Ethernet: htype 1, ptype 0x0800, hlen 6, plen 4, op 1.
    if f.len() < 42 || f[12..14] != [0x08, 0x06] || f[14..22] != [0, 1, 8, 0, 6, 4, 0, 1] {
        return None;
    }
    if f[38..42] != ip.octets() {
        return None;
    }
    let mut r = vec![0u8; 60];
    r[0..6].copy_from_slice(&f[22..28]);
    r[6..12].copy_from_slice(&mac);
    r[12..14].copy_from_slice(&[0x08, 0x06]);
    r[14..22].copy_from_slice(&[0, 1, 8, 0, 6, 4, 0, 2]);
    r[22..28].copy_from_slice(&mac);
    r[28..32].copy_from_slice(&ip.octets());
    r[32..38].copy_from_slice(&f[22..28]);
    r[38..42].copy_from_slice(&f[28..32]);
    Some(r)
}

/// The Internet checksum (one for the whole model, `port::internet_checksum`).
pub(crate) use crate::port::internet_checksum as checksum;

/// The ICMP echo reply to an echo request for `ip`.
pub(crate) fn echo_reply(f: &[u8], ip: Ipv4Addr, mac: [u8; 6]) -> Option<Vec<u8>> {
    if f.len() < 42 || f[12..14] != [0x08, 0x00] || f[14] >> 4 != 4 {
        return None;
    }
    let ihl = usize::from(f[14] & 0xf) * 4;
    let total = usize::from(u16::from_be_bytes([f[16], f[17]]));
    if ihl < 20 || f[23] != 1 || f[30..34] != ip.octets() || 14 + total > f.len() || total < ihl + 8
    {
        return None;
    }
    let icmp = 14 + ihl;
    if f[icmp] != 8 {
        return None;
    }
    let mut r = f[..14 + total].to_vec();
    r[0..6].copy_from_slice(&f[6..12]);
    r[6..12].copy_from_slice(&mac);
    r[26..30].copy_from_slice(&f[30..34]);
    r[30..34].copy_from_slice(&f[26..30]);
    r[22] = 64;
    r[24..26].fill(0);
    let c = checksum(&r[14..14 + ihl]);
    r[24..26].copy_from_slice(&c.to_be_bytes());
    r[icmp] = 0;
    r[icmp + 2..icmp + 4].fill(0);
    let c = checksum(&r[icmp..14 + total]);
    r[icmp + 2..icmp + 4].copy_from_slice(&c.to_be_bytes());
    Some(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_arp_and_echo_with_valid_checksums() {
        let ip = Ipv4Addr::new(10, 99, 0, 2);
        let mac = [2, 0, 0x5e, 0, 0, 1];
        let mut req = vec![0u8; 42];
        req[0..6].fill(0xff);
        req[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 7]);
        req[12..14].copy_from_slice(&[8, 6]);
        req[14..22].copy_from_slice(&[0, 1, 8, 0, 6, 4, 0, 1]);
        req[22..28].copy_from_slice(&[2, 0, 0, 0, 0, 7]);
        req[28..32].copy_from_slice(&[10, 99, 0, 1]);
        req[38..42].copy_from_slice(&ip.octets());
        let r = arp_reply(&req, ip, mac).unwrap();
        assert_eq!(&r[0..6], &[2, 0, 0, 0, 0, 7]);
        assert_eq!(&r[20..22], &[0, 2]);
        assert_eq!(&r[22..28], &mac);
        assert!(arp_reply(&req, Ipv4Addr::new(10, 99, 0, 3), mac).is_none());

        let mut ping = vec![0u8; 14 + 20 + 8 + 8];
        ping[12..14].copy_from_slice(&[8, 0]);
        ping[14] = 0x45;
        ping[16..18].copy_from_slice(&36u16.to_be_bytes());
        ping[22] = 64;
        ping[23] = 1;
        ping[26..30].copy_from_slice(&[10, 99, 0, 1]);
        ping[30..34].copy_from_slice(&ip.octets());
        ping[34] = 8;
        ping[38..46].copy_from_slice(&[0, 1, 0, 1, b'p', b'i', b'n', b'g']);
        let r = echo_reply(&ping, ip, mac).unwrap();
        assert_eq!(r[34], 0, "echo reply");
        assert_eq!(checksum(&r[14..34]), 0, "IPv4 header checksum verifies");
        assert_eq!(checksum(&r[34..]), 0, "ICMP checksum verifies");
        assert_eq!(&r[30..34], &[10, 99, 0, 1]);
        assert_eq!(&r[42..46], b"ping");
    }
}
