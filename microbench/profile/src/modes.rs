//! Finding the modes of a figure's samples ([`modes`]): a smoothed
//! histogram of their logarithms, its peaks and the valleys between them.

use crate::samples::Mode;

/// The mean of the sorted values between their quartiles (inclusive).
fn interquartile_mean(sorted: &[f64]) -> f64 {
    let (lo, hi) = (quantile(sorted, 0.25), quantile(sorted, 0.75));
    let mid: Vec<f64> = sorted
        .iter()
        .copied()
        .filter(|&x| x >= lo && x <= hi)
        .collect();
    mid.iter().sum::<f64>() / mid.len().max(1) as f64
}

/// Quantile `q` of sorted values (nearest rank).
pub(crate) fn quantile(sorted: &[f64], q: f64) -> f64 {
    sorted[(((sorted.len() - 1) as f64) * q).round() as usize]
}

/// The modes of `samples` (seconds, any order), by increasing value, for
/// a clock whose readings are only good to `floor_s` (the timer's own
/// cost; 0 for exact data).
///
/// Method: a histogram of ln(sample) in 6% bins (wider where the smallest
/// samples are within a few `floor_s` of each other, so that a clock's
/// ticks do not look like modes), smoothed with a triangular kernel
/// reaching about ±12% (two bins each side, or one where the bins are
/// wider than 8%). Its local maxima are candidate modes. Two neighbouring
/// candidates are separate modes when they are at least 20% and
/// 3 × `floor_s` apart and the density between them falls below 60% of
/// the lower peak; otherwise the lower peak is merged into the higher. The samples
/// are split at the lowest bin between modes. A mode with under 5% of the
/// samples (a tail of preempted samples, say) is merged into its nearer
/// neighbour. Fewer than 20 samples make one mode.
pub fn modes(samples: &[f64], floor_s: f64) -> Vec<Mode> {
    let mut xs: Vec<f64> = samples
        .iter()
        .copied()
        .filter(|x| x.is_finite() && *x > 0.0)
        .collect();
    if xs.is_empty() {
        return Vec::new();
    }
    xs.sort_by(f64::total_cmp);
    if xs.len() < 20 {
        return vec![mode_of(&xs, xs.len())];
    }
    let lo = xs[0].ln();
    let span = xs[xs.len() - 1].ln() - lo;
    let p5 = quantile(&xs, 0.05);
    let w = (1.06f64.ln())
        .max(span / 4000.0)
        .max((1.0 + floor_s / p5).ln());
    let h = LogBins {
        lo,
        w,
        nb: (span / w) as usize + 1,
    };
    let mut c = vec![0.0f64; h.nb];
    for &x in &xs {
        c[h.bin(x)] += 1.0;
    }
    let d = smoothed(&c, w);
    // Local maxima (the first bin of a plateau).
    let nb = h.nb;
    let mut peaks: Vec<usize> = (0..nb)
        .filter(|&i| d[i] > 0.0 && (i == 0 || d[i] > d[i - 1]) && (i + 1 == nb || d[i] >= d[i + 1]))
        .collect();
    merge_peaks(&mut peaks, &d, &h, floor_s);
    let cuts: Vec<usize> = peaks.windows(2).map(|p| valley(&d, p[0], p[1])).collect();
    split(&xs, cuts, &h)
}

/// A mode of the `total` samples: the samples `seg`.
fn mode_of(seg: &[f64], total: usize) -> Mode {
    Mode {
        value: interquartile_mean(seg),
        share: seg.len() as f64 / total as f64,
        count: seg.len() as u64,
        p25: quantile(seg, 0.25),
        p75: quantile(seg, 0.75),
    }
}

/// [`modes`]' histogram: `nb` bins of ln(x) of width `w` from `lo`.
struct LogBins {
    lo: f64,
    w: f64,
    nb: usize,
}

impl LogBins {
    fn bin(&self, x: f64) -> usize {
        (((x.ln() - self.lo) / self.w) as usize).min(self.nb - 1)
    }

