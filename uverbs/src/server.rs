//! The server: the process's served device, its file descriptors, and the system calls the
//! preloaded library hands it (`open`, `close`, `ioctl`, `write`, `read`, `mmap`, `munmap`).
//!
//! One [`Server`] per process, created when a uverbs device is first opened. It owns one model
//! device ([`mlx5_sim::Device`], engine thread started); the descriptors it gives out are in
//! the table of `fds` ([`crate::is_ours`] answers for any other descriptor with one load). A
//! `fork()` child makes its own device on its first open; the descriptors it inherited answer
//! `EIO`.

use std::os::fd::RawFd;
use std::sync::{Arc, Mutex, OnceLock};

use mlx5_dpa::sync::lock;
use mlx5_sim::Device;
use nix::errno::Errno;

use crate::config::Config;
use crate::context::Ucontext;
use crate::fds::{self, Served};

/// The process's server.
pub struct Server {
    config: Result<Config, String>,
    /// The device, and the process it was made in (a fork child makes its own).
    device: Mutex<Option<(u32, Device)>>,
}

static SERVER: OnceLock<Server> = OnceLock::new();

/// The process's server, created on first use from the environment ([`Config::from_env`]).
pub fn server() -> &'static Server {
    SERVER.get_or_init(|| Server {
        config: Config::from_env(),
        device: Mutex::new(None),
    })
}

/// The server if it was created (nothing is created here): for calls such as `munmap` that
/// concern it only if a device was opened.
pub fn try_server() -> Option<&'static Server> {
    SERVER.get()
}

/// The process's device lives until the process ends (the program never closes the server):
/// its captures are flushed when the program exits.
fn flush_captures_at_exit() {
    extern "C" fn flush() {
        if let Some(s) = try_server() {
            let dev = lock(&s.device).as_ref().map(|(_, d)| d.clone());
            if let Some(d) = dev {
                if let Err(e) = d.stop_captures() {
                    eprintln!("mlx5-sim uverbs: pcap: {e}");
                }
            }
        }
    }
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: registers a function without arguments that runs once at exit; it takes the
        // server's lock and the model's briefly and panics nowhere (errors are printed).
        unsafe { libc::atexit(flush) };
    });
}

/// When [`crate::config::ENV_STATS`] names a file, the device's port counters are written to it
/// when the program exits.
fn report_stats_at_exit() {
    extern "C" fn report() {
        let Some(path) = std::env::var_os(crate::config::ENV_STATS).filter(|p| !p.is_empty())
        else {
            return;
        };
        let Some(s) = try_server() else { return };
        let Some(d) = lock(&s.device).as_ref().map(|(_, d)| d.clone()) else {
            return;
        };
        let p = d.stats().port;
        let text = format!(
            "tx_frames {}\ntx_bytes {}\nrx_frames {}\nrx_bytes {}\nrx_delivered {}\n\
             rx_steering_drops {}\nrx_no_buffer {}\nrx_errors {}\ncq_overruns {}\n\
             cqe_sessions {}\n",
            p.tx_frames,
            p.tx_bytes,
            p.rx_frames,
            p.rx_bytes,
            p.rx_delivered,
            p.rx_steering_drops,
            p.rx_no_buffer,
            p.rx_errors,
            p.cq_overruns,
            p.cqe_sessions,
        );
        if let Err(e) = std::fs::write(&path, text) {
            eprintln!("mlx5-sim uverbs: stats {}: {e}", path.to_string_lossy());
        }
    }
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: registers a function without arguments that runs once at exit; it takes the
        // server's lock and the model's briefly and panics nowhere (errors are printed).
        unsafe { libc::atexit(report) };
    });
}

/// Whether `path` names a served uverbs device; its index.
pub fn uverbs_index(path: &[u8]) -> Option<u32> {
    let rest = path.strip_prefix(b"/dev/infiniband/uverbs")?;
    if rest.is_empty() || rest.len() > 3 || !rest.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(rest).ok()?.parse().ok()
}

impl Server {
    /// The settings.
    pub fn config(&self) -> Result<&Config, &str> {
        self.config.as_ref().map_err(String::as_str)
    }

    /// The device (created, its engine started, on first use in this process).
    ///
    /// # Errors
    /// `ENODEV` for a bad configuration or a port that could not be set up (the reason goes
    /// to standard error).
    pub fn model(&self) -> Result<Device, Errno> {
        let mut g = lock(&self.device);
        let pid = std::process::id();
        if let Some((p, d)) = g.as_ref() {
            if *p == pid {
                return Ok(d.clone());
            }
        }
        if let Some(old) = g.take() {
            // The parent's device, in a fork child: leaked, never dropped (module docs).
            std::mem::forget(old);
        }
        let dev = self.make_device()?;
        *g = Some((pid, dev.clone()));
        Ok(dev)
    }

