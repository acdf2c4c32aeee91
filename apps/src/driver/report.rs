//! The end of a run: finish and verify the kernel, and the one-line JSON
//! report of the job (rank 0) with every rank's: iteration medians,
//! storage, emulation, moves, checkpoints and `--auto`.

use super::Runner;
use crate::{Ctx, Kernel, StorageReport, emulate, gather_json, median, sensor};
use anyhow::{Context, Result};
use mpi::collective::{CommunicatorCollectives, SystemOperation};
use serde_json::{Value, json};

/// (max − min) / median, in %, of the medians of `v`'s three consecutive
/// thirds; None with fewer than 9 values.
fn thirds_spread_pct(v: &[f64]) -> Option<f64> {
    if v.len() < 9 {
        return None;
    }
    let k = v.len() / 3;
    let m: Vec<f64> = [&v[..k], &v[k..2 * k], &v[2 * k..]]
        .iter()
        .filter_map(|w| median(w.to_vec()))
        .collect();
    let lo = m.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = m.iter().copied().fold(0.0, f64::max);
    let mid = median(m)?;
    (mid > 0.0).then(|| (hi - lo) / mid * 100.0)
}

impl<'w, 'i, K: Kernel, F: Fn(&Ctx) -> Result<K>> Runner<'w, 'i, K, F> {
    /// The median over iterations `from..to` of `v`, leaving out
    /// iteration 0 (warm-up), the instrumented iterations `inst`
    /// (perturbed by recording), the ones recorded again, and each
    /// redistribution's iteration and the one after it.
    fn med(&self, inst: &[u64], v: &[f64], from: u64, to: u64) -> Option<f64> {
        median(self.kept(inst, v, from, to))
    }

    /// The values [`Self::med`] takes, in iteration order.
    fn kept(&self, inst: &[u64], v: &[f64], from: u64, to: u64) -> Vec<f64> {
        let skip = |i: u64| {
            i == 0
                || inst.contains(&i)
                || self.rerecorded.contains(&i)
                || self.moved.iter().any(|&m| i == m || i == m + 1)
        };
        (from..to.min(v.len() as u64))
            .filter(|&i| !skip(i))
            .map(|i| v[i as usize])
            .collect()
    }

    /// The window's noise floor in %: see `AutoReport::noise_from_pct`.
    fn window_noise(&self, inst: &[u64], v: &[f64], from: u64, to: u64) -> Option<f64> {
        thirds_spread_pct(&self.kept(inst, v, from, to))
    }

    /// Every rank's CPU time per row in its stages before the plan and
    /// after its move (to `end`), and the median change over the ranks
    /// (collective).
    fn host_cpu_change(&self, inst: &[u64], a: &mut crate::auto::AutoReport, end: u64) {
        let rank = self.ctx.rank;
        let per_row = |from: u64, to: u64, rows: u64| -> f64 {
            let v: Vec<f64> = self
                .log
                .stage_cpu_s
                .iter()
                .map(|c| c / rows as f64)
                .collect();
            (rows > 0)
                .then(|| self.med(inst, &v, from, to))
                .flatten()
                .unwrap_or(f64::NAN)
        };
        let mine = [
            per_row(1, a.redistributed_after + 1, a.from_dist[rank]),
            per_row(a.redistributed_after + 2, end, a.chosen_dist[rank]),
        ];
        let mut all = vec![0.0f64; 2 * self.ctx.dist.0.len()];
        self.job.world.all_gather_into(&mine[..], &mut all[..]);
        let ok = |x: f64| (x.is_finite() && x > 0.0).then_some(x);
        a.cpu_per_row_from_s = all.chunks(2).map(|c| ok(c[0])).collect();
        a.cpu_per_row_chosen_s = all.chunks(2).map(|c| ok(c[1])).collect();
        a.host_cpu_change = median(
            all.chunks(2)
                .filter_map(|c| Some(ok(c[1])? / ok(c[0])?))
                .collect(),
        );
    }