    /// The value at the start of bin `i`.
    fn at(&self, i: usize) -> f64 {
        (self.lo + i as f64 * self.w).exp()
    }
}

/// The counts `c` smoothed with a triangular kernel reaching about ±12%
/// whatever the bin width `w`: two 6% bins each side, one where the clock
/// widened the bins. A kernel of a fixed number of wider bins smeared two
/// modes of o_r into one (docs/design/microbench.md).
fn smoothed(c: &[f64], w: f64) -> Vec<f64> {
    let nb = c.len();
    let r = ((1.12f64.ln() / w).round() as i64).max(1);
    (0..nb)
        .map(|i| {
            (-r..=r)
                .map(|k| {
                    let j = i as i64 + k;
                    if j < 0 || j >= nb as i64 {
                        0.0
                    } else {
                        (r + 1 - k.abs()) as f64 * c[j as usize]
                    }
                })
                .sum()
        })
        .collect()
}

/// The lowest bin of `d` in `[a, b]`.
fn valley(d: &[f64], a: usize, b: usize) -> usize {
    (a..=b).min_by(|&x, &y| d[x].total_cmp(&d[y])).unwrap_or(a)
}

/// Merge peaks that are too close (under 20% or 3 × `floor_s` apart) or
/// not separated by a valley below 60% of the lower one: the lower peak
/// goes.
fn merge_peaks(peaks: &mut Vec<usize>, d: &[f64], h: &LogBins, floor_s: f64) {
    loop {
        let mut merged = false;
        for k in 0..peaks.len().saturating_sub(1) {
            let (a, b) = (peaks[k], peaks[k + 1]);
            let v = valley(d, a, b);
            let (va, vb) = (h.at(a), h.at(b));
            let apart = vb / va >= 1.2 && vb - va >= 3.0 * floor_s;
            if !(apart && d[v] <= 0.6 * d[a].min(d[b])) {
                peaks.remove(if d[a] >= d[b] { k + 1 } else { k });
                merged = true;
                break;
            }
        }
        if !merged {
            return;
        }
    }
}

