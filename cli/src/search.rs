//! `mheta search`: search distributions with the model and print the
//! best; or, under a load, the mean- and quantile-optimal plans; or the
//! paper's figure 8 spectrum.

use super::load_desc;
use super::predict::ModelArgs;
use anyhow::Result;
use mheta_model::risk::PricedPlan;
use mheta_model::{Dist, Model, search};
use mheta_profile::ModeChoice;

#[derive(clap::Args, Debug)]
pub struct SearchArgs {
    #[command(flatten)]
    model: ModelArgs,
    /// gbs (generalized binary search), block, balanced (by measured
    /// speed), exhaustive (every distribution on the finest grid of
    /// rows that fits --budget), annealing, genetic or random (stochastic,
    /// --budget evaluations, --seed).
    #[arg(long, default_value = "gbs", value_parser = clap::builder::PossibleValuesParser::new(search::STRATEGIES))]
    strategy: String,
    /// Model evaluations for the stochastic strategies, and the most
    /// distributions exhaustive search may visit.
    #[arg(long, default_value_t = 2000, value_parser = clap::value_parser!(u64).range(1..))]
    budget: u64,
    /// Seed of the stochastic strategies.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Threads gbs evaluates each round's moves on, from 1024 ranks (the
    /// same plan as on one; below 1024 ranks an evaluation is shorter
    /// than starting a thread). Default: every core
    /// (MHETA_PLAN_THREADS sets it for --auto's plans, default 1).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    threads: Option<u64>,
    /// Instead of searching, print the paper's figure 8 spectrum: K
    /// distributions along Blk -> I-C -> I-C/Bal -> Bal -> Blk with
    /// their predicted times (widened around Blk, up to ±50% on the end
    /// ranks, where the corners meet: equal CPUs, no memory limits).
    #[arg(long, value_name = "K")]
    spectrum: Option<usize>,
    /// With --load: also minimise this quantile of the iteration time
    /// (e.g. 0.95) and print both plans, the mean-optimal and the
    /// quantile-optimal, each at its mean and quantile.
    #[arg(long, value_name = "Q", requires = "load", value_parser = parse_quantile)]
    quantile: Option<f64>,
    /// Iterations of the run: a load that switches modes is averaged
    /// over the run's length (with --load).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    iters: u64,
    /// One JSON object on stdout instead of text.
    #[arg(long)]
    json: bool,
}

fn parse_quantile(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(q) if q > 0.0 && q < 1.0 => Ok(q),
        _ => Err(format!(
            "{s:?}: a quantile is a number strictly between 0 and 1"
        )),
    }
}

pub fn main(a: SearchArgs) -> Result<i32> {
    let (m, _) = a.model.model(ModeChoice::default(), a.iters)?;
    if let Some(q) = a.quantile {
        quantile(&a, &m, q)?;
    } else if let Some(k) = a.spectrum {
        spectrum(&m, k, a.json)?;
    } else {
        strategy(&a, &m)?;
    }
    Ok(0)
}

/// The mean-optimal and the `q`-quantile-optimal plans under the load.
fn quantile(a: &SearchArgs, m: &Model, q: f64) -> Result<()> {
    let r = mheta_model::risk::quantile_search(m, q)?;
    if a.json {
        println!("{}", serde_json::to_string(&r)?);
        return Ok(());
    }
    let show = |name: &str, p: &PricedPlan| {
        println!(
            "{name:<16} {:<28} mean {:.6} s  ±2σ {:.6}  q{:.0} {:.6} s",
            Dist(p.dist.clone()).to_string(),
            p.per_iteration.mean,
            2.0 * p.per_iteration.sd,
            q * 100.0,
            p.quantile_s
        );
    };
    println!(
        "per iteration, under load ({}):",
        a.model
            .load
            .as_ref()
            .map(|l| l.display().to_string())
            .unwrap_or_default()
    );
    show("mean-optimal", &r.mean_plan);
    show("quantile-optimal", &r.quantile_plan);
    if r.differ {
        let (a, b) = (&r.mean_plan, &r.quantile_plan);
        println!(
            "the plans differ: the quantile plan's q{:.0} is {:.2}% lower, its mean {:.2}% higher",
            q * 100.0,
            100.0 * (1.0 - b.quantile_s / a.quantile_s),
            100.0 * (b.per_iteration.mean / a.per_iteration.mean - 1.0)
        );
    } else {
        println!("the plans are the same distribution: {}", r.note);
    }
    if let Some(s) = &m.load {
        for line in load_desc::describe(s)
            .into_iter()
            .chain(load_desc::turn_lines(m))
        {
            println!("  {line}");
        }
    }
    println!("evaluations:    {}", r.evaluations);
    Ok(())
}

/// The paper's figure 8 spectrum: `k` distributions with their predicted
/// times, and its corners.
fn spectrum(m: &Model, k: usize, json: bool) -> Result<()> {
    let c = search::corners(m);
    let rows: Vec<serde_json::Value> = search::spectrum(m, k)
        .into_iter()
        .map(|d| {
            let t = m.predict(&d).map(|p| p.per_iteration_s).ok();
            serde_json::json!({"dist": d, "predicted_s": t})
        })
        .collect();
    if json {
        println!("{}", serde_json::json!({"corners": c, "spectrum": rows}));
        return Ok(());
    }
    println!(
        "Blk {}  Bal {}  I-C {}  I-C/Bal {}",
        c.blk, c.bal, c.ic, c.ic_bal
    );
    println!("{:<40} {:>14}", "distribution", "predicted (s)");
    for r in &rows {
        let d: Vec<u64> = serde_json::from_value(r["dist"].clone())?;
        println!(
            "{:<40} {:>14.6}",
            Dist(d).to_string(),
            r["predicted_s"].as_f64().unwrap_or(f64::INFINITY)
        );
    }
    Ok(())
}

/// The named strategy's best distribution against Block.
fn strategy(a: &SearchArgs, m: &Model) -> Result<()> {
    let f = if a.strategy == "gbs" {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        search::gbs_on(m, a.threads.map_or(cores, |n| n as usize))?
    } else {
        search::by_name(m, &a.strategy, a.budget, a.seed).map_err(anyhow::Error::msg)?
    };
    let block = search::block(m)?;
    if a.json {
        println!("{}", serde_json::to_string(&f)?);
        return Ok(());
    }
    println!("strategy:       {}", f.strategy);
    println!("dist:           {}", Dist(f.dist.clone()));
    println!("predicted:      {:.6} s per iteration", f.predicted_s);
    println!(
        "block:          {:.6} s per iteration ({})",
        block.predicted_s,
        Dist(block.dist.clone())
    );
    println!(
        "speedup:        {:.3}x over block (predicted)",
        block.predicted_s / f.predicted_s
    );
    println!(
        "evaluations:    {} full model, {} bisection steps",
        f.evaluations, f.bisection_steps
    );
    Ok(())
}
