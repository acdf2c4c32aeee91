//! The harness shared by mheta's MPI kernels: the common command line
//! (`--n`, `--iters`, `--dist`, `--cluster`, `--auto`), argument checks that
//! fail alike on every rank, CPU-power emulation by extra work (as the MHETA
//! paper does), per-iteration timing, the `--auto` step (plan with model +
//! GBS inside the job, then redistribute), and the one-line JSON report.

use anyhow::{Context, Result, bail};
use mheta_runtime::Dist;
use mheta_runtime::cluster::ClusterSpec;
use mheta_trace::AppDecl;
use mpi::topology::{Communicator, SimpleCommunicator};
use std::path::PathBuf;
use std::time::Instant;

/// Options every app takes.
#[derive(clap::Args, Debug, Clone)]
pub struct Common {
    /// Iterations of the main loop.
    #[arg(long, default_value_t = 100)]
    pub iters: u64,
    /// GEN_BLOCK rows per rank, `s0,s1,...` (sums to the app's rows);
    /// default: equal blocks.
    #[arg(long)]
    pub dist: Option<String>,
    /// Emulated cluster: a TOML spec file or a built-in name (uniform, het2, het4).
    #[arg(long, default_value = "uniform")]
    pub cluster: String,
    /// After the instrumented iteration, choose a distribution with the
    /// MHETA model and GBS, move the rows there, and continue. Needs the
    /// interposer (`mheta run`) and a cluster profile.
    #[arg(long)]
    pub auto: bool,
    /// With --auto: redistribute after this many iterations (default: right
    /// after the instrumented ones).
    #[arg(long, value_name = "ITER")]
    pub auto_at: Option<u64>,
    /// Cluster profile from `mheta bench` (default: $MHETA_PROFILE).
    #[arg(long, env = "MHETA_PROFILE")]
    pub profile: Option<PathBuf>,
}

/// Everything an app needs after its arguments are checked.
pub struct Setup {
    pub rank: usize,
    pub np: usize,
    pub dist: Dist,
    pub cluster: ClusterSpec,
    /// `Some` with --auto: (iteration after which to redistribute, profile).
    pub auto: Option<(u64, PathBuf)>,
}

impl Setup {
    /// Check the common options for an app with `rows` distributed rows.
    /// Every rank runs the same checks on the same arguments, so every
    /// rank fails alike; the caller prints from rank 0 only.
    pub fn new(world: &SimpleCommunicator, c: &Common, rows: u64) -> Result<Setup> {
        let np = world.size() as usize;
        let rank = world.rank() as usize;
        let dist = match &c.dist {
            Some(text) => Dist::parse(text, np, rows)?,
            None => Dist::block(np, rows),
        };
        let cluster = ClusterSpec::resolve(&c.cluster, np)?;
        if c.iters == 0 {
            bail!("--iters must be at least 1");
        }
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
            if at >= c.iters {
                bail!(
                    "--auto needs more iterations: it redistributes after iteration {at} but --iters is {}",
                    c.iters
                );
            }
            if !mheta_live::interposer_loaded() {
                bail!(
                    "--auto needs the interposer to record an iteration: run under `mheta run -- mpirun ...`"
                );
            }
            let profile = c
                .profile
                .clone()
                .context("--auto needs a cluster profile: pass --profile FILE (from `mheta bench`) or set MHETA_PROFILE")?;
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
        Ok(Setup {
            rank,
            np,
            dist,
            cluster,
            auto,
        })
    }

    /// Write the app declaration next to the traces when the interposer is
    /// recording this run (rank 0 only).
    pub fn declare(&self, app: &AppDecl) {
        if self.rank == 0 && mheta_live::interposer_loaded() {
            let dir = mheta_live::trace_dir();
            let r = std::fs::create_dir_all(&dir)
                .map_err(|e| e.to_string())
                .and_then(|_| mheta_trace::write_app(&dir, app).map_err(|e| e.to_string()));
            if let Err(e) = r {
                eprintln!(
                    "{}: cannot write {}: {e}",
                    app.app,
                    dir.join(mheta_trace::APP_FILE).display()
                );
            }
        }
    }

    /// This rank's emulator.
    pub fn emulator(&self) -> Emulator {
        Emulator::new(self.cluster.rank[self.rank].cpu_power)
    }

    /// Warnings for spec fields this app does not emulate yet.
    pub fn warn_unemulated(&self, app: &str) {
        if self.rank != 0 {
            return;
        }
        for (i, r) in self.cluster.rank.iter().enumerate() {
            if r.mem_limit_mb.is_some() || r.io_factor != 1.0 {
                eprintln!(
                    "{app}: warning: rank {i}: mem_limit_mb/io_factor are not emulated by {app} yet (in-core only); CPU power is"
                );
            }
        }
    }
}

/// Emulates a slower CPU by extra work, as the MHETA paper does: after a
/// piece of real work that took `t`, a rank of power `p` keeps its core
/// busy for another `t * (1/p - 1)`, so the work takes `t / p` in all.
/// The extra work is a spin on the clock: it costs CPU time exactly in
/// proportion to the real work (hence to the rows) and, unlike a repeated
/// stencil, does not compete with the other ranks for memory bandwidth.
#[derive(Clone, Copy, Debug)]
pub struct Emulator {
    pub extra_per_unit: f64,
}

impl Emulator {
    pub fn new(cpu_power: f64) -> Self {
        Emulator {
            extra_per_unit: (1.0 / cpu_power - 1.0).max(0.0),
        }
    }

    /// Stretch the work that began at `start` to `elapsed / cpu_power`.
    pub fn stretch(&self, start: Instant) {
        if self.extra_per_unit <= 0.0 {
            return;
        }
        let real = start.elapsed();
        let until = real.mul_f64(1.0 + self.extra_per_unit);
        while start.elapsed() < until {
            std::hint::spin_loop();
        }
    }
}

/// Per-iteration wall times (measured on rank 0, after the iteration's
/// closing reduction, so they are the job's iteration times).
#[derive(Default, Debug)]
pub struct Timer {
    pub times: Vec<f64>,
    start: Option<Instant>,
}

impl Timer {
    pub fn begin(&mut self) {
        self.start = Some(Instant::now());
    }

    pub fn end(&mut self) {
        if let Some(s) = self.start.take() {
            self.times.push(s.elapsed().as_secs_f64());
        }
    }

    /// Median of iterations `[from, to)`, skipping `skip`.
    pub fn median(&self, from: u64, to: u64, skip: &[u64]) -> Option<f64> {
        let mut v: Vec<f64> = (from..to.min(self.times.len() as u64))
            .filter(|i| !skip.contains(i))
            .map(|i| self.times[i as usize])
            .collect();
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
}

/// What `--auto` did, for the report.
#[derive(serde::Serialize, Debug, Clone)]
pub struct AutoReport {
    pub instrumented_iterations: std::ops::Range<u64>,
    pub redistributed_after: u64,
    pub from_dist: Vec<u64>,
    pub chosen_dist: Vec<u64>,
    pub predicted_from_s: f64,
    pub predicted_chosen_s: f64,
    pub measured_from_s: Option<f64>,
    pub measured_chosen_s: Option<f64>,
    pub evaluations: u64,
    pub plan_s: f64,
    pub redistribute_s: f64,
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
                if world.rank() == 0 {
                    eprintln!("{app}: error: {e:#}");
                }
                2
            }
        }
    };
    std::process::exit(code)
}
