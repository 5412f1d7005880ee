//! Packaging DPA device code into a Rust host program, as DPACC packages it into a C one: a
//! build-script helper that puts each device ELF into the host binary's `.dpa_bin_<app>`
//! section (docs/sources.md section 5; what [`super::app::App::all_in_host_elf`] and `mlx5-dpa elf
//! info` read) and gives typed host-side handles to its entry points, checked at build time
//! against the ELF's symbols.
//!
//! In `build.rs` (with `mlx5-dpa` as a build dependency):
//!
//! ```no_run
//! use mlx5_dpa::dpa::embed::EmbeddedApp;
//! fn main() {
//!     mlx5_dpa::dpa::embed::embed(&[EmbeddedApp::new("calc", "dpa/calc.elf")
//!         .rpc("rpc_calculate", 2)
//!         .handler("calc_event_handler")])
//!     .unwrap_or_else(|e| panic!("{e}"));
//! }
//! ```
//!
//! and in the program, `include!(concat!(env!("OUT_DIR"), "/dpa_apps.rs"));` gives, per
//! application, a module of its name:
//!
//! - `calc::NAME`, `calc::image()` (the device ELF, from the program's own `.dpa_bin_calc`
//!   section) and `calc::app()` (it as an [`App`](super::app::App));
//! - `calc::rpc::rpc_calculate(&process, a0, a1) -> Result<u64, DpaError>`, one function per
//!   declared RPC with as many `u64` arguments as declared ([`super::Process::call`]);
//! - `calc::handlers::calc_event_handler(arg) -> EventHandlerAttr`, one per declared event
//!   handler;
//! - the `.dpa_sig_name_calc` section (256 bytes, DPACC's): the name of the signature section,
//!   or all NUL when unsigned; with [`EmbeddedApp::signature`], the crypto data in
//!   `.dpa_sig_calc`, `calc::crypto_data()`, and `calc::process_attr()` that hands it to
//!   firmware with the image (a device with DPA Application Authentication needs it).
//!
//! The build fails, naming the application, when the ELF is not a DPA device ELF, a declared
//! symbol is not a function the ELF defines, an RPC takes more than eight arguments, RPCs are
//! declared for a program without this project's RPC runtime, or a name is no Rust
//! identifier. (Argument counts are the declaration's: a stripped ELF does not say them.)

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use thiserror::Error;

use super::app::{BIN_PREFIX, SIG_NAME_LEN, SIG_NAME_PREFIX};
use super::auth;
use super::elf::Elf;
use super::process::{MAX_RPC_ARGS, RPC_ENTRY, RPC_GENERIC_UNPACK};

/// The file [`embed`] writes into `OUT_DIR`.
pub const GENERATED_FILE: &str = "dpa_apps.rs";

/// `STT_FUNC`.
const STT_FUNC: u8 = 2;

/// Why an application cannot be embedded.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum EmbedError {
    #[error("application {app:?}: cannot read {path}: {source}")]
    Read {
        app: String,
        path: String,
        source: std::io::Error,
    },
    #[error("application {app:?}: {path} is not a DPA device ELF: {reason}")]
    NotDeviceElf {
        app: String,
        path: String,
        reason: String,
    },
    #[error("application {app:?}: {path} defines no function {symbol:?} (declared as {what})")]
    NoSymbol {
        app: String,
        path: String,
        symbol: String,
        what: &'static str,
    },
    #[error("application {app:?}: RPC {symbol:?} declared with {args} arguments; at most {MAX_RPC_ARGS}")]
    TooManyArgs {
        app: String,
        symbol: String,
        args: usize,
    },
    #[error(
        "application {app:?}: RPCs declared, but {path} lacks the RPC runtime ({RPC_ENTRY}, \
         {RPC_GENERIC_UNPACK}): link it with the project's device runtime (`mlx5-dpa cc`)"
    )]
    NoRpcRuntime { app: String, path: String },
    #[error("{what} {name:?} is not a Rust identifier (letters, digits, `_`; not a keyword)")]
    BadName { what: &'static str, name: String },
    #[error("application {0:?} is declared twice")]
    Duplicate(String),
    #[error("application {app:?}: signature {path}: {reason}")]
    Signature {
        app: String,
        path: String,
        reason: String,
    },
    #[error("OUT_DIR is not set: call embed() from a build script, or use embed_to()")]
    NoOutDir,
    #[error("cannot write {path}: {source}")]
    Write {
        path: String,
        source: std::io::Error,
    },
}

