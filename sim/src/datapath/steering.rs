//! Receive steering: the outer-header image of a frame (`fte_match_set_lyr_2_4`), flow tables
//! from the root, TIRs (direct or RSS with the Toeplitz hash), and delivery into an RQ.

use mlx5_dpa::mlx5::layout::View;
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
    image_bytes(&match_words(frame))
}

/// The bytes of an image given as words ([`words`] undone).
fn image_bytes(w: &[u64; 8]) -> [u8; 64] {
    let mut m = [0u8; 64];
    for (c, w) in m.chunks_exact_mut(8).zip(w) {
        c.copy_from_slice(&w.to_ne_bytes());
    }
    m
}

/// A native word whose byte `at` (0..8, in memory order) is `b`.
#[inline(always)]
fn at(b: u8, at: u32) -> u64 {
    let shift = if cfg!(target_endian = "little") {
        8 * at
    } else {
        56 - 8 * at
    };
    u64::from(b) << shift
}

/// A native word of the 8 bytes of `s` from `from` (zero where `s` ends first).
#[inline(always)]
fn load8(s: &[u8], from: usize) -> u64 {
    match s.get(from..from + 8) {
        Some(b) => u64::from_ne_bytes(b.try_into().unwrap_or([0; 8])),
        None => {
            let mut b = [0u8; 8];
            let tail = s.get(from..).unwrap_or(&[]);
            let n = tail.len().min(8);
            b[..n].copy_from_slice(&tail[..n]);
            u64::from_ne_bytes(b)
        }
    }
}

/// A native word keeping the bytes `lo..hi` (memory order) of `w`.
#[inline(always)]
fn keep(w: u64, lo: u32, hi: u32) -> u64 {
    let mask = (lo..hi).fold(0u64, |m, k| m | at(0xff, k));
    w & mask
}

