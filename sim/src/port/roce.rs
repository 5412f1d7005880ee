//! RoCE v2 framing: Ethernet / IPv4 / UDP (port 4791) / BTH and its extension headers /
//! payload / ICRC, built into and parsed from reusable buffers.
//!
//! Formats (InfiniBand Architecture Specification vol. 1, ch. 9, and its RoCE v2 annex):
//! - BTH, 12 bytes: opcode; SE, M, PadCnt (2 bits), TVer (4 bits); P_Key; a reserved byte
//!   (`resv8a`), the destination QP (24 bits); the AckReq bit and 7 reserved bits, the PSN
//!   (24 bits).
//! - RETH 16 bytes (virtual address, R_Key, DMA length); AETH 4 bytes (syndrome, MSN);
//!   AtomicETH 28 bytes (virtual address, R_Key, swap or add, compare); AtomicAckETH 8 bytes
//!   (original remote value); ImmDt 4 bytes.
//! - The payload is padded with zeros to a multiple of 4 bytes; PadCnt says how many.
//! - ICRC: CRC-32 (the Ethernet polynomial, as zlib computes it) over 8 bytes of `0xff` (the
//!   LRH of native InfiniBand, masked), then the IPv4 header with TOS, TTL and header checksum
//!   masked to ones, the UDP header with its checksum masked to ones, the BTH with `resv8a`
//!   masked to ones, then everything after the BTH up to the ICRC. It is stored least
//!   significant byte first, as NICs put it on the wire (checked against a frame captured
//!   from a ConnectX-4 Lx, see the tests).
//!
//! The model carries RC over untagged IPv4 only; other frames to UDP port 4791 are counted
//! and dropped by the caller.

/// The RoCE v2 UDP destination port (IANA).
pub const ROCE_V2_PORT: u16 = 4791;

/// Bytes of Ethernet, IPv4 (without options), UDP and BTH headers.
pub(crate) const HDRS: usize = ETH + IPV4 + UDP + BTH;
const ETH: usize = 14;
const IPV4: usize = 20;
const UDP: usize = 8;
const BTH: usize = 12;
/// Bytes of the ICRC trailer.
pub(crate) const ICRC: usize = 4;
/// Bytes of the extension headers.
pub(crate) const RETH: usize = 16;
pub(crate) const AETH: usize = 4;
pub(crate) const ATOMIC_ETH: usize = 28;
pub(crate) const ATOMIC_ACK_ETH: usize = 8;
pub(crate) const IMM: usize = 4;
/// The port's GID table entry of its IPv4 address (`::ffff:a.b.c.d`; `fw::vport`): the only
/// source GID the model sends RoCE v2 from.
pub const IPV4_GID_INDEX: u8 = 1;
/// DETH: Q_Key (4 bytes), reserved byte, source QP (3 bytes).
pub(crate) const DETH: usize = 8;

/// RC BTH opcodes (IBA table 38; transport RC = 0b000 in bits 7:5).
pub mod opcode {
    #![allow(missing_docs)]
    pub const SEND_FIRST: u8 = 0x00;
    pub const SEND_MIDDLE: u8 = 0x01;
    pub const SEND_LAST: u8 = 0x02;
    pub const SEND_LAST_IMM: u8 = 0x03;
    pub const SEND_ONLY: u8 = 0x04;
    pub const SEND_ONLY_IMM: u8 = 0x05;
    pub const RDMA_WRITE_FIRST: u8 = 0x06;
    pub const RDMA_WRITE_MIDDLE: u8 = 0x07;
    pub const RDMA_WRITE_LAST: u8 = 0x08;
    pub const RDMA_WRITE_LAST_IMM: u8 = 0x09;
    pub const RDMA_WRITE_ONLY: u8 = 0x0a;
    pub const RDMA_WRITE_ONLY_IMM: u8 = 0x0b;
    pub const RDMA_READ_REQUEST: u8 = 0x0c;
    pub const RDMA_READ_RESPONSE_FIRST: u8 = 0x0d;
    pub const RDMA_READ_RESPONSE_MIDDLE: u8 = 0x0e;
    pub const RDMA_READ_RESPONSE_LAST: u8 = 0x0f;
    pub const RDMA_READ_RESPONSE_ONLY: u8 = 0x10;
    pub const ACKNOWLEDGE: u8 = 0x11;
    pub const ATOMIC_ACKNOWLEDGE: u8 = 0x12;
    pub const COMPARE_SWAP: u8 = 0x13;
    pub const FETCH_ADD: u8 = 0x14;
    /// Unreliable datagram (the UD transport's opcode space, 0x60..0x7f).
    pub const UD_SEND_ONLY: u8 = 0x64;
    pub const UD_SEND_ONLY_IMM: u8 = 0x65;
}

