//! How fast the model evaluates a distribution and how many evaluations GBS
//! spends, on synthetic Jacobi-shaped traces of P ranks (the MHETA paper
//! reports 5.4 ms per distribution). Run: `cargo bench -p mheta-runtime`.
//! Prints a table; times are medians of 15 batches measured in this run.

use mheta_runtime::synthetic::{app, jacobi_trace, profile};
use mheta_runtime::{Dist, Model, search};
use std::hint::black_box;
use std::time::Instant;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    println!(
        "{:>6} {:>10} {:>16} {:>14} {:>12} {:>14}",
        "ranks", "rows", "predict (us)", "gbs (ms)", "gbs evals", "gbs/block"
    );
    for p in [2u32, 4, 8, 16, 64, 256] {
        let rows = 64 * p as u64;
        // Per-row costs spread over 1x..3x, as on a heterogeneous cluster.
        let traces: Vec<_> = (0..p)
            .map(|r| jacobi_trace(r, p, 1_000_000 + (r as u64 * 7919 % 13) * 150_000, 8 * 1026))
            .collect();
        let m = Model::new(&traces, app(vec![64; p as usize]), &profile(p)).expect("model");
        let d = Dist::block(p as usize, rows);
        let reps = (20_000 / p).max(20);
        let per_eval: Vec<f64> = (0..15)
            .map(|_| {
                let t = Instant::now();
                for _ in 0..reps {
                    black_box(m.predict(black_box(&d)).expect("predict"));
                }
                t.elapsed().as_secs_f64() / reps as f64
            })
            .collect();
        let gbs_t: Vec<f64> = (0..5)
            .map(|_| {
                let t = Instant::now();
                black_box(search::gbs(&m).expect("gbs"));
                t.elapsed().as_secs_f64()
            })
            .collect();
        let g = search::gbs(&m).expect("gbs");
        let b = search::block(&m).expect("block");
        println!(
            "{:>6} {:>10} {:>16.2} {:>14.3} {:>12} {:>14.3}",
            p,
            rows,
            median(per_eval) * 1e6,
            median(gbs_t) * 1e3,
            g.evaluations,
            g.predicted_s / b.predicted_s
        );
    }
}
