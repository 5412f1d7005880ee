//! Receive steering: the outer-header image of a frame (`fte_match_set_lyr_2_4`), flow tables
//! from the root, TIRs (direct or RSS with the Toeplitz hash), and delivery into an RQ.

use mlx5_dpa::mlx5::layout::{write_bits, View};
use mlx5_dpa::mlx5::layouts as l;

use crate::datapath::rq::deliver_rq;
use crate::state::datapath::*;
use crate::state::objects::*;
use crate::state::Firmware;

pub(crate) fn compute_roots(fw: &Firmware, roots: &mut Vec<u32>) {
    roots.clear();
    if let Some(r) = fw.root_table {
        roots.push(r);
        return;
    }
    // Without a root set by the kernel, every NIC RX table that is not itself a forward
    // target is a root, by level then age: what the kernel's bypass namespace does for DevX
    // tables hooked with a flow rule.
    roots.extend(
        fw.tables
            .iter()
            .filter(|(_, t)| t.meta.refs == 0 && t.table_type == TABLE_TYPE_NIC_RX)
            .map(|(id, _)| id),
    );
    roots.sort_unstable_by_key(|id| fw.tables.get(*id).map(|t| (t.level, t.created)));
}

/// The outer-header image of a frame, laid out as `fte_match_set_lyr_2_4`.
#[cfg(test)]
fn match_image(frame: &[u8]) -> [u8; 64] {
    let mut m = [0u8; 64];
    fill_match_image(frame, &mut m);
    m
}

/// Writes the image of `frame` into `m` (zeroed), in place: steering reads it back in 8-byte
/// words, and a copy of the freshly byte-written array would stall on every load (a load
/// that spans several pending byte stores cannot be forwarded from them).
#[inline]
fn fill_match_image(frame: &[u8], m: &mut [u8; 64]) {
    if frame.len() < 14 {
        return;
    }
    m[8..14].copy_from_slice(&frame[0..6]); // dmac
    m[0..6].copy_from_slice(&frame[6..12]); // smac
    let mut ethertype = u16::from_be_bytes([frame[12], frame[13]]);
    let mut l3 = 14;
    if ethertype == 0x8100 && frame.len() >= 18 {
        write_bits(m, 0x90, 1, 1); // cvlan_tag
        m[14..16].copy_from_slice(&frame[14..16]); // prio, cfi, vid
        ethertype = u16::from_be_bytes([frame[16], frame[17]]);
        l3 = 18;
    }
    m[6..8].copy_from_slice(&ethertype.to_be_bytes());
    let ip = &frame[l3..];
    let (proto, l4) = match ethertype {
        0x0800 if ip.len() >= 20 => {
            let ihl = (ip[0] & 0xf) as usize * 4;
            write_bits(m, 0x93, 4, 4); // ip_version
            write_bits(m, 0xd0, 4, u64::from(ip[0] & 0xf)); // ipv4_ihl
            m[17] = ip[1]; // dscp, ecn
            m[27] = ip[8]; // ttl
            m[16] = ip[9];
            m[44..48].copy_from_slice(&ip[12..16]);
            m[60..64].copy_from_slice(&ip[16..20]);
            let frag = u16::from_be_bytes([ip[6], ip[7]]) & 0x3fff != 0;
            if frag {
                write_bits(m, 0x92, 1, 1);
            }
            (ip[9], if frag { None } else { ip.get(ihl..) })
        }
        0x86dd if ip.len() >= 40 => {
            write_bits(m, 0x93, 4, 6);
            m[17] = ((u16::from_be_bytes([ip[0], ip[1]]) >> 4) & 0xff) as u8;
            m[27] = ip[7];
            m[16] = ip[6];
            m[32..48].copy_from_slice(&ip[8..24]);
            m[48..64].copy_from_slice(&ip[24..40]);
            (ip[6], ip.get(40..))
        }
        _ => (0, None),
    };
    if let Some(l4) = l4 {
        if l4.len() >= 4 {
            match proto {
                6 => {
                    m[20..24].copy_from_slice(&l4[0..4]);
                    if l4.len() >= 14 {
                        let flags = u16::from_be_bytes([l4[12], l4[13]]) & 0x1ff;
                        write_bits(m, 0x97, 9, u64::from(flags));
                    }
                }
                17 => m[28..32].copy_from_slice(&l4[0..4]),
                _ => {}
            }
        }
    }
}

