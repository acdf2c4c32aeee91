//! `mheta experiment`: bad input is refused before anything runs, and a
//! small study runs real jobs and reports what it measured.

#![allow(clippy::unwrap_used)] // tests fail loudly on purpose

use mheta_tests::{fails, last_json, mheta, ok, quick_profile, scratch};

#[test]
fn bad_input_is_refused_before_anything_runs() {
    let dir = scratch("exp-bad");
    for (args, needle) in [
        (
            vec!["--app", "nosuch", "--cluster", "DC", "--np", "4"],
            "--app nosuch",
        ),
        (
            vec!["--app", "jacobi", "--cluster", "nosuch", "--np", "4"],
            "--cluster nosuch",
        ),
        (
            vec!["--app", "jacobi", "--cluster", "DC", "--np", "3"],
            "--np 3",
        ),
        (
            vec![
                "--app",
                "jacobi",
                "--cluster",
                "DC",
                "--np",
                "4",
                "--points",
                "2",
            ],
            "--points 2",
        ),
    ] {
        let out = fails(
            mheta()
                .arg("experiment")
                .args(&args)
                .arg("--dir")
                .arg(dir.join("w")),
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(needle), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
        // Nothing ran: no profile, no trace.
        assert!(!dir.join("w").join("trace").exists());
        assert!(!dir.join("w").join("profile.json").exists());
    }
}

#[test]
fn a_small_study_reports_real_runs() {
    let dir = scratch("exp-small");
    let profile = quick_profile(&dir, 2);
    let svg = dir.join("plot.svg");
    let r = last_json(&ok(mheta()
        .args([
            "experiment",
            "--app",
            "jacobi",
            "--cluster",
            "DC",
            "--np",
            "2",
        ])
        .args(["--points", "3", "--iters", "4", "--repeat", "2", "--json"])
        .arg("--profile")
        .arg(&profile)
        .arg("--dir")
        .arg(dir.join("w"))
        .arg("--plot")
        .arg(&svg)
        .args(["--", "--n", "384"])));
    let rows = r["rows"].as_array().unwrap();
    assert!(rows.len() >= 3, "{r}");
    let mut best = f64::INFINITY;
    for row in rows {
        let (p, a) = (
            row["predicted_s"].as_f64().unwrap(),
            row["actual_s"].as_f64().unwrap(),
        );
        assert!(p > 0.0 && a > 0.0, "{row}");
        let d = row["diff_pct"].as_f64().unwrap();
        assert!((d - 100.0 * (p - a).abs() / p.min(a)).abs() < 1e-9, "{row}");
        let dist: Vec<u64> = serde_json::from_value(row["dist"].clone()).unwrap();
        assert_eq!(dist.iter().sum::<u64>(), 384);
        // DC has no memory limit: every array stays in core.
        assert_eq!(row["out_of_core"], serde_json::json!(false), "{row}");
        // The stage part of the diff: the busiest rank's time in stages,
        // which is part of its iteration (the slowest rank's iteration
        // bounds every rank's own; medians of different runs, so 10%
        // slack), and a positive prediction of it.
        let (pb, ab) = (
            row["predicted_busy_s"].as_f64().unwrap(),
            row["actual_busy_s"].as_f64().unwrap(),
        );
        assert!(pb > 0.0 && pb <= p && ab > 0.0 && ab <= 1.1 * a, "{row}");
        let bd = row["busy_diff_pct"].as_f64().unwrap();
        assert!(
            (bd - 100.0 * (pb - ab).abs() / pb.min(ab)).abs() < 1e-9,
            "{row}"
        );
        best = best.min(a);
    }
    assert_eq!(r["best_actual"]["actual_s"].as_f64().unwrap(), best);
    // The report's means are the means of its rows.
    for (mean_key, row_key) in [
        ("mean_diff_pct", "diff_pct"),
        ("mean_busy_diff_pct", "busy_diff_pct"),
    ] {
        let mean = rows
            .iter()
            .map(|x| x[row_key].as_f64().unwrap())
            .sum::<f64>()
            / rows.len() as f64;
        assert!((r[mean_key].as_f64().unwrap() - mean).abs() < 1e-9, "{r}");
    }
    // Block is the first point and the spectrum reaches Bal (here I-C/Bal).
    assert_eq!(rows[0]["dist"], serde_json::json!([192, 192]));
    // The drift is the Blk point's actual against the instrumented run's.
    let inst = r["instrumented_s"].as_f64().unwrap();
    let blk = rows[0]["actual_s"].as_f64().unwrap();
    assert!(inst > 0.0, "{r}");
    let drift = r["drift_pct"].as_f64().unwrap();
    assert!((drift - 100.0 * (blk / inst - 1.0)).abs() < 1e-9, "{r}");
    // The noise is the median of the points' spreads (two runs each).
    let mut spreads: Vec<f64> = rows
        .iter()
        .map(|x| {
            let runs: Vec<f64> = serde_json::from_value(x["runs_s"].clone()).unwrap();
            assert_eq!(runs.len(), 2, "{x}");
            x["spread_pct"].as_f64().unwrap()
        })
        .collect();
    spreads.sort_by(f64::total_cmp);
    let m = spreads.len() / 2;
    let median = if spreads.len() % 2 == 1 {
        spreads[m]
    } else {
        0.5 * (spreads[m - 1] + spreads[m])
    };
    assert!(
        (r["noise_pct"].as_f64().unwrap() - median).abs() < 1e-9,
        "{r}"
    );
    assert!(r["emulation"]["cpu"].is_string(), "{r}");
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.contains("<svg") && text.contains("predicted"), "svg");
}
