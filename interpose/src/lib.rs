//! `libmheta_interpose.so`: the PMPI interposition layer (the paper's
//! MPI-Jack). Loaded with `LD_PRELOAD` (or by `mheta run`) into any MPI
//! program — C, C++, Rust or Fortran — it defines the `MPI_*` entry points
//! (and the Fortran `mpi_*_` ones), times each call around the matching
//! `PMPI_*` call and hands it to the enabled [`tools`]: the [`recorder`]
//! (the instrumented iterations, marked by `MPI_Pcontrol` levels, see
//! [`mheta_trace::pcontrol`]; trace format: [`mheta_trace`]) and the
//! [`summary`] profiler (calls, bytes and time per function, like mpiP).
//!
//! Every C wrapper comes from the one table in `wrappers.rs`, every Fortran
//! wrapper from the one in `fortran.rs`. With no tool listening a wrapper
//! costs one relaxed atomic load before its `PMPI_*` call. It never changes
//! what MPI does, with one documented exception: while recording, a
//! non-blocking file read is done as a blocking one (MHETA's prefetch trick).
//!
//! Environment: `MHETA_TOOLS` (default `recorder`; also `summary`),
//! `MHETA_TRACE_DIR` (default `./mheta-trace`), `MHETA_INSTRUMENT_ITER`
//! (first recorded iteration, default 3), `MHETA_INSTRUMENT_COUNT`
//! (consecutive iterations recorded, default 3), `MHETA_INSTRUMENT_SECONDS`
//! (then record on until the recorded iterations span this long; default
//! 0), `MHETA_RECORD_ALL=1` (the
//! whole run is one recorded iteration, markers ignored), `MHETA_SUMMARY_DIR`
//! (default: the trace directory).
//!
//! [`recorder`]: tools::recorder
//! [`summary`]: tools::summary

pub mod abi;
pub mod clock;
mod fortran;
pub mod mpi_util;
mod signals;
pub mod threads;
pub mod tools;
mod wrappers;

pub use wrappers::*;

/// Present so that a program can tell (with `dlsym`) that the interposer is
/// loaded; returns the trace format version it writes.
#[unsafe(no_mangle)]
pub extern "C" fn mheta_interpose_version() -> u32 {
    mheta_trace::TRACE_VERSION
}

/// One line on stderr in one write, so that lines of different ranks
/// forwarded by the launcher do not interleave.
pub(crate) fn warn(msg: String) {
    use std::io::Write;
    let mut line = msg;
    line.push('\n');
    let _ = std::io::stderr().write_all(line.as_bytes());
}
