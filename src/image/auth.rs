//! DPA application authentication (seed: DPA Development guide, "DPA Application
//! Authentication"; docs/sources.md section 7): the crypto data that signs a DPA application, built,
//! signed with an RSA key, parsed and verified.
//!
//! A crypto data blob (a host ELF's section of type [`SHT_DPA_CRYPTO`](super::SHT_DPA_CRYPTO),
//! or a `.sig` file beside a device ELF as snap ships them) is:
//!
//! | offset | what |
//! |---|---|
//! | 0x0 | metadata, 0x40 bytes: `metadata_version` (0), `signature_type` at 0x3c (2 = RSA_SHA_512, big-endian) |
//! | 0x40 | the hash list ([`HashList`]) |
//! | after it | the signature: RSA PKCS#1 v1.5 with SHA-512 over the metadata and the hash list, as long as the key's modulus |
//! | after it | the certificate chain: a 12-byte header ([`ChainHeader`]), then DER X.509 certificates, leaf last, at most 4 |
//! | end | 0xFF padding to a multiple of 4 bytes |
//!
//! Checked against NVIDIA's signed snap programs (docs/sources.md section 8): their hash lists are the
//! ones [`HashList::of_elf`] computes, byte for byte (reserved fields filled with 0xFF, as
//! NVIDIA's tool does); their signatures verify as PKCS#1 v1.5 / SHA-512 over bytes
//! 0 .. end of the hash list with the leaf certificate's key.
//!
//! **Provisional:** the chain header's CRC. The seed says only "the CRC of the header, covering
//! DWs in 0x0, 0x4"; none of the common CRC-16 definitions (nor mstflint's) gives the value of
//! NVIDIA's files, so [`sign`] writes 0xFFFF there and [`verify`] reports the field without
//! checking it (see [`ChainHeader::crc`]).

use rsa::pkcs1v15::Pkcs1v15Sign;
use rsa::pkcs8::{DecodePrivateKey, DecodePublicKey};
use rsa::traits::PublicKeyParts;
use rsa::{RsaPrivateKey, RsaPublicKey};
use sha2::{Digest, Sha256, Sha384, Sha512};
use thiserror::Error;
use x509_cert::der::{Decode, Encode};
use x509_cert::Certificate;

use super::elf::{Elf, ElfError};
use super::{CRYPTO_METADATA_LEN, SIGNATURE_TYPE_RSA_SHA_512};

/// "HASHLIST", the hash list's magic.
pub const HASH_LIST_MAGIC: &[u8; 8] = b"HASHLIST";
/// Bytes of one hash (SHA-256).
pub const HASH_LEN: usize = 32;
/// Most certificates a chain may hold (seed: "must not exceed 4 certificates").
pub const MAX_CERTS: usize = 4;
/// Bytes of the certificate chain header.
pub const CHAIN_HEADER_LEN: usize = 12;
/// The chain type of a third-party code-authentication chain.
pub const CHAIN_TYPE_CODE: u8 = 1;
/// What [`sign`] writes in the chain header's CRC field (provisional: see the module doc).
pub const CHAIN_CRC_UNKNOWN: u16 = 0xffff;
/// `SHT_NOBITS`: sections with no bytes in the file, not hashed.
const SHT_NOBITS: u32 = 8;

