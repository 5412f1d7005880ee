//! `mlx5-dpa prm`: the PRM layouts, and mailboxes decoded with them.

use super::*;

pub(crate) fn layout_json(d: &mlx5_dpa::mlx5::LayoutDesc) -> Json {
    let mut fields = Map::new();
    for f in decode::flatten(d) {
        fields.insert(f.name, json!([f.offset, f.width]));
    }
    json!({"size_bits": d.size_bits, "provisional": d.provisional, "fields": fields})
}

pub(crate) fn prm_layouts(as_json: bool, name: Option<&str>) -> Result<(), ToolError> {
    let chosen: Vec<_> = match name {
        Some(n) => {
            vec![layouts::by_name(n).ok_or_else(|| ToolError::UnknownLayout(n.to_string()))?]
        }
        None => layouts::ALL.to_vec(),
    };
    if as_json {
        let mut all = Map::new();
        for d in &chosen {
            all.insert(d.name.to_string(), layout_json(d));
        }
        println!("{}", Json::Object(all));
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
) -> Result<Json, ToolError> {
    let mut m = Map::new();
    for f in decode::decode(d, bytes)? {
        let v = match f.value {
            Value::Uint(v) => json!(v),
            Value::Bytes(b) => json!(hex(&b)),
        };
        m.insert(f.name, v);
    }
    Ok(Json::Object(m))
}

pub(crate) fn prm_decode(layout: &str, bytes: &str, as_json: bool) -> Result<(), ToolError> {
    let d = layouts::by_name(layout).ok_or_else(|| ToolError::UnknownLayout(layout.to_string()))?;
    let b = read_hex(bytes)?;
    if as_json {
        let fields = fields_json(d, &b)?;
        println!(
            "{}",
            json!({"layout": d.name, "bytes": b.len(), "fields": fields})
        );
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
