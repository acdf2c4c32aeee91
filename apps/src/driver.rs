//! The run of an app ([`run`]) in named steps: set-up (scratch space,
//! emulation, the kernel and its declaration), iterate (timed, markers,
//! the in-run CPU sensor), move (`--move-to`, `--auto`'s plan, re-plan and
//! revert), checkpoint, and the report.

use super::*;
use mheta_model::stoch::Stoch;

/// Run an app: check the common options for `rows` distributed rows, set
/// up emulation and scratch space, build the kernel with `init`, iterate,
/// redistribute with `--auto`, verify, and print the report (rank 0).
/// `extra` fields go into the report (the app's own parameters).
pub fn run<K: Kernel>(
    world: &SimpleCommunicator,
    app: &str,
    c: &Common,
    rows: u64,
    default_iters: u64,
    extra: Value,
    init: impl Fn(&Ctx) -> Result<K>,
) -> Result<()> {
    let problem = checkpoint::Problem {
        app: app.into(),
        rows,
        params: extra.clone(),
    };
    let ck = check(c, world.size() as usize, &problem, default_iters)?;
    let (scratch, tag) = scratch_dir(world, c, app)?;
    let resolved = resolve(world, c, &ck);
    let rss0 = Emulation::rss();
    let ctx = context(world, c, &ck, &resolved, &scratch.dir)?;
    let job = Job {
        world,
        app,
        c,
        ck,
        problem,
        tag,
        resolved,
    };
    let mut r = Runner::set_up(Setup {
        job,
        scratch,
        ctx,
        init: &init,
        rss0,
    })?;
    let t_start = Instant::now();
    let loop_start_unix_s = adapt::unix_now();
    for it in 0..r.job.ck.todo {
        r.iterate(it)?;
        r.move_rows(it)?;
        r.checkpoint(it)?;
    }
    let elapsed_s = t_start.elapsed().as_secs_f64();
    r.report(rows, extra, elapsed_s, loop_start_unix_s)
}

/// Scratch space: a per-run directory named by rank 0's pid (the tag).
fn scratch_dir(world: &SimpleCommunicator, c: &Common, app: &str) -> Result<(Scratch, u32)> {
    let base = match &c.scratch {
        Some(d) => d.clone(),
        None if mheta_runtime::interposer_loaded() => mheta_runtime::trace_dir(),
        None => std::env::var_os("TMPDIR").map_or_else(|| PathBuf::from("/tmp"), PathBuf::from),
    };
    if c.scratch.is_none() {
        let _ = std::fs::create_dir_all(&base);
    }
    let mut tag = std::process::id();
    world.process_at_rank(0).broadcast_into(&mut tag);
    let scratch = agree(world, make_scratch(&base, app, tag))?;
    Ok((scratch, tag))
}

/// This rank's emulation settings from the checked options.
fn resolve(world: &SimpleCommunicator, c: &Common, ck: &Checked) -> Resolved {
    let rank = world.rank() as usize;
    let ranks = &ck.cluster.rank;
    Resolved {
        spec: ranks[rank].clone(),
        mem_limit: ck.mem_limit[rank],
        io_factors_differ: ranks.iter().any(|r| r.io_factor != ranks[0].io_factor),
        min_io_factor: ranks.iter().map(|r| r.io_factor).fold(f64::MAX, f64::min),
        throttle_always: c.disk_mb_s.is_some(),
        cpu_mode: c.cpu_mode().into(),
        cpu_clock: ck.cpu_clock.clone(),
        disk_mode: c.disk_emulation.clone(),
        disk_mb_s: c.disk_mb_s.unwrap_or(emulate::DEFAULT_DISK_MB_S),
    }
}

