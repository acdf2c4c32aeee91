//! `MPI_Pcontrol` levels understood by `libmheta_interpose.so`.
//!
//! Levels 0-2 keep mpiP's meanings; mheta's own markers start at 100 so they
//! cannot clash with mpiP's report levels (3, 4) or other tools' small values.
//! Without the interposer loaded, `MPI_Pcontrol` is a no-op, so a program
//! marked this way runs unchanged.

/// Stop recording and profiling (mpiP: disable).
pub const OFF: i32 = 0;
/// Resume (mpiP: enable). The default state.
pub const ON: i32 = 1;
/// Drop what was collected so far (mpiP: reset).
pub const RESET: i32 = 2;
/// An iteration of the main loop begins.
pub const ITER_BEGIN: i32 = 100;
/// The current iteration ends; if it was the instrumented one, its trace is
/// written before `MPI_Pcontrol` returns.
pub const ITER_END: i32 = 101;
/// Record on after the counted iterations, whole iterations, until
/// [`RECORD_DONE`] (or the caps of an extended recording,
/// [`crate::MAX_EXTENDED_ITERATIONS`] and [`crate::MAX_EXTENDED_EVENTS`]),
/// this recording and those after a [`RESET`]: a program that plans at an
/// iteration of its own (mheta's `--auto-at`) records everything before it.
pub const RECORD_ON: i32 = 102;
/// End an extended recording now: the iterations recorded so far are
/// written (this rank's trace is on disk when `MPI_Pcontrol` returns) and
/// nothing more is recorded until a [`RESET`]. Nothing happens before the
/// counted iterations have ended.
pub const RECORD_DONE: i32 = 103;
/// A stage (computation and I/O, no communication) begins.
pub const STAGE_BEGIN: i32 = 110;
/// The current stage ends.
pub const STAGE_END: i32 = 111;
/// `LEVEL_BASE + l`: the stages that follow run on grid level `l`
/// (multigrid; 0 = finest), until the next level marker.
pub const LEVEL_BASE: i32 = 120;
/// Levels `0..LEVELS` can be marked.
pub const LEVELS: i32 = 64;
