//! Entry points shared by the `fuzz/` targets and the property tests that replay the same
//! inputs in the normal test suite. Both must never panic, whatever the bytes.

use super::cmd::{self, *};
use super::decode::decode;
use super::ids::{Cqn, Qpn, Rqn};
use super::layouts;

/// Decodes `data[1..]` as the layout chosen by `data[0]`.
pub fn decode_any_layout(data: &[u8]) {
    let Some((&sel, rest)) = data.split_first() else {
        return;
    };
    let desc = layouts::ALL[usize::from(sel) % layouts::ALL.len()];
    let _ = decode(desc, rest);
}

/// Treats `data[1..]` as the output mailbox of the command chosen by `data[0]`.
pub fn decode_any_outbox(data: &[u8]) {
    let Some((&sel, out)) = data.split_first() else {
        return;
    };
    match sel % 12 {
        0 => drop(cmd::decode_outbox(&AllocPd, out)),
        1 => drop(cmd::decode_outbox(
            &QueryHcaCap {
                cap_type: 0,
                current: true,
            },
            out,
        )),
        2 => drop(cmd::decode_outbox(&QueryCq(Cqn(1)), out)),
        3 => drop(cmd::decode_outbox(&QueryQp(Qpn(1)), out)),
        4 => drop(cmd::decode_outbox(
            &QueryGeneralObject {
                obj_type: 0x2a,
                obj_id: 1,
                ctx_len: 64,
            },
            out,
        )),
        5 => drop(cmd::decode_outbox(
            &AccessRegisterUser {
                register_id: 0xc012,
                argument: 0,
                write: false,
                data: vec![0; 16],
            },
            out,
        )),
        6 => drop(cmd::decode_outbox(&CreateRqt { rqns: vec![Rqn(1)] }, out)),
        7 => drop(cmd::decode_outbox(&DestroyCq(Cqn(1)), out)),
        8 => drop(cmd::decode_outbox(&AllocTransportDomain, out)),
        9 => drop(cmd::decode_outbox(
            &CreateGeneralObject(DpaMemAttr {
                dpa_process_id: 1,
                size: 4096,
            }),
            out,
        )),
        10 => drop(cmd::check_status(super::Opcode(u16::from(sel)), 0, out)),
        _ => {
            if let Ok(caps) = super::caps::Caps::decode(out, Some(out), Some(out)) {
                let _ = caps.has_dpa();
            }
        }
    }
}
