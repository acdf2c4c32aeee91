//! `mheta scale`: Romanazzi and Jimack's multilevel scaling methodology as commands.
//! `fit` runs a kernel on one process at two sizes and at two small
//! process counts with the work per process held fixed, on each host
//! group of a cluster spec (and split over two groups for the link), and
//! writes the fit file; `predict` predicts a run; `fastest` and `budget`
//! answer the paper's two scenarios; `check` predicts held-out runs, runs
//! them, and writes the errors (JSON) and a figure (SVG).
//!
//! This file holds the commands; [`runner`] runs a configuration across
//! the lab's hosts and [`plot`] draws `check`'s figure.

use anyhow::{Context, Result, bail};
use clap::{Args as ClapArgs, Subcommand};
use mheta_base::median;
use mheta_hosts::Lab;
use mheta_scale::{FIT_VERSION, FitFile, GroupFit, Sample, fit_link, parse_parts};
use serde_json::json;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

mod plot;
mod runner;

use runner::{Config, Runner, parse_config};

/// Romanazzi and Jimack's scaling model: fit on few processes, predict many.
///
/// work is the memory per process (MB); T = T_comp(work) + α(np) +
/// γ·work, α(np) = c + d·log2(np). A host group is the spec's hosts whose
/// names share a prefix before the digits (a0, a1, … are group "a").
/// Runs are real MPI runs across the spec's emulated hosts (brought up if
/// down, and taken down after only then); each run's time is the app's
/// median time per iteration, and a configuration's time the median over
/// interleaved repeats.
#[derive(ClapArgs, Debug)]
pub struct ScaleArgs {
    #[command(subcommand)]
    cmd: ScaleCmd,
}

#[derive(Subcommand, Debug)]
enum ScaleCmd {
    /// Fit the model: per group, np 1 at each --rows-per-proc, then each
    /// --np0 at the same rows per process; with two or more groups, runs
    /// split over the first two (--np0's first count on each) for the
    /// link. Writes the fit file.
    ///
    /// Example: mheta scale fit --spec clusters/grid2.toml --app mg --n 1023 -o fit.json
    Fit(FitArgs),
    /// Predict the time per iteration of ROWS rows (of N) on PARTS
    /// (`a=8`, or `a=4,b=4` split over two groups).
    ///
    /// Example: mheta scale predict --fit fit.json --np a=4,b=4 --rows 1023
    Predict {
        /// The fit file written by `mheta scale fit`.
        #[arg(long)]
        fit: PathBuf,
        /// Processes per group, GROUP=NP[,GROUP=NP].
        #[arg(long, value_name = "PARTS")]
        np: String,
        /// Rows of the grid (default: N, the square grid).
        #[arg(long)]
        rows: Option<u64>,
    },
    /// Scenario 1: the fastest resources for a grid, among up to AVAIL
    /// processes per group; prints every candidate, fastest first.
    Fastest {
        /// The fit file written by `mheta scale fit`.
        #[arg(long)]
        fit: PathBuf,
        /// Available processes per group, GROUP=NP[,GROUP=NP].
        #[arg(long)]
        avail: String,
        #[arg(long)]
        rows: Option<u64>,
        /// Print only this many candidates.
        #[arg(long, default_value_t = 10)]
        top: usize,
    },
    /// Scenario 2: the largest square grid (one fit per N) that ITERS
    /// iterations can solve within SECONDS, with up to AVAIL processes.
    Budget {
        /// Fit files, one per grid size N.
        #[arg(long, required = true, num_args = 1..)]
        fit: Vec<PathBuf>,
        #[arg(long)]
        avail: String,
        #[arg(long)]
        seconds: f64,
        #[arg(long, default_value_t = 100)]
        iters: u64,
    },
    /// Predict held-out configurations, run them (interleaved repeats),
    /// and write predicted, actual (median), noise floor and signed error
    /// per configuration, the paper's own fit's error on the same runs,
    /// max_err_pct and the drift controls (each group's largest fitted
    /// run again, in the same rounds), as JSON; optionally an SVG.
    ///
    /// Example: mheta scale check --fit fit.json --config a=8@1023 --config a=4,b=4@1023 -o scale.json --svg scale.svg
    Check(CheckArgs),
    /// Hold out, without running anything: refit each group of a fit
    /// file on its np 1 runs and the --np0 given, and predict the file's
    /// runs at every other np (fitted with --np0 2,3,4,5,6,7,8, say). Prints
    /// each held-out run's error under the joint fit of c, d and γ and
    /// under the paper's own (γ of the largest np0), and their max and mean.
    ///
    /// Example: mheta scale holdout --fit all.json --np0 2,4
    Holdout {
        /// The fit file written by `mheta scale fit`.
        #[arg(long)]
        fit: PathBuf,
        /// The process counts to fit on; the rest are held out.
        #[arg(long, value_delimiter = ',', required = true)]
        np0: Vec<u32>,
    },
}