/// Why authentication data could not be built, read or verified.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum AuthError {
    #[error("the application: {0}")]
    Elf(#[from] ElfError),
    #[error("the application has {what} {count}; a hash list counts at most 255")]
    TooMany { what: &'static str, count: usize },
    #[error("{what} at {offset:#x}..+{len:#x} lies outside the {size}-byte application")]
    OutOfFile {
        what: String,
        offset: u64,
        len: u64,
        size: usize,
    },
    #[error("the crypto data is {got} bytes, shorter than the {need} its {what} needs")]
    Truncated {
        what: &'static str,
        need: usize,
        got: usize,
    },
    #[error("the crypto data has no hash list (no \"HASHLIST\" at 0x40)")]
    NoHashList,
    #[error("signature_type {0} is not RSA_SHA_512 (2), the only type the seed defines")]
    SignatureType(u32),
    #[error("no certificate chain after the hash list and a 256-, 384- or 512-byte signature")]
    NoChain,
    #[error("certificate {index} of the chain: {reason}")]
    Certificate { index: usize, reason: String },
    #[error("{0} certificates: a chain holds 1 to {MAX_CERTS}")]
    ChainLength(usize),
    #[error("the key: {0}")]
    Key(String),
    #[error("the leaf certificate's key does not match the signing key")]
    KeyMismatch,
    #[error("RSA: {0}")]
    Rsa(String),
}

// ---------------------------------------------------------------------------------------------
// The hash list

/// The hash list of a DPA application: SHA-256 of the whole ELF, of its header, of its program
/// header table and of each segment, of its section header table and of each section (the
/// null section and `SHT_NOBITS` ones left out, as NVIDIA's tool leaves them out).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HashList {
    pub elf: [u8; HASH_LEN],
    pub elf_header: [u8; HASH_LEN],
    pub program_headers: [u8; HASH_LEN],
    pub segments: Vec<[u8; HASH_LEN]>,
    pub section_headers: [u8; HASH_LEN],
    pub sections: Vec<[u8; HASH_LEN]>,
}

fn sha256(b: &[u8]) -> [u8; HASH_LEN] {
    Sha256::digest(b).into()
}

/// `file[offset .. offset + len]`, or which part lies outside it.
fn part(file: &[u8], what: impl Fn() -> String, offset: u64, len: u64) -> Result<&[u8], AuthError> {
    let out = || AuthError::OutOfFile {
        what: what(),
        offset,
        len,
        size: file.len(),
    };
    let start = usize::try_from(offset).map_err(|_| out())?;
    let end = start
        .checked_add(usize::try_from(len).map_err(|_| out())?)
        .ok_or_else(out)?;
    file.get(start..end).ok_or_else(out)
}

fn le16(b: &[u8], o: usize) -> u64 {
    b.get(o..o + 2)
        .map_or(0, |s| u64::from(u16::from_le_bytes([s[0], s[1]])))
}

fn le64(b: &[u8], o: usize) -> u64 {
    b.get(o..o + 8).map_or(0, |s| {
        let mut a = [0u8; 8];
        a.copy_from_slice(s);
        u64::from_le_bytes(a)
    })
}

impl HashList {
    /// The hash list of device ELF `elf` (an ELF64 little-endian file; the tables are read
    /// from its header, each part must lie inside the file).
    ///
    /// # Errors
    /// [`AuthError::Elf`] for a file that is no ELF64, [`AuthError::OutOfFile`] for a table or
    /// a segment or section past its end, [`AuthError::TooMany`] past 255 of either.
    pub fn of_elf(elf: &[u8]) -> Result<HashList, AuthError> {
        let parsed = Elf::parse(elf)?;
        let eh = part(elf, || "the ELF header".into(), 0, le16(elf, 52))?;
        let (phoff, phentsize, phnum) = (le64(elf, 32), le16(elf, 54), le16(elf, 56));
        let (shoff, shentsize, shnum) = (le64(elf, 40), le16(elf, 58), le16(elf, 60));
        let ph = part(
            elf,
            || "the program header table".into(),
            phoff,
            phentsize * phnum,
        )?;
        let sh = part(
            elf,
            || "the section header table".into(),
            shoff,
            shentsize * shnum,
        )?;
        let mut segments = Vec::new();
        for p in parsed.segments() {
            segments.push(sha256(p.data));
        }
        let mut sections = Vec::new();
        for (i, s) in parsed.sections().iter().enumerate() {
            if i == 0 || s.sh_type == SHT_NOBITS {
                continue;
            }
            sections.push(sha256(s.data));
        }
        for (what, count) in [("segments", segments.len()), ("sections", sections.len())] {
            if count > 255 {
                return Err(AuthError::TooMany { what, count });
            }
        }
        Ok(HashList {
            elf: sha256(elf),
            elf_header: sha256(eh),
            program_headers: sha256(ph),
            segments,
            section_headers: sha256(sh),
            sections,
        })
    }