/// The image of `frame` (`fte_match_set_lyr_2_4`) as eight native words, each put together in
/// registers from loads of the frame: an image written byte by byte and read back in words
/// stalls every read (a load over several pending byte stores cannot be forwarded from
/// them). Byte positions: smac 0..6, ethertype 6..8, dmac 8..14, first_prio / cfi / vid
/// 14..16, ip_protocol 16, ip_dscp / ecn 17, cvlan_tag / frag / ip_version / tcp_flags
/// 18..20, tcp ports 20..24, ipv4_ihl 26, ttl 27, udp ports 28..32, source address 32..48
/// (IPv4 at 44), destination 48..64 (IPv4 at 60).
#[inline]
fn match_words(frame: &[u8]) -> [u64; 8] {
    let mut w = [0u64; 8];
    if frame.len() < 14 {
        return w;
    }
    let mut ethertype = u16::from_be_bytes([frame[12], frame[13]]);
    let mut l3 = 14;
    let mut b18 = 0u8;
    // smac and, without a VLAN tag, the ethertype right behind it: one load.
    w[0] = load8(frame, 6);
    w[1] = keep(load8(frame, 0), 0, 6);
    if ethertype == 0x8100 && frame.len() >= 18 {
        b18 |= 0x80; // cvlan_tag
        w[1] |= at(frame[14], 6) | at(frame[15], 7); // prio, cfi, vid
        ethertype = u16::from_be_bytes([frame[16], frame[17]]);
        l3 = 18;
        w[0] = keep(w[0], 0, 6) | at(frame[16], 6) | at(frame[17], 7);
    }
    let ip = &frame[l3..];
    let (proto, l4) = match ethertype {
        0x0800 if ip.len() >= 20 => {
            let ihl = (ip[0] & 0xf) as usize * 4;
            b18 |= 4 << 1; // ip_version
            let frag = u16::from_be_bytes([ip[6], ip[7]]) & 0x3fff != 0;
            if frag {
                b18 |= 0x20;
            }
            w[2] |= at(ip[9], 0) | at(ip[1], 1);
            w[3] |= at((ip[0] & 0xf) << 4, 2) | at(ip[8], 3); // ipv4_ihl, ttl
            w[5] = keep(load8(ip, 8), 4, 8); // bytes 44..48: ip[12..16]
            w[7] = keep(load8(ip, 12), 4, 8); // bytes 60..64: ip[16..20]
            (ip[9], if frag { None } else { ip.get(ihl..) })
        }
        0x86dd if ip.len() >= 40 => {
            b18 |= 6 << 1;
            let tc = ((u16::from_be_bytes([ip[0], ip[1]]) >> 4) & 0xff) as u8;
            w[2] |= at(ip[6], 0) | at(tc, 1);
            w[3] |= at(ip[7], 3);
            w[4] = load8(ip, 8);
            w[5] = load8(ip, 16);
            w[6] = load8(ip, 24);
            w[7] = load8(ip, 32);
            (ip[6], ip.get(40..))
        }
        _ => (0, None),
    };
    if let Some(l4) = l4.filter(|l4| l4.len() >= 4) {
        let ports = keep(load8(l4, 0), 0, 4);
        match proto {
            6 => {
                w[2] |= if cfg!(target_endian = "little") {
                    ports << 32
                } else {
                    ports >> 32
                };
                if l4.len() >= 14 {
                    let flags = u16::from_be_bytes([l4[12], l4[13]]) & 0x1ff;
                    b18 |= (flags >> 8) as u8;
                    w[2] |= at(flags as u8, 3);
                }
            }
            17 => {
                w[3] |= if cfg!(target_endian = "little") {
                    ports << 32
                } else {
                    ports >> 32
                }
            }
            _ => {}
        }
    }
    w[2] |= at(b18, 2);
    w
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

/// What an entry does with a frame (see [`FlowStep`]).
fn step_of(e: &Fte) -> FlowStep {
    if e.action & action::DROP != 0 {
        return FlowStep::Drop;
    }
    match e.dests.first().copied() {
        Some(Dest::Tir(tirn)) => FlowStep::Tir {
            tirn,
            flow_tag: e.flow_tag,
        },
        Some(Dest::Table(next)) => FlowStep::Table(next),
        None => FlowStep::Drop,
    }
}

/// A table's lookup, from its groups (in creation order) and its entries in index order: an
/// entry outside its group's range, or whose value has a bit outside the group's mask, never
/// matches ([`matches`]) and is left out; of entries with equal values the lowest index is
/// kept (the first a walk would meet).
fn build_lookup(
    order: &[u32],
    entries: &std::collections::BTreeMap<u32, Fte>,
    groups: &crate::slab::Slab<FlowGroup>,
) -> FlowLookup {
    let mut lookup = FlowLookup {
        groups: order
            .iter()
            .filter_map(|g| {
                let mask = words(&groups.get(*g)?.mask);
                Some(GroupLookup {
                    id: *g,
                    mask,
                    matches_all: mask == [0; 8],
                    any: None,
                })
            })
            .collect(),
        ..FlowLookup::default()
    };
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
        let hit = FlowHit {
            index: *idx,
            step: step_of(e),
            counter: e.counter,
        };
        match lookup.groups.iter_mut().find(|g| g.id == e.group) {
            Some(g) if g.matches_all => {
                g.any.get_or_insert(hit);
            }
            _ => {
                lookup.map.entry(FlowKey(e.group, v)).or_insert(hit);
            }
        }
    }
    lookup
}

/// The entry of `table` that `frame` hits: the first group (in creation order) holding an
/// entry equal to the frame's image under the group's mask, and its lowest such index. One
/// hash probe per group, however many entries the table holds; a group with an empty mask
/// needs none. `None` when there is no such table.
fn lookup(fw: &mut Firmware, table: u32, image: &mut Image<'_>) -> Option<Option<FlowHit>> {
    let t = fw.tables.get_mut(table)?;
    let lookup = match &mut t.lookup {
        Some(l) => &*l,
        l @ None => &*l.insert(build_lookup(&t.groups, &t.entries, &fw.groups)),
    };
    Some(probe(lookup, image))
}

/// [`lookup`] on a table's lookup.
#[inline]
fn probe(lookup: &FlowLookup, image: &mut Image<'_>) -> Option<FlowHit> {
    lookup.groups.iter().find_map(|g| {
        if g.matches_all {
            return g.any;
        }
        let w = image.words();
        let key = FlowKey(g.id, std::array::from_fn(|k| w[k] & g.mask[k]));
        lookup.map.get(&key).copied()
    })
}

