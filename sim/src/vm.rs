//! The bare machine of a device ELF as the driver reads it (`mlx5_dpa::image::elf`): the
//! driver's parser checks the file and names what is wrong with it (which table, at which
//! offset), then its loadable segments, entry and symbols become the engine's `Image`. What
//! `mlx5-dpa vm run` loads.

use mlx5_dpa::image::elf::{Elf, ElfError};
use mlx5_dpa_rv::bare::{BareError, BareMachine, Image, LoadSegment};
use mlx5_dpa_rv::Perms;

/// Why a device ELF cannot become a bare machine.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum VmLoadError {
    #[error(transparent)]
    Elf(#[from] ElfError),
    #[error(transparent)]
    Bare(#[from] BareError),
}

/// The engine's image of a parsed ELF: its `PT_LOAD` segments with their permissions, its
/// entry, and its defined, named symbols.
pub fn image<'a>(elf: &Elf<'a>) -> Image<'a> {
    Image {
        entry: elf.entry,
        segments: elf
            .load_segments()
            .map(|s| LoadSegment {
                vaddr: s.vaddr,
                memsz: s.memsz,
                data: s.data,
                perms: Perms::new(s.readable(), s.writable(), s.executable()),
            })
            .collect(),
        symbols: elf
            .symbols()
            .iter()
            .filter(|s| s.is_defined() && !s.name.is_empty())
            .map(|s| (s.name.clone(), s.value))
            .collect(),
    }
}

/// Parses `bytes` as a RISC-V executable and loads it into a bare machine.
///
/// # Errors
/// The driver's parser refused the file, or the machine its segments.
pub fn machine(bytes: &[u8]) -> Result<BareMachine, VmLoadError> {
    let elf = Elf::parse_device(bytes)?;
    Ok(BareMachine::from_image(&image(&elf))?)
}
