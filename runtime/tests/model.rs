//! The model and the searches on synthetic traces whose answers are known
//! by hand (MHETA eqs. 3 and 5).

#![allow(clippy::unwrap_used)] // tests fail loudly on purpose

use mheta_runtime::search;
use mheta_runtime::{Dist, Model, ModelError};

use mheta_runtime::synthetic::{G, L, OR, OS, app, jacobi_trace, profile};

#[test]
fn two_ranks_match_eqs_3_and_5() {
    // Rank 1 computes twice as long per row (CPU power 0.5).
    let traces = [
        jacobi_trace(0, 2, 1_000_000, 8000),
        jacobi_trace(1, 2, 2_000_000, 8000),
    ];
    let m = Model::new(&traces, app(vec![100, 100]), &profile(2)).unwrap();
    let pr = m.predict(&Dist(vec![100, 100])).unwrap();
    // Before the exchange both ranks computed 1 us of unscaled glue; both
    // send (o_s), the message arrives 1us + o_s + L + 8000 G later: eq. 3
    // gives no wait since both sent at the same time; then o_r (eq. 5).
    let arrive = 1e-6 + OS + L + 8000.0 * G;
    let after_exchange = arrive + OR;
    let reduce = OS + L + 8.0 * G + OR;
    let end1 = after_exchange + 2e-3;
    let want = end1 + reduce + 1e-6;
    assert!(
        (pr.per_iteration_s - want).abs() < 1e-12,
        "{} vs {want}",
        pr.per_iteration_s
    );
    // Rank 0 waits L + b*G for the halo (eq. 3) and 1 ms for rank 1 at the
    // reduction.
    let want_wait = (L + 8000.0 * G) + 1e-3;
    assert!(
        (pr.ranks[0].wait_s - want_wait).abs() < 1e-12,
        "{:?}",
        pr.ranks[0]
    );

    // W'/W scaling: 150/50 rows gives rank 0 1.5 ms and rank 1 1 ms.
    let pr = m.predict(&Dist(vec![150, 50])).unwrap();
    let want = after_exchange + 1.5e-3 + reduce + 1e-6;
    assert!(
        (pr.per_iteration_s - want).abs() < 1e-12,
        "{} vs {want}",
        pr.per_iteration_s
    );
}

#[test]
fn zero_rows_reroutes_neighbours() {
    let traces: Vec<_> = (0..3).map(|r| jacobi_trace(r, 3, 1_000_000, 800)).collect();
    let m = Model::new(&traces, app(vec![10, 10, 10]), &profile(3)).unwrap();
    // Rank 1 gets nothing: ranks 0 and 2 exchange directly and rank 1 only
    // joins the reduction, so no deadlock and ranks 0/2 carry 1.5 ms each.
    let pr = m.predict(&Dist(vec![15, 0, 15])).unwrap();
    assert!(pr.ranks[1].compute_s < 3e-6, "{:?}", pr.ranks[1]);
    assert!(
        (pr.ranks[0].compute_s - (1.5e-3 + 2e-6)).abs() < 1e-9,
        "{:?}",
        pr.ranks[0]
    );
    assert!((pr.ranks[1].overhead_s - (pr.ranks[0].overhead_s - OS - OR)).abs() < 1e-15);
}

#[test]
fn bad_distributions_rejected() {
    let traces = [jacobi_trace(0, 2, 1000, 8), jacobi_trace(1, 2, 1000, 8)];
    let m = Model::new(&traces, app(vec![5, 5]), &profile(2)).unwrap();
    assert!(matches!(
        m.predict(&Dist(vec![5, 4])),
        Err(ModelError::Dist(_))
    ));
    assert!(matches!(
        m.predict(&Dist(vec![10])),
        Err(ModelError::Dist(_))
    ));
    assert!(matches!(
        Model::new(&traces, app(vec![5, 5]), &profile(3)),
        Err(ModelError::RankMismatch { .. })
    ));
    assert!(matches!(
        Model::new(&traces, app(vec![10, 0]), &profile(2)),
        Err(ModelError::NoRowsInTrace { rank: 1 })
    ));
}

#[test]
fn gbs_finds_speed_proportional_split_and_beats_block() {
    let traces = [
        jacobi_trace(0, 2, 6_000_000, 8000),
        jacobi_trace(1, 2, 12_000_000, 8000),
    ];
    let m = Model::new(&traces, app(vec![600, 600]), &profile(2)).unwrap();
    let g = search::gbs(&m).unwrap();
    assert!((g.dist[0] as i64 - 800).abs() <= 2, "{:?}", g.dist);
    let b = search::block(&m).unwrap();
    assert!(
        g.predicted_s < 0.7 * b.predicted_s,
        "{} vs {}",
        g.predicted_s,
        b.predicted_s
    );
    let bal = search::balanced(&m).unwrap();
    assert_eq!(bal.dist, vec![800, 400]);
}

#[test]
fn gbs_agrees_with_exhaustive_on_small_cases() {
    for (c0, c1, c2) in [(1u64, 2u64, 3u64), (5, 1, 1), (2, 2, 7)] {
        let traces = [
            jacobi_trace(0, 3, c0 * 3_000_000, 80),
            jacobi_trace(1, 3, c1 * 3_000_000, 80),
            jacobi_trace(2, 3, c2 * 3_000_000, 80),
        ];
        let m = Model::new(&traces, app(vec![20, 20, 20]), &profile(3)).unwrap();
        let g = search::gbs(&m).unwrap();
        let e = search::exhaustive(&m, 1, 1_000_000).unwrap();
        assert!(
            g.predicted_s <= e.predicted_s * 1.0001,
            "{:?} vs {:?}",
            g,
            e
        );
        assert!(
            g.evaluations < e.evaluations,
            "{} vs {}",
            g.evaluations,
            e.evaluations
        );
    }
}

#[test]
fn several_iterations_give_median_compute() {
    // Three recorded iterations of rank 1: 2, 9 (disturbed) and 2.2 ms of
    // stage compute. The median, 2.2 ms, is what the model uses.
    let mut t1 = jacobi_trace(1, 2, 2_000_000, 8000);
    for c in [9_000_000u64, 2_200_000] {
        let mut it = jacobi_trace(1, 2, c, 8000).iterations.remove(0);
        it.index = t1.iterations.len() as u64 + 3;
        t1.iterations.push(it);
    }
    let traces = [jacobi_trace(0, 2, 1_000_000, 8000), t1];
    let m = Model::new(&traces, app(vec![100, 100]), &profile(2)).unwrap();
    assert!(
        (m.programs[1].scaled_s - 2.2e-3).abs() < 1e-12,
        "{}",
        m.programs[1].scaled_s
    );
    let pr = m.predict(&Dist(vec![100, 100])).unwrap();
    assert!(
        (pr.ranks[1].compute_s - (2.2e-3 + 2e-6)).abs() < 1e-9,
        "{:?}",
        pr.ranks[1]
    );
}
