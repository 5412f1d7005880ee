//! FlexIO's multithread sample (`flexio_cmdq`), in Rust: multiply two 5x5 matrices on the
//! DPA with one command-queue task per cell of the product, run by several worker threads.
//!
//! ```text
//! cargo run --example flexio_multithread                      # on the device model (BlueField-3)
//! cargo run --example flexio_multithread -- --workers 8       # more workers
//! cargo run --example flexio_multithread -- --device mlx5_0   # on a BlueField-3 (DPA) device
//! ```
//!
//! The device side is `fw-blobs/src/matmul.c`: `matmul_cell(task)` computes
//! `C[row][col] = sum_k A[row][k] * B[k][col]` (u64, wrapping) for the task block at `task`
//! (`fw-blobs/src/matmul.h`). The workers are `flexio_cmdq_dev_worker` from the runtime every
//! fw-blobs program links (`fw-blobs/runtime/cmdq.c`, contract in
//! `fw-blobs/include/mlx5_dpa_cmdq.h`): each claims tasks from a ring in DPA memory and calls
//! them. A, B, C and the 25 task blocks live in DPA memory; the host fills them and reads C
//! back with copies, as the FlexIO sample does with `flexio_host2dev_memcpy`.
//!
//! | FlexIO (C)                                     | here                                      |
//! |------------------------------------------------|-------------------------------------------|
//! | `flexio_process_create`                        | `Process::create(&dev, ELF, &attr)`       |
//! | `flexio_buf_dev_alloc` + `flexio_host2dev_memcpy` | `process.alloc(len)` + `process.copy_to_dev(daddr, bytes)` |
//! | `flexio_cmdq_create(p, &attr{workers, batch_size, PENDING}, &q)` | `process.cmdq(&CmdqAttr::new(workers, batch, CmdqState::Pending))` |
//! | `flexio_cmdq_task_add(q, &matmul_cell, task)`  | `q.task_add("matmul_cell", task_daddr)`   |
//! | `flexio_cmdq_state_running(q)`                 | `q.state_running()`                       |
//! | `while (!flexio_cmdq_is_empty(q));`            | `q.wait_empty(timeout)` (bounded)         |
//! | `flexio_cmdq_destroy(q)`                       | dropping the `CmdQueue`                   |
//! | `flexio_process_destroy`                       | dropping the `Process`                    |
//!
//! The CLI can include this file's [`run`] with `#[path]`.

use std::error::Error;
use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use mlx5_dpa::devx::{self, Devx};
use mlx5_dpa::dpa::cmdq::{CmdqAttr, CmdqState};
use mlx5_dpa::dpa::{Process, ProcessAttr};

/// The device program (the matmul worker, built by `fw-blobs/build.sh`).
pub const MATMUL_ELF: &[u8] = include_bytes!("../fw-blobs/bin/matmul.elf");
/// Matrix size of the sample.
pub const N: usize = 5;
/// Worker threads unless told otherwise.
pub const DEFAULT_WORKERS: u32 = 4;
/// Longest wait for the 25 tasks.
pub const TIMEOUT: Duration = Duration::from_secs(30);
/// Bytes of a `struct matmul_task` (`fw-blobs/src/matmul.h`).
const TASK_BYTES: usize = 48;

type Matrix = [[u64; N]; N];

fn bytes_of(m: &Matrix) -> Vec<u8> {
    m.iter().flatten().flat_map(|v| v.to_le_bytes()).collect()
}

fn product(a: &Matrix, b: &Matrix) -> Matrix {
    let mut c = [[0u64; N]; N];
    for (r, row) in c.iter_mut().enumerate() {
        for (col, cell) in row.iter_mut().enumerate() {
            *cell = (0..N).fold(0u64, |s, k| s.wrapping_add(a[r][k].wrapping_mul(b[k][col])));
        }
    }
    c
}

fn print(out: &mut dyn Write, name: &str, m: &Matrix) -> std::io::Result<()> {
    writeln!(out, "{name}:")?;
    for row in m {
        let cells: Vec<String> = row.iter().map(|v| format!("{v:6}")).collect();
        writeln!(out, "  {}", cells.join(" "))?;
    }
    Ok(())
}

/// Builds A and B, computes C = A x B on the DPA of `dev` with one command-queue task per cell
/// over `workers` workers, prints A, B and C to `out`, checks C against the host's product and
/// returns it.
///
/// # Errors
/// No DPA on the device, a firmware refusal, a DPA fault, a timeout, or a C that differs from
/// the host's product.
pub fn run(
    dev: &Arc<dyn Devx>,
    workers: u32,
    out: &mut dyn Write,
) -> Result<[[u64; N]; N], Box<dyn Error>> {
    run_with(dev, workers, out, &mut |_, _| Ok(()))
}