    fn make_device(&self) -> Result<Device, Errno> {
        let cfg = self.config.as_ref().map_err(|e| {
            eprintln!("mlx5-sim uverbs: {e}");
            Errno::ENODEV
        })?;
        let dev = Device::with_profile(&cfg.profile).ok_or(Errno::ENODEV)?;
        dev.set_port_address(cfg.mac(), cfg.ip.octets());
        // The program's threads poll without yielding (rdma-core's CQ polls, perftest's
        // loops): a yielding engine would wait out their time slices (`EngineWait`).
        dev.set_engine_wait(mlx5_sim::EngineWait::Nap);
        if let Some(link) = cfg.link {
            let port = mlx5_sim::port::udp::UdpPort::open(link.local, link.peer).map_err(|e| {
                eprintln!("mlx5-sim uverbs: link {}: {e}", link.local);
                Errno::ENODEV
            })?;
            dev.set_port(mlx5_sim::PortMode::Udp(port));
        }
        if let Some(p) = &cfg.pcap {
            match std::fs::File::create(p) {
                Ok(f) => {
                    if let Err(e) = dev.capture(std::io::BufWriter::new(f)) {
                        eprintln!("mlx5-sim uverbs: pcap {}: {e}", p.display());
                    }
                    flush_captures_at_exit();
                }
                Err(e) => eprintln!("mlx5-sim uverbs: pcap {}: {e}", p.display()),
            }
        }
        if std::env::var_os(crate::config::ENV_STATS).is_some() {
            report_stats_at_exit();
        }
        dev.start_engine();
        Ok(dev)
    }

    /// `open(path, flags)` of uverbs device `index`: a descriptor for a new context.
    ///
    /// # Errors
    /// `ENODEV` past the served devices or with a bad configuration; the open's own errors
    /// (the device node must exist: the runner creates it).
    pub fn open(&self, index: u32, path: &std::ffi::CStr, flags: i32) -> Result<RawFd, Errno> {
        if index != 0 {
            return Err(Errno::ENODEV);
        }
        // The descriptor is the device node opened as a path: fstat shows the character device
        // the program expects, and every operation on it is served here.
        let mut oflags = libc::O_PATH;
        if flags & libc::O_CLOEXEC != 0 {
            oflags |= libc::O_CLOEXEC;
        }
        // SAFETY: `path` is a valid C string; O_PATH opens nothing of the device.
        let fd = unsafe { crate::real::open(path.as_ptr(), oflags, 0) };
        if fd < 0 {
            return Err(Errno::last());
        }
        let r = self
            .model()
            .and_then(|dev| fds::add(fd, Served::Uverbs(Arc::new(Ucontext::new(dev)))));
        if let Err(e) = r {
            // SAFETY: closes the descriptor opened just above.
            unsafe { crate::real::close(fd) };
            return Err(e);
        }
        Ok(fd)
    }

    /// Called before the real `close(fd)`: forgets a served descriptor (a context releases
    /// everything it holds, in reverse order). Returns whether it was served.
    pub fn close(&self, fd: RawFd) -> bool {
        match fds::remove(fd) {
            Some(Served::Uverbs(ctx)) => {
                ctx.close();
                true
            }
            Some(_) => true,
            None => false,
        }
    }

    /// `ioctl(fd, request, arg)` on a served descriptor.
    ///
    /// # Errors
    /// The kernel's errno for what it would refuse.
    pub fn ioctl(&self, fd: RawFd, request: u64, arg: u64) -> Result<i32, Errno> {
        match fds::lookup(fd) {
            Some(Served::Uverbs(ctx)) => {
                if request != mlx5_dpa::devx::kernel::abi::RDMA_VERBS_IOCTL {
                    return Err(Errno::ENOTTY);
                }
                crate::methods::dispatch(&ctx, arg)
            }
            Some(Served::Event(_)) => Err(Errno::ENOTTY),
            Some(Served::Stale) => Err(Errno::EIO),
            None => Err(Errno::EBADF),
        }
    }

    /// `write(fd, buf, len)`: a legacy uverbs command.
    ///
    /// # Errors
    /// As the kernel's `ib_uverbs_write`.
    pub fn write(&self, fd: RawFd, buf: u64, len: usize) -> Result<usize, Errno> {
        match fds::lookup(fd) {
            Some(Served::Uverbs(ctx)) => crate::write::write(&ctx, buf, len),
            Some(Served::Event(_)) => Err(Errno::EINVAL),
            Some(Served::Stale) => Err(Errno::EIO),
            None => Err(Errno::EBADF),
        }
    }

    /// `read(fd, buf, len)`: one event record.
    ///
    /// # Errors
    /// As the kernel's event file read.
    pub fn read(&self, fd: RawFd, buf: u64, len: usize) -> Result<usize, Errno> {
        match fds::lookup(fd) {
            Some(Served::Event(f)) => f.read(buf, len),
            Some(Served::Uverbs(_)) => Err(Errno::EINVAL),
            Some(Served::Stale) => Err(Errno::EIO),
            None => Err(Errno::EBADF),
        }
    }

    /// `mmap(NULL, len, prot, flags, fd, offset)` of a uverbs descriptor: a UAR page.
    ///
    /// # Errors
    /// `EINVAL` for an offset that names nothing or a mapping the kernel would refuse.
    pub fn mmap(
        &self,
        fd: RawFd,
        len: usize,
        prot: i32,
        flags: i32,
        offset: i64,
    ) -> Result<usize, Errno> {
        match fds::lookup(fd) {
            Some(Served::Uverbs(ctx)) => ctx.mmap(len, prot, flags, offset),
            Some(Served::Event(_)) => Err(Errno::ENODEV),
            Some(Served::Stale) => Err(Errno::EIO),
            None => Err(Errno::EBADF),
        }
    }

    /// `munmap(addr, len)`: a served UAR mapping is let go here (`Some`); pinned client memory
    /// is kept mapped until its registration goes; anything else goes to the real `munmap`
    /// (`None`).
    pub fn munmap(&self, addr: usize, len: usize) -> Option<Result<(), Errno>> {
        for c in fds::contexts() {
            if c.munmap(addr, len) {
                return Some(Ok(()));
            }
        }
        crate::user::unmap_unpinned(addr, len)
    }
}
