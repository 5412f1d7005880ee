//! `mlx5-dpa elf info FILE [--app NAME] [--json]`: the DPA applications of a device ELF, or of
//! a host ELF that carries them in `.dpa_bin_<app>` sections (DPACC packaging, docs/sources.md
//! sections 5 and 7; `mlx5_dpa::dpa::app`).
//!
//! For each application: its name, size, `e_flags` and ISA string, the signature (present,
//! where, `metadata_version` and `signature_type`), the `PT_LOAD` segments and the entry
//! symbols (global functions):
//!
//! ```text
//! app rpc_calc: device ELF of 15128 bytes
//!   hw model: nv-dpa-bf3 (unlabelled: a BlueField-3 build)
//!   e_flags: 0x1 (RVC, soft-float)
//!   isa: rv64i2p1_m2p0_a2p1_c2p0_zmmul1p0_zbb1p0_zbs1p0
//!   signature: .dpa_sig_rpc_calc (host ELF, 104 bytes), metadata_version 1, signature_type 2 (RSA_SHA_512)
//!   segments:
//!     0x0000000040000000 memsz 0x1188 r-x
//!   entries:
//!     0x0000000040000030 mlx5_dpa_rpc_entry
//! ```
//!
//! A copy built for a named hardware model (`mlx5-dpa cc --cpu`, section
//! `.dpa_bin_<app>@nv-dpa-<model>`, `mlx5_dpa::dpa::hw_model`) shows as `app <app>@nv-dpa-<model>`;
//! `--app NAME` shows every copy of that name.
//!
//! `--json` prints one object `{"file", "apps": [{name, hw_model, hw_model_labelled, size,
//! e_flags, isa, signature, segments, entries}]}`. A malformed file is an error naming what is wrong (exit status 1);
//! only regular files of at most 256 MiB are read (`input::MAX_ELF_FILE`).
//!
//! `mlx5-dpa elf isa FILE [--app NAME] [--json]`: every instruction of the application's code
//! that the model's engine cannot execute (`mlx5_sim::riscv::isa`). The sweep covers each
//! function symbol with a size that lies in an executable segment (aliases counted once), or
//! the executable segments whole when the program has no such symbols:
//!
//! ```text
//! app dpa_nvme: isa rv64i2p0_m2p0_a2p0_c2p0_zbb1p0_zbp0p93_zbr0p93_zbs1p0_xfenceheap1p0_...
//!   swept: 7896 instructions (22282 bytes) in 212 functions
//!   undecodable: none
//! ```
//!
//! or one line per undecodable encoding, `0x40001234 <func+0x1a>: 0x0000100b` with the custom
//! opcode space named where the encoding lies in one. Exit status: 0 when every instruction
//! decodes, 3 when some do not, 1 when the file cannot be read.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use mlx5_dpa::dpa::app::{
    app_names, App, AppError, SignatureLocation, SignatureStatus, MODEL_SEPARATOR,
};
use mlx5_dpa::dpa::elf::Elf;
use mlx5_sim::riscv::isa::{Sweep, Undecodable};
use serde::Serialize;

