//! DPA applications (FlexIO `flexio_app`): a device program, by name, ready to be loaded.
//!
//! An application is a DPA device ELF (docs/sources.md section 5: ELF64 little-endian `ET_EXEC`,
//! `e_machine` 243 RISC-V, `e_flags` 0x1 = RVC + soft-float lp64, text and data `PT_LOAD`
//! segments, entry points found by symbol name). It comes either as a file of its own
//! ([`App::from_device_elf`], [`App::from_device_elf_file`]) or embedded in a host program by
//! DPACC ([`App::all_in_host_elf`], [`App::from_host_elf`]):
//!
//! - section `.dpa_bin_<app>`: the whole device ELF of application `<app>`; a copy built for
//!   a named hardware model is `.dpa_bin_<app>@nv-dpa-<model>` (provisional, see
//!   [`super::hw_model`]; [`super::app_select`] selects among copies as `flexio_app_get`
//!   does); an unlabelled copy is a BlueField-3 build;
//! - section `.dpa_sig_name_<app>` (optional): 256 bytes, the NUL-terminated, NUL-padded name of
//!   the section that holds the application's signature (empty: not signed);
//! - that signature section: a crypto data section (docs/sources.md section 7, `sh_type`
//!   [`SHT_DPA_CRYPTO`] = 0x7000_0666) beginning with a 0x40-byte metadata header:
//!   `metadata_version` at 0x0 and `signature_type` at 0x3c (2 = RSA_SHA_512), followed by the
//!   hash list, the signature and the certificate chain. docs/sources.md does not state the byte order
//!   of the two header fields; they are read big-endian, like the hash-list dwords after them
//!   (unverified), and [`CryptoMetadata::raw`] keeps the header bytes as found.
//!
//! A device ELF may also carry a crypto data section itself (a signed device ELF); that is
//! reported the same way, with [`SignatureLocation::Device`]. Or the signature comes as a file
//! of its own next to the device ELF (snap ships `dpa_nvme` and `dpa_nvme.sig`, docs/sources.md
//! section 8): the same crypto data, attached with [`App::with_signature_file`] and reported
//! with [`SignatureLocation::File`].
//!
//! An [`App`] owns a copy of its device image; what a loader or a tool needs (entry symbols,
//! `PT_LOAD` segments, `e_flags`, the ISA string of `.riscv.attributes`) is extracted once, at
//! construction. Every input gives an [`App`] or an [`AppError`] naming what is wrong, never a
//! panic (`tests/dpa/dpa_app.rs` runs random and corrupted inputs through every constructor).

use std::path::Path;

use thiserror::Error;

use super::elf::{Elf, ElfError, EM_RISCV, PF_R, PF_W, PF_X};
use super::hw_model::{HwModel, UnknownHwModel};

/// Prefix of the host-ELF section holding an application's device ELF.
pub const BIN_PREFIX: &str = ".dpa_bin_";
/// Between an application's name and its hardware model in a `.dpa_bin_` section name:
/// `.dpa_bin_<app>@nv-dpa-cx8` (this project's convention, provisional: DPACC's labelling of
/// per-model copies is not public; see [`super::hw_model`]).
pub const MODEL_SEPARATOR: char = '@';
/// Prefix of the host-ELF section naming an application's signature section.
pub const SIG_NAME_PREFIX: &str = ".dpa_sig_name_";
/// Size of a `.dpa_sig_name_<app>` section.
pub const SIG_NAME_LEN: usize = 256;
pub use crate::image::{CRYPTO_METADATA_LEN, SHT_DPA_CRYPTO, SIGNATURE_TYPE_RSA_SHA_512};
/// `e_flags` bit: compressed instructions (RVC).
pub const EF_RISCV_RVC: u32 = 0x1;
/// `e_flags` field: floating-point ABI (0 soft, 1 single, 2 double, 3 quad).
pub const EF_RISCV_FLOAT_ABI: u32 = 0x6;

