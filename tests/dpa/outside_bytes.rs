//! Bytes from outside through the parsers the fuzz targets drive (`fuzz/fuzz_targets/
//! coredump.rs`, `host_elf_apps.rs`, `roce_frame.rs`, `responder_frame.rs`), as property
//! tests in the normal test run: random and mutated inputs, starting from real ones (a
//! coredump the model wrote, the fw-blobs ELFs, the host-ELF fixture, real frames).

use crate::dpa_common;

use mlx5_dpa::dpa::fuzzing::{extract_apps, parse_coredump};
use mlx5_dpa::dpa::{Process, ProcessAttr};
use mlx5_sim::testing::fuzzing::{fuzz_responder_frame, fuzz_roce_frame};
use proptest::prelude::*;

const SELFTEST: &[u8] = include_bytes!("../../fw-blobs/bin/selftest.elf");
const HOST_APPS: &[u8] = include_bytes!("../data/dpa/host_apps.elf");

/// Applies `edits` (index, byte) to a copy of `base` and cuts it at `cut`.
fn mutate(base: &[u8], edits: &[(prop::sample::Index, u8)], cut: prop::sample::Index) -> Vec<u8> {
    let mut b = base.to_vec();
    for (i, v) in edits {
        let i = i.index(b.len());
        b[i] = *v;
    }
    let keep = b.len() - cut.index(b.len() / 8 + 1);
    b.truncate(keep);
    b
}

/// A real coredump image, as the model writes it for a load fault.
fn real_coredump() -> Vec<u8> {
    let (d, ctx) = dpa_common::model("bf3");
    let p = Process::create(&ctx, SELFTEST, &ProcessAttr::default()).expect("process");
    assert!(p.call_raw("st_fault_load", 0x10).is_err());
    let raw = p.coredump_raw().expect("coredump image");
    drop(p);
    drop(ctx);
    d.stop_engine();
    raw
}

/// An ARP request for 10.99.0.2 and an ICMP echo request to it.
fn real_frames() -> Vec<Vec<u8>> {
    let mut arp = vec![0xffu8; 6];
    arp.extend([2, 0, 0, 0, 0, 9, 0x08, 0x06, 0, 1, 8, 0, 6, 4, 0, 1]);
    arp.extend([
        2, 0, 0, 0, 0, 9, 10, 99, 0, 1, 0, 0, 0, 0, 0, 0, 10, 99, 0, 2,
    ]);
    let mut echo = vec![2, 0, 0x5e, 0, 0, 2, 2, 0, 0, 0, 0, 9, 0x08, 0x00];
    echo.extend([
        0x45, 0, 0, 28, 0, 1, 0, 0, 64, 1, 0, 0, 10, 99, 0, 1, 10, 99, 0, 2,
    ]);
    echo.extend([8, 0, 0, 0, 0, 1, 0, 1]);
    echo.resize(60, 0);
    vec![arp, echo]
}

#[test]
fn real_inputs_go_through_the_entries() {
    let dump = real_coredump();
    parse_coredump(&[0].iter().chain(&dump).copied().collect::<Vec<u8>>());
    extract_apps(SELFTEST);
    extract_apps(HOST_APPS);
    for f in real_frames() {
        fuzz_responder_frame(&f);
        fuzz_roce_frame(&f);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn coredump_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..4096)) {
        parse_coredump(&data);
    }

    #[test]
    fn mutated_coredumps_never_panic(
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
        cut in any::<prop::sample::Index>(),
    ) {
        use std::sync::OnceLock;
        static DUMP: OnceLock<Vec<u8>> = OnceLock::new();
        let dump = DUMP.get_or_init(real_coredump);
        let mut input = vec![0u8];
        input.extend(mutate(dump, &edits, cut));
        parse_coredump(&input);
    }

    #[test]
    fn mutated_host_elfs_never_panic(
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
        cut in any::<prop::sample::Index>(),
        host in any::<bool>(),
    ) {
        let base = if host { HOST_APPS } else { SELFTEST };
        extract_apps(&mutate(base, &edits, cut));
    }

    #[test]
    fn frame_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..256)) {
        fuzz_roce_frame(&data);
        fuzz_responder_frame(&data);
    }

    #[test]
    fn mutated_frames_never_panic(
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6),
        cut in any::<prop::sample::Index>(),
        which in 0usize..2,
    ) {
        let f = mutate(&real_frames()[which], &edits, cut);
        fuzz_responder_frame(&f);
        fuzz_roce_frame(&f);
    }
}
