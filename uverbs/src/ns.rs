//! The runner's private mount namespace: the served device's sysfs tree over `/sys/class` and
//! its character device in `/dev/infiniband`, seen by the program and its children only.
//!
//! After `unshare(CLONE_NEWNS)` and making every mount private (nothing propagates back to the
//! host), two staging trees are built on a tmpfs: a `class` directory holding a bind mount of
//! each entry of the real `/sys/class` plus the device's own entries ([`crate::sysfs`]), and a
//! `dev` directory holding a bind mount of each entry of the real `/dev` plus
//! `infiniband/uverbs0`. Each is then bind-mounted over the real one. The device node is made
//! with `mknod` (char 231:192, as Linux numbers the first uverbs device); where `mknod` is not
//! allowed, `/dev/null` is bound there instead and the sysfs `dev` file names its number, which
//! is all libibverbs checks (`fstat` of the opened node against sysfs).
//!
//! This needs the right to mount (root, or `CAP_SYS_ADMIN`); without it [`enter`] says so.

use std::ffi::CString;
use std::fs;
use std::io;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

use nix::mount::{mount, umount2, MntFlags, MsFlags};
use nix::sched::{unshare, CloneFlags};

use crate::config::{self, Config};

/// Why the namespace could not be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NsError {
    /// No right to make a mount namespace.
    #[error("a private mount namespace needs root (CAP_SYS_ADMIN): unshare(CLONE_NEWNS): {0}")]
    Unshare(nix::errno::Errno),
    /// A mount or file operation failed.
    #[error("{what}: {err}")]
    Setup { what: String, err: io::Error },
}

fn setup(what: impl Into<String>) -> impl FnOnce(io::Error) -> NsError {
    let what = what.into();
    move |err| NsError::Setup { what, err }
}

fn nix_io(e: nix::errno::Errno) -> io::Error {
    io::Error::from_raw_os_error(e as i32)
}

fn bind(from: &Path, to: &Path) -> Result<(), NsError> {
    mount(
        Some(from),
        to,
        None::<&str>,
        MsFlags::MS_BIND | MsFlags::MS_REC,
        None::<&str>,
    )
    .map_err(nix_io)
    .map_err(setup(format!(
        "bind {} on {}",
        from.display(),
        to.display()
    )))
}

/// The staging directory while the trees are built. It is detached and removed when this
/// goes (also when a step failed): the recursive binds over `/dev` and `/sys/class` keep the
/// tmpfs alive, so nothing of the runner is left on the host's `/tmp` even if it is killed.
struct Stage {
    path: PathBuf,
    mounted: bool,
}

impl Drop for Stage {
    fn drop(&mut self) {
        if self.mounted {
            let _ = umount2(&self.path, MntFlags::MNT_DETACH);
        }
        let _ = fs::remove_dir(&self.path);
    }
}

/// Mirrors every entry of `real` into `stage` (bind mounts; symlinks copied).
fn mirror(real: &Path, stage: &Path, skip: &[&str]) -> Result<(), NsError> {
    let entries = fs::read_dir(real).map_err(setup(format!("read {}", real.display())))?;
    for e in entries.flatten() {
        let name = e.file_name();
        if skip.iter().any(|s| name == *s) {
            continue;
        }
        let src = e.path();
        let dst = stage.join(&name);
        let meta = match fs::symlink_metadata(&src) {
            Ok(m) => m,
            Err(_) => continue,
        };
        let ft = meta.file_type();
        if ft.is_symlink() {
            if let Ok(t) = fs::read_link(&src) {
                let _ = std::os::unix::fs::symlink(t, &dst);
            }
        } else if ft.is_dir() {
            fs::create_dir_all(&dst).map_err(setup(format!("mkdir {}", dst.display())))?;
            bind(&src, &dst)?;
        } else {
            fs::write(&dst, b"").map_err(setup(format!("create {}", dst.display())))?;
            bind(&src, &dst)?;
        }
    }
    Ok(())
}

/// Enters a private mount namespace that shows the served device; the calling process (and
/// what it starts afterwards) sees it. Call it while the process has one thread.
///
/// # Errors
/// [`NsError::Unshare`] without the right to mount; [`NsError::Setup`] for a step that failed.
pub fn enter(cfg: &Config) -> Result<(), NsError> {
    unshare(CloneFlags::CLONE_NEWNS).map_err(NsError::Unshare)?;
    mount(
        None::<&str>,
        "/",
        None::<&str>,
        MsFlags::MS_REC | MsFlags::MS_PRIVATE,
        None::<&str>,
    )
    .map_err(nix_io)
    .map_err(setup("make / private"))?;
    let path = std::env::temp_dir().join(format!("mlx5-sim-ns-{}", std::process::id()));
    fs::create_dir_all(&path).map_err(setup(format!("mkdir {}", path.display())))?;
    let mut stage = Stage {
        path,
        mounted: false,
    };
    mount(
        Some("tmpfs"),
        &stage.path,
        Some("tmpfs"),
        MsFlags::MS_NOSUID,
        Some("mode=755,size=16m"),
    )
    .map_err(nix_io)
    .map_err(setup(format!("tmpfs on {}", stage.path.display())))?;
    stage.mounted = true;

    // /dev with infiniband/uverbs0.
    let dev = stage.path.join("dev");
    fs::create_dir_all(dev.join("infiniband")).map_err(setup("mkdir dev/infiniband"))?;
    mirror(Path::new("/dev"), &dev, &["infiniband"])?;
    let node = dev.join("infiniband/uverbs0");
    let (major, minor) = make_node(&node)?;
    bind(&dev, Path::new("/dev"))?;

    // /sys/class with infiniband, infiniband_verbs and the PCI function.
    let class = stage.path.join("class");
    fs::create_dir_all(&class).map_err(setup("mkdir class"))?;
    mirror(
        Path::new("/sys/class"),
        &class,
        &[
            "infiniband",
            "infiniband_verbs",
            "infiniband_mad",
            crate::sysfs::PCI_DIR,
        ],
    )?;
    crate::sysfs::write_tree(&class, cfg, major, minor).map_err(setup("write the sysfs tree"))?;
    bind(&class, Path::new("/sys/class"))?;
    drop(stage);
    Ok(())
}

/// The device node: `mknod` if allowed, else `/dev/null` bound there. Its number.
fn make_node(node: &Path) -> Result<(u32, u32), NsError> {
    let c = CString::new(node.as_os_str().as_encoded_bytes()).map_err(|_| NsError::Setup {
        what: "device node path".into(),
        err: io::Error::from(io::ErrorKind::InvalidInput),
    })?;
    let rdev = libc::makedev(config::UVERBS_MAJOR, config::UVERBS_MINOR);
    // SAFETY: `c` is a valid C string; mknod creates one file.
    let rc = unsafe { libc::mknod(c.as_ptr(), libc::S_IFCHR | 0o666, rdev) };
    if rc == 0 {
        return Ok((config::UVERBS_MAJOR, config::UVERBS_MINOR));
    }
    fs::write(node, b"").map_err(setup("create the device node"))?;
    bind(Path::new("/dev/null"), node)?;
    let m = fs::metadata("/dev/null").map_err(setup("stat /dev/null"))?;
    if !m.file_type().is_char_device() {
        return Err(NsError::Setup {
            what: "/dev/null is not a character device".into(),
            err: io::Error::from(io::ErrorKind::Unsupported),
        });
    }
    let r = m.rdev();
    Ok((libc::major(r), libc::minor(r)))
}