/// A device program to embed, with the entry points to give handles to.
#[derive(Debug, Clone)]
pub struct EmbeddedApp {
    name: String,
    elf: PathBuf,
    rpcs: Vec<(String, usize)>,
    handlers: Vec<String>,
    signature: Option<PathBuf>,
}

impl EmbeddedApp {
    /// Application `name` (the section is `.dpa_bin_<name>`; FlexIO's app name) from device
    /// ELF `elf` (relative paths: from the package's directory, as build scripts run there).
    pub fn new(name: &str, elf: impl AsRef<Path>) -> EmbeddedApp {
        EmbeddedApp {
            name: name.to_string(),
            elf: elf.as_ref().to_path_buf(),
            rpcs: Vec::new(),
            handlers: Vec::new(),
            signature: None,
        }
    }

    /// The application's signature (crypto data, `mlx5-dpa sign`): embedded in section
    /// `.dpa_sig_<name>`, which `.dpa_sig_name_<name>` names, as DPACC's packaging does (the
    /// section's type is the linker's PROGBITS, not 0x70000666: Rust cannot set it). The build
    /// checks that it signs this ELF (hash list and signature; the chain's anchor is the
    /// device's business).
    pub fn signature(mut self, crypto_data: impl AsRef<Path>) -> EmbeddedApp {
        self.signature = Some(crypto_data.as_ref().to_path_buf());
        self
    }

    /// An RPC function (`__dpa_rpc__`) taking `args` integer arguments.
    pub fn rpc(mut self, symbol: &str, args: usize) -> EmbeddedApp {
        self.rpcs.push((symbol.to_string(), args));
        self
    }

    /// An event handler (`__dpa_global__`, FlexIO `flexio_event_handler_create`).
    pub fn handler(mut self, symbol: &str) -> EmbeddedApp {
        self.handlers.push(symbol.to_string());
        self
    }
}

/// Whether `s` can name a Rust item (a raw identifier is not generated).
fn is_ident(s: &str) -> bool {
    const KEYWORDS: &[&str] = &[
        "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum",
        "extern", "false", "fn", "for", "gen", "if", "impl", "in", "let", "loop", "match", "mod",
        "move", "mut", "pub", "ref", "return", "self", "Self", "static", "struct", "super",
        "trait", "true", "type", "unsafe", "use", "where", "while", "abstract", "become", "box",
        "do", "final", "macro", "override", "priv", "try", "typeof", "unsized", "virtual", "yield",
    ];
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
        && s != "_"
        && !KEYWORDS.contains(&s)
}

