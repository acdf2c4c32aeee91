//! `Model::predict_iterations`: each recorded iteration replayed on its
//! own, against the replay of their median, on synthetic traces whose
//! answers are known by hand.

#![allow(clippy::unwrap_used)] // tests fail loudly on purpose

use mheta_model::synthetic::{app, jacobi_trace, profile};
use mheta_model::{Dist, Model};
use mheta_trace::RankTrace;

/// A jacobi rank whose recorded iterations computed `stage_ns` each.
fn rank(r: u32, stage_ns: &[u64]) -> RankTrace {
    let mut t = jacobi_trace(r, 2, stage_ns[0], 8000);
    for &c in &stage_ns[1..] {
        let mut it = jacobi_trace(r, 2, c, 8000).iterations.remove(0);
        it.index = t.iterations.len() as u64 + 3;
        t.iterations.push(it);
    }
    t
}

#[test]
fn close_ranks_take_the_median_of_each_iterations_slowest() {
    // Each rank's median stage is 1 ms, but each is the slow one in a
    // different iteration: the iterations' slowest took 1.2, 1.2 and
    // 1.0 ms, so a run's median iteration is 0.2 ms longer than the replay
    // of the medians.
    let traces = [
        rank(0, &[1_200_000, 1_000_000, 1_000_000]),
        rank(1, &[1_000_000, 1_200_000, 1_000_000]),
    ];
    let m = Model::new(&traces, app(vec![100, 100]), &profile(2)).unwrap();
    let even = Dist(vec![100, 100]);
    let point = m.predict(&even).unwrap().per_iteration_s;
    let (med, each) = m.predict_iterations(&even).unwrap().unwrap();
    assert_eq!(each.len(), 3);
    assert!((med - (point + 0.2e-3)).abs() < 1e-12, "{med} vs {point}");
    assert!((each[2] - point).abs() < 1e-12, "{each:?} vs {point}");

    // With 150 rows against 50, rank 0 is the slowest in every iteration:
    // its median, scaled by 1.5, is the replay of the medians.
    let uneven = Dist(vec![150, 50]);
    let point = m.predict(&uneven).unwrap().per_iteration_s;
    let (med, _) = m.predict_iterations(&uneven).unwrap().unwrap();
    assert!((med - point).abs() < 1e-12, "{med} vs {point}");
}

#[test]
fn fewer_than_three_iterations_give_none() {
    let traces = [
        rank(0, &[1_000_000, 1_100_000]),
        rank(1, &[1_000_000, 1_200_000]),
    ];
    let m = Model::new(&traces, app(vec![100, 100]), &profile(2)).unwrap();
    assert!(
        m.predict_iterations(&Dist(vec![100, 100]))
            .unwrap()
            .is_none()
    );
    // A distribution that does not fit is an error, as for `predict`.
    let traces = [rank(0, &[1_000_000; 3]), rank(1, &[1_000_000; 3])];
    let m = Model::new(&traces, app(vec![100, 100]), &profile(2)).unwrap();
    assert!(m.predict_iterations(&Dist(vec![100, 99])).is_err());
}