/// How runs are launched (fit and check).
#[derive(ClapArgs, Debug, Clone)]
pub struct RunOpts {
    /// Iterations per run (the time is the median per iteration).
    #[arg(long, default_value_t = 20)]
    iters: u64,
    /// Interleaved rounds over the configurations.
    #[arg(long, default_value_t = 3)]
    repeat: u32,
    /// The apps' --cpu-emulation. With one rank per emulated host, `paced`
    /// makes each piece of real work last its CPU time / cpu_power at
    /// every process count; `quota` (when the spec's powers sum to at
    /// most the cores) a cgroup quota of cpu_power cores; `clock` the
    /// piece's units × --cpu-ns-per-unit / cpu_power. `auto` takes clock
    /// (at 10 ns a unit unless --cpu-ns-per-unit says) when the spec has
    /// more ranks than this host has cores, where paced work of many
    /// ranks queues for the cores and slows the larger runs; else paced.
    #[arg(long, default_value = "auto", value_parser = ["auto", "paced", "quota", "clock", "share", "spin"])]
    cpu_emulation: String,
    /// With `--cpu-emulation clock`: the apps' --cpu-ns-per-unit (the
    /// time a unit of work lasts at cpu_power 1 on a whole core).
    #[arg(long, value_name = "NS")]
    cpu_ns_per_unit: Option<String>,
}

#[derive(ClapArgs, Debug)]
pub struct FitArgs {
    /// Cluster spec with [[host]] tables.
    #[arg(long)]
    spec: String,
    /// Kernel: mg or jacobi.
    #[arg(long, default_value = "mg")]
    app: String,
    /// Columns N (the message length; mg: 2^k - 1).
    #[arg(long, default_value_t = 1023)]
    n: u64,
    /// Rows per process of the two work sizes (mg: 2^j - 1).
    #[arg(long, value_delimiter = ',', default_value = "63,127")]
    rows_per_proc: Vec<u64>,
    /// The small process counts np0.
    #[arg(long, value_delimiter = ',', default_value = "2,4")]
    np0: Vec<u32>,
    /// Host groups to fit (default: every group of the spec).
    #[arg(long, value_delimiter = ',')]
    groups: Vec<String>,
    #[command(flatten)]
    run: RunOpts,
    #[arg(short, long)]
    output: PathBuf,
}

#[derive(ClapArgs, Debug)]
pub struct CheckArgs {
    /// The fit file written by `mheta scale fit`.
    #[arg(long)]
    fit: PathBuf,
    /// A held-out configuration PARTS@ROWS (`a=8@1023`, `a=4,b=4@1023`).
    #[arg(long = "config", required = true)]
    configs: Vec<String>,
    #[command(flatten)]
    run: RunOpts,
    #[arg(short, long)]
    output: PathBuf,
    /// Draw predicted against measured per configuration.
    #[arg(long)]
    svg: Option<PathBuf>,
    /// Run all of the fit's configurations again in the same interleaved
    /// rounds as the held-out ones, fit those runs, and predict from that
    /// fit (written beside OUTPUT as NAME.refit.json): fit and check then
    /// meet the same host. Without it, each group's largest fitted run is
    /// run again as a control and its change since the fit printed.
    #[arg(long)]
    refit: bool,
}

