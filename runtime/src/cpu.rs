//! CPU time of the calling thread, and the extra work that emulates a
//! slower CPU (the paper's method: after a piece of real work, spin in
//! proportion to it). Used by the apps' emulation and by the C API's
//! `mheta_work_end`.

/// This thread's CPU time, seconds.
pub fn thread_cpu() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// Extra work after real work that began at this thread's CPU time
/// `start_cpu`: spin until the piece has taken `1 + extra` times its CPU
/// time (`extra = 1/power - 1` for a rank of relative power `power`).
/// CPU time, not wall time: time spent throttled or waiting for the core
/// is not work.
pub fn spin_extra(start_cpu: f64, extra: f64) {
    if extra <= 0.0 {
        return;
    }
    let real = thread_cpu() - start_cpu;
    let until = start_cpu + real * (1.0 + extra);
    while thread_cpu() < until {
        std::hint::spin_loop();
    }
}
