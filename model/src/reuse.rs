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
//! more a row whatever the wait). A stage of an iteration sweeps some
//! of a rank's arrays, last swept by an earlier stage (a stencil's one
//! stage: one iteration ago; each of NPB CG's 25 matrix-vector
//! products: a 25th of one; a multigrid smoother's second pass: a pass
//! ago), so the model scales rank i's computation under `d` by
//!
//! `k_i = Σ_s φ_s · r(β_s w_i(d), a_s T) / r(β_s w_i(rec), a_s T_rec) + φ_0`  (eq. R1)
//!
//! over the groups `s` of its stages that sweep declared arrays (eq. R3,
//! [`Sweep`], `model/reused.rs`): `φ_s` their share of the rank's
//! computation, `a_s` the time since their arrays' last sweep began as a
//! fraction of the recorded iteration, and `β_s` the share of the rank's
//! bytes that their arrays hold (from the app's `stage_access`; without
//! it, one sweep of all the bytes an iteration: `φ = a = β = 1`). `φ_0`
//! is the share of stages that sweep no declared array, which cost as
//! recorded. `w_i` is the bytes of arrays of every in-core rank of rank
//! i's machine (one kernel: the profile's `machine`, else the host
//! name; each rank's rows times their bytes a row, a per-work array's
//! by the work of its rows): a cache the machine's cores share
//! holds them all, and each rank's sweeps evict the others' rows as
//! their own (the probe's rank sweeps alone). `T_rec` is the recorded
//! distribution's iteration as the model replays it
//! (so `k_i = 1` there); `k_i = 1` for a rank out of core under either
//! distribution
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
//! after a sweep ([`ReuseCurve::relative`]); where the curve's knots
//! kept the iteration of the runs that measured them, a rank's rows are
//! priced from the periods of the knots the curve reads rather than the
//! recorded run's, each knot's share of the cost from its own (eq. R5,
//! [`Reuse::factors`], [`Reuse::k_from`]), and the change scaled by how much
//! of the probe's change the rank's own knots followed (eq. R4,
//! [`Reuse::fit_sensitivity`]): a loop bound by its own arithmetic
//! follows none of it. A model without curves, of
//! an app that declares no arrays, or of a run whose computation was
//! timed by the clock (`AppDecl::cpu_clock`) has no reuse term.

use mheta_profile::ReusePoint;

/// The largest working set is past the cache when its byte after the
/// longest wait costs at most this many times its byte right after a
/// sweep ([`ReuseCurve::from_points`]).
const PAST_CACHE: f64 = 1.15;

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
        let mut c = ReuseCurve { sets };
        c.cap_at_memory();
        (!c.sets.is_empty()).then_some(c)
    }

    /// A byte costs at most what it costs from memory: where the largest
    /// working set is past the cache (its byte after the longest wait
    /// within [`PAST_CACHE`] of its byte right after a sweep), every set's
    /// cost at a time is held to the largest set's at that time. What the
    /// probe pays beyond it after a long wait its five-point sweep's own
    /// first touches pay, which a code that streams its rows does not.
    fn cap_at_memory(&mut self) {
        let Some((_, big)) = self.sets.last() else {
            return;
        };
        let (Some(&(_, r0)), Some(&(_, r1))) = (big.first(), big.last()) else {
            return;
        };
        if r1 > r0 * PAST_CACHE {
            return;
        }
        let memory = ReuseCurve {
            sets: vec![self.sets[self.sets.len() - 1].clone()],
        };
        let n = self.sets.len() - 1;
        for (_, pts) in &mut self.sets[..n] {
            for (t, r) in pts.iter_mut() {
                *r = r.min(memory.rel(0.0, *t));
            }
        }
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
        self.at(self.sizes(ws), t)
    }

    /// Where `ws` lies among the working sets: the two sets and the
    /// weight of the second, linear in log2 (the nearest set alone
    /// outside them), for [`ReuseCurve::at`].
    fn sizes(&self, ws: f64) -> (usize, usize, f64) {
        let s = &self.sets;
        match s.iter().position(|(w, _)| *w >= ws) {
            None => (s.len() - 1, s.len() - 1, 0.0),
            Some(0) => (0, 0, 0.0),
            Some(j) => {
                let (w0, w1) = (s[j - 1].0.log2(), s[j].0.log2());
                (j - 1, j, (ws.max(1.0).log2() - w0) / (w1 - w0))
            }
        }
    }

    /// `r` at time `t` between the working sets `(j0, j1, a)` of
    /// [`ReuseCurve::sizes`].
    fn at(&self, (j0, j1, a): (usize, usize, f64), t: f64) -> f64 {
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
        let lo = at(&self.sets[j0].1);
        if a == 0.0 {
            lo
        } else {
            lo * (1.0 - a) + at(&self.sets[j1].1) * a
        }
    }
}

