//! Decoding a DPA process coredump (DPA_PROCESS_COREDUMP, opcode 0xb2b).
//!
//! The command and the image format are **provisional**: the opcode is public (docs/sources.md §3)
//! but neither its layout nor the dump format is. The format decoded here is the one the
//! device model writes (`mlx5_sim`, docs/model-dpa.md), declared as layouts in
//! [`crate::mlx5::layouts::dpa`]: a [`dpa_coredump`](crate::mlx5::layouts::dpa_coredump)
//! header, `num_regions` [`dpa_coredump_region`](crate::mlx5::layouts::dpa_coredump_region)
//! entries, then the stack bytes. Everything is read through the layouts, so a correction of
//! the format happens there.
//!
//! ```
//! use mlx5_dpa::dpa::coredump::{Coredump, CoredumpError};
//! assert!(matches!(Coredump::parse(&[0u8; 8]), Err(CoredumpError::TooShort { .. })));
//! ```

use crate::mlx5::layout::{Layout, View};
use crate::mlx5::layouts::{
    dpa_coredump as h, dpa_coredump_region as r, DPA_COREDUMP_MAGIC, DPA_COREDUMP_VERSION,
};

/// Why an image could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CoredumpError {
    /// The image ends before a part its header announces.
    #[error("coredump image of {got} bytes is shorter than the {need} bytes its {what} needs")]
    TooShort {
        what: &'static str,
        need: usize,
        got: usize,
    },
    /// The image does not start with "DPAC".
    #[error("not a DPA coredump (magic {0:#010x})")]
    BadMagic(u32),
    /// A format version this decoder does not know.
    #[error("coredump format version {0} is not supported (this decoder reads 1)")]
    UnsupportedVersion(u16),
    /// `header_size` is smaller than the version-1 header.
    #[error("coredump header_size {0} is smaller than the version-1 header")]
    BadHeaderSize(u16),
}

/// What kind of access faulted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    Fetch,
    Load,
    Store,
    Other(u8),
}

/// Why a memory access failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemError {
    /// Nothing is mapped at the address in this process.
    Unmapped,
    /// The region does not allow the access (store to text, fetch from data, load from an
    /// outbox page).
    Denied,
    /// A device register accessed with the wrong size or alignment.
    Misaligned,
    /// A device register refused the access; the code names the reason (the model's
    /// `dpa::device_code`, e.g. a window used without an mkey).
    Device(u32),
    Other(u8),
}

/// Why the process stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cause {
    /// The activation exceeded its instruction budget.
    Watchdog,
    /// A memory access failed.
    MemoryFault {
        access: Access,
        size: u8,
        error: MemError,
    },
    /// An instruction the DPA does not implement (its encoding is in [`Coredump::insn`]).
    IllegalInstruction,
    /// A jump or branch to an address that is not 2-byte aligned ([`Coredump::fault_addr`]).
    MisalignedTarget,
    /// An `ebreak`.
    Ebreak,
    /// An `ecall` whose number (`a7`, all 64 bits) the RTOS does not know.
    UnknownRtosCall { number: u64 },
    /// A memory access below the thread's stack, in the guard under it: the thread outgrew its
    /// stack (8184 bytes on the BlueField-3 DPA). [`Coredump::fault_addr`] is the address.
    StackOverflow { access: Access, size: u8 },
    /// A FlexIO-OS call (`a7`) the RTOS knows refused its arguments, and the process crashed
    /// as FlexIO documents (e.g. `flexio_dev_nic_counters_config` with an unknown counter id).
    /// `reason` is [`Coredump::device_code`] (the model's `dpa::device_code::NIC_COUNTERS_*`).
    RtosCallRefused { number: u64, reason: u32 },
    /// A cause this decoder does not know.
    Other(u8),
}

/// "an 8-byte", "an 11-byte", "a 4-byte".
fn article(size: u8) -> &'static str {
    if matches!(size, 8 | 11 | 18) || (80..90).contains(&size) {
        "an"
    } else {
        "a"
    }
}

