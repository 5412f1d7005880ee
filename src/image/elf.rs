//! ELF64 little-endian images: DPA device programs, and the host programs that carry them.
//!
//! A DPA device program (docs/sources.md section 5) is an ELF64 little-endian `ET_EXEC` for RISC-V
//! (`e_machine` 243), statically linked, with text and data `PT_LOAD` segments; entry points are
//! found by symbol name. A host program built by DPACC carries the device image in a section
//! named `.dpa_bin_<app>`. [`Elf::parse`] reads any ELF64 little-endian file (header, program
//! headers, section headers with their names, the symbol table); [`Elf::parse_device`] also
//! requires a RISC-V executable.
//!
//! The tables are read with the `object` crate (its ELF64 header, program header, section header
//! and symbol types); this module checks the identification first, so that each mismatch has
//! its own error, and turns `object`'s refusals into [`ElfError`]s that say what was out of
//! bounds. The parser borrows the file: segment and section contents are slices of it. Any
//! input gives either an [`Elf`] or an [`ElfError`], never a panic (the `dpa_elf` fuzz target
//! exercises this).

use object::elf::{self, FileHeader64, ProgramHeader64, SectionHeader64, Sym64};
use object::read::elf::{FileHeader, ProgramHeader, SectionHeader, Sym};
use object::read::StringTable;
use object::{LittleEndian as LE, ReadRef};
use thiserror::Error;

/// `e_machine` of RISC-V.
pub const EM_RISCV: u16 = 243;
/// `e_type` of an executable.
pub const ET_EXEC: u16 = 2;
/// `p_type` of a loadable segment.
pub const PT_LOAD: u32 = 1;
/// `sh_type` of a symbol table.
pub const SHT_SYMTAB: u32 = 2;
/// `sh_type` of a section without file contents (`.bss`).
pub const SHT_NOBITS: u32 = 8;
/// `p_flags` bits.
pub const PF_X: u32 = 1;
pub const PF_W: u32 = 2;
pub const PF_R: u32 = 4;

const PHDR_SIZE: u64 = 56;
const SHDR_SIZE: u64 = 64;
const SYM_SIZE: u64 = 24;
const SHN_UNDEF: u16 = 0;

/// Why bytes are not a usable ELF image.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum ElfError {
    #[error("not an ELF file (magic bytes missing)")]
    BadMagic,
    #[error("not a 64-bit ELF file (EI_CLASS {0}, expected 2)")]
    NotElf64(u8),
    #[error("not a little-endian ELF file (EI_DATA {0}, expected 1)")]
    NotLittleEndian(u8),
    #[error("unsupported ELF version {0}")]
    BadVersion(u32),
    #[error("{what} at file offset {offset:#x}, {size:#x} bytes, is outside the file ({file_len:#x} bytes)")]
    OutOfBounds {
        what: &'static str,
        offset: u64,
        size: u64,
        file_len: u64,
    },
    #[error("{what} entry size is {size} bytes, expected {expected}")]
    BadEntrySize {
        what: &'static str,
        size: u64,
        expected: u64,
    },
    #[error("e_machine is {0}, not RISC-V ({EM_RISCV})")]
    NotRiscv(u16),
    #[error("e_type is {0}, not an executable (ET_EXEC, {ET_EXEC})")]
    NotExecutable(u16),
    #[error("segment {index}: file size {filesz:#x} exceeds memory size {memsz:#x}")]
    SegmentFileSize {
        index: usize,
        filesz: u64,
        memsz: u64,
    },
    #[error("segment {index}: address {vaddr:#x} + memory size {memsz:#x} wraps around")]
    SegmentWraps {
        index: usize,
        vaddr: u64,
        memsz: u64,
    },
    #[error("section {index}: string table index {link} names no section")]
    BadStringTable { index: usize, link: u32 },
    #[error("section name string table index {0} names no section")]
    BadShstrndx(u32),
    #[error("name at offset {offset:#x} runs past its string table ({table_len:#x} bytes)")]
    BadName { offset: u64, table_len: u64 },
}

/// A program header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment<'a> {
    pub p_type: u32,
    /// `PF_R` / `PF_W` / `PF_X` bits.
    pub flags: u32,
    pub offset: u64,
    pub vaddr: u64,
    pub paddr: u64,
    pub filesz: u64,
    pub memsz: u64,
    pub align: u64,
    /// The `filesz` bytes from the file (the rest up to `memsz` is zero).
    pub data: &'a [u8],
}

