//! The draft bit-manipulation operations the DPA compiler emits beyond Zbb and Zbs: Zbp 0.93
//! (generalized reverse and or-combine, shuffles, crossbar permutations, packing) and Zbr 0.93
//! (CRC-32 and CRC-32C steps), with the semantics of the reference C code of the draft
//! specification ("RISC-V Bitmanip Extension", version 0.93), written here as Rust.

/// `grev` on `XLEN` = 64 bits: the stages of `shamt & 63` swap adjacent bit groups of 1, 2, 4,
/// 8, 16 and 32 bits.
pub(crate) fn grev64(x: u64, shamt: u32) -> u64 {
    const M: [(u64, u32); 6] = [
        (0x5555_5555_5555_5555, 1),
        (0x3333_3333_3333_3333, 2),
        (0x0f0f_0f0f_0f0f_0f0f, 4),
        (0x00ff_00ff_00ff_00ff, 8),
        (0x0000_ffff_0000_ffff, 16),
        (0x0000_0000_ffff_ffff, 32),
    ];
    let mut x = x;
    for (i, &(m, s)) in M.iter().enumerate() {
        if shamt & (1 << i) != 0 {
            x = ((x & m) << s) | ((x & !m) >> s);
        }
    }
    x
}

/// `grevw`: `grev` of the low 32 bits with `shamt & 31` (the caller sign-extends).
pub(crate) fn grev32(x: u32, shamt: u32) -> u32 {
    (grev64(u64::from(x), shamt & 31) & 0xffff_ffff) as u32
}

/// `gorc` on 64 bits: as `grev`, but each stage ORs the swapped groups into the value.
pub(crate) fn gorc64(x: u64, shamt: u32) -> u64 {
    const M: [(u64, u32); 6] = [
        (0x5555_5555_5555_5555, 1),
        (0x3333_3333_3333_3333, 2),
        (0x0f0f_0f0f_0f0f_0f0f, 4),
        (0x00ff_00ff_00ff_00ff, 8),
        (0x0000_ffff_0000_ffff, 16),
        (0x0000_0000_ffff_ffff, 32),
    ];
    let mut x = x;
    for (i, &(m, s)) in M.iter().enumerate() {
        if shamt & (1 << i) != 0 {
            x |= ((x & m) << s) | ((x & !m) >> s);
        }
    }
    x
}

/// `gorcw`: `gorc` of the low 32 bits with `shamt & 31`.
pub(crate) fn gorc32(x: u32, shamt: u32) -> u32 {
    (gorc64(u64::from(x), shamt & 31) & 0xffff_ffff) as u32
}

fn shuffle_stage(src: u64, mask_l: u64, mask_r: u64, n: u32) -> u64 {
    let mut x = src & !(mask_l | mask_r);
    x |= ((src << n) & mask_l) | ((src >> n) & mask_r);
    x
}

/// The stages of a 64-bit shuffle, outermost first: (left mask, right mask, distance).
const SHUFFLE64: [(u64, u64, u32); 5] = [
    (0x0000_ffff_0000_0000, 0x0000_0000_ffff_0000, 16),
    (0x00ff_0000_00ff_0000, 0x0000_ff00_0000_ff00, 8),
    (0x0f00_0f00_0f00_0f00, 0x00f0_00f0_00f0_00f0, 4),
    (0x3030_3030_3030_3030, 0x0c0c_0c0c_0c0c_0c0c, 2),
    (0x4444_4444_4444_4444, 0x2222_2222_2222_2222, 1),
];

/// `shfl` on 64 bits with control `shamt & 31` (stages 16, 8, 4, 2, 1).
pub(crate) fn shfl64(x: u64, shamt: u32) -> u64 {
    let mut x = x;
    for &(l, r, n) in &SHUFFLE64 {
        if shamt & n != 0 {
            x = shuffle_stage(x, l, r, n);
        }
    }
    x
}

/// `unshfl` on 64 bits: the stages of `shfl` in reverse order (1, 2, 4, 8, 16).
pub(crate) fn unshfl64(x: u64, shamt: u32) -> u64 {
    let mut x = x;
    for &(l, r, n) in SHUFFLE64.iter().rev() {
        if shamt & n != 0 {
            x = shuffle_stage(x, l, r, n);
        }
    }
    x
}

/// `shflw`: `shfl` of the low 32 bits with control `shamt & 15`.
pub(crate) fn shfl32(x: u32, shamt: u32) -> u32 {
    (shfl64(u64::from(x), shamt & 15) & 0xffff_ffff) as u32
}

/// `unshflw`: `unshfl` of the low 32 bits with control `shamt & 15`.
pub(crate) fn unshfl32(x: u32, shamt: u32) -> u32 {
    (unshfl64(u64::from(x), shamt & 15) & 0xffff_ffff) as u32
}

