//! The memory of a DPA process: text, DUMEM (data, heap, DPA_MEM blocks) and the thread slots
//! (context page and stack of each thread).
//!
//! Each area is an anonymous private mapping made with `MAP_NORESERVE`, so a process's whole
//! DUMEM window can be reserved up front and only the pages a program (or a queue) touches
//! cost memory. The memory is shared by several parties at once, none of which holds a Rust
//! reference into it:
//! - DPA harts on the worker threads, through `riscv::RamRegion`s (relaxed atomic loads and
//!   stores of the access size, atomic read-modify-writes for AMOs);
//! - the datapath's DMA (a `Dma` marked atomic: byte-wise relaxed atomics);
//! - firmware (ELF loading, thread contexts) and the model's debug access, through
//!   [`ProcessMem::read`] / [`ProcessMem::write`] (byte-wise relaxed atomics).
//!
//! So every access is atomic. Accesses of different sizes to the same bytes from different
//! threads are "mixed-size" atomics, whose ordering is the hardware's guarantee (as on the real
//! DPA), not Rust's.

use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};

use super::map;
use crate::riscv::{Perms, RamRegion};

/// An anonymous, zeroed, page-aligned mapping that commits pages only when touched.
pub(crate) struct Mapping {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is owned by this struct (made in `new`, unmapped in `drop`) and only
// accessed through raw pointers with atomic operations; it has no thread affinity.
unsafe impl Send for Mapping {}
// SAFETY: as above: shared access is atomic by construction (see the module docs).
unsafe impl Sync for Mapping {}

impl Mapping {
    /// `len` bytes (rounded up to 4 KiB; at least one page).
    pub(crate) fn new(len: u64) -> Result<Mapping, nix::errno::Errno> {
        let len = usize::try_from(len.max(1).div_ceil(4096) * 4096)
            .map_err(|_| nix::errno::Errno::ENOMEM)?;
        let nz = std::num::NonZeroUsize::new(len).ok_or(nix::errno::Errno::EINVAL)?;
        use nix::sys::mman::{MapFlags, ProtFlags};
        // SAFETY: an anonymous private mapping creates fresh memory and aliases nothing.
        let ptr = unsafe {
            nix::sys::mman::mmap_anonymous(
                None,
                nz,
                ProtFlags::PROT_READ | ProtFlags::PROT_WRITE,
                MapFlags::MAP_PRIVATE | MapFlags::MAP_NORESERVE,
            )?
        };
        Ok(Mapping {
            ptr: ptr.cast(),
            len,
        })
    }

    pub(crate) fn len(&self) -> u64 {
        self.len as u64
    }

    pub(crate) fn addr(&self) -> usize {
        self.ptr.as_ptr() as usize
    }

    fn byte(&self, off: u64) -> Option<&AtomicU8> {
        if off >= self.len as u64 {
            return None;
        }
        // SAFETY: `off` is inside the mapping, which lives as long as `self`; the byte is only
        // ever accessed atomically (module docs), and `AtomicU8` has no alignment requirement.
        Some(unsafe { AtomicU8::from_ptr(self.ptr.as_ptr().add(off as usize)) })
    }

    /// Copies bytes out from `off`; `false` (nothing read) when out of range.
    pub(crate) fn read(&self, off: u64, buf: &mut [u8]) -> bool {
        if off
            .checked_add(buf.len() as u64)
            .is_none_or(|e| e > self.len as u64)
        {
            return false;
        }
        for (i, b) in buf.iter_mut().enumerate() {
            if let Some(c) = self.byte(off + i as u64) {
                *b = c.load(Ordering::Relaxed);
            }
        }
        true
    }

    /// Copies bytes in at `off`; `false` (nothing written) when out of range.
    pub(crate) fn write(&self, off: u64, data: &[u8]) -> bool {
        if off
            .checked_add(data.len() as u64)
            .is_none_or(|e| e > self.len as u64)
        {
            return false;
        }
        for (i, b) in data.iter().enumerate() {
            if let Some(c) = self.byte(off + i as u64) {
                c.store(*b, Ordering::Relaxed);
            }
        }
        true
    }