    /// Bytes of the list: 0x20 of header, then 32 per hash.
    pub fn len(&self) -> usize {
        0x20 + HASH_LEN * (4 + self.segments.len() + self.sections.len())
    }

    /// Never empty: it always holds the header and four hashes.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The list as the crypto data holds it (reserved fields 0xFF, as NVIDIA's tool writes
    /// them; hashes in their natural byte order, which the seed's table calls big-endian).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(self.len());
        b.extend_from_slice(HASH_LIST_MAGIC);
        // The counts in bits 7:0 of big-endian dwords, reserved bits set.
        b.extend_from_slice(&(0xffff_ff00 | self.segments.len() as u32).to_be_bytes());
        b.extend_from_slice(&(0xffff_ff00 | self.sections.len() as u32).to_be_bytes());
        b.extend_from_slice(&[0xff; 16]);
        for h in [&self.elf, &self.elf_header, &self.program_headers] {
            b.extend_from_slice(h);
        }
        for h in &self.segments {
            b.extend_from_slice(h);
        }
        b.extend_from_slice(&self.section_headers);
        for h in &self.sections {
            b.extend_from_slice(h);
        }
        b
    }

    /// Reads a hash list at the start of `b`; returns it and its length.
    ///
    /// # Errors
    /// [`AuthError::NoHashList`] without the magic, [`AuthError::Truncated`] when `b` ends
    /// before the hashes its counts announce.
    pub fn parse(b: &[u8]) -> Result<(HashList, usize), AuthError> {
        if b.get(..8) != Some(&HASH_LIST_MAGIC[..]) {
            return Err(AuthError::NoHashList);
        }
        let short = |need| AuthError::Truncated {
            what: "hash list",
            need,
            got: b.len(),
        };
        let nseg = usize::from(*b.get(0xb).ok_or_else(|| short(0x20))?);
        let nsec = usize::from(*b.get(0xf).ok_or_else(|| short(0x20))?);
        let len = 0x20 + HASH_LEN * (4 + nseg + nsec);
        if b.len() < len {
            return Err(short(len));
        }
        let hash = |i: usize| {
            let mut h = [0u8; HASH_LEN];
            h.copy_from_slice(&b[0x20 + HASH_LEN * i..0x20 + HASH_LEN * (i + 1)]);
            h
        };
        Ok((
            HashList {
                elf: hash(0),
                elf_header: hash(1),
                program_headers: hash(2),
                segments: (0..nseg).map(|i| hash(3 + i)).collect(),
                section_headers: hash(3 + nseg),
                sections: (0..nsec).map(|i| hash(4 + nseg + i)).collect(),
            },
            len,
        ))
    }
}

// ---------------------------------------------------------------------------------------------
// The certificate chain

/// The 12-byte header of a certificate chain: three big-endian dwords, type (3:0), count
/// (7:4) and length (23:8, the header included) in the first, the CRC in bits 15:0 of the
/// third. Reserved bits are kept as found (NVIDIA's files set them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChainHeader {
    pub raw: [u8; CHAIN_HEADER_LEN],
}

impl ChainHeader {
    fn dw(&self, i: usize) -> u32 {
        u32::from_be_bytes([
            self.raw[4 * i],
            self.raw[4 * i + 1],
            self.raw[4 * i + 2],
            self.raw[4 * i + 3],
        ])
    }
    /// Chain type (1: third-party code authentication).
    pub fn chain_type(&self) -> u8 {
        (self.dw(0) & 0xf) as u8
    }
    /// Certificates in the chain.
    pub fn count(&self) -> usize {
        ((self.dw(0) >> 4) & 0xf) as usize
    }
    /// Bytes of the chain, this header included.
    pub fn length(&self) -> usize {
        ((self.dw(0) >> 8) & 0xffff) as usize
    }
    /// The CRC field. Provisional: its algorithm is not public (see the module doc); it is
    /// reported, never checked.
    pub fn crc(&self) -> u16 {
        (self.dw(2) & 0xffff) as u16
    }
    /// A header for `count` certificates and `length` bytes (header included), reserved bits
    /// set as NVIDIA's files have them, CRC [`CHAIN_CRC_UNKNOWN`].
    pub fn new(count: usize, length: usize) -> ChainHeader {
        let dw0 = 0xff00_0000
            | ((length as u32 & 0xffff) << 8)
            | ((count as u32 & 0xf) << 4)
            | u32::from(CHAIN_TYPE_CODE);
        let mut raw = [0xffu8; CHAIN_HEADER_LEN];
        raw[..4].copy_from_slice(&dw0.to_be_bytes());
        raw[10..].copy_from_slice(&CHAIN_CRC_UNKNOWN.to_be_bytes());
        ChainHeader { raw }
    }
}