/// Where `check --refit` writes its fit: OUTPUT's name with `.refit.json`.
fn refit_path(output: &Path) -> PathBuf {
    let stem = output
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "check".into());
    output.with_file_name(format!("{stem}.refit.json"))
}

pub fn main(a: ScaleArgs) -> Result<i32> {
    match a.cmd {
        ScaleCmd::Fit(f) => fit(f),
        ScaleCmd::Predict { fit, np, rows } => predict(&fit, &np, rows),
        ScaleCmd::Fastest {
            fit,
            avail,
            rows,
            top,
        } => fastest(&fit, &avail, rows, top),
        ScaleCmd::Budget {
            fit,
            avail,
            seconds,
            iters,
        } => budget(&fit, &avail, seconds, iters),
        ScaleCmd::Check(c) => check(c),
        ScaleCmd::Holdout { fit, np0 } => holdout(&fit, &np0),
    }
}

/// Bytes of a process's arrays per grid point: mg's u, f, r (8 B each)
/// and its coarser levels (a third more); jacobi's u and f.
fn bytes_per_point(app: &str) -> Result<f64> {
    match app {
        "mg" => Ok(32.0),
        "jacobi" => Ok(16.0),
        _ => bail!("--app {app}: mheta scale runs mg or jacobi (they take --rows)"),
    }
}

/// Global rows for `per` rows per process on `np` processes (mg keeps
/// 2^j - 1 rows: np·(per + 1) − 1).
fn total_rows(app: &str, per: u64, np: u32) -> u64 {
    if app == "mg" {
        u64::from(np) * (per + 1) - 1
    } else {
        u64::from(np) * per
    }
}

/// Refuses, before anything runs, a configuration the app cannot take:
/// mg's grid has 2^j - 1 rows, at most N (so mg's np0 must be powers of
/// two for np·(per + 1) − 1 to stay one less than a power of two).
fn check_rows(app: &str, n: u64, configs: &[Config]) -> Result<()> {
    if app != "mg" {
        return Ok(());
    }
    for c in configs {
        if !(c.rows + 1).is_power_of_two() || c.rows > n {
            bail!(
                "{}: mg needs 2^j - 1 rows, at most --n {n}, and {} processes make {} rows \
                 (np·(rows per process + 1) − 1; take np0 that are powers of two)",
                c.label(),
                c.np(),
                c.rows
            );
        }
    }
    Ok(())
}

/// The group of a host: its name without trailing digits.
fn group_of(host: &str) -> &str {
    host.trim_end_matches(|c: char| c.is_ascii_digit())
}

/// The groups of a lab, in host order.
fn lab_groups(lab: &Lab) -> Vec<String> {
    let mut g: Vec<String> = Vec::new();
    for h in &lab.hosts {
        let x = group_of(&h.name).to_string();
        if !g.contains(&x) {
            g.push(x);
        }
    }
    g
}

/// The fit's configurations: per group np 1 and each np0 at each rows
/// per process, then the split runs for the link.
fn fit_configs(a: &FitArgs, groups: &[String]) -> Vec<Config> {
    let mut v = Vec::new();
    for g in groups {
        for &per in &a.rows_per_proc {
            for np in std::iter::once(1).chain(a.np0.iter().copied()) {
                v.push(Config {
                    parts: vec![(g.clone(), np)],
                    rows: total_rows(&a.app, per, np),
                });
            }
        }
    }
    if let ([g1, g2, ..], Some(&k)) = (groups, a.np0.first()) {
        for &per in &a.rows_per_proc {
            v.push(Config {
                parts: vec![(g1.clone(), k), (g2.clone(), k)],
                rows: total_rows(&a.app, per, 2 * k),
            });
        }
    }
    v
}

