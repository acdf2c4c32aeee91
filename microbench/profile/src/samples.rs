//! A measured figure: the statistics of its samples ([`SampleStats`]:
//! mean, spread, quantiles, histogram, the medians of its rounds), its
//! modes ([`Mode`]) and which of them the model uses ([`ModeChoice`]).
//! The mode finder itself is [`crate::modes`].

use crate::modes::{modes, quantile};
use base64::Engine as _;
use hdrhistogram::serialization::Serializer as _;
use serde::{Deserialize, Serialize};

/// A measured quantity: summary statistics of its samples (seconds), their
/// modes, their spread between rounds, and their HdrHistogram (values in
/// ns, 3 significant digits), serialised with the V2 + DEFLATE format and
/// base64.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct SampleStats {
    pub count: u64,
    pub mean: f64,
    pub stdev: f64,
    pub p50: f64,
    pub p99: f64,
    /// Empty when the figure is derived rather than sampled.
    #[serde(default)]
    pub hist: String,
    /// The modes of the samples ([`modes`]), by increasing value; one
    /// entry for a unimodal figure, none for a derived one.
    #[serde(default)]
    pub modes: Vec<Mode>,
    /// The median of each round of samples, in the order measured (rounds
    /// are interleaved with the other figures of the pair).
    #[serde(default)]
    pub rounds: Vec<f64>,
    /// Spread between rounds: 100 × (p75 − p25) / p50 of the round
    /// medians (of the samples when fewer than 3 rounds), in percent.
    #[serde(default)]
    pub spread_pct: f64,
}

/// One mode of a figure's samples.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct Mode {
    /// The mode's figure (seconds): the interquartile mean of its samples
    /// (the mean of those between its quartiles). As robust as the median
    /// to a tail, but it resolves below the clock's tick: a median of
    /// samples taken with a 10 ns clock jumps by 10 ns.
    pub value: f64,
    /// Fraction of all samples in the mode.
    pub share: f64,
    pub count: u64,
    /// Quartiles of the samples in the mode.
    pub p25: f64,
    pub p75: f64,
}

/// Share of the samples a mode needs to count in [`ModeChoice::Mean`].
pub const MEAN_MIN_SHARE: f64 = 0.2;

/// What [`ModeChoice::Mean`] stores, in the words the tools print.
pub const MEAN_TEXT: &str = "the share-weighted mean of the modes with >= 20% of the samples";

/// Which mode of a multi-modal figure the model uses
/// ([`crate::ClusterProfile::with_mode`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ModeChoice {
    /// The modes holding at least [`MEAN_MIN_SHARE`] of the samples, their
    /// values weighted by their shares: the expected cost of one call
    /// while the machine moves between those states (the default). Where
    /// two modes hold about half the samples each, the dominant one flips
    /// between sessions and this mean does not (figures in
    /// docs/design/microbench.md). A tail of preempted samples that the 5% rule keeps as a mode of
    /// its own is left out; a unimodal figure gives its one mode.
    #[default]
    Mean,
    /// The mode with the largest share of samples: the state the machine
    /// was in most of the session.
    Dominant,
    /// The mode of the smallest value.
    Fast,
    /// The mode of the largest value.
    Slow,
}

impl std::str::FromStr for ModeChoice {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "mean" => Ok(ModeChoice::Mean),
            "dominant" => Ok(ModeChoice::Dominant),
            "fast" => Ok(ModeChoice::Fast),
            "slow" => Ok(ModeChoice::Slow),
            _ => Err(format!("mode {s:?}: expected mean, dominant, fast or slow")),
        }
    }
}

impl std::fmt::Display for ModeChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ModeChoice::Mean => "mean",
            ModeChoice::Dominant => "dominant",
            ModeChoice::Fast => "fast",
            ModeChoice::Slow => "slow",
        })
    }
}

