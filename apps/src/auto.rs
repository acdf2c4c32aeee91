//! `--auto` inside a run: plan with MHETA's model and GBS on the recorded
//! iterations ([`plan_and_move`], through `mheta_runtime::plan_in_run`),
//! move the rows when it pays ([`Mover`]), and what the run reports of it
//! ([`AutoReport`]).

use crate::{Ctx, Kernel, adapt, agree, checkpoint};
use anyhow::{Context, Result};
use mheta_model::Dist;
use mpi::collective::{CommunicatorCollectives, SystemOperation};
use mpi::topology::{Communicator, SimpleCommunicator};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// What `--auto` did, for the report.
#[derive(serde::Serialize, Debug, Clone)]
pub struct AutoReport {
    /// The iterations the plan was made on: from the first instrumented
    /// one to the plan (a re-plan: those recorded again).
    pub instrumented_iterations: std::ops::Range<u64>,
    /// The iteration after which the plan was made (and the move, if any).
    pub redistributed_after: u64,
    /// When the plan was made, seconds since the Unix epoch on rank 0's
    /// clock (to set beside a scheduler's log of other jobs).
    pub at_unix_s: f64,
    pub from_dist: Vec<u64>,
    /// GBS's choice, whether or not the run moved to it.
    pub chosen_dist: Vec<u64>,
    /// Did the run move to `chosen_dist`, and why (or why not).
    pub moved: bool,
    pub reason: String,
    /// Predicted iteration time on `from_dist` and on `chosen_dist`: the
    /// median of the recorded iterations replayed one by one under each
    /// (`Model::predict_iterations`; with fewer than 3 recorded, the
    /// replay of their median).
    pub predicted_from_s: f64,
    pub predicted_chosen_s: f64,
    /// The replay of the recorded iterations' median on each (MHETA's one
    /// iteration, `Model::predict`): the slowest rank's median, which a
    /// run of close ranks exceeds.
    pub predicted_from_point_s: f64,
    pub predicted_chosen_point_s: f64,
    /// Predicted gain over the remaining iterations, and the predicted
    /// cost of the move (`mheta_model::redist`).
    pub remaining_iters: u64,
    pub predicted_gain_s: f64,
    pub predicted_move_s: f64,
    pub move_bytes: u64,
    /// Measured: the slowest rank's time in the move (None: no move).
    pub measured_move_s: Option<f64>,
    /// The job's median iteration (the slowest rank's, each iteration)
    /// before the plan, and on `chosen_dist` after it (after the move,
    /// or with `--auto-to` after a plan for the distribution in force;
    /// None otherwise).
    pub measured_from_s: Option<f64>,
    pub measured_chosen_s: Option<f64>,
    /// Each rank's CPU time per row inside its stages (median over the
    /// same iterations as `measured_from_s` and `measured_chosen_s`), and
    /// the median over the ranks of after over before: how much more
    /// CPU time the host took for the same work after the move. On a VM
    /// whose vCPUs are themselves shared, steal reads 0 and the host's
    /// own slowdowns show only there; the model, made on the recording,
    /// cannot know of them.
    pub cpu_per_row_from_s: Vec<Option<f64>>,
    pub cpu_per_row_chosen_s: Vec<Option<f64>>,
    pub host_cpu_change: Option<f64>,
    /// The noise floor inside each window, in %: the window's kept
    /// iterations (as the medians take them) cut into three consecutive
    /// thirds, (max − min) / median of the three thirds' medians. How
    /// far the host's own speed wanders within one window of this very
    /// run; None with fewer than 9 iterations.
    pub noise_from_pct: Option<f64>,
    pub noise_chosen_pct: Option<f64>,
    pub evaluations: u64,
    /// The model's busy time (computation and I/O) of each rank on the
    /// distribution the run continues on: what the drift watch compares.
    pub predicted_busy_s: Vec<f64>,
    pub plan_s: f64,
    /// Where `plan_s` went on rank 0: gathering the ranks' summaries of
    /// their traces (`gathered.s`, with the bytes of this rank's trace
    /// and summary, and what rank 0 received) and the model,
    /// GBS and the move's price (`model_s`); the rest is the broadcast of
    /// the plan and reading the traces from disk.
    pub gathered: mheta_runtime::Gathered,
    pub model_s: f64,
    /// This rank's (rank 0's) time in the move, 0 without one.
    pub redistribute_s: f64,
    /// Times the ranks' busy times came apart from the model's
    /// (`--replan-threshold`, `adapt`), each followed by a re-recording.
    pub drifts: Vec<adapt::Drift>,
    /// The plans made after each drift, in order (their own `replans`
    /// and `drifts` are empty).
    pub replans: Vec<AutoReport>,
    /// This re-plan's move was undone, it ran slower than the old
    /// distribution (`adapt::Revert`); from then on `from_dist` is in
    /// force again.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reverted: Option<adapt::Revert>,
    /// A plan made on the sensed load, without recording again: each
    /// rank's CPU slowdown since its trace was recorded, mean ± sd
    /// (`sensor::LoadWatch`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sensed_slowdown: Option<Vec<mheta_model::stoch::Stoch>>,
    /// The plan's model priced rows by the iteration's length and the
    /// arrays' size (the reuse term: a profile with a reuse curve, `mheta bench`'s
    /// default).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub reuse_term: bool,
    /// Iterations after which a re-recording was dropped: a rank's load
    /// changed while it recorded (the plan's report only).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub recordings_dropped: Vec<u64>,
    /// The change of load this plan answered (the load watch's finding).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load_change: Option<crate::sensor::LoadChange>,
}