/// The kernels' context: the emulation started for the ranks of this
/// host, the waiting mode for the ranks of this machine
/// ([`crate::machine_hash`]), the storage.
fn context<'w>(
    world: &'w SimpleCommunicator,
    c: &Common,
    ck: &Checked,
    resolved: &Resolved,
    dir: &Path,
) -> Result<Ctx<'w>> {
    let (np, rank) = (world.size() as usize, world.rank() as usize);
    let powers: Vec<f64> = ck.cluster.rank.iter().map(|r| r.cpu_power).collect();
    let how = CpuSetup {
        mode: c.cpu_mode(),
        named: c.cpu_emulation.is_some(),
        wait: &c.wait,
        calibrate: CALIBRATE_KERNEL,
    };
    let emu = start_cpu_emulation(world, resolved, &powers, &how, dir)?;
    Ok(Ctx {
        world,
        rank,
        np,
        dist: ck.dist.clone(),
        storage: Storage {
            dir: dir.to_path_buf(),
            rank,
            prefetch: c.prefetch,
            io_scale: emu.io_scale,
            pace: emu.pace,
        },
        emu,
        mem_budget: resolved.mem_limit,
        prefetch: c.prefetch,
        iters: ck.iters,
        fixed: std::cell::Cell::new(None),
    })
}

/// The job as checked: the world, the app, its options and settings.
struct Job<'w> {
    world: &'w SimpleCommunicator,
    app: &'w str,
    c: &'w Common,
    ck: Checked,
    problem: checkpoint::Problem,
    /// Rank 0's pid: names the scratch directory and checkpoints.
    tag: u32,
    resolved: Resolved,
}

/// What [`Runner::set_up`] starts from.
struct Setup<'w, 'i, F> {
    job: Job<'w>,
    scratch: Scratch,
    ctx: Ctx<'w>,
    init: &'i F,
    /// The resident memory before the kernel was built.
    rss0: u64,
}

/// Per iteration of this process: its time, its stages' time, reads,
/// writes, and its CPU share in its stages (the in-run CPU sensor).
#[derive(Default)]
struct Log {
    times: Vec<f64>,
    stage_s: Vec<f64>,
    read_s: Vec<f64>,
    write_s: Vec<f64>,
    shares: Vec<Option<f64>>,
}

/// `--auto` between iterations: this rank's CPU share while the trace in
/// use was recorded; the slowdowns the plan in force was made with (none:
/// as recorded); sensed slowdowns for the next plan; the report; the
/// watch that re-plans on drift.
#[derive(Default)]
struct AutoState {
    base_share: Option<f64>,
    applied: Vec<f64>,
    pending_sensed: Option<Vec<Stoch>>,
    report: Option<AutoReport>,
    watch: Option<adapt::Watch>,
}

/// A running app.
struct Runner<'w, 'i, K, F> {
    job: Job<'w>,
    scratch: Option<Scratch>,
    ctx: Ctx<'w>,
    slot: Option<K>,
    mover: Mover<'i, F>,
    decl: AppDecl,
    decl_written: bool,
    /// The last recorded iteration: app.json is rewritten after it, as the
    /// interposer writes the traces, so that no recorded iteration waits
    /// for the write.
    touch_at: u64,
    log: Log,
    auto: AutoState,
    /// Iterations after which rows moved, and iterations recorded again.
    moved: Vec<u64>,
    rerecorded: Vec<u64>,
    /// --move-to's move: after which iteration, to what, bytes, seconds.
    forced_move: Option<Value>,
    /// Iterations after which a checkpoint was written.
    checkpoints: Vec<u64>,
}

