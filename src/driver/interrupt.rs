//! Ctrl-C (SIGINT) and SIGTERM: the first one asks the run to stop — dispatches in flight are
//! killed with their process groups, their exits recorded and their claims released, so nothing
//! is left claimed. A second one ends the process at once (the default action).

use std::sync::atomic::{AtomicBool, Ordering};

/// Set by the signal handler; dispatches poll it as their cancel flag.
pub static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(sig: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
    // SAFETY: signal() is async-signal-safe; restoring the default makes a second signal fatal.
    unsafe {
        libc::signal(sig, libc::SIG_DFL);
    }
}

/// Install the handlers (for `splice run` and `splice pass`).
pub fn install() {
    let handler = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
    // SAFETY: the handler only stores to an atomic and calls signal().
    unsafe {
        libc::signal(libc::SIGINT, handler);
        libc::signal(libc::SIGTERM, handler);
    }
}

/// Has the run been asked to stop?
pub fn requested() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}