/// `xperm.n` / `.b` / `.h` / `.w` (`sz_log2` 2, 3, 4, 5): each element of `rs2` selects an
/// element of `rs1` by index; an index past the register gives 0.
pub(crate) fn xperm(rs1: u64, rs2: u64, sz_log2: u32) -> u64 {
    let sz = 1u32 << sz_log2;
    let mask = (1u64 << sz) - 1;
    let mut r = 0u64;
    let mut i = 0;
    while i < 64 {
        let pos = ((rs2 >> i) & mask) << sz_log2;
        if pos < 64 {
            r |= ((rs1 >> pos) & mask) << i;
        }
        i += sz;
    }
    r
}

/// CRC-32 (reflected polynomial 0xEDB88320).
pub(crate) const CRC32: u64 = 0xedb8_8320;
/// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78).
pub(crate) const CRC32C: u64 = 0x82f6_3b78;

/// `crc32.*` / `crc32c.*`: `nbits` (8, 16, 32, 64) steps of the reflected CRC over `x`.
pub(crate) fn crc(x: u64, nbits: u32, poly: u64) -> u64 {
    let mut x = x;
    for _ in 0..nbits {
        x = (x >> 1) ^ (poly & (x & 1).wrapping_neg());
    }
    x
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grev_special_cases_are_the_known_permutations() {
        let v = 0x0123_4567_89ab_cdef_u64;
        assert_eq!(grev64(v, 63), v.reverse_bits());
        assert_eq!(grev64(v, 56), v.swap_bytes(), "rev8");
        let brev8 = u64::from_le_bytes(v.to_le_bytes().map(u8::reverse_bits));
        assert_eq!(grev64(v, 7), brev8, "rev.b");
        assert_eq!(grev64(v, 0), v);
        assert_eq!(grev32(0x1234_5678, 24), 0x7856_3412, "rev8.w");
        for s in 0..64 {
            assert_eq!(grev64(grev64(v, s), s), v, "grev is its own inverse ({s})");
        }
    }

    #[test]
    fn gorc_7_is_orc_b() {
        assert_eq!(gorc64(0x0010_0000_8000_0001, 7), 0x00ff_0000_ff00_00ff);
        assert_eq!(gorc32(0x0000_0100, 31), 0xffff_ffff);
    }

    #[test]
    fn shuffles_zip_and_unzip() {
        // zip (shfl 31) interleaves the halves: the low half lands on the even bits.
        assert_eq!(shfl64(0x0000_0000_ffff_ffff, 31), 0x5555_5555_5555_5555);
        assert_eq!(unshfl64(0x5555_5555_5555_5555, 31), 0x0000_0000_ffff_ffff);
        assert_eq!(shfl32(0x0000_ffff, 15), 0x5555_5555);
        let v = 0x0123_4567_89ab_cdef_u64;
        for s in 0..32 {
            assert_eq!(unshfl64(shfl64(v, s), s), v, "{s}");
            assert_eq!(unshfl32(shfl32(v as u32, s), s), v as u32, "{s}");
        }
    }

    #[test]
    fn crossbar_permutations() {
        let v = 0x0123_4567_89ab_cdef_u64;
        assert_eq!(xperm(v, 0xfedc_ba98_7654_3210, 2), v, "identity nibbles");
        assert_eq!(xperm(v, 0x0123_4567_89ab_cdef, 2), 0xfedc_ba98_7654_3210);
        assert_eq!(
            xperm(v, 0x0001_0203_0405_0607, 3),
            v.swap_bytes(),
            "bytes reversed"
        );
        assert_eq!(
            xperm(v, 0xffff_ffff_ffff_ffff, 3),
            0,
            "indices past the register"
        );
        assert_eq!(
            xperm(v, 0x0000_0000_0000_0001, 5),
            0x89ab_cdef_0123_4567,
            "words swapped"
        );
    }

    /// The check values of the CRC catalogue: "123456789" gives 0xCBF43926 (CRC-32) and
    /// 0xE3069283 (CRC-32C) with the usual initial value and final inversion around the steps.
    #[test]
    fn crc_steps_give_the_catalogue_check_values() {
        for (poly, check) in [(CRC32, 0xcbf4_3926u64), (CRC32C, 0xe306_9283)] {
            let bytewise = b"123456789"
                .iter()
                .fold(0xffff_ffffu64, |s, &b| crc(s ^ u64::from(b), 8, poly));
            assert_eq!(!bytewise & 0xffff_ffff, check);
            // The same through the 32-bit step over "1234" then bytes.
            let w = u64::from(u32::from_le_bytes(*b"1234"));
            let s = crc(0xffff_ffff ^ w, 32, poly);
            let s = b"56789"
                .iter()
                .fold(s, |s, &b| crc(s ^ u64::from(b), 8, poly));
            assert_eq!(!s & 0xffff_ffff, check);
        }
    }
}
