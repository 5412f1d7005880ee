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
//! `--device NAME` picks a hardware device; `--sim` (or `--sim=PROFILE`) asks for the device
//! model (`mlx5-sim`). Without either, the first hardware device is used, and the device model
//! (profile bf3) when the machine has none. `--trace` prints every firmware command (opcode,
//! status, syndrome, duration) on stderr as the `tracing` events of the model; `RUST_LOG`
//! overrides the filter.

mod demo;
mod elf;
mod vm;

use std::process::ExitCode;
use std::sync::Arc;

use clap::{Parser, Subcommand};
use mlx5_dpa::devx::{self, Devx, DevxError};
use mlx5_dpa::mlx5::decode::{self, Value};
use mlx5_dpa::mlx5::layouts;
use mlx5_dpa::mlx5::{Opcode, Status};
use mlx5_sim::profile::Profile;
use serde_json::{json, Map, Value as Json};

/// The profile `--sim` without a value, and the hardware fallback, use.
const DEFAULT_PROFILE: &str = "bf3";

#[derive(Parser, Debug)]
#[command(
    name = "mlx5-dpa",
    version,
    about = "Pure-Rust mlx5 / BlueField-3 DPA driver over DevX"
)]
struct Cli {
    /// Use this hardware device (an RDMA device name such as mlx5_0).
    #[arg(long, global = true, value_name = "NAME")]
    device: Option<String>,
    /// Use the device model (`mlx5-sim`) instead of hardware: `--sim` is profile bf3,
    /// `--sim=cx7` picks another profile. Without hardware the model is used anyway.
    #[arg(
        long,
        global = true,
        value_name = "PROFILE",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = DEFAULT_PROFILE,
        conflicts_with = "device"
    )]
    sim: Option<String>,
    /// Print every firmware command (opcode, status, syndrome, duration) on stderr.
    /// `RUST_LOG` overrides the filter (default: `mlx5_sim=debug,mlx5_dpa=debug`).
    #[arg(long, global = true)]
    trace: bool,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand, Debug)]
#[allow(clippy::enum_variant_names)] // `cmd` is the subcommand's name on the command line
enum Cmd {
    /// List the mlx5 devices of this machine.
    Devices,
    /// The PRM layouts this driver declares.
    Prm {
        #[command(subcommand)]
        what: PrmCmd,
    },
    /// Send a raw command inbox (hex, or @file of hex) to the device and decode the answer.
    Cmd {
        /// Inbox bytes as hex (spaces and 0x prefixes allowed) or @FILE.
        inbox: String,
        /// Output mailbox length in bytes (default: the opcode's output layout, at least 16).
        #[arg(long)]
        out_len: Option<usize>,
    },
    /// Show the device's capabilities.
    Caps,
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
    /// Inspect DPA device ELFs and the host ELFs that carry them.
    Elf {
        #[command(subcommand)]
        what: elf::ElfCmd,
    },
    /// Run the device model as a small host: its port on a TAP interface (or in loopback),
    /// answering ARP and ping for `--ip` through the model's queues, until `--seconds` pass.
    Sim {
        /// Attach the model's port to this TAP interface (created if missing; needs
        /// CAP_NET_ADMIN). Then e.g. `ip addr add 10.99.0.1/24 dev NAME; ip link set NAME up;
        /// ping 10.99.0.2`.
        #[arg(long, value_name = "NAME")]
        tap: Option<String>,
        /// The address the model answers for.
        #[arg(long, default_value = "10.99.0.2")]
        ip: std::net::Ipv4Addr,
        /// How long to run.
        #[arg(long, default_value_t = 60)]
        seconds: u64,
        /// Record every frame of the port to this pcap file.
        #[arg(long, value_name = "FILE")]
        pcap: Option<std::path::PathBuf>,
        /// Also run a DPA application on the model: `packet-processor` takes every IPv4 / UDP
        /// frame to the model's MAC, swaps its MACs, turns payload digits into letters and
        /// sends it back (FlexIO's packet-processor sample).
        #[arg(long, value_enum)]
        app: Option<SimApp>,
    },
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
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if cli.trace {
        init_tracing();
    }
    match run(&cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mlx5-dpa: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: &Cli) -> Result<(), ToolError> {
    match &cli.cmd {
        Cmd::Devices => devices(),
        Cmd::Prm {
            what: PrmCmd::Layouts { json, name },
        } => prm_layouts(*json, name.as_deref()),
        Cmd::Prm {
            what: PrmCmd::Decode { layout, bytes },
        } => prm_decode(layout, bytes),
        Cmd::Cmd { inbox, out_len } => raw_cmd(cli, inbox, *out_len),
        Cmd::Caps => caps(cli),
        Cmd::Demo { which } => {
            let opened = open_device(cli)?;
            Ok(demo::run(which, &opened.devx, opened.model.as_ref())?)
        }
        Cmd::Vm { what } => Ok(vm::run(what)?),
        Cmd::Elf { what } => Ok(elf::run(what)?),
        Cmd::Sim {
            tap,
            ip,
            seconds,
            pcap,
            app,
        } => sim(cli, tap.as_deref(), *ip, *seconds, pcap.as_deref(), *app),
    }
}

/// `mlx5-dpa sim`: the model as a host on a TAP interface.
fn sim(
    cli: &Cli,
    tap: Option<&str>,
    ip: std::net::Ipv4Addr,
    seconds: u64,
    pcap: Option<&std::path::Path>,
    app: Option<SimApp>,
) -> Result<(), ToolError> {
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
            .map_err(|e| ToolError::Input(format!("pcap: {e}")))?;
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
        processor = Some(p);
    }
    let mut r = Responder::new(&dev, ip, mac).map_err(|e| ToolError::Input(e.to_string()))?;
    let mac_s: Vec<String> = mac.iter().map(|b| format!("{b:02x}")).collect();
    println!(
        "answering ARP and ping for {ip} as {} for {seconds} s ({})",
        mac_s.join(":"),
        dev.describe()
    );
    let stop = std::sync::atomic::AtomicBool::new(false);
    r.run(&stop, Some(std::time::Duration::from_secs(seconds)));
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
    drop(processor);
    dev.stop_engine();
    drop(r);
    dev.stop_captures()
        .map_err(|e| ToolError::Input(format!("pcap: {e}")))?;
    Ok(())
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
        })
    }
}