const STT_FUNC: u8 = 2;
const STB_GLOBAL: u8 = 1;
/// `.riscv.attributes`: `Tag_RISCV_arch`, a NUL-terminated string.
const TAG_RISCV_ARCH: u64 = 5;

/// Why bytes are not a usable DPA application.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum AppError {
    #[error("cannot read {path}: {reason}")]
    Read { path: String, reason: String },
    #[error("host ELF: {0}")]
    HostElf(ElfError),
    /// The file given to [`App::all_in_elf`] is no ELF64 little-endian file.
    #[error("{0}")]
    Elf(ElfError),
    #[error("DPA application {app:?}: device ELF: {source}")]
    DeviceElf { app: String, source: ElfError },
    #[error(
        "not a DPA device ELF (e_machine {machine}, not RISC-V {EM_RISCV}) and no {BIN_PREFIX}<app> sections"
    )]
    NoApps { machine: u16 },
    #[error("no DPA application {name:?}; the file has: {}", list(.available))]
    NoSuchApp {
        name: String,
        available: Vec<String>,
    },
    #[error("DPA application {0:?} appears in more than one {BIN_PREFIX} section")]
    DuplicateApp(String),
    #[error("DPA application {app:?} has more than one copy built for {model}")]
    DuplicateModelCopy { app: String, model: HwModel },
    #[error("section {section:?}: {source}")]
    UnknownHwModel {
        section: String,
        source: UnknownHwModel,
    },
    #[error(
        "DPA application {name:?} has copies for several hardware models ({}) and none for nv-dpa-bf3: select one by model",
        models.iter().map(|m| m.mcpu()).collect::<Vec<_>>().join(", ")
    )]
    AmbiguousApp { name: String, models: Vec<HwModel> },
    #[error("section {0:?} has an empty application name")]
    EmptyAppName(String),
    #[error("{section}: {size} bytes, expected {SIG_NAME_LEN}")]
    SigNameSize { section: String, size: u64 },
    #[error("{0}: signature section name is not NUL-terminated")]
    SigNameNotTerminated(String),
    #[error("{0}: signature section name is not UTF-8")]
    SigNameNotUtf8(String),
    #[error("{section} names application {app:?}, which has no {BIN_PREFIX}{app} section")]
    SigNameWithoutApp { section: String, app: String },
    #[error("DPA application {app:?}: {sig_name_section} appears more than once")]
    DuplicateSigName {
        app: String,
        sig_name_section: String,
    },
    #[error(
        "signature section {section} is {size} bytes, shorter than its {CRYPTO_METADATA_LEN}-byte metadata header"
    )]
    SignatureTruncated { section: String, size: u64 },
}

fn list(names: &[String]) -> String {
    if names.is_empty() {
        "no applications".to_string()
    } else {
        names.join(", ")
    }
}

/// A global function of the device program: an entry point FlexIO can name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub name: String,
    pub addr: u64,
    pub size: u64,
}

/// A `PT_LOAD` segment of the device program, without its contents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoadSegment {
    pub vaddr: u64,
    pub filesz: u64,
    pub memsz: u64,
    /// `PF_R` / `PF_W` / `PF_X` bits.
    pub flags: u32,
}

impl LoadSegment {
    /// `rwx`-style flags, `-` for a missing permission.
    pub fn flags_str(&self) -> String {
        let bit = |f: u32, c: char| if self.flags & f != 0 { c } else { '-' };
        [bit(PF_R, 'r'), bit(PF_W, 'w'), bit(PF_X, 'x')]
            .iter()
            .collect()
    }
}

/// Where a signature section was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignatureLocation {
    /// In the host ELF, named by `.dpa_sig_name_<app>`.
    Host,
    /// In the device ELF itself (a section of type [`SHT_DPA_CRYPTO`]).
    Device,
    /// In a separate file given with the application ([`App::with_signature_file`]).
    File,
}

/// The 0x40-byte metadata header of a crypto data section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CryptoMetadata {
    /// The header bytes as found.
    pub raw: [u8; CRYPTO_METADATA_LEN],
}

