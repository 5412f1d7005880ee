//! `mlx5-dpa dpacc SRC.c ... -o APP.a --app-name=APP ...`: DPACC's application build, as
//! NVIDIA's `doca_build_dpacc.sh` (beside the FlexIO samples) runs it, for programs built
//! against `libflexio` (docs/flexio-c.md). It gives what DPACC gives: a host static library
//! holding
//!
//! - the device ELF (built as `mlx5-dpa cc` builds it) in section `.dpa_bin_APP`;
//! - `struct flexio_app *APP`, created when the program starts (`flexio_app_create`, in a
//!   constructor) and destroyed when it ends;
//! - one host stub per function the device code marks `__dpa_rpc__` or `__dpa_global__`,
//!   named as the function (`extern flexio_func_t rpc_calculate;` in the host program), each
//!   registered with a pack function generated from the function's parameters
//!   (`flexio_func_pup_register`), which packs them as the device runtime's generic unpack
//!   (`mlx5_dpa_rpc_unpack_u64`: up to eight 64-bit words, 32-bit and narrower values
//!   extended as the RV64 calling convention passes them) reads them.
//!
//! The command line is DPACC's (single-dash long options, option lists split at commas and
//! spaces):
//!
//! ```text
//! dpacc SRC.c... -o OUT.a --app-name=NAME [-hostcc=CC] [-hostcc-options=OPTS]
//!       [--devicecc-options=OPTS] [--devicelink-options=OPTS] [--device-libs=OPTS]
//!       [-I DIR] [-lLIB] [--version]
//! ```
//!
//! `-ldpa`, `-ldoca_dpa_dev`, `-ldoca_dpa_dev_comm` and `-lflexio_dev` name what this
//! project's device runtime provides and are accepted as such; other device libraries are
//! linked. DPACC's library mode (`--gen-libs`) is not supported yet.
//! `tools/install-dpacc.sh` puts a `dpacc` that runs this where `doca_build_dpacc.sh` looks
//! for it.

use std::ffi::OsString;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::cc::{self, CcArgs, CcError};

/// `mlx5-dpa dpacc` arguments: DPACC's command line, read by [`parse`].
#[derive(clap::Args, Debug)]
pub struct DpaccArgs {
    /// DPACC's arguments (see `mlx5-dpa dpacc --version` and docs/flexio-c.md).
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "DPACC ARGS"
    )]
    pub args: Vec<OsString>,
}

/// Why `mlx5-dpa dpacc` failed.
#[derive(Debug, thiserror::Error)]
pub enum DpaccError {
    #[error("dpacc: {0}")]
    Usage(String),
    #[error(transparent)]
    Cc(#[from] CcError),
    #[error("dpacc: {0}")]
    Entry(String),
    #[error("dpacc: {what} failed ({status}):\n{output}")]
    Host {
        what: String,
        status: String,
        output: String,
    },
    #[error("dpacc: {0}")]
    Io(String),
}

/// Device libraries the device runtime stands for.
const RUNTIME_LIBS: &[&str] = &["dpa", "doca_dpa_dev", "doca_dpa_dev_comm", "flexio_dev"];

/// The unpack function of the device runtime that the generated pack functions feed.
const GENERIC_UNPACK: &str = "mlx5_dpa_rpc_unpack_u64";

/// Most parameters the generic unpack passes.
const MAX_PARAMS: usize = 8;

/// What the markers become while the sources are scanned for them.
const RPC_MARK: &str = "__mlx5_dpa_mark_rpc__";
const GLOBAL_MARK: &str = "__mlx5_dpa_mark_global__";

/// A DPACC command line, read.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Dpacc {
    pub sources: Vec<PathBuf>,
    pub out: Option<PathBuf>,
    pub app_name: Option<String>,
    pub hostcc: Option<String>,
    pub hostcc_options: Vec<String>,
    /// Device compiler options other than -I and -D.
    pub devicecc_options: Vec<String>,
    pub includes: Vec<PathBuf>,
    pub defines: Vec<String>,
    /// Device link options: -L directories and libraries other than the runtime's.
    pub link_options: Vec<String>,
    pub version: bool,
}