    /// Finish and verify the kernel; rank 0 prints the job's report with
    /// every rank's; then every rank's files go.
    pub(super) fn report(
        mut self,
        rows: u64,
        extra: Value,
        elapsed_s: f64,
        loop_start: f64,
    ) -> Result<()> {
        // The job's iteration time: the slowest rank's, iteration by
        // iteration.
        let times = &self.log.times;
        let mut job_times = vec![0.0f64; times.len()];
        (self.job.world).all_reduce_into(&times[..], &mut job_times[..], SystemOperation::max());
        let kernel = self.slot.as_mut().context("no kernel")?;
        let result = kernel.finish(&self.ctx)?;
        let st = kernel.storage();
        let inst: Vec<u64> = if mheta_runtime::interposer_loaded() {
            mheta_runtime::instrumented_iterations().collect()
        } else {
            vec![]
        };
        let mine = self.rank_report(&inst, &st);
        let ranks = gather_json(self.job.world, &mine);
        self.ctx.emu.stop();
        let iters = self.job.ck.todo;
        if let Some(mut a) = self.auto.report.take() {
            a.measured_from_s = self.med(&inst, &job_times, 1, a.redistributed_after + 1);
            a.noise_from_pct = self.window_noise(&inst, &job_times, 1, a.redistributed_after + 1);
            // The iterations run on the plan's choice: after its move, or
            // with --auto-to after a plan for the distribution in force.
            // (Collective below: the test is the same on every rank; only
            // rank 0 knows GBS's own choice.)
            if a.moved || self.job.ck.auto_to.is_some() {
                // Up to the next re-plan, if any.
                let end = a
                    .replans
                    .first()
                    .map_or(iters, |r| r.redistributed_after + 1);
                a.measured_chosen_s = self.med(&inst, &job_times, a.redistributed_after + 2, end);
                a.noise_chosen_pct =
                    self.window_noise(&inst, &job_times, a.redistributed_after + 2, end);
                self.host_cpu_change(&inst, &mut a, end);
            }
            self.auto.report = Some(a);
        }
        if let Some(ranks) = ranks {
            let mut report = self.job_report(rows, &ranks, elapsed_s);
            report["iter_median_s"] = json!(self.med(&inst, &job_times, 0, iters));
            if self.log.debug {
                // With when the loop began on rank 0's clock, to set the
                // iterations beside another program's timeline.
                report["iter_times_s"] = json!(job_times);
                report["loop_start_unix_s"] = json!(loop_start);
            }
            for more in [extra, result] {
                if let (Some(obj), Value::Object(x)) = (report.as_object_mut(), more) {
                    obj.extend(x);
                }
            }
            // Kernels that count their floating-point work get Mop/s
            // (NPB's definition: the operations of the timed iterations
            // over their time).
            if let Some(f) = report["flops_per_iteration"].as_f64() {
                report["mops"] = json!(f * iters as f64 / elapsed_s * 1e-6);
            }
            println!("{report}");
        }
        // Every rank's files go before any rank removes the directory, so
        // that one of them finds it empty.
        self.slot = None;
        self.job.world.barrier();
        self.scratch = None;
        Ok(())
    }

    /// This rank's part of the report: where it ran, its emulation, its
    /// storage and its medians.
    fn rank_report(&self, inst: &[u64], st: &StorageReport) -> Value {
        let (rank, iters, log) = (self.ctx.rank, self.job.ck.todo, &self.log);
        let med = |v: &[f64]| self.med(inst, v, 0, iters);
        let work = self.ctx.emu.work_stats();
        let host = mheta_base::os::hostname();
        let mut notes = self.ctx.emu.report.notes.clone();
        if let Some(lab) = &self.job.ck.cluster.lab {
            let want = &lab.hosts[lab.rank_hosts()[rank]].name;
            if &host != want {
                let spec = &self.job.c.cluster;
                notes.push(format!(
                    "rank {rank} ran on host {host}, but {spec} puts it on {want}: the spec's links were not in its way (launch with `mheta hosts mpirun {spec}` or `mheta run --cluster`)",
                ));
            }
        }
        // Per iteration, stage time outside the reads and writes (the
        // computation, and whatever copying storage does), then the
        // median: a difference of medians mixes different iterations.
        let compute: Vec<f64> = (log.stage_s.iter().zip(&log.read_s).zip(&log.write_s))
            .map(|((s, r), w)| s - r - w)
            .collect();
        let r = &self.job.resolved;
        let mut mine = json!({
            "rank": rank,
            "host": host,
            "cpu_ns_per_unit": work.ns_per_unit,
            "work_pieces": work.pieces,
            "cpu_overruns": work.overruns,
            "cpu_overrun_s": work.overrun_s,
            "cpu_overrun_unpaid_s": work.overrun_unpaid_s,
            "cpu_sites": work.sites,
            "rows": self.ctx.dist.0[rank],
            "cpu_power": r.spec.cpu_power,
            "io_factor": r.spec.io_factor,
            "mem_limit_mb": r.mem_limit.map(|b| b as f64 / 1e6),
            "cpu": self.ctx.emu.report.cpu,
            "memory": self.ctx.emu.report.memory,
            "disk": self.ctx.emu.report.disk,
            "passes": st.passes,
            "out_of_core": st.out_of_core,
            "icla_bytes": st.icla_bytes,
            "stage_s": med(&log.stage_s),
            // The CPU time the stages took (median, the same iterations).
            "stage_cpu_median_s": med(&log.stage_cpu_s),
            // The in-run CPU sensors (median over the run, per iteration
            // with MHETA_DEBUG_TIMES): this rank's CPU share in its stages
            // (their CPU time over their wall time, summed over the run),
            "cpu_share": sensor::share_over(&log.stage_cpu_s, &log.stage_s, 0..iters),
            // and the load watch's availability (schedstat, once per
            // iteration) with the time its readings took.
            "cpu_avail": sensor::median_share(&log.avail, 0..iters),
            "load_sensor_s": log.sensor_s,
            "read_s": med(&log.read_s),
            "write_s": med(&log.write_s),
            "compute_s": med(&compute),
            // What the scheduler gave the main thread over the main loop.
            "sched": log.sched.map(|s| json!({
                "cpu_s": s.cpu_s,
                "runq_wait_s": s.runq_wait_s,
                "timeslices": s.timeslices,
            })),
            "notes": notes,
        });
        if log.debug {
            mine["cpu_shares"] = json!(log.shares);
            mine["cpu_avail_per_iter"] = json!(log.avail);
            mine["stage_times_s"] = json!(log.stage_s);
            mine["stage_cpu_s"] = json!(log.stage_cpu_s);
        }
        mine
    }

