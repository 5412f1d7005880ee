//! `mlx5-dpa`: the command-line face of the driver.
//!
//! - `devices`: the mlx5 devices of this machine.
//! - `prm layouts [--json] [NAME]`: the PRM layout table.
//! - `prm decode LAYOUT HEX|@FILE`: every field of a captured mailbox.
//! - `cmd HEX|@FILE`: send a raw command inbox to the device and decode the answer.
//! - `caps`: the device's capabilities.
//! - `demo eth-loopback | rdma`: the crate's examples (Ethernet and RC queues, end to end).
//! - `vm run ELF`: a RISC-V device program on the model's DPA execution engine.
//! - `elf info FILE`: the DPA applications of a device ELF or of a host ELF carrying them.
//!
//! `--device NAME` picks a hardware device; `--sim` (or `--sim=PROFILE`, `--sim PROFILE`) asks
//! for the device model (`mlx5-sim`). Without either, the first hardware device is used, and
//! the device model (profile bf3) when the machine has none. They apply to the commands that
//! talk to a device (`cmd`, `caps`, `demo`; `sim` takes `--sim=PROFILE` only); the others
//! refuse them. `--trace` prints every firmware command (opcode, status, syndrome, duration)
//! on stderr as the `tracing` events of the driver (`mlx5_dpa::devx`, with object lifetimes)
//! and, on the model, of its firmware; `RUST_LOG` overrides the filter.
//!
//! Scripts: `devices`, `caps`, `cmd`, `prm layouts`, `prm decode`, `elf info` and `vm run`
//! take `--json`. Exit status ([`EXIT_STATUS`]): 0 success; 1 an error (input, device,
//! transport); 2 a usage error; 3 `cmd` whose command firmware answered with a status other
//! than OK; `vm run` the program's own exit code. Output into a closed pipe ends the process
//! quietly (SIGPIPE), as for any filter.

mod auth;
mod caps;
mod capture;
mod cc;
mod cmd;
mod coredump;
mod demo;
mod devices;
mod doctor;
mod dpacc;
mod elf;
mod eu;
mod gdb;
mod input;
mod json;
mod prm;
mod ps;
mod runner;
mod signals;
mod sim_cmd;
mod vm;

use caps::caps;
use cmd::raw_cmd;
use devices::devices;
use prm::{fields_json, out_layout, print_fields, prm_decode, prm_layouts, read_hex};
use sim_cmd::sim;

use std::process::ExitCode;
use std::sync::Arc;

use clap::{Parser, Subcommand};
use mlx5_dpa::devx::capture::hex;
use mlx5_dpa::devx::{self, Devx, DevxError};
use mlx5_dpa::mlx5::decode::{self, Value};
use mlx5_dpa::mlx5::layouts;
use mlx5_dpa::mlx5::{Opcode, Status};
use mlx5_sim::profile::Profile;

/// The profile `--sim` without a value, and the hardware fallback, use.
const DEFAULT_PROFILE: &str = "bf3";

/// What the exit status means (also the end of `--help`).
const EXIT_STATUS: &str = "Exit status: 0 success; 1 error (bad input, device or transport \
error); 2 usage error (bad arguments, an option the command does not take); 3 `cmd`: firmware \
answered with a status other than OK (the answer is printed); `vm run`: the program's exit \
code (0-255, 255 for other codes), 0 when its entry function returned, 1 when it did not \
finish (fault, ebreak, unknown ecall, instruction budget).";

/// The help heading of the options every command takes.
const GLOBAL: &str = "Global options";

/// Exit status of `cmd` when firmware's status is not OK.
const EXIT_FW_STATUS: u8 = 3;