/// `elf` subcommands.
#[derive(clap::Subcommand, Debug)]
pub enum ElfCmd {
    /// The DPA applications of a device ELF or of a host ELF with embedded apps.
    Info {
        /// A DPA device ELF (RISC-V), or a host ELF with `.dpa_bin_<app>` sections.
        file: PathBuf,
        /// Only this application.
        #[arg(long, value_name = "NAME")]
        app: Option<String>,
        /// The application's signature as a separate file (as snap ships `dpa_nvme.sig`).
        /// Without it, `FILE.sig` is used when it exists next to a device ELF.
        #[arg(long, value_name = "FILE")]
        sig: Option<PathBuf>,
        /// One JSON object instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Every instruction of a DPA application that the model's RISC-V engine cannot execute
    /// (exit status 3 when there is any).
    Isa {
        /// A DPA device ELF (RISC-V), or a host ELF with `.dpa_bin_<app>` sections.
        file: PathBuf,
        /// Only this application.
        #[arg(long, value_name = "NAME")]
        app: Option<String>,
        /// One JSON object instead of text.
        #[arg(long)]
        json: bool,
    },
}

/// Exit status of `elf isa` when some instruction does not decode.
pub const UNDECODABLE_EXIT: u8 = 3;

/// Why an `elf` subcommand failed.
#[derive(Debug, thiserror::Error)]
pub enum ElfCmdError {
    #[error(transparent)]
    Read(#[from] crate::input::InputError),
    #[error("{path}: {source}")]
    App { path: String, source: AppError },
    #[error("{path} carries {apps} applications: a separate signature file (--sig) names one (use --app)")]
    SigForMany { path: String, apps: usize },
    #[error("{path}: app {app}: {source}")]
    Elf {
        path: String,
        app: String,
        source: mlx5_dpa::dpa::elf::ElfError,
    },
}

/// Runs an `elf` subcommand.
pub fn run(cmd: &ElfCmd) -> Result<ExitCode, ElfCmdError> {
    match cmd {
        ElfCmd::Info {
            file,
            app,
            sig,
            json,
        } => info(file, app.as_deref(), sig.as_deref(), *json).map(|()| ExitCode::SUCCESS),
        ElfCmd::Isa { file, app, json } => isa(file, app.as_deref(), *json),
    }
}

/// The applications of `path`, or just `app`.
fn load(path: &Path, app: Option<&str>) -> Result<Vec<App>, ElfCmdError> {
    let shown = path.display().to_string();
    let bytes = crate::input::read_bounded(path, crate::input::MAX_ELF_FILE)?;
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let wrap = |source| ElfCmdError::App {
        path: shown.clone(),
        source,
    };
    let apps = App::all_in_elf(&stem, &bytes).map_err(wrap)?;
    match app {
        // Every copy of that name (one per hardware model it was built for).
        Some(name) => {
            let available = app_names(&apps);
            let copies: Vec<App> = apps.into_iter().filter(|a| a.name() == name).collect();
            if copies.is_empty() {
                return Err(wrap(AppError::NoSuchApp {
                    name: name.to_string(),
                    available,
                }));
            }
            Ok(copies)
        }
        None => Ok(apps),
    }
}

/// The signature file for a device ELF: `--sig`, else `FILE.sig` when it exists.
fn signature_file(path: &Path, sig: Option<&Path>) -> Option<PathBuf> {
    match sig {
        Some(s) => Some(s.to_path_buf()),
        None => {
            let beside = crate::input::sig_beside(path);
            beside.is_file().then_some(beside)
        }
    }
}

fn info(
    path: &Path,
    app: Option<&str>,
    sig: Option<&Path>,
    as_json: bool,
) -> Result<(), ElfCmdError> {
    let mut apps = load(path, app)?;
    if let Some(sig_path) = signature_file(path, sig) {
        // A separate signature belongs to a device ELF: one application.
        if apps.len() != 1 {
            return Err(ElfCmdError::SigForMany {
                path: path.display().to_string(),
                apps: apps.len(),
            });
        }
        let bytes = crate::input::read_bounded(&sig_path, crate::input::MAX_ELF_FILE)?;
        let shown = sig_path.display().to_string();
        let a = apps.remove(0);
        apps.push(
            a.with_signature_file(&shown, &bytes)
                .map_err(|source| ElfCmdError::App {
                    path: shown.clone(),
                    source,
                })?,
        );
    }
    let out = if as_json {
        let list: Vec<AppJson<'_>> = apps.iter().map(app_json).collect();
        file_json(path, &list)
    } else {
        apps.iter().map(app_text).collect::<Vec<_>>().join("\n")
    };
    // A closed pipe (`| head`) is not an error of the inspection.
    let _ = std::io::stdout().write_all(out.as_bytes());
    Ok(())
}

fn location(l: SignatureLocation) -> &'static str {
    match l {
        SignatureLocation::Host => "host ELF",
        SignatureLocation::Device => "device ELF",
        SignatureLocation::File => "separate file",
    }
}

/// An application's name as shown: with `@nv-dpa-<model>` for a copy labelled with its hardware
/// model (`.dpa_bin_<app>@nv-dpa-<model>`).
fn shown_name(a: &App) -> String {
    match a.hw_model_label() {
        Some(m) => format!("{}{MODEL_SEPARATOR}{}", a.name(), m.mcpu()),
        None => a.name().to_string(),
    }
}

/// One application as text.
fn app_text(a: &App) -> String {
    let mut s = format!(
        "app {}: device ELF of {} bytes\n",
        shown_name(a),
        a.image().len()
    );
    s += &format!(
        "  hw model: {}{}\n",
        a.hw_model().mcpu(),
        if a.hw_model_label().is_some() {
            ""
        } else {
            " (unlabelled: a BlueField-3 build)"
        }
    );
    s += &format!("  e_flags: {:#x} ({})\n", a.e_flags(), a.e_flags_str());
    s += &format!("  isa: {}\n", a.isa().unwrap_or("(no .riscv.attributes)"));
    s += "  signature: ";
    s += &match a.signature() {
        SignatureStatus::Unsigned => "none".to_string(),
        SignatureStatus::Missing { section } => {
            format!("{section} named, but the host ELF has no such section")
        }
        SignatureStatus::Present(sig) => format!(
            "{} ({}, {} bytes), metadata_version {}, signature_type {}{}",
            sig.section,
            location(sig.location),
            sig.size,
            sig.metadata.metadata_version(),
            sig.metadata.signature_type(),
            sig.metadata
                .signature_type_name()
                .map(|n| format!(" ({n})"))
                .unwrap_or_default()
        ),
    };
    s += "\n  segments:\n";
    for seg in a.segments() {
        s += &format!(
            "    {:#018x} memsz {:#x} {}\n",
            seg.vaddr,
            seg.memsz,
            seg.flags_str()
        );
    }
    s += "  entries:\n";
    for e in a.entries() {
        s += &format!("    {:#018x} {}\n", e.addr, e.name);
    }
    s
}

/// The `--json` document of both subcommands: the file and one object per application.
fn file_json<T: Serialize>(path: &Path, apps: &[T]) -> String {
    #[derive(Serialize)]
    struct FileJson<'a, T> {
        file: String,
        apps: &'a [T],
    }
    let doc = FileJson {
        file: path.display().to_string(),
        apps,
    };
    format!("{}\n", serde_json::to_string(&doc).unwrap_or_default())
}

