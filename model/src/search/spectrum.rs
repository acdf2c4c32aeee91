//! The paper's figure 8: its corners ([`corners`]: `Blk`, `Bal`, `I-C`,
//! `I-C/Bal`) and the path through them ([`spectrum`]).

use super::{balanced_dist, speeds};
use crate::dist::Dist;
use crate::model::Model;

/// The corners of the paper's figure 8.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Corners {
    /// `Blk`: equal rows.
    pub blk: Dist,
    /// `Bal`: rows by measured speed, I/O ignored.
    pub bal: Dist,
    /// `I-C`: the memory-limited ranks take what fits in core, the others
    /// share the rest equally; load ignored.
    pub ic: Dist,
    /// `I-C/Bal`: rows by speed, capped at each rank's in-core capacity,
    /// the overflow shared by speed among the uncapped ranks.
    pub ic_bal: Dist,
}

/// Rows by `weight`, each rank capped at `cap` (water-filling).
pub(super) fn capped(weight: &[f64], cap: &[u64], n: u64) -> Dist {
    let p = weight.len();
    let mut fixed: Vec<Option<u64>> = vec![None; p];
    loop {
        let left = n - fixed.iter().flatten().sum::<u64>();
        let free: Vec<usize> = (0..p).filter(|&i| fixed[i].is_none()).collect();
        if free.is_empty() {
            break;
        }
        let w: Vec<f64> = free.iter().map(|&i| weight[i]).collect();
        let share = Dist::proportional(&w, left);
        let over: Vec<usize> = free
            .iter()
            .zip(&share.0)
            .filter(|&(&i, &s)| s > cap[i])
            .map(|(&i, _)| i)
            .collect();
        if over.is_empty() {
            for (&i, &s) in free.iter().zip(&share.0) {
                fixed[i] = Some(s);
            }
            break;
        }
        for i in over {
            fixed[i] = Some(cap[i]);
        }
        if free.len() == fixed.iter().filter(|f| f.is_none()).count() {
            break;
        }
    }
    let mut d: Vec<u64> = fixed.iter().map(|f| f.unwrap_or(0)).collect();
    // Capacity short of N: the remainder goes to the largest rank.
    let sum: u64 = d.iter().sum();
    if sum < n
        && let Some(i) = (0..p).max_by_key(|&i| d[i])
    {
        d[i] += n - sum;
    }
    Dist(d)
}

/// Blk, Bal, I-C and I-C/Bal for this model.
pub fn corners(m: &Model) -> Corners {
    let (p, n) = (m.ranks(), m.rows());
    let cap: Vec<u64> = (0..p).map(|i| m.in_core_capacity(i)).collect();
    let limited: Vec<bool> = cap.iter().map(|&c| c < n).collect();
    let ic = if limited.iter().any(|&l| l) && !limited.iter().all(|&l| l) {
        capped(&vec![1.0; p], &cap, n)
    } else {
        Dist::block(p, n)
    };
    Corners {
        blk: Dist::block(p, n),
        bal: balanced_dist(m),
        ic,
        ic_bal: capped(&speeds(m), &cap, n),
    }
}

/// `k` distributions along the path Blk → I-C → I-C/Bal → Bal → Blk
/// (figure 8), evenly spaced by the path's length in rows, the corners
/// included; repeated points are dropped. As in the paper, the path is
/// cut short when it would retrace itself: with no memory limits (I-C ≈
/// Blk, I-C/Bal ≈ Bal) it runs Blk → Bal, and with equal CPUs (Bal ≈ Blk)
/// Blk → I-C → I-C/Bal; "≈" is within 2% of the rows.
pub fn spectrum(m: &Model, k: usize) -> Vec<Dist> {
    let c = corners(m);
    let dist = |a: &Dist, b: &Dist| -> f64 {
        a.0.iter()
            .zip(&b.0)
            .map(|(&x, &y)| (x as f64 - y as f64).abs())
            .sum()
    };
    let n = m.rows();
    let near = |a: &Dist, b: &Dist| dist(a, b) <= 0.02 * n as f64;
    let path: Vec<&Dist> = if near(&c.blk, &c.ic) && near(&c.ic_bal, &c.bal) {
        vec![&c.blk, &c.bal]
    } else if near(&c.blk, &c.bal) {
        vec![&c.blk, &c.ic, &c.ic_bal]
    } else {
        vec![&c.blk, &c.ic, &c.ic_bal, &c.bal, &c.blk]
    };
    let legs: Vec<f64> = path.windows(2).map(|w| dist(w[0], w[1])).collect();
    let total: f64 = legs.iter().sum();
    let k = k.max(2);
    if total == 0.0 {
        let mut out = vec![c.blk.clone()];
        widen(&mut out, &c.blk, k, n);
        return out;
    }
    // Corners first (they matter most), then fill evenly.
    let mut at: Vec<f64> = vec![0.0];
    let mut acc = 0.0;
    for l in &legs {
        acc += l;
        if acc < total {
            at.push(acc);
        }
    }
    if path.len() == 2 || path.len() == 3 {
        at.push(total);
    }
    // Fill evenly; where the path retraces itself (two ranks: it is a
    // line) points repeat, so fill more until there are `k` distinct ones.
    let corners_at = at;
    let mut out: Vec<Dist> = Vec::new();
    let mut fill = k.saturating_sub(corners_at.len());
    while fill <= 8 * k {
        let mut at = corners_at.clone();
        for j in 0..fill {
            at.push(total * (j as f64 + 0.5) / fill as f64);
        }
        at.sort_by(f64::total_cmp);
        out.clear();
        for a in at {
            let mut left = a;
            let mut leg = 0;
            while leg + 1 < legs.len() && left > legs[leg] {
                left -= legs[leg];
                leg += 1;
            }
            let f = if legs[leg] > 0.0 {
                (left / legs[leg]).clamp(0.0, 1.0)
            } else {
                0.0
            };
            let w: Vec<f64> = path[leg]
                .0
                .iter()
                .zip(&path[leg + 1].0)
                .map(|(&x, &y)| x as f64 + f * (y as f64 - x as f64))
                .collect();
            let d = Dist::proportional(&w, n);
            if !out.contains(&d) {
                out.push(d);
            }
        }
        if out.len() >= k {
            break;
        }
        fill += 1;
    }
    if out.len() < k {
        widen(&mut out, &c.blk, k, n);
    }
    out
}

/// Where the corners lie too close for `k` distinct points (equal CPUs
/// and no memory limits put every corner within a row or two of Block),
/// the spectrum is widened by a line through Block: rank i weighted
/// 1 + s·(1 − 2i/(P − 1)) for s = ±0.5·j/k, j = 1, 2, …, until there are
/// `k` distinct distributions. A study then still compares the model's
/// predictions off Block rather than at one or two points. Block stays
/// first; the rest are ordered by rank 0's rows, most first.
fn widen(out: &mut Vec<Dist>, blk: &Dist, k: usize, n: u64) {
    let p = blk.0.len();
    if p < 2 {
        return;
    }
    for j in 1..=k {
        for sign in [1.0, -1.0] {
            if out.len() >= k {
                break;
            }
            let s = sign * 0.5 * j as f64 / k as f64;
            let w: Vec<f64> = (0..p)
                .map(|i| 1.0 + s * (1.0 - 2.0 * i as f64 / (p - 1) as f64))
                .collect();
            let d = Dist::proportional(&w, n);
            if !out.contains(&d) {
                out.push(d);
            }
        }
    }
    if let Some(rest) = out.get_mut(1..) {
        rest.sort_by_key(|d| std::cmp::Reverse(d.0[0]));
    }
}