    /// `len` bytes from `off` as a hart-visible region at guest address `base`.
    ///
    /// # Safety
    /// `self` must outlive the use of the region (the `run` call it is handed to).
    unsafe fn region(&self, base: u64, off: u64, len: u64, perms: Perms) -> Option<RamRegion> {
        if off.checked_add(len)? > self.len as u64 || len == 0 {
            return None;
        }
        // SAFETY: `off .. off + len` is inside the mapping (checked), which the caller keeps
        // alive; every other access to it is atomic (module docs).
        let ptr = unsafe { NonNull::new_unchecked(self.ptr.as_ptr().add(off as usize)) };
        // SAFETY: as above; the mapping is readable and writable whatever the guest perms.
        unsafe { RamRegion::new(base, len, ptr, perms) }.ok()
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: mapped in `new` with this length and unmapped once; whoever could still use
        // the memory holds the `Arc<ProcessMem>` that owns this mapping.
        let _ = unsafe { nix::sys::mman::munmap(self.ptr.cast(), self.len) };
    }
}

/// One area of a process's address space (see the address map in `dpa/mod.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Area {
    /// Read and execute.
    Text,
    /// Read and write (data, heap, DPA_MEM blocks).
    Dumem,
    /// The 48-byte context of the thread in `slot` (its 4 KiB page), read and write.
    Context(u32),
    /// The stack of the thread in `slot`, read and write.
    Stack(u32),
}

impl Area {
    pub(crate) fn perms(self) -> Perms {
        match self {
            Area::Text => Perms::RX,
            _ => Perms::RW,
        }
    }
}

/// Text versions: unique over every process the model loads, unlike process ids (which
/// firmware reuses), so a decoded-instruction cache keyed by one never serves another
/// program, not even one loaded later under the same process id.
static NEXT_TEXT_VERSION: AtomicU64 = AtomicU64::new(1);

fn new_text_version() -> u64 {
    NEXT_TEXT_VERSION.fetch_add(1, Ordering::Relaxed)
}

/// The memory of one process. Shared (`Arc`) by firmware, the DUMEM registration and every
/// running activation of the process, so it outlives the process object while in use.
pub(crate) struct ProcessMem {
    /// Where text and DUMEM start (how the program was linked).
    layout: map::LinkLayout,
    text: Mapping,
    /// Bytes of the text window holding segments (the rest of the mapping is padding).
    pub(crate) text_span: u64,
    dumem: Mapping,
    /// Bytes of DUMEM the program may touch: data, heap and DPA_MEM blocks allocated so far.
    dumem_limit: AtomicU64,
    slots: Mapping,
    pub(crate) slot_count: u32,
    /// The version of the text: a fresh [`new_text_version`] at creation and whenever text
    /// changes after loading (debug writes), so harts drop their decoded-instruction caches.
    text_version: AtomicU64,
    /// Compiled code of the text (feature `jit`), for the text version it was made for:
    /// every EU running the process shares it (text is read-only to the harts).
    #[cfg(feature = "jit")]
    jit_share: std::sync::Mutex<Option<(u64, crate::riscv::JitShare)>>,
}

impl std::fmt::Debug for ProcessMem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProcessMem")
            .field("text_span", &self.text_span)
            .field("dumem", &self.dumem.len())
            .field("dumem_limit", &self.dumem_limit())
            .field("slot_count", &self.slot_count)
            .finish_non_exhaustive()
    }
}

impl crate::mem::DumemBacking for ProcessMem {
    fn allocated(&self) -> u64 {
        self.dumem_limit()
    }
}

impl ProcessMem {
    /// Fresh, zeroed memory: `text_span` bytes of text, a DUMEM window of `dumem_len` bytes
    /// and `slot_count` thread slots.
    pub(crate) fn new(
        layout: map::LinkLayout,
        text_span: u64,
        dumem_len: u64,
        slot_count: u32,
    ) -> Result<ProcessMem, nix::errno::Errno> {
        Ok(ProcessMem {
            layout,
            text: Mapping::new(text_span)?,
            text_span,
            dumem: Mapping::new(dumem_len)?,
            dumem_limit: AtomicU64::new(0),
            slots: Mapping::new(u64::from(slot_count) * map::SLOT_BACKING)?,
            slot_count,
            text_version: AtomicU64::new(new_text_version()),
            #[cfg(feature = "jit")]
            jit_share: std::sync::Mutex::new(None),
        })
    }

    /// DPA address of the text's first byte.
    pub(crate) fn text_base(&self) -> u64 {
        self.layout.text_base
    }

