//! `mlx5-dpa cc -o OUT.elf SRC.c ...`: the DPACC stand-in for users without DOCA. Compiles
//! device C sources against this project's FlexIO-compatible headers (`fw-blobs/include`:
//! `libflexio-dev/`, `libflexio-libc/`, `dpaintrin.h`) and links them with its device runtime
//! (`fw-blobs/runtime`) and link script (`fw-blobs/link/dpa.ld`) into a DPA device ELF, with
//! Debian's `riscv64-unknown-elf-gcc`. The headers, runtime and link scripts are built into
//! the tool, so it works from any directory.
//!
//! ```text
//! mlx5-dpa cc -o rpc.elf flexio_rpc_dev.c
//! mlx5-dpa cc -o pp.elf -I ../common/dev flexio_packet_processor_dev.c ../common/dev/com_dev.c
//! mlx5-dpa cc -o host_with_app --package-into host --app pp pp_dev.c   # as DPACC packages
//! mlx5-dpa cc -o host_with_app --package-into host --app pp --cpu bf3,cx8 pp_dev.c
//! ```
//!
//! Flags are those of `fw-blobs/build.sh` (`-march=rv64imac_zbb_zbs -mabi=lp64 -mcmodel=medany
//! -mno-relax -O2 ...`), so `mlx5-dpa cc -o x.elf fw-blobs/src/rpc_calc.c` gives the bytes of
//! `fw-blobs/bin/rpc_calc.elf` with the same compiler. `--package-into HOST --app NAME` puts
//! the device ELF into a copy of host program `HOST` as section `.dpa_bin_NAME` (docs/sources.md
//! section 5), with the host's `objcopy` (which refuses a host that already carries a DPA
//! signature section: objcopy does not know section type 0x70000666).
//!
//! `--cpu bf3,cx8` builds one copy per DPA hardware model, as FlexIO's `build.sh --cpu` does
//! with DPACC: each is compiled with `__NV_DPA` set to the model's `__NV_DPA_<MODEL>` (DPACC's
//! macro names; the values are provisional, in generation order) and packaged as section
//! `.dpa_bin_NAME@nv-dpa-<model>` (this project's labelling, provisional: DPACC's is not
//! public), which `mlx5_dpa::dpa::app_get` selects from as `flexio_app_get` does. Every model
//! is compiled with BlueField-3's `-march`: no other model's ISA is public. Without `--cpu`
//! one unlabelled BlueField-3 copy is built, with the same macros.
//!
//! Errors are typed: no compiler (naming the Debian package), a compiler or linker failure
//! (its output is shown as it came), an unreadable source.

use std::path::{Path, PathBuf};
use std::process::Command;

use mlx5_dpa::dpa::app::{BIN_PREFIX, MODEL_SEPARATOR};
use mlx5_dpa::dpa::HwModel;