impl<'w, 'i, K: Kernel, F: Fn(&Ctx) -> Result<K>> Runner<'w, 'i, K, F> {
    /// Build the kernel (or resume it), limit its memory, and write its
    /// declaration next to the traces.
    fn set_up(s: Setup<'w, 'i, F>) -> Result<Self> {
        let (world, rank) = (s.job.world, s.ctx.rank);
        let mut ctx = s.ctx;
        let t_init = Instant::now();
        let mut slot = Some(agree(world, (s.init)(&ctx))?);
        let rebuild = per_row_times(world, t_init.elapsed().as_secs_f64(), ctx.dist.0[rank]);
        if let (Some((path, m)), Some(k)) = (&s.job.ck.resume, slot.as_mut()) {
            checkpoint::load(world, k, &ctx, path, m)?;
        }
        let kernel = slot.as_mut().context("no kernel")?;
        ctx.emu.set_cache(kernel.storage().direct);
        ctx.emu.limit_memory(s.rss0);
        let mover = Mover {
            init: s.init,
            any_ooc: any_out_of_core(world, kernel),
            ckpt_dir: s.job.ck.checkpoints.as_ref().map(|(_, d)| d.clone()),
            scratch: s.scratch.dir.clone(),
            problem: s.job.problem.clone(),
            tag: s.job.tag,
            start: s.job.ck.start,
            committed: None,
            rebuild,
        };
        let mut decl = kernel.declare(&ctx);
        if let Some(f) = ctx.fixed.get() {
            decl.memory = Some(mheta_trace::MemoryDecl {
                budget: s.job.ck.mem_limit.clone(),
                fixed_bytes: f.bytes,
                fixed_per_row: f.per_row,
                prefetch: s.job.c.prefetch,
            });
        }
        let decl_written =
            rank == 0 && mheta_runtime::interposer_loaded() && write_decl(s.job.app, &decl);
        // Local iterations 0..todo, after `start` done before
        // (`--resume`): the interposer's instrumented iterations and every
        // index below are this process's, checkpoints count from the run's
        // beginning.
        let todo = s.job.ck.todo;
        let touch_at = if mheta_runtime::interposer_loaded() {
            (mheta_runtime::instrumented_iterations().end.max(1) - 1).min(todo.saturating_sub(1))
        } else {
            0
        };
        let watch = s
            .job
            .ck
            .auto
            .as_ref()
            .filter(|_| s.job.c.replan_threshold > 0.0)
            .map(|_| adapt::Watch::new(s.job.c.replan_threshold / 100.0));
        Ok(Runner {
            job: s.job,
            scratch: Some(s.scratch),
            ctx,
            slot,
            mover,
            decl,
            decl_written,
            touch_at,
            log: Log::default(),
            auto: AutoState {
                watch,
                ..AutoState::default()
            },
            moved: Vec::new(),
            rerecorded: Vec::new(),
            forced_move: None,
            checkpoints: Vec::new(),
        })
    }

    /// One iteration, between the interposer's markers, timed; rank 0
    /// notes the arrays each stage sweeps in the last recorded iteration
    /// for the declaration (`touches`). A failure aborts the job: other
    /// ranks may be blocked in MPI.
    fn iterate(&mut self, it: u64) -> Result<()> {
        let (s0, r0, w0, c0) = (
            STAGE_NS.load(Ordering::Relaxed),
            READ_NS.load(Ordering::Relaxed),
            WRITE_NS.load(Ordering::Relaxed),
            STAGE_CPU_NS.load(Ordering::Relaxed),
        );
        let t = Instant::now();
        let kernel = self.slot.as_mut().context("no kernel")?;
        checkpoint::ITERATION.store(self.job.ck.start + it, Ordering::Relaxed);
        let note_touches = self.ctx.rank == 0 && self.decl_written && it == self.touch_at;
        if note_touches {
            touches::begin();
        }
        mheta_runtime::markers::iteration_begin();
        let r = kernel.iterate(&self.ctx);
        mheta_runtime::markers::iteration_end();
        if note_touches && let Some(t) = touches::end() {
            self.decl.stage_access = Some(t);
            write_decl(self.job.app, &self.decl);
        }
        if let Err(e) = r {
            // Say what happened here, remove this rank's files, and abort.
            eprintln!(
                "{}: error: rank {}, iteration {it}: {e:#}",
                self.job.app, self.ctx.rank
            );
            self.slot = None;
            self.scratch = None;
            self.job.world.abort(2);
        }
        let log = &mut self.log;
        let since = |a: &AtomicU64, from: u64| (a.load(Ordering::Relaxed) - from) as f64 * 1e-9;
        log.times.push(t.elapsed().as_secs_f64());
        let stage = since(&STAGE_NS, s0);
        log.stage_s.push(stage);
        log.shares
            .push(adapt::stage_share(since(&STAGE_CPU_NS, c0), stage));
        log.read_s.push(since(&READ_NS, r0));
        log.write_s.push(since(&WRITE_NS, w0));
        Ok(())
    }