/// Length of the DER element (tag, length, contents) at the start of `b`.
fn der_len(b: &[u8]) -> Option<usize> {
    let first = *b.get(1)?;
    if first < 0x80 {
        return Some(2 + usize::from(first));
    }
    let n = usize::from(first & 0x7f);
    if n == 0 || n > 4 {
        return None;
    }
    let mut len = 0usize;
    for i in 0..n {
        len = (len << 8) | usize::from(*b.get(2 + i)?);
    }
    2usize.checked_add(n)?.checked_add(len)
}

/// A certificate of a chain: its DER bytes and what verification needs from it.
#[derive(Debug, Clone)]
pub struct ChainCert {
    pub der: Vec<u8>,
    pub subject: String,
    pub issuer: String,
    cert: Certificate,
}

impl ChainCert {
    /// Parses a DER X.509 certificate.
    ///
    /// # Errors
    /// [`AuthError::Certificate`] for bytes that are no certificate.
    pub fn from_der(index: usize, der: &[u8]) -> Result<ChainCert, AuthError> {
        let cert = Certificate::from_der(der).map_err(|e| AuthError::Certificate {
            index,
            reason: e.to_string(),
        })?;
        Ok(ChainCert {
            der: der.to_vec(),
            subject: cert.tbs_certificate.subject.to_string(),
            issuer: cert.tbs_certificate.issuer.to_string(),
            cert,
        })
    }

    /// The certificate's RSA public key.
    ///
    /// # Errors
    /// [`AuthError::Certificate`] for a key that is not RSA.
    pub fn public_key(&self, index: usize) -> Result<RsaPublicKey, AuthError> {
        let spki = self
            .cert
            .tbs_certificate
            .subject_public_key_info
            .to_der()
            .map_err(|e| AuthError::Certificate {
                index,
                reason: e.to_string(),
            })?;
        RsaPublicKey::from_public_key_der(&spki).map_err(|e| AuthError::Certificate {
            index,
            reason: format!("not an RSA key: {e}"),
        })
    }

    /// Whether `issuer`'s key signed this certificate (sha256/384/512WithRSAEncryption).
    fn signed_by(&self, issuer: &RsaPublicKey) -> Result<bool, String> {
        let tbs = self
            .cert
            .tbs_certificate
            .to_der()
            .map_err(|e| e.to_string())?;
        let sig = self
            .cert
            .signature
            .as_bytes()
            .ok_or("the signature has unused bits")?;
        let oid = self.cert.signature_algorithm.oid.to_string();
        let ok = match oid.as_str() {
            // RFC 4055: sha256/384/512WithRSAEncryption.
            "1.2.840.113549.1.1.11" => issuer
                .verify(Pkcs1v15Sign::new::<Sha256>(), &Sha256::digest(&tbs), sig)
                .is_ok(),
            "1.2.840.113549.1.1.12" => issuer
                .verify(Pkcs1v15Sign::new::<Sha384>(), &Sha384::digest(&tbs), sig)
                .is_ok(),
            "1.2.840.113549.1.1.13" => issuer
                .verify(Pkcs1v15Sign::new::<Sha512>(), &Sha512::digest(&tbs), sig)
                .is_ok(),
            other => return Err(format!("signature algorithm {other} is not RSA with SHA-2")),
        };
        Ok(ok)
    }
}

// ---------------------------------------------------------------------------------------------
// Crypto data

