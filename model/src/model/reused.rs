//! The model's side of the reuse term ([`crate::reuse`]): its curves
//! from the profile, each rank's working set (its machine's bytes of
//! arrays), and the second replay at
//! the factors the first one's period gives.

use super::{Model, ModelError, Prediction, Program, Step, replay};
use crate::dist::Dist;
use crate::reuse::Sweep;
use mheta_profile::ClusterProfile;
use mheta_trace::{ArrayDecl, StageAccess};

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

    /// Each rank's `κ_i`, how much of the reuse probe's change its rows
    /// follow (eq. R4, fitted from its row-cost curve's knots where they
    /// kept their periods; 1 otherwise); None without a reuse term.
    pub fn reuse_sensitivity(&self) -> Option<Vec<f64>> {
        let r = self.reuse.as_ref()?;
        Some((0..self.ranks()).map(|i| r.sensitivity(i)).collect())
    }

    /// The reuse term of this model's trace on `prof`'s nodes: None for a
    /// run timed by the clock, an app that declares no arrays, or a
    /// profile without `reuse_by`. Its ages as recorded come from a replay
    /// of the recorded distribution, so this runs once the model is
    /// otherwise complete.
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
        if curves.iter().all(Option::is_none) {
            return None;
        }
        let t = self.as_recorded()?;
        let access = self.app.stage_access.as_deref();
        let sweeps = (self.programs.iter().enumerate())
            .map(|(i, p)| sweeps(p, access, &self.file_shares(i)))
            .collect();
        let machine = self.machines(prof);
        let ws = self.working_sets(&Dist(self.app.dist.clone()), &machine);
        Some(Reuse::new(curves, ws, sweeps, t, machine))
    }

    /// The iteration of the recorded distribution replayed without the
    /// reuse term, from which its ages as recorded come.
    fn as_recorded(&self) -> Option<f64> {
        let d = Dist(self.app.dist.clone());
        let t = (replay::Replay::new(self, &d, None, self.laps()).ok()?.run())
            .ok()?
            .per_iteration_s;
        (t.is_finite() && t > 0.0).then_some(t)
    }

    /// The reuse term's ages as recorded again, after a change to what
    /// the replay prices (a load): every `k_i` stays 1 at the recorded
    /// distribution.
    pub(super) fn rebase_reuse(&mut self) {
        let Some(mut r) = self.reuse.take() else {
            return;
        };
        if let Some(t) = self.as_recorded() {
            r.rebase(t);
            self.reuse = Some(r);
        }
    }

    /// Each rank's machine, an index: the profile's `machine` where every
    /// rank has one (the ranks of one kernel, whatever host names they
    /// give), else its host.
    fn machines(&self, prof: &ClusterProfile) -> Vec<usize> {
        let p = self.ranks();
        let mut of = vec![None; p];
        for n in &prof.nodes {
            if let (Some(x), Some(m)) = (of.get_mut(n.rank as usize), n.machine) {
                *x = Some(m as usize);
            }
        }
        match of.iter().copied().collect::<Option<Vec<usize>>>() {
            Some(m) if m.iter().all(|&x| x < p) => m,
            _ => self.net.host.clone(),
        }
    }

    /// Each rank's working set under `d` ([`crate::reuse`]'s `w_i`): the
    /// bytes of arrays of every in-core rank of its machine (`machine`:
    /// each rank's index), its own and its machine-mates' (a cache the
    /// machine's cores share holds them all, and a rank's sweep evicts
    /// the others' rows as its own; the probe's rank sweeps alone). A rank's bytes are its rows times the bytes a row
    /// of every array (a coarse level's halved once a level), a per-work
    /// array's by the work of its rows. NaN for a rank with an array out
    /// of core, whose sweeps work on pieces just read, whatever the
    /// iteration's length (no reuse term for it:
    /// [`crate::reuse::Reuse::k_from`]); its pieces are not counted on its
    /// host.
    fn working_sets(&self, d: &Dist, machine: &[usize]) -> Vec<f64> {
        let off = d.offsets();
        let all = self.bytes_a_row(|_| true);
        let own: Vec<f64> = (0..self.ranks())
            .map(|i| {
                let in_core = match &self.io {
                    Some(io) if !io.unbudgeted(i) => (io.plan(i, off[i], d.0[i]))
                        .is_some_and(|p| p.out_of_core.iter().all(|&o| !o)),
                    _ => true,
                };
                if in_core {
                    self.bytes_of(d, &off, i, all)
                } else {
                    f64::NAN
                }
            })
            .collect();
        on_machine(&own, machine)
    }

    /// The bytes a row and a unit of work of the arrays `pick` takes (a
    /// coarse level's halved once a level).
    fn bytes_a_row(&self, pick: impl Fn(&ArrayDecl) -> bool) -> (f64, f64) {
        let (mut row_b, mut work_b) = (0.0, 0.0);
        for a in self.app.arrays.iter().filter(|a| pick(a)) {
            let b = a.bytes_per_row as f64 * 0.5f64.powi(a.level.unwrap_or(0) as i32);
            if a.per_work {
                work_b += b;
            } else {
                row_b += b;
            }
        }
        (row_b, work_b)
    }

    /// Rank `i`'s bytes under `d` (its first row at `off[i]`) of arrays
    /// of `(row_b, work_b)` bytes a row and a unit of work.
    fn bytes_of(&self, d: &Dist, off: &[u64], i: usize, (row_b, work_b): (f64, f64)) -> f64 {
        let work = match &self.work_prefix {
            Some(w) if work_b > 0.0 => (w[(off[i] + d.0[i]) as usize] - w[off[i] as usize]) as f64,
            _ => 0.0,
        };
        d.0[i] as f64 * row_b + work * work_b
    }

    /// Per rank, the share of its bytes as recorded in the arrays kept
    /// in each file (`ArrayDecl::file`): what a stage that names the file
    /// in `stage_access` sweeps.
    fn file_shares(&self, i: usize) -> Vec<(String, f64)> {
        let d = Dist(self.app.dist.clone());
        let off = d.offsets();
        let all = self.bytes_of(&d, &off, i, self.bytes_a_row(|_| true));
        let mut files: Vec<&str> = self
            .app
            .arrays
            .iter()
            .filter_map(|a| a.file.as_deref())
            .collect();
        files.sort_unstable();
        files.dedup();
        (files.into_iter())
            .map(|f| {
                let of_f = self.bytes_a_row(|a| a.file.as_deref() == Some(f));
                let b = self.bytes_of(&d, &off, i, of_f);
                (f.to_string(), if all > 0.0 { b / all } else { 1.0 })
            })
            .collect()
    }

    /// Every rank's reuse factor `k_i` under `d`, from its replay at
    /// `k = 1` ([`crate::reuse`], eqs. R1-R2); None without a reuse term
    /// or where every factor is 1.
    pub(crate) fn reuse_factors(&self, d: &Dist, p0: &Prediction) -> Option<Vec<f64>> {
        let r = self.reuse.as_ref()?;
        let x = &p0.ranks;
        let busy_compute = |i: usize| (x[i].total_s - x[i].wait_s, x[i].compute_s - x[i].io_s);
        // With row-cost curves that kept their runs' periods, each rank's
        // cost a row is the curve's at its rows under `d`, read from one
        // or two knots each measured at its own period: the term prices
        // the change from each (eq. R5).
        let t_ref: Vec<Option<[(f64, f64); 2]>> = (self.row_curves.iter().enumerate())
            .map(|(i, c)| c.knot_periods(d.0[i] as f64))
            .collect();
        r.factors(
            &self.working_sets(d, &r.machine),
            busy_compute,
            p0.per_iteration_s,
            &t_ref,
        )
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

/// Each rank's `own` bytes summed over the finite ones of its machine
/// (`machine`: each rank's index); NaN stays NaN.
fn on_machine(own: &[f64], machine: &[usize]) -> Vec<f64> {
    let n = machine.iter().copied().max().map_or(0, |h| h + 1);
    let mut sum = vec![0.0; n];
    for (&w, &h) in own.iter().zip(machine) {
        if w.is_finite() {
            sum[h] += w;
        }
    }
    (own.iter().zip(machine))
        .map(|(&w, &h)| if w.is_finite() { sum[h] } else { w })
        .collect()
}

/// Eq. R3: the stages of `p` that sweep declared arrays, as at most
/// [`MAX_SWEEPS`] groups. A stage's arrays are the ones the app's
/// `stage_access` names for it; their age at its beginning is the time
/// since the beginning of the last stage before it (cyclically: the
/// previous iteration's) that swept one of them, the mean over its
/// arrays, as a fraction of the iteration (so a stencil's one stage is
/// a whole iteration old, each of NPB CG's 25 matrix-vector products a
/// 25th, and a multigrid smoother's second pass on a level a pass old).
/// A stage sweeps the share of the rank's bytes that its arrays hold
/// (`files`: each file's share; all of them for a file no array names).
/// A stage that sweeps no declared array costs as recorded. Without
/// `stage_access` (or stage markers) the rank's computation is one sweep
/// of all its bytes an iteration.
pub(super) fn sweeps(
    p: &Program,
    access: Option<&[Vec<StageAccess>]>,
    files: &[(String, f64)],
) -> Vec<Sweep> {
    let mut c = vec![0.0];
    for s in &p.steps {
        match s {
            Step::Compute {
                s, scaled: true, ..
            } => *c.last_mut().expect("one") += s,
            Step::StageEnd(_) => c.push(0.0),
            _ => {}
        }
    }
    let total: f64 = c.iter().sum();
    let b = &p.stage_begin_s;
    let n = p.stage_end_s.len();
    if total <= 0.0 {
        return Vec::new();
    }
    let Some(access) = access.filter(|a| n > 0 && a.len() >= n && b.len() >= n) else {
        return vec![Sweep {
            share: 1.0,
            frac: 1.0,
            bytes: 1.0,
        }];
    };
    let t = p.measured_s.max(b[n - 1]);
    // Two passes over the stages, the second an iteration later: when a
    // stage of the second is reached, `last` holds when each array's
    // last sweep before it began (its own, an iteration ago, if no
    // other stage sweeps the array).
    let mut last: Vec<(&str, f64)> = Vec::new();
    let mut found = Vec::new();
    for (pass, s) in (0..2).flat_map(|pass| (0..n).map(move |s| (pass, s))) {
        let now = b[s] + pass as f64 * t;
        let share = c[s] / total;
        if pass == 1 && !access[s].is_empty() && share > 0.0 {
            let age: f64 = (access[s].iter())
                .map(|a| {
                    last.iter()
                        .find(|(f, _)| *f == a.file)
                        .map_or(t, |&(_, at)| now - at)
                })
                .map(|x| x.max(0.0))
                .sum();
            let frac = age / access[s].len() as f64 / t;
            let mut named: Vec<&str> = access[s].iter().map(|a| a.file.as_str()).collect();
            named.sort_unstable();
            named.dedup();
            let bytes = (named.iter())
                .map(|f| files.iter().find(|(g, _)| g == f).map_or(1.0, |x| x.1))
                .sum::<f64>()
                .min(1.0);
            found.push(Sweep { share, frac, bytes });
        }
        for a in &access[s] {
            match last.iter_mut().find(|(f, _)| *f == a.file) {
                Some(x) => x.1 = now,
                None => last.push((&a.file, now)),
            }
        }
    }
    group(found)
}

/// At most this many groups of sweeps a rank: a rank's `k_i` reads the
/// curve once a group.
pub(super) const MAX_SWEEPS: usize = 4;

/// `sweeps` as at most [`MAX_SWEEPS`] groups of neighbours by age, each
/// at the share-weighted mean of its own.
fn group(mut sweeps: Vec<Sweep>) -> Vec<Sweep> {
    sweeps.sort_by(|a, b| a.frac.total_cmp(&b.frac));
    let per = sweeps.len().div_ceil(MAX_SWEEPS).max(1);
    (sweeps.chunks(per))
        .map(|g| {
            let share: f64 = g.iter().map(|s| s.share).sum();
            let mean = |f: fn(&Sweep) -> f64| g.iter().map(|s| s.share * f(s)).sum::<f64>() / share;
            Sweep {
                share,
                frac: mean(|s| s.frac),
                bytes: mean(|s| s.bytes),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::on_machine;

    /// A rank's working set is its machine's in-core bytes; a rank out
    /// of core keeps no term and adds nothing to its machine-mates'.
    #[test]
    fn a_rank_sweeps_its_machines_bytes() {
        let got = on_machine(&[1.0, 2.0, f64::NAN, 4.0, 8.0], &[0, 0, 0, 1, 2]);
        assert_eq!(&got[..2], &[3.0, 3.0]);
        assert!(got[2].is_nan());
        assert_eq!(&got[3..], &[4.0, 8.0]);
    }
}
