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
//! ```
//!
//! (`return value: 0x2a (42)` instead of `exit code` when the entry function returned). A run
//! that ends by exit or return succeeds whatever the code; a fault, an `ebreak`, an unknown
//! `ecall` or an exhausted budget is an error (exit status 1) after the same report.

use std::io::Write;
use std::path::PathBuf;

use mlx5_sim::riscv::bare::{BareError, BareMachine, BareStop};

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
        #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_INSNS)]
        max_insns: u64,
    },
}

/// Why `vm run` failed.
#[derive(Debug, thiserror::Error)]
pub enum VmError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: {source}")]
    Load { path: String, source: BareError },
    #[error("argument {0:?} is not an integer (decimal, -decimal or 0x hex)")]
    BadArg(String),
    #[error("the program did not finish: {0}")]
    Stopped(BareStop),
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

/// Runs a `vm` subcommand.
pub fn run(cmd: &VmCmd) -> Result<(), VmError> {
    let VmCmd::Run {
        elf,
        entry,
        args,
        max_insns,
    } = cmd;
    let path = elf.display().to_string();
    let bytes = std::fs::read(elf).map_err(|source| VmError::Read {
        path: path.clone(),
        source,
    })?;
    let args = args
        .iter()
        .filter(|a| !a.trim().is_empty())
        .map(|a| parse_arg(a))
        .collect::<Result<Vec<u64>, _>>()?;
    let load = |source| VmError::Load {
        path: path.clone(),
        source,
    };
    let mut machine = BareMachine::from_elf_bytes(&bytes).map_err(load)?;
    let report = match entry {
        Some(sym) => machine.call_symbol(sym, &args, *max_insns),
        None => machine.call(machine.entry(), &args, *max_insns),
    }
    .map_err(load)?;
    let mut out = std::io::stdout().lock();
    // A closed stdout is not worth failing the run for.
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
    let _ = out.flush();
    match report.stop {
        BareStop::Exit { .. } | BareStop::Return { .. } => Ok(()),
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