impl Segment<'_> {
    pub fn is_load(&self) -> bool {
        self.p_type == PT_LOAD
    }
    pub fn readable(&self) -> bool {
        self.flags & PF_R != 0
    }
    pub fn writable(&self) -> bool {
        self.flags & PF_W != 0
    }
    pub fn executable(&self) -> bool {
        self.flags & PF_X != 0
    }
}

/// A section header with its name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section<'a> {
    pub name: String,
    pub sh_type: u32,
    pub flags: u64,
    pub addr: u64,
    pub offset: u64,
    pub size: u64,
    pub link: u32,
    pub info: u32,
    pub addralign: u64,
    pub entsize: u64,
    /// Contents (empty for `SHT_NOBITS`).
    pub data: &'a [u8],
}

/// A symbol of the symbol table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Symbol {
    pub name: String,
    pub value: u64,
    pub size: u64,
    /// `st_info`: binding in the high nibble, type in the low one.
    pub info: u8,
    pub shndx: u16,
}

impl Symbol {
    /// `STT_*` type (2 = function, 1 = object).
    pub fn kind(&self) -> u8 {
        self.info & 0xf
    }
    /// `STB_*` binding (0 local, 1 global, 2 weak).
    pub fn binding(&self) -> u8 {
        self.info >> 4
    }
    /// Whether the symbol is defined in some section (not `SHN_UNDEF`).
    pub fn is_defined(&self) -> bool {
        self.shndx != SHN_UNDEF
    }
}

/// A parsed ELF64 little-endian file, borrowing its bytes.
#[derive(Debug, Clone)]
pub struct Elf<'a> {
    pub e_type: u16,
    pub machine: u16,
    pub flags: u32,
    pub entry: u64,
    segments: Vec<Segment<'a>>,
    sections: Vec<Section<'a>>,
    symbols: Vec<Symbol>,
}

/// `size` bytes at `offset` of the file, or the error naming `what`.
fn range<'a>(
    bytes: &'a [u8],
    what: &'static str,
    offset: u64,
    size: u64,
) -> Result<&'a [u8], ElfError> {
    bytes
        .read_bytes_at(offset, size)
        .map_err(|()| out_of_bounds(bytes, what, offset, size))
}

fn out_of_bounds(bytes: &[u8], what: &'static str, offset: u64, size: u64) -> ElfError {
    ElfError::OutOfBounds {
        what,
        offset,
        size,
        file_len: bytes.len() as u64,
    }
}

/// The NUL-terminated name at `offset` of a string table.
fn name_at(strings: StringTable<'_>, table_len: u64, offset: u32) -> Result<String, ElfError> {
    strings
        .get(offset)
        .map(|n| String::from_utf8_lossy(n).into_owned())
        .map_err(|()| ElfError::BadName {
            offset: u64::from(offset),
            table_len,
        })
}