/// An option list: DPACC's values are comma-separated (`doca_build_dpacc.sh`) or
/// space-separated (the DOCA guides); either is split.
fn list(v: &str) -> impl Iterator<Item = String> + '_ {
    v.split([',', ' ', '\t'])
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

/// Sorts device compiler options into include directories, definitions and the rest.
fn device_cc(d: &mut Dpacc, opts: &str) {
    let mut it = list(opts).peekable();
    while let Some(o) = it.next() {
        if o == "-I" || o == "-D" {
            if let Some(v) = it.next() {
                if o == "-I" {
                    d.includes.push(PathBuf::from(v));
                } else {
                    d.defines.push(v);
                }
            }
        } else if let Some(dir) = o.strip_prefix("-I") {
            d.includes.push(PathBuf::from(dir));
        } else if let Some(def) = o.strip_prefix("-D") {
            d.defines.push(def.to_owned());
        } else {
            d.devicecc_options.push(o);
        }
    }
}

/// Keeps device link options, less the libraries the runtime stands for.
fn device_link(d: &mut Dpacc, opts: &str) {
    for o in list(opts) {
        if o.strip_prefix("-l")
            .is_some_and(|l| RUNTIME_LIBS.contains(&l))
        {
            continue;
        }
        d.link_options.push(o);
    }
}

/// Reads DPACC's command line.
///
/// # Errors
/// [`DpaccError::Usage`] for an option DPACC has that this stand-in does not (naming it), or
/// one it does not know.
pub fn parse(args: &[OsString]) -> Result<Dpacc, DpaccError> {
    let mut d = Dpacc::default();
    let args: Vec<String> = args
        .iter()
        .map(|a| {
            a.to_str()
                .map(str::to_owned)
                .ok_or_else(|| DpaccError::Usage(format!("{a:?} is not UTF-8")))
        })
        .collect::<Result<_, _>>()?;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        // `--opt=value`, `-opt=value`, or the value in the next argument.
        let (key, inline) = match a.split_once('=') {
            Some((k, v)) if k.starts_with('-') => (k, Some(v.to_owned())),
            _ => (a.as_str(), None),
        };
        let mut value = |name: &str| -> Result<String, DpaccError> {
            inline
                .clone()
                .or_else(|| it.next().cloned())
                .ok_or_else(|| DpaccError::Usage(format!("{name} needs a value")))
        };
        match key.trim_start_matches('-') {
            _ if !a.starts_with('-') => d.sources.push(PathBuf::from(a)),
            "o" => d.out = Some(PathBuf::from(value("-o")?)),
            "app-name" => d.app_name = Some(value("--app-name")?),
            "hostcc" => d.hostcc = Some(value("-hostcc")?),
            "hostcc-options" => d.hostcc_options.extend(list(&value("-hostcc-options")?)),
            "devicecc-options" => device_cc(&mut d, &value("--devicecc-options")?),
            "devicelink-options" => device_link(&mut d, &value("--devicelink-options")?),
            "device-libs" => device_link(&mut d, &value("--device-libs")?),
            "version" => d.version = true,
            "gen-libs" => {
                return Err(DpaccError::Usage(
                    "--gen-libs (DPACC's library mode) is not supported yet".into(),
                ))
            }
            _ if key.starts_with("-I") && key.len() > 2 => {
                d.includes.push(PathBuf::from(&a[2..]));
            }
            "I" => d.includes.push(PathBuf::from(value("-I")?)),
            _ if key.starts_with("-D") && key.len() > 2 => d.defines.push(a[2..].to_owned()),
            _ if key.starts_with("-l") && key.len() > 2 => device_link(&mut d, a),
            _ if key.starts_with("-L") && key.len() > 2 => d.link_options.push(a.clone()),
            _ if key.starts_with("-o") && key.len() > 2 => {
                d.out = Some(PathBuf::from(&a[2..]));
            }
            _ => {
                return Err(DpaccError::Usage(format!(
                    "unknown option {a} (known: -o, --app-name, -hostcc, -hostcc-options, \
                     --devicecc-options, --devicelink-options, --device-libs, -I, -D, -l, -L, \
                     --version)"
                )))
            }
        }
    }
    Ok(d)
}

