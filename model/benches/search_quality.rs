//! Search quality: on 50 generated heterogeneous clusters of 8 ranks (CPU
//! power 0.2-1, memory budgets that put about a third of the ranks out of
//! core at Block, disk factors 1-8; `synthetic::hetero_cluster`), how close
//! each strategy gets to the best distribution found, and with how many
//! model evaluations. Annealing, genetic and random get 100x the
//! evaluations GBS used. Run: `cargo bench -p mheta-model --bench
//! search_quality`.

use mheta_model::synthetic::{hetero_cluster, profile};
use mheta_model::{Model, search};

fn main() {
    let (p, rows_per, clusters) = (8u32, 64u64, 50u64);
    let names = ["gbs", "annealing", "genetic", "random", "balanced", "block"];
    // Per strategy: evaluations, gap to the best of all (%), gap to annealing (%).
    let mut evals = vec![Vec::new(); names.len()];
    let mut gap = vec![Vec::new(); names.len()];
    let mut vs_sa = vec![Vec::new(); names.len()];
    for seed in 0..clusters {
        let (traces, decl) = hetero_cluster(1000 + seed, p, rows_per);
        let m = Model::new(&traces, decl, &profile(p)).expect("model");
        let g = search::gbs(&m).expect("gbs");
        let budget = 100 * g.evaluations;
        let found: Vec<search::Found> = names
            .iter()
            .map(|s| search::by_name(&m, s, budget, seed).expect("search"))
            .collect();
        let best = found
            .iter()
            .map(|f| f.predicted_s)
            .fold(f64::INFINITY, f64::min);
        let sa = found[1].predicted_s;
        for (k, f) in found.iter().enumerate() {
            evals[k].push(f.evaluations as f64);
            gap[k].push(100.0 * (f.predicted_s / best - 1.0));
            vs_sa[k].push(100.0 * (f.predicted_s / sa - 1.0));
        }
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let max = |v: &[f64]| v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    println!(
        "{clusters} generated clusters of {p} ranks, {} rows each",
        p as u64 * rows_per
    );
    println!(
        "{:<10} {:>12} {:>14} {:>13} {:>16} {:>16}",
        "strategy", "mean evals", "mean gap (%)", "max gap (%)", "max vs SA (%)", "within 1% of SA"
    );
    for (k, n) in names.iter().enumerate() {
        let within = vs_sa[k].iter().filter(|&&x| x <= 1.0).count();
        println!(
            "{:<10} {:>12.0} {:>14.3} {:>13.3} {:>16.3} {:>13}/{}",
            n,
            mean(&evals[k]),
            mean(&gap[k]),
            max(&gap[k]),
            max(&vs_sa[k]),
            within,
            clusters
        );
    }
}