    /// DPA address of DUMEM offset 0 (the data segments' window).
    pub(crate) fn dumem_base(&self) -> u64 {
        self.layout.dumem_base
    }

    /// Size of the DUMEM window (the most DUMEM can grow to).
    pub(crate) fn dumem_len(&self) -> u64 {
        self.dumem.len()
    }

    /// Host address of DUMEM offset 0 (for its registration as a UMEM).
    pub(crate) fn dumem_host_addr(&self) -> usize {
        self.dumem.addr()
    }

    pub(crate) fn dumem_limit(&self) -> u64 {
        self.dumem_limit.load(Ordering::Acquire)
    }

    /// Makes DUMEM below `limit` bytes (rounded up to a page) visible to the program
    /// (grows only).
    pub(crate) fn set_dumem_limit(&self, limit: u64) {
        let limit = limit.div_ceil(4096).saturating_mul(4096);
        self.dumem_limit
            .fetch_max(limit.min(self.dumem.len()), Ordering::AcqRel);
    }

    /// Gives DUMEM bytes `off .. off + len` back to the system: they read as zero again.
    /// Only whole pages inside the range are discarded (blocks are page aligned).
    pub(crate) fn discard(&self, off: u64, len: u64) {
        let start = off.div_ceil(4096) * 4096;
        let end = off.saturating_add(len).min(self.dumem.len()) / 4096 * 4096;
        if end <= start {
            return;
        }
        let Some(ptr) = NonNull::new(self.dumem.ptr.as_ptr().wrapping_add(start as usize)) else {
            return;
        };
        // SAFETY: `start .. end` is a page-aligned range inside the private anonymous mapping
        // this struct owns; MADV_DONTNEED replaces its pages with zero-fill pages, which is
        // what a write of zeros by another agent would do. A hart still using a freed block
        // (a program bug) reads zeros or its own later stores; nothing else refers to it.
        let r = unsafe {
            nix::sys::mman::madvise(
                ptr.cast(),
                (end - start) as usize,
                nix::sys::mman::MmapAdvise::MADV_DONTNEED,
            )
        };
        if let Err(e) = r {
            tracing::warn!(target: "mlx5_sim::dpa", "cannot discard freed DPA memory: {e}");
        }
    }

    /// The compiled-code share of text version `version`, if one was set.
    #[cfg(feature = "jit")]
    pub(crate) fn jit_share(&self, version: u64) -> Option<crate::riscv::JitShare> {
        match &*mlx5_dpa::sync::lock(&self.jit_share) {
            Some((v, s)) if *v == version => Some(s.clone()),
            _ => None,
        }
    }

    /// Sets the compiled-code share of text version `version`.
    #[cfg(feature = "jit")]
    pub(crate) fn set_jit_share(&self, version: u64, share: crate::riscv::JitShare) {
        *mlx5_dpa::sync::lock(&self.jit_share) = Some((version, share));
    }

    pub(crate) fn text_version(&self) -> u64 {
        self.text_version.load(Ordering::Acquire)
    }

    /// The area holding `addr` and the offset inside its backing mapping.
    pub(crate) fn locate(&self, addr: u64) -> Option<(Area, u64)> {
        if let Some(off) = addr.checked_sub(self.layout.text_base) {
            if off < self.text_span {
                return Some((Area::Text, off));
            }
        }
        if let Some(off) = addr.checked_sub(self.layout.dumem_base) {
            if off < self.dumem_limit() {
                return Some((Area::Dumem, off));
            }
        }
        let off = addr.checked_sub(map::SLOTS_BASE)?;
        let slot = off / map::SLOT_STRIDE;
        if slot >= u64::from(self.slot_count) {
            return None;
        }
        let within = off % map::SLOT_STRIDE;
        let backing = slot * map::SLOT_BACKING;
        if within < map::CONTEXT_PAGE {
            Some((Area::Context(slot as u32), backing + within))
        } else if (map::STACK_LO_OFFSET..map::STACK_TOP_OFFSET).contains(&within) {
            Some((
                Area::Stack(slot as u32),
                backing + map::CONTEXT_PAGE + (within - map::STACK_OFFSET),
            ))
        } else {
            // The guard between a context page and its stack, or the unmapped rest of the slot.
            None
        }
    }

