//! A row's cost by how long ago its rank last touched it: the reuse term.
//!
//! Beyond MHETA: section 4.2.1 scales a rank's recorded computation by
//! its share of the work, `T_Φ' = T_Φ · W'/W`, whatever else changed.
//! Where a node's caches are shared (other jobs, a VM host's other
//! guests), a rank's arrays are evicted in the time between two sweeps of
//! them, and the next sweep reads them from memory: the longer the
//! iteration, the costlier its rows. A run recorded on Block, where a fast
//! rank waits most of each iteration for a slow one, thus has costlier
//! rows than the balanced split it plans, whose iterations are shorter
//! (docs/design/fidelity.md, "A rank's wait and its cached rows").
//!
//! Each node's `reuse_by` (`mheta-microbench`, [`mheta_profile::ReusePoint`])
//! gives `r(w, t)`: the CPU cost a byte of a five-point sweep over `w`
//! bytes last touched `t` ago ([`ReuseCurve::rel`]). It holds both what
//! the time costs (a working set the cache's share holds is evicted in
//! tens of milliseconds where the cache is shared) and what the size
//! costs (one past the share costs the memory's price even right after a
//! sweep, so a rank given more rows than its cache's share holds pays
//! more a row whatever the wait). An iterative code sweeps its arrays
//! once an iteration, so the model takes a rank's bytes to be last
//! touched one iteration `T` ago, and scales rank i's computation under
//! `d` by
//!
//! `k_i = r(w_i(d), T) / r(w_i(rec), T_rec)`  (eq. R1)
//!
//! with `w_i` the bytes of its arrays (its rows times their bytes a row,
//! a per-work array's by the work of its rows) and `T_rec` the recorded
//! iteration; `k_i = 1` for a rank out of core under either distribution
//! (its sweeps work on pieces it has just read). The ratio of the probe's costs is
//! taken to be the rank's: the measurements behind that choice (against
//! a ratio of each working set's own curve, and against adding the
//! probe's difference a byte) are in docs/design/fidelity.md. `T` depends
//! on `k`: the prediction replays at `k = 1`, settles `T` from that
//! replay's ranks along the curves (eq. R2, [`Reuse::factors`]), and
//! replays once more at `k(T)` ([`crate::Model::predict`]), so a model
//! with the term costs two replays an evaluation. With a row-cost curve
//! ([`crate::curve`], measured for the app) the size is the curve's, and
//! the term keeps each working set's curve over its own sweep right
//! after a sweep ([`ReuseCurve::relative`]). A model without curves, of
//! an app that declares no arrays, or of a run whose computation was
//! timed by the clock (`AppDecl::cpu_clock`) has no reuse term.

use mheta_profile::ReusePoint;

/// One node's `r(w, t)`: per working set, increasing, its points
/// `(t, r)` by increasing `t`.
#[derive(Clone, Debug, PartialEq)]
pub struct ReuseCurve {
    sets: Vec<(f64, Vec<(f64, f64)>)>,
}

impl ReuseCurve {
    /// The curve of a node's measured points (`NodeCost::reuse_by`, in
    /// the profile's order); None without points. Each ratio is taken
    /// where its 95% interval excludes 1 ([`ReusePoint::resolved`]), and
    /// never below one at a shorter time of the same working set: a
    /// byte does not get cheaper for having waited longer, so a dip is
    /// the rounds' noise.
    pub fn from_points(pts: &[ReusePoint]) -> Option<ReuseCurve> {
        let mut sets: Vec<(f64, Vec<(f64, f64)>)> = Vec::new();
        let mut base = 1.0;
        for p in pts {
            let ws = p.ws_bytes as f64;
            if sets.last().is_none_or(|(w, _)| *w != ws) {
                sets.push((ws, Vec::new()));
                base = p.per_byte.p50 / p.resolved();
            }
            let pts = &mut sets.last_mut().expect("pushed").1;
            let floor = pts.last().map_or(base, |&(_, r)| r);
            pts.push((p.reuse_s, (base * p.resolved()).max(floor)));
        }
        (!sets.is_empty()).then_some(ReuseCurve { sets })
    }

    /// The same curve with each working set's costs over its sweep right
    /// after a sweep: the time since the last sweep alone, for a model
    /// whose row-cost curve already prices the working set
    /// ([`crate::Model::with_row_curves`]).
    pub fn relative(mut self) -> ReuseCurve {
        for (_, pts) in &mut self.sets {
            let base = pts.first().map_or(1.0, |&(_, r)| r);
            for (_, r) in pts.iter_mut() {
                *r /= base;
            }
        }
        self
    }