impl std::fmt::Display for Cause {
    /// A sentence a person reads (`{:?}` keeps the enum's shape).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let access = |a: &Access| match a {
            Access::Fetch => "instruction fetch".to_string(),
            Access::Load => "load".to_string(),
            Access::Store => "store".to_string(),
            Access::Other(x) => format!("access of kind {x}"),
        };
        match self {
            Cause::Watchdog => write!(f, "the watchdog: the activation ran past its budget"),
            Cause::MemoryFault {
                access: a,
                size,
                error,
            } => {
                let why = match error {
                    MemError::Unmapped => "nothing is mapped there".to_string(),
                    MemError::Denied => "the region does not allow it".to_string(),
                    MemError::Misaligned => "a device register's size or alignment".to_string(),
                    MemError::Device(code) => {
                        format!("a device register refused it (reason {code:#x})")
                    }
                    MemError::Other(x) => format!("memory error {x}"),
                };
                write!(
                    f,
                    "{} {size}-byte {} failed: {why}",
                    article(*size),
                    access(a)
                )
            }
            Cause::IllegalInstruction => write!(f, "an illegal instruction"),
            Cause::MisalignedTarget => write!(f, "a jump to an address not 2-byte aligned"),
            Cause::Ebreak => write!(f, "an ebreak"),
            Cause::UnknownRtosCall { number } => write!(f, "an unknown OS call (a7 = {number:#x})"),
            Cause::StackOverflow { access: a, size } => write!(
                f,
                "a stack overflow: {} {size}-byte {} in the guard below the thread's stack",
                article(*size),
                access(a)
            ),
            Cause::RtosCallRefused { number, reason } => write!(
                f,
                "OS call {number:#x} refused its arguments (reason {reason:#x})"
            ),
            Cause::Other(x) => write!(f, "cause {x} (not known to this decoder)"),
        }
    }
}

/// Access rights of a region.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Perms {
    pub read: bool,
    pub write: bool,
    pub execute: bool,
    /// Device registers (outbox, window), not memory.
    pub mmio: bool,
}

impl Perms {
    fn from_bits(b: u8) -> Perms {
        Perms {
            read: b & 1 != 0,
            write: b & 2 != 0,
            execute: b & 4 != 0,
            mmio: b & 8 != 0,
        }
    }
}

impl std::fmt::Display for Perms {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let c = |on: bool, ch: char| if on { ch } else { '-' };
        write!(
            f,
            "{}{}{}{}",
            c(self.read, 'r'),
            c(self.write, 'w'),
            c(self.execute, 'x'),
            c(self.mmio, 'm')
        )
    }
}

/// What a region holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RegionKind {
    Text,
    Data,
    Heap,
    DpaMem,
    Stack,
    ThreadContext,
    Outbox,
    Window,
    WindowConfig,
    Other(u8),
}

impl RegionKind {
    fn from_code(c: u8) -> RegionKind {
        match c {
            1 => RegionKind::Text,
            2 => RegionKind::Data,
            3 => RegionKind::Heap,
            4 => RegionKind::DpaMem,
            5 => RegionKind::Stack,
            6 => RegionKind::ThreadContext,
            7 => RegionKind::Outbox,
            8 => RegionKind::Window,
            9 => RegionKind::WindowConfig,
            o => RegionKind::Other(o),
        }
    }
}

/// One mapped region of the process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Region {
    /// DPA virtual address.
    pub base: u64,
    pub size: u64,
    pub perms: Perms,
    pub kind: RegionKind,
    /// The object the region belongs to (DPA_MEM, DPA_OUTBOX, DPA_WINDOW, DPA_THREAD), 0 for
    /// text, data and heap.
    pub obj_id: u32,
}

impl Region {
    /// Whether `addr` lies inside the region.
    pub fn contains(&self, addr: u64) -> bool {
        addr >= self.base && addr - self.base < self.size
    }
}