    fn mapping(&self, area: Area) -> &Mapping {
        match area {
            Area::Text => &self.text,
            Area::Dumem => &self.dumem,
            Area::Context(_) | Area::Stack(_) => &self.slots,
        }
    }

    /// The hart-visible region around `addr` (the whole area it belongs to).
    ///
    /// # Safety
    /// `self` must outlive the use of the region (the `run` call it is handed to).
    pub(crate) unsafe fn ram_region(&self, addr: u64) -> Option<RamRegion> {
        let (area, _) = self.locate(addr)?;
        let (base, off, len) = match area {
            Area::Text => (self.layout.text_base, 0, self.text_span.div_ceil(8) * 8),
            Area::Dumem => (self.layout.dumem_base, 0, self.dumem_limit()),
            Area::Context(s) => (
                map::slot_base(s),
                u64::from(s) * map::SLOT_BACKING,
                map::CONTEXT_PAGE,
            ),
            Area::Stack(s) => (
                map::stack_lo(s),
                u64::from(s) * map::SLOT_BACKING
                    + map::CONTEXT_PAGE
                    + (map::STACK_LO_OFFSET - map::STACK_OFFSET),
                map::STACK_SIZE,
            ),
        };
        let len = len.min(self.mapping(area).len().saturating_sub(off));
        // SAFETY: forwarded: the caller keeps `self` (hence the mapping) alive.
        unsafe { self.mapping(area).region(base, off, len, area.perms()) }
    }

