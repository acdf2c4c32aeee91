//! Watching a run after `--auto` has planned: is the iteration time still
//! what the model expected? ([`Watch`]). When it is not, the harness
//! records again ([`rerecord_len`] iterations), re-plans on them, and moves again if
//! that pays: another job arrived on a node (Figueira and Berman's time-shared
//! nodes), or the first plan came from a disturbed window.
//!
//! The check costs one `MPI_Allreduce` of five doubles every [`WINDOW`]
//! iterations (a few microseconds against iterations of milliseconds).
//! Each rank keeps its own iteration times and its busy times (its time
//! inside stages: computation and I/O, not waiting), and holds each
//! iteration's busy time against the model's prediction for its rows:
//! `r_i = measured_i / predicted_i`. Over its last [`CI_ITERS`] such
//! ratios a rank has their median and a distribution-free 95% confidence
//! interval of it ([`median_ci`]): its own noise, measured. A drift is a
//! check at which these intervals have come apart: the highest lower
//! bound over the lowest upper bound more than the threshold above 1
//! (`--replan-threshold`, default [`DEFAULT_THRESHOLD_PCT`] %), among the
//! ranks predicted at least a fifth of the busiest rank's time (a rank
//! with a sliver of rows has a busy time of noise). A rank whose busy
//! time wanders widely from iteration to iteration has a wide interval
//! and needs a larger change to count. Two checks in a row trigger a
//! re-plan.
//!
//! - One node slowed by another job: its `r` rises, the others' do not.
//! - A plan from a disturbed window: the rank that looked slow while it
//!   was recorded got too few rows, and now finishes early (a het2 run
//!   recorded rank 1 at 2.8x rank 0's time per row, when it is 2x, and
//!   gave it 811 rows of 3072 instead of about 1024; the iteration time
//!   matched the prediction, which the fast, overloaded rank set, so a
//!   watch of the iteration time alone never saw it).
//! - A slowdown of the whole machine (every rank alike: a noisy host, the
//!   clock) moves every `r` alike, and the best distribution with none:
//!   no re-plan.
//!
//! The same allreduce carries the slowest rank's median iteration time,
//! reported beside the expected one.
//!
//! Why 10% beyond the intervals: the noise is in the intervals; what is
//! left is the least change worth a re-recording, a plan and a move, and
//! above the model's own error on a rank's busy time (a few percent,
//! docs/design/fidelity.md); well below the 2x a new job on a rank's core
//! makes.

//! Iterations predicted shorter than [`MIN_WATCHED_S`] are not watched: a
//! window of them is a few milliseconds, which one scheduler tick or
//! another process's burst on a shared node can double, and a re-plan on
//! such a recording is as noisy as the disturbance it reacts to.
//!
//! Expected times: the model's predictions for the distribution in force,
//! right after a plan. If the first check after a re-plan (the first
//! with [`CI_ITERS`] iterations behind it) still drifts
//! (the model does not match this run even on a fresh recording), the
//! watch takes the measured times as the expected ones from then on, so
//! that it reacts to the next change instead of re-planning for ever.
//!
//! A re-plan that made things worse is undone ([`Revert`]): when the
//! first check after a re-plan's move still drifts and its window's iteration
//! time is more than [`REVERT_PCT`] % above the one measured on the old
//! distribution in the window that triggered the re-plan, and that loss
//! over the remaining iterations exceeds what the move took, the run
//! moves back, and the watch then expects what the old distribution
//! measured. This is a speed change that ended while the run was
//! re-recording and moving: a time-shared vCPU runs faster or slower by
//! itself for tens of iterations (the het2 case in docs/design/apps.md).
//! A job that
//! arrives and stays is no such case: after the re-plan the run is
//! faster than it was with the job on the old distribution.

use mheta_base::median;
use mpi::collective::{CommunicatorCollectives, Root, SystemOperation};
use mpi::topology::{Communicator, SimpleCommunicator};
use serde::Serialize;

/// Iterations per check.
pub const WINDOW: usize = 5;
/// Iterations of busy-time ratios each rank's interval is taken over
/// (the last ones, at every check).
pub const CI_ITERS: usize = 15;
/// Default `--replan-threshold`, percent: how far apart the ranks'
/// intervals must be.
pub const DEFAULT_THRESHOLD_PCT: f64 = 10.0;
/// Shortest predicted iteration time that is watched, seconds.
pub const MIN_WATCHED_S: f64 = 2e-3;
/// Iterations left alone after a plan (the move and the one after it).
pub const SETTLE: u64 = 2;
/// A re-plan whose first window runs this many percent slower than the
/// old distribution did is undone (if that pays).
pub const REVERT_PCT: f64 = 5.0;