/// A parsed crypto data blob.
#[derive(Debug, Clone)]
pub struct CryptoData {
    pub metadata: [u8; CRYPTO_METADATA_LEN],
    pub hash_list: HashList,
    /// The hash list's bytes as found (compared byte for byte).
    pub hash_list_raw: Vec<u8>,
    pub signature: Vec<u8>,
    pub chain_header: ChainHeader,
    /// Leaf last.
    pub chain: Vec<ChainCert>,
    /// Bytes after the chain (0xFF padding).
    pub padding: usize,
}

impl CryptoData {
    /// `signature_type` (big-endian dword at 0x3c).
    pub fn signature_type(&self) -> u32 {
        u32::from_be_bytes([
            self.metadata[0x3c],
            self.metadata[0x3d],
            self.metadata[0x3e],
            self.metadata[0x3f],
        ])
    }

    /// Bytes the signature covers: the metadata and the hash list.
    pub fn signed_bytes(&self) -> Vec<u8> {
        let mut b = self.metadata.to_vec();
        b.extend_from_slice(&self.hash_list_raw);
        b
    }

    /// Reads a crypto data blob.
    ///
    /// # Errors
    /// [`AuthError`] naming the part that is missing or malformed. Never panics.
    pub fn parse(b: &[u8]) -> Result<CryptoData, AuthError> {
        let mut metadata = [0u8; CRYPTO_METADATA_LEN];
        metadata.copy_from_slice(b.get(..CRYPTO_METADATA_LEN).ok_or(AuthError::Truncated {
            what: "metadata",
            need: CRYPTO_METADATA_LEN,
            got: b.len(),
        })?);
        let st = u32::from_be_bytes([
            metadata[0x3c],
            metadata[0x3d],
            metadata[0x3e],
            metadata[0x3f],
        ]);
        if st != SIGNATURE_TYPE_RSA_SHA_512 {
            return Err(AuthError::SignatureType(st));
        }
        let (hash_list, hl_len) = HashList::parse(&b[CRYPTO_METADATA_LEN..])?;
        let sig_at = CRYPTO_METADATA_LEN + hl_len;
        // The signature is as long as the leaf key's modulus, which the chain after it says:
        // take the RSA size whose end starts a plausible chain header.
        for sig_len in [256usize, 384, 512] {
            let at = sig_at + sig_len;
            let Some(h) = b.get(at..at + CHAIN_HEADER_LEN) else {
                continue;
            };
            let mut raw = [0u8; CHAIN_HEADER_LEN];
            raw.copy_from_slice(h);
            let header = ChainHeader { raw };
            let plausible = header.chain_type() == CHAIN_TYPE_CODE
                && (1..=MAX_CERTS).contains(&header.count())
                && header.length() > CHAIN_HEADER_LEN
                && at + header.length() <= b.len()
                && b.get(at + CHAIN_HEADER_LEN) == Some(&0x30);
            if !plausible {
                continue;
            }
            let chain_bytes = &b[at + CHAIN_HEADER_LEN..at + header.length()];
            let mut chain = Vec::new();
            let mut pos = 0;
            while pos < chain_bytes.len() {
                let index = chain.len();
                let len = der_len(&chain_bytes[pos..])
                    .filter(|l| pos + l <= chain_bytes.len())
                    .ok_or(AuthError::Certificate {
                        index,
                        reason: "its DER length runs past the chain".into(),
                    })?;
                chain.push(ChainCert::from_der(index, &chain_bytes[pos..pos + len])?);
                pos += len;
            }
            if chain.len() != header.count() {
                return Err(AuthError::Certificate {
                    index: chain.len(),
                    reason: format!(
                        "the header counts {} certificates, the chain holds {}",
                        header.count(),
                        chain.len()
                    ),
                });
            }
            return Ok(CryptoData {
                metadata,
                hash_list_raw: b[CRYPTO_METADATA_LEN..sig_at].to_vec(),
                hash_list,
                signature: b[sig_at..at].to_vec(),
                chain_header: header,
                chain,
                padding: b.len() - (at + header.length()),
            });
        }
        Err(AuthError::NoChain)
    }
}

