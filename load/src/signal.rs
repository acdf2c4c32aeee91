//! Stopping a load by signal: SIGINT, SIGTERM and SIGHUP handlers that
//! only set an atomic, which every loop of the engine reads. They are
//! process-wide, so a library user installs them only by asking
//! ([`crate::RunOpts::catch_signals`]).

use std::io;
use std::sync::atomic::{AtomicI32, Ordering::Relaxed};

/// The signal that asked us to stop (0: none yet).
static SIGNAL: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    // Only an atomic store: async-signal-safe.
    SIGNAL.store(sig, Relaxed);
}

/// Install the handlers of SIGINT, SIGTERM and SIGHUP, with
/// `SA_RESETHAND`: a second signal of the same kind kills the process
/// with the default action, should the clean stop hang.
pub fn install() -> io::Result<()> {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: a zeroed sigaction is valid; the handler only stores an
        // atomic.
        let rc = unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as *const () as usize;
            sa.sa_flags = libc::SA_RESETHAND;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut())
        };
        if rc != 0 {
            let e = io::Error::last_os_error();
            return Err(io::Error::new(e.kind(), format!("sigaction({sig}): {e}")));
        }
    }
    Ok(())
}

/// The signal received, if any.
pub fn received() -> Option<i32> {
    match SIGNAL.load(Relaxed) {
        0 => None,
        s => Some(s),
    }
}

/// The timeline's name of a signal.
pub fn name(sig: i32) -> &'static str {
    match sig {
        libc::SIGINT => "SIGINT",
        libc::SIGTERM => "SIGTERM",
        libc::SIGHUP => "SIGHUP",
        _ => "signal",
    }
}