/// A drift that triggered a re-recording.
#[derive(Serialize, Debug, Clone)]
pub struct Drift {
    /// The iteration that closed the second drifting window.
    pub after: u64,
    /// When, seconds since the Unix epoch on this rank's clock.
    pub at_unix_s: f64,
    pub measured_s: f64,
    pub expected_s: f64,
    /// Largest over smallest ratio of a rank's measured busy time to the
    /// model's (the medians over the last [`CI_ITERS`] iterations).
    pub busy_spread: f64,
    /// The highest lower bound of those medians' 95% intervals over the
    /// lowest upper bound: how far apart the ranks were beyond their own
    /// noise (what the threshold holds).
    pub busy_ci_gap: f64,
}

/// A re-plan undone: its first window ran slower than the distribution it
/// replaced.
#[derive(Serialize, Debug, Clone)]
pub struct Revert {
    /// The iteration that closed the window.
    pub after: u64,
    pub at_unix_s: f64,
    /// The slowest rank's median iteration time in that window.
    pub measured_s: f64,
    /// The same on the old distribution, in the window that triggered
    /// the re-plan.
    pub before_s: f64,
    /// The slowest rank's time in the move back (filled by the harness).
    pub measured_move_s: Option<f64>,
}

/// What a window found.
#[derive(Debug)]
pub enum Verdict {
    /// Two drifting windows in a row: record again and re-plan.
    Drift(Drift),
    /// The last re-plan made things worse: move back.
    Revert(Revert),
    /// The first check after a re-plan still drifts: the model misses
    /// this run on its own plan.
    Missed,
}

/// The watch of one run.
#[derive(Debug)]
pub struct Watch {
    threshold: f64,
    expected: Option<f64>,
    /// This rank's predicted busy time, when it takes part in the check.
    my_busy: Option<f64>,
    /// Iterations before this one are not watched.
    from: u64,
    window: Vec<f64>,
    busy: Vec<f64>,
    /// This rank's last [`CI_ITERS`] ratios of measured to predicted busy
    /// time.
    ratios: std::collections::VecDeque<f64>,
    strikes: u32,
    /// The first check after a re-plan decides whether to calibrate.
    after_replan: bool,
    /// The iteration time (every rank's) and this rank's busy time
    /// measured in the window that triggered the re-plan under way.
    before: Option<(f64, Option<f64>)>,
    /// The re-plan moved, taking this long (the price of moving back).
    revert_cost: Option<f64>,
    /// Re-plan after this many iterations (a re-recording is under way).
    pub replan_at: Option<u64>,
    /// The last check's iteration time (every rank's) and this rank's
    /// busy time.
    last: Option<(f64, f64)>,
}

/// Seconds since the Unix epoch (0 on a clock set before it).
pub fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// Undo a re-plan whose window ran `measured` seconds an iteration, when
/// the old distribution ran `before`: more than [`REVERT_PCT`] % slower,
/// and losing more over the `remaining` iterations than moving back
/// costs (`move_s`, what the re-plan's move took).
pub fn revert_pays(before: f64, measured: f64, move_s: f64, remaining: u64) -> bool {
    measured > before * (1.0 + REVERT_PCT / 100.0)
        && (measured - before) * remaining as f64 > move_s
}

/// Iterations a re-plan records again: as many as the first plan was
/// made on (`first`), at most a quarter of the `left` iterations, and at
/// least the instrumented `count`. Three iterations of a few milliseconds
/// catch the moment's speed of a shared core, not the rank's, and a
/// re-plan on them chases it (docs/design/fidelity.md).
pub fn rerecord_len(first: u64, count: u64, left: u64) -> u64 {
    first.min(left / 4).max(count)
}

