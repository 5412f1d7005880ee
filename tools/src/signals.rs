//! Signals, as Unix tools treat them.
//!
//! - SIGPIPE: the default action (end the process quietly), so `mlx5-dpa devices | head -1`
//!   stops when `head` has read its line instead of failing a write (Rust ignores SIGPIPE by
//!   default, and `println!` then panics on the closed pipe).
//! - SIGINT: the long-running commands (`demo eth-loopback`, `sim`) install a handler that
//!   sets a flag, finish the step in hand, release what they created and print their summary.
//!   The handler is reset after it ran once, so a second Ctrl-C ends the process at once.

use std::sync::atomic::{AtomicBool, Ordering};

use nix::sys::signal::{sigaction, signal, SaFlags, SigAction, SigHandler, SigSet, Signal};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// SIGPIPE ends the process (the Unix default), as for any filter in a pipeline.
pub fn default_sigpipe() {
    // SAFETY: SIG_DFL installs no handler code; nothing else in the tool sets SIGPIPE.
    let _ = unsafe { signal(Signal::SIGPIPE, SigHandler::SigDfl) };
}

extern "C" fn on_sigint(_: nix::libc::c_int) {
    // Async-signal-safe: one atomic store.
    INTERRUPTED.store(true, Ordering::Relaxed);
}

/// From now on the first SIGINT sets [`interrupted`] instead of ending the process.
pub fn catch_sigint() {
    let action = SigAction::new(
        SigHandler::Handler(on_sigint),
        SaFlags::SA_RESETHAND | SaFlags::SA_RESTART,
        SigSet::empty(),
    );
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    let _ = unsafe { sigaction(Signal::SIGINT, &action) };
}

/// Whether SIGINT arrived since [`catch_sigint`].
pub fn interrupted() -> &'static AtomicBool {
    &INTERRUPTED
}

/// Whether SIGINT arrived.
pub fn was_interrupted() -> bool {
    INTERRUPTED.load(Ordering::Relaxed)
}
