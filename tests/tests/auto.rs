//! `--auto` end to end: microbench, record under the interposer, model +
//! GBS inside the job, redistribute, continue, verify.

#![allow(clippy::unwrap_used)] // tests fail loudly on purpose

use mheta_tests::{bin, jacobi, last_json, mheta, ok, quick_profile, scratch};

#[test]
fn two_ranks_het2_balances_the_recorded_per_row_costs() {
    let dir = scratch("auto2");
    let profile = quick_profile(&dir, 2);
    let trace = dir.join("trace");
    let n = 2048u64;
    // CPU power 1.0 and 0.5 (spin emulation): rank 1 must look at least
    // 1.5x slower per row in the recorded iterations. A recording where it
    // does not was disturbed by the shared machine (CI once saw 1.0x and
    // chose 1032,1016); such a run is retried, at most three times in all.
    let mut attempt = 0;
    let (r, ratio) = loop {
        attempt += 1;
        let _ = std::fs::remove_dir_all(&trace);
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
                // This test is about the first plan and its move; with
                // re-planning on, a drift window could move the run again.
                "--replan-threshold",
                "0",
                "--profile",
            ])
            .arg(&profile));
        let r = last_json(&out);
        // Per-rank compute of the recorded iterations, as the model sees it.
        let block = last_json(&ok(mheta()
            .args(["predict", "--profile"])
            .arg(&profile)
            .arg("--trace")
            .arg(&trace)
            .args(["--dist", "1024,1024", "--json"])));
        let c: Vec<f64> = (0..2)
            .map(|i| block["ranks"][i]["compute_s"].as_f64().unwrap())
            .collect();
        let ratio = c[1] / c[0];
        // A run whose iterations after the move were disturbed (CI once
        // measured 9.49 ms after against 9.74 ms before) is retried too;
        // the assertions below still demand the speed-up.
        let a = &r["auto"];
        let sped_up = match (
            a["measured_chosen_s"].as_f64(),
            a["measured_from_s"].as_f64(),
        ) {
            (Some(mc), Some(mf)) => mc < 0.85 * mf,
            _ => false,
        };
        if (ratio >= 1.5 && sped_up) || attempt == 3 {
            break (r, ratio);
        }
        eprintln!(
            "attempt {attempt}: recorded per-row ratio {ratio:.2}, measured speed-up {sped_up}, retrying"
        );
    };
    assert!(
        ratio >= 1.5,
        "rank 1 (cpu_power 0.5) recorded only {ratio:.2}x rank 0's per-row time in 3 runs"
    );
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
    // The chosen split balances the recorded per-row costs (messages are
    // fixed-size, so compute decides): rows in inverse proportion, within 3%.
    let balanced = n as f64 * ratio / (1.0 + ratio);
    assert!(
        (chosen[0] as f64 - balanced).abs() <= 0.03 * balanced,
        "chosen {chosen:?}, balanced for the recorded {ratio:.2}x: {balanced:.0}"
    );
    // The model expects the chosen distribution to be much faster, and the
    // run measured it so (medians of the iterations before and after).
    let pf = a["predicted_from_s"].as_f64().unwrap();
    let pc = a["predicted_chosen_s"].as_f64().unwrap();
    assert!(pc < 0.8 * pf, "predicted {pc} vs block {pf}");
    let mf = a["measured_from_s"].as_f64().unwrap();
    let mc = a["measured_chosen_s"].as_f64().unwrap();
    assert!(mc < 0.85 * mf, "measured {mc} vs block {mf}");
    assert!(
        (pc - mc).abs() <= 0.25 * mc,
        "predicted {pc} vs measured {mc} for {chosen:?}"
    );

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

/// Kills the competing process when the test ends, even on a panic.
struct Hog(std::process::Child);

impl Drop for Hog {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Another job arrives mid-run on rank 0's core (a busy loop pinned there
/// three seconds in, after the first plan), so rank 0 gets about half a
/// core. The watch must see the drift, re-record, re-plan and move rows
/// from rank 0 to rank 1 within a bounded number of iterations, and the
/// answer must still verify.
#[test]
fn a_job_arriving_on_a_ranks_core_is_rebalanced() {
    let dir = scratch("drift");
    let profile = quick_profile(&dir, 2);
    // This host's vCPUs are themselves time-shared (the same loop pinned
    // to one core takes 0.27-0.46 s from run to run), so a re-recording
    // can be disturbed too: up to three runs, the first that rebalances
    // passes. A watch that never reacts fails all three.
    let mut why = Vec::new();
    for k in 0..3 {
        match drift_run(&dir, &profile, k) {
            Ok(()) => return,
            Err(e) => why.push(e),
        }
    }
    panic!("no run rebalanced: {why:#?}");
}

fn drift_run(dir: &std::path::Path, profile: &std::path::Path, k: usize) -> Result<(), String> {
    let trace = dir.join(format!("trace{k}"));
    let hog = Hog(std::process::Command::new("sh")
        .args([
            "-c",
            "sleep 3; exec taskset -c 0 sh -c 'while :; do :; done'",
        ])
        .spawn()
        .unwrap());
    let out = ok(mheta()
        .args(["run", "--trace-dir"])
        .arg(&trace)
        .args(["--", "mpirun", "-np", "2", "--bind-to", "core"])
        .arg(bin("jacobi"))
        .args([
            "--n",
            "3072",
            "--iters",
            "600",
            "--cluster",
            "uniform",
            "--auto",
            "--profile",
        ])
        .arg(profile));
    drop(hog);
    let r = last_json(&out);
    assert_eq!(r["verified"], true, "{r}");
    let a = &r["auto"];
    let dist = |v: &serde_json::Value| -> Vec<u64> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_u64().unwrap())
            .collect()
    };
    // The first plan came before the competing job (iteration 5 of about
    // 12 ms ones, well inside the first three seconds).
    if a["redistributed_after"].as_u64().unwrap() >= 20 {
        return Err(format!("first plan late: {a}"));
    }
    // A drift of at least 1.3x: rank 0's busy time against the model's
    // over rank 1's (rank 0 at half a core makes about 2x; a window that
    // straddles the job's start less, and the watch itself reacts at
    // 1.15x) ...
    let drifts = a["drifts"].as_array().unwrap();
    let Some(big) = drifts
        .iter()
        .find(|d| d["busy_spread"].as_f64().unwrap() >= 1.3)
    else {
        return Err(format!("no drift of 1.3x or more: {drifts:?}"));
    };
    let after = big["after"].as_u64().unwrap();
    // ... is followed, within two windows, by a re-plan that moves rows
    // off rank 0.
    let replans = a["replans"].as_array().unwrap();
    let Some(moved) = replans.iter().find(|p| {
        let at = p["redistributed_after"].as_u64().unwrap();
        p["moved"] == true && at > after && at <= after + 10
    }) else {
        return Err(format!(
            "no move within 10 iterations of the drift at {after}: {replans:?}"
        ));
    };
    let (from, to) = (dist(&moved["from_dist"]), dist(&moved["chosen_dist"]));
    if (to[0] as f64) >= 0.85 * from[0] as f64 {
        return Err(format!(
            "the re-plan after the drift moved {from:?} -> {to:?}"
        ));
    }
    // The run ends with rank 0 lighter than an even split (later
    // re-plans on a noisy machine may move part of the way back).
    let last = dist(&r["dist"]);
    if (last[0] as f64) >= 0.9 * 1536.0 {
        return Err(format!("final {last:?}"));
    }
    Ok(())
}
