//! ELF64 little-endian images: DPA device programs, and the host programs that carry them.
//!
//! A DPA device program (docs/sources.md section 5) is an ELF64 little-endian `ET_EXEC` for RISC-V
//! (`e_machine` 243), statically linked, with text and data `PT_LOAD` segments; entry points are
//! found by symbol name. A host program built by DPACC carries the device image in a section
//! named `.dpa_bin_<app>`. [`Elf::parse`] reads any ELF64 little-endian file (header, program
//! headers, section headers with their names, the symbol table); [`Elf::parse_device`] also
//! requires a RISC-V executable.
//!
//! The parser borrows the file: segment and section contents are slices of it. Every offset,
//! size and count read from the file is checked against the file's length before use, so any
//! input gives either an [`Elf`] or an [`ElfError`], never a panic (the `dpa_elf` fuzz target
//! exercises this).

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

const EHDR_SIZE: u64 = 64;
const PHDR_SIZE: u64 = 56;
const SHDR_SIZE: u64 = 64;
const SYM_SIZE: u64 = 24;
const SHN_UNDEF: u16 = 0;
const SHN_XINDEX: u16 = 0xffff;
const PN_XNUM: u16 = 0xffff;

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

fn u16_at(b: &[u8], o: usize) -> u16 {
    let mut a = [0u8; 2];
    if let Some(s) = b.get(o..o + 2) {
        a.copy_from_slice(s);
    }
    u16::from_le_bytes(a)
}

fn u32_at(b: &[u8], o: usize) -> u32 {
    let mut a = [0u8; 4];
    if let Some(s) = b.get(o..o + 4) {
        a.copy_from_slice(s);
    }
    u32::from_le_bytes(a)
}

fn u64_at(b: &[u8], o: usize) -> u64 {
    let mut a = [0u8; 8];
    if let Some(s) = b.get(o..o + 8) {
        a.copy_from_slice(s);
    }
    u64::from_le_bytes(a)
}

/// `size` bytes at `offset` of the file, or the error naming `what`.
fn range<'a>(
    bytes: &'a [u8],
    what: &'static str,
    offset: u64,
    size: u64,
) -> Result<&'a [u8], ElfError> {
    let err = ElfError::OutOfBounds {
        what,
        offset,
        size,
        file_len: bytes.len() as u64,
    };
    let end = offset.checked_add(size).ok_or(err.clone())?;
    let (Ok(o), Ok(e)) = (usize::try_from(offset), usize::try_from(end)) else {
        return Err(err);
    };
    bytes.get(o..e).ok_or(err)
}

/// `count` records of `size` bytes at `offset`.
fn table<'a>(
    bytes: &'a [u8],
    what: &'static str,
    offset: u64,
    count: u64,
    size: u64,
) -> Result<&'a [u8], ElfError> {
    let total = count.checked_mul(size).ok_or(ElfError::OutOfBounds {
        what,
        offset,
        size: u64::MAX,
        file_len: bytes.len() as u64,
    })?;
    range(bytes, what, offset, total)
}

/// The NUL-terminated name at `offset` of a string table.
fn name_at(strtab: &[u8], offset: u64) -> Result<String, ElfError> {
    let bad = ElfError::BadName {
        offset,
        table_len: strtab.len() as u64,
    };
    let start = usize::try_from(offset).map_err(|_| bad.clone())?;
    let tail = strtab.get(start..).ok_or(bad.clone())?;
    let len = tail.iter().position(|&b| b == 0).ok_or(bad)?;
    // PANIC: `len` is a position inside `tail`.
    Ok(String::from_utf8_lossy(&tail[..len]).into_owned())
}

