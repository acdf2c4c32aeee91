//! `mheta experiment`: the MHETA paper's section 5 on real runs. One
//! instrumented run on Block, then for each distribution of the figure 8
//! spectrum (and the GBS choice) a prediction and a real run; the table of
//! predicted against actual, the summary, JSON and an SVG like figures
//! 10-11.
//!
//! This file holds the arguments and the study's steps; [`job`] starts a
//! run and reads its JSON result, [`noise`] keeps each run's record and
//! flags the runs the host disturbed, [`report`] turns the runs into the
//! report and prints it, [`cpu`] chooses the CPU emulation, [`curve`]
//! measures the ranks' row-cost curves (`--row-curve`), [`window`] splits
//! a diff into the model's own error and the host's drift, [`speed`]
//! prices each run at its own CPU time a row, and [`plot`]
//! draws it.

mod cpu;
mod curve;
mod job;
mod noise;
mod plot;
mod report;
mod speed;
mod window;

pub use plot::plot;
pub use report::{Report, Row, print};

use anyhow::{Context, Result, bail};
use indicatif::{ProgressBar, ProgressStyle};
use job::{
    app_args, check_answer, instrumented_iters, iter_median, mpirun, out_of_core, run_job, sizes,
};
use mheta_base::median;
use mheta_hosts::cluster::ClusterSpec;
use mheta_model::curve::{CurveFile, RowCurve};
use mheta_model::{Dist, Model, search};
use mheta_profile::ClusterProfile;
use noise::{RunRecord, Thresholds};
use report::{Measured, Priced, Ran, rows, summarise};
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
    /// Make every run last at least this many seconds: a short run on
    /// Block (4 iterations, not counted) times an iteration, then the
    /// real runs take max(--iters, SECONDS / that) iterations (a point
    /// the model prices faster, as many more as make it last SECONDS;
    /// sor and cg keep Block's count), and the
    /// instrumented run twice that and records until its recorded
    /// iterations span 0.8 x SECONDS (`mheta run --seconds`).
    /// On a host whose cores change speed over hundreds of milliseconds
    /// (scripts/core-windows.sh), a run of a few short iterations
    /// measures the moment, not the rank. 0: --iters as given. cg runs
    /// its NPB class's count whatever this says.
    #[arg(long, default_value_t = 0.0, value_name = "SECONDS")]
    pub run_seconds: f64,
    /// Each round after the first runs its own instrumented run on Block
    /// before its real runs, and the model learned from it predicts every
    /// point; a point's prediction is the median over the rounds' models
    /// (the spectrum comes from the first). The JSON keeps each round's
    /// prediction and the mean diff of one round's model alone: what a
    /// single instrumented run gives, host noise and all.
    #[arg(long)]
    pub learn_each_round: bool,
    /// Before the points, measure each rank's cost a row at other row
    /// counts than Block's, in ROUNDS interleaved rounds of real runs
    /// (Block, then six distributions that give the even ranks 0.25 to
    /// 1.75 of their Block rows and the odd ranks the rest), write it to
    /// DIR/row-curve.json (`mheta-row-curve`, docs/FORMATS.md) and
    /// predict with it: a rank's computation scales by W'/W · c(W')/c(W)
    /// instead of the paper's W'/W, where c is 1 at every knot whose
    /// bootstrap 95% interval holds 1 (not told apart from the noise).
    /// The report gives the paper's prediction on the same models and
    /// runs beside it. 0: off.
    #[arg(long, default_value_t = 0, value_name = "ROUNDS")]
    pub row_curve: usize,
    /// Real runs per distribution, in interleaved rounds (every point
    /// once, then again): "actual" is the median of the runs' median
    /// iterations, and the JSON gives each run and the spread; their
    /// median spread is the noise floor. A shared machine drifts between
    /// runs; one run per point shows that drift as model error (with
    /// --repeat 1 the first point runs once more, for the noise floor).
    #[arg(long, default_value_t = 2, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub repeat: usize,
    /// Flag a run the host disturbed when some rank's main thread waited
    /// for a core (run-queue delay, from schedstat) more than this percent
    /// of the main loop's wall time (not when the ranks outnumber this
    /// machine's cores: then they wait by design). A flagged run is kept: the report
    /// gives the diffs with and without flagged runs, and why each is
    /// flagged.
    #[arg(long, default_value_t = 5.0, value_name = "PCT")]
    pub flag_runq_pct: f64,
    /// Flag a run when some rank's CPU time per unit of work is more than
    /// this percent above that rank's median over the point's runs (the
    /// vCPU's own slowdowns show there, where steal time reads 0).
    #[arg(long, default_value_t = 15.0, value_name = "PCT")]
    pub flag_cpu_pct: f64,
    /// One JSON object on stdout instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Also draw predicted and actual time over the spectrum as SVG.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
    /// Cluster profile from `mheta bench` (default: measure one now, with
    /// `mheta bench --quick`). Its reuse curve (unless measured with
    /// `--no-reuse`) gives the model its reuse term.
    #[arg(long)]
    pub profile: Option<PathBuf>,
    /// Working directory for the profile and trace.
    #[arg(long, default_value = "mheta-experiment")]
    pub dir: PathBuf,
    /// How the kernels emulate CPU power: auto takes clock (calibrated by
    /// one uniform run) when the ranks outnumber this host's cores, where
    /// the other modes inherit the host's speed changes and the ranks'
    /// contention (figures: docs/EMULATION.md), else the apps' default
    /// (share). Or share, quota, spin, paced or clock; or give the
    /// kernel's flags after `--`.
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
    for (flag, v) in [
        ("--flag-runq-pct", a.flag_runq_pct),
        ("--flag-cpu-pct", a.flag_cpu_pct),
    ] {
        if !(v.is_finite() && v >= 0.0) {
            bail!("{flag} {v}: a percentage of 0 or more is needed");
        }
    }
    if !(a.run_seconds >= 0.0 && a.run_seconds.is_finite()) {
        bail!(
            "--run-seconds {}: a number of seconds of 0 or more is needed",
            a.run_seconds
        );
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
    /// Iterations of the instrumented and real runs: `--iters`, or more
    /// for `--run-seconds`.
    iters: u64,
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
        iters: a.iters,
    };
    let prof = ClusterProfile::load(&s.profile()?)?;
    if choice.calibrate {
        s.calibrate()?;
    }
    s.size_runs()?;
    let (block_run, m0, window0, per_row0) = s.instrumented(&prof)?;
    let reuse = m0.has_reuse();
    let linear_m = m0.clone().without_reuse();
    let curve = match a.row_curve {
        0 => None,
        k => Some(s.row_curve(&search::corners(&linear_m).blk, k, &linear_m)?),
    };
    let m = match &curve {
        Some((c, _)) => m0.with_row_curves(c.clone())?,
        None => m0,
    };
    let (dists, g) = points(&m, a.points)?;
    let mut predicted: Vec<Vec<Priced>> = dists.iter().map(|(_, d)| vec![predict(&m, d)]).collect();
    let mut linear: Option<Vec<Vec<Priced>>> = (curve.is_some() || reuse).then(|| {
        dists
            .iter()
            .map(|(_, d)| vec![predict(&linear_m, d)])
            .collect()
    });
    let curves = curve.as_ref().map(|c| &c.0);
    let first = (linear_m, per_row0);
    let measured = s.measure(
        &dists,
        &prof,
        &mut predicted,
        linear.as_mut(),
        curves,
        (window0, first),
    )?;
    let noise = match a.repeat {
        1 => s.noise_run(&dists[0].1, measured.runs[0][0].iter_median_s)?,
        _ => (
            None,
            format!("the median spread of {} runs per point", a.repeat),
        ),
    };
    s.bar.finish_and_clear();
    // More ranks than cores wait for one by design: the run-queue rule
    // is off then.
    let t = Thresholds {
        runq_pct: (a.np <= cores).then_some(a.flag_runq_pct),
        cpu_pct: a.flag_cpu_pct,
    };
    let windows = measured.windows.clone();
    let rows = rows(&dists, predicted, linear, measured, t);
    let blk = search::corners(&m).blk;
    let ran = Ran {
        windows,
        iters: s.iters,
        thresholds: t,
        cpu_emulation: choice.why,
        curve: curve.map(|(_, p)| (p.display().to_string(), a.row_curve)),
        reuse,
    };
    summarise(a, rows, &block_run, &blk, g, noise, ran)
}

