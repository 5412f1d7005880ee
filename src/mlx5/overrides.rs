//! Run-time corrections of provisional layouts: a user on hardware who finds that a field of
//! a DPA object context, the coredump or an EU register sits elsewhere moves it from a file,
//! without rebuilding. Only layouts declared `#[provisional]` can be changed (the public PRM
//! ones are checked against mlx5_ifc.h), only their scalar fields of at most 64 bits, and a
//! set of changes is refused unless the layouts it changes still pass the checks every
//! layout passes at compile time ([`check_layout`](super::layout::check_layout)'s rules:
//! inside the layout, no overlap).
//!
//! The file: one change per line, `LAYOUT.FIELD OFFSET WIDTH` (bits, decimal or 0x hex), `#`
//! comments:
//!
//! ```text
//! # the heap size after the signature fields rather than where our reading puts it
//! dpa_process.heap_size 0x2c0 0x40
//! ```
//!
//! Once [`install`]ed, every [`View`](super::View) and [`ViewMut`](super::ViewMut) of those
//! layouts, the decoder and `mlx5-dpa prm layouts` use the new positions; the driver and the
//! device model (which decodes with the same layouts) both follow. Views of layouts that are
//! not provisional never look at the table: the check is a constant of the layout.
//!
//! ```
//! use mlx5_dpa::mlx5::overrides;
//! let set = overrides::parse("dpa_process.heap_size 0x2c0 0x40").unwrap();
//! assert_eq!(set.len(), 1);
//! assert!(overrides::parse("cqc.log_cq_size 0x0 0x5").is_err()); // not provisional
//! ```

use super::layout::{install_moved, moved_fields as apply, FieldDesc, FieldKind, LayoutDesc};
pub use super::layout::{installed, Override};

/// A set of changes [`parse`] checked: the only kind [`install`] takes.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OverrideSet(Vec<Override>);

impl OverrideSet {
    /// Changes in the set.
    pub fn len(&self) -> usize {
        self.0.len()
    }
    /// No change.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    /// The changes.
    pub fn iter(&self) -> impl Iterator<Item = &Override> {
        self.0.iter()
    }
}

/// Installs a checked set (replacing any installed before).
pub fn install(set: OverrideSet) {
    install_moved(set.0);
}
use super::layouts;

/// Why a set of changes was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OverrideError {
    #[error("line {line}: {reason}")]
    Line { line: usize, reason: String },
    #[error("{layout}: {reason} (with the changes applied)")]
    Check {
        layout: &'static str,
        reason: String,
    },
}

fn num(s: &str) -> Option<u32> {
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u32::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

/// Reads and checks a set of changes (see the module doc); installs nothing.
///
/// # Errors
/// The first line that names no provisional layout's scalar field or holds no position, or
/// a layout the changes leave failing its checks.
pub fn parse(text: &str) -> Result<OverrideSet, OverrideError> {
    let mut set: Vec<Override> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let bad = |reason: String| OverrideError::Line {
            line: i + 1,
            reason,
        };
        let parts: Vec<&str> = line.split_whitespace().collect();
        let [name, offset, width] = parts[..] else {
            return Err(bad(format!("{line:?}: expected LAYOUT.FIELD OFFSET WIDTH")));
        };
        let (l, f) = name
            .split_once('.')
            .ok_or_else(|| bad(format!("{name:?}: expected LAYOUT.FIELD")))?;
        let desc = layouts::by_name(l).ok_or_else(|| bad(format!("no layout {l:?}")))?;
        if !desc.provisional {
            return Err(bad(format!(
                "{l} is not provisional (its fields are the PRM's): only provisional layouts \
                 can be changed"
            )));
        }
        let field = desc
            .field(f)
            .ok_or_else(|| bad(format!("{l} has no field {f:?}")))?;
        if !matches!(field.kind, FieldKind::Scalar) || field.width > 64 {
            return Err(bad(format!(
                "{l}.{f} is not a scalar of at most 64 bits: only those can be moved"
            )));
        }
        let (Some(offset), Some(width)) = (num(offset), num(width)) else {
            return Err(bad(format!("{offset:?} {width:?}: not numbers")));
        };
        if !(1..=64).contains(&width) {
            return Err(bad(format!("width {width}: 1 to 64 bits")));
        }
        // Checked: an offset near u32::MAX must not wrap around to a small end.
        if offset
            .checked_add(width)
            .is_none_or(|end| end > desc.size_bits)
        {
            return Err(bad(format!(
                "{l}.{f} at bit {offset:#x}, {width} bits wide, ends past the layout's {:#x} bits",
                desc.size_bits
            )));
        }
        if set
            .iter()
            .any(|o| o.layout == desc.name && o.field == field.name)
        {
            return Err(bad(format!("{l}.{f} is changed twice")));
        }
        set.push(Override {
            layout: desc.name,
            field: field.name,
            from: (field.offset, field.width),
            to: (offset, width),
        });
    }
    for desc in layouts::ALL {
        if set.iter().any(|o| o.layout == desc.name) {
            check(desc, &apply(desc, &set)).map_err(|reason| OverrideError::Check {
                layout: desc.name,
                reason,
            })?;
        }
    }
    Ok(OverrideSet(set))
}

/// The compile-time rules that a move can break: every field inside the layout, none
/// overlapping another.
fn check(desc: &LayoutDesc, fields: &[FieldDesc]) -> Result<(), String> {
    let mut end = 0u32;
    let mut prev = "";
    for f in fields {
        if matches!(f.kind, FieldKind::Array { count: 0, .. }) {
            continue;
        }
        if f.offset < end {
            return Err(format!("{} at {:#x} overlaps {prev}", f.name, f.offset));
        }
        end = f.offset.saturating_add(f.width);
        if end > desc.size_bits {
            return Err(format!(
                "{} ends at bit {end:#x}, past the layout's {:#x} bits",
                f.name, desc.size_bits
            ));
        }
        prev = f.name;
    }
    Ok(())
}

/// Reads, checks and installs the changes in `text`; returns how many.
///
/// # Errors
/// As [`parse`]; nothing is installed then.
pub fn load(text: &str) -> Result<usize, OverrideError> {
    let set = parse(text)?;
    let n = set.len();
    install(set);
    Ok(n)
}

/// Removes every change.
pub fn clear() {
    install_moved(Vec::new());
}
