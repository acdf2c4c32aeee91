//! The study's report: a row per point (predicted against the median of
//! its runs), the diffs, drift, noise floor, flagged runs and bests,
//! printed as a table and a summary.

use super::Args;
use super::noise::{self, RunRecord, Thresholds};
use super::window::{self, WindowSplit};
use anyhow::{Context, Result};
use mheta_base::median;
use mheta_model::{Dist, search};
use serde::Serialize;

#[derive(Serialize, Clone, Debug)]
pub struct Row {
    pub label: String,
    pub dist: Vec<u64>,
    /// The median of `predicted_rounds_s`.
    pub predicted_s: f64,
    /// Each model's prediction: the first instrumented run's, then with
    /// `--learn-each-round` each later round's.
    pub predicted_rounds_s: Vec<f64>,
    pub actual_s: f64,
    pub diff_pct: f64,
    /// Each real run's median iteration, in the order they ran.
    pub runs_s: Vec<f64>,
    /// Each real run's record, in the order they ran: its median
    /// iteration, busiest rank's stages, main loop's wall time, per rank
    /// rows, CPU time, run-queue delay and CPU time per unit, and whether
    /// and why the host disturbed it (`flags`).
    pub runs: Vec<RunRecord>,
    /// How many of `runs` are flagged.
    pub flagged_runs: usize,
    /// The median of the runs not flagged (null when every run was).
    pub actual_unflagged_s: Option<f64>,
    /// diff % of `predicted_s` and `actual_unflagged_s`.
    pub diff_unflagged_pct: Option<f64>,
    /// The percentile bootstrap 95% interval of `diff_pct`: the point's
    /// runs resampled with replacement 2000 times (seeded by the point's
    /// index), the diff of each resample's median.
    pub diff_ci95_pct: [f64; 2],
    /// (max − min) / median of `runs_s`, percent.
    pub spread_pct: f64,
    /// (max − min) / median of `predicted_rounds_s`, percent (null with
    /// one model): how far the models learned from different instrumented
    /// runs disagree here, the noise in the prediction's input that the
    /// runs' spread does not show (a point bound by a rank's computation,
    /// which each model reads from its window's few iterations).
    pub predicted_spread_pct: Option<f64>,
    /// The median over the runs and ranks of a rank's CPU time per unit
    /// of work over its median on the Blk point's runs
    /// ([`noise::cpu_per_unit_against`]; null without the figures or a
    /// Blk point): how far a row's cost moved from what the model, which
    /// prices rows as recorded on Block, was told.
    pub cpu_per_unit_vs_blk: Option<f64>,
    /// The model's busiest rank: its time in stages (computation and
    /// I/O, T_τ) per iteration. With `actual_busy_s` it splits a diff into
    /// its stage part and the rest (communication and waiting).
    pub predicted_busy_s: f64,
    /// The median over the runs of the busiest rank's median time in
    /// stages per iteration (the apps' `ranks[].stage_s`).
    pub actual_busy_s: f64,
    /// diff % of those two.
    pub busy_diff_pct: f64,
    /// Some rank kept an array out of core in some real run of this
    /// point (its `out_of_core` list was not empty).
    pub out_of_core: bool,
    /// With `--row-curve` or the reuse term: the paper's model (one cost
    /// a row, as recorded: no curve, no reuse term) on the same models,
    /// its prediction (median over the models), diff and busy diff
    /// against the same runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub predicted_linear_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff_linear_pct: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub busy_diff_linear_pct: Option<f64>,
    /// Each run's iteration as the paper's model of its round prices it
    /// with every rank's computation at that run's own CPU time a row
    /// ([`super::speed`]), in the order of `runs` (null where it could
    /// not be priced).
    pub predicted_at_run_cpu_s: Vec<Option<f64>>,
    /// The diff (as `diff_pct`) of the median over the runs of that
    /// prediction over the run's median iteration, against 1: what is
    /// left of the diff with the host's drift in the cost of a row taken
    /// out (null without a priced run).
    pub diff_at_run_cpu_pct: Option<f64>,
    /// The median over the models of the median iteration's replay
    /// alone (MHETA's one iteration, what the search prices), and its
    /// diff against the same runs; `predicted_s` replays each recorded
    /// iteration instead ([`Priced`]).
    pub predicted_one_iteration_s: f64,
    pub diff_one_iteration_pct: f64,
}