    /// After iteration `it`: `--move-to`'s move, then `--auto`'s plan, a
    /// re-plan, or the watch's look at the iteration.
    fn move_rows(&mut self, it: u64) -> Result<()> {
        if let Some((at, d)) = &self.job.ck.move_to
            && it + 1 == *at
        {
            let d = d.clone();
            self.forced(it, &d)?;
        }
        let Some((at, _)) = &self.job.ck.auto else {
            return Ok(());
        };
        let replan_now = (self.auto.watch.as_ref()).is_some_and(|w| w.replan_at == Some(it + 1));
        if it + 1 == *at || replan_now {
            self.plan(it, replan_now)
        } else {
            self.watch(it)
        }
    }

    /// `--move-to`: move to `d` after iteration `it`, timed.
    fn forced(&mut self, it: u64, d: &Dist) -> Result<()> {
        let from = self.ctx.dist.clone();
        let (_, worst) = self
            .mover
            .timed(self.job.world, &mut self.slot, &mut self.ctx, d, it)?;
        let bytes = mheta_model::redist::moved_bytes(&self.decl, &from, d);
        self.forced_move = Some(json!({
            "after": it,
            "from": from.0,
            "to": d.0,
            "bytes": bytes,
            "measured_s": worst,
            "bytes_per_s": bytes as f64 / worst,
        }));
        self.moved.push(it);
        Ok(())
    }

    /// `--auto`: plan with the model inside the job (on the sensed
    /// slowdowns when the sensor asked for it, else on a fresh
    /// recording), move if it pays, and tell the watch what to expect.
    fn plan(&mut self, it: u64, replan_now: bool) -> Result<()> {
        let auto = &mut self.auto;
        let sensed = auto.pending_sensed.take();
        if let Some(s) = &sensed {
            auto.applied = s.iter().map(|x| x.mean).collect();
        } else {
            // A plan on a fresh recording: the sensor's base is the share
            // this rank had while it was recorded.
            let inst = mheta_runtime::instrumented_iterations();
            let recorded = if replan_now {
                (it + 1).saturating_sub(inst.end - inst.start)..it + 1
            } else {
                inst
            };
            auto.base_share = adapt::median_share(&self.log.shares, recorded);
            auto.applied.clear();
        }
        let profile = &self.job.ck.auto.as_ref().context("no --auto")?.1;
        let r = plan_and_move(
            self.job.world,
            &mut self.slot,
            &mut self.mover,
            &mut self.ctx,
            &mut self.decl,
            profile,
            it,
            self.job.ck.todo,
            sensed,
        )?;
        if r.moved {
            self.moved.push(it);
        }
        let expected = if r.moved {
            r.predicted_chosen_s
        } else {
            r.predicted_from_s
        };
        let busy = r.predicted_busy_s.clone();
        let move_s = r.measured_move_s.filter(|_| r.moved);
        match &mut auto.report {
            None => auto.report = Some(r),
            Some(a) => a.replans.push(r),
        }
        if let Some(w) = auto.watch.as_mut() {
            w.planned(self.job.world, it, expected, &busy, replan_now, move_s);
        }
        Ok(())
    }

    /// The watch's look at iteration `it`: a drift asks the sensor or
    /// records again to re-plan; a re-plan that did worse is reverted.
    fn watch(&mut self, it: u64) -> Result<()> {
        let iters = self.job.ck.todo;
        let Some(w) = self.auto.watch.as_mut() else {
            return Ok(());
        };
        let (t, stage) = (self.log.times[it as usize], self.log.stage_s[it as usize]);
        let mut verdict = w.observe(self.job.world, it, iters, t, stage);
        if self.job.c.replan_on == "sensed"
            && let Some(adapt::Verdict::Drift(drift)) = &verdict
            && self.sensed_replan(it, drift)
        {
            verdict = None;
        }
        match verdict {
            Some(adapt::Verdict::Drift(drift))
                if it + 1 + mheta_runtime::instrumented_iterations().end + adapt::WINDOW as u64
                    <= iters =>
            {
                // The next iterations are recorded again (the perturbed
                // ones are left out of the medians), then the plan is made
                // afresh; not when fewer than a window of iterations would
                // be left after it to gain anything.
                mheta_runtime::markers::rerecord();
                let inst = mheta_runtime::instrumented_iterations();
                if let Some(w) = self.auto.watch.as_mut() {
                    w.replan_at = Some(it + 1 + inst.end);
                }
                self.rerecorded
                    .extend((it + 1 + inst.start)..(it + 1 + inst.end));
                if let Some(a) = self.auto.report.as_mut() {
                    a.drifts.push(drift);
                }
            }
            Some(adapt::Verdict::Revert(rev)) => self.revert(it, rev)?,
            _ => {}
        }
        Ok(())
    }

