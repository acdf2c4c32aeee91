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
    // One model (no --learn-each-round): one round in the window split,
    // its model the Blk point's prediction and its run the first Blk run;
    // the window is a recorded iteration's time, near the Blk runs'.
    let w = &r["window"];
    let rounds = w["rounds"].as_array().expect("a window split");
    assert_eq!(rounds.len(), 1, "{w}");
    let w0 = &rounds[0];
    assert_eq!(w0["model_blk_s"], rows[0]["predicted_rounds_s"][0], "{w}");
    assert_eq!(w0["blk_run_s"], rows[0]["runs_s"][0], "{w}");
    let ws = w0["window_s"].as_f64().unwrap();
    assert!(ws > 0.2 * blk && ws < 5.0 * blk, "{w}");
    let mw = w["model_vs_window_pct"].as_f64().unwrap();
    let pm = w0["model_blk_s"].as_f64().unwrap();
    assert!((mw - 100.0 * (pm / ws - 1.0)).abs() < 1e-9, "{w}");
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

/// `--run-seconds` lengthens every run (and the recording), and
/// `--learn-each-round` learns a model a round: each row keeps one
/// prediction per round, predicts their median, and the report the mean
/// diff of one model alone.
#[test]
fn long_runs_and_a_model_per_round() {
    let dir = scratch("exp-rounds");
    let profile = quick_profile(&dir, 2);
    let r = last_json(&ok(mheta()
        .args(["experiment", "--app", "jacobi", "--cluster", "DC"])
        .args([
            "--np", "2", "--points", "3", "--iters", "4", "--repeat", "3",
        ])
        .args(["--run-seconds", "0.3", "--learn-each-round", "--json"])
        .arg("--profile")
        .arg(&profile)
        .arg("--dir")
        .arg(dir.join("w"))
        .args(["--", "--n", "256"])));
    // 0.3 s of iterations of well under 10 ms: more than the 4 asked.
    assert!(r["iters"].as_u64().unwrap() > 30, "{r}");
    assert_eq!(r["models"], 3);
    // The recorded trace spans at least 0.8 x 0.3 s, or (iterations far
    // slower than the one timed) every iteration of the instrumented run
    // from the fourth: twice the real runs' after the 3 skipped.
    let traces = mheta_trace::read_dir(&dir.join("w").join("trace")).unwrap();
    let inst_iters = 2 * r["iters"].as_u64().unwrap() + 3;
    for t in &traces {
        let span: f64 = t
            .iterations
            .iter()
            .map(|i| i.duration_ns as f64 * 1e-9)
            .sum();
        let last = t.iterations.last().unwrap().index;
        assert!(t.iterations.len() > 3, "rank {}", t.rank);
        assert!(
            span >= 0.24 || last + 1 == inst_iters,
            "rank {}: {span} s recorded, to iteration {last} of {inst_iters}",
            t.rank
        );
    }
    let mut one_model = vec![];
    for row in r["rows"].as_array().unwrap() {
        let mut p: Vec<f64> = serde_json::from_value(row["predicted_rounds_s"].clone()).unwrap();
        assert_eq!(p.len(), 3, "{row}");
        let a = row["actual_s"].as_f64().unwrap();
        one_model.extend(p.iter().map(|&x| 100.0 * (x - a).abs() / x.min(a)));
        p.sort_by(f64::total_cmp);
        assert_eq!(row["predicted_s"].as_f64().unwrap(), p[1], "{row}");
        let ci: Vec<f64> = serde_json::from_value(row["diff_ci95_pct"].clone()).unwrap();
        assert!(ci[0] <= ci[1], "{row}");
    }
    let mean = one_model.iter().sum::<f64>() / one_model.len() as f64;
    assert!((r["mean_diff_one_model_pct"].as_f64().unwrap() - mean).abs() < 1e-9);
    // A window a model: each round's model with its own window and the
    // round's Blk run, in round order; the last window is the trace left
    // in the directory.
    let w = &r["window"];
    let blk = &r["rows"][0];
    let rounds = w["rounds"].as_array().expect("a window split");
    assert_eq!(rounds.len(), 3, "{w}");
    for (k, x) in rounds.iter().enumerate() {
        assert_eq!(x["model_blk_s"], blk["predicted_rounds_s"][k], "{w}");
        assert_eq!(x["blk_run_s"], blk["runs_s"][k], "{w}");
    }
    let med = mheta_tests::recorded_window_s(&dir.join("w").join("trace"));
    assert!(
        (rounds[2]["window_s"].as_f64().unwrap() - med).abs() < 1e-12,
        "{w}"
    );
    let ci: Vec<f64> = serde_json::from_value(w["window_vs_blk_run_ci95_pct"].clone()).unwrap();
    let x = w["window_vs_blk_run_pct"].as_f64().unwrap();
    assert!(ci[0] <= x + 1e-9 && x <= ci[1] + 1e-9, "{w}");
    // Every run priced at its own CPU time a row, and the point's diff
    // there: the median of those predictions over the runs' iterations.
    let mut at_cpu = vec![];
    for row in r["rows"].as_array().unwrap() {
        let p: Vec<f64> = serde_json::from_value(row["predicted_at_run_cpu_s"].clone()).unwrap();
        let a: Vec<f64> = serde_json::from_value(row["runs_s"].clone()).unwrap();
        assert_eq!(p.len(), 3, "{row}");
        assert!(p.iter().all(|&x| x.is_finite() && x > 0.0), "{row}");
        let mut q: Vec<f64> = p.iter().zip(&a).map(|(p, a)| p / a).collect();
        q.sort_by(f64::total_cmp);
        let d = 100.0 * (q[1] - 1.0).abs() / q[1].min(1.0);
        let got = row["diff_at_run_cpu_pct"].as_f64().unwrap();
        assert!((got - d).abs() < 1e-9, "{got} vs {d}: {row}");
        at_cpu.push(d);
        for k in row["runs"].as_array().unwrap() {
            for rank in k["ranks"].as_array().unwrap() {
                assert!(rank["stage_cpu_median_s"].as_f64().unwrap() > 0.0, "{k}");
            }
        }
    }
    let mean = at_cpu.iter().sum::<f64>() / at_cpu.len() as f64;
    assert!(
        (r["mean_diff_at_run_cpu_pct"].as_f64().unwrap() - mean).abs() < 1e-9,
        "{r}"
    );
    // The last round's model is the trace left in the directory: its
    // prediction of each point is `mheta predict`'s replay of each
    // recorded iteration, and the one-iteration replay stays beside it.
    for row in r["rows"].as_array().unwrap() {
        let d: Vec<String> = (row["dist"].as_array().unwrap().iter())
            .map(|x| x.to_string())
            .collect();
        let p = last_json(&ok(mheta()
            .args(["predict", "--json", "--profile"])
            .arg(&profile)
            .arg("--trace")
            .arg(dir.join("w").join("trace"))
            .args(["--dist", &d.join(",")])));
        let each = p["iterations_median_s"]
            .as_f64()
            .expect("3+ recorded iterations");
        let got = row["predicted_rounds_s"][2].as_f64().unwrap();
        assert!((got - each).abs() <= 1e-9 * each, "{got} vs {each}: {row}");
        let one = row["predicted_one_iteration_s"].as_f64().unwrap();
        assert!(one.is_finite() && one > 0.0, "{row}");
        let a = row["actual_s"].as_f64().unwrap();
        let want = 100.0 * (one - a).abs() / one.min(a);
        assert!((row["diff_one_iteration_pct"].as_f64().unwrap() - want).abs() < 1e-9);
    }
}

