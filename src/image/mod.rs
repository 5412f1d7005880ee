//! The DPA's image formats, below both halves of the project: the device ELF as firmware
//! loads it ([`elf`]) and its signature, DPA Application Authentication's crypto data
//! ([`auth`]). The driver packages and hands them over (`dpa`), the device model loads and
//! checks them; neither needs more of the other to do so.

pub mod auth;
pub mod elf;

/// `sh_type` of a DPA crypto data (signature) section (docs/sources.md section 7).
pub const SHT_DPA_CRYPTO: u32 = 0x7000_0666;
/// Size of the metadata header at the start of a crypto data section.
pub const CRYPTO_METADATA_LEN: usize = 0x40;
/// `signature_type` of RSA with SHA-512.
pub const SIGNATURE_TYPE_RSA_SHA_512: u32 = 2;