    /// With `--replan-on sensed`, a drift asks the in-run sensor first:
    /// has a rank's CPU share changed since its trace was recorded
    /// (another job came or went)? Then the next iteration plans on the
    /// sensed slowdowns, without recording again (true).
    fn sensed_replan(&mut self, it: u64, drift: &adapt::Drift) -> bool {
        if it + 2 + adapt::WINDOW as u64 > self.job.ck.todo {
            return false;
        }
        let window = (it + 1).saturating_sub(adapt::WINDOW as u64)..it + 1;
        let a = &mut self.auto;
        let sensed =
            adapt::sensed_slowdowns(self.job.world, a.base_share, &self.log.shares, window);
        if !adapt::load_changed(&sensed, &a.applied) {
            return false;
        }
        if let Some(w) = a.watch.as_mut() {
            w.replan_at = Some(it + 2);
        }
        a.pending_sensed = Some(sensed);
        if let Some(r) = a.report.as_mut() {
            r.drifts.push(drift.clone());
        }
        true
    }

    /// Back to the distribution the last re-plan left.
    fn revert(&mut self, it: u64, mut rev: adapt::Revert) -> Result<()> {
        let a = self
            .auto
            .report
            .as_mut()
            .context("a revert without a plan")?;
        let last = a.replans.last_mut().context("a revert without a re-plan")?;
        let back = Dist(last.from_dist.clone());
        let (_, worst) =
            self.mover
                .timed(self.job.world, &mut self.slot, &mut self.ctx, &back, it)?;
        rev.measured_move_s = Some(worst);
        last.reverted = Some(rev);
        self.moved.push(it);
        if let Some(w) = self.auto.watch.as_mut() {
            w.reverted(it);
        }
        Ok(())
    }

    /// After iteration `it`: note the checkpoint a move through disk just
    /// committed, or write one every `--checkpoint-every` iterations.
    fn checkpoint(&mut self, it: u64) -> Result<()> {
        let done = self.job.ck.start + it + 1;
        if self.mover.committed.take().is_some() {
            self.checkpoints.push(done);
        } else if let Some((every, dir)) = &self.job.ck.checkpoints
            && done.is_multiple_of(*every)
            && done < self.job.ck.iters
        {
            let kernel = self.slot.as_mut().context("no kernel")?;
            checkpoint::save(
                self.job.world,
                kernel,
                &self.ctx,
                dir,
                &self.job.problem,
                done,
                self.job.tag,
            )?;
            self.checkpoints.push(done);
        }
        Ok(())
    }

    /// The median over iterations `from..to` of `v`, leaving out
    /// iteration 0 (warm-up), the instrumented iterations `inst`
    /// (perturbed by recording), the ones recorded again, and each
    /// redistribution's iteration and the one after it.
    fn med(&self, inst: &[u64], v: &[f64], from: u64, to: u64) -> Option<f64> {
        let skip = |i: u64| {
            i == 0
                || inst.contains(&i)
                || self.rerecorded.contains(&i)
                || self.moved.iter().any(|&m| i == m || i == m + 1)
        };
        median(
            (from..to.min(v.len() as u64))
                .filter(|&i| !skip(i))
                .map(|i| v[i as usize])
                .collect(),
        )
    }