/// The files the tool carries: headers, runtime sources and link scripts, by their path under
/// `fw-blobs/` (a test checks the list against the directory).
pub const EMBEDDED: &[(&str, &str)] = &[
    (
        "include/dpaintrin.h",
        include_str!("../../fw-blobs/include/dpaintrin.h"),
    ),
    (
        "include/doca_dpa_common.h",
        include_str!("../../fw-blobs/include/doca_dpa_common.h"),
    ),
    (
        "include/doca_dpa_dev.h",
        include_str!("../../fw-blobs/include/doca_dpa_dev.h"),
    ),
    (
        "include/doca_dpa_dev_buf.h",
        include_str!("../../fw-blobs/include/doca_dpa_dev_buf.h"),
    ),
    (
        "include/doca_dpa_dev_rdma.h",
        include_str!("../../fw-blobs/include/doca_dpa_dev_rdma.h"),
    ),
    (
        "include/doca_dpa_dev_sync_event.h",
        include_str!("../../fw-blobs/include/doca_dpa_dev_sync_event.h"),
    ),
    (
        "include/doca_version.h",
        include_str!("../../fw-blobs/include/doca_version.h"),
    ),
    (
        "include/mlx5_dpa_doca.h",
        include_str!("../../fw-blobs/include/mlx5_dpa_doca.h"),
    ),
    (
        "include/mlx5_dpa_descriptor.h",
        include_str!("../../fw-blobs/include/mlx5_dpa_descriptor.h"),
    ),
    (
        "include/libflexio-dev/flexio_dev.h",
        include_str!("../../fw-blobs/include/libflexio-dev/flexio_dev.h"),
    ),
    (
        "include/mlx5_dpa_cmdq.h",
        include_str!("../../fw-blobs/include/mlx5_dpa_cmdq.h"),
    ),
    (
        "include/libflexio-dev/flexio_dev_dpa_arch.h",
        include_str!("../../fw-blobs/include/libflexio-dev/flexio_dev_dpa_arch.h"),
    ),
    (
        "include/libflexio-dev/flexio_dev_endianity.h",
        include_str!("../../fw-blobs/include/libflexio-dev/flexio_dev_endianity.h"),
    ),
    (
        "include/libflexio-dev/flexio_dev_err.h",
        include_str!("../../fw-blobs/include/libflexio-dev/flexio_dev_err.h"),
    ),
    (
        "include/mlx5_dpa_msg_stream.h",
        include_str!("../../fw-blobs/include/mlx5_dpa_msg_stream.h"),
    ),
    (
        "include/libflexio-dev/flexio_dev_queue_access.h",
        include_str!("../../fw-blobs/include/libflexio-dev/flexio_dev_queue_access.h"),
    ),
    (
        "include/libflexio-dev/flexio_dev_queue_types.h",
        include_str!("../../fw-blobs/include/libflexio-dev/flexio_dev_queue_types.h"),
    ),
    (
        "include/libflexio-dev/flexio_dev_debug.h",
        include_str!("../../fw-blobs/include/libflexio-dev/flexio_dev_debug.h"),
    ),
    (
        "include/libflexio-dev/flexio_dev_tracer.h",
        include_str!("../../fw-blobs/include/libflexio-dev/flexio_dev_tracer.h"),
    ),
    (
        "include/libflexio-dev/flexio_dev_ver.h",
        include_str!("../../fw-blobs/include/libflexio-dev/flexio_dev_ver.h"),
    ),
    (
        "include/libflexio-libc/inttypes.h",
        include_str!("../../fw-blobs/include/libflexio-libc/inttypes.h"),
    ),
    (
        "include/libflexio-libc/stdio.h",
        include_str!("../../fw-blobs/include/libflexio-libc/stdio.h"),
    ),
    (
        "include/libflexio-libc/string.h",
        include_str!("../../fw-blobs/include/libflexio-libc/string.h"),
    ),
    ("runtime/os.c", include_str!("../../fw-blobs/runtime/os.c")),
    (
        "runtime/string.c",
        include_str!("../../fw-blobs/runtime/string.c"),
    ),
    (
        "runtime/print.c",
        include_str!("../../fw-blobs/runtime/print.c"),
    ),
    (
        "runtime/msg_stream.c",
        include_str!("../../fw-blobs/runtime/msg_stream.c"),
    ),
    (
        "runtime/cmdq.c",
        include_str!("../../fw-blobs/runtime/cmdq.c"),
    ),
    (
        "runtime/rpc.c",
        include_str!("../../fw-blobs/runtime/rpc.c"),
    ),
    (
        "runtime/stdio.c",
        include_str!("../../fw-blobs/runtime/stdio.c"),
    ),
    (
        "runtime/inttypes.c",
        include_str!("../../fw-blobs/runtime/inttypes.c"),
    ),
    (
        "runtime/debug.c",
        include_str!("../../fw-blobs/runtime/debug.c"),
    ),
    (
        "runtime/doca_dpa.c",
        include_str!("../../fw-blobs/runtime/doca_dpa.c"),
    ),
    ("link/dpa.ld", include_str!("../../fw-blobs/link/dpa.ld")),
    (
        "link/dpa_older.ld",
        include_str!("../../fw-blobs/link/dpa_older.ld"),
    ),
];

/// The runtime's sources in link order (`RUNTIME` of `fw-blobs/build.sh`).
const RUNTIME: &[&str] = &[
    "os",
    "string",
    "print",
    "msg_stream",
    "cmdq",
    "rpc",
    "stdio",
    "inttypes",
    "debug",
    "doca_dpa",
];

/// The default compiler (Debian package `gcc-riscv64-unknown-elf`).
pub const DEFAULT_CC: &str = "riscv64-unknown-elf-gcc";