impl SampleStats {
    /// The distribution of `samples` (seconds).
    pub fn from_samples(samples: &[f64]) -> SampleStats {
        if samples.is_empty() {
            return SampleStats::default();
        }
        let n = samples.len() as f64;
        let mean = samples.iter().sum::<f64>() / n;
        let var = samples.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n;
        let mut h = hdrhistogram::Histogram::<u64>::new_with_bounds(1, 3_600_000_000_000, 3)
            .expect("histogram bounds");
        for &s in samples {
            let _ = h.record(((s * 1e9).round() as u64).clamp(1, 3_600_000_000_000));
        }
        let mut sorted = samples.to_vec();
        sorted.sort_by(f64::total_cmp);
        let q = |p: f64| quantile(&sorted, p);
        let mut buf = Vec::new();
        let hist =
            match hdrhistogram::serialization::V2DeflateSerializer::new().serialize(&h, &mut buf) {
                Ok(_) => base64::engine::general_purpose::STANDARD.encode(&buf),
                Err(_) => String::new(),
            };
        SampleStats {
            count: samples.len() as u64,
            mean,
            stdev: var.sqrt(),
            p50: q(0.5),
            p99: q(0.99),
            hist,
            modes: modes(samples, 0.0),
            rounds: Vec::new(),
            spread_pct: if q(0.5) > 0.0 {
                100.0 * (q(0.75) - q(0.25)) / q(0.5)
            } else {
                0.0
            },
        }
    }

    /// The distribution of samples taken in rounds: all samples pooled,
    /// each round's median kept, and the spread taken between rounds;
    /// modes as [`modes`] finds them for a timer good to `floor_s`.
    pub fn from_rounds(rounds: &[Vec<f64>], floor_s: f64) -> SampleStats {
        let all: Vec<f64> = rounds.iter().flatten().copied().collect();
        let mut d = SampleStats::from_samples(&all);
        d.modes = modes(&all, floor_s);
        d.rounds = rounds
            .iter()
            .filter(|r| !r.is_empty())
            .map(|r| {
                let mut r = r.clone();
                r.sort_by(f64::total_cmp);
                quantile(&r, 0.5)
            })
            .collect();
        if d.rounds.len() >= 3 {
            let mut m = d.rounds.clone();
            m.sort_by(f64::total_cmp);
            let mid = quantile(&m, 0.5);
            d.spread_pct = if mid > 0.0 {
                100.0 * (quantile(&m, 0.75) - quantile(&m, 0.25)) / mid
            } else {
                0.0
            };
        }
        d
    }

    /// The figure the model uses: the chosen mode's value (the
    /// interquartile mean of its samples; for [`ModeChoice::Mean`] the
    /// share-weighted mean of the modes that count), or the median of all
    /// samples when no modes were recorded.
    pub fn value(&self, choice: ModeChoice) -> f64 {
        if choice == ModeChoice::Mean {
            // The largest mode always counts, so the sum is never empty.
            let big = self.mode(ModeChoice::Dominant);
            let counted = self
                .modes
                .iter()
                .filter(|m| m.share >= MEAN_MIN_SHARE || Some(*m) == big);
            let (w, s) = counted.fold((0.0, 0.0), |(w, s), m| (w + m.share, s + m.share * m.value));
            return if w > 0.0 { s / w } else { self.p50 };
        }
        self.mode(choice).map_or(self.p50, |m| m.value)
    }

    /// The chosen mode, if modes were recorded (for [`ModeChoice::Mean`],
    /// which blends modes, the dominant one).
    pub fn mode(&self, choice: ModeChoice) -> Option<&Mode> {
        match choice {
            ModeChoice::Mean | ModeChoice::Dominant => self.modes.iter().max_by(|a, b| {
                a.share
                    .total_cmp(&b.share)
                    .then(b.value.total_cmp(&a.value))
            }),
            ModeChoice::Fast => self.modes.first(),
            ModeChoice::Slow => self.modes.last(),
        }
    }

    /// "0.33 µs (72%) | 0.66 µs (28%)" for a multi-modal figure, `None`
    /// for a unimodal one.
    pub fn modes_text(&self) -> Option<String> {
        (self.modes.len() > 1).then(|| {
            self.modes
                .iter()
                .map(|m| format!("{:.3} us ({:.0}%)", m.value * 1e6, m.share * 100.0))
                .collect::<Vec<_>>()
                .join(" | ")
        })
    }

    /// A single derived value.
    pub fn point(v: f64) -> SampleStats {
        SampleStats {
            count: 1,
            mean: v,
            stdev: 0.0,
            p50: v,
            p99: v,
            ..SampleStats::default()
        }
    }