impl<'a> Elf<'a> {
    /// Parses any ELF64 little-endian file.
    pub fn parse(bytes: &'a [u8]) -> Result<Elf<'a>, ElfError> {
        if bytes.get(..4) != Some(b"\x7fELF".as_slice()) {
            return Err(ElfError::BadMagic);
        }
        let h = range(bytes, "ELF header", 0, EHDR_SIZE)?;
        // PANIC: `h` is 64 bytes long; the identification bytes are at 4..7.
        if h[4] != 2 {
            return Err(ElfError::NotElf64(h[4]));
        }
        if h[5] != 1 {
            return Err(ElfError::NotLittleEndian(h[5]));
        }
        let version = u32_at(h, 20);
        if h[6] != 1 || version != 1 {
            return Err(ElfError::BadVersion(if version != 1 {
                version
            } else {
                u32::from(h[6])
            }));
        }
        let e_type = u16_at(h, 16);
        let machine = u16_at(h, 18);
        let entry = u64_at(h, 24);
        let phoff = u64_at(h, 32);
        let shoff = u64_at(h, 40);
        let flags = u32_at(h, 48);
        let phentsize = u16_at(h, 54);
        let phnum16 = u16_at(h, 56);
        let shentsize = u16_at(h, 58);
        let shnum16 = u16_at(h, 60);
        let shstrndx16 = u16_at(h, 62);

        // Section 0 holds the real counts when they do not fit the header (extended numbering).
        let sh0 = if shoff != 0 {
            if u64::from(shentsize) != SHDR_SIZE {
                return Err(ElfError::BadEntrySize {
                    what: "section header",
                    size: u64::from(shentsize),
                    expected: SHDR_SIZE,
                });
            }
            Some(range(bytes, "section header 0", shoff, SHDR_SIZE)?)
        } else {
            None
        };
        let shnum = match (shnum16, sh0) {
            (0, Some(s0)) => u64_at(s0, 32),
            (n, _) => u64::from(n),
        };
        let phnum = match (phnum16, sh0) {
            (PN_XNUM, Some(s0)) => u64::from(u32_at(s0, 44)),
            (n, _) => u64::from(n),
        };
        let shstrndx = match (shstrndx16, sh0) {
            (SHN_XINDEX, Some(s0)) => u32_at(s0, 40),
            (n, _) => u32::from(n),
        };

        let segments = Self::parse_segments(bytes, phoff, phnum, phentsize)?;
        let sections = if sh0.is_some() {
            Self::parse_sections(bytes, shoff, shnum, shstrndx)?
        } else {
            Vec::new()
        };
        let symbols = Self::parse_symbols(&sections)?;
        Ok(Elf {
            e_type,
            machine,
            flags,
            entry,
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

    fn parse_segments(
        bytes: &'a [u8],
        phoff: u64,
        phnum: u64,
        phentsize: u16,
    ) -> Result<Vec<Segment<'a>>, ElfError> {
        if phnum == 0 {
            return Ok(Vec::new());
        }
        if u64::from(phentsize) != PHDR_SIZE {
            return Err(ElfError::BadEntrySize {
                what: "program header",
                size: u64::from(phentsize),
                expected: PHDR_SIZE,
            });
        }
        let tab = table(bytes, "program headers", phoff, phnum, PHDR_SIZE)?;
        let mut out = Vec::with_capacity(tab.len() / PHDR_SIZE as usize);
        for (index, p) in tab.chunks_exact(PHDR_SIZE as usize).enumerate() {
            let p_type = u32_at(p, 0);
            let flags = u32_at(p, 4);
            let offset = u64_at(p, 8);
            let vaddr = u64_at(p, 16);
            let paddr = u64_at(p, 24);
            let filesz = u64_at(p, 32);
            let memsz = u64_at(p, 40);
            let align = u64_at(p, 48);
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
                range(bytes, "segment contents", offset, filesz).unwrap_or(&[])
            };
            out.push(Segment {
                p_type,
                flags,
                offset,
                vaddr,
                paddr,
                filesz,
                memsz,
                align,
                data,
            });
        }
        Ok(out)
    }

    fn parse_sections(
        bytes: &'a [u8],
        shoff: u64,
        shnum: u64,
        shstrndx: u32,
    ) -> Result<Vec<Section<'a>>, ElfError> {
        let tab = table(bytes, "section headers", shoff, shnum, SHDR_SIZE)?;
        let mut raw = Vec::with_capacity(tab.len() / SHDR_SIZE as usize);
        for s in tab.chunks_exact(SHDR_SIZE as usize) {
            let sh_type = u32_at(s, 4);
            let offset = u64_at(s, 24);
            let size = u64_at(s, 32);
            let data = if sh_type == SHT_NOBITS || sh_type == 0 {
                &[][..]
            } else {
                range(bytes, "section contents", offset, size)?
            };
            raw.push((u32_at(s, 0), s, data));
        }
        let names: Option<&[u8]> = if shstrndx == u32::from(SHN_UNDEF) {
            None
        } else {
            let t = raw
                .get(shstrndx as usize)
                .ok_or(ElfError::BadShstrndx(shstrndx))?;
            Some(t.2)
        };
        raw.iter()
            .map(|&(name_off, s, data)| {
                let name = match names {
                    Some(t) => name_at(t, u64::from(name_off))?,
                    None => String::new(),
                };
                Ok(Section {
                    name,
                    sh_type: u32_at(s, 4),
                    flags: u64_at(s, 8),
                    addr: u64_at(s, 16),
                    offset: u64_at(s, 24),
                    size: u64_at(s, 32),
                    link: u32_at(s, 40),
                    info: u32_at(s, 44),
                    addralign: u64_at(s, 48),
                    entsize: u64_at(s, 56),
                    data,
                })
            })
            .collect()
    }

    fn parse_symbols(sections: &[Section<'a>]) -> Result<Vec<Symbol>, ElfError> {
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
            out.reserve(s.data.len() / SYM_SIZE as usize);
            for e in s.data.chunks_exact(SYM_SIZE as usize) {
                out.push(Symbol {
                    name: name_at(strtab.data, u64::from(u32_at(e, 0)))?,
                    info: e.get(4).copied().unwrap_or(0),
                    shndx: u16_at(e, 6),
                    value: u64_at(e, 8),
                    size: u64_at(e, 16),
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
