//! The C and Fortran API (`libmheta.so`, `capi/include/mheta.h`,
//! `capi/fortran/mheta.f90`): the examples `apps/c/jacobi.c` and
//! `apps/c/jacobi.f90`, built here with mpicc and mpif90 against the
//! library, run under `mheta run` with `--auto` on two ranks at CPU powers
//! 1 and 0.25 (`mheta_tests::two_speeds`; the lower emulated by
//! `mheta_work_end`). Each must move rows toward
//! the faster rank 0 and end with the answer of a run that never moved.

#![allow(clippy::unwrap_used)] // tests fail loudly on purpose

use mheta_tests::{
    compilers, last_json, launch, mheta, mpirun, ok, quick_profile, root, scratch, target_dir,
    two_speeds,
};
use std::path::{Path, PathBuf};
use std::process::Command;

fn build(dir: &Path) -> (PathBuf, PathBuf) {
    let r = root();
    let lib = target_dir().join("release");
    let rpath = format!("-Wl,-rpath,{}", lib.display());
    let c = dir.join("jacobi-c");
    let (cc, fc) = compilers();
    ok(Command::new(cc)
        .args(["-O2", "-I"])
        .arg(r.join("capi/include"))
        .arg(r.join("apps/c/jacobi.c"))
        .arg("-L")
        .arg(&lib)
        .args(["-lmheta", &rpath, "-lm", "-o"])
        .arg(&c));
    let f = dir.join("jacobi-f");
    ok(Command::new(fc)
        .args(["-O2", "-J"])
        .arg(dir)
        .arg(r.join("capi/fortran/mheta.f90"))
        .arg(r.join("apps/c/jacobi.f90"))
        .arg("-L")
        .arg(&lib)
        .args(["-lmheta", &rpath, "-o"])
        .arg(&f));
    (c, f)
}

const N: &str = "1536";
const ITERS: &str = "60";

/// Per-rank compute of the recorded iterations at Block, as the model
/// sees it (`mheta predict` on the trace), and rank 1's per-row cost over
/// rank 0's.
fn recorded_ratio(profile: &Path, trace: &Path) -> f64 {
    let block = last_json(&ok(mheta()
        .args(["predict", "--profile"])
        .arg(profile)
        .arg("--trace")
        .arg(trace)
        .args(["--dist", "768,768", "--json"])));
    let c: Vec<f64> = (0..2)
        .map(|i| block["ranks"][i]["compute_s"].as_f64().unwrap())
        .collect();
    c[1] / c[0]
}

/// `run(auto)` runs the example (plain, or under `mheta run` with its
/// auto argument, recording into `trace`).
fn check(name: &str, profile: &Path, trace: &Path, run: impl Fn(bool) -> serde_json::Value) {
    let reference = run(false);
    assert_eq!(reference["verified"], true, "{reference}");
    assert_eq!(
        reference["dist"],
        serde_json::json!([768, 768]),
        "{reference}"
    );
    // The emulation slows rank 1's real work by extra work in proportion
    // to it, but the real work runs at this VM's speed, which the host
    // changes by itself: the same 768 rows took about 1.6 or 3.2 ms of CPU
    // (at N = 384, cache-resident, 95 or 188 us) on either rank, and a
    // plain C loop pinned alone on a vCPU took 70 or 110-135 us,
    // switching within seconds. At half power about 4 in 10 Fortran
    // recordings saw rank 1 less than 1.5x slower per row (CI once 1.13x,
    // and the plan, rightly for that recording, was 814,722); hence a
    // quarter. A recording under 1.5x is still retried, at most five runs
    // in all; the plan is then checked against the recording. (`--cpu-emulation clock` takes the host's speed out;
    // the C API has no units for it.)
    let mut attempt = 0;
    let (r, ratio) = loop {
        attempt += 1;
        let r = run(true);
        let ratio = recorded_ratio(profile, trace);
        if ratio >= 1.5 || attempt == 5 {
            break (r, ratio);
        }
        eprintln!("{name}: attempt {attempt}: recorded per-row ratio {ratio:.2}, retrying");
    };
    assert!(
        ratio >= 1.5,
        "{name}: rank 1 (cpu_power 0.25) recorded only {ratio:.2}x rank 0's per-row time in 5 runs"
    );
    let auto = &r["auto"];
    assert_eq!(auto["moved"], true, "{name}: {r}");
    assert_eq!(r["dist"], auto["chosen_dist"], "{name}: {r}");
    let d0 = r["dist"][0].as_u64().unwrap();
    assert!(
        d0 > 768 + 768 / 10,
        "{name}: rank 0 (the faster) has {d0} rows: {r}"
    );
    // Rows in inverse proportion to the recorded per-row costs (the halo
    // messages are fixed-size, so compute decides), within 5%.
    let balanced = 1536.0 * ratio / (1.0 + ratio);
    assert!(
        (d0 as f64 - balanced).abs() <= 0.05 * balanced,
        "{name}: rank 0 has {d0} rows, balanced for the recorded {ratio:.2}x: {balanced:.0}"
    );
    assert!(
        auto["reason"].as_str().is_some_and(|s| !s.is_empty()),
        "{r}"
    );
    assert!(auto["predicted_move_s"].as_f64().unwrap() > 0.0, "{r}");
    assert_eq!(r["verified"], true, "{r}");
    let (a, b) = (
        r["checksum"].as_f64().unwrap(),
        reference["checksum"].as_f64().unwrap(),
    );
    assert!(
        (a - b).abs() <= 1e-12 * b.abs(),
        "{name}: checksum {a} after moving, {b} without"
    );
    assert_eq!(r["error"], reference["error"], "{name}: {r} vs {reference}");
}

