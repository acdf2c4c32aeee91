//! Evaluations of one distribution on one of the model bench's
//! scale-table models, in a loop, for a profiler: P ranks, 64 a host on
//! a profile by kind of pair, the Jacobi-like trace or, with `io`, the
//! same with out-of-core I/O on a third of the ranks (as `gbs_once`).
//! The distribution is off the recorded one (even ranks an eighth more
//! rows, odd ranks as many fewer). Prints the fastest of five batches'
//! time an evaluation.
//!
//! ```text
//! cargo build --release -p mheta-model --example eval_loop
//! perf record -g target/release/examples/eval_loop 1024 io
//! ```

use mheta_model::synthetic::{app, hetero_cluster, jacobi_trace, profile_by_host};
use mheta_model::{Dist, Model};
use std::hint::black_box;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (p, io) = match &args[..] {
        [p] => (p.parse::<u32>().ok(), false),
        [p, io] if io == "io" => (p.parse::<u32>().ok(), true),
        _ => (None, false),
    };
    let Some(p) = p.filter(|&p| p >= 2) else {
        eprintln!("usage: eval_loop RANKS [io]  (RANKS: 2 or more)");
        std::process::exit(2);
    };
    let prof = profile_by_host(p, 64);
    let m = if io {
        let (traces, decl) = hetero_cluster(42, p, 64);
        Model::new(&traces, decl, &prof).expect("model")
    } else {
        let traces: Vec<_> = (0..p)
            .map(|r| jacobi_trace(r, p, 1_000_000 + (r as u64 * 7919 % 13) * 150_000, 8 * 1026))
            .collect();
        Model::new(&traces, app(vec![64; p as usize]), &prof).expect("model")
    };
    let d = Dist((0..p).map(|r| if r % 2 == 0 { 72 } else { 56 }).collect());
    let ev = m.evaluator();
    let first = ev.predict(&d).expect("predict").per_iteration_s;
    let reps = (400_000 / p as usize).max(5);
    let best = (0..5)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..reps {
                black_box(ev.predict(black_box(&d)).expect("predict"));
            }
            t.elapsed().as_secs_f64() / reps as f64
        })
        .fold(f64::INFINITY, f64::min);
    println!(
        "ranks {p}{}: {:.2} us an evaluation (fastest of 5 batches of {reps}), predicted {first:.9} s",
        if io { " with I/O" } else { "" },
        best * 1e6
    );
}