    /// Copies `buf.len()` bytes from DPA address `addr`. Returns the first address that is
    /// not mapped, if any (nothing is read then).
    pub(crate) fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), u64> {
        self.check_span(addr, buf.len() as u64)?;
        // Area by area (most accesses lie in one): each area is one run of its mapping.
        let mut done = 0;
        while done < buf.len() {
            let a = addr + done as u64;
            let (area, off) = self.locate(a).ok_or(a)?;
            let n = self.run_in(area, a, buf.len() - done);
            self.mapping(area).read(off, &mut buf[done..done + n]);
            done += n;
        }
        Ok(())
    }

    /// Copies `data` to DPA address `addr`, whatever the area's guest permissions (firmware and
    /// debug access). Returns the first unmapped address, if any (nothing is written then).
    pub(crate) fn write(&self, addr: u64, data: &[u8]) -> Result<(), u64> {
        // Most writes (a context field, a word) lie in one area: one look-up.
        if let Some((area, off)) = self.locate(addr) {
            if !data.is_empty() && self.run_in(area, addr, data.len()) == data.len() {
                self.mapping(area).write(off, data);
                if area == Area::Text {
                    self.text_version
                        .store(new_text_version(), Ordering::Release);
                }
                return Ok(());
            }
        }
        self.check_span(addr, data.len() as u64)?;
        let mut text = false;
        let mut done = 0;
        while done < data.len() {
            let a = addr + done as u64;
            let (area, off) = self.locate(a).ok_or(a)?;
            let n = self.run_in(area, a, data.len() - done);
            text |= area == Area::Text;
            self.mapping(area).write(off, &data[done..done + n]);
            done += n;
        }
        if text {
            self.text_version
                .store(new_text_version(), Ordering::Release);
        }
        Ok(())
    }

    /// Loads text bytes at load time (before any hart runs).
    pub(crate) fn load_text(&self, off: u64, data: &[u8]) -> bool {
        self.text.write(off, data)
    }

    /// Loads DUMEM bytes at load time.
    pub(crate) fn load_dumem(&self, off: u64, data: &[u8]) -> bool {
        self.dumem.write(off, data)
    }

    /// Little-endian value of `size` bytes at `addr` (firmware use: thread contexts).
    pub(crate) fn read_le(&self, addr: u64, size: usize) -> Option<u64> {
        let mut b = [0u8; 8];
        self.read(addr, &mut b[..size.min(8)]).ok()?;
        Some(u64::from_le_bytes(b))
    }

    /// Writes the low `size` bytes of `v`, little-endian (firmware use: thread contexts).
    pub(crate) fn write_le(&self, addr: u64, size: usize, v: u64) -> bool {
        self.write(addr, &v.to_le_bytes()[..size.min(8)]).is_ok()
    }

    /// Every address of `addr .. addr + len` must be mapped: checks the ends and every area
    /// boundary in between by walking areas.
    fn check_span(&self, addr: u64, len: u64) -> Result<(), u64> {
        if len == 0 {
            return Ok(());
        }
        let end = addr.checked_add(len).ok_or(addr)?;
        let mut a = addr;
        while a < end {
            let (area, _) = self.locate(a).ok_or(a)?;
            // Jump to the end of this area.
            a = self.area_end(area);
        }
        Ok(())
    }

    /// The first address after `area`.
    fn area_end(&self, area: Area) -> u64 {
        match area {
            Area::Text => self.layout.text_base + self.text_span,
            Area::Dumem => self.layout.dumem_base + self.dumem_limit(),
            Area::Context(s) => map::slot_base(s) + map::CONTEXT_PAGE,
            Area::Stack(s) => map::stack_top(s),
        }
    }

    /// How many of `len` bytes from `addr` (inside `area`) lie in `area`: an area is one
    /// run of its mapping, so they are that many bytes from the offset `locate` gave.
    fn run_in(&self, area: Area, addr: u64, len: usize) -> usize {
        let left = self.area_end(area).saturating_sub(addr);
        usize::try_from(left).map_or(len, |l| l.min(len)).max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn areas_and_guards() {
        let m = ProcessMem::new(map::CURRENT_LAYOUT, 0x2000, 0x10_0000, 4).unwrap();
        m.set_dumem_limit(0x3000);
        assert_eq!(m.locate(map::TEXT_BASE), Some((Area::Text, 0)));
        assert_eq!(m.locate(map::TEXT_BASE + 0x2000), None);
        assert_eq!(
            m.locate(map::DUMEM_BASE + 0x2fff),
            Some((Area::Dumem, 0x2fff))
        );
        assert_eq!(m.locate(map::DUMEM_BASE + 0x3000), None);
        let s1 = map::slot_base(1);
        assert_eq!(m.locate(s1), Some((Area::Context(1), map::SLOT_BACKING)));
        assert_eq!(m.locate(s1 + map::CONTEXT_PAGE), None, "guard page");
        assert_eq!(
            m.locate(map::stack_lo(1) - 1),
            None,
            "guard below the stack"
        );
        assert_eq!(
            m.locate(map::stack_lo(1)),
            Some((
                Area::Stack(1),
                map::SLOT_BACKING + map::CONTEXT_PAGE + map::STACK_LO_OFFSET - map::STACK_OFFSET
            ))
        );
        assert_eq!(
            map::stack_top(1) - map::stack_lo(1),
            8184,
            "the seed's stack size"
        );
        assert!(m.locate(map::stack_top(1) - 1).is_some());
        assert_eq!(m.locate(map::stack_top(1)), None, "nothing above the stack");
        assert_eq!(m.locate(map::slot_base(4)), None);
        m.write(map::DUMEM_BASE + 0x10, b"hello").unwrap();
        let mut b = [0u8; 5];
        m.read(map::DUMEM_BASE + 0x10, &mut b).unwrap();
        assert_eq!(&b, b"hello");
        assert_eq!(
            m.read(map::DUMEM_BASE + 0x2ffe, &mut b),
            Err(map::DUMEM_BASE + 0x3000)
        );
        // Whole runs in one area: a stack's last word, a context page's.
        let top = map::stack_top(1) - 8;
        m.write(top, &0x1122_3344_5566_7788u64.to_le_bytes())
            .unwrap();
        assert_eq!(m.read_le(top, 8), Some(0x1122_3344_5566_7788));
        let last = s1 + map::CONTEXT_PAGE - 4;
        assert!(m.write_le(last, 4, 0xa1b2_c3d4));
        assert_eq!(m.read_le(last, 4), Some(0xa1b2_c3d4));
        // A run into the guard after it: refused whole, the bytes before it untouched.
        assert_eq!(
            m.write(last + 2, &[9; 4]),
            Err(s1 + map::CONTEXT_PAGE),
            "into the guard page"
        );
        assert_eq!(m.read_le(last, 4), Some(0xa1b2_c3d4));
        let g = m.text_version();
        m.write(map::TEXT_BASE, &[1]).unwrap();
        assert_ne!(m.text_version(), g);
        // Another process's text never has a version this one had.
        let other = ProcessMem::new(map::CURRENT_LAYOUT, 0x1000, 0x3000, 4).unwrap();
        assert!(other.text_version() != g && other.text_version() != m.text_version());
    }
}
