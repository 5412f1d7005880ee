//! What the GPU header tests share: the host build of the headers (g++), its symbols, and a
//! guard for memory that CPU "kernel" threads may still touch.
#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};

/// doca_error_t values (DOCA's public doca_error.h).
pub const DOCA_SUCCESS: i32 = 0;
pub const DOCA_ERROR_AGAIN: i32 = 5;
pub const DOCA_ERROR_INVALID_VALUE: i32 = 6;

/// The harness library, compiled once per test process (the tests that use it are ignored
/// where g++ is missing: `build.rs`).
pub fn harness() -> &'static libloading::Library {
    static LIB: OnceLock<libloading::Library> = OnceLock::new();
    LIB.get_or_init(|| {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        let out =
            std::env::temp_dir().join(format!("mlx5-dpa-gpu-harness-{}.so", std::process::id()));
        let status = std::process::Command::new("g++")
            .args([
                "-std=c++17",
                "-O2",
                "-Wall",
                "-Wextra",
                "-Werror",
                "-shared",
                "-fPIC",
            ])
            // Blocking completion waits give up after 60 s (a stalled test fails, never hangs;
            // a loaded machine is far inside it).
            .arg("-DDOCA_GPUNETIO_ETH_POLL_TIMEOUT_NS=60000000000ull")
            .arg("-I")
            .arg(root.join("src/gpu/include"))
            .arg(root.join("tests/gpu/gpunetio_harness.cpp"))
            .arg("-o")
            .arg(&out)
            .status();
        match status {
            Ok(s) if s.success() => {}
            Ok(s) => panic!("the headers do not build as host C++ ({s})"),
            Err(e) => panic!("g++ did not run: {e}"),
        }
        // SAFETY: the library is the harness just built from the project's own sources; its
        // initialisers are the C++ runtime's only.
        let lib = unsafe { libloading::Library::new(&out) }.expect("load the harness");
        let _ = std::fs::remove_file(&out);
        lib
    })
}

pub fn sym<T: Copy>(lib: &libloading::Library, name: &[u8]) -> T {
    // SAFETY: each name is a function of the harness with the signature `T` gives it (see
    // tests/gpu/gpunetio_harness.cpp).
    *unsafe { lib.get::<T>(name) }.expect("harness symbol")
}

/// Keeps queues and semaphores alive while CPU "kernel" threads may still touch their memory:
/// dropped as usual once the threads are done, leaked when a failing test unwinds while one
/// still runs, so that a failure is a failed assertion and never a use after free.
pub struct WhileKernels<T> {
    value: Option<T>,
    running: Arc<std::sync::atomic::AtomicUsize>,
}

impl<T> WhileKernels<T> {
    pub fn new(value: T) -> Self {
        WhileKernels {
            value: Some(value),
            running: Arc::new(std::sync::atomic::AtomicUsize::new(0)),
        }
    }

    /// Runs `f` on a thread counted as a kernel.
    pub fn spawn<R: Send + 'static>(
        &self,
        f: impl FnOnce() -> R + Send + 'static,
    ) -> std::thread::JoinHandle<R> {
        struct Done(Arc<std::sync::atomic::AtomicUsize>);
        impl Drop for Done {
            fn drop(&mut self) {
                self.0.fetch_sub(1, Ordering::AcqRel);
            }
        }
        self.running.fetch_add(1, Ordering::AcqRel);
        let done = Done(Arc::clone(&self.running));
        std::thread::spawn(move || {
            let _done = done;
            f()
        })
    }
}

impl<T> std::ops::Deref for WhileKernels<T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.value.as_ref().expect("present until dropped")
    }
}

impl<T> std::ops::DerefMut for WhileKernels<T> {
    fn deref_mut(&mut self) -> &mut T {
        self.value.as_mut().expect("present until dropped")
    }
}

impl<T> Drop for WhileKernels<T> {
    fn drop(&mut self) {
        if self.running.load(Ordering::Acquire) > 0 {
            std::mem::forget(self.value.take());
        }
    }
}
