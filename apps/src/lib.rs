//! The harness shared by mheta's MPI kernels, so that a kernel's file holds
//! only its numerics and its verification (as PETSc keeps `DM` apart from
//! `KSP`). The harness owns the common command line and the checks that
//! fail alike on every rank ([`Common`], [`agree`]); the emulated cluster
//! ([`emulate`]: cgroup CPU quotas, memory limits and disk throttles, with
//! the paper's fallbacks); storage in core or out of core ([`storage`]:
//! the out-of-core rule, ICLA pieces, MPI-IO, prefetching; [`mpiio`]: the
//! thin unsafe layer); 1-D row neighbours and halo exchange ([`grid`]); and
//! the run itself ([`run`]): iteration and stage markers, timing, `--auto`
//! (plan with the model inside the job, then redistribute) and the one-line
//! JSON report.

use anyhow::{Context, Result, anyhow, bail};
use mheta_runtime::Dist;
use mheta_runtime::cluster::{ClusterSpec, RankSpec};
use mheta_trace::AppDecl;
use mpi::collective::{CommunicatorCollectives, Root, SystemOperation};
use mpi::datatype::PartitionMut;
use mpi::topology::{Communicator, SimpleCommunicator};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

pub mod adapt;
pub mod checkpoint;
pub mod comm;
pub mod emulate;
pub mod grid;
pub mod harmonic;
pub mod mpiio;
pub mod storage;
pub mod touches;

use emulate::Emulation;
use storage::Storage;

/// Options every app takes.
#[derive(clap::Args, Debug, Clone)]
pub struct Common {
    /// Iterations of the main loop (default: the app's).
    #[arg(long)]
    pub iters: Option<u64>,
    /// GEN_BLOCK rows per rank, `s0,s1,...` (sums to the app's rows; a
    /// rank may get 0); default: equal blocks.
    #[arg(long)]
    pub dist: Option<String>,
    /// Emulated cluster: a TOML spec file or a built-in name (uniform,
    /// het2, het4; DC, IO, HY1, HY2 for 4 or 8 ranks).
    #[arg(long, default_value = "uniform")]
    pub cluster: String,
    /// Memory for each rank's arrays, MB (overrides the spec's
    /// mem_limit_mb). Arrays that do not fit go out of core.
    #[arg(long, value_name = "MB")]
    pub mem_limit: Option<f64>,
    /// Directory for out-of-core files (default: the trace directory under
    /// `mheta run`, else $TMPDIR or /tmp). Removed at exit.
    #[arg(long, value_name = "DIR")]
    pub scratch: Option<PathBuf>,
    /// Prefetch out-of-core pieces (double buffering with
    /// MPI_File_iread_at and MPI_Wait).
    #[arg(long)]
    pub prefetch: bool,
    /// How cpu_power is emulated: share (a cgroup quota of each rank's
    /// base share of a core, so ranks never steal each other's time, plus
    /// extra work for the relative power), quota (a quota of base share ×
    /// power), spin (extra work only, the paper's method), or paced (each
    /// piece of work that took CPU time c lasts c / (base share × power),
    /// sleeping for the rest, like the paced disk), or clock (each piece
    /// of u units of work lasts u × --cpu-ns-per-unit / (base share ×
    /// power), whatever the host's own speed did: reproducible runs on a
    /// noisy machine).
    #[arg(long, value_name = "HOW", default_value = "share", value_parser = ["share", "quota", "spin", "paced", "clock"])]
    pub cpu_emulation: String,
    /// With `--cpu-emulation clock`: nanoseconds a unit of work lasts at
    /// cpu_power 1 on a whole core, one figure for every piece of work, or
    /// FILE, an earlier run's JSON report (a calibration run): each call
    /// site of the kernel's work gets the largest CPU time per unit that
    /// the report's ranks measured there (`ranks[].cpu_sites`), times
    /// --cpu-headroom. The report's `cpu_overruns` counts pieces whose real
    /// work outlasted their time.
    #[arg(long, value_name = "NS|FILE")]
    pub cpu_ns_per_unit: Option<String>,
    /// With `--cpu-ns-per-unit FILE`: the factor over the calibration
    /// run's figures, for the host's slow spells (this VM's speed changes
    /// by up to 1.9x by itself).
    #[arg(long, value_name = "X", default_value_t = 2.5)]
    pub cpu_headroom: f64,
    /// Disk rate of a rank at io_factor 1, MB/s (each rank gets MB/s /
    /// io_factor; default 100). Given explicitly, every rank's disk is
    /// emulated even when all io_factors are equal.
    #[arg(long, value_name = "MB/s")]
    pub disk_mb_s: Option<f64>,
    /// How io_factor is emulated: paced (the MPI library's reads and writes
    /// take bytes × io_factor / rate), throttle (a blkio throttle per rank)
    /// or scaled (reads and writes move io_factor times their bytes, the
    /// paper's method).
    #[arg(long, value_name = "HOW", default_value = "paced", value_parser = ["paced", "throttle", "scaled"])]
    pub disk_emulation: String,
    /// How ranks wait for messages and collectives: poll (Open MPI's
    /// blocking calls, which spin), sleep (non-blocking calls tested with
    /// ~50 us sleeps in between, so a waiting rank leaves its core to the
    /// others), or auto (sleep when a node has more ranks than cores).
    #[arg(long, value_name = "HOW", default_value = "auto", value_parser = ["auto", "poll", "sleep"])]
    pub wait: String,
    /// After the instrumented iterations, choose a distribution with the
    /// MHETA model and GBS, move every distributed array there, and
    /// continue. Needs the interposer (`mheta run`) and a cluster profile.
    #[arg(long)]
    pub auto: bool,
    /// With --auto: redistribute after this iteration (default: right
    /// after the instrumented ones).
    #[arg(long, value_name = "ITER")]
    pub auto_at: Option<u64>,
    /// Move every distributed array to this GEN_BLOCK distribution after
    /// iteration --move-at, without the model (for trying a distribution
    /// mid-run, and for testing moves). Not with --auto.
    #[arg(
        long,
        value_name = "DIST",
        requires = "move_at",
        conflicts_with = "auto"
    )]
    pub move_to: Option<String>,
    /// With --auto: when the ranks' busy times (median of 5 iterations
    /// each, time in stages) measured over the model's predictions have
    /// come apart by more than this many percent (largest ratio over
    /// smallest) twice in a row, record a few iterations again, re-plan,
    /// and move again if it pays. 0 turns it off.
    #[arg(long, value_name = "PCT", default_value_t = adapt::DEFAULT_THRESHOLD_PCT)]
    pub replan_threshold: f64,
    /// With --auto, how a drift is answered: `record` (record a few
    /// iterations again and plan on them) or `sensed` (when a rank's CPU
    /// share in its stages has changed by more than 15% since its trace
    /// was recorded, plan at once on the sensed slowdowns with seed 000's
    /// model, without recording; otherwise record).
    #[arg(long, value_name = "HOW", default_value = "record", value_parser = ["record", "sensed"])]
    pub replan_on: String,
    /// With --move-to: move after this many iterations (as --auto-at).
    #[arg(long, value_name = "ITER", requires = "move_to")]
    pub move_at: Option<u64>,
    /// Cluster profile from `mheta bench` (default: $MHETA_PROFILE).
    #[arg(long, env = "MHETA_PROFILE")]
    pub profile: Option<PathBuf>,
    /// Write a checkpoint of every distributed array (MPI-IO), the
    /// iteration and the distribution after every K iterations, into
    /// --checkpoint-dir (or --resume's directory). Only the newest
    /// complete checkpoint is kept; each is committed by renaming its
    /// manifest, so a kill leaves the previous one whole.
    #[arg(long, value_name = "K")]
    pub checkpoint_every: Option<u64>,
    /// Directory for checkpoints (created if missing; one run at a time).
    #[arg(long, value_name = "DIR")]
    pub checkpoint_dir: Option<PathBuf>,
    /// Continue from the newest complete checkpoint in DIR: the same app
    /// and problem, on any number of ranks, read into the distribution in
    /// force (--dist, or equal blocks). --iters is still the total.
    #[arg(long, value_name = "DIR")]
    pub resume: Option<PathBuf>,
}

