//! A DPA process built from raw DevX commands, for the model's own DPA tests.
//!
//! [`DpaRig`] loads a device ELF into a DPA_PROCESS (the image in a host UMEM), creates
//! threads, outboxes, windows and DPA_MEM blocks, runs threads the way FlexIO's
//! `flexio_process_call` / `flexio_event_handler_run` do (MODIFY state = RUNNING), queries
//! them and fetches coredumps. [`asm`] encodes the few RV64 instructions the tests write by
//! hand and [`elf`] wraps them into a device ELF, so a test needs no cross compiler.
//!
//! This module is for tests (hidden from the docs); it panics on nothing but reports every
//! refusal as an error.

use mlx5_dpa::mlx5::Pdn;
use std::sync::Arc;

use mlx5_dpa::devx::{self, Devx, DevxError, DevxObj, Uar, UarKind, UmemAccess};
use mlx5_dpa::dpa::coredump::{Coredump, CoredumpError};
use mlx5_dpa::dpa::elf::Elf;
use mlx5_dpa::mem::{DmaBuf, Umem as MemUmem};
use mlx5_dpa::mlx5::cmd::{
    AllocPd, CreateGeneralObject, DpaAffinity, DpaMemAttr, DpaOutboxAttr, DpaProcessAttr,
    DpaProcessCoredump, DpaThreadAttr, DpaThreadModify, DpaWindowAttr, ModifyGeneralObject,
    QueryGeneralObject,
};
use mlx5_dpa::mlx5::layout::{Layout, View};
use mlx5_dpa::mlx5::layouts::{self as l, dpa::obj_type};

use crate::testing::rig::RigError;
use crate::testing::RigMem;

/// RV64 instruction encoders (the base integer ISA, M's `mul`, A's `amoadd`), 32-bit forms
/// only. Branch and jump offsets are in bytes from the instruction.
pub mod asm {
    /// Register numbers by ABI name.
    pub mod r {
        pub const ZERO: u8 = 0;
        pub const RA: u8 = 1;
        pub const SP: u8 = 2;
        pub const GP: u8 = 3;
        pub const TP: u8 = 4;
        pub const T0: u8 = 5;
        pub const T1: u8 = 6;
        pub const T2: u8 = 7;
        pub const S0: u8 = 8;
        pub const S1: u8 = 9;
        pub const A0: u8 = 10;
        pub const A1: u8 = 11;
        pub const A2: u8 = 12;
        pub const A3: u8 = 13;
        pub const A4: u8 = 14;
        pub const A5: u8 = 15;
        pub const A6: u8 = 16;
        pub const A7: u8 = 17;
        pub const T3: u8 = 28;
        pub const T4: u8 = 29;
        pub const T5: u8 = 30;
        pub const T6: u8 = 31;
    }

    /// A program being assembled.
    #[derive(Debug, Clone, Default)]
    pub struct Asm {
        words: Vec<u32>,
    }

    fn i_type(op: u32, f3: u32, rd: u8, rs1: u8, imm: i32) -> u32 {
        ((imm as u32 & 0xfff) << 20)
            | (u32::from(rs1) << 15)
            | (f3 << 12)
            | (u32::from(rd) << 7)
            | op
    }
    fn r_type(op: u32, f3: u32, f7: u32, rd: u8, rs1: u8, rs2: u8) -> u32 {
        (f7 << 25)
            | (u32::from(rs2) << 20)
            | (u32::from(rs1) << 15)
            | (f3 << 12)
            | (u32::from(rd) << 7)
            | op
    }
    fn s_type(f3: u32, rs1: u8, rs2: u8, imm: i32) -> u32 {
        let i = imm as u32;
        ((i >> 5 & 0x7f) << 25)
            | (u32::from(rs2) << 20)
            | (u32::from(rs1) << 15)
            | (f3 << 12)
            | ((i & 0x1f) << 7)
            | 0x23
    }
    fn b_type(f3: u32, rs1: u8, rs2: u8, off: i32) -> u32 {
        let i = off as u32;
        ((i >> 12 & 1) << 31)
            | ((i >> 5 & 0x3f) << 25)
            | (u32::from(rs2) << 20)
            | (u32::from(rs1) << 15)
            | (f3 << 12)
            | ((i >> 1 & 0xf) << 8)
            | ((i >> 11 & 1) << 7)
            | 0x63
    }

