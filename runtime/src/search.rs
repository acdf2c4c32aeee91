//! Searching GEN_BLOCK distributions with the model.
//!
//! - [`block`]: equal rows (the paper's `Blk`).
//! - [`balanced`]: rows proportional to each rank's measured speed (`Bal`).
//! - [`gbs`]: the generalized binary search. Our reading of GBS (the
//!   companion paper is not in our seeds): bisect on the target iteration
//!   time T; for each T every rank takes the most rows it can finish within
//!   T by its own cost line (compute per row, fixed compute, overheads);
//!   the smallest T whose counts cover N gives a distribution, which is then
//!   refined by moving rows away from the slowest rank under the full model.
//! - [`exhaustive`]: every distribution, for small cases and for testing.

use crate::dist::Dist;
use crate::model::{Model, ModelError};

/// The outcome of a search.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Found {
    pub strategy: String,
    pub dist: Vec<u64>,
    pub predicted_s: f64,
    /// Full model evaluations spent.
    pub evaluations: u64,
    /// Cheap per-rank cost-line evaluations (GBS bisection only).
    pub bisection_steps: u64,
}

fn found(
    strategy: &str,
    m: &Model,
    d: Dist,
    evaluations: u64,
    bisection_steps: u64,
) -> Result<Found, ModelError> {
    let predicted_s = m.predict(&d)?.per_iteration_s;
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
    found("block", m, Dist::block(m.ranks(), m.rows()), 0, 0)
}

/// Rows proportional to measured speed (rows per second of scaled work).
pub fn balanced_dist(m: &Model) -> Dist {
    let speed: Vec<f64> = m
        .per_row_s()
        .iter()
        .map(|&t| if t > 0.0 { 1.0 / t } else { 0.0 })
        .collect();
    Dist::proportional(&speed, m.rows())
}

/// Rows proportional to measured speed.
pub fn balanced(m: &Model) -> Result<Found, ModelError> {
    found("balanced", m, balanced_dist(m), 0, 0)
}

/// The generalized binary search.
pub fn gbs(m: &Model) -> Result<Found, ModelError> {
    let p = m.ranks();
    let n = m.rows();
    let per_row = m.per_row_s();
    // Each rank's fixed cost: unscaled compute plus its message overheads
    // under the instrumented distribution.
    let inst = m.predict(&Dist(m.app.dist.clone()))?;
    let mut evaluations = 1u64;
    let base: Vec<f64> = (0..p)
        .map(|i| m.programs[i].unscaled_s + inst.ranks[i].overhead_s)
        .collect();
    let rows_within = |t: f64| -> Vec<u64> {
        (0..p)
            .map(|i| {
                if t < base[i] {
                    0
                } else if per_row[i] <= 0.0 {
                    n
                } else {
                    (((t - base[i]) / per_row[i]).floor() as u64).min(n)
                }
            })
            .collect()
    };
    let cost = |i: usize, s: u64| base[i] + per_row[i] * s as f64;
    let (mut lo, mut hi) = (0.0f64, (0..p).map(|i| cost(i, n)).fold(0.0, f64::max));
    let mut steps = 0u64;
    while hi - lo > 1e-12 * hi.max(1e-9) && steps < 200 {
        let mid = 0.5 * (lo + hi);
        steps += 1;
        if rows_within(mid).iter().sum::<u64>() >= n {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    let mut s = rows_within(hi);
    // Shed the excess from the ranks that would finish last.
    let mut excess = s.iter().sum::<u64>().saturating_sub(n);
    while excess > 0 {
        let i = (0..p)
            .filter(|&i| s[i] > 0)
            .max_by(|&a, &b| cost(a, s[a]).total_cmp(&cost(b, s[b])))
            .unwrap_or(0);
        s[i] -= 1;
        excess -= 1;
    }
    let (d, e) = refine(m, Dist(s))?;
    evaluations += e;
    found("gbs", m, d, evaluations, steps)
}

/// Move rows from the slowest rank to whichever rank gains most, halving
/// the step when nothing improves. Returns the result and evaluations.
pub fn refine(m: &Model, mut d: Dist) -> Result<(Dist, u64), ModelError> {
    let p = m.ranks();
    let mut evals = 1u64;
    let mut cur = m.predict(&d)?;
    let mut step = (m.rows() / (16 * p as u64)).max(1);
    loop {
        let slow = (0..p)
            .max_by(|&a, &b| cur.ranks[a].total_s.total_cmp(&cur.ranks[b].total_s))
            .unwrap_or(0);
        let mut best: Option<(Dist, crate::model::Prediction)> = None;
        for j in 0..p {
            if j == slow || d.0[slow] == 0 {
                continue;
            }
            let k = step.min(d.0[slow]);
            let mut t = d.clone();
            t.0[slow] -= k;
            t.0[j] += k;
            let pr = m.predict(&t)?;
            evals += 1;
            let bar = best
                .as_ref()
                .map_or(cur.per_iteration_s, |b| b.1.per_iteration_s);
            if pr.per_iteration_s < bar * (1.0 - 1e-9) {
                best = Some((t, pr));
            }
        }
        match best {
            Some((t, pr)) => {
                d = t;
                cur = pr;
            }
            None if step > 1 => step /= 2,
            None => return Ok((d, evals)),
        }
    }
}

/// Every distribution of N rows over P ranks; refuses more than `limit`.
pub fn exhaustive(m: &Model, limit: u64) -> Result<Found, String> {
    let p = m.ranks();
    let n = m.rows();
    // C(n + p - 1, p - 1) candidates.
    let mut count: f64 = 1.0;
    for k in 1..p {
        count = count * (n + k as u64) as f64 / k as f64;
    }
    if count > limit as f64 {
        return Err(format!(
            "exhaustive search over {count:.3e} distributions exceeds the limit of {limit}; use --strategy gbs"
        ));
    }
    let mut best: Option<(f64, Vec<u64>)> = None;
    let mut evals = 0u64;
    let mut cur = vec![0u64; p];
    fn walk(
        m: &Model,
        i: usize,
        left: u64,
        cur: &mut Vec<u64>,
        best: &mut Option<(f64, Vec<u64>)>,
        evals: &mut u64,
    ) -> Result<(), String> {
        if i + 1 == cur.len() {
            cur[i] = left;
            let t = m
                .predict(&Dist(cur.clone()))
                .map_err(|e| e.to_string())?
                .per_iteration_s;
            *evals += 1;
            if best.as_ref().is_none_or(|b| t < b.0) {
                *best = Some((t, cur.clone()));
            }
            return Ok(());
        }
        for s in 0..=left {
            cur[i] = s;
            walk(m, i + 1, left - s, cur, best, evals)?;
        }
        Ok(())
    }
    walk(m, 0, n, &mut cur, &mut best, &mut evals)?;
    let (t, d) = best.ok_or("no distribution")?;
    Ok(Found {
        strategy: "exhaustive".into(),
        dist: d,
        predicted_s: t,
        evaluations: evals,
        bisection_steps: 0,
    })
}