/// `--sim[=PROFILE]` opens the model; `--device NAME` that hardware device; neither the first
/// hardware device, or the model (with a note on stderr) when the machine has none.
fn open_device(cli: &Cli) -> Result<Opened, ToolError> {
    if let Some(profile) = &cli.sim {
        return Opened::model(profile);
    }
    match devx::kernel::KernelDevx::open(cli.device.as_deref()) {
        Ok(dev) => Ok(Opened {
            devx: dev,
            model: None,
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

fn devices() -> Result<(), ToolError> {
    let list = devx::list_devices();
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
        Some(path) => std::fs::read_to_string(path)
            .map_err(|e| ToolError::Input(format!("cannot read {path}: {e}")))?,
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
            Value::Bytes(b) => {
                let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
                println!("  {:<48} {hex}", f.name);
            }
        }
    }
    Ok(())
}

fn prm_decode(layout: &str, bytes: &str) -> Result<(), ToolError> {
    let d = layouts::by_name(layout).ok_or_else(|| ToolError::UnknownLayout(layout.to_string()))?;
    let b = read_hex(bytes)?;
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

fn raw_cmd(cli: &Cli, inbox_arg: &str, out_len: Option<usize>) -> Result<(), ToolError> {
    let inbox = read_hex(inbox_arg)?;
    if inbox.len() < 16 {
        return Err(ToolError::Input(format!(
            "an inbox has at least the 16-byte header; got {} bytes",
            inbox.len()
        )));
    }
    let op = Opcode(u16::from_be_bytes([inbox[0], inbox[1]]));
    let op_mod = u16::from_be_bytes([inbox[6], inbox[7]]);
    let out_desc = out_layout(op);
    let len = out_len.unwrap_or(out_desc.size_bytes()).max(16);
    let opened = open_device(cli)?;
    let dev = &opened.devx;
    println!("device:  {}", dev.describe());
    println!(
        "command: {op}, op_mod {op_mod:#x}, sent as {:?}",
        op.devx_method()
    );
    let (outbox, obj) = devx::raw_command(dev, &inbox, len)?;
    let status = Status(outbox[0]);
    let syndrome = u32::from_be_bytes([outbox[4], outbox[5], outbox[6], outbox[7]]);
    println!("status:  {status}");
    println!("syndrome: {syndrome:#010x}");
    if opened.model.is_some() && syndrome != 0 {
        match mlx5_sim::Check::by_syndrome(syndrome) {
            Some(c) => println!("model check: {}", c.what),
            None => println!("model check: (syndrome not one of the model's checks)"),
        }
    }
    println!("outbox ({} bytes):", outbox.len());
    print!("{}", hex_dump(&outbox));
    let shown = &outbox[..out_desc.size_bytes().min(outbox.len())];
    if shown.len() == out_desc.size_bytes() {
        println!("{}:", out_desc.name);
        print_fields(out_desc, shown)?;
    }
    if let Some(o) = obj {
        o.destroy()?;
        println!("(the created object was destroyed again)");
    }
    Ok(())
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

fn caps(cli: &Cli) -> Result<(), ToolError> {
    let opened = open_device(cli)?;
    let dev = &opened.devx;
    let c = devx::query_caps(dev.as_ref())?;
    println!("device: {}", dev.describe());
    println!("general capabilities: {:#?}", c.general);
    println!(
        "general_obj_types: {:#018x} {:#018x}",
        c.general.general_obj_types, c.general_obj_types_127_64
    );
    match &c.dpa {
        Some(d) => {
            println!("DPA capabilities: {d:#?}");
            println!("DPA process memory: {} bytes", d.process_mem_bytes());
            println!(
                "DPA usable (apu, DPA page, process/thread/memory object types): {}",
                if c.has_dpa() { "yes" } else { "no" }
            );
        }
        None => println!("DPA: not present"),
    }
    if let Some(model) = &opened.model {
        // What the capability pages do not carry: the model's topology.
        let (name, cores, eus, vectors, mac) = model.with_profile_mut(|p| {
            (
                p.name,
                p.dpa_cores,
                p.dpa_eus_per_core,
                p.comp_vectors,
                p.mac,
            )
        });
        let mac: Vec<String> = mac.iter().map(|b| format!("{b:02x}")).collect();
        println!("model profile: {name}");
        if cores > 0 {
            println!(
                "model DPA: {cores} cores x {eus} execution units = {} harts",
                cores * eus
            );
        }
        println!("model completion vectors: {vectors}");
        println!("model MAC: {}", mac.join(":"));
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