/// Checks `app` against its ELF and returns the ELF's bytes.
fn check(app: &EmbeddedApp) -> Result<Vec<u8>, EmbedError> {
    let name = || app.name.clone();
    let path = app.elf.display().to_string();
    if !is_ident(&app.name) {
        return Err(EmbedError::BadName {
            what: "application name",
            name: name(),
        });
    }
    let bytes = std::fs::read(&app.elf).map_err(|source| EmbedError::Read {
        app: name(),
        path: path.clone(),
        source,
    })?;
    let elf = Elf::parse_device(&bytes).map_err(|e| EmbedError::NotDeviceElf {
        app: name(),
        path: path.clone(),
        reason: e.to_string(),
    })?;
    let function = |s: &str| {
        elf.symbols()
            .iter()
            .any(|y| y.name == s && y.is_defined() && y.kind() == STT_FUNC)
    };
    let declared = app
        .rpcs
        .iter()
        .map(|(s, _)| (s, "an RPC"))
        .chain(app.handlers.iter().map(|s| (s, "an event handler")));
    for (symbol, what) in declared {
        if !is_ident(symbol) {
            return Err(EmbedError::BadName {
                what: "entry point",
                name: symbol.clone(),
            });
        }
        if !function(symbol) {
            return Err(EmbedError::NoSymbol {
                app: name(),
                path: path.clone(),
                symbol: symbol.clone(),
                what,
            });
        }
    }
    for (symbol, args) in &app.rpcs {
        if *args > MAX_RPC_ARGS {
            return Err(EmbedError::TooManyArgs {
                app: name(),
                symbol: symbol.clone(),
                args: *args,
            });
        }
    }
    let has_runtime = function(RPC_ENTRY) && function(RPC_GENERIC_UNPACK);
    if !app.rpcs.is_empty() && !has_runtime {
        return Err(EmbedError::NoRpcRuntime { app: name(), path });
    }
    if let Some(sig_path) = &app.signature {
        let bad = |reason: String| EmbedError::Signature {
            app: name(),
            path: sig_path.display().to_string(),
            reason,
        };
        let sig = std::fs::read(sig_path).map_err(|e| bad(e.to_string()))?;
        let v = auth::verify(&bytes, &sig, &[]).map_err(|e| bad(e.to_string()))?;
        if !(v.hash_list_matches && v.signature_valid) {
            return Err(bad(format!(
                "does not sign {path} (hash list {}, signature {})",
                if v.hash_list_matches { "ok" } else { "differs" },
                if v.signature_valid { "ok" } else { "invalid" }
            )));
        }
    }
    Ok(bytes)
}

/// The section holding application `name`'s signature.
fn sig_section(name: &str) -> String {
    format!(".dpa_sig_{name}")
}

/// The `.dpa_sig_name_<app>` section's bytes as a Rust array literal: the signature section's
/// name, NUL-padded to [`SIG_NAME_LEN`] (all NUL: not signed).
fn sig_name_literal(app: &EmbeddedApp) -> String {
    let mut b = [0u8; SIG_NAME_LEN];
    if app.signature.is_some() {
        let n = sig_section(&app.name);
        let n = n.as_bytes();
        let len = n.len().min(SIG_NAME_LEN - 1);
        b[..len].copy_from_slice(&n[..len]);
    }
    let items: Vec<String> = b.iter().map(u8::to_string).collect();
    format!("[{}]", items.join(", "))
}

/// The generated Rust for `apps` (checked), each ELF named by its absolute path.
fn generate(apps: &[EmbeddedApp]) -> Result<String, EmbedError> {
    let mut seen = std::collections::BTreeSet::new();
    let mut out = String::from(
        "// Generated by mlx5_dpa::dpa::embed::embed: DPA device programs in this binary's\n\
         // .dpa_bin_<app> sections, and typed handles to their entry points.\n",
    );
    for app in apps {
        if !seen.insert(app.name.clone()) {
            return Err(EmbedError::Duplicate(app.name.clone()));
        }
        generate_app(&mut out, app)?;
    }
    Ok(out)
}

