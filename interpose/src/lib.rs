//! `libmheta_interpose.so`: the PMPI interposition layer (the paper's
//! MPI-Jack). Loaded with `LD_PRELOAD` (or by `mheta run`) into any MPI
//! program, it defines the `MPI_*` entry points, times each call around the
//! matching `PMPI_*` call, and records one instrumented iteration, marked by
//! `MPI_Pcontrol` levels (see [`mheta_trace::pcontrol`]): the compute gaps,
//! stage markers, and every message's kind, peer and size. The trace of each
//! rank is written (format: [`mheta_trace`]) as soon as that iteration ends.
//!
//! Every wrapper comes from the one table in [`wrappers`]; recording state
//! lives in [`recorder`]. Outside the instrumented iteration a wrapper costs
//! one relaxed atomic load before calling `PMPI_*`.
//!
//! Environment: `MHETA_TRACE_DIR` (default `./mheta-trace`),
//! `MHETA_INSTRUMENT_ITER` (index from 0 of the first iteration to record,
//! default [`mheta_trace::DEFAULT_INSTRUMENT_ITER`]: the first iterations
//! warm caches and clocks and are skipped) and `MHETA_INSTRUMENT_COUNT`
//! (consecutive iterations recorded, default
//! [`mheta_trace::DEFAULT_INSTRUMENT_COUNT`]; the model takes medians).

pub mod recorder;
mod wrappers;

pub use wrappers::*;

/// Present so that a program can tell (with `dlsym`) that the interposer is
/// loaded; returns the trace format version it writes.
#[unsafe(no_mangle)]
pub extern "C" fn mheta_interpose_version() -> u32 {
    mheta_trace::TRACE_VERSION
}
