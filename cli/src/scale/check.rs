//! `mheta scale check` and `holdout`: validation. `check` predicts
//! held-out configurations from a fit, runs them with drift controls (or,
//! with `--refit`, with all of the fit's runs again) in interleaved
//! rounds, and writes the errors; `holdout` refits a fit file on a subset
//! of its process counts and predicts the rest from the same runs.

use super::runner::{Config, Runner, parse_config};
use super::{CheckArgs, check_rows, fit_groups, group_samples, plot, print_fit, total_rows};
use anyhow::{Context, Result, bail};
use mheta_base::{median, quantile};
use mheta_model::search::Rng;
use mheta_scale::{FitFile, GroupFit, Sample};
use serde_json::json;
use std::path::{Path, PathBuf};

/// The goal a held-out configuration's error is judged against, %.
const GOAL_PCT: f64 = 3.0;
/// The verdicts of [`verdict`], in the order it numbers them.
const VERDICTS: [&str; 3] = ["met", "within noise", "missed"];
/// Resamples of an error's bootstrap interval.
const RESAMPLES: usize = 1000;

/// The percentile bootstrap 95% interval of each held-out configuration's
/// signed error, %, under `check --refit`: each resample draws every
/// fitted configuration's runs and every held-out one's with replacement
/// (as many as each has), refits on their medians and predicts. A fitted
/// configuration whose runs split between two modes moves every
/// prediction made from it, which its one median hides; this interval
/// carries that, and the held-out runs' own spread, to the error.
fn error_ci(
    f: &FitFile,
    groups: &[String],
    fitted: (&[Config], &[Vec<f64>]),
    held_out: (&[Config], &[Vec<f64>]),
) -> Vec<[f64; 2]> {
    let mut rng = Rng::new(0x7363_616c_655f_6369);
    let mut draw = |v: &[f64]| -> Vec<f64> {
        (0..v.len())
            .map(|_| v[rng.below(v.len() as u64) as usize])
            .collect()
    };
    let mut errs = vec![Vec::with_capacity(RESAMPLES); held_out.0.len()];
    let mut g = f.clone();
    for _ in 0..RESAMPLES {
        let t: Vec<Vec<f64>> = fitted.1.iter().map(|t| draw(t)).collect();
        if fit_groups(&mut g, groups, fitted.0, &t).is_err() {
            continue;
        }
        for ((c, t), e) in held_out.0.iter().zip(held_out.1).zip(&mut errs) {
            if let (Ok(p), Some(a)) = (g.predict(&c.parts, c.rows), median(&mut draw(t))) {
                e.push((p - a) / a * 100.0);
            }
        }
    }
    errs.into_iter()
        .map(|mut e| {
            e.sort_by(f64::total_cmp);
            if e.is_empty() {
                [f64::NAN; 2]
            } else {
                [quantile(&e, 0.025), quantile(&e, 0.975)]
            }
        })
        .collect()
}

/// A held-out configuration's verdict, an index into [`VERDICTS`]: met
/// within [`GOAL_PCT`]; within noise when not, but its error's 95%
/// interval reaches within it (the runs cannot tell the error from one
/// that meets the goal); else missed.
fn verdict(err: f64, ci: Option<[f64; 2]>) -> usize {
    if err.abs() <= GOAL_PCT {
        0
    } else if ci.is_some_and(|[lo, hi]| lo <= GOAL_PCT && hi >= -GOAL_PCT) {
        1
    } else {
        2
    }
}

/// Where `check --refit` writes its fit: OUTPUT's name with `.refit.json`.
fn refit_path(output: &Path) -> PathBuf {
    let stem = output
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "check".into());
    output.with_file_name(format!("{stem}.refit.json"))
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

