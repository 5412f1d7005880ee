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
//! on stderr as the `tracing` events of the model; `RUST_LOG` overrides the filter.
//!
//! Scripts: `devices`, `caps`, `cmd`, `prm layouts`, `prm decode`, `elf info` and `vm run`
//! take `--json`. Exit status ([`EXIT_STATUS`]): 0 success; 1 an error (input, device,
//! transport); 2 a usage error; 3 `cmd` whose command firmware answered with a status other
//! than OK; `vm run` the program's own exit code. Output into a closed pipe ends the process
//! quietly (SIGPIPE), as for any filter.

mod auth;
mod capture;
mod cc;
mod coredump;
mod demo;
mod doctor;
mod elf;
mod eu;
mod gdb;
mod input;
mod ps;
mod runner;
mod signals;
mod vm;

use std::process::ExitCode;
use std::sync::Arc;

use clap::{Parser, Subcommand};
use mlx5_dpa::devx::capture::hex;
use mlx5_dpa::devx::{self, Devx, DevxError};
use mlx5_dpa::mlx5::decode::{self, Value};
use mlx5_dpa::mlx5::layouts;
use mlx5_dpa::mlx5::{Opcode, Status};
use mlx5_sim::profile::Profile;
use serde_json::{json, Map, Value as Json};

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
    /// Opcode, status, syndrome and duration. `RUST_LOG` overrides the filter (default:
    /// `mlx5_sim=debug,mlx5_dpa=debug`). Commands that send none (`prm`, `elf`, `vm`, `cc`,
    /// `devices`) print nothing more.
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
        let loaded = input::read_bounded(path, input::MAX_HEX_FILE)
            .map_err(|e| e.to_string())
            .and_then(|b| String::from_utf8(b).map_err(|_| "not text".to_string()))
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
            ExitCode::FAILURE
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

/// `mlx5-dpa sim`: the model as a host on a TAP interface.
fn sim(
    cli: &Cli,
    &SimArgs {
        ref tap,
        ip,
        seconds,
        ref pcap,
        app,
        ps,
        ref gdb,
    }: &SimArgs,
) -> Result<(), ToolError> {
    let (tap, pcap, gdb) = (tap.as_deref(), pcap.as_deref(), gdb.as_deref());
    // Ctrl-C ends the run early, with its summary: caught from the start, so that one during
    // set-up (after a client saw the GDB server's line, say) ends it cleanly too.
    signals::catch_sigint();
    use demo::flexio_packet_processor as pp;
    use mlx5_sim::{responder::Responder, Device, PortMode};
    let name = cli.sim.as_deref().unwrap_or(DEFAULT_PROFILE);
    let dev = Device::with_profile(name).ok_or_else(|| ToolError::UnknownProfile {
        name: name.to_owned(),
    })?;
    let mac = dev.with_profile_mut(|p| p.mac);
    match tap {
        Some(t) => {
            let tap = mlx5_sim::port::tap::Tap::open(t)
                .map_err(|e| ToolError::Input(format!("cannot attach to TAP {t:?}: {e}")))?;
            println!("model port attached to TAP {}", tap.name());
            dev.set_port(PortMode::Tap(tap));
        }
        None => println!("model port in internal loopback (use --tap NAME to reach the kernel)"),
    }
    if let Some(path) = pcap {
        let f = std::fs::File::create(path)
            .map_err(|e| ToolError::Input(format!("cannot create {}: {e}", path.display())))?;
        dev.capture(std::io::BufWriter::new(f))
            .map_err(|e| ToolError::Input(format!("pcap {}: {e}", path.display())))?;
    }
    // The application's rule is made first, so it is tried before the responder's catch-all.
    let app_ctx = dev.open_devx();
    let mut processor = None;
    if app == Some(SimApp::PacketProcessor) {
        // Set-up copies into DPA memory need the engine running; the responder also steps it.
        dev.start_engine();
        let p = pp::PacketProcessor::setup(&app_ctx, &pp::Options::default())
            .and_then(|p| p.wait_ready(std::time::Duration::from_secs(5)).map(|()| p))
            .map_err(|e| ToolError::Input(format!("packet processor: {e}")))?;
        let (rqn, _, sqn, _) = p.queues();
        println!(
            "packet processor on the DPA (process {:#x}, RQ {rqn:#x}, SQ {sqn:#x}): IPv4/UDP frames to this MAC come back with MACs swapped and payload digits as letters",
            p.process().id()
        );
        if gdb.is_some() {
            println!(
                "Use the token >>> {:#018x} <<< for debugging",
                crate::gdb::debug_token(p.process().id())
            );
        }
        processor = Some(p);
    }
    let _gdb_server = match gdb {
        Some(addr) => Some(
            crate::gdb::dpa::serve(&dev, None, addr)
                .map_err(|e| ToolError::Input(e.to_string()))?,
        ),
        None => None,
    };
    let mut r = Responder::new(&dev, ip, mac).map_err(|e| ToolError::Input(e.to_string()))?;
    let mac_s: Vec<String> = mac.iter().map(|b| format!("{b:02x}")).collect();
    println!(
        "answering ARP and ping for {ip} as {} for {seconds} s ({})",
        mac_s.join(":"),
        dev.describe()
    );
    r.run(
        signals::interrupted(),
        Some(std::time::Duration::from_secs(seconds)),
    );
    if signals::was_interrupted() {
        println!("interrupted");
    }
    let st = r.stats;
    let port = dev.stats().port;
    println!(
        "received {} frames: {} ARP replies, {} echo replies, {} other",
        st.received, st.arp_replies, st.echo_replies, st.other
    );
    println!(
        "port: tx {} frames / {} bytes, rx {} frames, {} delivered, {} steering drops, {} no buffer",
        port.tx_frames,
        port.tx_bytes,
        port.rx_frames,
        port.rx_delivered,
        port.rx_steering_drops,
        port.rx_no_buffer
    );
    if let Some(p) = &processor {
        let s = p
            .stats()
            .map_err(|e| ToolError::Input(format!("packet processor: {e}")))?;
        println!(
            "packet processor: rx {} frames, tx {}, rewritten {}, dropped {}, {} activations",
            s.rx_packets,
            s.tx_packets,
            s.rewritten,
            s.rx_dropped + s.tx_dropped,
            s.activations
        );
    }
    if ps {
        print_dpa_ps(&dev);
    }
    drop(processor);
    dev.stop_engine();
    drop(r);
    dev.stop_captures().map_err(|e| {
        let path = pcap.map(|p| p.display().to_string()).unwrap_or_default();
        ToolError::Input(format!("pcap {path}: {e}"))
    })?;
    Ok(())
}

