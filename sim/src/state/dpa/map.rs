//! The address map of a DPA process (see `state::dpa`'s module docs).

/// Where a program's text and data (its DUMEM) live: fixed by how it was linked (docs/sources.md
/// §5 and §8). The model takes the first of [`LINK_LAYOUTS`] that holds every segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinkLayout {
    pub text_base: u64,
    pub text_max: u64,
    pub dumem_base: u64,
    pub dumem_max: u64,
}

impl LinkLayout {
    /// Whether `[vaddr, end)` lies in the text window.
    pub const fn in_text(&self, vaddr: u64, end: u64) -> bool {
        vaddr >= self.text_base && end <= self.text_base + self.text_max
    }
    /// Whether `[vaddr, end)` lies in the data (DUMEM) window.
    pub const fn in_dumem(&self, vaddr: u64, end: u64) -> bool {
        vaddr >= self.dumem_base && end <= self.dumem_base + self.dumem_max
    }
}

/// Today's DPA link layout: text at 0x4000_0000, data at 0x8000_0000.
pub const CURRENT_LAYOUT: LinkLayout = LinkLayout {
    text_base: TEXT_BASE,
    text_max: TEXT_MAX,
    dumem_base: DUMEM_BASE,
    dumem_max: DUMEM_MAX,
};

/// The older layout of snap's builds (`ybedbug/snap-rdma` `dpa/flexio_linker.ld`): text at
/// 0x1000_0000, data at 0x2800_0000; each window ends where the next begins.
pub const OLDER_LAYOUT: LinkLayout = LinkLayout {
    text_base: 0x1000_0000,
    text_max: 0x1800_0000,
    dumem_base: 0x2800_0000,
    dumem_max: 0x1800_0000,
};

/// The layouts the loader accepts, in the order it tries them.
pub const LINK_LAYOUTS: [LinkLayout; 2] = [CURRENT_LAYOUT, OLDER_LAYOUT];

/// Text window (docs/sources.md §5: device ELFs link text at 0x40000000).
pub const TEXT_BASE: u64 = 0x4000_0000;
/// Size of the text window.
pub const TEXT_MAX: u64 = 0x4000_0000;
/// Most text the model loads for one process.
pub const TEXT_ALLOC_MAX: u64 = 64 << 20;
/// Largest ELF image a process may be created from.
pub const ELF_MAX: u64 = 256 << 20;
/// Data window and DUMEM base (data links at 0x80000000).
pub const DUMEM_BASE: u64 = 0x8000_0000;
/// Id space of DUMEM aliases, next to host UMEM ids (the model's choice): process `p`'s
/// DUMEM is UMEM `DUMEM_ID_BASE + p`.
pub const DUMEM_ID_BASE: u32 = 0x0800_0000;
/// Largest DUMEM window (it ends below the thread slots).
pub const DUMEM_MAX: u64 = 0x8000_0000;
/// Thread slots: a context page, a guard, a stack, unmapped space.
pub const SLOTS_BASE: u64 = 0x1_0000_0000;
pub const SLOT_STRIDE: u64 = 0x2_0000;
pub const CONTEXT_PAGE: u64 = 0x1000;
/// Start of the two pages that hold a thread's stack.
pub const STACK_OFFSET: u64 = 0x1_0000;
/// Bytes the stack's pages span.
pub const STACK_SPAN: u64 = 0x2000;
/// A thread's stack: "slightly less than 8 KB (8184 bytes)" (seed
/// `dpa-development-flexio-sdk.txt`, memory model). It ends at the top of its two pages; the
/// 8 bytes below it and everything down to the context page are the guard: a thread that
/// outgrows its stack faults there (a stack overflow in its coredump), as the seed warns it
/// misbehaves on hardware.
pub const STACK_SIZE: u64 = 8184;
/// Offset of the stack's top (`sp` at activation) in a slot.
pub const STACK_TOP_OFFSET: u64 = STACK_OFFSET + STACK_SPAN;
/// Offset of the stack's lowest byte in a slot.
pub const STACK_LO_OFFSET: u64 = STACK_TOP_OFFSET - STACK_SIZE;
/// Backing bytes of one slot (context page and the stack's pages; the guard has none).
pub const SLOT_BACKING: u64 = CONTEXT_PAGE + STACK_SPAN;
/// Most thread slots of one process.
pub const MAX_SLOTS: u32 = 1024;
/// Outbox pages, by DPA_OUTBOX id.
pub const OUTBOX_BASE: u64 = 0x2_0000_0000;
pub const OUTBOX_PAGE: u64 = 0x1000;
/// Window mkey registers, by DPA_WINDOW id.
pub const WINDOW_CFG_BASE: u64 = 0x3_0000_0000;
/// Window aperture: `WINDOW_BASE + H` is host address `H` (any 48-bit address).
pub const WINDOW_BASE: u64 = 1 << 48;
pub const WINDOW_SPAN: u64 = 1 << 48;
/// Return address of every activation: fetching it ends the activation (finish).
pub const SENTINEL: u64 = 0xffff_ffff_ffff_f000;

/// First address of thread slot `slot`.
pub const fn slot_base(slot: u32) -> u64 {
    SLOTS_BASE + slot as u64 * SLOT_STRIDE
}
/// Address of the thread context of slot `slot` (what `tp` holds).
pub const fn context(slot: u32) -> u64 {
    slot_base(slot)
}
/// Initial `sp` of slot `slot` (16-byte aligned top of its stack).
pub const fn stack_top(slot: u32) -> u64 {
    slot_base(slot) + STACK_TOP_OFFSET
}
/// Lowest stack address of slot `slot`.
pub const fn stack_lo(slot: u32) -> u64 {
    slot_base(slot) + STACK_LO_OFFSET
}
/// Whether `addr` lies in the guard below slot `slot`'s stack (between its context page and
/// its stack): where a thread that outgrew its stack faults.
pub const fn in_stack_guard(slot: u32, addr: u64) -> bool {
    addr >= slot_base(slot) + CONTEXT_PAGE && addr < stack_lo(slot)
}
/// Outbox page of DPA_OUTBOX `id`.
pub const fn outbox(id: u32) -> u64 {
    OUTBOX_BASE + id as u64 * OUTBOX_PAGE
}
/// mkey register of DPA_WINDOW `id`.
pub const fn window_cfg(id: u32) -> u64 {
    WINDOW_CFG_BASE + id as u64 * 8
}
