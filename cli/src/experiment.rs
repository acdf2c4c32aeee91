//! `mheta experiment`: the MHETA paper's section 5 on real runs. One
//! instrumented run on Block, then for each distribution of the figure 8
//! spectrum (and the GBS choice) a prediction and a real run; the table of
//! predicted against actual, the summary, JSON and an SVG like figures
//! 10-11.

mod cpu;
mod plot;

pub use plot::plot;

use anyhow::{Context, Result, bail};
use indicatif::{ProgressBar, ProgressStyle};
use mheta_profile::ClusterProfile;
use mheta_hosts::cluster::ClusterSpec;
use mheta_model::{Dist, Model, search};
use serde::Serialize;
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Command;

/// The kernels `experiment` knows, with the arguments that size them for a
/// 4-rank study on 8 MB nodes (Block puts the limited nodes out of core).
pub const APPS: &[(&str, &[&str])] = &[
    ("jacobi", &["--n", "2048"]),
    ("sor", &["--n", "2560"]),
    ("lanczos", &["--n", "2560"]),
    ("cg", &["--class", "A"]),
    ("wavefront", &["--n", "2560", "--tiles", "8"]),
    ("mg", &["--n", "2047"]),
];

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Kernel: jacobi, sor, lanczos, cg, wavefront or mg.
    #[arg(long)]
    pub app: String,
    /// Emulated cluster: DC, IO, HY1, HY2, a built-in name or a TOML file.
    #[arg(long)]
    pub cluster: String,
    /// Ranks (must match the cluster).
    #[arg(long)]
    pub np: usize,
    /// Out-of-core sweeps prefetch (MHETA eq. 2).
    #[arg(long)]
    pub prefetch: bool,
    /// Distributions along the spectrum (at least 3; GBS's is added).
    #[arg(long, default_value_t = 9)]
    pub points: usize,
    /// Iterations of each real run (its median iteration is "actual");
    /// cg runs its NPB class's count.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u64).range(1..))]
    pub iters: u64,
    /// Real runs per distribution, in interleaved rounds (every point
    /// once, then again): "actual" is the median of the runs' median
    /// iterations, and the JSON gives each run and the spread; their
    /// median spread is the noise floor. A shared machine drifts between
    /// runs; one run per point shows that drift as model error (with
    /// --repeat 1 the first point runs once more, for the noise floor).
    #[arg(long, default_value_t = 2, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub repeat: usize,
    /// One JSON object on stdout instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Also draw predicted and actual time over the spectrum as SVG.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
    /// Cluster profile from `mheta bench` (default: measure one now).
    #[arg(long)]
    pub profile: Option<PathBuf>,
    /// Working directory for the profile and trace.
    #[arg(long, default_value = "mheta-experiment")]
    pub dir: PathBuf,
    /// How the kernels emulate CPU power: auto takes clock (calibrated by
    /// one uniform run) when the ranks outnumber this host's cores, where
    /// the other modes inherit the host's speed changes and the ranks'
    /// contention (jacobi on DC, 4 ranks on 2 cores, under share: mean
    /// diff 23%, max 58%), else the apps' default (share). Or share,
    /// quota, spin, paced or clock; or give the kernel's flags after `--`.
    #[arg(long, default_value = "auto", value_parser = ["auto", "share", "quota", "spin", "paced", "clock"])]
    pub cpu_emulation: String,
    /// Arguments for the kernel instead of the study's defaults (sizes).
    #[arg(last = true, value_name = "APP ARGS")]
    pub app_args: Vec<OsString>,
}

/// `mheta experiment`: run the study, then draw, print or write it.
pub fn main(a: Args) -> Result<i32> {
    let r = run(&a)?;
    if let Some(p) = &a.plot {
        plot(&r, p)?;
    }
    if a.json {
        println!("{}", serde_json::to_string(&r)?);
    } else {
        print(&r);
        if let Some(p) = &a.plot {
            println!("plot:           {}", p.display());
        }
    }
    Ok(0)
}

