//! Attach a simulated port to a Linux TAP interface.
//!
//! A [`Tap`] owns a file descriptor on `/dev/net/tun` bound to one TAP interface (created on
//! demand, in the network namespace of the calling thread). Every [`Tap::send`] injects one
//! Ethernet frame into the kernel as if it had arrived on that interface; every
//! [`Tap::recv`] returns one frame the kernel transmitted on it. Frames carry no packet
//! information prefix (`IFF_NO_PI`) and no virtio-net header.
//!
//! Creating or attaching a TAP interface needs `CAP_NET_ADMIN` in the namespace that owns it.
//! The interface is removed when the [`Tap`] is dropped unless it was made persistent
//! elsewhere (`ip tuntap add ... mode tap`).

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::fcntl::{open, OFlag};
use nix::libc::{c_int, c_short};
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::stat::Mode;

/// The clone device through which TAP interfaces are created and attached.
pub const TUN_DEVICE: &str = "/dev/net/tun";
/// Longest interface name the kernel accepts, in bytes (`IFNAMSIZ` minus the NUL).
pub const MAX_NAME_LEN: usize = IFNAMSIZ - 1;

const IFNAMSIZ: usize = 16;
/// `IFF_TAP`: an Ethernet (layer 2) device rather than a layer 3 TUN device.
const IFF_TAP: c_short = 0x0002;
/// `IFF_NO_PI`: no 4-byte packet information header in front of each frame.
const IFF_NO_PI: c_short = 0x1000;

/// `struct ifreq` as TUNSETIFF uses it: the name, then the flags as the first union member.
/// The kernel's struct is 40 bytes on 64-bit targets (32 on 32-bit ones, where the extra
/// padding here is simply not read).
#[repr(C)]
struct IfReq {
    name: [u8; IFNAMSIZ],
    flags: c_short,
    _pad: [u8; 22],
}
const _: () = assert!(std::mem::size_of::<IfReq>() == 40);

/// `TUNSETIFF = _IOW('T', 202, int)`. The size field says `int` although the argument is a
/// pointer to `struct ifreq`; that is how the kernel defines it.
/// The kernel writes the final interface name back, hence the read-write wrapper below.
const TUNSETIFF: nix::sys::ioctl::ioctl_num_type =
    nix::request_code_write!(b'T', 202, std::mem::size_of::<c_int>());
#[cfg(any(
    target_arch = "x86_64",
    target_arch = "aarch64",
    target_arch = "riscv64"
))]
const _: () = assert!(TUNSETIFF == 0x4004_54ca);

mod ioctl {
    use super::IfReq;

    nix::ioctl_readwrite_bad!(
        /// `ioctl(fd, TUNSETIFF, &mut ifreq)`.
        tunsetiff,
        super::TUNSETIFF,
        IfReq
    );
}

/// Why a TAP operation failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TapError {
    /// The interface name cannot be a Linux interface name.
    #[error("invalid TAP interface name {name:?}: {reason}")]
    InvalidName {
        /// The rejected name.
        name: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// `/dev/net/tun` does not exist or has no driver behind it.
    #[error(
        "opening {TUN_DEVICE} failed ({errno}): no TUN/TAP support (is the tun module loaded, \
         or is /dev/net/tun missing from this container?)"
    )]
    NoTunDevice {
        /// `ENOENT`, `ENODEV` or `ENXIO`.
        errno: Errno,
    },
    /// The kernel refused the operation for lack of privilege.
    #[error("{op} failed ({errno}): permission denied; a TAP interface needs CAP_NET_ADMIN")]
    PermissionDenied {
        /// The operation that failed, such as `"ioctl TUNSETIFF"`.
        op: &'static str,
        /// `EPERM` or `EACCES`.
        errno: Errno,
    },
    /// Any other failing system call.
    #[error("{op} on TAP interface failed: {errno}")]
    Sys {
        /// The operation that failed, such as `"write"` or `"poll"`.
        op: &'static str,
        /// The error number it returned.
        errno: Errno,
    },
    /// The kernel took only part of a frame.
    #[error("short write to TAP interface: {written} of {len} bytes")]
    ShortWrite {
        /// Bytes accepted.
        written: usize,
        /// Length of the frame.
        len: usize,
    },
}

impl TapError {
    /// The error number behind this error, if it came from a system call.
    pub fn errno(&self) -> Option<Errno> {
        match self {
            Self::NoTunDevice { errno }
            | Self::PermissionDenied { errno, .. }
            | Self::Sys { errno, .. } => Some(*errno),
            Self::InvalidName { .. } | Self::ShortWrite { .. } => None,
        }
    }

