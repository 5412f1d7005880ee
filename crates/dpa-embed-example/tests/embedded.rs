//! The embedded application: its typed RPC handles call the DPA on the model, and the test
//! binary itself carries the device ELF in `.dpa_bin_calc`, as `App::all_in_host_elf` and
//! `mlx5-dpa elf info` find it.

use dpa_embed_example::calc;
use mlx5_dpa::dpa::app::{App, SignatureLocation, SignatureStatus};
use mlx5_dpa::dpa::{Process, ProcessAttr};

#[test]
fn typed_rpcs_run_on_the_dpa() {
    let d = mlx5_sim::Device::with_profile("bf3").expect("bf3");
    d.start_engine();
    let ctx = d.open_devx();
    let p = Process::create(&ctx, calc::image(), &ProcessAttr::default()).expect("process");
    assert_eq!(calc::rpc::rpc_calculate(&p, 40, 2).expect("rpc"), 42);
    // Eight arguments, each a digit of the result (the sample's own check).
    let r = calc::rpc::rpc_digits8(&p, 1, 2, 3, 4, 5, 6, 7, 8).expect("rpc");
    assert_eq!(r, 12_345_678);
    let h = p
        .event_handler(&calc::handlers::rpc_echo(7))
        .expect("handler");
    drop(h);
    drop(p);
    drop(ctx);
    d.stop_engine();
    assert!(d.inventory().is_empty(), "{}", d.inventory());
}

#[test]
fn this_binary_carries_the_device_elf_in_its_section() {
    let exe = std::env::current_exe().expect("the test binary");
    let bytes = std::fs::read(exe).expect("read it");
    let apps = App::all_in_host_elf(&bytes).expect("host ELF");
    let found = apps
        .iter()
        .find(|a| a.name() == calc::NAME)
        .expect("application calc in .dpa_bin_calc");
    assert_eq!(found.image(), calc::image());
    assert_eq!(
        calc::app().expect("app").image(),
        std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../fw-blobs/bin/rpc_calc.elf"
        ))
        .expect("the ELF")
    );
}

#[test]
fn the_embedded_signature_loads_on_a_device_that_requires_one() {
    let d = mlx5_sim::Device::with_profile("bf3").expect("bf3");
    let root = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/data/auth/root.der"
    ))
    .expect("the test root");
    d.with_profile_mut(|p| p.dpa_auth_roots = vec![root]);
    d.start_engine();
    let ctx = d.open_devx();
    // Without the signature the device refuses the image; with it, the process runs.
    assert!(Process::create(&ctx, calc::image(), &ProcessAttr::default()).is_err());
    let p = Process::create(&ctx, calc::image(), &calc::process_attr()).expect("signed");
    assert_eq!(calc::rpc::rpc_calculate(&p, 2, 3).expect("rpc"), 5);
    drop(p);
    drop(ctx);
    d.stop_engine();

    // The binary carries it as DPACC's packaging does: .dpa_sig_name_calc names the section.
    let bytes = std::fs::read(std::env::current_exe().expect("exe")).expect("read");
    let app = App::all_in_host_elf(&bytes)
        .expect("host ELF")
        .into_iter()
        .find(|a| a.name() == calc::NAME)
        .expect("calc");
    match app.signature() {
        SignatureStatus::Present(s) => {
            assert_eq!(s.location, SignatureLocation::Host);
            assert_eq!(s.section, ".dpa_sig_calc");
            assert_eq!(Some(&s.data[..]), calc::crypto_data());
        }
        other => panic!("no signature found: {other:?}"),
    }
}