impl CryptoMetadata {
    /// `metadata_version`, the dword at 0x0 (read big-endian; see the module doc).
    pub fn metadata_version(&self) -> u32 {
        be32(&self.raw, 0)
    }
    /// `signature_type`, the dword at 0x3c (read big-endian; 2 = RSA_SHA_512).
    pub fn signature_type(&self) -> u32 {
        be32(&self.raw, 0x3c)
    }
    /// The name of [`Self::signature_type`], when known.
    pub fn signature_type_name(&self) -> Option<&'static str> {
        (self.signature_type() == SIGNATURE_TYPE_RSA_SHA_512).then_some("RSA_SHA_512")
    }
}

fn be32(b: &[u8], o: usize) -> u32 {
    let mut a = [0u8; 4];
    if let Some(s) = b.get(o..o + 4) {
        a.copy_from_slice(s);
    }
    u32::from_be_bytes(a)
}

/// A signature (crypto data) section of an application.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signature {
    /// The section's name, or the file's for [`SignatureLocation::File`].
    pub section: String,
    pub location: SignatureLocation,
    /// The section's `sh_type` (0 for a file).
    pub sh_type: u32,
    pub size: u64,
    pub metadata: CryptoMetadata,
    /// The whole crypto data (for [`super::auth::verify`]).
    pub data: Vec<u8>,
}

/// What a signature lookup found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SignatureStatus {
    /// No signature section named, none in the device ELF.
    Unsigned,
    /// `.dpa_sig_name_<app>` names a section the host ELF does not have.
    Missing {
        section: String,
    },
    Present(Signature),
}

impl SignatureStatus {
    pub fn is_present(&self) -> bool {
        matches!(self, SignatureStatus::Present(_))
    }
}

/// A DPA application: a named, validated device ELF.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct App {
    name: String,
    hw_model_label: Option<HwModel>,
    image: Vec<u8>,
    e_flags: u32,
    elf_entry: u64,
    isa: Option<String>,
    entries: Vec<Entry>,
    symbols: Vec<(String, u64)>,
    segments: Vec<LoadSegment>,
    signature: SignatureStatus,
}

impl App {
    /// An application from a device ELF's bytes.
    ///
    /// # Errors
    /// [`AppError::DeviceElf`] when the bytes are not an ELF64 little-endian RISC-V executable.
    pub fn from_device_elf(name: &str, bytes: &[u8]) -> Result<App, AppError> {
        App::build(name, bytes, None)
    }

    /// An application from a device ELF file, named after the file's stem.
    ///
    /// # Errors
    /// [`AppError::Read`] when the file cannot be read, else as [`App::from_device_elf`].
    pub fn from_device_elf_file(path: &Path) -> Result<App, AppError> {
        let bytes = read(path)?;
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        App::from_device_elf(&name, &bytes)
    }

    /// Every application a DPACC host ELF carries, in section order.
    ///
    /// # Errors
    /// [`AppError::HostElf`] when the host file is not an ELF64 little-endian file; a typed error
    /// for a malformed `.dpa_bin_` / `.dpa_sig_name_` section or device image; duplicate names.
    /// A host ELF without applications gives an empty list.
    pub fn all_in_host_elf(bytes: &[u8]) -> Result<Vec<App>, AppError> {
        let host = Elf::parse(bytes).map_err(AppError::HostElf)?;
        App::all_in(&host)
    }

    /// The application `name` of a DPACC host ELF.
    ///
    /// # Errors
    /// [`AppError::NoSuchApp`] (with the names present) when there is none of that name, else as
    /// [`App::all_in_host_elf`].
    pub fn from_host_elf(bytes: &[u8], name: &str) -> Result<App, AppError> {
        let apps = App::all_in_host_elf(bytes)?;
        select(apps, name)
    }