    fn from_errno(op: &'static str, errno: Errno) -> Self {
        match errno {
            Errno::EPERM | Errno::EACCES => Self::PermissionDenied { op, errno },
            _ => Self::Sys { op, errno },
        }
    }
}

/// A TAP interface attached to this process: one Ethernet frame per write or read.
///
/// The descriptor is non-blocking; [`recv`](Self::recv) waits with `poll` and a bound.
#[derive(Debug)]
pub struct Tap {
    fd: OwnedFd,
    name: String,
}

impl Tap {
    /// Creates (or attaches to) the TAP interface `name` in the calling thread's network
    /// namespace, without packet information headers, in non-blocking mode.
    ///
    /// `name` may contain one `%d`, which the kernel replaces with the first free number;
    /// [`name`](Self::name) then reports the real name. The interface starts down; bring it
    /// up with `ip link set <name> up`.
    ///
    /// # Errors
    ///
    /// [`TapError::InvalidName`] for a name the kernel would reject,
    /// [`TapError::NoTunDevice`] without TUN/TAP support, [`TapError::PermissionDenied`]
    /// without `CAP_NET_ADMIN`, and [`TapError::Sys`] for other failures (`EBUSY` when the
    /// interface exists and is attached elsewhere, `EINVAL` when it is not a TAP device).
    pub fn open(name: &str) -> Result<Self, TapError> {
        validate_name(name)?;
        let fd = open(
            TUN_DEVICE,
            OFlag::O_RDWR | OFlag::O_CLOEXEC | OFlag::O_NONBLOCK,
            Mode::empty(),
        )
        .map_err(|errno| match errno {
            Errno::ENOENT | Errno::ENODEV | Errno::ENXIO => TapError::NoTunDevice { errno },
            _ => TapError::from_errno("open /dev/net/tun", errno),
        })?;

        let mut req = IfReq {
            name: [0; IFNAMSIZ],
            flags: IFF_TAP | IFF_NO_PI,
            _pad: [0; 22],
        };
        // validate_name guarantees at most MAX_NAME_LEN bytes, so the NUL terminator stays.
        for (dst, src) in req.name.iter_mut().zip(name.bytes()) {
            *dst = src;
        }
        // SAFETY: `fd` is an open /dev/net/tun descriptor we own, and `req` is a live,
        // properly initialised 40-byte `struct ifreq` with a NUL-terminated name; the kernel
        // reads at most sizeof(struct ifreq) bytes from it and writes the interface name
        // back into it, all within the duration of this call.
        unsafe { ioctl::tunsetiff(fd.as_raw_fd(), &raw mut req) }
            .map_err(|errno| TapError::from_errno("ioctl TUNSETIFF", errno))?;

        let len = req.name.iter().position(|&b| b == 0).unwrap_or(IFNAMSIZ);
        let name = String::from_utf8_lossy(req.name.get(..len).unwrap_or_default()).into_owned();
        Ok(Self { fd, name })
    }

    /// The interface's name as the kernel reports it.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Injects one Ethernet frame (destination MAC first, no FCS) into the kernel, as if it
    /// had been received on the interface.
    ///
    /// # Errors
    ///
    /// [`TapError::Sys`] if the kernel rejects the write (`EIO` while the interface is down,
    /// `EINVAL` for a frame shorter than an Ethernet header or longer than the kernel
    /// accepts), [`TapError::ShortWrite`] if it took only part of the frame.
    pub fn send(&self, frame: &[u8]) -> Result<(), TapError> {
        loop {
            match nix::unistd::write(&self.fd, frame) {
                Ok(n) if n == frame.len() => return Ok(()),
                Ok(n) => {
                    return Err(TapError::ShortWrite {
                        written: n,
                        len: frame.len(),
                    })
                }
                Err(Errno::EINTR) => continue,
                Err(errno) => return Err(TapError::from_errno("write", errno)),
            }
        }
    }

