//! Building the coredump image of a failed process (format: `layouts::dpa::dpa_coredump`,
//! decoded by `mlx5_dpa::dpa::coredump`).

use mlx5_dpa::mlx5::layout::{Layout, ViewMut};
use mlx5_dpa::mlx5::layouts::{
    dpa_coredump as h, dpa_coredump_region as r, DPA_COREDUMP_MAGIC, DPA_COREDUMP_MAX_REGIONS,
    DPA_COREDUMP_VERSION,
};

use super::exec::{Done, Failure};
use crate::state::dpa::map;
use crate::state::Firmware;

/// `dpa_coredump_region.perms` bits.
const R: u8 = 1;
const W: u8 = 2;
const X: u8 = 4;
const MMIO: u8 = 8;

/// `dpa_coredump_region.kind` values.
mod kind {
    pub(super) const TEXT: u8 = 1;
    pub(super) const DATA: u8 = 2;
    pub(super) const HEAP: u8 = 3;
    pub(super) const DPA_MEM: u8 = 4;
    pub(super) const STACK: u8 = 5;
    pub(super) const CONTEXT: u8 = 6;
    pub(super) const OUTBOX: u8 = 7;
    pub(super) const WINDOW: u8 = 8;
    pub(super) const WINDOW_CFG: u8 = 9;
}

struct Region {
    base: u64,
    size: u64,
    perms: u8,
    kind: u8,
    obj: u32,
}

/// The image for the failure `f` of activation `d`.
pub(crate) fn build(fw: &Firmware, d: &Done, f: &Failure) -> Vec<u8> {
    let mut regions = Vec::new();
    if let Some(p) = fw.dpa.processes.get(&d.process) {
        regions.push(Region {
            base: p.mem.text_base(),
            size: p.mem.text_span,
            perms: R | X,
            kind: kind::TEXT,
            obj: 0,
        });
        if p.data_span > 0 {
            regions.push(Region {
                base: p.mem.dumem_base(),
                size: p.data_span,
                perms: R | W,
                kind: kind::DATA,
                obj: 0,
            });
        }
        if p.heap > 0 {
            regions.push(Region {
                base: p.mem.dumem_base() + p.data_span,
                size: p.heap,
                perms: R | W,
                kind: kind::HEAP,
                obj: 0,
            });
        }
        for (id, (addr, size)) in &p.dpa_mems {
            regions.push(Region {
                base: *addr,
                size: *size,
                perms: R | W,
                kind: kind::DPA_MEM,
                obj: *id,
            });
        }
    }
    regions.push(Region {
        base: map::context(d.slot),
        size: map::CONTEXT_PAGE,
        perms: R | W,
        kind: kind::CONTEXT,
        obj: d.thread,
    });
    regions.push(Region {
        base: map::stack_lo(d.slot),
        size: map::STACK_SIZE,
        perms: R | W,
        kind: kind::STACK,
        obj: d.thread,
    });
    for o in &d.outboxes {
        regions.push(Region {
            base: map::outbox(*o),
            size: map::OUTBOX_PAGE,
            perms: W | MMIO,
            kind: kind::OUTBOX,
            obj: *o,
        });
    }
    if let Some(w) = d.window {
        regions.push(Region {
            base: map::window_cfg(w),
            size: 8,
            perms: R | W | MMIO,
            kind: kind::WINDOW_CFG,
            obj: w,
        });
        regions.push(Region {
            base: map::WINDOW_BASE,
            size: map::WINDOW_SPAN,
            perms: R | W | MMIO,
            kind: kind::WINDOW,
            obj: w,
        });
    }
    let truncated = regions.len() > DPA_COREDUMP_MAX_REGIONS;
    regions.truncate(DPA_COREDUMP_MAX_REGIONS);
    let syndrome = f.syndrome;
    let hs = h::Layout::SIZE_BYTES;
    let rs = r::Layout::SIZE_BYTES;
    let mut image = vec![0u8; hs + regions.len() * rs + d.stack.len()];
    if let Ok(mut v) = ViewMut::<h::Layout>::new(&mut image) {
        v.set(h::magic, u64::from(DPA_COREDUMP_MAGIC));
        v.set(h::version, u64::from(DPA_COREDUMP_VERSION));
        v.set(h::header_size, hs as u64);
        v.set(h::cause, u64::from(f.cause));
        v.set(h::access, u64::from(f.access));
        v.set(h::access_size, u64::from(f.access_size));
        v.set(h::mem_error, u64::from(f.mem_error));
        v.set(h::eu, u64::from(d.eu));
        v.set(h::regions_truncated, u64::from(truncated));
        v.set(h::num_regions, regions.len() as u64);
        v.set(h::dpa_process_id, u64::from(d.process));
        v.set(h::dpa_thread_id, u64::from(d.thread));
        v.set(h::pc, f.pc);
        v.set(h::fault_addr, f.fault_addr);
        v.set(h::insn, u64::from(f.insn));
        v.set(h::device_code, u64::from(f.device_code));
        v.set(h::instret, d.instret);
        v.set(h::activation, d.activation);
        v.set(h::stack_addr, d.stack_addr);
        v.set(h::stack_len, d.stack.len() as u64);
        v.set(h::error_syndrome, u64::from(syndrome));
        for (i, x) in d.hart.x.iter().enumerate() {
            if let Some(fld) = h::gpr.at(i as u32) {
                v.set(fld, *x);
            }
        }
    }
    for (i, reg) in regions.iter().enumerate() {
        let at = hs + i * rs;
        if let Ok(mut v) = ViewMut::<r::Layout>::new(&mut image[at..at + rs]) {
            v.set(r::base_addr, reg.base);
            v.set(r::size, reg.size);
            v.set(r::perms, u64::from(reg.perms));
            v.set(r::kind, u64::from(reg.kind));
            v.set(r::obj_id, u64::from(reg.obj));
        }
    }
    let at = hs + regions.len() * rs;
    image[at..].copy_from_slice(&d.stack);
    image
}
