//! The host's noise as a measurement: a record of each real run (what the
//! scheduler gave each rank, its CPU time per unit of work), the rule that
//! flags a run the host disturbed, and bootstrap confidence intervals of
//! the diffs.
//!
//! Two signs of a disturbed run, each against a stated threshold:
//! - run-queue delay: a rank's main thread was runnable but waited for a
//!   core (`sched.runq_wait_s`, from `/proc/thread-self/schedstat`) for more
//!   than `runq_pct` % of the main loop's wall time (`elapsed_s`);
//! - CPU time per unit of work: a rank's `cpu_ns_per_unit` is more than
//!   `cpu_pct` % above that rank's median over the same point's runs. The
//!   same work on the same rows took more CPU time: the vCPU itself ran
//!   slower (its steal time reads 0 on a VM that does not report it, so
//!   this is where such a slowdown shows).
//!
//! A flagged run is kept: the point's `actual_s` is still the median of all
//! its runs, and the report gives the figures without flagged runs beside.

use super::job::{busiest_stage, iter_median};
use super::report::diff_pct;
use anyhow::{Context, Result};
use mheta_base::{median, quantile};
use mheta_model::search::Rng;
use serde::Serialize;
use serde_json::Value;

/// Resamples of one bootstrap interval.
pub const RESAMPLES: usize = 2000;

/// The seed of the report's interval of the mean diff (a row's is its
/// point's index).
pub const MEAN_SEED: u64 = 0x6d68_6574_615f_6d65;

/// One rank of one real run.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct RankRun {
    pub rows: u64,
    /// CPU time of the rank's main thread over the main loop, s (null
    /// without schedstats).
    pub cpu_s: Option<f64>,
    /// Time that thread was runnable but waited for a core, s (null
    /// without schedstats).
    pub runq_wait_s: Option<f64>,
    /// CPU time per unit of work, ns (null when the rank did no work).
    pub cpu_ns_per_unit: Option<f64>,
    /// The median over the iterations of the CPU time its stages took, s
    /// (null where the report has none).
    pub stage_cpu_median_s: Option<f64>,
}

/// One real run of a point, and whether the host disturbed it.
#[derive(Serialize, Clone, Debug)]
pub struct RunRecord {
    /// The run's median iteration, s.
    pub iter_median_s: f64,
    /// The busiest rank's median time in stages per iteration, s.
    pub busiest_stage_s: f64,
    /// The main loop's wall time, s.
    pub elapsed_s: f64,
    /// Its iterations (None where the result does not say).
    pub iters: Option<u64>,
    pub ranks: Vec<RankRun>,
    /// Some rule below flagged the run.
    pub flagged: bool,
    /// Why, one sentence per rank and rule (empty when not flagged).
    pub flags: Vec<String>,
}

/// The thresholds of the flagging rule, percent.
#[derive(Serialize, Clone, Copy, Debug)]
pub struct Thresholds {
    /// Run-queue delay over the main loop's wall time; None: no such
    /// rule (the ranks outnumber the cores and wait for one by design).
    pub runq_pct: Option<f64>,
    /// CPU time per unit of work over the rank's median at the point.
    pub cpu_pct: f64,
}