#[derive(Serialize, Clone, Debug)]
pub struct Row {
    pub label: String,
    pub dist: Vec<u64>,
    pub predicted_s: f64,
    pub actual_s: f64,
    pub diff_pct: f64,
    /// Each real run's median iteration, in the order they ran.
    pub runs_s: Vec<f64>,
    /// (max − min) / median of `runs_s`, percent.
    pub spread_pct: f64,
    /// The model's busiest rank: its time in stages (computation and
    /// I/O, T_τ) per iteration. With `actual_busy_s` it splits a diff into
    /// its stage part and the rest (communication and waiting).
    pub predicted_busy_s: f64,
    /// The median over the runs of the busiest rank's median time in
    /// stages per iteration (the apps' `ranks[].stage_s`).
    pub actual_busy_s: f64,
    /// diff % of those two.
    pub busy_diff_pct: f64,
    /// Some rank kept an array out of core in some real run of this
    /// point (its `out_of_core` list was not empty).
    pub out_of_core: bool,
}

#[derive(Serialize, Debug)]
pub struct Report {
    pub app: String,
    pub cluster: String,
    pub np: usize,
    pub prefetch: bool,
    pub iters: u64,
    /// Real runs per distribution (interleaved rounds).
    pub repeat: usize,
    pub rows: Vec<Row>,
    pub min_diff_pct: f64,
    pub mean_diff_pct: f64,
    pub max_diff_pct: f64,
    /// Mean over the points of `busy_diff_pct`: how much of the diff is
    /// already in the stages.
    pub mean_busy_diff_pct: f64,
    pub best_actual: Row,
    pub best_predicted: Row,
    /// The predicted best is the actual best.
    pub predicted_best_is_best: bool,
    /// Actual time of the predicted best over the best actual, minus one.
    pub predicted_best_gap_pct: f64,
    pub gbs_dist: Vec<u64>,
    pub gbs_evaluations: u64,
    /// The instrumented run's median iteration, s (on Block).
    pub instrumented_s: f64,
    /// The Blk point's actual time over the instrumented run's, minus one,
    /// percent: how far the machine drifted between the run the model
    /// learned from and the real runs, on the same distribution.
    pub drift_pct: Option<f64>,
    /// The host's noise floor: the median over the points of
    /// `spread_pct` (with `--repeat` > 1; with one run per point, the
    /// spread of the first point's run and one more): the run-to-run
    /// noise of one distribution, below which a diff cannot be told from
    /// chance.
    pub noise_pct: Option<f64>,
    /// How `noise_pct` was measured.
    pub noise_from: String,
    /// The runs' CPU emulation and why it was chosen.
    pub cpu_emulation: String,
    /// The Block run's emulation report (cgroups, disk, cache).
    pub emulation: serde_json::Value,
}

/// Check everything that can be checked before anything runs.
pub fn check(a: &Args) -> Result<PathBuf> {
    if !APPS.iter().any(|(n, _)| *n == a.app) {
        bail!(
            "--app {}: unknown (one of {})",
            a.app,
            APPS.iter().map(|a| a.0).collect::<Vec<_>>().join(", ")
        );
    }
    ClusterSpec::resolve(&a.cluster, a.np).map_err(|e| anyhow::anyhow!("{e} (--np {})", a.np))?;
    if a.points < 3 {
        bail!("--points {}: at least 3 distributions are needed", a.points);
    }
    if a.repeat < 1 {
        bail!("--repeat {}: at least one run per distribution", a.repeat);
    }
    if a.iters < 2 {
        bail!("--iters {}: at least 2 iterations per run", a.iters);
    }
    if let Some(p) = &a.profile
        && !p.is_file()
    {
        bail!("--profile {}: no such file", p.display());
    }
    let bin = super::exe_dir()?.join(&a.app);
    if !bin.is_file() {
        bail!(
            "{}: the {} binary is missing (cargo build --release --workspace)",
            bin.display(),
            a.app
        );
    }
    Ok(bin)
}

