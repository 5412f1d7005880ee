//! What the bare machine loads: segments with their permissions, an entry point and symbols.
//! [`Image::from_elf`] reads them from a RISC-V executable with the `object` crate; any other
//! loader (the device model's, a test) builds an [`Image`] itself.

use object::elf;
use object::read::elf::{ElfFile64, FileHeader, ProgramHeader};
use object::{LittleEndian as LE, Object, ObjectSymbol};

use crate::ram::Perms;

/// One loadable segment: `data` at `vaddr`, zero-filled up to `memsz` bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoadSegment<'a> {
    pub vaddr: u64,
    pub memsz: u64,
    pub data: &'a [u8],
    pub perms: Perms,
}

/// A program as the bare machine loads it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Image<'a> {
    pub entry: u64,
    pub segments: Vec<LoadSegment<'a>>,
    /// Defined (not `SHN_UNDEF`), named symbols of any type: name and value, in the file's
    /// order.
    pub symbols: Vec<(String, u64)>,
}

/// Why bytes are not a RISC-V executable the bare machine can load.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ImageError {
    #[error("not an ELF file (magic bytes missing)")]
    BadMagic,
    #[error("not a 64-bit ELF file (EI_CLASS {0}, expected 2)")]
    NotElf64(u8),
    #[error("not a little-endian ELF file (EI_DATA {0}, expected 1)")]
    NotLittleEndian(u8),
    /// Not a well-formed 64-bit little-endian ELF file.
    #[error("not a 64-bit little-endian ELF file the reader accepts: {0}")]
    Elf(String),
    #[error("e_machine is {0}, not RISC-V ({EM_RISCV})", EM_RISCV = elf::EM_RISCV)]
    NotRiscv(u16),
    #[error("e_type is {0}, not an executable (ET_EXEC, {ET_EXEC})", ET_EXEC = elf::ET_EXEC)]
    NotExecutable(u16),
    #[error("segment {index}: file size {filesz:#x} exceeds memory size {memsz:#x}")]
    SegmentFileSize {
        index: usize,
        filesz: u64,
        memsz: u64,
    },
    #[error("segment {index}: its bytes are outside the file")]
    SegmentData { index: usize },
}

impl<'a> Image<'a> {
    /// Reads the `PT_LOAD` segments (permissions from `p_flags`), the entry point and the
    /// defined symbols of a 64-bit little-endian RISC-V executable.
    ///
    /// # Errors
    /// Not such a file, or a segment whose bytes are not in it.
    pub fn from_elf(bytes: &'a [u8]) -> Result<Image<'a>, ImageError> {
        // The identification bytes first, for the errors a user most often meets.
        if bytes.get(..4) != Some(&elf::ELFMAG[..]) {
            return Err(ImageError::BadMagic);
        }
        let (class, data) = (bytes.get(4).copied(), bytes.get(5).copied());
        if class != Some(elf::ELFCLASS64.0) {
            return Err(ImageError::NotElf64(class.unwrap_or(0)));
        }
        if data != Some(elf::ELFDATA2LSB.0) {
            return Err(ImageError::NotLittleEndian(data.unwrap_or(0)));
        }
        let file = ElfFile64::<LE>::parse(bytes).map_err(|e| ImageError::Elf(e.to_string()))?;
        let header = file.elf_header();
        let machine = header.e_machine(LE);
        if machine != elf::EM_RISCV {
            return Err(ImageError::NotRiscv(machine.0));
        }
        let kind = header.e_type(LE);
        if kind != elf::ET_EXEC {
            return Err(ImageError::NotExecutable(kind.0));
        }
        let mut segments = Vec::new();
        for (index, ph) in file.elf_program_headers().iter().enumerate() {
            if ph.p_type(LE) != elf::PT_LOAD {
                continue;
            }
            let (filesz, memsz) = (ph.p_filesz(LE), ph.p_memsz(LE));
            if filesz > memsz {
                return Err(ImageError::SegmentFileSize {
                    index,
                    filesz,
                    memsz,
                });
            }
            let data = ph
                .data(LE, bytes)
                .map_err(|()| ImageError::SegmentData { index })?;
            let flags = ph.p_flags(LE);
            let has = |f: elf::ProgramFlags| flags.0 & f.0 != 0;
            segments.push(LoadSegment {
                vaddr: ph.p_vaddr(LE),
                memsz,
                data,
                perms: Perms::new(has(elf::PF_R), has(elf::PF_W), has(elf::PF_X)),
            });
        }
        let symbols = file
            .symbols()
            // Every symbol with a section index (absolute ones included: `__global_pointer$`
            // often is), whatever its type.
            .filter(|s| !s.is_undefined())
            .filter_map(|s| Some((s.name().ok()?.to_string(), s.address())))
            .filter(|(n, _)| !n.is_empty())
            .collect();
        Ok(Image {
            entry: file.entry(),
            segments,
            symbols,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 64-byte ELF header: 64-bit, little-endian, RISC-V executable, no program headers.
    fn header() -> Vec<u8> {
        let mut h = vec![0u8; 64];
        h[..4].copy_from_slice(&elf::ELFMAG);
        h[4] = 2; // ELFCLASS64
        h[5] = 1; // ELFDATA2LSB
        h[6] = 1; // EV_CURRENT
        h[16..18].copy_from_slice(&2u16.to_le_bytes()); // ET_EXEC
        h[18..20].copy_from_slice(&243u16.to_le_bytes()); // EM_RISCV
        h[20..24].copy_from_slice(&1u32.to_le_bytes());
        h[24..32].copy_from_slice(&0x1000u64.to_le_bytes()); // e_entry
        h[52..54].copy_from_slice(&64u16.to_le_bytes()); // e_ehsize
        h[54..56].copy_from_slice(&56u16.to_le_bytes()); // e_phentsize
        h[58..60].copy_from_slice(&64u16.to_le_bytes()); // e_shentsize
        h
    }

    #[test]
    fn a_minimal_executable_reads_with_its_entry() {
        let h = header();
        let image = Image::from_elf(&h).unwrap();
        assert_eq!((image.entry, image.segments.len()), (0x1000, 0));
    }

    #[test]
    fn what_is_not_a_riscv_executable_is_named() {
        assert_eq!(Image::from_elf(b"#!/bin/sh\n"), Err(ImageError::BadMagic));
        let mut h = header();
        h[4] = 1;
        assert_eq!(Image::from_elf(&h), Err(ImageError::NotElf64(1)));
        let mut h = header();
        h[5] = 2;
        assert_eq!(Image::from_elf(&h), Err(ImageError::NotLittleEndian(2)));
        let mut h = header();
        h[18..20].copy_from_slice(&62u16.to_le_bytes());
        assert_eq!(Image::from_elf(&h), Err(ImageError::NotRiscv(62)));
        let mut h = header();
        h[16..18].copy_from_slice(&3u16.to_le_bytes());
        assert_eq!(Image::from_elf(&h), Err(ImageError::NotExecutable(3)));
        assert!(matches!(
            Image::from_elf(&header()[..40]),
            Err(ImageError::Elf(_))
        ));
    }
}