/// How one parameter travels in its 64-bit word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Param {
    /// 64-bit integers and pointers: as they are.
    Word,
    /// 32-bit integers: sign-extended (RV64 passes them so, signed or not).
    Int32 {
        signed: bool,
    },
    Int16 {
        signed: bool,
    },
    Int8 {
        signed: bool,
    },
}

impl Param {
    /// The C expression that reads this parameter from `ap`.
    fn read(self) -> &'static str {
        match self {
            Param::Word => "va_arg(ap, uint64_t)",
            Param::Int32 { signed: true } => "(uint64_t)(int64_t)va_arg(ap, int)",
            Param::Int32 { signed: false } => {
                "(uint64_t)(int64_t)(int32_t)va_arg(ap, unsigned int)"
            }
            Param::Int16 { signed: true } => "(uint64_t)(int64_t)(int16_t)va_arg(ap, int)",
            Param::Int16 { signed: false } => "(uint64_t)(uint16_t)va_arg(ap, int)",
            Param::Int8 { signed: true } => "(uint64_t)(int64_t)(int8_t)va_arg(ap, int)",
            Param::Int8 { signed: false } => "(uint64_t)(uint8_t)va_arg(ap, int)",
        }
    }
}

/// A function the device code marks for the host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub name: String,
    pub params: Vec<Param>,
}

/// The C tokens of `text`: identifiers and numbers, and single punctuation characters;
/// preprocessor line markers and string / character literals are skipped.
fn tokens(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    for line in text.lines() {
        if line.trim_start().starts_with('#') {
            continue;
        }
        let b = line.as_bytes();
        let mut i = 0;
        while i < b.len() {
            let c = b[i];
            if c.is_ascii_whitespace() {
                i += 1;
            } else if c.is_ascii_alphanumeric() || c == b'_' {
                let s = i;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                    i += 1;
                }
                out.push(&line[s..i]);
            } else if c == b'"' || c == b'\'' {
                i += 1;
                while i < b.len() && b[i] != c {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
            } else {
                out.push(&line[i..i + 1]);
                i += 1;
            }
        }
    }
    out
}

/// The type of one parameter's tokens (its name dropped).
fn param(toks: &[&str], func: &str) -> Result<Param, DpaccError> {
    if toks.iter().any(|t| *t == "*" || *t == "[") {
        return Ok(Param::Word);
    }
    const QUALIFIERS: &[&str] = &["const", "volatile", "register", "restrict", "__restrict"];
    let mut words: Vec<&str> = toks
        .iter()
        .copied()
        .filter(|t| !QUALIFIERS.contains(t))
        .collect();
    const TYPE_WORDS: &[&str] = &[
        "unsigned", "signed", "int", "long", "short", "char", "_Bool", "bool",
    ];
    // A trailing identifier after a complete type is the parameter's name.
    if words.len() > 1 {
        let last = words[words.len() - 1];
        let enum_tag = words.len() == 2 && words[0] == "enum";
        if !TYPE_WORDS.contains(&last) && !enum_tag {
            words.pop();
        }
    }
    let ty = words.join(" ");
    let unsigned = ty.starts_with("unsigned") || ty.starts_with("uint") || ty == "size_t";
    Ok(match ty.as_str() {
        "uint64_t" | "int64_t" | "long" | "long int" | "unsigned long" | "unsigned long int"
        | "signed long" | "long long" | "unsigned long long" | "size_t" | "ssize_t"
        | "uintptr_t" | "intptr_t" | "ptrdiff_t" | "flexio_uintptr_t" => Param::Word,
        "int" | "signed" | "signed int" | "int32_t" | "unsigned" | "unsigned int" | "uint32_t" => {
            Param::Int32 { signed: !unsigned }
        }
        "short" | "short int" | "signed short" | "int16_t" | "unsigned short"
        | "unsigned short int" | "uint16_t" => Param::Int16 { signed: !unsigned },
        "char" | "signed char" | "int8_t" => Param::Int8 { signed: true },
        "unsigned char" | "uint8_t" | "bool" | "_Bool" => Param::Int8 { signed: false },
        _ if ty.starts_with("enum ") => Param::Int32 { signed: true },
        _ => {
            return Err(DpaccError::Entry(format!(
                "{func}: a parameter of type `{ty}` cannot be passed from the host \
                 (integers and pointers can)"
            )))
        }
    })
}

