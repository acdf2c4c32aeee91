//! The run of an app ([`run`]) in named steps: set-up (scratch space,
//! emulation, the kernel and its declaration), iterate (timed, markers,
//! the in-run CPU sensor), move (`--move-to`, `--auto`'s plan, re-plan and
//! revert), checkpoint, and the report (`driver/report.rs`).

use crate::auto::{AutoReport, Mover, any_out_of_core, per_row_times, plan_and_move};
use crate::cpu_setup::{CALIBRATE_KERNEL, CpuSetup, start_cpu_emulation};
use crate::emulate::Emulation;
use crate::options::{Checked, check};
use crate::storage::Storage;
use crate::{
    Common, Ctx, Kernel, READ_NS, Resolved, STAGE_CPU_NS, STAGE_NS, Scratch, WRITE_NS, adapt,
    agree, checkpoint, emulate, make_scratch, sensor, touches,
};
use anyhow::{Context, Result};
use mheta_model::Dist;
use mheta_trace::AppDecl;
use mpi::collective::{CommunicatorCollectives, Root, SystemOperation};
use mpi::topology::{Communicator, SimpleCommunicator};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

mod report;

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
    let sched0 = mheta_base::os::thread_schedstat();
    for it in 0..r.job.ck.todo {
        r.iterate(it)?;
        r.move_rows(it)?;
        r.checkpoint(it)?;
    }
    r.log.sched = sched0
        .zip(mheta_base::os::thread_schedstat())
        .map(|(a, b)| b.since(&a));
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
/// writes, its CPU share in its stages, and with the load watch (or
/// MHETA_DEBUG_TIMES) its CPU availability (the in-run CPU sensors,
/// `sensor.rs`).
#[derive(Default)]
struct Log {
    times: Vec<f64>,
    stage_s: Vec<f64>,
    /// This rank's CPU time inside stages, per iteration.
    stage_cpu_s: Vec<f64>,
    read_s: Vec<f64>,
    write_s: Vec<f64>,
    shares: Vec<Option<f64>>,
    /// Whether MHETA_DEBUG_TIMES asks for every iteration's figures in
    /// the report (availability included, with or without the watch).
    debug: bool,
    /// With the load watch, what it reads per iteration: the main
    /// thread's CPU availability, CPU time over CPU time plus run-queue
    /// delay (schedstat), or without schedstat the stage share of the last
    /// WINDOW iterations; and the
    /// last schedstat reading.
    avail: Vec<Option<f64>>,
    /// Per iteration with schedstat, the main thread's CPU time and the
    /// times it was given the core (its turns: `sensor::turn_over`).
    slices: Vec<Option<(f64, u64)>>,
    last_sched: Option<mheta_base::os::Schedstat>,
    /// The main thread's schedstat file, kept open.
    sched_file: Option<mheta_base::os::SchedstatReader>,
    /// The time the load watch's readings took, seconds (its overhead).
    sensor_s: f64,
    /// The main thread's CPU time and run-queue delay over the main loop
    /// (None without schedstats): what the host gave the run, measured.
    sched: Option<mheta_base::os::Schedstat>,
}

