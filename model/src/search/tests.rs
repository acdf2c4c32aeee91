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
fn equal_ranks_get_a_spectrum_widened_around_block() {
    // Equal CPUs, no memory limits: every corner is Block (or a row
    // from it), so the path alone gives one or two points.
    for (costs, rows) in [(vec![1_000_000; 2], 128), (vec![1_000_000; 4], 256)] {
        let m = model(&costs);
        let s = spectrum(&m, 9);
        assert_eq!(s.len(), 9, "{s:?}");
        assert_eq!(s[0], Dist::block(costs.len(), rows), "{s:?}");
        assert!(s.iter().all(|d| d.total() == rows), "{s:?}");
        for (i, a) in s.iter().enumerate() {
            assert!(!s[i + 1..].contains(a), "repeated {a:?} in {s:?}");
        }
        // Both sides of Block: rank 0 above and below its share.
        let share = rows / costs.len() as u64;
        assert!(s.iter().any(|d| d.0[0] > share + 4), "{s:?}");
        assert!(s.iter().any(|d| d.0[0] + 4 < share), "{s:?}");
        // The widest is ±50% on the end ranks.
        assert!(s.iter().all(|d| d.0[0] <= share * 3 / 2 + 1), "{s:?}");
    }
}

#[test]
fn capped_water_fills() {
    let d = capped(&[1.0, 1.0, 1.0, 1.0], &[1000, 1000, 10, 10], 400);
    assert_eq!(d.0, vec![190, 190, 10, 10]);
}

#[test]
fn gbs_on_threads_finds_what_it_finds_on_one() {
    // From PARALLEL_FROM ranks the moves of a round are evaluated on
    // several threads; the first better one in order is still taken.
    let p = PARALLEL_FROM as u32;
    let (traces, decl) = crate::synthetic::hetero_cluster(7, p, 64);
    let m = Model::new(&traces, decl, &crate::synthetic::profile_by_host(p, 64)).unwrap();
    let one = gbs_on(&m, 1).unwrap();
    assert!(one.evaluations > 3, "{}", one.evaluations);
    for threads in [2, 3, 8] {
        let many = gbs_on(&m.clone(), threads).unwrap();
        assert_eq!(many.dist, one.dist, "{threads} threads");
        assert_eq!(many.predicted_s.to_bits(), one.predicted_s.to_bits());
        // Each round tried its moves a batch at a time: more evaluations.
        assert!(many.evaluations > one.evaluations);
    }
}

#[test]
fn the_receivers_bound_leaves_refine_as_it_was_with_fewer_evaluations() {
    // Every move the bound leaves out would have failed, so the refined
    // distribution and its time are those of trying every move.
    let mut models: Vec<Model> = (0..12)
        .map(|seed| {
            let (traces, decl) = crate::synthetic::hetero_cluster(100 + seed, 8, 64);
            Model::new(&traces, decl, &profile(8)).unwrap()
        })
        .collect();
    models.push(model(&[1_000_000, 2_000_000, 1_500_000, 3_000_000]));
    let (traces, decl) = crate::synthetic::hetero_cluster(3, 64, 64);
    models.push(Model::new(&traces, decl, &profile(64)).unwrap());
    let (mut saved, mut tried) = (0, 0);
    for (k, m) in models.iter().enumerate() {
        assert!(m.work_is_cost_line());
        let ev = m.evaluator();
        for start in [Dist::block(m.ranks(), m.rows()), balanced_dist(m)] {
            let all = refine_with(&ev, start.clone(), 1, false).unwrap();
            let bounded = refine_with(&ev, start, 1, true).unwrap();
            assert_eq!(bounded.0, all.0, "model {k}");
            assert_eq!(
                bounded.2.map(f64::to_bits),
                all.2.map(f64::to_bits),
                "model {k}"
            );
            assert!(bounded.1 <= all.1, "model {k}: {} > {}", bounded.1, all.1);
            saved += all.1 - bounded.1;
            tried += all.1;
        }
    }
    assert!(
        saved * 4 > tried,
        "the bound saved {saved} of {tried} evaluations"
    );
}