/// AETH syndromes (IBA 9.7.5.1): bits 7:5 say ACK (000), RNR NAK (001) or NAK (011).
pub mod aeth {
    /// ACK; the low 5 bits are the credit count, 0x1f = "no credits advertised".
    pub const ACK: u8 = 0x1f;
    /// RNR NAK; the low 5 bits are the RNR timer code.
    pub const RNR: u8 = 0x20;
    /// NAK: PSN sequence error.
    pub const NAK_SEQ: u8 = 0x60;
    /// NAK: invalid request.
    pub const NAK_INVALID: u8 = 0x61;
    /// NAK: remote access error.
    pub const NAK_ACCESS: u8 = 0x62;
    /// NAK: remote operational error.
    pub const NAK_OPERATIONAL: u8 = 0x63;
}

/// The extension headers that follow the BTH for one opcode (IBA vol. 1, 9.2).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Extensions {
    reth: bool,
    aeth: bool,
    atomic_eth: bool,
    atomic_ack_eth: bool,
    /// The datagram extended transport header (UD): Q_Key and source QP.
    deth: bool,
    imm: bool,
}

/// Which extension headers follow the BTH for an opcode, or `None` for an opcode the model
/// does not carry.
fn extensions(op: u8) -> Option<Extensions> {
    use opcode::*;
    let none = Extensions::default();
    Some(match op {
        SEND_FIRST
        | SEND_MIDDLE
        | SEND_LAST
        | SEND_ONLY
        | RDMA_WRITE_MIDDLE
        | RDMA_WRITE_LAST
        | RDMA_READ_RESPONSE_MIDDLE => none,
        SEND_LAST_IMM | SEND_ONLY_IMM | RDMA_WRITE_LAST_IMM => Extensions { imm: true, ..none },
        RDMA_WRITE_FIRST | RDMA_WRITE_ONLY | RDMA_READ_REQUEST => Extensions { reth: true, ..none },
        RDMA_WRITE_ONLY_IMM => Extensions {
            reth: true,
            imm: true,
            ..none
        },
        RDMA_READ_RESPONSE_FIRST
        | RDMA_READ_RESPONSE_LAST
        | RDMA_READ_RESPONSE_ONLY
        | ACKNOWLEDGE => Extensions { aeth: true, ..none },
        ATOMIC_ACKNOWLEDGE => Extensions {
            aeth: true,
            atomic_ack_eth: true,
            ..none
        },
        COMPARE_SWAP | FETCH_ADD => Extensions {
            atomic_eth: true,
            ..none
        },
        UD_SEND_ONLY => Extensions { deth: true, ..none },
        UD_SEND_ONLY_IMM => Extensions {
            deth: true,
            imm: true,
            ..none
        },
        _ => return None,
    })
}

/// Whether an opcode travels from responder to requester.
pub(crate) fn is_response(op: u8) -> bool {
    (opcode::RDMA_READ_RESPONSE_FIRST..=opcode::ATOMIC_ACKNOWLEDGE).contains(&op)
}