/// As [`run`], calling `on_process` with the process (and `out`) once it exists
/// (`mlx5-dpa demo multithread --gdb` attaches a debugger there).
///
/// # Errors
/// As [`run`], and what `on_process` returns.
#[allow(clippy::type_complexity)]
pub fn run_with(
    dev: &Arc<dyn Devx>,
    workers: u32,
    out: &mut dyn Write,
    on_process: &mut dyn FnMut(&Process, &mut dyn Write) -> Result<(), Box<dyn Error>>,
) -> Result<[[u64; N]; N], Box<dyn Error>> {
    let mut a = [[0u64; N]; N];
    let mut b = [[0u64; N]; N];
    for i in 0..N {
        for j in 0..N {
            a[i][j] = ((3 * i + 7 * j + 1) % 10) as u64;
            b[i][j] = ((5 * i + 2 * j + 3) % 9) as u64;
        }
    }

    // flexio_process_create(ctx, app, &attr, &process)
    let process = Process::create(dev, MATMUL_ELF, &ProcessAttr::default())?;
    on_process(&process, out)?;
    // flexio_buf_dev_alloc + flexio_host2dev_memcpy: A and B in; C zeroed.
    let matrix_bytes = (8 * N * N) as u64;
    let (da, db, dc) = (
        process.alloc(matrix_bytes)?,
        process.alloc(matrix_bytes)?,
        process.alloc(matrix_bytes)?,
    );
    process.copy_to_dev(da.daddr(), &bytes_of(&a))?;
    process.copy_to_dev(db.daddr(), &bytes_of(&b))?;
    process.memset(dc.daddr(), 0, 8 * N * N)?;
    // One task block per cell: A, B, C, n, row, col.
    let tasks = process.alloc((TASK_BYTES * N * N) as u64)?;
    let mut blocks = Vec::with_capacity(TASK_BYTES * N * N);
    for row in 0..N as u32 {
        for col in 0..N as u32 {
            let mut t = [0u8; TASK_BYTES];
            t[0..8].copy_from_slice(&da.daddr().to_le_bytes());
            t[8..16].copy_from_slice(&db.daddr().to_le_bytes());
            t[16..24].copy_from_slice(&dc.daddr().to_le_bytes());
            t[24..28].copy_from_slice(&(N as u32).to_le_bytes());
            t[28..32].copy_from_slice(&row.to_le_bytes());
            t[32..36].copy_from_slice(&col.to_le_bytes());
            blocks.extend_from_slice(&t);
        }
    }
    process.copy_to_dev(tasks.daddr(), &blocks)?;

    // flexio_cmdq_create(process, &attr{workers, batch_size = one row, PENDING}, &cmdq)
    let mut cmdq = process.cmdq(&CmdqAttr::new(workers, N as u32, CmdqState::Pending))?;
    // flexio_cmdq_task_add(cmdq, matmul_cell, task) for each cell.
    for cell in 0..N * N {
        cmdq.task_add("matmul_cell", tasks.daddr() + (TASK_BYTES * cell) as u64)?;
    }
    // flexio_cmdq_state_running(cmdq), then wait until flexio_cmdq_is_empty(cmdq).
    cmdq.state_running()?;
    cmdq.wait_empty(TIMEOUT)?;
    let counters = cmdq.counters()?;
    let per_worker = cmdq.worker_activations()?;
    // flexio_cmdq_destroy(cmdq)
    drop(cmdq);

    let mut raw = vec![0u8; 8 * N * N];
    process.copy_from_dev(dc.daddr(), &mut raw)?;
    let mut c = [[0u64; N]; N];
    for (i, w) in raw.chunks_exact(8).enumerate() {
        c[i / N][i % N] = u64::from_le_bytes(w.try_into()?);
    }
    print(out, "A", &a)?;
    print(out, "B", &b)?;
    print(out, "C = A x B (DPA)", &c)?;
    writeln!(
        out,
        "{} tasks on {workers} workers: {} completed, {} errors, worker activations {per_worker:?}",
        counters.submitted, counters.completed, counters.errors
    )?;
    let expect = product(&a, &b);
    if c != expect || counters.errors != 0 {
        return Err(format!("C differs from the host's product {expect:?}").into());
    }
    writeln!(out, "C matches the host's product")?;
    // flexio_buf_dev_free, flexio_process_destroy: on drop.
    Ok(c)
}

/// FlexIO's multithread sample: matrix cells computed by several DPA threads.
#[derive(clap::Parser)]
struct Args {
    /// An RDMA device (e.g. mlx5_0); without it, the device model
    #[arg(long, value_name = "NAME")]
    device: Option<String>,
    /// DPA worker threads
    #[arg(long, value_name = "N", default_value_t = DEFAULT_WORKERS,
          value_parser = clap::value_parser!(u32).range(1..))]
    workers: u32,
}

#[allow(dead_code)] // The CLI includes this file for `run` only.
fn main() -> Result<(), Box<dyn Error>> {
    let Args { device, workers } = clap::Parser::parse();
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
    let res = run(&dev, workers, &mut std::io::stdout());
    drop(dev);
    if let Some(m) = model {
        m.stop_engine();
    }
    res.map(|_| ())
}