/// The model's DPA processes and threads, and its DPA counters (`sim --ps`).
fn print_dpa_ps(dev: &mlx5_sim::Device) {
    for line in ps::table(dev, ps::Marks::default()) {
        println!("{line}");
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

fn devices(as_json: bool) -> Result<(), ToolError> {
    let list = devx::list_devices();
    if as_json {
        let devs: Vec<Json> = list
            .iter()
            .map(|d| {
                json!({
                    "name": d.name,
                    "uverbs": d.uverbs_path.display().to_string(),
                    "fw_ver": d.fw_ver,
                    "pci": d.pci,
                })
            })
            .collect();
        println!(
            "{}",
            json!({"devices": devs, "model_profiles": Profile::NAMES})
        );
        return Ok(());
    }
    if list.is_empty() {
        println!(
            "No mlx5 devices found (looked in {}).",
            devx::discovery::searched()
        );
        println!(
            "The device model (mlx5-sim) is available: commands use it when no hardware is \
             found, or ask for it with --sim[={}].",
            profile_choices()
        );
        return Ok(());
    }
    println!("{:<12} {:<26} {:<16} PCI", "NAME", "UVERBS", "FIRMWARE");
    for d in list {
        println!(
            "{:<12} {:<26} {:<16} {}",
            d.name,
            d.uverbs_path.display(),
            d.fw_ver.as_deref().unwrap_or("-"),
            d.pci.as_deref().unwrap_or("-")
        );
    }
    println!(
        "(the device model mlx5-sim is available too: --sim[={}])",
        profile_choices()
    );
    Ok(())
}

fn layout_json(d: &mlx5_dpa::mlx5::LayoutDesc) -> Json {
    let mut fields = Map::new();
    for f in decode::flatten(d) {
        fields.insert(f.name, json!([f.offset, f.width]));
    }
    json!({"size_bits": d.size_bits, "provisional": d.provisional, "fields": fields})
}

fn prm_layouts(as_json: bool, name: Option<&str>) -> Result<(), ToolError> {
    let chosen: Vec<_> = match name {
        Some(n) => {
            vec![layouts::by_name(n).ok_or_else(|| ToolError::UnknownLayout(n.to_string()))?]
        }
        None => layouts::ALL.to_vec(),
    };
    if as_json {
        let mut all = Map::new();
        for d in &chosen {
            all.insert(d.name.to_string(), layout_json(d));
        }
        println!("{}", Json::Object(all));
        return Ok(());
    }
    for d in chosen {
        let mark = if d.provisional { "  [provisional]" } else { "" };
        println!(
            "{} ({} bits, {} bytes){mark}",
            d.name,
            d.size_bits,
            d.size_bits / 8
        );
        if name.is_some() {
            for f in decode::flatten(d) {
                println!("  {:#07x} {:>5}  {}", f.offset, f.width, f.name);
            }
        }
    }
    Ok(())
}

/// Hex from an argument or `@file`: whitespace, `0x` prefixes, `:` and `,` separators ignored.
fn read_hex(arg: &str) -> Result<Vec<u8>, ToolError> {
    let text = match arg.strip_prefix('@') {
        Some(path) => {
            let bytes = input::read_bounded(std::path::Path::new(path), input::MAX_HEX_FILE)?;
            String::from_utf8(bytes)
                .map_err(|_| ToolError::Input(format!("{path} is not text (hex expected)")))?
        }
        None => arg.to_string(),
    };
    let mut digits = String::new();
    for tok in text.split(|c: char| c.is_whitespace() || c == ',' || c == ':') {
        let t = tok
            .strip_prefix("0x")
            .or_else(|| tok.strip_prefix("0X"))
            .unwrap_or(tok);
        digits.push_str(t);
    }
    if !digits.len().is_multiple_of(2) {
        return Err(ToolError::Input(format!(
            "odd number of hex digits ({})",
            digits.len()
        )));
    }
    (0..digits.len())
        .step_by(2)
        .map(|i| {
            u8::from_str_radix(&digits[i..i + 2], 16).map_err(|_| {
                ToolError::Input(format!("not hex: {:?} at digit {i}", &digits[i..i + 2]))
            })
        })
        .collect()
}

fn print_fields(d: &'static mlx5_dpa::mlx5::LayoutDesc, bytes: &[u8]) -> Result<(), ToolError> {
    for f in decode::decode(d, bytes)? {
        match f.value {
            Value::Uint(v) => println!("  {:<48} {:#x}", f.name, v),
            Value::Bytes(b) => println!("  {:<48} {}", f.name, hex(&b)),
        }
    }
    Ok(())
}

/// The fields of `bytes` as a layout: numbers as JSON integers, byte fields as hex strings.
fn fields_json(d: &'static mlx5_dpa::mlx5::LayoutDesc, bytes: &[u8]) -> Result<Json, ToolError> {
    let mut m = Map::new();
    for f in decode::decode(d, bytes)? {
        let v = match f.value {
            Value::Uint(v) => json!(v),
            Value::Bytes(b) => json!(hex(&b)),
        };
        m.insert(f.name, v);
    }
    Ok(Json::Object(m))
}

fn prm_decode(layout: &str, bytes: &str, as_json: bool) -> Result<(), ToolError> {
    let d = layouts::by_name(layout).ok_or_else(|| ToolError::UnknownLayout(layout.to_string()))?;
    let b = read_hex(bytes)?;
    if as_json {
        let fields = fields_json(d, &b)?;
        println!(
            "{}",
            json!({"layout": d.name, "bytes": b.len(), "fields": fields})
        );
        return Ok(());
    }
    println!("{} ({} bytes):", d.name, b.len());
    print_fields(d, &b)
}

/// The output layout of an opcode: `<opcode name>_out` when declared, else the general object
/// or plain headers.
fn out_layout(op: Opcode) -> &'static mlx5_dpa::mlx5::LayoutDesc {
    let by_opcode = op
        .name()
        .and_then(|n| layouts::by_name(&format!("{}_out", n.to_ascii_lowercase())));
    let general = matches!(
        op,
        Opcode::CREATE_GENERAL_OBJECT
            | Opcode::MODIFY_GENERAL_OBJECT
            | Opcode::QUERY_GENERAL_OBJECT
            | Opcode::DESTROY_GENERAL_OBJECT
    )
    .then(|| layouts::by_name("general_obj_out_cmd_hdr"))
    .flatten();
    by_opcode
        .or(general)
        .or_else(|| layouts::by_name("mbox_out"))
        .unwrap_or(layouts::ALL[1])
}

fn raw_cmd(
    cli: &Cli,
    inbox_arg: &str,
    out_len: Option<usize>,
    as_json: bool,
) -> Result<ExitCode, ToolError> {
    let inbox = read_hex(inbox_arg)?;
    if inbox.len() < 16 {
        return Err(ToolError::Input(format!(
            "an inbox has at least the 16-byte header; got {} bytes",
            inbox.len()
        )));
    }
    if inbox.len() > devx::MAX_MAILBOX_LEN {
        return Err(ToolError::Input(format!(
            "an inbox of {} bytes: DevX carries at most {}",
            inbox.len(),
            devx::MAX_MAILBOX_LEN
        )));
    }
    if let Some(n) = out_len {
        if !(16..=devx::MAX_MAILBOX_LEN).contains(&n) {
            return Err(ToolError::Input(format!(
                "--out-len {n}: an outbox has 16 to {} bytes (the command header, and DevX's \
                 limit of a u16 length)",
                devx::MAX_MAILBOX_LEN
            )));
        }
    }
    let op = Opcode(u16::from_be_bytes([inbox[0], inbox[1]]));
    let op_mod = u16::from_be_bytes([inbox[6], inbox[7]]);
    let out_desc = out_layout(op);
    let len = out_len.unwrap_or(out_desc.size_bytes()).max(16);
    let opened = open_device(cli)?;
    let dev = &opened.devx;
    let (outbox, obj) = devx::raw_command(dev, &inbox, len)?;
    let status = Status(outbox[0]);
    let syndrome = u32::from_be_bytes([outbox[4], outbox[5], outbox[6], outbox[7]]);
    let model_check = (opened.model.is_some() && syndrome != 0).then(|| {
        mlx5_sim::Check::by_syndrome(syndrome).map_or(
            "(syndrome not one of the model's checks)".to_string(),
            |c| c.what.to_string(),
        )
    });
    let shown = &outbox[..out_desc.size_bytes().min(outbox.len())];
    let decoded = shown.len() == out_desc.size_bytes();
    let destroyed = match obj {
        Some(o) => {
            o.destroy()?;
            true
        }
        None => false,
    };
    if as_json {
        let fields = if decoded {
            fields_json(out_desc, shown)?
        } else {
            Json::Null
        };
        println!(
            "{}",
            json!({
                "device": dev.describe(),
                "opcode": op.0,
                "opcode_name": op.name(),
                "op_mod": op_mod,
                "method": format!("{:?}", op.devx_method()),
                "status": status.0,
                "status_name": status.name(),
                "syndrome": syndrome,
                "model_check": model_check,
                "outbox": hex(&outbox),
                "layout": decoded.then_some(out_desc.name),
                "fields": fields,
                "created_object_destroyed": destroyed,
            })
        );
    } else {
        println!("device:  {}", dev.describe());
        println!(
            "command: {op}, op_mod {op_mod:#x}, sent as {:?}",
            op.devx_method()
        );
        println!("status:  {status}");
        println!("syndrome: {syndrome:#010x}");
        if let Some(c) = &model_check {
            println!("model check: {c}");
        }
        println!("outbox ({} bytes):", outbox.len());
        print!("{}", hex_dump(&outbox));
        if decoded {
            println!("{}:", out_desc.name);
            print_fields(out_desc, shown)?;
        }
        if destroyed {
            println!("(the created object was destroyed again)");
        }
    }
    Ok(if status == Status::OK {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_FW_STATUS)
    })
}

