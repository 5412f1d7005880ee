//! Memory keys as the datapath uses them: an lkey, address and length from a WQE, checked
//! against the mkey's PD, rights and range, to the DMA window behind it.

use mlx5_dpa::mlx5::wire::cqe::syndrome;

use crate::state::Firmware;

/// Resolves `lkey` for `len` bytes at `addr` on behalf of a queue in `pd`. Inlined: its
/// result, returned through memory, stalled the caller's first load of it.
#[inline]
pub(crate) fn translate(
    fw: &Firmware,
    pd: u32,
    lkey: u32,
    addr: u64,
    len: usize,
    write: bool,
) -> Result<crate::mem::Dma, u8> {
    let m = fw
        .mkeys
        .get(lkey >> 8)
        .filter(|m| m.key == lkey)
        .ok_or(syndrome::LOCAL_PROT_ERR)?;
    // Gathers need local read (`lr`), scatters local write (`lw`).
    if m.pd != pd || (write && !m.lw) || (!write && !m.lr) {
        return Err(syndrome::LOCAL_PROT_ERR);
    }
    let off = addr.checked_sub(m.start).ok_or(syndrome::LOCAL_PROT_ERR)?;
    if off.checked_add(len as u64).is_none_or(|end| end > m.len) {
        return Err(syndrome::LOCAL_PROT_ERR);
    }
    m.dma.sub(off as usize, len).ok_or(syndrome::LOCAL_PROT_ERR)
}