    /// `r(w, t)`: linear in `t` between a working set's points (the
    /// first's before it, the last's beyond it), linear in log2(w)
    /// between working sets and the nearest one's outside them.
    pub fn rel(&self, ws: f64, t: f64) -> f64 {
        let at = |pts: &[(f64, f64)]| -> f64 {
            let Some(i) = pts.iter().position(|&(x, _)| x >= t) else {
                return pts.last().map_or(1.0, |&(_, r)| r);
            };
            if i == 0 {
                return pts[0].1;
            }
            let ((x0, r0), (x1, r1)) = (pts[i - 1], pts[i]);
            r0 + (r1 - r0) * (t - x0) / (x1 - x0)
        };
        let s = &self.sets;
        let j = s.iter().position(|(w, _)| *w >= ws);
        match j {
            None => at(&s[s.len() - 1].1),
            Some(0) => at(&s[0].1),
            Some(j) => {
                let (w0, w1) = (s[j - 1].0.log2(), s[j].0.log2());
                let a = (ws.max(1.0).log2() - w0) / (w1 - w0);
                at(&s[j - 1].1) * (1.0 - a) + at(&s[j].1) * a
            }
        }
    }
}

/// What a model needs for its reuse term.
#[derive(Clone, Debug)]
pub(crate) struct Reuse {
    /// Per rank, its node's curve (None: not measured there, k = 1).
    curves: Vec<Option<ReuseCurve>>,
    /// Per rank, its bytes of arrays as recorded, `w_i(rec)`.
    rec_ws: Vec<f64>,
    /// The recorded iteration, `T_rec` (the longest rank's measured one).
    rec_s: f64,
    /// Per rank, `r(w_i(rec), T_rec)`.
    rec_r: Vec<f64>,
}

impl Reuse {
    /// The term of ranks with these curves, bytes and recorded period.
    pub fn new(curves: Vec<Option<ReuseCurve>>, rec_ws: Vec<f64>, rec_s: f64) -> Reuse {
        let mut r = Reuse {
            curves,
            rec_ws,
            rec_s,
            rec_r: Vec::new(),
        };
        r.at_record();
        r
    }

    fn at_record(&mut self) {
        self.rec_r = (self.curves.iter().zip(&self.rec_ws))
            .map(|(c, &w)| match c {
                Some(c) if !w.is_nan() => c.rel(w, self.rec_s),
                _ => 1.0,
            })
            .collect();
    }

    /// Each curve by the time since the last sweep alone
    /// ([`ReuseCurve::relative`]), for a model with row-cost curves.
    pub fn relative(&mut self) {
        for c in self.curves.iter_mut().flatten() {
            *c = c.clone().relative();
        }
        self.at_record();
    }

    /// Rank `i`'s `k_i` at period `t` with `ws` bytes (eq. R1); 1 for a
    /// rank without a curve, or out of core (`ws` NaN) under either
    /// distribution.
    pub fn k(&self, i: usize, ws: f64, t: f64) -> f64 {
        match &self.curves[i] {
            Some(c) if !ws.is_nan() && !self.rec_ws[i].is_nan() => c.rel(ws, t) / self.rec_r[i],
            _ => 1.0,
        }
    }

    /// Every rank's `k_i` under a distribution whose replay at `k = 1`
    /// lasted `t0`, with `ws` each rank's bytes, `busy` its time busy
    /// (its finish less its waits) and `compute` its computation there:
    /// the period settled by eq. R2, then eq. R1 at it. None when every
    /// k is 1.
    ///
    /// Eq. R2: `T = (t0 − max_i busy_i) + max_i (busy_i + compute_i (k_i(T) − 1))`,
    /// the busiest rank after its rows' new cost, plus what the replay
    /// at `k = 1` spent beyond its busiest rank (messages in flight);
    /// a few steps from `t0` (the curve's slope times the computation is
    /// far below 1, so they converge).
    pub fn factors(&self, ws: &[f64], busy: &[f64], compute: &[f64], t0: f64) -> Option<Vec<f64>> {
        let top = busy.iter().copied().fold(0.0, f64::max);
        let rest = (t0 - top).max(0.0);
        let mut t = t0;
        for _ in 0..16 {
            let next = rest
                + (0..ws.len())
                    .map(|i| busy[i] + compute[i] * (self.k(i, ws[i], t) - 1.0))
                    .fold(0.0, f64::max);
            let done = (next - t).abs() <= 1e-6 * t0.abs().max(1e-12);
            t = next;
            if done {
                break;
            }
        }
        let k: Vec<f64> = (0..ws.len()).map(|i| self.k(i, ws[i], t)).collect();
        k.iter().any(|&x| x != 1.0).then_some(k)
    }
}