/// Bytes as hex, 16 per line in 4-byte words, each line prefixed by its offset.
fn hex_dump(bytes: &[u8]) -> String {
    let mut s = String::new();
    for (i, line) in bytes.chunks(16).enumerate() {
        s.push_str(&format!("  {:04x}:", i * 16));
        for word in line.chunks(4) {
            s.push(' ');
            for b in word {
                s.push_str(&format!("{b:02x}"));
            }
        }
        s.push('\n');
    }
    s
}

/// A capability's value, as shown.
enum Cap {
    /// A plain number.
    Num(u64),
    /// A log2 field: shown with the number it stands for.
    Log(u8),
    /// A bit.
    Flag(bool),
}

impl Cap {
    fn text(&self) -> String {
        match *self {
            Cap::Num(v) => v.to_string(),
            Cap::Log(l) => match 1u64.checked_shl(u32::from(l)) {
                Some(n) => format!("{l} (2^{l} = {n})"),
                None => format!("{l} (2^{l})"),
            },
            Cap::Flag(b) => if b { "yes" } else { "no" }.to_string(),
        }
    }

    fn json(&self) -> Json {
        match *self {
            Cap::Num(v) => json!(v),
            Cap::Log(l) => json!(l),
            Cap::Flag(b) => json!(b),
        }
    }
}