/// One plan with the model and GBS on the latest recorded iterations
/// (collective), and the move if it pays. On a fresh recording
/// (`sensed` None) `decl.dist` becomes the distribution in force, the
/// rows the trace saw; a plan on sensed slowdowns prices the trace on
/// disk, recorded on `decl.dist`, from the distribution in force.
/// `given` (`--auto-to`): the distribution to move to instead of GBS's.
#[allow(clippy::too_many_arguments)]
pub(crate) fn plan_and_move<K: Kernel, F: Fn(&Ctx) -> Result<K>>(
    world: &SimpleCommunicator,
    slot: &mut Option<K>,
    mover: &mut Mover<'_, F>,
    ctx: &mut Ctx,
    decl: &mut mheta_trace::AppDecl,
    profile: &Path,
    (it, iters): (u64, u64),
    recorded: std::ops::Range<u64>,
    sensed: Option<mheta_runtime::SensedLoad>,
    given: Option<&Dist>,
) -> Result<AutoReport> {
    if sensed.is_none() {
        declare_dist(ctx, decl)?;
    }
    let t0 = Instant::now();
    let at_unix_s = adapt::unix_now();
    let remaining = iters - (it + 1);
    let plan = mheta_runtime::plan_in_run(
        world,
        decl,
        &ctx.dist,
        &mheta_runtime::trace_dir(),
        profile,
        remaining,
        Some(&mover.rebuild),
        sensed.as_ref(),
        given,
    )?;
    let plan_s = t0.elapsed().as_secs_f64();
    let mut redistribute_s = 0.0;
    let mut measured_move_s = None;
    let from = ctx.dist.clone();
    if plan.dist != ctx.dist {
        let (mine, worst) = mover.timed(world, slot, ctx, &plan.dist, it)?;
        redistribute_s = mine;
        measured_move_s = Some(worst);
    }
    let mut r = auto_report(&plan, from, remaining);
    r.instrumented_iterations = recorded;
    r.redistributed_after = it;
    r.at_unix_s = at_unix_s;
    r.measured_move_s = measured_move_s;
    r.plan_s = plan_s;
    r.redistribute_s = redistribute_s;
    r.sensed_slowdown = sensed.map(|s| s.cpu);
    ctx.dist = plan.dist;
    Ok(r)
}