/// A decoded coredump.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Coredump {
    pub version: u16,
    pub cause: Cause,
    /// The EU the activation ran on.
    pub eu: u16,
    pub dpa_process_id: u32,
    pub dpa_thread_id: u32,
    /// The faulting instruction (for the watchdog: the next instruction).
    pub pc: u64,
    /// The failed access's address or the bad jump target; 0 otherwise.
    pub fault_addr: u64,
    /// Raw encoding of an illegal instruction; 0 otherwise.
    pub insn: u32,
    /// Device register reason or RTOS call number, see [`Cause`].
    pub device_code: u32,
    /// Instructions the activation retired.
    pub instret: u64,
    /// The thread's activation number (1 = its first).
    pub activation: u64,
    /// The process's error syndrome.
    pub error_syndrome: u32,
    /// x0..x31.
    pub gpr: [u64; 32],
    pub regions: Vec<Region>,
    /// The process had more regions than the image lists.
    pub regions_truncated: bool,
    /// DPA address of `stack[0]`.
    pub stack_addr: u64,
    /// Stack bytes from `sp` upwards.
    pub stack: Vec<u8>,
}

/// ABI names of x0..x31.
pub const GPR_NAMES: [&str; 32] = [
    "zero", "ra", "sp", "gp", "tp", "t0", "t1", "t2", "s0", "s1", "a0", "a1", "a2", "a3", "a4",
    "a5", "a6", "a7", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11", "t3", "t4",
    "t5", "t6",
];

impl Coredump {
    /// Decodes an image as DPA_PROCESS_COREDUMP returns it.
    ///
    /// # Errors
    /// [`CoredumpError`] for a truncated image, a wrong magic or an unknown version. Never
    /// panics, whatever the bytes.
    pub fn parse(image: &[u8]) -> Result<Coredump, CoredumpError> {
        let short = |what, need| CoredumpError::TooShort {
            what,
            need,
            got: image.len(),
        };
        let hv =
            View::<h::Layout>::new(image).map_err(|_| short("header", h::Layout::SIZE_BYTES))?;
        let magic = hv.get(h::magic) as u32;
        if magic != DPA_COREDUMP_MAGIC {
            return Err(CoredumpError::BadMagic(magic));
        }
        let version = hv.get(h::version) as u16;
        if version != DPA_COREDUMP_VERSION {
            return Err(CoredumpError::UnsupportedVersion(version));
        }
        let header_size = hv.get(h::header_size) as u16;
        if usize::from(header_size) < h::Layout::SIZE_BYTES {
            return Err(CoredumpError::BadHeaderSize(header_size));
        }
        let n = hv.get(h::num_regions) as usize;
        let entry = r::Layout::SIZE_BYTES;
        let regions_end = usize::from(header_size) + n * entry;
        let stack_len = hv.get(h::stack_len) as usize;
        let end = regions_end + stack_len;
        if image.len() < regions_end {
            return Err(short("region list", regions_end));
        }
        if image.len() < end {
            return Err(short("stack bytes", end));
        }
        let mut regions = Vec::with_capacity(n);
        for i in 0..n {
            let at = usize::from(header_size) + i * entry;
            let rv = View::<r::Layout>::new(&image[at..at + entry])
                .map_err(|_| short("region list", regions_end))?;
            regions.push(Region {
                base: rv.get(r::base_addr),
                size: rv.get(r::size),
                perms: Perms::from_bits(rv.get(r::perms) as u8),
                kind: RegionKind::from_code(rv.get(r::kind) as u8),
                obj_id: rv.get(r::obj_id) as u32,
            });
        }
        let mut gpr = [0u64; 32];
        for (i, g) in gpr.iter_mut().enumerate() {
            *g = h::gpr.at(i as u32).map_or(0, |f| hv.get(f));
        }
        let access = match hv.get(h::access) as u8 {
            1 => Access::Fetch,
            2 => Access::Load,
            3 => Access::Store,
            o => Access::Other(o),
        };
        let device_code = hv.get(h::device_code) as u32;
        let error = match hv.get(h::mem_error) as u8 {
            1 => MemError::Unmapped,
            2 => MemError::Denied,
            3 => MemError::Misaligned,
            4 => MemError::Device(device_code),
            o => MemError::Other(o),
        };
        let cause = match hv.get(h::cause) as u8 {
            1 => Cause::Watchdog,
            2 => Cause::MemoryFault {
                access,
                size: hv.get(h::access_size) as u8,
                error,
            },
            3 => Cause::IllegalInstruction,
            4 => Cause::MisalignedTarget,
            5 => Cause::Ebreak,
            // The number is a7 as the thread left it: whole, never a truncated copy that could
            // read as a call the RTOS knows.
            6 => Cause::UnknownRtosCall { number: gpr[17] },
            7 => Cause::StackOverflow {
                access,
                size: hv.get(h::access_size) as u8,
            },
            8 => Cause::RtosCallRefused {
                number: gpr[17],
                reason: device_code,
            },
            o => Cause::Other(o),
        };
        Ok(Coredump {
            version,
            cause,
            eu: hv.get(h::eu) as u16,
            dpa_process_id: hv.get(h::dpa_process_id) as u32,
            dpa_thread_id: hv.get(h::dpa_thread_id) as u32,
            pc: hv.get(h::pc),
            fault_addr: hv.get(h::fault_addr),
            insn: hv.get(h::insn) as u32,
            device_code,
            instret: hv.get(h::instret),
            activation: hv.get(h::activation),
            error_syndrome: hv.get(h::error_syndrome) as u32,
            gpr,
            regions,
            regions_truncated: hv.get(h::regions_truncated) == 1,
            stack_addr: hv.get(h::stack_addr),
            stack: image[regions_end..end].to_vec(),
        })
    }