/// The median of sorted values (the mean of the middle two when even).
fn median_sorted(v: &[f64]) -> f64 {
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        0.5 * (v[n / 2 - 1] + v[n / 2])
    }
}

/// |p - a| / min(p, a), in percent (the paper's figure 9 measure).
pub fn diff_pct(p: f64, a: f64) -> f64 {
    100.0 * (p - a).abs() / p.min(a)
}

/// `mpirun` (or `$MHETA_MPIRUN`) for `np` ranks; Open MPI's gets
/// `--oversubscribe`, and `--allow-run-as-root` as root, as `mheta bench`.
/// On a cluster with hosts, across them.
fn mpirun(np: usize, lab: Option<&mheta_hosts::Lab>) -> Result<Command> {
    if let Some(l) = lab {
        return super::hosts::mpirun_across(l, &[]);
    }
    let launcher = std::env::var_os("MHETA_MPIRUN").unwrap_or_else(|| "mpirun".into());
    let mut c = Command::new(&launcher);
    if super::is_open_mpi_launcher(&launcher) {
        c.arg("--oversubscribe");
        if super::is_root() {
            c.arg("--allow-run-as-root");
        }
    }
    c.args(["-np", &np.to_string()]);
    Ok(c)
}

/// The kernel's sizes: the user's arguments, else the study's defaults.
fn sizes(a: &Args) -> Vec<OsString> {
    if a.app_args.is_empty() {
        APPS.iter()
            .find(|(n, _)| *n == a.app)
            .map(|(_, d)| d.iter().map(OsString::from).collect())
            .unwrap_or_default()
    } else {
        a.app_args.clone()
    }
}

/// The app's own arguments: the defaults for the study unless the user
/// gave some, then the cluster, iterations, prefetching and the CPU
/// emulation's flags `cpu`.
fn app_args(a: &Args, iters: u64, cpu: &[OsString]) -> Vec<OsString> {
    let mut v = sizes(a);
    v.extend(["--cluster", &a.cluster].iter().map(OsString::from));
    // cg runs its NPB class's iteration count, which its verification
    // value needs.
    if a.app != "cg" {
        v.extend(["--iters", &iters.to_string()].iter().map(OsString::from));
    }
    if a.prefetch {
        v.push("--prefetch".into());
    }
    v.extend(cpu.iter().cloned());
    v
}

/// Iterations of the instrumented run: enough for the skipped warm-up
/// iterations and the recorded ones, and one more.
fn instrumented_iters(iters: u64) -> u64 {
    iters.max(mheta_trace::DEFAULT_INSTRUMENT_ITER + mheta_trace::DEFAULT_INSTRUMENT_COUNT + 1)
}

/// The last line of a run's stdout, as JSON.
fn last_json(out: &[u8], what: &str) -> Result<serde_json::Value> {
    let text = String::from_utf8_lossy(out);
    let line = text
        .lines()
        .rev()
        .find(|l| l.trim_start().starts_with('{'))
        .with_context(|| format!("{what}: no JSON result on stdout"))?;
    Ok(serde_json::from_str(line)?)
}

