//! Protection domains, transport domains and memory keys.

use super::*;

// ---------------------------------------------------------------------------------------------
// PD, transport domain, mkey.

/// ALLOC_PD: yields the PD number.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AllocPd;

command! {
    AllocPd: ALLOC_PD, alloc_pd_in -> alloc_pd_out => Pdn;
    fn encode(&self, _: &mut ViewMut<'_, Self::In>) -> Result<(), CmdError> {
        Ok(())
    }
    fn decode(&self, v: View<'_, Self::Out>) -> Result<Pdn, CmdError> {
        Ok(Pdn(v.value(alloc_pd_out::pd)))
    }
}

/// ALLOC_TRANSPORT_DOMAIN: yields the transport domain number.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AllocTransportDomain;

command! {
    AllocTransportDomain: ALLOC_TRANSPORT_DOMAIN, alloc_transport_domain_in -> alloc_transport_domain_out => u32;
    fn encode(&self, _: &mut ViewMut<'_, Self::In>) -> Result<(), CmdError> {
        Ok(())
    }
    fn decode(&self, v: View<'_, Self::Out>) -> Result<u32, CmdError> {
        Ok(v.value(alloc_transport_domain_out::transport_domain))
    }
}

/// Access rights of a memory key (the `mkc` bits `lr`, `lw`, `rr`, `rw`, `a`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MkeyAccess {
    pub local_read: bool,
    pub local_write: bool,
    pub remote_read: bool,
    pub remote_write: bool,
    pub atomic: bool,
}

/// CREATE_MKEY over a UMEM (`mkey_umem_valid`, access mode MTT).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CreateMkey {
    pub pd: Pdn,
    /// Virtual address the key starts at.
    pub start_addr: u64,
    pub len: u64,
    pub access: MkeyAccess,
    pub umem_id: u32,
    pub umem_offset: u64,
    /// Low 8 bits of the key, chosen by software.
    pub key: u8,
    /// log2 of the translation page size.
    pub log_page_size: u8,
}

impl CreateMkey {
    /// `mkc.access_mode_1_0` for MTT translation (PRM; `MLX5_MKC_ACCESS_MODE_MTT`).
    pub const ACCESS_MODE_MTT: u64 = 0x1;
}

impl Command for CreateMkey {
    const OPCODE: Opcode = Opcode::CREATE_MKEY;
    type In = create_mkey_in::Layout;
    type Out = create_mkey_out::Layout;
    /// The key: `mkey_index << 8 | key`.
    type Output = u32;
    fn encode(&self, v: &mut ViewMut<'_, Self::In>) -> Result<(), CmdError> {
        let op = Self::OPCODE;
        let m = create_mkey_in::memory_key_mkey_entry;
        v.set(create_mkey_in::mkey_umem_valid, 1);
        put(
            v,
            op,
            create_mkey_in::mkey_umem_id,
            u64::from(self.umem_id),
            "umem_id",
        )?;
        v.set(create_mkey_in::mkey_umem_offset, self.umem_offset);
        v.set(m.at(mkc::access_mode_1_0), Self::ACCESS_MODE_MTT);
        v.set(m.at(mkc::lr), u64::from(self.access.local_read));
        v.set(m.at(mkc::lw), u64::from(self.access.local_write));
        v.set(m.at(mkc::rr), u64::from(self.access.remote_read));
        v.set(m.at(mkc::rw), u64::from(self.access.remote_write));
        v.set(m.at(mkc::a), u64::from(self.access.atomic));
        v.set(m.at(mkc::qpn), 0xff_ffff);
        v.set(m.at(mkc::mkey_7_0), u64::from(self.key));
        put(v, op, m.at(mkc::pd), u64::from(self.pd), "pd")?;
        v.set(m.at(mkc::start_addr), self.start_addr);
        v.set(m.at(mkc::len), self.len);
        put(
            v,
            op,
            m.at(mkc::log_page_size),
            u64::from(self.log_page_size),
            "log_page_size",
        )?;
        Ok(())
    }
    fn decode(&self, v: View<'_, Self::Out>) -> Result<u32, CmdError> {
        Ok(((v.value(create_mkey_out::mkey_index)) << 8) | u32::from(self.key))
    }
}
