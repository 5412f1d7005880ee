//! DPA memory for the host to hand to DPA code (FlexIO `flexio_buf_dev_alloc` /
//! `flexio_buf_dev_free`).
//!
//! Firmware gives memory to a process in DPA_MEM objects, each rounded up by firmware to its
//! `dpa_mem_block_size` and counted against the process's budget. Creating one object per
//! buffer would spend a whole block on an 8-byte counter, so this allocator creates DPA_MEM
//! objects of four **size classes** and sub-allocates buffers inside them:
//!
//! | class | serves requests of |
//! |---|---|
//! | 4 KiB | up to 4 KiB |
//! | 256 KiB | up to 256 KiB |
//! | 8 MiB | up to 8 MiB |
//! | 256 MiB | up to 256 MiB |
//!
//! A request is rounded up to [`DPA_BUF_ALIGN`] bytes and placed first-fit in a block of the
//! smallest class that holds it, a new block being created when none has room; a request
//! above 256 MiB gets a DPA_MEM object of its own (page rounded). A block whose last buffer is
//! freed is destroyed. Buffers are zeroed by firmware when their block is new; a reused range
//! inside a live block keeps old bytes (as FlexIO: use [`super::Process::memset`]).
//!
//! The classes are this driver's choice, not FlexIO's (whose allocator is not public).

use crate::devx::{self, Devx, DevxObj};
use crate::mlx5::cmd::{CreateGeneralObject, DpaMemAttr, QueryGeneralObject};
use crate::mlx5::layout::{Layout, View};
use crate::mlx5::layouts::{dpa::obj_type, dpa_mem};

use super::DpaError;
use std::sync::Arc;

/// Block sizes of the allocator's classes, smallest first.
pub const SIZE_CLASSES: [u64; 4] = [4 << 10, 256 << 10, 8 << 20, 256 << 20];

/// Alignment (and granule) of every buffer.
pub const DPA_BUF_ALIGN: u64 = 64;

/// One DPA_MEM object and the buffers carved out of it.
#[derive(Debug)]
struct Block {
    obj: DevxObj,
    daddr: u64,
    size: u64,
    /// Class index, or `None` for a dedicated block.
    class: Option<usize>,
    /// Live buffers: (offset, len), sorted by offset.
    used: Vec<(u64, u64)>,
}

impl Block {
    fn first_fit(&self, len: u64) -> Option<u64> {
        let mut at = 0u64;
        for &(off, l) in &self.used {
            if off - at >= len {
                return Some(at);
            }
            at = off + l;
        }
        (self.size - at >= len).then_some(at)
    }
}

/// The allocator of one process.
#[derive(Debug, Default)]
pub(crate) struct Heap {
    blocks: Vec<Block>,
}

/// Statistics of a process's DPA memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HeapStats {
    /// DPA_MEM objects per class (index as [`SIZE_CLASSES`]), and dedicated ones.
    pub blocks_per_class: [usize; 4],
    pub dedicated_blocks: usize,
    /// Live buffers and their bytes (after rounding).
    pub buffers: usize,
    pub bytes: u64,
}

impl Heap {
    /// Allocates `size` bytes; returns the DPA address and the rounded length.
    pub(crate) fn alloc(
        &mut self,
        dev: &Arc<dyn Devx>,
        process: u32,
        size: u64,
    ) -> Result<(u64, u64), DpaError> {
        if size == 0 {
            return Err(DpaError::BadArgs("a DPA buffer of 0 bytes".into()));
        }
        let len = size
            .checked_next_multiple_of(DPA_BUF_ALIGN)
            .ok_or_else(|| DpaError::BadArgs(format!("DPA buffer of {size:#x} bytes")))?;
        let class = SIZE_CLASSES.iter().position(|&c| c >= len);
        if let Some(c) = class {
            for b in self.blocks.iter_mut().filter(|b| b.class == Some(c)) {
                if let Some(off) = b.first_fit(len) {
                    let i = b.used.partition_point(|&(o, _)| o < off);
                    b.used.insert(i, (off, len));
                    return Ok((b.daddr + off, len));
                }
            }
        }
        let block_size = match class {
            Some(c) => SIZE_CLASSES[c],
            None => len
                .checked_next_multiple_of(4096)
                .ok_or_else(|| DpaError::BadArgs(format!("DPA buffer of {size:#x} bytes")))?,
        };
        let (obj, id) = devx::create(
            dev,
            &CreateGeneralObject(DpaMemAttr {
                dpa_process_id: process,
                size: block_size,
            }),
        )?;
        let q = devx::query(
            &obj,
            &QueryGeneralObject {
                obj_type: obj_type::DPA_MEM,
                obj_id: id,
                ctx_len: dpa_mem::Layout::SIZE_BYTES,
            },
        )?;
        let daddr = View::<dpa_mem::Layout>::new(&q)
            .map_err(|e| DpaError::Device(format!("DPA_MEM {id:#x} query: {e}")))?
            .get(dpa_mem::dpa_addr);
        if daddr == 0 {
            return Err(DpaError::Device(format!("DPA_MEM {id:#x} has no address")));
        }
        self.blocks.push(Block {
            obj,
            daddr,
            size: block_size,
            class,
            used: vec![(0, len)],
        });
        Ok((daddr, len))
    }

    /// Frees the buffer at `daddr`; destroys its block when it was the last one.
    pub(crate) fn free(&mut self, daddr: u64) {
        let Some(bi) = self
            .blocks
            .iter()
            .position(|b| daddr >= b.daddr && daddr < b.daddr + b.size)
        else {
            return;
        };
        let b = &mut self.blocks[bi];
        let off = daddr - b.daddr;
        if let Some(i) = b.used.iter().position(|&(o, _)| o == off) {
            b.used.remove(i);
        }
        if b.used.is_empty() {
            let b = self.blocks.remove(bi);
            // A refusal (an object still uses the memory) is logged by the handle; the block
            // is then released with the process.
            drop(b.obj);
        }
    }

    /// End (exclusive DPA address) of the highest live block, or 0.
    pub(crate) fn extent(&self) -> u64 {
        self.blocks
            .iter()
            .map(|b| b.daddr + b.size)
            .max()
            .unwrap_or(0)
    }

    pub(crate) fn stats(&self) -> HeapStats {
        let mut s = HeapStats::default();
        for b in &self.blocks {
            match b.class {
                Some(c) => s.blocks_per_class[c] += 1,
                None => s.dedicated_blocks += 1,
            }
            s.buffers += b.used.len();
            s.bytes += b.used.iter().map(|&(_, l)| l).sum::<u64>();
        }
        s
    }

    /// Destroys every block, newest first.
    pub(crate) fn clear(&mut self) {
        while let Some(b) = self.blocks.pop() {
            drop(b.obj);
        }
    }
}

impl Drop for Heap {
    fn drop(&mut self) {
        self.clear();
    }
}