    impl Asm {
        pub fn new() -> Asm {
            Asm::default()
        }
        /// Byte offset of the next instruction.
        pub fn here(&self) -> i32 {
            (self.words.len() * 4) as i32
        }
        /// Appends a raw 32-bit instruction word.
        pub fn word(&mut self, w: u32) -> &mut Self {
            self.words.push(w);
            self
        }
        pub fn bytes(&self) -> Vec<u8> {
            self.words.iter().flat_map(|w| w.to_le_bytes()).collect()
        }
        pub fn addi(&mut self, rd: u8, rs1: u8, imm: i32) -> &mut Self {
            self.word(i_type(0x13, 0, rd, rs1, imm))
        }
        pub fn addiw(&mut self, rd: u8, rs1: u8, imm: i32) -> &mut Self {
            self.word(i_type(0x1b, 0, rd, rs1, imm))
        }
        pub fn slli(&mut self, rd: u8, rs1: u8, sh: u32) -> &mut Self {
            self.word(i_type(0x13, 1, rd, rs1, (sh & 0x3f) as i32))
        }
        pub fn lui(&mut self, rd: u8, imm20: u32) -> &mut Self {
            self.word(((imm20 & 0xf_ffff) << 12) | (u32::from(rd) << 7) | 0x37)
        }
        pub fn add(&mut self, rd: u8, rs1: u8, rs2: u8) -> &mut Self {
            self.word(r_type(0x33, 0, 0, rd, rs1, rs2))
        }
        pub fn sub(&mut self, rd: u8, rs1: u8, rs2: u8) -> &mut Self {
            self.word(r_type(0x33, 0, 0x20, rd, rs1, rs2))
        }
        pub fn or(&mut self, rd: u8, rs1: u8, rs2: u8) -> &mut Self {
            self.word(r_type(0x33, 6, 0, rd, rs1, rs2))
        }
        pub fn mul(&mut self, rd: u8, rs1: u8, rs2: u8) -> &mut Self {
            self.word(r_type(0x33, 0, 1, rd, rs1, rs2))
        }
        pub fn mv(&mut self, rd: u8, rs: u8) -> &mut Self {
            self.addi(rd, rs, 0)
        }
        /// Loads any 64-bit constant (lui / addiw / slli / addi sequence).
        pub fn li(&mut self, rd: u8, v: u64) -> &mut Self {
            let v = v as i64;
            if (-2048..2048).contains(&v) {
                return self.addi(rd, 0, v as i32);
            }
            if v >= i64::from(i32::MIN) && v + 0x800 <= i64::from(i32::MAX) {
                let hi = (v + 0x800) >> 12;
                let lo = v - (hi << 12);
                self.lui(rd, hi as u32);
                if lo != 0 {
                    self.addiw(rd, rd, lo as i32);
                }
                return self;
            }
            let lo = ((v & 0xfff) << 52) >> 52;
            let hi = (v - lo) >> 12;
            self.li(rd, hi as u64);
            self.slli(rd, rd, 12);
            if lo != 0 {
                self.addi(rd, rd, lo as i32);
            }
            self
        }
        pub fn ld(&mut self, rd: u8, rs1: u8, imm: i32) -> &mut Self {
            self.word(i_type(0x03, 3, rd, rs1, imm))
        }
        pub fn lw(&mut self, rd: u8, rs1: u8, imm: i32) -> &mut Self {
            self.word(i_type(0x03, 2, rd, rs1, imm))
        }
        pub fn lwu(&mut self, rd: u8, rs1: u8, imm: i32) -> &mut Self {
            self.word(i_type(0x03, 6, rd, rs1, imm))
        }
        pub fn lhu(&mut self, rd: u8, rs1: u8, imm: i32) -> &mut Self {
            self.word(i_type(0x03, 5, rd, rs1, imm))
        }
        pub fn lbu(&mut self, rd: u8, rs1: u8, imm: i32) -> &mut Self {
            self.word(i_type(0x03, 4, rd, rs1, imm))
        }
        pub fn sd(&mut self, rs2: u8, rs1: u8, imm: i32) -> &mut Self {
            self.word(s_type(3, rs1, rs2, imm))
        }
        pub fn sw(&mut self, rs2: u8, rs1: u8, imm: i32) -> &mut Self {
            self.word(s_type(2, rs1, rs2, imm))
        }
        pub fn sb(&mut self, rs2: u8, rs1: u8, imm: i32) -> &mut Self {
            self.word(s_type(0, rs1, rs2, imm))
        }
        /// Branch to byte offset `target` of the program (from this instruction).
        pub fn beq_to(&mut self, rs1: u8, rs2: u8, target: i32) -> &mut Self {
            let off = target - self.here();
            self.word(b_type(0, rs1, rs2, off))
        }
        pub fn bne_to(&mut self, rs1: u8, rs2: u8, target: i32) -> &mut Self {
            let off = target - self.here();
            self.word(b_type(1, rs1, rs2, off))
        }
        pub fn bltu_to(&mut self, rs1: u8, rs2: u8, target: i32) -> &mut Self {
            let off = target - self.here();
            self.word(b_type(6, rs1, rs2, off))
        }
        /// `jal rd, target` (a byte offset of the program).
        pub fn jal_to(&mut self, rd: u8, target: i32) -> &mut Self {
            let i = (target - self.here()) as u32;
            self.word(
                ((i >> 20 & 1) << 31)
                    | ((i >> 1 & 0x3ff) << 21)
                    | ((i >> 11 & 1) << 20)
                    | ((i >> 12 & 0xff) << 12)
                    | (u32::from(rd) << 7)
                    | 0x6f,
            )
        }
        pub fn jalr(&mut self, rd: u8, rs1: u8, imm: i32) -> &mut Self {
            self.word(i_type(0x67, 0, rd, rs1, imm))
        }
        pub fn ret(&mut self) -> &mut Self {
            self.jalr(0, r::RA, 0)
        }
        pub fn ecall(&mut self) -> &mut Self {
            self.word(0x0000_0073)
        }
        pub fn ebreak(&mut self) -> &mut Self {
            self.word(0x0010_0073)
        }
        /// `amoadd.d rd, rs2, (rs1)`.
        pub fn amoadd_d(&mut self, rd: u8, rs2: u8, rs1: u8) -> &mut Self {
            self.word(r_type(0x2f, 3, 0, rd, rs1, rs2))
        }
        /// An FlexIO-OS call: `li a7, nr; ecall` (arguments already in a0..).
        pub fn os_call(&mut self, nr: u64) -> &mut Self {
            self.li(r::A7, nr).ecall()
        }
    }
}