const ARCH: &[&str] = &["-march=rv64imac_zbb_zbs", "-mabi=lp64", "-mcmodel=medany"];
/// `CFLAGS` of `fw-blobs/build.sh`, less `-Werror` and the include paths.
const CFLAGS: &[&str] = &[
    "-mno-relax",
    "-std=gnu11",
    "-g0",
    "-ffreestanding",
    "-nostdlib",
    "-fno-builtin",
    "-fno-tree-loop-distribute-patterns",
    "-fno-common",
    "-fno-pic",
    "-fno-pie",
    "-fno-stack-protector",
    "-fno-asynchronous-unwind-tables",
    "-fno-unwind-tables",
    "-fno-ident",
    "-Wall",
    "-Wextra",
    "-Wno-unused-parameter",
];
const LDFLAGS: &[&str] = &[
    "-nostdlib",
    "-static",
    "-no-pie",
    "-Wl,--no-relax",
    "-Wl,--build-id=none",
    "-Wl,-z,max-page-size=4096",
    "-Wl,--no-warn-rwx-segments",
];

/// `mlx5-dpa cc` arguments.
#[derive(clap::Args, Debug)]
pub struct CcArgs {
    /// The output: the device ELF, or with --package-into the host program carrying it.
    #[arg(short = 'o', value_name = "OUT")]
    pub out: PathBuf,
    /// Device C sources.
    #[arg(required = true, value_name = "SRC.c")]
    pub sources: Vec<PathBuf>,
    /// Another include directory (after the FlexIO headers).
    #[arg(short = 'I', value_name = "DIR")]
    pub include: Vec<PathBuf>,
    /// A preprocessor definition, NAME or NAME=VALUE.
    #[arg(short = 'D', value_name = "NAME[=VALUE]")]
    pub define: Vec<String>,
    /// Optimisation level (0, 1, 2, 3, s).
    #[arg(long = "opt", default_value = "2", value_parser = ["0", "1", "2", "3", "s"])]
    pub opt: String,
    /// Link with the older layout (text 0x10000000, data 0x28000000).
    #[arg(long)]
    pub older_layout: bool,
    /// The RISC-V compiler (default: riscv64-unknown-elf-gcc, or $MLX5_DPA_CC).
    #[arg(long, value_name = "PATH")]
    pub cc: Option<PathBuf>,
    /// Package the device ELF into a copy of this host program, as DPACC does.
    #[arg(
        long,
        visible_alias = "embed",
        value_name = "HOST_ELF",
        requires = "app"
    )]
    pub package_into: Option<PathBuf>,
    /// Sign the device ELF with this RSA key (PEM), as `mlx5-dpa sign`: packaged, its crypto
    /// data goes into section `.dpa_sig_NAME`, which `.dpa_sig_name_NAME` names (DPACC's
    /// packaging); otherwise into OUT.sig. Needs --cert.
    #[arg(long, value_name = "KEY.pem", requires = "certs")]
    pub sign_key: Option<PathBuf>,
    /// With --sign-key: the certificate chain, CA first, leaf last (repeat the option).
    #[arg(long = "cert", value_name = "CERT", requires = "sign_key")]
    pub certs: Vec<PathBuf>,
    /// The application's name in the host program (section `.dpa_bin_NAME`).
    #[arg(long, value_name = "NAME", requires = "package_into")]
    pub app: Option<String>,
    /// Hardware models to build for, comma-separated (bf3, cx8, cx9, or nv-dpa-bf3 ...), as
    /// FlexIO's `build.sh --cpu bf3,cx8`: one copy per model, each compiled with `__NV_DPA` set
    /// to that model's `__NV_DPA_<MODEL>`. With --package-into each copy is section
    /// `.dpa_bin_NAME@nv-dpa-<model>`; without, one model only.
    #[arg(long, value_name = "MODELS", value_delimiter = ',', value_parser = parse_model)]
    pub cpu: Vec<HwModel>,
    /// Print each compiler command before running it.
    #[arg(short = 'v', long)]
    pub verbose: bool,
    /// More compiler options, after the tool's own (`mlx5-dpa dpacc`'s `--devicecc-options`).
    #[arg(skip)]
    pub extra_cflags: Vec<String>,
    /// More linker options, after the objects (`mlx5-dpa dpacc`'s `--device-libs` and
    /// `--devicelink-options`).
    #[arg(skip)]
    pub extra_ldflags: Vec<String>,
}

