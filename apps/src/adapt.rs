//! Watching a run after `--auto` has planned: is the iteration time still
//! what the model expected? ([`Watch`]). When it is not, the harness
//! records a few iterations again, re-plans on them, and moves again if
//! that pays: another job arrived on a node (seed 000's time-shared
//! nodes), or the first plan came from a disturbed window.
//!
//! The check costs one 8-byte `MPI_Allreduce` every [`WINDOW`] iterations
//! (a few microseconds against iterations of milliseconds): each rank
//! keeps its own iteration times, and the slowest rank's median of the
//! window is compared with the expected time. A drift is a window whose
//! median differs from the expected time by more than the threshold
//! (`--replan-threshold`, default [`DEFAULT_THRESHOLD_PCT`] %); two windows
//! in a row trigger a re-plan, but only when the ranks' busy times (their
//! time inside stages: computation and I/O, not waiting) have also come
//! apart by more than the threshold (slowest over fastest, among ranks
//! with rows). A slowdown of the whole machine (every rank alike: a noisy
//! host, the clock) moves the iteration time but not the best
//! distribution, so it is not re-planned for; one node slowed by another
//! job, or a plan from a disturbed window, leaves the busy times apart.
//! The same allreduce carries both (three doubles). 15% is well above the model's error on a
//! faithful emulation (mean 0.1–3%, worst 7–11% at 2 ranks: `mheta
//! experiment`) and far below the 1.5–2x a new job on a core causes.
//!
//! Iterations predicted shorter than [`MIN_WATCHED_S`] are not watched: a
//! window of them is a few milliseconds, which one scheduler tick or
//! another process's burst on a shared node can double, and a re-plan on
//! such a recording is as noisy as the disturbance it reacts to.
//!
//! Expected time: the model's prediction for the distribution in force,
//! right after a plan. If the first window after a re-plan still drifts
//! (the model does not match this run even on a fresh recording), the
//! watch takes the measured median as the expected time from then on, so
//! that it reacts to the next change instead of re-planning for ever.

use mpi::collective::{CommunicatorCollectives, Root, SystemOperation};
use mpi::topology::{Communicator, SimpleCommunicator};
use serde::Serialize;

/// Iterations per check.
pub const WINDOW: usize = 5;
/// Default `--replan-threshold`, percent.
pub const DEFAULT_THRESHOLD_PCT: f64 = 15.0;
/// Shortest predicted iteration time that is watched, seconds.
pub const MIN_WATCHED_S: f64 = 2e-3;
/// Iterations left alone after a plan (the move and the one after it).
const SETTLE: u64 = 2;

/// A drift that triggered a re-recording.
#[derive(Serialize, Debug, Clone)]
pub struct Drift {
    /// The iteration that closed the second drifting window.
    pub after: u64,
    pub measured_s: f64,
    pub expected_s: f64,
    /// Slowest over fastest rank's busy time in that window.
    pub busy_ratio: f64,
}

/// The watch of one run.
#[derive(Debug)]
pub struct Watch {
    threshold: f64,
    expected: Option<f64>,
    /// Iterations before this one are not watched.
    from: u64,
    window: Vec<f64>,
    busy: Vec<f64>,
    strikes: u32,
    /// The first window after a re-plan decides whether to calibrate.
    after_replan: bool,
    /// Re-plan after this many iterations (a re-recording is under way).
    pub replan_at: Option<u64>,
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

impl Watch {
    pub fn new(threshold: f64) -> Watch {
        Watch {
            threshold,
            expected: None,
            from: 0,
            window: Vec::with_capacity(WINDOW),
            busy: Vec::with_capacity(WINDOW),
            strikes: 0,
            after_replan: false,
            replan_at: None,
        }
    }

    /// A plan was made after iteration `it`; rank 0's `expected` time
    /// (the others pass anything) is broadcast. Collective.
    pub fn planned(&mut self, world: &SimpleCommunicator, it: u64, expected: f64, replan: bool) {
        let mut e = expected;
        world.process_at_rank(0).broadcast_into(&mut e);
        self.expected = (e.is_finite() && e >= MIN_WATCHED_S).then_some(e);
        self.from = it + 1 + SETTLE;
        self.window.clear();
        self.busy.clear();
        self.strikes = 0;
        self.after_replan = replan;
        self.replan_at = None;
    }

    /// Iteration `it` took `secs` here, `busy` of it inside stages (0 on
    /// a rank without rows). Every [`WINDOW`] watched iterations this is
    /// collective (one allreduce); returns the drift when a re-plan is
    /// due. Every rank returns the same.
    pub fn observe(
        &mut self,
        world: &SimpleCommunicator,
        it: u64,
        secs: f64,
        busy: f64,
        has_rows: bool,
    ) -> Option<Drift> {
        let expected = self.expected?;
        if it < self.from || self.replan_at.is_some() {
            return None;
        }
        self.window.push(secs);
        self.busy.push(busy);
        if self.window.len() < WINDOW {
            return None;
        }
        let mine = median(&mut self.window);
        let my_busy = median(&mut self.busy);
        self.window.clear();
        self.busy.clear();
        // Max of: the iteration time, the busy time, and minus the busy
        // time (ranks without rows send what leaves the max alone).
        let send = if has_rows {
            [mine, my_busy, -my_busy]
        } else {
            [mine, 0.0, f64::MIN]
        };
        let mut got = [0.0f64; 3];
        world.all_reduce_into(&send[..], &mut got[..], SystemOperation::max());
        let (measured, busy_max, busy_min) = (got[0], got[1], -got[2]);
        let busy_ratio = if busy_min > 0.0 {
            busy_max / busy_min
        } else {
            1.0
        };
        let drifting =
            (measured / expected - 1.0).abs() > self.threshold && busy_ratio - 1.0 > self.threshold;
        if std::mem::take(&mut self.after_replan) && drifting {
            // The model misses this run even on a fresh recording: watch
            // for change from what was measured.
            self.expected = Some(measured);
            return None;
        }
        self.strikes = if drifting { self.strikes + 1 } else { 0 };
        (self.strikes >= 2).then(|| {
            self.strikes = 0;
            Drift {
                after: it,
                measured_s: measured,
                expected_s: expected,
                busy_ratio,
            }
        })
    }
}
