//! A tiny host on the model's port: answers ARP for its address and ICMP echo requests.
//!
//! It runs on an [`EthRig`] (raw commands and hand-built WQEs), so `mlx5-dpa sim --tap NAME`
//! gives the kernel a neighbour it can `ping` through a TAP interface, with every frame going
//! through the model's SQ, port, steering, RQ and CQs.

use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::rig::{EthRig, RigError};
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

/// Answers ARP and ping for `ip` with `mac`.
pub struct Responder {
    dev: Device,
    rig: EthRig,
    ip: Ipv4Addr,
    mac: [u8; 6],
    /// What it has done.
    pub stats: ResponderStats,
    /// Frames it did not answer, kept for inspection (the last 64).
    pub unanswered: Vec<Vec<u8>>,
    tx_done: Vec<crate::rig::Completion>,
}

impl Responder {
    /// Builds the rig on `dev` (a context of its own).
    ///
    /// # Errors
    /// The rig could not be built.
    pub fn new(dev: &Device, ip: Ipv4Addr, mac: [u8; 6]) -> Result<Responder, RigError> {
        let mut rig = EthRig::new(dev.open_devx(), crate::rig::RigConfig::default())?;
        rig.fill_rq();
        Ok(Responder {
            dev: dev.clone(),
            rig,
            ip,
            mac,
            stats: ResponderStats::default(),
            unanswered: Vec::new(),
            tx_done: Vec::new(),
        })
    }

    /// One pass: engine step, receive, answer, send.
    pub fn poll(&mut self) -> usize {
        let mut work = self.dev.step();
        let mut replies = Vec::new();
        let (ip, mac) = (self.ip, self.mac);
        let mut stats = self.stats;
        let mut unanswered = Vec::new();
        work += self.rig.poll_rx(64, |r| {
            let Ok(f) = r else { return };
            stats.received += 1;
            if let Some(reply) = arp_reply(f, ip, mac) {
                stats.arp_replies += 1;
                replies.push(reply);
            } else if let Some(reply) = echo_reply(f, ip, mac) {
                stats.echo_replies += 1;
                replies.push(reply);
            } else {
                stats.other += 1;
                unanswered.push(f.to_vec());
            }
        });
        self.stats = stats;
        self.unanswered.extend(unanswered);
        let excess = self.unanswered.len().saturating_sub(64);
        self.unanswered.drain(..excess);
        for r in &replies {
            if self.rig.post_send(r).is_err() {
                break;
            }
        }
        self.rig.ring_sq();
        self.tx_done.clear();
        self.rig.poll_tx_into(usize::MAX, &mut self.tx_done);
        work
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

pub(crate) fn checksum(data: &[u8]) -> u16 {
    let mut sum: u32 = data
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)])))
        .sum();
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

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