    /// The region holding `addr`, if any.
    pub fn region_of(&self, addr: u64) -> Option<&Region> {
        self.regions.iter().find(|r| r.contains(addr))
    }

    /// The stack as little-endian 64-bit words with their DPA addresses.
    pub fn stack_words(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.stack.chunks_exact(8).enumerate().map(|(i, w)| {
            let mut b = [0u8; 8];
            b.copy_from_slice(w);
            (self.stack_addr + 8 * i as u64, u64::from_le_bytes(b))
        })
    }
}

/// The vendor opcode space a 32-bit encoding lies in (RISC-V unprivileged spec, "RISC-V Base
/// Opcode Map"), named for a coredump's reader.
fn custom_opcode_space(insn: u32) -> Option<&'static str> {
    if insn & 3 != 3 {
        return None;
    }
    match insn & 0x7f {
        0x0b => Some("custom-0"),
        0x2b => Some("custom-1"),
        0x5b => Some("custom-2"),
        0x7b => Some("custom-3"),
        _ => None,
    }
}

impl std::fmt::Display for Coredump {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "DPA coredump v{}: process {:#x} thread {:#x} on EU {} (activation {}, {} instructions)",
            self.version,
            self.dpa_process_id,
            self.dpa_thread_id,
            self.eu,
            self.activation,
            self.instret
        )?;
        writeln!(
            f,
            "cause: {} at pc {:#x} (fault address {:#x}, instruction {:#010x}, syndrome {:#010x})",
            self.cause, self.pc, self.fault_addr, self.insn, self.error_syndrome
        )?;
        if self.cause == Cause::IllegalInstruction {
            if let Some(space) = custom_opcode_space(self.insn) {
                writeln!(
                    f,
                    "note: {:#010x} is in the {space} opcode space, where vendor extensions live: \
                     NVIDIA's DPA extensions (xfenceheap, xnvcc, xrpfxp) have no public \
                     encodings, so the model does not execute them",
                    self.insn
                )?;
            }
        }
        for (i, pair) in self.gpr.chunks(4).enumerate() {
            for (j, v) in pair.iter().enumerate() {
                let n = i * 4 + j;
                write!(f, "{:>4} x{n:<2} {v:#018x}  ", GPR_NAMES[n])?;
            }
            writeln!(f)?;
        }
        for r in &self.regions {
            writeln!(
                f,
                "region {:#014x}..{:#014x} {} {:?} (object {:#x})",
                r.base,
                r.base.saturating_add(r.size),
                r.perms,
                r.kind,
                r.obj_id
            )?;
        }
        if self.regions_truncated {
            writeln!(f, "(more regions not listed)")?;
        }
        for (addr, w) in self.stack_words().take(16) {
            writeln!(f, "stack {addr:#014x}: {w:#018x}")?;
        }
        Ok(())
    }
}