/// The median of `v` and a distribution-free 95% confidence interval of
/// it: the order statistics k and n - 1 - k of the sorted values, k =
/// ⌊n/2 − 0.98·√n⌋ (the normal approximation to the binomial count of
/// values below the median; at n = 15, the 4th and 12th, 96.5%). None
/// with fewer than 6 values.
pub fn median_ci(v: &[f64]) -> Option<(f64, f64, f64)> {
    let n = v.len();
    if n < 6 {
        return None;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let k = ((n as f64 / 2.0 - 0.98 * (n as f64).sqrt()).floor().max(0.0)) as usize;
    Some((s[k], median(&mut s)?, s[n - 1 - k]))
}

impl Watch {
    pub fn new(threshold: f64) -> Watch {
        Watch {
            threshold,
            expected: None,
            my_busy: None,
            from: 0,
            window: Vec::with_capacity(WINDOW),
            busy: Vec::with_capacity(WINDOW),
            ratios: std::collections::VecDeque::with_capacity(CI_ITERS),
            strikes: 0,
            after_replan: false,
            before: None,
            revert_cost: None,
            replan_at: None,
            last: None,
        }
    }

    /// A plan was made after iteration `it`; rank 0's `expected` time and
    /// `busy` (the model's busy time of every rank; the others pass
    /// anything) are broadcast. `moved`: the slowest rank's time in the
    /// move, if the plan moved. Collective.
    pub fn planned(
        &mut self,
        world: &SimpleCommunicator,
        it: u64,
        expected: f64,
        busy: &[f64],
        replan: bool,
        moved: Option<f64>,
    ) {
        let p = world.size() as usize;
        let mut e = vec![f64::NAN; 1 + p];
        if world.rank() == 0 {
            e[0] = expected;
            for (x, &b) in e[1..].iter_mut().zip(busy) {
                *x = b;
            }
        }
        world.process_at_rank(0).broadcast_into(&mut e[..]);
        self.expected = (e[0].is_finite() && e[0] >= MIN_WATCHED_S).then_some(e[0]);
        let busiest = e[1..]
            .iter()
            .copied()
            .filter(|b| b.is_finite())
            .fold(0.0, f64::max);
        let mine = e[1 + world.rank() as usize];
        self.my_busy = (mine.is_finite() && mine > 0.0 && mine >= 0.2 * busiest).then_some(mine);
        self.from = it + 1 + SETTLE;
        self.window.clear();
        self.busy.clear();
        self.ratios.clear();
        self.strikes = 0;
        self.after_replan = replan;
        self.revert_cost = moved.filter(|_| replan);
        if !replan {
            self.before = None;
        }
        self.replan_at = None;
    }

    /// The run moved back after iteration `it` ([`Verdict::Revert`]):
    /// expect what the old distribution measured before the re-plan.
    pub fn reverted(&mut self, it: u64) {
        if let Some((t, busy)) = self.before.take() {
            self.expected = Some(t);
            self.my_busy = busy;
        }
        self.from = it + 1 + SETTLE;
        self.window.clear();
        self.busy.clear();
        self.ratios.clear();
        self.strikes = 0;
        self.after_replan = false;
        self.revert_cost = None;
    }

    /// A re-recording was dropped after iteration `it`: watch again from
    /// the next iterations, with the expectations of the plan in force.
    pub fn resume(&mut self, it: u64) {
        self.replan_at = None;
        self.from = it + 1;
        self.window.clear();
        self.busy.clear();
        self.ratios.clear();
        self.strikes = 0;
        self.before = None;
    }

    /// This rank's median ratio of measured to predicted busy time over
    /// the last [`CI_ITERS`] iterations (NaN when it is not watched).
    pub fn busy_ratio(&self) -> f64 {
        let mut v: Vec<f64> = self.ratios.iter().copied().collect();
        match self.my_busy {
            Some(_) => median(&mut v).unwrap_or(f64::NAN),
            None => f64::NAN,
        }
    }

    /// Expect what the last check measured from now on (the model misses
    /// this run, and a re-plan would not do better).
    pub fn accept(&mut self) {
        if let Some((t, busy)) = self.last {
            self.expected = Some(t);
            if self.my_busy.is_some() {
                self.my_busy = Some(busy);
            }
        }
        self.ratios.clear();
        self.strikes = 0;
    }

    /// Iteration `it` of `iters` took `secs` here, `busy` of it inside
    /// stages. Every [`WINDOW`] watched iterations this is collective (one
    /// allreduce); returns the drift when a re-plan is due, or the revert
    /// when the last re-plan is to be undone. Every rank returns the same.
    pub fn observe(
        &mut self,
        world: &SimpleCommunicator,
        it: u64,
        iters: u64,
        secs: f64,
        busy: f64,
    ) -> Option<Verdict> {
        let expected = self.expected?;
        if it < self.from || self.replan_at.is_some() {
            return None;
        }
        self.window.push(secs);
        self.busy.push(busy);
        if let Some(b) = self.my_busy {
            if self.ratios.len() == CI_ITERS {
                self.ratios.pop_front();
            }
            self.ratios.push_back(busy / b);
        }
        if self.window.len() < WINDOW {
            return None;
        }
        let mine = median(&mut self.window).expect("a full window");
        let my_busy = median(&mut self.busy).expect("a full window");
        self.window.clear();
        self.busy.clear();
        // Max of: the iteration time, this rank's median ratio of measured
        // over predicted busy time and the lower bound of its interval,
        // and minus those and minus the upper bound (ranks outside the
        // check, and ranks without enough iterations yet, send what
        // leaves the max alone).
        let ci = (self.ratios.len() >= CI_ITERS)
            .then(|| median_ci(self.ratios.make_contiguous()))
            .flatten();
        let send = match ci {
            Some((lo, r, hi)) => [mine, r, -r, lo, -hi],
            None => [mine, 0.0, f64::MIN, 0.0, f64::MIN],
        };
        let mut got = [0.0f64; 5];
        world.all_reduce_into(&send[..], &mut got[..], SystemOperation::max());
        let (measured, r_max, r_min, lo_max, hi_min) = (got[0], got[1], -got[2], got[3], -got[4]);
        let ratio = |a: f64, b: f64| if a > 0.0 && b > 0.0 { a / b } else { 1.0 };
        let busy_spread = ratio(r_max, r_min);
        let busy_ci_gap = ratio(lo_max, hi_min);
        if got[4] == f64::MIN {
            // No rank has its interval yet: nothing to judge, and the
            // first judgement after a re-plan is still to come.
            return None;
        }
        self.last = Some((measured, my_busy));
        let drifting = busy_ci_gap - 1.0 > self.threshold;
        let after_replan = std::mem::take(&mut self.after_replan);
        let cost = self.revert_cost.take();
        if after_replan
            && drifting
            && let (Some(cost), Some((before, _))) = (cost, self.before)
            && revert_pays(before, measured, cost, iters.saturating_sub(it + 1))
        {
            return Some(Verdict::Revert(Revert {
                after: it,
                at_unix_s: unix_now(),
                measured_s: measured,
                before_s: before,
                measured_move_s: None,
            }));
        }
        if after_replan && drifting {
            // The model misses this run even on a fresh recording: the
            // harness calibrates a plan on sensed slowdowns, or takes
            // what was measured as expected ([`Watch::accept`]).
            return Some(Verdict::Missed);
        }
        self.strikes = if drifting { self.strikes + 1 } else { 0 };
        (self.strikes >= 2).then(|| {
            self.strikes = 0;
            // What the distribution in force measured, should the re-plan
            // have to be undone.
            self.before = Some((measured, self.my_busy.map(|_| my_busy)));
            Verdict::Drift(Drift {
                after: it,
                at_unix_s: unix_now(),
                measured_s: measured,
                expected_s: expected,
                busy_spread,
                busy_ci_gap,
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replan_records_as_long_as_the_first_plan_within_a_quarter_of_what_is_left() {
        assert_eq!(rerecord_len(37, 3, 100), 25);
        assert_eq!(rerecord_len(37, 3, 400), 37);
        assert_eq!(rerecord_len(3, 3, 400), 3);
        assert_eq!(rerecord_len(37, 3, 8), 3);
    }

    #[test]
    fn a_replan_is_undone_only_when_it_lost_more_than_the_move_back() {
        // The het2 case of docs/design/apps.md ("reverting a re-plan").
        assert!(revert_pays(0.0206, 0.026, 0.0025, 95));
        // Within 5 %: noise, kept.
        assert!(!revert_pays(0.0206, 0.0216, 0.0025, 95));
        // Slower, but too few iterations left to win back the move.
        assert!(!revert_pays(0.0206, 0.026, 0.0025, 0));
        assert!(!revert_pays(0.0206, 0.026, 0.03, 5));
        assert!(revert_pays(0.0206, 0.026, 0.03, 6));
        // Faster: never.
        assert!(!revert_pays(0.026, 0.0206, 0.0, 1000));
    }

    #[test]
    fn the_median_interval_is_the_order_statistics_of_the_binomial() {
        // n = 15: k = floor(7.5 - 0.98 * 3.873) = 3, the 4th and 12th.
        let v: Vec<f64> = (1..=15).rev().map(f64::from).collect();
        assert_eq!(median_ci(&v), Some((4.0, 8.0, 12.0)));
        // Its coverage: P(4 <= #below the median <= 11) of Binomial(15, 1/2).
        let c = |k: u64| (0..k).fold(1.0, |a, i| a * (15 - i) as f64 / (i + 1) as f64);
        let cover: f64 = (4..=11).map(c).sum::<f64>() / 2f64.powi(15);
        assert!((cover - 0.965).abs() < 0.001, "{cover}");
        assert_eq!(median_ci(&[1.0; 5]), None);
        // One outlier moves neither bound far.
        let mut w = vec![1.0; 14];
        w.push(100.0);
        assert_eq!(median_ci(&w), Some((1.0, 1.0, 1.0)));
    }
}