/// Whether every byte of `image` under `mask` equals `value` (a byte of `value` outside its
/// mask never matches): the rule [`lookup`] implements, and the reference its tests hold it
/// to.
#[cfg(test)]
fn matches(value: &[u8; 64], mask: &[u8; 64], image: &[u8; 64]) -> bool {
    let word = |c: &[u8]| u64::from_ne_bytes(c.try_into().unwrap_or([0; 8]));
    let mut differ = 0u64;
    for ((v, m), i) in value
        .chunks_exact(8)
        .zip(mask.chunks_exact(8))
        .zip(image.chunks_exact(8))
    {
        differ |= (word(i) & word(m)) ^ word(v);
    }
    differ == 0
}

/// What steering decided.
enum Verdict {
    Tir(u32, u32),
    Drop,
}

/// The 64 bytes of a match value, mask or image as eight native words.
#[inline]
fn words(b: &[u8; 64]) -> [u64; 8] {
    std::array::from_fn(|k| u64::from_ne_bytes(b[8 * k..8 * k + 8].try_into().unwrap_or([0; 8])))
}

/// A table's lookup, from its entries in index order: an entry outside its group's range, or
/// whose value has a bit outside the group's mask, never matches ([`matches`]) and is left
/// out; of entries with equal values the lowest index is kept (the first a walk would meet).
fn build_lookup(
    entries: &std::collections::BTreeMap<u32, Fte>,
    groups: &crate::slab::Slab<FlowGroup>,
) -> FlowLookup {
    let mut map = FlowLookup::default();
    for (idx, e) in entries {
        let Some(grp) = groups.get(e.group) else {
            continue;
        };
        if *idx < grp.start || *idx > grp.end {
            continue;
        }
        let (v, m) = (words(&e.value), words(&grp.mask));
        if v.iter().zip(&m).any(|(v, m)| v & !m != 0) {
            continue;
        }
        map.entry(FlowKey(e.group, v)).or_insert(*idx);
    }
    map
}

/// The entry of `table` that `image` hits: the first group (in creation order) holding an
/// entry equal to the image under the group's mask, and its lowest such index. One hash
/// probe per group, however many entries the table holds.
fn lookup(fw: &mut Firmware, table: u32, image: &[u64; 8]) -> Option<Option<u32>> {
    let t = fw.tables.get_mut(table)?;
    let lookup = match &mut t.lookup {
        Some(l) => &*l,
        l @ None => &*l.insert(build_lookup(&t.entries, &fw.groups)),
    };
    Some(probe(&t.groups, &fw.groups, lookup, image))
}

/// [`lookup`] on the parts of a table: its groups in order, the group objects, its map.
#[inline]
fn probe(
    order: &[u32],
    groups: &crate::slab::Slab<FlowGroup>,
    lookup: &FlowLookup,
    image: &[u64; 8],
) -> Option<u32> {
    for g in order {
        let Some(grp) = groups.get(*g) else {
            continue;
        };
        let m = words(&grp.mask);
        let key = FlowKey(*g, std::array::from_fn(|k| image[k] & m[k]));
        if let Some(idx) = lookup.get(&key) {
            return Some(*idx);
        }
    }
    None
}

