//! The model at each real run's own CPU speed: how much of a diff the
//! host's drift in the cost of a row explains, and what is left for the
//! rest of the model (communication, waiting, the emulation).
//!
//! A real run and the instrumented run its model learned from happen
//! seconds to minutes apart, and a memory-bound kernel's CPU time per
//! row moves between them (on this project's VM by up to a third, while
//! an integer loop's stays within 2%: the host's memory system, not its
//! cores; docs/design/fidelity.md, "The host's drift, measured per run").
//! Every run reports each rank's median CPU time in its stages
//! (`stage_cpu_median_s`), and the instrumented run, under
//! `MHETA_DEBUG_TIMES`, each iteration's (`stage_cpu_s`), of which the
//! model's window is the recorded ones. The paper's model (one cost a
//! row, no reuse term, no row-cost curve) with each rank's CPU slowdown
//! set to the run's CPU time per row over the window's
//! ([`Model::with_load`], the replay's `cpu_slow`) prices the run's
//! computation as the run measured it, and its communication and
//! waiting as the model does. It replays each recorded iteration and
//! takes the median, as the study's prediction does.
//!
//! This absorbs the cost of a row at other row counts too (the part a
//! row-cost curve models), so it is a diagnostic beside the study's
//! diff, never the prediction: it uses the run's own measurement.

use super::noise::RunRecord;
use mheta_base::median;
use mheta_model::slowdown::Slowdowns;
use mheta_model::stoch::Stoch;
use mheta_model::{Dist, Model};
use mheta_trace::RankTrace;
use serde_json::Value;

/// Each rank's median CPU time a row in its stages over the iterations
/// its trace recorded, from the instrumented run's result (`inst`, with
/// per-iteration `stage_cpu_s`); None for a rank without the figures or
/// rows.
pub fn window_per_row(inst: &Value, traces: &[RankTrace]) -> Vec<Option<f64>> {
    let ranks = inst["ranks"].as_array().map_or(&[][..], Vec::as_slice);
    (traces.iter())
        .map(|t| {
            let r = ranks.get(t.rank as usize)?;
            let (cpu, rows) = (r["stage_cpu_s"].as_array()?, r["rows"].as_u64()?);
            let mut v: Vec<f64> = (t.iterations.iter())
                .filter_map(|it| cpu.get(it.index as usize)?.as_f64())
                .collect();
            median(&mut v).filter(|_| rows > 0).map(|c| c / rows as f64)
        })
        .collect()
}

/// Each rank's CPU time a row in `run` over the window's; 1 for a rank
/// without both figures (no rows in one of the runs).
pub fn factors(window: &[Option<f64>], run: &RunRecord) -> Vec<f64> {
    let ok = |x: Option<f64>| x.filter(|v| v.is_finite() && *v > 0.0);
    (run.ranks.iter().enumerate())
        .map(|(j, r)| {
            let now = r
                .stage_cpu_median_s
                .filter(|_| r.rows > 0)
                .map(|c| c / r.rows as f64);
            match (ok(now), ok(window.get(j).copied().flatten())) {
                (Some(now), Some(then)) => now / then,
                _ => 1.0,
            }
        })
        .collect()
}

/// The iteration `paper` predicts for `d` with each rank's computation at
/// `run`'s CPU time a row (see the module doc); None where the model
/// cannot price `d` or the run's ranks do not match the model's.
pub fn at_run_cpu(paper: &Model, window: &[Option<f64>], run: &RunRecord, d: &Dist) -> Option<f64> {
    let p = paper.ranks();
    let f = factors(window, run);
    if f.len() != p {
        return None;
    }
    let mut load = Slowdowns::dedicated(p);
    load.cpu = f.iter().map(|&x| Stoch::point(x)).collect();
    load.cpu_bounds = f.iter().map(|&x| (x, x)).collect();
    let m = paper.clone().with_load(load);
    match m.predict_iterations(d) {
        Ok(Some((med, _))) => Some(med),
        Ok(None) => m.predict(d).ok().map(|x| x.per_iteration_s),
        Err(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::{factors, window_per_row};
    use crate::experiment::noise::{RankRun, RunRecord};
    use serde_json::json;

    fn run(cpu: &[(u64, Option<f64>)]) -> RunRecord {
        RunRecord {
            iter_median_s: 1.0,
            busiest_stage_s: 1.0,
            elapsed_s: 1.0,
            iters: Some(1),
            ranks: (cpu.iter())
                .map(|&(rows, c)| RankRun {
                    rows,
                    cpu_s: None,
                    runq_wait_s: None,
                    cpu_ns_per_unit: None,
                    stage_cpu_median_s: c,
                })
                .collect(),
            flagged: false,
            flags: Vec::new(),
        }
    }

    #[test]
    fn a_rank_is_slowed_by_its_cost_a_row_over_the_windows() {
        // Window: 2 and 4 s a row. Run: 300 s over 100 rows, 150 over 50.
        let f = factors(
            &[Some(2.0), Some(4.0), None],
            &run(&[(100, Some(300.0)), (50, Some(150.0)), (10, Some(1.0))]),
        );
        assert_eq!(f, vec![1.5, 0.75, 1.0]);
        // A rank without rows in the run keeps its speed.
        assert_eq!(factors(&[Some(2.0)], &run(&[(0, None)])), vec![1.0]);
    }

    #[test]
    fn the_window_is_the_recorded_iterations_median_a_row() {
        let trace = |rank: u32, idx: &[u64]| mheta_trace::RankTrace {
            rank,
            world_size: 2,
            pid: 1,
            host: String::new(),
            files: vec![],
            iterations: (idx.iter())
                .map(|&index| mheta_trace::Iteration {
                    index,
                    duration_ns: 1,
                    events: vec![],
                })
                .collect(),
        };
        let inst = json!({"ranks": [
            {"rows": 10, "stage_cpu_s": [9.0, 9.0, 1.0, 2.0, 3.0, 9.0]},
            {"rows": 0, "stage_cpu_s": [1.0, 1.0, 1.0]},
        ]});
        let w = window_per_row(&inst, &[trace(0, &[2, 3, 4]), trace(1, &[0, 1])]);
        assert_eq!(w, vec![Some(0.2), None]);
    }
}
