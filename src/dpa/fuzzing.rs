//! Entry points shared by the `fuzz/` targets and the property tests that replay the same
//! inputs in the normal test suite: bytes from outside (a coredump image from the device, a
//! host ELF from the user) through the DPA layer's parsers. Both must never panic, whatever
//! the bytes; what they accept must hold together.

use crate::dpa::app::{App, SignatureStatus};
use crate::dpa::coredump::Coredump;
use crate::mlx5::layout::Layout;
use crate::mlx5::layouts::dpa::{dpa_coredump, DPA_COREDUMP_MAGIC, DPA_COREDUMP_VERSION};

/// Parses `data[1..]` as a coredump image (`DPA_PROCESS_COREDUMP`'s output). When `data[0]`
/// is odd the header's magic, version and header size are made valid first, so that the
/// parser gets past them to the region table and the stack.
pub fn parse_coredump(data: &[u8]) {
    let Some((&sel, rest)) = data.split_first() else {
        return;
    };
    let mut image = rest.to_vec();
    if sel & 1 == 1 && image.len() >= 8 {
        image[0..4].copy_from_slice(&DPA_COREDUMP_MAGIC.to_be_bytes());
        image[4..6].copy_from_slice(&DPA_COREDUMP_VERSION.to_be_bytes());
        let header = dpa_coredump::Layout::SIZE_BYTES as u16;
        image[6..8].copy_from_slice(&header.to_be_bytes());
    }
    let Ok(d) = Coredump::parse(&image) else {
        return;
    };
    // What was accepted is consistent: the stack lies inside the image, and every lookup
    // and walk stays in bounds.
    assert!(d.stack.len() <= image.len());
    for r in &d.regions {
        let _ = d.region_of(r.base);
        let _ = d.region_of(r.base.wrapping_add(r.size));
    }
    let _ = d.region_of(d.pc);
    let _ = d.region_of(d.fault_addr);
    assert!(d.stack_words().count() <= d.stack.len() / 8 + 1);
}

/// Extracts the DPA applications from `data` as a host ELF (or a device ELF), and reads
/// everything `elf info` shows of each.
pub fn extract_apps(data: &[u8]) {
    let Ok(apps) = App::all_in_elf("fuzz", data) else {
        return;
    };
    for a in &apps {
        assert!(!a.name().is_empty());
        assert!(a.image().len() <= data.len(), "an app larger than its file");
        let _ = a.isa();
        let _ = a.e_flags_str();
        let _ = a.elf_entry();
        for s in a.segments() {
            let _ = s.flags_str();
        }
        let _ = a.entries().len();
        if let SignatureStatus::Present(sig) = a.signature() {
            let _ = sig.metadata.signature_type_name();
            assert!(sig.size <= data.len() as u64);
        }
    }
}