/// CRC-32 as zlib and Ethernet compute it.
pub fn crc32(data: &[u8]) -> u32 {
    crc32fast::hash(data)
}

/// The ICRC of a RoCE v2 packet: `l3` runs from the IPv4 header to the end of the payload
/// padding (the ICRC itself excluded). `None` when it is too short for IPv4 + UDP + BTH.
///
/// The IBTA's invariant CRC: CRC-32 over 8 bytes of ones, then the headers with the fields
/// that may change in flight set to ones (IPv4 TOS, TTL and checksum; the UDP checksum; the
/// BTH's reserved byte), then the payload.
pub fn icrc(l3: &[u8]) -> Option<u32> {
    let ihl = usize::from(*l3.first()? & 0xf) * 4;
    if ihl < IPV4 || l3.len() < ihl + UDP + BTH {
        return None;
    }
    let mut headers = [0u8; 60 + UDP + BTH];
    let masked = &mut headers[..ihl + UDP + BTH];
    masked.copy_from_slice(&l3[..ihl + UDP + BTH]);
    for i in [1, 8, 10, 11] {
        masked[i] = 0xff;
    }
    masked[ihl + 6..ihl + UDP].fill(0xff);
    masked[ihl + UDP + 4] = 0xff;
    let mut h = crc32fast::Hasher::new();
    h.update(&[0xff; 8]);
    h.update(masked);
    h.update(&l3[ihl + UDP + BTH..]);
    Some(h.finalize())
}

/// Addresses of one direction of a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Path {
    pub(crate) smac: [u8; 6],
    pub(crate) dmac: [u8; 6],
    pub(crate) sip: [u8; 4],
    pub(crate) dip: [u8; 4],
    pub(crate) ttl: u8,
    pub(crate) sport: u16,
    /// The BTH MigReq bit (the QP's path migration state is "migrated").
    pub(crate) mig: bool,
}

/// The BTH fields the sender chooses.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bth {
    pub(crate) opcode: u8,
    pub(crate) se: bool,
    pub(crate) dqpn: u32,
    pub(crate) ack_req: bool,
    pub(crate) psn: u32,
}

/// Starts a packet in `frame` (cleared): Ethernet, IPv4, UDP and BTH headers. Extension
/// headers and payload are appended by the caller, then [`finish`] completes it.
pub(crate) fn start(frame: &mut Vec<u8>, path: &Path, bth: &Bth) {
    frame.clear();
    frame.extend_from_slice(&path.dmac);
    frame.extend_from_slice(&path.smac);
    frame.extend_from_slice(&[0x08, 0x00]);
    // IPv4: version 4, IHL 5; DSCP 0, ECN 0; length later; id 0; DF; TTL; UDP; checksum later.
    frame.extend_from_slice(&[0x45, 0, 0, 0, 0, 0, 0x40, 0, path.ttl, 17, 0, 0]);
    frame.extend_from_slice(&path.sip);
    frame.extend_from_slice(&path.dip);
    frame.extend_from_slice(&path.sport.to_be_bytes());
    frame.extend_from_slice(&ROCE_V2_PORT.to_be_bytes());
    // UDP length later; checksum 0 (RoCE v2 senders may leave it out over IPv4).
    frame.extend_from_slice(&[0, 0, 0, 0]);
    frame.push(bth.opcode);
    frame.push(u8::from(bth.se) << 7 | u8::from(path.mig) << 6);
    frame.extend_from_slice(&0xffffu16.to_be_bytes());
    frame.extend_from_slice(&(bth.dqpn & 0xff_ffff).to_be_bytes());
    frame
        .extend_from_slice(&((u32::from(bth.ack_req) << 31) | (bth.psn & 0xff_ffff)).to_be_bytes());
}

/// Appends a DETH.
pub(crate) fn put_deth(frame: &mut Vec<u8>, qkey: u32, src_qp: u32) {
    frame.extend_from_slice(&qkey.to_be_bytes());
    frame.extend_from_slice(&(src_qp & 0xff_ffff).to_be_bytes());
}

