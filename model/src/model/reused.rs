//! The model's side of the reuse term ([`crate::reuse`]): its curves
//! from the profile, each rank's bytes of arrays, and the second replay at
//! the factors the first one's period gives.

use super::{Model, ModelError, Prediction};
use crate::dist::Dist;
use mheta_profile::ClusterProfile;

impl Model {
    /// The same model without the reuse term ([`crate::reuse`]): every
    /// row costs as recorded, whatever the iteration's length.
    pub fn without_reuse(mut self) -> Model {
        self.reuse = None;
        self
    }

    /// Whether the model has a reuse term ([`crate::reuse`]).
    pub fn has_reuse(&self) -> bool {
        self.reuse.is_some()
    }

    /// The reuse term of this model's trace on `prof`'s nodes: None for a
    /// run timed by the clock, an app that declares no arrays, or a
    /// profile without `reuse_by`.
    pub(super) fn reuse_of(&self, prof: &ClusterProfile) -> Option<crate::reuse::Reuse> {
        use crate::reuse::{Reuse, ReuseCurve};
        if self.app.cpu_clock || self.app.arrays.is_empty() {
            return None;
        }
        let curves: Vec<Option<ReuseCurve>> = (0..self.ranks())
            .map(|i| {
                (prof.nodes.iter().find(|n| n.rank as usize == i))
                    .and_then(|n| ReuseCurve::from_points(&n.reuse_by))
            })
            .collect();
        let rec_s = (self.programs.iter()).fold(0.0, |t, p| p.measured_s.max(t));
        if curves.iter().all(Option::is_none) || !(rec_s.is_finite() && rec_s > 0.0) {
            return None;
        }
        let ws = self.working_sets(&Dist(self.app.dist.clone()));
        Some(Reuse::new(curves, ws, rec_s))
    }

    /// Each rank's bytes of arrays under `d` ([`crate::reuse`]'s `w_i`):
    /// its rows times the bytes a row of every array (a coarse level's
    /// halved once a level), a per-work array's by the work of its rows;
    /// NaN for a rank with an array out of core, whose sweeps work on
    /// pieces just read, whatever the iteration's length (no reuse term
    /// for it: [`crate::reuse::Reuse::k`]).
    fn working_sets(&self, d: &Dist) -> Vec<f64> {
        let (mut row_b, mut work_b) = (0.0, 0.0);
        for a in &self.app.arrays {
            let b = a.bytes_per_row as f64 * 0.5f64.powi(a.level.unwrap_or(0) as i32);
            if a.per_work {
                work_b += b;
            } else {
                row_b += b;
            }
        }
        let off = d.offsets();
        (0..self.ranks())
            .map(|i| {
                let work = match &self.work_prefix {
                    Some(w) if work_b > 0.0 => {
                        (w[(off[i] + d.0[i]) as usize] - w[off[i] as usize]) as f64
                    }
                    _ => 0.0,
                };
                let in_core = match &self.io {
                    Some(io) if !io.unbudgeted(i) => (io.plan(i, off[i], d.0[i]))
                        .is_some_and(|p| p.out_of_core.iter().all(|&o| !o)),
                    _ => true,
                };
                if in_core {
                    d.0[i] as f64 * row_b + work * work_b
                } else {
                    f64::NAN
                }
            })
            .collect()
    }

    /// Every rank's reuse factor `k_i` under `d`, from its replay at
    /// `k = 1` ([`crate::reuse`], eqs. R1-R2); None without a reuse term
    /// or where every factor is 1.
    pub(crate) fn reuse_factors(&self, d: &Dist, p0: &Prediction) -> Option<Vec<f64>> {
        let r = self.reuse.as_ref()?;
        let busy: Vec<f64> = p0.ranks.iter().map(|x| x.total_s - x.wait_s).collect();
        let compute: Vec<f64> = p0.ranks.iter().map(|x| x.compute_s - x.io_s).collect();
        r.factors(&self.working_sets(d), &busy, &compute, p0.per_iteration_s)
    }

    /// `run(None)`, the replay at `k = 1`, and with a reuse term
    /// `run(Some(k))` at the factors it gives ([`Model::reuse_factors`]).
    pub(crate) fn settled(
        &self,
        d: &Dist,
        mut run: impl FnMut(Option<&[f64]>) -> Result<Prediction, ModelError>,
    ) -> Result<Prediction, ModelError> {
        let p0 = run(None)?;
        match self.reuse_factors(d, &p0) {
            Some(k) => run(Some(&k)),
            None => Ok(p0),
        }
    }

    /// `f` (work factors, [`Model::work_factors_into`]) times each rank's
    /// reuse factor `k`, on every level.
    pub(crate) fn apply_reuse(&self, f: &mut [f64], k: &[f64]) {
        let l = self.levels as usize;
        for (i, &k) in k.iter().enumerate() {
            for x in &mut f[i * l..(i + 1) * l] {
                *x *= k;
            }
        }
    }
}