/// Run one job; its JSON result.
fn run_job(mut c: Command, what: &str) -> Result<serde_json::Value> {
    // Write back what earlier runs left dirty (an out-of-core run leaves
    // ~100 MB of its files in the page cache) before this run starts,
    // rather than in the kernel's flusher threads during it, 30 s later.
    // (coreutils' sync(1); a failure to start it only loses that.)
    let _ = Command::new("sync").status();
    let out = c
        .output()
        .with_context(|| format!("{what}: cannot start {:?}", c.get_program()))?;
    if !out.status.success() {
        bail!(
            "{what} failed ({}):\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    last_json(&out.stdout, what)
}

/// A run's answer is right: the kernel verified it, or it matches the
/// `reference` run (sor, whose exact-solution check needs thousands of
/// iterations, computes the same grid bit for bit on every distribution):
/// the same max error, bit for bit (a max reduction does not depend on
/// the order), and the same checksum to 1e-12 (a sum does).
fn check_answer(
    r: &serde_json::Value,
    what: &str,
    reference: Option<&serde_json::Value>,
) -> Result<()> {
    let verified = r["verified"] == serde_json::Value::Bool(true);
    let same = reference.is_some_and(|b| {
        let (c, c0) = (r["checksum"].as_f64(), b["checksum"].as_f64());
        r["error"].as_f64().is_some()
            && r["error"].as_f64() == b["error"].as_f64()
            && matches!((c, c0), (Some(c), Some(c0)) if (c - c0).abs() <= 1e-12 * c0.abs().max(1.0))
    });
    if !verified && !same {
        bail!("{what}: the kernel did not verify: {r}");
    }
    Ok(())
}

/// A study under way: the kernel, the cluster's hosts, the runs' CPU
/// flags, the progress bar, and (sor) the first real run every other is
/// held to.
struct Study<'a> {
    a: &'a Args,
    bin: PathBuf,
    lab: Option<mheta_hosts::Lab>,
    cpu: Vec<OsString>,
    bar: ProgressBar,
    reference: Option<serde_json::Value>,
}

/// Each point's real runs: median iterations, busiest stages, and
/// whether some rank was out of core.
struct Measured {
    runs: Vec<Vec<f64>>,
    busy: Vec<Vec<f64>>,
    ooc: Vec<bool>,
}

/// The study: profile, CPU emulation (calibrated when it is the clock),
/// one instrumented run on Block and its model, the points, their
/// predictions and real runs, the noise floor, and the summary.
pub fn run(a: &Args) -> Result<Report> {
    let bin = check(a)?;
    let lab = ClusterSpec::resolve(&a.cluster, a.np)
        .map_err(|e| anyhow::anyhow!("{e}"))?
        .lab;
    let _lease = lab.as_ref().map(super::hosts::Lease::take).transpose()?;
    std::fs::create_dir_all(&a.dir)
        .with_context(|| format!("cannot create {}", a.dir.display()))?;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let choice = cpu::choose(a, cores)?;
    let bar = ProgressBar::new(0);
    bar.set_style(
        ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} {msg}")
            .expect("template"),
    );
    let mut s = Study {
        a,
        bin,
        lab,
        cpu: choice.flags,
        bar,
        reference: None,
    };
    let prof = ClusterProfile::load(&s.profile()?)?;
    if choice.calibrate {
        s.calibrate()?;
    }
    let (block_run, m) = s.instrumented(&prof)?;
    let (dists, g) = points(&m, a.points)?;
    let predicted: Vec<(f64, f64)> = dists.iter().map(|(_, d)| predict(&m, d)).collect();
    let measured = s.measure(&dists)?;
    let noise = match a.repeat {
        1 => s.noise_run(&dists[0].1, measured.runs[0][0])?,
        _ => (
            None,
            format!("the median spread of {} runs per point", a.repeat),
        ),
    };
    s.bar.finish_and_clear();
    let rows = rows(&dists, predicted, measured);
    let blk = search::corners(&m).blk;
    summarise(a, rows, &block_run, &blk, g, noise, choice.why)
}