/// Appends a RETH.
pub(crate) fn put_reth(frame: &mut Vec<u8>, va: u64, rkey: u32, len: u32) {
    frame.extend_from_slice(&va.to_be_bytes());
    frame.extend_from_slice(&rkey.to_be_bytes());
    frame.extend_from_slice(&len.to_be_bytes());
}

/// Appends an AETH.
pub(crate) fn put_aeth(frame: &mut Vec<u8>, syndrome: u8, msn: u32) {
    frame.extend_from_slice(&((u32::from(syndrome) << 24) | (msn & 0xff_ffff)).to_be_bytes());
}

/// Appends an AtomicETH.
pub(crate) fn put_atomic_eth(frame: &mut Vec<u8>, va: u64, rkey: u32, swap_add: u64, cmp: u64) {
    frame.extend_from_slice(&va.to_be_bytes());
    frame.extend_from_slice(&rkey.to_be_bytes());
    frame.extend_from_slice(&swap_add.to_be_bytes());
    frame.extend_from_slice(&cmp.to_be_bytes());
}

/// Pads the payload, fills lengths and the IPv4 checksum, appends the ICRC.
pub(crate) fn finish(frame: &mut Vec<u8>) {
    if frame.len() < HDRS {
        return;
    }
    let pad = (4 - (frame.len() - HDRS) % 4) % 4;
    frame.resize(frame.len() + pad, 0);
    frame[ETH + IPV4 + UDP + 1] |= (pad as u8) << 4;
    let ip_len = (frame.len() - ETH + ICRC) as u16;
    frame[ETH + 2..ETH + 4].copy_from_slice(&ip_len.to_be_bytes());
    let udp_len = ip_len - IPV4 as u16;
    frame[ETH + IPV4 + 4..ETH + IPV4 + 6].copy_from_slice(&udp_len.to_be_bytes());
    let sum = crate::port::internet_checksum(&frame[ETH..ETH + IPV4]);
    frame[ETH + 10..ETH + 12].copy_from_slice(&sum.to_be_bytes());
    let crc = icrc(&frame[ETH..]).unwrap_or(0);
    frame.extend_from_slice(&crc.to_le_bytes());
}

/// Whether `frame` is a RoCE v2 frame addressed to `mac` / `ip` (what the NIC hands to its
/// RDMA transport instead of Ethernet receive steering).
pub(crate) fn is_for(frame: &[u8], mac: &[u8; 6], ip: &[u8; 4]) -> bool {
    if frame.len() < ETH + IPV4 + UDP || frame[0..6] != mac[..] || frame[12..14] != [0x08, 0x00] {
        return false;
    }
    let l3 = &frame[ETH..];
    let ihl = usize::from(l3[0] & 0xf) * 4;
    l3[0] >> 4 == 4
        && ihl >= IPV4
        && l3.len() >= ihl + UDP
        && l3[9] == 17
        && l3[16..20] == ip[..]
        && u16::from_be_bytes([l3[ihl + 2], l3[ihl + 3]]) == ROCE_V2_PORT
}

/// Why a frame was not accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reject {
    /// Headers inconsistent or truncated, a fragment, or an opcode the model does not carry.
    Malformed,
    /// The ICRC does not match.
    BadIcrc,
    /// BTH version or P_Key the port does not accept.
    BadBth,
}

/// RETH fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Reth {
    pub(crate) va: u64,
    pub(crate) rkey: u32,
    pub(crate) len: u32,
}

/// DETH fields (UD).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Deth {
    pub(crate) qkey: u32,
    pub(crate) src_qp: u32,
}

/// AtomicETH fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct AtomicEth {
    pub(crate) va: u64,
    pub(crate) rkey: u32,
    pub(crate) swap_add: u64,
    pub(crate) compare: u64,
}

