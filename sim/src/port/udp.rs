//! A port linked to another model by UDP: each Ethernet frame the port sends is one datagram
//! from a local address to the peer's, and each datagram that arrives from the peer is a frame
//! received. Two processes, each with its own model (`mlx5-dpa run --link udp:LOCAL,PEER`), so
//! exchange RoCEv2 and Ethernet traffic as two NICs on one wire would; datagrams from any other
//! address are dropped and counted.

use std::net::{SocketAddr, SocketAddrV4, UdpSocket};
use std::sync::atomic::{AtomicU64, Ordering};

use nix::sys::socket::{setsockopt, sockopt};

/// The socket buffers asked for (the kernel caps them at `net.core.rmem_max` / `wmem_max`).
const UDP_BUFFER: usize = 8 << 20;

/// One end of a UDP link.
#[derive(Debug)]
pub struct UdpPort {
    sock: UdpSocket,
    peer: SocketAddrV4,
    /// Datagrams refused because they came from another address than the peer's.
    pub foreign: AtomicU64,
}

impl UdpPort {
    /// Binds `local` (non-blocking) and sends to `peer`.
    ///
    /// # Errors
    /// The bind failed (address in use, not local).
    pub fn open(local: SocketAddrV4, peer: SocketAddrV4) -> std::io::Result<UdpPort> {
        let sock = UdpSocket::bind(local)?;
        sock.set_nonblocking(true)?;
        // Room for a burst: a window of 64 KiB WRITEs is hundreds of frames, and a frame the
        // socket has no room for is lost (then the RC transport's retransmission, after its
        // ACK timeout, recovers it). As large as the system allows (`net.core.rmem_max`).
        // A refusal leaves the default: only speed depends on it.
        let _ = setsockopt(&sock, sockopt::RcvBuf, &UDP_BUFFER);
        let _ = setsockopt(&sock, sockopt::SndBuf, &UDP_BUFFER);
        Ok(UdpPort {
            sock,
            peer,
            foreign: AtomicU64::new(0),
        })
    }

    /// The address bound (the port actually bound when `local` asked for port 0).
    ///
    /// # Errors
    /// As `UdpSocket::local_addr`.
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.sock.local_addr()
    }

    /// Sends one frame to the peer. A peer that is not listening yet is not an error: the frame
    /// is lost, as on a cable with nothing at the far end.
    ///
    /// # Errors
    /// Other socket errors (a frame too large for a datagram).
    pub fn send(&self, frame: &[u8]) -> std::io::Result<()> {
        match self.sock.send_to(frame, self.peer) {
            Ok(_) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => Err(e),
            Err(e) => Err(e),
        }
    }

    /// One frame that arrived from the peer, without waiting; `None` when there is none.
    ///
    /// # Errors
    /// Socket errors other than having nothing to read.
    pub fn try_recv(&self, buf: &mut [u8]) -> std::io::Result<Option<usize>> {
        loop {
            match self.sock.recv_from(buf) {
                Ok((n, SocketAddr::V4(from))) if from == self.peer => return Ok(Some(n)),
                Ok(_) => {
                    self.foreign.fetch_add(1, Ordering::Relaxed);
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Ok(None),
                // A previous send's ICMP port-unreachable surfaces here on Linux.
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {}
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    fn any() -> SocketAddrV4 {
        SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0)
    }

    #[test]
    fn frames_cross_and_strangers_are_refused() {
        // Bind both first (port 0: the system picks), then point each at the other.
        let a0 = UdpSocket::bind(any()).unwrap();
        let b0 = UdpSocket::bind(any()).unwrap();
        let (SocketAddr::V4(a_addr), SocketAddr::V4(b_addr)) =
            (a0.local_addr().unwrap(), b0.local_addr().unwrap())
        else {
            panic!("IPv4 expected");
        };
        drop((a0, b0));
        let a = UdpPort::open(a_addr, b_addr).unwrap();
        let b = UdpPort::open(b_addr, a_addr).unwrap();
        a.send(&[1, 2, 3]).unwrap();
        let mut buf = [0u8; 64];
        let mut got = None;
        for _ in 0..1000 {
            got = b.try_recv(&mut buf).unwrap();
            if got.is_some() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert_eq!(got, Some(3));
        assert_eq!(&buf[..3], &[1, 2, 3]);
        // A datagram from a third socket is not the peer's.
        let c = UdpSocket::bind(any()).unwrap();
        c.send_to(&[9], b_addr).unwrap();
        for _ in 0..1000 {
            if b.foreign.load(Ordering::Relaxed) > 0 {
                break;
            }
            assert_eq!(b.try_recv(&mut buf).unwrap(), None);
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert_eq!(b.foreign.load(Ordering::Relaxed), 1);
    }
}
