use super::*;
use crate::synthetic::{app, jacobi_trace, profile};

fn model(costs: &[u64]) -> Model {
    let p = costs.len() as u32;
    let traces: Vec<_> = (0..p)
        .map(|r| jacobi_trace(r, p, costs[r as usize], 8 * 1026))
        .collect();
    Model::new(&traces, app(vec![64; p as usize]), &profile(p)).unwrap()
}

#[test]
fn every_strategy_finds_the_speed_split_of_two_ranks() {
    // Rank 1 takes twice as long per row: 2/3 of 128 rows on rank 0.
    let m = model(&[1_000_000, 2_000_000]);
    let ex = exhaustive(&m, 1, 1000).unwrap();
    assert!((ex.dist[0] as i64 - 85).abs() <= 1, "{:?}", ex.dist);
    for s in STRATEGIES {
        let f = by_name(&m, s, 400, 7).unwrap();
        assert!(f.evaluations >= 1, "{s}");
        if *s != "block" {
            assert!(
                f.predicted_s <= ex.predicted_s * 1.01,
                "{s}: {:?} {} vs {}",
                f.dist,
                f.predicted_s,
                ex.predicted_s
            );
        }
    }
}

#[test]
fn spectrum_runs_from_block_through_balanced() {
    let m = model(&[1_000_000, 1_000_000, 2_000_000, 3_000_000]);
    let s = spectrum(&m, 9);
    assert_eq!(s[0], Dist::block(4, 256));
    assert!(s.contains(&balanced_dist(&m)));
    assert!(s.iter().all(|d| d.total() == 256));
    // No memory limits: I-C is Blk, so the path is Blk -> Bal, with
    // nine distinct points.
    assert_eq!(s.len(), 9, "{s:?}");
    assert_eq!(s[8], balanced_dist(&m));
}

#[test]
fn capped_water_fills() {
    let d = capped(&[1.0, 1.0, 1.0, 1.0], &[1000, 1000, 10, 10], 400);
    assert_eq!(d.0, vec![190, 190, 10, 10]);
}