/// How one model prices a point (`super::predict`).
#[derive(Clone, Copy, Debug)]
pub(super) struct Priced {
    /// The iteration as `--auto` reports it: the median of each recorded
    /// iteration replayed (`Model::predict_iterations`), or the median
    /// iteration's replay where a rank recorded fewer than 3.
    pub(super) iter_s: f64,
    /// The median iteration's replay alone (`Model::predict`).
    pub(super) one_s: f64,
    /// The busiest rank's time in stages, in that replay.
    pub(super) busy_s: f64,
}

/// With `--row-curve`: the curve used and the paper's one cost a row on
/// the same points and runs, side by side with the curve's figures.
#[derive(Serialize, Clone, Debug)]
pub struct CurveSummary {
    /// The `mheta-row-curve` file the calibration wrote.
    pub file: String,
    /// Its interleaved rounds.
    pub rounds: usize,
    /// The paper's model on the same points and runs.
    #[serde(flatten)]
    pub linear: LinearFigures,
}

/// The paper's model (`Row::diff_linear_pct`) over the points: mean and
/// max of `diff_linear_pct`, and mean of `busy_diff_linear_pct`.
#[derive(Serialize, Clone, Debug)]
pub struct LinearFigures {
    pub mean_diff_linear_pct: f64,
    pub max_diff_linear_pct: f64,
    pub mean_busy_diff_linear_pct: f64,
}

#[derive(Serialize, Debug)]
pub struct Report {
    pub app: String,
    pub cluster: String,
    pub np: usize,
    pub prefetch: bool,
    pub iters: u64,
    /// Real runs per distribution (interleaved rounds).
    pub repeat: usize,
    pub rows: Vec<Row>,
    pub min_diff_pct: f64,
    pub mean_diff_pct: f64,
    pub max_diff_pct: f64,
    /// Mean over the points of `busy_diff_pct`: how much of the diff is
    /// already in the stages.
    pub mean_busy_diff_pct: f64,
    /// Models learned (instrumented runs): 1, or `repeat` with
    /// `--learn-each-round`.
    pub models: usize,
    /// Mean over the points and the models of one model's prediction
    /// against the point's actual: the diff a single instrumented run
    /// gives. With one model, `mean_diff_pct`.
    pub mean_diff_one_model_pct: f64,
    /// The percentile bootstrap 95% interval of `mean_diff_pct`: every
    /// point's runs resampled together, 2000 times.
    pub mean_diff_ci95_pct: [f64; 2],
    /// Mean and max over the points of `diff_unflagged_pct` (the points
    /// with an unflagged run; null when there is none).
    pub mean_diff_unflagged_pct: Option<f64>,
    pub max_diff_unflagged_pct: Option<f64>,
    /// Mean and max over the points of `diff_at_run_cpu_pct` (null when
    /// no point has one).
    pub mean_diff_at_run_cpu_pct: Option<f64>,
    pub max_diff_at_run_cpu_pct: Option<f64>,
    /// Mean and max over the points of `diff_one_iteration_pct`.
    pub mean_diff_one_iteration_pct: f64,
    pub max_diff_one_iteration_pct: f64,
    /// Flagged runs, and all real runs of the points.
    pub flagged_runs: usize,
    pub total_runs: usize,
    /// The flagging thresholds: run-queue delay over the main loop's wall
    /// time, and CPU time per unit over the rank's median at the point,
    /// percent (`--flag-runq-pct`, `--flag-cpu-pct`). The run-queue rule
    /// is off (null) when the ranks outnumber this machine's cores: then
    /// waiting for a core is the emulation's, not a disturbance.
    pub flag_runq_pct: Option<f64>,
    pub flag_cpu_pct: f64,
    pub best_actual: Row,
    pub best_predicted: Row,
    /// The predicted best is the actual best.
    pub predicted_best_is_best: bool,
    /// Actual time of the predicted best over the best actual, minus one.
    pub predicted_best_gap_pct: f64,
    pub gbs_dist: Vec<u64>,
    pub gbs_evaluations: u64,
    /// The instrumented run's median iteration, s (on Block).
    pub instrumented_s: f64,
    /// The Blk point's actual time over the instrumented run's, minus one,
    /// percent: how far the machine drifted between the run the model
    /// learned from and the real runs, on the same distribution.
    pub drift_pct: Option<f64>,
    /// The Blk point's diff split round by round: each model against the
    /// window it learned from, and that window against the round's Blk
    /// run ([`super::window`]). None without a Blk point or a window.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window: Option<WindowSplit>,
    /// The host's noise floor: the median over the points of
    /// `spread_pct` (with `--repeat` > 1; with one run per point, the
    /// spread of the first point's run and one more): the run-to-run
    /// noise of one distribution, below which a diff cannot be told from
    /// chance.
    pub noise_pct: Option<f64>,
    /// How `noise_pct` was measured.
    pub noise_from: String,
    /// The runs' CPU emulation and why it was chosen.
    pub cpu_emulation: String,
    /// The Block run's emulation report (cgroups, disk, cache).
    pub emulation: serde_json::Value,
    /// `--row-curve`: the curve and the diffs without it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub row_curve: Option<CurveSummary>,
    /// With the reuse term (the profile's `reuse_by`, `model/src/reuse.rs`):
    /// the paper's model's figures on the same points and runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reuse: Option<LinearFigures>,
}