fn fit(a: FitArgs) -> Result<i32> {
    let bpp = bytes_per_point(&a.app)?;
    if a.rows_per_proc.len() < 2 || a.np0.len() < 2 {
        bail!("--rows-per-proc and --np0 need two values each (two work sizes, two np0)");
    }
    let mut r = Runner::new(&a.spec, &a.app, a.n, a.run.clone())?;
    let groups = if a.groups.is_empty() {
        lab_groups(&r.lab)
    } else {
        a.groups.clone()
    };
    let configs = fit_configs(&a, &groups);
    check_rows(&a.app, a.n, &configs)?;
    let times = r.measure(&configs)?;
    let mut file = FitFile {
        version: FIT_VERSION,
        app: a.app.clone(),
        n: a.n,
        bytes_per_point: bpp,
        iters: a.run.iters,
        spec: a.spec.clone(),
        emulation: r.emulation.clone(),
        groups: BTreeMap::new(),
        link_s: None,
        link_s_as_published: None,
        samples: Vec::new(),
    };
    fit_groups(&mut file, &groups, &configs, &times)?;
    file.save(&a.output)?;
    print_fit(&file);
    Ok(0)
}

/// Fill `file`'s samples, groups and link term from the runs of
/// `configs` (their repeats in `times`).
fn fit_groups(
    file: &mut FitFile,
    groups: &[String],
    configs: &[Config],
    times: &[Vec<f64>],
) -> Result<()> {
    file.samples.clear();
    file.groups.clear();
    let mut split = Vec::new();
    for (c, t) in configs.iter().zip(times) {
        let s = Sample {
            np: c.np(),
            work_mb: file.work_of(c.rows, c.np()),
            time_s: median(&mut t.clone()).context("no runs")?,
        };
        let label: Vec<&str> = c.parts.iter().map(|p| p.0.as_str()).collect();
        file.samples.push((label.join("+"), s));
        if c.parts.len() > 1 {
            split.push((c.parts.clone(), s));
        }
    }
    for g in groups {
        let (single, par) = group_samples(file, g);
        let gf = GroupFit::fit(&single, &par).map_err(|e| anyhow::anyhow!("group {g}: {e}"))?;
        file.groups.insert(g.clone(), gf);
    }
    file.link_s = None;
    file.link_s_as_published = None;
    if !split.is_empty() {
        file.link_s = Some(fit_link(&file.groups, &split)?);
        let published: Option<BTreeMap<String, GroupFit>> = file
            .groups
            .iter()
            .map(|(g, f)| f.as_published().map(|p| (g.clone(), p)))
            .collect();
        if let Some(p) = published {
            file.link_s_as_published = Some(fit_link(&p, &split)?);
        }
    }
    Ok(())
}

/// A fit file's runs as the configurations that made them, in its order
/// (a split run "a+b" of np ranks was np/2 on each group).
fn sample_configs(f: &FitFile) -> Vec<Config> {
    f.samples
        .iter()
        .filter_map(|(label, s)| {
            let gs: Vec<&str> = label.split('+').collect();
            let k = s.np / gs.len() as u32;
            let parts: Vec<(String, u32)> = gs.iter().map(|g| (g.to_string(), k)).collect();
            rows_of(f, s.np, s.work_mb).map(|rows| Config { parts, rows })
        })
        .collect()
}

/// The grid's rows of a fitted run of `np` processes with `work_mb` each
/// (mg's grids are np·(per + 1) − 1 rows, jacobi's np·per).
fn rows_of(f: &FitFile, np: u32, work_mb: f64) -> Option<u64> {
    let per_mb = f.n as f64 * f.bytes_per_point / 1e6;
    let w = (work_mb / per_mb).round() as u64;
    [w.saturating_sub(1), w].into_iter().find_map(|per| {
        let rows = total_rows(&f.app, per, np);
        ((f.work_of(rows, np) - work_mb).abs() <= 1e-9 * work_mb.max(1.0)).then_some(rows)
    })
}

/// Each group's fitted run at its largest np0 and larger work per
/// process, as a configuration to run again, with its time at the fit.
fn drift_controls(f: &FitFile) -> Vec<(Config, f64)> {
    let mut out = Vec::new();
    for g in f.groups.keys() {
        let best = f
            .samples
            .iter()
            .filter(|(l, s)| l == g && s.np > 1)
            .map(|p| p.1)
            .max_by(|x, y| {
                (x.np, x.work_mb)
                    .partial_cmp(&(y.np, y.work_mb))
                    .unwrap_or(std::cmp::Ordering::Equal)
            });
        let Some(s) = best else { continue };
        let found = rows_of(f, s.np, s.work_mb);
        if let Some(rows) = found {
            out.push((
                Config {
                    parts: vec![(g.clone(), s.np)],
                    rows,
                },
                s.time_s,
            ));
        }
    }
    out
}

