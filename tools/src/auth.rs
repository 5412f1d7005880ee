//! `mlx5-dpa sign` and `mlx5-dpa verify`: DPA application authentication (seed: "DPA
//! Application Authentication"; `mlx5_dpa::dpa::auth`). Certificates are checked for their
//! signatures and names only: validity dates, key usage and revocation are not looked at.
//!
//! ```text
//! mlx5-dpa sign app.elf --key signer.key.pem --cert ca.der --cert signer.der -o app.elf.sig
//! mlx5-dpa verify app.elf --ca root.der          # app.elf.sig beside it
//! mlx5-dpa verify host_program --app pp --ca root.der   # the signature section DPACC's way
//! ```
//!
//! `sign` writes the crypto data as a file of its own, as snap ships `dpa_nvme.sig` beside
//! `dpa_nvme`. `verify` recomputes the hash list, checks the signature with the leaf
//! certificate's key and each certificate with the one before it, anchors the first with a
//! `--ca` certificate (or itself, when self-signed), and says who signed: exit status 0 when
//! all of it holds, 1 otherwise (what failed is printed).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use mlx5_dpa::dpa::app::App;
use mlx5_dpa::dpa::app::SignatureStatus;
use mlx5_dpa::dpa::auth::{self, Anchor, AuthError, CryptoData};

use crate::input::{self, InputError};

/// Most bytes of a key, certificate or signature file.
const MAX_SMALL_FILE: u64 = 1 << 20;