/// An instrumented run: its JSON result, the model, its recorded
/// window's median iteration, and each rank's CPU time a row in that
/// window ([`speed::window_per_row`]).
type Instrumented = (serde_json::Value, Model, Option<f64>, Vec<Option<f64>>);

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

    /// `--run-seconds`: time an iteration in a short run on Block, and
    /// give the runs enough iterations to last that long.
    fn size_runs(&mut self) -> Result<()> {
        let a = self.a;
        // cg runs its NPB class's count whatever --iters says.
        if a.run_seconds <= 0.0 || a.app == "cg" {
            return Ok(());
        }
        self.bar
            .set_message("timing an iteration (Block, 4 iterations)");
        let mut c = mpirun(a.np, self.lab.as_ref())?;
        c.arg(&self.bin).args(app_args(a, 4, &self.cpu));
        let t = iter_median(&run_job(c, "the run that times an iteration")?)?;
        self.iters = runs_iterations(a.iters, a.run_seconds, t);
        Ok(())
    }

    /// Iterations of an instrumented run: the real runs', or with
    /// `--run-seconds` twice theirs after the skipped ones, so that its
    /// recording (0.8 of the seconds) ends before the run does even when
    /// an iteration takes up to 1.6 times the one timed.
    fn inst_iters(&self) -> u64 {
        if self.a.run_seconds > 0.0 {
            2 * self.iters + mheta_trace::DEFAULT_INSTRUMENT_ITER
        } else {
            self.iters
        }
    }

    /// One instrumented run on Block under `mheta run` ([`Instrumented`]:
    /// the recorded window's median iteration is
    /// [`mheta_trace::recorded_window_s`]).
    fn instrumented(&self, prof: &ClusterProfile) -> Result<Instrumented> {
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
        // Each iteration's stage CPU time in the result, for the window's
        // ([`speed`]); it adds one schedstat read an iteration (~10 us).
        launch
            .env("MHETA_DEBUG_TIMES", "1")
            .arg("run")
            .arg("--trace-dir")
            .arg(&trace)
            .arg("--seconds")
            .arg((0.8 * a.run_seconds).to_string())
            .arg("--")
            .arg(mpi.get_program())
            .args(mpi.get_args())
            .arg(&self.bin)
            .args(app_args(
                a,
                instrumented_iters(self.inst_iters()),
                &self.cpu,
            ));
        let block_run = run_job(launch, "the instrumented run")?;
        // sor's short runs cannot meet its exact-solution check: each is
        // held to the first real run (Blk, the spectrum's first point).
        if a.app != "sor" {
            check_answer(&block_run, "the instrumented run", None)?;
        }
        let traces = mheta_trace::read_dir(&trace)?;
        let app = mheta_trace::read_app(&trace)?;
        let m = Model::new(&traces, app, prof)?;
        let window_s = mheta_trace::recorded_window_s(&traces);
        let per_row = speed::window_per_row(&block_run, &traces);
        Ok((block_run, m, window_s, per_row))
    }

    /// One real run on `d`, its answer checked; its result.
    fn real_run(&mut self, d: &Dist) -> Result<serde_json::Value> {
        self.real_run_of(d, self.iters)
    }

    /// [`Self::real_run`] of `iters` iterations.
    fn real_run_of(&mut self, d: &Dist, iters: u64) -> Result<serde_json::Value> {
        let a = self.a;
        let mut c = mpirun(a.np, self.lab.as_ref())?;
        c.arg(&self.bin)
            .args(app_args(a, iters, &self.cpu))
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

    /// `--row-curve ROUNDS`: the calibration's runs ([`curve`]), Block
    /// and each of its distributions once a round; the curves, written to
    /// DIR/row-curve.json (through a temporary file, so a failed study
    /// leaves an older one whole), and that path.
    fn row_curve(
        &mut self,
        blk: &Dist,
        rounds: usize,
        m: &Model,
    ) -> Result<(Vec<RowCurve>, PathBuf)> {
        let a = self.a;
        let dists = curve::dists(blk);
        if dists.is_empty() {
            bail!(
                "--row-curve: {} rank(s) on {blk} leave no other row counts to measure",
                a.np
            );
        }
        self.bar.set_length((rounds * (dists.len() + 1)) as u64);
        let all_d: Vec<&Dist> = std::iter::once(blk).chain(&dists).collect();
        let n = all_d.len();
        let mut all = Vec::with_capacity(rounds);
        for round in 0..rounds {
            // Each round starts one distribution later, so that none
            // (Block above all, every ratio's reference) always runs in
            // the same place of a round.
            let mut runs = vec![curve::Run::default(); n];
            for j in (0..n).map(|j| (j + round) % n) {
                let d = all_d[j];
                self.bar.set_message(format!(
                    "row-cost curve, round {}/{rounds}: run {d}",
                    round + 1
                ));
                let r = self.real_run(d)?;
                runs[j] = curve::run_of(&r).with_context(|| format!("the run on {d}"))?;
                self.bar.inc(1);
            }
            all.push(runs);
        }
        self.bar.set_position(0);
        let file = CurveFile {
            format: mheta_model::curve::FORMAT.into(),
            version: mheta_model::curve::VERSION,
            app: m.app.app.clone(),
            rows: m.rows(),
            np: a.np,
            rounds,
            app_args: app_args(a, self.iters, &self.cpu)
                .iter()
                .map(|f| f.to_string_lossy())
                .collect::<Vec<_>>()
                .join(" "),
            ended_unix_s: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            ranks: curve::knots(blk, &dists, &all)?,
        };
        let path = a.dir.join("row-curve.json");
        let tmp = a.dir.join(".row-curve.json.tmp");
        std::fs::write(&tmp, serde_json::to_string_pretty(&file)? + "\n")
            .with_context(|| format!("cannot write {}", tmp.display()))?;
        std::fs::rename(&tmp, &path).with_context(|| format!("cannot write {}", path.display()))?;
        let c = file.curves_for(&m.app.app, m.rows(), a.np)?;
        Ok((c, path))
    }

    /// `--repeat` real runs of every point, in interleaved rounds; each
    /// run's record.
    /// With `--learn-each-round`, each round after the first learns a
    /// model first and adds its predictions to `predicted` (per point),
    /// and, where `linear` is kept, the paper's model's (no curves, no reuse
    /// term) there.
    fn measure(
        &mut self,
        dists: &[(String, Dist)],
        prof: &ClusterProfile,
        predicted: &mut [Vec<Priced>],
        mut linear: Option<&mut Vec<Vec<Priced>>>,
        curves: Option<&Vec<RowCurve>>,
        (first_window, first): (Option<f64>, (Model, Vec<Option<f64>>)),
    ) -> Result<Measured> {
        let a = self.a;
        self.bar.set_length((dists.len() * a.repeat) as u64);
        let n = dists.len();
        // With --run-seconds, a point the first model prices faster than
        // Block runs more iterations, so that it too lasts the seconds
        // (an in-core point of a cluster with a disk runs 10-15 times
        // faster than Block). sor's answers are held to its first run and
        // cg runs its class's count: both keep one count.
        let sized = a.run_seconds > 0.0 && a.app != "sor" && a.app != "cg";
        let iters: Vec<u64> = (predicted.iter())
            .map(|p| match p.first() {
                Some(&Priced { iter_s: t, .. }) if sized && t.is_finite() => {
                    runs_iterations(self.iters, a.run_seconds, t)
                }
                _ => self.iters,
            })
            .collect();
        let mut m = Measured {
            runs: vec![Vec::new(); n],
            ooc: vec![false; n],
            windows: vec![first_window],
            at_run_cpu: vec![Vec::new(); n],
        };
        // The paper's model of the round and its window's CPU time a row,
        // for [`speed::at_run_cpu`].
        let (mut paper, mut window_cpu) = first;
        for round in 0..a.repeat {
            if round > 0 && a.learn_each_round {
                let (_, model, w, per_row) = self.instrumented(prof)?;
                m.windows.push(w);
                (paper, window_cpu) = (model.clone().without_reuse(), per_row);
                if let Some(l) = linear.as_deref_mut() {
                    for (p, (_, d)) in l.iter_mut().zip(dists) {
                        p.push(predict(&paper, d));
                    }
                }
                let model = match curves {
                    Some(c) => model.with_row_curves(c.clone())?,
                    None => model,
                };
                for (p, (_, d)) in predicted.iter_mut().zip(dists) {
                    p.push(predict(&model, d));
                }
            }
            for (i, (_, d)) in dists.iter().enumerate() {
                self.bar
                    .set_message(format!("round {}/{}: run {d}", round + 1, a.repeat));
                let r = self.real_run_of(d, iters[i])?;
                let rec = RunRecord::from_json(&r).with_context(|| format!("the run on {d}"))?;
                m.at_run_cpu[i].push(speed::at_run_cpu(&paper, &window_cpu, &rec, d));
                m.runs[i].push(rec);
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
        let mid = median(&mut v).unwrap_or(f64::NAN);
        let spread = 100.0 * (v[1] - v[0]) / mid;
        Ok((
            Some(spread),
            format!("the first point ({d}) run twice: {first_s:.6} s and {again:.6} s"),
        ))
    }
}

/// Iterations for runs of at least `seconds` when one takes `iter_s`:
/// `iters` or more, at most a million.
fn runs_iterations(iters: u64, seconds: f64, iter_s: f64) -> u64 {
    if iter_s.is_nan() || iter_s <= 0.0 {
        return iters;
    }
    iters.max(((seconds / iter_s).ceil() as u64).min(1_000_000))
}

/// How `m` prices `d` (∞ for a distribution it cannot price): the
/// iteration as `--auto` reports it, each recorded iteration replayed
/// ([`Model::predict_iterations`], its median; the median iteration's
/// replay where a rank recorded fewer than 3), the median iteration's
/// replay alone (MHETA's one iteration) and its busiest rank's time in
/// stages.
fn predict(m: &Model, d: &Dist) -> Priced {
    let Ok(p) = m.predict(d) else {
        return Priced {
            iter_s: f64::INFINITY,
            one_s: f64::INFINITY,
            busy_s: f64::INFINITY,
        };
    };
    let busy_s = p.ranks.iter().map(|k| k.compute_s).fold(0.0, f64::max);
    let each = m.predict_iterations(d).ok().flatten();
    Priced {
        iter_s: each.map_or(p.per_iteration_s, |(med, _)| med),
        one_s: p.per_iteration_s,
        busy_s,
    }
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

#[cfg(test)]
mod tests {
    use super::runs_iterations;

    #[test]
    fn runs_take_enough_iterations_to_last_the_seconds() {
        // 6.5 ms an iteration for 1.5 s: 231 iterations.
        assert_eq!(runs_iterations(8, 1.5, 0.0065), 231);
        // Long iterations keep --iters.
        assert_eq!(runs_iterations(8, 1.5, 2.0), 8);
        // No time measured: --iters.
        assert_eq!(runs_iterations(8, 1.5, 0.0), 8);
        assert_eq!(runs_iterations(8, 1.5, f64::NAN), 8);
        // Bounded.
        assert_eq!(runs_iterations(8, 1e9, 1e-6), 1_000_000);
    }
}
