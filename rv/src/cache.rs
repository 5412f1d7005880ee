//! The decoded-code cache: basic blocks of decoded [`Insn`]s, found by their start address.
//!
//! A block is the run of instructions from an entry address up to and including the first
//! control transfer (branch, jump, `ecall`, `ebreak`, `fence.i`, illegal instruction), at most
//! [`MAX_BLOCK`] instructions, never past the end of its 4 KiB page. An instruction that crosses
//! a page boundary is a block of its own. Blocks are decoded into one arena (`code`); per cached
//! page, one entry per halfword gives the block starting there (the interpreter puts an end
//! marker of its own after each block, outside the block's length). The interpreter walks a
//! block by index, so the next instruction's position never waits for the current one's
//! decoding.
//!
//! A store by the hart into a page with blocks drops every block of that page (and the one
//! that may cross into it from the previous page); a filter of 4096 bits keeps the test to one
//! load for stores into pages without code. `fence.i` empties the cache.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use super::decode::Insn;

pub(crate) const PAGE_SHIFT: u32 = 12;
#[cfg(feature = "jit")]
const _: () = assert!(PAGE_SHIFT == crate::jit::PAGE_SHIFT);
const PAGE_SIZE: u64 = 1 << PAGE_SHIFT;
const SLOTS: usize = 1 << (PAGE_SHIFT - 1);
/// Most instructions in a block (the entry keeps the length in 8 bits).
pub(crate) const MAX_BLOCK: usize = 64;
/// Past this many cached pages or decoded instructions the cache starts over, bounding its
/// memory (8 KiB of entries per page, 12 bytes per instruction).
const MAX_PAGES: usize = 2048;
const MAX_CODE: usize = 1 << 21;
const FILTER_WORDS: usize = 64;

/// An impossible page number (guest page numbers are below 2^52).
pub(crate) const NO_PAGE: u64 = u64::MAX;

/// Decoded instructions of the code a hart has executed. A [`Bus`](super::Bus) that keeps one
/// across [`run`](super::run) calls (see [`Bus::code_cache`](super::Bus::code_cache)) must
/// [`clear`](CodeCache::clear) or [`invalidate`](CodeCache::invalidate) it when guest code
/// changes other than by the hart's own stores: new program image, DMA into text, a changed
/// memory map.
pub struct CodeCache {
    /// Decoded blocks, one after the other.
    code: Vec<Insn>,
    /// Per cached page (page `i` at `i * SLOTS`), per halfword: `start << 8 | len` of the
    /// block starting there, 0 when none.
    entries: Vec<u32>,
    /// Per cached page: the slots `lo .. hi` that may hold set entries (empty when
    /// `lo >= hi`), so dropping a page clears only them, not all of its slots.
    live: Vec<(u16, u16)>,
    /// Page number -> cached page.
    index: HashMap<u64, u32, BuildHasherDefault<PageHasher>>,
    /// Bit `filter_bit(vpn)` is set when a page with that number may be cached.
    filter: [u64; FILTER_WORDS],
    /// Compiled regions of the same code (feature `jit`, off until [`CodeCache::set_jit`]).
    #[cfg(feature = "jit")]
    pub(crate) jit: Option<Box<crate::jit::Jit>>,
    /// Per decoded instruction (used at block starts): entries so far, [`JIT_NEVER`], or
    /// [`JIT_COMPILED`] with the region's index.
    #[cfg(feature = "jit")]
    pub(crate) jit_state: Vec<u32>,
    /// Grows whenever a page is added or all are dropped: what [`CodeCache::holds_no_code`]
    /// answered stays true while it stays the same.
    #[cfg(feature = "jit")]
    generation: u64,
}

impl std::fmt::Debug for CodeCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CodeCache")
            .field("pages", &self.pages())
            .field("instructions", &self.code.len())
            .finish()
    }
}

impl Default for CodeCache {
    fn default() -> CodeCache {
        CodeCache {
            code: Vec::new(),
            entries: Vec::new(),
            live: Vec::new(),
            index: HashMap::default(),
            filter: [0; FILTER_WORDS],
            #[cfg(feature = "jit")]
            jit: None,
            #[cfg(feature = "jit")]
            jit_state: Vec::new(),
            #[cfg(feature = "jit")]
            generation: 0,
        }
    }
}

impl CodeCache {
    /// An empty cache.
    pub fn new() -> CodeCache {
        CodeCache::default()
    }

    /// Compiles hot code with the JIT (feature `jit`): a region is compiled once its start has
    /// been entered `hot` times (0 or 1: at once); `None` turns the JIT off. Returns whether
    /// the JIT is on (the host may have no Cranelift backend).
    #[cfg(feature = "jit")]
    pub fn set_jit(&mut self, hot: Option<u32>) -> bool {
        self.jit = hot
            .and_then(|h| crate::jit::Jit::new(h, None))
            .map(Box::new);
        self.jit_state.clear();
        self.jit.is_some()
    }

