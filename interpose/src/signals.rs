//! SIGTERM and SIGINT: let the tools write what they can (the summary
//! profiler writes this rank's report if no lock it needs is held by the
//! interrupted code), then die of the signal as before. A handler the
//! program installed itself is left alone.

use std::sync::atomic::{AtomicBool, Ordering};

static INSTALLED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(sig: libc::c_int) {
    for t in crate::tools::tools() {
        t.emergency(true);
    }
    // SAFETY: restoring the default action and re-raising are
    // async-signal-safe.
    unsafe {
        libc::signal(sig, libc::SIG_DFL);
        libc::raise(sig);
    }
}

/// Install the handlers where the program has none.
pub fn install() {
    if INSTALLED.swap(true, Ordering::Relaxed) {
        return;
    }
    for sig in [libc::SIGTERM, libc::SIGINT] {
        // SAFETY: querying then setting a handler with a zeroed sigaction.
        unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(sig, std::ptr::null(), &mut old) != 0
                || old.sa_sigaction != libc::SIG_DFL
            {
                continue;
            }
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as *const () as usize;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}
