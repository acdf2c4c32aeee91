//! What `--auto`'s plan costs rank 0 at large P, without MPI: every
//! rank's trace (its bytes, as the gather would have sent it whole)
//! summarised and encoded as the rank sends it
//! (`mheta_model::summary::RankSummary`; its time a rank), the bytes
//! rank 0 receives, their decoding, and rank 0's plan
//! (`mheta_runtime::plan_at_root`: the model, GBS, the move's price and
//! the median-iteration check) and the decision, on P ranks, 64 a host,
//! on a profile written by kind of pair.
//!
//! The traces:
//! - `jacobi-synth`: the Jacobi-like iteration of `mheta_model::synthetic`
//!   (halo exchange, a stage, an all-reduce), and `jacobi+io` the same
//!   with out-of-core I/O on a third of the ranks;
//! - with `MHETA_PLAN_TRACES=DIR`, the six kernels of `apps/` as recorded
//!   by `scripts/planning-traces.sh DIR` (real runs at 4 ranks), grown to
//!   P ranks by `mheta_model::synthetic::grown`: each interior rank is a
//!   copy of recorded rank 1 with its peers moved.
//!
//! Every rank's compute is stretched by 1 to 2.8 (heterogeneity). The
//! gather itself is MPI's (the real one from 2 to 16 ranks:
//! `scripts/gather_study.py`). A case whose traces would put more than
//! 1 GB at rank 0 prints its bytes and is not run, and so does a kernel
//! whose plan took more than 20 s at the size before. Run: `cargo bench
//! -p mheta-runtime --bench planning [-- NAME ...]` (only the cases whose
//! names contain a NAME, as libtest filters). Each time is the fastest of
//! 3 runs (of 1 when it took more than 2 s).

use mheta_model::Dist;
use mheta_model::redist;
use mheta_model::summary::RankSummary;
use mheta_model::synthetic::{app, grown, hetero_cluster, jacobi_trace, profile_by_host};
use mheta_profile::ClusterProfile;
use mheta_runtime::{Inputs, plan_at_root};
use mheta_trace::{AppDecl, RankTrace};
use std::hint::black_box;
use std::path::PathBuf;
use std::time::Instant;

/// The kernels `scripts/planning-traces.sh` records.
const KERNELS: [&str; 6] = ["jacobi", "cg", "lanczos", "sor", "mg", "wavefront"];
/// Cases whose traces would put more bytes than this at rank 0 are not
/// run (their bytes are printed).
const MAX_BYTES: usize = 1 << 30;
/// A kernel whose plan took longer than this is not run at larger P.
const MAX_PLAN_S: f64 = 20.0;

/// Rank r's compute stretch: 1 to 2.8.
fn slow(r: u32) -> f64 {
    1.0 + (r as u64 * 7919 % 13) as f64 * 0.15
}