/// The module of one application: its ELF and signature sections, and its handles.
fn generate_app(out: &mut String, app: &EmbeddedApp) -> Result<(), EmbedError> {
    let bytes = check(app)?;
    let abs = std::fs::canonicalize(&app.elf).map_err(|source| EmbedError::Read {
        app: app.name.clone(),
        path: app.elf.display().to_string(),
        source,
    })?;
    let name = &app.name;
    let (sig_static, crypto_data) = signature_items(app)?;
    let _ = write!(
        out,
        r#"
/// DPA application `{name}`: its device ELF is this binary's `{BIN_PREFIX}{name}` section.
#[allow(dead_code)]
pub mod {name} {{
    #[used]
    #[unsafe(link_section = "{BIN_PREFIX}{name}")]
    static ELF: [u8; {len}] = *include_bytes!({abs:?});

    /// The application's name (FlexIO's app name).
    pub const NAME: &str = {name:?};

    /// The device ELF.
    pub fn image() -> &'static [u8] {{
        &ELF
    }}

    /// The application.
    pub fn app() -> ::core::result::Result<::mlx5_dpa::dpa::app::App, ::mlx5_dpa::dpa::app::AppError> {{
        ::mlx5_dpa::dpa::app::App::from_device_elf(NAME, &ELF)
    }}

    #[used]
    #[unsafe(link_section = "{SIG_NAME_PREFIX}{name}")]
    static SIG_NAME: [u8; {SIG_NAME_LEN}] = {sig_name};
{sig_static}
    /// The application's signature (crypto data), if it was embedded signed.
    pub fn crypto_data() -> ::core::option::Option<&'static [u8]> {{
        {crypto_data}
    }}

    /// Attributes to create its process with: the signature handed to firmware with the image.
    pub fn process_attr() -> ::mlx5_dpa::dpa::ProcessAttr {{
        ::mlx5_dpa::dpa::ProcessAttr {{
            signature: crypto_data().map(<[u8]>::to_vec),
            ..::core::default::Default::default()
        }}
    }}

    /// Its RPC functions ([`::mlx5_dpa::dpa::Process::call`]).
    pub mod rpc {{
"#,
        len = bytes.len(),
        sig_name = sig_name_literal(app),
        sig_static = sig_static,
        crypto_data = crypto_data,
    );
    generate_entry_points(out, app);
    out.push_str("    }\n}\n");
    Ok(())
}

/// The signature's section and the expression giving it, for an app embedded signed; an
/// empty item and `None` otherwise.
fn signature_items(app: &EmbeddedApp) -> Result<(String, String), EmbedError> {
    let name = &app.name;
    Ok(match &app.signature {
        Some(p) => {
            let sig_abs = std::fs::canonicalize(p).map_err(|source| EmbedError::Read {
                app: app.name.clone(),
                path: p.display().to_string(),
                source,
            })?;
            let len = std::fs::metadata(&sig_abs).map(|m| m.len()).unwrap_or(0);
            (
                format!(
                    "\n    #[used]\n    #[unsafe(link_section = \"{}\")]\n    static SIG: [u8; {len}] = *include_bytes!({sig_abs:?});\n",
                    sig_section(name)
                ),
                "::core::option::Option::Some(&SIG)".to_string(),
            )
        }
        None => (String::new(), "::core::option::Option::None".to_string()),
    })
}

/// The typed handles of the RPC functions and event handlers declared for `app`.
fn generate_entry_points(out: &mut String, app: &EmbeddedApp) {
    for (symbol, args) in &app.rpcs {
        let params: Vec<String> = (0..*args).map(|i| format!("a{i}: u64")).collect();
        let values: Vec<String> = (0..*args).map(|i| format!("a{i}")).collect();
        let _ = write!(
            out,
            r#"        /// `{symbol}` on the DPA, `{args}` arguments.
        #[allow(clippy::too_many_arguments)]
        pub fn {symbol}(
            process: &::mlx5_dpa::dpa::Process,
            {params}
        ) -> ::core::result::Result<u64, ::mlx5_dpa::dpa::DpaError> {{
            process.call({symbol:?}, &[{values}])
        }}
"#,
            params = params.join(", "),
            values = values.join(", "),
        );
    }
    out.push_str("    }\n\n    /// Its event handlers.\n    pub mod handlers {\n");
    for symbol in &app.handlers {
        let _ = write!(
            out,
            r#"        /// `{symbol}`, with `arg` in its first argument.
        pub fn {symbol}(arg: u64) -> ::mlx5_dpa::dpa::thread::EventHandlerAttr {{
            ::mlx5_dpa::dpa::thread::EventHandlerAttr::new({symbol:?}, arg)
        }}
"#,
        );
    }
}

/// Checks `apps` and writes [`GENERATED_FILE`] into `dir`; returns its path.
///
/// # Errors
/// [`EmbedError`] naming the application and what is wrong; nothing is written then.
pub fn embed_to(dir: &Path, apps: &[EmbeddedApp]) -> Result<PathBuf, EmbedError> {
    let code = generate(apps)?;
    let path = dir.join(GENERATED_FILE);
    std::fs::write(&path, code).map_err(|source| EmbedError::Write {
        path: path.display().to_string(),
        source,
    })?;
    Ok(path)
}

