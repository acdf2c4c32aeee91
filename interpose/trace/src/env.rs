//! The environment variables shared by the interposer (which obeys them)
//! and the in-run side (which must agree with it), read in one place.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

static SPAWNED: OnceLock<String> = OnceLock::new();

/// Mark this process as part of a job started by `MPI_Comm_spawn`: its
/// files go to the subdirectory `spawned-<tag>` of the trace (and
/// summary) directory, so that the child job's rank numbers do not
/// overwrite the parent job's files. `tag` must be the same on every rank
/// of the child job (the interposer uses the pid of its rank 0).
pub fn set_spawned(tag: &str) {
    let _ = SPAWNED.set(format!("spawned-{tag}"));
}

/// `base`, or its `spawned-<tag>` subdirectory in a spawned job.
pub fn job_dir(base: &Path) -> PathBuf {
    match SPAWNED.get() {
        Some(sub) => base.join(sub),
        None => base.to_path_buf(),
    }
}

/// `MHETA_TRACE_DIR`, default `./mheta-trace` (in a spawned job, its
/// `spawned-<tag>` subdirectory).
pub fn trace_dir() -> PathBuf {
    job_dir(
        &std::env::var_os("MHETA_TRACE_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("mheta-trace")),
    )
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

/// `MHETA_INSTRUMENT_SECONDS`: after the counted iterations, go on
/// recording whole iterations until the recorded ones span at least this
/// many seconds (0, the default: the counted ones only), with a complaint
/// if the value is not a number >= 0. On a host whose cores change speed
/// over hundreds of milliseconds, a few iterations measure the moment's
/// speed, not the rank's (docs/design/fidelity.md).
pub fn instrumented_seconds() -> (f64, Option<String>) {
    match std::env::var("MHETA_INSTRUMENT_SECONDS") {
        Ok(v) => match parse_seconds(&v) {
            Some(x) => (x, None),
            None => (
                0.0,
                Some(format!(
                    "MHETA_INSTRUMENT_SECONDS={v:?} is not a number of seconds >= 0; using 0"
                )),
            ),
        },
        Err(_) => (0.0, None),
    }
}

/// A number of seconds: finite and at least 0 (`MHETA_INSTRUMENT_SECONDS`,
/// `mheta run --seconds`).
pub fn parse_seconds(v: &str) -> Option<f64> {
    v.trim()
        .parse::<f64>()
        .ok()
        .filter(|x| *x >= 0.0 && x.is_finite())
}