impl Study<'_> {
    /// The cluster profile: `--profile`, or `mheta bench --quick` now.
    fn profile(&self) -> Result<PathBuf> {
        let a = self.a;
        if let Some(p) = &a.profile {
            return Ok(p.clone());
        }
        self.bar
            .set_message("measuring the cluster (mheta bench --quick)");
        let p = a.dir.join("profile.json");
        let mut bench = Command::new(std::env::current_exe()?);
        bench.args(["bench", "--quick", "--np", &a.np.to_string()]);
        if self.lab.is_some() {
            bench.args(["--cluster", &a.cluster]);
        }
        let st = bench
            .arg("-o")
            .arg(&p)
            .stdout(std::process::Stdio::null())
            .status()?;
        if !st.success() {
            bail!("mheta bench failed ({st})");
        }
        Ok(p)
    }

    /// The clock's figures: one uniform in-core run of the kernel's sizes
    /// (2 iterations, `--cpu-emulation spin`) measures each call site's
    /// CPU nanoseconds per unit; its report, kept in the working
    /// directory, is the runs' `--cpu-ns-per-unit`.
    fn calibrate(&mut self) -> Result<()> {
        let a = self.a;
        self.bar
            .set_message("calibrating the clock (uniform, spin, 2 iterations)");
        let cal = a.dir.join("cpu-calibration.json");
        let mut c = mpirun(a.np, None)?;
        c.arg(&self.bin)
            .args(cpu::without_cpu_flags(&sizes(a)))
            .args(["--iters", "2", "--cpu-emulation", "spin"]);
        let r = run_job(c, "the clock's calibration run")?;
        std::fs::write(&cal, format!("{r}\n"))
            .with_context(|| format!("cannot write {}", cal.display()))?;
        self.cpu.push("--cpu-ns-per-unit".into());
        self.cpu.push(cal.into_os_string());
        Ok(())
    }

    /// One instrumented run on Block under `mheta run`; its result and
    /// the model of its trace.
    fn instrumented(&self, prof: &ClusterProfile) -> Result<(serde_json::Value, Model)> {
        let a = self.a;
        self.bar.set_message("instrumented run on Block");
        let trace = a.dir.join("trace");
        let mut launch = Command::new(std::env::current_exe()?);
        let mpi = mpirun(a.np, self.lab.as_ref())?;
        for (k, v) in mpi.get_envs() {
            if let Some(v) = v {
                launch.env(k, v);
            }
        }
        launch
            .arg("run")
            .arg("--trace-dir")
            .arg(&trace)
            .arg("--")
            .arg(mpi.get_program())
            .args(mpi.get_args())
            .arg(&self.bin)
            .args(app_args(a, instrumented_iters(a.iters), &self.cpu));
        let block_run = run_job(launch, "the instrumented run")?;
        // sor's short runs cannot meet its exact-solution check: each is
        // held to the first real run (Blk, the spectrum's first point).
        if a.app != "sor" {
            check_answer(&block_run, "the instrumented run", None)?;
        }
        let traces = mheta_trace::read_dir(&trace)?;
        let app = mheta_trace::read_app(&trace)?;
        let m = Model::new(&traces, app, prof)?;
        Ok((block_run, m))
    }

    /// One real run on `d`, its answer checked; its result.
    fn real_run(&mut self, d: &Dist) -> Result<serde_json::Value> {
        let a = self.a;
        let mut c = mpirun(a.np, self.lab.as_ref())?;
        c.arg(&self.bin)
            .args(app_args(a, a.iters, &self.cpu))
            .arg("--dist")
            .arg(d.to_string());
        let what = format!("the run on {d}");
        let r = run_job(c, &what)?;
        match (&self.reference, a.app == "sor") {
            (None, true) => self.reference = Some(r.clone()),
            _ => check_answer(&r, &what, self.reference.as_ref())?,
        }
        Ok(r)
    }

    /// `--repeat` real runs of every point, in interleaved rounds.
    fn measure(&mut self, dists: &[(String, Dist)]) -> Result<Measured> {
        let a = self.a;
        self.bar.set_length((dists.len() * a.repeat) as u64);
        let n = dists.len();
        let mut m = Measured {
            runs: vec![Vec::new(); n],
            busy: vec![Vec::new(); n],
            ooc: vec![false; n],
        };
        for round in 0..a.repeat {
            for (i, (_, d)) in dists.iter().enumerate() {
                self.bar
                    .set_message(format!("round {}/{}: run {d}", round + 1, a.repeat));
                let r = self.real_run(d)?;
                m.runs[i].push(iter_median(&r)?);
                m.busy[i].push(busiest_stage(&r)?);
                m.ooc[i] |= out_of_core(&r);
                self.bar.inc(1);
            }
        }
        Ok(m)
    }

    /// With one run per point, the noise floor from the first point `d`
    /// (its run took `first_s`) run once more: (max - min) / median of
    /// the two, percent.
    fn noise_run(&mut self, d: &Dist, first_s: f64) -> Result<(Option<f64>, String)> {
        self.bar
            .set_message(format!("run {d} again for the noise floor"));
        let again = iter_median(&self.real_run(d)?)?;
        let mut v = [first_s, again];
        v.sort_by(f64::total_cmp);
        let spread = 100.0 * (v[1] - v[0]) / median_sorted(&v);
        Ok((
            Some(spread),
            format!("the first point ({d}) run twice: {first_s:.6} s and {again:.6} s"),
        ))
    }
}

