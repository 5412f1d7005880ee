//! Generic walks over layouts as data: the flat field table and decoding of captured bytes.
//!
//! These work on any [`LayoutDesc`], so `mlx5-dpa prm layouts` and `prm decode` cover every
//! declared layout without per-layout code. Decoding never panics on any input: every byte
//! string either decodes or yields a [`DecodeError`].

use super::layout::{read_bits, FieldKind, LayoutDesc};

/// One row of the flat field table of a layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlatField {
    /// `name`, or `outer.inner` for a field of a nested layout, or `outer[i].inner` for a field
    /// of element `i` of a nested array.
    pub name: String,
    /// Bit offset from the start of the outermost layout.
    pub offset: u32,
    /// Width in bits (0 for a flexible array).
    pub width: u32,
}

/// Every named field of `desc`, nested layouts listed both as themselves and flattened.
pub fn flatten(desc: &LayoutDesc) -> Vec<FlatField> {
    let mut out = Vec::new();
    flatten_into(desc, 0, "", &mut out);
    out
}

fn flatten_into(desc: &LayoutDesc, base: u32, prefix: &str, out: &mut Vec<FlatField>) {
    for f in super::layout::effective_fields(desc).iter() {
        let name = format!("{prefix}{}", f.name);
        let offset = base + f.offset;
        out.push(FlatField {
            name: name.clone(),
            offset,
            width: f.width,
        });
        match f.kind {
            FieldKind::Nested(inner) => flatten_into(inner, offset, &format!("{name}."), out),
            FieldKind::NestedArray { count, elem } => {
                for i in 0..count {
                    let p = format!("{name}[{i}].");
                    flatten_into(elem, offset + i * elem.size_bits, &p, out);
                }
            }
            FieldKind::Scalar | FieldKind::Array { .. } => {}
        }
    }
}

/// The value of one decoded field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// A field of at most 64 bits.
    Uint(u64),
    /// A wider (byte-aligned) field, as its bytes.
    Bytes(Vec<u8>),
}

/// One decoded field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodedField {
    pub name: String,
    pub offset: u32,
    pub width: u32,
    pub value: Value,
}

/// Why bytes could not be decoded as a layout.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    #[error("{layout}: {got} bytes is shorter than the layout's {need} bytes (truncated input)")]
    Truncated {
        layout: &'static str,
        need: usize,
        got: usize,
    },
    #[error("{layout}: {got} bytes is longer than the layout's {size} bytes and it has no trailing array (oversized input)")]
    Oversized {
        layout: &'static str,
        size: usize,
        got: usize,
    },
    #[error("{layout}: the {extra} bytes after the fixed part are not a whole number of {elem}-byte `{field}` elements")]
    PartialElement {
        layout: &'static str,
        field: &'static str,
        extra: usize,
        elem: usize,
    },
}

/// Decodes `bytes` as `desc`: every field with its value, nested layouts flattened, arrays
/// element by element, and the elements of a flexible trailing array that the input holds.
///
/// # Errors
/// Input shorter than the layout, longer than it without a flexible array, or ending inside a
/// flexible-array element.
pub fn decode(desc: &'static LayoutDesc, bytes: &[u8]) -> Result<Vec<DecodedField>, DecodeError> {
    let size = desc.size_bytes();
    if bytes.len() < size {
        return Err(DecodeError::Truncated {
            layout: desc.name,
            need: size,
            got: bytes.len(),
        });
    }
    let extra = bytes.len() - size;
    if extra > 0 {
        match desc.flex() {
            None => {
                return Err(DecodeError::Oversized {
                    layout: desc.name,
                    size,
                    got: bytes.len(),
                });
            }
            Some(f) => {
                let elem = match f.kind {
                    FieldKind::Array { elem_width, .. } => (elem_width / 8) as usize,
                    _ => 1,
                };
                if elem == 0 || !extra.is_multiple_of(elem) {
                    return Err(DecodeError::PartialElement {
                        layout: desc.name,
                        field: f.name,
                        extra,
                        elem,
                    });
                }
            }
        }
    }
    let mut out = Vec::new();
    decode_into(desc, bytes, 0, "", &mut out);
    Ok(out)
}

fn value_at(bytes: &[u8], offset: u32, width: u32) -> Value {
    if width <= 64 {
        Value::Uint(read_bits(bytes, offset, width))
    } else {
        // Wider fields are byte aligned (checked when the layout compiles).
        let s = (offset / 8) as usize;
        let e = s + (width / 8) as usize;
        Value::Bytes(bytes.get(s..e).unwrap_or_default().to_vec())
    }
}

fn decode_into(
    desc: &LayoutDesc,
    bytes: &[u8],
    base: u32,
    prefix: &str,
    out: &mut Vec<DecodedField>,
) {
    for f in super::layout::effective_fields(desc).iter() {
        let name = format!("{prefix}{}", f.name);
        let offset = base + f.offset;
        match f.kind {
            FieldKind::Scalar => out.push(DecodedField {
                name,
                offset,
                width: f.width,
                value: value_at(bytes, offset, f.width),
            }),
            FieldKind::Array {
                count: 0,
                elem_width,
            } => {
                let first = offset as usize / 8;
                let n = bytes.len().saturating_sub(first) / (elem_width as usize / 8).max(1);
                for i in 0..n as u32 {
                    let o = offset + i * elem_width;
                    out.push(DecodedField {
                        name: format!("{name}[{i}]"),
                        offset: o,
                        width: elem_width,
                        value: value_at(bytes, o, elem_width),
                    });
                }
            }
            FieldKind::Array { count, elem_width } => {
                for i in 0..count {
                    let o = offset + i * elem_width;
                    out.push(DecodedField {
                        name: format!("{name}[{i}]"),
                        offset: o,
                        width: elem_width,
                        value: value_at(bytes, o, elem_width),
                    });
                }
            }
            FieldKind::Nested(inner) => decode_into(inner, bytes, offset, &format!("{name}."), out),
            FieldKind::NestedArray { count, elem } => {
                for i in 0..count {
                    let p = format!("{name}[{i}].");
                    decode_into(elem, bytes, offset + i * elem.size_bits, &p, out);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mlx5::layouts;

    #[test]
    fn flatten_lists_nested_fields_both_ways() {
        let rows = flatten(layouts::by_name("create_cq_in").unwrap());
        let get = |n: &str| {
            rows.iter()
                .find(|r| r.name == n)
                .map(|r| (r.offset, r.width))
        };
        assert_eq!(get("cq_context"), Some((0x80, 0x200)));
        assert_eq!(get("cq_context.log_cq_size"), Some((0x80 + 0x63, 5)));
        assert_eq!(get("cq_umem_valid"), Some((0x2e0, 1)));
    }

    #[test]
    fn decode_rejects_truncated_and_oversized_input() {
        let d = layouts::by_name("alloc_pd_out").unwrap();
        assert!(matches!(
            decode(d, &[0; 15]),
            Err(DecodeError::Truncated { .. })
        ));
        assert!(matches!(
            decode(d, &[0; 17]),
            Err(DecodeError::Oversized { .. })
        ));
        let d = layouts::by_name("create_cq_in").unwrap();
        assert!(matches!(
            decode(d, &[0; 0x110 + 3]),
            Err(DecodeError::PartialElement { .. })
        ));
        let rows = decode(d, &[0; 0x110 + 16]).unwrap();
        assert!(rows.iter().any(|r| r.name == "pas[1]"));
        assert!(!rows.iter().any(|r| r.name == "pas[2]"));
    }
}
