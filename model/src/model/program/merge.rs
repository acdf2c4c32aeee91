//! Several recorded iterations of the same shape merged into one
//! [`Program`]: each compute gap and collective time the median over
//! them, and the per-iteration series the model keeps beside.

use super::{Program, Step};

/// The steps of iterations of the same shape with each collective's time
/// and each compute gap the median over the iterations; the sums of the
/// scaled and the unscaled gaps.
pub(super) fn median_steps(progs: &[Program]) -> (Vec<Step>, f64, f64) {
    let mut steps = progs[0].steps.clone();
    let (mut scaled_s, mut unscaled_s) = (0.0, 0.0);
    let median_at = |k: usize| {
        let mut v: Vec<f64> = progs
            .iter()
            .map(|p| match p.steps[k] {
                Step::Reduce { took, .. } => took,
                Step::Compute { s, .. } => s,
                _ => 0.0,
            })
            .collect();
        mheta_base::median(&mut v).unwrap_or(0.0)
    };
    for (k, step) in steps.iter_mut().enumerate() {
        match step {
            Step::Reduce { took, .. } => *took = median_at(k),
            Step::Compute { s, scaled, .. } => {
                *s = median_at(k);
                if *scaled {
                    scaled_s += *s;
                } else {
                    unscaled_s += *s;
                }
            }
            _ => {}
        }
    }
    (steps, scaled_s, unscaled_s)
}

/// [`Program::compute_by_iter`] of iterations of the same shape: each
/// compute step's seconds in each of them (none with fewer than 3).
pub(super) fn compute_by_iter(progs: &[Program]) -> Vec<Vec<f64>> {
    if progs.len() < 3 {
        return Vec::new();
    }
    (0..progs[0].steps.len())
        .map(|k| match progs[0].steps[k] {
            Step::Compute { .. } => progs
                .iter()
                .map(|p| match p.steps[k] {
                    Step::Compute { s, .. } => s,
                    _ => 0.0,
                })
                .collect(),
            _ => Vec::new(),
        })
        .collect()
}

/// Per full-world collective of `steps`, its time in each iteration.
pub(super) fn reduce_tooks(progs: &[Program], steps: &[Step]) -> Vec<Vec<f64>> {
    (0..steps.len())
        .filter(|&k| matches!(steps[k], Step::Reduce { .. }))
        .map(|k| {
            progs
                .iter()
                .map(|p| match p.steps[k] {
                    Step::Reduce { took, .. } => took,
                    _ => 0.0,
                })
                .collect()
        })
        .collect()
}

/// Element by element, the median over the iterations of a series (as
/// long as the first iteration's), NaNs left out; NaN where none is known.
pub(super) fn median_series(progs: &[Program], of: fn(&Program) -> &Vec<f64>) -> Vec<f64> {
    (0..of(&progs[0]).len())
        .map(|k| {
            let mut v: Vec<f64> = progs
                .iter()
                .filter_map(|p| of(p).get(k).copied())
                .filter(|x| !x.is_nan())
                .collect();
            if v.is_empty() {
                f64::NAN
            } else {
                mheta_base::median(&mut v).unwrap_or(0.0)
            }
        })
        .collect()
}