    /// The applications of any ELF: those embedded when it has `.dpa_bin_` sections, else the
    /// file itself as a device ELF named `device_name`.
    ///
    /// # Errors
    /// [`AppError::Elf`] for bytes that are no ELF64 little-endian file, [`AppError::NoApps`]
    /// for an ELF that is neither; otherwise as the constructors above.
    pub fn all_in_elf(device_name: &str, bytes: &[u8]) -> Result<Vec<App>, AppError> {
        let elf = Elf::parse(bytes).map_err(AppError::Elf)?;
        let embedded = App::all_in(&elf)?;
        if !embedded.is_empty() {
            return Ok(embedded);
        }
        if elf.machine != EM_RISCV {
            return Err(AppError::NoApps {
                machine: elf.machine,
            });
        }
        Ok(vec![App::from_device_elf(device_name, bytes)?])
    }

    fn all_in(host: &Elf<'_>) -> Result<Vec<App>, AppError> {
        let mut bins: Vec<(&str, &[u8])> = Vec::new();
        let mut sig_names: Vec<(&str, &str, &[u8])> = Vec::new();
        for s in host.sections() {
            if let Some(app) = s.name.strip_prefix(SIG_NAME_PREFIX) {
                sig_names.push((app, &s.name, s.data));
            } else if let Some(app) = s.name.strip_prefix(BIN_PREFIX) {
                if app.is_empty() {
                    return Err(AppError::EmptyAppName(s.name.clone()));
                }
                if bins.iter().any(|(n, _)| *n == app) {
                    return Err(AppError::DuplicateApp(app.to_string()));
                }
                bins.push((app, s.data));
            }
        }
        for (i, (app, section, _)) in sig_names.iter().enumerate() {
            if !bins.iter().any(|(n, _)| n == app) {
                return Err(AppError::SigNameWithoutApp {
                    section: section.to_string(),
                    app: app.to_string(),
                });
            }
            if sig_names[..i].iter().any(|(a, _, _)| a == app) {
                return Err(AppError::DuplicateSigName {
                    app: app.to_string(),
                    sig_name_section: section.to_string(),
                });
            }
        }
        let apps: Vec<App> = bins
            .into_iter()
            .map(|(key, image)| {
                let host_sig = match sig_names.iter().find(|(a, _, _)| *a == key) {
                    Some((_, section, data)) => host_signature(host, section, data)?,
                    None => None,
                };
                let (name, label) = split_model(key)?;
                let mut app = App::build(name, image, host_sig)?;
                app.hw_model_label = label;
                Ok(app)
            })
            .collect::<Result<_, AppError>>()?;
        for (i, a) in apps.iter().enumerate() {
            if apps[..i]
                .iter()
                .any(|b| b.name == a.name && b.hw_model() == a.hw_model())
            {
                return Err(AppError::DuplicateModelCopy {
                    app: a.name.clone(),
                    model: a.hw_model(),
                });
            }
        }
        Ok(apps)
    }

    fn build(name: &str, bytes: &[u8], host_sig: Option<SignatureStatus>) -> Result<App, AppError> {
        let elf = Elf::parse_device(bytes).map_err(|source| AppError::DeviceElf {
            app: name.to_string(),
            source,
        })?;
        let entries = elf
            .symbols()
            .iter()
            .filter(|s| {
                s.is_defined()
                    && s.kind() == STT_FUNC
                    && s.binding() == STB_GLOBAL
                    && !s.name.is_empty()
            })
            .map(|s| Entry {
                name: s.name.clone(),
                addr: s.value,
                size: s.size,
            })
            .collect();
        let symbols = elf
            .symbols()
            .iter()
            .filter(|s| s.is_defined() && !s.name.is_empty())
            .map(|s| (s.name.clone(), s.value))
            .collect();
        let segments = elf
            .load_segments()
            .map(|s| LoadSegment {
                vaddr: s.vaddr,
                filesz: s.filesz,
                memsz: s.memsz,
                flags: s.flags,
            })
            .collect();
        let isa = elf
            .section(".riscv.attributes")
            .and_then(|s| riscv_arch(s.data));
        let signature = match host_sig {
            Some(s) => s,
            None => device_signature(&elf)?,
        };
        Ok(App {
            name: name.to_string(),
            hw_model_label: None,
            image: bytes.to_vec(),
            e_flags: elf.flags,
            elf_entry: elf.entry,
            isa,
            entries,
            symbols,
            segments,
            signature,
        })
    }