/// `elf info --json`: one application.
#[derive(Serialize)]
struct AppJson<'a> {
    name: &'a str,
    hw_model: &'static str,
    hw_model_labelled: bool,
    size: usize,
    e_flags: u32,
    e_flags_text: String,
    isa: Option<&'a str>,
    signature: SignatureJson<'a>,
    segments: Vec<SegmentJson>,
    entries: Vec<EntryJson<'a>>,
}

/// The signature of an application; absent fields are left out.
#[derive(Serialize)]
struct SignatureJson<'a> {
    present: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    section: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    missing: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    location: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    sh_type: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    size: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    metadata_version: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    signature_type: Option<u32>,
    /// `null` for a type this tool does not name, so present whenever the signature is.
    #[serde(skip_serializing_if = "Option::is_none")]
    signature_type_name: Option<Option<&'static str>>,
}

#[derive(Serialize)]
struct SegmentJson {
    vaddr: u64,
    filesz: u64,
    memsz: u64,
    flags: String,
}

#[derive(Serialize)]
struct EntryJson<'a> {
    name: &'a str,
    addr: u64,
    size: u64,
}

/// One application as JSON.
fn app_json(a: &App) -> AppJson<'_> {
    let absent = SignatureJson {
        present: false,
        section: None,
        missing: None,
        location: None,
        sh_type: None,
        size: None,
        metadata_version: None,
        signature_type: None,
        signature_type_name: None,
    };
    let signature = match a.signature() {
        SignatureStatus::Unsigned => absent,
        SignatureStatus::Missing { section } => SignatureJson {
            section: Some(section),
            missing: Some(true),
            ..absent
        },
        SignatureStatus::Present(sig) => SignatureJson {
            present: true,
            section: Some(&sig.section),
            location: Some(location(sig.location)),
            sh_type: Some(sig.sh_type),
            size: Some(sig.size),
            metadata_version: Some(sig.metadata.metadata_version()),
            signature_type: Some(sig.metadata.signature_type()),
            signature_type_name: Some(sig.metadata.signature_type_name()),
            ..absent
        },
    };
    AppJson {
        name: a.name(),
        hw_model: a.hw_model().mcpu(),
        hw_model_labelled: a.hw_model_label().is_some(),
        size: a.image().len(),
        e_flags: a.e_flags(),
        e_flags_text: a.e_flags_str(),
        isa: a.isa(),
        signature,
        segments: a
            .segments()
            .iter()
            .map(|s| SegmentJson {
                vaddr: s.vaddr,
                filesz: s.filesz,
                memsz: s.memsz,
                flags: s.flags_str(),
            })
            .collect(),
        entries: a
            .entries()
            .iter()
            .map(|e| EntryJson {
                name: &e.name,
                addr: e.addr,
                size: e.size,
            })
            .collect(),
    }
}

/// `elf isa --json`: one application's sweep.
#[derive(Serialize)]
struct IsaJson<'a> {
    name: &'a str,
    hw_model: &'static str,
    isa: Option<&'a str>,
    instructions: u64,
    bytes: u64,
    functions: usize,
    undecodable: Vec<UndecodableJson>,
}

#[derive(Serialize)]
struct UndecodableJson {
    addr: u64,
    encoding: u32,
    len: u8,
    function: Option<String>,
    opcode_space: Option<&'static str>,
}

/// What `elf isa` found in one application.
struct IsaReport {
    sweep: Sweep,
    functions: usize,
    /// Function symbols (address, size, name), sorted by address, to name addresses.
    symbols: Vec<(u64, u64, String)>,
}

