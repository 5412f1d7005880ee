//! `mlx5-dpa`: the command-line face of the driver.
//!
//! - `devices`: the mlx5 devices of this machine.
//! - `prm layouts [--json] [NAME]`: the PRM layout table.
//! - `prm decode LAYOUT HEX|@FILE`: every field of a captured mailbox.
//! - `cmd HEX|@FILE`: send a raw command inbox to the device and decode the answer.
//! - `caps`: the device's capabilities.
//!
//! `--device NAME` picks a hardware device; `--sim` asks for the device model.

use std::process::ExitCode;
use std::sync::Arc;

use clap::{Parser, Subcommand};
use mlx5_dpa::devx::{self, Devx, DevxError};
use mlx5_dpa::mlx5::decode::{self, Value};
use mlx5_dpa::mlx5::layouts;
use mlx5_dpa::mlx5::{Opcode, Status};
use serde_json::{json, Map, Value as Json};

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
    /// Use the device model (`mlx5-sim`) instead of hardware; optional profile name.
    #[arg(long, global = true, value_name = "PROFILE", num_args = 0..=1, require_equals = true, default_missing_value = "bf3")]
    sim: Option<String>,
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
    #[error("{0}")]
    Input(String),
    #[error(transparent)]
    Decode(#[from] decode::DecodeError),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
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
    }
}

fn open_device(cli: &Cli) -> Result<Arc<dyn Devx>, ToolError> {
    if let Some(profile) = &cli.sim {
        return Err(ToolError::Devx(DevxError::Unsupported(format!(
            "the device model (mlx5-sim, profile {profile:?}) is not part of this build yet; \
             it arrives with the mlx5-sim work. Hardware is used with --device NAME"
        ))));
    }
    let dev = devx::kernel::KernelDevx::open(cli.device.as_deref())?;
    Ok(dev)
}

fn devices() -> Result<(), ToolError> {
    let list = devx::list_devices();
    if list.is_empty() {
        println!(
            "No mlx5 devices found (looked in {}).",
            devx::discovery::searched()
        );
        println!("Without hardware, use the device model: mlx5-dpa --sim ...");
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
    let dev = open_device(cli)?;
    println!("device:  {}", dev.describe());
    println!(
        "command: {op}, op_mod {op_mod:#x}, sent as {:?}",
        op.devx_method()
    );
    let (outbox, obj) = devx::raw_command(&dev, &inbox, len)?;
    let status = Status(outbox[0]);
    let syndrome = u32::from_be_bytes([outbox[4], outbox[5], outbox[6], outbox[7]]);
    println!("status:  {status}");
    println!("syndrome: {syndrome:#010x}");
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

fn caps(cli: &Cli) -> Result<(), ToolError> {
    let dev = open_device(cli)?;
    let c = devx::query_caps(dev.as_ref())?;
    println!("device: {}", dev.describe());
    println!("{:#?}", c.general);
    println!(
        "general_obj_types: {:#018x} {:#018x}",
        c.general.general_obj_types, c.general_obj_types_127_64
    );
    match &c.dpa {
        Some(d) => println!(
            "DPA: {d:#?}\nprocess memory: {} bytes",
            d.process_mem_bytes()
        ),
        None => println!("DPA: not present"),
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
