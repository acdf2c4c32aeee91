//! The common command line of the kernels ([`Common`]) and its checks,
//! made before anything is allocated and alike on every rank
//! ([`check`]: the distribution, cluster, iterations, memory limits,
//! `--auto`, `--move-to`, checkpoints and the CPU clock), and one rank's
//! resolved emulation settings ([`Resolved`]).

use crate::{adapt, checkpoint, emulate};
use anyhow::{Context, Result, bail};
use mheta_hosts::cluster::{ClusterSpec, RankSpec};
use mheta_model::Dist;
use std::path::PathBuf;

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
    /// run's figures, for the host's slow spells (a shared VM's speed can
    /// change by itself; figures in docs/design/apps.md).
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
    /// With --auto: plan on the iterations recorded from the instrumented
    /// ones to this one, and redistribute after it (default: right after
    /// the instrumented ones).
    #[arg(long, value_name = "ITER")]
    pub auto_at: Option<u64>,
    /// With --auto: move to this GEN_BLOCK distribution instead of the
    /// one GBS finds, whether or not it pays, and do not re-plan. The
    /// report gives the model's prediction for it, from the iterations
    /// this run recorded, beside the iterations this run then measures on
    /// it (`auto.predicted_chosen_s`, `auto.measured_chosen_s`): the
    /// model against one run, free of the host's drift between runs.
    #[arg(long, value_name = "DIST", requires = "auto")]
    pub auto_to: Option<String>,
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
    /// With --auto: when the ranks' busy times (time in stages) measured
    /// over the model's predictions have come apart beyond their own
    /// noise, record again (as many iterations as the first plan had, at
    /// most a quarter of those left), re-plan, and move again if it pays.
    /// Every 5 iterations each rank takes the median of its last 15
    /// ratios and that median's 95% interval; a drift is the highest
    /// lower bound more than this many percent above the lowest upper
    /// bound, at two checks in a row. 0 turns it off.
    #[arg(long, value_name = "PCT", default_value_t = adapt::DEFAULT_THRESHOLD_PCT)]
    pub replan_threshold: f64,
    /// With --auto, how changes are answered. `sensed` (default): every 5
    /// iterations a load watch holds each rank's CPU availability (its
    /// thread's CPU time over the time it was runnable, from schedstat)
    /// against the one it had while its trace was recorded; when a rank's
    /// slowdown has moved beyond its own 95% interval and by more than
    /// 15% at two checks in a row (another job came to its core or left
    /// it), plan at once on the sensed slowdowns (Figueira and Berman),
    /// pricing the dedicated trace, without recording; a drift of the
    /// busy times records again only while no rank is time-shared.
    /// Under --cpu-emulation clock there is no load watch (a piece of
    /// compute lasts its declared time whatever CPU it gets, so a sensed
    /// slowdown would price a change the run does not have), and drifts
    /// record again as with `record`. `record`: every drift records a few
    /// iterations again and plans on them.
    #[arg(long, value_name = "HOW", default_value = "sensed", value_parser = ["record", "sensed"])]
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

/// Settings checked before anything is allocated; the same on every rank.
pub(crate) struct Checked {
    pub(crate) dist: Dist,
    pub(crate) cluster: ClusterSpec,
    pub(crate) iters: u64,
    pub(crate) mem_limit: Vec<Option<u64>>,
    pub(crate) auto: Option<(u64, PathBuf)>,
    /// `--auto-to`: the distribution `--auto` moves to instead of GBS's.
    pub(crate) auto_to: Option<Dist>,
    pub(crate) move_to: Option<(u64, Dist)>,
    /// `--resume`: the checkpoint and its manifest.
    pub(crate) resume: Option<(PathBuf, checkpoint::Manifest)>,
    /// Iterations already done (from the checkpoint), and left to do.
    pub(crate) start: u64,
    pub(crate) todo: u64,
    /// `--checkpoint-every` and where.
    pub(crate) checkpoints: Option<(u64, PathBuf)>,
    /// `--cpu-ns-per-unit` (clock).
    pub(crate) cpu_clock: Option<emulate::Clock>,
}

/// `--cpu-ns-per-unit NS|FILE` with `--cpu-headroom` (for a FILE).
pub(crate) fn clock_figures(v: &str, headroom: f64) -> Result<emulate::Clock> {
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
pub(crate) fn check(
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
        auto_to: (c.auto_to.as_deref())
            .map(|t| Dist::parse(t, np, rows).context("--auto-to"))
            .transpose()?,
        move_to,
        resume,
        start,
        todo,
        checkpoints: check_checkpoints(c)?,
        cpu_clock,
    })
}

/// `--mem-limit` and `--disk-mb-s` are positive.
pub(crate) fn check_rates(c: &Common) -> Result<()> {
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
pub(crate) fn check_checkpoints(c: &Common) -> Result<Option<(u64, PathBuf)>> {
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
pub(crate) fn check_auto(
    c: &Common,
    np: usize,
    start: u64,
    todo: u64,
) -> Result<Option<(u64, PathBuf)>> {
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
pub(crate) fn check_move(text: &str, at: u64, np: usize, rows: u64, todo: u64) -> Result<Dist> {
    let d = Dist::parse(text, np, rows).context("--move-to")?;
    if at == 0 || at >= todo {
        bail!(
            "--move-at {at}: must be between 1 and {} (the iterations this run does, less one): the move follows that many iterations",
            todo - 1
        );
    }
    Ok(d)
}
