//! `mlx5-dpa coredump`: DPA process coredumps (DPA_PROCESS_COREDUMP, FlexIO
//! `flexio_coredump_create`) decoded, and written as ELF core files GDB opens.
//!
//! - `coredump show IMAGE [--json]`: decode an image as the firmware returned it (saved with
//!   `coredump rpc --image` or `Process::coredump_raw`).
//! - `coredump core IMAGE -o OUT`: the image as an ELF core file:
//!   `gdb-multiarch app.elf OUT` shows the faulting function, the registers and the stack.
//! - `coredump rpc ELF FUNCTION [--args A,B] [--image FILE] [--core FILE]`: load the DPA
//!   program on the device (the model without hardware), call FUNCTION through FlexIO's RPC;
//!   when the call fails the process, decode its coredump and save it as asked.
//!
//! The image format is provisional (see `mlx5_dpa::dpa::coredump`); the core file is the
//! standard one.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use mlx5_dpa::devx::Devx;
use mlx5_dpa::dpa::coredump::{Coredump, GPR_NAMES};
use mlx5_dpa::dpa::{DpaError, Process, ProcessAttr};

use crate::input::{self, InputError};

/// Most bytes of a coredump image the tool reads.
const MAX_IMAGE: u64 = 16 << 20;

/// `coredump` subcommands.
#[derive(clap::Subcommand, Debug)]
pub enum CoredumpCmd {
    /// Decode a coredump image.
    Show {
        /// The image, as DPA_PROCESS_COREDUMP returned it.
        image: PathBuf,
        /// One JSON object: cause, pc, registers, regions, stack.
        #[arg(long)]
        json: bool,
    },
    /// Write a coredump image as an ELF core file (open it with `gdb-multiarch APP.elf OUT`).
    Core {
        /// The image, as DPA_PROCESS_COREDUMP returned it.
        image: PathBuf,
        /// The core file to write.
        #[arg(short, long, value_name = "FILE")]
        out: PathBuf,
    },
    /// Call FUNCTION of a DPA program on the device (FlexIO RPC); when the call fails the
    /// process, show its coredump and save it.
    Rpc {
        /// The DPA device ELF (or a host program carrying it: see --app).
        elf: PathBuf,
        /// The function to call (a `__dpa_rpc__` function or any entry of at most eight
        /// integer arguments).
        function: String,
        /// Arguments: comma-separated integers (decimal, -decimal or 0x hex), at most 8.
        #[arg(
            long,
            value_name = "A,B,...",
            value_delimiter = ',',
            allow_hyphen_values = true
        )]
        args: Vec<String>,
        /// The application's name in a host program that carries several.
        #[arg(long, value_name = "NAME")]
        app: Option<String>,
        /// Save the coredump image here.
        #[arg(long, value_name = "FILE")]
        image: Option<PathBuf>,
        /// Write the coredump as an ELF core file here.
        #[arg(long, value_name = "FILE")]
        core: Option<PathBuf>,
    },
}