/// For a build script: [`embed_to`] `OUT_DIR`, and tells Cargo to run the script again when an
/// ELF changes.
///
/// # Errors
/// As [`embed_to`], or [`EmbedError::NoOutDir`] outside a build script.
pub fn embed(apps: &[EmbeddedApp]) -> Result<PathBuf, EmbedError> {
    let dir = std::env::var_os("OUT_DIR").ok_or(EmbedError::NoOutDir)?;
    for app in apps {
        println!("cargo:rerun-if-changed={}", app.elf.display());
    }
    embed_to(Path::new(&dir), apps)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn calc() -> EmbeddedApp {
        EmbeddedApp::new(
            "calc",
            concat!(env!("CARGO_MANIFEST_DIR"), "/fw-blobs/bin/rpc_calc.elf"),
        )
    }

    #[test]
    fn declared_entry_points_are_checked_against_the_elf() {
        let code = generate(&[calc().rpc("rpc_calculate", 2).handler("rpc_echo")]).unwrap();
        assert!(code.contains("link_section = \".dpa_bin_calc\""), "{code}");
        assert!(code.contains("pub fn rpc_calculate("), "{code}");
        assert!(code.contains("a0: u64, a1: u64"), "{code}");
        assert!(code.contains("pub fn rpc_echo(arg: u64)"), "{code}");

        let err = |a: EmbeddedApp| generate(&[a]).unwrap_err().to_string();
        assert!(err(calc().rpc("no_such_fn", 1)).contains("defines no function \"no_such_fn\""));
        assert!(err(calc().handler("nope")).contains("as an event handler"));
        assert!(err(calc().rpc("rpc_calculate", 9)).contains("at most 8"));
        assert!(err(EmbeddedApp::new("calc", "/no/such.elf")).contains("cannot read"));
        assert!(err(EmbeddedApp::new("fn", "x.elf")).contains("not a Rust identifier"));
        assert!(err(calc().rpc("rpc-calc", 1)).contains("not a Rust identifier"));
        let host = EmbeddedApp::new("h", concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml"));
        assert!(err(host).contains("not a DPA device ELF"));
        assert!(matches!(
            generate(&[calc(), calc()]),
            Err(EmbedError::Duplicate(_))
        ));
    }

    #[test]
    fn a_signature_must_sign_the_elf() {
        let sig = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/crates/dpa-embed-example/rpc_calc.elf.sig"
        );
        let code = generate(&[calc().signature(sig)]).unwrap();
        assert!(code.contains("link_section = \".dpa_sig_calc\""), "{code}");
        assert!(code.contains("Option::Some(&SIG)"), "{code}");
        let other = EmbeddedApp::new(
            "st",
            concat!(env!("CARGO_MANIFEST_DIR"), "/fw-blobs/bin/selftest.elf"),
        )
        .signature(sig);
        let e = generate(&[other]).unwrap_err().to_string();
        assert!(e.contains("does not sign"), "{e}");
        // Unsigned: the name section is all NUL, and there is no crypto data.
        let code = generate(&[calc()]).unwrap();
        assert!(code.contains("Option::None"), "{code}");
        assert!(!code.contains(".dpa_sig_calc"), "{code}");
    }

    #[test]
    fn rpcs_need_the_rpc_runtime() {
        // A bare-machine program defines functions but not the RPC entry.
        let bare = EmbeddedApp::new(
            "bare",
            concat!(env!("CARGO_MANIFEST_DIR"), "/fw-blobs/bare/bin/compute.elf"),
        );
        let e = generate(&[bare.rpc("compute", 1)]);
        // Either it is no device ELF at all (its segments are not the DPA's windows) or it
        // lacks the runtime; both refuse.
        assert!(
            matches!(
                e,
                Err(EmbedError::NoRpcRuntime { .. } | EmbedError::NotDeviceElf { .. })
            ),
            "{e:?}"
        );
    }
}
