//! # mlx5-sim-uverbs
//!
//! The device model as a Linux RDMA device: the kernel's uverbs ABI served to the program it is
//! loaded into, so unmodified rdma-core (libibverbs, libmlx5), perftest, rdma-core's own tests
//! and this project's pure-Rust kernel backend open the model as they would open a BlueField-3.
//!
//! - [`server`]: the process's device and the system calls the preloaded library hands over
//!   (`open`, `close`, `ioctl`, `write`, `read`, `mmap`, `munmap` of `/dev/infiniband/uverbsN`
//!   and of the event files it gave out);
//! - the uverbs ABI (ioctl framing, write commands, mlx5 driver data) is the driver's
//!   declaration (`mlx5_dpa::devx::kernel::abi`): the kernel backend emits it, this crate parses
//!   it;
//! - what the kernel does for each command, done in PRM commands on the model's firmware as
//!   Linux's `mlx5_ib` does it on a NIC (`verbs`, `methods`, `device`);
//! - [`sysfs`] and [`ns`]: the tree and the private mount namespace the runner (`mlx5-dpa run`)
//!   sets up, [`netdev`] the port's network interface; [`config`]: what the runner tells the
//!   server.
//!
//! The interposed C functions live in the `mlx5-sim-preload` crate (the `cdylib` that is
//! preloaded), so that linking this crate into a program changes nothing of its libc.
//!
//! # Example
//!
//! The sysfs tree rdma-core discovers the device by, written into a scratch directory (the
//! runner bind-mounts it over `/sys/class` in the program's namespace):
//!
//! ```
//! use mlx5_sim_uverbs::{config::Config, sysfs};
//!
//! let class = std::env::temp_dir().join(format!("uverbs-doc-{}", std::process::id()));
//! sysfs::write_tree(&class, &Config::default(), 231, 192)?;
//! let dev = std::fs::read_to_string(class.join("infiniband_verbs/uverbs0/dev"))?;
//! assert_eq!(dev.trim(), "231:192");
//! # std::fs::remove_dir_all(&class)?;
//! # Ok::<(), std::io::Error>(())
//! ```

pub mod config;
mod context;
mod device;
pub mod event;
mod fds;
mod flow;
#[cfg(feature = "test-utils")]
pub mod fuzzing;
mod ioctl;
mod methods;
pub mod netdev;
pub mod ns;
mod pump;
mod real;
pub mod server;
pub mod sysfs;
pub mod user;
mod verbs;
mod wio;
mod write;

pub use config::Config;
pub use fds::is_ours;
pub use server::{server, uverbs_index};
