//! Typed firmware commands, one file per topic (mirroring `layouts/`).
//!
//! Every command is a type implementing [`Command`]: its opcode, its op_mod, a plain attribute
//! struct as input, an encoder into the inbox and a decoder of the outbox into a typed result.
//! [`encode_inbox`] and [`decode_outbox`] are the single place that writes the common header
//! and checks `status` / `syndrome` for every command; a transport (`crate::devx`) only moves
//! the bytes.
//!
//! Attribute structs are not wire layouts (STYLE.md §3): they hold what a caller means, and
//! the encoder maps them onto the mlx5_ifc fields, refusing values that do not fit with
//! [`CmdError::InvalidAttr`] instead of truncating them.

use super::ids::{Cqn, Pdn, Qpn, Rqn, Sqn};
use super::layout::{read_bits, FlexArray, Layout, LayoutError, View, ViewMut};
use super::layouts::*;
use super::opcode::Opcode;
use super::status::Status;

/// Errors of building, checking or decoding a command.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CmdError {
    /// Firmware executed the command and refused it.
    #[error("{opcode} (op_mod {op_mod:#x}) failed: status {status}, syndrome {syndrome:#010x}")]
    Firmware {
        opcode: Opcode,
        op_mod: u16,
        status: Status,
        syndrome: u32,
    },
    /// An attribute value cannot be encoded (out of range for its field, inconsistent).
    #[error("{opcode}: invalid attribute: {what}")]
    InvalidAttr { opcode: Opcode, what: String },
    /// A mailbox does not match the command's layout.
    #[error("{opcode}: {source}")]
    Layout {
        opcode: Opcode,
        #[source]
        source: LayoutError,
    },
    /// The output mailbox is shorter than the 8-byte status header.
    #[error("{opcode}: output mailbox of {len} bytes has no status header")]
    NoStatus { opcode: Opcode, len: usize },
}

