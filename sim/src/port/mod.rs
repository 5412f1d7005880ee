//! Network ports of the device model: where the simulated NIC's frames leave and enter.
//!
//! - [`pcap`]: record frames to a classic libpcap capture file (and read one back).
//! - [`tap`]: attach a port to a Linux TAP interface so the host kernel sees its frames.

pub mod pcap;
pub mod tap;