    /// Waits up to `timeout` for the kernel to transmit a frame on the interface and reads it
    /// into `buf`. Returns its length, or `None` if no frame came in time.
    ///
    /// A frame longer than `buf` is cut to `buf.len()` bytes (the rest is lost), so `buf`
    /// should hold the interface's MTU plus 14 bytes of Ethernet header.
    ///
    /// # Errors
    ///
    /// [`TapError::Sys`] if `poll` or `read` fails, or the descriptor reports an error.
    pub fn recv(&self, buf: &mut [u8], timeout: Duration) -> Result<Option<usize>, TapError> {
        let deadline = Instant::now().checked_add(timeout);
        loop {
            if let Some(n) = self.try_recv(buf)? {
                return Ok(Some(n));
            }
            let remaining = match deadline {
                Some(d) => d.saturating_duration_since(Instant::now()),
                None => Duration::MAX,
            };
            if remaining.is_zero() {
                return Ok(None);
            }
            let mut fds = [PollFd::new(self.fd.as_fd(), PollFlags::POLLIN)];
            match poll(&mut fds, poll_timeout(remaining)) {
                // Timed out, or a frame may be ready: loop to read or to re-check the clock.
                Ok(_) => {}
                Err(Errno::EINTR) => continue,
                Err(errno) => return Err(TapError::from_errno("poll", errno)),
            }
            let revents = fds[0].revents().unwrap_or(PollFlags::empty());
            if revents.intersects(PollFlags::POLLERR | PollFlags::POLLHUP | PollFlags::POLLNVAL)
                && !revents.contains(PollFlags::POLLIN)
            {
                // The tun driver reports POLLERR once the interface has gone away.
                return Err(TapError::Sys {
                    op: "poll",
                    errno: Errno::EIO,
                });
            }
        }
    }

    /// Reads one frame the kernel has already transmitted, without waiting. Returns its
    /// length, or `None` if there is none.
    ///
    /// A frame longer than `buf` is cut to `buf.len()` bytes, as with [`recv`](Self::recv).
    ///
    /// # Errors
    ///
    /// [`TapError::Sys`] if `read` fails for another reason than having nothing to read.
    pub fn try_recv(&self, buf: &mut [u8]) -> Result<Option<usize>, TapError> {
        loop {
            match nix::unistd::read(&self.fd, buf) {
                Ok(n) => return Ok(Some(n)),
                Err(Errno::EAGAIN) => return Ok(None),
                Err(Errno::EINTR) => continue,
                Err(errno) => return Err(TapError::from_errno("read", errno)),
            }
        }
    }
}

impl AsFd for Tap {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

impl AsRawFd for Tap {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

/// `remaining` as a poll timeout, rounded up to whole milliseconds so that a short wait does
/// not become a busy loop of zero-millisecond polls.
fn poll_timeout(remaining: Duration) -> PollTimeout {
    let ms = remaining.as_nanos().div_ceil(1_000_000);
    PollTimeout::try_from(i32::try_from(ms).unwrap_or(i32::MAX)).unwrap_or(PollTimeout::MAX)
}

/// Rejects what the kernel's `dev_valid_name` rejects, before any system call.
fn validate_name(name: &str) -> Result<(), TapError> {
    let reason = if name.is_empty() {
        Some("empty")
    } else if name.len() > MAX_NAME_LEN {
        Some("longer than 15 bytes")
    } else if name == "." || name == ".." {
        Some("\".\" and \"..\" are reserved")
    } else if name
        .bytes()
        .any(|b| b == 0 || b == b'/' || b == b':' || b.is_ascii_whitespace())
    {
        Some("contains NUL, '/', ':' or whitespace")
    } else {
        None
    };
    match reason {
        Some(reason) => Err(TapError::InvalidName {
            name: name.to_owned(),
            reason,
        }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_bad_names_before_touching_the_kernel() {
        for bad in [
            "",
            ".",
            "..",
            "a/b",
            "a:b",
            "a b",
            "nul\0",
            "sixteen-chars-xx",
        ] {
            match Tap::open(bad) {
                Err(TapError::InvalidName { name, .. }) => assert_eq!(name, bad),
                other => panic!("{bad:?}: expected InvalidName, got {other:?}"),
            }
        }
        assert!(validate_name("fifteen-chars-x").is_ok());
        assert!(validate_name("tap%d").is_ok());
    }

    #[test]
    fn permission_errors_name_the_capability() {
        let e = TapError::from_errno("ioctl TUNSETIFF", Errno::EPERM);
        assert_eq!(e.errno(), Some(Errno::EPERM));
        let msg = e.to_string();
        assert!(msg.contains("ioctl TUNSETIFF"), "{msg}");
        assert!(msg.contains("CAP_NET_ADMIN"), "{msg}");
        assert!(matches!(
            TapError::from_errno("open /dev/net/tun", Errno::EACCES),
            TapError::PermissionDenied { .. }
        ));
        let e = TapError::from_errno("write", Errno::EIO);
        assert!(e.to_string().contains("write"), "{e}");
        assert!(e.to_string().contains("EIO"), "{e}");
    }

    #[test]
    fn poll_timeout_rounds_up() {
        assert_eq!(i32::from(poll_timeout(Duration::from_micros(1))), 1);
        assert_eq!(i32::from(poll_timeout(Duration::from_millis(250))), 250);
        assert_eq!(i32::from(poll_timeout(Duration::MAX)), i32::MAX);
    }
}