/// A group's runs in a fit file: (np 1, parallel).
fn group_samples(file: &FitFile, g: &str) -> (Vec<Sample>, Vec<Sample>) {
    let mine = |np1: bool| -> Vec<Sample> {
        file.samples
            .iter()
            .filter(|(l, s)| l == g && (s.np == 1) == np1)
            .map(|p| p.1)
            .collect()
    };
    (mine(true), mine(false))
}

fn holdout(path: &Path, np0: &[u32]) -> Result<i32> {
    let f = FitFile::load(path)?;
    println!(
        "{} N={} ({}); fitted on np 1 and np0 {:?}; err: predicted over measured - 1",
        f.app, f.n, f.emulation, np0
    );
    println!(
        "{:<6} {:>4} {:>9} {:>12} {:>12} {:>8} {:>14}",
        "group", "np", "work MB", "measured ms", "predicted ms", "err %", "as published %"
    );
    let mut any = false;
    for g in f.groups.keys() {
        let (single, par) = group_samples(&f, g);
        let (fit_on, held): (Vec<Sample>, Vec<Sample>) =
            par.into_iter().partition(|s| np0.contains(&s.np));
        let gf = GroupFit::fit(&single, &fit_on)
            .map_err(|e| anyhow::anyhow!("{}: group {g}: {e}", path.display()))?;
        let pubd = gf
            .as_published()
            .context("the refit keeps the paper's fit")?;
        let (mut e, mut ep) = (Vec::new(), Vec::new());
        for s in &held {
            let p = gf.predict(s.np, s.work_mb)?.total_s;
            let q = pubd.predict(s.np, s.work_mb)?.total_s;
            let (x, y) = ((p / s.time_s - 1.0) * 100.0, (q / s.time_s - 1.0) * 100.0);
            println!(
                "{g:<6} {:>4} {:>9.3} {:>12.3} {:>12.3} {:>+8.2} {:>+14.2}",
                s.np,
                s.work_mb,
                s.time_s * 1e3,
                p * 1e3,
                x,
                y
            );
            e.push(x.abs());
            ep.push(y.abs());
        }
        if e.is_empty() {
            println!("{g:<6} no runs at other np to hold out");
            continue;
        }
        any = true;
        let stat = |v: &[f64]| {
            (
                v.iter().copied().fold(0.0, f64::max),
                v.iter().sum::<f64>() / v.len() as f64,
            )
        };
        let ((m, a), (mp, ap)) = (stat(&e), stat(&ep));
        println!(
            "{g:<6} held out {}: max {m:.2}% mean {a:.2}%; as published: max {mp:.2}% mean {ap:.2}%",
            e.len()
        );
    }
    if !any {
        bail!(
            "{}: no run at an np outside --np0 {np0:?} to hold out",
            path.display()
        );
    }
    Ok(0)
}

fn print_fit(f: &FitFile) {
    println!("{} N={} ({}), times per iteration", f.app, f.n, f.emulation);
    println!("group  T_comp = a + b·work       gamma (s/MB)  c (s)      d (s)      alpha(np0)");
    for (g, x) in &f.groups {
        let al: Vec<String> = x
            .per_np
            .iter()
            .map(|p| format!("{}:{:.3}ms", p.np, p.alpha * 1e3))
            .collect();
        println!(
            "{g:<6} {:.3} ms + {:.3} ms/MB   {:<12.3e}  {:<9.3e}  {:<9.3e}  {}",
            x.comp.intercept * 1e3,
            x.comp.slope * 1e3,
            x.gamma,
            x.c,
            x.d,
            al.join(" ")
        );
    }
    if let Some(l) = f.link_s {
        println!("link between groups: {:.3} ms per iteration", l * 1e3);
    }
}

