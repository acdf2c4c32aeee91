//! What `--auto`'s plan costs rank 0 at large P, without MPI: every
//! rank's trace encoded as it is sent (`mheta_trace::encode`), the bytes
//! rank 0 receives, their decoding, and rank 0's plan
//! (`mheta_runtime::plan_at_root`: the model, GBS, the move's price and
//! the median-iteration check) and the decision, on synthetic traces of
//! P ranks, 64 a host, on a profile written by kind of pair: the
//! Jacobi-like iteration (halo exchange, a stage, an all-reduce) and the
//! same with out-of-core I/O on a third of the ranks
//! (`mheta_model::synthetic`). The gather itself is MPI's (the real one
//! from 2 to 16 ranks: `scripts/gather_study.py`). Run: `cargo bench -p
//! mheta-runtime --bench planning`. Each figure is the fastest of 3 runs.

use mheta_model::Dist;
use mheta_model::redist;
use mheta_model::synthetic::{app, hetero_cluster, jacobi_trace, profile_by_host};
use mheta_runtime::{Inputs, plan_at_root};
use std::hint::black_box;
use std::path::Path;
use std::time::Instant;

fn main() {
    println!(
        "{:<10} {:>6} {:>14} {:>12} {:>12} {:>12} {:>10}",
        "trace", "ranks", "at rank 0 (B)", "encode (ms)", "decode (ms)", "plan (ms)", "moves"
    );
    for p in [1024u32, 4096, 16384] {
        let prof = profile_by_host(p, 64);
        let jacobi: Vec<_> = (0..p)
            .map(|r| jacobi_trace(r, p, 1_000_000 + (r as u64 * 7919 % 13) * 150_000, 8 * 1026))
            .collect();
        let (io, io_decl) = hetero_cluster(42, p, 64);
        let cases = [
            ("jacobi", jacobi, app(vec![64; p as usize])),
            ("jacobi+io", io, io_decl),
        ];
        for (name, traces, decl) in cases {
            let fastest = |f: &mut dyn FnMut()| {
                (0..3)
                    .map(|_| {
                        let t = Instant::now();
                        f();
                        t.elapsed().as_secs_f64()
                    })
                    .fold(f64::INFINITY, f64::min)
            };
            let mut bytes: Vec<Vec<u8>> = Vec::new();
            let encode = fastest(&mut || bytes = traces.iter().map(mheta_trace::encode).collect());
            let total: usize = bytes.iter().map(Vec::len).sum();
            let decode = fastest(&mut || {
                for b in &bytes {
                    black_box(mheta_trace::decode(b, Path::new("bench")).expect("decode"));
                }
            });
            let current = Dist(decl.dist.clone());
            let inputs = Inputs {
                app: &decl,
                current: &current,
                profile: &prof,
                rebuild_s_per_row: None,
                cpu_slowdown: None,
            };
            let mut moved = false;
            let plan = fastest(&mut || {
                let x = plan_at_root(&traces, &inputs).expect("plan");
                let d = redist::decide(x.current_s, x.found.predicted_s, x.cost.total_s, 1000);
                moved = d.moved;
                black_box(x);
            });
            println!(
                "{:<10} {:>6} {:>14} {:>12.1} {:>12.1} {:>12.1} {:>10}",
                name,
                p,
                total,
                encode * 1e3,
                decode * 1e3,
                plan * 1e3,
                if moved { "yes" } else { "no" }
            );
        }
    }
}
