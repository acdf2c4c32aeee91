//! Stochastic predictions and the risk-aware search (Schopf and Berman on top of
//! the MHETA replay).
//!
//! The replay prices one iteration at the mean slowdowns
//! ([`crate::Model::with_load`]). Its spread follows Schopf and Berman's structural
//! model of SOR, `ExTime = Σ_its Max_p{Comp_p} + Comm`: each rank's own
//! busy time (everything but waiting) is split into the part the load
//! slows (computation and message overheads, scaled by the rank's
//! stochastic CPU slowdown: point × stochastic, table 2) and the part it
//! does not (file I/O); the iteration is the Max over the ranks (Clark's
//! rule, [`Stoch::max_corr`]; ranks on one node share its load and are
//! related, ρ = 1); what the replay adds beyond the busiest rank (waits for
//! messages and collectives) is a point value. The run is `iters` such
//! iterations under one load, whose slowdowns already average the load
//! over the run's window ([`crate::slowdown::LoadSpec::resolve`]).
//!
//! [`quantile_search`] minimises a quantile of the run time instead of its
//! mean: GBS on the cost lines at each rank's quantile slowdown, then a
//! line search between that plan and the mean-optimal one under the
//! stochastic prediction itself, among the plans whose mean is at most
//! [`MEAN_COST`] above the mean plan's and whose quantile is below the
//! mean plan's by more than [`QUANTILE_GAIN`]. Where none is, it returns
//! the mean plan and says why.

use crate::dist::Dist;
use crate::model::{Model, ModelError, Prediction};
use crate::search;
use crate::stoch::Stoch;

/// A stochastic prediction of one iteration.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct StochPrediction {
    /// The replay at the mean slowdowns.
    pub point: Prediction,
    /// The iteration's time, mean ± sd.
    pub per_iteration: Stoch,
}

impl StochPrediction {
    pub fn total(&self, iters: u64) -> Stoch {
        self.per_iteration.scale(iters as f64)
    }
}

/// Schopf and Berman's prediction of `d` under the model's load (module doc).
pub fn predict_stochastic(m: &Model, d: &Dist) -> Result<StochPrediction, ModelError> {
    let point = m.predict(d)?;
    let Some(load) = &m.load else {
        let t = point.per_iteration_s;
        return Ok(StochPrediction {
            point,
            per_iteration: Stoch::point(t),
        });
    };
    let mut busy: Vec<(Stoch, usize)> = Vec::new();
    for (i, r) in point.ranks.iter().enumerate() {
        let own = (r.total_s - r.wait_s).max(0.0);
        let slowed = (r.compute_s - r.io_s + r.overhead_s).clamp(0.0, own);
        let s = load.cpu[i];
        let rel = if s.mean > 0.0 { s.sd / s.mean } else { 0.0 };
        busy.push((Stoch::new(own, slowed * rel), load.node_of[i]));
    }
    let max_busy = busy.iter().map(|b| b.0.mean).fold(0.0, f64::max);
    let top = max_related(&busy);
    let t = point.per_iteration_s + (top.mean - max_busy).max(0.0);
    Ok(StochPrediction {
        point,
        per_iteration: Stoch::new(t, top.sd),
    })
}

/// The ±2σ band of `s` (a prediction of `d` under `m`'s load) clipped to
/// what the load can produce: the replay of `d` with every rank at the
/// least, and at the greatest, CPU slowdown its load allows
/// ([`crate::slowdown::Slowdowns::cpu_bounds`]). A run under a hog that
/// comes and goes is between dedicated and time-shared however wide the
/// spread of the mixture's average says it may be. Two evaluations more
/// than the prediction, so not inside searches.
pub fn range_within_load(
    m: &Model,
    d: &Dist,
    s: &StochPrediction,
) -> Result<(f64, f64), ModelError> {
    let (lo, hi) = s.per_iteration.range2();
    let Some(load) = &m.load else {
        return Ok((lo, hi));
    };
    let at = |pick: fn((f64, f64)) -> f64| -> Result<f64, ModelError> {
        let cpu = load
            .cpu_bounds
            .iter()
            .map(|&b| Stoch::point(pick(b)))
            .collect();
        Ok(m.clone()
            .with_load(load.with_cpu(cpu))
            .predict(d)?
            .per_iteration_s)
    };
    let (a, b) = (at(|b| b.0)?, at(|b| b.1)?);
    let (tlo, thi) = (a.min(b), a.max(b));
    Ok((lo.clamp(tlo, thi), hi.clamp(tlo, thi)))
}

/// Clark's Max over ranks, ranks on one node fully correlated: a node's
/// ranks fold with ρ = 1 first, then the nodes with ρ = 0.
fn max_related(xs: &[(Stoch, usize)]) -> Stoch {
    // Node ids are below 2p ([`crate::slowdown::Slowdowns::node_of`]).
    let mut nodes: Vec<Option<Stoch>> = vec![None; 2 * xs.len() + 1];
    for &(x, n) in xs {
        let slot = &mut nodes[n.min(2 * xs.len())];
        *slot = Some(match *slot {
            Some(acc) => acc.max_corr(x, 1.0),
            None => x,
        });
    }
    Stoch::max_of(nodes.into_iter().flatten()).unwrap_or(Stoch::ZERO)
}

