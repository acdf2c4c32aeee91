//! `mheta slowdown`: the slowdowns a load description means for each
//! rank, by both local-slowdown rules, without a trace.

use super::load_desc;
use anyhow::Result;
use mheta_model::slowdown::LocalRule;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct SlowdownArgs {
    /// Load description (TOML or JSON) or a `mheta sense` file.
    #[arg(long, value_name = "FILE")]
    load: PathBuf,
    /// Ranks of the job.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    np: u64,
    /// Dedicated length of the run, seconds: a load that switches
    /// modes is averaged over it.
    #[arg(long, default_value_t = 60.0)]
    run_s: f64,
    /// One JSON object on stdout instead of a table.
    #[arg(long)]
    json: bool,
}

/// Figueira and Berman eq. 1 (X = X_ded · sd) with eq. 2's slowdown sd per rank, under
/// processor sharing and as published.
pub fn main(a: SlowdownArgs) -> Result<i32> {
    let name = a.load.display().to_string();
    let np = a.np as usize;
    let mut out = Vec::new();
    for rule in [LocalRule::Sharing, LocalRule::Paper] {
        let spec = load_desc::read(&a.load, Some(rule))?;
        out.push(spec.resolve(np, a.run_s, &name)?);
    }
    if a.json {
        let ranks: Vec<serde_json::Value> = (0..np)
            .map(|r| {
                serde_json::json!({
                    "rank": r,
                    "sharing": load_desc::json(out[0].cpu[r]),
                    "paper": load_desc::json(out[1].cpu[r]),
                    // ±2σ clipped to the least and greatest slowdown the
                    // load can produce.
                    "range": out[0].cpu_range2(r),
                    "bounds": out[0].cpu_bounds[r],
                    "how": out[0].how[r],
                })
            })
            .collect();
        println!("{}", serde_json::json!({"load": name, "ranks": ranks}));
    } else {
        println!(
            "{:>5} {:>22} {:>17} {:>22}  how",
            "rank", "sharing (mean ± 2σ)", "within the load", "eq. 2 (mean ± 2σ)"
        );
        for r in 0..np {
            let (lo, hi) = out[0].cpu_range2(r);
            println!(
                "{:>5} {:>22} {:>17} {:>22}  {}",
                r,
                format!("{:.4}", out[0].cpu[r]),
                format!("{lo:.3}..{hi:.3}"),
                format!("{:.4}", out[1].cpu[r]),
                out[0].how[r]
            );
        }
    }
    Ok(0)
}