/// The general capabilities this driver reads, by their mlx5_ifc names.
fn general_caps(g: &mlx5_dpa::mlx5::caps::GeneralCaps) -> Vec<(&'static str, Cap)> {
    use Cap::*;
    vec![
        ("apu", Flag(g.apu)),
        ("log_max_cq", Log(g.log_max_cq)),
        ("log_max_cq_sz", Log(g.log_max_cq_sz)),
        ("log_max_eq", Log(g.log_max_eq)),
        ("log_max_eq_sz", Log(g.log_max_eq_sz)),
        ("log_max_sq", Log(g.log_max_sq)),
        ("log_max_rq", Log(g.log_max_rq)),
        ("log_max_qp", Log(g.log_max_qp)),
        ("log_max_qp_sz", Log(g.log_max_qp_sz)),
        ("log_max_wq_sz", Log(g.log_max_wq_sz)),
        ("log_max_pd", Log(g.log_max_pd)),
        ("log_max_mkey", Log(g.log_max_mkey)),
        ("log_max_tis", Log(g.log_max_tis)),
        ("log_max_tir", Log(g.log_max_tir)),
        ("log_max_rmp", Log(g.log_max_rmp)),
        ("log_max_rqt", Log(g.log_max_rqt)),
        ("log_max_transport_domain", Log(g.log_max_transport_domain)),
        ("log_max_msg", Log(g.log_max_msg)),
        ("uar_sz", Num(u64::from(g.uar_sz))),
        ("log_bf_reg_size", Log(g.log_bf_reg_size)),
        ("bf", Flag(g.bf)),
        ("cqe_version", Num(u64::from(g.cqe_version))),
        ("port_type", Num(u64::from(g.port_type))),
        ("num_ports", Num(u64::from(g.num_ports))),
        ("vhca_id", Num(u64::from(g.vhca_id))),
    ]
}

