//! `--auto` end to end: microbench, record under the interposer, model +
//! GBS inside the job, redistribute, continue, verify.

#![allow(clippy::unwrap_used)] // tests fail loudly on purpose

use mheta_tests::{
    bin, jacobi, last_json, launch, launch_bound, mheta, ok, on_mpich, quick_profile, scratch,
    two_speeds,
};

#[test]
fn two_ranks_two_speeds_balance_the_recorded_per_row_costs() {
    let dir = scratch("auto2");
    let profile = quick_profile(&dir, 2);
    let trace = dir.join("trace");
    // 768 rows of 768: a rank's arrays (4.7 MB on Block) lose little of
    // the cache in its waits (about 1.2 ms an iteration here). At n 2048
    // the fast rank on Block waits 18 ms of every 24 ms, and after waits
    // that long this VM's caches have lost its rows: its next sweep takes
    // about 1.9x its CPU time a point (scripts/idle-refill.sh). Both
    // ranks' rows then cost 1.2-1.9x on Block what they cost on the
    // balanced split (seven runs), which the model, pricing rows as
    // recorded, does not see: it over-predicted the split by 22-85%
    // (eight runs, docs/design/fidelity.md).
    let n = 768u64;
    // CPU power 1.0 and 0.25 (`two_speeds`, spin emulation): rank 1 must
    // look at least 1.5x slower per row in the recorded iterations. A
    // recording where it does not was disturbed by the shared machine;
    // such a run is retried, at most five runs in all.
    let spec = two_speeds(&dir).to_string_lossy().to_string();
    let mut attempt = 0;
    let (r, ratio) = loop {
        attempt += 1;
        let _ = std::fs::remove_dir_all(&trace);
        let out = ok(mheta()
            .args(["run", "--count", "5", "--trace-dir"])
            .arg(&trace)
            .arg("--")
            .args(launch(2))
            .arg(bin("jacobi"))
            .args([
                "--n",
                &n.to_string(),
                "--iters",
                "40",
                "--cluster",
                &spec,
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
            .args(["--dist", &format!("{},{}", n / 2, n / 2), "--json"])));
        let c: Vec<f64> = (0..2)
            .map(|i| block["ranks"][i]["compute_s"].as_f64().unwrap())
            .collect();
        let ratio = c[1] / c[0];
        // A run whose iterations after the move were disturbed (CI once
        // measured 9.49 ms after against 9.74 ms before, and once 10.2 ms
        // against the 5.9 ms the model predicted for the chosen split: this
        // host changes its own speed within seconds) is retried too; the
        // assertions below still demand the speed-up and the prediction.
        let a = &r["auto"];
        let (sped_up, predicted) = match (
            a["measured_chosen_s"].as_f64(),
            a["measured_from_s"].as_f64(),
            a["predicted_chosen_s"].as_f64(),
        ) {
            (Some(mc), Some(mf), Some(pc)) => (mc < 0.85 * mf, (pc - mc).abs() <= 0.25 * mc),
            _ => (false, false),
        };
        if (ratio >= 1.5 && sped_up && predicted) || attempt == 5 {
            break (r, ratio);
        }
        eprintln!(
            "attempt {attempt}: recorded per-row ratio {ratio:.2}, measured speed-up {sped_up}, predicted within 25% {predicted}, retrying"
        );
    };
    assert!(
        ratio >= 1.5,
        "rank 1 (cpu_power 0.25) recorded only {ratio:.2}x rank 0's per-row time in 5 runs"
    );
    assert_eq!(r["verified"], true, "{r}");
    let a = &r["auto"];
    // The plan was made on every iteration from the instrumented ones
    // (from 3, 5 counted) to --auto-at 12, not on the 5 counted alone,
    // and each rank's trace holds them, each recorded on Block rows.
    assert_eq!(a["instrumented_iterations"]["start"], 3, "{a}");
    assert_eq!(a["instrumented_iterations"]["end"], 12, "{a}");
    for rank in 0..2 {
        let t = mheta_trace::read_rank(&mheta_trace::rank_file(&trace, rank)).unwrap();
        let idx: Vec<u64> = t.iterations.iter().map(|i| i.index).collect();
        assert_eq!(idx, (3..12).collect::<Vec<u64>>(), "rank {rank}");
    }
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
    // The model expects the chosen distribution to be much faster, as
    // the recorded costs say: balanced over Block is 2 / (1 + ratio) of
    // the compute (0.8 at the least ratio above), plus the fixed-size
    // messages' share. Held on the replays of the median program (the
    // `point` figures, whose medians the ratio comes from): the median of
    // the recorded iterations replayed one at a time on the chosen split
    // also carries each iteration's own imbalance (the slower of two
    // noisy ranks), so it can sit above that fraction by the recording's
    // noise (CI once saw it at 0.766 of Block against a fraction of
    // 0.654; that run's points were not printed). And the run measured
    // it so (medians of the iterations before and after).
    let pf = a["predicted_from_point_s"].as_f64().unwrap();
    let pp = a["predicted_chosen_point_s"].as_f64().unwrap();
    assert!(
        pp < (2.0 / (1.0 + ratio) + 0.05) * pf,
        "predicted {pp} vs block {pf} (median program) at a recorded ratio of {ratio:.2}"
    );
    let pc = a["predicted_chosen_s"].as_f64().unwrap();
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
    // The in-run figure is the median of the recorded iterations replayed
    // one by one (`iterations_median_s`), with MHETA's replay of their
    // median beside it (`per_iteration_s`).
    let per = p["per_iteration_s"].as_f64().unwrap();
    let point = a["predicted_chosen_point_s"].as_f64().unwrap();
    assert!(
        (per - point).abs() <= 1e-9 * point,
        "cli {per} vs in-run {point}"
    );
    let each = p["iterations_median_s"].as_f64().unwrap_or(per);
    assert!((each - pc).abs() <= 1e-9 * pc, "cli {each} vs in-run {pc}");
    assert!((p["total_s"].as_f64().unwrap() - 10.0 * per).abs() <= 1e-12);
    // The window the model learned from.
    let med = mheta_tests::recorded_window_s(&trace);
    let rw = p["recorded_window_s"].as_f64().unwrap();
    assert!((rw - med).abs() <= 1e-12 * med, "{rw} vs {med}");
    let s = last_json(&ok(mheta()
        .args(["search", "--profile"])
        .arg(&profile)
        .arg("--trace")
        .arg(&trace)
        .arg("--json")));
    assert_eq!(s["dist"], a["chosen_dist"]);
    assert!(s["evaluations"].as_u64().unwrap() >= 1);
    assert!((s["predicted_s"].as_f64().unwrap() - point).abs() <= 1e-9 * point);

    // Same answer as a run that never moved its rows.
    let plain = jacobi(
        2,
        &["--n", &n.to_string(), "--iters", "40", "--cluster", &spec],
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
        .arg("--")
        .args(launch(4))
        .arg(bin("jacobi"))
        .args([
            "--n",
            "400",
            "--iters",
            "12",
            "--cluster",
            "het4",
            // Named: 4 ranks of differing powers on 2 cores stop the
            // default; this test checks the move, not the timing.
            "--cpu-emulation",
            "share",
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
    // Rank 0 received every rank's encoded summary of its trace, and
    // said so, beside the trace it summarises.
    let g = &r["auto"]["gathered"];
    let summary = |t| {
        mheta_model::summary::RankSummary::from_trace(t)
            .encode()
            .len() as u64
    };
    let sum: u64 = traces.iter().map(summary).sum();
    assert_eq!(g["total_bytes"].as_u64(), Some(sum), "{g}");
    assert_eq!(g["received_bytes"], g["total_bytes"], "{g}");
    assert_eq!(g["own_bytes"].as_u64(), Some(summary(&traces[0])), "{g}");
    assert_eq!(
        g["own_trace_bytes"].as_u64(),
        Some(mheta_trace::encode(&traces[0]).len() as u64),
        "{g}"
    );
    let (gs, ms, ps) = (
        g["s"].as_f64().unwrap(),
        r["auto"]["model_s"].as_f64().unwrap(),
        r["auto"]["plan_s"].as_f64().unwrap(),
    );
    assert!(gs > 0.0 && ms > 0.0 && gs + ms <= ps, "{gs} + {ms} vs {ps}");
}

/// Under `--cpu-emulation clock` a piece of compute lasts its declared
/// time whatever CPU it gets, so the load watch of `--replan-on sensed`
/// (the default) is off: on 4 ranks sharing 2 cores, which its sensor
/// reads as CPU slowdowns, no rank reads schedstat (`cpu_avail` null),
/// and no re-plan answers a sensed load. On MPICH 4.0 four ranks on 2
/// cores under the clock made no progress in 60 s (2026-12-05, this
/// 2-core VM, with or without `--auto`), so there it runs 2 ranks on
/// het2 and checks the watch is off.
#[test]
fn under_the_clock_no_load_watch_answers_ranks_sharing_cores() {
    let (np, cluster) = if on_mpich() { (2, "het2") } else { (4, "het4") };
    let dir = scratch("auto-clock");
    let profile = quick_profile(&dir, np);
    let trace = dir.join("trace");
    let out = ok(mheta()
        .args(["run", "--trace-dir"])
        .arg(&trace)
        .arg("--")
        .args(launch(np))
        .arg(bin("jacobi"))
        .args([
            "--n",
            "400",
            "--iters",
            "60",
            "--cluster",
            cluster,
            "--cpu-emulation",
            "clock",
            "--cpu-ns-per-unit",
            "20",
            "--auto",
            "--profile",
        ])
        .arg(&profile));
    let r = last_json(&out);
    assert_eq!(r["verified"], true, "{r}");
    let ranks = r["ranks"].as_array().expect("ranks");
    assert_eq!(ranks.len(), np, "{r}");
    for k in ranks {
        assert!(k["cpu_avail"].is_null(), "a rank read schedstat: {k}");
        assert_eq!(k["load_sensor_s"].as_f64(), Some(0.0), "{k}");
    }
    let replans = r["auto"]["replans"].as_array().cloned().unwrap_or_default();
    assert!(
        replans.iter().all(|p| p.get("load_change").is_none()),
        "a re-plan answered a sensed load: {replans:?}"
    );
}

#[test]
fn auto_to_moves_to_the_given_distribution_and_prices_it_beside_the_run() {
    let dir = scratch("autoto");
    let profile = quick_profile(&dir, 2);
    let trace = dir.join("trace");
    // jacobi on 256 rows under the interposer, planning after iteration
    // 10 for `to`.
    let job = |to: &str| {
        let _ = std::fs::remove_dir_all(&trace);
        let mut c = mheta();
        c.args(["run", "--trace-dir"])
            .arg(&trace)
            .arg("--")
            .args(launch(2))
            .arg(bin("jacobi"))
            .args(["--n", "256", "--iters", "40", "--auto", "--auto-at", "10"])
            .args(["--auto-to", to, "--profile"])
            .arg(&profile);
        c
    };
    let run = |to: &str| last_json(&ok(&mut job(to)));
    let plain = jacobi(2, &["--n", "256", "--iters", "40"]);
    let c0 = plain["checksum"].as_f64().unwrap();
    // Uniform ranks: GBS would keep Block, and the move to 64,192 does
    // not pay; it is made all the same.
    for (to, moves) in [("64,192", true), ("128,128", false)] {
        let r = run(to);
        let a = &r["auto"];
        let want: Vec<u64> = to.split(',').map(|x| x.parse().unwrap()).collect();
        assert_eq!(r["verified"], true, "{r}");
        assert_eq!(r["dist"], serde_json::json!(want), "{r}");
        assert_eq!(a["chosen_dist"], serde_json::json!(want), "{a}");
        assert_eq!(a["moved"], moves, "{a}");
        assert!(
            a["reason"]
                .as_str()
                .unwrap()
                .starts_with("given (--auto-to)"),
            "{a}"
        );
        assert!(a["replans"].as_array().unwrap().is_empty(), "{a}");
        let (p, m) = (
            a["predicted_chosen_s"].as_f64().unwrap(),
            a["measured_chosen_s"].as_f64().unwrap(),
        );
        assert!(p.is_finite() && p > 0.0 && m > 0.0, "{a}");
        // The answer does not depend on where the rows went.
        let c = r["checksum"].as_f64().unwrap();
        assert!((c - c0).abs() <= 1e-12 * c0, "{c} vs {c0}");
    }
    // A distribution of the wrong rows is refused before the run starts,
    // naming the option.
    let out = job("100,100").output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("--auto-to"), "{err}");
}

/// Kills the competing processes when the test ends, even on a panic.
struct Hogs(Vec<std::process::Child>);

impl Drop for Hogs {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// Three other jobs arrive mid-run on rank 0's core (busy loops pinned
/// there three seconds in, after the first plan). With `--replan-on
/// record` the drift watch must see the drift, re-record, re-plan and
/// move rows from rank 0 to rank 1 within a bounded time, and the answer
/// must still verify.
///
/// What share of core 0 rank 0 keeps depends on the launcher, not on the
/// count of loops: with `kernel.sched_autogroup_enabled` = 1 the kernel
/// shares a core between sessions first. Open MPI's ranks stay in the
/// test's session beside the loops and get about a quarter; Hydra
/// (MPICH) starts its ranks in a session of their own, whose group gets
/// about half of the core however many loops the other session runs. So
/// the test reads what rank 0 got (its schedstat availability in each
/// iteration, `cpu_avail_per_iter`) and holds the plans against the split
/// that share calls for.
///
/// This host's vCPUs are themselves time-shared: each one's CPU time per
/// row moves between two levels 1.5x apart for one to four seconds at a
/// time, each vCPU on its own (a 2-rank jacobi, n 3072, on 2026-11-30).
/// A re-plan that follows such a change is right, so the bounds leave
/// room for it.
#[test]
fn jobs_arriving_on_a_ranks_core_are_rebalanced() {
    // Up to three runs, the first that rebalances passes (a first plan
    // can come late on a host slow to start MPI); a watch that never
    // reacts fails all three.
    first_of_three("drift", drift_run);
}

/// Up to three runs of `run` in a scratch directory with a 2-rank
/// profile; the first that passes passes, else the test fails with why
/// each did not.
fn first_of_three(
    name: &str,
    run: fn(&std::path::Path, &std::path::Path, usize) -> Result<(), String>,
) {
    let dir = scratch(name);
    let profile = quick_profile(&dir, 2);
    let mut why = Vec::new();
    for k in 0..3 {
        match run(&dir, &profile, k) {
            Ok(()) => return,
            Err(e) => {
                eprintln!("{name} run {k}: {e}");
                why.push(e)
            }
        }
    }
    panic!("no {name} run passed: {why:#?}");
}

/// `mheta run` of a 2-rank jacobi (N = 3072, uniform, ranks bound to
/// cores) with `--auto` and `extra`, its output piped.
fn auto_jacobi(
    trace: &std::path::Path,
    profile: &std::path::Path,
    iters: u32,
    extra: &[&str],
) -> std::process::Child {
    mheta()
        .args(["run", "--trace-dir"])
        .arg(trace)
        .arg("--")
        .args(launch_bound(2))
        .arg(bin("jacobi"))
        .args([
            "--n",
            "3072",
            "--iters",
            &iters.to_string(),
            "--cluster",
            "uniform",
        ])
        .args(extra)
        .args(["--auto", "--profile"])
        // Every iteration's figures in the report (`cpu_avail_per_iter`).
        .env("MHETA_DEBUG_TIMES", "1")
        .arg(profile)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

/// `n` busy loops pinned to core 0, killed when dropped.
fn hogs_on_core_0(n: usize) -> Hogs {
    Hogs(
        (0..n)
            .map(|_| {
                std::process::Command::new("taskset")
                    .args(["-c", "0", "sh", "-c", "while :; do :; done"])
                    .spawn()
                    .unwrap()
            })
            .collect(),
    )
}

fn drift_run(dir: &std::path::Path, profile: &std::path::Path, k: usize) -> Result<(), String> {
    let child = auto_jacobi(
        &dir.join(format!("trace{k}")),
        profile,
        600,
        &["--replan-on", "record"],
    );
    std::thread::sleep(std::time::Duration::from_secs(3));
    let arrived = unix_now();
    let hogs = hogs_on_core_0(3);
    let out = child.wait_with_output().unwrap();
    drop(hogs);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = String::from_utf8_lossy(&out.stdout).to_string();
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
    // The first plan came before the other jobs.
    if a["at_unix_s"].as_f64().unwrap() >= arrived {
        return Err(format!("first plan after the jobs arrived: {a}"));
    }
    // The share of core 0 that rank 0 kept once the jobs were there:
    // the median of its availability after the first drift they caused
    // (the loops run to the end). Equal cores call for rank 0 to hold
    // n·s/(1 + s) rows; `mid` is halfway there from an even split,
    // `light_rows` a third of the way.
    let drifts = a["drifts"].as_array().unwrap();
    let Some(first_drift) = drifts
        .iter()
        .find(|d| d["at_unix_s"].as_f64().unwrap() > arrived)
    else {
        return Err(format!(
            "no drift after the jobs arrived at {arrived:.3}: {a}"
        ));
    };
    let after = first_drift["after"].as_u64().unwrap() as usize;
    let mut avail: Vec<f64> = r["ranks"][0]["cpu_avail_per_iter"]
        .as_array()
        .unwrap()
        .iter()
        .skip(after + 1)
        .filter_map(|x| x.as_f64())
        .collect();
    avail.sort_by(f64::total_cmp);
    let Some(&share) = avail.get(avail.len() / 2) else {
        return Err(format!("no availability read after iteration {after}"));
    };
    if share > 0.6 {
        return Err(format!(
            "the jobs took too little of rank 0's core to test against: it kept {share:.2}"
        ));
    }
    let even = 1536.0;
    let split = 3072.0 * share / (1.0 + share);
    let mid = (even + split) / 2.0;
    let light_rows = even - (even - split) / 3.0;
    eprintln!(
        "drift run {k}: rank 0 kept {share:.2} of its core: split {split:.0}, mid {mid:.0}, light {light_rows:.0} rows"
    );
    // Within 3 s of their arrival (the watch needs two windows of 5
    // iterations, a re-recording and the move; iterations of rank 0 at a
    // quarter of a core before the move take about 65 ms), a re-plan
    // moved rank 0 to `mid` or below.
    let replans = a["replans"].as_array().unwrap();
    let moved = replans.iter().find(|p| {
        let at = p["at_unix_s"].as_f64().unwrap();
        p["moved"] == true
            && at > arrived
            && at <= arrived + 3.0
            && (dist(&p["chosen_dist"])[0] as f64) <= mid
    });
    let Some(moved) = moved else {
        return Err(format!(
            "no move of rank 0 to {mid:.0} rows or fewer (it kept {share:.2} of its core) within 3 s of the jobs' arrival at {arrived:.3}: {replans:#?}"
        ));
    };
    // The drift that started it is in the report, within the bound of
    // iterations the watch and the re-recording take.
    let at = moved["redistributed_after"].as_u64().unwrap();
    if !drifts.iter().any(|d| {
        let after = d["after"].as_u64().unwrap();
        after < at && at <= after + 10
    }) {
        return Err(format!(
            "no drift within 10 iterations before the move at {at}: {drifts:?}"
        ));
    }
    // Rank 0 stays at `light_rows` or below for most of the rest of the
    // run. Not every later plan must keep it so: when the host slows
    // rank 1's vCPU by its 1.5x, the right split moves toward rank 0
    // until the vCPU's speed comes back, and a re-plan follows it.
    // A re-plan that ran slower than the distribution it replaced was
    // undone (`reverted`): from then on its `from_dist` is in force.
    let mut plans: Vec<(u64, u64)> = replans
        .iter()
        .filter(|p| p["moved"] == true)
        .flat_map(|p| {
            let moved = (
                p["redistributed_after"].as_u64().unwrap(),
                dist(&p["chosen_dist"])[0],
            );
            let back = p
                .get("reverted")
                .map(|r| (r["after"].as_u64().unwrap(), dist(&p["from_dist"])[0]));
            std::iter::once(moved).chain(back)
        })
        .filter(|&(it, _)| it >= at)
        .collect();
    plans.push((600, 0));
    let (mut light, mut all) = (0, 0);
    for w in plans.windows(2) {
        let iters = w[1].0 - w[0].0;
        all += iters;
        if (w[0].1 as f64) <= light_rows {
            light += iters;
        }
    }
    if 4 * light < 3 * all {
        return Err(format!(
            "rank 0 held {light_rows:.0} rows or fewer (it kept {share:.2} of its core) for only {light} of the {all} iterations after the move: {replans:#?}"
        ));
    }
    Ok(())
}

/// The load watch (`--replan-on sensed`, the default): a busy loop lands
/// on rank 0's core 3 s in and leaves 4 s later. The run must answer the
/// arrival with a plan on the sensed slowdowns (rank 0 at about 2x, the
/// report naming rank 0 and `arrived`) that moves rows off rank 0, and
/// the departure with one that returns to the dedicated plan (every
/// slowdown 1, the choice of the plan on the recording it prices), at
/// most two plans on the load for each (a calibration may follow), and
/// no recording started while the job ran; the answer verifies. The
/// sensor reads the thread's CPU availability (schedstat), which the
/// host's own slowdowns do not move (steal is 0 on this VM), so one loop
/// (2x) is enough here; up to three runs, the first that passes.
#[test]
fn a_job_on_a_ranks_core_is_answered_once_on_arrival_and_once_on_departure() {
    first_of_three("sensed", sensed_run);
}

fn sensed_run(dir: &std::path::Path, profile: &std::path::Path, k: usize) -> Result<(), String> {
    // Long enough to run on 2 s past the departure after a move off rank 0
    // has shortened it (about 11 s at 13 ms an iteration).
    let child = auto_jacobi(&dir.join(format!("trace{k}")), profile, 900, &[]);
    std::thread::sleep(std::time::Duration::from_secs(3));
    let arrived = unix_now();
    let hog = hogs_on_core_0(1);
    std::thread::sleep(std::time::Duration::from_secs(4));
    drop(hog);
    let left = unix_now();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = last_json(&String::from_utf8_lossy(&out.stdout));
    assert_eq!(r["verified"], true, "{r}");
    let a = &r["auto"];
    if a["at_unix_s"].as_f64().unwrap() >= arrived {
        return Err(format!("first plan after the job arrived: {a}"));
    }
    let end = a["at_unix_s"].as_f64().unwrap() + r["elapsed_s"].as_f64().unwrap();
    if end < left + 2.0 {
        return Err(format!(
            "the run ended {:.1} s after the job left",
            end - left
        ));
    }
    let replans = a["replans"].as_array().unwrap();
    let at = |p: &serde_json::Value| p["at_unix_s"].as_f64().unwrap();
    let change = |p: &serde_json::Value, what: &str| p["load_change"]["what"] == what;
    // Plans on the sensed load (a change, or a calibration of one).
    // Re-recordings on dedicated nodes (the drift watch answering the
    // host's own vCPU speed) are another matter; none may start while the
    // job runs (checked below).
    let sensed = |p: &&serde_json::Value| p.get("load_change").is_some();
    let on = |p: &&serde_json::Value| sensed(p) && at(p) > arrived && at(p) <= left;
    let off = |p: &&serde_json::Value| sensed(p) && at(p) > left;
    // Arrival: one or two plans on the load while the job is there, the
    // first an `arrived` on rank 0 within 2 s, moving rows off rank 0.
    let during: Vec<_> = replans.iter().filter(on).collect();
    let first = during
        .first()
        .ok_or_else(|| format!("no plan on the load while the job ran: {replans:#?}"))?;
    let slow = first["load_change"]["to"][0].as_f64().unwrap_or(0.0);
    if !(change(first, "arrived")
        && first["load_change"]["ranks"] == serde_json::json!([0])
        && (1.5..=2.6).contains(&slow)
        && at(first) <= arrived + 2.0
        && first["moved"] == true
        && first["chosen_dist"][0].as_u64().unwrap() < 1229)
    {
        return Err(format!(
            "the arrival was not answered as it should: {first:#}"
        ));
    }
    if during.len() > 2 {
        return Err(format!(
            "{} plans on the load while the job ran: {replans:#?}",
            during.len()
        ));
    }
    // Departure: one or two plans on the load after it, the first a `left`
    // within 2 s, back to every slowdown 1 and to the dedicated plan: the
    // choice of the plan made on the recording it prices (the first plan,
    // or a re-recording's on dedicated nodes before the job came).
    let after: Vec<_> = replans.iter().filter(off).collect();
    let back = after
        .first()
        .ok_or_else(|| format!("no plan on the load after the job left: {replans:#?}"))?;
    let dedicated = std::iter::once(a)
        .chain(replans.iter())
        .find(|p| {
            p.get("load_change").is_none()
                && p["instrumented_iterations"] == back["instrumented_iterations"]
        })
        .ok_or_else(|| format!("no plan on the recording the departure priced: {a:#}"))?;
    if !(change(back, "left")
        && back["load_change"]["to"] == serde_json::json!([1.0, 1.0])
        && at(back) <= left + 2.0
        && back["chosen_dist"] == dedicated["chosen_dist"])
    {
        return Err(format!(
            "the departure did not return to the dedicated plan {}: {back:#}",
            dedicated["chosen_dist"]
        ));
    }
    if after.len() > 2 {
        return Err(format!(
            "{} plans on the load after the job left: {replans:#?}",
            after.len()
        ));
    }
    // No re-recording under the load: every re-plan priced the dedicated
    // trace.
    if let Some(d) = a["drifts"].as_array().unwrap().iter().find(|d| {
        let t = d["at_unix_s"].as_f64().unwrap();
        t > arrived && t <= left
    }) {
        return Err(format!("recorded again while the job ran: {d}"));
    }
    Ok(())
}
