//! `--row-curve ROUNDS`: each rank's cost a row at other row counts than
//! Block's, measured in real runs of the study's kernel, so that the
//! model prices a rank whose arrays outgrow (or come to fit) a cache
//! ([`mheta_model::curve`]).
//!
//! A round runs Block and each of [`FRACTIONS`] (round k starting k
//! distributions later, so that no distribution always runs first): the even ranks get f
//! times their Block rows and the odd ranks 2 - f times theirs (with an
//! odd count the last keeps its own), so every run gives every rank a
//! point. A rank's point is its compute a row in that run (the apps'
//! `ranks[].compute_s`: the median stage time less its I/O, over its
//! rows) over its compute a row in the same round's Block run: both ran
//! within seconds of each other, so the host's slower and faster spells,
//! which move whole runs by 8-28% here, mostly cancel. A knot is the
//! median over the rounds, with its bootstrap 95% interval, and the
//! median over them of the runs' iteration (`iter_median_s`), the period
//! at which the knot's rows were touched: the model's reuse term prices a
//! point from the periods of the knots it reads ([`mheta_model::curve::RowCurve::knot_periods`]).

use super::noise::median_ci;
use anyhow::{Context, Result, bail};
use mheta_base::median;
use mheta_model::Dist;
use mheta_model::curve::{Knot, RankKnots};

/// The fractions of its Block rows the calibration gives an even rank
/// (an odd rank gets 2 - f): 0.25 to 1.75 of Block, both sides.
pub(super) const FRACTIONS: [f64; 6] = [0.25, 0.5, 0.75, 1.25, 1.5, 1.75];

/// The calibration's distributions: for each of [`FRACTIONS`] f, the
/// even ranks at f times their Block rows, the odd ranks at 2 - f times
/// theirs, the last of an odd count at its own; what rounding leaves
/// goes to the last rank changed, so each sums to N. Distributions
/// equal to Block, or giving a rank no rows, are left out.
pub(super) fn dists(blk: &Dist) -> Vec<Dist> {
    let p = blk.0.len();
    let paired = p - p % 2;
    let mut out: Vec<Dist> = Vec::new();
    for f in FRACTIONS {
        let mut d: Vec<u64> = blk.0.clone();
        for (i, r) in d.iter_mut().enumerate().take(paired) {
            let g = if i % 2 == 0 { f } else { 2.0 - f };
            *r = (*r as f64 * g).round() as u64;
        }
        let want: u64 = blk.0.iter().sum();
        let have: u64 = d.iter().sum();
        if paired > 0 {
            let last = paired - 1;
            d[last] = (d[last] + want).saturating_sub(have);
        }
        let d = Dist(d);
        if d != *blk && d.0.iter().all(|&r| r > 0) && !out.contains(&d) {
            out.push(d);
        }
    }
    out
}

/// One calibration run as the knots use it: per rank its rows and
/// compute seconds, and the run's median iteration, seconds.
#[derive(Clone, Debug, Default)]
pub(super) struct Run {
    pub ranks: Vec<(u64, f64)>,
    pub period_s: f64,
}

/// A run's JSON result as [`Run`].
pub(super) fn run_of(run: &serde_json::Value) -> Result<Run> {
    let period_s = run["iter_median_s"]
        .as_f64()
        .filter(|t| t.is_finite() && *t > 0.0)
        .context("run result has no positive iter_median_s")?;
    Ok(Run {
        ranks: rank_compute(run)?,
        period_s,
    })
}

/// Per rank, its rows and compute seconds in a run's JSON result.
fn rank_compute(run: &serde_json::Value) -> Result<Vec<(u64, f64)>> {
    let ranks = run["ranks"]
        .as_array()
        .filter(|v| !v.is_empty())
        .context("run result has no ranks[]")?;
    ranks
        .iter()
        .enumerate()
        .map(|(i, k)| {
            let rows = k["rows"]
                .as_u64()
                .with_context(|| format!("rank {i} of a run result has no rows"))?;
            let s = k["compute_s"]
                .as_f64()
                .with_context(|| format!("rank {i} of a run result has no compute_s"))?;
            Ok((rows, s))
        })
        .collect()
}

