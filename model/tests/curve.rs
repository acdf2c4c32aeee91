//! The row-cost curve in the model: a rank's computation under another
//! row count scales by W'/W · c(W')/c(W) in the replay and in GBS's cost
//! line (`model/src/curve.rs`).

use mheta_model::curve::RowCurve;
use mheta_model::synthetic::{app, jacobi_trace, profile};
use mheta_model::{Dist, Model, search};

fn model(costs: &[u64]) -> Model {
    let p = costs.len() as u32;
    let traces: Vec<_> = (0..p)
        .map(|r| jacobi_trace(r, p, costs[r as usize], 8 * 1026))
        .collect();
    Model::new(&traces, app(vec![64; p as usize]), &profile(p)).expect("model")
}

#[test]
fn a_row_cost_curve_prices_rows_beyond_the_recorded_ones_and_moves_gbs() {
    // Equal ranks, 64 rows each recorded: Block is best.
    let flat = model(&[1_000_000, 1_000_000]);
    let even = Dist(vec![64, 64]);
    let skew = Dist(vec![96, 32]);
    let p_flat = flat.predict(&skew).unwrap();
    // Rank 0's row costs 1.2 times as much at 96 rows, 0.9 at 32;
    // rank 1's curve is flat.
    let curves = vec![
        RowCurve::new(0, vec![(32, 0.9), (64, 1.0), (96, 1.2)]).unwrap(),
        RowCurve::new(1, vec![(64, 1.0)]).unwrap(),
    ];
    let m = flat.clone().with_row_curves(curves.clone()).unwrap();
    // At the recorded rows nothing changes.
    assert_eq!(m.predict(&even).unwrap(), flat.predict(&even).unwrap());
    let p = m.predict(&skew).unwrap();
    // (Its compute holds a little unscaled time, outside stages.)
    let ratio = p.ranks[0].compute_s / p_flat.ranks[0].compute_s;
    assert!((ratio - 1.2).abs() < 2e-3, "{ratio}");
    assert_eq!(p.ranks[1].compute_s, p_flat.ranks[1].compute_s);
    // GBS's cost line carries the curve too.
    assert!((m.rank_cost(0, 96) / flat.rank_cost(0, 96) - 1.2).abs() < 2e-3);
    // Rank 1 twice as slow a row: 2/3 of the rows on rank 0 (85) by
    // the paper's line; rank 0's dearer rows there pull it back.
    let slow1 = model(&[1_000_000, 2_000_000]);
    let g0 = search::gbs(&slow1).unwrap();
    let g1 = search::gbs(&slow1.clone().with_row_curves(curves).unwrap()).unwrap();
    assert!((g0.dist[0] as i64 - 85).abs() <= 1, "{:?}", g0.dist);
    assert!(
        g1.dist[0] < g0.dist[0] - 3,
        "{:?} vs {:?}",
        g1.dist,
        g0.dist
    );
    // A curve per rank, or an error that says so.
    let e = flat
        .with_row_curves(vec![RowCurve::new(0, vec![(1, 1.0)]).unwrap()])
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "the row-cost curve has 1 ranks but the trace has 2"
    );
}