/// One rank's resolved emulation settings.
#[derive(Clone, Debug)]
pub struct Resolved {
    pub spec: RankSpec,
    /// Memory for arrays, bytes.
    pub mem_limit: Option<u64>,
    /// Ranks' disks differ (some io_factor is not the others').
    pub io_factors_differ: bool,
    /// The smallest io_factor of the cluster (scaled I/O is relative to it).
    pub min_io_factor: f64,
    /// `--disk-mb-s` was given: throttle every rank.
    pub throttle_always: bool,
    /// `--cpu-emulation`: share, quota, spin, paced or clock.
    pub cpu_mode: String,
    /// `--cpu-ns-per-unit` (clock).
    pub cpu_clock: Option<emulate::Clock>,
    /// `--disk-emulation`: paced, throttle or scaled.
    pub disk_mode: String,
    /// Disk rate at io_factor 1, MB/s.
    pub disk_mb_s: f64,
}

/// If any rank failed, every rank returns the first failing rank's error
/// (so that all ranks stop alike and rank 0 can print it). Collective.
pub fn agree<T>(world: &SimpleCommunicator, r: Result<T>) -> Result<T> {
    let msg = match &r {
        Ok(_) => String::new(),
        Err(e) => format!("{e:#}"),
    };
    let p = world.size() as usize;
    let mut lens = vec![0i32; p];
    world.all_gather_into(&(msg.len() as i32), &mut lens[..]);
    let Some(k) = lens.iter().position(|&l| l > 0) else {
        return r;
    };
    let mut buf = if k == world.rank() as usize {
        msg.into_bytes()
    } else {
        vec![0u8; lens[k] as usize]
    };
    world.process_at_rank(k as i32).broadcast_into(&mut buf[..]);
    let text = String::from_utf8_lossy(&buf).into_owned();
    Err(if p > 1 {
        anyhow!("rank {k}: {text}")
    } else {
        anyhow!("{text}")
    })
}

/// Every rank's JSON value, at rank 0 (None elsewhere). Collective.
pub fn gather_json(world: &SimpleCommunicator, v: &Value) -> Option<Vec<Value>> {
    let bytes = v.to_string().into_bytes();
    let p = world.size() as usize;
    let root = world.process_at_rank(0);
    if world.rank() == 0 {
        let mut lens = vec![0i32; p];
        root.gather_into_root(&(bytes.len() as i32), &mut lens[..]);
        let displs: Vec<i32> = lens
            .iter()
            .scan(0, |a, &l| {
                let d = *a;
                *a += l;
                Some(d)
            })
            .collect();
        let mut all = vec![0u8; lens.iter().map(|&l| l as usize).sum()];
        {
            let mut part = PartitionMut::new(&mut all[..], &lens[..], &displs[..]);
            root.gather_varcount_into_root(&bytes[..], &mut part);
        }
        Some(
            (0..p)
                .map(|r| {
                    let a = displs[r] as usize;
                    serde_json::from_slice(&all[a..a + lens[r] as usize]).unwrap_or(Value::Null)
                })
                .collect(),
        )
    } else {
        root.gather_into(&(bytes.len() as i32));
        root.gather_varcount_into(&bytes[..]);
        None
    }
}

/// The per-run scratch directory `<dir>/mheta-<app>-<tag>`; each rank
/// removes it on drop (the last one to leave succeeds).
pub struct Scratch {
    pub dir: PathBuf,
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.dir);
    }
}

fn make_scratch(base: &Path, app: &str, tag: u32) -> Result<Scratch> {
    if !base.is_dir() {
        bail!("--scratch {}: no such directory", base.display());
    }
    let dir = base.join(format!("mheta-{app}-{tag}"));
    std::fs::create_dir_all(&dir).with_context(|| {
        format!(
            "--scratch {}: cannot create {} there",
            base.display(),
            dir.display()
        )
    })?;
    let probe = dir.join(format!(".probe.{}", std::process::id()));
    std::fs::write(&probe, b"")
        .with_context(|| format!("--scratch {}: not writable", base.display()))?;
    let _ = std::fs::remove_file(&probe);
    Ok(Scratch { dir })
}