/// A minimal device ELF: text at 0x40000000 (R+X), data at 0x80000000 (R+W, with `.bss`),
/// and a symbol table, as the FlexIO toolchain links them (docs/sources.md §5).
pub mod elf {
    /// What goes into the image.
    #[derive(Debug, Clone)]
    pub struct ElfSpec {
        pub machine: u16,
        pub text_addr: u64,
        pub text_flags: u32,
        pub text: Vec<u8>,
        pub data_addr: u64,
        pub data_flags: u32,
        pub data: Vec<u8>,
        /// Zero bytes after `data` (memory size beyond file size).
        pub bss: u64,
        /// Function symbols: name and offset into `text`.
        pub symbols: Vec<(String, u64)>,
    }

    impl ElfSpec {
        /// Text with the standard addresses and flags, no data.
        pub fn new(text: Vec<u8>) -> ElfSpec {
            ElfSpec {
                machine: 243,
                text_addr: 0x4000_0000,
                text_flags: 5,
                text,
                data_addr: 0x8000_0000,
                data_flags: 6,
                data: Vec::new(),
                bss: 0,
                symbols: Vec::new(),
            }
        }
        pub fn symbol(mut self, name: &str, text_offset: u64) -> ElfSpec {
            self.symbols.push((name.to_string(), text_offset));
            self
        }
        pub fn data(mut self, data: Vec<u8>, bss: u64) -> ElfSpec {
            self.data = data;
            self.bss = bss;
            self
        }