/// A frame's header image, put together when a group or RSS first needs it (a frame that
/// only meets groups with empty masks and a direct TIR never does).
struct Image<'a> {
    frame: &'a [u8],
    words: Option<[u64; 8]>,
}

impl Image<'_> {
    #[inline]
    fn words(&mut self) -> &[u64; 8] {
        self.words.get_or_insert_with(|| match_words(self.frame))
    }
}

/// The walk: from each root in turn, table by table (at most 8 deep), until an entry sends
/// the frame to a TIR or drops it. Counts the hit entries' counters, and notes them in
/// `seen`, when given.
fn steer(
    fw: &mut Firmware,
    roots: &[u32],
    image: &mut Image<'_>,
    len: usize,
    mut seen: Option<&mut FlowDecision>,
) -> Verdict {
    for &root in roots {
        let mut table = root;
        for _depth in 0..8 {
            let hit = match lookup(fw, table, image) {
                Some(Some(hit)) => hit,
                Some(None) | None => break,
            };
            if let Some(c) = hit.counter {
                count(fw, c, len);
                if let Some(s) = seen.as_deref_mut() {
                    s.counters.push(c);
                }
            }
            match hit.step {
                FlowStep::Drop => return Verdict::Drop,
                FlowStep::Tir { tirn, flow_tag } => return Verdict::Tir(tirn, flow_tag),
                FlowStep::Table(next) => table = next,
            }
        }
    }
    Verdict::Drop
}

/// Flow counter `c` counts a frame of `len` bytes.
#[inline]
fn count(fw: &mut Firmware, c: u32, len: usize) {
    if let Some(c) = fw.flow_counters.get_mut(c) {
        c.packets += 1;
        c.octets += len as u64;
    }
}

/// [`steer`] through the decision cache: a frame whose header image was steered before, with
/// the same tables, takes the same decision, and its side effects (flow counters) are done
/// again, without the walk.
fn steer_cached(
    fw: &mut Firmware,
    dp: &mut Datapath,
    image: &mut Image<'_>,
    len: usize,
) -> Verdict {
    // Decisions of older tables (or roots, which move only with the generation) are dropped.
    let c = &mut dp.flow_cache;
    if c.generation != fw.steering_gen {
        c.map.clear();
        c.generation = fw.steering_gen;
    }
    let key = *image.words();
    if let Some(d) = dp.flow_cache.map.get(&key) {
        for &c in &d.counters {
            count(fw, c, len);
        }
        return match d.tir {
            Some((tirn, tag)) => Verdict::Tir(tirn, tag),
            None => Verdict::Drop,
        };
    }
    let mut seen = FlowDecision::default();
    let verdict = steer(fw, &dp.roots, image, len, Some(&mut seen));
    seen.tir = match verdict {
        Verdict::Tir(tirn, tag) => Some((tirn, tag)),
        Verdict::Drop => None,
    };
    let map = &mut dp.flow_cache.map;
    if map.len() >= FLOW_CACHE_MAX {
        map.clear();
    }
    map.insert(key, seen);
    verdict
}