/// Per-iteration seconds this rank spent in out-of-core reads and writes
/// (the storage layer adds to them), and in stages.
pub static READ_NS: AtomicU64 = AtomicU64::new(0);
pub static WRITE_NS: AtomicU64 = AtomicU64::new(0);
static STAGE_NS: AtomicU64 = AtomicU64::new(0);
/// This rank's thread CPU time in stages (the in-run CPU sensor,
/// [`adapt::stage_share`]).
static STAGE_CPU_NS: AtomicU64 = AtomicU64::new(0);

/// What a kernel reports about its storage.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct StorageReport {
    /// ICLA passes per sweep (1: in core).
    pub passes: usize,
    pub out_of_core: Vec<String>,
    pub icla_bytes: u64,
    /// Out-of-core files bypass the page cache with O_DIRECT (None: in core).
    #[serde(skip)]
    pub direct: Option<bool>,
}

impl StorageReport {
    /// The report of a storage plan for the arrays `names` (in the plan's
    /// order); `direct`: the direct-I/O state of any out-of-core file.
    pub fn new(plan: &storage::MemPlan, names: &[&str], direct: Option<bool>) -> StorageReport {
        StorageReport {
            passes: plan.passes(),
            out_of_core: names
                .iter()
                .zip(&plan.out_of_core)
                .filter(|(_, o)| **o)
                .map(|(n, _)| n.to_string())
                .collect(),
            icla_bytes: plan.icla_bytes,
            direct,
        }
    }
}

/// Everything a kernel sees of the harness.
pub struct Ctx<'w> {
    pub world: &'w SimpleCommunicator,
    pub rank: usize,
    pub np: usize,
    pub dist: Dist,
    pub emu: Emulation,
    /// Where out-of-core arrays go, and how.
    pub storage: Storage,
    /// Memory for this rank's arrays, bytes (None: unlimited).
    pub mem_budget: Option<u64>,
    pub prefetch: bool,
    pub iters: u64,
    /// The fixed data of the last [`Ctx::plan`], for the declaration.
    fixed: std::cell::Cell<Option<Fixed>>,
}

/// Data a kernel keeps in memory besides its on-disk arrays:
/// `bytes + per_row * rows` (vectors, ghost rows, row pointers).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Fixed {
    pub bytes: u64,
    pub per_row: u64,
}

impl Ctx<'_> {
    /// Run `f` as one stage (computation and I/O whose time scales with the
    /// rank's rows): the interposer's stage markers around it, timed.
    pub fn stage<R>(&self, f: impl FnOnce() -> R) -> R {
        let t = Instant::now();
        let cpu = mheta_live::cpu::thread_cpu();
        mheta_live::markers::stage_begin();
        let r = f();
        checkpoint::kill_point("iteration", self.rank);
        mheta_live::markers::stage_end();
        touches::stage_done();
        STAGE_CPU_NS.fetch_add(
            ((mheta_live::cpu::thread_cpu() - cpu).max(0.0) * 1e9) as u64,
            Ordering::Relaxed,
        );
        STAGE_NS.fetch_add(t.elapsed().as_nanos() as u64, Ordering::Relaxed);
        r
    }

    /// The stages that follow run on grid level `l` (multigrid): the
    /// model scales their time with the rows of that level.
    pub fn level(&self, l: usize) {
        mheta_live::markers::level(l as u32);
    }

    /// Real work of `units` (the kernel's measure: points, nonzeros): a
    /// rank of relative power p < 1 follows it with extra work until it
    /// has taken 1/p of its CPU time, or, by the clock, it lasts `units`
    /// times the clock's figure (see `emulate`).
    #[track_caller]
    pub fn work<R>(&self, units: u64, f: impl FnOnce() -> R) -> R {
        self.emu.work(units, f)
    }

    /// My rows `[first, first + rows)`.
    pub fn my_rows(&self) -> (usize, usize) {
        let first = self.dist.offsets()[self.rank] as usize;
        (first, self.dist.0[self.rank] as usize)
    }

    /// The out-of-core rule for this rank's arrays (in the order the
    /// kernel declares its on-disk arrays); `fixed` goes into the
    /// declaration so that the model applies the same rule to any
    /// distribution.
    pub fn plan(&self, fixed: Fixed, needs: &[storage::Need]) -> Result<storage::MemPlan> {
        self.fixed.set(Some(fixed));
        let rows = self.dist.0[self.rank];
        let bytes = fixed.bytes + fixed.per_row * rows;
        Ok(storage::plan(self.mem_budget, bytes, needs, self.prefetch)?)
    }

    /// The storage to put array `i` of `plan` on (None: in core).
    pub fn disk_for(&self, plan: &storage::MemPlan, i: usize) -> Option<&Storage> {
        plan.out_of_core[i].then_some(&self.storage)
    }
}

/// A kernel on GEN_BLOCK rows, driven by [`run`].
pub trait Kernel {
    /// The declaration written to `app.json` for the model.
    fn declare(&self, ctx: &Ctx) -> AppDecl;
    /// One iteration of the main loop (between the iteration markers).
    fn iterate(&mut self, ctx: &Ctx) -> Result<()>;
    /// Move every distributed array from `old` to `new` (in core).
    /// Collective; `ctx.dist` is still `old`.
    fn redistribute(&mut self, ctx: &Ctx, new: &Dist) -> Result<()>;
    /// Where the arrays live.
    fn storage(&self) -> StorageReport;
    /// Name the state a checkpoint holds, for saving and loading alike:
    /// every distributed array that changes between iterations, and the
    /// values that carry over ([`checkpoint::State`]). Collective.
    fn state(&mut self, s: &mut checkpoint::State) -> Result<()>;
    /// Verify and report: an object with at least `verified`. Collective.
    fn finish(&mut self, ctx: &Ctx) -> Result<Value>;
}

/// What `--auto` did, for the report.
#[derive(serde::Serialize, Debug, Clone)]
pub struct AutoReport {
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
    pub predicted_from_s: f64,
    pub predicted_chosen_s: f64,
    /// Predicted gain over the remaining iterations, and the predicted
    /// cost of the move (`mheta_runtime::redist`).
    pub remaining_iters: u64,
    pub predicted_gain_s: f64,
    pub predicted_move_s: f64,
    pub move_bytes: u64,
    /// Measured: the slowest rank's time in the move (None: no move).
    pub measured_move_s: Option<f64>,
    pub measured_from_s: Option<f64>,
    pub measured_chosen_s: Option<f64>,
    pub evaluations: u64,
    /// The model's busy time (computation and I/O) of each rank on the
    /// distribution the run continues on: what the drift watch compares.
    pub predicted_busy_s: Vec<f64>,
    pub plan_s: f64,
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
    /// (`adapt::sensed_slowdowns`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sensed_slowdown: Option<Vec<mheta_runtime::stoch::Stoch>>,
}