/// `--auto` between iterations: the report; the watch that re-plans on
/// drift; the load watch (`--replan-on sensed`) and a load change it saw,
/// for the next plan; the iterations the trace on disk holds.
#[derive(Default)]
struct AutoState {
    report: Option<AutoReport>,
    watch: Option<adapt::Watch>,
    load: Option<sensor::LoadWatch>,
    pending: Option<(sensor::LoadChange, Vec<f64>)>,
    /// The last load check saw a change under way, not yet beyond noise.
    load_moving: bool,
    /// Per rank, the calibration the plans on the sensed load carry
    /// (`sensor::LoadChange::calibrated`; empty: none), and whether one
    /// was made since the last change of load.
    calib: Vec<f64>,
    calibrated: bool,
    /// Per rank, the turn the last change of load sensed
    /// (`sensor::LoadChange::turn_s`), which a calibration keeps.
    turn_s: Vec<f64>,
    trace_iters: std::ops::Range<u64>,
    /// A re-recording under way began at this iteration.
    rerecord_from: Option<u64>,
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
        decl.cpu_clock = s.job.c.cpu_mode() == "clock";
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
            .filter(|_| s.job.c.replan_threshold > 0.0 && s.job.ck.auto_to.is_none())
            .map(|_| adapt::Watch::new(s.job.c.replan_threshold / 100.0));
        // Under the clock a piece's compute lasts its declared time
        // whatever CPU share it gets: a CPU slowdown the sensor reads (on
        // ranks that share cores with each other) does not slow it, so
        // there is nothing for the load watch to answer.
        let load = watch
            .as_ref()
            .filter(|_| s.job.c.replan_on == "sensed" && s.job.c.cpu_mode() != "clock")
            .map(|_| sensor::LoadWatch::new(s.job.world));
        if s.job.ck.auto.is_some() {
            // `--auto` plans on every iteration recorded before it.
            mheta_runtime::markers::record_until_done();
        }
        Ok(Runner {
            job: s.job,
            scratch: Some(s.scratch),
            ctx,
            slot,
            mover,
            decl,
            decl_written,
            touch_at,
            log: Log {
                debug: std::env::var_os("MHETA_DEBUG_TIMES").is_some(),
                ..Log::default()
            },
            auto: AutoState {
                load,
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
        let stage_cpu = since(&STAGE_CPU_NS, c0);
        log.stage_cpu_s.push(stage_cpu);
        log.shares.push(sensor::stage_share(stage_cpu, stage));
        if self.auto.load.is_some() || log.debug {
            let t = Instant::now();
            if log.sched_file.is_none() {
                log.sched_file = mheta_base::os::SchedstatReader::open();
            }
            let now = log.sched_file.as_ref().and_then(|f| f.read());
            log.avail.push(match now {
                Some(_) => sensor::availability(log.last_sched.as_ref(), now.as_ref()),
                // Without schedstat, the stage share of the last
                // WINDOW iterations (`sensor::share_over`).
                None => {
                    let n = log.stage_s.len() as u64;
                    let from = n.saturating_sub(crate::adapt::WINDOW as u64);
                    sensor::share_over(&log.stage_cpu_s, &log.stage_s, from..n)
                }
            });
            log.slices.push(
                (log.last_sched.as_ref().zip(now.as_ref()))
                    .map(|(a, b)| b.since(a))
                    .map(|d| (d.cpu_s, d.timeslices)),
            );
            log.last_sched = now;
            log.sensor_s += t.elapsed().as_secs_f64();
        }
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
    /// slowdowns when the load watch saw a change, else on a fresh
    /// recording: every iteration from the instrumented ones to this one,
    /// or those recorded again), move if it pays, and tell the watches
    /// what to expect.
    fn plan(&mut self, it: u64, replan_now: bool) -> Result<()> {
        // The recording ends here; its trace is on disk on every rank.
        mheta_runtime::markers::recording_done();
        if replan_now && self.auto.pending.is_none() && self.recorded_under_new_load(it)? {
            return Ok(());
        }
        let auto = &mut self.auto;
        let mut pending = auto.pending.take();
        if pending.is_none() {
            let inst = mheta_runtime::instrumented_iterations();
            auto.trace_iters = match auto.rerecord_from.take() {
                Some(from) if replan_now => from..it + 1,
                _ => inst.start..it + 1,
            };
        }
        match pending.as_mut() {
            None => {
                auto.calib.clear();
                auto.calibrated = false;
                auto.turn_s.clear();
            }
            Some((c, _)) if c.what == "calibrated" => {
                auto.calib = c.calibration.clone();
                c.turn_s = auto.turn_s.clone();
            }
            Some((c, _)) => {
                auto.turn_s = c.turn_s.clone();
                // A calibration stands in for the recording that cannot be
                // made while a rank is time-shared: back on dedicated
                // nodes the trace is priced as it is (and a drift records
                // again); otherwise a rank whose load changed loses its
                // factor (it was its old load's), the others keep theirs.
                if c.to.iter().all(|&x| x <= 1.0 + sensor::SENSE_PCT / 100.0) {
                    auto.calib.clear();
                }
                for &i in &c.ranks {
                    if let Some(x) = auto.calib.get_mut(i) {
                        *x = 1.0;
                    }
                }
                auto.calibrated = false;
                c.calibration = auto.calib.clone();
            }
        }
        let from = it + 1 + adapt::SETTLE;
        if let Some(l) = auto.load.as_mut() {
            match &pending {
                Some((c, _)) => l.applied(&c.to, from),
                None => l.recorded(&self.log.avail, auto.trace_iters.clone(), from),
            }
        }
        let profile = &self.job.ck.auto.as_ref().context("no --auto")?.1;
        let mut r = plan_and_move(
            self.job.world,
            &mut self.slot,
            &mut self.mover,
            &mut self.ctx,
            &mut self.decl,
            profile,
            (it, self.job.ck.todo),
            auto.trace_iters.clone(),
            pending.as_ref().map(|(c, sd)| c.sensed(sd)),
            self.job.ck.auto_to.as_ref(),
        )?;
        r.load_change = pending.map(|(c, _)| c);
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

    /// A re-recording that ends after iteration `it`, checked by the load
    /// watch (collective): when a rank's load moved while it recorded (a
    /// job came or went, the drift was its first sign), the new trace
    /// mixes two loads. Then every rank puts back the trace it kept, the
    /// plan is skipped, and the load watch answers the change (true).
    /// Otherwise the kept copy is removed.
    fn recorded_under_new_load(&mut self, it: u64) -> Result<bool> {
        let (Some(l), Some(from)) = (self.auto.load.as_ref(), self.auto.rerecord_from) else {
            return Ok(false);
        };
        let mine = f64::from(u8::from(l.moved_during(&self.log.avail, from..it + 1)));
        let mut any = 0.0f64;
        self.job
            .world
            .all_reduce_into(&mine, &mut any, SystemOperation::max());
        let file = mheta_trace::rank_file(&mheta_runtime::trace_dir(), self.ctx.rank as u32);
        let kept = kept_trace(&file);
        if any == 0.0 {
            let _ = std::fs::remove_file(&kept);
            return Ok(false);
        }
        std::fs::rename(&kept, &file)
            .with_context(|| format!("cannot put back {} as {}", kept.display(), file.display()))?;
        self.auto.rerecord_from = None;
        if let Some(w) = self.auto.watch.as_mut() {
            w.resume(it);
        }
        if let Some(a) = self.auto.report.as_mut() {
            a.recordings_dropped.push(it);
        }
        Ok(true)
    }

    /// After iteration `it`: the load watch's check (a change of load
    /// plans at once on the sensed slowdowns), then the drift watch's
    /// look (a drift records again to re-plan, unless a rank is
    /// time-shared or its load is moving; a re-plan that did worse is
    /// reverted).
    fn watch(&mut self, it: u64) -> Result<()> {
        let iters = self.job.ck.todo;
        let Some(w) = self.auto.watch.as_mut() else {
            return Ok(());
        };
        if w.replan_at.is_none()
            && let Some(l) = self.auto.load.as_mut()
            && let Some(s) = l.check(self.job.world, it, &self.log.avail, &self.log.slices)
        {
            self.auto.load_moving = s.moving;
            if let Some(c) = s.change
                && it + 1 + adapt::WINDOW as u64 <= iters
            {
                self.auto.pending = Some(c);
                return self.plan(it, true);
            }
        }
        let (t, stage) = (self.log.times[it as usize], self.log.stage_s[it as usize]);
        let verdict = w.observe(self.job.world, it, iters, t, stage);
        let inst = mheta_runtime::instrumented_iterations();
        let held = self
            .auto
            .load
            .as_ref()
            .map(|l| (l.time_shared(), self.auto.load_moving));
        match verdict {
            // Never record while a rank is time-shared: the plan in force
            // priced its load, and the drift is the model's miss under it;
            // expect what is measured.
            Some(adapt::Verdict::Drift(_)) if held.is_some_and(|(shared, _)| shared) => w.accept(),
            // While a rank's load is moving, the load watch decides.
            Some(adapt::Verdict::Drift(_)) if held.is_some_and(|(_, moving)| moving) => {}
            Some(adapt::Verdict::Drift(drift))
                if it + 1 + inst.end + adapt::WINDOW as u64 <= iters =>
            {
                // The next iterations are recorded again (the perturbed
                // ones are left out of the medians), then the plan is made
                // afresh; not when fewer than a window of iterations would
                // be left after it to gain anything.
                if self.auto.load.is_some() {
                    // Kept, should the load change while recording.
                    let file =
                        mheta_trace::rank_file(&mheta_runtime::trace_dir(), self.ctx.rank as u32);
                    std::fs::copy(&file, kept_trace(&file))
                        .with_context(|| format!("cannot keep a copy of {}", file.display()))?;
                }
                mheta_runtime::markers::rerecord();
                let first = self.auto.report.as_ref().map_or(0, |a| {
                    a.instrumented_iterations.end - a.instrumented_iterations.start
                });
                let from = it + 1 + inst.start;
                let len = adapt::rerecord_len(first, inst.end - inst.start, iters - from);
                w.replan_at = Some(from + len);
                self.auto.rerecord_from = Some(from);
                self.rerecorded.extend(from..from + len);
                if let Some(a) = self.auto.report.as_mut() {
                    a.drifts.push(drift);
                }
            }
            Some(adapt::Verdict::Revert(rev)) => self.revert(it, rev)?,
            Some(adapt::Verdict::Missed) => {
                // A plan on the sensed load missed: calibrate it once per
                // change of load; otherwise expect what is measured.
                let shared = self.auto.load.as_ref().is_some_and(|l| l.time_shared());
                if shared && !self.auto.calibrated && it + 1 + adapt::WINDOW as u64 <= iters {
                    let p = self.job.world.size() as usize;
                    let mut ratios = vec![0.0f64; p];
                    self.job
                        .world
                        .all_gather_into(&w.busy_ratio(), &mut ratios[..]);
                    let applied = self.auto.load.as_ref().map(|l| l.applied.clone());
                    let c = sensor::LoadChange::calibrated(
                        it,
                        &applied.unwrap_or_default(),
                        &self.auto.calib,
                        &ratios,
                    );
                    self.auto.calibrated = true;
                    self.auto.pending = Some((c, vec![0.0; p]));
                    return self.plan(it, true);
                }
                w.accept();
            }
            _ => {}
        }
        Ok(())
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
}

/// Where a rank keeps its trace while it records again.
fn kept_trace(file: &std::path::Path) -> std::path::PathBuf {
    let mut name = file.as_os_str().to_owned();
    name.push(".kept");
    name.into()
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