/// The knots of every rank from the rounds: `rounds[k][0]` is round k's
/// Block run, `rounds[k][j]` its run of `dists[j - 1]`, each as
/// [`run_of`] reads it. A rank's knot at Block's rows is 1; a run
/// where a rank's compute is not positive gives no ratio. A knot's
/// period is the median iteration of the runs behind it.
pub(super) fn knots(blk: &Dist, dists: &[Dist], rounds: &[Vec<Run>]) -> Result<Vec<RankKnots>> {
    let p = blk.0.len();
    if let Some(r) = rounds.iter().find(|r| r.len() != dists.len() + 1) {
        bail!(
            "a calibration round has {} runs, not {}",
            r.len(),
            dists.len() + 1
        );
    }
    let mut out = Vec::with_capacity(p);
    for i in 0..p {
        let ref_rows = blk.0[i];
        let mut knots = vec![Knot {
            rows: ref_rows,
            per_row_rel: 1.0,
            ci95: [1.0, 1.0],
            rounds: rounds.len(),
            period_s: median(&mut rounds.iter().map(|r| r[0].period_s).collect::<Vec<_>>()),
        }];
        // The distinct row counts this rank had, in order.
        let mut at: Vec<u64> = dists.iter().map(|d| d.0[i]).collect();
        at.sort_unstable();
        at.dedup();
        at.retain(|&r| r != ref_rows);
        for rows in at {
            let (mut ratios, mut periods) = (Vec::new(), Vec::new());
            for round in rounds {
                let (br, bs) = round[0].ranks[i];
                if bs <= 0.0 || br == 0 {
                    continue;
                }
                for (j, d) in dists.iter().enumerate() {
                    if d.0[i] != rows {
                        continue;
                    }
                    let (r, s) = round[j + 1].ranks[i];
                    if s > 0.0 && r > 0 {
                        ratios.push((s / r as f64) / (bs / br as f64));
                        periods.push(round[j + 1].period_s);
                    }
                }
            }
            let Some(m) = median(&mut ratios.clone()) else {
                continue;
            };
            knots.push(Knot {
                rows,
                per_row_rel: m,
                ci95: median_ci(&ratios, rows ^ ((i as u64) << 32)),
                rounds: ratios.len(),
                period_s: median(&mut periods),
            });
        }
        knots.sort_by_key(|k| k.rows);
        out.push(RankKnots { rank: i, knots });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_calibration_gives_every_rank_other_rows_and_sums_to_n() {
        let blk = Dist(vec![1024, 1024]);
        let d = dists(&blk);
        assert_eq!(d.len(), 6);
        assert_eq!(d[0].0, vec![256, 1792]);
        assert_eq!(d[5].0, vec![1792, 256]);
        // Three ranks of an odd N: the last keeps its rows.
        let blk = Dist(vec![683, 683, 682]);
        for x in dists(&blk) {
            assert_eq!(x.0.iter().sum::<u64>(), 2048, "{x:?}");
            assert_eq!(x.0[2], 682);
            assert!(x.0[0] != 683 && x.0[1] != 683, "{x:?}");
        }
        // One rank: nothing to vary.
        assert!(dists(&Dist(vec![100])).is_empty());
        // Tiny blocks: no rank is left without rows.
        for x in dists(&Dist(vec![2, 2])) {
            assert!(x.0.iter().all(|&r| r > 0), "{x:?}");
        }
    }

    #[test]
    fn a_knot_is_the_median_ratio_to_the_same_rounds_block_run() {
        let blk = Dist(vec![100, 100]);
        let dists = vec![Dist(vec![50, 150]), Dist(vec![150, 50])];
        // Round 1 runs at full speed, round 2 twice as slow: the ratios
        // within each round are alike, so the knots do not see it.
        let run = |ranks: Vec<(u64, f64)>, period_s: f64| Run { ranks, period_s };
        let round = |speed: f64| {
            vec![
                run(vec![(100, 1.0 * speed), (100, 2.0 * speed)], 2.0 * speed),
                run(vec![(50, 0.45 * speed), (150, 3.3 * speed)], 3.3 * speed),
                run(vec![(150, 1.65 * speed), (50, 0.9 * speed)], 1.65 * speed),
            ]
        };
        let k = knots(&blk, &dists, &[round(1.0), round(2.0)]).unwrap();
        let r0: Vec<(u64, f64)> = k[0].knots.iter().map(|k| (k.rows, k.per_row_rel)).collect();
        let want0 = [(50, 0.9), (100, 1.0), (150, 1.1)];
        for ((r, c), (wr, wc)) in r0.iter().zip(want0) {
            assert_eq!(*r, wr);
            assert!((c - wc).abs() < 1e-12, "{r0:?}");
        }
        let r1: Vec<f64> = k[1].knots.iter().map(|k| k.per_row_rel).collect();
        assert!(
            (r1[0] - 0.9).abs() < 1e-12 && (r1[2] - 1.1).abs() < 1e-12,
            "{r1:?}"
        );
        assert_eq!(k[1].knots[1].rounds, 2);
        // Each knot's period: the median of its runs' iterations (here
        // 1x and 2x, so 1.5x), Block's at Block's rows.
        let t0: Vec<f64> = k[0].knots.iter().map(|k| k.period_s.unwrap()).collect();
        assert_eq!(t0, vec![3.3 * 1.5, 2.0 * 1.5, 1.65 * 1.5]);
        assert_eq!(k[1].knots[0].period_s, Some(1.65 * 1.5));
        // A round with a run missing is an error.
        let mut bad = round(1.0);
        bad.pop();
        assert!(knots(&blk, &dists, &[bad]).is_err());
    }
}
