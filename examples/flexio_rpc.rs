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
//! | `flexio_msg_stream_create`        | `MsgStream::create(&process, &attr)`   |
//! | `flexio_process_call(p, &f, &r, a, b)` | `process.call("rpc_calculate", &[a, b])` |
//! | `flexio_err_status_get`           | `process.err_status()`                 |
//! | `flexio_msg_stream_destroy`, `flexio_process_destroy` | `stream.close()`, dropping the `Process` |
//!
//! It prints what the seed (`dpa-development-flexio-sdk.txt`, "flexio_rpc") shows, the
//! device's own line coming through a message stream:
//!
//! ```text
//! Welcome to 'Flex IO RPC' sample
//! Registered on device mlx5-sim (bf3)
//! Calculate: 44 + 55 = 99
//! Result: 99
//! Flex IO RPC sample is done
//! ```
//!
//! `mlx5-dpa demo rpc A B [--app-elf FILE]` runs this file's [`run`]; `--app-elf` takes any
//! device build of the sample, such as FlexIO's public `flexio_rpc_dev.c` built with
//! `mlx5-dpa cc`.

use std::error::Error;
use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use mlx5_dpa::devx::{self, Devx};
use mlx5_dpa::dpa::msg_stream::{
    MsgLevel, MsgOutput, MsgStream, MsgStreamAttr, SyncMode, DEFAULT_STREAM_ID,
};
use mlx5_dpa::dpa::{Process, ProcessAttr};

/// The device program (FlexIO's RPC sample, built by `fw-blobs/build.sh`).
pub const RPC_CALC_ELF: &[u8] = include_bytes!("../fw-blobs/bin/rpc_calc.elf");

/// Longest wait for the device's message after the call returned.
const MSG_WAIT: Duration = Duration::from_secs(5);

/// Creates a process from `app` (a device build of the sample) on `dev`, named
/// `device_name` in the output, sets up the default message stream, calls
/// `rpc_calculate(a, b)` and prints as the seed shows to `out`; returns the sum.
///
/// # Errors
/// No DPA on the device, a firmware refusal, a DPA fault or a timeout.
pub fn run(
    dev: &Arc<dyn Devx>,
    device_name: &str,
    a: u64,
    b: u64,
    app: &[u8],
    out: &mut dyn Write,
) -> Result<u64, Box<dyn Error>> {
    run_with(
        dev,
        device_name,
        (a, b),
        app,
        &ProcessAttr::default(),
        out,
        &mut |_, _| Ok(()),
    )
}

/// As [`run`], calling `on_process` with the process (and `out`) once it exists, before the
/// call (`mlx5-dpa demo rpc --gdb` attaches a debugger there).
///
/// # Errors
/// As [`run`], and what `on_process` returns.
#[allow(clippy::type_complexity)]
pub fn run_with(
    dev: &Arc<dyn Devx>,
    device_name: &str,
    (a, b): (u64, u64),
    app: &[u8],
    attr: &ProcessAttr,
    out: &mut dyn Write,
    on_process: &mut dyn FnMut(&Process, &mut dyn Write) -> Result<(), Box<dyn Error>>,
) -> Result<u64, Box<dyn Error>> {
    writeln!(out, "Welcome to 'Flex IO RPC' sample")?;
    writeln!(out, "Registered on device {device_name}")?;
    // flexio_process_create(ctx, app, &attr, &process)
    let process = Process::create(dev, app, attr)?;
    on_process(&process, out)?;
    // flexio_msg_stream_create(process, &attr, stdout, NULL, &stream): the device's prints
    // are collected here and written to `out` in order with the host's lines.
    let mut stream = MsgStream::create(
        &process,
        &MsgStreamAttr {
            sync_mode: SyncMode::Batch,
            ..MsgStreamAttr::new(DEFAULT_STREAM_ID, MsgLevel::Info, MsgOutput::Collect)
        },
    )?;
    // flexio_process_call(process, &rpc_calculate, &result, a, b)
    let result = process.call("rpc_calculate", &[a, b])?;
    // The device posted its line before returning: collect it.
    stream.flush(MSG_WAIT)?;
    for m in stream.take_messages() {
        write!(out, "{m}")?;
    }
    writeln!(out, "Result: {result}")?;
    // flexio_msg_stream_destroy(stream), flexio_process_destroy(process)
    stream.close()?;
    drop(process);
    writeln!(out, "Flex IO RPC sample is done")?;
    Ok(result)
}

/// FlexIO's RPC sample: `rpc_calculate(A, B)` called on the DPA.
#[derive(clap::Parser)]
struct Args {
    /// An RDMA device (e.g. mlx5_0); without it, the device model
    #[arg(long, value_name = "NAME")]
    device: Option<String>,
    /// The two operands (44 and 55 when none are given)
    #[arg(num_args = 2, value_names = ["A", "B"])]
    operands: Vec<u64>,
}

#[allow(dead_code)] // `mlx5-dpa demo rpc` includes this file for `run` only.
fn main() -> Result<(), Box<dyn Error>> {
    let Args { device, operands } = clap::Parser::parse();
    let (a, b) = match operands[..] {
        [a, b] => (a, b),
        _ => (44, 55),
    };
    let mut model = None;
    let dev: Arc<dyn Devx> = match device {
        Some(ref name) => devx::kernel::KernelDevx::open(Some(name))?,
        None => {
            let m = mlx5_sim::Device::with_profile("bf3").ok_or("no bf3 profile")?;
            // The model's engine runs the DPA threads and the copies' RDMA traffic.
            m.start_engine();
            let dev = m.open_devx();
            model = Some(m);
            dev
        }
    };
    let name = device.unwrap_or_else(|| "mlx5-sim (bf3)".into());
    let res = run(&dev, &name, a, b, RPC_CALC_ELF, &mut std::io::stdout());
    drop(dev);
    if let Some(m) = model {
        m.stop_engine();
    }
    res.map(|_| ())
}