/// Why `mlx5-dpa cc` failed.
#[derive(Debug, thiserror::Error)]
pub enum CcError {
    #[error(
        "{0} not found: install it with `apt-get install gcc-riscv64-unknown-elf` (Debian), \
         or name a RISC-V compiler with --cc or MLX5_DPA_CC"
    )]
    NoCompiler(String),
    #[error("{0}: no such source file")]
    NoSource(String),
    #[error("{what} failed ({status}):\n{output}")]
    Tool {
        what: String,
        status: String,
        output: String,
    },
    #[error("{0}")]
    Io(String),
    #[error("application name {0:?}: letters, digits and '_' only")]
    BadAppName(String),
    #[error("objcopy not found (needed for --package-into): install binutils, or set OBJCOPY")]
    NoObjcopy,
    #[error(
        "--cpu names {0} hardware models: several copies go into a host program (--package-into HOST --app NAME)"
    )]
    ManyModelsOneFile(usize),
    #[error("--cpu names {0} twice")]
    RepeatedModel(HwModel),
    #[error("signing: {0}")]
    Sign(String),
    #[error("--sign-key signs one build: --cpu names {0} hardware models")]
    SignManyModels(usize),
}

fn parse_model(s: &str) -> Result<HwModel, String> {
    HwModel::from_name(s.trim()).map_err(|e| e.to_string())
}

/// `-D` flags that describe `model` to device code: every `__NV_DPA_<MODEL>` and `__NV_DPA`
/// (values provisional, ordered by generation: [`HwModel::nv_dpa`]).
fn model_defines(model: HwModel) -> Vec<String> {
    let mut d: Vec<String> = HwModel::ALL
        .iter()
        .map(|m| format!("-D{}={}", m.nv_dpa_macro(), m.nv_dpa()))
        .collect();
    d.push(format!("-D__NV_DPA={}", model.nv_dpa_macro()));
    d
}

/// A scratch directory removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> Result<Scratch, CcError> {
        use std::sync::atomic::{AtomicU32, Ordering};
        static N: AtomicU32 = AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "mlx5-dpa-cc-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir)
            .map_err(|e| CcError::Io(format!("{}: {e}", dir.display())))?;
        Ok(Scratch(dir))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> CcError + '_ {
    move |e| CcError::Io(format!("{}: {e}", path.display()))
}

