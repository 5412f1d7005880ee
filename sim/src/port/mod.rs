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