/// A group of a rank's stages that sweep declared arrays (eq. R3): their
/// share of the rank's scaled computation, the time from the last sweep
/// of their arrays before them (its beginning) to their own beginning as
/// a fraction of the recorded iteration, and the share of the rank's
/// bytes that their arrays hold.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Sweep {
    pub share: f64,
    pub frac: f64,
    pub bytes: f64,
}

/// What a model needs for its reuse term.
#[derive(Clone, Debug)]
pub(crate) struct Reuse {
    /// Per rank, its node's curve (None: not measured there, k = 1).
    curves: Vec<Option<ReuseCurve>>,
    /// Per rank, its machine's bytes of arrays as recorded, `w_i(rec)`.
    rec_ws: Vec<f64>,
    /// Per rank, the groups of stages that sweep its arrays (eq. R3);
    /// the rest of its computation sweeps none and costs as recorded.
    sweeps: Vec<Vec<Sweep>>,
    /// The iteration replayed at the recorded distribution: the ages as
    /// recorded come from it, so every `k_i` is 1 there.
    rec_t: f64,
    /// Per rank and sweep, `r(w_i(rec), age as recorded)`.
    rec_r: Vec<Vec<f64>>,
    /// Per rank, its machine (an index): the ranks whose arrays share its
    /// last-level cache.
    pub machine: Vec<usize>,
    /// Per rank, how much of the probe's change its rows follow (eq. R4,
    /// [`Reuse::fit_sensitivity`]); 1 unless its row-cost curve says.
    kappa: Vec<f64>,
}

impl Reuse {
    /// The term of ranks with these curves, bytes and sweeps, at an
    /// iteration of `rec_t` (the replay of the recorded distribution).
    pub fn new(
        curves: Vec<Option<ReuseCurve>>,
        rec_ws: Vec<f64>,
        sweeps: Vec<Vec<Sweep>>,
        rec_t: f64,
        machine: Vec<usize>,
    ) -> Reuse {
        let mut r = Reuse {
            curves,
            rec_ws,
            sweeps,
            rec_t,
            rec_r: Vec::new(),
            kappa: vec![1.0; machine.len()],
            machine,
        };
        r.at_record();
        r
    }

    /// Rank `i`'s working set as recorded, `w_i(rec)` (NaN out of core).
    pub fn recorded_ws(&self, i: usize) -> f64 {
        self.rec_ws[i]
    }

    /// Rank `i`'s `κ_i` ([`Reuse::fit_sensitivity`]).
    pub fn sensitivity(&self, i: usize) -> f64 {
        self.kappa[i]
    }

    /// The ages as recorded from another replay of the recorded
    /// distribution.
    pub fn rebase(&mut self, rec_t: f64) {
        self.rec_t = rec_t;
        self.at_record();
    }

