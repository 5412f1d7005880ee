//! Registers and cross-function access.

use super::*;

// ---------------------------------------------------------------------------------------------
// Registers and cross-function access.

/// ACCESS_REGISTER_USER (0xb0c): read or write one register (e.g. the DPA EU partition and
/// EU group registers in [`crate::mlx5::layouts::dpa`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccessRegisterUser {
    pub register_id: u16,
    pub argument: u32,
    /// `true` = write (op_mod 0), `false` = read (op_mod 1).
    pub write: bool,
    /// Register contents to write; for a read, its length is the register's size.
    pub data: Vec<u8>,
}

impl Command for AccessRegisterUser {
    const OPCODE: Opcode = Opcode::ACCESS_REGISTER_USER;
    type In = access_register_in::Layout;
    type Out = access_register_out::Layout;
    /// The register contents firmware returns.
    type Output = Vec<u8>;
    fn op_mod(&self) -> u16 {
        if self.write {
            0
        } else {
            1
        }
    }
    fn inbox_extra(&self) -> usize {
        self.data.len()
    }
    fn outbox_extra(&self) -> usize {
        self.data.len()
    }
    fn encode(&self, v: &mut ViewMut<'_, Self::In>) -> Result<(), CmdError> {
        if !self.data.len().is_multiple_of(4) || self.data.is_empty() {
            return Err(CmdError::InvalidAttr {
                opcode: Self::OPCODE,
                what: format!(
                    "register data of {} bytes is not a non-empty whole number of dwords",
                    self.data.len()
                ),
            });
        }
        v.set(access_register_in::register_id, u64::from(self.register_id));
        v.set(access_register_in::argument, u64::from(self.argument));
        let words: Vec<u64> = self
            .data
            .chunks_exact(4)
            .map(|c| u64::from(u32::from_be_bytes([c[0], c[1], c[2], c[3]])))
            .collect();
        put_flex(v, Self::OPCODE, access_register_in::register_data, &words)
    }
    fn decode(&self, v: View<'_, Self::Out>) -> Result<Vec<u8>, CmdError> {
        Ok(flex_bytes(&v))
    }
}

/// ALLOW_OTHER_VHCA_ACCESS: lets another function alias one of our objects with `access_key`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AllowOtherVhcaAccess {
    pub object_type: u16,
    pub object_id: u32,
    pub access_key: [u8; 32],
}

command! {
    AllowOtherVhcaAccess: ALLOW_OTHER_VHCA_ACCESS, allow_other_vhca_access_in -> mbox_out;
    fn encode(&self, v: &mut ViewMut<'_, Self::In>) -> Result<(), CmdError> {
        let op = Self::OPCODE;
        v.set(
            allow_other_vhca_access_in::object_type_to_be_accessed,
            u64::from(self.object_type),
        );
        v.set(
            allow_other_vhca_access_in::object_id_to_be_accessed,
            u64::from(self.object_id),
        );
        v.set_bytes(allow_other_vhca_access_in::access_key, &self.access_key)
            .map_err(|source| CmdError::Layout { opcode: op, source })
    }
}