    /// Finish and verify the kernel; rank 0 prints the job's report with
    /// every rank's; then every rank's files go.
    fn report(mut self, rows: u64, extra: Value, elapsed_s: f64, loop_start: f64) -> Result<()> {
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
            if a.moved {
                // Up to the next re-plan, if any.
                let end = a
                    .replans
                    .first()
                    .map_or(iters, |r| r.redistributed_after + 1);
                a.measured_chosen_s = self.med(&inst, &job_times, a.redistributed_after + 2, end);
            }
            self.auto.report = Some(a);
        }
        if let Some(ranks) = ranks {
            let mut report = self.job_report(rows, &ranks, elapsed_s);
            report["iter_median_s"] = json!(self.med(&inst, &job_times, 0, iters));
            if std::env::var_os("MHETA_DEBUG_TIMES").is_some() {
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
        let host = hostname();
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
            // The in-run CPU sensor: this rank's CPU share in its stages,
            // median over the run (per iteration with MHETA_DEBUG_TIMES).
            "cpu_share": adapt::median_share(&log.shares, 0..iters),
            "read_s": med(&log.read_s),
            "write_s": med(&log.write_s),
            "compute_s": med(&compute),
            "notes": notes,
        });
        if std::env::var_os("MHETA_DEBUG_TIMES").is_some() {
            mine["cpu_shares"] = json!(log.shares);
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

/// Rank 0 writes the declaration next to the traces; a failure is said
/// and the run goes on.
fn write_decl(app: &str, decl: &AppDecl) -> bool {
    let dir = mheta_runtime::trace_dir();
    let r = std::fs::create_dir_all(&dir)
        .map_err(|e| e.to_string())
        .and_then(|_| mheta_trace::write_app(&dir, decl).map_err(|e| e.to_string()));
    if let Err(e) = &r {
        eprintln!(
            "{app}: cannot write {}: {e}",
            dir.join(mheta_trace::APP_FILE).display()
        );
    }
    r.is_ok()
}

/// Why the CPU emulation `mode` is not faithful for a node running ranks
/// of `powers` on `cores` cores: when the ranks outnumber the cores and
/// the powers are emulated (some is not 1), every mode but `clock` runs
/// the real work at the host's own, changing speed, with the ranks
/// contending for the cores (jacobi on DC, 4 ranks on 2 cores, under
/// `share`: the model's mean diff 23%, max 58%). None when it is.
/// `calibrate` says where the clock's figures come from for this program.
pub fn unfaithful_cpu(mode: &str, powers: &[f64], cores: usize, calibrate: &str) -> Option<String> {
    let emulated = powers.iter().any(|&p| p != 1.0);
    (mode != "clock" && emulated && powers.len() > cores).then(|| {
        format!(
            "cpu: --cpu-emulation {mode} with {} ranks on {cores} cores is not faithful (the real work runs at the host's changing speed and the ranks contend for the cores); pass --cpu-emulation clock --cpu-ns-per-unit NS|FILE, {calibrate}",
            powers.len()
        )
    })
}

/// How a program's ranks set up their CPU emulation: the mode and
/// whether the command line named it, `--wait` (sleep, poll or auto) and
/// where the clock's figures come from (for the stop message).
pub struct CpuSetup<'a> {
    pub mode: &'a str,
    pub named: bool,
    pub wait: &'a str,
    pub calibrate: &'a str,
}

/// Start this rank's CPU emulation (`powers`: every rank's CPU power) and
/// choose how ranks wait. The emulation's node is the host (name): an
/// emulated host's ranks get their base share of its cores, whatever else
/// the machine runs, so that a rank keeps its power at every rank count.
/// The machine's cores (its ranks: those with its boot id,
/// [`crate::machine_hash`], which emulated hosts share) are what the ranks
/// really share: crowding, faithfulness ([`cpu_faithful_or_stop`]) and
/// waiting go by the machine. Collective.
pub fn start_cpu_emulation(
    world: &SimpleCommunicator,
    resolved: &Resolved,
    powers: &[f64],
    how: &CpuSetup,
    dir: &Path,
) -> Result<Emulation> {
    let (np, rank) = (world.size() as usize, world.rank() as usize);
    // SAFETY: getsid(0) only reads this process's session id.
    let sid = unsafe { libc::getsid(0) } as u64;
    let pid = std::process::id() as u64;
    let mut ids = vec![0u64; 4 * np];
    world.all_gather_into(&[host_hash(), machine_hash(), sid, pid][..], &mut ids[..]);
    let (host, machine) = (|j: usize| ids[4 * j], |j: usize| ids[4 * j + 1]);
    let session = |j: usize| ids[4 * j + 2];
    let powers_where = |same: &dyn Fn(usize) -> bool| -> Vec<f64> {
        (0..np).filter(|&j| same(j)).map(|j| powers[j]).collect()
    };
    let node_powers = powers_where(&|j| host(j) == host(rank));
    let machine_powers = powers_where(&|j| machine(j) == machine(rank));
    let local = (0..rank).filter(|&j| host(j) == host(rank)).count();
    let (note, cores) =
        cpu_faithful_or_stop(world, how.mode, how.named, &machine_powers, how.calibrate)?;
    let machine_local = (0..rank).filter(|&j| machine(j) == machine(rank)).count();
    // The job's key: rank 0's pid.
    let job = ids[3];
    let sessions_differ =
        (0..np).any(|j| machine(j) == machine(rank) && session(j) != session(rank));
    let machine = Machine {
        powers: &machine_powers,
        local: machine_local,
        job: sessions_differ.then_some(job),
    };
    let mut emu = Emulation::start(resolved, &node_powers, local, machine, dir);
    let sleep = match how.wait {
        "sleep" => true,
        "poll" => false,
        _ => machine_powers.len() > cores,
    };
    comm::set_sleep(sleep);
    emu.report.wait = if sleep { "sleep" } else { "poll" }.into();
    if let Some(note) = note {
        if rank == 0 {
            eprintln!("warning: {note}");
        }
        emu.report.notes.push(note);
    }
    Ok(emu)
}

/// The CPU emulation `mode` on a machine whose ranks have `machine_powers`:
/// when it is not faithful there ([`unfaithful_cpu`]) and was not `named`
/// on the command line, every rank stops with the reason and what to pass
/// (`calibrate`: where the clock's figures come from). Otherwise the note
/// to report, if any, and the machine's cores (not this rank's affinity:
/// mpirun binds ranks). Collective.
pub fn cpu_faithful_or_stop(
    world: &SimpleCommunicator,
    mode: &str,
    named: bool,
    machine_powers: &[f64],
    calibrate: &str,
) -> Result<(Option<String>, usize)> {
    // SAFETY: sysconf takes a constant and returns a number.
    let cores = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }.max(1) as usize;
    let note = unfaithful_cpu(mode, machine_powers, cores, calibrate);
    agree(
        world,
        match (&note, named) {
            (Some(n), false) => Err(anyhow!(
                "{n}; `--cpu-emulation {mode}` runs anyway, with this note in the report"
            )),
            _ => Ok(()),
        },
    )?;
    Ok((note, cores))
}

/// Where a kernel's clock figures come from (for [`unfaithful_cpu`]).
const CALIBRATE_KERNEL: &str = "FILE the report of a calibration run (the same sizes, --iters 2 --cpu-emulation spin, no --cluster), or run the study with `mheta experiment`, which calibrates the clock itself";

#[cfg(test)]
mod tests {
    use super::unfaithful_cpu;

    #[test]
    fn crowded_emulated_nodes_are_warned_off_all_but_the_clock() {
        let dc = [1.0, 1.0, 0.5, 0.6];
        let note = unfaithful_cpu("share", &dc, 2, "").unwrap();
        assert!(note.contains("4 ranks on 2 cores") && note.contains("--cpu-emulation clock"));
        assert!(unfaithful_cpu("paced", &dc, 2, "").is_some());
        assert!(unfaithful_cpu("clock", &dc, 2, "").is_none());
        // Enough cores, or nothing emulated: faithful.
        assert!(unfaithful_cpu("share", &dc, 4, "").is_none());
        assert!(unfaithful_cpu("share", &[1.0; 4], 2, "").is_none());
    }
}
