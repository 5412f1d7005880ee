//! `mlx5-dpa vm run ELF`: a RISC-V device program on the model's execution engine, in the bare
//! machine of `mlx5_sim::riscv::bare` (segments at their link addresses, a stack, exit by
//! `ecall` 93 / FlexIO `EXIT_PROCESS` or `tohost`, return from the entry function).
//!
//! Prints what the program wrote (fd 1 / 2, through the `write` ecall), then
//!
//! ```text
//! stopped: exit (ecall exit), code 0
//! exit code: 0
//! instructions: 480228
//! speed: 312.4 MIPS (0.0015 s)
//! ```
//!
//! (`return value: 0x2a (42)` instead of `exit code` when the entry function returned), or
//! with `--json` one object `{"stop", "exit_code" | "return_value", "instructions",
//! "seconds", "mips", "output"}`.
//!
//! Exit status: the program's exit code when it exits (0-255; 255 for any other code,
//! negative ones included), 0 when the entry function returns, 1 when it does not finish (a
//! fault, an `ebreak`, an unknown `ecall`, the instruction budget) or cannot be loaded.
//!
//! A FlexIO device program has no standalone entry (its `e_entry` is the runtime's
//! `flexio_dev_thread_finish`, or 0): without `--entry` the tool says so and lists the entry
//! symbols instead of running it.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use mlx5_sim::riscv::bare::{BareError, BareMachine, BareReport, BareStop};
use mlx5_sim::vm::VmLoadError;

use crate::input::{self, InputError};

/// Instructions a run may take unless `--max-insns` says otherwise.
pub const DEFAULT_MAX_INSNS: u64 = 1_000_000_000;

/// `vm` subcommands.
#[derive(clap::Subcommand, Debug)]
pub enum VmCmd {
    /// Run a RISC-V ELF (RV64IMAC + Zbb + Zbs) in a bare machine on the model's DPA engine.
    Run {
        /// The ELF64 RISC-V executable.
        elf: PathBuf,
        /// Start at this symbol (a function: its return ends the run with the value in a0)
        /// instead of the ELF entry point.
        #[arg(long, value_name = "SYMBOL")]
        entry: Option<String>,
        /// Arguments in a0..a7: comma-separated integers (decimal, -decimal or 0x hex).
        #[arg(
            long,
            value_name = "A,B,...",
            value_delimiter = ',',
            allow_hyphen_values = true
        )]
        args: Vec<String>,
        /// Stop after this many instructions.
        #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_INSNS, value_parser = crate::input::num::<u64>)]
        max_insns: u64,
        /// One JSON object instead of text (the program's output is a field of it).
        #[arg(long)]
        json: bool,
        /// Wait for GDB (`gdb-multiarch`, remote protocol) on HOST:PORT before the first
        /// instruction, and serve it the run: registers, memory, breakpoints, single step
        /// (port 0: any free port; the one taken is printed on standard error).
        #[arg(long, value_name = "HOST:PORT", value_parser = crate::gdb::host_port)]
        gdb: Option<String>,
    },
}

/// Why `vm run` failed.
#[derive(Debug, thiserror::Error)]
pub enum VmError {
    #[error(transparent)]
    Read(#[from] InputError),
    #[error("{path}: {source}")]
    Load { path: String, source: VmLoadError },
    #[error("argument {0:?} is not an integer (decimal, -decimal or 0x hex)")]
    BadArg(String),
    #[error("the program did not finish: {0}")]
    Stopped(BareStop),
    #[error(transparent)]
    Gdb(#[from] crate::gdb::GdbError),
    #[error("the debugger killed the program")]
    Killed,
    #[error(
        "{path} has no standalone entry (a FlexIO device program: e_entry is {entry}); run one \
         of its entry symbols with --entry SYMBOL: {}",
        symbols.join(", ")
    )]
    NoEntry {
        path: String,
        entry: String,
        symbols: Vec<String>,
    },
}

/// The symbol FlexIO device programs (DPACC's and fw-blobs') point `e_entry` at.
const FLEXIO_DEFAULT_ENTRY: &str = "flexio_dev_thread_finish";

