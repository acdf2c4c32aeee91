//! The C and Fortran API (`libmheta.so`, `capi/include/mheta.h`,
//! `capi/fortran/mheta.f90`): the examples `apps/c/jacobi.c` and
//! `apps/c/jacobi.f90`, built here with mpicc and mpif90 against the
//! library, run under `mheta run` with `--auto` on `het2` (rank 1 at half
//! the CPU power, emulated by `mheta_work_end`). Each must move rows toward
//! the faster rank 0 and end with the answer of a run that never moved.

#![allow(clippy::unwrap_used)] // tests fail loudly on purpose

use mheta_tests::{last_json, mheta, mpirun, ok, quick_profile, root, scratch};
use std::path::{Path, PathBuf};
use std::process::Command;

fn build(dir: &Path) -> (PathBuf, PathBuf) {
    let r = root();
    let lib = r.join("target/release");
    let rpath = format!("-Wl,-rpath,{}", lib.display());
    let c = dir.join("jacobi-c");
    ok(Command::new("mpicc")
        .args(["-O2", "-I"])
        .arg(r.join("capi/include"))
        .arg(r.join("apps/c/jacobi.c"))
        .arg("-L")
        .arg(&lib)
        .args(["-lmheta", &rpath, "-lm", "-o"])
        .arg(&c));
    let f = dir.join("jacobi-f");
    ok(Command::new("mpif90")
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

fn check(name: &str, run: impl Fn(bool) -> serde_json::Value) {
    let reference = run(false);
    assert_eq!(reference["verified"], true, "{reference}");
    assert_eq!(
        reference["dist"],
        serde_json::json!([768, 768]),
        "{reference}"
    );
    let r = run(true);
    let auto = &r["auto"];
    assert_eq!(auto["moved"], true, "{name}: {r}");
    let d0 = r["dist"][0].as_u64().unwrap();
    assert!(
        d0 > 768 + 768 / 10,
        "{name}: rank 0 (the faster) has {d0} rows: {r}"
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
    for (name, bin, args) in [
        ("C", &c, vec!["--n", N, "--iters", ITERS]),
        ("Fortran", &f, vec![N, ITERS]),
    ] {
        check(name, |auto| {
            let trace = dir.join(format!("trace-{name}"));
            let _ = std::fs::remove_dir_all(&trace);
            let mut a = args.clone();
            if auto {
                a.push(if name == "C" { "--auto" } else { "auto" });
            }
            let out = if auto {
                ok(mheta()
                    .env("MHETA_CLUSTER", "het2")
                    .env("MHETA_PROFILE", &profile)
                    .args(["run", "--trace-dir"])
                    .arg(&trace)
                    .args(["--", "mpirun", "-np", "2"])
                    .arg(bin)
                    .args(&a))
            } else {
                ok(mpirun(2).env("MHETA_CLUSTER", "het2").arg(bin).args(&a))
            };
            last_json(&out)
        });
    }
}

#[test]
fn the_c_api_names_bad_input() {
    let dir = scratch("capi-bad");
    let (c, _) = build(&dir);
    // An unknown cluster is refused at mheta_init, with the name.
    let out = mheta_tests::fails(
        mpirun(2)
            .env("MHETA_CLUSTER", "no-such-cluster")
            .arg(&c)
            .args(["--n", "64", "--iters", "2"]),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("mheta_init") && err.contains("no-such-cluster"),
        "{err}"
    );
    // --auto without `mheta run`: the plan says it needs the interposer.
    let out = mheta_tests::fails(
        mpirun(2)
            .arg(&c)
            .args(["--n", "64", "--iters", "8", "--auto"]),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("mheta run"), "{err}");
}