    /// As [`CodeCache::set_jit`], with the compiled regions in `share`, which the caches of
    /// other harts running the same program may hold too: a region one of them compiled, the
    /// others run without compiling it again. Only for code no hart stores into (a read-only
    /// text): a store drops the region from the share and from this cache, not from the others.
    #[cfg(feature = "jit")]
    pub fn set_jit_shared(&mut self, hot: u32, share: &crate::jit::JitShare) -> bool {
        self.jit = crate::jit::Jit::new(hot, Some(share)).map(Box::new);
        self.jit_state.clear();
        self.jit.is_some()
    }

    /// The JIT's compiled code this cache uses (with the `jit` feature and the JIT on).
    #[cfg(feature = "jit")]
    pub fn jit_share(&self) -> Option<crate::jit::JitShare> {
        self.jit.as_ref().map(|j| j.share())
    }

    /// The default number of entries before a region is compiled.
    #[cfg(feature = "jit")]
    pub const JIT_HOT: u32 = crate::jit::DEFAULT_HOT;

    /// Forgets every decoded instruction (and which blocks are compiled: the compiled code
    /// stays allocated until the JIT retires it, since a store of compiled code may get here).
    pub fn clear(&mut self) {
        #[cfg(feature = "jit")]
        {
            self.jit_state.clear();
            if let Some(j) = &mut self.jit {
                j.forget_local();
                j.invalidate_all();
            }
        }
        self.code.clear();
        self.entries.clear();
        self.live.clear();
        self.index.clear();
        self.filter = [0; FILTER_WORDS];
        #[cfg(feature = "jit")]
        {
            self.generation += 1;
        }
    }

    /// Number of pages the cache tracks.
    pub fn pages(&self) -> usize {
        self.live.len()
    }

    /// Forgets the decoded instructions overlapping guest bytes `addr .. addr + len` (whole
    /// pages of blocks at a time).
    pub fn invalidate(&mut self, addr: u64, len: u64) {
        if len == 0 {
            return;
        }
        // An instruction starting 2 bytes before `addr` (possibly in the previous page)
        // overlaps it too.
        let first = addr.saturating_sub(2) >> PAGE_SHIFT;
        let last = addr.saturating_add(len - 1) >> PAGE_SHIFT;
        if last - first >= MAX_PAGES as u64 {
            self.clear();
            return;
        }
        for vpn in first..=last {
            self.drop_page(vpn);
            #[cfg(feature = "jit")]
            if let Some(j) = &mut self.jit {
                j.invalidate_page(vpn);
            }
        }
    }

    /// Drops the blocks of page `vpn` and the last-halfword block of the page before (the only
    /// one that can reach into `vpn`).
    fn drop_page(&mut self, vpn: u64) {
        if let Some(&p) = self.index.get(&vpn) {
            let p = p as usize;
            if let Some(&(lo, hi)) = self.live.get(p).filter(|(lo, hi)| lo < hi) {
                let (lo, hi) = (usize::from(lo), usize::from(hi));
                if let Some(e) = self.entries.get_mut(p * SLOTS + lo..p * SLOTS + hi) {
                    e.fill(0);
                }
                if let Some(l) = self.live.get_mut(p) {
                    *l = (u16::MAX, 0);
                }
            }
        }
        if let Some(&p) = vpn.checked_sub(1).and_then(|v| self.index.get(&v)) {
            if let Some(e) = self.entries.get_mut((p as usize + 1) * SLOTS - 1) {
                *e = 0;
            }
        }
    }

    /// Whether a store of `size` bytes at `addr` may touch cached code (cheap, may say yes
    /// wrongly).
    #[inline(always)]
    pub(crate) fn may_hold(&self, addr: u64, size: u8) -> bool {
        let first = addr.wrapping_sub(2) >> PAGE_SHIFT;
        let last = addr.wrapping_add(u64::from(size) - 1) >> PAGE_SHIFT;
        self.filter_hit(first) || self.filter_hit(last)
    }

    #[inline(always)]
    fn filter_hit(&self, vpn: u64) -> bool {
        let bit = filter_bit(vpn);
        self.filter[bit / 64] & (1 << (bit % 64)) != 0
    }

    /// Whether no cached page can hold an instruction that a store into guest bytes
    /// `base .. base + len` would change (exact: the page index, not the filter). The
    /// answer holds while [`CodeCache::generation`] stays the same (invalidating keeps a
    /// page in the index, so it only makes the answer more careful than it needs to be).
    #[cfg(feature = "jit")]
    pub(crate) fn holds_no_code(&self, base: u64, len: u64) -> bool {
        // As in `may_hold`: an instruction may start 2 bytes before the first byte.
        let first = base.saturating_sub(2) >> PAGE_SHIFT;
        let last = base.saturating_add(len.saturating_sub(1)) >> PAGE_SHIFT;
        len > 0 && !self.index.keys().any(|&v| first <= v && v <= last)
    }

