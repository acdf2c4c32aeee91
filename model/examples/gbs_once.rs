//! One GBS on one of the model bench's scale-table models, for counting
//! what it costs with a profiler rather than a clock: P ranks, 64 a host
//! on a profile by kind of pair (`synthetic::profile_by_host`), the
//! Jacobi-like trace (`synthetic::jacobi_trace`, per-row costs spread
//! over 1x to 2.8x) or, with `io`, the same with out-of-core I/O on a
//! third of the ranks (`synthetic::hetero_cluster(42, P, 64)`). Prints
//! the evaluations, the bracketing steps, the plan's predicted time,
//! Block's, and the search's time. `MHETA_GBS_REPEAT=K` runs it K times
//! on fresh copies of the model (for a profiler's samples) and prints
//! the fastest. With `eval`, no search: one distribution off the
//! recorded one (even ranks an eighth more rows, odd ranks as many
//! fewer) evaluated in a loop, and the fastest of five batches' time an
//! evaluation.
//!
//! ```text
//! cargo build --release -p mheta-model --example gbs_once
//! valgrind --tool=callgrind --toggle-collect='mheta_model::search::gbs_on' \
//!     target/release/examples/gbs_once 16384 io
//! perf record -g target/release/examples/gbs_once 1024 io eval
//! ```

use mheta_model::synthetic::{app, hetero_cluster, jacobi_trace, profile_by_host};
use mheta_model::{Dist, Model, search};
use std::hint::black_box;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let p = args.first().and_then(|p| p.parse::<u32>().ok());
    let words = args.get(1..).unwrap_or_default();
    let (io, eval) = (
        words.iter().any(|w| w == "io"),
        words.iter().any(|w| w == "eval"),
    );
    let known = words.iter().all(|w| w == "io" || w == "eval");
    let Some(p) = p.filter(|&p| p >= 2 && known) else {
        eprintln!("usage: gbs_once RANKS [io] [eval]  (RANKS: 2 or more)");
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
    let with_io = if io { " with I/O" } else { "" };
    if eval {
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
            "ranks {p}{with_io}: {:.2} us an evaluation (fastest of 5 batches of {reps}), predicted {first:.9} s",
            best * 1e6
        );
        return;
    }
    let reps: usize = std::env::var("MHETA_GBS_REPEAT")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    let mut times = Vec::new();
    let mut g = None;
    for _ in 0..reps.max(1) {
        let fresh = m.clone();
        let t = Instant::now();
        g = Some(search::gbs(&fresh).expect("gbs"));
        times.push(t.elapsed().as_secs_f64());
    }
    let g = g.expect("one search");
    let fastest = times.iter().copied().fold(f64::INFINITY, f64::min);
    let b = search::block(&m).expect("block");
    println!(
        "ranks {p}{with_io}: {} evaluations, {} bracketing steps, predicted {:.9} s, Block {:.9} s; GBS {:.2} ms (fastest of {})",
        g.evaluations,
        g.bisection_steps,
        g.predicted_s,
        b.predicted_s,
        fastest * 1e3,
        times.len()
    );
}
