//! Stochastic values (Schopf and Berman): a quantity carried as
//! mean ± sd of a normal distribution, or as a mixture of such modes, with
//! the paper's arithmetic (its table 2) and a chosen Max.
//!
//! The paper writes `X ± a` with `a` two standard deviations; [`Stoch`]
//! keeps the standard deviation itself and prints `±2σ`, the same range.
//!
//! Where the paper leaves a choice, this module makes one:
//! - **Max** ([`Stoch::max`]): the paper offers the largest mean, or the
//!   value with the largest top of its range. Both are wrong in a known
//!   direction: the mean of the maximum of two normals is at least the
//!   larger mean (largest-mean under-predicts when the two overlap), and
//!   the largest top over-predicts the spread. We use Clark's moment match
//!   (C. E. Clark, "The greatest of a finite set of random variables",
//!   Operations Research 9(2), 1961): the exact mean and variance of the
//!   maximum of two normals with correlation ρ, fitted by a normal, folded
//!   over a group. It reduces to the larger value when the two do not
//!   overlap, and the unit tests check it against sampling.
//! - **Division** ([`Stoch::recip`]): the paper divides by `Y ± b` as a
//!   product with `Y⁻¹ ± b⁻¹`, which is not a distribution's spread (it
//!   grows as `b` shrinks). We use the first-order (delta-method) spread
//!   of `1/Y`: `1/Y ± b/Y²`.
//! - **Mixtures** ([`Mixture`]): the paper averages the modes by the share
//!   of time spent in each, `P1(M1 ± SD1) + P2(M2 ± SD2) + ...`
//!   ([`Mixture::paper`]). That spread does not depend on how long the run
//!   is nor how often the load switches. [`Mixture::over_window`] adds what
//!   does: the variance of a time average over a window of T seconds of a
//!   process that switches modes with mean dwell d, which falls as the
//!   window holds more switches.

use serde::{Deserialize, Serialize};

/// A normal stochastic value: mean ± sd (one standard deviation).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Stoch {
    pub mean: f64,
    pub sd: f64,
}

impl Stoch {
    pub const ZERO: Stoch = Stoch { mean: 0.0, sd: 0.0 };

    pub fn new(mean: f64, sd: f64) -> Stoch {
        Stoch { mean, sd: sd.abs() }
    }

    /// A point value: probability 1 at `x` (Schopf and Berman footnote 1).
    pub fn point(x: f64) -> Stoch {
        Stoch { mean: x, sd: 0.0 }
    }

    /// Schopf and Berman table 2, point and stochastic: `(X ± a) + P = (X + P) ± a`.
    pub fn plus(self, p: f64) -> Stoch {
        Stoch::new(self.mean + p, self.sd)
    }

    /// Schopf and Berman table 2, point and stochastic: `P(X ± a) = PX ± Pa`.
    pub fn scale(self, p: f64) -> Stoch {
        Stoch::new(self.mean * p, self.sd * p.abs())
    }

    /// Schopf and Berman table 2, related sum: `Σ X_i ± Σ a_i` (conservative: the
    /// spreads add, as for fully correlated values).
    pub fn sum_related<I: IntoIterator<Item = Stoch>>(xs: I) -> Stoch {
        xs.into_iter().fold(Stoch::ZERO, |acc, x| {
            Stoch::new(acc.mean + x.mean, acc.sd + x.sd)
        })
    }

    /// Schopf and Berman table 2, unrelated sum: `Σ X_i ± sqrt(Σ a_i²)`.
    pub fn sum_unrelated<I: IntoIterator<Item = Stoch>>(xs: I) -> Stoch {
        let (m, v) = xs
            .into_iter()
            .fold((0.0, 0.0), |(m, v), x| (m + x.mean, v + x.sd * x.sd));
        Stoch::new(m, v.sqrt())
    }