#[test]
fn c_and_fortran_codes_get_auto_through_the_c_api() {
    let dir = scratch("capi");
    let (c, f) = build(&dir);
    let profile = quick_profile(&dir, 2);
    let spec = two_speeds(&dir);
    for (name, bin, args) in [
        ("C", &c, vec!["--n", N, "--iters", ITERS]),
        ("Fortran", &f, vec![N, ITERS]),
    ] {
        let trace = dir.join(format!("trace-{name}"));
        check(name, &profile, &trace, |auto| {
            let _ = std::fs::remove_dir_all(&trace);
            let mut a = args.clone();
            if auto {
                a.push(if name == "C" { "--auto" } else { "auto" });
            }
            let out = if auto {
                ok(mheta()
                    .env("MHETA_CLUSTER", &spec)
                    .env("MHETA_PROFILE", &profile)
                    .args(["run", "--trace-dir"])
                    .arg(&trace)
                    .arg("--")
                    .args(launch(2))
                    .arg(bin)
                    .args(&a))
            } else {
                ok(mpirun(2).env("MHETA_CLUSTER", &spec).arg(bin).args(&a))
            };
            last_json(&out)
        });
    }
}

/// The stderr of a run that must fail. Both ranks print the error and
/// call `MPI_Abort`; Hydra (MPICH's `mpiexec`) tears the job down on the
/// abort and now and then drops what the ranks wrote last (an empty
/// stderr, seen once in the CI). On MPICH a run whose stderr came
/// back empty runs again, up to three times in all; any other outcome is
/// judged as it is.
fn failing_stderr(make: impl Fn() -> Command) -> String {
    let tries = if mheta_tests::on_mpich() { 3 } else { 1 };
    let mut err = String::new();
    for _ in 0..tries {
        let out = mheta_tests::fails(&mut make());
        err = String::from_utf8_lossy(&out.stderr).into_owned();
        if !err.trim().is_empty() {
            break;
        }
    }
    err
}

#[test]
fn the_c_api_names_bad_input() {
    let dir = scratch("capi-bad");
    let (c, _) = build(&dir);
    // An unknown cluster is refused at mheta_init, with the name.
    let err = failing_stderr(|| {
        let mut m = mpirun(2);
        m.env("MHETA_CLUSTER", "no-such-cluster")
            .arg(&c)
            .args(["--n", "64", "--iters", "2"]);
        m
    });
    assert!(
        err.contains("mheta_init") && err.contains("no-such-cluster"),
        "{err}"
    );
    // --auto without `mheta run`: the plan says it needs the interposer.
    let err = failing_stderr(|| {
        let mut m = mpirun(2);
        m.arg(&c).args(["--n", "64", "--iters", "8", "--auto"]);
        m
    });
    assert!(err.contains("mheta run"), "{err}");
}