#[cfg(test)]
mod tests {
    use super::{Reuse, ReuseCurve};
    use mheta_profile::{ReusePoint, SampleStats};

    /// A point of a working set whose sweep right after a sweep costs
    /// `base` a byte.
    fn pt(ws: u64, base: f64, t: f64, rel: f64, ci: [f64; 2]) -> ReusePoint {
        ReusePoint {
            ws_bytes: ws,
            reuse_s: t,
            per_byte: SampleStats::point(base * rel),
            rel,
            rel_ci95: ci,
        }
    }

    fn curve() -> ReuseCurve {
        ReuseCurve::from_points(&[
            pt(4 << 20, 1.0, 0.001, 1.0, [1.0, 1.0]),
            pt(4 << 20, 1.0, 0.011, 1.5, [1.4, 1.6]),
            pt(16 << 20, 1.2, 0.002, 1.0, [1.0, 1.0]),
            // Not told apart from 1: taken as 1.
            pt(16 << 20, 1.2, 0.007, 1.1, [0.95, 1.2]),
            pt(16 << 20, 1.2, 0.022, 2.0, [1.8, 2.2]),
            // A dip below the shorter time's ratio: held at it.
            pt(16 << 20, 1.2, 0.052, 1.9, [1.7, 2.1]),
        ])
        .unwrap()
    }

    #[test]
    fn the_curve_is_linear_in_time_and_in_log2_of_the_working_set() {
        let c = curve();
        let (w4, w16) = ((4u64 << 20) as f64, (16u64 << 20) as f64);
        let near = |a: f64, b: f64| (a - b).abs() < 1e-12;
        assert!(near(c.rel(w16, 0.001), 1.2));
        assert!(near(c.rel(w16, 0.007), 1.2));
        assert!(near(c.rel(w16, 0.0145), 1.2 * 1.5));
        assert!(near(c.rel(w16, 0.1), 1.2 * 2.0));
        // 8 MiB is halfway in log2 between 4 and 16 MiB.
        let (a, b) = (c.rel(w4, 0.011), c.rel(w16, 0.011));
        assert!(near(c.rel((8u64 << 20) as f64, 0.011), (a + b) / 2.0));
        // Outside the working sets: the nearest one's.
        assert_eq!(c.rel(1e3, 0.011), a);
        assert_eq!(c.rel(1e12, 0.1), c.rel(w16, 0.1));
        // Relative: each working set over its own first point.
        let r = c.relative();
        assert!(near(r.rel(w4, 0.011), 1.5) && near(r.rel(w16, 0.1), 2.0));
    }

    #[test]
    fn a_shorter_iteration_makes_rows_cheaper_and_the_period_settles() {
        let w16 = (16u64 << 20) as f64;
        let c = curve();
        let rec_r = c.rel(w16, 0.022);
        let r = Reuse::new(vec![Some(c.clone()), None], vec![w16, w16], 0.022);
        // At the recorded period nothing changes.
        let (busy, compute) = ([0.021, 0.02], [0.01, 0.01]);
        assert_eq!(r.factors(&[w16, w16], &busy, &compute, 0.022), None);
        // A period of 12 ms at k = 1, 11 ms of it rank 0's busy time and
        // 10 ms its compute; rank 1 has no curve.
        let (busy, compute) = ([0.011, 0.008], [0.01, 0.007]);
        let k = r.factors(&[w16, w16], &busy, &compute, 0.012).unwrap();
        assert_eq!(k[1], 1.0);
        // Rank 0 now done before rank 1: the period is rank 1's.
        let t = 0.001 + (0.011 + 0.010 * (k[0] - 1.0)).max(0.008);
        assert!((t - 0.009).abs() < 1e-12, "{t}");
        assert!(k[0] < 1.0, "{k:?}");
        // Settled: k at the settled period is the k it gives.
        assert!((c.rel(w16, t) / rec_r - k[0]).abs() < 1e-6, "{k:?} {t}");
        // A quarter of the bytes at the recorded period: the smaller
        // working set's cost (1.5 a byte after 22 ms) over the recorded
        // one's (1.2 x 2.0).
        let (busy, compute) = ([0.021, 0.021], [0.01, 0.01]);
        let k = (r.factors(&[w16 / 4.0, w16], &busy, &compute, 0.022)).unwrap();
        assert!((k[0] - 1.5 / 2.4).abs() < 1e-12, "{k:?}");
    }
}