/// Linux's `struct elf_prstatus` for RV64 as GDB and binutils read an `NT_PRSTATUS` note
/// (glibc `sys/procfs.h`, `elf_gregset_t` of 32 registers; binutils `riscv_elf_grok_prstatus`):
/// 376 bytes, `pr_cursig` at 12, `pr_pid` at 32, `pr_reg` at 112.
mod prstatus {
    pub const SIZE: usize = 376;
    pub const SI_SIGNO: usize = 0;
    pub const CURSIG: usize = 12;
    pub const PID: usize = 32;
    /// `pr_reg`: pc, then x1..x31 (the kernel's `user_regs_struct`).
    pub const REG: usize = 112;
}

/// Linux signal numbers (generic ABI, as RISC-V uses).
mod signal {
    pub const SIGILL: u16 = 4;
    pub const SIGTRAP: u16 = 5;
    pub const SIGABRT: u16 = 6;
    pub const SIGBUS: u16 = 7;
    pub const SIGSEGV: u16 = 11;
    pub const SIGXCPU: u16 = 24;
    pub const SIGSYS: u16 = 31;
}

impl Cause {
    /// The signal a Linux process would have died of for this cause: what a debugger opening
    /// the core file reports (`Program terminated with signal SIGSEGV`).
    pub fn signal(&self) -> u16 {
        match self {
            Cause::Watchdog => signal::SIGXCPU,
            Cause::MemoryFault {
                error: MemError::Misaligned,
                ..
            }
            | Cause::MisalignedTarget => signal::SIGBUS,
            Cause::MemoryFault { .. } | Cause::StackOverflow { .. } => signal::SIGSEGV,
            Cause::IllegalInstruction => signal::SIGILL,
            Cause::Ebreak => signal::SIGTRAP,
            Cause::UnknownRtosCall { .. } => signal::SIGSYS,
            Cause::RtosCallRefused { .. } | Cause::Other(_) => signal::SIGABRT,
        }
    }
}