/// The DPA page's capabilities, by their names.
fn dpa_caps(d: &mlx5_dpa::mlx5::caps::DpaCaps) -> Vec<(&'static str, Cap)> {
    use Cap::*;
    vec![
        ("max_dpa_processes", Num(u64::from(d.max_dpa_processes))),
        ("log_max_dpa_process", Log(d.log_max_dpa_process)),
        ("log_max_dpa_thread", Log(d.log_max_dpa_thread)),
        (
            "log_max_dpa_threads_per_process",
            Log(d.log_max_dpa_threads_per_process),
        ),
        ("log_max_dpa_outbox", Log(d.log_max_dpa_outbox)),
        ("log_max_dpa_window", Log(d.log_max_dpa_window)),
        ("log_max_dpa_mem", Log(d.log_max_dpa_mem)),
        ("dpa_mem_block_size", Num(u64::from(d.dpa_mem_block_size))),
        (
            "log_max_num_dpa_mem_blocks",
            Log(d.log_max_num_dpa_mem_blocks),
        ),
        (
            "max_num_dpa_thread_per_group",
            Num(u64::from(d.max_num_dpa_thread_per_group)),
        ),
        (
            "thread_affinity_single_hart",
            Flag(d.thread_affinity_single_hart),
        ),
        (
            "thread_affinity_hart_group",
            Flag(d.thread_affinity_hart_group),
        ),
        ("dpa_coredump_type", Num(u64::from(d.dpa_coredump_type))),
        (
            "dpa_platform_version",
            Num(u64::from(d.dpa_platform_version)),
        ),
        ("dpa_os_api_version", Num(u64::from(d.dpa_os_api_version))),
    ]
}

/// General object types this driver knows by name (`MLX5_OBJ_TYPE_*`, mlx5_ifc.h).
const OBJ_TYPE_NAMES: &[(u16, &str)] = {
    use mlx5_dpa::mlx5::layouts::dpa::obj_type as t;
    &[
        (t::DPA_MEM, "DPA_MEM"),
        (t::DPA_PROCESS, "DPA_PROCESS"),
        (t::DPA_THREAD, "DPA_THREAD"),
        (t::RESERVED_QPN, "RESERVED_QPN"),
        (t::DPA_OUTBOX, "DPA_OUTBOX"),
        (t::DB_CQ_MAPPING, "DB_CQ_MAPPING"),
        (t::DPA_EQ, "DPA_EQ"),
        (t::DPA_WINDOW, "DPA_WINDOW"),
        (t::EMULATED_DEV_EQ, "EMULATED_DEV_EQ"),
        (t::DPA_UAR, "DPA_UAR"),
    ]
};

