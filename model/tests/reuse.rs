//! The reuse term in the model (`model/src/reuse.rs`): rows recorded in a
//! long iteration cost less in a shorter one, by the node's measured
//! curve, in `Model::predict` and the evaluator alike; no term for a run
//! timed by the clock, an app without arrays, or a profile without curves.

use mheta_model::synthetic::{app, jacobi_trace, profile};
use mheta_model::{Dist, Model};
use mheta_profile::{ClusterProfile, ReusePoint, SampleStats};
use mheta_trace::{AppDecl, ArrayDecl, RankTrace};

const ROW_BYTES: u64 = 32 << 10;
const BASE: f64 = 1e-10;

/// Working sets of 1 and 4 MiB: a byte costs 1, 1.5 and 2 times its cost
/// right after a sweep when last touched 5, 20 and 50 ms ago (4 MiB: 1.2
/// times 1 MiB's throughout).
fn points() -> Vec<ReusePoint> {
    let mut v = Vec::new();
    for (ws, scale) in [(1u64 << 20, 1.0), (4 << 20, 1.2)] {
        for (t, rel) in [(0.005, 1.0), (0.020, 1.5), (0.050, 2.0)] {
            v.push(ReusePoint {
                ws_bytes: ws,
                reuse_s: t,
                per_byte: SampleStats::point(BASE * scale * rel),
                rel,
                rel_ci95: [rel, rel],
            });
        }
    }
    v
}

/// The curve by hand: linear in time between the points, 2 MiB halfway
/// in log2 between 1 and 4 MiB.
fn by_hand(ws: f64, t: f64) -> f64 {
    let rel = if t <= 0.020 {
        1.0 + 0.5 * ((t - 0.005) / 0.015).max(0.0)
    } else {
        1.5 + 0.5 * ((t - 0.020) / 0.030).min(1.0)
    };
    let a = ((ws.log2() - 20.0) / 2.0).clamp(0.0, 1.0);
    BASE * rel * (1.0 + 0.2 * a)
}

fn traces() -> Vec<RankTrace> {
    // Rank 1 four times slower a row, both on 64 rows.
    vec![
        jacobi_trace(0, 2, 10_000_000, ROW_BYTES),
        jacobi_trace(1, 2, 40_000_000, ROW_BYTES),
    ]
}

fn decl() -> AppDecl {
    let mut a = app(vec![64, 64]);
    a.arrays = vec![ArrayDecl::rows("u", ROW_BYTES, false, false)];
    a
}

fn curved() -> ClusterProfile {
    let mut prof = profile(2);
    for r in 0..2 {
        let n = mheta_profile::NodeCost {
            reuse_by: points(),
            ..mheta_profile::NodeCost::bare(r, "")
        };
        prof.nodes.push(n);
    }
    prof
}

#[test]
fn rows_recorded_in_a_long_iteration_cost_less_in_a_shorter_one() {
    let m = Model::new(&traces(), decl(), &curved()).unwrap();
    assert!(m.has_reuse());
    let flat = m.clone().without_reuse();
    assert!(!flat.has_reuse());
    // At the recorded distribution the period is the recorded one's: the
    // rows cost as recorded (up to the replay's own period against the
    // measured one).
    let block = Dist(vec![64, 64]);
    let (a, b) = (m.predict(&block).unwrap(), flat.predict(&block).unwrap());
    let r = a.per_iteration_s / b.per_iteration_s;
    assert!((r - 1.0).abs() < 0.02, "{r}");
    // Balanced for the recorded rows: about 16 ms at k = 1, and rows
    // cheaper in the shorter iteration.
    let split = Dist(vec![102, 26]);
    let (p, q) = (m.predict(&split).unwrap(), flat.predict(&split).unwrap());
    assert!(
        p.per_iteration_s < 0.85 * q.per_iteration_s,
        "{} vs {}",
        p.per_iteration_s,
        q.per_iteration_s
    );
    // Each rank's compute scaled by r(w', T) / r(w, T_rec) at the period
    // the prediction settled on (eq. R1), T_rec the longest rank's
    // measured iteration.
    let t_rec = (m.programs.iter()).fold(0.0f64, |t, p| t.max(p.measured_s));
    for (i, &rows) in split.0.iter().enumerate() {
        let k = by_hand((rows * ROW_BYTES) as f64, p.per_iteration_s)
            / by_hand((64 * ROW_BYTES) as f64, t_rec);
        let got = p.ranks[i].compute_s / q.ranks[i].compute_s;
        assert!((got / k - 1.0).abs() < 0.03, "rank {i}: {got} vs {k}");
    }
    // The evaluator a search uses gives the same prediction.
    let e = m.evaluator();
    for _ in 0..2 {
        let x = e.predict(&split).unwrap().per_iteration_s;
        assert!((x / p.per_iteration_s - 1.0).abs() < 1e-9, "{x}");
    }
}

#[test]
fn no_reuse_term_under_the_clock_without_arrays_or_without_curves() {
    let mut clocked = decl();
    clocked.cpu_clock = true;
    let split = Dist(vec![102, 26]);
    let flat = Model::new(&traces(), decl(), &profile(2)).unwrap();
    assert!(!flat.has_reuse());
    for a in [clocked, app(vec![64, 64])] {
        let m = Model::new(&traces(), a, &curved()).unwrap();
        assert!(!m.has_reuse());
        assert_eq!(
            m.predict(&split).unwrap().per_iteration_s,
            flat.predict(&split).unwrap().per_iteration_s
        );
    }
}