fn steer(fw: &mut Firmware, roots: &[u32], image: &[u8; 64]) -> Verdict {
    let image = words(image);
    for &root in roots {
        let mut table = root;
        for _depth in 0..8 {
            let Some(hit) = lookup(fw, table, &image) else {
                break;
            };
            let Some(idx) = hit else {
                if let Some(t) = fw.tables.get_mut(table) {
                    t.misses += 1;
                }
                break;
            };
            let Some(e) = fw
                .tables
                .get_mut(table)
                .and_then(|t| t.entries.get_mut(&idx))
            else {
                break;
            };
            e.hits += 1;
            if e.action & action::DROP != 0 {
                return Verdict::Drop;
            }
            match e.dests.first().copied() {
                Some(Dest::Tir(tir)) => return Verdict::Tir(tir, e.flow_tag),
                Some(Dest::Table(next)) => table = next,
                None => return Verdict::Drop,
            }
        }
    }
    Verdict::Drop
}

/// Receive path: RoCE v2 to the port's addresses goes to the RC transport; everything else
/// to steering, TIR, RQ, CQE.
pub(crate) fn receive(fw: &mut Firmware, dp: &mut Datapath, frame: &[u8], from_td: Option<u32>) {
    dp.port.stats.rx_frames += 1;
    dp.port.stats.rx_bytes += frame.len() as u64;
    let mut image = [0u8; 64];
    fill_match_image(frame, &mut image);
    let roots = std::mem::take(&mut dp.roots);
    let verdict = steer(fw, &roots, &image);
    dp.roots = roots;
    let (tirn, flow_tag) = match verdict {
        Verdict::Tir(t, tag) => (t, tag),
        Verdict::Drop => {
            dp.port.stats.rx_steering_drops += 1;
            return;
        }
    };
    let Some(tir) = fw.tirs.get(tirn) else {
        dp.port.stats.rx_steering_drops += 1;
        return;
    };
    if from_td == Some(tir.td) {
        // self_lb_block: bit 0 unicast, bit 1 multicast (dmac group bit).
        let multicast = frame[0] & 1 == 1;
        let block = if multicast {
            tir.self_lb_block & 2 != 0
        } else {
            tir.self_lb_block & 1 != 0
        };
        if block {
            dp.port.stats.rx_self_lb_blocked += 1;
            return;
        }
    }
    let rqn = match tir.dispatch {
        Dispatch::Direct(rq) => rq,
        Dispatch::Indirect(rqt) => {
            let Some(rqt) = fw.rqts.get(rqt) else { return };
            let h = rss_hash(&tir.raw, &image);
            rqt.rqs[(h as usize) % rqt.rqs.len().max(1)]
        }
    };
    deliver_rq(fw, dp, rqn, frame, flow_tag);
}

/// RSS: Toeplitz over the selected outer fields when `rx_hash_fn` is Toeplitz (2), else a fold.
fn rss_hash(tir_raw: &[u8], image: &[u8; 64]) -> u32 {
    // tir_raw holds create_tir_in from byte 0x10; tirc starts at byte 0x20 of the inbox.
    let Some(ctx) = tir_raw.get(0x10..) else {
        return 0;
    };
    let Ok(v) = View::<l::tirc::Layout>::new(ctx) else {
        return 0;
    };
    let sel =
        v.get(l::tirc::rx_hash_field_selector_outer.at(l::rx_hash_field_select::selected_fields));
    let mut input = HashInput::default();
    let v4 = image[18] >> 1 & 0xf == 4;
    let (src, dst) = if v4 {
        (&image[44..48], &image[60..64])
    } else {
        (&image[32..48], &image[48..64])
    };
    // selected_fields bits (MLX5_HASH_FIELD_SEL_*): 0 src ip, 1 dst ip, 2 l4 sport, 3 l4 dport.
    if sel & 1 != 0 {
        input.extend_from_slice(src);
    }
    if sel & 2 != 0 {
        input.extend_from_slice(dst);
    }
    let l4 = if image[16] == 6 {
        &image[20..24]
    } else {
        &image[28..32]
    };
    if sel & 4 != 0 {
        input.extend_from_slice(&l4[0..2]);
    }
    if sel & 8 != 0 {
        input.extend_from_slice(&l4[2..4]);
    }
    if v.get(l::tirc::rx_hash_fn) == 2 {
        let at = l::tirc::rx_hash_toeplitz_key
            .at(0)
            .map_or(0x28, |f| (f.offset() / 8) as usize);
        let key = ctx.get(at..at + 40).unwrap_or(&[0; 40]);
        toeplitz(key, input.bytes())
    } else {
        input
            .bytes()
            .iter()
            .fold(0u32, |a, b| a.rotate_left(5) ^ u32::from(*b))
    }
}

