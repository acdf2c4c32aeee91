//! Searching GEN_BLOCK distributions with the model. Every strategy
//! reports the full model evaluations it spent.
//!
//! - [`block`]: equal rows (the paper's `Blk`).
//! - [`balanced`]: rows proportional to each rank's measured speed (`Bal`).
//! - [`gbs`]: the generalized binary search. Our reading of GBS (the
//!   companion paper is not in our seeds): bracket the target iteration
//!   time T (regula falsi); for each T every rank takes the most rows it
//!   can finish within T by its own cost curve ([`Model::rank_cost`]:
//!   computation, I/O under the out-of-core rule, fixed costs; no model
//!   evaluation); the smallest T whose counts cover N gives a
//!   distribution, which [`refine`] polishes under the full model, one
//!   evaluation per move that its receiver's cost line does not rule out.
//! - [`exhaustive`]: every distribution on a grid of `g` rows, small P.
//! - [`annealing`], [`genetic`], [`random`]: stochastic searches with a
//!   budget of evaluations and a seed.
//! - [`spectrum`]: the paper's figure 8 path Blk → I-C → I-C/Bal → Bal →
//!   Blk and its corners, widened around Block where the corners meet.

use crate::dist::Dist;
use crate::model::{Evaluator, Model, ModelError};
use mheta_base::Total;

/// The outcome of a search.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Found {
    pub strategy: String,
    pub dist: Vec<u64>,
    pub predicted_s: f64,
    /// Full model evaluations spent.
    pub evaluations: u64,
    /// Cheap per-rank cost-curve steps (GBS bisection only).
    pub bisection_steps: u64,
}

/// Every strategy `mheta search --strategy` offers.
pub const STRATEGIES: &[&str] = &[
    "gbs",
    "block",
    "balanced",
    "exhaustive",
    "annealing",
    "genetic",
    "random",
];

/// Model time of `d`; infeasible distributions (a rank that cannot hold a
/// row) cost infinity, so searches step around them.
fn cost(ev: &Evaluator, d: &Dist) -> Result<f64, ModelError> {
    match ev.predict(d) {
        Ok(p) => Ok(p.per_iteration_s),
        Err(ModelError::TooSmall { .. }) => Ok(f64::INFINITY),
        Err(e) => Err(e),
    }
}

fn found(
    strategy: &str,
    ev: &Evaluator,
    d: Dist,
    evaluations: u64,
    bisection_steps: u64,
) -> Result<Found, ModelError> {
    let predicted_s = cost(ev, &d)?;
    Ok(Found {
        strategy: strategy.into(),
        dist: d.0,
        predicted_s,
        evaluations: evaluations + 1,
        bisection_steps,
    })
}

/// Equal rows.
pub fn block(m: &Model) -> Result<Found, ModelError> {
    found(
        "block",
        &m.evaluator(),
        Dist::block(m.ranks(), m.rows()),
        0,
        0,
    )
}

/// Each rank's measured speed, rows per second of its scaled work.
fn speeds(m: &Model) -> Vec<f64> {
    m.per_row_s()
        .iter()
        .map(|&t| if t > 0.0 { 1.0 / t } else { 0.0 })
        .collect()
}

/// Rows proportional to measured speed (rows per second of scaled work).
pub fn balanced_dist(m: &Model) -> Dist {
    Dist::proportional(&speeds(m), m.rows())
}

/// Rows proportional to measured speed.
pub fn balanced(m: &Model) -> Result<Found, ModelError> {
    found("balanced", &m.evaluator(), balanced_dist(m), 0, 0)
}

/// Run a strategy by name (see [`STRATEGIES`]); `budget` bounds the
/// stochastic ones, `seed` seeds them.
pub fn by_name(m: &Model, name: &str, budget: u64, seed: u64) -> Result<Found, String> {
    let e = |x: ModelError| x.to_string();
    match name {
        "gbs" => gbs(m).map_err(e),
        "block" => block(m).map_err(e),
        "balanced" => balanced(m).map_err(e),
        "exhaustive" => {
            let g = exhaustive_grain(m.ranks(), m.rows(), budget.max(1));
            exhaustive(m, g, budget.max(1))
        }
        "annealing" => annealing(m, budget, seed).map_err(e),
        "genetic" => genetic(m, budget, seed).map_err(e),
        "random" => random(m, budget, seed).map_err(e),
        other => Err(format!(
            "unknown strategy {other:?} (one of {})",
            STRATEGIES.join(", ")
        )),
    }
}

