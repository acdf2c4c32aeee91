//! The guard on how an evaluation's cost grows with the ranks: one
//! evaluation of the jacobi trace at P = 1024 within 6 times one at
//! P = 256, interpreted (`Model::predict`) and compiled
//! (`Model::evaluator`, what the searches run). Quadratic growth gives 16 times; linear growth with the
//! all-reduce's log P rounds and the caches of a 2-core VM gave 4.4-5.0
//! (docs/design/model.md, "What an evaluation costs"). Timed against
//! itself, interleaved, so the machine's speed cancels; each side is the
//! fastest of its batches (noise only slows a batch). The table of
//! absolute figures is `cargo bench -p mheta-model --bench model`.

#![allow(clippy::unwrap_used)] // tests fail loudly on purpose

use mheta_model::synthetic::{app, jacobi_trace, profile};
use mheta_model::{Dist, Model};
use std::hint::black_box;
use std::time::Instant;

/// The bench's jacobi model at `p` ranks (per-row costs 1x..3x).
fn jacobi(p: u32) -> (Model, Dist) {
    let traces: Vec<_> = (0..p)
        .map(|r| jacobi_trace(r, p, 1_000_000 + (r as u64 * 7919 % 13) * 150_000, 8 * 1026))
        .collect();
    let m = Model::new(&traces, app(vec![64; p as usize]), &profile(p)).unwrap();
    let d = Dist::block(p as usize, 64 * p as u64);
    (m, d)
}

/// Seconds per evaluation over a batch of `reps`.
fn batch(eval: &dyn Fn(&Dist), d: &Dist, reps: usize) -> f64 {
    let t = Instant::now();
    for _ in 0..reps {
        eval(black_box(d));
    }
    t.elapsed().as_secs_f64() / reps as f64
}

#[test]
fn an_evaluation_at_1024_ranks_costs_at_most_6_times_one_at_256() {
    let (small, ds) = jacobi(256);
    let (large, dl) = jacobi(1024);
    let interpreted = |m: &Model| {
        let m = m.clone();
        Box::new(move |d: &Dist| {
            black_box(m.predict(d).unwrap());
        }) as Box<dyn Fn(&Dist)>
    };
    guard(
        "interpreted",
        &*interpreted(&small),
        &ds,
        &*interpreted(&large),
        &dl,
    );
    let (es, el) = (small.evaluator(), large.evaluator());
    let compiled = |e: &mheta_model::Evaluator<'_>, d: &Dist| {
        black_box(e.predict(d).unwrap());
    };
    guard(
        "compiled",
        &|d| compiled(&es, d),
        &ds,
        &|d| compiled(&el, d),
        &dl,
    );
    assert!(es.compiled_evaluations() > 0 && el.compiled_evaluations() > 0);
}

/// The growth check on one way of evaluating.
fn guard(how: &str, small: &dyn Fn(&Dist), ds: &Dist, large: &dyn Fn(&Dist), dl: &Dist) {
    // Warm both (plan caches, the replay's kept maps, the compiled ops).
    batch(small, ds, 20);
    batch(large, dl, 5);
    let (mut s, mut l) = (f64::INFINITY, f64::INFINITY);
    for _ in 0..9 {
        s = s.min(batch(small, ds, 40));
        l = l.min(batch(large, dl, 10));
    }
    let ratio = l / s;
    eprintln!(
        "one evaluation, {how}: P=256 {:.1} us, P=1024 {:.1} us, ratio {ratio:.2}",
        s * 1e6,
        l * 1e6
    );
    assert!(
        ratio <= 6.0,
        "{how}: an evaluation at P=1024 costs {ratio:.2} times one at P=256 ({:.1} us against {:.1} us): growth toward quadratic",
        l * 1e6,
        s * 1e6
    );
}