/// `--row-curve` measures every rank's cost a row at other row counts in
/// real runs, writes the `mheta-row-curve` file, predicts with it and
/// keeps the paper's prediction on the same runs beside it; `predict`
/// reads the file and refuses one of another app size.
#[test]
fn a_row_cost_curve_is_measured_written_and_used() {
    let dir = scratch("exp-curve");
    let profile = quick_profile(&dir, 2);
    let w = dir.join("w");
    let r = last_json(&ok(mheta()
        .args(["experiment", "--app", "jacobi", "--cluster", "DC"])
        .args([
            "--np", "2", "--points", "3", "--iters", "4", "--repeat", "2",
        ])
        .args(["--row-curve", "2", "--json"])
        .arg("--profile")
        .arg(&profile)
        .arg("--dir")
        .arg(&w)
        .args(["--", "--n", "256"])));
    let file = w.join("row-curve.json");
    let c: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(c["format"], "mheta-row-curve");
    assert_eq!(
        (c["app"].as_str(), c["rows"].as_u64()),
        (Some("jacobi"), Some(256))
    );
    // Block's 128 rows and six others a rank, each from both rounds.
    for (i, rank) in c["ranks"].as_array().unwrap().iter().enumerate() {
        let k = rank["knots"].as_array().unwrap();
        let rows: Vec<u64> = k.iter().map(|k| k["rows"].as_u64().unwrap()).collect();
        assert_eq!(rows, [32, 64, 96, 128, 160, 192, 224], "rank {i}");
        for k in k {
            let (m, ci) = (k["per_row_rel"].as_f64().unwrap(), &k["ci95"]);
            assert!(m > 0.0 && m.is_finite(), "{k}");
            assert!(
                ci[0].as_f64().unwrap() <= m && m <= ci[1].as_f64().unwrap(),
                "{k}"
            );
            assert_eq!(k["rounds"], 2, "{k}");
            // The iteration of the runs behind it, for the reuse term.
            let t = k["period_s"].as_f64().unwrap();
            assert!(t > 0.0 && t < 10.0, "{k}");
        }
    }
    let s = &r["row_curve"];
    assert_eq!(s["file"].as_str(), Some(file.to_str().unwrap()));
    let rows = r["rows"].as_array().unwrap();
    let mut lin = 0.0;
    for row in rows {
        let (p, a) = (
            row["predicted_linear_s"].as_f64().unwrap(),
            row["actual_s"].as_f64().unwrap(),
        );
        let d = 100.0 * (p - a).abs() / p.min(a);
        assert!(
            (row["diff_linear_pct"].as_f64().unwrap() - d).abs() < 1e-9,
            "{row}"
        );
        lin += d;
    }
    let mean = lin / rows.len() as f64;
    assert!(
        (s["mean_diff_linear_pct"].as_f64().unwrap() - mean).abs() < 1e-9,
        "{s}"
    );
    // `predict --row-curve` reads it with the study's trace...
    let pred = |curve: &std::path::Path| {
        let mut c = mheta();
        c.args(["predict", "--dist", "100,156", "--json", "--profile"])
            .arg(&profile)
            .arg("--trace")
            .arg(w.join("trace"))
            .arg("--row-curve")
            .arg(curve);
        c
    };
    ok(&mut pred(&file));
    // ...and refuses a curve of another size, naming the file.
    let mut other = c.clone();
    other["rows"] = 512.into();
    let bad = dir.join("other.json");
    std::fs::write(&bad, other.to_string()).unwrap();
    let out = fails(&mut pred(&bad));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("other.json") && err.contains("jacobi with 512 rows on 2 ranks"),
        "{err}"
    );
}