/// Why a `coredump` command failed.
#[derive(Debug, thiserror::Error)]
pub enum CoredumpCmdError {
    /// `coredump rpc`: the call faulted, as asked (its coredump was printed and saved); the
    /// exit status says so.
    #[error("{function} faulted: {cause} (its coredump is above)")]
    Faulted { function: String, cause: String },
    #[error(transparent)]
    Read(#[from] InputError),
    #[error("{path}: {source}")]
    Decode {
        path: String,
        source: mlx5_dpa::dpa::coredump::CoredumpError,
    },
    #[error("cannot write {path}: {source}")]
    Write {
        path: String,
        source: std::io::Error,
    },
    #[error(transparent)]
    Vm(#[from] crate::vm::VmError),
    #[error("{0}")]
    App(String),
    #[error("{0}")]
    Dpa(#[from] DpaError),
}

fn write_file(path: &std::path::Path, bytes: &[u8]) -> Result<(), CoredumpCmdError> {
    std::fs::write(path, bytes).map_err(|source| CoredumpCmdError::Write {
        path: path.display().to_string(),
        source,
    })
}

fn read_image(path: &std::path::Path) -> Result<Coredump, CoredumpCmdError> {
    let bytes = input::read_bounded(path, MAX_IMAGE)?;
    Coredump::parse(&bytes).map_err(|source| CoredumpCmdError::Decode {
        path: path.display().to_string(),
        source,
    })
}

/// `coredump show --json`: the dump's header, registers by ABI name and its memory regions.
#[derive(serde::Serialize)]
struct DumpJson {
    version: u16,
    cause: String,
    cause_kind: String,
    signal: u16,
    process: u32,
    thread: u32,
    eu: u16,
    pc: u64,
    fault_addr: u64,
    insn: u32,
    device_code: u32,
    instructions: u64,
    activation: u64,
    error_syndrome: u32,
    /// Keyed by ABI name (`zero`, `ra`, ...), in register order.
    registers: serde_json::Map<String, serde_json::Value>,
    regions: Vec<RegionJson>,
    regions_truncated: bool,
    stack_addr: u64,
    stack_len: usize,
}

#[derive(serde::Serialize)]
struct RegionJson {
    base: u64,
    size: u64,
    perms: String,
    kind: String,
    object: u32,
}

/// The dump as one JSON object.
fn to_json(d: &Coredump) -> DumpJson {
    DumpJson {
        version: d.version,
        cause: d.cause.to_string(),
        cause_kind: format!("{:?}", d.cause),
        signal: d.cause.signal(),
        process: d.dpa_process_id,
        thread: d.dpa_thread_id,
        eu: d.eu,
        pc: d.pc,
        fault_addr: d.fault_addr,
        insn: d.insn,
        device_code: d.device_code,
        instructions: d.instret,
        activation: d.activation,
        error_syndrome: d.error_syndrome,
        registers: GPR_NAMES
            .iter()
            .zip(d.gpr.iter())
            .map(|(n, v)| ((*n).to_string(), serde_json::Value::from(*v)))
            .collect(),
        regions: d
            .regions
            .iter()
            .map(|r| RegionJson {
                base: r.base,
                size: r.size,
                perms: r.perms.to_string(),
                kind: format!("{:?}", r.kind),
                object: r.obj_id,
            })
            .collect(),
        regions_truncated: d.regions_truncated,
        stack_addr: d.stack_addr,
        stack_len: d.stack.len(),
    }
}

/// Runs a `coredump` subcommand on `ctx` (opened only for `rpc`).
pub fn run(
    cmd: &CoredumpCmd,
    open: impl FnOnce() -> Result<(Arc<dyn Devx>, Option<mlx5_sim::Device>), String>,
) -> Result<(), CoredumpCmdError> {
    let mut out = std::io::stdout().lock();
    match cmd {
        CoredumpCmd::Show { image, json } => {
            let d = read_image(image)?;
            if *json {
                let _ = writeln!(
                    out,
                    "{}",
                    serde_json::to_string(&to_json(&d)).unwrap_or_default()
                );
            } else {
                let _ = write!(out, "{d}");
            }
        }
        CoredumpCmd::Core { image, out: path } => {
            let d = read_image(image)?;
            write_file(path, &d.to_elf_core())?;
            let _ = writeln!(
                out,
                "{}: ELF core file of process {:#x} thread {:#x} ({} at pc {:#x})",
                path.display(),
                d.dpa_process_id,
                d.dpa_thread_id,
                d.cause,
                d.pc
            );
        }
        CoredumpCmd::Rpc {
            elf,
            function,
            args,
            app,
            image,
            core,
        } => {
            let args = args
                .iter()
                .filter(|a| !a.trim().is_empty())
                .map(|a| crate::vm::parse_arg(a))
                .collect::<Result<Vec<u64>, _>>()?;
            let (ctx, model) = open().map_err(CoredumpCmdError::App)?;
            if let Some(m) = &model {
                m.start_engine();
            }
            let program = crate::demo::device_image(&ctx, elf, app.as_deref())
                .map_err(|e| CoredumpCmdError::App(e.to_string()))?;
            let process = Process::from_app(&ctx, &program, &ProcessAttr::default())?;
            let mut faulted = None;
            match process.call(function, &args) {
                Ok(v) => {
                    let _ = writeln!(
                        out,
                        "{function} returned {v:#x} ({}): the process did not fail, no coredump",
                        v as i64
                    );
                }
                Err(DpaError::ProcessFault { .. }) => {
                    let raw = process.coredump_raw()?;
                    let d = Coredump::parse(&raw).map_err(DpaError::from)?;
                    faulted = Some(d.cause.to_string());
                    let _ = write!(out, "{d}");
                    if let Some(p) = image {
                        write_file(p, &raw)?;
                        let _ = writeln!(out, "coredump image: {}", p.display());
                    }
                    if let Some(p) = core {
                        write_file(p, &d.to_elf_core())?;
                        let _ = writeln!(
                            out,
                            "core file: {} (gdb-multiarch {} {})",
                            p.display(),
                            elf.display(),
                            p.display()
                        );
                    }
                }
                Err(e) => return Err(e.into()),
            }
            drop(process);
            if let Some(m) = &model {
                m.stop_engine();
            }
            let _ = out.flush();
            if let Some(cause) = faulted {
                return Err(CoredumpCmdError::Faulted {
                    function: function.clone(),
                    cause,
                });
            }
        }
    }
    let _ = out.flush();
    Ok(())
}