    /// The application's name (`<app>` of `.dpa_bin_<app>`, or the device file's stem).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The device ELF's bytes.
    pub fn image(&self) -> &[u8] {
        &self.image
    }

    /// The device ELF, parsed again (borrowing [`Self::image`]).
    ///
    /// # Errors
    /// None in practice: the image was validated at construction.
    pub fn elf(&self) -> Result<Elf<'_>, ElfError> {
        Elf::parse_device(&self.image)
    }

    /// The address of a defined symbol (an entry point, or data), by name.
    pub fn symbol(&self, name: &str) -> Option<u64> {
        self.symbols
            .iter()
            .find(|(n, _)| n == name)
            .map(|&(_, v)| v)
    }

    /// The global functions, in symbol-table order: the names FlexIO can start or call.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The `PT_LOAD` segments.
    pub fn segments(&self) -> &[LoadSegment] {
        &self.segments
    }

    /// `e_flags` of the device ELF.
    pub fn e_flags(&self) -> u32 {
        self.e_flags
    }

    /// `e_entry` of the device ELF.
    pub fn elf_entry(&self) -> u64 {
        self.elf_entry
    }

    /// `e_flags` in words: `RVC` and the float ABI (`soft-float`, `single-float`, ...).
    pub fn e_flags_str(&self) -> String {
        let abi = match (self.e_flags & EF_RISCV_FLOAT_ABI) >> 1 {
            0 => "soft-float",
            1 => "single-float",
            2 => "double-float",
            _ => "quad-float",
        };
        if self.e_flags & EF_RISCV_RVC != 0 {
            format!("RVC, {abi}")
        } else {
            abi.to_string()
        }
    }

    /// The hardware model this copy was built for: its label, or BlueField-3 for an unlabelled
    /// copy (DPACC 24.01 builds for BlueField-3 only).
    pub fn hw_model(&self) -> HwModel {
        self.hw_model_label.unwrap_or(HwModel::Bf3)
    }

    /// The model named in the copy's section (`.dpa_bin_<app>@nv-dpa-<model>`), if any.
    pub fn hw_model_label(&self) -> Option<HwModel> {
        self.hw_model_label
    }

    /// `Tag_RISCV_arch` of `.riscv.attributes` (e.g. `rv64i2p1_m2p0_a2p1_c2p0...`), when present.
    pub fn isa(&self) -> Option<&str> {
        self.isa.as_deref()
    }

    /// The signature, when there is one.
    /// Attaches the signature of a separate file (`file_name` as it should be shown, `bytes`
    /// its contents: the crypto data a signature section would hold, beginning with the
    /// 0x40-byte metadata header). It replaces a signature the ELF carried.
    ///
    /// # Errors
    /// [`AppError::SignatureTruncated`] when the file is shorter than the metadata header.
    pub fn with_signature_file(mut self, file_name: &str, bytes: &[u8]) -> Result<App, AppError> {
        self.signature =
            SignatureStatus::Present(signature(file_name, SignatureLocation::File, 0, bytes)?);
        Ok(self)
    }

    pub fn signature(&self) -> &SignatureStatus {
        &self.signature
    }

    /// The whole crypto data of the application's signature, when it has one: what
    /// [`super::process::ProcessAttr::signature`] hands to firmware.
    pub fn crypto_data(&self) -> Option<&[u8]> {
        match &self.signature {
            SignatureStatus::Present(s) => Some(&s.data),
            _ => None,
        }
    }
}

fn read(path: &Path) -> Result<Vec<u8>, AppError> {
    std::fs::read(path).map_err(|e| AppError::Read {
        path: path.display().to_string(),
        reason: e.to_string(),
    })
}