/// Runs `cmd` (named `what` in errors); its output goes into the error when it fails.
fn run_tool(mut cmd: Command, what: &str, verbose: bool) -> Result<(), CcError> {
    if verbose {
        eprintln!("{cmd:?}");
    }
    let out = cmd
        .output()
        .map_err(|e| CcError::Io(format!("{what}: {e}")))?;
    if !out.status.success() {
        let mut output = String::from_utf8_lossy(&out.stderr).into_owned();
        output.push_str(&String::from_utf8_lossy(&out.stdout));
        return Err(CcError::Tool {
            what: what.to_string(),
            status: out.status.to_string(),
            output,
        });
    }
    // Warnings of a successful compile are the user's to see.
    if !out.stderr.is_empty() {
        eprint!("{}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(())
}

/// Whether `prog` runs (`--version`).
fn available(prog: &Path) -> bool {
    Command::new(prog)
        .arg("--version")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

/// Runs `mlx5-dpa cc`.
pub fn run(a: &CcArgs) -> Result<(), CcError> {
    // The arguments and the key first: a bad one is refused before any set-up, also where no
    // compiler is installed.
    check_args(a)?;
    let signer = read_signer(a)?;
    let Setup {
        cc,
        tmp,
        sources,
        includes,
    } = setup(a)?;
    let objcopy = find_objcopy(a)?;
    let sections = build_copies(a, &cc, &tmp, &sources, &includes)?;
    // The signature of the (one) build: a section pair when packaged, OUT.sig otherwise.
    let sig_sections = match signer {
        Some(sign) => sign_build(a, &tmp, &sections, sign)?,
        None => Vec::new(),
    };
    if let (Some(host), Some(objcopy)) = (&a.package_into, objcopy) {
        let mut cmd = Command::new(&objcopy);
        // objcopy places each added section before the ones added after it: name them newest
        // model first so that the host lists them oldest first.
        for (section, device) in sections.iter().rev() {
            cmd.arg("--add-section")
                .arg(format!("{section}={}", device.display()));
        }
        for (section, file) in &sig_sections {
            cmd.arg("--add-section")
                .arg(format!("{section}={}", file.display()));
        }
        cmd.arg(host).arg(&a.out);
        run_tool(cmd, "packaging (objcopy)", a.verbose)?;
    }
    Ok(())
}

/// What every build starts from: the compiler, a scratch directory holding the tool's
/// headers, runtime and link scripts, and the sources and include directories made absolute.
struct Setup {
    cc: PathBuf,
    tmp: Scratch,
    sources: Vec<PathBuf>,
    includes: Vec<PathBuf>,
}

fn setup(a: &CcArgs) -> Result<Setup, CcError> {
    let cc =
        a.cc.clone()
            .or_else(|| std::env::var_os("MLX5_DPA_CC").map(PathBuf::from))
            .unwrap_or_else(|| PathBuf::from(DEFAULT_CC));
    if !available(&cc) {
        return Err(CcError::NoCompiler(cc.display().to_string()));
    }
    if let Some(app) = &a.app {
        if app.is_empty() || !app.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(CcError::BadAppName(app.clone()));
        }
    }
    let sources: Vec<PathBuf> = a
        .sources
        .iter()
        .map(|s| {
            if s.is_file() {
                std::path::absolute(s).map_err(io(s))
            } else {
                Err(CcError::NoSource(s.display().to_string()))
            }
        })
        .collect::<Result<_, _>>()?;
    let includes: Vec<PathBuf> = a
        .include
        .iter()
        .map(|d| std::path::absolute(d).map_err(io(d)))
        .collect::<Result<_, _>>()?;

    let tmp = Scratch::new()?;
    for (rel, text) in EMBEDDED {
        let p = tmp.0.join(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).map_err(io(parent))?;
        }
        std::fs::write(&p, text).map_err(io(&p))?;
    }
    Ok(Setup {
        cc,
        tmp,
        sources,
        includes,
    })
}

/// The compiler command for `src` (relative to the scratch directory when `relative`) with
/// the tool's flags, the model's macros, the include directories and the definitions.
fn compile_cmd(
    a: &CcArgs,
    cc: &Path,
    tmp: &Scratch,
    includes: &[PathBuf],
    src: &Path,
    relative: bool,
    model: HwModel,
) -> Command {
    let mut cmd = Command::new(cc);
    cmd.current_dir(&tmp.0)
        .args(ARCH)
        .arg(format!("-O{}", a.opt))
        .args(CFLAGS)
        .args(&a.extra_cflags)
        .args(model_defines(model))
        .arg("-Iinclude");
    for d in includes {
        cmd.arg("-I").arg(d);
    }
    for d in &a.define {
        cmd.arg(format!("-D{d}"));
    }
    if !relative {
        // The source's own directory, as a compiler searches it for "..." includes.
        if let Some(dir) = src.parent() {
            cmd.arg("-iquote").arg(dir);
        }
    }
    cmd
}

/// The sources preprocessed as `run` compiles them (for BlueField-3), with `defines` added:
/// `mlx5-dpa dpacc` reads the functions the device code marks for the host from them.
///
/// # Errors
/// As [`run`].
pub fn preprocess(a: &CcArgs, defines: &[String]) -> Result<Vec<(PathBuf, String)>, CcError> {
    let Setup {
        cc,
        tmp,
        sources,
        includes,
    } = setup(a)?;
    sources
        .iter()
        .map(|src| {
            let mut cmd = compile_cmd(a, &cc, &tmp, &includes, src, false, HwModel::Bf3);
            cmd.args(defines.iter().map(|d| format!("-D{d}")))
                .arg("-E")
                .arg(src);
            if a.verbose {
                eprintln!("+ {cmd:?}");
            }
            let out = cmd
                .output()
                .map_err(|e| CcError::Io(format!("{}: {e}", cc.display())))?;
            if !out.status.success() {
                return Err(CcError::Tool {
                    what: format!("preprocessing {}", src.display()),
                    status: out.status.to_string(),
                    output: String::from_utf8_lossy(&out.stderr).into_owned(),
                });
            }
            Ok((
                src.clone(),
                String::from_utf8_lossy(&out.stdout).into_owned(),
            ))
        })
        .collect()
}

/// Refuses the argument combinations `cc` cannot build.
fn check_args(a: &CcArgs) -> Result<(), CcError> {
    for (i, m) in a.cpu.iter().enumerate() {
        if a.cpu[..i].contains(m) {
            return Err(CcError::RepeatedModel(*m));
        }
    }
    if a.cpu.len() > 1 && a.package_into.is_none() {
        return Err(CcError::ManyModelsOneFile(a.cpu.len()));
    }
    if a.sign_key.is_some() && a.cpu.len() > 1 {
        return Err(CcError::SignManyModels(a.cpu.len()));
    }
    Ok(())
}

/// Signs a device ELF with the key and certificates `--sign-key` / `--cert` name.
type SignFn = Box<dyn Fn(&[u8]) -> Result<Vec<u8>, CcError>>;

/// The signer, read before anything is built: a bad key or certificate fails at once.
fn read_signer(a: &CcArgs) -> Result<Option<SignFn>, CcError> {
    Ok(match &a.sign_key {
        None => None,
        Some(key) => {
            let bad = |e: String| CcError::Sign(e);
            // Bounded: a key path naming a device or a huge file is refused before reading.
            let pem = crate::input::read_text(key, crate::input::MAX_KEY_FILE)
                .map_err(|e| bad(e.to_string()))?;
            let key = mlx5_dpa::dpa::auth::private_key_from_pem(&pem)
                .map_err(|e| bad(format!("{}: {e}", key.display())))?;
            let chain = a
                .certs
                .iter()
                .map(|c| crate::auth::cert_der(c).map_err(|e| bad(e.to_string())))
                .collect::<Result<Vec<_>, _>>()?;
            Some(Box::new(move |elf: &[u8]| {
                mlx5_dpa::dpa::auth::sign(elf, &key, &chain)
                    .map_err(|e| CcError::Sign(e.to_string()))
            }) as SignFn)
        }
    })
}

/// objcopy, when the result is packaged into a host program.
fn find_objcopy(a: &CcArgs) -> Result<Option<PathBuf>, CcError> {
    Ok(match &a.package_into {
        None => None,
        Some(_) => {
            let objcopy = std::env::var_os("OBJCOPY")
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from("objcopy"));
            if !available(&objcopy) {
                return Err(CcError::NoObjcopy);
            }
            Some(objcopy)
        }
    })
}