pub(super) fn holdout(path: &Path, np0: &[u32]) -> Result<i32> {
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

pub(super) fn check(a: CheckArgs) -> Result<i32> {
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
    let groups: Vec<String> = f.groups.keys().cloned().collect();
    let fit_cfgs: Vec<Config> = controls.iter().map(|c| c.0.clone()).collect();
    if a.refit {
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
    let cis: Option<Vec<[f64; 2]>> = a
        .refit
        .then(|| error_ci(&f, &groups, (&fit_cfgs, &control_times), (&configs, &times)));
    let mut rows = Vec::new();
    let mut verdicts = [0usize; 3];
    let mut max_err: f64 = 0.0;
    let mut max_err_pub: f64 = 0.0;
    let signed = |p: f64, actual: f64| (p - actual) / actual * 100.0;
    println!(
        "{:<16} {:>12} {:>12} {:>8} {:>8} {:>14} {:>16}  verdict",
        "config", "predicted ms", "actual ms", "err %", "noise %", "as published %", "err 95% CI"
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
        let ci = cis.as_ref().map(|v| v[i]);
        let k = verdict(err, ci);
        verdicts[k] += 1;
        let v = VERDICTS[k];
        println!(
            "{:<16} {:>12.3} {:>12.3} {:>+8.2} {:>8.2} {:>14} {:>16}  {v}",
            c.label(),
            p * 1e3,
            actual * 1e3,
            err,
            noise,
            err_pub.map_or("-".into(), |e| format!("{e:+.2}")),
            ci.map_or("-".into(), |[lo, hi]| format!("[{lo:+.2}, {hi:+.2}]"))
        );
        rows.push(json!({
            "config": c.label(), "np": c.np(), "rows": c.rows, "n": f.n,
            "work_mb": f.work_of(c.rows, c.np()),
            "predicted_s": p, "actual_s": actual, "runs_s": t,
            "noise_pct": noise, "error_pct": err.abs(), "signed_error_pct": err,
            "predicted_as_published_s": pubd, "error_as_published_pct": err_pub,
            "signed_error_ci_pct": ci, "verdict": v,
        }));
    }
    println!("max error {max_err:.2}% (err: predicted over actual - 1, eqs. 2-4 fitted together)");
    println!(
        "verdicts: {} met, {} within noise, {} missed (met: |err| <= {GOAL_PCT}%; within noise: not, but the error's \
         bootstrap 95% CI reaches within {GOAL_PCT}%{})",
        verdicts[0],
        verdicts[1],
        verdicts[2],
        if a.refit {
            ", each resample drawing the fitted and the held-out configurations' runs and refitting"
        } else {
            "; without --refit the fit's runs are not at hand: no CI"
        }
    );
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
        "verdicts": {"met": verdicts[0], "within_noise": verdicts[1], "missed": verdicts[2]},
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
    use mheta_scale::FIT_VERSION;
    use std::collections::BTreeMap;

    /// A fit file of `app` on an N-point grid, with no groups or samples.
    fn empty_fit(app: &str, n: u64, bytes_per_point: f64) -> FitFile {
        FitFile {
            version: FIT_VERSION,
            app: app.into(),
            n,
            bytes_per_point,
            iters: 1,
            spec: "s".into(),
            emulation: "clock".into(),
            groups: BTreeMap::new(),
            link_s: None,
            link_s_as_published: None,
            samples: vec![],
        }
    }

    #[test]
    fn the_drift_control_is_each_groups_largest_fitted_run() {
        for (app, bpp, n, per, want) in [
            ("mg", 32.0, 2047, [127u64, 255], "a=4@1023"),
            ("jacobi", 16.0, 2048, [128, 256], "a=4@1024"),
        ] {
            let mut f = empty_fit(app, n, bpp);
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

    /// A fitted configuration whose runs split between two modes widens
    /// every held-out error's interval; runs that agree leave it a point.
    #[test]
    fn the_error_interval_carries_a_fitted_configurations_two_modes() {
        let mut f = empty_fit("jacobi", 2048, 16.0);
        // T = 1 ms + 2 ms/MB + 0.1 ms · log2(np): no γ.
        let truth = |np: u32, w: f64| 1e-3 + 2e-3 * w + 1e-4 * f64::from(np).log2();
        let mut fitted = Vec::new();
        for np in [1u32, 2, 4] {
            for per in [128u64, 256] {
                let c = parse_config(&format!("a={np}@{}", total_rows("jacobi", per, np))).unwrap();
                let w = f.work_of(c.rows, np);
                f.samples.push((
                    "a".into(),
                    Sample {
                        np,
                        work_mb: w,
                        time_s: truth(np, w),
                    },
                ));
                fitted.push((c, vec![truth(np, w); 4]));
            }
        }
        let held = parse_config("a=8@2048").unwrap();
        let w = f.work_of(held.rows, 8);
        let held_runs = vec![vec![truth(8, w); 4]];
        let groups = vec!["a".to_string()];
        let cfgs: Vec<Config> = fitted.iter().map(|x| x.0.clone()).collect();
        let ci = |runs: &[Vec<f64>]| {
            error_ci(
                &f,
                &groups,
                (&cfgs, runs),
                (std::slice::from_ref(&held), &held_runs),
            )[0]
        };
        let agree: Vec<Vec<f64>> = fitted.iter().map(|x| x.1.clone()).collect();
        let [lo, hi] = ci(&agree);
        assert!(lo.abs() < 1e-6 && hi.abs() < 1e-6, "[{lo}, {hi}]");
        // np 4's larger configuration: two runs 10% slow.
        let mut split = agree.clone();
        let t = split[5][0];
        split[5] = vec![t, t, 1.1 * t, 1.1 * t];
        let [lo, hi] = ci(&split);
        assert!(lo <= 0.0 && hi > 5.0, "[{lo}, {hi}]");
        let named = |err, ci| VERDICTS[verdict(err, ci)];
        assert_eq!(named(2.0, None), "met");
        assert_eq!(named(-6.0, Some([lo, hi])), "within noise");
        assert_eq!(named(6.0, Some([4.0, 7.0])), "missed");
        assert_eq!(named(6.0, None), "missed");
    }
}