impl RunRecord {
    /// The record of a run from its JSON result (not yet flagged).
    pub fn from_json(r: &Value) -> Result<RunRecord> {
        let ranks = r["ranks"]
            .as_array()
            .filter(|v| !v.is_empty())
            .context("run result has no ranks[]")?;
        let ranks = ranks
            .iter()
            .enumerate()
            .map(|(i, k)| {
                Ok(RankRun {
                    rows: k["rows"]
                        .as_u64()
                        .with_context(|| format!("run result: rank {i} has no rows"))?,
                    cpu_s: k["sched"]["cpu_s"].as_f64(),
                    runq_wait_s: k["sched"]["runq_wait_s"].as_f64(),
                    cpu_ns_per_unit: k["cpu_ns_per_unit"].as_f64(),
                    stage_cpu_median_s: k["stage_cpu_median_s"].as_f64(),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(RunRecord {
            iter_median_s: iter_median(r)?,
            busiest_stage_s: busiest_stage(r)?,
            elapsed_s: r["elapsed_s"]
                .as_f64()
                .context("run result has no elapsed_s")?,
            iters: r["iters"].as_u64(),
            ranks,
            flagged: false,
            flags: Vec::new(),
        })
    }
}

/// Each rank's median CPU time per unit over `runs` (None where no run
/// of that rank has one).
fn rank_medians(runs: &[RunRecord]) -> Vec<Option<f64>> {
    let n = runs.iter().map(|r| r.ranks.len()).max().unwrap_or(0);
    (0..n)
        .map(|k| {
            let mut v: Vec<f64> = runs
                .iter()
                .filter_map(|r| r.ranks.get(k).and_then(|x| x.cpu_ns_per_unit))
                .filter(|x| x.is_finite() && *x > 0.0)
                .collect();
            median(&mut v)
        })
        .collect()
}

/// How a point's rows cost against a reference point's: the median over
/// `runs` and their ranks of a rank's CPU time per unit of work over
/// that rank's median over `reference` (None without the figures). The
/// model prices a row as recorded on Block, so against Block's runs a
/// point at 0.8 ran its rows a fifth cheaper than the model was told
/// (a cache that keeps a rank's rows through shorter waits, a working set
/// that fits: docs/design/fidelity.md).
pub fn cpu_per_unit_against(reference: &[RunRecord], runs: &[RunRecord]) -> Option<f64> {
    let base = rank_medians(reference);
    let mut v: Vec<f64> = runs
        .iter()
        .flat_map(|r| r.ranks.iter().enumerate())
        .filter_map(|(k, x)| Some(x.cpu_ns_per_unit? / base.get(k).copied().flatten()?))
        .filter(|x| x.is_finite() && *x > 0.0)
        .collect();
    median(&mut v)
}

/// Flag the runs of one point by the two rules (module doc), saying why.
pub fn flag(runs: &mut [RunRecord], t: Thresholds) {
    let medians = rank_medians(runs);
    for run in runs.iter_mut() {
        let mut why = Vec::new();
        for (k, x) in run.ranks.iter().enumerate() {
            if let (Some(w), Some(limit)) = (x.runq_wait_s, t.runq_pct)
                && run.elapsed_s > 0.0
                && 100.0 * w / run.elapsed_s > limit
            {
                why.push(format!(
                    "runq: rank {k} waited {:.1}% of the main loop for a core (> {limit}%)",
                    100.0 * w / run.elapsed_s,
                ));
            }
            if let (Some(c), Some(Some(m))) = (x.cpu_ns_per_unit, medians.get(k))
                && c > m * (1.0 + t.cpu_pct / 100.0)
            {
                why.push(format!(
                    "cpu: rank {k} took {c:.3} ns of CPU per unit, {:.1}% over its median {m:.3} at this point (> {}%)",
                    100.0 * (c / m - 1.0),
                    t.cpu_pct
                ));
            }
        }
        run.flagged = !why.is_empty();
        run.flags = why;
    }
}

/// The median iteration of the runs not flagged (None when every run
/// was).
pub fn unflagged_median(runs: &[RunRecord]) -> Option<f64> {
    let mut v: Vec<f64> = runs
        .iter()
        .filter(|r| !r.flagged)
        .map(|r| r.iter_median_s)
        .collect();
    median(&mut v)
}

/// The median of one resample of `from` with replacement (drawn into
/// `into`, as many as `from` holds).
fn resampled_median(rng: &mut Rng, from: &[f64], into: &mut Vec<f64>) -> f64 {
    into.clear();
    into.extend((0..from.len()).map(|_| from[rng.below(from.len() as u64) as usize]));
    median(into).unwrap_or(f64::NAN)
}

/// The percentile bootstrap 95% interval of the median of `v`
/// (`RESAMPLES` resamples with replacement, seeded); NaN for none.
pub fn median_ci(v: &[f64], seed: u64) -> [f64; 2] {
    if v.is_empty() {
        return [f64::NAN; 2];
    }
    let mut rng = Rng::new(seed);
    let mut draw = Vec::with_capacity(v.len());
    let mut meds: Vec<f64> = (0..RESAMPLES)
        .map(|_| resampled_median(&mut rng, v, &mut draw))
        .collect();
    meds.sort_by(f64::total_cmp);
    [quantile(&meds, 0.025), quantile(&meds, 0.975)]
}

/// [`diff_pct`] with its sign: above 0 when the prediction is above.
fn signed_diff_pct(p: f64, a: f64) -> f64 {
    100.0 * (p - a) / p.min(a)
}

/// The bootstrap 95% interval of the mean over `points` of
/// diff(median of the point's predictions, median of its runs). Each
/// resample draws every point's predictions (one per model learned) and
/// runs with replacement (as many as it has) and takes each point's
/// medians and signed diff.
///
/// - One point: the percentile interval of its signed diff, mapped through
///   the absolute value: it reaches 0 when the resamples leave the sign
///   open, and its ends are diffs of medians the resamples can have.
/// - More: the mean of absolute diffs is biased upward by the noise (a
///   point predicted inside its runs' spread has resamples on both
///   sides, all of them farther than its estimate), so the percentile
///   interval of the resampled means is shifted down by that bias as the
///   bootstrap estimates it (mean of the resampled means minus the
///   estimate), and floored at 0. Without the shift the interval can lie
///   wholly above the estimate.
///
/// Points without runs or predictions are left out; none at all gives
/// NaN.
pub fn diff_ci(points: &[(&[f64], &[f64])], seed: u64) -> [f64; 2] {
    let points: Vec<&(&[f64], &[f64])> = points
        .iter()
        .filter(|p| !p.0.is_empty() && !p.1.is_empty())
        .collect();
    if points.is_empty() {
        return [f64::NAN; 2];
    }
    let mut rng = Rng::new(seed);
    let (mut draw, mut drawn_p) = (Vec::new(), Vec::new());
    // Every resample's signed diff of each point, point by point.
    let diffs: Vec<Vec<f64>> = (0..RESAMPLES)
        .map(|_| {
            points
                .iter()
                .map(|(preds, runs)| {
                    let p = resampled_median(&mut rng, preds, &mut drawn_p);
                    signed_diff_pct(p, resampled_median(&mut rng, runs, &mut draw))
                })
                .collect()
        })
        .collect();
    if let [_] = points[..] {
        let mut d: Vec<f64> = diffs.iter().map(|d| d[0]).collect();
        d.sort_by(f64::total_cmp);
        let [lo, hi] = [quantile(&d, 0.025), quantile(&d, 0.975)];
        return if lo <= 0.0 && hi >= 0.0 {
            [0.0, lo.abs().max(hi.abs())]
        } else {
            [lo.abs().min(hi.abs()), lo.abs().max(hi.abs())]
        };
    }
    let n = points.len() as f64;
    let mut means: Vec<f64> = diffs
        .iter()
        .map(|d| d.iter().map(|x| x.abs()).sum::<f64>() / n)
        .collect();
    let estimate = points
        .iter()
        .map(|(preds, runs)| {
            let p = median(&mut preds.to_vec()).unwrap_or(f64::NAN);
            diff_pct(p, median(&mut runs.to_vec()).unwrap_or(f64::NAN))
        })
        .sum::<f64>()
        / n;
    let bias = means.iter().sum::<f64>() / means.len() as f64 - estimate;
    means.sort_by(f64::total_cmp);
    [0.025, 0.975].map(|q| (quantile(&means, q) - bias).max(0.0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const T: Thresholds = Thresholds {
        runq_pct: Some(5.0),
        cpu_pct: 15.0,
    };

    /// A 2-rank run's JSON: its median iteration, main loop of 1 s, and
    /// per rank (run-queue wait s, CPU ns per unit).
    fn run(iter_s: f64, ranks: [(f64, f64); 2]) -> Value {
        let ranks: Vec<Value> = ranks
            .iter()
            .map(|&(w, c)| {
                json!({ "rows": 512, "stage_s": iter_s / 2.0, "cpu_ns_per_unit": c,
                        "sched": { "cpu_s": 0.9, "runq_wait_s": w, "timeslices": 3 } })
            })
            .collect();
        json!({ "iter_median_s": iter_s, "elapsed_s": 1.0, "ranks": ranks })
    }

    fn records(v: &[Value]) -> Vec<RunRecord> {
        v.iter().map(|r| RunRecord::from_json(r).unwrap()).collect()
    }

    #[test]
    fn a_points_cpu_per_unit_is_taken_rank_by_rank_against_the_reference() {
        // Reference: rank 0 at 2 ns (median of 1.8, 2, 3), rank 1 at 4.
        let blk = records(&[
            run(0.10, [(0.0, 1.8), (0.0, 4.0)]),
            run(0.10, [(0.0, 2.0), (0.0, 4.0)]),
            run(0.10, [(0.0, 3.0), (0.0, 4.0)]),
        ]);
        // Each rank at 0.8 of its own reference, though rank 1's figure
        // is twice rank 0's: the ratio is per rank.
        let point = records(&[
            run(0.08, [(0.0, 1.6), (0.0, 3.2)]),
            run(0.08, [(0.0, 1.6), (0.0, 3.2)]),
        ]);
        let r = cpu_per_unit_against(&blk, &point).unwrap();
        assert!((r - 0.8).abs() < 1e-12, "{r}");
        assert_eq!(cpu_per_unit_against(&blk, &blk), Some(1.0));
        // A rank with no figure in the reference is left out; none at all
        // gives none.
        let mut blank = point.clone();
        for run in &mut blank {
            for x in &mut run.ranks {
                x.cpu_ns_per_unit = None;
            }
        }
        assert_eq!(cpu_per_unit_against(&blank, &point), None);
        assert_eq!(cpu_per_unit_against(&blk, &blank), None);
    }

    #[test]
    fn a_run_queue_delay_or_a_slow_cpu_flags_a_run_and_says_why() {
        let mut runs = records(&[
            run(0.10, [(0.01, 2.0), (0.02, 4.0)]),
            // Rank 1 waited 8% of the loop for a core.
            run(0.11, [(0.01, 2.0), (0.08, 4.1)]),
            // Rank 0 took 20% more CPU per unit than its median (2.0).
            run(0.12, [(0.00, 2.4), (0.01, 3.9)]),
            run(0.10, [(0.04, 1.9), (0.00, 4.0)]),
            run(0.10, [(0.01, 2.1), (0.01, 4.2)]),
        ]);
        flag(&mut runs, T);
        let flagged: Vec<bool> = runs.iter().map(|r| r.flagged).collect();
        assert_eq!(flagged, [false, true, true, false, false]);
        assert_eq!(runs[1].flags.len(), 1);
        assert!(
            runs[1].flags[0].starts_with("runq: rank 1 waited 8.0%"),
            "{:?}",
            runs[1].flags
        );
        assert_eq!(runs[2].flags.len(), 1);
        assert!(
            runs[2].flags[0].starts_with("cpu: rank 0 "),
            "{:?}",
            runs[2].flags
        );
        assert!(
            runs[2].flags[0].contains("20.0% over"),
            "{:?}",
            runs[2].flags
        );
        // A record keeps what the rule read.
        assert_eq!(runs[1].ranks[1].runq_wait_s, Some(0.08));
        assert_eq!(runs[1].ranks[1].rows, 512);
        // Looser thresholds flag neither.
        flag(
            &mut runs,
            Thresholds {
                runq_pct: Some(10.0),
                cpu_pct: 25.0,
            },
        );
        assert!(runs.iter().all(|r| !r.flagged && r.flags.is_empty()));
    }

    #[test]
    fn a_run_without_schedstats_or_work_is_not_flagged() {
        let mut r = run(0.1, [(0.0, 2.0), (0.0, 2.0)]);
        r["ranks"][0]["sched"] = Value::Null;
        r["ranks"][1]["cpu_ns_per_unit"] = Value::Null;
        let mut runs = records(&[r.clone(), r]);
        flag(&mut runs, T);
        assert!(runs.iter().all(|r| !r.flagged));
        assert_eq!(runs[0].ranks[0].runq_wait_s, None);
        // A result without elapsed_s is refused, naming it.
        let e = RunRecord::from_json(
            &json!({ "iter_median_s": 0.1, "ranks": [{ "rows": 1, "stage_s": 0.1 }] }),
        );
        assert!(format!("{:#}", e.unwrap_err()).contains("elapsed_s"));
    }

    #[test]
    fn the_unflagged_median_leaves_flagged_runs_out() {
        let mut runs = records(&[
            run(0.10, [(0.0, 2.0), (0.0, 4.0)]),
            run(0.30, [(0.0, 2.0), (0.0, 4.0)]),
            run(0.12, [(0.0, 2.0), (0.0, 4.0)]),
        ]);
        runs[1].flagged = true;
        assert_eq!(unflagged_median(&runs), Some(0.11));
        for r in &mut runs {
            r.flagged = true;
        }
        assert_eq!(unflagged_median(&runs), None);
    }

    #[test]
    fn the_bootstrap_interval_is_deterministic_and_holds_the_estimate() {
        let runs = [1.00, 1.04, 0.97, 1.10, 1.02];
        let ci = diff_ci(&[(&[1.2], &runs)], 3);
        assert_eq!(ci, diff_ci(&[(&[1.2], &runs)], 3));
        let est = diff_pct(1.2, median(&mut runs.clone()).unwrap());
        assert!(ci[0] < est && est < ci[1], "{ci:?} around {est}");
        // Its ends are diffs of medians the resamples can have.
        assert!(ci[0] >= diff_pct(1.2, 1.10) - 1e-9 && ci[1] <= diff_pct(1.2, 0.97) + 1e-9);
        // Runs that all agree leave nothing to resample.
        let same = diff_ci(&[(&[1.2], &[1.0, 1.0, 1.0])], 0);
        assert_eq!(same[0], same[1]);
        assert!((same[0] - diff_pct(1.2, 1.0)).abs() < 1e-12, "{same:?}");
        // The mean over points holds the mean of their estimates.
        let other = [2.0, 2.1, 1.9];
        let mean = (est + diff_pct(1.8, 2.0)) / 2.0;
        let ci = diff_ci(&[(&[1.2], &runs), (&[1.8], &other)], MEAN_SEED);
        assert!(ci[0] < mean && mean < ci[1], "{ci:?} around {mean}");
        assert!(diff_ci(&[], 0)[0].is_nan());
    }

    #[test]
    fn a_prediction_inside_bimodal_runs_gets_an_interval_that_holds_its_estimate() {
        // Five runs in two modes, the prediction near their median: the
        // resampled medians fall on either mode, each farther than the
        // estimate.
        let runs = [1.0, 1.0, 1.19, 1.4, 1.4];
        let est = diff_pct(1.2, 1.19);
        let one = diff_ci(&[(&[1.2], &runs)], 5);
        assert_eq!(one[0], 0.0, "the sign is open: {one:?}");
        assert!(one[1] >= diff_pct(1.2, 1.0) - 1e-9, "{one:?}");
        let three: Vec<(&[f64], &[f64])> = vec![(&[1.2], &runs); 3];
        // The plain percentile interval of the mean of |diff| lies wholly
        // above the estimate here.
        let mut rng = Rng::new(MEAN_SEED);
        let (mut a, mut b) = (vec![], vec![]);
        let mut plain: Vec<f64> = (0..RESAMPLES)
            .map(|_| {
                (0..3)
                    .map(|_| {
                        let p = resampled_median(&mut rng, &[1.2], &mut a);
                        diff_pct(p, resampled_median(&mut rng, &runs, &mut b))
                    })
                    .sum::<f64>()
                    / 3.0
            })
            .collect();
        plain.sort_by(f64::total_cmp);
        assert!(quantile(&plain, 0.025) > est, "{}", quantile(&plain, 0.025));
        let ci = diff_ci(&three, MEAN_SEED);
        assert!(ci[0] <= est && est <= ci[1], "{ci:?} around {est}");
        // A clear miss is left where the resamples put it: a shift of
        // less than a point.
        let far = [1.00, 1.04, 0.97, 1.10, 1.02];
        let two: Vec<(&[f64], &[f64])> = vec![(&[1.2], &far); 2];
        let ci = diff_ci(&two, MEAN_SEED);
        let e = diff_pct(1.2, 1.02);
        assert!(ci[0] < e && e < ci[1] && ci[0] > 5.0, "{ci:?} around {e}");
    }
}
