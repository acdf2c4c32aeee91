//! The clock every event is stamped with. On x86-64 with an invariant TSC
//! (`constant_tsc` and `nonstop_tsc` in /proc/cpuinfo) it is the TSC, read
//! in a few ns; elsewhere `CLOCK_MONOTONIC`. Ticks become nanoseconds with
//! a scale measured between [`init`] and the moment of conversion (at the
//! end of an instrumented iteration or at a report), so there is no
//! calibration pause.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

static USE_TSC: AtomicBool = AtomicBool::new(false);
static TICKS0: AtomicU64 = AtomicU64::new(0);
static NS0: AtomicU64 = AtomicU64::new(0);

/// `CLOCK_MONOTONIC` in ns.
pub fn mono_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid out-pointer; CLOCK_MONOTONIC always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn tsc() -> u64 {
    // SAFETY: rdtsc has no preconditions on x86-64.
    unsafe { core::arch::x86_64::_rdtsc() }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn tsc() -> u64 {
    mono_ns()
}

/// Choose the clock and remember the reference point. Idempotent.
pub fn init() {
    if NS0.load(Ordering::Relaxed) != 0 {
        return;
    }
    let invariant = cfg!(target_arch = "x86_64")
        && std::env::var_os("MHETA_CLOCK").is_none_or(|v| v != "monotonic")
        && std::fs::read_to_string("/proc/cpuinfo")
            .map(|s| {
                let flags = s.lines().find(|l| l.starts_with("flags")).unwrap_or("");
                flags.split_whitespace().any(|f| f == "constant_tsc")
                    && flags.split_whitespace().any(|f| f == "nonstop_tsc")
            })
            .unwrap_or(false);
    USE_TSC.store(invariant, Ordering::Relaxed);
    TICKS0.store(now(), Ordering::Relaxed);
    NS0.store(mono_ns().max(1), Ordering::Relaxed);
}

/// The current time in ticks.
#[inline(always)]
pub fn now() -> u64 {
    if USE_TSC.load(Ordering::Relaxed) {
        tsc()
    } else {
        mono_ns()
    }
}

/// Nanoseconds per tick, measured over the time since [`init`] (MPI_Init;
/// a run's first instrumented iteration comes milliseconds later, which
/// makes the scale accurate to well under 0.1%). Never blocks: safe in a
/// signal handler.
pub fn ns_per_tick() -> f64 {
    if !USE_TSC.load(Ordering::Relaxed) {
        return 1.0;
    }
    let (t, n) = (now(), mono_ns());
    let dt = t.saturating_sub(TICKS0.load(Ordering::Relaxed));
    let dn = n.saturating_sub(NS0.load(Ordering::Relaxed));
    if dt == 0 {
        return 1.0;
    }
    dn as f64 / dt as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_convert_to_elapsed_ns() {
        init();
        let t0 = now();
        let n0 = mono_ns();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let ticks = now() - t0;
        let ns = mono_ns() - n0;
        let est = ticks as f64 * ns_per_tick();
        assert!((est - ns as f64).abs() < 0.02 * ns as f64, "{est} vs {ns}");
    }
}
