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
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

mod check;
mod plot;
mod runner;

use runner::{Config, Runner};

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
    /// meet the same host. Each held-out error then gets a bootstrap 95%
    /// CI (the fitted and held-out configurations' runs resampled, the
    /// fit redone on their medians) and a verdict: met (within 3%),
    /// within noise (not, but the CI reaches within 3%) or missed.
    /// Without it, each group's largest fitted run is run again as a
    /// control and its change since the fit printed (no CI: the fit's
    /// runs are not at hand).
    #[arg(long)]
    refit: bool,
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
        ScaleCmd::Check(c) => check::check(c),
        ScaleCmd::Holdout { fit, np0 } => check::holdout(&fit, &np0),
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