/// The declaration's distribution is the one in force (rank 0 rewrites
/// app.json), so that a re-plan models the rows the trace saw.
pub(crate) fn declare_dist(ctx: &Ctx, decl: &mut mheta_trace::AppDecl) -> Result<()> {
    if decl.dist != ctx.dist.0 {
        decl.dist = ctx.dist.0.clone();
        if ctx.rank == 0 {
            let dir = mheta_runtime::trace_dir();
            mheta_trace::write_app(&dir, decl).with_context(|| {
                format!(
                    "cannot rewrite {}",
                    dir.join(mheta_trace::APP_FILE).display()
                )
            })?;
        }
    }
    Ok(())
}

/// What a plan from `from` with `remaining` iterations to go says, for
/// the report: every rank gets the distribution, rank 0 also the details.
/// The timings and the iteration are the caller's to fill in.
pub(crate) fn auto_report(plan: &mheta_runtime::RunPlan, from: Dist, remaining: u64) -> AutoReport {
    let (chosen, moved, reason, pc, gain, cost, bytes, evals) =
        match (&plan.found, &plan.decision, &plan.cost) {
            (Some(f), Some(d), Some(c)) => (
                f.dist.clone(),
                d.moved,
                d.reason.clone(),
                f.predicted_s,
                d.gain_s,
                c.total_s,
                c.bytes,
                f.evaluations,
            ),
            _ => (
                plan.dist.0.clone(),
                plan.dist != from,
                String::new(),
                0.0,
                0.0,
                0.0,
                0,
                0,
            ),
        };
    AutoReport {
        instrumented_iterations: 0..0,
        redistributed_after: 0,
        at_unix_s: 0.0,
        from_dist: from.0,
        chosen_dist: chosen,
        moved,
        reason,
        predicted_from_s: plan.predicted_current_s,
        predicted_chosen_s: pc,
        predicted_from_point_s: plan.point_current_s,
        predicted_chosen_point_s: plan.point_chosen_s,
        remaining_iters: remaining,
        predicted_gain_s: gain,
        predicted_move_s: cost,
        move_bytes: bytes,
        measured_move_s: None,
        measured_from_s: None,
        measured_chosen_s: None,
        cpu_per_row_from_s: Vec::new(),
        cpu_per_row_chosen_s: Vec::new(),
        host_cpu_change: None,
        noise_from_pct: None,
        noise_chosen_pct: None,
        evaluations: evals,
        predicted_busy_s: plan.predicted_busy_s.clone(),
        plan_s: 0.0,
        gathered: plan.gathered,
        model_s: plan.model_s,
        redistribute_s: 0.0,
        drifts: Vec::new(),
        replans: Vec::new(),
        reverted: None,
        sensed_slowdown: None,
        reuse_term: plan.reuse_term,
        recordings_dropped: Vec::new(),
        load_change: None,
    }
}

/// How a run moves its distributed arrays to a new distribution.
///
/// In core, each kernel's own [`Kernel::redistribute`] (rows sent by MPI
/// straight into the kept buffers). With arrays out of core on any rank,
/// the state goes through MPI-IO instead: it is saved as a checkpoint
/// (committed in the checkpoint directory when there is one, so the move
/// is itself a checkpoint a killed run resumes from; else in the scratch
/// directory, removed afterwards), the old arrays and their per-rank files
/// are dropped, the kernel is rebuilt on the new distribution (the
/// out-of-core rule applied to its new rows, fresh per-rank files), and the
/// state is read back into it.
pub(crate) struct Mover<'a, F> {
    pub(crate) init: &'a F,
    /// Some rank has an out-of-core array.
    pub(crate) any_ooc: bool,
    /// `--checkpoint-dir` (or `--resume`'s directory when checkpointing).
    pub(crate) ckpt_dir: Option<PathBuf>,
    pub(crate) scratch: PathBuf,
    pub(crate) problem: checkpoint::Problem,
    pub(crate) tag: u32,
    /// Iterations done before this process started (`--resume`).
    pub(crate) start: u64,
    /// Set by the last move through disk: the checkpoint it committed.
    pub(crate) committed: Option<PathBuf>,
    /// Seconds per row each rank took to build its kernel, at the start
    /// or in the last move through disk: the model's rebuild cost.
    pub(crate) rebuild: Vec<f64>,
}