impl Coredump {
    /// The dump as an ELF core file (RV64, little-endian) that GDB opens beside the process's
    /// ELF (`gdb-multiarch app.elf app.core`): one `NT_PRSTATUS`
    /// note ("CORE") with the registers, the pc and the signal of [`Cause::signal`], the
    /// thread id as the pid; one `PT_LOAD` segment with the stack bytes the dump holds (from
    /// `sp` upwards). Text and read-only data come from the ELF, as GDB reads them there;
    /// other memory is not in the dump, so not in the core.
    pub fn to_elf_core(&self) -> Vec<u8> {
        use object::elf;
        use object::write::elf::{FileHeader, ProgramHeader, Writer};
        use object::Endianness;

        let mut desc = vec![0u8; prstatus::SIZE];
        let sig = self.cause.signal();
        desc[prstatus::SI_SIGNO..prstatus::SI_SIGNO + 4]
            .copy_from_slice(&u32::from(sig).to_le_bytes());
        desc[prstatus::CURSIG..prstatus::CURSIG + 2].copy_from_slice(&sig.to_le_bytes());
        desc[prstatus::PID..prstatus::PID + 4].copy_from_slice(&self.dpa_thread_id.to_le_bytes());
        let mut regs = self.gpr;
        regs[0] = self.pc;
        for (i, r) in regs.iter().enumerate() {
            let at = prstatus::REG + 8 * i;
            desc[at..at + 8].copy_from_slice(&r.to_le_bytes());
        }
        // One note: namesz, descsz, type, "CORE\0" padded to 4, the descriptor padded to 4.
        let mut note = Vec::with_capacity(12 + 8 + desc.len());
        note.extend_from_slice(&5u32.to_le_bytes());
        note.extend_from_slice(&(desc.len() as u32).to_le_bytes());
        note.extend_from_slice(&elf::NT_PRSTATUS.0.to_le_bytes());
        note.extend_from_slice(b"CORE\0\0\0\0");
        note.extend_from_slice(&desc);
        while note.len() % 4 != 0 {
            note.push(0);
        }

        let mut out = Vec::new();
        let mut w = Writer::new(Endianness::Little, true, &mut out);
        w.reserve_file_header();
        w.reserve_program_headers(2);
        let note_off = w.reserve(note.len() as u64, 4);
        let stack_off = w.reserve(self.stack.len() as u64, 8);
        // Writing into a `Vec` cannot fail; the header's fields are all in range.
        let _ = w.write_file_header(&FileHeader {
            os_abi: elf::ELFOSABI_NONE,
            abi_version: 0,
            e_type: elf::ET_CORE,
            e_machine: elf::EM_RISCV,
            e_entry: 0,
            e_flags: elf::EF_RISCV_RVC,
        });
        w.write_align_program_headers();
        w.write_program_header(&ProgramHeader {
            p_type: elf::PT_NOTE,
            p_flags: elf::ProgramFlags(0),
            p_offset: note_off,
            p_vaddr: 0,
            p_paddr: 0,
            p_filesz: note.len() as u64,
            p_memsz: 0,
            p_align: 4,
        });
        w.write_program_header(&ProgramHeader {
            p_type: elf::PT_LOAD,
            p_flags: elf::PF_R | elf::PF_W,
            p_offset: stack_off,
            p_vaddr: self.stack_addr,
            p_paddr: 0,
            p_filesz: self.stack.len() as u64,
            p_memsz: self.stack.len() as u64,
            p_align: 8,
        });
        w.pad_until(note_off);
        w.write(&note);
        w.pad_until(stack_off);
        w.write(&self.stack);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mlx5::layout::ViewMut;

    fn image(regions: usize, stack: usize) -> Vec<u8> {
        let hs = h::Layout::SIZE_BYTES;
        let mut b = vec![0u8; hs + regions * r::Layout::SIZE_BYTES + stack];
        {
            let mut v = ViewMut::<h::Layout>::new(&mut b).unwrap();
            v.set(h::magic, u64::from(DPA_COREDUMP_MAGIC));
            v.set(h::version, 1);
            v.set(h::header_size, hs as u64);
            v.set(h::cause, 2);
            v.set(h::access, 3);
            v.set(h::access_size, 8);
            v.set(h::mem_error, 2);
            v.set(h::eu, 17);
            v.set(h::num_regions, regions as u64);
            v.set(h::dpa_process_id, 5);
            v.set(h::dpa_thread_id, 6);
            v.set(h::pc, 0x4000_0010);
            v.set(h::fault_addr, 0x4000_0000);
            v.set(h::stack_addr, 0x1_0001_ff00);
            v.set(h::stack_len, stack as u64);
            v.set(h::gpr.at(2).unwrap(), 0x1_0001_ff00);
            v.set(h::gpr.at(31).unwrap(), 0xdead);
        }
        for i in 0..regions {
            let at = hs + i * r::Layout::SIZE_BYTES;
            let mut v = ViewMut::<r::Layout>::new(&mut b[at..]).unwrap();
            v.set(r::base_addr, 0x4000_0000 + (i as u64) * 0x1000);
            v.set(r::size, 0x1000);
            v.set(r::perms, 0b101);
            v.set(r::kind, 1);
        }
        let n = b.len();
        for (i, x) in b[n - stack..].iter_mut().enumerate() {
            *x = i as u8;
        }
        b
    }

    #[test]
    fn decodes_every_part() {
        let d = Coredump::parse(&image(2, 16)).unwrap();
        assert_eq!(
            d.cause,
            Cause::MemoryFault {
                access: Access::Store,
                size: 8,
                error: MemError::Denied
            }
        );
        assert_eq!((d.eu, d.dpa_process_id, d.dpa_thread_id), (17, 5, 6));
        assert_eq!(d.gpr[2], 0x1_0001_ff00);
        assert_eq!(d.gpr[31], 0xdead);
        assert_eq!(d.regions.len(), 2);
        assert_eq!(d.region_of(0x4000_0000).unwrap().kind, RegionKind::Text);
        assert!(d.region_of(0x4000_0000).unwrap().perms.execute);
        assert_eq!(d.stack.len(), 16);
        assert_eq!(
            d.stack_words().next(),
            Some((0x1_0001_ff00, 0x0706_0504_0302_0100))
        );
        assert!(d.to_string().contains("process 0x5"));
    }

    proptest::proptest! {
        /// Any bytes after a valid header prefix decode or fail, never panic.
        #[test]
        fn arbitrary_images_never_panic(
            tail in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..2048),
            regions in 0u8..=255,
            stack in 0u32..4096,
        ) {
            let mut b = image(0, 0);
            b.truncate(8);
            b.extend_from_slice(&tail);
            if b.len() >= h::Layout::SIZE_BYTES {
                let mut v = ViewMut::<h::Layout>::new(&mut b).unwrap();
                v.set(h::num_regions, u64::from(regions));
                v.set(h::stack_len, u64::from(stack));
            }
            let _ = Coredump::parse(&b);
        }
    }

