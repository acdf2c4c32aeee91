//! The Rust face of mheta's `MPI_Pcontrol` markers (levels in
//! [`mheta_trace::pcontrol`]). Without the interposer they are no-ops.

use mheta_trace::pcontrol;

fn pcontrol(level: i32) {
    // SAFETY: MPI_Pcontrol takes a level and ignores further arguments
    // here; MPI is initialised by the caller.
    unsafe {
        mpi::ffi::MPI_Pcontrol(level);
    }
}

/// An iteration of the main loop begins.
pub fn iteration_begin() {
    pcontrol(pcontrol::ITER_BEGIN);
}

/// The current iteration ends (its trace is on disk when this returns, if
/// it was the instrumented one).
pub fn iteration_end() {
    pcontrol(pcontrol::ITER_END);
}

/// A stage of computation and I/O begins.
pub fn stage_begin() {
    pcontrol(pcontrol::STAGE_BEGIN);
}

/// The current stage ends.
pub fn stage_end() {
    pcontrol(pcontrol::STAGE_END);
}

/// The stages that follow run on grid level `l` (multigrid; 0 = finest);
/// levels beyond the 64 that can be marked are not marked.
pub fn level(l: u32) {
    if (l as i32) < pcontrol::LEVELS {
        pcontrol(pcontrol::LEVEL_BASE + l as i32);
    }
}

/// Run `f` as one stage.
pub fn stage<R>(f: impl FnOnce() -> R) -> R {
    stage_begin();
    let r = f();
    stage_end();
    r
}

/// Record on after the counted iterations until [`recording_done`],
/// this recording and those after a [`rerecord`].
pub fn record_until_done() {
    pcontrol(pcontrol::RECORD_ON);
}

/// End the recording now: this rank's trace holds the iterations recorded
/// so far, on disk when this returns (nothing happens before the counted
/// iterations have ended).
pub fn recording_done() {
    pcontrol(pcontrol::RECORD_DONE);
}

/// Record again: the interposer forgets the iterations it has seen and
/// records the instrumented ones counted from the next iteration marker
/// (`MHETA_INSTRUMENT_ITER` of them skipped, then `MHETA_INSTRUMENT_COUNT`
/// recorded), rewriting this rank's trace when they end.
pub fn rerecord() {
    pcontrol(pcontrol::RESET);
}