    /// Decode the histogram (values in ns).
    pub fn histogram(&self) -> Result<hdrhistogram::Histogram<u64>, String> {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(&self.hist)
            .map_err(|e| format!("histogram is not base64: {e}"))?;
        hdrhistogram::serialization::Deserializer::new()
            .deserialize(&mut bytes.as_slice())
            .map_err(|e| format!("histogram does not decode: {e:?}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dist_keeps_quantiles_and_histogram() {
        let samples: Vec<f64> = (1..=1000).map(|i| i as f64 * 1e-6).collect();
        let d = SampleStats::from_samples(&samples);
        assert_eq!(d.count, 1000);
        assert!((d.mean - 500.5e-6).abs() < 1e-12);
        assert!((d.p50 - 500e-6).abs() < 2e-6, "{}", d.p50);
        assert!((d.p99 - 990e-6).abs() < 2e-6, "{}", d.p99);
        let h = d.histogram().unwrap();
        assert_eq!(h.len(), 1000);
        let p99 = h.value_at_quantile(0.99) as f64 * 1e-9;
        assert!((p99 - 990e-6).abs() < 2e-6, "{p99}");
    }

    #[test]
    fn the_mean_blends_the_big_modes_and_leaves_out_a_tail() {
        let m = |ns: f64, share: f64| Mode {
            value: ns * 1e-9,
            share,
            ..Mode::default()
        };
        // o_r as a VM gave it (docs/design/microbench.md): two modes near
        // half each, and a 5% tail of preempted receives.
        let d = SampleStats {
            modes: vec![m(200.0, 0.46), m(320.0, 0.49), m(3000.0, 0.05)],
            p50: 300e-9,
            ..SampleStats::default()
        };
        let want = (0.46 * 200.0 + 0.49 * 320.0) / 0.95 * 1e-9;
        assert!((d.value(ModeChoice::Mean) - want).abs() < 1e-15);
        assert_eq!(d.value(ModeChoice::Dominant), d.modes[1].value);
        assert_eq!(d.value(ModeChoice::Fast), d.modes[0].value);
        assert_eq!(d.value(ModeChoice::Slow), d.modes[2].value);
        // A unimodal figure gives its mode; no modes, the median.
        let one = SampleStats {
            modes: vec![m(250.0, 1.0)],
            ..SampleStats::default()
        };
        assert_eq!(one.value(ModeChoice::Mean), one.modes[0].value);
        let none = SampleStats {
            p50: 7e-9,
            ..SampleStats::default()
        };
        assert_eq!(none.value(ModeChoice::Mean), 7e-9);
        // Every mode small (a spread-out figure): the largest still counts.
        let flat = SampleStats {
            modes: vec![m(100.0, 0.15), m(200.0, 0.18), m(300.0, 0.17)]
                .into_iter()
                .chain((0..5).map(|k| m(400.0 + 100.0 * k as f64, 0.1)))
                .collect(),
            ..SampleStats::default()
        };
        assert!((flat.value(ModeChoice::Mean) - 200e-9).abs() < 1e-18);
        assert_eq!("mean".parse::<ModeChoice>(), Ok(ModeChoice::Mean));
        assert_eq!(ModeChoice::default(), ModeChoice::Mean);
    }

    #[test]
    fn the_mean_text_names_the_share() {
        let pct = format!(">= {:.0}%", MEAN_MIN_SHARE * 100.0);
        assert!(MEAN_TEXT.contains(&pct), "{MEAN_TEXT}");
    }

    #[test]
    fn rounds_give_the_spread_between_rounds() {
        let r = vec![vec![1.0, 1.0, 1.1], vec![2.0, 2.0], vec![1.5], vec![1.2]];
        let d = SampleStats::from_rounds(&r, 0.0);
        assert_eq!(d.rounds, vec![1.0, 2.0, 1.5, 1.2]);
        assert_eq!(d.count, 7);
        // Round medians 1.0 1.2 1.5 2.0: nearest-rank p25 = 1.2, p75 = 1.5,
        // p50 = 1.5 (index round(1.5) = 2).
        assert!(
            (d.spread_pct - 100.0 * 0.3 / 1.5).abs() < 1e-9,
            "{}",
            d.spread_pct
        );
    }
}