/// How the study's runs went, beside the arguments: their iterations
/// (more than `--iters` with `--run-seconds`), the flagging thresholds in
/// force, the CPU emulation with why it was chosen, and with
/// `--row-curve` the curve's file and rounds.
pub(super) struct Ran {
    /// Each model's recorded window ([`Measured::windows`]).
    pub(super) windows: Vec<Option<f64>>,
    pub(super) iters: u64,
    pub(super) thresholds: Thresholds,
    pub(super) cpu_emulation: String,
    pub(super) curve: Option<(String, usize)>,
    /// The model had a reuse term.
    pub(super) reuse: bool,
}

/// |p - a| / min(p, a), in percent (the paper's figure 9 measure).
pub fn diff_pct(p: f64, a: f64) -> f64 {
    100.0 * (p - a).abs() / p.min(a)
}

/// Each point's real runs: their records, and whether some rank was out
/// of core.
pub(super) struct Measured {
    pub(super) runs: Vec<Vec<RunRecord>>,
    pub(super) ooc: Vec<bool>,
    /// Each model's recorded window, s (its median iteration), in the
    /// order the models were learned.
    pub(super) windows: Vec<Option<f64>>,
    /// Per point, each run's prediction at its own CPU time a row
    /// ([`super::speed::at_run_cpu`]), in the order of `runs`.
    pub(super) at_run_cpu: Vec<Vec<Option<f64>>>,
}