    /// Schopf and Berman table 2, related product:
    /// `X_i X_j ± (a_i X_j + a_j X_i + a_i a_j)`.
    pub fn mul_related(self, o: Stoch) -> Stoch {
        let a = self.sd * o.mean.abs() + o.sd * self.mean.abs() + self.sd * o.sd;
        Stoch::new(self.mean * o.mean, a)
    }

    /// Schopf and Berman table 2, unrelated product:
    /// `X_i X_j ± X_i X_j sqrt((a_i/X_i)² + (a_j/X_j)²)`; zero when either
    /// mean is zero, as the paper defines it.
    pub fn mul_unrelated(self, o: Stoch) -> Stoch {
        if self.mean == 0.0 || o.mean == 0.0 {
            return Stoch::ZERO;
        }
        let m = self.mean * o.mean;
        let r = ((self.sd / self.mean).powi(2) + (o.sd / o.mean).powi(2)).sqrt();
        Stoch::new(m, m.abs() * r)
    }

    /// `1/Y ± sd/Y²` (delta method; see the module doc for why not the
    /// paper's `Y⁻¹ ± b⁻¹`).
    pub fn recip(self) -> Stoch {
        Stoch::new(1.0 / self.mean, self.sd / (self.mean * self.mean))
    }

    /// Clark's maximum of two normals with correlation `rho` (module doc).
    pub fn max_corr(self, o: Stoch, rho: f64) -> Stoch {
        let a2 = self.sd * self.sd + o.sd * o.sd - 2.0 * rho * self.sd * o.sd;
        if a2 <= 1e-300 {
            return if self.mean >= o.mean { self } else { o };
        }
        let a = a2.sqrt();
        let alpha = (self.mean - o.mean) / a;
        let (cdf, pdf) = (norm_cdf(alpha), norm_pdf(alpha));
        let (cdf_n, pdf_n) = (1.0 - cdf, pdf);
        let m1 = self.mean * cdf + o.mean * cdf_n + a * pdf;
        let m2 = (self.mean * self.mean + self.sd * self.sd) * cdf
            + (o.mean * o.mean + o.sd * o.sd) * cdf_n
            + (self.mean + o.mean) * a * pdf_n;
        Stoch::new(m1, (m2 - m1 * m1).max(0.0).sqrt())
    }

    /// Max of unrelated values (ρ = 0), Clark's rule.
    pub fn max(self, o: Stoch) -> Stoch {
        self.max_corr(o, 0.0)
    }

    /// Max over a group of unrelated values, folded pairwise.
    pub fn max_of<I: IntoIterator<Item = Stoch>>(xs: I) -> Option<Stoch> {
        xs.into_iter().reduce(Stoch::max)
    }

    /// The `q` quantile (0 < q < 1) of the normal.
    pub fn quantile(self, q: f64) -> f64 {
        self.mean + self.sd * norm_quantile(q)
    }

    /// The ±2σ range (about 95% of a normal's values).
    pub fn range2(self) -> (f64, f64) {
        (self.mean - 2.0 * self.sd, self.mean + 2.0 * self.sd)
    }

    /// Distance from `v` to the ±2σ range, 0 inside (Schopf and Berman footnote 6).
    pub fn outside(self, v: f64) -> f64 {
        let (lo, hi) = self.range2();
        (lo - v).max(v - hi).max(0.0)
    }
}

impl std::fmt::Display for Stoch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let p = f.precision().unwrap_or(3);
        write!(f, "{:.p$} ± {:.p$}", self.mean, 2.0 * self.sd)
    }
}

/// One mode of a multi-modal quantity: its value, the share of time spent
/// in it, and how long a visit lasts.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModeStat {
    pub value: Stoch,
    /// Fraction of the time in this mode (the paper's P_i).
    pub share: f64,
    /// Mean length of one visit, seconds (0: unknown).
    #[serde(default)]
    pub mean_dwell_s: f64,
}

/// A multi-modal stochastic value (Schopf and Berman section 2.1.2).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Mixture {
    pub modes: Vec<ModeStat>,
}