/// The parameters between the parentheses at `toks[open]`, and the index after them.
fn params(toks: &[&str], open: usize, func: &str) -> Result<(Vec<Param>, usize), DpaccError> {
    let mut depth = 0usize;
    let mut groups: Vec<Vec<&str>> = Vec::new();
    let mut cur: Vec<&str> = Vec::new();
    let mut i = open;
    while i < toks.len() {
        let t = toks[i];
        match t {
            "(" => {
                depth += 1;
                if depth > 1 {
                    cur.push(t);
                }
            }
            ")" => {
                depth -= 1;
                if depth == 0 {
                    break;
                }
                cur.push(t);
            }
            "," if depth == 1 => groups.push(std::mem::take(&mut cur)),
            _ => cur.push(t),
        }
        i += 1;
    }
    groups.push(cur);
    if i >= toks.len() {
        return Err(DpaccError::Entry(format!("{func}: unbalanced parentheses")));
    }
    let empty = groups.len() == 1 && (groups[0].is_empty() || groups[0] == ["void"]);
    let ps = if empty {
        Vec::new()
    } else {
        groups
            .iter()
            .map(|g| param(g, func))
            .collect::<Result<Vec<_>, _>>()?
    };
    if ps.len() > MAX_PARAMS {
        return Err(DpaccError::Entry(format!(
            "{func} takes {} parameters; the host passes at most {MAX_PARAMS}",
            ps.len()
        )));
    }
    Ok((ps, i + 1))
}

/// The functions marked `__dpa_rpc__` / `__dpa_global__` in preprocessed `text` (with the
/// markers replaced by [`RPC_MARK`] / [`GLOBAL_MARK`]), in order of appearance, each once.
///
/// # Errors
/// A marked function the host cannot call (a parameter type that does not fit a word, more
/// than [`MAX_PARAMS`] parameters).
pub fn entries(text: &str) -> Result<Vec<Entry>, DpaccError> {
    let toks = tokens(text);
    let mut out: Vec<Entry> = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        if toks[i] != RPC_MARK && toks[i] != GLOBAL_MARK {
            i += 1;
            continue;
        }
        // The declarator: the identifier before the first top-level '(' not part of an
        // attribute.
        let mut j = i + 1;
        let mut name = None;
        while j < toks.len() && toks[j] != ";" && toks[j] != "{" {
            if toks[j] == "__attribute__" || toks[j] == "__attribute" {
                // Skip `__attribute__ (( ... ))`.
                let mut depth = 0usize;
                j += 1;
                while j < toks.len() {
                    match toks[j] {
                        "(" => depth += 1,
                        ")" => {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        _ => {}
                    }
                    j += 1;
                }
            } else if toks[j] == "(" {
                name = toks.get(j - 1).copied();
                break;
            }
            j += 1;
        }
        let Some(name) = name.filter(|n| n.starts_with(|c: char| c.is_alphabetic() || c == '_'))
        else {
            i += 1;
            continue;
        };
        let (ps, _) = params(&toks, j, name)?;
        if !out.iter().any(|e| e.name == name) {
            out.push(Entry {
                name: name.to_owned(),
                params: ps,
            });
        }
        i = j;
    }
    Ok(out)
}