/// A parsed RC packet.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Packet<'a> {
    pub(crate) opcode: u8,
    pub(crate) dqpn: u32,
    pub(crate) ack_req: bool,
    pub(crate) psn: u32,
    pub(crate) reth: Option<Reth>,
    /// (syndrome, MSN).
    pub(crate) aeth: Option<(u8, u32)>,
    pub(crate) atomic: Option<AtomicEth>,
    pub(crate) atomic_ack: Option<u64>,
    pub(crate) deth: Option<Deth>,
    /// The IPv4 header the packet came in (a UD receive places it in the GRH area).
    pub(crate) ip_header: &'a [u8],
    pub(crate) imm: Option<[u8; 4]>,
    pub(crate) payload: &'a [u8],
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

fn be64(b: &[u8]) -> u64 {
    u64::from_be_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
}

/// Parses and checks a RoCE v2 RC frame (the caller established it is addressed to the port).
pub(crate) fn parse(frame: &[u8]) -> Result<Packet<'_>, Reject> {
    use Reject::*;
    if frame.get(12..14) != Some(&[0x08, 0x00][..]) {
        return Err(Malformed);
    }
    let l3 = frame.get(ETH..).ok_or(Malformed)?;
    if l3.len() < IPV4 || l3[0] >> 4 != 4 {
        return Err(Malformed);
    }
    let ihl = usize::from(l3[0] & 0xf) * 4;
    let total = usize::from(u16::from_be_bytes([l3[2], l3[3]]));
    let frag = u16::from_be_bytes([l3[6], l3[7]]) & 0x3fff;
    if ihl < IPV4 || total > l3.len() || total < ihl + UDP + BTH + ICRC || frag != 0 || l3[9] != 17
    {
        return Err(Malformed);
    }
    let l3 = &l3[..total];
    let udp = &l3[ihl..];
    if usize::from(u16::from_be_bytes([udp[4], udp[5]])) != total - ihl {
        return Err(Malformed);
    }
    let body = total - ICRC;
    let want = icrc(&l3[..body]).ok_or(Malformed)?;
    let got = u32::from_le_bytes([l3[body], l3[body + 1], l3[body + 2], l3[body + 3]]);
    if want != got {
        return Err(BadIcrc);
    }
    let bth = &l3[ihl + UDP..];
    let op = bth[0];
    let pad = usize::from(bth[1] >> 4 & 3);
    let tver = bth[1] & 0xf;
    let pkey = u16::from_be_bytes([bth[2], bth[3]]);
    // The port's P_Key table holds the default key only (full or limited membership).
    if tver != 0 || pkey & 0x7fff != 0x7fff {
        return Err(BadBth);
    }
    let dqpn = be32(&bth[4..8]) & 0xff_ffff;
    let w = be32(&bth[8..12]);
    let Extensions {
        reth,
        aeth: aeth_on,
        atomic_eth: atomic,
        atomic_ack_eth: atomic_ack,
        deth,
        imm,
    } = extensions(op).ok_or(Malformed)?;
    let mut rest = &l3[ihl + UDP + BTH..body];
    let mut take = |n: usize| -> Result<&[u8], Reject> {
        if rest.len() < n {
            return Err(Malformed);
        }
        let (h, r) = rest.split_at(n);
        rest = r;
        Ok(h)
    };
    // Header order (IBA 9.2): DETH, RETH or AtomicETH, then AETH, AtomicAckETH, ImmDt.
    let deth = if deth {
        let h = take(DETH)?;
        Some(Deth {
            qkey: be32(&h[0..4]),
            src_qp: be32(&h[4..8]) & 0xff_ffff,
        })
    } else {
        None
    };
    let reth = if reth {
        let h = take(RETH)?;
        Some(Reth {
            va: be64(&h[0..8]),
            rkey: be32(&h[8..12]),
            len: be32(&h[12..16]),
        })
    } else {
        None
    };
    let atomic = if atomic {
        let h = take(ATOMIC_ETH)?;
        Some(AtomicEth {
            va: be64(&h[0..8]),
            rkey: be32(&h[8..12]),
            swap_add: be64(&h[12..20]),
            compare: be64(&h[20..28]),
        })
    } else {
        None
    };
    let aeth = if aeth_on {
        let h = take(AETH)?;
        Some((h[0], be32(h) & 0xff_ffff))
    } else {
        None
    };
    let atomic_ack = if atomic_ack {
        Some(be64(take(ATOMIC_ACK_ETH)?))
    } else {
        None
    };
    let imm = if imm {
        let h = take(IMM)?;
        Some([h[0], h[1], h[2], h[3]])
    } else {
        None
    };
    if pad > rest.len() {
        return Err(Malformed);
    }
    let payload = &rest[..rest.len() - pad];
    Ok(Packet {
        opcode: op,
        dqpn,
        ack_req: w >> 31 == 1,
        psn: w & 0xff_ffff,
        reth,
        aeth,
        atomic,
        atomic_ack,
        deth,
        ip_header: &l3[..ihl],
        imm,
        payload,
    })
}

