//! DevX captures (`mlx5_dpa_capture`'s JSON-lines format): `mlx5-dpa --capture FILE ...`
//! records what this tool sends, `capture show` decodes a capture with the project's layouts,
//! `capture diff` compares two (NVIDIA's FlexIO sample under the preload library, and the
//! project's own run of the same sample).
//!
//! `capture diff A B` aligns the commands of the two captures (longest common subsequence of
//! (call, opcode, op_mod, object type), found by Myers' algorithm in linear space with a time
//! bound, `similar`), then compares each aligned pair field by field with
//! the inbox's layout; `uid` (which the kernel overwrites) and the fields given with
//! `--ignore` are left out. Exit status 0 when nothing differs, 1 otherwise.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use mlx5_dpa::mlx5::decode::{self, Value};
use mlx5_dpa::mlx5::layouts;
use mlx5_dpa::mlx5::{LayoutDesc, Opcode, Status};
use mlx5_dpa_capture::Record;

use crate::input::{self, InputError};

/// Most bytes of a capture file.
const MAX_CAPTURE: u64 = 256 << 20;
/// Most time `capture diff` spends looking for the longest alignment.
const ALIGN_DEADLINE: std::time::Duration = std::time::Duration::from_secs(20);

/// One step of an alignment of two captures' commands (indexes into each).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    Both(usize, usize),
    OnlyA(usize),
    OnlyB(usize),
}

/// The steps of a diff's operations, in order; where both sides differ, A's commands first.
fn alignment(ops: &[similar::DiffOp]) -> Vec<Step> {
    use similar::DiffOp;
    let mut steps = Vec::new();
    for op in ops {
        match *op {
            DiffOp::Equal {
                old_index,
                new_index,
                len,
            } => steps.extend((0..len).map(|k| Step::Both(old_index + k, new_index + k))),
            DiffOp::Delete {
                old_index, old_len, ..
            } => steps.extend((old_index..old_index + old_len).map(Step::OnlyA)),
            DiffOp::Insert {
                new_index, new_len, ..
            } => steps.extend((new_index..new_index + new_len).map(Step::OnlyB)),
            DiffOp::Replace {
                old_index,
                old_len,
                new_index,
                new_len,
            } => {
                steps.extend((old_index..old_index + old_len).map(Step::OnlyA));
                steps.extend((new_index..new_index + new_len).map(Step::OnlyB));
            }
        }
    }
    steps
}