        /// The ELF file.
        pub fn build(&self) -> Vec<u8> {
            let has_data = !self.data.is_empty() || self.bss > 0;
            let phnum: u16 = if has_data { 2 } else { 1 };
            // Compact: headers, text, data, tables (no page alignment in the file; the
            // loader copies segments by their offsets).
            let text_off = 0x100u64;
            let data_off = text_off + (self.text.len() as u64).div_ceil(8) * 8;
            let mut f = vec![0u8; data_off as usize];
            f.extend_from_slice(&self.data);
            // String tables and the symbol table.
            let mut strtab = vec![0u8];
            let mut symtab = vec![0u8; 24];
            for (name, off) in &self.symbols {
                let name_at = strtab.len() as u32;
                strtab.extend_from_slice(name.as_bytes());
                strtab.push(0);
                let mut s = [0u8; 24];
                s[0..4].copy_from_slice(&name_at.to_le_bytes());
                s[4] = 0x12; // STB_GLOBAL, STT_FUNC
                s[6..8].copy_from_slice(&1u16.to_le_bytes()); // .text
                s[8..16].copy_from_slice(&(self.text_addr + off).to_le_bytes());
                symtab.extend_from_slice(&s);
            }
            let shstr = b"\0.text\0.data\0.symtab\0.strtab\0.shstrtab\0".to_vec();
            let align8 = |f: &mut Vec<u8>| f.resize(f.len().div_ceil(8) * 8, 0);
            align8(&mut f);
            let symtab_off = f.len() as u64;
            f.extend_from_slice(&symtab);
            let strtab_off = f.len() as u64;
            f.extend_from_slice(&strtab);
            let shstr_off = f.len() as u64;
            f.extend_from_slice(&shstr);
            align8(&mut f);
            let shoff = f.len() as u64;
            // Sections: null, .text, .data, .symtab, .strtab, .shstrtab.
            let mut sh = |name: u32,
                          ty: u32,
                          flags: u64,
                          addr: u64,
                          off: u64,
                          size: u64,
                          link: u32,
                          info: u32,
                          ent: u64| {
                let mut s = [0u8; 64];
                s[0..4].copy_from_slice(&name.to_le_bytes());
                s[4..8].copy_from_slice(&ty.to_le_bytes());
                s[8..16].copy_from_slice(&flags.to_le_bytes());
                s[16..24].copy_from_slice(&addr.to_le_bytes());
                s[24..32].copy_from_slice(&off.to_le_bytes());
                s[32..40].copy_from_slice(&size.to_le_bytes());
                s[40..44].copy_from_slice(&link.to_le_bytes());
                s[44..48].copy_from_slice(&info.to_le_bytes());
                s[48..56].copy_from_slice(&8u64.to_le_bytes());
                s[56..64].copy_from_slice(&ent.to_le_bytes());
                f.extend_from_slice(&s);
            };
            sh(0, 0, 0, 0, 0, 0, 0, 0, 0);
            sh(
                1,
                1,
                6,
                self.text_addr,
                text_off,
                self.text.len() as u64,
                0,
                0,
                0,
            );
            sh(
                7,
                1,
                3,
                self.data_addr,
                data_off,
                self.data.len() as u64,
                0,
                0,
                0,
            );
            sh(13, 2, 0, 0, symtab_off, symtab.len() as u64, 4, 1, 24);
            sh(21, 3, 0, 0, strtab_off, strtab.len() as u64, 0, 0, 0);
            sh(29, 3, 0, 0, shstr_off, shstr.len() as u64, 0, 0, 0);
            // Header.
            f[0..4].copy_from_slice(b"\x7fELF");
            f[4] = 2; // ELFCLASS64
            f[5] = 1; // little-endian
            f[6] = 1;
            f[16..18].copy_from_slice(&2u16.to_le_bytes()); // ET_EXEC
            f[18..20].copy_from_slice(&self.machine.to_le_bytes());
            f[20..24].copy_from_slice(&1u32.to_le_bytes());
            f[24..32].copy_from_slice(&self.text_addr.to_le_bytes());
            f[32..40].copy_from_slice(&64u64.to_le_bytes()); // e_phoff
            f[40..48].copy_from_slice(&shoff.to_le_bytes());
            f[48..52].copy_from_slice(&1u32.to_le_bytes()); // e_flags: RVC
            f[52..54].copy_from_slice(&64u16.to_le_bytes());
            f[54..56].copy_from_slice(&56u16.to_le_bytes());
            f[56..58].copy_from_slice(&phnum.to_le_bytes());
            f[58..60].copy_from_slice(&64u16.to_le_bytes());
            f[60..62].copy_from_slice(&6u16.to_le_bytes());
            f[62..64].copy_from_slice(&5u16.to_le_bytes());
            // Program headers.
            let ph = |f: &mut Vec<u8>,
                      at: usize,
                      flags: u32,
                      off: u64,
                      addr: u64,
                      filesz: u64,
                      memsz: u64| {
                let mut p = [0u8; 56];
                p[0..4].copy_from_slice(&1u32.to_le_bytes());
                p[4..8].copy_from_slice(&flags.to_le_bytes());
                p[8..16].copy_from_slice(&off.to_le_bytes());
                p[16..24].copy_from_slice(&addr.to_le_bytes());
                p[24..32].copy_from_slice(&addr.to_le_bytes());
                p[32..40].copy_from_slice(&filesz.to_le_bytes());
                p[40..48].copy_from_slice(&memsz.to_le_bytes());
                p[48..56].copy_from_slice(&0x1000u64.to_le_bytes());
                f[at..at + 56].copy_from_slice(&p);
            };
            let tl = self.text.len() as u64;
            ph(
                &mut f,
                64,
                self.text_flags,
                text_off,
                self.text_addr,
                tl,
                tl,
            );
            if has_data {
                let dl = self.data.len() as u64;
                ph(
                    &mut f,
                    120,
                    self.data_flags,
                    data_off,
                    self.data_addr,
                    dl,
                    dl + self.bss,
                );
            }
            let t = text_off as usize;
            f[t..t + self.text.len()].copy_from_slice(&self.text);
            f
        }
    }