/// The most a risk-aware plan may raise the mean iteration over the mean
/// plan's (relative): a plan that buys a lower tail with a dearer mean
/// than this is not offered.
pub const MEAN_COST: f64 = 0.03;

/// The least a risk-aware plan must lower the quantile below the mean
/// plan's (relative) to be offered instead of it.
pub const QUANTILE_GAIN: f64 = 0.01;

/// A plan and what it is predicted to take.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct PricedPlan {
    pub dist: Vec<u64>,
    pub per_iteration: Stoch,
    /// The objective's quantile of one iteration.
    pub quantile_s: f64,
}

/// The risk-aware search's answer: the mean-optimal and the
/// quantile-optimal plans, both priced at the quantile and the mean.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct RiskFound {
    pub quantile: f64,
    pub mean_plan: PricedPlan,
    pub quantile_plan: PricedPlan,
    /// Whether the plans differ.
    pub differ: bool,
    /// Why the quantile plan is the mean plan, when it is (empty
    /// otherwise).
    pub note: String,
    pub evaluations: u64,
}

fn plan(m: &Model, d: &Dist, q: f64) -> Result<PricedPlan, ModelError> {
    let s = predict_stochastic(m, d)?;
    Ok(PricedPlan {
        dist: d.0.clone(),
        per_iteration: s.per_iteration,
        quantile_s: s.per_iteration.quantile(q),
    })
}

/// The distribution `t` of the way from `a` to `b`, summing to N.
fn between(a: &Dist, b: &Dist, t: f64) -> Dist {
    let w: Vec<f64> =
        a.0.iter()
            .zip(&b.0)
            .map(|(&x, &y)| (1.0 - t) * x as f64 + t * y as f64)
            .collect();
    Dist::proportional(&w, a.total())
}

/// Minimise the `q` quantile of the iteration time under the model's load
/// (module doc). `m` carries the load; without one both plans are GBS's.
pub fn quantile_search(m: &Model, q: f64) -> Result<RiskFound, ModelError> {
    let mean = search::gbs(m)?;
    let dm = Dist(mean.dist.clone());
    let mut evals = mean.evaluations;
    let mean_plan = plan(m, &dm, q)?;
    let mut best = (mean_plan.quantile_s, dm.clone());
    // Only a plan that lowers the quantile by QUANTILE_GAIN at a mean at
    // most MEAN_COST dearer is offered.
    let bar = mean_plan.quantile_s * (1.0 - QUANTILE_GAIN);
    let dearest = mean_plan.per_iteration.mean * (1.0 + MEAN_COST);
    let mut lower_tail = false;
    if let Some(load) = &m.load {
        let z = crate::stoch::norm_quantile(q);
        let mut at_q = load.clone();
        for s in &mut at_q.cpu {
            *s = Stoch::point(s.mean + z * s.sd);
        }
        let mq = m.clone().with_load(at_q);
        let g = search::gbs(&mq)?;
        evals += g.evaluations;
        let dq = Dist(g.dist);
        for k in 0..=20 {
            let d = between(&dm, &dq, k as f64 / 20.0);
            if d.check(m.ranks(), m.rows()).is_err() {
                continue;
            }
            let pd = match plan(m, &d, q) {
                Ok(p) => p,
                Err(ModelError::TooSmall { .. }) => continue,
                Err(e) => return Err(e),
            };
            evals += 1;
            lower_tail |= pd.quantile_s < bar;
            if pd.quantile_s < bar && pd.per_iteration.mean <= dearest && pd.quantile_s < best.0 {
                best = (pd.quantile_s, d);
            }
        }
    }
    let quantile_plan = plan(m, &best.1, q)?;
    let differ = mean_plan.dist != quantile_plan.dist;
    let pct = |x: f64| 100.0 * x;
    let note = match (differ, m.load.is_some(), lower_tail) {
        (true, _, _) => String::new(),
        (false, false, _) => "no load: the quantile plan is the mean plan".into(),
        (false, true, false) => format!(
            "no plan lowers the q{:.0} by {:.0}% or more: the mean plan is the quantile plan",
            pct(q),
            pct(QUANTILE_GAIN)
        ),
        (false, true, true) => format!(
            "every plan that lowers the q{:.0} by {:.0}% or more raises the mean by more than {:.0}%: \
             the mean plan is the quantile plan",
            pct(q),
            pct(QUANTILE_GAIN),
            pct(MEAN_COST)
        ),
    };
    Ok(RiskFound {
        quantile: q,
        differ,
        note,
        mean_plan,
        quantile_plan,
        evaluations: evals,
    })
}
