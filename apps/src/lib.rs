//! The harness shared by mheta's MPI kernels, so that a kernel's file holds
//! only its numerics and its verification (as PETSc keeps `DM` apart from
//! `KSP`). The harness owns the common command line and the checks that
//! fail alike on every rank ([`Common`], [`agree`]); the emulated cluster
//! ([`emulate`]: cgroup CPU quotas, memory limits and disk throttles, with
//! the paper's fallbacks); storage in core or out of core ([`storage`]:
//! the out-of-core rule, ICLA pieces, MPI-IO, prefetching; [`mpiio`]: the
//! thin unsafe layer); 1-D row neighbours and halo exchange ([`grid`]); and
//! the run itself ([`run`], in `driver.rs` as set-up, iterate, move,
//! checkpoint and report steps): iteration and stage markers, timing,
//! `--auto` (plan with the model inside the job, then redistribute) and the
//! one-line JSON report, which notes a CPU emulation that is not faithful
//! where a node's ranks outnumber its cores.

use anyhow::{Context, Result, anyhow, bail};
use mheta_model::Dist;
use mheta_hosts::cluster::{ClusterSpec, RankSpec};
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
pub mod farm;
pub mod grid;
pub mod harmonic;
pub mod mpiio;
pub mod storage;
pub mod touches;

mod driver;
pub use driver::{CpuSetup, cpu_faithful_or_stop, run, start_cpu_emulation, unfaithful_cpu};

use emulate::{Emulation, Machine};
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
    /// noisy machine). Default: share, except where ranks outnumber a
    /// machine's cores and their CPU powers differ: there every mode but
    /// clock is unfaithful, and the run stops and says what to pass
    /// unless a mode is given by name.
    #[arg(long, value_name = "HOW", value_parser = ["share", "quota", "spin", "paced", "clock"])]
    pub cpu_emulation: Option<String>,
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
    /// was recorded, plan at once on the sensed slowdowns with Figueira and Berman's
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

impl Common {
    /// The CPU emulation asked for, else the default (`share`).
    pub fn cpu_mode(&self) -> &str {
        self.cpu_emulation.as_deref().unwrap_or("share")
    }
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
    gather_json_at(world, 0, v)
}