/// The bytes RSS hashes (at most two IPv6 addresses and two ports), without allocating.
struct HashInput {
    buf: [u8; 36],
    len: usize,
}

impl Default for HashInput {
    fn default() -> Self {
        HashInput {
            buf: [0; 36],
            len: 0,
        }
    }
}

impl HashInput {
    fn extend_from_slice(&mut self, b: &[u8]) {
        let end = (self.len + b.len()).min(self.buf.len());
        self.buf[self.len..end].copy_from_slice(&b[..end - self.len]);
        self.len = end;
    }
    fn bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

/// The Toeplitz hash (Microsoft RSS specification).
pub(crate) fn toeplitz(key: &[u8], input: &[u8]) -> u32 {
    let bit = |i: usize| {
        key.get(i / 8)
            .map_or(0u32, |b| u32::from(b >> (7 - i % 8) & 1))
    };
    let mut window: u32 = (0..32).fold(0, |w, i| (w << 1) | bit(i));
    let mut result = 0;
    for (n, byte) in input.iter().enumerate() {
        for b in 0..8 {
            if byte >> (7 - b) & 1 == 1 {
                result ^= window;
            }
            window = (window << 1) | bit(32 + n * 8 + b);
        }
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toeplitz_matches_the_rss_verification_suite() {
        // Microsoft RSS verification: the well-known key and the IPv4-only vector
        // 66.9.149.187 -> 161.142.100.80 gives 0x323e8fc2.
        let key: [u8; 40] = [
            0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3,
            0x8f, 0xb0, 0xd0, 0xca, 0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3,
            0x80, 0x30, 0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa,
        ];
        let input = [66, 9, 149, 187, 161, 142, 100, 80];
        assert_eq!(toeplitz(&key, &input), 0x323e_8fc2);
        let with_ports = [66, 9, 149, 187, 161, 142, 100, 80, 0x0a, 0xea, 0x06, 0xe6];
        assert_eq!(toeplitz(&key, &with_ports), 0x51cc_c178);
    }

    proptest::proptest! {
        /// `matches` against its definition, byte by byte; `image` is mostly `value` with a
        /// few flipped bits (so that matches happen), `mask` and `value` random.
        #[test]
        fn matching_compares_every_masked_byte(
            value in proptest::array::uniform32(proptest::prelude::any::<u16>()),
            mask in proptest::array::uniform32(proptest::prelude::any::<u16>()),
            flips in proptest::collection::vec((0usize..64, 0u8..8), 0..3),
            exact_value in proptest::prelude::any::<bool>(),
        ) {
            let bytes = |a: [u16; 32]| -> [u8; 64] {
                let mut out = [0u8; 64];
                for (k, w) in a.iter().enumerate() {
                    out[2 * k..2 * k + 2].copy_from_slice(&w.to_le_bytes());
                }
                out
            };
            let mask = bytes(mask);
            let mut value = bytes(value);
            if exact_value {
                // A value within its mask, as a well-formed rule has.
                for (v, m) in value.iter_mut().zip(&mask) {
                    *v &= m;
                }
            }
            let mut image = value;
            for (at, bit) in flips {
                image[at] ^= 1 << bit;
            }
            let by_byte = value
                .iter()
                .zip(&mask)
                .zip(&image)
                .all(|((v, m), i)| i & m == *v);
            proptest::prop_assert_eq!(matches(&value, &mask, &image), by_byte);
        }
    }

    proptest::proptest! {
        /// The lookup finds the entry a walk of the table finds (groups in order, each
        /// group's range by index, the first entry that `matches`), for tables of up to four
        /// groups and 24 entries whose values, masks and images differ in their first three
        /// bytes only, over a small alphabet, so that hits, ties and misses all happen;
        /// values with bits outside their mask and entries outside their group's range
        /// included.
        #[test]
        fn the_lookup_finds_the_entry_a_walk_finds(
            masks in proptest::collection::vec(proptest::array::uniform3(0u8..3), 1..5),
            ranges in proptest::collection::vec((0u32..8, 0u32..16), 1..5),
            fte in proptest::collection::vec((0u32..24, 0usize..5, proptest::array::uniform3(0u8..2)), 0..24),
            images in proptest::collection::vec(proptest::array::uniform3(0u8..2), 1..8),
        ) {
            // Masks from all three, values and images from the first two: ties between
            // entries are common, as are values with bits outside their mask.
            let alphabet = [0x00u8, 0x0f, 0xff];
            let widen = |b: [u8; 3]| {
                let mut out = [0u8; 64];
                for (o, k) in out.iter_mut().zip(b) {
                    *o = alphabet[usize::from(k)];
                }
                out
            };
            let mut groups = crate::slab::Slab::new(1, 64);
            let mut order = Vec::new();
            for (k, m) in masks.iter().enumerate() {
                let (start, len) = ranges[k % ranges.len()];
                let id = groups
                    .insert(FlowGroup {
                        meta: Meta::new(0),
                        table: 1,
                        start,
                        end: start + len,
                        mask: widen(*m),
                    })
                    .unwrap();
                order.push(id);
            }
            let mut entries = std::collections::BTreeMap::new();
            for (idx, g, v) in &fte {
                entries.insert(
                    *idx,
                    Fte {
                        meta: Meta::new(0),
                        group: order[g % order.len()],
                        action: action::FWD_DEST,
                        dests: Vec::new(),
                        flow_tag: 0,
                        value: widen(*v),
                        hits: 0,
                    },
                );
            }
            let map = build_lookup(&entries, &groups);
            for img in images {
                let image = widen(img);
                let walked = order.iter().find_map(|g| {
                    let grp = groups.get(*g)?;
                    entries
                        .range(grp.start..=grp.end)
                        .find(|(_, e)| e.group == *g && matches(&e.value, &grp.mask, &image))
                        .map(|(idx, _)| *idx)
                });
                proptest::prop_assert_eq!(probe(&order, &groups, &map, &words(&image)), walked);
            }
        }
    }

    #[test]
    fn match_image_places_fields_like_the_layout() {
        use mlx5_dpa::mlx5::layouts::fte_match_set_lyr_2_4 as m;
        let mut f = vec![0u8; 42];
        f[0..6].copy_from_slice(&[2, 0, 0, 0, 0, 2]);
        f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
        f[12..14].copy_from_slice(&[0x08, 0x00]);
        f[14] = 0x45;
        f[22] = 64;
        f[23] = 17;
        f[26..30].copy_from_slice(&[10, 0, 0, 1]);
        f[30..34].copy_from_slice(&[10, 0, 0, 2]);
        f[34..36].copy_from_slice(&1234u16.to_be_bytes());
        f[36..38].copy_from_slice(&4791u16.to_be_bytes());
        let img = match_image(&f);
        let v = View::<m::Layout>::new(&img).unwrap();
        assert_eq!(v.get(m::dmac_47_16), 0x0200_0000);
        assert_eq!(v.get(m::dmac_15_0), 0x0002);
        assert_eq!(v.get(m::smac_15_0), 0x0001);
        assert_eq!(v.get(m::ethertype), 0x0800);
        assert_eq!(v.get(m::ip_version), 4);
        assert_eq!(v.get(m::ip_protocol), 17);
        assert_eq!(v.get(m::ip_ttl_hoplimit), 64);
        assert_eq!(v.get(m::udp_sport), 1234);
        assert_eq!(v.get(m::udp_dport), 4791);
        let dst: Vec<u64> = (12..16)
            .map(|i| v.get(m::dst_ipv4_dst_ipv6.at(i).unwrap()))
            .collect();
        assert_eq!(dst, [10, 0, 0, 2]);
    }
}
