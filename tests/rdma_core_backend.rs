//! The rdma-core backend on whatever this machine has: no libraries, libraries but no device,
//! or a device. Every case must end in a clean result, never a hang or a panic.
//!
//! Set `MLX5_DPA_REQUIRE_RDMA_CORE=1` to make the absence of rdma-core's libraries a failure
//! (for machines where `ibverbs-providers` / `libibverbs1` are installed on purpose).
#![cfg(feature = "rdma-core")]

use std::sync::mpsc;
use std::time::{Duration, Instant};

use mlx5_dpa::devx::rdma_core::{self, RdmaCoreDevx};
use mlx5_dpa::devx::{Devx, DevxError};

/// Whether the two libraries can be loaded at all, checked independently of the backend.
fn libraries_load() -> bool {
    [rdma_core::LIBIBVERBS, rdma_core::LIBMLX5]
        .iter()
        .all(|name| {
            // SAFETY: loading rdma-core runs its initialisers, which have no preconditions.
            unsafe { libloading::Library::new(*name) }.is_ok()
        })
}

fn require_rdma_core() -> bool {
    std::env::var_os("MLX5_DPA_REQUIRE_RDMA_CORE").is_some_and(|v| v == "1")
}

/// Whether the kernel lists any RDMA device.
fn kernel_has_rdma_devices() -> bool {
    std::fs::read_dir("/sys/class/infiniband").is_ok_and(|mut d| d.next().is_some())
}

/// Runs `f` on another thread and fails if it takes longer than `limit`.
fn bounded<T: Send + 'static>(limit: Duration, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(limit)
        .unwrap_or_else(|e| panic!("did not return within {limit:?}: {e}"))
}

#[test]
fn available_matches_the_libraries() {
    let loads = libraries_load();
    assert!(
        loads || !require_rdma_core(),
        "MLX5_DPA_REQUIRE_RDMA_CORE=1 but rdma-core's libraries do not load"
    );
    match rdma_core::available() {
        Ok(()) => assert!(loads),
        Err(msg) => {
            // The libraries load, so every symbol must resolve.
            assert!(
                !loads,
                "libraries load but the backend is unavailable: {msg}"
            );
            assert!(msg.starts_with("rdma-core libraries not found: "), "{msg}");
            assert!(
                msg.contains(rdma_core::LIBIBVERBS) || msg.contains(rdma_core::LIBMLX5),
                "{msg}"
            );
        }
    }
}

#[test]
fn every_symbol_resolves() {
    if !libraries_load() {
        assert!(!require_rdma_core(), "rdma-core's libraries do not load");
        return;
    }
    let check = |soname: &str, symbols: &[&str]| {
        // SAFETY: as in `libraries_load`.
        let lib = unsafe { libloading::Library::new(soname) }.expect("loaded above");
        for sym in symbols {
            // SAFETY: only the address is looked up; it is never called through this type.
            let found = unsafe { lib.get::<*const ()>(*sym) };
            assert!(found.is_ok(), "{soname} lacks {sym}");
        }
    };
    check(rdma_core::LIBIBVERBS, rdma_core::IBVERBS_SYMBOLS);
    check(rdma_core::LIBMLX5, rdma_core::MLX5_SYMBOLS);
    check(rdma_core::LIBMLX5, rdma_core::MLX5_OPTIONAL_SYMBOLS);
    assert_eq!(rdma_core::available(), Ok(()));
}

#[test]
fn open_ends_cleanly() {
    let loads = libraries_load();
    let res = bounded(Duration::from_secs(60), || {
        RdmaCoreDevx::open(None).map(|d| d.describe())
    });
    match res {
        Err(DevxError::Unsupported(msg)) => {
            assert!(!loads, "libraries load but open() says: {msg}");
            assert!(!require_rdma_core(), "{msg}");
            assert!(msg.contains("rdma-core libraries not found"), "{msg}");
            assert!(
                msg.contains(rdma_core::LIBIBVERBS) || msg.contains(rdma_core::LIBMLX5),
                "{msg}"
            );
        }
        Err(DevxError::NoDevice { searched }) => {
            assert!(loads);
            assert!(
                searched.contains("rdma-core ibv_get_device_list"),
                "{searched}"
            );
        }
        Ok(describe) => {
            assert!(loads && kernel_has_rdma_devices());
            assert!(describe.contains("rdma-core"), "{describe}");
        }
        // An RDMA device that is not usable for DevX here (permissions, no DevX support).
        Err(e @ DevxError::Os { .. }) => {
            assert!(loads && kernel_has_rdma_devices(), "{e}");
            eprintln!("RDMA device present but not usable: {e}");
        }
        Err(e) => panic!("unexpected error: {e:?}"),
    }
    if loads && !kernel_has_rdma_devices() {
        // The case of a machine with rdma-core installed but no RDMA hardware.
        let res = bounded(Duration::from_secs(60), || {
            RdmaCoreDevx::open(None).map(drop)
        });
        assert!(matches!(res, Err(DevxError::NoDevice { .. })), "{res:?}");
    }
}

#[test]
fn open_by_unknown_name_ends_cleanly() {
    let res = bounded(Duration::from_secs(60), || {
        RdmaCoreDevx::open(Some("no-such-rdma-device")).map(drop)
    });
    match res {
        Err(DevxError::Unsupported(msg)) => assert!(!libraries_load(), "{msg}"),
        Err(DevxError::NoDevice { .. }) => assert!(libraries_load()),
        Err(DevxError::UnknownDevice { name, .. }) => assert_eq!(name, "no-such-rdma-device"),
        other => panic!("unexpected result: {other:?}"),
    }
}

/// Only does something on a machine with a DevX-capable mlx5 device.
#[test]
fn event_channel_read_is_bounded() {
    let Ok(dev) = bounded(Duration::from_secs(60), || RdmaCoreDevx::open(None)) else {
        return;
    };
    let chan = dev.event_channel().expect("event channel");
    let start = Instant::now();
    let ev = chan
        .read_event(Duration::from_millis(200))
        .expect("read_event");
    assert!(ev.is_none(), "no subscription, yet an event: {ev:?}");
    assert!(start.elapsed() < Duration::from_secs(5));
    assert!(dev.query_eqn(0).is_ok());
    let uar = dev
        .uar_alloc(mlx5_dpa::devx::UarKind::NonCached)
        .expect("uar");
    assert_eq!(uar.base.as_ptr() as usize % 4096, 0);
    dev.uar_free(uar).expect("uar_free");
}