/// Reads an RSA private key, PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`, what `openssl genrsa`
/// and `openssl req -newkey` write) or PKCS#1 PEM (`-----BEGIN RSA PRIVATE KEY-----`).
///
/// # Errors
/// [`AuthError::Key`] for anything else.
pub fn private_key_from_pem(pem: &str) -> Result<RsaPrivateKey, AuthError> {
    use rsa::pkcs1::DecodeRsaPrivateKey;
    RsaPrivateKey::from_pkcs8_pem(pem)
        .or_else(|_| RsaPrivateKey::from_pkcs1_pem(pem))
        .map_err(|e| AuthError::Key(e.to_string()))
}

/// Signs device ELF `elf` with `key`: the crypto data blob, with certificate chain `chain`
/// (DER certificates, leaf last, whose leaf holds `key`'s public half).
///
/// # Errors
/// [`AuthError::ChainLength`] for no or more than [`MAX_CERTS`] certificates,
/// [`AuthError::KeyMismatch`] when the leaf does not hold the key, the hash list's and RSA's
/// errors.
pub fn sign(elf: &[u8], key: &RsaPrivateKey, chain: &[Vec<u8>]) -> Result<Vec<u8>, AuthError> {
    if chain.is_empty() || chain.len() > MAX_CERTS {
        return Err(AuthError::ChainLength(chain.len()));
    }
    let certs = chain
        .iter()
        .enumerate()
        .map(|(i, d)| ChainCert::from_der(i, d))
        .collect::<Result<Vec<_>, _>>()?;
    let leaf = certs.len() - 1;
    if certs[leaf].public_key(leaf)? != key.to_public_key() {
        return Err(AuthError::KeyMismatch);
    }
    let mut out = vec![0u8; CRYPTO_METADATA_LEN];
    out[0x3c..0x40].copy_from_slice(&SIGNATURE_TYPE_RSA_SHA_512.to_be_bytes());
    out.extend_from_slice(&HashList::of_elf(elf)?.to_bytes());
    let sig = key
        .sign(Pkcs1v15Sign::new::<Sha512>(), &Sha512::digest(&out))
        .map_err(|e| AuthError::Rsa(e.to_string()))?;
    debug_assert_eq!(sig.len(), key.size());
    out.extend_from_slice(&sig);
    let certs_len: usize = chain.iter().map(Vec::len).sum();
    out.extend_from_slice(&ChainHeader::new(chain.len(), CHAIN_HEADER_LEN + certs_len).raw);
    for c in chain {
        out.extend_from_slice(c);
    }
    while !out.len().is_multiple_of(4) {
        out.push(0xff);
    }
    Ok(out)
}

/// What [`verify`] found.
#[derive(Debug, Clone)]
pub struct Verification {
    /// The hash list in the crypto data equals the application's, byte for byte.
    pub hash_list_matches: bool,
    /// Hash-list entries that differ, by name (`"elf"`, `"segment 2"`, `"section 7"`, ...).
    pub mismatches: Vec<String>,
    /// The signature verifies with the leaf certificate's key.
    pub signature_valid: bool,
    /// Subjects of the chain's certificates, leaf last.
    pub chain: Vec<String>,
    /// Each certificate after the first is signed by the one before it.
    pub chain_valid: bool,
    /// How the first certificate is anchored.
    pub anchor: Anchor,
    /// The chain header's CRC field (not checked: see the module doc).
    pub chain_crc: u16,
}

impl Verification {
    /// Hash list, signature and chain all good, and the chain anchored in a trusted or
    /// self-signed root.
    pub fn valid(&self) -> bool {
        self.hash_list_matches
            && self.signature_valid
            && self.chain_valid
            && matches!(self.anchor, Anchor::Trusted(_) | Anchor::SelfSigned)
    }

    /// As [`Verification::valid`], and anchored in one of the trusted certificates given to
    /// [`verify`] (a self-signed root in the chain is not enough): what a device with DPA
    /// Application Authentication enabled requires.
    pub fn trusted(&self) -> bool {
        self.valid() && matches!(self.anchor, Anchor::Trusted(_))
    }

    /// The leaf certificate's subject: who signed the application.
    pub fn signer(&self) -> &str {
        self.chain.last().map_or("", String::as_str)
    }
}