/// `<app>` or `<app>@<model>` of a `.dpa_bin_` / `.dpa_sig_name_` section name.
fn split_model(key: &str) -> Result<(&str, Option<HwModel>), AppError> {
    match key.split_once(MODEL_SEPARATOR) {
        None => Ok((key, None)),
        Some((name, model)) => {
            let section = format!("{BIN_PREFIX}{key}");
            if name.is_empty() {
                return Err(AppError::EmptyAppName(section));
            }
            let m = HwModel::from_name(model)
                .map_err(|source| AppError::UnknownHwModel { section, source })?;
            Ok((name, Some(m)))
        }
    }
}

/// The names of `apps`, each once (an application may have a copy per hardware model), in order.
pub fn app_names(apps: &[App]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for a in apps {
        if !names.contains(&a.name) {
            names.push(a.name.clone());
        }
    }
    names
}

/// The application `name` out of `apps`: its only copy, or of several its BlueField-3 copy.
fn select(apps: Vec<App>, name: &str) -> Result<App, AppError> {
    let available = app_names(&apps);
    let mut copies: Vec<App> = apps.into_iter().filter(|a| a.name == name).collect();
    match copies.len() {
        0 => Err(AppError::NoSuchApp {
            name: name.to_string(),
            available,
        }),
        1 => Ok(copies.remove(0)),
        _ => match copies.iter().position(|a| a.hw_model() == HwModel::Bf3) {
            Some(i) => Ok(copies.swap_remove(i)),
            None => Err(AppError::AmbiguousApp {
                name: name.to_string(),
                models: copies.iter().map(App::hw_model).collect(),
            }),
        },
    }
}

/// Selects `name` from a list of applications (as [`App::from_host_elf`] does): its only copy,
/// or of copies for several hardware models the BlueField-3 one
/// ([`super::app_select::select`] selects by model as `flexio_app_get` does).
///
/// # Errors
/// [`AppError::NoSuchApp`] with the names present; [`AppError::AmbiguousApp`].
pub fn select_app(apps: Vec<App>, name: &str) -> Result<App, AppError> {
    select(apps, name)
}

/// The signature named by a `.dpa_sig_name_<app>` section of the host ELF.
fn host_signature(
    host: &Elf<'_>,
    section: &str,
    data: &[u8],
) -> Result<Option<SignatureStatus>, AppError> {
    if data.len() != SIG_NAME_LEN {
        return Err(AppError::SigNameSize {
            section: section.to_string(),
            size: data.len() as u64,
        });
    }
    let len = data
        .iter()
        .position(|&b| b == 0)
        .ok_or_else(|| AppError::SigNameNotTerminated(section.to_string()))?;
    // PANIC: `len` is a position inside `data`.
    let name = std::str::from_utf8(&data[..len])
        .map_err(|_| AppError::SigNameNotUtf8(section.to_string()))?;
    if name.is_empty() {
        return Ok(Some(SignatureStatus::Unsigned));
    }
    match host.section(name) {
        None => Ok(Some(SignatureStatus::Missing {
            section: name.to_string(),
        })),
        Some(s) => Ok(Some(SignatureStatus::Present(signature(
            &s.name,
            SignatureLocation::Host,
            s.sh_type,
            s.data,
        )?))),
    }
}

/// The crypto data section of a (signed) device ELF.
fn device_signature(elf: &Elf<'_>) -> Result<SignatureStatus, AppError> {
    match elf.sections().iter().find(|s| s.sh_type == SHT_DPA_CRYPTO) {
        None => Ok(SignatureStatus::Unsigned),
        Some(s) => Ok(SignatureStatus::Present(signature(
            &s.name,
            SignatureLocation::Device,
            s.sh_type,
            s.data,
        )?)),
    }
}

fn signature(
    section: &str,
    location: SignatureLocation,
    sh_type: u32,
    data: &[u8],
) -> Result<Signature, AppError> {
    let truncated = || AppError::SignatureTruncated {
        section: section.to_string(),
        size: data.len() as u64,
    };
    let head = data.get(..CRYPTO_METADATA_LEN).ok_or_else(truncated)?;
    let mut raw = [0u8; CRYPTO_METADATA_LEN];
    raw.copy_from_slice(head);
    Ok(Signature {
        section: section.to_string(),
        location,
        sh_type,
        size: data.len() as u64,
        metadata: CryptoMetadata { raw },
        data: data.to_vec(),
    })
}