/// The host library's C source for application `app`, whose device ELF is `elf`.
pub fn host_source(app: &str, elf: &Path, entries: &[Entry]) -> String {
    // Quoted for the assembler's string, then for C's.
    let asm = elf
        .display()
        .to_string()
        .replace('\\', "\\\\")
        .replace('"', "\\\"");
    let path = asm.replace('\\', "\\\\").replace('"', "\\\"");
    let mut s = String::new();
    let _ = write!(
        s,
        r#"/* Generated by mlx5-dpa dpacc for the DPA application {app}. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

struct flexio_app;
struct mlx5_dpa_app_attr {{
	const char *app_name;
	void *app_ptr;
	size_t app_bsize;
	char *app_sig_sec_name;
}};
int flexio_app_create(struct mlx5_dpa_app_attr *fattr, struct flexio_app **app);
int flexio_app_destroy(struct flexio_app *app);
int flexio_func_pup_register(struct flexio_app *app, const char *dev_func_name,
			     const char *dev_unpack_func_name, void (*host_stub_func_addr)(void),
			     size_t argbuf_size, void (*host_pack_func)(void *, va_list));

/* The device ELF, in the section DPACC packages it in. */
__asm__(".pushsection .dpa_bin_{app},\"a\",@progbits\n"
	".balign 8\n"
	".globl mlx5_dpa_elf_{app}\n.hidden mlx5_dpa_elf_{app}\n"
	".globl mlx5_dpa_elf_{app}_end\n.hidden mlx5_dpa_elf_{app}_end\n"
	"mlx5_dpa_elf_{app}:\n"
	".incbin \"{path}\"\n"
	"mlx5_dpa_elf_{app}_end:\n"
	".popsection\n");
extern const unsigned char mlx5_dpa_elf_{app}[], mlx5_dpa_elf_{app}_end[];

/* The application (the host program's `extern struct flexio_app *{app};`). */
struct flexio_app *{app};

/* Host stubs: their addresses name the device functions. Each body differs, so that no two
 * are merged into one address. */
static volatile int mlx5_dpa_stub_{app};
"#
    );
    for (n, e) in entries.iter().enumerate() {
        let _ = writeln!(
            s,
            "void {}(void);\nvoid {}(void) {{ mlx5_dpa_stub_{app} = {}; }}",
            e.name,
            e.name,
            n + 1
        );
        let _ = writeln!(
            s,
            "static void mlx5_dpa_pack_{}(void *argbuf, va_list ap)\n{{",
            e.name
        );
        if e.params.is_empty() {
            s.push_str("\t(void)argbuf;\n\t(void)ap;\n");
        } else {
            s.push_str("\tuint64_t *w = argbuf;\n\n");
            for (i, p) in e.params.iter().enumerate() {
                let _ = writeln!(s, "\tw[{i}] = {};", p.read());
            }
        }
        s.push_str("}\n");
    }
    let _ = write!(
        s,
        r#"
__attribute__((constructor)) static void mlx5_dpa_app_start_{app}(void)
{{
	struct mlx5_dpa_app_attr attr = {{
		"{app}", (void *)mlx5_dpa_elf_{app},
		(size_t)(mlx5_dpa_elf_{app}_end - mlx5_dpa_elf_{app}), NULL
	}};

	/* A failure is reported by libflexio; {app} stays NULL. */
	if (flexio_app_create(&attr, &{app}))
		return;
"#
    );
    for e in entries {
        let _ = writeln!(
            s,
            "\tflexio_func_pup_register({app}, \"{n}\", \"{GENERIC_UNPACK}\", {n}, {size}, \
             mlx5_dpa_pack_{n});",
            n = e.name,
            size = 8 * e.params.len().max(1)
        );
    }
    let _ = write!(
        s,
        r#"}}

__attribute__((destructor)) static void mlx5_dpa_app_end_{app}(void)
{{
	if ({app})
		flexio_app_destroy({app});
	{app} = NULL;
}}
"#
    );
    s
}

fn io(what: &Path) -> impl FnOnce(std::io::Error) -> DpaccError + '_ {
    move |e| DpaccError::Io(format!("{}: {e}", what.display()))
}

fn host_tool(mut cmd: Command, what: &str) -> Result<(), DpaccError> {
    let out = cmd
        .output()
        .map_err(|e| DpaccError::Io(format!("{what}: {e}")))?;
    if !out.status.success() {
        return Err(DpaccError::Host {
            what: what.to_owned(),
            status: out.status.to_string(),
            output: format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
        });
    }
    Ok(())
}

/// Runs DPACC's application build.
///
/// # Errors
/// A bad command line, a device build that fails (as `mlx5-dpa cc`), a marked function the
/// host cannot call, a host compiler or archiver that fails.
pub fn run(a: &DpaccArgs) -> Result<(), DpaccError> {
    let d = parse(&a.args)?;
    if d.version {
        println!(
            "mlx5-dpa dpacc (DPACC's application build over mlx5-dpa cc), version {}",
            env!("CARGO_PKG_VERSION")
        );
        return Ok(());
    }
    let out = d
        .out
        .clone()
        .ok_or_else(|| DpaccError::Usage("no output (-o APP.a)".into()))?;
    let app = d
        .app_name
        .clone()
        .ok_or_else(|| DpaccError::Usage("no application name (--app-name)".into()))?;
    if app.is_empty() || !app.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(DpaccError::Usage(format!(
            "application name {app:?}: letters, digits and '_' only"
        )));
    }
    if d.sources.is_empty() {
        return Err(DpaccError::Usage("no device sources".into()));
    }
    let work = tempdir()?;
    let elf = work.0.join(format!("{app}.elf"));
    let args = CcArgs {
        out: elf.clone(),
        sources: d.sources.clone(),
        include: d.includes.clone(),
        define: d.defines.clone(),
        opt: "2".into(),
        older_layout: false,
        cc: None,
        package_into: None,
        sign_key: None,
        certs: Vec::new(),
        app: None,
        cpu: Vec::new(),
        verbose: false,
        extra_cflags: d.devicecc_options.clone(),
        extra_ldflags: d.link_options.clone(),
    };
    cc::run(&args)?;
    let marks = [
        format!("__dpa_rpc__={RPC_MARK}"),
        format!("__dpa_global__={GLOBAL_MARK}"),
    ];
    let mut all: Vec<Entry> = Vec::new();
    for (_, text) in cc::preprocess(&args, &marks)? {
        for e in entries(&text)? {
            if !all.iter().any(|x| x.name == e.name) {
                all.push(e);
            }
        }
    }
    let glue = work.0.join(format!("{app}_host.c"));
    std::fs::write(&glue, host_source(&app, &elf, &all)).map_err(io(&glue))?;
    let obj = work.0.join(format!("{app}_host.o"));
    let mut hostcc = Command::new(d.hostcc.as_deref().unwrap_or("gcc"));
    hostcc
        .args(&d.hostcc_options)
        .arg("-c")
        .arg(&glue)
        .arg("-o")
        .arg(&obj);
    host_tool(hostcc, "compiling the host library")?;
    let _ = std::fs::remove_file(&out);
    let mut ar = Command::new(std::env::var_os("AR").unwrap_or_else(|| "ar".into()));
    ar.arg("rcs").arg(&out).arg(&obj);
    host_tool(ar, "archiving the host library (ar)")?;
    Ok(())
}