/// Receive path: RoCE v2 to the port's addresses goes to the RC transport; everything else
/// to steering, TIR, RQ, CQE.
pub(crate) fn receive(fw: &mut Firmware, dp: &mut Datapath, frame: &[u8], from_td: Option<u32>) {
    dp.port.stats.rx_frames += 1;
    dp.port.stats.rx_bytes += frame.len() as u64;
    let mut image = Image { frame, words: None };
    // One root is walked directly: its lookup is one probe per group (none for a group that
    // matches everything), cheaper than the cache's hash of the whole image.
    #[cfg(test)]
    let cache = dp.roots.len() > 1 && !dp.flow_cache.off;
    #[cfg(not(test))]
    let cache = dp.roots.len() > 1;
    let verdict = if cache {
        steer_cached(fw, dp, &mut image, frame.len())
    } else {
        steer(fw, &dp.roots, &mut image, frame.len(), None)
    };
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
    let (rqn, hash) = match tir.dispatch {
        Dispatch::Direct(rq) => (rq, 0),
        Dispatch::Indirect(rqt) => {
            let Some(rqt) = fw.rqts.get(rqt) else { return };
            let h = rss_hash(&tir.raw, &image_bytes(image.words()));
            (rqt.rqs[(h as usize) % rqt.rqs.len().max(1)], h)
        }
    };
    deliver_rq(fw, dp, rqn, frame, flow_tag, hash);
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

    /// Three root tables (three rigs, walked oldest first) with counters, and frames of
    /// eight header kinds in a pseudo-random order, each kind many times: every rig receives
    /// the same frames in the same order, the counters and the drops agree, with the decision
    /// cache and with every frame walked; also after the middle rig (a root) goes.
    #[test]
    fn cached_decisions_are_the_walks_over_several_roots() {
        use crate::testing::rig::{EthRig, RigConfig};
        use mlx5_dpa::mlx5::cmd::OuterMatch;
        const M1: [u8; 6] = [0x02, 0, 0x5e, 0, 0, 0x01];
        const M2: [u8; 6] = [0x02, 0, 0x5e, 0, 0, 0x02];
        // What each rig received, its flow counter (packets, octets), and the drops.
        type Seen = (Vec<Vec<Vec<u8>>>, Vec<(u64, u64)>, u64);
        fn frame(kind: u32, n: usize) -> Vec<u8> {
            let mut f = vec![0u8; 64];
            f[0..6].copy_from_slice(if kind & 1 == 0 { &M1 } else { &M2 });
            f[6..12].copy_from_slice(&[0x02, 0, 0, 0, 0, 0x09]);
            let ipv4 = kind & 2 == 0;
            f[12..14].copy_from_slice(if ipv4 { &[0x08, 0x00] } else { &[0x86, 0xdd] });
            f[14] = 0x45;
            f[23] = if kind & 4 == 0 { 17 } else { 6 };
            f[36..38].copy_from_slice(&5001u16.to_be_bytes());
            // The payload tells the frames apart.
            f[60..64].copy_from_slice(&(n as u32).to_be_bytes());
            f
        }
        fn run(off: bool) -> Seen {
            let dev = crate::Device::new(crate::Profile::bf3());
            dev.with_state(|st| st.dp.flow_cache.off = off);
            let ctx = dev.open_devx();
            let rules = [
                OuterMatch {
                    dmac: Some(M1),
                    ..OuterMatch::default()
                },
                OuterMatch {
                    ethertype: Some(0x0800),
                    ..OuterMatch::default()
                },
                OuterMatch {
                    ip_protocol: Some(6),
                    ..OuterMatch::default()
                },
            ];
            let mut rigs: Vec<Option<EthRig>> = rules
                .iter()
                .map(|&rule| {
                    let cfg = RigConfig {
                        rule,
                        counters: true,
                        log_rq: 6,
                        ..RigConfig::default()
                    };
                    let mut r = EthRig::new(ctx.clone(), cfg).expect("rig");
                    r.fill_rq();
                    Some(r)
                })
                .collect();
            let mut got = vec![Vec::new(); rigs.len()];
            let mut counted = vec![(0, 0); rigs.len()];
            let mut x = 7u32;
            for n in 0..400 {
                if n == 200 {
                    // The middle root goes: what it took now goes on to the last one.
                    let r = rigs[1].take().expect("rig 1");
                    let (_, f) = r.counters().expect("counters");
                    counted[1] = (f.packets, f.octets);
                }
                x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                let f = frame((x >> 16) % 8, n);
                rigs[0]
                    .as_mut()
                    .expect("rig 0")
                    .post_send(&f)
                    .expect("post");
                rigs[0].as_mut().expect("rig 0").ring_sq();
                dev.run_until_idle();
                rigs[0].as_mut().expect("rig 0").poll_tx(usize::MAX);
                for (k, r) in rigs.iter_mut().enumerate() {
                    if let Some(r) = r {
                        r.poll_rx(usize::MAX, |c| got[k].push(c.expect("frame").to_vec()));
                    }
                }
            }
            for (k, r) in rigs.iter().enumerate() {
                if let Some(r) = r {
                    let (_, f) = r.counters().expect("counters");
                    counted[k] = (f.packets, f.octets);
                }
            }
            let drops = dev.stats().port.rx_steering_drops;
            (got, counted, drops)
        }
        let walked = run(true);
        let cached = run(false);
        assert!(
            walked.0.iter().all(|g| g.len() > 10),
            "every rig takes frames"
        );
        assert!(walked.2 > 10, "and some frames match no rule");
        assert_eq!(cached.1, walked.1, "flow counters");
        assert_eq!(cached.2, walked.2, "steering drops");
        assert!(cached.0 == walked.0, "frames received by each rig");
    }

    /// Frames of more flows than the cache holds: it is emptied when full, never larger,
    /// and every frame is still steered (the rule matches all of them).
    #[test]
    fn the_decision_cache_stays_bounded() {
        use crate::testing::rig::{EthRig, RigConfig};
        use mlx5_dpa::mlx5::cmd::OuterMatch;
        let dev = crate::Device::new(crate::Profile::bf3());
        let ctx = dev.open_devx();
        // Two roots, so that frames go through the cache: one takes IPv6 frames (none are),
        // the other every frame.
        let mut rigs: Vec<EthRig> = [Some(0x86dd), None]
            .into_iter()
            .map(|ethertype| {
                let cfg = RigConfig {
                    rule: OuterMatch {
                        ethertype,
                        ..OuterMatch::default()
                    },
                    ..RigConfig::default()
                };
                let mut r = EthRig::new(ctx.clone(), cfg).expect("rig");
                r.fill_rq();
                r
            })
            .collect();
        let flows = FLOW_CACHE_MAX + 100;
        let mut most = 0;
        let mut got = 0;
        for batch in 0..flows.div_ceil(256) {
            for n in batch * 256..((batch + 1) * 256).min(flows) {
                let mut f = vec![0u8; 64];
                f[0..6].copy_from_slice(&[0x02, 0, 0x5e, 0, 0, 0x01]);
                f[12..14].copy_from_slice(&[0x08, 0x00]);
                f[14] = 0x45;
                // Another IPv4 destination each: another image.
                f[30..34].copy_from_slice(&(n as u32).to_be_bytes());
                rigs[0].post_send(&f).expect("post");
            }
            rigs[0].ring_sq();
            dev.run_until_idle();
            rigs[0].poll_tx(usize::MAX);
            got += rigs[1].poll_rx(usize::MAX, |c| assert!(c.is_ok()));
            most = most.max(dev.with_state(|st| st.dp.flow_cache.map.len()));
        }
        assert_eq!(got, flows);
        assert_eq!(most, FLOW_CACHE_MAX, "filled, then emptied");
        assert!(dev.with_state(|st| st.dp.flow_cache.map.len()) < FLOW_CACHE_MAX);
    }

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
                        counter: None,
                        flow_tag: 0,
                        value: widen(*v),
                    },
                );
            }
            let map = build_lookup(&order, &entries, &groups);
            for img in images {
                let image = widen(img);
                let walked = order.iter().find_map(|g| {
                    let grp = groups.get(*g)?;
                    entries
                        .range(grp.start..=grp.end)
                        .find(|(_, e)| e.group == *g && matches(&e.value, &grp.mask, &image))
                        .map(|(idx, _)| *idx)
                });
                let mut image = Image { frame: &[], words: Some(words(&image)) };
                proptest::prop_assert_eq!(probe(&map, &mut image).map(|h| h.index), walked);
            }
        }
    }

    proptest::proptest! {
        /// The image put together in words equals the one set field by field through the
        /// PRM layout (`fte_match_set_lyr_2_4`), for random frames: with and without a VLAN
        /// tag, IPv4 (fragments, options) and IPv6, TCP, UDP and others, cut short anywhere.
        #[test]
        fn match_image_equals_the_layouts_fields(
            macs in proptest::array::uniform12(proptest::num::u8::ANY),
            vlan in proptest::option::of(proptest::num::u16::ANY),
            l3 in 0u8..3,
            ihl in 5u8..8,
            proto in proptest::sample::select(vec![6u8, 17, 1, 47]),
            hdr in proptest::collection::vec(proptest::num::u8::ANY, 80),
            cut in proptest::option::of(0usize..120),
        ) {
            use mlx5_dpa::mlx5::layout::ViewMut;
            use mlx5_dpa::mlx5::layouts::fte_match_set_lyr_2_4 as m;
            let mut f = macs.to_vec();
            let ethertype: u16 = [0x0800, 0x86dd, 0x88b5][usize::from(l3)];
            if let Some(tci) = vlan {
                f.extend_from_slice(&[0x81, 0x00]);
                f.extend_from_slice(&tci.to_be_bytes());
            }
            f.extend_from_slice(&ethertype.to_be_bytes());
            let ip_at = f.len();
            f.extend_from_slice(&hdr);
            match l3 {
                0 => {
                    f[ip_at] = 0x40 | ihl;
                    f[ip_at + 9] = proto;
                }
                1 => f[ip_at + 6] = proto,
                _ => {}
            }
            if let Some(cut) = cut {
                f.truncate(cut);
            }
            // The expected image, field by field.
            let mut want = [0u8; 64];
            let mut v = ViewMut::<m::Layout>::new(&mut want[..]).unwrap();
            let be = |b: &[u8]| b.iter().fold(0u64, |a, x| a << 8 | u64::from(*x));
            if f.len() >= 14 {
                v.set(m::dmac_47_16, be(&f[0..4]));
                v.set(m::dmac_15_0, be(&f[4..6]));
                v.set(m::smac_47_16, be(&f[6..10]));
                v.set(m::smac_15_0, be(&f[10..12]));
                let tagged = f[12..14] == [0x81, 0x00] && f.len() >= 18;
                let (etype, ip) = if tagged {
                    v.set(m::cvlan_tag, 1);
                    let tci = be(&f[14..16]);
                    v.set(m::first_prio, tci >> 13);
                    v.set(m::first_cfi, (tci >> 12) & 1);
                    v.set(m::first_vid, tci & 0xfff);
                    (be(&f[16..18]), &f[18..])
                } else {
                    (be(&f[12..14]), &f[14..])
                };
                v.set(m::ethertype, etype);
                let l4 = match etype {
                    0x0800 if ip.len() >= 20 => {
                        v.set(m::ip_version, 4);
                        v.set(m::ipv4_ihl, u64::from(ip[0] & 0xf));
                        v.set(m::ip_dscp, u64::from(ip[1] >> 2));
                        v.set(m::ip_ecn, u64::from(ip[1] & 3));
                        v.set(m::ip_ttl_hoplimit, u64::from(ip[8]));
                        v.set(m::ip_protocol, u64::from(ip[9]));
                        for k in 0..4 {
                            v.set(m::src_ipv4_src_ipv6.at(12 + k).unwrap(), u64::from(ip[12 + k as usize]));
                            v.set(m::dst_ipv4_dst_ipv6.at(12 + k).unwrap(), u64::from(ip[16 + k as usize]));
                        }
                        let frag = be(&ip[6..8]) & 0x3fff != 0;
                        v.set(m::frag, u64::from(frag));
                        let ihl = usize::from(ip[0] & 0xf) * 4;
                        (!frag).then(|| ip.get(ihl..)).flatten().map(|l4| (ip[9], l4))
                    }
                    0x86dd if ip.len() >= 40 => {
                        v.set(m::ip_version, 6);
                        let tc = (be(&ip[0..2]) >> 4) & 0xff;
                        v.set(m::ip_dscp, tc >> 2);
                        v.set(m::ip_ecn, tc & 3);
                        v.set(m::ip_protocol, u64::from(ip[6]));
                        v.set(m::ip_ttl_hoplimit, u64::from(ip[7]));
                        for k in 0..16 {
                            v.set(m::src_ipv4_src_ipv6.at(k).unwrap(), u64::from(ip[8 + k as usize]));
                            v.set(m::dst_ipv4_dst_ipv6.at(k).unwrap(), u64::from(ip[24 + k as usize]));
                        }
                        ip.get(40..).map(|l4| (ip[6], l4))
                    }
                    _ => None,
                };
                if let Some((proto, l4)) = l4.filter(|(_, l4)| l4.len() >= 4) {
                    match proto {
                        6 => {
                            v.set(m::tcp_sport, be(&l4[0..2]));
                            v.set(m::tcp_dport, be(&l4[2..4]));
                            if l4.len() >= 14 {
                                v.set(m::tcp_flags, be(&l4[12..14]) & 0x1ff);
                            }
                        }
                        17 => {
                            v.set(m::udp_sport, be(&l4[0..2]));
                            v.set(m::udp_dport, be(&l4[2..4]));
                        }
                        _ => {}
                    }
                }
            }
            proptest::prop_assert_eq!(match_image(&f), want, "frame {:02x?}", f);
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