/// How the chain's first certificate is anchored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Anchor {
    /// Signed by a trusted certificate given to [`verify`] (its subject).
    Trusted(String),
    /// Self-signed (a root inside the chain).
    SelfSigned,
    /// Its issuer (named) is neither in the chain nor among the trusted certificates.
    Unknown(String),
    /// A trusted certificate of that name is given, and did not sign it.
    BadSignature(String),
}

/// Verifies crypto data `crypto` for device ELF `elf`: the hash list against the ELF, the
/// signature against the leaf certificate's key, each certificate against the one before it,
/// and the first against `trusted` (DER certificates; may be empty).
///
/// # Errors
/// [`AuthError`] when the crypto data or a certificate cannot be read, or the ELF hashed.
/// A mismatch is no error: it is reported in the [`Verification`].
pub fn verify(elf: &[u8], crypto: &[u8], trusted: &[Vec<u8>]) -> Result<Verification, AuthError> {
    let cd = CryptoData::parse(crypto)?;
    let ours = HashList::of_elf(elf)?;
    let theirs = &cd.hash_list;
    let mut mismatches = Vec::new();
    let mut cmp = |name: String, a: &[u8; HASH_LEN], b: Option<&[u8; HASH_LEN]>| {
        if b != Some(a) {
            mismatches.push(name);
        }
    };
    cmp("elf".into(), &ours.elf, Some(&theirs.elf));
    cmp(
        "elf header".into(),
        &ours.elf_header,
        Some(&theirs.elf_header),
    );
    cmp(
        "program headers".into(),
        &ours.program_headers,
        Some(&theirs.program_headers),
    );
    for (i, h) in ours.segments.iter().enumerate() {
        cmp(format!("segment {i}"), h, theirs.segments.get(i));
    }
    cmp(
        "section headers".into(),
        &ours.section_headers,
        Some(&theirs.section_headers),
    );
    for (i, h) in ours.sections.iter().enumerate() {
        cmp(format!("hashed section {i}"), h, theirs.sections.get(i));
    }
    if theirs.segments.len() != ours.segments.len() || theirs.sections.len() != ours.sections.len()
    {
        mismatches.push("counts".into());
    }
    let hash_list_matches = ours.to_bytes() == cd.hash_list_raw;
    let leaf = cd.chain.len() - 1;
    let leaf_key = cd.chain[leaf].public_key(leaf)?;
    let signature_valid = leaf_key
        .verify(
            Pkcs1v15Sign::new::<Sha512>(),
            &Sha512::digest(cd.signed_bytes()),
            &cd.signature,
        )
        .is_ok();
    let mut chain_valid = true;
    for i in 1..cd.chain.len() {
        let key = cd.chain[i - 1].public_key(i - 1)?;
        chain_valid &= cd.chain[i].issuer == cd.chain[i - 1].subject
            && cd.chain[i]
                .signed_by(&key)
                .map_err(|reason| AuthError::Certificate { index: i, reason })?;
    }
    let first = &cd.chain[0];
    let anchor = if trusted.contains(&first.der) {
        // The chain starts with a trusted certificate itself.
        Anchor::Trusted(first.subject.clone())
    } else if let Some(t) = trusted
        .iter()
        .enumerate()
        .map(|(i, d)| ChainCert::from_der(i, d))
        .collect::<Result<Vec<_>, _>>()?
        .into_iter()
        .find(|t| t.subject == first.issuer)
    {
        let key = t.public_key(0)?;
        let ok = first
            .signed_by(&key)
            .map_err(|reason| AuthError::Certificate { index: 0, reason })?;
        if ok {
            Anchor::Trusted(t.subject)
        } else {
            Anchor::BadSignature(t.subject)
        }
    } else if first.issuer == first.subject
        && first
            .signed_by(&first.public_key(0)?)
            .map_err(|reason| AuthError::Certificate { index: 0, reason })?
    {
        Anchor::SelfSigned
    } else {
        Anchor::Unknown(first.issuer.clone())
    };
    Ok(Verification {
        hash_list_matches,
        mismatches,
        signature_valid,
        chain: cd.chain.iter().map(|c| c.subject.clone()).collect(),
        chain_valid,
        anchor,
        chain_crc: cd.chain_header.crc(),
    })
}