/// Each point's row: its runs flagged by `t`, predicted against the
/// median of its runs.
/// `linear`, with `--row-curve`: the same models' predictions without
/// the curve.
pub(super) fn rows(
    dists: &[(String, Dist)],
    predicted: Vec<Vec<Priced>>,
    linear: Option<Vec<Vec<Priced>>>,
    m: Measured,
    t: Thresholds,
) -> Vec<Row> {
    let mut rows = Vec::new();
    let mut linear = linear.map(Vec::into_iter);
    for (i, (((((label, d), models), mut runs), out_of_core), at_cpu)) in dists
        .iter()
        .zip(predicted)
        .zip(m.runs)
        .zip(m.ooc)
        .zip(m.at_run_cpu)
        .enumerate()
    {
        let lin = linear
            .as_mut()
            .and_then(Iterator::next)
            .map(|l| (med_of(&l, |p| p.iter_s), med_of(&l, |p| p.busy_s)));
        noise::flag(&mut runs, t);
        let predicted_rounds_s: Vec<f64> = models.iter().map(|p| p.iter_s).collect();
        let predicted_s = median(&mut predicted_rounds_s.clone()).unwrap_or(f64::NAN);
        let predicted_busy_s = med_of(&models, |p| p.busy_s);
        let predicted_one_iteration_s = med_of(&models, |p| p.one_s);
        let runs_s: Vec<f64> = runs.iter().map(|r| r.iter_median_s).collect();
        let mut busy: Vec<f64> = runs.iter().map(|r| r.busiest_stage_s).collect();
        let actual_s = median(&mut runs_s.clone()).unwrap_or(f64::NAN);
        let actual_busy_s = median(&mut busy).unwrap_or(f64::NAN);
        let actual_unflagged_s = noise::unflagged_median(&runs);
        let diff_ci95_pct = noise::diff_ci(&[(&predicted_rounds_s, &runs_s)], i as u64);
        let predicted_spread_pct =
            (predicted_rounds_s.len() > 1).then(|| range_pct(&predicted_rounds_s, predicted_s));
        rows.push(Row {
            label: label.clone(),
            dist: d.0.clone(),
            predicted_s,
            predicted_rounds_s,
            actual_s,
            diff_pct: diff_pct(predicted_s, actual_s),
            spread_pct: range_pct(&runs_s, actual_s),
            predicted_spread_pct,
            predicted_busy_s,
            actual_busy_s,
            busy_diff_pct: diff_pct(predicted_busy_s, actual_busy_s),
            flagged_runs: runs.iter().filter(|r| r.flagged).count(),
            actual_unflagged_s,
            diff_unflagged_pct: actual_unflagged_s.map(|a| diff_pct(predicted_s, a)),
            diff_ci95_pct,
            predicted_linear_s: lin.map(|l| l.0),
            diff_linear_pct: lin.map(|l| diff_pct(l.0, actual_s)),
            busy_diff_linear_pct: lin.map(|l| diff_pct(l.1, actual_busy_s)),
            cpu_per_unit_vs_blk: None,
            diff_at_run_cpu_pct: at_run_cpu_diff(&at_cpu, &runs_s),
            predicted_at_run_cpu_s: at_cpu,
            diff_one_iteration_pct: diff_pct(predicted_one_iteration_s, actual_s),
            predicted_one_iteration_s,
            runs_s,
            runs,
            out_of_core,
        });
    }
    rows
}

/// The median of `f` over `models` (NaN for none).
fn med_of(models: &[Priced], f: fn(&Priced) -> f64) -> f64 {
    median(&mut models.iter().map(f).collect::<Vec<_>>()).unwrap_or(f64::NAN)
}

/// The diff of the median of each run's prediction at its own CPU speed
/// over its median iteration, against 1 (None without a priced run).
fn at_run_cpu_diff(predicted: &[Option<f64>], runs_s: &[f64]) -> Option<f64> {
    let mut r: Vec<f64> = (predicted.iter().zip(runs_s))
        .filter_map(|(p, &a)| p.filter(|p| p.is_finite() && a > 0.0).map(|p| p / a))
        .collect();
    median(&mut r).map(|x| diff_pct(x, 1.0))
}

/// (max − min) of `v` over `of`, percent.
fn range_pct(v: &[f64], of: f64) -> f64 {
    let (lo, hi) = (v.iter()).fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &x| {
        (lo.min(x), hi.max(x))
    });
    100.0 * (hi - lo) / of
}

/// The mean and max of the points' diffs without flagged runs, over the
/// points that have an unflagged run.
fn unflagged_diffs(rows: &[Row]) -> (Option<f64>, Option<f64>) {
    let d: Vec<f64> = rows.iter().filter_map(|r| r.diff_unflagged_pct).collect();
    if d.is_empty() {
        return (None, None);
    }
    let mean = d.iter().sum::<f64>() / d.len() as f64;
    (Some(mean), Some(d.iter().copied().fold(0.0, f64::max)))
}