/// Compiles and links one device ELF per hardware model; gives the `.dpa_bin_` section
/// each goes into (when an app name is given) and its file.
fn build_copies(
    a: &CcArgs,
    cc: &Path,
    tmp: &Scratch,
    sources: &[PathBuf],
    includes: &[PathBuf],
) -> Result<Vec<(String, PathBuf)>, CcError> {
    let compile = |src: &Path, obj: &Path, relative: bool, model: HwModel| -> Result<(), CcError> {
        let mut cmd = compile_cmd(a, cc, tmp, includes, src, relative, model);
        cmd.arg("-c").arg(src).arg("-o").arg(obj);
        run_tool(cmd, &format!("compiling {}", src.display()), a.verbose)
    };
    // Without --cpu: one unlabelled copy, built for BlueField-3 (as DPACC 24.01 builds).
    let builds: Vec<(HwModel, bool)> = if a.cpu.is_empty() {
        vec![(HwModel::Bf3, false)]
    } else {
        a.cpu.iter().map(|m| (*m, true)).collect()
    };
    let script = if a.older_layout {
        "link/dpa_older.ld"
    } else {
        "link/dpa.ld"
    };
    let mut sections = Vec::new();
    for (model, labelled) in builds {
        let dir = tmp.0.join(format!("obj-{}", model.short_name()));
        std::fs::create_dir_all(&dir).map_err(io(&dir))?;
        let mut objs = Vec::new();
        for (i, src) in sources.iter().enumerate() {
            let obj = dir.join(format!("src{i}.o"));
            compile(src, &obj, false, model)?;
            objs.push(obj);
        }
        for r in RUNTIME {
            let obj = dir.join(format!("rt_{r}.o"));
            compile(Path::new(&format!("runtime/{r}.c")), &obj, true, model)?;
            objs.push(obj);
        }
        let device = match &a.package_into {
            Some(_) => dir.join("device.elf"),
            None => std::path::absolute(&a.out).map_err(io(&a.out))?,
        };
        let mut link = Command::new(cc);
        link.current_dir(&tmp.0)
            .args(ARCH)
            .args(LDFLAGS)
            .arg(format!("-Wl,-T,{script}"))
            .arg("-o")
            .arg(&device)
            .args(&objs)
            .args(&a.extra_ldflags);
        run_tool(link, "linking", a.verbose)?;
        if let Some(app) = &a.app {
            let section = if labelled {
                format!("{BIN_PREFIX}{app}{MODEL_SEPARATOR}{}", model.mcpu())
            } else {
                format!("{BIN_PREFIX}{app}")
            };
            sections.push((section, device));
        }
    }

    Ok(sections)
}