fn main() {
    let only: Vec<String> = (std::env::args().skip(1))
        .filter(|a| !a.starts_with('-'))
        .collect();
    let wanted = |name: &str| only.is_empty() || only.iter().any(|o| name.contains(o.as_str()));
    let recorded = std::env::var_os("MHETA_PLAN_TRACES").map(PathBuf::from);
    let kernels: Vec<(&str, Vec<RankTrace>, AppDecl)> = match &recorded {
        None => {
            println!(
                "(the six kernels: MHETA_PLAN_TRACES=DIR after scripts/planning-traces.sh DIR)"
            );
            Vec::new()
        }
        Some(dir) => KERNELS
            .iter()
            .map(|&k| {
                let d = dir.join(k);
                let traces =
                    mheta_trace::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display()));
                let decl =
                    mheta_trace::read_app(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display()));
                (k, traces, decl)
            })
            .collect(),
    };
    println!(
        "{:<12} {:>6} {:>10} {:>14} {:>14} {:>11} {:>12} {:>12} {:>6}",
        "trace",
        "ranks",
        "events",
        "traces (B)",
        "at rank 0 (B)",
        "a rank (us)",
        "decode (ms)",
        "plan (ms)",
        "moves"
    );
    // Per kernel, its last plan's seconds and ranks.
    let mut last_plan: Vec<Option<(f64, u32)>> = vec![None; kernels.len()];
    for p in [1024u32, 4096, 16384] {
        let prof = profile_by_host(p, 64);
        if wanted("jacobi-synth") {
            let jacobi: Vec<_> = (0..p)
                .map(|r| jacobi_trace(r, p, (1e6 * slow(r)) as u64, 8 * 1026))
                .collect();
            row("jacobi-synth", &jacobi, &app(vec![64; p as usize]), &prof);
        }
        if wanted("jacobi+io") {
            let (io, io_decl) = hetero_cluster(42, p, 64);
            row("jacobi+io", &io, &io_decl, &prof);
        }
        for ((name, traces, decl), last) in kernels.iter().zip(&mut last_plan) {
            if !wanted(name) {
                continue;
            }
            if let Some((secs, at)) = *last
                && secs > MAX_PLAN_S
            {
                println!("{name:<12} {p:>6} not run: {secs:.0} s to plan at {at} ranks");
                continue;
            }
            // The bytes first: a case too big to run is still a figure.
            let edge = match grown(traces, decl, 3, slow) {
                Ok((t, _)) => t,
                Err(e) => {
                    println!("{name:<12} {p:>6} not grown: {e}");
                    continue;
                }
            };
            let inner = &traces[1];
            let bytes = edge
                .iter()
                .map(|t| mheta_trace::encode(t).len())
                .sum::<usize>()
                - mheta_trace::encode(inner).len()
                + (p as usize - 2) * mheta_trace::encode(inner).len();
            if bytes > MAX_BYTES {
                println!(
                    "{name:<12} {p:>6} {:>10} {bytes:>14} not run: too big to hold",
                    ""
                );
                continue;
            }
            let (t, d) = grown(traces, decl, p, slow).expect("grown at 3 ranks");
            *last = Some((row(name, &t, &d, &prof), p));
        }
    }
}

/// One line of the table: `traces` summarised as each rank would
/// summarise its own, the summaries as rank 0 would receive them, and the
/// plan on them; returns the plan's seconds.
fn row(name: &str, traces: &[RankTrace], decl: &AppDecl, prof: &ClusterProfile) -> f64 {
    let fastest = |f: &mut dyn FnMut()| {
        let mut best = f64::INFINITY;
        for _ in 0..3 {
            let t = Instant::now();
            f();
            best = best.min(t.elapsed().as_secs_f64());
            if best > 2.0 {
                break;
            }
        }
        best
    };
    let events: usize = traces
        .iter()
        .flat_map(|t| &t.iterations)
        .map(|i| i.events.len())
        .sum();
    let trace_bytes: usize = traces.iter().map(|t| mheta_trace::encode(t).len()).sum();
    let mut bytes: Vec<Vec<u8>> = Vec::new();
    let summarize = fastest(&mut || {
        bytes = traces
            .iter()
            .map(|t| RankSummary::from_trace(t).encode())
            .collect()
    });
    let total: usize = bytes.iter().map(Vec::len).sum();
    let mut sums = Vec::new();
    let decode = fastest(&mut || {
        sums = bytes
            .iter()
            .map(|b| RankSummary::decode(b).expect("decode"))
            .collect::<Vec<_>>()
    });
    drop(bytes);
    let current = Dist(decl.dist.clone());
    let inputs = Inputs {
        app: decl,
        current: &current,
        profile: prof,
        rebuild_s_per_row: None,
        sensed: None,
        given: None,
    };
    let mut moved = false;
    let mut copies: Vec<Vec<RankSummary>> = (0..3).map(|_| sums.clone()).collect();
    let plan = fastest(&mut || {
        let x = plan_at_root(copies.pop().expect("a copy a run"), &inputs).expect("plan");
        let d = redist::decide(x.current_s, x.found.predicted_s, x.cost.total_s, 1000);
        moved = d.moved;
        black_box(x);
    });
    println!(
        "{:<12} {:>6} {:>10} {:>14} {:>14} {:>11.1} {:>12.1} {:>12.1} {:>6}",
        name,
        traces.len(),
        events,
        trace_bytes,
        total,
        summarize / traces.len() as f64 * 1e6,
        decode * 1e3,
        plan * 1e3,
        if moved { "yes" } else { "no" }
    );
    plan
}