#[derive(Parser, Debug)]
#[command(
    name = "mlx5-dpa",
    version,
    long_version = concat!(env!("CARGO_PKG_VERSION"), " (", env!("MLX5_DPA_BUILD"), ")"),
    about = "Pure-Rust mlx5 / BlueField-3 DPA driver over DevX",
    after_help = EXIT_STATUS
)]
struct Cli {
    /// Use this hardware device (e.g. mlx5_0)
    ///
    /// An RDMA device name. For `cmd`, `caps`, `demo`, `doctor`, `eu` and `coredump rpc`.
    #[arg(long, global = true, value_name = "NAME", help_heading = GLOBAL)]
    device: Option<String>,
    /// Use the device model (profile bf3, or =cx7)
    ///
    /// The model (`mlx5-sim`) instead of hardware: `--sim` is profile bf3, `--sim=cx7` (or
    /// `--sim cx7`) picks another profile. Without hardware the model is used anyway. For the
    /// commands that open a device, `sim` and `run`.
    #[arg(
        long,
        global = true,
        help_heading = GLOBAL,
        value_name = "PROFILE",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = DEFAULT_PROFILE,
        conflicts_with = "device"
    )]
    sim: Option<String>,
    /// Move fields of provisional layouts for this run
    ///
    /// The DPA object contexts, the coredump, the EU registers: a file of
    /// `LAYOUT.FIELD OFFSET WIDTH` lines, checked as the compiled layouts are
    /// (`mlx5_dpa::mlx5::overrides`).
    #[arg(long, global = true, value_name = "FILE", help_heading = GLOBAL)]
    layout_overrides: Option<std::path::PathBuf>,
    /// Record every DevX call of this run to FILE
    ///
    /// Mailboxes in and out, and timing, in the format of the capture library
    /// (`mlx5-dpa capture show / diff`).
    #[arg(long, global = true, value_name = "FILE", help_heading = GLOBAL)]
    capture: Option<std::path::PathBuf>,
    /// Make the model require DPA images signed under CERT
    ///
    /// DPA Application Authentication on the device model, trusting this root certificate
    /// (DER or PEM; repeat for more): DPA processes then load only from images signed under
    /// it (`mlx5-dpa sign`; the demos take `ELF.sig` beside `--app-elf ELF`).
    #[arg(long, global = true, value_name = "CERT", help_heading = GLOBAL)]
    sim_trust: Vec<std::path::PathBuf>,
    /// How --device reaches the kernel's DevX interface
    ///
    /// `kernel` (this crate's own ioctls, no C library) or `rdma-core` (libibverbs / libmlx5
    /// loaded at run time; a build with `--features rdma-core`).
    #[arg(long, global = true, value_enum, default_value_t = Backend::Kernel, help_heading = GLOBAL)]
    backend: Backend,
    /// Print every firmware command on stderr
    ///
    /// Opcode, status, syndrome and duration, as the driver sends it (`mlx5_dpa::devx`, with
    /// the objects it creates and destroys) and, on the model, as firmware answers it
    /// (`mlx5_sim`). `RUST_LOG` overrides the filter (default: `mlx5_sim=debug,mlx5_dpa=debug`).
    /// Commands that send none (`prm`, `elf`, `vm`, `cc`, `devices`) print nothing more.
    #[arg(long, global = true, help_heading = GLOBAL)]
    trace: bool,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand, Debug)]