/// The report: the rows, their diffs, drift and noise, and the bests.
pub(super) fn summarise(
    a: &Args,
    rows: Vec<Row>,
    block_run: &serde_json::Value,
    blk: &Dist,
    g: search::Found,
    (noise, noise_from): (Option<f64>, String),
    ran: Ran,
) -> Result<Report> {
    let mut rows = rows;
    if let Some(reference) = rows
        .iter()
        .find(|r| r.dist == blk.0)
        .map(|r| r.runs.clone())
    {
        for r in &mut rows {
            r.cpu_per_unit_vs_blk = noise::cpu_per_unit_against(&reference, &r.runs);
        }
    }
    let diffs: Vec<f64> = rows.iter().map(|r| r.diff_pct).collect();
    let mean_busy_diff_pct = rows.iter().map(|r| r.busy_diff_pct).sum::<f64>() / rows.len() as f64;
    let instrumented_s = block_run["iter_median_s"]
        .as_f64()
        .context("the instrumented run's result has no iter_median_s")?;
    let blk_row = rows.iter().find(|r| r.dist == blk.0);
    let drift_pct = blk_row.map(|r| 100.0 * (r.actual_s / instrumented_s - 1.0));
    let window = blk_row.and_then(|r| {
        let models: Vec<(f64, Option<f64>)> = r
            .predicted_rounds_s
            .iter()
            .zip(ran.windows.iter().chain(std::iter::repeat(&None)))
            .map(|(&p, &w)| (p, w))
            .collect();
        window::split(&models, &r.runs_s)
    });
    let noise_pct = noise.or_else(|| {
        let mut s: Vec<f64> = rows.iter().map(|r| r.spread_pct).collect();
        (a.repeat > 1).then(|| median(&mut s)).flatten()
    });
    let best = |f: fn(&Row) -> f64| {
        rows.iter()
            .min_by(|x, y| f(x).total_cmp(&f(y)))
            .cloned()
            .context("no rows")
    };
    let (best_actual, best_predicted) = (best(|r| r.actual_s)?, best(|r| r.predicted_s)?);
    let points: Vec<(&[f64], &[f64])> = rows
        .iter()
        .map(|r| (r.predicted_rounds_s.as_slice(), r.runs_s.as_slice()))
        .collect();
    let mean_diff_ci95_pct = noise::diff_ci(&points, noise::MEAN_SEED);
    let one_model: Vec<f64> = rows
        .iter()
        .flat_map(|r| {
            r.predicted_rounds_s
                .iter()
                .map(|&p| diff_pct(p, r.actual_s))
        })
        .collect();
    let (mean_diff_unflagged_pct, max_diff_unflagged_pct) = unflagged_diffs(&rows);
    let at_cpu: Vec<f64> = rows.iter().filter_map(|r| r.diff_at_run_cpu_pct).collect();
    let (mean_diff_at_run_cpu_pct, max_diff_at_run_cpu_pct) = match at_cpu.len() {
        0 => (None, None),
        n => (
            Some(at_cpu.iter().sum::<f64>() / n as f64),
            Some(at_cpu.iter().copied().fold(0.0, f64::max)),
        ),
    };
    let one: Vec<f64> = rows.iter().map(|r| r.diff_one_iteration_pct).collect();
    Ok(Report {
        app: a.app.clone(),
        cluster: a.cluster.clone(),
        np: a.np,
        prefetch: a.prefetch,
        iters: ran.iters,
        repeat: a.repeat,
        min_diff_pct: diffs.iter().copied().fold(f64::INFINITY, f64::min),
        mean_diff_pct: diffs.iter().sum::<f64>() / diffs.len() as f64,
        max_diff_pct: diffs.iter().copied().fold(0.0, f64::max),
        mean_busy_diff_pct,
        models: rows.first().map_or(0, |r| r.predicted_rounds_s.len()),
        mean_diff_one_model_pct: one_model.iter().sum::<f64>() / one_model.len().max(1) as f64,
        mean_diff_ci95_pct,
        mean_diff_unflagged_pct,
        max_diff_unflagged_pct,
        mean_diff_at_run_cpu_pct,
        max_diff_at_run_cpu_pct,
        mean_diff_one_iteration_pct: one.iter().sum::<f64>() / one.len().max(1) as f64,
        max_diff_one_iteration_pct: one.iter().copied().fold(0.0, f64::max),
        flagged_runs: rows.iter().map(|r| r.flagged_runs).sum(),
        total_runs: rows.iter().map(|r| r.runs.len()).sum(),
        flag_runq_pct: ran.thresholds.runq_pct,
        flag_cpu_pct: ran.thresholds.cpu_pct,
        predicted_best_is_best: best_predicted.dist == best_actual.dist,
        predicted_best_gap_pct: 100.0 * (best_predicted.actual_s / best_actual.actual_s - 1.0),
        best_actual,
        best_predicted,
        gbs_dist: g.dist,
        gbs_evaluations: g.evaluations,
        instrumented_s,
        drift_pct,
        window,
        noise_pct,
        noise_from,
        cpu_emulation: ran.cpu_emulation,
        emulation: block_run["emulation"].clone(),
        row_curve: ran.curve.map(|(file, rounds)| CurveSummary {
            file,
            rounds,
            linear: linear_figures(&rows),
        }),
        reuse: ran.reuse.then(|| linear_figures(&rows)),
        rows,
    })
}