    /// The job's report (rank 0): the run, the emulation every rank used,
    /// the ranks' reports, moves, checkpoints and `--auto`'s report.
    fn job_report(&self, rows: u64, ranks: &[Value], elapsed_s: f64) -> Value {
        let (ck, c) = (&self.job.ck, self.job.c);
        json!({
            "app": self.job.app,
            "np": self.ctx.np,
            "rows": rows,
            "dist": self.ctx.dist.0,
            "iters": ck.iters,
            "move": self.forced_move,
            "resumed_from": ck.resume.as_ref().map(|(p, m)| json!({
                "checkpoint": p,
                "iteration": m.iteration,
                "np": m.np,
                "dist": m.dist,
            })),
            "checkpoints": ck.checkpoints.as_ref().map(|(every, dir)| json!({
                "every": every,
                "dir": dir,
                "written_after": self.checkpoints,
            })),
            "cluster": c.cluster,
            "prefetch": c.prefetch,
            "huge_pages": mheta_runtime::huge_pages_wanted(),
            "on_node_copy": mheta_runtime::on_node_copy_wanted(),
            "elapsed_s": elapsed_s,
            "iter_median_s": Value::Null,
            "emulation": job_emulation(&self.ctx.emu.report, ranks),
            "ranks": ranks,
            "auto": self.auto.report,
        })
    }
}

/// The job's emulation: for each resource the methods the ranks used
/// ("none" only if all did), and their notes.
fn job_emulation(mine: &emulate::EmulationReport, ranks: &[Value]) -> emulate::EmulationReport {
    let mut emulation = mine.clone();
    for (key, field) in [
        ("cpu", &mut emulation.cpu),
        ("memory", &mut emulation.memory),
        ("disk", &mut emulation.disk),
    ] {
        let mut used: Vec<String> = ranks
            .iter()
            .filter_map(|r| r[key].as_str())
            .flat_map(|m| m.split('+').map(String::from))
            .filter(|m| m != "none")
            .collect();
        used.sort();
        used.dedup();
        *field = if used.is_empty() {
            "none".into()
        } else {
            used.join("+")
        };
    }
    let mut notes: Vec<String> = ranks
        .iter()
        .filter_map(|r| r["notes"].as_array())
        .flatten()
        .filter_map(|n| n.as_str().map(String::from))
        .collect();
    notes.dedup();
    emulation.notes = notes;
    emulation
}

#[cfg(test)]
mod tests {
    use super::thirds_spread_pct;

    #[test]
    fn the_window_noise_is_the_spread_of_its_thirds() {
        assert_eq!(thirds_spread_pct(&[1.0; 8]), None);
        let flat = [2.0; 9];
        assert_eq!(thirds_spread_pct(&flat), Some(0.0));
        // Thirds with medians 10, 11 and 12 (one outlier each, which the
        // medians leave out): (12 - 10) / 11.
        let v = [10.0, 10.0, 99.0, 11.0, 0.1, 11.0, 12.0, 12.0, 50.0];
        let x = thirds_spread_pct(&v).expect("nine values");
        assert!((x - 200.0 / 11.0).abs() < 1e-9, "{x}");
    }
}