/// The run's median iteration, s.
fn iter_median(r: &serde_json::Value) -> Result<f64> {
    r["iter_median_s"]
        .as_f64()
        .context("run result has no iter_median_s")
}

/// The model's iteration and its busiest rank's time in stages (∞ for a
/// distribution it cannot price).
fn predict(m: &Model, d: &Dist) -> (f64, f64) {
    m.predict(d).map_or((f64::INFINITY, f64::INFINITY), |p| {
        let busy = p.ranks.iter().map(|k| k.compute_s).fold(0.0, f64::max);
        (p.per_iteration_s, busy)
    })
}

/// The figure 8 spectrum of `k` distributions with its corners named,
/// and the GBS choice (added, or named where it is one of them).
fn points(m: &Model, k: usize) -> Result<(Vec<(String, Dist)>, search::Found)> {
    let mut dists: Vec<(String, Dist)> = search::spectrum(m, k)
        .into_iter()
        .map(|d| (String::new(), d))
        .collect();
    let c = search::corners(m);
    for (label, d) in [
        ("Blk", &c.blk),
        ("I-C", &c.ic),
        ("I-C/Bal", &c.ic_bal),
        ("Bal", &c.bal),
    ] {
        if let Some(x) = dists.iter_mut().find(|x| &x.1 == d && x.0.is_empty()) {
            x.0 = label.into();
        }
    }
    let g = search::gbs(m)?;
    let gd = Dist(g.dist.clone());
    match dists.iter_mut().find(|x| x.1 == gd) {
        Some(x) => {
            x.0 = if x.0.is_empty() {
                "GBS".into()
            } else {
                format!("{}=GBS", x.0)
            }
        }
        None => dists.push(("GBS".into(), gd)),
    }
    Ok((dists, g))
}

/// Each point's row: predicted against the median of its runs.
fn rows(dists: &[(String, Dist)], predicted: Vec<(f64, f64)>, m: Measured) -> Vec<Row> {
    let mut rows = Vec::new();
    for (((((label, d), (predicted_s, predicted_busy_s)), runs_s), mut busy), out_of_core) in dists
        .iter()
        .zip(predicted)
        .zip(m.runs)
        .zip(m.busy)
        .zip(m.ooc)
    {
        let mut sorted = runs_s.clone();
        sorted.sort_by(f64::total_cmp);
        let actual_s = median_sorted(&sorted);
        busy.sort_by(f64::total_cmp);
        let actual_busy_s = median_sorted(&busy);
        rows.push(Row {
            label: label.clone(),
            dist: d.0.clone(),
            predicted_s,
            actual_s,
            diff_pct: diff_pct(predicted_s, actual_s),
            spread_pct: 100.0 * (sorted[sorted.len() - 1] - sorted[0]) / actual_s,
            predicted_busy_s,
            actual_busy_s,
            busy_diff_pct: diff_pct(predicted_busy_s, actual_busy_s),
            runs_s,
            out_of_core,
        });
    }
    rows
}