/// The object types set in the two masks (bit N of `general_obj_types` = type N, bit N of
/// `general_obj_types_127_64` = type 64 + N): names where known, else `type 0xNN`.
fn obj_types(low: u64, high: u64) -> Vec<String> {
    (0u16..128)
        .filter(|&t| {
            let (word, bit) = if t < 64 { (low, t) } else { (high, t - 64) };
            word >> bit & 1 == 1
        })
        .map(|t| {
            OBJ_TYPE_NAMES
                .iter()
                .find(|(n, _)| *n == t)
                .map_or(format!("type {t:#04x}"), |(_, name)| (*name).to_string())
        })
        .collect()
}

fn caps(cli: &Cli, as_json: bool) -> Result<(), ToolError> {
    let opened = open_device(cli)?;
    let dev = &opened.devx;
    let c = devx::query_caps(dev.as_ref())?;
    let types = obj_types(c.general.general_obj_types, c.general_obj_types_127_64);
    let general = general_caps(&c.general);
    let dpa = c.dpa.as_ref().map(dpa_caps);
    let model = opened.model.as_ref().map(|m| {
        m.with_profile_mut(|p| {
            (
                p.name,
                p.dpa_cores,
                p.dpa_eus_per_core,
                p.comp_vectors,
                p.mac,
            )
        })
    });
    let mac = |m: [u8; 6]| {
        m.iter()
            .map(|b| format!("{b:02x}"))
            .collect::<Vec<_>>()
            .join(":")
    };
    if as_json {
        let obj = |rows: &[(&str, Cap)]| {
            Json::Object(
                rows.iter()
                    .map(|(n, v)| ((*n).to_string(), v.json()))
                    .collect(),
            )
        };
        let dpa_json = match (&c.dpa, &dpa) {
            (Some(d), Some(rows)) => {
                let mut o = obj(rows);
                if let Json::Object(m) = &mut o {
                    m.insert("process_mem_bytes".into(), json!(d.process_mem_bytes()));
                    m.insert("usable".into(), json!(c.has_dpa()));
                }
                o
            }
            _ => Json::Null,
        };
        let model_json = model.map(|(name, cores, eus, vectors, m)| {
            json!({"profile": name, "dpa_cores": cores, "dpa_eus_per_core": eus,
                   "comp_vectors": vectors, "mac": mac(m)})
        });
        println!(
            "{}",
            json!({
                "device": dev.describe(),
                "general": obj(&general),
                "general_obj_types": format!("{:#018x}", c.general.general_obj_types),
                "general_obj_types_127_64": format!("{:#018x}", c.general_obj_types_127_64),
                "obj_types": types,
                "dpa": dpa_json,
                "model": model_json,
            })
        );
        return Ok(());
    }
    println!("device: {}", dev.describe());
    println!("general capabilities (cmd_hca_cap):");
    for (n, v) in &general {
        println!("  {n:<34} {}", v.text());
    }
    println!(
        "  {:<34} {:#018x} {:#018x} (127..64, 63..0)",
        "general_obj_types", c.general_obj_types_127_64, c.general.general_obj_types
    );
    println!("  {:<34} {}", "object types", types.join(", "));
    match (&c.dpa, &dpa) {
        (Some(d), Some(rows)) => {
            println!("DPA capabilities (dpa_cap):");
            for (n, v) in rows {
                println!("  {n:<34} {}", v.text());
            }
            println!("  {:<34} {} bytes", "process memory", d.process_mem_bytes());
            println!(
                "DPA usable (apu, DPA page, process/thread/memory object types): {}",
                if c.has_dpa() { "yes" } else { "no" }
            );
        }
        _ => println!("DPA: not present"),
    }
    if let Some((name, cores, eus, vectors, m)) = model {
        // What the capability pages do not carry: the model's topology.
        println!("model profile: {name}");
        if cores > 0 {
            println!(
                "model DPA: {cores} cores x {eus} execution units = {} harts",
                cores * eus
            );
        }
        println!("model completion vectors: {vectors}");
        println!("model MAC: {}", mac(m));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

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