/// Signs the (one) build: the signature's section pair when packaged, `OUT.sig` otherwise.
fn sign_build(
    a: &CcArgs,
    tmp: &Scratch,
    sections: &[(String, PathBuf)],
    sign: SignFn,
) -> Result<Vec<(String, PathBuf)>, CcError> {
    let mut sig_sections = Vec::new();
    {
        let device = match (&a.package_into, sections.first()) {
            (Some(_), Some((_, d))) => d.clone(),
            _ => std::path::absolute(&a.out).map_err(io(&a.out))?,
        };
        let elf = crate::input::read_bounded(&device, crate::input::MAX_ELF_FILE)
            .map_err(|e| CcError::Sign(e.to_string()))?;
        let blob = sign(&elf)?;
        match (&a.package_into, &a.app) {
            (Some(_), Some(app)) => {
                let sig_section = format!(".dpa_sig_{app}");
                let sig_file = tmp.0.join("crypto_data.bin");
                std::fs::write(&sig_file, &blob).map_err(io(&sig_file))?;
                let mut name = vec![0u8; mlx5_dpa::dpa::app::SIG_NAME_LEN];
                name[..sig_section.len()].copy_from_slice(sig_section.as_bytes());
                let name_file = tmp.0.join("sig_name.bin");
                std::fs::write(&name_file, &name).map_err(io(&name_file))?;
                sig_sections.push((sig_section, sig_file));
                sig_sections.push((
                    format!("{}{app}", mlx5_dpa::dpa::app::SIG_NAME_PREFIX),
                    name_file,
                ));
            }
            _ => {
                let out = crate::input::sig_beside(&a.out);
                std::fs::write(&out, &blob).map_err(io(&out))?;
            }
        }
    }
    Ok(sig_sections)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every header, runtime source and link script under fw-blobs is carried, and nothing
    /// that is not there: a file added without updating [`EMBEDDED`] fails here.
    #[test]
    fn the_embedded_files_are_the_directorys() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fw-blobs");
        let mut on_disk = Vec::new();
        for dir in [
            "include",
            "include/libflexio-dev",
            "include/libflexio-libc",
            "runtime",
            "link",
        ] {
            for e in std::fs::read_dir(root.join(dir)).unwrap() {
                let p = e.unwrap().path();
                if p.is_file() {
                    on_disk.push(format!(
                        "{dir}/{}",
                        p.file_name().unwrap().to_string_lossy()
                    ));
                }
            }
        }
        on_disk.sort();
        let mut embedded: Vec<String> = EMBEDDED.iter().map(|(p, _)| p.to_string()).collect();
        embedded.sort();
        assert_eq!(embedded, on_disk);
        for (rel, text) in EMBEDDED {
            assert_eq!(
                std::fs::read_to_string(root.join(rel)).unwrap(),
                *text,
                "{rel}"
            );
        }
        // The runtime list is the runtime directory's sources.
        let mut rt: Vec<String> = RUNTIME.iter().map(|r| format!("runtime/{r}.c")).collect();
        rt.sort();
        let mut rt_disk: Vec<String> = on_disk
            .into_iter()
            .filter(|p| p.starts_with("runtime/"))
            .collect();
        rt_disk.sort();
        assert_eq!(rt, rt_disk);
    }

    /// build.sh links the runtime in the same order.
    #[test]
    fn the_runtime_order_is_build_shs() {
        let sh = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../fw-blobs/build.sh"),
        )
        .unwrap();
        let line = sh
            .lines()
            .find(|l| l.starts_with("RUNTIME="))
            .expect("RUNTIME= in build.sh");
        assert_eq!(line, format!("RUNTIME=\"{}\"", RUNTIME.join(" ")));
    }
}