/// The report: the rows, their diffs, drift and noise, and the bests.
fn summarise(
    a: &Args,
    rows: Vec<Row>,
    block_run: &serde_json::Value,
    blk: &Dist,
    g: search::Found,
    (noise, noise_from): (Option<f64>, String),
    cpu_emulation: String,
) -> Result<Report> {
    let diffs: Vec<f64> = rows.iter().map(|r| r.diff_pct).collect();
    let mean_busy_diff_pct = rows.iter().map(|r| r.busy_diff_pct).sum::<f64>() / rows.len() as f64;
    let instrumented_s = block_run["iter_median_s"]
        .as_f64()
        .context("the instrumented run's result has no iter_median_s")?;
    let drift_pct = rows
        .iter()
        .find(|r| r.dist == blk.0)
        .map(|r| 100.0 * (r.actual_s / instrumented_s - 1.0));
    let noise_pct = noise.or_else(|| {
        let mut s: Vec<f64> = rows.iter().map(|r| r.spread_pct).collect();
        s.sort_by(f64::total_cmp);
        (a.repeat > 1).then(|| median_sorted(&s))
    });
    let best = |f: fn(&Row) -> f64| {
        rows.iter()
            .min_by(|x, y| f(x).total_cmp(&f(y)))
            .cloned()
            .context("no rows")
    };
    let (best_actual, best_predicted) = (best(|r| r.actual_s)?, best(|r| r.predicted_s)?);
    Ok(Report {
        app: a.app.clone(),
        cluster: a.cluster.clone(),
        np: a.np,
        prefetch: a.prefetch,
        iters: a.iters,
        repeat: a.repeat,
        min_diff_pct: diffs.iter().copied().fold(f64::INFINITY, f64::min),
        mean_diff_pct: diffs.iter().sum::<f64>() / diffs.len() as f64,
        max_diff_pct: diffs.iter().copied().fold(0.0, f64::max),
        mean_busy_diff_pct,
        predicted_best_is_best: best_predicted.dist == best_actual.dist,
        predicted_best_gap_pct: 100.0 * (best_predicted.actual_s / best_actual.actual_s - 1.0),
        best_actual,
        best_predicted,
        gbs_dist: g.dist,
        gbs_evaluations: g.evaluations,
        instrumented_s,
        drift_pct,
        noise_pct,
        noise_from,
        cpu_emulation,
        emulation: block_run["emulation"].clone(),
        rows,
    })
}

/// The busiest rank's median time in stages per iteration, s, of a run.
fn busiest_stage(run: &serde_json::Value) -> Result<f64> {
    let ranks = run["ranks"]
        .as_array()
        .filter(|v| !v.is_empty())
        .context("run result has no ranks[]")?;
    ranks.iter().try_fold(0.0f64, |m, k| {
        let s = k["stage_s"]
            .as_f64()
            .context("run result has a rank without stage_s")?;
        Ok(m.max(s))
    })
}

/// Did some rank of a run keep an array out of core?
fn out_of_core(run: &serde_json::Value) -> bool {
    run["ranks"].as_array().is_some_and(|ranks| {
        ranks
            .iter()
            .any(|k| k["out_of_core"].as_array().is_some_and(|v| !v.is_empty()))
    })
}

