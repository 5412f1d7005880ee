//! `mlx5-dpa elf info FILE [--app NAME] [--json]`: the DPA applications of a device ELF, or of
//! a host ELF that carries them in `.dpa_bin_<app>` sections (DPACC packaging, FACTS.md
//! sections 5 and 7; `mlx5_dpa::dpa::app`).
//!
//! For each application: its name, size, `e_flags` and ISA string, the signature (present,
//! where, `metadata_version` and `signature_type`), the `PT_LOAD` segments and the entry
//! symbols (global functions):
//!
//! ```text
//! app rpc_calc: device ELF of 15128 bytes
//!   e_flags: 0x1 (RVC, soft-float)
//!   isa: rv64i2p1_m2p0_a2p1_c2p0_zmmul1p0_zbb1p0_zbs1p0
//!   signature: .dpa_sig_rpc_calc (host ELF, 104 bytes), metadata_version 1, signature_type 2 (RSA_SHA_512)
//!   segments:
//!     0x0000000040000000 memsz 0x1188 r-x
//!   entries:
//!     0x0000000040000030 rpc_calculate_rpc_stub
//! ```
//!
//! `--json` prints one object `{"file", "apps": [{name, size, e_flags, isa, signature,
//! segments, entries}]}`. A malformed file is an error naming what is wrong (exit status 1);
//! only regular files of at most 256 MiB are read (`input::MAX_ELF_FILE`).

use std::io::Write;
use std::path::{Path, PathBuf};

use mlx5_dpa::dpa::app::{select_app, App, AppError, SignatureLocation, SignatureStatus};
use serde_json::{json, Value as Json};

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
        /// One JSON object instead of text.
        #[arg(long)]
        json: bool,
    },
}

/// Why `elf info` failed.
#[derive(Debug, thiserror::Error)]
pub enum ElfCmdError {
    #[error(transparent)]
    Read(#[from] crate::input::InputError),
    #[error("{path}: {source}")]
    App { path: String, source: AppError },
}

/// Runs an `elf` subcommand.
pub fn run(cmd: &ElfCmd) -> Result<(), ElfCmdError> {
    match cmd {
        ElfCmd::Info { file, app, json } => info(file, app.as_deref(), *json),
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
        Some(name) => Ok(vec![select_app(apps, name).map_err(wrap)?]),
        None => Ok(apps),
    }
}

fn info(path: &Path, app: Option<&str>, as_json: bool) -> Result<(), ElfCmdError> {
    let apps = load(path, app)?;
    let out = if as_json {
        let list: Vec<Json> = apps.iter().map(app_json).collect();
        format!(
            "{}\n",
            json!({"file": path.display().to_string(), "apps": list})
        )
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
    }
}

/// One application as text.
fn app_text(a: &App) -> String {
    let mut s = format!(
        "app {}: device ELF of {} bytes\n",
        a.name(),
        a.image().len()
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

/// One application as JSON.
fn app_json(a: &App) -> Json {
    let signature = match a.signature() {
        SignatureStatus::Unsigned => json!({"present": false}),
        SignatureStatus::Missing { section } => {
            json!({"present": false, "section": section, "missing": true})
        }
        SignatureStatus::Present(sig) => json!({
            "present": true,
            "section": sig.section,
            "location": location(sig.location),
            "sh_type": sig.sh_type,
            "size": sig.size,
            "metadata_version": sig.metadata.metadata_version(),
            "signature_type": sig.metadata.signature_type(),
            "signature_type_name": sig.metadata.signature_type_name(),
        }),
    };
    let segments: Vec<Json> = a
        .segments()
        .iter()
        .map(|s| json!({"vaddr": s.vaddr, "filesz": s.filesz, "memsz": s.memsz, "flags": s.flags_str()}))
        .collect();
    let entries: Vec<Json> = a
        .entries()
        .iter()
        .map(|e| json!({"name": e.name, "addr": e.addr, "size": e.size}))
        .collect();
    json!({
        "name": a.name(),
        "size": a.image().len(),
        "e_flags": a.e_flags(),
        "e_flags_text": a.e_flags_str(),
        "isa": a.isa(),
        "signature": signature,
        "segments": segments,
        "entries": entries,
    })
}