/// Sweeps the code of one application: its sized function symbols inside executable segments,
/// or its executable segments when it has none.
fn sweep_app(elf: &Elf<'_>) -> IsaReport {
    let exec: Vec<_> = elf.load_segments().filter(|s| s.executable()).collect();
    let in_segment = |addr: u64, size: u64| {
        exec.iter().find_map(|seg| {
            let start = addr.checked_sub(seg.vaddr)?;
            let end = start.checked_add(size)?;
            (end <= seg.data.len() as u64).then(|| &seg.data[start as usize..end as usize])
        })
    };
    let mut symbols: Vec<(u64, u64, String)> = elf
        .symbols()
        .iter()
        .filter(|s| s.kind() == 2 && s.is_defined() && s.size > 0)
        .filter(|s| in_segment(s.value, s.size).is_some())
        .map(|s| (s.value, s.size, s.name.clone()))
        .collect();
    symbols.sort();
    symbols.dedup_by_key(|s| s.0);
    let mut sweep = Sweep::default();
    if symbols.is_empty() {
        for seg in &exec {
            sweep.add(seg.data, seg.vaddr);
        }
    } else {
        // Each byte once: a function overlapping the previous one starts where that ended.
        let mut covered = 0u64;
        for (addr, size, _) in &symbols {
            let start = (*addr).max(covered);
            let end = addr + size;
            if start < end {
                if let Some(code) = in_segment(start, end - start) {
                    sweep.add(code, start);
                }
                covered = end;
            }
        }
    }
    IsaReport {
        sweep,
        functions: symbols.len(),
        symbols,
    }
}

/// `<func+0x1a>` for an address inside a known function.
fn where_in(symbols: &[(u64, u64, String)], addr: u64) -> Option<String> {
    let i = symbols.partition_point(|s| s.0 <= addr).checked_sub(1)?;
    let (start, size, name) = &symbols[i];
    (addr < start + size).then(|| format!("{name}+{:#x}", addr - start))
}

fn undecodable_text(u: &Undecodable, symbols: &[(u64, u64, String)]) -> String {
    let mut s = format!("    {:#x}", u.addr);
    if let Some(w) = where_in(symbols, u.addr) {
        s += &format!(" <{w}>");
    }
    s += &match u.len {
        0 => format!(
            ": {:#06x} (cut off: the code ends inside the instruction)",
            u.encoding
        ),
        2 => format!(": {:#06x}", u.encoding),
        _ => format!(": {:#010x}", u.encoding),
    };
    if let Some(space) = u.opcode_space() {
        s += &format!(" ({space})");
    }
    s
}

fn isa(path: &Path, app: Option<&str>, as_json: bool) -> Result<ExitCode, ElfCmdError> {
    let apps = load(path, app)?;
    let mut any = false;
    let mut text = String::new();
    let mut list = Vec::new();
    for a in &apps {
        let elf = a.elf().map_err(|source| ElfCmdError::Elf {
            path: path.display().to_string(),
            app: a.name().to_string(),
            source,
        })?;
        let r = sweep_app(&elf);
        any |= !r.sweep.undecodable.is_empty();
        if as_json {
            let undecodable = r
                .sweep
                .undecodable
                .iter()
                .map(|u| UndecodableJson {
                    addr: u.addr,
                    encoding: u.encoding,
                    len: u.len,
                    function: where_in(&r.symbols, u.addr),
                    opcode_space: u.opcode_space().map(|o| o.name()),
                })
                .collect();
            list.push(IsaJson {
                name: a.name(),
                hw_model: a.hw_model().mcpu(),
                isa: a.isa(),
                instructions: r.sweep.instructions,
                bytes: r.sweep.bytes,
                functions: r.functions,
                undecodable,
            });
        } else {
            text += &format!(
                "app {}: isa {}\n",
                shown_name(a),
                a.isa().unwrap_or("(no .riscv.attributes)")
            );
            let scope = if r.functions == 0 {
                "the executable segments (no function symbols)".to_string()
            } else {
                format!("{} functions", r.functions)
            };
            text += &format!(
                "  swept: {} instructions ({} bytes) in {scope}\n",
                r.sweep.instructions, r.sweep.bytes
            );
            if r.sweep.undecodable.is_empty() {
                text += "  undecodable: none\n";
            } else {
                text += &format!("  undecodable: {}\n", r.sweep.undecodable.len());
                for u in &r.sweep.undecodable {
                    text += &undecodable_text(u, &r.symbols);
                    text += "\n";
                }
            }
        }
    }
    let out = if as_json {
        file_json(path, &list)
    } else {
        text
    };
    let _ = std::io::stdout().write_all(out.as_bytes());
    Ok(if any {
        ExitCode::from(UNDECODABLE_EXIT)
    } else {
        ExitCode::SUCCESS
    })
}