/// A directory removed when dropped.
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn tempdir() -> Result<TempDir, DpaccError> {
    let dir = std::env::temp_dir().join(format!("mlx5-dpa-dpacc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(io(&dir))?;
    Ok(TempDir(dir))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    #[test]
    fn the_command_line_of_doca_build_dpacc_sh_is_read() {
        let d = parse(&os(&[
            "/s/flexio_rpc_dev.c",
            "-o",
            "/b/flexio_rpc.a",
            "-hostcc=gcc",
            "--devicecc-options=-I.,-I/x/include,-DFOO=1,-Wall",
            "--devicelink-options=-ldpa,-lmine",
            "--device-libs=-L/x/lib",
            "-hostcc-options=-fPIC, -DFLEXIO_ALLOW_EXPERIMENTAL_API,",
            "--app-name=flexio_rpc",
        ]))
        .unwrap();
        assert_eq!(d.sources, [PathBuf::from("/s/flexio_rpc_dev.c")]);
        assert_eq!(d.out, Some(PathBuf::from("/b/flexio_rpc.a")));
        assert_eq!(d.app_name.as_deref(), Some("flexio_rpc"));
        assert_eq!(
            d.includes,
            [PathBuf::from("."), PathBuf::from("/x/include")]
        );
        assert_eq!(d.defines, ["FOO=1"]);
        assert_eq!(d.devicecc_options, ["-Wall"]);
        assert_eq!(
            d.link_options,
            ["-lmine", "-L/x/lib"],
            "-ldpa is the runtime's"
        );
        assert_eq!(
            d.hostcc_options,
            ["-fPIC", "-DFLEXIO_ALLOW_EXPERIMENTAL_API"]
        );
        // The DOCA guides' space-separated form, and DPACC's top-level -I / -l.
        let d = parse(&os(&[
            "k.c",
            "-o",
            "p.a",
            "--devicecc-options=-D__linux__ -Werror",
            "-ldpa",
            "-I/opt/mellanox/doca/include/",
            "--app-name",
            "hello",
        ]))
        .unwrap();
        assert_eq!(d.defines, ["__linux__"]);
        assert_eq!(d.devicecc_options, ["-Werror"]);
        assert!(d.link_options.is_empty());
        assert_eq!(d.includes, [PathBuf::from("/opt/mellanox/doca/include/")]);
        assert!(matches!(
            parse(&os(&["k.c", "--gen-libs"])),
            Err(DpaccError::Usage(m)) if m.contains("not supported yet")
        ));
        assert!(matches!(
            parse(&os(&["k.c", "--bogus=1"])),
            Err(DpaccError::Usage(m)) if m.contains("unknown option --bogus=1")
        ));
        assert!(parse(&os(&["--version"])).unwrap().version);
    }

    #[test]
    fn marked_functions_and_their_parameters_are_found() {
        let text = format!(
            "# 1 \"x.c\"\nuint64_t rpc_calculate(uint64_t arg1, uint64_t arg2);\n\
             {RPC_MARK} uint64_t rpc_calculate(uint64_t arg1, uint64_t arg2)\n{{ return 0; }}\n\
             void flexio_pp_dev(uint64_t);\n\
             {GLOBAL_MARK} void flexio_pp_dev(uint64_t thread_arg) {{ }}\n\
             {RPC_MARK} __attribute__((noinline)) int mixed(unsigned int a, const char *s, \
             short b, unsigned char c, enum color k, void *p) {{ return 0; }}\n\
             {RPC_MARK} uint64_t none(void) {{ return 1; }}\n\
             static const char *msg = \"{RPC_MARK} not(a, function)\";\n"
        );
        let e = entries(&text).unwrap();
        let names: Vec<&str> = e.iter().map(|x| x.name.as_str()).collect();
        assert_eq!(names, ["rpc_calculate", "flexio_pp_dev", "mixed", "none"]);
        assert_eq!(e[0].params, [Param::Word, Param::Word]);
        assert_eq!(e[1].params, [Param::Word]);
        assert_eq!(
            e[2].params,
            [
                Param::Int32 { signed: false },
                Param::Word,
                Param::Int16 { signed: true },
                Param::Int8 { signed: false },
                Param::Int32 { signed: true },
                Param::Word
            ]
        );
        assert!(e[3].params.is_empty());
        let bad = format!("{RPC_MARK} int f(double x) {{ return 0; }}");
        assert!(matches!(entries(&bad), Err(DpaccError::Entry(m)) if m.contains("double")));
        let many =
            format!("{RPC_MARK} int f(int a,int b,int c,int d,int e,int f,int g,int h,int i);");
        assert!(matches!(entries(&many), Err(DpaccError::Entry(m)) if m.contains("9 parameters")));
    }

    #[test]
    fn the_host_source_defines_the_app_the_stubs_and_their_registration() {
        let e = [
            Entry {
                name: "rpc_calculate".into(),
                params: vec![Param::Word, Param::Int32 { signed: false }],
            },
            Entry {
                name: "handler".into(),
                params: vec![],
            },
        ];
        let s = host_source("flexio_rpc", Path::new("/t/a \"b\".elf"), &e);
        assert!(s.contains("struct flexio_app *flexio_rpc;"));
        assert!(s.contains(".pushsection .dpa_bin_flexio_rpc"));
        assert!(s.contains(r#".incbin \"/t/a \\\"b\\\".elf\""#), "{s}");
        assert!(s.contains("void rpc_calculate(void) { mlx5_dpa_stub_flexio_rpc = 1; }"));
        assert!(s.contains("void handler(void) { mlx5_dpa_stub_flexio_rpc = 2; }"));
        assert!(s.contains("w[1] = (uint64_t)(int64_t)(int32_t)va_arg(ap, unsigned int);"));
        assert!(s.contains(
            "flexio_func_pup_register(flexio_rpc, \"rpc_calculate\", \"mlx5_dpa_rpc_unpack_u64\", rpc_calculate, 16, mlx5_dpa_pack_rpc_calculate);"
        ));
        assert!(s.contains("\"handler\", \"mlx5_dpa_rpc_unpack_u64\", handler, 8,"));
    }
}
