//! `mheta predict`: the MHETA model's time of one distribution, per rank
//! and per iteration, under an optional load, and what moving to it
//! costs. Also the model inputs `predict` and `search` share.

use super::load_desc;
use anyhow::{Context, Result};
use mheta_model::curve::CurveFile;
use mheta_model::risk::StochPrediction;
use mheta_model::slowdown::LocalRule;
use mheta_model::{Dist, Model};
use mheta_profile::{ClusterProfile, ModeChoice};
use std::path::PathBuf;

/// The model's inputs: a profile, a trace and an optional load.
#[derive(clap::Args, Debug)]
pub struct ModelArgs {
    /// Cluster profile from `mheta bench`.
    #[arg(long)]
    pub profile: PathBuf,
    /// Trace directory from `mheta run`.
    #[arg(long)]
    pub trace: PathBuf,
    /// The load the run meets on a shared cluster: a load description
    /// (TOML or JSON: per node its ranks and competing processes, or
    /// its sensed CPU availability, and its links' slowdown) or a
    /// `mheta sense` file written with --ranks. Computation and message
    /// overheads are slowed per Figueira and Berman eqs. 1-2, transfers per eq. 3;
    /// the prediction carries mean ± 2σ (Schopf and Berman).
    #[arg(long, value_name = "FILE")]
    pub load: Option<PathBuf>,
    /// Local-slowdown rule for competitors: sharing (eq. 2 under
    /// processor sharing, the default) or paper (eq. 2 as published).
    /// Overrides the file's `rule`.
    #[arg(long)]
    pub rule: Option<LocalRule>,
    /// Each rank's cost a row over its rows (a `mheta-row-curve` file,
    /// from `mheta experiment --row-curve`): a rank's computation scales
    /// by W'/W · c(W')/c(W) instead of the paper's W'/W.
    #[arg(long, value_name = "FILE")]
    pub row_curve: Option<PathBuf>,
}

impl ModelArgs {
    /// The model of the trace on the profile's figures in `mode`, under
    /// the load over `iters` iterations; and the profile as measured.
    pub fn model(&self, mode: ModeChoice, iters: u64) -> Result<(Model, ClusterProfile)> {
        let traces = mheta_trace::read_dir(&self.trace)?;
        let app = mheta_trace::read_app(&self.trace)?;
        let prof = ClusterProfile::load(&self.profile)?;
        let mut m = Model::new(&traces, app, &prof.with_mode(mode))?;
        if let Some(p) = &self.row_curve {
            let what = || format!("--row-curve {}", p.display());
            let c = CurveFile::load(p)
                .and_then(|f| f.curves_for(&m.app.app, m.rows(), m.ranks()))
                .with_context(what)?;
            m = m.with_row_curves(c).with_context(what)?;
        }
        if let Some(l) = &self.load {
            let spec = load_desc::read(l, self.rule)?;
            m = load_desc::apply(m, &spec, iters, l)?;
        }
        Ok((m, prof))
    }
}

#[derive(clap::Args, Debug)]
pub struct PredictArgs {
    #[command(flatten)]
    model: ModelArgs,
    /// Rows per rank, s0,s1,... (sums to the app's rows).
    #[arg(long)]
    dist: String,
    /// Iterations in the run (total_s = iters * per_iteration_s).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    iters: u64,
    /// Which mode of a multi-modal network figure (o_s, o_r, 8-byte
    /// latency) the model uses: mean (the modes holding at least 20%
    /// of the samples, weighted by their shares: what the profile
    /// stores), dominant (the largest share), fast or slow.
    #[arg(long, default_value = "mean")]
    mode: ModeChoice,
    /// Also price moving from this distribution (default: the one
    /// recorded) to --dist, and say whether the gain over --iters
    /// iterations pays for it, as `--auto` decides.
    #[arg(long, value_name = "DIST")]
    from: Option<String>,
    /// One JSON object on stdout instead of a table.
    #[arg(long)]
    json: bool,
}

/// What `predict` found: the prediction of `dist`, and the move to it.
struct Found {
    dist: Dist,
    sp: StochPrediction,
    /// The iteration's ±2σ band clipped to what the load can produce.
    range: (f64, f64),
    /// Each recorded iteration replayed under `dist`: their median and
    /// the times (None with fewer than 3 recorded).
    each: Option<(f64, Vec<f64>)>,
    /// The trace's recorded window: its median iteration, s
    /// ([`mheta_trace::recorded_window_s`]).
    window_s: Option<f64>,
    src: Dist,
    cost: mheta_model::redist::MoveCost,
    from_s: f64,
    decision: mheta_model::redist::Decision,
    note: String,
}

pub fn main(a: PredictArgs) -> Result<i32> {
    let (m, prof) = a.model.model(a.mode, a.iters)?;
    let d = Dist::parse(&a.dist, m.ranks(), m.rows())?;
    let sp = mheta_model::risk::predict_stochastic(&m, &d)?;
    let each = m.predict_iterations(&d)?;
    let window_s = mheta_trace::recorded_window_s(&mheta_trace::read_dir(&a.model.trace)?);
    let src = match &a.from {
        Some(f) => Dist::parse(f, m.ranks(), m.rows())?,
        None => Dist(m.app.dist.clone()),
    };
    let cost = m.move_cost(&src, &d);
    let from_s = m.predict(&src)?.per_iteration_s;
    let decision =
        mheta_model::redist::decide(from_s, sp.point.per_iteration_s, cost.total_s, a.iters);
    let range = mheta_model::risk::range_within_load(&m, &d, &sp)?;
    let f = Found {
        dist: d,
        sp,
        range,
        each,
        window_s,
        src,
        cost,
        from_s,
        decision,
        note: mode_note(&prof, a.mode),
    };
    if a.json {
        println!("{}", json(&a, &m, &f));
    } else {
        text(&a, &m, &f);
    }
    Ok(0)
}