/// `capture` subcommands.
#[derive(clap::Subcommand, Debug)]
pub enum CaptureCmd {
    /// Decode a capture: one line per call (opcode, op_mod, status, syndrome, time).
    Show {
        file: PathBuf,
        /// Also each inbox's fields (non-zero ones), decoded with the project's layouts.
        #[arg(long)]
        fields: bool,
        /// One JSON object instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Compare two captures command by command, field by field.
    Diff {
        a: PathBuf,
        b: PathBuf,
        /// A field to leave out of the comparison (its name, or the end of its dotted name);
        /// repeat as needed. `uid` is always left out.
        #[arg(long, value_name = "FIELD")]
        ignore: Vec<String>,
        /// One JSON object instead of text.
        #[arg(long)]
        json: bool,
    },
}

/// Why a `capture` command failed.
#[derive(Debug, thiserror::Error)]
pub enum CaptureCmdError {
    #[error(transparent)]
    Read(#[from] InputError),
    #[error("{path}: {source}")]
    Parse {
        path: String,
        source: mlx5_dpa_capture::ParseError,
    },
    #[error("{path}: not UTF-8 text")]
    NotText { path: String },
}

fn load(path: &Path) -> Result<Vec<Record>, CaptureCmdError> {
    let bytes = input::read_bounded(path, MAX_CAPTURE)?;
    let shown = path.display().to_string();
    let text = String::from_utf8(bytes).map_err(|_| CaptureCmdError::NotText {
        path: shown.clone(),
    })?;
    mlx5_dpa_capture::parse(&text).map_err(|source| CaptureCmdError::Parse {
        path: shown,
        source,
    })
}

/// General object types and their context layouts (PRM and this project's DPA layouts).
const OBJ_TYPES: &[(u16, &str, &str)] = &[
    (0x28, "DPA_MEM", "dpa_mem"),
    (0x2a, "DPA_PROCESS", "dpa_process"),
    (0x2b, "DPA_THREAD", "dpa_thread"),
    (0x2d, "DPA_OUTBOX", "dpa_outbox"),
    (0x32, "DB_CQ_MAPPING", "dpa_db_cq_mapping"),
    (0x33, "DPA_EQ", "dpa_eq"),
    (0x39, "DPA_WINDOW", "dpa_window"),
    (0x4a, "DPA_UAR", "dpa_uar"),
];

/// What a mailbox says: opcode, op_mod, object type (general objects) and, from the outbox,
/// status and syndrome.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    call: String,
    opcode: u16,
    op_mod: u16,
    obj_type: Option<u16>,
}

fn be16(b: &[u8], o: usize) -> u16 {
    b.get(o..o + 2)
        .map_or(0, |s| u16::from_be_bytes([s[0], s[1]]))
}

fn be32(b: &[u8], o: usize) -> u32 {
    b.get(o..o + 4)
        .map_or(0, |s| u32::from_be_bytes([s[0], s[1], s[2], s[3]]))
}

fn is_general(op: u16) -> bool {
    matches!(
        Opcode(op),
        Opcode::CREATE_GENERAL_OBJECT
            | Opcode::MODIFY_GENERAL_OBJECT
            | Opcode::QUERY_GENERAL_OBJECT
            | Opcode::DESTROY_GENERAL_OBJECT
    )
}

fn key(r: &Record) -> Option<Key> {
    if r.inbox.len() < 8 {
        return None;
    }
    let opcode = be16(&r.inbox, 0);
    Some(Key {
        call: r.call.clone(),
        opcode,
        op_mod: if is_general(opcode) {
            0
        } else {
            be16(&r.inbox, 6)
        },
        obj_type: is_general(opcode).then(|| be16(&r.inbox, 6)),
    })
}

fn opcode_text(k: &Key) -> String {
    let op = Opcode(k.opcode);
    let name = op
        .name()
        .map_or(format!("opcode {:#x}", k.opcode), str::to_string);
    match k.obj_type {
        Some(t) => {
            let obj = OBJ_TYPES
                .iter()
                .find(|(id, ..)| *id == t)
                .map_or(format!("type {t:#x}"), |(_, n, _)| (*n).to_string());
            format!("{name} {obj}")
        }
        None if k.op_mod != 0 => format!("{name} op_mod {:#x}", k.op_mod),
        None => name,
    }
}

/// The inbox's decoded fields by name: the opcode's `<name>_in` layout, or for a general
/// object the header and the object type's context.
fn inbox_fields(r: &Record) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let Some(k) = key(r) else {
        return out;
    };
    let mut add = |prefix: &str, d: &'static LayoutDesc, bytes: &[u8]| {
        if bytes.len() < d.size_bytes() {
            return;
        }
        if let Ok(fields) = decode::decode(d, &bytes[..d.size_bytes()]) {
            for f in fields {
                let v = match f.value {
                    Value::Uint(v) => format!("{v:#x}"),
                    Value::Bytes(b) => mlx5_dpa::devx::capture::hex(&b),
                };
                out.insert(format!("{prefix}{}", f.name), v);
            }
        }
    };
    if let Some(t) = k.obj_type {
        if let Some(h) = layouts::by_name("general_obj_in_cmd_hdr") {
            add("hdr.", h, &r.inbox);
            let ctx = OBJ_TYPES
                .iter()
                .find(|(id, ..)| *id == t)
                .and_then(|(_, _, l)| layouts::by_name(l));
            if let (Some(c), Some(rest)) = (ctx, r.inbox.get(h.size_bytes()..)) {
                add("", c, rest);
            }
        }
    } else if let Some(d) = Opcode(k.opcode)
        .name()
        .and_then(|n| layouts::by_name(&format!("{}_in", n.to_ascii_lowercase())))
    {
        add("", d, &r.inbox);
    }
    out
}

fn status_text(r: &Record) -> String {
    if r.outbox.len() < 8 {
        return match r.ret {
            0 => "ok".into(),
            _ => format!("failed (ret {}, errno {})", r.ret, r.errno),
        };
    }
    let status = Status(r.outbox[0]);
    let syndrome = be32(&r.outbox, 4);
    if r.ret != 0 && status.0 == 0 {
        return format!("failed before firmware (ret {}, errno {})", r.ret, r.errno);
    }
    if syndrome == 0 {
        format!("{status}")
    } else {
        format!("{status}, syndrome {syndrome:#010x}")
    }
}