/// `mlx5-dpa sign`.
#[derive(clap::Args, Debug)]
pub struct SignArgs {
    /// The DPA device ELF (or a host program carrying it: see --app).
    pub elf: PathBuf,
    /// The signer's RSA private key (PEM: PKCS#8 or PKCS#1).
    #[arg(long, value_name = "KEY.pem")]
    pub key: PathBuf,
    /// The certificate chain, root or CA first, leaf (holding the key) last: repeat the option
    /// (DER or PEM). At most 4.
    #[arg(long = "cert", value_name = "CERT", required = true)]
    pub certs: Vec<PathBuf>,
    /// The application's name in a host program that carries several.
    #[arg(long, value_name = "NAME")]
    pub app: Option<String>,
    /// Where to write the crypto data (default: ELF.sig).
    #[arg(short, long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

/// `mlx5-dpa verify`.
#[derive(clap::Args, Debug)]
pub struct VerifyArgs {
    /// The DPA device ELF, or a host program carrying it (its signature section is used).
    pub elf: PathBuf,
    /// The signature as a file of its own (default: ELF.sig beside a device ELF).
    #[arg(long, value_name = "FILE")]
    pub sig: Option<PathBuf>,
    /// A trusted CA certificate (DER or PEM) the chain may be anchored in; repeat as needed.
    #[arg(long = "ca", value_name = "CERT")]
    pub ca: Vec<PathBuf>,
    /// The application's name in a host program that carries several.
    #[arg(long, value_name = "NAME")]
    pub app: Option<String>,
    /// One JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Why `sign` or `verify` failed.
#[derive(Debug, thiserror::Error)]
pub enum AuthCmdError {
    #[error(transparent)]
    Read(#[from] InputError),
    #[error("{path}: {source}")]
    Auth { path: String, source: AuthError },
    #[error("{path}: {reason}")]
    App { path: String, reason: String },
    #[error("{path}: not a certificate (DER or PEM): {reason}")]
    Cert { path: String, reason: String },
    #[error("cannot write {path}: {source}")]
    Write {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: no signature (no signature section, no {path}.sig; give one with --sig)")]
    Unsigned { path: String },
}

/// A certificate file as DER (PEM converted).
pub(crate) fn cert_der(path: &Path) -> Result<Vec<u8>, AuthCmdError> {
    use x509_cert::der::{DecodePem, Encode};
    let bytes = input::read_bounded(path, MAX_SMALL_FILE)?;
    let bad = |reason: String| AuthCmdError::Cert {
        path: path.display().to_string(),
        reason,
    };
    if bytes.starts_with(b"-----BEGIN") {
        let cert = x509_cert::Certificate::from_pem(&bytes).map_err(|e| bad(e.to_string()))?;
        return cert.to_der().map_err(|e| bad(e.to_string()));
    }
    auth::ChainCert::from_der(0, &bytes).map_err(|e| bad(e.to_string()))?;
    Ok(bytes)
}

/// The one application of `path` (or `app`), as [`App`].
fn one_app(path: &Path, app: Option<&str>) -> Result<App, AuthCmdError> {
    let shown = path.display().to_string();
    let bytes = input::read_bounded(path, input::MAX_ELF_FILE)?;
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let apps = App::all_in_elf(&stem, &bytes).map_err(|e| AuthCmdError::App {
        path: shown.clone(),
        reason: e.to_string(),
    })?;
    let names: Vec<String> = apps.iter().map(|a| a.name().to_string()).collect();
    let mut chosen: Vec<App> = match app {
        Some(n) => apps.into_iter().filter(|a| a.name() == n).collect(),
        None => apps,
    };
    match chosen.len() {
        1 => Ok(chosen.remove(0)),
        0 => Err(AuthCmdError::App {
            path: shown,
            reason: format!(
                "no application {:?} (it carries {})",
                app.unwrap_or(""),
                names.join(", ")
            ),
        }),
        _ => Err(AuthCmdError::App {
            path: shown,
            reason: format!(
                "it carries applications {}: name one with --app",
                names.join(", ")
            ),
        }),
    }
}

use crate::input::sig_beside as beside;

/// `verify --json`: every check and what it found.
#[derive(serde::Serialize)]
struct VerifyJson<'a> {
    file: &'a str,
    app: &'a str,
    signature_from: &'a str,
    valid: bool,
    trusted: bool,
    hash_list_matches: bool,
    mismatches: &'a [String],
    signature_valid: bool,
    chain: &'a [String],
    chain_valid: bool,
    anchor: &'a str,
    signer: &'a str,
    chain_crc: u16,
}

/// Runs `mlx5-dpa sign`.
pub fn sign(a: &SignArgs) -> Result<ExitCode, AuthCmdError> {
    let app = one_app(&a.elf, a.app.as_deref())?;
    let pem = input::read_bounded(&a.key, MAX_SMALL_FILE)?;
    let key_path = a.key.display().to_string();
    let key = auth::private_key_from_pem(&String::from_utf8_lossy(&pem)).map_err(|source| {
        AuthCmdError::Auth {
            path: key_path.clone(),
            source,
        }
    })?;
    let chain = a
        .certs
        .iter()
        .map(|p| cert_der(p))
        .collect::<Result<Vec<_>, _>>()?;
    let blob = auth::sign(app.image(), &key, &chain).map_err(|source| AuthCmdError::Auth {
        path: a.elf.display().to_string(),
        source,
    })?;
    let out = a.out.clone().unwrap_or_else(|| beside(&a.elf));
    std::fs::write(&out, &blob).map_err(|source| AuthCmdError::Write {
        path: out.display().to_string(),
        source,
    })?;
    let cd = CryptoData::parse(&blob).map_err(|source| AuthCmdError::Auth {
        path: out.display().to_string(),
        source,
    })?;
    let mut o = std::io::stdout().lock();
    let _ = writeln!(
        o,
        "{}: {} bytes of crypto data for application {} ({} hashed segments, {} hashed \
         sections, RSA_SHA_512 with a {}-bit key, signed by {})",
        out.display(),
        blob.len(),
        app.name(),
        cd.hash_list.segments.len(),
        cd.hash_list.sections.len(),
        cd.signature.len() * 8,
        cd.chain.last().map_or("", |c| c.subject.as_str())
    );
    let _ = writeln!(
        o,
        "note: the certificate chain header's CRC is written as {:#06x}: its algorithm is not \
         public (provisional)",
        auth::CHAIN_CRC_UNKNOWN
    );
    Ok(ExitCode::SUCCESS)
}

/// Runs `mlx5-dpa verify`.
pub fn verify(a: &VerifyArgs) -> Result<ExitCode, AuthCmdError> {
    let app = one_app(&a.elf, a.app.as_deref())?;
    let shown = a.elf.display().to_string();
    let (blob, from) = match (&a.sig, app.signature()) {
        (Some(p), _) => (
            input::read_bounded(p, MAX_SMALL_FILE)?,
            p.display().to_string(),
        ),
        (None, SignatureStatus::Present(s)) => (s.data.clone(), s.section.clone()),
        (None, _) => {
            let b = beside(&a.elf);
            if !b.is_file() {
                return Err(AuthCmdError::Unsigned { path: shown });
            }
            (
                input::read_bounded(&b, MAX_SMALL_FILE)?,
                b.display().to_string(),
            )
        }
    };
    let trusted =
        a.ca.iter()
            .map(|p| cert_der(p))
            .collect::<Result<Vec<_>, _>>()?;
    let v = auth::verify(app.image(), &blob, &trusted).map_err(|source| AuthCmdError::Auth {
        path: from.clone(),
        source,
    })?;
    let anchor = match &v.anchor {
        Anchor::Trusted(s) => format!("anchored in trusted CA {s}"),
        Anchor::SelfSigned => "its first certificate is a self-signed root".to_string(),
        Anchor::Unknown(s) => format!("issuer {s} of its first certificate not given (--ca)"),
        Anchor::BadSignature(s) => format!("trusted CA {s} did NOT sign its first certificate"),
    };
    let mut o = std::io::stdout().lock();
    if a.json {
        let _ = writeln!(
            o,
            "{}",
            crate::json::line(&VerifyJson {
                file: &shown,
                app: app.name(),
                signature_from: &from,
                valid: v.valid(),
                trusted: v.trusted(),
                hash_list_matches: v.hash_list_matches,
                mismatches: &v.mismatches,
                signature_valid: v.signature_valid,
                chain: &v.chain,
                chain_valid: v.chain_valid,
                anchor: &anchor,
                signer: v.signer(),
                chain_crc: v.chain_crc,
            })
        );
    } else {
        let yes = |b: bool| if b { "ok" } else { "FAILED" };
        let _ = writeln!(o, "application {} of {shown}, signature {from}", app.name());
        let _ = writeln!(
            o,
            "hash list: {}{}",
            yes(v.hash_list_matches),
            if v.mismatches.is_empty() {
                String::new()
            } else {
                format!(" (differs: {})", v.mismatches.join(", "))
            }
        );
        let _ = writeln!(o, "signature (RSA_SHA_512): {}", yes(v.signature_valid));
        let _ = writeln!(o, "certificate chain: {} ({anchor})", yes(v.chain_valid));
        for (i, c) in v.chain.iter().enumerate() {
            let _ = writeln!(o, "  {i}: {c}");
        }
        let _ = writeln!(
            o,
            "chain header CRC: {:#06x} (not checked: the algorithm is not public)",
            v.chain_crc
        );
        let only_unanchored = v.hash_list_matches
            && v.signature_valid
            && v.chain_valid
            && matches!(v.anchor, Anchor::Unknown(_));
        let verdict = if v.trusted() {
            "VALID"
        } else if v.valid() {
            // Anyone can make a self-signed root: without --ca naming it, nothing vouches for
            // the signer.
            "UNTRUSTED CHAIN (all else verifies, but its root is self-signed and not given with --ca)"
        } else if only_unanchored {
            "NOT ANCHORED (all else verifies; give the chain's root with --ca)"
        } else {
            "NOT VALID"
        };
        let _ = writeln!(o, "{verdict}: signed by {}", v.signer());
    }
    let _ = o.flush();
    // Success only for a chain anchored in a certificate the caller trusts, as a device with
    // DPA Application Authentication requires.
    Ok(if v.trusted() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