/// The line `predict` prints about the network figures' modes.
fn mode_note(p: &ClusterProfile, mode: ModeChoice) -> String {
    let mm = p.multi_modal();
    if mm.is_empty() {
        format!(
            "network: o_s, o_r and 8-byte latency are unimodal in every pair (--mode {mode} changes nothing)"
        )
    } else {
        let list: Vec<String> = mm
            .iter()
            .map(|(s, d, n, t)| format!("{s}->{d} {n}: {t}"))
            .collect();
        let which = if mode == ModeChoice::Mean {
            mheta_profile::MEAN_TEXT.to_string()
        } else {
            format!("the {mode} mode")
        };
        format!(
            "network: {which} of each multi-modal figure ({})",
            list.join("; ")
        )
    }
}

fn json(a: &PredictArgs, m: &Model, f: &Found) -> serde_json::Value {
    let p = &f.sp.point;
    serde_json::json!({
        "dist": f.dist.0,
        "iters": a.iters,
        "mode": a.mode.to_string(),
        "network": f.note,
        "per_iteration_s": p.per_iteration_s,
        "total_s": p.per_iteration_s * a.iters as f64,
        "ranks": p.ranks,
        "iterations_median_s": f.each.as_ref().map(|e| e.0),
        // The reuse term (a profile with a reuse curve) and the
        // paper's model without it, rows as recorded.
        "reuse_term": m.has_reuse(),
        // Per rank, how much of the probe's change its rows follow
        // (eq. R4; 1 unless a row-cost curve's knots measured it).
        "reuse_sensitivity": m.reuse_sensitivity(),
        "without_reuse_per_iteration_s": m.has_reuse().then(|| {
            m.clone().without_reuse().predict(&f.dist).ok().map(|p| p.per_iteration_s)
        }).flatten(),
        "iterations_s": f.each.as_ref().map(|e| &e.1),
        // The recorded iterations' median (per iteration the slowest
        // rank's): what the model at the recorded distribution is judged
        // against.
        "recorded_window_s": f.window_s,
        "load": m.load.as_ref().filter(|_| a.model.load.is_some()),
        "per_iteration": load_desc::json(f.sp.per_iteration),
        // The ±2σ band clipped to what the load can produce.
        "per_iteration_range": [f.range.0, f.range.1],
        "total": load_desc::json(f.sp.total(a.iters)),
        "move": {
            "from": f.src.0,
            "cost_s": f.cost.total_s,
            "bytes": f.cost.bytes,
            "rank_s": f.cost.rank_s,
            "from_per_iteration_s": f.from_s,
            "gain_s": f.decision.gain_s,
            "pays": f.decision.moved,
            "reason": f.decision.reason,
        },
    })
}

fn text(a: &PredictArgs, m: &Model, f: &Found) {
    let (p, iters) = (&f.sp.point, a.iters);
    println!(
        "{:>5} {:>10} {:>12} {:>12} {:>12} {:>12}",
        "rank", "rows", "compute ms", "overhead ms", "wait ms", "finish ms"
    );
    for (i, r) in p.ranks.iter().enumerate() {
        println!(
            "{:>5} {:>10} {:>12.3} {:>12.3} {:>12.3} {:>12.3}",
            i,
            f.dist.0[i],
            r.compute_s * 1e3,
            r.overhead_s * 1e3,
            r.wait_s * 1e3,
            r.total_s * 1e3
        );
    }
    println!(
        "per iteration: {:.6} s   total ({iters} iterations): {:.6} s",
        p.per_iteration_s,
        p.per_iteration_s * iters as f64
    );
    if let Some((med, v)) = &f.each {
        println!(
            "each of the {} recorded iterations replayed: median {med:.6} s ({:+.1}% over the replay of their median)",
            v.len(),
            (med / p.per_iteration_s - 1.0) * 100.0
        );
    }
    if let Some(w) = f.window_s {
        let recorded = Dist(m.app.dist.clone());
        if f.dist == recorded {
            println!(
                "the recorded iterations took {w:.6} s (median, the slowest rank each iteration): the model at the distribution they ran is {:+.1}% off the window it learned from",
                (p.per_iteration_s / w - 1.0) * 100.0
            );
        } else {
            println!(
                "the recorded iterations took {w:.6} s (median, the slowest rank each iteration) on {recorded}"
            );
        }
    }
    if let (Some(l), Some(s)) = (&a.model.load, &m.load) {
        let (it, tot) = (f.sp.per_iteration, f.sp.total(iters));
        println!(
            "under load ({}): per iteration {:.6} ± {:.6} s (±2σ within what the load can produce: {:.6} .. {:.6}); total {:.6} ± {:.6} s",
            l.display(),
            it.mean,
            2.0 * it.sd,
            f.range.0,
            f.range.1,
            tot.mean,
            2.0 * tot.sd
        );
        for line in load_desc::describe(s)
            .into_iter()
            .chain(load_desc::turn_lines(m))
        {
            println!("  {line}");
        }
    }
    if m.has_reuse()
        && let Ok(q) = m.clone().without_reuse().predict(&f.dist)
    {
        println!(
            "reuse term: on (the profile's reuse_by: a row's cost by the iteration's length and the size of its machine's arrays); rows as recorded: per iteration {:.6} s",
            q.per_iteration_s
        );
    }
    println!("{}", f.note);
    println!(
        "move from {}: {} bytes, predicted {:.6} s; gain over {iters} iterations {:.6} s: {}",
        f.src, f.cost.bytes, f.cost.total_s, f.decision.gain_s, f.decision.reason
    );
}