fn predict(fit: &Path, np: &str, rows: Option<u64>) -> Result<i32> {
    let f = FitFile::load(fit)?;
    let parts = parse_parts(np).map_err(|e| anyhow::anyhow!("--np {e}"))?;
    let rows = rows.unwrap_or(f.n);
    let total: u32 = parts.iter().map(|p| p.1).sum();
    let w = f.work_of(rows, total);
    for (g, n) in &parts {
        let p = f.group(g)?.predict(*n, w)?;
        println!(
            "{g}: np {n}, work {w:.3} MB: T_comp {:.3} ms + T_comm {:.3} ms = {:.3} ms",
            p.comp_s * 1e3,
            p.comm_s * 1e3,
            p.total_s * 1e3
        );
    }
    let t = f.predict(&parts, rows)?;
    println!("{}x{} on {np}: {:.3} ms per iteration", rows, f.n, t * 1e3);
    Ok(0)
}

fn fastest(fit: &Path, avail: &str, rows: Option<u64>, top: usize) -> Result<i32> {
    let f = FitFile::load(fit)?;
    let avail = parse_parts(avail).map_err(|e| anyhow::anyhow!("--avail {e}"))?;
    let rows = rows.unwrap_or(f.n);
    let all = mheta_scale::fastest(&f, rows, &avail)?;
    println!("{rows}x{} ({}), fastest first:", f.n, f.app);
    for c in all.iter().take(top) {
        let p: Vec<String> = c.parts.iter().map(|(g, n)| format!("{g}={n}")).collect();
        println!(
            "  {:<12} {:.3} ms per iteration",
            p.join(","),
            c.predicted_s * 1e3
        );
    }
    Ok(0)
}

fn budget(fits: &[PathBuf], avail: &str, seconds: f64, iters: u64) -> Result<i32> {
    let fs = fits
        .iter()
        .map(|p| FitFile::load(p))
        .collect::<Result<Vec<_>, _>>()?;
    let avail = parse_parts(avail).map_err(|e| anyhow::anyhow!("--avail {e}"))?;
    match mheta_scale::budget(&fs, &avail, iters, seconds)? {
        Some(c) => {
            let p: Vec<String> = c.parts.iter().map(|(g, n)| format!("{g}={n}")).collect();
            println!(
                "largest grid: {0}x{0} on {1}: {2:.3} s for {iters} iterations (budget {seconds} s)",
                c.rows,
                p.join(","),
                c.predicted_s * iters as f64
            );
            Ok(0)
        }
        None => {
            println!("no grid of the fits solves {iters} iterations within {seconds} s");
            Ok(1)
        }
    }
}