/// Runs a `capture` subcommand.
pub fn run(cmd: &CaptureCmd) -> Result<ExitCode, CaptureCmdError> {
    match cmd {
        CaptureCmd::Show { file, fields, json } => show(file, *fields, *json),
        CaptureCmd::Diff { a, b, ignore, json } => diff(a, b, ignore, *json),
    }
}

/// One call of `capture show --json`.
#[derive(serde::Serialize)]
struct ShowRow<'a> {
    seq: u64,
    call: &'a str,
    what: String,
    status: String,
    t_ns: u64,
    dur_ns: u64,
    obj: Option<u64>,
    fields: BTreeMap<String, String>,
}

/// `capture show`: each call with its command and status (and its inbox fields).
fn show(file: &Path, fields: bool, json: bool) -> Result<ExitCode, CaptureCmdError> {
    let mut out = std::io::stdout().lock();
    let recs = load(file)?;
    let mut rows = Vec::new();
    for r in &recs {
        let what = key(r).map_or_else(
            || match r.call.as_str() {
                "umem_reg" => format!(
                    "{} bytes, access {:#x}",
                    r.size.unwrap_or(0),
                    r.access.unwrap_or(0)
                ),
                _ => String::new(),
            },
            |k| opcode_text(&k),
        );
        let decoded = if fields || json {
            inbox_fields(r)
        } else {
            BTreeMap::new()
        };
        if json {
            rows.push(ShowRow {
                seq: r.seq,
                call: &r.call,
                what,
                status: status_text(r),
                t_ns: r.t_ns,
                dur_ns: r.dur_ns,
                obj: r.obj,
                fields: decoded,
            });
            continue;
        }
        let obj = r.obj.map(|o| format!(" [object #{o}]")).unwrap_or_default();
        let _ = writeln!(
            out,
            "#{:<4} {:>10.1} us {:>8.1} us  {:<11} {what}: {}{obj}",
            r.seq,
            r.t_ns as f64 / 1e3,
            r.dur_ns as f64 / 1e3,
            r.call,
            status_text(r)
        );
        for (n, v) in decoded.iter().filter(|(_, v)| {
            !v.trim_start_matches("0x")
                .trim_start_matches('0')
                .is_empty()
        }) {
            let _ = writeln!(out, "        {n:<44} {v}");
        }
    }
    if json {
        #[derive(serde::Serialize)]
        struct Show<'a> {
            file: String,
            calls: Vec<ShowRow<'a>>,
        }
        let show = Show {
            file: file.display().to_string(),
            calls: rows,
        };
        let _ = writeln!(out, "{}", serde_json::to_string(&show).unwrap_or_default());
    } else {
        let _ = writeln!(out, "{} calls", recs.len());
    }
    Ok(ExitCode::SUCCESS)
}

/// One field that differs between two aligned commands.
#[derive(serde::Serialize)]
struct FieldDiff {
    field: String,
    a: String,
    b: String,
}

/// One difference of `capture diff`: an aligned pair whose fields differ, or a command of one
/// capture only.
#[derive(serde::Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Item {
    Fields {
        a: u64,
        b: u64,
        command: String,
        differences: Vec<FieldDiff>,
    },
    OnlyA {
        a: u64,
        command: String,
    },
    OnlyB {
        b: u64,
        command: String,
    },
}

/// `capture diff --json`'s object.
#[derive(serde::Serialize)]
struct DiffReport {
    a: String,
    b: String,
    commands_a: usize,
    commands_b: usize,
    matched: usize,
    identical: usize,
    only_a: usize,
    only_b: usize,
    approximate: bool,
    items: Vec<Item>,
}