/// The paper's model's figures over the same points.
fn linear_figures(rows: &[Row]) -> LinearFigures {
    let d: Vec<f64> = rows.iter().filter_map(|r| r.diff_linear_pct).collect();
    let b: Vec<f64> = rows.iter().filter_map(|r| r.busy_diff_linear_pct).collect();
    let n = d.len().max(1) as f64;
    LinearFigures {
        mean_diff_linear_pct: d.iter().sum::<f64>() / n,
        max_diff_linear_pct: d.iter().copied().fold(0.0, f64::max),
        mean_busy_diff_linear_pct: b.iter().sum::<f64>() / b.len().max(1) as f64,
    }
}

/// The header, the table, then the summary.
pub fn print(r: &Report) {
    println!(
        "# mheta experiment: {} on {} with {} ranks{}, {} iterations per run (median iteration), {}",
        r.app,
        r.cluster,
        r.np,
        if r.prefetch { ", prefetching" } else { "" },
        r.iters,
        if r.repeat > 1 {
            format!(
                "{} interleaved runs per point (median; spread = (max - min) / median)",
                r.repeat
            )
        } else {
            "one run per point".to_string()
        }
    );
    let e = |k: &str| r.emulation[k].as_str().unwrap_or("?").to_string();
    println!(
        "# emulation: cpu {}, memory {}, disk {}, cache {}, wait {}",
        e("cpu"),
        e("memory"),
        e("disk"),
        e("cache"),
        e("wait"),
    );
    println!("# cpu emulation: {}", r.cpu_emulation);
    table(r);
    summary(r);
}

/// One line per point: predicted, actual, diff and its 95% interval,
/// spread of the runs and of the models' predictions, flagged runs, busy
/// diff, CPU per unit against Blk, core.
fn table(r: &Report) {
    println!(
        "{:>3}  {:<10} {:<28} {:>14} {:>14} {:>8} {:>15} {:>9} {:>9} {:>7} {:>8} {:>8}  core",
        "#",
        "point",
        "distribution",
        "predicted (s)",
        "actual (s)",
        "diff %",
        "95% CI diff %",
        "spread %",
        "models %",
        "flagged",
        "busy %",
        "CPU/unit"
    );
    for (i, row) in r.rows.iter().enumerate() {
        println!(
            "{:>3}  {:<10} {:<28} {:>14.6} {:>14.6} {:>8.2} {:>15} {:>9} {:>9} {:>7} {:>8.2} {:>8}  {}",
            i,
            row.label,
            Dist(row.dist.clone()).to_string(),
            row.predicted_s,
            row.actual_s,
            row.diff_pct,
            interval(row.diff_ci95_pct),
            if row.runs_s.len() > 1 {
                format!("{:.2}", row.spread_pct)
            } else {
                "-".to_string()
            },
            row.predicted_spread_pct
                .map_or("-".to_string(), |x| format!("{x:.2}")),
            format!("{}/{}", row.flagged_runs, row.runs.len()),
            row.busy_diff_pct,
            row.cpu_per_unit_vs_blk
                .map_or("-".to_string(), |x| format!("{x:.3}")),
            if row.out_of_core { "out" } else { "in" }
        );
    }
}

/// `[lo, hi]` to two decimals.
fn interval(ci: [f64; 2]) -> String {
    format!("[{:.2}, {:.2}]", ci[0], ci[1])
}

