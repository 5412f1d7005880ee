//! # mlx5-dpa
//!
//! A pure-Rust userspace driver for NVIDIA mlx5 NICs (ConnectX, BlueField) and the
//! BlueField-3 data-path accelerator (DPA). It reaches the NIC only through the kernel's DevX
//! interface and builds every firmware command itself; no NVIDIA library is needed.
//!
//! Layers, bottom up (each names only the ones below it; see `DESIGN.md`):
//!
//! - [`mlx5`]: PRM layouts (mlx5_ifc names, bit offsets), opcodes, status codes, typed commands,
//!   capabilities. Pure: no I/O, no `unsafe`. [`image`]: the DPA's image formats (the device
//!   ELF, its signature), beside it. The device model uses these, `sync` and the `devx` trait,
//!   nothing above.
//! - [`devx`]: the [`devx::Devx`] trait (how a mailbox reaches firmware) and its backends: the
//!   kernel's uverbs ioctl interface in pure Rust, and rdma-core through dlopen (feature
//!   `rdma-core`). The device model (`mlx5-sim`) is a third implementation.
//! - [`mem`], [`uar`], [`queues`]: DMA memory and keys, doorbells, rings.
//! - [`dpa`]: the FlexIO semantics of the DPA: capabilities, apps, processes, DPA memory and
//!   copies, event handlers, RPC, windows, outboxes, DPA-resident queues, message streams and
//!   command queues.
//! - [`doca`]: DOCA DPA over that FlexIO layer: contexts, sync events, kernel launch, DPA
//!   threads and notifications, completion contexts, async ops, RDMA from the DPA, hash
//!   tables, traces and fatal-error files.
//! - [`sync`]: the lock helper every layer uses (below all of them).
//!
//! # Example
//!
//! FlexIO's RPC sample in a few lines: a DPA process from a device ELF, and one call. Here
//! on the device model (`mlx5-sim`); on a BlueField-3 the context comes from
//! `devx::kernel::KernelDevx::open(Some("mlx5_0"))` instead, and the same code runs.
//!
//! ```
//! use mlx5_dpa::dpa::{Process, ProcessAttr};
//!
//! let device = mlx5_sim::Device::with_profile("bf3").expect("a profile of the model");
//! device.start_engine();
//! let ctx = device.open_devx();
//! let elf = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/fw-blobs/bin/rpc_calc.elf"));
//! let process = Process::create(&ctx, elf, &ProcessAttr::default())?;
//! assert_eq!(process.call("rpc_calculate", &[20, 22])?, 42);
//! # drop(process);
//! # device.stop_engine();
//! # Ok::<(), mlx5_dpa::dpa::DpaError>(())
//! ```

pub mod devx;
pub mod doca;
pub mod dpa;
pub mod gpu;
pub mod image;
pub mod mem;
pub mod mlx5;
pub mod queues;
pub mod sync;
pub mod uar;