#[allow(clippy::enum_variant_names)] // `cmd` is the subcommand's name on the command line
enum Cmd {
    /// List the mlx5 devices of this machine.
    Devices {
        /// One JSON object: {"devices": [{name, uverbs, fw_ver, pci}], "model_profiles": [...]}.
        #[arg(long)]
        json: bool,
    },
    /// The PRM layouts this driver declares.
    Prm {
        #[command(subcommand)]
        what: PrmCmd,
    },
    /// Send a raw command inbox (hex, or @file of hex) to the device and decode the answer.
    Cmd {
        /// Inbox bytes as hex (spaces and 0x prefixes allowed) or @FILE.
        inbox: String,
        /// Output mailbox length in bytes, 16 to 65535 (DevX's limit; default: the opcode's
        /// output layout, at least 16).
        #[arg(long, value_parser = crate::input::num::<usize>)]
        out_len: Option<usize>,
        /// One JSON object (status, syndrome, outbox, decoded fields) instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Show the device's capabilities.
    Caps {
        /// One JSON object instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Run a demo of the driver's queues (the crate's examples).
    Demo {
        #[command(subcommand)]
        which: demo::Demo,
    },
    /// Run RISC-V device programs on the model's DPA execution engine.
    Vm {
        #[command(subcommand)]
        what: vm::VmCmd,
    },
    /// Compile and link DPA device C sources against the FlexIO-compatible headers and the
    /// device runtime (the DPACC stand-in; needs riscv64-unknown-elf-gcc).
    Cc(cc::CcArgs),
    /// DPACC's application build (as `doca_build_dpacc.sh` runs it): the device code built as
    /// `cc` builds it, packaged into a host library with its app and function stubs for
    /// libflexio (docs/flexio-c.md). DPACC's own command line follows.
    Dpacc(dpacc::DpaccArgs),
    /// The DPA's execution-unit partitions and groups (as `dpaeumgmt`): show, create,
    /// destroy; `eu batch` runs several operations in one run.
    Eu {
        #[command(subcommand)]
        what: eu::EuCmd,
    },
    /// DevX captures (`libmlx5_dpa_capture.so` under LD_PRELOAD, or `--capture`): decode one,
    /// or compare two.
    Capture {
        #[command(subcommand)]
        what: capture::CaptureCmd,
    },
    /// What of the project works on this device: a graded checklist (open, caps, PD, UMEM,
    /// CQ, SQ, loopback frames, RC, DPA caps, DPA process, RPC), stopping at the first
    /// failure with the firmware's status and syndrome and what to look at.
    Doctor {
        /// One JSON object instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Sign a DPA application (crypto data: hash list, RSA_SHA_512 signature, certificate
    /// chain), written as a signature file beside it.
    Sign(auth::SignArgs),
    /// Verify a signed DPA application: hash list, signature, certificate chain, signer.
    Verify(auth::VerifyArgs),
    /// DPA process coredumps: decode them, write them as ELF core files for GDB, or make one
    /// by calling a function of a DPA program on the device.
    Coredump {
        #[command(subcommand)]
        what: coredump::CoredumpCmd,
    },
    /// List the DPA processes (threads, state, EU, activations, debug tokens) and counters of
    /// the device model inside another program run with `--gdb HOST:PORT` (a demo, `sim`), by
    /// asking its GDB server (`monitor ps`). A device shows a program only its own objects,
    /// and the model lives inside the program that runs it.
    Ps {
        /// The program's GDB server.
        #[arg(long, value_name = "HOST:PORT")]
        connect: String,
    },
    /// Inspect DPA device ELFs and the host ELFs that carry them.
    Elf {
        #[command(subcommand)]
        what: elf::ElfCmd,
    },
    /// Run the device model as a small host: its port on a TAP interface (or in loopback),
    /// answering ARP and ping for `--ip` through the model's queues, until `--seconds` pass.
    Sim(SimArgs),
    /// Run a program (rdma-core's tools, perftest, any verbs or DevX program, this tool with
    /// `--device mlx5_0`) on its own device model, which it opens as mlx5_0 through the
    /// kernel's uverbs ABI: a private mount namespace (needs root) and a preloaded library.
    Run(runner::RunArgs),
    /// Print a shell completion script for this tool (e.g. `mlx5-dpa completions bash >
    /// /etc/bash_completion.d/mlx5-dpa`).
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff; e.g. `mlx5-dpa man | man -l -`).
    Man,
}

/// `mlx5-dpa sim`'s arguments.
#[derive(clap::Args, Debug)]
struct SimArgs {
    /// Attach the model's port to this TAP interface (created if missing; needs
    /// CAP_NET_ADMIN). Then e.g. `ip addr add 10.99.0.1/24 dev NAME; ip link set NAME up;
    /// ping 10.99.0.2`.
    #[arg(long, value_name = "NAME")]
    tap: Option<String>,
    /// The address the model answers for.
    #[arg(long, default_value = "10.99.0.2")]
    ip: std::net::Ipv4Addr,
    /// How long to run.
    #[arg(long, default_value_t = 60, value_parser = crate::input::num::<u64>)]
    seconds: u64,
    /// Record every frame of the port to this pcap file.
    #[arg(long, value_name = "FILE")]
    pcap: Option<std::path::PathBuf>,
    /// Also run a DPA application on the model: `packet-processor` takes every IPv4 / UDP
    /// frame to the model's MAC, swaps its MACs, turns payload digits into letters and
    /// sends it back (FlexIO's packet-processor sample).
    #[arg(long, value_enum)]
    app: Option<SimApp>,
    /// At the end, list the model's DPA processes and threads (state, EU, activations)
    /// and its DPA counters, as `ps` would.
    #[arg(long)]
    ps: bool,
    /// Serve GDB the model's DPA processes (`target extended-remote HOST:PORT`, then
    /// `attach TOKEN` with the token printed for the application, or listed by
    /// `monitor ps`), as `dpa-gdbserver` serves a device's.
    #[arg(long, value_name = "HOST:PORT", value_parser = crate::gdb::host_port)]
    gdb: Option<String>,
}

/// The DevX transports `--backend` picks between.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum Backend {
    Kernel,
    RdmaCore,
}

/// DPA applications `mlx5-dpa sim --app` runs.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum SimApp {
    PacketProcessor,
}