/// The diffs beside the noise floor and their interval, without flagged
/// runs, the busy part, the drift, and the bests.
fn summary(r: &Report) {
    let noise = r
        .noise_pct
        .map_or("not measured".to_string(), |n| format!("{n:.2}%"));
    println!(
        "diff: min {:.2}%  avg {:.2}%  max {:.2}%  (noise floor {noise}); avg's 95% CI {}% (bootstrap over the runs)",
        r.min_diff_pct,
        r.mean_diff_pct,
        r.max_diff_pct,
        interval(r.mean_diff_ci95_pct)
    );
    flagged(r);
    if r.models > 1 {
        println!(
            "models: {} instrumented runs, one a round; a point's prediction is their median; one model alone: avg diff {:.2}%",
            r.models, r.mean_diff_one_model_pct
        );
    }
    println!(
        "busy: the busiest rank's time in stages (computation and I/O), predicted against measured: avg diff {:.2}%; the rest of a diff is communication and waiting",
        r.mean_busy_diff_pct
    );
    let cpu: Vec<f64> = r
        .rows
        .iter()
        .filter_map(|x| x.cpu_per_unit_vs_blk)
        .collect();
    if !cpu.is_empty() {
        println!(
            "CPU/unit: a rank's CPU time per unit of work over its own on Blk's runs (median over the runs and ranks): {:.3} to {:.3} over the points; the model prices a row as recorded on Block, so a point off 1 has its compute off by as much",
            cpu.iter().copied().fold(f64::INFINITY, f64::min),
            cpu.iter().copied().fold(f64::NEG_INFINITY, f64::max)
        );
    }
    println!(
        "one iteration: the median iteration's replay alone (MHETA's one iteration, what the search prices) on the same models and runs: avg diff {:.2}%, max {:.2}%; the prediction replays each recorded iteration and takes the median, as --auto reports it",
        r.mean_diff_one_iteration_pct, r.max_diff_one_iteration_pct
    );
    if let (Some(mean), Some(max)) = (r.mean_diff_at_run_cpu_pct, r.max_diff_at_run_cpu_pct) {
        println!(
            "at each run's CPU speed: avg diff {mean:.2}%, max {max:.2}% (the paper's model of each round, each recorded iteration replayed, with every rank's computation at the run's own CPU time a row, the median over its iterations, over the recorded window's: the host's drift in a row's cost taken out, and with it any error in a row's cost at other row counts)"
        );
    }
    if let Some(c) = &r.row_curve {
        println!(
            "row-cost curve: {} ({} interleaved rounds); the paper's one cost a row on the same models and runs: avg diff {:.2}%, max {:.2}%, busy {:.2}%",
            c.file,
            c.rounds,
            c.linear.mean_diff_linear_pct,
            c.linear.max_diff_linear_pct,
            c.linear.mean_busy_diff_linear_pct
        );
    }
    if let Some(c) = &r.reuse {
        println!(
            "reuse term: on (the profile's reuse_by: a row's cost by the time since its last sweep); the paper's model, rows as recorded, on the same models and runs: avg diff {:.2}%, max {:.2}%, busy {:.2}%",
            c.mean_diff_linear_pct, c.max_diff_linear_pct, c.mean_busy_diff_linear_pct
        );
    }
    if let Some(d) = r.drift_pct {
        println!(
            "drift: the Blk runs took {:+.2}% against the instrumented run on Blk ({:.6} s), a change of the machine that no prediction sees",
            d, r.instrumented_s
        );
    }
    if let Some(w) = &r.window {
        println!(
            "window: on Blk, each model against the window it learned from {:+.2}% (95% CI {:+.2} to {:+.2}), that window against its round's Blk run {:+.2}% ({:+.2} to {:+.2}); medians of {} round(s): the first is the model's own error, the second the host's drift",
            w.model_vs_window_pct,
            w.model_vs_window_ci95_pct[0],
            w.model_vs_window_ci95_pct[1],
            w.window_vs_blk_run_pct,
            w.window_vs_blk_run_ci95_pct[0],
            w.window_vs_blk_run_ci95_pct[1],
            w.rounds.len()
        );
    }
    if let Some(n) = r.noise_pct {
        println!(
            "noise: runs of one distribution spread {n:.2}% ({}); diffs below that cannot be told from chance",
            r.noise_from
        );
    }
    println!(
        "best actual:    {} ({:.6} s)",
        Dist(r.best_actual.dist.clone()),
        r.best_actual.actual_s
    );
    println!(
        "predicted best: {} ({:.6} s predicted, {:.6} s actual): {}",
        Dist(r.best_predicted.dist.clone()),
        r.best_predicted.predicted_s,
        r.best_predicted.actual_s,
        if r.predicted_best_is_best {
            "the actual best".to_string()
        } else {
            format!(
                "{:.2}% slower than the actual best",
                r.predicted_best_gap_pct
            )
        }
    );
}