/// When the ELF's entry point is no program start (0, or FlexIO's default entry), what
/// `e_entry` is and the global functions one may start instead.
fn no_standalone_entry(bytes: &[u8], entry: u64) -> Option<(String, Vec<String>)> {
    let elf = mlx5_dpa::dpa::elf::Elf::parse(bytes).ok()?;
    let at_default = elf
        .symbol(FLEXIO_DEFAULT_ENTRY)
        .is_some_and(|s| s.value == entry);
    if entry != 0 && !at_default {
        return None;
    }
    let mut symbols: Vec<String> = elf
        .symbols()
        .iter()
        // Global (1) or weak (2) functions (2), defined: what FlexIO starts by name.
        .filter(|s| s.kind() == 2 && matches!(s.binding(), 1 | 2) && s.is_defined())
        .filter(|s| s.name != FLEXIO_DEFAULT_ENTRY && !s.name.is_empty())
        .map(|s| s.name.clone())
        .collect();
    symbols.sort();
    let what = if at_default {
        format!("{FLEXIO_DEFAULT_ENTRY} at {entry:#x}")
    } else {
        "0".to_string()
    };
    Some((what, symbols))
}

/// Parses an argument: decimal, negative decimal (two's complement), or 0x hex.
pub fn parse_arg(s: &str) -> Result<u64, VmError> {
    let t = s.trim();
    let bad = || VmError::BadArg(s.to_string());
    if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        u64::from_str_radix(&h.replace('_', ""), 16).map_err(|_| bad())
    } else if t.starts_with('-') {
        t.parse::<i64>().map(|v| v as u64).map_err(|_| bad())
    } else {
        t.parse::<u64>().map_err(|_| bad())
    }
}

/// Instructions run between looks at the clock.
const SLICE: u64 = 20_000_000;
/// A run longer than this says how far it got, on standard error, every second
/// (`MLX5_DPA_VM_QUIET_MS` sets another wait, in milliseconds).
const QUIET_MS: u64 = 2000;