    /// The smallest valid device ELF (well under 4 KiB): `ret` at 0x40000000 (symbol
    /// `entry`) and a 4 KiB data segment. Tests of firmware objects that need a process use
    /// it.
    pub fn minimal() -> Vec<u8> {
        ElfSpec::new(vec![0x67, 0x80, 0x00, 0x00])
            .symbol("entry", 0)
            .data(vec![0; 8], 4096 - 8)
            .build()
    }
}

/// A host buffer of a rig (see [`DpaRig::host_buf`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostBuf {
    index: usize,
    pub umem_id: u32,
    /// Host virtual address of byte 0.
    pub addr: u64,
    pub len: usize,
}

/// What to create a thread with.
#[derive(Debug, Clone, Copy, Default)]
pub struct ThreadSpec {
    pub entry: u64,
    pub arg: u64,
    pub affinity: DpaAffinity,
    pub outbox: u32,
    pub window: u32,
    pub tls: u64,
}

/// A thread's outputs (QUERY of DPA_THREAD).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThreadInfo {
    pub state: u8,
    pub activations: u64,
    pub return_value: u64,
    pub last_eu: u16,
    pub user_arg: u64,
}

/// A process's outputs (QUERY of DPA_PROCESS).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcessInfo {
    pub status: u8,
    pub error_syndrome: u32,
    pub exit_status: u32,
    pub dumem_id: u32,
    pub dumem_base: u64,
}

