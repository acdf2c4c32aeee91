//! The environment variables shared by the interposer (which obeys them)
//! and the in-run side (which must agree with it), read in one place.

use std::ops::Range;
use std::path::PathBuf;

/// `MHETA_TRACE_DIR`, default `./mheta-trace`.
pub fn trace_dir() -> PathBuf {
    std::env::var_os("MHETA_TRACE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("mheta-trace"))
}

/// The recorded iterations, `MHETA_INSTRUMENT_ITER ..
/// MHETA_INSTRUMENT_ITER + MHETA_INSTRUMENT_COUNT`, with a complaint for
/// each value that is not usable (its default is used instead).
pub fn instrumented_iterations() -> (Range<u64>, Vec<String>) {
    let mut complaints = Vec::new();
    let mut get = |name: &str, default: u64, min: u64| match std::env::var(name) {
        Ok(v) => match v.trim().parse::<u64>() {
            Ok(x) if x >= min => x,
            _ => {
                complaints.push(format!(
                    "{name}={v:?} is not a number >= {min}; using {default}"
                ));
                default
            }
        },
        Err(_) => default,
    };
    let first = get("MHETA_INSTRUMENT_ITER", crate::DEFAULT_INSTRUMENT_ITER, 0);
    let count = get("MHETA_INSTRUMENT_COUNT", crate::DEFAULT_INSTRUMENT_COUNT, 1);
    (first..first + count, complaints)
}