/// One plan with the model and GBS on the latest recorded iterations
/// (collective), and the move if it pays. `decl.dist` becomes the
/// distribution in force, so a re-plan models the rows the trace saw.
#[allow(clippy::too_many_arguments)]
fn plan_and_move<K: Kernel, F: Fn(&Ctx) -> Result<K>>(
    world: &SimpleCommunicator,
    slot: &mut Option<K>,
    mover: &mut Mover<'_, F>,
    ctx: &mut Ctx,
    decl: &mut mheta_trace::AppDecl,
    profile: &Path,
    it: u64,
    iters: u64,
    sensed: Option<Vec<mheta_runtime::stoch::Stoch>>,
) -> Result<AutoReport> {
    let inst = mheta_live::instrumented_iterations();
    if decl.dist != ctx.dist.0 {
        decl.dist = ctx.dist.0.clone();
        if ctx.rank == 0 {
            let dir = mheta_live::trace_dir();
            mheta_trace::write_app(&dir, decl).with_context(|| {
                format!(
                    "cannot rewrite {}",
                    dir.join(mheta_trace::APP_FILE).display()
                )
            })?;
        }
    }
    let t0 = Instant::now();
    let at_unix_s = adapt::unix_now();
    let remaining = iters - (it + 1);
    let plan = mheta_live::plan_in_run(
        world,
        decl,
        &mheta_live::trace_dir(),
        profile,
        remaining,
        Some(&mover.rebuild),
        sensed.as_deref(),
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
    // Every rank gets the distribution; rank 0 also the details.
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
    let r = AutoReport {
        instrumented_iterations: inst,
        redistributed_after: it,
        at_unix_s,
        from_dist: from.0,
        chosen_dist: chosen,
        moved,
        reason,
        predicted_from_s: plan.predicted_current_s,
        predicted_chosen_s: pc,
        remaining_iters: remaining,
        predicted_gain_s: gain,
        predicted_move_s: cost,
        move_bytes: bytes,
        measured_move_s,
        measured_from_s: None,
        measured_chosen_s: None,
        evaluations: evals,
        predicted_busy_s: plan.predicted_busy_s.clone(),
        plan_s,
        redistribute_s,
        drifts: Vec::new(),
        replans: Vec::new(),
        reverted: None,
        sensed_slowdown: sensed,
    };
    ctx.dist = plan.dist;
    Ok(r)
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
struct Mover<'a, F> {
    init: &'a F,
    /// Some rank has an out-of-core array.
    any_ooc: bool,
    /// `--checkpoint-dir` (or `--resume`'s directory when checkpointing).
    ckpt_dir: Option<PathBuf>,
    scratch: PathBuf,
    problem: checkpoint::Problem,
    tag: u32,
    /// Iterations done before this process started (`--resume`).
    start: u64,
    /// Set by the last move through disk: the checkpoint it committed.
    committed: Option<PathBuf>,
    /// Seconds per row each rank took to build its kernel, at the start
    /// or in the last move through disk: the model's rebuild cost.
    rebuild: Vec<f64>,
}

impl<F> Mover<'_, F> {
    /// [`Mover::go`] from a barrier, timed: returns this rank's seconds in
    /// the move and the slowest rank's. Collective.
    fn timed<K: Kernel>(
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
fn per_row_times(world: &SimpleCommunicator, secs: f64, rows: u64) -> Vec<f64> {
    let mine = if rows > 0 { secs / rows as f64 } else { 0.0 };
    let mut all = vec![0.0f64; world.size() as usize];
    world.all_gather_into(&mine, &mut all[..]);
    all
}

/// Does any rank keep an array out of core? Collective.
fn any_out_of_core<K: Kernel>(world: &SimpleCommunicator, k: &K) -> bool {
    let mine = i32::from(!k.storage().out_of_core.is_empty());
    let mut any = 0i32;
    world.all_reduce_into(&mine, &mut any, SystemOperation::max());
    any > 0
}

/// Median of the finite values (None when there are none).
pub fn median(mut v: Vec<f64>) -> Option<f64> {
    v.retain(|x| x.is_finite());
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    Some(if v.len() % 2 == 1 {
        v[m]
    } else {
        0.5 * (v[m - 1] + v[m])
    })
}

/// Parse an app's arguments on every rank; `--help`/`--version` print on
/// rank 0 and end the run cleanly (`Ok(None)`).
pub fn parse_args<A: clap::Parser>(world: &SimpleCommunicator) -> Result<Option<A>> {
    match A::try_parse() {
        Ok(a) => Ok(Some(a)),
        Err(e) => {
            if world.rank() == 0 {
                let _ = e.print();
            }
            if e.use_stderr() {
                Err(anyhow!("invalid arguments"))
            } else {
                Ok(None)
            }
        }
    }
}

/// Settings checked before anything is allocated; the same on every rank.
struct Checked {
    dist: Dist,
    cluster: ClusterSpec,
    iters: u64,
    mem_limit: Vec<Option<u64>>,
    auto: Option<(u64, PathBuf)>,
    move_to: Option<(u64, Dist)>,
    /// `--resume`: the checkpoint and its manifest.
    resume: Option<(PathBuf, checkpoint::Manifest)>,
    /// Iterations already done (from the checkpoint), and left to do.
    start: u64,
    todo: u64,
    /// `--checkpoint-every` and where.
    checkpoints: Option<(u64, PathBuf)>,
    /// `--cpu-ns-per-unit` (clock).
    cpu_clock: Option<emulate::Clock>,
}

/// `--cpu-ns-per-unit NS|FILE` with `--cpu-headroom` (for a FILE).
fn clock_figures(v: &str, headroom: f64) -> Result<emulate::Clock> {
    if let Ok(ns) = v.trim().parse::<f64>() {
        if !(ns.is_finite() && ns > 0.0) {
            bail!("--cpu-ns-per-unit {ns}: must be a positive number of nanoseconds");
        }
        return Ok(emulate::Clock::Every(ns));
    }
    if !(headroom.is_finite() && headroom > 0.0) {
        bail!("--cpu-headroom {headroom}: must be a positive factor");
    }
    let text = std::fs::read_to_string(v).map_err(|e| {
        anyhow::anyhow!("--cpu-ns-per-unit {v}: neither a number nor a readable report: {e}")
    })?;
    emulate::Clock::from_report(&text, headroom)
        .map_err(|e| anyhow::anyhow!("--cpu-ns-per-unit {v}: {e}"))
}

fn check(
    c: &Common,
    np: usize,
    problem: &checkpoint::Problem,
    default_iters: u64,
) -> Result<Checked> {
    let rows = problem.rows;
    let dist = match &c.dist {
        Some(text) => Dist::parse(text, np, rows)?,
        None => Dist::block(np, rows),
    };
    let cluster = ClusterSpec::resolve(&c.cluster, np)?;
    let iters = c.iters.unwrap_or(default_iters);
    if iters == 0 {
        bail!("--iters must be at least 1");
    }
    if let Some(m) = c.mem_limit
        && !(m.is_finite() && m > 0.0)
    {
        bail!("--mem-limit {m}: must be a positive number of MB");
    }
    if let Some(r) = c.disk_mb_s
        && !(r.is_finite() && r > 0.0)
    {
        bail!("--disk-mb-s {r}: must be a positive rate in MB/s");
    }
    let cpu_clock = match (c.cpu_emulation.as_str(), &c.cpu_ns_per_unit) {
        ("clock", None) => bail!("--cpu-emulation clock needs --cpu-ns-per-unit NS|FILE"),
        ("clock", Some(v)) => Some(clock_figures(v, c.cpu_headroom)?),
        (_, None) => None,
        (mode, Some(_)) => {
            bail!("--cpu-ns-per-unit is for --cpu-emulation clock, not {mode}")
        }
    };
    let mem_limit = cluster
        .rank
        .iter()
        .map(|r| c.mem_limit.or(r.mem_limit_mb).map(|mb| (mb * 1e6) as u64))
        .collect();
    // Resume and checkpoints: read and probe only; nothing is written to
    // an existing checkpoint before the run is known to be sound.
    let resume = match &c.resume {
        Some(dir) => {
            let (path, m) = checkpoint::find(dir)?;
            checkpoint::matches(&m, problem, iters, &path)?;
            Some((path, m))
        }
        None => None,
    };
    let start = resume.as_ref().map_or(0, |(_, m)| m.iteration);
    let todo = iters - start;
    let checkpoints = match (c.checkpoint_every, &c.checkpoint_dir, &c.resume) {
        (Some(0), _, _) => bail!("--checkpoint-every must be at least 1"),
        (Some(k), Some(d), _) | (Some(k), None, Some(d)) => {
            checkpoint::prepare_dir(d, "--checkpoint-dir")?;
            Some((k, d.clone()))
        }
        (Some(_), None, None) => {
            bail!("--checkpoint-every needs --checkpoint-dir DIR (or --resume DIR)")
        }
        (None, Some(d), _) => {
            bail!(
                "--checkpoint-dir {} needs --checkpoint-every K",
                d.display()
            )
        }
        (None, None, _) => None,
    };
    let auto = if c.auto {
        let inst = mheta_live::instrumented_iterations();
        let at = c.auto_at.unwrap_or(inst.end);
        if at < inst.end {
            bail!(
                "--auto-at {at} must come after the instrumented iterations {}..{}",
                inst.start,
                inst.end
            );
        }
        if at >= todo {
            bail!(
                "--auto needs more iterations: it redistributes after iteration {at} but {} {todo}",
                if start > 0 {
                    format!("after resuming at {start}, the iterations left are")
                } else {
                    "--iters is".to_string()
                }
            );
        }
        if !mheta_live::interposer_loaded() {
            bail!(
                "--auto needs the interposer to record an iteration: run under `mheta run -- mpirun ...`"
            );
        }
        let profile = c.profile.clone().context(
            "--auto needs a cluster profile: pass --profile FILE (from `mheta bench`) or set MHETA_PROFILE",
        )?;
        if !profile.is_file() {
            bail!(
                "--profile {}: no such file; create it with `mheta bench --np {np} -o {}`",
                profile.display(),
                profile.display()
            );
        }
        Some((at, profile))
    } else {
        None
    };
    let move_to = match (&c.move_to, c.move_at) {
        (Some(text), Some(at)) => {
            let d = Dist::parse(text, np, rows).context("--move-to")?;
            if at == 0 || at >= todo {
                bail!(
                    "--move-at {at}: must be between 1 and {} (the iterations this run does, less one): the move follows that many iterations",
                    todo - 1
                );
            }
            Some((at, d))
        }
        _ => None,
    };
    Ok(Checked {
        dist,
        cluster,
        iters,
        mem_limit,
        auto,
        move_to,
        resume,
        start,
        todo,
        checkpoints,
        cpu_clock,
    })
}

fn host_hash() -> u64 {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most buf.len() bytes into buf.
    unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    buf.iter()
        .take_while(|&&b| b != 0)
        .fold(0xcbf29ce484222325u64, |h, &b| {
            (h ^ b as u64).wrapping_mul(0x100000001b3)
        })
}

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
    let np = world.size() as usize;
    let rank = world.rank() as usize;
    let problem = checkpoint::Problem {
        app: app.into(),
        rows,
        params: extra.clone(),
    };
    let ck = check(c, np, &problem, default_iters)?;

    // Scratch space: a per-run directory named by rank 0's pid.
    let base = match &c.scratch {
        Some(d) => d.clone(),
        None if mheta_live::interposer_loaded() => mheta_live::trace_dir(),
        None => std::env::var_os("TMPDIR").map_or_else(|| PathBuf::from("/tmp"), PathBuf::from),
    };
    if c.scratch.is_none() {
        let _ = std::fs::create_dir_all(&base);
    }
    let mut tag = std::process::id();
    world.process_at_rank(0).broadcast_into(&mut tag);
    let scratch = agree(world, make_scratch(&base, app, tag))?;

    // Emulation: which ranks share this node, then the cgroups.
    let mut hosts = vec![0u64; np];
    world.all_gather_into(&host_hash(), &mut hosts[..]);
    let node_powers: Vec<f64> = (0..np)
        .filter(|&j| hosts[j] == hosts[rank])
        .map(|j| ck.cluster.rank[j].cpu_power)
        .collect();
    let resolved = Resolved {
        spec: ck.cluster.rank[rank].clone(),
        mem_limit: ck.mem_limit[rank],
        io_factors_differ: ck
            .cluster
            .rank
            .iter()
            .any(|r| r.io_factor != ck.cluster.rank[0].io_factor),
        min_io_factor: ck
            .cluster
            .rank
            .iter()
            .map(|r| r.io_factor)
            .fold(f64::MAX, f64::min),
        throttle_always: c.disk_mb_s.is_some(),
        cpu_mode: c.cpu_emulation.clone(),
        cpu_clock: ck.cpu_clock.clone(),
        disk_mode: c.disk_emulation.clone(),
        disk_mb_s: c.disk_mb_s.unwrap_or(emulate::DEFAULT_DISK_MB_S),
    };
    let rss0 = Emulation::rss();
    let local = (0..rank).filter(|&j| hosts[j] == hosts[rank]).count();
    let mut emu = Emulation::start(&resolved, &node_powers, local, &scratch.dir);
    // The node's cores, not this rank's affinity (mpirun binds ranks).
    // SAFETY: sysconf takes a constant and returns a number.
    let cores = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }.max(1) as usize;
    let sleep = match c.wait.as_str() {
        "sleep" => true,
        "poll" => false,
        _ => node_powers.len() > cores,
    };
    comm::set_sleep(sleep);
    emu.report.wait = if sleep { "sleep" } else { "poll" }.into();
    let mut ctx = Ctx {
        world,
        rank,
        np,
        dist: ck.dist.clone(),
        storage: Storage {
            dir: scratch.dir.clone(),
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
    };
    let t_init = Instant::now();
    let mut slot = Some(agree(world, init(&ctx))?);
    let rebuild = per_row_times(world, t_init.elapsed().as_secs_f64(), ctx.dist.0[rank]);
    if let (Some((path, m)), Some(k)) = (&ck.resume, slot.as_mut()) {
        checkpoint::load(world, k, &ctx, path, m)?;
    }
    let kernel = slot.as_mut().context("no kernel")?;
    let st = kernel.storage();
    ctx.emu.set_cache(st.direct);
    ctx.emu.limit_memory(rss0);
    let mut mover = Mover {
        init: &init,
        any_ooc: any_out_of_core(world, kernel),
        ckpt_dir: ck.checkpoints.as_ref().map(|(_, d)| d.clone()),
        scratch: scratch.dir.clone(),
        problem: problem.clone(),
        tag,
        start: ck.start,
        committed: None,
        rebuild,
    };

    // The declaration, next to the traces.
    let mut decl = kernel.declare(&ctx);
    if let Some(f) = ctx.fixed.get() {
        decl.memory = Some(mheta_trace::MemoryDecl {
            budget: ck.mem_limit.clone(),
            fixed_bytes: f.bytes,
            fixed_per_row: f.per_row,
            prefetch: c.prefetch,
        });
    }
    // Rank 0 writes it; a failure is said and the run goes on.
    let write_decl = |decl: &mheta_trace::AppDecl| -> bool {
        let dir = mheta_live::trace_dir();
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
    };
    let decl_written = rank == 0 && mheta_live::interposer_loaded() && write_decl(&decl);

    // Local iterations 0..todo, after `start` done before (`--resume`):
    // the interposer's instrumented iterations and every index below are
    // this process's, checkpoints count from the run's beginning.
    let (start, iters) = (ck.start, ck.todo);
    // The last recorded iteration: app.json is rewritten after it, as the
    // interposer writes the traces, so that no recorded iteration waits
    // for the write.
    let touch_at = if mheta_live::interposer_loaded() {
        (mheta_live::instrumented_iterations().end.max(1) - 1).min(iters.saturating_sub(1))
    } else {
        0
    };
    let mut checkpoints: Vec<u64> = Vec::new();
    let mut times = Vec::with_capacity(iters as usize);
    let (mut stage_s, mut read_s, mut write_s) = (Vec::new(), Vec::new(), Vec::new());
    // The in-run CPU sensor: this rank's CPU share in its stages, per
    // iteration; its share while the trace in use was recorded; and the
    // slowdowns the plan in force was made with (none: as recorded).
    let mut shares: Vec<Option<f64>> = Vec::with_capacity(iters as usize);
    let mut base_share: Option<f64> = None;
    let mut applied: Vec<f64> = Vec::new();
    let mut pending_sensed: Option<Vec<mheta_runtime::stoch::Stoch>> = None;
    let mut auto_report: Option<AutoReport> = None;
    // Iterations after which rows moved, and iterations recorded again.
    let mut moved: Vec<u64> = Vec::new();
    // --move-to's move: after which iteration, to what, bytes, seconds.
    let mut forced_move: Option<serde_json::Value> = None;
    let mut rerecorded: Vec<u64> = Vec::new();
    let mut watch = ck
        .auto
        .as_ref()
        .filter(|_| c.replan_threshold > 0.0)
        .map(|_| adapt::Watch::new(c.replan_threshold / 100.0));
    let t_start = Instant::now();
    let loop_start_unix_s = adapt::unix_now();
    for it in 0..iters {
        let (s0, r0, w0, c0) = (
            STAGE_NS.load(Ordering::Relaxed),
            READ_NS.load(Ordering::Relaxed),
            WRITE_NS.load(Ordering::Relaxed),
            STAGE_CPU_NS.load(Ordering::Relaxed),
        );
        let t = Instant::now();
        let kernel = slot.as_mut().context("no kernel")?;
        checkpoint::ITERATION.store(start + it, Ordering::Relaxed);
        // Rank 0 notes the arrays each stage sweeps in the last recorded
        // iteration, for the declaration (`touches`).
        let note_touches = rank == 0 && decl_written && it == touch_at;
        if note_touches {
            touches::begin();
        }
        mheta_live::markers::iteration_begin();
        let r = kernel.iterate(&ctx);
        mheta_live::markers::iteration_end();
        if note_touches && let Some(t) = touches::end() {
            decl.stage_access = Some(t);
            write_decl(&decl);
        }
        if let Err(e) = r {
            // Other ranks may be blocked in MPI: say what happened here,
            // remove this rank's files, and abort the job.
            eprintln!("{app}: error: rank {rank}, iteration {it}: {e:#}");
            drop(slot);
            drop(scratch);
            world.abort(2);
        }
        times.push(t.elapsed().as_secs_f64());
        stage_s.push((STAGE_NS.load(Ordering::Relaxed) - s0) as f64 * 1e-9);
        shares.push(adapt::stage_share(
            (STAGE_CPU_NS.load(Ordering::Relaxed) - c0) as f64 * 1e-9,
            stage_s[it as usize],
        ));
        read_s.push((READ_NS.load(Ordering::Relaxed) - r0) as f64 * 1e-9);
        write_s.push((WRITE_NS.load(Ordering::Relaxed) - w0) as f64 * 1e-9);

        if let Some((at, d)) = &ck.move_to
            && it + 1 == *at
        {
            let from = ctx.dist.clone();
            let (_, worst) = mover.timed(world, &mut slot, &mut ctx, d, it)?;
            let bytes = mheta_runtime::redist::moved_bytes(&decl, &from, d);
            forced_move = Some(json!({
                "after": it,
                "from": from.0,
                "to": d.0,
                "bytes": bytes,
                "measured_s": worst,
                "bytes_per_s": bytes as f64 / worst,
            }));
            moved.push(it);
        }
        if let Some((at, profile)) = &ck.auto {
            let replan_now = watch.as_mut().is_some_and(|w| w.replan_at == Some(it + 1));
            if it + 1 == *at || replan_now {
                let sensed = pending_sensed.take();
                if let Some(s) = &sensed {
                    applied = s.iter().map(|x| x.mean).collect();
                } else {
                    // A plan on a fresh recording: the sensor's base is
                    // the share this rank had while it was recorded.
                    let inst = mheta_live::instrumented_iterations();
                    let recorded = if replan_now {
                        (it + 1).saturating_sub(inst.end - inst.start)..it + 1
                    } else {
                        inst
                    };
                    base_share = adapt::median_share(&shares, recorded);
                    applied.clear();
                }
                let r = plan_and_move(
                    world, &mut slot, &mut mover, &mut ctx, &mut decl, profile, it, iters, sensed,
                )?;
                if r.moved {
                    moved.push(it);
                }
                let expected = if r.moved {
                    r.predicted_chosen_s
                } else {
                    r.predicted_from_s
                };
                let busy = r.predicted_busy_s.clone();
                let move_s = r.measured_move_s.filter(|_| r.moved);
                match (&mut auto_report, replan_now) {
                    (None, _) => auto_report = Some(r),
                    (Some(a), _) => a.replans.push(r),
                }
                if let Some(w) = watch.as_mut() {
                    w.planned(world, it, expected, &busy, replan_now, move_s);
                }
            } else if let Some(w) = watch.as_mut() {
                let mut verdict =
                    w.observe(world, it, iters, times[it as usize], stage_s[it as usize]);
                // With `--replan-on sensed`, a drift asks the in-run sensor
                // first: has a rank's CPU share changed since its trace was
                // recorded (another job came or went)? Then the next
                // iteration plans on the sensed slowdowns, without
                // recording again.
                if c.replan_on == "sensed"
                    && let Some(adapt::Verdict::Drift(drift)) = &verdict
                    && it + 2 + adapt::WINDOW as u64 <= iters
                {
                    let window = (it + 1).saturating_sub(adapt::WINDOW as u64)..it + 1;
                    let sensed = adapt::sensed_slowdowns(world, base_share, &shares, window);
                    if adapt::load_changed(&sensed, &applied) {
                        w.replan_at = Some(it + 2);
                        pending_sensed = Some(sensed);
                        if let Some(a) = auto_report.as_mut() {
                            a.drifts.push(drift.clone());
                        }
                        verdict = None;
                    }
                }
                match verdict {
                    Some(adapt::Verdict::Drift(drift))
                        if it
                            + 1
                            + mheta_live::instrumented_iterations().end
                            + adapt::WINDOW as u64
                            <= iters =>
                    {
                        // The next iterations are recorded again (the
                        // perturbed ones are left out of the medians),
                        // then the plan is made afresh; not when fewer
                        // than a window of iterations would be left after
                        // it to gain anything.
                        mheta_live::markers::rerecord();
                        let inst = mheta_live::instrumented_iterations();
                        w.replan_at = Some(it + 1 + inst.end);
                        rerecorded.extend((it + 1 + inst.start)..(it + 1 + inst.end));
                        if let Some(a) = auto_report.as_mut() {
                            a.drifts.push(drift);
                        }
                    }
                    Some(adapt::Verdict::Revert(mut rev)) => {
                        // Back to the distribution the last re-plan left.
                        let a = auto_report.as_mut().context("a revert without a plan")?;
                        let last = a.replans.last_mut().context("a revert without a re-plan")?;
                        let back = Dist(last.from_dist.clone());
                        let (_, worst) = mover.timed(world, &mut slot, &mut ctx, &back, it)?;
                        rev.measured_move_s = Some(worst);
                        last.reverted = Some(rev);
                        moved.push(it);
                        w.reverted(it);
                    }
                    _ => {}
                }
            }
        }
        // A move through disk just committed a checkpoint of this state.
        let done = start + it + 1;
        if mover.committed.take().is_some() {
            checkpoints.push(done);
        } else if let Some((every, dir)) = &ck.checkpoints
            && done.is_multiple_of(*every)
            && done < ck.iters
        {
            let kernel = slot.as_mut().context("no kernel")?;
            checkpoint::save(world, kernel, &ctx, dir, &problem, done, tag)?;
            checkpoints.push(done);
        }
    }
    let elapsed_s = t_start.elapsed().as_secs_f64();
    // The job's iteration time: the slowest rank's, iteration by iteration.
    let mut job_times = vec![0.0f64; times.len()];
    world.all_reduce_into(&times[..], &mut job_times[..], SystemOperation::max());
    let kernel = slot.as_mut().context("no kernel")?;
    let result = kernel.finish(&ctx)?;
    let st = kernel.storage();
    let inst: Vec<u64> = if mheta_live::interposer_loaded() {
        mheta_live::instrumented_iterations().collect()
    } else {
        vec![]
    };
    // Medians leave out iteration 0 (warm-up), the instrumented iterations
    // (perturbed by recording), and the redistribution's iteration and the
    // one after it.
    let skip = |i: u64| {
        i == 0
            || inst.contains(&i)
            || rerecorded.contains(&i)
            || moved.iter().any(|&m| i == m || i == m + 1)
    };
    let med = |v: &[f64], from: u64, to: u64| {
        median(
            (from..to.min(v.len() as u64))
                .filter(|&i| !skip(i))
                .map(|i| v[i as usize])
                .collect(),
        )
    };
    let work = ctx.emu.work_stats();
    let host = hostname();
    let mut notes = ctx.emu.report.notes.clone();
    if let Some(lab) = &ck.cluster.lab {
        let want = &lab.hosts[lab.rank_hosts()[rank]].name;
        if &host != want {
            notes.push(format!(
                "rank {rank} ran on host {host}, but {} puts it on {want}: the spec's links were not in its way (launch with `mheta hosts mpirun {}` or `mheta run --cluster`)",
                c.cluster, c.cluster
            ));
        }
    }
    let mut mine = json!({
        "rank": rank,
        "host": host,
        "cpu_ns_per_unit": work.ns_per_unit,
        "work_pieces": work.pieces,
        "cpu_overruns": work.overruns,
        "cpu_overrun_s": work.overrun_s,
        "cpu_sites": work.sites,
        "rows": ctx.dist.0[rank],
        "cpu_power": resolved.spec.cpu_power,
        "io_factor": resolved.spec.io_factor,
        "mem_limit_mb": resolved.mem_limit.map(|b| b as f64 / 1e6),
        "cpu": ctx.emu.report.cpu,
        "memory": ctx.emu.report.memory,
        "disk": ctx.emu.report.disk,
        "passes": st.passes,
        "out_of_core": st.out_of_core,
        "icla_bytes": st.icla_bytes,
        "stage_s": med(&stage_s, 0, iters),
        // The in-run CPU sensor: this rank's CPU share in its stages,
        // median over the run (per iteration with MHETA_DEBUG_TIMES).
        "cpu_share": adapt::median_share(&shares, 0..iters),
        "read_s": med(&read_s, 0, iters),
        "write_s": med(&write_s, 0, iters),
        // Per iteration, stage time outside the reads and writes (the
        // computation, and whatever copying storage does), then the
        // median: a difference of medians mixes different iterations.
        "compute_s": med(
            &stage_s
                .iter()
                .zip(&read_s)
                .zip(&write_s)
                .map(|((s, r), w)| s - r - w)
                .collect::<Vec<_>>(),
            0,
            iters
        ),
        "notes": notes,
    });
    if std::env::var_os("MHETA_DEBUG_TIMES").is_some() {
        mine["cpu_shares"] = json!(shares);
    }
    let ranks = gather_json(world, &mine);
    ctx.emu.stop();
    if let Some(a) = auto_report.as_mut() {
        a.measured_from_s = med(&job_times, 1, a.redistributed_after + 1);
        if a.moved {
            // Up to the next re-plan, if any.
            let end = a
                .replans
                .first()
                .map_or(iters, |r| r.redistributed_after + 1);
            a.measured_chosen_s = med(&job_times, a.redistributed_after + 2, end);
        }
    }
    if let Some(ranks) = ranks {
        // Each resource: the methods the ranks used ("none" only if all did).
        let mut emulation = ctx.emu.report.clone();
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
        let mut report = json!({
            "app": app,
            "np": np,
            "rows": rows,
            "dist": ctx.dist.0,
            "iters": ck.iters,
            "move": forced_move,
            "resumed_from": ck.resume.as_ref().map(|(p, m)| json!({
                "checkpoint": p,
                "iteration": m.iteration,
                "np": m.np,
                "dist": m.dist,
            })),
            "checkpoints": ck.checkpoints.as_ref().map(|(every, dir)| json!({
                "every": every,
                "dir": dir,
                "written_after": checkpoints,
            })),
            "cluster": c.cluster,
            "prefetch": c.prefetch,
            "huge_pages": mheta_live::huge_pages_wanted(),
            "on_node_copy": mheta_live::on_node_copy_wanted(),
            "elapsed_s": elapsed_s,
            "iter_median_s": med(&job_times, 0, iters),
            "emulation": emulation,
            "ranks": ranks,
            "auto": auto_report,
        });
        if std::env::var_os("MHETA_DEBUG_TIMES").is_some() {
            // With when the loop began on rank 0's clock, to set the
            // iterations beside another program's timeline.
            report["iter_times_s"] = json!(job_times);
            report["loop_start_unix_s"] = json!(loop_start_unix_s);
        }
        if let (Some(obj), Value::Object(ex)) = (report.as_object_mut(), extra) {
            obj.extend(ex);
        }
        if let (Some(obj), Value::Object(res)) = (report.as_object_mut(), result) {
            obj.extend(res);
        }
        // Kernels that count their floating-point work get Mop/s (NPB's
        // definition: the operations of the timed iterations over their time).
        if let Some(f) = report["flops_per_iteration"].as_f64() {
            report["mops"] = json!(f * iters as f64 / elapsed_s * 1e-6);
        }
        println!("{report}");
    }
    // Every rank's files go before any rank removes the directory, so
    // that one of them finds it empty.
    drop(slot);
    world.barrier();
    drop(scratch);
    Ok(())
}

/// Run `body` with MPI initialised; print errors from rank 0 and exit
/// non-zero on every rank when it fails.
pub fn main_with_mpi(app: &str, body: impl FnOnce(&SimpleCommunicator) -> Result<()>) -> ! {
    let code = {
        let Some(universe) = mpi::initialize() else {
            eprintln!("{app}: error: MPI was already initialised");
            std::process::exit(2);
        };
        let world = universe.world();
        match body(&world) {
            Ok(()) => 0,
            Err(e) => {
                let text = format!("{e:#}");
                if world.rank() == 0 && !text.is_empty() {
                    eprintln!("{app}: error: {text}");
                }
                2
            }
        }
    };
    std::process::exit(code)
}

/// This node's hostname (an emulated host's own, inside its namespace).
fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_default()
}
