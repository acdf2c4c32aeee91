//! A sensed time series summarised: its distribution with modes
//! (HdrHistogram, [`mheta_profile::SampleStats`]), the model's
//! multi-modal stochastic value ([`Mixture`]: per mode its mean ± sd, its
//! share of the time and its mean dwell), and the mode it is in now.

use super::CURRENT_WINDOW;
use mheta_model::stoch::{Mixture, ModeStat, Stoch};
use mheta_profile::SampleStats as Hist;
use serde::{Deserialize, Serialize};

/// A sensed time series summarised: its distribution with modes, the
/// mixture for the model, and the mode it is in now.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Histogram and modes of the values ([`Hist::from_samples`]: a value
    /// is recorded as if it were seconds, so a CPU share of 0.5 is stored
    /// as 5e8 "ns").
    pub dist: Hist,
    /// One mode per mode of `dist`, by increasing value: value = mean ±
    /// sd of the samples classified to it, share = fraction of the time
    /// in it, mean_dwell_s = mean length of a visit.
    pub mixture: Mixture,
    /// The mode of the last [`CURRENT_WINDOW`] samples (majority; ties go
    /// to the latest), an index into `mixture.modes`.
    pub current_mode: Option<usize>,
}

/// The mode of each value: the modes of [`mheta_profile::modes`] are
/// consecutive runs of the sorted values, so the cut between mode k and
/// k+1 is midway between the last value of one and the first of the next.
pub fn classify(values: &[f64], modes: &[mheta_profile::Mode]) -> Vec<usize> {
    let mut xs: Vec<f64> = values
        .iter()
        .copied()
        .filter(|x| x.is_finite() && *x > 0.0)
        .collect();
    xs.sort_by(f64::total_cmp);
    let mut cuts = Vec::new();
    let mut at = 0usize;
    for m in modes.iter().take(modes.len().saturating_sub(1)) {
        at += m.count as usize;
        if at == 0 || at >= xs.len() {
            break;
        }
        cuts.push(0.5 * (xs[at - 1] + xs[at]));
    }
    values
        .iter()
        .map(|&v| cuts.partition_point(|&c| c < v))
        .collect()
}

/// The fewest samples inside a mode's visits (no neighbour of another
/// mode) that give its value; with fewer, all its samples do.
const MIN_INSIDE: usize = 5;

/// The mixture of a time series `(t, value)` (t in seconds, increasing)
/// sampled every `interval_s`, for the modes `modes` (of the same
/// values): each sample stands for the time to the next one (the last for
/// `interval_s`); a mode's value is the mean ± sd of its samples inside
/// its visits (a sample beside one of another mode may straddle the
/// switch and read between them), or of all its samples when fewer than
/// [`MIN_INSIDE`] or a quarter of them are inside; its share is its
/// fraction of that time, its dwell the mean time of a run of consecutive samples in it. Runs cut by the
/// start or end of the series are left out of the dwell when the mode has
/// a complete run (they are shorter than the visit); a mode seen only in
/// cut runs gets their mean, a lower bound. Returns the mixture and each
/// sample's mode.
pub fn mixture_from_series(
    series: &[(f64, f64)],
    interval_s: f64,
    modes: &[mheta_profile::Mode],
) -> (Mixture, Vec<usize>) {
    if series.is_empty() || modes.is_empty() {
        return (Mixture { modes: Vec::new() }, Vec::new());
    }
    let vals: Vec<f64> = series.iter().map(|s| s.1).collect();
    let cls = classify(&vals, modes);
    let k = modes.len();
    let w: Vec<f64> = (0..series.len())
        .map(|i| match series.get(i + 1) {
            Some(n) => (n.0 - series[i].0).max(0.0),
            None => interval_s,
        })
        .collect();
    let total: f64 = w.iter().sum::<f64>().max(1e-300);
    // Runs: (mode, time, censored).
    let mut runs: Vec<(usize, f64, bool)> = Vec::new();
    let mut i = 0;
    while i < series.len() {
        let mut j = i;
        let mut t = 0.0;
        while j < series.len() && cls[j] == cls[i] {
            t += w[j];
            j += 1;
        }
        runs.push((cls[i], t, i == 0 || j == series.len()));
        i = j;
    }
    // Whether sample i is inside a visit (no neighbour of another mode).
    let inside = |i: usize| {
        (i == 0 || cls[i - 1] == cls[i]) && (i + 1 == series.len() || cls[i + 1] == cls[i])
    };
    let mut out = Vec::with_capacity(k);
    for m in 0..k {
        let mine: Vec<usize> = (0..series.len()).filter(|&i| cls[i] == m).collect();
        if mine.is_empty() {
            continue;
        }
        let inner: Vec<f64> = mine
            .iter()
            .filter(|&&i| inside(i))
            .map(|&i| vals[i])
            .collect();
        let xs = if inner.len() >= MIN_INSIDE.max(mine.len() / 4) {
            inner
        } else {
            mine.iter().map(|&i| vals[i]).collect()
        };
        let n = xs.len() as f64;
        let mean = xs.iter().sum::<f64>() / n;
        let sd = (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n).sqrt();
        let time: f64 = (0..series.len())
            .filter(|&i| cls[i] == m)
            .map(|i| w[i])
            .sum();
        let full: Vec<f64> = runs
            .iter()
            .filter(|r| r.0 == m && !r.2)
            .map(|r| r.1)
            .collect();
        let all: Vec<f64> = runs.iter().filter(|r| r.0 == m).map(|r| r.1).collect();
        let pick = if full.is_empty() { &all } else { &full };
        let dwell = pick.iter().sum::<f64>() / pick.len().max(1) as f64;
        out.push(ModeStat {
            value: Stoch::new(mean, sd),
            share: time / total,
            mean_dwell_s: dwell,
        });
    }
    // Renumber the classes to the modes kept (a mode of the histogram
    // always holds samples, so this is the identity in practice).
    (Mixture { modes: out }, cls)
}