impl CmdError {
    /// The firmware status, if firmware answered with an error.
    pub fn status(&self) -> Option<Status> {
        match self {
            CmdError::Firmware { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// The firmware syndrome, if firmware answered with an error.
    pub fn syndrome(&self) -> Option<u32> {
        match self {
            CmdError::Firmware { syndrome, .. } => Some(*syndrome),
            _ => None,
        }
    }
}

/// One firmware command.
pub trait Command {
    /// The command's opcode.
    const OPCODE: Opcode;
    /// Layout of the fixed part of the input mailbox.
    type In: Layout;
    /// Layout of the fixed part of the output mailbox.
    type Out: Layout;
    /// What a successful command yields.
    type Output;

    /// `op_mod` of this instance.
    fn op_mod(&self) -> u16 {
        0
    }
    /// Input bytes after the fixed part (a flexible array, a general object context).
    fn inbox_extra(&self) -> usize {
        0
    }
    /// Output bytes after the fixed part.
    fn outbox_extra(&self) -> usize {
        0
    }
    /// Writes the command's fields. `opcode` and `op_mod` are already set; `inbox` is zeroed and
    /// `Self::In::SIZE_BYTES + self.inbox_extra()` long.
    ///
    /// # Errors
    /// [`CmdError::InvalidAttr`] or [`CmdError::Layout`] for attributes that do not fit.
    fn encode(&self, inbox: &mut ViewMut<'_, Self::In>) -> Result<(), CmdError>;
    /// Decodes a successful output mailbox (status already checked, length at least the fixed
    /// part).
    ///
    /// # Errors
    /// [`CmdError::Layout`] when the output is malformed.
    fn decode(&self, outbox: View<'_, Self::Out>) -> Result<Self::Output, CmdError>;
}

/// Builds the complete input mailbox of `cmd`.
///
/// # Errors
/// The command's own encoding errors.
pub fn encode_inbox<C: Command>(cmd: &C) -> Result<Vec<u8>, CmdError> {
    let mut buf = vec![0u8; C::In::SIZE_BYTES + cmd.inbox_extra()];
    let lay = |source| CmdError::Layout {
        opcode: C::OPCODE,
        source,
    };
    {
        let mut hdr = ViewMut::<mbox_in::Layout>::new(&mut buf).map_err(lay)?;
        hdr.set(mbox_in::opcode, u64::from(C::OPCODE.0));
        hdr.set(mbox_in::op_mod, u64::from(cmd.op_mod()));
    }
    let mut v = ViewMut::<C::In>::new(&mut buf).map_err(lay)?;
    cmd.encode(&mut v)?;
    Ok(buf)
}

/// Length of the output mailbox to provide for `cmd`.
pub fn outbox_len<C: Command>(cmd: &C) -> usize {
    C::Out::SIZE_BYTES + cmd.outbox_extra()
}

/// Checks the `status` / `syndrome` header of any output mailbox.
///
/// # Errors
/// [`CmdError::Firmware`] for a non-zero status; [`CmdError::NoStatus`] when `outbox` is
/// shorter than the header.
pub fn check_status(opcode: Opcode, op_mod: u16, outbox: &[u8]) -> Result<(), CmdError> {
    // `status` and `syndrome` are the first two dwords of every output (`mbox_out`); the rest of
    // `mbox_out` is reserved, so 8 bytes are enough to judge any answer.
    let Some(hdr) = outbox.get(..8) else {
        return Err(CmdError::NoStatus {
            opcode,
            len: outbox.len(),
        });
    };
    let status = read_bits(hdr, mbox_out::status.offset(), mbox_out::status.width()) as u8;
    let syndrome = read_bits(hdr, mbox_out::syndrome.offset(), mbox_out::syndrome.width()) as u32;
    if status != 0 {
        return Err(CmdError::Firmware {
            opcode,
            op_mod,
            status: Status(status),
            syndrome,
        });
    }
    Ok(())
}

/// Checks the status of `outbox` and decodes it as `cmd`'s output.
///
/// # Errors
/// [`check_status`] errors, a too-short outbox, or the command's decoding errors.
pub fn decode_outbox<C: Command>(cmd: &C, outbox: &[u8]) -> Result<C::Output, CmdError> {
    check_status(C::OPCODE, cmd.op_mod(), outbox)?;
    let v = View::<C::Out>::new(outbox).map_err(|source| CmdError::Layout {
        opcode: C::OPCODE,
        source,
    })?;
    cmd.decode(v)
}

/// Writes a user-supplied value, refusing one that does not fit its field.
fn put<L: Layout, T>(
    v: &mut ViewMut<'_, L>,
    opcode: Opcode,
    f: super::Field<L, T>,
    value: u64,
    what: &str,
) -> Result<(), CmdError> {
    v.try_set(f, value).map_err(|_| CmdError::InvalidAttr {
        opcode,
        what: format!("{what} = {value:#x} does not fit in {} bits", f.width()),
    })
}

fn put_flex<L: Layout>(
    v: &mut ViewMut<'_, L>,
    opcode: Opcode,
    a: FlexArray<L>,
    items: &[u64],
) -> Result<(), CmdError> {
    for (i, &x) in items.iter().enumerate() {
        v.flex_set(a, i, x)
            .map_err(|source| CmdError::Layout { opcode, source })?;
    }
    Ok(())
}

fn flex_bytes<L: Layout>(v: &View<'_, L>) -> Vec<u8> {
    v.bytes().get(L::SIZE_BYTES..).unwrap_or_default().to_vec()
}

// ---------------------------------------------------------------------------------------------
// The shapes commands share, as macros (defined before the topic modules that use them).

/// Implements [`Command`] for a type: `Type: OPCODE, in_layout -> out_layout => Output;` then
/// the methods. Without `=> Output` the command yields `()` and its decoder is the status
/// check alone (done by [`decode_outbox`]), so only `encode` (and any other method) is
/// written.
macro_rules! command {
    ($ty:ty: $op:ident, $in:ident -> $out:ident => $output:ty; $($body:tt)*) => {
        impl Command for $ty {
            const OPCODE: Opcode = Opcode::$op;
            type In = $in::Layout;
            type Out = $out::Layout;
            type Output = $output;
            $($body)*
        }
    };
    ($ty:ty: $op:ident, $in:ident -> $out:ident; $($body:tt)*) => {
        impl Command for $ty {
            const OPCODE: Opcode = Opcode::$op;
            type In = $in::Layout;
            type Out = $out::Layout;
            type Output = ();
            $($body)*
            fn decode(&self, _: View<'_, Self::Out>) -> Result<(), CmdError> {
                Ok(())
            }
        }
    };
}

/// A command whose input is one object number and whose output is only the status.
macro_rules! id_command {
    ($(#[$m:meta])* $ty:ident($id:ty), $op:ident, $lay:ident, $field:ident) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub struct $ty(pub $id);
        command! {
            $ty: $op, $lay -> mbox_out;
            fn encode(&self, v: &mut ViewMut<'_, Self::In>) -> Result<(), CmdError> {
                put(v, Self::OPCODE, $lay::$field, u64::from(self.0), stringify!($field))
            }
        }
    };
}

/// A query whose input is one object number and whose output is the object's context:
/// yields the context bytes, readable with a `View` of the context layout.
macro_rules! query_command {
    ($(#[$m:meta])* $ty:ident($id:ty), $op:ident, $in:ident . $field:ident, $out:ident . $ctx:ident : $ctx_layout:ident) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub struct $ty(pub $id);
        command! {
            $ty: $op, $in -> $out => Vec<u8>;
            fn encode(&self, v: &mut ViewMut<'_, Self::In>) -> Result<(), CmdError> {
                put(v, Self::OPCODE, $in::$field, u64::from(self.0), stringify!($field))
            }
            fn decode(&self, v: View<'_, Self::Out>) -> Result<Vec<u8>, CmdError> {
                Ok(v.nested($out::$ctx).bytes()[..$ctx_layout::Layout::SIZE_BYTES].to_vec())
            }
        }
    };
}

mod counters;
mod cq;
mod dpa;
mod flow;
mod general;
mod pd;
mod port;
mod qp;
mod reg;
mod tir;
mod work_queue;

pub use counters::*;
pub use cq::*;
pub use dpa::*;
pub use flow::*;
pub use general::*;
pub use pd::*;
pub use port::*;
pub use qp::*;
pub use reg::*;
pub use tir::*;
pub use work_queue::*;

id_command!(/// DEALLOC_PD.
    DeallocPd(Pdn), DEALLOC_PD, dealloc_pd_in, pd);
id_command!(/// DESTROY_CQ.
    DestroyCq(Cqn), DESTROY_CQ, destroy_cq_in, cqn);
id_command!(/// DESTROY_SQ.
    DestroySq(Sqn), DESTROY_SQ, destroy_sq_in, sqn);
id_command!(/// DESTROY_RQ.
    DestroyRq(Rqn), DESTROY_RQ, destroy_rq_in, rqn);
id_command!(/// DESTROY_QP.
    DestroyQp(Qpn), DESTROY_QP, destroy_qp_in, qpn);
