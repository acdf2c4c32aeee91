//! The load description behind `--load` of `mheta predict`, `mheta
//! search` and `mheta slowdown`: reading one (TOML or JSON,
//! [`mheta_model::slowdown::LoadSpec`], or the `load` object of a `mheta
//! sense` file), applying it to a model, and printing what the model
//! makes of it. (`load.rs` beside it is `mheta load`, which generates
//! load.)

use anyhow::{Context, Result, bail};
use mheta_model::Model;
use mheta_model::slowdown::{LoadSpec, LocalRule, Slowdowns};
use mheta_model::stoch::Stoch;
use std::path::Path;

/// The load in `path`: a load description, or a `mheta sense` file
/// written with `--ranks` (its `load` object).
pub fn read(path: &Path, rule: Option<LocalRule>) -> Result<LoadSpec> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).with_context(|| format!("reading load {name}"))?;
    let mut spec = if text.trim_start().starts_with('{') {
        let v: serde_json::Value =
            serde_json::from_str(&text).with_context(|| format!("{name}: not valid JSON"))?;
        match v.get("format").and_then(|f| f.as_str()) {
            Some("mheta-sense") => match v.get("load") {
                Some(l) if !l.is_null() => serde_json::from_value(l.clone())
                    .with_context(|| format!("{name}: its load object"))?,
                _ => bail!(
                    "{name}: this sense file has no load object (run `mheta sense` with --ranks CORE:RANKS;...)"
                ),
            },
            Some(other) => bail!("{name}: a {other} file is not a load description"),
            None => LoadSpec::parse(&text, &name)?,
        }
    } else {
        LoadSpec::parse(&text, &name)?
    };
    if let Some(r) = rule {
        spec.rule = r;
    }
    Ok(spec)
}

/// `m` under the load of `spec` for a run of `iters` iterations (the run's
/// dedicated length is the window a switching load is averaged over).
pub fn apply(m: Model, spec: &LoadSpec, iters: u64, path: &Path) -> Result<Model> {
    let base = m
        .predict(&mheta_model::Dist(m.app.dist.clone()))?
        .per_iteration_s;
    let s = spec.resolve(m.ranks(), base * iters as f64, &path.display().to_string())?;
    Ok(m.with_load(s))
}

/// One line per loaded rank: its CPU slowdown and how it was formed.
pub fn describe(s: &Slowdowns) -> Vec<String> {
    let p = s.cpu.len();
    let mut out = Vec::new();
    for r in 0..p {
        if s.cpu[r] != Stoch::point(1.0) {
            out.push(format!(
                "rank {r}: CPU slowdown {:.3} ({})",
                s.cpu[r], s.how[r]
            ));
        }
        for q in 0..p {
            let n = s.net[r * p + q];
            if q != r && n != Stoch::point(1.0) {
                out.push(format!(
                    "rank {r} -> {q}: communication slowdown {n:.3} (eq. 3)"
                ));
            }
        }
    }
    if out.is_empty() {
        out.push("every rank dedicated".into());
    }
    out
}

/// One line per rank the model replays turn by turn (a time-shared rank
/// on a node whose load gives the scheduler's turn).
pub fn turn_lines(m: &Model) -> Vec<String> {
    (0..m.ranks())
        .filter_map(|r| {
            let (on, off) = m.turn_of(r)?;
            Some(format!(
                "rank {r}: replayed turn by turn, {:.2} ms on its core then {:.2} ms away on average",
                on * 1e3,
                off * 1e3
            ))
        })
        .collect()
}

/// A stochastic value as JSON: mean, sd and the ±2σ range.
pub fn json(s: Stoch) -> serde_json::Value {
    let (lo, hi) = s.range2();
    serde_json::json!({"mean": s.mean, "sd": s.sd, "lo2": lo, "hi2": hi})
}