/// Split the sorted samples at the valleys `cuts`; a mode under 5% of
/// the samples merges into its nearer (by median) neighbour.
fn split(xs: &[f64], mut cuts: Vec<usize>, h: &LogBins) -> Vec<Mode> {
    loop {
        let mut bounds = vec![0usize];
        for &v in &cuts {
            bounds.push(xs.partition_point(|&x| h.bin(x) < v));
        }
        bounds.push(xs.len());
        let small = (0..bounds.len() - 1)
            .find(|&k| ((bounds[k + 1] - bounds[k]) as f64) < 0.05 * xs.len() as f64);
        match small {
            Some(k) if !cuts.is_empty() => {
                // Drop the cut on the side of the nearer (by median) neighbour.
                let m = quantile(&xs[bounds[k]..bounds[k + 1].max(bounds[k] + 1)], 0.5);
                let left = (k > 0).then(|| quantile(&xs[bounds[k - 1]..bounds[k]], 0.5));
                let right = (k + 2 < bounds.len())
                    .then(|| quantile(&xs[bounds[k + 1]..bounds[k + 2]], 0.5));
                let use_left = match (left, right) {
                    (Some(l), Some(r)) => (m / l).ln().abs() <= (r / m).ln().abs(),
                    (Some(_), None) => true,
                    _ => false,
                };
                cuts.remove(if use_left { k - 1 } else { k });
            }
            _ => {
                return bounds
                    .windows(2)
                    .filter(|b| b[1] > b[0])
                    .map(|b| mode_of(&xs[b[0]..b[1]], xs.len()))
                    .collect();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::samples::{ModeChoice, SampleStats};

    /// Deterministic noise in [-1, 1) (an LCG; no dependency).
    fn noise(seed: &mut u64) -> f64 {
        *seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((*seed >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
    }

    #[test]
    fn two_latency_modes_are_found_with_their_shares() {
        // 60% of round trips near 0.30 us, 40% near 0.62 us (two modes as a
        // VM gave them, docs/design/microbench.md), each with ±5% noise,
        // and 1% preempted outliers at 20 us.
        let mut seed = 7;
        let mut v = Vec::new();
        for i in 0..3000 {
            let base = if i % 5 < 3 { 0.30e-6 } else { 0.62e-6 };
            v.push(base * (1.0 + 0.05 * noise(&mut seed)));
        }
        v.extend((0..30).map(|_| 20e-6));
        let m = modes(&v, 0.0);
        assert_eq!(m.len(), 2, "{m:?}");
        assert!((m[0].value - 0.30e-6).abs() < 0.02e-6, "{m:?}");
        assert!((m[1].value - 0.62e-6).abs() < 0.03e-6, "{m:?}");
        assert!((m[0].share - 1800.0 / 3030.0).abs() < 0.02, "{m:?}");
        // The outliers joined the slow mode rather than forming their own.
        assert_eq!(m[0].count + m[1].count, 3030);
        let d = SampleStats {
            modes: m,
            ..SampleStats::default()
        };
        assert_eq!(d.mode(ModeChoice::Dominant), d.modes.first());
        assert!((d.value(ModeChoice::Slow) - 0.62e-6).abs() < 0.03e-6);
        assert!(d.modes_text().unwrap().contains('|'));
    }

    #[test]
    fn a_tail_or_clock_ticks_make_one_mode() {
        // A unimodal figure with an exponential-ish tail.
        let mut seed = 3;
        let v: Vec<f64> = (0..2000)
            .map(|_| 1e-6 * (1.0 + 0.3 * noise(&mut seed).abs().powi(3)))
            .collect();
        assert_eq!(modes(&v, 0.0).len(), 1);
        // An 8-byte send timed with a 10 ns clock whose reading costs 25 ns:
        // 50, 60, 70, 80, 90 ns are ticks, not modes.
        let ticks: Vec<f64> = [
            (50, 20),
            (60, 320),
            (70, 570),
            (80, 490),
            (90, 220),
            (100, 60),
        ]
        .iter()
        .flat_map(|&(ns, k)| std::iter::repeat_n(ns as f64 * 1e-9, k))
        .collect();
        assert_eq!(modes(&ticks, 25e-9).len(), 1, "{:?}", modes(&ticks, 25e-9));
        // Too few samples: one mode.
        assert_eq!(modes(&[1e-6, 2e-6, 4e-6], 0.0).len(), 1);
        assert!(modes(&[], 0.0).is_empty());
    }

    #[test]
    fn o_r_modes_60_percent_apart_on_10_percent_bins_are_two() {
        // The receive overhead of a 2-rank bench run on a VM (10 ns clock
        // reading in 20 ns): ~735 samples at 180-221 ns, ~720 at 300-351,
        // a few between. The bins are 10% wide there; a kernel of five
        // such bins filled the valley and gave one mode at 255 ns.
        let counts = [
            (180, 27),
            (190, 315),
            (200, 254),
            (210, 88),
            (220, 48),
            (230, 6),
            (240, 5),
            (250, 5),
            (260, 7),
            (280, 5),
            (290, 2),
            (300, 81),
            (310, 286),
            (320, 250),
            (330, 65),
            (340, 22),
            (350, 13),
            (400, 2),
            (800, 1),
            (10000, 1),
        ];
        let v: Vec<f64> = counts
            .iter()
            .flat_map(|&(ns, k)| std::iter::repeat_n(ns as f64 * 1e-9, k))
            .collect();
        let m = modes(&v, 20e-9);
        assert_eq!(m.len(), 2, "{m:?}");
        assert!((m[0].value - 198e-9).abs() < 8e-9, "{m:?}");
        assert!((m[1].value - 318e-9).abs() < 8e-9, "{m:?}");
    }
}