impl<'a> Elf<'a> {
    /// Parses any ELF64 little-endian file.
    pub fn parse(bytes: &'a [u8]) -> Result<Elf<'a>, ElfError> {
        // The identification first, so each mismatch has its own error; `object` then reads
        // the header and the tables, checking every offset and size against the file.
        if bytes.get(..4) != Some(&elf::ELFMAG[..]) {
            return Err(ElfError::BadMagic);
        }
        let size = std::mem::size_of::<FileHeader64<LE>>() as u64;
        let h: &FileHeader64<LE> = bytes
            .read_at(0)
            .map_err(|()| out_of_bounds(bytes, "ELF header", 0, size))?;
        if h.e_ident.class != elf::ELFCLASS64 {
            return Err(ElfError::NotElf64(h.e_ident.class.0));
        }
        if h.e_ident.data != elf::ELFDATA2LSB {
            return Err(ElfError::NotLittleEndian(h.e_ident.data.0));
        }
        let version = h.e_version.get(LE);
        if h.e_ident.version != elf::EV_CURRENT || version != 1 {
            return Err(ElfError::BadVersion(if version != 1 {
                version
            } else {
                u32::from(h.e_ident.version.0)
            }));
        }
        let shoff = h.e_shoff.get(LE);
        let shentsize = h.e_shentsize.get(LE);
        if shoff != 0 && u64::from(shentsize) != SHDR_SIZE {
            return Err(ElfError::BadEntrySize {
                what: "section header",
                size: u64::from(shentsize),
                expected: SHDR_SIZE,
            });
        }
        let segments = Self::parse_segments(bytes, h)?;
        let (sections, symbols) = if shoff != 0 {
            let sections = Self::parse_sections(bytes, h)?;
            let symbols = Self::parse_symbols(bytes, &sections)?;
            (sections, symbols)
        } else {
            (Vec::new(), Vec::new())
        };
        Ok(Elf {
            e_type: h.e_type.get(LE).0,
            machine: h.e_machine.get(LE).0,
            flags: h.e_flags.get(LE).0,
            entry: h.e_entry.get(LE),
            segments,
            sections,
            symbols,
        })
    }

    /// Parses a DPA device program: an ELF64 little-endian RISC-V executable.
    pub fn parse_device(bytes: &'a [u8]) -> Result<Elf<'a>, ElfError> {
        let elf = Elf::parse(bytes)?;
        if elf.machine != EM_RISCV {
            return Err(ElfError::NotRiscv(elf.machine));
        }
        if elf.e_type != ET_EXEC {
            return Err(ElfError::NotExecutable(elf.e_type));
        }
        Ok(elf)
    }

    fn parse_segments(bytes: &'a [u8], h: &FileHeader64<LE>) -> Result<Vec<Segment<'a>>, ElfError> {
        let phoff = h.e_phoff.get(LE);
        // The count, from section 0 when it does not fit the header (extended numbering).
        let phnum = h
            .phnum(LE, bytes)
            .map_err(|_| out_of_bounds(bytes, "section header 0", h.e_shoff.get(LE), SHDR_SIZE))?;
        if phoff == 0 || phnum == 0 {
            return Ok(Vec::new());
        }
        let phentsize = h.e_phentsize.get(LE);
        if u64::from(phentsize) != PHDR_SIZE {
            return Err(ElfError::BadEntrySize {
                what: "program header",
                size: u64::from(phentsize),
                expected: PHDR_SIZE,
            });
        }
        let table: &[ProgramHeader64<LE>] = h.program_headers(LE, bytes).map_err(|_| {
            out_of_bounds(
                bytes,
                "program headers",
                phoff,
                u64::from(phnum) * PHDR_SIZE,
            )
        })?;
        let mut out = Vec::with_capacity(table.len());
        for (index, p) in table.iter().enumerate() {
            let (offset, filesz, memsz) = (p.p_offset(LE), p.p_filesz(LE), p.p_memsz(LE));
            let vaddr = p.p_vaddr(LE);
            let p_type = p.p_type(LE).0;
            let data = if p_type == PT_LOAD {
                if filesz > memsz {
                    return Err(ElfError::SegmentFileSize {
                        index,
                        filesz,
                        memsz,
                    });
                }
                if vaddr.checked_add(memsz).is_none() {
                    return Err(ElfError::SegmentWraps {
                        index,
                        vaddr,
                        memsz,
                    });
                }
                range(bytes, "segment contents", offset, filesz)?
            } else {
                // Other segments are described, not loaded: contents only when inside the file.
                p.data(LE, bytes).unwrap_or(&[])
            };
            out.push(Segment {
                p_type,
                flags: p.p_flags(LE).0,
                offset,
                vaddr,
                paddr: p.p_paddr(LE),
                filesz,
                memsz,
                align: p.p_align(LE),
                data,
            });
        }
        Ok(out)
    }

    fn parse_sections(bytes: &'a [u8], h: &FileHeader64<LE>) -> Result<Vec<Section<'a>>, ElfError> {
        let shoff = h.e_shoff.get(LE);
        let section_0 = |_| out_of_bounds(bytes, "section header 0", shoff, SHDR_SIZE);
        let shnum = h.shnum(LE, bytes).map_err(section_0)?;
        let table: &[SectionHeader64<LE>] = h.section_headers(LE, bytes).map_err(|_| {
            out_of_bounds(
                bytes,
                "section headers",
                shoff,
                u64::from(shnum) * SHDR_SIZE,
            )
        })?;
        let mut raw = Vec::with_capacity(table.len());
        for s in table {
            let data = match s.sh_type(LE).0 {
                SHT_NOBITS | 0 => &[][..],
                _ => range(bytes, "section contents", s.sh_offset(LE), s.sh_size(LE))?,
            };
            raw.push((s, data));
        }
        // Names from the section-name string table, when there is one (index 0: none).
        let names: Option<&[u8]> = match h.e_shstrndx.get(LE) {
            elf::SHN_UNDEF => None,
            _ => {
                let shstrndx = h.shstrndx(LE, bytes).map_err(section_0)?;
                let t = raw
                    .get(shstrndx as usize)
                    .ok_or(ElfError::BadShstrndx(shstrndx))?;
                Some(t.1)
            }
        };
        raw.iter()
            .map(|&(s, data)| {
                let name = match names {
                    Some(t) => name_at(
                        StringTable::new(t, 0, t.len() as u64),
                        t.len() as u64,
                        s.sh_name(LE),
                    )?,
                    None => String::new(),
                };
                Ok(Section {
                    name,
                    sh_type: s.sh_type(LE).0,
                    flags: s.sh_flags(LE).0,
                    addr: s.sh_addr(LE),
                    offset: s.sh_offset(LE),
                    size: s.sh_size(LE),
                    link: s.sh_link(LE),
                    info: s.sh_info(LE),
                    addralign: s.sh_addralign(LE),
                    entsize: s.sh_entsize(LE),
                    data,
                })
            })
            .collect()
    }

    fn parse_symbols(bytes: &'a [u8], sections: &[Section<'a>]) -> Result<Vec<Symbol>, ElfError> {
        let mut out = Vec::new();
        for (index, s) in sections.iter().enumerate() {
            if s.sh_type != SHT_SYMTAB {
                continue;
            }
            if s.entsize != SYM_SIZE {
                return Err(ElfError::BadEntrySize {
                    what: "symbol",
                    size: s.entsize,
                    expected: SYM_SIZE,
                });
            }
            let strtab = sections
                .get(s.link as usize)
                .ok_or(ElfError::BadStringTable {
                    index,
                    link: s.link,
                })?;
            let strings = StringTable::new(strtab.data, 0, strtab.data.len() as u64);
            // A table whose size is not a whole number of entries: the whole entries.
            let whole = s.data.len() - s.data.len() % SYM_SIZE as usize;
            let syms: &[Sym64<LE>] = object::pod::slice_from_all_bytes(&s.data[..whole])
                .map_err(|()| out_of_bounds(bytes, "symbol table", s.offset, s.size))?;
            out.reserve(syms.len());
            for e in syms {
                out.push(Symbol {
                    name: name_at(strings, strtab.data.len() as u64, e.st_name(LE))?,
                    info: e.st_info.0,
                    shndx: e.st_shndx.get(LE).0,
                    value: e.st_value(LE),
                    size: e.st_size(LE),
                });
            }
        }
        Ok(out)
    }

    /// Every program header.
    pub fn segments(&self) -> &[Segment<'a>] {
        &self.segments
    }

    /// The `PT_LOAD` segments.
    pub fn load_segments(&self) -> impl Iterator<Item = &Segment<'a>> {
        self.segments.iter().filter(|s| s.is_load())
    }

    /// Every section header.
    pub fn sections(&self) -> &[Section<'a>] {
        &self.sections
    }

    /// The first section with this name.
    pub fn section(&self, name: &str) -> Option<&Section<'a>> {
        self.sections.iter().find(|s| s.name == name)
    }

    /// Every symbol of the symbol table(s), in file order.
    pub fn symbols(&self) -> &[Symbol] {
        &self.symbols
    }

    /// The first defined symbol with this name.
    pub fn symbol(&self, name: &str) -> Option<&Symbol> {
        self.symbols
            .iter()
            .find(|s| s.name == name && s.is_defined())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal RISC-V executable: header, one PT_LOAD, sections (null, .text, .symtab,
    /// .strtab, .shstrtab) and one symbol `main`.
    fn tiny() -> Vec<u8> {
        let code: [u8; 8] = [0x13, 0x05, 0x10, 0x00, 0x67, 0x80, 0x00, 0x00]; // li a0,1; ret
        let shstr = b"\0.text\0.symtab\0.strtab\0.shstrtab\0";
        let strtab = b"\0main\0";
        let mut f = vec![0u8; 64];
        f[..4].copy_from_slice(b"\x7fELF");
        f[4] = 2;
        f[5] = 1;
        f[6] = 1;
        f[16..18].copy_from_slice(&ET_EXEC.to_le_bytes());
        f[18..20].copy_from_slice(&EM_RISCV.to_le_bytes());
        f[20..24].copy_from_slice(&1u32.to_le_bytes());
        f[24..32].copy_from_slice(&0x4000_0000u64.to_le_bytes());
        f[32..40].copy_from_slice(&64u64.to_le_bytes()); // phoff
        f[52..54].copy_from_slice(&64u16.to_le_bytes());
        f[54..56].copy_from_slice(&56u16.to_le_bytes());
        f[56..58].copy_from_slice(&1u16.to_le_bytes());
        f[58..60].copy_from_slice(&64u16.to_le_bytes());
        // Program header.
        let code_off = 64 + 56;
        let mut ph = vec![0u8; 56];
        ph[0..4].copy_from_slice(&PT_LOAD.to_le_bytes());
        ph[4..8].copy_from_slice(&(PF_R | PF_X).to_le_bytes());
        ph[8..16].copy_from_slice(&(code_off as u64).to_le_bytes());
        ph[16..24].copy_from_slice(&0x4000_0000u64.to_le_bytes());
        ph[32..40].copy_from_slice(&8u64.to_le_bytes());
        ph[40..48].copy_from_slice(&16u64.to_le_bytes());
        f.extend_from_slice(&ph);
        f.extend_from_slice(&code);
        let sym_off = f.len();
        let mut sym = vec![0u8; 48]; // null symbol + main
        sym[24..28].copy_from_slice(&1u32.to_le_bytes());
        sym[28] = 0x12; // global function
        sym[30..32].copy_from_slice(&1u16.to_le_bytes());
        sym[32..40].copy_from_slice(&0x4000_0000u64.to_le_bytes());
        sym[40..48].copy_from_slice(&8u64.to_le_bytes());
        f.extend_from_slice(&sym);
        let str_off = f.len();
        f.extend_from_slice(strtab);
        let shstr_off = f.len();
        f.extend_from_slice(shstr);
        while !f.len().is_multiple_of(8) {
            f.push(0);
        }
        let shoff = f.len();
        let sh = |name: u32, ty: u32, off: usize, size: usize, link: u32, ent: u64| {
            let mut s = vec![0u8; 64];
            s[0..4].copy_from_slice(&name.to_le_bytes());
            s[4..8].copy_from_slice(&ty.to_le_bytes());
            s[24..32].copy_from_slice(&(off as u64).to_le_bytes());
            s[32..40].copy_from_slice(&(size as u64).to_le_bytes());
            s[40..44].copy_from_slice(&link.to_le_bytes());
            s[56..64].copy_from_slice(&ent.to_le_bytes());
            s
        };
        f.extend(sh(0, 0, 0, 0, 0, 0));
        f.extend(sh(1, 1, code_off, 8, 0, 0));
        f.extend(sh(7, SHT_SYMTAB, sym_off, 48, 3, 24));
        f.extend(sh(15, 3, str_off, strtab.len(), 0, 0));
        f.extend(sh(23, 3, shstr_off, shstr.len(), 0, 0));
        f[40..48].copy_from_slice(&(shoff as u64).to_le_bytes());
        f[60..62].copy_from_slice(&5u16.to_le_bytes());
        f[62..64].copy_from_slice(&4u16.to_le_bytes());
        f
    }

    #[test]
    fn parses_a_minimal_device_image() {
        let bytes = tiny();
        let elf = Elf::parse_device(&bytes).unwrap();
        assert_eq!(elf.entry, 0x4000_0000);
        let loads: Vec<_> = elf.load_segments().collect();
        assert_eq!(loads.len(), 1);
        assert_eq!(loads[0].memsz, 16);
        assert_eq!(loads[0].data.len(), 8);
        assert!(loads[0].executable() && loads[0].readable() && !loads[0].writable());
        assert_eq!(elf.section(".text").unwrap().data.len(), 8);
        let main = elf.symbol("main").unwrap();
        assert_eq!(
            (main.value, main.size, main.kind(), main.binding()),
            (0x4000_0000, 8, 2, 1)
        );
        assert!(elf.symbol("nope").is_none());
    }

    #[test]
    fn every_truncation_and_bad_header_is_an_error() {
        let bytes = tiny();
        for len in 0..bytes.len() {
            // Any prefix either parses (trailing data unused) or gives a typed error.
            let _ = Elf::parse(&bytes[..len]);
        }
        assert_eq!(Elf::parse(b"MZ\0\0").unwrap_err(), ElfError::BadMagic);
        let mut b = bytes.clone();
        b[4] = 1;
        assert_eq!(Elf::parse(&b).unwrap_err(), ElfError::NotElf64(1));
        let mut b = bytes.clone();
        b[18] = 62;
        assert_eq!(Elf::parse_device(&b).unwrap_err(), ElfError::NotRiscv(62));
        let mut b = bytes.clone();
        b[16] = 3;
        assert_eq!(
            Elf::parse_device(&b).unwrap_err(),
            ElfError::NotExecutable(3)
        );
        // filesz > memsz
        let mut b = bytes.clone();
        b[64 + 32..64 + 40].copy_from_slice(&32u64.to_le_bytes());
        assert!(matches!(
            Elf::parse(&b).unwrap_err(),
            ElfError::SegmentFileSize { index: 0, .. }
        ));
        // phoff far away
        let mut b = bytes.clone();
        b[32..40].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(matches!(
            Elf::parse(&b).unwrap_err(),
            ElfError::OutOfBounds { .. }
        ));
        // shstrndx out of range
        let mut b = bytes;
        b[62..64].copy_from_slice(&9u16.to_le_bytes());
        assert_eq!(Elf::parse(&b).unwrap_err(), ElfError::BadShstrndx(9));
    }
}