impl Mixture {
    pub fn single(v: Stoch) -> Mixture {
        Mixture {
            modes: vec![ModeStat {
                value: v,
                share: 1.0,
                mean_dwell_s: 0.0,
            }],
        }
    }

    fn shares(&self) -> f64 {
        self.modes.iter().map(|m| m.share).sum::<f64>().max(1e-300)
    }

    /// Schopf and Berman section 2.1.2: `P1(M1 ± SD1) + P2(M2 ± SD2) + ...`, the
    /// modes averaged by their time shares (a related sum of scaled
    /// values, as the paper writes it).
    pub fn paper(&self) -> Stoch {
        let t = self.shares();
        Stoch::sum_related(self.modes.iter().map(|m| m.value.scale(m.share / t)))
    }

    /// Mean and sd of every value taken over time: the shares' mean, and
    /// the within-mode and between-mode variance together.
    pub fn moments(&self) -> Stoch {
        let t = self.shares();
        let mean: f64 = self.modes.iter().map(|m| m.share / t * m.value.mean).sum();
        let var: f64 = self
            .modes
            .iter()
            .map(|m| m.share / t * (m.value.sd.powi(2) + (m.value.mean - mean).powi(2)))
            .sum();
        Stoch::new(mean, var.sqrt())
    }

    /// The correlation time of the mode process: for a two-mode switch
    /// with dwells d1, d2 this is d1·d2/(d1 + d2), exactly
    /// `mean visit · (1 - Σ share²)`; for k equally likely modes with one
    /// dwell d it is d·(k-1)/k, also exact. 0 when dwells are unknown.
    pub fn correlation_s(&self) -> f64 {
        let t = self.shares();
        let known: Vec<&ModeStat> = self.modes.iter().filter(|m| m.mean_dwell_s > 0.0).collect();
        if known.is_empty() {
            return 0.0;
        }
        let visit = known.iter().map(|m| m.mean_dwell_s).sum::<f64>() / known.len() as f64;
        let simpson: f64 = self.modes.iter().map(|m| (m.share / t).powi(2)).sum();
        visit * (1.0 - simpson)
    }

    /// The time average of this quantity over a window of `window_s`
    /// seconds: the mixture's mean, and its variance scaled by
    /// g(T/τ) = 2(x - 1 + e^{-x})/x², the exact factor for a process with
    /// exponential correlation of time τ ([`Mixture::correlation_s`]).
    /// A window shorter than τ keeps nearly all the spread; one of many τ
    /// averages it away as 1/T. (Our addition to the paper, which keeps a
    /// mixture's spread whatever the window.)
    pub fn over_window(&self, window_s: f64) -> Stoch {
        let m = self.moments();
        let tau = self.correlation_s();
        if tau <= 0.0 || window_s <= 0.0 {
            return m;
        }
        Stoch::new(m.mean, m.sd * window_factor(window_s / tau).sqrt())
    }
}

/// g(x) = 2(x - 1 + e^{-x})/x²: the variance of a window's average over
/// the variance of one value, for exponential correlation (x = T/τ).
pub fn window_factor(x: f64) -> f64 {
    if x < 1e-6 {
        return 1.0;
    }
    2.0 * (x - 1.0 + (-x).exp()) / (x * x)
}

/// Standard normal density.
pub fn norm_pdf(x: f64) -> f64 {
    (-0.5 * x * x).exp() / (2.0 * std::f64::consts::PI).sqrt()
}

