//! In-place edits of a host ELF's section headers, to make the malformed packagings the DPA
//! application tests feed the parser.

use mlx5_dpa::dpa::elf::Elf;

/// File offset of the section header of `name`, and of its name in `.shstrtab`.
pub fn header_of(bytes: &[u8], name: &str) -> (usize, usize) {
    let elf = Elf::parse(bytes).unwrap();
    let shoff = u64::from_le_bytes(bytes[0x28..0x30].try_into().unwrap()) as usize;
    let shstrndx = u16::from_le_bytes(bytes[0x3e..0x40].try_into().unwrap()) as usize;
    let strtab = elf.sections()[shstrndx].offset as usize;
    let i = elf.sections().iter().position(|s| s.name == name).unwrap();
    let h = shoff + i * 64;
    let n = u32::from_le_bytes(bytes[h..h + 4].try_into().unwrap()) as usize;
    (h, strtab + n)
}

/// Renames a section in place (same length).
pub fn rename(bytes: &mut [u8], from: &str, to: &str) {
    assert_eq!(from.len(), to.len());
    let (_, n) = header_of(bytes, from);
    bytes[n..n + to.len()].copy_from_slice(to.as_bytes());
}