/// The header, the table, then the summary.
pub fn print(r: &Report) {
    println!(
        "# mheta experiment: {} on {} with {} ranks{}, {} iterations per run (median iteration), {}",
        r.app,
        r.cluster,
        r.np,
        if r.prefetch { ", prefetching" } else { "" },
        r.iters,
        if r.repeat > 1 {
            format!(
                "{} interleaved runs per point (median; spread = (max - min) / median)",
                r.repeat
            )
        } else {
            "one run per point".to_string()
        }
    );
    let e = |k: &str| r.emulation[k].as_str().unwrap_or("?").to_string();
    println!(
        "# emulation: cpu {}, memory {}, disk {}, cache {}, wait {}",
        e("cpu"),
        e("memory"),
        e("disk"),
        e("cache"),
        e("wait"),
    );
    println!("# cpu emulation: {}", r.cpu_emulation);
    table(r);
    summary(r);
}

/// One line per point: predicted, actual, diff, spread, busy diff, core.
fn table(r: &Report) {
    println!(
        "{:>3}  {:<10} {:<28} {:>14} {:>14} {:>8} {:>9} {:>8}  core",
        "#", "point", "distribution", "predicted (s)", "actual (s)", "diff %", "spread %", "busy %"
    );
    for (i, row) in r.rows.iter().enumerate() {
        println!(
            "{:>3}  {:<10} {:<28} {:>14.6} {:>14.6} {:>8.2} {:>9} {:>8.2}  {}",
            i,
            row.label,
            Dist(row.dist.clone()).to_string(),
            row.predicted_s,
            row.actual_s,
            row.diff_pct,
            if row.runs_s.len() > 1 {
                format!("{:.2}", row.spread_pct)
            } else {
                "-".to_string()
            },
            row.busy_diff_pct,
            if row.out_of_core { "out" } else { "in" }
        );
    }
}

/// The diffs beside the noise floor, the busy part, the drift, and the
/// bests.
fn summary(r: &Report) {
    let noise = r
        .noise_pct
        .map_or("not measured".to_string(), |n| format!("{n:.2}%"));
    println!(
        "diff: min {:.2}%  avg {:.2}%  max {:.2}%  (noise floor {noise})",
        r.min_diff_pct, r.mean_diff_pct, r.max_diff_pct
    );
    println!(
        "busy: the busiest rank's time in stages (computation and I/O), predicted against measured: avg diff {:.2}%; the rest of a diff is communication and waiting",
        r.mean_busy_diff_pct
    );
    if let Some(d) = r.drift_pct {
        println!(
            "drift: the Blk runs took {:+.2}% against the instrumented run on Blk ({:.6} s), a change of the machine that no prediction sees",
            d, r.instrumented_s
        );
    }
    if let Some(n) = r.noise_pct {
        println!(
            "noise: runs of one distribution spread {n:.2}% ({}); diffs below that cannot be told from chance",
            r.noise_from
        );
    }
    println!(
        "best actual:    {} ({:.6} s)",
        Dist(r.best_actual.dist.clone()),
        r.best_actual.actual_s
    );
    println!(
        "predicted best: {} ({:.6} s predicted, {:.6} s actual): {}",
        Dist(r.best_predicted.dist.clone()),
        r.best_predicted.predicted_s,
        r.best_predicted.actual_s,
        if r.predicted_best_is_best {
            "the actual best".to_string()
        } else {
            format!(
                "{:.2}% slower than the actual best",
                r.predicted_best_gap_pct
            )
        }
    );
}

#[cfg(test)]
mod tests {
    use super::out_of_core;
    use serde_json::json;

    #[test]
    fn a_run_is_out_of_core_when_some_rank_kept_an_array_on_disk() {
        let run = |lists: serde_json::Value| json!({ "ranks": lists });
        assert!(!out_of_core(&run(
            json!([{ "out_of_core": [] }, { "out_of_core": [] }])
        )));
        assert!(out_of_core(&run(
            json!([{ "out_of_core": [] }, { "out_of_core": ["u"] }])
        )));
        // A report without per-rank lists says nothing of the kind.
        assert!(!out_of_core(&json!({ "iter_median_s": 0.1 })));
    }
}