/// Runs `hart` for at most `max_insns` instructions, in slices: once the run has taken
/// [`QUIET_MS`], a line a second on standard error says how far it got, so a runaway program
/// is not silent until its budget ends (1e9 instructions by default, 20 s or so).
fn run_with_progress(
    machine: &mut BareMachine,
    hart: &mut mlx5_sim::riscv::Hart,
    max_insns: u64,
) -> BareStop {
    let quiet = std::env::var("MLX5_DPA_VM_QUIET_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(QUIET_MS);
    let start = Instant::now();
    let mut next = start + std::time::Duration::from_millis(quiet);
    loop {
        let left = max_insns.saturating_sub(hart.instret);
        let stop = machine.resume(hart, left.min(SLICE));
        if !matches!(stop, BareStop::Budget) || left <= SLICE {
            return stop;
        }
        let now = Instant::now();
        if now >= next {
            next = now + std::time::Duration::from_secs(1);
            let secs = now.duration_since(start).as_secs_f64().max(1e-3);
            eprintln!(
                "vm: {} M of {} M instructions after {secs:.1} s ({:.0} M/s; --max-insns sets the budget)",
                hart.instret / 1_000_000,
                max_insns / 1_000_000,
                hart.instret as f64 / secs / 1e6
            );
        }
    }
}

/// Runs a `vm` subcommand; the exit status is the program's (see the module's doc).
pub fn run(cmd: &VmCmd) -> Result<ExitCode, VmError> {
    let VmCmd::Run {
        elf,
        entry,
        args,
        max_insns,
        json,
        gdb,
    } = cmd;
    let path = elf.display().to_string();
    let bytes = input::read_bounded(elf, input::MAX_ELF_FILE)?;
    let args = args
        .iter()
        .filter(|a| !a.trim().is_empty())
        .map(|a| parse_arg(a))
        .collect::<Result<Vec<u64>, _>>()?;
    let load = |source| VmError::Load {
        path: path.clone(),
        source,
    };
    let mut machine = mlx5_sim::vm::machine(&bytes).map_err(load)?;
    if entry.is_none() {
        if let Some((entry, symbols)) = no_standalone_entry(&bytes, machine.entry()) {
            return Err(VmError::NoEntry {
                path,
                entry,
                symbols,
            });
        }
    }
    // With the `jit` feature, hot code is compiled (the same results, faster).
    #[cfg(feature = "jit")]
    machine.set_jit(Some(mlx5_sim::riscv::CodeCache::JIT_HOT));
    let pc = match entry {
        Some(sym) => machine
            .symbol(sym)
            .ok_or_else(|| load(VmLoadError::Bare(BareError::NoSymbol(sym.clone()))))?,
        None => machine.entry(),
    };
    let mut hart = machine
        .start(pc, &args)
        .map_err(|e| load(VmLoadError::Bare(e)))?;
    let start = Instant::now();
    let stop = match gdb {
        Some(addr) => match crate::gdb::serve(&mut machine, &mut hart, *max_insns, addr)? {
            crate::gdb::Outcome::Finished(stop) => stop,
            // Detached: the program runs on to its end.
            crate::gdb::Outcome::Detached => {
                let left = max_insns.saturating_sub(hart.instret);
                machine.resume(&mut hart, left)
            }
            crate::gdb::Outcome::Killed => return Err(VmError::Killed),
        },
        None => run_with_progress(&mut machine, &mut hart, *max_insns),
    };
    let report = BareReport {
        stop,
        instret: hart.instret,
        hart,
    };
    let seconds = start.elapsed().as_secs_f64();
    let mips = if seconds > 0.0 {
        report.instret as f64 / seconds / 1e6
    } else {
        0.0
    };
    let status = match report.stop {
        BareStop::Exit { code, .. } => ExitCode::from(u8::try_from(code).unwrap_or(255)),
        BareStop::Return { .. } => ExitCode::SUCCESS,
        _ => ExitCode::FAILURE,
    };
    let mut out = std::io::stdout().lock();
    if *json {
        /// `vm run --json`; the exit code or return value only when the program ended so.
        #[derive(serde::Serialize)]
        struct RunJson<'a> {
            stop: String,
            finished: bool,
            instructions: u64,
            seconds: f64,
            mips: f64,
            output: std::borrow::Cow<'a, str>,
            #[serde(skip_serializing_if = "Option::is_none")]
            exit_code: Option<i64>,
            #[serde(skip_serializing_if = "Option::is_none")]
            return_value: Option<u64>,
        }
        let o = RunJson {
            stop: report.stop.to_string(),
            finished: matches!(report.stop, BareStop::Exit { .. } | BareStop::Return { .. }),
            instructions: report.instret,
            seconds,
            mips,
            output: String::from_utf8_lossy(machine.output()),
            exit_code: match report.stop {
                BareStop::Exit { code, .. } => Some(code as i64),
                _ => None,
            },
            return_value: match report.stop {
                BareStop::Return { value } => Some(value),
                _ => None,
            },
        };
        let o = serde_json::to_string(&o).unwrap_or_default();
        let _ = writeln!(out, "{o}");
        let _ = out.flush();
        return Ok(status);
    }
    let _ = out.write_all(machine.output());
    let _ = writeln!(out, "stopped: {}", report.stop);
    match report.stop {
        BareStop::Exit { code, .. } => {
            let _ = writeln!(out, "exit code: {}", code as i64);
        }
        BareStop::Return { value } => {
            let _ = writeln!(out, "return value: {value:#x} ({})", value as i64);
        }
        _ => {}
    }
    let _ = writeln!(out, "instructions: {}", report.instret);
    // Under a debugger the time is the session's, not the engine's.
    if gdb.is_none() {
        let _ = writeln!(out, "speed: {mips:.1} MIPS ({seconds:.4} s)");
    }
    let _ = out.flush();
    match report.stop {
        BareStop::Exit { .. } | BareStop::Return { .. } => Ok(status),
        other => Err(VmError::Stopped(other)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_parse_in_three_notations() {
        assert_eq!(parse_arg("42").unwrap(), 42);
        assert_eq!(parse_arg("-1").unwrap(), u64::MAX);
        assert_eq!(parse_arg("0xdead_beef").unwrap(), 0xdead_beef);
        assert!(matches!(parse_arg("x12"), Err(VmError::BadArg(_))));
        assert!(matches!(parse_arg("0x"), Err(VmError::BadArg(_))));
    }
}