    #[test]
    fn refuses_truncated_and_foreign_images() {
        let full = image(3, 32);
        for cut in 0..full.len() {
            assert!(Coredump::parse(&full[..cut]).is_err(), "cut at {cut}");
        }
        let mut bad = full.clone();
        bad[0] ^= 1;
        assert!(matches!(
            Coredump::parse(&bad),
            Err(CoredumpError::BadMagic(_))
        ));
        let mut v2 = full;
        v2[5] = 2;
        assert_eq!(
            Coredump::parse(&v2),
            Err(CoredumpError::UnsupportedVersion(2))
        );
    }

    #[test]
    fn the_core_file_holds_the_registers_the_signal_and_the_stack() {
        let d = Coredump::parse(&image(2, 16)).unwrap();
        let core = d.to_elf_core();
        let u16_at = |o: usize| u16::from_le_bytes([core[o], core[o + 1]]);
        let u32_at = |o: usize| u32::from_le_bytes(core[o..o + 4].try_into().unwrap());
        let u64_at = |o: usize| u64::from_le_bytes(core[o..o + 8].try_into().unwrap());
        assert_eq!(&core[..4], b"\x7fELF");
        assert_eq!(core[4], 2, "ELFCLASS64");
        assert_eq!(u16_at(16), 4, "ET_CORE");
        assert_eq!(u16_at(18), 243, "EM_RISCV");
        let (phoff, phentsize, phnum) = (u64_at(32) as usize, u16_at(54) as usize, u16_at(56));
        assert_eq!(phnum, 2);
        let ph = |i: usize| phoff + i * phentsize;
        // PT_NOTE: one "CORE" NT_PRSTATUS note.
        assert_eq!(u32_at(ph(0)), 4);
        let note = u64_at(ph(0) + 8) as usize;
        assert_eq!(
            (u32_at(note), u32_at(note + 4), u32_at(note + 8)),
            (5, prstatus::SIZE as u32, 1)
        );
        assert_eq!(&core[note + 12..note + 17], b"CORE\0");
        let desc = note + 20;
        assert_eq!(
            u16_at(desc + prstatus::CURSIG),
            11,
            "a denied store: SIGSEGV"
        );
        assert_eq!(u32_at(desc + prstatus::PID), 6, "the thread id");
        let reg = |i: usize| u64_at(desc + prstatus::REG + 8 * i);
        assert_eq!(reg(0), 0x4000_0010, "pc first");
        assert_eq!(reg(2), 0x1_0001_ff00, "sp");
        assert_eq!(reg(31), 0xdead, "t6 last");
        // PT_LOAD: the stack bytes at their address.
        assert_eq!(u32_at(ph(1)), 1);
        let (off, vaddr, filesz) = (
            u64_at(ph(1) + 8) as usize,
            u64_at(ph(1) + 16),
            u64_at(ph(1) + 32) as usize,
        );
        assert_eq!((vaddr, filesz), (0x1_0001_ff00, 16));
        assert_eq!(core[off..off + filesz], d.stack[..]);
    }
}