#[derive(Subcommand, Debug)]
enum PrmCmd {
    /// The layout table (all layouts, or one).
    Layouts {
        /// One JSON object: {name: {size_bits, provisional, fields: {field: [offset, width]}}}.
        #[arg(long)]
        json: bool,
        /// Only this layout.
        name: Option<String>,
    },
    /// Decode bytes as a layout, field by field.
    Decode {
        /// Layout name as in mlx5_ifc (e.g. create_cq_in).
        layout: String,
        /// Bytes as hex or @FILE.
        bytes: String,
        /// One JSON object: {"layout", "bytes", "fields": {name: value}} (numbers as
        /// integers, byte fields as hex strings).
        #[arg(long)]
        json: bool,
    },
}

/// Errors of the tool, each a sentence for the user.
#[derive(Debug, thiserror::Error)]
enum ToolError {
    #[error(transparent)]
    Devx(#[from] DevxError),
    #[error("unknown layout {0:?}; `mlx5-dpa prm layouts` lists them")]
    UnknownLayout(String),
    #[error(
        "unknown device model profile {name:?}; profiles: {}",
        Profile::NAMES.join(", ")
    )]
    UnknownProfile { name: String },
    #[error("{0}")]
    Input(String),
    #[error(transparent)]
    Decode(#[from] decode::DecodeError),
    #[error(transparent)]
    Demo(#[from] demo::DemoError),
    #[error(transparent)]
    Vm(#[from] vm::VmError),
    #[error(transparent)]
    Elf(#[from] elf::ElfCmdError),
    #[error(transparent)]
    Coredump(#[from] coredump::CoredumpCmdError),
    #[error(transparent)]
    Auth(#[from] auth::AuthCmdError),
    #[error(transparent)]
    Capture(#[from] capture::CaptureCmdError),
    #[error(transparent)]
    Eu(#[from] eu::EuCmdError),
    #[error(transparent)]
    Cc(#[from] cc::CcError),
    #[error(transparent)]
    Dpacc(#[from] dpacc::DpaccError),
    #[error(transparent)]
    Ps(#[from] ps::PsError),
    #[error("{0}")]
    Run(#[from] runner::RunError),
    #[error(transparent)]
    File(#[from] input::InputError),
    /// A global option the command does not take.
    #[error("{0}")]
    Usage(String),
}

fn main() -> ExitCode {
    signals::default_sigpipe();
    let cli = Cli::parse_from(normalize_args(std::env::args_os()));
    if let Err(e) = check_globals(&cli) {
        eprintln!("mlx5-dpa: {e}");
        return ExitCode::from(2);
    }
    if cli.trace {
        init_tracing();
    }
    if let Some(path) = &cli.layout_overrides {
        let loaded = input::read_text(path, input::MAX_HEX_FILE)
            .map_err(|e| e.to_string())
            .and_then(|t| mlx5_dpa::mlx5::overrides::load(&t).map_err(|e| e.to_string()));
        match loaded {
            Ok(n) => eprintln!(
                "mlx5-dpa: {n} field(s) of provisional layouts moved by {}",
                path.display()
            ),
            Err(e) => {
                // Bad input (a file missing, unreadable or wrong), as for every file the tool
                // reads: exit status 1, not a usage error.
                eprintln!("mlx5-dpa: --layout-overrides {}: {e}", path.display());
                return ExitCode::FAILURE;
            }
        }
    }
    let code = match run(&cli) {
        Ok(code) => code,
        Err(e) => {
            let text = e.to_string();
            eprintln!("mlx5-dpa: {text}");
            if let Some(note) = model_check_note(&text) {
                eprintln!("mlx5-dpa: {note}");
            }
            // A DPACC command line this stand-in cannot read is a usage error, as clap's are.
            if matches!(e, ToolError::Dpacc(dpacc::DpaccError::Usage(_))) {
                ExitCode::from(2)
            } else {
                ExitCode::FAILURE
            }
        }
    };
    // A run Ctrl-C cut short (it finished the step in hand, released what it made and printed
    // its summary) ends as an interrupted process does, 128 + SIGINT, so a script can tell.
    let code = if signals::was_interrupted() {
        ExitCode::from(130)
    } else {
        code
    };
    let kept = mlx5_dpa::mem::retained();
    if kept.buffers > 0 {
        eprintln!(
            "mlx5-dpa: warning: {} buffers ({} bytes) were kept from the system because \
             firmware refused to deregister them (a destroy failed during teardown)",
            kept.buffers, kept.bytes
        );
    }
    code
}

/// For an error naming a firmware syndrome that is one of the device model's checks (its
/// syndromes are its own, 0x5131xxxx): which rule refused the command, as `doctor` says it.
/// Errors come through many layers as text, so the syndrome is read back from the message.
fn model_check_note(text: &str) -> Option<String> {
    let at = text.find("syndrome 0x")? + "syndrome 0x".len();
    let hex: String = text[at..]
        .chars()
        .take_while(char::is_ascii_hexdigit)
        .collect();
    let syndrome = u32::from_str_radix(&hex, 16).ok()?;
    let check = mlx5_sim::Check::by_syndrome(syndrome)?;
    Some(format!(
        "syndrome {syndrome:#010x} is the device model's check: {}",
        check.what
    ))
}

/// `--sim PROFILE` (with a space) as `--sim=PROFILE`: a profile name is never a command, so
/// the two readings cannot be confused. Everything else is left to clap.
fn normalize_args(args: impl IntoIterator<Item = std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    let mut out: Vec<std::ffi::OsString> = Vec::new();
    for a in args {
        let merge = out.last().is_some_and(|prev| prev == "--sim")
            && a.to_str().is_some_and(|s| Profile::NAMES.contains(&s));
        if merge {
            let prev = out.pop().unwrap_or_default();
            let mut joined = prev;
            joined.push("=");
            joined.push(&a);
            out.push(joined);
        } else {
            out.push(a);
        }
    }
    out
}

/// Refuses `--sim` / `--device` on commands that do not talk to a device (they would be
/// ignored, and a misspelt profile would pass unnoticed).
fn check_globals(cli: &Cli) -> Result<(), ToolError> {
    let (name, takes_sim, takes_device) = match &cli.cmd {
        Cmd::Cmd { .. } => ("cmd", true, true),
        Cmd::Caps { .. } => ("caps", true, true),
        Cmd::Demo { .. } => ("demo", true, true),
        Cmd::Sim(_) => ("sim", true, false),
        Cmd::Devices { .. } => ("devices", false, false),
        Cmd::Prm { .. } => ("prm", false, false),
        Cmd::Vm { .. } => ("vm", false, false),
        Cmd::Elf { .. } => ("elf", false, false),
        Cmd::Doctor { .. } => ("doctor", true, true),
        Cmd::Capture { .. } => ("capture", false, false),
        Cmd::Eu { .. } => ("eu", true, true),
        Cmd::Sign(_) => ("sign", false, false),
        Cmd::Verify(_) => ("verify", false, false),
        Cmd::Coredump { what } => {
            let rpc = matches!(what, coredump::CoredumpCmd::Rpc { .. });
            ("coredump", rpc, rpc)
        }
        Cmd::Cc(_) => ("cc", false, false),
        Cmd::Dpacc(_) => ("dpacc", false, false),
        Cmd::Ps { .. } => ("ps", false, false),
        Cmd::Run(_) => ("run", true, false),
        Cmd::Completions { .. } => ("completions", false, false),
        Cmd::Man => ("man", false, false),
    };
    if cli.backend != Backend::Kernel && !takes_device {
        return Err(ToolError::Usage(format!(
            "--backend does not apply to `{name}`, which opens no hardware device"
        )));
    }
    if cli.capture.is_some() && !takes_sim && !takes_device {
        return Err(ToolError::Usage(format!(
            "--capture does not apply to `{name}`, which talks to no device"
        )));
    }
    if !cli.sim_trust.is_empty() && !takes_sim {
        return Err(ToolError::Usage(format!(
            "--sim-trust does not apply to `{name}`, which talks to no device"
        )));
    }
    if cli.sim.is_some() && !takes_sim {
        return Err(ToolError::Usage(format!(
            "--sim does not apply to `{name}`, which talks to no device"
        )));
    }
    if cli.device.is_some() && !takes_device {
        return Err(ToolError::Usage(format!(
            "--device does not apply to `{name}`{}",
            if name == "sim" {
                " (it runs the device model; pick its profile with --sim=PROFILE)"
            } else {
                ", which talks to no device"
            }
        )));
    }
    if let Some(p) = &cli.sim {
        if !Profile::NAMES.contains(&p.as_str()) {
            return Err(ToolError::UnknownProfile { name: p.clone() });
        }
    }
    Ok(())
}

fn run(cli: &Cli) -> Result<ExitCode, ToolError> {
    let done = |r: Result<(), ToolError>| r.map(|()| ExitCode::SUCCESS);
    match &cli.cmd {
        Cmd::Devices { json } => done(devices(*json)),
        Cmd::Prm {
            what: PrmCmd::Layouts { json, name },
        } => done(prm_layouts(*json, name.as_deref())),
        Cmd::Prm {
            what:
                PrmCmd::Decode {
                    layout,
                    bytes,
                    json,
                },
        } => done(prm_decode(layout, bytes, *json)),
        Cmd::Cmd {
            inbox,
            out_len,
            json,
        } => raw_cmd(cli, inbox, *out_len, *json),
        Cmd::Caps { json } => done(caps(cli, *json)),
        Cmd::Demo { which } => {
            let opened = open_device(cli)?;
            done(
                demo::run(which, &opened.devx, opened.model.as_ref(), &opened.name)
                    .map_err(Into::into),
            )
        }
        Cmd::Vm { what } => Ok(vm::run(what)?),
        Cmd::Elf { what } => Ok(elf::run(what)?),
        Cmd::Capture { what } => Ok(capture::run(what)?),
        Cmd::Eu { what } => {
            let opened = open_device(cli)?;
            done(eu::run(what, &opened.devx).map_err(Into::into))
        }
        Cmd::Doctor { json } => {
            let opened = open_device(cli)?;
            Ok(doctor::run(
                &opened.devx,
                &opened.name,
                opened.model.as_ref(),
                *json,
            ))
        }
        Cmd::Sign(a) => Ok(auth::sign(a)?),
        Cmd::Verify(a) => Ok(auth::verify(a)?),
        Cmd::Coredump { what } => done(
            coredump::run(what, || {
                open_device(cli)
                    .map(|o| (o.devx, o.model))
                    .map_err(|e| e.to_string())
            })
            .map_err(Into::into),
        ),
        Cmd::Cc(args) => done(cc::run(args).map_err(Into::into)),
        Cmd::Dpacc(args) => done(dpacc::run(args).map_err(Into::into)),
        Cmd::Ps { connect } => {
            print!("{}", ps::remote_table(connect)?);
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Sim(args) => done(sim(cli, args)),
        Cmd::Run(args) => Ok(runner::run(
            args,
            cli.sim.as_deref().unwrap_or(DEFAULT_PROFILE),
            cli.capture.as_deref(),
        )?),
        Cmd::Completions { shell } => {
            let mut cmd = <Cli as clap::CommandFactory>::command();
            clap_complete::generate(*shell, &mut cmd, "mlx5-dpa", &mut std::io::stdout());
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Man => {
            let cmd = <Cli as clap::CommandFactory>::command();
            clap_mangen::Man::new(cmd)
                .render(&mut std::io::stdout())
                .map_err(|e| ToolError::Input(format!("writing the manual page: {e}")))?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// The default filter of `--trace`: the model's firmware and engine events, and the driver's.
const TRACE_FILTER: &str = "mlx5_sim=debug,mlx5_dpa=debug";

/// Installs a stderr subscriber for `--trace`; `RUST_LOG` replaces the default filter.
fn init_tracing() {
    use tracing_subscriber::EnvFilter;
    let filter = match std::env::var("RUST_LOG") {
        Ok(v) if !v.trim().is_empty() => EnvFilter::try_new(&v).unwrap_or_else(|e| {
            eprintln!("mlx5-dpa: ignoring RUST_LOG={v:?} ({e}); using {TRACE_FILTER}");
            EnvFilter::new(TRACE_FILTER)
        }),
        _ => EnvFilter::new(TRACE_FILTER),
    };
    let installed = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_timer(tracing_subscriber::fmt::time::Uptime::default())
        .with_target(true)
        .try_init();
    if let Err(e) = installed {
        eprintln!("mlx5-dpa: --trace: {e}");
    }
}

/// The profile names, for messages: `bf3|cx7`.
fn profile_choices() -> String {
    Profile::NAMES.join("|")
}

/// An opened device: hardware, or the device model (then `model` is set).
struct Opened {
    devx: Arc<dyn Devx>,
    model: Option<mlx5_sim::Device>,
    /// What to call the device in messages: its RDMA name, or the model and its profile.
    name: String,
}

impl Opened {
    fn model(name: &str) -> Result<Opened, ToolError> {
        let dev =
            mlx5_sim::Device::with_profile(name).ok_or_else(|| ToolError::UnknownProfile {
                name: name.to_string(),
            })?;
        Ok(Opened {
            devx: dev.open_devx(),
            model: Some(dev),
            name: format!("mlx5-sim ({name})"),
        })
    }
}

/// `--sim[=PROFILE]` opens the model; `--device NAME` that hardware device; neither the first
/// hardware device, or the model (with a note on stderr) when the machine has none.
fn open_device(cli: &Cli) -> Result<Opened, ToolError> {
    let mut opened = open_device_plain(cli)?;
    if let Some(path) = &cli.capture {
        let rec = capture::CaptureDevx::new(Arc::clone(&opened.devx), path)
            .map_err(|e| ToolError::Input(format!("--capture {}: {e}", path.display())))?;
        opened.devx = Arc::new(rec);
    }
    if !cli.sim_trust.is_empty() {
        let Some(model) = &opened.model else {
            return Err(ToolError::Usage(
                "--sim-trust configures the device model; this is hardware, whose owner \
                 enables authentication with its own tools"
                    .into(),
            ));
        };
        let roots = cli
            .sim_trust
            .iter()
            .map(|p| auth::cert_der(p))
            .collect::<Result<Vec<_>, _>>()?;
        model.with_profile_mut(|p| p.dpa_auth_roots = roots);
    }
    Ok(opened)
}

fn open_device_plain(cli: &Cli) -> Result<Opened, ToolError> {
    if let Some(profile) = &cli.sim {
        return Opened::model(profile);
    }
    let opened: Result<Arc<dyn Devx>, DevxError> = match cli.backend {
        Backend::Kernel => {
            devx::kernel::KernelDevx::open(cli.device.as_deref()).map(|d| d as Arc<dyn Devx>)
        }
        #[cfg(feature = "rdma-core")]
        Backend::RdmaCore => {
            devx::rdma_core::RdmaCoreDevx::open(cli.device.as_deref()).map(|d| d as Arc<dyn Devx>)
        }
        #[cfg(not(feature = "rdma-core"))]
        Backend::RdmaCore => {
            return Err(ToolError::Usage(
                "--backend rdma-core needs a build with --features rdma-core".into(),
            ))
        }
    };
    match opened {
        Ok(dev) => Ok(Opened {
            devx: dev,
            model: None,
            name: cli
                .device
                .clone()
                .unwrap_or_else(|| "the first mlx5 device".into()),
        }),
        Err(DevxError::NoDevice { .. }) if cli.device.is_none() => {
            eprintln!(
                "mlx5-dpa: no mlx5 device found; using the device model (mlx5-sim, {DEFAULT_PROFILE})"
            );
            Opened::model(DEFAULT_PROFILE)
        }
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmd::hex_dump;

    #[test]
    fn hex_parsing_accepts_common_forms_and_rejects_bad_input() {
        assert_eq!(read_hex("04 00 00 00").unwrap(), [4, 0, 0, 0]);
        assert_eq!(read_hex("0x0400,0x0001").unwrap(), [4, 0, 0, 1]);
        assert!(matches!(read_hex("040"), Err(ToolError::Input(_))));
        assert!(matches!(read_hex("zz"), Err(ToolError::Input(_))));
    }

    #[test]
    fn hex_dump_groups_words_and_reads_back() {
        let bytes: Vec<u8> = (0u8..20).collect();
        let dump = hex_dump(&bytes);
        assert_eq!(
            dump,
            "  0000: 00010203 04050607 08090a0b 0c0d0e0f\n  0010: 10111213\n"
        );
    }

    #[test]
    fn sim_flag_takes_an_optional_profile() {
        let cli = Cli::try_parse_from(["mlx5-dpa", "--sim", "caps"]).unwrap();
        assert_eq!(cli.sim.as_deref(), Some(DEFAULT_PROFILE));
        // `--sim cx7` with a space reads as `--sim=cx7`.
        let args = normalize_args(["mlx5-dpa", "--sim", "cx7", "caps"].map(Into::into));
        let cli = Cli::try_parse_from(args).unwrap();
        assert_eq!(cli.sim.as_deref(), Some("cx7"));
        let args = normalize_args(["mlx5-dpa", "--sim", "caps"].map(Into::into));
        assert_eq!(
            Cli::try_parse_from(args).unwrap().sim.as_deref(),
            Some("bf3")
        );
        let cli = Cli::try_parse_from(["mlx5-dpa", "caps", "--sim=cx7", "--trace"]).unwrap();
        assert_eq!(cli.sim.as_deref(), Some("cx7"));
        assert!(cli.trace);
        assert!(Cli::try_parse_from(["mlx5-dpa", "--sim", "--device", "mlx5_0", "caps"]).is_err());
        assert!(matches!(
            Opened::model("nope"),
            Err(ToolError::UnknownProfile { .. })
        ));
    }

    #[test]
    fn outputs_are_found_by_opcode_name() {
        assert_eq!(out_layout(Opcode::CREATE_CQ).name, "create_cq_out");
        assert_eq!(out_layout(Opcode::QUERY_HCA_CAP).name, "query_hca_cap_out");
        assert_eq!(
            out_layout(Opcode::CREATE_GENERAL_OBJECT).name,
            "general_obj_out_cmd_hdr"
        );
        assert_eq!(out_layout(Opcode::RTR2RTS_QP).name, "mbox_out");
    }
}