    /// See [`CodeCache::holds_no_code`].
    #[cfg(feature = "jit")]
    pub(crate) fn generation(&self) -> u64 {
        self.generation
    }

    /// The cached page of `vpn`, creating it (possibly after emptying a full cache).
    pub(crate) fn page(&mut self, vpn: u64) -> usize {
        if let Some(&p) = self.index.get(&vpn) {
            return p as usize;
        }
        if self.pages() >= MAX_PAGES {
            self.clear();
        }
        let p = self.pages();
        self.entries.resize((p + 1) * SLOTS, 0);
        self.live.push((u16::MAX, 0));
        self.index.insert(vpn, p as u32);
        #[cfg(feature = "jit")]
        {
            self.generation += 1;
        }
        let bit = filter_bit(vpn);
        self.filter[bit / 64] |= 1 << (bit % 64);
        p
    }

    /// The block starting at `pc` in cached page `page`: (first index in the arena, length,
    /// never 0), if decoded.
    #[inline(always)]
    pub(crate) fn block(&self, page: usize, pc: u64) -> Option<(usize, usize)> {
        let e = *self.entries.get(page * SLOTS + slot(pc))?;
        (e & 0xff != 0).then_some(((e >> 8) as usize, (e & 0xff) as usize))
    }

    /// Lends the arena to a run: the interpreter reads a block's instructions from it while
    /// stores change the rest of the cache (its page entries and filter). Every method that
    /// adds to or reads the arena takes it as an argument until [`CodeCache::return_code`];
    /// [`CodeCache::clear`] meanwhile empties only what the cache kept, so a run that
    /// clears the cache empties the arena too ([`CodeCache::clear_with`]).
    pub(crate) fn lend_code(&mut self) -> Vec<Insn> {
        std::mem::take(&mut self.code)
    }

    /// Takes back the arena [`CodeCache::lend_code`] lent.
    pub(crate) fn return_code(&mut self, code: Vec<Insn>) {
        self.code = code;
    }

    /// [`CodeCache::clear`] with the lent arena `code`.
    pub(crate) fn clear_with(&mut self, code: &mut Vec<Insn>) {
        self.clear();
        code.clear();
    }

    /// Whether the arena has room for another block and the interpreter's end marker after
    /// it (else the caller clears the cache first).
    pub(crate) fn has_room(code: &[Insn]) -> bool {
        code.len() + MAX_BLOCK < MAX_CODE
    }

    /// Ends the block for `pc` in page `page` whose instructions were pushed onto the arena
    /// `code` since index `start`; returns its length.
    pub(crate) fn finish_block(
        &mut self,
        code: &mut Vec<Insn>,
        page: usize,
        pc: u64,
        start: usize,
    ) -> usize {
        // Never more than a block: the builder stops at MAX_BLOCK.
        code.truncate(start + MAX_BLOCK);
        #[cfg(feature = "jit")]
        self.jit_state.resize(code.len(), 0);
        let len = code.len() - start.min(code.len());
        if let Some(e) = self.entries.get_mut(page * SLOTS + slot(pc)) {
            *e = (start as u32) << 8 | len as u32;
        }
        if let Some(l) = self.live.get_mut(page) {
            let at = slot(pc) as u16;
            *l = (l.0.min(at), l.1.max(at + 1));
        }
        len
    }
}

/// [`CodeCache::jit_state`]: the block's region does not compile.
#[cfg(feature = "jit")]
pub(crate) const JIT_NEVER: u32 = u32::MAX;
/// [`CodeCache::jit_state`]: the block's region is compiled; the low bits are its index.
#[cfg(feature = "jit")]
pub(crate) const JIT_COMPILED: u32 = 1 << 31;

/// Bytes from `pc` to the end of its page.
pub(crate) fn to_page_end(pc: u64) -> u64 {
    PAGE_SIZE - (pc & (PAGE_SIZE - 1))
}

/// The filter bit of a page: the top 12 bits of a multiplicative hash (text and data pages
/// of typical layouts, 0x40000000 and 0x80000000, differ only in high bits).
#[inline(always)]
fn filter_bit(vpn: u64) -> usize {
    (vpn.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 52) as usize
}

/// The halfword slot of `addr` within its page.
#[inline(always)]
fn slot(addr: u64) -> usize {
    ((addr >> 1) as usize) & (SLOTS - 1)
}

/// A multiplicative hash for page numbers (the std SipHash is needlessly slow here).
#[derive(Default)]
pub(crate) struct PageHasher(u64);

impl Hasher for PageHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(*b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }

    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0 ^ v).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}