/// A profile with a reuse curve (`mheta bench`'s `reuse_by`,
/// written here for a jacobi run of 2 ranks recorded for real) turns the
/// model's reuse term on: `mheta predict` says so, and gives the paper's
/// figure, rows as recorded, beside; a malformed curve is refused by name.
#[test]
fn a_reuse_curve_in_the_profile_turns_the_term_on_and_says_so() {
    use mheta_tests::{bin, launch};
    let dir = scratch("reuse-predict");
    let profile = quick_profile(&dir, 2);
    let trace = dir.join("trace");
    ok(mheta()
        .args(["run", "--trace-dir"])
        .arg(&trace)
        .arg("--")
        .args(launch(2))
        .arg(bin("jacobi"))
        .args(["--n", "256", "--iters", "8"]));
    // A byte costs twice as much 50 ms after its last sweep as right
    // after one, at every working set.
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&profile).unwrap()).unwrap();
    let curve: Vec<serde_json::Value> = [(1u64 << 20, 1e-4, 1.0), (1 << 20, 0.05, 2.0)]
        .iter()
        .map(|&(ws, t, rel)| {
            serde_json::json!({
                "ws_bytes": ws, "reuse_s": t, "rel": rel, "rel_ci95": [rel, rel],
                "per_byte": {"count": 1, "mean": 5e-11 * rel, "stdev": 0.0,
                             "p50": 5e-11 * rel, "p99": 5e-11 * rel},
            })
        })
        .collect();
    let mut bare = v.clone();
    for n in v["nodes"].as_array_mut().unwrap() {
        n["reuse_by"] = curve.clone().into();
    }
    let curved = dir.join("curved.json");
    std::fs::write(&curved, serde_json::to_string(&v).unwrap()).unwrap();
    // The same profile without a curve (`mheta bench --no-reuse`).
    for n in bare["nodes"].as_array_mut().unwrap() {
        n.as_object_mut().unwrap().remove("reuse_by");
    }
    let plain = dir.join("plain.json");
    std::fs::write(&plain, serde_json::to_string(&bare).unwrap()).unwrap();
    let predict = |p: &std::path::Path, json: bool| {
        ok(mheta()
            .args(["predict", "--profile"])
            .arg(p)
            .arg("--trace")
            .arg(&trace)
            .args(["--dist", "160,96"])
            .args(json.then_some("--json")))
    };
    let with = last_json(&predict(&curved, true));
    let without = last_json(&predict(&plain, true));
    assert_eq!(with["reuse_term"], true, "{with}");
    assert_eq!(without["reuse_term"], false, "{without}");
    // The paper's figure beside is the plain profile's prediction.
    let paper = with["without_reuse_per_iteration_s"].as_f64().unwrap();
    let plain = without["per_iteration_s"].as_f64().unwrap();
    assert!((paper / plain - 1.0).abs() < 1e-9, "{paper} vs {plain}");
    assert!(without["without_reuse_per_iteration_s"].is_null());
    assert!(predict(&curved, false).contains("reuse term: on"));
    // A curve whose times go backwards is named.
    let mut bad = v.clone();
    bad["nodes"][1]["reuse_by"][1]["reuse_s"] = 1e-5.into();
    let badp = dir.join("bad-reuse.json");
    std::fs::write(&badp, serde_json::to_string(&bad).unwrap()).unwrap();
    let o = fails(
        mheta()
            .args(["predict", "--profile"])
            .arg(&badp)
            .arg("--trace")
            .arg(&trace)
            .args(["--dist", "160,96"]),
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("bad-reuse.json") && err.contains("node 1: reuse_by at 1048576 B"),
        "{err}"
    );
}
