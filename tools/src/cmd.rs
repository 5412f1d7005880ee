//! `mlx5-dpa cmd`: a raw command inbox sent to the device, the answer decoded.

use super::*;

pub(crate) fn raw_cmd(
    cli: &Cli,
    inbox_arg: &str,
    out_len: Option<usize>,
    as_json: bool,
) -> Result<ExitCode, ToolError> {
    let inbox = read_hex(inbox_arg)?;
    if inbox.len() < 16 {
        return Err(ToolError::Input(format!(
            "an inbox has at least the 16-byte header; got {} bytes",
            inbox.len()
        )));
    }
    if inbox.len() > devx::MAX_MAILBOX_LEN {
        return Err(ToolError::Input(format!(
            "an inbox of {} bytes: DevX carries at most {}",
            inbox.len(),
            devx::MAX_MAILBOX_LEN
        )));
    }
    if let Some(n) = out_len {
        if !(16..=devx::MAX_MAILBOX_LEN).contains(&n) {
            return Err(ToolError::Input(format!(
                "--out-len {n}: an outbox has 16 to {} bytes (the command header, and DevX's \
                 limit of a u16 length)",
                devx::MAX_MAILBOX_LEN
            )));
        }
    }
    let op = Opcode(u16::from_be_bytes([inbox[0], inbox[1]]));
    let op_mod = u16::from_be_bytes([inbox[6], inbox[7]]);
    let out_desc = out_layout(op);
    let len = out_len.unwrap_or(out_desc.size_bytes()).max(16);
    let opened = open_device(cli)?;
    let dev = &opened.devx;
    let (outbox, obj) = devx::raw_command(dev, &inbox, len)?;
    let status = Status(outbox[0]);
    let syndrome = u32::from_be_bytes([outbox[4], outbox[5], outbox[6], outbox[7]]);
    let model_check = (opened.model.is_some() && syndrome != 0).then(|| {
        mlx5_sim::Check::by_syndrome(syndrome).map_or(
            "(syndrome not one of the model's checks)".to_string(),
            |c| c.what.to_string(),
        )
    });
    let shown = &outbox[..out_desc.size_bytes().min(outbox.len())];
    let decoded = shown.len() == out_desc.size_bytes();
    let destroyed = match obj {
        Some(o) => {
            o.destroy()?;
            true
        }
        None => false,
    };
    if as_json {
        /// `cmd --json`: the command, the firmware's answer and the decoded outbox.
        #[derive(serde::Serialize)]
        struct CmdJson {
            device: String,
            opcode: u16,
            opcode_name: Option<&'static str>,
            op_mod: u16,
            method: String,
            status: u8,
            status_name: Option<&'static str>,
            syndrome: u32,
            model_check: Option<String>,
            outbox: String,
            layout: Option<&'static str>,
            fields: Option<json::Object<String, prm::FieldJson>>,
            created_object_destroyed: bool,
        }
        let doc = CmdJson {
            device: dev.describe(),
            opcode: op.0,
            opcode_name: op.name(),
            op_mod,
            method: format!("{:?}", op.devx_method()),
            status: status.0,
            status_name: status.name(),
            syndrome,
            model_check,
            outbox: hex(&outbox),
            layout: decoded.then_some(out_desc.name),
            fields: if decoded {
                Some(fields_json(out_desc, shown)?)
            } else {
                None
            },
            created_object_destroyed: destroyed,
        };
        println!("{}", json::line(&doc));
    } else {
        println!("device:  {}", dev.describe());
        println!(
            "command: {op}, op_mod {op_mod:#x}, sent as {:?}",
            op.devx_method()
        );
        println!("status:  {status}");
        println!("syndrome: {syndrome:#010x}");
        if let Some(c) = &model_check {
            println!("model check: {c}");
        }
        println!("outbox ({} bytes):", outbox.len());
        print!("{}", hex_dump(&outbox));
        if decoded {
            println!("{}:", out_desc.name);
            print_fields(out_desc, shown)?;
        }
        if destroyed {
            println!("(the created object was destroyed again)");
        }
    }
    Ok(if status == Status::OK {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_FW_STATUS)
    })
}

/// Bytes as hex, 16 per line in 4-byte words, each line prefixed by its offset.
pub(crate) fn hex_dump(bytes: &[u8]) -> String {
    let mut s = String::new();
    for (i, line) in bytes.chunks(16).enumerate() {
        s.push_str(&format!("  {:04x}:", i * 16));
        for word in line.chunks(4) {
            s.push(' ');
            for b in word {
                s.push_str(&format!("{b:02x}"));
            }
        }
        s.push('\n');
    }
    s
}