/// The flagged runs: how many, the diffs without them, and each with why.
fn flagged(r: &Report) {
    let f = |v: Option<f64>| v.map_or("-".to_string(), |x| format!("{x:.2}%"));
    let runq = r.flag_runq_pct.map_or(
        "the run-queue rule is off: the ranks outnumber the cores".to_string(),
        |p| format!("some rank waited for a core > {p}% of the main loop"),
    );
    println!(
        "without flagged runs: avg {}  max {}  ({} of {} runs flagged: {runq}, or took > {}% more CPU per unit than at the point's median)",
        f(r.mean_diff_unflagged_pct),
        f(r.max_diff_unflagged_pct),
        r.flagged_runs,
        r.total_runs,
        r.flag_cpu_pct
    );
    const SHOWN: usize = 10;
    let all = r.rows.iter().enumerate().flat_map(|(i, row)| {
        row.runs
            .iter()
            .enumerate()
            .filter(|(_, x)| x.flagged)
            .map(move |(k, x)| (i, k, x))
    });
    for (i, k, x) in all.take(SHOWN) {
        println!(
            "  flagged: point {i} run {} ({:.6} s): {}",
            k + 1,
            x.iter_median_s,
            x.flags.join("; ")
        );
    }
    if r.flagged_runs > SHOWN {
        println!(
            "  ... and {} more (--json: rows[].runs[].flags)",
            r.flagged_runs - SHOWN
        );
    }
}

#[cfg(test)]
mod tests {
    use super::{Measured, Priced, rows};
    use crate::experiment::noise::{RunRecord, Thresholds};
    use mheta_model::Dist;
    use serde_json::json;

    /// A 2-rank run's record with this median iteration.
    fn run(iter_s: f64) -> RunRecord {
        let rank = json!({ "rows": 4, "stage_s": iter_s / 2.0 });
        RunRecord::from_json(&json!({
            "iter_median_s": iter_s, "elapsed_s": 1.0, "ranks": [rank, rank]
        }))
        .unwrap()
    }

    fn one_point(models: &[f64], runs: &[f64]) -> super::Row {
        let m = Measured {
            runs: vec![runs.iter().map(|&s| run(s)).collect()],
            ooc: vec![false],
            windows: vec![None; models.len()],
            at_run_cpu: vec![vec![None; runs.len()]],
        };
        let t = Thresholds {
            runq_pct: None,
            cpu_pct: 15.0,
        };
        let predicted = vec![
            (models.iter())
                .map(|&p| Priced {
                    iter_s: p,
                    one_s: 0.9 * p,
                    busy_s: p / 2.0,
                })
                .collect(),
        ];
        let d = vec![("p".to_string(), Dist(vec![4, 4]))];
        rows(&d, predicted, None, m, t).remove(0)
    }

    #[test]
    fn a_points_models_spread_is_their_range_over_their_median() {
        let r = one_point(&[0.040, 0.050, 0.030, 0.045, 0.035], &[0.04, 0.04, 0.041]);
        assert_eq!(r.predicted_s, 0.040);
        let s = r.predicted_spread_pct.expect("five models");
        assert!((s - 50.0).abs() < 1e-9, "{s}");
        assert!((r.spread_pct - 2.5).abs() < 1e-9, "{}", r.spread_pct);
        assert_eq!(one_point(&[0.04], &[0.04, 0.05]).predicted_spread_pct, None);
    }

    #[test]
    fn the_one_iteration_replay_is_priced_beside_the_prediction() {
        let r = one_point(&[0.040, 0.050, 0.030], &[0.04, 0.04, 0.041]);
        assert_eq!(r.predicted_s, 0.040);
        assert!((r.predicted_one_iteration_s - 0.036).abs() < 1e-12);
        let want = 100.0 * 0.004 / 0.036;
        assert!(
            (r.diff_one_iteration_pct - want).abs() < 1e-9,
            "{}",
            r.diff_one_iteration_pct
        );
        assert!((r.predicted_busy_s - 0.020).abs() < 1e-12);
    }
}
