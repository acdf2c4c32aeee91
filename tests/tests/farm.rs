//! farm: the master/worker task farm verifies every result on any master
//! and worker set, EP against NPB's published sums, Mandelbrot against a
//! serial recomputation; bad worker lists are refused by name.

#![allow(clippy::unwrap_used)] // tests fail loudly on purpose

use mheta_tests::{bin, fails, last_json, mpirun, ok_within};
use serde_json::Value;
use std::time::Duration;

/// Run farm on `np` ranks with `args` (killed after 3 minutes).
fn farm(np: usize, args: &[&str]) -> Value {
    let out = ok_within(
        mpirun(np).arg(bin("farm")).args(args),
        Duration::from_secs(180),
    );
    last_json(&out)
}

fn worker_ranks(r: &Value) -> Vec<u64> {
    r["workers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["rank"].as_u64().unwrap())
        .collect()
}

fn tasks_done(r: &Value) -> u64 {
    r["workers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["tasks"].as_u64().unwrap())
        .sum()
}

#[test]
fn ep_class_s_verifies_with_the_master_on_the_last_rank() {
    let r = farm(3, &["--task", "ep", "--class", "S", "--master", "2"]);
    assert_eq!(r["verified"], true, "{r}");
    assert_eq!(r["master"], 2);
    assert_eq!(worker_ranks(&r), vec![0, 1]);
    assert_eq!(r["tasks"], 256);
    assert_eq!(tasks_done(&r), 256, "{r}");
    let v = &r["verification"];
    let sx = v["sx"].as_f64().unwrap();
    assert!((sx / -3.247_834_652_034_74e3 - 1.0).abs() <= 1e-8, "{v}");
    assert!(v["sy_rel_err"].as_f64().unwrap() <= 1e-8, "{v}");
    assert_eq!(v["failed_tasks"], 0);
    // Of 2^24 pairs in the square, about π/4 fall in the circle.
    let gc = v["gaussian_pairs"].as_f64().unwrap() / (1u64 << 24) as f64;
    assert!((gc - std::f64::consts::FRAC_PI_4).abs() < 1e-3, "{v}");
    assert!(r["elapsed_s"].as_f64().unwrap() > 0.0);
    for w in r["workers"].as_array().unwrap() {
        assert!(w["busy_s"].as_f64().unwrap() > 0.0, "{w}");
        assert!(!w["host"].as_str().unwrap().is_empty(), "{w}");
    }
}

#[test]
fn mandel_on_a_worker_subset_matches_the_serial_image() {
    let small = ["--size", "512", "--tile", "64", "--max-iter", "200"];
    let mut args = small.to_vec();
    args.extend(["--workers", "3,1", "--verify-serial", "--window", "1"]);
    let a = farm(4, &args);
    assert_eq!(a["verified"], true, "{a}");
    assert_eq!(worker_ranks(&a), vec![3, 1]);
    assert_eq!(a["tasks"], 64);
    assert_eq!(tasks_done(&a), 64, "{a}");
    let total = a["verification"]["total"].as_u64().unwrap();
    assert_eq!(a["verification"]["serial_total"].as_u64().unwrap(), total);
    // A 64-pixel tile of u32 counts, with its checksum and header.
    assert_eq!(a["result_bytes"], 64 * 64 * 4 + 8 + 16);
    // Another master, all workers, a prefetch window: the same image.
    let mut args = small.to_vec();
    args.extend(["--master", "3", "--window", "2"]);
    let b = farm(4, &args);
    assert_eq!(b["verified"], true, "{b}");
    assert_eq!(worker_ranks(&b), vec![0, 1, 2]);
    assert_eq!(b["verification"]["total"].as_u64().unwrap(), total);
    // Far from a trivial image: some pixels reach the limit, most do not.
    assert!(total > 512 * 512 && total < 512 * 512 * 200, "{total}");
}

#[test]
fn calibration_times_every_rank() {
    let r = farm(2, &["--task", "ep", "--class", "S", "--calibrate", "3"]);
    assert_eq!(r["mode"], "calibrate", "{r}");
    assert_eq!(r["request_bytes"], 8);
    assert_eq!(r["result_bytes"], 16 + 8 * 12);
    let ranks = r["ranks"].as_array().unwrap();
    assert_eq!(ranks.len(), 2, "{r}");
    for (i, x) in ranks.iter().enumerate() {
        assert_eq!(x["rank"], i as u64);
        let (s, m) = (
            x["t_slave_s"].as_f64().unwrap(),
            x["t_master_s"].as_f64().unwrap(),
        );
        // A batch of 2^16 pairs is real work; checking its sums is not.
        assert!(s > 1e-4 && m < s, "{x}");
    }
}

/// The one `farm: error:` line of a failing run.
fn farm_error(np: usize, args: &[&str]) -> String {
    let o = fails(mpirun(np).arg(bin("farm")).args(args));
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("farm: error:"))
        .collect();
    assert_eq!(lines.len(), 1, "expected one error line in:\n{err}");
    lines[0].to_string()
}

#[test]
fn bad_worker_lists_and_masters_are_refused_by_name() {
    let l = farm_error(3, &["--task", "ep", "--class", "S", "--workers", "1,9"]);
    assert!(l.contains("--workers 1,9: rank 9 does not exist"), "{l}");
    let l = farm_error(3, &["--task", "ep", "--class", "S", "--workers", "0,1"]);
    assert!(l.contains("rank 0 is the master"), "{l}");
    let l = farm_error(2, &["--task", "ep", "--master", "5"]);
    assert!(l.contains("--master 5"), "{l}");
    let l = farm_error(2, &["--task", "ep", "--class", "S", "--tasks", "257"]);
    assert!(l.contains("--tasks 257: this problem has 256 tasks"), "{l}");
    let l = farm_error(2, &["--task", "ep", "--class", "C"]);
    assert!(l.contains("--class C"), "{l}");
}

#[test]
fn a_corrupted_result_fails_the_run() {
    for (task, k) in [("ep", "17"), ("mandel", "5")] {
        let o = fails(mpirun(3).arg(bin("farm")).args([
            "--task",
            task,
            "--class",
            "S",
            "--size",
            "256",
            "--tile",
            "64",
            "--corrupt",
            k,
        ]));
        let r = last_json(&String::from_utf8_lossy(&o.stdout));
        assert_eq!(r["verified"], false, "{r}");
        let v = &r["verification"];
        assert_eq!(v["failed_tasks"], 1, "{v}");
        let first = v["first_failure"].as_str().unwrap();
        assert!(first.contains(&format!("task {k} from rank")), "{first}");
    }
}

#[test]
fn a_worker_of_half_the_cpu_power_takes_about_half_the_tasks() {
    // het4: powers 1, 0.5, 1, 0.75; rank 3 idles.
    let r = farm(
        4,
        &[
            "--task",
            "ep",
            "--class",
            "S",
            "--cluster",
            "het4",
            "--cpu-emulation",
            "share",
            "--workers",
            "1,2",
        ],
    );
    assert_eq!(r["verified"], true, "{r}");
    let w = r["workers"].as_array().unwrap();
    assert_eq!(
        (w[0]["cpu_power"].as_f64(), w[1]["cpu_power"].as_f64()),
        (Some(0.5), Some(1.0))
    );
    let (slow, fast) = (
        w[0]["tasks"].as_f64().unwrap(),
        w[1]["tasks"].as_f64().unwrap(),
    );
    // Self-scheduling gives the faster worker about twice the batches.
    assert!(fast > 1.4 * slow && fast < 3.0 * slow, "{r}");
}

#[test]
fn a_partial_run_checks_what_it_ran() {
    let r = farm(3, &["--task", "ep", "--class", "S", "--tasks", "20"]);
    assert_eq!(r["verified"], true, "{r}");
    assert_eq!(
        (r["tasks"].as_u64(), r["problem_tasks"].as_u64()),
        (Some(20), Some(256))
    );
    assert_eq!(tasks_done(&r), 20);
    let why = r["verification"]["reference"].as_str().unwrap();
    assert!(why.contains("20 of the class's 256"), "{why}");
    let args = [
        "--size",
        "256",
        "--tile",
        "32",
        "--tasks",
        "10",
        "--verify-serial",
    ];
    let m = farm(3, &args);
    assert_eq!(m["verified"], true, "{m}");
    assert_eq!(tasks_done(&m), 10);
    assert_eq!(
        m["verification"]["serial_total"],
        m["verification"]["total"]
    );
}

#[test]
fn auto_place_runs_the_models_choice() {
    let r = farm(3, &["--task", "ep", "--class", "S", "--auto-place"]);
    assert_eq!(r["verified"], true, "{r}");
    let p = &r["auto_place"];
    assert_eq!(p["master_rank"], r["master"], "{p}");
    let chosen: Vec<u64> = p["worker_ranks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap())
        .collect();
    assert!(!chosen.is_empty() && !chosen.contains(&r["master"].as_u64().unwrap()));
    assert_eq!(worker_ranks(&r), chosen);
    assert_eq!(tasks_done(&r), 256);
    let hosts = p["inputs"]["hosts"].as_array().unwrap();
    assert_eq!(hosts.len(), 3);
    for h in hosts {
        let (s, m) = (
            h["t_slave_s"].as_f64().unwrap(),
            h["t_master_s"].as_f64().unwrap(),
        );
        assert!(s > m && m > 0.0, "{h}");
    }
    assert!(p["rate"].as_f64().unwrap() > 0.0 && p["simulated_s"].as_f64().unwrap() > 0.0);
    // The model chooses; a fixed master is a contradiction.
    let o = fails(
        mpirun(2)
            .arg(bin("farm"))
            .args(["--auto-place", "--master", "1"]),
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("--auto-place") && err.contains("--master"),
        "{err}"
    );
}
