//! Run-time corrections of provisional layouts (`mlx5_dpa::mlx5::overrides`): refused unless
//! they keep the compile-time rules; once installed, the driver's encoding, the model's
//! decoding and the decoder's table all use the moved field. The table is global: one test
//! function, in its own test binary.

use mlx5_dpa::dpa::{Process, ProcessAttr};
use mlx5_dpa::mlx5::layout::{Layout, ViewMut};
use mlx5_dpa::mlx5::layouts::dpa_process;
use mlx5_dpa::mlx5::{decode, layouts, overrides};

const APP: &[u8] = include_bytes!("../../fw-blobs/bin/rpc_calc.elf");

#[test]
fn moved_fields_are_checked_then_used_by_driver_model_and_decoder() {
    // Refused: each names its line and reason; nothing is installed.
    for (text, why) in [
        ("cqc.log_cq_size 0x0 0x5", "not provisional"),
        ("dpa_process.nope 0x0 0x8", "no field"),
        ("no_such_layout.x 0 1", "no layout"),
        ("dpa_process.heap_size 0x280 0x40", "overlaps"),
        ("dpa_process.heap_size 0x2e0 0x40", "past the layout"),
        ("dpa_process.heap_size zero 0x40", "not numbers"),
        ("dpa_process.heap_size 0x2c0 0x41", "1 to 64"),
        (
            "dpa_process.heap_size 0x2c0",
            "expected LAYOUT.FIELD OFFSET WIDTH",
        ),
        (
            "dpa_process.heap_size 0x2c0 0x40\ndpa_process.heap_size 0x2c0 0x40",
            "twice",
        ),
        ("nic_dpa_eug_reg.member_mask 0x0 0x20", "not a scalar"),
        // Regression (issue 30, defect 3): offset + width wrapped in u32 (a panic in a debug
        // build, a field reading 0 in a release build); refused with its line.
        (
            "# first\ndpa_process.heap_size 0xffffffc0 0x40",
            "line 2: dpa_process.heap_size at bit 0xffffffc0, 64 bits wide, ends past",
        ),
        ("dpa_process.heap_size 0xffffffff 0x1", "ends past"),
    ] {
        let e = overrides::load(text).unwrap_err().to_string();
        assert!(e.contains(why), "{text:?}: {e}");
        assert!(overrides::installed().is_empty());
    }

    // heap_size one field later: 0x140 -> 0x2c0 (bytes 0x58..0x60).
    assert_eq!(
        overrides::load("# moved\ndpa_process.heap_size 0x2c0 0x40 # the end\n").unwrap(),
        1
    );
    let mut ctx = vec![0u8; dpa_process::Layout::SIZE_BYTES];
    ViewMut::<dpa_process::Layout>::new(&mut ctx)
        .unwrap()
        .set(dpa_process::heap_size, 0x1122_3344_5566_7788);
    assert_eq!(ctx[0x58..0x60], 0x1122_3344_5566_7788u64.to_be_bytes());
    assert_eq!(ctx[0x28..0x30], [0; 8], "nothing at the declared place");
    let flat = decode::flatten(layouts::by_name("dpa_process").unwrap());
    let heap = flat.iter().find(|f| f.name == "heap_size").unwrap();
    assert_eq!((heap.offset, heap.width), (0x2c0, 0x40));

    // The model decodes with the same layouts: a process loads (it would refuse a heap of 0,
    // what it would read at the old place).
    let d = mlx5_sim::Device::with_profile("bf3").expect("bf3");
    d.start_engine();
    let ctx = d.open_devx();
    let p = Process::create(&ctx, APP, &ProcessAttr::default()).expect("process");
    assert_eq!(p.call("rpc_calculate", &[20, 22]).expect("rpc"), 42);
    drop(p);

    // Cleared: back where declared.
    overrides::clear();
    let mut ctx2 = vec![0u8; dpa_process::Layout::SIZE_BYTES];
    ViewMut::<dpa_process::Layout>::new(&mut ctx2)
        .unwrap()
        .set(dpa_process::heap_size, 7);
    assert_eq!(ctx2[0x2f], 7);
    drop(ctx);
    d.stop_engine();
}
