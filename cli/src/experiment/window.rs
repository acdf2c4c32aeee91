//! Where a point's diff comes from: the model, or the host between the
//! window it learned from and the runs it is judged against.
//!
//! A model is learned from the iterations one instrumented run recorded
//! (the window) and judged against real runs minutes later. On a host
//! whose speed wanders by tens of percent over seconds, the diff of a
//! point holds two things: how far the model strays from the very
//! iterations it learned from (the model's own error, on Block), and how
//! far that window strays from the runs of its round on the same
//! distribution (the host's drift, which no prediction can see). Each
//! round gives one pair; the report keeps every pair and the medians with
//! their bootstrap 95% intervals.

use super::noise;
use mheta_base::median;
use serde::Serialize;

/// One round: its model's Block prediction, the window that model was
/// learned from, and the round's real run on Block.
#[derive(Serialize, Clone, Debug)]
pub struct WindowRound {
    pub model_blk_s: f64,
    pub window_s: f64,
    pub blk_run_s: f64,
}

/// The split over the rounds, signed percentages (above 0: the first is
/// slower).
#[derive(Serialize, Clone, Debug)]
pub struct WindowSplit {
    pub rounds: Vec<WindowRound>,
    /// Median over the rounds of the model's Block prediction against its
    /// own window, and the bootstrap 95% interval of that median.
    pub model_vs_window_pct: f64,
    pub model_vs_window_ci95_pct: [f64; 2],
    /// Median over the rounds of the window against the round's Block
    /// run, and its interval.
    pub window_vs_blk_run_pct: f64,
    pub window_vs_blk_run_ci95_pct: [f64; 2],
}

/// The split from each round's (model's Block prediction, window) and the
/// Block point's runs in round order; None when no round has all three.
pub(super) fn split(models: &[(f64, Option<f64>)], blk_runs: &[f64]) -> Option<WindowSplit> {
    let rounds: Vec<WindowRound> = models
        .iter()
        .zip(blk_runs)
        .filter_map(|(&(model_blk_s, w), &blk_run_s)| {
            let window_s = w?;
            (model_blk_s.is_finite() && window_s > 0.0 && blk_run_s > 0.0).then_some(WindowRound {
                model_blk_s,
                window_s,
                blk_run_s,
            })
        })
        .collect();
    if rounds.is_empty() {
        return None;
    }
    let pct = |f: fn(&WindowRound) -> f64| -> (f64, [f64; 2]) {
        let v: Vec<f64> = rounds.iter().map(f).collect();
        let mid = median(&mut v.clone()).unwrap_or(f64::NAN);
        (mid, noise::median_ci(&v, noise::MEAN_SEED))
    };
    let (mw, mw_ci) = pct(|r| 100.0 * (r.model_blk_s / r.window_s - 1.0));
    let (wb, wb_ci) = pct(|r| 100.0 * (r.window_s / r.blk_run_s - 1.0));
    Some(WindowSplit {
        rounds,
        model_vs_window_pct: mw,
        model_vs_window_ci95_pct: mw_ci,
        window_vs_blk_run_pct: wb,
        window_vs_blk_run_ci95_pct: wb_ci,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_split_pairs_each_model_with_its_window_and_its_rounds_run() {
        // Model 5% under its window in every round; windows 10% above
        // the runs in two rounds and equal in one; a round without a
        // window is left out.
        let models = [
            (0.95, Some(1.0)),
            (1.045, Some(1.1)),
            (0.9, None),
            (1.045, Some(1.1)),
        ];
        let runs = [1.0, 1.0, 1.0, 1.0];
        let s = split(&models, &runs).unwrap();
        assert_eq!(s.rounds.len(), 3);
        assert!((s.model_vs_window_pct + 5.0).abs() < 1e-9);
        assert!((s.window_vs_blk_run_pct - 10.0).abs() < 1e-9);
        assert!(s.window_vs_blk_run_ci95_pct[0] <= 10.0 + 1e-9);
        assert!(s.window_vs_blk_run_ci95_pct[1] >= 10.0 - 1e-9);
        assert!(split(&[(1.0, None)], &[1.0]).is_none());
    }
}
