//! `mheta show`: a recorded trace directory (per rank its instrumented
//! iterations, stages, I/O fits and events) or a cluster profile (per pair
//! and per node), as tables or JSON.

use anyhow::{Result, bail};
use mheta_model::{Dist, analysis};
use mheta_profile::ClusterProfile;
use mheta_trace::{Iteration, RankTrace};
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct ShowArgs {
    /// Trace directory from `mheta run`.
    #[arg(long, required_unless_present = "profile", conflicts_with = "profile")]
    trace: Option<PathBuf>,
    /// Cluster profile from `mheta bench`.
    #[arg(long)]
    profile: Option<PathBuf>,
    /// JSON instead of tables (traces: one object with the app
    /// declaration and ranks; profile: the profile itself).
    #[arg(long)]
    json: bool,
}

pub fn main(a: ShowArgs) -> Result<i32> {
    match (a.profile, a.trace) {
        (Some(profile), _) => {
            let p = ClusterProfile::load(&profile)?;
            if a.json {
                print!("{}", p.to_json());
            } else {
                print!("{}", p.tables());
            }
        }
        (None, Some(trace)) => {
            let traces = mheta_trace::read_dir(&trace)?;
            let app = mheta_trace::read_app(&trace).ok();
            if a.json {
                trace_json(&traces, app.as_ref());
            } else {
                trace_text(&traces, app.as_ref());
            }
        }
        (None, None) => bail!("give --trace DIR or --profile FILE"),
    }
    Ok(0)
}

/// One JSON object: the app declaration, the ranks, and per rank its
/// stages and I/O.
fn trace_json(traces: &[RankTrace], app: Option<&mheta_trace::AppDecl>) {
    let analysis: Vec<_> = traces
        .iter()
        .map(|t| {
            serde_json::json!({
                "rank": t.rank,
                "stages": t.iterations.iter().map(analysis::stages).collect::<Vec<_>>(),
                "io": analysis::io(t),
            })
        })
        .collect();
    println!(
        "{}",
        serde_json::json!({ "app": app, "ranks": traces, "analysis": analysis })
    );
}

/// Per rank: its summary, its variables' I/O, and every iteration.
fn trace_text(traces: &[RankTrace], app: Option<&mheta_trace::AppDecl>) {
    if let Some(a) = app {
        println!(
            "app {} rows {} dist {}",
            a.app,
            a.rows,
            Dist(a.dist.clone())
        );
    }
    for t in traces {
        let p = mheta_model::model::Program::from_trace(t);
        println!(
            "rank {} ({} pid {}): {} iterations, median {:.3} ms: {:.3} ms scaled compute, {:.3} ms unscaled",
            t.rank,
            t.host,
            t.pid,
            t.iterations.len(),
            p.measured_s * 1e3,
            p.scaled_s * 1e3,
            p.unscaled_s * 1e3,
        );
        io_text(t);
        for it in &t.iterations {
            iteration_text(it);
        }
    }
}

/// A rank's variables: reads, writes and seeks with their fitted costs,
/// and the prefetches.
fn io_text(t: &RankTrace) {
    let fit = |c: &analysis::Calls| match (c.overhead_s, c.per_byte_s) {
        (Some(o), Some(b)) => format!("O = {:.3} us, {:.3} ns/byte", o * 1e6, b * 1e9),
        _ => "one size: O and per-byte not separable".into(),
    };
    for v in analysis::io(t) {
        println!(
            "  variable {}: {} reads ({} B, {:.3} ms; {}), {} writes ({} B, {:.3} ms; {}), {} seeks",
            v.name,
            v.reads.calls,
            v.reads.bytes,
            v.reads.time_s * 1e3,
            fit(&v.reads),
            v.writes.calls,
            v.writes.bytes,
            v.writes.time_s * 1e3,
            fit(&v.writes),
            v.seeks
        );
        for p in &v.prefetches {
            println!(
                "    prefetch {} B: T_r {:.3} us, T_A {:.3} us",
                p.bytes,
                p.read_s * 1e6,
                p.overlap_s * 1e6
            );
        }
    }
}

/// One iteration: its stages, then its events as a table.
fn iteration_text(it: &Iteration) {
    println!(
        "  iteration {}: {:.3} ms, {} events",
        it.index,
        it.duration_ns as f64 / 1e6,
        it.events.len()
    );
    for (k, st) in analysis::stages(it).iter().enumerate() {
        println!(
            "    stage {k}: {:.3} ms = {:.3} ms compute (T_phi) + {:.3} ms I/O",
            st.total_s * 1e3,
            st.compute_s * 1e3,
            st.io_s * 1e3
        );
    }
    println!(
        "    {:>12} {:>10} {:>6}  {:<24} detail",
        "start us", "took us", "thread", "call"
    );
    for e in &it.events {
        let op = e.op.map_or("(marker)", |o| o.name());
        println!(
            "    {:>12.3} {:>10.3} {:>6}  {op:<24} {}",
            e.t0_ns as f64 / 1e3,
            e.t1_ns.saturating_sub(e.t0_ns) as f64 / 1e3,
            e.thread,
            e.what
        );
    }
}