/// `capture diff`: aligns the two captures' commands and lists what differs. Exit status 0
/// when nothing does.
fn diff(a: &Path, b: &Path, ignore: &[String], json: bool) -> Result<ExitCode, CaptureCmdError> {
    let (ra, rb) = (load(a)?, load(b)?);
    let ca: Vec<(&Record, Key)> = ra.iter().filter_map(|r| key(r).map(|k| (r, k))).collect();
    let cb: Vec<(&Record, Key)> = rb.iter().filter_map(|r| key(r).map(|k| (r, k))).collect();
    // Longest common subsequence of the keys: Myers' algorithm in linear space, time bounded
    // by ALIGN_DEADLINE (past it the alignment is still complete and valid, just not always
    // the longest; the report says so).
    let (ka, kb): (Vec<&Key>, Vec<&Key>) = (
        ca.iter().map(|(_, k)| k).collect(),
        cb.iter().map(|(_, k)| k).collect(),
    );
    let deadline = std::time::Instant::now() + ALIGN_DEADLINE;
    let ops =
        similar::capture_diff_slices_deadline(similar::Algorithm::Myers, &ka, &kb, Some(deadline));
    let approximate = std::time::Instant::now() >= deadline;
    let ignored = |name: &str| {
        name == "uid"
            || name.ends_with(".uid")
            || ignore
                .iter()
                .any(|g| name == g || name.ends_with(&format!(".{g}")))
    };
    let mut r = DiffReport {
        a: a.display().to_string(),
        b: b.display().to_string(),
        commands_a: ca.len(),
        commands_b: cb.len(),
        matched: 0,
        identical: 0,
        only_a: 0,
        only_b: 0,
        approximate,
        items: Vec::new(),
    };
    for step in alignment(&ops) {
        match step {
            Step::Both(i, j) => {
                r.matched += 1;
                let (fa, fb) = (inbox_fields(ca[i].0), inbox_fields(cb[j].0));
                let mut names: Vec<&String> = fa.keys().chain(fb.keys()).collect();
                names.sort();
                names.dedup();
                let differences: Vec<FieldDiff> = names
                    .into_iter()
                    .filter(|nm| !ignored(nm))
                    .filter_map(|nm| {
                        let (x, y) = (fa.get(nm), fb.get(nm));
                        (x != y).then(|| FieldDiff {
                            field: nm.clone(),
                            a: x.cloned().unwrap_or_else(|| "-".into()),
                            b: y.cloned().unwrap_or_else(|| "-".into()),
                        })
                    })
                    .collect();
                if differences.is_empty() {
                    r.identical += 1;
                } else {
                    r.items.push(Item::Fields {
                        a: ca[i].0.seq,
                        b: cb[j].0.seq,
                        command: opcode_text(&ca[i].1),
                        differences,
                    });
                }
            }
            Step::OnlyA(i) => {
                r.only_a += 1;
                r.items.push(Item::OnlyA {
                    a: ca[i].0.seq,
                    command: opcode_text(&ca[i].1),
                });
            }
            Step::OnlyB(j) => {
                r.only_b += 1;
                r.items.push(Item::OnlyB {
                    b: cb[j].0.seq,
                    command: opcode_text(&cb[j].1),
                });
            }
        }
    }
    let mut out = std::io::stdout().lock();
    if json {
        let _ = writeln!(out, "{}", serde_json::to_string(&r).unwrap_or_default());
    } else {
        print_diff(&mut out, &r);
    }
    Ok(if r.items.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// `capture diff`'s text: `<` only in A, `>` only in B, `~` an aligned pair and its fields.
fn print_diff(out: &mut dyn Write, r: &DiffReport) {
    for it in &r.items {
        let _ = match it {
            Item::OnlyA { a, command } => writeln!(out, "< A#{a} {command}"),
            Item::OnlyB { b, command } => writeln!(out, "> B#{b} {command}"),
            Item::Fields {
                a,
                b,
                command,
                differences,
            } => {
                let _ = writeln!(out, "~ A#{a} B#{b} {command}");
                for d in differences {
                    let _ = writeln!(out, "    {:<44} {} | {}", d.field, d.a, d.b);
                }
                Ok(())
            }
        };
    }
    let _ = writeln!(
        out,
        "A {} commands, B {}: {} aligned ({} identical), {} only in A, {} only in B",
        r.commands_a, r.commands_b, r.matched, r.identical, r.only_a, r.only_b
    );
    if r.approximate {
        let _ = writeln!(
            out,
            "(the search for the longest alignment stopped after {ALIGN_DEADLINE:?}: this one is complete but may not be the longest)"
        );
    }
}

pub use mlx5_dpa::devx::capture::CaptureDevx;