impl<F> Mover<'_, F> {
    /// [`Mover::go`] from a barrier, timed: returns this rank's seconds in
    /// the move and the slowest rank's. Collective.
    pub(crate) fn timed<K: Kernel>(
        &mut self,
        world: &SimpleCommunicator,
        slot: &mut Option<K>,
        ctx: &mut Ctx,
        new: &Dist,
        it: u64,
    ) -> Result<(f64, f64)>
    where
        F: Fn(&Ctx) -> Result<K>,
    {
        world.barrier();
        let t = Instant::now();
        self.go(world, slot, ctx, new, it)?;
        let mine = t.elapsed().as_secs_f64();
        let mut worst = 0.0f64;
        world.all_reduce_into(&mine, &mut worst, SystemOperation::max());
        Ok((mine, worst))
    }

    /// Move to `new` after local iteration `it` (collective); `ctx.dist`
    /// becomes `new`.
    fn go<K: Kernel>(
        &mut self,
        world: &SimpleCommunicator,
        slot: &mut Option<K>,
        ctx: &mut Ctx,
        new: &Dist,
        it: u64,
    ) -> Result<()>
    where
        F: Fn(&Ctx) -> Result<K>,
    {
        let kernel = slot.as_mut().context("no kernel")?;
        if !self.any_ooc {
            kernel.redistribute(ctx, new)?;
            ctx.dist = new.clone();
            return Ok(());
        }
        let (dir, keep) = match &self.ckpt_dir {
            Some(d) => (d.clone(), true),
            None => (self.scratch.join("move"), false),
        };
        if !keep {
            let made = if ctx.rank == 0 {
                checkpoint::prepare_dir(&dir, "scratch")
            } else {
                Ok(())
            };
            agree(world, made)?;
        }
        let iteration = self.start + it + 1;
        let (path, m) =
            checkpoint::save(world, kernel, ctx, &dir, &self.problem, iteration, self.tag)?;
        // The state is on disk: the old arrays and their files go first
        // (the new per-rank files take the same names), then the new ones.
        *slot = None;
        checkpoint::kill_point("redistribute", ctx.rank);
        ctx.dist = new.clone();
        let t = Instant::now();
        let mut k = agree(world, (self.init)(ctx))?;
        self.rebuild = per_row_times(world, t.elapsed().as_secs_f64(), new.0[ctx.rank]);
        checkpoint::load(world, &mut k, ctx, &path, &m)?;
        ctx.emu.set_cache(k.storage().direct);
        self.any_ooc = any_out_of_core(world, &k);
        *slot = Some(k);
        world.barrier();
        if keep {
            self.committed = Some(path);
        } else if ctx.rank == 0 {
            let _ = std::fs::remove_dir_all(&dir);
        }
        Ok(())
    }
}

/// Every rank's `secs` per row (0 for a rank without rows), on every
/// rank. Collective.
pub(crate) fn per_row_times(world: &SimpleCommunicator, secs: f64, rows: u64) -> Vec<f64> {
    let mine = if rows > 0 { secs / rows as f64 } else { 0.0 };
    let mut all = vec![0.0f64; world.size() as usize];
    world.all_gather_into(&mine, &mut all[..]);
    all
}

/// Does any rank keep an array out of core? Collective.
pub(crate) fn any_out_of_core<K: Kernel>(world: &SimpleCommunicator, k: &K) -> bool {
    let mine = i32::from(!k.storage().out_of_core.is_empty());
    let mut any = 0i32;
    world.all_reduce_into(&mine, &mut any, SystemOperation::max());
    any > 0
}