    fn at_record(&mut self) {
        self.rec_r = (0..self.curves.len())
            .map(|i| {
                (self.sweeps[i].iter())
                    .map(|s| match &self.curves[i] {
                        Some(c) if !self.rec_ws[i].is_nan() => {
                            c.rel(self.rec_ws[i] * s.bytes, s.frac * self.rec_t)
                        }
                        _ => 1.0,
                    })
                    .collect()
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

    /// `k_from(i, ws, t, None)`.
    #[cfg(test)]
    pub fn k(&self, i: usize, ws: f64, t: f64) -> f64 {
        self.k_from(i, ws, t, None)
    }

    /// Rank `i`'s `k_i` with `ws` bytes in an iteration of `t` (eqs. R1
    /// and R3): its sweeps' costs at their ages over their costs as
    /// recorded, weighted by their shares of its computation; 1 for a
    /// rank without a curve, or out of core (`ws` NaN) under either
    /// distribution. With `t_ref`, from that period instead of the
    /// recorded one: rank i's cost as the row-cost curve read it was
    /// measured in runs of that iteration (a knot's period,
    /// [`crate::curve::RowCurve::knot_periods`]), so its sweeps' costs are
    /// taken over theirs at the same working set and ages `a_s t_ref`
    /// (eq. R1 with `T_rec` the knot's period), and the change scaled by
    /// its `κ_i` (eq. R4, [`Reuse::fit_sensitivity`]).
    pub fn k_from(&self, i: usize, ws: f64, t: f64, t_ref: Option<f64>) -> f64 {
        let Some(c) = &self.curves[i] else {
            return 1.0;
        };
        if ws.is_nan() {
            return 1.0;
        }
        let mut k = 1.0;
        match t_ref {
            Some(tr) => {
                for s in &self.sweeps[i] {
                    let at = c.sizes(ws * s.bytes);
                    k += s.share * (c.at(at, s.frac * t) / c.at(at, s.frac * tr) - 1.0);
                }
                k = 1.0 + self.kappa[i] * (k - 1.0);
            }
            None if !self.rec_ws[i].is_nan() => {
                for (s, r0) in self.sweeps[i].iter().zip(&self.rec_r[i]) {
                    k += s.share * (c.at(c.sizes(ws * s.bytes), s.frac * t) / r0 - 1.0);
                }
            }
            None => {}
        }
        k
    }

    /// Rank `i`'s sensitivity `κ_i` from its row-cost curve's knots,
    /// each `(c_j, T_j)`: its cost a row there over its cost a row at the
    /// recorded rows, and the iteration of the runs that measured it;
    /// `t_rec` the knot's at the recorded rows and `ws` its working set
    /// as recorded. The knots ran at other periods than the recorded
    /// run, so each is a measurement of how much its rows follow the
    /// probe's change: with `ρ_j = k(T_j)` the term's factor from `t_rec`
    /// ([`Reuse::k_from`] at `κ = 1`),
    ///
    /// `κ_i = Σ_j (c_j − 1)(ρ_j − 1) / Σ_j (ρ_j − 1)²`, within 0..=2  (eq. R4)
    ///
    /// over the knots whose `ρ_j` differs from 1 by 2% or more (none: κ
    /// stays 1, the probe's). A kernel whose loop is bound by its own
    /// arithmetic (a dot product's chain of dependent adds) streams its
    /// rows as fast from memory as from the cache, and its knots read 1
    /// whatever the period: `κ` 0. The term then scales by
    /// `1 + κ_i (k − 1)` wherever it is priced from a knot's period.
    /// Returns `κ_i`.
    pub fn fit_sensitivity(&mut self, i: usize, ws: f64, t_rec: f64, knots: &[(f64, f64)]) -> f64 {
        if self.curves[i].is_none() || !ws.is_finite() || !t_rec.is_finite() || t_rec <= 0.0 {
            return self.kappa[i];
        }
        self.kappa[i] = 1.0;
        let (mut num, mut den) = (0.0, 0.0);
        for &(c, t) in knots {
            let rho = self.k_from(i, ws, t, Some(t_rec));
            if (rho - 1.0).abs() >= 0.02 && c.is_finite() && t.is_finite() {
                num += (c - 1.0) * (rho - 1.0);
                den += (rho - 1.0) * (rho - 1.0);
            }
        }
        if den > 0.0 {
            self.kappa[i] = (num / den).clamp(0.0, 2.0);
        }
        self.kappa[i]
    }

    /// Every rank's `k_i` under a distribution whose replay at `k = 1`
    /// lasted `t0`, with `ws` each rank's working set `w_i` and `busy_compute(i)`
    /// rank i's time busy there (its finish less its waits) and its
    /// computation: the period settled by eq. R2, then eq. R1 at it.
    /// None when every k is 1.
    ///
    /// Eq. R2: `T = (t0 − max_i busy_i) + max_i (busy_i + compute_i (k_i(T) − 1))`,
    /// the busiest rank after its rows' new cost, plus what the replay
    /// at `k = 1` spent beyond its busiest rank (messages in flight).
    ///
    /// `t_ref`: per rank, the knots its cost as priced was read from,
    /// each as (its share of the cost, the period it was measured at;
    /// [`crate::curve::RowCurve::knot_periods`]); empty for the recorded
    /// run's. Each knot's cost goes from its own period to `T`:
    ///
    /// `k_i = Σ_j w_j (1 + κ_i (k_i(T; T_j) − 1))`  (eq. R5)
    ///
    /// with `k_i(T; T_j)` eq. R1 from the knot's period `T_j`
    /// ([`Reuse::k_from`]) and `w_j` its share.
    pub fn factors(
        &self,
        ws: &[f64],
        busy_compute: impl Fn(usize) -> (f64, f64),
        t0: f64,
        t_ref: &[Option<[(f64, f64); 2]>],
    ) -> Option<Vec<f64>> {
        let top = (0..ws.len()).map(|i| busy_compute(i).0).fold(0.0, f64::max);
        let rest = (t0 - top).max(0.0);
        // One step of eq. R2: every k at `t`, and the period they give.
        let step = |t: f64, k: &mut [f64]| {
            let mut next = 0.0f64;
            for (i, k) in k.iter_mut().enumerate() {
                let (busy, compute) = busy_compute(i);
                *k = match t_ref.get(i).copied().flatten() {
                    None => self.k_from(i, ws[i], t, None),
                    // Eq. R5: each knot from its own period.
                    Some(knots) => (knots.iter())
                        .filter(|(w, _)| *w > 0.0)
                        .map(|&(w, tj)| w * self.k_from(i, ws[i], t, Some(tj)))
                        .sum(),
                };
                next = next.max(busy + compute * (*k - 1.0));
            }
            rest + next
        };
        // Steps accelerated by Aitken's extrapolation: between two knots
        // of the curves a step is linear in `t`, so one extrapolation from
        // two steps lands on the fixed point.
        let tol = 1e-6 * t0.abs().max(1e-12);
        let (mut t, mut k) = (t0, vec![1.0; ws.len()]);
        for _ in 0..8 {
            let t1 = step(t, &mut k);
            if (t1 - t).abs() <= tol {
                break;
            }
            let t2 = step(t1, &mut k);
            if (t2 - t1).abs() <= tol {
                break;
            }
            let slope = (t2 - t1) / (t1 - t);
            t = if slope.is_finite() && slope < 1.0 {
                t1 + (t2 - t1) / (1.0 - slope)
            } else {
                t2
            };
        }
        k.iter().any(|&x| x != 1.0).then_some(k)
    }
}

#[cfg(test)]
mod tests {
    use super::{Reuse, ReuseCurve, Sweep};
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
    fn a_byte_costs_at_most_the_memory_price_where_the_largest_set_is_past_the_cache() {
        // 64 MiB costs 2.0 a byte whenever it was last swept: past the
        // cache; 4 MiB costs 1.0 right after a sweep and 3.0 after 50 ms,
        // held to 2.0. With 64 MiB's cost rising by half it is not past
        // the cache, and nothing is held.
        let pts = |big: f64| {
            ReuseCurve::from_points(&[
                pt(4 << 20, 1.0, 0.001, 1.0, [1.0, 1.0]),
                pt(4 << 20, 1.0, 0.050, 3.0, [2.8, 3.2]),
                pt(64 << 20, 2.0, 0.001, 1.0, [1.0, 1.0]),
                pt(64 << 20, 2.0, 0.050, big, [big - 0.01, big + 0.01]),
            ])
            .unwrap()
        };
        let w4 = (4u64 << 20) as f64;
        let flat = pts(1.05);
        assert_eq!(flat.rel(w4, 0.001), 1.0);
        assert!((flat.rel(w4, 0.050) - 2.1).abs() < 1e-12);
        assert!((pts(1.5).rel(w4, 0.050) - 3.0).abs() < 1e-12);
    }

    #[test]
    fn a_shorter_iteration_makes_rows_cheaper_and_the_period_settles() {
        let w16 = (16u64 << 20) as f64;
        let c = curve();
        let rec_r = c.rel(w16, 0.022);
        let once = || {
            vec![Sweep {
                share: 1.0,
                frac: 1.0,
                bytes: 1.0,
            }]
        };
        let r = Reuse::new(
            vec![Some(c.clone()), None],
            vec![w16, w16],
            vec![once(), once()],
            0.022,
            vec![0, 1],
        );
        // At the recorded period nothing changes.
        let (busy, compute) = ([0.021, 0.02], [0.01, 0.01]);
        assert_eq!(
            r.factors(&[w16, w16], |i| (busy[i], compute[i]), 0.022, &[]),
            None
        );
        // A period of 12 ms at k = 1, 11 ms of it rank 0's busy time and
        // 10 ms its compute; rank 1 has no curve.
        let (busy, compute) = ([0.011, 0.008], [0.01, 0.007]);
        let k = r
            .factors(&[w16, w16], |i| (busy[i], compute[i]), 0.012, &[])
            .unwrap();
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
        let k = (r.factors(&[w16 / 4.0, w16], |i| (busy[i], compute[i]), 0.022, &[])).unwrap();
        assert!((k[0] - 1.5 / 2.4).abs() < 1e-12, "{k:?}");
    }

    /// Two ranks of 16 MiB with one sweep an iteration, recorded at an
    /// iteration of 0.5 s; rank 1 with the curve or not.
    fn two_ranks(c: &ReuseCurve, rank1: bool) -> (Reuse, f64) {
        let w16 = (16u64 << 20) as f64;
        let one = vec![Sweep {
            share: 1.0,
            frac: 1.0,
            bytes: 1.0,
        }];
        let r = Reuse::new(
            vec![Some(c.clone()), rank1.then(|| c.clone())],
            vec![w16, w16],
            vec![one.clone(), one],
            0.5,
            vec![0, 1],
        );
        (r, w16)
    }

    #[test]
    fn from_a_knots_period_the_term_prices_only_the_change_from_it() {
        let c = curve();
        let (r, w16) = two_ranks(&c, true);
        // Recorded at a long period, priced at 10 ms: the term alone.
        let from_rec = r.k(0, w16, 0.010);
        assert!(from_rec < 1.0, "{from_rec}");
        // The rank's cost was measured (a row-cost curve's knot) at 10
        // ms: nothing left for the term to change.
        assert_eq!(r.k_from(0, w16, 0.010, Some(0.010)), 1.0);
        // Measured at 10 ms, priced at 22 ms: the curve's rise between.
        let k = r.k_from(0, w16, 0.022, Some(0.010));
        assert!(
            (k - c.rel(w16, 0.022) / c.rel(w16, 0.010)).abs() < 1e-12,
            "{k}"
        );
        assert!(k > 1.0);
        // Out of core under the distribution: 1, whatever the reference.
        assert_eq!(r.k_from(0, f64::NAN, 0.022, Some(0.010)), 1.0);
        // Per rank in `factors` (rank 0 read from `knots`; rank 1 as
        // recorded), rank 0 busy `busy` of `compute` in an iteration of t.
        let factors = |busy: f64, compute: f64, t: f64, knots: [(f64, f64); 2]| {
            let (busy, compute) = ([busy, 0.005], [compute, 0.004]);
            (r.factors(
                &[w16, w16],
                |i| (busy[i], compute[i]),
                t,
                &[Some(knots), None],
            ))
            .unwrap()
        };
        // Rank 0 measured at the period it gets.
        let k = factors(0.0099, 0.009, 0.010, [(1.0, 0.010), (0.0, 0.010)]);
        assert_eq!(k[0], 1.0);
        assert!(k[1] < 1.0, "{k:?}");
        // Eq. R5: a cost read from two knots, a quarter of it measured at
        // 10 ms and the rest at 50 ms, priced at 22 ms: each part from
        // its own period, not the whole from one period between them.
        let k = factors(0.0219, 0.02, 0.022, [(0.25, 0.010), (0.75, 0.050)]);
        let each = 0.25 * r.k_from(0, w16, 0.022, Some(0.010))
            + 0.75 * r.k_from(0, w16, 0.022, Some(0.050));
        assert!((k[0] - each).abs() < 1e-12, "{k:?} {each}");
        let between = r.k_from(0, w16, 0.022, Some(0.25 * 0.010 + 0.75 * 0.050));
        assert!((k[0] - between).abs() > 1e-3, "{k:?} {between}");
    }

    #[test]
    fn a_ranks_knots_at_other_periods_fit_how_much_of_the_probe_it_follows() {
        let c = curve();
        let (mut r, w16) = two_ranks(&c, false);
        // The probe's change from a knot at 50 ms to ones at 10 and 5 ms.
        let rho = |t: f64| c.rel(w16, t) / c.rel(w16, 0.05);
        let (a, b) = (rho(0.010), rho(0.005));
        assert!(a < 0.98 && b < 0.98, "{a} {b}");
        // Knots that follow the probe: 1. Half of it: 0.5.
        let follow = [(a, 0.010), (b, 0.005), (1.0, 0.05)];
        assert!((r.fit_sensitivity(0, w16, 0.05, &follow) - 1.0).abs() < 1e-12);
        let half = [
            (1.0 + (a - 1.0) / 2.0, 0.010),
            (1.0 + (b - 1.0) / 2.0, 0.005),
        ];
        assert!((r.fit_sensitivity(0, w16, 0.05, &half) - 0.5).abs() < 1e-12);
        // The priced change is scaled by it.
        let k = r.k_from(0, w16, 0.010, Some(0.05));
        assert!((k - (1.0 + (a - 1.0) / 2.0)).abs() < 1e-12, "{k}");
        // Knots that read 1 at every period: a loop bound by its own
        // arithmetic; nothing of the probe's change.
        let flat = [(1.0, 0.010), (1.0, 0.005)];
        assert_eq!(r.fit_sensitivity(0, w16, 0.05, &flat), 0.0);
        assert_eq!(r.k_from(0, w16, 0.010, Some(0.05)), 1.0);
        // Knots at the recorded period say nothing: the probe's, 1.
        assert_eq!(r.fit_sensitivity(0, w16, 0.05, &[(0.7, 0.05)]), 1.0);
        // Never below 0 nor above 2; a rank without a curve keeps 1.
        assert_eq!(
            r.fit_sensitivity(0, w16, 0.05, &[(1.0 + 5.0 * (a - 1.0), 0.010)]),
            2.0
        );
        assert_eq!(
            r.fit_sensitivity(0, w16, 0.05, &[(1.0 - (a - 1.0), 0.010)]),
            0.0
        );
        assert_eq!(r.fit_sensitivity(1, w16, 0.05, &flat), 1.0);
        // The recorded run's own term (no knot period) is not scaled.
        assert_eq!(r.k(0, w16, 0.5), 1.0);
        assert!(r.k(0, w16, 0.010) < 1.0);
    }

    #[test]
    fn each_sweep_is_priced_at_its_own_age_and_bytes_by_its_share() {
        let (w4, w16) = ((4u64 << 20) as f64, (16u64 << 20) as f64);
        let c = curve();
        // Half the computation sweeps all 16 MiB once an iteration, half
        // sweeps a quarter of them (4 MiB) a quarter iteration after
        // their last sweep (eq. R3).
        let sweeps = vec![
            Sweep {
                share: 0.5,
                frac: 1.0,
                bytes: 1.0,
            },
            Sweep {
                share: 0.5,
                frac: 0.25,
                bytes: 0.25,
            },
        ];
        let r = Reuse::new(
            vec![Some(c.clone())],
            vec![w16],
            vec![sweeps],
            0.044,
            vec![0],
        );
        assert_eq!(r.k(0, w16, 0.044), 1.0);
        let t = 0.014;
        let by_hand =
            0.5 * c.rel(w16, t) / c.rel(w16, 0.044) + 0.5 * c.rel(w4, t / 4.0) / c.rel(w4, 0.011);
        assert!((r.k(0, w16, t) - by_hand).abs() < 1e-12, "{by_hand}");
        // 4 MiB 3.5 ms old costs 1.125 (1 at 1 ms, 1.5 at 11 ms), 11 ms
        // old 1.5: that half's rows cost 0.75 of theirs as recorded.
        assert!((c.rel(w4, t / 4.0) / c.rel(w4, 0.011) - 0.75).abs() < 1e-12);
    }
}