fn check(a: CheckArgs) -> Result<i32> {
    let mut f = FitFile::load(&a.fit)?;
    let configs = a
        .configs
        .iter()
        .map(|c| parse_config(c))
        .collect::<Result<Vec<_>>>()?;
    check_rows(&f.app, f.n, &configs)?;
    // Controls: each group's largest fitted run, again, in the same rounds
    // as the held-out ones. Their change since the fit is how far this
    // host drifted between the fit and the check, which no model sees.
    // With --refit, all of the fit's runs again, and a fit of those.
    let controls: Vec<(Config, f64)> = if a.refit {
        let c = sample_configs(&f);
        if c.len() != f.samples.len() {
            bail!(
                "{}: --refit: {} of its {} runs do not map back to a configuration",
                a.fit.display(),
                f.samples.len() - c.len(),
                f.samples.len()
            );
        }
        c.into_iter()
            .zip(f.samples.iter().map(|s| s.1.time_s))
            .collect()
    } else {
        drift_controls(&f)
    };
    let mut all = configs.clone();
    all.extend(controls.iter().map(|(c, _)| c.clone()));
    let mut r = Runner::new(&f.spec, &f.app, f.n, a.run.clone())?;
    let mut times = r.measure(&all)?;
    let control_times = times.split_off(configs.len());
    let mut drift = Vec::new();
    for ((c, at_fit), t) in controls.iter().zip(&control_times) {
        let now = median(&mut t.clone()).context("no runs")?;
        let pct = (now / at_fit - 1.0) * 100.0;
        if !a.refit {
            println!(
                "control {:<16} at the fit {:.3} ms, now {:.3} ms: {pct:+.2}% (the host's drift since the fit)",
                c.label(),
                at_fit * 1e3,
                now * 1e3
            );
        }
        drift.push(json!({"config": c.label(), "at_fit_s": at_fit, "now_s": now, "runs_s": t, "drift_pct": pct}));
    }
    if a.refit {
        let groups: Vec<String> = f.groups.keys().cloned().collect();
        let fit_cfgs: Vec<Config> = controls.iter().map(|c| c.0.clone()).collect();
        fit_groups(&mut f, &groups, &fit_cfgs, &control_times)?;
        f.emulation = r.emulation.clone();
        let mut d: Vec<f64> = drift
            .iter()
            .filter_map(|x| x["drift_pct"].as_f64())
            .collect();
        let out = refit_path(&a.output);
        f.save(&out)?;
        println!(
            "refit: the fit's {} runs again in the same rounds (median change since the fit {:+.2}%), fit written to {}",
            fit_cfgs.len(),
            median(&mut d).unwrap_or(f64::NAN),
            out.display()
        );
        print_fit(&f);
    }
    let mut predicted = Vec::new();
    for c in &configs {
        predicted.push(
            f.predict(&c.parts, c.rows)
                .map_err(|e| anyhow::anyhow!("{}: {e}", c.label()))?,
        );
    }
    // The paper's own fit of c, d and γ (γ of the largest np0) on the same
    // samples, when the fit file keeps it.
    let published: Option<Vec<f64>> = match f.as_published() {
        Some(p) => Some(
            configs
                .iter()
                .map(|c| p.predict(&c.parts, c.rows))
                .collect::<std::result::Result<_, _>>()?,
        ),
        None => None,
    };
    let mut rows = Vec::new();
    let mut max_err: f64 = 0.0;
    let mut max_err_pub: f64 = 0.0;
    let signed = |p: f64, actual: f64| (p - actual) / actual * 100.0;
    println!(
        "{:<16} {:>12} {:>12} {:>8} {:>8} {:>14}",
        "config", "predicted ms", "actual ms", "err %", "noise %", "as published %"
    );
    for (i, ((c, p), t)) in configs.iter().zip(&predicted).zip(&times).enumerate() {
        let actual = median(&mut t.clone()).context("no runs")?;
        let lo = t.iter().copied().fold(f64::MAX, f64::min);
        let hi = t.iter().copied().fold(0.0, f64::max);
        let noise = (hi - lo) / actual * 100.0;
        let err = signed(*p, actual);
        max_err = max_err.max(err.abs());
        let pubd = published.as_ref().map(|v| v[i]);
        let err_pub = pubd.map(|q| signed(q, actual));
        if let Some(e) = err_pub {
            max_err_pub = max_err_pub.max(e.abs());
        }
        println!(
            "{:<16} {:>12.3} {:>12.3} {:>+8.2} {:>8.2} {:>14}",
            c.label(),
            p * 1e3,
            actual * 1e3,
            err,
            noise,
            err_pub.map_or("-".into(), |e| format!("{e:+.2}"))
        );
        rows.push(json!({
            "config": c.label(), "np": c.np(), "rows": c.rows, "n": f.n,
            "work_mb": f.work_of(c.rows, c.np()),
            "predicted_s": p, "actual_s": actual, "runs_s": t,
            "noise_pct": noise, "error_pct": err.abs(), "signed_error_pct": err,
            "predicted_as_published_s": pubd, "error_as_published_pct": err_pub,
        }));
    }
    println!("max error {max_err:.2}% (err: predicted over actual - 1, eqs. 2-4 fitted together)");
    if published.is_some() {
        println!(
            "as published (c, d through the per-np0 alpha, gamma of the largest np0): max error {max_err_pub:.2}%"
        );
    }
    let out = json!({
        "app": f.app, "n": f.n, "fit": a.fit, "spec": f.spec,
        "emulation": r.emulation, "fit_emulation": f.emulation,
        "iters": a.run.iters, "repeat": a.run.repeat,
        "time": "median seconds per iteration over interleaved repeats",
        "noise": "(max - min) / median of the repeats",
        "configs": rows, "max_err_pct": max_err,
        "max_err_as_published_pct": published.as_ref().map(|_| max_err_pub),
        "controls": drift, "refit": a.refit,
    });
    std::fs::write(&a.output, serde_json::to_string_pretty(&out)? + "\n")
        .with_context(|| format!("{}: cannot write", a.output.display()))?;
    if let Some(svg) = &a.svg {
        plot::draw(svg, &out)?;
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mg_keeps_two_to_the_j_minus_one_rows() {
        assert_eq!(total_rows("mg", 127, 4), 511);
        assert_eq!(total_rows("jacobi", 128, 4), 512);
        assert_eq!(group_of("a12"), "a");
        assert!(bytes_per_point("cg").is_err());
    }

    #[test]
    fn the_drift_control_is_each_groups_largest_fitted_run() {
        for (app, bpp, n, per, want) in [
            ("mg", 32.0, 2047, [127u64, 255], "a=4@1023"),
            ("jacobi", 16.0, 2048, [128, 256], "a=4@1024"),
        ] {
            let mut f = FitFile {
                version: FIT_VERSION,
                app: app.into(),
                n,
                bytes_per_point: bpp,
                iters: 1,
                spec: "s".into(),
                emulation: "clock".into(),
                groups: BTreeMap::new(),
                link_s: None,
                link_s_as_published: None,
                samples: vec![],
            };
            for np in [1u32, 2, 4] {
                for p in per {
                    let rows = total_rows(app, p, np);
                    let s = Sample {
                        np,
                        work_mb: f.work_of(rows, np),
                        time_s: f64::from(np) + p as f64,
                    };
                    f.samples.push(("a".into(), s));
                }
            }
            let one = f.samples[0].1;
            f.groups.insert(
                "a".into(),
                GroupFit::fit(
                    &[one, f.samples[1].1],
                    &f.samples[2..].iter().map(|x| x.1).collect::<Vec<_>>(),
                )
                .expect("fit"),
            );
            // Every run maps back to the configuration that made it.
            let back: Vec<String> = sample_configs(&f).iter().map(Config::label).collect();
            let made: Vec<String> = [1u32, 2, 4]
                .iter()
                .flat_map(|&np| per.map(|p| format!("a={np}@{}", total_rows(app, p, np))))
                .collect();
            assert_eq!(back, made, "{app}");
            let c = drift_controls(&f);
            assert_eq!(c.len(), 1, "{app}");
            assert_eq!(c[0].0.label(), want, "{app}");
            assert_eq!(c[0].1, 4.0 + per[1] as f64, "{app}: its time at the fit");
        }
    }

    #[test]
    fn mg_refuses_rows_it_cannot_take_before_running() {
        let c = |np: u32, rows: u64| Config {
            parts: vec![("a".into(), np)],
            rows,
        };
        assert!(check_rows("mg", 2047, &[c(2, 255), c(6, 1023)]).is_ok());
        let e = check_rows("mg", 2047, &[c(2, 255), c(3, total_rows("mg", 127, 3))])
            .expect_err("383 rows");
        assert!(e.to_string().contains("a=3@383"), "{e}");
        assert!(check_rows("mg", 1023, &[c(4, 2047)]).is_err());
        assert!(check_rows("jacobi", 2048, &[c(3, 384)]).is_ok());
    }

    #[test]
    fn the_fit_runs_every_group_size_and_np0_and_the_split() {
        let a = FitArgs {
            spec: "s".into(),
            app: "mg".into(),
            n: 1023,
            rows_per_proc: vec![63, 127],
            np0: vec![2, 4],
            groups: vec![],
            run: RunOpts {
                iters: 1,
                repeat: 1,
                cpu_emulation: "paced".into(),
                cpu_ns_per_unit: None,
            },
            output: "o".into(),
        };
        let v = fit_configs(&a, &["a".into(), "b".into()]);
        // 2 groups x 2 sizes x (np 1, 2, 4) + 2 split runs.
        assert_eq!(v.len(), 14);
        let split: Vec<String> = v
            .iter()
            .filter(|c| c.parts.len() == 2)
            .map(Config::label)
            .collect();
        assert_eq!(split, ["a=2,b=2@255", "a=2,b=2@511"]);
    }
}
