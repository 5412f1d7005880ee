//! Loading a device ELF into a new process's memory (at DPA_PROCESS creation).
//!
//! The image is parsed with the driver's parser (`mlx5_dpa::image::elf`). Every `PT_LOAD`
//! segment is copied to its link address: read-only / executable segments into the text
//! window, writable ones into the data window (the start of DUMEM); `.bss` (memory size past
//! the file size) is zero because the memory is fresh. Anything else is refused with a named
//! check: bytes that are no ELF64 little-endian executable ([`check::ELF_MALFORMED`]), another
//! machine ([`check::ELF_NOT_RISCV`]), a segment outside both windows or with permissions
//! that do not fit its window ([`check::ELF_BAD_SEGMENT`]), no executable segment at all
//! ([`check::ELF_NO_TEXT`]), more memory than the process may have
//! ([`check::DPA_MEMORY_EXHAUSTED`]).

use mlx5_dpa::image::elf::{Elf, ElfError};

use crate::check::{self, Check};
use crate::state::dpa::map;
use crate::state::dpa::memory::ProcessMem;

/// A loaded image.
#[derive(Debug)]
pub(crate) struct Loaded {
    pub(crate) mem: ProcessMem,
    /// Bytes of DUMEM the data segments occupy (from the DUMEM base, page rounded).
    pub(crate) data_span: u64,
    /// Bytes of DPA memory the image uses (text and data, page rounded), for accounting.
    pub(crate) image_bytes: u64,
}

fn round_page(v: u64) -> u64 {
    v.div_ceil(4096).saturating_mul(4096)
}

/// Parses `bytes`, checks its segments and loads them into fresh process memory with a DUMEM
/// window of `dumem_len` bytes and `slots` thread slots.
pub(crate) fn load(bytes: &[u8], dumem_len: u64, slots: u32) -> Result<Loaded, Check> {
    let elf = Elf::parse_device(bytes).map_err(|e| match e {
        ElfError::NotRiscv(_) | ElfError::NotLittleEndian(_) | ElfError::NotElf64(_) => {
            check::ELF_NOT_RISCV
        }
        _ => check::ELF_MALFORMED,
    })?;
    // The parser checked that `vaddr + memsz` does not wrap and `filesz <= memsz`.
    let spans = |s: &mlx5_dpa::image::elf::Segment<'_>| (s.vaddr, s.vaddr.saturating_add(s.memsz));
    let layout = map::LINK_LAYOUTS
        .into_iter()
        .find(|l| {
            elf.load_segments()
                .filter(|s| s.memsz > 0)
                .map(spans)
                .all(|(v, e)| l.in_text(v, e) || l.in_dumem(v, e))
        })
        .ok_or(check::ELF_BAD_SEGMENT)?;
    let mut text_end = 0u64;
    let mut data_end = 0u64;
    let mut has_text = false;
    for s in elf.load_segments() {
        if s.memsz == 0 {
            continue;
        }
        let (vaddr, end) = spans(s);
        if layout.in_text(vaddr, end) {
            if s.writable() {
                return Err(check::ELF_BAD_SEGMENT);
            }
            has_text |= s.executable();
            text_end = text_end.max(end - layout.text_base);
        } else {
            if s.executable() {
                return Err(check::ELF_BAD_SEGMENT);
            }
            data_end = data_end.max(end - layout.dumem_base);
        }
    }
    if !has_text {
        return Err(check::ELF_NO_TEXT);
    }
    let text_span = round_page(text_end);
    let data_span = round_page(data_end);
    if data_span > dumem_len || dumem_len > layout.dumem_max || text_span > map::TEXT_ALLOC_MAX {
        return Err(check::DPA_MEMORY_EXHAUSTED);
    }
    let mem = ProcessMem::new(layout, text_span, dumem_len, slots)
        .map_err(|_| check::DPA_MEMORY_EXHAUSTED)?;
    for s in elf.load_segments().filter(|s| s.memsz > 0) {
        let ok = if layout.in_dumem(s.vaddr, s.vaddr.saturating_add(s.memsz)) {
            mem.load_dumem(s.vaddr - layout.dumem_base, s.data)
        } else {
            mem.load_text(s.vaddr - layout.text_base, s.data)
        };
        if !ok {
            // The segment's file bytes do not fit its memory size: the parser refuses that,
            // so this is a malformed image whatever happened.
            return Err(check::ELF_MALFORMED);
        }
    }
    mem.set_dumem_limit(data_span);
    Ok(Loaded {
        mem,
        data_span,
        image_bytes: text_span + data_span,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn image() -> Vec<u8> {
        crate::testing::dpa_rig::elf::ElfSpec::new(vec![0x13, 0, 0, 0, 0x67, 0x80, 0, 0])
            .symbol("f", 0)
            .data(vec![7; 16], 64)
            .build()
    }

    #[test]
    fn loads_segments_at_their_addresses() {
        let l = load(&image(), 1 << 20, 2).unwrap();
        assert_eq!((l.data_span, l.image_bytes), (4096, 8192));
        let mut b = [0u8; 8];
        l.mem.read(map::TEXT_BASE, &mut b).unwrap();
        assert_eq!(b, [0x13, 0, 0, 0, 0x67, 0x80, 0, 0]);
        let mut d = [0u8; 20];
        l.mem.read(map::DUMEM_BASE + 4, &mut d).unwrap();
        assert_eq!(&d[..12], &[7; 12]);
        assert_eq!(&d[12..], &[0; 8], ".bss is zero");
        assert_eq!(
            load(&image(), 2048, 2).unwrap_err(),
            check::DPA_MEMORY_EXHAUSTED
        );
    }

    proptest! {
        /// Corrupted images give a check, never a panic.
        #[test]
        fn corrupted_images_never_panic(edits in prop::collection::vec((0usize..1024, any::<u8>()), 1..8)) {
            let mut img = image();
            for (at, v) in edits {
                let n = img.len();
                img[at % n] = v;
            }
            let _ = load(&img, 1 << 20, 1);
        }
    }
}