/// Why a coredump could not be had.
#[derive(Debug, thiserror::Error)]
pub enum DumpError {
    #[error(transparent)]
    Devx(#[from] DevxError),
    #[error(transparent)]
    Decode(#[from] CoredumpError),
}

/// One DPA process and what the tests hang off it.
pub struct DpaRig {
    ctx: Arc<dyn Devx>,
    /// Objects by (general object type, or 0 for other objects; id), oldest first.
    objs: Vec<(u16, u32, DevxObj)>,
    umem: Option<Arc<MemUmem>>,
    mem: Arc<DmaBuf>,
    uar: Option<Uar>,
    /// Host buffers registered as UMEMs, released after every object.
    bufs: Vec<(Arc<DmaBuf>, Arc<MemUmem>, usize)>,
    elf: Vec<u8>,
    pub pd: u32,
    pub uar_page: u32,
    pub process: u32,
    pub dumem_id: u32,
    pub dumem_base: u64,
}

impl DpaRig {
    /// A PD, a UAR and a process running `elf` with `heap` bytes of heap.
    ///
    /// # Errors
    /// The first command firmware refused (the process creation refuses bad ELFs).
    pub fn new(ctx: Arc<dyn Devx>, elf: &[u8], heap: u64) -> Result<DpaRig, RigError> {
        let len = elf.len().max(1).div_ceil(4096) * 4096;
        let mem = DmaBuf::new(len)?;
        mem.put(0, elf);
        let mut rig = DpaRig {
            ctx: Arc::clone(&ctx),
            objs: Vec::new(),
            umem: None,
            mem,
            uar: None,
            bufs: Vec::new(),
            elf: elf.to_vec(),
            pd: 0,
            uar_page: 0,
            process: 0,
            dumem_id: 0,
            dumem_base: 0,
        };
        let (pd, pdn) = devx::create(&ctx, &AllocPd)?;
        rig.objs.push((0, pdn.0, pd));
        rig.pd = pdn.0;
        let uar = ctx.uar_alloc(UarKind::NonCached)?;
        rig.uar_page = uar.page_id;
        rig.uar = Some(uar);
        let umem = MemUmem::register_range(&ctx, &rig.mem, 0, len, UmemAccess::empty())?;
        let elf_umem_id = umem.id().0;
        rig.umem = Some(umem);
        let (p, pid) = devx::create(
            &ctx,
            &CreateGeneralObject(DpaProcessAttr {
                pd: pdn,
                elf_umem_id,
                elf_umem_offset: 0,
                elf_size: elf.len() as u64,
                heap_size: heap,
                sig_umem_id: 0,
                sig_umem_offset: 0,
                sig_size: 0,
            }),
        )?;
        rig.objs.push((obj_type::DPA_PROCESS, pid, p));
        rig.process = pid;
        let info = rig.process_info()?;
        rig.dumem_id = info.dumem_id;
        rig.dumem_base = info.dumem_base;
        Ok(rig)
    }

    /// The DevX context.
    pub fn ctx(&self) -> &Arc<dyn Devx> {
        &self.ctx
    }

    /// The address of a symbol of the process's ELF.
    pub fn symbol(&self, name: &str) -> Option<u64> {
        Elf::parse_device(&self.elf)
            .ok()?
            .symbol(name)
            .map(|s| s.value)
    }

    fn obj(&self, id: u32, t: u16) -> Option<&DevxObj> {
        self.objs
            .iter()
            .find(|(k, i, _)| *k == t && *i == id)
            .map(|(_, _, o)| o)
    }

    /// Creates any general object (kept with the rig).
    ///
    /// # Errors
    /// Firmware's refusal.
    pub fn create<O: mlx5_dpa::mlx5::cmd::GeneralObject>(
        &mut self,
        o: O,
    ) -> Result<u32, DevxError> {
        let (obj, id) = devx::create(&self.ctx, &CreateGeneralObject(o))?;
        self.objs.push((O::OBJ_TYPE, id, obj));
        Ok(id)
    }

    /// Creates a thread of the process.
    ///
    /// # Errors
    /// Firmware's refusal.
    pub fn thread(&mut self, s: ThreadSpec) -> Result<u32, DevxError> {
        let process = self.process;
        self.create(DpaThreadAttr {
            dpa_process_id: process,
            entry_point: s.entry,
            user_arg: s.arg,
            thread_local_storage_daddr: s.tls,
            affinity: s.affinity,
            default_outbox_id: s.outbox,
            default_window_id: s.window,
            continuable: false,
        })
    }

    /// Creates an outbox on UAR page `uar`.
    ///
    /// # Errors
    /// Firmware's refusal.
    pub fn outbox(&mut self, uar: u32) -> Result<u32, DevxError> {
        let process = self.process;
        self.create(DpaOutboxAttr {
            dpa_process_id: process,
            uar,
        })
    }

    /// Creates a window for mkeys of `pd`.
    ///
    /// # Errors
    /// Firmware's refusal.
    pub fn window(&mut self, pd: u32) -> Result<u32, DevxError> {
        let process = self.process;
        self.create(DpaWindowAttr {
            dpa_process_id: process,
            pd: Pdn(pd),
        })
    }

    /// Allocates a DPA_MEM block; returns its id and DPA address.
    ///
    /// # Errors
    /// Firmware's refusal.
    pub fn dpa_mem(&mut self, size: u64) -> Result<(u32, u64), DevxError> {
        let process = self.process;
        let id = self.create(DpaMemAttr {
            dpa_process_id: process,
            size,
        })?;
        let q = self.query(obj_type::DPA_MEM, id, l::dpa_mem::Layout::SIZE_BYTES)?;
        let addr = View::<l::dpa_mem::Layout>::new(&q)
            .map(|v| v.get(l::dpa_mem::dpa_addr))
            .unwrap_or(0);
        Ok((id, addr))
    }

    /// Keeps an object the test created itself (destroyed with the rig, newest first).
    pub fn keep(&mut self, obj: DevxObj) {
        self.objs.push((0, 0, obj));
    }

    /// Destroys a general object the rig made (a thread, an outbox...) of type `t`.
    ///
    /// # Errors
    /// Firmware's refusal (the object stays then).
    pub fn destroy(&mut self, t: u16, id: u32) -> Result<(), DevxError> {
        let Some(i) = self.objs.iter().position(|(k, x, _)| *k == t && *x == id) else {
            return Ok(());
        };
        // The raw destroy keeps the handle when firmware refuses.
        self.ctx.obj_destroy(self.objs[i].2.handle())?;
        // Already gone: the handle's own destroy on drop finds nothing, which it ignores.
        self.objs.remove(i);
        Ok(())
    }

    /// QUERY_GENERAL_OBJECT of an object the rig made: `len` context bytes.
    ///
    /// # Errors
    /// Firmware's refusal, or no such object in the rig.
    pub fn query(&self, t: u16, id: u32, len: usize) -> Result<Vec<u8>, DevxError> {
        let obj = self.obj(id, t).ok_or(DevxError::Os {
            op: "DEVX_OBJ_QUERY",
            errno: nix::errno::Errno::ENOENT,
        })?;
        devx::query(
            obj,
            &QueryGeneralObject {
                obj_type: t,
                obj_id: id,
                ctx_len: len,
            },
        )
    }

    /// MODIFY of a thread: new user_arg and / or state.
    ///
    /// # Errors
    /// Firmware's refusal.
    pub fn modify_thread(&self, thread: u32, m: DpaThreadModify) -> Result<(), DevxError> {
        let obj = self
            .obj(thread, obj_type::DPA_THREAD)
            .ok_or(DevxError::Os {
                op: "DEVX_OBJ_MODIFY",
                errno: nix::errno::Errno::ENOENT,
            })?;
        devx::modify(
            obj,
            &ModifyGeneralObject {
                obj_id: thread,
                obj: m,
            },
        )
    }

    /// Runs a thread once (state RUNNING), with a new argument if given. The activation
    /// happens on the next engine pass (`Device::step` / `run_until_idle`).
    ///
    /// # Errors
    /// Firmware's refusal.
    pub fn run(&self, thread: u32, arg: Option<u64>) -> Result<(), DevxError> {
        self.modify_thread(
            thread,
            DpaThreadModify {
                user_arg: arg,
                state: Some(l::dpa_thread_state::RUNNING),
            },
        )
    }

    /// A thread's outputs.
    ///
    /// # Errors
    /// Firmware's refusal.
    pub fn thread_info(&self, thread: u32) -> Result<ThreadInfo, DevxError> {
        use l::dpa_thread as th;
        let q = self.query(obj_type::DPA_THREAD, thread, th::Layout::SIZE_BYTES)?;
        let v = View::<th::Layout>::new(&q).map_err(|e| DevxError::Command {
            source: mlx5_dpa::mlx5::cmd::CmdError::Layout {
                opcode: mlx5_dpa::mlx5::Opcode::QUERY_GENERAL_OBJECT,
                source: e,
            },
            errno: None,
        })?;
        Ok(ThreadInfo {
            state: v.get(th::state) as u8,
            activations: v.get(th::activation_count),
            return_value: v.get(th::return_value),
            last_eu: v.get(th::last_eu) as u16,
            user_arg: v.get(th::user_arg),
        })
    }

    /// The process's outputs.
    ///
    /// # Errors
    /// Firmware's refusal.
    pub fn process_info(&self) -> Result<ProcessInfo, DevxError> {
        use l::dpa_process as p;
        let q = self.query(obj_type::DPA_PROCESS, self.process, p::Layout::SIZE_BYTES)?;
        let v = View::<p::Layout>::new(&q).map_err(|e| DevxError::Command {
            source: mlx5_dpa::mlx5::cmd::CmdError::Layout {
                opcode: mlx5_dpa::mlx5::Opcode::QUERY_GENERAL_OBJECT,
                source: e,
            },
            errno: None,
        })?;
        Ok(ProcessInfo {
            status: v.get(p::dpa_process_status) as u8,
            error_syndrome: v.get(p::error_syndrome) as u32,
            exit_status: v.get(p::exit_status) as u32,
            dumem_id: v.get(p::dumem_id) as u32,
            dumem_base: v.get(p::dumem_base),
        })
    }

    /// The process's coredump, decoded.
    ///
    /// # Errors
    /// Firmware's refusal (no failure yet) or an undecodable image.
    pub fn coredump(&self) -> Result<Coredump, DumpError> {
        let image = devx::exec(
            &*self.ctx,
            &DpaProcessCoredump {
                dpa_process_id: self.process,
            },
        )?;
        Ok(Coredump::parse(&image)?)
    }

    /// The offset in the process's DUMEM of DPA address `daddr`.
    pub fn dumem_offset(&self, daddr: u64) -> u64 {
        daddr - self.dumem_base
    }

    /// Writes a UAR register of the rig's UAR page (a host doorbell: CQ arm at 0x20, send
    /// doorbells at 0x800).
    pub fn uar_write(&self, off: usize, value: [u8; 8]) {
        let Some(uar) = &self.uar else { return };
        if !off.is_multiple_of(8) || off + 8 > uar.len {
            return;
        }
        // SAFETY: `uar` is mapped for `uar.len` bytes until it is freed in Drop; the register
        // is 8-byte aligned and inside the page (checked), written with one 64-bit store.
        unsafe {
            std::ptr::write_volatile(
                uar.base.as_ptr().add(off).cast::<u64>(),
                u64::from_ne_bytes(value),
            )
        }
    }

    /// Arms CQ `cqn` from the host (UAR + 0x20) with consumer index `ci`.
    pub fn arm_cq(&self, cqn: u32, ci: u32) {
        let word = ci & 0xff_ffff;
        let mut b = [0u8; 8];
        b[0..4].copy_from_slice(&word.to_be_bytes());
        b[4..8].copy_from_slice(&cqn.to_be_bytes());
        self.uar_write(0x20, b);
    }

    /// Registers `len` zeroed bytes of host memory as a UMEM (kept with the rig).
    ///
    /// # Errors
    /// Registration refused.
    pub fn host_buf(&mut self, len: usize, access: UmemAccess) -> Result<HostBuf, RigError> {
        let len = len.max(1).div_ceil(4096) * 4096;
        let mem = DmaBuf::new(len)?;
        let umem = MemUmem::register_range(&self.ctx, &mem, 0, len, access)?;
        let b = HostBuf {
            index: self.bufs.len(),
            umem_id: umem.id().0,
            addr: mem.va(0),
            len,
        };
        self.bufs.push((mem, umem, len));
        Ok(b)
    }

    /// Writes into a host buffer; `false` when out of range.
    pub fn host_write(&self, b: &HostBuf, off: usize, data: &[u8]) -> bool {
        match self.bufs.get(b.index) {
            Some((m, _, len)) if off.checked_add(data.len()).is_some_and(|e| e <= *len) => {
                m.put(off, data);
                true
            }
            _ => false,
        }
    }

    /// Reads from a host buffer (zeros when out of range).
    pub fn host_read(&self, b: &HostBuf, off: usize, n: usize) -> Vec<u8> {
        let mut v = vec![0u8; n];
        if let Some((m, _, len)) = self.bufs.get(b.index) {
            if off.checked_add(n).is_some_and(|e| e <= *len) {
                m.get(off, &mut v);
            }
        }
        v
    }

    /// Allocates another UAR page (freed with the rig's context).
    ///
    /// # Errors
    /// Allocation refused.
    pub fn alloc_uar(&mut self) -> Result<Uar, DevxError> {
        self.ctx.uar_alloc(UarKind::NonCached)
    }

    /// Creates a DPA_UAR extending UAR page `uar_page` to the process.
    ///
    /// # Errors
    /// Firmware's refusal.
    pub fn dpa_uar(&mut self, uar_page: u32) -> Result<u32, DevxError> {
        let process = self.process;
        self.create(mlx5_dpa::mlx5::cmd::DpaUarAttr {
            dpa_process_id: process,
            uar_page,
        })
    }

    /// Allocates another PD (kept with the rig).
    ///
    /// # Errors
    /// Firmware's refusal.
    pub fn alloc_pd(&mut self) -> Result<u32, DevxError> {
        let (pd, pdn) = devx::create(&self.ctx, &AllocPd)?;
        self.objs.push((0, pdn.0, pd));
        Ok(pdn.0)
    }
}

impl Drop for DpaRig {
    fn drop(&mut self) {
        while let Some((_, _, o)) = self.objs.pop() {
            if let Err(e) = o.destroy() {
                tracing::warn!(target: "mlx5_sim::testing::dpa_rig", "destroy failed: {e}");
            }
        }
        // Each registration deregisters (or, when refused, hands its memory to the context
        // to keep) as it goes.
        self.umem = None;
        self.bufs.clear();
        if let Some(u) = self.uar.take() {
            let _ = self.ctx.uar_free(u);
        }
    }
}
