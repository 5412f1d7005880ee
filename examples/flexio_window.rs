//! FlexIO's window sample (`flexio_window_create`), in Rust: the DPA overwrites a host buffer
//! through a window, and the host prints the buffer before and after.
//!
//! ```text
//! cargo run --example flexio_window                      # on the device model (BlueField-3)
//! cargo run --example flexio_window -- --device mlx5_0   # on a BlueField-3 (DPA) device
//! ```
//!
//! The device side is `fw-blobs/src/window_writer.c`: `window_write(args_daddr)` reads an
//! argument block (`fw-blobs/src/window_writer.h`) from DPA memory, selects the window and the
//! host buffer's key with `flexio_dev_window_config`, gets a DPA pointer to the host address
//! with `flexio_dev_window_ptr_acquire` and fills the bytes there.
//!
//! | FlexIO (C)                                   | here                                          |
//! |----------------------------------------------|-----------------------------------------------|
//! | `flexio_process_create`                      | `Process::create(&dev, ELF, &attr)`           |
//! | `flexio_process_get_pd`                      | `process.pd()`                                |
//! | `ibv_reg_mr(pd, buf, len, access)` (64 B aligned) | `MemoryRegion::alloc(&dev, pd, len, access)` |
//! | `flexio_window_create(process, pd, &window)` | `process.window(pd)`                          |
//! | `flexio_window_get_id`, `mr->lkey`, `buf`    | `window.host_buf(mr.mkey(), offset, len)`     |
//! | `flexio_buf_dev_alloc` + `flexio_host2dev_memcpy` | `process.alloc(n)` + `process.copy_to_dev` |
//! | `flexio_process_call(p, &window_write, &ret, daddr)` | `process.call_raw("window_write", daddr)` |
//! | `flexio_window_destroy`, `flexio_process_destroy` | dropping the `Window` and the `Process`  |
//!
//! `window_writer.elf`'s entries take one argument, the argument block's address in `a0`, so
//! the call is [`Process::call_raw`] (FlexIO's `flexio_func_register`, no packing).
//!
//! `mlx5-dpa demo window` runs this file's [`run`].

use std::error::Error;
use std::io::Write;
use std::sync::Arc;

use mlx5_dpa::devx::{self, Devx};
use mlx5_dpa::dpa::window::WindowBuf;
use mlx5_dpa::dpa::{Process, ProcessAttr};
use mlx5_dpa::mem::{Access, MemoryRegion};

/// The device program (built by `fw-blobs/build.sh`).
pub const WINDOW_WRITER_ELF: &[u8] = include_bytes!("../fw-blobs/bin/window_writer.elf");

/// Bytes of the host buffer the DPA overwrites.
const LEN: usize = 64;
/// `WINDOW_WRITER_MODE_TEXT`: "Hello from DPA <pattern>\n" repeated (window_writer.h).
const MODE_TEXT: u32 = 1;
/// The number the device prints into its lines.
const PATTERN: u32 = 3;

/// `struct window_writer_args` (window_writer.h): 48 bytes, little-endian.
pub fn window_writer_args(b: &WindowBuf, pattern: u32, mode: u32) -> [u8; 48] {
    let mut a = [0u8; 48];
    a[0..4].copy_from_slice(&b.window_id.to_le_bytes());
    a[4..8].copy_from_slice(&b.mkey.0.to_le_bytes());
    a[8..16].copy_from_slice(&b.haddr.to_le_bytes());
    a[16..24].copy_from_slice(&b.len.to_le_bytes());
    a[24..28].copy_from_slice(&pattern.to_le_bytes());
    a[28..32].copy_from_slice(&mode.to_le_bytes());
    a
}

/// Creates a process from `window_writer.elf` on `dev`, lets it overwrite a 64-byte host
/// buffer through a window, and prints the buffer before and after to `out`; returns the
/// buffer's bytes after the write.
///
/// # Errors
/// No DPA on the device, a firmware refusal, a DPA fault or a timeout.
pub fn run(dev: &Arc<dyn Devx>, out: &mut dyn Write) -> Result<Vec<u8>, Box<dyn Error>> {
    run_with(dev, out, &mut |_, _| Ok(()))
}

/// As [`run`], calling `on_process` with the process (and `out`) once it exists
/// (`mlx5-dpa demo window --gdb` attaches a debugger there).
///
/// # Errors
/// As [`run`], and what `on_process` returns.
#[allow(clippy::type_complexity)]
pub fn run_with(
    dev: &Arc<dyn Devx>,
    out: &mut dyn Write,
    on_process: &mut dyn FnMut(&Process, &mut dyn Write) -> Result<(), Box<dyn Error>>,
) -> Result<Vec<u8>, Box<dyn Error>> {
    // flexio_process_create(ctx, app, &attr, &process)
    let process = Process::create(dev, WINDOW_WRITER_ELF, &ProcessAttr::default())?;
    on_process(&process, out)?;
    // ibv_reg_mr(flexio_process_get_pd(process), buf, LEN, IBV_ACCESS_LOCAL_WRITE): the
    // buffer is page-aligned, so 64-byte aligned as windows need.
    let mr = MemoryRegion::alloc(dev, process.pd(), LEN, Access::LOCAL_WRITE)?;
    let before: Vec<u8> = b"This host buffer has not been touched by the DPA yet.  "
        .iter()
        .copied()
        .cycle()
        .take(LEN)
        .collect();
    mr.write(0, &before)?;
    writeln!(out, "Before: \"{}\"", before.escape_ascii())?;

    // flexio_window_create(process, pd, &window)
    let window = process.window(process.pd())?;
    // What the device needs: window id, key and host address of the buffer.
    let target = window.host_buf(mr.mkey(), 0, LEN)?;
    // flexio_buf_dev_alloc + flexio_host2dev_memcpy of the argument block.
    let args = process.alloc(48)?;
    process.copy_to_dev(
        args.daddr(),
        &window_writer_args(&target, PATTERN, MODE_TEXT),
    )?;
    // flexio_process_call(process, &window_write, &ret, args_daddr)
    let written = process.call_raw("window_write", args.daddr())?;
    if written != LEN as u64 {
        return Err(format!("window_write returned {written:#x}, expected {LEN}").into());
    }

    let mut after = vec![0u8; LEN];
    mr.read(0, &mut after)?;
    writeln!(out, "After:  \"{}\"", after.escape_ascii())?;
    // flexio_window_destroy, flexio_process_destroy: on drop (window first, then the key).
    drop(window);
    Ok(after)
}

/// FlexIO's window sample: DPA code writes host memory through a window.
#[derive(clap::Parser)]
struct Args {
    /// An RDMA device (e.g. mlx5_0); without it, the device model
    #[arg(long, value_name = "NAME")]
    device: Option<String>,
}

#[allow(dead_code)] // `mlx5-dpa demo window` includes this file for `run` only.
fn main() -> Result<(), Box<dyn Error>> {
    let Args { device } = clap::Parser::parse();
    let mut model = None;
    let dev: Arc<dyn Devx> = match device {
        Some(name) => devx::kernel::KernelDevx::open(Some(&name))?,
        None => {
            let m = mlx5_sim::Device::with_profile("bf3").ok_or("no bf3 profile")?;
            // The model's engine runs the DPA threads and the copies' RDMA traffic.
            m.start_engine();
            let dev = m.open_devx();
            model = Some(m);
            dev
        }
    };
    let res = run(&dev, &mut std::io::stdout());
    drop(dev);
    if let Some(m) = model {
        m.stop_engine();
    }
    res.map(|_| ())
}
