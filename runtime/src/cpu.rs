//! The extra work that emulates a slower CPU (the paper's method: after a
//! piece of real work, spin in proportion to it), on the thread CPU clock
//! of [`mheta_base::os::thread_cpu_s`]. Used by the apps' emulation and by
//! the C API's `mheta_work_end`.

use mheta_base::os::thread_cpu_s;

/// Extra work after real work that began at this thread's CPU time
/// `start_cpu`: spin until the piece has taken `1 + extra` times its CPU
/// time (`extra = 1/power - 1` for a rank of relative power `power`).
/// CPU time, not wall time: time spent throttled or waiting for the core
/// is not work.
pub fn spin_extra(start_cpu: f64, extra: f64) {
    if extra <= 0.0 {
        return;
    }
    let real = thread_cpu_s() - start_cpu;
    let until = start_cpu + real * (1.0 + extra);
    while thread_cpu_s() < until {
        std::hint::spin_loop();
    }
}