/// The majority mode of the last [`CURRENT_WINDOW`] classes (ties: the
/// latest sample's mode wins).
pub fn current_mode(classes: &[usize]) -> Option<usize> {
    let tail = &classes[classes.len().saturating_sub(CURRENT_WINDOW)..];
    let last = *tail.last()?;
    let count = |m: usize| tail.iter().filter(|&&c| c == m).count();
    let best = tail.iter().copied().max_by_key(|&m| count(m))?;
    Some(if count(best) > count(last) {
        best
    } else {
        last
    })
}

/// Summarise a time series `(t, value)` sampled every `interval_s`: the
/// histogram with its modes, the mixture ([`mixture_from_series`]) and
/// the current mode. Values must be positive and fit the histogram as
/// seconds (1e-9 .. 3600): CPU shares do; give bandwidths in GB/s.
pub fn summarize(series: &[(f64, f64)], interval_s: f64) -> Summary {
    let vals: Vec<f64> = series.iter().map(|s| s.1).collect();
    let dist = Hist::from_samples(&vals);
    let (mixture, cls) = mixture_from_series(series, interval_s, &dist.modes);
    Summary {
        current_mode: current_mode(&cls),
        dist,
        mixture,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A series alternating between levels: (value, dwell) visits
    /// repeated, sampled every dt, with deterministic jitter of ±2%.
    pub(crate) fn levels(visits: &[(f64, f64)], repeat: usize, dt: f64) -> Vec<(f64, f64)> {
        let mut out = Vec::new();
        let mut t = 0.0;
        let mut k = 0u64;
        for _ in 0..repeat {
            for &(v, d) in visits {
                let n = (d / dt).round() as usize;
                for _ in 0..n {
                    k = k
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    let u = (k >> 11) as f64 / (1u64 << 53) as f64;
                    out.push((t, v * (1.0 + 0.04 * (u - 0.5))));
                    t += dt;
                }
            }
        }
        out
    }

    #[test]
    fn two_levels_give_two_modes_with_shares_and_dwells() {
        // 1.0 for 2 s, 0.5 for 1 s, 20 times, sampled every 0.1 s.
        let s = levels(&[(1.0, 2.0), (0.5, 1.0)], 20, 0.1);
        let sm = summarize(&s, 0.1);
        assert_eq!(sm.dist.modes.len(), 2, "{:?}", sm.dist.modes);
        let m = &sm.mixture.modes;
        assert_eq!(m.len(), 2);
        // By increasing value: the loaded mode first.
        assert!((m[0].value.mean - 0.5).abs() < 0.01 && (m[1].value.mean - 1.0).abs() < 0.02);
        assert!((m[0].share - 1.0 / 3.0).abs() < 0.05, "{m:?}");
        assert!((m[1].share - 2.0 / 3.0).abs() < 0.05, "{m:?}");
        assert!((m[0].mean_dwell_s - 1.0).abs() < 0.2, "{m:?}");
        assert!((m[1].mean_dwell_s - 2.0).abs() < 0.4, "{m:?}");
        assert!(m[0].value.sd > 0.0 && m[0].value.sd < 0.02);
        // The series ends in the loaded level.
        assert_eq!(sm.current_mode, Some(0));
    }

    #[test]
    fn samples_straddling_a_switch_do_not_move_a_modes_value() {
        // 1.0 and 0.5 for 0.2 s each, sampled every 0.05 s; the first
        // sample of every visit straddles the switch and reads 0.8 on the
        // way up and 0.7 on the way down.
        let mut s = levels(&[(1.0, 0.2), (0.5, 0.2)], 60, 0.05);
        for (i, x) in s.iter_mut().enumerate() {
            match i % 8 {
                0 if i > 0 => x.1 = 0.8,
                4 => x.1 = 0.7,
                _ => {}
            }
        }
        let m = summarize(&s, 0.05).mixture.modes;
        assert_eq!(m.len(), 2, "{m:?}");
        assert!((m[0].value.mean - 0.5).abs() < 0.01, "{m:?}");
        assert!((m[1].value.mean - 1.0).abs() < 0.01, "{m:?}");
        // With the straddling samples the upper mode would read 0.9.
        let all: Vec<f64> = s.iter().map(|x| x.1).filter(|&v| v > 0.6).collect();
        assert!(all.iter().sum::<f64>() / (all.len() as f64) < 0.97);
    }

    #[test]
    fn uneven_sampling_weights_time() {
        // 1.0 sampled densely (every 0.05 s) for 1 s, 0.5 sparsely
        // (every 0.2 s) for 1 s: half the time each, though 4:1 in samples.
        let mut s = Vec::new();
        for r in 0..15 {
            let t0 = r as f64 * 2.0;
            for i in 0..20 {
                s.push((t0 + i as f64 * 0.05, 1.0 + 0.001 * (i % 3) as f64));
            }
            for i in 0..5 {
                s.push((t0 + 1.0 + i as f64 * 0.2, 0.5 + 0.001 * (i % 3) as f64));
            }
        }
        let sm = summarize(&s, 0.2);
        let m = &sm.mixture.modes;
        assert_eq!(m.len(), 2);
        assert!(
            (m[0].share - 0.5).abs() < 0.05 && (m[1].share - 0.5).abs() < 0.05,
            "{m:?}"
        );
        assert!((m[0].mean_dwell_s - 1.0).abs() < 0.2 && (m[1].mean_dwell_s - 1.0).abs() < 0.2);
    }

    #[test]
    fn flat_series_is_one_mode() {
        let s = levels(&[(0.97, 1.0)], 30, 0.1);
        let sm = summarize(&s, 0.1);
        assert_eq!(sm.mixture.modes.len(), 1);
        let m = sm.mixture.modes[0];
        assert!((m.share - 1.0).abs() < 1e-9);
        assert!((m.value.mean - 0.97).abs() < 0.01);
        // One visit cut by both ends: its length, a lower bound.
        assert!((m.mean_dwell_s - 30.0).abs() < 0.2, "{m:?}");
        assert_eq!(sm.current_mode, Some(0));
        // Few samples: one mode too.
        let few = summarize(&s[..5], 0.1);
        assert_eq!(few.mixture.modes.len(), 1);
        let none = summarize(&[], 0.1);
        assert!(none.mixture.modes.is_empty() && none.current_mode.is_none());
    }

    #[test]
    fn three_levels_and_current_mode() {
        let s = levels(&[(1.0, 1.5), (0.5, 1.0), (0.33, 0.5)], 12, 0.05);
        let sm = summarize(&s, 0.05);
        let m = &sm.mixture.modes;
        assert_eq!(m.len(), 3, "{:?}", sm.dist.modes);
        for (mode, (share, dwell)) in m
            .iter()
            .zip([(0.5 / 3.0, 0.5), (1.0 / 3.0, 1.0), (0.5, 1.5)])
        {
            assert!((mode.share - share).abs() < 0.05, "{m:?}");
            assert!((mode.mean_dwell_s - dwell).abs() < 0.2 * dwell, "{m:?}");
        }
        assert_eq!(sm.current_mode, Some(0));
        assert_eq!(current_mode(&[1, 1, 1, 0, 0]), Some(1));
        assert_eq!(current_mode(&[2, 1, 1, 0, 0]), Some(0));
        assert_eq!(current_mode(&[]), None);
    }
}
