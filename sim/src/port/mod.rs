//! Network ports of the device model: where the simulated NIC's frames leave and enter.
//!
//! - [`pcap`]: record frames to a classic libpcap capture file (and read one back).
//! - [`tap`]: attach a port to a Linux TAP interface so the host kernel sees its frames.
//! - [`roce`]: RoCE v2 framing and the ICRC, for the RC transport.
//! - [`udp`]: link a port to another process's model with UDP datagrams.

pub mod pcap;
pub mod roce;
pub mod tap;
pub mod udp;

/// The Internet checksum (RFC 1071) of `data`: the ones' complement of the ones' complement
/// sum of its 16-bit big-endian words (an odd last byte padded with zero). Over a header whose
/// checksum field is zero it is the value to put there; over a header with its checksum, 0.
pub(crate) fn internet_checksum(data: &[u8]) -> u16 {
    let mut sum: u32 = data
        .chunks(2)
        .map(|w| u32::from(u16::from_be_bytes([w[0], *w.get(1).unwrap_or(&0)])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}