/// ULEB128 at `*pos`, advancing it; `None` past the end or beyond 64 bits.
fn uleb(b: &[u8], pos: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *b.get(*pos)?;
        *pos += 1;
        v |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

/// NUL-terminated string at `*pos`, advancing past the NUL.
fn ntbs<'b>(b: &'b [u8], pos: &mut usize) -> Option<&'b [u8]> {
    let tail = b.get(*pos..)?;
    let len = tail.iter().position(|&c| c == 0)?;
    *pos += len + 1;
    tail.get(..len)
}

/// `Tag_RISCV_arch` of a `.riscv.attributes` section: format 'A', then subsections
/// (u32 length, vendor name, file-scope tag 1 with u32 length, then tag/value pairs: odd tags
/// NUL-terminated strings, even tags ULEB128). `None` for anything unexpected.
fn riscv_arch(data: &[u8]) -> Option<String> {
    if data.first() != Some(&b'A') {
        return None;
    }
    let mut sub = data.get(1..)?;
    while sub.len() >= 4 {
        let len = usize::try_from(u32::from_le_bytes(sub.get(..4)?.try_into().ok()?)).ok()?;
        let this = sub.get(..len)?;
        sub = sub.get(len.max(4)..)?;
        let mut pos = 4;
        if ntbs(this, &mut pos)? != b"riscv" {
            continue;
        }
        while pos < this.len() {
            let tag_start = pos;
            let scope = uleb(this, &mut pos)?;
            let size =
                usize::try_from(u32::from_le_bytes(this.get(pos..pos + 4)?.try_into().ok()?))
                    .ok()?;
            let attrs = this.get(tag_start..tag_start.checked_add(size)?)?;
            let mut p = pos + 4 - tag_start;
            pos = tag_start + size.max(1);
            if scope != 1 {
                continue;
            }
            while p < attrs.len() {
                let tag = uleb(attrs, &mut p)?;
                if tag % 2 == 1 {
                    let s = ntbs(attrs, &mut p)?;
                    if tag == TAG_RISCV_ARCH {
                        return Some(String::from_utf8_lossy(s).into_owned());
                    }
                } else {
                    uleb(attrs, &mut p)?;
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn riscv_arch_reads_the_attribute_and_rejects_junk() {
        let mut a = b"A".to_vec();
        let body = b"\x04\x10\x05rv64imac\0";
        let file_len = 1 + 4 + body.len() as u32;
        let sub_len = 4 + 6 + file_len;
        a.extend_from_slice(&sub_len.to_le_bytes());
        a.extend_from_slice(b"riscv\0\x01");
        a.extend_from_slice(&file_len.to_le_bytes());
        a.extend_from_slice(body);
        assert_eq!(riscv_arch(&a).as_deref(), Some("rv64imac"));
        for len in 0..a.len() {
            assert_eq!(riscv_arch(&a[..len]), None);
        }
        assert_eq!(riscv_arch(b"B"), None);
    }

    #[test]
    fn metadata_fields_are_big_endian_dwords() {
        let mut raw = [0u8; CRYPTO_METADATA_LEN];
        raw[3] = 1;
        raw[0x3f] = 2;
        let m = CryptoMetadata { raw };
        assert_eq!(m.metadata_version(), 1);
        assert_eq!(m.signature_type(), 2);
        assert_eq!(m.signature_type_name(), Some("RSA_SHA_512"));
    }

    #[test]
    fn load_segment_flags_read_as_rwx() {
        let s = LoadSegment {
            vaddr: 0,
            filesz: 0,
            memsz: 0,
            flags: PF_R | PF_X,
        };
        assert_eq!(s.flags_str(), "r-x");
    }
}