/// Every rank's JSON value, at rank `at` (None elsewhere); a value that
/// does not parse arrives as null. Collective.
pub fn gather_json_at(world: &SimpleCommunicator, at: usize, v: &Value) -> Option<Vec<Value>> {
    let bytes = v.to_string().into_bytes();
    let p = world.size() as usize;
    let root = world.process_at_rank(at as i32);
    if world.rank() as usize == at {
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
        let cpu = mheta_runtime::cpu::thread_cpu();
        mheta_runtime::markers::stage_begin();
        let r = f();
        checkpoint::kill_point("iteration", self.rank);
        mheta_runtime::markers::stage_end();
        touches::stage_done();
        STAGE_CPU_NS.fetch_add(
            ((mheta_runtime::cpu::thread_cpu() - cpu).max(0.0) * 1e9) as u64,
            Ordering::Relaxed,
        );
        STAGE_NS.fetch_add(t.elapsed().as_nanos() as u64, Ordering::Relaxed);
        r
    }

    /// The stages that follow run on grid level `l` (multigrid): the
    /// model scales their time with the rows of that level.
    pub fn level(&self, l: usize) {
        mheta_runtime::markers::level(l as u32);
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
    /// cost of the move (`mheta_model::redist`).
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
    pub sensed_slowdown: Option<Vec<mheta_model::stoch::Stoch>>,
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
    sensed: Option<Vec<mheta_model::stoch::Stoch>>,
) -> Result<AutoReport> {
    let inst = mheta_runtime::instrumented_iterations();
    declare_dist(ctx, decl)?;
    let t0 = Instant::now();
    let at_unix_s = adapt::unix_now();
    let remaining = iters - (it + 1);
    let plan = mheta_runtime::plan_in_run(
        world,
        decl,
        &mheta_runtime::trace_dir(),
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
    let mut r = auto_report(&plan, from, remaining);
    r.instrumented_iterations = inst;
    r.redistributed_after = it;
    r.at_unix_s = at_unix_s;
    r.measured_move_s = measured_move_s;
    r.plan_s = plan_s;
    r.redistribute_s = redistribute_s;
    r.sensed_slowdown = sensed;
    ctx.dist = plan.dist;
    Ok(r)
}

/// The declaration's distribution is the one in force (rank 0 rewrites
/// app.json), so that a re-plan models the rows the trace saw.
fn declare_dist(ctx: &Ctx, decl: &mut mheta_trace::AppDecl) -> Result<()> {
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
fn auto_report(plan: &mheta_runtime::RunPlan, from: Dist, remaining: u64) -> AutoReport {
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
        remaining_iters: remaining,
        predicted_gain_s: gain,
        predicted_move_s: cost,
        move_bytes: bytes,
        measured_move_s: None,
        measured_from_s: None,
        measured_chosen_s: None,
        evaluations: evals,
        predicted_busy_s: plan.predicted_busy_s.clone(),
        plan_s: 0.0,
        redistribute_s: 0.0,
        drifts: Vec::new(),
        replans: Vec::new(),
        reverted: None,
        sensed_slowdown: None,
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
    mheta_scale::median(&mut v)
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

/// Check the common options for the problem on `np` ranks before
/// anything is allocated: the distribution, cluster, iterations, limits,
/// the CPU clock, `--resume`, checkpoints, `--auto` and `--move-to`.
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
    check_rates(c)?;
    let cpu_clock = match (c.cpu_mode(), &c.cpu_ns_per_unit) {
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
    let move_to = match (&c.move_to, c.move_at) {
        (Some(text), Some(at)) => Some((at, check_move(text, at, np, rows, todo)?)),
        _ => None,
    };
    Ok(Checked {
        dist,
        cluster,
        iters,
        mem_limit,
        auto: check_auto(c, np, start, todo)?,
        move_to,
        resume,
        start,
        todo,
        checkpoints: check_checkpoints(c)?,
        cpu_clock,
    })
}

/// `--mem-limit` and `--disk-mb-s` are positive.
fn check_rates(c: &Common) -> Result<()> {
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
    Ok(())
}

/// `--checkpoint-every K` and its directory (`--checkpoint-dir`, else
/// `--resume`'s), probed.
fn check_checkpoints(c: &Common) -> Result<Option<(u64, PathBuf)>> {
    Ok(match (c.checkpoint_every, &c.checkpoint_dir, &c.resume) {
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
    })
}

/// `--auto`: after which iteration it plans, and the profile; it needs
/// the instrumented iterations before that, iterations after it, the
/// interposer and a profile.
fn check_auto(c: &Common, np: usize, start: u64, todo: u64) -> Result<Option<(u64, PathBuf)>> {
    if !c.auto {
        return Ok(None);
    }
    let inst = mheta_runtime::instrumented_iterations();
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
    if !mheta_runtime::interposer_loaded() {
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
    Ok(Some((at, profile)))
}

/// `--move-to DIST --move-at AT`: the distribution, after an iteration
/// this run does.
fn check_move(text: &str, at: u64, np: usize, rows: u64, todo: u64) -> Result<Dist> {
    let d = Dist::parse(text, np, rows).context("--move-to")?;
    if at == 0 || at >= todo {
        bail!(
            "--move-at {at}: must be between 1 and {} (the iterations this run does, less one): the move follows that many iterations",
            todo - 1
        );
    }
    Ok(d)
}

/// This rank's host: a hash of its host name (an emulated host's own).
fn host_hash() -> u64 {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most buf.len() bytes into buf.
    unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    fnv(buf.iter().copied().take_while(|&b| b != 0))
}

fn fnv(bytes: impl Iterator<Item = u8>) -> u64 {
    bytes.fold(0xcbf29ce484222325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x100000001b3)
    })
}

/// Which machine's cores this rank runs on: a hash of the kernel's boot
/// id, which every network and UTS namespace of one kernel shares, so
/// that ranks on emulated hosts of one machine count as sharing its cores
/// (for `--wait` and whether an emulation is faithful); the host name
/// where the boot id cannot be read.
pub fn machine_hash() -> u64 {
    match std::fs::read("/proc/sys/kernel/random/boot_id") {
        Ok(id) => fnv(id.into_iter()),
        Err(_) => host_hash(),
    }
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
