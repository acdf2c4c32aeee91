//! `--auto` end to end: microbench, record under the interposer, model +
//! GBS inside the job, redistribute, continue, verify.

#![allow(clippy::unwrap_used)] // tests fail loudly on purpose

use mheta_tests::{bin, jacobi, last_json, mheta, ok, quick_profile, scratch};

#[test]
fn two_ranks_het2_lands_near_the_speed_proportional_split() {
    let dir = scratch("auto2");
    let profile = quick_profile(&dir, 2);
    let trace = dir.join("trace");
    let n = 2048u64;
    // Five recorded iterations (the model takes each gap's median): three
    // were sometimes all disturbed on this shared machine (one run chose
    // 1224 rows for rank 0 against 1365; re-planning is issue 9's).
    let out = ok(mheta()
        .args(["run", "--count", "5", "--trace-dir"])
        .arg(&trace)
        .args(["--", "mpirun", "-np", "2"])
        .arg(bin("jacobi"))
        .args([
            "--n",
            &n.to_string(),
            "--iters",
            "40",
            "--cluster",
            "het2",
            "--auto",
            "--auto-at",
            "12",
            "--profile",
        ])
        .arg(&profile));
    let r = last_json(&out);
    assert_eq!(r["verified"], true, "{r}");
    let a = &r["auto"];
    let chosen: Vec<u64> = a["chosen_dist"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap())
        .collect();
    assert_eq!(chosen.iter().sum::<u64>(), n);
    assert_eq!(r["dist"], a["chosen_dist"]);
    // CPU power 1.0 and 0.5: two thirds of the rows on rank 0, within 10%.
    let prop = (2 * n) as f64 / 3.0;
    assert!(
        (chosen[0] as f64 - prop).abs() <= 0.10 * prop,
        "chosen {chosen:?}, proportional {prop:.0}"
    );
    // The model expects the chosen distribution to be much faster.
    let pf = a["predicted_from_s"].as_f64().unwrap();
    let pc = a["predicted_chosen_s"].as_f64().unwrap();
    assert!(pc < 0.8 * pf, "predicted {pc} vs block {pf}");

    // The CLI reads the same trace and profile and gives the same numbers.
    let dist = chosen
        .iter()
        .map(|x| x.to_string())
        .collect::<Vec<_>>()
        .join(",");
    let p = last_json(&ok(mheta()
        .args(["predict", "--profile"])
        .arg(&profile)
        .arg("--trace")
        .arg(&trace)
        .args(["--dist", &dist, "--iters", "10", "--json"])));
    let per = p["per_iteration_s"].as_f64().unwrap();
    assert!((per - pc).abs() <= 1e-9 * pc, "cli {per} vs in-run {pc}");
    assert!((p["total_s"].as_f64().unwrap() - 10.0 * per).abs() <= 1e-12);
    let s = last_json(&ok(mheta()
        .args(["search", "--profile"])
        .arg(&profile)
        .arg("--trace")
        .arg(&trace)
        .arg("--json")));
    assert_eq!(s["dist"], a["chosen_dist"]);
    assert!(s["evaluations"].as_u64().unwrap() >= 1);
    assert!((s["predicted_s"].as_f64().unwrap() - pc).abs() <= 1e-9 * pc);

    // Same answer as a run that never moved its rows.
    let plain = jacobi(
        2,
        &["--n", &n.to_string(), "--iters", "40", "--cluster", "het2"],
    );
    let (c, c0) = (
        r["checksum"].as_f64().unwrap(),
        plain["checksum"].as_f64().unwrap(),
    );
    assert!((c - c0).abs() <= 1e-12 * c0, "{c} vs {c0}");
}

#[test]
fn four_ranks_het4_redistributes_and_verifies() {
    let dir = scratch("auto4");
    let profile = quick_profile(&dir, 4);
    let trace = dir.join("trace");
    let out = ok(mheta()
        .args(["run", "--trace-dir"])
        .arg(&trace)
        .args(["--", "mpirun", "--oversubscribe", "-np", "4"])
        .arg(bin("jacobi"))
        .args([
            "--n",
            "400",
            "--iters",
            "12",
            "--cluster",
            "het4",
            "--auto",
            "--profile",
        ])
        .arg(&profile));
    let r = last_json(&out);
    assert_eq!(r["verified"], true, "{r}");
    let chosen: Vec<u64> = r["auto"]["chosen_dist"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap())
        .collect();
    assert_eq!(chosen.len(), 4);
    assert_eq!(chosen.iter().sum::<u64>(), 400);
    let plain = jacobi(4, &["--n", "400", "--iters", "12"]);
    let (c, c0) = (
        r["checksum"].as_f64().unwrap(),
        plain["checksum"].as_f64().unwrap(),
    );
    assert!((c - c0).abs() <= 1e-12 * c0, "{c} vs {c0}");
    // Every rank left its trace of three iterations.
    let traces = mheta_trace::read_dir(&trace).unwrap();
    assert_eq!(traces.len(), 4);
    assert!(traces.iter().all(|t| t.iterations.len() == 3));
}
