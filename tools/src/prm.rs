//! `mlx5-dpa prm`: the PRM layouts, and mailboxes decoded with them.

use super::*;

/// `prm layouts --json`: one layout, its fields as `name: [offset, width]` in bits.
#[derive(serde::Serialize)]
pub(crate) struct LayoutJson {
    size_bits: u32,
    provisional: bool,
    fields: json::Object<String, (u32, u32)>,
}

pub(crate) fn layout_json(d: &mlx5_dpa::mlx5::LayoutDesc) -> LayoutJson {
    LayoutJson {
        size_bits: d.size_bits,
        provisional: d.provisional,
        fields: json::Object(
            decode::flatten(d)
                .into_iter()
                .map(|f| (f.name, (f.offset, f.width)))
                .collect(),
        ),
    }
}

/// A decoded field's value: a number, or hex for a byte array.
pub(crate) enum FieldJson {
    Uint(u64),
    Hex(String),
}

impl serde::Serialize for FieldJson {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            FieldJson::Uint(v) => s.serialize_u64(*v),
            FieldJson::Hex(h) => s.serialize_str(h),
        }
    }
}

pub(crate) fn prm_layouts(as_json: bool, name: Option<&str>) -> Result<(), ToolError> {
    let chosen: Vec<_> = match name {
        Some(n) => {
            vec![layouts::by_name(n).ok_or_else(|| ToolError::UnknownLayout(n.to_string()))?]
        }
        None => layouts::ALL.to_vec(),
    };
    if as_json {
        let all = json::Object(chosen.iter().map(|d| (d.name, layout_json(d))).collect());
        println!("{}", json::line(&all));
        return Ok(());
    }
    for d in chosen {
        let mark = if d.provisional { "  [provisional]" } else { "" };
        println!(
            "{} ({} bits, {} bytes){mark}",
            d.name,
            d.size_bits,
            d.size_bits / 8
        );
        if name.is_some() {
            for f in decode::flatten(d) {
                println!("  {:#07x} {:>5}  {}", f.offset, f.width, f.name);
            }
        }
    }
    Ok(())
}

/// Hex from an argument or `@file`: whitespace, `0x` prefixes, `:` and `,` separators ignored.
pub(crate) fn read_hex(arg: &str) -> Result<Vec<u8>, ToolError> {
    let text = match arg.strip_prefix('@') {
        Some(path) => {
            let bytes = input::read_bounded(std::path::Path::new(path), input::MAX_HEX_FILE)?;
            String::from_utf8(bytes)
                .map_err(|_| ToolError::Input(format!("{path} is not text (hex expected)")))?
        }
        None => arg.to_string(),
    };
    let mut digits = String::new();
    for tok in text.split(|c: char| c.is_whitespace() || c == ',' || c == ':') {
        let t = tok
            .strip_prefix("0x")
            .or_else(|| tok.strip_prefix("0X"))
            .unwrap_or(tok);
        digits.push_str(t);
    }
    if !digits.len().is_multiple_of(2) {
        return Err(ToolError::Input(format!(
            "odd number of hex digits ({})",
            digits.len()
        )));
    }
    (0..digits.len())
        .step_by(2)
        .map(|i| {
            u8::from_str_radix(&digits[i..i + 2], 16).map_err(|_| {
                ToolError::Input(format!("not hex: {:?} at digit {i}", &digits[i..i + 2]))
            })
        })
        .collect()
}

pub(crate) fn print_fields(
    d: &'static mlx5_dpa::mlx5::LayoutDesc,
    bytes: &[u8],
) -> Result<(), ToolError> {
    for f in decode::decode(d, bytes)? {
        match f.value {
            Value::Uint(v) => println!("  {:<48} {:#x}", f.name, v),
            Value::Bytes(b) => println!("  {:<48} {}", f.name, hex(&b)),
        }
    }
    Ok(())
}

/// The fields of `bytes` as a layout: numbers as JSON integers, byte fields as hex strings.
pub(crate) fn fields_json(
    d: &'static mlx5_dpa::mlx5::LayoutDesc,
    bytes: &[u8],
) -> Result<json::Object<String, FieldJson>, ToolError> {
    Ok(json::Object(
        decode::decode(d, bytes)?
            .into_iter()
            .map(|f| {
                let v = match f.value {
                    Value::Uint(v) => FieldJson::Uint(v),
                    Value::Bytes(b) => FieldJson::Hex(hex(&b)),
                };
                (f.name, v)
            })
            .collect(),
    ))
}

pub(crate) fn prm_decode(layout: &str, bytes: &str, as_json: bool) -> Result<(), ToolError> {
    let d = layouts::by_name(layout).ok_or_else(|| ToolError::UnknownLayout(layout.to_string()))?;
    let b = read_hex(bytes)?;
    if as_json {
        let fields = fields_json(d, &b)?;
        #[derive(serde::Serialize)]
        struct DecodeJson {
            layout: &'static str,
            bytes: usize,
            fields: json::Object<String, FieldJson>,
        }
        let doc = DecodeJson {
            layout: d.name,
            bytes: b.len(),
            fields,
        };
        println!("{}", json::line(&doc));
        return Ok(());
    }
    println!("{} ({} bytes):", d.name, b.len());
    print_fields(d, &b)
}

/// The output layout of an opcode: `<opcode name>_out` when declared, else the general object
/// or plain headers.
pub(crate) fn out_layout(op: Opcode) -> &'static mlx5_dpa::mlx5::LayoutDesc {
    let by_opcode = op
        .name()
        .and_then(|n| layouts::by_name(&format!("{}_out", n.to_ascii_lowercase())));
    let general = matches!(
        op,
        Opcode::CREATE_GENERAL_OBJECT
            | Opcode::MODIFY_GENERAL_OBJECT
            | Opcode::QUERY_GENERAL_OBJECT
            | Opcode::DESTROY_GENERAL_OBJECT
    )
    .then(|| layouts::by_name("general_obj_out_cmd_hdr"))
    .flatten();
    by_opcode
        .or(general)
        .or_else(|| layouts::by_name("mbox_out"))
        .unwrap_or(layouts::ALL[1])
}
