//! FlexIO's RPC sample (`flexio_process_call`), in Rust: load a device program into a DPA
//! process, call `rpc_calculate(a, b)` on the DPA and print the result.
//!
//! ```text
//! cargo run --example flexio_rpc                      # on the device model (BlueField-3)
//! cargo run --example flexio_rpc -- 44 55             # other operands
//! cargo run --example flexio_rpc -- --device mlx5_0   # on a BlueField-3 (DPA) device
//! ```
//!
//! The device side is `fw-blobs/src/rpc_calc.c`, FlexIO's sample function as written.
//! [`mlx5_dpa::dpa::Process::call`] packs `a` and `b` into an argument buffer in DPA memory and
//! runs a DPA thread at the runtime's RPC entry, whose generic unpack calls `rpc_calculate`
//! with them; it waits for the result, as `flexio_process_call` does.
//!
//! | FlexIO (C)                        | here                                   |
//! |-----------------------------------|----------------------------------------|
//! | `flexio_process_create`           | `Process::create(&dev, ELF, &attr)`    |
//! | `flexio_process_call(p, &f, &r, a, b)` | `process.call("rpc_calculate", &[a, b])` |
//! | `flexio_err_status_get`           | `process.err_status()`                 |
//! | `flexio_process_destroy`          | dropping the `Process`                 |
//!
//! `mlx5-dpa demo rpc A B` runs this file's [`run`].

use std::error::Error;
use std::io::Write;
use std::sync::Arc;

use mlx5_dpa::devx::{self, Devx};
use mlx5_dpa::dpa::{Process, ProcessAttr};

/// The device program (FlexIO's RPC sample, built by `fw-blobs/build.sh`).
pub const RPC_CALC_ELF: &[u8] = include_bytes!("../fw-blobs/bin/rpc_calc.elf");

/// Creates a process from `rpc_calc.elf` on `dev`, calls `rpc_calculate(a, b)` and prints
/// `Result: <sum>` to `out`; returns the sum.
///
/// # Errors
/// No DPA on the device, a firmware refusal, a DPA fault or a timeout.
pub fn run(
    dev: &Arc<dyn Devx>,
    a: u64,
    b: u64,
    out: &mut dyn Write,
) -> Result<u64, Box<dyn Error>> {
    // flexio_process_create(ctx, app, &attr, &process)
    let process = Process::create(dev, RPC_CALC_ELF, &ProcessAttr::default())?;
    // flexio_process_call(process, &rpc_calculate, &result, a, b)
    let result = process.call("rpc_calculate", &[a, b])?;
    writeln!(out, "Result: {result}")?;
    // flexio_process_destroy(process): on drop.
    Ok(result)
}

#[allow(dead_code)] // `mlx5-dpa demo rpc` includes this file for `run` only.
fn main() -> Result<(), Box<dyn Error>> {
    let mut device = None;
    let mut operands = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--device" => device = Some(args.next().ok_or("--device NAME")?),
            n => operands.push(
                n.parse::<u64>()
                    .map_err(|_| format!("unknown argument {n:?} (A B, --device NAME)"))?,
            ),
        }
    }
    let (a, b) = match operands[..] {
        [] => (44, 55),
        [a, b] => (a, b),
        _ => return Err("give two operands, or none for 44 55".into()),
    };
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
    let res = run(&dev, a, b, &mut std::io::stdout());
    drop(dev);
    if let Some(m) = model {
        m.stop_engine();
    }
    res.map(|_| ())
}