/// The IPv4-mapped IPv6 address of `ip` (RFC 4291 §2.5.5.2): a RoCE v2 GID.
pub(crate) fn ipv4_gid(ip: [u8; 4]) -> [u8; 16] {
    let mut g = [0u8; 16];
    g[10] = 0xff;
    g[11] = 0xff;
    g[12..].copy_from_slice(&ip);
    g
}

/// The IPv4 address inside an IPv4-mapped GID.
pub(crate) fn gid_ipv4(gid: &[u8; 16]) -> Option<[u8; 4]> {
    (gid[..10] == [0; 10] && gid[10..12] == [0xff, 0xff])
        .then(|| [gid[12], gid[13], gid[14], gid[15]])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        let s: String = s.chars().filter(|c| c.is_ascii_hexdigit()).collect();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn crc32_check_value() {
        // The standard check value of CRC-32 (ISO-HDLC / zlib).
        assert_eq!(crc32(b"123456789"), 0xcbf4_3926);
    }

    #[test]
    fn icrc_matches_a_frame_captured_from_a_connectx4_lx() {
        // A RoCE v2 CNP as captured on a ConnectX-4 Lx (published as a test vector with
        // scapy's RoCE layer); its last four bytes are the ICRC the NIC put on the wire.
        let f = hex("e41d 2dab 2bc2 7cfe 9064 3b32 0800 45c2
             003c 718c 4000 4011 9161 0a00 1101 0a00
             1201 0000 12b7 0028 0000 8100 ffff 4000
             0118 0000 0000 0000 0000 0000 0000 0000
             0000 0000 0000 82fd 002a");
        let n = f.len();
        let c = icrc(&f[14..n - 4]).unwrap();
        assert_eq!(c.to_le_bytes(), [0x82, 0xfd, 0x00, 0x2a]);
        // The masked fields do not enter the CRC.
        let mut g = f.clone();
        g[15] = 0x00; // TOS
        g[22] = 1; // TTL
        g[24] = 0x12; // IP checksum
        g[40] = 0x55; // UDP checksum
        g[46] = 0xc0; // BTH resv8a (FECN/BECN)
        assert_eq!(icrc(&g[14..n - 4]), Some(c));
        g[50] ^= 1; // PSN
        assert_ne!(icrc(&g[14..n - 4]), Some(c));
    }

    fn path() -> Path {
        Path {
            smac: [2, 0, 0, 0, 0, 1],
            dmac: [2, 0, 0, 0, 0, 2],
            sip: [192, 0, 2, 1],
            dip: [192, 0, 2, 2],
            ttl: 64,
            sport: 0xc001,
            mig: true,
        }
    }

    #[test]
    fn built_frames_parse_back() {
        let mut f = Vec::new();
        start(
            &mut f,
            &path(),
            &Bth {
                opcode: opcode::RDMA_WRITE_ONLY_IMM,
                se: true,
                dqpn: 0x4001,
                ack_req: true,
                psn: 0xff_fffe,
            },
        );
        put_reth(&mut f, 0x1234_5678_9abc, 0x4242, 5);
        f.extend_from_slice(&[9, 8, 7, 6]);
        f.extend_from_slice(b"hello");
        finish(&mut f);
        assert_eq!(f.len(), HDRS + RETH + IMM + 8 + ICRC);
        assert!(is_for(&f, &[2, 0, 0, 0, 0, 2], &[192, 0, 2, 2]));
        assert!(!is_for(&f, &[2, 0, 0, 0, 0, 2], &[192, 0, 2, 3]));
        assert_eq!(crate::port::internet_checksum(&f[14..34]), 0);
        let p = parse(&f).unwrap();
        assert_eq!(p.opcode, opcode::RDMA_WRITE_ONLY_IMM);
        assert_eq!((p.dqpn, p.psn, p.ack_req), (0x4001, 0xff_fffe, true));
        assert_eq!(
            p.reth,
            Some(Reth {
                va: 0x1234_5678_9abc,
                rkey: 0x4242,
                len: 5
            })
        );
        assert_eq!(p.imm, Some([9, 8, 7, 6]));
        assert_eq!(p.payload, b"hello");
        // Any flipped bit outside the masked fields breaks the ICRC.
        for i in [20usize, 30, 45, 60, f.len() - 6] {
            let mut g = f.clone();
            g[i] ^= 0x10;
            assert!(parse(&g).is_err(), "byte {i}");
        }
        // Truncations and garbage never panic.
        for n in 0..f.len() {
            let _ = parse(&f[..n]);
        }
    }

    proptest::proptest! {
        /// Arbitrary bytes, and valid frames with any byte changed, never panic the parser;
        /// a changed byte outside the masked fields is always caught.
        #[test]
        fn parse_never_panics(junk in proptest::collection::vec(proptest::num::u8::ANY, 0..200),
                              at in 0usize..200, bit in 0u8..8) {
            let _ = parse(&junk);
            let _ = is_for(&junk, &[2, 0, 0, 0, 0, 2], &[192, 0, 2, 2]);
            let _ = icrc(&junk);
            let mut f = Vec::new();
            start(&mut f, &path(), &Bth { opcode: opcode::SEND_ONLY, se: false, dqpn: 1, ack_req: true, psn: 9 });
            f.extend_from_slice(&junk);
            finish(&mut f);
            proptest::prop_assert!(parse(&f).is_ok());
            let at = at % f.len();
            f[at] ^= 1 << bit;
            let masked = matches!(at, 15 | 22 | 24 | 25 | 40 | 41 | 46);
            // The MAC addresses are not covered by the ICRC (the Ethernet FCS covers them).
            let in_mac = at < 12;
            if !masked && !in_mac {
                proptest::prop_assert!(parse(&f).is_err());
            }
        }
    }

    #[test]
    fn acks_and_atomic_acks_parse_back() {
        let mut f = Vec::new();
        start(
            &mut f,
            &path(),
            &Bth {
                opcode: opcode::ATOMIC_ACKNOWLEDGE,
                se: false,
                dqpn: 7,
                ack_req: false,
                psn: 3,
            },
        );
        put_aeth(&mut f, aeth::ACK, 0x12_3456);
        f.extend_from_slice(&0x0102_0304_0506_0708u64.to_be_bytes());
        finish(&mut f);
        let p = parse(&f).unwrap();
        assert_eq!(p.aeth, Some((aeth::ACK, 0x12_3456)));
        assert_eq!(p.atomic_ack, Some(0x0102_0304_0506_0708));
        assert!(p.payload.is_empty());
        assert!(is_response(p.opcode));
        assert!(!is_response(opcode::FETCH_ADD));
    }
}