/// Standard normal CDF (Abramowitz-Stegun 7.1.26 on erf; |error| < 1.5e-7).
pub fn norm_cdf(x: f64) -> f64 {
    let z = x.abs() / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.327_591_1 * z);
    let poly = t
        * (0.254_829_592
            + t * (-0.284_496_736
                + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
    let erf = 1.0 - poly * (-z * z).exp();
    if x >= 0.0 {
        0.5 * (1.0 + erf)
    } else {
        0.5 * (1.0 - erf)
    }
}

/// Standard normal quantile (Acklam's rational approximation, relative
/// error < 1.2e-9). `q` is clamped to (1e-12, 1 - 1e-12).
pub fn norm_quantile(q: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969_683_028_665_376e1,
        2.209_460_984_245_205e2,
        -2.759_285_104_469_687e2,
        1.383_577_518_672_69e2,
        -3.066_479_806_614_716e1,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -5.447_609_879_822_406e1,
        1.615_858_368_580_409e2,
        -1.556_989_798_598_866e2,
        6.680_131_188_771_972e1,
        -1.328_068_155_288_572e1,
    ];
    const C: [f64; 6] = [
        -7.784_894_002_430_293e-3,
        -3.223_964_580_411_365e-1,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] = [
        7.784_695_709_041_462e-3,
        3.224_671_290_700_398e-1,
        2.445_134_137_142_996,
        3.754_408_661_907_416,
    ];
    let q = q.clamp(1e-12, 1.0 - 1e-12);
    let tail = |r: f64| {
        (((((C[0] * r + C[1]) * r + C[2]) * r + C[3]) * r + C[4]) * r + C[5])
            / ((((D[0] * r + D[1]) * r + D[2]) * r + D[3]) * r + 1.0)
    };
    if q < 0.02425 {
        tail((-2.0 * q.ln()).sqrt())
    } else if q > 1.0 - 0.02425 {
        -tail((-2.0 * (1.0 - q).ln()).sqrt())
    } else {
        let r = (q - 0.5) * (q - 0.5);
        let s = q - 0.5;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * s
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::Rng;

    fn gauss(r: &mut Rng) -> f64 {
        // Box-Muller.
        let (u, v) = (r.unit().max(1e-300), r.unit());
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }

    #[test]
    fn table2_rules() {
        let x = Stoch::new(10.0, 1.0);
        let y = Stoch::new(5.0, 0.5);
        assert_eq!(x.plus(2.0), Stoch::new(12.0, 1.0));
        assert_eq!(x.scale(3.0), Stoch::new(30.0, 3.0));
        assert_eq!(Stoch::sum_related([x, y]), Stoch::new(15.0, 1.5));
        let u = Stoch::sum_unrelated([x, y]);
        assert!((u.sd - 1.25f64.sqrt()).abs() < 1e-12);
        assert_eq!(
            x.mul_related(y),
            Stoch::new(50.0, 1.0 * 5.0 + 0.5 * 10.0 + 0.5)
        );
        let m = x.mul_unrelated(y);
        assert!((m.sd - 50.0 * (0.01f64 + 0.01).sqrt()).abs() < 1e-9);
        assert_eq!(x.mul_unrelated(Stoch::ZERO), Stoch::ZERO);
    }

    #[test]
    fn normal_functions() {
        assert!((norm_cdf(0.0) - 0.5).abs() < 1e-7);
        assert!((norm_cdf(1.959_964) - 0.975).abs() < 1e-6);
        assert!((norm_quantile(0.975) - 1.959_964).abs() < 1e-5);
        assert!((norm_quantile(0.05) + 1.644_854).abs() < 1e-5);
        for q in [0.001, 0.1, 0.3, 0.7, 0.95, 0.999] {
            assert!((norm_cdf(norm_quantile(q)) - q).abs() < 1e-6, "{q}");
        }
    }

    /// Clark's max against 200k samples: overlapping, disjoint and
    /// unequal-spread pairs, and a group of four.
    #[test]
    fn clark_max_matches_sampling() {
        let cases = [
            vec![
                Stoch::new(4.0, 0.25),
                Stoch::new(3.0, 1.0),
                Stoch::new(3.0, 0.5),
            ],
            vec![Stoch::new(1.0, 0.1), Stoch::new(1.0, 0.1)],
            vec![Stoch::new(10.0, 0.1), Stoch::new(1.0, 0.1)],
            vec![Stoch::new(2.0, 0.3); 4],
        ];
        let mut r = Rng::new(7);
        for xs in cases {
            let c = Stoch::max_of(xs.iter().copied()).expect("non-empty");
            let n = 200_000;
            let s: Vec<f64> = (0..n)
                .map(|_| {
                    xs.iter()
                        .map(|x| x.mean + x.sd * gauss(&mut r))
                        .fold(f64::MIN, f64::max)
                })
                .collect();
            let mean = s.iter().sum::<f64>() / n as f64;
            let sd = (s.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n as f64).sqrt();
            assert!(
                (c.mean - mean).abs() < 0.02 * mean.abs().max(0.1),
                "{xs:?}: {c} vs {mean}"
            );
            assert!(
                (c.sd - sd).abs() < 0.1 * sd + 0.005,
                "{xs:?}: sd {} vs {sd}",
                c.sd
            );
            // The paper's largest-mean choice under-predicts overlapping maxima.
            let largest = xs.iter().map(|x| x.mean).fold(f64::MIN, f64::max);
            assert!(c.mean >= largest - 1e-9);
        }
        // Fully correlated equal values: the max is the value itself.
        let x = Stoch::new(3.0, 1.0);
        let m = x.max_corr(x, 1.0);
        assert_eq!(m, x);
    }

    #[test]
    fn paper_mixture_and_window() {
        let mx = Mixture {
            modes: vec![
                ModeStat {
                    value: Stoch::new(1.0, 0.05),
                    share: 0.5,
                    mean_dwell_s: 2.0,
                },
                ModeStat {
                    value: Stoch::new(0.5, 0.05),
                    share: 0.5,
                    mean_dwell_s: 2.0,
                },
            ],
        };
        let p = mx.paper();
        assert!((p.mean - 0.75).abs() < 1e-12 && (p.sd - 0.05).abs() < 1e-12);
        let m = mx.moments();
        assert!((m.sd - (0.0025f64 + 0.0625).sqrt()).abs() < 1e-12);
        // Two modes, equal dwell 2 s: tau = 1 s.
        assert!((mx.correlation_s() - 1.0).abs() < 1e-12);
        // Short window: nearly all the spread; long window: ~ sqrt(2 tau / T).
        assert!(mx.over_window(0.01).sd > 0.99 * m.sd);
        let long = mx.over_window(400.0).sd / m.sd;
        assert!(
            (long - (2.0f64 / 400.0).sqrt()).abs() < 0.01 * long + 1e-4,
            "{long}"
        );
    }

    /// The windowed spread against a simulated two-mode switch with
    /// exponential dwells: sd of 20 s averages.
    #[test]
    fn window_matches_simulated_switching() {
        let mut r = Rng::new(11);
        let (d, dt, w) = (1.5, 0.01, 20.0);
        let steps = (w / dt) as usize;
        let mut avgs = Vec::new();
        for _ in 0..600 {
            let mut level = r.unit() < 0.5;
            let mut left = -d * r.unit().max(1e-300).ln();
            let mut acc = 0.0;
            for _ in 0..steps {
                acc += if level { 1.0 } else { 0.5 };
                left -= dt;
                if left <= 0.0 {
                    level = !level;
                    left = -d * r.unit().max(1e-300).ln();
                }
            }
            avgs.push(acc / steps as f64);
        }
        let mean = avgs.iter().sum::<f64>() / avgs.len() as f64;
        let sd = (avgs.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / avgs.len() as f64).sqrt();
        let mx = Mixture {
            modes: vec![
                ModeStat {
                    value: Stoch::point(1.0),
                    share: 0.5,
                    mean_dwell_s: d,
                },
                ModeStat {
                    value: Stoch::point(0.5),
                    share: 0.5,
                    mean_dwell_s: d,
                },
            ],
        };
        let pred = mx.over_window(w);
        assert!((pred.mean - mean).abs() < 0.01);
        assert!(
            (pred.sd - sd).abs() < 0.15 * sd,
            "predicted {} simulated {sd}",
            pred.sd
        );
    }
}