/// How close [`gbs`] brackets the iteration time, relative.
const RESOLUTION: f64 = 1e-4;

/// Largest rows of rank i within time t, knowing that it lies in
/// [lo, hi]: its cost curve is monotone in the rows, so a bisection over
/// that bracket (0 when even no rows fit).
fn within(ev: &Evaluator, i: usize, t: f64, mut lo: u64, mut hi: u64) -> u64 {
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if ev.rank_cost(i, mid) <= t {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    lo
}

/// [`within`] without a bracket: gallop from `g` (the rank's recorded
/// rows, or its last answer), so that the probes stay near the answer
/// instead of visiting all of [0, N] (a plan for many more rows than a
/// rank can hold is the costly kind).
fn around(ev: &Evaluator, i: usize, t: f64, g: u64) -> u64 {
    let n = ev.model().rows();
    let g = g.clamp(1, n.max(1));
    if ev.rank_cost(i, g) <= t {
        let mut lo = g;
        loop {
            if lo >= n {
                return n;
            }
            let next = lo.saturating_mul(2).min(n);
            if ev.rank_cost(i, next) <= t {
                lo = next;
            } else {
                return within(ev, i, t, lo, next - 1);
            }
        }
    }
    let mut hi = g;
    loop {
        let next = hi / 2;
        if next == 0 || ev.rank_cost(i, next) <= t {
            return within(ev, i, t, next, hi - 1);
        }
        hi = next;
    }
}

/// The generalized binary search: bracket the iteration time until the
/// rows each rank finishes within it sum to N, shed the excess, then
/// [`refine`] under the full model.
pub fn gbs(m: &Model) -> Result<Found, ModelError> {
    gbs_on(m, plan_threads())
}

/// [`gbs`] with the moves of each round of [`refine`] evaluated
/// `threads` at a time, each on a thread of its own (from
/// [`PARALLEL_FROM`] ranks): the same answer, sooner where cores are
/// free; the evaluations it reports include those a sequential search
/// would not have reached in a round.
pub fn gbs_on(m: &Model, threads: usize) -> Result<Found, ModelError> {
    let p = m.ranks();
    let n = m.rows();
    let ev = m.evaluator();
    let block_t = (0..p)
        .map(|i| ev.rank_cost(i, n.div_ceil(p as u64)))
        .fold(0.0f64, f64::max);
    let mut hi = if block_t.is_finite() {
        block_t
    } else {
        (0..p)
            .map(|i| ev.rank_cost(i, n))
            .filter(|t| t.is_finite())
            .fold(0.0f64, f64::max)
    };
    // Make sure hi covers N (infeasible ranks count 0 rows).
    let mut steps = 0u64;
    let mut rows_hi: Vec<u64> = (0..p).map(|i| around(&ev, i, hi, m.app.dist[i])).collect();
    while rows_hi.iter().sum::<u64>() < n && steps < 60 {
        hi *= 2.0;
        steps += 1;
        rows_hi = (0..p)
            .map(|i| around(&ev, i, hi, rows_hi[i].max(m.app.dist[i])))
            .collect();
    }
    // Bisection over the time. Each rank's rows at a time between lo and
    // hi lie between its rows at lo and at hi, so each step searches only
    // that bracket, which narrows as the time does: a few cost
    // evaluations per rank and step instead of a search over all N rows.
    // The step is regula falsi on the rows over N, with the Illinois
    // rule (the end that stays twice running has its excess halved), and
    // a plain halving after a step that left more than half the bracket:
    // the rows grow about linearly in the time, so this brackets T in
    // fewer steps than halving alone, each of which asks every rank.
    // With exactly N rows at hi the rows are those of every shorter time
    // that covers N, so the search ends there.
    let mut lo = 0.0f64;
    let mut rows_lo = vec![0u64; p];
    let over = |r: &[u64]| r.iter().sum::<u64>() as f64 - n as f64;
    let (mut over_lo, mut over_hi) = (over(&rows_lo), over(&rows_hi));
    let (mut kept, mut halve) = (0i8, false);
    while hi - lo > RESOLUTION * hi && over_hi > 0.0 && steps < 200 {
        let width = hi - lo;
        let mid = if halve || over_hi - over_lo <= 0.0 {
            0.5 * (lo + hi)
        } else {
            // Never at an end, and at least a thousandth inside.
            let x = (lo * over_hi - hi * over_lo) / (over_hi - over_lo);
            x.clamp(lo + 1e-3 * width, hi - 1e-3 * width)
        };
        steps += 1;
        let rows: Vec<u64> = (0..p)
            .map(|i| within(&ev, i, mid, rows_lo[i], rows_hi[i]))
            .collect();
        if rows.iter().sum::<u64>() >= n {
            (hi, over_hi) = (mid, over(&rows));
            rows_hi = rows;
            if kept == -1 {
                over_lo *= 0.5;
            }
            kept = -1;
        } else {
            (lo, over_lo) = (mid, over(&rows));
            rows_lo = rows;
            if kept == 1 {
                over_hi *= 0.5;
            }
            kept = 1;
        }
        halve = hi - lo > 0.5 * width;
    }
    let s = shed(&ev, rows_hi);
    let (d, e, predicted) = refine_with(&ev, Dist(s), threads.max(1), m.work_is_cost_line())?;
    match predicted {
        // The refinement's last evaluation is of `d`.
        Some(predicted_s) => Ok(Found {
            strategy: "gbs".into(),
            dist: d.0,
            predicted_s,
            evaluations: e,
            bisection_steps: steps,
        }),
        None => found("gbs", &ev, d, e, steps),
    }
}

/// How far a receiver's bound in [`refine_with`] may exceed the current
/// iteration time before its move is left out, relative: the replay and
/// the cost line add the same costs in different orders.
const BOUND_ROUNDING: f64 = 1e-6;

/// Ranks from which [`gbs_on`] evaluates moves on several threads. Below,
/// an evaluation is too short for a thread to pay: on this project's
/// 2-core VM two threads took 10-43% longer than one at 256 ranks, and
/// from -2 to 27% less from 1024 to 16384 (`cargo bench -p mheta-model
/// --bench model`, the scale table; docs/design/model.md).
pub const PARALLEL_FROM: usize = 1024;

/// The threads [`gbs`] and [`refine`] evaluate on: `MHETA_PLAN_THREADS`,
/// else 1. `--auto` plans on rank 0 while the job's other ranks wait,
/// often on the same node's cores, so more is for the user to give;
/// `mheta search` takes `--threads` (default: every core).
pub fn plan_threads() -> usize {
    let Ok(v) = std::env::var("MHETA_PLAN_THREADS") else {
        return 1;
    };
    match v.trim().parse::<usize>() {
        Ok(n) if n >= 1 => n,
        _ => {
            eprintln!(
                "mheta: MHETA_PLAN_THREADS={v:?} is not a count of threads (1 or more); planning on one thread"
            );
            1
        }
    }
}

/// Shed the rows over N from the ranks that would finish last.
fn shed(ev: &Evaluator, mut s: Vec<u64>) -> Vec<u64> {
    let (p, n) = (ev.model().ranks(), ev.model().rows());
    let mut excess = s.iter().sum::<u64>().saturating_sub(n);
    // The ranks with rows by their cost at them: the costliest first, of
    // equal ones the last by rank; a rank's cost is read again only when
    // it sheds.
    let mut by_cost: std::collections::BinaryHeap<(Total, usize)> = (0..p)
        .filter(|&i| s[i] > 0)
        .map(|i| (Total(ev.rank_cost(i, s[i])), i))
        .collect();
    while excess > 0 {
        let Some((_, i)) = by_cost.pop() else {
            break;
        };
        let k = excess.min(s[i]).min((excess / p as u64).max(1));
        s[i] -= k;
        excess -= k;
        if s[i] > 0 {
            by_cost.push((Total(ev.rank_cost(i, s[i])), i));
        }
    }
    s
}

/// Local search under the full model, from `d`: move `step` rows from one
/// of the busiest ranks (busy = finish minus waiting: a reduction ends the
/// iteration at the same time everywhere, so the bottleneck is the rank
/// that waited least) to one of the ranks that would be least busy after
/// taking them (by their cost curves, no evaluation); take the first move
/// that lowers the predicted time, else halve the step. One evaluation per
/// tried move; beyond 16 ranks the donors are the busiest of the ranks
/// whose work lies on the critical path, which one more evaluation per
/// round finds ([`Evaluator::critical`]). Returns the result and the
/// evaluations.
pub fn refine(m: &Model, d: Dist) -> Result<(Dist, u64), ModelError> {
    refine_with(&m.evaluator(), d, plan_threads(), m.work_is_cost_line()).map(|(d, e, _)| (d, e))
}

/// [`refine`] with the evaluator given; also the predicted time of the
/// result (None where `d` cannot be evaluated: a rank too small).
/// `bounded`: leave out the moves whose receiver alone would end the
/// iteration no sooner (below; only where [`Model::work_is_cost_line`]).
fn refine_with(
    ev: &Evaluator,
    mut d: Dist,
    threads: usize,
    bounded: bool,
) -> Result<(Dist, u64, Option<f64>), ModelError> {
    let m = ev.model();
    let p = m.ranks();
    let mut evals = 1u64;
    let mut cur = match ev.predict(&d) {
        Ok(c) => c,
        Err(ModelError::TooSmall { .. }) => return Ok((d, evals, None)),
        Err(e) => return Err(e),
    };
    // The evaluators of the other threads, with the replay compiled
    // above: where an evaluation is too short to pay for a thread, none.
    let mut forks: Vec<Evaluator> = if p >= PARALLEL_FROM {
        (1..threads).map(|_| ev.fork()).collect()
    } else {
        Vec::new()
    };
    let mut step = (m.rows() / (8 * p as u64)).max(1);
    // Up to 16 ranks every pair of the eight busiest and eight cheapest
    // is tried; beyond, three donors and four receivers keep a search at
    // P = 1024 within a few hundred evaluations.
    let (donors, receivers) = if p <= 16 { (8, 8) } else { (3, 4) };
    let mut path: Option<(Vec<u64>, Option<Vec<bool>>)> = None;
    // Each rank's cost line at its rows, and at its rows plus the k of
    // `plus.0` (0: none yet): read again only for the two ranks a move
    // changes.
    let mut base: Vec<f64> = (0..p).map(|j| ev.rank_cost(j, d.0[j])).collect();
    let mut plus: (u64, Vec<f64>) = (0, Vec::new());
    // A move can only lower the iteration below `cur` if its receiver,
    // busy for its own work plus the rows it takes, stays below it (the
    // iteration is the last rank's finish, and no rank finishes before its
    // busy time ends): a move that fails this bound is not evaluated, and
    // a round where no rank passes it is not run. The result is the one
    // evaluating every move gives. Where a rank's replayed work is not its
    // cost line (the reuse term, rows of unequal work, coarse levels) the
    // bound does not hold and every move is evaluated (`bounded` false).
    loop {
        let busy = |i: usize| cur.ranks[i].total_s - cur.ranks[i].wait_s;
        let bar = if bounded {
            cur.per_iteration_s * (1.0 + BOUND_ROUNDING)
        } else {
            f64::INFINITY
        };
        if bounded {
            // The fewest rows a donor of this round gives.
            let k = (0..p)
                .filter(|&i| d.0[i] > 0)
                .map(|i| d.0[i])
                .fold(step, u64::min);
            if plus.0 != k {
                plus = (k, (0..p).map(|j| ev.rank_cost(j, d.0[j] + k)).collect());
            }
            if !(0..p).any(|j| busy(j) + (plus.1[j] - base[j]) < bar) {
                match step {
                    1 => return Ok((d, evals, Some(cur.per_iteration_s))),
                    _ => {
                        step /= 2;
                        continue;
                    }
                }
            }
        }
        // Beyond 16 ranks only a rank whose work lies on the critical path
        // is a donor: less work off the path leaves the iteration as it
        // is ([`Evaluator::critical`]). With none, no move can help.
        // A round after one that moved nothing (a smaller step) has the
        // same distribution, so the same path.
        let critical = match &path {
            _ if p <= 16 => None,
            Some((at, c)) if *at == d.0 => c.clone(),
            _ => {
                let c = ev.critical(&d)?;
                evals += u64::from(c.is_some());
                path = Some((d.0.clone(), c.clone()));
                c
            }
        };
        let mut order: Vec<usize> = (0..p)
            .filter(|&i| d.0[i] > 0 && critical.as_ref().is_none_or(|c| c[i]))
            .collect();
        if order.is_empty() && critical.is_some() {
            return Ok((d, evals, Some(cur.per_iteration_s)));
        }
        // The busiest `donors`, busiest first, of equal ones the lower
        // rank first (as a stable sort of all would give).
        let by = |a: &usize, b: &usize| busy(*b).total_cmp(&busy(*a)).then(a.cmp(b));
        if order.len() > donors {
            order.select_nth_unstable_by(donors, by);
            order.truncate(donors);
        }
        order.sort_by(by);
        let mut improved = None;
        // The moves to try, in order: evaluated as soon as there is one
        // for each evaluator (this one and the forks).
        let mut pending: Vec<(usize, usize, u64)> = Vec::new();
        // The ranks least busy after taking k rows, by their cost curves:
        // the same list for every donor of this round that gives k
        // (smallest first, ties by rank), one more than needed so that
        // the donor itself can be left out.
        let mut cheapest: Option<(u64, Vec<(f64, usize)>)> = None;
        for &from in order.iter().take(donors) {
            let k = step.min(d.0[from]);
            if cheapest.as_ref().is_none_or(|c| c.0 != k) {
                if plus.0 != k {
                    plus = (k, (0..p).map(|j| ev.rank_cost(j, d.0[j] + k)).collect());
                }
                let mut all: Vec<(f64, usize)> = (0..p)
                    .map(|j| (busy(j) + (plus.1[j] - base[j]), j))
                    .filter(|x| x.0.is_finite() && x.0 < bar)
                    .collect();
                let by =
                    |x: &(f64, usize), y: &(f64, usize)| x.0.total_cmp(&y.0).then(x.1.cmp(&y.1));
                if all.len() > receivers + 1 {
                    all.select_nth_unstable_by(receivers, by);
                    all.truncate(receivers + 1);
                }
                all.sort_by(by);
                cheapest = Some((k, all));
            }
            let after = cheapest.as_ref().map_or(&[][..], |c| &c.1[..]);
            for &(_, to) in after.iter().filter(|x| x.1 != from).take(receivers) {
                pending.push((from, to, k));
                if pending.len() > forks.len() {
                    improved = first_better(ev, &mut forks, &d, &pending, cur.per_iteration_s)?;
                    evals += pending.len() as u64;
                    pending.clear();
                    if improved.is_some() {
                        break;
                    }
                }
            }
            if improved.is_some() {
                break;
            }
        }
        if improved.is_none() && !pending.is_empty() {
            improved = first_better(ev, &mut forks, &d, &pending, cur.per_iteration_s)?;
            evals += pending.len() as u64;
        }
        match improved {
            Some((t, pr)) => {
                for j in (0..p).filter(|&j| t.0[j] != d.0[j]) {
                    base[j] = ev.rank_cost(j, t.0[j]);
                    if plus.0 > 0 {
                        plus.1[j] = ev.rank_cost(j, t.0[j] + plus.0);
                    }
                }
                d = t;
                cur = pr;
            }
            None if step > 1 => step /= 2,
            None => return Ok((d, evals, Some(cur.per_iteration_s))),
        }
    }
}

/// The first of `tries` (k rows from one rank to another) that lowers the
/// predicted time below `cur`, with its prediction: all of them evaluated
/// at once, the first on this thread and each other on a thread of its own
/// with one of `forks`, then taken in order, so that the answer is the one
/// trying them one by one gives.
fn first_better(
    ev: &Evaluator,
    forks: &mut [Evaluator],
    d: &Dist,
    tries: &[(usize, usize, u64)],
    cur: f64,
) -> Result<Option<(Dist, crate::model::Prediction)>, ModelError> {
    let moved: Vec<Dist> = tries
        .iter()
        .map(|&(from, to, k)| {
            let mut t = d.clone();
            t.0[from] -= k;
            t.0[to] += k;
            t
        })
        .collect();
    let results = match &moved[..] {
        [one] => vec![ev.predict(one)],
        [first, rest @ ..] => std::thread::scope(|s| {
            let others: Vec<_> = (forks.iter_mut().zip(rest))
                .map(|(f, t)| s.spawn(move || f.predict(t)))
                .collect();
            let mut out = vec![ev.predict(first)];
            out.extend(
                others
                    .into_iter()
                    .map(|h| h.join().expect("a search thread")),
            );
            out
        }),
        [] => Vec::new(),
    };
    for (t, r) in moved.into_iter().zip(results) {
        match r {
            Ok(pr) if pr.per_iteration_s < cur * (1.0 - 1e-9) => return Ok(Some((t, pr))),
            Ok(_) | Err(ModelError::TooSmall { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(None)
}

/// The grid `g` for which an exhaustive search of P ranks fits `limit`
/// distributions.
pub fn exhaustive_grain(p: usize, n: u64, limit: u64) -> u64 {
    let count = |g: u64| -> f64 {
        let u = n / g;
        let mut c = 1.0f64;
        for k in 1..p {
            c = c * (u + k as u64) as f64 / k as f64;
        }
        c
    };
    let mut g = 1;
    while count(g) > limit as f64 && g < n {
        g *= 2;
    }
    g
}

/// Every distribution whose rows are multiples of `g` (the last rank takes
/// the remainder); refuses more than `limit` candidates.
pub fn exhaustive(m: &Model, g: u64, limit: u64) -> Result<Found, String> {
    let p = m.ranks();
    let n = m.rows();
    let g = g.max(1);
    let units = n / g;
    // C(units + p - 1, p - 1) candidates.
    let mut count: f64 = 1.0;
    for k in 1..p {
        count = count * (units + k as u64) as f64 / k as f64;
    }
    if count > limit as f64 {
        return Err(format!(
            "exhaustive search over {count:.3e} distributions (grid of {g} rows) exceeds the limit of {limit}; use a coarser grid or --strategy gbs"
        ));
    }
    let mut best: Option<(f64, Vec<u64>)> = None;
    let mut evals = 0u64;
    let mut cur = vec![0u64; p];
    #[allow(clippy::too_many_arguments)]
    fn walk(
        ev: &Evaluator,
        g: u64,
        rem: u64,
        i: usize,
        left: u64,
        cur: &mut Vec<u64>,
        best: &mut Option<(f64, Vec<u64>)>,
        evals: &mut u64,
    ) -> Result<(), String> {
        if i + 1 == cur.len() {
            cur[i] = left * g + rem;
            let t = cost(ev, &Dist(cur.clone())).map_err(|e| e.to_string())?;
            *evals += 1;
            if best.as_ref().is_none_or(|b| t < b.0) {
                *best = Some((t, cur.clone()));
            }
            return Ok(());
        }
        for s in 0..=left {
            cur[i] = s * g;
            walk(ev, g, rem, i + 1, left - s, cur, best, evals)?;
        }
        Ok(())
    }
    walk(
        &m.evaluator(),
        g,
        n - units * g,
        0,
        units,
        &mut cur,
        &mut best,
        &mut evals,
    )?;
    let (t, d) = best.ok_or("no distribution")?;
    Ok(Found {
        strategy: "exhaustive".into(),
        dist: d,
        predicted_s: t,
        evaluations: evals,
        bisection_steps: 0,
    })
}

mod spectrum;
#[cfg(test)]
use spectrum::capped;
pub use spectrum::{Corners, corners, spectrum};

mod stochastic;
pub use stochastic::{Rng, annealing, genetic, random};

#[cfg(test)]
mod tests;
